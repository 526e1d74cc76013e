//! `dupgram pairs --features spotsigs` end to end: every SpotSigs option.

use crate::common::*;
use dupgram_lexicon::{Normalization, tokenize};
use dupgram_spotsigs::{ENGLISH_STOPWORDS, SpotParams, signatures};

const SLIDES: &str = "At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to set \
    the record straight from an attack circulating widely on the Internet that is designed to play into prejudices \
    against Muslims and fears of terrorism.";

/// The distinct signatures of the slides' text under `params`.
fn slide_signatures(params: &SpotParams) -> usize {
    let tokens = tokenize(Normalization::default(), SLIDES);
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let mut sigs: Vec<String> = signatures(params, &tokens).into_iter().map(|s| s.text).collect();
    sigs.sort();
    sigs.dedup();
    sigs.len()
}

/// The pairs output as (a, b, fields).
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout.lines().skip(1).map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// `dupgram pairs --features spotsigs` on the sample with the slides'
/// antecedents and chain unless `extra` gives its own, then `extra`.
fn spot(extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let slides = dir.path().join("slides-antecedents.txt");
    std::fs::write(&slides, "a an the is\n").unwrap();
    let sample = sample("spotsigs-slides.jsonl");
    let mut args = vec!["pairs", s(&sample), "--features", "spotsigs"];
    if !extra.contains(&"--antecedents") {
        args.extend_from_slice(&["--antecedents", s(&slides)]);
    }
    if !extra.contains(&"--chain") {
        args.extend_from_slice(&["--chain", "2"]);
    }
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn the_slides_example_pairs_the_reprint_and_not_the_navigation() {
    let (code, stdout, stderr) = spot(&[]);
    assert_eq!(code, 0, "{stderr}");
    // The reprint shares the slides' seven signatures; the page that shares
    // only the navigation bar and footer is paired with nothing.
    assert_eq!(
        rows(&stdout),
        [["slides", "reprint", "1.000000", "1.000000", "1.000000", "1.000000", "1.000000", "1.000000", "7"]]
    );
    assert!(stderr.contains("spot signatures") && stderr.contains("d = 1, c = 2"), "{stderr}");
    // Word 5-grams pair the navigation page with both through the frame.
    let (code, stdout, _) = run(&["pairs", s(&sample("spotsigs-slides.jsonl")), "-n", "5"]);
    assert_eq!(code, 0);
    assert!(rows(&stdout).iter().any(|r| r[1] == "other"), "{stdout}");
}

#[test]
fn antecedents_chain_and_distance_change_the_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("antecedents.txt");
    std::fs::write(&list, "An\n").unwrap();
    let cases: [(&[&str], SpotParams); 3] = [
        (&["--antecedents", s(&list)], SpotParams::new(["an"], ENGLISH_STOPWORDS, 1, 2).unwrap()),
        (&["--chain", "3"], SpotParams::slides(1, 3).unwrap()),
        (&["--spot-distance", "2"], SpotParams::slides(2, 2).unwrap()),
    ];
    for (options, params) in cases {
        let (code, stdout, stderr) = spot(options);
        assert_eq!(code, 0, "{stderr}");
        let rows = rows(&stdout);
        assert_eq!(rows.len(), 1, "{options:?}: {stdout}");
        assert_eq!(rows[0][8], slide_signatures(&params).to_string(), "{options:?}");
    }
    assert_eq!(slide_signatures(&SpotParams::new(["an"], ENGLISH_STOPWORDS, 1, 2).unwrap()), 1);
}

#[test]
fn the_defaults_are_twenty_antecedents_a_chain_of_three_and_distance_one() {
    let (code, stdout, stderr) = run(&["pairs", s(&sample("spotsigs-slides.jsonl")), "--features", "spotsigs"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("d = 1, c = 3"), "{stderr}");
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 1, "{stdout}");
    assert_eq!(rows[0][8], slide_signatures(&SpotParams::english(1, 3).unwrap()).to_string());
}

#[test]
fn idf_range_drops_signatures_and_the_summary_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    // N = 3: a signature of one document has IDF 1, one of two ln 1.5 / ln 3 = 0.37.
    // The third page has 5: the:mayor:said, a:new:bridge, the:river:planned,
    // is:planned:spring and the:spring:contact (a chain running into the footer).
    let (code, stdout, stderr) = spot(&["--idf-range", "0,0.5", "--stats-json", s(&stats)]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let summary = &json["spotsigs"];
    assert_eq!(summary["signatures"], 7 + 7 + 5);
    assert_eq!(summary["kept_signatures"], 14, "{summary}");
    assert_eq!(summary["documents_without_signatures"], 1);
    assert_eq!(rows(&stdout).len(), 1);
    let (code, _, stderr) = spot(&["--idf-range", "0.9,1"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("5 kept by --idf-range 0.9,1"), "{stderr}");
}

#[test]
fn min_ssr_counts_the_pairs_it_skips_by_set_size() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let long: String = (0..30).map(|i| format!(" the word{i} went far")).collect();
    let docs = [SLIDES.to_string(), format!("{SLIDES}{long}")];
    let text: String = docs
        .iter()
        .enumerate()
        .map(|(i, d)| serde_json::json!({"id": format!("d{i}"), "text": d}).to_string() + "\n")
        .collect();
    std::fs::write(&corpus, text).unwrap();
    let stats = dir.path().join("stats.json");
    let (code, stdout, stderr) =
        run(&["pairs", s(&corpus), "--features", "spotsigs", "--min-ssr", "0.5", "--stats-json", s(&stats)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rows(&stdout).len(), 0);
    assert!(stderr.contains("skipped by --min-ssr"), "{stderr}");
    // Without --min-ssr the pair is a candidate and scored: its set sizes rule 0.5 out.
    let (_, stdout, _) = run(&["pairs", s(&corpus), "--features", "spotsigs"]);
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 1, "{stdout}");
    assert!(rows[0][3].parse::<f64>().unwrap() < 0.5);
    // The pair was skipped once per signature the two share, never made a candidate.
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let skipped = &json["skipped"];
    let total = skipped["partition"].as_u64().unwrap() + skipped["length"].as_u64().unwrap();
    assert_eq!(total.to_string(), rows[0][8], "{json}");
    assert_eq!(json["candidate_pairs"], 0);
}

#[test]
fn spotsigs_options_are_refused_where_they_do_not_apply() {
    let sample = sample("spotsigs-slides.jsonl");
    for (args, says) in [
        (vec!["pairs", s(&sample), "--chain", "3"], "--chain applies to --features spotsigs only"),
        (vec!["pairs", s(&sample), "--features", "spotsigs", "--idf-range", "0.9,0.1"], "LO <= HI"),
        (vec!["pairs", s(&sample), "--features", "spotsigs", "--chain", "0"], "--chain must be between 1"),
        (vec!["pairs", s(&sample), "--features", "spotsigs", "--stop-top", "10"], "--stop-top"),
        (
            vec!["slurm", "pairs", s(&sample), "--features", "spotsigs", "--workdir", "/nonexistent/w"],
            "not a Slurm stage",
        ),
    ] {
        let (code, _, stderr) = run(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
