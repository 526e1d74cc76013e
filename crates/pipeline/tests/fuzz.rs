//! The files the pairs passes hand each other meet hostile input (see
//! `dupgram_fuzzkit`): document tables, bucket totals and common counts (the
//! `parts` format), also with their checksum recomputed, and candidate pair
//! runs merged as the scoring merges them. Each mutated file is refused with
//! an error naming it, or read as a table, totals, counts or pairs the
//! scoring can use without panicking.

use std::path::{Path, PathBuf};

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_merge::MergeSink;
use dupgram_pipeline::{
    BucketTotals, Control, DocIds, DocTable, IdRange, IndexTotals, NgramConfig, PairPasses, PairsConfig, PairsStats,
    PipelineError, ScoreLayout,
};
use dupgram_runs::{RunError, RunHeader, RunReader, RunWriter};

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

fn regressions(target: &str) -> String {
    format!("{}/tests/fuzz-regressions/{target}", env!("CARGO_MANIFEST_DIR"))
}

/// The body of a `parts` file, its XXH3 checksum recomputed.
fn seal_parts(content: &[u8]) -> Vec<u8> {
    let mut out = content.to_vec();
    if out.len() >= 8 {
        let body = out.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&out[..body]);
        out[body..].copy_from_slice(&sum.to_le_bytes());
    }
    out
}

fn table(ids: &[&str], first_doc: u64) -> Vec<u8> {
    let mut t = DocTable::default();
    let (mut all, mut ranges) = (String::new(), Vec::new());
    for (i, id) in ids.iter().enumerate() {
        t.tokens.push(i as u32 * 17 + 3);
        t.hashes.push(u128::MAX / (i as u128 + 3));
        ranges.push(IdRange::new(all.len() as u64, id.len() as u32));
        all.push_str(id);
    }
    t.ids = DocIds::Memory { ids: all, ranges };
    let mut out = Vec::new();
    t.write_to(first_doc, &mut out).unwrap();
    out
}

/// A table as read: its first document's number, and (tokens, hash, ID) of each document.
type Table = (u64, Vec<(u32, u128, String)>);

fn read_table(path: &Path) -> Result<Table, PipelineError> {
    let (first, t) = DocTable::read_from(path)?;
    assert_eq!(t.tokens.len(), t.hashes.len());
    let ids = (0..t.len() as u32).map(|d| t.id(d).map(|id| id.into_owned())).collect::<Result<Vec<_>, _>>()?;
    Ok((first, ids.into_iter().enumerate().map(|(d, id)| (t.tokens[d], t.hashes[d], id)).collect()))
}

fn totals(occurrences: Vec<u32>, types: Vec<u32>, differing: Vec<u32>) -> Vec<u8> {
    let ngrams = types.iter().map(|&t| u64::from(t)).sum();
    let total_occurrences = occurrences.iter().map(|&o| u64::from(o)).sum();
    let part = BucketTotals { totals: IndexTotals { occurrences, types, ngrams, total_occurrences }, differing };
    let mut out = Vec::new();
    part.write_to(&mut out).unwrap();
    out
}

type Totals = (Vec<u32>, Vec<u32>, u64, u64, Vec<u32>);

fn read_totals(path: &Path) -> Result<Totals, PipelineError> {
    let BucketTotals { totals: t, differing } = BucketTotals::read_from(path)?;
    assert_eq!(t.occurrences.len(), t.types.len());
    assert!(differing.iter().all(|&d| (d as usize) < t.occurrences.len()));
    // What the scoring computes from them (|S_X| of each document) must not overflow.
    for d in 0..t.occurrences.len() {
        assert!(t.types[d] <= t.occurrences[d], "document {d}: more n-gram types than occurrences");
        assert!(t.distinct(d, u32::MAX, 5) <= u32::MAX - 4 && t.distinct(d, 0, 5) == 0);
    }
    // Added to itself, as the buckets' totals are added up: an overflow is an error, not a panic.
    let mut sum = IndexTotals::empty(t.occurrences.len());
    for _ in 0..2 {
        if sum.absorb(&t).is_err() {
            assert!(t.occurrences.iter().any(|&o| o > u32::MAX / 2));
        }
    }
    Ok((t.occurrences, t.types, t.ngrams, t.total_occurrences, differing))
}

