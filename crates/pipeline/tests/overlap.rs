//! `overlap` against a brute force on random query and reference corpora:
//! passages of the reference planted in the query (and copies inside each
//! side), documents shorter than n, empty documents and an empty reference;
//! every column of every row, the reference's marks and what
//! `--drop-reference` keeps, with chunks small enough that the sorts spill
//! many runs and merge them in several rounds, the index in parts and the
//! rare-word path forced.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use dupgram_corpus::{Format, Input};
use proptest::prelude::*;

use dupgram_pipeline::output::OutputFile;
use dupgram_pipeline::{
    Control, NgramConfig, OverlapConfig, OverlapFormat, OverlapOutput, OverlapStats, PipelineError, overlap,
};
use dupgram_testkit::write_during;

const VOCAB: [&str; 6] = ["ab", "ba", "cd", "x", "yy", "ünï"];
const PUNCT: [&str; 4] = ["", "", ",", "."];

/// A document: its words, each with the punctuation after it and its case.
type Doc = Vec<(usize, usize, bool)>;

fn doc(max: usize) -> impl Strategy<Value = Doc> {
    prop::collection::vec((0..VOCAB.len(), 0..PUNCT.len(), prop::bool::weighted(0.2)), 0..max)
}

/// Query and reference, with passages of the reference (and of the query itself) planted in the query.
fn corpora() -> impl Strategy<Value = (Vec<Doc>, Vec<Doc>)> {
    let plant = (any::<u16>(), any::<u16>(), any::<u16>(), 1usize..12, any::<bool>());
    (prop::collection::vec(doc(25), 1..8), prop::collection::vec(doc(40), 0..8), prop::collection::vec(plant, 0..10))
        .prop_map(|(mut query, reference, plants)| {
            for (from, at, start, len, own) in plants {
                let source: Vec<(usize, usize, bool)> = if own || reference.is_empty() {
                    query.concat()
                } else {
                    reference[from as usize % reference.len()].clone()
                };
                if source.len() < len {
                    continue;
                }
                let s = start as usize % (source.len() - len + 1);
                let target = (from as usize + at as usize) % query.len();
                let pos = at as usize % (query[target].len() + 1);
                query[target].splice(pos..pos, source[s..s + len].to_vec());
            }
            (query, reference)
        })
}

/// A document's text, and the byte range of each word.
fn text(doc: &Doc) -> (String, Vec<std::ops::Range<usize>>) {
    let mut text = String::new();
    let mut ranges = Vec::new();
    for (i, &(w, p, upper)) in doc.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        let word = if upper { VOCAB[w].to_uppercase() } else { VOCAB[w].to_owned() };
        ranges.push(text.len()..text.len() + word.len());
        text.push_str(&word);
        text.push_str(PUNCT[p]);
    }
    (text, ranges)
}

fn tokens(doc: &Doc) -> Vec<&'static str> {
    doc.iter().map(|&(w, _, _)| VOCAB[w]).collect()
}

fn write_jsonl(path: &Path, docs: &[Doc], prefix: &str) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (i, d) in docs.iter().enumerate() {
        writeln!(f, "{}", serde_json::json!({"id": format!("{prefix}{i}"), "text": text(d).0})).unwrap();
    }
    f.flush().unwrap();
}

/// What the brute force expects of one query document.
#[derive(Debug, PartialEq)]
struct Row {
    id: String,
    tokens: u64,
    ngrams: u64,
    found: u64,
    covered: u64,
    top: Vec<(String, u64)>,
    spans: Vec<[u64; 2]>,
    char_spans: Vec<[u64; 2]>,
}

struct Expected {
    rows: Vec<Row>,
    /// (reference ID, its n-gram positions whose n-gram the query holds), for those with any.
    marks: Vec<(String, u64)>,
    /// The texts of the reference documents that share nothing with the query.
    kept: Vec<String>,
}

/// Token ranges `[start, end)` covered by n-grams starting at `positions` (ascending).
fn union(positions: &[usize], n: usize) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &p in positions {
        match out.last_mut() {
            Some(last) if p as u64 <= last[1] => last[1] = last[1].max((p + n) as u64),
            _ => out.push([p as u64, (p + n) as u64]),
        }
    }
    out
}

