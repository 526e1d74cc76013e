//! The framing every file of this crate uses: a header naming the kind of
//! file and its version, checksummed frames of records, and an end that
//! counts the records and is checksummed itself.
//!
//! ```text
//! magic (8 bytes) | version u16 LE | 0 u16 | 0 u32
//! frames, each: length u32 LE (1 ..= MAX_FRAME_BYTES) | XXH3-64 of the payload u64 LE | payload
//! end:          length 0 u32 | records u64 LE | XXH3-64 of those 8 bytes u64 LE
//! ```
//!
//! A record never spans two frames, so each frame decodes on its own.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use dupgram_runs::reclaim::Reclaim;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::VocabError;

/// A writer cuts its frame once the payload reaches this.
pub(crate) const FRAME_TARGET: usize = 64 << 10;
/// The largest frame a reader accepts: a record is at most a word (far below
/// 1 MiB) and a few numbers, so no writer comes near it.
pub(crate) const MAX_FRAME_BYTES: usize = 4 << 20;
/// Bytes a reader holds: its file buffer and a frame (twice, as it grows).
pub(crate) const READER_BYTES: u64 = (64 << 10) + 2 * (FRAME_TARGET as u64 + (1 << 10));

/// What kind of file: its magic and version, and a name for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    pub magic: &'static [u8; 8],
    pub version: u16,
    pub name: &'static str,
}

/// Writes a framed file.
pub(crate) struct FrameWriter {
    out: BufWriter<File>,
    path: PathBuf,
    frame: Vec<u8>,
    records: u64,
    bytes: u64,
}

impl FrameWriter {
    pub fn create(path: &Path, kind: Kind) -> Result<Self, VocabError> {
        let file = File::create(path).map_err(|e| VocabError::io(path, e))?;
        let mut out = BufWriter::with_capacity(64 << 10, file);
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(kind.magic);
        head[8..10].copy_from_slice(&kind.version.to_le_bytes());
        out.write_all(&head).map_err(|e| VocabError::io(path, e))?;
        Ok(FrameWriter {
            out,
            path: path.to_owned(),
            frame: Vec::with_capacity(FRAME_TARGET + 1024),
            records: 0,
            bytes: 16,
        })
    }

    /// The buffer the next record is encoded into; [`end_record`](Self::end_record) after.
    #[inline]
    pub fn record(&mut self) -> &mut Vec<u8> {
        &mut self.frame
    }

    /// Whether the next record is the first of its frame.
    #[inline]
    pub fn frame_is_empty(&self) -> bool {
        self.frame.is_empty()
    }

    /// Ends the record just encoded; cuts the frame when it is full.
    #[inline]
    pub fn end_record(&mut self) -> Result<(), VocabError> {
        self.records += 1;
        if self.frame.len() >= FRAME_TARGET { self.cut() } else { Ok(()) }
    }

    fn cut(&mut self) -> Result<(), VocabError> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let mut head = [0u8; 12];
        head[..4].copy_from_slice(&(self.frame.len() as u32).to_le_bytes());
        head[4..].copy_from_slice(&xxh3_64(&self.frame).to_le_bytes());
        let path = &self.path;
        self.out.write_all(&head).map_err(|e| VocabError::io(path, e))?;
        self.out.write_all(&self.frame).map_err(|e| VocabError::io(path, e))?;
        self.bytes += 12 + self.frame.len() as u64;
        self.frame.clear();
        Ok(())
    }

    /// Writes the last frame and the end; returns the path, records and bytes.
    pub fn finish(mut self) -> Result<(PathBuf, u64, u64), VocabError> {
        self.cut()?;
        let mut end = [0u8; 20];
        end[4..12].copy_from_slice(&self.records.to_le_bytes());
        let check = xxh3_64(&end[4..12]);
        end[12..20].copy_from_slice(&check.to_le_bytes());
        let path = self.path;
        self.out.write_all(&end).map_err(|e| VocabError::io(&path, e))?;
        self.out.flush().map_err(|e| VocabError::io(&path, e))?;
        Ok((path, self.records, self.bytes + 20))
    }
}

/// Reads a framed file, checking every checksum and the count at the end.
pub(crate) struct FrameReader {
    input: BufReader<File>,
    path: PathBuf,
    kind: Kind,
    frame: Vec<u8>,
    at: usize,
    records: u64,
    done: bool,
    /// Bytes of the file read so far (header and whole frames).
    read: u64,
    /// For a file read once and then removed: gives back the blocks read
    /// ([`FrameReader::open_consumed`]).
    reclaim: Option<Reclaim>,
}

impl FrameReader {
    pub fn open(path: &Path, kind: Kind) -> Result<Self, VocabError> {
        let file = File::open(path).map_err(|e| VocabError::io(path, e))?;
        FrameReader::over(file, path, kind, None)
    }

