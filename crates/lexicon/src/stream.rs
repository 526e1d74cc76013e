//! The word-ID stream: the corpus as the lexicon pass saw it, tokenised once.
//!
//! The lexicon pass numbers words in the order it first meets them
//! ([`LexiconBuilder::add_first_seen`](crate::LexiconBuilder::add_first_seen))
//! and writes each token's first-seen ID here, with the document ends. The
//! passes after it read this stream instead of the corpus: no decoding,
//! tokenising, case folding or hashing a second time, and no word table —
//! a plain array ([`Renumbering`](crate::Renumbering)) turns first-seen IDs
//! into the lexicon's. Frequent words are met early, so most tokens take one
//! or two bytes.
//!
//! A word met after the lexicon's table was frozen (its memory full) has no
//! first-seen ID. The worker numbers such words in a dictionary of its own,
//! bounded, that starts again (a new *epoch*) whenever it is full: the token
//! is written as its word's *slot* in the current epoch, and the end of an
//! epoch as its number of slots. After the pass a side file says what each
//! slot's word is (see `dupgram-vocab`): a frequent word past the table
//! costs its slot's code here, one to four bytes, and one entry per epoch
//! there, not a record per token.
//!
//! A frame's codes come in one of two layouts, whichever is shorter for
//! it. *Escaped* (bit 31 of the frame's length clear): a first-seen ID is a
//! code of its own and a slot follows a code 1. *Interleaved* (bit 31
//! set): first-seen IDs and slots share the codes from 2 on, even and odd,
//! so a slot takes no escape. A stream whose table never froze has only
//! escaped frames; past the freeze each frame is written both ways and
//! the shorter kept. Where the words past the table are most of the tokens
//! (a vocabulary that starts again), interleaving saves a byte on each; where they are a few
//! rare words among the table's, it would cost frequent words a byte, and
//! the frame stays escaped.
//!
//! ```text
//! magic "DGWIDS\r\n" | version u16 LE | 0 u16 | 0 u32
//! frames, each:
//!   length u32 LE: bits 0..31 the payload's bytes (1 ..= MAX_FRAME_BYTES),
//!                  bit 31 set when the payload is interleaved
//!   XXH3-64 of the payload u64 LE
//!   payload: LEB128 varints; 0 ends a document,
//!            1 is followed by m: m = 0 a word seen once (in a stream of
//!            final IDs), m = 1 and then n: the epoch of n slots ends,
//!            m ≥ 2 (escaped only) the word in slot m − 2 of the current epoch;
//!            escaped:     k ≥ 2 is the word with first-seen ID k − 2,
//!            interleaved: k ≥ 2 is, for j = k − 2, the word with
//!                         first-seen ID j / 2 (j even) or the word in
//!                         slot (j − 1) / 2 of the current epoch (j odd)
//! end: length 0 u32 | documents u64 LE | words u64 LE | XXH3-64 of those 16 bytes u64 LE
//! ```
//!
//! In memory a reader hands over a code per token or mark: [`END_OF_DOCUMENT`],
//! [`OVERFLOW`], [`FIRST_WORD`] + first-seen ID, [`SLOT`] | slot, [`EPOCH_END`] | slots.
//! A mark is not a word in the totals.
//!
//! Version 2 wrote every overflow token as a bare 1 (the `n`-th of them
//! was the side file's `n`-th entry), version 3 escaped every slot; streams
//! are temporary files, so this build reads version 4 only.
//!
//! A document may run across frames. Stop words on the stop list are not
//! written (they only count as tokens). Nothing may follow the end.

use std::io::{Read, Write};

use xxhash_rust::xxh3::xxh3_64;

