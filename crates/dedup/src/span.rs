//! Repeated passages cut out word-exactly, the first copy kept
//! (`dedup --unit span`).
//!
//! The corpus is walked in order. An occurrence of a K-gram (K consecutive
//! tokens of one document) is *seen* when the same K-gram occurred before
//! either in text that was kept — all K of its tokens kept, in a document
//! that was kept — or anywhere earlier in the same document, kept or not.
//! Every token covered by a seen occurrence is removed; the removed tokens
//! form maximal runs, the *spans*. This is Onion's rule at the level of
//! tokens: only kept text is remembered for later documents, so the first
//! copy of anything always stays, and a passage repeated inside one document
//! keeps its first copy only.
//!
//! Then whole documents: one left with fewer than `min_tokens` tokens, or
//! with more than `threshold` of its tokens in spans (compared as for units,
//! as a 32-bit float: see [`crate::DedupParams::is_over`]), goes whole, and
//! nothing of it is remembered. K-grams never cross documents; they do cross
//! paragraphs and sentences, which the span rule does not look at.
//!
//! The marker sees only the K-grams that occur twice or more in the corpus,
//! numbered by the caller: a K-gram that occurs once can never have occurred
//! before, so the others are all a document needs.

use std::ops::Range;

use crate::{BitSet, NgramAt, ScratchSet};

/// How spans and documents are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanParams {
    /// Words per K-gram: the shortest passage removed.
    pub k: u32,
    /// A document with more than this share of its tokens in spans goes whole.
    pub threshold: f64,
    /// A document left with fewer tokens goes whole.
    pub min_tokens: u32,
}

impl SpanParams {
    fn is_over(&self, removed: u32, tokens: u32) -> bool {
        tokens > 0 && f64::from(removed) / f64::from(tokens) > f64::from(self.threshold as f32)
    }
}

/// The verdict on one document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpanVerdict {
    /// Tokens in the document.
    pub tokens: u32,
    /// Runs of removed tokens (positions in the document), ascending, disjoint, not adjacent.
    pub spans: Vec<Range<u32>>,
    /// The document goes whole (too short, or over the threshold, once the spans are cut).
    pub whole: bool,
}

impl SpanVerdict {
    /// Tokens in spans.
    pub fn span_tokens(&self) -> u32 {
        self.spans.iter().map(|s| s.end - s.start).sum()
    }

    /// Tokens removed: all of them when the document goes whole.
    pub fn removed_tokens(&self) -> u32 {
        if self.whole { self.tokens } else { self.span_tokens() }
    }

    /// Whether nothing of the document is kept: it goes whole, or every
    /// token is in a span. A document without tokens keeps its (empty) text.
    pub fn nothing_kept(&self) -> bool {
        self.whole || (self.tokens > 0 && self.span_tokens() == self.tokens)
    }
}

/// Walks the corpus document by document and cuts its repeated spans.
#[derive(Debug)]
pub struct SpanMarker {
    params: SpanParams,
    /// K-grams that occur in kept text so far.
    kept: BitSet,
    /// K-grams seen earlier in the current document.
    local: ScratchSet,
}

impl SpanMarker {
    /// A marker for a corpus with `kgrams` repeated K-grams, numbered `0..kgrams`.
    pub fn new(params: SpanParams, kgrams: usize) -> Self {
        SpanMarker {
            params,
            kept: BitSet::with_len(kgrams),
            local: ScratchSet { bits: BitSet::with_len(kgrams), set: Vec::new() },
        }
    }

    /// Bytes a marker for `kgrams` repeated K-grams holds (its two bit sets).
    pub fn bytes_for(kgrams: u64) -> u64 {
        kgrams.div_ceil(64) * 16
    }

    /// Decides the next document of `tokens` tokens, whose repeated K-gram
    /// occurrences are `kgrams` (start position and ID), sorted by position.
    pub fn document(&mut self, tokens: u32, kgrams: &[NgramAt]) -> SpanVerdict {
        let k = self.params.k;
        let mut spans: Vec<Range<u32>> = Vec::new();
        for g in kgrams {
            let seen_here = self.local.insert(g.id);
            if !(seen_here || self.kept.contains(g.id)) {
                continue;
            }
            let covered = g.pos..g.pos + k;
            match spans.last_mut() {
                // Overlapping or adjacent: one span.
                Some(last) if covered.start <= last.end => last.end = last.end.max(covered.end),
                _ => spans.push(covered),
            }
        }
        let mut verdict = SpanVerdict { tokens, spans, whole: false };
        let left = tokens - verdict.span_tokens();
        verdict.whole = left < self.params.min_tokens || self.params.is_over(verdict.span_tokens(), tokens);
        if !verdict.whole {
            self.remember_kept(kgrams, &verdict.spans);
        }
        self.local.clear();
        verdict
    }

    /// Adds the K-grams all of whose tokens are kept to what later documents are compared with.
    fn remember_kept(&mut self, kgrams: &[NgramAt], spans: &[Range<u32>]) {
        let k = self.params.k;
        let mut span = 0;
        for g in kgrams {
            // Spans wholly before this occurrence cannot touch it or any later one.
            while span < spans.len() && spans[span].end <= g.pos {
                span += 1;
            }
            let touches = spans.get(span).is_some_and(|s| s.start < g.pos + k);
            if !touches {
                self.kept.insert(g.id);
            }
        }
    }
}
