//! Output files: written under a temporary name beside the target and
//! renamed into place only when complete, so a failed or interrupted job
//! never leaves a half-written file under the name a user asked for.
//!
//! A name ending in `.parquet` makes a Parquet table (see [`crate::table`]):
//! the writers of each result then add typed rows instead of lines.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;
use dupgram_index::PairScores;

use crate::error::PipelineError;
use crate::table::{Column, ParquetTable, ROW_GROUP_BYTES, Rows, is_parquet_name};

/// The zstd level of `.zst` outputs.
const ZSTD_LEVEL: i32 = 3;

/// What a `.zst` output's encoder holds at most, its worker's buffers
/// included (measured: about 3.8 MiB; see the test below): the jobs that
/// plan their output count this much for it.
pub const ZSTD_OUTPUT_BYTES: u64 = 5 << 20;

/// Refuses a budget that cannot hold the outputs' encoders (each output's
/// [`OutputFile::encoder_bytes`] in `encoders`) beside the
/// least any job needs ([`MemoryPlan::MINIMUM`](crate::memory::MemoryPlan::MINIMUM)):
/// at that minimum a job's passes leave an encoder (about 3.8 MiB) no room,
/// and above it the pass that writes counts [`ZSTD_OUTPUT_BYTES`] for each.
/// Checked before any work is done.
pub fn check_encoder_budget(memory: u64, encoders: &[u64]) -> Result<(), PipelineError> {
    let zst = encoders.iter().filter(|&&bytes| bytes > 0).count();
    let encoders: u64 = encoders.iter().sum();
    let least = crate::memory::MemoryPlan::MINIMUM + encoders;
    if memory >= least {
        return Ok(());
    }
    let (outputs, take) = if zst == 1 { ("output takes", "its encoder") } else { ("outputs take", "their encoders") };
    Err(PipelineError::Memory {
        budget: crate::memory::human_bytes(memory),
        what: format!(
            "{zst} .zst {outputs} {} for {take} beside the {} every job needs: give --memory {}M or more, or write plain output and compress it afterwards (-o - | zstd)",
            crate::memory::human_bytes(encoders),
            crate::memory::human_bytes(crate::memory::MemoryPlan::MINIMUM),
            least.div_ceil(1 << 20),
        ),
    })
}

/// Bytes of a `.zst` output gathered before they are handed to its encoder
/// (within [`ZSTD_OUTPUT_BYTES`]).
const ZSTD_INPUT_BYTES: usize = 64 << 10;

/// How `.zst` outputs are compressed, beside [`ZSTD_LEVEL`].
///
/// - A checksum lets readers detect a damaged file.
/// - A 1 MiB window keeps the encoder small, within the smallest budgets.
/// - One worker thread compresses while the job goes on producing lines:
///   compressing took about half of a count's merge, in the thread that
///   writes the output, before. zstd cuts its input into jobs (512 KiB
///   here, the least it takes: the smallest buffers, for a file 1.2 %
///   larger than in one piece) and the frame it writes depends on their
///   size, not on the number of workers, so the bytes are the same on
///   every machine and at every `--threads` and `--memory`.
fn zstd_output_parameters() -> [zstd::stream::raw::CParameter; 4] {
    use zstd::stream::raw::CParameter;
    [
        CParameter::ChecksumFlag(true),
        CParameter::WindowLog(20),
        CParameter::NbWorkers(1),
        CParameter::JobSize(512 << 10),
    ]
}

