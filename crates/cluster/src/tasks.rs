//! The tasks of a staged count, each a function of the work directory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_lexicon::{Lexicon, LexiconBuilder, Scope};
use dupgram_pipeline::output::{DupTsvWriter, OutputFile, PairFormat};
use dupgram_pipeline::{
    Control, NgramConfig, NgramStats, PairsConfig, PairsStats, Passes, PipelineError, RunFile, ScoreLayout, Sieve,
    cpu_seconds, peak_rss,
};
use dupgram_runs::{RunHeader, RunWriter};
use serde::{Deserialize, Serialize};

use crate::record::{read_record, write_file, write_record};
use crate::{ClusterError, JobPlan, WorkDir, stats};

/// One task of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskId {
    Lexicon(usize),
    Vocab,
    Map(usize),
    Reduce(usize),
    /// `pairs` jobs, after vocab: the index pass over a shard.
    Index(usize),
    /// The index merge of a bucket of n-grams.
    Postings(usize),
    /// The candidate pairs of a bucket's n-grams.
    Candidates(usize),
    /// The scoring of a share of the documents (one per shard).
    Score(usize),
    Finish,
}

impl TaskId {
    /// Its name in the manifest and in messages: `map-0003`.
    pub fn name(&self) -> String {
        match self {
            TaskId::Lexicon(i) => format!("lexicon-{i:04}"),
            TaskId::Vocab => "vocab".into(),
            TaskId::Map(i) => format!("map-{i:04}"),
            TaskId::Reduce(i) => format!("reduce-{i:04}"),
            TaskId::Index(i) => format!("index-{i:04}"),
            TaskId::Postings(i) => format!("postings-{i:04}"),
            TaskId::Candidates(i) => format!("candidates-{i:04}"),
            TaskId::Score(i) => format!("score-{i:04}"),
            TaskId::Finish => "finish".into(),
        }
    }

    /// Every task of a job, in an order that runs each after what it needs.
    pub fn all(plan: &JobPlan) -> Vec<TaskId> {
        let (shards, buckets) = (plan.shards.len(), plan.buckets);
        let mut tasks: Vec<TaskId> = (0..shards).map(TaskId::Lexicon).chain([TaskId::Vocab]).collect();
        if plan.command == "pairs" {
            tasks.extend((0..shards).map(TaskId::Index));
            tasks.extend((0..buckets).map(TaskId::Postings));
            tasks.extend((0..buckets).map(TaskId::Candidates));
            tasks.extend((0..shards).map(TaskId::Score));
        } else {
            tasks.extend((0..shards).map(TaskId::Map));
            tasks.extend((0..buckets).map(TaskId::Reduce));
        }
        tasks.push(TaskId::Finish);
        tasks
    }
}

/// What running a task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskOutcome {
    Ran,
    /// Its record was there already: finished by an earlier run.
    AlreadyDone,
}

/// A run file of a task's output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunEntry {
    /// The bucket of n-grams it holds (map, index), or the range of
    /// documents whose pairs it holds (candidates).
    pub bucket: usize,
    /// Name in the task's run directory.
    pub file: String,
    pub bytes: u64,
}

/// The manifest entry of a finished task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub task: String,
    /// This task's part of the job's summary.
    pub stats: NgramStats,
    /// Lexicon tasks: tokens and documents read, to check the map task's reading against.
    pub tokens: u64,
    pub documents: u64,
    /// Lexicon and vocab tasks: whether they left a sieve.
    pub sieve: bool,
    /// Vocab: the first word ID of every bucket after the first.
    pub bounds: Vec<u32>,
    /// Map, index, candidates, score: the runs written; map: their entries in all.
    pub runs: Vec<RunEntry>,
    pub entries: u64,
    /// CPU seconds the task took, all threads.
    #[serde(default)]
    pub cpu: f64,
    /// Tasks of `pairs` jobs: this task's part of the pairs summary.
    #[serde(default)]
    pub pairs: Option<PairsStats>,
    /// Candidates: how the documents are cut for scoring.
    #[serde(default)]
    pub layout: Option<ScoreLayout>,
}

/// Runs the tasks of one job.
pub struct Stage<'a> {
    pub(crate) work: &'a WorkDir,
    pub(crate) plan: &'a JobPlan,
    /// The job's options, rebuilt from its command line; its inputs are the
    /// whole corpus (sizes such as the sieve's are derived from them).
    pub(crate) config: &'a NgramConfig,
    pub(crate) control: &'a Control,
    pub(crate) outputs: &'a Outputs,
}

