//! Parquet in and out: the same results from a corpus as JSON Lines and as
//! Parquet, Parquet outputs read back with the `parquet` crate, bad Parquet
//! input reported by file, row group and column.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use crate::common::{leftovers, run, run_with_stdin, s, sample};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// The `(id, text)` records of a JSON Lines sample.
fn records(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (v["id"].as_str().unwrap().to_owned(), v["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// How a test shard is laid out.
struct Layout {
    compression: Compression,
    /// Rows per row group.
    row_group: usize,
    /// ID and text inside a struct column `meta`, beside a column `other`.
    nested: bool,
}

const SNAPPY_3: Layout = Layout { compression: Compression::SNAPPY, row_group: 3, nested: false };

/// Writes rows (a None text is null) as a Parquet file.
fn write_parquet(path: &Path, rows: &[(String, Option<String>)], layout: &Layout) {
    let ids: ArrayRef = Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0.as_str())));
    let texts: ArrayRef = Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1.as_deref())));
    let other: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows.len() as i64));
    let batch = if layout.nested {
        let fields =
            Fields::from(vec![Field::new("doc_id", DataType::Utf8, false), Field::new("body", DataType::Utf8, true)]);
        let meta: ArrayRef = Arc::new(StructArray::new(fields, vec![ids, texts], None));
        RecordBatch::try_from_iter([("other", other), ("meta", meta)]).unwrap()
    } else {
        RecordBatch::try_from_iter([("id", ids), ("text", texts), ("other", other)]).unwrap()
    };
    write_batch(path, &batch, layout);
}

fn write_batch(path: &Path, batch: &RecordBatch, layout: &Layout) {
    let properties = WriterProperties::builder()
        .set_compression(layout.compression)
        .set_max_row_group_row_count(Some(layout.row_group))
        .build();
    let mut writer = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(properties)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

fn news_rows() -> Vec<(String, Option<String>)> {
    records(&sample("news.jsonl")).into_iter().map(|(id, text)| (id, Some(text))).collect()
}

/// All batches of a Parquet file, and how many row groups it has.
fn read_parquet(path: &Path) -> (Vec<RecordBatch>, usize) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let groups = builder.metadata().num_row_groups();
    (builder.build().unwrap().map(Result::unwrap).collect(), groups)
}

fn strings(batches: &[RecordBatch], column: &str) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let a = b.column_by_name(column).unwrap().as_string::<i32>().clone();
            (0..a.len()).map(move |i| a.value(i).to_owned())
        })
        .collect()
}

fn counts(batches: &[RecordBatch], column: &str) -> Vec<u64> {
    batches
        .iter()
        .flat_map(|b| b.column_by_name(column).unwrap().as_primitive::<UInt64Type>().values().to_vec())
        .collect()
}

fn floats(batches: &[RecordBatch], column: &str) -> Vec<f64> {
    batches
        .iter()
        .flat_map(|b| b.column_by_name(column).unwrap().as_primitive::<Float64Type>().values().to_vec())
        .collect()
}

/// Temporary output files (`.NAME.PID-RANDOM.tmp`) left in a directory.
fn temp_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let hidden = |p: &std::path::PathBuf| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
    leftovers(dir).into_iter().filter(hidden).collect()
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "dupgram {args:?}: {err}");
    out
}

