//! Helpers for the end-to-end tests: run the `dupgram` binary, make corpora.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dupgram_lexicon::Normalization;
use dupgram_testkit::{Corpus, CorpusSpec, NaiveOptions, naive_ngrams};

pub fn dupgram() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dupgram"))
}

/// Runs dupgram with `args`; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_with_stdin(args, None)
}

/// Runs dupgram with `args` in the directory `dir`; returns (exit code, stdout, stderr).
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_in_with_stdin(Some(dir), args, None)
}

pub fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    run_in_with_stdin(None, args, stdin)
}

fn run_in_with_stdin(dir: Option<&Path>, args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut command = dupgram();
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the dupgram binary runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Parses `words<TAB>count` lines.
pub fn parse_tsv(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .map(|l| {
            let (g, c) = l.rsplit_once('\t').expect("a TAB in every line");
            (g.to_owned(), c.parse().expect("a count"))
        })
        .collect()
}

/// A generated corpus: writes it as JSON Lines; returns the document texts.
pub fn generated(path: &Path, tokens: u64, seed: u64, vocabulary: u32) -> Vec<String> {
    generated_from(path, CorpusSpec { seed, tokens, vocabulary, mean_doc_len: 80, ..CorpusSpec::default() })
}

/// A corpus whose vocabulary grows like web text's (most words seen once),
/// in documents of about 60 tokens.
pub fn open_vocabulary(seed: u64, tokens: u64) -> CorpusSpec {
    CorpusSpec {
        seed,
        tokens,
        vocabulary: 3000,
        mean_doc_len: 60,
        open_vocabulary: 0.6,
        open_zipf: 1.05,
        ..CorpusSpec::default()
    }
}

/// The document texts of `spec`'s corpus.
pub fn texts(spec: CorpusSpec) -> Vec<String> {
    let corpus = Corpus::new(spec.clone());
    Corpus::new(spec).map(|d| corpus.text(&d)).collect()
}

/// Writes the corpus of `spec` as JSON Lines (IDs `g0`, `g1`, …); returns the texts.
pub fn generated_from(path: &Path, spec: CorpusSpec) -> Vec<String> {
    let texts = texts(spec);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (i, t) in texts.iter().enumerate() {
        writeln!(f, "{}", serde_json::json!({ "id": format!("g{i}"), "text": t })).unwrap();
    }
    texts
}

pub fn naive(texts: &[String], n: usize) -> BTreeMap<String, u64> {
    naive_ngrams(
        texts,
        &NaiveOptions { norm: Normalization::default(), stopwords: vec![], stop_top: 0, n, min_count: 2 },
    )
}

/// Files left in a directory (temporary files that should be gone).
pub fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The line a reader of a truncated stream is on when it breaks: one past the
/// lines that decode whole (`decoder` reads the truncated bytes).
pub fn breaking_line(mut decoder: impl std::io::Read) -> u64 {
    let mut decoded = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = decoder.read(&mut buf) {
        if n == 0 {
            break;
        }
        decoded.extend_from_slice(&buf[..n]);
    }
    decoded.iter().filter(|&&b| b == b'\n').count() as u64 + 1
}

pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples").join(name)
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
