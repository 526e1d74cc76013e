//! Command-line interface.

mod cluster;
mod common;
mod dedup;
mod ngrams;
mod pairs;
mod progress;
mod stats;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dupgram_pipeline::{Control, PipelineError};

/// Find every duplicated word n-gram of a corpus, exactly, in fixed memory.
#[derive(Debug, Parser)]
#[command(name = "dupgram", version, about, long_about = None, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Ngrams(ngrams::NgramsArgs),
    Pairs(pairs::PairsArgs),
    Dedup(dedup::DedupArgs),
    Stats(stats::StatsArgs),
    Slurm(cluster::SlurmArgs),
    Stage(cluster::StageArgs),
    Update(cluster::UpdateArgs),
}

pub fn run(cli: Cli, control: &Control) -> anyhow::Result<()> {
    match cli.command {
        Command::Ngrams(args) => ngrams::run(args, control),
        Command::Pairs(args) => pairs::run(args, control),
        Command::Dedup(args) => dedup::run(args, control),
        Command::Stats(args) => stats::run(args, control),
        Command::Slurm(args) => cluster::slurm(args, control),
        Command::Stage(args) => cluster::stage(args, control),
        Command::Update(args) => cluster::update(args, control),
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
    if let Some(PipelineError::Io { path, source }) = error.downcast_ref::<PipelineError>()
        && source.kind() == std::io::ErrorKind::BrokenPipe
        && path.as_os_str() == "<stdout>"
    {
        return ExitCode::SUCCESS;
    }
    eprintln!("dupgram: error: {error:#}");
    ExitCode::from(1)
}
