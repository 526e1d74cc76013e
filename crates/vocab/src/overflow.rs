//! What one lexicon-pass worker learns of the words its frozen table did
//! not hold: each such word is given a *slot* in the worker's dictionary of
//! the current *epoch* ([`EpochWords`], bounded), which its tokens are
//! written as; when the dictionary is full the epoch ends, and each of its
//! slots goes to two sorts out of core: by its word's fingerprint with its
//! place (the stream, and the slot's number there), and as its word's
//! bytes with the epoch's count of it.
//!
//! A word's tokens within one epoch cost a look-up in the dictionary and
//! nothing on disk beside the stream's code; the sorts take a record per
//! distinct word and epoch, not per token.

use std::path::{Path, PathBuf};

use dupgram_chunker::{Chunk, KeyLayout};
use dupgram_merge::RunFile;
use dupgram_runs::{RunHeader, RunWriter};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::error::VocabError;
use crate::records::{SortedWords, WordSort};
use dupgram_lexicon::MAX_TOKEN_BYTES;

/// The seed of a fingerprint's second half (its first is the word's
/// [`dupgram_lexicon::word_hash`]): any fixed number, so runs agree.
const SECOND_HALF_SEED: u64 = 0x6475_7067_7261_6d21;

/// A word's 128-bit fingerprint: its [`dupgram_lexicon::word_hash`] (what
/// sieve fingerprints are made of) above a second, independent hash.
#[inline]
pub fn fingerprint(bytes: &[u8], hash: u64) -> u128 {
    (u128::from(hash) << 64) | u128::from(xxh3_64_with_seed(bytes, SECOND_HALF_SEED))
}

/// Bits of a slot's place that number it in its stream (the slots of all
/// its epochs, one after the other); the stream's number sits above them.
pub const PLACE_BITS: u32 = 40;

/// The place of the `k`-th slot of stream `stream` (its epochs' slots counted one after the other).
#[inline]
pub fn place(stream: usize, k: u64) -> u64 {
    ((stream as u64) << PLACE_BITS) | k
}

/// The layout of an occurrence key: the fingerprint's four 32-bit words,
/// then the place's two, so keys sort by word, then by place.
pub(crate) fn occurrence_layout() -> KeyLayout {
    KeyLayout::new(6, u32::MAX).expect("6 words of 32 bits fit a key")
}

/// An occurrence run entry's word fingerprint and place; an entry logged
/// more than once is damage (every slot has a place of its own).
pub(crate) fn occurrence(key: &[u32], count: u64) -> Result<(u128, u64), VocabError> {
    let word = key[..4].iter().fold(0u128, |acc, &w| (acc << 32) | u128::from(w));
    let place = (u64::from(key[4]) << 32) | u64::from(key[5]);
    if count != 1 {
        return Err(VocabError::Inconsistent(format!("overflow token at place {place:#x} logged {count} times")));
    }
    Ok((word, place))
}

/// The run header of occurrence runs.
pub(crate) fn occurrence_header() -> RunHeader {
    RunHeader::counts(6, u64::from_le_bytes(*b"overflow"))
}

/// What an overflow token is written as in its stream ([`OverflowLog::push`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slotted {
    /// The epoch before the token's ended, with this many slots: its end
    /// is written before the token.
    pub ended: Option<u32>,
    /// The token's slot in its epoch.
    pub slot: u32,
}

/// One worker's log of overflow tokens, in fixed memory.
pub struct OverflowLog {
    dir: PathBuf,
    stream: usize,
    /// Overflow tokens so far.
    tokens: u64,
    /// Slots of the epochs ended so far (the current epoch's first slot's number).
    slots: u64,
    /// Bytes the log may hold: half for the epoch's dictionary, a quarter
    /// each for occurrences and words (a words-only log's are all the words').
    memory: u64,
    /// Slots an epoch has at most, whatever the memory (see [`with_epoch_slots`](Self::with_epoch_slots)).
    most_slots: Option<u32>,
    epoch: Option<EpochWords>,
    occurrences: Option<Chunk<3>>,
    /// Whether occurrences are logged at all: not for a count of words
    /// without a word stream ([`words_only`](Self::words_only)).
    logs_occurrences: bool,
    /// Keys an occurrence chunk holds.
    capacity: usize,
    occurrence_runs: Vec<RunFile>,
    words: Option<WordSort>,
    spilled: u64,
}

