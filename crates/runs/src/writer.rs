use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{BLOCK_HEADER_LEN, BLOCK_TARGET_BYTES, BitWriter, FOOTER_MAGIC, MAX_N, RunError, RunHeader, RunKind};

/// Totals of a finished run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub entries: u64,
    pub total_count: u64,
    pub blocks: u64,
    /// Bytes of the whole file, header and footer included.
    pub bytes: u64,
}

/// Writes strictly increasing `(n-gram, count)` entries as a run file.
pub struct RunWriter<W: Write> {
    out: W,
    path: PathBuf,
    header: RunHeader,
    block: BitWriter,
    block_entries: u32,
    /// The previous entry of the current block; empty at a block start.
    prev: Vec<u32>,
    frame: Vec<u8>,
    summary: RunSummary,
}

impl RunWriter<BufWriter<File>> {
    /// Creates `path` (truncating it) and writes the header.
    pub fn create(path: &Path, header: RunHeader) -> Result<Self, RunError> {
        let file = File::create(path).map_err(|e| RunError::io(path, e))?;
        RunWriter::new(BufWriter::with_capacity(64 * 1024, file), path, header)
    }
}

/// Occurrences of a postings entry written a [`BitWriter::codes`] call at a time.
const OCCURRENCES_PER_CALL: usize = 256;

impl<W: Write> RunWriter<W> {
    /// Starts a run on `out`; `path` only names it in errors.
    pub fn new(mut out: W, path: &Path, header: RunHeader) -> Result<Self, RunError> {
        if header.n == 0 || usize::from(header.n) > MAX_N {
            return Err(RunError::BadEntry { path: path.to_owned(), n: header.n });
        }
        out.write_all(&header.encode()).map_err(|e| RunError::io(path, e))?;
        Ok(RunWriter {
            out,
            path: path.to_owned(),
            header,
            block: BitWriter::with_capacity(BLOCK_TARGET_BYTES + 4096),
            block_entries: 0,
            prev: Vec::with_capacity(usize::from(header.n)),
            frame: Vec::with_capacity(BLOCK_TARGET_BYTES + 4096),
            summary: RunSummary { bytes: crate::HEADER_LEN, ..RunSummary::default() },
        })
    }

    pub fn header(&self) -> RunHeader {
        self.header
    }

    /// Appends one entry of a counts run. It must be greater than the previous one.
    #[inline]
    pub fn push(&mut self, ngram: &[u32], count: u64) -> Result<(), RunError> {
        if self.header.kind != RunKind::Counts {
            return Err(self.bad_entry());
        }
        self.push_entry(ngram, count)?;
        self.end_entry()
    }

    /// Appends one entry of a postings run: the n-gram and its occurrences
    /// (`document << 32 | position`, strictly increasing).
    pub fn push_postings(&mut self, ngram: &[u32], occurrences: &[u64]) -> Result<(), RunError> {
        if self.header.kind != RunKind::Postings || occurrences.windows(2).any(|w| w[0] >= w[1]) {
            return Err(self.bad_entry());
        }
        self.push_entry(ngram, occurrences.len() as u64)?;
        let mut prev = None;
        // A group of occurrences a `codes` call, room made for each at its
        // longest (two 65-bit gammas): bounded, however many there are.
        for group in occurrences.chunks(OCCURRENCES_PER_CALL) {
            self.block.codes(group.len() * 130, |codes| {
                for &occ in group {
                    let (doc, pos) = (occ >> 32, occ & 0xffff_ffff);
                    match prev {
                        None => {
                            codes.delta(doc + 1);
                            codes.delta(pos + 1);
                        }
                        Some((pdoc, ppos)) => {
                            codes.gamma(doc - pdoc + 1);
                            if doc == pdoc { codes.gamma(pos - ppos) } else { codes.delta(pos + 1) }
                        }
                    }
                    prev = Some((doc, pos));
                }
            });
        }
        self.end_entry()
    }