#[test]
fn ngrams_and_pairs_are_byte_identical_from_jsonl_and_from_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = sample("news.jsonl");
    let layouts = [
        ("snappy.parquet", SNAPPY_3),
        ("zstd.parquet", Layout { compression: Compression::ZSTD(ZstdLevel::default()), row_group: 7, nested: false }),
        ("gzip.parquet", Layout { compression: Compression::GZIP(GzipLevel::default()), row_group: 100, nested: true }),
        ("plain.parquet", Layout { compression: Compression::UNCOMPRESSED, row_group: 1, nested: true }),
    ];
    let expect_ngrams = ok(&["ngrams", s(&jsonl), "-n", "4", "-q"]);
    let expect_pairs = ok(&["pairs", s(&jsonl), "-n", "4", "-q"]);
    assert!(expect_ngrams.lines().count() > 50 && expect_pairs.lines().count() > 5, "the sample repeats");
    for (name, layout) in &layouts {
        let path = dir.path().join(name);
        write_parquet(&path, &news_rows(), layout);
        let fields: &[&str] =
            if layout.nested { &["--text-field", "meta.body", "--id-field", "meta.doc_id"] } else { &[] };
        for command in ["ngrams", "pairs"] {
            // A small --memory makes batches of a few rows: rows stream through many batches.
            let mut args = vec![command, s(&path), "-n", "4", "-q", "--memory", "16M"];
            args.extend(fields);
            let expect = if command == "ngrams" { &expect_ngrams } else { &expect_pairs };
            assert!(&ok(&args) == expect, "{command} of {name} differs from the JSON Lines output");
        }
    }
    // By content, whatever the name; and --format parquet forces it.
    let misnamed = dir.path().join("shard.bin");
    std::fs::copy(dir.path().join("snappy.parquet"), &misnamed).unwrap();
    assert_eq!(ok(&["ngrams", s(&misnamed), "-n", "4", "-q"]), expect_ngrams);
    assert_eq!(ok(&["ngrams", s(&misnamed), "-n", "4", "-q", "--format", "parquet"]), expect_ngrams);
}

#[test]
fn several_parquet_inputs_number_their_documents_like_jsonl_inputs() {
    let dir = tempfile::tempdir().unwrap();
    // No ID column: documents are named by input and row, as JSON lines by input and line.
    let rows = news_rows();
    let (first, second) = rows.split_at(9);
    let mut jsonl = Vec::new();
    for (i, part) in [first, second].iter().enumerate() {
        let texts: ArrayRef = Arc::new(StringArray::from_iter(part.iter().map(|r| r.1.as_deref())));
        let batch = RecordBatch::try_from_iter([("text", texts)]).unwrap();
        let pq = dir.path().join(format!("part{i}.parquet"));
        write_batch(&pq, &batch, &SNAPPY_3);
        let js = dir.path().join(format!("part{i}.jsonl"));
        let lines: String =
            part.iter().map(|r| format!("{}\n", serde_json::json!({ "text": r.1.as_deref().unwrap() }))).collect();
        std::fs::write(&js, lines).unwrap();
        jsonl.push((pq, js));
    }
    let pairs = |a: &Path, b: &Path| ok(&["pairs", s(a), s(b), "-n", "4", "-q"]);
    let from_parquet = pairs(&jsonl[0].0, &jsonl[1].0);
    let from_jsonl = pairs(&jsonl[0].1, &jsonl[1].1);
    assert!(from_parquet.lines().count() > 3);
    assert_eq!(from_parquet.replace(".parquet:", ".X:"), from_jsonl.replace(".jsonl:", ".X:"));
}

