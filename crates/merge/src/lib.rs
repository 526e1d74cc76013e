//! Merging sorted runs: the final join of Pomikálek & Rychlý's external sort.
//!
//! Every run holds distinct n-grams in increasing order with their counts. A
//! [`LoserTree`] picks the smallest current n-gram of `k` runs with ⌈log₂k⌉
//! comparisons per entry (a binary heap needs about twice that); equal n-grams
//! from different runs are summed and handed to a [`MergeSink`] once.
//!
//! Each open run costs a block buffer (64 KiB), so memory bounds how many runs
//! one merge can read: the *fan-in*. With more runs than that, [`merge_all`]
//! first merges the smallest runs into bigger ones — merging
//! `runs − fan_in + 1` at first, so every later merge is full — the same
//! policy as an optimal Huffman-style merge tree, which keeps the bytes
//! re-written by intermediate merges small.

mod loser_tree;

pub use loser_tree::LoserTree;

use std::path::{Path, PathBuf};

use dupgram_runs::{RunError, RunHeader, RunKind, RunReader, RunSummary, RunWriter};

/// Receives the merged stream: each distinct n-gram once, with its summed
/// count and, from postings runs, all its occurrences in increasing order.
pub trait MergeSink {
    type Error: From<RunError>;
    fn accept(&mut self, ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), Self::Error>;
}

impl<W: std::io::Write> MergeSink for RunWriter<W> {
    type Error = RunError;
    fn accept(&mut self, ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), RunError> {
        match self.header().kind {
            RunKind::Counts => self.push(ngram, count),
            RunKind::Postings => self.push_postings(ngram, occurrences),
        }
    }
}

/// Asked every few thousand entries whether to stop, so Ctrl-C is prompt,
/// and told how far the merge got.
pub trait Interrupt {
    fn interrupted(&self) -> bool;
    /// `entries` more entries were read from the runs.
    fn advanced(&self, _entries: u64) {}
}

impl Interrupt for () {
    fn interrupted(&self) -> bool {
        false
    }
}

impl Interrupt for std::sync::atomic::AtomicBool {
    fn interrupted(&self) -> bool {
        self.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError<E> {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Sink(E),
    #[error("interrupted")]
    Interrupted,
    #[error("cannot merge with a fan-in below 2")]
    FanIn,
}

/// Entries read and written by one merge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    pub entries_in: u64,
    pub distinct_out: u64,
}

/// Merges `runs` into `sink`, summing the counts of equal n-grams.
pub fn merge_into<S: MergeSink, I: Interrupt + ?Sized>(
    mut runs: Vec<RunReader<std::fs::File>>,
    sink: &mut S,
    stop: &I,
) -> Result<MergeCounts, MergeError<S::Error>> {
    let mut live = Vec::with_capacity(runs.len());
    for run in &mut runs {
        live.push(run.advance()?);
    }
    let mut tree = LoserTree::new(runs.len(), |a, b| precedes(&runs, &live, a, b));
    let mut counts = MergeCounts::default();
    let n = runs.first().map_or(0, |r| usize::from(r.header().n));
    let mut acc: Vec<u32> = Vec::with_capacity(n);
    let mut acc_count = 0u64;
    // Occurrences from several runs interleave: gathered here, sorted when the n-gram is complete.
    let mut acc_occurrences: Vec<u64> = Vec::new();
    let mut sorted = true;
    loop {
        let w = tree.winner();
        if w >= runs.len() || !live[w] {
            break;
        }
        if acc_count > 0 && runs[w].ngram() == acc.as_slice() {
            acc_count = acc_count.saturating_add(runs[w].count());
            sorted &= acc_occurrences.last().is_none_or(|&l| runs[w].occurrences().first().is_none_or(|&f| l < f));
            acc_occurrences.extend_from_slice(runs[w].occurrences());
        } else {
            if acc_count > 0 {
                if !sorted {
                    acc_occurrences.sort_unstable();
                }
                sink.accept(&acc, acc_count, &acc_occurrences).map_err(MergeError::Sink)?;
                counts.distinct_out += 1;
            }
            acc.clear();
            acc.extend_from_slice(runs[w].ngram());
            acc_count = runs[w].count();
            acc_occurrences.clear();
            acc_occurrences.extend_from_slice(runs[w].occurrences());
            sorted = true;
        }
        counts.entries_in += 1;
        if counts.entries_in % 65536 == 0 {
            if stop.interrupted() {
                return Err(MergeError::Interrupted);
            }
            stop.advanced(65536);
        }
        live[w] = runs[w].advance()?;
        tree.replay(w, |a, b| precedes(&runs, &live, a, b));
    }
    if acc_count > 0 {
        if !sorted {
            acc_occurrences.sort_unstable();
        }
        sink.accept(&acc, acc_count, &acc_occurrences).map_err(MergeError::Sink)?;
        counts.distinct_out += 1;
    }
    stop.advanced(counts.entries_in % 65536);
    Ok(counts)
}

/// Loser-tree order: exhausted runs sort last; ties go to the lower index so
/// the merge is deterministic.
#[inline]
fn precedes(runs: &[RunReader<std::fs::File>], live: &[bool], a: usize, b: usize) -> bool {
    match (live[a], live[b]) {
        (true, true) => match runs[a].ngram().cmp(runs[b].ngram()) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => a < b,
        },
        (true, false) => true,
        (false, true) => false,
        (false, false) => a < b,
    }
}

