//! One instance only: which units of text (documents, paragraphs or
//! sentences) repeat earlier text, decided exactly.
//!
//! The semantics are Onion's (Pomikálek 2011; Benko 2013, §3), so users can
//! switch: the corpus is walked in order; a token of a unit is *covered* when
//! an n-gram ending in that unit (it may start in the previous unit of the
//! same document) occurred earlier — in text kept so far, or earlier in the
//! same document; a unit is a duplicate when more than `threshold` of its
//! tokens are covered. Only kept units add their n-grams to what later text
//! is compared with, so the first instance of anything is kept. Smoothing
//! then marks short runs of kept units (at most `max_stub` tokens) lying
//! between two boundaries, where a boundary is a duplicate unit or an edge
//! of the document — so a whole document of at most `max_stub` tokens goes
//! even when nothing in it repeats, and its n-grams are not remembered. That
//! is Onion 1.2's smoothing loop (`onion.c`: `last_bad_par` starts one before
//! the document's first paragraph and the loop runs to one past its last).
//! The threshold is compared as Onion compares it, as a 32-bit float, so a
//! unit exactly 90 % covered is above `0.9` (which as an `f32` is a little
//! less than 0.9).
//!
//! Onion remembers a 64-bit hash of every n-gram, so its memory grows with
//! the corpus and a hash collision can mark a unit wrongly. dupgram decides
//! with the duplicate-only index instead: an n-gram that occurs once in the
//! corpus can never have "occurred earlier", so only duplicate n-grams,
//! identified exactly by their index ID, need remembering — one bit each.
//!
//! [`exact_fingerprint`] is Benko's plain method (§2): a unit whose text,
//! punctuation and digits ignored, equals an earlier unit's is a duplicate
//! whatever its length; it combines with the n-gram test.

mod segment;
mod span;
mod stats;

pub use segment::{UnitKind, segment_text};
pub use span::{SpanMarker, SpanParams, SpanVerdict};
pub use stats::{LengthRow, LengthTable};

use xxhash_rust::xxh3::Xxh3;

/// How units are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupParams {
    pub n: u32,
    /// A unit with more than this share of covered tokens is a duplicate
    /// (compared as a 32-bit float, as Onion does: see [`DedupParams::is_over`]).
    pub threshold: f64,
    pub smoothing: bool,
    /// Longest run of kept units (in tokens) that smoothing marks.
    pub max_stub: u32,
}

impl DedupParams {
    /// Whether `covered` of `tokens` tokens is over the threshold. Onion
    /// keeps its threshold in a C `float` and compares the share, a
    /// `double`, with it; doing the same makes a share that equals a
    /// threshold like 0.9 (not exact in binary) fall on Onion's side.
    pub fn is_over(&self, covered: u32, tokens: u32) -> bool {
        tokens > 0 && f64::from(covered) / f64::from(tokens) > f64::from(self.threshold as f32)
    }
}

/// An occurrence of a duplicate n-gram: its start (token position in the document) and index ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NgramAt {
    pub pos: u32,
    pub id: u32,
}

/// The verdict on one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnitVerdict {
    /// Tokens covered by n-grams seen before.
    pub covered: u32,
    /// Duplicate by the n-gram test or the exact test.
    pub duplicate: bool,
    /// Kept by the tests but marked by smoothing.
    pub smoothed: bool,
}

impl UnitVerdict {
    /// Whether the unit goes (duplicate or smoothed).
    pub fn removed(&self) -> bool {
        self.duplicate || self.smoothed
    }
}

/// A set of n-gram IDs, one bit each.
#[derive(Debug, Default)]
struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    fn with_len(len: usize) -> Self {
        BitSet { words: vec![0; len.div_ceil(64)] }
    }

    #[inline]
    fn contains(&self, id: u32) -> bool {
        self.words[(id / 64) as usize] & (1 << (id % 64)) != 0
    }

    /// Sets `id`; returns whether it was set already.
    #[inline]
    fn insert(&mut self, id: u32) -> bool {
        let w = &mut self.words[(id / 64) as usize];
        let bit = 1 << (id % 64);
        let had = *w & bit != 0;
        *w |= bit;
        had
    }
}

/// A [`BitSet`] that remembers what was set, so clearing it costs what was
/// set since the last clear, not the whole set.
#[derive(Debug, Default)]
struct ScratchSet {
    bits: BitSet,
    set: Vec<u32>,
}

impl ScratchSet {
    /// Sets `id`; returns whether it was set already.
    #[inline]
    fn insert(&mut self, id: u32) -> bool {
        let had = self.bits.insert(id);
        if !had {
            self.set.push(id);
        }
        had
    }

    fn clear(&mut self) {
        for &id in &self.set {
            self.bits.words[(id / 64) as usize] = 0;
        }
        self.set.clear();
    }
}

