//! Chunks: a fixed amount of memory filled with n-grams, then sorted and counted.
//!
//! Pomikálek & Rychlý fill a chunk with token IDs and build a suffix array
//! over it (Larsson–Sadakane, 8 bytes a token) to list its n-grams in order.
//! dupgram keeps their plan — fixed-memory chunks, sorted in memory, spilled
//! as runs — but sorts *packed n-gram keys* instead of suffixes:
//!
//! * Word IDs need only `w = ⌈log₂ vocabulary⌉` bits (about 20 for a large
//!   corpus), so an n-gram packs into a big-endian integer of `n·w` bits held
//!   in `L` 64-bit words. Integer order of keys is the lexicographic order of
//!   the ID sequences, so sorting keys sorts n-grams, and equal keys are
//!   equal n-grams: no hashing, nothing to verify.
//! * A key rolls along the text with one shift and one OR per token, and the
//!   sorted keys decode to IDs without touching the text again; a suffix
//!   array has to chase every suffix into the text, one cache miss each.
//! * The sieve (see `dupgram-sieve`) lets only n-grams that may repeat into
//!   the chunk — a small share at n = 10 — and a key sort only pays for what
//!   it holds, while a suffix array is built over every token.
//!
//! `benches/chunk_sort.rs` at the workspace root measures this against
//! `libsais` (the fastest suffix-array builder for integer alphabets), a
//! positional sort comparing slices, and an LSD radix sort of the keys; the
//! crate README numbers in the top-level README come from it. The one thing
//! a suffix array does better is memory per token when *every* n-gram must
//! be kept (8 bytes against `8·L`): then chunks hold fewer n-grams and there
//! are more runs to merge, which the merge absorbs.
//!
//! **Long n** (`dedup --unit span`, K = 50 words and more). A packed key
//! grows with n — 16 words (128 bytes) at n = 50 with 18-bit IDs, and past
//! the 1024-bit maximum from about n = 56 — and rolling and comparing it
//! costs L words a token. The second table of `benches/chunk_sort.rs`
//! (2M generated tokens, a loaded 2-core machine, M n-grams/s): packed keys
//! 4.2 at n = 10, 2.4 at n = 20, 1.1 at n = 50; a `libsais` suffix array with
//! a neighbour scan 2.8 / 3.7 / 3.3, then 2.7 at n = 100 and 1.6 at n = 256;
//! 128-bit hashes of the n-grams sorted with their positions and verified
//! 2.8 / 3.5 / 3.1 / 3.1 / 2.8, flat in n. The **crossover lies between
//! n = 10 and n = 20**: below it packed keys (exact, nothing to verify) win,
//! which is why `ngrams`, `pairs` and the n-gram `dedup` (n ≤ 32) keep them;
//! above it `dedup --unit span` sorts 128-bit hashes instead. A suffix array
//! is as fast per chunk and smaller (4 bytes a token), but it only orders one
//! chunk: the runs that carry a chunk's n-grams to the merge would again hold
//! n words each, where a hash is 16 bytes whatever n.

use std::cmp::Ordering;

/// Storage sizes (in 64-bit words) that keys are rounded up to, so only a
/// handful of `Chunk<L>` instantiations exist.
pub const STORAGE_WORDS: [usize; 8] = [1, 2, 3, 4, 6, 8, 12, 16];
/// The longest key, in bits.
pub const MAX_KEY_BITS: usize = 64 * 16;

/// How n-grams of word IDs pack into keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyLayout {
    n: usize,
    width: u32,
    words: usize,
}

/// The n-gram is too long for the vocabulary to pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutError {
    pub bits: usize,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n-gram keys would need {} bits; at most {MAX_KEY_BITS} are supported (use a smaller n)", self.bits)
    }
}

impl std::error::Error for LayoutError {}

impl KeyLayout {
    /// The layout for `n`-grams of IDs up to `max_id`.
    pub fn new(n: usize, max_id: u32) -> Result<KeyLayout, LayoutError> {
        assert!(n >= 1, "n-grams have at least one word");
        let width = (32 - max_id.leading_zeros()).max(1);
        let bits = n * width as usize;
        let needed = bits.div_ceil(64);
        let words = STORAGE_WORDS.iter().copied().find(|&w| w >= needed).ok_or(LayoutError { bits })?;
        Ok(KeyLayout { n, width, words })
    }

    pub fn n(&self) -> usize {
        self.n
    }

