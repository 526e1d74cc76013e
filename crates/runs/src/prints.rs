//! Print runs: sorted n-gram fingerprints (*prints*) with one bit each that
//! says whether the print occurred more than once where the run came from.
//!
//! A count in parts proves which n-grams repeat without a sieve per part:
//! one pass writes every n-gram's print into sorted runs, a merge of the runs
//! keeps the prints seen at least twice, and each part's filter is built from
//! those alone (see `dupgram-pipeline`'s `repeat_prints`). A print is short
//! (40 bits), so two n-grams may share one; that only lets a unique n-gram
//! through to the exact count, never drops a repeated one.
//!
//! # Layout (format version 1, integers little-endian)
//!
//! ```text
//! header  16 bytes  magic "DGPRINT\0" | version u16 | width u8 | 0 u8 | crc32 of the 12 bytes before
//! block*            payload length u32 | entries u32 | rice u32 | crc32 of entries, rice and payload u32 | payload
//! footer  24 bytes  magic "DGPRNEND" | entries u64 | crc32 of the 16 bytes before u32 | 0 u32
//! ```
//!
//! A payload is a big-endian bit stream ([`BitWriter`]), padded to a byte.
//! Prints strictly increase, across blocks too. A block's first print is
//! stored whole (`width` bits); each next one as the gap to the one before
//! less one, Rice-coded: `gamma(gap >> rice + 1)` then the low `rice` bits.
//! Every print is followed by its repeat bit. Sorted prints of a chunk of
//! `c` n-grams in a 2⁴⁰ space are about 2⁴⁰/`c` apart, so a print takes
//! about log₂(2⁴⁰/`c`) + 3 bits: two bytes at tens of millions a chunk.

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::RunError;
use crate::bits::{BitCursor, BitWriter};

const MAGIC: &[u8; 8] = b"DGPRINT\0";
const END_MAGIC: &[u8; 8] = b"DGPRNEND";
const VERSION: u16 = 1;
/// Payload bits after which a block is closed.
const BLOCK_BITS: u64 = 64 * 1024 * 8;
/// Bytes of a block's header.
const BLOCK_HEADER: usize = 16;
/// The longest block payload a reader accepts (a block is closed past [`BLOCK_BITS`]).
const MAX_PAYLOAD: usize = 1 << 20;

/// The Rice parameter for prints about `mean_gap` apart: the bits below
/// the gap's typical leading one, so the quotient is mostly 0 or 1.
pub fn rice_for(mean_gap: u64) -> u32 {
    // Optimal for geometric gaps: about log2(mean * ln 2).
    let scaled = mean_gap.saturating_mul(69) / 100;
    if scaled <= 1 { 0 } else { 63 - scaled.leading_zeros() }
}

/// Writes a print run, prints pushed in strictly increasing order.
pub struct PrintWriter<W: Write> {
    out: W,
    path: PathBuf,
    width: u32,
    rice: u32,
    bits: BitWriter,
    block_entries: u32,
    entries: u64,
    last: Option<u64>,
    bytes: u64,
}