enum Sink {
    Stdout(BufWriter<std::io::Stdout>),
    Plain(BufWriter<File>),
    /// Bytes gathered in front of the encoder: a call into zstd costs about
    /// as much for a line as for 64 KiB, and outputs are written a line at a time.
    Zstd(BufWriter<zstd::Encoder<'static, BufWriter<File>>>),
    /// A Parquet file, before its schema is known (taken when it is).
    ParquetFile(Option<File>),
    Parquet(Box<ParquetTable>),
}

/// A file (or standard output) being written.
pub struct OutputFile {
    sink: Sink,
    target: Option<PathBuf>,
    tmp: Option<tempfile::TempPath>,
    row_group_bytes: usize,
}

impl OutputFile {
    /// Opens the output now, so a bad path fails before any work is done.
    /// `None` means standard output. A name ending in `.zst` is compressed.
    pub fn create(target: Option<&Path>) -> Result<OutputFile, PipelineError> {
        // `-` is standard output, as a shell user expects.
        let Some(target) = target.filter(|t| t.as_os_str() != "-") else {
            return Ok(OutputFile {
                sink: Sink::Stdout(BufWriter::with_capacity(256 * 1024, std::io::stdout())),
                target: None,
                tmp: None,
                row_group_bytes: ROW_GROUP_BYTES,
            });
        };
        let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name =
            target.file_name().ok_or_else(|| PipelineError::Usage(format!("{}: not a file name", target.display())))?;
        if target.is_dir() {
            return Err(PipelineError::Usage(format!("{}: is a directory", target.display())));
        }
        // A device or a pipe (/dev/null, a FIFO) is written in place: renaming
        // a file over it would replace it.
        if std::fs::metadata(target).is_ok_and(|m| !m.is_file()) {
            let file = File::options().write(true).open(target).map_err(|e| PipelineError::io(target, e))?;
            let sink = if is_parquet_name(target) {
                Sink::ParquetFile(Some(file))
            } else {
                Sink::Plain(BufWriter::with_capacity(256 * 1024, file))
            };
            return Ok(OutputFile {
                sink,
                target: Some(target.to_owned()),
                tmp: None,
                row_group_bytes: ROW_GROUP_BYTES,
            });
        }
        let tmp = temp_beside(dir, &name.to_string_lossy()).map_err(|e| PipelineError::io(target, e))?;
        let (file, path) = tmp.into_parts();
        if is_parquet_name(target) {
            return Ok(OutputFile {
                sink: Sink::ParquetFile(Some(file)),
                target: Some(target.to_owned()),
                tmp: Some(path),
                row_group_bytes: ROW_GROUP_BYTES,
            });
        }
        let buffered = BufWriter::with_capacity(256 * 1024, file);
        let sink = if target.extension().is_some_and(|e| e == "zst") {
            let mut z = zstd::Encoder::new(buffered, ZSTD_LEVEL).map_err(|e| PipelineError::io(target, e))?;
            for parameter in zstd_output_parameters() {
                z.set_parameter(parameter).map_err(|e| PipelineError::io(target, e))?;
            }
            Sink::Zstd(BufWriter::with_capacity(ZSTD_INPUT_BYTES, z))
        } else {
            Sink::Plain(buffered)
        };
        Ok(OutputFile { sink, target: Some(target.to_owned()), tmp: Some(path), row_group_bytes: ROW_GROUP_BYTES })
    }

    /// Memory the output takes once written to, beyond its buffer: a `.zst`
    /// output's encoder ([`ZSTD_OUTPUT_BYTES`]), else nothing. The pass that
    /// writes it counts this in its plan.
    pub fn encoder_bytes(&self) -> u64 {
        match self.sink {
            Sink::Zstd(_) => ZSTD_OUTPUT_BYTES,
            _ => 0,
        }
    }

    /// Whether this is a Parquet table (the name ends in `.parquet`).
    pub fn is_parquet(&self) -> bool {
        matches!(self.sink, Sink::ParquetFile(_) | Sink::Parquet(_))
    }

    /// Row groups of a Parquet table close at about this many encoded bytes
    /// (what the writer holds in memory); set before [`Self::begin_table`].
    pub fn set_row_group_bytes(&mut self, bytes: usize) {
        self.row_group_bytes = bytes;
    }