#[test]
fn document_tables_survive_mutation() {
    let seeds = vec![table(&["a", "βeta", "", "doc-0003", "日本"], 7), table(&[], 0), table(&["x"; 40], u64::MAX)];
    Fuzz::new("parts-doc-table", "docs-0000.table", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_parts)
        .regressions(regressions("doc-table"))
        .run(read_table);
}

#[test]
fn bucket_totals_survive_mutation() {
    let seeds = vec![
        totals(vec![3, 0, 2, 9, 1], vec![2, 0, 1, 4, 1], vec![2, 4]),
        totals(vec![], vec![], vec![]),
        totals(vec![u32::MAX; 8], vec![1; 8], vec![0, 7]),
    ];
    Fuzz::new("parts-bucket-totals", "bucket-0000.totals", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_parts)
        .regressions(regressions("bucket-totals"))
        .run(read_totals);
}

fn common(counts: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    dupgram_pipeline::write_common(counts, &mut out).unwrap();
    out
}

/// Counts read into a sum of as many documents as the file says it holds
/// (the score tasks' sum has the corpus's), twice, as buckets add up.
fn read_common(path: &Path) -> Result<Vec<u32>, PipelineError> {
    let docs = std::fs::read(path).map_err(|e| PipelineError::io(path, e))?;
    let docs = docs.get(12..20).map_or(0, |d| u64::from_le_bytes(d.try_into().unwrap()));
    let mut sum = vec![0u32; docs.min(1 << 16) as usize];
    dupgram_pipeline::add_common(path, &mut sum)?;
    dupgram_pipeline::add_common(path, &mut sum)?;
    Ok(sum)
}

#[test]
fn common_counts_survive_mutation() {
    let seeds = vec![common(&[3, 0, 2, 9, 1]), common(&[]), common(&[u32::MAX; 8])];
    Fuzz::new("parts-common-counts", "common.counts", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|b| b.to_vec(), seal_parts)
        .regressions(regressions("common-counts"))
        .run(read_common);
}

/// What the scoring merge hands its sink: each pair key and its count, in order.
#[derive(Default)]
struct Pairs(Vec<(Vec<u32>, u64)>);

impl MergeSink for Pairs {
    type Error = RunError;
    fn accept(&mut self, key: &[u32], count: u64, _: &[u64]) -> Result<(), RunError> {
        if let Some((last, _)) = self.0.last() {
            assert!(last.as_slice() < key, "the merge went backwards: {last:?} then {key:?}");
        }
        self.0.push((key.to_vec(), count));
        Ok(())
    }
}

/// Candidate pairs as the candidates pass writes them: (block of a, block of b, a, b), counted.
const CANDIDATES: RunHeader = RunHeader { n: 4, lexicon_id: 0xCA4D_1DA7, kind: dupgram_runs::RunKind::Counts };

fn candidates(pairs: &[[u32; 4]]) -> Vec<u8> {
    let mut sorted = pairs.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut w = RunWriter::new(Vec::new(), Path::new("seed"), CANDIDATES).unwrap();
    for p in sorted {
        w.push(&p, 1 + u64::from(p[3] % 3)).unwrap();
    }
    w.finish().unwrap().0
}

/// Merges the candidates at `path` with a valid run beside it, as a score task merges buckets' candidates.
fn merge_candidates(path: &Path, other: &Path) -> Result<Vec<(Vec<u32>, u64)>, RunError> {
    let runs = vec![RunReader::open(path)?, RunReader::open(other)?];
    for r in &runs {
        r.expect_header(CANDIDATES)?;
    }
    let mut pairs = Pairs::default();
    dupgram_merge::merge_into(runs, &mut pairs, &()).map_err(|e| match e {
        dupgram_merge::MergeError::Run(e) | dupgram_merge::MergeError::Sink(e) => e,
        other => panic!("{other}"),
    })?;
    Ok(pairs.0)
}

#[test]
fn candidate_runs_survive_mutation() {
    let dir = tempfile::tempdir().unwrap();
    let other: PathBuf = dir.path().join("cand-other.dgr");
    std::fs::write(&other, candidates(&[[0, 0, 1, 2], [0, 1, 3, 70], [2, 2, 90, 91]])).unwrap();
    let many: Vec<[u32; 4]> = (0..300u32).map(|i| [i / 50, i / 40, i, i + 1 + i % 7]).collect();
    let seeds = vec![candidates(&many), candidates(&[[0, 0, 0, 1]]), candidates(&[])];
    Fuzz::new("pairs-candidates", "cand-r0000-000001.dgr", seeds)
        .cases(2500)
        .checksummed()
        .regressions(regressions("candidates"))
        .run(move |path| merge_candidates(path, &other));
}

