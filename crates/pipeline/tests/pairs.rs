//! `find_pairs` against a brute-force scorer of all pairs, on random corpora
//! with planted copies, near copies and shared passages.

use std::collections::BTreeMap;
use std::io::Write;

use dupgram_corpus::{Format, Input};
use dupgram_lexicon::Normalization;
use dupgram_pipeline::{
    Control, Limits, NgramConfig, PairScores, PairsConfig, PairsSink, PairsStats, PipelineError, find_pairs,
};
use dupgram_testkit::{Corpus, CorpusSpec, NaiveOptions, NaivePairOptions, NaiveScores, naive_every_pair, naive_pairs};
use proptest::prelude::*;

#[derive(Default)]
struct Collect {
    pairs: Vec<(String, String, PairScores)>,
    clusters: Vec<Vec<String>>,
}

impl PairsSink for Collect {
    fn pair(&mut self, a: &str, b: &str, s: &PairScores) -> Result<(), PipelineError> {
        self.pairs.push((a.into(), b.into(), *s));
        Ok(())
    }
    fn cluster(&mut self, members: &[&str]) -> Result<(), PipelineError> {
        self.clusters.push(members.iter().map(|m| m.to_string()).collect());
        Ok(())
    }
}

fn write_docs(path: &std::path::Path, docs: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for d in docs {
        writeln!(f, "{d}").unwrap();
    }
}

fn engine(path: &std::path::Path, tmp: &std::path::Path, n: usize, tweak: impl FnOnce(&mut PairsConfig)) -> Collect {
    engine_stats(path, tmp, n, tweak).0
}

fn engine_stats(
    path: &std::path::Path,
    tmp: &std::path::Path,
    n: usize,
    tweak: impl FnOnce(&mut PairsConfig),
) -> (Collect, PairsStats) {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], n);
    base.read.format = Some(Format::Text);
    base.memory = 64 << 20;
    base.tmp_dir = tmp.to_owned();
    let mut config = PairsConfig::new(base);
    config.max_df = usize::MAX as u64;
    config.max_group_pairs = 1000;
    tweak(&mut config);
    let mut out = Collect::default();
    let stats = find_pairs(&config, &Control::default(), &mut out).unwrap();
    (out, stats)
}

fn expected(
    docs: &[String],
    n: usize,
    tweak: impl FnOnce(&mut NaivePairOptions),
) -> BTreeMap<(usize, usize), NaiveScores> {
    naive_pairs(docs, &options(n, tweak))
}

fn options(n: usize, tweak: impl FnOnce(&mut NaivePairOptions)) -> NaivePairOptions {
    let mut o = NaivePairOptions {
        ngrams: NaiveOptions { norm: Normalization::default(), stopwords: vec![], stop_top: 0, n, min_count: 2 },
        max_df: usize::MAX,
        max_group_pairs: 1000,
        min_sscr: 0.0,
        min_ssr: 0.0,
        min_cover: 0.0,
    };
    tweak(&mut o);
    o
}

fn assert_same(got: &Collect, want: &BTreeMap<(usize, usize), NaiveScores>) {
    // Text input: a document's ID is its line number.
    let keys: Vec<(usize, usize)> =
        got.pairs.iter().map(|(a, b, _)| (a.parse::<usize>().unwrap() - 1, b.parse::<usize>().unwrap() - 1)).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "pairs in input order of a, then b, each once");
    let got: BTreeMap<(usize, usize), PairScores> = keys.into_iter().zip(got.pairs.iter().map(|p| p.2)).collect();
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "the same pairs");
    for (k, w) in want {
        let g = got[k];
        for (x, y) in [
            (g.sscr, w.sscr),
            (g.ssr, w.ssr),
            (g.contain_a_in_b, w.contain_a_in_b),
            (g.contain_b_in_a, w.contain_b_in_a),
            (g.cover_a, w.cover_a),
            (g.cover_b, w.cover_b),
        ] {
            assert!((x - y).abs() < 1e-9, "pair {k:?}: {g:?} vs {w:?}");
        }
        assert_eq!(g.shared, w.shared, "pair {k:?}");
    }
}

