//! `dupgram dedup`: keep one instance of repeated documents, paragraphs or sentences.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dupgram_pipeline::attributes::AttributesFile;
use dupgram_pipeline::output::{OutputFile, check_encoder_budget};
use dupgram_pipeline::{
    Control, DedupConfig, DedupOutput, DedupStats, DupsInput, UnitKind, dedup_exact_to, dedup_spans_to, dedup_to,
    human_bytes,
};

use super::common::{InputArgs, ResourceArgs, TokenArgs, count_config, create_output, group, write_json};
use super::progress::ProgressView;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Whole documents.
    Doc,
    /// Paragraphs: <p> in vertical files, blank-line separated text elsewhere.
    P,
    /// Sentences: <s> in vertical files, ended by . ! ? elsewhere.
    S,
    /// Lines of the text (JSON Lines text field or plain text; --exact-only only, not vertical files).
    Line,
    /// Repeated passages of at least --min-span words, cut out word by word (the first copy kept).
    Span,
}

/// Keep the first instance of repeated text; mark or drop the rest (Onion's rule, exact).
///
/// The corpus is read in order. A unit is a duplicate when more than
/// --threshold of its tokens are covered by n-grams that occurred before, in
/// kept text or earlier in the same document; the first instance is kept.
/// Smoothing also marks short runs of kept units (at most --max-stub tokens)
/// between two boundaries, a boundary being a duplicate or an edge of the
/// document, as Onion 1.2 does: so a whole document of at most --max-stub
/// tokens goes even when nothing in it repeats (with --unit doc, every such
/// document); --no-smoothing or --max-stub 0 keeps short documents. The
/// threshold is compared as Onion compares it (a 32-bit float).
/// --exact adds Benko's test: a unit whose letters (digits and punctuation
/// ignored) equal an earlier unit's is a duplicate, however short.
///
/// --exact-only runs no n-gram test at all: a unit (doc, p, s or line) whose
/// normalised text — its tokens, as the token options make them, so case,
/// whitespace and punctuation do not count — equals an earlier unit's is a
/// duplicate; the first copy in corpus order is kept. Fingerprints are
/// verified against the text, so a hash collision never marks a unit.
///
/// --unit span cuts out repeated passages word-exactly: walking the corpus
/// in order, every token covered by a K-gram (K = --min-span words, default
/// 50) that occurred before — in kept text, or earlier in the same document —
/// is removed, so the first copy stays. A document then left with fewer than
/// --min-tokens tokens, or with more than --threshold of its tokens removed
/// (default 1: never), goes whole. Vertical: token lines marked 1/0;
/// JSON Lines: dup_spans in character offsets; --strip cuts the passages out,
/// joining the words around a cut with one space.
///
/// Output keeps the input format. Vertical: each line prefixed with 1<TAB>
/// (duplicate) or 0<TAB> (kept); with --strip duplicates are dropped, and a
/// document with nothing kept is dropped whole. JSON Lines: each record gains
/// dup_fraction and dup_spans (character offsets of duplicate units); with
/// --strip duplicate documents are dropped and duplicate spans cut. Text:
/// each line prefixed with its duplicate fraction and a TAB; with --strip,
/// duplicate text is cut. Parquet input is written as JSON Lines records of
/// its ID and text. A name ending in .parquet makes a Parquet table of the
/// same documents, whatever the input (not vertical): columns id, text,
/// dup_fraction and dup_spans (without --strip), or id, the kept text and
/// dup_fraction (with --strip).
///
/// --attributes FILE writes the decisions Dolma-style, beside documents that
/// stay as they are: one JSON line per document (JSON Lines or plain text
/// input), {"id", "attributes": {"dupgram_duplicate_spans": [[start, end,
/// score], ...], "dupgram_dup_fraction": [[0, length, share]]}}, offsets in
/// Unicode code points. The spans are the units --strip removes; cut out,
/// they leave the text --strip writes. Without -o, no documents are written.
///
/// Examples:
///   dupgram dedup corpus.vert --unit p -n 7 --threshold 0.9 -o corpus.dedup.vert
///   dupgram dedup corpus.jsonl.zst --unit doc -n 10 --threshold 0.5 --strip -o kept.jsonl.zst
///   dupgram dedup corpus.jsonl.gz --exact-only --unit line --strip -o kept.jsonl.gz
///   dupgram dedup corpus.jsonl.zst --unit span --min-span 50 --strip -o kept.jsonl.zst
///   dupgram dedup a.jsonl --unit span --hash-to a.kgrams --part 0
///   dupgram dedup b.jsonl --unit span --hash-to b.kgrams --part 1
///   dupgram dedup a.jsonl b.jsonl --unit span --hashed a.kgrams --hashed b.kgrams --strip -o kept.jsonl
///   dupgram dedup documents/part-0.jsonl --unit p --attributes attributes/dupgram/part-0.jsonl
///   dupgram dedup shard.parquet --unit doc --strip -o kept.parquet
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DedupArgs {
    /// The unit judged and removed.
    #[arg(long, value_enum, default_value_t = UnitArg::P, requires_if("line", "exact_only"))]
    unit: UnitArg,
    /// Words per n-gram (1 to 32).
    #[arg(short = 'n', long = "n", default_value_t = 7, value_name = "N")]
    n: usize,
    /// A unit with more than this share of covered tokens is a duplicate
    /// [default: 0.5; with --unit span, a document with more than this share
    /// removed goes whole, default 1: never].
    #[arg(long, value_name = "X")]
    threshold: Option<f64>,
    /// --unit span: words in the shortest repeated passage cut out (K).
    #[arg(long, default_value_t = 50, value_name = "K")]
    min_span: u32,
    /// --unit span: a document left with fewer tokens goes whole.
    #[arg(long, default_value_t = 0, value_name = "N")]
    min_tokens: u32,
    /// Do not mark short kept runs between duplicates and document edges.
    #[arg(long)]
    no_smoothing: bool,
    /// Longest run of kept units, in tokens, that smoothing marks (a whole
    /// document this short goes too, as in Onion 1.2).
    #[arg(long, default_value_t = 20, value_name = "N")]
    max_stub: u32,
    /// Also mark units whose letters repeat an earlier unit's exactly.
    #[arg(long)]
    exact: bool,
    /// Only exact repeats: drop units whose normalised text equals an earlier unit's (no n-gram test).
    #[arg(long, conflicts_with_all = ["exact", "n", "threshold", "no_smoothing", "max_stub", "dups", "stop_top"])]
    exact_only: bool,
    /// Drop duplicates instead of marking them.
    #[arg(long)]
    strip: bool,
    /// Write here (compressed when the name ends in .zst; a Parquet table when it ends in .parquet)
    /// [default: standard output, none with --attributes].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write Dolma-style attributes here: per document, the removed spans (character offsets) and the
    /// duplicate share (compressed when the name ends in .zst).
    #[arg(long, value_name = "FILE")]
    attributes: Option<PathBuf>,
    /// Use this duplicate list (from `dupgram ngrams`, same -n) instead of a lexicon pass.
    #[arg(long, value_name = "FILE", requires = "lexicon")]
    dups: Option<PathBuf>,
    /// The lexicon saved with --dups.
    #[arg(long, value_name = "FILE", requires = "dups")]
    lexicon: Option<PathBuf>,
    /// Write the summary, with the length tables, as JSON to this file (`dupgram stats --dedup` reads it).
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// --unit span, one part of a corpus hashed apart (e.g. one task of many): hash the inputs'
    /// K-grams into sorted runs in DIR, a new directory, for a later `dedup --hashed`; no documents
    /// are written.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "attributes", "strip"])]
    hash_to: Option<PathBuf>,
    /// With --hash-to: the part's place in the corpus (0, 1, …, in corpus order).
    #[arg(long, value_name = "I", default_value_t = 0, requires = "hash_to")]
    part: u64,
    /// --unit span: the K-grams of the inputs' parts, hashed by `dedup --hash-to` (repeat, one
    /// directory a part, in corpus order); the inputs are all the parts' documents, in that order.
    #[arg(long, value_name = "DIR", conflicts_with = "hash_to")]
    hashed: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    tokens: TokenArgs,
    #[command(flatten)]
    resources: ResourceArgs,
}

