//! `dedup --unit span` against a brute-force walker on random corpora with
//! repeated passages planted near K words and far above, across paragraph
//! and document boundaries: the same tokens marked, and `--strip` gives the
//! brute force's text, in every format, with chunks small enough that the
//! sorts spill many runs and merge them in several rounds.

use std::collections::HashSet;
use std::io::Write;

use dupgram_corpus::{Format, Input};
use dupgram_lexicon::Normalization;
use proptest::prelude::*;

use dupgram_pipeline::output::OutputFile;
use dupgram_pipeline::{Control, DedupConfig, DedupStats, NgramConfig, PipelineError, dedup_spans};

/// One word of a document as written: the word, punctuation after it, and
/// whether a paragraph ends after it.
#[derive(Debug, Clone)]
struct Word {
    word: String,
    punct: &'static str,
    par_end: bool,
}

const VOCAB: [&str; 6] = ["ab", "ba", "cd", "x", "yy", "ünï"];
const PUNCT: [&str; 4] = ["", "", ",", "."];

fn word() -> impl Strategy<Value = Word> {
    (0..VOCAB.len(), 0..PUNCT.len(), any::<bool>(), prop::bool::weighted(0.1)).prop_map(|(w, p, upper, par_end)| {
        let mut word = VOCAB[w].to_owned();
        if upper {
            word = word.to_uppercase();
        }
        Word { word, punct: PUNCT[p], par_end }
    })
}

/// Random documents, then passages copied from earlier text (or earlier in
/// the same document) of K − 1, K, K + 1 and 3K words, case and punctuation
/// changed at random, inserted anywhere.
fn corpus(k: usize) -> impl Strategy<Value = Vec<Vec<Word>>> {
    let doc = prop::collection::vec(word(), 0..30);
    let plant = (any::<u16>(), any::<u16>(), any::<u16>(), 0usize..4, any::<bool>());
    (prop::collection::vec(doc, 1..10), prop::collection::vec(plant, 0..14)).prop_map(move |(mut docs, plants)| {
        for (from, at, start, class, upper) in plants {
            let len = [k - 1, k, k + 1, 3 * k][class].max(1);
            let source: Vec<Word> = docs[..=(from as usize % docs.len())].concat();
            if source.len() < len {
                continue;
            }
            let s = start as usize % (source.len() - len + 1);
            let mut passage = source[s..s + len].to_vec();
            if upper {
                passage[0].word = passage[0].word.to_uppercase();
            }
            let target = (from as usize + at as usize) % docs.len();
            let pos = at as usize % (docs[target].len() + 1);
            docs[target].splice(pos..pos, passage);
        }
        docs
    })
}

/// A document as running text, with the byte range of each word's letters.
fn doc_text(doc: &[Word], flat: bool) -> (String, Vec<std::ops::Range<usize>>) {
    let mut text = String::new();
    let mut ranges = Vec::new();
    for (i, w) in doc.iter().enumerate() {
        if i > 0 {
            text.push_str(if doc[i - 1].par_end && !flat { "\n\n" } else { " " });
        }
        ranges.push(text.len()..text.len() + w.word.len());
        text.push_str(&w.word);
        text.push_str(w.punct);
    }
    (text, ranges)
}

/// The definition, walked the obvious way: a token is removed when a K-gram
/// covering it occurred before in kept text or earlier in its document.
/// Returns each document's removed flags (all set when it goes whole).
fn brute_force(tokens: &[Vec<String>], k: usize, min_tokens: usize) -> Vec<Vec<bool>> {
    let mut kept: HashSet<&[String]> = HashSet::new();
    let mut out = Vec::new();
    for doc in tokens {
        let mut local = HashSet::new();
        let mut removed = vec![false; doc.len()];
        for (p, g) in doc.windows(k).enumerate() {
            if local.contains(g) || kept.contains(g) {
                removed[p..p + k].fill(true);
            }
            local.insert(g);
        }
        let left = removed.iter().filter(|&&r| !r).count();
        if left < min_tokens {
            removed.fill(true);
        } else {
            for (p, g) in doc.windows(k).enumerate() {
                if !removed[p..p + k].contains(&true) {
                    kept.insert(g);
                }
            }
        }
        out.push(removed);
    }
    out
}

