//! `dupgram dedup` end to end: Onion's semantics on hand-made samples, Benko's
//! exact test, JSON Lines output, and the one-instance invariant on random corpora.

use crate::common::*;
use std::collections::HashSet;
use std::path::PathBuf;

/// (mark, words) of each paragraph of a marked vertical file.
fn paragraphs(marked: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut words = Vec::new();
    let mut mark = false;
    for line in marked.lines() {
        let (m, text) = line.split_once('\t').expect("a mark and a TAB");
        match text {
            "<p>" => {
                mark = m == "1";
                words.clear();
            }
            "</p>" => out.push((mark, words.join(" "))),
            t if !t.starts_with('<') => {
                assert_eq!(m == "1", mark, "the lines of a paragraph share its mark");
                words.push(t.to_owned());
            }
            _ => {}
        }
    }
    out
}

fn marks(args: &[&str]) -> Vec<bool> {
    let (code, stdout, stderr) = run(args);
    assert_eq!(code, 0, "{stderr}");
    paragraphs(&stdout).into_iter().map(|(m, _)| m).collect()
}

#[test]
fn onion_semantics_on_the_sample() {
    let sample = sample("onion-sample.vert");
    let path = s(&sample);
    // d1: A B | d2: A "fine weather" | d3: C A "indeed" B | d4: A B | d5: E "and then" E | d6: half of C
    let with_smoothing = marks(&["dedup", path, "-n", "3", "--threshold", "0.5", "--max-stub", "2", "-q"]);
    assert_eq!(
        with_smoothing,
        [
            false, false, // the first instances are kept
            true, true, // the copy of A, and the 2-token stub between it and the document's end
            false, true, true, true, // C is new; A repeats; "indeed" is a stub between duplicates; B repeats
            true, true, // nothing new
            false, false, true,  // E is repeated within its own document
            false, // exactly half covered: not more than the threshold
        ]
    );
    let without = marks(&["dedup", path, "-n", "3", "--threshold", "0.5", "--no-smoothing", "-q"]);
    assert_eq!(without, [false, false, true, false, false, true, false, true, true, true, false, false, true, false]);
    let strict = marks(&["dedup", path, "-n", "3", "--threshold", "0.4", "--no-smoothing", "-q"]);
    assert!(strict[13], "half covered is more than 0.4");
    // Stripped: d2 and d4 lose every paragraph and go whole, tags included.
    let (code, stripped, _) = run(&["dedup", path, "-n", "3", "--max-stub", "2", "--strip", "-q"]);
    assert_eq!(code, 0);
    let ids: Vec<&str> = stripped.lines().filter(|l| l.starts_with("<doc")).collect();
    assert_eq!(ids, ["<doc id=\"d1\">", "<doc id=\"d3\">", "<doc id=\"d5\">", "<doc id=\"d6\">"]);
    assert!(!stripped.contains("indeed") && stripped.contains("farmers"));
}

/// A `\r` inside a token line's first column is part of its token (only
/// one ending the line is dropped): the index counts the tokens the
/// decisions read, whichever way the line was read.
#[test]
fn a_carriage_return_inside_a_token_line_is_part_of_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cr.vert");
    let doc = |id: &str| format!("<doc id=\"{id}\">\r\nab\rcd\tX\r\nx\ny\r\n\r\tZ\nz\nw\n</doc>\n");
    std::fs::write(&path, format!("{}{}", doc("1"), doc("2"))).unwrap();
    for unit in ["doc", "p", "s", "span"] {
        let (code, _, err) = run(&["dedup", s(&path), "--unit", unit, "-n", "3", "-q", "-o", "/dev/null"]);
        assert_eq!(code, 0, "{unit}: {err}");
    }
    let (code, out, err) = run(&["ngrams", s(&path), "-n", "2", "-q"]);
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["\r z\t2", "ab\rcd x\t2", "x y\t2", "y \r\t2", "z w\t2"]);
}

#[test]
fn exact_test_catches_short_paragraphs() {
    let sample = sample("benko-exact.vert");
    let path = s(&sample);
    // Lines of a TV schedule and a league table: too short for 7-grams.
    assert_eq!(marks(&["dedup", path, "-n", "7", "--no-smoothing", "-q"]), [false; 7]);
    assert_eq!(
        marks(&["dedup", path, "-n", "7", "--no-smoothing", "--exact", "-q"]),
        [false, true, true, false, true, true, false],
        "times and scores differ, the words do not"
    );
}

