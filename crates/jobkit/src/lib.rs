//! What every dupgram job is built on — the bottom floor of the jobs in
//! `dupgram-pipeline` and of the cluster's tasks. Nothing here counts an
//! n-gram; every module is used by several jobs and uses none of them.
//!
//! * [`control`] — the stop flag (Ctrl-C) and the progress counters a job
//!   shares with whoever runs it.
//! * [`error`] — [`PipelineError`], everything that can stop a job; messages
//!   name the file.
//! * [`memory`] — [`MemoryPlan`]: how `--memory` is shared between the parts
//!   of a job, and what the process actually used.
//! * [`scratch`] — a job's scratch directory, and the removal of what killed
//!   jobs left behind.
//! * [`output`] — output files written under a temporary name and renamed
//!   into place when complete; `-` is standard output; [`table`] writes the
//!   Parquet form of a result.
//! * [`feed`] — one reader thread feeding `threads` workers from a fixed
//!   pool of batches.
//! * [`doc_stream`] — the corpus read back document by document, with its
//!   units, for the jobs that write documents out again; [`attributes`]
//!   writes Dolma-style attribute records instead of the documents.
//! * [`merging`], [`parted`], [`unit_sort`] — run files merged, cut by part,
//!   and units grouped by a 128-bit key out of core.
//! * [`groups`], [`shared_sets`] — groups of identical documents, and the
//!   document sets many n-grams share (paired once).

pub mod attributes;
pub mod control;
pub mod doc_stream;
pub mod error;
pub mod feed;
pub mod groups;
pub mod memory;
pub mod merging;
pub mod output;
pub mod parted;
pub mod scratch;
pub mod shared_sets;
pub mod table;
pub mod unit_sort;

pub use control::{Control, Progress};
pub use error::PipelineError;
pub use memory::MemoryPlan;
