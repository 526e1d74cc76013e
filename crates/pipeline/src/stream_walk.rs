//! Walking the word streams: the n-gram keys (and sieve fingerprints) of a
//! corpus read back from the first-seen IDs its lexicon pass wrote (see
//! [`crate::words`]), as [`crate::scan::Scanner`] gives them from text.
//!
//! Shared by the passes after a lexicon pass that kept word streams: the
//! count of `ngrams` and the index pass of `pairs` and `dedup`, each of them
//! possibly in parts by first word, each part's sieve filled here first.

use dupgram_chunker::KeyLayout;
use dupgram_lexicon::stream::{END_OF_DOCUMENT, EPOCH_END, FIRST_WORD, OVERFLOW, SLOT};
use dupgram_lexicon::{Lexicon, Renumbering};
use dupgram_sieve::{RollingFingerprint, Sieve, key_fingerprint};
use dupgram_vocab::{OverflowWord, SideFile, SideReader, VocabError, place};

use crate::first_words::{FillSieve, FirstWords, KeyRange};
use crate::scan::ScanSink;
use crate::words::{READ_BYTES, WordsFile, WordsOut, each_stream, read_words};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;

/// How to read the word streams.
pub(crate) struct Streamed {
    pub renumbering: Renumbering,
    /// The streams' word codes are below this plus [`FIRST_WORD`].
    pub vocabulary: u32,
    /// Each stream's side file (by stream number): what its overflow tokens are.
    pub sides: Vec<Option<SideFile>>,
    /// The streams hold final IDs ([`renumber_streams`]): no renumbering,
    /// no side files, and [`OVERFLOW`] marks a word seen once.
    pub final_ids: bool,
    /// For the streams of one shard of a corpus read in shards (a staged
    /// job's), each with a table of its own: the number of the shard's
    /// first stream among all shards'. Words are then named by their IDs,
    /// not by first-seen IDs of one table, so the documents of different
    /// shards hash alike ([`crate::scan::ScanSink::word`]).
    pub shard_streams: Option<usize>,
}

impl Streamed {
    /// What a pass over `streams` word streams holds beside the lexicon and
    /// the sieve: the renumbering and a reader per stream (and its side file's).
    pub fn beside(&self, streams: usize) -> u64 {
        let sides: u64 = self.sides.iter().flatten().map(SideFile::reader_bytes).max().unwrap_or(0);
        self.renumbering.heap_bytes() as u64 + streams as u64 * (READ_BYTES + sides)
    }

    /// Removes stream `stream`'s side file, read for the last time.
    pub fn remove_side(&self, stream: usize) {
        if let Some(side) = self.sides.get(stream).and_then(Option::as_ref) {
            let _ = std::fs::remove_file(&side.path);
        }
    }

    /// Removes every stream's side file, read for the last time.
    pub fn remove_sides(&self) {
        (0..self.sides.len()).for_each(|stream| self.remove_side(stream));
    }

    /// A walk over stream `stream`, reading its side file beside it.
    pub fn walk<const L: usize>(
        &self,
        layout: KeyLayout,
        stream: usize,
        fingerprints: bool,
    ) -> Result<IdWalk<'_, L>, PipelineError> {
        let side = if self.final_ids { None } else { self.sides.get(stream).and_then(Option::as_ref) };
        let side = SideReader::open(side)?;
        let tokens = TokenReader {
            renumbering: &self.renumbering,
            side,
            stream: self.shard_streams.unwrap_or(0) + stream,
            overflow: 0,
            final_ids: self.final_ids,
            by_id: self.shard_streams.is_some(),
            failure: None,
        };
        Ok(IdWalk::new(layout, tokens, fingerprints))
    }
}