    /// Starts the Parquet table: a file with no rows still has its columns.
    pub fn begin_table(&mut self, schema: SchemaRef) -> Result<(), PipelineError> {
        let name = self.name();
        let Sink::ParquetFile(file) = &mut self.sink else {
            return Err(PipelineError::Usage(format!(
                "internal error: {} is no Parquet file to start",
                name.display()
            )));
        };
        let file = file.take().ok_or_else(|| PipelineError::Usage("internal error: a table started twice".into()))?;
        let table = ParquetTable::new(file, schema, self.row_group_bytes)
            .map_err(|e| PipelineError::Parquet { path: name, what: e.to_string() })?;
        self.sink = Sink::Parquet(Box::new(table));
        Ok(())
    }

    /// Writes the rows gathered in `rows` to the Parquet table.
    pub fn write_rows(&mut self, rows: &mut Rows) -> Result<(), PipelineError> {
        if rows.is_empty() {
            return Ok(());
        }
        let name = self.name();
        let parquet = |what: String| PipelineError::Parquet { path: name.clone(), what };
        let batch = rows.take().map_err(|e| parquet(e.to_string()))?;
        match &mut self.sink {
            Sink::Parquet(table) => table.write(&batch).map_err(|e| parquet(e.to_string())),
            _ => Err(parquet("internal error: the table was not started".into())),
        }
    }

    fn name(&self) -> PathBuf {
        self.target.clone().unwrap_or_else(|| PathBuf::from("<stdout>"))
    }

    #[inline]
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), PipelineError> {
        let result = match &mut self.sink {
            Sink::Stdout(w) => w.write_all(bytes),
            Sink::Plain(w) => w.write_all(bytes),
            Sink::Zstd(w) => w.write_all(bytes),
            Sink::ParquetFile(_) | Sink::Parquet(_) => {
                return Err(PipelineError::Usage(format!(
                    "{}: this output cannot be written as Parquet; choose another name",
                    self.name().display()
                )));
            }
        };
        result.map_err(|e| PipelineError::io(self.name(), e))
    }

    /// Flushes, syncs and renames the file into place.
    pub fn finish(self) -> Result<(), PipelineError> {
        let name = self.name();
        let io = |e| PipelineError::io(&name, e);
        let file = match self.sink {
            Sink::Stdout(mut w) => return w.flush().map_err(io),
            Sink::Plain(w) => w.into_inner().map_err(|e| io(e.into_error()))?,
            Sink::Zstd(lines) => {
                let encoder = lines.into_inner().map_err(|e| io(e.into_error()))?;
                encoder.finish().map_err(io)?.into_inner().map_err(|e| io(e.into_error()))?
            }
            Sink::ParquetFile(_) => {
                return Err(PipelineError::Usage(format!(
                    "{}: this output cannot be written as Parquet; choose another name",
                    name.display()
                )));
            }
            Sink::Parquet(table) => {
                table.finish().map_err(|e| PipelineError::Parquet { path: name.clone(), what: e.to_string() })?
            }
        };
        if let (Some(tmp), Some(target)) = (self.tmp, self.target.as_ref()) {
            file.sync_all().map_err(io)?;
            tmp.persist(target).map_err(|e| io(e.error))?;
        }
        Ok(())
    }
}

/// A temporary file in `dir` that will become the user's file `name`:
/// hidden while written (`.{name}.{pid}-{random}.tmp`), locked for as long
/// as it is open, and created with the permissions a normal file gets (0666
/// less the umask), not the 0600 of a private temporary file. Those that
/// killed jobs left for the same name are removed first, and the removal
/// said on standard error (see [`crate::scratch`]).
pub fn temp_beside(dir: &Path, name: &str) -> std::io::Result<tempfile::NamedTempFile> {
    match crate::scratch::sweep_files(dir, name) {
        Ok(swept) => {
            if let Some(notice) = swept.notice(dir) {
                eprintln!("dupgram: {notice}");
            }
        }
        // Leftovers cost disk space, not results.
        Err(e) => eprintln!("dupgram: warning: leftovers of killed jobs not removed: {e}"),
    }
    let prefix = format!(".{name}.{}-", std::process::id());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp").rand_bytes(6);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let file = builder.tempfile_in(dir)?;
    // A filesystem without locks leaves the process ID alone to guard it:
    // enough on this machine, where a sweeper sees the writer alive. Waits,
    // as a scratch directory's does: a sweeper holds a live writer's lock
    // only while it finds the writer alive.
    let _ = file.as_file().lock();
    Ok(file)
}

