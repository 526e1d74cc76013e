//! A kept state with positions (`--keep-postings`): where every n-gram of
//! the corpus occurs, not only how often, so `dupgram update --pairs` can
//! name the older documents a new one shares text with and score the pair
//! without reading the old corpus again.
//!
//! The tasks are those of a kept count with the index pass of `pairs` in
//! place of the count pass:
//!
//! * **map** (per shard) — the index pass over the shard with every word
//!   known (no sieve: unique n-grams are kept too), documents numbered
//!   after the earlier shards': postings runs cut by bucket, and the shard's
//!   document table;
//! * **reduce** (per bucket) — merge the postings into the bucket's state
//!   segment (a postings run: each n-gram with its occurrences), write the
//!   duplicates as a count would, and add up per document how often it
//!   repeats its own n-grams (for `|S_X|`);
//! * **finish** — the state's document table (`docs-0000.table`, the
//!   format of `dupgram_pipeline`'s `parts`) and per-document totals
//!   (`docs-0000.totals`) beside the segments.
//!
//! Each update adds its documents' table and totals as `docs-GGGG.*` of its
//! generation, and links the older ones in, so every generation holds the
//! table of the whole corpus.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_lexicon::{Lexicon, Scope};
use dupgram_pipeline::output::DupTsvWriter;
use dupgram_pipeline::{
    BucketTotals, DocTable, IndexTotals, NgramStats, PairPasses, PairsConfig, PipelineError, RunFile, ShardCut,
    run_names,
};
use dupgram_runs::{RunHeader, RunWriter};

use crate::error::ClusterError;
use crate::record::write_file;
use crate::stage::{Stage, TaskId, TaskRecord, keep_dir, run_entries};
use crate::state::{docs_table, docs_totals};

/// A shard's document table, beside its runs.
const SHARD_TABLE: &str = "docs.table";