fn brute_force(query: &[Doc], reference: &[Doc], n: usize, top: usize) -> Expected {
    let grams = |d: &Doc| -> HashSet<Vec<&'static str>> { tokens(d).windows(n).map(|g| g.to_vec()).collect() };
    let reference_sets: Vec<HashSet<Vec<&str>>> = reference.iter().map(grams).collect();
    let all_reference: HashSet<Vec<&str>> = reference_sets.iter().flatten().cloned().collect();
    let all_query: HashSet<Vec<&str>> = query.iter().flat_map(grams).collect();
    let mut rows = Vec::new();
    for (i, d) in query.iter().enumerate() {
        let t = tokens(d);
        let found: Vec<usize> =
            t.windows(n).enumerate().filter(|(_, g)| all_reference.contains(*g)).map(|(p, _)| p).collect();
        let spans = union(&found, n);
        let mut best: Vec<(u64, usize)> = reference_sets
            .iter()
            .enumerate()
            .map(|(r, set)| {
                let here: Vec<usize> =
                    t.windows(n).enumerate().filter(|(_, g)| set.contains(*g)).map(|(p, _)| p).collect();
                (union(&here, n).iter().map(|s| s[1] - s[0]).sum::<u64>(), r)
            })
            .filter(|&(c, _)| c > 0)
            .collect();
        best.sort_by_key(|&(c, r)| (std::cmp::Reverse(c), r));
        best.truncate(top);
        let (body, ranges) = text(d);
        let chars = |byte: usize| body[..byte].chars().count() as u64;
        rows.push(Row {
            id: format!("q{i}"),
            tokens: t.len() as u64,
            ngrams: (t.len() + 1).saturating_sub(n) as u64,
            found: found.len() as u64,
            covered: spans.iter().map(|s| s[1] - s[0]).sum(),
            top: best.into_iter().map(|(c, r)| (format!("r{r}"), c)).collect(),
            char_spans: spans
                .iter()
                .map(|s| [chars(ranges[s[0] as usize].start), chars(ranges[s[1] as usize - 1].end)])
                .collect(),
            spans,
        });
    }
    let mut marks = Vec::new();
    let mut kept = Vec::new();
    for (r, d) in reference.iter().enumerate() {
        let count = tokens(d).windows(n).filter(|g| all_query.contains(*g)).count() as u64;
        if count > 0 {
            marks.push((format!("r{r}"), count));
        } else {
            kept.push(text(d).0);
        }
    }
    Expected { rows, marks, kept }
}

/// The engine's settings a case runs under.
#[derive(Debug, Clone)]
struct Setting {
    threads: usize,
    chunk: Option<usize>,
    parts: Option<usize>,
    buckets: Option<usize>,
    table_words: Option<usize>,
}

struct Outcome {
    rows: Vec<Row>,
    marks: Vec<(String, u64)>,
    kept: Vec<String>,
    stats: OverlapStats,
}

fn run(dir: &Path, n: usize, top: usize, setting: &Setting) -> Outcome {
    let query = dir.join("query.jsonl");
    let reference = dir.join("reference.jsonl");
    let mut base = NgramConfig::new(vec![Input::Path(query), Input::Path(reference)], n);
    base.read.format = Some(Format::Jsonl);
    base.threads = setting.threads;
    base.tmp_dir = dir.to_owned();
    base.limits.chunk_ngrams = setting.chunk;
    base.limits.fan_in = setting.chunk.map(|_| 3);
    base.limits.sieve_parts = setting.parts;
    base.limits.merge_buckets = setting.buckets;
    base.limits.table_words = setting.table_words;
    let config = OverlapConfig { base, query_inputs: 1, top, spans: true };
    let (rows_path, marks_path, kept_path) = (dir.join("rows.jsonl"), dir.join("marks.tsv"), dir.join("kept.jsonl"));
    let mut rows = OutputFile::create(Some(&rows_path)).unwrap();
    let mut marks = OutputFile::create(Some(&marks_path)).unwrap();
    let mut kept = OutputFile::create(Some(&kept_path)).unwrap();
    let out = OverlapOutput {
        queries: &mut rows,
        format: OverlapFormat::Jsonl,
        marks: Some(&mut marks),
        kept_reference: Some(&mut kept),
    };
    let stats = overlap(&config, &Control::default(), out).unwrap();
    rows.finish().unwrap();
    marks.finish().unwrap();
    kept.finish().unwrap();
    let rows = std::fs::read_to_string(&rows_path).unwrap().lines().map(parse_row).collect();
    let marks_text = std::fs::read_to_string(&marks_path).unwrap();
    let mut lines = marks_text.lines();
    assert_eq!(lines.next(), Some("id\tngrams_found"));
    let marks = lines
        .map(|l| {
            let (id, count) = l.split_once('\t').unwrap();
            (id.to_owned(), count.parse().unwrap())
        })
        .collect();
    let kept = std::fs::read_to_string(&kept_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_owned())
        .collect();
    Outcome { rows, marks, kept, stats }
}