fn corpus(seed: u64, tokens: u64, vocabulary: u32) -> Vec<String> {
    let spec = CorpusSpec {
        seed,
        tokens,
        vocabulary,
        mean_doc_len: 30,
        exact_copies: 0.1,
        near_copies: 0.2,
        passages: 0.2,
        ..CorpusSpec::default()
    };
    let c = Corpus::new(spec.clone());
    Corpus::new(spec).map(|d| c.text(&d)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn pairs_equal_brute_force(seed in any::<u64>(), tokens in 200u64..1500, vocabulary in prop_oneof![Just(30u32), Just(400)], n in 1usize..7, threads in 1usize..3, small in any::<bool>(), block_files in any::<bool>(), buckets in 1usize..=2, shared_sets in prop_oneof![Just(2usize), Just(usize::MAX)], parts in prop_oneof![Just(None), Just(Some(2usize)), Just(Some(5))], table_words in prop_oneof![Just(None), (0usize..60).prop_map(Some)]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        let docs = corpus(seed, tokens, vocabulary);
        write_docs(&path, &docs);
        let (got, stats) = engine_stats(&path, dir.path(), n, |c| {
            c.base.threads = threads;
            if small {
                // Tiny chunks, fan-ins and index blocks: many runs, merge passes and block pairs,
                // the blocks built from the whole index each time or from its cut by block.
                c.base.limits = Limits {
                    repeat_prints: None,
                    chunk_ngrams: Some(7),
                    fan_in: Some(3),
                    batch_bytes: Some(64),
                    block_files: Some(block_files),
                    merge_buckets: Some(buckets),
                    ..Limits::default()
                };
            }
            // Every n-gram's documents through the shared sets, or none.
            c.base.limits.shared_set_documents = Some(shared_sets);
            // Indexed in parts by first word, or in one.
            c.base.limits.sieve_parts = parts;
            // The lexicon's table frozen early: the other words through its overflow.
            c.base.limits.table_words = table_words;
            // And its overflow's dictionaries in epochs of a few words.
            c.base.limits.epoch_slots = table_words.map(|w| (w % 7 + 1) as u32);
        });
        assert_same(&got, &expected(&docs, n, |_| {}));
        let sieve = &stats.index.first_pass.as_ref().unwrap().sieve;
        if vocabulary > 30 {
            prop_assert_eq!(sieve.parts as usize, parts.unwrap_or(1), "{:?}", sieve);
        }
        // Two buckets, each merged on a thread, unless one word starts nearly every n-gram.
        let want = if small { buckets } else { threads };
        prop_assert!((1..=want as u32).contains(&stats.index.merge_buckets), "{} merge buckets", stats.index.merge_buckets);
        if small && block_files {
            // Cut in the first reading when the blocks do not all fit at
            // once, else in the second: never read whole again.
            prop_assert!(stats.index_reads <= 2, "{} readings of {} blocks", stats.index_reads, stats.index_blocks);
        }
        if small && !block_files && stats.index_blocks > 4 && stats.candidate_pairs > 50 {
            // Without the cut, pairs across many tiny blocks read the whole index again and again.
            prop_assert!(stats.index_reads > 2, "{} readings of {} blocks", stats.index_reads, stats.index_blocks);
        }
    }
}

#[test]
fn thresholds_and_max_df() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let mut docs = corpus(7, 3000, 300);
    // A boilerplate line in every document.
    for d in &mut docs {
        d.push_str(" share this story on every network");
    }
    write_docs(&path, &docs);
    for (min_sscr, min_ssr, min_cover, max_df) in
        [(0.5, 0.0, 0.0, usize::MAX), (0.0, 0.3, 0.0, 10), (0.0, 0.0, 0.9, 3), (0.2, 0.1, 0.5, 20)]
    {
        let got = engine(&path, dir.path(), 4, |c| {
            c.min_sscr = min_sscr;
            c.min_ssr = min_ssr;
            c.min_cover = min_cover;
            c.max_df = max_df as u64;
        });
        let want = expected(&docs, 4, |o| {
            o.min_sscr = min_sscr;
            o.min_ssr = min_ssr;
            o.min_cover = min_cover;
            o.max_df = max_df;
        });
        assert_same(&got, &want);
    }
}

