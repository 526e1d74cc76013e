//! `dupgram-onion`: the in-memory baseline of `dupgram dedup` — Onion's
//! algorithm (Pomikálek 2011; Benko 2013, §3) as Onion 1.2 runs it in memory.
//! It reads a vertical file (plain, `.gz` or `.zst`, with dupgram's own
//! reader): one token per line (its first TAB column), `<doc …>` … `</doc>`,
//! and units (`<p>` … `</p>`, or `<s>`, or whole documents).
//!
//! The corpus is walked in order. A token of a unit is covered when it lies
//! in an n-gram (lower-cased tokens, a 64-bit hash per n-gram) ending in the
//! unit — it may start in an earlier unit of the same document — that was
//! seen before: in kept text (a global hash set) or earlier in the same
//! document. A unit is a duplicate when more than `--threshold` of its tokens
//! are covered; the n-grams of kept units join the global set once the
//! document is decided. Smoothing is Onion 1.2's loop (`onion.c`): the
//! document's start and end count as boundaries like a duplicate unit, and
//! every run of kept units of at most `--max-stub` tokens between two
//! boundaries goes too — a whole short document included, duplicate or not
//! (`--no-smoothing` turns it off). The threshold is a 32-bit float, as in
//! Onion. Document tags go when no unit with a token is kept. Units are cut
//! exactly as `dupgram dedup` cuts them.
//!
//! `--onion-hash ONION/src/buzhash.c` hashes as Onion 1.2 itself does,
//! with the character table read from Onion's own source: a token is its
//! whole line, hashed by XOR and rotation of per-byte values, and an n-gram
//! is the XOR of its tokens' hashes rotated by their distance from its end
//! (buzhash). That hash is linear: two n-grams whose bytes cancel out under
//! XOR collide (`5 , 216` and `2 , 516` in the same place of a 7-gram do),
//! which is why real Onion marks some text no exact method marks. With the
//! option, this program marks what real Onion marks, collisions included;
//! without it, what dupgram marks.
//!
//! Its memory grows with the corpus (8 bytes and a control byte per distinct
//! n-gram of kept text, in a hash table that doubles), and a 64-bit collision
//! can mark a unit wrongly — the two costs dupgram's duplicate-only index
//! removes.
//!
//!     dupgram-onion corpus.vert.zst -n 7 --threshold 0.5 [--max-stub 20 | --no-smoothing] -o marked.vert --marks units.txt
//!
//! `-o` writes the corpus with every line prefixed `1<TAB>` (removed) or
//! `0<TAB>` (kept), as `dupgram dedup` does; `--marks` one `1`/`0` per unit.
//! The summary goes to standard output.

use std::collections::HashSet;
use std::fs::File;
use std::hash::BuildHasherDefault;

use dupgram_testkit::Identity;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use dupgram_corpus::{VerticalLine, open_decoded};
use xxhash_rust::xxh3::xxh3_64;

const USAGE: &str = "usage: dupgram-onion INPUT.vert[.gz|.zst]... [-n 7] [--threshold 0.5] [--max-stub 20] [--no-smoothing] [--unit p|s|doc] [--keep-case] [--onion-hash ONION/src/buzhash.c] [-o MARKED.vert] [--marks UNITS.txt]";

