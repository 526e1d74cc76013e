//! `dupgram ngrams`: every duplicated n-gram with its count.

use std::path::PathBuf;

use clap::Args;
use dupgram_pipeline::output::{DupTsvWriter, check_encoder_budget, persist};
use dupgram_pipeline::{Control, NgramConfig, NgramStats, count_ngrams, human_bytes};

use super::common::{InputArgs, ResourceArgs, TokenArgs, count_config, create_output, group, write_json};
use super::progress::ProgressView;

/// List every word n-gram occurring at least twice, with its exact count.
///
/// Output: one line per n-gram, its words separated by single spaces, a TAB,
/// the count; sorted by word IDs (the most frequent words first). N-grams
/// never cross a document boundary.
///
/// Examples:
///   dupgram ngrams corpus.jsonl.zst -n 10 --memory 1G -o dups.tsv
///   zcat web.txt.gz | dupgram ngrams - -n 8 --stop-top 600 -o dups.tsv.zst
#[derive(Debug, Clone, Args)]
#[command(verbatim_doc_comment)]
pub struct NgramsArgs {
    /// Words per n-gram (1 to 32).
    #[arg(short = 'n', long = "n", default_value_t = 10, value_name = "N")]
    n: usize,
    /// Write the n-grams here (compressed when the name ends in .zst; a Parquet table of ngram, count when it ends in .parquet) [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
    /// Report n-grams seen at least this many times.
    #[arg(long, default_value_t = 2, value_name = "N")]
    min_count: u64,
    /// Save the lexicon (word IDs and counts) here, for `pairs --dups` or a later stage.
    #[arg(long, value_name = "FILE")]
    lexicon: Option<PathBuf>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Sort every n-gram instead of first proving most of them unique (same output; more time, and
    /// more parts to keep the runs within --tmp-share).
    #[arg(long)]
    no_sieve: bool,
    /// Temporary disk the count may use, as a share of the text read. More room means fewer parts,
    /// and lets a corpus that would refill a sieve for many parts prove its repeats once from print
    /// runs instead (same output).
    #[arg(long, default_value_t = dupgram_pipeline::DEFAULT_TMP_SHARE, value_name = "SHARE")]
    tmp_share: f64,
    #[command(flatten)]
    pub(super) input: InputArgs,
    #[command(flatten)]
    tokens: TokenArgs,
    #[command(flatten)]
    pub(super) resources: ResourceArgs,
}

/// The job `args` ask for, and where its lexicon is saved.
pub(super) fn config(args: &NgramsArgs) -> anyhow::Result<(NgramConfig, Option<PathBuf>)> {
    // Saved only when asked for.
    let lexicon_path = args.lexicon.clone();
    let config = NgramConfig {
        min_count: args.min_count,
        sieve: !args.no_sieve,
        tmp_share: args.tmp_share,
        lexicon_dir: lexicon_path.as_ref().map(|p| {
            p.parent().filter(|d| !d.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), |d| d.to_owned())
        }),
        ..count_config(&args.input, &args.tokens, &args.resources, args.n)?
    };
    Ok((config, lexicon_path))
}

pub fn run(args: NgramsArgs, control: &Control) -> anyhow::Result<()> {
    let (config, lexicon_path) = config(&args)?;
    // Open outputs before any work, so a bad path fails at once.
    let out = create_output(args.output.as_deref(), args.resources.memory)?;
    check_encoder_budget(args.resources.memory, &[out.encoder_bytes()])?;
    let mut writer = DupTsvWriter::create(out)?;
    let outcome = {
        let _progress = ProgressView::start(control, args.resources.quiet);
        count_ngrams(&config, control, &mut |lexicon, ids, count| writer.write(lexicon, ids, count))?
    };
    writer.finish()?;
    if let (Some(file), Some(path)) = (outcome.lexicon_file, &lexicon_path) {
        persist(file, path)?;
    }
    report(&args, &outcome.stats, lexicon_path.as_deref())
}

