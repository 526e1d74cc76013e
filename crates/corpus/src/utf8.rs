//! Streaming UTF-8 repair: bytes in any pieces, valid text out.

/// Decodes a byte stream cut anywhere into valid UTF-8, replacing each
/// invalid sequence by U+FFFD (as `String::from_utf8_lossy` does) and
/// counting replacements. A character cut between two pieces is carried over.
#[derive(Debug, Default)]
pub struct Utf8Repair {
    carry: [u8; 4],
    carry_len: usize,
    replaced: u64,
}

impl Utf8Repair {
    /// Invalid sequences replaced so far.
    pub fn replaced(&self) -> u64 {
        self.replaced
    }

    /// Appends the text of `bytes` to `out`. With `last`, an incomplete
    /// character at the end is replaced instead of carried.
    pub fn push(&mut self, mut bytes: &[u8], last: bool, out: &mut String) {
        while self.carry_len > 0 {
            // The carried bytes begin a character; decide it with up to 4 more bytes.
            let take = bytes.len().min(4);
            let mut joined = [0u8; 8];
            joined[..self.carry_len].copy_from_slice(&self.carry[..self.carry_len]);
            joined[self.carry_len..self.carry_len + take].copy_from_slice(&bytes[..take]);
            let joined = &joined[..self.carry_len + take];
            let first = match std::str::from_utf8(joined) {
                Ok(s) => Ok(s.chars().next().map_or(0, char::len_utf8)),
                Err(e) if e.valid_up_to() > 0 => Ok(std::str::from_utf8(&joined[..e.valid_up_to()])
                    .map_or(0, |s| s.chars().next().map_or(0, char::len_utf8))),
                Err(e) => Err(e.error_len()),
            };
            match first {
                Ok(len) => {
                    out.push_str(std::str::from_utf8(&joined[..len]).unwrap_or("\u{fffd}"));
                    bytes = &bytes[len - self.carry_len..];
                    self.carry_len = 0;
                }
                Err(Some(bad)) => {
                    out.push(char::REPLACEMENT_CHARACTER);
                    self.replaced += 1;
                    if bad >= self.carry_len {
                        bytes = &bytes[bad - self.carry_len..];
                        self.carry_len = 0;
                    } else {
                        self.carry.copy_within(bad..self.carry_len, 0);
                        self.carry_len -= bad;
                    }
                }
                Err(None) => {
                    // Still incomplete: everything joined the carry.
                    self.carry[..joined.len()].copy_from_slice(joined);
                    self.carry_len = joined.len();
                    if last {
                        self.flush(out);
                    }
                    return;
                }
            }
        }
        loop {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    out.push_str(s);
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&bytes[..valid]).expect("validated prefix"));
                    match e.error_len() {
                        Some(len) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.replaced += 1;
                            bytes = &bytes[valid + len..];
                        }
                        None => {
                            let tail = &bytes[valid..];
                            self.carry[..tail.len()].copy_from_slice(tail);
                            self.carry_len = tail.len();
                            if last {
                                self.flush(out);
                            }
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Replaces a carried, incomplete character (at the end of a document).
    pub fn flush(&mut self, out: &mut String) {
        if self.carry_len > 0 {
            out.push(char::REPLACEMENT_CHARACTER);
            self.replaced += 1;
            self.carry_len = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pieces_decode_like_the_whole(bytes in prop::collection::vec(any::<u8>(), 0..64), cuts in prop::collection::vec(0usize..64, 0..4)) {
            prop_assume!(!bytes.windows(3).any(|w| w == "\u{fffd}".as_bytes()));
            let expect = String::from_utf8_lossy(&bytes).into_owned();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.push(0);
            cuts.push(bytes.len());
            cuts.sort();
            let mut r = Utf8Repair::default();
            let mut out = String::new();
            for w in cuts.windows(2) {
                r.push(&bytes[w[0]..w[1]], false, &mut out);
            }
            r.flush(&mut out);
            prop_assert_eq!(&out, &expect);
            prop_assert_eq!(r.replaced(), expect.matches('\u{fffd}').count() as u64);
        }
    }

    #[test]
    fn counts_replacements() {
        let mut r = Utf8Repair::default();
        let mut out = String::new();
        r.push(b"ok \xff\xfe caf\xc3", false, &mut out);
        r.push(b"\xa9 \xe2\x82", false, &mut out);
        r.push(b"", true, &mut out);
        assert_eq!(out, "ok \u{fffd}\u{fffd} café \u{fffd}");
        assert_eq!(r.replaced(), 3);
    }
}
