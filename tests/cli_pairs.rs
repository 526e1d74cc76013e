//! `dupgram pairs` end to end.

mod common;

use common::*;

#[test]
fn kupietz_example_1_scores() {
    let (code, stdout, stderr) = run(&["pairs", s(&sample("kupietz-example1.jsonl")), "-n", "5"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "a\tb\tsscr\tssr\tcontain_a_in_b\tcontain_b_in_a\tcover_a\tcover_b\tshared");
    let fields: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(&fields[..4], ["T02/NOV.53095", "T03/JUL.31966", "0.909091", "0.285714"]);
    assert_eq!(fields[8], "8");
    assert_eq!(lines.len(), 2);
}

#[test]
fn sample_pairs_clusters_and_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = dir.path().join("pairs.jsonl");
    let clusters = dir.path().join("clusters.tsv");
    let stats = dir.path().join("stats.json");
    let (code, _, stderr) = run(&[
        "pairs",
        s(&sample("news.jsonl")),
        "-n",
        "5",
        "--min-sscr",
        "0.8",
        "-o",
        s(&pairs),
        "--clusters",
        s(&clusters),
        "--stats-json",
        s(&stats),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(&pairs).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["sscr"].as_f64().unwrap() >= 0.8));
    // The agency story and its word-for-word reprint.
    assert!(rows.iter().any(|r| r["a"] == "news-001" && r["b"] == "paper-a-017" && r["sscr"] == 1.0));
    let clusters = std::fs::read_to_string(&clusters).unwrap();
    let first: Vec<&str> = clusters.lines().next().unwrap().split('\t').collect();
    assert_eq!(first[0].parse::<usize>().unwrap(), first.len() - 1, "size, then the members");
    assert!(first.contains(&"news-001"));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    for key in [
        "documents",
        "candidate_pairs",
        "scored_pairs",
        "kept_pairs",
        "clusters",
        "index_fraction",
        "peak_rss",
        "boilerplate_ngrams",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert_eq!(json["exact_groups"], 2);
}

#[test]
fn reuse_of_ngrams_output() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 60_000, 13, 800);
    let dups = dir.path().join("dups.tsv.zst");
    let (code, _, stderr) = run(&["ngrams", s(&corpus), "-n", "6", "-o", s(&dups), "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let lex = dir.path().join("dups.tsv.zst.lex");
    let (code, fresh, stderr) = run(&["pairs", s(&corpus), "-n", "6", "-q", "--min-cover", "0.3"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, reused, stderr) =
        run(&["pairs", s(&corpus), "-n", "6", "-q", "--min-cover", "0.3", "--dups", s(&dups), "--lexicon", s(&lex)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fresh, reused);
    assert!(fresh.lines().count() > 10);
    let (code, _, stderr) = run(&["pairs", s(&corpus), "--dups", s(&dups)]);
    assert_eq!(code, 2, "--dups needs --lexicon: {stderr}");
}

#[test]
fn same_pairs_for_any_threads_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 200_000, 17, 3000);
    let mut outputs = Vec::new();
    for (threads, memory) in [("1", "1G"), ("2", "16M"), ("3", "48M")] {
        let out = dir.path().join(format!("p{threads}.tsv"));
        let cl = dir.path().join(format!("c{threads}.tsv"));
        let (code, _, stderr) = run(&[
            "pairs",
            s(&corpus),
            "-n",
            "5",
            "-o",
            s(&out),
            "--clusters",
            s(&cl),
            "--threads",
            threads,
            "--memory",
            memory,
            "-q",
        ]);
        assert_eq!(code, 0, "{threads} {memory}: {stderr}");
        outputs.push((std::fs::read(&out).unwrap(), std::fs::read(&cl).unwrap()));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn bad_input_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, b"{\"text\": \"a b c d e\"}\n{\"text\": 7}\n").unwrap();
    let out = dir.path().join("p.tsv");
    let (code, _, stderr) = run(&["pairs", s(&bad), "-o", s(&out)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("bad.jsonl: line 2"), "{stderr}");
    assert!(!out.exists());
    let (code, _, stderr) = run(&["pairs", s(&sample("news.jsonl")), "--min-sscr", "1.5"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--min-sscr must be between 0 and 1"), "{stderr}");
    let (code, _, stderr) = run(&["pairs", s(&sample("news.jsonl")), "--clusters", "/no/such/dir/c.tsv"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("/no/such/dir/c.tsv"), "{stderr}");
}
