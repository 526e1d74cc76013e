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
//! a counter and gives the other half of its memory back.
//!
//! ## A staged sieve
//!
//! A sieve filled while nothing else needs the memory (from the word
//! streams, after the lexicon pass) is made [`Filling::Staged`] instead:
//! two Bloom filters, "seen" (seven tenths of the memory) and "seen twice"
//! (three tenths). A fingerprint sets three bits of one 64-bit word of
//! "seen" with one atomic `fetch_or`; if all three were set already it
//! sets four bits of one word of "seen twice". A repeated n-gram always
//! ends in "seen twice" (the later of its insertions finds its "seen" bits
//! set), and a unique one only when its "seen" bits were all set by others
//! or its "seen twice" bits are. Once filled, "seen" is dropped: the count
//! holds three tenths of the memory instead of half. At a billion tokens
//! (780M distinct 10-grams in 679 MiB) counters let about a quarter of the
//! unique n-grams through (2.85G counters: `1 − e^(−0.27)`) and a staged
//! sieve about 4 % (measured: 25M of 647M), so one part does what took two
//! ([`Filling::capacity`]). One word a filter keeps an insertion at one
//! cache line a filter, like a counter, and "seen twice" is loaded only for
//! the fingerprints found seen ([`Sieve::insert_delayed`]). What it costs:
//! a staged sieve cannot be saved or added up from shards (every shard
//! would need the others' "seen"), so Slurm tasks keep counters. The
//! lexicon pass keeps them too: its sieve is halved while it fills, which
//! counters do exactly, and a staged sieve there has not been measured.
//!
//! Fingerprints roll: a polynomial over the words' 64-bit hashes modulo 2⁶⁴,
//! updated in O(1) per token and finished with the MurmurHash3 mixer so the
//! counter index uses well-spread bits.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// The smallest table advised to use huge pages (32 MiB).
///
/// A huge page is 2 MiB made resident at the first touch of any byte of it,
/// and where it lands depends on where the map is placed, which changes
/// from run to run. At the 16M minimum (sieves of a few MiB) that moved the
/// peak RSS of the same `dedup` job by 2 MiB between runs, and over the
/// budget in 2 runs of 16: 14.1–16.4 MB with the advice, 13.0–14.1 MB
/// without. A sieve of 32 MiB comes with a budget of about 72M or more,
/// whose slack (over 3 MiB) covers a huge page; and below 64 MiB the pages
/// still pay: Gutenberg at `--memory 96M` (a 43 MiB sieve) took 31.9 s with
/// them and 33.9 s without.
pub const HUGE_PAGES_FROM: usize = 32 << 20;

/// First eight bytes of a saved sieve.
pub const SIEVE_MAGIC: &[u8; 8] = b"DGSIEVE\0";
/// The sieve file format this build writes and reads.
pub const SIEVE_VERSION: u16 = 1;

/// Counters per 64-bit word.
const SLOTS_PER_WORD: u64 = 32;
/// Counters per byte of a sieve: two bits each.
pub const COUNTERS_PER_BYTE: u64 = SLOTS_PER_WORD / 8;

/// Bits a fingerprint sets in a word of a staged sieve's "seen" filter.
const SEEN_BITS: u32 = 3;
/// Bits a fingerprint sets in a word of a staged sieve's "seen twice" filter.
const REPEAT_BITS: u32 = 4;
/// Tenths of a staged sieve that are its "seen twice" filter (what it keeps once frozen).
const REPEAT_TENTHS: usize = 3;
/// Distinct n-grams a sieve is planned to take, per byte: 1.6, one for
/// every five bits. Two-bit counters then let about a third of the unique
/// n-grams through (`1 − e^(−0.4)`); a staged sieve, by the Bloom filters'
/// formulas with a fifth of the n-grams repeated, about an eighth (an
/// estimate: measured only at 1.1 distinct n-grams a byte, where 4 % of the
/// unique ones got through).
const NGRAMS_PER_FIVE_BYTES: u64 = 8;

/// How a sieve records what it has seen while it is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filling {
    /// One two-bit saturating counter a fingerprint: 0, 1, "2 or more".
    /// Sieves of counters can be halved, saved, and added up across tasks.
    Counters,
    /// Two Bloom filters of one 64-bit word a fingerprint: "seen" and
    /// "seen twice" (three tenths of the memory). Far fewer unique
    /// n-grams get through than with counters in the same memory, and
    /// once filled only "seen twice" is kept. It cannot be saved or added
    /// up: a corpus read in shards would need "seen" in every shard.
    Staged,
}

impl Filling {
    /// Distinct n-grams a sieve of this kind and `bytes` is planned to take.
    ///
    /// The same for both kinds, on purpose: a staged sieve lets fewer unique
    /// n-grams through at this load, so it could be planned to take more, but
    /// its leak is measured at one load only (see `NGRAMS_PER_FIVE_BYTES`); so
    /// it is planned no fuller than counters, and what it gains shows as
    /// fewer n-grams sorted, not as fewer parts.
    ///
    /// Counted in whole 64-bit words, as [`Sieve::new`] makes them, so the
    /// capacity of the bytes asked for is the capacity of the sieve made.
    pub fn capacity(self, bytes: u64) -> u64 {
        (bytes / 8 * 8).saturating_mul(NGRAMS_PER_FIVE_BYTES) / 5
    }

