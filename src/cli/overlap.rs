//! `dupgram overlap`: how much of each query document occurs in a reference corpus.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dupgram_pipeline::output::{OutputFile, check_encoder_budget};
use dupgram_pipeline::{Control, OverlapConfig, OverlapFormat, OverlapOutput, OverlapStats, human_bytes, overlap};

use super::common::{ReadArgs, ResourceArgs, TokenArgs, corpus_config, create_output, group, write_json};
use super::progress::ProgressView;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RowFormatArg {
    Tsv,
    Jsonl,
}

/// Measure each query document against a reference corpus: which of its n-grams occur there, and how much of it they cover.
///
/// Query and reference are indexed together, exactly (no hash, no sketch,
/// no false positive), within --memory (their document tables must fit it:
/// about 30 bytes a document; IDs stay on disk). One row per
/// query document, in corpus order (TSV with a header; JSON Lines when the
/// name ends in .jsonl; a Parquet table when it ends in .parquet):
///   id  tokens  ngrams  ngrams_found  covered_tokens  coverage
/// ngrams_found: the document's n-gram positions whose n-gram occurs
/// anywhere in the reference; covered_tokens: its tokens inside at least
/// one of them; coverage = covered_tokens / tokens.
///
/// --top K adds the K reference documents that cover most of it, each with
/// the query tokens it covers (ref_1 covered_1 … ref_K covered_K; JSON Lines:
/// "top": [{"id", "covered_tokens"}]), most first, then in corpus order.
/// --spans adds the covered token ranges, [start, end), and the same ranges
/// in characters of the text (JSON Lines, Parquet and text input; TSV:
/// start-end pairs separated by spaces).
///
/// --mark-reference FILE lists the reference documents that hold any n-gram
/// of the query (id, ngrams_found: how many of their n-gram positions; TSV);
/// --drop-reference FILE writes the reference without them, in its own
/// format, each document it keeps as it was read.
///
/// Benchmark decontamination (GPT-3's setting): -n 13 over words;
/// derived-text detection: -n 3 and the coverage column.
///
/// Examples:
///   dupgram overlap test-set.jsonl --reference train/*.jsonl.zst -n 13 \
///       --mark-reference contaminated.tsv --drop-reference clean.jsonl.zst -o test-overlap.tsv
///   dupgram overlap articles.jsonl --reference agency.jsonl -n 3 --top 3 --spans -o coverage.jsonl
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct OverlapArgs {
    /// Query files (plain, .gz or .zst, or Parquet); `-` reads standard input (not Parquet).
    #[arg(required = true, value_name = "QUERY", help_heading = "Input")]
    queries: Vec<PathBuf>,
    /// Reference files, read like the query's (repeatable, or several after one flag).
    #[arg(long, required = true, num_args = 1.., value_name = "REF", help_heading = "Input")]
    reference: Vec<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// Words per n-gram (1 to 32).
    #[arg(short = 'n', long = "n", default_value_t = 13, value_name = "N")]
    n: usize,
    /// Also list the K reference documents that cover each query document most.
    #[arg(long, default_value_t = 0, value_name = "K")]
    top: usize,
    /// Also give each query document's covered ranges, in tokens and in characters.
    #[arg(long)]
    spans: bool,
    /// Write the rows here (compressed when the name ends in .zst) [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Rows as tsv or jsonl [default: jsonl when the output name ends in .jsonl, else tsv].
    #[arg(long, value_enum, value_name = "FORMAT")]
    output_format: Option<RowFormatArg>,
    /// Write the reference documents holding any query n-gram here: id, ngrams_found (TSV).
    #[arg(long, value_name = "FILE")]
    mark_reference: Option<PathBuf>,
    /// Write the reference without those documents here, in its own format.
    #[arg(long, value_name = "FILE")]
    drop_reference: Option<PathBuf>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    #[command(flatten)]
    tokens: TokenArgs,
    #[command(flatten)]
    resources: ResourceArgs,
}

