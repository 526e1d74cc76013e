use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use memchr::memmem;

use crate::{CorpusError, Format, ParquetRows, ReadOptions, Utf8Repair, parse_record};

/// Where a corpus comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Path(PathBuf),
    /// Bytes `start..end` of an uncompressed file, cut at document
    /// boundaries (see [`crate::document_boundary`]): one shard of a corpus
    /// read by several tasks.
    Range {
        path: PathBuf,
        start: u64,
        end: u64,
    },
    /// Standard input; with `spool`, every byte read is also copied there, so
    /// a second pass can read the same corpus again.
    Stdin {
        spool: Option<PathBuf>,
    },
}

impl Input {
    pub fn name(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Range { path, start, end } => format!("{} (bytes {start}..{end})", path.display()),
            Input::Stdin { .. } => "<stdin>".into(),
        }
    }

    /// Size in bytes, when known in advance.
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::Path(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Input::Range { start, end, .. } => Some(end - start),
            Input::Stdin { .. } => None,
        }
    }

    /// The file behind the input, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Path(path) | Input::Range { path, .. } => Some(path),
            Input::Stdin { .. } => None,
        }
    }

    /// What the file behind the input is now (see [`FileStamp`]); none for
    /// standard input, which is read once (a job that reads it again reads
    /// its own copy), a pipe or a device (read once, or not again), or a
    /// file that cannot be looked at.
    pub fn stamp(&self) -> Option<FileStamp> {
        let meta = std::fs::metadata(self.path()?).ok().filter(std::fs::Metadata::is_file)?;
        #[cfg(unix)]
        let identity = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let identity = (0, 0);
        Some(FileStamp { identity, len: meta.len(), modified: meta.modified().ok() })
    }
}

/// A file's device and inode, length and modification time: what changes
/// when the file is written to, truncated or replaced. A job that reads a
/// file twice compares its stamps from before the first reading and after
/// the last one to know the two readings read the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    identity: (u64, u64),
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// A stretch of one document's text inside a [`Batch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Byte range in [`Batch::text`].
    pub text: Range<usize>,
    /// The document's number, counting from 0 over all inputs in order.
    pub doc: u64,
    /// On a document's first piece: its ID, a range in [`Batch::ids`].
    pub id: Option<Range<usize>>,
    /// The document's last piece.
    pub last: bool,
}

/// Text of whole documents, or of pieces of very long ones, read in one go.
#[derive(Debug, Default)]
pub struct Batch {
    pub text: String,
    pub ids: String,
    pub pieces: Vec<Piece>,
    open: bool,
}

impl Batch {
    pub fn clear(&mut self) {
        self.text.clear();
        self.ids.clear();
        self.pieces.clear();
        self.open = false;
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Bytes the batch holds: its text, its IDs and its pieces, which a
    /// batch's size bounds (short documents with long IDs, URLs say, hold
    /// more in IDs and pieces than in text).
    pub fn held_bytes(&self) -> usize {
        self.text.len() + self.ids.len() + self.pieces.len() * std::mem::size_of::<Piece>()
    }

    /// The text of a piece.
    pub fn piece_text(&self, p: &Piece) -> &str {
        &self.text[p.text.clone()]
    }

    /// The ID of a document's first piece.
    pub fn piece_id(&self, p: &Piece) -> Option<&str> {
        p.id.as_ref().map(|r| &self.ids[r.clone()])
    }

    fn begin(&mut self, doc: u64, id: Option<&str>) {
        debug_assert!(!self.open);
        let id = id.map(|id| {
            let start = self.ids.len();
            self.ids.push_str(id);
            start..self.ids.len()
        });
        let at = self.text.len();
        self.pieces.push(Piece { text: at..at, doc, id, last: false });
        self.open = true;
    }

    fn end(&mut self, last: bool) {
        if self.open {
            let end = self.text.len();
            let p = self.pieces.last_mut().expect("an open piece");
            p.text.end = end;
            p.last = last;
            self.open = false;
        }
    }
}

/// What reading found, beyond the documents themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub documents: u64,
    /// Bytes read from the inputs as stored (compressed, if they are).
    pub input_bytes: u64,
    /// Bytes of text after decompression.
    pub text_bytes: u64,
    /// Invalid UTF-8 sequences replaced by U+FFFD.
    pub replaced_utf8: u64,
    /// Where the first replacement happened.
    pub first_replaced_at: Option<String>,
    /// Malformed or over-long records skipped under `skip_bad`.
    pub skipped_records: u64,
    /// Why the first skipped record was skipped.
    pub first_skipped: Option<String>,
}