/// Where the finish task puts the job's results.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The duplicates (compressed when the name ends in `.zst`); standard output when `None`.
    pub dups: Option<PathBuf>,
    /// A copy of the job's lexicon.
    pub lexicon: Option<PathBuf>,
    /// `pairs` jobs: what to keep and where it goes.
    pub pairs: Option<PairsOutputs>,
}

/// What the finish task of a `pairs` job writes, and the job's pair options.
#[derive(Debug, Clone)]
pub struct PairsOutputs {
    /// Thresholds and limits; its `base` is ignored (the stage's configuration counts).
    pub config: PairsConfig,
    /// The pairs; standard output when `None`.
    pub output: Option<PathBuf>,
    pub format: PairFormat,
    pub clusters: Option<PathBuf>,
}

impl<'a> Stage<'a> {
    pub fn new(
        work: &'a WorkDir,
        plan: &'a JobPlan,
        config: &'a NgramConfig,
        control: &'a Control,
        outputs: &'a Outputs,
    ) -> Self {
        Stage { work, plan, config, control, outputs }
    }

    /// Runs `task` unless the manifest says it finished.
    pub fn run(&self, task: TaskId) -> Result<TaskOutcome, ClusterError> {
        if self.record_path(task).exists() {
            return Ok(TaskOutcome::AlreadyDone);
        }
        let started = Instant::now();
        let cpu = cpu_seconds().unwrap_or(0.0);
        let mut record = match task {
            TaskId::Lexicon(shard) => self.lexicon(shard)?,
            TaskId::Vocab => self.vocab()?,
            TaskId::Map(shard) => self.map(shard)?,
            TaskId::Reduce(bucket) => self.reduce(bucket)?,
            TaskId::Index(shard) => self.index(shard)?,
            TaskId::Postings(bucket) => self.postings(bucket)?,
            TaskId::Candidates(bucket) => self.candidates(bucket)?,
            TaskId::Score(range) => self.score(range)?,
            TaskId::Finish if self.plan.command == "pairs" => self.finish_pairs()?,
            TaskId::Finish => self.finish()?,
        };
        record.task = task.name();
        record.cpu = cpu_seconds().unwrap_or(0.0) - cpu;
        record.stats.seconds.total = started.elapsed().as_secs_f64();
        record.stats.peak_rss = peak_rss().unwrap_or(0);
        write_record(&self.record_path(task), &record)?;
        if task == TaskId::Finish {
            self.remove_spill()?;
        }
        Ok(TaskOutcome::Ran)
    }

    /// CPU seconds of every finished task, added up.
    pub fn cpu_seconds(&self) -> Result<f64, ClusterError> {
        let mut total = 0.0;
        for task in TaskId::all(self.plan).into_iter().filter(|t| self.finished(*t)) {
            total += self.record(task, task)?.cpu;
        }
        Ok(total)
    }

    /// Whether `task` has recorded itself as finished.
    pub fn finished(&self, task: TaskId) -> bool {
        self.record_path(task).exists()
    }

    /// The job's summary, from every task's record (after `finish`).
    pub fn summary(&self) -> Result<NgramStats, ClusterError> {
        let mut total = NgramStats {
            n: self.config.n,
            min_count: self.config.min_count,
            memory_budget: self.config.memory,
            threads: self.config.threads,
            ..NgramStats::default()
        };
        for task in TaskId::all(self.plan).into_iter().filter(|t| *t != TaskId::Finish) {
            stats::absorb(&mut total, &self.record(task, TaskId::Finish)?.stats);
        }
        stats::settle(&mut total);
        Ok(total)
    }

    /// The summary of a finished `pairs` job, from every task's record;
    /// its times are the tasks' times added up.
    pub fn pairs_summary(&self) -> Result<PairsStats, ClusterError> {
        let mut total = PairsStats { n: self.config.n, memory_budget: self.config.memory, ..PairsStats::default() };
        let mut first = NgramStats::default();
        for task in TaskId::all(self.plan) {
            let record = self.record(task, TaskId::Finish)?;
            if matches!(task, TaskId::Lexicon(_) | TaskId::Vocab) {
                stats::absorb(&mut first, &record.stats);
            }
            if let Some(part) = &record.pairs {
                stats::absorb_pairs(&mut total, part);
            }
            total.peak_rss = total.peak_rss.max(record.stats.peak_rss);
        }
        stats::settle(&mut first);
        total.index.first_pass = Some(first);
        stats::settle_pairs(&mut total);
        Ok(total)
    }

