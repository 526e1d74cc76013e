//! `find_spot_pairs`: the pairs of [`find_pairs`], with SpotSigs spot
//! signatures (`dupgram-spotsigs`) in place of word n-grams.
//!
//! The corpus is read once and each document written, to a working file in
//! the job's scratch directory, as the sequence of its signatures (one
//! whitespace-free token each, in the order their chains complete, IDs
//! kept). With an IDF range other than `[0, 1]`, each signature's document
//! frequency is counted on the way and a second pass over the working file
//! drops the signatures outside the range. [`find_pairs`] then pairs the
//! working file with n = 1, so every guarantee of the n-gram pairs holds
//! for signatures:
//!
//! * **SSR** is the Jaccard coefficient of the two documents' signature
//!   *sets*, from exact counts (a 1-gram set is the set of signatures);
//! * **coverage** and **SSCR** count the tokens of chain positions: every
//!   signature stands for its antecedent and its `c` chain words, so a
//!   document's coverage is the chain tokens of its occurrences of shared
//!   signatures over the chain tokens of all its signature occurrences
//!   (a token in two chains counts in both);
//! * identical documents are those with identical signature sequences;
//!   `--max-df` counts documents holding a signature.
//!
//! IDF is normalised to `[0, 1]` by its largest value: `idf(s) = ln(N /
//! df(s)) / ln N` for `N` documents, 1 for a signature in one document,
//! 0 for one in all of them.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_corpus::{Batch, CorpusReader, Format, Input, ReadOptions, ReadStats};
use dupgram_lexicon::{Normalization, Tokenizer};
use dupgram_spotsigs::{SpotExtractor, SpotParams};
use serde::{Deserialize, Serialize};

use crate::ngrams::NgramConfig;
use crate::pairs::{PairsConfig, PairsStats, find_pairs};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::human_bytes;
use dupgram_jobkit::output::PairsSink;
use dupgram_jobkit::scratch::Scratch;

/// How documents become signatures.
#[derive(Debug, Clone)]
pub struct SpotConfig {
    pub params: SpotParams,
    /// Keep signatures whose normalised IDF lies in `[lo, hi]`.
    pub idf_range: (f64, f64),
}

impl SpotConfig {
    pub fn check(&self) -> Result<(), PipelineError> {
        let (lo, hi) = self.idf_range;
        if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
            return Err(PipelineError::Usage(format!(
                "--idf-range must be LO,HI with 0 <= LO <= HI <= 1, not {lo},{hi}"
            )));
        }
        Ok(())
    }

    /// Whether the IDF range keeps every signature (no document frequencies needed).
    fn keeps_all(&self) -> bool {
        self.idf_range == (0.0, 1.0)
    }
}

/// What the signature pass found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SpotStats {
    /// Tokens of the corpus, stop words included.
    pub tokens: u64,
    /// Signature occurrences extracted, and those the IDF range kept.
    pub signatures: u64,
    pub kept_signatures: u64,
    /// Distinct signatures (counted only with an IDF range), and those kept.
    pub distinct_signatures: u64,
    pub kept_distinct_signatures: u64,
    /// Documents left without a signature (after the IDF range).
    pub documents_without_signatures: u64,
    pub idf_range: (f64, f64),
    pub spot_distance: usize,
    pub chain: usize,
    pub seconds: f64,
}

/// The working file of signatures, and what making it found.
struct Signed {
    path: PathBuf,
    /// The longest line written, for the reader's record limit.
    longest_line: usize,
    read: ReadStats,
}

/// Finds and scores the pairs of documents sharing spot signatures; results go to `sink`.
pub fn find_spot_pairs(
    config: &PairsConfig,
    spot: &SpotConfig,
    control: &Control,
    sink: &mut dyn PairsSink,
) -> Result<(PairsStats, SpotStats), PipelineError> {
    let started = Instant::now();
    config.check()?;
    spot.check()?;
    if config.dups.is_some() {
        return Err(PipelineError::Usage(
            "--dups counts word n-grams; it cannot be used with --features spotsigs".into(),
        ));
    }
    if config.base.stop_top > 0 {
        return Err(PipelineError::Usage(
            "--stop-top drops words before signatures are made; with --features spotsigs give --stopwords".into(),
        ));
    }
    let base = &config.base;
    let work = Scratch::create(&base.tmp_dir, "dupgram-spotsigs")?;
    let mut spot_stats = SpotStats {
        idf_range: spot.idf_range,
        spot_distance: spot.params.distance(),
        chain: spot.params.chain(),
        ..SpotStats::default()
    };
    let mut frequencies = (!spot.keeps_all()).then(|| DocFrequencies::new(base.memory));
    let signed = write_signatures(base, &spot.params, work.path(), frequencies.as_mut(), control, &mut spot_stats)?;
    let signed = match frequencies {
        Some(df) => keep_idf_range(signed, &df, spot.idf_range, work.path(), &mut spot_stats)?,
        None => {
            spot_stats.kept_signatures = spot_stats.signatures;
            signed
        }
    };
    spot_stats.seconds = started.elapsed().as_secs_f64();
    let inner = PairsConfig { base: signature_corpus(base, &signed, work.path()), ..config.clone() };
    let mut stats = find_pairs(&inner, control, sink)?;
    drop(work);
    stats.warnings.extend(read_warnings(&signed.read));
    stats.seconds.total = started.elapsed().as_secs_f64();
    Ok((stats, spot_stats))
}