/// Reads all inputs, in order, into batches.
pub struct CorpusReader {
    inputs: Vec<Input>,
    next_input: usize,
    current: Option<OpenInput>,
    options: ReadOptions,
    progress: Arc<AtomicU64>,
    next_doc: u64,
    stats: ReadStats,
    line_buf: Vec<u8>,
}

impl CorpusReader {
    /// `progress` is advanced by every byte read from the inputs as stored.
    pub fn new(inputs: Vec<Input>, options: ReadOptions, progress: Arc<AtomicU64>) -> Self {
        CorpusReader {
            inputs,
            next_input: 0,
            current: None,
            options,
            progress,
            next_doc: 0,
            stats: ReadStats::default(),
            line_buf: Vec::new(),
        }
    }

    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// Fills `batch` with about `target` bytes ([`Batch::held_bytes`]); false once every input is read.
    pub fn fill(&mut self, batch: &mut Batch, target: usize) -> Result<bool, CorpusError> {
        batch.clear();
        while batch.held_bytes() < target {
            if self.current.is_none() {
                if self.next_input == self.inputs.len() {
                    break;
                }
                let input = self.inputs[self.next_input].clone();
                self.next_input += 1;
                self.current =
                    Some(OpenInput::open(&input, &self.options, self.progress.clone(), self.inputs.len() > 1)?);
            }
            let input = self.current.as_mut().expect("an open input");
            let done = match input.format {
                Format::Text => input.pump_text(batch, target, &mut self.next_doc, &mut self.stats, &self.options)?,
                Format::Jsonl => input.pump_jsonl(
                    batch,
                    target,
                    &mut self.next_doc,
                    &mut self.stats,
                    &mut self.line_buf,
                    &self.options,
                )?,
                Format::Vertical => input.pump_vertical(
                    batch,
                    target,
                    &mut self.next_doc,
                    &mut self.stats,
                    &mut self.line_buf,
                    &self.options,
                )?,
                Format::Parquet => {
                    input.pump_parquet(batch, target, &mut self.next_doc, &mut self.stats, &self.options)?
                }
            };
            if !done {
                // The batch is full (a vertical batch may end early, at a document's end).
                break;
            }
            let finished = self.current.take().expect("an open input");
            self.stats.input_bytes += finished.position.load(Ordering::Relaxed);
            self.stats.text_bytes += finished.decoded.load(Ordering::Relaxed);
            finished.close()?;
        }
        batch.end(false);
        Ok(!batch.is_empty())
    }
}

