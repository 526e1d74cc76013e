//! Sorting a chunk's n-grams: which in-memory sort the chunker should use.
//!
//! Candidates, on the same generated tokens (Zipf words, 30 % copied text):
//! * `libsais` suffix array over the word IDs (integer alphabet), then a
//!   scan grouping equal n-grams — the paper's design, with the fastest
//!   suffix-array builder there is;
//! * positions sorted by comparing their n-gram slices (`sort_unstable_by`);
//! * packed n-gram keys (`dupgram-chunker`), `sort_unstable` — what dupgram uses;
//! * packed keys bucketed by their top 16 bits (one MSD radix pass), then
//!   `sort_unstable` per bucket;
//! * prefix doubling limited to depth n (Manber–Myers / Larsson–Sadakane
//!   style): ranks of 1-, 2-, 4-, 8-grams, then of n-grams, each round a sort
//!   of (rank, rank) pairs;
//! * an LSD radix sort of positions: one stable counting sort per word of
//!   the n-gram, last word first.
//!
//! Every method must find the same distinct n-grams and counts; the run
//! checks that before printing. `cargo bench --bench chunk_sort`;
//! `DUPGRAM_BENCH_TOKENS` sets the size (default 4M).
//!
//! A second table is about long n (`dedup --unit span`, K = 50 words and
//! more): the repeated n-grams for n = 10 … 256, by packed keys (while they
//! fit the chunker's 1024 bits), by a suffix array with a scan of
//! neighbours, by positions sorted by slices, and by 128-bit hashes of the
//! n-grams sorted with their positions and then verified against the text.

mod common;

use dupgram_chunker::{Chunk, KeyLayout, KeyWindow};

const N: usize = 10;

/// (distinct n-grams, a checksum of them with their counts).
type Digest = (u64, u64);

fn digest_of(groups: impl Iterator<Item = (Vec<u32>, u64)>) -> Digest {
    let mut d = (0u64, 0u64);
    for (g, c) in groups {
        let h = g.iter().fold(0xcbf29ce484222325u64, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x100000001b3));
        d.0 += 1;
        d.1 = d.1.wrapping_add(h.wrapping_mul(c | 1).rotate_left(c as u32 % 63));
    }
    d
}

/// All n-gram start positions of the flat text (documents separated by u32::MAX).
fn positions(text: &[u32]) -> Vec<u32> {
    (0..text.len().saturating_sub(N - 1))
        .filter(|&p| text[p..p + N].iter().all(|&x| x != u32::MAX))
        .map(|p| p as u32)
        .collect()
}

fn group_sorted(text: &[u32], order: impl Iterator<Item = usize>) -> Digest {
    let mut out = Vec::new();
    let mut current: Option<(&[u32], u64)> = None;
    for p in order {
        let g = &text[p..p + N];
        match &mut current {
            Some((c, count)) if *c == g => *count += 1,
            _ => {
                if let Some((c, count)) = current.take() {
                    out.push((c.to_vec(), count));
                }
                current = Some((g, 1));
            }
        }
    }
    out.extend(current.map(|(c, n)| (c.to_vec(), n)));
    digest_of(out.into_iter())
}

fn with_libsais(text: &[u32]) -> Digest {
    // The separator becomes the largest symbol; IDs fit in i32.
    let sep = text.iter().filter(|&&x| x != u32::MAX).max().copied().unwrap_or(0) + 1;
    let mut t: Vec<i32> = text.iter().map(|&x| if x == u32::MAX { sep as i32 } else { x as i32 }).collect();
    let sa = libsais::SuffixArrayConstruction::for_text_mut(&mut t)
        .in_owned_buffer32()
        .single_threaded()
        .run()
        .expect("libsais runs")
        .into_vec();
    group_sorted(
        text,
        sa.into_iter()
            .map(|p| p as usize)
            .filter(|&p| p + N <= text.len() && text[p..p + N].iter().all(|&x| x != u32::MAX)),
    )
}

fn with_slice_sort(text: &[u32]) -> Digest {
    let mut pos = positions(text);
    pos.sort_unstable_by(|&a, &b| text[a as usize..a as usize + N].cmp(&text[b as usize..b as usize + N]));
    group_sorted(text, pos.into_iter().map(|p| p as usize))
}

