/// One occurrence of a duplicate n-gram in a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Occurrence {
    /// The n-gram's ID in the duplicate-only index.
    pub ngram: u32,
    /// Its start, in tokens (stop words excluded) from the start of the document.
    pub pos: u32,
}

/// What a document looks like to the scorer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocStats {
    /// Tokens (stop words excluded).
    pub tokens: u32,
    /// Distinct n-grams, duplicate or not: `|S_X|`.
    pub distinct: u32,
    /// Distinct duplicate n-grams.
    pub dup_types: u32,
    /// Tokens covered by some duplicate n-gram: an upper bound of any pair's coverage.
    pub dup_covered: u32,
}

/// The duplicate n-grams of a range of documents, each document's sorted by (n-gram, position).
#[derive(Debug, Default)]
pub struct DocBlock {
    first: u32,
    offsets: Vec<u64>,
    entries: Vec<Occurrence>,
    stats: Vec<DocStats>,
}

/// Fills a [`DocBlock`] from the index, which lists n-grams in ID order and
/// each n-gram's occurrences in (document, position) order: appending them
/// per document leaves every document's list sorted without a sort.
#[derive(Debug)]
pub struct DocBlockBuilder {
    block: DocBlock,
    /// Each document's next free slot and end, side by side: one cache
    /// line for both (at a billion tokens a block's documents take
    /// megabytes of these, beyond the cache).
    slots: Vec<FreeSlots>,
    n: u32,
}

/// The slots of [`DocBlock::entries`] a document has left.
#[derive(Debug, Clone, Copy)]
struct FreeSlots {
    next: u64,
    end: u64,
}

impl DocBlock {
    /// Starts a block for documents `first..first + occurrences.len()`, where
    /// `occurrences[i]` is how many duplicate occurrences document `first + i`
    /// has (known from a counting scan), so memory is allocated exactly once.
    pub fn builder(first: u32, occurrences: &[u32], n: u32) -> DocBlockBuilder {
        let mut offsets = Vec::with_capacity(occurrences.len() + 1);
        let mut total = 0u64;
        offsets.push(0);
        for &c in occurrences {
            total += u64::from(c);
            offsets.push(total);
        }
        let slots = offsets.windows(2).map(|w| FreeSlots { next: w[0], end: w[1] }).collect();
        let block = DocBlock {
            first,
            offsets,
            entries: vec![Occurrence { ngram: 0, pos: 0 }; total as usize],
            stats: vec![DocStats::default(); occurrences.len()],
        };
        DocBlockBuilder { block, slots, n }
    }

    /// Bytes a block with this many occurrences and documents needs while
    /// it is built: its entries, offsets and stats, and the builder's free slots.
    pub fn bytes_for(occurrences: u64, docs: u64) -> u64 {
        let per_doc = 8 + std::mem::size_of::<DocStats>() + std::mem::size_of::<FreeSlots>();
        occurrences * std::mem::size_of::<Occurrence>() as u64 + docs * per_doc as u64
    }

    pub fn first(&self) -> u32 {
        self.first
    }

    /// One past the last document.
    pub fn end(&self) -> u32 {
        self.first + self.stats.len() as u32
    }

    pub fn contains(&self, doc: u32) -> bool {
        doc >= self.first && doc < self.end()
    }