/// Counts bytes read from the stored input, for progress and error offsets.
pub(crate) struct Counting<R> {
    inner: R,
    position: Arc<AtomicU64>,
    progress: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// Counts into `position` only.
    pub(crate) fn new(inner: R, position: Arc<AtomicU64>) -> Self {
        Counting { inner, position, progress: Arc::new(AtomicU64::new(0)) }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.position.fetch_add(n as u64, Ordering::Relaxed);
        self.progress.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Copies what is read to a file (standard input's spool). The copy is
/// flushed, and a failure to write it reported, when the input ends. Text
/// that comes plain is copied zstd-compressed ([`crate::spool_encoder`]:
/// 0.38 of its size on generated web-like text, and read back faster than
/// the disk gives it plain); input that comes
/// compressed already (gzip, zstd) is copied as it is, so the copy reads
/// back as the input did.
struct Tee<R> {
    inner: R,
    copy: Option<Spool>,
    path: PathBuf,
}

enum Spool {
    /// Nothing read yet: the first bytes decide.
    Undecided(File),
    Plain(std::io::BufWriter<File>),
    Zstd(zstd::Encoder<'static, std::io::BufWriter<File>>),
}

impl<R: Read> Tee<R> {
    fn write_copy(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let spool = self.copy.take().ok_or_else(|| std::io::Error::other("the copy already ended"))?;
        let mut spool = match spool {
            Spool::Undecided(file) => {
                let buffered = std::io::BufWriter::with_capacity(256 * 1024, file);
                if crate::spool_compresses(bytes) {
                    Spool::Zstd(crate::spool_encoder(buffered, crate::SPOOL_LEVEL)?)
                } else {
                    Spool::Plain(buffered)
                }
            }
            other => other,
        };
        let written = match &mut spool {
            Spool::Undecided(_) => Err(std::io::Error::other("the copy's form was not decided")),
            Spool::Plain(w) => w.write_all(bytes),
            Spool::Zstd(z) => z.write_all(bytes),
        };
        self.copy = Some(spool);
        written
    }

    fn finish_copy(&mut self) -> std::io::Result<()> {
        match self.copy.take() {
            None | Some(Spool::Undecided(_)) => Ok(()),
            Some(Spool::Plain(mut w)) => w.flush(),
            Some(Spool::Zstd(z)) => z.finish()?.flush(),
        }
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let copied = if n == 0 { self.finish_copy() } else { self.write_copy(&buf[..n]) };
        copied.map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot copy standard input to {}: {e}", self.path.display()))
        })?;
        Ok(n)
    }
}

struct OpenInput {
    name: String,
    /// Prefix of default document IDs: empty with one input, `name:` with several.
    label: String,
    format: Format,
    src: Box<dyn BufRead + Send>,
    position: Arc<AtomicU64>,
    decoded: Arc<AtomicU64>,
    line: u64,
    /// In the text format: inside a line; in vertical: inside `<doc>`.
    in_doc: bool,
    /// Vertical: the line in the line buffer (a `<doc>` that ended a batch)
    /// is to be taken again before reading on.
    replay: bool,
    utf8: Utf8Repair,
    /// A Parquet input's rows (`src` is then empty), the stored bytes of
    /// the row groups begun, and the progress counter.
    parquet: Option<(ParquetRows, (usize, u64), Arc<AtomicU64>)>,
}

/// Bytes of decompressed text buffered per input.
const DECODED_BUFFER: usize = 256 * 1024;

impl OpenInput {
    fn open(
        input_spec: &Input,
        options: &ReadOptions,
        progress: Arc<AtomicU64>,
        several: bool,
    ) -> Result<OpenInput, CorpusError> {
        let name = input_spec.name();
        let position = Arc::new(AtomicU64::new(0));
        let open_err = |error| CorpusError::Open { name: name.clone(), error };
        let raw: Box<dyn Read + Send> = match input_spec {
            Input::Path(p) => Box::new(File::open(p).map_err(open_err)?),
            Input::Range { path, start, end } => {
                let mut file = File::open(path).map_err(open_err)?;
                file.seek(SeekFrom::Start(*start)).map_err(open_err)?;
                Box::new(file.take(end.saturating_sub(*start)))
            }
            Input::Stdin { spool: None } => Box::new(std::io::stdin()),
            Input::Stdin { spool: Some(path) } => {
                let file = File::create(path).map_err(|error| CorpusError::Spool { path: path.clone(), error })?;
                Box::new(Tee { inner: std::io::stdin(), copy: Some(Spool::Undecided(file)), path: path.clone() })
            }
        };
        let mut raw = BufReader::with_capacity(
            64 * 1024,
            Counting { inner: raw, position: position.clone(), progress: progress.clone() },
        );
        let head = raw.fill_buf().map_err(open_err)?;
        let by_name = options.format.or_else(|| input_spec.path().and_then(Format::from_path));
        if by_name == Some(Format::Parquet) || (by_name.is_none() && head.starts_with(crate::PARQUET_MAGIC)) {
            let rows = match input_spec {
                Input::Path(path) => ParquetRows::open(path, &name, options)?,
                Input::Stdin { .. } => return Err(CorpusError::ParquetStdin { name }),
                Input::Range { .. } => {
                    return Err(CorpusError::ParquetFile { name, what: "cannot be read by byte ranges".into() });
                }
            };
            return Ok(OpenInput {
                label: if several { format!("{name}:") } else { String::new() },
                name,
                format: Format::Parquet,
                src: Box::new(std::io::empty()),
                position,
                decoded: Arc::new(AtomicU64::new(0)),
                line: 0,
                in_doc: false,
                replay: false,
                utf8: Utf8Repair::default(),
                parquet: Some((rows, (0, 0), progress)),
            });
        }
        let decoded: Box<dyn Read + Send> = if head.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::bufread::MultiGzDecoder::new(raw))
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            let mut z = zstd::Decoder::with_buffer(raw).map_err(open_err)?;
            z.window_log_max(options.zstd_window_log_max).map_err(open_err)?;
            Box::new(z)
        } else {
            Box::new(raw)
        };
        let decoded_bytes = Arc::new(AtomicU64::new(0));
        let decoded =
            Counting { inner: decoded, position: decoded_bytes.clone(), progress: Arc::new(AtomicU64::new(0)) };
        let mut input = OpenInput {
            label: if several { format!("{name}:") } else { String::new() },
            name,
            format: Format::Text,
            src: Box::new(BufReader::with_capacity(DECODED_BUFFER, decoded)),
            position,
            decoded: decoded_bytes,
            line: 0,
            in_doc: false,
            replay: false,
            utf8: Utf8Repair::default(),
            parquet: None,
        };
        input.format = match by_name {
            Some(f) => f,
            None => {
                let head = input
                    .src
                    .fill_buf()
                    .map_err(|e| read_error(&input.name, input.line, &input.position, e, options))?;
                Format::sniff(head)
            }
        };
        Ok(input)
    }
}