    /// Writes the n-gram and count of an entry.
    #[inline]
    fn push_entry(&mut self, ngram: &[u32], count: u64) -> Result<(), RunError> {
        if ngram.len() != usize::from(self.header.n) || count == 0 {
            return Err(self.bad_entry());
        }
        // An entry's codes are written in one go: at most a gamma of its
        // prefix length, a delta of 33 bits or fewer a word, and a gamma of its count.
        let max_bits = 32 + ngram.len() * 48 + 128;
        if self.prev.is_empty() {
            self.block.codes(max_bits, |codes| {
                for &id in ngram {
                    codes.delta(u64::from(id) + 1);
                }
                codes.gamma(count);
            });
            self.prev.extend_from_slice(ngram);
        } else {
            let lcp = self.prev.iter().zip(ngram).take_while(|(a, b)| a == b).count();
            if lcp == ngram.len() || ngram[lcp] < self.prev[lcp] {
                return Err(self.bad_entry());
            }
            let prev = self.prev[lcp];
            self.block.codes(max_bits, |codes| {
                codes.gamma(lcp as u64 + 1);
                codes.delta(u64::from(ngram[lcp] - prev));
                for &id in &ngram[lcp + 1..] {
                    codes.delta(u64::from(id) + 1);
                }
                codes.gamma(count);
            });
            self.prev[lcp..].copy_from_slice(&ngram[lcp..]);
        }
        self.block_entries += 1;
        self.summary.entries += 1;
        self.summary.total_count = self.summary.total_count.saturating_add(count);
        Ok(())
    }

    #[inline]
    fn end_entry(&mut self) -> Result<(), RunError> {
        if self.block.bit_len() >= (BLOCK_TARGET_BYTES as u64) * 8 || self.block_entries == u32::MAX {
            self.flush_block()?;
        }
        Ok(())
    }

    fn bad_entry(&self) -> RunError {
        RunError::BadEntry { path: self.path.clone(), n: self.header.n }
    }

    fn flush_block(&mut self) -> Result<(), RunError> {
        if self.block_entries == 0 {
            return Ok(());
        }
        self.frame.clear();
        self.frame.resize(BLOCK_HEADER_LEN, 0);
        self.block.drain_into(&mut self.frame);
        self.block.clear();
        let payload_len = (self.frame.len() - BLOCK_HEADER_LEN) as u32;
        let crc = crc32fast::hash(&self.frame[BLOCK_HEADER_LEN..]);
        self.frame[0..4].copy_from_slice(&payload_len.to_le_bytes());
        self.frame[4..8].copy_from_slice(&self.block_entries.to_le_bytes());
        self.frame[8..12].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&self.frame).map_err(|e| RunError::io(&self.path, e))?;
        self.summary.blocks += 1;
        self.summary.bytes += self.frame.len() as u64;
        self.block_entries = 0;
        self.prev.clear();
        Ok(())
    }

    /// Writes the last block and the footer, flushes, and returns the sink and totals.
    pub fn finish(mut self) -> Result<(W, RunSummary), RunError> {
        self.flush_block()?;
        let mut footer = [0u8; crate::FOOTER_LEN as usize];
        footer[0..8].copy_from_slice(FOOTER_MAGIC);
        footer[8..16].copy_from_slice(&self.summary.blocks.to_le_bytes());
        footer[16..24].copy_from_slice(&self.summary.entries.to_le_bytes());
        footer[24..32].copy_from_slice(&self.summary.total_count.to_le_bytes());
        let crc = crc32fast::hash(&footer[0..32]);
        footer[32..36].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&footer).map_err(|e| RunError::io(&self.path, e))?;
        self.out.flush().map_err(|e| RunError::io(&self.path, e))?;
        self.summary.bytes += crate::FOOTER_LEN;
        Ok((self.out, self.summary))
    }
}