    /// A document's duplicate occurrences, sorted by (n-gram, position).
    pub fn doc(&self, doc: u32) -> &[Occurrence] {
        let i = (doc - self.first) as usize;
        &self.entries[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    pub fn stats(&self, doc: u32) -> DocStats {
        self.stats[(doc - self.first) as usize]
    }
}

impl DocBlockBuilder {
    pub fn wants(&self, doc: u32) -> bool {
        self.block.contains(doc)
    }

    /// Starts loading what [`prefetch`](Self::prefetch) reads of `doc`:
    /// where its next occurrence goes. A hint only.
    ///
    /// A block is hundreds of megabytes, and consecutive occurrences from
    /// the index go to different documents, so each [`push`](Self::push)
    /// misses the cache twice, on the document's free slots and on the
    /// slot itself, unless both were asked for a few occurrences earlier:
    /// then the misses of many occurrences overlap.
    #[inline]
    pub fn prefetch_doc(&self, doc: u32) {
        if let Some(slots) = self.slots.get(doc.wrapping_sub(self.block.first) as usize) {
            dupgram_prefetch::prefetch(slots);
        }
    }

    /// Starts loading the cache line the next occurrence of `doc` will be
    /// written to; a hint only, and nothing for a document outside the
    /// block or one already full.
    #[inline]
    pub fn prefetch(&self, doc: u32) {
        let Some(slots) = self.slots.get(doc.wrapping_sub(self.block.first) as usize) else { return };
        if let Some(entry) = self.block.entries.get(slots.next as usize) {
            dupgram_prefetch::prefetch(entry);
        }
    }

    /// Adds an occurrence; n-grams must come in increasing ID order.
    /// Fails, adding nothing, on more occurrences of the document than the
    /// block was sized for (an index that disagrees with its totals).
    #[inline]
    pub fn push(&mut self, doc: u32, ngram: u32, pos: u32) -> Result<(), CountMismatch> {
        let i = (doc - self.block.first) as usize;
        let FreeSlots { next, end } = self.slots[i];
        if next >= end {
            return Err(CountMismatch { doc, counted: end - self.block.offsets[i], found: None });
        }
        self.block.entries[next as usize] = Occurrence { ngram, pos };
        self.slots[i].next = next + 1;
        Ok(())
    }

    /// Finishes the block; `tokens[i]` is the token count of document `first + i`.
    /// Fails on a document with fewer occurrences than the block was sized for.
    pub fn finish(mut self, tokens: &[u32]) -> Result<DocBlock, CountMismatch> {
        let n = self.n;
        let mut starts = Vec::new();
        for (i, stats) in self.block.stats.iter_mut().enumerate() {
            let (start, end) = (self.block.offsets[i], self.block.offsets[i + 1]);
            let next = self.slots[i].next;
            if next != end {
                let doc = self.block.first + i as u32;
                return Err(CountMismatch { doc, counted: end - start, found: Some(next - start) });
            }
            let list = &self.block.entries[start as usize..end as usize];
            let types = list.iter().enumerate().filter(|&(j, o)| j == 0 || list[j - 1].ngram != o.ngram).count() as u32;
            let positions = tokens[i].saturating_sub(n - 1);
            starts.clear();
            starts.extend(list.iter().map(|o| o.pos));
            starts.sort_unstable();
            *stats = DocStats {
                tokens: tokens[i],
                // Saturating: the tokens come from another file than the occurrences.
                distinct: positions.saturating_sub(list.len() as u32 - types),
                dup_types: types,
                dup_covered: covered(&starts, n),
            };
        }
        Ok(self.block)
    }
}

/// A document whose occurrences in the index are not as many as the
/// totals a block was sized by: the index and the totals disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountMismatch {
    pub doc: u32,
    /// Occurrences the totals count.
    pub counted: u64,
    /// Occurrences the index held, when fewer (`None`: more).
    pub found: Option<u64>,
}

impl std::fmt::Display for CountMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let CountMismatch { doc, counted, found } = self;
        match found {
            Some(found) => write!(f, "document {doc} has {found} duplicate occurrences, its totals count {counted}"),
            None => write!(f, "document {doc} has more duplicate occurrences than the {counted} its totals count"),
        }
    }
}

impl std::error::Error for CountMismatch {}

/// Tokens covered by n-grams starting at `starts` (sorted).
fn covered(starts: &[u32], n: u32) -> u32 {
    let mut total = 0;
    let mut end = 0u32;
    for &s in starts {
        // Saturating: positions come from a file; a real one is far below 2^32 - n.
        let stop = s.saturating_add(n);
        if stop > end {
            total += stop - s.max(end);
            end = stop;
        }
    }
    total
}

/// What two documents share: the counts every score is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairCounts {
    /// Distinct n-grams both hold.
    pub shared: u32,
    /// Tokens of A covered by occurrences of shared n-grams.
    pub covered_a: u32,
    pub covered_b: u32,
}

/// The scores of a pair, exact ratios of integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairScores {
    pub sscr: f64,
    pub ssr: f64,
    pub contain_a_in_b: f64,
    pub contain_b_in_a: f64,
    pub cover_a: f64,
    pub cover_b: f64,
    pub shared: u32,
}

