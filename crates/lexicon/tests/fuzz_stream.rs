//! Word-ID streams meet hostile input (see `dupgram_fuzzkit`): thousands of
//! mutated streams, also with their checksums recomputed after the damage
//! (sealed), each refused with an error naming the file or read as the
//! codes it held; a huge frame length allocates nothing.

use std::path::Path;

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_lexicon::stream::{MAX_FRAME_BYTES, StreamReader, StreamWriter};
use xxhash_rust::xxh3::xxh3_64;

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

/// First-seen IDs the decoder accepts.
const VOCABULARY: u32 = 70_000;
const HEAD_LEN: usize = 16;

fn stream(docs: &[Vec<u32>]) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new()).unwrap();
    for doc in docs {
        for &id in doc {
            w.word(id).unwrap();
        }
        w.end_document().unwrap();
    }
    w.finish().unwrap().0
}

/// A stream with words past a table: slots of epochs, and the epochs' ends.
fn slotted() -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new()).unwrap();
    for i in 0..3000u32 {
        match i % 500 {
            499 => w.epoch_end(499).unwrap(),
            j if j % 3 == 0 => w.slot(j * 37 % 499).unwrap(),
            _ => w.word(i * 7919 % VOCABULARY).unwrap(),
        }
        if i % 40 == 39 {
            w.end_document().unwrap();
        }
    }
    w.finish().unwrap().0
}

/// A stream of mostly slots: its frames past the first slot are interleaved.
fn mostly_slots() -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new()).unwrap();
    for i in 0..3000u32 {
        match i % 1000 {
            999 => w.epoch_end(999).unwrap(),
            j if j % 5 == 0 => w.word(j).unwrap(),
            j => w.slot(j * 37 % 999).unwrap(),
        }
        if i % 40 == 39 {
            w.end_document().unwrap();
        }
    }
    let stream = w.finish().unwrap().0;
    // The first frame holds the word before the first slot; the second is interleaved.
    let first = u32::from_le_bytes(stream[HEAD_LEN..HEAD_LEN + 4].try_into().unwrap()) as usize;
    assert_ne!(stream[HEAD_LEN + 12 + first + 3] & 0x80, 0, "the second frame is interleaved");
    stream
}

/// Reads a stream as the count pass does, the error naming the file.
fn load(path: &Path) -> Result<Vec<u32>, String> {
    let named = |e: String| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| named(e.to_string()))?;
    let mut reader = StreamReader::new(std::io::BufReader::new(file), VOCABULARY).map_err(|e| named(e.to_string()))?;
    let (mut all, mut codes) = (Vec::new(), Vec::new());
    while reader.next_frame(&mut codes).map_err(|e| named(e.to_string()))? {
        all.extend_from_slice(&codes);
    }
    Ok(all)
}

/// The stream with every checksum it can find recomputed: frame by frame
/// as their lengths say, then the end's.
fn seal(content: &[u8]) -> Vec<u8> {
    let mut out = content.to_vec();
    let mut at = HEAD_LEN;
    while at + 4 <= out.len() {
        // Bit 31 marks an interleaved frame.
        let len = (u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) & !(1 << 31)) as usize;
        if len == 0 {
            if at + 28 <= out.len() {
                let check = xxh3_64(&out[at + 4..at + 20]);
                out[at + 20..at + 28].copy_from_slice(&check.to_le_bytes());
            }
            break;
        }
        if at + 12 + len > out.len() {
            break;
        }
        let check = xxh3_64(&out[at + 12..at + 12 + len]);
        out[at + 4..at + 12].copy_from_slice(&check.to_le_bytes());
        at += 12 + len;
    }
    out
}

#[test]
fn word_streams_survive_mutation() {
    let long: Vec<u32> = (0..70_000u32).map(|i| i * 7919 % VOCABULARY).collect();
    let seeds = vec![
        stream(&[vec![0, 1, 2, 0, 3], vec![], vec![127, 128, 16_383, 16_384]]),
        stream(&[long]),
        stream(&[]),
        slotted(),
        mostly_slots(),
    ];
    Fuzz::new("word-stream", "words-w0.dgw", seeds)
        .cases(2500)
        .checksummed()
        .sealed(|file| file.to_vec(), seal)
        .regressions(format!("{}/tests/fuzz-regressions/stream", env!("CARGO_MANIFEST_DIR")))
        .run(load);
}

#[test]
fn a_huge_frame_length_allocates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.dgw");
    let mut file = stream(&[vec![1, 2, 3]]);
    for len in [MAX_FRAME_BYTES as u32, MAX_FRAME_BYTES as u32 + 1, u32::MAX] {
        file[HEAD_LEN..HEAD_LEN + 4].copy_from_slice(&len.to_le_bytes());
        std::fs::write(&path, &file).unwrap();
        let (result, peak) = dupgram_fuzzkit::measure(|| load(&path));
        let err = result.unwrap_err();
        assert!(err.starts_with(&format!("{}: corrupt word-ID stream", path.display())), "{err}");
        assert!(peak < 1 << 20, "{peak} bytes held for a frame length of {len}");
    }
}