    /// Bits per word ID.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// 64-bit words per key; one of [`STORAGE_WORDS`].
    pub fn words(&self) -> usize {
        self.words
    }

    /// Bytes one key takes in a chunk.
    pub fn key_bytes(&self) -> usize {
        self.words * 8
    }

    fn masks<const L: usize>(&self) -> [u64; L] {
        assert_eq!(L, self.words, "key storage does not match the layout");
        let bits = self.n * self.width as usize;
        let mut masks = [0u64; L];
        for (i, m) in masks.iter_mut().enumerate() {
            // Word i (0 = most significant) holds bits [64·(L−1−i), 64·(L−i)).
            let low = 64 * (L - 1 - i);
            *m = match bits.saturating_sub(low) {
                0 => 0,
                b if b >= 64 => u64::MAX,
                b => (1u64 << b) - 1,
            };
        }
        masks
    }

    /// Packs the IDs of one n-gram.
    /// The key is the one [`KeyWindow`] rolls to over the same IDs, built
    /// directly: the n-gram's first ID in the most significant bits.
    #[inline]
    pub fn pack<const L: usize>(&self, ids: &[u32]) -> [u64; L] {
        debug_assert_eq!(ids.len(), self.n, "an n-gram has n IDs");
        // From the last ID (the lowest bits) up, through a register: each
        // key word is stored once, when full.
        let w = self.width;
        let mut key = [0u64; L];
        let mut word = L;
        let (mut bits, mut filled) = (0u128, 0u32);
        for &id in ids.iter().rev() {
            bits |= u128::from(id) << filled;
            filled += w;
            if filled >= 64 {
                word -= 1;
                key[word] = bits as u64;
                bits >>= 64;
                filled -= 64;
            }
        }
        if filled > 0 && word > 0 {
            key[word - 1] = bits as u64;
        }
        key
    }

    /// Writes the IDs packed in `key` into `ids` (length n).
    #[inline]
    pub fn unpack<const L: usize>(&self, key: &[u64; L], ids: &mut [u32]) {
        for (j, out) in ids.iter_mut().enumerate() {
            *out = self.id_at(key, j);
        }
    }

    /// The `j`-th ID packed in `key` (`j` < n; 0 is the first word).
    #[inline]
    pub fn id_at<const L: usize>(&self, key: &[u64; L], j: usize) -> u32 {
        let w = self.width as usize;
        let bit = (self.n - 1 - j) * w;
        let (word, shift) = (L - 1 - bit / 64, bit % 64);
        let mut v = key[word] >> shift;
        if shift + w > 64 {
            v |= key[word - 1] << (64 - shift);
        }
        (v & ((1u64 << w) - 1)) as u32
    }
}

/// Rolls an n-gram key along a stream of word IDs.
#[derive(Debug, Clone)]
pub struct KeyWindow<const L: usize> {
    key: [u64; L],
    masks: [u64; L],
    width: u32,
    n: usize,
    filled: usize,
}

impl<const L: usize> KeyWindow<L> {
    pub fn new(layout: KeyLayout) -> Self {
        KeyWindow { key: [0; L], masks: layout.masks::<L>(), width: layout.width, n: layout.n, filled: 0 }
    }

    /// Forgets the window (document boundary, or a word no repeated n-gram contains).
    #[inline]
    pub fn reset(&mut self) {
        self.filled = 0;
    }

    /// Appends a word ID; returns the key of the n-gram it completes, if any.
    #[inline]
    pub fn push(&mut self, id: u32) -> Option<[u64; L]> {
        let w = self.width;
        for i in 0..L - 1 {
            self.key[i] = (self.key[i] << w) | (self.key[i + 1] >> (64 - w));
        }
        self.key[L - 1] = if w == 64 { 0 } else { self.key[L - 1] << w } | u64::from(id);
        for i in 0..L {
            self.key[i] &= self.masks[i];
        }
        if self.filled < self.n {
            self.filled += 1;
        }
        (self.filled == self.n).then_some(self.key)
    }
}

/// What sorting one chunk found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkCounts {
    /// N-gram occurrences in the chunk.
    pub ngrams: u64,
    /// Distinct n-grams, each written once with its count.
    pub distinct: u64,
}

/// A fixed-capacity buffer of n-gram keys.
pub struct Chunk<const L: usize> {
    layout: KeyLayout,
    keys: Vec<[u64; L]>,
    /// Keys that come with a count of their own ([`Chunk::push_counted`]).
    counted: Vec<([u64; L], u64)>,
    capacity: usize,
    ids: Vec<u32>,
}

