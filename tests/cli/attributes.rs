//! `dedup --attributes`: Dolma-style attribute records, checked against `--strip`.

use std::path::Path;

use crate::common::{leftovers, run, s};
use serde_json::Value;

/// Sentences with multi-byte words (2-, 3- and 4-byte UTF-8), repeated across documents.
const SENTENCES: &[&str] = &[
    "Die Straße am Ölfeld führt über drei Brücken nach Süden.",
    "Le café du coin sert un résumé naïve des nouvelles du jour!",
    "東京 の 天気 は 明日 晴れ に なる と 予報 され て いる.",
    "The quick brown fox 😀 jumps over the lazy dog by the river.",
    "Markets closed higher on Tuesday after a week of heavy losses.",
    "Ministers met in Brussels to discuss the new fishing quotas again.",
    "Ceny energií v Česku klesly o pět procent za poslední měsíc.",
    "A short one.",
    "Rain is expected in the north, with snow on the higher ground tonight.",
    "Shares of the company rose sharply after the quarterly report came out.",
    "Вчера в Москве прошёл сильный дождь и подул холодный ветер.",
    "Officials said the bridge would stay closed until further notice.",
];

/// A small generator, so the corpus is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Documents as paragraphs of sentences, many repeated; some with CRLF line
/// ends, leading or trailing whitespace; an empty one and one of punctuation only.
fn documents() -> Vec<Vec<Vec<&'static str>>> {
    let mut rng = Lcg(7);
    let mut docs: Vec<Vec<Vec<&str>>> = (0..40)
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|_| (0..1 + rng.below(3)).map(|_| SENTENCES[rng.below(SENTENCES.len())]).collect())
                .collect()
        })
        .collect();
    docs.insert(5, vec![]);
    docs.insert(9, vec![vec!["-----"]]);
    docs
}

/// A document's text in JSON Lines: paragraphs at blank lines, sentences on lines of their own.
fn json_text(i: usize, doc: &[Vec<&str>]) -> String {
    let eol = if i.is_multiple_of(3) { "\r\n" } else { "\n" };
    let body = doc
        .iter()
        .map(|p| p.join(if i.is_multiple_of(2) { " " } else { eol }))
        .collect::<Vec<_>>()
        .join(&format!("{eol}{eol}"));
    match i % 4 {
        0 => format!("  {body}"),
        1 => format!("{body}{eol}"),
        2 => format!("\t{body}  {eol}{eol}"),
        _ => body,
    }
}

/// A document's text as one plain-text line (without its line end).
fn line_text(i: usize, doc: &[Vec<&str>]) -> String {
    let body = doc.iter().map(|p| p.join(" ")).collect::<Vec<_>>().join("  ");
    if i % 4 == 1 { format!("  {body} ") } else { body }
}

