//! Words by ID on disk, for writing out n-grams whose words the memory
//! does not hold: a lexicon's words past those held in memory, in blocks
//! found through an index, each block checked when it is read.
//!
//! ```text
//! magic "DGWBYID\r" | version u16 LE | 0 u16 | first ID u32 LE
//! blocks, each: BLOCK_WORDS words (the last may hold fewer), each varint length | bytes
//! index:  per block, its offset u64 LE | XXH3-64 of its bytes u64 LE
//! end:    blocks u64 LE | words u64 LE | index offset u64 LE | XXH3-64 of those 24 bytes u64 LE
//! ```
//!
//! A block is found by reading its index entry and the next one (or the
//! end), so nothing of the file is held in memory but the block last read.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use dupgram_lexicon::WordsById;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::VocabError;
use crate::frames::{push_varint, read_varint};

const MAGIC: &[u8; 8] = b"DGWBYID\r";
const VERSION: u16 = 1;
/// Words per block.
pub const BLOCK_WORDS: u32 = 64;
const KIND: &str = "words-by-ID file";

/// Writes the words of consecutive IDs.
pub struct DiskWordsWriter {
    out: BufWriter<File>,
    path: PathBuf,
    words: u64,
    offset: u64,
    block: Vec<u8>,
    index: Vec<u8>,
    blocks: u64,
}

impl DiskWordsWriter {
    /// A file at `path` whose first word will have ID `first`.
    pub fn create(path: &Path, first: u32) -> Result<Self, VocabError> {
        let file = File::create(path).map_err(|e| VocabError::io(path, e))?;
        let mut out = BufWriter::with_capacity(64 << 10, file);
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(MAGIC);
        head[8..10].copy_from_slice(&VERSION.to_le_bytes());
        head[12..16].copy_from_slice(&first.to_le_bytes());
        out.write_all(&head).map_err(|e| VocabError::io(path, e))?;
        Ok(DiskWordsWriter {
            out,
            path: path.to_owned(),
            words: 0,
            offset: 16,
            block: Vec::new(),
            index: Vec::new(),
            blocks: 0,
        })
    }

    /// The word of the next ID.
    pub fn push(&mut self, word: &[u8]) -> Result<(), VocabError> {
        push_varint(&mut self.block, word.len() as u64);
        self.block.extend_from_slice(word);
        self.words += 1;
        if self.words.is_multiple_of(u64::from(BLOCK_WORDS)) {
            self.cut()?;
        }
        Ok(())
    }

    fn cut(&mut self) -> Result<(), VocabError> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.index.extend_from_slice(&self.offset.to_le_bytes());
        self.index.extend_from_slice(&xxh3_64(&self.block).to_le_bytes());
        self.out.write_all(&self.block).map_err(|e| VocabError::io(&self.path, e))?;
        self.offset += self.block.len() as u64;
        self.blocks += 1;
        self.block.clear();
        Ok(())
    }

    /// Writes the index and the end.
    pub fn finish(mut self) -> Result<DiskWords, VocabError> {
        self.cut()?;
        let index_at = self.offset;
        let mut end = Vec::with_capacity(32);
        end.extend_from_slice(&self.blocks.to_le_bytes());
        end.extend_from_slice(&self.words.to_le_bytes());
        end.extend_from_slice(&index_at.to_le_bytes());
        let check = xxh3_64(&end);
        end.extend_from_slice(&check.to_le_bytes());
        let path = self.path.clone();
        self.out.write_all(&self.index).map_err(|e| VocabError::io(&path, e))?;
        self.out.write_all(&end).map_err(|e| VocabError::io(&path, e))?;
        self.out.flush().map_err(|e| VocabError::io(&path, e))?;
        drop(self.out);
        DiskWords::open(&path)
    }
}

/// A block read: its number, its bytes and its words' (start, end) in them.
type CachedBlock = (u64, Vec<u8>, Vec<(u32, u32)>);