impl<const L: usize> Chunk<L> {
    /// A chunk holding up to `capacity` keys. Memory is taken as keys
    /// arrive (a small corpus never touches the rest), doubling up to
    /// `capacity`; large blocks grow by remapping, so growth never holds
    /// the old and new block at once.
    pub fn new(layout: KeyLayout, capacity: usize) -> Self {
        assert_eq!(L, layout.words, "key storage does not match the layout");
        let capacity = capacity.max(1);
        let keys = Vec::with_capacity(capacity.min(1 << 16));
        Chunk { layout, keys, counted: Vec::new(), capacity, ids: vec![0; layout.n] }
    }

    /// Bytes a chunk of `capacity` keys allocates.
    pub fn bytes_for(layout: KeyLayout, capacity: usize) -> usize {
        capacity * layout.key_bytes()
    }

    /// Keys held, a counted key as two (it takes at most twice a key's bytes).
    pub fn len(&self) -> usize {
        self.keys.len() + 2 * self.counted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.counted.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.len() >= self.capacity
    }

    /// Adds an n-gram key. The caller spills the chunk when it is full.
    #[inline]
    pub fn push(&mut self, key: [u64; L]) {
        debug_assert!(!self.is_full());
        if self.keys.len() == self.keys.capacity() {
            let target = (self.keys.capacity() * 2).clamp(1, self.capacity);
            self.keys.reserve_exact(target - self.keys.len());
        }
        self.keys.push(key);
    }

    /// Adds `count` occurrences of an n-gram key at once, as `count` pushes
    /// would (it counts as two keys towards the capacity).
    pub fn push_counted(&mut self, key: [u64; L], count: u64) {
        debug_assert!(!self.is_full());
        self.counted.push((key, count));
    }

    /// Sorts the keys and hands each distinct n-gram, in increasing order,
    /// to `emit` with its count; leaves the chunk empty.
    pub fn drain_sorted<E>(&mut self, mut emit: impl FnMut(&[u32], u64) -> Result<(), E>) -> Result<ChunkCounts, E> {
        self.keys.sort_unstable_by(cmp_keys);
        if !self.counted.is_empty() {
            return self.drain_with_counted(emit);
        }
        let mut counts = ChunkCounts { ngrams: self.keys.len() as u64, distinct: 0 };
        let mut i = 0;
        while i < self.keys.len() {
            let key = self.keys[i];
            let mut j = i + 1;
            while j < self.keys.len() && self.keys[j] == key {
                j += 1;
            }
            self.layout.unpack(&key, &mut self.ids);
            emit(&self.ids, (j - i) as u64)?;
            counts.distinct += 1;
            i = j;
        }
        self.keys.clear();
        Ok(counts)
    }

    /// [`Self::drain_sorted`] once the keys are sorted, with counted keys
    /// among them: the two sorted lists are walked together.
    fn drain_with_counted<E>(&mut self, mut emit: impl FnMut(&[u32], u64) -> Result<(), E>) -> Result<ChunkCounts, E> {
        let mut counted = std::mem::take(&mut self.counted);
        counted.sort_unstable_by(|a, b| cmp_keys(&a.0, &b.0));
        let more: u64 = counted.iter().fold(0u64, |sum, c| sum.saturating_add(c.1));
        let mut counts = ChunkCounts { ngrams: (self.keys.len() as u64).saturating_add(more), distinct: 0 };
        let (mut i, mut c) = (0, 0);
        loop {
            let key = match (self.keys.get(i), counted.get(c)) {
                (None, None) => break,
                (Some(k), None) | (None, Some((k, _))) => *k,
                (Some(a), Some((b, _))) => *a.min(b),
            };
            let mut count = 0u64;
            while self.keys.get(i) == Some(&key) {
                count += 1;
                i += 1;
            }
            while let Some(&(k, n)) = counted.get(c)
                && k == key
            {
                count = count.saturating_add(n);
                c += 1;
            }
            self.layout.unpack(&key, &mut self.ids);
            emit(&self.ids, count)?;
            counts.distinct += 1;
        }
        self.keys.clear();
        counted.clear();
        self.counted = counted;
        Ok(counts)
    }
}

/// A fixed-capacity buffer of n-gram keys with an occurrence each
/// (`document << 32 | position`): the chunk of the second pass, whose runs
/// list where each n-gram occurs.
pub struct PostingChunk<const L: usize> {
    layout: KeyLayout,
    items: Vec<([u64; L], u64)>,
    capacity: usize,
    ids: Vec<u32>,
    occurrences: Vec<u64>,
}