impl Stage<'_> {
    /// The index pass over a shard, every n-gram kept.
    pub(crate) fn map_postings(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Map(shard);
        let (vocab, read, first_doc) = self.shard_start(shard, me)?;
        let scratch = self.scratch(&self.work.path("runs"), me)?;
        let config = PairsConfig::new(self.config.clone());
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        let lexicon = Lexicon::load(&self.vocab_lexicon(), Scope::All)?;
        let started = Instant::now();
        let mut index = dupgram_pipeline::IndexStats::default();
        let cut = ShardCut { first_doc, buckets: &vocab.bounds };
        let (runs, table) = passes.index_shard(&self.plan.shard_inputs(shard), &lexicon, None, cut, &mut index)?;
        if index.tokens != read.tokens || index.documents != read.documents {
            return Err(PipelineError::Changed(format!(
                "shard {shard}: the lexicon task read {} documents and {} tokens, the map task {} and {}",
                read.documents, read.tokens, index.documents, index.tokens
            ))
            .into());
        }
        write_file(&scratch.path().join(SHARD_TABLE), |out| table.write_to(first_doc, out))?;
        let n = self.config.n as u32;
        let positions: u64 = table.tokens.iter().map(|&t| u64::from(t.saturating_sub(n - 1))).sum();
        let mut stats = NgramStats {
            ngrams: positions,
            sorted_ngrams: positions,
            runs_written: runs.len() as u64,
            run_bytes: runs.iter().map(|(_, r)| r.bytes).sum(),
            ..NgramStats::default()
        };
        stats.seconds.count = started.elapsed().as_secs_f64();
        let entries = run_entries(&runs);
        keep_dir(scratch, &self.work.path(&format!("runs/shard-{shard:04}")))?;
        Ok(TaskRecord { stats, runs: entries, ..Default::default() })
    }

    /// Merges a bucket's postings runs into its state segment and its duplicates.
    pub(crate) fn reduce_postings(
        &self,
        bucket: usize,
        runs: Vec<RunFile>,
        scratch: &Path,
        writer: &mut DupTsvWriter,
        stats: &mut NgramStats,
    ) -> Result<(), ClusterError> {
        let passes = self.passes(scratch)?;
        let lexicon = Lexicon::load(&self.vocab_lexicon(), Scope::All)?;
        let mut documents = 0;
        for shard in 0..self.plan.shards.len() {
            documents += self.record(TaskId::Lexicon(shard), TaskId::Reduce(bucket))?.documents;
        }
        let tmp = scratch.join("state.dgr");
        let header = RunHeader::postings(self.config.n as u8, lexicon.identity());
        let mut sink = StateSink {
            state: RunWriter::create(&tmp, header)?,
            dups: writer,
            lexicon: &lexicon,
            min_count: self.config.min_count,
            totals: IndexTotals::empty(documents as usize),
            stats,
            source: run_names(&runs),
        };
        sink.stats.merge_bytes = passes.merge_runs(runs, header, &lexicon, &mut sink)?;
        let StateSink { state, totals, .. } = sink;
        state.finish()?;
        let parts = self.work.path("state/parts");
        write_file(&parts.join(format!("totals-{bucket:04}")), |out| {
            BucketTotals { totals, differing: Vec::new() }.write_to(out)
        })?;
        let part = parts.join(format!("bucket-{bucket:04}.dgr"));
        std::fs::rename(&tmp, &part).map_err(|e| ClusterError::io(&part, e))
    }

    /// The first generation's document table and totals, from the shards' tables and the buckets' totals.
    pub(crate) fn finish_postings_state(&self, parts: &Path) -> Result<(), ClusterError> {
        let mut table = DocTable::default();
        for shard in 0..self.plan.shards.len() {
            let path = self.work.path(&format!("runs/shard-{shard:04}/{SHARD_TABLE}"));
            let (first, part) = DocTable::read_from(&path)?;
            if first != table.len() as u64 {
                return Err(ClusterError::corrupt(&path, format!("starts at document {first}, not {}", table.len())));
            }
            table.append(part)?;
        }
        let mut totals = IndexTotals::empty(table.len());
        let bucket_totals: Vec<PathBuf> =
            (0..self.plan.buckets).map(|b| parts.join(format!("totals-{b:04}"))).collect();
        for path in &bucket_totals {
            let part = BucketTotals::read_from(path)?;
            totals.absorb(&part.totals).map_err(|e| ClusterError::corrupt(path, e.to_string()))?;
        }
        write_file(&parts.join(docs_table(0)), |out| table.write_to(0, out))?;
        write_file(&parts.join(docs_totals(0)), |out| BucketTotals { totals, differing: Vec::new() }.write_to(out))?;
        for path in bucket_totals {
            std::fs::remove_file(&path).map_err(|e| ClusterError::io(&path, e))?;
        }
        Ok(())
    }
}

/// Writes a bucket's merged postings to its state segment, its duplicates
/// to the bucket's output, and counts each document's occurrences.
pub(crate) struct StateSink<'a> {
    pub state: RunWriter<std::io::BufWriter<std::fs::File>>,
    pub dups: &'a mut DupTsvWriter,
    pub lexicon: &'a Lexicon,
    pub min_count: u64,
    pub totals: IndexTotals,
    pub stats: &'a mut NgramStats,
    /// The postings runs merged, named in errors.
    pub source: String,
}

impl dupgram_merge::MergeSink for StateSink<'_> {
    type Error = PipelineError;

    fn accept(&mut self, ids: &[u32], count: u64, occurrences: &[u64]) -> Result<(), PipelineError> {
        self.state.push_postings(ids, occurrences)?;
        self.totals.add_ngram(occurrences, 0).map_err(|e| e.in_file(&self.source))?;
        if count >= 2 {
            self.stats.duplicate_types += 1;
            self.stats.duplicate_occurrences += count;
        }
        if count >= self.min_count {
            self.stats.output_ngrams += 1;
            self.dups.write(self.lexicon, ids, count)?;
        }
        Ok(())
    }
}
