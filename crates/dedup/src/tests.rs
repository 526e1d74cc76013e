use super::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// Documents as units of word tokens.
type Corpus = Vec<Vec<Vec<u32>>>;

/// Numbers the n-grams occurring twice or more in the corpus, in first-seen
/// order (any numbering does: the marker only compares IDs).
fn index(corpus: &Corpus, n: usize) -> HashMap<Vec<u32>, u32> {
    let mut counts: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut order = Vec::new();
    for doc in corpus {
        let tokens: Vec<u32> = doc.concat();
        for g in tokens.windows(n) {
            let c = counts.entry(g.to_vec()).or_insert(0);
            if *c == 0 {
                order.push(g.to_vec());
            }
            *c += 1;
        }
    }
    order.into_iter().filter(|g| counts[g] >= 2).enumerate().map(|(i, g)| (g, i as u32)).collect()
}

fn run_marker(corpus: &Corpus, params: DedupParams) -> Vec<Vec<UnitVerdict>> {
    let n = params.n as usize;
    let ids = index(corpus, n);
    let mut marker = Marker::new(params, ids.len());
    corpus
        .iter()
        .map(|doc| {
            let units: Vec<u32> = doc.iter().map(|u| u.len() as u32).collect();
            let tokens: Vec<u32> = doc.concat();
            let ngrams: Vec<NgramAt> = tokens
                .windows(n)
                .enumerate()
                .filter_map(|(p, g)| ids.get(g).map(|&id| NgramAt { pos: p as u32, id }))
                .collect();
            marker.document(&units, &ngrams, &[])
        })
        .collect()
}

/// Onion's procedure, written the obvious way over n-gram values.
fn onion(corpus: &Corpus, params: DedupParams) -> Vec<Vec<bool>> {
    let n = params.n as usize;
    let mut kept: HashSet<Vec<u32>> = HashSet::new();
    let mut out = Vec::new();
    for doc in corpus {
        let tokens: Vec<u32> = doc.concat();
        let mut unit_of = Vec::new();
        for (u, unit) in doc.iter().enumerate() {
            unit_of.extend(std::iter::repeat_n(u, unit.len()));
        }
        let start_of: Vec<usize> = doc
            .iter()
            .scan(0, |at, u| {
                let s = *at;
                *at += u.len();
                Some(s)
            })
            .collect();
        let mut local: HashSet<Vec<u32>> = HashSet::new();
        let mut covered: Vec<HashSet<usize>> = vec![HashSet::new(); doc.len()];
        for p in 0..tokens.len().saturating_sub(n - 1) {
            let g = tokens[p..p + n].to_vec();
            let unit = unit_of[p + n - 1];
            if local.contains(&g) || kept.contains(&g) {
                for t in p.max(start_of[unit])..p + n {
                    covered[unit].insert(t);
                }
            }
            local.insert(g);
        }
        let mut bad: Vec<bool> = doc
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                !unit.is_empty() && covered[u].len() as f64 / unit.len() as f64 > f64::from(params.threshold as f32)
            })
            .collect();
        if params.smoothing {
            let orig = bad.clone();
            let mut run: Vec<usize> = Vec::new();
            for (u, &dup) in orig.iter().chain(std::iter::once(&true)).enumerate() {
                if dup {
                    if run.iter().map(|&r| doc[r].len()).sum::<usize>() as u32 <= params.max_stub {
                        for &r in &run {
                            bad[r] = true;
                        }
                    }
                    run.clear();
                } else {
                    run.push(u);
                }
            }
        }
        for p in 0..tokens.len().saturating_sub(n - 1) {
            if !bad[unit_of[p + n - 1]] {
                kept.insert(tokens[p..p + n].to_vec());
            }
        }
        out.push(bad);
    }
    out
}

fn corpus_strategy() -> impl Strategy<Value = Corpus> {
    let unit = prop::collection::vec(0u32..6, 0..12);
    let doc = prop::collection::vec(unit, 1..6);
    prop::collection::vec(doc, 1..8)
}

