//! Word-ID streams on disk: written by the lexicon pass (one per worker),
//! read back by the passes after it instead of the corpus (see
//! [`dupgram_lexicon::stream`] for the format).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use dupgram_lexicon::stream::{END_OF_DOCUMENT, FIRST_WORD, FRAME_TARGET, OVERFLOW, StreamReader, StreamWriter};

use crate::control::Control;
use crate::error::PipelineError;

/// Bytes a stream reader holds: its file buffer, a frame (its buffer may
/// grow to twice that), the frame's codes (at most one per byte).
pub(crate) const READ_BYTES: u64 = (64 << 10) + 2 * (FRAME_TARGET as u64 + 16) + 4 * (FRAME_TARGET as u64 + 16);

/// One worker's stream, being written.
pub(crate) struct WordsOut {
    path: PathBuf,
    writer: StreamWriter<File>,
}

/// A finished stream.
#[derive(Debug, Clone)]
pub(crate) struct WordsFile {
    pub path: PathBuf,
    pub bytes: u64,
}

impl WordsOut {
    /// Worker `worker`'s stream in `dir`.
    pub fn create(dir: &Path, worker: usize) -> Result<Self, PipelineError> {
        let path = dir.join(format!("words-w{worker}.dgw"));
        let file = File::create(&path).map_err(|e| PipelineError::io(&path, e))?;
        let writer = StreamWriter::new(file).map_err(|e| PipelineError::io(&path, e))?;
        Ok(WordsOut { path, writer })
    }

    /// Writes codes as the stream holds them ([`END_OF_DOCUMENT`], [`OVERFLOW`],
    /// or [`FIRST_WORD`] + a first-seen ID).
    pub fn codes(&mut self, codes: &[u32]) -> Result<(), PipelineError> {
        let mut write = || -> std::io::Result<()> {
            for &code in codes {
                match code {
                    END_OF_DOCUMENT => self.writer.end_document()?,
                    OVERFLOW => self.writer.overflow()?,
                    word => self.writer.word(word - FIRST_WORD)?,
                }
            }
            Ok(())
        };
        write().map_err(|e| PipelineError::io(&self.path, e))
    }

    pub fn finish(self) -> Result<WordsFile, PipelineError> {
        let path = self.path;
        let (_, bytes) = self.writer.finish().map_err(|e| PipelineError::io(&path, e))?;
        Ok(WordsFile { path, bytes })
    }
}

/// Reads a stream over a vocabulary of `vocabulary` words and hands each
/// frame's codes to `frame`; returns the documents it held. Stops early
/// (interrupted) when `abort` or the control's stop flag is set.
pub(crate) fn read_words(
    file: &WordsFile,
    vocabulary: u32,
    control: &Control,
    abort: &AtomicBool,
    mut frame: impl FnMut(&[u32]) -> Result<(), PipelineError>,
) -> Result<u64, PipelineError> {
    let named = |what: String| PipelineError::Corrupt(format!("{}: {what}", file.path.display()));
    let input = File::open(&file.path).map_err(|e| PipelineError::io(&file.path, e))?;
    let mut reader =
        StreamReader::new(BufReader::with_capacity(64 << 10, input), vocabulary).map_err(|e| named(e.to_string()))?;
    let mut codes = Vec::new();
    loop {
        if control.interrupted() || abort.load(Ordering::Relaxed) {
            return Err(PipelineError::Interrupted);
        }
        if !reader.next_frame(&mut codes).map_err(|e| named(e.to_string()))? {
            break;
        }
        control.progress.bytes.fetch_add(codes.len() as u64, Ordering::Relaxed);
        frame(&codes)?;
    }
    Ok(reader.documents())
}

/// Runs `each` on every stream (with its index), a thread per stream; outputs in stream order.
/// The first error stops the others.
pub(crate) fn each_stream<T: Send>(
    files: &[WordsFile],
    each: impl Fn(usize, &WordsFile, &AtomicBool) -> Result<T, PipelineError> + Sync,
) -> Result<Vec<T>, PipelineError> {
    let abort = AtomicBool::new(false);
    let results: Vec<Result<T, PipelineError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let (each, abort) = (&each, &abort);
                scope.spawn(move || each(i, file, abort).inspect_err(|_| abort.store(true, Ordering::Relaxed)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(PipelineError::Usage("internal error: a worker thread panicked".into())))
            })
            .collect()
    });
    let mut outputs = Vec::with_capacity(results.len());
    let mut first_error = None;
    for result in results {
        match result {
            Ok(v) => outputs.push(v),
            // The first real error wins: the others only stopped because of it.
            Err(PipelineError::Interrupted) => first_error = first_error.or(Some(PipelineError::Interrupted)),
            Err(e) => {
                if !matches!(first_error, Some(ref f) if !matches!(f, PipelineError::Interrupted)) {
                    first_error = Some(e);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(outputs),
    }
}