/// The reader: words by ID, a block at a time.
pub struct DiskWords {
    file: File,
    path: PathBuf,
    first: u32,
    words: u64,
    blocks: u64,
    index_at: u64,
    /// The block read last.
    cached: Option<CachedBlock>,
}

impl DiskWords {
    /// Opens a file written by [`DiskWordsWriter`], checking its header and end.
    pub fn open(path: &Path) -> Result<Self, VocabError> {
        let file = File::open(path).map_err(|e| VocabError::io(path, e))?;
        let corrupt = |what: &str| VocabError::Corrupt { path: path.to_owned(), kind: KIND, what: what.to_owned() };
        let len = file.metadata().map_err(|e| VocabError::io(path, e))?.len();
        if len < 48 {
            return Err(corrupt("truncated"));
        }
        let mut head = [0u8; 16];
        file.read_exact_at(&mut head, 0).map_err(|e| VocabError::io(path, e))?;
        if &head[..8] != MAGIC || u16::from_le_bytes([head[8], head[9]]) != VERSION || head[10..12] != [0, 0] {
            return Err(corrupt("not a file of this kind and version"));
        }
        let mut end = [0u8; 32];
        file.read_exact_at(&mut end, len - 32).map_err(|e| VocabError::io(path, e))?;
        let field = |i: usize| u64::from_le_bytes(end[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        if xxh3_64(&end[..24]) != field(3) {
            return Err(corrupt("end checksum mismatch"));
        }
        let (blocks, words, index_at) = (field(0), field(1), field(2));
        if blocks.checked_mul(16).and_then(|b| b.checked_add(index_at)) != Some(len - 32)
            || words.div_ceil(u64::from(BLOCK_WORDS)) != blocks
            || index_at < 16
        {
            return Err(corrupt("the end does not describe the file"));
        }
        let first = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
        Ok(DiskWords { file, path: path.to_owned(), first, words, blocks, index_at, cached: None })
    }

    /// The first ID the file holds; it holds `first()..first() + len()`.
    pub fn first(&self) -> u32 {
        self.first
    }

    pub fn len(&self) -> u64 {
        self.words
    }

    pub fn is_empty(&self) -> bool {
        self.words == 0
    }

    /// Bytes of the file.
    pub fn bytes(&self) -> u64 {
        self.index_at + self.blocks * 16 + 32
    }

    fn corrupt(&self, what: &str) -> VocabError {
        VocabError::Corrupt { path: self.path.clone(), kind: KIND, what: what.to_owned() }
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<(), VocabError> {
        self.file.read_exact_at(buf, at).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => self.corrupt("truncated"),
            _ => VocabError::io(&self.path, e),
        })
    }

    /// Loads block `b` into the cache.
    fn load(&mut self, b: u64) -> Result<(), VocabError> {
        if self.cached.as_ref().is_some_and(|(c, _, _)| *c == b) {
            return Ok(());
        }
        let mut entry = [0u8; 16];
        self.read_at(&mut entry, self.index_at + b * 16)?;
        let start = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
        let check = u64::from_le_bytes(entry[8..].try_into().expect("8 bytes"));
        let end = if b + 1 < self.blocks {
            let mut next = [0u8; 8];
            self.read_at(&mut next, self.index_at + (b + 1) * 16)?;
            u64::from_le_bytes(next)
        } else {
            self.index_at
        };
        if start < 16 || end < start || end > self.index_at || end - start > 64 << 20 {
            return Err(self.corrupt("an index entry points outside the blocks"));
        }
        let (_, mut bytes, mut spans) = self.cached.take().unwrap_or_default();
        bytes.resize((end - start) as usize, 0);
        self.read_at(&mut bytes, start)?;
        if xxh3_64(&bytes) != check {
            return Err(self.corrupt("block checksum mismatch"));
        }
        spans.clear();
        let mut at = 0usize;
        while at < bytes.len() {
            let Some((len, n)) = read_varint(&bytes[at..]) else { return Err(self.corrupt("a word cut short")) };
            let s = at + n;
            let e = s
                .checked_add(len as usize)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| self.corrupt("a word cut short"))?;
            spans.push((s as u32, e as u32));
            at = e;
        }
        let want = (self.words - b * u64::from(BLOCK_WORDS)).min(u64::from(BLOCK_WORDS));
        if spans.len() as u64 != want {
            return Err(self.corrupt("a block holds the wrong number of words"));
        }
        self.cached = Some((b, bytes, spans));
        Ok(())
    }

