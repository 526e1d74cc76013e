//! Document sets that many n-grams share, paired once.
//!
//! Real text repeats whole passages in the same documents: the Project
//! Gutenberg licence stands in nearly every book, and each of its thousands
//! of n-grams is held by the same few hundred books. Each such n-gram makes
//! the same k(k − 1)/2 candidate pairs, and the candidate sort counts them
//! back together: on 800 Gutenberg books, candidates took 40 s for 318,801
//! pairs (2 s with this table). Here a document set of at least [`SharedSets::MIN_DOCUMENTS`]
//! is counted instead, keyed by the exact list of documents (a hash would
//! risk joining two sets), and its pairs are made once, each with the
//! number of n-grams that made the set: every pair's count comes out as if
//! each n-gram had made its pairs. Bottom floor: no other module of the
//! crate is used.

use std::collections::HashMap;

/// See the module documentation.
pub struct SharedSets {
    /// Each set (sorted, distinct documents) and the n-grams that made it.
    sets: HashMap<Box<[u32]>, u64>,
    bytes: u64,
    budget: u64,
}

/// What a set costs beyond its documents: the box, the table entry, slack.
const PER_SET_BYTES: u64 = 64;

impl SharedSets {
    /// Sets smaller than this are paired as they come: the table would cost
    /// more than the pairs it saves.
    pub const MIN_DOCUMENTS: usize = 32;

    /// Sets held until they take `budget` bytes.
    pub fn new(budget: u64) -> Self {
        SharedSets { sets: HashMap::new(), bytes: 0, budget }
    }

    /// Counts one more n-gram held by `docs` (sorted, distinct); true when
    /// the sets are over their budget and should be paired ([`Self::drain`]).
    pub fn add(&mut self, docs: &[u32]) -> bool {
        debug_assert!(docs.is_sorted());
        match self.sets.get_mut(docs) {
            Some(ngrams) => *ngrams += 1,
            None => {
                self.bytes += docs.len() as u64 * 4 + PER_SET_BYTES;
                self.sets.insert(docs.into(), 1);
            }
        }
        self.bytes > self.budget
    }

    /// Every set with its n-gram count, in set order (so what is made of
    /// them does not depend on the table's hashing), leaving none.
    pub fn drain(&mut self) -> Vec<(Box<[u32]>, u64)> {
        let mut sets: Vec<(Box<[u32]>, u64)> = self.sets.drain().collect();
        sets.sort_unstable();
        self.bytes = 0;
        sets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_sets_are_counted_together_and_drained_in_order() {
        let a: Vec<u32> = (0..40).collect();
        let b: Vec<u32> = (1..41).collect();
        let mut sets = SharedSets::new(1 << 20);
        for docs in [&a, &b, &a, &a] {
            assert!(!sets.add(docs));
        }
        let drained = sets.drain();
        assert_eq!(drained, vec![(a.into_boxed_slice(), 3), (b.into_boxed_slice(), 1)]);
        assert!(sets.drain().is_empty());
    }

    #[test]
    fn the_budget_asks_for_a_drain() {
        let mut sets = SharedSets::new(1000);
        let full = (0..10u32).map(|i| (i..i + 40).collect::<Vec<u32>>()).map(|d| sets.add(&d)).position(|f| f);
        // Each set of 40 costs 224 bytes: the fifth goes over 1000.
        assert_eq!(full, Some(4));
        assert_eq!(sets.drain().len(), 5);
        assert!(!sets.add(&(0..40).collect::<Vec<u32>>()));
    }
}
