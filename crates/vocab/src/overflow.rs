//! What one lexicon-pass worker learns of the words its frozen table did
//! not hold: every such token by its word's fingerprint and its place, and
//! every such word's bytes and count — both sorted out of core.

use std::path::{Path, PathBuf};

use dupgram_chunker::{Chunk, KeyLayout};
use dupgram_merge::RunFile;
use dupgram_runs::{RunHeader, RunWriter};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::error::VocabError;
use crate::records::{SortedWords, WordSort};

/// The seed of a fingerprint's second half (its first is the word's
/// [`dupgram_lexicon::word_hash`]): any fixed number, so runs agree.
const SECOND_HALF_SEED: u64 = 0x6475_7067_7261_6d21;

/// A word's 128-bit fingerprint: its [`dupgram_lexicon::word_hash`] (what
/// sieve fingerprints are made of) above a second, independent hash.
#[inline]
pub fn fingerprint(bytes: &[u8], hash: u64) -> u128 {
    (u128::from(hash) << 64) | u128::from(xxh3_64_with_seed(bytes, SECOND_HALF_SEED))
}

/// Bits of a token's place that count its overflow tokens in its stream;
/// the stream's number sits above them.
pub const PLACE_BITS: u32 = 40;

/// The place of the `k`-th overflow token of stream `stream`.
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
/// more than once is damage (every token has a place of its own).
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

/// One worker's log of overflow tokens, in fixed memory.
pub struct OverflowLog {
    dir: PathBuf,
    stream: usize,
    /// Overflow tokens so far (the next one's `k`).
    tokens: u64,
    /// Bytes the log may hold: half for occurrences, half for words.
    memory: u64,
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
            memory,
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

    /// Overflow tokens logged.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Bytes held now.
    pub fn heap_bytes(&self) -> u64 {
        let chunk =
            if self.occurrences.is_some() { Chunk::<3>::bytes_for(occurrence_layout(), self.capacity) } else { 0 };
        chunk as u64 + self.words.as_ref().map_or(0, WordSort::heap_bytes)
    }

    /// Logs the next overflow token of the stream: its word's bytes and [`dupgram_lexicon::word_hash`].
    pub fn push(&mut self, bytes: &[u8], hash: u64) -> Result<(), VocabError> {
        let fp = fingerprint(bytes, hash);
        let k = self.tokens;
        self.tokens += 1;
        if !self.logs_occurrences {
            let (dir, stream, memory) = (&self.dir, self.stream, self.memory);
            let words = self.words.get_or_insert_with(|| {
                WordSort::combining_by_fingerprint(dir, &format!("overflow-words-s{stream}"), memory as usize)
            });
            return words.push(fp, bytes, 1);
        }
        let half = self.memory / 2;
        let capacity = &mut self.capacity;
        let chunk = self.occurrences.get_or_insert_with(|| {
            let per_key = Chunk::<3>::bytes_for(occurrence_layout(), 1) as u64;
            *capacity = (half / per_key).max(16) as usize;
            Chunk::new(occurrence_layout(), *capacity)
        });
        chunk.push([(fp >> 64) as u64, fp as u64, place(self.stream, k)]);
        if chunk.is_full() {
            self.spill_occurrences()?;
        }
        let (dir, stream) = (&self.dir, self.stream);
        let words = self.words.get_or_insert_with(|| {
            WordSort::combining_by_fingerprint(dir, &format!("overflow-words-s{stream}"), half as usize)
        });
        words.push(fp, bytes, 1)
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
        self.spill_occurrences()?;
        self.occurrences = None;
        let words = self.words.take().map(WordSort::finish).transpose()?;
        Ok(OverflowRuns {
            stream: self.stream,
            tokens: self.tokens,
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
