//! A job's scratch directory, and the removal of those killed jobs left
//! behind: scratch directories, and the temporary files outputs are written
//! to before they are renamed into place.
//!
//! A bottom floor of the crate: the jobs (and the cluster's tasks) use it, it
//! uses only the error type.
//!
//! A job that ends in any other way than SIGKILL (or a lost node) removes its
//! scratch directory; a killed one cannot. So each scratch directory says whose
//! it is, twice: its name ends with the owner's process ID
//! (`PREFIX-PID-RANDOM`), and it holds a file, `dupgram.lock`, that the owner
//! keeps locked (`flock`) for as long as it lives. The kernel releases the
//! lock when the owner dies, however it dies. A directory is a leftover only
//! when both say the owner is gone: the lock can be taken, and no process has
//! that ID (a process that reused the ID keeps the leftover, never the other
//! way round). A directory without the lock file is never removed: it may be
//! someone else's that happens to look like ours, and the only scratch
//! directory without one is an empty one whose owner died between creating it
//! and its lock file.
//!
//! An output's temporary file (see [`crate::output::temp_beside`]) is named
//! `.{NAME}.{PID}-{RANDOM}.tmp` beside the output `NAME`, and its writer keeps
//! the file itself locked: the same two witnesses, the same rule
//! ([`sweep_files`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::PipelineError;

/// The lock file inside every scratch directory.
const LOCK: &str = "dupgram.lock";

/// A job's scratch directory: removed (with everything in it) when dropped,
/// its lock held until then.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
    /// Held, not read: the open, locked file is what tells other runs this
    /// directory is in use.
    _lock: File,
}

impl Scratch {
    /// A new scratch directory in `parent`, named `{prefix}-{pid}-{random}`, locked.
    pub fn create(parent: &Path, prefix: &str) -> Result<Scratch, PipelineError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}-{}-", std::process::id()))
            .rand_bytes(6)
            .tempdir_in(parent)
            .map_err(|e| PipelineError::io(parent, e))?;
        let lock_path = dir.path().join(LOCK);
        let lock = File::create(&lock_path).map_err(|e| PipelineError::io(&lock_path, e))?;
        // Waits, not tries: another run's sweeper may hold the lock for the
        // moment it takes to find that this process is alive, and then lets
        // go (a try here failed a test job with "operation would block").
        lock.lock().map_err(|e| PipelineError::io(&lock_path, e))?;
        Ok(Scratch { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the directory (without its lock file), for a caller that
    /// renames it into place; the lock is released.
    pub fn keep(self) -> Result<PathBuf, PipelineError> {
        let lock_path = self.dir.path().join(LOCK);
        match std::fs::remove_file(&lock_path) {
            Ok(()) => {}
            // The caller cleared the directory of what it does not keep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(PipelineError::io(&lock_path, e)),
        }
        Ok(self.dir.keep())
    }
}

/// What [`sweep`] or [`sweep_files`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub dirs: usize,
    pub files: usize,
    pub bytes: u64,
}

impl Swept {
    /// The line that tells the user, or `None` when nothing was removed.
    pub fn notice(&self, parent: &Path) -> Option<String> {
        let plural = |n: usize, one: &str, many: &str| format!("{n} temporary {}", if n == 1 { one } else { many });
        let what = match (self.dirs, self.files) {
            (0, 0) => return None,
            (dirs, 0) => plural(dirs, "directory", "directories"),
            (0, files) => plural(files, "file", "files"),
            (dirs, files) => {
                format!("{} and {}", plural(dirs, "directory", "directories"), plural(files, "file", "files"))
            }
        };
        Some(format!(
            "removed {what} ({}) left in {} by killed dupgram jobs",
            crate::memory::human_bytes(self.bytes),
            parent.display()
        ))
    }
}

/// Removes the scratch directories named `{prefix}-{pid}-{random}` in
/// `parent` whose owner is dead: the lock can be taken and no process has
/// that ID. Directories of live jobs, and anything else, are left alone.
pub fn sweep(parent: &Path, prefix: &str) -> Result<Swept, PipelineError> {
    sweep_leftovers(parent, Leftover::Dir, |name| owner(name, prefix))
}

/// Removes the temporary files of the output `name` in `dir`
/// (`.{name}.{pid}-{random}.tmp`) whose owner is dead: the file's lock can
/// be taken and no process has that ID. Those of live jobs, and anything
/// else, are left alone.
pub fn sweep_files(dir: &Path, name: &str) -> Result<Swept, PipelineError> {
    sweep_leftovers(dir, Leftover::File, |file| file_owner(file, name))
}

/// What a sweep removes: scratch directories, or outputs' temporary files.
#[derive(Debug, Clone, Copy)]
enum Leftover {
    Dir,
    File,
}

impl Leftover {
    fn is(self, t: std::fs::FileType) -> bool {
        match self {
            Leftover::Dir => t.is_dir(),
            Leftover::File => t.is_file(),
        }
    }

