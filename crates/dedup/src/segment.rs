//! Cutting plain text into paragraphs or sentences.

use std::ops::Range;

/// The unit of deduplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    Document,
    Paragraph,
    Sentence,
    /// Each line of the text (`--exact-only` only).
    Line,
}

/// Byte ranges of the units of `text`, contiguous and covering it all, so
/// tokenising the units one after the other yields the text's tokens.
///
/// Paragraphs end at blank lines (the blank lines stay with the paragraph
/// before). Sentences end after `.`, `!`, `?` or `…` (and any closing quotes
/// or brackets) followed by whitespace, and at paragraph ends; the
/// whitespace stays with the sentence before. A plain rule: "Mr. Smith"
/// makes two sentences.
pub fn segment_text(text: &str, kind: UnitKind) -> Vec<Range<usize>> {
    match kind {
        UnitKind::Document => std::iter::once(0..text.len()).collect(),
        UnitKind::Paragraph => paragraphs(text),
        UnitKind::Sentence => paragraphs(text).into_iter().flat_map(|p| sentences(text, p)).collect(),
        UnitKind::Line => lines(text),
    }
}

/// Lines, each with its line break (`\n`; a `\r` before it stays in the line).
fn lines(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    // memchr looks at a vector of bytes at a time: a byte-by-byte loop took
    // a twentieth of `dedup --exact-only --unit line`'s CPU.
    for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
        out.push(start..i + 1);
        start = i + 1;
    }
    if start < text.len() || out.is_empty() {
        out.push(start..text.len());
    }
    out
}

fn paragraphs(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    // The paragraph so far has words, and a blank line followed them.
    let mut has_words = false;
    let mut in_blank_run = false;
    let mut line_start = 0;
    for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
        let blank = text[line_start..i].trim().is_empty();
        if blank {
            in_blank_run = has_words;
        } else {
            if in_blank_run {
                out.push(start..line_start);
                start = line_start;
                in_blank_run = false;
            }
            has_words = true;
        }
        line_start = i + 1;
    }
    if in_blank_run && !text[line_start..].trim().is_empty() {
        out.push(start..line_start);
        start = line_start;
    }
    if start < text.len() || out.is_empty() {
        out.push(start..text.len());
    }
    out
}

fn sentences(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let part = &text[range.clone()];
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = part.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (_, c) = chars[i];
        if matches!(c, '.' | '!' | '?' | '…') {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j].1, '"' | '\'' | '”' | '’' | '»' | ')' | ']' | '.' | '!' | '?')
            {
                j += 1;
            }
            if j < chars.len() && chars[j].1.is_whitespace() {
                while j < chars.len() && chars[j].1.is_whitespace() {
                    j += 1;
                }
                let end = chars.get(j).map_or(part.len(), |&(b, _)| b);
                if end < part.len() {
                    out.push(range.start + start..range.start + end);
                    start = end;
                }
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out.push(range.start + start..range.end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str, kind: UnitKind) -> Vec<&str> {
        segment_text(text, kind).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn paragraphs_split_at_blank_lines() {
        assert_eq!(texts("a b\nc\n\n  \nd e\n\nf", UnitKind::Paragraph), ["a b\nc\n\n  \n", "d e\n\n", "f"]);
        assert_eq!(texts("one line", UnitKind::Paragraph), ["one line"]);
        assert_eq!(texts("", UnitKind::Paragraph), [""]);
        assert_eq!(texts("\n\nlead", UnitKind::Paragraph), ["\n\nlead"]);
        assert_eq!(texts("end\n\n", UnitKind::Paragraph), ["end\n\n"]);
    }

    #[test]
    fn sentences_split_after_end_punctuation() {
        assert_eq!(
            texts("It rained. \"Go!\" she said... Done?No.", UnitKind::Sentence),
            ["It rained. ", "\"Go!\" ", "she said... ", "Done?No."]
        );
        assert_eq!(texts("A b.\n\nC d. E", UnitKind::Sentence), ["A b.\n\n", "C d. ", "E"]);
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(texts("a b\n\nc\r\nd", UnitKind::Line), ["a b\n", "\n", "c\r\n", "d"]);
        assert_eq!(texts("x\n", UnitKind::Line), ["x\n"]);
        assert_eq!(texts("", UnitKind::Line), [""]);
    }

    #[test]
    fn units_cover_the_text() {
        for text in ["x. y\n\n\nz!  w", "", "..  ..", "a\n \nb"] {
            for kind in [UnitKind::Document, UnitKind::Paragraph, UnitKind::Sentence, UnitKind::Line] {
                assert_eq!(texts(text, kind).concat(), text);
            }
        }
    }
}
