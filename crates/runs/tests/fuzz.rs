//! Run files meet hostile input: thousands of mutated counts and postings
//! runs (see `dupgram_fuzzkit`), each refused with an error naming the
//! file, or read in strictly increasing order; never a panic, a hang, or a
//! huge allocation.

use std::path::Path;

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_runs::{FOOTER_LEN, HEADER_LEN, RunError, RunHeader, RunReader, RunWriter};

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

fn regressions(target: &str) -> String {
    format!("{}/tests/fuzz-regressions/{target}", env!("CARGO_MANIFEST_DIR"))
}

/// An entry as read: n-gram, count, occurrences.
type Entry = (Vec<u32>, u64, Vec<u64>);

/// Reads every entry, checking what a reader promises its callers.
fn read_all(path: &Path) -> Result<Vec<Entry>, RunError> {
    let mut reader = RunReader::open(path)?;
    let n = usize::from(reader.header().n);
    let mut entries: Vec<Entry> = Vec::new();
    while reader.advance()? {
        let (ngram, occurrences) = (reader.ngram(), reader.occurrences());
        assert_eq!(ngram.len(), n);
        assert!(reader.count() >= 1, "an entry with count 0");
        if let Some(last) = entries.last() {
            assert!(last.0.as_slice() < ngram, "entries out of order: {:?} then {ngram:?}", last.0);
        }
        assert!(occurrences.windows(2).all(|w| w[0] < w[1]), "occurrences out of order: {occurrences:?}");
        entries.push((ngram.to_vec(), reader.count(), occurrences.to_vec()));
    }
    assert!(entries.len() as u64 == reader.len(), "the footer's entry count disagrees with the entries read");
    Ok(entries)
}

fn counts_run(entries: impl IntoIterator<Item = (Vec<u32>, u64)>, n: u8) -> Vec<u8> {
    let mut w = RunWriter::new(Vec::new(), Path::new("seed"), RunHeader::counts(n, 0xfeed)).unwrap();
    let sorted: std::collections::BTreeMap<Vec<u32>, u64> = entries.into_iter().collect();
    for (g, c) in sorted {
        w.push(&g, c).unwrap();
    }
    w.finish().unwrap().0
}

fn postings_run(entries: impl IntoIterator<Item = (Vec<u32>, Vec<u64>)>, n: u8) -> Vec<u8> {
    let mut w = RunWriter::new(Vec::new(), Path::new("seed"), RunHeader::postings(n, 0xbeef)).unwrap();
    for (g, o) in entries {
        w.push_postings(&g, &o).unwrap();
    }
    w.finish().unwrap().0
}

#[test]
fn counts_runs_survive_mutation() {
    let small: Vec<(Vec<u32>, u64)> =
        (0..60u32).map(|i| (vec![i / 10, (i * 7) % 13 + i, 1_000_000 * (i % 3)], u64::from(i % 4) + 1)).collect();
    let wide: Vec<(Vec<u32>, u64)> =
        (0..40u32).map(|i| (vec![i, u32::MAX - i], u64::MAX / 64 + u64::from(i))).collect();
    // Two blocks: the second starts with a whole n-gram again.
    let two_blocks: Vec<(Vec<u32>, u64)> = (0..40_000u32).map(|i| (vec![i, i % 7], 1)).collect();
    let seeds = vec![counts_run(small, 3), counts_run(wide, 2), counts_run([], 4), counts_run(two_blocks, 2)];
    Fuzz::new("runs-counts", "run.dgr", seeds)
        .cases(3000)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::reseal)
        .regressions(regressions("counts"))
        .run(read_all);
}

#[test]
fn postings_runs_survive_mutation() {
    let occurrences = |i: u64| (0..1 + i % 5).map(|k| ((i + k * 3) << 32) | (k * 100 + i)).collect::<Vec<u64>>();
    let small: Vec<(Vec<u32>, Vec<u64>)> = (0..50u64).map(|i| (vec![i as u32, 7], occurrences(i))).collect();
    let far: Vec<(Vec<u32>, Vec<u64>)> =
        vec![(vec![0, 0, 1], vec![0, u64::from(u32::MAX), u64::MAX - 1, u64::MAX]), (vec![u32::MAX; 3], vec![5 << 32])];
    let seeds = vec![postings_run(small, 2), postings_run(far, 3), postings_run([], 1)];
    Fuzz::new("runs-postings", "postings.dgr", seeds)
        .cases(3000)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::reseal)
        .regressions(regressions("postings"))
        .run(read_all);
}

