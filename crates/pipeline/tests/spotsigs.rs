//! `find_spot_pairs` against brute force over the spot signature sets of
//! every pair of documents, and on generated pages whose navigation word
//! 5-grams share but spot signatures ignore.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

use dupgram_corpus::{Format, Input};
use dupgram_lexicon::{Normalization, tokenize};
use dupgram_pipeline::{
    Control, NgramConfig, PairScores, PairsConfig, PairsSink, PairsStats, PipelineError, SpotConfig, SpotParams,
    SpotStats, find_pairs, find_spot_pairs,
};
use dupgram_spotsigs::signatures;
use proptest::prelude::*;

#[derive(Default)]
struct Collect {
    pairs: Vec<(String, String, PairScores)>,
}

impl PairsSink for Collect {
    fn pair(&mut self, a: &str, b: &str, s: &PairScores) -> Result<(), PipelineError> {
        self.pairs.push((a.into(), b.into(), *s));
        Ok(())
    }
    fn cluster(&mut self, _: &[&str]) -> Result<(), PipelineError> {
        Ok(())
    }
}

fn write_jsonl(path: &Path, docs: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for (i, d) in docs.iter().enumerate() {
        writeln!(f, "{}", serde_json::json!({"id": format!("d{i}"), "text": d})).unwrap();
    }
}

fn config(path: &Path, tmp: &Path, n: usize) -> PairsConfig {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], n);
    base.read.format = Some(Format::Jsonl);
    base.memory = 256 << 20;
    base.threads = 2;
    base.tmp_dir = tmp.to_owned();
    let mut config = PairsConfig::new(base);
    config.max_df = u32::MAX as u64;
    config.max_group_pairs = 10_000;
    config.expand_groups = true;
    config
}

fn spot_pairs(config: &PairsConfig, spot: &SpotConfig) -> (Collect, PairsStats, SpotStats) {
    let mut out = Collect::default();
    let (stats, spot_stats) = find_spot_pairs(config, spot, &Control::default(), &mut out).unwrap();
    (out, stats, spot_stats)
}

/// What brute force expects of a pair: (shared, ssr, cover_a, cover_b, sscr).
type Expected = (u32, f64, f64, f64, f64);

/// Every pair sharing a signature, scored from the signature occurrences
/// of each document (after the IDF range), straight from the definitions.
fn brute(docs: &[String], spot: &SpotConfig) -> BTreeMap<(String, String), Expected> {
    let occurrences: Vec<Vec<String>> = docs
        .iter()
        .map(|d| {
            let tokens = tokenize(Normalization::default(), d);
            let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
            signatures(&spot.params, &tokens).into_iter().map(|s| s.text).collect()
        })
        .collect();
    let mut df: HashMap<&str, u32> = HashMap::new();
    for occ in &occurrences {
        for s in occ.iter().map(String::as_str).collect::<BTreeSet<_>>() {
            *df.entry(s).or_default() += 1;
        }
    }
    let n = docs.len() as f64;
    let (lo, hi) = spot.idf_range;
    let keep = |s: &str| {
        let idf = if docs.len() < 2 { 1.0 } else { (n / f64::from(df[s])).ln() / n.ln() };
        (lo..=hi).contains(&idf)
    };
    let kept: Vec<Vec<&str>> =
        occurrences.iter().map(|occ| occ.iter().map(String::as_str).filter(|s| keep(s)).collect()).collect();
    let sets: Vec<BTreeSet<&str>> = kept.iter().map(|k| k.iter().copied().collect()).collect();
    let chain = (spot.params.chain() + 1) as u64;
    let mut out = BTreeMap::new();
    for a in 0..docs.len() {
        for b in a + 1..docs.len() {
            let shared: BTreeSet<&str> = sets[a].intersection(&sets[b]).copied().collect();
            if shared.is_empty() {
                continue;
            }
            let union = sets[a].len() + sets[b].len() - shared.len();
            // Chain tokens: c + 1 per signature occurrence.
            let covered = |k: &[&str]| k.iter().filter(|s| shared.contains(*s)).count() as u64 * chain;
            let (ca, cb) = (covered(&kept[a]), covered(&kept[b]));
            let (ta, tb) = (kept[a].len() as u64 * chain, kept[b].len() as u64 * chain);
            out.insert(
                (format!("d{a}"), format!("d{b}")),
                (
                    shared.len() as u32,
                    shared.len() as f64 / union as f64,
                    ca as f64 / ta as f64,
                    cb as f64 / tb as f64,
                    (ca + cb) as f64 / (ta + tb) as f64,
                ),
            );
        }
    }
    out
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() < 1e-12
}

