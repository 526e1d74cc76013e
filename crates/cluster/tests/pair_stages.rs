//! A `pairs` job run as tasks gives the one-machine job's pairs and
//! clusters byte for byte, whatever the shards, buckets and memory blocks.

use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

use dupgram_cluster::{Outputs, PairsOutputs, Stage, TaskId, WorkDir};
use dupgram_corpus::Input;
use dupgram_pipeline::output::{OutputFile, PairFiles, PairFormat};
use dupgram_pipeline::{Control, NgramConfig, PairsConfig, PairsStats, find_pairs};
use dupgram_testkit::{Corpus, CorpusSpec};

fn corpus(dir: &Path, seed: u64) -> PathBuf {
    let spec = CorpusSpec { seed, tokens: 30_000, vocabulary: 400, mean_doc_len: 60, ..CorpusSpec::default() };
    let generator = Corpus::new(spec.clone());
    let path = dir.join("c.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for (i, doc) in Corpus::new(spec).enumerate() {
        let text = generator.text(&doc);
        writeln!(out, "{}", serde_json::json!({ "id": format!("d{i}"), "text": text })).unwrap();
    }
    path
}

fn config(path: &Path, chunk: Option<usize>, max_df: u64) -> PairsConfig {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], 4);
    base.memory = 64 << 20;
    base.threads = 2;
    base.limits.chunk_ngrams = chunk;
    PairsConfig { min_sscr: 0.1, max_df, max_group_pairs: 3, ..PairsConfig::new(base) }
}

fn one_machine(config: &PairsConfig, out: &Path) -> PairsStats {
    let clusters = OutputFile::create(Some(&out.with_extension("clusters"))).unwrap();
    let mut files = PairFiles::new(OutputFile::create(Some(out)).unwrap(), PairFormat::Tsv, Some(clusters)).unwrap();
    let stats = find_pairs(config, &Control::default(), &mut files).unwrap();
    files.finish().unwrap();
    stats
}

fn staged(config: &PairsConfig, work: &Path, shards: usize, buckets: usize, out: &Path) -> PairsStats {
    run_staged(config, work, shards, buckets, out, |_| ()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a staged job's tasks in order, calling `before` with each task
/// before it runs; the first task's error, with its name.
fn run_staged(
    config: &PairsConfig,
    work: &Path,
    shards: usize,
    buckets: usize,
    out: &Path,
    mut before: impl FnMut(TaskId),
) -> Result<PairsStats, String> {
    let control = Control::default();
    let base = &config.base;
    let plan = common::job_plan("pairs", base, work, shards, buckets);
    let work = WorkDir::new(work).unwrap();
    let outputs = Outputs {
        pairs: Some(PairsOutputs {
            config: config.clone(),
            output: Some(out.to_owned()),
            format: PairFormat::Tsv,
            clusters: Some(out.with_extension("clusters")),
        }),
        ..Outputs::default()
    };
    let stage = Stage::new(&work, &plan, base, &control, &outputs);
    for task in TaskId::all(&plan) {
        before(task);
        stage.run(task).map_err(|e| format!("{}: {e}", task.name()))?;
    }
    Ok(stage.pairs_summary().unwrap())
}

/// The counts a summary shares with the one-machine job's (times, blocks and spill differ).
fn counts(s: &PairsStats) -> [u64; 15] {
    let i = &s.index;
    [
        i.documents,
        i.tokens,
        i.duplicate_ngrams,
        i.duplicate_occurrences,
        i.all_ngrams,
        s.exact_groups,
        s.grouped_documents,
        s.boilerplate_ngrams,
        // The same bounds rule out the same candidates: the tasks add up every bucket's counts.
        s.candidate_pairs,
        s.pruned_pairs,
        s.scored_pairs,
        s.kept_pairs,
        s.group_pairs,
        s.clusters,
        s.clustered_documents,
    ]
}

#[test]
fn staged_pairs_are_the_one_machine_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = corpus(dir.path(), 5);
    // (shards, buckets, chunk limit: small ones cut the documents into many blocks, max-df)
    for (round, (shards, buckets, chunk, max_df)) in
        [(1, 1, None, 1000), (3, 2, Some(300), 1000), (4, 5, Some(64), 3), (2, 3, Some(2000), 2)]
            .into_iter()
            .enumerate()
    {
        let mut config = config(&path, chunk, max_df);
        if round == 2 {
            // Tables that freeze: the lexicon tasks count most words on disk.
            config.base.limits.table_words = Some(20);
            config.base.limits.epoch_slots = Some(2);
        }
        let one = dir.path().join(format!("one-{round}.tsv"));
        let one_stats = one_machine(&config, &one);
        let many = dir.path().join(format!("staged-{round}.tsv"));
        let stats = staged(&config, &dir.path().join(format!("w{round}")), shards, buckets, &many);
        assert_eq!(counts(&stats), counts(&one_stats), "round {round}");
        assert!(stats.exact_groups > 0 && stats.index.documents > 100, "round {round}: {stats:?}");
        let (blocks, one_blocks) = (stats.index_blocks, one_stats.index_blocks);
        let expected = std::fs::read_to_string(&one).unwrap();
        assert!(expected.lines().count() > 20, "round {round}: too few pairs to tell anything: {expected}");
        assert_eq!(std::fs::read_to_string(&many).unwrap(), expected, "round {round}");
        let clusters = std::fs::read(one.with_extension("clusters")).unwrap();
        assert!(!clusters.is_empty());
        assert_eq!(std::fs::read(many.with_extension("clusters")).unwrap(), clusters, "round {round}");
        assert!(blocks >= shards as u64 && (chunk.is_none() || blocks > 1), "round {round}: {blocks} blocks");
        assert!(chunk.is_none() || one_blocks > 1, "round {round}: {one_blocks} blocks");
    }
}

/// Checksum-valid work files that do not fit the job: each task that reads
/// one fails naming it, no panic.
#[test]
fn inconsistent_work_files_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = corpus(dir.path(), 7);
    let config = config(&path, None, 1000);
    let out = dir.path().join("pairs.tsv");
    type Tamper = fn(&Path);
    let cases: [(TaskId, Tamper, &str, &str); 7] = [
        // Totals that add up past 2^32 per document.
        (
            TaskId::Candidates(0),
            |work| huge_totals(&work.join("pairs/index/bucket-0001.totals")),
            "bucket-0001.totals",
            "2^32",
        ),
        // An index part naming a document past the table.
        (
            TaskId::Candidates(1),
            |work| index_past_table(&work.join("pairs/index/bucket-0001.dgr")),
            "bucket-0001.dgr",
            "outside the document table",
        ),
        // Totals that count fewer occurrences than the index holds (a block is sized by them).
        (
            TaskId::Score(0),
            |work| no_totals(&work.join("pairs/index/bucket-0000.totals")),
            "bucket-0000.dgr",
            "more duplicate occurrences than",
        ),
        // Candidate pairs whose documents are not in the blocks they name.
        (
            TaskId::Score(0),
            |work| rewrite_runs(&work.join("pairs/candidates"), &[0, 0, 400, 401]),
            "cand-r0000",
            "not in blocks",
        ),
        // Kept pairs of documents past the table.
        (
            TaskId::Finish,
            |work| rewrite_runs(&work.join("pairs/kept"), &[100_000, 100_001, 1, 1, 1]),
            "kept-r0000",
            "outside the document table",
        ),
        // A score layout (checked when read) that covers fewer documents than the corpus has.
        (TaskId::Score(0), |work| short_layout(&work.join("tasks")), "candidates-0000", "layout of"),
        // Counts of common n-grams for another number of documents.
        (
            TaskId::Score(0),
            |work| short_common(&work.join("pairs/candidates/bucket-0001/common.counts")),
            "common.counts",
            "counts of 2 documents",
        ),
    ];
    for (case, (at, tamper, file, what)) in cases.into_iter().enumerate() {
        // A work directory each: a tampered file must not reach the next case.
        let work = dir.path().join(format!("work-{case}-{}", at.name()));
        let mut before = |task: TaskId| {
            if task == at {
                tamper(&work);
            }
        };
        let err = run_staged(&config, &work, 2, 2, &out, &mut before).unwrap_err();
        assert!(err.starts_with(&at.name()) && err.contains(file) && err.contains(what), "{err}");
    }
}