/// A finished run on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFile {
    pub path: PathBuf,
    pub bytes: u64,
    /// Merge passes behind this run: 0 for a run written from a chunk.
    pub depth: u32,
}

/// What the intermediate merges cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Intermediate merges performed before the final one.
    pub intermediate_merges: u64,
    /// Bytes written by intermediate merges.
    pub bytes_written: u64,
    /// Depth of the merge tree, the final merge included (1 when all runs fit one merge).
    pub passes: u32,
    pub counts: MergeCounts,
}

/// Merges `runs` down to at most `fan_in` and then into `sink`.
///
/// Intermediate runs are written by `new_run_path` and deleted once merged;
/// the inputs are deleted as soon as they have been merged, and give their
/// blocks back to the disk as they are read ([`RunReader::open_consumed`]),
/// so disk use stays near the size of the data: a merge's output never sits
/// beside all of its inputs.
pub fn merge_all<S: MergeSink, I: Interrupt + ?Sized>(
    mut runs: Vec<RunFile>,
    header: RunHeader,
    fan_in: usize,
    mut new_run_path: impl FnMut() -> PathBuf,
    sink: &mut S,
    stop: &I,
) -> Result<MergeReport, MergeError<S::Error>> {
    if fan_in < 2 {
        return Err(MergeError::FanIn);
    }
    let mut report = MergeReport::default();
    while runs.len() > fan_in {
        if stop.interrupted() {
            return Err(MergeError::Interrupted);
        }
        // Smallest first; by path on ties, so the plan does not depend on timing.
        runs.sort_by(|a, b| (a.bytes, &a.path).cmp(&(b.bytes, &b.path)));
        let take = (runs.len() - fan_in + 1).min(fan_in);
        let group: Vec<RunFile> = runs.drain(..take).collect();
        let path = new_run_path();
        let merged = merge_group(&group, header, &path, stop).map_err(|e| match e {
            MergeError::Run(r) => MergeError::Run(r),
            MergeError::Interrupted => MergeError::Interrupted,
            MergeError::FanIn => MergeError::FanIn,
            MergeError::Sink(r) => MergeError::Run(r),
        })?;
        report.intermediate_merges += 1;
        report.bytes_written += merged.bytes;
        let depth = group.iter().map(|r| r.depth).max().unwrap_or(0) + 1;
        remove_runs(&group)?;
        runs.push(RunFile { path, bytes: merged.bytes, depth });
    }
    report.passes = runs.iter().map(|r| r.depth).max().unwrap_or(0) + 1;
    let readers = open_runs(&runs, header)?;
    report.counts = merge_into(readers, sink, stop)?;
    remove_runs(&runs)?;
    Ok(report)
}

fn merge_group<I: Interrupt + ?Sized>(
    group: &[RunFile],
    header: RunHeader,
    path: &Path,
    stop: &I,
) -> Result<RunSummary, MergeError<RunError>> {
    let readers = open_runs(group, header)?;
    let mut writer = RunWriter::create(path, header)?;
    merge_into(readers, &mut writer, stop)?;
    Ok(writer.finish()?.1)
}

/// Opens runs that are read once and removed after, and checks they belong
/// to the job described by `header`.
fn open_runs(runs: &[RunFile], header: RunHeader) -> Result<Vec<RunReader<std::fs::File>>, RunError> {
    runs.iter()
        .map(|r| {
            let reader = RunReader::open_consumed(&r.path)?;
            reader.expect_header(header)?;
            Ok(reader)
        })
        .collect()
}

fn remove_runs(runs: &[RunFile]) -> Result<(), RunError> {
    for r in runs {
        std::fs::remove_file(&r.path).map_err(|error| RunError::Io { path: r.path.clone(), error })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
