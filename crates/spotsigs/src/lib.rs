//! Spot signatures (Theobald, Siddharth & Paepcke, *SpotSigs*, SIGIR 2008).
//!
//! A spot signature is an *antecedent* (a stop word from a short list)
//! followed by a *chain* of `c` words that are not stop words, taken at
//! *spot distance* `d`: the first chain word is the first non-stop word at
//! or after `d` tokens past the antecedent, each next one the first
//! non-stop word at or after `d` tokens past the previous chain word (the
//! extraction algorithm of the slides, page 12). Navigation, banners and
//! advertisements hold few stop words, so they yield few signatures; running
//! prose yields them uniformly.
//!
//! A bottom floor: the pipeline turns each document into the sequence of its
//! signatures with [`SpotExtractor`]; [`signatures`] is the same algorithm
//! over a whole token list, the reference the tests check the streaming one
//! against.
//!
//! Two choices the slides leave open, made here:
//! * words are compared and written lower-cased (the slides' example writes
//!   `the:south:carolina` for "the South Carolina");
//! * a chain cut short by the end of the document is no signature (the
//!   slides' pseudo-code reads past the end there), so every signature has
//!   exactly `c` chain words and stands for `c + 1` tokens.

use std::collections::HashSet;

/// The stop words chains skip when no list is given: English function
/// words (articles, pronouns, auxiliaries, prepositions, conjunctions).
pub const ENGLISH_STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The slides' example antecedents, {a, the, is}, and `an`, which their
/// worked example also uses (`an:attack:circulating`).
pub const SLIDES_ANTECEDENTS: &[&str] = &["a", "an", "the", "is"];

/// The default antecedents: the twenty most frequent English function words
/// of the measurement in the README ("SpotSigs against word 5-grams"), where
/// with a chain of 3 they agreed best with the 5-gram near-duplicates of
/// Reuters-21578 and 20 Newsgroups.
pub const DEFAULT_ANTECEDENTS: &[&str] = &[
    "a", "an", "the", "is", "was", "are", "be", "has", "have", "of", "to", "in", "for", "on", "with", "at", "by",
    "from", "that", "it",
];

/// The default chain length and spot distance (same measurement).
pub const DEFAULT_CHAIN: usize = 3;
pub const DEFAULT_DISTANCE: usize = 1;

/// What makes a signature: antecedents, the stop words chains skip, `d` and `c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpotParams {
    antecedents: HashSet<String>,
    stopwords: HashSet<String>,
    distance: usize,
    chain: usize,
}

/// Parameters out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError(pub String);

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

/// The longest chain accepted.
pub const MAX_CHAIN: usize = 16;
/// The longest spot distance accepted.
pub const MAX_DISTANCE: usize = 64;

impl SpotParams {
    /// Antecedents and stop words are lower-cased; antecedents are stop words
    /// too (a chain never holds one).
    pub fn new(
        antecedents: impl IntoIterator<Item = impl AsRef<str>>,
        stopwords: impl IntoIterator<Item = impl AsRef<str>>,
        distance: usize,
        chain: usize,
    ) -> Result<SpotParams, ParamError> {
        if !(1..=MAX_DISTANCE).contains(&distance) {
            return Err(ParamError(format!("--spot-distance must be between 1 and {MAX_DISTANCE}, not {distance}")));
        }
        if !(1..=MAX_CHAIN).contains(&chain) {
            return Err(ParamError(format!("--chain must be between 1 and {MAX_CHAIN}, not {chain}")));
        }
        let antecedents: HashSet<String> = antecedents.into_iter().map(|w| w.as_ref().to_lowercase()).collect();
        if antecedents.is_empty() {
            return Err(ParamError("the antecedent list is empty".into()));
        }
        let mut stopwords: HashSet<String> = stopwords.into_iter().map(|w| w.as_ref().to_lowercase()).collect();
        stopwords.extend(antecedents.iter().cloned());
        Ok(SpotParams { antecedents, stopwords, distance, chain })
    }

    /// The slides' antecedents over the built-in English stop words.
    pub fn slides(distance: usize, chain: usize) -> Result<SpotParams, ParamError> {
        SpotParams::new(SLIDES_ANTECEDENTS, ENGLISH_STOPWORDS, distance, chain)
    }

    /// The default antecedents over the built-in English stop words.
    pub fn english(distance: usize, chain: usize) -> Result<SpotParams, ParamError> {
        SpotParams::new(DEFAULT_ANTECEDENTS, ENGLISH_STOPWORDS, distance, chain)
    }

