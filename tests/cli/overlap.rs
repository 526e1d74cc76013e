//! `dupgram overlap`: the same rows as TSV, JSON Lines and Parquet; standard
//! input as the query; the reference's marks and what `--drop-reference`
//! keeps, in vertical files too; coverage on texts derived from Reuters
//! against texts that are not; bad invocations.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common::{leftovers, run, run_with_stdin, s};

const QUERY: &str = r#"{"id":"q1","text":"The quick brown fox jumps over the lazy dog near the river bank."}
{"id":"q2","text":"Nothing here matches anything at all, really."}
{"id":"q3","text":"short"}
{"id":"q4","text":"Lazy dog near the river. The quick brown fox again, and the lazy dog near"}
"#;

const REFERENCE: &str = r#"{"id":"r1","text":"A quick brown fox jumps over the fence."}
{"id":"r2","text":"the lazy dog near the river bank was asleep"}
{"id":"r3","text":"unrelated content entirely here"}
"#;

const ROWS_TSV: &str = "\
id\ttokens\tngrams\tngrams_found\tcovered_tokens\tcoverage\tref_1\tcovered_1\tref_2\tcovered_2\tspans\tchar_spans
q1\t13\t11\t9\t12\t0.923077\tr2\t7\tr1\t6\t1-13\t4-63
q2\t7\t5\t0\t0\t0.000000\t\t\t\t\t\t
q3\t1\t0\t0\t0\t0.000000\t\t\t\t\t\t
q4\t15\t13\t6\t12\t0.800000\tr2\t9\tr1\t3\t0-5 6-9 11-15\t0-23 29-44 56-73
";

