//! Test and benchmark support: a deterministic corpus generator with
//! planted duplication, and reference implementations simple enough to
//! trust, which the engine is checked against.

pub mod generate;
pub mod naive;

pub use generate::{Corpus, CorpusSpec, Doc, SplitMix};
pub use naive::{NaiveOptions, NaivePairOptions, NaiveScores, naive_ngrams, naive_pairs};
