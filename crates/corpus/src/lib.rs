//! Reading corpora: documents out of files, whatever their format.
//!
//! Three line formats, each plain, gzip or zstd (detected from the magic
//! bytes, so a misnamed file still reads), and Parquet:
//!
//! * **text** — one document per line;
//! * **JSON Lines** — one object per line, the document in a string field
//!   (`text` by default) and its ID in another (`id`);
//! * **vertical** — Onion / Sketch Engine style, one token per line (the first
//!   TAB column is the word), documents between `<doc …>` and `</doc>`, other
//!   `<…>` lines (`<p>`, `<s>`, `<g/>`) being structure.
//!
//! The format comes from the extension (`.txt`, `.jsonl`/`.json`/`.ndjson`,
//! `.vert`/`.vrt`, under any `.gz`/`.zst`; `.parquet`) or, failing that, from
//! the first bytes (`PAR1` is Parquet). A [`CorpusReader`] turns all inputs into [`Batch`]es of text pieces
//! of a bounded size: a text or vertical document of any length streams
//! through in pieces, so memory never depends on document size; a JSON line
//! must fit in [`ReadOptions::max_record_bytes`].
//!
//! Nothing is lost silently. Invalid UTF-8 is replaced by U+FFFD and
//! counted; a malformed JSON line, an over-long record or a truncated
//! compressed stream is an error naming the file, line and byte offset, unless
//! [`ReadOptions::skip_bad`] asks to count bad records and go on (a damaged
//! compressed stream is always an error: what follows it is unknowable).

mod json;
mod parquet;
mod reader;
mod utf8;

pub use json::{Record, parse_record, parse_record_noting};
pub use parquet::{BadRow, PARQUET_MAGIC, ParquetRow, ParquetRows, is_parquet};
pub use reader::{Batch, CorpusReader, FileStamp, Input, Piece, ReadStats, VerticalLine};
pub use utf8::Utf8Repair;

use std::io::BufRead;
use std::path::{Path, PathBuf};

/// How documents are laid out in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Jsonl,
    Vertical,
    Parquet,
}

impl Format {
    /// The format an extension names, looking through `.gz`/`.zst`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".parquet") {
            return Some(Format::Parquet);
        }
        let name =
            ["gz", "gzip", "zst", "zstd"].iter().find_map(|c| name.strip_suffix(&format!(".{c}"))).unwrap_or(&name);
        match name.rsplit('.').next()? {
            "txt" | "text" => Some(Format::Text),
            "jsonl" | "json" | "ndjson" => Some(Format::Jsonl),
            "vert" | "vrt" => Some(Format::Vertical),
            _ => None,
        }
    }

    /// A guess from the first decompressed bytes.
    pub fn sniff(head: &[u8]) -> Format {
        let start = head.iter().position(|b| !b.is_ascii_whitespace()).map_or(&[][..], |i| &head[i..]);
        if head.starts_with(PARQUET_MAGIC) {
            Format::Parquet
        } else if start.starts_with(b"{") {
            Format::Jsonl
        } else if start.starts_with(b"<doc") {
            Format::Vertical
        } else {
            Format::Text
        }
    }
}

/// How to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Force a format instead of detecting it per input.
    pub format: Option<Format>,
    pub text_field: String,
    pub id_field: String,
    /// Count malformed or over-long records and go on, instead of failing.
    pub skip_bad: bool,
    /// The longest JSON line or vertical line accepted.
    pub max_record_bytes: usize,
    /// zstd inputs needing a larger window (2^this bytes) are refused, to keep
    /// the memory promise; the error says which file and what it needs.
    pub zstd_window_log_max: u32,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            text_field: "text".into(),
            id_field: "id".into(),
            skip_bad: false,
            max_record_bytes: 64 << 20,
            zstd_window_log_max: 27,
        }
    }
}

