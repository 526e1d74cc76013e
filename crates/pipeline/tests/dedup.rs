//! `dedup` decides the same whichever way it gets each document's duplicate
//! n-grams: gathered in memory by the index merge, read back from the index
//! file in one block or in many, or from the index sorted by document on
//! disk; with or without a sieve; for any threads and batch size.

use std::io::Write;

use dupgram_corpus::{Format, Input};
use dupgram_lexicon::Normalization;
use dupgram_pipeline::output::OutputFile;
use dupgram_pipeline::{Control, DedupConfig, DedupStats, Limits, NgramConfig, PipelineError, UnitKind, dedup};
use dupgram_testkit::{Corpus, CorpusSpec, write_during};
use proptest::prelude::*;

/// Writes a vertical corpus of generated documents cut into paragraphs
/// (some without `</doc>`); returns its path.
fn write_vertical(dir: &std::path::Path, seed: u64, tokens: u64, vocabulary: u32) -> std::path::PathBuf {
    let spec = CorpusSpec { seed, tokens, vocabulary, mean_doc_len: 40, ..CorpusSpec::default() };
    let corpus = Corpus::new(spec.clone());
    let path = dir.join("c.vert");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for (i, d) in Corpus::new(spec).enumerate() {
        writeln!(f, "<doc id=\"{}\">", d.id).unwrap();
        for (j, w) in corpus.text(&d).split(' ').enumerate() {
            if j % 9 == 0 {
                if j > 0 {
                    writeln!(f, "</p>").unwrap();
                }
                writeln!(f, "<p>").unwrap();
            }
            writeln!(f, "{w}\tX").unwrap();
        }
        writeln!(f, "</p>").unwrap();
        if i % 5 != 0 {
            writeln!(f, "</doc>").unwrap();
        }
    }
    f.flush().unwrap();
    path
}

