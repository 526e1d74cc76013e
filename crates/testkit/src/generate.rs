//! A corpus generator: Zipf-distributed words, documents of varied length,
//! and planted duplication — exact copies, near copies (a few words edited)
//! and shared passages — deterministic by seed.
//!
//! By default the vocabulary is closed (`vocabulary` words), so it stops
//! growing early, as no real text does. With `open_vocabulary` > 0 that share
//! of the fresh words comes from an open-ended tail instead — ranks drawn from
//! an unbounded power law of exponent `open_zipf`, each rank a word of its own —
//! so the number of distinct words keeps growing with the corpus like
//! (share × tokens)^(1 / open_zipf) (Heaps' law, as names, typos, numbers
//! and URLs make web text grow). Tail words are spelled from their rank with
//! a `c`, a letter core words never use, so no two words are spelled alike.
//!
//! It uses its own SplitMix64 so a seed gives the same corpus on every
//! machine and with every dependency version.

use std::io::Write;

/// SplitMix64: tiny, fast, and stable forever.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct CorpusSpec {
    pub seed: u64,
    /// Stop after about this many tokens.
    pub tokens: u64,
    pub vocabulary: u32,
    /// Zipf exponent of word frequencies (natural text: about 1).
    pub zipf: f64,
    /// Mean document length in tokens (lengths vary from a tenth to twice that).
    pub mean_doc_len: u32,
    /// Share of documents that copy an earlier document exactly.
    pub exact_copies: f64,
    /// Share that copy an earlier document with a few words edited.
    pub near_copies: f64,
    /// Share that embed a passage of an earlier document in new text.
    pub passages: f64,
    /// Share of fresh words drawn from the open-ended tail (0: a closed vocabulary).
    pub open_vocabulary: f64,
    /// Power-law exponent of the tail's ranks (> 1; smaller grows faster).
    pub open_zipf: f64,
}

impl Default for CorpusSpec {
    fn default() -> Self {
        CorpusSpec {
            seed: 1,
            tokens: 100_000,
            vocabulary: 50_000,
            zipf: 1.0,
            mean_doc_len: 300,
            exact_copies: 0.05,
            near_copies: 0.15,
            passages: 0.10,
            open_vocabulary: 0.0,
            open_zipf: 1.2,
        }
    }
}

/// One generated document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub id: String,
    pub words: Vec<u32>,
}

/// Streams documents for a [`CorpusSpec`].
pub struct Corpus {
    spec: CorpusSpec,
    rng: SplitMix,
    cumulative: Vec<f64>,
    words: Vec<String>,
    recent: Vec<Vec<u32>>,
    produced: u64,
    next_id: u64,
}

/// Documents kept for copying from.
const RECENT: usize = 2000;

impl Corpus {
    pub fn new(spec: CorpusSpec) -> Self {
        let mut rng = SplitMix::new(spec.seed);
        let mut cumulative = Vec::with_capacity(spec.vocabulary as usize);
        let mut total = 0.0;
        for rank in 1..=spec.vocabulary {
            total += 1.0 / f64::from(rank).powf(spec.zipf);
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        let words = spelling(spec.vocabulary, &mut rng);
        Corpus { spec, rng, cumulative, words, recent: Vec::new(), produced: 0, next_id: 0 }
    }

    /// The text of word `w`.
    pub fn word(&self, w: u32) -> std::borrow::Cow<'_, str> {
        match self.words.get(w as usize) {
            Some(word) => word.as_str().into(),
            None => tail_word(w - self.spec.vocabulary).into(),
        }
    }

