//! A dupgram count as separate tasks on a shared work directory, so a
//! scheduler (Slurm) can run them on any node, each within `--memory`.
//!
//! `dupgram ngrams` on one machine reads the corpus twice and merges once.
//! Here the same passes — the same functions of `dupgram-pipeline`, not a
//! second implementation — run as tasks that meet only through files:
//!
//! 1. **lexicon** (one task per shard) — count the shard's words and fill a
//!    sieve with its n-grams' fingerprints;
//! 2. **vocab** (one task) — add up the shards' word counts into the one
//!    lexicon every later task uses (the same IDs and stop words a single
//!    process would choose), combine the sieves, and cut the n-grams into
//!    buckets by their first word ID so each bucket gets about the same
//!    number of n-grams (an n-gram's first word is as frequent as the word);
//! 3. **map** (one per shard) — the count pass over the shard: sorted runs,
//!    cut by bucket;
//! 4. **reduce** (one per bucket) — merge the bucket's runs from every
//!    shard, keep the n-grams seen at least `--min-count` times;
//! 5. **finish** (one task) — concatenate the buckets' outputs (buckets are
//!    ranges of first word IDs, so this is the sorted order), copy the
//!    lexicon beside the output, and add up the summary.
//!
//! The output is byte-identical to `dupgram ngrams` on the same input and
//! options: the lexicon does not depend on how the corpus was cut (words
//! are numbered by count, ties by bytes), and a merge sums counts whatever
//! runs they come from.
//!
//! A `pairs` job shares lexicon and vocab, then runs the steps of
//! `dupgram_pipeline::PairPasses` (the code `dupgram pairs` runs in one
//! process) as tasks:
//!
//! 3. **index** (per shard) — the index pass over the shard, documents
//!    numbered after the earlier shards' (the lexicon tasks counted them):
//!    postings runs cut by bucket, and the shard's document table;
//! 4. **postings** (per bucket) — merge the bucket's postings from every
//!    shard into its part of the duplicate-only index, with per-document
//!    totals and its part of the check of identical documents;
//! 5. **candidates** (per bucket) — the pairs of documents sharing the
//!    bucket's n-grams, cut by slice of documents (eight per shard);
//! 6. **score** (as many as shards) — a stretch of slices holding about the
//!    same bytes of candidates as the others' (a pair goes with its first
//!    document, so earlier slices hold more): merge their candidates from
//!    every bucket (a pair found in several comes once), score them against
//!    the index parts, in blocks that fit in memory;
//! 7. **finish** — merge the ranges' kept pairs into `-o`, then the clusters.
//!
//! Pairs and clusters are byte-identical to `dupgram pairs`'.
//!
//! # The work directory
//!
//! ```text
//! job.json                 the plan: command line, inputs (size, mtime, sample hash), shards, buckets
//! tasks/<task>.json        the manifest: one record per finished task, written last
//! lexicon/shard-NNNN.lex   a shard's word counts (the lexicon file format of dupgram-lexicon)
//! lexicon/shard-NNNN.sieve a shard's sieve (the sieve file format of dupgram-sieve)
//! vocab.lex, vocab.sieve   the job's lexicon and combined sieve
//! runs/shard-NNNN/         a shard's runs (the run format of dupgram-runs), removed by finish
//! dups/bucket-NNNN.tsv     a bucket's duplicates, removed by finish
//! state/gen-NNNN/          with --keep-state: segments of every n-gram's count, the lexicon (see
//!                          `update`); with --keep-postings, segments of every n-gram's occurrences
//!                          and docs-GGGG.table/.totals, the documents' table (see `postings`)
//! pairs/                   pairs jobs: docs/ (each shard's document table), postings/ (runs by
//!                          bucket), index/ (each bucket's index part and totals), candidates/,
//!                          kept/ (runs); removed by finish
//! slurm/                   the sbatch scripts and their logs
//! ```
//!
//! `job.json` and the task records are JSON under a header line with a
//! magic string, a format version and an XXH3 checksum ([`record`]); the
//! document tables and index totals have the binary format of
//! `dupgram_pipeline`'s `parts` module (magic, version, XXH3 checksum).
//!
//! # Nothing lost, nothing redone
//!
//! A task writes its outputs under temporary names, renames them, and
//! records itself last; a task whose record exists is skipped, so a job
//! submitted again runs only what did not finish. A task killed midway
//! (SIGKILL, a node lost) leaves temporary files that its next run removes
//! before starting. Every task that reads the corpus first checks that the
//! files are those the job was planned on (size, modification time, and a
//! hash of their first and last MiB) and refuses to mix versions. A change
//! that keeps a file's size and modification time and touches neither end
//! is not caught; nothing short of hashing every byte would catch it.

