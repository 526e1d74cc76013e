//! A most-significant-bit-first bit stream with Elias gamma and delta codes.
//!
//! `bitstream-io` has raw bit I/O but no gamma/delta helpers, and a codec built
//! on it measured 2–3× slower than this u64 bit buffer (see `benches/bit_codes.rs`
//! at the workspace root). The stream layout is plain big-endian bit order, so
//! `bitstream_io::BitReader<_, BigEndian>` decodes what [`BitWriter`] writes; the
//! tests use that as an independent cross-check.

/// Appends bits, most significant first, to a byte vector.
///
/// Whole bytes are stored eight at a time with one unaligned store; the
/// vector is kept at least eight bytes longer than what is committed, and
/// cut to size by [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct BitWriter {
    bytes: Vec<u8>,
    /// Bytes committed; `bytes` may be longer (scratch space).
    len: usize,
    /// Pending bits live in the low `pending` (< 8) bits of `acc`; anything above is stale.
    acc: u64,
    pending: u32,
}

/// The most bits [`BitWriter::write_bits`] stores in one step.
const MAX_STEP: u32 = 56;

impl BitWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        BitWriter { bytes: Vec::with_capacity(bytes + 8), len: 0, acc: 0, pending: 0 }
    }

    /// Bits written so far, including pending ones.
    pub fn bit_len(&self) -> u64 {
        self.len as u64 * 8 + u64::from(self.pending)
    }

    /// Writes codes of at most `max_bits` bits in all through `write`, with
    /// the writer's state copied into a [`BitCodes`] of locals: room is made
    /// once for all of them, and the state stays in registers between codes
    /// instead of going back to the writer after each (which a caller
    /// writing an entry of ten codes pays ten times). Writing more than
    /// `max_bits` may panic; it never writes out of bounds (the stores are
    /// bounds-checked).
    #[inline]
    pub fn codes<R>(&mut self, max_bits: usize, write: impl FnOnce(&mut BitCodes<'_>) -> R) -> R {
        let need = self.len + max_bits.div_ceil(8) + 8;
        if self.bytes.len() < need {
            self.grow(need);
        }
        let mut codes = BitCodes { out: &mut self.bytes, len: self.len, acc: self.acc, pending: self.pending };
        let result = write(&mut codes);
        let BitCodes { len, acc, pending, .. } = codes;
        (self.len, self.acc, self.pending) = (len, acc, pending);
        result
    }

    #[cold]
    fn grow(&mut self, need: usize) {
        let len = need.max(self.bytes.capacity()).max(2 * self.bytes.len());
        self.bytes.resize(len, 0);
    }

    /// Writes the low `len` bits of `value` (`len` ≤ 64).
    #[inline]
    pub fn write_bits(&mut self, value: u64, len: u32) {
        self.codes(64, |c| c.bits(value, len));
    }

    /// Elias gamma code of `x` ≥ 1: ⌊log₂x⌋ zeros, then `x` in binary.
    #[inline]
    pub fn write_gamma(&mut self, x: u64) {
        self.codes(128, |c| c.gamma(x));
    }

    /// Elias delta code of `x` ≥ 1: gamma of the bit width, then the bits below the leading one.
    #[inline]
    pub fn write_delta(&mut self, x: u64) {
        self.codes(128, |c| c.delta(x));
    }

    /// Pads with zero bits to a whole byte and returns the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.flush_pending();
        self.bytes.truncate(self.len);
        self.bytes
    }

    /// Pads to a whole byte, appends the bytes to `sink`, and leaves the writer empty for reuse.
    pub fn drain_into(&mut self, sink: &mut Vec<u8>) {
        self.flush_pending();
        sink.extend_from_slice(&self.bytes[..self.len]);
        self.clear();
    }

    pub fn clear(&mut self) {
        self.len = 0;
        self.acc = 0;
        self.pending = 0;
    }

    fn flush_pending(&mut self) {
        if self.pending > 0 {
            let pad = 8 - self.pending;
            self.write_bits(0, pad);
        }
    }
}

