//! Dolma-style attribute files: one JSON line per document, in input order,
//! beside documents that stay as they are.
//!
//! ```text
//! {"id":"d1","attributes":{"dupgram_duplicate_spans":[[0,12,1.0]],"dupgram_dup_fraction":[[0,40,0.3]]}}
//! ```
//!
//! Offsets count Unicode code points (scalar values), as Python's `str` and
//! Dolma's mixer do: the mixer walks a document's text with `char_indices`
//! and cuts span `[start, end)` by that count. Byte offsets would cut
//! multi-byte text in the wrong place, and UTF-16 units would miscount every
//! character outside the Basic Multilingual Plane.

use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::error::PipelineError;
use crate::output::OutputFile;

/// The attribute listing the removed spans, `[start, end, score]` each.
pub const SPANS_ATTRIBUTE: &str = "dupgram_duplicate_spans";
/// The attribute holding the document's duplicate share, `[[0, length, share]]`.
pub const FRACTION_ATTRIBUTE: &str = "dupgram_dup_fraction";

/// A span of a document's text in characters (code points), `[start, end)`, with its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CharSpan {
    pub start: u64,
    pub end: u64,
    pub score: f64,
}

/// Converts byte ranges of `text` (ascending, not overlapping, on character
/// boundaries) with their scores to character spans; also returns the text's
/// length in characters. One walk over the text.
pub fn char_spans(text: &str, spans: impl IntoIterator<Item = (Range<usize>, f64)>) -> (Vec<CharSpan>, u64) {
    let mut out = Vec::new();
    let (mut at, mut chars) = (0usize, 0u64);
    for (range, score) in spans {
        debug_assert!(at <= range.start && range.start <= range.end, "spans must ascend");
        chars += count_chars(&text[at..range.start]);
        let start = chars;
        chars += count_chars(&text[range.clone()]);
        out.push(CharSpan { start, end: chars, score });
        at = range.end;
    }
    (out, chars + count_chars(&text[at..]))
}

fn count_chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// The attribute file being written: under a temporary name until
/// [`AttributesFile::finish`] renames it (zstd-compressed when the name ends
/// in `.zst`, as every dupgram output).
pub struct AttributesFile {
    out: OutputFile,
    line: Vec<u8>,
    documents: u64,
}

#[derive(Serialize)]
struct Record<'a> {
    id: &'a Value,
    attributes: Attributes<'a>,
}

#[derive(Serialize)]
struct Attributes<'a> {
    #[serde(rename = "dupgram_duplicate_spans")]
    spans: Spans<'a>,
    #[serde(rename = "dupgram_dup_fraction")]
    fraction: [(u64, u64, f64); 1],
}

/// Serialises spans as `[start, end, score]` arrays without copying them.
struct Spans<'a>(&'a [CharSpan]);

impl Serialize for Spans<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|span| (span.start, span.end, span.score)))
    }
}

impl AttributesFile {
    /// Opens the file now, so a bad path fails before any work is done.
    pub fn create(path: &Path) -> Result<AttributesFile, PipelineError> {
        Ok(AttributesFile { out: OutputFile::create(Some(path))?, line: Vec::new(), documents: 0 })
    }

    /// Memory the file's encoder takes once written to (see [`OutputFile::encoder_bytes`]).
    pub fn encoder_bytes(&self) -> u64 {
        self.out.encoder_bytes()
    }

    /// Writes one document's line: its ID (as the document has it: Dolma's
    /// mixer compares the two), its removed spans (ascending) and, over its
    /// whole length of `chars` characters, its duplicate share.
    pub fn write(&mut self, id: &Value, spans: &[CharSpan], chars: u64, fraction: f64) -> Result<(), PipelineError> {
        debug_assert!(spans.windows(2).all(|w| w[0].end <= w[1].start) && spans.iter().all(|s| s.end <= chars));
        let record = Record { id, attributes: Attributes { spans: Spans(spans), fraction: [(0, chars, fraction)] } };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &record).map_err(|e| {
            PipelineError::Usage(format!("internal error: an attribute record does not serialise: {e}"))
        })?;
        self.line.push(b'\n');
        self.documents += 1;
        self.out.write_all(&self.line)
    }

    /// Documents written so far.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Flushes, syncs and renames the file into place.
    pub fn finish(self) -> Result<(), PipelineError> {
        self.out.finish()
    }
}

/// Field `name` of the JSON object `line` as it is there (a string, a
/// number, …), the other fields skipped unparsed; `None` when the line is not
/// an object or has no such field.
pub fn json_field(line: &str, name: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(line);
    de.deserialize_map(FieldOf(name)).ok().flatten()
}

struct FieldOf<'n>(&'n str);

impl<'de> Visitor<'de> for FieldOf<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.0 {
                found = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

impl<'de> DeserializeSeed<'de> for FieldOf<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_map(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_become_code_point_offsets() {
        // "é" is 2 bytes, "😀" 4 bytes (2 UTF-16 units), each one code point.
        let text = "aé😀 bc dé";
        let b = text.find(" bc").unwrap();
        let d = text.find("dé").unwrap();
        let (spans, chars) = char_spans(text, [(b..b + 3, 0.5), (d..text.len(), 1.0)]);
        assert_eq!(chars, 9);
        assert_eq!(spans, [CharSpan { start: 3, end: 6, score: 0.5 }, CharSpan { start: 7, end: 9, score: 1.0 }]);
        let chars: Vec<char> = text.chars().collect();
        assert_eq!(chars[3..6].iter().collect::<String>(), " bc");
        assert_eq!(char_spans("", []).1, 0);
    }

    #[test]
    fn writes_one_json_line_per_document_and_renames_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attrs.jsonl");
        let mut file = AttributesFile::create(&path).unwrap();
        file.write(&Value::from("d\"1"), &[CharSpan { start: 0, end: 3, score: 1.0 }], 7, 0.25).unwrap();
        file.write(&Value::from(2), &[], 0, 1.0).unwrap();
        assert!(!path.exists(), "nothing under the final name before finish");
        assert_eq!(file.documents(), 2);
        file.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":"d\"1","attributes":{"dupgram_duplicate_spans":[[0,3,1.0]],"dupgram_dup_fraction":[[0,7,0.25]]}}"#,
                "\n",
                r#"{"id":2,"attributes":{"dupgram_duplicate_spans":[],"dupgram_dup_fraction":[[0,0,1.0]]}}"#,
                "\n"
            )
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
    }
}

#[cfg(test)]
mod field_tests {
    use super::*;

    #[test]
    fn picks_a_field_as_it_is() {
        let line = r#"{"text": "a \"id\": 1", "meta": {"id": 5}, "id": 17}"#;
        assert_eq!(json_field(line, "id"), Some(Value::from(17)));
        assert_eq!(json_field(r#"{"id": "x-1", "text": ""}"#, "id"), Some(Value::from("x-1")));
        assert_eq!(json_field(r#"{"text": ""}"#, "id"), None);
        assert_eq!(json_field(r#"["id", 1]"#, "id"), None);
        assert_eq!(json_field("{\"id\": 1", "id"), None);
    }
}