impl PairCounts {
    /// The most documents `a` and `b` can share when at most `types` n-gram
    /// types are shared (`u64::MAX` when nothing is known), given their
    /// duplicate occurrences `occurrences_a` and `occurrences_b`; every score
    /// grows with each count, so `most(..).scores(a, b)` bounds the real
    /// scores from above.
    ///
    /// * Shared types: at most `types`, and at most either document's duplicate types.
    /// * Shared occurrences of A: every duplicate type of A left unshared
    ///   takes at least one of its occurrences, so at most
    ///   `occurrences_a - (a.dup_types - shared)`.
    /// * Covered tokens of A: at most the tokens any duplicate covers, and
    ///   at most `n` per shared occurrence.
    pub fn most(
        a: DocStats,
        occurrences_a: usize,
        b: DocStats,
        occurrences_b: usize,
        types: u64,
        n: u32,
    ) -> PairCounts {
        let shared = types.min(u64::from(a.dup_types)).min(u64::from(b.dup_types));
        let covered = |stats: DocStats, occurrences: usize| {
            let unshared = u64::from(stats.dup_types) - shared;
            let occurrences = (occurrences as u64).saturating_sub(unshared);
            u64::from(stats.dup_covered).min(occurrences.saturating_mul(u64::from(n))) as u32
        };
        PairCounts { shared: shared as u32, covered_a: covered(a, occurrences_a), covered_b: covered(b, occurrences_b) }
    }

    pub fn scores(&self, a: DocStats, b: DocStats) -> PairScores {
        let ratio = |x: u64, y: u64| if y == 0 { 0.0 } else { x as f64 / y as f64 };
        let (shared, sa, sb) = (u64::from(self.shared), u64::from(a.distinct), u64::from(b.distinct));
        PairScores {
            sscr: ratio(
                u64::from(self.covered_a) + u64::from(self.covered_b),
                u64::from(a.tokens) + u64::from(b.tokens),
            ),
            ssr: ratio(shared, sa + sb - shared),
            contain_a_in_b: ratio(shared, sa),
            contain_b_in_a: ratio(shared, sb),
            cover_a: ratio(u64::from(self.covered_a), u64::from(a.tokens)),
            cover_b: ratio(u64::from(self.covered_b), u64::from(b.tokens)),
            shared: self.shared,
        }
    }
}

/// Scratch space reused across pairs.
#[derive(Debug, Default)]
pub struct ScoreScratch {
    a: Vec<u32>,
    b: Vec<u32>,
}

/// Computes what `a` and `b` share, from their sorted occurrence lists.
pub fn score(a: &[Occurrence], b: &[Occurrence], n: u32, scratch: &mut ScoreScratch) -> PairCounts {
    scratch.a.clear();
    scratch.b.clear();
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (ga, gb) = (a[i].ngram, b[j].ngram);
        if ga < gb {
            i = skip_to(a, i, gb);
        } else if gb < ga {
            j = skip_to(b, j, ga);
        } else {
            shared += 1;
            while i < a.len() && a[i].ngram == ga {
                scratch.a.push(a[i].pos);
                i += 1;
            }
            while j < b.len() && b[j].ngram == gb {
                scratch.b.push(b[j].pos);
                j += 1;
            }
        }
    }
    scratch.a.sort_unstable();
    scratch.b.sort_unstable();
    PairCounts { shared, covered_a: covered(&scratch.a, n), covered_b: covered(&scratch.b, n) }
}