/// Turns an I/O error while reading an input into one that says where.
fn read_error(name: &str, line: u64, position: &AtomicU64, e: std::io::Error, options: &ReadOptions) -> CorpusError {
    if e.to_string().contains("Frame requires too much memory") {
        return CorpusError::Window { name: name.to_owned(), limit: 1u64 << options.zstd_window_log_max };
    }
    CorpusError::reading(name, line, position.load(Ordering::Relaxed), e)
}

/// How a line read for a record ended.
enum LineRead {
    Line,
    TooLong,
    End,
}

impl OpenInput {
    /// A read error met while reading line `line` (counted from 1).
    fn fail(&self, line: u64, e: std::io::Error, options: &ReadOptions) -> CorpusError {
        read_error(&self.name, line, &self.position, e, options)
    }

    fn default_id(&self, ordinal_in_file: u64) -> String {
        format!("{}{}", self.label, ordinal_in_file)
    }

    /// Reads everything left in the input, so standard input's spool is complete.
    fn close(mut self) -> Result<(), CorpusError> {
        let mut sink = [0u8; 8192];
        loop {
            match self.src.read(&mut sink) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(read_error(&self.name, self.line, &self.position, e, &ReadOptions::default())),
            }
        }
    }

    /// Reads one line into `buf` (without the newline), keeping at most `limit` bytes.
    fn read_line(&mut self, buf: &mut Vec<u8>, limit: usize, options: &ReadOptions) -> Result<LineRead, CorpusError> {
        buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let avail = match self.src.fill_buf() {
                Ok(a) => a,
                // The line counter moves once the line is read whole.
                Err(e) => return Err(self.fail(self.line + 1, e, options)),
            };
            if avail.is_empty() {
                return Ok(match (any, too_long) {
                    (false, _) => LineRead::End,
                    (true, true) => LineRead::TooLong,
                    (true, false) => LineRead::Line,
                });
            }
            any = true;
            let (take, ends) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            if !too_long {
                if buf.len() + take > limit {
                    too_long = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(&avail[..take]);
                }
            }
            self.src.consume(take + usize::from(ends));
            if ends {
                return Ok(if too_long { LineRead::TooLong } else { LineRead::Line });
            }
        }
    }

    /// One document per line, streamed in pieces of any length. True at the end of the input.
    fn pump_text(
        &mut self,
        batch: &mut Batch,
        target: usize,
        next_doc: &mut u64,
        stats: &mut ReadStats,
        options: &ReadOptions,
    ) -> Result<bool, CorpusError> {
        while batch.held_bytes() < target {
            let at_end = match self.src.fill_buf() {
                Ok(a) => a.is_empty(),
                // Between documents, the line counter has not reached the next one yet.
                Err(e) => return Err(self.fail(self.line + u64::from(!self.in_doc), e, options)),
            };
            if at_end {
                if self.in_doc {
                    self.end_doc(batch, stats, *next_doc - 1);
                }
                return Ok(true);
            }
            if !self.in_doc {
                self.line += 1;
                self.in_doc = true;
                let id = self.default_id(self.line);
                batch.begin(*next_doc, Some(&id));
                *next_doc += 1;
            } else if !batch.open {
                batch.begin(*next_doc - 1, None);
            }
            let before = self.utf8.replaced();
            // Buffered already: this second call does no I/O.
            let avail =
                self.src.fill_buf().map_err(|e| read_error(&self.name, self.line, &self.position, e, options))?;
            match memchr::memchr(b'\n', avail) {
                Some(i) => {
                    self.utf8.push(&avail[..i], true, &mut batch.text);
                    self.src.consume(i + 1);
                    self.note_replacements(before, stats);
                    self.end_doc(batch, stats, *next_doc - 1);
                }
                None => {
                    let n = avail.len();
                    self.utf8.push(avail, false, &mut batch.text);
                    self.src.consume(n);
                    self.note_replacements(before, stats);
                }
            }
        }
        Ok(false)
    }

    fn end_doc(&mut self, batch: &mut Batch, stats: &mut ReadStats, doc: u64) {
        if !batch.open {
            batch.begin(doc, None);
        }
        let before = self.utf8.replaced();
        self.utf8.flush(&mut batch.text);
        self.note_replacements(before, stats);
        batch.end(true);
        self.in_doc = false;
        stats.documents += 1;
    }

    fn note_replacements(&self, before: u64, stats: &mut ReadStats) {
        let added = self.utf8.replaced() - before;
        if added > 0 {
            stats.replaced_utf8 += added;
            stats.first_replaced_at.get_or_insert_with(|| format!("{}: line {}", self.name, self.line.max(1)));
        }
    }

    fn bad_record(&self, what: String, stats: &mut ReadStats, options: &ReadOptions) -> Result<(), CorpusError> {
        if !options.skip_bad {
            return Err(CorpusError::BadRecord { name: self.name.clone(), line: self.line, what });
        }
        stats.skipped_records += 1;
        stats.first_skipped.get_or_insert_with(|| format!("{}: line {}: {what}", self.name, self.line));
        Ok(())
    }

    fn too_long(&self, stats: &mut ReadStats, options: &ReadOptions) -> Result<(), CorpusError> {
        if !options.skip_bad {
            return Err(CorpusError::RecordTooLong {
                name: self.name.clone(),
                line: self.line,
                limit: options.max_record_bytes,
            });
        }
        self.bad_record(format!("longer than {} bytes", options.max_record_bytes), stats, options)
    }

    /// One JSON object per line. True at the end of the input.
    fn pump_jsonl(
        &mut self,
        batch: &mut Batch,
        target: usize,
        next_doc: &mut u64,
        stats: &mut ReadStats,
        line: &mut Vec<u8>,
        options: &ReadOptions,
    ) -> Result<bool, CorpusError> {
        while batch.held_bytes() < target {
            match self.read_line(line, options.max_record_bytes, options)? {
                LineRead::End => return Ok(true),
                LineRead::TooLong => {
                    self.line += 1;
                    self.too_long(stats, options)?;
                    continue;
                }
                LineRead::Line => self.line += 1,
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = match std::str::from_utf8(line) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => {
                    let fixed = String::from_utf8_lossy(line).into_owned();
                    let replaced =
                        fixed.matches(char::REPLACEMENT_CHARACTER).count() - count_literal_replacements(line);
                    stats.replaced_utf8 += replaced as u64;
                    stats.first_replaced_at.get_or_insert_with(|| format!("{}: line {}", self.name, self.line));
                    Cow::Owned(fixed)
                }
            };
            let record = match parse_record(&text, &options.text_field, &options.id_field) {
                Ok(r) => r,
                Err(e) => {
                    self.bad_record(format!("malformed JSON: {e}"), stats, options)?;
                    continue;
                }
            };
            let Some(body) = record.text else {
                self.bad_record(format!("no string field \"{}\"", options.text_field), stats, options)?;
                continue;
            };
            let id = record.id.unwrap_or_else(|| self.default_id(self.line));
            batch.begin(*next_doc, Some(&id));
            *next_doc += 1;
            batch.text.push_str(&body);
            batch.end(true);
            stats.documents += 1;
        }
        Ok(false)
    }

    /// One document per Parquet row. True at the end of the input.
    fn pump_parquet(
        &mut self,
        batch: &mut Batch,
        target: usize,
        next_doc: &mut u64,
        stats: &mut ReadStats,
        options: &ReadOptions,
    ) -> Result<bool, CorpusError> {
        let Some((rows, counted, progress)) = self.parquet.as_mut() else { return Ok(true) };
        while batch.held_bytes() < target {
            let next = rows.next_row()?;
            // Progress counts a row group's stored bytes when it is begun, the
            // rest (the footer) at the end; what was read to detect the format counts already.
            let begun = if next.is_some() { rows.row_group() + 1 } else { rows.row_groups() };
            let (groups, bytes) = counted;
            *bytes += (*groups..begun).map(|g| rows.row_group_bytes(g)).sum::<u64>();
            *groups = (*groups).max(begun);
            let total = if next.is_none() { rows.file_size() } else { (4 + *bytes).min(rows.file_size()) };
            let stored = total.saturating_sub(self.position.load(Ordering::Relaxed));
            self.position.fetch_add(stored, Ordering::Relaxed);
            progress.fetch_add(stored, Ordering::Relaxed);
            match next {
                None => return Ok(true),
                Some(Err(bad)) => {
                    if !options.skip_bad {
                        return Err(bad.error(&self.name));
                    }
                    stats.skipped_records += 1;
                    stats.first_skipped.get_or_insert_with(|| bad.describe(&self.name));
                }
                Some(Ok(row)) => {
                    let id = row.id.unwrap_or_else(|| format!("{}{}", self.label, row.row));
                    batch.begin(*next_doc, Some(&id));
                    *next_doc += 1;
                    batch.text.push_str(&row.text);
                    batch.end(true);
                    self.decoded.fetch_add(row.text.len() as u64, Ordering::Relaxed);
                    stats.documents += 1;
                }
            }
        }
        Ok(false)
    }

    /// Onion-style vertical text. True at the end of the input.
    fn pump_vertical(
        &mut self,
        batch: &mut Batch,
        target: usize,
        next_doc: &mut u64,
        stats: &mut ReadStats,
        line: &mut Vec<u8>,
        options: &ReadOptions,
    ) -> Result<bool, CorpusError> {
        // A batch that ends inside a document makes the next one continue it
        // on the same worker; so once past half its size, a batch ends with
        // the first document that ends, and batches spread over the workers.
        let enough = target / 2;
        while batch.held_bytes() < target {
            if std::mem::take(&mut self.replay) {
                // The `<doc>` line that ended the previous batch (already counted).
            } else if self.in_doc && self.token_lines(batch, *next_doc - 1, target, options)? {
                continue;
            } else {
                match self.read_line(line, options.max_record_bytes, options)? {
                    LineRead::End => {
                        if self.in_doc {
                            self.end_vertical_doc(batch, stats, *next_doc - 1);
                        }
                        return Ok(true);
                    }
                    LineRead::TooLong => {
                        self.line += 1;
                        self.too_long(stats, options)?;
                        continue;
                    }
                    LineRead::Line => self.line += 1,
                }
            }
            match VerticalLine::classify(line) {
                VerticalLine::DocOpen(attrs) => {
                    if self.in_doc {
                        self.end_vertical_doc(batch, stats, *next_doc - 1);
                        if batch.held_bytes() >= enough {
                            self.replay = true;
                            return Ok(false);
                        }
                    }
                    let id = attribute(attrs, b"id").map(|v| self.repaired_id(v, stats));
                    self.start_vertical_doc(batch, next_doc, id);
                }
                VerticalLine::DocClose => {
                    if self.in_doc {
                        self.end_vertical_doc(batch, stats, *next_doc - 1);
                        if batch.held_bytes() >= enough {
                            return Ok(false);
                        }
                    }
                }
                // Structure (<p>, </s>, <g/>, …): n-grams run across it.
                VerticalLine::Structure(_) | VerticalLine::Blank => {}
                VerticalLine::Token(word) => {
                    if !self.in_doc {
                        self.start_vertical_doc(batch, next_doc, None);
                    } else if !batch.open {
                        batch.begin(*next_doc - 1, None);
                    }
                    let before = self.utf8.replaced();
                    self.utf8.push(word, true, &mut batch.text);
                    self.note_replacements(before, stats);
                    // A column ending in `\r` is ended by a TAB, as in its line: the
                    // `\r` is part of the token (the line tokenizer drops one only
                    // where it ends a line).
                    if word.ends_with(b"\r") {
                        batch.text.push('\t');
                    }
                    batch.text.push('\n');
                }
            }
        }
        Ok(false)
    }

    /// Vertical: takes the token lines at the front of the read buffer
    /// (whole, not starting with `<`, none too long, valid UTF-8, as many as
    /// fit in a batch of `target` bytes) into document `doc` without
    /// classifying each; false when the buffer does not begin with a whole
    /// such line.
    ///
    /// The lines are copied as they are, in one go, each followed by its
    /// `\n`. The line-by-line path's text has each token line's first column
    /// and `\n`; the line tokenizer takes a line's first column (ending a
    /// token at a TAB, `\r` or `\n`) and makes no token of a blank line, so
    /// both give the same tokens. Most of a vertical file is token lines,
    /// and a token is a few bytes: one copy and one UTF-8 check per run of
    /// lines cost far less than classifying, checking and copying each.
    fn token_lines(
        &mut self,
        batch: &mut Batch,
        doc: u64,
        target: usize,
        options: &ReadOptions,
    ) -> Result<bool, CorpusError> {
        let avail = match self.src.fill_buf() {
            Ok(a) => a,
            Err(e) => return Err(self.fail(self.line + 1, e, options)),
        };
        // No more than the batch has room for (a line that does not fit goes line by line).
        let avail = &avail[..avail.len().min(target.saturating_sub(batch.held_bytes()))];
        if !batch.open {
            // As the line-by-line path does for whatever line of the document comes next.
            batch.begin(doc, None);
        }
        let (end, lines) = plain_token_lines(avail, options.max_record_bytes, &mut batch.text);
        if end == 0 {
            return Ok(false);
        }
        self.src.consume(end);
        self.line += lines;
        Ok(true)
    }

    /// A document ID from a `<doc>` line, invalid UTF-8 replaced and counted like the text's.
    fn repaired_id(&self, bytes: &[u8], stats: &mut ReadStats) -> String {
        if let Ok(id) = std::str::from_utf8(bytes) {
            // Nearly every ID: nothing to repair or count.
            return id.to_owned();
        }
        let id = String::from_utf8_lossy(bytes);
        let replaced = id.matches(char::REPLACEMENT_CHARACTER).count() - count_literal_replacements(bytes);
        if replaced > 0 {
            stats.replaced_utf8 += replaced as u64;
            stats.first_replaced_at.get_or_insert_with(|| format!("{}: line {}", self.name, self.line));
        }
        id.into_owned()
    }

    fn start_vertical_doc(&mut self, batch: &mut Batch, next_doc: &mut u64, id: Option<String>) {
        let id = id.unwrap_or_else(|| self.default_id(self.line));
        batch.begin(*next_doc, Some(&id));
        *next_doc += 1;
        self.in_doc = true;
    }

    fn end_vertical_doc(&mut self, batch: &mut Batch, stats: &mut ReadStats, doc: u64) {
        if !batch.open {
            batch.begin(doc, None);
        }
        batch.end(true);
        self.in_doc = false;
        stats.documents += 1;
    }
}

