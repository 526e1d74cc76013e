use super::*;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// (id, whole text) of each document, and the stats.
fn read_all(
    inputs: Vec<Input>,
    options: ReadOptions,
    target: usize,
) -> Result<(Vec<(String, String)>, ReadStats), CorpusError> {
    let mut reader = CorpusReader::new(inputs, options, Arc::new(AtomicU64::new(0)));
    let mut batch = Batch::default();
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut open = false;
    let mut expect_doc = 0u64;
    while reader.fill(&mut batch, target)? {
        for p in &batch.pieces {
            if let Some(id) = batch.piece_id(p) {
                assert!(!open, "a document started before the previous ended");
                assert_eq!(p.doc, expect_doc);
                docs.push((id.to_owned(), String::new()));
                open = true;
            }
            assert_eq!(p.doc, expect_doc);
            docs.last_mut().unwrap().1.push_str(batch.piece_text(p));
            if p.last {
                open = false;
                expect_doc += 1;
            }
        }
    }
    assert!(!open, "the last document never ended");
    Ok((docs, reader.stats().clone()))
}

fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> Input {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    Input::Path(path)
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn pairs(docs: &[(&str, &str)]) -> Vec<(String, String)> {
    docs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn text_lines_are_documents() {
    let dir = tempfile::tempdir().unwrap();
    let input = file(&dir, "c.txt", b"first doc\n\nthird doc");
    let (docs, stats) = read_all(vec![input], ReadOptions::default(), 1 << 20).unwrap();
    assert_eq!(docs, pairs(&[("1", "first doc"), ("2", ""), ("3", "third doc")]));
    assert_eq!(stats.documents, 3);
}

#[test]
fn long_documents_stream_in_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let long = "word ".repeat(300_000);
    let input = file(&dir, "c.txt", format!("a\n{long}\nb\n").as_bytes());
    let (docs, _) = read_all(vec![input], ReadOptions::default(), 1000).unwrap();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[1].1, long);
    let vert: String = std::iter::once("<doc id=\"v\">\n".to_string())
        .chain((0..50_000).map(|i| format!("w{i}\tNN\n")))
        .chain(["</doc>\n".to_string()])
        .collect();
    let input = file(&dir, "c.vert", vert.as_bytes());
    let (docs, _) = read_all(vec![input], ReadOptions::default(), 1000).unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].1.lines().count(), 50_000);
}

#[test]
fn jsonl_fields_ids_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let body = b"{\"id\": \"a\", \"text\": \"one\"}\n\n{\"text\": \"two\\nlines\", \"id\": 7}\n{\"body\": \"x\", \"text\": \"three\"}\n";
    let want = pairs(&[("a", "one"), ("7", "two\nlines"), ("4", "three")]);
    for (name, bytes) in [
        ("c.jsonl", body.to_vec()),
        ("c.jsonl.gz", gz(body)),
        ("c.jsonl.zst", zstd::encode_all(&body[..], 3).unwrap()),
        ("noext", gz(body)),
    ] {
        let (docs, _) = read_all(vec![file(&dir, name, &bytes)], ReadOptions::default(), 1 << 20).unwrap();
        assert_eq!(docs, want, "{name}");
    }
    let options = ReadOptions { text_field: "body".into(), skip_bad: true, ..ReadOptions::default() };
    let (docs, stats) = read_all(vec![file(&dir, "d.jsonl", body)], options, 1 << 20).unwrap();
    assert_eq!(docs, pairs(&[("4", "x")]));
    assert_eq!(stats.skipped_records, 2);
}

#[test]
fn several_inputs_label_default_ids() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(&dir, "a.txt", b"x\ny\n");
    let b = file(&dir, "b.txt", b"z\n");
    let (docs, _) = read_all(vec![a, b], ReadOptions::default(), 1 << 20).unwrap();
    let ids: Vec<&str> = docs.iter().map(|d| d.0.as_str()).collect();
    assert!(ids[0].ends_with("a.txt:1") && ids[2].ends_with("b.txt:1"), "{ids:?}");
}

