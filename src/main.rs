//! `dupgram`: exact duplicate word n-grams and co-derivative documents in fixed memory.
//!
//! The binary only parses arguments, shows progress and prints summaries
//! (the `cli` module of this package's library, which the Python package
//! shares); the work is done by the crates under `crates/` (see
//! `dupgram-pipeline`).

use std::process::ExitCode;

use dupgram::cli;

fn main() -> ExitCode {
    dupgram_pipeline::page_in_code_as_it_runs();
    dupgram_pipeline::tune_allocator();
    let args = cli::Cli::try_parse_args(std::env::args_os().collect()).unwrap_or_else(|e| e.exit());
    let control = dupgram_pipeline::Control::default();
    let stop = control.stop.clone();
    // The first Ctrl-C (or SIGTERM from a scheduler) asks the job to stop and
    // clean up; a second one ends the process at once.
    let _ = ctrlc::set_handler(move || {
        if stop.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    match cli::run(args, &control) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cli::report(&e, &control),
    }
}
