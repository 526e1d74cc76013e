//! `--exact-only` against a brute-force exact deduplication: a set of
//! normalised texts, walked in corpus order.

use std::collections::HashSet;
use std::io::Write;

use dupgram_corpus::{Format, Input};
use dupgram_dedup::{UnitKind, segment_text};
use dupgram_lexicon::{Normalization, Tokenizer};
use proptest::prelude::*;

use dupgram_pipeline::output::OutputFile;
use dupgram_pipeline::{Control, DedupConfig, DedupOutput, DedupStats, NgramConfig, PipelineError, dedup_exact_with};

type Fingerprint = fn(&[u8]) -> u128;

fn xxh3_128(text: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text)
}

/// A fingerprint that confuses most texts: verification must tell them apart.
fn weak(text: &[u8]) -> u128 {
    u128::from(text.first().copied().unwrap_or(0) % 2)
}

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 9] = ["ab", "ba", "cd", "dc", "x", "Ünï", "straße", "42", "7.5"];

/// A sentence from a small pool, written with its own case, spacing and punctuation.
fn sentence(rng: &mut Rng) -> Vec<String> {
    let pick = rng.below(10);
    let mut seed = Rng(pick * 7919 + 17);
    let len = 1 + seed.below(3) as usize;
    let mut words: Vec<String> = (0..len).map(|_| WORDS[seed.below(WORDS.len() as u64) as usize].to_owned()).collect();
    if rng.below(3) == 0 {
        words[0] = words[0].to_uppercase();
    }
    if rng.below(3) == 0 {
        words[len - 1].push(',');
    }
    words
}

/// Documents: paragraphs of lines of sentences (words); some repeat earlier documents.
type Docs = Vec<Vec<Vec<Vec<Vec<String>>>>>;

fn corpus(seed: u64, docs: usize) -> Docs {
    let mut rng = Rng(seed | 1);
    let mut out: Docs = Vec::new();
    for _ in 0..docs {
        if !out.is_empty() && rng.below(5) == 0 {
            let copy = out[rng.below(out.len() as u64) as usize].clone();
            out.push(copy);
            continue;
        }
        let paragraphs = (0..1 + rng.below(2))
            .map(|_| {
                (0..1 + rng.below(2)).map(|_| (0..1 + rng.below(2)).map(|_| sentence(&mut rng)).collect()).collect()
            })
            .collect();
        out.push(paragraphs);
    }
    out
}

fn sentence_text(words: &[String]) -> String {
    format!("{}.", words.join(if words.len().is_multiple_of(2) { "  " } else { " " }))
}

/// A document as running text: paragraphs end at blank lines (one line of text when `flat`).
fn doc_text(doc: &[Vec<Vec<Vec<String>>>], flat: bool) -> String {
    let (line_sep, par_sep) = if flat { (" ", " ") } else { ("\n", "\n\n") };
    doc.iter()
        .map(|p| {
            p.iter()
                .map(|l| l.iter().map(|s| sentence_text(s)).collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
                .join(line_sep)
        })
        .collect::<Vec<_>>()
        .join(par_sep)
}

fn write_corpus(path: &std::path::Path, docs: &Docs, format: Format) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (i, doc) in docs.iter().enumerate() {
        match format {
            Format::Text => writeln!(f, "{}", doc_text(doc, true)).unwrap(),
            Format::Parquet => unreachable!("these cases write line formats"),
            Format::Jsonl => {
                writeln!(f, "{}", serde_json::json!({"id": format!("d{i}"), "text": doc_text(doc, false)})).unwrap()
            }
            Format::Vertical => {
                writeln!(f, "<doc id=\"d{i}\">").unwrap();
                for p in doc {
                    writeln!(f, "<p>").unwrap();
                    for s in p.iter().flatten() {
                        writeln!(f, "<s>").unwrap();
                        for w in s {
                            writeln!(f, "{w}\tTAG").unwrap();
                        }
                        writeln!(f, "</s>").unwrap();
                    }
                    writeln!(f, "</p>").unwrap();
                }
                writeln!(f, "</doc>").unwrap();
            }
        }
    }
    f.flush().unwrap();
}