#[test]
fn counts_of_u64_max_are_refused_without_allocating_them() {
    let dir = tempfile::tempdir().unwrap();
    // Document table: the document count after first_doc; the ID bytes
    // after the documents. Totals: the document count; the differing count.
    let table_file = table(&["a", "b"], 0);
    let totals_file = totals(vec![1, 2], vec![1, 1], vec![1]);
    let id_bytes_at = 12 + 16 + 2 * 24;
    let differing_at = 12 + 24 + 2 * 8;
    for (name, file, at) in [
        ("docs", &table_file, 20),
        ("ids", &table_file, id_bytes_at),
        ("totals", &totals_file, 12),
        ("diff", &totals_file, differing_at),
    ] {
        let path = dir.path().join(name);
        let mut bytes = file.clone();
        bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, seal_parts(&bytes)).unwrap();
        let (err, peak) = dupgram_fuzzkit::measure(|| match name {
            "docs" | "ids" => read_table(&path).map(drop).unwrap_err(),
            _ => read_totals(&path).map(drop).unwrap_err(),
        });
        let err = err.to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("shorter than"), "{name}: {err}");
        assert!(peak < 1 << 20, "{name}: {peak} bytes");
    }
}

/// The duplicate-only index as the postings merge writes it: each n-gram's rank, with its occurrences.
fn index_run(entries: &[(u32, Vec<u64>)]) -> Vec<u8> {
    let mut w = RunWriter::new(Vec::new(), Path::new("seed"), RunHeader::postings(1, 0x1de8)).unwrap();
    for (id, occurrences) in entries {
        w.push_postings(&[*id], occurrences).unwrap();
    }
    w.finish().unwrap().0
}

/// Documents of the index seeds, and their groups of identical documents.
const INDEX_GROUPS: [u32; 6] = [0, 1, 0, 3, 4, 1];

/// The candidates pass over the index at `path` (a corpus of six
/// documents, two blocks): the candidate keys it spills, read back.
fn index_candidates(path: &Path) -> Result<Vec<Vec<u32>>, PipelineError> {
    let work = tempfile::tempdir().unwrap();
    let mut base = NgramConfig::new(Vec::new(), 3);
    base.memory = 64 << 20;
    base.limits.chunk_ngrams = Some(64);
    let config = PairsConfig::new(base);
    let control = Control::default();
    let passes = PairPasses::new(&config, &control, work.path())?;
    let layout = ScoreLayout { blocks: vec![0..3, 3..6], range_starts: vec![0], resident: 1 << 20 };
    // No thresholds: the documents' totals bound nothing, so empty ones do.
    let (table, totals) = (DocTable::default(), IndexTotals::empty(0));
    let mut stats = PairsStats::default();
    let runs = passes.candidates(&[path.to_path_buf()], &INDEX_GROUPS, &table, &totals, &layout, &mut stats)?.runs;
    let mut keys = Vec::new();
    for (_, run) in runs {
        let mut reader = RunReader::open(&run.path)?;
        while reader.advance()? {
            keys.push(reader.ngram().to_vec());
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

fn at(doc: u64, pos: u64) -> u64 {
    (doc << 32) | pos
}

/// Mutated and sealed, the index reaches the candidates pass, which looks
/// each document's group up by the number the postings give.
#[test]
fn index_runs_survive_the_candidates_pass() {
    let entries: Vec<(u32, Vec<u64>)> = (0..40u32)
        .map(|i| (i, (0..2 + u64::from(i % 4)).map(|k| at((u64::from(i) + k) % 6, k * 7)).collect()))
        .collect();
    let mut entries = entries;
    for (_, o) in &mut entries {
        o.sort_unstable();
        o.dedup();
    }
    let seeds = vec![index_run(&entries), index_run(&[(0, vec![at(0, 1), at(5, 2)])]), index_run(&[])];
    Fuzz::new("pairs-index", "bucket-0000.dgr", seeds)
        .cases(1500)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::reseal)
        .regressions(regressions("index"))
        .run(index_candidates);
}

#[test]
fn an_index_naming_a_document_past_the_table_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bucket-0003.dgr");
    std::fs::write(&path, index_run(&[(0, vec![at(0, 1), at(2, 4)]), (1, vec![at(1, 0), at(6, 0)])])).unwrap();
    let err = index_candidates(&path).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("document 6"), "{err}");
}