fn corpora(dir: &Path) -> (String, String) {
    let (q, r) = (dir.join("q.jsonl"), dir.join("r.jsonl"));
    std::fs::write(&q, QUERY).unwrap();
    std::fs::write(&r, REFERENCE).unwrap();
    (s(&q).to_owned(), s(&r).to_owned())
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn rows_are_the_same_in_tsv_jsonl_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = corpora(dir.path());
    let common = ["overlap", &q, "--reference", &r, "-n", "3", "--top", "2", "--spans", "-q"];
    assert_eq!(ok(&[&common[..], &["-o", "-"]].concat()), ROWS_TSV);
    let jsonl = dir.path().join("rows.jsonl");
    ok(&[&common[..], &["-o", s(&jsonl)]].concat());
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(
        rows[3],
        serde_json::json!({"id": "q4", "tokens": 15, "ngrams": 13, "ngrams_found": 6, "covered_tokens": 12,
            "coverage": 0.8, "top": [{"id": "r2", "covered_tokens": 9}, {"id": "r1", "covered_tokens": 3}],
            "spans": [[0, 5], [6, 9], [11, 15]], "char_spans": [[0, 23], [29, 44], [56, 73]]})
    );
    // --output-format chooses what the name would: JSON Lines on standard output, TSV under a .jsonl name.
    let on_stdout = ok(&[&common[..], &["-o", "-", "--output-format", "jsonl"]].concat());
    assert_eq!(on_stdout, std::fs::read_to_string(&jsonl).unwrap());
    let tsv_named_jsonl = dir.path().join("rows-as-tsv.jsonl");
    ok(&[&common[..], &["-o", s(&tsv_named_jsonl), "--output-format", "tsv"]].concat());
    assert_eq!(std::fs::read_to_string(&tsv_named_jsonl).unwrap(), ROWS_TSV);
    // The character offsets point at the covered words.
    let q4 = QUERY.lines().nth(3).unwrap();
    let text: serde_json::Value = serde_json::from_str(q4).unwrap();
    let chars: Vec<char> = text["text"].as_str().unwrap().chars().collect();
    assert_eq!(chars[29..44].iter().collect::<String>(), "quick brown fox");
    let parquet = dir.path().join("rows.parquet");
    ok(&[&common[..], &["-o", s(&parquet)]].concat());
    let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(File::open(&parquet).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let column = |name: &str| batches[0].column_by_name(name).unwrap().clone();
    assert_eq!(column("covered_tokens").as_primitive::<UInt64Type>().values().to_vec(), [12, 0, 0, 12]);
    assert_eq!(column("coverage").as_primitive::<Float64Type>().value(0), 12.0 / 13.0);
    let refs = column("ref_1");
    assert_eq!((0..4).map(|i| refs.as_string::<i32>().value(i).to_owned()).collect::<Vec<_>>(), ["r2", "", "", "r2"]);
    let spans = column("char_spans");
    let q4_spans = spans.as_list::<i32>().value(3);
    assert_eq!(q4_spans.len(), 3);
}

#[test]
fn standard_input_is_a_query_like_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = corpora(dir.path());
    let from_file = ok(&["overlap", &q, "--reference", &r, "-n", "3", "-q"]);
    let (code, from_stdin, err) =
        run_with_stdin(&["overlap", "-", "--reference", &r, "-n", "3", "-q"], Some(QUERY.as_bytes()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(from_stdin, from_file);
    // Standard input as the reference, too.
    let (code, from_stdin, err) =
        run_with_stdin(&["overlap", &q, "--reference", "-", "-n", "3", "-q"], Some(REFERENCE.as_bytes()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(from_stdin, from_file);
}

#[test]
fn marks_and_dropping_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = corpora(dir.path());
    let (marks, kept) = (dir.path().join("marks.tsv"), dir.path().join("kept.jsonl.zst"));
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let args = ["overlap", &q, "--reference", &r, "-n", "3", "-o", "/dev/null", "--tmp-dir", s(&tmp)];
    let (code, _, err) = run(&[&args[..], &["--mark-reference", s(&marks), "--drop-reference", s(&kept)]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 hold a query n-gram") && err.contains("1 documents written"), "{err}");
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "id\tngrams_found\nr1\t4\nr2\t5\n");
    let kept = zstd::decode_all(File::open(&kept).unwrap()).unwrap();
    assert_eq!(String::from_utf8(kept).unwrap(), REFERENCE.lines().nth(2).unwrap().to_owned() + "\n");
    assert!(leftovers(&tmp).is_empty(), "{:?}", leftovers(&tmp));
}

#[test]
fn a_vertical_reference_is_written_back_without_its_marked_documents() {
    let dir = tempfile::tempdir().unwrap();
    let vert = |docs: &[(&str, &str)]| {
        let mut out = String::new();
        for (id, words) in docs {
            out.push_str(&format!("<doc id=\"{id}\">\n<p>\n"));
            for w in words.split(' ') {
                out.push_str(&format!("{w}\tX\n"));
            }
            out.push_str("</p>\n</doc>\n");
        }
        out
    };
    let (q, r, kept) = (dir.path().join("q.vert"), dir.path().join("r.vert"), dir.path().join("kept.vert"));
    std::fs::write(&q, vert(&[("a", "one two three four")])).unwrap();
    std::fs::write(&r, vert(&[("x", "zero two three nine"), ("y", "one two five"), ("z", "three four")])).unwrap();
    let out = ok(&["overlap", s(&q), "--reference", s(&r), "-n", "2", "--drop-reference", s(&kept), "--spans", "-q"]);
    // Vertical text has no character offsets: the column stays empty.
    assert_eq!(out.lines().nth(1), Some("a\t4\t3\t3\t4\t1.000000\t0-4\t"));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), vert(&[]));
    let out = ok(&["overlap", s(&q), "--reference", s(&r), "-n", "3", "--drop-reference", s(&kept), "-q"]);
    assert_eq!(out.lines().nth(1), Some("a\t4\t2\t0\t0\t0.000000"));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), std::fs::read_to_string(&r).unwrap());
}

