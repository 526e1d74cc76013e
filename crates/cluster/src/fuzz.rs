//! The work directory's files meet hostile input (see `dupgram_fuzzkit`):
//! the plan (`job.json`), task records and update records, also with their
//! checksum recomputed so serde and the plan's own checks meet the damage,
//! and state segments (counts and postings runs) walked as an update walks
//! them. Each mutated file is refused with an error naming it, or read as
//! something the tasks can index by without panicking.

use std::path::{Path, PathBuf};

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_merge::MergeSink;
use dupgram_pipeline::{GroupCheck, IndexTotals, PipelineError, ScoreLayout};
use dupgram_runs::{RunHeader, RunKind, RunReader, RunWriter};
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::ClusterError;
use crate::plan::{InputFile, JobPlan, Piece};
use crate::record::{Header, RECORD_MAGIC, RECORD_VERSION, read_record, write_record};
use crate::stage::TaskId;
use crate::stage::{RunEntry, TaskRecord};
use crate::update::UpdateStats;
use crate::workdir::WorkDir;

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

fn regressions(target: &str) -> String {
    format!("{}/tests/fuzz-regressions/{target}", env!("CARGO_MANIFEST_DIR"))
}

fn record_bytes(value: &impl Serialize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    write_record(&path, value).unwrap();
    std::fs::read(&path).unwrap()
}

/// The record with its header's checksum recomputed over whatever body follows the first line.
fn seal_record(bytes: &[u8]) -> Vec<u8> {
    let split = bytes.iter().position(|&b| b == b'\n').unwrap_or(bytes.len());
    let rest = bytes.get(split + 1..).unwrap_or_default();
    let body = rest.strip_suffix(b"\n").unwrap_or(rest);
    let header =
        Header { magic: RECORD_MAGIC.into(), version: RECORD_VERSION, xxh3: format!("{:016x}", xxh3_64(body)) };
    let mut out = serde_json::to_vec(&header).unwrap();
    out.push(b'\n');
    out.extend_from_slice(rest);
    out
}

fn plan() -> JobPlan {
    let input = |name: &str, size| InputFile {
        path: PathBuf::from(format!("/data/{name}")),
        size,
        modified: (1_763_000_000, 5),
        sample: "0123456789abcdef".into(),
    };
    JobPlan {
        command: "pairs".into(),
        argv: ["dupgram", "slurm", "pairs", "a.jsonl", "b.txt", "-n", "5"].map(String::from).to_vec(),
        cwd: PathBuf::from("/home/user"),
        options: "n=5 min_sscr=0.5".into(),
        inputs: vec![input("a.jsonl", 1000), input("b.txt", 52)],
        shards: vec![
            vec![Piece { input: 0, start: 0, end: 600, whole: false }],
            vec![
                Piece { input: 0, start: 600, end: 1000, whole: false },
                Piece { input: 1, start: 0, end: 52, whole: true },
            ],
        ],
        buckets: 3,
        sieve_bytes: 1 << 20,
        keep_state: true,
        keep_postings: false,
    }
}

/// Loads a plan as every task does, and uses it as they do.
fn load_plan(path: &Path) -> Result<JobPlan, ClusterError> {
    let work = WorkDir::new(path.parent().unwrap())?;
    std::fs::rename(path, work.path("job.json")).unwrap();
    let plan = work.load_plan().map_err(|e| match e {
        // The directory holds the file: name the path the driver wrote it as.
        ClusterError::Corrupt { what, .. } => ClusterError::Corrupt { path: path.to_owned(), what },
        other => other,
    })?;
    let tasks = TaskId::all(&plan);
    assert_eq!(tasks.len(), tasks.iter().map(|t| t.name()).collect::<std::collections::BTreeSet<_>>().len());
    for shard in 0..plan.shards.len() {
        for input in plan.shard_inputs(shard) {
            let _ = input.size();
        }
    }
    Ok(plan)
}