/// Walks the corpus document by document and decides its units.
#[derive(Debug)]
pub struct Marker {
    params: DedupParams,
    /// Duplicate n-grams that occur in kept text so far.
    kept: BitSet,
    /// Duplicate n-grams seen earlier in the current document.
    local: ScratchSet,
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl Marker {
    /// A marker for a corpus whose duplicate-only index holds `ngrams` n-grams.
    pub fn new(params: DedupParams, ngrams: usize) -> Self {
        Marker {
            params,
            kept: BitSet::with_len(ngrams),
            local: ScratchSet { bits: BitSet::with_len(ngrams), set: Vec::new() },
            starts: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Bytes of memory it holds.
    pub fn heap_bytes(&self) -> usize {
        (self.kept.words.capacity() + self.local.bits.words.capacity()) * 8 + self.local.set.capacity() * 4
    }

    /// Bytes a marker for an index of `ngrams` n-grams holds.
    pub fn bytes_for(ngrams: u64) -> u64 {
        ngrams.div_ceil(64) * 16
    }

    /// Decides the units of the next document. `units[i]` is the token
    /// count of unit `i`, `ngrams` the document's duplicate n-gram
    /// occurrences sorted by position, `exact[i]` whether unit `i` repeats an
    /// earlier unit's exact text. Returns one verdict per unit.
    pub fn document(&mut self, units: &[u32], ngrams: &[NgramAt], exact: &[bool]) -> Vec<UnitVerdict> {
        let n = self.params.n;
        self.starts.clear();
        self.ends.clear();
        let mut at = 0;
        for &len in units {
            self.starts.push(at);
            at += len;
            self.ends.push(at);
        }
        let mut verdicts = vec![UnitVerdict::default(); units.len()];
        // Covered tokens per unit: union of seen n-grams ending in the unit, clipped to its start.
        let mut covered_to = vec![0u32; units.len()];
        let mut unit = 0;
        for g in ngrams {
            let last = g.pos + n - 1;
            while unit < units.len() && self.ends[unit] <= last {
                unit += 1;
            }
            let seen_here = self.local.insert(g.id);
            if unit == units.len() || !(seen_here || self.kept.contains(g.id)) {
                continue;
            }
            let from = g.pos.max(self.starts[unit]).max(covered_to[unit]);
            let to = g.pos + n;
            if to > from {
                verdicts[unit].covered += to - from;
                covered_to[unit] = to;
            }
        }
        for (i, v) in verdicts.iter_mut().enumerate() {
            v.duplicate = self.params.is_over(v.covered, units[i]) || exact.get(i).copied().unwrap_or(false);
        }
        if self.params.smoothing {
            smooth(&mut verdicts, units, self.params.max_stub);
        }
        // What is kept becomes what later text is compared with.
        let mut unit = 0;
        for g in ngrams {
            let last = g.pos + n - 1;
            while unit < units.len() && self.ends[unit] <= last {
                unit += 1;
            }
            if unit < units.len() && !verdicts[unit].removed() {
                self.kept.insert(g.id);
            }
        }
        self.local.clear();
        verdicts
    }
}

/// Whether a document keeps no text: no kept unit holds a token. A kept
/// unit of no tokens (an empty `<p></p>`) keeps nothing, as in Onion 1.2,
/// whose document tags go with the document only when "at least one good
/// paragraph" of some length remains.
pub fn nothing_kept(units: &[u32], verdicts: &[UnitVerdict]) -> bool {
    !units.iter().zip(verdicts).any(|(&tokens, v)| tokens > 0 && !v.removed())
}

/// Marks runs of kept units of at most `max_stub` tokens that lie between
/// two boundaries: duplicates, or the document's edges. This is Onion 1.2's
/// loop: its `last_bad_par` starts one before the first unit, and a virtual
/// boundary stands one past the last, so a short document is marked whole
/// even when nothing in it repeats.
fn smooth(verdicts: &mut [UnitVerdict], units: &[u32], max_stub: u32) {
    let mut run_start = 0;
    let mut run_tokens = 0u32;
    for i in 0..=verdicts.len() {
        if i == verdicts.len() || verdicts[i].duplicate {
            if run_tokens <= max_stub {
                for v in &mut verdicts[run_start..i] {
                    v.smoothed = true;
                }
            }
            run_start = i + 1;
            run_tokens = 0;
        } else {
            run_tokens = run_tokens.saturating_add(units[i]);
        }
    }
}

/// Benko's plain fingerprint of a unit, built token by token: the tokens
/// with every character that is not a letter (or combining mark) removed,
/// empty ones dropped, hashed with XXH3-128. Equal fingerprints are taken as
/// equal text: two different texts are confused only by an XXH3-128 collision.
pub struct ExactHasher {
    hasher: Xxh3,
    letters: String,
}

impl Default for ExactHasher {
    fn default() -> Self {
        ExactHasher { hasher: Xxh3::new(), letters: String::new() }
    }
}

impl ExactHasher {
    pub fn add(&mut self, token: &str) {
        self.letters.clear();
        self.letters.extend(token.chars().filter(|&c| c.is_alphabetic() || is_mark(c)));
        if !self.letters.is_empty() {
            self.hasher.update(self.letters.as_bytes());
            self.hasher.update(&[0]);
        }
    }

    /// The fingerprint so far; the hasher starts again.
    pub fn finish(&mut self) -> u128 {
        let digest = self.hasher.digest128();
        self.hasher.reset();
        digest
    }
}

/// [`ExactHasher`] over a whole unit.
pub fn exact_fingerprint<'a>(tokens: impl IntoIterator<Item = &'a str>) -> u128 {
    let mut h = ExactHasher::default();
    for token in tokens {
        h.add(token);
    }
    h.finish()
}

fn is_mark(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    !c.is_ascii() && matches!(get_general_category(c), G::NonspacingMark | G::SpacingMark | G::EnclosingMark)
}

#[cfg(test)]
mod tests;