impl OverflowLog {
    /// The log of stream `stream`, its runs in `dir`, within `memory` bytes.
    /// Nothing is allocated before the first token.
    pub fn new(dir: &Path, stream: usize, memory: u64) -> Self {
        OverflowLog {
            dir: dir.to_owned(),
            stream,
            tokens: 0,
            slots: 0,
            memory,
            most_slots: None,
            epoch: None,
            occurrences: None,
            logs_occurrences: true,
            capacity: 0,
            occurrence_runs: Vec::new(),
            words: None,
            spilled: 0,
        }
    }

    /// A log of the words alone, counted, with no occurrences: for a pass
    /// that writes no word stream (a Slurm lexicon task), whose words are
    /// only numbered. Its words get all of `memory`.
    pub fn words_only(dir: &Path, stream: usize, memory: u64) -> Self {
        OverflowLog { logs_occurrences: false, ..OverflowLog::new(dir, stream, memory) }
    }

    /// The log with epochs of at most `slots` slots (at least one), whatever
    /// its memory: the same results, more epochs (for tests).
    pub fn with_epoch_slots(self, slots: Option<u32>) -> Self {
        OverflowLog { most_slots: slots.map(|s| s.max(1)), ..self }
    }

    /// Slots an epoch of this log has at most.
    fn slots_per_epoch(&self) -> u32 {
        let slots = Self::epoch_slots(self.memory);
        self.most_slots.map_or(slots, |most| most.min(slots))
    }

    /// Overflow tokens logged.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Bytes held now.
    pub fn heap_bytes(&self) -> u64 {
        let chunk =
            if self.occurrences.is_some() { Chunk::<3>::bytes_for(occurrence_layout(), self.capacity) } else { 0 };
        chunk as u64
            + self.words.as_ref().map_or(0, WordSort::heap_bytes)
            + self.epoch.as_ref().map_or(0, EpochWords::heap_bytes)
    }

    /// Slots an epoch of a log of `memory` bytes has at most (what a reader
    /// of its stream's side file holds a code and a hash for).
    fn epoch_slots(memory: u64) -> u32 {
        EpochWords::slots_for(memory / 2)
    }

    /// Logs the next overflow token of the stream (its word's bytes and
    /// [`dupgram_lexicon::word_hash`]); what the stream writes for it. A
    /// words-only log writes no stream: its tokens are all slot 0.
    pub fn push(&mut self, bytes: &[u8], hash: u64) -> Result<Slotted, VocabError> {
        self.tokens += 1;
        if !self.logs_occurrences {
            let (dir, stream, memory) = (&self.dir, self.stream, self.memory);
            let words = self.words.get_or_insert_with(|| {
                WordSort::combining_by_fingerprint(dir, &format!("overflow-words-s{stream}"), memory as usize)
            });
            words.push(fingerprint(bytes, hash), bytes, 1)?;
            return Ok(Slotted { ended: None, slot: 0 });
        }
        let slots = self.slots_per_epoch();
        let epoch = self.epoch.get_or_insert_with(|| EpochWords::new(slots));
        if let Some(slot) = epoch.add(bytes, hash) {
            return Ok(Slotted { ended: None, slot });
        }
        let ended = self.end_epoch()?;
        let epoch = self.epoch.as_mut().expect("made above");
        let slot = epoch.add(bytes, hash).expect("an empty dictionary takes any token");
        Ok(Slotted { ended: Some(ended), slot })
    }

    /// Asks for the cache line a look-up of a word of `hash` will touch at
    /// `step` (0: its table cell, 1: its entry, 2: its bytes), each step
    /// reading what the one before brought: a token past the table is a
    /// chain of three loads, which the caller starts some tokens ahead.
    #[inline]
    pub fn prefetch(&self, hash: u64, step: u8) {
        if let Some(epoch) = self.epoch.as_ref() {
            epoch.prefetch(hash, step);
        }
    }