#[test]
fn jsonl_annotations_and_stripping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let a = "The council voted to extend the night buses to the suburbs.";
    let b = "Tickets for the summer festival will cost more this year.";
    let records = [
        serde_json::json!({"id": "1", "text": a, "source": "agency"}),
        serde_json::json!({"id": "2", "text": format!("{b}\n\n{a}"), "source": "paper"}),
        serde_json::json!({"id": "3", "text": a}),
    ];
    std::fs::write(&path, records.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
    let (code, out, stderr) = run(&["dedup", s(&path), "--unit", "p", "-n", "4", "--no-smoothing", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows[0]["dup_fraction"], 0.0);
    assert_eq!(rows[0]["source"], "agency", "other fields are kept");
    let start = b.chars().count() + 2;
    assert_eq!(rows[1]["dup_spans"], serde_json::json!([[start, start + a.chars().count()]]));
    assert!(rows[1]["dup_fraction"].as_f64().unwrap() > 0.4);
    assert_eq!(rows[2]["dup_spans"], serde_json::json!([[0, a.chars().count()]]));
    let (_, stripped, _) = run(&["dedup", s(&path), "--unit", "p", "-n", "4", "--no-smoothing", "--strip", "-q"]);
    let rows: Vec<serde_json::Value> = stripped.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2, "the third record has nothing left");
    assert_eq!(rows[1]["text"], format!("{b}\n\n"));
    // Document 2 is a little over half a copy: kept at 0.6, like document 1; document 3 goes.
    let doc_args = ["dedup", s(&path), "--unit", "doc", "-n", "4", "--no-smoothing", "--strip", "-q"];
    let (_, docs, _) = run(&[&doc_args[..], &["--threshold", "0.6"]].concat());
    assert_eq!(docs.lines().count(), 2, "document 3 repeats document 1");
    let (_, docs, _) = run(&[&doc_args[..], &["--threshold", "0.5"]].concat());
    assert_eq!(docs.lines().count(), 1);
    // With smoothing (Onion's rule), a whole document of at most --max-stub tokens goes, repeated or not.
    let (_, docs, _) = run(&["dedup", s(&path), "--unit", "doc", "-n", "4", "--threshold", "0.6", "--strip", "-q"]);
    let ids: Vec<serde_json::Value> =
        docs.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].clone()).collect();
    assert_eq!(ids, ["2"], "documents 1 and 3 have 11 tokens, document 2 has 21");
    let (_, docs, _) = run(&[
        "dedup",
        s(&path),
        "--unit",
        "doc",
        "-n",
        "4",
        "--threshold",
        "0.6",
        "--max-stub",
        "10",
        "--strip",
        "-q",
    ]);
    assert_eq!(docs.lines().count(), 2, "with --max-stub 10, document 1 stays and document 3 repeats it");
}

/// Thousands of JSON Lines records of every length, a quarter of them
/// copies of earlier ones: the records the decisions read back (their line
/// buffers reused from document to document, long after short and short
/// after long) are written whole and as read, the copies alone go, and the
/// output is the same at the smallest budget on one thread as at 1G on two.
#[test]
fn jsonl_records_read_back_whole_at_any_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut word = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        format!("w{}", state % 1_000_000)
    };
    let mut texts: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    for i in 0..5_000usize {
        let text = match i % 4 {
            3 => texts[i / 2].clone(),
            _ => (0..5 + (i * 37) % 120).map(|_| word()).collect::<Vec<_>>().join(" "),
        };
        let record = match i % 3 {
            0 => serde_json::json!({ "id": format!("d{i}"), "text": text }),
            _ => serde_json::json!({ "id": format!("d{i}"), "text": text, "meta": "x".repeat(i % 700) }),
        };
        lines.push(record.to_string());
        texts.push(text);
    }
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let mut outputs = Vec::new();
    for (memory, threads) in [("16M", "1"), ("1G", "2")] {
        let args = ["dedup", s(&path), "--unit", "doc", "-n", "5", "--no-smoothing", "--strip", "-q"];
        let (code, out, stderr) = run(&[&args[..], &["--memory", memory, "--threads", threads]].concat());
        assert_eq!(code, 0, "{stderr}");
        outputs.push(out);
    }
    assert_eq!(outputs[0], outputs[1], "the same output at 16M on one thread and 1G on two");
    let kept: Vec<&str> = outputs[0].lines().collect();
    let originals: Vec<&String> = lines.iter().enumerate().filter(|(i, _)| i % 4 != 3).map(|(_, l)| l).collect();
    assert_eq!(kept.len(), originals.len(), "the copies alone are removed");
    for (out, original) in kept.iter().zip(originals) {
        assert_eq!(out, original, "a record written as it was read");
    }
}

/// Random vertical corpora: after dedup, every kept paragraph is at most
/// `threshold` covered by n-grams seen before (in kept text or earlier in its
/// document), and every removed one is more than that or a smoothed stub: a
/// run of at most `--max-stub` tokens between duplicates or the document's
/// edges (the threshold compared as a 32-bit float, as Onion does).
#[test]
fn one_instance_invariant_on_random_corpora() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..6u64 {
        let spec = dupgram_testkit::CorpusSpec {
            seed,
            tokens: 20_000,
            vocabulary: 60,
            mean_doc_len: 60,
            ..Default::default()
        };
        let corpus = dupgram_testkit::Corpus::new(spec.clone());
        let docs: Vec<Vec<Vec<String>>> = dupgram_testkit::Corpus::new(spec)
            .map(|d| {
                d.words
                    .chunks(7 + (seed as usize % 5))
                    .map(|p| p.iter().map(|&w| corpus.word(w).into_owned()).collect())
                    .collect()
            })
            .collect();
        let mut vert = String::new();
        for (i, doc) in docs.iter().enumerate() {
            vert.push_str(&format!("<doc id=\"{i}\">\n"));
            for p in doc {
                vert.push_str("<p>\n");
                for w in p {
                    vert.push_str(w);
                    vert.push('\n');
                }
                vert.push_str("</p>\n");
            }
            vert.push_str("</doc>\n");
        }
        let path = dir.path().join("c.vert");
        std::fs::write(&path, &vert).unwrap();
        let (n, threshold, max_stub) = (3 + seed as usize % 3, 0.3 + 0.1 * (seed % 5) as f64, 2 + seed as u32 % 4);
        let (code, marked, stderr) = run(&[
            "dedup",
            s(&path),
            "-n",
            &n.to_string(),
            "--threshold",
            &threshold.to_string(),
            "--max-stub",
            &max_stub.to_string(),
            "-q",
            "--memory",
            "16M",
        ]);
        assert_eq!(code, 0, "{stderr}");
        let got: Vec<bool> = paragraphs(&marked).into_iter().map(|(m, _)| m).collect();
        check_invariant(&docs, &got, n, threshold, max_stub);
        let (_, stripped, _) = run(&[
            "dedup",
            s(&path),
            "-n",
            &n.to_string(),
            "--threshold",
            &threshold.to_string(),
            "--max-stub",
            &max_stub.to_string(),
            "-q",
            "--strip",
        ]);
        let kept: Vec<&str> = marked.lines().filter_map(|l| l.strip_prefix("0\t")).collect();
        assert_eq!(stripped.lines().collect::<Vec<_>>(), kept, "--strip drops exactly the marked lines");
    }
}