#[test]
fn ngrams_pairs_clusters_and_stats_write_parquet_tables() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = sample("news.jsonl");
    let shard = dir.path().join("shard.parquet");
    write_parquet(&shard, &news_rows(), &SNAPPY_3);

    let tsv = ok(&["ngrams", s(&jsonl), "-n", "4", "-q"]);
    let table = dir.path().join("ngrams.parquet");
    ok(&["ngrams", s(&shard), "-n", "4", "-q", "-o", s(&table)]);
    let (batches, _) = read_parquet(&table);
    assert_eq!(batches[0].schema().field(0).name(), "ngram");
    assert_eq!(batches[0].schema().field(1).data_type(), &DataType::UInt64);
    let rows: String =
        strings(&batches, "ngram").iter().zip(counts(&batches, "count")).map(|(g, c)| format!("{g}\t{c}\n")).collect();
    assert_eq!(rows, tsv);
    assert!(!dir.path().join("ngrams.parquet.lex").exists(), "the lexicon is saved only when asked for");

    let pairs_tsv = ok(&["pairs", s(&jsonl), "-n", "4", "-q", "--clusters", s(&dir.path().join("c.tsv"))]);
    let (pairs, clusters) = (dir.path().join("pairs.parquet"), dir.path().join("clusters.parquet"));
    ok(&["pairs", s(&shard), "-n", "4", "-q", "-o", s(&pairs), "--clusters", s(&clusters)]);
    let (batches, _) = read_parquet(&pairs);
    let names: Vec<String> = batches[0].schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names.join("\t") + "\n", dupgram_pipeline::output::PAIRS_HEADER);
    let scores: Vec<Vec<f64>> = names[2..8].iter().map(|n| floats(&batches, n)).collect();
    let mut rows = dupgram_pipeline::output::PAIRS_HEADER.to_owned();
    for (i, (a, b)) in strings(&batches, "a").iter().zip(strings(&batches, "b")).enumerate() {
        rows.push_str(&format!("{a}\t{b}"));
        for column in &scores {
            rows.push_str(&format!("\t{:.6}", column[i]));
        }
        rows.push_str(&format!("\t{}\n", counts(&batches, "shared")[i]));
    }
    assert_eq!(rows, pairs_tsv);
    let (batches, _) = read_parquet(&clusters);
    let mut rows = String::new();
    for b in &batches {
        let sizes = b.column_by_name("size").unwrap().as_primitive::<UInt64Type>();
        let members = b.column_by_name("members").unwrap().as_list::<i32>();
        for i in 0..b.num_rows() {
            let list = members.value(i);
            let list = list.as_string::<i32>();
            rows.push_str(&sizes.value(i).to_string());
            (0..list.len()).for_each(|j| rows.push_str(&format!("\t{}", list.value(j))));
            rows.push('\n');
        }
    }
    assert_eq!(rows, std::fs::read_to_string(dir.path().join("c.tsv")).unwrap());

    let stats = dir.path().join("stats.parquet");
    ok(&["stats", s(&shard), "--n", "2..4", "-q", "-o", s(&stats)]);
    let stats_tsv = ok(&["stats", s(&jsonl), "--n", "2..4", "-q"]);
    let (batches, _) = read_parquet(&stats);
    assert_eq!(counts(&batches, "n"), [2, 3, 4]);
    for (i, n) in [2, 3, 4].iter().enumerate() {
        let line = stats_tsv.lines().find(|l| l.starts_with(&format!("{n}\t"))).unwrap();
        let fields: Vec<u64> = line.split('\t').take(6).map(|f| f.parse().unwrap()).collect();
        let row: Vec<u64> = ["n", "ngrams", "distinct", "unique", "duplicate_types", "duplicate_occurrences"]
            .iter()
            .map(|c| counts(&batches, c)[i])
            .collect();
        assert_eq!(row, fields, "n = {n}: {line}");
    }
    let (code, _, err) =
        run(&["stats", "--dedup", s(&dir.path().join("none.json")), "-o", s(&dir.path().join("x.parquet"))]);
    assert_ne!(code, 0);
    assert!(err.contains("TSV") || err.contains("none.json"), "{err}");
}

