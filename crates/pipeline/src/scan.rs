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
///
/// A word is looked up [`LOOK_AHEAD`] words after it is tokenised: the
/// lexicon's table outgrows the processor's caches, and its lines, asked
/// for as the word comes ([`Lexicon::prefetch`]), arrive while the words
/// after it are tokenised instead of one after the other. Every word of a
/// piece is looked up before [`piece`](Self::piece) returns, in order, so
/// what the sink sees is the same.
pub(crate) struct Scanner<'a, const L: usize> {
    tokenizer: Tokenizer,
    roller: Roller<'a, L>,
    pending: Pending,
}

/// How many words a [`Scanner`] tokenises before it looks the first of them up.
const LOOK_AHEAD: usize = 16;

/// The words a [`Scanner`] has tokenised and not yet looked up.
#[derive(Default)]
struct Pending {
    text: String,
    /// Each word's end in `text`, and its hash.
    words: Vec<(u32, u64)>,
    /// The first word not yet looked up, and where it starts in `text`.
    next: usize,
    next_start: u32,
}

impl Pending {
    /// Words looked up are let go once this many are held, so a piece of
    /// millions of words holds a few hundred at a time (tokens are cut at
    /// 1 KiB: at most about 270 KiB of text, a few KiB on any real one).
    const KEEP_AT_MOST: usize = 256;

    fn push(&mut self, word: &str, hash: u64) {
        if self.next == Self::KEEP_AT_MOST {
            self.let_go_of_looked_up();
        }
        self.text.push_str(word);
        self.words.push((self.text.len() as u32, hash));
    }

    fn waiting(&self) -> usize {
        self.words.len() - self.next
    }

    /// The next word to look up, with its hash.
    fn take(&mut self) -> Option<(&str, u64)> {
        let &(end, hash) = self.words.get(self.next)?;
        let start = std::mem::replace(&mut self.next_start, end);
        self.next += 1;
        Some((&self.text[start as usize..end as usize], hash))
    }

    fn let_go_of_looked_up(&mut self) {
        let cut = self.next_start;
        self.text.drain(..cut as usize);
        self.words.drain(..self.next);
        for (end, _) in &mut self.words {
            *end -= cut;
        }
        (self.next, self.next_start) = (0, 0);
    }

    fn clear(&mut self) {
        self.text.clear();
        self.words.clear();
        (self.next, self.next_start) = (0, 0);
    }
}

/// Rolls n-gram keys over the words a [`Scanner`] looks up.
struct Roller<'a, const L: usize> {
    lexicon: &'a Lexicon,
    window: KeyWindow<L>,
    roll: Option<RollingFingerprint>,
    n: u64,
    /// Tokens of the current document so far, stop words excluded.
    doc_tokens: u64,
    /// All tokens scanned, stop words included.
    tokens: u64,
}

impl<const L: usize> Roller<'_, L> {
    #[inline]
    fn word(&mut self, w: &str, h: u64, sink: &mut impl ScanSink<L>) {
        self.tokens += 1;
        let id = match self.lexicon.lookup_hashed(w, h) {
            Lookup::Stop => return,
            Lookup::Unknown => None,
            Lookup::Id(id) => Some(id),
        };
        self.doc_tokens += 1;
        sink.token(id, w);
        let Some(id) = id else {
            self.window.reset();
            if let Some(r) = self.roll.as_mut() {
                r.reset();
            }
            return;
        };
        let fingerprint = self.roll.as_mut().and_then(|r| r.push(h)).unwrap_or(0);
        if let Some(key) = self.window.push(id) {
            sink.ngram(key, fingerprint, self.doc_tokens - self.n);
        }
    }

    /// Ends the document: returns its tokens (stop words excluded).
    fn end_document(&mut self) -> u64 {
        let count = std::mem::take(&mut self.doc_tokens);
        self.window.reset();
        if let Some(r) = self.roll.as_mut() {
            r.reset();
        }
        count
    }
}

impl<'a, const L: usize> Scanner<'a, L> {
    /// With `fingerprints`, every n-gram also gets its sieve fingerprint.
    pub fn new(norm: Normalization, lexicon: &'a Lexicon, layout: KeyLayout, fingerprints: bool) -> Self {
        Scanner {
            tokenizer: Tokenizer::new(norm),
            roller: Roller {
                lexicon,
                window: KeyWindow::new(layout),
                roll: fingerprints.then(|| RollingFingerprint::new(layout.n())),
                n: layout.n() as u64,
                doc_tokens: 0,
                tokens: 0,
            },
            pending: Pending::default(),
        }
    }

    pub fn tokens(&self) -> u64 {
        self.roller.tokens
    }

