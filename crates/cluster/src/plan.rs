//! The job plan (`job.json`): what every task of a job must agree on.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use dupgram_corpus::{Format, Input};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::error::ClusterError;

/// Bytes read at each end of an input for its [`InputFile::sample`].
const SAMPLE_BYTES: u64 = 1 << 20;

/// One input file as it was when the job was planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Absolute, so tasks may run from any directory of any node.
    pub path: PathBuf,
    pub size: u64,
    /// Modification time, seconds and nanoseconds since the Unix epoch.
    pub modified: (u64, u32),
    /// XXH3-64 of the first and the last MiB, in hex: catches a file
    /// replaced by another of the same size and time.
    pub sample: String,
}

impl InputFile {
    /// The identity of the file at `path` now.
    pub fn of(path: &Path) -> Result<InputFile, ClusterError> {
        let io = |e| ClusterError::io(path, e);
        let path = std::path::absolute(path).map_err(io)?;
        let meta = std::fs::metadata(&path).map_err(io)?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or((0, 0), |d| (d.as_secs(), d.subsec_nanos()));
        let mut file = std::fs::File::open(&path).map_err(io)?;
        let mut hasher = Xxh3::new();
        let mut buf = Vec::new();
        (&mut file).take(SAMPLE_BYTES).read_to_end(&mut buf).map_err(io)?;
        hasher.update(&buf);
        if meta.len() > SAMPLE_BYTES {
            buf.clear();
            file.seek(SeekFrom::Start(meta.len().saturating_sub(SAMPLE_BYTES).max(SAMPLE_BYTES))).map_err(io)?;
            file.read_to_end(&mut buf).map_err(io)?;
            hasher.update(&buf);
        }
        Ok(InputFile { path, size: meta.len(), modified, sample: format!("{:016x}", hasher.digest()) })
    }

    /// An error when the file is no longer what it was.
    pub fn check(&self) -> Result<(), ClusterError> {
        let now = InputFile::of(&self.path)?;
        let what = if now.size != self.size {
            format!("its size was {} bytes and is now {}", self.size, now.size)
        } else if now.modified != self.modified {
            "it was modified".to_owned()
        } else if now.sample != self.sample {
            "its content differs".to_owned()
        } else {
            return Ok(());
        };
        Err(ClusterError::Changed { path: self.path.clone(), what })
    }
}

/// A part of one input: a whole file, or bytes `start..end` of a plain one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    /// Index in [`JobPlan::inputs`].
    pub input: usize,
    pub start: u64,
    pub end: u64,
    pub whole: bool,
}

/// What every task of one job reads from `job.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPlan {
    /// The subcommand the stages run (`ngrams`).
    pub command: String,
    /// The command line the job was planned with: each task rebuilds the
    /// job's options from it, so they cannot drift from the one-machine command.
    pub argv: Vec<String>,
    /// Where it was run, for its relative paths.
    pub cwd: PathBuf,
    /// The parsed options, for telling whether a resubmission is the same job.
    pub options: String,
    pub inputs: Vec<InputFile>,
    /// The pieces each shard reads, in input order.
    pub shards: Vec<Vec<Piece>>,
    /// N-gram buckets: reduce tasks.
    pub buckets: usize,
    /// Bytes of every lexicon task's sieve (they must be equal to combine); 0 for none.
    pub sieve_bytes: u64,
    /// Keep the count of every n-gram (`state/`), for `dupgram update`.
    #[serde(default)]
    pub keep_state: bool,
    /// Keep where every n-gram occurs too (a postings state, with the
    /// documents' table), for `dupgram update --pairs`; implies `keep_state`.
    #[serde(default)]
    pub keep_postings: bool,
}

/// The most shards or buckets a job may have: each is a task (and a
/// Slurm array element), so more is a mistyped option or a damaged plan.
pub const MAX_TASKS_PER_STAGE: usize = 1 << 20;

impl JobPlan {
    /// Checks what tasks build and index by before they trust a plan read
    /// from `path`: shard and bucket counts within `MAX_TASKS_PER_STAGE`,
    /// every piece naming an input of the plan and running forward.
    pub fn check_shape(&self, path: &Path) -> Result<(), ClusterError> {
        let impossible = |what: &str| Err(ClusterError::corrupt(path, format!("impossible plan: {what}")));
        if !(1..=MAX_TASKS_PER_STAGE).contains(&self.shards.len()) {
            return impossible(&format!("{} shards", self.shards.len()));
        }
        if !(1..=MAX_TASKS_PER_STAGE).contains(&self.buckets) {
            return impossible(&format!("{} buckets", self.buckets));
        }
        for piece in self.shards.iter().flatten() {
            if piece.input >= self.inputs.len() || piece.start > piece.end {
                return impossible(&format!("a piece {piece:?} of {} inputs", self.inputs.len()));
            }
        }
        Ok(())
    }