fn short_common(path: &Path) {
    let mut bytes = Vec::new();
    dupgram_pipeline::write_common(&[1, 2], &mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn huge_totals(path: &Path) {
    let mut part = dupgram_pipeline::BucketTotals::read_from(path).unwrap();
    part.totals.occurrences.iter_mut().for_each(|o| *o = u32::MAX);
    part.totals.types.iter_mut().for_each(|t| *t = 1);
    let mut bytes = Vec::new();
    part.write_to(&mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn no_totals(path: &Path) {
    let mut part = dupgram_pipeline::BucketTotals::read_from(path).unwrap();
    part.totals.occurrences.iter_mut().for_each(|o| *o = 0);
    part.totals.types.iter_mut().for_each(|t| *t = 0);
    let mut bytes = Vec::new();
    part.write_to(&mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Every run under `dir` rewritten (sealed, its header kept) to hold `key` alone.
fn rewrite_runs(dir: &Path, key: &[u32]) {
    for bucket in std::fs::read_dir(dir).unwrap() {
        for run in std::fs::read_dir(bucket.unwrap().path()).unwrap() {
            let path = run.unwrap().path();
            if path.extension().is_none_or(|e| e != "dgr") {
                continue;
            }
            let header = dupgram_runs::RunReader::open(&path).unwrap().header();
            let mut w = dupgram_runs::RunWriter::create(&path, header).unwrap();
            w.push(key, 1).unwrap();
            w.finish().unwrap();
        }
    }
}

fn index_past_table(path: &Path) {
    let header = dupgram_runs::RunReader::open(path).unwrap().header();
    let mut w = dupgram_runs::RunWriter::create(path, header).unwrap();
    w.push_postings(&[0], &[1 << 32, 1_000_000 << 32]).unwrap();
    w.finish().unwrap();
}

fn short_layout(tasks: &Path) {
    for entry in std::fs::read_dir(tasks).unwrap() {
        let path = entry.unwrap().path();
        if !path.file_name().unwrap().to_string_lossy().starts_with("candidates-") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        let mut record: serde_json::Value = serde_json::from_str(body).unwrap();
        let blocks = record["layout"]["blocks"].as_array_mut().unwrap();
        let last = blocks.last_mut().unwrap();
        last["end"] = serde_json::json!(last["end"].as_u64().unwrap() - 1);
        let body = serde_json::to_string(&record).unwrap();
        let header = serde_json::json!({
            "magic": "dupgram-workdir",
            "version": 1,
            "xxh3": format!("{:016x}", xxhash_rust::xxh3::xxh3_64(body.as_bytes())),
        });
        std::fs::write(&path, format!("{header}\n{body}\n")).unwrap();
    }
}
