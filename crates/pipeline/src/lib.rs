//! The dupgram jobs, wired from the stage crates.
//!
//! `count_ngrams` is the out-of-core duplicate n-gram count of Pomikálek &
//! Rychlý (section 4), with one addition, the sieve:
//!
//! 1. **lexicon pass** — read the corpus, count every word (`dupgram-lexicon`)
//!    and drop a fingerprint of every n-gram into the sieve (`dupgram-sieve`);
//!    number the words by frequency and save the lexicon;
//! 2. **sieve pass** — only with `--stop-top`, whose stop words are known only
//!    after the lexicon pass: fill the sieve with the final n-grams;
//! 3. **count pass** — read the corpus again, turn words into IDs, keep the
//!    n-grams the sieve lets through in fixed-memory chunks
//!    (`dupgram-chunker`), sort them and spill each chunk as a run
//!    (`dupgram-runs`);
//! 4. **merge** — k-way merge of all runs (`dupgram-merge`), in several
//!    passes if memory limits the fan-in; n-grams with a count ≥ `min_count`
//!    go to the caller.
//!
//! Each pass has one reader thread and `threads` workers (see `feed`). The
//! result does not depend on the thread count or the memory budget: those
//! only change how the corpus is cut into runs, and merging sums counts.

mod dedup;
mod error;
mod feed;
mod index;
pub mod memory;
mod ngrams;
pub mod output;
mod pairs;
mod parted;
mod parts;
mod scan;

pub use dedup::{DedupConfig, DedupStats, dedup};
pub use dupgram_dedup::{LengthRow, LengthTable, UnitKind};
pub use dupgram_index::PairScores;
pub use dupgram_merge::RunFile;
pub use dupgram_sieve::Sieve;
pub use error::PipelineError;
pub use index::{DocTable, DupsInput, IndexPart, IndexStats, IndexTotals, ShardCut};
pub use memory::{MemoryPlan, ZstdNeed, cpu_seconds, human_bytes, parse_bytes, peak_rss, tune_allocator};
pub use ngrams::{CountPassTotals, Emit, Limits, NgramConfig, NgramOutcome, NgramStats, Passes, count_ngrams};
pub use pairs::{PairPasses, PairsConfig, PairsSink, PairsStats, ScoreLayout, find_pairs, index_fraction};
pub use parts::BucketTotals;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where a job is, for a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    phase: Mutex<String>,
    /// Work done in the current phase (bytes read, or run entries merged).
    pub bytes: Arc<AtomicU64>,
    /// Work the phase has in all; 0 when unknown.
    pub total: AtomicU64,
}

impl Progress {
    pub fn phase(&self) -> String {
        self.phase.lock().map(|p| p.clone()).unwrap_or_default()
    }

    pub(crate) fn start(&self, phase: &str, total: Option<u64>) {
        if let Ok(mut p) = self.phase.lock() {
            *p = phase.to_owned();
        }
        self.bytes.store(0, Ordering::Relaxed);
        self.total.store(total.unwrap_or(0), Ordering::Relaxed);
    }
}

/// Shared between a job and whoever watches it.
#[derive(Debug, Default, Clone)]
pub struct Control {
    /// Set to stop the job (Ctrl-C); it then fails with [`PipelineError::Interrupted`]
    /// after removing its temporary files.
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
}

impl Control {
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl dupgram_merge::Interrupt for Control {
    fn interrupted(&self) -> bool {
        Control::interrupted(self)
    }
    fn advanced(&self, entries: u64) {
        self.progress.bytes.fetch_add(entries, Ordering::Relaxed);
    }
}