/// Passages in the same many documents, as a licence is in every book of a
/// collection: each distinct document set is paired once, counted as many
/// times as n-grams made it, so the pairs, the bounds that use their counts
/// and the length filter's skips are what pairing each n-gram gives.
#[test]
fn document_sets_shared_by_many_ngrams_are_paired_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let mut docs = corpus(11, 6000, 300);
    assert!(docs.len() > 100, "{} documents", docs.len());
    for (i, d) in docs.iter_mut().enumerate() {
        if i % 4 != 0 {
            d.push_str(" this ebook is for the use of anyone anywhere at no cost and with almost no restrictions");
        }
        if i % 3 == 0 {
            d.push_str(" you may copy it give it away or re use it under the terms of the licence");
        }
    }
    write_docs(&path, &docs);
    for (min_sscr, min_ssr) in [(0.0, 0.0), (0.3, 0.0), (0.0, 0.2)] {
        let run = |shared: usize| {
            engine_stats(&path, dir.path(), 4, |c| {
                c.min_sscr = min_sscr;
                c.min_ssr = min_ssr;
                c.base.limits.shared_set_documents = Some(shared);
            })
        };
        let (got, stats) = run(32);
        let (each, each_stats) = run(usize::MAX);
        assert_same(
            &got,
            &expected(&docs, 4, |o| {
                o.min_sscr = min_sscr;
                o.min_ssr = min_ssr;
            }),
        );
        assert_eq!(got.pairs.len(), each.pairs.len());
        assert_eq!(
            (stats.candidate_pairs, stats.pruned_pairs, stats.scored_pairs, stats.kept_pairs, stats.skipped),
            (
                each_stats.candidate_pairs,
                each_stats.pruned_pairs,
                each_stats.scored_pairs,
                each_stats.kept_pairs,
                each_stats.skipped
            ),
            "min_sscr {min_sscr}, min_ssr {min_ssr}"
        );
        if min_ssr > 0.0 {
            assert!(stats.skipped.length + stats.skipped.partition > 0, "{:?}", stats.skipped);
        }
        // The licence's n-grams stood for by a few sets; none without the table.
        assert!(stats.shared_sets > 0 && stats.shared_set_ngrams > 10 * stats.shared_sets, "{stats:?}");
        assert_eq!((each_stats.shared_sets, each_stats.shared_set_ngrams), (0, 0));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    /// Thresholds with n-grams common to more than `max_df` documents: the
    /// bounds that rule pairs out before scoring must never rule out one
    /// the thresholds keep.
    #[test]
    fn thresholds_with_common_ngrams_equal_brute_force(seed in any::<u64>(), n in 2usize..6, thresholds in (0usize..4, 0usize..3, 0usize..3), max_df in prop_oneof![Just(2usize), 3usize..12, Just(usize::MAX)], boilerplate in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        let mut docs = corpus(seed, 1200, 60);
        if boilerplate {
            for (i, d) in docs.iter_mut().enumerate().filter(|(i, _)| i % 3 != 0) {
                d.push_str(if i % 2 == 0 { " share this story on every network" } else { " share this story with a friend" });
            }
        }
        write_docs(&path, &docs);
        let (min_sscr, min_ssr, min_cover) = ([0.0, 0.3, 0.6, 0.85][thresholds.0], [0.0, 0.2, 0.5][thresholds.1], [0.0, 0.5, 0.9][thresholds.2]);
        let got = engine(&path, dir.path(), n, |c| {
            c.min_sscr = min_sscr;
            c.min_ssr = min_ssr;
            c.min_cover = min_cover;
            c.max_df = max_df as u64;
        });
        assert_same(&got, &expected(&docs, n, |o| {
            o.min_sscr = min_sscr;
            o.min_ssr = min_ssr;
            o.min_cover = min_cover;
            o.max_df = max_df;
        }));
    }
}

