//! Options shared by the commands that read a corpus.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use dupgram_corpus::{Format, Input, ReadOptions};
use dupgram_lexicon::{Normalization, TokenMode, tokenize};
use dupgram_pipeline::{MemoryPlan, parse_bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One document per line.
    Text,
    /// JSON Lines: one object per line, text in --text-field.
    Jsonl,
    /// Vertical (Onion / Sketch Engine): one token per line, <doc> structure.
    Vertical,
    /// Parquet: one document per row, text in the --text-field column.
    Parquet,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokensArg {
    /// Unicode words, split at whitespace and punctuation, case-folded.
    Words,
    /// Whitespace-separated tokens, kept as they are.
    Raw,
}

/// Where the corpus is and how to read it.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Corpus files (plain, .gz or .zst, or Parquet); `-` reads standard input (not Parquet).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// How to read the corpus files.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Input")]
pub struct ReadArgs {
    /// Input format [default: from the extension, else from the content].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// JSON Lines field or Parquet column holding the document text (a dot path into Parquet structs: meta.text).
    #[arg(long, default_value = "text", value_name = "NAME")]
    pub text_field: String,
    /// JSON Lines field or Parquet column holding the document ID (a dot path into Parquet structs: meta.id).
    #[arg(long, default_value = "id", value_name = "NAME")]
    pub id_field: String,
    /// Count malformed or over-long records (and null Parquet texts) and go on, instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
}

/// Checks and converts input paths (`-` is standard input).
pub fn inputs(paths: &[PathBuf]) -> anyhow::Result<Vec<Input>> {
    let stdin_count = paths.iter().filter(|p| p.as_os_str() == "-").count();
    anyhow::ensure!(stdin_count <= 1, "standard input (-) can be given only once");
    paths
        .iter()
        .map(|p| {
            if p.as_os_str() == "-" {
                return Ok(Input::Stdin { spool: None });
            }
            anyhow::ensure!(p.is_file(), "{}: no such file", p.display());
            Ok(Input::Path(p.clone()))
        })
        .collect()
}

impl ReadArgs {
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            format: self.format.map(|f| match f {
                FormatArg::Text => Format::Text,
                FormatArg::Jsonl => Format::Jsonl,
                FormatArg::Vertical => Format::Vertical,
                FormatArg::Parquet => Format::Parquet,
            }),
            text_field: self.text_field.clone(),
            id_field: self.id_field.clone(),
            skip_bad: self.skip_bad,
            ..ReadOptions::default()
        }
    }

    /// Vertical input is one token per line, taken as is.
    pub fn is_vertical(&self, inputs: &[PathBuf]) -> bool {
        match self.format {
            Some(f) => f == FormatArg::Vertical,
            None => inputs.iter().any(|p| Format::from_path(p) == Some(Format::Vertical)),
        }
    }
}

/// How text becomes tokens.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Tokens")]
pub struct TokenArgs {
    /// Tokenizer (vertical input is always one token per line, untouched).
    #[arg(long, value_enum, default_value_t = TokensArg::Words)]
    pub tokens: TokensArg,
    /// Replace every number by one number token `#` (Kupietz §2.1).
    #[arg(long)]
    pub numbers_as_token: bool,
    /// Remove <…> tags and decode &…; entities first.
    #[arg(long)]
    pub strip_markup: bool,
    /// Drop the words of this file (one or more per line, normalised like the corpus).
    #[arg(long, value_name = "FILE")]
    pub stopwords: Option<PathBuf>,
    /// Also drop the K most frequent words of the corpus (Pomikálek & Rychlý used 600).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub stop_top: usize,
}

impl TokenArgs {
    pub fn normalization(&self, vertical: bool) -> Normalization {
        let mode = if vertical {
            TokenMode::Lines
        } else {
            match self.tokens {
                TokensArg::Words => TokenMode::Words,
                TokensArg::Raw => TokenMode::Raw,
            }
        };
        Normalization { mode, numbers_as_token: self.numbers_as_token, strip_markup: self.strip_markup }
    }

    /// The stop list, normalised with `norm` so it matches corpus tokens.
    pub fn stopwords(&self, norm: Normalization) -> anyhow::Result<Vec<String>> {
        let Some(path) = &self.stopwords else { return Ok(Vec::new()) };
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read the stop list", path.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        // Line mode would keep "the " with its space: split stop lists into words.
        let norm = if norm.mode == TokenMode::Lines { Normalization::raw() } else { norm };
        let mut words: Vec<String> = text.lines().flat_map(|line| tokenize(norm, line)).collect();
        words.sort();
        words.dedup();
        Ok(words)
    }
}

