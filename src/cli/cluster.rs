//! `dupgram slurm` and `dupgram stage`: a job as tasks on a shared work directory.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use dupgram_cluster::{JobPlan, Outputs, SlurmOptions, Stage, TaskId, TaskOutcome, WorkDir};
use dupgram_pipeline::{Control, NgramConfig};

use super::ngrams::{self, NgramsArgs};
use super::progress::ProgressView;

/// Run a job as tasks a scheduler can start on any node: write the Slurm
/// scripts into a work directory and submit them.
///
/// The stages: lexicon (per shard) → vocab → map (per shard) → reduce (per
/// n-gram bucket) → finish, which writes -o exactly as the one-machine
/// command would. Tasks that finished are skipped when the job is submitted
/// again; inputs that changed since the job was planned are refused.
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
}

#[derive(Debug, Args)]
struct SlurmNgramsArgs {
    #[command(flatten)]
    ngrams: NgramsArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
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
    /// Wait for the last stage and print the job's summary.
    #[arg(long)]
    wait: bool,
    /// Run every task here, one after another, instead of submitting them.
    #[arg(long)]
    local: bool,
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
    /// The shard (lexicon, map) or bucket (reduce) [default: $SLURM_ARRAY_TASK_ID, else 0].
    #[arg(long, value_name = "I")]
    index: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StageName {
    Lexicon,
    Vocab,
    Map,
    Reduce,
    Finish,
    All,
}

pub fn slurm(args: SlurmArgs, control: &Control) -> anyhow::Result<()> {
    let SlurmJob::Ngrams(job) = args.job;
    let cluster = &job.cluster;
    anyhow::ensure!(
        !job.ngrams.input.inputs.iter().any(|p| p.as_os_str() == "-"),
        "standard input cannot be cut into shards: give files"
    );
    let (config, _) = ngrams::config(&job.ngrams)?;
    let work = WorkDir::new(&cluster.workdir)?;
    let argv = std::env::args_os()
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("{}: not UTF-8; a job plan stores its command line", a.to_string_lossy()))
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    let (inputs, shards) = JobPlan::cut(&job.ngrams.input.inputs, config.read.format, cluster.shards, cluster.buckets)?;
    let plan = JobPlan {
        command: "ngrams".into(),
        argv,
        cwd: std::env::current_dir().context("the current directory")?,
        options: format!("{:?}", job.ngrams),
        inputs,
        shards,
        buckets: cluster.buckets,
        // Chosen once: every lexicon task's sieve must have this size for them to combine.
        sieve_bytes: dupgram_pipeline::Passes::new(&config, control, &config.tmp_dir)?.sieve_size().unwrap_or(0),
    };
    work.save_plan(&plan)?;
    let plan = work.load_plan()?;
    let quiet = job.ngrams.resources.quiet;
    if !quiet {
        describe(&plan, &work);
    }
    if cluster.local {
        return run_tasks(&work, &plan, &job.ngrams, &config, control, &TaskId::all(&plan));
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
    if !quiet {
        let ids: Vec<String> = submitted.iter().map(|s| format!("{} {}", s.stage, s.job_id)).collect();
        eprintln!("  submitted: {}", ids.join(", "));
        eprintln!("  logs in {}", work.path("slurm").display());
    }
    if !cluster.wait {
        return Ok(());
    }
    dupgram_cluster::wait(&submitted, std::time::Duration::from_millis(500), &|| control.interrupted())?;
    let outputs = outputs(&job.ngrams)?;
    let stage = Stage::new(&work, &plan, &config, control, &outputs);
    let unfinished: Vec<String> =
        TaskId::all(&plan).into_iter().filter(|t| !stage.finished(*t)).map(|t| t.name()).collect();
    anyhow::ensure!(
        unfinished.is_empty(),
        "the job ended with tasks unfinished ({}); see the logs in {} and submit it again",
        unfinished.join(", "),
        work.path("slurm").display()
    );
    ngrams::report(&job.ngrams, &stage.summary()?, outputs.lexicon.as_deref())
}

pub fn stage(args: StageArgs, control: &Control) -> anyhow::Result<()> {
    let work = WorkDir::new(&args.workdir)?;
    let plan = work.load_plan()?;
    std::env::set_current_dir(&plan.cwd).with_context(|| format!("{}: the job's directory", plan.cwd.display()))?;
    let job = planned_job(&plan)?;
    let (mut config, _) = ngrams::config(&job)?;
    if job.resources.threads.is_none()
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
        StageName::Finish => vec![TaskId::Finish],
        StageName::All => TaskId::all(&plan),
    };
    run_tasks(&work, &plan, &job, &config, control, &tasks)
}

/// The options the job was planned with, from its stored command line.
fn planned_job(plan: &JobPlan) -> anyhow::Result<NgramsArgs> {
    let cli = super::Cli::try_parse_from(&plan.argv)
        .map_err(|e| anyhow::anyhow!("the job's command line no longer parses: {e}"))?;
    match cli.command {
        super::Command::Slurm(SlurmArgs { job: SlurmJob::Ngrams(job) }) => Ok(job.ngrams),
        _ => anyhow::bail!("job.json does not hold a `dupgram slurm ngrams` command line"),
    }
}

fn outputs(job: &NgramsArgs) -> anyhow::Result<Outputs> {
    let (_, lexicon) = ngrams::config(job)?;
    Ok(Outputs { dups: job.output.clone(), lexicon })
}

/// Runs `tasks` in order; after `finish`, prints the job's summary.
fn run_tasks(
    work: &WorkDir,
    plan: &JobPlan,
    job: &NgramsArgs,
    config: &NgramConfig,
    control: &Control,
    tasks: &[TaskId],
) -> anyhow::Result<()> {
    let outputs = outputs(job)?;
    let stage = Stage::new(work, plan, config, control, &outputs);
    let quiet = job.resources.quiet;
    for &task in tasks {
        let started = std::time::Instant::now();
        let outcome = {
            let _progress = ProgressView::start(control, quiet);
            stage.run(task).with_context(|| format!("task {}", task.name()))?
        };
        // Even with --quiet: these lines are the scheduler's log of the job.
        match outcome {
            TaskOutcome::Ran => eprintln!("  {:<14} done in {:.2} s", task.name(), started.elapsed().as_secs_f64()),
            TaskOutcome::AlreadyDone => eprintln!("  {:<14} already done", task.name()),
        }
        if task == TaskId::Finish && outcome == TaskOutcome::Ran {
            ngrams::report(job, &stage.summary()?, outputs.lexicon.as_deref())?;
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
