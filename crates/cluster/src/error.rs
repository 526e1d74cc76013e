//! What can stop a task: the crate's one error type, at the bottom so every
//! module can name it without going through the crate root.

use std::path::{Path, PathBuf};

use dupgram_pipeline::PipelineError;

/// Everything that can stop a task.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
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

impl ClusterError {
    /// The file and the I/O error, when an I/O error on a named file stopped
    /// the task (see [`PipelineError::io_failure`]).
    pub fn io_failure(&self) -> Option<(&Path, &std::io::Error)> {
        match self {
            ClusterError::Io { path, error } => Some((path, error)),
            ClusterError::Pipeline(e) => e.io_failure(),
            _ => None,
        }
    }
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
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        ClusterError::Io { path: path.into(), error }
    }

    pub fn corrupt(path: &Path, what: impl Into<String>) -> Self {
        ClusterError::Corrupt { path: path.to_owned(), what: what.into() }
    }
}
