//! The files the pairs passes hand each other when they run as separate
//! tasks (see `dupgram-cluster`): a part of the corpus's document table
//! (from an index pass over a shard), a bucket's per-document totals
//! (from the merge of that bucket's postings), and a bucket's per-document
//! count of n-grams too common to make candidates (from its candidates).
//!
//! # Format
//!
//! ```text
//! magic     8 bytes    "DGDOCS\0\0", "DGTOTAL\0" or "DGCOMMON"
//! version   u32 LE     1
//! body      ...        little-endian integers, described below
//! checksum  u64 LE     XXH3-64 of magic, version and body
//! ```
//!
//! Document table body: `first_doc u64`, `docs u64`, then per document
//! `tokens u32`, `hash u128`, `id_len u32`, then `id_bytes u64` and the IDs
//! concatenated (UTF-8).
//!
//! Totals body: `docs u64`, `ngrams u64`, `occurrences u64`, per document
//! `occurrences u32` and `types u32`, then `differing u64` and that many
//! document numbers (u32): documents the bucket showed to differ from their
//! group's first (see [`crate::index`]'s `GroupCheck`).
//!
//! Common counts body: `docs u64`, then per document `common u32`
//! ([`Candidates::common`](crate::Candidates)).
//!
//! `dedup --unit span` hands its hashing pass over a part of the corpus to a
//! later job the same way (`--hash-to`, then `--hashed`): a hashed part,
//! magic `"DGKGRAMS"`, body `k u32`, `options u64` (an XXH3 of what makes a
//! K-gram's hash: K, tokenisation, stop words), `part u64` (its place in the
//! corpus), `documents u64`, `tokens u64`, `runs u64`, then per run `bytes u64`, `name_len u32` and the run's
//! file name (UTF-8, in the part's directory), in the order written.

use std::io::{Read, Write};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::doc_ids::{DocIds, MemoryIds, places_of_lengths};
use crate::index::{DocPastTable, DocTable, IdRange, IndexTotals};
use dupgram_jobkit::error::PipelineError;

const DOCS_MAGIC: &[u8; 8] = b"DGDOCS\0\0";
const TOTALS_MAGIC: &[u8; 8] = b"DGTOTAL\0";
const COMMON_MAGIC: &[u8; 8] = b"DGCOMMON";
const KGRAMS_MAGIC: &[u8; 8] = b"DGKGRAMS";
const VERSION: u32 = 1;

/// A bucket's part of the index totals, and the documents it showed to
/// differ from their group's first.
#[derive(Debug)]
pub struct BucketTotals {
    pub totals: IndexTotals,
    pub differing: Vec<u32>,
}

impl DocTable {
    /// Writes this table (of documents `first_doc..`) in the format above.
    pub fn write_to(&self, first_doc: u64, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = Checked::new(out, DOCS_MAGIC)?;
        w.u64(first_doc)?;
        w.u64(self.len() as u64)?;
        let DocIds::Memory { ids, ranges } = &self.ids else {
            return Err(std::io::Error::other("internal error: a document table without its IDs in memory"));
        };
        if self.hashes.len() != self.len() {
            return Err(std::io::Error::other("internal error: a document table without its hashes"));
        }
        for ((&tokens, hash), range) in self.tokens.iter().zip(&self.hashes).zip(ranges) {
            w.u32(tokens)?;
            w.bytes(&hash.to_le_bytes())?;
            w.u32(range.length())?;
        }
        w.u64(ids.len() as u64)?;
        for range in ranges {
            let start = range.start() as usize;
            w.bytes(&ids.as_bytes()[start..start + range.length() as usize])?;
        }
        w.finish()
    }

    /// Reads a table written by [`Self::write_to`]; returns it with its first document's number.
    pub fn read_from(path: &Path) -> Result<(u64, DocTable), PipelineError> {
        let mut r = Checked::read(path, DOCS_MAGIC)?;
        let first_doc = r.u64()?;
        let docs = r.count(4 + 16 + 4)?;
        let mut table = DocTable::default();
        let mut lens = Vec::with_capacity(docs);
        for _ in 0..docs {
            table.tokens.push(r.u32()?);
            table.hashes.push(u128::from_le_bytes(r.array()?));
            lens.push(r.u32()?);
        }
        let id_bytes = r.count(1)?;
        let ids = r.take(id_bytes)?;
        let ids = String::from_utf8(ids.to_vec()).map_err(|_| r.corrupt("document IDs are not UTF-8"))?;
        let total: u64 = lens.iter().map(|&len| u64::from(len)).sum();
        let mut built = MemoryIds::new(docs);
        built.add(&ids, places_of_lengths(0..docs, lens));
        if total != id_bytes as u64 || !built.on_char_boundaries() {
            return Err(r.corrupt("document ID lengths do not add up"));
        }
        table.ids = built.finish();
        r.end()?;
        Ok((first_doc, table))
    }