    pub(crate) fn record_path(&self, task: TaskId) -> PathBuf {
        self.work.path(&format!("tasks/{}.json", task.name()))
    }

    /// The record of `task`, which `needed_by` cannot run without.
    pub(crate) fn record(&self, task: TaskId, needed_by: TaskId) -> Result<TaskRecord, ClusterError> {
        let path = self.record_path(task);
        if !path.exists() {
            return Err(ClusterError::NotReady { task: needed_by.name(), needs: task.name() });
        }
        let record: TaskRecord = read_record(&path)?;
        if task == TaskId::Vocab {
            check_bounds(&record.bounds, self.plan.buckets, &path)?;
        }
        Ok(record)
    }

    fn shard_lexicon(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("lexicon/shard-{shard:04}.lex"))
    }

    fn shard_sieve(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("lexicon/shard-{shard:04}.sieve"))
    }

    pub(crate) fn vocab_lexicon(&self) -> PathBuf {
        self.work.path("vocab.lex")
    }

    fn vocab_sieve(&self) -> PathBuf {
        self.work.path("vocab.sieve")
    }

    fn shard_runs(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("runs/shard-{shard:04}"))
    }

    fn bucket_dups(&self, bucket: usize) -> PathBuf {
        self.work.path(&format!("dups/bucket-{bucket:04}.tsv"))
    }

    /// A fresh temporary directory for `task` under `parent`, after removing
    /// what an earlier, killed run of it left there.
    pub(crate) fn scratch(&self, parent: &Path, task: TaskId) -> Result<tempfile::TempDir, ClusterError> {
        let prefix = format!("{}.tmp", task.name());
        let stale = std::fs::read_dir(parent).map_err(|e| ClusterError::io(parent, e))?;
        for entry in stale.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                std::fs::remove_dir_all(entry.path()).map_err(|e| ClusterError::io(entry.path(), e))?;
            }
        }
        tempfile::Builder::new().prefix(&prefix).tempdir_in(parent).map_err(|e| ClusterError::io(parent, e))
    }

    /// The words a task loads: only repeated ones, unless the job keeps
    /// the count of every n-gram (then words seen once count too).
    fn scope(&self) -> Scope {
        if self.plan.keep_state { Scope::All } else { Scope::Repeated }
    }

    pub(crate) fn passes(&self, scratch: &'a Path) -> Result<Passes<'a>, ClusterError> {
        Ok(Passes::new(self.config, self.control, scratch)?)
    }

    /// Counts the words of a shard; fills and saves its sieve.
    fn lexicon(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        self.plan.check_shard(shard)?;
        let scratch = self.scratch(&self.work.path("tmp"), TaskId::Lexicon(shard))?;
        let passes = self.passes(scratch.path())?;
        let mut stats = NgramStats::default();
        let started = Instant::now();
        // Without the memory map there is simply no sieve: results are the same.
        let sieve =
            (self.plan.sieve_bytes > 0).then(|| Sieve::with_bytes(self.plan.sieve_bytes as usize).ok()).flatten();
        let (builder, sieve) = passes.count_words(&self.plan.shard_inputs(shard), sieve, &mut stats)?;
        stats.seconds.lexicon = started.elapsed().as_secs_f64();
        let record = TaskRecord {
            tokens: builder.tokens(),
            documents: stats.documents,
            sieve: sieve.is_some(),
            ..Default::default()
        };
        // Shard lexicons keep every word: stop words by rank are chosen from the whole corpus.
        write_file(&self.shard_lexicon(shard), |out| builder.write_to(self.config.norm, 0, out).map(drop))?;
        if let Some(sieve) = sieve {
            write_file(&self.shard_sieve(shard), |out| sieve.save(out))?;
        }
        Ok(TaskRecord { stats, ..record })
    }

    /// The job's lexicon from the shards' counts; the combined sieve; the buckets.
    fn vocab(&self) -> Result<TaskRecord, ClusterError> {
        let shards = self.plan.shards.len();
        let parts =
            (0..shards).map(|s| self.record(TaskId::Lexicon(s), TaskId::Vocab)).collect::<Result<Vec<_>, _>>()?;
        let mut stats = NgramStats::default();
        let mut builder = LexiconBuilder::new(self.config.stopwords.iter().cloned());
        for (shard, part) in parts.iter().enumerate() {
            let lexicon = Lexicon::load(&self.shard_lexicon(shard), Scope::All)?;
            let mut words = 0;
            for id in 0..lexicon.len() as u32 {
                builder.add_counted(lexicon.word_bytes(id), lexicon.count(id));
                words += lexicon.count(id);
            }
            builder.add_stop_tokens(part.tokens.saturating_sub(words));
        }
        write_file(&self.vocab_lexicon(), |out| {
            builder.write_to(self.config.norm, self.config.stop_top, out).map(drop)
        })?;

        let scratch = self.scratch(&self.work.path("tmp"), TaskId::Vocab)?;
        let passes = self.passes(scratch.path())?;
        let sieve = if parts.iter().all(|p| p.sieve) && shards > 0 { self.combined_sieve(shards)? } else { None };
        let sieve = passes.settle_sieve(sieve, &mut stats);
        if let Some(sieve) = &sieve {
            write_file(&self.vocab_sieve(), |out| sieve.save(out))?;
        }
        let lexicon = Lexicon::load(&self.vocab_lexicon(), Scope::Repeated)?;
        stats.vocabulary = lexicon.total_words();
        stats.repeated_words = lexicon.repeated_len() as u64;
        stats.stopwords = lexicon.stopwords().len() as u64;
        let counts: Vec<u64> = (0..lexicon.len() as u32).map(|id| lexicon.count(id)).collect();
        Ok(TaskRecord {
            stats,
            sieve: sieve.is_some(),
            bounds: bucket_bounds(&counts, self.plan.buckets),
            ..Default::default()
        })
    }

    fn combined_sieve(&self, shards: usize) -> Result<Option<Sieve>, ClusterError> {
        let open = |shard: usize| {
            let path = self.shard_sieve(shard);
            std::fs::File::open(&path)
                .map(std::io::BufReader::new)
                .map_err(|e| ClusterError::io(&path, e))
                .map(|f| (f, path))
        };
        let (mut first, path) = open(0)?;
        let sieve = Sieve::load(&mut first, None).map_err(|e| ClusterError::io(&path, e))?;
        for shard in 1..shards {
            let (mut file, path) = open(shard)?;
            Sieve::load(&mut file, sieve.as_ref()).map_err(|e| ClusterError::io(&path, e))?;
        }
        Ok(sieve)
    }

    /// The count pass over a shard: runs cut by bucket.
    fn map(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        if self.plan.keep_postings {
            return self.map_postings(shard);
        }
        let vocab = self.record(TaskId::Vocab, TaskId::Map(shard))?;
        let read = self.record(TaskId::Lexicon(shard), TaskId::Map(shard))?;
        self.plan.check_shard(shard)?;
        let scratch = self.scratch(&self.work.path("runs"), TaskId::Map(shard))?;
        let passes = self.passes(scratch.path())?;
        let lexicon = Lexicon::load(&self.vocab_lexicon(), self.scope())?;
        let sieve = if vocab.sieve { Some(self.load_sieve()?) } else { None };
        let mut stats = NgramStats::default();
        let started = Instant::now();
        let counted =
            passes.count_ngrams(&self.plan.shard_inputs(shard), &lexicon, sieve.as_ref(), &vocab.bounds, &mut stats)?;
        stats.seconds.count = started.elapsed().as_secs_f64();
        if counted.tokens != read.tokens || counted.documents != read.documents {
            return Err(PipelineError::Changed(format!(
                "shard {shard}: the lexicon task read {} documents and {} tokens, the map task {} and {}",
                read.documents, read.tokens, counted.documents, counted.tokens
            ))
            .into());
        }
        let runs = run_entries(&counted.runs);
        keep_dir(scratch, &self.shard_runs(shard))?;
        Ok(TaskRecord { stats, runs, entries: counted.entries, ..Default::default() })
    }

    pub(crate) fn load_sieve(&self) -> Result<Sieve, ClusterError> {
        let path = self.vocab_sieve();
        let mut file =
            std::fs::File::open(&path).map(std::io::BufReader::new).map_err(|e| ClusterError::io(&path, e))?;
        Sieve::load(&mut file, None)
            .map_err(|e| ClusterError::io(&path, e))?
            .ok_or_else(|| ClusterError::corrupt(&path, "empty sieve"))
    }

    /// Merges one bucket's runs from every shard into its duplicates.
    fn reduce(&self, bucket: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Reduce(bucket);
        self.record(TaskId::Vocab, me)?;
        let scratch = self.scratch(&self.work.path("tmp"), me)?;
        // The merge deletes the runs it has read: give it links, and keep
        // the originals for a rerun of this task if it is killed.
        let mut runs = Vec::new();
        let mut entries = 0;
        for shard in 0..self.plan.shards.len() {
            let map = self.record(TaskId::Map(shard), me)?;
            entries += map.entries;
            runs.extend(link_runs(&map, bucket, &self.shard_runs(shard), scratch.path(), &format!("s{shard:04}"))?);
        }
        let passes = self.passes(scratch.path())?;
        let lexicon = Lexicon::load(&self.vocab_lexicon(), self.scope())?;
        let mut writer = DupTsvWriter::new(OutputFile::create(Some(&self.bucket_dups(bucket)))?);
        let mut stats = NgramStats::default();
        let started = Instant::now();
        if self.plan.keep_postings {
            self.reduce_postings(bucket, runs, scratch.path(), &mut writer, &mut stats)?;
        } else if self.plan.keep_state {
            // Every n-gram goes to the state; those counted often enough to the output too.
            let part = self.work.path(&format!("state/parts/bucket-{bucket:04}.dgr"));
            let tmp = scratch.path().join("state.dgr");
            let mut state = RunWriter::create(&tmp, RunHeader::counts(self.config.n as u8, lexicon.identity()))?;
            let (min_count, mut written) = (self.config.min_count, 0);
            passes.merge_every(runs, entries, &lexicon, &mut stats, &mut |lexicon, ids, count| {
                state.push(ids, count)?;
                if count >= min_count {
                    written += 1;
                    writer.write(lexicon, ids, count)?;
                }
                Ok(())
            })?;
            stats.output_ngrams = written;
            state.finish()?;
            std::fs::rename(&tmp, &part).map_err(|e| ClusterError::io(&part, e))?;
        } else {
            passes.merge(runs, entries, &lexicon, &mut stats, &mut |lexicon, ids, count| {
                writer.write(lexicon, ids, count)
            })?;
        }
        writer.finish()?;
        stats.seconds.merge = started.elapsed().as_secs_f64();
        Ok(TaskRecord { stats, ..Default::default() })
    }

    /// Joins the buckets' duplicates into the output, in bucket order
    /// (buckets are ranges of first word IDs), and copies the lexicon.
    fn finish(&self) -> Result<TaskRecord, ClusterError> {
        let mut out = OutputFile::create(self.outputs.dups.as_deref())?;
        let mut buf = vec![0u8; 1 << 20];
        for bucket in 0..self.plan.buckets {
            self.record(TaskId::Reduce(bucket), TaskId::Finish)?;
            let path = self.bucket_dups(bucket);
            let mut part = std::fs::File::open(&path).map_err(|e| ClusterError::io(&path, e))?;
            loop {
                let got = std::io::Read::read(&mut part, &mut buf).map_err(|e| ClusterError::io(&path, e))?;
                if got == 0 {
                    break;
                }
                out.write_all(&buf[..got])?;
            }
        }
        out.finish()?;
        if let Some(target) = &self.outputs.lexicon {
            let from = self.vocab_lexicon();
            write_file(target, |out| std::io::copy(&mut std::fs::File::open(&from)?, out).map(drop))?;
        }
        if self.plan.keep_state {
            // The state's first generation: the runs of every n-gram and the lexicon of their IDs.
            let parts = self.work.path("state/parts");
            if self.plan.keep_postings {
                self.finish_postings_state(&parts)?;
            }
            let from = self.vocab_lexicon();
            write_file(&parts.join("lexicon.lex"), |out| {
                std::io::copy(&mut std::fs::File::open(&from)?, out).map(drop)
            })?;
            let generation = self.work.path(&crate::update::generation_dir(0));
            std::fs::rename(&parts, &generation).map_err(|e| ClusterError::io(&generation, e))?;
        }
        Ok(TaskRecord::default())
    }

    /// Runs removed once the output is written: they are as large as the data.
    fn remove_spill(&self) -> Result<(), ClusterError> {
        for dir in ["runs", "dups", "tmp", "pairs"] {
            let path = self.work.path(dir);
            std::fs::remove_dir_all(&path).map_err(|e| ClusterError::io(&path, e))?;
            std::fs::create_dir_all(&path).map_err(|e| ClusterError::io(&path, e))?;
        }
        Ok(())
    }
}

