//! `dupgram-hashcount`: the in-memory baseline of the benchmark. It reads a
//! corpus with dupgram's own reader and tokenizer and counts 64-bit
//! fingerprints of n-grams in a hash map — fast, but its memory grows with
//! the number of distinct n-grams, and two n-grams whose fingerprints
//! collide are counted as one (it reports counts, not exact n-grams).
//!
//!     dupgram-hashcount corpus.jsonl.zst -n 10

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use dupgram_testkit::Identity;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use dupgram_corpus::{Batch, CorpusReader, Input, ReadOptions};
use dupgram_lexicon::{Normalization, Tokenizer};
use xxhash_rust::xxh3::xxh3_64;

fn main() -> anyhow::Result<()> {
    let mut n = 10usize;
    let mut inputs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-n" => n = args.next().ok_or_else(|| anyhow::anyhow!("-n needs a value"))?.parse()?,
            path => inputs.push(Input::Path(path.into())),
        }
    }
    anyhow::ensure!(!inputs.is_empty(), "usage: dupgram-hashcount INPUT... [-n N]");
    let mut reader = CorpusReader::new(inputs, ReadOptions::default(), Arc::new(AtomicU64::new(0)));
    let mut tokenizer = Tokenizer::new(Normalization::default());
    let mut counts: HashMap<u64, u32, BuildHasherDefault<Identity>> = HashMap::default();
    let mut window: Vec<u64> = Vec::with_capacity(n);
    let mut batch = Batch::default();
    let mut tokens = 0u64;
    while reader.fill(&mut batch, 1 << 20)? {
        for piece in &batch.pieces {
            let mut emit = |w: &str| {
                tokens += 1;
                if window.len() == n {
                    window.remove(0);
                }
                window.push(xxh3_64(w.as_bytes()));
                if window.len() == n {
                    let fp = window.iter().fold(0u64, |h, &w| h.rotate_left(5) ^ w.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    *counts.entry(fp).or_default() += 1;
                }
            };
            tokenizer.feed(batch.piece_text(piece), &mut emit);
            if piece.last {
                tokenizer.finish(&mut emit);
                window.clear();
            }
        }
    }
    let (types, occurrences) =
        counts.values().filter(|&&c| c >= 2).fold((0u64, 0u64), |(t, o), &c| (t + 1, o + u64::from(c)));
    println!(
        "tokens\t{tokens}\ndistinct\t{}\nduplicate_types\t{types}\nduplicate_occurrences\t{occurrences}",
        counts.len()
    );
    Ok(())
}