#[test]
fn bad_invocations_exit_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (q, _) = corpora(dir.path());
    let (code, _, err) = run(&["overlap", &q]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--reference"), "{err}");
    let (code, _, err) = run(&["overlap", &q, "--reference", s(&dir.path().join("missing.jsonl"))]);
    assert_eq!(code, 1);
    assert!(err.contains("missing.jsonl: no such file"), "{err}");
    let (code, _, err) = run(&["overlap", "-", "--reference", "-"]);
    assert_eq!(code, 1);
    assert!(err.contains("only once"), "{err}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"text\": \"fine\"}\n{\"text\": broken\n").unwrap();
    let out = dir.path().join("rows.tsv");
    let (code, _, err) = run(&["overlap", &q, "--reference", s(&bad), "-o", s(&out)]);
    assert_eq!(code, 1);
    assert!(err.contains("bad.jsonl") && err.contains("line 2"), "{err}");
    assert!(!out.exists(), "no half-written output under the final name");
}

/// Texts derived from a Reuters story (sentences kept, reordered, a word in
/// ten changed) against other Reuters stories: at n = 3 the coverage
/// column separates them (ROC AUC), as the coverage measures of the
/// derived-text literature do.
#[test]
fn coverage_separates_derived_from_independent_texts() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/reuters21578.jsonl.zst");
    let Ok(file) = File::open(&path) else {
        eprintln!("skipped: {} is absent", path.display());
        return;
    };
    let stories: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(zstd::Decoder::new(file).unwrap()))
        .map(|l| serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap()["text"].as_str().unwrap().to_owned())
        .filter(|t| t.split_whitespace().count() >= 150)
        .take(1200)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = (dir.path().join("q.jsonl"), dir.path().join("r.jsonl"));
    let mut reference = File::create(&r).unwrap();
    for (i, t) in stories[..1000].iter().enumerate() {
        writeln!(reference, "{}", serde_json::json!({"id": format!("r{i}"), "text": t})).unwrap();
    }
    let mut query = File::create(&q).unwrap();
    let mut rng = dupgram_testkit::SplitMix::new(11);
    let mut derived = Vec::new();
    for i in 0..200 {
        let (text, is_derived) = if i % 2 == 0 {
            (rewrite(&stories[rng.below(1000) as usize], &mut rng), true)
        } else {
            (stories[1000 + i].clone(), false)
        };
        writeln!(query, "{}", serde_json::json!({"id": format!("q{i}"), "text": text})).unwrap();
        derived.push(is_derived);
    }
    drop((query, reference));
    let rows = ok(&["overlap", s(&q), "--reference", s(&r), "-n", "3", "-q"]);
    let coverage: Vec<f64> = rows.lines().skip(1).map(|l| l.split('\t').nth(5).unwrap().parse().unwrap()).collect();
    let (mut wins, mut pairs) = (0.0, 0.0);
    for (a, _) in coverage.iter().zip(&derived).filter(|(_, d)| **d) {
        for (b, _) in coverage.iter().zip(&derived).filter(|(_, d)| !**d) {
            wins += if a > b {
                1.0
            } else if a == b {
                0.5
            } else {
                0.0
            };
            pairs += 1.0;
        }
    }
    let auc = wins / pairs;
    eprintln!("ROC AUC {auc:.3}");
    assert!(auc >= 0.83, "ROC AUC {auc:.3}");
}

/// A rewrite of `text`: two sentences in three kept, in a shuffled order, a word in ten replaced.
fn rewrite(text: &str, rng: &mut dupgram_testkit::SplitMix) -> String {
    let mut sentences: Vec<&str> = text.split_inclusive(". ").filter(|_| rng.below(3) != 0).collect();
    for i in (1..sentences.len()).rev() {
        sentences.swap(i, rng.below(i as u64 + 1) as usize);
    }
    sentences
        .concat()
        .split_whitespace()
        .map(|w| if rng.below(10) == 0 { "changed" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}