/// Finds a line that starts with `<` (a tag, or a line Onion takes for
/// one). Built once: a searcher's set-up cost more than the search of a
/// short document's token lines, which ends at its `</p>` or `</doc>`.
static TAG_LINE: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"\n<"));

/// Appends the whole plain token lines at the front of `buf` (see
/// `OpenInput::token_lines`) to `out`; returns the bytes and lines taken.
/// A few searches of the buffer find what ends them, rather than a call per
/// line (a token is a few bytes). The searches look at a window of the
/// buffer that doubles while no line ends the run, each window searched and
/// checked from where the last one stopped, so the bytes looked at stay
/// within twice those taken (plus a first window of 256): a buffer of lines
/// the line-by-line path must take, one by one, is not searched whole for
/// each.
fn plain_token_lines(buf: &[u8], max_line: usize, out: &mut String) -> (usize, u64) {
    if buf.first() == Some(&b'<') {
        return (0, 0);
    }
    let start = out.len();
    let (mut from, mut window) = (0, buf.len().min(256));
    loop {
        let tag = TAG_LINE.find(&buf[from..window]).map(|i| from + i + 1);
        // The bytes checked so far (and appended).
        let checked = out.len() - start;
        let (valid, bad) = match std::str::from_utf8(&buf[checked..tag.unwrap_or(window)]) {
            Ok(text) => (text, false),
            // A character cut by the window's end is no stop: a wider window has it whole.
            Err(e) => (
                std::str::from_utf8(&buf[checked..checked + e.valid_up_to()]).unwrap_or_default(),
                e.error_len().is_some(),
            ),
        };
        out.push_str(valid);
        if tag.is_some() || bad || window == buf.len() {
            break;
        }
        // A byte back: a `\n<` may straddle two windows.
        from = window - 1;
        window = buf.len().min(window * 2);
    }
    // Whole lines only: the last newline before the stop ends them.
    let taken = &out.as_bytes()[start..];
    let mut end = memchr::memrchr(b'\n', taken).map_or(0, |i| i + 1);
    if max_line < end {
        // A line longer than the limit is the line-by-line path's to refuse.
        let mut line = 0;
        for newline in memchr::memchr_iter(b'\n', &taken[..end]) {
            if newline - line > max_line {
                end = line;
                break;
            }
            line = newline + 1;
        }
    }
    // memchr's count is vectorised (a plain filter and count is not, here).
    let lines = memchr::memchr_iter(b'\n', &taken[..end]).count() as u64;
    // `end` follows a newline (or is 0): a character boundary.
    out.truncate(start + end);
    (end, lines)
}