fn write_jsonl(path: &Path, texts: &[String]) {
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| match i {
            // A numeric ID, and none at all (the line number stands in).
            3 => serde_json::json!({"id": 3, "text": text}).to_string(),
            4 => serde_json::json!({"text": text, "meta": {"source": "x"}}).to_string(),
            _ => serde_json::json!({"id": format!("doc-{i}"), "text": text}).to_string(),
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Plain text, lines ending in CRLF every other document.
fn write_text(path: &Path, texts: &[String]) {
    let body: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{t}{}", if i.is_multiple_of(2) { "\r\n" } else { "\n" }))
        .collect();
    std::fs::write(path, body).unwrap();
}

struct Attr {
    id: Value,
    spans: Vec<(u64, u64, f64)>,
    chars: u64,
    fraction: f64,
}

fn read_attributes(text: &str) -> Vec<Attr> {
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let a = &v["attributes"];
            let spans = a["dupgram_duplicate_spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s[0].as_u64().unwrap(), s[1].as_u64().unwrap(), s[2].as_f64().unwrap()))
                .collect();
            let f = &a["dupgram_dup_fraction"];
            assert_eq!(f.as_array().unwrap().len(), 1, "{line}");
            assert_eq!(f[0][0], 0, "{line}");
            Attr { id: v["id"].clone(), spans, chars: f[0][1].as_u64().unwrap(), fraction: f[0][2].as_f64().unwrap() }
        })
        .collect()
}

/// The text left when the spans (code point offsets) are cut out, as Dolma's mixer cuts them.
fn cut(text: &str, spans: &[(u64, u64, f64)]) -> String {
    text.chars()
        .enumerate()
        .filter(|&(i, _)| !spans.iter().any(|&(start, end, _)| start <= i as u64 && (i as u64) < end))
        .map(|(_, c)| c)
        .collect()
}

/// Checks one attribute file against the documents and the `--strip` output; returns
/// (documents partly cut, documents dropped whole).
fn check(texts: &[String], attrs: &[Attr], stripped: &[String], what: &str) -> (usize, usize) {
    assert_eq!(attrs.len(), texts.len(), "{what}: one record per document");
    let (mut partly, mut whole) = (0, 0);
    let mut kept = Vec::new();
    for (i, (text, a)) in texts.iter().zip(attrs).enumerate() {
        assert_eq!(a.chars, text.chars().count() as u64, "{what}: doc {i}: length in code points");
        let mut at = 0;
        for &(start, end, score) in &a.spans {
            assert!(at <= start && start < end && end <= a.chars, "{what}: doc {i}: spans ascend, within the text");
            assert!((0.0..=1.0).contains(&score), "{what}: doc {i}: score {score}");
            at = end;
        }
        assert!((0.0..=1.0).contains(&a.fraction), "{what}: doc {i}");
        let left = cut(text, &a.spans);
        if a.fraction == 1.0 {
            assert_eq!(left, "", "{what}: doc {i}: a document dropped whole has everything in spans");
            whole += 1;
        } else {
            partly += usize::from(!a.spans.is_empty());
            kept.push(left);
        }
    }
    assert_eq!(kept.len(), stripped.len(), "{what}: documents kept");
    for (i, (left, strip)) in kept.iter().zip(stripped).enumerate() {
        assert_eq!(left, strip, "{what}: kept document {i}: cutting the spans gives what --strip gives");
    }
    (partly, whole)
}

const CONFIGS: &[&[&str]] = &[
    &["--unit", "doc", "-n", "3"],
    &["--unit", "p", "-n", "3"],
    &["--unit", "s", "-n", "3"],
    &["--unit", "s", "-n", "3", "--no-smoothing"],
    &["--unit", "p", "-n", "3", "--exact", "--max-stub", "4"],
    &["--exact-only", "--unit", "doc"],
    &["--exact-only", "--unit", "p"],
    &["--exact-only", "--unit", "s"],
    &["--exact-only", "--unit", "line"],
];

fn unit_of<'a>(config: &[&'a str]) -> &'a str {
    config.iter().position(|&a| a == "--unit").map_or("p", |i| config[i + 1])
}

fn attributes_of(input: &Path, config: &[&str], out: &Path) -> Vec<Attr> {
    let attrs = out.join("attrs.jsonl");
    let mut args = vec!["dedup", s(input), "-q", "--attributes", s(&attrs)];
    args.extend_from_slice(config);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{config:?}: {stderr}");
    assert_eq!(stdout, "", "{config:?}: no documents without -o");
    read_attributes(&std::fs::read_to_string(&attrs).unwrap())
}

fn stripped_of(input: &Path, config: &[&str]) -> String {
    let mut args = vec!["dedup", s(input), "-q", "--strip"];
    args.extend_from_slice(config);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{config:?}: {stderr}");
    stdout
}

