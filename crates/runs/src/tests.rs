use super::*;
use proptest::prelude::*;
use std::io::Cursor;
use std::path::Path;

const HEADER: RunHeader = RunHeader { n: 3, lexicon_id: 0xfeed, kind: RunKind::Counts };

fn write_run(entries: &[(Vec<u32>, u64)], header: RunHeader) -> Vec<u8> {
    let mut w = RunWriter::new(Vec::new(), Path::new("mem"), header).unwrap();
    for (g, c) in entries {
        w.push(g, *c).unwrap();
    }
    w.finish().unwrap().0
}

fn read_run(bytes: Vec<u8>) -> Result<Vec<(Vec<u32>, u64)>, RunError> {
    let mut r = RunReader::new(Cursor::new(bytes), Path::new("mem"))?;
    let mut out = Vec::new();
    while r.advance()? {
        out.push((r.ngram().to_vec(), r.count()));
    }
    Ok(out)
}

fn sorted_entries(n: usize, max_id: u32) -> impl Strategy<Value = Vec<(Vec<u32>, u64)>> {
    prop::collection::btree_map(prop::collection::vec(0..=max_id, n), 1u64..1_000_000, 0..3000)
        .prop_map(|m| m.into_iter().collect())
}

fn postings_strategy() -> impl Strategy<Value = Vec<(Vec<u32>, Vec<u64>)>> {
    // Up to 600 occurrences an entry: more than one group of the writer's (256).
    let occs = prop::collection::btree_set((0u64..40, 0u64..5000).prop_map(|(d, p)| (d << 32) | p), 1..600);
    prop::collection::btree_map(prop::collection::vec(0u32..20, 3), occs, 0..100)
        .prop_map(|m| m.into_iter().map(|(g, o)| (g, o.into_iter().collect())).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn postings_round_trip(entries in postings_strategy(), big in any::<bool>()) {
        let header = RunHeader::postings(3, 9);
        let entries: Vec<(Vec<u32>, Vec<u64>)> = if big {
            entries.into_iter().map(|(g, o)| (g, o.into_iter().map(|x| x | (0xffff_f000u64 << 32) | 0xffff_0000).collect())).collect()
        } else { entries };
        let mut w = RunWriter::new(Vec::new(), Path::new("mem"), header).unwrap();
        for (g, o) in &entries {
            w.push_postings(g, o).unwrap();
        }
        prop_assert!(w.push(&[99, 99, 99], 1).is_err(), "counts do not go into a postings run");
        let bytes = w.finish().unwrap().0;
        let mut r = RunReader::new(Cursor::new(bytes), Path::new("mem")).unwrap();
        prop_assert_eq!(r.header(), header);
        let mut got = Vec::new();
        while r.advance().unwrap() {
            prop_assert_eq!(r.count() as usize, r.occurrences().len());
            got.push((r.ngram().to_vec(), r.occurrences().to_vec()));
        }
        prop_assert_eq!(got, entries);
    }

    #[test]
    fn round_trip(entries in sorted_entries(3, 50)) {
        let bytes = write_run(&entries, HEADER);
        prop_assert_eq!(read_run(bytes).unwrap(), entries);
    }

    #[test]
    fn round_trip_large_ids(entries in sorted_entries(3, u32::MAX)) {
        let bytes = write_run(&entries, HEADER);
        prop_assert_eq!(read_run(bytes).unwrap(), entries);
    }

    #[test]
    fn any_flipped_byte_is_detected(entries in sorted_entries(3, 1000), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        prop_assume!(!entries.is_empty());
        let mut bytes = write_run(&entries, HEADER);
        let at = pos.index(bytes.len());
        bytes[at] ^= 1 << bit;
        // Reserved bytes are not covered by checksums; everything else is.
        let reserved = (11..16).contains(&at) || (28..32).contains(&at) || at >= bytes.len() - 4;
        let result = read_run(bytes);
        if !reserved {
            prop_assert!(result.is_err(), "flip at byte {} went unnoticed", at);
        }
    }

    #[test]
    fn any_truncation_is_detected(entries in sorted_entries(3, 1000), cut in any::<prop::sample::Index>()) {
        let bytes = write_run(&entries, HEADER);
        let keep = cut.index(bytes.len());
        prop_assert!(read_run(bytes[..keep].to_vec()).is_err());
    }
}

#[test]
fn many_blocks() {
    let entries: Vec<(Vec<u32>, u64)> =
        (0..200_000u32).map(|i| (vec![i / 1000, i % 1000, i * 7], u64::from(i % 5) + 1)).collect();
    let bytes = write_run(&entries, HEADER);
    let mut r = RunReader::new(Cursor::new(bytes.clone()), Path::new("mem")).unwrap();
    assert_eq!(r.len(), 200_000);
    assert!(r.advance().unwrap());
    assert_eq!(read_run(bytes).unwrap(), entries);
}

#[test]
fn empty_run_round_trips() {
    let bytes = write_run(&[], HEADER);
    assert_eq!(bytes.len() as u64, HEADER_LEN + FOOTER_LEN);
    assert!(read_run(bytes).unwrap().is_empty());
}

#[test]
fn out_of_order_and_bad_shapes_are_refused() {
    let mut w = RunWriter::new(Vec::new(), Path::new("mem"), HEADER).unwrap();
    w.push(&[1, 2, 3], 1).unwrap();
    assert!(matches!(w.push(&[1, 2, 3], 1), Err(RunError::BadEntry { .. })));
    assert!(matches!(w.push(&[1, 2, 2], 1), Err(RunError::BadEntry { .. })));
    assert!(matches!(w.push(&[1, 2], 1), Err(RunError::BadEntry { .. })));
    assert!(matches!(w.push(&[1, 2, 4], 0), Err(RunError::BadEntry { .. })));
    w.push(&[1, 2, 4], 1).unwrap();
}

#[test]
fn foreign_runs_are_rejected() {
    let bytes = write_run(&[(vec![1, 2, 3], 2)], HEADER);
    let r = RunReader::new(Cursor::new(bytes), Path::new("mem")).unwrap();
    let other = RunHeader { n: 3, lexicon_id: 1, kind: RunKind::Counts };
    let err = r.expect_header(other).unwrap_err().to_string();
    assert!(err.contains("another job"), "{err}");
    assert!(matches!(
        read_run(b"hello world, not a run file at all....................................".to_vec()),
        Err(RunError::BadMagic { .. })
    ));
}

#[test]
fn errors_name_the_file_and_offset() {
    let entries: Vec<(Vec<u32>, u64)> = (0..1000u32).map(|i| (vec![i, 0, 0], 1)).collect();
    let mut bytes = write_run(&entries, HEADER);
    let at = HEADER_LEN as usize + 20;
    bytes[at] ^= 0xff;
    let err = RunReader::new(Cursor::new(bytes), Path::new("/tmp/run-7.dgr")).and_then(|mut r| {
        while r.advance()? {}
        Ok(())
    });
    let msg = err.unwrap_err().to_string();
    assert!(msg.starts_with("/tmp/run-7.dgr: corrupt run file at byte 32"), "{msg}");
}

/// Blocks on disk of a file.
#[cfg(target_os = "linux")]
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// Writes a run of ~16 MB to `path`: entries whose IDs and counts are
/// scattered, so that they do not compress to nothing.
#[cfg(target_os = "linux")]
fn write_scattered_run(path: &Path, entries: u32) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = RunWriter::new(file, path, HEADER).unwrap();
    for i in 0..entries {
        let h = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        w.push(&[i, (h >> 33) as u32, (h >> 2) as u32 & 0x7fff_ffff], ((h >> 20) & 0xffff_ffff) + 1).unwrap();
    }
    w.finish().unwrap();
}

