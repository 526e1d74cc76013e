//! Side files: for each word stream, the IDs of its overflow tokens' words.
//!
//! A stream writes an overflow token as its word's slot in the current
//! epoch ([`SLOT`]), and the end of an epoch with its number of slots
//! ([`EPOCH_END`]); the slots of all its epochs, one after the other, are
//! numbered from 0. Slot `k` is listed here when its word got an ID or is a
//! stop word; a slot not listed is a word seen once, which breaks the
//! n-gram window. Entries come in increasing `k`, each as
//!
//! ```text
//! varint (k − the previous entry's k − 1; k for the first) | varint code | word_hash u64 LE
//! ```
//!
//! in the frames of [`crate::frames`] ([`Kind`] "DGWSIDE"). `code` is the
//! word's ID or [`Renumbering::STOP`](dupgram_lexicon::Renumbering::STOP);
//! `word_hash` is what sieve fingerprints are made of.
//!
//! A reader holds the codes of the current epoch's slots, read as the
//! stream asks for them: at most [`SideFile::epoch_slots`] of them.
//!
//! [`SLOT`]: dupgram_lexicon::stream::SLOT
//! [`EPOCH_END`]: dupgram_lexicon::stream::EPOCH_END

use std::path::{Path, PathBuf};

use dupgram_lexicon::Renumbering;

use crate::error::VocabError;
use crate::frames::{FrameReader, FrameWriter, Kind, READER_BYTES, push_varint, read_varint};

pub(crate) const SIDE_FILE: Kind = Kind { magic: b"DGWSIDE\r", version: 2, name: "overflow side file" };

/// A finished side file.
#[derive(Debug, Clone)]
pub struct SideFile {
    pub path: PathBuf,
    pub entries: u64,
    pub bytes: u64,
    /// Slots an epoch of its stream has at most.
    pub epoch_slots: u32,
}

impl SideFile {
    /// Bytes a [`SideReader`] of this file holds at most: its frames, and
    /// a code and a hash per slot of an epoch.
    pub fn reader_bytes(&self) -> u64 {
        READER_BYTES + u64::from(self.epoch_slots) * SLOT_CODE_BYTES
    }
}

