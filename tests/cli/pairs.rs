//! `dupgram pairs` end to end.

use crate::common::*;

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
        "shared_sets",
        "shared_set_ngrams",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert_eq!(json["exact_groups"], 2);
}

#[test]
fn reuse_of_ngrams_output() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let texts = generated(&corpus, 60_000, 13, 800);
    // Two groups of identical documents, which a saved list must group as a count does.
    let mut f = std::fs::OpenOptions::new().append(true).open(&corpus).unwrap();
    for (id, text) in [("copy-a", &texts[3]), ("copy-b", &texts[3]), ("copy-c", &texts[7])] {
        std::io::Write::write_all(&mut f, format!("{}\n", serde_json::json!({ "id": id, "text": text })).as_bytes())
            .unwrap();
    }
    let (dups, lex) = (dir.path().join("dups.tsv.zst"), dir.path().join("dups.lex"));
    let (code, _, stderr) = run(&["ngrams", s(&corpus), "-n", "6", "-o", s(&dups), "--lexicon", s(&lex), "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let (fresh_json, reused_json) = (dir.path().join("fresh.json"), dir.path().join("reused.json"));
    let (code, fresh, stderr) =
        run(&["pairs", s(&corpus), "-n", "6", "-q", "--min-cover", "0.3", "--stats-json", s(&fresh_json)]);
    assert_eq!(code, 0, "{stderr}");
    let reuse = ["--min-cover", "0.3", "--dups", s(&dups), "--lexicon", s(&lex), "--stats-json", s(&reused_json)];
    let (code, reused, stderr) = run(&[&["pairs", s(&corpus), "-n", "6", "-q"][..], &reuse].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fresh, reused);
    assert!(fresh.lines().count() > 10);
    let groups = |path: &std::path::Path| {
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        json["exact_groups"].as_u64().unwrap()
    };
    assert_eq!(groups(&fresh_json), groups(&reused_json));
    assert!(groups(&fresh_json) >= 2);
    let (code, _, stderr) = run(&["pairs", s(&corpus), "--dups", s(&dups)]);
    assert_eq!(code, 2, "--dups needs --lexicon: {stderr}");
    // A cut list is refused, naming the file, the line being read and the offset in the compressed file.
    let zst = std::fs::read(&dups).unwrap();
    let cut = dir.path().join("cut.tsv.zst");
    std::fs::write(&cut, &zst[..zst.len() * 2 / 3]).unwrap();
    let line = breaking_line(zstd::stream::read::Decoder::new(&zst[..zst.len() * 2 / 3]).unwrap());
    let (code, _, stderr) = run(&["pairs", s(&corpus), "-n", "6", "-q", "--dups", s(&cut), "--lexicon", s(&lex)]);
    assert_ne!(code, 0, "a cut list is an error");
    assert!(stderr.contains("cut.tsv.zst") && stderr.contains(&format!("line {line}, compressed byte")), "{stderr}");
    assert!(stderr.contains("truncated or damaged"), "{stderr}");
}

#[test]
fn same_pairs_for_any_threads_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 200_000, 17, 3000);
    // With the copies' pairs too (the generator copies documents exactly).
    for expand in [&[][..], &["--expand-groups"]] {
        let mut outputs = Vec::new();
        for (threads, memory) in [("1", "1G"), ("2", "24M"), ("3", "48M")] {
            let out = dir.path().join(format!("p{threads}.tsv"));
            let cl = dir.path().join(format!("c{threads}.tsv"));
            let mut args = vec!["pairs", s(&corpus), "-n", "5", "-o", s(&out), "--clusters", s(&cl)];
            args.extend(["--threads", threads, "--memory", memory, "-q"]);
            args.extend(expand);
            let (code, _, stderr) = run(&args);
            assert_eq!(code, 0, "{threads} {memory}: {stderr}");
            outputs.push((std::fs::read(&out).unwrap(), std::fs::read(&cl).unwrap()));
        }
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{expand:?}");
    }
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