/// A run opened to be consumed gives its blocks back as it is read, every
/// entry still checked and in order; a run with another name keeps them.
#[cfg(target_os = "linux")]
#[test]
fn a_consumed_run_gives_back_what_was_read_unless_linked() {
    let dir = tempfile::tempdir().unwrap();
    if !reclaim::can_punch_holes(dir.path()) {
        eprintln!("skipped: this file system cannot punch holes");
        return;
    }
    let path = dir.path().join("run.dgr");
    let entries = 1_000_000;
    write_scattered_run(&path, entries);
    let whole = disk_bytes(&path);
    assert!(whole >= 8_000_000, "{whole}");
    let read_all = |r: &mut RunReader<std::fs::File>, path: &Path| {
        let (mut seen, mut least) = (0u32, u64::MAX);
        while r.advance().unwrap() {
            assert_eq!(r.ngram()[0], seen);
            seen += 1;
            if seen % 4096 == 0 {
                least = least.min(disk_bytes(path));
            }
        }
        assert_eq!(seen, entries);
        least
    };
    let least = read_all(&mut RunReader::open_consumed(&path).unwrap(), &path);
    assert!(least < whole / 4, "{least} of {whole} bytes left on disk");

    write_scattered_run(&path, entries);
    let link = dir.path().join("kept.dgr");
    // What a task keeps for a rerun, read through a second name.
    reclaim::second_name(&path, &link).unwrap();
    read_all(&mut RunReader::open_consumed(&path).unwrap(), &path);
    assert!(disk_bytes(&link) >= whole, "a linked run lost blocks");
    // Plainly opened, nothing is given back either.
    std::fs::remove_file(&link).unwrap();
    read_all(&mut RunReader::open(&path).unwrap(), &path);
    assert!(disk_bytes(&path) >= whole);
}