/// Bytes a reader holds per slot of an epoch: its code and its hash.
const SLOT_CODE_BYTES: u64 = 12;

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

    /// The file, for a stream whose epochs have at most `epoch_slots` slots.
    pub fn finish(self, epoch_slots: u32) -> Result<SideFile, VocabError> {
        let (path, entries, bytes) = self.out.finish()?;
        Ok(SideFile { path, entries, bytes, epoch_slots })
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

/// Reads a side file along its stream, epoch by epoch.
pub struct SideReader {
    input: Option<FrameReader>,
    /// The next entry not yet read into `codes`: its slot, code and hash; `None` past the last.
    next: Option<(u64, u32, u64)>,
    /// The number of the current epoch's first slot.
    base: u64,
    /// The current epoch's slots up to the highest asked for: their codes
    /// ([`Renumbering::BREAK`] for a slot not listed) and hashes.
    codes: Vec<u32>,
    hashes: Vec<u64>,
    /// Slots an epoch may have.
    epoch_slots: u32,
}

impl SideReader {
    /// The reader of `file`; `None` reads as a stream without overflow tokens' IDs.
    pub fn open(file: Option<&SideFile>) -> Result<Self, VocabError> {
        let mut reader =
            SideReader { input: None, next: None, base: 0, codes: Vec::new(), hashes: Vec::new(), epoch_slots: 0 };
        if let Some(f) = file {
            reader.input = Some(FrameReader::open(&f.path, SIDE_FILE)?);
            reader.epoch_slots = f.epoch_slots;
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

    /// What the word in slot `slot` of the current epoch is.
    #[inline]
    pub fn slot(&mut self, slot: u32) -> Result<OverflowWord, VocabError> {
        let j = slot as usize;
        if self.input.is_none() {
            // No word of the stream's overflow got an ID.
            return Ok(OverflowWord::Break);
        }
        if j >= self.codes.len() {
            self.fill(slot)?;
        }
        Ok(match self.codes[j] {
            Renumbering::BREAK => OverflowWord::Break,
            Renumbering::STOP => OverflowWord::Stop,
            code => OverflowWord::Id(code, self.hashes[j]),
        })
    }

    /// Reads the entries of the current epoch's slots up to `slot`.
    fn fill(&mut self, slot: u32) -> Result<(), VocabError> {
        if slot >= self.epoch_slots {
            return Err(
                self.corrupt(&format!("its stream asks for slot {slot} of an epoch of at most {}", self.epoch_slots))
            );
        }
        let upto = self.base + u64::from(slot);
        self.codes.resize(slot as usize + 1, Renumbering::BREAK);
        self.hashes.resize(slot as usize + 1, 0);
        while let Some((k, code, hash)) = self.next.filter(|&(k, _, _)| k <= upto) {
            let Some(j) = k.checked_sub(self.base) else {
                return Err(self.corrupt(&format!("lists slot {k}, which its stream never used")));
            };
            self.codes[j as usize] = code;
            self.hashes[j as usize] = hash;
            self.next = self.read(k + 1)?;
        }
        Ok(())
    }

    /// The current epoch ends, with `slots` slots: the next one's are numbered after them.
    pub fn end_epoch(&mut self, slots: u32) -> Result<(), VocabError> {
        if self.codes.len() > slots as usize {
            return Err(self.corrupt(&format!("its stream used slot {} of an epoch of {slots}", self.codes.len() - 1)));
        }
        self.base += u64::from(slots);
        self.codes.clear();
        self.hashes.clear();
        Ok(())
    }

    fn corrupt(&self, what: &str) -> VocabError {
        match &self.input {
            Some(input) => input.corrupt(what),
            None => VocabError::Inconsistent(format!("a stream without a side file: {what}")),
        }
    }

    /// Checks that the stream met every slot the side file lists.
    pub fn finish(&self) -> Result<(), VocabError> {
        match self.next {
            Some((k, _, _)) => Err(self.corrupt(&format!(
                "lists slot {k}, but its stream's slots end at {}",
                self.base + self.codes.len() as u64
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_not_listed_break_and_the_rest_come_back_epoch_by_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side");
        let mut w = SideWriter::create(&path).unwrap();
        // Epoch 0: slots 0..3; epoch 1: slots 3..303 (its 0..300).
        w.push(1, 7, 70).unwrap();
        w.push(2, Renumbering::STOP, 0).unwrap();
        w.push(3, 9, 90).unwrap();
        w.push(302, 0, 1).unwrap();
        let file = w.finish(400).unwrap();
        assert_eq!(file.entries, 4);
        let mut r = SideReader::open(Some(&file)).unwrap();
        assert_eq!(r.slot(2).unwrap(), OverflowWord::Stop);
        assert_eq!(r.slot(0).unwrap(), OverflowWord::Break);
        assert_eq!(r.slot(1).unwrap(), OverflowWord::Id(7, 70));
        r.end_epoch(3).unwrap();
        assert_eq!(r.slot(299).unwrap(), OverflowWord::Id(0, 1));
        assert_eq!(r.slot(0).unwrap(), OverflowWord::Id(9, 90));
        assert!((1..299).all(|j| r.slot(j).unwrap() == OverflowWord::Break));
        r.finish().unwrap();

        // A stream that ends before the slots listed, or asks beyond its epoch.
        let mut short = SideReader::open(Some(&file)).unwrap();
        short.slot(2).unwrap();
        short.end_epoch(3).unwrap();
        let err = short.finish().unwrap_err();
        assert!(err.to_string().contains("side file") && err.to_string().contains("slot 3"), "{err}");
        let mut beyond = SideReader::open(Some(&file)).unwrap();
        assert!(beyond.slot(400).unwrap_err().to_string().contains("at most 400"));
        beyond.slot(2).unwrap();
        assert!(beyond.end_epoch(2).unwrap_err().to_string().contains("used slot 2"));
        // An epoch that skips a listed slot: the entry lands behind the reader.
        let mut skipped = SideReader::open(Some(&file)).unwrap();
        skipped.slot(0).unwrap();
        skipped.end_epoch(3).unwrap();
        assert!(skipped.slot(0).unwrap_err().to_string().contains("never used"));

        let mut none = SideReader::open(None).unwrap();
        assert_eq!(none.slot(12).unwrap(), OverflowWord::Break);
        none.end_epoch(13).unwrap();
        none.finish().unwrap();
    }
}
