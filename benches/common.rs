//! Shared by the benchmarks: a token stream with realistic duplication, and timing.

#![allow(dead_code)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use dupgram_testkit::{Corpus, CorpusSpec};

/// Word IDs of a generated corpus, numbered by decreasing frequency (as the
/// lexicon does), with each document's words; `first_seen` numbers them in
/// order of first appearance instead.
pub struct Tokens {
    pub docs: Vec<Vec<u32>>,
    pub max_id: u32,
}

pub fn tokens(count: u64, seed: u64, first_seen: bool) -> Tokens {
    let spec = CorpusSpec { seed, tokens: count, vocabulary: 200_000, ..CorpusSpec::default() };
    let docs: Vec<Vec<u32>> = Corpus::new(spec).map(|d| d.words).collect();
    let mut freq: HashMap<u32, (u64, usize)> = HashMap::new();
    let mut order = 0;
    for &w in docs.iter().flatten() {
        let e = freq.entry(w).or_insert_with(|| {
            order += 1;
            (0, order)
        });
        e.0 += 1;
    }
    let mut ranked: Vec<(u32, (u64, usize))> = freq.into_iter().collect();
    if first_seen {
        ranked.sort_by_key(|&(_, (_, first))| first);
    } else {
        ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
    }
    let id: HashMap<u32, u32> = ranked.iter().enumerate().map(|(i, &(w, _))| (w, i as u32)).collect();
    let docs = docs.into_iter().map(|d| d.into_iter().map(|w| id[&w]).collect()).collect();
    Tokens { docs, max_id: ranked.len() as u32 - 1 }
}

/// Median wall time of `runs` calls.
pub fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Iterations from the environment (`DUPGRAM_BENCH_RUNS`), default 5.
pub fn runs() -> usize {
    std::env::var("DUPGRAM_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

/// Scale from the environment (`DUPGRAM_BENCH_TOKENS`), default as given.
pub fn scale(default: u64) -> u64 {
    std::env::var("DUPGRAM_BENCH_TOKENS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