/// The working file as a corpus: JSON Lines of whitespace-separated signatures, n = 1.
fn signature_corpus(base: &NgramConfig, signed: &Signed, work: &Path) -> NgramConfig {
    let read = ReadOptions {
        format: Some(Format::Jsonl),
        max_record_bytes: signed.longest_line.max(ReadOptions::default().max_record_bytes),
        ..ReadOptions::default()
    };
    NgramConfig {
        inputs: vec![Input::Path(signed.path.clone())],
        read,
        norm: Normalization::raw(),
        stopwords: Vec::new(),
        stop_top: 0,
        n: 1,
        tmp_dir: work.to_path_buf(),
        lexicon_dir: None,
        ..base.clone()
    }
}

/// What reading the corpus itself found that the user should know.
fn read_warnings(read: &ReadStats) -> Vec<String> {
    let mut out = Vec::new();
    if read.replaced_utf8 > 0 {
        let at = read.first_replaced_at.as_deref().unwrap_or("?");
        out.push(format!("{} invalid UTF-8 sequences replaced (first at {at})", read.replaced_utf8));
    }
    if read.skipped_records > 0 {
        let why = read.first_skipped.as_deref().unwrap_or("?");
        out.push(format!("{} records skipped (first: {why})", read.skipped_records));
    }
    out
}

/// Document frequencies of signatures, in memory (like the lexicon of the
/// pairs pass that follows, which holds every signature too), within half
/// of the memory budget.
struct DocFrequencies {
    counts: HashMap<Box<str>, u32>,
    bytes: u64,
    limit: u64,
    documents: u64,
}

impl DocFrequencies {
    /// Bytes a map entry costs beyond its text (key box, count, table slot).
    const ENTRY_BYTES: u64 = 48;

    fn new(memory: u64) -> Self {
        DocFrequencies { counts: HashMap::new(), bytes: 0, limit: memory / 2, documents: 0 }
    }

    fn add_document(&mut self, distinct: &HashSet<String>, memory: u64) -> Result<(), PipelineError> {
        self.documents += 1;
        for signature in distinct {
            if let Some(count) = self.counts.get_mut(signature.as_str()) {
                *count += 1;
                continue;
            }
            self.bytes += signature.len() as u64 + Self::ENTRY_BYTES;
            if self.bytes > self.limit {
                return Err(PipelineError::Memory {
                    budget: human_bytes(memory),
                    what: format!(
                        "the document frequencies of {} distinct signatures need more than half of it",
                        self.counts.len()
                    ),
                });
            }
            self.counts.insert(signature.as_str().into(), 1);
        }
        Ok(())
    }

    /// `ln(N / df) / ln N`: 1 for a signature of one document, 0 for one of all.
    fn idf(&self, signature: &str) -> f64 {
        let n = self.documents as f64;
        let df = f64::from(self.counts.get(signature).copied().unwrap_or(1));
        if self.documents < 2 { 1.0 } else { (n / df).ln() / n.ln() }
    }
}