/// Memory, threads and temporary files.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Resources")]
pub struct ResourceArgs {
    /// Peak memory (resident set) of the whole process, e.g. 512M, 4G; at least 16M, and 5M more for each .zst output.
    #[arg(long, default_value = "1G", value_name = "SIZE", value_parser = parse_size)]
    pub memory: u64,
    /// Worker threads [default: number of cores].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Directory for temporary files (runs) [default: the system's].
    #[arg(long, value_name = "DIR")]
    pub tmp_dir: Option<PathBuf>,
    /// No progress bar and no summary on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let bytes = parse_bytes(text)?;
    if bytes < MemoryPlan::MINIMUM {
        return Err(format!("at least 16M is needed, not {text}"));
    }
    Ok(bytes)
}

impl ResourceArgs {
    pub fn threads(&self) -> anyhow::Result<usize> {
        let threads = self.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |p| p.get()));
        anyhow::ensure!(threads >= 1, "--threads must be at least 1");
        Ok(threads)
    }

    pub fn tmp_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = self.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
        anyhow::ensure!(dir.is_dir(), "{}: --tmp-dir is not a directory", dir.display());
        sweep_leftovers(&dir);
        Ok(dir)
    }
}

/// Removes what jobs killed outright (SIGKILL, a lost node) left in the
/// temporary directory `dir`, and says so. Only a warning when that fails:
/// the leftovers cost disk space, not results.
fn sweep_leftovers(dir: &Path) {
    match dupgram_pipeline::scratch::sweep(dir, "dupgram") {
        Ok(swept) => {
            if let Some(notice) = swept.notice(dir) {
                eprintln!("dupgram: {notice}");
            }
        }
        Err(e) => eprintln!("dupgram: warning: leftovers of killed jobs not removed: {e}"),
    }
}

/// The duplicate n-gram count the corpus options describe: n-grams of `n`
/// words seen at least twice, with the sieve, the lexicon not kept. Each
/// command adjusts what it needs.
pub fn count_config(
    input: &InputArgs,
    tokens: &TokenArgs,
    resources: &ResourceArgs,
    n: usize,
) -> anyhow::Result<dupgram_pipeline::NgramConfig> {
    corpus_config(&input.inputs, &input.read, tokens, resources, n)
}

/// [`count_config`] of the corpus files `paths`, read as `read` says.
pub fn corpus_config(
    paths: &[PathBuf],
    read: &ReadArgs,
    tokens: &TokenArgs,
    resources: &ResourceArgs,
    n: usize,
) -> anyhow::Result<dupgram_pipeline::NgramConfig> {
    let norm = tokens.normalization(read.is_vertical(paths));
    Ok(dupgram_pipeline::NgramConfig {
        inputs: inputs(paths)?,
        read: read.read_options(),
        norm,
        stopwords: tokens.stopwords(norm)?,
        stop_top: tokens.stop_top,
        n,
        min_count: 2,
        memory: resources.memory,
        threads: resources.threads()?,
        tmp_dir: resources.tmp_dir()?,
        sieve: true,
        tmp_share: dupgram_pipeline::DEFAULT_TMP_SHARE,
        lexicon_dir: None,
        limits: dupgram_pipeline::Limits::default(),
    })
}

/// Opens an output file (see [`OutputFile::create`]); a Parquet table's row
/// groups are sized from `--memory` (1/64 of it, 1 to 64 MiB), what its
/// writer holds before a row group is written.
pub fn create_output(path: Option<&Path>, memory: u64) -> anyhow::Result<dupgram_pipeline::output::OutputFile> {
    let mut out = dupgram_pipeline::output::OutputFile::create(path)?;
    out.set_row_group_bytes((memory / 64).clamp(1 << 20, 64 << 20) as usize);
    Ok(out)
}

/// Writes `value` as pretty JSON to `path`, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = dupgram_pipeline::output::OutputFile::create(Some(path))?;
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    out.write_all(&text)?;
    out.finish()?;
    Ok(())
}

/// 1234567 → "1,234,567", as the summaries and the reports print counts.
pub use dupgram_report::group;

/// The summary's line on the sieve of an index (`pairs`, `dedup`): its
/// size, and the parts by first word the index pass went in, or why it was off.
pub fn index_sieve(first: &dupgram_pipeline::NgramStats) -> String {
    let s = &first.sieve;
    match (&s.dropped, s.used) {
        (Some(why), _) => format!("off: {why}"),
        (None, false) => "off".into(),
        (None, true) => {
            let halved = match s.halvings {
                0 => String::new(),
                h => format!(" (halved {h}× to make room)"),
            };
            let parts = match s.parts {
                0 | 1 => String::new(),
                p => format!(", filled and indexed in {p} parts by first word"),
            };
            format!(
                "{} ({} once filled){halved}, {:.1} % of unseen n-grams pass{parts}",
                dupgram_pipeline::human_bytes(s.bytes),
                dupgram_pipeline::human_bytes(s.frozen_bytes),
                100.0 * s.saturation
            )
        }
    }
}
