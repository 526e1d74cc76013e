//! Picking two fields out of a JSON Lines record without building a tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// The text and ID of one record; the text borrows from the line when it has no escapes.
#[derive(Debug, Default)]
pub struct Record<'a> {
    pub text: Option<Cow<'a, str>>,
    pub id: Option<String>,
    /// One of the keys named to [`parse_record_noting`] is in the record.
    pub noted: bool,
}

/// Parses `line` as one JSON object, keeping `text_field` (a string) and
/// `id_field` (a string or a number). Other fields are skipped unparsed.
pub fn parse_record<'a>(line: &'a str, text_field: &str, id_field: &str) -> Result<Record<'a>, String> {
    parse_record_noting(line, text_field, id_field, &[])
}

/// [`parse_record`], noting whether the record has one of the keys `noted`
/// (as the record spells them, escapes decoded): a writer that adds fields
/// to the record as it was read must know it adds no second one of a name.
pub fn parse_record_noting<'a>(
    line: &'a str,
    text_field: &str,
    id_field: &str,
    noted: &[&str],
) -> Result<Record<'a>, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let record = Fields { text_field, id_field, noted }.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(record)
}

struct Fields<'f> {
    text_field: &'f str,
    id_field: &'f str,
    noted: &'f [&'f str],
}

impl<'de> DeserializeSeed<'de> for Fields<'_> {
    type Value = Record<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Record<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Record<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record<'de>, A::Error> {
        let mut record = Record::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            record.noted |= self.noted.contains(&key.0.as_ref());
            if key.0 == self.text_field {
                let value: Option<Text<'de>> = map.next_value()?;
                let value = value
                    .ok_or_else(|| de::Error::custom(format!("field \"{}\" is null, not a string", self.text_field)))?;
                record.text = Some(value.0);
            } else if key.0 == self.id_field {
                record.id = map.next_value::<Id>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(record)
    }
}

/// A JSON string, borrowed when possible.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A document ID: a string or a number, kept as text; null means none.
struct Id(Option<String>);

impl<'de> de::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id(Some(v.to_owned())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(Some(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id(Some(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                Ok(Id(Some(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_fields_and_borrows() {
        let r = parse_record(r#"{"id": 17, "meta": {"a": [1, 2]}, "text": "plain"}"#, "text", "id").unwrap();
        assert!(matches!(r.text, Some(Cow::Borrowed("plain"))));
        assert_eq!(r.id.as_deref(), Some("17"));
        let r = parse_record(r#"{"body": "tab\there", "doc": "x-1"}"#, "body", "doc").unwrap();
        assert_eq!(r.text.as_deref(), Some("tab\there"));
        assert_eq!(r.id.as_deref(), Some("x-1"));
    }

    #[test]
    fn malformed_records_are_errors() {
        for bad in
            [r#"{"text": "x""#, r#"{"text": 5}"#, r#"["text"]"#, r#"{"text": "a"} trailing"#, r#"{"text": null}"#, ""]
        {
            assert!(parse_record(bad, "text", "id").is_err(), "{bad}");
        }
        assert!(parse_record(r#"{"id": "x"}"#, "text", "id").unwrap().text.is_none());
    }

    #[test]
    fn notes_keys_however_spelled() {
        let noted = ["dup_spans"];
        let has = |line| parse_record_noting(line, "text", "id", &noted).unwrap().noted;
        assert!(!has(r#"{"text": "a dup_spans", "x": {"dup_spans": 1}}"#));
        assert!(has(r#"{"text": "a", "dup_spans": []}"#));
        assert!(has(r#"{"dup\u005fspans": [], "text": "a"}"#));
        assert!(!parse_record(r#"{"text": "a", "dup_spans": []}"#, "text", "id").unwrap().noted);
    }
}