    /// The file whose lock the owner holds.
    fn lock_of(self, path: &Path) -> PathBuf {
        match self {
            Leftover::Dir => path.join(LOCK),
            Leftover::File => path.to_owned(),
        }
    }

    fn remove(self, path: &Path) -> io::Result<()> {
        match self {
            Leftover::Dir => std::fs::remove_dir_all(path),
            Leftover::File => std::fs::remove_file(path),
        }
    }
}

/// Removes the leftovers of `kind` in `parent` whose name gives an owner
/// (`owner`) that is dead: the lock is free and no process has that ID.
fn sweep_leftovers(parent: &Path, kind: Leftover, owner: impl Fn(&str) -> Option<u32>) -> Result<Swept, PipelineError> {
    let mut swept = Swept::default();
    let entries = std::fs::read_dir(parent).map_err(|e| PipelineError::io(parent, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(&owner) else { continue };
        if !entry.file_type().is_ok_and(|t| kind.is(t)) {
            continue;
        }
        let path = entry.path();
        // Taken before the ID is checked and held while the leftover is removed.
        let Some(_lock) = take_lock(&kind.lock_of(&path))? else { continue };
        if process_alive(pid) {
            continue;
        }
        let bytes = size_of(&path);
        match kind.remove(&path) {
            Ok(()) => {
                match kind {
                    Leftover::Dir => swept.dirs += 1,
                    Leftover::File => swept.files += 1,
                }
                swept.bytes += bytes;
            }
            // Another run swept it first, or it is another user's (a shared /tmp).
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied) => {}
            Err(e) => return Err(PipelineError::io(&path, e)),
        }
    }
    Ok(swept)
}

/// The owner's process ID, if `file` is a temporary file of the output `name`.
fn file_owner(file: &str, name: &str) -> Option<u32> {
    let rest = file.strip_prefix('.')?.strip_prefix(name)?.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (pid, random) = rest.split_once('-')?;
    let named = !random.is_empty() && random.chars().all(|c| c.is_ascii_alphanumeric());
    (named && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.parse().ok()).flatten()
}

