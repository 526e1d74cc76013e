//! Seeded random edits of valid files: what a torn write, a flipped bit, a
//! mixed-up copy or a hostile author makes of them.

/// A small deterministic generator (SplitMix64): the same seed gives the
/// same cases on every machine, so a failure found once is found again.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator seeded from a name, so each target has its own stream.
    pub fn for_name(name: &str) -> Rng {
        // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        Rng(hash)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// One kind of edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutation {
    /// A few bits inverted.
    FlipBits,
    /// A few bytes set to values parsers treat specially (0, 0xff, a newline, a quote, …).
    SetBytes,
    /// A length-sized field overwritten with a huge value (`u32::MAX`, `u64::MAX`,
    /// 2^40, …, little- or big-endian, or a ten-byte varint).
    HugeLength,
    /// Cut short.
    Truncate,
    /// The start of one file joined to the end of another (or of itself).
    Splice,
    /// Random bytes inserted.
    Insert,
    /// A stretch removed.
    Delete,
    /// A stretch copied elsewhere in the file.
    Duplicate,
    /// Random bytes, sometimes after the file's first bytes (its magic).
    RandomBytes,
    /// A number written in digits (JSON, a line number, an attribute)
    /// replaced by a huge, negative, zero or fractional one.
    Digits,
}

impl Mutation {
    pub const ALL: [Mutation; 10] = [
        Mutation::FlipBits,
        Mutation::SetBytes,
        Mutation::HugeLength,
        Mutation::Truncate,
        Mutation::Splice,
        Mutation::Insert,
        Mutation::Delete,
        Mutation::Duplicate,
        Mutation::RandomBytes,
        Mutation::Digits,
    ];

    /// Edits that leave the bytes of one file, damaged: a format with
    /// checksums must refuse such a file or read exactly what it held.
    pub fn keeps_origin(self) -> bool {
        !matches!(self, Mutation::Splice | Mutation::RandomBytes)
    }

    fn pick(rng: &mut Rng) -> Mutation {
        const WEIGHTS: [(Mutation, usize); 10] = [
            (Mutation::FlipBits, 20),
            (Mutation::SetBytes, 10),
            (Mutation::HugeLength, 15),
            (Mutation::Truncate, 15),
            (Mutation::Splice, 10),
            (Mutation::Insert, 7),
            (Mutation::Delete, 8),
            (Mutation::Duplicate, 6),
            (Mutation::RandomBytes, 9),
            (Mutation::Digits, 8),
        ];
        let total: usize = WEIGHTS.iter().map(|w| w.1).sum();
        let mut at = rng.below(total);
        for (m, w) in WEIGHTS {
            if at < w {
                return m;
            }
            at -= w;
        }
        unreachable!("the weights add up to total")
    }
}

/// A mutated file and how it was made.
#[derive(Debug, Clone)]
pub struct Mutant {
    pub bytes: Vec<u8>,
    /// The seed it was made from, unless a splice or random bytes mixed in other data.
    pub origin: Option<usize>,
    pub steps: Vec<Mutation>,
}

/// One to three edits of a randomly chosen seed.
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Mutant {
    assert!(!seeds.is_empty(), "mutate needs at least one seed");
    let origin = rng.below(seeds.len());
    let mut bytes = seeds[origin].clone();
    let edits = match rng.below(10) {
        0..=5 => 1,
        6..=8 => 2,
        _ => 3,
    };
    let mut steps = Vec::with_capacity(edits);
    for _ in 0..edits {
        let m = Mutation::pick(rng);
        apply(rng, m, &mut bytes, seeds);
        steps.push(m);
    }
    let origin = steps.iter().all(|m| m.keeps_origin()).then_some(origin);
    Mutant { bytes, origin, steps }
}

