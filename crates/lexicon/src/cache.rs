//! A worker thread's cache in front of a shared [`LexiconBuilder`].
//!
//! The lexicon pass has one builder for the whole corpus, behind a lock,
//! and a token costs a look-up in its table. Most tokens are a few thousand
//! frequent words, so each worker keeps a small direct-mapped table of the
//! words it met last, with their first-seen IDs and the occurrences it has
//! counted and not yet handed to the builder: a token found there costs no
//! lock and no look-up in the large table. A word displaced from its slot,
//! and every word at [`WordCache::flush`], brings its occurrences to the
//! builder, so the builder's counts are exact once every worker has flushed.

use crate::lexicon::{LexiconBuilder, Seen};

/// Longest word a slot holds; longer ones always go to the builder. Fifteen
/// bytes make a slot 32, two to a cache line, so one line is asked for
/// per look-up where a 40-byte slot needed two; the words of 16 to 19
/// bytes it held besides are about 0.15 % of the Reddit comments' tokens.
const MAX_CACHED_BYTES: usize = 15;

/// First-seen ID of a stop word (the builder gives it none).
const STOP: u32 = u32::MAX;
/// First-seen ID of a word the frozen builder does not hold: its
/// occurrences are counted elsewhere, so its slot never holds any.
const OVERFLOW: u32 = u32::MAX - 1;

/// 32 bytes, aligned to 32: a slot lies on one cache line, which
/// [`WordCache::prefetch`] names by its first byte.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    hash: u64,
    /// Occurrences counted here, not yet in the builder; at `u32::MAX` the
    /// next one is a [`WordCache::miss`], which hands them over.
    pending: u32,
    id: u32,
    /// The word's length; 0 for an empty slot (no token is empty).
    len: u8,
    bytes: [u8; MAX_CACHED_BYTES],
}

// `WordCache::prefetch` names a slot by its first byte: it must lie on one cache line.
const _: () = assert!(std::mem::size_of::<Slot>() == 32 && std::mem::align_of::<Slot>() == 32);

/// See the module documentation.
pub struct WordCache {
    slots: Box<[Slot]>,
    mask: usize,
}

impl WordCache {
    /// Bytes one slot takes.
    pub const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

    /// A cache of `slots` slots (rounded down to a power of two, at least one).
    pub fn new(slots: usize) -> Self {
        let slots = if slots <= 1 { 1 } else { 1 << slots.ilog2() };
        WordCache { slots: vec![Slot::default(); slots].into_boxed_slice(), mask: slots - 1 }
    }

    /// Bytes the cache holds.
    pub fn heap_bytes(&self) -> usize {
        self.slots.len() * Self::SLOT_BYTES
    }