#[test]
fn plans_survive_mutation() {
    let mut ngrams = plan();
    ngrams.command = "ngrams".into();
    ngrams.shards = vec![vec![Piece { input: 1, start: 0, end: 52, whole: true }]];
    let seeds = vec![record_bytes(&plan()), record_bytes(&ngrams)];
    Fuzz::new("record-plan", "job.json", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_record)
        .regressions(regressions("plan"))
        .run(load_plan);
}

fn task_record() -> TaskRecord {
    TaskRecord {
        task: "candidates-0001".into(),
        tokens: 123_456,
        documents: 789,
        sieve: true,
        bounds: vec![17, 230, 4000],
        runs: vec![
            RunEntry { bucket: 0, file: "cand-r0000-000001.dgr".into(), bytes: 4096 },
            RunEntry { bucket: 2, file: "cand-r0002-000001.dgr".into(), bytes: 77 },
        ],
        entries: 42,
        cpu: 1.25,
        ..TaskRecord::default()
    }
}

#[test]
fn task_records_survive_mutation() {
    let seeds = vec![record_bytes(&task_record()), record_bytes(&TaskRecord::default())];
    Fuzz::new("record-task", "lexicon-0000.json", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_record)
        .regressions(regressions("task"))
        .run(|path| read_record::<TaskRecord>(path).map(|r| format!("{r:?}")));
}

/// A candidates task's record: its runs by slice, and the score layout it cut by.
fn candidates_record(layout: ScoreLayout) -> TaskRecord {
    TaskRecord { task: "candidates-0001".into(), layout: Some(layout), ..task_record() }
}

/// Reads a candidates record as a score task of a 2-shard job does, and uses its layout as it does.
fn read_candidates(path: &Path) -> Result<String, ClusterError> {
    let record: TaskRecord = read_record(path)?;
    let Some(layout) = record.layout else { return Ok(format!("{record:?}")) };
    crate::stage::check_layout(&layout, 2, path)?;
    let docs = layout.docs();
    for range in 0..layout.ranges() {
        let covered = layout.range_docs(&(range..range + 1));
        assert!(covered.start <= covered.end && covered.end <= docs, "{covered:?} of {docs}");
    }
    assert_eq!(layout.range_docs(&(0..layout.ranges())), 0..docs);
    Ok(format!("{layout:?}"))
}

fn layout(blocks: Vec<std::ops::Range<u32>>, range_starts: Vec<u32>) -> ScoreLayout {
    ScoreLayout { blocks, range_starts, resident: 1 << 30 }
}

#[test]
#[allow(clippy::single_range_in_vec_init)] // A list of one block, not the block's documents.
fn candidates_records_survive_mutation() {
    let seeds = vec![
        record_bytes(&candidates_record(layout(vec![0..4, 4..4, 4..9, 9..30], vec![0, 1, 3]))),
        record_bytes(&candidates_record(layout(vec![0..0], vec![0]))),
    ];
    Fuzz::new("record-candidates", "candidates-0001.json", seeds)
        .cases(2000)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_record)
        .regressions(regressions("candidates"))
        .run(read_candidates);
}

/// Layouts a checksum-valid record may carry that no candidates task
/// writes: refused when the record is read, naming it.
#[test]
#[allow(clippy::single_range_in_vec_init)] // Lists of one block, not the block's documents.
fn impossible_score_layouts_are_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("candidates-0001.json");
    let bad = [
        layout(vec![0..4, 5..9], vec![0]),
        layout(vec![1..4], vec![0]),
        layout(vec![0..4, std::ops::Range { start: 4, end: 2 }], vec![0]),
        layout(vec![0..4, 4..9], vec![0, 2]),
        layout(vec![0..4, 4..9], vec![1]),
        layout(vec![0..4, 4..9], vec![0, 1, 1]),
        layout(vec![], vec![0]),
        layout(vec![0..1], vec![]),
        layout((0..17).map(|d| d..d + 1).collect(), (0..17).collect()),
    ];
    for layout in bad {
        write_record(&path, &candidates_record(layout.clone())).unwrap();
        let err = read_candidates(&path).unwrap_err().to_string();
        assert!(err.contains("candidates-0001.json") && err.contains("score layout"), "{layout:?}: {err}");
    }
}