    /// Ends the current epoch: each slot's word goes to the sorts, by its
    /// fingerprint and place and as bytes with its count. Returns its slots.
    fn end_epoch(&mut self) -> Result<u32, VocabError> {
        let Some(mut epoch) = self.epoch.take() else { return Ok(0) };
        let quarter = self.memory / 4;
        for (slot, bytes, hash, count) in epoch.words() {
            let fp = fingerprint(bytes, hash);
            let capacity = &mut self.capacity;
            let chunk = self.occurrences.get_or_insert_with(|| {
                let per_key = Chunk::<3>::bytes_for(occurrence_layout(), 1) as u64;
                *capacity = (quarter / per_key).max(16) as usize;
                Chunk::new(occurrence_layout(), *capacity)
            });
            chunk.push([(fp >> 64) as u64, fp as u64, place(self.stream, self.slots + u64::from(slot))]);
            if chunk.is_full() {
                self.spill_occurrences()?;
            }
            let (dir, stream) = (&self.dir, self.stream);
            let words = self.words.get_or_insert_with(|| {
                WordSort::combining_by_fingerprint(dir, &format!("overflow-words-s{stream}"), quarter as usize)
            });
            words.push(fp, bytes, count)?;
        }
        let slots = epoch.len();
        self.slots += u64::from(slots);
        epoch.clear();
        self.epoch = Some(epoch);
        Ok(slots)
    }

    fn spill_occurrences(&mut self) -> Result<(), VocabError> {
        let Some(chunk) = self.occurrences.as_mut() else { return Ok(()) };
        if chunk.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(format!("overflow-tokens-s{}-{:06}.dgr", self.stream, self.occurrence_runs.len()));
        let mut out = RunWriter::create(&path, occurrence_header())?;
        chunk.drain_sorted(|ids, count| out.push(ids, count))?;
        let (_, summary) = out.finish()?;
        self.spilled += summary.bytes;
        self.occurrence_runs.push(RunFile { path, bytes: summary.bytes, depth: 0 });
        Ok(())
    }

    /// Spills what is left; the log's runs, for [`crate::number_vocabulary`].
    pub fn finish(mut self) -> Result<OverflowRuns, VocabError> {
        if self.tokens == 0 {
            return Ok(OverflowRuns::default());
        }
        self.end_epoch()?;
        self.epoch = None;
        self.spill_occurrences()?;
        self.occurrences = None;
        let words = self.words.take().map(WordSort::finish).transpose()?;
        Ok(OverflowRuns {
            stream: self.stream,
            tokens: self.tokens,
            epoch_slots: self.slots_per_epoch(),
            slots: self.slots,
            occurrences: std::mem::take(&mut self.occurrence_runs),
            words,
            spilled: self.spilled,
        })
    }
}

/// A finished [`OverflowLog`].
#[derive(Default)]
pub struct OverflowRuns {
    pub stream: usize,
    pub tokens: u64,
    /// Slots an epoch of the stream has at most.
    pub epoch_slots: u32,
    /// Slots of all its epochs: a record each in the sorts.
    pub slots: u64,
    pub(crate) occurrences: Vec<RunFile>,
    pub(crate) words: Option<SortedWords>,
    /// Bytes the occurrence runs took (the words' runs are counted when merged).
    pub spilled: u64,
}

impl OverflowRuns {
    /// The runs of the stream's overflow tokens (by fingerprint, then place).
    pub fn occurrence_paths(&self) -> impl Iterator<Item = &Path> {
        self.occurrences.iter().map(|r| r.path.as_path())
    }

    /// Whether the stream had overflow tokens at all.
    pub fn is_empty(&self) -> bool {
        self.tokens == 0
    }
}

/// A worker's dictionary of the words past the table in the current epoch:
/// each word's slot (in the order first met), count and bytes, found by an
/// open-addressed table of slot numbers under the word's hash. Full when
/// its slots or its bytes are used up; then the epoch ends, and it starts
/// again empty.
pub(crate) struct EpochWords {
    /// Slot + 1 of the word hashed there, 0 for none; twice the slots or more, a power of two.
    table: Vec<u32>,
    entries: Vec<EpochEntry>,
    bytes: Vec<u8>,
    slots: u32,
}