/// Rewrites the word streams with their words' final IDs, reading each
/// stream (and its side file) for the last time: stop words dropped, words
/// seen once as one code, every other token its ID. Worth its one pass when
/// the streams are read again and again (a count or an index in parts): a
/// pass over them then looks nothing up — no renumbering, no side file —
/// and their codes are shorter, the most frequent words having the lowest IDs.
/// Sieve fingerprints of such streams are made of the n-gram's key
/// ([`key_fingerprint`]): a walk over them knows IDs, not word hashes.
pub(crate) fn renumber_streams(
    streams: &[WordsFile],
    streamed: &Streamed,
    words: u32,
    work: &std::path::Path,
    control: &Control,
) -> Result<(Vec<WordsFile>, Streamed), PipelineError> {
    control.start_pass("renumbering", Some(streams.iter().map(|f| f.bytes).sum()));
    let files = each_stream(streams, |stream, file, abort| {
        let side = SideReader::open(streamed.sides.get(stream).and_then(Option::as_ref))?;
        let mut tokens = TokenReader {
            renumbering: &streamed.renumbering,
            side,
            stream,
            overflow: 0,
            final_ids: false,
            by_id: false,
            failure: None,
        };
        let mut out = WordsOut::create_named(work, &format!("final-w{stream}"))?;
        let mut codes = Vec::with_capacity(64 << 10);
        read_words(file, streamed.vocabulary, true, control, abort, |frame| {
            codes.clear();
            for &code in frame {
                codes.push(match tokens.token(code) {
                    Token::End => END_OF_DOCUMENT,
                    Token::Skip => continue,
                    Token::Break(_) => OVERFLOW,
                    Token::Word(id, _, _) => id + FIRST_WORD,
                });
            }
            tokens.check()?;
            out.codes(&codes)
        })?;
        tokens.finish()?;
        // The rewritten stream holds the final IDs its side file gave.
        streamed.remove_side(stream);
        out.finish()
    })?;
    let streamed = Streamed {
        renumbering: Renumbering::default(),
        vocabulary: words,
        sides: Vec::new(),
        final_ids: true,
        shard_streams: None,
    };
    Ok((files, streamed))
}

/// What a pass over the word streams reads and how it keys n-grams.
#[derive(Clone, Copy)]
pub(crate) struct StreamJob<'a> {
    pub streams: &'a [WordsFile],
    pub lexicon: &'a Lexicon,
    pub streamed: &'a Streamed,
    pub layout: KeyLayout,
}

/// "counting", or "counting 2/3" when there are parts.
pub(crate) fn phase_of(what: &str, (part, parts): (usize, usize)) -> String {
    if parts > 1 { format!("{what} {part}/{parts}") } else { what.to_owned() }
}

/// Fills `sieve` with the fingerprints of the n-grams in `range`, read from
/// the word streams (`codes`: the stream codes in all, for the progress bar),
/// then freezes it ([`Sieve::freeze`]): what reads it next only asks "2 or more?".
pub(crate) fn fill_sieve<const L: usize>(
    job: &StreamJob,
    sieve: &mut Sieve,
    range: KeyRange<L>,
    label: (usize, usize),
    codes: u64,
    control: &Control,
) -> Result<(), PipelineError> {
    let StreamJob { streams, streamed, layout, lexicon } = *job;
    control.start_pass(&phase_of("sieve", label), Some(codes));
    let filling = &*sieve;
    let (part, share) = (range.first_words(), range.first_words().share(lexicon));
    each_stream(streams, |stream, file, abort| {
        let mut fill = FillSieve::new(filling, range);
        let mut walk = streamed.walk::<L>(layout, stream, true)?;
        walk.keep_only(part, share);
        read_words(file, streamed.vocabulary, false, control, abort, |codes| {
            walk.codes(codes, &mut fill);
            fill.flush();
            walk.check()
        })?;
        walk.finish()
    })?;
    sieve.freeze();
    Ok(())
}

/// What one stream code is.
#[derive(Debug, Clone, Copy)]
enum Token {
    /// The end of a document.
    End,
    /// A stop word: as if it were not there.
    Skip,
    /// A word no repeated n-gram holds, named by a number no other word has.
    Break(u64),
    /// A word: its ID, the hash its sieve fingerprints are made of, a number naming it.
    Word(u32, u64, u64),
}

