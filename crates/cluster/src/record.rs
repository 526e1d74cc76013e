//! The files of a work directory: JSON under a one-line header.
//!
//! ```text
//! {"magic":"dupgram-workdir","version":1,"xxh3":"<16 hex digits>"}\n
//! <the body, JSON>
//! ```
//!
//! The checksum is XXH3-64 of the body's bytes as stored, so a torn or
//! edited file is refused rather than trusted. Files are written under a
//! temporary name and renamed, so a reader sees a whole file or none; the
//! tasks' scratch directories are made here too.

use std::path::Path;

use dupgram_pipeline::scratch::{self, Scratch};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::ClusterError;

/// A scratch directory named `prefix` in `parent`, after removing the
/// leftovers of killed runs by the rule of every dupgram job (their owner is
/// dead: the lock is free and the process is gone; a run still at work,
/// here or on another node whose locks this filesystem shares, keeps its
/// own), and saying so on standard error, the task's log.
pub(crate) fn fresh_scratch(parent: &Path, prefix: &str) -> Result<Scratch, ClusterError> {
    if let Some(notice) = scratch::sweep(parent, prefix)?.notice(parent) {
        eprintln!("dupgram: {notice}");
    }
    Ok(Scratch::create(parent, prefix)?)
}

/// The first field of every work-directory file.
pub const RECORD_MAGIC: &str = "dupgram-workdir";
/// The format this build writes and reads.
pub const RECORD_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) magic: String,
    pub(crate) version: u32,
    pub(crate) xxh3: String,
}

/// Writes `value` to `path` atomically, under the header.
pub fn write_record(path: &Path, value: &impl Serialize) -> Result<(), ClusterError> {
    let body = serde_json::to_vec_pretty(value).map_err(|e| ClusterError::corrupt(path, e.to_string()))?;
    let header =
        Header { magic: RECORD_MAGIC.into(), version: RECORD_VERSION, xxh3: format!("{:016x}", xxh3_64(&body)) };
    let mut bytes = serde_json::to_vec(&header).map_err(|e| ClusterError::corrupt(path, e.to_string()))?;
    bytes.push(b'\n');
    bytes.extend_from_slice(&body);
    bytes.push(b'\n');
    write_file(path, |out| out.write_all(&bytes))
}

/// Reads a file written by [`write_record`], checking magic, version and checksum.
pub fn read_record<T: DeserializeOwned>(path: &Path) -> Result<T, ClusterError> {
    let bytes = std::fs::read(path).map_err(|e| ClusterError::io(path, e))?;
    let split = bytes.iter().position(|&b| b == b'\n').ok_or_else(|| ClusterError::corrupt(path, "no header line"))?;
    let header: Header = serde_json::from_slice(&bytes[..split])
        .map_err(|_| ClusterError::corrupt(path, "not a dupgram work-directory file"))?;
    if header.magic != RECORD_MAGIC {
        return Err(ClusterError::corrupt(path, "not a dupgram work-directory file"));
    }
    if header.version != RECORD_VERSION {
        return Err(ClusterError::corrupt(
            path,
            format!("format version {} (this dupgram reads {RECORD_VERSION})", header.version),
        ));
    }
    let body = bytes[split + 1..].strip_suffix(b"\n").unwrap_or(&bytes[split + 1..]);
    if format!("{:016x}", xxh3_64(body)) != header.xxh3 {
        return Err(ClusterError::corrupt(path, "checksum mismatch (torn or edited)"));
    }
    serde_json::from_slice(body).map_err(|e| ClusterError::corrupt(path, e.to_string()))
}

/// Writes a file of the work directory: `body` writes it under a temporary
/// name beside `path`, which is synced and renamed when complete.
pub fn write_file(
    path: &Path,
    body: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), ClusterError> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mut file = dupgram_pipeline::output::temp_beside(dir, &name).map_err(|e| ClusterError::io(path, e))?;
    {
        let mut out = std::io::BufWriter::new(file.as_file_mut());
        body(&mut out).and_then(|()| out.flush()).map_err(|e| ClusterError::io(path, e))?;
    }
    dupgram_pipeline::output::persist(file, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_record(&path, &vec![1u32, 2, 3]).unwrap();
        assert_eq!(read_record::<Vec<u32>>(&path).unwrap(), [1, 2, 3]);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 4;
        bytes[at] = b'7';
        std::fs::write(&path, &bytes).unwrap();
        let err = read_record::<Vec<u32>>(&path).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
        std::fs::write(&path, b"[1,2,3]\n").unwrap();
        let err = read_record::<Vec<u32>>(&path).unwrap_err().to_string();
        assert!(err.contains("not a dupgram work-directory file"), "{err}");
    }
}