#[test]
fn malformed_json_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = file(&dir, "bad.jsonl", b"{\"text\": \"ok\"}\n{\"text\": oops}\n");
    let err = read_all(vec![input], ReadOptions::default(), 1 << 20).unwrap_err().to_string();
    assert!(err.contains("bad.jsonl: line 2: malformed JSON"), "{err}");
    let input = file(&dir, "nofield.jsonl", b"{\"txt\": \"ok\"}\n");
    let err = read_all(vec![input], ReadOptions::default(), 1 << 20).unwrap_err().to_string();
    assert!(err.contains("line 1: no string field \"text\""), "{err}");
}

#[test]
fn invalid_utf8_is_replaced_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let input = file(&dir, "c.txt", b"caf\xe9 ok\nfine\n");
    let (docs, stats) = read_all(vec![input], ReadOptions::default(), 1 << 20).unwrap();
    assert_eq!(docs[0].1, "caf\u{fffd} ok");
    assert_eq!(stats.replaced_utf8, 1);
    assert!(stats.first_replaced_at.unwrap().ends_with("c.txt: line 1"));
    let input = file(&dir, "c.jsonl", b"{\"text\": \"caf\xe9 \xef\xbf\xbd\"}\n");
    let (docs, stats) = read_all(vec![input], ReadOptions::default(), 1 << 20).unwrap();
    assert_eq!(docs[0].1, "caf\u{fffd} \u{fffd}");
    assert_eq!(stats.replaced_utf8, 1);
}

#[test]
fn truncated_compression_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let body: Vec<u8> = (0..20_000).flat_map(|i| format!("{{\"text\": \"line {i}\"}}\n").into_bytes()).collect();
    let z = zstd::encode_all(&body[..], 3).unwrap();
    let g = gz(&body);
    for (name, bytes) in
        [("t.jsonl.zst", &z[..z.len() / 2]), ("t.jsonl.gz", &g[..g.len() / 2]), ("t2.jsonl.gz", &g[..g.len() - 3])]
    {
        let err = read_all(vec![file(&dir, name, bytes)], ReadOptions::default(), 1 << 16).unwrap_err().to_string();
        assert!(err.contains(name) && err.contains("truncated or damaged"), "{err}");
    }
}

#[test]
fn zstd_window_limit_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let body: Vec<u8> = (0..300_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let z = zstd::encode_all(&body[..], 19).unwrap();
    let options = ReadOptions { zstd_window_log_max: 18, ..ReadOptions::default() };
    let err = read_all(vec![file(&dir, "w.txt.zst", &z)], options, 1 << 16).unwrap_err().to_string();
    assert!(err.contains("w.txt.zst: needs a zstd window"), "{err}");
}

#[test]
fn records_longer_than_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{{\"text\": \"{}\"}}\n{{\"text\": \"short\"}}\n", "x".repeat(5000));
    let options = ReadOptions { max_record_bytes: 1000, ..ReadOptions::default() };
    let err = read_all(vec![file(&dir, "l.jsonl", body.as_bytes())], options.clone(), 1 << 16).unwrap_err().to_string();
    assert!(err.contains("l.jsonl: line 1 is longer than 1000 bytes"), "{err}");
    let options = ReadOptions { skip_bad: true, ..options };
    let (docs, stats) = read_all(vec![file(&dir, "l.jsonl", body.as_bytes())], options, 1 << 16).unwrap();
    assert_eq!(docs, pairs(&[("2", "short")]));
    assert_eq!(stats.skipped_records, 1);
}

#[test]
fn vertical_documents_and_structure() {
    let dir = tempfile::tempdir().unwrap();
    let v = "<doc id=\"d1\" url=\"x\">\n<p>\nThe\tDT\nCat\tNN\n</p>\n<p>\nsat\n</p>\n</doc>\n<doc>\n<g/>\nNew York\tNP\n</doc>\nstray\n";
    let (docs, stats) = read_all(vec![file(&dir, "c.vert", v.as_bytes())], ReadOptions::default(), 1 << 16).unwrap();
    // Token lines come as they are read; the line tokenizer takes their first column.
    assert_eq!(docs, pairs(&[("d1", "The\tDT\nCat\tNN\nsat\n"), ("10", "New York\tNP\n"), ("14", "stray\n")]));
    assert_eq!(stats.documents, 3);
}

