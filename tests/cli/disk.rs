//! End-to-end: a full disk under every command, and the leftovers of killed jobs.
//!
//! The full-disk tests mount a small tmpfs, which needs root (CI runs as
//! root); where it cannot be mounted they say so and pass.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{dupgram, generated, leftovers, run, s};

/// A tmpfs mounted on a fresh directory, unmounted when dropped, so a
/// failing test leaves no mount behind.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (and a message) where a tmpfs cannot be mounted.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::piped())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs (needs root): {}",
                    String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("")
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk to the last byte with a file of ours; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            match file.write_all(&block) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        // Whatever a partial write left room for, too.
        while file.write(&[0u8]).is_ok_and(|n| n == 1) {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(self.dir.path()).status().is_ok_and(|s| s.success());
        if !unmounted {
            // Still busy (a child not yet reaped): detach it now, freed when idle.
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

/// The one line a full disk gives, naming the directory that filled.
fn assert_disk_full(code: i32, stderr: &str, dir: &Path) {
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let expected = format!("dupgram: error: {}: No space left on device (os error 28), writing ", dir.display());
    assert!(stderr.starts_with(&expected), "expected {expected:?}…, got {stderr}");
    assert_eq!(stderr.matches("No space left on device").count(), 1, "{stderr}");
}

/// A corpus that spills far more than 256 KiB of runs.
fn corpus(dir: &Path) -> PathBuf {
    let path = dir.join("c.jsonl");
    generated(&path, 300_000, 21, 3000);
    path
}

/// `args` (with `-o` and `--tmp-dir` added) on a full disk, twice: once with
/// the temporary directory on it, once with the output. Each time a one-line
/// error, exit 1, no temporary file left, nothing under the output names.
fn full_disk_for(args: &[&str], output: &str, extra_outputs: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let corpus = corpus(dir.path());
    let with = |out_dir: &Path, tmp: &Path| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend([s(&corpus).to_owned(), "-q".into(), "--tmp-dir".into(), s(tmp).to_owned()]);
        all.extend(["-o".into(), s(&out_dir.join(output)).to_owned()]);
        for (option, name) in extra_outputs.iter().map(|o| o.split_once('=').unwrap()) {
            all.extend([option.to_owned(), s(&out_dir.join(name)).to_owned()]);
        }
        all
    };

    // The temporary directory fills midway through the job.
    let Some(disk) = Tmpfs::mount("256k") else { return };
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let args = with(&out_dir, disk.path());
    let (code, _, stderr) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_disk_full(code, &stderr, disk.path());
    assert_eq!(leftovers(disk.path()), Vec::<PathBuf>::new(), "temporary files removed");
    assert_eq!(leftovers(&out_dir), Vec::<PathBuf>::new(), "nothing written under the output names");
    drop(disk);

    // The output's directory is the full one: the temporary name beside the target.
    let Some(disk) = Tmpfs::mount("1M") else { return };
    let filler = disk.fill();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let args = with(disk.path(), &tmp);
    let (code, _, stderr) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_disk_full(code, &stderr, disk.path());
    assert_eq!(leftovers(disk.path()), [filler], "temporary files removed, nothing under the output names");
    assert_eq!(leftovers(&tmp), Vec::<PathBuf>::new(), "temporary files removed");
}

#[test]
fn ngrams_on_a_full_disk() {
    full_disk_for(&["ngrams", "-n", "5"], "dups.tsv", &[]);
}

#[test]
fn pairs_on_a_full_disk() {
    full_disk_for(&["pairs", "-n", "5"], "pairs.tsv", &["--clusters=clusters.tsv"]);
}

#[test]
fn dedup_on_a_full_disk() {
    full_disk_for(&["dedup", "-n", "5"], "dedup.jsonl", &["--stats-json=dedup.json"]);
}

#[test]
fn stats_on_a_full_disk() {
    full_disk_for(&["stats", "--n", "4..5"], "ngrams.tsv", &["--html=report.html"]);
}

/// Every file under `dir`, recursively, with its size.
fn tree(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut all = Vec::new();
    for path in leftovers(dir) {
        if path.is_dir() {
            all.extend(tree(&path));
        } else {
            all.push((path.clone(), std::fs::metadata(&path).unwrap().len()));
        }
    }
    all.sort();
    all
}

#[test]
fn update_on_a_full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.jsonl");
    generated(&base, 20_000, 3, 300);
    let day = corpus(dir.path());
    // The job's own temporary directory, so no other test's leftovers are reported here.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let plan = |work: &Path| {
        let out = dir.path().join("base.tsv");
        let args = ["slurm", "ngrams", s(&base), "-n", "5", "-o", s(&out), "--workdir", s(work), "--tmp-dir", s(&tmp)];
        let (code, _, stderr) = run(&[&args[..], &["--keep-state", "--local", "-q"]].concat());
        assert_eq!(code, 0, "{stderr}");
    };

    // The work directory (where an update keeps its temporary files) fills.
    let Some(disk) = Tmpfs::mount("4M") else { return };
    let work = disk.path().join("job");
    plan(&work);
    let filler = disk.fill();
    let before = tree(&work);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let (new, all) = (out_dir.join("new.tsv"), out_dir.join("all.tsv"));
    let (code, _, stderr) = run(&["update", "--workdir", s(&work), s(&day), "-o", s(&new), "--all", s(&all), "-q"]);
    assert_disk_full(code, &stderr, &work.join("state"));
    assert_eq!(tree(&work), before, "the state as it was, no temporary files");
    assert_eq!(leftovers(&out_dir), Vec::<PathBuf>::new(), "nothing written under the output names");
    std::fs::remove_file(filler).unwrap();
    drop(disk);

    // The outputs' directory is the full one.
    let Some(disk) = Tmpfs::mount("1M") else { return };
    let filler = disk.fill();
    let work = dir.path().join("job");
    plan(&work);
    let before = tree(&work);
    let (new, all) = (disk.path().join("new.tsv"), disk.path().join("all.tsv"));
    let (code, _, stderr) = run(&["update", "--workdir", s(&work), s(&day), "-o", s(&new), "--all", s(&all), "-q"]);
    assert_disk_full(code, &stderr, disk.path());
    assert_eq!(tree(&work), before, "the state as it was, no temporary files");
    assert_eq!(leftovers(disk.path()), [filler], "temporary files removed, nothing under the output names");
}

