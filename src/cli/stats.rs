//! `dupgram stats`: what a corpus repeats, as tables and an HTML report.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use dupgram_pipeline::output::{OutputFile, check_encoder_budget};
use dupgram_pipeline::table::{Column, Rows};
use dupgram_pipeline::{Control, LengthTable, count_ngrams_each};
use dupgram_report::{LengthReport, NgramRow};

use super::common::{ReadArgs, ResourceArgs, TokenArgs, corpus_config, create_output};
use super::progress::ProgressView;

/// Tables of what a corpus repeats: duplicate n-grams for a range of n, and what deduplication removed.
///
/// For each n (--n): n-grams, distinct, unique (seen once), duplicate types
/// and duplicate occurrences — Pomikálek & Rychlý's Table 1 — counted out of
/// core like `dupgram ngrams`. Three n or more (and standard input) share
/// one reading of the corpus: its words and word IDs are the same for every
/// n. With --dedup, Benko's length tables from the
/// summary of a `dupgram dedup --stats-json` run: units and tokens removed and
/// kept, by unit length in powers of two. Written as TSV (-o, or standard
/// output) and, with --html, as a self-contained page with charts.
///
/// Examples:
///   dupgram stats corpus.jsonl.zst --n 1..10 -o ngrams.tsv --html report.html
///   dupgram dedup corpus.vert --stats-json dedup.json -o clean.vert
///   dupgram stats --dedup dedup.json --html lengths.html
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct StatsArgs {
    /// Corpus files (plain, .gz or .zst); `-` reads standard input. Optional with --dedup.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// The n to count: one (5), a range (1..10) or a list (2,5,10).
    #[arg(long = "n", default_value = "1..10", value_name = "RANGE", value_parser = parse_range)]
    n: NRange,
    /// A `dupgram dedup --stats-json` summary whose length tables to report (repeatable).
    #[arg(long, value_name = "FILE")]
    dedup: Vec<PathBuf>,
    /// Write the tables as TSV here; a name ending in .parquet makes a Parquet table of the n-gram counts (n, ngrams, distinct, unique, duplicate_types, duplicate_occurrences) [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write an HTML report with charts here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    tokens: TokenArgs,
    #[command(flatten)]
    resources: ResourceArgs,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NRange(Vec<usize>);

fn parse_range(text: &str) -> Result<NRange, String> {
    let bad = || format!("'{text}' is not an n, a range like 1..10 or a list like 2,5,10");
    let mut ns = Vec::new();
    for part in text.split(',') {
        match part.split_once("..") {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                ns.extend(a..=b);
            }
            None => ns.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    if ns.is_empty() || ns.iter().any(|&n| n == 0 || n > 32) {
        return Err(format!("'{text}': every n must be between 1 and 32"));
    }
    ns.sort_unstable();
    ns.dedup();
    Ok(NRange(ns))
}

pub fn run(args: StatsArgs, control: &Control) -> anyhow::Result<()> {
    anyhow::ensure!(!args.inputs.is_empty() || !args.dedup.is_empty(), "give a corpus, or --dedup summaries, or both");
    let lengths = args.dedup.iter().map(|p| read_lengths(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut out = create_output(args.output.as_deref(), args.resources.memory)?;
    anyhow::ensure!(
        !out.is_parquet() || args.dedup.is_empty(),
        "--dedup length tables are written as TSV, not Parquet; give -o a .tsv name"
    );
    let html = args.html.as_deref().map(|p| OutputFile::create(Some(p))).transpose()?;
    let encoders = [out.encoder_bytes(), html.as_ref().map_or(0, OutputFile::encoder_bytes)];
    check_encoder_budget(args.resources.memory, &encoders)?;
    let mut rows = Vec::new();
    if !args.inputs.is_empty() {
        let config = corpus_config(&args.inputs, &args.read, &args.tokens, &args.resources, 1)?;
        let _progress = ProgressView::start(control, args.resources.quiet);
        let quiet = args.resources.quiet;
        count_ngrams_each(&config, &args.n.0, control, &mut |s| {
            if !quiet {
                eprintln!(
                    "  n = {:<2} {} n-grams, {} duplicate types ({:.2} s)",
                    s.n, s.ngrams, s.duplicate_types, s.seconds.total
                );
            }
            rows.push(NgramRow {
                n: s.n,
                ngrams: s.ngrams,
                distinct: s.distinct_ngrams,
                unique: s.distinct_ngrams - s.duplicate_types,
                duplicate_types: s.duplicate_types,
                duplicate_occurrences: s.duplicate_occurrences,
            });
            Ok(())
        })?;
    }
    if out.is_parquet() {
        write_ngram_table(&mut out, &rows)?;
    } else {
        out.write_all(dupgram_report::tsv(&rows, &lengths).as_bytes())?;
    }
    out.finish()?;
    if let Some(mut page) = html {
        let title = if args.inputs.is_empty() {
            "What deduplication removed".to_string()
        } else {
            format!(
                "What {} repeats",
                args.inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        };
        page.write_all(dupgram_report::html(&title, &rows, &lengths).as_bytes())?;
        page.finish()?;
    }
    Ok(())
}

/// The n-gram counts as a Parquet table, one row per n.
fn write_ngram_table(out: &mut OutputFile, rows: &[NgramRow]) -> anyhow::Result<()> {
    const NAMES: [&str; 6] = ["n", "ngrams", "distinct", "unique", "duplicate_types", "duplicate_occurrences"];
    let mut table = Rows::new(&NAMES, NAMES.iter().map(|_| Column::count()).collect());
    out.begin_table(table.schema())?;
    for r in rows {
        let values = [r.n as u64, r.ngrams, r.distinct, r.unique, r.duplicate_types, r.duplicate_occurrences];
        for (column, v) in table.columns.iter_mut().zip(values) {
            if let Column::Count(c) = column {
                c.append_value(v);
            }
        }
        table.added(0);
    }
    out.write_rows(&mut table)?;
    Ok(())
}

/// The length table in a `dupgram dedup --stats-json` summary.
fn read_lengths(path: &std::path::Path) -> anyhow::Result<LengthReport> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let table: LengthTable = serde_json::from_value(value.get("lengths").cloned().unwrap_or_default())
        .with_context(|| format!("{}: no length table (is it the --stats-json of `dupgram dedup`?)", path.display()))?;
    let unit = value.get("unit").and_then(|u| u.as_str()).unwrap_or("?").to_string();
    Ok(LengthReport { name: path.display().to_string(), unit, table })
}
