//! The sieve: proof that most n-grams occur once, before anything is sorted.
//!
//! At n = 10 nearly every n-gram of real text is unique, and sorting and
//! spilling them all is what makes the external sort of Pomikálek & Rychlý
//! write three times the input to disk. dupgram's lexicon pass already reads
//! every token, so it also drops a fingerprint of every n-gram into a table
//! of two-bit saturating counters (0, 1, "2 or more"). The counting pass then
//! keeps only the n-grams whose counter reached 2.
//!
//! The sieve never decides a result, it only discards: an n-gram that occurs
//! twice sets its own counter to 2 both times, whatever else collides with it,
//! so no repeated n-gram is ever dropped. A unique n-gram survives only when
//! another n-gram lands on its counter; survivors are sorted and counted
//! exactly like everything else, so a collision costs a few bytes of spill,
//! never a wrong count. With `s` counters and `d` distinct n-grams a unique
//! n-gram survives with probability about `1 − e^(−d/s)`.
//!
//! Once filled, the sieve is only asked "did this counter reach 2?", which
//! one bit answers. [`Sieve::freeze`] packs the table in place into one bit
//! a counter and gives the other half of its memory back: the table is
//! built at twice the size the counting pass can spare beside its chunks
//! (when nothing else needs the memory while it is filled), so the same
//! memory holds twice the counters during the count, and a unique n-gram
//! survives half as often.
//!
//! Fingerprints roll: a polynomial over the words' 64-bit hashes modulo 2⁶⁴,
//! updated in O(1) per token and finished with the MurmurHash3 mixer so the
//! counter index uses well-spread bits.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// First eight bytes of a saved sieve.
pub const SIEVE_MAGIC: &[u8; 8] = b"DGSIEVE\0";
/// The sieve file format this build writes and reads.
pub const SIEVE_VERSION: u16 = 1;

/// Counters per 64-bit word.
const SLOTS_PER_WORD: u64 = 32;
/// Counters per byte of a sieve: two bits each.
pub const COUNTERS_PER_BYTE: u64 = SLOTS_PER_WORD / 8;

/// A table of two-bit saturating counters, safe to fill from several threads.
///
/// Filling is order-independent: a counter ends at "2 or more" exactly when
/// two or more insertions hit it, however the threads interleave.
///
/// The table is an anonymous memory map advised to use huge pages: every
/// access is a random one into tens or hundreds of megabytes, and with 4 KiB
/// pages nearly each would also miss the TLB. Callers that can wait a few
/// n-grams for an answer [`prefetch`](Self::prefetch) the counter first (see
/// [`DelayLine`]), so several cache misses are in flight at once.
pub struct Sieve {
    /// Keeps the mapping alive; all access goes through `cells`.
    _map: memmap2::MmapMut,
    cells: *const AtomicU64,
    /// Words of the table as it is now (half of `counting_words`, rounded up, when frozen).
    words: usize,
    /// Words of the table as a table of two-bit counters.
    counting_words: usize,
    slots: u64,
    /// One bit a counter, "2 or more", instead of two ([`Sieve::freeze`]).
    frozen: bool,
}

// SAFETY: `cells` points into `_map`, which the Sieve owns and never moves or
// unmaps before drop; the memory is only ever accessed through atomics, so
// sharing and sending the Sieve between threads is as safe as for a
// `Vec<AtomicU64>`.
unsafe impl Send for Sieve {}
unsafe impl Sync for Sieve {}

/// Where a fingerprint's counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    word: usize,
    shift: u32,
}

impl Sieve {
    /// A sieve of about `bytes` bytes (at least one word), zeroed.
    pub fn with_bytes(bytes: usize) -> std::io::Result<Sieve> {
        let words = (bytes / 8).max(1);
        let mut map = memmap2::MmapMut::map_anon(words * 8)?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        // A raw pointer taken from the exclusive borrow, so writing through it
        // (as atomics) never goes through a shared `&[u8]`.
        let cells = map.as_mut_ptr() as *const AtomicU64;
        Ok(Sieve {
            _map: map,
            cells,
            words,
            counting_words: words,
            slots: words as u64 * SLOTS_PER_WORD,
            frozen: false,
        })
    }