#[test]
fn dedup_of_a_parquet_shard_writes_the_documents_a_jsonl_output_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = sample("news.jsonl");
    let shard = dir.path().join("shard.parquet");
    write_parquet(&shard, &news_rows(), &SNAPPY_3);
    for strip in [false, true] {
        let mut args = vec!["dedup", "--unit", "doc", "-n", "4", "-q"];
        if strip {
            args.push("--strip");
        }
        let from_jsonl = ok(&[&args[..], &[s(&jsonl)]].concat());
        // Parquet input to a line output: JSON records of the ID and text.
        let from_parquet = ok(&[&args[..], &[s(&shard)]].concat());
        let kept = dir.path().join(format!("kept-{strip}.parquet"));
        ok(&[&args[..], &[s(&shard), "-o", s(&kept)]].concat());
        let (batches, _) = read_parquet(&kept);
        let expect: Vec<serde_json::Value> = from_jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let got: Vec<serde_json::Value> = from_parquet.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(got.len(), expect.len());
        let ids = strings(&batches, "id");
        let texts = strings(&batches, "text");
        let fractions = floats(&batches, "dup_fraction");
        assert_eq!(ids.len(), expect.len(), "strip {strip}: the same documents");
        assert!(strip || fractions.iter().any(|&f| f > 0.0), "some duplicates");
        for (i, record) in expect.iter().enumerate() {
            assert_eq!(got[i]["id"], record["id"]);
            assert_eq!(got[i]["text"], record["text"]);
            assert_eq!(ids[i], record["id"].as_str().unwrap());
            assert_eq!(texts[i], record["text"].as_str().unwrap());
            if !strip {
                assert_eq!(got[i]["dup_fraction"], record["dup_fraction"]);
                assert_eq!(fractions[i], record["dup_fraction"].as_f64().unwrap());
                let spans = batches.iter().flat_map(|b| {
                    let list = b.column_by_name("dup_spans").unwrap().as_list::<i32>().clone();
                    (0..list.len()).map(move |r| {
                        let pairs = list.value(r);
                        let pairs = pairs.as_list::<i32>();
                        (0..pairs.len())
                            .map(|p| pairs.value(p).as_primitive::<UInt64Type>().values().to_vec())
                            .collect::<Vec<_>>()
                    })
                });
                let spans: Vec<Vec<Vec<u64>>> = spans.collect();
                assert_eq!(serde_json::json!(spans[i]), record["dup_spans"]);
            }
        }
    }
    // Exact-only dedup writes the same table form.
    let kept = dir.path().join("exact.parquet");
    ok(&["dedup", s(&shard), "--exact-only", "--unit", "doc", "--strip", "-q", "-o", s(&kept)]);
    let exact = ok(&["dedup", s(&jsonl), "--exact-only", "--unit", "doc", "--strip", "-q"]);
    assert_eq!(strings(&read_parquet(&kept).0, "id").len(), exact.lines().count());
    // A vertical corpus has no table form: an error, and no file.
    let vert = dir.path().join("v.parquet");
    let (code, _, err) = run(&["dedup", s(&sample("onion-sample.vert")), "-q", "-o", s(&vert)]);
    assert_ne!(code, 0);
    assert!(err.contains("vertical"), "{err}");
    assert!(!vert.exists() && temp_files(dir.path()).is_empty());
}