/// A corpus (JSON Lines, IDs `d0`, `d1`, …) with groups of identical
/// documents: the generator's exact copies, and six copies of one document
/// scattered after it. Returns the IDs in input order and the six.
fn corpus_with_copies(path: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let spec = dupgram_testkit::CorpusSpec {
        seed: 31,
        tokens: 20_000,
        vocabulary: 300,
        mean_doc_len: 60,
        exact_copies: 0.05,
        ..Default::default()
    };
    let mut texts = texts(spec);
    let copied = texts[4].clone();
    for at in [9, 30, 31, 120, texts.len()] {
        texts.insert(at, copied.clone());
    }
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("d{i}")).collect();
    let lines: String =
        ids.iter().zip(&texts).map(|(id, t)| format!("{}\n", serde_json::json!({ "id": id, "text": t }))).collect();
    std::fs::write(path, lines).unwrap();
    let six = ids.iter().zip(&texts).filter(|(_, t)| **t == copied).map(|(id, _)| id.clone()).collect();
    (ids, six)
}

/// Rows of a pairs TSV file, header left out, split into fields.
fn rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).map(|l| l.split('\t').map(str::to_owned).collect()).collect()
}

#[test]
fn expand_groups_lists_every_copy() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let (ids, six) = corpus_with_copies(&corpus);
    assert_eq!(six.len(), 6);
    let position = |id: &str| ids.iter().position(|i| i == id).unwrap();
    let (grouped, expanded, stats) =
        (dir.path().join("grouped.tsv"), dir.path().join("expanded.tsv"), dir.path().join("stats.json"));
    let options = ["-n", "5", "--min-sscr", "0.2"];
    let mut args = vec!["pairs", s(&corpus), "-q", "-o", s(&grouped)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let mut args = vec!["pairs", s(&corpus), "--expand-groups", "-o", s(&expanded), "--stats-json", s(&stats)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let (grouped, expanded) = (rows(&grouped), rows(&expanded));
    // Pairs in input order of a, then b; the default's rows are all there.
    let keys: Vec<(usize, usize)> = expanded.iter().map(|r| (position(&r[0]), position(&r[1]))).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "input order of a, then b");
    assert!(grouped.iter().all(|r| expanded.contains(r)));
    // Every copy has its first's pairs, with the same scores (columns turned round with the pair).
    let first_pairs: Vec<&Vec<String>> =
        grouped.iter().filter(|r| (r[0] == six[0]) != (r[1] == six[0]) && !six.contains(&r[1])).collect();
    assert!(!first_pairs.is_empty(), "the copied document shares text with others");
    for row in first_pairs {
        let other = if row[0] == six[0] { &row[1] } else { &row[0] };
        for copy in &six[1..] {
            let want: Vec<String> = if position(copy) < position(other) {
                [copy.clone(), other.clone()].into_iter().chain(row[2..].iter().cloned()).collect()
            } else {
                let r = &row[2..];
                [other, copy, &r[0], &r[1], &r[3], &r[2], &r[5], &r[4], &r[6]].into_iter().cloned().collect()
            };
            assert!(expanded.contains(&want), "{want:?}");
        }
    }
    // Every pair within the group, score 1.
    let within: Vec<&Vec<String>> = expanded.iter().filter(|r| six.contains(&r[0]) && six.contains(&r[1])).collect();
    assert_eq!(within.len(), 15);
    assert!(within.iter().all(|r| r[2..8].iter().all(|v| v == "1.000000")));
    // The summary says what the expansion added.
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(json["expanded_pairs"], (expanded.len() - grouped.len()) as u64);
    assert!(stderr.contains(&format!("{} added by --expand-groups", expanded.len() - grouped.len())), "{stderr}");
    // A group over --max-group-pairs is not expanded, and is named.
    let capped = dir.path().join("capped.tsv");
    let mut args = vec!["pairs", s(&corpus), "--expand-groups", "--max-group-pairs", "2", "-o", s(&capped)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("capped groups") && stderr.contains(&format!("{} (6 documents)", six[0])), "{stderr}");
    let capped = rows(&capped);
    assert!(!capped.iter().any(|r| r[0] == six[1] || r[1] == six[1] && r[0] != six[0]));
    // The help says what the default leaves out.
    let (_, help, _) = run(&["pairs", "--help"]);
    assert!(help.contains("--expand-groups") && help.contains("a copy's pairs are left out"), "{help}");
}