    /// The bytes (whole words) of a sieve of this kind planned to take
    /// `ngrams` distinct n-grams: the inverse of [`capacity`](Self::capacity).
    pub fn bytes_for(self, ngrams: u64) -> u64 {
        ngrams.saturating_mul(5).div_ceil(NGRAMS_PER_FIVE_BYTES).div_ceil(8).saturating_mul(8)
    }
}

/// What the table holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Two-bit counters, being filled.
    Counters,
    /// One bit a counter, "2 or more" ([`Sieve::freeze`] of counters).
    RepeatBits,
    /// "Seen twice" in the first `repeat_words` words, "seen" in the rest, being filled.
    Staged,
    /// "Seen twice" only ([`Sieve::freeze`] of a staged sieve).
    Repeats,
}

impl Table {
    fn frozen(self) -> bool {
        matches!(self, Table::RepeatBits | Table::Repeats)
    }

    fn filling(self) -> Filling {
        match self {
            Table::Counters | Table::RepeatBits => Filling::Counters,
            Table::Staged | Table::Repeats => Filling::Staged,
        }
    }
}

/// A sieve of n-gram fingerprints, safe to fill from several threads.
///
/// Filling is order-independent: a fingerprint inserted twice ends as
/// "may repeat" however the threads interleave. Its two kinds of table
/// ([`Filling`]) both keep that promise the same way: "seen" is set with
/// one atomic `fetch_or` on one word, so of two insertions of the same
/// fingerprint the later one always finds it set, and sets "seen twice".
///
/// The table is an anonymous memory map, advised to use huge pages when it
/// is large ([`HUGE_PAGES_FROM`]): every access is a random one into tens or
/// hundreds of megabytes, and with 4 KiB pages nearly each would also miss
/// the TLB. Callers that can wait a few n-grams for an answer
/// [`prefetch`](Self::prefetch) the counter first (see [`DelayLine`]), so
/// several cache misses are in flight at once.
pub struct Sieve {
    /// Keeps the mapping alive; all access goes through `cells`.
    _map: memmap2::MmapMut,
    cells: *const AtomicU64,
    /// Words of the table as it is now (fewer once frozen).
    words: usize,
    /// Words of the table as it is filled: the whole map.
    filling_words: usize,
    /// Two-bit counters in the table as it is filled (counters only).
    slots: u64,
    /// Words of the "seen twice" filter, at the start of the map (staged only).
    repeat_words: usize,
    table: Table,
}

// SAFETY: `cells` points into `_map`, which the Sieve owns and never moves or
// unmaps before drop; the memory is only ever accessed through atomics, so
// sharing and sending the Sieve between threads is as safe as for a
// `Vec<AtomicU64>`.
unsafe impl Send for Sieve {}
unsafe impl Sync for Sieve {}

/// Where a fingerprint is recorded: the bits `bits` of word `word` mean
/// "seen", the bits `repeat_bits` of word `repeat_word` "seen twice" (the
/// same word, the counter's high bit, for counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    word: usize,
    bits: u64,
    repeat_word: usize,
    repeat_bits: u64,
}

impl Sieve {
    /// A sieve of two-bit counters of about `bytes` bytes (at least one word), zeroed.
    pub fn with_bytes(bytes: usize) -> std::io::Result<Sieve> {
        Sieve::new(Filling::Counters, bytes)
    }

    /// A sieve of `filling` and about `bytes` bytes (at least a word a
    /// table), zeroed.
    pub fn new(filling: Filling, bytes: usize) -> std::io::Result<Sieve> {
        let min_words = if filling == Filling::Staged { 2 } else { 1 };
        let words = (bytes / 8).max(min_words);
        let mut map = memmap2::MmapMut::map_anon(words * 8)?;
        #[cfg(target_os = "linux")]
        if words * 8 >= HUGE_PAGES_FROM {
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        // A raw pointer taken from the exclusive borrow, so writing through it
        // (as atomics) never goes through a shared `&[u8]`.
        let cells = map.as_mut_ptr() as *const AtomicU64;
        let (table, repeat_words) = match filling {
            Filling::Counters => (Table::Counters, 0),
            // An even share when it can be, so the sieve halves ([`Sieve::halve`]).
            Filling::Staged => (Table::Staged, ((words * REPEAT_TENTHS / 10) & !1).clamp(1, words - 1)),
        };
        Ok(Sieve {
            _map: map,
            cells,
            words,
            filling_words: words,
            slots: words as u64 * SLOTS_PER_WORD,
            repeat_words,
            table,
        })
    }

    #[inline]
    fn cells(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so aligned for u64), holds
        // exactly `filling_words` ≥ `words` u64s, lives as long as `self`,
        // and all-zero or any other bits are valid u64s. AtomicU64 has the
        // layout of u64.
        unsafe { std::slice::from_raw_parts(self.cells, self.words) }
    }

