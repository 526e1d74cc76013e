//! Parquet input: documents out of a text column (and an ID column), one row
//! group at a time.
//!
//! Only the two columns asked for are read (a projection), so the other
//! columns of a wide shard cost nothing. Each row group is decoded in Arrow
//! batches of as many rows as fit in [`ReadOptions::max_record_bytes`]
//! (judged from the row group's uncompressed column sizes, at least one
//! row): with the pages the decoder holds, that is what the memory plan sets
//! aside for one record of the line formats.
//!
//! Parquet needs seeking (its index is at the end), so it is read from files
//! only, never from standard input.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Fields};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};

use crate::{CorpusError, ReadOptions};

/// The magic bytes that begin (and end) every Parquet file.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// Whether a file is Parquet, by its first bytes.
pub fn is_parquet(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 4];
    let got = crate::read_head(path, &mut head)?;
    Ok(head[..got] == PARQUET_MAGIC[..])
}

/// One row of a Parquet input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParquetRow {
    /// The row's number in the file, from 1.
    pub row: u64,
    pub row_group: usize,
    /// The ID column's value, when there is one and it is not null.
    pub id: Option<String>,
    pub text: String,
}

/// A row that holds no document: its text is null or too long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    pub row: u64,
    pub row_group: usize,
    pub column: String,
    pub what: String,
}

impl BadRow {
    pub fn error(self, name: &str) -> CorpusError {
        CorpusError::Parquet {
            name: name.to_owned(),
            row_group: self.row_group,
            column: self.column,
            what: format!("row {}: {}", self.row, self.what),
        }
    }

    /// Where and why, for the summary of skipped records.
    pub fn describe(&self, name: &str) -> String {
        format!("{name}: row group {}, column {}: row {}: {}", self.row_group, self.column, self.row, self.what)
    }
}

/// A column named by a dot path (`meta.id`): the field names from the top.
#[derive(Debug, Clone)]
struct ColumnPath {
    dotted: String,
    parts: Vec<String>,
}

impl ColumnPath {
    fn new(dotted: &str) -> Self {
        ColumnPath { dotted: dotted.to_owned(), parts: dotted.split('.').map(str::to_owned).collect() }
    }

    /// The column's type, if the schema has it; an error naming what is
    /// missing or is not a struct on the way.
    fn data_type<'f>(&self, fields: &'f Fields) -> Result<&'f DataType, String> {
        let mut fields = fields;
        let mut found: Option<&DataType> = None;
        for (depth, part) in self.parts.iter().enumerate() {
            if let Some(t) = found {
                let DataType::Struct(children) = t else {
                    return Err(format!("{} is not a struct", self.parts[..depth].join(".")));
                };
                fields = children;
            }
            let field = fields.iter().find(|f| f.name() == part).ok_or_else(|| {
                let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
                format!("no such column (there are: {})", names.join(", "))
            })?;
            found = Some(field.data_type());
        }
        found.ok_or_else(|| "an empty column name".to_owned())
    }

    /// The column in a decoded batch, with every struct above it (whose
    /// nulls make the value null too).
    fn arrays(&self, batch: &RecordBatch) -> Option<Vec<ArrayRef>> {
        let mut arrays = vec![batch.column_by_name(&self.parts[0])?.clone()];
        for part in &self.parts[1..] {
            let child = arrays.last()?.as_struct_opt()?.column_by_name(part)?.clone();
            arrays.push(child);
        }
        Some(arrays)
    }
}

/// Whether text can be read from a column of this type.
fn is_text_type(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Whether an ID can be read from a column of this type.
fn is_id_type(t: &DataType) -> bool {
    is_text_type(t) || t.is_integer()
}

/// The string at `i` of a text column (checked by [`is_text_type`]).
fn text_at(array: &dyn Array, i: usize) -> Option<&str> {
    if let Some(a) = array.as_string_opt::<i32>() {
        Some(a.value(i))
    } else if let Some(a) = array.as_string_opt::<i64>() {
        Some(a.value(i))
    } else {
        array.as_string_view_opt().map(|a| a.value(i))
    }
}

/// The ID at `i` of an ID column (checked by [`is_id_type`]).
fn id_at(array: &dyn Array, i: usize) -> Option<Cow<'_, str>> {
    if let Some(s) = text_at(array, i) {
        return Some(Cow::Borrowed(s));
    }
    macro_rules! integer {
        ($($t:ty),*) => {
            $(if let Some(a) = array.as_primitive_opt::<$t>() {
                return Some(Cow::Owned(a.value(i).to_string()));
            })*
        };
    }
    integer!(Int64Type, Int32Type, UInt64Type, UInt32Type, Int16Type, Int8Type, UInt16Type, UInt8Type);
    None
}

/// Null at `i` in the column or any struct above it.
fn null_at(arrays: &[ArrayRef], i: usize) -> bool {
    arrays.iter().any(|a| a.is_null(i))
}