/// A word's identity as [`ScanSink::word`] hears it: a first-seen ID
/// (below 2³²), an ID above [`OVERFLOW_WORD`], or, for a word seen once
/// met in the overflow or in final-ID streams, a number no other token has.
const OVERFLOW_WORD: u64 = 1 << 32;
const OVERFLOW_ONCE: u64 = 1 << 63;

/// Turns a stream's codes into tokens: first-seen IDs through the
/// renumbering, overflow tokens through the stream's side file; or the
/// final IDs of a renumbered stream as they are.
struct TokenReader<'a> {
    renumbering: &'a Renumbering,
    side: SideReader,
    /// This stream's number, which makes its words seen once named apart from every other's.
    stream: usize,
    /// Overflow (or, in final-ID streams, seen-once) tokens met so far.
    overflow: u64,
    final_ids: bool,
    /// Name the table's words by their IDs (and words seen once by numbers
    /// of their own) rather than by first-seen IDs: see [`Streamed::shard_streams`].
    by_id: bool,
    failure: Option<VocabError>,
}

impl TokenReader<'_> {
    /// The number naming the next word seen once of this stream.
    #[inline]
    fn next_once(&mut self) -> u64 {
        self.overflow += 1;
        OVERFLOW_ONCE | place(self.stream, self.overflow)
    }

    #[inline]
    fn token(&mut self, code: u32) -> Token {
        match code {
            END_OF_DOCUMENT => Token::End,
            OVERFLOW => {
                let once = self.next_once();
                if !self.final_ids {
                    // A lexicon pass writes every word past its table by its slot.
                    self.failure.get_or_insert(VocabError::Inconsistent("an overflow token without a slot".into()));
                }
                Token::Break(once)
            }
            _ if code >= SLOT => self.overflow_token(code),
            // Final-ID walks fingerprint keys, not word hashes (see `IdWalk::final_token`).
            _ if self.final_ids => {
                let id = code - FIRST_WORD;
                Token::Word(id, 0, OVERFLOW_WORD + u64::from(id))
            }
            _ => {
                let first_seen = (code - FIRST_WORD) as usize;
                // The reader checked every code against the vocabulary, which the renumbering spans.
                match self.renumbering.ids[first_seen] {
                    Renumbering::STOP => Token::Skip,
                    Renumbering::BREAK if self.by_id => Token::Break(self.next_once()),
                    Renumbering::BREAK => Token::Break(first_seen as u64),
                    id if self.by_id => {
                        Token::Word(id, self.renumbering.hashes[first_seen], OVERFLOW_WORD + u64::from(id))
                    }
                    id => Token::Word(id, self.renumbering.hashes[first_seen], first_seen as u64),
                }
            }
        }
    }

    /// A word past the table by its slot ([`SLOT`]), or the end of an epoch
    /// of slots ([`EPOCH_END`]), which is no token: what the side file says.
    fn overflow_token(&mut self, code: u32) -> Token {
        if self.final_ids {
            self.failure.get_or_insert(VocabError::Inconsistent("a slot in a stream of final IDs".into()));
            return Token::Skip;
        }
        if code & EPOCH_END == EPOCH_END {
            if let Err(e) = self.side.end_epoch(code & !EPOCH_END) {
                self.failure.get_or_insert(e);
            }
            return Token::Skip;
        }
        let once = self.next_once();
        match self.side.slot(code & !SLOT) {
            Ok(OverflowWord::Stop) => Token::Skip,
            Ok(OverflowWord::Break) => Token::Break(once),
            Ok(OverflowWord::Id(id, hash)) => Token::Word(id, hash, OVERFLOW_WORD + u64::from(id)),
            Err(e) => {
                // Remembered for `check`; the token breaks the window meanwhile.
                self.failure.get_or_insert(e);
                Token::Break(once)
            }
        }
    }

    /// The side file's error, if reading it failed.
    fn check(&mut self) -> Result<(), PipelineError> {
        match self.failure.take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Checks, at the end of the stream, that its side file was read whole.
    fn finish(mut self) -> Result<(), PipelineError> {
        self.check()?;
        Ok(self.side.finish()?)
    }
}

