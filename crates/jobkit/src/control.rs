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
}

impl dupgram_merge::Interrupt for Control {
    fn interrupted(&self) -> bool {
        Control::interrupted(self)
    }
    fn advanced(&self, entries: u64) {
        self.progress.bytes.fetch_add(entries, Ordering::Relaxed);
    }
}
