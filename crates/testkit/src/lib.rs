//! Test and benchmark support: a deterministic corpus generator with
//! planted duplication, and reference implementations simple enough to
//! trust, which the engine is checked against.

pub mod generate;
pub mod naive;

pub use generate::{Corpus, CorpusSpec, Doc, SplitMix};
pub use naive::{NaiveOptions, NaivePairOptions, NaiveScores, naive_every_pair, naive_ngrams, naive_pairs};

/// A hasher for keys that are already well-mixed 64-bit hashes (n-gram
/// fingerprints): it hashes them as they are. The baselines' hash tables use it.
#[derive(Default)]
pub struct Identity(u64);

impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
