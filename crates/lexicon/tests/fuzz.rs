//! Lexicon files (versions 1 and 2) meet hostile input: thousands of
//! mutated files (see `dupgram_fuzzkit`), also with the body edited inside
//! its zstd frame and the identity recomputed, each refused with an error
//! naming the file or loaded as a lexicon whose words find their own IDs.

use std::path::Path;

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_lexicon::{Lexicon, LexiconBuilder, LexiconError, Lookup, Normalization, Scope, TokenMode};

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

/// Magic, version and reserved bytes before the zstd frame.
const HEAD_LEN: usize = 16;

fn regressions(target: &str) -> String {
    format!("{}/tests/fuzz-regressions/{target}", env!("CARGO_MANIFEST_DIR"))
}

/// What a loaded lexicon says.
#[derive(Debug, PartialEq)]
struct Summary {
    norm: String,
    stopwords: Vec<String>,
    words: Vec<(String, u64)>,
    fixed_ids: bool,
    identity: u64,
}

fn load(path: &Path) -> Result<Summary, LexiconError> {
    let lex = Lexicon::load(path, Scope::All)?;
    let repeated = Lexicon::load(path, Scope::Repeated)?;
    assert_eq!(repeated.identity(), lex.identity());
    let words: Vec<(String, u64)> = (0..lex.len() as u32).map(|id| (lex.word(id).to_owned(), lex.count(id))).collect();
    for (id, (word, _)) in words.iter().enumerate() {
        assert_eq!(lex.lookup(word), Lookup::Id(id as u32), "word {id} {word:?} does not find its own ID");
    }
    assert!(lex.stopwords().iter().all(|s| lex.lookup(s) != Lookup::Unknown), "a stop word is unknown");
    Ok(Summary {
        norm: format!("{:?}", lex.normalization()),
        stopwords: lex.stopwords().to_vec(),
        words,
        fixed_ids: lex.has_fixed_ids(),
        identity: lex.identity(),
    })
}

fn file_of(lex: &Lexicon) -> Vec<u8> {
    let mut out = Vec::new();
    lex.write_to(&mut out).unwrap();
    out
}

fn counted(words: &str, stop: &[&str]) -> LexiconBuilder {
    let mut b = LexiconBuilder::new(stop.iter().map(|s| s.to_string()));
    for w in words.split_whitespace() {
        b.add(w);
    }
    b
}

/// Header and decompressed body.
fn open(file: &[u8]) -> Vec<u8> {
    let mut out = file[..HEAD_LEN].to_vec();
    out.extend(zstd::decode_all(&file[HEAD_LEN..file.len() - 8]).unwrap());
    out
}

/// Header, the body compressed again, and its identity.
fn close(content: &[u8]) -> Vec<u8> {
    let split = content.len().min(HEAD_LEN);
    let mut out = content[..split].to_vec();
    let body = &content[split..];
    out.extend(zstd::encode_all(body, 1).unwrap());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
    out
}

fn seeds() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let text = "the cat and the dog and the bird saw the cat the end straße Ünïcode 数字 a a a b";
    let words = Normalization::default();
    let raw = Normalization { mode: TokenMode::Raw, numbers_as_token: true, strip_markup: true };
    let v1 = counted(text, &["and", "saw"]).finish(words, 0);
    let v1_raw = counted(text, &[]).finish(raw, 1);
    let empty = counted("", &[]).finish(words, 0);
    let v2 = v1.updated(&counted("new words the cat zebra zebra", &[])).unwrap();
    let v2_more = v2.updated(&counted("a b c d e f", &[])).unwrap();
    assert!(v2.has_fixed_ids() && !v1.has_fixed_ids());
    (vec![file_of(&v1), file_of(&v1_raw), file_of(&empty)], vec![file_of(&v2), file_of(&v2_more)])
}

#[test]
fn version_1_lexicons_survive_mutation() {
    Fuzz::new("lexicon-v1", "words.lex", seeds().0)
        .cases(2500)
        .checksummed()
        .sealed(open, close)
        .regressions(regressions("v1"))
        .run(load);
}

#[test]
fn version_2_lexicons_survive_mutation() {
    Fuzz::new("lexicon-v2", "words.lex", seeds().1)
        .cases(2500)
        .checksummed()
        .sealed(open, close)
        .regressions(regressions("v2"))
        .run(load);
}

#[test]
fn huge_counts_and_lengths_are_refused_without_allocating_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.lex");
    let ff = [0xff; 9];
    let max = [&ff[..], &[0x01]].concat(); // u64::MAX as a varint
    // mode, flags, then: stop words, a stop word's length, words, a word's length.
    for body in [
        [&[0, 0, 0][..], &max].concat(),
        [&[0, 0, 0, 1][..], &max].concat(),
        [&[0, 0, 0, 0][..], &max].concat(),
        [&[0, 0, 0, 0, 1][..], &max].concat(),
        [&[0, 0, 0, 0, 1, 0xff, 0xff, 0x7f][..], b"word"].concat(),
    ] {
        let mut content = seeds().0[0][..HEAD_LEN].to_vec();
        content.extend_from_slice(&body);
        std::fs::write(&path, close(&content)).unwrap();
        let (result, peak) = dupgram_fuzzkit::measure(|| Lexicon::load(&path, Scope::All));
        let err = result.unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: corrupt lexicon", path.display())), "{err}");
        assert!(peak < 4 << 20, "{peak} bytes held for {body:?}");
    }
}

#[test]
fn a_frame_asking_for_a_huge_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("window.lex");
    let file = &seeds().0[0];
    let body = zstd::decode_all(&file[HEAD_LEN..file.len() - 8]).unwrap();
    let mut z = zstd::Encoder::new(Vec::new(), 3).unwrap();
    z.window_log(27).unwrap();
    std::io::Write::write_all(&mut z, &body).unwrap();
    let mut out = file[..HEAD_LEN].to_vec();
    out.extend(z.finish().unwrap());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    std::fs::write(&path, &out).unwrap();
    let err = Lexicon::load(&path, Scope::All).unwrap_err().to_string();
    let expected = format!("{}: corrupt lexicon: zstd window larger than the 4096 KiB", path.display());
    assert!(err.starts_with(&expected), "{err}");
    // The same body in the writer's own frame loads.
    std::fs::write(&path, close(&open(file))).unwrap();
    Lexicon::load(&path, Scope::All).unwrap();
}
