use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const HEADER: RunHeader = RunHeader { n: 2, lexicon_id: 7, kind: dupgram_runs::RunKind::Counts };

fn write(dir: &Path, name: &str, entries: &BTreeMap<Vec<u32>, u64>) -> RunFile {
    let path = dir.join(name);
    let mut w = RunWriter::create(&path, HEADER).unwrap();
    for (g, c) in entries {
        w.push(g, *c).unwrap();
    }
    let (_, s) = w.finish().unwrap();
    RunFile { path, bytes: s.bytes, depth: 0 }
}

struct Collect(Vec<(Vec<u32>, u64)>);
impl MergeSink for Collect {
    type Error = RunError;
    fn accept(&mut self, ngram: &[u32], count: u64, _: &[u64]) -> Result<(), RunError> {
        self.0.push((ngram.to_vec(), count));
        Ok(())
    }
}

struct CollectPostings(Vec<(Vec<u32>, Vec<u64>)>);
impl MergeSink for CollectPostings {
    type Error = RunError;
    fn accept(&mut self, ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), RunError> {
        assert_eq!(count as usize, occurrences.len());
        self.0.push((ngram.to_vec(), occurrences.to_vec()));
        Ok(())
    }
}

fn runs_strategy() -> impl Strategy<Value = Vec<BTreeMap<Vec<u32>, u64>>> {
    prop::collection::vec(prop::collection::btree_map(prop::collection::vec(0u32..6, 2), 1u64..5, 0..20), 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn merge_sums_like_a_map(runs in runs_strategy(), fan_in in 2usize..5) {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<RunFile> = runs.iter().enumerate().map(|(i, r)| write(dir.path(), &format!("r{i}"), r)).collect();
        let mut expect: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for r in &runs {
            for (g, c) in r {
                *expect.entry(g.clone()).or_default() += c;
            }
        }
        let mut next = 0;
        let mut sink = Collect(Vec::new());
        let report = merge_all(files, HEADER, fan_in, || { next += 1; dir.path().join(format!("m{next}")) }, &mut sink, &()).unwrap();
        prop_assert_eq!(sink.0, expect.into_iter().collect::<Vec<_>>());
        if runs.len() > fan_in {
            prop_assert!(report.intermediate_merges > 0 && report.passes >= 2);
        } else {
            prop_assert_eq!(report.passes, 1);
        }
        // Every run, input and intermediate, is gone.
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn postings_merge_into_sorted_lists(runs in prop::collection::vec(prop::collection::btree_map(prop::collection::vec(0u32..4, 2), prop::collection::btree_set(0u64..200, 1..6), 0..10), 0..9), fan_in in 2usize..4) {
        let dir = tempfile::tempdir().unwrap();
        let header = RunHeader::postings(2, 7);
        let mut expect: BTreeMap<Vec<u32>, std::collections::BTreeSet<u64>> = BTreeMap::new();
        let mut files = Vec::new();
        let mut taken = std::collections::HashSet::new();
        for (i, r) in runs.iter().enumerate() {
            let path = dir.path().join(format!("p{i}"));
            let mut w = RunWriter::create(&path, header).unwrap();
            for (g, occ) in r {
                // An occurrence belongs to one run only, as a (document, position) does.
                let occ: Vec<u64> = occ.iter().map(|o| o * 16 + i as u64).filter(|o| taken.insert((g.clone(), *o))).collect();
                if occ.is_empty() { continue; }
                w.push_postings(g, &occ).unwrap();
                expect.entry(g.clone()).or_default().extend(occ);
            }
            let (_, s) = w.finish().unwrap();
            files.push(RunFile { path, bytes: s.bytes, depth: 0 });
        }
        let mut next = 0;
        let mut sink = CollectPostings(Vec::new());
        merge_all(files, header, fan_in, || { next += 1; dir.path().join(format!("m{next}")) }, &mut sink, &()).unwrap();
        let expect: Vec<(Vec<u32>, Vec<u64>)> = expect.into_iter().map(|(g, o)| (g, o.into_iter().collect())).collect();
        prop_assert_eq!(sink.0, expect);
    }

    #[test]
    fn loser_tree_yields_sorted_order(mut lists in prop::collection::vec(prop::collection::vec(0u32..100, 0..10), 1..20)) {
        for l in &mut lists { l.sort(); }
        let mut pos = vec![0usize; lists.len()];
        let key = |pos: &[usize], i: usize| lists[i].get(pos[i]).copied().unwrap_or(u32::MAX);
        let mut tree = LoserTree::new(lists.len(), |a, b| (key(&pos, a), a) < (key(&pos, b), b));
        let mut out = Vec::new();
        loop {
            let w = tree.winner();
            if key(&pos, w) == u32::MAX { break; }
            out.push(key(&pos, w));
            pos[w] += 1;
            tree.replay(w, |a, b| (key(&pos, a), a) < (key(&pos, b), b));
        }
        let mut all: Vec<u32> = lists.concat();
        all.sort();
        prop_assert_eq!(out, all);
    }
}

#[test]
fn mismatched_runs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = write(dir.path(), "a", &BTreeMap::from([(vec![1, 2], 1)]));
    let other = RunHeader { n: 2, lexicon_id: 8, kind: dupgram_runs::RunKind::Counts };
    let mut sink = Collect(Vec::new());
    let err = merge_all(vec![r], other, 4, || dir.path().join("x"), &mut sink, &()).unwrap_err();
    assert!(err.to_string().contains("another job"), "{err}");
}

#[test]
fn interrupt_stops_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let big: BTreeMap<Vec<u32>, u64> = (0..100_000u32).map(|i| (vec![i, i], 1)).collect();
    let r = write(dir.path(), "a", &big);
    let stop = std::sync::atomic::AtomicBool::new(true);
    let mut sink = Collect(Vec::new());
    let err = merge_all(vec![r], HEADER, 4, || dir.path().join("x"), &mut sink, &stop).unwrap_err();
    assert!(matches!(err, MergeError::Interrupted));
}