/// First eight bytes of a word-ID stream.
pub const STREAM_MAGIC: &[u8; 8] = b"DGWIDS\r\n";
/// The stream format this build writes and reads.
pub const STREAM_VERSION: u16 = 4;
/// The largest frame payload a reader accepts (and a writer makes: it cuts frames far below).
pub const MAX_FRAME_BYTES: usize = 16 << 20;
/// Set in a frame's length when its payload is interleaved.
const INTERLEAVED_BIT: u32 = 1 << 31;
/// The code that ends a document.
pub const END_OF_DOCUMENT: u32 = 0;
/// The code of a word with no first-seen ID and no slot: in a stream
/// rewritten with final IDs, a word seen once.
pub const OVERFLOW: u32 = 1;
/// The code of first-seen ID 0; ID `i` is `FIRST_WORD + i`, below [`SLOT`].
pub const FIRST_WORD: u32 = 2;
/// In memory, `SLOT | j` is the word in slot `j` of the current epoch.
pub const SLOT: u32 = 1 << 31;
/// In memory, `EPOCH_END | n` ends the current epoch, which had `n` slots.
pub const EPOCH_END: u32 = 0xC000_0000;
/// Slots an epoch may have: a reader refuses a slot or an epoch beyond it.
pub const MAX_EPOCH_SLOTS: u32 = 1 << 26;
/// A writer cuts its frame when the payload reaches this: a reader then
/// holds at most this plus one number, and a code (4 bytes) per byte of it.
pub const FRAME_TARGET: usize = 64 << 10;

/// Why a stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a dupgram word-ID stream")]
    BadMagic,
    #[error("word-ID stream format version {0}; this build reads version {STREAM_VERSION}")]
    Version(u16),
    #[error("corrupt word-ID stream: {0}")]
    Corrupt(&'static str),
}

/// Writes a stream: codes go into a frame buffer, cut into frames as it
/// fills; past the first slot, into a second buffer too, interleaved, and
/// each frame is written the shorter way.
pub struct StreamWriter<W: Write> {
    out: W,
    /// The frame being filled, escaped.
    frame: Vec<u8>,
    /// The same frame interleaved, once `interleaving`.
    interleaved: Vec<u8>,
    /// Whether a slot has been written: from the frame of the first on,
    /// frames are encoded both ways.
    interleaving: bool,
    documents: u64,
    words: u64,
    bytes: u64,
}

impl<W: Write> StreamWriter<W> {
    /// Writes the header to `out`.
    pub fn new(mut out: W) -> std::io::Result<Self> {
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(STREAM_MAGIC);
        head[8..10].copy_from_slice(&STREAM_VERSION.to_le_bytes());
        out.write_all(&head)?;
        Ok(StreamWriter {
            out,
            frame: Vec::with_capacity(FRAME_TARGET + 16),
            interleaved: Vec::new(),
            interleaving: false,
            documents: 0,
            words: 0,
            bytes: 16,
        })
    }

    /// A word, by first-seen ID.
    #[inline]
    pub fn word(&mut self, first_seen: u32) -> std::io::Result<()> {
        self.words += 1;
        let id = u64::from(first_seen);
        push_varint(&mut self.frame, id + u64::from(FIRST_WORD));
        if self.interleaving {
            push_varint(&mut self.interleaved, 2 * id + u64::from(FIRST_WORD));
        }
        self.cut_if_full()
    }

    /// A word with no first-seen ID and no slot.
    #[inline]
    pub fn overflow(&mut self) -> std::io::Result<()> {
        self.words += 1;
        self.escaped(&[u64::from(OVERFLOW), 0])
    }

    /// The word in slot `slot` (below [`MAX_EPOCH_SLOTS`]) of the current epoch.
    #[inline]
    pub fn slot(&mut self, slot: u32) -> std::io::Result<()> {
        if !self.interleaving {
            // The frames before this one hold no slot: they stay escaped.
            self.cut()?;
            self.interleaving = true;
            self.interleaved.reserve(FRAME_TARGET + 16);
        }
        self.words += 1;
        let slot = u64::from(slot);
        push_varint(&mut self.frame, u64::from(OVERFLOW));
        push_varint(&mut self.frame, slot + 2);
        push_varint(&mut self.interleaved, 2 * slot + 1 + u64::from(FIRST_WORD));
        self.cut_if_full()
    }

    /// The end of the current epoch, which had `slots` slots.
    pub fn epoch_end(&mut self, slots: u32) -> std::io::Result<()> {
        self.escaped(&[u64::from(OVERFLOW), 1, u64::from(slots)])
    }

    /// Numbers that read the same either way (an escape and what follows
    /// it, a document's end): in one frame.
    #[inline]
    fn escaped(&mut self, numbers: &[u64]) -> std::io::Result<()> {
        for &v in numbers {
            push_varint(&mut self.frame, v);
            if self.interleaving {
                push_varint(&mut self.interleaved, v);
            }
        }
        self.cut_if_full()
    }