impl<W: Write> PrintWriter<W> {
    /// A run of prints below `2^width` (at most 63 bits), Rice-coded with `rice` bits ([`rice_for`]).
    pub fn new(mut out: W, path: &Path, width: u32, rice: u32) -> Result<Self, RunError> {
        assert!((1..=63).contains(&width) && rice < width, "print width 1..=63, rice below it");
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[width as u8, 0]);
        let crc = crc32fast::hash(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&header).map_err(|e| RunError::io(path, e))?;
        Ok(PrintWriter {
            out,
            path: path.to_owned(),
            width,
            rice,
            bits: BitWriter::with_capacity((BLOCK_BITS / 8) as usize + 64),
            block_entries: 0,
            entries: 0,
            last: None,
            bytes: header.len() as u64,
        })
    }

    /// Appends a print, and whether it repeated.
    pub fn push(&mut self, print: u64, repeated: bool) -> Result<(), RunError> {
        if self.last.is_some_and(|last| print <= last) || print >> self.width != 0 {
            return Err(RunError::BadEntry { path: self.path.clone(), n: 1 });
        }
        let (width, rice) = (self.width, self.rice);
        match self.last {
            Some(last) if self.block_entries > 0 => {
                let gap = print - last - 1;
                self.bits.codes(160, |c| {
                    c.gamma((gap >> rice) + 1);
                    c.bits(gap & ((1u64 << rice) - 1), rice);
                    c.bits(u64::from(repeated), 1);
                });
            }
            _ => self.bits.codes(72, |c| {
                c.bits(print, width);
                c.bits(u64::from(repeated), 1);
            }),
        }
        self.last = Some(print);
        self.block_entries += 1;
        self.entries += 1;
        if self.bits.bit_len() >= BLOCK_BITS { self.close_block() } else { Ok(()) }
    }

    fn close_block(&mut self) -> Result<(), RunError> {
        if self.block_entries == 0 {
            return Ok(());
        }
        let mut payload = Vec::with_capacity((self.bits.bit_len() / 8 + 1) as usize);
        self.bits.drain_into(&mut payload);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&self.block_entries.to_le_bytes());
        crc.update(&self.rice.to_le_bytes());
        crc.update(&payload);
        let mut head = [0u8; BLOCK_HEADER];
        head[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        head[4..8].copy_from_slice(&self.block_entries.to_le_bytes());
        head[8..12].copy_from_slice(&self.rice.to_le_bytes());
        head[12..16].copy_from_slice(&crc.finalize().to_le_bytes());
        self.out.write_all(&head).map_err(|e| RunError::io(&self.path, e))?;
        self.out.write_all(&payload).map_err(|e| RunError::io(&self.path, e))?;
        self.bytes += (BLOCK_HEADER + payload.len()) as u64;
        self.block_entries = 0;
        Ok(())
    }

    /// Writes the last block and the footer; the prints written and the
    /// run's bytes, and the writer given back.
    pub fn finish(mut self) -> Result<(u64, u64, W), RunError> {
        self.close_block()?;
        let mut footer = Vec::with_capacity(24);
        footer.extend_from_slice(END_MAGIC);
        footer.extend_from_slice(&self.entries.to_le_bytes());
        let crc = crc32fast::hash(&footer);
        footer.extend_from_slice(&crc.to_le_bytes());
        footer.extend_from_slice(&[0; 4]);
        self.out.write_all(&footer).map_err(|e| RunError::io(&self.path, e))?;
        self.out.flush().map_err(|e| RunError::io(&self.path, e))?;
        Ok((self.entries, self.bytes + footer.len() as u64, self.out))
    }
}

/// Reads a print run back, a block at a time.
pub struct PrintReader<R: Read> {
    input: R,
    path: PathBuf,
    width: u32,
    payload: Vec<u8>,
    cursor: BitCursor,
    rice: u32,
    /// Prints left in the block being read.
    left: u32,
    /// Prints read in all.
    entries: u64,
    last: Option<u64>,
    /// The next print is its block's first (stored whole).
    block_first: bool,
    /// Bytes read so far (for errors).
    offset: u64,
    done: bool,
}

impl PrintReader<BufReader<std::fs::File>> {
    /// Opens a print run file.
    pub fn open(path: &Path) -> Result<Self, RunError> {
        let file = std::fs::File::open(path).map_err(|e| RunError::io(path, e))?;
        PrintReader::new(BufReader::with_capacity(32 << 10, file), path)
    }
}

