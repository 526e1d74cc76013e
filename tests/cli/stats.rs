//! `dupgram stats` end to end.

use crate::common::*;
use dupgram_lexicon::Normalization;
use dupgram_testkit::{NaiveOptions, naive_ngrams};

#[test]
fn ngram_table_matches_the_naive_counts() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let texts = generated(&corpus, 30_000, 31, 400);
    let (code, tsv, stderr) = run(&["stats", s(&corpus), "--n", "1..3,5", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    // Standard input is read once for every n: the same table.
    let text = std::fs::read(&corpus).unwrap();
    let (code, piped, stderr) = run_with_stdin(&["stats", "-", "--n", "1..3,5", "-q"], Some(&text));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(piped, tsv);
    // Two n, each counted on its own from a file and over one reading of standard input.
    let (code, two, stderr) = run(&["stats", s(&corpus), "--n", "2,5", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, two_piped, stderr) = run_with_stdin(&["stats", "-", "--n", "2,5", "-q"], Some(&text));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(two_piped, two);
    let rows = |table: &str| table.lines().skip(2).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(rows(&two), [rows(&tsv)[1].clone(), rows(&tsv)[3].clone()]);
    let rows: Vec<Vec<u64>> =
        tsv.lines().skip(2).map(|l| l.split('\t').take(6).map(|f| f.parse().unwrap()).collect()).collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), [1, 2, 3, 5]);
    for r in rows {
        let n = r[0] as usize;
        let all = naive_ngrams(
            &texts,
            &NaiveOptions { norm: Normalization::default(), stopwords: vec![], stop_top: 0, n, min_count: 1 },
        );
        let dups: Vec<u64> = all.values().copied().filter(|&c| c >= 2).collect();
        let ngrams: u64 = all.values().sum();
        assert_eq!(
            r[1..],
            [ngrams, all.len() as u64, all.len() as u64 - dups.len() as u64, dups.len() as u64, dups.iter().sum()],
            "n = {n}"
        );
    }
}

#[test]
fn length_tables_and_html_report() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("dedup.json");
    let (code, _, stderr) = run(&[
        "dedup",
        s(&sample("onion-sample.vert")),
        "-n",
        "3",
        "--max-stub",
        "2",
        "-o",
        "/dev/null",
        "-q",
        "--stats-json",
        s(&summary),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let html = dir.path().join("report.html");
    let (code, tsv, stderr) = run(&["stats", "--dedup", s(&summary), "--html", s(&html)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(tsv.starts_with("# lengths of units (p) in"), "{tsv}");
    let total: Vec<u64> = tsv
        .lines()
        .find(|l| l.starts_with("total\t"))
        .unwrap()
        .split('\t')
        .skip(1)
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(total[2], 14, "14 paragraphs in the sample");
    assert_eq!(total[0], 8, "8 of them removed (see dedup.rs)");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("Units by length"));
    assert!(!page.contains("<script") && !page.contains("http"), "self-contained");
}

#[test]
fn bad_arguments() {
    let (code, _, stderr) = run(&["stats"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("give a corpus, or --dedup"), "{stderr}");
    let (code, _, stderr) = run(&["stats", s(&sample("news.jsonl")), "--n", "3..1"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run(&["stats", "--dedup", s(&sample("news.jsonl"))]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not JSON") || stderr.contains("no length table"), "{stderr}");
}