    pub fn text(&self, doc: &Doc) -> String {
        let mut out = String::with_capacity(doc.words.len() * 7);
        for (i, &w) in doc.words.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&self.word(w));
        }
        out
    }

    fn fresh_word(&mut self) -> u32 {
        // A closed vocabulary draws nothing more, so its corpora stay as they were.
        if self.spec.open_vocabulary > 0.0 && self.rng.chance(self.spec.open_vocabulary) {
            return self.tail_rank();
        }
        let u = self.rng.unit();
        self.cumulative.partition_point(|&c| c < u).min(self.cumulative.len() - 1) as u32
    }

    /// A word of the open tail: rank r ≥ 1 with P(rank ≥ r) = r^-(open_zipf - 1),
    /// numbered after the closed vocabulary (at most 2^31 words in all).
    fn tail_rank(&mut self) -> u32 {
        let u = 1.0 - self.rng.unit(); // (0, 1]
        let rank = u.powf(-1.0 / (self.spec.open_zipf - 1.0)).floor();
        let room = f64::from((1u32 << 31) - 1 - self.spec.vocabulary);
        self.spec.vocabulary + (rank.min(room) as u32).saturating_sub(1)
    }

    fn fresh(&mut self, len: usize) -> Vec<u32> {
        (0..len).map(|_| self.fresh_word()).collect()
    }

    fn doc_len(&mut self) -> usize {
        let mean = u64::from(self.spec.mean_doc_len.max(1));
        (mean / 10 + self.rng.below(mean * 19 / 10 + 1)).max(1) as usize
    }

    fn pick_recent(&mut self) -> Option<Vec<u32>> {
        if self.recent.is_empty() {
            return None;
        }
        let i = self.rng.below(self.recent.len() as u64) as usize;
        Some(self.recent[i].clone())
    }

    fn edit(&mut self, mut words: Vec<u32>) -> Vec<u32> {
        let edits = (words.len() / 40).max(1);
        for _ in 0..edits {
            let at = self.rng.below(words.len() as u64 + 1) as usize;
            match self.rng.below(3) {
                0 if at < words.len() => words[at] = self.fresh_word(),
                1 if at < words.len() => {
                    words.remove(at);
                }
                _ => {
                    let w = self.fresh_word();
                    words.insert(at, w);
                }
            }
        }
        words
    }

    fn with_passage(&mut self, source: Vec<u32>) -> Vec<u32> {
        let len = self.doc_len();
        let mut words = self.fresh(len);
        let take = (20 + self.rng.below(200) as usize).min(source.len());
        let from = self.rng.below((source.len() - take) as u64 + 1) as usize;
        let at = self.rng.below(words.len() as u64 + 1) as usize;
        words.splice(at..at, source[from..from + take].iter().copied());
        words
    }
}

impl Iterator for Corpus {
    type Item = Doc;

    fn next(&mut self) -> Option<Doc> {
        if self.produced >= self.spec.tokens {
            return None;
        }
        let roll = self.rng.unit();
        let s = &self.spec;
        let (exact, near, passage) =
            (s.exact_copies, s.exact_copies + s.near_copies, s.exact_copies + s.near_copies + s.passages);
        let words = match self.pick_recent() {
            Some(src) if roll < exact => src,
            Some(src) if roll < near => self.edit(src),
            Some(src) if roll < passage => self.with_passage(src),
            _ => {
                let len = self.doc_len();
                self.fresh(len)
            }
        };
        if self.recent.len() < RECENT {
            self.recent.push(words.clone());
        } else {
            let i = self.rng.below(RECENT as u64) as usize;
            self.recent[i] = words.clone();
        }
        self.produced += words.len() as u64;
        self.next_id += 1;
        Some(Doc { id: format!("d{}", self.next_id), words })
    }
}