/// Ranks (equivalence classes) of every position's prefix of `len` words,
/// by doubling; positions too close to a document end rank as u32::MAX.
fn with_doubling(text: &[u32]) -> Digest {
    let len = text.len();
    let mut rank: Vec<u32> = text.to_vec();
    let mut known = 1;
    let mut order: Vec<u32> = (0..len as u32).collect();
    let mut keyed: Vec<(u64, u32)> = Vec::with_capacity(len);
    while known < N {
        // Combine the rank of prefix `known` at i with that of prefix `step` at i + known.
        let step = known.min(N - known);
        let step_rank = if step == known { rank.clone() } else { prefix_rank(text, step) };
        keyed.clear();
        for i in 0..len {
            let a = rank[i];
            let b = if i + known < len { step_rank[i + known] } else { u32::MAX };
            let key = if a == u32::MAX || b == u32::MAX { u64::MAX } else { (u64::from(a) << 32) | u64::from(b) };
            keyed.push((key, i as u32));
        }
        keyed.sort_unstable();
        let mut next = 0u32;
        for j in 0..len {
            let (key, i) = keyed[j];
            if key == u64::MAX {
                rank[i as usize] = u32::MAX;
                continue;
            }
            if j > 0 && keyed[j - 1].0 != key {
                next += 1;
            }
            rank[i as usize] = next;
        }
        known += step;
        order = keyed.iter().map(|&(_, i)| i).collect();
    }
    group_sorted(text, order.into_iter().map(|p| p as usize).filter(|&p| rank[p] != u32::MAX))
}

/// Ranks of the prefixes of `len` words (for the last, shorter doubling step).
fn prefix_rank(text: &[u32], len: usize) -> Vec<u32> {
    let mut rank = vec![u32::MAX; text.len()];
    let mut pos: Vec<u32> = (0..text.len().saturating_sub(len - 1))
        .filter(|&p| text[p..p + len].iter().all(|&x| x != u32::MAX))
        .map(|p| p as u32)
        .collect();
    pos.sort_unstable_by(|&a, &b| text[a as usize..a as usize + len].cmp(&text[b as usize..b as usize + len]));
    let mut next = 0;
    for (j, &p) in pos.iter().enumerate() {
        if j > 0 && text[pos[j - 1] as usize..pos[j - 1] as usize + len] != text[p as usize..p as usize + len] {
            next += 1;
        }
        rank[p as usize] = next;
    }
    rank
}