    #[inline]
    fn cells(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so aligned for u64), holds
        // exactly `words` u64s, lives as long as `self`, and all-zero or any
        // other bits are valid u64s. AtomicU64 has the layout of u64.
        unsafe { std::slice::from_raw_parts(self.cells, self.words) }
    }

    /// Bytes the table holds now (half, rounded up to a word, once frozen).
    pub fn bytes(&self) -> usize {
        self.words * 8
    }

    /// Bytes the table will hold once [`freeze`](Self::freeze)d.
    pub fn frozen_bytes(&self) -> usize {
        self.counting_words.div_ceil(2) * 8
    }

    /// Whether the table holds one bit a counter ([`freeze`](Self::freeze)).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// The counter of a fingerprint.
    #[inline]
    pub fn locate(&self, fingerprint: u64) -> Slot {
        let slot = ((u128::from(fingerprint) * u128::from(self.slots)) >> 64) as u64;
        if self.frozen {
            Slot { word: (slot / 64) as usize, shift: (slot % 64) as u32 }
        } else {
            Slot { word: (slot / SLOTS_PER_WORD) as usize, shift: ((slot % SLOTS_PER_WORD) * 2) as u32 }
        }
    }

    /// Starts loading a counter's cache line; a hint only.
    #[inline]
    pub fn prefetch(&self, slot: Slot) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.cells()[slot.word].as_ptr() as *const i8;
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a
            // hint to the cache that cannot fault or change memory; `p` points
            // into the table anyway.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Records one occurrence at a counter (of a sieve not [`freeze`](Self::freeze)d).
    #[inline]
    pub fn insert_at(&self, slot: Slot) {
        debug_assert!(!self.frozen, "a frozen sieve counts nothing more");
        let cell = &self.cells()[slot.word];
        let seen = 1u64 << slot.shift;
        let twice = 2u64 << slot.shift;
        // A plain load first: a saturated counter needs no locked write.
        if cell.load(Ordering::Relaxed) & twice != 0 {
            return;
        }
        if cell.fetch_or(seen, Ordering::Relaxed) & seen != 0 {
            cell.fetch_or(twice, Ordering::Relaxed);
        }
    }

    /// Prefetches the counter of `fingerprint` and fills the one prefetched
    /// [`DEPTH`] n-grams ago: several cache misses in flight instead of one.
    /// Whoever stops pushing drains `line` into [`insert_at`](Self::insert_at).
    #[inline]
    pub fn insert_delayed(&self, line: &mut DelayLine<Slot>, fingerprint: u64) {
        let slot = self.locate(fingerprint);
        self.prefetch(slot);
        if let Some(ready) = line.push(slot) {
            self.insert_at(ready);
        }
    }

    /// False only if every n-gram hashing to this counter occurs at most once.
    #[inline]
    pub fn may_repeat_at(&self, slot: Slot) -> bool {
        let repeated = if self.frozen { 1u64 } else { 2u64 };
        self.cells()[slot.word].load(Ordering::Relaxed) & (repeated << slot.shift) != 0
    }

    /// Records one occurrence of the n-gram with this fingerprint.
    #[inline]
    pub fn insert(&self, fingerprint: u64) {
        self.insert_at(self.locate(fingerprint));
    }

    /// False only if the n-gram with this fingerprint certainly occurs at most once.
    #[inline]
    pub fn may_repeat(&self, fingerprint: u64) -> bool {
        self.may_repeat_at(self.locate(fingerprint))
    }

    /// Adds another sieve's counts (of the same size) to this one: a counter
    /// ends at "2 or more" when either was, or when both had seen one.
    pub fn absorb_words(&self, first_word: usize, words: &[u64]) {
        debug_assert!(!self.frozen, "a frozen sieve counts nothing more");
        const SEEN: u64 = 0x5555_5555_5555_5555;
        for (cell, &other) in self.cells()[first_word..].iter().zip(words) {
            let mine = cell.load(Ordering::Relaxed);
            let twice = (mine | other) & !SEEN | (((mine & other) & SEEN) << 1);
            cell.store((mine | other) & SEEN | twice, Ordering::Relaxed);
        }
    }

    /// Writes the sieve: magic, format version, word count, the words
    /// (little-endian) and a CRC-32 of them. A frozen sieve cannot be
    /// saved: the format holds counters, which tasks add up.
    pub fn save<W: Write + ?Sized>(&self, out: &mut W) -> std::io::Result<()> {
        if self.frozen {
            return Err(std::io::Error::other("a frozen sieve cannot be saved"));
        }
        out.write_all(SIEVE_MAGIC)?;
        out.write_all(&SIEVE_VERSION.to_le_bytes())?;
        out.write_all(&[0; 6])?;
        out.write_all(&(self.words as u64).to_le_bytes())?;
        let mut crc = crc32fast::Hasher::new();
        let mut buf = Vec::with_capacity(64 * 1024);
        for chunk in self.cells().chunks(8192) {
            buf.clear();
            for w in chunk {
                buf.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            crc.update(&buf);
            out.write_all(&buf)?;
        }
        out.write_all(&crc.finalize().to_le_bytes())
    }

    /// Reads a saved sieve, or adds it to `into` (which must be the same size) when given.
    pub fn load(input: &mut impl Read, into: Option<&Sieve>) -> std::io::Result<Option<Sieve>> {
        let bad = |what: &str| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not a valid sieve file: {what}"))
        };
        let mut head = [0u8; 24];
        input.read_exact(&mut head)?;
        if &head[..8] != SIEVE_MAGIC || u16::from_le_bytes([head[8], head[9]]) != SIEVE_VERSION {
            return Err(bad("bad magic or version"));
        }
        let words = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes")) as usize;
        if into.is_some_and(|s| s.frozen) {
            return Err(bad("a frozen sieve counts nothing more"));
        }
        if into.is_some_and(|s| s.words != words) {
            return Err(bad("sieves of different sizes cannot be combined"));
        }
        // A damaged size must be an error, not an overflow; a huge one fails
        // to map, or maps untouched memory until the file runs out.
        let bytes = words.checked_mul(8).ok_or_else(|| bad("implausible size"))?;
        let fresh = if into.is_none() { Some(Sieve::with_bytes(bytes)?) } else { None };
        let target = into.or(fresh.as_ref()).expect("a sieve to fill");
        let mut crc = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut parsed = Vec::with_capacity(8192);
        let mut at = 0;
        while at < words {
            let take = (words - at).min(8192);
            input.read_exact(&mut buf[..take * 8])?;
            crc.update(&buf[..take * 8]);
            parsed.clear();
            parsed.extend(buf[..take * 8].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))));
            target.absorb_words(at, &parsed);
            at += take;
        }
        let mut tail = [0u8; 4];
        input.read_exact(&mut tail)?;
        if u32::from_le_bytes(tail) != crc.finalize() {
            return Err(bad("checksum mismatch"));
        }
        // The size field is outside the checksum: a damaged one that still
        // finds a matching checksum is caught by what is left over.
        if input.read(&mut [0u8; 1])? != 0 {
            return Err(bad("trailing bytes after the checksum"));
        }
        Ok(fresh)
    }

    /// Halves the sieve in place, keeping every promise it made: counter
    /// `i` of the half-size sieve is the saturating sum of counters `2i` and
    /// `2i + 1`, which is exactly what filling a sieve of half the size would
    /// have given, because [`locate`](Self::locate) maps a fingerprint to
    /// `⌊fingerprint × slots / 2⁶⁴⌋` and halving `slots` halves that index.
    /// The freed upper half goes back to the system. False (and nothing
    /// changes) when the sieve has an odd number of words or is frozen.
    pub fn halve(&mut self) -> bool {
        if self.frozen || self.words < 2 || !self.words.is_multiple_of(2) {
            return false;
        }
        let half = self.words / 2;
        let cells = self.cells();
        // Word `j` is written after words `2j` and `2j + 1` (both ≥ j) are read.
        for j in 0..half {
            let low = fold_counters(cells[2 * j].load(Ordering::Relaxed));
            let high = fold_counters(cells[2 * j + 1].load(Ordering::Relaxed));
            cells[j].store(low | high << 32, Ordering::Relaxed);
        }
        self.words = half;
        self.counting_words = half;
        self.slots = half as u64 * SLOTS_PER_WORD;
        self.release_beyond(half * 8);
        true
    }

    /// Packs the table into one bit a counter, set where the counter
    /// reached 2, and gives the freed half back to the system. A frozen
    /// sieve answers [`may_repeat`](Self::may_repeat) exactly as before
    /// (the counter index of a fingerprint does not change, only where its
    /// bit is kept) and counts nothing more until [`clear`](Self::clear)ed.
    pub fn freeze(&mut self) {
        if self.frozen {
            return;
        }
        let (counting, packed) = (self.counting_words, self.counting_words.div_ceil(2));
        let cells = self.cells();
        // Word `j` is written after words `2j` and `2j + 1` (both ≥ j) are read.
        for j in 0..packed {
            let low = repeat_bits(cells[2 * j].load(Ordering::Relaxed));
            let high = if 2 * j + 1 < counting { repeat_bits(cells[2 * j + 1].load(Ordering::Relaxed)) } else { 0 };
            cells[j].store(low | high << 32, Ordering::Relaxed);
        }
        self.words = packed;
        self.frozen = true;
        self.release_beyond(packed * 8);
    }

    /// Zeroes every counter, to fill the sieve afresh (for another part of
    /// the n-grams): cheaper than unmapping and mapping it again, and the
    /// memory it holds stays what the plan counted. A frozen sieve becomes a
    /// table of two-bit counters again, at its full size.
    pub fn clear(&mut self) {
        self.words = self.counting_words;
        self.frozen = false;
        for cell in self.cells() {
            cell.store(0, Ordering::Relaxed);
        }
    }

    /// Gives the whole pages past byte `used` of the map back to the system.
    fn release_beyond(&mut self, used: usize) {
        let page = 4096;
        let start = used.div_ceil(page) * page;
        let end = self._map.len();
        if start >= end {
            return;
        }
        // SAFETY: the range lies inside the mapping, which is private and
        // anonymous: after MADV_DONTNEED its pages read as zeros again, and
        // nothing reads them anyway — every access goes through `cells()`,
        // which now spans only the first `words` u64s, all below `start`.
        // `&mut self` means no other thread holds a reference into the map.
        let _ = unsafe { self._map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
    }

    /// Share of counters at "2 or more": the chance a unique n-gram slips through.
    pub fn saturation(&self) -> f64 {
        let high_bits = if self.frozen { u64::MAX } else { 0xAAAA_AAAA_AAAA_AAAAu64 };
        let set: u64 =
            self.cells().iter().map(|w| u64::from((w.load(Ordering::Relaxed) & high_bits).count_ones())).sum();
        set as f64 / self.slots as f64
    }
}

