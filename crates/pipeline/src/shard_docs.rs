//! A shard's document lists (one per word stream: which documents the
//! stream holds, and their IDs), kept on disk between the lexicon task that
//! wrote the streams and the index task that reads them.
//!
//! ```text
//! magic "DGSDOCS\0" | version u16 LE | lists u32 LE
//! each list: runs u64 | (first u64, count u64) per run | ID bytes u64 | the IDs
//!            | IDs u64 | each ID's length u32
//! XXH3-64 of every byte before it, u64 LE
//! ```
//!
//! Numbers are little-endian; the whole file is read and checked before
//! anything in it is used.

use std::io::Write;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::doc_ids::ListedIds;
use crate::ngrams::StreamDocs;
use dupgram_jobkit::error::PipelineError;

/// First eight bytes of a shard's document lists.
pub const SHARD_DOCS_MAGIC: &[u8; 8] = b"DGSDOCS\0";
/// The format this build writes and reads.
pub const SHARD_DOCS_VERSION: u16 = 1;

/// A shard's document lists, one per word stream, in stream order.
#[derive(Debug, Default)]
pub struct ShardDocuments {
    pub(crate) lists: Vec<StreamDocs>,
}

impl ShardDocuments {
    /// Documents listed in all.
    pub fn documents(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum()
    }

    /// Writes the lists in the format above (their IDs held, as a shard's are).
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut buf = Vec::new();
        buf.extend_from_slice(SHARD_DOCS_MAGIC);
        buf.extend_from_slice(&SHARD_DOCS_VERSION.to_le_bytes());
        buf.extend_from_slice(&(self.lists.len() as u32).to_le_bytes());
        for list in &self.lists {
            buf.extend_from_slice(&(list.runs.len() as u64).to_le_bytes());
            for &(first, count) in &list.runs {
                buf.extend_from_slice(&first.to_le_bytes());
                buf.extend_from_slice(&count.to_le_bytes());
            }
            let ListedIds::Memory { ids, lens } = &list.ids else {
                return Err(std::io::Error::other("internal error: a shard's document list without its IDs"));
            };
            buf.extend_from_slice(&(ids.len() as u64).to_le_bytes());
            buf.extend_from_slice(ids.as_bytes());
            buf.extend_from_slice(&(lens.len() as u64).to_le_bytes());
            for &len in lens {
                buf.extend_from_slice(&len.to_le_bytes());
            }
        }
        let check = xxh3_64(&buf);
        buf.extend_from_slice(&check.to_le_bytes());
        out.write_all(&buf)
    }

    /// Reads the lists at `path`, refusing a file that is not whole.
    pub fn load(path: &Path) -> Result<ShardDocuments, PipelineError> {
        let bytes = std::fs::read(path).map_err(|e| PipelineError::io(path, e))?;
        let corrupt = |what: &str| PipelineError::Corrupt(format!("{}: {what}", path.display()));
        if bytes.len() < 22 || &bytes[..8] != SHARD_DOCS_MAGIC {
            return Err(corrupt("not a shard's document lists"));
        }
        let (body, check) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body).to_le_bytes() != check {
            return Err(corrupt("checksum mismatch"));
        }
        let mut r = Reader { bytes: &body[8..] };
        let version = u16::from_le_bytes(r.take(2).ok_or_else(|| corrupt("cut short"))?.try_into().expect("2 bytes"));
        if version != SHARD_DOCS_VERSION {
            return Err(corrupt(&format!("format version {version}; this build reads {SHARD_DOCS_VERSION}")));
        }
        let lists = r.u32().ok_or_else(|| corrupt("cut short"))?;
        let mut out = ShardDocuments::default();
        for _ in 0..lists {
            out.lists.push(read_list(&mut r).ok_or_else(|| corrupt("a document list cut short or malformed"))?);
        }
        if !r.bytes.is_empty() {
            return Err(corrupt("bytes after the last list"));
        }
        Ok(out)
    }
}

fn read_list(r: &mut Reader<'_>) -> Option<StreamDocs> {
    let mut list = StreamDocs::default();
    let runs = r.count(16)?;
    for _ in 0..runs {
        list.runs.push((r.u64()?, r.u64()?));
    }
    let id_bytes = r.count(1)?;
    let ids = String::from_utf8(r.take(id_bytes)?.to_vec()).ok()?;
    let count = r.count(4)?;
    let mut lens = Vec::with_capacity(count);
    for _ in 0..count {
        lens.push(r.u32()?);
    }
    list.listed = list.runs.iter().try_fold(0u64, |sum, &(_, count)| sum.checked_add(count))?;
    let lengths: u64 = lens.iter().map(|&l| u64::from(l)).sum();
    let whole = list.listed == lens.len() as u64 && lengths == ids.len() as u64;
    list.ids = ListedIds::Memory { ids, lens };
    whole.then_some(list)
}

/// Reads numbers off the front of a checked byte slice.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A count of items of `size` bytes each, no more than the bytes left hold.
    fn count(&mut self, size: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(size)? <= self.bytes.len()).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists() -> ShardDocuments {
        let named = || StreamDocs::new(ListedIds::Memory { ids: String::new(), lens: Vec::new() });
        let (mut a, mut b) = (named(), named());
        for (number, id) in [(0, "doc-0"), (1, "d1"), (5, "")] {
            a.push(number, id).unwrap();
        }
        b.push(2, "zwei").unwrap();
        ShardDocuments { lists: vec![a, b, named()] }
    }

    #[test]
    fn lists_read_back_as_written_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.dgd");
        let mut bytes = Vec::new();
        lists().write_to(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let read = ShardDocuments::load(&path).unwrap();
        assert_eq!(read.documents(), 4);
        let want = lists();
        for (got, want) in read.lists.iter().zip(&want.lists) {
            let (ListedIds::Memory { ids, lens }, ListedIds::Memory { ids: want_ids, lens: want_lens }) =
                (&got.ids, &want.ids)
            else {
                panic!("IDs not held");
            };
            assert_eq!((&got.runs, got.listed, ids, lens), (&want.runs, want.listed, want_ids, want_lens));
        }
        // Every flipped bit and every cut is refused, naming the file; none panics.
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            std::fs::write(&path, &damaged).unwrap();
            let e = ShardDocuments::load(&path).unwrap_err().to_string();
            assert!(e.contains("docs.dgd"), "{e}");
            std::fs::write(&path, &bytes[..at]).unwrap();
            assert!(ShardDocuments::load(&path).is_err());
        }
    }
}