#[test]
fn expanded_pairs_stream_within_the_memory_budget() {
    // A document copied 101 times (a group --max-group-pairs 100 expands)
    // sharing a 5-gram with each of 10,000 others: about a million pairs
    // of copies, far more than 20M could hold. (At 16M its 14,578 words
    // leave no room for the 20,000 documents' list beside them.)
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.txt");
    let hub: Vec<String> = (0..2000).map(|i| format!("w{i}")).collect();
    let mut lines = vec![hub.join(" "); 101];
    for i in 0..10_000 {
        let at = (i * 5) % (hub.len() - 5);
        lines.push(format!("p{i}a {} p{i}b", hub[at..at + 5].join(" ")));
    }
    std::fs::write(&corpus, lines.join("\n") + "\n").unwrap();
    let stats = dir.path().join("s.json");
    let args = ["pairs", s(&corpus), "-n", "5", "-o", "/dev/null", "--memory", "20M", "--stats-json", s(&stats)];
    let (code, _, stderr) = run(&[&args[..], &["--expand-groups"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(json["expanded_pairs"].as_u64().unwrap() > 1_000_000, "{json}");
    let peak = json["peak_rss"].as_u64().unwrap();
    assert!(peak > 0 && peak <= 20 << 20, "peak {peak} over 20M");
}

/// A growing vocabulary (most words seen once) at small budgets: no budget
/// is refused for it. When the vocabulary outgrows the lexicon's room, its
/// table freezes and the other words are counted and numbered on disk;
/// the sieve that `pairs` and `dedup` fill while reading keeps its size,
/// and neither output changes.
#[test]
fn a_growing_vocabulary_freezes_the_table_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.jsonl");
    let spec = dupgram_testkit::CorpusSpec { exact_copies: 0.05, near_copies: 0.1, ..open_vocabulary(3, 600_000) };
    generated_from(&path, spec);
    let stats_path = dir.path().join("stats.json");
    for job in ["pairs", "dedup"] {
        let mut outputs = Vec::new();
        let (mut frozen, mut sieved) = (0, 0);
        for memory in ["1G", "20M", "24M", "28M", "34M"] {
            let out = dir.path().join(format!("{job}-{memory}.out"));
            let mut args = vec![job, s(&path), "-n", "5", "--memory", memory, "-q", "-o", s(&out)];
            args.extend(["--stats-json", s(&stats_path)]);
            if job == "dedup" {
                args.extend(["--unit", "doc"]);
            }
            let (code, _, stderr) = run(&args);
            assert_eq!(code, 0, "{job} --memory {memory}: {stderr}");
            let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats_path).unwrap()).unwrap();
            let first = &stats["first_pass"];
            assert!(stats["peak_rss"].as_u64().unwrap() < stats["memory_budget"].as_u64().unwrap(), "{stats}");
            frozen += u64::from(first["overflow_words"].as_u64().unwrap() > 0);
            sieved += u64::from(first["sieve"]["used"] == true);
            outputs.push(std::fs::read(&out).unwrap());
        }
        assert!(frozen > 0, "{job}: no budget froze the lexicon's table");
        assert!(sieved >= 3, "{job}: the sieve was used at {sieved} budgets");
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{job}: outputs differ between budgets");
    }
}