mod pair_tasks;
mod plan;
mod postings;
pub mod record;
mod slurm;
mod stats;
mod tasks;
mod update;
mod update_pairs;

pub use plan::{InputFile, JobPlan, Piece};
pub use slurm::{SlurmOptions, Submitted, submit, wait, write_scripts};
pub use tasks::{Outputs, PairsOutputs, Stage, TaskId, TaskOutcome};
pub use update::{MAX_SEGMENTS, UpdateOutputs, UpdatePairs, UpdateStats, update};

use std::path::{Path, PathBuf};

use dupgram_pipeline::PipelineError;

/// Everything that can stop a task.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("{path} changed since the job was planned ({what}); plan a new job in a new work directory")]
    Changed { path: PathBuf, what: String },
    #[error("task {task} needs {needs}, which has not finished: run it first")]
    NotReady { task: String, needs: String },
    #[error("{0}")]
    Plan(String),
    #[error("slurm: {0}")]
    Slurm(String),
}

impl From<dupgram_lexicon::LexiconError> for ClusterError {
    fn from(e: dupgram_lexicon::LexiconError) -> Self {
        ClusterError::Pipeline(e.into())
    }
}

impl From<dupgram_runs::RunError> for ClusterError {
    fn from(e: dupgram_runs::RunError) -> Self {
        ClusterError::Pipeline(e.into())
    }
}

impl ClusterError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ClusterError::Io { path: path.into(), source }
    }

    pub fn corrupt(path: &Path, what: impl Into<String>) -> Self {
        ClusterError::Corrupt { path: path.to_owned(), what: what.into() }
    }
}

/// The shared directory a job's tasks meet in.
#[derive(Debug, Clone)]
pub struct WorkDir {
    root: PathBuf,
}

impl WorkDir {
    /// The work directory at `root` (made if missing), as an absolute path.
    pub fn new(root: &Path) -> Result<WorkDir, ClusterError> {
        std::fs::create_dir_all(root).map_err(|e| ClusterError::io(root, e))?;
        let root = std::path::absolute(root).map_err(|e| ClusterError::io(root, e))?;
        for sub in ["tasks", "lexicon", "runs", "dups", "slurm", "tmp", "state/parts", "pairs"] {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| ClusterError::io(&dir, e))?;
        }
        Ok(WorkDir { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn job_file(&self) -> PathBuf {
        self.root.join("job.json")
    }

    /// The job planned in this directory, if any.
    pub fn plan(&self) -> Result<Option<JobPlan>, ClusterError> {
        let path = self.job_file();
        if !path.exists() {
            return Ok(None);
        }
        let plan: JobPlan = record::read_record(&path)?;
        plan.check_shape(&path)?;
        Ok(Some(plan))
    }

    /// Records the plan; a directory holds one job for its whole life.
    pub fn save_plan(&self, plan: &JobPlan) -> Result<(), ClusterError> {
        match self.plan()? {
            Some(old)
                if old.options != plan.options
                    || old.shards.len() != plan.shards.len()
                    || old.buckets != plan.buckets =>
            {
                Err(ClusterError::Plan(format!(
                    "{} already holds another job (planned as `{}`); use a new --workdir",
                    self.root.display(),
                    old.argv.join(" ")
                )))
            }
            Some(old) => old.check_all(),
            None => record::write_record(&self.job_file(), plan),
        }
    }

    /// The plan, which must exist.
    pub fn load_plan(&self) -> Result<JobPlan, ClusterError> {
        self.plan()?.ok_or_else(|| {
            ClusterError::Plan(format!(
                "{}: no job planned here (no job.json); run `dupgram slurm` first",
                self.root.display()
            ))
        })
    }
}
