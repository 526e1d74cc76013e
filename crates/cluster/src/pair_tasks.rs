//! The tasks of a staged `pairs` job, after lexicon and vocab: the steps of
//! `dupgram_pipeline::PairPasses`, each over its part of the work.
//!
//! * **index** (per shard) — the index pass over the shard, its documents
//!   numbered after the earlier shards' (the lexicon tasks counted them):
//!   postings runs cut by bucket of n-grams, and the shard's document table;
//! * **postings** (per bucket) — merge the bucket's postings from every
//!   shard into its part of the duplicate-only index, with the per-document
//!   totals and the check of groups of identical documents over its n-grams;
//! * **candidates** (per bucket) — the pairs of documents sharing the
//!   bucket's n-grams, cut by slice of documents (eight per shard);
//! * **score** (as many as shards) — the stretch of slices that falls to it
//!   when they are shared out by the bytes of their candidates: merge their
//!   candidates from every bucket, score them against the index parts;
//! * **finish** — merge the ranges' kept pairs into `-o`, then the clusters.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use dupgram_lexicon::{Lexicon, Scope};
use dupgram_pipeline::output::{OutputFile, PairFiles, PairsSink, check_encoder_budget};
use dupgram_pipeline::{
    AfterCut, BucketTotals, DocTable, IndexPart, IndexTotals, PairPasses, PairsConfig, PairsStats, PipelineError,
    ScoreLayout, ShardCut, ShardDocuments, add_common, write_common,
};

use crate::error::ClusterError;
use crate::record::write_file;
use crate::stage::{
    PairsOutputs, ResolvedStreams, SLICES, Stage, TaskId, TaskRecord, keep_dir, link_runs, run_entries,
};

/// A candidates task's counts of the n-grams too common to make candidates,
/// beside its runs ([`dupgram_pipeline::Candidates::common`]).
const COMMON_FILE: &str = "common.counts";

/// What every task after the index merge knows of the whole corpus.
struct Corpus {
    table: DocTable,
    totals: IndexTotals,
    /// Each document's group's first document.
    rep_of: Vec<u32>,
    /// The documents of each shard: the scoring ranges.
    ranges: Vec<std::ops::Range<u32>>,
}

