//! What a job shares with whoever runs it: a stop flag and its progress.
//!
//! The bottom floor of the crate: every job module uses it, it uses none.

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

    pub fn start(&self, phase: &str, total: Option<u64>) {
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
    /// Set to stop the job (Ctrl-C); it then fails with [`PipelineError::Interrupted`](crate::PipelineError::Interrupted)
    /// after removing its temporary files.
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
}

impl Control {
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Begins a pass of the job: shows `phase` (with `total` units to go,
    /// when known) and gives the memory the passes before freed back to the
    /// system first. Every pass sizes its buffers from the plan, which
    /// counts what earlier passes freed as free, but glibc keeps small
    /// freed blocks resident in its arenas until it is asked to trim them:
    /// 361M tokens with 10M distinct words at `--memory 128M` held 24 MB of
    /// them under the count's full chunks, and passed the budget by 1 %.
    pub fn start_pass(&self, phase: &str, total: Option<u64>) {
        crate::memory::return_freed_memory();
        self.progress.start(phase, total);
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
