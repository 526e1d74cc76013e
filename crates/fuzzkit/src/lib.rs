//! Fuzz tests of dupgram's file formats and corpus readers that run inside
//! `cargo test`, on stable Rust, deterministically.
//!
//! A [`Fuzz`] takes a few valid files (*seeds*) written by the format's own
//! writer and a decoder, and feeds the decoder thousands of mutated copies
//! ([`mutate`]: flipped bits, truncations, splices of two files, huge length
//! fields, numbers in text made huge, random bytes), from a fixed seed so every run tries the same
//! cases. Each case must give
//!
//! * no panic — the driver reports the case and keeps its input;
//! * no hang — a case still running after a generous limit (60 s, where a
//!   case takes well under a millisecond) fails the test rather than
//!   stalling it;
//! * no allocation beyond a limit — [`TrackingAlloc`] counts the bytes the
//!   decoding thread holds at its peak;
//! * an error that names the file — its `Display` contains the path;
//! * for formats with checksums, nothing read wrong: a file damaged in
//!   place (not spliced) is refused or read exactly as before;
//! * for formats any bytes are valid in (plain text), no error at all.
//!
//! Formats with checksums are also fuzzed *sealed*: the mutation is applied
//! to the content and the checksums recomputed, so the decoder's own
//! checks, not only the checksum, meet the damage.
//!
//! Inputs that once failed are kept as files and replayed on every run
//! ([`Fuzz::regressions`]). `DUPGRAM_FUZZ_CASES` sets the number of cases
//! per target (to run more by hand); failing inputs are copied to
//! `DUPGRAM_FUZZ_FAILURES` (default: `dupgram-fuzz-failures` in the
//! temporary directory).

mod alloc;
mod mutate;
pub mod samples;

pub use alloc::{TrackingAlloc, is_installed, measure};
pub use mutate::{Mutant, Mutation, Rng, apply, mutate};

use std::collections::BTreeMap;
use std::fmt::{Debug, Display};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

/// The variable that sets the number of cases per target.
pub const CASES_VAR: &str = "DUPGRAM_FUZZ_CASES";

type Transform = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// One fuzz target: seeds, a file name, and the checks its decoder must pass.
pub struct Fuzz {
    name: String,
    file_name: String,
    seeds: Vec<Vec<u8>>,
    cases: usize,
    checksummed: bool,
    always_valid: bool,
    seal: Option<(Transform, Transform)>,
    alloc_limit: usize,
    regressions: Option<PathBuf>,
    hang_limit: Duration,
}

/// What a run of a target saw.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: usize,
    /// Cases the decoder accepted / refused.
    pub accepted: usize,
    pub refused: usize,
    /// Regression files replayed.
    pub replayed: usize,
    /// The largest peak allocation of any case.
    pub peak_bytes: usize,
    /// Cases by their first mutation: (accepted, refused).
    pub by_mutation: BTreeMap<Mutation, (usize, usize)>,
}

impl Fuzz {
    /// A target called `name` (it seeds the generator), decoding files
    /// called `file_name` (formats may be told by the extension).
    pub fn new(name: &str, file_name: &str, seeds: Vec<Vec<u8>>) -> Fuzz {
        assert!(!seeds.is_empty(), "{name}: a fuzz target needs seeds");
        Fuzz {
            name: name.to_owned(),
            file_name: file_name.to_owned(),
            seeds,
            cases: 2000,
            checksummed: false,
            always_valid: false,
            seal: None,
            alloc_limit: 64 << 20,
            regressions: None,
            hang_limit: Duration::from_secs(60),
        }
    }

    /// Cases to run unless `DUPGRAM_FUZZ_CASES` says otherwise.
    pub fn cases(mut self, cases: usize) -> Fuzz {
        self.cases = cases;
        self
    }

    /// The format has checksums: a file damaged in place must be refused or read as it was.
    pub fn checksummed(mut self) -> Fuzz {
        self.checksummed = true;
        self
    }

    /// Every file is valid in the format (plain text): any error is a failure.
    pub fn always_valid(mut self) -> Fuzz {
        self.always_valid = true;
        self
    }