fn main() -> anyhow::Result<()> {
    let mut params = Params {
        n: 7,
        threshold: 0.5,
        max_stub: Some(20),
        unit_tag: Some("p".into()),
        keep_case: false,
        buzhash: None,
    };
    let (mut inputs, mut output, mut marks) = (Vec::new(), None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"));
        match flag.as_str() {
            "-n" => params.n = value()?.parse()?,
            "--threshold" => params.threshold = value()?.parse()?,
            "--max-stub" => params.max_stub = Some(value()?.parse()?),
            "--no-smoothing" => params.max_stub = None,
            "--unit" => {
                params.unit_tag = match value()?.as_str() {
                    "doc" => None,
                    tag @ ("p" | "s") => Some(tag.into()),
                    other => anyhow::bail!("unknown unit {other} (p, s or doc)"),
                }
            }
            "--keep-case" => params.keep_case = true,
            "--onion-hash" => params.buzhash = Some(read_buzhash_table(&PathBuf::from(value()?))?),
            "-o" | "--output" => output = Some(PathBuf::from(value()?)),
            "--marks" => marks = Some(PathBuf::from(value()?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            path => inputs.push(PathBuf::from(path)),
        }
    }
    anyhow::ensure!(!inputs.is_empty(), "{USAGE}");
    anyhow::ensure!(params.n >= 1, "-n must be at least 1");
    anyhow::ensure!((0.0..=1.0).contains(&params.threshold), "--threshold must be between 0 and 1");

    let started = Instant::now();
    let create = |path: &PathBuf| -> anyhow::Result<BufWriter<File>> {
        let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(BufWriter::with_capacity(1 << 20, file))
    };
    let mut onion = Onion::new(params);
    let mut reader = VerticalReader::new(&onion.params, output.is_some());
    let mut out = output.as_ref().map(create).transpose()?;
    let mut marks_out = marks.as_ref().map(create).transpose()?;
    let mut stats = Stats::default();
    let mut line = Vec::new();
    for path in &inputs {
        let mut input = open_decoded(path).with_context(|| format!("cannot open {}", path.display()))?;
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line).with_context(|| format!("cannot read {}", path.display()))? == 0 {
                break;
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            match reader.line(&line) {
                Step::Inside => {}
                Step::Outside => {
                    if let Some(out) = out.as_mut() {
                        out.write_all(b"0\t")?;
                        out.write_all(&line)?;
                        out.write_all(b"\n")?;
                    }
                }
                Step::DocEnded => finish(&mut onion, &mut reader, &mut stats, out.as_mut(), marks_out.as_mut())?,
            }
        }
        if reader.end_of_input() {
            finish(&mut onion, &mut reader, &mut stats, out.as_mut(), marks_out.as_mut())?;
        }
    }
    for w in [out.as_mut(), marks_out.as_mut()].into_iter().flatten() {
        w.flush()?;
    }
    println!(
        "documents\t{}\ntokens\t{}\nunits\t{}\nunits_removed\t{}\nunits_kept\t{}\ntokens_removed\t{}\nngrams_stored\t{}\nseconds\t{:.2}",
        stats.documents,
        stats.tokens,
        stats.units,
        stats.units_removed,
        stats.units - stats.units_removed,
        stats.tokens_removed,
        onion.kept.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Decides the document the reader holds, writes it out and starts the next.
fn finish(
    onion: &mut Onion,
    reader: &mut VerticalReader,
    stats: &mut Stats,
    out: Option<&mut BufWriter<File>>,
    marks: Option<&mut BufWriter<File>>,
) -> anyhow::Result<()> {
    let doc = &reader.doc;
    let removed = onion.document(&doc.units, &doc.hashes);
    stats.documents += 1;
    stats.tokens += doc.hashes.len() as u64;
    for (&tokens, &gone) in doc.units.iter().zip(&removed) {
        stats.units += 1;
        if gone {
            stats.units_removed += 1;
            stats.tokens_removed += u64::from(tokens);
        }
    }
    if let Some(marks) = marks {
        for &gone in &removed {
            marks.write_all(if gone { b"1\n" } else { b"0\n" })?;
        }
    }
    if let Some(out) = out {
        // Onion keeps the document's tags while one unit with a token is kept.
        let all_removed = !doc.units.iter().zip(&removed).any(|(&tokens, &gone)| tokens > 0 && !gone);
        let mut start = 0;
        for (&end, role) in doc.ends.iter().zip(&doc.roles) {
            let gone = match role {
                Role::DocTag => all_removed,
                Role::Unit(u) => removed[*u as usize],
            };
            out.write_all(if gone { b"1\t" } else { b"0\t" })?;
            out.write_all(&doc.bytes[start..end])?;
            out.write_all(b"\n")?;
            start = end;
        }
    }
    reader.next_doc();
    Ok(())
}

#[derive(Debug, Default)]
struct Stats {
    documents: u64,
    tokens: u64,
    units: u64,
    units_removed: u64,
    tokens_removed: u64,
}

#[derive(Debug, Clone)]
struct Params {
    n: usize,
    /// Kept as Onion keeps it: a C `float`.
    threshold: f32,
    /// Onion's `-l`; None: no smoothing (`-m`).
    max_stub: Option<u32>,
    /// `p` or `s`; None: whole documents.
    unit_tag: Option<String>,
    /// Hash tokens as they are instead of lower-cased (`dupgram dedup` takes vertical tokens as they are).
    keep_case: bool,
    /// Onion's character table: hash whole lines and n-grams as Onion 1.2 does.
    buzhash: Option<Vec<u64>>,
}

type HashSet64 = HashSet<u64, BuildHasherDefault<Identity>>;

/// Onion's state: the n-gram hashes of everything kept so far.
struct Onion {
    params: Params,
    kept: HashSet64,
    /// N-grams seen earlier in the current document.
    local: HashSet64,
    fps: Vec<u64>,
}

impl Onion {
    fn new(params: Params) -> Self {
        Onion { params, kept: HashSet64::default(), local: HashSet64::default(), fps: Vec::new() }
    }

    /// Decides one document: `units[i]` tokens in unit `i`, `hashes` the
    /// hashes of its tokens in order. Returns whether each unit is removed.
    fn document(&mut self, units: &[u32], hashes: &[[u8; 8]]) -> Vec<bool> {
        let n = self.params.n;
        let mut starts = Vec::with_capacity(units.len());
        let mut ends = Vec::with_capacity(units.len());
        let mut at = 0usize;
        for &len in units {
            starts.push(at);
            at += len as usize;
            ends.push(at);
        }
        let mut covered = vec![0usize; units.len()];
        let mut covered_to = vec![0usize; units.len()];
        self.fps.clear();
        let mut unit = 0;
        for (pos, gram) in hashes.windows(n).enumerate() {
            let fp = match &self.params.buzhash {
                Some(_) => buzhash_ngram(gram),
                None => xxh3_64(gram.as_flattened()),
            };
            self.fps.push(fp);
            // The unit of the n-gram's last token.
            while ends[unit] < pos + n {
                unit += 1;
            }
            let seen_here = !self.local.insert(fp);
            if !(seen_here || self.kept.contains(&fp)) {
                continue;
            }
            let from = pos.max(starts[unit]).max(covered_to[unit]);
            let to = pos + n;
            if to > from {
                covered[unit] += to - from;
                covered_to[unit] = to;
            }
        }
        let mut removed: Vec<bool> = units
            .iter()
            .zip(&covered)
            .map(|(&len, &c)| len > 0 && c as f64 / f64::from(len) > f64::from(self.params.threshold))
            .collect();
        if let Some(max_stub) = self.params.max_stub {
            smooth(&mut removed, units, max_stub);
        }
        let mut unit = 0;
        for (pos, &fp) in self.fps.iter().enumerate() {
            while ends[unit] < pos + n {
                unit += 1;
            }
            if !removed[unit] {
                self.kept.insert(fp);
            }
        }
        // Clearing costs the table's size: start afresh after a very long document.
        if self.local.capacity() > 1 << 16 {
            self.local = HashSet64::default();
        } else {
            self.local.clear();
        }
        removed
    }
}

/// Onion 1.2's smoothing loop, as `onion.c` writes it: `last_bad` starts one
/// before the first unit, the loop runs to one past the last, and at each
/// boundary (a duplicate, or the end) the units since the last boundary go
/// if they hold at most `max_stub` tokens.
fn smooth(bad: &mut [bool], units: &[u32], max_stub: u32) {
    let mut last_bad: isize = -1;
    let mut stub_length = 0u64;
    for i in 0..=bad.len() {
        if i == bad.len() || bad[i] {
            if stub_length <= u64::from(max_stub) {
                for b in &mut bad[(last_bad + 1) as usize..i] {
                    *b = true;
                }
            }
            last_bad = i as isize;
            stub_length = 0;
        } else {
            stub_length += u64::from(units[i]);
        }
    }
}

/// What a line did.
enum Step {
    /// Part of the current document.
    Inside,
    /// Outside any document: written out as it is (marked kept).
    Outside,
    /// The current document is complete (the line, if it opened the next, is kept for it).
    DocEnded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    DocTag,
    Unit(u32),
}

/// The current document: token hashes, unit sizes, and its lines when output is written.
#[derive(Default)]
struct Doc {
    hashes: Vec<[u8; 8]>,
    units: Vec<u32>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    roles: Vec<Role>,
}

/// Cuts a vertical file into documents and units the way `dupgram dedup` does.
struct VerticalReader {
    unit_tag: Option<String>,
    keep_case: bool,
    buzhash: Option<Vec<u64>>,
    keep_lines: bool,
    in_doc: bool,
    /// A `<doc>` line that ended the previous document and opens the next.
    pending: Option<Vec<u8>>,
    unit_has_lines: bool,
    boundary_next: bool,
    doc: Doc,
    lower: String,
}

impl VerticalReader {
    fn new(params: &Params, keep_lines: bool) -> Self {
        let mut r = VerticalReader {
            unit_tag: params.unit_tag.clone(),
            keep_case: params.keep_case,
            buzhash: params.buzhash.clone(),
            keep_lines,
            in_doc: false,
            pending: None,
            unit_has_lines: false,
            boundary_next: false,
            doc: Doc::default(),
            lower: String::new(),
        };
        r.next_doc();
        r
    }

    /// Forgets the decided document; takes up a pending `<doc>` line.
    fn next_doc(&mut self) {
        let d = &mut self.doc;
        d.hashes.clear();
        d.units.clear();
        d.units.push(0);
        d.bytes.clear();
        d.ends.clear();
        d.roles.clear();
        self.unit_has_lines = false;
        self.boundary_next = false;
        if let Some(line) = self.pending.take() {
            self.in_doc = true;
            self.push(&line, Role::DocTag);
        }
    }

    /// At the end of an input: whether a document is left to decide.
    fn end_of_input(&mut self) -> bool {
        std::mem::replace(&mut self.in_doc, false)
    }

    fn push(&mut self, line: &[u8], role: Role) {
        if self.keep_lines {
            self.doc.bytes.extend_from_slice(line);
            self.doc.ends.push(self.doc.bytes.len());
            self.doc.roles.push(role);
        }
    }

    fn line(&mut self, line: &[u8]) -> Step {
        let kind = VerticalLine::classify(line);
        match kind {
            VerticalLine::DocOpen(_) if self.in_doc => {
                self.pending = Some(line.to_vec());
                self.in_doc = false;
                return Step::DocEnded;
            }
            VerticalLine::DocOpen(_) => {
                self.in_doc = true;
                self.push(line, Role::DocTag);
                return Step::Inside;
            }
            VerticalLine::DocClose if self.in_doc => {
                self.push(line, Role::DocTag);
                self.in_doc = false;
                return Step::DocEnded;
            }
            VerticalLine::DocClose | VerticalLine::Structure(_) | VerticalLine::Blank if !self.in_doc => {
                return Step::Outside;
            }
            _ => self.in_doc = true,
        }
        let (opens, closes) = match (&self.unit_tag, kind) {
            (Some(tag), VerticalLine::Structure(s)) => (is_open_tag(s, tag), is_close_tag(s, tag)),
            _ => (false, false),
        };
        if (opens || self.boundary_next) && self.unit_has_lines {
            self.doc.units.push(0);
        }
        self.boundary_next = closes;
        self.unit_has_lines = true;
        if let VerticalLine::Token(word) = kind
            && !word.is_empty()
        {
            *self.doc.units.last_mut().expect("a unit") += 1;
            let hash = match &self.buzhash {
                // Onion hashes the whole line, every column.
                Some(table) => buzhash_token(line, table),
                None => token_hash(word, self.keep_case, &mut self.lower),
            };
            self.doc.hashes.push(hash.to_le_bytes());
        }
        let unit = self.doc.units.len() as u32 - 1;
        self.push(line, Role::Unit(unit));
        Step::Inside
    }
}

/// Onion's character table, read from the C source of Onion 1.2
/// (`CHAR2LONG[255] = { …ul, … }` in `src/buzhash.c`).
fn read_buzhash_table(path: &std::path::Path) -> anyhow::Result<Vec<u64>> {
    let source = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let body = source
        .split_once("CHAR2LONG")
        .and_then(|(_, rest)| rest.split_once('{'))
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(body, _)| body)
        .ok_or_else(|| anyhow::anyhow!("{}: no CHAR2LONG table", path.display()))?;
    let table = body
        .split(',')
        .map(|v| v.trim().trim_end_matches("ul").trim_end_matches("UL"))
        .filter(|v| !v.is_empty())
        .map(|v| v.parse::<u64>().with_context(|| format!("{}: bad table entry {v}", path.display())))
        .collect::<anyhow::Result<Vec<u64>>>()?;
    anyhow::ensure!(table.len() == 255, "{}: {} table entries, not 255", path.display(), table.len());
    Ok(table)
}

/// Onion's `hash_string`: XOR in each byte's value, rotate left by one. Its
/// table has 255 entries, so byte 0xFF (never in UTF-8) reads past it in C;
/// here it counts as 0.
fn buzhash_token(line: &[u8], table: &[u64]) -> u64 {
    let mut hash = 0u64;
    for &b in line {
        hash ^= table.get(usize::from(b)).copied().unwrap_or(0);
        hash = hash.rotate_left(1);
    }
    hash
}

/// Onion's rolling buzhash of an n-gram: each token's hash rotated left by
/// its distance from the n-gram's end, XORed together.
fn buzhash_ngram(gram: &[[u8; 8]]) -> u64 {
    gram.iter().fold(0u64, |hash, token| hash.rotate_left(1) ^ u64::from_le_bytes(*token))
}

/// The hash of a token, lower-cased unless `keep_case`.
fn token_hash(word: &[u8], keep_case: bool, buf: &mut String) -> u64 {
    if keep_case || (word.is_ascii() && !word.iter().any(u8::is_ascii_uppercase)) {
        return match std::str::from_utf8(word) {
            Ok(_) => xxh3_64(word),
            Err(_) => xxh3_64(String::from_utf8_lossy(word).as_bytes()),
        };
    }
    buf.clear();
    if word.is_ascii() {
        buf.extend(word.iter().map(|b| b.to_ascii_lowercase() as char));
    } else {
        buf.push_str(&String::from_utf8_lossy(word).to_lowercase());
    }
    xxh3_64(buf.as_bytes())
}

/// `<p>` or `<p …>` for tag `p`.
fn is_open_tag(line: &[u8], tag: &str) -> bool {
    line.strip_prefix(b"<")
        .and_then(|rest| rest.strip_prefix(tag.as_bytes()))
        .is_some_and(|rest| rest.first().is_some_and(|&b| b == b'>' || b == b' '))
}

/// `</p>` for tag `p`.
fn is_close_tag(line: &[u8], tag: &str) -> bool {
    line.strip_prefix(b"</").and_then(|rest| rest.strip_prefix(tag.as_bytes())) == Some(b">".as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dupgram_dedup::{DedupParams, Marker, NgramAt};
    use dupgram_testkit::{Corpus, CorpusSpec, SplitMix};
    use std::collections::HashMap;

    fn params(n: usize, threshold: f64) -> Params {
        let unit_tag = Some("p".into());
        Params { n, threshold: threshold as f32, max_stub: None, unit_tag, keep_case: false, buzhash: None }
    }

    /// Documents cut into units of random lengths (some shorter than n, some empty).
    fn corpus(seed: u64, tokens: u64) -> Vec<Vec<Vec<u32>>> {
        let spec = CorpusSpec { seed, tokens, vocabulary: 300, mean_doc_len: 60, ..CorpusSpec::default() };
        let mut rng = SplitMix::new(seed);
        Corpus::new(spec)
            .map(|doc| {
                let mut units = Vec::new();
                let mut rest = &doc.words[..];
                while !rest.is_empty() {
                    let take = (rng.below(25) as usize).min(rest.len());
                    units.push(rest[..take].to_vec());
                    rest = &rest[take..];
                }
                units
            })
            .collect()
    }

    fn hashes(units: &[Vec<u32>]) -> Vec<[u8; 8]> {
        units.concat().iter().map(|w| xxh3_64(&w.to_le_bytes()).to_le_bytes()).collect()
    }

    /// The baseline decides exactly as dupgram's marker on the same documents,
    /// with and without smoothing: n-grams hashed here, numbered by the exact
    /// index there.
    #[test]
    fn agrees_with_dupgrams_marker() {
        let cases =
            [(1, 3, 0.5, None), (2, 5, 0.0, Some(20)), (3, 7, 0.5, Some(20)), (4, 2, 0.9, Some(5)), (5, 4, 1.0, None)];
        for (seed, n, threshold, max_stub) in cases {
            let docs = corpus(seed, 30_000);
            let mut counts: HashMap<&[u32], u32> = HashMap::new();
            let flat: Vec<Vec<u32>> = docs.iter().map(|d| d.concat()).collect();
            for tokens in &flat {
                for g in tokens.windows(n) {
                    *counts.entry(g).or_default() += 1;
                }
            }
            let mut ids: HashMap<&[u32], u32> = HashMap::new();
            for (g, &c) in &counts {
                if c >= 2 {
                    let id = ids.len() as u32;
                    ids.insert(g, id);
                }
            }
            let smoothing = max_stub.is_some();
            let dedup = DedupParams { n: n as u32, threshold, smoothing, max_stub: max_stub.unwrap_or(0) };
            let mut marker = Marker::new(dedup, ids.len());
            let mut onion = Onion::new(Params { max_stub, ..params(n, threshold) });
            let mut removed = 0;
            for (doc, tokens) in docs.iter().zip(&flat) {
                let units: Vec<u32> = doc.iter().map(|u| u.len() as u32).collect();
                let ngrams: Vec<NgramAt> = tokens
                    .windows(n)
                    .enumerate()
                    .filter_map(|(p, g)| ids.get(g).map(|&id| NgramAt { pos: p as u32, id }))
                    .collect();
                let expected: Vec<bool> = marker.document(&units, &ngrams, &[]).iter().map(|v| v.removed()).collect();
                let got = onion.document(&units, &hashes(doc));
                assert_eq!(got, expected, "seed {seed}, n {n}");
                removed += got.iter().filter(|&&r| r).count();
            }
            assert!(removed > 0 || threshold == 1.0, "seed {seed}: nothing removed, a weak test");
        }
    }

    fn run(text: &str, params: &Params) -> (Vec<Vec<u32>>, String) {
        let mut reader = VerticalReader::new(params, true);
        let mut docs = Vec::new();
        let mut out = String::new();
        let mut flush = |reader: &mut VerticalReader, out: &mut String| {
            docs.push(reader.doc.units.clone());
            let mut start = 0;
            for (&end, role) in reader.doc.ends.iter().zip(&reader.doc.roles) {
                let tag = match role {
                    Role::DocTag => "D".to_string(),
                    Role::Unit(u) => u.to_string(),
                };
                out.push_str(&format!("{tag}:{}\n", String::from_utf8_lossy(&reader.doc.bytes[start..end])));
                start = end;
            }
            reader.next_doc();
        };
        for line in text.lines() {
            match reader.line(line.as_bytes()) {
                Step::Inside => {}
                Step::Outside => out.push_str(&format!("-:{line}\n")),
                Step::DocEnded => flush(&mut reader, &mut out),
            }
        }
        if reader.end_of_input() {
            flush(&mut reader, &mut out);
        }
        (docs, out)
    }

    #[test]
    fn units_are_cut_like_dupgram_dedup() {
        let text = "<x>\n<doc id=\"a\">\n<p>\nA\tx\nb\n</p>\n<g/>\n<p n=\"2\">\nc\n</p>\n</doc>\n\ntok\n<doc id=\"b\">\nd\n<pre>\n";
        let (docs, out) = run(text, &params(2, 0.5));
        assert_eq!(docs, [vec![2, 0, 1], vec![1], vec![1]]);
        assert_eq!(
            out,
            "-:<x>\nD:<doc id=\"a\">\n0:<p>\n0:A\tx\n0:b\n0:</p>\n1:<g/>\n2:<p n=\"2\">\n2:c\n2:</p>\nD:</doc>\n-:\n0:tok\nD:<doc id=\"b\">\n0:d\n0:<pre>\n"
        );
        let (docs, _) = run(text, &Params { unit_tag: None, ..params(2, 0.5) });
        assert_eq!(docs, [vec![3], vec![1], vec![1]]);
    }

    /// Onion's rolling buzhash (`buzhash.c`: rotate the hash by one, XOR out
    /// the oldest token rotated by n, XOR in the new one) gives what
    /// `buzhash_ngram` computes for every window; the table is read from a
    /// C source written the way Onion's is.
    #[test]
    fn onion_hash_is_its_rolling_hash() {
        let dir = std::env::temp_dir().join(format!("dupgram-onion-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("buzhash.c");
        let mut rng = SplitMix::new(7);
        let values: Vec<String> = (0..255).map(|_| format!("    {}ul", rng.next_u64())).collect();
        std::fs::write(&path, format!("const hash_t CHAR2LONG[255] = {{\n{}\n}};\n", values.join(",\n"))).unwrap();
        let table = read_buzhash_table(&path).unwrap();
        std::fs::write(&path, "const hash_t CHAR2LONG[3] = { 1ul, 2ul, 3ul };").unwrap();
        assert!(read_buzhash_table(&path).is_err(), "a short table is refused");
        std::fs::remove_dir_all(&dir).unwrap();

        let n = 7;
        let tokens: Vec<u64> = ["loss", "5", ",", "216", ",", "000", "vs", "loss", "2", ",", "516"]
            .iter()
            .map(|t| buzhash_token(t.as_bytes(), &table))
            .collect();
        let (mut rolling, mut window) = (0u64, std::collections::VecDeque::new());
        for (i, &h) in tokens.iter().enumerate() {
            rolling = rolling.rotate_left(1) ^ h;
            if window.len() == n {
                rolling ^= window.pop_front().unwrap_or(0u64).rotate_left(n as u32);
            }
            window.push_back(h);
            if i + 1 >= n {
                let gram: Vec<[u8; 8]> = tokens[i + 1 - n..=i].iter().map(|h| h.to_le_bytes()).collect();
                assert_eq!(buzhash_ngram(&gram), rolling, "window ending at {i}");
            }
        }
    }

    #[test]
    fn tokens_are_lower_cased_unless_asked() {
        let mut buf = String::new();
        assert_eq!(token_hash(b"Word", false, &mut buf), token_hash(b"word", false, &mut buf));
        assert_eq!(token_hash("ÉTÉ".as_bytes(), false, &mut buf), token_hash("été".as_bytes(), false, &mut buf));
        assert_ne!(token_hash(b"Word", true, &mut buf), token_hash(b"word", true, &mut buf));
    }

    #[test]
    fn repeated_paragraph_is_removed_and_its_first_instance_kept() {
        let mut onion = Onion::new(params(3, 0.5));
        let para = |words: &[u32]| words.to_vec();
        let a = para(&[1, 2, 3, 4, 5, 6]);
        let doc1 = vec![a.clone(), para(&[7, 8, 9, 10])];
        assert_eq!(onion.document(&[6, 4], &hashes(&doc1)), [false, false]);
        let doc2 = vec![para(&[11, 12, 13]), a.clone(), para(&[14, 15, 16])];
        assert_eq!(onion.document(&[3, 6, 3], &hashes(&doc2)), [false, true, false]);
        // Repeated within one document: the second instance goes.
        let doc3 = vec![para(&[20, 21, 22, 23]), para(&[20, 21, 22, 23])];
        assert_eq!(onion.document(&[4, 4], &hashes(&doc3)), [false, true]);
    }
}
