//! Repeated n-gram occurrences in corpus order, on disk: what the decision
//! passes of `dedup` read beside the text when no per-document table is
//! held (`--unit span` always; the other units when the documents are too
//! many for their tables, see `crate::index::by_doc`).
//!
//! Each occurrence is a *place* (a `u64` that only ever grows: a corpus
//! position for spans, a document's number above bit 32 and the position in
//! it below for the other units) and the number of its n-gram. The file
//! holds, per occurrence, the place's gap from the one before and the
//! number, two LEB128 varints: most gaps are 1 and most numbers take fewer
//! bytes than a `u32`, so an occurrence takes about 5 bytes. It is a
//! temporary file of one job, written and read by the same build in the
//! same run: it has no header, and a file that ends inside an occurrence
//! is an error.

use std::io::{BufRead, BufReader, BufWriter};
use std::path::{Path, PathBuf};

use dupgram_dedup::NgramAt;
use dupgram_jobkit::error::PipelineError;
use dupgram_lexicon::{read_varint, write_varint};

/// Writes occurrences in increasing place order.
pub(crate) struct OccurrenceWriter {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    /// Occurrences written.
    pub count: u64,
    /// The place written last (the gaps are from it).
    last: u64,
}

impl OccurrenceWriter {
    pub fn create(path: &Path) -> Result<Self, PipelineError> {
        let file = std::fs::File::create(path).map_err(|e| PipelineError::io(path, e))?;
        Ok(OccurrenceWriter { out: BufWriter::with_capacity(1 << 16, file), path: path.into(), count: 0, last: 0 })
    }

    /// Adds n-gram `number`'s occurrence at `place`, no lower than the place before.
    pub fn push(&mut self, place: u64, number: u64) -> Result<(), PipelineError> {
        let gap = place.checked_sub(self.last).ok_or_else(|| {
            PipelineError::Usage(format!("internal error: occurrence place {place} after {}", self.last))
        })?;
        let written = write_varint(&mut self.out, gap).and_then(|()| write_varint(&mut self.out, number));
        written.map_err(|e| PipelineError::io(&self.path, e))?;
        self.last = place;
        self.count += 1;
        Ok(())
    }

    /// Flushes the file; its path and bytes.
    pub fn finish(self) -> Result<(PathBuf, u64), PipelineError> {
        let OccurrenceWriter { out, path, .. } = self;
        let file = out.into_inner().map_err(|e| PipelineError::io(&path, e.into_error()))?;
        let bytes = file.metadata().map_err(|e| PipelineError::io(&path, e))?.len();
        Ok((path, bytes))
    }
}

/// An occurrence file read back in order, a document at a time.
pub(crate) struct OccurrenceReader {
    reader: BufReader<std::fs::File>,
    path: PathBuf,
    /// The next occurrence, read but not yet taken.
    next: Option<(u64, u32)>,
    /// The place read last (the next gap is from it).
    last: u64,
}

impl OccurrenceReader {
    pub fn open(path: &Path) -> Result<Self, PipelineError> {
        let file = std::fs::File::open(path).map_err(|e| PipelineError::io(path, e))?;
        let mut this = OccurrenceReader {
            reader: BufReader::with_capacity(1 << 16, file),
            path: path.into(),
            next: None,
            last: 0,
        };
        this.advance()?;
        Ok(this)
    }

    fn advance(&mut self) -> Result<(), PipelineError> {
        let io = |e| PipelineError::io(&self.path, e);
        if self.reader.fill_buf().map_err(io)?.is_empty() {
            self.next = None;
            return Ok(());
        }
        let gap = read_varint(&mut self.reader).map_err(io)?;
        let number = read_varint(&mut self.reader).map_err(io)?;
        let corrupt = |what: &str| PipelineError::Corrupt(format!("{}: {what}", self.path.display()));
        let number = u32::try_from(number).map_err(|_| corrupt("an n-gram number past 2³²"))?;
        self.last = self.last.checked_add(gap).ok_or_else(|| corrupt("a place past 2⁶⁴"))?;
        self.next = Some((self.last, number));
        Ok(())
    }

    /// The occurrences of the document whose `tokens` places start at
    /// `start`, as positions in it, in file order. An occurrence left
    /// before `start` belongs to no document read: the text read back is
    /// not the text indexed.
    pub fn take_document(&mut self, start: u64, tokens: u32, into: &mut Vec<NgramAt>) -> Result<(), PipelineError> {
        into.clear();
        while let Some((place, number)) = self.next {
            if place >= start + u64::from(tokens) {
                break;
            }
            let pos = place.checked_sub(start).ok_or_else(|| {
                PipelineError::Changed(format!(
                    "a repeated n-gram was indexed at place {place}, which no document read back holds"
                ))
            })?;
            into.push(NgramAt { pos: pos as u32, id: number });
            self.advance()?;
        }
        Ok(())
    }

    /// Whether every occurrence was taken.
    pub fn at_end(&mut self) -> Result<bool, PipelineError> {
        Ok(self.next.is_none() && self.reader.fill_buf().map_err(|e| PipelineError::io(&self.path, e))?.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(places: &[(u64, u64)]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = OccurrenceWriter::create(&dir.path().join("o.bin")).unwrap();
        for &(place, number) in places {
            w.push(place, number).unwrap();
        }
        assert_eq!(w.count, places.len() as u64);
        let (path, bytes) = w.finish().unwrap();
        assert!(bytes > 0 || places.is_empty());
        (dir, path)
    }

    #[test]
    fn documents_take_their_occurrences_and_nothing_else() {
        let doc = |d: u64, pos: u64| (d << 32) | pos;
        let (_dir, path) = written(&[(doc(0, 1), 7), (doc(0, 1), 9), (doc(2, 0), 3), (doc(2, 5), 1 << 31)]);
        let mut r = OccurrenceReader::open(&path).unwrap();
        let mut got = Vec::new();
        r.take_document(doc(0, 0), 4, &mut got).unwrap();
        assert_eq!(got, [NgramAt { pos: 1, id: 7 }, NgramAt { pos: 1, id: 9 }]);
        r.take_document(doc(1, 0), 10, &mut got).unwrap();
        assert!(got.is_empty());
        assert!(!r.at_end().unwrap());
        r.take_document(doc(2, 0), 6, &mut got).unwrap();
        assert_eq!(got, [NgramAt { pos: 0, id: 3 }, NgramAt { pos: 5, id: 1 << 31 }]);
        assert!(r.at_end().unwrap());
    }

    #[test]
    fn an_occurrence_past_its_document_is_a_changed_text() {
        // Document 0 read back with 2 tokens where an occurrence sits at position 3.
        let (_dir, path) = written(&[(3, 1), (1 << 32, 2)]);
        let mut r = OccurrenceReader::open(&path).unwrap();
        let mut got = Vec::new();
        r.take_document(0, 2, &mut got).unwrap();
        let err = r.take_document(1 << 32, 4, &mut got).unwrap_err();
        assert!(matches!(err, PipelineError::Changed(_)), "{err}");
    }

    #[test]
    fn places_that_go_back_or_a_cut_file_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = OccurrenceWriter::create(&dir.path().join("o.bin")).unwrap();
        w.push(10, 1).unwrap();
        assert!(w.push(9, 1).is_err());
        let (_cut, path) = written(&[(300, 70_000)]);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(OccurrenceReader::open(&path).is_err());
    }
}