/// The documents of one Parquet file, row by row.
pub struct ParquetRows {
    name: String,
    file: File,
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    text: ColumnPath,
    /// None when the file has no such column: IDs are then row numbers.
    id: Option<ColumnPath>,
    max_record: usize,
    next_group: usize,
    group: usize,
    reader: Option<ParquetRecordBatchReader>,
    batch: Option<(Vec<ArrayRef>, Option<Vec<ArrayRef>>, usize)>,
    at: usize,
    /// Rows before the current batch's first.
    row: u64,
    file_size: u64,
}

impl ParquetRows {
    /// Opens `path` (named `name` in errors) and checks its columns.
    pub fn open(path: &Path, name: &str, options: &ReadOptions) -> Result<ParquetRows, CorpusError> {
        let file = File::open(path).map_err(|error| CorpusError::Open { name: name.to_owned(), error })?;
        let file_size = file.metadata().map_err(|error| CorpusError::Open { name: name.to_owned(), error })?.len();
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| CorpusError::ParquetFile { name: name.to_owned(), what: e.to_string() })?;
        let column_error = |column: &str, what: String| CorpusError::Parquet {
            name: name.to_owned(),
            row_group: 0,
            column: column.to_owned(),
            what,
        };
        let fields = metadata.schema().fields();
        let text = ColumnPath::new(&options.text_field);
        let text_type = text.data_type(fields).map_err(|what| column_error(&text.dotted, what))?;
        if !is_text_type(text_type) {
            return Err(column_error(&text.dotted, format!("is {text_type}, not a string column")));
        }
        let id = ColumnPath::new(&options.id_field);
        let id = match id.data_type(fields) {
            Ok(t) if is_id_type(t) => Some(id),
            Ok(t) => return Err(column_error(&id.dotted, format!("is {t}, not a string or integer column"))),
            // Like a JSON record without the ID field: documents are numbered instead.
            Err(_) => None,
        };
        let wanted = std::iter::once(text.dotted.as_str()).chain(id.as_ref().map(|c| c.dotted.as_str()));
        let mask = ProjectionMask::columns(metadata.parquet_schema(), wanted);
        Ok(ParquetRows {
            name: name.to_owned(),
            file,
            metadata,
            mask,
            text,
            id,
            max_record: options.max_record_bytes.max(1),
            next_group: 0,
            group: 0,
            reader: None,
            batch: None,
            at: 0,
            row: 0,
            file_size,
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Row groups in the file.
    pub fn row_groups(&self) -> usize {
        self.metadata.metadata().num_row_groups()
    }

    /// Stored (compressed) bytes of row group `group`.
    pub fn row_group_bytes(&self, group: usize) -> u64 {
        self.metadata.metadata().row_group(group).compressed_size().max(0) as u64
    }

    /// The row group being read (the last one once all are read).
    pub fn row_group(&self) -> usize {
        self.group
    }

    /// Rows per decoded batch in row group `group`: as many as fit in
    /// `max_record` bytes of the projected columns, at least one.
    fn batch_rows(&self, group: usize) -> usize {
        let meta = self.metadata.metadata().row_group(group);
        let rows = meta.num_rows().max(1) as u64;
        let bytes: u64 = meta
            .columns()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.mask.leaf_included(*i))
            .map(|(_, c)| c.uncompressed_size().max(0) as u64)
            .sum();
        let per_row = bytes.div_ceil(rows).max(1);
        (self.max_record as u64 / per_row).clamp(1, 64 * 1024) as usize
    }

    fn group_error(&self, what: String) -> CorpusError {
        let columns = std::iter::once(self.text.dotted.as_str())
            .chain(self.id.as_ref().map(|c| c.dotted.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        CorpusError::Parquet { name: self.name.clone(), row_group: self.group, column: columns, what }
    }

    /// Decodes the next batch; false at the end of the file.
    fn next_batch(&mut self) -> Result<bool, CorpusError> {
        loop {
            if self.reader.is_none() {
                if self.next_group == self.row_groups() {
                    return Ok(false);
                }
                self.group = self.next_group;
                self.next_group += 1;
                let file =
                    self.file.try_clone().map_err(|error| CorpusError::Open { name: self.name.clone(), error })?;
                let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                    .with_projection(self.mask.clone())
                    .with_row_groups(vec![self.group])
                    .with_batch_size(self.batch_rows(self.group))
                    .build()
                    .map_err(|e| self.group_error(e.to_string()))?;
                self.reader = Some(reader);
            }
            let next = self.reader.as_mut().and_then(Iterator::next);
            match next {
                None => self.reader = None,
                Some(Err(e)) => return Err(self.group_error(e.to_string())),
                Some(Ok(batch)) => {
                    if let Some((_, _, rows)) = &self.batch {
                        self.row += *rows as u64;
                    }
                    let text = self.text.arrays(&batch).ok_or_else(|| self.group_error("column missing".into()))?;
                    let id = match &self.id {
                        Some(c) => Some(c.arrays(&batch).ok_or_else(|| self.group_error("column missing".into()))?),
                        None => None,
                    };
                    self.batch = Some((text, id, batch.num_rows()));
                    self.at = 0;
                    return Ok(true);
                }
            }
        }
    }

    /// The next row: a document, or a row that holds none; None at the end.
    pub fn next_row(&mut self) -> Result<Option<Result<ParquetRow, BadRow>>, CorpusError> {
        while self.batch.as_ref().is_none_or(|(_, _, rows)| self.at >= *rows) {
            if !self.next_batch()? {
                return Ok(None);
            }
        }
        let (text, id, _) = self.batch.as_ref().expect("a decoded batch");
        let i = self.at;
        self.at += 1;
        let row = self.row + i as u64 + 1;
        let bad = |what: String| -> Result<Option<Result<ParquetRow, BadRow>>, CorpusError> {
            Ok(Some(Err(BadRow { row, row_group: self.group, column: self.text.dotted.clone(), what })))
        };
        if null_at(text, i) {
            return bad("the text is null".into());
        }
        let leaf = text.last().expect("a column path has a leaf");
        let Some(body) = text_at(leaf.as_ref(), i) else {
            return bad("not a string".into());
        };
        if body.len() > self.max_record {
            return bad(format!(
                "the text is longer than {} bytes, the most --memory allows for one record; raise --memory or use --skip-bad",
                self.max_record
            ));
        }
        let id = id.as_ref().filter(|arrays| !null_at(arrays, i)).and_then(|arrays| {
            let leaf = arrays.last().expect("a column path has a leaf");
            id_at(leaf.as_ref(), i).map(Cow::into_owned)
        });
        Ok(Some(Ok(ParquetRow { row, row_group: self.group, id, text: body.to_owned() })))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
    use arrow_schema::{DataType, Field, Fields};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use crate::{Batch, CorpusReader, Input, ReadOptions};

    /// A file whose IDs are integers inside a struct, with a null ID and a null text.
    fn write(path: &std::path::Path) {
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![Some(10), None, Some(30), Some(40)]));
        let texts: ArrayRef =
            Arc::new(StringArray::from(vec![Some("one two"), Some("three"), None, Some("four five")]));
        let fields =
            Fields::from(vec![Field::new("n", DataType::Int64, true), Field::new("body", DataType::Utf8, true)]);
        let meta: ArrayRef = Arc::new(StructArray::new(fields, vec![ids, texts], None));
        let batch = RecordBatch::try_from_iter([("meta", meta)]).unwrap();
        let properties = WriterProperties::builder().set_max_row_group_row_count(Some(3)).build();
        let mut w =
            ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(properties)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    fn read(path: &std::path::Path, skip_bad: bool) -> Result<(Vec<(String, String)>, crate::ReadStats), String> {
        let options = ReadOptions {
            text_field: "meta.body".into(),
            id_field: "meta.n".into(),
            skip_bad,
            // One row per decoded batch.
            max_record_bytes: 16,
            ..ReadOptions::default()
        };
        let progress = Arc::new(AtomicU64::new(0));
        let mut reader = CorpusReader::new(vec![Input::Path(path.to_owned())], options, progress.clone());
        let mut batch = Batch::default();
        let mut docs = Vec::new();
        while reader.fill(&mut batch, 4).map_err(|e| e.to_string())? {
            for p in &batch.pieces {
                docs.push((batch.piece_id(p).unwrap_or("-").to_owned(), batch.piece_text(p).to_owned()));
            }
        }
        let size = std::fs::metadata(path).unwrap().len();
        assert_eq!(progress.load(std::sync::atomic::Ordering::Relaxed), size, "progress reaches the file's size");
        assert_eq!(reader.stats().input_bytes, size);
        Ok((docs, reader.stats().clone()))
    }

    #[test]
    fn rows_stream_out_with_dot_path_columns_and_default_ids() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard.parquet");
        write(&path);
        let err = read(&path, false).unwrap_err();
        assert_eq!(err, format!("{}: row group 0, column meta.body: row 3: the text is null", path.display()));
        let (docs, stats) = read(&path, true).unwrap();
        let expect = [("10", "one two"), ("2", "three"), ("40", "four five")];
        assert_eq!(docs, expect.map(|(a, b)| (a.to_owned(), b.to_owned())));
        assert_eq!((stats.documents, stats.skipped_records, stats.text_bytes), (3, 1, 21));
        assert!(stats.first_skipped.unwrap().contains("row group 0, column meta.body: row 3"));
    }

    #[test]
    fn a_text_longer_than_a_record_may_be_is_refused_or_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.parquet");
        let texts: ArrayRef = Arc::new(StringArray::from(vec!["short", &"long ".repeat(10)]));
        let batch = RecordBatch::try_from_iter([("text", texts)]).unwrap();
        let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let options = ReadOptions { max_record_bytes: 16, ..ReadOptions::default() };
        let mut rows = super::ParquetRows::open(&path, "long", &options).unwrap();
        assert_eq!(rows.next_row().unwrap().unwrap().unwrap().text, "short");
        let bad = rows.next_row().unwrap().unwrap().unwrap_err();
        assert_eq!((bad.row, bad.row_group, bad.column.as_str()), (2, 0, "text"));
        assert!(bad.what.contains("longer than 16 bytes"), "{}", bad.what);
        assert!(rows.next_row().unwrap().is_none());
    }
}