/// Moves a finished temporary file into place.
pub fn persist(file: tempfile::NamedTempFile, target: &Path) -> Result<(), PipelineError> {
    file.as_file().sync_all().map_err(|e| PipelineError::io(target, e))?;
    file.persist(target).map_err(|e| PipelineError::io(target, e.error))?;
    Ok(())
}

/// Writes duplicate n-grams as `word word … word<TAB>count` lines, or as
/// the rows of a Parquet table (`ngram` string, `count` uint64).
pub struct DupTsvWriter {
    out: OutputFile,
    line: Vec<u8>,
    table: Option<Rows>,
}

impl DupTsvWriter {
    pub fn new(out: OutputFile) -> Self {
        DupTsvWriter { out, line: Vec::with_capacity(256), table: None }
    }

    /// Like [`Self::new`], and starts the table of a Parquet output.
    pub fn create(mut out: OutputFile) -> Result<Self, PipelineError> {
        let table = if out.is_parquet() {
            let rows = Rows::new(&["ngram", "count"], vec![Column::text(), Column::count()]);
            out.begin_table(rows.schema())?;
            Some(rows)
        } else {
            None
        };
        Ok(DupTsvWriter { out, line: Vec::with_capacity(256), table })
    }

    #[inline]
    pub fn write(
        &mut self,
        lexicon: &dyn dupgram_lexicon::WordsById,
        ids: &[u32],
        count: u64,
    ) -> Result<(), PipelineError> {
        self.line.clear();
        for (i, &id) in ids.iter().enumerate() {
            if i > 0 {
                self.line.push(b' ');
            }
            self.line.extend_from_slice(lexicon.word_bytes(id));
        }
        if let Some(rows) = &mut self.table {
            let [Column::Text(ngram), Column::Count(counts)] = &mut rows.columns[..] else {
                unreachable!("the n-gram table's columns")
            };
            // Words are valid UTF-8 (the lexicon is built from text), so this never replaces anything.
            ngram.append_value(String::from_utf8_lossy(&self.line));
            counts.append_value(count);
            rows.added(self.line.len());
            if rows.full() {
                self.out.write_rows(rows)?;
            }
            return Ok(());
        }
        self.line.push(b'\t');
        push_decimal(&mut self.line, count);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    pub fn finish(mut self) -> Result<(), PipelineError> {
        if let Some(rows) = &mut self.table {
            self.out.write_rows(rows)?;
        }
        self.out.finish()
    }
}

/// Appends `v` in decimal, without allocating.
#[inline]
pub fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaping() {
        let mut out = Vec::new();
        super::push_tsv_field(&mut out, "a\tb\\c\nd");
        assert_eq!(out, b"a\\tb\\\\c\\nd");
        assert_eq!(super::json_string("say \"hi\"\u{1}"), "\"say \\\"hi\\\"\\u0001\"");
    }