    /// Half the cases mutate `open(seed)` and decode `close(mutated)`:
    /// `open` takes a file to its content, `close` writes content back as
    /// a file with correct checksums.
    pub fn sealed(
        mut self,
        open: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static,
        close: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static,
    ) -> Fuzz {
        self.seal = Some((Arc::new(open), Arc::new(close)));
        self
    }

    /// The most bytes a case may hold at once (default 64 MiB).
    pub fn alloc_limit(mut self, bytes: usize) -> Fuzz {
        self.alloc_limit = bytes;
        self
    }

    /// A directory of inputs that once failed, each replayed before the cases.
    pub fn regressions(mut self, dir: impl Into<PathBuf>) -> Fuzz {
        self.regressions = Some(dir.into());
        self
    }

    /// How long one case may run before it counts as a hang (default 60 s).
    pub fn hang_limit(mut self, limit: Duration) -> Fuzz {
        self.hang_limit = limit;
        self
    }

    /// Runs every case through `decode`, which reads the file at the path
    /// it is given; panics, naming the case and keeping its input, on the
    /// first one that breaks a rule.
    pub fn run<S, E, D>(self, decode: D) -> Report
    where
        S: PartialEq + Debug + 'static,
        E: Display + 'static,
        D: Fn(&Path) -> Result<S, E> + Send + Sync + 'static,
    {
        assert!(is_installed(), "{}: install dupgram_fuzzkit::TrackingAlloc as the #[global_allocator]", self.name);
        let cases = std::env::var(CASES_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(self.cases);
        let dir = scratch_dir(&self.name);
        let input = dir.join(&self.file_name);
        let (tx, rx) = mpsc::channel::<Started>();
        let hang_limit = self.hang_limit;
        let name = self.name.clone();
        let worker_input = input.clone();
        let worker = std::thread::Builder::new()
            .name(format!("fuzz {}", self.name))
            .spawn(move || self.work(cases, &worker_input, &decode, &tx))
            .expect("a thread for the fuzz cases");
        let mut last = Started { what: "opening".into(), bytes: Vec::new() };
        loop {
            match rx.recv_timeout(hang_limit) {
                Ok(started) => last = started,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let kept = keep_failure(&name, &last.bytes);
                    let _ = std::fs::remove_dir_all(&dir);
                    panic!("{name}: {} still running after {hang_limit:?}: a hang; input kept at {kept}", last.what);
                }
            }
        }
        let joined = worker.join();
        // The failing input, if any, is kept elsewhere (`keep_failure`): the scratch directory goes either way.
        let _ = std::fs::remove_dir_all(&dir);
        match joined {
            Ok(report) => {
                eprintln!(
                    "fuzz {name}: {} cases ({} accepted, {} refused), {} regressions replayed, peak {} bytes",
                    report.cases, report.accepted, report.refused, report.replayed, report.peak_bytes
                );
                report
            }
            Err(payload) => {
                let why = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let kept = keep_failure(&name, &last.bytes);
                panic!("{name}: {}: {why}\ninput kept at {kept}", last.what);
            }
        }
    }