impl Stage<'_> {
    fn pairs_outputs(&self) -> Result<&PairsOutputs, ClusterError> {
        self.outputs.pairs.as_ref().ok_or_else(|| ClusterError::Plan("a pairs task needs the pairs options".into()))
    }

    /// The job's pair options over the stage's configuration.
    fn pairs_config(&self) -> Result<PairsConfig, ClusterError> {
        Ok(PairsConfig { base: self.config.clone(), ..self.pairs_outputs()?.config.clone() })
    }

    fn pairs_dir(&self, name: &str) -> Result<PathBuf, ClusterError> {
        let dir = self.work.path(&format!("pairs/{name}"));
        std::fs::create_dir_all(&dir).map_err(|e| ClusterError::io(&dir, e))?;
        Ok(dir)
    }

    fn shard_postings(&self, shard: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("postings")?.join(format!("shard-{shard:04}")))
    }

    fn shard_docs(&self, shard: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("docs")?.join(format!("shard-{shard:04}.docs")))
    }

    fn bucket_index(&self, bucket: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("index")?.join(format!("bucket-{bucket:04}.dgr")))
    }

    fn bucket_totals(&self, bucket: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("index")?.join(format!("bucket-{bucket:04}.totals")))
    }

    fn bucket_candidates(&self, bucket: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("candidates")?.join(format!("bucket-{bucket:04}")))
    }

    fn range_kept(&self, range: usize) -> Result<PathBuf, ClusterError> {
        Ok(self.pairs_dir("kept")?.join(format!("range-{range:04}")))
    }

    fn record_of_pairs(stats: PairsStats) -> TaskRecord {
        TaskRecord { pairs: Some(stats), ..Default::default() }
    }

    /// The index pass over a shard.
    pub(crate) fn index(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Index(shard);
        let (vocab, read, first_doc) = self.shard_start(shard, me)?;
        let target = self.shard_postings(shard)?;
        let scratch = self.scratch(target.parent().expect("under pairs/"), me)?;
        let config = self.pairs_config()?;
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        // Counts only (as runs): the streams name the words, no word is held.
        let lexicon = Lexicon::load_limited(&self.vocab_lexicon(), Scope::Repeated, 0, &mut |_, _| Ok(()))?;
        let count_passes = self.passes(scratch.path())?;
        let plan = count_passes.vocabulary_plan(lexicon.heap_bytes() as u64);
        let ResolvedStreams { renumbering, sides, streams } = self.resolve_streams(shard, &read, &plan)?;
        let documents = ShardDocuments::load(&self.shard_documents(shard))?;
        let sieve = if vocab.sieve { Some(self.load_sieve()?) } else { None };
        let mut stats = PairsStats::default();
        let cut = ShardCut { first_doc, buckets: &vocab.bounds };
        // The streams of every shard numbered apart: words seen once are named by them.
        let mut first_stream = 0;
        for earlier in 0..shard {
            first_stream += self.record(TaskId::Lexicon(earlier), me)?.streams.len();
        }
        let (runs, table) = passes.index_shard_streams(
            &streams,
            documents,
            &lexicon,
            (renumbering, sides),
            sieve,
            (cut, first_stream),
            (read.documents, read.tokens),
            &mut stats.index,
        )?;
        if table.len() as u64 != read.documents {
            return Err(PipelineError::Changed(format!(
                "shard {shard}: the lexicon task read {} documents, the index task indexed {}",
                read.documents,
                table.len()
            ))
            .into());
        }
        write_file(&self.shard_docs(shard)?, |out| table.write_to(first_doc, out))?;
        let entries = run_entries(&runs);
        keep_dir(scratch, &target)?;
        Ok(TaskRecord { runs: entries, ..Self::record_of_pairs(stats) })
    }

    /// Every shard's document table, in order: the corpus's.
    fn corpus_table(&self, me: TaskId) -> Result<(DocTable, Vec<std::ops::Range<u32>>), ClusterError> {
        let mut table = DocTable::default();
        let mut ranges = Vec::new();
        for shard in 0..self.plan.shards.len() {
            self.record(TaskId::Index(shard), me)?;
            let path = self.shard_docs(shard)?;
            let (first, part) = DocTable::read_from(&path)?;
            if first != table.len() as u64 {
                return Err(ClusterError::corrupt(&path, format!("starts at document {first}, not {}", table.len())));
            }
            let start = table.len() as u32;
            table.append(part)?;
            ranges.push(start..table.len() as u32);
        }
        Ok((table, ranges))
    }

    /// Merges a bucket's postings from every shard into its part of the index.
    pub(crate) fn postings(&self, bucket: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Postings(bucket);
        let scratch = self.scratch(&self.work.path("tmp"), me)?;
        let mut runs = Vec::new();
        for shard in 0..self.plan.shards.len() {
            let index = self.record(TaskId::Index(shard), me)?;
            let from = self.shard_postings(shard)?;
            runs.extend(link_runs(&index, bucket, &from, scratch.path(), &format!("s{shard:04}"))?);
        }
        let (table, _) = self.corpus_table(me)?;
        let config = self.pairs_config()?;
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        // Only the lexicon's identity names the index part: no word is held.
        let lexicon = Lexicon::load_limited(&self.vocab_lexicon(), Scope::Repeated, 0, &mut |_, _| Ok(()))?;
        let mut stats = PairsStats::default();
        let written = scratch.path().join("index.dgr");
        let part = passes.merge_postings(runs, &lexicon, &table, &written, &mut stats.index)?;
        write_file(&self.bucket_totals(bucket)?, |out| part.write_to(out))?;
        let target = self.bucket_index(bucket)?;
        std::fs::rename(&written, &target).map_err(|e| ClusterError::io(&target, e))?;
        Ok(Self::record_of_pairs(stats))
    }

    /// The corpus's documents, index totals and groups, from every index and postings task.
    fn corpus(&self, me: TaskId, passes: &PairPasses) -> Result<Corpus, ClusterError> {
        let (table, ranges) = self.corpus_table(me)?;
        let mut totals = IndexTotals::empty(table.len());
        let mut differing = Vec::new();
        for bucket in 0..self.plan.buckets {
            self.record(TaskId::Postings(bucket), me)?;
            let path = self.bucket_totals(bucket)?;
            let part = BucketTotals::read_from(&path)?;
            totals.absorb(&part.totals).map_err(|e| ClusterError::corrupt(&path, e.to_string()))?;
            differing.extend(part.differing);
        }
        let rep_of = passes.groups(&table, &totals, &differing)?;
        Ok(Corpus { table, totals, rep_of, ranges })
    }

    /// The candidate pairs of a bucket's n-grams, cut by slice of documents.
    pub(crate) fn candidates(&self, bucket: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Candidates(bucket);
        let target = self.bucket_candidates(bucket)?;
        let scratch = self.scratch(target.parent().expect("under pairs/"), me)?;
        let config = self.pairs_config()?;
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        let corpus = self.corpus(me, &passes)?;
        let slices: Vec<Range<u32>> =
            corpus.ranges.iter().flat_map(|r| split_by_weight(r.clone(), &corpus.totals.occurrences, SLICES)).collect();
        let layout = passes.layout(&corpus.table, &corpus.totals, &slices);
        let mut stats = PairsStats::default();
        let started = Instant::now();
        let candidates = passes.candidates(
            &[self.bucket_index(bucket)?],
            &corpus.rep_of,
            &corpus.table,
            &corpus.totals,
            &layout,
            &mut stats,
        )?;
        stats.seconds.candidates = started.elapsed().as_secs_f64();
        // Kept with the runs: the score tasks add up every bucket's.
        write_file(&scratch.path().join(COMMON_FILE), |out| write_common(&candidates.common, out))?;
        let entries = run_entries(&candidates.runs);
        keep_dir(scratch, &target)?;
        Ok(TaskRecord { runs: entries, layout: Some(layout), ..Self::record_of_pairs(stats) })
    }

    /// The layout every candidates task cut by; they must agree, since
    /// their keys name blocks of it.
    fn score_layout(&self, me: TaskId) -> Result<(ScoreLayout, Vec<TaskRecord>), ClusterError> {
        let mut records = Vec::new();
        for bucket in 0..self.plan.buckets {
            records.push(self.record(TaskId::Candidates(bucket), me)?);
        }
        let layouts: Vec<&ScoreLayout> = records.iter().filter_map(|r| r.layout.as_ref()).collect();
        match layouts.first() {
            Some(first) if layouts.len() == records.len() && layouts.iter().all(|l| l == first) => {
                Ok(((*first).clone(), records))
            }
            _ => Err(ClusterError::Plan(
                "the candidates tasks cut the documents differently (did they run with different --memory?); \
                 remove tasks/candidates-* and run them again"
                    .into(),
            )),
        }
    }

    /// Scores the candidates of a range of documents: the slices that fall
    /// to it when they are shared out by the bytes of their candidates.
    pub(crate) fn score(&self, range: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Score(range);
        let (layout, candidates) = self.score_layout(me)?;
        let weights = slice_weights(layout.ranges(), &candidates, |b| self.record_path(TaskId::Candidates(b)))?;
        let slices = share_out(&weights, self.plan.shards.len())[range].clone();
        let target = self.range_kept(range)?;
        let scratch = self.scratch(target.parent().expect("under pairs/"), me)?;
        let mut runs = Vec::new();
        for (bucket, record) in candidates.iter().enumerate() {
            let from = self.bucket_candidates(bucket)?;
            for slice in slices.clone() {
                let prefix = format!("b{bucket:04}");
                runs.extend(link_runs(record, slice, &from, scratch.path(), &prefix)?);
            }
        }
        let mut parts = Vec::new();
        let mut first_id = 0u64;
        for bucket in 0..self.plan.buckets {
            let postings = self.record(TaskId::Postings(bucket), me)?;
            let first = u32::try_from(first_id)
                .map_err(|_| PipelineError::Usage("more than 2^32 duplicate n-grams: use a larger n".into()))?;
            parts.push(IndexPart { path: self.bucket_index(bucket)?, first_id: first });
            first_id += postings.pairs.map_or(0, |p| p.index.duplicate_ngrams);
        }
        let config = self.pairs_config()?;
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        let corpus = self.corpus(me, &passes)?;
        if layout.docs() as usize != corpus.table.len() {
            let path = self.record_path(TaskId::Candidates(0));
            let what = format!("a layout of {} documents, for a corpus of {}", layout.docs(), corpus.table.len());
            return Err(ClusterError::corrupt(&path, what));
        }
        let mut common = vec![0u32; corpus.table.len()];
        for bucket in 0..self.plan.buckets {
            add_common(&self.bucket_candidates(bucket)?.join(COMMON_FILE), &mut common)?;
        }
        let mut stats = PairsStats::default();
        let started = Instant::now();
        let (table, totals, rep_of) = (&corpus.table, &corpus.totals, &corpus.rep_of);
        // The other score tasks read the same index parts.
        let after = AfterCut::KeepIndex;
        let kept =
            passes.score(slices, runs, Some(&common), &parts, after, table, totals, rep_of, &layout, &mut stats)?;
        stats.seconds.scoring = started.elapsed().as_secs_f64();
        let entries = run_entries(&kept.into_iter().map(|run| (range, run)).collect::<Vec<_>>());
        keep_dir(scratch, &target)?;
        Ok(TaskRecord { runs: entries, ..Self::record_of_pairs(stats) })
    }

    /// Writes the kept pairs of every range in document order, then the clusters.
    pub(crate) fn finish_pairs(&self) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Finish;
        let outputs = self.pairs_outputs()?;
        // Open outputs before any work, so a bad path fails at once.
        let clusters = outputs.clusters.as_deref().map(|p| OutputFile::create(Some(p))).transpose()?;
        let mut files = PairFiles::new(OutputFile::create(outputs.output.as_deref())?, outputs.format, clusters)?;
        check_encoder_budget(self.config.memory, &[files.encoder_bytes()])?;
        let scratch = self.scratch(&self.work.path("tmp"), me)?;
        let mut kept = Vec::new();
        for range in 0..self.plan.shards.len() {
            let score = self.record(TaskId::Score(range), me)?;
            kept.extend(link_runs(&score, range, &self.range_kept(range)?, scratch.path(), &format!("r{range:04}"))?);
        }
        let config = self.pairs_config()?;
        let passes = PairPasses::new(&config, self.control, scratch.path())?;
        let corpus = self.corpus(me, &passes)?;
        let mut stats = PairsStats::default();
        let started = Instant::now();
        passes.output(kept, &corpus.table, &corpus.totals, &corpus.rep_of, &mut files, &mut stats)?;
        files.finish()?;
        stats.seconds.output = started.elapsed().as_secs_f64();
        dupgram_pipeline::index_fraction(&mut stats.index, &corpus.table, config.base.n as u32);
        Ok(Self::record_of_pairs(stats))
    }
}