/// A [`BitWriter`]'s state while [`BitWriter::codes`] writes: the bytes
/// after `len` are room made beforehand, so a code is a shift, an or and one
/// unaligned eight-byte store.
pub struct BitCodes<'a> {
    out: &'a mut [u8],
    /// Bytes committed.
    len: usize,
    /// Pending bits live in the low `pending` (< 8) bits of `acc`; anything above is stale.
    acc: u64,
    pending: u32,
}

impl BitCodes<'_> {
    /// Writes the low `len` bits of `value` (`len` ≤ 64).
    #[inline]
    pub fn bits(&mut self, value: u64, len: u32) {
        debug_assert!(len <= 64);
        let value = value & mask(len);
        if len > MAX_STEP {
            self.step(value >> 32, len - 32);
            self.step(value & 0xffff_ffff, 32);
        } else {
            self.step(value, len);
        }
    }

    /// Without a branch: a short code often completes no byte, and a branch
    /// on that is mispredicted on real data (the codes' lengths vary). The
    /// store is made whether or not a byte is complete; the partial byte it
    /// also writes is written again, whole, by a later store.
    #[inline]
    fn step(&mut self, value: u64, len: u32) {
        // pending ≤ 7 and len ≤ 56, so no pending bit is shifted out.
        self.acc = (self.acc << len) | value;
        self.pending += len;
        // The pending bits, left-aligned (two shifts: pending may be 0, and a shift by 64 is not one).
        let aligned = (self.acc << 1) << (63 - self.pending);
        self.out[self.len..self.len + 8].copy_from_slice(&aligned.to_be_bytes());
        self.len += (self.pending / 8) as usize;
        self.pending %= 8;
    }

    /// Elias gamma code of `x` ≥ 1: ⌊log₂x⌋ zeros, then `x` in binary.
    #[inline]
    pub fn gamma(&mut self, x: u64) {
        debug_assert!(x >= 1);
        let width = 64 - x.leading_zeros();
        if 2 * width - 1 <= MAX_STEP {
            // The zeros are the leading bits of a (2·width − 1)-bit field holding x.
            self.step(x, 2 * width - 1);
        } else {
            self.bits(0, width - 1);
            self.bits(x, width);
        }
    }

    /// Elias delta code of `x` ≥ 1: gamma of the bit width, then the bits below the leading one.
    #[inline]
    pub fn delta(&mut self, x: u64) {
        debug_assert!(x >= 1);
        let width = 64 - x.leading_zeros();
        let width_bits = 64 - width.leading_zeros();
        let total = 2 * width_bits - 1 + width - 1;
        if total <= MAX_STEP {
            // gamma(width) and the low bits of x as one field: width, then x without its leading one.
            self.step((u64::from(width) << (width - 1)) | (x & mask(width - 1)), total);
        } else {
            self.gamma(u64::from(width));
            self.bits(x, width - 1);
        }
    }
}

#[inline]
fn mask(len: u32) -> u64 {
    if len >= 64 { u64::MAX } else { (1u64 << len) - 1 }
}

/// What can go wrong decoding a bit stream that passed its checksum but is still malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("bit stream ended inside a code")]
    Exhausted,
    #[error("code longer than 64 bits")]
    TooLong,
    #[error("a block's first entry is not greater than the previous block's last")]
    OutOfOrder,
}

/// Reads a bit stream written by [`BitWriter`]. It keeps only its position, so a
/// reader can sit beside the buffer it reads in the same struct.
#[derive(Debug, Default, Clone)]
pub struct BitCursor {
    /// Next byte of the buffer to load into `acc`.
    next_byte: usize,
    /// Valid bits, left-aligned; bits below `avail` are either zero or the true next bits.
    acc: u64,
    avail: u32,
    /// Bits consumed so far.
    consumed: u64,
}