/// Reading errors; each names the input and, where it has one, the line and offset.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{name}: cannot open: {error}")]
    Open { name: String, error: std::io::Error },
    #[error("{name}: line {line}, compressed byte {offset}: {error}")]
    Read { name: String, line: u64, offset: u64, error: std::io::Error },
    #[error("{name}: line {line}: {what}")]
    BadRecord { name: String, line: u64, what: String },
    #[error(
        "{name}: line {line} is longer than {limit} bytes, the most --memory allows for one record; raise --memory or use --skip-bad"
    )]
    RecordTooLong { name: String, line: u64, limit: usize },
    #[error(
        "{name}: needs a zstd window larger than the {limit} bytes --memory allows for decompression; raise --memory or recompress with a smaller window"
    )]
    Window { name: String, limit: u64 },
    #[error("{name}: not a readable Parquet file: {what}")]
    ParquetFile { name: String, what: String },
    #[error("{name}: row group {row_group}, column {column}: {what}")]
    Parquet { name: String, row_group: usize, column: String, what: String },
    #[error(
        "{name}: Parquet needs a file it can seek in, not standard input; give the file's path, or convert it to JSON Lines"
    )]
    ParquetStdin { name: String },
    #[error("{path}: cannot write the copy of standard input: {error}")]
    Spool { path: PathBuf, error: std::io::Error },
}

impl CorpusError {
    /// An error reading `name` at `line` (counted from 1), `offset` bytes into
    /// the stored file. A stream that ends early says it is truncated or
    /// damaged, which is what it means for a compressed input.
    pub fn reading(name: &str, line: u64, offset: u64, error: std::io::Error) -> CorpusError {
        let error = if error.kind() == std::io::ErrorKind::UnexpectedEof {
            std::io::Error::new(error.kind(), format!("truncated or damaged compressed stream ({error})"))
        } else {
            error
        };
        CorpusError::Read { name: name.to_owned(), line: line.max(1), offset, error }
    }
}

/// Opens a file for line reading, decompressing gzip or zstd (by magic bytes).
pub fn open_decoded(path: &Path) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
    open_decoded_counted(path).map(|(reader, _)| reader)
}

/// [`open_decoded`], and a count of the file's stored (compressed) bytes read
/// so far: what [`CorpusError::reading`] names as the offset of a read error.
pub fn open_decoded_counted(
    path: &Path,
) -> std::io::Result<(Box<dyn std::io::BufRead + Send>, std::sync::Arc<std::sync::atomic::AtomicU64>)> {
    use std::io::BufRead;
    let stored = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = reader::Counting::new(std::fs::File::open(path)?, stored.clone());
    let mut raw = std::io::BufReader::with_capacity(64 * 1024, counted);
    let head = raw.fill_buf()?;
    let decoded: Box<dyn std::io::Read + Send> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(raw))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::Decoder::with_buffer(raw)?)
    } else {
        Box::new(raw)
    };
    Ok((Box::new(std::io::BufReader::with_capacity(256 * 1024, decoded)), stored))
}

/// Whether a file is gzip or zstd (from its magic bytes): such a file can
/// only be read from its start, so it is never cut into ranges (nor is
/// Parquet: see [`is_parquet`]).
pub fn is_compressed(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 4];
    let got = read_head(path, &mut head)?;
    Ok(starts_compressed(&head[..got]))
}

/// Whether bytes that start a stream start a gzip or zstd one (their magic bytes).
pub fn starts_compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// Whether a copy of standard input that starts with `head` (its first
/// read) is to be compressed: only when four bytes or more show it starts
/// with neither magic. A copy of a compressed stream is kept as it came, so
/// it decompresses to bytes that sniff as the input did; a shorter head
/// could be the start of a magic, and that copy is kept as it came too.
pub fn spool_compresses(head: &[u8]) -> bool {
    head.len() >= 4 && !starts_compressed(head)
}

/// The zstd level of the copy of standard input the reader writes while
/// the corpus is read (the lexicon pass's): the fastest, as the reader
/// thread feeds the workers meanwhile. (Long-distance matching over an
/// 8 MiB window took a sixth off the copy of generated web-like text, but
/// made `dedup` on standard input 9 % slower: not taken. Level 3 took the
/// copy from 0.38× that text to 0.32×, and `dedup --unit doc` on 100M
/// tokens of it from 21.0-21.6 s to 23.7-24.1 s: not taken either.)
pub const SPOOL_LEVEL: i32 = 1;