pub fn run(args: DedupArgs, control: &Control) -> anyhow::Result<()> {
    let span = args.unit == UnitArg::Span;
    if span && args.exact_only {
        anyhow::bail!("--unit span and --exact-only do not go together");
    }
    if !span && (args.min_span != 50 || args.min_tokens != 0) {
        anyhow::bail!("--min-span and --min-tokens apply to --unit span only");
    }
    let base = count_config(&args.input, &args.tokens, &args.resources, args.n)?;
    let config = DedupConfig {
        dups: args.dups.clone().zip(args.lexicon.clone()).map(|(dups, lexicon)| DupsInput { dups, lexicon }),
        unit: match args.unit {
            UnitArg::Doc => UnitKind::Document,
            UnitArg::P => UnitKind::Paragraph,
            UnitArg::S => UnitKind::Sentence,
            UnitArg::Line => UnitKind::Line,
            UnitArg::Span => UnitKind::Document,
        },
        threshold: args.threshold.unwrap_or(if span { 1.0 } else { 0.5 }),
        min_span: args.min_span,
        min_tokens: args.min_tokens,
        smoothing: !args.no_smoothing,
        max_stub: args.max_stub,
        exact: args.exact,
        strip: args.strip,
        hash_to: args.hash_to.clone(),
        part: args.part,
        hashed: args.hashed.clone(),
        ..DedupConfig::new(base)
    };
    // Both files are opened before any work, so a bad path fails at once.
    let mut documents = match (&args.output, &args.attributes) {
        _ if args.hash_to.is_some() => None,
        (None, Some(_)) => None,
        (output, _) => Some(create_output(output.as_deref(), args.resources.memory)?),
    };
    let mut attributes = args.attributes.as_deref().map(AttributesFile::create).transpose()?;
    let encoders = [
        documents.as_ref().map_or(0, OutputFile::encoder_bytes),
        attributes.as_ref().map_or(0, AttributesFile::encoder_bytes),
    ];
    check_encoder_budget(args.resources.memory, &encoders)?;
    let stats = {
        let _progress = ProgressView::start(control, args.resources.quiet);
        let out = DedupOutput { documents: documents.as_mut(), attributes: attributes.as_mut() };
        if span {
            dedup_spans_to(&config, control, out)?
        } else if args.exact_only {
            dedup_exact_to(&config, control, out)?
        } else {
            dedup_to(&config, control, out)?
        }
    };
    if let Some(documents) = documents {
        documents.finish()?;
    }
    if let Some(attributes) = attributes {
        attributes.finish()?;
    }
    if let Some(path) = &args.stats_json {
        write_json(path, &stats)?;
    }
    if !args.resources.quiet {
        match &args.hash_to {
            Some(dir) => eprint!("{}", hashed_summary(&stats, args.part, dir)),
            None => eprint!("{}", summary(&stats)),
        }
    }
    Ok(())
}