fn check_invariant(docs: &[Vec<Vec<String>>], removed: &[bool], n: usize, threshold: f64, max_stub: u32) {
    let mut kept: HashSet<Vec<&str>> = HashSet::new();
    let mut flat = removed.iter();
    for doc in docs {
        let marks: Vec<bool> = doc.iter().map(|_| *flat.next().expect("a mark per paragraph")).collect();
        let tokens: Vec<&str> = doc.iter().flatten().map(String::as_str).collect();
        let mut unit_of = Vec::new();
        let mut starts = Vec::new();
        for (u, p) in doc.iter().enumerate() {
            starts.push(unit_of.len());
            unit_of.extend(std::iter::repeat_n(u, p.len()));
        }
        let mut seen_here: HashSet<Vec<&str>> = HashSet::new();
        let mut covered: Vec<HashSet<usize>> = vec![HashSet::new(); doc.len()];
        for p in 0..tokens.len().saturating_sub(n - 1) {
            let g = tokens[p..p + n].to_vec();
            let u = unit_of[p + n - 1];
            if seen_here.contains(&g) || kept.contains(&g) {
                covered[u].extend(p.max(starts[u])..p + n);
            }
            seen_here.insert(g);
        }
        let over: Vec<bool> = doc
            .iter()
            .enumerate()
            .map(|(u, p)| !p.is_empty() && covered[u].len() as f64 / p.len() as f64 > f64::from(threshold as f32))
            .collect();
        for (u, p) in doc.iter().enumerate() {
            if !marks[u] {
                assert!(!over[u], "a kept paragraph is over the threshold: {p:?}");
            } else if !over[u] {
                // Smoothed: a short run of non-duplicates bounded by duplicates or the edges.
                let mut lo = u;
                while lo > 0 && !over[lo - 1] {
                    lo -= 1;
                }
                let mut hi = u + 1;
                while hi < doc.len() && !over[hi] {
                    hi += 1;
                }
                let stub: usize = doc[lo..hi].iter().map(Vec::len).sum();
                assert!(stub as u32 <= max_stub, "a removed paragraph was neither a duplicate nor a stub: {p:?}");
            }
        }
        for p in 0..tokens.len().saturating_sub(n - 1) {
            if !marks[unit_of[p + n - 1]] {
                kept.insert(tokens[p..p + n].to_vec());
            }
        }
    }
}

/// The marks of a marked vertical file, one string of 0/1 per document.
fn line_marks(marked: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut doc = String::new();
    for line in marked.lines() {
        let (mark, text) = line.split_once('\t').expect("a mark and a TAB");
        doc.push_str(mark);
        if text == "</doc>" {
            docs.push(std::mem::take(&mut doc));
        }
    }
    docs
}