    /// Bytes it holds in memory.
    pub fn bytes(&self) -> u64 {
        (self.tokens.len() * 4 + self.hashes.len() * 16 + self.candidates.len() * 4) as u64 + self.ids.heap_bytes()
    }

    /// Adds the documents of `next`, which follow this table's (both with
    /// their IDs in memory, as the tables of a staged job's shards are).
    pub fn append(&mut self, next: DocTable) -> Result<(), PipelineError> {
        let (DocIds::Memory { ids, ranges }, DocIds::Memory { ids: next_ids, ranges: next_ranges }) =
            (&mut self.ids, next.ids)
        else {
            return Err(PipelineError::Usage("internal error: a shard's document table without its IDs".into()));
        };
        let offset = ids.len() as u64;
        ids.push_str(&next_ids);
        ranges.extend(next_ranges.into_iter().map(|r| IdRange::new(offset + r.start(), r.length())));
        self.tokens.extend(next.tokens);
        self.hashes.extend(next.hashes);
        self.candidates.extend(next.candidates);
        Ok(())
    }
}

impl BucketTotals {
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let t = &self.totals;
        let mut w = Checked::new(out, TOTALS_MAGIC)?;
        w.u64(t.occurrences.len() as u64)?;
        w.u64(t.ngrams)?;
        w.u64(t.total_occurrences)?;
        for (&o, &ty) in t.occurrences.iter().zip(&t.types) {
            w.u32(o)?;
            w.u32(ty)?;
        }
        w.u64(self.differing.len() as u64)?;
        for &d in &self.differing {
            w.u32(d)?;
        }
        w.finish()
    }

    pub fn read_from(path: &Path) -> Result<BucketTotals, PipelineError> {
        let mut r = Checked::read(path, TOTALS_MAGIC)?;
        let docs = r.u64()?;
        let (ngrams, total_occurrences) = (r.u64()?, r.u64()?);
        let docs = usize::try_from(docs).map_err(|_| r.corrupt("too many documents"))?;
        if docs > r.left() / 8 {
            return Err(r.corrupt("shorter than its document count says"));
        }
        let mut totals = IndexTotals {
            occurrences: Vec::with_capacity(docs),
            types: Vec::with_capacity(docs),
            ngrams,
            total_occurrences,
        };
        for _ in 0..docs {
            totals.occurrences.push(r.u32()?);
            totals.types.push(r.u32()?);
        }
        if totals.types.iter().zip(&totals.occurrences).any(|(t, o)| t > o) {
            return Err(r.corrupt("a document with more n-grams than occurrences"));
        }
        let differing = r.count(4)?;
        let differing = (0..differing).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        if differing.iter().any(|&d| d as usize >= docs) {
            return Err(r.corrupt("a document number out of range"));
        }
        r.end()?;
        Ok(BucketTotals { totals, differing })
    }
}

/// Writes a bucket's per-document counts of n-grams too common to make
/// candidates ([`Candidates::common`](crate::Candidates)) in the format above.
pub fn write_common(common: &[u32], out: &mut dyn Write) -> std::io::Result<()> {
    let mut w = Checked::new(out, COMMON_MAGIC)?;
    w.u64(common.len() as u64)?;
    for &c in common {
        w.u32(c)?;
    }
    w.finish()
}

/// Adds the counts [`write_common`] wrote to `path` to `sum`, one per document.
pub fn add_common(path: &Path, sum: &mut [u32]) -> Result<(), PipelineError> {
    let mut r = Checked::read(path, COMMON_MAGIC)?;
    let docs = r.count(4)?;
    if docs != sum.len() {
        return Err(r.corrupt(&format!("counts of {docs} documents, for a corpus of {}", sum.len())));
    }
    for s in sum.iter_mut() {
        *s = s.saturating_add(r.u32()?);
    }
    r.end()
}

/// A part of the corpus hashed by `dedup --unit span --hash-to`: what was
/// hashed, and the sorted runs of its K-grams (file names in its directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KgramPart {
    pub k: u32,
    /// XXH3 of what decides a K-gram's hash (K, tokenisation, stop words).
    pub options: u64,
    /// The part's place in the corpus (0, 1, …).
    pub part: u64,
    pub documents: u64,
    pub tokens: u64,
    /// Each run's file name and size in bytes.
    pub runs: Vec<(String, u64)>,
}

