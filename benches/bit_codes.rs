//! Elias gamma/delta coding: the hand-written u64 bit buffer of
//! `dupgram-runs` against codes built on `bitstream-io` (which has raw bit
//! I/O and unary codes but no gamma/delta). Both write the same bits; the
//! bench checks that, then times writing and reading 20M integers shaped like
//! run contents (small IDs from a Zipf law, counts, prefix lengths), one code
//! a call and ten a call (as the run writer writes an entry).
//! `cargo bench --bench bit_codes`.

mod common;

use bitstream_io::{BigEndian, BitRead, BitReader, BitWrite, BitWriter as IoWriter};
use dupgram_runs::{BitCursor, BitWriter};

fn values(count: usize) -> Vec<u64> {
    let mut s = 0x1234_5678u64;
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            (200_000f64.powf(u)) as u64 + 1
        })
        .collect()
}

fn io_write(values: &[u64], delta: bool) -> Vec<u8> {
    let mut w = IoWriter::endian(Vec::new(), BigEndian);
    for &v in values {
        let width = 64 - v.leading_zeros();
        if delta {
            let ww = u64::from(width);
            let wbits = 64 - ww.leading_zeros();
            w.write_unary::<1>(wbits - 1).unwrap();
            w.write_var(wbits - 1, ww & ((1 << (wbits - 1)) - 1)).unwrap();
            w.write_var(width - 1, v & ((1 << (width - 1)) - 1)).unwrap();
        } else {
            w.write_unary::<1>(width - 1).unwrap();
            w.write_var(width - 1, v & ((1 << (width - 1)) - 1)).unwrap();
        }
    }
    w.byte_align().unwrap();
    w.into_writer()
}

fn io_read(bytes: &[u8], count: usize, delta: bool) -> u64 {
    let mut r = BitReader::endian(std::io::Cursor::new(bytes), BigEndian);
    let mut sum = 0u64;
    for _ in 0..count {
        let gamma = |r: &mut BitReader<_, BigEndian>| -> u64 {
            let zeros = r.read_unary::<1>().unwrap();
            let low: u64 = if zeros == 0 { 0 } else { r.read_var(zeros).unwrap() };
            (1 << zeros) | low
        };
        let v = if delta {
            let width = gamma(&mut r) as u32;
            let low: u64 = if width == 1 { 0 } else { r.read_var(width - 1).unwrap() };
            (1 << (width - 1)) | low
        } else {
            gamma(&mut r)
        };
        sum = sum.wrapping_add(v);
    }
    sum
}

fn own_write(values: &[u64], delta: bool) -> Vec<u8> {
    let mut w = BitWriter::with_capacity(values.len() * 3);
    for &v in values {
        if delta { w.write_delta(v) } else { w.write_gamma(v) }
    }
    w.finish()
}

/// Ten codes per [`BitWriter::codes`] call, as a run writer writes an n-gram entry.
fn own_write_entries(values: &[u64], delta: bool) -> Vec<u8> {
    let mut w = BitWriter::with_capacity(values.len() * 3);
    for entry in values.chunks(10) {
        w.codes(entry.len() * 128, |c| {
            for &v in entry {
                if delta { c.delta(v) } else { c.gamma(v) }
            }
        });
    }
    w.finish()
}

fn own_read(bytes: &[u8], count: usize, delta: bool) -> u64 {
    let mut c = BitCursor::new();
    let mut sum = 0u64;
    for _ in 0..count {
        let v = if delta { c.read_delta(bytes) } else { c.read_gamma(bytes) };
        sum = sum.wrapping_add(v.unwrap());
    }
    sum
}

fn main() {
    let count = common::scale(20_000_000) as usize;
    let runs = common::runs();
    let vals = values(count);
    let expect: u64 = vals.iter().fold(0u64, |a, &v| a.wrapping_add(v));
    println!("bit codes, {count} integers (Zipf over 200,000), median of {runs}");
    println!();
    println!("| code | implementation | write M ints/s | read M ints/s |");
    println!("|---|---|---:|---:|");
    for delta in [false, true] {
        let name = if delta { "delta" } else { "gamma" };
        let ours = own_write(&vals, delta);
        assert_eq!(ours, io_write(&vals, delta), "both implementations write the same bits");
        assert_eq!(ours, own_write_entries(&vals, delta), "ten codes at a time write the same bits");
        assert_eq!(own_read(&ours, count, delta), expect);
        assert_eq!(io_read(&ours, count, delta), expect);
        let mhz = |d: std::time::Duration| count as f64 / d.as_secs_f64() / 1e6;
        let w_own = common::median(runs, || drop(std::hint::black_box(own_write(&vals, delta))));
        let r_own = common::median(runs, || {
            std::hint::black_box(own_read(&ours, count, delta));
        });
        let w_entries = common::median(runs, || drop(std::hint::black_box(own_write_entries(&vals, delta))));
        let w_io = common::median(runs, || drop(std::hint::black_box(io_write(&vals, delta))));
        let r_io = common::median(runs, || {
            std::hint::black_box(io_read(&ours, count, delta));
        });
        println!("| {name} | dupgram-runs u64 buffer | {:.0} | {:.0} |", mhz(w_own), mhz(r_own));
        println!("| {name} | dupgram-runs, ten codes per `codes` call (a run entry) | {:.0} | |", mhz(w_entries));
        println!("| {name} | bitstream-io | {:.0} | {:.0} |", mhz(w_io), mhz(r_io));
    }
}