/// The pairs a job found: each pair's IDs, in order.
#[derive(Default)]
struct PairIds(Vec<(String, String)>);

impl dupgram_pipeline::PairsSink for PairIds {
    fn pair(&mut self, a: &str, b: &str, _: &dupgram_pipeline::PairScores) -> Result<(), PipelineError> {
        self.0.push((a.into(), b.into()));
        Ok(())
    }
    fn cluster(&mut self, _: &[&str]) -> Result<(), PipelineError> {
        Ok(())
    }
}

/// A small corpus with shared text, as plain text (a document a line).
const DUPS_CORPUS: &str = "the cat sat on the mat and the dog sat on the log\n\
    a cat sat on the mat and a dog sat on a log today\n\
    the cat sat on the mat and then it slept all day long\n\
    nothing in common here at all\n";

/// `dupgram pairs --dups` config over the corpus at `corpus`, n = 3.
fn dups_config(corpus: &Path, tmp: &Path, dups: Option<dupgram_pipeline::DupsInput>) -> PairsConfig {
    let mut base = NgramConfig::new(vec![dupgram_corpus::Input::Path(corpus.to_owned())], 3);
    base.read.format = Some(dupgram_corpus::Format::Text);
    base.tmp_dir = tmp.to_owned();
    base.memory = 64 << 20;
    base.threads = 1;
    base.lexicon_dir = Some(tmp.to_owned());
    PairsConfig { min_sscr: 0.1, dups, ..PairsConfig::new(base) }
}

/// `dupgram ngrams` output over the corpus at `corpus`, and its lexicon written to `lexicon`.
fn ngrams_output(corpus: &Path, tmp: &Path, lexicon: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let base = dups_config(corpus, tmp, None).base;
    let outcome = dupgram_pipeline::count_ngrams(&base, &Control::default(), &mut |lex, ids, count| {
        let words: Vec<&str> = ids.iter().map(|&i| lex.word(i)).collect();
        out.extend_from_slice(format!("{}\t{count}\n", words.join(" ")).as_bytes());
        Ok(())
    })
    .unwrap();
    outcome.lexicon_file.unwrap().persist(lexicon).unwrap();
    out
}

/// `dupgram pairs --dups` reads a mutated duplicate list beside its lexicon: pairs, or an error naming the list.
#[test]
fn duplicate_lists_survive_mutation() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, lexicon) = (dir.path().join("c.txt"), dir.path().join("dups.lex"));
    std::fs::write(&corpus, DUPS_CORPUS).unwrap();
    let list = ngrams_output(&corpus, dir.path(), &lexicon);
    assert!(list.len() > 40, "{}", String::from_utf8_lossy(&list));
    let first_line = list.split_inclusive(|&b| b == b'\n').next().unwrap().to_vec();
    let seeds = vec![list, first_line, Vec::new()];
    let dir = std::sync::Arc::new(dir);
    let report =
        Fuzz::new("pairs-dups", "dups.tsv", seeds).cases(600).regressions(regressions("dups")).run(move |path| {
            let tmp = tempfile::tempdir_in(dir.path()).unwrap();
            let dups = dupgram_pipeline::DupsInput { dups: path.to_owned(), lexicon: lexicon.clone() };
            let mut pairs = PairIds::default();
            dupgram_pipeline::find_pairs(
                &dups_config(&corpus, tmp.path(), Some(dups)),
                &Control::default(),
                &mut pairs,
            )?;
            Ok::<_, PipelineError>(pairs.0)
        });
    // Both ways out are taken: lists that still read (giving pairs or not), and lists refused.
    assert!(report.accepted > 0 && report.refused > 0, "{report:?}");
}

/// A list with a line longer than any n-gram's is refused before the line is held whole.
#[test]
fn a_duplicate_list_with_a_huge_line_is_refused_without_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, lexicon) = (dir.path().join("c.txt"), dir.path().join("dups.lex"));
    std::fs::write(&corpus, DUPS_CORPUS).unwrap();
    ngrams_output(&corpus, dir.path(), &lexicon);
    let path = dir.path().join("dups.tsv");
    // Words of the lexicon, 48 MiB of them on one line.
    std::fs::write(&path, "the cat sat on ".repeat((48 << 20) / 15)).unwrap();
    let dups = dupgram_pipeline::DupsInput { dups: path.clone(), lexicon };
    let config = dups_config(&corpus, dir.path(), Some(dups));
    let (result, peak) = dupgram_fuzzkit::measure(|| {
        dupgram_pipeline::find_pairs(&config, &Control::default(), &mut PairIds::default())
    });
    let err = result.unwrap_err().to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("line 1") && err.contains("longer than"),
        "{err}"
    );
    assert!(peak < 24 << 20, "{peak} bytes held");
}

