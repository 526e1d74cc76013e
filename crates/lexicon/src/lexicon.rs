use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use hashbrown::HashTable;
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::table_hint;
use crate::tokenize::{Normalization, TokenMode};

/// The stable 64-bit hash of a word. It is stored nowhere, but two passes
/// over the corpus (and two runs of the program) must agree on it, so it is
/// XXH3 called directly — never a `Hasher` whose output may change between
/// library versions.
#[inline]
pub fn word_hash(word: &[u8]) -> u64 {
    xxh3_64(word)
}

/// Up to the first eight bytes of a word, zero-padded: with the length and
/// the hash, it settles equality of short words without touching the arena.
#[inline]
fn short_key(bytes: &[u8]) -> u64 {
    let mut key = [0u8; 8];
    let n = bytes.len().min(8);
    key[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(key)
}

/// Up to the first sixteen bytes of a word, zero-padded.
#[inline]
fn long_key(bytes: &[u8]) -> [u64; 2] {
    let tail = if bytes.len() > 8 { &bytes[8..] } else { &[][..] };
    [short_key(bytes), short_key(tail)]
}

/// One word of a [`LexiconBuilder`], stored in the hash table itself so a
/// lookup costs one probe (and, for words over 8 bytes, one arena read).
/// 32 bytes: the arena offset is 32 bits, so a lexicon holds at most 4 GiB
/// of distinct word bytes (far beyond any memory budget it must fit in), and
/// count, length and stop flag share one word (`tally`) so that the
/// first-seen ID fits without growing the entry.
#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u64,
    key: u64,
    /// Count in the low [`COUNT_BITS`] bits, then the length, then the stop flag.
    tally: u64,
    start: u32,
    /// The order in which the builder first saw the word: 0, 1, 2, …
    first_seen: u32,
}

/// Bits of [`Entry::tally`] that hold the count: 2⁴⁸ tokens is far beyond any corpus.
const COUNT_BITS: u32 = 48;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Bits of [`Entry::tally`] that hold the length: the tokenizer cuts tokens
/// at [`crate::MAX_TOKEN_BYTES`], far below 2¹⁵.
const LEN_BITS: u32 = 15;
const STOP_BIT: u64 = 1 << 63;

impl Entry {
    #[inline]
    fn is(&self, hash: u64, key: u64, bytes: &[u8], arena: &[u8]) -> bool {
        self.hash == hash
            && self.key == key
            && self.len() == bytes.len()
            && (bytes.len() <= 8 || &arena[self.start as usize..self.start as usize + bytes.len()] == bytes)
    }

    #[inline]
    fn count(&self) -> u64 {
        self.tally & COUNT_MASK
    }

    #[inline]
    fn len(&self) -> usize {
        ((self.tally >> COUNT_BITS) & ((1 << LEN_BITS) - 1)) as usize
    }

    #[inline]
    fn stop(&self) -> bool {
        self.tally & STOP_BIT != 0
    }

    /// Adds to the count, which saturates rather than spilling into the length.
    #[inline]
    fn add(&mut self, count: u64) {
        let sum = (self.count() + count.min(COUNT_MASK)).min(COUNT_MASK);
        self.tally = (self.tally & !COUNT_MASK) | sum;
    }

    fn bytes<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..self.start as usize + self.len()]
    }
}

/// Counts the words of a corpus (the lexicon pass).
///
/// Words live in one byte arena and a `hashbrown::HashTable` of entries
/// hashed by [`word_hash`]: two allocations instead of one per word, which
/// keeps the resident size close to what [`heap_bytes`](Self::heap_bytes)
/// reports, and interning about twice as fast as `HashMap<String, u32>`.
#[derive(Debug, Default)]
pub struct LexiconBuilder {
    arena: Vec<u8>,
    table: HashTable<Entry>,
    stoplist: std::collections::HashSet<String>,
    tokens: u64,
    /// No word joins the table any more ([`freeze`](Self::freeze)): a
    /// word it does not hold is [`Seen::Overflow`], for the caller to count elsewhere.
    frozen: bool,
    /// Where the table's control bytes begin, and the bucket count that was
    /// true for: what [`prefetch`](Self::prefetch) computes its addresses
    /// from. `(0, 0)` until a prefetch finds it; found again when the table grows.
    anchor: std::cell::Cell<(usize, usize)>,
}

/// What [`LexiconBuilder::add_first_seen`] made of one occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A word of the table, by first-seen ID.
    Word(u32),
    /// A stop word: dropped before n-grams are formed.
    Stop,
    /// A word the table does not hold, met after it was frozen: counted
    /// nowhere here; the caller logs it (see `dupgram-vocab`).
    Overflow,
}

/// What the lexicon pass learned about one token occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A stop word: dropped before n-grams are formed.
    Stop,
    /// Any other word, with its [`word_hash`].
    Word(u64),
}

impl LexiconBuilder {
    /// A builder that drops the given (already normalised) stop words.
    pub fn new(stoplist: impl IntoIterator<Item = String>) -> Self {
        LexiconBuilder { stoplist: stoplist.into_iter().collect(), ..Self::default() }
    }

    /// Counts one occurrence of `word`.
    #[inline]
    pub fn add(&mut self, word: &str) -> Counted {
        self.add_hashed(word.as_bytes(), word_hash(word.as_bytes()))
    }

    /// [`add`](Self::add) with the word's [`word_hash`] already known.
    #[inline]
    pub fn add_hashed(&mut self, bytes: &[u8], hash: u64) -> Counted {
        self.tokens += 1;
        let entry = self.entry(bytes, hash);
        entry.add(1);
        if entry.stop() { Counted::Stop } else { Counted::Word(hash) }
    }

    /// Counts one occurrence of a word and returns its first-seen ID (the
    /// number of distinct words the builder had seen before it); a stop
    /// word is [`Seen::Stop`]. Once the builder is [frozen](Self::freeze),
    /// a word it does not hold is [`Seen::Overflow`] and counted nowhere
    /// (its token still counts in [`tokens`](Self::tokens)).
    #[inline]
    pub fn add_first_seen(&mut self, bytes: &[u8], hash: u64) -> Seen {
        self.tokens += 1;
        let entry = if self.frozen {
            match self.find_mut(bytes, hash) {
                Some(e) => e,
                None => return Seen::Overflow,
            }
        } else {
            self.entry(bytes, hash)
        };
        entry.add(1);
        if entry.stop() { Seen::Stop } else { Seen::Word(entry.first_seen) }
    }