    /// A table of "seen twice" words only, about `bytes` bytes, zeroed:
    /// the fingerprints known to repeat are marked in it ([`mark_delayed`](Self::mark_delayed))
    /// one by one (a count in parts proves them out of core first), and it
    /// is asked as a frozen staged sieve is. A fingerprint sets four bits
    /// of one word; at [`Sieve::marked_capacity`] (eight bits a print)
    /// about 3 % of the fingerprints never marked are answered "may repeat".
    pub fn marked(bytes: usize) -> std::io::Result<Sieve> {
        let mut sieve = Sieve::new(Filling::Staged, bytes)?;
        sieve.repeat_words = sieve.filling_words;
        sieve.table = Table::Repeats;
        Ok(sieve)
    }

    /// Fingerprints a [`marked`](Self::marked) table of `bytes` bytes is planned to take.
    pub fn marked_capacity(bytes: u64) -> u64 {
        bytes
    }

    /// Records that the n-gram of this fingerprint may repeat (a
    /// [`marked`](Self::marked) table); the one pushed [`DEPTH`] marks ago
    /// is set now, its word prefetched meanwhile. Whoever stops marking
    /// [`flush_marks`](Self::flush_marks) `line`.
    #[inline]
    pub fn mark_delayed(&self, line: &mut DelayLine<Slot>, fingerprint: u64) {
        debug_assert!(self.table == Table::Repeats && self.repeat_words == self.filling_words);
        let slot = self.locate(fingerprint);
        self.prefetch_word(slot.repeat_word);
        if let Some(ready) = line.push(slot) {
            self.mark_repeat(ready);
        }
    }

    /// Sets every mark still held in `line`.
    pub fn flush_marks(&self, line: &mut DelayLine<Slot>) {
        for slot in line.drain() {
            self.mark_repeat(slot);
        }
    }

    /// How the sieve is filled.
    pub fn filling(&self) -> Filling {
        self.table.filling()
    }

    /// Bytes the table holds now (less once frozen).
    pub fn bytes(&self) -> usize {
        self.words * 8
    }

    /// Bytes the table will hold once [`freeze`](Self::freeze)d.
    pub fn frozen_bytes(&self) -> usize {
        match self.table.filling() {
            Filling::Counters => self.filling_words.div_ceil(2) * 8,
            Filling::Staged => self.repeat_words * 8,
        }
    }

    /// Distinct n-grams the sieve is planned to take ([`Filling::capacity`]).
    pub fn capacity(&self) -> u64 {
        self.filling().capacity(self.filling_words as u64 * 8)
    }

    /// Whether the sieve is only asked now ([`freeze`](Self::freeze)).
    pub fn is_frozen(&self) -> bool {
        self.table.frozen()
    }

    /// The counters of a sieve of counters.
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Where a fingerprint is recorded.
    #[inline]
    pub fn locate(&self, fingerprint: u64) -> Slot {
        match self.table {
            Table::Counters => {
                let slot = scale(fingerprint, self.slots);
                let (word, shift) = ((slot / SLOTS_PER_WORD) as usize, ((slot % SLOTS_PER_WORD) * 2) as u32);
                Slot { word, bits: 1 << shift, repeat_word: word, repeat_bits: 2 << shift }
            }
            Table::RepeatBits => {
                let slot = scale(fingerprint, self.slots);
                let (word, bit) = ((slot / 64) as usize, 1 << (slot % 64));
                Slot { word, bits: bit, repeat_word: word, repeat_bits: bit }
            }
            Table::Staged | Table::Repeats => {
                // The two filters take their words from different hashes: a
                // fingerprint's "seen" word says nothing of its "seen twice" word.
                let second = mix(fingerprint ^ BASE);
                let repeat_word = scale(second, self.repeat_words as u64) as usize;
                let repeat_bits = bits_of(second, REPEAT_BITS);
                if self.table == Table::Repeats {
                    return Slot { word: repeat_word, bits: repeat_bits, repeat_word, repeat_bits };
                }
                let seen_words = (self.filling_words - self.repeat_words) as u64;
                let word = self.repeat_words + scale(fingerprint, seen_words) as usize;
                Slot { word, bits: bits_of(fingerprint, SEEN_BITS), repeat_word, repeat_bits }
            }
        }
    }

    /// Starts loading the cache line [`may_repeat_at`](Self::may_repeat_at)
    /// reads; a hint only.
    #[inline]
    pub fn prefetch(&self, slot: Slot) {
        self.prefetch_word(slot.repeat_word);
    }

    #[inline]
    fn prefetch_word(&self, word: usize) {
        dupgram_prefetch::prefetch(&self.cells()[word]);
    }

