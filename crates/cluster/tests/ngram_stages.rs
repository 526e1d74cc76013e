//! A staged `ngrams` job whose tasks hold no vocabulary — the lexicon tasks'
//! tables frozen, the words past them counted on disk and numbered out of
//! core by the vocab task, the reduce tasks reading the words back from
//! disk, the map tasks counting from the lexicon tasks' word streams —
//! gives the one-machine job's duplicates and lexicon byte for byte.

use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

use dupgram_cluster::{Outputs, Stage, TaskId, WorkDir};
use dupgram_corpus::Input;
use dupgram_pipeline::output::{DupTsvWriter, OutputFile};
use dupgram_pipeline::{Control, NgramConfig, NgramStats, count_ngrams};
use dupgram_testkit::{Corpus, CorpusSpec};

/// Short documents over an open vocabulary: most words are rare.
fn corpus(dir: &Path, seed: u64) -> PathBuf {
    let spec = CorpusSpec {
        seed,
        tokens: 40_000,
        vocabulary: 600,
        mean_doc_len: 40,
        open_vocabulary: 0.5,
        ..CorpusSpec::default()
    };
    let generator = Corpus::new(spec.clone());
    let path = dir.join(format!("c{seed}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for (i, doc) in Corpus::new(spec).enumerate() {
        let text = generator.text(&doc);
        writeln!(out, "{}", serde_json::json!({ "id": format!("d{i}"), "text": text })).unwrap();
    }
    path
}

fn config(path: &Path, n: usize, table_words: Option<usize>) -> NgramConfig {
    let mut config = NgramConfig::new(vec![Input::Path(path.to_owned())], n);
    config.memory = 32 << 20;
    config.threads = 2;
    config.limits.table_words = table_words;
    // The overflow's dictionaries in epochs of a few words.
    config.limits.epoch_slots = table_words.map(|_| 3);
    // A few words held for the output, the rest read from disk per batch.
    config.limits.output_word_bytes = table_words.map(|_| 256);
    config
}

/// The one-machine job: its duplicates (TSV) and lexicon file.
fn one_machine(config: &NgramConfig, dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let out = dir.join("one.tsv");
    let config = NgramConfig { lexicon_dir: Some(dir.to_owned()), ..config.clone() };
    let mut writer = DupTsvWriter::new(OutputFile::create(Some(&out)).unwrap());
    let outcome =
        count_ngrams(&config, &Control::default(), &mut |words, ids, count| writer.write(words, ids, count)).unwrap();
    writer.finish().unwrap();
    let lexicon = std::fs::read(outcome.lexicon_file.expect("kept in the lexicon directory").path()).unwrap();
    (std::fs::read(&out).unwrap(), lexicon)
}

/// The staged job, every task in order: its duplicates, lexicon and summary.
fn staged(config: &NgramConfig, work: &Path, shards: usize, buckets: usize) -> (Vec<u8>, Vec<u8>, NgramStats) {
    let control = Control::default();
    let plan = common::job_plan("ngrams", config, work, shards, buckets);
    let (out, lexicon) = (work.with_extension("tsv"), work.with_extension("lex"));
    let work = WorkDir::new(work).unwrap();
    let outputs = Outputs { dups: Some(out.clone()), lexicon: Some(lexicon.clone()), ..Outputs::default() };
    let stage = Stage::new(&work, &plan, config, &control, &outputs);
    for task in TaskId::all(&plan) {
        stage.run(task).unwrap_or_else(|e| panic!("{}: {e}", task.name()));
    }
    (std::fs::read(&out).unwrap(), std::fs::read(&lexicon).unwrap(), stage.summary().unwrap())
}

#[test]
fn staged_tasks_past_their_tables_equal_the_one_machine_job() {
    let dir = tempfile::tempdir().unwrap();
    // (seed, n, table words, shards, buckets)
    for (round, (seed, n, table_words, shards, buckets)) in
        [(3, 4, Some(30), 3, 2), (4, 3, Some(1), 4, 3), (5, 5, Some(200), 2, 1)].into_iter().enumerate()
    {
        let path = corpus(dir.path(), seed);
        let plain = one_machine(&config(&path, n, None), dir.path());
        assert!(plain.0.len() > 1000, "round {round}: too few duplicates to tell anything");
        let work = dir.path().join(format!("w{round}"));
        let (dups, lexicon, stats) = staged(&config(&path, n, table_words), &work, shards, buckets);
        assert!(stats.overflow_words > 0 && stats.overflow_tokens > 0, "round {round}: the tables froze: {stats:?}");
        assert!(dups == plain.0, "round {round}: the staged duplicates differ");
        assert!(lexicon == plain.1, "round {round}: the staged lexicon differs");
        // The word streams and their side files went with the job's spill.
        let left: Vec<_> = std::fs::read_dir(work.join("streams")).unwrap().collect();
        assert!(left.is_empty(), "round {round}: streams left behind: {left:?}");
    }
}

/// The reduce tasks keep their buckets' duplicates compressed until finish
/// joins them: the joined `.zst` output is the one-machine job's file byte
/// for byte, and a damaged bucket is refused by name, not joined.
#[test]
fn compressed_buckets_join_into_the_one_machine_file_and_damage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = corpus(dir.path(), 6);
    let config = config(&path, 4, None);
    let one = dir.path().join("one.tsv.zst");
    let mut writer = DupTsvWriter::new(OutputFile::create(Some(&one)).unwrap());
    count_ngrams(&config, &Control::default(), &mut |words, ids, count| writer.write(words, ids, count)).unwrap();
    writer.finish().unwrap();

    let control = Control::default();
    let work_path = dir.path().join("w");
    let plan = common::job_plan("ngrams", &config, &work_path, 2, 3);
    let work = WorkDir::new(&work_path).unwrap();
    let out = dir.path().join("staged.tsv.zst");
    let outputs = Outputs { dups: Some(out.clone()), ..Outputs::default() };
    let stage = Stage::new(&work, &plan, &config, &control, &outputs);
    for task in TaskId::all(&plan).into_iter().filter(|&t| t != TaskId::Finish) {
        stage.run(task).unwrap_or_else(|e| panic!("{}: {e}", task.name()));
    }
    let bucket = work_path.join("dups/bucket-0001.tsv.zst");
    let kept = std::fs::read(&bucket).unwrap();
    let mut damaged = kept.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x10;
    std::fs::write(&bucket, &damaged).unwrap();
    let refused = stage.run(TaskId::Finish).expect_err("a damaged bucket was joined");
    assert!(refused.to_string().contains("bucket-0001.tsv.zst"), "the message names the bucket: {refused}");
    assert!(!out.exists(), "no output under its name after a refusal");

    std::fs::write(&bucket, &kept).unwrap();
    stage.run(TaskId::Finish).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(&one).unwrap(),
        "the staged .zst differs from the one-machine file"
    );
}