impl<const L: usize> PostingChunk<L> {
    /// A chunk of up to `capacity` occurrences; memory is taken as they arrive.
    pub fn new(layout: KeyLayout, capacity: usize) -> Self {
        assert_eq!(L, layout.words, "key storage does not match the layout");
        let capacity = capacity.max(1);
        PostingChunk {
            layout,
            items: Vec::with_capacity(capacity.min(1 << 16)),
            capacity,
            ids: vec![0; layout.n],
            occurrences: Vec::new(),
        }
    }

    /// Bytes one occurrence takes.
    pub fn item_bytes(layout: KeyLayout) -> usize {
        layout.key_bytes() + 8
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.items.len() >= self.capacity
    }

    #[inline]
    pub fn push(&mut self, key: [u64; L], occurrence: u64) {
        if self.items.len() == self.items.capacity() {
            let target = (self.items.capacity() * 2).clamp(1, self.capacity);
            self.items.reserve_exact(target - self.items.len());
        }
        self.items.push((key, occurrence));
    }

    /// Sorts, and hands each distinct n-gram with its occurrences (increasing) to `emit`; leaves the chunk empty.
    pub fn drain_sorted<E>(&mut self, mut emit: impl FnMut(&[u32], &[u64]) -> Result<(), E>) -> Result<ChunkCounts, E> {
        self.items.sort_unstable();
        let mut counts = ChunkCounts { ngrams: self.items.len() as u64, distinct: 0 };
        let mut i = 0;
        while i < self.items.len() {
            let key = self.items[i].0;
            self.occurrences.clear();
            while i < self.items.len() && self.items[i].0 == key {
                self.occurrences.push(self.items[i].1);
                i += 1;
            }
            self.layout.unpack(&key, &mut self.ids);
            emit(&self.ids, &self.occurrences)?;
            counts.distinct += 1;
        }
        self.items.clear();
        Ok(counts)
    }
}