#[test]
fn a_huge_block_length_is_refused_without_allocating_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.dgr");
    let mut bytes = counts_run([(vec![1, 2], 3)], 2);
    let at = HEADER_LEN as usize;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, dupgram_runs::reseal(&bytes)).unwrap();
    let (result, peak) = dupgram_fuzzkit::measure(|| read_all(&path));
    let err = result.unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("implausible block header"), "{err}");
    assert!(peak < 1 << 20, "{peak} bytes held");
}

/// A postings run of one block holding `payload`, with correct checksums and totals.
fn one_block_postings(payload: &[u8], entries: u32, total_count: u64) -> Vec<u8> {
    let mut bytes = postings_run([], 1);
    let footer = bytes.split_off(HEADER_LEN as usize);
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&entries.to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(payload);
    bytes.extend_from_slice(&footer);
    let at = bytes.len() - FOOTER_LEN as usize;
    bytes[at + 8..at + 16].copy_from_slice(&1u64.to_le_bytes());
    bytes[at + 16..at + 24].copy_from_slice(&u64::from(entries).to_le_bytes());
    bytes[at + 24..at + 32].copy_from_slice(&total_count.to_le_bytes());
    dupgram_runs::reseal(&bytes)
}

#[test]
fn huge_steps_between_occurrences_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.dgr");
    // The last document, then a step to the next document of u64::MAX − 1;
    // then, in one document, a step in position of u64::MAX.
    let mut next_doc = dupgram_runs::BitWriter::default();
    next_doc.write_delta(1);
    next_doc.write_gamma(2);
    next_doc.write_delta(1 << 32);
    next_doc.write_delta(1);
    next_doc.write_gamma(u64::MAX);
    next_doc.write_delta(1);
    let mut next_pos = dupgram_runs::BitWriter::default();
    next_pos.write_delta(1);
    next_pos.write_gamma(2);
    next_pos.write_delta(1);
    next_pos.write_delta(1 << 32);
    next_pos.write_gamma(1);
    next_pos.write_gamma(u64::MAX);
    for (payload, name) in [(next_doc.finish(), "doc-step-overflow"), (next_pos.finish(), "position-step-overflow")] {
        let file = one_block_postings(&payload, 1, 2);
        // The same files are kept among the regressions.
        let kept = std::fs::read(format!("{}/{name}.dgr", regressions("postings"))).unwrap();
        assert_eq!(file, kept, "{name}");
        std::fs::write(&path, file).unwrap();
        let err = read_all(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("corrupt run file"), "{err}");
    }
}

/// Reads every print of a print run, checking what its reader promises.
fn read_prints(path: &Path) -> Result<Vec<(u64, bool)>, RunError> {
    let mut reader = dupgram_runs::prints::PrintReader::open(path)?;
    let width = reader.width();
    let mut prints: Vec<(u64, bool)> = Vec::new();
    while let Some((print, repeated)) = reader.next_print()? {
        assert!(print >> width == 0, "a print past the width");
        assert!(prints.last().is_none_or(|&(last, _)| last < print), "prints out of order");
        prints.push((print, repeated));
    }
    Ok(prints)
}

fn print_run(prints: impl IntoIterator<Item = u64>, width: u32, rice: u32) -> Vec<u8> {
    let mut w = dupgram_runs::prints::PrintWriter::new(Vec::new(), Path::new("seed"), width, rice).unwrap();
    let sorted: std::collections::BTreeSet<u64> = prints.into_iter().collect();
    for p in sorted {
        w.push(p, p % 3 == 1).unwrap();
    }
    w.finish().unwrap().2
}

#[test]
fn print_runs_survive_mutation() {
    let small = (0..80u64).map(|i| i * 7919 % 100_000);
    let wide = (0..30u64).map(|i| (1 << 40) - 1 - i * 1_000_003);
    // Two blocks: the second starts with a whole print again.
    let two_blocks = (0..200_000u64).map(|i| i * 5);
    let seeds =
        vec![print_run(small, 20, 8), print_run(wide, 40, 30), print_run([], 30, 3), print_run(two_blocks, 26, 2)];
    Fuzz::new("runs-prints", "prints.dgp", seeds)
        .cases(3000)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::prints::reseal)
        .regressions(regressions("prints"))
        .run(read_prints);
}