    /// The worker: seeds, regressions, then the cases.
    fn work<S, E, D>(self, cases: usize, input: &Path, decode: &D, started: &mpsc::Sender<Started>) -> Report
    where
        S: PartialEq + Debug,
        E: Display,
        D: Fn(&Path) -> Result<S, E>,
    {
        let mut report = Report::default();
        let mut originals = Vec::new();
        for (i, seed) in self.seeds.iter().enumerate() {
            let _ = started.send(Started { what: format!("seed {i}"), bytes: seed.clone() });
            match self.try_case(input, seed, decode, &mut report) {
                Ok(s) => originals.push(s),
                Err(e) => panic!("a valid file is refused: {e}"),
            }
        }
        for file in self.regression_files() {
            let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let _ = started.send(Started { what: format!("regression {}", file.display()), bytes: bytes.clone() });
            let _ = self.try_case(input, &bytes, decode, &mut report);
            report.replayed += 1;
        }
        let mut rng = Rng::for_name(&self.name);
        let opened: Option<Vec<Vec<u8>>> =
            self.seal.as_ref().map(|(open, _)| self.seeds.iter().map(|s| open(s)).collect());
        for case in 0..cases {
            let sealed = opened.is_some() && rng.chance(2);
            let (bytes, mutant) = match (&opened, &self.seal) {
                (Some(content), Some((_, close))) if sealed => {
                    let m = mutate(&mut rng, content);
                    (close(&m.bytes), m)
                }
                _ => {
                    let m = mutate(&mut rng, &self.seeds);
                    (m.bytes.clone(), m)
                }
            };
            let what = format!(
                "case {case} ({}{:?} of seed {:?})",
                if sealed { "sealed " } else { "" },
                mutant.steps,
                mutant.origin
            );
            let _ = started.send(Started { what, bytes: bytes.clone() });
            let result = self.try_case(input, &bytes, decode, &mut report);
            let tally = report.by_mutation.entry(mutant.steps[0]).or_default();
            match result {
                Ok(got) => {
                    tally.0 += 1;
                    report.accepted += 1;
                    if let (true, false, Some(origin)) = (self.checksummed, sealed, mutant.origin) {
                        assert!(
                            got == originals[origin],
                            "a damaged file was read without an error and differently: {got:?}\nwhere the file held {:?}",
                            originals[origin]
                        );
                    }
                }
                Err(e) => {
                    assert!(!self.always_valid, "a file any bytes make valid was refused: {e}");
                    tally.1 += 1;
                    report.refused += 1;
                }
            }
            report.cases += 1;
        }
        assert!(
            cases == 0 || self.always_valid || report.refused > 0,
            "no mutated file was refused: the decoder reads nothing?"
        );
        report
    }

    /// Writes `bytes` as the input, decodes it, and checks the rules that hold for every input.
    fn try_case<S, E, D>(&self, input: &Path, bytes: &[u8], decode: &D, report: &mut Report) -> Result<S, String>
    where
        E: Display,
        D: Fn(&Path) -> Result<S, E>,
    {
        // A new file each time: replacing a file's contents in place makes
        // ext4 flush it to disk (auto_da_alloc), a thousand times slower.
        let _ = std::fs::remove_file(input);
        std::fs::write(input, bytes).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let (result, peak) = measure(|| decode(input));
        report.peak_bytes = report.peak_bytes.max(peak);
        assert!(
            peak <= self.alloc_limit,
            "held {peak} bytes at once, over the limit of {} for a {}-byte file",
            self.alloc_limit,
            bytes.len()
        );
        result.map_err(|e| {
            let message = e.to_string();
            let path = input.display().to_string();
            assert!(message.contains(&path), "the error does not name the file {path}: {message}");
            message
        })
    }

    fn regression_files(&self) -> Vec<PathBuf> {
        let Some(dir) = &self.regressions else { return Vec::new() };
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => panic!("{}: {e}", dir.display()),
        };
        files.sort();
        files
    }
}

/// What the worker has started on, with its input.
struct Started {
    what: String,
    bytes: Vec<u8>,
}

