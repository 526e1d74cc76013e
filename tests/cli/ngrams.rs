//! `dupgram ngrams` end to end: formats, compression, bad input, resources.

use crate::common::*;
use std::path::Path;

#[test]
fn sample_matches_the_naive_counter() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dups.tsv");
    let (code, stdout, stderr) =
        run(&["ngrams", s(&sample("news.jsonl")), "-n", "8", "-o", s(&out), "--memory", "64M"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("duplicate n-grams"), "a summary is printed: {stderr}");
    let texts: Vec<String> = std::fs::read_to_string(sample("news.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_owned())
        .collect();
    let got = parse_tsv(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(got, naive(&texts, 8));
    assert!(got.contains_key("the night bus service to the northern suburbs"));
    assert!(!dir.path().join("dups.tsv.lex").exists(), "the lexicon is saved only when asked for");
}

/// `-o -` is standard output, for every command that writes a file: no
/// file named `-` appears, and the output is what `-o FILE` writes.
#[test]
fn a_dash_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let news = sample("news.jsonl");
    let file = dir.path().join("out");
    for job in [
        &["ngrams", "-n", "8"][..],
        &["pairs", "-n", "5"],
        &["dedup", "--unit", "doc", "-n", "5"],
        &["stats", "--n", "1..3"],
    ] {
        let mut args: Vec<&str> = job.to_vec();
        args.insert(1, s(&news));
        let (code, to_file, stderr) = run_in(dir.path(), &[&args[..], &["-q", "-o", s(&file)]].concat());
        assert_eq!(code, 0, "{job:?}: {stderr}");
        assert!(to_file.is_empty());
        let (code, stdout, stderr) = run_in(dir.path(), &[&args[..], &["-q", "-o", "-"]].concat());
        assert_eq!(code, 0, "{job:?}: {stderr}");
        assert_eq!(stdout, std::fs::read_to_string(&file).unwrap(), "{job:?}");
        assert!(!dir.path().join("-").exists(), "{job:?} made a file named -");
    }
}

#[test]
fn every_format_and_compression_gives_the_same_ngrams() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("c.jsonl");
    let texts = generated(&jsonl, 20_000, 5, 300);
    let expect = naive(&texts, 6);
    let text: String = texts.iter().map(|t| format!("{t}\n")).collect();
    let vertical: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("<doc id=\"{i}\">\n<p>\n{}\n</p>\n</doc>\n", t.replace(' ', "\tX\n")))
        .collect();
    let files = [
        ("c.txt", text.as_bytes().to_vec()),
        ("c.txt.gz", gzip(text.as_bytes())),
        ("c.jsonl.zst", zstd::encode_all(std::fs::read(&jsonl).unwrap().as_slice(), 3).unwrap()),
        ("c.vert", vertical.as_bytes().to_vec()),
        ("c.vert.gz", gzip(vertical.as_bytes())),
        ("noext", gzip(&std::fs::read(&jsonl).unwrap())),
    ];
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = run(&["ngrams", s(&path), "-n", "6", "-q", "--memory", "64M"]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(parse_tsv(&stdout), expect, "{name}");
    }
    // Standard input, and several inputs at once.
    let (code, stdout, stderr) = run_with_stdin(&["ngrams", "-", "-n", "6", "-q"], Some(&gzip(text.as_bytes())));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(parse_tsv(&stdout), expect);
    let half = dir.path().join("half.txt");
    let other = dir.path().join("other.txt");
    let mid = texts.len() / 2;
    std::fs::write(&half, texts[..mid].iter().map(|t| format!("{t}\n")).collect::<String>()).unwrap();
    std::fs::write(&other, texts[mid..].iter().map(|t| format!("{t}\n")).collect::<String>()).unwrap();
    let (code, stdout, _) = run(&["ngrams", s(&half), s(&other), "-n", "6", "-q"]);
    assert_eq!(code, 0);
    assert_eq!(parse_tsv(&stdout), expect);
}

