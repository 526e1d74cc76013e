//! `dupgram pairs`: document pairs that share text, scored exactly.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dupgram_cluster::PairsOutputs;
use dupgram_pipeline::output::{PairFiles, PairFormat, PairsSink, check_encoder_budget};
use dupgram_pipeline::{
    Control, DupsInput, NgramConfig, PairsConfig, PairsStats, SpotConfig, SpotParams, SpotStats, find_pairs,
    find_spot_pairs, human_bytes,
};
use dupgram_spotsigs::{DEFAULT_ANTECEDENTS, DEFAULT_CHAIN, DEFAULT_DISTANCE, ENGLISH_STOPWORDS};

use super::common::{InputArgs, ResourceArgs, TokenArgs, count_config, create_output, group, write_json};
use super::progress::ProgressView;

/// What documents are compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FeaturesArg {
    /// Word n-grams (-n).
    Ngrams,
    /// SpotSigs spot signatures: a stop-word antecedent and a chain of words after it.
    Spotsigs,
}

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
/// With --features spotsigs, documents are compared by SpotSigs spot
/// signatures (Theobald et al. 2008) instead of n-grams: an antecedent stop
/// word, then --chain words that are not stop words, at --spot-distance.
/// SSR is the Jaccard coefficient of the signature sets; coverage and SSCR
/// count the tokens of the signatures' chain positions; the columns stay the same.
///
/// Examples:
///   dupgram pairs corpus.jsonl.zst -n 5 --min-sscr 0.5 -o pairs.tsv --clusters clusters.tsv
///   dupgram pairs corpus.jsonl.zst -n 10 --dups dups.tsv --lexicon dups.lex --min-cover 0.8
///     (the list and lexicon of `dupgram ngrams … -n 10 -o dups.tsv --lexicon dups.lex`)
///   dupgram pairs corpus.jsonl.zst --features spotsigs --min-ssr 0.5 -o pairs.tsv
#[derive(Debug, Clone, Args)]
#[command(verbatim_doc_comment)]
pub struct PairsArgs {
    /// Words per n-gram (1 to 32).
    #[arg(short = 'n', long = "n", default_value_t = 5, value_name = "N")]
    n: usize,
    /// Compare documents by word n-grams or by SpotSigs spot signatures.
    #[arg(long, value_enum, default_value_t = FeaturesArg::Ngrams, value_name = "KIND")]
    features: FeaturesArg,
    /// Spotsigs: the antecedents, one or more per line [default: a an the is was are be has have
    /// of to in for on with at by from that it]. Chains skip the stop words of --stopwords
    /// (default: a built-in English list) and the antecedents.
    #[arg(long, value_name = "FILE", help_heading = "SpotSigs")]
    antecedents: Option<PathBuf>,
    /// Spotsigs: the spot distance d, 1 to 64 [default: 1].
    #[arg(long, value_name = "D", help_heading = "SpotSigs")]
    spot_distance: Option<usize>,
    /// Spotsigs: the chain length c, words after the antecedent, 1 to 16 [default: 3].
    #[arg(long, value_name = "C", help_heading = "SpotSigs")]
    chain: Option<usize>,
    /// Spotsigs: keep signatures whose IDF, ln(N/df)/ln N, lies in LO..=HI [default: 0,1, all].
    #[arg(long, value_name = "LO,HI", value_parser = parse_idf_range, help_heading = "SpotSigs")]
    idf_range: Option<(f64, f64)>,
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
    input: InputArgs,
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

    /// With --features spotsigs, how documents become signatures; without
    /// it, refuses the SpotSigs options.
    pub(super) fn spot_config(&self) -> anyhow::Result<Option<SpotConfig>> {
        if self.features != FeaturesArg::Spotsigs {
            let given = [
                ("--antecedents", self.antecedents.is_some()),
                ("--spot-distance", self.spot_distance.is_some()),
                ("--chain", self.chain.is_some()),
                ("--idf-range", self.idf_range.is_some()),
            ];
            if let Some((name, _)) = given.iter().find(|(_, given)| *given) {
                anyhow::bail!("{name} applies to --features spotsigs only");
            }
            return Ok(None);
        }
        let antecedents = match &self.antecedents {
            Some(path) => word_list(path, "antecedents")?,
            None => DEFAULT_ANTECEDENTS.iter().map(|w| w.to_string()).collect(),
        };
        let stopwords = match &self.tokens.stopwords {
            Some(path) => word_list(path, "stop list")?,
            None => ENGLISH_STOPWORDS.iter().map(|w| w.to_string()).collect(),
        };
        let params = SpotParams::new(
            antecedents,
            stopwords,
            self.spot_distance.unwrap_or(DEFAULT_DISTANCE),
            self.chain.unwrap_or(DEFAULT_CHAIN),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        let spot = SpotConfig { params, idf_range: self.idf_range.unwrap_or((0.0, 1.0)) };
        spot.check()?;
        Ok(Some(spot))
    }

    /// Whether the job compares spot signatures.
    pub(super) fn spotsigs(&self) -> bool {
        self.features == FeaturesArg::Spotsigs
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
        self.report_with(stats, None)
    }

    fn report_with(&self, stats: &PairsStats, spot: Option<&SpotStats>) -> anyhow::Result<()> {
        if let Some(path) = &self.stats_json {
            #[derive(serde::Serialize)]
            struct WithSpot<'a> {
                #[serde(flatten)]
                pairs: &'a PairsStats,
                #[serde(skip_serializing_if = "Option::is_none")]
                spotsigs: Option<&'a SpotStats>,
            }
            write_json(path, &WithSpot { pairs: stats, spotsigs: spot })?;
        }
        if !self.resources.quiet {
            if let Some(spot) = spot {
                eprint!("{}", spot_summary(spot));
            }
            eprint!("{}", summary(stats, spot.is_some()));
        }
        Ok(())
    }
}