/// The index seeds' first entries, as one index part over the six documents of [`INDEX_GROUPS`].
fn scoring_index() -> Vec<(u32, Vec<u64>)> {
    (0..40u32)
        .map(|i| {
            let mut o: Vec<u64> =
                (0..2 + u64::from(i % 4)).map(|k| at((u64::from(i) + k) % 6, u64::from(i) + k)).collect();
            o.sort_unstable();
            o.dedup();
            (i, o)
        })
        .collect()
}

/// Scores the candidates at `path` against the index at `index` (six
/// documents of 60 tokens, two blocks), as a score task does: the kept
/// pairs, read back.
fn score_candidates(path: &Path, index: &Path) -> Result<Vec<Vec<u32>>, PipelineError> {
    let work = tempfile::tempdir().unwrap();
    // The scoring merge removes its inputs: it gets a copy.
    let run = work.path().join("cand-r0000-000001.dgr");
    std::fs::copy(path, &run).unwrap();
    let mut base = NgramConfig::new(Vec::new(), 3);
    base.memory = 64 << 20;
    base.limits.chunk_ngrams = Some(64);
    let config = PairsConfig { min_sscr: 0.05, ..PairsConfig::new(base) };
    let control = Control::default();
    let passes = PairPasses::new(&config, &control, work.path())?;
    let mut table = DocTable::default();
    let mut totals = IndexTotals::empty(INDEX_GROUPS.len());
    let (mut ids, mut ranges) = (String::new(), Vec::new());
    for (d, _) in INDEX_GROUPS.iter().enumerate() {
        table.tokens.push(60);
        table.hashes.push(d as u128);
        ranges.push(IdRange::new(d as u64, 1));
        ids.push(char::from(b'a' + d as u8));
    }
    table.ids = DocIds::Memory { ids, ranges };
    for (_, o) in scoring_index() {
        totals.add_ngram(&o, 0).unwrap();
    }
    let layout = ScoreLayout { blocks: vec![0..3, 3..6], range_starts: vec![0, 1], resident: 1 << 20 };
    let parts = [dupgram_pipeline::IndexPart { path: index.to_owned(), first_id: 0 }];
    let rep_of: Vec<u32> = (0..INDEX_GROUPS.len() as u32).collect();
    let size = std::fs::metadata(&run).unwrap().len();
    let candidates = vec![dupgram_pipeline::RunFile { path: run, bytes: size, depth: 0 }];
    let after = dupgram_pipeline::AfterCut::KeepIndex;
    let mut stats = PairsStats::default();
    let kept = passes.score(0..2, candidates, None, &parts, after, &table, &totals, &rep_of, &layout, &mut stats)?;
    let mut keys = Vec::new();
    for run in kept {
        let mut reader = RunReader::open(&run.path)?;
        while reader.advance()? {
            keys.push(reader.ngram().to_vec());
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

/// Mutated and sealed, candidate pairs reach the scorer, which looks their
/// documents up in the blocks their keys name.
#[test]
fn candidate_runs_survive_the_scoring() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("bucket-0000.dgr");
    std::fs::write(&index, index_run(&scoring_index())).unwrap();
    let pairs: Vec<[u32; 4]> =
        (0..6u32).flat_map(|a| (a + 1..6).map(move |b| [a / 3, b / 3, a, b])).filter(|p| p[0] == 0).collect();
    let seeds = vec![candidates(&pairs), candidates(&pairs[..2]), candidates(&[])];
    let report = Fuzz::new("pairs-scoring", "cand-r0000-000001.dgr", seeds)
        .cases(800)
        .checksummed()
        .sealed(|b| b.to_vec(), dupgram_runs::reseal)
        .regressions(regressions("scoring"))
        .run(move |path| {
            // Errors name the copy the scoring merged: say which file it was a copy of.
            score_candidates(path, &index).map_err(|e| {
                let said = e.to_string();
                match said.split_once("cand-r0000-000001.dgr") {
                    Some((_, rest)) => format!("{}{rest}", path.display()),
                    None => said,
                }
            })
        });
    assert!(report.accepted > 0 && report.refused > 0, "{report:?}");
}