#[test]
fn cutting_the_spans_gives_the_stripped_json_text_for_every_unit() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    let texts: Vec<String> = documents().iter().enumerate().map(|(i, d)| json_text(i, d)).collect();
    write_jsonl(&input, &texts);
    for config in CONFIGS {
        let attrs = attributes_of(&input, config, dir.path());
        let ids: Vec<Value> = attrs.iter().map(|a| a.id.clone()).collect();
        assert_eq!(
            ids[2..6],
            ["doc-2".into(), 3.into(), "5".into(), "doc-5".into()] as [Value; 4],
            "{config:?}: IDs as the records give them, else the line"
        );
        let stripped: Vec<String> = stripped_of(&input, config)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["text"].as_str().unwrap().to_owned())
            .collect();
        let (partly, whole) = check(&texts, &attrs, &stripped, &format!("jsonl {config:?}"));
        assert!(whole > 0, "{config:?}: some documents go whole");
        if unit_of(config) != "doc" {
            assert!(partly > 0, "{config:?}: some documents lose part of their text");
        }
    }
}

#[test]
fn cutting_the_spans_gives_the_stripped_plain_text_for_every_unit() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.txt");
    let texts: Vec<String> = documents().iter().enumerate().map(|(i, d)| line_text(i, d)).collect();
    write_text(&input, &texts);
    for config in CONFIGS {
        let attrs = attributes_of(&input, config, dir.path());
        assert_eq!(attrs[0].id, "1", "the line number stands in for an ID");
        assert_eq!(attrs[9].id, "10");
        let stripped: Vec<String> = stripped_of(&input, config).lines().map(str::to_owned).collect();
        let (partly, whole) = check(&texts, &attrs, &stripped, &format!("text {config:?}"));
        assert!(whole > 0, "{config:?}: some documents go whole");
        if unit_of(config) == "s" {
            assert!(partly > 0, "{config:?}: some documents lose part of their text");
        }
    }
}

#[test]
fn scores_are_shares_covered_and_one_for_exact_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    let first = "one two three four five six seven eight nine ten.";
    let texts = [
        format!("{first}\n\nalpha beta gamma delta epsilon zeta eta theta iota kappa."),
        // Paragraph 1 repeats whole; paragraph 2 has 4 of its 10 tokens covered by a 3-gram seen before.
        format!("{first}\n\nlambda mu nu xi omicron pi rho one two three."),
        "ONE two, three four five six seven eight nine ten!\n\nsigma tau upsilon phi chi psi omega aa bb cc."
            .to_owned(),
    ];
    write_jsonl(&input, &texts);
    let attrs = attributes_of(&input, &["--unit", "p", "-n", "3", "--no-smoothing"], dir.path());
    assert_eq!(attrs[1].spans, [(0, 51, 1.0)]);
    assert_eq!(attrs[1].fraction, 0.5);
    assert_eq!(attrs[2].spans, [(0, 52, 1.0)]);
    let attrs = attributes_of(&input, &["--unit", "p", "-n", "3", "--no-smoothing", "--threshold", "0.2"], dir.path());
    assert_eq!(attrs[1].spans, [(0, 51, 1.0), (51, 96, 0.3)], "3 of 10 tokens covered by the 3-gram 'one two three'");
    assert_eq!(attrs[1].fraction, 1.0);
    let attrs = attributes_of(&input, &["--exact-only", "--unit", "p"], dir.path());
    assert_eq!(attrs[1].spans, [(0, 51, 1.0)]);
    assert_eq!(attrs[2].spans, [(0, 52, 1.0)], "normalised text repeats: exact");
}