    /// The words of `ids` (increasing, each in the file), added to `batch`.
    pub fn resolve(&mut self, ids: &[u32], batch: &mut RareWords) -> Result<(), VocabError> {
        for &id in ids {
            let Some(i) = id.checked_sub(self.first).map(u64::from).filter(|&i| i < self.words) else {
                return Err(VocabError::Inconsistent(format!("word ID {id} is in no file of words")));
            };
            self.load(i / u64::from(BLOCK_WORDS))?;
            let (_, bytes, spans) = self.cached.as_ref().expect("loaded above");
            let (s, e) = spans[(i % u64::from(BLOCK_WORDS)) as usize];
            batch.push(id, &bytes[s as usize..e as usize]);
        }
        Ok(())
    }
}

impl DiskWords {
    /// The words of the lowest IDs, as many whole blocks as fit in `bytes`
    /// (words and offsets), read in order; the file must start at ID 0.
    pub fn read_held(&mut self, bytes: u64) -> Result<HeldWords, VocabError> {
        let mut held = HeldWords::default();
        if self.first != 0 {
            return Ok(held);
        }
        // Sized once: what the file's words take (or the bytes allowed), so no growth overshoots.
        let data = self.index_at - 16;
        held.arena.reserve_exact(data.min(bytes) as usize);
        held.ends.reserve_exact((self.words.min(bytes / 8)) as usize);
        for b in 0..self.blocks {
            self.load(b)?;
            let (_, block, spans) = self.cached.as_ref().expect("loaded above");
            let grown = held.arena.len() + block.len() + 8 * (held.ends.len() + spans.len());
            if grown as u64 > bytes || held.arena.len() + block.len() > held.arena.capacity() {
                break;
            }
            if held.ends.len() + spans.len() > held.ends.capacity() {
                break;
            }
            for &(s, e) in spans {
                held.arena.extend_from_slice(&block[s as usize..e as usize]);
                held.ends.push(held.arena.len() as u64);
            }
        }
        held.arena.shrink_to_fit();
        held.ends.shrink_to_fit();
        Ok(held)
    }
}

/// The words of the lowest IDs, held in memory ([`DiskWords::read_held`]).
#[derive(Debug, Default)]
pub struct HeldWords {
    arena: Vec<u8>,
    ends: Vec<u64>,
}

impl HeldWords {
    /// IDs `0..len()` are held.
    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> u64 {
        (self.arena.capacity() + self.ends.capacity() * 8) as u64
    }
}

impl WordsById for HeldWords {
    fn word_bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    fn prefetch_word(&self, id: u32, near: bool) {
        let i = id as usize;
        let Some(end) = self.ends.get(i) else { return };
        if !near {
            dupgram_prefetch::prefetch(end);
        } else if let Some(first) = self.arena.get(if i == 0 { 0 } else { self.ends[i - 1] as usize }) {
            dupgram_prefetch::prefetch(first);
        }
    }
}

/// The words of one batch's IDs that the memory does not hold, looked up
/// by [`DiskWords::resolve`]; with the lexicon held in part, they answer
/// for every ID of the batch ([`BatchWords`]).
#[derive(Debug, Default)]
pub struct RareWords {
    ids: Vec<u32>,
    spans: Vec<(u32, u32)>,
    arena: Vec<u8>,
}

impl RareWords {
    pub fn clear(&mut self) {
        self.ids.clear();
        self.spans.clear();
        self.arena.clear();
    }