/// Twenty documents, each with a near copy, and all of them with a
/// sentence in common: every document is mostly duplicate text, so its own
/// stats cannot rule out a pair, but two documents of different twins share
/// only a sentence or two. Their candidate counts rule them out unscored,
/// with the n-grams `max_df` leaves out of the candidates or without.
#[test]
fn a_candidates_count_rules_out_documents_that_share_little() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let mut docs = Vec::new();
    for i in 0..20 {
        let body: Vec<String> = (0..100).map(|j| format!("w{i}x{j}")).collect();
        let mut twin = body.clone();
        twin[50] = format!("changed{i}");
        // Half of them share a second sentence, made common by max_df below.
        let tail = if i % 2 == 0 { " and share this story on every network" } else { "" };
        for words in [body, twin] {
            docs.push(format!("{} the quick brown fox jumps over the lazy dog{tail}", words.join(" ")));
        }
    }
    write_docs(&path, &docs);
    // The nine-word sentence's six 4-grams are in all 40 documents.
    for (max_df, candidates, common) in [(usize::MAX, 40 * 39 / 2, 0), (30, 20 + 20 * 19 / 2 - 10, 6)] {
        let (got, stats) = engine_stats(&path, dir.path(), 4, |c| {
            c.min_sscr = 0.8;
            c.max_df = max_df as u64;
        });
        let want = expected(&docs, 4, |o| {
            o.min_sscr = 0.8;
            o.max_df = max_df;
        });
        assert_same(&got, &want);
        assert_eq!(want.len(), 20, "each twin pair, and no other");
        assert_eq!(stats.boilerplate_ngrams, common, "max_df {max_df}");
        // Every pair sharing the first sentence, or with max_df 30 the twins and the pairs sharing the second.
        assert_eq!(stats.candidate_pairs, candidates, "max_df {max_df}");
        assert_eq!(stats.scored_pairs, 20, "max_df {max_df}: only the twins are scored");
    }
}

/// Short documents with a sentence in common, as comments quoting a
/// catchphrase: each is mostly its own words, so its totals alone bound any
/// pair of it below `--min-sscr` and the pair is never made; the twins,
/// mostly duplicate text, are made, scored and kept.
#[test]
fn documents_whose_totals_rule_a_pair_out_never_make_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let mut docs = Vec::new();
    for i in 0..60 {
        let body: Vec<String> = (0..30).map(|j| format!("w{i}x{j}")).collect();
        let text = format!("{} the quick brown fox jumps over the lazy dog", body.join(" "));
        if i % 10 == 0 {
            docs.push(text.replace(&format!("w{i}x15"), "changed"));
        }
        docs.push(text);
    }
    write_docs(&path, &docs);
    for min_sscr in [0.0, 0.8] {
        let (got, stats) = engine_stats(&path, dir.path(), 4, |c| c.min_sscr = min_sscr);
        assert_same(&got, &expected(&docs, 4, |o| o.min_sscr = min_sscr));
        let all = (docs.len() * (docs.len() - 1) / 2) as u64;
        if min_sscr == 0.0 {
            assert_eq!((stats.skipped.bounds, stats.candidate_pairs), (0, all), "no thresholds: every pair");
            continue;
        }
        assert_eq!(got.pairs.len(), 6, "the twins, and no other");
        // The sentence's six 4-grams made every pair; those of two single
        // documents were skipped once for each of them.
        let singles = (docs.len() - 12) as u64;
        assert!(stats.skipped.bounds >= singles * (singles - 1) / 2 * 6, "{:?}", stats.skipped);
        assert!(stats.candidate_pairs < all - singles * (singles - 1) / 2, "{}", stats.candidate_pairs);
        assert!(stats.scored_pairs >= 6, "{}", stats.scored_pairs);
    }
}

