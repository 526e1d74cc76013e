use std::path::PathBuf;

use dupgram_runs::RunError;

/// Why the vocabulary could not be numbered or read back. Messages name the file.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}: corrupt {kind}: {what}")]
    Corrupt { path: PathBuf, kind: &'static str, what: String },
    #[error(transparent)]
    Run(#[from] RunError),
    /// Two different words met under one 128-bit fingerprint. The words
    /// were compared, so this is found, never taken for one word; the job
    /// stops rather than guess which token was which.
    #[error(
        "two different words share one 128-bit fingerprint ({a:?} and {b:?}); nothing was counted wrong, but this \
         run cannot tell their tokens apart: please report it"
    )]
    Collision { a: String, b: String },
    /// The parts of the work did not agree with each other.
    #[error("{0}")]
    Inconsistent(String),
    #[error("interrupted")]
    Interrupted,
    /// Writing the lexicon file failed (the caller knows its name).
    #[error("writing the lexicon: {0}")]
    Lexicon(#[from] std::io::Error),
}

impl VocabError {
    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        VocabError::Io { path: path.into(), error }
    }
}

impl From<dupgram_merge::MergeError<VocabError>> for VocabError {
    fn from(e: dupgram_merge::MergeError<VocabError>) -> Self {
        match e {
            dupgram_merge::MergeError::Run(r) => VocabError::Run(r),
            dupgram_merge::MergeError::Sink(s) => s,
            dupgram_merge::MergeError::Interrupted => VocabError::Interrupted,
            dupgram_merge::MergeError::FanIn => VocabError::Inconsistent("merge fan-in below 2".into()),
        }
    }
}
