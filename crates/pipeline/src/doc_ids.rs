//! Document IDs, the names a job's outputs give documents, and where they
//! are kept while the job runs.
//!
//! `pairs` and `overlap` name documents from what their first pass read
//! (a pair's rows and clusters name both its documents, an overlap row a
//! query's best references); `dedup` names them as it reads the text
//! again, and keeps none. What a job keeps grows with its corpus, and an
//! ID can be long (a URL, a UUID): so the lexicon pass of `pairs` and
//! `overlap` (and the index pass of `pairs --dups`, which has no lexicon
//! pass) writes each worker's IDs to a spill file in the work
//! directory ([`IdSpill`]) instead of holding them, and the index pass
//! copies the spills, in document order, into an ID store ([`IdsOnDisk`])
//! that the outputs read one ID at a time. In memory stay a buffer per
//! worker, nothing per document. A Slurm task still holds its shard's IDs
//! ([`ListedIds::Memory`], [`DocIds::Memory`]): they go into the files
//! its tasks hand each other (see [`crate::shard_docs`] and [`crate::parts`]).
//!
//! # Formats
//!
//! Both are written and read by one job in its work directory, and never
//! outlive it.
//!
//! ```text
//! spill:     magic "DGIDSPL\0" | version u32 LE
//!            | per document: length u32 LE, the ID's bytes (UTF-8)
//!            | XXH3-64 of every record, u64 LE
//! ID ends:   magic "DGIDEND\0" | version u32 LE | documents u64 LE
//!            | per document: the end of its ID in the bytes file, u64 LE
//! ID bytes:  magic "DGIDBYT\0" | version u32 LE | the IDs, one after the other
//! ```
//!
//! A spill is read once, from its start, and its checksum checked before
//! the store it fills is used. The store is read at random, a few bytes
//! at a time, so it has no checksum: each lookup checks that the ID's
//! bounds lie within the bytes file and that its bytes are UTF-8.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use crate::index::IdRange;
use dupgram_jobkit::error::PipelineError;

const SPILL_MAGIC: &[u8; 8] = b"DGIDSPL\0";
const ENDS_MAGIC: &[u8; 8] = b"DGIDEND\0";
const BYTES_MAGIC: &[u8; 8] = b"DGIDBYT\0";
const VERSION: u32 = 1;
/// Magic and version.
const HEADER: u64 = 12;
/// The ends file's header: magic, version and the document count.
const ENDS_HEADER: u64 = HEADER + 8;
/// Buffer of each file written or read in order.
const BUFFER_BYTES: usize = 64 << 10;
/// No ID is longer: a record is at most 64 MiB.
const MAX_ID_BYTES: u32 = 64 << 20;

/// Where a job keeps the IDs of the documents it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdsKept {
    /// Nowhere: the job names documents from the text.
    Not,
    /// In memory (a Slurm task's, handed on in its files).
    Memory,
    /// In a spill file per worker, then an ID store on disk.
    OnDisk,
}

impl IdsKept {
    /// An empty list of IDs for `worker`, kept as said.
    pub(crate) fn list(self, work: &Path, worker: usize) -> Result<ListedIds, PipelineError> {
        Ok(match self {
            IdsKept::Not => ListedIds::Unnamed,
            IdsKept::Memory => ListedIds::Memory { ids: String::new(), lens: Vec::new() },
            IdsKept::OnDisk => ListedIds::Spilled(Box::new(IdSpill::create(work, worker)?)),
        })
    }
}

/// How the lexicon pass keeps the IDs of the documents a worker lists.
#[derive(Debug, Default)]
pub(crate) enum ListedIds {
    /// None kept: the job names documents from the text.
    #[default]
    Unnamed,
    /// Held, one after the other, with each one's length (a Slurm task's).
    Memory { ids: String, lens: Vec<u32> },
    /// Written to a spill file in the work directory (boxed: one a worker).
    Spilled(Box<IdSpill>),
}

