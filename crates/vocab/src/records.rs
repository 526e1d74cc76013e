//! Word records sorted out of core: `(major, bytes, payload)` in order of
//! `major`, then `bytes`, each `(major, bytes)` at most once.
//!
//! The records this crate sorts are of a few kinds, all of this shape: a
//! word under its fingerprint with a count, a word under its rank with
//! where it came from, a number with what it became. They are gathered in
//! a buffer of fixed size, sorted and spilled as a run when it is full, and
//! the runs are merged (through intermediate merges when there are more
//! than the memory allows open at once) into one ordered stream.
//!
//! A run file (`Kind` "DGWREC", version 2) holds records in strictly
//! increasing order, each as `major gap | varint length | bytes | varint
//! payload`, in the frames of [`crate::frames`]; a reader checks the order
//! as it goes. The major is written as a varint of up to 128 bits: its gap
//! from the record before it in the frame, or the major itself for the first
//! of a frame, so every frame still decodes on its own. Sorted majors lie
//! close together: places and indexes differ by a few units, ranks mostly not
//! at all, and `r` random fingerprints by about `2¹²⁸ / r`, so a record's
//! major takes one to a few bytes where it took sixteen (the overflow's runs
//! are the largest temporary files of a job whose vocabulary is far past
//! its table).
//!
//! Runs of words under their fingerprints ([`Majors::Fingerprints`]) do
//! not write the major at all: a sparse run of random fingerprints would
//! still spend about fourteen bytes a record on its gaps, more than the
//! word itself, and the fingerprint is a function of the word. Those runs
//! are their own kind ("DGWFPR", version 1), records `varint length | bytes
//! | varint payload`, and the reader computes each record's major from its
//! bytes ([`crate::fingerprint`] of [`dupgram_lexicon::word_hash`]) before
//! it checks the order.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use dupgram_merge::{Interrupt, LoserTree};
use hashbrown::HashTable;

use crate::error::VocabError;
use crate::frames::{
    FrameReader, FrameWriter, Kind, READER_BYTES, push_varint, push_varint128, read_varint, read_varint128,
};

pub(crate) const RECORD_RUN: Kind = Kind { magic: b"DGWREC\r\n", version: 2, name: "word record run" };
pub(crate) const FINGERPRINT_RUN: Kind = Kind { magic: b"DGWFPR\r\n", version: 1, name: "word run by fingerprint" };

/// Where the majors of a sort's records come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Majors {
    /// Given with each record, and written in its runs.
    Written,
    /// Each word's fingerprint ([`word_fingerprint`]): given with each
    /// record, computed again from the bytes when a run is read.
    Fingerprints,
}

impl Majors {
    fn kind(self) -> Kind {
        match self {
            Majors::Written => RECORD_RUN,
            Majors::Fingerprints => FINGERPRINT_RUN,
        }
    }
}

/// A word's fingerprint computed from its bytes alone.
#[inline]
pub fn word_fingerprint(bytes: &[u8]) -> u128 {
    crate::fingerprint(bytes, dupgram_lexicon::word_hash(bytes))
}

/// Records an intermediate merge of runs writes at most, per run it reads: none.
const MIN_FAN_IN: usize = 2;

/// One record of a sorted stream; `bytes` lives until the next one is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WordRecord<'a> {
    pub major: u128,
    pub bytes: &'a [u8],
    pub payload: u64,
}

impl WordRecord<'_> {
    #[inline]
    fn order(&self, other: &WordRecord<'_>) -> Ordering {
        self.major.cmp(&other.major).then_with(|| self.bytes.cmp(other.bytes))
    }
}

/// A record in the buffer: its bytes are `arena[start..start + len]`.
#[derive(Debug, Clone, Copy)]
struct Item {
    major: u128,
    start: u32,
    len: u32,
    payload: u64,
}

/// Bytes an [`Item`] takes in the buffer, its slot in the combining table included.
const ITEM_BYTES: usize = std::mem::size_of::<Item>() + 9;