/// The first index at or after `from` whose n-gram is ≥ `target`, galloping:
/// a short list against a long one costs the short one's length times a log.
#[inline]
fn skip_to(list: &[Occurrence], from: usize, target: u32) -> usize {
    let mut step = 1;
    let mut lo = from;
    while lo + step < list.len() && list[lo + step].ngram < target {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(list.len());
    lo + list[lo..hi].partition_point(|o| o.ngram < target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};

    /// Brute force from the token sequences themselves.
    fn brute(a: &[u32], b: &[u32], n: usize) -> (u32, u32, u32, u32, u32) {
        let grams = |t: &[u32]| t.windows(n).map(|w| w.to_vec()).collect::<BTreeSet<_>>();
        let (ga, gb) = (grams(a), grams(b));
        let shared: BTreeSet<_> = ga.intersection(&gb).cloned().collect();
        let cover = |t: &[u32]| {
            let mut marked = vec![false; t.len()];
            for (p, w) in t.windows(n).enumerate() {
                if shared.contains(w) {
                    marked[p..p + n].iter_mut().for_each(|m| *m = true);
                }
            }
            marked.iter().filter(|&&m| m).count() as u32
        };
        (shared.len() as u32, cover(a), cover(b), ga.len() as u32, gb.len() as u32)
    }

    /// Builds blocks the way the pipeline does: duplicate n-grams of the two
    /// documents plus a third one, numbered in sorted order.
    fn index(docs: &[Vec<u32>], n: usize) -> DocBlock {
        let mut counts: HashMap<Vec<u32>, Vec<(u32, u32)>> = HashMap::new();
        for (d, t) in docs.iter().enumerate() {
            for (p, w) in t.windows(n).enumerate() {
                counts.entry(w.to_vec()).or_default().push((d as u32, p as u32));
            }
        }
        type Postings = Vec<(u32, u32)>;
        let mut dups: Vec<(Vec<u32>, Postings)> = counts.into_iter().filter(|(_, o)| o.len() >= 2).collect();
        dups.sort();
        let mut per_doc = vec![0u32; docs.len()];
        for (_, occ) in &dups {
            for &(d, _) in occ {
                per_doc[d as usize] += 1;
            }
        }
        let mut b = DocBlock::builder(0, &per_doc, n as u32);
        for (id, (_, occ)) in dups.iter().enumerate() {
            for &(d, p) in occ {
                b.push(d, id as u32, p).unwrap();
            }
        }
        let tokens: Vec<u32> = docs.iter().map(|t| t.len() as u32).collect();
        b.finish(&tokens).unwrap()
    }

    #[test]
    fn an_index_disagreeing_with_its_totals_is_refused() {
        // Totals: document 5 has 2 occurrences, document 6 has 1.
        let mut b = DocBlock::builder(5, &[2, 1], 3);
        b.push(5, 0, 1).unwrap();
        b.push(5, 1, 4).unwrap();
        let more = b.push(5, 2, 9).unwrap_err();
        assert_eq!(more, CountMismatch { doc: 5, counted: 2, found: None });
        assert_eq!(more.to_string(), "document 5 has more duplicate occurrences than the 2 its totals count");
        // The refused occurrence took nobody's slot: document 6 is still empty, so fewer than counted.
        let fewer = b.finish(&[10, 10]).unwrap_err();
        assert_eq!(fewer, CountMismatch { doc: 6, counted: 1, found: Some(0) });
        // The last document too (its slots end the block's).
        let mut b = DocBlock::builder(0, &[0, 1], 3);
        b.push(1, 0, 0).unwrap();
        assert!(b.push(1, 1, 2).is_err());
        // Occurrences at positions near 2^32 and more repeats than the tokens allow: no overflow.
        let mut b = DocBlock::builder(0, &[3], 3);
        for (id, pos) in [(0, u32::MAX - 1), (0, u32::MAX), (0, 5)] {
            b.push(0, id, pos).unwrap();
        }
        let stats = b.finish(&[2]).unwrap().stats(0);
        assert_eq!((stats.distinct, stats.dup_types), (0, 1));
    }

    #[test]
    fn prefetching_changes_nothing() {
        // Documents 3, 4 and 5; 4 has no occurrence, 5 fills up.
        let counts = [2, 0, 1];
        let pushes = [(3, 0, 7), (5, 0, 2), (3, 1, 1)];
        let build = |hints: &[u32]| {
            let mut b = DocBlock::builder(3, &counts, 2);
            for &(doc, ngram, pos) in &pushes {
                // Inside the block, before and past it, empty or full: hints only.
                for &h in hints {
                    b.prefetch_doc(h);
                    b.prefetch(h);
                }
                b.push(doc, ngram, pos).unwrap();
            }
            for &h in hints {
                b.prefetch_doc(h);
                b.prefetch(h);
            }
            let block = b.finish(&[9, 0, 4]).unwrap();
            (3..6).map(|d| (block.doc(d).to_vec(), block.stats(d))).collect::<Vec<_>>()
        };
        assert_eq!(build(&[0, 2, 3, 4, 5, 6, u32::MAX]), build(&[]));
    }

    proptest! {
        #[test]
        fn scores_match_brute_force(a in prop::collection::vec(0u32..6, 0..60), b in prop::collection::vec(0u32..6, 0..60), c in prop::collection::vec(0u32..6, 0..30), n in 1usize..6, slack in prop_oneof![Just(0u64), 0u64..4, Just(u64::MAX)]) {
            let block = index(&[a.clone(), b.clone(), c], n);
            let got = score(block.doc(0), block.doc(1), n as u32, &mut ScoreScratch::default());
            let (shared, ca, cb, sa, sb) = brute(&a, &b, n);
            prop_assert_eq!(got, PairCounts { shared, covered_a: ca, covered_b: cb });
            prop_assert_eq!(block.stats(0).distinct, sa);
            prop_assert_eq!(block.stats(1).distinct, sb);
            prop_assert!(block.stats(0).dup_covered >= ca && block.stats(1).dup_covered >= cb);
            // Told as many shared types as there are, or more, the bound is one.
            let (sa, sb) = (block.stats(0), block.stats(1));
            let most = PairCounts::most(sa, block.doc(0).len(), sb, block.doc(1).len(), u64::from(shared).saturating_add(slack), n as u32);
            prop_assert!(most.shared >= shared && most.covered_a >= ca && most.covered_b >= cb, "{most:?} vs {got:?}");
        }
    }

    #[test]
    fn kupietz_example_1() {
        let words = |s: &str| s.split(' ').map(|w| w.to_string()).collect::<Vec<_>>();
        let a = words(
            "DIETER RULFF FREIER JOURNALIST BERLIN LANGEN JAHREN TAZ ZULETZT LEITENDER REDAKTEUR WOCHENZEITUNG WOCHEN INTERESSE GILT SEIT LANGEM ENTWICKLUNG DEUTSCHEN INNEN UND PARTEIPOLITIK",
        );
        let b = words(
            "DIETER RULFF FREIER JOURNALIST BERLIN VIELEN JAHREN TAZ ZULETZT LEITENDER REDAKTEUR ZEITUNG WOCHEN INTERESSE GILT SEIT LANGEM ENTWICKLUNG DEUTSCHEN INNEN UND PARTEIPOLITIK",
        );
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut id = |w: &String| {
            let next = ids.len() as u32;
            *ids.entry(w.clone()).or_insert(next)
        };
        let a: Vec<u32> = a.iter().map(&mut id).collect();
        let b: Vec<u32> = b.iter().map(&mut id).collect();
        let block = index(&[a, b], 5);
        let counts = score(block.doc(0), block.doc(1), 5, &mut ScoreScratch::default());
        let s = counts.scores(block.stats(0), block.stats(1));
        assert_eq!(counts.shared, 8);
        assert_eq!(format!("{:.6} {:.6}", s.ssr, s.sscr), "0.285714 0.909091");
        assert_eq!((s.ssr, s.sscr), (8.0 / 28.0, 40.0 / 44.0));
    }

    #[test]
    fn a_few_shared_types_bound_the_coverage() {
        // A is copied whole by C, B by D after its first word, and A and B share one 3-gram.
        let a: Vec<u32> = (1..=20).collect();
        let b: Vec<u32> = [1, 2, 3].into_iter().chain(50..70).collect();
        let block = index(&[a.clone(), b.clone(), a, b[3..].to_vec()], 3);
        let (sa, sb) = (block.stats(0), block.stats(1));
        assert_eq!((sa.dup_types, sa.dup_covered, sb.dup_types, sb.dup_covered), (18, 20, 19, 23));
        let (la, lb) = (block.doc(0).len(), block.doc(1).len());
        // From the documents alone, A and B could be covered whole.
        let alone = PairCounts::most(sa, la, sb, lb, u64::MAX, 3);
        assert_eq!(alone, PairCounts { shared: 18, covered_a: 20, covered_b: 23 });
        // Knowing one type is shared: one occurrence of it, 3 tokens.
        assert_eq!(PairCounts::most(sa, la, sb, lb, 1, 3), PairCounts { shared: 1, covered_a: 3, covered_b: 3 });
        let real = score(block.doc(0), block.doc(1), 3, &mut ScoreScratch::default());
        assert_eq!(real, PairCounts { shared: 1, covered_a: 3, covered_b: 3 });
        assert_eq!(PairCounts::most(sa, la, sb, lb, 0, 3), PairCounts::default());
    }

    #[test]
    fn coverage_of_overlapping_ngrams() {
        assert_eq!(covered(&[], 3), 0);
        assert_eq!(covered(&[0, 1, 2], 3), 5);
        assert_eq!(covered(&[0, 10], 3), 6);
        assert_eq!(covered(&[5, 5, 6], 2), 3);
    }
}
