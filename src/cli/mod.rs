//! Command-line interface.

mod cluster;
mod common;
mod dedup;
mod generate;
mod ngrams;
mod overlap;
mod pairs;
mod progress;
mod stats;

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dupgram_pipeline::{Control, PipelineError};

/// Find every duplicated word n-gram of a corpus, exactly, in fixed memory.
#[derive(Debug, Parser)]
#[command(name = "dupgram", version, about, long_about = None, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The arguments as given, the program's name first: a Slurm job's plan
    /// stores its command line, which the tasks parse again.
    #[arg(skip)]
    argv: Vec<OsString>,
}

impl Cli {
    /// Parses `argv` (the program's name first) as the command line does,
    /// keeping it for a job plan to store. The binary and the Python package
    /// both parse this way: their own process arguments are not the job's.
    pub fn try_parse_args(argv: Vec<OsString>) -> Result<Cli, clap::Error> {
        let mut cli = Cli::try_parse_from(&argv)?;
        cli.argv = argv;
        Ok(cli)
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    Ngrams(ngrams::NgramsArgs),
    Pairs(pairs::PairsArgs),
    Dedup(dedup::DedupArgs),
    Stats(stats::StatsArgs),
    Overlap(overlap::OverlapArgs),
    Slurm(cluster::SlurmArgs),
    Stage(cluster::StageArgs),
    Update(cluster::UpdateArgs),
    Completions(generate::CompletionsArgs),
    Man(generate::ManArgs),
}

pub fn run(cli: Cli, control: &Control) -> anyhow::Result<()> {
    let Cli { command, argv } = cli;
    match command {
        Command::Ngrams(args) => ngrams::run(args, control),
        Command::Pairs(args) => pairs::run(args, control),
        Command::Dedup(args) => dedup::run(args, control),
        Command::Stats(args) => stats::run(args, control),
        Command::Overlap(args) => overlap::run(args, control),
        Command::Slurm(args) => cluster::slurm(args, &argv, control),
        Command::Stage(args) => cluster::stage(args, control),
        Command::Update(args) => cluster::update(args, control),
        Command::Completions(args) => generate::completions(args),
        Command::Man(args) => generate::man(args),
    }
}

/// Prints an error on one line and picks the exit code: 130 when
/// interrupted, 0 when standard output was closed by a reader that had
/// seen enough (as `head` does), 1 otherwise.
pub fn report(error: &anyhow::Error, control: &Control) -> ExitCode {
    if control.interrupted() || matches!(error.downcast_ref::<PipelineError>(), Some(PipelineError::Interrupted)) {
        eprintln!("dupgram: interrupted; temporary files removed, no output written");
        return ExitCode::from(130);
    }
    if let Some(PipelineError::Io { path, error }) = error.downcast_ref::<PipelineError>()
        && error.kind() == std::io::ErrorKind::BrokenPipe
        && path.as_os_str() == "<stdout>"
    {
        return ExitCode::SUCCESS;
    }
    eprintln!("dupgram: error: {}", one_line(error));
    ExitCode::from(1)
}

/// The error and its causes, each once, joined as `{:#}` joins them; a full
/// disk is worded to name the directory that filled.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in error.chain() {
        if let Some((path, io)) = io_failure(cause)
            && io.kind() == std::io::ErrorKind::StorageFull
        {
            parts.push(disk_full(path, io));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

fn io_failure<'e>(cause: &'e (dyn std::error::Error + 'static)) -> Option<(&'e Path, &'e std::io::Error)> {
    if let Some(e) = cause.downcast_ref::<PipelineError>() {
        return e.io_failure();
    }
    cause.downcast_ref::<dupgram_cluster::ClusterError>().and_then(|e| e.io_failure())
}

/// `DIR: No space left on device (os error 28), writing FILE`: DIR is the
/// nearest directory above `path` that still exists — the job has removed
/// its scratch directory by now, so that is the `--tmp-dir`, the output's
/// directory, or the work directory's — and FILE is `path` below it.
fn disk_full(path: &Path, io: &std::io::Error) -> String {
    let dir =
        path.ancestors().skip(1).find(|d| d.is_dir()).filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = path.strip_prefix(dir).unwrap_or(path);
    format!("{}: {io}, writing {}", dir.display(), file.display())
}