pub fn run(args: OverlapArgs, control: &Control) -> anyhow::Result<()> {
    let paths: Vec<PathBuf> = args.queries.iter().chain(&args.reference).cloned().collect();
    let base = corpus_config(&paths, &args.read, &args.tokens, &args.resources, args.n)?;
    let config = OverlapConfig { base, query_inputs: args.queries.len(), top: args.top, spans: args.spans };
    let format = match args.output_format {
        Some(RowFormatArg::Jsonl) => OverlapFormat::Jsonl,
        Some(RowFormatArg::Tsv) => OverlapFormat::Tsv,
        None if args.output.as_ref().is_some_and(|o| o.to_string_lossy().contains(".jsonl")) => OverlapFormat::Jsonl,
        None => OverlapFormat::Tsv,
    };
    // Every file is opened before any work, so a bad path fails at once.
    let memory = args.resources.memory;
    let mut rows = create_output(args.output.as_deref(), memory)?;
    let mut marks = args.mark_reference.as_deref().map(|p| create_output(Some(p), memory)).transpose()?;
    let mut kept = args.drop_reference.as_deref().map(|p| create_output(Some(p), memory)).transpose()?;
    let encoders = [Some(&rows), marks.as_ref(), kept.as_ref()].map(|o| o.map_or(0, OutputFile::encoder_bytes));
    check_encoder_budget(memory, &encoders)?;
    let stats = {
        let _progress = ProgressView::start(control, args.resources.quiet);
        let out = OverlapOutput { queries: &mut rows, format, marks: marks.as_mut(), kept_reference: kept.as_mut() };
        overlap(&config, control, out)?
    };
    rows.finish()?;
    if let Some(marks) = marks {
        marks.finish()?;
    }
    if let Some(kept) = kept {
        kept.finish()?;
    }
    if let Some(path) = &args.stats_json {
        write_json(path, &stats)?;
    }
    if !args.resources.quiet {
        eprint!("{}", summary(&stats));
    }
    Ok(())
}

fn summary(s: &OverlapStats) -> String {
    let pct = |a: u64, b: u64| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line(
        "query",
        format!(
            "{} documents, {} tokens; {} documents with a {}-gram found ({:.1} %)",
            group(s.query_documents),
            group(s.query_tokens),
            group(s.query_documents_found),
            s.n,
            pct(s.query_documents_found, s.query_documents)
        ),
    );
    line(
        "found",
        format!(
            "{} of {} n-gram positions; {} tokens covered ({:.1} %)",
            group(s.ngrams_found),
            group(s.query_ngrams),
            group(s.covered_tokens),
            pct(s.covered_tokens, s.query_tokens)
        ),
    );
    line(
        "reference",
        format!(
            "{} documents, {} tokens; {} hold a query n-gram ({:.2} %)",
            group(s.reference_documents),
            group(s.reference_tokens),
            group(s.reference_documents_found),
            pct(s.reference_documents_found, s.reference_documents)
        ),
    );
    if let Some(kept) = s.reference_documents_kept {
        line("reference kept", format!("{} documents written", group(kept)));
    }
    line("shared n-grams", format!("{} distinct", group(s.shared_ngrams)));
    if let Some(first) = &s.index.first_pass {
        line("sieve", super::common::index_sieve(first));
    }
    line("bytes spilled", human_bytes(s.index.bytes_spilled));
    line("peak memory", format!("{} of {}", human_bytes(s.peak_rss), human_bytes(s.memory_budget)));
    let t = &s.seconds;
    let tokens = s.query_tokens + s.reference_tokens;
    line(
        "time",
        format!(
            "{:.2} s ({:.2} M tokens/s; index {:.2}, shared n-grams {:.2}, query rows {:.2}, reference {:.2})",
            t.total,
            tokens as f64 / t.total.max(1e-9) / 1e6,
            t.index,
            t.shared,
            t.queries,
            t.reference
        ),
    );
    for w in s.index.first_pass.iter().flat_map(|c| c.warnings.iter()) {
        out.push_str(&format!("  warning: {w}\n"));
    }
    out
}
