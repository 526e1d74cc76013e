//! Test and benchmark support: a deterministic corpus generator with
//! planted duplication, and reference implementations simple enough to
//! trust, which the engine is checked against.

pub mod generate;
pub mod naive;

pub use generate::{Corpus, CorpusSpec, Doc, SplitMix};
pub use naive::{NaiveOptions, NaivePairOptions, NaiveScores, naive_every_pair, naive_ngrams, naive_pairs};

/// A hasher for keys that are already well-mixed 64-bit hashes (n-gram
/// fingerprints): it hashes them as they are. The baselines' hash tables use it.
#[derive(Default)]
pub struct Identity(u64);

impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Runs `job` while another thread writes `after` over the file at `path`
/// as soon as `started` says the job has begun (its first phase shown,
/// say): a file changed while a job reads it. The bytes are written in
/// place, from the start, and the file is not cut first, so a reading
/// meanwhile meets old bytes or new ones, never an empty file. Returns the
/// job's result, or none when the job ended before the file was written (a
/// run that proves nothing, for the caller to make again); the file is then
/// left as it was.
pub fn write_during<T>(
    path: &std::path::Path,
    after: &[u8],
    started: impl Fn() -> bool + Sync,
    job: impl FnOnce() -> T,
) -> Option<T> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            // A job that ends before it shows it began (it failed at once) is not waited for.
            while !started() && !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            if done.load(Ordering::SeqCst) {
                return false;
            }
            let mut file = std::fs::OpenOptions::new().write(true).open(path).expect("the file opened");
            std::io::Write::write_all(&mut file, after).expect("the file written to");
            true
        });
        let result = job();
        done.store(true, Ordering::SeqCst);
        writer.join().expect("the writer thread").then_some(result)
    })
}

#[cfg(test)]
mod tests {
    use super::write_during;

    #[test]
    fn a_job_that_never_shows_it_began_is_not_waited_for_and_its_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, b"before").unwrap();
        assert_eq!(write_during(&path, b"AFTER!", || false, || 7), None);
        assert_eq!(std::fs::read(&path).unwrap(), b"before");
        // A job that waits for the write sees it, and its result comes back.
        let sees_it = || while std::fs::read(&path).unwrap() != b"AFTER!" {};
        assert_eq!(write_during(&path, b"AFTER!", || true, sees_it), Some(()));
        assert_eq!(std::fs::read(&path).unwrap(), b"AFTER!");
    }
}