fn parse_row(line: &str) -> Row {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let count = |k: &str| v[k].as_u64().unwrap();
    let tokens = count("tokens");
    let covered = count("covered_tokens");
    let coverage = v["coverage"].as_f64().unwrap();
    let expected = if tokens == 0 { 0.0 } else { covered as f64 / tokens as f64 };
    assert!((coverage - expected).abs() < 1e-6, "coverage {coverage} of {line}");
    Row {
        id: v["id"].as_str().unwrap().to_owned(),
        tokens,
        ngrams: count("ngrams"),
        found: count("ngrams_found"),
        covered,
        top: v["top"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| (t["id"].as_str().unwrap().to_owned(), t["covered_tokens"].as_u64().unwrap()))
                    .collect()
            })
            .unwrap_or_default(),
        spans: serde_json::from_value(v["spans"].clone()).unwrap(),
        char_spans: serde_json::from_value(v["char_spans"].clone()).unwrap(),
    }
}

fn check(query: &[Doc], reference: &[Doc], n: usize, top: usize, setting: &Setting) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    write_jsonl(&dir.path().join("query.jsonl"), query, "q");
    write_jsonl(&dir.path().join("reference.jsonl"), reference, "r");
    let want = brute_force(query, reference, n, top);
    let got = run(dir.path(), n, top, setting);
    prop_assert_eq!(&got.rows, &want.rows);
    prop_assert_eq!(&got.marks, &want.marks);
    prop_assert_eq!(&got.kept, &want.kept);
    prop_assert_eq!(got.stats.query_documents, query.len() as u64);
    prop_assert_eq!(got.stats.reference_documents, reference.len() as u64);
    prop_assert_eq!(got.stats.covered_tokens, want.rows.iter().map(|r| r.covered).sum::<u64>());
    // Nothing of the job is left in the temporary directory.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("dupgram"))
        .collect();
    prop_assert!(left.is_empty(), "left behind: {:?}", left);
    Ok(())
}

