//! `dupgram slurm` and `dupgram stage`: a job as tasks on a shared work directory.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use dupgram_cluster::{JobPlan, Outputs, SlurmOptions, Stage, TaskId, TaskOutcome, WorkDir};
use dupgram_pipeline::output::PairFormat;
use dupgram_pipeline::{Control, NgramConfig};

use super::ngrams::{self, NgramsArgs};
use super::pairs::PairsArgs;
use super::progress::ProgressView;

/// Run a job as tasks a scheduler can start on any node: write the Slurm
/// scripts into a work directory and submit them.
///
/// The stages: lexicon (per shard) → vocab → map (per shard) → reduce (per
/// n-gram bucket) → finish, which writes -o exactly as the one-machine
/// command would; for pairs, after vocab: index (per shard) → postings and
/// candidates (per bucket) → score (one per shard) → finish. Tasks
/// that finished are skipped when the job is submitted again; inputs that
/// changed since the job was planned are refused.
///
/// Examples:
///   dupgram slurm ngrams corpus/*.jsonl.zst -n 10 --memory 4G -o dups.tsv --workdir /shared/job --shards 32 --buckets 16
///   dupgram slurm ngrams big.jsonl -n 8 -o dups.tsv --workdir w --shards 4 --buckets 4 --dry-run
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SlurmArgs {
    #[command(subcommand)]
    job: SlurmJob,
}

#[derive(Debug, Subcommand)]
enum SlurmJob {
    /// `dupgram ngrams`, as tasks.
    Ngrams(SlurmNgramsArgs),
    /// `dupgram pairs`, as tasks: lexicon and vocab as for `ngrams`, then the index pass per
    /// shard, the index merge and the candidates per n-gram bucket, the scoring in as many
    /// tasks as shards, and finish.
    Pairs(SlurmPairsArgs),
}

#[derive(Debug, Args)]
struct SlurmNgramsArgs {
    #[command(flatten)]
    ngrams: NgramsArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Debug, Args)]
struct SlurmPairsArgs {
    #[command(flatten)]
    pairs: PairsArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// A job's own options: what the one-machine command takes.
#[derive(Debug, Clone)]
enum Job {
    Ngrams(NgramsArgs),
    Pairs(PairsArgs),
}

impl Job {
    fn command(&self) -> &'static str {
        match self {
            Job::Ngrams(_) => "ngrams",
            Job::Pairs(_) => "pairs",
        }
    }

    fn inputs(&self) -> &[PathBuf] {
        match self {
            Job::Ngrams(a) => &a.input.inputs,
            Job::Pairs(a) => a.inputs(),
        }
    }

    /// The count of duplicate n-grams the staged tasks run.
    fn count_config(&self) -> anyhow::Result<NgramConfig> {
        match self {
            Job::Ngrams(a) => Ok(ngrams::config(a)?.0),
            Job::Pairs(a) => a.count_config(),
        }
    }

    fn quiet(&self) -> bool {
        match self {
            Job::Ngrams(a) => a.resources.quiet,
            Job::Pairs(a) => a.quiet(),
        }
    }

    fn threads_given(&self) -> bool {
        match self {
            Job::Ngrams(a) => a.resources.threads.is_some(),
            Job::Pairs(a) => a.threads_given(),
        }
    }

    /// Where `finish` writes, and (for `pairs`) the pair options; `config`
    /// is the configuration the tasks run with.
    fn outputs(&self, config: &NgramConfig) -> anyhow::Result<Outputs> {
        Ok(match self {
            Job::Ngrams(a) => {
                // The buckets' TSV lists are joined into -o: it has no table form yet.
                anyhow::ensure!(
                    !a.output.as_deref().is_some_and(dupgram_pipeline::table::is_parquet_name),
                    "slurm ngrams writes TSV; -o cannot name a .parquet file (`dupgram ngrams` can)"
                );
                Outputs { dups: a.output.clone(), lexicon: ngrams::config(a)?.1, pairs: None }
            }
            Job::Pairs(a) => Outputs { dups: None, lexicon: None, pairs: Some(a.outputs(config.clone())) },
        })
    }