/// The zstd level of a copy of standard input made whole before anything
/// reads it (`dedup --unit span`, `--exact-only`, `--dups`): it stays on
/// disk beside everything the job writes, and nothing else runs while it
/// is made. On generated web-like text level 3 takes it from 0.38× the
/// text to 0.32×, at 250 MB/s on one core against level 1's 330 MB/s.
pub const COPY_LEVEL: i32 = 3;

/// A zstd encoder for a copy of standard input (see [`spool_compresses`])
/// at `level`, with its checksum, so a damaged copy is an error when it is
/// read back, not other text.
pub fn spool_encoder<W: std::io::Write>(out: W, level: i32) -> std::io::Result<zstd::Encoder<'static, W>> {
    let mut encoder = zstd::Encoder::new(out, level)?;
    encoder.include_checksum(true)?;
    Ok(encoder)
}

/// The format of an uncompressed file: `forced`, else from its name, else from its first bytes.
pub fn format_of(path: &Path, forced: Option<Format>) -> std::io::Result<Format> {
    if let Some(f) = forced.or_else(|| Format::from_path(path)) {
        return Ok(f);
    }
    let mut raw = std::io::BufReader::with_capacity(64 * 1024, std::fs::File::open(path)?);
    Ok(Format::sniff(raw.fill_buf()?))
}

/// The offset of the first document that starts at or after byte `offset`
/// of an uncompressed file (the file's length if none does): where a shard
/// of it may begin. A document of the text and JSON Lines formats starts
/// after a line break; a vertical one at a line beginning with `<doc`.
pub fn document_boundary(path: &Path, format: Format, offset: u64) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let len = std::fs::metadata(path)?.len();
    if offset == 0 || offset >= len {
        return Ok(offset.min(len));
    }
    let mut file = std::fs::File::open(path)?;
    // Start one byte early: a line that begins exactly at `offset` follows a line break.
    file.seek(SeekFrom::Start(offset - 1))?;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut at = offset - 1;
    let mut line = Vec::new();
    // The rest of the line holding byte offset - 1.
    at += reader.read_until(b'\n', &mut line)? as u64;
    if format != Format::Vertical {
        return Ok(at.min(len));
    }
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)? as u64;
        if read == 0 {
            return Ok(len);
        }
        if line.starts_with(b"<doc") {
            return Ok(at);
        }
        at += read;
    }
}

/// The decompression window a zstd file's first frame asks for, read from
/// its header (RFC 8878 §3.1.1.1), so memory can be planned before reading.
/// `None` for a file that is not zstd; an error if it cannot be read.
pub fn zstd_window(path: &Path) -> std::io::Result<Option<u64>> {
    let mut head = [0u8; 18];
    let got = read_head(path, &mut head)?;
    Ok(zstd_window_from_header(&head[..got]))
}

/// Reads the first bytes of a file into `head`; returns how many there were.
fn read_head(path: &Path, head: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

fn zstd_window_from_header(head: &[u8]) -> Option<u64> {
    if head.len() < 6 || head[..4] != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let descriptor = head[4];
    let single_segment = descriptor & 0x20 != 0;
    if !single_segment {
        let w = head[5];
        let log = 10 + u64::from(w >> 3);
        let base = 1u64 << log;
        return Some(base + (base / 8) * u64::from(w & 7));
    }
    // Single segment: the window is the content size, after the dictionary ID.
    let dict_len = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let at = 5 + dict_len;
    let field = |len: usize| head.get(at..at + len).map(|b| b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)));
    match descriptor >> 6 {
        0 => field(1),
        1 => field(2).map(|v| v + 256),
        2 => field(4),
        _ => field(8),
    }
}

#[cfg(test)]
mod tests;