/// The first worker's word-ID stream, in an `ngrams` job's scratch directory.
const WORD_STREAM: &str = "words-w0-00000.dgw";

/// A process ID no process can have: above the largest `pid_max` Linux allows (2²²).
const DEAD_PID: u32 = (1 << 22) + 1;

/// Starts `dupgram ngrams -` writing its temporary files in `tmp`, feeds it
/// `text` and keeps its standard input open, so it cannot end; returns once
/// its scratch directory holds a word stream of the lexicon pass.
#[allow(clippy::zombie_processes, reason = "the child is handed to the caller, who waits for it")]
fn job_waiting_for_input(
    tmp: &Path,
    out: &Path,
    text: &[u8],
) -> (std::process::Child, std::process::ChildStdin, PathBuf) {
    let mut child = dupgram()
        .args(["ngrams", "-", "-n", "5", "-q", "-o", s(out), "--tmp-dir", s(tmp)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text).unwrap();
    stdin.flush().unwrap();
    let prefix = format!("dupgram-ngrams-{}-", child.id());
    let started = std::time::Instant::now();
    loop {
        let scratch =
            leftovers(tmp).into_iter().find(|d| d.file_name().unwrap().to_string_lossy().starts_with(&prefix));
        if let Some(scratch) = scratch
            && std::fs::metadata(scratch.join(WORD_STREAM)).is_ok_and(|m| m.len() > 0)
        {
            return (child, stdin, scratch);
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("no scratch directory in {}", tmp.display());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn notice(dirs: &str, bytes: u64, tmp: &Path) -> String {
    format!(
        "dupgram: removed {dirs} ({}) left in {} by killed dupgram jobs",
        dupgram_pipeline::human_bytes(bytes),
        tmp.display()
    )
}

#[test]
fn the_next_run_removes_what_a_killed_job_left() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 20_000, 5, 300);
    let text = std::fs::read(&corpus).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = dir.path().join("dups.tsv");

    let (mut child, stdin, scratch) = job_waiting_for_input(&tmp, &out, &text[..text.len() / 2]);
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    drop(stdin);
    assert_eq!(leftovers(&tmp), std::slice::from_ref(&scratch), "the killed job's directory is left behind");
    assert!(scratch.join("dupgram.lock").is_file() && !out.exists());
    let bytes: u64 = tree(&scratch).iter().map(|(_, len)| len).sum();
    assert!(bytes > 0);
    // And its output's temporary file, opened before any work, named with its process ID.
    let output_temps = || -> Vec<String> {
        let names = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap());
        names.filter(|n| n.starts_with(".dups.tsv.") && n.ends_with(".tmp")).collect()
    };
    let left = output_temps();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(&format!(".dups.tsv.{}-", child.id())), "{left:?}");
    let file_bytes = std::fs::metadata(dir.path().join(&left[0])).unwrap().len();

    // The next run removes both and says so, a line each: the directory
    // from the temporary directory, the file from beside the output.
    let (code, _, stderr) = run(&["ngrams", s(&corpus), "-n", "5", "-q", "-o", s(&out), "--tmp-dir", s(&tmp)]);
    assert_eq!(code, 0, "{stderr}");
    let file_notice = format!(
        "dupgram: removed 1 temporary file ({}) left in {} by killed dupgram jobs",
        dupgram_pipeline::human_bytes(file_bytes),
        dir.path().display()
    );
    assert_eq!(stderr, format!("{}\n{file_notice}\n", notice("1 temporary directory", bytes, &tmp)));
    assert_eq!(leftovers(&tmp), Vec::<PathBuf>::new());
    assert_eq!(output_temps(), Vec::<String>::new());
    assert!(out.is_file());
    // Nothing left: nothing said.
    let (code, _, stderr) = run(&["pairs", s(&corpus), "-n", "5", "-q", "-o", s(&out), "--tmp-dir", s(&tmp)]);
    assert_eq!((code, stderr.as_str()), (0, ""));
}