#[test]
fn bad_parquet_input_is_named_by_file_row_group_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    write_parquet(&good, &news_rows(), &SNAPPY_3);
    let bytes = std::fs::read(&good).unwrap();
    let out = dir.path().join("out.tsv");
    let fails = |input: &Path, extra: &[&str], wanted: &[&str]| {
        let mut args = vec!["ngrams", s(input), "-n", "4", "-q", "-o", s(&out)];
        args.extend(extra);
        let (code, _, err) = run(&args);
        assert_ne!(code, 0, "{input:?} {extra:?} should fail");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        for w in wanted {
            assert!(err.contains(w), "{w:?} in {err}");
        }
        assert!(!out.exists(), "nothing under the output's name");
    };

    // Truncated: the footer is gone.
    let truncated = dir.path().join("truncated.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    fails(&truncated, &[], &["truncated.parquet", "not a readable Parquet file"]);
    // Damaged pages: the footer is intact, the data is not.
    let damaged = dir.path().join("damaged.parquet");
    let mut broken = bytes.clone();
    broken[4..bytes.len() / 2].iter_mut().for_each(|b| *b = 0x55);
    std::fs::write(&damaged, &broken).unwrap();
    fails(&damaged, &[], &["damaged.parquet", "row group 0", "column text"]);
    // No such column, and the wrong type.
    fails(&good, &["--text-field", "body"], &["good.parquet", "column body", "no such column", "id, text, other"]);
    fails(&good, &["--text-field", "other"], &["good.parquet", "column other", "Int64", "not a string column"]);
    fails(&good, &["--text-field", "text.inner"], &["column text.inner", "text is not a struct"]);
    // Standard input cannot be Parquet.
    let (code, _, err) = run_with_stdin(&["ngrams", "-", "-q"], Some(&bytes));
    assert_ne!(code, 0);
    assert!(err.contains("standard input") && err.contains("Parquet"), "{err}");

    // A null text: an error naming where, or counted and skipped with --skip-bad.
    let mut rows = news_rows();
    rows[4].1 = None;
    let nulls = dir.path().join("nulls.parquet");
    write_parquet(&nulls, &rows, &SNAPPY_3);
    fails(&nulls, &[], &["nulls.parquet", "row group 1", "column text", "row 5", "null"]);
    let stats = dir.path().join("stats.json");
    ok(&["ngrams", s(&nulls), "-n", "4", "-q", "--skip-bad", "-o", s(&out), "--stats-json", s(&stats)]);
    let without: Vec<(String, Option<String>)> = rows.iter().filter(|r| r.1.is_some()).cloned().collect();
    let clean = dir.path().join("clean.parquet");
    write_parquet(&clean, &without, &SNAPPY_3);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), ok(&["ngrams", s(&clean), "-n", "4", "-q"]));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(summary["documents"], 18, "{summary}");
    // dedup skips the same row in both its passes.
    let kept = dir.path().join("kept.parquet");
    ok(&["dedup", s(&nulls), "--unit", "doc", "-n", "4", "-q", "--skip-bad", "-o", s(&kept)]);
    assert_eq!(strings(&read_parquet(&kept).0, "id").len(), 18);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn slurm_jobs_take_parquet_files_whole_as_shards() {
    let dir = tempfile::tempdir().unwrap();
    let rows = news_rows();
    let mut parts = Vec::new();
    for (i, chunk) in rows.chunks(5).enumerate() {
        let p = dir.path().join(format!("part{i}.parquet"));
        write_parquet(&p, chunk, &SNAPPY_3);
        parts.push(p);
    }
    let mut one = vec!["ngrams", "-n", "4", "-q"];
    one.extend(parts.iter().map(|p| s(p)));
    let expect = ok(&one);
    let out = dir.path().join("staged.tsv");
    let work = dir.path().join("work");
    let mut args = vec!["slurm", "ngrams", "-n", "4", "-q", "-o", s(&out), "--workdir", s(&work)];
    args.extend(["--shards", "3", "--buckets", "2", "--local"]);
    args.extend(parts.iter().map(|p| s(p)));
    ok(&args);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expect);
    // One big file and more shards than files: still read whole, never by byte ranges.
    let big = dir.path().join("big.parquet");
    write_parquet(&big, &rows, &SNAPPY_3);
    let (out, work) = (dir.path().join("big.tsv"), dir.path().join("big.work"));
    ok(&[
        "slurm",
        "ngrams",
        "-n",
        "4",
        "-q",
        "-o",
        s(&out),
        "--workdir",
        s(&work),
        "--shards",
        "4",
        "--local",
        s(&big),
    ]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), ok(&["ngrams", "-n", "4", "-q", s(&big)]));
    // Its output has no table form: refused before any work.
    let table = dir.path().join("staged.parquet");
    let work = dir.path().join("t.work");
    let (code, _, err) = run(&["slurm", "ngrams", "-q", "-o", s(&table), "--workdir", s(&work), "--local", s(&big)]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot name a .parquet file"), "{err}");
    assert!(!table.exists());
}
