//! `dupgram-vert`: JSON Lines documents to a vertical file, the input of
//! Onion and Sketch Engine, so real text can be deduplicated by both.
//!
//!     dupgram-vert reuters21578.jsonl.zst 20newsgroups.jsonl.zst | zstd > real.vert.zst
//!
//! Each record becomes `<doc id="…">`, its paragraphs `<p>` … `</p>` and one
//! token a line. A paragraph ends at a blank line or before an indented line
//! (Reuters marks its paragraphs by indentation, 20 Newsgroups by blank
//! lines). Tokens are cut the way simple vertical tokenizers cut them: at
//! whitespace, with every punctuation or symbol character a token of its
//! own, the case kept. `&`, `<` and `>` in a token are written as entities,
//! as vertical files must, so no token line starts with `<`.

use std::io::{BufRead, BufWriter, Write};

use anyhow::Context;
use dupgram_corpus::{open_decoded, parse_record};

fn main() -> anyhow::Result<()> {
    let inputs: Vec<String> = std::env::args().skip(1).collect();
    if inputs.is_empty() || inputs.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: dupgram-vert INPUT.jsonl[.gz|.zst]... > OUTPUT.vert  (fields: text, id)");
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut vert = Vec::new();
    for path in &inputs {
        let reader = open_decoded(std::path::Path::new(path)).with_context(|| format!("cannot open {path}"))?;
        for (i, line) in reader.lines().enumerate() {
            let line = line.with_context(|| format!("{path}: line {}", i + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let record =
                parse_record(&line, "text", "id").map_err(|e| anyhow::anyhow!("{path}: line {}: {e}", i + 1))?;
            let id = record.id.unwrap_or_else(|| format!("{path}:{}", i + 1));
            vert.clear();
            write_document(&mut vert, &id, record.text.as_deref().unwrap_or(""));
            out.write_all(&vert)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// One document as vertical lines.
fn write_document(out: &mut Vec<u8>, id: &str, text: &str) {
    out.extend_from_slice(b"<doc id=\"");
    escape(out, id, true);
    out.extend_from_slice(b"\">\n");
    for paragraph in paragraphs(text) {
        let start = out.len();
        out.extend_from_slice(b"<p>\n");
        let before = out.len();
        for line in paragraph {
            for token in tokens(line) {
                escape(out, token, false);
                out.push(b'\n');
            }
        }
        if out.len() == before {
            out.truncate(start);
        } else {
            out.extend_from_slice(b"</p>\n");
        }
    }
    out.extend_from_slice(b"</doc>\n");
}

/// The text's paragraphs, each a list of lines.
fn paragraphs(text: &str) -> Vec<Vec<&str>> {
    let mut paragraphs: Vec<Vec<&str>> = vec![Vec::new()];
    for line in text.lines() {
        let blank = line.trim().is_empty();
        let indented = line.starts_with([' ', '\t']);
        let current = paragraphs.last_mut().expect("a paragraph");
        if (blank || indented) && !current.is_empty() {
            paragraphs.push(Vec::new());
        }
        if !blank {
            paragraphs.last_mut().expect("a paragraph").push(line);
        }
    }
    paragraphs.retain(|p| !p.is_empty());
    paragraphs
}

/// Words (letters, digits, marks) and single punctuation or symbol characters.
fn tokens(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        rest = rest.trim_start();
        let first = rest.chars().next()?;
        let len = if first.is_alphanumeric() {
            rest.find(|c: char| !(c.is_alphanumeric() || is_mark(c))).unwrap_or(rest.len())
        } else {
            first.len_utf8()
        };
        let (token, tail) = rest.split_at(len);
        rest = tail;
        Some(token)
    })
}

fn is_mark(c: char) -> bool {
    // Combining marks follow their letter; the ranges cover Latin, Greek and Cyrillic diacritics.
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF)
}

/// `&`, `<`, `>` (and `"` in attributes) as entities.
fn escape(out: &mut Vec<u8>, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' if attribute => out.extend_from_slice(b"&quot;"),
            '\n' | '\r' | '\t' => out.push(b' '),
            c => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_at_blank_and_indented_lines() {
        let text = "TITLE\nfirst line\n    second para\ngoes on\n\nthird <IBM> & co.";
        let mut out = Vec::new();
        write_document(&mut out, "r\"1", text);
        let expected = "<doc id=\"r&quot;1\">\n<p>\nTITLE\nfirst\nline\n</p>\n<p>\nsecond\npara\ngoes\non\n</p>\n\
                        <p>\nthird\n&lt;\nIBM\n&gt;\n&amp;\nco\n.\n</p>\n</doc>\n";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn empty_text_is_an_empty_document() {
        let mut out = Vec::new();
        write_document(&mut out, "e", "  \n\n");
        assert_eq!(out, b"<doc id=\"e\">\n</doc>\n");
    }
}