impl ListedIds {
    pub(crate) fn push(&mut self, id: &str) -> Result<(), PipelineError> {
        match self {
            ListedIds::Unnamed => Ok(()),
            ListedIds::Memory { ids, lens } => {
                ids.push_str(id);
                // An ID is a record's field, far shorter than 4 GiB (records are at most 64 MiB).
                lens.push(id.len() as u32);
                Ok(())
            }
            ListedIds::Spilled(spill) => spill.push(id),
        }
    }

    /// The worker has listed its last document.
    pub(crate) fn finish(&mut self) -> Result<(), PipelineError> {
        match self {
            ListedIds::Spilled(spill) => spill.finish(),
            _ => Ok(()),
        }
    }

    /// Bytes written to disk (as many again while the ID store is filled).
    pub(crate) fn bytes_on_disk(&self) -> u64 {
        match self {
            ListedIds::Spilled(spill) => spill.bytes,
            _ => 0,
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> u64 {
        match self {
            ListedIds::Unnamed => 0,
            ListedIds::Memory { ids, lens } => (ids.capacity() + lens.capacity() * 4) as u64,
            ListedIds::Spilled(spill) => std::mem::size_of::<IdSpill>() as u64 + spill.heap_bytes(),
        }
    }
}

/// One worker's document IDs, written in the order it read them.
pub(crate) struct IdSpill {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    check: Xxh3,
    ids: u64,
    /// Bytes written, the header and records.
    bytes: u64,
}

impl std::fmt::Debug for IdSpill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdSpill").field("path", &self.path).field("ids", &self.ids).finish()
    }
}

impl IdSpill {
    /// A spill file for `worker` in `work`.
    pub(crate) fn create(work: &Path, worker: usize) -> Result<Self, PipelineError> {
        let path = work.join(format!("ids-w{worker}.dgi"));
        let file = File::create(&path).map_err(|e| PipelineError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(BUFFER_BYTES, file);
        let header = [&SPILL_MAGIC[..], &VERSION.to_le_bytes()].concat();
        out.write_all(&header).map_err(|e| PipelineError::io(&path, e))?;
        Ok(IdSpill { path, out: Some(out), check: Xxh3::new(), ids: 0, bytes: HEADER })
    }

    fn push(&mut self, id: &str) -> Result<(), PipelineError> {
        let len = u32::try_from(id.len())
            .ok()
            .filter(|&len| len <= MAX_ID_BYTES)
            .ok_or_else(|| PipelineError::Usage(format!("a document ID of {} bytes", id.len())))?;
        let out = self.out.as_mut().ok_or_else(|| internal("an ID spill written after its end"))?;
        let len = len.to_le_bytes();
        self.check.update(&len);
        self.check.update(id.as_bytes());
        out.write_all(&len)
            .and_then(|()| out.write_all(id.as_bytes()))
            .map_err(|e| PipelineError::io(&self.path, e))?;
        self.ids += 1;
        self.bytes += 4 + id.len() as u64;
        Ok(())
    }

    /// Writes the checksum and closes the file.
    pub(crate) fn finish(&mut self) -> Result<(), PipelineError> {
        if let Some(mut out) = self.out.take() {
            out.write_all(&self.check.digest().to_le_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| PipelineError::io(&self.path, e))?;
        }
        Ok(())
    }

    fn heap_bytes(&self) -> u64 {
        self.out.as_ref().map_or(0, |out| out.capacity() as u64)
    }
}

impl Drop for IdSpill {
    fn drop(&mut self) {
        // Read once into the ID store, then of no use (the work directory goes at the end anyway).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads a spill from its start, one ID at a time.
struct SpillReader<'s> {
    spill: &'s IdSpill,
    input: BufReader<File>,
    check: Xxh3,
    read: u64,
}

impl<'s> SpillReader<'s> {
    fn open(spill: &'s IdSpill) -> Result<Self, PipelineError> {
        let path = &spill.path;
        let file = File::open(path).map_err(|e| PipelineError::io(path, e))?;
        let mut input = BufReader::with_capacity(BUFFER_BYTES, file);
        let mut header = [0u8; HEADER as usize];
        input.read_exact(&mut header).map_err(|e| PipelineError::io(path, e))?;
        if &header[..8] != SPILL_MAGIC || header[8..] != VERSION.to_le_bytes() {
            return Err(corrupt(path, "not a document ID spill of this version"));
        }
        Ok(SpillReader { spill, input, check: Xxh3::new(), read: 0 })
    }

