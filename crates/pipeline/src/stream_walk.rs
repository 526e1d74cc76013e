//! Walking the word streams: the n-gram keys (and sieve fingerprints) of a
//! corpus read back from the first-seen IDs its lexicon pass wrote (see
//! [`crate::words`]), as [`crate::scan::Scanner`] gives them from text.
//!
//! Shared by the passes after a lexicon pass that kept word streams: the
//! count of `ngrams` and the index pass of `pairs` and `dedup`, each of them
//! possibly in parts by first word, each part's sieve filled here first.

use dupgram_chunker::KeyLayout;
use dupgram_lexicon::{Lexicon, Renumbering};
use dupgram_sieve::{RollingFingerprint, Sieve};

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
}

impl Streamed {
    /// What a pass over `streams` word streams holds beside the lexicon and
    /// the sieve: the renumbering and a reader per stream.
    pub fn beside(&self, streams: usize) -> u64 {
        self.renumbering.heap_bytes() as u64 + streams as u64 * READ_BYTES
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
    each_stream(streams, |_, file, abort| {
        let mut fill = FillSieve::new(filling, range);
        let mut walk = IdWalk::<L>::new(layout, &streamed.renumbering, true);
        read_words(file, streamed.vocabulary, control, abort, |codes| {
            walk.codes(codes, &mut fill);
            fill.flush();
            Ok(())
        })?;
        Ok(())
    })?;
    sieve.freeze();
    Ok(())
}

/// Rolls n-gram keys (and sieve fingerprints) over stream codes, as
/// [`crate::scan::Scanner`] does over text: stop words are skipped, words
/// seen once break the window, a document end resets it. The sink also
/// hears of every word's first-seen ID ([`ScanSink::first_seen`]) and of
/// each document's end ([`ScanSink::document_end`]).
pub(crate) struct IdWalk<'a, const L: usize> {
    renumbering: &'a Renumbering,
    window: dupgram_chunker::KeyWindow<L>,
    roll: Option<RollingFingerprint>,
    n: u64,
    /// Tokens of the current document so far, stop words excluded.
    doc_tokens: u64,
    /// N-gram positions of the documents ended so far.
    pub ngrams: u64,
}

impl<'a, const L: usize> IdWalk<'a, L> {
    pub fn new(layout: KeyLayout, renumbering: &'a Renumbering, fingerprints: bool) -> Self {
        IdWalk {
            renumbering,
            window: dupgram_chunker::KeyWindow::new(layout),
            roll: fingerprints.then(|| RollingFingerprint::new(layout.n())),
            n: layout.n() as u64,
            doc_tokens: 0,
            ngrams: 0,
        }
    }

    #[inline]
    pub fn codes(&mut self, codes: &[u32], sink: &mut impl ScanSink<L>) {
        for &code in codes {
            let Some(first_seen) = code.checked_sub(1) else {
                sink.document_end(self.doc_tokens);
                self.end_document();
                continue;
            };
            // The reader checked every code against the vocabulary, which the renumbering spans.
            let id = self.renumbering.ids[first_seen as usize];
            if id == Renumbering::STOP {
                continue;
            }
            self.doc_tokens += 1;
            sink.first_seen(first_seen);
            if id == Renumbering::BREAK {
                self.window.reset();
                if let Some(r) = self.roll.as_mut() {
                    r.reset();
                }
                continue;
            }
            let fingerprint =
                self.roll.as_mut().and_then(|r| r.push(self.renumbering.hashes[id as usize])).unwrap_or(0);
            if let Some(key) = self.window.push(id) {
                sink.ngram(key, fingerprint, self.doc_tokens - self.n);
            }
        }
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