    /// The end of a document.
    #[inline]
    pub fn end_document(&mut self) -> std::io::Result<()> {
        self.documents += 1;
        self.escaped(&[u64::from(END_OF_DOCUMENT)])
    }

    #[inline]
    fn cut_if_full(&mut self) -> std::io::Result<()> {
        if self.frame.len().max(self.interleaved.len()) >= FRAME_TARGET { self.cut() } else { Ok(()) }
    }

    /// Bytes of the stream so far, the frame being filled counted (the shorter way).
    pub fn bytes_written(&self) -> u64 {
        self.bytes + shorter(self.interleaving, &self.frame, &self.interleaved).1.len() as u64
    }

    /// Writes what the frame buffer holds as a frame, the shorter way.
    pub fn cut(&mut self) -> std::io::Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let (flag, payload) = shorter(self.interleaving, &self.frame, &self.interleaved);
        let mut head = [0u8; 12];
        head[..4].copy_from_slice(&(payload.len() as u32 | flag).to_le_bytes());
        head[4..].copy_from_slice(&xxh3_64(payload).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(payload)?;
        self.bytes += 12 + payload.len() as u64;
        self.frame.clear();
        self.interleaved.clear();
        Ok(())
    }

    /// Writes the last frame and the end; returns the writer and the bytes written.
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        self.cut()?;
        let mut end = [0u8; 28];
        end[4..12].copy_from_slice(&self.documents.to_le_bytes());
        end[12..20].copy_from_slice(&self.words.to_le_bytes());
        let check = xxh3_64(&end[4..20]);
        end[20..28].copy_from_slice(&check.to_le_bytes());
        self.out.write_all(&end)?;
        self.out.flush()?;
        Ok((self.out, self.bytes + 28))
    }
}

/// The 7-bit groups of a varint of up to four bytes in `word` (little-endian), side by side.
#[inline(always)]
fn varint_groups(word: u32) -> u32 {
    (word & 0x7f) | ((word >> 1) & 0x3f80) | ((word >> 2) & 0x1f_c000) | ((word >> 3) & 0x0fe0_0000)
}

/// Decodes the codes that end within the eight payload bytes of `window`
/// (little-endian), up to the first escape or code longer than four bytes;
/// returns the bytes they took (0: the first code is one of those).
///
/// Each code's end is a byte whose top bit is clear, so the ends of every
/// code in the window come from one mask, and only the step from one
/// window to the next waits for a load: reading code by code, each code's
/// length must be known before the next code can be found.
#[inline(always)]
fn plain_codes<const INTERLEAVED: bool>(
    window: u64,
    max_code: u64,
    codes: &mut Vec<u32>,
    ends: &mut u64,
) -> Result<usize, StreamError> {
    let mut stops = !window & 0x8080_8080_8080_8080;
    let mut start = 0u32;
    while stops != 0 {
        let stop = stops.trailing_zeros() + 1;
        let bits = stop - start;
        // A code of more than four bytes, or an escape (its next numbers belong to it).
        if bits > 32 {
            break;
        }
        let v = varint_groups((window >> start) as u32) & (u32::MAX >> (32 - bits / 8 * 7));
        if v == OVERFLOW {
            break;
        }
        plain_code::<INTERLEAVED>(u64::from(v), max_code, codes, ends)?;
        start = stop;
        stops &= stops - 1;
    }
    Ok(start as usize / 8)
}

/// A code that is no escape: a document's end, a word by first-seen ID,
/// or (interleaved) a slot.
#[inline(always)]
fn plain_code<const INTERLEAVED: bool>(
    v: u64,
    max_code: u64,
    codes: &mut Vec<u32>,
    ends: &mut u64,
) -> Result<(), StreamError> {
    let v = if INTERLEAVED && v >= u64::from(FIRST_WORD) {
        let j = v - u64::from(FIRST_WORD);
        if j & 1 == 1 {
            let slot = u32::try_from(j >> 1).ok().filter(|&j| j < MAX_EPOCH_SLOTS);
            codes.push(SLOT | slot.ok_or(StreamError::Corrupt("slot beyond an epoch's size"))?);
            return Ok(());
        }
        (j >> 1) + u64::from(FIRST_WORD)
    } else {
        v
    };
    if v > max_code {
        return Err(StreamError::Corrupt("word ID beyond the vocabulary"));
    }
    *ends += u64::from(v == 0);
    codes.push(v as u32);
    Ok(())
}