proptest! {
    #[test]
    fn marker_equals_onion(corpus in corpus_strategy(), n in 1u32..5, threshold in prop_oneof![Just(0.0), Just(0.5), Just(0.9)], smoothing: bool, max_stub in 0u32..8) {
        let params = DedupParams { n, threshold, smoothing, max_stub };
        let got: Vec<Vec<bool>> = run_marker(&corpus, params).into_iter().map(|d| d.into_iter().map(|v| v.removed()).collect()).collect();
        prop_assert_eq!(got, onion(&corpus, params));
    }
}

const P: DedupParams = DedupParams { n: 3, threshold: 0.5, smoothing: false, max_stub: 2 };

fn removed(corpus: &Corpus, params: DedupParams) -> Vec<Vec<bool>> {
    run_marker(corpus, params).into_iter().map(|d| d.into_iter().map(|v| v.removed()).collect()).collect()
}

#[test]
fn first_instance_is_kept_and_copies_go() {
    let p1 = vec![1, 2, 3, 4, 5];
    let p2 = vec![6, 7, 8, 9];
    let corpus = vec![vec![p1.clone(), p2.clone()], vec![p1.clone(), vec![20, 21, 22, 23]], vec![p2.clone()]];
    assert_eq!(removed(&corpus, P), vec![vec![false, false], vec![true, false], vec![true]]);
}

#[test]
fn repetition_within_a_document_counts() {
    let p = vec![1, 2, 3, 4, 5];
    assert_eq!(removed(&vec![vec![p.clone(), vec![9, 9], p.clone()]], P), vec![vec![false, false, true]]);
}

#[test]
fn removed_text_is_not_remembered() {
    let a = vec![1, 2, 3, 4, 5, 6];
    let b = vec![7, 8, 9, 10];
    // Doc 2 copies doc 1's paragraph with b appended: removed as a whole (6 of 10 tokens covered).
    // Doc 3 has b alone: b occurred only in removed text, so it is kept.
    let corpus = vec![vec![a.clone()], vec![[a.clone(), b.clone()].concat()], vec![b.clone()]];
    assert_eq!(removed(&corpus, P), vec![vec![false], vec![true], vec![false]]);
}

#[test]
fn threshold_is_strict() {
    let a = vec![1, 2, 3, 4];
    // Half of the second unit is covered: not more than 0.5.
    let corpus = vec![vec![a.clone()], vec![[a.clone(), vec![10, 11, 12, 13]].concat()]];
    assert_eq!(removed(&corpus, P), vec![vec![false], vec![false]]);
    let strict = DedupParams { threshold: 0.49, ..P };
    assert_eq!(removed(&corpus, strict), vec![vec![false], vec![true]]);
}

#[test]
fn ngrams_from_the_previous_unit_cover_only_this_unit() {
    // Unit boundaries inside a repeated passage: the n-gram ending in unit 2 covers its first token only.
    let corpus = vec![vec![vec![1, 2, 3, 4]], vec![vec![1, 2, 3], vec![4, 50, 51, 52]]];
    let v = run_marker(&corpus, P);
    assert_eq!((v[1][0].covered, v[1][1].covered), (3, 1));
}

#[test]
fn smoothing_between_duplicates_and_document_edges() {
    let dup = vec![1, 2, 3, 4, 5, 6];
    let smooth = DedupParams { smoothing: true, max_stub: 2, ..P };
    let corpus = vec![
        vec![dup.clone()],
        // dup, short, dup, long, short (edge)
        vec![dup.clone(), vec![30, 31], dup.clone(), vec![40, 41, 42], vec![50]],
        // No duplicate at all, but no longer than --max-stub: Onion 1.2 marks it whole.
        vec![vec![60, 61]],
        // The same text again is kept: the removed copy's n-grams were not remembered.
        vec![vec![60, 61, 62, 63]],
    ];
    assert_eq!(
        removed(&corpus, smooth),
        vec![vec![false], vec![true, true, true, false, false], vec![true], vec![false]]
    );
    let v = run_marker(&corpus, smooth);
    assert!(v[1][1].smoothed && !v[1][1].duplicate);
    assert!(v[2][0].smoothed && !v[2][0].duplicate);
}