fn setting() -> impl Strategy<Value = Setting> {
    (
        1usize..3,
        prop_oneof![Just(None), Just(Some(64usize))],
        prop_oneof![Just(None), (1usize..4).prop_map(Some)],
        prop_oneof![Just(None), (1usize..3).prop_map(Some)],
        prop_oneof![Just(None), Just(Some(3usize))],
    )
        .prop_map(|(threads, chunk, parts, buckets, table_words)| Setting {
            threads,
            chunk,
            parts,
            buckets,
            table_words,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_column_equals_the_brute_force(
        (query, reference) in corpora(),
        n in 1usize..6,
        top in 0usize..4,
        setting in setting(),
    ) {
        check(&query, &reference, n, top, &setting)?;
    }
}

const PLAIN: Setting = Setting { threads: 2, chunk: None, parts: None, buckets: None, table_words: None };

#[test]
fn an_empty_reference_finds_nothing() {
    let query = vec![vec![(0, 0, false), (1, 0, false), (2, 0, false)], vec![]];
    check(&query, &[], 2, 2, &PLAIN).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_jsonl(&dir.path().join("query.jsonl"), &query, "q");
    write_jsonl(&dir.path().join("reference.jsonl"), &[], "r");
    let got = run(dir.path(), 2, 2, &PLAIN);
    assert_eq!(got.stats.ngrams_found, 0);
    assert_eq!(got.rows.len(), 2);
}

#[test]
fn repeats_inside_the_query_are_found_once_per_position_and_short_documents_have_no_ngrams() {
    // "ab ba cd" twice in the first query document, once in the reference;
    // "ab ba" alone (shorter than n) in the second.
    let abc = [(0, 0, false), (1, 0, false), (2, 0, false)];
    let query = vec![[&abc[..], &[(3, 0, false)], &abc[..]].concat(), abc[..2].to_vec()];
    let reference = vec![abc.to_vec(), vec![(4, 0, false), (5, 0, false), (4, 0, false)]];
    check(&query, &reference, 3, 3, &PLAIN).unwrap();
    let want = brute_force(&query, &reference, 3, 3);
    assert_eq!(want.rows[0].found, 2);
    assert_eq!(want.rows[0].spans, vec![[0, 3], [4, 7]]);
    assert_eq!(want.rows[1].ngrams, 0);
    assert_eq!(want.marks, vec![("r0".to_owned(), 1)]);
}

#[test]
fn a_common_ngram_counts_for_every_reference_document_in_the_top_list() {
    let abc = vec![(0, 0, false), (1, 0, false), (2, 0, false)];
    let query = vec![abc.clone()];
    let reference = vec![abc.clone(), [&abc[..], &abc[..]].concat(), abc];
    check(&query, &reference, 2, 5, &PLAIN).unwrap();
    let want = brute_force(&query, &reference, 2, 5);
    assert_eq!(want.rows[0].top, vec![("r0".into(), 3), ("r1".into(), 3), ("r2".into(), 3)]);
    assert_eq!(want.marks[1], ("r1".to_owned(), 4));
}

#[test]
fn every_setting_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = dupgram_testkit::SplitMix::new(7);
    let mut docs = |count: usize, len: u64| -> Vec<Doc> {
        (0..count)
            .map(|_| {
                (0..rng.below(len)).map(|_| (rng.below(6) as usize, rng.below(4) as usize, rng.chance(0.1))).collect()
            })
            .collect()
    };
    let (query, reference) = (docs(40, 30), docs(200, 60));
    write_jsonl(&dir.path().join("query.jsonl"), &query, "q");
    write_jsonl(&dir.path().join("reference.jsonl"), &reference, "r");
    let mut outputs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let settings = [
        PLAIN,
        Setting { threads: 1, chunk: Some(64), parts: Some(3), buckets: Some(1), table_words: Some(3) },
        Setting { threads: 2, chunk: Some(64), parts: Some(2), buckets: Some(2), table_words: None },
    ];
    for (i, setting) in settings.iter().enumerate() {
        run(dir.path(), 4, 3, setting);
        for name in ["rows.jsonl", "marks.tsv", "kept.jsonl"] {
            let bytes = std::fs::read(dir.path().join(name)).unwrap();
            match outputs.get(name) {
                Some(first) => assert!(first == &bytes, "{name} differs under setting {i}"),
                None => {
                    outputs.insert(name.to_owned(), bytes);
                }
            }
        }
    }
}

/// `--drop-reference` takes each reference document's token count from the
/// index's table when it reads the reference again, so a reference file
/// written to while the job runs is found by its stamp: here with the same
/// length and the same tokens in every document (`alpha` becomes `gamma`).
#[test]
fn a_reference_written_to_during_the_job_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let (query, reference) = (dir.path().join("query.txt"), dir.path().join("reference.txt"));
    std::fs::write(&query, "beta delta one two three\nnothing here at all\n").unwrap();
    let line = "alpha beta delta one two three four five six seven\n";
    let text: String = (0..20_000).map(|i| format!("{i} {line}")).collect();
    for _attempt in 0..5 {
        std::fs::write(&reference, &text).unwrap();
        // The write below falls on a later tick of the clock that stamps files.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let base = NgramConfig::new(vec![Input::Path(query.clone()), Input::Path(reference.clone())], 3);
        let config = OverlapConfig {
            base: NgramConfig { tmp_dir: dir.path().to_owned(), ..base },
            query_inputs: 1,
            top: 0,
            spans: false,
        };
        let control = Control::default();
        let mut rows = OutputFile::create(Some(&dir.path().join("rows.tsv"))).unwrap();
        let mut kept = OutputFile::create(Some(&dir.path().join("kept.txt"))).unwrap();
        let job = || {
            let out = OverlapOutput {
                queries: &mut rows,
                format: OverlapFormat::Tsv,
                marks: None,
                kept_reference: Some(&mut kept),
            };
            overlap(&config, &control, out)
        };
        let changed = text.replace("alpha", "gamma");
        let Some(result) = write_during(&reference, changed.as_bytes(), || !control.progress.phase().is_empty(), job)
        else {
            continue;
        };
        match result {
            Err(PipelineError::Changed(what)) => {
                assert!(what.contains("reference.txt") && what.contains("modification time"), "{what}");
                return;
            }
            // The job may have checked the file just before the write ended: try again.
            Ok(_) => continue,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("a reference written to while the job ran was not noticed, in five tries");
}