#[inline]
fn cmp_keys<const L: usize>(a: &[u64; L], b: &[u64; L]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn count_with_chunk<const L: usize>(layout: KeyLayout, text: &[u32]) -> Vec<(Vec<u32>, u64)> {
        let mut chunk = Chunk::<L>::new(layout, text.len());
        let mut w = KeyWindow::<L>::new(layout);
        for &id in text {
            if let Some(k) = w.push(id) {
                chunk.push(k);
            }
        }
        let mut out = Vec::new();
        chunk
            .drain_sorted::<()>(|g, c| {
                out.push((g.to_vec(), c));
                Ok(())
            })
            .unwrap();
        out
    }

    fn naive(text: &[u32], n: usize) -> Vec<(Vec<u32>, u64)> {
        let mut m: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for g in text.windows(n) {
            *m.entry(g.to_vec()).or_default() += 1;
        }
        m.into_iter().collect()
    }

    proptest! {
        #[test]
        fn sorted_counts_match_naive(text in prop::collection::vec(0u32..40, 0..200), n in 1usize..13, wide: bool) {
            let max = if wide { (1 << 30) + 5 } else { 39 };
            let layout = KeyLayout::new(n, max).unwrap();
            let got = match layout.words() {
                1 => count_with_chunk::<1>(layout, &text),
                2 => count_with_chunk::<2>(layout, &text),
                3 => count_with_chunk::<3>(layout, &text),
                4 => count_with_chunk::<4>(layout, &text),
                6 => count_with_chunk::<6>(layout, &text),
                8 => count_with_chunk::<8>(layout, &text),
                w => panic!("unexpected storage {w}"),
            };
            prop_assert_eq!(got, naive(&text, n));
        }

        #[test]
        fn counted_keys_sum_like_repeated_pushes(
            plain in prop::collection::vec(prop::collection::vec(0u32..6, 2), 0..60),
            counted in prop::collection::vec((prop::collection::vec(0u32..6, 2), 1u64..9), 0..30),
        ) {
            let layout = KeyLayout::new(2, 5).unwrap();
            let mut chunk = Chunk::<1>::new(layout, 200);
            let mut expect: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
            for g in &plain {
                chunk.push(layout.pack::<1>(g));
                *expect.entry(g.clone()).or_default() += 1;
            }
            for (g, c) in &counted {
                chunk.push_counted(layout.pack::<1>(g), *c);
                *expect.entry(g.clone()).or_default() += c;
            }
            prop_assert_eq!(chunk.len(), plain.len() + 2 * counted.len());
            let mut out = Vec::new();
            let counts = chunk.drain_sorted::<()>(|g, c| { out.push((g.to_vec(), c)); Ok(()) }).unwrap();
            prop_assert_eq!(counts.ngrams, expect.values().sum::<u64>());
            prop_assert_eq!(out, expect.into_iter().collect::<Vec<_>>());
            prop_assert!(chunk.is_empty());
        }

        #[test]
        fn pack_builds_the_key_the_window_rolls_to(
            ids in prop::collection::vec(any::<u32>(), 1..40),
            width in 1u32..33,
        ) {
            let ids: Vec<u32> = ids.iter().map(|&id| if width == 32 { id } else { id & ((1 << width) - 1) }).collect();
            let Ok(layout) = KeyLayout::new(ids.len(), if width == 32 { u32::MAX } else { (1 << width) - 1 }) else {
                return Ok(());
            };
            fn both<const L: usize>(layout: KeyLayout, ids: &[u32]) -> (Vec<u64>, Vec<u64>) {
                let mut window = KeyWindow::<L>::new(layout);
                let rolled = ids.iter().filter_map(|&id| window.push(id)).last().unwrap();
                (layout.pack::<L>(ids).to_vec(), rolled.to_vec())
            }
            let (packed, rolled) = match layout.words() {
                1 => both::<1>(layout, &ids),
                2 => both::<2>(layout, &ids),
                3 => both::<3>(layout, &ids),
                4 => both::<4>(layout, &ids),
                6 => both::<6>(layout, &ids),
                8 => both::<8>(layout, &ids),
                12 => both::<12>(layout, &ids),
                16 => both::<16>(layout, &ids),
                w => panic!("unexpected storage {w}"),
            };
            prop_assert_eq!(packed, rolled);
        }

        #[test]
        fn pack_unpack_round_trip(ids in prop::collection::vec(any::<u32>().prop_map(|x| x >> 1), 1..33)) {
            let layout = KeyLayout::new(ids.len(), u32::MAX >> 1).unwrap();
            prop_assert_eq!(layout.words(), STORAGE_WORDS.iter().copied().find(|&w| w * 64 >= ids.len() * 31).unwrap());
            let mut back = vec![0; ids.len()];
            match layout.words() {
                1 => layout.unpack(&layout.pack::<1>(&ids), &mut back),
                2 => layout.unpack(&layout.pack::<2>(&ids), &mut back),
                3 => layout.unpack(&layout.pack::<3>(&ids), &mut back),
                4 => layout.unpack(&layout.pack::<4>(&ids), &mut back),
                6 => layout.unpack(&layout.pack::<6>(&ids), &mut back),
                8 => layout.unpack(&layout.pack::<8>(&ids), &mut back),
                12 => layout.unpack(&layout.pack::<12>(&ids), &mut back),
                16 => layout.unpack(&layout.pack::<16>(&ids), &mut back),
                w => panic!("unexpected storage {w}"),
            }
            prop_assert_eq!(back, ids);
        }
    }

    #[test]
    fn posting_chunks_group_occurrences() {
        let layout = KeyLayout::new(2, 9).unwrap();
        let mut chunk = PostingChunk::<1>::new(layout, 10);
        for (ids, occ) in [([3, 4], 7u64), ([1, 2], 9), ([3, 4], 2), ([1, 2], 5), ([0, 9], 1)] {
            chunk.push(layout.pack::<1>(&ids), occ);
        }
        let mut out = Vec::new();
        chunk
            .drain_sorted::<()>(|g, o| {
                out.push((g.to_vec(), o.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(out, vec![(vec![0, 9], vec![1]), (vec![1, 2], vec![5, 9]), (vec![3, 4], vec![2, 7])]);
        assert!(chunk.is_empty());
    }

    #[test]
    fn key_order_is_id_order() {
        let layout = KeyLayout::new(3, 1000).unwrap();
        let a = layout.pack::<1>(&[1, 999, 999]);
        let b = layout.pack::<1>(&[2, 0, 0]);
        assert!(a < b);
    }

    #[test]
    fn too_long_keys_are_an_error() {
        assert!(KeyLayout::new(40, u32::MAX >> 1).is_err());
        assert_eq!(KeyLayout::new(32, u32::MAX >> 1).unwrap().words(), 16);
    }
}