/// One stable counting sort of positions per word of the n-gram, last word first.
fn with_radix_positions(text: &[u32], max_id: u32) -> Digest {
    let mut pos = positions(text);
    let mut scratch = vec![0u32; pos.len()];
    let mut counts = vec![0usize; max_id as usize + 2];
    for column in (0..N).rev() {
        counts.iter_mut().for_each(|c| *c = 0);
        for &p in &pos {
            counts[text[p as usize + column] as usize + 1] += 1;
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        for &p in &pos {
            let slot = &mut counts[text[p as usize + column] as usize];
            scratch[*slot] = p;
            *slot += 1;
        }
        std::mem::swap(&mut pos, &mut scratch);
    }
    group_sorted(text, pos.into_iter().map(|p| p as usize))
}

fn keys<const L: usize>(layout: KeyLayout, docs: &[Vec<u32>], keep: impl Fn(usize) -> bool) -> Vec<[u64; L]> {
    let mut out = Vec::new();
    let mut i = 0;
    for d in docs {
        let mut w = KeyWindow::<L>::new(layout);
        for &id in d {
            if let Some(k) = w.push(id) {
                if keep(i) {
                    out.push(k);
                }
                i += 1;
            }
        }
    }
    out
}

fn with_keys<const L: usize>(layout: KeyLayout, docs: &[Vec<u32>], keep: impl Fn(usize) -> bool) -> Digest {
    let all = keys::<L>(layout, docs, keep);
    let mut chunk = Chunk::<L>::new(layout, all.len());
    for k in all {
        chunk.push(k);
    }
    let mut out = Vec::new();
    chunk
        .drain_sorted::<()>(|g, c| {
            out.push((g.to_vec(), c));
            Ok(())
        })
        .unwrap();
    digest_of(out.into_iter())
}

fn with_keys_bucketed<const L: usize>(layout: KeyLayout, docs: &[Vec<u32>]) -> Digest {
    let mut all = keys::<L>(layout, docs, |_| true);
    let bits = N * layout.width() as usize;
    // The top 16 occupied bits of each key choose its bucket.
    let top = |k: &[u64; L]| -> usize {
        let shift = bits.saturating_sub(16);
        let (word, within) = (L - 1 - shift / 64, shift % 64);
        let mut v = k[word] >> within;
        if within > 48 && word > 0 {
            v |= k[word - 1] << (64 - within);
        }
        (v & 0xffff) as usize
    };
    let mut counts = vec![0usize; 1 << 16];
    for k in &all {
        counts[top(k)] += 1;
    }
    let mut starts = vec![0usize; (1 << 16) + 1];
    for b in 0..1 << 16 {
        starts[b + 1] = starts[b] + counts[b];
    }
    let mut sorted = vec![[0u64; L]; all.len()];
    let mut next = starts.clone();
    for k in all.drain(..) {
        let b = top(&k);
        sorted[next[b]] = k;
        next[b] += 1;
    }
    for b in 0..1 << 16 {
        sorted[starts[b]..starts[b + 1]].sort_unstable();
    }
    let mut ids = vec![0u32; N];
    let mut out: Vec<(Vec<u32>, u64)> = Vec::new();
    for k in &sorted {
        layout.unpack(k, &mut ids);
        match out.last_mut() {
            Some((g, c)) if *g == ids => *c += 1,
            _ => out.push((ids.clone(), 1)),
        }
    }
    digest_of(out.into_iter())
}

/// Long n: (repeated n-grams, occurrences of them, sum of their first positions).
type LongDigest = (u64, u64, u64);

/// Groups of equal n-grams, handed over as runs of positions in sorted order.
fn long_digest(text: &[u32], n: usize, order: impl Iterator<Item = usize>) -> LongDigest {
    let mut d = (0, 0, 0);
    let mut group: Vec<usize> = Vec::new();
    let mut flush = |group: &mut Vec<usize>| {
        if group.len() >= 2 {
            d.0 += 1;
            d.1 += group.len() as u64;
            d.2 += *group.iter().min().expect("a group") as u64;
        }
        group.clear();
    };
    for p in order {
        if let Some(&q) = group.first()
            && text[q..q + n] != text[p..p + n]
        {
            flush(&mut group);
        }
        group.push(p);
    }
    flush(&mut group);
    d
}

fn long_positions(text: &[u32], n: usize) -> Vec<u32> {
    let mut out = Vec::new();
    let mut run = 0;
    for (i, &x) in text.iter().enumerate() {
        run = if x == u32::MAX { 0 } else { run + 1 };
        if run >= n {
            out.push((i + 1 - n) as u32);
        }
    }
    out
}

fn long_libsais(text: &[u32], n: usize) -> LongDigest {
    let sep = text.iter().filter(|&&x| x != u32::MAX).max().copied().unwrap_or(0) + 1;
    let mut t: Vec<i32> = text.iter().map(|&x| if x == u32::MAX { sep as i32 } else { x as i32 }).collect();
    let sa = libsais::SuffixArrayConstruction::for_text_mut(&mut t)
        .in_owned_buffer32()
        .single_threaded()
        .run()
        .expect("libsais runs")
        .into_vec();
    let valid = long_positions(text, n);
    let mut ok = vec![false; text.len()];
    for p in valid {
        ok[p as usize] = true;
    }
    long_digest(text, n, sa.into_iter().map(|p| p as usize).filter(|&p| ok[p]))
}

fn long_slices(text: &[u32], n: usize) -> LongDigest {
    let mut pos = long_positions(text, n);
    pos.sort_unstable_by(|&a, &b| text[a as usize..a as usize + n].cmp(&text[b as usize..b as usize + n]));
    long_digest(text, n, pos.into_iter().map(|p| p as usize))
}

/// What `dedup --unit span` does: a 128-bit hash per n-gram, sorted with its
/// position (24 bytes an n-gram in a real chunk); groups then verified.
fn long_hashes(text: &[u32], n: usize) -> LongDigest {
    let bytes: Vec<u8> = text.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut keyed: Vec<(u128, u32)> = long_positions(text, n)
        .into_iter()
        .map(|p| (xxhash_rust::xxh3::xxh3_128(&bytes[p as usize * 4..(p as usize + n) * 4]), p))
        .collect();
    keyed.sort_unstable();
    // Verification: within a group of equal hashes, long_digest compares the text.
    long_digest(text, n, keyed.into_iter().map(|(_, p)| p as usize))
}

fn long_keys<const L: usize>(docs: &[Vec<u32>], n: usize, max_id: u32) -> LongDigest {
    let layout = KeyLayout::new(n, max_id).expect("the key fits");
    assert_eq!(layout.words(), L);
    let mut keyed: Vec<([u64; L], u32)> = Vec::new();
    let mut at = 0u32;
    for d in docs {
        let mut w = KeyWindow::<L>::new(layout);
        for (i, &id) in d.iter().enumerate() {
            if let Some(k) = w.push(id) {
                keyed.push((k, at + (i + 1 - n) as u32));
            }
        }
        at += d.len() as u32 + 1;
    }
    keyed.sort_unstable();
    let mut d = (0, 0, 0);
    let mut i = 0;
    while i < keyed.len() {
        let mut j = i + 1;
        while j < keyed.len() && keyed[j].0 == keyed[i].0 {
            j += 1;
        }
        if j - i >= 2 {
            d.0 += 1;
            d.1 += (j - i) as u64;
            d.2 += u64::from(keyed[i..j].iter().map(|e| e.1).min().expect("a group"));
        }
        i = j;
    }
    d
}

fn long_n(t: &common::Tokens, text: &[u32], runs: usize) {
    let width = 32 - t.max_id.leading_zeros();
    println!();
    println!("Long n (dedup --unit span): repeated n-grams, key width {width} bits, median of {runs}");
    println!();
    println!("| n | method | M n-grams/s | memory per n-gram |");
    println!("|---:|---|---:|---:|");
    for n in [10usize, 20, 50, 100, 256] {
        let count = long_positions(text, n).len() as f64;
        let expect = long_slices(text, n);
        let report = |name: &str, bytes: String, f: &dyn Fn() -> LongDigest| {
            assert_eq!(f(), expect, "{name} disagrees at n = {n}");
            let time = common::median(runs, || {
                std::hint::black_box(f());
            });
            println!("| {n} | {name} | {:.1} | {bytes} |", count / time.as_secs_f64() / 1e6);
        };
        report("libsais suffix array + scan", "4 B + text (every token)".into(), &|| long_libsais(text, n));
        report("positions, slice comparison", "4 B + text".into(), &|| long_slices(text, n));
        report("128-bit hashes + position, verified", "24 B (20 B here)".into(), &|| long_hashes(text, n));
        let words = KeyLayout::new(n, t.max_id).map(|l| l.words()).unwrap_or(0);
        let name = format!("packed keys ({words} words)");
        let bytes = format!("{} B", words * 8 + 4);
        match words {
            3 => report(&name, bytes, &|| long_keys::<3>(&t.docs, n, t.max_id)),
            4 => report(&name, bytes, &|| long_keys::<4>(&t.docs, n, t.max_id)),
            6 => report(&name, bytes, &|| long_keys::<6>(&t.docs, n, t.max_id)),
            8 => report(&name, bytes, &|| long_keys::<8>(&t.docs, n, t.max_id)),
            12 => report(&name, bytes, &|| long_keys::<12>(&t.docs, n, t.max_id)),
            16 => report(&name, bytes, &|| long_keys::<16>(&t.docs, n, t.max_id)),
            _ => println!("| {n} | packed keys | — | over the chunker's 1024 bits |"),
        }
    }
}

fn main() {
    if std::env::var_os("DUPGRAM_BENCH_LONG_ONLY").is_some() {
        let count = common::scale(4_000_000);
        let t = common::tokens(count, 42, false);
        let text: Vec<u32> = t.docs.iter().flat_map(|d| d.iter().copied().chain([u32::MAX])).collect();
        long_n(&t, &text, common::runs());
        return;
    }
    let count = common::scale(4_000_000);
    let runs = common::runs();
    let t = common::tokens(count, 42, false);
    let text: Vec<u32> = t.docs.iter().flat_map(|d| d.iter().copied().chain([u32::MAX])).collect();
    let layout = KeyLayout::new(N, t.max_id).unwrap();
    assert_eq!(layout.words(), 3, "the bench instantiates keys of 3 words");
    let ngrams = positions(&text).len() as f64;
    let expect = with_slice_sort(&text);
    println!(
        "chunk sort, {count} tokens, n = {N}, {} distinct n-grams, key width {} bits, median of {runs}",
        expect.0,
        layout.width()
    );
    println!();
    println!("| method | M n-grams/s | memory per n-gram |");
    println!("|---|---:|---:|");
    let report = |name: &str, bytes: &str, f: &dyn Fn() -> Digest| {
        assert_eq!(f(), expect, "{name} disagrees");
        let time = common::median(runs, || {
            std::hint::black_box(f());
        });
        println!("| {name} | {:.1} | {bytes} |", ngrams / time.as_secs_f64() / 1e6);
    };
    report("libsais suffix array + scan", "8 B (text + SA, every token)", &|| with_libsais(&text));
    report("positions, slice comparison", "8 B (text + positions)", &|| with_slice_sort(&text));
    report("prefix doubling to depth n", "20 B (text, ranks, pairs)", &|| with_doubling(&text));
    report("positions, LSD radix by word", "12 B (text + 2 × positions)", &|| with_radix_positions(&text, t.max_id));
    report("packed keys, sort_unstable (dupgram)", "24 B (kept n-grams only)", &|| {
        with_keys::<3>(layout, &t.docs, |_| true)
    });
    report("packed keys, 16-bit buckets + sort_unstable", "48 B", &|| with_keys_bucketed::<3>(layout, &t.docs));
    // What the sieve changes: a key sort pays only for the n-grams kept; a
    // suffix array is built over every token whatever is kept.
    let kept = |i: usize| (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> 58 < 23; // about 36 %
    let time = common::median(runs, || {
        std::hint::black_box(with_keys::<3>(layout, &t.docs, kept));
    });
    println!(
        "| packed keys, 36 % kept by the sieve | {:.1} (per n-gram of the text) | 24 B per kept n-gram |",
        ngrams / time.as_secs_f64() / 1e6
    );
    long_n(&t, &text, runs);
}