/// The 32 two-bit counters of a word, pairwise added (saturating at 2)
/// into 16, packed into the low 32 bits: counters `2i` and `2i + 1` become counter `i`.
#[inline]
fn fold_counters(word: u64) -> u64 {
    const PAIR: u64 = 0x3333_3333_3333_3333;
    const SEEN: u64 = 0x1111_1111_1111_1111;
    let (a, b) = (word & PAIR, (word >> 2) & PAIR);
    let any = a | b;
    let sum = (any & SEEN) | (any & (SEEN << 1)) | ((a & b & SEEN) << 1);
    // Two bits every four, packed into two bits every two.
    let mut x = sum & PAIR;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF
}

/// The "2 or more" bits of a word's 32 two-bit counters, packed into the
/// low 32 bits: counter `i`'s high bit becomes bit `i`.
#[inline]
fn repeat_bits(word: u64) -> u64 {
    let mut x = (word >> 1) & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF
}

/// Holds the last few items so their counters can be prefetched before
/// they are used: each push returns the item pushed `DEPTH` pushes ago.
#[derive(Debug)]
pub struct DelayLine<T> {
    items: VecDeque<T>,
}

/// Items in flight: enough to overlap the memory latency with the work of
/// tokenizing the next few words.
pub const DEPTH: usize = 16;

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine { items: VecDeque::with_capacity(DEPTH + 1) }
    }
}