/// A frame's payload the shorter way, and the flag its length carries.
fn shorter<'a>(interleaving: bool, escaped: &'a [u8], interleaved: &'a [u8]) -> (u32, &'a [u8]) {
    if interleaving && interleaved.len() < escaped.len() { (INTERLEAVED_BIT, interleaved) } else { (0, escaped) }
}

/// Appends `v` as a varint: 7 bits a byte, low groups first, the top bit
/// set on every byte but the last. A code of up to four bytes (nearly
/// every one) is made in one word and stored as one four-byte copy, cut
/// back to its length, rather than a byte (and a check of the room) at a time.
#[inline]
fn push_varint(out: &mut Vec<u8>, v: u64) {
    if v >= 1 << 28 {
        return push_varint_bytes(out, v);
    }
    let v = v as u32;
    let len = (32 - (v | 1).leading_zeros()).div_ceil(7);
    let groups = (v & 0x7f) | ((v << 1) & 0x7f00) | ((v << 2) & 0x7f_0000) | ((v << 3) & 0x7f00_0000);
    // The top bit of each byte below the last.
    let more = 0x8080_8080u32 & ((1u32 << (8 * (len - 1))) - 1);
    let at = out.len();
    out.extend_from_slice(&(groups | more).to_le_bytes());
    out.truncate(at + len as usize);
}

