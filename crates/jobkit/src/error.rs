use std::path::PathBuf;

use dupgram_chunker::LayoutError;
use dupgram_corpus::CorpusError;
use dupgram_lexicon::LexiconError;
use dupgram_runs::RunError;

/// Everything that can stop a job. Messages name the file concerned.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Lexicon(#[from] LexiconError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}: cannot write Parquet: {what}")]
    Parquet { path: PathBuf, what: String },
    #[error("--memory {budget} is too small: {what}")]
    Memory { budget: String, what: String },
    #[error("the input changed while it was being read: {0}")]
    Changed(String),
    #[error("{0}")]
    Usage(String),
    /// A file of the work in progress that is damaged or of another kind.
    #[error("{0}")]
    Corrupt(String),
    #[error("interrupted")]
    Interrupted,
}

impl PipelineError {
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        PipelineError::Io { path: path.into(), error }
    }

    /// The file and the I/O error, when an I/O error on a named file stopped
    /// the job (the caller words a full disk, say, its own way).
    pub fn io_failure(&self) -> Option<(&std::path::Path, &std::io::Error)> {
        match self {
            PipelineError::Io { path, error }
            | PipelineError::Run(RunError::Io { path, error })
            | PipelineError::Lexicon(LexiconError::Io { path, error })
            | PipelineError::Corpus(CorpusError::Spool { path, error }) => Some((path, error)),
            _ => None,
        }
    }
}

impl From<dupgram_vocab::VocabError> for PipelineError {
    fn from(e: dupgram_vocab::VocabError) -> Self {
        use dupgram_vocab::VocabError;
        match e {
            VocabError::Io { path, error } => PipelineError::Io { path, error },
            VocabError::Run(r) => PipelineError::Run(r),
            VocabError::Interrupted => PipelineError::Interrupted,
            other => PipelineError::Corrupt(other.to_string()),
        }
    }
}

impl<E: Into<PipelineError>> From<dupgram_merge::MergeError<E>> for PipelineError {
    fn from(e: dupgram_merge::MergeError<E>) -> Self {
        match e {
            dupgram_merge::MergeError::Run(r) => PipelineError::Run(r),
            dupgram_merge::MergeError::Sink(s) => s.into(),
            dupgram_merge::MergeError::Interrupted => PipelineError::Interrupted,
            dupgram_merge::MergeError::FanIn => PipelineError::Usage("merge fan-in below 2".into()),
        }
    }
}