struct EpochEntry {
    hash: u64,
    count: u64,
    start: u32,
    len: u32,
}

/// Bytes of a slot: its entry, its table cells (two to four: the table is
/// twice the slots, rounded up to a power of two) and [`SLOT_WORD_BYTES`] of its word.
const SLOT_BYTES: u64 = (std::mem::size_of::<EpochEntry>() + 16) as u64 + SLOT_WORD_BYTES;
/// Room for a word's bytes per slot (any one word fits: at least [`MAX_TOKEN_BYTES`] in all).
const SLOT_WORD_BYTES: u64 = 16;
/// The fewest slots an epoch has from its memory alone.
const MIN_SLOTS: u32 = 4;

impl EpochWords {
    /// Slots a dictionary of `memory` bytes has.
    fn slots_for(memory: u64) -> u32 {
        let most = u64::from(dupgram_lexicon::stream::MAX_EPOCH_SLOTS);
        (memory / SLOT_BYTES).clamp(u64::from(MIN_SLOTS), most) as u32
    }

    /// A dictionary of `slots` slots.
    fn new(slots: u32) -> Self {
        let arena = (u64::from(slots) * SLOT_WORD_BYTES).max(MAX_TOKEN_BYTES as u64) as usize;
        EpochWords {
            table: vec![0; (2 * slots as usize).next_power_of_two()],
            entries: Vec::with_capacity(slots as usize),
            bytes: Vec::with_capacity(arena),
            slots,
        }
    }

    fn heap_bytes(&self) -> u64 {
        (self.table.capacity() * 4
            + self.entries.capacity() * std::mem::size_of::<EpochEntry>()
            + self.bytes.capacity()) as u64
    }

    /// See [`OverflowLog::prefetch`]: the first probe's cell, entry or bytes.
    #[inline]
    fn prefetch(&self, hash: u64, step: u8) {
        let cell = &self.table[(hash as usize) & (self.table.len() - 1)];
        if step == 0 {
            dupgram_prefetch::prefetch(cell);
            return;
        }
        let Some(entry) = (*cell as usize).checked_sub(1).and_then(|e| self.entries.get(e)) else { return };
        if step == 1 {
            dupgram_prefetch::prefetch(entry);
        } else if let Some(first) = self.bytes.get(entry.start as usize) {
            dupgram_prefetch::prefetch(first);
        }
    }

    /// The slot of the word `bytes` (hashed `hash`), counted once more;
    /// `None` when it is new and the dictionary is full.
    #[inline]
    fn add(&mut self, bytes: &[u8], hash: u64) -> Option<u32> {
        let mask = self.table.len() - 1;
        let mut at = (hash as usize) & mask;
        loop {
            let cell = self.table[at];
            if cell == 0 {
                break;
            }
            let entry = &mut self.entries[cell as usize - 1];
            if entry.hash == hash && &self.bytes[entry.start as usize..(entry.start + entry.len) as usize] == bytes {
                entry.count += 1;
                return Some(cell - 1);
            }
            at = (at + 1) & mask;
        }
        // An empty dictionary takes any word, however long.
        let full = self.entries.len() == self.slots as usize || self.bytes.len() + bytes.len() > self.bytes.capacity();
        if full && !self.entries.is_empty() {
            return None;
        }
        let slot = self.entries.len() as u32;
        self.entries.push(EpochEntry { hash, count: 1, start: self.bytes.len() as u32, len: bytes.len() as u32 });
        self.bytes.extend_from_slice(bytes);
        self.table[at] = slot + 1;
        Some(slot)
    }

    /// Slots in use.
    fn len(&self) -> u32 {
        self.entries.len() as u32
    }

    /// Each slot's word: (slot, bytes, hash, count), in slot order.
    fn words(&self) -> impl Iterator<Item = (u32, &[u8], u64, u64)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(slot, e)| (slot as u32, &self.bytes[e.start as usize..(e.start + e.len) as usize], e.hash, e.count))
    }

    /// Empties the dictionary for the next epoch.
    fn clear(&mut self) {
        self.table.fill(0);
        self.entries.clear();
        self.bytes.clear();
    }
}