impl KgramPart {
    /// Writes the part in the format above.
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = Checked::new(out, KGRAMS_MAGIC)?;
        w.u32(self.k)?;
        w.u64(self.options)?;
        w.u64(self.part)?;
        w.u64(self.documents)?;
        w.u64(self.tokens)?;
        w.u64(self.runs.len() as u64)?;
        for (name, bytes) in &self.runs {
            w.u64(*bytes)?;
            w.u32(u32::try_from(name.len()).map_err(std::io::Error::other)?)?;
            w.bytes(name.as_bytes())?;
        }
        w.finish()
    }

    /// Reads a part written by [`Self::write_to`].
    pub fn read_from(path: &Path) -> Result<KgramPart, PipelineError> {
        let mut r = Checked::read(path, KGRAMS_MAGIC)?;
        let (k, options, part) = (r.u32()?, r.u64()?, r.u64()?);
        let (documents, tokens) = (r.u64()?, r.u64()?);
        let count = r.count(8 + 4)?;
        let mut runs = Vec::with_capacity(count);
        for _ in 0..count {
            let bytes = r.u64()?;
            let len = r.u32()? as usize;
            let name = std::str::from_utf8(r.take(len)?).map(str::to_owned).ok();
            let Some(name) = name else { return Err(r.corrupt("a run name not UTF-8")) };
            if name.contains('/') || name.starts_with('.') {
                return Err(r.corrupt("a run name outside its directory"));
            }
            runs.push((name, bytes));
        }
        r.end()?;
        Ok(KgramPart { k, options, part, documents, tokens, runs })
    }
}

impl IndexTotals {
    /// Totals of no n-grams over `docs` documents.
    pub fn empty(docs: usize) -> IndexTotals {
        IndexTotals { occurrences: vec![0; docs], types: vec![0; docs], ngrams: 0, total_occurrences: 0 }
    }

    /// Adds an n-gram with these occurrences (in increasing order), of
    /// documents numbered from `first_doc` (the totals' first document).
    /// Fails, counting nothing, on an occurrence of a document these totals
    /// do not cover (a checksum-valid run of another corpus, say).
    pub fn add_ngram(&mut self, occurrences: &[u64], first_doc: u64) -> Result<(), DocPastTable> {
        let docs = self.occurrences.len() as u64;
        let past = occurrences.iter().map(|&o| o >> 32).find(|&d| d.checked_sub(first_doc).is_none_or(|d| d >= docs));
        if let Some(doc) = past {
            return Err(DocPastTable { doc, first_doc, docs });
        }
        self.ngrams += 1;
        self.total_occurrences += occurrences.len() as u64;
        let mut last = u64::MAX;
        for &o in occurrences {
            let doc = ((o >> 32) - first_doc) as usize;
            // Saturating: a document holds fewer than 2^32 positions, but the runs are input.
            self.occurrences[doc] = self.occurrences[doc].saturating_add(1);
            if doc as u64 != last {
                self.types[doc] = self.types[doc].saturating_add(1);
                last = doc as u64;
            }
        }
        Ok(())
    }

    /// Counts an n-gram of `occurrences` occurrences, in totals that hold no
    /// document (an index sorted by document, see `crate::index::ByDoc`).
    pub fn add_uncounted(&mut self, occurrences: usize) {
        self.ngrams += 1;
        self.total_occurrences += occurrences as u64;
    }

    /// `|S_X|` of document `doc`: its n-gram positions less its repeats
    /// (when these totals hold every n-gram of it, or every repeated one).
    pub fn distinct(&self, doc: usize, tokens: u32, n: u32) -> u32 {
        // Totals never hold more repeats than the document has positions,
        // but they come from other files than the tokens: saturate rather
        // than panic on a pair of files that disagree.
        let repeats = self.occurrences[doc].saturating_sub(self.types[doc]);
        tokens.saturating_sub(n - 1).saturating_sub(repeats)
    }

    /// Adds the totals of another bucket of n-grams (over the same documents).
    pub fn absorb(&mut self, other: &IndexTotals) -> Result<(), PipelineError> {
        if other.occurrences.len() != self.occurrences.len() {
            return Err(PipelineError::Changed(format!(
                "index parts over {} and {} documents",
                self.occurrences.len(),
                other.occurrences.len()
            )));
        }
        let overflow = || PipelineError::Corrupt("index parts' totals add up to more than 2^32 per document".into());
        for (a, b) in self.occurrences.iter_mut().zip(&other.occurrences) {
            *a = a.checked_add(*b).ok_or_else(overflow)?;
        }
        for (a, b) in self.types.iter_mut().zip(&other.types) {
            *a = a.checked_add(*b).ok_or_else(overflow)?;
        }
        self.ngrams = self.ngrams.saturating_add(other.ngrams);
        self.total_occurrences = self.total_occurrences.saturating_add(other.total_occurrences);
        Ok(())
    }
}