/// Gathers records, spilling sorted runs to a directory as its buffer fills.
pub struct WordSort {
    dir: PathBuf,
    name: String,
    items: Vec<Item>,
    arena: Vec<u8>,
    /// Bytes the buffer may take.
    limit: usize,
    /// When set, a record equal in `(major, bytes)` to one in the buffer
    /// adds its payload to it instead of taking a place of its own.
    combining: Option<HashTable<u32>>,
    majors: Majors,
    runs: Vec<RecordRunFile>,
    /// Runs begun, the one being written included: names the next.
    spills: usize,
    /// Whether a helper thread sorts and writes each full buffer while the
    /// next one fills ([`in_background`](Self::in_background)).
    background: bool,
    /// The run the helper is sorting and writing, and the bytes its buffers hold.
    pending: Option<(JoinHandle<Result<SortedRun, VocabError>>, usize)>,
}

/// A sort's buffer: its items and the bytes they point into.
type Buffers = (Vec<Item>, Vec<u8>);

/// What a helper thread gives back: the run it wrote, and its buffers to fill again.
struct SortedRun {
    run: RecordRunFile,
    items: Vec<Item>,
    arena: Vec<u8>,
}

/// A run of records on disk.
#[derive(Debug, Clone)]
pub struct RecordRunFile {
    pub path: PathBuf,
    pub records: u64,
    pub bytes: u64,
    pub majors: Majors,
}

impl WordSort {
    /// A sort whose runs are `{name}-NNNNNN.dgr` in `dir`, its buffer at most `limit` bytes.
    pub fn new(dir: &Path, name: &str, limit: usize) -> Self {
        WordSort {
            dir: dir.to_owned(),
            name: name.to_owned(),
            items: Vec::new(),
            arena: Vec::new(),
            limit: limit.max(1 << 10),
            combining: None,
            majors: Majors::Written,
            runs: Vec::new(),
            spills: 0,
            background: false,
            pending: None,
        }
    }

    /// The same sort, its full buffers sorted and written by a helper thread
    /// while the caller fills the next one, each buffer half the limit: the
    /// numbering's sorts take every record of a pass that does little else
    /// (the job's other core idles meanwhile), and sorting was a third of
    /// their time.
    pub fn in_background(mut self) -> Self {
        self.background = true;
        self.limit = (self.limit / 2).max(1 << 10);
        self
    }

    /// [`new`](Self::new), adding up the payloads of equal records (counts).
    pub fn combining(dir: &Path, name: &str, limit: usize) -> Self {
        let mut sort = WordSort::new(dir, name, limit);
        sort.combining = Some(HashTable::new());
        sort
    }

    /// [`combining`](Self::combining), for words under their fingerprints
    /// ([`Majors::Fingerprints`]): every record's major must be
    /// [`word_fingerprint`] of its bytes.
    pub fn combining_by_fingerprint(dir: &Path, name: &str, limit: usize) -> Self {
        let mut sort = WordSort::combining(dir, name, limit);
        sort.majors = Majors::Fingerprints;
        sort
    }

    /// Bytes held: the buffer as allocated (and the one being written).
    pub fn heap_bytes(&self) -> u64 {
        let table = self.combining.as_ref().map_or(0, |t| t.capacity() * 5);
        let pending = self.pending.as_ref().map_or(0, |&(_, bytes)| bytes);
        (self.items.capacity() * std::mem::size_of::<Item>() + self.arena.capacity() + table + pending) as u64
    }