impl<R: Read> PrintReader<R> {
    /// Reads the header from `input`; `path` names it in errors.
    pub fn new(mut input: R, path: &Path) -> Result<Self, RunError> {
        let mut header = [0u8; 16];
        read_exact(&mut input, &mut header, path)?;
        if &header[..8] != MAGIC {
            return Err(RunError::BadMagic { path: path.to_owned() });
        }
        let corrupt = |what: &str| RunError::Corrupt { path: path.to_owned(), offset: 0, what: what.into() };
        if u32::from_le_bytes(header[12..16].try_into().expect("4 bytes")) != crc32fast::hash(&header[..12]) {
            return Err(corrupt("header checksum"));
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if version != VERSION {
            return Err(corrupt(&format!("print run format version {version}; this build reads version {VERSION}")));
        }
        let width = u32::from(header[10]);
        if !(1..=63).contains(&width) {
            return Err(corrupt("print width out of range"));
        }
        Ok(PrintReader {
            input,
            path: path.to_owned(),
            width,
            payload: Vec::new(),
            cursor: BitCursor::new(),
            rice: 0,
            left: 0,
            entries: 0,
            last: None,
            block_first: false,
            offset: 16,
            done: false,
        })
    }

    /// The width of the prints.
    pub fn width(&self) -> u32 {
        self.width
    }

    fn corrupt(&self, what: &str) -> RunError {
        RunError::Corrupt { path: self.path.clone(), offset: self.offset, what: what.into() }
    }

    /// The next print and its repeat bit; `None` after the last.
    #[inline]
    pub fn next_print(&mut self) -> Result<Option<(u64, bool)>, RunError> {
        if self.left == 0 && !self.next_block()? {
            return Ok(None);
        }
        let first = self.block_first;
        let data = &self.payload;
        let code = |e| RunError::Corrupt { path: self.path.clone(), offset: self.offset, what: format!("{e}") };
        let print = if first {
            self.cursor.read_bits(data, self.width).map_err(code)?
        } else {
            let q = self.cursor.read_gamma(data).map_err(code)? - 1;
            let r = self.cursor.read_bits(data, self.rice).map_err(code)?;
            let gap = q.checked_shl(self.rice).filter(|g| g >> self.rice == q).map(|g| g | r);
            let last = self.last.unwrap_or(0);
            match gap.and_then(|g| last.checked_add(g)).and_then(|p| p.checked_add(1)) {
                Some(p) => p,
                None => return Err(self.corrupt("a print past the width")),
            }
        };
        let repeated = self.cursor.read_bits(&self.payload, 1).map_err(code)? == 1;
        if print >> self.width != 0 || self.last.is_some_and(|last| print <= last) {
            return Err(self.corrupt("prints out of order or past the width"));
        }
        self.last = Some(print);
        self.left -= 1;
        self.entries += 1;
        self.block_first = false;
        Ok(Some((print, repeated)))
    }

    /// Loads the next block; false at the footer (checked).
    fn next_block(&mut self) -> Result<bool, RunError> {
        if self.done {
            return Ok(false);
        }
        let mut head = [0u8; BLOCK_HEADER];
        read_exact(&mut self.input, &mut head[..8], &self.path)?;
        if &head[..8] == END_MAGIC {
            let mut rest = [0u8; 16];
            read_exact(&mut self.input, &mut rest, &self.path)?;
            let mut footer = head[..8].to_vec();
            footer.extend_from_slice(&rest[..8]);
            if u32::from_le_bytes(rest[8..12].try_into().expect("4 bytes")) != crc32fast::hash(&footer) {
                return Err(self.corrupt("footer checksum"));
            }
            if u64::from_le_bytes(rest[..8].try_into().expect("8 bytes")) != self.entries {
                return Err(self.corrupt("the footer's count differs from the prints read"));
            }
            self.done = true;
            return Ok(false);
        }
        read_exact(&mut self.input, &mut head[8..], &self.path)?;
        let word = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        let (len, entries, rice, crc) = (word(0) as usize, word(4), word(8), word(12));
        if len > MAX_PAYLOAD || entries == 0 || rice >= self.width {
            return Err(self.corrupt("block header out of range"));
        }
        self.payload.resize(len, 0);
        read_exact(&mut self.input, &mut self.payload, &self.path)?;
        let mut check = crc32fast::Hasher::new();
        check.update(&entries.to_le_bytes());
        check.update(&rice.to_le_bytes());
        check.update(&self.payload);
        if check.finalize() != crc {
            return Err(self.corrupt("block checksum"));
        }
        self.offset += (BLOCK_HEADER + len) as u64;
        self.cursor = BitCursor::new();
        (self.rice, self.left, self.block_first) = (rice, entries, true);
        Ok(true)
    }
}

/// Recomputes every checksum a print run's bytes carry (header, blocks as
/// far as their lengths can be followed, footer), changing nothing else.
/// For fuzz tests: damage to the content, sealed, meets the decoder's own checks.
pub fn reseal(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.len() >= 16 {
        let crc = crc32fast::hash(&b[0..12]);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
    }
    if b.len() < 16 + 24 {
        return b;
    }
    let data_end = b.len() - 24;
    let mut at = 16;
    while at + BLOCK_HEADER <= data_end {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (len, entries, rice) = (word(at) as usize, word(at + 4), word(at + 8));
        let payload = at + BLOCK_HEADER;
        let Some(end) = payload.checked_add(len).filter(|&e| e <= data_end) else { break };
        let mut crc = crc32fast::Hasher::new();
        crc.update(&entries.to_le_bytes());
        crc.update(&rice.to_le_bytes());
        crc.update(&b[payload..end]);
        b[at + 12..at + 16].copy_from_slice(&crc.finalize().to_le_bytes());
        at = end;
    }
    let crc = crc32fast::hash(&b[data_end..data_end + 16]);
    b[data_end + 16..data_end + 20].copy_from_slice(&crc.to_le_bytes());
    b
}

fn read_exact(input: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<(), RunError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => RunError::Truncated { path: path.to_owned() },
        _ => RunError::io(path, e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(prints: &[(u64, bool)], width: u32, rice: u32) -> Vec<u8> {
        let mut w = PrintWriter::new(Vec::new(), Path::new("t.dgp"), width, rice).unwrap();
        for &(p, r) in prints {
            w.push(p, r).unwrap();
        }
        let (entries, bytes, out) = w.finish().unwrap();
        assert_eq!((entries, bytes), (prints.len() as u64, out.len() as u64));
        out
    }

    fn read(bytes: &[u8]) -> Result<Vec<(u64, bool)>, RunError> {
        let mut r = PrintReader::new(bytes, Path::new("t.dgp"))?;
        let mut got = Vec::new();
        while let Some(e) = r.next_print()? {
            got.push(e);
        }
        Ok(got)
    }

    /// Sorted distinct prints below 2^40, with a repeat bit each.
    fn sample(count: usize, seed: u64) -> Vec<(u64, bool)> {
        let mut x = seed;
        let mut prints: Vec<u64> = (0..count)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x >> 24
            })
            .collect();
        prints.sort_unstable();
        prints.dedup();
        prints.into_iter().map(|p| (p, p % 3 == 0)).collect()
    }