/// The owner's process ID, if `name` is a scratch directory name of `prefix`.
fn owner(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let (rest, random) = rest.rsplit_once('-')?;
    let pid = rest.rsplit('-').next()?;
    (!random.is_empty() && random.chars().all(|c| c.is_ascii_alphanumeric()) && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// `Some(file)` when the lock file `path` was free and is now locked by
/// us; `None` when a live owner holds it, or there is no such file.
fn take_lock(path: &Path) -> Result<Option<File>, PipelineError> {
    let file = match File::open(path) {
        Ok(file) => file,
        // Removed by another sweeper, or never a leftover of ours.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PipelineError::io(path, e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(PipelineError::io(path, e)),
    }
}

/// Whether a process with this ID exists (on this machine).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        // 0 and negative IDs name process groups, not a process.
        return true;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that the
    // process exists and may be signalled. No memory is passed or shared.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    // EPERM: it exists but belongs to someone else.
    found || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Bytes of the file, or of the files under the directory (what removing
/// it frees, near enough).
fn size_of(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return std::fs::metadata(path).map_or(0, |m| if m.is_file() { m.len() } else { 0 });
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => size_of(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner() {
        assert_eq!(owner("dupgram-ngrams-1234-aB3xZ9", "dupgram-ngrams"), Some(1234));
        assert_eq!(owner("map-0003.tmp-77-q1w2e3", "map-0003.tmp"), Some(77));
        // A prefix covers the longer ones that start with it and a dash.
        assert_eq!(owner("dupgram-ngrams-1234-aB3xZ9", "dupgram"), Some(1234));
        assert_eq!(owner("dupgram-pairsX-12-ab", "dupgram-pairs"), None);
        assert_eq!(owner("dupgram-ngrams-abc-aB3xZ9", "dupgram-ngrams"), None);
        assert_eq!(owner("dupgram-ngrams-12-", "dupgram-ngrams"), None);
        assert_eq!(owner("dupgram-ngrams-12", "dupgram-ngrams"), None);
        assert_eq!(owner("other-12-ab", "dupgram"), None);
    }

    #[test]
    fn a_scratch_directory_is_named_locked_and_removed() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path(), "dupgram-test").unwrap();
        let name = scratch.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(owner(&name, "dupgram-test"), Some(std::process::id()));
        std::fs::write(scratch.path().join("run"), b"12345").unwrap();
        // Its owner is alive and holds the lock: left alone.
        assert_eq!(sweep(parent.path(), "dupgram-test").unwrap(), Swept::default());
        assert!(scratch.path().is_dir());
        let path = scratch.path().to_owned();
        drop(scratch);
        assert!(!path.exists());
    }

    /// Another run sweeping the same parent takes each lock it finds free for
    /// as long as it looks the owner up: a scratch directory made meanwhile
    /// waits for it, and is never taken for a leftover. (The window is a few
    /// microseconds: with a `try_lock` this failed now and then.)
    #[test]
    fn scratch_directories_are_made_while_another_run_sweeps() {
        let parent = tempfile::tempdir().unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let sweeper = scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    assert_eq!(sweep(parent.path(), "dupgram-test").unwrap(), Swept::default());
                }
            });
            let made: Result<Vec<()>, PipelineError> =
                (0..1000).map(|_| Scratch::create(parent.path(), "dupgram-test").map(drop)).collect();
            // Stopped before anything is asserted: a failure must not leave it sweeping.
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            sweeper.join().unwrap();
            made.unwrap();
        });
    }

    /// The ID of a process that has exited: free (until reused, which would
    /// only keep its leftovers).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        dead
    }

    #[test]
    fn leftovers_of_dead_processes_are_removed_and_others_kept() {
        let parent = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let leftover = parent.path().join(format!("dupgram-test-{dead}-abc123"));
        std::fs::create_dir_all(leftover.join("runs")).unwrap();
        std::fs::write(leftover.join(LOCK), b"").unwrap();
        std::fs::write(leftover.join("runs/r1"), vec![0u8; 1000]).unwrap();
        // No lock file (killed before it made one, or not ours at all): kept.
        let unlocked = parent.path().join(format!("dupgram-test-{dead}-def456"));
        std::fs::create_dir(&unlocked).unwrap();
        // Lock free, but the ID is a live process's (ours): kept.
        let live_id = parent.path().join(format!("dupgram-test-{}-ghi789", std::process::id()));
        std::fs::create_dir(&live_id).unwrap();
        std::fs::write(live_id.join(LOCK), b"").unwrap();
        // Lock held (by this process, through another open file): kept.
        let held = parent.path().join(format!("dupgram-test-{dead}-jkl012"));
        std::fs::create_dir(&held).unwrap();
        let holder = File::create(held.join(LOCK)).unwrap();
        holder.lock().unwrap();
        // Not a scratch directory of this prefix: kept.
        let other = parent.path().join(format!("dupgram-other-{dead}-abc123"));
        std::fs::create_dir(&other).unwrap();

        let swept = sweep(parent.path(), "dupgram-test").unwrap();
        assert_eq!(swept, Swept { dirs: 1, files: 0, bytes: 1000 });
        assert!(!leftover.exists());
        assert!(unlocked.is_dir() && live_id.is_dir() && held.is_dir() && other.is_dir());
        let notice = swept.notice(parent.path()).unwrap();
        assert!(notice.starts_with("removed 1 temporary directory (1000 B) left in "), "{notice}");
        let two = Swept { dirs: 2, files: 0, bytes: 3 << 20 }.notice(parent.path()).unwrap();
        assert!(two.starts_with("removed 2 temporary directories (3.0 MiB) left in "), "{two}");
        assert_eq!(Swept::default().notice(parent.path()), None);
    }

    #[test]
    fn leftover_output_files_of_dead_processes_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let at = |name: &str| dir.path().join(name);
        let leftover = at(&format!(".out.tsv.{dead}-abc123.tmp"));
        std::fs::write(&leftover, vec![0u8; 1000]).unwrap();
        // The next writer of the same output removes it.
        let written = crate::output::temp_beside(dir.path(), "out.tsv").unwrap();
        assert!(!leftover.exists());
        std::fs::write(&leftover, vec![0u8; 1000]).unwrap();
        // A live writer's (this process's, and one whose lock is held): kept.
        let held = at(&format!(".out.tsv.{dead}-def456.tmp"));
        let holder = File::create(&held).unwrap();
        holder.lock().unwrap();
        // Another output's, and names that are not a temporary file's: kept.
        let others = [format!(".other.tsv.{dead}-abc123.tmp"), ".out.tsv.tmp".into(), format!(".out.tsv.{dead}-.tmp")];
        for other in &others {
            std::fs::write(at(other), b"x").unwrap();
        }

        let swept = sweep_files(dir.path(), "out.tsv").unwrap();
        assert_eq!(swept, Swept { dirs: 0, files: 1, bytes: 1000 });
        assert!(!leftover.exists());
        assert!(written.path().is_file() && held.is_file() && others.iter().all(|o| at(o).is_file()));
        let name = written.path().file_name().unwrap().to_str().unwrap();
        assert_eq!(file_owner(name, "out.tsv"), Some(std::process::id()));
        let notice = swept.notice(dir.path()).unwrap();
        assert!(notice.starts_with("removed 1 temporary file (1000 B) left in "), "{notice}");
        let both = Swept { dirs: 1, files: 2, bytes: 0 }.notice(dir.path()).unwrap();
        assert!(both.starts_with("removed 1 temporary directory and 2 temporary files (0 B)"), "{both}");
    }

    #[test]
    fn kept_directories_lose_their_lock_file() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path(), "t").unwrap();
        std::fs::write(scratch.path().join("out"), b"x").unwrap();
        let kept = scratch.keep().unwrap();
        let names: Vec<_> = std::fs::read_dir(&kept).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["out"]);
    }
}