/// Writes the magic and version, then hashes everything it writes.
struct Checked<'a> {
    out: &'a mut dyn Write,
    hash: Xxh3,
}

impl<'a> Checked<'a> {
    fn new(out: &'a mut dyn Write, magic: &[u8; 8]) -> std::io::Result<Self> {
        let mut w = Checked { out, hash: Xxh3::new() };
        w.bytes(magic)?;
        w.u32(VERSION)?;
        Ok(w)
    }

    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.hash.update(b);
        self.out.write_all(b)
    }

    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn u64(&mut self, v: u64) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn finish(self) -> std::io::Result<()> {
        let sum = self.hash.digest();
        self.out.write_all(&sum.to_le_bytes())
    }
}

/// A whole file, its magic, version and checksum verified, read from the front.
struct CheckedRead<'p> {
    path: &'p Path,
    bytes: Vec<u8>,
    at: usize,
}

impl Checked<'_> {
    fn read<'p>(path: &'p Path, magic: &[u8; 8]) -> Result<CheckedRead<'p>, PipelineError> {
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| PipelineError::io(path, e))?;
        let r = CheckedRead { path, bytes, at: 0 };
        if r.bytes.len() < 20 || &r.bytes[..8] != magic {
            return Err(r.corrupt("not a file of this kind (bad magic)"));
        }
        let version = u32::from_le_bytes(r.bytes[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(r.corrupt(&format!("format version {version}; this dupgram reads {VERSION}")));
        }
        let (body, sum) = r.bytes.split_at(r.bytes.len() - 8);
        if xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != sum {
            return Err(r.corrupt("checksum mismatch (torn or damaged)"));
        }
        Ok(CheckedRead { at: 12, ..r })
    }
}