    /// Records one occurrence at a slot (of a sieve not [`freeze`](Self::freeze)d).
    #[inline]
    pub fn insert_at(&self, slot: Slot) {
        if self.see(slot) {
            self.mark_repeat(slot);
        }
    }

    /// Sets a slot's "seen" bits; whether they were all set already.
    #[inline]
    fn see(&self, slot: Slot) -> bool {
        debug_assert!(!self.table.frozen(), "a frozen sieve counts nothing more");
        let seen = &self.cells()[slot.word];
        // A plain load first: a fingerprint seen before needs no locked write.
        seen.load(Ordering::Relaxed) & slot.bits == slot.bits
            || seen.fetch_or(slot.bits, Ordering::Relaxed) & slot.bits == slot.bits
    }

    /// Sets a slot's "seen twice" bits.
    #[inline]
    fn mark_repeat(&self, slot: Slot) {
        let repeat = &self.cells()[slot.repeat_word];
        if repeat.load(Ordering::Relaxed) & slot.repeat_bits != slot.repeat_bits {
            repeat.fetch_or(slot.repeat_bits, Ordering::Relaxed);
        }
    }

    /// Prefetches the slot of `fingerprint` and fills the one prefetched
    /// [`DEPTH`] n-grams ago: several cache misses in flight instead of one.
    /// A staged sieve's "seen twice" word, in another cache line, is
    /// prefetched only for the slots found seen, and marked [`DEPTH`] of
    /// those later. Whoever stops pushing [`flush`](Self::flush)es `line`.
    #[inline]
    pub fn insert_delayed(&self, line: &mut InsertLine, fingerprint: u64) {
        let slot = self.locate(fingerprint);
        self.prefetch_word(slot.word);
        let Some(ready) = line.seen.push(slot) else { return };
        if !self.see(ready) {
            return;
        }
        line.again += 1;
        if ready.repeat_word == ready.word {
            // A counter: its high bit is in the line just loaded.
            self.mark_repeat(ready);
        } else {
            self.prefetch_word(ready.repeat_word);
            if let Some(repeat) = line.repeats.push(ready) {
                self.mark_repeat(repeat);
            }
        }
    }

    /// Finishes every insertion still held in `line`.
    pub fn flush(&self, line: &mut InsertLine) {
        for slot in line.seen.drain() {
            if self.see(slot) {
                line.again += 1;
                self.mark_repeat(slot);
            }
        }
        for slot in line.repeats.drain() {
            self.mark_repeat(slot);
        }
    }

    /// False only if every n-gram recorded at this slot occurs at most once.
    #[inline]
    pub fn may_repeat_at(&self, slot: Slot) -> bool {
        self.cells()[slot.repeat_word].load(Ordering::Relaxed) & slot.repeat_bits == slot.repeat_bits
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
        debug_assert!(self.table == Table::Counters, "only counters add up");
        const SEEN: u64 = 0x5555_5555_5555_5555;
        for (cell, &other) in self.cells()[first_word..].iter().zip(words) {
            let mine = cell.load(Ordering::Relaxed);
            let twice = (mine | other) & !SEEN | (((mine & other) & SEEN) << 1);
            cell.store((mine | other) & SEEN | twice, Ordering::Relaxed);
        }
    }