/// Links (or copies) the runs of part `part` that `record` wrote into
/// `from` into the scratch directory `to`, names prefixed with `prefix`:
/// merges delete the runs they have read, and the originals must stay for
/// a rerun of the task if it is killed.
pub(crate) fn link_runs(
    record: &TaskRecord,
    part: usize,
    from: &Path,
    to: &Path,
    prefix: &str,
) -> Result<Vec<RunFile>, ClusterError> {
    let mut runs = Vec::new();
    for run in record.runs.iter().filter(|r| r.bucket == part) {
        let source = from.join(&run.file);
        let target = to.join(format!("{prefix}-{}", run.file));
        if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).map_err(|e| ClusterError::io(&source, e))?;
        }
        runs.push(RunFile { path: target, bytes: run.bytes, depth: 0 });
    }
    Ok(runs)
}

/// Entries naming `runs` (each with its part) by file name, for a task record.
pub(crate) fn run_entries(runs: &[(usize, RunFile)]) -> Vec<RunEntry> {
    runs.iter()
        .map(|(part, run)| RunEntry {
            bucket: *part,
            file: run.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            bytes: run.bytes,
        })
        .collect()
}

/// Makes a task's scratch directory its output directory `target`.
pub(crate) fn keep_dir(scratch: tempfile::TempDir, target: &Path) -> Result<(), ClusterError> {
    if target.exists() {
        // Renamed by a run killed before it could record itself.
        std::fs::remove_dir_all(target).map_err(|e| ClusterError::io(target, e))?;
    }
    let kept = scratch.keep();
    std::fs::rename(&kept, target).map_err(|e| ClusterError::io(target, e))
}

