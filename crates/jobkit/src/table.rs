//! Parquet tables: the columns of a result, written in zstd pages and row
//! groups of a bounded size.
//!
//! A [`ParquetTable`] buffers one row group (encoded and compressed as it
//! goes) and closes it once it holds about the `row_group_bytes` it was made with; the
//! writers of each result add rows to a [`Rows`] batch of at most
//! [`BATCH_ROWS`] rows or [`BATCH_BYTES`] bytes of strings before handing it
//! over. Both are fixed, so a table costs the same memory whatever the
//! result's size.

use std::fs::File;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, ListBuilder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// Rows gathered before they are handed to the Parquet writer.
pub const BATCH_ROWS: usize = 8192;
/// Bytes of strings gathered before they are handed to the Parquet writer.
pub const BATCH_BYTES: usize = 1 << 20;
/// The default size of a row group, in encoded bytes.
pub const ROW_GROUP_BYTES: usize = 8 << 20;

/// Whether a file name asks for Parquet.
pub fn is_parquet_name(path: &std::path::Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.to_ascii_lowercase().ends_with(".parquet"))
}

/// A Parquet file being written.
pub struct ParquetTable {
    writer: ArrowWriter<File>,
}

impl ParquetTable {
    /// Starts a table of `schema` in `file`, in row groups of about `row_group_bytes`.
    pub fn new(file: File, schema: SchemaRef, row_group_bytes: usize) -> parquet::errors::Result<ParquetTable> {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
            .set_max_row_group_bytes(Some(row_group_bytes.max(64 << 10)))
            .set_max_row_group_row_count(None)
            .build();
        Ok(ParquetTable { writer: ArrowWriter::try_new(file, schema, Some(properties))? })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> parquet::errors::Result<()> {
        self.writer.write(batch)
    }

    /// Writes the last row group and the footer.
    pub fn finish(self) -> parquet::errors::Result<File> {
        self.writer.into_inner()
    }
}

/// A column being gathered.
pub enum Column {
    Text(StringBuilder),
    Count(UInt64Builder),
    Score(Float64Builder),
    /// A list of strings per row.
    Texts(ListBuilder<StringBuilder>),
    /// A list of `[start, end]` integer pairs per row (as a list of lists).
    Spans(ListBuilder<ListBuilder<UInt64Builder>>),
}

impl Column {
    fn data_type(&self) -> DataType {
        let item = |t: DataType| Arc::new(Field::new("item", t, true));
        match self {
            Column::Text(_) => DataType::Utf8,
            Column::Count(_) => DataType::UInt64,
            Column::Score(_) => DataType::Float64,
            Column::Texts(_) => DataType::List(item(DataType::Utf8)),
            Column::Spans(_) => DataType::List(item(DataType::List(item(DataType::UInt64)))),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Text(b) => Arc::new(b.finish()),
            Column::Count(b) => Arc::new(b.finish()),
            Column::Score(b) => Arc::new(b.finish()),
            Column::Texts(b) => Arc::new(b.finish()),
            Column::Spans(b) => Arc::new(b.finish()),
        }
    }

    pub fn text() -> Column {
        Column::Text(StringBuilder::new())
    }
    pub fn count() -> Column {
        Column::Count(UInt64Builder::new())
    }
    pub fn score() -> Column {
        Column::Score(Float64Builder::new())
    }
    pub fn texts() -> Column {
        Column::Texts(ListBuilder::new(StringBuilder::new()))
    }
    pub fn spans() -> Column {
        Column::Spans(ListBuilder::new(ListBuilder::new(UInt64Builder::new())))
    }

    /// Appends a row of `[start, end]` pairs to a [`Column::Spans`] (a null
    /// row for `None`); false, appending nothing, to any other column.
    pub fn append_spans(&mut self, spans: Option<impl IntoIterator<Item = [u64; 2]>>) -> bool {
        let Column::Spans(column) = self else { return false };
        let Some(spans) = spans else {
            column.append(false);
            return true;
        };
        for [start, end] in spans {
            column.values().values().append_value(start);
            column.values().values().append_value(end);
            column.values().append(true);
        }
        column.append(true);
        true
    }
}

/// Rows of a table being gathered into one batch.
pub struct Rows {
    schema: SchemaRef,
    pub columns: Vec<Column>,
    rows: usize,
    bytes: usize,
}

impl Rows {
    /// Columns named `names`, of the kinds `columns` (in order). Only list
    /// columns hold nulls; the others are never null.
    pub fn new(names: &[&str], columns: Vec<Column>) -> Rows {
        let fields: Vec<Field> = names
            .iter()
            .zip(&columns)
            .map(|(name, c)| {
                let nullable = matches!(c, Column::Texts(_) | Column::Spans(_));
                Field::new(*name, c.data_type(), nullable)
            })
            .collect();
        Rows { schema: Arc::new(Schema::new(fields)), columns, rows: 0, bytes: 0 }
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Counts a row added to every column, with `bytes` of strings.
    pub fn added(&mut self, bytes: usize) {
        self.rows += 1;
        self.bytes += bytes;
    }

    /// Whether the batch is as large as it may grow.
    pub fn full(&self) -> bool {
        self.rows >= BATCH_ROWS || self.bytes >= BATCH_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows gathered, as a batch; the columns start again empty.
    pub fn take(&mut self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let arrays = self.columns.iter_mut().map(Column::finish).collect();
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(self.schema.clone(), arrays)
    }
}
