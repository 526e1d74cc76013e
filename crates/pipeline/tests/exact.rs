//! The engine against the naive in-memory counter, on random corpora, with
//! chunks and fan-ins small enough to force many runs and multi-pass merges.

use std::collections::BTreeMap;
use std::io::Write;

use dupgram_corpus::{Format, Input};
use dupgram_lexicon::Normalization;
use dupgram_pipeline::{Control, Limits, NgramConfig, count_ngrams, count_ngrams_each};
use dupgram_testkit::{Corpus, CorpusSpec, NaiveOptions, naive_ngrams};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    seed: u64,
    tokens: u64,
    vocabulary: u32,
    n: usize,
    threads: usize,
    chunk: usize,
    fan_in: usize,
    batch: usize,
    sieve: bool,
    /// Count in this many parts by first word, the sieve refilled for each.
    sieve_parts: Option<usize>,
    /// Freeze the lexicon's table at this many words: the rest go through the overflow.
    table_words: Option<usize>,
    stop_top: usize,
    stopwords: Vec<String>,
    min_count: u64,
    format: Format,
}

impl Case {
    /// A corpus of `tokens` generated tokens, counted with two threads, a
    /// sieve, small chunks and batches, and nothing else forced.
    fn new(seed: u64, tokens: u64, vocabulary: u32, n: usize) -> Case {
        Case {
            seed,
            tokens,
            vocabulary,
            n,
            threads: 2,
            chunk: 4000,
            fan_in: 4,
            batch: 600,
            sieve: true,
            sieve_parts: None,
            table_words: None,
            stop_top: 0,
            stopwords: vec![],
            min_count: 2,
            format: Format::Text,
        }
    }
}

fn case() -> impl Strategy<Value = Case> {
    let corpus = (
        any::<u64>(),
        200u64..3000,
        prop_oneof![Just(8u32), Just(40), Just(2000)],
        prop_oneof![Just(Format::Jsonl), Just(Format::Text), Just(Format::Vertical)],
    );
    let engine = (
        1usize..=3,
        prop_oneof![Just(1usize), 2usize..40, 500usize..5000],
        2usize..6,
        prop_oneof![Just(16usize), 64usize..2048],
        any::<bool>(),
        prop_oneof![Just(None), (1usize..6).prop_map(Some)],
        prop_oneof![Just(None), (0usize..40).prop_map(Some)],
    );
    let counting = (1usize..=12, prop_oneof![Just(0usize), 1usize..4], any::<bool>(), 2u64..4);
    (corpus, engine, counting).prop_map(
        |(
            (seed, tokens, vocabulary, format),
            (threads, chunk, fan_in, batch, sieve, sieve_parts, table_words),
            (n, stop_top, stop, min_count),
        )| Case {
            seed,
            tokens,
            vocabulary,
            n,
            threads,
            chunk,
            fan_in,
            batch,
            sieve,
            sieve_parts,
            table_words,
            stop_top,
            stopwords: if stop { vec!["ka".into(), "lo".into()] } else { vec![] },
            min_count,
            format,
        },
    )
}

/// Writes the corpus in `format`; returns the documents' texts.
fn write_corpus(case: &Case, path: &std::path::Path) -> Vec<String> {
    let spec = CorpusSpec {
        seed: case.seed,
        tokens: case.tokens,
        vocabulary: case.vocabulary,
        mean_doc_len: 40,
        ..CorpusSpec::default()
    };
    let corpus = Corpus::new(spec);
    let docs: Vec<_> = Corpus::new(CorpusSpec {
        seed: case.seed,
        tokens: case.tokens,
        vocabulary: case.vocabulary,
        mean_doc_len: 40,
        ..CorpusSpec::default()
    })
    .collect();
    let texts: Vec<String> = docs.iter().map(|d| corpus.text(d)).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (d, t) in docs.iter().zip(&texts) {
        match case.format {
            Format::Jsonl => writeln!(f, "{}", serde_json_line(&d.id, t)).unwrap(),
            Format::Text => writeln!(f, "{t}").unwrap(),
            Format::Parquet => unreachable!("these cases write line formats"),
            Format::Vertical => {
                writeln!(f, "<doc id=\"{}\">\n<p>", d.id).unwrap();
                for w in t.split(' ') {
                    writeln!(f, "{w}\tX").unwrap();
                }
                writeln!(f, "</p>\n</doc>").unwrap();
            }
        }
    }
    texts
}

