//! Sieve files meet hostile input (see `dupgram_fuzzkit`): each mutated
//! file is refused with an error (named, as the cluster's tasks name it,
//! by its path) or loaded as the sieve it held; a size field of u64::MAX
//! is refused.

use std::path::Path;

use dupgram_fuzzkit::{Fuzz, TrackingAlloc};
use dupgram_sieve::Sieve;

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

fn sieve_file(bytes: usize, fingerprints: impl Iterator<Item = u64>) -> Vec<u8> {
    let sieve = Sieve::with_bytes(bytes).unwrap();
    for f in fingerprints {
        sieve.insert(f);
    }
    let mut out = Vec::new();
    sieve.save(&mut out).unwrap();
    out
}

/// Loads a sieve as a task does, its error naming the file; what it holds, as bytes.
fn load(path: &Path) -> Result<Vec<u8>, String> {
    let named = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(named)?;
    let sieve = Sieve::load(&mut file, None).map_err(named)?.expect("a fresh sieve");
    let mut out = Vec::new();
    sieve.save(&mut out).unwrap();
    Ok(out)
}

#[test]
fn sieves_survive_mutation() {
    let seeds = vec![
        sieve_file(256, (0..300u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        sieve_file(64, [1, 2, 2, 3].into_iter()),
        sieve_file(8, std::iter::empty()),
    ];
    Fuzz::new("sieve", "shard-0000.sieve", seeds)
        .cases(2500)
        .checksummed()
        .regressions(format!("{}/tests/fuzz-regressions/sieve", env!("CARGO_MANIFEST_DIR")))
        .run(load);
}

#[test]
fn a_size_of_u64_max_is_refused() {
    let mut file = sieve_file(64, std::iter::empty());
    file[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let err = Sieve::load(&mut file.as_slice(), None).map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
}

#[test]
fn a_size_field_that_finds_a_matching_checksum_is_refused() {
    // The fuzz test once read this file (a sieve of 8 words whose size field
    // a moved stretch of bytes made 0, the zero words after it a valid
    // checksum of nothing) as an empty sieve.
    let path = format!("{}/tests/fuzz-regressions/sieve/size-field-outside-checksum.sieve", env!("CARGO_MANIFEST_DIR"));
    let err = load(Path::new(&path)).unwrap_err();
    assert!(err.contains("trailing bytes"), "{err}");
}