/// An index whose postings runs would not fit the room on disk goes in
/// parts planned one at a time, each part's index taking room from the
/// parts after it: the same pairs as in one part, and as brute force finds.
#[test]
fn an_index_cut_by_the_room_on_disk_finds_the_same_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let docs = corpus(11, 8000, 400);
    write_docs(&path, &docs);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let run = |room: Option<u64>, threads: usize| {
        engine_stats(&path, &tmp, 4, |c| {
            c.base.threads = threads;
            // Stop words are known only at the lexicon pass's end: the
            // index fills a sieve of its own, part by part.
            c.base.stop_top = 3;
            c.base.limits.disk_room = room;
        })
    };
    let (whole, stats) = run(None, 2);
    let parts = |stats: &PairsStats| stats.index.first_pass.as_ref().unwrap().sieve.parts;
    assert_eq!(parts(&stats), 1);
    assert_same(&whole, &expected(&docs, 4, |o| o.ngrams.stop_top = 3));
    for threads in [1, 2] {
        let (parted, stats) = run(Some(4 << 10), threads);
        assert!((3..=64).contains(&parts(&stats)), "{} parts", parts(&stats));
        assert_eq!(parted.pairs.len(), whole.pairs.len());
        for (p, w) in parted.pairs.iter().zip(&whole.pairs) {
            assert_eq!((&p.0, &p.1, p.2.shared), (&w.0, &w.1, w.2.shared));
        }
        assert_eq!(parted.clusters, whole.clusters);
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temporary files left");
    }
}

#[test]
fn edge_cases() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let copy = "the same short announcement was printed in many papers today";
    let mut docs: Vec<String> = vec![
        "tiny".into(),
        "".into(),
        // Shares text with itself only.
        "alpha beta gamma delta alpha beta gamma delta epsilon".into(),
    ];
    docs.extend(std::iter::repeat_n(copy.to_string(), 30));
    docs.push(format!("{copy} and then some more words"));
    write_docs(&path, &docs);
    let got = engine(&path, dir.path(), 3, |c| c.max_group_pairs = 5);
    assert_same(&got, &expected(&docs, 3, |o| o.max_group_pairs = 5));
    // The group's 30 copies and the extended copy form one cluster.
    assert_eq!(got.clusters.len(), 1);
    assert_eq!(got.clusters[0].len(), 31);
    assert_eq!(got.pairs.iter().filter(|p| p.2.sscr == 1.0).count(), 5);
}

#[test]
fn reusing_a_duplicate_list_gives_the_same_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let docs = corpus(3, 4000, 500);
    write_docs(&path, &docs);
    // Count once, saving the list and lexicon as `dupgram ngrams` does.
    let mut base = NgramConfig::new(vec![Input::Path(path.clone())], 4);
    base.read.format = Some(Format::Text);
    base.tmp_dir = dir.path().to_owned();
    base.lexicon_dir = Some(dir.path().to_owned());
    let dups = dir.path().join("dups.tsv");
    let mut out = std::fs::File::create(&dups).unwrap();
    let outcome = dupgram_pipeline::count_ngrams(&base, &Control::default(), &mut |lex, ids, count| {
        let words: Vec<&str> = ids.iter().map(|&i| lex.word(i)).collect();
        writeln!(out, "{}\t{count}", words.join(" ")).unwrap();
        Ok(())
    })
    .unwrap();
    let lexicon = dir.path().join("dups.lex");
    outcome.lexicon_file.unwrap().persist(&lexicon).unwrap();
    let fresh = engine(&path, dir.path(), 4, |_| {});
    let reused = engine(&path, dir.path(), 4, |c| {
        c.dups = Some(dupgram_pipeline::DupsInput { dups: dups.clone(), lexicon: lexicon.clone() })
    });
    assert_eq!(fresh.pairs.len(), reused.pairs.len());
    assert!(fresh.pairs.iter().zip(&reused.pairs).all(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.2 == b.2));
    assert_eq!(fresh.clusters, reused.clusters);
    // A list made with another n is refused.
    let mut base = NgramConfig::new(vec![Input::Path(path.clone())], 5);
    base.read.format = Some(Format::Text);
    base.tmp_dir = dir.path().to_owned();
    let mut config = PairsConfig::new(base);
    config.dups = Some(dupgram_pipeline::DupsInput { dups, lexicon });
    let err = find_pairs(&config, &Control::default(), &mut Collect::default()).unwrap_err().to_string();
    assert!(err.contains("4-gram where n = 5"), "{err}");
}