/// A token line past the length limit inside a run of token lines is the
/// line-by-line path's: refused with its line number, or skipped and counted.
#[test]
fn a_long_token_line_inside_a_run_is_refused_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let v = format!("<doc id=\"a\">\nw1\tNN\nw2\tNN\n{}\tNN\nw3\tNN\n</doc>\n", "x".repeat(50));
    let input = file(&dir, "long.vert", v.as_bytes());
    let options = ReadOptions { max_record_bytes: 20, ..ReadOptions::default() };
    let err = read_all(vec![input.clone()], options.clone(), 1 << 16).unwrap_err().to_string();
    assert!(err.contains("long.vert: line 4 is longer than 20 bytes"), "{err}");
    let (docs, stats) = read_all(vec![input], ReadOptions { skip_bad: true, ..options }, 1 << 16).unwrap();
    let docs: Vec<_> = docs.iter().map(|(id, text)| (id.clone(), line_tokens(text))).collect();
    assert_eq!(docs, [("a".to_string(), "w1\nw2\nw3".to_string())]);
    assert_eq!(stats.skipped_records, 1);
}

#[test]
fn vertical_batches_end_at_document_ends() {
    // A batch that ends inside a document chains the next batch to the same
    // worker: past half their size, vertical batches end with a document.
    let dir = tempfile::tempdir().unwrap();
    let mut closed = String::new();
    let mut open_only = String::new();
    let mut expect = Vec::new();
    for d in 0..200 {
        let words: String = (0..(d % 7 + 3)).map(|w| format!("w{d}x{w}\tNN\n")).collect();
        closed.push_str(&format!("<doc id=\"d{d}\">\n<p>\n{words}</p>\n</doc>\n"));
        open_only.push_str(&format!("<doc id=\"d{d}\">\n<p>\n{words}</p>\n"));
        expect.push((format!("d{d}"), line_tokens(&words)));
    }
    for (name, body) in [("closed.vert", &closed), ("open.vert", &open_only)] {
        let input = file(&dir, name, body.as_bytes());
        for target in [64, 100, 1000, 1 << 20] {
            let (docs, stats) = read_all(vec![input.clone()], ReadOptions::default(), target).unwrap();
            let docs: Vec<_> = docs.iter().map(|(id, text)| (id.clone(), line_tokens(text))).collect();
            assert_eq!(docs, expect, "{name}, batches of {target}");
            assert_eq!(stats.documents, 200);
            let mut reader = CorpusReader::new(vec![input.clone()], ReadOptions::default(), Arc::default());
            let mut batch = Batch::default();
            let (mut batches, mut continued) = (0, 0);
            while reader.fill(&mut batch, target).unwrap() {
                assert!(batch.text.len() < target + 16, "{name}: a batch of {} for {target}", batch.text.len());
                batches += 1;
                continued += usize::from(batch.pieces[0].id.is_none());
            }
            if target >= 1000 {
                // Documents are shorter than half a batch: none is ever cut.
                assert_eq!(continued, 0, "{name}, batches of {target}");
            }
            assert!(batches >= body.len() / 4 / target.max(1), "{name}, {target}: {batches} batches");
        }
    }
}

/// A batch's size bounds what it holds, IDs and pieces too: documents of
/// a few words with IDs of 8 KB fill a batch with their IDs, not their text.
#[test]
fn long_ids_count_toward_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let long = "u".repeat(8 << 10);
    let body: String = (0..300).map(|d| format!("{{\"id\": \"{long}{d}\", \"text\": \"a b {d}\"}}\n")).collect();
    let vertical: String = (0..300).map(|d| format!("<doc id=\"{long}{d}\">\na\nb\n{d}\n</doc>\n")).collect();
    for (name, body) in [("long.jsonl", &body), ("long.vert", &vertical)] {
        let input = file(&dir, name, body.as_bytes());
        let target = 64 << 10;
        let mut reader = CorpusReader::new(vec![input], ReadOptions::default(), Arc::default());
        let mut batch = Batch::default();
        let (mut batches, mut documents) = (0, 0);
        while reader.fill(&mut batch, target).unwrap() || !batch.is_empty() {
            // At most one document past the target.
            assert!(batch.ids.len() <= target + long.len() + 3, "{name}: {} bytes of IDs", batch.ids.len());
            assert!(batch.held_bytes() >= batch.text.len() + batch.ids.len());
            batches += 1;
            documents += batch.pieces.len();
            if batch.is_empty() {
                break;
            }
        }
        assert_eq!(documents, 300, "{name}");
        assert!(batches >= 300 * long.len() / target, "{name}: {batches} batches");
    }
}