    /// The next ID's bytes, into `buf`.
    fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<(), PipelineError> {
        let path = &self.spill.path;
        if self.read == self.spill.ids {
            return Err(corrupt(path, "fewer IDs than documents listed"));
        }
        let mut len = [0u8; 4];
        self.input.read_exact(&mut len).map_err(|e| PipelineError::io(path, e))?;
        let n = u32::from_le_bytes(len);
        if n > MAX_ID_BYTES {
            return Err(corrupt(path, &format!("an ID of {n} bytes")));
        }
        buf.resize(n as usize, 0);
        self.input.read_exact(buf).map_err(|e| PipelineError::io(path, e))?;
        self.check.update(&len);
        self.check.update(buf);
        self.read += 1;
        Ok(())
    }

    /// Checks that every ID was read and the checksum matches.
    fn end(mut self) -> Result<(), PipelineError> {
        let path = &self.spill.path;
        let mut sum = [0u8; 8];
        self.input.read_exact(&mut sum).map_err(|e| PipelineError::io(path, e))?;
        let mut rest = [0u8; 1];
        let after = self.input.read(&mut rest).map_err(|e| PipelineError::io(path, e))?;
        if self.read != self.spill.ids || after != 0 || sum != self.check.digest().to_le_bytes() {
            return Err(corrupt(path, "checksum mismatch or bytes after the last ID"));
        }
        Ok(())
    }
}

/// The IDs of a document table.
#[derive(Debug)]
pub enum DocIds {
    /// None: the job names documents from the text.
    Unnamed,
    /// Held: the IDs one after the other, and where each one is.
    Memory { ids: String, ranges: Vec<IdRange> },
    /// On disk, in document order.
    OnDisk(IdsOnDisk),
}

impl Default for DocIds {
    fn default() -> Self {
        DocIds::Memory { ids: String::new(), ranges: Vec::new() }
    }
}

impl DocIds {
    /// Document `doc`'s ID.
    pub fn id(&self, doc: u32) -> Result<Cow<'_, str>, PipelineError> {
        match self {
            DocIds::Unnamed => Err(internal("a document named by a job that keeps no IDs")),
            DocIds::Memory { ids, ranges } => {
                let range = ranges.get(doc as usize).ok_or_else(|| internal("a document past the table"))?;
                let start = range.start() as usize;
                Ok(Cow::Borrowed(&ids[start..start + range.length() as usize]))
            }
            DocIds::OnDisk(store) => store.id(doc).map(Cow::Owned),
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        match self {
            DocIds::Unnamed | DocIds::OnDisk(_) => 0,
            DocIds::Memory { ids, ranges } => (ids.capacity() + ranges.capacity() * 12) as u64,
        }
    }
}

/// Builds a [`DocIds::Memory`] from lists of IDs, each appended whole, with
/// every document's range placed by its number: a worker's list holds its
/// documents in its own order, which is not the corpus's.
pub(crate) struct MemoryIds {
    ids: String,
    ranges: Vec<IdRange>,
}

impl MemoryIds {
    /// For `docs` documents, none placed yet.
    pub(crate) fn new(docs: usize) -> Self {
        MemoryIds { ids: String::new(), ranges: vec![IdRange::default(); docs] }
    }