    /// Cuts `paths` into `shards` parts of about equal size, in input
    /// order: whole files where there are enough of them, otherwise plain
    /// files are cut at document boundaries (compressed files cannot be,
    /// nor Parquet files: each is read whole by one task).
    pub fn cut(
        paths: &[PathBuf],
        format: Option<Format>,
        shards: usize,
        buckets: usize,
    ) -> Result<(Vec<InputFile>, Vec<Vec<Piece>>), ClusterError> {
        if shards == 0 || buckets == 0 {
            return Err(ClusterError::Plan("--shards and --buckets must be at least 1".into()));
        }
        if shards.max(buckets) > MAX_TASKS_PER_STAGE {
            return Err(ClusterError::Plan(format!("--shards and --buckets must be at most {MAX_TASKS_PER_STAGE}")));
        }
        let inputs = paths.iter().map(|p| InputFile::of(p)).collect::<Result<Vec<_>, _>>()?;
        let total: u64 = inputs.iter().map(|i| i.size).sum();
        let target = total.div_ceil(shards as u64).max(1);
        let mut pieces = Vec::new();
        for (index, input) in inputs.iter().enumerate() {
            let io = |e| ClusterError::io(&input.path, e);
            let cuttable = inputs.len() < shards
                && input.size > target
                && !dupgram_corpus::is_compressed(&input.path).map_err(io)?
                && !dupgram_corpus::is_parquet(&input.path).map_err(io)?;
            if !cuttable {
                pieces.push(Piece { input: index, start: 0, end: input.size, whole: true });
                continue;
            }
            let format = dupgram_corpus::format_of(&input.path, format).map_err(io)?;
            let mut start = 0;
            while start < input.size {
                let end = dupgram_corpus::document_boundary(&input.path, format, start + target).map_err(io)?;
                if end > start {
                    pieces.push(Piece { input: index, start, end, whole: false });
                }
                start = end.max(start + 1);
            }
        }
        Ok((inputs, group(&pieces, shards, total)))
    }

    /// The inputs of shard `shard`, as the corpus reader takes them.
    pub fn shard_inputs(&self, shard: usize) -> Vec<Input> {
        self.shards[shard]
            .iter()
            .map(|p| {
                let path = self.inputs[p.input].path.clone();
                if p.whole { Input::Path(path) } else { Input::Range { path, start: p.start, end: p.end } }
            })
            .collect()
    }

    /// Checks that the files shard `shard` reads are those the job was planned on.
    pub fn check_shard(&self, shard: usize) -> Result<(), ClusterError> {
        let mut seen = Vec::new();
        for piece in &self.shards[shard] {
            if !seen.contains(&piece.input) {
                seen.push(piece.input);
                self.inputs[piece.input].check()?;
            }
        }
        Ok(())
    }

    /// Checks every input.
    pub fn check_all(&self) -> Result<(), ClusterError> {
        self.inputs.iter().try_for_each(InputFile::check)
    }
}

/// Groups pieces, in order, into `shards` shards of about `total / shards`
/// bytes: a piece goes to the shard its middle byte falls in.
fn group(pieces: &[Piece], shards: usize, total: u64) -> Vec<Vec<Piece>> {
    let mut out = vec![Vec::new(); shards];
    let mut before = 0u64;
    for piece in pieces {
        let middle = before + (piece.end - piece.start) / 2;
        let shard = (middle as u128 * shards as u128 / total.max(1) as u128) as usize;
        out[shard.min(shards - 1)].push(*piece);
        before += piece.end - piece.start;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(inputs: Vec<Input>) -> Vec<String> {
        let mut reader = dupgram_corpus::CorpusReader::new(inputs, Default::default(), Default::default());
        let mut batch = dupgram_corpus::Batch::default();
        let mut docs = Vec::new();
        let mut current = String::new();
        while reader.fill(&mut batch, 1 << 16).unwrap() {
            for piece in &batch.pieces {
                current.push_str(batch.piece_text(piece));
                if piece.last {
                    docs.push(std::mem::take(&mut current));
                }
            }
        }
        docs
    }

    #[test]
    fn shards_of_a_plain_file_hold_every_document_once() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            (
                "c.jsonl",
                (0..200)
                    .map(|i| format!("{{\"text\": \"document {i} {}\"}}\n", "w ".repeat(i % 7)))
                    .collect::<String>(),
            ),
            ("c.vert", (0..150).map(|i| format!("<doc id=\"{i}\">\n<p>\nword\n{i}\n</p>\n</doc>\n")).collect()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let whole = read_all(vec![Input::Path(path.clone())]);
            for shards in [1, 2, 3, 7, 64] {
                let (inputs, cut) = JobPlan::cut(std::slice::from_ref(&path), None, shards, 1).unwrap();
                let plan = JobPlan {
                    command: "ngrams".into(),
                    argv: vec![],
                    cwd: dir.path().to_owned(),
                    options: String::new(),
                    inputs,
                    shards: cut,
                    buckets: 1,
                    sieve_bytes: 0,
                    keep_state: false,
                    keep_postings: false,
                };
                assert_eq!(plan.shards.len(), shards);
                let parts: Vec<String> = (0..shards).flat_map(|s| read_all(plan.shard_inputs(s))).collect();
                assert_eq!(parts, whole, "{name} in {shards} shards");
                if shards <= 3 {
                    assert!(plan.shards.iter().all(|s| !s.is_empty()), "{name}: {:?}", plan.shards);
                }
            }
        }
    }

    #[test]
    fn changed_inputs_are_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let before = InputFile::of(&path).unwrap();
        before.check().unwrap();
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        let err = before.check().unwrap_err().to_string();
        assert!(err.contains("size was 8 bytes and is now 14"), "{err}");
        std::fs::write(&path, "one\nTWO\n").unwrap();
        let mut same_time = before.clone();
        same_time.modified = InputFile::of(&path).unwrap().modified;
        let err = same_time.check().unwrap_err().to_string();
        assert!(err.contains("content differs"), "{err}");
    }
}