/// The brute force's stripped text: each run of removed words, from its first
/// letter to its last word's last letter, cut; the kept text on either side
/// trimmed of space and joined by one space.
fn stripped(text: &str, ranges: &[std::ops::Range<usize>], removed: &[bool]) -> String {
    let mut pieces: Vec<String> = Vec::new();
    let mut at = 0;
    let mut i = 0;
    let mut cut_before = false;
    while i < removed.len() {
        if !removed[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < removed.len() && removed[j] {
            j += 1;
        }
        let mut piece = &text[at..ranges[i].start];
        if cut_before {
            piece = piece.trim_start();
        }
        pieces.push(piece.trim_end().to_owned());
        at = ranges[j - 1].end;
        cut_before = true;
        i = j;
    }
    let last = &text[at..];
    pieces.push(if cut_before { last.trim_start() } else { last }.to_owned());
    pieces.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ")
}

fn write_corpus(path: &std::path::Path, docs: &[Vec<Word>], format: Format) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (i, doc) in docs.iter().enumerate() {
        match format {
            Format::Text => writeln!(f, "{}", doc_text(doc, true).0).unwrap(),
            Format::Jsonl => {
                writeln!(f, "{}", serde_json::json!({"id": format!("d{i}"), "text": doc_text(doc, false).0})).unwrap()
            }
            Format::Vertical => {
                writeln!(f, "<doc id=\"d{i}\">\n<p>").unwrap();
                for w in doc {
                    writeln!(f, "{}\tTAG", w.word).unwrap();
                    if w.par_end {
                        writeln!(f, "</p>\n<p>").unwrap();
                    }
                }
                writeln!(f, "</p>\n</doc>").unwrap();
            }
            Format::Parquet => unreachable!("these cases write line formats"),
        }
    }
    f.flush().unwrap();
}

/// The tokens the brute force compares: folded words in text, words as they are in vertical files.
fn tokens(docs: &[Vec<Word>], format: Format) -> Vec<Vec<String>> {
    docs.iter()
        .map(|d| {
            d.iter().map(|w| if format == Format::Vertical { w.word.clone() } else { w.word.to_lowercase() }).collect()
        })
        .collect()
}

fn run(
    path: &std::path::Path,
    tmp: &std::path::Path,
    format: Format,
    configure: impl Fn(&mut DedupConfig),
) -> Result<(String, DedupStats), PipelineError> {
    let mut base = NgramConfig::new(vec![Input::Path(path.to_owned())], 7);
    base.read.format = Some(format);
    base.norm = if format == Format::Vertical { Normalization::lines() } else { Normalization::default() };
    base.memory = 1 << 30;
    // Tiny chunks and a fan-in of 3: many runs, merged in several rounds.
    base.limits.chunk_ngrams = Some(64);
    base.limits.fan_in = Some(3);
    base.tmp_dir = tmp.to_owned();
    let mut config = DedupConfig::new(base);
    config.threshold = 1.0;
    configure(&mut config);
    let target = tmp.join("out");
    let mut out = OutputFile::create(Some(&target)).unwrap();
    let stats = dedup_spans(&config, &Control::default(), &mut out)?;
    out.finish().unwrap();
    Ok((std::fs::read_to_string(&target).unwrap(), stats))
}

/// Removed flags per token from a marked output.
fn marks(output: &str, docs: &[Vec<Word>], format: Format) -> Vec<Vec<bool>> {
    match format {
        Format::Vertical => {
            let mut all = Vec::new();
            let mut doc = Vec::new();
            for line in output.lines() {
                let (mark, rest) = line.split_once('\t').unwrap();
                if rest == "</doc>" {
                    all.push(std::mem::take(&mut doc));
                } else if !rest.starts_with('<') {
                    doc.push(mark == "1");
                }
            }
            all
        }
        _ => output
            .lines()
            .zip(docs)
            .map(|(line, doc)| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                let (text, ranges) = doc_text(doc, false);
                let spans: Vec<[u64; 2]> = serde_json::from_value(value["dup_spans"].clone()).unwrap();
                ranges
                    .iter()
                    .map(|r| {
                        let start = text[..r.start].chars().count() as u64;
                        let end = text[..r.end].chars().count() as u64;
                        spans.iter().any(|s| s[0] <= start && end <= s[1])
                    })
                    .collect()
            })
            .collect(),
    }
}

