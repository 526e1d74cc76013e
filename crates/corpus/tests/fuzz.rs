//! The corpus readers meet hostile input: thousands of mutated text, JSON
//! Lines and vertical files, plain, gzip and zstd (see `dupgram_fuzzkit`).
//! Plain files always read (invalid UTF-8 repaired and counted) or stop at a
//! bad record with an error naming the file and line; a damaged compressed
//! file is refused with an error naming the file, or — where the damage
//! touched no content — read exactly as it was: never with data lost.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use dupgram_corpus::{Batch, CorpusError, CorpusReader, Input, ReadOptions};
use dupgram_fuzzkit::{Fuzz, TrackingAlloc};

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

fn regressions(target: &str) -> String {
    format!("{}/tests/fuzz-regressions/{target}", env!("CARGO_MANIFEST_DIR"))
}

/// What a file held: its documents (ID, text) and how many bytes were repaired.
#[derive(Debug)]
struct Read {
    /// Whether the file is a damaged version of the one it came from. A
    /// file that lost its gzip or zstd magic is plain text, and a file cut
    /// exactly after a gzip member or zstd frame is a whole compressed file:
    /// other valid files, not damaged ones.
    damaged: bool,
    docs: Vec<(String, String)>,
    replaced: u64,
}

impl PartialEq for Read {
    fn eq(&self, other: &Read) -> bool {
        !(self.damaged && other.damaged) || (&self.docs, self.replaced) == (&other.docs, other.replaced)
    }
}

/// The first members (frames) of the seeds with several: whole files on their own.
fn first_members() -> &'static [Vec<u8>] {
    static FIRST: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    FIRST.get_or_init(|| vec![gzip(JSONL), zstd(VERTICAL)])
}

fn read_with(path: &Path, options: ReadOptions) -> Result<Read, CorpusError> {
    let bytes = std::fs::read(path).unwrap();
    let compressed = bytes.starts_with(&[0x1f, 0x8b]) || bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    let damaged = compressed && !first_members().contains(&bytes);
    let mut reader = CorpusReader::new(vec![Input::Path(path.to_owned())], options, Arc::new(AtomicU64::new(0)));
    let mut batch = Batch::default();
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut open = false;
    // A batch holds at least one piece, so the loop ends within the file's length in batches.
    while reader.fill(&mut batch, 512)? {
        for p in &batch.pieces {
            if let Some(id) = batch.piece_id(p) {
                assert!(!open, "a document started before the previous ended");
                docs.push((id.to_owned(), String::new()));
                open = true;
            }
            assert!(open, "a piece outside any document");
            assert_eq!(p.doc + 1, docs.len() as u64, "pieces out of document order");
            docs.last_mut().unwrap().1.push_str(batch.piece_text(p));
            open = !p.last;
        }
    }
    assert!(!open, "the last document never ended");
    let stats = reader.stats();
    assert_eq!(stats.documents, docs.len() as u64);
    // A U+FFFD that was not in the file (as UTF-8 or a JSON escape) is a repair, and must be counted.
    let literal = bytes.windows(3).any(|w| w == "\u{fffd}".as_bytes())
        || bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\ufffd"));
    let repaired = docs.iter().any(|(id, text)| id.contains('\u{fffd}') || text.contains('\u{fffd}'));
    if !compressed && !literal && repaired {
        assert!(stats.replaced_utf8 > 0, "invalid UTF-8 was replaced but not counted");
    }
    Ok(Read { damaged, docs, replaced: stats.replaced_utf8 })
}

/// Reads strictly (a bad record is an error naming file and line), then
/// leniently with a small record limit (bad records counted and skipped).
fn read(path: &Path) -> Result<Read, CorpusError> {
    let lenient = ReadOptions { skip_bad: true, max_record_bytes: 64, ..ReadOptions::default() };
    match read_with(path, lenient) {
        Ok(_) => {}
        Err(e @ (CorpusError::Read { .. } | CorpusError::Window { .. } | CorpusError::Open { .. })) => {
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        }
        Err(e) => panic!("--skip-bad stopped at a record: {e}"),
    }
    let strict = read_with(path, ReadOptions::default());
    if let Err(e @ CorpusError::BadRecord { .. }) = &strict {
        assert!(e.to_string().contains(": line "), "a bad record without its line: {e}");
    }
    strict
}