/// A corpus more than one sieve of the budget holds is indexed in parts by
/// first word, read back from the lexicon pass's word streams, the sieve
/// made anew for each part: `pairs` and `dedup` write byte for byte what
/// they write at 1G in one part, say so in the summary, keep the budget and
/// leave nothing behind. (Long documents: at 18M the list of 37,000
/// documents of 80 tokens leaves no room for postings beside it. 18M, not
/// the minimum of 16M: a debug build holds 7–8 MB of code resident when
/// it plans, and at 16M that left no room for postings at all.)
#[test]
fn a_corpus_too_large_for_one_sieve_is_indexed_in_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let spec = dupgram_testkit::CorpusSpec {
        seed: 11,
        // Over the n-grams the largest staged sieve of 18M takes (7M tokens
        // took 2 parts, and 1 at 20M), with room to spare (its size moves
        // with the document lists' allocations and the build's code).
        tokens: 9_000_000,
        vocabulary: 3000,
        mean_doc_len: 2000,
        ..Default::default()
    };
    generated_from(&path, spec);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for job in ["pairs", "dedup"] {
        let index = |memory: &str| {
            let out = dir.path().join(format!("{job}-{memory}.out"));
            let stats_path = dir.path().join("stats.json");
            let mut args = vec![job, s(&path), "-n", "6", "--memory", memory, "--tmp-dir", s(&tmp), "-o", s(&out)];
            args.extend(["--stats-json", s(&stats_path)]);
            if job == "dedup" {
                args.extend(["--unit", "doc"]);
            }
            let (code, _, stderr) = run(&args);
            assert_eq!(code, 0, "{job} --memory {memory}: {stderr}");
            assert!(leftovers(&tmp).is_empty(), "{job} --memory {memory}: {:?}", leftovers(&tmp));
            let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats_path).unwrap()).unwrap();
            (std::fs::read(&out).unwrap(), stats, stderr)
        };
        let (whole, one, _) = index("1G");
        let parts_of = |stats: &serde_json::Value| stats["first_pass"]["sieve"]["parts"].as_u64().unwrap();
        assert_eq!(parts_of(&one), 1, "{job}: {one}");
        let (parted, stats, summary) = index("18M");
        let parts = parts_of(&stats);
        assert!(parts > 1 && stats["first_pass"]["sieve"]["used"] == true, "{job}: {}", stats["first_pass"]);
        assert!(summary.contains(&format!("indexed in {parts} parts by first word")), "{summary}");
        assert!(summary.contains(" once filled)") && summary.contains("% of unseen n-grams pass"), "{summary}");
        assert!(parted == whole, "{job}: the index in {parts} parts differs from the index in one");
        assert!(stats["peak_rss"].as_u64().unwrap() <= 18 << 20, "{job}: {stats}");
    }
}

/// `pairs` reads the text once (its index walks the word streams), so it
/// makes no copy of standard input: it spills what it spills from the file.
/// `dedup` reads the text again for its decisions and spills its copy too.
#[test]
fn pairs_keeps_no_copy_of_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(sample("news.jsonl")).unwrap();
    let spilled = |job: &str, from_stdin: bool| {
        let stats = dir.path().join(format!("{job}-{from_stdin}.json"));
        let file = sample("news.jsonl");
        let input = if from_stdin { "-" } else { s(&file) };
        let args = [job, input, "--format", "jsonl", "-n", "5", "-q", "--stats-json", s(&stats)];
        let (code, _, stderr) = run_with_stdin(&args, from_stdin.then_some(&text[..]));
        assert_eq!(code, 0, "{job}: {stderr}");
        let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        stats["bytes_spilled"].as_u64().unwrap()
    };
    let (file, stdin) = (spilled("pairs", false), spilled("pairs", true));
    assert!(file > 0 && stdin == file, "pairs spilled {stdin} bytes from standard input, {file} from the file");
    let (file, stdin) = (spilled("dedup", false), spilled("dedup", true));
    assert!(stdin > file, "dedup spilled {stdin} bytes from standard input, {file} from the file");
}