fn check(docs: &[Vec<Word>], k: usize, min_tokens: usize) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    for format in [Format::Jsonl, Format::Vertical, Format::Text] {
        let path = dir.path().join("corpus");
        write_corpus(&path, docs, format);
        let expected = brute_force(&tokens(docs, format), k, min_tokens);
        let configure = |strip: bool| {
            move |c: &mut DedupConfig| {
                c.min_span = k as u32;
                c.min_tokens = min_tokens as u32;
                c.strip = strip;
            }
        };
        let removed_tokens: usize = expected.iter().map(|d| d.iter().filter(|&&r| r).count()).sum();
        if format != Format::Text {
            let (out, stats) = run(&path, dir.path(), format, configure(false)).unwrap();
            prop_assert_eq!(&marks(&out, docs, format), &expected, "{:?} marks\n{}", format, out);
            prop_assert_eq!(stats.tokens_removed, removed_tokens as u64);
            if format == Format::Jsonl {
                // Without the sieve, with one so small that collisions let unique K-grams
                // through, and sieved and hashed in three parts by fingerprint.
                for (sieve_bytes, parts) in [(None, None), (Some(16), None), (Some(16), Some(3))] {
                    let (other, _) = run(&path, dir.path(), format, |c| {
                        configure(false)(c);
                        c.base.sieve = sieve_bytes.is_some();
                        c.base.limits.sieve_bytes = sieve_bytes;
                        c.base.limits.sieve_parts = parts;
                    })
                    .unwrap();
                    prop_assert_eq!(&other, &out, "sieve of {:?} bytes, {:?} parts", sieve_bytes, parts);
                }
            }
        }
        let (out, _) = run(&path, dir.path(), format, configure(true)).unwrap();
        match format {
            Format::Vertical => {
                let kept: Vec<&str> = out.lines().filter(|l| !l.starts_with('<')).collect();
                let want: Vec<String> = docs
                    .iter()
                    .zip(&expected)
                    .flat_map(|(d, r)| d.iter().zip(r).filter(|(_, r)| !**r).map(|(w, _)| format!("{}\tTAG", w.word)))
                    .collect();
                prop_assert_eq!(kept, want);
            }
            _ => {
                let got: Vec<String> = out
                    .lines()
                    .map(|l| {
                        if format == Format::Jsonl {
                            let v: serde_json::Value = serde_json::from_str(l).unwrap();
                            v["text"].as_str().unwrap().to_owned()
                        } else {
                            l.to_owned()
                        }
                    })
                    .collect();
                // A document with nothing kept is dropped; an empty one only when
                // --min-tokens asks for more than nothing.
                let want: Vec<String> = docs
                    .iter()
                    .zip(&expected)
                    .filter(|(d, r)| (d.is_empty() && min_tokens == 0) || r.contains(&false))
                    .map(|(d, r)| {
                        let (text, ranges) = doc_text(d, format == Format::Text);
                        stripped(&text, &ranges, r)
                    })
                    .collect();
                prop_assert_eq!(got, want, "{:?} strip", format);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn spans_equal_the_brute_force(
        (k, docs) in (1usize..6).prop_flat_map(|k| (Just(k), corpus(k))),
        min_tokens in prop_oneof![Just(0usize), 0usize..8],
    ) {
        check(&docs, k, min_tokens)?;
    }
}

#[test]
fn a_passage_repeated_across_documents_and_paragraphs() {
    let w = |s: &str, par_end: bool| Word { word: s.into(), punct: "", par_end };
    let a = vec![w("one", false), w("two", true), w("three", false), w("four", false), w("five", false)];
    // The passage "two | three four" crosses a paragraph break in both documents.
    let b = vec![w("zero", false), w("two", true), w("three", false), w("four", false), w("six", false)];
    let docs = vec![a, b];
    check(&docs, 3, 0).unwrap();
    assert_eq!(brute_force(&tokens(&docs, Format::Jsonl), 3, 0)[1], [false, true, true, true, false]);
}

/// Most K-grams of a corpus occur once: the sieve proves them so, and
/// nothing it lets through or keeps out changes a mark.
#[test]
fn the_sieve_keeps_unique_kgrams_out_of_the_sort_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    let mut text = String::new();
    for doc in 0..300 {
        let mut words: Vec<String> = (0..40).map(|i| format!("w{:x}", splitmix(doc * 1000 + i))).collect();
        if doc % 3 == 0 {
            // A passage of twelve words repeated in every third document.
            words.splice(10..10, (0..12).map(|i| format!("shared{i}")));
        }
        text.push_str(&serde_json::json!({ "text": words.join(" ") }).to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let span = |sieve: bool, sieve_bytes: Option<usize>, parts: Option<usize>| {
        run(&path, dir.path(), Format::Jsonl, |c| {
            c.min_span = 8;
            c.base.sieve = sieve;
            c.base.limits.sieve_bytes = sieve_bytes;
            c.base.limits.sieve_parts = parts;
        })
        .unwrap()
    };
    let (plain, plain_stats) = span(false, None, None);
    let (sieved, sieved_stats) = span(true, None, None);
    let (crowded, crowded_stats) = span(true, Some(64), None);
    // Four parts by fingerprint, each sieve taking a quarter of the K-grams.
    let (parted, parted_stats) = span(true, None, Some(4));
    // The corpus counted past what a sieve of 4 KiB takes: parts planned, not forced.
    let (planned, planned_stats) = span(true, Some(4096), None);
    assert_eq!(sieved, plain);
    assert_eq!(crowded, plain);
    assert_eq!(parted, plain);
    assert_eq!(planned, plain);
    assert_eq!((plain_stats.kgram_parts, sieved_stats.kgram_parts, parted_stats.kgram_parts), (0, 1, 4));
    assert!(planned_stats.kgram_parts >= 2, "{}", planned_stats.kgram_parts);
    // A pass over the whole corpus counts its K-grams; then each part fills a sieve of its own.
    assert_eq!(planned_stats.kgram_sieve_fills, planned_stats.kgram_parts + 1);
    assert_eq!((sieved_stats.kgram_sieve_fills, parted_stats.kgram_sieve_fills), (1, 5));
    assert_eq!(parted_stats.kgrams_sieved_out, sieved_stats.kgrams_sieved_out);
    assert!(planned_stats.kgrams_sieved_out > crowded_stats.kgrams_sieved_out, "{planned_stats:?}");
    // 300 documents of 40 words and 100 of 12 more: 11,100 K-grams of 8,
    // 500 of them in a copy of the passage, the rest once.
    let kgrams = 300 * 33 + 100 * 12;
    assert_eq!(plain_stats.kgrams_sieved_out, 0);
    assert!(sieved_stats.kgrams_sieved_out > kgrams * 9 / 10, "{}", sieved_stats.kgrams_sieved_out);
    assert!(crowded_stats.kgrams_sieved_out < sieved_stats.kgrams_sieved_out);
    assert_eq!(sieved_stats.tokens_in_spans, plain_stats.tokens_in_spans);
    assert!(plain_stats.tokens_in_spans >= 99 * 12, "{}", plain_stats.tokens_in_spans);
}

/// A compressed corpus of many repeats holds far more K-grams than its size
/// plans a sieve for: counted, they get the sieve they need, in one part.
#[test]
fn a_sieve_planned_too_small_for_a_compressed_corpus_is_made_to_fit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl.zst");
    let mut encoder = dupgram_corpus::spool_encoder(std::fs::File::create(&path).unwrap(), 1).unwrap();
    for doc in 0..3_000u64 {
        // Ten documents of 60 words, each repeated 300 times: about 150,000 K-grams in a few KiB.
        let words: Vec<String> = (0..60).map(|i| format!("w{:x}", splitmix((doc % 10) * 1000 + i))).collect();
        writeln!(encoder, "{}", serde_json::json!({ "text": words.join(" ") })).unwrap();
    }
    encoder.finish().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
    let span = |sieve: bool| {
        run(&path, dir.path(), Format::Jsonl, |c| {
            c.min_span = 8;
            c.base.sieve = sieve;
        })
        .unwrap()
    };
    let (plain, _) = span(false);
    let (sieved, stats) = span(true);
    assert_eq!(sieved, plain);
    assert_eq!(stats.kgram_parts, 1);
    // Counted in a first pass, then filled again in a sieve of their size.
    assert_eq!(stats.kgram_sieve_fills, 2);
}

/// A word number spread over 64 bits (SplitMix64's finaliser).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn refuses_bad_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"text\":\"a b c\"}\n").unwrap();
    let err = run(&path, dir.path(), Format::Jsonl, |c| c.min_span = 0).unwrap_err();
    assert!(err.to_string().contains("--min-span"), "{err}");
    let err = run(&path, dir.path(), Format::Jsonl, |c| c.threshold = 1.5).unwrap_err();
    assert!(err.to_string().contains("--threshold"), "{err}");
}