    /// Opens a file that is read once and removed after: as it is read,
    /// the blocks already read are given back to the disk (a hole is
    /// punched where they were), so a merge's output does not sit on disk
    /// beside all of its inputs. Where the file system cannot punch holes
    /// (or the file has another name), it stays whole until it is removed.
    pub fn open_consumed(path: &Path, kind: Kind) -> Result<Self, VocabError> {
        let file = File::open(path).map_err(|e| VocabError::io(path, e))?;
        FrameReader::over(file, path, kind, Reclaim::open(path))
    }

    fn over(file: File, path: &Path, kind: Kind, reclaim: Option<Reclaim>) -> Result<Self, VocabError> {
        let mut reader = FrameReader {
            input: BufReader::with_capacity(64 << 10, file),
            path: path.to_owned(),
            kind,
            frame: Vec::new(),
            at: 0,
            records: 0,
            done: false,
            read: 16,
            reclaim,
        };
        let mut head = [0u8; 16];
        reader.read_exact(&mut head)?;
        if &head[..8] != kind.magic {
            return Err(reader.corrupt("not a file of this kind"));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != kind.version {
            return Err(reader.corrupt(&format!("format version {version}; this build reads version {}", kind.version)));
        }
        if head[10..] != [0; 6] {
            return Err(reader.corrupt("reserved header bytes are not zero"));
        }
        Ok(reader)
    }

    pub fn corrupt(&self, what: &str) -> VocabError {
        VocabError::Corrupt { path: self.path.clone(), kind: self.kind.name, what: what.to_owned() }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), VocabError> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => self.corrupt("truncated"),
            _ => VocabError::io(&self.path, e),
        })
    }

    /// The undecoded rest of the current frame, after loading the next one
    /// when this one is used up; `None` at the end of the file.
    pub fn rest(&mut self) -> Result<Option<&[u8]>, VocabError> {
        Ok(self.rest_of_frame()?.map(|(rest, _)| rest))
    }

    /// [`rest`](Self::rest), and whether the record it starts with is the first of its frame.
    pub fn rest_of_frame(&mut self) -> Result<Option<(&[u8], bool)>, VocabError> {
        while self.at >= self.frame.len() {
            if self.done || !self.next_frame()? {
                return Ok(None);
            }
        }
        Ok(Some((&self.frame[self.at..], self.at == 0)))
    }

    /// Marks `bytes` of the frame as one record decoded.
    #[inline]
    pub fn consumed(&mut self, bytes: usize) {
        self.at += bytes;
        self.records += 1;
    }

    fn next_frame(&mut self) -> Result<bool, VocabError> {
        let mut len = [0u8; 4];
        self.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 {
            self.read_end()?;
            return Ok(false);
        }
        if len > MAX_FRAME_BYTES {
            return Err(self.corrupt("frame longer than any writer makes"));
        }
        let mut check = [0u8; 8];
        self.read_exact(&mut check)?;
        self.frame.clear();
        // Grown as bytes arrive, so a damaged length allocates no more than the file holds.
        let path = self.path.clone();
        (&mut self.input).take(len as u64).read_to_end(&mut self.frame).map_err(|e| VocabError::io(path, e))?;
        if self.frame.len() < len {
            return Err(self.corrupt("truncated"));
        }
        if xxh3_64(&self.frame) != u64::from_le_bytes(check) {
            return Err(self.corrupt("frame checksum mismatch"));
        }
        self.at = 0;
        self.read += 12 + len as u64;
        // The bytes read so far are in `frame` or used up; the buffer holds only bytes after them.
        if let Some(reclaim) = self.reclaim.as_mut()
            && !reclaim.release(self.read)
        {
            self.reclaim = None;
        }
        Ok(true)
    }

    fn read_end(&mut self) -> Result<(), VocabError> {
        let mut end = [0u8; 16];
        self.read_exact(&mut end)?;
        if xxh3_64(&end[..8]) != u64::from_le_bytes(end[8..].try_into().expect("8 bytes")) {
            return Err(self.corrupt("end checksum mismatch"));
        }
        if u64::from_le_bytes(end[..8].try_into().expect("8 bytes")) != self.records {
            return Err(self.corrupt("the count at the end differs from the records read"));
        }
        let mut rest = [0u8; 1];
        if self.input.read(&mut rest).map_err(|e| VocabError::io(&self.path, e))? != 0 {
            return Err(self.corrupt("trailing bytes after the end"));
        }
        self.done = true;
        self.frame.clear();
        self.at = 0;
        Ok(())
    }
}