fn serde_json_line(id: &str, text: &str) -> String {
    format!("{{\"id\": \"{id}\", \"text\": \"{text}\"}}")
}

fn run_engine(
    case: &Case,
    path: &std::path::Path,
    tmp: &std::path::Path,
) -> (BTreeMap<String, u64>, dupgram_pipeline::NgramStats) {
    let norm = if case.format == Format::Vertical { Normalization::lines() } else { Normalization::default() };
    let mut config = NgramConfig::new(vec![Input::Path(path.to_owned())], case.n);
    config.read.format = Some(case.format);
    config.norm = norm;
    config.stopwords = case.stopwords.clone();
    config.stop_top = case.stop_top;
    config.min_count = case.min_count;
    config.memory = 64 << 20;
    config.threads = case.threads;
    config.tmp_dir = tmp.to_owned();
    config.sieve = case.sieve;
    config.limits = Limits {
        repeat_prints: None,
        chunk_ngrams: Some(case.chunk),
        fan_in: Some(case.fan_in),
        batch_bytes: Some(case.batch),
        sieve_parts: case.sieve_parts,
        table_words: case.table_words,
        epoch_slots: case.table_words.map(|w| (w % 5 + 1) as u32),
        output_word_bytes: case.table_words.map(|w| w as u64 * 16),
        block_files: None,
        merge_buckets: None,
        shared_set_documents: None,
        disk_room: None,
        sieve_bytes: None,
        documents_on_disk: None,
    };
    let (listed, stats) = run_listed(&config);
    (listed.into_iter().collect(), stats)
}

/// The n-grams as the engine writes them: in its order, each with its count.
fn run_listed(config: &NgramConfig) -> (Vec<(String, u64)>, dupgram_pipeline::NgramStats) {
    let mut got = Vec::new();
    let mut last: Option<Vec<u32>> = None;
    let outcome = count_ngrams(config, &Control::default(), &mut |lex, ids, count| {
        assert!(last.as_deref().is_none_or(|l| l < ids), "output is not in increasing ID order");
        last = Some(ids.to_vec());
        let words: Vec<&str> = ids.iter().map(|&i| lex.word(i)).collect();
        got.push((words.join(" "), count));
        Ok(())
    })
    .unwrap();
    (got, outcome.stats)
}