/// Applies one edit of kind `m` to `data`.
pub fn apply(rng: &mut Rng, m: Mutation, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = data.len();
    match m {
        Mutation::FlipBits => {
            if len == 0 {
                return data.push(rng.byte());
            }
            let at = rng.below(len);
            for _ in 0..=rng.below(4) {
                // Mostly within one byte, sometimes anywhere.
                let byte = if rng.chance(2) { at } else { rng.below(len) };
                data[byte] ^= 1 << rng.below(8);
            }
        }
        Mutation::SetBytes => {
            if len == 0 {
                return data.push(rng.byte());
            }
            const SPECIAL: [u8; 11] = [0, 1, 0x7f, 0x80, 0xff, b'\n', b'"', b'<', b'\t', b'{', b'\\'];
            for _ in 0..=rng.below(4) {
                let at = rng.below(len);
                data[at] = if rng.chance(3) { rng.byte() } else { SPECIAL[rng.below(SPECIAL.len())] };
            }
        }
        Mutation::HugeLength => huge_length(rng, data),
        Mutation::Truncate => {
            let cut = if len > 0 && rng.chance(3) { len - 1 - rng.below(len.min(16)) } else { rng.below(len) };
            data.truncate(cut);
        }
        Mutation::Splice => {
            let other = &seeds[rng.below(seeds.len())];
            let (i, j) = (rng.below(len + 1), rng.below(other.len() + 1));
            data.truncate(i);
            data.extend_from_slice(&other[j..]);
        }
        Mutation::Insert => {
            let at = rng.below(len + 1);
            let new: Vec<u8> = (0..=rng.below(32)).map(|_| rng.byte()).collect();
            data.splice(at..at, new);
        }
        Mutation::Delete => {
            if len == 0 {
                return;
            }
            let at = rng.below(len);
            let end = (at + 1 + rng.below(32)).min(len);
            data.drain(at..end);
        }
        Mutation::Duplicate => {
            if len == 0 {
                return;
            }
            let from = rng.below(len);
            let piece = data[from..(from + 1 + rng.below(64)).min(len)].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, piece);
        }
        Mutation::Digits => digits(rng, data),
        Mutation::RandomBytes => {
            let keep = if rng.chance(2) { len.min(16) } else { 0 };
            data.truncate(keep);
            let more = rng.below(2 * len + 16);
            data.extend((0..more).map(|_| rng.byte()));
        }
    }
}

/// Overwrites a field at a random offset with a huge number.
fn huge_length(rng: &mut Rng, data: &mut Vec<u8>) {
    const HUGE: [u64; 7] = [u64::MAX, u32::MAX as u64, 1 << 31, 1 << 40, i64::MAX as u64, 1 << 62, 0xffff_fff0];
    let value = HUGE[rng.below(HUGE.len())];
    let field: Vec<u8> = match rng.below(5) {
        0 => (value as u32).to_le_bytes().to_vec(),
        1 => (value as u32).to_be_bytes().to_vec(),
        2 => value.to_be_bytes().to_vec(),
        3 => varint(value),
        _ => value.to_le_bytes().to_vec(),
    };
    let at = rng.below(data.len() + 1);
    let end = (at + field.len()).min(data.len());
    data.splice(at..end, field);
}

/// Replaces the run of ASCII digits at or after a random offset (or, with
/// none, inserts one) by another number.
fn digits(rng: &mut Rng, data: &mut Vec<u8>) {
    const NUMBERS: [&str; 9] =
        ["0", "18446744073709551615", "18446744073709551616", "4294967296", "-1", "1e308", "0.5", "99999999999", "7"];
    let new = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
    let from = rng.below(data.len() + 1);
    match data[from..].iter().position(u8::is_ascii_digit) {
        Some(i) => {
            let start = from + i;
            let end = start + data[start..].iter().take_while(|b| b.is_ascii_digit()).count();
            data.splice(start..end, new);
        }
        None => {
            data.splice(from..from, new);
        }
    }
}

/// LEB128, as the lexicon writes counts and lengths.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutants() {
        let seeds = vec![b"hello world, a valid file".to_vec(), vec![1, 2, 3]];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..200).map(|_| mutate(&mut rng, &seeds).bytes).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn every_mutation_changes_a_file_as_it_says() {
        let seed = (0..=255u8).collect::<Vec<u8>>();
        let seeds = vec![seed.clone()];
        let mut rng = Rng::new(1);
        for m in Mutation::ALL {
            let mut changed = 0;
            for _ in 0..50 {
                let mut data = seed.clone();
                apply(&mut rng, m, &mut data, &seeds);
                changed += usize::from(data != seed);
                if m == Mutation::Truncate {
                    assert!(data.len() < seed.len() && seed.starts_with(&data));
                }
            }
            // A splice may rebuild the file it started from; nothing else does twice in fifty tries.
            assert!(changed >= 40, "{m:?} changed only {changed} of 50 files");
        }
    }

    #[test]
    fn splices_and_random_bytes_lose_their_origin() {
        let seeds = vec![b"abcdefgh".to_vec(), b"ijklmnop".to_vec()];
        let mut rng = Rng::new(3);
        for _ in 0..500 {
            let m = mutate(&mut rng, &seeds);
            assert_eq!(m.origin.is_some(), m.steps.iter().all(|s| s.keeps_origin()), "{m:?}");
        }
    }

    #[test]
    fn below_stays_below() {
        let mut rng = Rng::for_name("x");
        assert_eq!(rng.below(0), 0);
        assert!((0..1000).all(|_| rng.below(7) < 7));
    }
}