/// `docs` with groups of identical documents planted: for each `(pick,
/// size)`, `size - 1` more copies of document `pick % len`, scattered.
fn with_groups(mut docs: Vec<String>, groups: &[(usize, usize)], seed: u64) -> Vec<String> {
    let mut state = seed | 1;
    let mut next = |bound: usize| {
        // xorshift: positions only need to be scattered, and reproducible.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for &(pick, size) in groups {
        let text = docs[pick % docs.len()].clone();
        for _ in 1..size {
            let at = next(docs.len() + 1);
            docs.insert(at, text.clone());
        }
    }
    docs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// With `--expand-groups`, every pair the brute force finds over all
    /// documents, identical ones included; without, the representatives' pairs.
    #[test]
    fn expanded_groups_equal_brute_force(seed in any::<u64>(), groups in prop::collection::vec((any::<usize>(), 2usize..=50), 1..5), n in 2usize..6, small in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        let docs = with_groups(corpus(seed, 600, 200), &groups, seed);
        write_docs(&path, &docs);
        let limits = |c: &mut PairsConfig| {
            if small {
                c.base.limits = Limits { chunk_ngrams: Some(7), fan_in: Some(3), batch_bytes: Some(64), ..Limits::default() };
            }
        };
        let (expanded, stats) = engine_stats(&path, dir.path(), n, |c| {
            c.expand_groups = true;
            limits(c);
        });
        assert_same(&expanded, &naive_every_pair(&docs, &options(n, |_| {})));
        let (grouped, grouped_stats) = engine_stats(&path, dir.path(), n, limits);
        assert_same(&grouped, &expected(&docs, n, |_| {}));
        // The summary counts what the expansion added.
        prop_assert_eq!(stats.expanded_pairs, (expanded.pairs.len() - grouped.pairs.len()) as u64);
        prop_assert_eq!(grouped_stats.expanded_pairs, 0);
        prop_assert_eq!(stats.kept_pairs + stats.group_pairs, grouped.pairs.len() as u64);
        prop_assert_eq!(stats.capped_groups, 0);
        prop_assert_eq!(&expanded.clusters, &grouped.clusters);
    }
}

#[test]
fn a_capped_group_is_not_expanded_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let base = corpus(11, 800, 150);
    // Documents 0 and 1 of `base`, copied 30 and 4 times.
    let docs = with_groups(base.clone(), &[(0, 30), (1, 4)], 5);
    write_docs(&path, &docs);
    let (got, stats) = engine_stats(&path, dir.path(), 3, |c| {
        c.expand_groups = true;
        c.max_group_pairs = 5;
    });
    let copies_of = |text: &String| docs.iter().enumerate().filter(|(_, d)| *d == text).map(|(i, _)| i).collect();
    let big: Vec<usize> = copies_of(&base[0]);
    assert!(big.len() >= 30, "{}", big.len());
    // The brute force, less the pairs of the capped group's other members,
    // but for its first document's with the next five.
    let listed: Vec<(usize, usize)> = big[1..6].iter().map(|&m| (big[0], m)).collect();
    let mut want = naive_every_pair(&docs, &options(3, |o| o.max_group_pairs = 5));
    want.retain(|&(a, b), _| listed.contains(&(a, b)) || !(big[1..].contains(&a) || big[1..].contains(&b)));
    assert_same(&got, &want);
    assert_eq!(stats.capped_groups, 1);
    assert_eq!(stats.capped_named, [format!("{} ({} documents)", big[0] + 1, big.len())]);
    // Without expansion the same group is capped (five of its pairs) and named too.
    let (_, stats) = engine_stats(&path, dir.path(), 3, |c| c.max_group_pairs = 5);
    assert_eq!((stats.capped_groups, stats.expanded_pairs), (1, 0));
}