    fn push(&mut self, id: u32, word: &[u8]) {
        debug_assert!(self.ids.last().is_none_or(|&l| l < id), "IDs come in increasing order");
        let s = self.arena.len() as u32;
        self.arena.extend_from_slice(word);
        self.ids.push(id);
        self.spans.push((s, self.arena.len() as u32));
    }

    fn get(&self, id: u32) -> Option<&[u8]> {
        let i = self.ids.binary_search(&id).ok()?;
        let (s, e) = self.spans[i];
        Some(&self.arena[s as usize..e as usize])
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 4 + self.spans.capacity() * 8 + self.arena.capacity()
    }
}

/// The words of one batch: the lexicon's for the IDs it holds, the rare
/// words looked up for the rest.
pub struct BatchWords<'a> {
    pub held: &'a dyn WordsById,
    /// IDs below this are held.
    pub held_len: u32,
    pub rare: &'a RareWords,
}

impl WordsById for BatchWords<'_> {
    fn word_bytes(&self, id: u32) -> &[u8] {
        if id < self.held_len {
            return self.held.word_bytes(id);
        }
        // The batch's rare IDs were all resolved before it was handed on.
        self.rare.get(id).expect("every ID of the batch was resolved")
    }

    fn prefetch_word(&self, id: u32, near: bool) {
        // The rare words were just read into a small arena: cached already.
        if id < self.held_len {
            self.held.prefetch_word(id, near);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_ids_are_held_by_whole_blocks_within_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w");
        let mut w = DiskWordsWriter::create(&path, 0).unwrap();
        for i in 0..200u32 {
            w.push(format!("w{i}").as_bytes()).unwrap();
        }
        let mut reader = w.finish().unwrap();
        let all = reader.read_held(1 << 20).unwrap();
        assert_eq!(all.len(), 200);
        assert_eq!(all.word(0), "w0");
        assert_eq!(all.word(199), "w199");
        let some = reader.read_held(1200).unwrap();
        assert_eq!(some.len() % BLOCK_WORDS, 0);
        assert!(!some.is_empty() && some.len() < 200 && some.heap_bytes() <= 1200, "{}", some.len());
        let mut rare = RareWords::default();
        reader.resolve(&[some.len(), 199], &mut rare).unwrap();
        let batch = BatchWords { held: &some, held_len: some.len(), rare: &rare };
        assert_eq!(batch.word(3), "w3");
        assert_eq!(batch.word(some.len()), format!("w{}", some.len()));
        assert_eq!(batch.word(199), "w199");
    }

    #[test]
    fn words_come_back_by_id_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w");
        let mut w = DiskWordsWriter::create(&path, 1000).unwrap();
        let words: Vec<String> = (0..300).map(|i| format!("word{i}-{}", "x".repeat(i % 7))).collect();
        for word in &words {
            w.push(word.as_bytes()).unwrap();
        }
        let mut reader = w.finish().unwrap();
        let ids: Vec<u32> = vec![1000, 1001, 1063, 1064, 1200, 1299];
        let mut rare = RareWords::default();
        reader.resolve(&ids, &mut rare).unwrap();
        for &id in &ids {
            assert_eq!(rare.get(id).unwrap(), words[(id - 1000) as usize].as_bytes());
        }
        let mut again = DiskWords::open(&path).unwrap();
        assert_eq!((again.first(), again.len()), (1000, 300));
        assert!(again.read_held(1 << 20).unwrap().is_empty(), "only a file from ID 0 holds words in memory");
        rare.clear();
        again.resolve(&[1299], &mut rare).unwrap();
        assert!(again.resolve(&[1300], &mut rare).is_err());
        assert!(again.resolve(&[999], &mut rare).is_err());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[40] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = DiskWords::open(&path).unwrap().resolve(&[1000], &mut rare).unwrap_err();
        assert!(err.to_string().contains("checksum") && err.to_string().contains(&path.display().to_string()), "{err}");
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(DiskWords::open(&path).is_err());
    }
}