#[test]
fn update_records_survive_mutation() {
    let stats = UpdateStats {
        generation: 3,
        segments: vec![vec!["gen-0001/bucket-0000.dgr".into(), "gen-0003/bucket-0000.dgr".into()], vec![]],
        new_words: 12,
        ngrams_after: 1 << 40,
        seconds: 0.5,
        ..UpdateStats::default()
    };
    let seeds = vec![record_bytes(&stats), record_bytes(&UpdateStats::default())];
    Fuzz::new("record-update", "update-0003.json", seeds)
        .cases(2000)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_record)
        .regressions(regressions("update"))
        .run(|path| read_record::<UpdateStats>(path).map(|r| format!("{r:?}")));
}

/// An n-gram as walked: its IDs, count and occurrences.
type WalkedEntry = (Vec<u32>, u64, Vec<u64>);

/// Documents the seeds' occurrences name: the corpus's document table.
const SEGMENT_DOCS: usize = 8;

/// What a walk of the state hands on: n-grams in order, with counts and
/// occurrences; a postings walk also goes one step further, as an update
/// with `--pairs` and a postings reduce do: the groups' check and the
/// per-document totals index by the documents the occurrences name.
struct Walked {
    entries: Vec<WalkedEntry>,
    totals: IndexTotals,
    check: GroupCheck<'static>,
    path: String,
}

/// Groups of identical documents over the seeds' documents (some share a first).
static SEGMENT_GROUPS: [u32; SEGMENT_DOCS] = [0, 0, 2, 3, 2, 5, 6, 0];

impl MergeSink for Walked {
    type Error = PipelineError;
    fn accept(&mut self, ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), PipelineError> {
        if let Some(last) = self.entries.last() {
            assert!(last.0.as_slice() < ngram, "the walk went backwards: {:?} then {ngram:?}", last.0);
        }
        assert!(occurrences.is_empty() || occurrences.len() as u64 == count);
        self.check.ngram(occurrences).map_err(|e| e.in_file(&self.path))?;
        self.totals.add_ngram(occurrences, 0).map_err(|e| e.in_file(&self.path))?;
        self.entries.push((ngram.to_vec(), count, occurrences.to_vec()));
        Ok(())
    }
}

/// Opens a segment as an update does (its shape checked), and walks it beside an older one.
fn walk(path: &Path, older: &Path, header: RunHeader) -> Result<Vec<WalkedEntry>, ClusterError> {
    let reader = RunReader::open(path)?;
    let found = reader.header();
    if found.n != header.n || found.kind != header.kind {
        return Err(ClusterError::corrupt(path, "a state segment of another job"));
    }
    let mut walked = Walked {
        entries: Vec::new(),
        totals: IndexTotals::empty(SEGMENT_DOCS),
        check: GroupCheck::new(&SEGMENT_GROUPS),
        path: path.display().to_string(),
    };
    dupgram_merge::merge_into(vec![reader, RunReader::open(older)?], &mut walked, &()).map_err(|e| match e {
        dupgram_merge::MergeError::Run(e) => ClusterError::from(e),
        dupgram_merge::MergeError::Sink(e) => ClusterError::from(e),
        other => panic!("{other}"),
    })?;
    let distinct: Vec<u32> = (0..SEGMENT_DOCS).map(|d| walked.totals.distinct(d, 100, 3)).collect();
    assert!(distinct.iter().all(|&d| d <= 98));
    let _ = walked.check.differing();
    Ok(walked.entries)
}

fn segment(header: RunHeader, entries: &[(Vec<u32>, Vec<u64>)]) -> Vec<u8> {
    let mut w = RunWriter::new(Vec::new(), Path::new("seed"), header).unwrap();
    for (g, o) in entries {
        match header.kind {
            RunKind::Counts => w.push(g, o.len() as u64).unwrap(),
            RunKind::Postings => w.push_postings(g, o).unwrap(),
        }
    }
    w.finish().unwrap().0
}