impl BitCursor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn bits_consumed(&self) -> u64 {
        self.consumed
    }

    #[inline]
    fn refill(&mut self, data: &[u8]) {
        if self.avail > 56 {
            return;
        }
        if let Some(chunk) = data.get(self.next_byte..self.next_byte + 8) {
            let word = u64::from_be_bytes(chunk.try_into().expect("slice of 8 bytes"));
            self.acc |= word >> self.avail;
            let whole = (63 - self.avail) / 8;
            self.next_byte += whole as usize;
            self.avail += whole * 8;
        } else {
            while self.avail <= 56 && self.next_byte < data.len() {
                self.acc |= u64::from(data[self.next_byte]) << (56 - self.avail);
                self.next_byte += 1;
                self.avail += 8;
            }
        }
    }

    #[inline]
    fn take(&mut self, len: u32) -> u64 {
        debug_assert!(len <= self.avail);
        let value = match len {
            0 => return 0,
            64 => self.acc,
            _ => self.acc >> (64 - len),
        };
        self.acc = if len == 64 { 0 } else { self.acc << len };
        self.avail -= len;
        self.consumed += u64::from(len);
        value
    }

    /// Reads `len` ≤ 64 raw bits.
    #[inline]
    pub fn read_bits(&mut self, data: &[u8], len: u32) -> Result<u64, CodeError> {
        if len > 32 {
            let high = self.read_bits(data, len - 32)?;
            let low = self.read_bits(data, 32)?;
            return Ok((high << 32) | low);
        }
        self.refill(data);
        if self.avail < len {
            return Err(CodeError::Exhausted);
        }
        Ok(self.take(len))
    }

    /// Counts zero bits up to and not including the next one bit, and consumes them.
    #[inline]
    fn read_zero_run(&mut self, data: &[u8]) -> Result<u32, CodeError> {
        let mut zeros = 0u32;
        loop {
            self.refill(data);
            if self.avail == 0 {
                return Err(CodeError::Exhausted);
            }
            let lead = self.acc.leading_zeros();
            if lead < self.avail {
                zeros += lead;
                self.take(lead);
                return if zeros > 63 { Err(CodeError::TooLong) } else { Ok(zeros) };
            }
            zeros += self.avail;
            let avail = self.avail;
            self.take(avail);
            if zeros > 63 {
                return Err(CodeError::TooLong);
            }
        }
    }

    #[inline]
    pub fn read_gamma(&mut self, data: &[u8]) -> Result<u64, CodeError> {
        self.refill(data);
        let zeros = self.acc.leading_zeros();
        if zeros < 32 && 2 * zeros < self.avail {
            // The whole code is loaded: `zeros` zeros, then zeros + 1 bits.
            let value = (self.acc << zeros) >> (63 - zeros);
            self.take(2 * zeros + 1);
            return Ok(value);
        }
        let zeros = self.read_zero_run(data)?;
        self.read_bits(data, zeros + 1)
    }

    #[inline]
    pub fn read_delta(&mut self, data: &[u8]) -> Result<u64, CodeError> {
        self.refill(data);
        let zeros = self.acc.leading_zeros();
        if zeros < 6 {
            let width = (self.acc << zeros) >> (63 - zeros);
            let total = 2 * zeros as u64 + width;
            if width >= 1 && total <= u64::from(self.avail) {
                // gamma(width) and the width − 1 low bits are all loaded.
                let low = if width == 1 { 0 } else { (self.acc << (2 * zeros + 1)) >> (65 - width) };
                self.take(total as u32);
                return Ok((1u64 << (width - 1)) | low);
            }
        }
        self.read_delta_slow(data)
    }

    #[cold]
    fn read_delta_slow(&mut self, data: &[u8]) -> Result<u64, CodeError> {
        let zeros = self.read_zero_run(data)?;
        let width = self.read_bits(data, zeros + 1)?;
        if width == 0 || width > 64 {
            return Err(CodeError::TooLong);
        }
        let width = width as u32;
        let low = self.read_bits(data, width - 1)?;
        Ok(if width == 64 { (1u64 << 63) | low } else { (1u64 << (width - 1)) | low })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitstream_io::{BigEndian, BitRead, BitReader};
    use proptest::prelude::*;

    fn interesting() -> impl Strategy<Value = u64> {
        prop_oneof![1u64..=300, any::<u64>().prop_map(|x| x.max(1)), (0u32..64).prop_map(|b| 1u64 << b)]
    }

    proptest! {
        #[test]
        fn gamma_and_delta_round_trip(values in prop::collection::vec((interesting(), any::<bool>()), 0..400)) {
            let mut w = BitWriter::default();
            for &(v, delta) in &values {
                if delta { w.write_delta(v) } else { w.write_gamma(v) }
            }
            let bytes = w.finish();
            let mut c = BitCursor::new();
            for &(v, delta) in &values {
                let got = if delta { c.read_delta(&bytes) } else { c.read_gamma(&bytes) };
                prop_assert_eq!(got, Ok(v));
            }
        }

        #[test]
        fn raw_bits_decode_with_bitstream_io(values in prop::collection::vec((any::<u64>(), 1u32..=64), 0..200)) {
            let mut w = BitWriter::default();
            for &(v, len) in &values {
                w.write_bits(v, len);
            }
            let bytes = w.finish();
            let mut r = BitReader::endian(std::io::Cursor::new(&bytes), BigEndian);
            for &(v, len) in &values {
                let expect = if len == 64 { v } else { v & ((1u64 << len) - 1) };
                let got: u64 = r.read_var(len).unwrap();
                prop_assert_eq!(got, expect);
            }
        }

        #[test]
        fn gamma_matches_textbook_bits(v in interesting()) {
            // Independent decoder: bitstream-io unary zeros, then the value's bits.
            let mut w = BitWriter::default();
            w.write_gamma(v);
            let bytes = w.finish();
            let mut r = BitReader::endian(std::io::Cursor::new(&bytes), BigEndian);
            let zeros = r.read_unary::<1>().unwrap();
            let rest: u64 = if zeros == 0 { 0 } else { r.read_var(zeros).unwrap() };
            prop_assert_eq!((1u64 << zeros) | rest, v);
        }

        /// Codes written in groups through one `codes` call, and mixed with
        /// raw bits and drained half-way, give the bytes of one call a code.
        #[test]
        fn grouped_codes_write_the_same_bits(
            values in prop::collection::vec((interesting(), 0u8..3), 0..400),
            group in 1usize..12,
        ) {
            let code = |c: &mut BitCodes<'_>, (v, kind): (u64, u8)| match kind {
                0 => c.gamma(v),
                1 => c.delta(v),
                _ => c.bits(v, 64 - v.leading_zeros()),
            };
            let mut one = BitWriter::default();
            for &value in &values {
                one.codes(128, |c| code(c, value));
            }
            let mut grouped = BitWriter::with_capacity(3);
            for values in values.chunks(group) {
                grouped.codes(values.len() * 128, |c| values.iter().for_each(|&value| code(c, value)));
            }
            prop_assert_eq!(grouped.bit_len(), one.bit_len());
            let (one, grouped) = (one.finish(), grouped.finish());
            prop_assert_eq!(&one, &grouped);
            // And they read back.
            let mut c = BitCursor::new();
            for &(v, kind) in &values {
                let got = match kind {
                    0 => c.read_gamma(&one),
                    1 => c.read_delta(&one),
                    _ => c.read_bits(&one, 64 - v.leading_zeros()),
                };
                prop_assert_eq!(got, Ok(v));
            }
        }

        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let mut c = BitCursor::new();
            for _ in 0..100 {
                if c.read_delta(&bytes).is_err() { break; }
            }
        }
    }

    #[test]
    fn known_codes() {
        let mut w = BitWriter::default();
        w.write_gamma(1); // 1
        w.write_gamma(5); // 00101
        w.write_delta(1); // 1
        w.write_delta(9); // gamma(4)=00100, then 001
        // 1 00101 1 00100 001 -> 1001 0110 0100 001(0 pad)
        assert_eq!(w.finish(), vec![0b1001_0110, 0b0100_0010]);
    }

    #[test]
    fn exhausted_and_too_long_are_errors() {
        let mut c = BitCursor::new();
        assert_eq!(c.read_gamma(&[]), Err(CodeError::Exhausted));
        let zeros = [0u8; 16];
        let mut c = BitCursor::new();
        assert_eq!(c.read_gamma(&zeros), Err(CodeError::TooLong));
    }
}