    /// Lines of ten words of a small vocabulary and a count, as an n-gram list is.
    fn lines(bytes: usize) -> Vec<u8> {
        let mut text = Vec::with_capacity(bytes + 64);
        let mut x = 1u64;
        while text.len() < bytes {
            for _ in 0..10 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.extend_from_slice(format!("w{} ", (x >> 33) % 5000).as_bytes());
            }
            text.extend_from_slice(format!("\t{}\n", x % 7).as_bytes());
        }
        text
    }

    /// A budget is refused below the minimum and the encoders together, and
    /// the message names the least budget that is taken.
    #[test]
    fn zst_outputs_take_their_encoders_from_the_budget() {
        use crate::memory::MemoryPlan;
        let one = super::ZSTD_OUTPUT_BYTES;
        assert!(super::check_encoder_budget(MemoryPlan::MINIMUM, &[0, 0]).is_ok());
        assert!(super::check_encoder_budget(MemoryPlan::MINIMUM + one, &[one, 0]).is_ok());
        let err = super::check_encoder_budget(MemoryPlan::MINIMUM + one - 1, &[one, 0]).unwrap_err().to_string();
        assert!(err.contains("1 .zst output takes 5.0 MiB") && err.contains("--memory 21M or more"), "{err}");
        let err = super::check_encoder_budget(MemoryPlan::MINIMUM + one, &[one, one]).unwrap_err().to_string();
        assert!(err.contains("2 .zst outputs take 10.0 MiB") && err.contains("--memory 26M or more"), "{err}");
    }

    /// The encoder of a `.zst` output, its worker's buffers included, stays
    /// within what the jobs count for it.
    #[test]
    fn a_zst_output_encoder_stays_within_its_bytes() {
        use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer};
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(super::ZSTD_LEVEL)).unwrap();
        for parameter in super::zstd_output_parameters() {
            cctx.set_parameter(parameter).unwrap();
        }
        let text = lines(24 << 20);
        let mut out = vec![0u8; 256 << 10];
        let mut most = 0;
        for piece in text.chunks(256 << 10) {
            let mut input = InBuffer::around(piece);
            while input.pos < piece.len() {
                cctx.compress_stream(&mut OutBuffer::around(&mut out[..]), &mut input).unwrap();
            }
            most = most.max(cctx.sizeof());
        }
        assert!(most > 3 << 20, "a worker's buffers are counted: {most} bytes");
        assert!(most as u64 <= super::ZSTD_OUTPUT_BYTES, "{most} bytes");
    }

    /// A `.zst` output is the same bytes however it is written (one line at a
    /// time or in large pieces), and decompresses to what was written.
    #[test]
    fn a_zst_output_is_the_same_bytes_however_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let text = lines(5 << 20);
        let mut written = Vec::new();
        for (i, pieces) in [1usize, 64 << 10].into_iter().enumerate() {
            let path = dir.path().join(format!("out{i}.zst"));
            let mut out = super::OutputFile::create(Some(&path)).unwrap();
            if pieces == 1 {
                for line in text.split_inclusive(|&b| b == b'\n') {
                    out.write_all(line).unwrap();
                }
            } else {
                for piece in text.chunks(pieces) {
                    out.write_all(piece).unwrap();
                }
            }
            out.finish().unwrap();
            written.push(std::fs::read(&path).unwrap());
        }
        assert_eq!(written[0], written[1]);
        assert_eq!(zstd::decode_all(&written[0][..]).unwrap(), text);
    }

    /// Words by ID for the tests: `w0`, `w1`, ...
    struct NumberedWords(Vec<String>);

    impl dupgram_lexicon::WordsById for NumberedWords {
        fn word_bytes(&self, id: u32) -> &[u8] {
            self.0[id as usize].as_bytes()
        }
    }

    /// Lines written one at a time past the buffers in front of the file and
    /// of the encoder reach it whole and in order, plain and compressed.
    #[test]
    fn a_dup_list_longer_than_its_buffer_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let words = NumberedWords((0..1000).map(|i| format!("w{i}")).collect());
        let mut expected = String::new();
        let ngrams: Vec<([u32; 3], u64)> =
            (0..20_000u32).map(|i| ([i % 1000, (i * 7) % 1000, (i * 13) % 1000], u64::from(i % 5) + 2)).collect();
        for (ids, count) in &ngrams {
            let text: Vec<&str> = ids.iter().map(|&id| words.0[id as usize].as_str()).collect();
            expected.push_str(&format!("{}\t{count}\n", text.join(" ")));
        }
        assert!(expected.len() > 3 * super::ZSTD_INPUT_BYTES);
        for name in ["dups.tsv", "dups.tsv.zst"] {
            let path = dir.path().join(name);
            let mut writer = super::DupTsvWriter::new(super::OutputFile::create(Some(&path)).unwrap());
            for (ids, count) in &ngrams {
                writer.write(&words, ids, *count).unwrap();
            }
            writer.finish().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let text = if name.ends_with(".zst") { zstd::decode_all(&bytes[..]).unwrap() } else { bytes };
            assert!(text == expected.as_bytes(), "{name}");
        }
    }

    #[test]
    fn decimals() {
        for v in [0u64, 7, 10, 99, 1234567890, u64::MAX] {
            let mut out = Vec::new();
            super::push_decimal(&mut out, v);
            assert_eq!(out, v.to_string().into_bytes());
        }
    }
}