    #[test]
    fn prints_come_back_as_written_across_blocks_and_rice_parameters() {
        let prints = sample(300_000, 7);
        for rice in [0, 5, rice_for((1 << 40) / prints.len() as u64), 30] {
            let bytes = written(&prints, 40, rice);
            assert_eq!(read(&bytes).unwrap(), prints, "rice {rice}");
        }
        // The tuned parameter keeps a print near log2(2^40 / count) + 3 bits.
        let bytes = written(&prints, 40, rice_for((1 << 40) / prints.len() as u64));
        let bits = bytes.len() as f64 * 8.0 / prints.len() as f64;
        let spacing = (40.0 - (prints.len() as f64).log2()).max(0.0);
        assert!(bits < spacing + 3.5 && bits > spacing + 1.0, "{bits} bits a print, {spacing} to spacing");
        assert_eq!(read(&written(&[], 40, 3)).unwrap(), vec![]);
        assert_eq!(read(&written(&[(0, true), ((1 << 40) - 1, false)], 40, 39)).unwrap().len(), 2);
    }

    #[test]
    fn prints_out_of_order_or_too_wide_are_refused_when_written() {
        let mut w = PrintWriter::new(Vec::new(), Path::new("t.dgp"), 40, 8).unwrap();
        w.push(5, false).unwrap();
        assert!(w.push(5, false).is_err());
        assert!(w.push(4, false).is_err());
        assert!(w.push(1 << 40, false).is_err());
    }

    #[test]
    fn a_damaged_or_truncated_run_is_an_error_never_other_prints() {
        let prints = sample(50_000, 3);
        let bytes = written(&prints, 40, 20);
        for cut in [0, 10, 16, 100, bytes.len() / 2, bytes.len() - 24, bytes.len() - 1] {
            assert!(read(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in [3, 12, 20, 40, bytes.len() / 3, bytes.len() - 10] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(read(&bad).is_err(), "flipped byte {at}");
        }
    }
}