/// Distinct lower-case pseudo-words, short ones for frequent ranks.
fn spelling(vocabulary: u32, rng: &mut SplitMix) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut words = Vec::with_capacity(vocabulary as usize);
    while words.len() < vocabulary as usize {
        let syllables = 1 + (words.len() as f64).log(24.0).max(0.0) as usize + rng.below(2) as usize;
        let w: String = (0..syllables).map(|_| SYLLABLES[rng.below(24) as usize]).collect();
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

/// The spelling of tail word `rank` (from 0): one or two syllables picked by
/// a hash of the rank, a `c`, then the rank in base 24, one syllable a digit.
/// Core words have no `c`, and the part after the first `c` gives the rank
/// back, so every tail word is distinct from every other word.
fn tail_word(rank: u32) -> String {
    let mut h = SplitMix::new(u64::from(rank));
    let mut word = String::new();
    for _ in 0..1 + h.below(2) {
        word.push_str(SYLLABLES[h.below(24) as usize]);
    }
    word.push('c');
    let mut rest = rank;
    loop {
        word.push_str(SYLLABLES[(rest % 24) as usize]);
        rest /= 24;
        if rest == 0 {
            return word;
        }
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "pi", "de", "ga", "bu", "zo", "ri", "fa", "hu", "jo", "xe", "wi",
    "qu", "an", "el", "or", "is",
];

/// Output layouts of the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Jsonl,
    Text,
    Vertical,
}

/// Writes the whole corpus; returns (documents, tokens).
pub fn write_corpus(spec: CorpusSpec, layout: Layout, out: &mut impl Write) -> std::io::Result<(u64, u64)> {
    let mut corpus = Corpus::new(spec);
    let (mut docs, mut tokens) = (0u64, 0u64);
    while let Some(doc) = corpus.next() {
        docs += 1;
        tokens += doc.words.len() as u64;
        match layout {
            Layout::Jsonl => {
                let line = serde_json::json!({ "id": doc.id, "text": corpus.text(&doc) });
                writeln!(out, "{line}")?;
            }
            Layout::Text => writeln!(out, "{}", corpus.text(&doc))?,
            Layout::Vertical => {
                writeln!(out, "<doc id=\"{}\">", doc.id)?;
                for (i, &w) in doc.words.iter().enumerate() {
                    if i % 40 == 0 {
                        if i > 0 {
                            writeln!(out, "</p>")?;
                        }
                        writeln!(out, "<p>")?;
                    }
                    writeln!(out, "{}", corpus.word(w))?;
                }
                writeln!(out, "</p>\n</doc>")?;
            }
        }
    }
    Ok((docs, tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_corpus() {
        let spec = CorpusSpec { tokens: 5000, ..CorpusSpec::default() };
        let a: Vec<Doc> = Corpus::new(spec.clone()).collect();
        let b: Vec<Doc> = Corpus::new(spec.clone()).collect();
        assert_eq!(a, b);
        let c: Vec<Doc> = Corpus::new(CorpusSpec { seed: 2, ..spec }).collect();
        assert_ne!(a, c);
        assert!(a.iter().map(|d| d.words.len()).sum::<usize>() >= 5000);
    }

    #[test]
    fn an_open_vocabulary_keeps_growing() {
        let distinct = |tokens: u64, open_vocabulary: f64| {
            let spec = CorpusSpec { tokens, vocabulary: 5000, open_vocabulary, ..CorpusSpec::default() };
            let corpus = Corpus::new(spec.clone());
            let words: std::collections::HashSet<String> =
                Corpus::new(spec).flat_map(|d| d.words).map(|w| corpus.word(w).into_owned()).collect();
            words.len()
        };
        // Closed: the vocabulary is all but used up at 200k tokens.
        let (closed_small, closed_large) = (distinct(200_000, 0.0), distinct(2_000_000, 0.0));
        assert!(closed_large <= 5000 && closed_large < closed_small * 3 / 2, "{closed_small} → {closed_large}");
        // Open: ten times the text, several times the words (10^(1/1.2) ≈ 6.8 for the tail).
        let (open_small, open_large) = (distinct(200_000, 0.1), distinct(2_000_000, 0.1));
        assert!(open_large > open_small * 3, "{open_small} → {open_large}");
    }

    #[test]
    fn tail_words_are_distinct_from_each_other_and_from_core_words() {
        let spec = CorpusSpec { vocabulary: 3000, ..CorpusSpec::default() };
        let corpus = Corpus::new(spec);
        let mut seen = std::collections::HashSet::new();
        for w in 0..3000 + 100_000 {
            assert!(seen.insert(corpus.word(w).into_owned()), "word {w} spelled twice");
        }
    }
}