const TEXT: &str = "The first document, a line.\n\
                    A second one: naïve café, 数字 and ünïcödé.\n\
                    \n\
                    The fourth, after an empty line, longer than the batch of the reader is by a good many \
                    bytes so that it comes in pieces, the pieces adding up to one document again.\n";

const JSONL: &str = r#"{"id": "a1", "text": "The first document, a line."}
{"text": "No ID: the line number names it.", "other": [1, 2, {"x": null}]}
{"id": 7, "text": "A numeric ID \u00e9 and escapes \" \\ \n"}
{"id": "long", "text": "longer than the batch of the reader is by a good many bytes so that it comes in pieces, the pieces adding up to one document again, the pieces adding up."}
"#;

const VERTICAL: &str = "<doc id=\"d1\" title=\"x\">\n<p>\n<s>\nThe\tDT\tthe\nfirst\nline\n</s>\n</p>\n</doc>\n\
                        <doc id=\"d2\">\n<g/>\nnaïve\ncafé\n</doc>\n<doc>\nno\nid\nhere\n</doc>\n";

fn gzip(text: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// Two gzip members, as `cat a.gz b.gz` makes.
fn gzip_members(a: &str, b: &str) -> Vec<u8> {
    [gzip(a), gzip(b)].concat()
}

/// zstd with a content checksum, as the `zstd` command writes by default.
fn zstd(text: &str) -> Vec<u8> {
    let mut e = zstd::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

fn plain(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

/// Reads a text file, which holds one document per line, every line.
fn read_text(path: &Path) -> Result<Read, CorpusError> {
    let read = read(path)?;
    let bytes = std::fs::read(path).unwrap();
    let lines = bytes.split(|&b| b == b'\n').count() - usize::from(bytes.is_empty() || bytes.ends_with(b"\n"));
    assert_eq!(read.docs.len(), lines, "a text file of {lines} lines read as {} documents", read.docs.len());
    Ok(read)
}

#[test]
fn plain_text_survives_mutation() {
    let seeds = plain(&[TEXT, "one line without an end", "\u{feff}bom\r\nand CRLF\r\n"]);
    let fuzz = Fuzz::new("corpus-text", "corpus.txt", seeds).cases(2500).always_valid();
    fuzz.regressions(regressions("text")).run(read_text);
}

#[test]
fn json_lines_survive_mutation() {
    let seeds = plain(&[JSONL, "{\"id\":\"x\",\"text\":\"y\"}", "\n\n{\"text\":\"\"}\n"]);
    Fuzz::new("corpus-jsonl", "corpus.jsonl", seeds).cases(2500).regressions(regressions("jsonl")).run(read);
}

#[test]
fn vertical_files_survive_mutation() {
    let seeds = plain(&[VERTICAL, "<doc id=\"only\">\nword\n</doc>", "text before any doc\n<doc>\nx\n"]);
    let fuzz = Fuzz::new("corpus-vertical", "corpus.vert", seeds).cases(2500).always_valid();
    fuzz.regressions(regressions("vertical")).run(read);
}

#[test]
fn unnamed_files_are_sniffed_and_survive_mutation() {
    let seeds = plain(&[TEXT, JSONL, VERTICAL]);
    Fuzz::new("corpus-sniffed", "corpus", seeds).cases(1500).regressions(regressions("sniffed")).run(read);
}

#[test]
fn gzip_files_survive_mutation() {
    let seeds = vec![gzip(JSONL), gzip_members(JSONL, "{\"text\": \"second member\"}\n"), gzip("")];
    Fuzz::new("corpus-gzip", "corpus.jsonl.gz", seeds)
        .cases(2500)
        .checksummed()
        .regressions(regressions("gzip"))
        .run(read);
}

#[test]
fn zstd_files_survive_mutation() {
    let seeds = vec![zstd(VERTICAL), [zstd(VERTICAL), zstd("<doc id=\"z\">\nmore\n</doc>\n")].concat(), zstd("")];
    Fuzz::new("corpus-zstd", "corpus.vert.zst", seeds)
        .cases(2500)
        .checksummed()
        .regressions(regressions("zstd"))
        .run(read);
}

#[test]
fn compressed_text_survives_mutation() {
    let seeds = vec![gzip(TEXT), zstd(TEXT)];
    Fuzz::new("corpus-compressed-text", "corpus.txt.gz", seeds)
        .cases(1500)
        .checksummed()
        .regressions(regressions("compressed-text"))
        .run(read);
}