    /// After `finish`: the one-machine command's summary, and what the tasks cost.
    fn report(&self, stage: &Stage, plan: &JobPlan, outputs: &Outputs) -> anyhow::Result<()> {
        match self {
            Job::Ngrams(a) => ngrams::report(a, &stage.summary()?, outputs.lexicon.as_deref())?,
            Job::Pairs(a) => a.report(&stage.pairs_summary()?)?,
        }
        if !self.quiet() {
            let tasks = TaskId::all(plan).len();
            eprintln!("  {:<24}{tasks}, {:.2} s of CPU in all", "tasks", stage.cpu_seconds()?);
        }
        Ok(())
    }
}

/// Where the tasks meet and how they are cut.
#[derive(Debug, Args)]
#[command(next_help_heading = "Cluster")]
struct ClusterArgs {
    /// The job's work directory, on a filesystem every node sees.
    #[arg(long, value_name = "DIR")]
    workdir: PathBuf,
    /// Parts of the corpus read by separate tasks: whole files, or plain files cut at document boundaries.
    #[arg(long, default_value_t = 4, value_name = "N")]
    shards: usize,
    /// N-gram buckets merged by separate tasks.
    #[arg(long, default_value_t = 4, value_name = "B")]
    buckets: usize,
    /// Slurm partition.
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// Another sbatch option for every script, e.g. --sbatch=--time=2:00:00 (repeatable).
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true)]
    sbatch: Vec<String>,
    /// Write the job plan and the scripts, but submit nothing.
    #[arg(long, conflicts_with = "local")]
    dry_run: bool,
    /// Write the job plan only, for a scheduler that runs `dupgram stage` itself (datatrove's
    /// executors do, through the Python package's steps).
    #[arg(long, conflicts_with_all = ["local", "dry_run", "wait"])]
    plan_only: bool,
    /// Wait for the last stage and print the job's summary.
    #[arg(long)]
    wait: bool,
    /// Run every task here, one after another, instead of submitting them.
    #[arg(long)]
    local: bool,
    /// Also keep the count of every n-gram, unique ones too, so `dupgram update` can add documents later.
    #[arg(long)]
    keep_state: bool,
    /// With --keep-state: also keep where every n-gram occurs (document, position), so
    /// `dupgram update --pairs` can name and score the older documents new ones share text with.
    #[arg(long, requires = "keep_state")]
    keep_postings: bool,
}