    /// Adds a record.
    pub fn push(&mut self, major: u128, bytes: &[u8], payload: u64) -> Result<(), VocabError> {
        debug_assert!(self.majors == Majors::Written || major == word_fingerprint(bytes), "a fingerprint's major");
        if let Some(table) = self.combining.as_mut() {
            let (items, arena) = (&mut self.items, &self.arena);
            let same = |&i: &u32| {
                let it = &items[i as usize];
                it.major == major && &arena[it.start as usize..(it.start + it.len) as usize] == bytes
            };
            let hash = fold(major);
            if let Some(&i) = table.find(hash, same) {
                let it = &mut self.items[i as usize];
                it.payload = it.payload.saturating_add(payload);
                return Ok(());
            }
            let index = self.items.len() as u32;
            let items = &self.items;
            table.insert_unique(hash, index, |&i| fold(items[i as usize].major));
        }
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(bytes);
        self.items.push(Item { major, start, len: bytes.len() as u32, payload });
        if self.arena.len() + self.items.len() * ITEM_BYTES >= self.limit || self.arena.len() >= u32::MAX as usize / 2 {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<(), VocabError> {
        if self.items.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(format!("{}-{:06}.dgr", self.name, self.spills));
        self.spills += 1;
        if let Some(t) = self.combining.as_mut() {
            t.clear();
        }
        if !self.background {
            sort_items(&mut self.items, &self.arena);
            let run = write_run(&path, self.majors, &self.items, &self.arena)?;
            self.runs.push(run);
            self.items.clear();
            self.arena.clear();
            return Ok(());
        }
        // The buffers of the run before (written by now, or waited for) take these ones' place.
        let (items, arena) = self.settle()?.unwrap_or_default();
        let mut items = std::mem::replace(&mut self.items, items);
        let arena = std::mem::replace(&mut self.arena, arena);
        let bytes = items.capacity() * std::mem::size_of::<Item>() + arena.capacity();
        let majors = self.majors;
        let helper = std::thread::spawn(move || {
            sort_items(&mut items, &arena);
            let run = write_run(&path, majors, &items, &arena)?;
            Ok(SortedRun { run, items, arena })
        });
        self.pending = Some((helper, bytes));
        Ok(())
    }

    /// Waits for the run the helper is writing, if any; its buffers, emptied.
    fn settle(&mut self) -> Result<Option<Buffers>, VocabError> {
        let Some((helper, _)) = self.pending.take() else {
            return Ok(None);
        };
        let SortedRun { run, mut items, mut arena } =
            helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        self.runs.push(run);
        items.clear();
        arena.clear();
        Ok(Some((items, arena)))
    }

    /// Ends the gathering: what is left in the buffer stays in memory when
    /// nothing was spilled, else it is spilled too.
    pub fn finish(mut self) -> Result<SortedWords, VocabError> {
        self.settle()?;
        let memory = if self.runs.is_empty() {
            let (mut items, arena) = (std::mem::take(&mut self.items), std::mem::take(&mut self.arena));
            sort_items(&mut items, &arena);
            Some((items, arena))
        } else {
            self.spill()?;
            self.settle()?;
            None
        };
        let (dir, name, runs) =
            (std::mem::take(&mut self.dir), std::mem::take(&mut self.name), std::mem::take(&mut self.runs));
        Ok(SortedWords { dir, name, majors: self.majors, memory, runs })
    }
}

impl Drop for WordSort {
    /// A run still being written is waited for: its file is in the sort's
    /// directory, which the caller may remove next.
    fn drop(&mut self) {
        if let Some((helper, _)) = self.pending.take() {
            let _ = helper.join();
        }
    }
}

fn sort_items(items: &mut [Item], arena: &[u8]) {
    let bytes = |it: &Item| &arena[it.start as usize..(it.start + it.len) as usize];
    items.sort_unstable_by(|a, b| a.major.cmp(&b.major).then_with(|| bytes(a).cmp(bytes(b))));
}

/// Writes sorted records as one run at `path`.
fn write_run(path: &Path, majors: Majors, items: &[Item], arena: &[u8]) -> Result<RecordRunFile, VocabError> {
    let mut out = RecordRunWriter::create(path, majors)?;
    for it in items {
        let bytes = &arena[it.start as usize..(it.start + it.len) as usize];
        out.push(&WordRecord { major: it.major, bytes, payload: it.payload })?;
    }
    out.finish()
}

#[inline]
fn fold(major: u128) -> u64 {
    let h = (major as u64) ^ ((major >> 64) as u64).rotate_left(29);
    h.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Records in order, in memory or as runs, to be read once.
pub struct SortedWords {
    dir: PathBuf,
    name: String,
    majors: Majors,
    memory: Option<(Vec<Item>, Vec<u8>)>,
    runs: Vec<RecordRunFile>,
}

impl SortedWords {
    /// Several sorts' records as one: their runs, and what stayed in memory
    /// spilled as runs too (named `{name}-NNNNNN.dgr` in `dir`) unless it is alone.
    pub fn concat(parts: Vec<SortedWords>, dir: &Path, name: &str) -> Result<SortedWords, VocabError> {
        if parts.len() == 1 {
            return Ok(parts.into_iter().next().expect("one part"));
        }
        let majors = parts.first().map_or(Majors::Written, |p| p.majors);
        let mut runs = Vec::new();
        for part in parts {
            debug_assert_eq!(part.majors, majors, "one kind of record");
            runs.extend(part.runs);
            if let Some((items, arena)) = part.memory {
                let path = dir.join(format!("{name}-{:06}.dgr", runs.len()));
                runs.push(write_run(&path, majors, &items, &arena)?);
            }
        }
        Ok(SortedWords { dir: dir.to_owned(), name: name.to_owned(), majors, memory: None, runs })
    }

    /// Records already sorted in run files of the `majors` kind, to be read
    /// as one stream like any sort's (and removed once read).
    pub(crate) fn from_runs(dir: &Path, name: &str, majors: Majors, runs: Vec<RecordRunFile>) -> SortedWords {
        SortedWords { dir: dir.to_owned(), name: name.to_owned(), majors, memory: None, runs }
    }

    /// Runs on disk (0 when everything stayed in memory).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes of the runs on disk.
    pub fn run_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.bytes).sum()
    }

    /// Opens the stream, merging runs first while there are more than
    /// `memory` bytes of readers allow at once.
    pub fn open(self, memory: u64, stop: &dyn Interrupt) -> Result<MergedWords, VocabError> {
        if let Some((items, arena)) = self.memory {
            return Ok(MergedWords {
                source: Source::Memory { items, arena, next: 0 },
                peeked: None,
                current: Vec::new(),
                files: Vec::new(),
            });
        }
        let fan_in = ((memory / READER_BYTES) as usize).max(MIN_FAN_IN);
        let mut runs = self.runs;
        let mut made = 0usize;
        while runs.len() > fan_in {
            if stop.interrupted() {
                remove(&runs);
                return Err(VocabError::Interrupted);
            }
            runs.sort_by(|a, b| (a.bytes, &a.path).cmp(&(b.bytes, &b.path)));
            let take = (runs.len() - fan_in + 1).min(fan_in);
            let group: Vec<RecordRunFile> = runs.drain(..take).collect();
            let path = self.dir.join(format!("{}-merged-{made:06}.dgr", self.name));
            made += 1;
            let merged = merge_to(&group, &path, stop);
            remove(&group);
            match merged {
                Ok(run) => runs.push(run),
                Err(e) => {
                    remove(&runs);
                    return Err(e);
                }
            }
        }
        let files = runs.iter().map(|r| r.path.clone()).collect();
        let merging = Merging::open(&runs)?;
        Ok(MergedWords { source: Source::Runs(merging), peeked: None, current: Vec::new(), files })
    }
}

fn remove(runs: &[RecordRunFile]) {
    for r in runs {
        let _ = std::fs::remove_file(&r.path);
    }
}

fn merge_to(group: &[RecordRunFile], path: &Path, stop: &dyn Interrupt) -> Result<RecordRunFile, VocabError> {
    let merging = Merging::open(group)?;
    let mut merged =
        MergedWords { source: Source::Runs(merging), peeked: None, current: Vec::new(), files: Vec::new() };
    let majors = group.first().map_or(Majors::Written, |r| r.majors);
    let mut out = RecordRunWriter::create(path, majors)?;
    let mut n = 0u64;
    // Equal records of different runs become one (only a combining sort has them).
    while let Some(r) = merged.next_combined()? {
        out.push(&r)?;
        n += 1;
        if n.is_multiple_of(65536) && stop.interrupted() {
            drop(out);
            let _ = std::fs::remove_file(path);
            return Err(VocabError::Interrupted);
        }
    }
    out.finish()
}

/// The merged stream of a [`SortedWords`]; its run files go when it does.
pub struct MergedWords {
    source: Source,
    /// One record read ahead by [`next_combined`](Self::next_combined).
    peeked: Option<(u128, Vec<u8>, u64)>,
    /// The bytes of the record [`next_combined`](Self::next_combined) handed out last.
    current: Vec<u8>,
    files: Vec<PathBuf>,
}

enum Source {
    Memory { items: Vec<Item>, arena: Vec<u8>, next: usize },
    Runs(Merging),
}

impl MergedWords {
    /// The next record, in order; `None` at the end. Records equal in
    /// `(major, bytes)` from different runs come one after the other.
    pub fn next_record(&mut self) -> Result<Option<WordRecord<'_>>, VocabError> {
        if let Some((major, bytes, payload)) = self.peeked.take() {
            self.current = bytes;
            return Ok(Some(WordRecord { major, bytes: &self.current, payload }));
        }
        self.next_raw()
    }

