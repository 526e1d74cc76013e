//! The second pass's data structures: which duplicate n-grams each document
//! holds, and the exact scores of document pairs.
//!
//! Bernstein & Zobel's SPEX observation, as Pomikálek & Rychlý use it: an
//! n-gram that occurs once in the corpus cannot be shared by two documents,
//! so an index of the duplicate n-grams alone finds every pair of documents
//! that shares text — and scores it exactly, because every shared n-gram is
//! in it. The index is a small fraction of a full one (the pipeline reports
//! the fraction).
//!
//! A [`DocBlock`] is the document-major view of that index for a range of
//! documents: for each document, its duplicate n-grams (by ID) and their
//! positions, sorted by n-gram. From two such lists [`score`] computes what
//! Kupietz (2005) defines, with no fingerprints involved:
//!
//! * **SSCR** — tokens of A and B covered by occurrences of their shared
//!   n-grams, over all tokens of A and B (§2.4);
//! * **SSR** — `|S_A ∩ S_B| / |S_A ∪ S_B|`, Broder's resemblance (§2.3);
//! * **containment** of A in B, `|S_A ∩ S_B| / |S_A|`, and of B in A;
//! * **coverage** of A and of B on their own (the two halves of SSCR).
//!
//! `S_X`, the set of *all* n-grams of X, is never materialised: every n-gram
//! X holds twice is a duplicate of the corpus and so in the index, hence
//! `|S_X| = positions(X) − (duplicate occurrences in X − duplicate types in X)`.

mod block;
mod union_find;

pub use block::{
    CountMismatch, DocBlock, DocBlockBuilder, DocStats, Occurrence, PairCounts, PairScores, ScoreScratch, score,
};
pub use union_find::UnionFind;
