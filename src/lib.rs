//! The dupgram command line as a library: its clap definitions and the
//! wiring from options to the jobs of `dupgram-pipeline`. The binary
//! (`main.rs`) and the Python package (`python/`) both run a parsed [`cli::Cli`]
//! through [`cli::run`], so an option means the same thing in both.

pub mod cli;