    /// Stops taking new words: from now on a word the table does not hold
    /// is [`Seen::Overflow`]. The table's memory no longer grows.
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// Whether [`freeze`](Self::freeze) was called.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// The entry of a word the table holds.
    #[inline]
    fn find_mut(&mut self, bytes: &[u8], hash: u64) -> Option<&mut Entry> {
        let key = short_key(bytes);
        let arena = &self.arena;
        self.table.find_mut(hash, |e| e.is(hash, key, bytes, arena))
    }

    /// Starts loading the table's slot where a look-up of a word of this
    /// hash begins, for a look-up some words later: the table spans
    /// hundreds of megabytes, so each look-up would otherwise wait on
    /// memory, one after the other.
    ///
    /// Both lines are named from their addresses alone, without reading
    /// the table (see [`crate::table_hint`]); where the control bytes begin
    /// is found once per growth of the table.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let buckets = self.table.num_buckets();
        let (known, mut control) = self.anchor.get();
        if known != buckets || buckets == 0 {
            let Some(found) = table_hint::control_address(&self.table) else { return };
            self.anchor.set((buckets, found));
            control = found;
        }
        table_hint::prefetch_slot::<Entry>(control, buckets, hash);
    }

    /// Whether `word` is on the stop list given at construction.
    pub fn is_stopword(&self, word: &str) -> bool {
        self.stoplist.contains(word)
    }

    /// Counts `count` stop-word occurrences that were not added one by one.
    pub fn add_stop_tokens(&mut self, count: u64) {
        self.tokens += count;
    }

    /// Counts `count` tokens of words a [frozen](Self::freeze) table does
    /// not hold, recognised as such without asking it (a worker's cache of
    /// the words it met): their words are counted elsewhere, their tokens
    /// here.
    pub fn add_overflow_tokens(&mut self, count: u64) {
        self.tokens += count;
    }

    /// The entry of a word, made (with count 0) if new.
    #[inline]
    fn entry(&mut self, bytes: &[u8], hash: u64) -> &mut Entry {
        let key = short_key(bytes);
        let first_seen =
            u32::try_from(self.table.len()).expect("over 4 billion distinct words cannot fit any memory budget");
        let arena = &mut self.arena;
        let stoplist = &self.stoplist;
        match self.table.entry(hash, |e| e.is(hash, key, bytes, arena), |e| e.hash) {
            hashbrown::hash_table::Entry::Occupied(e) => e.into_mut(),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let stop = !stoplist.is_empty() && std::str::from_utf8(bytes).is_ok_and(|w| stoplist.contains(w));
                let start =
                    u32::try_from(arena.len()).expect("a lexicon arena over 4 GiB cannot fit any memory budget");
                arena.extend_from_slice(bytes);
                let len = (bytes.len() as u64).min((1 << LEN_BITS) - 1);
                let tally = (len << COUNT_BITS) | if stop { STOP_BIT } else { 0 };
                v.insert(Entry { hash, key, tally, start, first_seen }).into_mut()
            }
        }
    }

    /// Counts `count` occurrences of `word` at once: for merging the
    /// lexicons of several parts of a corpus (counted by separate tasks)
    /// into the lexicon of the whole.
    pub fn add_counted(&mut self, word: &[u8], count: u64) {
        self.tokens += count;
        self.entry(word, word_hash(word)).add(count);
    }

    /// [`add_counted`](Self::add_counted) with the word's [`word_hash`] already known.
    pub fn add_counted_hashed(&mut self, word: &[u8], hash: u64, count: u64) {
        self.tokens += count;
        self.entry(word, hash).add(count);
    }

    /// Adds another builder's counts (from a worker thread) to this one.
    pub fn absorb(&mut self, other: LexiconBuilder) {
        self.tokens += other.tokens;
        for e in other.table.iter() {
            self.entry(e.bytes(&other.arena), e.hash).add(e.count());
        }
    }

    /// Token occurrences counted, stop words included.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Distinct words so far.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Heap bytes held, counting the slack a growing table keeps.
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity() + self.table.capacity() * (std::mem::size_of::<Entry>() + 1)
    }

    /// [`heap_bytes`](Self::heap_bytes) once `words` more distinct words of
    /// `bytes` bytes in all joined: the table and the arena grow by doubling,
    /// so a few words may take as much again as all before them.
    pub fn heap_bytes_after(&self, words: usize, bytes: usize) -> usize {
        let mut after = self.heap_bytes();
        if self.table.capacity() - self.table.len() < words {
            after += self.table.capacity().max(words) * (std::mem::size_of::<Entry>() + 1);
        }
        if self.arena.capacity() - self.arena.len() < bytes {
            after += self.arena.capacity().max(bytes);
        }
        after
    }

    /// Numbers the words and returns the lexicon in memory: in the order
    /// of [`ranking`](Self::ranking), the `stop_top` most frequent words
    /// joining the stop list, so the most frequent words get the shortest
    /// Elias codes in run files.
    pub fn finish(self, norm: Normalization, stop_top: usize) -> Lexicon {
        let (ranked, mut stopwords) = self.ranking();
        let promoted = stop_top.min(ranked.len());
        stopwords.extend(ranked[..promoted].iter().map(|w| String::from_utf8_lossy(w.bytes).into_owned()));
        stopwords.sort_unstable();
        stopwords.dedup();
        Lexicon::from_parts(norm, stopwords, ranked[promoted..].iter().map(|w| (w.bytes, w.count)))
    }

    /// Numbers the words and writes a lexicon file straight from the
    /// builder, without a second copy of the vocabulary in memory; returns
    /// its identity. See [`Lexicon::save`] for the format.
    pub fn write_to(self, norm: Normalization, stop_top: usize, out: &mut dyn Write) -> std::io::Result<u64> {
        self.write_renumbered(norm, stop_top, out).map(|(identity, _)| identity)
    }

    /// [`write_to`](Self::write_to), also returning how first-seen IDs
    /// ([`add_first_seen`](Self::add_first_seen)) become the file's IDs.
    pub fn write_renumbered(
        self,
        norm: Normalization,
        stop_top: usize,
        out: &mut dyn Write,
    ) -> std::io::Result<(u64, Renumbering)> {
        let (ranked, listed) = self.ranking();
        let total = ranked.len() as u64;
        let mut renumbering = Renumbering::for_table(self.table.len());
        let words = ranked.into_iter().map(|w| Ok(w.ranked()));
        let numbering = Numbering { norm, listed: &listed, stop_top, candidates: total };
        let (_, identity) = numbering.write(out, words, |word, code| -> std::io::Result<()> {
            renumbering.assign(word.tag as u32, code, word.hash);
            Ok(())
        })?;
        Ok((identity, renumbering))
    }

    /// The table's words in rank order — decreasing count, then bytes —
    /// stop words on the list left out, and that list (sorted): what
    /// [`Numbering`] numbers, alone or merged with words counted elsewhere.
    pub fn ranking(&self) -> (Vec<TableWord<'_>>, Vec<String>) {
        let arena = &self.arena;
        let mut order: Vec<TableWord<'_>> = self
            .table
            .iter()
            .filter(|e| !e.stop())
            .map(|e| {
                let bytes = e.bytes(arena);
                TableWord {
                    bytes,
                    count: e.count(),
                    first_seen: e.first_seen,
                    hash: e.hash,
                    prefix: order_prefix(bytes),
                }
            })
            .collect();
        order.sort_unstable_by(|a, b| a.rank_cmp(b.count, b.prefix, b.bytes));
        let mut listed: Vec<String> = self.stoplist.iter().cloned().collect();
        listed.sort_unstable();
        (order, listed)
    }

    /// First-seen IDs handed out: every one is below this.
    pub fn first_seen_len(&self) -> usize {
        self.table.len()
    }
}