/// Each document's units as (normalised text, tokens), as the brute force sees them.
fn reference_units(docs: &Docs, format: Format, unit: UnitKind, norm: Normalization) -> Vec<Vec<(String, u32)>> {
    docs.iter()
        .map(|doc| {
            if format == Format::Vertical {
                // Vertical tokens are taken as they are.
                let words = |s: &[Vec<String>]| -> (String, u32) {
                    let flat: Vec<&str> = s.iter().flatten().map(String::as_str).collect();
                    (flat.join(" "), flat.len() as u32)
                };
                return match unit {
                    UnitKind::Document => vec![words(&doc.iter().flatten().flatten().cloned().collect::<Vec<_>>())],
                    UnitKind::Paragraph => {
                        doc.iter().map(|p| words(&p.iter().flatten().cloned().collect::<Vec<_>>())).collect()
                    }
                    _ => doc.iter().flatten().flatten().map(|s| words(std::slice::from_ref(s))).collect(),
                };
            }
            let text = doc_text(doc, format == Format::Text);
            segment_text(&text, unit)
                .into_iter()
                .map(|r| {
                    let mut tokenizer = Tokenizer::new(norm);
                    let mut tokens = Vec::new();
                    tokenizer.feed(&text[r], &mut |w: &str| tokens.push(w.to_owned()));
                    tokenizer.finish(&mut |w: &str| tokens.push(w.to_owned()));
                    (tokens.join(" "), tokens.len() as u32)
                })
                .collect()
        })
        .collect()
}

/// The brute force: a unit with tokens whose normalised text was seen before is a duplicate.
fn brute_force(units: &[Vec<(String, u32)>]) -> Vec<Vec<bool>> {
    let mut seen = HashSet::new();
    units
        .iter()
        .map(|doc| doc.iter().map(|(text, tokens)| *tokens > 0 && !seen.insert(text.clone())).collect())
        .collect()
}

fn run(
    path: &std::path::Path,
    tmp: &std::path::Path,
    format: Format,
    configure: impl Fn(&mut DedupConfig),
    fingerprint: Fingerprint,
) -> Result<(String, DedupStats), PipelineError> {
    run_with(path, tmp, format, Normalization::default(), configure, fingerprint)
}

fn run_with(
    path: &std::path::Path,
    tmp: &std::path::Path,
    format: Format,
    norm: Normalization,
    configure: impl Fn(&mut DedupConfig),
    fingerprint: Fingerprint,
) -> Result<(String, DedupStats), PipelineError> {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], 4);
    base.read.format = Some(format);
    base.norm = if format == Format::Vertical { Normalization::lines() } else { norm };
    // The plan starts from the process's resident memory, which other tests
    // in this process raise; a large budget keeps the plan from depending on
    // them, and small chunks keep this test's own memory small.
    base.memory = 1 << 30;
    base.limits.chunk_ngrams = Some(1 << 14);
    base.tmp_dir = tmp.to_owned();
    let mut config = DedupConfig::new(base);
    configure(&mut config);
    let target = tmp.join("out");
    let mut out = OutputFile::create(Some(&target)).unwrap();
    let stats = dedup_exact_with(&config, &Control::default(), DedupOutput::documents(&mut out), fingerprint)?;
    out.finish().unwrap();
    Ok((std::fs::read_to_string(&target).unwrap(), stats))
}

/// The units of each document that the output marks (or, stripped, what it kept).
fn marked_in_output(
    output: &str,
    docs: &Docs,
    format: Format,
    unit: UnitKind,
    expected: &[Vec<bool>],
) -> Vec<Vec<bool>> {
    match format {
        Format::Parquet => unreachable!("these cases write line formats"),
        Format::Vertical => {
            // Each unit's first token line carries its mark.
            let mut marks = Vec::new();
            let mut doc: Vec<bool> = Vec::new();
            let mut starts = true;
            for line in output.lines() {
                let (mark, rest) = line.split_once('\t').unwrap();
                if rest.starts_with("<doc") {
                    doc = Vec::new();
                    starts = true;
                } else if rest == "</doc>" {
                    marks.push(std::mem::take(&mut doc));
                } else if (unit == UnitKind::Paragraph && rest == "<p>")
                    || (unit == UnitKind::Sentence && rest == "<s>")
                {
                    starts = true;
                } else if !rest.starts_with('<') && starts {
                    doc.push(mark == "1");
                    starts = false;
                }
            }
            marks
        }
        Format::Jsonl => output
            .lines()
            .zip(docs)
            .map(|(line, doc)| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                let text = doc_text(doc, false);
                let spans: Vec<[u64; 2]> = serde_json::from_value(value["dup_spans"].clone()).unwrap();
                segment_text(&text, unit)
                    .into_iter()
                    .map(|r| {
                        let start = text[..r.start].chars().count() as u64;
                        let end = text[..r.end].chars().count() as u64;
                        start < end && spans.iter().any(|s| s[0] <= start && end <= s[1])
                    })
                    .collect()
            })
            .collect(),
        Format::Text => {
            // Stripped: the kept units' text, and no line for a document with nothing kept.
            let mut lines = output.lines();
            docs.iter()
                .zip(expected)
                .map(|(doc, gone)| {
                    let text = doc_text(doc, true);
                    let units = segment_text(&text, unit);
                    let kept: String =
                        units.iter().zip(gone).filter(|(_, g)| !**g).map(|(r, _)| &text[r.clone()]).collect();
                    let all_gone = gone.iter().all(|g| *g);
                    let got = if all_gone { None } else { lines.next() };
                    if got == Some(kept.trim_end_matches(['\n', '\r'])) || (all_gone && got.is_none()) {
                        gone.clone()
                    } else {
                        vec![]
                    }
                })
                .collect()
        }
    }
}