/// Rolls n-gram keys (and sieve fingerprints) over stream codes, as
/// [`crate::scan::Scanner`] does over text: stop words are skipped, words
/// seen once break the window, a document end resets it. The sink also
/// hears of every word's identity ([`ScanSink::word`]) and of each
/// document's end ([`ScanSink::document_end`]).
pub(crate) struct IdWalk<'a, const L: usize> {
    tokens: TokenReader<'a>,
    layout: KeyLayout,
    window: dupgram_chunker::KeyWindow<L>,
    roll: Option<RollingFingerprint>,
    /// Set for a pass that keeps one part's n-grams of final-ID streams.
    part: Option<PartWindow>,
    n: u64,
    /// Tokens of the current document so far, stop words excluded.
    doc_tokens: u64,
    /// N-gram positions of the documents ended so far.
    pub ngrams: u64,
}

impl<'a, const L: usize> IdWalk<'a, L> {
    fn new(layout: KeyLayout, tokens: TokenReader<'a>, fingerprints: bool) -> Self {
        IdWalk {
            tokens,
            layout,
            window: dupgram_chunker::KeyWindow::new(layout),
            roll: fingerprints.then(|| RollingFingerprint::new(layout.n())),
            part: None,
            n: layout.n() as u64,
            doc_tokens: 0,
            ngrams: 0,
        }
    }

    /// Hands the sink only the n-grams whose first word is in `part`, which
    /// starts `share` of all n-grams (the sink still hears of every document
    /// end, and of every word if it asks). Over final-ID streams, when the
    /// part is a small share, the walk then keys and fingerprints those
    /// n-grams only instead of rolling every window: a count in many parts
    /// reads the streams once a part, and most of what a pass reads is not
    /// its part's.
    pub fn keep_only(&mut self, part: FirstWords, share: f64) {
        let small = share <= PART_WALK_SHARE && self.layout.n() <= MAX_PART_N;
        if self.tokens.final_ids && part != FirstWords::ALL && small {
            self.part = Some(PartWindow::new(part, self.layout.n()));
        }
    }

    #[inline]
    pub fn codes(&mut self, codes: &[u32], sink: &mut impl ScanSink<L>) {
        if self.part.is_some() {
            self.part_codes(codes, sink);
            return;
        }
        if self.tokens.final_ids {
            // Final IDs: nothing to look up, so the loop stays small.
            for &code in codes {
                match code {
                    END_OF_DOCUMENT => self.end(sink),
                    OVERFLOW => {
                        let once = self.tokens.next_once();
                        self.token(Renumbering::BREAK, 0, once, sink);
                    }
                    _ => self.final_token(code - FIRST_WORD, sink),
                }
            }
            return;
        }
        for &code in codes {
            match self.tokens.token(code) {
                Token::End => self.end(sink),
                Token::Skip => {}
                Token::Break(identity) => self.token(Renumbering::BREAK, 0, identity, sink),
                Token::Word(id, hash, identity) => self.token(id, hash, identity, sink),
            }
        }
    }

