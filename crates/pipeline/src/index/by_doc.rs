//! The duplicate-only index sorted by document, on disk: how `dedup` gets
//! each document's occurrences when its documents are too many for the
//! tables the other ways hold (the merge's per-document totals, the block
//! plan, the lists), so the number of documents bounds nothing in memory.
//!
//! 1. Each bucket's index merge, instead of writing the index file, hands
//!    every occurrence of a duplicate n-gram to an out-of-core sort
//!    ([`UnitSort`]) keyed by (document, position), with the n-gram's
//!    rank in its bucket and the bucket's *slot* (its place among all the
//!    parts' buckets) as the value. Its chunk is a quarter of the working
//!    memory, shared by the buckets merged at once. A bucket's first ID is
//!    only known once the buckets before it are merged: the slot stands for
//!    it until then.
//! 2. [`ByDoc::write_occurrences`] merges the sorted runs of every slot into
//!    an occurrence file (`crate::occurrence_file`), the slot and rank turned
//!    into the n-gram's ID (the slot's first ID plus the rank). Keys come in
//!    (document, position) order and each key's values in (slot, rank)
//!    order, so a document's occurrences are sorted by position, then ID:
//!    the order the decisions walk gathered lists and index blocks in.
//! 3. The decisions read the file a document at a time beside the text.
//!
//! What memory holds is the sort's chunk, the merge's buffers and the
//! marker's bit per duplicate n-gram: nothing per document. The price is a
//! sort of every duplicate occurrence on disk (about 10 bytes each in the
//! runs, 5 in the occurrence file), where the in-memory ways write the
//! index once and read it back by block.

use std::path::{Path, PathBuf};

use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::unit_sort::UnitSort;
use dupgram_merge::{MergeSink, RunFile};

use crate::occurrence_file::OccurrenceWriter;

/// Tag of the runs sorted by document.
pub(crate) const BY_DOC_RUNS: u64 = 0xB7D0_C000;

/// The sort key of an occurrence (`document << 32 | position`).
pub(super) fn key(occurrence: u64) -> [u32; 4] {
    [(occurrence >> 32) as u32, occurrence as u32, 0, 0]
}

/// The value sorted with an occurrence: the n-gram's rank in its bucket, and the bucket's slot.
pub(super) fn value(slot: usize, rank: u32) -> u64 {
    ((slot as u64) << 32) | u64::from(rank)
}

/// The index of a job, sorted by document: the runs of every bucket's
/// sort, and each slot's first ID.
#[derive(Debug, Default)]
pub(crate) struct ByDoc {
    pub runs: Vec<RunFile>,
    pub first_ids: Vec<u32>,
}

/// The index's occurrences in document order, in a file.
pub(crate) struct SortedOccurrences {
    pub path: PathBuf,
    pub occurrences: u64,
    pub bytes: u64,
}

impl ByDoc {
    /// Merges the runs, at most `fan_in` at a time, into an occurrence file
    /// in `work` (place: `document << 32 | position`; number: the n-gram's
    /// ID). The runs go from the disk as the merge reads them.
    pub fn write_occurrences(
        self,
        work: &Path,
        fan_in: usize,
        control: &Control,
    ) -> Result<SortedOccurrences, PipelineError> {
        control.start_pass("sorting the index by document", None);
        let out = OccurrenceWriter::create(&work.join("by-doc.bin"))?;
        let mut sink = ByDocSink { out, first_ids: &self.first_ids };
        let sorted = UnitSort::sorted(work, self.runs, BY_DOC_RUNS).named("by-doc".into());
        sorted.merge(fan_in, &mut sink, control)?;
        let occurrences = sink.out.count;
        let (path, bytes) = sink.out.finish()?;
        Ok(SortedOccurrences { path, occurrences, bytes })
    }
}

/// Writes each merged occurrence with its n-gram's ID.
struct ByDocSink<'f> {
    out: OccurrenceWriter,
    first_ids: &'f [u32],
}

impl MergeSink for ByDocSink<'_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, values: &[u64]) -> Result<(), PipelineError> {
        let place = (u64::from(key[0]) << 32) | u64::from(key[1]);
        for &value in values {
            let slot = (value >> 32) as usize;
            let Some(&first) = self.first_ids.get(slot) else {
                return Err(PipelineError::Corrupt(format!(
                    "an occurrence of index bucket {slot}, of {} buckets",
                    self.first_ids.len()
                )));
            };
            let id = u64::from(first) + (value & u64::from(u32::MAX));
            self.out.push(place, id)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occurrence_file::OccurrenceReader;
    use dupgram_dedup::NgramAt;

    #[test]
    fn occurrences_come_back_by_document_then_position_then_id() {
        let dir = tempfile::tempdir().unwrap();
        let at = |doc: u64, pos: u64| (doc << 32) | pos;
        // Two buckets' sorts (slots 0 and 1), their runs cut small.
        let mut runs = Vec::new();
        for (slot, items) in [
            (0usize, vec![(at(1, 4), 0u32), (at(0, 2), 1), (at(1, 0), 1)]),
            (1, vec![(at(0, 2), 0), (at(1, 4), 2), (at(0, 0), 1)]),
        ] {
            let mut sort =
                UnitSort::new(dir.path(), 1 << 20, Some(2), BY_DOC_RUNS).unwrap().named(format!("by-doc-{slot}"));
            for (occurrence, rank) in items {
                sort.push(key(occurrence), value(slot, rank)).unwrap();
            }
            runs.extend(sort.finish().unwrap().into_runs());
        }
        assert!(runs.len() >= 4, "{} runs", runs.len());
        // The first bucket held 10 n-grams.
        let by_doc = ByDoc { runs, first_ids: vec![0, 10] };
        let sorted = by_doc.write_occurrences(dir.path(), 3, &Control::default()).unwrap();
        assert_eq!(sorted.occurrences, 6);
        let mut reader = OccurrenceReader::open(&sorted.path).unwrap();
        let mut doc = Vec::new();
        reader.take_document(0, 5, &mut doc).unwrap();
        let ngram = |pos, id| NgramAt { pos, id };
        assert_eq!(doc, [ngram(0, 11), ngram(2, 1), ngram(2, 10)]);
        reader.take_document(1 << 32, 5, &mut doc).unwrap();
        assert_eq!(doc, [ngram(0, 1), ngram(4, 0), ngram(4, 12)]);
        assert!(reader.at_end().unwrap());
    }

    #[test]
    fn an_occurrence_of_a_bucket_past_the_index_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let mut sort = UnitSort::new(dir.path(), 1 << 20, None, BY_DOC_RUNS).unwrap();
        sort.push(key(7), value(3, 0)).unwrap();
        let by_doc = ByDoc { runs: sort.finish().unwrap().into_runs(), first_ids: vec![0, 4] };
        let err = by_doc.write_occurrences(dir.path(), 2, &Control::default()).err().unwrap();
        assert!(matches!(err, PipelineError::Corrupt(_)), "{err}");
    }
}
