//! What every task of a job shares: their names, the records they leave,
//! and the [`Stage`] they run in, with the paths and inputs they all use.
//! The tasks themselves are below it: the count's in `tasks`, a postings
//! state's in `postings`, a pairs job's in `pair_tasks`.

use std::path::{Path, PathBuf};

use dupgram_lexicon::{Renumbering, Scope};
use dupgram_pipeline::output::PairFormat;
use dupgram_pipeline::scratch::Scratch;
use dupgram_pipeline::{
    Control, NgramConfig, NgramStats, PairsConfig, PairsStats, Passes, PipelineError, RunFile, ScoreLayout, Sieve,
};
use dupgram_vocab::{SideFile, VocabularyPlan, resolve_shard};
use serde::{Deserialize, Serialize};

use crate::error::ClusterError;
use crate::plan::JobPlan;
use crate::record::{fresh_scratch, read_record};
use crate::workdir::WorkDir;

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
    /// Lexicon tasks of a count from word streams: the shard's streams in
    /// `streams/shard-NNNN`, each worker's segments (file names) and bytes.
    #[serde(default)]
    pub streams: Vec<(Vec<String>, u64)>,
    /// Lexicon tasks of a count from word streams: the runs of the streams'
    /// overflow tokens (file names), beside them.
    #[serde(default)]
    pub occurrences: Vec<String>,
    /// Lexicon tasks of a count from word streams: first-seen IDs the table handed out.
    #[serde(default)]
    pub first_seen: u64,
    /// Lexicon tasks of a count from word streams: slots an epoch of the
    /// streams' overflow has at most (see `dupgram_vocab::SideFile`).
    #[serde(default)]
    pub epoch_slots: u32,
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
        if let Some(layout) = &record.layout {
            check_layout(layout, self.plan.shards.len(), &path)?;
        }
        Ok(record)
    }

    pub(crate) fn vocab_lexicon(&self) -> PathBuf {
        self.work.path("vocab.lex")
    }

    pub(crate) fn vocab_sieve(&self) -> PathBuf {
        self.work.path("vocab.sieve")
    }

    /// A fresh temporary directory for `task` under `parent`, after removing
    /// what earlier, killed runs of it left there.
    pub(crate) fn scratch(&self, parent: &Path, task: TaskId) -> Result<Scratch, ClusterError> {
        fresh_scratch(parent, &format!("{}.tmp", task.name()))
    }

    /// The words a task loads: only repeated ones, unless the job keeps
    /// the count of every n-gram (then words seen once count too).
    pub(crate) fn scope(&self) -> Scope {
        if self.plan.keep_state { Scope::All } else { Scope::Repeated }
    }

    pub(crate) fn passes(&self, scratch: &'a Path) -> Result<Passes<'a>, ClusterError> {
        Ok(Passes::new(self.config, self.control, scratch)?)
    }

    /// The job's sieve, as the count and index tasks ask it: frozen, one
    /// bit a counter, so their chunks get the other half of its memory.
    pub(crate) fn load_sieve(&self) -> Result<Sieve, ClusterError> {
        let path = self.vocab_sieve();
        let mut file =
            std::fs::File::open(&path).map(std::io::BufReader::new).map_err(|e| ClusterError::io(&path, e))?;
        let mut sieve = Sieve::load(&mut file, None)
            .map_err(|e| ClusterError::io(&path, e))?
            .ok_or_else(|| ClusterError::corrupt(&path, "empty sieve"))?;
        sieve.freeze();
        Ok(sieve)
    }

    /// A shard's word streams, the runs of their overflow tokens and its
    /// table's words (see [`Stage::reads_streams`]).
    pub(crate) fn shard_streams(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("streams/shard-{shard:04}"))
    }

    /// What every word of the job became, by fingerprint (see [`dupgram_vocab::number_shard_words`]).
    pub(crate) fn vocab_codes(&self) -> PathBuf {
        self.work.path("vocab.codes")
    }

    /// Whether the lexicon tasks write word streams for the map or index
    /// tasks to read (no vocabulary held anywhere): plain counts and
    /// `pairs`. A job that keeps its state keeps n-grams of words seen
    /// once, and a postings state indexes the text: their tasks read it
    /// with the lexicon.
    pub(crate) fn reads_streams(&self) -> bool {
        match self.plan.command.as_str() {
            "pairs" => true,
            _ => !self.plan.keep_state && !self.plan.keep_postings,
        }
    }

    /// What the codes of a shard's word streams are, from `vocab.codes` and
    /// what its lexicon task (`read`) kept: its table's renumbering and the
    /// streams' side files (written to `plan.dir`); and the streams.
    pub(crate) fn resolve_streams(
        &self,
        shard: usize,
        read: &TaskRecord,
        plan: &VocabularyPlan<'_>,
    ) -> Result<ResolvedStreams, ClusterError> {
        let dir = self.shard_streams(shard);
        let occurrences: Vec<PathBuf> = read.occurrences.iter().map(|name| dir.join(name)).collect();
        let first_seen = usize::try_from(read.first_seen)
            .map_err(|_| ClusterError::corrupt(&self.record_path(TaskId::Lexicon(shard)), "first-seen IDs"))?;
        let (renumbering, sides) = resolve_shard(
            &dir.join(SHARD_TABLE),
            first_seen,
            (&occurrences, read.epoch_slots),
            &self.vocab_codes(),
            read.streams.len(),
            plan,
        )
        .map_err(PipelineError::from)?;
        let streams = read
            .streams
            .iter()
            .map(|(segments, bytes)| (segments.iter().map(|name| dir.join(name)).collect(), *bytes))
            .collect();
        Ok(ResolvedStreams { renumbering, sides, streams })
    }

    /// A shard's document lists, as its lexicon task kept them for the index.
    pub(crate) fn shard_documents(&self, shard: usize) -> PathBuf {
        self.shard_streams(shard).join(SHARD_DOCS)
    }

    /// What an index pass over a shard starts from: the vocab task's record
    /// (buckets, sieve), the shard's lexicon record (what it read), and the
    /// number of its first document (the earlier shards' documents).
    pub(crate) fn shard_start(&self, shard: usize, me: TaskId) -> Result<(TaskRecord, TaskRecord, u64), ClusterError> {
        let vocab = self.record(TaskId::Vocab, me)?;
        let mut first_doc = 0;
        for earlier in 0..shard {
            first_doc += self.record(TaskId::Lexicon(earlier), me)?.documents;
        }
        let read = self.record(TaskId::Lexicon(shard), me)?;
        self.plan.check_shard(shard)?;
        Ok((vocab, read, first_doc))
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
        dupgram_runs::reclaim::second_name(&source, &target).map_err(|e| ClusterError::io(&source, e))?;
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
pub(crate) fn keep_dir(scratch: Scratch, target: &Path) -> Result<(), ClusterError> {
    if target.exists() {
        // Renamed by a run killed before it could record itself.
        std::fs::remove_dir_all(target).map_err(|e| ClusterError::io(target, e))?;
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ClusterError::io(parent, e))?;
    }
    let kept = scratch.keep()?;
    std::fs::rename(&kept, target).map_err(|e| ClusterError::io(target, e))
}