    fn next_raw(&mut self) -> Result<Option<WordRecord<'_>>, VocabError> {
        match &mut self.source {
            Source::Memory { items, arena, next } => {
                let Some(it) = items.get(*next) else { return Ok(None) };
                *next += 1;
                Ok(Some(WordRecord {
                    major: it.major,
                    bytes: &arena[it.start as usize..(it.start + it.len) as usize],
                    payload: it.payload,
                }))
            }
            Source::Runs(m) => m.next(),
        }
    }

    fn pull(&mut self) -> Result<Option<(u128, Vec<u8>, u64)>, VocabError> {
        if let Some(p) = self.peeked.take() {
            return Ok(Some(p));
        }
        Ok(self.next_raw()?.map(|r| (r.major, r.bytes.to_vec(), r.payload)))
    }

    /// [`next_record`](Self::next_record), with equal records of different runs taken
    /// together as one, their payloads added up.
    pub fn next_combined(&mut self) -> Result<Option<WordRecord<'_>>, VocabError> {
        let Some((major, bytes, mut payload)) = self.pull()? else { return Ok(None) };
        while let Some(next) = self.pull()? {
            if next.0 == major && next.1 == bytes {
                payload = payload.saturating_add(next.2);
                continue;
            }
            self.peeked = Some(next);
            break;
        }
        self.current = bytes;
        Ok(Some(WordRecord { major, bytes: &self.current, payload }))
    }
}