#[inline]
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a 128-bit `v` as a varint: seven bits a byte, low first, at most 19 bytes.
pub(crate) fn push_varint128(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A 128-bit varint at the start of `bytes`: its value and length, `None`
/// if cut short or past 128 bits.
#[inline]
pub(crate) fn read_varint128(bytes: &[u8]) -> Option<(u128, usize)> {
    let mut v = 0u128;
    for (i, &b) in bytes.iter().enumerate().take(19) {
        v |= u128::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            // The 19th byte holds bits 126 and 127 only.
            return (i < 18 || b <= 3).then_some((v, i + 1));
        }
    }
    None
}

/// A varint at the start of `bytes`: its value and length, `None` if cut short or too long.
#[inline]
pub(crate) fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return (i < 9 || b <= 1).then_some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Kind = Kind { magic: b"DGTEST\r\n", version: 1, name: "test file" };

    fn write(path: &Path, records: &[&[u8]]) {
        let mut w = FrameWriter::create(path, TEST).unwrap();
        for r in records {
            w.record().extend_from_slice(r);
            w.end_record().unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn varints_round_trip_and_refuse_what_no_writer_makes() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            push_varint(&mut b, v);
            assert_eq!(read_varint(&b), Some((v, b.len())));
            assert_eq!(read_varint(&b[..b.len() - 1]), None);
        }
        assert_eq!(read_varint(&[0xff; 11]), None);
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
    }

    #[test]
    fn wide_varints_round_trip_and_refuse_what_no_writer_makes() {
        for v in [0, 1, 127, 128, u128::from(u64::MAX), u128::from(u64::MAX) + 1, 1 << 126, u128::MAX] {
            let mut b = Vec::new();
            push_varint128(&mut b, v);
            assert_eq!(read_varint128(&b), Some((v, b.len())));
            assert_eq!(read_varint128(&b[..b.len() - 1]), None);
        }
        let mut widest = vec![0xff; 18];
        assert_eq!(read_varint128(&widest), None);
        widest.push(0x03);
        assert_eq!(read_varint128(&widest), Some((u128::MAX, 19)));
        *widest.last_mut().unwrap() = 0x04;
        assert_eq!(read_varint128(&widest), None);
    }

    #[test]
    fn frames_come_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let big = vec![7u8; FRAME_TARGET / 3];
        write(&path, &[b"a", &big, &big, &big, &big, b"z"]);
        let mut r = FrameReader::open(&path, TEST).unwrap();
        let mut sizes = Vec::new();
        while let Some(rest) = r.rest().unwrap() {
            let n = if rest[0] == 7 { big.len() } else { 1 };
            sizes.push(n);
            r.consumed(n);
        }
        assert_eq!(sizes, vec![1, big.len(), big.len(), big.len(), big.len(), 1]);
        let bytes = std::fs::read(&path).unwrap();
        for cut in [3, 20, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let err = FrameReader::open(&path, TEST).and_then(|mut r| {
                while let Some(rest) = r.rest()? {
                    let n = if rest[0] == 7 { big.len().min(rest.len()) } else { 1 };
                    r.consumed(n);
                }
                Ok(())
            });
            let msg = err.unwrap_err().to_string();
            assert!(msg.contains(&path.display().to_string()) && msg.contains("test file"), "{msg}");
        }
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        let err = FrameReader::open(&path, TEST).unwrap().rest().map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    /// Blocks on disk of a file.
    #[cfg(target_os = "linux")]
    fn disk_bytes(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    /// A consumed file gives its blocks back as it is read, and every
    /// record still comes back whole, in order, with its checksum.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_consumed_file_gives_back_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        if !dupgram_runs::reclaim::can_punch_holes(dir.path()) {
            eprintln!("skipped: this file system cannot punch holes");
            return;
        }
        let path = dir.path().join("f");
        let records: Vec<Vec<u8>> = (0..400u32).map(|i| vec![(i % 251) as u8; 100_000]).collect();
        write(&path, &records.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let whole = disk_bytes(&path);
        assert!(whole >= 40_000_000, "{whole}");
        let mut r = FrameReader::open_consumed(&path, TEST).unwrap();
        let mut least = whole;
        for want in &records {
            let rest = r.rest().unwrap().unwrap();
            assert_eq!(&rest[..want.len()], &want[..]);
            r.consumed(want.len());
            least = least.min(disk_bytes(&path));
        }
        assert!(r.rest().unwrap().is_none());
        assert!(least < whole / 4, "{least} of {whole} bytes left on disk");
        // A file opened plainly is left as it is.
        write(&path, &records.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let mut r = FrameReader::open(&path, TEST).unwrap();
        while let Some(rest) = r.rest().unwrap() {
            let n = rest.len().min(100_000);
            r.consumed(n);
        }
        assert!(disk_bytes(&path) >= 40_000_000, "{} bytes left on disk", disk_bytes(&path));
    }
}
