//! Valid inputs of a given shape, for tests that compare two ways of reading them.

use crate::Rng;

/// A vertical file of every kind of line, `lines` long (plus a last line
/// without a newline), so that runs of plain token lines begin and end
/// anywhere in a reader's buffer: token lines short and long, with and without columns and
/// `\r`, blank lines, markup, `<3`, invalid UTF-8, `<doc>` lines with and
/// without IDs, `</doc>`, and tokens outside documents.
pub fn mixed_vertical(lines: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for i in 0..lines {
        let line: Vec<u8> = match rng.below(42) {
            0 => format!("<doc id=\"d{i}\">").into(),
            1 => b"<doc>".to_vec(),
            2 | 3 => b"</doc>".to_vec(),
            4 => b"<p>".to_vec(),
            5 => b"</p>".to_vec(),
            6 => b"<s>".to_vec(),
            7 => b"<3".to_vec(),
            8 => Vec::new(),
            9 => b"\r".to_vec(),
            10 => format!("w{}\tNN\tlemma", rng.below(50)).into(),
            11 => format!("w{}\r", rng.below(50)).into(),
            12 => vec![b'w', 0xff, b'x', 0xc3],
            13 => "caf\u{e9} \u{3b1}\u{3b2}".into(),
            14 => "w\u{fffd}".into(),
            // Token lines of every length up to 43 bytes, and a line whose first column is empty.
            40 => format!("w{}{}", rng.below(50), "x".repeat(rng.below(42))).into(),
            41 => b"\tNN\tlemma".to_vec(),
            _ => format!("w{}", rng.below(500)).into(),
        };
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
    out.extend_from_slice(b"tail");
    out
}