/// How pairs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairFormat {
    /// A header line, then TAB-separated fields.
    Tsv,
    /// One JSON object per pair.
    Jsonl,
}

/// Writes pairs (TSV or JSON Lines) and clusters (`size<TAB>id<TAB>id…`).
///
/// Either file is a Parquet table when its name ends in `.parquet`: pairs as
/// the TSV header names them (`a`, `b` strings, the scores float64, `shared`
/// uint64), clusters as `size` (uint64) and `members` (a list of strings).
pub struct PairFiles {
    pairs: OutputFile,
    format: PairFormat,
    clusters: Option<OutputFile>,
    line: Vec<u8>,
    pair_rows: Option<Rows>,
    cluster_rows: Option<Rows>,
}

/// The score columns of a pairs file, in order.
const SCORE_COLUMNS: [&str; 6] = ["sscr", "ssr", "contain_a_in_b", "contain_b_in_a", "cover_a", "cover_b"];

/// Where a pairs job hands its kept pairs and, at the end, its clusters.
pub trait PairsSink: Send {
    fn pair(&mut self, a: &str, b: &str, scores: &PairScores) -> Result<(), PipelineError>;
    fn cluster(&mut self, members: &[&str]) -> Result<(), PipelineError>;
    /// Memory the sink's outputs take once written to (their encoders, see
    /// [`OutputFile::encoder_bytes`]): the pass that writes counts it.
    fn encoder_bytes(&self) -> u64 {
        0
    }
}

/// The TSV header of a pairs file.
pub const PAIRS_HEADER: &str = "a\tb\tsscr\tssr\tcontain_a_in_b\tcontain_b_in_a\tcover_a\tcover_b\tshared\n";

impl PairFiles {
    pub fn new(
        mut pairs: OutputFile,
        format: PairFormat,
        mut clusters: Option<OutputFile>,
    ) -> Result<Self, PipelineError> {
        let pair_rows = if pairs.is_parquet() {
            let names: Vec<&str> = ["a", "b"].into_iter().chain(SCORE_COLUMNS).chain(["shared"]).collect();
            let columns = [Column::text(), Column::text()]
                .into_iter()
                .chain(SCORE_COLUMNS.map(|_| Column::score()))
                .chain([Column::count()])
                .collect();
            let rows = Rows::new(&names, columns);
            pairs.begin_table(rows.schema())?;
            Some(rows)
        } else {
            if format == PairFormat::Tsv {
                pairs.write_all(PAIRS_HEADER.as_bytes())?;
            }
            None
        };
        let cluster_rows = match clusters.as_mut().filter(|c| c.is_parquet()) {
            Some(out) => {
                let rows = Rows::new(&["size", "members"], vec![Column::count(), Column::texts()]);
                out.begin_table(rows.schema())?;
                Some(rows)
            }
            None => None,
        };
        Ok(PairFiles { pairs, format, clusters, line: Vec::with_capacity(256), pair_rows, cluster_rows })
    }

