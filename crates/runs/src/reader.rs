use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::reclaim::Reclaim;
use crate::{
    BLOCK_HEADER_LEN, BitCursor, CodeError, FOOTER_LEN, FOOTER_MAGIC, FORMAT_VERSION, HEADER_LEN, MAGIC,
    MAX_BLOCK_BYTES, MAX_N, RunError, RunHeader, RunKind,
};

/// The totals a footer promises.
#[derive(Debug, Clone, Copy)]
struct Footer {
    blocks: u64,
    entries: u64,
    total_count: u64,
}

/// Streams the entries of a run file in order, verifying every block.
///
/// The footer is checked when the run is opened, so a truncated run is
/// rejected before any of it is merged; each block's CRC is checked before it
/// is decoded, and the totals are compared with the footer at the end.
pub struct RunReader<R: Read + Seek> {
    src: R,
    path: PathBuf,
    header: RunHeader,
    footer: Footer,
    /// Byte offset of the next block header.
    offset: u64,
    data_end: u64,
    payload: Vec<u8>,
    cursor: BitCursor,
    payload_offset: u64,
    left_in_block: u32,
    at_block_start: bool,
    current: Vec<u32>,
    count: u64,
    occurrences: Vec<u64>,
    blocks_seen: u64,
    entries_seen: u64,
    count_seen: u64,
    /// For a run read once and removed after: gives back the blocks read.
    reclaim: Option<Reclaim>,
}

impl RunReader<File> {
    pub fn open(path: &Path) -> Result<Self, RunError> {
        let file = File::open(path).map_err(|e| RunError::io(path, e))?;
        RunReader::new(file, path)
    }

    /// Opens a run that is read once and removed after (by a merge): its
    /// blocks are given back to the disk as they are read, so a merge's
    /// output does not sit on disk beside all of its inputs. A run with
    /// another name, or on a file system that cannot punch holes, is read
    /// as [`open`](Self::open) reads it (see [`crate::reclaim`]).
    pub fn open_consumed(path: &Path) -> Result<Self, RunError> {
        let mut reader = RunReader::open(path)?;
        reader.reclaim = Reclaim::open(path);
        Ok(reader)
    }
}

