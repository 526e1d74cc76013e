//! `dupgram pairs`: document pairs that share text, scored exactly.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dupgram_cluster::PairsOutputs;
use dupgram_pipeline::output::{PairFiles, PairFormat};
use dupgram_pipeline::{Control, DupsInput, NgramConfig, PairsConfig, PairsStats, find_pairs, human_bytes};

use super::common::{InputArgs, ResourceArgs, TokenArgs, count_config, create_output, group, write_json};
use super::progress::ProgressView;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairFormatArg {
    Tsv,
    Jsonl,
}

/// Find every pair of documents that shares an n-gram and score it exactly.
///
/// For each pair: SSCR (tokens of both covered by their shared n-grams, over
/// all their tokens; Kupietz 2005), SSR (Jaccard of their n-gram sets), the
/// containment of each in the other, each one's coverage, and the number of
/// shared n-grams. Identical documents are grouped first; a group yields at
/// most --max-group-pairs pairs, and all its members appear in --clusters.
///
/// By default only a group's first document is paired with other documents:
/// a copy's pairs are left out (look its group up in --clusters), and so are
/// the pairs of copies with each other beyond the first's. --expand-groups
/// lists them all: every copy gets its first document's pairs, with the same
/// scores, and every pair within a group is listed with score 1.
///
/// Output (TSV, a header line first):
///   a  b  sscr  ssr  contain_a_in_b  contain_b_in_a  cover_a  cover_b  shared
///
/// Examples:
///   dupgram pairs corpus.jsonl.zst -n 5 --min-sscr 0.5 -o pairs.tsv --clusters clusters.tsv
///   dupgram pairs corpus.jsonl.zst -n 10 --dups dups.tsv --lexicon dups.tsv.lex --min-cover 0.8
#[derive(Debug, Clone, Args)]
#[command(verbatim_doc_comment)]
pub struct PairsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Words per n-gram (1 to 32).
    #[arg(short = 'n', long = "n", default_value_t = 5, value_name = "N")]
    n: usize,
    /// Write the pairs here (compressed when the name ends in .zst; a Parquet table of typed columns when it ends in .parquet) [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Pairs as tsv or jsonl [default: jsonl when the output name ends in .jsonl, else tsv].
    #[arg(long, value_enum, value_name = "FORMAT")]
    output_format: Option<PairFormatArg>,
    /// Write clusters (connected components of the kept pairs): size, then member IDs, TAB-separated (a Parquet table of size, members when the name ends in .parquet).
    #[arg(long, value_name = "FILE")]
    clusters: Option<PathBuf>,
    /// Keep pairs with at least this SSCR.
    #[arg(long, default_value_t = 0.0, value_name = "X")]
    min_sscr: f64,
    /// Keep pairs with at least this SSR (Jaccard).
    #[arg(long, default_value_t = 0.0, value_name = "X")]
    min_ssr: f64,
    /// Keep pairs where either document is at least this covered by shared n-grams.
    #[arg(long, default_value_t = 0.0, value_name = "X")]
    min_cover: f64,
    /// N-grams in more documents than this (boilerplate) make no candidates; they still count in scores.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    max_df: u64,
    /// Pairs reported per group of identical documents; with --expand-groups, a group of more
    /// than N + 1 documents is not expanded (it is named in the summary).
    #[arg(long, default_value_t = 100, value_name = "N")]
    max_group_pairs: u64,
    /// List every pair: each copy of a document gets its group's first document's pairs (same
    /// scores), and every pair within a group is listed with score 1. Without it, copies are
    /// paired only through their group's first document.
    #[arg(long)]
    expand_groups: bool,
    /// Use this duplicate list (from `dupgram ngrams`) instead of counting again.
    #[arg(long, value_name = "FILE", requires = "lexicon")]
    dups: Option<PathBuf>,
    /// The lexicon saved with --dups.
    #[arg(long, value_name = "FILE", requires = "dups")]
    lexicon: Option<PathBuf>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    #[command(flatten)]
    tokens: TokenArgs,
    #[command(flatten)]
    resources: ResourceArgs,
}

impl PairsArgs {
    /// The count of duplicate n-grams this job starts from.
    pub(super) fn count_config(&self) -> anyhow::Result<NgramConfig> {
        count_config(&self.input, &self.tokens, &self.resources, self.n)
    }

    pub(super) fn inputs(&self) -> &[PathBuf] {
        &self.input.inputs
    }

    pub(super) fn quiet(&self) -> bool {
        self.resources.quiet
    }

    pub(super) fn threads_given(&self) -> bool {
        self.resources.threads.is_some()
    }

    /// Whether the job already starts from a saved duplicate list.
    pub(super) fn has_dups(&self) -> bool {
        self.dups.is_some()
    }