    /// Starts loading the slot a word of this hash would take, for a
    /// [`Self::hit`] some words later: the slots of a large cache are
    /// rarely in the processor's cache, and a worker knows the hashes of
    /// a whole buffer of words before it counts them.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let slot = &self.slots[hash as usize & self.mask];
        dupgram_prefetch::prefetch(slot);
    }

    /// The hash of the word whose occurrences a [`Self::miss`] of a word of
    /// this hash would hand to the builder (the one in its slot), if any:
    /// that hand-over is a look-up in the builder's table too.
    #[inline]
    pub fn displaced(&self, hash: u64) -> Option<u64> {
        let slot = &self.slots[hash as usize & self.mask];
        (slot.pending > 0).then_some(slot.hash)
    }

    /// Counts one occurrence of a word if the cache holds it, and returns
    /// what it is (a word of the overflow is not counted here); `None` when
    /// the word is not here, and [`Self::miss`] must count it.
    #[inline]
    pub fn hit(&mut self, bytes: &[u8], hash: u64) -> Option<Seen> {
        let slot = &mut self.slots[hash as usize & self.mask];
        if slot.hash != hash || usize::from(slot.len) != bytes.len() || !same_bytes(&slot.bytes, bytes) {
            return None;
        }
        if slot.id == OVERFLOW {
            return Some(Seen::Overflow);
        }
        // A full count goes to the builder through a miss.
        slot.pending = slot.pending.checked_add(1)?;
        Some(if slot.id == STOP { Seen::Stop } else { Seen::Word(slot.id) })
    }

    /// Counts one occurrence of a word the cache does not hold in the
    /// builder (locked by the caller), as
    /// [`LexiconBuilder::add_first_seen`] does, and keeps the word in its
    /// slot, whose former word's occurrences go to the builder first. A
    /// word the (frozen) builder does not hold is kept as such: its
    /// occurrences are counted elsewhere, and its next one costs no lock.
    pub fn miss(&mut self, builder: &mut LexiconBuilder, bytes: &[u8], hash: u64) -> Seen {
        let seen = builder.add_first_seen(bytes, hash);
        let id = match seen {
            Seen::Word(id) => id,
            Seen::Stop => STOP,
            Seen::Overflow => OVERFLOW,
        };
        if bytes.len() <= MAX_CACHED_BYTES {
            let slot = &mut self.slots[hash as usize & self.mask];
            Self::hand_over(slot, builder);
            *slot = Slot { hash, pending: 0, id, len: bytes.len() as u8, bytes: [0; MAX_CACHED_BYTES] };
            slot.bytes[..bytes.len()].copy_from_slice(bytes);
        }
        seen
    }

    /// Hands every occurrence counted here to the builder.
    pub fn flush(&mut self, builder: &mut LexiconBuilder) {
        for slot in self.slots.iter_mut() {
            Self::hand_over(slot, builder);
        }
    }

    fn hand_over(slot: &mut Slot, builder: &mut LexiconBuilder) {
        debug_assert!(slot.id != OVERFLOW || slot.pending == 0, "a word of the overflow is counted elsewhere");
        if slot.pending > 0 {
            builder.add_counted_hashed(&slot.bytes[..usize::from(slot.len)], slot.hash, u64::from(slot.pending));
            slot.pending = 0;
        }
    }
}

/// Whether a slot's (zero-padded) bytes hold `bytes`, which is no longer
/// than the slot: the common short word in two 8-byte values, not a call.
#[inline]
fn same_bytes(slot: &[u8; MAX_CACHED_BYTES], bytes: &[u8]) -> bool {
    if bytes.len() <= 8 {
        let mut held = [0u8; 8];
        held.copy_from_slice(&slot[..8]);
        // Slot bytes past the word's length are zero, so whole words compare.
        return padded_word(bytes) == u64::from_le_bytes(held);
    }
    slot[..bytes.len()] == *bytes
}