/// The order words are numbered in: decreasing count, then increasing bytes.
#[inline]
pub fn rank_order(count_a: u64, bytes_a: &[u8], count_b: u64, bytes_b: &[u8]) -> std::cmp::Ordering {
    count_b.cmp(&count_a).then_with(|| bytes_a.cmp(bytes_b))
}

/// The first four bytes of a word, big-endian, zero-padded: two words
/// whose prefixes differ are in the order of their prefixes. Where they
/// differ at a byte both words have, that byte decides both orders; where
/// the shorter word ends first, its padding is zero and the other word's
/// byte is not (they differ there), and the shorter is a prefix of the
/// longer, so first in both. Equal prefixes say nothing: the bytes decide.
/// Sorting millions of words of the same count then reads the words'
/// bytes, scattered over the arena, only for the ties of four bytes.
#[inline]
pub fn order_prefix(bytes: &[u8]) -> u32 {
    let mut first = [0u8; 4];
    let n = bytes.len().min(4);
    first[..n].copy_from_slice(&bytes[..n]);
    u32::from_be_bytes(first)
}

/// A word of a [`LexiconBuilder`]'s table, as [`LexiconBuilder::ranking`] lists it.
#[derive(Debug, Clone, Copy)]
pub struct TableWord<'a> {
    pub bytes: &'a [u8],
    pub count: u64,
    pub first_seen: u32,
    pub hash: u64,
    /// [`order_prefix`] of `bytes` (in what would be padding: no larger).
    pub prefix: u32,
}

impl<'a> TableWord<'a> {
    /// [`rank_order`] of this word against the word `bytes` of `count`
    /// (`prefix` its [`order_prefix`]), told by the counts and the prefixes
    /// where they differ: the bytes, far apart in the table's arena, are
    /// read only for ties.
    #[inline]
    pub fn rank_cmp(&self, count: u64, prefix: u32, bytes: &[u8]) -> std::cmp::Ordering {
        count.cmp(&self.count).then(self.prefix.cmp(&prefix)).then_with(|| self.bytes.cmp(bytes))
    }

    /// The word as [`Numbering`] takes it, tagged with its first-seen ID.
    pub fn ranked(self) -> RankedWord<'a> {
        RankedWord {
            bytes: std::borrow::Cow::Borrowed(self.bytes),
            count: self.count,
            tag: u64::from(self.first_seen),
            hash: self.hash,
        }
    }
}

/// A word handed to [`Numbering`], in rank order, with whatever the
/// caller needs to know it again by (`tag`) and its [`word_hash`].
#[derive(Debug, Clone)]
pub struct RankedWord<'a> {
    pub bytes: std::borrow::Cow<'a, [u8]>,
    pub count: u64,
    pub tag: u64,
    pub hash: u64,
}

/// Numbers words given in rank order ([`rank_order`]) and writes the
/// lexicon file as it goes, so the vocabulary never has to be in memory
/// at once: the first `stop_top` words join the stop list, the others get
/// IDs 0, 1, 2, … in the order they come.
pub struct Numbering<'a> {
    pub norm: Normalization,
    /// The listed stop words (sorted), which no word handed over may be.
    pub listed: &'a [String],
    pub stop_top: usize,
    /// How many words will be handed over, stop words to be included.
    pub candidates: u64,
}

impl Numbering<'_> {
    /// Writes the lexicon file to `out` from `words` (in rank order, exactly
    /// [`candidates`](Self::candidates) of them) and tells `assign` what each
    /// became: its ID, [`Renumbering::BREAK`] for a word seen once (it keeps
    /// its ID in the file, but no repeated n-gram holds it) or
    /// [`Renumbering::STOP`]. Returns `out` and the file's identity.
    pub fn write<'w, W: Write, E: From<std::io::Error>>(
        &self,
        out: W,
        mut words: impl Iterator<Item = Result<RankedWord<'w>, E>>,
        mut assign: impl FnMut(&RankedWord<'w>, u32) -> Result<(), E>,
    ) -> Result<(W, u64), E> {
        let promoted_len = (self.stop_top as u64).min(self.candidates) as usize;
        let mut promoted = Vec::with_capacity(promoted_len);
        for _ in 0..promoted_len {
            let word = words.next().ok_or_else(|| short_of_words(self.candidates))??;
            assign(&word, Renumbering::STOP)?;
            promoted.push(String::from_utf8_lossy(&word.bytes).into_owned());
        }
        let mut stopwords: Vec<String> = self.listed.to_vec();
        stopwords.extend(promoted);
        stopwords.sort_unstable();
        stopwords.dedup();
        let numbered = self.candidates - promoted_len as u64;
        let mut writer = LexiconWriter::new(out, self.norm, &stopwords, numbered, false)?;
        for id in 0..numbered {
            let word = words.next().ok_or_else(|| short_of_words(self.candidates))??;
            writer.word(&word.bytes, word.count)?;
            let id = u32::try_from(id)
                .ok()
                .filter(|&id| id < Renumbering::BREAK)
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "over 4 billion distinct words"))?;
            assign(&word, if word.count >= 2 { id } else { Renumbering::BREAK })?;
        }
        if words.next().is_some() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "more words than announced").into());
        }
        Ok(writer.finish()?)
    }
}