/// What a line of a vertical file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerticalLine<'a> {
    /// `<doc …>`, with its attributes.
    DocOpen(&'a [u8]),
    /// `</doc>`.
    DocClose,
    /// Any other line starting with `<` (`<p>`, `</s>`, `<g/>`), as Onion
    /// 1.2 takes it: markup, never a token, even when it is no tag (`<3`):
    /// the line, `\r` removed.
    Structure(&'a [u8]),
    /// A token line: its first TAB-separated column.
    Token(&'a [u8]),
    Blank,
}

impl<'a> VerticalLine<'a> {
    /// Classifies a line (without its `\n`).
    pub fn classify(line: &'a [u8]) -> VerticalLine<'a> {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(attrs) = doc_open_tag(text) {
            VerticalLine::DocOpen(attrs)
        } else if text == b"</doc>" {
            VerticalLine::DocClose
        } else if text.first() == Some(&b'<') {
            VerticalLine::Structure(text)
        } else if text.is_empty() {
            VerticalLine::Blank
        } else {
            VerticalLine::Token(text.split(|&b| b == b'\t').next().unwrap_or(text))
        }
    }
}

/// The attributes of a `<doc …>` line, or None for any other line.
fn doc_open_tag(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"<doc")?;
    match rest.first() {
        Some(b'>') => Some(&[]),
        Some(b) if b.is_ascii_whitespace() => Some(rest.strip_suffix(b">").unwrap_or(rest)),
        _ => None,
    }
}

/// The value of `name="…"` (or `name='…'`) among tag attributes.
fn attribute<'a>(attrs: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut i = 0;
    while i + name.len() + 2 <= attrs.len() {
        let at_word_start = i == 0 || attrs[i - 1].is_ascii_whitespace();
        if at_word_start && attrs[i..].starts_with(name) && attrs[i + name.len()] == b'=' {
            let quote = attrs[i + name.len() + 1];
            if quote == b'"' || quote == b'\'' {
                let start = i + name.len() + 2;
                let len = attrs[start..].iter().position(|&b| b == quote)?;
                return Some(&attrs[start..start + len]);
            }
        }
        i += 1;
    }
    None
}

/// U+FFFD characters that were in the input as valid UTF-8 (not replacements).
fn count_literal_replacements(bytes: &[u8]) -> usize {
    memmem::find_iter(bytes, "\u{fffd}".as_bytes()).count()
}