impl<T> DelayLine<T> {
    #[inline]
    pub fn push(&mut self, item: T) -> Option<T> {
        self.items.push_back(item);
        if self.items.len() > DEPTH { self.items.pop_front() } else { None }
    }

    /// Everything still held, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.items.drain(..)
    }
}

/// The rolling fingerprint of the last `n` word hashes.
#[derive(Debug, Clone)]
pub struct RollingFingerprint {
    n: usize,
    /// `BASE^(n−1)`, to remove the oldest word.
    top_power: u64,
    ring: Vec<u64>,
    next: usize,
    filled: usize,
    sum: u64,
}

const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

impl RollingFingerprint {
    pub fn new(n: usize) -> Self {
        assert!(n >= 1, "n-grams have at least one word");
        let top_power = (1..n).fold(1u64, |p, _| p.wrapping_mul(BASE));
        RollingFingerprint { n, top_power, ring: vec![0; n], next: 0, filled: 0, sum: 0 }
    }

    /// Forgets the window (at a document boundary or a word that cannot repeat).
    #[inline]
    pub fn reset(&mut self) {
        self.filled = 0;
        self.sum = 0;
    }

    /// Adds a word; returns the fingerprint of the n-gram it completes, if any.
    #[inline]
    pub fn push(&mut self, word_hash: u64) -> Option<u64> {
        if self.filled == self.n {
            let oldest = self.ring[self.next];
            self.sum = self.sum.wrapping_sub(oldest.wrapping_mul(self.top_power));
        } else {
            self.filled += 1;
        }
        self.sum = self.sum.wrapping_mul(BASE).wrapping_add(word_hash);
        self.ring[self.next] = word_hash;
        self.next = if self.next + 1 == self.n { 0 } else { self.next + 1 };
        (self.filled == self.n).then(|| mix(self.sum))
    }
}

