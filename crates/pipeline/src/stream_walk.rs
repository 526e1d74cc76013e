//! Walking the word streams: the n-gram keys (and sieve fingerprints) of a
//! corpus read back from the first-seen IDs its lexicon pass wrote (see
//! [`crate::words`]), as [`crate::scan::Scanner`] gives them from text.
//!
//! Shared by the passes after a lexicon pass that kept word streams: the
//! count of `ngrams` and the index pass of `pairs` and `dedup`, each of them
//! possibly in parts by first word, each part's sieve filled here first.

use dupgram_chunker::KeyLayout;
use dupgram_lexicon::stream::{END_OF_DOCUMENT, FIRST_WORD, OVERFLOW};
use dupgram_lexicon::{Lexicon, Renumbering};
use dupgram_sieve::{RollingFingerprint, Sieve};
use dupgram_vocab::{OverflowWord, SIDE_READER_BYTES, SideFile, SideReader, VocabError, place};

use crate::control::Control;
use crate::error::PipelineError;
use crate::first_words::{FillSieve, KeyRange};
use crate::scan::ScanSink;
use crate::words::{READ_BYTES, WordsFile, each_stream, read_words};

/// How to read the word streams.
pub(crate) struct Streamed {
    pub renumbering: Renumbering,
    /// First-seen IDs are below this.
    pub vocabulary: u32,
    /// Each stream's side file (by stream number): what its overflow tokens are.
    pub sides: Vec<Option<SideFile>>,
}

impl Streamed {
    /// What a pass over `streams` word streams holds beside the lexicon and
    /// the sieve: the renumbering and a reader per stream (and its side file's).
    pub fn beside(&self, streams: usize) -> u64 {
        self.renumbering.heap_bytes() as u64 + streams as u64 * (READ_BYTES + SIDE_READER_BYTES)
    }

    /// A walk over stream `stream`, reading its side file beside it.
    pub fn walk<const L: usize>(
        &self,
        layout: KeyLayout,
        stream: usize,
        fingerprints: bool,
    ) -> Result<IdWalk<'_, L>, PipelineError> {
        let side = SideReader::open(self.sides.get(stream).and_then(Option::as_ref))?;
        Ok(IdWalk::new(layout, &self.renumbering, fingerprints, stream, side))
    }
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
    let StreamJob { streams, streamed, layout, .. } = *job;
    control.progress.start(&phase_of("sieve", label), Some(codes));
    let filling = &*sieve;
    each_stream(streams, |stream, file, abort| {
        let mut fill = FillSieve::new(filling, range);
        let mut walk = streamed.walk::<L>(layout, stream, true)?;
        read_words(file, streamed.vocabulary, control, abort, |codes| {
            walk.codes(codes, &mut fill);
            fill.flush();
            walk.check()
        })?;
        walk.finish()
    })?;
    sieve.freeze();
    Ok(())
}

/// Rolls n-gram keys (and sieve fingerprints) over stream codes, as
/// [`crate::scan::Scanner`] does over text: stop words are skipped, words
/// seen once break the window, a document end resets it. An overflow token
/// learns what it is from the stream's side file. The sink also hears of
/// every word's identity ([`ScanSink::word`]) and of each document's end
/// ([`ScanSink::document_end`]).
pub(crate) struct IdWalk<'a, const L: usize> {
    renumbering: &'a Renumbering,
    side: SideReader,
    /// This stream's number, which makes its words seen once named apart from every other's.
    stream: usize,
    /// Overflow tokens met so far.
    overflow: u64,
    window: dupgram_chunker::KeyWindow<L>,
    roll: Option<RollingFingerprint>,
    n: u64,
    /// Tokens of the current document so far, stop words excluded.
    doc_tokens: u64,
    /// N-gram positions of the documents ended so far.
    pub ngrams: u64,
    failure: Option<VocabError>,
}

/// A word's identity as [`ScanSink::word`] hears it: a first-seen ID
/// (below 2³²), an overflow word's ID above [`OVERFLOW_WORD`], or, for an
/// overflow word seen once, a number no other token has.
const OVERFLOW_WORD: u64 = 1 << 32;
const OVERFLOW_ONCE: u64 = 1 << 63;

impl<'a, const L: usize> IdWalk<'a, L> {
    fn new(
        layout: KeyLayout,
        renumbering: &'a Renumbering,
        fingerprints: bool,
        stream: usize,
        side: SideReader,
    ) -> Self {
        IdWalk {
            renumbering,
            side,
            stream,
            overflow: 0,
            window: dupgram_chunker::KeyWindow::new(layout),
            roll: fingerprints.then(|| RollingFingerprint::new(layout.n())),
            n: layout.n() as u64,
            doc_tokens: 0,
            ngrams: 0,
            failure: None,
        }
    }

    #[inline]
    pub fn codes(&mut self, codes: &[u32], sink: &mut impl ScanSink<L>) {
        for &code in codes {
            let (id, identity, hash) = match code {
                END_OF_DOCUMENT => {
                    sink.document_end(self.doc_tokens);
                    self.end_document();
                    continue;
                }
                OVERFLOW => match self.overflow_word() {
                    OverflowWord::Stop => continue,
                    OverflowWord::Break => (Renumbering::BREAK, OVERFLOW_ONCE | place(self.stream, self.overflow), 0),
                    OverflowWord::Id(id, hash) => (id, OVERFLOW_WORD + u64::from(id), hash),
                },
                _ => {
                    let first_seen = (code - FIRST_WORD) as usize;
                    // The reader checked every code against the vocabulary, which the renumbering spans.
                    let id = self.renumbering.ids[first_seen];
                    if id == Renumbering::STOP {
                        continue;
                    }
                    (id, first_seen as u64, self.renumbering.hashes[first_seen])
                }
            };
            self.doc_tokens += 1;
            sink.word(identity);
            if id == Renumbering::BREAK {
                self.window.reset();
                if let Some(r) = self.roll.as_mut() {
                    r.reset();
                }
                continue;
            }
            let fingerprint = self.roll.as_mut().and_then(|r| r.push(hash)).unwrap_or(0);
            if let Some(key) = self.window.push(id) {
                sink.ngram(key, fingerprint, self.doc_tokens - self.n);
            }
        }
    }

    /// What the next overflow token is; a side file that cannot be read
    /// is remembered (for [`check`](Self::check)) and the token breaks the window meanwhile.
    #[inline]
    fn overflow_word(&mut self) -> OverflowWord {
        self.overflow += 1;
        match self.side.next_token() {
            Ok(w) => w,
            Err(e) => {
                self.failure.get_or_insert(e);
                OverflowWord::Break
            }
        }
    }

    /// The side file's error, if reading it failed.
    pub fn check(&mut self) -> Result<(), PipelineError> {
        match self.failure.take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Checks, at the end of the stream, that its side file was read whole.
    pub fn finish(mut self) -> Result<(), PipelineError> {
        self.check()?;
        Ok(self.side.finish()?)
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
