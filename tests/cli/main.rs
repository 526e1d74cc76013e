//! End-to-end tests of the `dupgram` command line: one test binary for all
//! of them (one link instead of one per file), a module per command or concern.

mod common;

mod attributes;
mod cluster;
mod dedup;
mod disk;
mod generate;
mod ngrams;
mod overlap;
mod pairs;
mod parquet_io;
mod spotsigs;
mod stats;