/// Pass 1: every document of the corpus as a line of the working file.
fn write_signatures(
    base: &NgramConfig,
    params: &SpotParams,
    work: &Path,
    mut frequencies: Option<&mut DocFrequencies>,
    control: &Control,
    stats: &mut SpotStats,
) -> Result<Signed, PipelineError> {
    control.start_pass("signatures", base.inputs.iter().map(|i| i.size()).sum());
    let path = work.join("signatures.jsonl");
    let mut out = SignatureWriter::create(&path)?;
    let mut reader = CorpusReader::new(base.inputs.clone(), base.read.clone(), control.progress.bytes.clone());
    let mut tokenizer = Tokenizer::new(base.norm);
    let mut extractor = SpotExtractor::new(params.clone());
    let mut distinct: HashSet<String> = HashSet::new();
    let mut batch = Batch::default();
    while reader.fill(&mut batch, 4 << 20)? {
        if control.interrupted() {
            return Err(PipelineError::Interrupted);
        }
        for piece in &batch.pieces {
            if let Some(id) = batch.piece_id(piece) {
                out.begin(id)?;
            }
            let mut emit = |word: &str| {
                stats.tokens += 1;
                extractor.push(word, &mut |signature: &str| {
                    stats.signatures += 1;
                    out.signature(signature);
                    if frequencies.is_some() && !distinct.contains(signature) {
                        distinct.insert(signature.to_owned());
                    }
                });
            };
            tokenizer.feed(batch.piece_text(piece), &mut emit);
            if piece.last {
                tokenizer.finish(&mut emit);
                extractor.end_document();
                if out.end()? == 0 {
                    stats.documents_without_signatures += 1;
                }
                if let Some(df) = frequencies.as_deref_mut() {
                    df.add_document(&distinct, base.memory)?;
                    distinct.clear();
                }
            }
        }
    }
    stats.distinct_signatures = frequencies.as_ref().map_or(0, |df| df.counts.len() as u64);
    let longest_line = out.finish()?;
    Ok(Signed { path, longest_line, read: reader.stats().clone() })
}

/// Pass 2: the working file again, less the signatures outside the IDF range.
fn keep_idf_range(
    signed: Signed,
    df: &DocFrequencies,
    (lo, hi): (f64, f64),
    work: &Path,
    stats: &mut SpotStats,
) -> Result<Signed, PipelineError> {
    let path = work.join("signatures-idf.jsonl");
    let mut out = SignatureWriter::create(&path)?;
    let file = File::open(&signed.path).map_err(|e| PipelineError::io(&signed.path, e))?;
    let keeps = |s: &str| (lo..=hi).contains(&df.idf(s));
    stats.kept_distinct_signatures = df.counts.keys().filter(|s| keeps(s)).count() as u64;
    stats.documents_without_signatures = 0;
    for (line_no, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| PipelineError::io(&signed.path, e))?;
        let doc: SignedDoc = serde_json::from_str(&line)
            .map_err(|e| PipelineError::Corrupt(format!("{}: line {}: {e}", signed.path.display(), line_no + 1)))?;
        out.begin(&doc.id)?;
        for signature in doc.text.split(' ').filter(|s| !s.is_empty() && keeps(s)) {
            out.signature(signature);
            stats.kept_signatures += 1;
        }
        if out.end()? == 0 {
            stats.documents_without_signatures += 1;
        }
    }
    let longest_line = out.finish()?;
    std::fs::remove_file(&signed.path).map_err(|e| PipelineError::io(&signed.path, e))?;
    Ok(Signed { path, longest_line, ..signed })
}

/// A line of the working file.
#[derive(Deserialize)]
struct SignedDoc {
    id: String,
    text: String,
}

/// Writes the working file: `{"id":…,"text":"sig sig …"}` per document.
struct SignatureWriter {
    path: PathBuf,
    out: BufWriter<File>,
    line: String,
    longest_line: usize,
    signatures: usize,
}

impl SignatureWriter {
    fn create(path: &Path) -> Result<Self, PipelineError> {
        let file = File::create(path).map_err(|e| PipelineError::io(path, e))?;
        Ok(SignatureWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            line: String::new(),
            longest_line: 0,
            signatures: 0,
        })
    }

    fn begin(&mut self, id: &str) -> Result<(), PipelineError> {
        self.line.clear();
        self.signatures = 0;
        let id = serde_json::to_string(id).map_err(|e| PipelineError::Corrupt(format!("document ID: {e}")))?;
        self.line.push_str("{\"id\":");
        self.line.push_str(&id);
        self.line.push_str(",\"text\":\"");
        Ok(())
    }

    fn signature(&mut self, signature: &str) {
        if self.signatures > 0 {
            self.line.push(' ');
        }
        self.signatures += 1;
        push_json_escaped(&mut self.line, signature);
    }

    /// Ends the document's line; returns its number of signatures.
    fn end(&mut self) -> Result<usize, PipelineError> {
        self.line.push_str("\"}\n");
        self.longest_line = self.longest_line.max(self.line.len());
        self.out.write_all(self.line.as_bytes()).map_err(|e| PipelineError::io(&self.path, e))?;
        Ok(self.signatures)
    }

    fn finish(mut self) -> Result<usize, PipelineError> {
        self.out.flush().map_err(|e| PipelineError::io(&self.path, e))?;
        self.out.get_ref().sync_data().ok();
        Ok(self.longest_line)
    }
}

/// Appends `text` as the inside of a JSON string.
fn push_json_escaped(out: &mut String, text: &str) {
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}