#[test]
fn short_stubs_at_both_edges_and_max_stub_zero() {
    let dup = vec![1, 2, 3, 4, 5, 6];
    let corpus = vec![
        vec![dup.clone()],
        // A short first unit before a duplicate, a long kept one, a short last one after it.
        vec![vec![70, 71], dup.clone(), vec![72, 73, 74], vec![75]],
        // Exactly --max-stub tokens in its only unit.
        vec![vec![80, 81]],
        // Empty units only.
        vec![vec![], vec![]],
    ];
    let stub2 = DedupParams { smoothing: true, max_stub: 2, ..P };
    assert_eq!(
        removed(&corpus, stub2),
        vec![vec![false], vec![true, true, false, false], vec![true], vec![true, true]]
    );
    // --max-stub 0 marks only runs of empty units (and only between boundaries).
    let stub0 = DedupParams { smoothing: true, max_stub: 0, ..P };
    assert_eq!(
        removed(&corpus, stub0),
        vec![vec![false], vec![false, true, false, false], vec![false], vec![true, true]]
    );
}

#[test]
fn threshold_is_compared_as_onions_float() {
    // 9 of 10 tokens covered: 0.9 as a double equals the share, as Onion's float it is below it.
    let mut marker = Marker::new(DedupParams { threshold: 0.9, ..P }, 0);
    let params = DedupParams { threshold: 0.9, ..P };
    assert!(params.is_over(9, 10));
    assert!(!params.is_over(8, 10));
    assert!(!params.is_over(0, 0));
    assert!(marker.document(&[10], &[], &[]).iter().all(|v| !v.removed()));
}

#[test]
fn exact_units_combine_with_the_ngram_test() {
    let mut marker = Marker::new(P, 0);
    let v = marker.document(&[2, 3], &[], &[true, false]);
    assert_eq!(v.iter().map(|v| v.removed()).collect::<Vec<_>>(), vec![true, false]);
}

#[test]
fn fingerprints_ignore_digits_and_punctuation() {
    assert_eq!(exact_fingerprint(["19.30", "Noviny", "STV"]), exact_fingerprint(["23.45", "Noviny", "STV"]));
    assert_eq!(
        exact_fingerprint(["12.", "Marseille", "14", "5", "13:13"]),
        exact_fingerprint(["15.", "Marseille", "15", "4", "13:15"])
    );
    assert_ne!(exact_fingerprint(["Noviny", "STV"]), exact_fingerprint(["NovinySTV"]));
    assert_ne!(exact_fingerprint(["a"]), exact_fingerprint(["b"]));
}

/// The span rule written the obvious way over K-gram values: the definition
/// [`SpanMarker`] must meet. Returns each document's removed-token flags and
/// whether it went whole.
fn span_walk(corpus: &[Vec<u32>], params: SpanParams) -> Vec<(Vec<bool>, bool)> {
    let k = params.k as usize;
    let mut kept: HashSet<&[u32]> = HashSet::new();
    let mut out = Vec::new();
    for doc in corpus {
        let mut local: HashSet<&[u32]> = HashSet::new();
        let mut removed = vec![false; doc.len()];
        for (p, g) in doc.windows(k).enumerate() {
            if local.contains(g) || kept.contains(g) {
                removed[p..p + k].iter_mut().for_each(|r| *r = true);
            }
            local.insert(g);
        }
        let cut = removed.iter().filter(|&&r| r).count();
        let whole = doc.len() - cut < params.min_tokens as usize
            || (!doc.is_empty() && cut as f64 / doc.len() as f64 > f64::from(params.threshold as f32));
        if !whole {
            for (p, g) in doc.windows(k).enumerate() {
                if !removed[p..p + k].iter().any(|&r| r) {
                    kept.insert(g);
                }
            }
        }
        out.push((removed, whole));
    }
    out
}