fn short_of_words(candidates: u64) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("fewer words than the {candidates} announced"))
}

/// Writes a lexicon file word by word (see [`Lexicon::save`] for the format):
/// the header, the normalisation and stop list at once, then each word as
/// it comes, then the identity.
pub struct LexiconWriter<W: Write> {
    z: zstd::Encoder<'static, W>,
    hasher: Xxh3,
    left: u64,
}

impl<W: Write> LexiconWriter<W> {
    /// A lexicon of exactly `words` words after `stopwords`.
    pub fn new(
        mut out: W,
        norm: Normalization,
        stopwords: &[String],
        words: u64,
        fixed_ids: bool,
    ) -> std::io::Result<Self> {
        let mut head = [0u8; 16];
        head[0..8].copy_from_slice(LEXICON_MAGIC);
        head[8..10].copy_from_slice(&(if fixed_ids { 2u16 } else { 1 }).to_le_bytes());
        out.write_all(&head)?;
        let mut writer = LexiconWriter { z: lexicon_encoder(out)?, hasher: Xxh3::new(), left: words };
        let mut prefix = Vec::new();
        write_body(&mut prefix, norm, stopwords, std::iter::empty::<(&[u8], u64)>(), fixed_ids)?;
        // The empty word list's count (one zero byte) gives way to the real one.
        prefix.pop();
        write_varint(&mut prefix, words)?;
        writer.body(&prefix)?;
        Ok(writer)
    }

    fn body(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.z.write_all(bytes)
    }

    /// The next word, with its count.
    pub fn word(&mut self, bytes: &[u8], count: u64) -> std::io::Result<()> {
        if self.left == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "more words than announced"));
        }
        self.left -= 1;
        let mut buf = Vec::with_capacity(bytes.len() + 12);
        write_varint(&mut buf, bytes.len() as u64)?;
        buf.extend_from_slice(bytes);
        write_varint(&mut buf, count)?;
        self.body(&buf)
    }

    /// Ends the file; returns the output and the lexicon's identity.
    pub fn finish(self) -> std::io::Result<(W, u64)> {
        if self.left != 0 {
            return Err(short_of_words(self.left));
        }
        let mut out = self.z.finish()?;
        let identity = self.hasher.digest();
        out.write_all(&identity.to_le_bytes())?;
        Ok((out, identity))
    }
}

/// From the order a [`LexiconBuilder`] first saw its words to the IDs of
/// the lexicon it wrote, loaded with [`Scope::Repeated`]: what a pass that
/// kept first-seen IDs (see [`crate::stream`]) needs instead of a lookup table.
#[derive(Debug, Clone, Default)]
pub struct Renumbering {
    /// By first-seen ID: the word's ID, [`STOP`](Self::STOP) or [`BREAK`](Self::BREAK).
    pub ids: Vec<u32>,
    /// By first-seen ID: the word's [`word_hash`] (for sieve fingerprints).
    pub hashes: Vec<u64>,
}

impl Renumbering {
    /// A stop word: skipped, as if it were not there.
    pub const STOP: u32 = u32::MAX;
    /// A word seen once: no repeated n-gram holds it, so it breaks the n-gram window.
    pub const BREAK: u32 = u32::MAX - 1;

    /// For a table that handed out `first_seen` first-seen IDs, every one a
    /// stop word until [`assign`](Self::assign)ed (words on the stop list
    /// are never handed to [`Numbering`]).
    pub fn for_table(first_seen: usize) -> Self {
        Renumbering { ids: vec![Self::STOP; first_seen], hashes: vec![0; first_seen] }
    }

    /// Records what the word with this first-seen ID became.
    #[inline]
    pub fn assign(&mut self, first_seen: u32, code: u32, hash: u64) {
        self.ids[first_seen as usize] = code;
        self.hashes[first_seen as usize] = hash;
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 4 + self.hashes.capacity() * 8
    }
}

/// The result of looking a token up in a [`Lexicon`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A word with this ID.
    Id(u32),
    /// A stop word: skip it.
    Stop,
    /// Not in the (loaded part of the) lexicon. No n-gram that contains it
    /// can repeat, so it breaks the n-gram window like a document boundary.
    Unknown,
}

/// Which words to keep in memory when loading a lexicon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every word.
    All,
    /// Only words seen at least twice: the only ones a repeated n-gram can hold.
    Repeated,
}

const STOP_FLAG: u32 = 1 << 31;

/// A word (or stop word) in the lookup table: hash, first 16 bytes and
/// length inline, so most lookups are settled by one probe.
#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: u64,
    key: [u64; 2],
    len: u32,
    /// A word ID, or `STOP_FLAG | index` into the stop list.
    value: u32,
}