    /// Writes the sieve: magic, format version, word count, the words
    /// (little-endian) and a CRC-32 of them. Only a sieve of counters being
    /// filled can be saved: the format holds counters, which tasks add up.
    pub fn save<W: Write + ?Sized>(&self, out: &mut W) -> std::io::Result<()> {
        match self.table {
            Table::Counters => {}
            Table::Staged => return Err(std::io::Error::other("a staged sieve cannot be saved")),
            Table::RepeatBits | Table::Repeats => return Err(std::io::Error::other("a frozen sieve cannot be saved")),
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
        match into.map(|s| s.table) {
            Some(Table::RepeatBits | Table::Repeats) => return Err(bad("a frozen sieve counts nothing more")),
            Some(Table::Staged) => return Err(bad("counters cannot be added to a staged sieve")),
            _ => {}
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

    /// Halves the sieve in place, keeping every promise it made, because
    /// [`locate`](Self::locate) maps a fingerprint to `⌊hash × size / 2⁶⁴⌋`
    /// and halving the size halves that index. Counter `i` of the half-size
    /// sieve of counters is the saturating sum of counters `2i` and `2i + 1`:
    /// exactly what filling a sieve of half the size would have given. Word
    /// `i` of a half-size staged filter is words `2i` and `2i + 1` ORed (a
    /// fingerprint's bits within its word do not depend on the size): "seen"
    /// as a half-size sieve would have it, "seen twice" without the unique
    /// n-grams the smaller "seen" would have let in. The freed upper half
    /// goes back to the system. False (and
    /// nothing changes) when a table has an odd number of words or the
    /// sieve is frozen.
    pub fn halve(&mut self) -> bool {
        match self.table {
            Table::Counters => self.halve_counters(),
            Table::Staged => self.halve_staged(),
            Table::RepeatBits | Table::Repeats => false,
        }
    }

    fn halve_counters(&mut self) -> bool {
        if self.words < 2 || !self.words.is_multiple_of(2) {
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
        self.filling_words = half;
        self.slots = half as u64 * SLOTS_PER_WORD;
        self.release_beyond(half * 8);
        true
    }

    fn halve_staged(&mut self) -> bool {
        let (repeat, seen) = (self.repeat_words, self.filling_words - self.repeat_words);
        if !repeat.is_multiple_of(2) || !seen.is_multiple_of(2) {
            return false;
        }
        let cells = self.cells();
        let or_pair = |at: usize| cells[at].load(Ordering::Relaxed) | cells[at + 1].load(Ordering::Relaxed);
        // Each word is written after the words it is made of (all at or
        // beyond it) are read, and the "seen twice" words are all read
        // before the "seen" filter moves down over them.
        for (j, cell) in cells[..repeat / 2].iter().enumerate() {
            cell.store(or_pair(2 * j), Ordering::Relaxed);
        }
        for (j, cell) in cells[repeat / 2..(repeat + seen) / 2].iter().enumerate() {
            cell.store(or_pair(repeat + 2 * j), Ordering::Relaxed);
        }
        self.repeat_words = repeat / 2;
        self.filling_words = (repeat + seen) / 2;
        self.words = self.filling_words;
        self.release_beyond(self.words * 8);
        true
    }

    /// Keeps only what a filled sieve is asked, "seen twice", and gives the
    /// rest of its memory back to the system. Counters are packed into one
    /// bit a counter, set where the counter reached 2; a staged sieve drops
    /// its "seen" filter. A frozen sieve answers
    /// [`may_repeat`](Self::may_repeat) exactly as before (a fingerprint
    /// keeps its counter or words, only where the bits are kept changes)
    /// and counts nothing more until [`clear`](Self::clear)ed.
    pub fn freeze(&mut self) {
        match self.table {
            Table::Counters => self.pack_repeat_bits(),
            Table::Staged => {
                self.words = self.repeat_words;
                self.table = Table::Repeats;
                self.release_beyond(self.words * 8);
            }
            Table::RepeatBits | Table::Repeats => {}
        }
    }

    fn pack_repeat_bits(&mut self) {
        let (counting, packed) = (self.filling_words, self.filling_words.div_ceil(2));
        let cells = self.cells();
        // Word `j` is written after words `2j` and `2j + 1` (both ≥ j) are read.
        for j in 0..packed {
            let low = repeat_bits(cells[2 * j].load(Ordering::Relaxed));
            let high = if 2 * j + 1 < counting { repeat_bits(cells[2 * j + 1].load(Ordering::Relaxed)) } else { 0 };
            cells[j].store(low | high << 32, Ordering::Relaxed);
        }
        self.words = packed;
        self.table = Table::RepeatBits;
        self.release_beyond(packed * 8);
    }

    /// Zeroes the table, to fill the sieve afresh (for another part of the
    /// n-grams): cheaper than unmapping and mapping it again, and the
    /// memory it holds stays what the plan counted. A frozen sieve is
    /// filled again at its full size.
    pub fn clear(&mut self) {
        self.words = self.filling_words;
        self.table = match self.table.filling() {
            Filling::Counters => Table::Counters,
            // A marked table is all "seen twice".
            Filling::Staged if self.repeat_words == self.filling_words => Table::Repeats,
            Filling::Staged => Table::Staged,
        };
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

    /// How many of the n-grams inserted into this sieve of counters it lets
    /// through once frozen, when `again` of the insertions found their
    /// counter seen already ([`InsertLine::again`], added up over the lines
    /// that filled it): a counter at "2 or more" took one first insertion
    /// and every later one found it seen, and a counter at one let nothing
    /// through, so the n-grams let through are `again` plus the counters at
    /// "2 or more". `None` for other tables. Exact for a sieve filled
    /// through insert lines alone, never halved; a plan's estimate otherwise.
    pub fn passing(&self, again: u64) -> Option<u64> {
        (self.table == Table::Counters).then(|| again + self.counters_seen_twice())
    }

    /// A sieve of counters' counters at "2 or more" (their high bits).
    fn counters_seen_twice(&self) -> u64 {
        const TWICE: u64 = 0xAAAA_AAAA_AAAA_AAAA;
        self.cells().iter().map(|w| u64::from((w.load(Ordering::Relaxed) & TWICE).count_ones())).sum()
    }

    /// The chance that a fingerprint never inserted is answered "may
    /// repeat": the share of counters at "2 or more", or of a staged
    /// sieve's "seen twice" words' bits, to the power of the bits it asks.
    pub fn saturation(&self) -> f64 {
        let cells = self.cells();
        let ones = |w: &AtomicU64, mask: u64| f64::from((w.load(Ordering::Relaxed) & mask).count_ones());
        match self.table {
            Table::Counters => self.counters_seen_twice() as f64 / self.slots as f64,
            Table::RepeatBits => cells.iter().map(|w| ones(w, u64::MAX)).sum::<f64>() / self.slots as f64,
            Table::Staged | Table::Repeats => {
                let repeats = &cells[..self.repeat_words];
                let chance = |w: &AtomicU64| (ones(w, u64::MAX) / 64.0).powi(REPEAT_BITS as i32);
                repeats.iter().map(chance).sum::<f64>() / repeats.len() as f64
            }
        }
    }
}

/// `⌊hash × size / 2⁶⁴⌋`: an index below `size` from the hash's high bits,
/// which halves when `size` does.
#[inline]
fn scale(hash: u64, size: u64) -> u64 {
    ((u128::from(hash) * u128::from(size)) >> 64) as u64
}

/// `k` bit positions within a word, six low bits of `hash` each (the high
/// bits chose the word). Two may coincide, as in any Bloom filter.
#[inline]
fn bits_of(hash: u64, k: u32) -> u64 {
    (0..k).fold(0, |bits, i| bits | 1 << ((hash >> (6 * i)) & 63))
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

/// The insertions [`Sieve::insert_delayed`] holds while their cache lines load.
#[derive(Debug, Default)]
pub struct InsertLine {
    /// Slots whose "seen" word is being prefetched.
    seen: DelayLine<Slot>,
    /// Slots found seen, whose "seen twice" word is being prefetched.
    repeats: DelayLine<Slot>,
    /// Insertions through this line that found their slot seen already.
    again: u64,
}

impl InsertLine {
    /// Insertions through this line (those [`Sieve::flush`]ed included)
    /// that found their slot seen already: see [`Sieve::passing`].
    pub fn again(&self) -> u64 {
        self.again
    }
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

/// A sieve fingerprint of an n-gram from its packed key (the words of an
/// injective packing of its IDs): equal n-grams have equal keys, so equal
/// fingerprints, which is all a sieve asks. For walks that know the key
/// and not the words' hashes (word IDs read back from a stream): the words
/// are mixed independently of one another, then together.
#[inline]
pub fn key_fingerprint(key: &[u64]) -> u64 {
    // Odd constants, one per key word (keys have at most 16), so that the
    // same value in two places mixes differently.
    const SEEDS: [u64; 16] = [
        0x9E37_79B9_7F4A_7C15,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0x85EB_CA77_C2B2_AE63,
        0x27D4_EB2F_1656_67C5,
        0xFF51_AFD7_ED55_8CCD,
        0xC4CE_B9FE_1A85_EC53,
        0xBF58_476D_1CE4_E5B9,
        0x94D0_49BB_1331_11EB,
        0xD6E8_FEB8_6659_FD93,
        0xA076_1D64_78BD_642F,
        0xE703_7ED1_A0B4_28DB,
        0x8EBC_6AF0_9C88_C6E3,
        0x5899_65CC_7537_4CC3,
        0x1D8E_4E27_C47D_124F,
        0x2D35_8DCC_AA6C_78A5,
    ];
    let sum = key.iter().zip(SEEDS.iter()).fold(key.len() as u64, |s, (&w, &seed)| s.wrapping_add(mix(w ^ seed)));
    mix(sum)
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

    proptest! {
        /// A small sieve, so that slots are shared: what it says it lets
        /// through is what the frozen sieve does let through, n-gram by n-gram.
        #[test]
        fn a_sieve_of_counters_knows_how_many_n_grams_it_lets_through(
            prints in prop::collection::vec(0u64..3000, 0..3000),
            lines in 1usize..4,
        ) {
            let sieve = Sieve::with_bytes(64).unwrap();
            let mut insert_lines: Vec<InsertLine> = (0..lines).map(|_| InsertLine::default()).collect();
            for (i, &p) in prints.iter().enumerate() {
                sieve.insert_delayed(&mut insert_lines[i % lines], mix(p));
            }
            for line in &mut insert_lines {
                sieve.flush(line);
            }
            let again = insert_lines.iter().map(InsertLine::again).sum();
            let passing = sieve.passing(again).unwrap();
            let through = prints.iter().filter(|&&p| sieve.may_repeat(mix(p))).count() as u64;
            prop_assert_eq!(passing, through);
            let mut frozen = sieve;
            frozen.freeze();
            prop_assert_eq!(frozen.passing(0), None);
        }
    }

    #[test]
    fn the_bytes_for_a_capacity_take_it() {
        for kind in [Filling::Counters, Filling::Staged] {
            for ngrams in [0, 1, 7, 8, 1000, 123_456_789, u64::MAX / 8] {
                let bytes = kind.bytes_for(ngrams);
                assert!(kind.capacity(bytes) >= ngrams, "{ngrams}");
                assert!(bytes == 0 || kind.capacity(bytes - 1) < ngrams, "{ngrams}");
            }
        }
    }

    #[test]
    fn a_sieve_takes_the_capacity_planned_for_its_bytes() {
        for kind in [Filling::Counters, Filling::Staged] {
            for bytes in [16, 4097, 4100, 4103, (1 << 20) + 5] {
                let sieve = Sieve::new(kind, bytes).unwrap();
                assert_eq!(sieve.capacity(), kind.capacity(bytes as u64), "{kind:?} {bytes}");
            }
        }
    }

    #[test]
    fn a_marked_table_answers_every_mark_and_few_others() {
        let bytes = 1 << 20;
        let mut sieve = Sieve::marked(bytes).unwrap();
        let marks = Sieve::marked_capacity(bytes as u64);
        let mut line = DelayLine::default();
        for i in 0..marks {
            sieve.mark_delayed(&mut line, mix(i));
        }
        sieve.flush_marks(&mut line);
        assert!(sieve.is_frozen());
        assert!((0..marks).all(|i| sieve.may_repeat(mix(i))), "a marked fingerprint is never dropped");
        let others = 200_000u64;
        let through = (marks..marks + others).filter(|&i| sieve.may_repeat(mix(i))).count() as f64;
        assert!(through / (others as f64) < 0.05, "{through} of {others} unmarked let through");
        sieve.clear();
        assert!(sieve.is_frozen() && !(0..1000).any(|i| sieve.may_repeat(mix(i))), "cleared, still a marked table");
    }

    /// Whether the mapping holding `address` is advised to use huge pages
    /// (`hg` in its `VmFlags`), or `None` where the kernel does not say.
    #[cfg(target_os = "linux")]
    fn huge_pages_advised(address: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((start, end)) = range.split_once('-')
                && let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
            {
                inside = (start..end).contains(&address);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().any(|f| f == "hg"));
            }
        }
        None
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_large_tables_ask_for_huge_pages() {
        let small = Sieve::new(Filling::Staged, 4 << 20).unwrap();
        if let Some(advised) = huge_pages_advised(small.cells as usize) {
            assert!(!advised, "a 4 MiB sieve asked for huge pages");
        }
        // Mapped, never touched: no memory is used.
        let large = Sieve::new(Filling::Staged, HUGE_PAGES_FROM).unwrap();
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
        if thp.exists()
            && let Some(advised) = huge_pages_advised(large.cells as usize)
        {
            assert!(advised, "a sieve of HUGE_PAGES_FROM bytes did not ask for huge pages");
        }
    }

    fn fingerprints(words: &[u64], n: usize) -> Vec<u64> {
        let mut r = RollingFingerprint::new(n);
        words.iter().filter_map(|&w| r.push(w)).collect()
    }

    #[test]
    fn key_fingerprints_of_packed_ids_spread() {
        // Keys as packings make them: small IDs side by side, high words
        // mostly zero. Every 3-gram of 40 words, in a one-word and (shifted
        // into the next word) a two-word key: no two fingerprints alike, and
        // their low bits (the sieve's slot) spread evenly.
        let mut prints = std::collections::HashSet::new();
        let mut low = vec![0u32; 256];
        for (a, b, c) in (0..40u64).flat_map(|a| (0..40u64).flat_map(move |b| (0..40u64).map(move |c| (a, b, c)))) {
            let packed = (a << 12) | (b << 6) | c;
            for key in [vec![packed], vec![packed >> 10, packed << 54]] {
                let f = key_fingerprint(&key);
                assert!(prints.insert(f), "{key:?}");
                low[(f & 255) as usize] += 1;
            }
        }
        let mean = prints.len() as f64 / 256.0;
        assert!(low.iter().all(|&c| (f64::from(c) - mean).abs() < 5.0 * mean.sqrt()), "{low:?}");
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
            words in prop_oneof![Just(2usize), Just(3), Just(8), Just(10), Just(65), Just(2048)],
            filling in prop_oneof![Just(Filling::Counters), Just(Filling::Staged)],
        ) {
            let mut sieve = Sieve::new(filling, words * 8).unwrap();
            let repeated: Vec<u64> = if fingerprints.is_empty() {
                Vec::new()
            } else {
                repeats.iter().map(|r| fingerprints[r.index(fingerprints.len())]).collect()
            };
            fingerprints.iter().chain(&repeated).for_each(|&f| sieve.insert(f));
            prop_assert!(repeated.iter().all(|&f| sieve.may_repeat(f)));
            let probes: Vec<u64> = fingerprints.iter().copied().chain((0..500u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))).collect();
            let before: Vec<bool> = probes.iter().map(|&f| sieve.may_repeat(f)).collect();
            let saturation = sieve.saturation();
            let frozen_bytes = sieve.frozen_bytes();
            sieve.freeze();
            prop_assert!(sieve.is_frozen());
            prop_assert_eq!(sieve.bytes(), frozen_bytes);
            // Counters keep one bit of two; a staged sieve its "seen twice", three tenths.
            let kept = match filling { Filling::Counters => words.div_ceil(2), Filling::Staged => sieve.repeat_words };
            prop_assert_eq!(sieve.bytes(), kept * 8);
            prop_assert!(kept < words);
            let after: Vec<bool> = probes.iter().map(|&f| sieve.may_repeat(f)).collect();
            prop_assert_eq!(before, after);
            prop_assert_eq!(sieve.saturation(), saturation);
            prop_assert!(!sieve.halve());
            prop_assert!(sieve.save(&mut Vec::new()).is_err());
            let mut saved = Vec::new();
            Sieve::with_bytes(words * 8).unwrap().save(&mut saved).unwrap();
            prop_assert!(Sieve::load(&mut saved.as_slice(), Some(&sieve)).is_err());
            // Cleared, it is filled again at its full size, remembering nothing.
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

    proptest! {
        #[test]
        fn a_halved_staged_sieve_keeps_every_repeat(
            values in prop::collection::vec(0u64..2000, 0..3000),
            halvings in 1u32..3,
        ) {
            // Drawn from few values, so many fingerprints repeat, before and across the halving.
            let fingerprints: Vec<u64> = values.iter().map(|&v| mix(v + 1)).collect();
            // 160 words: 48 "seen twice" and 112 "seen", even twice over.
            let mut big = Sieve::new(Filling::Staged, 160 * 8).unwrap();
            let small = Sieve::new(Filling::Staged, (160 * 8) >> halvings).unwrap();
            let (before, after) = fingerprints.split_at(fingerprints.len() / 2);
            before.iter().for_each(|&f| { big.insert(f); small.insert(f) });
            for _ in 0..halvings {
                prop_assert!(big.halve());
            }
            after.iter().for_each(|&f| { big.insert(f); small.insert(f) });
            prop_assert_eq!(big.bytes(), small.bytes());
            prop_assert_eq!(big.frozen_bytes(), small.frozen_bytes());
            let words = |s: &Sieve| s.cells().iter().map(|w| w.load(Ordering::Relaxed)).collect::<Vec<u64>>();
            let (halved, twin) = (words(&big), words(&small));
            let repeat = big.repeat_words;
            // "Seen" is the same; "seen twice" holds at most what the twin's
            // does (a word of the twin's "seen" was fuller before the halving).
            prop_assert_eq!(&halved[repeat..], &twin[repeat..]);
            prop_assert!(halved[..repeat].iter().zip(&twin[..repeat]).all(|(h, t)| h & !t == 0));
            let mut seen = std::collections::HashMap::<u64, usize>::new();
            fingerprints.iter().for_each(|&f| *seen.entry(f).or_default() += 1);
            prop_assert!(seen.iter().filter(|&(_, &n)| n > 1).all(|(&f, _)| big.may_repeat(f)));
        }
    }

    #[test]
    fn threads_filling_a_staged_sieve_never_lose_a_repeat() {
        // Each fingerprint is inserted once by each of two threads at about
        // the same time: whichever comes second must see it as seen.
        let sieve = Sieve::new(Filling::Staged, 1 << 16).unwrap();
        let fps: Vec<u64> = (0..200_000u64).map(|i| mix(i + 1)).collect();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| fps.iter().for_each(|&f| sieve.insert(f)));
            }
        });
        assert!(fps.iter().all(|&f| sieve.may_repeat(f)));
        assert!(Sieve::load(&mut Vec::new().as_slice(), Some(&sieve)).is_err());
        let mut saved = Vec::new();
        Sieve::with_bytes(1 << 16).unwrap().save(&mut saved).unwrap();
        let refused = Sieve::load(&mut saved.as_slice(), Some(&sieve)).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("staged")));
    }