/// A table frozen at any number of words — the words met after it counted,
/// numbered and resolved through the overflow logs on disk — gives the same
/// n-grams in the same order as a table that held every word, with stop
/// words promoted from either side, in one part or several.
#[test]
fn a_frozen_table_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.txt");
    let case = Case { chunk: 3000, batch: 700, ..Case::new(17, 40_000, 5000, 4) };
    write_corpus(&case, &path);
    for stop_top in [0, 3] {
        let mut config = NgramConfig::new(vec![Input::Path(path.clone())], 4);
        config.memory = 64 << 20;
        config.threads = 2;
        config.tmp_dir = dir.path().to_owned();
        config.stop_top = stop_top;
        config.limits.batch_bytes = Some(700);
        let (plain, p) = run_listed(&config);
        assert_eq!(p.overflow_words, 0);
        assert!(plain.len() > 100, "{} n-grams", plain.len());
        for (words, parts, held) in [(0, None, 0), (1, None, 1000), (50, Some(3), 0), (1000, None, 5000)] {
            config.limits.table_words = Some(words);
            // Epochs of one slot, of a few, and as many as the memory gives.
            config.limits.epoch_slots = [Some(1), Some(3), None][words % 3];
            config.limits.sieve_parts = parts;
            // Few of the output's words held, the others read from disk batch by batch.
            config.limits.output_word_bytes = Some(held);
            let (got, stats) = run_listed(&config);
            assert!(stats.overflow_words > 0 && stats.overflow_tokens >= stats.overflow_words, "{stats:?}");
            // A slot per distinct word and epoch of a worker's dictionary.
            let slots = stats.overflow_slots;
            assert!(stats.overflow_words <= slots && slots <= stats.overflow_tokens, "{stats:?}");
            match config.limits.epoch_slots {
                Some(1) => assert!(slots > stats.overflow_words, "one-slot epochs meet words again: {stats:?}"),
                None => assert!(slots <= 2 * stats.overflow_words, "one epoch a worker: {stats:?}"),
                _ => {}
            }
            assert_eq!(got, plain, "table frozen at {words} words, stop_top {stop_top}");
            assert_eq!(
                (stats.tokens, stats.documents, stats.ngrams),
                (p.tokens, p.documents, p.ngrams),
                "the summary's counts, table frozen at {words} words"
            );
            assert_eq!(
                (stats.vocabulary, stats.repeated_words, stats.stopwords, stats.distinct_ngrams, stats.duplicate_types),
                (p.vocabulary, p.repeated_words, p.stopwords, p.distinct_ngrams, p.duplicate_types)
            );
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary files left");
        }
    }
}

/// A count whose sieve the lexicon pass filled (or that has none) is cut
/// into parts by first word when its runs would not fit the room on disk,
/// the one sieve serving every part: the same n-grams in the same order as
/// one part, and as many parts as the room asks for.
#[test]
fn a_count_cut_by_disk_alone_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.txt");
    let case = Case::new(23, 60_000, 3000, 3);
    write_corpus(&case, &path);
    for sieve in [true, false] {
        let mut config = NgramConfig::new(vec![Input::Path(path.clone())], 3);
        config.memory = 64 << 20;
        config.threads = 2;
        config.sieve = sieve;
        config.tmp_dir = dir.path().to_owned();
        config.limits.batch_bytes = Some(700);
        let (whole, one) = run_listed(&config);
        assert_eq!(one.sieve.parts, 1, "{:?}", one.sieve);
        assert_eq!(one.seconds.renumber, 0.0, "a sieve filled by the lexicon pass, or none");
        assert!(whole.len() > 100, "{} n-grams", whole.len());
        // A room of a fifth of the one part's runs: about five parts.
        config.limits.disk_room = Some(one.run_bytes / 5);
        let (parted, stats) = run_listed(&config);
        assert!(
            (4..=12).contains(&stats.sieve.parts),
            "sieve {sieve}: {:?} for {} run bytes",
            stats.sieve,
            one.run_bytes
        );
        assert_eq!(parted, whole, "sieve {sieve}: the count in {} parts", stats.sieve.parts);
        assert_eq!(
            (
                stats.ngrams,
                stats.distinct_ngrams,
                stats.duplicate_types,
                stats.duplicate_occurrences,
                stats.sorted_ngrams
            ),
            (one.ngrams, one.distinct_ngrams, one.duplicate_types, one.duplicate_occurrences, one.sorted_ngrams),
            "sieve {sieve}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary files left");
    }
}