    /// Appends the list `ids`; `places` gives each of its documents'
    /// number and its ID's (start, length) in `ids`.
    pub(crate) fn add(&mut self, ids: &str, places: impl IntoIterator<Item = (usize, u64, u32)>) {
        let offset = self.ids.len() as u64;
        self.ids.push_str(ids);
        for (doc, start, len) in places {
            self.ranges[doc] = IdRange::new(offset + start, len);
        }
    }

    /// Whether every range starts and ends on a character of the IDs (a
    /// table read from a file may say otherwise).
    pub(crate) fn on_char_boundaries(&self) -> bool {
        self.ranges.iter().all(|r| {
            let end = r.start().checked_add(u64::from(r.length()));
            end.is_some_and(|end| {
                end <= self.ids.len() as u64
                    && self.ids.is_char_boundary(r.start() as usize)
                    && self.ids.is_char_boundary(end as usize)
            })
        })
    }

    pub(crate) fn finish(self) -> DocIds {
        DocIds::Memory { ids: self.ids, ranges: self.ranges }
    }
}

/// The places of a list's IDs given as lengths one after the other:
/// (document, start, length) for the documents `docs` in order.
pub(crate) fn places_of_lengths(
    docs: impl IntoIterator<Item = usize>,
    lens: impl IntoIterator<Item = u32>,
) -> impl Iterator<Item = (usize, u64, u32)> {
    docs.into_iter().zip(lens).scan(0u64, |at, (doc, len)| {
        let start = *at;
        *at += u64::from(len);
        Some((doc, start, len))
    })
}

/// Document IDs on disk in document order (the format above), read one
/// at a time with positioned reads: any number of threads at once.
#[derive(Debug)]
pub struct IdsOnDisk {
    ends: File,
    bytes: File,
    paths: [PathBuf; 2],
    documents: u64,
    /// The IDs' bytes in all.
    id_bytes: u64,
}

impl IdsOnDisk {
    /// Copies the spills of the lists into a store in `work`: `runs` are
    /// each list's runs of consecutive document numbers (first, count),
    /// and together they number every document from 0 exactly once.
    pub(crate) fn from_spills(work: &Path, lists: &[(&[(u64, u64)], &IdSpill)]) -> Result<Self, PipelineError> {
        let paths = [work.join("ids-ends.dgi"), work.join("ids-bytes.dgi")];
        let mut order: Vec<(u64, u64, usize)> = lists
            .iter()
            .enumerate()
            .flat_map(|(i, (runs, _))| runs.iter().map(move |&(first, count)| (first, count, i)))
            .collect();
        order.sort_unstable();
        let documents: u64 = order.iter().map(|&(_, count, _)| count).sum();
        let mut readers =
            lists.iter().map(|(_, spill)| SpillReader::open(spill)).collect::<Result<Vec<_>, PipelineError>>()?;
        let mut ends = StoreWriter::create(&paths[0], ENDS_MAGIC)?;
        ends.write(&documents.to_le_bytes())?;
        let mut bytes = StoreWriter::create(&paths[1], BYTES_MAGIC)?;
        let mut next = 0u64;
        let mut id_bytes = 0u64;
        let mut buf = Vec::new();
        for (first, count, list) in order {
            if first != next {
                return Err(internal("document lists that do not number every document once"));
            }
            for _ in 0..count {
                readers[list].next_into(&mut buf)?;
                bytes.write(&buf)?;
                id_bytes += buf.len() as u64;
                ends.write(&id_bytes.to_le_bytes())?;
            }
            next = first + count;
        }
        for reader in readers {
            reader.end()?;
        }
        let ends = ends.finish()?;
        let bytes = bytes.finish()?;
        Ok(IdsOnDisk { ends, bytes, paths, documents, id_bytes })
    }