    /// [`codes`](Self::codes) of final-ID streams for a walk that keeps one
    /// part: each code is looked at once, as the last word of the n-gram it
    /// may complete, whose first word is `n − 1` codes back in the buffer.
    fn part_codes(&mut self, codes: &[u32], sink: &mut impl ScanSink<L>) {
        let Some(part) = self.part.as_mut() else { return };
        let n = self.n as usize;
        let words = sink.wants_words();
        let carried = part.buf.len();
        part.buf.extend_from_slice(codes);
        let (mut doc_start, mut last_break) = (part.doc_start, part.last_break);
        let buf = &part.buf;
        for k in carried..buf.len() {
            let code = buf[k];
            if code < FIRST_WORD {
                last_break = k as i64;
                if code == END_OF_DOCUMENT {
                    let tokens = (k as i64 - doc_start) as u64;
                    sink.document_end(tokens);
                    self.ngrams += tokens.saturating_sub(n as u64 - 1);
                    doc_start = k as i64 + 1;
                } else {
                    let once = self.tokens.next_once();
                    if words {
                        sink.word(once);
                    }
                }
                continue;
            }
            if words {
                sink.word(OVERFLOW_WORD + u64::from(code - FIRST_WORD));
            }
            let Some(first) = (k + 1).checked_sub(n) else { continue };
            if first as i64 > last_break && part.holds(buf[first]) {
                for (id, &code) in part.ids.iter_mut().zip(&buf[first..=k]) {
                    *id = code - FIRST_WORD;
                }
                let key = self.layout.pack::<L>(&part.ids);
                let fingerprint = if self.roll.is_some() { key_fingerprint(&key) } else { 0 };
                sink.ngram(key, fingerprint, (first as i64 - doc_start) as u64);
            }
        }
        (part.doc_start, part.last_break) = (doc_start, last_break);
        part.carry(n);
    }

    /// A word of a final-ID stream on the rolling path.
    #[inline(always)]
    fn final_token(&mut self, id: u32, sink: &mut impl ScanSink<L>) {
        self.doc_tokens += 1;
        sink.word(OVERFLOW_WORD + u64::from(id));
        if let Some(key) = self.window.push(id) {
            let fingerprint = if self.roll.is_some() { key_fingerprint(&key) } else { 0 };
            sink.ngram(key, fingerprint, self.doc_tokens - self.n);
        }
    }

    #[inline(always)]
    fn end(&mut self, sink: &mut impl ScanSink<L>) {
        sink.document_end(self.doc_tokens);
        self.end_document();
    }

    /// One token that is not a stop word: `id` (or [`Renumbering::BREAK`]),
    /// the hash its fingerprint takes, the number that names it.
    #[inline(always)]
    fn token(&mut self, id: u32, hash: u64, identity: u64, sink: &mut impl ScanSink<L>) {
        self.doc_tokens += 1;
        sink.word(identity);
        if id == Renumbering::BREAK {
            self.window.reset();
            if let Some(r) = self.roll.as_mut() {
                r.reset();
            }
            return;
        }
        let fingerprint = self.roll.as_mut().and_then(|r| r.push(hash)).unwrap_or(0);
        if let Some(key) = self.window.push(id) {
            sink.ngram(key, fingerprint, self.doc_tokens - self.n);
        }
    }

    /// The side file's error, if reading it failed.
    pub fn check(&mut self) -> Result<(), PipelineError> {
        self.tokens.check()
    }

    /// Checks, at the end of the stream, that its side file was read whole.
    pub fn finish(self) -> Result<(), PipelineError> {
        self.tokens.finish()
    }

    fn end_document(&mut self) {
        self.ngrams += self.doc_tokens.saturating_sub(self.n - 1);
        self.doc_tokens = 0;
        self.window.reset();
        if let Some(r) = self.roll.as_mut() {
            r.reset();
        }
    }
}

/// The longest n-gram a walk in parts keys from scratch (the reader's
/// memory counts its codes); longer ones take the rolling path.
const MAX_PART_N: usize = 64;

/// The largest share of the n-grams a part may start for its walk to key
/// them from scratch: keying and fingerprinting one n-gram that way costs
/// about what rolling three windows does (at 10-grams, on 2 cores, a
/// third of the n-grams was already slower than rolling them all).
const PART_WALK_SHARE: f64 = 0.25;

/// What a walk that keeps one part's n-grams holds between frames: the
/// codes of the last `n − 1` positions (a window may end in the next frame),
/// where the current document started and the last break, as indices into
/// `buf` (negative once carried past its start).
struct PartWindow {
    start: u32,
    /// One past the part's last first word (`u32::MAX` + 1 when unbounded).
    end: u64,
    buf: Vec<u32>,
    /// The IDs of the n-gram being keyed.
    ids: Vec<u32>,
    doc_start: i64,
    last_break: i64,
}