/// Several n counted over one lexicon pass (`stats`), its word streams
/// kept whole for every n but the last: each n's counts are those of a
/// count of that n alone, with a sieve per n or none, in one part or
/// several, with words past a frozen table; nothing is left on disk.
#[test]
fn several_n_over_one_lexicon_pass_count_what_each_n_alone_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.txt");
    let case = Case::new(41, 30_000, 2000, 3);
    write_corpus(&case, &path);
    let ns = [1, 2, 5, 9];
    assert!(ns.len() >= dupgram_pipeline::SHARED_LEXICON_FROM, "over one lexicon pass");
    for (sieve, parts, table_words, disk_room) in [
        (true, None, None, None),
        (true, Some(3), None, None),
        (false, None, Some(40), None),
        (true, None, Some(300), Some(20_000)),
    ] {
        let mut config = NgramConfig::new(vec![Input::Path(path.clone())], ns[0]);
        config.memory = 64 << 20;
        config.threads = 2;
        config.sieve = sieve;
        config.tmp_dir = dir.path().to_owned();
        config.limits.batch_bytes = Some(700);
        config.limits.sieve_parts = parts;
        config.limits.table_words = table_words;
        config.limits.disk_room = disk_room;
        let mut each = Vec::new();
        count_ngrams_each(&config, &ns, &Control::default(), &mut |stats| {
            each.push(stats);
            Ok(())
        })
        .unwrap();
        assert_eq!(each.iter().map(|s| s.n).collect::<Vec<_>>(), ns);
        for stats in &each {
            let alone = NgramConfig { n: stats.n, ..config.clone() };
            let one = count_ngrams(&alone, &Control::default(), &mut |_, _, _| Ok(())).unwrap().stats;
            let what = format!("n {}, sieve {sieve}, parts {parts:?}, table {table_words:?}", stats.n);
            assert!(one.duplicate_types > 0, "{what}");
            assert_eq!(
                (stats.tokens, stats.documents, stats.vocabulary, stats.ngrams, stats.distinct_ngrams),
                (one.tokens, one.documents, one.vocabulary, one.ngrams, one.distinct_ngrams),
                "{what}"
            );
            assert_eq!(
                (stats.duplicate_types, stats.duplicate_occurrences),
                (one.duplicate_types, one.duplicate_occurrences),
                "{what}"
            );
            if parts.is_some() {
                assert!(stats.sieve.parts >= 2, "{what}: {:?}", stats.sieve);
            }
        }
        if table_words.is_some() {
            assert!(each[0].overflow_words > 0, "{:?}", each[0]);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary files left");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn engine_equals_naive_counter(case in case()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpus.in");
        let texts = write_corpus(&case, &path);
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let (got, stats) = run_engine(&case, &path, &tmp);
        let naive = naive_ngrams(&texts, &NaiveOptions {
            norm: Normalization::default(),
            stopwords: case.stopwords.clone(),
            stop_top: case.stop_top,
            n: case.n,
            min_count: case.min_count,
        });
        prop_assert_eq!(&got, &naive);
        let all = naive_ngrams(&texts, &NaiveOptions { norm: Normalization::default(), stopwords: case.stopwords.clone(), stop_top: case.stop_top, n: case.n, min_count: 1 });
        prop_assert_eq!(stats.distinct_ngrams, all.len() as u64);
        prop_assert_eq!(stats.ngrams, all.values().sum::<u64>());
        prop_assert_eq!(stats.duplicate_types, all.values().filter(|&&c| c >= 2).count() as u64);
        // Runs and intermediate merges are all gone.
        prop_assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }
}

#[test]
fn output_is_the_same_for_any_threads_and_memory() {
    let case = Case { threads: 1, chunk: 100, fan_in: 3, batch: 300, ..Case::new(99, 20_000, 500, 5) };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.in");
    write_corpus(&case, &path);
    let (reference, _) = run_engine(&case, &path, dir.path());
    for (threads, chunk, fan_in, sieve) in [(2, 7, 2, false), (3, 100_000, 64, true), (4, 1, 5, true)] {
        let other = Case { threads, chunk, fan_in, sieve, ..case.clone() };
        let (got, stats) = run_engine(&other, &path, dir.path());
        assert_eq!(got, reference, "threads {threads}, chunk {chunk}, fan-in {fan_in}");
        if chunk == 1 {
            assert!(stats.merge_passes >= 3, "{stats:?}");
        }
    }
}