/// `bytes` (at most 8) as the little-endian `u64` of their zero-padded
/// copy, from loads of the slice itself: copying a word of variable length
/// into a buffer and loading the buffer whole calls `memcpy`, and the load
/// then waits for the small stores to land (no store forwarding), which
/// was the slowest instruction of a worker's hand-over on short words.
/// Of 4 to 8 bytes, the first four and the last four (overlapping where
/// fewer than 8) each go to their place; of 1 to 3, the first, the middle
/// and the last byte do.
#[inline]
fn padded_word(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    debug_assert!(len <= 8);
    if len >= 4 {
        let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64;
        let last = u32::from_le_bytes([bytes[len - 4], bytes[len - 3], bytes[len - 2], bytes[len - 1]]) as u64;
        first | last << ((len - 4) * 8)
    } else if len > 0 {
        bytes[0] as u64 | (bytes[len / 2] as u64) << (len / 2 * 8) | (bytes[len - 1] as u64) << ((len - 1) * 8)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::word_hash;

    #[test]
    fn a_padded_word_is_the_zero_padded_copy_of_its_bytes() {
        let bytes: Vec<u8> = (1..=8u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for len in 0..=8 {
            let mut copy = [0u8; 8];
            copy[..len].copy_from_slice(&bytes[..len]);
            assert_eq!(padded_word(&bytes[..len]), u64::from_le_bytes(copy), "{len} bytes");
        }
    }

    /// Counts `words` through a cache of `slots` slots, as a worker does.
    fn counted(words: &[&str], slots: usize) -> (LexiconBuilder, Vec<Seen>) {
        let mut builder = LexiconBuilder::new(["stop".to_string()]);
        let mut cache = WordCache::new(slots);
        let mut ids = Vec::new();
        for w in words {
            let (bytes, hash) = (w.as_bytes(), word_hash(w.as_bytes()));
            ids.push(match cache.hit(bytes, hash) {
                Some(seen) => seen,
                None => cache.miss(&mut builder, bytes, hash),
            });
        }
        cache.flush(&mut builder);
        (builder, ids)
    }

    #[test]
    fn displaced_names_the_word_a_miss_would_hand_over() {
        let mut builder = LexiconBuilder::new([]);
        let mut cache = WordCache::new(1);
        let (cat, dog) = (word_hash(b"cat"), word_hash(b"dog"));
        // An empty slot, then a word counted in the builder (nothing pending).
        assert_eq!(cache.displaced(dog), None);
        cache.miss(&mut builder, b"cat", cat);
        assert_eq!(cache.displaced(dog), None);
        cache.prefetch(dog);
        // Once the slot counts occurrences of its own, a miss hands them over.
        assert!(cache.hit(b"cat", cat).is_some());
        assert_eq!(cache.displaced(dog), Some(cat));
        cache.miss(&mut builder, b"dog", dog);
        assert_eq!(cache.displaced(cat), None);
        cache.flush(&mut builder);
        assert_eq!(builder.tokens(), 3);
    }

    /// A slot whose count is full hands it over at the next occurrence, and counts on.
    #[test]
    fn a_full_count_goes_to_the_builder() {
        let mut builder = LexiconBuilder::new([]);
        let mut cache = WordCache::new(1);
        let the = word_hash(b"the");
        assert_eq!(cache.miss(&mut builder, b"the", the), Seen::Word(0));
        cache.slots[0].pending = u32::MAX - 1;
        assert_eq!(cache.hit(b"the", the), Some(Seen::Word(0)));
        assert_eq!(cache.hit(b"the", the), None, "the count is full");
        assert_eq!(cache.miss(&mut builder, b"the", the), Seen::Word(0));
        assert_eq!(cache.hit(b"the", the), Some(Seen::Word(0)));
        cache.flush(&mut builder);
        let lexicon = builder.finish(crate::Normalization::default(), 0);
        assert_eq!(lexicon.count(0), 1 + u64::from(u32::MAX) + 1 + 1);
    }

    #[test]
    fn counts_and_ids_equal_the_builder_alone() {
        let long = "a-word-longer-than-a-slot-holds";
        let text = format!("the cat stop the {long} dog the cat stop {long} a b c d e f g h the");
        let words: Vec<&str> = text.split(' ').collect();
        let mut alone = LexiconBuilder::new(["stop".to_string()]);
        let expected: Vec<Seen> =
            words.iter().map(|w| alone.add_first_seen(w.as_bytes(), word_hash(w.as_bytes()))).collect();
        let mut expected_file = Vec::new();
        let norm = crate::Normalization::default();
        alone.write_to(norm, 0, &mut expected_file).unwrap();
        // One slot: every other word displaces the last; 64 slots: few collide.
        for slots in [1, 2, 64] {
            let (builder, ids) = counted(&words, slots);
            assert_eq!(ids, expected, "{slots} slots");
            assert_eq!(builder.tokens(), words.len() as u64);
            let mut file = Vec::new();
            builder.write_to(norm, 0, &mut file).unwrap();
            assert_eq!(file, expected_file, "{slots} slots");
        }
    }
}