/// Words numbered by decreasing frequency, with their counts, the stop list
/// and the normalisation that produced them.
#[derive(Debug)]
pub struct Lexicon {
    norm: Normalization,
    stopwords: Vec<String>,
    arena: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` is the word with that ID in `arena`.
    offsets: Vec<u64>,
    counts: Vec<u64>,
    table: HashTable<Slot>,
    /// Words in the whole lexicon, loaded or not.
    total_words: u64,
    identity: u64,
    /// IDs fixed by an earlier lexicon and extended ([`Lexicon::updated`]),
    /// so no longer in decreasing order of count.
    fixed_ids: bool,
    /// The words in scope past those held ([`Lexicon::load_limited`]): for
    /// each ID where the count changes, that ID and the count (counts only
    /// fall, so this is as long as the distinct counts, not the words).
    tail: Vec<(u32, u64)>,
    /// Words in scope past those held.
    tail_len: u32,
    /// Where the look-up table's control bytes begin, for
    /// [`prefetch`](Self::prefetch) (see [`crate::table_hint`]); 0 while
    /// the table is empty or gone.
    control: usize,
}

/// Where a limited load ([`Lexicon::load_limited`]) hands the words it does not hold.
pub type SpillWord<'a> = dyn FnMut(u32, &[u8]) -> std::io::Result<()> + 'a;

impl Lexicon {
    fn from_parts<'a>(
        norm: Normalization,
        stopwords: Vec<String>,
        words: impl Iterator<Item = (&'a [u8], u64)>,
    ) -> Lexicon {
        let mut lex = Lexicon::empty(norm, stopwords);
        for (w, c) in words {
            lex.push_word(w, c);
        }
        lex.total_words = lex.counts.len() as u64;
        lex.identity = lex.compute_identity();
        let distinct = lex.build_table();
        debug_assert!(distinct, "a builder counts each word once");
        lex
    }

    fn empty(norm: Normalization, stopwords: Vec<String>) -> Lexicon {
        Lexicon {
            norm,
            stopwords,
            arena: Vec::new(),
            offsets: vec![0],
            counts: Vec::new(),
            table: HashTable::new(),
            total_words: 0,
            identity: 0,
            fixed_ids: false,
            tail: Vec::new(),
            tail_len: 0,
            control: 0,
        }
    }

    fn push_word(&mut self, word: &[u8], count: u64) {
        self.arena.extend_from_slice(word);
        self.offsets.push(self.arena.len() as u64);
        self.counts.push(count);
    }

    /// Builds the lookup table; false if a word came twice (a damaged
    /// file: two IDs for one word would split its n-grams' counts).
    fn build_table(&mut self) -> bool {
        let mut table = HashTable::with_capacity(self.counts.len() + self.stopwords.len());
        let mut distinct = true;
        for id in 0..self.counts.len() as u32 {
            let bytes = self.word_bytes(id);
            let slot = Slot { hash: word_hash(bytes), key: long_key(bytes), len: bytes.len() as u32, value: id };
            if table.find(slot.hash, |s: &Slot| s.hash == slot.hash && self.word_bytes(s.value) == bytes).is_some() {
                distinct = false;
                continue;
            }
            table.insert_unique(slot.hash, slot, |s| s.hash);
        }
        self.table = table;
        for i in 0..self.stopwords.len() {
            let bytes = self.stopwords[i].as_bytes();
            let hash = word_hash(bytes);
            if self.find(hash, bytes).is_none() {
                let slot = Slot { hash, key: long_key(bytes), len: bytes.len() as u32, value: STOP_FLAG | i as u32 };
                self.table.insert_unique(hash, slot, |s| s.hash);
            }
        }
        self.control = table_hint::control_address(&self.table).unwrap_or(0);
        distinct
    }

    fn slot_bytes(&self, value: u32) -> &[u8] {
        if value & STOP_FLAG != 0 {
            self.stopwords[(value & !STOP_FLAG) as usize].as_bytes()
        } else {
            self.word_bytes(value)
        }
    }

    #[inline]
    fn find(&self, hash: u64, bytes: &[u8]) -> Option<u32> {
        let key = long_key(bytes);
        self.table
            .find(hash, |s| {
                s.hash == hash
                    && s.key == key
                    && s.len as usize == bytes.len()
                    && (bytes.len() <= 16 || self.slot_bytes(s.value) == bytes)
            })
            .map(|s| s.value)
    }

    /// Starts loading the table's lines a [`lookup_hashed`](Self::lookup_hashed)
    /// of a word of this hash will read first, for a look-up some words
    /// later (see [`crate::table_hint`]): a lexicon of a few hundred
    /// thousand words already outgrows the processor's caches.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if self.control != 0 {
            table_hint::prefetch_slot::<Slot>(self.control, self.table.num_buckets(), hash);
        }
    }

    /// Looks a normalised token up.
    #[inline]
    pub fn lookup(&self, word: &str) -> Lookup {
        self.lookup_hashed(word, word_hash(word.as_bytes()))
    }

    /// [`lookup`](Self::lookup) with the word's [`word_hash`] already known.
    #[inline]
    pub fn lookup_hashed(&self, word: &str, hash: u64) -> Lookup {
        match self.find(hash, word.as_bytes()) {
            None => Lookup::Unknown,
            Some(v) if v & STOP_FLAG != 0 => Lookup::Stop,
            Some(id) => Lookup::Id(id),
        }
    }

    /// Words in scope: IDs are `0..len()`. All of them are held in memory
    /// unless the lexicon was loaded limited ([`held`](Self::held)).
    pub fn len(&self) -> usize {
        self.counts.len() + self.tail_len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Words held in memory, IDs `0..held()`: only these have
    /// [`word_bytes`](Self::word_bytes) (and are looked up).
    pub fn held(&self) -> usize {
        self.counts.len()
    }

    /// Words in the lexicon file, including those not loaded.
    pub fn total_words(&self) -> u64 {
        self.total_words
    }

    /// Number of words seen at least twice. They hold the lowest IDs.
    pub fn repeated_len(&self) -> usize {
        if self.fixed_ids {
            self.counts.iter().filter(|&&c| c >= 2).count()
        } else if self.tail_len == 0 {
            self.counts.partition_point(|&c| c >= 2)
        } else {
            let first_once = self.tail.iter().find(|&&(_, c)| c < 2).map_or(self.len(), |&(id, _)| id as usize);
            first_once.max(self.counts.partition_point(|&c| c >= 2))
        }
    }

    /// Whether IDs were fixed by an earlier lexicon ([`updated`](Self::updated)).
    pub fn has_fixed_ids(&self) -> bool {
        self.fixed_ids
    }

    /// This lexicon with the words counted in `more` added, for adding text
    /// to a corpus without renumbering it: known words keep their IDs and
    /// their counts grow; new words get the next IDs, numbered among
    /// themselves by decreasing count (ties by bytes). Stop words stay as
    /// they are. `None` unless every word is loaded ([`Scope::All`]): a
    /// word left out would come back as a new one.
    pub fn updated(&self, more: &LexiconBuilder) -> Option<Lexicon> {
        if self.counts.len() as u64 != self.total_words {
            return None;
        }
        let mut counts = self.counts.clone();
        let mut new: Vec<(&[u8], u64)> = Vec::new();
        for e in more.table.iter().filter(|e| !e.stop()) {
            let bytes = e.bytes(&more.arena);
            match self.find(e.hash, bytes) {
                Some(v) if v & STOP_FLAG == 0 => counts[v as usize] += e.count(),
                Some(_) => {}
                None => new.push((bytes, e.count())),
            }
        }
        new.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut lex = Lexicon::empty(self.norm, self.stopwords.clone());
        for id in 0..self.counts.len() as u32 {
            lex.push_word(self.word_bytes(id), counts[id as usize]);
        }
        for (word, count) in new {
            lex.push_word(word, count);
        }
        lex.total_words = lex.counts.len() as u64;
        lex.fixed_ids = true;
        lex.identity = lex.compute_identity();
        let distinct = lex.build_table();
        debug_assert!(distinct, "new words are those the lexicon does not know");
        Some(lex)
    }

    pub fn word_bytes(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.arena[self.offsets[id] as usize..self.offsets[id + 1] as usize]
    }

    /// The word with this ID.
    pub fn word(&self, id: u32) -> &str {
        // Words come from `&str` tokens or a checked file, so they are UTF-8.
        std::str::from_utf8(self.word_bytes(id)).unwrap_or("\u{fffd}")
    }

    /// The IDs of `ids` (within `0..len()`) as runs of equal counts:
    /// `(first ID, words, count)`, held words one by one, the others by the
    /// runs they are kept as.
    pub fn count_runs(&self, ids: std::ops::Range<u32>) -> Vec<(u32, u32, u64)> {
        let end = ids.end.min(self.len() as u32);
        let mut runs = Vec::new();
        let held = self.counts.len() as u32;
        for id in ids.start..end.min(held) {
            runs.push((id, 1, self.counts[id as usize]));
        }
        let start = ids.start.max(held);
        if start < end {
            let first = self.tail.partition_point(|&(f, _)| f <= start).saturating_sub(1);
            for (i, &(f, count)) in self.tail.iter().enumerate().skip(first) {
                let next = self.tail.get(i + 1).map_or(self.len() as u32, |&(n, _)| n);
                let (a, b) = (f.max(start), next.min(end));
                if a >= end {
                    break;
                }
                if a < b {
                    runs.push((a, b - a, count));
                }
            }
        }
        runs
    }

    pub fn count(&self, id: u32) -> u64 {
        match self.counts.get(id as usize) {
            Some(&c) => c,
            None => {
                let at = self.tail.partition_point(|&(first, _)| first <= id);
                self.tail[at.checked_sub(1).expect("an ID below len()")].1
            }
        }
    }

    pub fn normalization(&self) -> Normalization {
        self.norm
    }

    pub fn stopwords(&self) -> &[String] {
        &self.stopwords
    }

    /// A hash of the whole lexicon (normalisation, stop list, words, counts):
    /// runs and duplicate lists record it so they are only used with the lexicon that made them.
    pub fn identity(&self) -> u64 {
        self.identity
    }

    /// Drops the lookup table, keeping words and counts: for a pass that
    /// maps word IDs it already has ([`Renumbering`]) and only needs the
    /// words back for output. Every lookup afterwards says [`Lookup::Unknown`].
    pub fn drop_lookup(&mut self) {
        self.table = HashTable::new();
        self.control = 0;
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity()
            + (self.offsets.capacity() + self.counts.capacity()) * 8
            + self.table.capacity() * (std::mem::size_of::<Slot>() + 1)
            + self.stopwords.iter().map(|s| s.capacity() + 24).sum::<usize>()
            + self.tail.capacity() * 16
    }

    fn compute_identity(&self) -> u64 {
        debug_assert_eq!(self.tail_len, 0, "a limited lexicon keeps the identity it was loaded with");
        let mut h = Xxh3::new();
        self.write_body(&mut HashWriter(&mut h)).expect("hashing cannot fail");
        h.digest()
    }
}

struct HashWriter<'a>(&'a mut Xxh3);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// File format
// ---------------------------------------------------------------------------

/// The largest zstd window (2^this bytes) a lexicon file may ask for:
/// twice what the writer's level 3 uses.
const WINDOW_LOG_MAX: u32 = 22;

/// First eight bytes of a lexicon file.
pub const LEXICON_MAGIC: &[u8; 8] = b"DGLEX\0\r\n";
/// The newest lexicon format this build writes and reads: version 1 holds
/// words in decreasing order of count; version 2 adds a byte to the body
/// saying the IDs were fixed by an earlier lexicon (so need not be).
pub const LEXICON_VERSION: u16 = 2;

/// Errors reading or writing a lexicon file; each names the file.
///
/// An I/O error is part of the message, not a [`std::error::Error::source`]:
/// whoever prints the chain of causes would otherwise say it twice.
#[derive(Debug, thiserror::Error)]
pub enum LexiconError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}: not a dupgram lexicon")]
    BadMagic { path: PathBuf },
    #[error("{path}: lexicon format version {found}; this build reads versions 1 to {LEXICON_VERSION}")]
    Version { path: PathBuf, found: u16 },
    #[error("{path}: corrupt lexicon: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// Writes a lexicon file at `path` through a temporary name in the same
/// directory, renamed when complete; returns the identity (hash of the body).
fn save_file(
    path: &Path,
    version: u16,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64, LexiconError> {
    let io = |e| LexiconError::Io { path: path.to_owned(), error: e };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir).map_err(io)?;
    let mut out = BufWriter::new(tmp.as_file());
    let identity = write_file(&mut out, version, body).map_err(io)?;
    out.flush().map_err(io)?;
    drop(out);
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(identity)
}

/// Header, zstd-compressed body, identity; returns the identity.
fn write_file(
    out: &mut dyn Write,
    version: u16,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut head = [0u8; 16];
    head[0..8].copy_from_slice(LEXICON_MAGIC);
    head[8..10].copy_from_slice(&version.to_le_bytes());
    out.write_all(&head)?;
    let mut hasher = Xxh3::new();
    let mut z = lexicon_encoder(&mut *out)?;
    body(&mut Tee { out: &mut z, hasher: &mut hasher })?;
    z.finish()?;
    let identity = hasher.digest();
    out.write_all(&identity.to_le_bytes())?;
    Ok(identity)
}

/// The zstd window of a lexicon file: every pass after the lexicon pass
/// reads the file back, and a reader holds the writer's window (2 MiB at
/// level 3 by default) while it reads: at the smallest budgets that was
/// room the plan had given to the job.
pub(crate) const LEXICON_WINDOW_LOG: u32 = 17;

/// The compressor of a lexicon file's body: level 3 within [`LEXICON_WINDOW_LOG`].
fn lexicon_encoder<W: Write>(out: W) -> std::io::Result<zstd::Encoder<'static, W>> {
    let mut z = zstd::Encoder::new(out, 3)?;
    z.window_log(LEXICON_WINDOW_LOG)?;
    Ok(z)
}

/// Writes to `out` and hashes what it writes.
struct Tee<'a> {
    out: &'a mut dyn Write,
    hasher: &'a mut Xxh3,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn write_body<'a>(
    out: &mut dyn Write,
    norm: Normalization,
    stopwords: &[String],
    words: impl ExactSizeIterator<Item = (&'a [u8], u64)>,
    fixed_ids: bool,
) -> std::io::Result<()> {
    let mode = match norm.mode {
        TokenMode::Words => 0u8,
        TokenMode::Raw => 1,
        TokenMode::Lines => 2,
    };
    out.write_all(&[mode, u8::from(norm.numbers_as_token), u8::from(norm.strip_markup)])?;
    if fixed_ids {
        out.write_all(&[1])?;
    }
    write_varint(out, stopwords.len() as u64)?;
    for s in stopwords {
        write_varint(out, s.len() as u64)?;
        out.write_all(s.as_bytes())?;
    }
    write_varint(out, words.len() as u64)?;
    for (w, count) in words {
        write_varint(out, w.len() as u64)?;
        out.write_all(w)?;
        write_varint(out, count)?;
    }
    Ok(())
}

impl Lexicon {
    /// Writes the lexicon to `path` (through a temporary name, renamed when complete).
    ///
    /// ```text
    /// magic "DGLEX\0\r\n" | version u16 LE | 0 u16 | 0 u32
    /// zstd frame of the body (written within a 128 KiB window; any window is read):
    ///   mode u8 (0 words, 1 raw, 2 lines) | numbers_as_token u8 | strip_markup u8
    ///   version 2 only: fixed_ids u8 (1: IDs kept from an earlier lexicon, counts in no order)
    ///   stop words: varint count, then (varint length, bytes) each
    ///   words:      varint count, then (varint length, bytes, varint count) each, by ID
    /// identity u64 LE: XXH3-64 of the body, checked on load
    /// ```
    pub fn save(&self, path: &Path) -> Result<(), LexiconError> {
        save_file(path, self.version(), |out| self.write_body(out)).map(|_| ())
    }