/// The summary's n-gram totals of `stats` are those of `one` (a count in one part).
fn assert_same_totals(stats: &dupgram_pipeline::NgramStats, one: &dupgram_pipeline::NgramStats, how: &str) {
    for (what, a, b) in [
        ("ngrams", stats.ngrams, one.ngrams),
        ("distinct", stats.distinct_ngrams, one.distinct_ngrams),
        ("types", stats.duplicate_types, one.duplicate_types),
        ("occurrences", stats.duplicate_occurrences, one.duplicate_occurrences),
        ("written", stats.output_ngrams, one.output_ngrams),
    ] {
        assert_eq!(a, b, "{what}, {how}");
    }
}

/// A count in parts by first word (the sieve cleared and refilled for each)
/// gives the same n-grams in the same order as one count, and the same
/// totals; the parts are fewer only when one word holds more than a share.
#[test]
fn a_count_in_parts_equals_one_count() {
    let case = Case { chunk: 5000, fan_in: 8, batch: 500, format: Format::Jsonl, ..Case::new(5, 30_000, 2000, 4) };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.in");
    write_corpus(&case, &path);
    let (reference, one) = run_engine(&case, &path, dir.path());
    assert_eq!(one.sieve.parts, 1, "{:?}", one.sieve);
    for parts in [1, 2, 3, 7] {
        let (got, stats) = run_engine(&Case { sieve_parts: Some(parts), ..case.clone() }, &path, dir.path());
        assert_eq!(got, reference, "{parts} parts");
        assert!(stats.sieve.used && stats.sieve.dropped.is_none(), "{:?}", stats.sieve);
        assert!(stats.sieve.parts >= 1 && stats.sieve.parts as usize <= parts, "{:?}", stats.sieve);
        if parts > 1 {
            assert!(stats.sieve.parts > 1, "{:?}", stats.sieve);
        }
        assert_same_totals(&stats, &one, &format!("{parts} parts"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary files left");
    }
}

/// A count in parts over repeat prints proven once (print runs merged,
/// each part's table marked with its buckets' repeats) gives the same
/// n-grams in the same order as one count, with the same totals, in one
/// part or many, with runs merged in several rounds, from a frozen table
/// too; and leaves no file behind.
#[test]
fn a_count_over_repeat_prints_equals_one_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.txt");
    let case = Case::new(23, 60_000, 3000, 5);
    write_corpus(&case, &path);
    let mut config = NgramConfig::new(vec![Input::Path(path.clone())], 5);
    config.memory = 64 << 20;
    config.threads = 2;
    config.tmp_dir = dir.path().to_owned();
    config.limits.batch_bytes = Some(600);
    let (plain, one) = run_listed(&config);
    assert!(plain.len() > 100, "{} n-grams", plain.len());
    assert_eq!(one.sieve.repeat_prints, 0, "{:?}", one.sieve);
    config.limits.repeat_prints = Some(true);
    for (parts, chunk, fan_in, table_words) in
        [(None, None, None, None), (Some(4), Some(1000), None, None), (Some(9), Some(300), Some(3), Some(200))]
    {
        config.limits.sieve_parts = parts;
        config.limits.chunk_ngrams = chunk;
        config.limits.fan_in = fan_in;
        config.limits.table_words = table_words;
        let (got, stats) = run_listed(&config);
        assert_eq!(got, plain, "{parts:?} parts, chunks of {chunk:?}");
        assert!(stats.sieve.repeat_prints >= stats.duplicate_types, "{:?}", stats.sieve);
        assert!(stats.sieve.print_bytes > 0, "{:?}", stats.sieve);
        if let Some(p) = parts {
            assert!(stats.sieve.parts > 1 && stats.sieve.parts as usize <= p + 1, "{:?}", stats.sieve);
        }
        assert_same_totals(&stats, &one, &format!("{parts:?} parts"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary files left");
    }
}