    pub fn distance(&self) -> usize {
        self.distance
    }

    pub fn chain(&self) -> usize {
        self.chain
    }

    fn is_antecedent(&self, word: &str) -> bool {
        self.antecedents.contains(word)
    }

    fn is_stopword(&self, word: &str) -> bool {
        self.stopwords.contains(word)
    }
}

/// One signature of a document, with where its tokens are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// `antecedent:word:…:word` (see [`write_signature`]).
    pub text: String,
    /// The token positions of the antecedent and of each chain word.
    pub positions: Vec<usize>,
}

/// The signatures of a document given as lower-cased tokens, in antecedent
/// order: the slides' algorithm as written, whole-document.
pub fn signatures(params: &SpotParams, tokens: &[&str]) -> Vec<Signature> {
    let mut out = Vec::new();
    for (i, &token) in tokens.iter().enumerate() {
        if !params.is_antecedent(token) {
            continue;
        }
        let mut positions = vec![i];
        let mut k = i + params.distance;
        for _ in 0..params.chain {
            while k < tokens.len() && params.is_stopword(tokens[k]) {
                k += 1;
            }
            if k >= tokens.len() {
                break;
            }
            positions.push(k);
            k += params.distance;
        }
        if positions.len() == params.chain + 1 {
            let words: Vec<&str> = positions.iter().map(|&p| tokens[p]).collect();
            let mut text = String::new();
            write_signature(&words, &mut text);
            out.push(Signature { text, positions });
        }
    }
    out
}

/// Writes `words` as one signature: joined by `:`, each `:` or `\` inside a
/// word escaped by a `\`, and whitespace (which vertical tokens may hold)
/// written `\u{…}`, so a signature is one whitespace-free token and
/// different word lists never give the same text.
pub fn write_signature(words: &[&str], out: &mut String) {
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        for ch in word.chars() {
            if ch.is_whitespace() {
                out.push_str(&format!("\\u{{{:x}}}", ch as u32));
                continue;
            }
            if ch == ':' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
    }
}

/// A chain being filled: its antecedent's words so far and the position of
/// the next token it may take.
#[derive(Debug)]
struct OpenChain {
    words: Vec<String>,
    next: usize,
}

/// The signatures of a document fed token by token (pieces of a long
/// document are fed in order; [`SpotExtractor::end_document`] ends it).
/// Gives the same signatures as [`signatures`], in the order their chains
/// complete; it holds only the chains still open.
#[derive(Debug)]
pub struct SpotExtractor {
    params: SpotParams,
    open: Vec<OpenChain>,
    position: usize,
    lower: String,
    text: String,
}

impl SpotExtractor {
    pub fn new(params: SpotParams) -> Self {
        SpotExtractor { params, open: Vec::new(), position: 0, lower: String::new(), text: String::new() }
    }

    pub fn params(&self) -> &SpotParams {
        &self.params
    }

    /// Takes the next token; `emit` gets each signature it completes.
    pub fn push(&mut self, token: &str, emit: &mut impl FnMut(&str)) {
        self.lower.clear();
        self.lower.extend(token.chars().flat_map(char::to_lowercase));
        let word = self.lower.as_str();
        let at = self.position;
        self.position += 1;
        let stop = self.params.is_stopword(word);
        if !stop {
            let (distance, chain) = (self.params.distance, self.params.chain);
            let mut i = 0;
            while i < self.open.len() {
                let open = &mut self.open[i];
                // A chain skips stop words from its next position on, so it
                // takes the first non-stop word at or after it.
                if open.next <= at {
                    open.words.push(word.to_owned());
                    open.next = at + distance;
                    if open.words.len() == chain + 1 {
                        let done = self.open.remove(i);
                        let words: Vec<&str> = done.words.iter().map(String::as_str).collect();
                        self.text.clear();
                        write_signature(&words, &mut self.text);
                        emit(&self.text);
                        continue;
                    }
                }
                i += 1;
            }
        }
        if self.params.is_antecedent(word) {
            self.open.push(OpenChain { words: vec![word.to_owned()], next: at + self.params.distance });
        }
    }

    /// Ends the document: chains the end cut short are no signatures.
    pub fn end_document(&mut self) {
        self.open.clear();
        self.position = 0;
    }
}

#[cfg(test)]
mod tests;