/// Onion 1.2's smoothing at the document's edges (`onion.c`: the start and
/// end of a document are boundaries like a duplicate paragraph), on a
/// hand-made sample; n = 3, threshold 0.5. The expected marks follow
/// Onion's loop by hand; with DUPGRAM_ONION set to Onion 1.2's `onion`
/// binary, the real program must write the same file.
#[test]
fn smoothing_at_document_edges_follows_onion() {
    let sample = sample("onion-edges.vert");
    let path = s(&sample);
    // e1 a long first document; e2 a 3-token document, nothing repeated;
    // e3 repeats e2 and more; e4 a 2-token paragraph, a copy of e1's first,
    // a long new one, a 1-token last one; e5 empty; e6 a 4-token paragraph,
    // an empty one, e1's first, 1 token, e1's second.
    let stub3 = [
        "00000000000000000",            // e1: all new
        "1111111",                      // e2: exactly --max-stub tokens from edge to edge: removed whole
        "000000000",                    // e3: kept, for e2's n-grams were not remembered
        "011111111111100000000000", // e4: the stub before the copy goes; the short last paragraph after the long kept one stays
        "11",                       // e5: nothing kept, so its tags go
        "0000000001111111111111111110", // e6: 4 + 0 tokens before the copy stay; the 1 token between two copies goes
    ];
    let stub0 = [
        "00000000000000000",
        "0000000", // --max-stub 0: only runs without tokens are stubs
        "111111111",
        "000001111111100000000000",
        "11",
        "0000000001111111100011111110",
    ];
    let cases: [(&[&str], &[&str], [&str; 6]); 3] = [
        (&["--max-stub", "3"], &["-l", "3"], stub3),
        (&["--max-stub", "0"], &["-l", "0"], stub0),
        // No smoothing marks what --max-stub 0 marks here (no empty run between boundaries).
        (&["--no-smoothing"], &["-m"], stub0),
    ];
    for (flags, onion_flags, expected) in cases {
        let mut args = vec!["dedup", path, "-n", "3", "--threshold", "0.5", "-q"];
        args.extend_from_slice(flags);
        let (code, marked, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(line_marks(&marked), expected, "{flags:?}");
        match std::env::var_os("DUPGRAM_ONION") {
            Some(onion) => {
                let out = std::process::Command::new(&onion)
                    .args(["-n", "3", "-t", "0.5", "-q"])
                    .args(onion_flags)
                    .arg(path)
                    .output()
                    .expect("DUPGRAM_ONION runs");
                assert!(out.status.success(), "{onion:?} failed");
                assert_eq!(String::from_utf8_lossy(&out.stdout), marked, "real Onion 1.2, {onion_flags:?}");
            }
            None => eprintln!("DUPGRAM_ONION not set: not comparing with the real Onion 1.2"),
        }
    }
}

/// A token line starting with `<` that is no tag (`<3`) is markup to Onion
/// 1.2: neither hashed nor counted. So a document of 20 words and a `<3` is
/// a 20-token stub (marked, as Onion marks it), n-grams run across the
/// `<3`, and the line goes with its unit, in every unit.
#[test]
fn a_line_starting_with_lt_is_markup_as_onion_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hearts.vert");
    let words = |from: usize, to: usize| (from..to).map(|i| format!("w{i}\tX\n")).collect::<String>();
    let vert = format!(
        "<doc id=\"stub\">\n<p>\n<s>\n{}<3\tX\n</s>\n</p>\n</doc>\n\
         <doc id=\"long\">\n<p>\n<s>\n{}<3333\n{}</s>\n</p>\n</doc>\n\
         <doc id=\"copy\">\n<p>\n<s>\n{}{}</s>\n</p>\n</doc>\n",
        words(0, 20),
        words(100, 115),
        words(115, 130),
        words(100, 115),
        words(115, 130)
    );
    std::fs::write(&path, &vert).unwrap();
    for unit in ["doc", "p", "s"] {
        let (code, marked, err) = run(&["dedup", s(&path), "--unit", unit, "-n", "5", "-q"]);
        assert_eq!(code, 0, "{err}");
        let marks: Vec<&str> = marked.lines().map(|l| l.split_once('\t').unwrap().0).collect();
        let lines: Vec<&str> = marked.lines().map(|l| l.split_once('\t').unwrap().1).collect();
        let stub = lines.iter().position(|l| *l == "</doc>").unwrap();
        // The stub: 20 tokens, so smoothing takes it whole, its `<3` line too.
        assert!(marks[..=stub].iter().all(|&m| m == "1"), "{unit}: {marked}");
        // The long document is kept whole; its copy without the `<3333` line
        // repeats all its n-grams, those across the `<3333` too.
        let long = stub + 1 + lines[stub + 1..].iter().position(|l| *l == "</doc>").unwrap();
        assert!(marks[stub + 1..=long].iter().all(|&m| m == "0"), "{unit}: {marked}");
        assert!(marks[long + 1..].iter().all(|&m| m == "1"), "{unit}: {marked}");
    }
    let (code, _, err) =
        run(&["ngrams", s(&path), "-n", "1", "-q", "-o", "/dev/null", "--stats-json", s(&dir.path().join("s.json"))]);
    assert_eq!(code, 0, "{err}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(stats["tokens"], 80, "the <3 lines are no tokens");
}

#[test]
fn exact_only_drops_repeated_lines_of_json_text() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("c.jsonl.gz");
    let records = [
        r#"{"id":"a","text":"Breaking news.\nThe markets fell.\nSubscribe now!"}"#,
        r#"{"id":"b","text":"the markets   FELL\nA new line.\nsubscribe, now"}"#,
        r#"{"id":"c","text":"Subscribe now!\nthe markets fell."}"#,
        r#"{"id":"d","text":"Breaking news 2."}"#,
    ];
    std::fs::write(&input, gzip(records.join("\n").as_bytes())).unwrap();
    let out = dir.path().join("kept.jsonl");
    let stats = dir.path().join("stats.json");
    let (code, _, stderr) = run(&[
        "dedup",
        s(&input),
        "--exact-only",
        "--unit",
        "line",
        "--strip",
        "-o",
        s(&out),
        "--stats-json",
        s(&stats),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("exact repeats"), "{stderr}");
    let kept: Vec<(String, String)> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_owned(), v["text"].as_str().unwrap().to_owned())
        })
        .collect();
    // Case, spacing and punctuation do not count; c has nothing new and goes; "news 2" differs.
    assert_eq!(
        kept,
        [
            ("a".into(), "Breaking news.\nThe markets fell.\nSubscribe now!".into()),
            ("b".into(), "A new line.\n".into()),
            ("d".into(), "Breaking news 2.".into()),
        ]
    );
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(summary["units"], 9);
    assert_eq!(summary["units_removed"], 4);
    assert_eq!(summary["units_exact"], 4);
    assert_eq!(summary["documents_removed"], 1);
    assert_eq!(summary["exact_only"], true);
    // Marked instead: the spans of the repeated lines, in characters.
    let (code, marked, _) = run(&["dedup", s(&input), "--exact-only", "--unit", "line", "-q"]);
    assert_eq!(code, 0);
    let spans: Vec<serde_json::Value> =
        marked.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["dup_spans"].clone()).collect();
    assert_eq!(spans[1], serde_json::json!([[0, 19], [31, 45]]));
    assert_eq!(spans[2], serde_json::json!([[0, 32]]));
    // Whole documents: none repeats whole.
    let (code, marked, _) = run(&["dedup", s(&input), "--exact-only", "--unit", "doc", "-q"]);
    assert_eq!(code, 0);
    assert!(marked.lines().all(|l| l.contains(r#""dup_fraction":0.0"#)), "{marked}");
}

#[test]
fn exact_only_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("c.txt");
    std::fs::write(&text, "one two\none two\n").unwrap();
    let vert = sample("onion-sample.vert");
    for (args, expected, says) in [
        (vec!["dedup", s(&text), "--exact-only", "-n", "5"], 2, "cannot be used with"),
        (vec!["dedup", s(&text), "--exact-only", "--exact"], 2, "cannot be used with"),
        (vec!["dedup", s(&text), "--exact-only", "--stop-top", "3"], 2, "cannot be used with"),
        (vec!["dedup", s(&text), "--unit", "line"], 2, "--exact-only"),
        (vec!["dedup", s(&vert), "--exact-only", "--unit", "line"], 1, "vertical file, whose lines are tokens"),
    ] {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, expected, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let (code, out, stderr) = run(&["dedup", s(&text), "--exact-only", "--unit", "doc", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out, "0.000000\tone two\n1.000000\tone two\n");
}

/// Books: long vertical documents, read ahead of the decisions. The read-ahead
/// is bounded in bytes, not only in documents (256 of them once took a 1G job
/// on Project Gutenberg to 1.1 GiB).
#[test]
fn memory_budget_is_kept_with_long_vertical_documents() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("books.vert");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&corpus).unwrap());
    let mut state = 7u64;
    for doc in 0..30 {
        writeln!(file, "<doc id=\"{doc}\">").unwrap();
        for paragraph in 0..300 {
            writeln!(file, "<p>").unwrap();
            for _ in 0..500 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Every third book repeats the first one's paragraphs.
                let word = if doc % 3 == 0 { paragraph * 7 % 4096 } else { (state >> 52) as usize };
                writeln!(file, "w{word:x}").unwrap();
            }
            writeln!(file, "</p>").unwrap();
        }
        writeln!(file, "</doc>").unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let (stats, out) = (dir.path().join("s.json"), dir.path().join("out.vert"));
    let (code, _, stderr) = run(&[
        "dedup",
        s(&corpus),
        "--unit",
        "p",
        "-n",
        "5",
        "--memory",
        "32M",
        "-o",
        s(&out),
        "--stats-json",
        s(&stats),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(json["units_removed"].as_u64().unwrap() > 0, "{json}");
    let peak = json["peak_rss"].as_u64().unwrap();
    assert!(peak > 0 && peak <= 32 << 20, "peak {peak} over 32M");
}

/// Bad input met by the readings that write documents out: a malformed line
/// says so (and not that the file changed, since nothing read it before), a
/// truncated `.gz` names the line and the compressed byte where it broke.
#[test]
fn exact_only_names_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"text\": \"one two\"}\n{\"text\": \"one\n{\"text\": \"one two\"}\n").unwrap();
    let jsonl = dir.path().join("c.jsonl");
    generated(&jsonl, 50_000, 9, 500);
    let gz = gzip(&std::fs::read(&jsonl).unwrap());
    let truncated = dir.path().join("t.jsonl.gz");
    std::fs::write(&truncated, &gz[..gz.len() * 2 / 3]).unwrap();
    let line = breaking_line(flate2::read::GzDecoder::new(&gz[..gz.len() * 2 / 3]));
    for unit in ["doc", "line"] {
        let (code, out, stderr) = run(&["dedup", s(&bad), "--exact-only", "--unit", unit, "-q"]);
        assert_eq!(code, 1, "{stderr}");
        assert!(out.is_empty());
        assert!(stderr.contains("bad.jsonl: line 2: malformed JSON"), "{stderr}");
        assert!(!stderr.contains("changed since"), "{stderr}");
        let (code, _, stderr) = run(&["dedup", s(&truncated), "--exact-only", "--unit", unit, "-q"]);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(&format!("t.jsonl.gz: line {line}, ")), "{line}: {stderr}");
        assert!(stderr.contains("truncated or damaged"), "{stderr}");
        let offset: u64 =
            stderr.split("compressed byte ").nth(1).and_then(|r| r.split(':').next()).unwrap().parse().unwrap();
        assert!(offset > 0 && offset <= (gz.len() * 2 / 3) as u64, "{stderr}");
    }
    // The n-gram passes read through the corpus reader, which names the same line.
    let (code, _, stderr) = run(&["dedup", s(&truncated), "--unit", "doc", "-q"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&format!("t.jsonl.gz: line {line}, ")), "{line}: {stderr}");
}