/// A fresh directory for one target's inputs.
fn scratch_dir(name: &str) -> PathBuf {
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let dir = std::env::temp_dir().join(format!("dupgram-fuzz-{safe}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Copies a failing input where a developer can take it into the regressions.
fn keep_failure(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::var_os("DUPGRAM_FUZZ_FAILURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("dupgram-fuzz-failures"));
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let path = dir.join(format!("{safe}-{:016x}.bin", Rng::for_name(&String::from_utf8_lossy(bytes)).next_u64()));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, bytes)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(nowhere: {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// A toy format: "TOY" and a one-byte length, that many bytes, and an 8-byte checksum.
    fn toy(body: &[u8]) -> Vec<u8> {
        let mut f = b"TOY".to_vec();
        f.push(body.len() as u8);
        f.extend_from_slice(body);
        f.extend_from_slice(&sum(body));
        f
    }

    fn sum(body: &[u8]) -> [u8; 8] {
        Rng::for_name(&format!("{body:?}")).next_u64().to_le_bytes()
    }

    fn read_toy(path: &Path) -> Result<Vec<u8>, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = || format!("{}: not a toy", path.display());
        let len = usize::from(*bytes.get(3).ok_or_else(bad)?);
        if !bytes.starts_with(b"TOY") || bytes.len() != len + 12 {
            return Err(bad());
        }
        let body = &bytes[4..4 + len];
        if sum(body) != bytes[len + 4..] {
            return Err(bad());
        }
        Ok(body.to_vec())
    }

    fn open_toy(file: &[u8]) -> Vec<u8> {
        file[4..file.len() - 8].to_vec()
    }

    fn close_toy(body: &[u8]) -> Vec<u8> {
        toy(&body[..body.len().min(255)])
    }

    fn seeds() -> Vec<Vec<u8>> {
        vec![toy(b"hello"), toy(b"a longer body of bytes")]
    }

    fn failure(f: impl FnOnce()) -> String {
        let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the driver should have failed");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_sound_decoder_passes() {
        let report = Fuzz::new("toy", "in.toy", seeds()).cases(3000).checksummed().run(read_toy);
        assert_eq!(report.cases, 3000);
        assert!(report.accepted > 0 && report.refused > 0, "{report:?}");
        assert_eq!(report.by_mutation.len(), Mutation::ALL.len());
    }

    #[test]
    fn a_panic_is_reported_with_its_case() {
        let why = failure(|| {
            Fuzz::new("toy-panics", "in.toy", seeds()).sealed(open_toy, close_toy).run(|p| {
                let body = read_toy(p)?;
                Ok::<_, String>(body[0])
            });
        });
        assert!(why.contains("case") && why.contains("input kept at"), "{why}");
        let scratch = std::env::temp_dir().join(format!("dupgram-fuzz-toy-panics-{}", std::process::id()));
        assert!(!scratch.exists(), "{} is left behind", scratch.display());
    }

    #[test]
    fn an_error_must_name_the_file() {
        let why = failure(|| {
            Fuzz::new("toy-anonymous", "in.toy", seeds()).run(|p| read_toy(p).map_err(|_| "bad".to_string()));
        });
        assert!(why.contains("does not name the file"), "{why}");
    }

    #[test]
    fn damage_read_as_data_is_caught() {
        let why = failure(|| {
            Fuzz::new("toy-unchecked", "in.toy", seeds()).checksummed().run(|p| {
                let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
                bytes.get(4..).map(<[u8]>::to_vec).ok_or_else(|| format!("{}: short", p.display()))
            });
        });
        assert!(why.contains("read without an error and differently"), "{why}");
    }

    #[test]
    fn a_huge_allocation_is_caught() {
        let why = failure(|| {
            Fuzz::new("toy-greedy", "in.toy", seeds()).sealed(open_toy, close_toy).alloc_limit(1 << 20).run(|p| {
                let body = read_toy(p)?;
                // Trusts a length field: allocates what the first byte says, in MiB.
                Ok::<_, String>(vec![0u8; usize::from(body.first().copied().unwrap_or(0)) << 20].len())
            });
        });
        assert!(why.contains("over the limit"), "{why}");
    }

    #[test]
    fn a_hang_is_caught() {
        static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let why = failure(|| {
            let fuzz = Fuzz::new("toy-hangs", "in.toy", seeds()).sealed(open_toy, close_toy);
            fuzz.hang_limit(Duration::from_millis(500)).run(|p| {
                let body = read_toy(p)?;
                if body.len() > 40 {
                    // A loop that never ends on this input (until the test lets it go).
                    while !STOP.load(std::sync::atomic::Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                Ok::<_, String>(body)
            });
        });
        STOP.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(why.contains("a hang"), "{why}");
        let scratch = std::env::temp_dir().join(format!("dupgram-fuzz-toy-hangs-{}", std::process::id()));
        assert!(!scratch.exists(), "{} is left behind", scratch.display());
    }

    #[test]
    fn sealed_cases_reach_past_the_checksum() {
        let report = Fuzz::new("toy-sealed", "in.toy", seeds()).sealed(open_toy, close_toy).cases(1000).run(read_toy);
        // Every sealed case decodes; about half the cases are sealed.
        assert!(report.accepted > 300, "{report:?}");
    }

    #[test]
    fn regressions_are_replayed() {
        let dir = std::env::temp_dir().join(format!("dupgram-fuzzkit-regressions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("empty-body"), toy(b"")).unwrap();
        let why = failure(|| {
            Fuzz::new("toy-regression", "in.toy", seeds()).regressions(&dir).cases(0).run(|p| {
                let body = read_toy(p)?;
                Ok::<_, String>(body[0])
            });
        });
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(why.contains("regression") && why.contains("empty-body"), "{why}");
    }
}