fn formats_and_units() -> impl Strategy<Value = (Format, UnitKind)> {
    prop_oneof![
        Just((Format::Text, UnitKind::Document)),
        Just((Format::Text, UnitKind::Sentence)),
        Just((Format::Text, UnitKind::Line)),
        Just((Format::Jsonl, UnitKind::Document)),
        Just((Format::Jsonl, UnitKind::Paragraph)),
        Just((Format::Jsonl, UnitKind::Sentence)),
        Just((Format::Jsonl, UnitKind::Line)),
        Just((Format::Vertical, UnitKind::Document)),
        Just((Format::Vertical, UnitKind::Paragraph)),
        Just((Format::Vertical, UnitKind::Sentence)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn marks_what_a_set_of_normalised_texts_marks(
        seed in any::<u64>(),
        docs in 1usize..60,
        (format, unit) in formats_and_units(),
        weak_hash in any::<bool>(),
        tiny in any::<bool>(),
        // With markup stripped, later passes tokenise every unit again instead of only the candidates.
        markup in any::<bool>(),
        numbers in any::<bool>(),
    ) {
        let norm = Normalization { strip_markup: markup, numbers_as_token: numbers, ..Normalization::default() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpus");
        let generated = corpus(seed, docs);
        write_corpus(&path, &generated, format);
        let expected = brute_force(&reference_units(&generated, format, unit, norm));
        // Text output is checked stripped (its marks are only a fraction per line).
        let strip = format == Format::Text;
        let (output, stats) = run_with(&path, dir.path(), format, norm, |c| {
            c.unit = unit;
            c.strip = strip;
            if tiny {
                // A few bytes of room per verification pass, and small runs.
                c.base.limits.chunk_ngrams = Some(16);
                c.base.limits.fan_in = Some(2);
            }
        }, if weak_hash { weak } else { xxh3_128 }).unwrap();
        let got = marked_in_output(&output, &generated, format, unit, &expected);
        prop_assert_eq!(&got, &expected);
        let removed: u64 = expected.iter().flatten().filter(|g| **g).count() as u64;
        prop_assert_eq!(stats.units_removed, removed);
        prop_assert_eq!(stats.units_exact, removed);
        // Vertical documents also have units of tag lines alone (no token, never marked).
        let units = expected.iter().map(Vec::len).sum::<usize>() as u64;
        if format == Format::Vertical {
            prop_assert!(stats.units >= units);
        } else {
            prop_assert_eq!(stats.units, units);
        }
        if tiny && !weak_hash && stats.exact_groups > 1 {
            prop_assert!(stats.verify_passes > 1, "{} groups verified in one pass", stats.exact_groups);
        }
    }
}

#[test]
fn a_fingerprint_collision_never_marks_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    // Same length, same first byte's parity: one key under the weak fingerprint.
    std::fs::write(&path, "aa bb\nAA, BB!\ncc dd\naa bb\ncc dd\nee ff\n").unwrap();
    let (output, stats) = run(&path, dir.path(), Format::Text, |c| c.unit = UnitKind::Document, weak).unwrap();
    assert_eq!(stats.exact_groups, 1);
    assert_eq!(stats.units_removed, 3);
    assert_eq!(stats.fingerprint_collisions, 2, "cc dd and ee ff differ from aa bb");
    let marks: Vec<&str> = output.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(marks, ["0.000000", "1.000000", "0.000000", "1.000000", "1.000000", "0.000000"]);
}

#[test]
fn several_verification_passes_decide_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let generated = corpus(42, 400);
    write_corpus(&path, &generated, Format::Jsonl);
    let (one, one_stats) = run(&path, dir.path(), Format::Jsonl, |c| c.unit = UnitKind::Sentence, xxh3_128).unwrap();
    let (many, many_stats) = run(
        &path,
        dir.path(),
        Format::Jsonl,
        |c| {
            c.unit = UnitKind::Sentence;
            c.base.limits.chunk_ngrams = Some(40);
        },
        xxh3_128,
    )
    .unwrap();
    assert_eq!(one_stats.verify_passes, 1);
    assert!(many_stats.verify_passes > 3, "{} passes", many_stats.verify_passes);
    assert_eq!(one, many);
    assert!(one_stats.units_removed > 100);
}

#[test]
fn lines_of_a_vertical_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.vert");
    write_corpus(&path, &corpus(1, 3), Format::Vertical);
    let err = run(&path, dir.path(), Format::Vertical, |c| c.unit = UnitKind::Line, xxh3_128).unwrap_err();
    assert!(matches!(&err, PipelineError::Usage(m) if m.contains("vertical")), "{err}");
}