/// Many long repeated documents at the smallest --memory: the first copies'
/// texts do not fit at once, so they are verified in several passes, and
/// the result is the same as with room to spare.
#[test]
fn exact_only_verifies_in_several_passes_at_a_tiny_memory() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("c.txt");
    let mut text = String::new();
    for i in 0..2400u32 {
        // Each document twice (the copy later), about 3 KiB of distinct words each.
        let doc: Vec<String> = (0..400).map(|j| format!("w{}x{}", i % 1200, j)).collect();
        text.push_str(&doc.join(" "));
        text.push('\n');
    }
    std::fs::write(&input, &text).unwrap();
    let mut outputs = Vec::new();
    for memory in ["16M", "1G"] {
        let stats = dir.path().join(format!("stats-{memory}.json"));
        let out = dir.path().join(format!("out-{memory}.txt"));
        let (code, _, stderr) = run(&[
            "dedup",
            s(&input),
            "--exact-only",
            "--unit",
            "doc",
            "--memory",
            memory,
            "--strip",
            "-q",
            "-o",
            s(&out),
            "--stats-json",
            s(&stats),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(summary["units_removed"], 1200);
        let passes = summary["verify_passes"].as_u64().unwrap();
        if memory == "16M" {
            assert!(passes > 1, "one pass at 16M");
            assert!(summary["peak_rss"].as_u64().unwrap() <= 16 << 20, "{summary}");
        } else {
            assert_eq!(passes, 1);
        }
        outputs.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0].lines().count(), 1200);
}