/// Writes `--stats-json` and prints the summary.
pub(super) fn report(args: &NgramsArgs, stats: &NgramStats, lexicon: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(path) = &args.stats_json {
        write_json(path, stats)?;
    }
    if !args.resources.quiet {
        eprint!("{}", summary(stats));
        if let Some(p) = lexicon {
            eprintln!("  lexicon saved to {}", p.display());
        }
    }
    Ok(())
}

fn summary(s: &NgramStats) -> String {
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line("documents", group(s.documents));
    line(
        "tokens",
        format!("{} ({} distinct words, {} repeated)", group(s.tokens), group(s.vocabulary), group(s.repeated_words)),
    );
    if s.overflow_words > 0 {
        line(
            "vocabulary",
            format!(
                "{} words past the lexicon's room ({} tokens, {} slots of its epochs), counted and numbered on disk",
                group(s.overflow_words),
                group(s.overflow_tokens),
                group(s.overflow_slots)
            ),
        );
    }
    line(&format!("{}-grams", s.n), format!("{} ({} distinct)", group(s.ngrams), group(s.distinct_ngrams)));
    line(
        "duplicate n-grams",
        format!(
            "{} types, {} occurrences ({:.1} % of all)",
            group(s.duplicate_types),
            group(s.duplicate_occurrences),
            100.0 * ratio(s.duplicate_occurrences, s.ngrams)
        ),
    );
    if s.min_count > 2 {
        line(&format!("with count ≥ {}", s.min_count), group(s.output_ngrams));
    }
    let sieve = match (&s.sieve.dropped, s.sieve.used) {
        (Some(why), _) => format!("off: {why}"),
        (None, true) if s.sieve.repeat_prints > 0 => format!(
            "{} repeat prints proven once ({} of print runs), marked in {} let {} n-grams through ({:.1} %), counted in {} part{} by first word",
            group(s.sieve.repeat_prints),
            human_bytes(s.sieve.print_bytes),
            human_bytes(s.sieve.bytes),
            group(s.sorted_ngrams),
            100.0 * ratio(s.sorted_ngrams, s.ngrams),
            s.sieve.parts,
            if s.sieve.parts == 1 { "" } else { "s" }
        ),
        (None, true) => format!(
            "{} ({} once filled){} let {} n-grams through ({:.1} %){}",
            human_bytes(s.sieve.bytes),
            human_bytes(s.sieve.frozen_bytes),
            match s.sieve.halvings {
                0 => String::new(),
                h => format!(" (halved {h}× to make room)"),
            },
            group(s.sorted_ngrams),
            100.0 * ratio(s.sorted_ngrams, s.ngrams),
            match s.sieve.parts {
                0 | 1 => String::new(),
                p => format!(", filled and counted in {p} parts by first word"),
            }
        ),
        (None, false) => "off".into(),
    };
    line("sieve", sieve);
    line(
        "runs written",
        format!(
            "{} ({}; {} n-grams per chunk)",
            group(s.runs_written),
            human_bytes(s.run_bytes),
            group(s.chunk_ngrams as u64)
        ),
    );
    line(
        "bytes spilled",
        format!("{} ({:.2} per input byte)", human_bytes(s.bytes_spilled), ratio(s.bytes_spilled, s.input_bytes)),
    );
    line(
        "merge",
        format!("{} pass(es), fan-in {}, {} intermediate merges", s.merge_passes, s.fan_in, s.intermediate_merges),
    );
    line("peak memory", format!("{} of {}", human_bytes(s.peak_rss), human_bytes(s.memory_budget)));
    let t = &s.seconds;
    line(
        "time",
        format!(
            "{:.2} s ({:.2} M tokens/s; lexicon {:.2}, {}sieve {:.2}, count {:.2}, merge {:.2})",
            t.total,
            s.tokens as f64 / t.total.max(1e-9) / 1e6,
            t.lexicon,
            if t.renumber > 0.0 { format!("renumber {:.2}, ", t.renumber) } else { String::new() },
            t.sieve,
            t.count,
            t.merge
        ),
    );
    for w in &s.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    if s.long_tokens > 0 {
        out.push_str(&format!("  note: {} tokens longer than 1 KiB were cut and tagged with a hash\n", s.long_tokens));
    }
    out
}