/// The bytes of candidates of each of `ranges` slices, from the candidates
/// tasks' records (`path_of` names bucket `b`'s record in errors).
fn slice_weights(
    ranges: usize,
    records: &[TaskRecord],
    path_of: impl Fn(usize) -> PathBuf,
) -> Result<Vec<u64>, ClusterError> {
    let mut weights = vec![0u64; ranges];
    for (bucket, record) in records.iter().enumerate() {
        for run in &record.runs {
            let corrupt = |what: String| ClusterError::corrupt(&path_of(bucket), what);
            let weight = weights
                .get_mut(run.bucket)
                .ok_or_else(|| corrupt(format!("a run of slice {}, past the layout's {ranges}", run.bucket)))?;
            // Run sizes are the record's word: no real job's add up past 2^64 bytes.
            *weight = weight
                .checked_add(run.bytes)
                .ok_or_else(|| corrupt(format!("candidate runs of slice {} add up past 2^64 bytes", run.bucket)))?;
        }
    }
    Ok(weights)
}

/// Cuts `docs` into `parts` consecutive ranges of about equal weight.
fn split_by_weight(docs: Range<u32>, weights: &[u32], parts: usize) -> Vec<Range<u32>> {
    let total: u64 = weights[docs.start as usize..docs.end as usize].iter().map(|&w| u64::from(w)).sum();
    let mut cuts = Vec::with_capacity(parts);
    let (mut start, mut seen) = (docs.start, 0u64);
    for d in docs.clone() {
        seen += u64::from(weights[d as usize]);
        let part = cuts.len() as u64 + 1;
        if cuts.len() + 1 < parts && seen * parts as u64 >= total * part && d + 1 > start {
            cuts.push(start..d + 1);
            start = d + 1;
        }
    }
    cuts.push(start..docs.end);
    cuts
}