impl CheckedRead<'_> {
    fn corrupt(&self, what: &str) -> PipelineError {
        PipelineError::Corrupt(format!("{}: {what}", self.path.display()))
    }

    /// Bytes of body left (before the checksum).
    fn left(&self) -> usize {
        self.bytes.len() - 8 - self.at
    }

    fn take(&mut self, len: usize) -> Result<&[u8], PipelineError> {
        if len > self.left() {
            return Err(self.corrupt("truncated"));
        }
        self.at += len;
        Ok(&self.bytes[self.at - len..self.at])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], PipelineError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self) -> Result<u32, PipelineError> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, PipelineError> {
        self.array().map(u64::from_le_bytes)
    }

    /// A count of items of `item_bytes` each, checked against what is left.
    fn count(&mut self, item_bytes: usize) -> Result<usize, PipelineError> {
        let count = self.u64()?;
        match usize::try_from(count) {
            Ok(c) if c <= self.left() / item_bytes => Ok(c),
            _ => Err(self.corrupt("shorter than a count it holds says")),
        }
    }

    fn end(&self) -> Result<(), PipelineError> {
        if self.left() != 0 { Err(self.corrupt("trailing bytes")) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> DocTable {
        let mut t = DocTable::default();
        let (mut ids, mut ranges) = (String::new(), Vec::new());
        for (i, id) in ["a", "βeta", ""].iter().enumerate() {
            t.tokens.push(i as u32 * 10);
            t.hashes.push(u128::MAX / (i as u128 + 1));
            ranges.push(IdRange::new(ids.len() as u64, id.len() as u32));
            ids.push_str(id);
        }
        t.ids = DocIds::Memory { ids, ranges };
        t
    }

    #[test]
    fn kgram_parts_round_trip_and_refuse_damage_and_names_outside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part");
        let part = KgramPart {
            k: 50,
            options: 0xDEAD_BEEF,
            part: 2,
            documents: 3,
            tokens: 1 << 41,
            runs: vec![("exact-000000.dgr".into(), 12), ("exact-000001.dgr".into(), 0)],
        };
        let mut bytes = Vec::new();
        part.write_to(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(KgramPart::read_from(&path).unwrap(), part);
        for at in [3, 10, 30, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            std::fs::write(&path, &bad).unwrap();
            assert!(matches!(KgramPart::read_from(&path), Err(PipelineError::Corrupt(_))), "flip at {at}");
        }
        let outside = KgramPart { runs: vec![("../x.dgr".into(), 1)], ..part };
        let mut bytes = Vec::new();
        outside.write_to(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        assert!(KgramPart::read_from(&path).unwrap_err().to_string().contains("outside its directory"));
    }

    #[test]
    fn tables_round_trip_append_and_refuse_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs");
        let mut bytes = Vec::new();
        table().write_to(7, &mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let (first, read) = DocTable::read_from(&path).unwrap();
        assert_eq!(first, 7);
        assert_eq!((read.tokens.clone(), read.hashes.clone()), (table().tokens, table().hashes));
        assert_eq!([read.id(0).unwrap(), read.id(1).unwrap(), read.id(2).unwrap()], ["a", "βeta", ""]);
        let mut both = table();
        both.append(read).unwrap();
        assert_eq!(both.len(), 6);
        assert_eq!(both.id(4).unwrap(), "βeta");
        // A table whose IDs are not held is neither written nor joined.
        let unnamed = DocTable { ids: DocIds::Unnamed, ..table() };
        assert!(unnamed.write_to(0, &mut Vec::new()).is_err());
        assert!(both.append(DocTable { ids: DocIds::Unnamed, ..table() }).is_err());
        for at in [3, 10, 20, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            assert!(DocTable::read_from(&path).is_err(), "flipped byte {at} accepted");
        }
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        assert!(DocTable::read_from(&path).is_err());
    }

    #[test]
    fn totals_round_trip_and_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("totals");
        let part = BucketTotals {
            totals: IndexTotals { occurrences: vec![3, 0, 2], types: vec![2, 0, 1], ngrams: 2, total_occurrences: 5 },
            differing: vec![2],
        };
        let mut bytes = Vec::new();
        part.write_to(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let read = BucketTotals::read_from(&path).unwrap();
        assert_eq!(read.differing, [2]);
        let mut sum = IndexTotals::empty(3);
        sum.absorb(&read.totals).unwrap();
        sum.absorb(&part.totals).unwrap();
        assert_eq!(
            (sum.occurrences, sum.types, sum.ngrams, sum.total_occurrences),
            (vec![6, 0, 4], vec![4, 0, 2], 4, 10)
        );
        assert!(IndexTotals::empty(2).absorb(&part.totals).is_err());
        // A table is not a totals file.
        let mut docs = Vec::new();
        table().write_to(0, &mut docs).unwrap();
        std::fs::write(&path, &docs).unwrap();
        assert!(BucketTotals::read_from(&path).unwrap_err().to_string().contains("magic"));
    }

    #[test]
    fn common_counts_add_up_and_refuse_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("common");
        let mut bytes = Vec::new();
        write_common(&[3, 0, u32::MAX], &mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let mut sum = vec![1, 2, 3];
        add_common(&path, &mut sum).unwrap();
        assert_eq!(sum, [4, 2, u32::MAX]);
        // Another corpus's counts, damage, and another kind of file.
        let err = add_common(&path, &mut [0; 2]).unwrap_err().to_string();
        assert!(err.contains("counts of 3 documents, for a corpus of 2"), "{err}");
        for at in [3, 10, 20, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            assert!(add_common(&path, &mut [0; 3]).is_err(), "flipped byte {at} accepted");
        }
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        assert!(add_common(&path, &mut [0; 3]).is_err());
        let mut docs = Vec::new();
        table().write_to(0, &mut docs).unwrap();
        std::fs::write(&path, &docs).unwrap();
        assert!(add_common(&path, &mut [0; 3]).unwrap_err().to_string().contains("magic"));
    }

    #[test]
    fn an_occurrence_past_the_totals_documents_is_refused_counting_nothing() {
        let at = |doc: u64, pos: u64| (doc << 32) | pos;
        let mut totals = IndexTotals::empty(3);
        totals.add_ngram(&[at(10, 0), at(10, 4), at(12, 1)], 10).unwrap();
        assert_eq!((totals.occurrences.clone(), totals.types.clone()), (vec![2, 0, 1], vec![1, 0, 1]));
        let past = totals.add_ngram(&[at(11, 0), at(13, 0)], 10).unwrap_err();
        assert_eq!(past, DocPastTable { doc: 13, first_doc: 10, docs: 3 });
        // Before the first document too (a shard's day run numbered from an earlier one).
        assert_eq!(totals.add_ngram(&[at(9, 0)], 10).unwrap_err().doc, 9);
        assert_eq!((totals.occurrences, totals.ngrams, totals.total_occurrences), (vec![2, 0, 1], 1, 3));
        let err = past.in_file("bucket-0001.dgr").to_string();
        assert!(err.starts_with("bucket-0001.dgr: corrupt postings") && err.contains("document 13"), "{err}");
    }
}