    /// Writes the lexicon file to `out`.
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write_file(out, self.version(), |body| self.write_body(body)).map(drop)
    }

    /// Frequency-ordered lexicons keep version 1, so their files stay what they were.
    fn version(&self) -> u16 {
        if self.fixed_ids { 2 } else { 1 }
    }

    fn write_body(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let words = (0..self.counts.len() as u32).map(|id| (self.word_bytes(id), self.counts[id as usize]));
        write_body(out, self.norm, &self.stopwords, words, self.fixed_ids)
    }

    /// Reads a lexicon, keeping the words `scope` asks for in memory. The
    /// whole file is always read, so its checksum is always verified.
    pub fn load(path: &Path, scope: Scope) -> Result<Lexicon, LexiconError> {
        Self::load_with(path, scope, None)
    }

    /// [`load`](Self::load), holding only the lowest IDs whose words fit
    /// in `bytes` (words, offsets and counts), and handing each word past
    /// them to `spill` with its ID; its counts are kept as runs, which are
    /// as many as the distinct counts. Such a lexicon looks nothing up.
    /// Only for lexicons in decreasing order of count (not [updated](Self::updated) ones).
    pub fn load_limited(
        path: &Path,
        scope: Scope,
        bytes: u64,
        spill: &mut SpillWord<'_>,
    ) -> Result<Lexicon, LexiconError> {
        Self::load_with(path, scope, Some((bytes, spill)))
    }

    fn load_with(path: &Path, scope: Scope, limit: Option<(u64, &mut SpillWord<'_>)>) -> Result<Lexicon, LexiconError> {
        let corrupt = |what: &str| LexiconError::Corrupt { path: path.to_owned(), what: what.to_owned() };
        let io = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                corrupt("truncated")
            } else {
                LexiconError::Io { path: path.to_owned(), error: e }
            }
        };
        let mut file = BufReader::new(File::open(path).map_err(io)?);
        let mut head = [0u8; 16];
        file.read_exact(&mut head).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => LexiconError::BadMagic { path: path.to_owned() },
            _ => io(e),
        })?;
        if &head[0..8] != LEXICON_MAGIC {
            return Err(LexiconError::BadMagic { path: path.to_owned() });
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if !(1..=LEXICON_VERSION).contains(&version) {
            return Err(LexiconError::Version { path: path.to_owned(), found: version });
        }
        let mut z = zstd::Decoder::with_buffer(file).map_err(io)?.single_frame();
        // The writer's level-3 frames ask for at most a 2 MiB window; a
        // damaged header asking for more must not make the decoder take it.
        z.window_log_max(WINDOW_LOG_MAX).map_err(io)?;
        let mut hasher = Xxh3::new();
        let mut body = HashingReader { inner: &mut z, hasher: &mut hasher };
        // The decoder's own errors (a damaged frame) come as I/O errors without an OS error code.
        let from_body = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::InvalidData => corrupt(&e.to_string()),
            std::io::ErrorKind::Other if e.raw_os_error().is_none() => corrupt(&zstd_damage(&e)),
            _ => io(e),
        };
        let limited = limit.is_some();
        let lex = read_body(&mut body, scope, version, limit).map_err(from_body)?;
        let mut rest = [0u8; 1];
        if body.read(&mut rest).map_err(from_body)? != 0 {
            return Err(corrupt("trailing bytes in body"));
        }
        let digest = hasher.digest();
        let mut file = z.finish();
        let mut tail = [0u8; 8];
        file.read_exact(&mut tail).map_err(io)?;
        let identity = u64::from_le_bytes(tail);
        if identity != digest {
            return Err(corrupt("checksum mismatch"));
        }
        let mut lex = lex;
        lex.identity = identity;
        if limited {
            if lex.fixed_ids {
                return Err(corrupt("a lexicon with fixed IDs cannot be loaded in part"));
            }
            return Ok(lex);
        }
        if !lex.build_table() {
            return Err(corrupt("a word appears twice"));
        }
        Ok(lex)
    }
}

