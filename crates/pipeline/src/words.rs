//! Word-ID streams on disk: written by the lexicon pass (one per worker),
//! read back by the passes after it instead of the corpus (see
//! [`dupgram_lexicon::stream`] for the format).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use dupgram_lexicon::stream::{
    END_OF_DOCUMENT, EPOCH_END, FIRST_WORD, FRAME_TARGET, OVERFLOW, SLOT, StreamReader, StreamWriter,
};

use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;

/// Bytes a stream reader holds: its file buffer, a frame (its buffer may
/// grow to twice that), the frame's codes (at most one per byte), and a
/// walk in parts' copy of them (with the last n-gram's codes before them).
pub(crate) const READ_BYTES: u64 =
    (64 << 10) + 2 * (FRAME_TARGET as u64 + 16) + 4 * (FRAME_TARGET as u64 + 16) + 4 * (FRAME_TARGET as u64 + 80);

/// A stream is cut into segment files of about this many bytes, so that
/// the pass that reads it for the last time gives each back to the disk as
/// soon as it is read: the runs that pass writes then take the place of
/// the stream instead of joining it on the disk.
pub(crate) const SEGMENT_BYTES: u64 = 64 << 20;

/// One worker's stream, being written, segment by segment.
pub(crate) struct WordsOut {
    dir: PathBuf,
    name: String,
    path: PathBuf,
    writer: StreamWriter<File>,
    /// Finished segments.
    segments: Vec<PathBuf>,
    /// Bytes of the finished segments.
    bytes: u64,
    segment_bytes: u64,
}

/// A finished stream: its segments, in order.
#[derive(Debug, Clone)]
pub(crate) struct WordsFile {
    pub segments: Vec<PathBuf>,
    pub bytes: u64,
}

impl WordsFile {
    /// A name for messages: the stream's first segment.
    pub fn name(&self) -> std::path::Display<'_> {
        self.segments.first().map_or(Path::new("(empty stream)"), PathBuf::as_path).display()
    }

    /// Removes the segments still on disk.
    pub fn remove(&self) {
        for path in &self.segments {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl WordsOut {
    /// Worker `worker`'s stream in `dir`.
    pub fn create(dir: &Path, worker: usize) -> Result<Self, PipelineError> {
        Self::with_segments(dir, worker, SEGMENT_BYTES)
    }

    /// [`create`](Self::create), cutting segments at `segment_bytes`.
    pub fn with_segments(dir: &Path, worker: usize, segment_bytes: u64) -> Result<Self, PipelineError> {
        Self::named(dir, format!("w{worker}"), segment_bytes)
    }

    /// A stream named `words-{name}-NNNNN.dgw` in `dir`.
    pub fn create_named(dir: &Path, name: &str) -> Result<Self, PipelineError> {
        Self::named(dir, name.to_owned(), SEGMENT_BYTES)
    }

    fn named(dir: &Path, name: String, segment_bytes: u64) -> Result<Self, PipelineError> {
        let (path, writer) = Self::segment(dir, &name, 0)?;
        Ok(WordsOut { dir: dir.to_owned(), name, path, writer, segments: Vec::new(), bytes: 0, segment_bytes })
    }

    fn segment(dir: &Path, name: &str, number: usize) -> Result<(PathBuf, StreamWriter<File>), PipelineError> {
        let path = dir.join(format!("words-{name}-{number:05}.dgw"));
        let file = File::create(&path).map_err(|e| PipelineError::io(&path, e))?;
        let writer = StreamWriter::new(file).map_err(|e| PipelineError::io(&path, e))?;
        Ok((path, writer))
    }

    /// Writes codes as a stream reader hands them over ([`END_OF_DOCUMENT`],
    /// [`OVERFLOW`], [`FIRST_WORD`] + a first-seen ID, [`SLOT`] | a slot,
    /// [`EPOCH_END`] | slots); starts a new segment when this one is full.
    pub fn codes(&mut self, codes: &[u32]) -> Result<(), PipelineError> {
        let mut write = || -> std::io::Result<()> {
            for &code in codes {
                match code {
                    END_OF_DOCUMENT => self.writer.end_document()?,
                    OVERFLOW => self.writer.overflow()?,
                    _ if code & EPOCH_END == EPOCH_END => self.writer.epoch_end(code & !EPOCH_END)?,
                    _ if code & SLOT != 0 => self.writer.slot(code & !SLOT)?,
                    word => self.writer.word(word - FIRST_WORD)?,
                }
            }
            Ok(())
        };
        write().map_err(|e| PipelineError::io(&self.path, e))?;
        if self.writer.bytes_written() >= self.segment_bytes {
            let (path, writer) = Self::segment(&self.dir, &self.name, self.segments.len() + 1)?;
            let full = std::mem::replace(&mut self.writer, writer);
            let done = std::mem::replace(&mut self.path, path);
            let (_, bytes) = full.finish().map_err(|e| PipelineError::io(&done, e))?;
            self.bytes += bytes;
            self.segments.push(done);
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<WordsFile, PipelineError> {
        let (_, bytes) = self.writer.finish().map_err(|e| PipelineError::io(&self.path, e))?;
        self.segments.push(self.path);
        Ok(WordsFile { segments: self.segments, bytes: self.bytes + bytes })
    }
}

/// Reads a stream over a vocabulary of `vocabulary` words and hands each
/// frame's codes to `frame`; returns the documents it held. With `consume`
/// (the stream's last reading) each segment is removed once read. Stops
/// early (interrupted) when `abort` or the control's stop flag is set.
pub(crate) fn read_words(
    file: &WordsFile,
    vocabulary: u32,
    consume: bool,
    control: &Control,
    abort: &AtomicBool,
    mut frame: impl FnMut(&[u32]) -> Result<(), PipelineError>,
) -> Result<u64, PipelineError> {
    let mut codes = Vec::new();
    let mut documents = 0;
    for path in &file.segments {
        let named = |what: String| PipelineError::Corrupt(format!("{}: {what}", path.display()));
        let input = File::open(path).map_err(|e| PipelineError::io(path, e))?;
        let mut reader = StreamReader::new(BufReader::with_capacity(64 << 10, input), vocabulary)
            .map_err(|e| named(e.to_string()))?;
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
        documents += reader.documents();
        if consume {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(documents)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_in_many_segments_reads_as_one_and_its_last_reading_frees_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = WordsOut::with_segments(dir.path(), 3, 100).unwrap();
        let mut written = Vec::new();
        for doc in 0..400u32 {
            let codes: Vec<u32> =
                (0..doc % 13).map(|i| FIRST_WORD + (doc * 7 + i) % 5000).chain([END_OF_DOCUMENT]).collect();
            out.codes(&codes).unwrap();
            written.extend(codes);
        }
        out.codes(&[OVERFLOW, END_OF_DOCUMENT]).unwrap();
        written.extend([OVERFLOW, END_OF_DOCUMENT]);
        let file = out.finish().unwrap();
        assert!(file.segments.len() > 3, "{} segments", file.segments.len());
        let on_disk: u64 = file.segments.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
        assert_eq!(on_disk, file.bytes);
        let (control, abort) = (Control::default(), AtomicBool::new(false));
        for consume in [false, true] {
            let mut read = Vec::new();
            let documents = read_words(&file, 5000, consume, &control, &abort, |codes| {
                read.extend_from_slice(codes);
                Ok(())
            })
            .unwrap();
            assert_eq!(documents, 401);
            assert_eq!(read, written);
        }
        assert!(file.segments.iter().all(|p| !p.exists()), "the last reading removed every segment");
    }
}