#[test]
fn attributes_beside_documents_compressed_deterministic_and_refused_for_vertical() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    let texts: Vec<String> = documents().iter().enumerate().map(|(i, d)| json_text(i, d)).collect();
    write_jsonl(&input, &texts);
    let plain = dir.path().join("a.jsonl");
    let (code, _, err) = run(&["dedup", s(&input), "-n", "3", "-q", "--attributes", s(&plain), "--threads", "1"]);
    assert_eq!(code, 0, "{err}");
    // With -o, the documents are written too; .zst compresses; --threads and --memory change nothing.
    let zst = dir.path().join("a.jsonl.zst");
    let marked = dir.path().join("marked.jsonl");
    let args = [
        "dedup",
        s(&input),
        "-n",
        "3",
        "-q",
        "--attributes",
        s(&zst),
        "-o",
        s(&marked),
        "--threads",
        "2",
        "--memory",
        "64M",
    ];
    let (code, stdout, err) = run(&args);
    assert_eq!((code, stdout.as_str()), (0, ""), "{err}");
    let unpacked = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
    assert_eq!(unpacked, std::fs::read(&plain).unwrap());
    assert_eq!(std::fs::read_to_string(&marked).unwrap().lines().count(), texts.len());

    // Vertical input has no text to give offsets in: refused before any work, nothing written.
    let vert = dir.path().join("corpus.vert");
    std::fs::write(&vert, "<doc id=\"a\">\n<p>\nword\n</p>\n</doc>\n").unwrap();
    let out = dir.path().join("v").join("attrs.jsonl");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let (code, _, err) = run(&["dedup", s(&vert), "-q", "--attributes", s(&out)]);
    assert_eq!(code, 1);
    assert!(err.contains("corpus.vert is a vertical file"), "{err}");
    assert!(leftovers(out.parent().unwrap()).is_empty(), "nothing left behind");
    let (code, _, err) = run(&["dedup", s(&vert), "-q", "--exact-only", "--attributes", s(&out)]);
    assert_eq!(code, 1);
    assert!(err.contains("vertical file"), "{err}");
    // A bad attribute path fails before any work.
    let (code, _, err) = run(&["dedup", s(&input), "-q", "--attributes", s(dir.path())]);
    assert_eq!(code, 1);
    assert!(err.contains("is a directory"), "{err}");
}

/// The text left when the spans are cut out as `--unit span --strip` cuts
/// them: the words on either side of a cut joined by one space.
fn cut_joined(text: &str, spans: &[(u64, u64, f64)]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let piece = |a: u64, b: u64| chars[a as usize..b as usize].iter().collect::<String>();
    let mut pieces = Vec::new();
    let mut at = 0;
    for (i, &(start, end, _)) in spans.iter().enumerate() {
        let p = piece(at, start);
        pieces.push(if i == 0 { p.trim_end().to_owned() } else { p.trim().to_owned() });
        at = end;
    }
    let rest = piece(at, chars.len() as u64);
    pieces.push(if spans.is_empty() { rest } else { rest.trim_start().to_owned() });
    pieces.retain(|p| !p.is_empty());
    pieces.join(" ")
}

#[test]
fn span_attributes_cut_what_strip_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    let texts: Vec<String> = documents().iter().enumerate().map(|(i, d)| json_text(i, d)).collect();
    write_jsonl(&input, &texts);
    let config: &[&str] = &["--unit", "span", "--min-span", "4"];
    let attrs = attributes_of(&input, config, dir.path());
    assert_eq!(attrs.len(), texts.len(), "one record per document");
    let stripped: std::collections::HashMap<String, String> = stripped_of(&input, config)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| Some((v["id"].as_str()?.to_owned(), v["text"].as_str()?.to_owned())))
        .collect();
    let mut partly = 0;
    for (i, (text, a)) in texts.iter().zip(&attrs).enumerate() {
        assert_eq!(a.chars, text.chars().count() as u64, "doc {i}: length in code points");
        assert!(a.spans.iter().all(|s| s.2 == 1.0), "doc {i}: every cut token is covered by a repeat");
        let Some(strip) = a.id.as_str().and_then(|id| stripped.get(id)) else { continue };
        partly += usize::from(!a.spans.is_empty());
        let want = if a.spans.is_empty() { text.clone() } else { cut_joined(text, &a.spans) };
        assert_eq!(&want, strip, "doc {i}: the spans cut out, joined by one space, give what --strip gives");
    }
    assert!(partly > 0, "some kept documents lose a span");
    assert!(stripped.len() < texts.len(), "some documents go whole");
}