/// Checks the bucket bounds of a vocab record read from `path`: one fewer
/// than the `buckets` of the plan, in order. Others would cut n-grams into
/// buckets no reduce task reads, losing them without a word.
/// Slices each shard's documents are cut into for scoring, so the scoring
/// tasks can share them out evenly: a pair is scored with its first
/// document, so earlier documents carry more pairs.
pub(crate) const SLICES: usize = 8;

/// Fails unless a record's score layout has the shape the candidates tasks
/// give it, in no more slices than the plan's shards are cut into.
pub(crate) fn check_layout(layout: &ScoreLayout, shards: usize, path: &Path) -> Result<(), ClusterError> {
    layout.check().map_err(|what| ClusterError::corrupt(path, format!("score layout: {what}")))?;
    if layout.ranges() > shards.saturating_mul(SLICES) {
        let what = format!("score layout of {} slices, for a plan of {shards} shards", layout.ranges());
        return Err(ClusterError::corrupt(path, what));
    }
    Ok(())
}

pub(crate) fn check_bounds(bounds: &[u32], buckets: usize, path: &Path) -> Result<(), ClusterError> {
    if bounds.len() + 1 != buckets || bounds.windows(2).any(|w| w[0] > w[1]) {
        return Err(ClusterError::corrupt(
            path,
            format!("{} bucket bounds, or out of order, for a plan of {buckets} buckets", bounds.len()),
        ));
    }
    Ok(())
}

/// The table's words by fingerprint, in a shard's streams directory.
pub(crate) const SHARD_TABLE: &str = "table.dgr";
/// The streams' document lists (`pairs`), in a shard's streams directory.
pub(crate) const SHARD_DOCS: &str = "docs.dgd";

/// What a shard's word streams are read with ([`Stage::resolve_streams`]).
pub(crate) struct ResolvedStreams {
    pub renumbering: Renumbering,
    pub sides: Vec<Option<SideFile>>,
    /// Each stream's segments and bytes.
    pub streams: Vec<(Vec<PathBuf>, u64)>,
}