/// Random documents over a few stop words and content words, with
/// passages planted in several documents so that pairs share signatures.
fn corpus() -> impl Strategy<Value = Vec<String>> {
    let word = prop::sample::select(vec![
        "the", "a", "is", "an", "to", "of", "and", "rally", "campaign", "record", "south", "attack", "vote", "city",
        "river", "bridge", "mayor", "court",
    ]);
    let passage = prop::collection::vec(word.clone(), 3..25).prop_map(|w| w.join(" "));
    (prop::collection::vec(passage, 1..6), prop::collection::vec(prop::collection::vec((0usize..6, word), 0..5), 2..9))
        .prop_map(|(passages, docs)| {
            docs.into_iter()
                .map(|parts| {
                    parts
                        .into_iter()
                        .map(|(p, w)| if p < passages.len() { passages[p].clone() } else { w.to_string() })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
}

fn spot_config(d: usize, c: usize, idf: (f64, f64)) -> SpotConfig {
    SpotConfig { params: SpotParams::slides(d, c).unwrap(), idf_range: idf }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every pair sharing a signature, with the brute-force Jaccard of the
    /// signature sets, coverage and SSCR; `--min-ssr` keeps exactly those
    /// reaching it, its length filter losing none.
    #[test]
    fn pairs_equal_brute_force_over_signature_sets(
        docs in corpus(),
        d in 1usize..3,
        c in 1usize..4,
        idf in prop::sample::select(vec![(0.0, 1.0), (0.2, 0.85), (0.0, 0.9), (0.3, 1.0)]),
        tau in prop::sample::select(vec![0.0, 0.3, 0.5, 0.8]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        write_jsonl(&path, &docs);
        let spot = spot_config(d, c, idf);
        let mut config = config(&path, dir.path(), 5);
        config.min_ssr = tau;
        let (out, stats, _) = spot_pairs(&config, &spot);
        let expected: BTreeMap<_, _> = brute(&docs, &spot).into_iter().filter(|(_, e)| e.1 >= tau).collect();
        let found: BTreeMap<(String, String), PairScores> =
            out.pairs.iter().map(|(a, b, s)| ((a.clone(), b.clone()), *s)).collect();
        prop_assert_eq!(found.len(), out.pairs.len(), "a pair listed twice");
        prop_assert_eq!(found.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
        for (key, s) in &found {
            let (shared, ssr, cover_a, cover_b, sscr) = expected[key];
            prop_assert_eq!(s.shared, shared, "{:?}", key);
            prop_assert!(close(s.ssr, ssr) && close(s.cover_a, cover_a) && close(s.cover_b, cover_b)
                && close(s.sscr, sscr), "{:?}: {:?} against {:?}", key, s, expected[key]);
        }
        if tau == 0.0 {
            prop_assert_eq!(stats.skipped.partition + stats.skipped.length, 0);
        }
    }
}

/// The length filter skips, and says so, without changing the pairs.
#[test]
fn min_ssr_skips_pairs_by_set_size_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let short = "the rally began at noon";
    let long = format!("{short} {}", (0..40).map(|i| format!("the word{i} went far")).collect::<Vec<_>>().join(" "));
    let docs = vec![short.to_string(), long.clone(), long];
    write_jsonl(&path, &docs);
    let spot = spot_config(1, 2, (0.0, 1.0));
    let mut config = config(&path, dir.path(), 5);
    config.expand_groups = false;
    config.min_ssr = 0.5;
    let (out, stats, _) = spot_pairs(&config, &spot);
    // d1 and d2 are identical (a group); d0 shares one signature with them, of 41.
    assert_eq!(out.pairs.iter().map(|(a, b, _)| (a.as_str(), b.as_str())).collect::<Vec<_>>(), [("d1", "d2")]);
    assert!(stats.skipped.partition >= 1, "{:?}", stats.skipped);
    assert_eq!(stats.candidate_pairs, 0);
}

/// Generated web pages: every page carries the same navigation bar, footer
/// and advertisement (no stop word in them), around its own article; two
/// pages carry the same article. Word 5-grams pair every page with every
/// other through the shared navigation; spot signatures pair only the two
/// pages with the same article.
#[test]
fn spot_signatures_ignore_shared_navigation_that_word_5_grams_pick_up() {
    let nav = "Home News World Business Sports Weather Opinion Video Podcasts Login Subscribe Search";
    let footer = "Contact Careers Advertise Privacy Policy Terms Cookies Sitemap Copyright 2026 Daily Herald";
    let ad = "SPONSORED Buy cheap flights today Click here Free shipping Limited offer";
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut article = || {
        let mut words = Vec::new();
        for _ in 0..60 {
            match next() % 4 {
                0 => words.push(["the", "a", "is", "an"][(next() % 4) as usize].to_string()),
                1 => words.push(["of", "to", "and", "in"][(next() % 4) as usize].to_string()),
                _ => words.push(format!("w{}", next() % 5000)),
            }
        }
        words.join(" ")
    };
    let articles: Vec<String> = (0..8).map(|_| article()).collect();
    let mut pages: Vec<String> = articles.iter().map(|a| format!("{nav} {ad} {a} {footer}")).collect();
    // Page 8: page 3's article, another site's frame.
    pages.push(format!("Front page Local Sports Entertainment Classifieds {} Contact us", articles[3]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages.jsonl");
    write_jsonl(&path, &pages);

    let mut ngrams = Collect::default();
    find_pairs(&config(&path, dir.path(), 5), &Control::default(), &mut ngrams).unwrap();
    let mut spot = Collect::default();
    find_spot_pairs(&config(&path, dir.path(), 5), &spot_config(1, 2, (0.0, 1.0)), &Control::default(), &mut spot)
        .unwrap();

    // 5-grams: the 8 framed pages pair with each other through the frame.
    let framed_pairs = ngrams.pairs.iter().filter(|(a, b, _)| a != "d8" && b != "d8").count();
    assert_eq!(framed_pairs, 8 * 7 / 2);
    assert!(ngrams.pairs.iter().any(|(a, b, s)| (a, b) == (&"d0".to_string(), &"d1".to_string()) && s.sscr > 0.3));
    // Spot signatures: the pair with the same article, wholly alike; any
    // other pair only through a chain that ran from an article's last
    // antecedent into the frame (one signature, SSR below 0.1).
    let (same, chance): (Vec<_>, Vec<_>) =
        spot.pairs.iter().partition(|(a, b, _)| (a.as_str(), b.as_str()) == ("d3", "d8"));
    assert_eq!(same.len(), 1);
    assert_eq!(same[0].2.ssr, 1.0);
    assert!(chance.iter().all(|(_, _, s)| s.shared == 1 && s.ssr < 0.1), "{chance:?}");
    assert!(chance.len() < 4, "{chance:?}");
}