#[test]
fn formats_are_sniffed_without_extension() {
    assert_eq!(Format::sniff(b"  {\"text\""), Format::Jsonl);
    assert_eq!(Format::sniff(b"<doc id=1>"), Format::Vertical);
    assert_eq!(Format::sniff(b"hello"), Format::Text);
    assert_eq!(Format::from_path(std::path::Path::new("a/b.JSONL.zst")), Some(Format::Jsonl));
    assert_eq!(Format::from_path(std::path::Path::new("b.vrt.gz")), Some(Format::Vertical));
    assert_eq!(Format::from_path(std::path::Path::new("b.data")), None);
}

#[test]
fn missing_input_is_an_open_error() {
    let err =
        read_all(vec![Input::Path("/no/such/file.txt".into())], ReadOptions::default(), 100).unwrap_err().to_string();
    assert!(err.starts_with("/no/such/file.txt: cannot open"), "{err}");
}

#[test]
fn zstd_windows_are_read_from_headers() {
    let dir = tempfile::tempdir().unwrap();
    let body: Vec<u8> = (0..400_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    for (level, expect_at_least) in [(1, 1u64 << 19), (19, 1 << 22)] {
        let path = dir.path().join(format!("l{level}.zst"));
        std::fs::write(&path, zstd::encode_all(&body[..], level).unwrap()).unwrap();
        let w = zstd_window(&path).unwrap().unwrap();
        assert!(w >= expect_at_least && w <= 1 << 27, "level {level}: {w}");
        // The decoder accepts exactly what the header announced.
        let mut d = zstd::Decoder::new(std::fs::File::open(&path).unwrap()).unwrap();
        d.window_log_max(w.next_power_of_two().ilog2()).unwrap();
        std::io::copy(&mut d, &mut std::io::sink()).unwrap();
    }
    let small = dir.path().join("small.zst");
    // Compressed in one go, the content size is known and the frame is a single segment.
    std::fs::write(&small, zstd::bulk::compress(&b"tiny"[..], 3).unwrap()).unwrap();
    assert_eq!(zstd_window(&small).unwrap(), Some(4));
    let plain = dir.path().join("plain.txt");
    std::fs::write(&plain, b"not compressed").unwrap();
    assert_eq!(zstd_window(&plain).unwrap(), None);
}

/// What the reader makes of a vertical file, a line at a time: (id, text) of
/// each document, and the invalid sequences replaced with the first one's line.
fn vertical_by_lines(file: &[u8]) -> (Vec<(String, String)>, u64, Option<u64>) {
    let mut docs: Vec<(String, String)> = Vec::new();
    let (mut in_doc, mut replaced, mut first_replaced) = (false, 0, None);
    for (n, line) in file.split(|&b| b == b'\n').enumerate() {
        let n = n as u64 + 1;
        match VerticalLine::classify(line) {
            VerticalLine::DocOpen(attrs) => {
                let text = String::from_utf8_lossy(attrs).into_owned();
                let id = text.split("id=\"").nth(1).map(|rest| rest.split('"').next().unwrap_or("").to_owned());
                docs.push((id.unwrap_or_else(|| n.to_string()), String::new()));
                in_doc = true;
            }
            VerticalLine::DocClose => in_doc = false,
            VerticalLine::Structure(_) | VerticalLine::Blank => {}
            VerticalLine::Token(word) => {
                if !in_doc {
                    docs.push((n.to_string(), String::new()));
                    in_doc = true;
                }
                let text = String::from_utf8_lossy(word);
                let bad = text.matches('\u{fffd}').count() - memchr::memmem::find_iter(word, "\u{fffd}").count();
                if bad > 0 {
                    replaced += bad as u64;
                    first_replaced.get_or_insert(n);
                }
                let tab = if text.ends_with('\r') { "\t" } else { "" };
                docs.last_mut().expect("a document").1.push_str(&format!("{text}{tab}\n"));
            }
        }
    }
    (docs, replaced, first_replaced)
}

#[test]
fn vertical_token_lines_read_in_runs_make_what_line_by_line_makes() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [1, 2, 3] {
        let bytes = dupgram_fuzzkit::samples::mixed_vertical(150_000, seed);
        assert!(bytes.len() > 3 * 256 * 1024, "a file of several read buffers");
        runs_read_as_lines(&dir, &bytes, &format!("seed {seed}"));
    }
}