/// What a zstd decoder's error says of the file, in the lexicon's words.
fn zstd_damage(e: &std::io::Error) -> String {
    let said = e.to_string();
    if said.contains("too much memory") {
        // The window the frame asks for is past WINDOW_LOG_MAX: no lexicon writer made it.
        return format!(
            "zstd window larger than the {} KiB a lexicon may use ({said})",
            (1u64 << WINDOW_LOG_MAX) >> 10
        );
    }
    format!("zstd frame: {said}")
}

fn read_body(
    r: &mut impl Read,
    scope: Scope,
    version: u16,
    mut limit: Option<(u64, &mut SpillWord<'_>)>,
) -> std::io::Result<Lexicon> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut flags = [0u8; 3];
    r.read_exact(&mut flags)?;
    let mode = match flags[0] {
        0 => TokenMode::Words,
        1 => TokenMode::Raw,
        2 => TokenMode::Lines,
        _ => return Err(bad("unknown token mode")),
    };
    let norm = Normalization { mode, numbers_as_token: flags[1] == 1, strip_markup: flags[2] == 1 };
    let mut fixed_ids = [0u8];
    if version >= 2 {
        r.read_exact(&mut fixed_ids)?;
    }
    let fixed_ids = fixed_ids[0] == 1;
    let stop_count = read_varint(r)?;
    let mut stopwords = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..stop_count {
        read_string(r, &mut buf)?;
        stopwords.push(String::from_utf8(buf.clone()).map_err(|_| bad("stop word is not UTF-8"))?);
    }
    let words = read_varint(r)?;
    let mut lex = Lexicon::empty(norm, stopwords);
    lex.total_words = words;
    lex.fixed_ids = fixed_ids;
    // IDs fixed by an earlier lexicon: every word is kept, since leaving out
    // the rare ones would renumber the rest.
    let scope = if fixed_ids { Scope::All } else { scope };
    let mut last_count = u64::MAX;
    for _ in 0..words {
        read_string(r, &mut buf)?;
        let count = read_varint(r)?;
        if (count > last_count && !fixed_ids) || count == 0 {
            return Err(bad("words are not in decreasing frequency order"));
        }
        last_count = count;
        if scope == Scope::Repeated && count < 2 {
            continue;
        }
        std::str::from_utf8(&buf).map_err(|_| bad("word is not UTF-8"))?;
        if let Some((bytes, spill)) = limit.as_mut() {
            let held = lex.arena.len() + buf.len() + 16 * (lex.counts.len() + 1);
            if lex.tail_len > 0 || held as u64 > *bytes {
                let id = u32::try_from(lex.len()).map_err(|_| bad("over 4 billion words"))?;
                if lex.tail.last().is_none_or(|&(_, c)| c != count) {
                    lex.tail.push((id, count));
                }
                lex.tail_len += 1;
                spill(id, &buf)?;
                continue;
            }
        }
        lex.push_word(&buf, count);
    }
    Ok(lex)
}