/// [`push_varint`] a byte at a time, for any value.
fn push_varint_bytes(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a stream frame by frame, checking every checksum, that every
/// first-seen ID is below the vocabulary's size, and the totals at the end.
pub struct StreamReader<R: Read> {
    input: R,
    /// Codes above this are refused: `vocabulary` first-seen IDs exist.
    max_code: u64,
    payload: Vec<u8>,
    documents: u64,
    words: u64,
    done: bool,
}

impl<R: Read> StreamReader<R> {
    /// Checks the header of a stream whose first-seen IDs are below `vocabulary`.
    pub fn new(mut input: R, vocabulary: u32) -> Result<Self, StreamError> {
        let mut head = [0u8; 16];
        input.read_exact(&mut head).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => StreamError::BadMagic,
            _ => StreamError::Io(e),
        })?;
        if &head[..8] != STREAM_MAGIC {
            return Err(StreamError::BadMagic);
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != STREAM_VERSION {
            return Err(StreamError::Version(version));
        }
        if head[10..] != [0; 6] {
            return Err(StreamError::Corrupt("reserved header bytes are not zero"));
        }
        Ok(StreamReader {
            input,
            max_code: (u64::from(vocabulary) + u64::from(FIRST_WORD) - 1).min(u64::from(SLOT) - 1),
            payload: Vec::new(),
            documents: 0,
            words: 0,
            done: false,
        })
    }

    /// Replaces `codes` with the next frame's codes (see the module's
    /// docs); false at the end of the stream, once its totals are checked.
    pub fn next_frame(&mut self, codes: &mut Vec<u32>) -> Result<bool, StreamError> {
        codes.clear();
        if self.done {
            return Ok(false);
        }
        let mut len = [0u8; 4];
        self.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len);
        let interleaved = len & INTERLEAVED_BIT != 0;
        let len = (len & !INTERLEAVED_BIT) as usize;
        if len == 0 && !interleaved {
            self.read_end()?;
            return Ok(false);
        }
        if len == 0 {
            return Err(StreamError::Corrupt("an empty interleaved frame"));
        }
        if len > MAX_FRAME_BYTES {
            return Err(StreamError::Corrupt("frame longer than any writer makes"));
        }
        let mut check = [0u8; 8];
        self.read_exact(&mut check)?;
        // Grown as bytes arrive, so a damaged length allocates no more than the file holds.
        self.payload.clear();
        (&mut self.input).take(len as u64).read_to_end(&mut self.payload)?;
        if self.payload.len() < len {
            return Err(StreamError::Corrupt("truncated"));
        }
        if xxh3_64(&self.payload) != u64::from_le_bytes(check) {
            return Err(StreamError::Corrupt("frame checksum mismatch"));
        }
        if interleaved { self.decode::<true>(codes) } else { self.decode::<false>(codes) }
    }

    /// The codes of an escaped frame, or of an interleaved one.
    fn decode<const INTERLEAVED: bool>(&mut self, codes: &mut Vec<u32>) -> Result<bool, StreamError> {
        let bytes = &self.payload;
        let max_code = self.max_code;
        codes.reserve(bytes.len());
        let mut at = 0;
        let (mut ends, mut marks) = (0u64, 0u64);
        while at < bytes.len() {
            if let Some(window) = bytes.get(at..at + 8) {
                let window = u64::from_le_bytes(window.try_into().expect("8 bytes"));
                let used = plain_codes::<INTERLEAVED>(window, max_code, codes, &mut ends)?;
                if used > 0 {
                    at += used;
                    continue;
                }
            }
            // An escape, a code of more than four bytes, or the frame's last bytes: one code at a time.
            let (v, len) = match bytes.get(at..at + 4) {
                // Codes of up to four bytes, read four bytes at a time without a
                // branch on their length: the first byte whose top bit is clear ends the code.
                Some(&[a, b, c, d]) if (a & b & c & d) < 0x80 => {
                    let word = u32::from_le_bytes([a, b, c, d]);
                    let len = (!word & 0x8080_8080).trailing_zeros() / 8 + 1;
                    (u64::from(varint_groups(word) & (u32::MAX >> (32 - 7 * len))), len as usize)
                }
                _ => Self::long_varint(&bytes[at..])?,
            };
            at += len;
            if v == u64::from(OVERFLOW) {
                let (code, used) = Self::escaped(&bytes[at..])?;
                if INTERLEAVED && code & SLOT != 0 && code & EPOCH_END != EPOCH_END {
                    return Err(StreamError::Corrupt("an escaped slot in an interleaved frame"));
                }
                at += used;
                marks += u64::from(code & EPOCH_END == EPOCH_END);
                codes.push(code);
                continue;
            }
            plain_code::<INTERLEAVED>(v, max_code, codes, &mut ends)?;
        }
        self.documents += ends;
        self.words += codes.len() as u64 - ends - marks;
        Ok(true)
    }

    /// What follows a code 1 at the start of `bytes`, and its length.
    fn escaped(bytes: &[u8]) -> Result<(u32, usize), StreamError> {
        let (m, used) = Self::long_varint(bytes)?;
        let beyond = || StreamError::Corrupt("slot beyond an epoch's size");
        match m {
            0 => Ok((OVERFLOW, used)),
            1 => {
                let (n, more) = Self::long_varint(&bytes[used..])?;
                let n = u32::try_from(n).ok().filter(|&n| n <= MAX_EPOCH_SLOTS).ok_or_else(beyond)?;
                Ok((EPOCH_END | n, used + more))
            }
            _ => {
                let slot = u32::try_from(m - 2).ok().filter(|&j| j < MAX_EPOCH_SLOTS).ok_or_else(beyond)?;
                Ok((SLOT | slot, used))
            }
        }
    }

    /// The varint at the start of `bytes` and its length.
    fn long_varint(bytes: &[u8]) -> Result<(u64, usize), StreamError> {
        let mut v = 0u64;
        let mut shift = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if shift > 35 {
                return Err(StreamError::Corrupt("number too long"));
            }
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                return Ok((v, i + 1));
            }
        }
        Err(StreamError::Corrupt("frame ends inside a number"))
    }

    fn read_end(&mut self) -> Result<(), StreamError> {
        let mut end = [0u8; 24];
        self.read_exact(&mut end)?;
        if xxh3_64(&end[..16]) != u64::from_le_bytes(end[16..24].try_into().expect("8 bytes")) {
            return Err(StreamError::Corrupt("end checksum mismatch"));
        }
        let documents = u64::from_le_bytes(end[..8].try_into().expect("8 bytes"));
        let words = u64::from_le_bytes(end[8..16].try_into().expect("8 bytes"));
        if documents != self.documents || words != self.words {
            return Err(StreamError::Corrupt("totals at the end differ from the frames read"));
        }
        let mut rest = [0u8; 1];
        if self.input.read(&mut rest)? != 0 {
            return Err(StreamError::Corrupt("trailing bytes after the end"));
        }
        self.done = true;
        Ok(())
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), StreamError> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => StreamError::Corrupt("truncated"),
            _ => StreamError::Io(e),
        })
    }

    /// Documents read so far.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Words read so far.
    pub fn words(&self) -> u64 {
        self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(docs: &[&[u32]]) -> Vec<u8> {
        let mut w = StreamWriter::new(Vec::new()).unwrap();
        for doc in docs {
            for &id in *doc {
                w.word(id).unwrap();
            }
            w.end_document().unwrap();
        }
        let (out, bytes) = w.finish().unwrap();
        assert_eq!(bytes, out.len() as u64);
        out
    }

    fn read_all(bytes: &[u8], vocabulary: u32) -> Result<Vec<u32>, StreamError> {
        let mut r = StreamReader::new(bytes, vocabulary)?;
        let (mut all, mut codes) = (Vec::new(), Vec::new());
        while r.next_frame(&mut codes)? {
            all.extend_from_slice(&codes);
        }
        Ok(all)
    }

    #[test]
    fn codes_come_back_as_written() {
        let big: Vec<u32> = (0..200_000u32).map(|i| i * 7919 % 300_000).collect();
        let bytes = written(&[&[0, 1, 2], &[], &big, &[299_999]]);
        let mut want = vec![2, 3, 4, 0, 0];
        want.extend(big.iter().map(|&i| i + 2));
        want.extend([0, 300_001, 0]);
        assert_eq!(read_all(&bytes, 300_000).unwrap(), want);
        let mut w = StreamWriter::new(Vec::new()).unwrap();
        w.overflow().unwrap();
        w.word(0).unwrap();
        w.slot(0).unwrap();
        w.slot(300).unwrap();
        w.epoch_end(301).unwrap();
        w.slot(MAX_EPOCH_SLOTS - 1).unwrap();
        w.end_document().unwrap();
        let (out, _) = w.finish().unwrap();
        let want = [OVERFLOW, FIRST_WORD, SLOT, SLOT | 300, EPOCH_END | 301, SLOT | (MAX_EPOCH_SLOTS - 1), 0];
        assert_eq!(read_all(&out, 1).unwrap(), want);
        // The totals count five words: the epoch's end is a mark.
        let mut r = StreamReader::new(&out[..], 1).unwrap();
        while r.next_frame(&mut Vec::new()).unwrap() {}
        assert_eq!((r.documents(), r.words()), (1, 5));
    }

    #[test]
    fn a_slot_or_an_epoch_beyond_the_limit_is_refused() {
        for payload in [
            vec![1, 0x80, 0x80, 0x80, 0x40],    // slot 2^27 − 2
            vec![1, 1, 0x81, 0x80, 0x80, 0x40], // an epoch of 2^27 + 1 slots
            vec![1],                            // a frame ending after the 1
            vec![1, 1],                         // and after the epoch's mark
        ] {
            let stream = one_frame(&payload);
            let mut r = StreamReader::new(&stream[..], 10).unwrap();
            assert!(r.next_frame(&mut Vec::new()).is_err(), "{payload:?}");
        }
    }

    /// The flags of a stream's frames: true where interleaved.
    fn frame_flags(stream: &[u8]) -> Vec<bool> {
        let (mut flags, mut at) = (Vec::new(), 16);
        loop {
            let len = u32::from_le_bytes(stream[at..at + 4].try_into().unwrap());
            if len == 0 {
                return flags;
            }
            flags.push(len & INTERLEAVED_BIT != 0);
            at += 12 + (len & !INTERLEAVED_BIT) as usize;
        }
    }

    /// Writes `tokens` (a first-seen ID, or `SLOT | slot`) as one document.
    fn written_with_slots(tokens: &[u32]) -> Vec<u8> {
        let mut w = StreamWriter::new(Vec::new()).unwrap();
        for &t in tokens {
            if t & SLOT != 0 { w.slot(t & !SLOT).unwrap() } else { w.word(t).unwrap() }
        }
        w.end_document().unwrap();
        let (out, bytes) = w.finish().unwrap();
        assert_eq!(bytes, out.len() as u64);
        out
    }

    #[test]
    fn each_frame_past_the_first_slot_is_written_the_shorter_way() {
        // Table words first (escaped), then mostly slots (interleaved:
        // slots of 64 ..= 8191 take two bytes instead of three), then
        // mostly table words of 63 ..= 125 (escaped again: one byte, not two).
        let mut tokens: Vec<u32> = (0..100_000u32).map(|i| i % 120).collect();
        tokens.extend((0..100_000u32).map(|i| if i % 10 == 0 { i % 60 } else { SLOT | (64 + i % 8000) }));
        tokens.extend((0..100_000u32).map(|i| if i % 10 == 0 { SLOT | (i % 60) } else { 63 + i % 60 }));
        let stream = written_with_slots(&tokens);
        let flags = frame_flags(&stream);
        let (first_slot, first_word_again) = (flags.len() / 6, flags.len() * 5 / 6);
        assert!(!flags[..first_slot].iter().any(|&f| f), "{flags:?}");
        assert!(flags[first_slot + 2..first_word_again - 2].iter().all(|&f| f), "{flags:?}");
        assert!(!flags[first_word_again + 2..].iter().any(|&f| f), "{flags:?}");
        let mut want: Vec<u32> = tokens.iter().map(|&t| if t & SLOT != 0 { t } else { t + FIRST_WORD }).collect();
        want.push(END_OF_DOCUMENT);
        assert_eq!(read_all(&stream, 125).unwrap(), want);
        // Every slot escaped would have taken a byte more.
        let escaped_bytes = 16 + 28 + 300_001 + 100_000 + 180_000 * 2 + 10_000 + 9_000 + 90_000;
        assert!(stream.len() < escaped_bytes - 150_000, "{} bytes", stream.len());
    }

    /// A stream of one interleaved frame holding `payload`, checksum right.
    fn one_interleaved_frame(payload: &[u8]) -> Vec<u8> {
        let mut stream = one_frame(payload);
        stream[16 + 3] |= 0x80;
        stream
    }

    #[test]
    fn interleaved_codes_decode_and_what_they_cannot_hold_is_refused() {
        // ID 0, slot 0, ID 3, slot 5, an overflow word, an epoch of 6 slots, the end.
        let stream = one_interleaved_frame(&[2, 3, 8, 13, 1, 0, 1, 1, 6, 0]);
        let mut r = StreamReader::new(&stream[..], 4).unwrap();
        let mut codes = Vec::new();
        r.next_frame(&mut codes).unwrap();
        assert_eq!(codes, [FIRST_WORD, SLOT, FIRST_WORD + 3, SLOT | 5, OVERFLOW, EPOCH_END | 6, 0]);
        for (payload, vocabulary, why) in [
            (&[10u8][..], 4, "beyond the vocabulary"),         // ID 4
            (&[1, 2][..], 4, "escaped slot"),                  // slot 0, escaped
            (&[0x83, 0x80, 0x80, 0x40][..], 4, "slot beyond"), // slot 2^26
            (&[][..], 4, "an empty interleaved frame"),        // an empty interleaved frame
        ] {
            let stream = one_interleaved_frame(payload);
            let mut r = StreamReader::new(&stream[..], vocabulary).unwrap();
            let err = r.next_frame(&mut Vec::new()).unwrap_err();
            assert!(err.to_string().contains(why), "{payload:?}: {err}");
        }
    }

    /// One token or mark of a generated stream.
    #[derive(Debug, Clone, Copy)]
    enum Item {
        Word(u32),
        Slot(u32),
        Overflow,
        EpochEnd(u32),
        EndDocument,
    }

    fn item() -> impl proptest::strategy::Strategy<Value = Item> {
        use proptest::prelude::*;
        // IDs and slots of every code length, the lengths' edges most often.
        let number = prop_oneof![0u32..130, 16_370u32..16_400, 2_097_140u32..2_097_160, 0u32..MAX_EPOCH_SLOTS];
        prop_oneof![
            4 => number.clone().prop_map(Item::Word),
            3 => number.clone().prop_map(Item::Slot),
            1 => Just(Item::Overflow),
            1 => number.prop_map(Item::EpochEnd),
            1 => Just(Item::EndDocument),
        ]
    }

    #[test]
    fn a_varint_made_in_one_word_is_the_varint_made_a_byte_at_a_time() {
        let edges = (0..64).flat_map(|bit| [(1u64 << bit) - 1, 1u64 << bit, (1u64 << bit) + 1]);
        for v in edges.chain([u64::MAX, 0x0fff_ffff, 0x1000_0000, 300, 16_383, 16_384]) {
            let (mut fast, mut plain) = (b"x".to_vec(), b"x".to_vec());
            push_varint(&mut fast, v);
            push_varint_bytes(&mut plain, v);
            assert_eq!(fast, plain, "{v}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_mix_of_codes_comes_back_as_written(items in proptest::collection::vec(item(), 0..3000)) {
            let mut w = StreamWriter::new(Vec::new()).unwrap();
            let mut want = Vec::new();
            for &item in &items {
                match item {
                    Item::Word(id) => { w.word(id).unwrap(); want.push(id + FIRST_WORD); }
                    Item::Slot(slot) => { w.slot(slot).unwrap(); want.push(SLOT | slot); }
                    Item::Overflow => { w.overflow().unwrap(); want.push(OVERFLOW); }
                    Item::EpochEnd(n) => { w.epoch_end(n).unwrap(); want.push(EPOCH_END | n); }
                    Item::EndDocument => { w.end_document().unwrap(); want.push(END_OF_DOCUMENT); }
                }
            }
            let (out, _) = w.finish().unwrap();
            proptest::prop_assert_eq!(read_all(&out, MAX_EPOCH_SLOTS).unwrap(), want);
        }
    }

    #[test]
    fn a_long_spelling_of_the_escape_is_still_an_escape() {
        // 1 as two bytes, then a word seen once's 0, then ID 3: eight bytes and more, so
        // the window of eight reads them, and the escape is found by value, not by its first byte.
        let stream = one_frame(&[0x81, 0x00, 0x00, 5, 5, 5, 5, 5, 5]);
        let mut r = StreamReader::new(&stream[..], 10).unwrap();
        let mut codes = Vec::new();
        r.next_frame(&mut codes).unwrap();
        assert_eq!(codes, [OVERFLOW, 5, 5, 5, 5, 5, 5]);
    }

    #[test]
    fn an_id_beyond_the_vocabulary_is_refused() {
        let bytes = written(&[&[5]]);
        assert!(read_all(&bytes, 6).is_ok());
        let err = read_all(&bytes, 5).unwrap_err();
        assert!(err.to_string().contains("beyond the vocabulary"), "{err}");
    }

    #[test]
    fn a_stream_without_its_end_is_truncated() {
        let bytes = written(&[&[1, 2, 3]]);
        let err = read_all(&bytes[..bytes.len() - 28], 10).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let mut longer = bytes.clone();
        longer.push(0);
        let err = read_all(&longer, 10).unwrap_err();
        assert!(err.to_string().contains("trailing"), "{err}");
    }

    /// A stream of one frame holding `payload` as it is, checksum right.
    fn one_frame(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::from(&STREAM_MAGIC[..]);
        out.extend_from_slice(&STREAM_VERSION.to_le_bytes());
        out.extend_from_slice(&[0; 6]);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&xxh3_64(payload).to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn codes_of_every_length_decode_and_broken_numbers_are_refused() {
        let ids = [0u32, 125, 126, 127, 16_381, 16_382, 2_097_149, 2_097_150, SLOT - 3];
        let bytes = written(&[&ids]);
        let mut want: Vec<u32> = ids.iter().map(|&i| i + FIRST_WORD).collect();
        want.push(END_OF_DOCUMENT);
        assert_eq!(read_all(&bytes, u32::MAX - 1).unwrap(), want);
        for (payload, why) in [
            (&[0x05, 0x80][..], "ends inside a number"),
            (&[0x85, 0x80, 0x80][..], "ends inside a number"),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01][..], "too long"),
        ] {
            let mut codes = Vec::new();
            let stream = one_frame(payload);
            let mut r = StreamReader::new(&stream[..], u32::MAX - 1).unwrap();
            let err = r.next_frame(&mut codes).unwrap_err();
            assert!(err.to_string().contains(why), "{payload:?}: {err}");
        }
    }
}