/// Add new documents to a job planned with --keep-state: report the n-grams
/// that became duplicated, without reading the old corpus again.
///
/// New words get new IDs (old ones keep theirs); the new documents' n-grams
/// are merged with the stored count of every n-gram in one sequential pass.
///
/// Examples:
///   dupgram update --workdir /shared/job day-2026-11-22.jsonl.zst -o new-dups.tsv
///   dupgram update --workdir /shared/job today.jsonl --all all-dups.tsv.zst
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UpdateArgs {
    /// The job's work directory.
    #[arg(long, value_name = "DIR")]
    workdir: PathBuf,
    /// Files with the new documents (plain, .gz or .zst), in the job's format.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Write the n-grams that became duplicated here, with their counts [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write every duplicated n-gram of the grown corpus here.
    #[arg(long, value_name = "FILE")]
    all: Option<PathBuf>,
    /// Also list the new documents that share n-grams with older text: ID, tokens, tokens those
    /// n-grams cover, the share covered (TSV, a header line first).
    #[arg(long, value_name = "FILE")]
    documents: Option<PathBuf>,
    /// Jobs planned with --keep-postings: also write each pair of an older and a new document
    /// that `dupgram pairs` over everything so far would list, scored as it scores it (TSV, or
    /// JSON Lines when the name ends in .jsonl; older document first). Identical documents are
    /// grouped as there: a copy is paired only through its group's first document, unless
    /// --expand-groups.
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,
    /// With --pairs: keep pairs with at least this SSCR.
    #[arg(long, default_value_t = 0.0, value_name = "X", requires = "pairs")]
    min_sscr: f64,
    /// With --pairs: keep pairs with at least this SSR (Jaccard).
    #[arg(long, default_value_t = 0.0, value_name = "X", requires = "pairs")]
    min_ssr: f64,
    /// With --pairs: keep pairs where either document is at least this covered by shared n-grams.
    #[arg(long, default_value_t = 0.0, value_name = "X", requires = "pairs")]
    min_cover: f64,
    /// With --pairs: n-grams in more documents than this make no candidates (they still count in scores).
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "pairs")]
    max_df: u64,
    /// With --pairs: pairs listed per group of identical documents, as `dupgram pairs` takes it.
    #[arg(long, default_value_t = 100, value_name = "N", requires = "pairs")]
    max_group_pairs: u64,
    /// With --pairs: list every copy's pairs, as `dupgram pairs --expand-groups` does.
    #[arg(long, requires = "pairs")]
    expand_groups: bool,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Segments of stored counts per bucket before an update merges them into one (more: cheaper
    /// updates, slower reads).
    #[arg(long, default_value_t = dupgram_cluster::MAX_SEGMENTS, value_name = "N")]
    max_segments: usize,
    /// No progress bar and no summary on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// Run one task of a job planned by `dupgram slurm` (what the scripts call).
#[derive(Debug, Args)]
pub struct StageArgs {
    /// The stage; `all` runs every unfinished task here, in order.
    #[arg(value_enum)]
    stage: StageName,
    /// The job's work directory.
    #[arg(long, value_name = "DIR")]
    workdir: PathBuf,
    /// The shard (lexicon, map, index, score) or bucket (reduce, postings, candidates)
    /// [default: $SLURM_ARRAY_TASK_ID, else 0].
    #[arg(long, value_name = "I")]
    index: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StageName {
    Lexicon,
    Vocab,
    Map,
    Reduce,
    Index,
    Postings,
    Candidates,
    Score,
    Finish,
    All,
}

pub fn slurm(args: SlurmArgs, argv: &[OsString], control: &Control) -> anyhow::Result<()> {
    let (job, cluster) = match args.job {
        SlurmJob::Ngrams(a) => (Job::Ngrams(a.ngrams), a.cluster),
        SlurmJob::Pairs(a) => (Job::Pairs(a.pairs), a.cluster),
    };
    anyhow::ensure!(
        !job.inputs().iter().any(|p| p.as_os_str() == "-"),
        "standard input cannot be cut into shards: give files"
    );
    if let Job::Pairs(a) = &job {
        anyhow::ensure!(
            !a.has_dups(),
            "--dups: with a saved duplicate list there is nothing to count; run `dupgram pairs`"
        );
        anyhow::ensure!(!cluster.keep_state, "--keep-state is for `dupgram slurm ngrams` jobs");
        anyhow::ensure!(
            !a.spotsigs(),
            "--features spotsigs: the signature pass is not a Slurm stage yet; run `dupgram pairs --features spotsigs`"
        );
    }
    let config = job.count_config()?;
    let work = WorkDir::new(&cluster.workdir)?;
    let argv = argv
        .iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| {
                anyhow::anyhow!("{}: not UTF-8; a job plan stores its command line", a.to_string_lossy())
            })
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    let (inputs, shards) = JobPlan::cut(job.inputs(), config.read.format, cluster.shards, cluster.buckets)?;
    let plan = JobPlan {
        command: job.command().into(),
        argv,
        cwd: std::env::current_dir().context("the current directory")?,
        options: format!("{job:?}"),
        inputs,
        shards,
        buckets: cluster.buckets,
        // Chosen once: every lexicon task's sieve must have this size for them to combine.
        // Keeping every n-gram's count, the sieve (which drops unique ones) has no use.
        sieve_bytes: match cluster.keep_state {
            true => 0,
            false => dupgram_pipeline::Passes::new(&config, control, &config.tmp_dir)?.sieve_size().unwrap_or(0),
        },
        keep_state: cluster.keep_state,
        keep_postings: cluster.keep_postings,
    };
    work.save_plan(&plan)?;
    let plan = work.load_plan()?;
    if !job.quiet() {
        describe(&plan, &work);
    }
    if cluster.plan_only {
        if !job.quiet() {
            eprintln!(
                "  planned only; `dupgram stage STAGE --workdir {} --index I` runs a task",
                work.root().display()
            );
        }
        return Ok(());
    }
    if cluster.local {
        return run_tasks(&work, &plan, &job, &config, control, &TaskId::all(&plan));
    }
    let options = SlurmOptions {
        program: std::env::current_exe().context("the path of this program")?,
        memory: config.memory,
        cpus: config.threads,
        partition: cluster.partition.clone(),
        extra: cluster.sbatch.clone(),
    };
    let scripts = dupgram_cluster::write_scripts(&work, &plan, &options)?;
    if cluster.dry_run {
        for s in &scripts {
            eprintln!("  wrote {}", s.path.display());
        }
        eprintln!("  not submitted (--dry-run); `dupgram stage all --workdir {}` runs it here", work.root().display());
        return Ok(());
    }
    let submitted = dupgram_cluster::submit(&scripts)?;
    let ids: Vec<String> = submitted.iter().map(|s| format!("{} {}", s.stage, s.job_id)).collect();
    eprintln!("  submitted: {}; logs in {}", ids.join(", "), work.path("slurm").display());
    if !cluster.wait {
        return Ok(());
    }
    dupgram_cluster::wait(&submitted, std::time::Duration::from_millis(500), &|| control.interrupted())?;
    let outputs = job.outputs(&config)?;
    let stage = Stage::new(&work, &plan, &config, control, &outputs);
    let unfinished: Vec<String> =
        TaskId::all(&plan).into_iter().filter(|t| !stage.finished(*t)).map(|t| t.name()).collect();
    anyhow::ensure!(
        unfinished.is_empty(),
        "the job ended with tasks unfinished ({}); see the logs in {} and submit it again",
        unfinished.join(", "),
        work.path("slurm").display()
    );
    job.report(&stage, &plan, &outputs)
}

pub fn stage(args: StageArgs, control: &Control) -> anyhow::Result<()> {
    let work = WorkDir::new(&args.workdir)?;
    let plan = work.load_plan()?;
    std::env::set_current_dir(&plan.cwd).with_context(|| format!("{}: the job's directory", plan.cwd.display()))?;
    let job = planned_job(&plan)?;
    let mut config = job.count_config()?;
    if !job.threads_given()
        && let Some(cpus) = std::env::var("SLURM_CPUS_PER_TASK").ok().and_then(|c| c.parse().ok())
    {
        config.threads = cpus;
    }
    let index = args.index.or_else(|| std::env::var("SLURM_ARRAY_TASK_ID").ok().and_then(|i| i.parse().ok()));
    let index = index.unwrap_or(0);
    let (shards, buckets) = (plan.shards.len(), plan.buckets);
    let check = |count: usize, what: &str| {
        anyhow::ensure!(
            index < count,
            "--index {index}: this job has {count} {what} (0 to {})",
            count.saturating_sub(1)
        );
        Ok(())
    };
    let tasks = match args.stage {
        StageName::Lexicon => check(shards, "shards").map(|()| vec![TaskId::Lexicon(index)])?,
        StageName::Vocab => vec![TaskId::Vocab],
        StageName::Map => check(shards, "shards").map(|()| vec![TaskId::Map(index)])?,
        StageName::Reduce => check(buckets, "buckets").map(|()| vec![TaskId::Reduce(index)])?,
        StageName::Index => check(shards, "shards").map(|()| vec![TaskId::Index(index)])?,
        StageName::Postings => check(buckets, "buckets").map(|()| vec![TaskId::Postings(index)])?,
        StageName::Candidates => check(buckets, "buckets").map(|()| vec![TaskId::Candidates(index)])?,
        StageName::Score => check(shards, "shards").map(|()| vec![TaskId::Score(index)])?,
        StageName::Finish => vec![TaskId::Finish],
        StageName::All => TaskId::all(&plan),
    };
    if let Some(task) = tasks.iter().find(|t| !TaskId::all(&plan).contains(t)) {
        anyhow::bail!("this job ({}) has no task {}", plan.command, task.name());
    }
    run_tasks(&work, &plan, &job, &config, control, &tasks)
}

pub fn update(args: UpdateArgs, control: &Control) -> anyhow::Result<()> {
    let work = WorkDir::new(&args.workdir)?;
    let plan = work.load_plan()?;
    let inputs: Vec<PathBuf> = args.inputs.iter().map(std::path::absolute).collect::<Result<_, _>>()?;
    let parquet = [&args.output, &args.all, &args.documents].into_iter().flatten();
    anyhow::ensure!(
        !parquet.into_iter().any(|p| dupgram_pipeline::table::is_parquet_name(p)),
        "update writes TSV; its outputs cannot name .parquet files"
    );
    // Outputs are named relative to where `update` was run, not the job's directory.
    let outputs = dupgram_cluster::UpdateOutputs {
        newly_duplicated: args.output.as_ref().map(std::path::absolute).transpose()?,
        all_duplicated: args.all.as_ref().map(std::path::absolute).transpose()?,
        max_segments: args.max_segments,
        documents: args.documents.as_ref().map(std::path::absolute).transpose()?,
        pairs: None,
    };
    let stats_json = args.stats_json.as_ref().map(std::path::absolute).transpose()?;
    std::env::set_current_dir(&plan.cwd).with_context(|| format!("{}: the job's directory", plan.cwd.display()))?;
    let Job::Ngrams(job) = planned_job(&plan)? else {
        anyhow::bail!("only `dupgram slurm ngrams` jobs can be updated");
    };
    let (config, _) = ngrams::config(&job)?;
    let mut outputs = outputs;
    if let Some(path) = &args.pairs {
        let pairs = dupgram_pipeline::PairsConfig {
            min_sscr: args.min_sscr,
            min_ssr: args.min_ssr,
            min_cover: args.min_cover,
            max_df: args.max_df,
            max_group_pairs: args.max_group_pairs,
            expand_groups: args.expand_groups,
            ..dupgram_pipeline::PairsConfig::new(config.clone())
        };
        pairs.check()?;
        let jsonl = path.to_string_lossy().contains(".jsonl");
        outputs.pairs = Some(dupgram_cluster::UpdatePairs {
            output: std::path::absolute(path)?,
            format: if jsonl { PairFormat::Jsonl } else { PairFormat::Tsv },
            config: pairs,
        });
    }
    let stats = {
        let _progress = ProgressView::start(control, args.quiet);
        dupgram_cluster::update(&work, &plan, &config, control, &inputs, &outputs)?
    };
    if let Some(path) = &stats_json {
        super::common::write_json(path, &stats)?;
    }
    if !args.quiet {
        eprint!("{}", update_summary(&stats, config.min_count));
    }
    Ok(())
}

fn update_summary(s: &dupgram_cluster::UpdateStats, min_count: u64) -> String {
    let g = super::common::group;
    let c = &s.count;
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("  {label:<24}{value}\n"));
    line("update", format!("state generation {}", s.generation));
    line("new documents", format!("{} ({} tokens, {} new words)", g(c.documents), g(c.tokens), g(s.new_words)));
    line("distinct n-grams", format!("{} before, {} after", g(s.ngrams_before), g(s.ngrams_after)));
    line(&format!("with count ≥ {min_count}"), format!("{} ({} newly)", g(s.duplicated), g(s.newly_duplicated)));
    if s.candidate_pairs > 0 {
        line("pairs with older text", format!("{} kept of {} candidates", g(s.kept_pairs), g(s.candidate_pairs)));
    }
    if s.shared_ngrams > 0 || s.documents_sharing > 0 {
        line(
            "shared with older text",
            format!("{} n-grams, in {} new documents", g(s.shared_ngrams), g(s.documents_sharing)),
        );
    }
    let segments: usize = s.segments.iter().map(Vec::len).sum();
    line(
        "state",
        format!(
            "{} in {segments} segments ({} written)",
            dupgram_pipeline::human_bytes(s.state_bytes),
            dupgram_pipeline::human_bytes(s.written_bytes)
        ),
    );
    line("peak memory", dupgram_pipeline::human_bytes(s.peak_rss));
    line(
        "time",
        format!(
            "{:.2} s (words {:.2}, count {:.2}, merge with the state {:.2})",
            s.seconds, c.seconds.lexicon, c.seconds.count, c.seconds.merge
        ),
    );
    out
}

