//! A `pairs` job run as tasks gives the one-machine job's pairs and
//! clusters byte for byte, whatever the shards, buckets and memory blocks.

use std::io::Write;
use std::path::{Path, PathBuf};

use dupgram_cluster::{JobPlan, Outputs, PairsOutputs, Stage, TaskId, WorkDir};
use dupgram_corpus::Input;
use dupgram_pipeline::output::{OutputFile, PairFiles, PairFormat};
use dupgram_pipeline::{Control, NgramConfig, PairsConfig, PairsStats, Passes, find_pairs};
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
    let control = Control::default();
    let base = &config.base;
    let paths: Vec<PathBuf> =
        base.inputs.iter().map(|i| if let Input::Path(p) = i { p.clone() } else { unreachable!() }).collect();
    let (inputs, cut) = JobPlan::cut(&paths, None, shards, buckets).unwrap();
    let sieve_bytes = Passes::new(base, &control, work).unwrap().sieve_size().unwrap_or(0);
    let plan = JobPlan {
        command: "pairs".into(),
        argv: vec![],
        cwd: std::env::current_dir().unwrap(),
        options: String::new(),
        inputs,
        shards: cut,
        buckets,
        sieve_bytes,
        keep_state: false,
        keep_postings: false,
    };
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
        stage.run(task).unwrap_or_else(|e| panic!("{}: {e}", task.name()));
    }
    stage.pairs_summary().unwrap()
}

/// The counts a summary shares with the one-machine job's (times, blocks and spill differ).
fn counts(s: &PairsStats) -> [u64; 12] {
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
        let config = config(&path, chunk, max_df);
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