impl<R: Read + Seek> RunReader<R> {
    /// Reads and checks the header and footer of the run in `src`.
    pub fn new(mut src: R, path: &Path) -> Result<Self, RunError> {
        let io = |e| RunError::io(path, e);
        let len = src.seek(SeekFrom::End(0)).map_err(io)?;
        src.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut h = [0u8; HEADER_LEN as usize];
        if len < HEADER_LEN {
            return Err(if len >= 8 {
                RunError::Truncated { path: path.to_owned() }
            } else {
                RunError::BadMagic { path: path.to_owned() }
            });
        }
        src.read_exact(&mut h).map_err(io)?;
        if &h[0..8] != MAGIC {
            return Err(RunError::BadMagic { path: path.to_owned() });
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if version != FORMAT_VERSION {
            return Err(RunError::Version { path: path.to_owned(), found: version });
        }
        if crc32fast::hash(&h[0..24]) != le_u32(&h[24..28]) {
            return Err(corrupt(path, 0, "header checksum mismatch"));
        }
        let kind = match h[11] {
            0 => RunKind::Counts,
            1 => RunKind::Postings,
            _ => return Err(corrupt(path, 11, "unknown run kind")),
        };
        let header = RunHeader { n: h[10], lexicon_id: le_u64(&h[16..24]), kind };
        if header.n == 0 || usize::from(header.n) > MAX_N {
            return Err(corrupt(path, 10, "n out of range"));
        }
        if len < HEADER_LEN + FOOTER_LEN {
            return Err(RunError::Truncated { path: path.to_owned() });
        }
        let data_end = len - FOOTER_LEN;
        let mut f = [0u8; FOOTER_LEN as usize];
        src.seek(SeekFrom::Start(data_end)).map_err(io)?;
        src.read_exact(&mut f).map_err(io)?;
        if &f[0..8] != FOOTER_MAGIC || crc32fast::hash(&f[0..32]) != le_u32(&f[32..36]) {
            return Err(RunError::Truncated { path: path.to_owned() });
        }
        let footer = Footer { blocks: le_u64(&f[8..16]), entries: le_u64(&f[16..24]), total_count: le_u64(&f[24..32]) };
        src.seek(SeekFrom::Start(HEADER_LEN)).map_err(io)?;
        Ok(RunReader {
            src,
            path: path.to_owned(),
            header,
            footer,
            offset: HEADER_LEN,
            data_end,
            payload: Vec::new(),
            cursor: BitCursor::new(),
            payload_offset: 0,
            left_in_block: 0,
            at_block_start: true,
            current: vec![0; usize::from(header.n)],
            count: 0,
            occurrences: Vec::new(),
            blocks_seen: 0,
            entries_seen: 0,
            count_seen: 0,
            reclaim: None,
        })
    }

    pub fn header(&self) -> RunHeader {
        self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries the footer says the run holds.
    pub fn len(&self) -> u64 {
        self.footer.entries
    }

    pub fn is_empty(&self) -> bool {
        self.footer.entries == 0
    }

    /// Fails unless the run was made with `expected` n and lexicon.
    pub fn expect_header(&self, expected: RunHeader) -> Result<(), RunError> {
        if self.header == expected {
            return Ok(());
        }
        Err(RunError::Mismatch {
            path: self.path.clone(),
            found_n: self.header.n,
            found_lexicon: self.header.lexicon_id,
            expected_n: expected.n,
            expected_lexicon: expected.lexicon_id,
        })
    }

    /// The current entry's n-gram (valid after [`advance`](Self::advance) returned true).
    #[inline]
    pub fn ngram(&self) -> &[u32] {
        &self.current
    }

    #[inline]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The current entry's occurrences, in increasing order (postings runs; empty otherwise).
    #[inline]
    pub fn occurrences(&self) -> &[u64] {
        &self.occurrences
    }

    /// Moves to the next entry; false at the end of the run.
    #[inline]
    pub fn advance(&mut self) -> Result<bool, RunError> {
        if self.left_in_block == 0 && !self.load_block()? {
            return Ok(false);
        }
        self.decode_entry().map_err(|e| {
            let offset = self.payload_offset + self.cursor.bits_consumed() / 8;
            corrupt(&self.path, offset, &e.to_string())
        })?;
        self.left_in_block -= 1;
        self.entries_seen += 1;
        self.count_seen = self.count_seen.saturating_add(self.count);
        Ok(true)
    }

    #[inline]
    fn decode_entry(&mut self) -> Result<(), CodeError> {
        let data = &self.payload[..];
        let c = &mut self.cursor;
        let n = self.current.len();
        // A block's first entry is stored whole, so nothing in the code keeps
        // it above the previous block's last: check it, or a damaged run
        // would be merged out of order.
        let mut previous = None;
        let start = if self.at_block_start {
            self.at_block_start = false;
            if self.entries_seen > 0 {
                previous = Some(self.current.clone());
            }
            0
        } else {
            let lcp = c.read_gamma(data)? - 1;
            if lcp >= n as u64 {
                return Err(CodeError::TooLong);
            }
            let lcp = lcp as usize;
            let step = c.read_delta(data)?;
            self.current[lcp] = u32::try_from(u64::from(self.current[lcp]) + step).map_err(|_| CodeError::TooLong)?;
            lcp + 1
        };
        for slot in &mut self.current[start..] {
            *slot = u32::try_from(c.read_delta(data)? - 1).map_err(|_| CodeError::TooLong)?;
        }
        if previous.is_some_and(|p| self.current <= p) {
            return Err(CodeError::OutOfOrder);
        }
        self.count = c.read_gamma(data)?;
        if self.header.kind == RunKind::Postings {
            // A block cannot hold more occurrences than it has bits.
            if self.count > data.len() as u64 * 8 {
                return Err(CodeError::TooLong);
            }
            self.occurrences.clear();
            let (mut doc, mut pos) = (0u64, 0u64);
            for i in 0..self.count {
                if i == 0 {
                    doc = c.read_delta(data)? - 1;
                    pos = c.read_delta(data)? - 1;
                } else {
                    // Steps are up to 64 bits: saturate, and let the range check below refuse them.
                    let step = c.read_gamma(data)? - 1;
                    doc = doc.saturating_add(step);
                    pos = if step == 0 { pos.saturating_add(c.read_gamma(data)?) } else { c.read_delta(data)? - 1 };
                }
                if doc > u64::from(u32::MAX) || pos > u64::from(u32::MAX) {
                    return Err(CodeError::TooLong);
                }
                self.occurrences.push((doc << 32) | pos);
            }
        }
        Ok(())
    }

    fn load_block(&mut self) -> Result<bool, RunError> {
        if self.offset == self.data_end {
            return self.check_totals().map(|()| false);
        }
        let io = |e| RunError::io(&self.path, e);
        if self.offset + BLOCK_HEADER_LEN as u64 > self.data_end {
            return Err(corrupt(&self.path, self.offset, "block header runs into the footer"));
        }
        let mut bh = [0u8; BLOCK_HEADER_LEN];
        self.src.read_exact(&mut bh).map_err(io)?;
        let (len, entries, crc) = (le_u32(&bh[0..4]), le_u32(&bh[4..8]), le_u32(&bh[8..12]));
        let payload_offset = self.offset + BLOCK_HEADER_LEN as u64;
        if len > MAX_BLOCK_BYTES || payload_offset + u64::from(len) > self.data_end || entries == 0 {
            return Err(corrupt(&self.path, self.offset, "implausible block header"));
        }
        self.payload.resize(len as usize, 0);
        self.src.read_exact(&mut self.payload).map_err(|e| RunError::io(&self.path, e))?;
        if crc32fast::hash(&self.payload) != crc {
            return Err(corrupt(&self.path, self.offset, "block checksum mismatch"));
        }
        self.payload_offset = payload_offset;
        self.offset = payload_offset + u64::from(len);
        self.cursor = BitCursor::new();
        self.left_in_block = entries;
        self.at_block_start = true;
        self.blocks_seen += 1;
        // Read unbuffered: every byte before `offset` is in `payload` or used up.
        if let Some(reclaim) = self.reclaim.as_mut()
            && !reclaim.release(self.offset)
        {
            self.reclaim = None;
        }
        Ok(true)
    }

    fn check_totals(&self) -> Result<(), RunError> {
        let f = self.footer;
        if (self.blocks_seen, self.entries_seen, self.count_seen) != (f.blocks, f.entries, f.total_count) {
            return Err(corrupt(&self.path, self.data_end, "blocks do not add up to the footer's totals"));
        }
        Ok(())
    }
}

fn corrupt(path: &Path, offset: u64, what: &str) -> RunError {
    RunError::Corrupt { path: path.to_owned(), offset, what: what.to_owned() }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}
