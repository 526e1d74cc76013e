//! A dupgram count as separate tasks on a shared work directory, so a
//! scheduler (Slurm) can run them on any node, each within `--memory`.
//!
//! `dupgram ngrams` on one machine reads the corpus once into word streams,
//! counts from them and merges once. Here the same passes — the same
//! functions of `dupgram-pipeline`, not a second implementation — run as
//! tasks that meet only through files:
//!
//! 1. **lexicon** (one task per shard) — the lexicon pass over the shard:
//!    count its words, fill a sieve with its n-grams' fingerprints, and
//!    write each worker's word stream. Its table of words takes its share
//!    of `--memory` and then freezes: the words past it are counted, and
//!    their tokens logged, in sorted runs on disk. The shard's words (the
//!    table's and the overflow's) go to one file by fingerprint with their
//!    counts, its table's first-seen IDs to another;
//! 2. **vocab** (one task) — merge the shards' words by fingerprint, adding
//!    up their counts, and number them into the one lexicon every later task
//!    uses (the same IDs and stop words a single process would choose: the
//!    lexicon file is byte for byte the same), out of core: no vocabulary
//!    is held. Also what every word became, by fingerprint (`vocab.codes`),
//!    the combined sieve, and the buckets: the n-grams cut by their first
//!    word ID so each bucket gets about the same number of n-grams (an
//!    n-gram's first word is as frequent as the word);
//! 3. **map** (one per shard) — join the shard's table and overflow tokens
//!    with `vocab.codes` by fingerprint (the first-seen IDs' renumbering and
//!    the streams' side files), then the count pass over its word streams:
//!    sorted runs, cut by bucket;
//! 4. **reduce** (one per bucket) — merge the bucket's runs from every
//!    shard, keep the n-grams seen at least `--min-count` times, their words
//!    read back from disk a batch at a time;
//! 5. **finish** (one task) — concatenate the buckets' outputs (buckets are
//!    ranges of first word IDs, so this is the sorted order), copy the
//!    lexicon beside the output, and add up the summary.
//!
//! So no task holds a vocabulary: a lexicon task holds the table its
//! memory allows, a map task that table's renumbering. A fingerprint never
//! decides a word unchecked: the vocab task's merge meets every word of
//! every shard and compares the bytes of any two under one fingerprint
//! (see `dupgram_vocab`), so a join by fingerprint is a join by word.
//!
//! The output is byte-identical to `dupgram ngrams` on the same input and
//! options: the lexicon does not depend on how the corpus was cut (words
//! are numbered by count, ties by bytes), and a merge sums counts whatever
//! runs they come from. A job that keeps its state (`--keep-state`, which
//! counts the n-grams of words seen once too) and the postings tasks of
//! such a state read the shard's text again in their map tasks, with every
//! word of the lexicon held in memory.
//!
//! A `pairs` job shares lexicon and vocab, then runs the steps of
//! `dupgram_pipeline::PairPasses` (the code `dupgram pairs` runs in one
//! process) as tasks:
//!
//! 3. **index** (per shard) — the index pass over the shard's word streams
//!    (resolved as a map task resolves them; the lexicon task also kept the
//!    streams' document lists, `docs.dgd`), documents numbered after the
//!    earlier shards' (the lexicon tasks counted them): postings runs cut by
//!    bucket, and the shard's document table. Words are named by their IDs,
//!    and words seen once by numbers no other token of any shard has, so
//!    identical documents of different shards hash alike;
//! 4. **postings** (per bucket) — merge the bucket's postings from every
//!    shard into its part of the duplicate-only index, with per-document
//!    totals and its part of the check of identical documents;
//! 5. **candidates** (per bucket) — the pairs of documents sharing the
//!    bucket's n-grams, cut by slice of documents (eight per shard), each
//!    with the count of n-grams that made it, and each document's count of
//!    the bucket's n-grams too common to make candidates (`--max-df`);
//! 6. **score** (as many as shards) — a stretch of slices holding about the
//!    same bytes of candidates as the others' (a pair goes with its first
//!    document, so earlier slices hold more): merge their candidates from
//!    every bucket (a pair found in several comes once, its counts added),
//!    rule out those whose counts bound their scores below the thresholds,
//!    score the others against the index parts, in blocks that fit in memory;
//! 7. **finish** — merge the ranges' kept pairs into `-o`, then the clusters.
//!
//! Pairs and clusters are byte-identical to `dupgram pairs`'.
//!
//! # The work directory
//!
//! ```text
//! job.json                 the plan: command line, inputs (size, mtime, sample hash), shards, buckets
//! tasks/<task>.json        the manifest: one record per finished task, written last
//! lexicon/shard-NNNN.words a shard's words with their counts, by fingerprint (a word run of dupgram-vocab)
//! lexicon/shard-NNNN.sieve.zst a shard's sieve (the sieve file format of dupgram-sieve, in zstd)
//! streams/shard-NNNN/      a shard's word streams (dupgram-lexicon's stream format), the runs of
//!                          their overflow tokens, its table's words (table.dgr), for pairs the
//!                          streams' document lists (docs.dgd, `ShardDocuments`); removed by finish
//! vocab.lex, vocab.sieve   the job's lexicon and combined sieve
//! vocab.codes              what every word seen twice (or a stop word) became, by fingerprint
//! runs/shard-NNNN/         a shard's runs (the run format of dupgram-runs), removed by finish
//! dups/bucket-NNNN.tsv.zst a bucket's duplicates (zstd), removed by finish
//! state/gen-NNNN/          with --keep-state: segments of every n-gram's count, the lexicon (see
//!                          `update`); with --keep-postings, segments of every n-gram's occurrences
//!                          and docs-GGGG.table/.totals, the documents' table (see `postings`)
//! pairs/                   pairs jobs: docs/ (each shard's document table), postings/ (runs by
//!                          bucket), index/ (each bucket's index part and totals), candidates/
//!                          (runs, and common.counts), kept/ (runs); removed by finish
//! slurm/                   the sbatch scripts and their logs
//! ```
//!
//! `job.json` and the task records are JSON under a header line with a
//! magic string, a format version and an XXH3 checksum ([`record`]); the
//! document tables, index totals and common counts have the binary format of
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

// Floors, from the bottom: each module uses only those on floors below it
// (never the crate root's re-exports):
//   error; record; plan; workdir; state (generation and table names);
//   room (the memory of an update's reports); stage (task names, records,
//   the `Stage` and what every task shares); stats;
//   postings, pair_tasks (tasks of a postings state and of a pairs job);
//   tasks (the count's tasks, and `Stage::run`); update_pairs; update; slurm.
mod error;
mod pair_tasks;
mod plan;
mod postings;
pub mod record;
mod room;
mod slurm;
mod stage;
mod state;
mod stats;
mod tasks;
mod update;
mod update_pairs;
mod workdir;

// The fuzz tests of every work-directory format, above all the modules they read.
#[cfg(test)]
mod fuzz;

pub use error::ClusterError;
pub use plan::{InputFile, JobPlan, Piece};
pub use slurm::{SlurmOptions, Submitted, submit, wait, write_scripts};
pub use stage::{Outputs, PairsOutputs, Stage, TaskId, TaskOutcome};
pub use update::{MAX_SEGMENTS, UpdateOutputs, UpdatePairs, UpdateStats, update};
pub use workdir::WorkDir;