/// Standard input can be read once: `dedup` keeps a copy while the lexicon
/// pass reads it (the index pass reads the word streams, the decisions the
/// copy), `pairs` needs none, and both write what they write from the file, whether the
/// input comes plain (copied zstd-compressed), gzipped or zstd-compressed
/// (copied as it comes), or shorter than a compression magic.
#[test]
fn standard_input_gives_what_the_file_gives() {
    let text = std::fs::read(sample("news.jsonl")).unwrap();
    let encodings = [text.clone(), gzip(&text), zstd::encode_all(&text[..], 3).unwrap()];
    for job in [&["pairs", "-n", "5", "-q"][..], &["dedup", "--unit", "p", "-n", "5", "-q"][..]] {
        let (code, from_file, stderr) = run(&[&job[..1], &[s(&sample("news.jsonl"))], &job[1..]].concat());
        assert_eq!(code, 0, "{stderr}");
        for (i, input) in encodings.iter().enumerate() {
            let (code, from_stdin, stderr) =
                run_with_stdin(&[&job[..1], &["-", "--format", "jsonl"], &job[1..]].concat(), Some(input));
            assert_eq!(code, 0, "{stderr}");
            assert!(!from_file.is_empty() && from_stdin == from_file, "{} (encoding {i})", job[0]);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.txt");
    std::fs::write(&tiny, b"a\n").unwrap();
    let (code, from_file, stderr) = run(&["dedup", s(&tiny), "--unit", "p", "-n", "1", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, from_stdin, stderr) = run_with_stdin(&["dedup", "-", "--unit", "p", "-n", "1", "-q"], Some(b"a\n"));
    assert_eq!(code, 0, "{stderr}");
    assert!(!from_file.is_empty() && from_stdin == from_file, "{from_stdin:?} against {from_file:?}");
}

/// Document IDs are kept on disk, not in the budget: 10,000 documents
/// with IDs of 8 KB each (82 MB of IDs, more than the whole budget) run
/// at `--memory 64M`, and each pair and cluster names its documents by
/// their long IDs. (Held in memory, as before, the lexicon pass
/// refused them.) `overlap` keeps them the same way.
#[test]
fn long_document_ids_stay_out_of_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("long-ids.jsonl");
    let id = |i: u32| format!("https://example.org/{}/{i:06}", "é".repeat(4090));
    let text = |i: u32| {
        // Every 500th document repeats the one before it, word for word.
        let j = if i % 500 == 1 { i - 1 } else { i };
        format!("record {j} of the set w{} x{} y{} z{} ends here", j % 1009, j % 97, j % 13, j / 7)
    };
    let mut lines = String::new();
    for i in 0..10_000 {
        lines.push_str(&serde_json::json!({"id": id(i), "text": text(i)}).to_string());
        lines.push('\n');
    }
    std::fs::write(&corpus, lines).unwrap();
    let (pairs, clusters, tmp) =
        (dir.path().join("pairs.tsv"), dir.path().join("clusters.tsv"), dir.path().join("tmp"));
    std::fs::create_dir(&tmp).unwrap();
    let (code, _, stderr) = run(&[
        "pairs",
        s(&corpus),
        "-n",
        "4",
        "--min-sscr",
        "0.9",
        "--memory",
        "64M",
        "-o",
        s(&pairs),
        "--clusters",
        s(&clusters),
        "--tmp-dir",
        s(&tmp),
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<String> = std::fs::read_to_string(&pairs).unwrap().lines().skip(1).map(str::to_owned).collect();
    let want: Vec<String> = (0..10_000).filter(|i| i % 500 == 1).map(|i| format!("{}\t{}", id(i - 1), id(i))).collect();
    let got: Vec<String> = rows.iter().map(|r| r.split('\t').take(2).collect::<Vec<_>>().join("\t")).collect();
    assert_eq!(got, want);
    assert!(rows.iter().all(|r| r.split('\t').nth(2) == Some("1.000000")), "{rows:?}");
    assert!(std::fs::read_to_string(&clusters).unwrap().contains(&id(9_501)));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "files left in the temporary directory");

    let rows = dir.path().join("rows.tsv");
    let (code, _, stderr) = run(&[
        "overlap",
        s(&corpus),
        "--reference",
        s(&corpus),
        "-n",
        "4",
        "--top",
        "1",
        "--memory",
        "64M",
        "-o",
        s(&rows),
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows = std::fs::read_to_string(&rows).unwrap();
    let row = rows.lines().nth(2).unwrap().split('\t').collect::<Vec<_>>();
    assert_eq!((row[0], row[6]), (id(1).as_str(), id(0).as_str()), "{row:?}");
}
