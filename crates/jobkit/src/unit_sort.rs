//! Units grouped by a 128-bit key, out of core: each unit's key (four 32-bit
//! words) and number go into fixed-size chunks, each chunk is sorted and
//! spilled as a postings run, and a k-way merge hands each distinct key with
//! the numbers of its units, in order, to a sink.
//!
//! A bottom floor of the crate: the exact tests of `dedup` (`--exact`,
//! Benko's letters; `--exact-only`, normalised tokens) both group units this
//! way and differ only in their keys and in what their sinks do.

use std::path::Path;

use dupgram_chunker::{KeyLayout, PostingChunk};
use dupgram_merge::{MergeSink, RunFile};
use dupgram_runs::{RunHeader, RunWriter};

use crate::control::Control;
use crate::error::PipelineError;
use crate::merging::merge_in;

/// Unit keys being sorted into runs in `dir`.
///
/// Runs are named `exact-NNNNNN.dgr` unless [`UnitSort::named`] says otherwise.
pub struct UnitSort<'a> {
    layout: KeyLayout,
    header: RunHeader,
    chunk: PostingChunk<2>,
    runs: Vec<RunFile>,
    dir: &'a Path,
    /// The runs' names begin with it.
    prefix: String,
    /// Bytes written as runs so far.
    pub spilled: u64,
}

impl<'a> UnitSort<'a> {
    /// Chunks of `capacity` units, or as many as half of `working` bytes
    /// hold; runs tagged `tag`, named `{name}-NNNNNN.dgr` in `dir`.
    pub fn new(dir: &'a Path, working: u64, capacity: Option<usize>, tag: u64) -> Result<Self, PipelineError> {
        let layout = KeyLayout::new(4, u32::MAX)?;
        let capacity =
            capacity.unwrap_or((working / 2 / PostingChunk::<2>::item_bytes(layout) as u64).max(4096) as usize);
        Ok(UnitSort {
            layout,
            header: RunHeader::postings(4, tag),
            chunk: PostingChunk::<2>::new(layout, capacity),
            runs: Vec::new(),
            dir,
            prefix: "exact".into(),
            spilled: 0,
        })
    }

    /// Runs named `{prefix}-NNNNNN.dgr`, so several sorts can spill into one directory.
    pub fn named(mut self, prefix: String) -> Self {
        self.prefix = prefix;
        self
    }

    /// Adds unit `unit` under `key`; spills the chunk when it is full.
    pub fn push(&mut self, key: [u32; 4], unit: u64) -> Result<(), PipelineError> {
        self.chunk.push(self.layout.pack::<2>(&key), unit);
        if self.chunk.is_full() { self.spill() } else { Ok(()) }
    }

    fn spill(&mut self) -> Result<(), PipelineError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(format!("{}-{:06}.dgr", self.prefix, self.runs.len()));
        let mut writer = RunWriter::create(&path, self.header)?;
        self.chunk.drain_sorted(|key, units| writer.push_postings(key, units))?;
        let (_, summary) = writer.finish()?;
        self.spilled += summary.bytes;
        self.runs.push(RunFile { path, bytes: summary.bytes, depth: 0 });
        Ok(())
    }

    /// Runs another [`UnitSort`] with the same `tag` wrote (perhaps another
    /// process), ready to merge; intermediate merges go to `dir`.
    pub fn sorted(dir: &'a Path, runs: Vec<RunFile>, tag: u64) -> SortedUnits<'a> {
        SortedUnits { runs, header: RunHeader::postings(4, tag), dir, prefix: "exact".into(), spilled: 0 }
    }

    /// Spills what is left and gives the chunk's memory back, before
    /// whatever the caller allocates for the merge.
    pub fn finish(mut self) -> Result<SortedUnits<'a>, PipelineError> {
        self.spill()?;
        Ok(SortedUnits {
            runs: self.runs,
            header: self.header,
            dir: self.dir,
            prefix: self.prefix,
            spilled: self.spilled,
        })
    }
}

/// The sorted runs of a [`UnitSort`], ready to merge.
pub struct SortedUnits<'a> {
    runs: Vec<RunFile>,
    header: RunHeader,
    dir: &'a Path,
    /// Intermediate merges are named `{prefix}-merge…`.
    prefix: String,
    /// Bytes written as runs (intermediate merges not counted).
    pub spilled: u64,
}

impl SortedUnits<'_> {
    /// Intermediate merges named `{prefix}-merge…`.
    pub fn named(mut self, prefix: String) -> Self {
        self.prefix = prefix;
        self
    }

    /// The runs, to be merged later (by [`UnitSort::sorted`]).
    pub fn into_runs(self) -> Vec<RunFile> {
        self.runs
    }

    /// Merges every run into `sink`, at most `fan_in` runs at a time: each
    /// distinct key once, with the numbers of its units in order.
    pub fn merge(
        self,
        fan_in: usize,
        sink: &mut impl MergeSink<Error = PipelineError>,
        control: &Control,
    ) -> Result<(), PipelineError> {
        let dir = self.dir;
        merge_in(dir, &format!("{}-merge", self.prefix), self.runs, self.header, fan_in, sink, control)?;
        Ok(())
    }
}