/// Shares `weights.len()` consecutive items out among `tasks` tasks, each
/// a consecutive stretch of about equal weight (some may get none).
fn share_out(weights: &[u64], tasks: usize) -> Vec<Range<usize>> {
    if weights.iter().all(|&w| w == 0) && !weights.is_empty() {
        // Nothing to weigh by: as many items each.
        return share_out(&vec![1; weights.len()], tasks);
    }
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let mut stretches = Vec::with_capacity(tasks);
    let (mut start, mut seen) = (0usize, 0u128);
    for (i, &w) in weights.iter().enumerate() {
        seen += u128::from(w);
        // Close the stretch once it reaches its share of the total.
        while stretches.len() + 1 < tasks && seen * tasks as u128 >= total * (stretches.len() as u128 + 1) {
            stretches.push(start..i + 1);
            start = i + 1;
        }
    }
    stretches.push(start..weights.len());
    while stretches.len() < tasks {
        stretches.push(weights.len()..weights.len());
    }
    stretches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_shares_are_even_and_cover_everything() {
        assert_eq!(split_by_weight(0..4, &[1, 1, 1, 1], 2), [0..2, 2..4]);
        let zero = split_by_weight(10..13, &[0; 13], 4);
        assert_eq!(zero.iter().flat_map(|r| r.clone()).collect::<Vec<_>>(), [10, 11, 12]);
        assert_eq!(split_by_weight(3..3, &[0; 3], 8), vec![std::ops::Range { start: 3, end: 3 }]);
        let heavy = split_by_weight(0..5, &[9, 1, 1, 1, 1], 2);
        assert_eq!(heavy, [0..1, 1..5]);
        assert_eq!(share_out(&[4, 4, 4, 4], 2), [0..2, 2..4]);
        assert_eq!(share_out(&[10, 1, 1, 1, 1, 1], 2), [0..1, 1..6]);
        assert_eq!(share_out(&[0, 0], 3), [0..1, 1..2, 2..2]);
        assert_eq!(share_out(&[], 2), [0..0, 0..0]);
        let shares = share_out(&[5, 3, 8, 1, 1, 9, 2, 2], 3);
        assert_eq!(shares.len(), 3);
        assert_eq!(shares.iter().flat_map(|r| r.clone()).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn slice_weights_past_2_to_64_bytes_or_past_the_layout_are_refused_naming_the_record() {
        use crate::stage::RunEntry;
        let record = |runs: &[(usize, u64)]| TaskRecord {
            runs: runs.iter().map(|&(bucket, bytes)| RunEntry { bucket, file: "c.dgr".into(), bytes }).collect(),
            ..TaskRecord::default()
        };
        let path_of = |b: usize| PathBuf::from(format!("tasks/candidates-{b:04}.json"));
        let fine = [record(&[(0, 5), (1, 7)]), record(&[(1, u64::MAX - 7)])];
        assert_eq!(slice_weights(2, &fine, path_of).unwrap(), [5, u64::MAX]);
        let huge = [record(&[(0, 5), (1, 7)]), record(&[(1, u64::MAX - 6)])];
        let err = slice_weights(2, &huge, path_of).unwrap_err().to_string();
        assert!(err.contains("candidates-0001.json") && err.contains("2^64"), "{err}");
        let err = slice_weights(1, &fine, path_of).unwrap_err().to_string();
        assert!(err.contains("candidates-0000.json") && err.contains("slice 1"), "{err}");
    }
}