    pub fn finish(mut self) -> Result<(), PipelineError> {
        if let Some(rows) = &mut self.pair_rows {
            self.pairs.write_rows(rows)?;
        }
        if let (Some(rows), Some(out)) = (&mut self.cluster_rows, &mut self.clusters) {
            out.write_rows(rows)?;
        }
        self.pairs.finish()?;
        self.clusters.map_or(Ok(()), OutputFile::finish)
    }
}

impl PairsSink for PairFiles {
    fn pair(&mut self, a: &str, b: &str, s: &PairScores) -> Result<(), PipelineError> {
        use std::io::Write as _;
        self.line.clear();
        let values = [s.sscr, s.ssr, s.contain_a_in_b, s.contain_b_in_a, s.cover_a, s.cover_b];
        if let Some(rows) = &mut self.pair_rows {
            let [Column::Text(ca), Column::Text(cb), scores @ .., Column::Count(shared)] = &mut rows.columns[..] else {
                return Err(PipelineError::Usage("internal error: the pairs table's columns".into()));
            };
            ca.append_value(a);
            cb.append_value(b);
            for (column, v) in scores.iter_mut().zip(values) {
                if let Column::Score(c) = column {
                    c.append_value(v);
                }
            }
            shared.append_value(s.shared as u64);
            rows.added(a.len() + b.len());
            return if rows.full() { self.pairs.write_rows(rows) } else { Ok(()) };
        }
        match self.format {
            PairFormat::Tsv => {
                push_tsv_field(&mut self.line, a);
                self.line.push(b'\t');
                push_tsv_field(&mut self.line, b);
                for v in values {
                    let _ = write!(self.line, "\t{v:.6}");
                }
                let _ = writeln!(self.line, "\t{}", s.shared);
            }
            PairFormat::Jsonl => {
                let names = ["sscr", "ssr", "contain_a_in_b", "contain_b_in_a", "cover_a", "cover_b"];
                let _ = write!(self.line, "{{\"a\":{},\"b\":{}", json_string(a), json_string(b));
                for (name, v) in names.iter().zip(values) {
                    let _ = write!(self.line, ",\"{name}\":{v:.6}");
                }
                let _ = writeln!(self.line, ",\"shared\":{}}}", s.shared);
            }
        }
        self.pairs.write_all(&self.line)
    }

    fn encoder_bytes(&self) -> u64 {
        self.pairs.encoder_bytes() + self.clusters.as_ref().map_or(0, OutputFile::encoder_bytes)
    }

    fn cluster(&mut self, members: &[&str]) -> Result<(), PipelineError> {
        let Some(out) = &mut self.clusters else { return Ok(()) };
        if let Some(rows) = &mut self.cluster_rows {
            let [Column::Count(size), Column::Texts(list)] = &mut rows.columns[..] else {
                return Err(PipelineError::Usage("internal error: the clusters table's columns".into()));
            };
            size.append_value(members.len() as u64);
            for m in members {
                list.values().append_value(m);
            }
            list.append(true);
            rows.added(members.iter().map(|m| m.len()).sum());
            return if rows.full() { out.write_rows(rows) } else { Ok(()) };
        }
        self.line.clear();
        push_decimal(&mut self.line, members.len() as u64);
        for m in members {
            self.line.push(b'\t');
            push_tsv_field(&mut self.line, m);
        }
        self.line.push(b'\n');
        out.write_all(&self.line)
    }
}

/// A document ID as a TSV field: backslash, TAB and line breaks escaped as `\\`, `\t`, `\n`, `\r`.
pub fn push_tsv_field(out: &mut Vec<u8>, text: &str) {
    for b in text.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}

/// JSON string literal for `text` (quotes, backslashes and control characters escaped).
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
