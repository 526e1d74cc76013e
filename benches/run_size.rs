//! Run file size: which word ID order makes runs smallest.
//!
//! Writes every distinct n-gram of a generated corpus as one run, with word
//! IDs numbered (a) by decreasing frequency, as dupgram's lexicon does, and
//! (b) in order of first appearance, and prints bytes per n-gram and per
//! token for several n. `cargo bench --bench run_size`.

mod common;

use std::io::Cursor;
use std::path::Path;

use dupgram_chunker::{Chunk, KeyLayout, KeyWindow};
use dupgram_runs::{RunHeader, RunWriter};

fn run_bytes<const L: usize>(docs: &[Vec<u32>], max_id: u32, n: usize) -> (u64, u64) {
    let layout = KeyLayout::new(n, max_id).unwrap();
    let mut chunk = Chunk::<L>::new(layout, usize::MAX >> 8);
    for d in docs {
        let mut w = KeyWindow::<L>::new(layout);
        for &id in d {
            if let Some(k) = w.push(id) {
                chunk.push(k);
            }
        }
    }
    let mut writer =
        RunWriter::new(Cursor::new(Vec::new()), Path::new("bench"), RunHeader::counts(n as u8, 0)).unwrap();
    let counts = chunk.drain_sorted(|g, c| writer.push(g, c)).unwrap();
    let (_, summary) = writer.finish().unwrap();
    (summary.bytes, counts.distinct)
}

fn measure(docs: &[Vec<u32>], max_id: u32, n: usize) -> (u64, u64) {
    match KeyLayout::new(n, max_id).unwrap().words() {
        1 => run_bytes::<1>(docs, max_id, n),
        2 => run_bytes::<2>(docs, max_id, n),
        3 => run_bytes::<3>(docs, max_id, n),
        4 => run_bytes::<4>(docs, max_id, n),
        w => panic!("the bench does not instantiate {w}-word keys"),
    }
}

fn main() {
    let count = common::scale(2_000_000);
    let by_freq = common::tokens(count, 7, false);
    let by_first = common::tokens(count, 7, true);
    let tokens: usize = by_freq.docs.iter().map(Vec::len).sum();
    println!("run size, {tokens} tokens, every distinct n-gram written once");
    println!();
    println!("| n | ID order | bytes per n-gram | bytes per token | vs frequency order |");
    println!("|---:|---|---:|---:|---:|");
    for n in [1, 5, 10] {
        let (freq_bytes, distinct) = measure(&by_freq.docs, by_freq.max_id, n);
        let (first_bytes, distinct2) = measure(&by_first.docs, by_first.max_id, n);
        assert_eq!(distinct, distinct2);
        for (name, bytes) in [("frequency (dupgram)", freq_bytes), ("first seen", first_bytes)] {
            println!(
                "| {n} | {name} | {:.2} | {:.2} | {:.2}× |",
                bytes as f64 / distinct as f64,
                bytes as f64 / tokens as f64,
                bytes as f64 / freq_bytes as f64
            );
        }
    }
}