fn run(
    path: &std::path::Path,
    tmp: &std::path::Path,
    name: &str,
    configure: impl Fn(&mut DedupConfig),
) -> (Vec<u8>, DedupStats) {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], 4);
    base.read.format = Some(Format::Vertical);
    base.norm = Normalization::lines();
    base.memory = 64 << 20;
    base.tmp_dir = tmp.to_owned();
    let mut config = DedupConfig::new(base);
    config.unit = UnitKind::Paragraph;
    config.threshold = 0.4;
    configure(&mut config);
    let target = tmp.join(name);
    let mut out = OutputFile::create(Some(&target)).unwrap();
    let stats = dedup(&config, &Control::default(), &mut out).unwrap();
    out.finish().unwrap();
    (std::fs::read(&target).unwrap(), stats)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn gathered_lists_and_index_blocks_decide_alike(
        seed in any::<u64>(),
        tokens in 500u64..4000,
        vocabulary in prop_oneof![Just(30u32), Just(300)],
        threads in 1usize..=3,
        batch in prop_oneof![Just(64usize), 100usize..2000],
        smoothing in any::<bool>(),
        exact in any::<bool>(),
        block_files in any::<bool>(),
        buckets in 1usize..=2,
        parts in prop_oneof![Just(2usize), Just(5)],
        table_words in 0usize..60,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = write_vertical(dir.path(), seed, tokens, vocabulary);
        let set = |c: &mut DedupConfig| {
            c.smoothing = smoothing;
            c.exact = exact;
        };
        // Gathered by the merge: one block, in memory.
        let (gathered, g) = run(&path, dir.path(), "gathered.vert", |c| set(c));
        prop_assert_eq!(g.index_blocks, 1);
        // Read back from the index file, in blocks of a few documents, by other threads and batches.
        let (blocks, b) = run(&path, dir.path(), "blocks.vert", |c| {
            set(c);
            c.base.threads = threads;
            c.base.limits = Limits {
                repeat_prints: None,
                chunk_ngrams: Some(40),
                fan_in: Some(3),
                batch_bytes: Some(batch),
                block_files: Some(block_files),
                merge_buckets: Some(buckets),
                // The lexicon's table frozen early: the other words through its overflow.
                table_words: Some(table_words),
                // And its overflow's dictionaries in epochs of a few words.
                epoch_slots: Some((table_words % 7 + 1) as u32),
                ..Limits::default()
            };
        });
        prop_assert!(b.index_blocks > 1 || g.index.documents < 4, "{} blocks", b.index_blocks);
        // Each block is wanted once, and one at a time: with more than two
        // the index is cut by block in its only reading; else it is read
        // once per block.
        let reads = if block_files && b.index_blocks > 2 { 1 } else { b.index_blocks };
        prop_assert_eq!(b.index_reads, reads, "{} readings of {} blocks", b.index_reads, b.index_blocks);
        // Without a sieve every n-gram is a candidate; gathered still.
        let (unsieved, u) = run(&path, dir.path(), "unsieved.vert", |c| {
            set(c);
            c.base.sieve = false;
            c.base.threads = threads;
            c.base.limits = Limits { batch_bytes: Some(batch), merge_buckets: Some(3 - buckets), ..Limits::default() };
        });
        prop_assert_eq!(u.index_blocks, 1);
        // The blocks' and the lists' merges ran in one bucket and in two, or the other way round.
        prop_assert!(b.index.merge_buckets <= buckets as u32 && u.index.merge_buckets <= 3 - buckets as u32);
        prop_assert!(gathered == blocks, "gathered lists and index blocks differ");
        prop_assert!(gathered == unsieved, "with and without a sieve differ");
        // Indexed in parts by first word (no lists then).
        let (parted, p) = run(&path, dir.path(), "parts.vert", |c| {
            set(c);
            c.base.threads = threads;
            c.base.limits = Limits { batch_bytes: Some(batch), sieve_parts: Some(parts), ..Limits::default() };
        });
        prop_assert!(gathered == parted, "in one part and in {} differ", parts);
        let split = p.index.first_pass.as_ref().unwrap().sieve.parts;
        prop_assert!(split > 1 || vocabulary == 30, "{} parts", split);
        // Sorted by document on disk, in small runs, in one part or several, in one bucket or two.
        let (by_doc, d) = run(&path, dir.path(), "by-doc.vert", |c| {
            set(c);
            c.base.threads = threads;
            c.base.limits = Limits {
                chunk_ngrams: Some(40),
                fan_in: Some(3),
                batch_bytes: Some(batch),
                merge_buckets: Some(buckets),
                sieve_parts: (parts == 5).then_some(parts),
                documents_on_disk: Some(true),
                ..Limits::default()
            };
        });
        prop_assert!(gathered == by_doc, "gathered lists and the index sorted by document differ");
        prop_assert_eq!((d.index_blocks, d.index_reads, d.index_by_document), (0, 0, true));
        prop_assert!(!g.index_by_document && !b.index_by_document);
        prop_assert_eq!(d.index.all_ngrams, g.index.all_ngrams);
        for s in [&b, &u, &d] {
            prop_assert_eq!(
                (s.units, s.units_removed, s.units_exact, s.units_smoothed, s.tokens_removed),
                (g.units, g.units_removed, g.units_exact, g.units_smoothed, g.tokens_removed)
            );
            prop_assert_eq!(s.index.duplicate_occurrences, g.index.duplicate_occurrences);
        }
        prop_assert!(g.units_removed > 0 || vocabulary > 30 || tokens < 1000, "nothing removed");
    }
}

/// The decisions take a whole document's token count from the index's
/// table, not from tokenising its text again, so a file written to while
/// the job runs is found by its stamp. Here every `alpha` becomes `gamma`:
/// the same length and the same tokens in every document, which a count
/// of tokens could not tell from the text indexed.
#[test]
fn a_file_written_to_during_the_job_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.txt");
    let line = "alpha beta delta one two three four five six seven\n";
    let text: String = (0..20_000).map(|i| if i % 3 == 0 { line.to_owned() } else { format!("{i} {line}") }).collect();
    for _attempt in 0..5 {
        std::fs::write(&path, &text).unwrap();
        // The write below falls on a later tick of the clock that stamps files.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut base = NgramConfig::new(vec![Input::Path(path.clone())], 4);
        base.memory = 64 << 20;
        base.tmp_dir = dir.path().to_owned();
        let config = DedupConfig::new(base);
        let control = Control::default();
        let mut out = OutputFile::create(Some(&dir.path().join("out.txt"))).unwrap();
        let changed = text.replace("alpha", "gamma");
        let started = || !control.progress.phase().is_empty();
        let Some(result) = write_during(&path, changed.as_bytes(), started, || dedup(&config, &control, &mut out))
        else {
            continue;
        };
        match result {
            Err(PipelineError::Changed(what)) => {
                assert!(what.contains("c.txt") && what.contains("modification time"), "{what}");
                return;
            }
            // The job may have checked the file just before the write ended: try again.
            Ok(_) => continue,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("a file written to while the job ran was not noticed, in five tries");
}