/// The options the job was planned with, from its stored command line.
fn planned_job(plan: &JobPlan) -> anyhow::Result<Job> {
    let cli = super::Cli::try_parse_from(&plan.argv)
        .map_err(|e| anyhow::anyhow!("the job's command line no longer parses: {e}"))?;
    match cli.command {
        super::Command::Slurm(SlurmArgs { job: SlurmJob::Ngrams(a) }) => Ok(Job::Ngrams(a.ngrams)),
        super::Command::Slurm(SlurmArgs { job: SlurmJob::Pairs(a) }) => Ok(Job::Pairs(a.pairs)),
        _ => anyhow::bail!("job.json does not hold a `dupgram slurm` command line"),
    }
}

/// Runs `tasks` in order; after `finish` of an `ngrams` job, prints its summary.
fn run_tasks(
    work: &WorkDir,
    plan: &JobPlan,
    job: &Job,
    config: &NgramConfig,
    control: &Control,
    tasks: &[TaskId],
) -> anyhow::Result<()> {
    let outputs = job.outputs(config)?;
    let stage = Stage::new(work, plan, config, control, &outputs);
    for &task in tasks {
        let started = std::time::Instant::now();
        let outcome = {
            let _progress = ProgressView::start(control, job.quiet());
            stage.run(task).with_context(|| format!("task {}", task.name()))?
        };
        // Even with --quiet: these lines are the scheduler's log of the job.
        match outcome {
            TaskOutcome::Ran => eprintln!("  {:<14} done in {:.2} s", task.name(), started.elapsed().as_secs_f64()),
            TaskOutcome::AlreadyDone => eprintln!("  {:<14} already done", task.name()),
        }
        if (task, outcome) == (TaskId::Finish, TaskOutcome::Ran) {
            job.report(&stage, plan, &outputs)?;
        }
    }
    Ok(())
}

fn describe(plan: &JobPlan, work: &WorkDir) {
    eprintln!(
        "  job in {}: {} input file(s), {} shard(s), {} bucket(s)",
        work.root().display(),
        plan.inputs.len(),
        plan.shards.len(),
        plan.buckets
    );
    for (i, shard) in plan.shards.iter().enumerate() {
        let bytes: u64 = shard.iter().map(|p| p.end - p.start).sum();
        eprintln!("    shard {i}: {} piece(s), {} bytes", shard.len(), bytes);
    }
    let empty = plan.shards.iter().filter(|s| s.is_empty()).count();
    if empty > 0 {
        eprintln!(
            "  note: {empty} shard(s) got nothing: compressed files cannot be cut; give more files or plain ones"
        );
    }
}