impl Drop for MergedWords {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// A loser tree over run readers.
struct Merging {
    readers: Vec<RecordRunReader>,
    live: Vec<bool>,
    tree: LoserTree,
    started: bool,
}

impl Merging {
    fn open(runs: &[RecordRunFile]) -> Result<Self, VocabError> {
        let mut readers = Vec::with_capacity(runs.len());
        let mut live = Vec::with_capacity(runs.len());
        for r in runs {
            let mut reader = RecordRunReader::open(&r.path, r.majors)?;
            live.push(reader.advance()?);
            readers.push(reader);
        }
        let tree = LoserTree::new(readers.len(), |a, b| precedes(&readers, &live, a, b));
        Ok(Merging { readers, live, tree, started: false })
    }

    fn next(&mut self) -> Result<Option<WordRecord<'_>>, VocabError> {
        if self.started {
            // The record handed out last is used up now: its reader moves on.
            let w = self.tree.winner();
            self.live[w] = self.readers[w].advance()?;
            let (readers, live) = (&self.readers, &self.live);
            self.tree.replay(w, |a, b| precedes(readers, live, a, b));
        }
        self.started = true;
        let w = self.tree.winner();
        if w >= self.readers.len() || !self.live[w] {
            return Ok(None);
        }
        Ok(Some(self.readers[w].record()))
    }
}

fn precedes(readers: &[RecordRunReader], live: &[bool], a: usize, b: usize) -> bool {
    match (live[a], live[b]) {
        (true, true) => match readers[a].record().order(&readers[b].record()) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a < b,
        },
        (true, false) => true,
        (false, true) => false,
        (false, false) => a < b,
    }
}

/// Writes a run file of records given in strictly increasing order.
pub(crate) struct RecordRunWriter {
    out: FrameWriter,
    majors: Majors,
    last: Option<(u128, Vec<u8>)>,
    /// The major the next record's gap is taken from: the last record's, or zero at a frame's start.
    base: u128,
}