    /// The job's options over the count configuration `base`.
    pub(super) fn config(&self, base: NgramConfig) -> PairsConfig {
        PairsConfig {
            dups: self.dups.clone().zip(self.lexicon.clone()).map(|(dups, lexicon)| DupsInput { dups, lexicon }),
            min_sscr: self.min_sscr,
            min_ssr: self.min_ssr,
            min_cover: self.min_cover,
            max_df: self.max_df,
            max_group_pairs: self.max_group_pairs,
            expand_groups: self.expand_groups,
            ..PairsConfig::new(base)
        }
    }

    /// Where the pairs and clusters go, and how the pairs are written.
    pub(super) fn outputs(&self, base: NgramConfig) -> PairsOutputs {
        let format = match self.output_format {
            Some(PairFormatArg::Jsonl) => PairFormat::Jsonl,
            Some(PairFormatArg::Tsv) => PairFormat::Tsv,
            None if self.output.as_ref().is_some_and(|o| o.to_string_lossy().contains(".jsonl")) => PairFormat::Jsonl,
            None => PairFormat::Tsv,
        };
        PairsOutputs { config: self.config(base), output: self.output.clone(), format, clusters: self.clusters.clone() }
    }

    /// The summary on standard error (unless --quiet) and in --stats-json.
    pub(super) fn report(&self, stats: &PairsStats) -> anyhow::Result<()> {
        if let Some(path) = &self.stats_json {
            write_json(path, stats)?;
        }
        if !self.resources.quiet {
            eprint!("{}", summary(stats));
        }
        Ok(())
    }
}

pub fn run(args: PairsArgs, control: &Control) -> anyhow::Result<()> {
    let PairsOutputs { config, output, format, clusters } = args.outputs(args.count_config()?);
    // Open outputs before any work, so a bad path fails at once.
    let memory = args.resources.memory;
    let clusters = clusters.as_deref().map(|p| create_output(Some(p), memory)).transpose()?;
    let mut files = PairFiles::new(create_output(output.as_deref(), memory)?, format, clusters)?;
    let stats = {
        let _progress = ProgressView::start(control, args.resources.quiet);
        find_pairs(&config, control, &mut files)?
    };
    files.finish()?;
    args.report(&stats)
}

fn summary(s: &PairsStats) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line("documents", format!("{} ({} tokens)", group(s.index.documents), group(s.index.tokens)));
    line(
        "duplicate index",
        format!(
            "{} {}-grams, {} occurrences ({:.1} % of a full index)",
            group(s.index.duplicate_ngrams),
            s.n,
            group(s.index.duplicate_occurrences),
            100.0 * s.index.index_fraction
        ),
    );
    line("identical documents", format!("{} groups, {} documents", group(s.exact_groups), group(s.grouped_documents)));
    line("boilerplate n-grams", format!("{} (in more than --max-df documents)", group(s.boilerplate_ngrams)));
    line(
        "candidate pairs",
        format!(
            "{} ({} pruned by bounds, {} scored)",
            group(s.candidate_pairs),
            group(s.pruned_pairs),
            group(s.scored_pairs)
        ),
    );
    line("pairs kept", format!("{} (+ {} of identical documents)", group(s.kept_pairs), group(s.group_pairs)));
    if s.expanded_pairs > 0 {
        line("pairs of copies", format!("{} added by --expand-groups", group(s.expanded_pairs)));
    }
    if s.capped_groups > 0 {
        let more = s.capped_groups.saturating_sub(s.capped_named.len() as u64);
        let rest = if more > 0 { format!(", and {} more", group(more)) } else { String::new() };
        line(
            "capped groups",
            format!(
                "{} over --max-group-pairs, not expanded: {}{rest}",
                group(s.capped_groups),
                s.capped_named.join(", ")
            ),
        );
    }
    line("clusters", format!("{} ({} documents)", group(s.clusters), group(s.clustered_documents)));
    if s.index_blocks > 1 {
        line("index blocks", group(s.index_blocks));
    }
    line("bytes spilled", human_bytes(s.index.bytes_spilled));
    line("peak memory", format!("{} of {}", human_bytes(s.peak_rss), human_bytes(s.memory_budget)));
    let t = &s.seconds;
    line(
        "time",
        format!(
            "{:.2} s (index {:.2}, candidates {:.2}, scoring {:.2}, output {:.2})",
            t.total, t.index, t.candidates, t.scoring, t.output
        ),
    );
    for w in s.warnings.iter().chain(s.index.first_pass.iter().flat_map(|c| c.warnings.iter())) {
        out.push_str(&format!("  warning: {w}\n"));
    }
    out
}