impl PartWindow {
    fn new(part: FirstWords, n: usize) -> Self {
        PartWindow {
            start: part.start,
            end: part.end.map_or(u64::from(u32::MAX) + 1, u64::from),
            buf: Vec::with_capacity(n),
            ids: vec![0; n],
            doc_start: 0,
            last_break: -1,
        }
    }

    /// Whether an n-gram starting with `code` is the part's.
    #[inline(always)]
    fn holds(&self, code: u32) -> bool {
        let id = code - FIRST_WORD;
        id >= self.start && u64::from(id) < self.end
    }

    /// Keeps the last `n − 1` codes for the next frame.
    fn carry(&mut self, n: usize) {
        let gone = self.buf.len().saturating_sub(n - 1);
        self.buf.drain(..gone);
        self.doc_start -= gone as i64;
        self.last_break = (self.last_break - gone as i64).max(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a sink heard: n-grams (key, fingerprint, start), document ends, words.
    #[derive(Default, Debug, PartialEq)]
    struct Heard {
        ngrams: Vec<([u64; 1], u64, u64)>,
        ends: Vec<u64>,
        words: Vec<u64>,
        wants_words: bool,
    }

    impl ScanSink<1> for Heard {
        fn ngram(&mut self, key: [u64; 1], fingerprint: u64, start: u64) {
            self.ngrams.push((key, fingerprint, start));
        }
        fn word(&mut self, identity: u64) {
            if self.wants_words {
                self.words.push(identity);
            }
        }
        fn wants_words(&self) -> bool {
            self.wants_words
        }
        fn document_end(&mut self, tokens: u64) {
            self.ends.push(tokens);
        }
    }

    /// Walks `codes` in frames of `frame` codes, keeping `part` (all when `None`).
    fn walk(codes: &[u32], n: usize, part: Option<FirstWords>, frame: usize, words: bool) -> (Heard, u64) {
        let layout = KeyLayout::new(n, 15).unwrap();
        let streamed = Streamed {
            renumbering: Renumbering::default(),
            vocabulary: 16,
            sides: Vec::new(),
            final_ids: true,
            shard_streams: None,
        };
        let mut walk = streamed.walk::<1>(layout, 0, true).unwrap();
        if let Some(part) = part {
            walk.keep_only(part, 0.0);
            assert!(walk.part.is_some());
        }
        let mut heard = Heard { wants_words: words, ..Heard::default() };
        for piece in codes.chunks(frame.max(1)) {
            walk.codes(piece, &mut heard);
        }
        (heard, walk.ngrams)
    }

    proptest! {
        #[test]
        fn a_walk_in_parts_hears_what_the_rolling_walk_hears_of_its_part(
            codes in prop::collection::vec(prop_oneof![1 => Just(END_OF_DOCUMENT), 1 => Just(OVERFLOW), 12 => FIRST_WORD..FIRST_WORD + 16], 0..400),
            n in 1usize..6,
            (start, end) in (0u32..16, 0u32..17),
            frame in 1usize..50,
            words: bool,
        ) {
            let part = FirstWords { start: start.min(end), end: (end < 16).then_some(start.max(end)) };
            prop_assume!(part != FirstWords::ALL);
            let (all, all_ngrams) = walk(&codes, n, None, 1000, words);
            let (kept, ngrams) = walk(&codes, n, Some(part), frame, words);
            let layout = KeyLayout::new(n, 15).unwrap();
            let range = KeyRange::<1>::new(part, layout);
            let want: Vec<_> = all.ngrams.iter().filter(|(key, _, _)| range.contains(key)).copied().collect();
            prop_assert_eq!(kept.ngrams, want);
            prop_assert_eq!(kept.ends, all.ends);
            prop_assert_eq!(kept.words, all.words);
            prop_assert_eq!(ngrams, all_ngrams);
        }
    }
}
