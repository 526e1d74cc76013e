//! Run files: the sorted, compressed spill format of dupgram's first pass.
//!
//! A *run* is the sorted list of distinct n-grams of one chunk of the corpus
//! (or of a merge of several runs), each with its count. Runs are written once,
//! read once, sequentially, so the format optimises for size and decode speed,
//! following Pomikálek & Rychlý (section 4): word IDs are small integers (the
//! lexicon gives frequent words small IDs), each n-gram is stored without the
//! prefix it shares with the previous one, and every number is an Elias code.
//!
//! # Layout (format version 1, all integers little-endian)
//!
//! ```text
//! header  32 bytes  magic "DGRUN\0\r\n" | version u16 | n u8 | kind u8 | 0 u32
//!                   | lexicon id u64 | crc32 of the 24 bytes before | 0 u32
//! block*            payload length u32 | entries u32 | crc32 of payload u32 | payload
//! footer  40 bytes  magic "DGRUNEND" | blocks u64 | entries u64 | sum of counts u64
//!                   | crc32 of the 32 bytes before | 0 u32
//! ```
//!
//! A block payload is a big-endian bit stream, padded to a byte. Its first entry
//! is stored whole, so any block decodes on its own:
//!
//! ```text
//! first entry:  delta(id₀+1) … delta(idₙ₋₁+1)  gamma(count)
//! next entries: gamma(lcp+1)  delta(id_lcp − prev_lcp)  delta(id_lcp+1 +1) … delta(idₙ₋₁+1)  gamma(count)
//! ```
//!
//! where `lcp` is the number of leading IDs shared with the previous entry.
//! Entries are strictly increasing, so `id_lcp − prev_lcp` ≥ 1.
//!
//! A run of kind 1 (*postings*, the duplicate-only index of `dupgram pairs`)
//! follows each count with that many occurrences, each a (document, position)
//! pair packed as `document << 32 | position`, in increasing order:
//!
//! ```text
//! first:  delta(doc+1) delta(pos+1)
//! next:   gamma(doc − prev_doc + 1), then gamma(pos − prev_pos) in the same
//!         document or delta(pos+1) in a new one
//! ```
//!
//! # Integrity
//!
//! Every block carries a CRC-32 of its payload and the footer repeats the
//! totals, so a flipped byte, a truncated file or a file cut at a block
//! boundary is reported as an error naming the file and offset — a damaged run
//! is never merged silently. Entries must increase across blocks too, and
//! every decoded number is range-checked, so even a damaged file whose
//! checksums were recomputed is refused rather than misread (the fuzz test
//! in `tests/fuzz.rs` tries thousands of such files). The header's lexicon
//! identity and `n` stop runs of different jobs from being mixed.

mod bits;
pub mod prints;
mod reader;
pub mod reclaim;
mod writer;

pub use bits::{BitCodes, BitCursor, BitWriter, CodeError};
pub use reader::RunReader;
pub use writer::{RunSummary, RunWriter};

use std::path::PathBuf;

/// The first eight bytes of every run file.
pub const MAGIC: &[u8; 8] = b"DGRUN\0\r\n";
/// The first eight bytes of every run footer.
pub const FOOTER_MAGIC: &[u8; 8] = b"DGRUNEND";
/// The run format this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_LEN: u64 = 32;
pub const FOOTER_LEN: u64 = 40;
const BLOCK_HEADER_LEN: usize = 12;
/// A block is closed once its payload reaches this size. 64 KiB keeps a merge
/// reader's buffer small (fan-in is memory / block size) while one read system
/// call per block keeps I/O cheap.
pub const BLOCK_TARGET_BYTES: usize = 64 * 1024;
/// Larger payload lengths are treated as corruption. A block holds whole
/// entries, so one postings entry (an n-gram in millions of places) can make
/// a block far larger than the target.
const MAX_BLOCK_BYTES: u32 = 1 << 30;
/// The longest n-gram a run can hold.
pub const MAX_N: usize = 255;

/// What a run's entries carry besides the n-gram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunKind {
    /// A count.
    #[default]
    Counts,
    /// A count and that many occurrences (`document << 32 | position`).
    Postings,
}

/// What identifies the job a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunHeader {
    /// Words per n-gram.
    pub n: u8,
    /// Identity of the lexicon whose IDs the run uses.
    pub lexicon_id: u64,
    pub kind: RunKind,
}

impl RunHeader {
    /// The header of a counts run.
    pub fn counts(n: u8, lexicon_id: u64) -> Self {
        RunHeader { n, lexicon_id, kind: RunKind::Counts }
    }

    /// The header of a postings run.
    pub fn postings(n: u8, lexicon_id: u64) -> Self {
        RunHeader { n, lexicon_id, kind: RunKind::Postings }
    }

    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut h = [0u8; HEADER_LEN as usize];
        h[0..8].copy_from_slice(MAGIC);
        h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        h[10] = self.n;
        h[11] = match self.kind {
            RunKind::Counts => 0,
            RunKind::Postings => 1,
        };
        h[16..24].copy_from_slice(&self.lexicon_id.to_le_bytes());
        let crc = crc32fast::hash(&h[0..24]);
        h[24..28].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

/// Errors reading or writing a run file. Each names the file it concerns.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}: not a dupgram run file")]
    BadMagic { path: PathBuf },
    #[error("{path}: run format version {found}; this build reads version {FORMAT_VERSION}")]
    Version { path: PathBuf, found: u16 },
    #[error("{path}: truncated run file (its footer is missing or damaged)")]
    Truncated { path: PathBuf },
    #[error("{path}: corrupt run file at byte {offset}: {what}")]
    Corrupt { path: PathBuf, offset: u64, what: String },
    #[error(
        "{path}: belongs to another job (n = {found_n}, lexicon {found_lexicon:016x}; expected n = {expected_n}, lexicon {expected_lexicon:016x})"
    )]
    Mismatch { path: PathBuf, found_n: u8, found_lexicon: u64, expected_n: u8, expected_lexicon: u64 },
    #[error(
        "{path}: n-grams must be pushed in strictly increasing order, each with n = {n} IDs and a count ≥ 1 (postings: increasing, as many as the count)"
    )]
    BadEntry { path: PathBuf, n: u8 },
}

impl RunError {
    pub(crate) fn io(path: &std::path::Path, error: std::io::Error) -> Self {
        RunError::Io { path: path.to_owned(), error }
    }
}

/// Recomputes every checksum a run's bytes carry (header, blocks as far as
/// their lengths can be followed, footer), changing nothing else. For fuzz
/// tests: a mutation of the content, sealed, reaches the decoder's own
/// checks and the code that uses what it decodes, not only the checksums.
pub fn reseal(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let (header, footer) = (HEADER_LEN as usize, FOOTER_LEN as usize);
    if b.len() >= 28 {
        let crc = crc32fast::hash(&b[0..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
    }
    if b.len() < header + footer {
        return b;
    }
    let data_end = b.len() - footer;
    let mut at = header;
    while at + BLOCK_HEADER_LEN <= data_end {
        let len = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize;
        let payload = at + BLOCK_HEADER_LEN;
        let Some(end) = payload.checked_add(len).filter(|&e| e <= data_end) else { break };
        let crc = crc32fast::hash(&b[payload..end]);
        b[at + 8..at + 12].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
    let crc = crc32fast::hash(&b[data_end..data_end + 32]);
    b[data_end + 32..data_end + 36].copy_from_slice(&crc.to_le_bytes());
    b
}

#[cfg(test)]
mod tests;