fn segment_entries(seed: u32) -> Vec<(Vec<u32>, Vec<u64>)> {
    (0..120u32)
        .map(|i| {
            let g = vec![i / 9, (i * seed) % 9 + 9 * (i % 9), i];
            let o = (0..1 + (i + seed) % 4).map(|k| (u64::from(k + i % 5) << 32) | u64::from(k * 31 + seed)).collect();
            (g, o)
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

fn fuzz_segments(name: &str, header: RunHeader) {
    let dir = tempfile::tempdir().unwrap();
    let older = dir.path().join("older.dgr");
    std::fs::write(&older, segment(header, &segment_entries(3))).unwrap();
    let seeds =
        vec![segment(header, &segment_entries(5)), segment(header, &segment_entries(7)[..3]), segment(header, &[])];
    Fuzz::new(name, "bucket-0000.dgr", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::reseal)
        .regressions(regressions(name))
        .run(move |path| walk(path, &older, header));
}

#[test]
fn count_segments_survive_mutation() {
    fuzz_segments("state-counts", RunHeader::counts(3, 0x5eed));
}

#[test]
fn postings_segments_survive_mutation() {
    fuzz_segments("state-postings", RunHeader::postings(3, 0x5eed));
}

/// Plans whose checksums are right but whose numbers are not: each is
/// refused when loaded, naming `job.json`, before a task builds anything
/// that large or indexes by it.
#[test]
fn impossible_plans_are_refused_when_loaded() {
    type Edit = fn(&mut JobPlan);
    let edits: [(&str, Edit); 5] = [
        ("buckets-u64-max", |p| p.buckets = usize::MAX),
        ("buckets-zero", |p| p.buckets = 0),
        ("no-shards", |p| p.shards.clear()),
        ("piece-of-no-input", |p| p.shards[1][1].input = 2),
        ("piece-backwards", |p| p.shards[0][0].start = 601),
    ];
    for (name, edit) in edits {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.json");
        let mut p = plan();
        edit(&mut p);
        let bytes = record_bytes(&p);
        // The same files are kept among the regressions, replayed by `plans_survive_mutation`.
        let kept = format!("{}/{name}.json", regressions("plan"));
        assert_eq!(std::fs::read(&kept).ok().as_ref(), Some(&bytes), "{kept}");
        std::fs::write(&path, bytes).unwrap();
        let (result, peak) = dupgram_fuzzkit::measure(|| load_plan(&path));
        let err = result.expect_err(name).to_string();
        assert!(err.contains("job.json") && err.contains("impossible plan"), "{name}: {err}");
        assert!(peak < 64 << 20, "{name}: {peak} bytes");
    }
}

/// Reads a vocab record as a task of a 4-bucket job does.
fn read_vocab(path: &Path) -> Result<Vec<u32>, ClusterError> {
    let record: TaskRecord = read_record(path)?;
    crate::stage::check_bounds(&record.bounds, 4, path)?;
    Ok(record.bounds)
}

#[test]
fn vocab_records_survive_mutation() {
    let vocab = |bounds: Vec<u32>| TaskRecord { task: "vocab".into(), bounds, sieve: true, ..TaskRecord::default() };
    let seeds = vec![record_bytes(&vocab(vec![3, 40, 41])), record_bytes(&vocab(vec![0, 0, 1]))];
    Fuzz::new("record-vocab", "vocab.json", seeds)
        .cases(2000)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_record)
        .regressions(regressions("vocab"))
        .run(read_vocab);
}

#[test]
fn vocab_bounds_that_lose_buckets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vocab.json");
    for bounds in [vec![3, 40], vec![3, 40, 41, 50], vec![40, 3, 41]] {
        let record = TaskRecord { task: "vocab".into(), bounds, ..TaskRecord::default() };
        std::fs::write(&path, record_bytes(&record)).unwrap();
        let err = read_vocab(&path).unwrap_err().to_string();
        assert!(err.contains("vocab.json") && err.contains("bucket bounds"), "{err}");
    }
}