/// What `--hash-to` did: a part hashed, nothing judged yet.
fn hashed_summary(s: &DedupStats, part: u64, dir: &std::path::Path) -> String {
    format!(
        "  {:<24}{} documents, {} tokens, K = {}\n  {:<24}{} of K-gram runs in {}\n  {:<24}{} of {}\n  {:<24}{:.2} s\n",
        format!("hashed part {part}"),
        group(s.index.documents),
        group(s.index.tokens),
        s.min_span,
        "written",
        human_bytes(s.index.bytes_spilled),
        dir.display(),
        "peak memory",
        human_bytes(s.peak_rss),
        human_bytes(s.memory_budget),
        "time",
        s.seconds.total
    )
}

fn summary(s: &DedupStats) -> String {
    let pct = |a: u64, b: u64| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line("documents", format!("{} ({} with nothing kept)", group(s.index.documents), group(s.documents_removed)));
    if s.unit == "span" {
        line(
            &format!("passages ({}+ words)", s.min_span),
            format!(
                "{} cut, {} tokens; {} documents removed whole",
                group(s.spans_removed),
                group(s.tokens_in_spans),
                group(s.documents_whole)
            ),
        );
        let parts =
            if s.kgram_parts > 1 { format!(" (in {} parts by fingerprint)", s.kgram_parts) } else { String::new() };
        line(
            "K-grams proven unique",
            format!("{} by the sieve{parts}, never hashed or sorted", group(s.kgrams_sieved_out)),
        );
    }
    let how = if s.unit == "span" {
        "documents with nothing kept".to_owned()
    } else if s.exact_only {
        "exact repeats of normalised text".to_owned()
    } else {
        format!(
            "{} by n-grams, {} exact, {} smoothed",
            group(s.units_duplicate),
            group(s.units_exact),
            group(s.units_smoothed)
        )
    };
    line(
        &format!("units ({})", s.unit),
        format!(
            "{} removed of {} ({:.1} %): {how}",
            group(s.units_removed),
            group(s.units),
            pct(s.units_removed, s.units)
        ),
    );
    line(
        "tokens removed",
        format!(
            "{} of {} ({:.1} %)",
            group(s.tokens_removed),
            group(s.index.tokens),
            pct(s.tokens_removed, s.index.tokens)
        ),
    );
    if s.exact_only {
        line(
            "verified",
            format!(
                "{} groups of equal fingerprints, in {} pass{}; {} fingerprint collisions",
                group(s.exact_groups),
                s.verify_passes,
                if s.verify_passes == 1 { "" } else { "es" },
                group(s.fingerprint_collisions)
            ),
        );
    } else {
        let by_document =
            if s.index_by_document { ", sorted by document on disk (too many documents for tables)" } else { "" };
        line(
            if s.unit == "span" { "repeated K-grams" } else { "duplicate index" },
            format!(
                "{} {}-grams, {} occurrences{by_document}",
                group(s.index.duplicate_ngrams),
                s.n,
                group(s.index.duplicate_occurrences)
            ),
        );
    }
    if let Some(first) = &s.index.first_pass {
        line("sieve", super::common::index_sieve(first));
    }
    line("bytes spilled", human_bytes(s.index.bytes_spilled));
    line("peak memory", format!("{} of {}", human_bytes(s.peak_rss), human_bytes(s.memory_budget)));
    let t = &s.seconds;
    let phases = if s.unit == "span" {
        format!("sieve {:.2}, hashing and sorting K-grams {:.2}, cutting {:.2}", t.sieve, t.index, t.decisions)
    } else if s.exact_only {
        format!("fingerprints and verification {:.2}, output {:.2}", t.exact, t.decisions)
    } else {
        format!("index {:.2}, exact {:.2}, decisions {:.2}", t.index, t.exact, t.decisions)
    };
    line(
        "time",
        format!("{:.2} s ({:.2} M tokens/s; {phases})", t.total, s.index.tokens as f64 / t.total.max(1e-9) / 1e6),
    );
    for w in s.warnings.iter().chain(s.index.first_pass.iter().flat_map(|c| c.warnings.iter())) {
        out.push_str(&format!("  warning: {w}\n"));
    }
    out
}