struct HashingReader<'a, R: Read> {
    inner: &'a mut R,
    hasher: &'a mut Xxh3,
}

impl<R: Read> Read for HashingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Writes `v` as a LEB128 varint: seven bits a byte, low bits first, the
/// top bit set on every byte but the last (1 to 10 bytes).
pub fn write_varint(out: &mut dyn Write, mut v: u64) -> std::io::Result<()> {
    let mut buf = [0u8; 10];
    let mut i = 0;
    while v >= 0x80 {
        buf[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    buf[i] = v as u8;
    out.write_all(&buf[..=i])
}

/// Reads a varint [`write_varint`] wrote; `InvalidData` past ten bytes.
pub fn read_varint(r: &mut impl Read) -> std::io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] < 0x80 {
            return Ok(v);
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "varint too long"))
}

fn read_string(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let len = read_varint(r)?;
    if len > 1 << 20 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "implausible word length"));
    }
    buf.resize(len as usize, 0);
    r.read_exact(buf)
}

/// Words by ID, for writing n-grams out: a whole lexicon, or one held in
/// part beside the words a batch needs, read from disk (see `dupgram-vocab`).
pub trait WordsById {
    /// The bytes of the word with this ID.
    fn word_bytes(&self, id: u32) -> &[u8];

    /// Asks for the memory a look-up of this ID will touch, some look-ups
    /// ahead: `near` false for where the word is (its offset), true for its
    /// bytes (once the offset has had time to arrive). A writer of millions
    /// of lines looks up words of random IDs in tables far larger than the
    /// cache; the hint lets those misses overlap. Changes no result.
    fn prefetch_word(&self, _id: u32, _near: bool) {}

    /// The word with this ID.
    fn word(&self, id: u32) -> &str {
        // Words come from `&str` tokens or a checked file, so they are UTF-8.
        std::str::from_utf8(self.word_bytes(id)).unwrap_or("\u{fffd}")
    }
}

impl WordsById for Lexicon {
    fn word_bytes(&self, id: u32) -> &[u8] {
        Lexicon::word_bytes(self, id)
    }

    fn prefetch_word(&self, id: u32, near: bool) {
        let Some(&start) = self.offsets.get(id as usize) else { return };
        if !near {
            dupgram_prefetch::prefetch(&start);
        } else if let Some(first) = self.arena.get(start as usize) {
            dupgram_prefetch::prefetch(first);
        }
    }
}