/// The first word ID of buckets 1.. so each holds about the same number of
/// n-gram occurrences: an n-gram starts with a word as often as the word
/// occurs (words are numbered by decreasing count, so early buckets hold
/// few words). Buckets may be empty when one word outweighs a bucket.
/// Checks the bucket bounds of a vocab record read from `path`: one fewer
/// than the `buckets` of the plan, in order. Others would cut n-grams into
/// buckets no reduce task reads, losing them without a word.
pub(crate) fn check_bounds(bounds: &[u32], buckets: usize, path: &Path) -> Result<(), ClusterError> {
    if bounds.len() + 1 != buckets || bounds.windows(2).any(|w| w[0] > w[1]) {
        return Err(ClusterError::corrupt(
            path,
            format!("{} bucket bounds, or out of order, for a plan of {buckets} buckets", bounds.len()),
        ));
    }
    Ok(())
}

fn bucket_bounds(counts: &[u64], buckets: usize) -> Vec<u32> {
    let total: u128 = counts.iter().map(|&c| c as u128).sum();
    let mut bounds = Vec::with_capacity(buckets.saturating_sub(1));
    let mut seen: u128 = 0;
    let mut id = 0usize;
    for b in 1..buckets {
        let target = total * b as u128 / buckets as u128;
        while id < counts.len() && seen + counts[id] as u128 <= target {
            seen += counts[id] as u128;
            id += 1;
        }
        bounds.push(id as u32);
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_the_occurrences_evenly() {
        assert_eq!(bucket_bounds(&[10, 10, 10, 10], 4), [1, 2, 3]);
        assert_eq!(bucket_bounds(&[10, 10, 10, 10], 1), Vec::<u32>::new());
        // One word holding most occurrences leaves the middle buckets empty.
        assert_eq!(bucket_bounds(&[70, 10, 10, 10], 4), [0, 0, 1]);
        let bounds = bucket_bounds(&[5; 100], 3);
        assert_eq!(bounds, [33, 66]);
        assert!(bucket_bounds(&[], 4).iter().all(|&b| b == 0));
    }
}