    #[test]
    fn a_staged_sieve_lets_fewer_uniques_through_than_counters() {
        // 0.14 distinct n-grams a bit, as at a billion tokens under 1 GiB.
        let bytes = 1 << 20;
        let uniques = (bytes as u64 * 8 * 14 / 100) as usize;
        let fps: Vec<u64> = (0..uniques as u64).map(|i| mix(i.wrapping_mul(0x2545_F491_4F6C_DD1D) + 7)).collect();
        let (counters, staged) = (Sieve::with_bytes(bytes).unwrap(), Sieve::new(Filling::Staged, bytes).unwrap());
        for &f in &fps {
            counters.insert(f);
            staged.insert(f);
        }
        let passed = |s: &Sieve| fps.iter().filter(|&&f| s.may_repeat(f)).count() as f64 / uniques as f64;
        let (c, st) = (passed(&counters), passed(&staged));
        // Counters: 1 − e^(−0.28) ≈ 24 %; staged: about 4 %.
        assert!((0.2..0.28).contains(&c), "counters let {c} through");
        assert!(st < 0.07, "the staged sieve let {st} through");
        assert!(staged.saturation() < st, "{} ≥ {st}", staged.saturation());
        assert_eq!(Filling::Staged.capacity(bytes as u64), Filling::Counters.capacity(bytes as u64));
        assert_eq!(staged.capacity(), bytes as u64 * 8 / 5);
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