#[test]
fn output_is_identical_for_any_threads_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 150_000, 11, 3000);
    let mut outputs = Vec::new();
    // Two threads at 16M leave chunks no room once the code is mapped in
    // large pieces (see docs/limits.md#memory): one thread takes the floor.
    for (threads, memory) in [("1", "1G"), ("1", "16M"), ("2", "24M"), ("3", "32M"), ("2", "256M")] {
        let out = dir.path().join(format!("o-{threads}-{memory}.tsv"));
        let (code, _, stderr) =
            run(&["ngrams", s(&corpus), "-n", "7", "-o", s(&out), "--threads", threads, "--memory", memory, "-q"]);
        assert_eq!(code, 0, "{threads} threads, {memory}: {stderr}");
        outputs.push(std::fs::read(&out).unwrap());
    }
    assert!(!outputs[0].is_empty());
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn a_document_longer_than_a_chunk_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // One 1,000,000-token line; at 16M a chunk holds a few hundred thousand n-grams.
    let spec = dupgram_testkit::CorpusSpec {
        seed: 3,
        tokens: 1_000_000,
        vocabulary: 2000,
        mean_doc_len: 1000,
        ..Default::default()
    };
    let words = texts(spec);
    let doc = words.join(" ");
    let path = dir.path().join("long.txt");
    std::fs::write(&path, format!("{doc}\nshort line\n")).unwrap();
    let stats = dir.path().join("stats.json");
    let (code, stdout, stderr) = run(&[
        "ngrams",
        s(&path),
        "-n",
        "5",
        "--memory",
        "16M",
        "--no-sieve",
        "--threads",
        "1",
        "--stats-json",
        s(&stats),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(json["runs_written"].as_u64().unwrap() > 1, "{json}");
    assert_eq!(parse_tsv(&stdout), naive(&[doc, "short line".into()], 5));
}

#[test]
fn empty_and_short_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let (code, stdout, stderr) = run(&["ngrams", s(&empty), "-n", "3"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let short = dir.path().join("short.txt");
    std::fs::write(&short, b"one two\none two\n\nthree\n").unwrap();
    let (code, stdout, _) = run(&["ngrams", s(&short), "-n", "3", "-q"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    let (code, stdout, _) = run(&["ngrams", s(&short), "-n", "2", "-q"]);
    assert_eq!((code, stdout.as_str()), (0, "one two\t2\n"));
    let (code, stdout, _) = run(&["ngrams", s(&short), "-n", "1", "-q", "--min-count", "3"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}

#[test]
fn invalid_utf8_is_replaced_counted_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.txt");
    std::fs::write(&path, b"caf\xe9 au lait caf\xe9 au lait\nfine text here\n").unwrap();
    let stats = dir.path().join("s.json");
    let (code, stdout, stderr) = run(&["ngrams", s(&path), "-n", "2", "--stats-json", s(&stats)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 invalid UTF-8 sequences replaced") && stderr.contains("bad.txt: line 1"), "{stderr}");
    assert_eq!(parse_tsv(&stdout).get("au lait"), Some(&2));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(json["replaced_utf8"], 2);
}

#[test]
fn malformed_json_stops_with_file_and_line_unless_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, b"{\"text\": \"a b c a b c\"}\n{\"text\": \"a b c\n{\"text\": \"a b c\"}\n").unwrap();
    let out = dir.path().join("out.tsv");
    let (code, _, stderr) = run(&["ngrams", s(&path), "-n", "3", "-o", s(&out)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("bad.jsonl: line 2: malformed JSON"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(leftovers(dir.path()).iter().all(|p| p == &path), "no output left: {:?}", leftovers(dir.path()));
    let (code, _, stderr) = run(&["ngrams", s(&path), "-n", "3", "-o", s(&out), "--skip-bad"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("1 bad records skipped, the first at") && stderr.contains("line 2"), "{stderr}");
    assert_eq!(parse_tsv(&std::fs::read_to_string(&out).unwrap()).get("a b c"), Some(&3));
}

#[test]
fn truncated_compressed_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let jsonl = dir.path().join("c.jsonl");
    generated(&jsonl, 50_000, 9, 500);
    let body = std::fs::read(&jsonl).unwrap();
    let gz = gzip(&body);
    let zst = zstd::encode_all(&body[..], 3).unwrap();
    let (gz, zst) = (&gz[..gz.len() * 2 / 3], &zst[..zst.len() * 2 / 3]);
    let lines = [
        breaking_line(flate2::read::GzDecoder::new(gz)),
        breaking_line(zstd::stream::read::Decoder::new(zst).unwrap()),
    ];
    for ((name, bytes), line) in [("t.jsonl.gz", gz), ("t.jsonl.zst", zst)].into_iter().zip(lines) {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = dir.path().join("out.tsv");
        let (code, _, stderr) = run(&["ngrams", s(&path), "-n", "4", "-o", s(&out), "--tmp-dir", s(&tmp)]);
        assert_eq!(code, 1, "{name}");
        assert!(stderr.contains(name) && stderr.contains("truncated or damaged"), "{stderr}");
        assert!(stderr.contains(&format!("{name}: line {line}, compressed byte ")), "{line}: {stderr}");
        assert!(!out.exists() && !dir.path().join("out.tsv.lex").exists(), "no output under the final name");
        assert!(leftovers(&tmp).is_empty(), "temporary files removed: {:?}", leftovers(&tmp));
        assert!(
            leftovers(dir.path()).iter().all(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.')),
            "no hidden temporaries"
        );
    }
}

#[test]
fn bad_paths_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample("news.jsonl");
    for (args, needle) in [
        (vec!["ngrams", "/no/such/corpus.jsonl"], "/no/such/corpus.jsonl: no such file"),
        (vec!["ngrams", s(&sample), "-o", "/no/such/dir/out.tsv"], "/no/such/dir/out.tsv"),
        (vec!["ngrams", s(&sample), "--tmp-dir", "/no/such/dir"], "/no/such/dir: --tmp-dir is not a directory"),
        (vec!["ngrams", s(&sample), "--memory", "4M"], "at least 16M"),
        (vec!["ngrams", s(&sample), "-n", "0"], "n must be between 1 and 32"),
        (vec!["ngrams", s(&sample), "--stopwords", "/no/such/stop.txt"], "/no/such/stop.txt"),
        (vec!["ngrams", s(&sample), "--tmp-share", "0"], "--tmp-share must be above 0, not 0"),
        (vec!["ngrams", s(&sample), "--tmp-share=-0.5"], "--tmp-share must be above 0, not -0.5"),
        (vec!["ngrams", s(&sample), "--tmp-share", "NaN"], "--tmp-share must be above 0, not NaN"),
        (vec!["ngrams", s(&sample), "--tmp-share", "inf"], "--tmp-share must be above 0, not inf"),
    ] {
        let (code, _, stderr) = run(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(stderr.trim().lines().count() <= 3, "short error: {stderr}");
    }
    let out_dir = dir.path().join("is-a-dir");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, _, stderr) = run(&["ngrams", s(&sample), "-o", s(&out_dir)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("is a directory"), "{stderr}");
}

/// A `.zst` output's encoder takes its room from the budget: below the
/// minimum and the encoders together a job is refused before any work,
/// saying what budget it needs, and leaves no file; at that budget it runs.
#[test]
fn a_zst_output_below_its_budget_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample("news.jsonl");
    let out = dir.path().join("out.zst");
    let clusters = dir.path().join("clusters.tsv.zst");
    for (args, needle) in [
        (vec!["ngrams", s(&sample), "-o", s(&out), "--memory", "20M"], "1 .zst output takes 5.0 MiB"),
        (vec!["dedup", s(&sample), "-o", s(&out), "--memory", "16M"], "--memory 21M or more"),
        (vec!["dedup", s(&sample), "--unit", "span", "-o", s(&out), "--memory", "20M"], "--memory 21M or more"),
        (vec!["pairs", s(&sample), "-o", s(&out), "--memory", "20M"], "--memory 21M or more"),
        (
            vec!["pairs", s(&sample), "-o", s(&out), "--clusters", s(&clusters), "--memory", "25M"],
            "--memory 26M or more",
        ),
    ] {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle) && stderr.contains("too small"), "{args:?}: {stderr}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
    let (code, _, stderr) = run(&["ngrams", s(&sample), "-n", "3", "-o", s(&out), "--memory", "21M", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let written = zstd::decode_all(std::fs::File::open(&out).unwrap()).unwrap();
    assert!(!written.is_empty());
}

#[test]
fn a_full_temporary_disk_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs", s(&mnt)])
        .status()
        .is_ok_and(|st| st.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root)");
        return;
    }
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 300_000, 4, 5000);
    let out = dir.path().join("out.tsv");
    let (code, _, stderr) =
        run(&["ngrams", s(&corpus), "-n", "5", "--no-sieve", "-o", s(&out), "--tmp-dir", s(&mnt), "--memory", "16M"]);
    let left = leftovers(&mnt);
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(left.is_empty(), "temporary files removed: {left:?}");
    assert!(!out.exists());
}

#[test]
fn ctrl_c_removes_temporary_files_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 3_000_000, 8, 20_000);
    let out = dir.path().join("out.tsv");
    let child = dupgram()
        .args([
            "ngrams",
            s(&corpus),
            "-n",
            "8",
            "-o",
            s(&out),
            "--tmp-dir",
            s(&tmp),
            "--memory",
            "16M",
            "--threads",
            "1",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the job has started spilling, then interrupt it.
    let started = std::time::Instant::now();
    while leftovers(&tmp).is_empty() && started.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // kill(1) sends SIGINT as a terminal's Ctrl-C would.
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(leftovers(&tmp).is_empty(), "temporary files removed: {:?}", leftovers(&tmp));
    assert!(!out.exists() && !Path::new(&format!("{}.lex", out.display())).exists());
    assert!(leftovers(dir.path()).iter().all(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.')));
}

#[test]
fn zst_output_stats_json_and_lexicon() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.tsv.zst");
    let lex = dir.path().join("words.lex");
    let stats = dir.path().join("stats.json");
    let (code, _, stderr) = run(&[
        "ngrams",
        s(&sample("news.jsonl")),
        "-n",
        "8",
        "-o",
        s(&out),
        "--lexicon",
        s(&lex),
        "--stats-json",
        s(&stats),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let text = String::from_utf8(zstd::decode_all(std::fs::File::open(&out).unwrap()).unwrap()).unwrap();
    let (_, plain, _) = run(&["ngrams", s(&sample("news.jsonl")), "-n", "8", "-q"]);
    assert_eq!(text, plain);
    assert!(lex.is_file() && !dir.path().join("d.tsv.zst.lex").exists());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    for key in [
        "documents",
        "tokens",
        "distinct_ngrams",
        "duplicate_types",
        "duplicate_occurrences",
        "runs_written",
        "bytes_spilled",
        "merge_passes",
        "peak_rss",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    assert_eq!(json["documents"], 19);
    assert_eq!(json["duplicate_types"].as_u64().unwrap() as usize, text.lines().count());
    assert!(json["seconds"]["total"].as_f64().is_some());
}

#[test]
fn memory_budget_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    // 12,000 words (about 0.8 MB in the lexicon pass) at two small budgets.
    // Not at the 16M minimum: there a test build (opt-level 1) may start with
    // 8–9 MB resident, 7.8 MB of it code (measured), and the plan charges
    // half as much again for code still to page in, which leaves room for
    // neither 20,000 words nor, at times, chunks of 10-grams on two threads
    // (each refused once in CI, with a clear message). Other tests run at 16M.
    generated(&corpus, 600_000, 21, 12_000);
    for budget in ["20M", "32M"] {
        let stats = dir.path().join("s.json");
        let (code, _, stderr) =
            run(&["ngrams", s(&corpus), "-n", "10", "-o", "/dev/null", "--memory", budget, "--stats-json", s(&stats)]);
        assert_eq!(code, 0, "{stderr}");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let peak = json["peak_rss"].as_u64().unwrap();
        let limit = dupgram_pipeline::parse_bytes(budget).unwrap();
        assert!(peak > 0 && peak <= limit, "peak {peak} over {budget}");
    }
}

/// Records near the one-record limit (a sixteenth of the budget) whose every
/// other word is one of 131,072: the lexicon pass must not hold a whole
/// record's words at once (it once took 66 MiB of a 64 MiB budget here).
#[test]
fn memory_budget_is_kept_with_records_of_new_words() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("long.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&corpus).unwrap());
    let mut state = 1u64;
    for _ in 0..6 {
        let mut text = String::new();
        for i in 0..500_000 {
            if i % 2 == 0 {
                text.push_str("the ");
            } else {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(&format!("w{:x} ", state >> 47));
            }
        }
        writeln!(file, "{}", serde_json::json!({ "text": text })).unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let stats = dir.path().join("s.json");
    let (code, _, stderr) =
        run(&["ngrams", s(&corpus), "-n", "5", "-o", "/dev/null", "--memory", "64M", "--stats-json", s(&stats)]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(json["tokens"], 3_000_000, "{json}");
    let peak = json["peak_rss"].as_u64().unwrap();
    assert!(peak > 0 && peak <= 64 << 20, "peak {peak} over 64M");
}

#[test]
fn stop_words_and_normalisation_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    std::fs::write(&path, "The <b>price</b> is 1,000 euros.\nthe price is 2,500 euros!\n").unwrap();
    let (code, stdout, stderr) = run(&["ngrams", s(&path), "-n", "4", "-q", "--strip-markup", "--numbers-as-token"]);
    assert_eq!(code, 0, "{stderr}");
    // All five words occur twice: IDs follow their bytes ("#", "euros", "is", "price", "the").
    assert_eq!(stdout, "price is # euros\t2\nthe price is #\t2\n");
    let stop = dir.path().join("stop.txt");
    std::fs::write(&stop, "THE\nis\n").unwrap();
    let (_, stdout, _) =
        run(&["ngrams", s(&path), "-n", "3", "-q", "--strip-markup", "--numbers-as-token", "--stopwords", s(&stop)]);
    assert_eq!(stdout, "price # euros\t2\n");
    let (_, stdout, _) =
        run(&["ngrams", s(&path), "-n", "2", "-q", "--strip-markup", "--numbers-as-token", "--stop-top", "2"]);
    // The two "most frequent" (all tie; the first by bytes) are "#" and "euros".
    assert_eq!(stdout, "price is\t2\nthe price\t2\n");
    let (code, _, stderr) = run(&["ngrams", s(&path), "--tokens", "raw", "--strip-markup"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("apply to the default word tokenizer"), "{stderr}");
    let raw = dir.path().join("raw.txt");
    std::fs::write(&raw, "a-b c\na-b c\nA-b c\n").unwrap();
    let (_, stdout, _) = run(&["ngrams", s(&raw), "-n", "2", "-q", "--tokens", "raw"]);
    assert_eq!(stdout, "a-b c\t2\n");
    let (_, stdout, _) = run(&["ngrams", s(&raw), "-n", "2", "-q"]);
    assert_eq!(stdout, "a b\t3\nb c\t3\n");
}

#[test]
fn help_describes_the_command() {
    let (code, stdout, _) = run(&["ngrams", "--help"]);
    assert_eq!(code, 0);
    for needle in
        ["--memory", "--min-count", "--stop-top", "--numbers-as-token", "--stats-json", "--skip-bad", "Examples"]
    {
        assert!(stdout.contains(needle), "{needle} missing from --help");
    }
    let (code, _, stderr) = run(&["ngrams"]);
    assert_eq!(code, 2, "{stderr}");
}

/// A growing vocabulary (most words seen once, as in web text) against the
/// naive counter at several real `--memory` budgets, nothing forced: the word
/// streams, the lexicon's table frozen when the vocabulary outgrows its room
/// (the other words counted and numbered on disk), the sieve halving to
/// make room for chunks, or going, must never change a count; peak memory
/// stays in the budget.
#[test]
fn a_growing_vocabulary_counts_exactly_at_every_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.txt");
    let texts = texts(open_vocabulary(7, 1_000_000));
    std::fs::write(&path, texts.join("\n") + "\n").unwrap();
    let want = naive(&texts, 3);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (out, stats_path) = (dir.path().join("out.tsv"), dir.path().join("stats.json"));
    let mut frozen = 0;
    let mut sieved = 0;
    for (memory, threads) in [("40M", "1"), ("44M", "2"), ("52M", "2"), ("64M", "1"), ("1G", "2")] {
        let (code, _, stderr) = run(&[
            "ngrams",
            s(&path),
            "-n",
            "3",
            "--memory",
            memory,
            "--threads",
            threads,
            "--tmp-dir",
            s(&tmp),
            "-o",
            s(&out),
            "--stats-json",
            s(&stats_path),
        ]);
        assert_eq!(code, 0, "--memory {memory}: {stderr}");
        let got = parse_tsv(&std::fs::read_to_string(&out).unwrap());
        assert!(got == want, "--memory {memory}: {} n-grams, the naive counter {}", got.len(), want.len());
        let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats_path).unwrap()).unwrap();
        assert!(stats["vocabulary"].as_u64().unwrap() > 100_000, "{stats}");
        assert!(stats["peak_rss"].as_u64().unwrap() < stats["memory_budget"].as_u64().unwrap(), "{stats}");
        // The summary's vocabulary line gives the words past the table, their tokens and slots.
        let past = |key: &str| dupgram_report::group(stats[key].as_u64().unwrap());
        let line = format!(
            "{} words past the lexicon's room ({} tokens, {} slots of its epochs)",
            past("overflow_words"),
            past("overflow_tokens"),
            past("overflow_slots")
        );
        assert_eq!(stderr.contains(&line), stats["overflow_words"].as_u64().unwrap() > 0, "{line}\n{stderr}");
        frozen += u64::from(stats["overflow_words"].as_u64().unwrap() > 0);
        sieved += u64::from(stats["sieve"]["used"].as_bool().unwrap());
        assert!(leftovers(&tmp).is_empty(), "--memory {memory}: {:?}", leftovers(&tmp));
    }
    assert!(frozen > 0, "no budget made the lexicon's table freeze");
    assert!(sieved >= 3, "the sieve was used at {sieved} budgets");
}

/// A corpus that looks more than twice what the budget's largest sieve holds
/// is counted in parts by first word, the sieve refilled from the word
/// streams for each: the output is byte for byte the one-part count's, the
/// summary says so, and the memory stays in the budget, at the minimum.
#[test]
fn a_corpus_too_large_for_one_sieve_is_counted_in_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    generated(&path, 5_000_000, 11, 3000);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let count_with = |memory: &str, share: &str| {
        let (out, stats_path) = (dir.path().join(format!("out-{memory}.tsv")), dir.path().join("stats.json"));
        let args = ["ngrams", s(&path), "-n", "4", "--memory", memory, "--tmp-dir", s(&tmp), "-o", s(&out)];
        let share = ["--tmp-share", share];
        let (code, _, stderr) = run(&[&args[..], &["--stats-json", s(&stats_path)], &share[..]].concat());
        assert_eq!(code, 0, "--memory {memory}: {stderr}");
        assert!(leftovers(&tmp).is_empty(), "--memory {memory}: {:?}", leftovers(&tmp));
        let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats_path).unwrap()).unwrap();
        (std::fs::read(&out).unwrap(), stats, stderr)
    };
    // A share of the text too small for print runs: a sieve per part.
    let count = |memory: &str| count_with(memory, "0.3");
    let (whole, one, _) = count("1G");
    assert_eq!(one["sieve"]["parts"], 1, "{one}");
    let (parted, stats, summary) = count("16M");
    let parts = stats["sieve"]["parts"].as_u64().unwrap();
    assert!(parts > 1 && stats["sieve"]["used"] == true, "{}", stats["sieve"]);
    assert!(summary.contains(&format!("counted in {parts} parts by first word")), "{summary}");
    // Filled as a staged sieve, then frozen to its "seen twice" filter, three tenths of it.
    assert!(summary.contains(" once filled)"), "{summary}");
    let (filling, frozen) =
        (stats["sieve"]["bytes"].as_u64().unwrap(), stats["sieve"]["frozen_bytes"].as_u64().unwrap());
    assert!(frozen * 3 <= filling && frozen * 4 >= filling, "{}", stats["sieve"]);
    assert!(parted == whole, "the count in {parts} parts differs from the count in one");
    assert!(stats["peak_rss"].as_u64().unwrap() < stats["memory_budget"].as_u64().unwrap(), "{stats}");
    for key in ["ngrams", "distinct_ngrams", "duplicate_types", "duplicate_occurrences"] {
        assert_eq!(stats[key], one[key], "{key}");
    }
    // Room for print runs: the repeats proven once when a sieve per part
    // would take three parts or more (here, as the build's own memory
    // leaves the sieve more or less room, two or three), the same output.
    let (printed, stats, summary) = count_with("16M", "1");
    if stats["sieve"]["repeat_prints"].as_u64().unwrap() > 0 {
        assert!(summary.contains("repeat prints proven once"), "{summary}");
    } else {
        assert!(stats["sieve"]["parts"].as_u64().unwrap() < 3, "parts a sieve fills: {}", stats["sieve"]);
    }
    assert!(printed == whole, "the count over repeat prints differs from the count in one part");
    assert!(stats["peak_rss"].as_u64().unwrap() < stats["memory_budget"].as_u64().unwrap(), "{stats}");
    assert_eq!(stats["duplicate_types"], one["duplicate_types"]);
}
