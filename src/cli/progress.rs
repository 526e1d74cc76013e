//! A progress bar on standard error, when it is a terminal.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dupgram_pipeline::Control;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Draws the job's progress until dropped.
pub struct ProgressView {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProgressView {
    /// Starts drawing, unless `quiet` or standard error is not a terminal.
    pub fn start(control: &Control, quiet: bool) -> ProgressView {
        let done = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return ProgressView { done, thread: None };
        }
        let progress = control.progress.clone();
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(8));
            let mut phase = String::new();
            while !stop.load(Ordering::Relaxed) {
                let now = progress.phase();
                if now != phase {
                    phase = now;
                    let unit = if phase == "merging" {
                        "{human_pos}/{human_len} n-grams"
                    } else {
                        "{bytes}/{total_bytes} ({bytes_per_sec})"
                    };
                    let style =
                        format!("{{spinner}} {{prefix:>9}} [{{elapsed_precise}}] {{wide_bar}} {unit} eta {{eta}}");
                    bar.set_style(
                        ProgressStyle::with_template(&style).unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    bar.set_prefix(phase.clone());
                    bar.reset();
                }
                let total = progress.total.load(Ordering::Relaxed);
                bar.set_length(if total == 0 { u64::MAX } else { total });
                bar.set_position(progress.bytes.load(Ordering::Relaxed).min(if total == 0 { u64::MAX } else { total }));
                std::thread::sleep(Duration::from_millis(120));
            }
            bar.finish_and_clear();
        });
        ProgressView { done, thread: Some(thread) }
    }
}

impl Drop for ProgressView {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
