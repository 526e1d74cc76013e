//! Side files: for each word stream, the IDs of its overflow tokens.
//!
//! The `k`-th overflow token of a stream (its `k`-th [`OVERFLOW`] code,
//! from 0) is listed here when its word got an ID or is a stop word; a
//! token not listed is a word seen once, which breaks the n-gram window.
//! Entries come in increasing `k`, each as
//!
//! ```text
//! varint (k − the previous entry's k − 1; k for the first) | varint code | word_hash u64 LE
//! ```
//!
//! in the frames of [`crate::frames`] ([`Kind`] "DGWSIDE"). `code` is the
//! word's ID or [`Renumbering::STOP`](dupgram_lexicon::Renumbering::STOP);
//! `word_hash` is what sieve fingerprints are made of.
//!
//! [`OVERFLOW`]: dupgram_lexicon::stream::OVERFLOW

use std::path::{Path, PathBuf};

use dupgram_lexicon::Renumbering;

use crate::error::VocabError;
use crate::frames::{FrameReader, FrameWriter, Kind, READER_BYTES, push_varint, read_varint};

pub(crate) const SIDE_FILE: Kind = Kind { magic: b"DGWSIDE\r", version: 1, name: "overflow side file" };

/// Bytes a [`SideReader`] holds.
pub const SIDE_READER_BYTES: u64 = READER_BYTES;

/// A finished side file.
#[derive(Debug, Clone)]
pub struct SideFile {
    pub path: PathBuf,
    pub entries: u64,
    pub bytes: u64,
}

pub(crate) struct SideWriter {
    out: FrameWriter,
    next: u64,
}

impl SideWriter {
    pub fn create(path: &Path) -> Result<Self, VocabError> {
        Ok(SideWriter { out: FrameWriter::create(path, SIDE_FILE)?, next: 0 })
    }

    /// The entry of overflow token `k` (above the last one's).
    pub fn push(&mut self, k: u64, code: u32, hash: u64) -> Result<(), VocabError> {
        debug_assert!(k >= self.next, "side entries come in increasing order");
        let buf = self.out.record();
        push_varint(buf, k - self.next);
        push_varint(buf, u64::from(code));
        buf.extend_from_slice(&hash.to_le_bytes());
        self.next = k + 1;
        self.out.end_record()
    }

    pub fn finish(self) -> Result<SideFile, VocabError> {
        let (path, entries, bytes) = self.out.finish()?;
        Ok(SideFile { path, entries, bytes })
    }
}

/// What an overflow token is, read from its stream's side file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowWord {
    /// A word with this ID and [`dupgram_lexicon::word_hash`].
    Id(u32, u64),
    /// A stop word (one of the most frequent, with `--stop-top`).
    Stop,
    /// A word seen once: no repeated n-gram holds it.
    Break,
}

/// Reads a side file along its stream, token by token.
pub struct SideReader {
    input: Option<FrameReader>,
    /// The next entry: its token, code and hash; `None` past the last.
    next: Option<(u64, u32, u64)>,
    /// Overflow tokens asked about so far.
    asked: u64,
}

impl SideReader {
    /// The reader of `file`; `None` reads as a stream without overflow tokens' IDs.
    pub fn open(file: Option<&SideFile>) -> Result<Self, VocabError> {
        let mut reader = SideReader { input: None, next: None, asked: 0 };
        if let Some(f) = file {
            reader.input = Some(FrameReader::open(&f.path, SIDE_FILE)?);
            reader.next = reader.read(0)?;
        }
        Ok(reader)
    }

    fn read(&mut self, after: u64) -> Result<Option<(u64, u32, u64)>, VocabError> {
        let Some(input) = self.input.as_mut() else { return Ok(None) };
        let Some(rest) = input.rest()? else { return Ok(None) };
        let entry = (|| {
            let (gap, a) = read_varint(rest)?;
            let (code, b) = read_varint(&rest[a..])?;
            let hash = u64::from_le_bytes(rest.get(a + b..a + b + 8)?.try_into().ok()?);
            let code = u32::try_from(code).ok()?;
            Some((after.checked_add(gap)?, code, hash, a + b + 8))
        })();
        let Some((k, code, hash, used)) = entry else { return Err(input.corrupt("entry cut short or malformed")) };
        if code == Renumbering::BREAK {
            return Err(input.corrupt("a word seen once is listed"));
        }
        input.consumed(used);
        Ok(Some((k, code, hash)))
    }

    /// What the stream's next overflow token is.
    #[inline]
    pub fn next_token(&mut self) -> Result<OverflowWord, VocabError> {
        let k = self.asked;
        self.asked += 1;
        match self.next {
            Some((at, code, hash)) if at == k => {
                self.next = self.read(k + 1)?;
                Ok(if code == Renumbering::STOP { OverflowWord::Stop } else { OverflowWord::Id(code, hash) })
            }
            _ => Ok(OverflowWord::Break),
        }
    }

    /// Checks that the stream met every token the side file lists.
    pub fn finish(&self) -> Result<(), VocabError> {
        match (&self.input, self.next) {
            (Some(input), Some((k, _, _))) => {
                Err(input
                    .corrupt(&format!("lists overflow token {k}, but its stream had {} overflow tokens", self.asked)))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_not_listed_break_and_the_rest_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side");
        let mut w = SideWriter::create(&path).unwrap();
        w.push(1, 7, 70).unwrap();
        w.push(2, Renumbering::STOP, 0).unwrap();
        w.push(300, 0, 1).unwrap();
        let file = w.finish().unwrap();
        assert_eq!(file.entries, 3);
        let mut r = SideReader::open(Some(&file)).unwrap();
        let mut got = Vec::new();
        for _ in 0..301 {
            got.push(r.next_token().unwrap());
        }
        assert_eq!(got[0], OverflowWord::Break);
        assert_eq!(got[1], OverflowWord::Id(7, 70));
        assert_eq!(got[2], OverflowWord::Stop);
        assert!(got[3..300].iter().all(|w| *w == OverflowWord::Break));
        assert_eq!(got[300], OverflowWord::Id(0, 1));
        r.finish().unwrap();
        let mut short = SideReader::open(Some(&file)).unwrap();
        short.next_token().unwrap();
        let err = short.finish().unwrap_err();
        assert!(err.to_string().contains("side file") && err.to_string().contains("token 1"), "{err}");
        let mut none = SideReader::open(None).unwrap();
        assert_eq!(none.next_token().unwrap(), OverflowWord::Break);
        none.finish().unwrap();
    }
}