/// MurmurHash3's 64-bit finaliser.
#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn fingerprints(words: &[u64], n: usize) -> Vec<u64> {
        let mut r = RollingFingerprint::new(n);
        words.iter().filter_map(|&w| r.push(w)).collect()
    }

    proptest! {
        #[test]
        fn rolling_equals_direct(words in prop::collection::vec(0u64..20, 0..60), n in 1usize..8) {
            let rolled = fingerprints(&words, n);
            let direct: Vec<u64> = words.windows(n).map(|w| fingerprints(w, n)[0]).collect();
            prop_assert_eq!(rolled, direct);
        }

        #[test]
        fn a_halved_sieve_is_the_sieve_of_half_the_size(
            fingerprints in prop::collection::vec(any::<u64>(), 0..3000),
            halvings in 1u32..4,
            words in prop_oneof![Just(8usize), Just(64), Just(2048)],
        ) {
            let mut big = Sieve::with_bytes(words * 8).unwrap();
            let small = Sieve::with_bytes((words >> halvings).max(1) * 8).unwrap();
            // Half the fingerprints before halving, half after (as the lexicon pass does).
            let (before, after) = fingerprints.split_at(fingerprints.len() / 2);
            for &f in before {
                big.insert(f);
                small.insert(f);
            }
            for _ in 0..halvings {
                prop_assert!(big.halve() || big.words % 2 == 1);
            }
            for &f in after {
                big.insert(f);
                small.insert(f);
            }
            prop_assert_eq!(big.bytes(), small.bytes());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            big.save(&mut a).unwrap();
            small.save(&mut b).unwrap();
            prop_assert_eq!(a, b);
        }

        #[test]
        fn a_cleared_sieve_is_a_new_one(first in prop::collection::vec(any::<u64>(), 1..2000), then in prop::collection::vec(any::<u64>(), 0..2000)) {
            // A sieve refilled for another part of the n-grams remembers nothing of the last part.
            let mut reused = Sieve::with_bytes(512).unwrap();
            first.iter().chain(&first).for_each(|&f| reused.insert(f));
            prop_assert!(reused.saturation() > 0.0);
            reused.clear();
            let fresh = Sieve::with_bytes(512).unwrap();
            for &f in &then {
                reused.insert(f);
                fresh.insert(f);
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            reused.save(&mut a).unwrap();
            fresh.save(&mut b).unwrap();
            prop_assert_eq!(a, b);
        }

        #[test]
        fn repeated_ngrams_always_pass(words in prop::collection::vec(0u64..6, 0..300), n in 1usize..5, kb in 0usize..3) {
            // A tiny sieve collides a lot; repeated n-grams must still all pass.
            let sieve = Sieve::with_bytes(kb * 8).unwrap();
            let fps = fingerprints(&words, n);
            for &f in &fps { sieve.insert(f); }
            let mut counts: HashMap<&[u64], usize> = HashMap::new();
            for w in words.windows(n) { *counts.entry(w).or_default() += 1; }
            for (w, f) in words.windows(n).zip(&fps) {
                if counts[w] >= 2 { prop_assert!(sieve.may_repeat(*f)); }
            }
        }
    }

    proptest! {
        #[test]
        fn a_frozen_sieve_answers_as_before(
            fingerprints in prop::collection::vec(any::<u64>(), 0..3000),
            repeats in prop::collection::vec(any::<prop::sample::Index>(), 0..200),
            words in prop_oneof![Just(1usize), Just(3), Just(8), Just(65), Just(2048)],
        ) {
            let mut sieve = Sieve::with_bytes(words * 8).unwrap();
            for &f in &fingerprints {
                sieve.insert(f);
            }
            for r in &repeats {
                if !fingerprints.is_empty() {
                    sieve.insert(fingerprints[r.index(fingerprints.len())]);
                }
            }
            let probes: Vec<u64> = fingerprints.iter().copied().chain((0..500u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))).collect();
            let before: Vec<bool> = probes.iter().map(|&f| sieve.may_repeat(f)).collect();
            let saturation = sieve.saturation();
            let frozen_bytes = sieve.frozen_bytes();
            sieve.freeze();
            prop_assert!(sieve.is_frozen());
            prop_assert_eq!(sieve.bytes(), frozen_bytes);
            prop_assert_eq!(sieve.bytes(), words.div_ceil(2) * 8);
            let after: Vec<bool> = probes.iter().map(|&f| sieve.may_repeat(f)).collect();
            prop_assert_eq!(before, after);
            prop_assert_eq!(sieve.saturation(), saturation);
            prop_assert!(!sieve.halve());
            prop_assert!(sieve.save(&mut Vec::new()).is_err());
            let mut saved = Vec::new();
            Sieve::with_bytes(words * 8).unwrap().save(&mut saved).unwrap();
            prop_assert!(Sieve::load(&mut saved.as_slice(), Some(&sieve)).is_err());
            // Cleared, it counts again at its full size.
            sieve.clear();
            prop_assert!(!sieve.is_frozen());
            prop_assert_eq!(sieve.bytes(), words * 8);
            prop_assert!(probes.iter().all(|&f| !sieve.may_repeat(f)));
        }

        #[test]
        fn sieves_of_parts_combine_like_one(words in prop::collection::vec(0u64..40, 0..200), cut in any::<prop::sample::Index>()) {
            // Counting two halves apart and combining equals counting all at once.
            let fps = fingerprints(&words, 2);
            let at = cut.index(fps.len() + 1);
            let (whole, a, b) = (Sieve::with_bytes(64).unwrap(), Sieve::with_bytes(64).unwrap(), Sieve::with_bytes(64).unwrap());
            fps.iter().for_each(|&f| whole.insert(f));
            fps[..at].iter().for_each(|&f| a.insert(f));
            fps[at..].iter().for_each(|&f| b.insert(f));
            let mut saved = Vec::new();
            b.save(&mut saved).unwrap();
            Sieve::load(&mut saved.as_slice(), Some(&a)).unwrap();
            for &f in &fps {
                prop_assert_eq!(a.may_repeat(f), whole.may_repeat(f));
            }
            let copy = Sieve::load(&mut saved.as_slice(), None).unwrap().unwrap();
            prop_assert!(fps.iter().all(|&f| copy.may_repeat(f) == b.may_repeat(f)));
            saved[30] ^= 1;
            prop_assert!(Sieve::load(&mut saved.as_slice(), None).is_err() || saved.len() <= 30);
        }
    }

    #[test]
    fn delay_line_returns_items_in_order() {
        let mut line = DelayLine::default();
        let mut out: Vec<usize> = (0..40).filter_map(|i| line.push(i)).collect();
        out.extend(line.drain());
        assert_eq!(out, (0..40).collect::<Vec<_>>());
        let sieve = Sieve::with_bytes(4096).unwrap();
        let slot = sieve.locate(12345);
        sieve.prefetch(slot);
        sieve.insert_at(slot);
        assert!(!sieve.may_repeat_at(slot));
        sieve.insert_at(slot);
        assert!(sieve.may_repeat_at(slot));
    }

    #[test]
    fn a_roomy_sieve_drops_most_uniques() {
        let sieve = Sieve::with_bytes(1 << 20).unwrap();
        let words: Vec<u64> = (0..100_000u64).map(|i| i.wrapping_mul(0x2545_F491_4F6C_DD1D)).collect();
        let fps = fingerprints(&words, 3);
        for &f in &fps {
            sieve.insert(f);
        }
        let passed = fps.iter().filter(|&&f| sieve.may_repeat(f)).count();
        // 100k n-grams in 4M counters: about 2.4 % collide.
        assert!(passed < 5_000, "{passed} unique n-grams passed");
        assert!(sieve.saturation() < 0.01);
        let mut odd = Sieve::with_bytes(24).unwrap();
        assert!(!odd.halve(), "three words cannot be halved");
        assert_eq!(odd.bytes(), 24);
        let reset = {
            let mut r = RollingFingerprint::new(2);
            r.push(1);
            r.reset();
            r.push(2)
        };
        assert_eq!(reset, None);
    }
}