#[test]
fn a_running_jobs_directory_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 20_000, 6, 300);
    let text = std::fs::read(&corpus).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let first_out = dir.path().join("first.tsv");
    let (mut first, mut stdin, scratch) = job_waiting_for_input(&tmp, &first_out, &text[..text.len() / 2]);

    // A directory that looks like a dead process's but whose lock is the
    // running job's (a hard link: the same file, so the same lock).
    let fake = tmp.join(format!("dupgram-ngrams-{DEAD_PID}-abc123"));
    std::fs::create_dir(&fake).unwrap();
    std::fs::hard_link(scratch.join("dupgram.lock"), fake.join("dupgram.lock")).unwrap();
    std::fs::write(fake.join("run.dgr"), b"12345").unwrap();

    for command in ["ngrams", "pairs", "dedup"] {
        let out = dir.path().join(format!("{command}.out"));
        let (code, _, stderr) = run(&[command, s(&corpus), "-n", "5", "-q", "-o", s(&out), "--tmp-dir", s(&tmp)]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{command}");
        assert!(scratch.join(WORD_STREAM).is_file(), "{command} left the running job's directory alone");
        assert!(fake.join("run.dgr").is_file(), "{command} left a directory whose lock is held alone");
    }

    // The job goes on undisturbed and ends well.
    stdin.write_all(&text[text.len() / 2..]).unwrap();
    drop(stdin);
    let status = first.wait().unwrap();
    assert!(status.success());
    let (code, expect, stderr) = run(&["ngrams", s(&corpus), "-n", "5", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(&first_out).unwrap(), expect);
    assert!(!scratch.exists());

    // Its lock released and no process of that ID: now a leftover.
    let (code, _, stderr) =
        run(&["dedup", s(&corpus), "-n", "5", "-q", "-o", s(&dir.path().join("d")), "--tmp-dir", s(&tmp)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, format!("{}\n", notice("1 temporary directory", 5, &tmp)));
    assert_eq!(leftovers(&tmp), Vec::<PathBuf>::new());
}
