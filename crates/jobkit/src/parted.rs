//! Sorted output cut into runs by part (bucket of n-grams, range of
//! documents): the stream comes in part order, so each part is one
//! contiguous stretch and gets a run of its own.

use std::io::BufWriter;
use std::path::PathBuf;

use dupgram_merge::RunFile;
use dupgram_runs::{RunHeader, RunWriter};

use crate::error::PipelineError;

pub struct PartedRuns {
    header: RunHeader,
    current: Option<(usize, RunWriter<BufWriter<std::fs::File>>, PathBuf)>,
    finished: Vec<(usize, RunFile)>,
}

impl PartedRuns {
    pub fn new(header: RunHeader) -> Self {
        PartedRuns { header, current: None, finished: Vec::new() }
    }

    /// The writer of part `part`: the open one, or — when the part changed —
    /// a new run at `path(part)` after closing the open one.
    pub fn writer(
        &mut self,
        part: usize,
        path: impl FnOnce(usize) -> PathBuf,
    ) -> Result<&mut RunWriter<BufWriter<std::fs::File>>, PipelineError> {
        if self.current.as_ref().is_none_or(|(p, _, _)| *p != part) {
            self.close()?;
            let path = path(part);
            self.current = Some((part, RunWriter::create(&path, self.header)?, path));
        }
        Ok(&mut self.current.as_mut().expect("a run is open").1)
    }

    fn close(&mut self) -> Result<(), PipelineError> {
        if let Some((part, writer, path)) = self.current.take() {
            let (_, summary) = writer.finish()?;
            self.finished.push((part, RunFile { path, bytes: summary.bytes, depth: 0 }));
        }
        Ok(())
    }

    /// The runs written, each with its part.
    pub fn finish(mut self) -> Result<Vec<(usize, RunFile)>, PipelineError> {
        self.close()?;
        Ok(self.finished)
    }
}