fn run_span_marker(corpus: &[Vec<u32>], params: SpanParams) -> Vec<SpanVerdict> {
    let k = params.k as usize;
    let as_units: Corpus = corpus.iter().map(|d| vec![d.clone()]).collect();
    let ids = index(&as_units, k);
    let mut marker = SpanMarker::new(params, ids.len());
    corpus
        .iter()
        .map(|doc| {
            let kgrams: Vec<NgramAt> = doc
                .windows(k)
                .enumerate()
                .filter_map(|(p, g)| ids.get(g).map(|&id| NgramAt { pos: p as u32, id }))
                .collect();
            marker.document(doc.len() as u32, &kgrams)
        })
        .collect()
}

/// Documents of random words from a small vocabulary, with passages copied
/// from earlier text (or earlier in the same document) planted at random.
fn planted_corpus(k: usize) -> impl Strategy<Value = Vec<Vec<u32>>> {
    let doc = prop::collection::vec(0u32..50, 0..60);
    (
        prop::collection::vec(doc, 1..12),
        prop::collection::vec((any::<u16>(), any::<u16>(), any::<u16>(), 0usize..4), 0..20),
    )
        .prop_map(move |(mut docs, plants)| {
            for (from, at, start, len_class) in plants {
                let len = [k - 1, k, k + 1, 3 * k][len_class];
                let source: Vec<u32> = docs[..=(from as usize % docs.len())].concat();
                if source.len() < len {
                    continue;
                }
                let s = start as usize % (source.len() - len + 1);
                let passage = source[s..s + len].to_vec();
                let target = (from as usize + at as usize) % docs.len();
                let pos = at as usize % (docs[target].len() + 1);
                docs[target].splice(pos..pos, passage);
            }
            docs
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn span_marker_equals_the_walk(
        (k, corpus) in (1usize..6).prop_flat_map(|k| (Just(k), planted_corpus(k))),
        min_tokens in prop_oneof![Just(0u32), 0u32..20],
        threshold in prop_oneof![Just(1.0f64), 0.0f64..1.0],
    ) {
        let params = SpanParams { k: k as u32, threshold, min_tokens };
        let walked = span_walk(&corpus, params);
        let marked = run_span_marker(&corpus, params);
        for ((removed, whole), verdict) in walked.iter().zip(&marked) {
            let mut flags = vec![false; verdict.tokens as usize];
            for s in &verdict.spans {
                prop_assert!(s.start < s.end);
                flags[s.start as usize..s.end as usize].iter_mut().for_each(|f| *f = true);
            }
            prop_assert_eq!(&flags, removed);
            prop_assert_eq!(verdict.whole, *whole);
            // Maximal runs: never adjacent.
            for w in verdict.spans.windows(2) {
                prop_assert!(w[0].end < w[1].start);
            }
        }
    }
}

#[test]
fn span_keeps_the_first_copy_and_forgets_removed_text() {
    let params = SpanParams { k: 3, threshold: 1.0, min_tokens: 0 };
    // Doc 1 holds 1 2 3 4 twice: the second copy goes. Doc 2 repeats 1 2 3:
    // gone. Doc 3 repeats 2 3 4 9, whose K-gram 3 4 9 only occurred in removed text.
    let corpus = vec![vec![1, 2, 3, 4, 7, 1, 2, 3, 4], vec![8, 1, 2, 3], vec![3, 4, 9]];
    let v = run_span_marker(&corpus, params);
    assert_eq!(v[0].spans, vec![5..9]);
    assert_eq!(v[1].spans, vec![1..4]);
    assert!(v[2].spans.is_empty());
    // min_tokens: a document left with fewer tokens goes whole, and is not remembered.
    let params = SpanParams { k: 2, threshold: 1.0, min_tokens: 3 };
    let v = run_span_marker(&[vec![1, 2], vec![1, 2, 5]], params);
    assert!(v[0].whole && v[0].nothing_kept());
    assert!(v[1].spans.is_empty() && !v[1].whole);
}