/// `--unit span`: repeated passages cut out word by word, first copy kept,
/// in JSON Lines (character offsets, --strip), plain text and vertical files.
#[test]
fn span_cuts_repeated_passages_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let footer = "This licence footer repeats in évery document, sadly";
    let jsonl = dir.path().join("c.jsonl");
    let records = [
        format!("Début. {footer}. Bye."),
        format!("Other words here. {footer}! The end."),
        "Nothing repeated in this one at all.".to_owned(),
        footer.to_owned(),
        // Repeated inside its own document: the second copy goes.
        "alpha beta gamma delta, then alpha beta gamma delta again".to_owned(),
    ];
    let lines: Vec<String> =
        records.iter().enumerate().map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string()).collect();
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();
    let stats = dir.path().join("stats.json");
    let (code, out, stderr) =
        run(&["dedup", s(&jsonl), "--unit", "span", "--min-span", "4", "--stats-json", s(&stats), "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let values: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let spans = |i: usize| -> Vec<[u64; 2]> { serde_json::from_value(values[i]["dup_spans"].clone()).unwrap() };
    assert_eq!(spans(0), Vec::<[u64; 2]>::new());
    // "Other words here. " is 18 characters; the footer has 52, é counted once.
    assert_eq!(spans(1), vec![[18, 18 + 52]]);
    assert_eq!(spans(2), Vec::<[u64; 2]>::new());
    assert_eq!(spans(3), vec![[0, 52]]);
    assert_eq!(values[3]["dup_fraction"], 1.0);
    // "alpha beta gamma delta, then " is 29 characters.
    assert_eq!(spans(4), vec![[29, 29 + 22]]);
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(summary["unit"], "span");
    assert_eq!(summary["min_span"], 4);
    assert_eq!(summary["spans_removed"], 3);
    assert_eq!(summary["tokens_removed"], 8 + 8 + 4);
    assert_eq!(summary["documents_removed"], 1);

    let (code, out, stderr) = run(&["dedup", s(&jsonl), "--unit", "span", "--min-span", "4", "--strip", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let texts: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts,
        [
            records[0].clone(),
            "Other words here. ! The end.".to_owned(),
            records[2].clone(),
            "alpha beta gamma delta, then again".to_owned(),
        ]
    );

    // --min-tokens: a document left with fewer tokens goes whole; --threshold: one with more removed.
    let (_, out, _) =
        run(&["dedup", s(&jsonl), "--unit", "span", "--min-span", "4", "--min-tokens", "6", "--strip", "-q"]);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(!out.contains("Other words"), "5 tokens left is fewer than 6: {out}");
    let (_, out, _) =
        run(&["dedup", s(&jsonl), "--unit", "span", "--min-span", "4", "--threshold", "0.5", "--strip", "-q"]);
    assert!(!out.contains("Other words"), "8 of 13 tokens removed is over 0.5: {out}");

    // Plain text, one document a line: the fraction removed, or the text cut.
    let text = dir.path().join("c.txt");
    std::fs::write(&text, records.join("\n") + "\n").unwrap();
    let (code, out, _) = run(&["dedup", s(&text), "--unit", "span", "--min-span", "4", "-q"]);
    assert_eq!(code, 0);
    assert!(out.lines().nth(1).unwrap().starts_with("0.615385\tOther words"), "{out}");
    let (_, out, _) = run(&["dedup", s(&text), "--unit", "span", "--min-span", "4", "--strip", "-q"]);
    assert_eq!(out.lines().nth(1), Some("Other words here. ! The end."));

    // Vertical: one mark per token line; the repeat crosses a paragraph break.
    let vert = dir.path().join("c.vert");
    std::fs::write(
        &vert,
        "<doc id=\"1\">\n<p>\na\nb\n</p>\n<p>\nc\nd\n</p>\n</doc>\n<doc id=\"2\">\n<p>\nx\nb\n</p>\n<p>\nc\ny\n</p>\n</doc>\n",
    )
    .unwrap();
    let (code, out, stderr) = run(&["dedup", s(&vert), "--unit", "span", "--min-span", "2", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let doc2: Vec<&str> = out.lines().skip(10).collect();
    assert_eq!(
        doc2,
        ["0\t<doc id=\"2\">", "0\t<p>", "0\tx", "1\tb", "0\t</p>", "0\t<p>", "1\tc", "0\ty", "0\t</p>", "0\t</doc>"]
    );
    let (_, out, _) = run(&["dedup", s(&vert), "--unit", "span", "--min-span", "2", "--strip", "-q"]);
    assert!(out.ends_with("<doc id=\"2\">\n<p>\nx\n</p>\n<p>\ny\n</p>\n</doc>\n"), "{out}");
}

#[test]
fn span_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("c.txt");
    std::fs::write(&text, "one two\none two\n").unwrap();
    for (args, says) in [
        (vec!["dedup", s(&text), "--unit", "span", "--min-span", "0"], "--min-span must be between"),
        (vec!["dedup", s(&text), "--unit", "span", "--exact-only"], "do not go together"),
        (vec!["dedup", s(&text), "--unit", "p", "--min-span", "9"], "apply to --unit span only"),
        (vec!["dedup", s(&text), "--unit", "span", "--exact"], "do not apply to --unit span"),
        (vec!["dedup", s(&text), "--unit", "span", "--stop-top", "2"], "--stop-top"),
    ] {
        let (code, _, stderr) = run(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // Standard input works as a file does.
    let (code, out, stderr) = run_with_stdin(
        &["dedup", "-", "--unit", "span", "--min-span", "2", "-q"],
        Some(b"one two three\nzero one two\n"),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out, "0.000000\tone two three\n0.666667\tzero one two\n");
    // Compressed on standard input: copied as it came (not compressed again), read back the same.
    let (code, zipped, stderr) = run_with_stdin(
        &["dedup", "-", "--unit", "span", "--min-span", "2", "-q"],
        Some(&gzip(b"one two three\nzero one two\n")),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(zipped, out);
}

/// The same output at the smallest --memory (the K-gram sorts spill and
/// merge) as with room to spare, and with one thread or two; peak memory
/// stays under the budget.
#[test]
fn span_output_does_not_depend_on_memory_or_threads() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("c.jsonl");
    let texts = generated(&input, 300_000, 7, 2_000);
    // Plant long repeats: documents made of an earlier document and another.
    let mut jsonl = std::fs::read_to_string(&input).unwrap();
    for i in (1..texts.len()).step_by(7) {
        let text = format!("{} {}", texts[i / 2], texts[i]);
        jsonl.push_str(&serde_json::json!({ "id": format!("p{i}"), "text": text }).to_string());
        jsonl.push('\n');
    }
    std::fs::write(&input, &jsonl).unwrap();
    let mut outputs = Vec::new();
    for (memory, threads) in [("16M", "1"), ("1G", "2")] {
        let stats = dir.path().join(format!("stats-{memory}.json"));
        let out = dir.path().join(format!("out-{memory}.txt"));
        let (code, _, stderr) = run(&[
            "dedup",
            s(&input),
            "--unit",
            "span",
            "--min-span",
            "20",
            "--memory",
            memory,
            "--threads",
            threads,
            "--strip",
            "-q",
            "-o",
            s(&out),
            "--stats-json",
            s(&stats),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert!(summary["spans_removed"].as_u64().unwrap() > 100, "{summary}");
        if memory == "16M" {
            assert!(summary["peak_rss"].as_u64().unwrap() <= 16 << 20, "{summary}");
            assert!(summary["bytes_spilled"].as_u64().unwrap() > 0, "{summary}");
        }
        outputs.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert!(leftovers(dir.path()).iter().all(|p| !p.to_string_lossy().contains("dupgram-dedup")));
}

/// `--unit span` hashed a part at a time (`--hash-to`, as separate tasks
/// would), then judged once (`--hashed`): the output and attributes of one
/// process, byte for byte, at any memory; parts out of order, of another K,
/// or a directory reused are refused.
#[test]
fn span_parts_hashed_apart_judge_as_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut texts = Vec::new();
    let parts: Vec<PathBuf> = (0..3)
        .map(|i| {
            let p = dir.path().join(format!("part{i}.jsonl"));
            texts.extend(generated(&p, 40_000, 60 + i, 300));
            p
        })
        .collect();
    // Passages of part 0 repeated in part 2.
    let mut last = std::fs::read_to_string(&parts[2]).unwrap();
    for (i, t) in texts.iter().take(200).enumerate().step_by(3) {
        last.push_str(&serde_json::json!({ "id": format!("r{i}"), "text": format!("new words here {t}") }).to_string());
        last.push('\n');
    }
    std::fs::write(&parts[2], last).unwrap();
    let inputs: Vec<&str> = parts.iter().map(|p| s(p)).collect();
    let judge = |name: &str, extra: &[&str]| {
        let (out, attributes) = (dir.path().join(format!("{name}.jsonl")), dir.path().join(format!("{name}.attr")));
        let mut args = vec!["dedup"];
        args.extend(&inputs);
        args.extend([
            "--unit",
            "span",
            "--min-span",
            "8",
            "--strip",
            "-q",
            "-o",
            s(&out),
            "--attributes",
            s(&attributes),
        ]);
        args.extend(extra);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        (std::fs::read(out).unwrap(), std::fs::read(attributes).unwrap())
    };
    let one = judge("one", &[]);
    assert!(String::from_utf8_lossy(&one.1).contains("\"dupgram_duplicate_spans\":[["), "something is cut");
    for memory in ["1G", "16M"] {
        let hashed: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("{memory}-{i}.kgrams"))).collect();
        for (i, part) in parts.iter().enumerate() {
            let args = ["dedup", s(part), "--unit", "span", "--min-span", "8", "--memory", memory, "-q"];
            let (code, _, stderr) = run(&[&args[..], &["--hash-to", s(&hashed[i]), "--part", &i.to_string()]].concat());
            assert_eq!(code, 0, "{stderr}");
        }
        let mut extra = vec![];
        for h in &hashed {
            extra.extend(["--hashed", s(h)]);
        }
        assert!(judge(&format!("parts-{memory}"), &extra) == one, "parts hashed apart at {memory}");
    }
    let hashed: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("1G-{i}.kgrams"))).collect();
    let unwritten = dir.path().join("x.jsonl");
    for (args, says) in [
        (vec!["--hashed", s(&hashed[1]), "--hashed", s(&hashed[0]), "--min-span", "8"], "in part order"),
        (vec!["--hashed", s(&hashed[0]), "--min-span", "9"], "another --min-span"),
    ] {
        let mut all = vec!["dedup"];
        all.extend(&inputs);
        all.extend(["--unit", "span", "-q", "-o", s(&unwritten)]);
        all.extend(args);
        let (code, _, stderr) = run(&all);
        assert_ne!(code, 0);
        assert!(stderr.contains(says), "{stderr}");
        assert!(!unwritten.exists(), "no output");
    }
    let (code, _, stderr) = run(&["dedup", inputs[0], "--unit", "span", "--hash-to", s(&hashed[0]), "-q"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("writes a new directory"), "{stderr}");
    let elsewhere = dir.path().join("p");
    for exact in [&[][..], &["--exact-only"][..]] {
        let mut args = vec!["dedup", inputs[0], "--unit", "p", "--hash-to", s(&elsewhere), "-q"];
        args.extend(exact);
        let (code, _, stderr) = run(&args);
        assert_ne!(code, 0);
        assert!(stderr.contains("for --unit span"), "{stderr}");
    }
}

/// A corpus of more documents than a budget's working memory can list is
/// refused by `pairs`, naming how many documents and a larger budget (the
/// lexicon pass stops as soon as the ones read so far leave the words no
/// room, and names what they alone need); at the budgets named the job
/// runs. `dedup` runs at any budget instead, with a saved duplicate list
/// (`--dups`, no lexicon pass) or without, and writes the same bytes at
/// each (its index sorted by document on disk when the documents are many).
#[test]
fn too_many_documents_for_the_budget_are_refused_naming_a_budget_that_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let mebibytes = |budget: &str| budget.trim_end_matches('M').parse::<u64>().unwrap();
    // 200,000 documents stop the lexicon pass at 16M; 12,000 pass it and
    // (in a debug build) find no room for postings after it.
    for (documents, must_refuse) in [(200_000u32, true), (12_000, false)] {
        let corpus = dir.path().join(format!("short-{documents}.txt"));
        let lines: String = (0..documents).map(|i| format!("w{} x{} y{}\n", i % 1009, i % 77, i % 13)).collect();
        std::fs::write(&corpus, lines).unwrap();
        let (dups, lexicon) = (dir.path().join(format!("dups-{documents}.tsv")), dir.path().join("dups.lex"));
        let (code, _, stderr) = run(&["ngrams", s(&corpus), "-n", "2", "-q", "-o", s(&dups), "--lexicon", s(&lexicon)]);
        assert_eq!(code, 0, "{stderr}");
        let with_list = ["dedup", "--unit", "doc", "-n", "2", "--dups", s(&dups), "--lexicon", s(&lexicon)];
        for job in [&["pairs", "-n", "2", "--min-sscr", "0.9"][..]] {
            let mut budget = "16M".to_string();
            let mut refusals = 0;
            loop {
                let mut args = job.to_vec();
                args.extend([s(&corpus), "-o", s(&out), "-q", "--memory", &budget]);
                let (code, _, stderr) = run(&args);
                if code == 0 {
                    break;
                }
                assert_eq!(code, 1, "{job:?} at {budget}: {stderr}");
                assert!(stderr.contains(" documents (") && stderr.contains("held for the whole job"), "{stderr}");
                assert!(!out.exists(), "{job:?}: an output was left");
                let named = stderr.rsplit("--memory ").next().and_then(|rest| rest.split_whitespace().next()).unwrap();
                assert!(mebibytes(named) > mebibytes(&budget), "{job:?} at {budget}: {stderr}");
                refusals += 1;
                assert!(refusals < 3, "{job:?}: refused at {budget} too: {stderr}");
                budget = named.to_string();
            }
            assert!(refusals > 0 || !must_refuse, "{job:?} ran {documents} documents at 16M");
            assert!(out.exists(), "{job:?} at {budget}: no output");
            std::fs::remove_file(&out).unwrap();
        }
        // `dedup`: the same bytes at 32M (the tables of 200,000 documents
        // take more than a quarter of it: sorted by document) and at 512M,
        // where everything fits in memory, with the list or without. (At 16M
        // a debug build's own pages may leave no room for postings, whatever
        // the documents.)
        let mut written = Vec::new();
        for (job, budget) in [
            (&with_list[..], "32M"),
            (&with_list, "512M"),
            (&["dedup", "--unit", "doc", "-n", "2"], "32M"),
            (&["dedup", "--unit", "doc", "-n", "2"], "512M"),
        ] {
            let stats = dir.path().join(format!("stats-{budget}.json"));
            let args = [s(&corpus), "-o", s(&out), "-q", "--memory", budget, "--stats-json", s(&stats)];
            let (code, _, stderr) = run(&[job, &args[..]].concat());
            assert_eq!(code, 0, "{job:?} of {documents} documents at {budget}: {stderr}");
            written.push(std::fs::read(&out).unwrap());
            let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
            // Sorted by document, the index is read in no blocks.
            let (by_document, blocks) = (stats["index_by_document"].as_bool().unwrap(), stats["index_blocks"].as_u64());
            assert_eq!(by_document, must_refuse && budget == "32M", "{job:?}, {documents} documents at {budget}");
            assert_eq!(blocks == Some(0), by_document, "{job:?}, {documents} documents at {budget}: {blocks:?} blocks");
            // And the summary says so.
            let (_, _, summary) = run(&[job, &[s(&corpus), "-o", s(&out), "--memory", budget]][..].concat());
            assert_eq!(summary.contains("sorted by document on disk"), by_document, "{summary}");
        }
        assert!(written.iter().all(|w| *w == written[0]), "dedup of {documents} documents: the runs differ");
        std::fs::remove_file(&out).unwrap();
    }
}

/// A saved duplicate list (`ngrams -o … --lexicon …`) decides as the count
/// does: the same documents kept, named by their IDs as they are read again.
#[test]
fn a_saved_duplicate_list_keeps_what_a_count_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let spec = dupgram_testkit::CorpusSpec {
        seed: 5,
        tokens: 60_000,
        vocabulary: 2000,
        mean_doc_len: 80,
        exact_copies: 0.1,
        near_copies: 0.1,
        passages: 0.1,
        ..dupgram_testkit::CorpusSpec::default()
    };
    generated_from(&corpus, spec);
    let (dups, lexicon) = (dir.path().join("dups.tsv"), dir.path().join("dups.lex"));
    let (code, _, stderr) = run(&["ngrams", s(&corpus), "-n", "7", "-q", "-o", s(&dups), "--lexicon", s(&lexicon)]);
    assert_eq!(code, 0, "{stderr}");
    let mut kept = Vec::new();
    for with_list in [false, true] {
        let out = dir.path().join(format!("kept-{with_list}.jsonl"));
        let mut args = vec!["dedup", s(&corpus), "--unit", "doc", "-n", "7", "--strip", "-q", "-o", s(&out)];
        if with_list {
            args.extend(["--dups", s(&dups), "--lexicon", s(&lexicon)]);
        }
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        kept.push(std::fs::read_to_string(&out).unwrap());
    }
    let documents = std::fs::read_to_string(&corpus).unwrap().lines().count();
    let left = kept[0].lines().count();
    assert!(left > 0 && left < documents, "{left} of {documents} kept");
    assert_eq!(kept[0], kept[1]);
}