    /// Scans one piece of a document; with `last`, ends the document and
    /// returns its token count (stop words excluded).
    #[inline]
    pub fn piece(&mut self, text: &str, last: bool, sink: &mut impl ScanSink<L>) -> Option<u64> {
        let Scanner { tokenizer, roller, pending } = self;
        let mut emit = |w: &str| {
            let h = word_hash(w.as_bytes());
            roller.lexicon.prefetch(h);
            pending.push(w, h);
            if pending.waiting() > LOOK_AHEAD
                && let Some((w, h)) = pending.take()
            {
                roller.word(w, h, sink);
            }
        };
        tokenizer.feed(text, &mut emit);
        if last {
            tokenizer.finish(&mut emit);
        }
        while let Some((w, h)) = pending.take() {
            roller.word(w, h, sink);
        }
        pending.clear();
        last.then(|| roller.end_document())
    }
}

#[cfg(test)]
mod tests {
    use dupgram_lexicon::{LexiconBuilder, tokenize};

    use super::*;

    /// One call of a scanner: a token's ID and word, or an n-gram's key,
    /// fingerprint and start (with no ID and an empty word).
    type Call = (Option<u32>, String, [u64; 1], u64, u64);

    /// Every call a scanner makes, in order.
    #[derive(Default, PartialEq, Debug)]
    struct Calls(Vec<Call>);

    impl ScanSink<1> for Calls {
        fn token(&mut self, id: Option<u32>, word: &str) {
            self.0.push((id, word.to_string(), [0], 0, 0));
        }
        fn ngram(&mut self, key: [u64; 1], fingerprint: u64, start: u64) {
            self.0.push((None, String::new(), key, fingerprint, start));
        }
    }

    /// A lexicon of `text`'s words seen at least twice, with one stop word.
    fn lexicon_of(text: &str) -> Lexicon {
        let mut builder = LexiconBuilder::new(["w3".to_string()]);
        for word in tokenize(Normalization::default(), text) {
            builder.add(&word);
        }
        builder.finish(Normalization::default(), 0)
    }

    fn scan(lexicon: &Lexicon, pieces: &[&str]) -> (Calls, Vec<Option<u64>>, u64) {
        let layout = KeyLayout::new(3, lexicon.len() as u32).expect("a small layout");
        let mut scanner = Scanner::<1>::new(Normalization::default(), lexicon, layout, true);
        let mut calls = Calls::default();
        let ends =
            pieces.iter().enumerate().map(|(i, p)| scanner.piece(p, i + 1 == pieces.len(), &mut calls)).collect();
        (calls, ends, scanner.tokens())
    }

    /// A document of more words than the look-ahead and the words a scanner
    /// keeps gives the same calls in one piece as in pieces of a few words
    /// (each piece's words all looked up before it returns), and the token
    /// counts of a plain tokenisation.
    #[test]
    fn look_ahead_changes_nothing_at_any_piece_size() {
        let words: Vec<String> = (0..10_000u32).map(|i| format!("w{}", (i * 7919) % 600)).collect();
        let lexicon = lexicon_of(&words.join(" "));
        // Every 50th word one the lexicon does not know: it breaks the windows.
        let words: Vec<String> =
            words.into_iter().enumerate().map(|(i, w)| if i % 50 == 49 { format!("x{i}") } else { w }).collect();
        let text = words.join(" ");
        let (whole, ends, tokens) = scan(&lexicon, &[&text]);
        assert_eq!(tokens, 10_000);
        let stops = words.iter().filter(|w| *w == "w3").count() as u64;
        assert_eq!(ends, vec![Some(10_000 - stops)]);
        for size in [1, 5, 16, 17, 100, 257, 4097] {
            let pieces: Vec<String> = words.chunks(size).map(|c| c.join(" ") + " ").collect();
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let (calls, ends, tokens) = scan(&lexicon, &pieces);
            assert_eq!(calls, whole, "pieces of {size} words");
            assert_eq!((ends.last().copied().flatten(), tokens), (Some(10_000 - stops), 10_000));
            assert!(ends[..ends.len() - 1].iter().all(Option::is_none));
        }
        // Every window of three known words, stop words left out.
        let (mut run, mut windows) = (0, 0);
        for w in words.iter().filter(|w| *w != "w3") {
            run = if w.starts_with('x') { 0 } else { run + 1 };
            windows += u32::from(run >= 3);
        }
        assert_eq!(whole.0.iter().filter(|c| c.1.is_empty()).count(), windows as usize);
        assert!(whole.0.iter().any(|c| c.1.starts_with('x') && c.0.is_none()), "unknown words are tokens without IDs");
    }
}