/// `LO,HI`, both between 0 and 1.
fn parse_idf_range(text: &str) -> Result<(f64, f64), String> {
    let bad = || format!("expected LO,HI with 0 <= LO <= HI <= 1, not {text:?}");
    let (lo, hi) = text.split_once(',').ok_or_else(bad)?;
    let (lo, hi): (f64, f64) = (lo.trim().parse().map_err(|_| bad())?, hi.trim().parse().map_err(|_| bad())?);
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

/// The words of a list file, whitespace-separated, lower-cased.
fn word_list(path: &std::path::Path, what: &str) -> anyhow::Result<Vec<String>> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: cannot read the {what}: {e}", path.display()))?;
    let words: Vec<String> = String::from_utf8_lossy(&bytes).split_whitespace().map(str::to_lowercase).collect();
    anyhow::ensure!(!words.is_empty(), "{}: the {what} is empty", path.display());
    Ok(words)
}

pub fn run(args: PairsArgs, control: &Control) -> anyhow::Result<()> {
    let PairsOutputs { config, output, format, clusters } = args.outputs(args.count_config()?);
    // Open outputs before any work, so a bad path fails at once.
    let memory = args.resources.memory;
    let clusters = clusters.as_deref().map(|p| create_output(Some(p), memory)).transpose()?;
    let mut files = PairFiles::new(create_output(output.as_deref(), memory)?, format, clusters)?;
    check_encoder_budget(memory, &[files.encoder_bytes()])?;
    let spot = args.spot_config()?;
    let (stats, spot_stats) = {
        let _progress = ProgressView::start(control, args.resources.quiet);
        match &spot {
            Some(spot) => find_spot_pairs(&config, spot, control, &mut files).map(|(p, s)| (p, Some(s)))?,
            None => (find_pairs(&config, control, &mut files)?, None),
        }
    };
    files.finish()?;
    args.report_with(&stats, spot_stats.as_ref())
}

fn spot_summary(s: &SpotStats) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line(
        "spot signatures",
        format!(
            "{} in {} tokens (d = {}, c = {}), {} kept by --idf-range {},{}",
            group(s.signatures),
            group(s.tokens),
            s.spot_distance,
            s.chain,
            group(s.kept_signatures),
            s.idf_range.0,
            s.idf_range.1
        ),
    );
    if s.distinct_signatures > 0 {
        line(
            "distinct signatures",
            format!("{} ({} within the IDF range)", group(s.distinct_signatures), group(s.kept_distinct_signatures)),
        );
    }
    line("without signatures", format!("{} documents", group(s.documents_without_signatures)));
    out
}

/// The summary; with `spotsigs`, the features counted are signatures.
fn summary(s: &PairsStats, spotsigs: bool) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    let (tokens, features) = match spotsigs {
        true => ("signatures".to_string(), "signatures".to_string()),
        false => ("tokens".to_string(), format!("{}-grams", s.n)),
    };
    line("documents", format!("{} ({} {tokens})", group(s.index.documents), group(s.index.tokens)));
    line(
        "duplicate index",
        format!(
            "{} {features}, {} occurrences ({:.1} % of a full index)",
            group(s.index.duplicate_ngrams),
            group(s.index.duplicate_occurrences),
            100.0 * s.index.index_fraction
        ),
    );
    if let Some(first) = &s.index.first_pass {
        line("sieve", super::common::index_sieve(first));
    }
    line("identical documents", format!("{} groups, {} documents", group(s.exact_groups), group(s.grouped_documents)));
    line("boilerplate n-grams", format!("{} (in more than --max-df documents)", group(s.boilerplate_ngrams)));
    line(
        "shared document sets",
        format!(
            "{} (held alike by {} n-grams, each set paired once)",
            group(s.shared_sets),
            group(s.shared_set_ngrams)
        ),
    );
    if s.skipped.bounds > 0 {
        line(
            "pairs never made",
            format!(
                "{} whose documents' totals bound them below the thresholds (each once per shared n-gram)",
                group(s.skipped.bounds)
            ),
        );
    }
    line(
        "candidate pairs",
        format!(
            "{} ({} pruned by bounds, {} scored)",
            group(s.candidate_pairs),
            group(s.pruned_pairs),
            group(s.scored_pairs)
        ),
    );
    if s.skipped.partition + s.skipped.length > 0 {
        line(
            "skipped by --min-ssr",
            format!(
                "{} pairs in partitions apart, {} by set sizes (each once per shared feature)",
                group(s.skipped.partition),
                group(s.skipped.length)
            ),
        );
    }
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
        line("index blocks", format!("{} ({} readings of the index)", group(s.index_blocks), group(s.index_reads)));
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
