//! Documents into n-gram keys: the part of a pass shared by counting and indexing.

use dupgram_chunker::{KeyLayout, KeyWindow};
use dupgram_lexicon::{Lexicon, Lookup, Normalization, Tokenizer, word_hash};
use dupgram_sieve::RollingFingerprint;

/// Receives what a [`Scanner`] finds in a document.
pub(crate) trait ScanSink<const L: usize> {
    /// A token that is not a stop word: its ID, or `None` for a word no
    /// repeated n-gram holds (it breaks the n-gram window).
    #[inline]
    fn token(&mut self, _id: Option<u32>, _word: &str) {}

    /// An n-gram of repeatable words, starting at token `start` (stop words
    /// not counted) of the current document; `fingerprint` is its rolling
    /// fingerprint when the scanner computes them, else 0.
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, start: u64);

    /// From the word streams ([`crate::stream_walk::IdWalk`]), instead of
    /// [`token`](Self::token): a number that names the token's word exactly,
    /// repeated or not (equal for equal words, different for different ones).
    #[inline]
    fn word(&mut self, _identity: u64) {}

    /// Whether [`word`](Self::word) does anything: a walk may skip calling it if not.
    fn wants_words(&self) -> bool {
        false
    }

    /// From the word streams: the current document ended, with `tokens`
    /// tokens (stop words not counted).
    #[inline]
    fn document_end(&mut self, _tokens: u64) {}
}

/// Tokenises documents piece by piece and rolls n-gram keys over their word IDs.
pub(crate) struct Scanner<'a, const L: usize> {
    tokenizer: Tokenizer,
    lexicon: &'a Lexicon,
    window: KeyWindow<L>,
    roll: Option<RollingFingerprint>,
    n: u64,
    /// Tokens of the current document so far, stop words excluded.
    doc_tokens: u64,
    /// All tokens scanned, stop words included.
    tokens: u64,
}

impl<'a, const L: usize> Scanner<'a, L> {
    /// With `fingerprints`, every n-gram also gets its sieve fingerprint.
    pub fn new(norm: Normalization, lexicon: &'a Lexicon, layout: KeyLayout, fingerprints: bool) -> Self {
        Scanner {
            tokenizer: Tokenizer::new(norm),
            lexicon,
            window: KeyWindow::new(layout),
            roll: fingerprints.then(|| RollingFingerprint::new(layout.n())),
            n: layout.n() as u64,
            doc_tokens: 0,
            tokens: 0,
        }
    }

    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Scans one piece of a document; with `last`, ends the document and
    /// returns its token count (stop words excluded).
    #[inline]
    pub fn piece(&mut self, text: &str, last: bool, sink: &mut impl ScanSink<L>) -> Option<u64> {
        let Scanner { tokenizer, lexicon, window, roll, n, doc_tokens, tokens } = self;
        let mut emit = |w: &str| {
            *tokens += 1;
            let h = word_hash(w.as_bytes());
            let id = match lexicon.lookup_hashed(w, h) {
                Lookup::Stop => return,
                Lookup::Unknown => None,
                Lookup::Id(id) => Some(id),
            };
            *doc_tokens += 1;
            sink.token(id, w);
            let Some(id) = id else {
                window.reset();
                if let Some(r) = roll.as_mut() {
                    r.reset();
                }
                return;
            };
            let fingerprint = roll.as_mut().and_then(|r| r.push(h)).unwrap_or(0);
            if let Some(key) = window.push(id) {
                sink.ngram(key, fingerprint, *doc_tokens - *n);
            }
        };
        tokenizer.feed(text, &mut emit);
        if !last {
            return None;
        }
        tokenizer.finish(&mut emit);
        let count = *doc_tokens;
        *doc_tokens = 0;
        window.reset();
        if let Some(r) = roll.as_mut() {
            r.reset();
        }
        Some(count)
    }
}
