//! Giving a file's blocks back to the disk as it is read.
//!
//! Spill files (runs, the vocabulary's record runs) are written once, read
//! once by a merge and removed after it. Until they are removed, a merge's
//! output sits on disk beside all of its inputs, which doubles the peak
//! temporary disk of a job that merges in passes. A [`Reclaim`] punches a
//! hole behind the reader instead (`fallocate(PUNCH_HOLE | KEEP_SIZE)`), a
//! step at a time, so the bytes already read no longer hold blocks.
//!
//! Only a file with a single name is punched: a run that is also linked
//! elsewhere (the Slurm stages hard-link the runs a task keeps for a rerun
//! into the merge's scratch directory) shares its blocks with that other
//! name, which must stay whole. Where the platform or the file system
//! cannot punch holes, nothing changes: the file keeps its blocks until it
//! is removed.

use std::fs::File;
use std::path::Path;

/// Blocks are given back once this much more of a file is read: small, as a
/// merge may read hundreds of files of a few MiB each.
pub const RELEASE_STEP: u64 = 1 << 20;

/// Gives back the blocks of a file that is read once, front to back, and
/// removed after.
#[derive(Debug)]
pub struct Reclaim {
    file: File,
    released: u64,
}

impl Reclaim {
    /// Opens `path` for punching, or `None` where its blocks must stay: it
    /// has another name, or it cannot be opened for writing.
    pub fn open(path: &Path) -> Option<Reclaim> {
        let file = std::fs::OpenOptions::new().write(true).open(path).ok()?;
        sole_name(&file).then_some(Reclaim { file, released: 0 })
    }

    /// The bytes before `read` have been read and will not be read again:
    /// their whole 4 KiB blocks are given back, a [`RELEASE_STEP`] at a time.
    /// Returns false once the file system has refused (nothing more is tried).
    pub fn release(&mut self, read: u64) -> bool {
        let upto = read & !4095;
        if upto < self.released + RELEASE_STEP {
            return true;
        }
        let done = punch_hole(&self.file, self.released, upto - self.released);
        if done {
            self.released = upto;
        }
        done
    }
}

/// Gives `from` a second name, `to` (its bytes copied where the file system
/// cannot link): a merge may read and remove `to`, and since a file of two
/// names is never punched ([`Reclaim::open`]), `from` stays whole, for a
/// task that is run again. The error is the copy's.
pub fn second_name(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

/// Whether `file` has exactly one name.
#[cfg(unix)]
fn sole_name(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.nlink() == 1)
}

#[cfg(not(unix))]
fn sole_name(_file: &File) -> bool {
    false
}

/// Frees the blocks of `file` in `[offset, offset + len)`, its length kept;
/// false where the file system or the platform cannot.
#[cfg(target_os = "linux")]
pub fn punch_hole(file: &File, offset: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else { return false };
    // SAFETY: fallocate takes a file descriptor and three integers and
    // touches no memory of this process; the descriptor is `file`'s, open
    // for writing, and stays open for the call (`file` is borrowed). Its
    // only effect is on the file's blocks in the range, which every caller
    // has read and will not read again.
    let done = unsafe {
        libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, offset, len)
    };
    done == 0
}

/// Whether files in `dir` can have holes punched: a probe file is written,
/// punched and removed.
pub fn can_punch_holes(dir: &Path) -> bool {
    let probe = dir.join(".dupgram-punch-probe");
    let punched = std::fs::write(&probe, vec![1u8; 1 << 16])
        .and_then(|()| std::fs::OpenOptions::new().write(true).open(&probe))
        .is_ok_and(|file| punch_hole(&file, 0, 1 << 16));
    let _ = std::fs::remove_file(&probe);
    punched
}

#[cfg(not(target_os = "linux"))]
pub fn punch_hole(_file: &File, _offset: u64, _len: u64) -> bool {
    false
}