    /// Document `doc`'s ID.
    pub fn id(&self, doc: u32) -> Result<String, PipelineError> {
        let doc = u64::from(doc);
        if doc >= self.documents {
            return Err(internal("a document past the ID store"));
        }
        // The end of the document before (0 for the first) and its own.
        let mut bounds = [0u8; 16];
        let (at, want) =
            if doc == 0 { (ENDS_HEADER, &mut bounds[8..]) } else { (ENDS_HEADER + (doc - 1) * 8, &mut bounds[..]) };
        self.ends.read_exact_at(want, at).map_err(|e| PipelineError::io(&self.paths[0], e))?;
        let start = u64::from_le_bytes(bounds[..8].try_into().expect("8 bytes"));
        let end = u64::from_le_bytes(bounds[8..].try_into().expect("8 bytes"));
        if start > end || end > self.id_bytes || end - start > u64::from(MAX_ID_BYTES) {
            return Err(corrupt(&self.paths[0], &format!("document {doc}'s ID at {start}..{end}")));
        }
        let mut id = vec![0u8; (end - start) as usize];
        self.bytes.read_exact_at(&mut id, HEADER + start).map_err(|e| PipelineError::io(&self.paths[1], e))?;
        String::from_utf8(id).map_err(|_| corrupt(&self.paths[1], &format!("document {doc}'s ID is not UTF-8")))
    }
}

impl Drop for IdsOnDisk {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One file of the ID store, written in order, then opened for reading.
struct StoreWriter<'p> {
    path: &'p Path,
    out: BufWriter<File>,
}

impl<'p> StoreWriter<'p> {
    fn create(path: &'p Path, magic: &[u8; 8]) -> Result<Self, PipelineError> {
        let file = File::create(path).map_err(|e| PipelineError::io(path, e))?;
        let mut writer = StoreWriter { path, out: BufWriter::with_capacity(BUFFER_BYTES, file) };
        writer.write(magic)?;
        writer.write(&VERSION.to_le_bytes())?;
        Ok(writer)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), PipelineError> {
        self.out.write_all(bytes).map_err(|e| PipelineError::io(self.path, e))
    }

    fn finish(self) -> Result<File, PipelineError> {
        self.out.into_inner().map_err(|e| PipelineError::io(self.path, e.into_error()))?;
        File::open(self.path).map_err(|e| PipelineError::io(self.path, e))
    }
}

fn corrupt(path: &Path, what: &str) -> PipelineError {
    PipelineError::Corrupt(format!("{}: {what}", path.display()))
}

fn internal(what: &str) -> PipelineError {
    PipelineError::Usage(format!("internal error: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spill_of(work: &Path, worker: usize, ids: &[&str]) -> IdSpill {
        let mut spill = IdSpill::create(work, worker).unwrap();
        for id in ids {
            spill.push(id).unwrap();
        }
        spill.finish().unwrap();
        spill
    }

    /// Two workers' spills, their batches interleaved, come out in document order.
    #[test]
    fn spills_are_stored_in_document_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = spill_of(dir.path(), 0, &["d0", "", "d4", "dé5"]);
        let b = spill_of(dir.path(), 1, &["d2", "d3", "a much longer ID, as a URL is"]);
        let runs_a = [(0, 2), (4, 2)];
        let runs_b = [(2, 2), (6, 1)];
        let store = IdsOnDisk::from_spills(dir.path(), &[(&runs_a[..], &a), (&runs_b[..], &b)]).unwrap();
        let got: Vec<String> = (0..7).map(|d| store.id(d).unwrap()).collect();
        assert_eq!(got, ["d0", "", "d2", "d3", "d4", "dé5", "a much longer ID, as a URL is"]);
        assert!(store.id(7).is_err());
        let ids = DocIds::OnDisk(store);
        assert_eq!(ids.id(5).unwrap(), "dé5");
        assert_eq!(ids.heap_bytes(), 0);
    }

    /// Lists that leave a document out, or a spill with fewer IDs than its runs, are refused.
    #[test]
    fn lists_that_do_not_add_up_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = spill_of(dir.path(), 0, &["x", "y"]);
        let gap = [(0, 1), (2, 1)];
        assert!(IdsOnDisk::from_spills(dir.path(), &[(&gap[..], &a)]).is_err());
        let more = [(0, 3)];
        assert!(IdsOnDisk::from_spills(dir.path(), &[(&more[..], &a)]).is_err());
        let fewer = [(0, 1)];
        assert!(IdsOnDisk::from_spills(dir.path(), &[(&fewer[..], &a)]).is_err());
    }