impl RecordRunWriter {
    pub fn create(path: &Path, majors: Majors) -> Result<Self, VocabError> {
        Ok(RecordRunWriter { out: FrameWriter::create(path, majors.kind())?, majors, last: None, base: 0 })
    }

    pub fn push(&mut self, r: &WordRecord<'_>) -> Result<(), VocabError> {
        if let Some((major, bytes)) = &self.last {
            let before = WordRecord { major: *major, bytes, payload: 0 };
            debug_assert_eq!(before.order(r), Ordering::Less, "records come in strictly increasing order");
        }
        if self.out.frame_is_empty() {
            self.base = 0;
        }
        let buf = self.out.record();
        if self.majors == Majors::Written {
            // Records come in increasing order, so the gap is never negative; a
            // record out of order would wrap, and the reader's checked sum and
            // order check refuse the run.
            push_varint128(buf, r.major.wrapping_sub(self.base));
            self.base = r.major;
        }
        push_varint(buf, r.bytes.len() as u64);
        buf.extend_from_slice(r.bytes);
        push_varint(buf, r.payload);
        self.out.end_record()?;
        match &mut self.last {
            Some((major, bytes)) if cfg!(debug_assertions) => {
                *major = r.major;
                bytes.clear();
                bytes.extend_from_slice(r.bytes);
            }
            Some(_) => {}
            None => self.last = Some((r.major, r.bytes.to_vec())),
        }
        Ok(())
    }

    pub fn finish(self) -> Result<RecordRunFile, VocabError> {
        let (path, records, bytes) = self.out.finish()?;
        Ok(RecordRunFile { path, records, bytes, majors: self.majors })
    }
}

/// The longest word a record may hold: far beyond any token (see
/// [`dupgram_lexicon::MAX_TOKEN_BYTES`]), so longer is damage.
const MAX_RECORD_WORD: u64 = 1 << 20;

/// Reads a run file, checking its order.
pub(crate) struct RecordRunReader {
    input: FrameReader,
    majors: Majors,
    major: u128,
    bytes: Vec<u8>,
    payload: u64,
    started: bool,
}

impl RecordRunReader {
    pub fn open(path: &Path, majors: Majors) -> Result<Self, VocabError> {
        Ok(RecordRunReader {
            // Every run is read once, by a merge, and removed after it.
            input: FrameReader::open_consumed(path, majors.kind())?,
            majors,
            major: 0,
            bytes: Vec::new(),
            payload: 0,
            started: false,
        })
    }

    #[inline]
    fn record(&self) -> WordRecord<'_> {
        WordRecord { major: self.major, bytes: &self.bytes, payload: self.payload }
    }

    /// Reads the next record; false at the end.
    pub fn advance(&mut self) -> Result<bool, VocabError> {
        let Some((rest, first)) = self.input.rest_of_frame()? else { return Ok(false) };
        // A frame's first record gives its major whole, the others their gap from the one before.
        let base = if first { 0 } else { self.major };
        let written = self.majors == Majors::Written;
        let Some((gap, len, used)) = decode_head(rest, written) else {
            return Err(self.input.corrupt("record cut short or malformed"));
        };
        let Some(word) = rest.get(used..used + len) else {
            return Err(self.input.corrupt("record cut short"));
        };
        let major = match written {
            true => base.checked_add(gap),
            false => Some(word_fingerprint(word)),
        };
        let Some(major) = major else {
            return Err(self.input.corrupt("a record's major past 128 bits"));
        };
        let Some((payload, tail)) = read_varint(&rest[used + len..]) else {
            return Err(self.input.corrupt("record cut short or malformed"));
        };
        let order = major.cmp(&self.major).then_with(|| word.cmp(&self.bytes[..]));
        if self.started && order != Ordering::Greater {
            return Err(self.input.corrupt("records out of order"));
        }
        self.major = major;
        self.bytes.clear();
        self.bytes.extend_from_slice(word);
        self.payload = payload;
        self.started = true;
        self.input.consumed(used + len + tail);
        Ok(true)
    }
}

