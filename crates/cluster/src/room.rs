//! The memory that what new text shares with older text may fill, during
//! an update: shared by the threads that gather it.

use std::sync::atomic::{AtomicU64, Ordering};

use dupgram_pipeline::{PipelineError, human_bytes};

/// The memory a report on what new and older text share may fill: a
/// quarter of `--memory`.
pub(crate) struct SharedRoom {
    used: AtomicU64,
    budget: u64,
    /// The option whose report needs the room.
    option: &'static str,
}

impl SharedRoom {
    pub(crate) fn new(budget: u64, option: &'static str) -> Self {
        SharedRoom { used: AtomicU64::new(0), budget, option }
    }

    pub(crate) fn take(&self, bytes: u64) -> Result<(), PipelineError> {
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if used > self.budget / 4 {
            return Err(PipelineError::Memory {
                budget: human_bytes(self.budget),
                what: format!(
                    "what the new documents share with older text does not fit a quarter of it; \
                     add fewer documents at a time, or leave out {}",
                    self.option
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_ngrams_stay_within_a_quarter_of_the_budget() {
        let room = SharedRoom::new(400, "--documents");
        room.take(60).unwrap();
        room.take(40).unwrap();
        let err = room.take(1).unwrap_err().to_string();
        assert!(err.contains("--memory 400 B") && err.contains("--documents"), "{err}");
    }
}