    /// A spill changed on disk is caught by its checksum.
    #[test]
    fn a_changed_spill_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = spill_of(dir.path(), 0, &["abc", "def"]);
        let mut bytes = std::fs::read(&a.path).unwrap();
        bytes[HEADER as usize + 5] ^= 1;
        std::fs::write(&a.path, bytes).unwrap();
        let runs = [(0, 2)];
        assert!(IdsOnDisk::from_spills(dir.path(), &[(&runs[..], &a)]).is_err());
    }

    /// Two workers' lists, interleaved in the corpus, placed by number.
    #[test]
    fn lists_held_in_memory_are_placed_by_document() {
        let mut built = MemoryIds::new(4);
        built.add("béta-d", places_of_lengths([1, 3], [5, 2]));
        built.add("ac", places_of_lengths([0, 2], [1, 1]));
        assert!(built.on_char_boundaries());
        let ids = built.finish();
        let named: Vec<String> = (0..4).map(|d| ids.id(d).unwrap().into_owned()).collect();
        assert_eq!(named, ["a", "béta", "c", "-d"]);
        // A length that cuts the é in two is seen.
        let mut cut = MemoryIds::new(2);
        cut.add("béta", places_of_lengths([0, 1], [2, 3]));
        assert!(!cut.on_char_boundaries());
        // As is one past the IDs' end.
        let mut past = MemoryIds::new(1);
        past.add("ab", places_of_lengths([0], [3]));
        assert!(!past.on_char_boundaries());
    }

    /// Changed bytes anywhere in a spill or the store give an error or
    /// other IDs, never a panic or an allocation past the IDs' bytes.
    #[test]
    fn changed_files_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ["first", "", "zweite é", "3", "a longer fourth ID"];
        let runs = [(0, 5)];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |below: usize| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % below
        };
        for round in 0..600 {
            let spill = spill_of(dir.path(), 0, &ids);
            let mut bytes = std::fs::read(&spill.path).unwrap();
            if round % 3 == 0 {
                let at = next(bytes.len());
                bytes[at] ^= 1 << next(8);
                std::fs::write(&spill.path, &bytes).unwrap();
                assert!(IdsOnDisk::from_spills(dir.path(), &[(&runs[..], &spill)]).is_err(), "round {round}");
                continue;
            }
            let store = IdsOnDisk::from_spills(dir.path(), &[(&runs[..], &spill)]).unwrap();
            let path = store.paths[round % 2].clone();
            let mut bytes = std::fs::read(&path).unwrap();
            let at = next(bytes.len());
            bytes[at] = next(256) as u8;
            std::fs::write(&path, &bytes).unwrap();
            for d in 0..6 {
                if let Ok(id) = store.id(d) {
                    assert!(id.len() as u64 <= store.id_bytes);
                }
            }
        }
    }

    /// The spill and the store leave the work directory with their owners.
    #[test]
    fn the_files_go_with_their_owners() {
        let dir = tempfile::tempdir().unwrap();
        let a = spill_of(dir.path(), 0, &["only"]);
        let runs = [(0, 1)];
        let store = IdsOnDisk::from_spills(dir.path(), &[(&runs[..], &a)]).unwrap();
        drop(a);
        assert_eq!(store.id(0).unwrap(), "only");
        drop(store);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