/// A record's major gap (0 where majors are not written) and word length, and the bytes they took.
fn decode_head(rest: &[u8], written: bool) -> Option<(u128, usize, usize)> {
    let (gap, m) = if written { read_varint128(rest)? } else { (0, 0) };
    let (len, n) = read_varint(&rest[m..])?;
    (len <= MAX_RECORD_WORD).then_some((gap, len as usize, m + n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// How a test sorts its records.
    #[derive(Clone, Copy, PartialEq)]
    enum Mode {
        Distinct,
        Combining,
        ByFingerprint,
    }

    /// The records through a sort (its full buffers written by a helper
    /// thread when `background`) and back, checking that no run is left.
    fn sorted(
        records: &[(u128, Vec<u8>, u64)],
        limit: usize,
        mode: Mode,
        memory: u64,
        background: bool,
    ) -> Vec<(u128, Vec<u8>, u64)> {
        let dir = tempfile::tempdir().unwrap();
        let sort = match mode {
            Mode::Distinct => WordSort::new(dir.path(), "t", limit),
            Mode::Combining => WordSort::combining(dir.path(), "t", limit),
            Mode::ByFingerprint => WordSort::combining_by_fingerprint(dir.path(), "t", limit),
        };
        let mut sort = if background { sort.in_background() } else { sort };
        let combining = mode != Mode::Distinct;
        for (m, b, p) in records {
            sort.push(*m, b, *p).unwrap();
        }
        let mut merged = sort.finish().unwrap().open(memory, &()).unwrap();
        let mut out = Vec::new();
        loop {
            let r = if combining { merged.next_combined().unwrap() } else { merged.next_record().unwrap() };
            let Some(r) = r else { break };
            out.push((r.major, r.bytes.to_vec(), r.payload));
        }
        drop(merged);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "run files are removed");
        out
    }

    proptest! {
        #[test]
        fn combined_records_are_sorted_and_summed(
            words in proptest::collection::vec((0u128..6, proptest::collection::vec(97u8..100, 0..4), 1u64..5), 0..400),
            limit in 0usize..4000,
            memory in 0u64..2_000_000,
            background in any::<bool>(),
        ) {
            let mut want: std::collections::BTreeMap<(u128, Vec<u8>), u64> = Default::default();
            for (m, b, p) in &words {
                *want.entry((*m, b.clone())).or_default() += p;
            }
            let want: Vec<_> = want.into_iter().map(|((m, b), p)| (m, b, p)).collect();
            prop_assert_eq!(sorted(&words, limit, Mode::Combining, memory, background), want);
        }

        #[test]
        fn words_by_fingerprint_are_sorted_and_summed(
            words in proptest::collection::vec((proptest::collection::vec(97u8..101, 0..5), 1u64..5), 0..400),
            limit in 0usize..4000,
            memory in 0u64..2_000_000,
            background in any::<bool>(),
        ) {
            let words: Vec<(u128, Vec<u8>, u64)> = words.into_iter().map(|(b, p)| (word_fingerprint(&b), b, p)).collect();
            let mut want: std::collections::BTreeMap<(u128, Vec<u8>), u64> = Default::default();
            for (m, b, p) in &words {
                *want.entry((*m, b.clone())).or_default() += p;
            }
            let want: Vec<_> = want.into_iter().map(|((m, b), p)| (m, b, p)).collect();
            prop_assert_eq!(sorted(&words, limit, Mode::ByFingerprint, memory, background), want);
        }

        #[test]
        fn distinct_records_come_back_in_order(
            set in proptest::collection::btree_set((any::<u128>(), proptest::collection::vec(any::<u8>(), 0..6)), 0..300),
            limit in 0usize..3000,
            background in any::<bool>(),
        ) {
            let mut words: Vec<(u128, Vec<u8>, u64)> = set.iter().enumerate().map(|(i, (m, b))| (*m, b.clone(), i as u64)).collect();
            let want = words.clone();
            words.reverse();
            prop_assert_eq!(sorted(&words, limit, Mode::Distinct, 0, background), want);
        }
    }

    /// The error a run of these raw records (major gap, word) gives at its
    /// second record (majors are left out of a run by fingerprint).
    fn second_record_error(records: [(u128, &[u8]); 2], majors: Majors) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.dgr");
        let mut out = FrameWriter::create(&path, majors.kind()).unwrap();
        for (gap, word) in records {
            let buf = out.record();
            if majors == Majors::Written {
                push_varint128(buf, gap);
            }
            push_varint(buf, word.len() as u64);
            buf.extend_from_slice(word);
            push_varint(buf, 1);
            out.end_record().unwrap();
        }
        out.finish().unwrap();
        let mut r = RecordRunReader::open(&path, majors).unwrap();
        assert!(r.advance().unwrap());
        let err = r.advance().unwrap_err().to_string();
        assert!(err.contains("r.dgr"), "{err}");
        err
    }

    #[test]
    fn a_run_out_of_order_is_refused() {
        // (5, "b"), then a gap of 0 and a smaller word: (5, "a").
        let err = second_record_error([(5, b"b"), (0, b"a")], Majors::Written);
        assert!(err.contains("out of order"), "{err}");
    }

    #[test]
    fn a_run_by_fingerprint_out_of_order_is_refused() {
        let (mut a, mut b): (&[u8], &[u8]) = (b"cat", b"dog");
        if word_fingerprint(a) < word_fingerprint(b) {
            (a, b) = (b, a);
        }
        let err = second_record_error([(0, a), (0, b)], Majors::Fingerprints);
        assert!(err.contains("out of order"), "{err}");
    }

    /// A run of words by fingerprint holds no majors: sparse fingerprints
    /// would take more room than the words.
    #[test]
    fn runs_by_fingerprint_leave_the_majors_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut words: Vec<(u128, Vec<u8>)> =
            (0..20_000u32).map(|i| format!("w{i}").into_bytes()).map(|w| (word_fingerprint(&w), w)).collect();
        words.sort();
        let mut sizes = Vec::new();
        for majors in [Majors::Written, Majors::Fingerprints] {
            let path = dir.path().join("r.dgr");
            let mut out = RecordRunWriter::create(&path, majors).unwrap();
            for (major, bytes) in &words {
                out.push(&WordRecord { major: *major, bytes, payload: 1 }).unwrap();
            }
            sizes.push(out.finish().unwrap().bytes);
            let mut r = RecordRunReader::open(&path, majors).unwrap();
            for (major, bytes) in &words {
                assert!(r.advance().unwrap());
                assert_eq!(r.record(), WordRecord { major: *major, bytes, payload: 1 });
            }
            assert!(!r.advance().unwrap());
        }
        // About 7 bytes a record against about 21.
        assert!(sizes[1] * 2 < sizes[0], "{sizes:?}");
    }

    #[test]
    fn a_gap_past_128_bits_is_refused() {
        let err = second_record_error([(u128::MAX, b""), (1, b"")], Majors::Written);
        assert!(err.contains("past 128 bits"), "{err}");
    }

    /// Enough records for many frames, majors spread over the whole range
    /// (each frame starts from zero again) and packed together: every one
    /// comes back, and the packed ones take a few bytes each.
    #[test]
    fn majors_come_back_across_frames() {
        let spread: Vec<u128> = (0..40_000u128).map(|i| i * (u128::MAX / 40_000) + (i % 7)).collect();
        let packed: Vec<u128> = (0..40_000u128).map(|i| (1u128 << 100) + 3 * i).collect();
        for majors in [spread, packed] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.dgr");
            let mut out = RecordRunWriter::create(&path, Majors::Written).unwrap();
            for (i, &major) in majors.iter().enumerate() {
                out.push(&WordRecord { major, bytes: b"w", payload: i as u64 }).unwrap();
            }
            let file = out.finish().unwrap();
            if majors[1] - majors[0] == 3 {
                assert!(file.bytes < 40_000 * 8, "{} bytes for packed majors", file.bytes);
            }
            let mut r = RecordRunReader::open(&path, Majors::Written).unwrap();
            for (i, &major) in majors.iter().enumerate() {
                assert!(r.advance().unwrap());
                assert_eq!(r.record(), WordRecord { major, bytes: b"w", payload: i as u64 });
            }
            assert!(!r.advance().unwrap());
        }
    }
}
