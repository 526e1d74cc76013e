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