#[test]
fn vertical_lines_of_three_columns_read_in_runs_make_what_line_by_line_makes() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [4, 5] {
        // Every token line gets two more columns; one in 20,000 a tag that is no UTF-8.
        let mut bytes = Vec::new();
        for (i, line) in dupgram_fuzzkit::samples::mixed_vertical(150_000, seed).split(|&b| b == b'\n').enumerate() {
            bytes.extend_from_slice(line);
            if line.first().is_some_and(|&b| b != b'<') {
                bytes.extend_from_slice(if i % 20_000 == 7 { b"\t\xffN\tlemma" } else { b"\tNN\tlemma" });
            }
            bytes.push(b'\n');
        }
        runs_read_as_lines(&dir, &bytes, &format!("three columns, seed {seed}"));
    }
}

/// The tokens of a vertical document's text as the line tokenizer takes
/// them, one a line: each line's first column, a `\r` ending the line
/// dropped. Runs of token lines keep blank lines, `\r` and the columns
/// after the first, which the line-by-line path drops (it ends a first
/// column ending in `\r` with a TAB).
fn line_tokens(text: &str) -> String {
    let first_columns = text.split('\n').map(|line| match line.split_once('\t') {
        Some((column, _)) => column,
        None => line.strip_suffix('\r').unwrap_or(line),
    });
    first_columns.filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n")
}

/// Reads `bytes` as a vertical file at two batch sizes and checks it gives
/// the documents, tokens and replacements the line-by-line reading gives.
fn runs_read_as_lines(dir: &tempfile::TempDir, bytes: &[u8], what: &str) {
    let (expect, replaced, first) = vertical_by_lines(bytes);
    let input = file(dir, "mixed.vert", bytes);
    for target in [1000, 1 << 20] {
        let (docs, stats) = read_all(vec![input.clone()], ReadOptions::default(), target).unwrap();
        assert_eq!(docs.len(), expect.len(), "{what}, batches of {target}");
        for (got, want) in docs.iter().zip(&expect) {
            assert_eq!((&got.0, line_tokens(&got.1)), (&want.0, line_tokens(&want.1)), "{what}, batches of {target}");
        }
        assert_eq!(stats.documents, expect.len() as u64);
        assert_eq!(stats.replaced_utf8, replaced);
        assert_eq!(stats.first_replaced_at, first.map(|n| format!("{}: line {n}", input.name())));
    }
}

#[test]
fn a_copy_is_compressed_only_when_its_head_shows_no_magic() {
    assert!(crate::spool_compresses(b"{\"text\": 1}"));
    assert!(crate::spool_compresses(b"word"));
    // gzip and zstd streams are kept as they came.
    assert!(!crate::spool_compresses(&[0x1f, 0x8b, 8, 0, 0]));
    assert!(!crate::spool_compresses(&[0x28, 0xb5, 0x2f, 0xfd, 0]));
    // A head too short to tell may be the start of a magic: kept as it came.
    assert!(!crate::spool_compresses(&[0x1f]));
    assert!(!crate::spool_compresses(b"ab"));
    assert!(!crate::spool_compresses(b""));
}

#[test]
fn a_stamp_changes_when_the_file_is_written_to_and_only_files_have_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = file(&dir, "a.txt", b"one two three\n");
    let before = input.stamp().expect("a file has a stamp");
    assert_eq!(input.stamp(), Some(before), "an untouched file keeps its stamp");
    // A later tick of the clock that stamps files; the same length.
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::write(input.path().unwrap(), b"one two thref\n").unwrap();
    assert_ne!(input.stamp(), Some(before), "a file written to in place");
    assert_eq!(Input::Stdin { spool: None }.stamp(), None);
    assert_eq!(Input::Path("/dev/null".into()).stamp(), None, "a device is no file read twice");
    assert_eq!(Input::Path(dir.path().join("missing")).stamp(), None);
}
