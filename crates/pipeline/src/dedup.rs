//! `dedup`: keep one instance of every repeated unit of text.
//!
//! 1. **The duplicate-only index** (see [`crate::index`]).
//! 2. **Exact pass** (with `exact`): every unit's Benko fingerprint (its
//!    letters, digits and punctuation ignored) is sorted with the unit's
//!    number out of core; in each group of equal fingerprints, all units but
//!    the first are exact duplicates (one bit each).
//! 3. **Decision pass**: the corpus is read once more, in order, document by
//!    document; each document's duplicate n-grams come from the index —
//!    gathered in memory by the index merge when they fit, else read back
//!    from the index file a block of documents at a time, or, when the
//!    documents are too many for the tables those ways hold, from the index
//!    sorted by document on disk (see `crate::index`'s `by_doc`) —, its units are
//!    judged by Onion's rule ([`dupgram_dedup::Marker`]), and it is written
//!    out marked or stripped, in its own format (or as a Parquet table).

mod doc_occurrences;

use std::io::BufRead;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use dupgram_corpus::{CorpusError, Format, Input, ReadOptions};
use dupgram_dedup::{DedupParams, ExactHasher, LengthTable, Marker, UnitKind, UnitVerdict, nothing_kept};
use dupgram_merge::MergeSink;
use serde::Serialize;

use crate::index::{AfterCut, BlockCache, BuiltIndex, DocLists, DupsInput, IndexJob, IndexStats, PER_DOC_BYTES};
use crate::ngrams::{NgramConfig, zstd_need};
use crate::occurrence_file::OccurrenceReader;
use doc_occurrences::DocOccurrences;
use dupgram_jobkit::attributes::{AttributesFile, char_spans};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::doc_stream::{
    Body, Doc, DocStream, InputStamps, Item, ReadAheadTaker, Role, extend_short, marked_record, read_ahead,
    stripped_record, vertical_attributes,
};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, human_bytes, peak_rss};
use dupgram_jobkit::output::OutputFile;
use dupgram_jobkit::table::{Column, Rows};
use dupgram_jobkit::unit_sort::UnitSort;

/// What to deduplicate, and how.
#[derive(Debug, Clone)]
pub struct DedupConfig {
    /// Inputs, tokenisation, n, memory, threads, temporary directory.
    pub base: NgramConfig,
    pub dups: Option<DupsInput>,
    pub unit: UnitKind,
    /// A unit with more than this share of its tokens covered by earlier n-grams is a duplicate.
    pub threshold: f64,
    pub smoothing: bool,
    pub max_stub: u32,
    /// Also Benko's exact test: a unit whose letters equal an earlier unit's.
    pub exact: bool,
    /// Drop duplicates instead of marking them.
    pub strip: bool,
    /// `--unit span`: words in the shortest repeated passage cut out (K).
    pub min_span: u32,
    /// `--unit span`: a document left with fewer tokens goes whole.
    pub min_tokens: u32,
    /// `--unit span --hash-to DIR`: only hash this part's K-grams into `DIR`.
    pub hash_to: Option<PathBuf>,
    /// With `hash_to`: the part's place in the corpus.
    pub part: u64,
    /// `--unit span --hashed DIR…`: the parts' hashed K-grams, in corpus order (no hashing pass).
    pub hashed: Vec<PathBuf>,
}

impl DedupConfig {
    pub fn new(base: NgramConfig) -> Self {
        DedupConfig {
            base,
            dups: None,
            unit: UnitKind::Paragraph,
            threshold: 0.5,
            smoothing: true,
            max_stub: 20,
            exact: false,
            strip: false,
            min_span: 50,
            min_tokens: 0,
            hash_to: None,
            part: 0,
            hashed: Vec::new(),
        }
    }

    /// Refuses `--hash-to` and `--hashed` to every job but `--unit span`'s.
    pub(crate) fn check_no_span_parts(&self) -> Result<(), PipelineError> {
        if self.hash_to.is_some() || !self.hashed.is_empty() {
            return Err(PipelineError::Usage("--hash-to and --hashed are for --unit span".into()));
        }
        Ok(())
    }

    fn check(&self) -> Result<(), PipelineError> {
        if self.unit == UnitKind::Line {
            return Err(PipelineError::Usage("--unit line needs --exact-only".into()));
        }
        self.check_no_span_parts()?;
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(PipelineError::Usage(format!("--threshold must be between 0 and 1, not {}", self.threshold)));
        }
        Ok(())
    }
}

/// Seconds per step.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct DedupSeconds {
    /// `--unit span`: the sieve pass over the K-grams (`index` is the hashing and numbering after it).
    pub sieve: f64,
    pub index: f64,
    pub exact: f64,
    pub decisions: f64,
    pub total: f64,
}

/// The summary of a deduplication.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DedupStats {
    pub n: usize,
    pub unit: String,
    pub threshold: f64,
    #[serde(flatten)]
    pub index: IndexStats,
    pub units: u64,
    pub units_removed: u64,
    /// Units removed by the n-gram test.
    pub units_duplicate: u64,
    /// Units whose text (letters only) repeats an earlier unit's.
    pub units_exact: u64,
    /// Units removed only by smoothing.
    pub units_smoothed: u64,
    /// `--exact-only`: no n-gram test; `units_exact` are the units whose normalised text repeats.
    pub exact_only: bool,
    /// `--exact-only`: groups of units with one fingerprint (texts verified after).
    pub exact_groups: u64,
    /// `--exact-only`: passes that verified candidates against their texts (the last one while writing).
    pub verify_passes: u64,
    /// `--exact-only`: units whose fingerprint matched an earlier unit's but whose text did not.
    pub fingerprint_collisions: u64,
    pub tokens_removed: u64,
    /// `--unit span`: K, the shortest passage cut out, in words.
    pub min_span: u32,
    /// `--unit span`: repeated passages cut out (maximal runs of removed tokens).
    pub spans_removed: u64,
    /// `--unit span`: tokens in those passages (documents removed whole add the rest of theirs to `tokens_removed`).
    pub tokens_in_spans: u64,
    /// `--unit span`: K-grams the sieve proved to occur once, never hashed or sorted.
    pub kgrams_sieved_out: u64,
    /// `--unit span`: parts by fingerprint the K-grams were sieved and hashed in (0: no sieve).
    pub kgram_parts: u64,
    /// `--unit span`: passes over the corpus that filled the sieve of K-grams.
    pub kgram_sieve_fills: u64,
    /// `--unit span`: documents removed whole by `--min-tokens` or `--threshold`.
    pub documents_whole: u64,
    /// Documents with no unit left.
    pub documents_removed: u64,
    /// Benko's tables: units and tokens removed and kept, by unit length.
    pub lengths: LengthTable,
    /// Blocks the document-major index was read in.
    pub index_blocks: u64,
    /// The index was sorted by document on disk: the documents were too
    /// many for the tables the other ways hold (see `crate::index`'s `by_doc`).
    pub index_by_document: bool,
    /// Readings of the whole index to build blocks (the one that cut it
    /// into a file per block, when it was, included).
    pub index_reads: u64,
    pub memory_budget: u64,
    pub peak_rss: u64,
    pub seconds: DedupSeconds,
    pub warnings: Vec<String>,
}

/// Where a deduplication's decisions go: the documents, marked or stripped
/// (none: not written), and Dolma-style attributes beside them.
#[derive(Default)]
pub struct DedupOutput<'a> {
    pub documents: Option<&'a mut OutputFile>,
    pub attributes: Option<&'a mut AttributesFile>,
}

impl<'a> DedupOutput<'a> {
    /// The documents only.
    pub fn documents(out: &'a mut OutputFile) -> Self {
        DedupOutput { documents: Some(out), attributes: None }
    }

    /// The writer of the documents: a Parquet table's rows when the documents file is one.
    pub(crate) fn doc_writer<'t>(&mut self, strip: bool, text_field: &'t str) -> Result<DocWriter<'t>, PipelineError> {
        match self.documents.as_deref_mut() {
            Some(out) => DocWriter::new(strip, text_field, out),
            None => Ok(DocWriter::lines(strip, text_field)),
        }
    }

    /// Writes the rows a Parquet table of documents still holds.
    pub(crate) fn finish_documents(&mut self, writer: &mut DocWriter) -> Result<(), PipelineError> {
        match self.documents.as_deref_mut() {
            Some(out) => writer.finish(out),
            None => Ok(()),
        }
    }

    /// Memory the outputs' encoders take once written to (see [`OutputFile::encoder_bytes`]).
    pub(crate) fn encoder_bytes(&self) -> u64 {
        let attributes = self.attributes.as_deref().map_or(0, AttributesFile::encoder_bytes);
        self.documents.as_deref().map_or(0, OutputFile::encoder_bytes) + attributes
    }

    /// Whether the documents go into a Parquet table.
    pub(crate) fn documents_parquet(&self) -> bool {
        self.documents.as_deref().is_some_and(OutputFile::is_parquet)
    }

    pub(crate) fn passthrough(
        &mut self,
        writer: &mut DocWriter,
        line: &[u8],
        vertical: bool,
    ) -> Result<(), PipelineError> {
        match self.documents.as_deref_mut() {
            Some(out) => writer.passthrough(out, line, vertical),
            None => Ok(()),
        }
    }

    /// Writes a judged document where it goes.
    pub(crate) fn document(
        &mut self,
        writer: &mut DocWriter,
        doc: &Doc,
        verdicts: &[UnitVerdict],
        exact: &[bool],
    ) -> Result<(), PipelineError> {
        if let Some(out) = self.documents.as_deref_mut() {
            writer.write(out, doc, verdicts)?;
        }
        if let Some(file) = self.attributes.as_deref_mut() {
            write_attributes(file, doc, verdicts, exact)?;
        }
        Ok(())
    }

    /// The input names a document stream needs for default IDs, when attributes are written.
    pub(crate) fn id_names(&self, inputs: &[Input]) -> Option<Vec<String>> {
        self.attributes.is_some().then(|| inputs.iter().map(Input::name).collect())
    }

    /// Refuses, before any work, inputs that attributes cannot describe.
    pub(crate) fn check_inputs(&self, inputs: &[Input], read: &ReadOptions) -> Result<(), PipelineError> {
        if self.attributes.is_none() {
            return Ok(());
        }
        for input in inputs {
            if let Input::Path(path) = input
                && input_format(path, read)? == Format::Vertical
            {
                return Err(vertical_attributes(&path.display().to_string()));
            }
        }
        Ok(())
    }
}

/// The format of an input: `--format`, else its extension, else its content.
fn input_format(path: &std::path::Path, read: &ReadOptions) -> Result<Format, PipelineError> {
    if let Some(format) = read.format.or_else(|| Format::from_path(path)) {
        return Ok(format);
    }
    let name = path.display().to_string();
    let open_err = |error| PipelineError::Corpus(CorpusError::Open { name: name.clone(), error });
    let mut reader = dupgram_corpus::open_decoded(path).map_err(open_err)?;
    Ok(Format::sniff(reader.fill_buf().map_err(open_err)?))
}

/// Deduplicates the corpus into `out`.
pub fn dedup(config: &DedupConfig, control: &Control, out: &mut OutputFile) -> Result<DedupStats, PipelineError> {
    dedup_to(config, control, DedupOutput::documents(out))
}

/// The memory plan of a dedup job (every mode) and its temporary directory.
pub(crate) fn plan_and_scratch(
    base: &NgramConfig,
) -> Result<(MemoryPlan, dupgram_jobkit::scratch::Scratch), PipelineError> {
    let plan = MemoryPlan::new(base.memory, base.threads, zstd_need(&base.inputs)?)
        .map_err(|what| PipelineError::Memory { budget: human_bytes(base.memory), what })?;
    Ok((plan, dupgram_jobkit::scratch::Scratch::create(&base.tmp_dir, "dupgram-dedup")?))
}

/// Deduplicates the corpus into the documents and attribute files of `out`.
pub fn dedup_to(config: &DedupConfig, control: &Control, mut out: DedupOutput) -> Result<DedupStats, PipelineError> {
    config.check()?;
    out.check_inputs(&config.base.inputs, &config.base.read)?;
    // The decisions read the files again; these say they read what the index did.
    let stamps = InputStamps::of(&config.base.inputs);
    let started = Instant::now();
    let base = &config.base;
    let (plan, work) = plan_and_scratch(base)?;
    let mut stats = DedupStats {
        n: base.n,
        unit: unit_name(config.unit).into(),
        threshold: config.threshold,
        memory_budget: base.memory,
        ..DedupStats::default()
    };
    let index = IndexJob::new(base, config.dups.as_ref(), control, plan, work.path()).documents_on_disk();
    // Each document's occurrences straight from the merge when they fit
    // beside what the decisions need (and the exact pass, when it runs).
    let working = index.working();
    let available = if config.exact { working / 2 } else { working };
    let fits = |docs: u64, candidates: u64| {
        // Every duplicate n-gram has two candidate occurrences at least.
        let fixed = Marker::bytes_for(candidates / 2) + docs * PER_DOC_BYTES;
        let room = available.saturating_sub(fixed) * 3 / 5;
        let budget = base.limits.chunk_ngrams.map_or(room, |c| c as u64 * 8);
        DocLists::bytes_for(candidates, docs) <= budget
    };
    let mut built = index.build_with_lists(&mut stats.index, &fits)?;
    // Sorted by document: merged into one file, a part of the index merge.
    let by_doc = match built.by_doc.take() {
        Some(by_doc) => {
            let t = Instant::now();
            let sorted = by_doc.write_occurrences(work.path(), index.fan_in(0), control)?;
            stats.index.merge_seconds += t.elapsed().as_secs_f64();
            stats.index.bytes_spilled += sorted.bytes;
            if sorted.occurrences != stats.index.duplicate_occurrences {
                return Err(PipelineError::Usage(format!(
                    "internal error: {} occurrences sorted by document, {} merged",
                    sorted.occurrences, stats.index.duplicate_occurrences
                )));
            }
            stats.index_by_document = true;
            Some(sorted.path)
        }
        None => None,
    };
    stats.seconds.index = started.elapsed().as_secs_f64();
    let job = DedupJob { config, control, index, built: &built, plan, stamps };
    let t = Instant::now();
    let exact = if config.exact { job.exact_pass(&mut stats)? } else { Vec::new() };
    stats.seconds.exact = t.elapsed().as_secs_f64();
    let t = Instant::now();
    job.decide(&exact, by_doc.as_deref(), &mut out, &mut stats)?;
    stats.seconds.decisions = t.elapsed().as_secs_f64();
    drop(built);
    drop(work);
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

/// The least room the decisions read the index's blocks in.
const MIN_BLOCK_ROOM: u64 = 256 << 10;

pub(crate) fn unit_name(unit: UnitKind) -> &'static str {
    match unit {
        UnitKind::Document => "doc",
        UnitKind::Paragraph => "p",
        UnitKind::Sentence => "s",
        UnitKind::Line => "line",
    }
}

struct DedupJob<'a> {
    config: &'a DedupConfig,
    control: &'a Control,
    index: IndexJob<'a>,
    built: &'a BuiltIndex,
    plan: MemoryPlan,
    /// The input files as they were before the index read them.
    stamps: InputStamps,
}

impl DedupJob<'_> {
    fn stream(&self, fingerprints: bool, spare: crossbeam_channel::Receiver<Doc>) -> DocStream<'_> {
        let mut stream = DocStream::new(
            &self.built.inputs,
            &self.config.base.read,
            self.plan,
            self.config.unit,
            (self.built.norm, &self.built.stopwords),
            (self.index.working() / 8) as usize,
            spare,
        );
        stream.hasher = fingerprints.then(ExactHasher::default);
        stream
    }

    /// Marks every unit whose letters repeat an earlier unit's.
    fn exact_pass(&self, stats: &mut DedupStats) -> Result<Vec<u64>, PipelineError> {
        self.control.start_pass("exact units", None);
        let chunk = self.config.base.limits.chunk_ngrams;
        let mut sort = UnitSort::new(self.index.work, self.index.working(), chunk, EXACT_RUNS)?;
        let mut stream = self.stream(true, crossbeam_channel::never());
        let mut unit = 0u64;
        while let Some(item) = stream.next_doc()? {
            let Item::Doc(doc) = item else { continue };
            if self.control.interrupted() {
                return Err(PipelineError::Interrupted);
            }
            for (&tokens, &fp) in doc.unit_tokens.iter().zip(&doc.fingerprints) {
                if tokens > 0 {
                    sort.push([(fp >> 96) as u32, (fp >> 64) as u32, (fp >> 32) as u32, fp as u32], unit)?;
                }
                unit += 1;
            }
        }
        let sorted = sort.finish()?;
        stats.index.bytes_spilled += sorted.spilled;
        let mut sink = ExactMarks { bits: vec![0; unit.div_ceil(64) as usize] };
        sorted.merge(self.index.fan_in(unit / 8), &mut sink, self.control)?;
        Ok(sink.bits)
    }

    /// Reads the corpus once more, judges each document's units and writes it out.
    /// `by_doc`: the index sorted by document, when the documents went to
    /// disk (see `crate::index`'s `by_doc`).
    fn decide(
        &self,
        exact: &[u64],
        by_doc: Option<&std::path::Path>,
        out: &mut DedupOutput,
        stats: &mut DedupStats,
    ) -> Result<(), PipelineError> {
        self.control.start_pass("deduplicating", self.built.inputs.iter().map(Input::size).sum());
        let n = self.config.base.n as u32;
        let totals = &self.built.totals;
        let table = &self.built.table;
        // One block at a time, beside the marker's bits, the per-document
        // arrays and the documents read ahead.
        let fixed = Marker::bytes_for(totals.ngrams)
            + table.len() as u64 * PER_DOC_BYTES
            + exact.len() as u64 * 8
            + out.encoder_bytes();
        let room = self.index.working().saturating_sub(fixed) * 3 / 5;
        let blocks = match &self.built.lists {
            // Gathered by the merge: one block, in memory already.
            Some(_) => std::iter::once(0..table.len() as u32).collect(),
            // Read in order: no blocks.
            None if by_doc.is_some() => Vec::new(),
            // Blocks of a few documents each would read the index once per few documents.
            None if room < MIN_BLOCK_ROOM && self.config.base.limits.chunk_ngrams.is_none() => {
                let encoders = if out.encoder_bytes() > 0 { " and the output's encoder" } else { "" };
                return Err(PipelineError::Memory {
                    budget: human_bytes(self.config.base.memory),
                    what: format!(
                        "the marks, the document list{encoders} ({}) leave no room for the index's blocks",
                        human_bytes(fixed)
                    ),
                });
            }
            None => self.index.plan_blocks(&totals.occurrences, 0..table.len() as u32, room),
        };
        stats.index_blocks = blocks.len() as u64;
        let mut source = match (&self.built.lists, by_doc) {
            (Some(lists), _) => DocOccurrences::Lists { lists, tokens: &table.tokens },
            (None, Some(path)) => DocOccurrences::ByDoc { reader: OccurrenceReader::open(path)?, list: Vec::new() },
            (None, None) => DocOccurrences::Blocks {
                // One block at a time: the room was planned for one.
                // The decisions are the index's last reader: cut by block, it goes.
                cache: BlockCache::new(&self.built.parts, n, &blocks, self.index.block_budget(room), self.control)
                    .split_in(self.index.work, self.config.base.limits.block_files)
                    .after_cut(AfterCut::RemoveIndex),
                blocks: &blocks,
                block: 0,
                occurrences: &totals.occurrences,
                tokens: &table.tokens,
                sorted: Vec::new(),
            },
        };
        let params = DedupParams {
            n,
            threshold: self.config.threshold,
            smoothing: self.config.smoothing,
            max_stub: self.config.max_stub,
        };
        let mut marker = Marker::new(params, totals.ngrams as usize);
        let mut writer = out.doc_writer(self.config.strip, &self.config.base.read.text_field)?;
        // Reading and tokenising run on their own thread, ahead of the
        // decisions, by at most a fifth of what the block leaves in bytes
        // (books are megabytes each: 256 of them once took a 1G job to 1.1 GiB).
        // Documents go over in batches: a hand-over (and the wake-up of a
        // thread waiting for it) per document cost more than the decision
        // on a short one.
        let (tx, rx) = crossbeam_channel::bounded::<(Vec<Fed>, usize)>(SLOTS_AHEAD);
        let (ahead, done_with) = read_ahead(self.index.working().saturating_sub(fixed) / 5, SLOTS_AHEAD);
        // Written documents go back to the reader, which fills them again
        // rather than growing new buffers, and frees what it does not fill
        // (memory freed on another thread than the one that took it waits
        // on that thread's heap lock); as many as can be in flight, so that
        // one is always there, each no larger than a share of half the
        // read-ahead, as their buffers stay that large: together they hold
        // at most half the read-ahead's bytes beside it, within what the
        // block leaves.
        let spare_docs = SLOTS_AHEAD * BATCH_DOCS + BATCH_DOCS;
        let spare_doc_bytes = ahead.slot_bytes() * SLOTS_AHEAD / 2 / spare_docs;
        let (spare_tx, spare_rx) = crossbeam_channel::bounded::<Doc>(spare_docs);
        let mut stream = self.stream(false, spare_rx);
        stream.ids = out.id_names(&self.config.base.inputs);
        // A whole document's tokens are in the table (see `with_indexed_tokens`).
        let indexed_tokens = source.indexed_tokens().filter(|_| self.config.unit == UnitKind::Document);
        stream.counts_known = indexed_tokens.is_some();
        let decided = std::thread::scope(|scope| {
            let reader = scope.spawn(move || send_batches(&mut stream, &ahead, &tx));
            let decided = (|| -> Result<(), PipelineError> {
                let (mut doc, mut unit_base, mut all_ngrams) = (0u32, 0u64, 0u64);
                let mut exact_units: Vec<bool> = Vec::new();
                for (batch, slots) in &rx {
                    for Fed { item, vertical, position } in batch {
                        let d = match item {
                            Item::Passthrough(line) => {
                                out.passthrough(&mut writer, &line, vertical)?;
                                continue;
                            }
                            Item::Doc(d) => with_indexed_tokens(d, doc, indexed_tokens)?,
                        };
                        if doc % 1024 == 0 && self.control.interrupted() {
                            return Err(PipelineError::Interrupted);
                        }
                        let found: u64 = d.unit_tokens.iter().map(|&t| u64::from(t)).sum();
                        all_ngrams += found.saturating_sub(u64::from(n) - 1);
                        let ngrams = source.of(doc, found)?;
                        exact_units.clear();
                        exact_units.extend((0..d.unit_tokens.len() as u64).map(|u| {
                            let i = unit_base + u;
                            exact.get((i / 64) as usize).is_some_and(|w| w & (1 << (i % 64)) != 0)
                        }));
                        let verdicts = marker.document(&d.unit_tokens, ngrams, &exact_units);
                        record(stats, &d.unit_tokens, &verdicts, &exact_units);
                        out.document(&mut writer, &d, &verdicts, &exact_units)?;
                        self.control.progress.bytes.store(position, std::sync::atomic::Ordering::Relaxed);
                        unit_base += d.unit_tokens.len() as u64;
                        doc += 1;
                        if d.heap_bytes() <= spare_doc_bytes {
                            let _ = spare_tx.try_send(d);
                        }
                    }
                    done_with.give(slots);
                }
                self.stamps.check(&self.config.base.inputs)?;
                out.finish_documents(&mut writer)?;
                source.check_all_taken()?;
                if by_doc.is_some() {
                    // No table held the documents' sizes: counted here instead.
                    stats.index.all_ngrams = all_ngrams;
                    stats.index.index_fraction = stats.index.duplicate_occurrences as f64 / all_ngrams.max(1) as f64;
                }
                if u64::from(doc) != stats.index.documents {
                    return Err(PipelineError::Changed(format!(
                        "{} documents were indexed, {doc} read back",
                        stats.index.documents
                    )));
                }
                Ok(())
            })();
            // Stop the reader early if deciding failed (and wake it if it waits for room).
            drop((rx, done_with));
            let read = reader
                .join()
                .unwrap_or_else(|_| Err(PipelineError::Usage("internal error: the reader thread panicked".into())));
            read.and(decided)
        });
        stats.index_reads = source.index_reads();
        decided
    }
}

/// Run tag of the exact pass's runs.
const EXACT_RUNS: u64 = 0xE4AC_7000;

/// Slots of the decisions' read-ahead: a batch of documents takes one or more.
const SLOTS_AHEAD: usize = 32;
/// Documents the decisions' reader hands over at once, at most.
const BATCH_DOCS: usize = 64;

/// A document (or a line between documents) read for the decisions, with
/// whether it came from a vertical file and where its input then stood.
struct Fed {
    item: Item,
    vertical: bool,
    position: u64,
}

/// The decisions' reader: the documents of `stream` in batches of at most
/// [`BATCH_DOCS`] or a read-ahead slot's bytes, each sent once its slots
/// are free. Stops early, without an error, once the decisions are gone.
/// A document made without its token count (`counts_known`) gets the one
/// the index counted, `indexed[doc]`: tokenising the text again only to
/// count it took a sixth of the decisions' time on short documents. Only
/// a whole document has its count in the table. That the text is still
/// what was indexed is the inputs' stamps' to show ([`InputStamps`]),
/// and a document read back past the table's is an error here.
fn with_indexed_tokens(mut d: Doc, doc: u32, indexed: Option<&[u32]>) -> Result<Doc, PipelineError> {
    if let Some(indexed) = indexed {
        let tokens = indexed.get(doc as usize).ok_or_else(|| {
            PipelineError::Changed(format!("{} documents were indexed, more read back", indexed.len()))
        })?;
        d.count_as(*tokens);
    }
    Ok(d)
}

fn send_batches(
    stream: &mut DocStream<'_>,
    ahead: &ReadAheadTaker,
    tx: &crossbeam_channel::Sender<(Vec<Fed>, usize)>,
) -> Result<(), PipelineError> {
    let (mut batch, mut bytes) = (Vec::with_capacity(BATCH_DOCS), 0);
    loop {
        let item = stream.next_doc()?;
        let last = item.is_none();
        if let Some(item) = item {
            bytes += item.heap_bytes();
            batch.push(Fed { item, vertical: stream.is_vertical(), position: stream.position() });
        }
        let full = batch.len() == BATCH_DOCS || bytes >= ahead.slot_bytes();
        if !batch.is_empty() && (full || last) {
            let Some(slots) = ahead.take(bytes) else { return Ok(()) };
            let sent = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_DOCS));
            if tx.send((sent, slots)).is_err() {
                return Ok(());
            }
            bytes = 0;
        }
        if last {
            return Ok(());
        }
    }
}

pub(crate) fn record(stats: &mut DedupStats, units: &[u32], verdicts: &[UnitVerdict], exact: &[bool]) {
    for ((&tokens, v), &x) in units.iter().zip(verdicts).zip(exact) {
        stats.units += 1;
        stats.lengths.add(tokens, v.removed());
        if v.removed() {
            stats.units_removed += 1;
            stats.tokens_removed += u64::from(tokens);
        }
        if x {
            stats.units_exact += 1;
        } else if v.duplicate {
            stats.units_duplicate += 1;
        }
        if v.smoothed && !v.duplicate {
            stats.units_smoothed += 1;
        }
    }
    if nothing_kept(units, verdicts) {
        stats.documents_removed += 1;
    }
}

/// Marks all but the first unit of each group of equal fingerprints.
struct ExactMarks {
    bits: Vec<u64>,
}

impl MergeSink for ExactMarks {
    type Error = PipelineError;

    fn accept(&mut self, _fingerprint: &[u32], _count: u64, units: &[u64]) -> Result<(), PipelineError> {
        for &u in units.iter().skip(1) {
            self.bits[(u / 64) as usize] |= 1 << (u % 64);
        }
        Ok(())
    }
}

/// Writes documents marked or stripped, in their own format, or as the rows
/// of a Parquet table: `id`, `text` (what is kept of it with `strip`),
/// `dup_fraction` and, when marking, `dup_spans` (character offsets), the
/// documents kept being those a JSON Lines output keeps.
pub(crate) struct DocWriter<'a> {
    strip: bool,
    /// Keep, when stripping, a document without tokens that nothing marked
    /// (`dedup` drops it: it has nothing to keep).
    pub keep_empty: bool,
    text_field: &'a str,
    line: Vec<u8>,
    table: Option<Rows>,
}

impl<'a> DocWriter<'a> {
    /// A writer to `out`, whose Parquet table (if it is one) it starts.
    pub(crate) fn new(strip: bool, text_field: &'a str, out: &mut OutputFile) -> Result<Self, PipelineError> {
        let table = if out.is_parquet() {
            let rows = if strip {
                Rows::new(&["id", "text", "dup_fraction"], vec![Column::text(), Column::text(), Column::score()])
            } else {
                Rows::new(
                    &["id", "text", "dup_fraction", "dup_spans"],
                    vec![Column::text(), Column::text(), Column::score(), Column::spans()],
                )
            };
            out.begin_table(rows.schema())?;
            Some(rows)
        } else {
            None
        };
        Ok(DocWriter { strip, keep_empty: false, text_field, line: Vec::new(), table })
    }

    /// A writer of documents in their own (line) format.
    pub(crate) fn lines(strip: bool, text_field: &'a str) -> Self {
        DocWriter { strip, keep_empty: false, text_field, line: Vec::new(), table: None }
    }

    /// Writes the rows a Parquet table still holds.
    pub(crate) fn finish(&mut self, out: &mut OutputFile) -> Result<(), PipelineError> {
        match &mut self.table {
            Some(rows) => out.write_rows(rows),
            None => Ok(()),
        }
    }

    /// A line that is no document: kept in line formats; a Parquet table has rows of documents only.
    pub(crate) fn passthrough(
        &mut self,
        out: &mut OutputFile,
        line: &[u8],
        vertical: bool,
    ) -> Result<(), PipelineError> {
        if self.table.is_some() {
            return Ok(());
        }
        self.line.clear();
        if vertical && !self.strip {
            self.line.extend_from_slice(b"0\t");
        }
        self.line.extend_from_slice(line);
        self.line.push(b'\n');
        out.write_all(&self.line)
    }

    pub(crate) fn write(
        &mut self,
        out: &mut OutputFile,
        doc: &Doc,
        verdicts: &[UnitVerdict],
    ) -> Result<(), PipelineError> {
        let unmarked = self.keep_empty && !verdicts.iter().any(UnitVerdict::removed);
        let all_removed = !unmarked && nothing_kept(&doc.unit_tokens, verdicts);
        let tokens: u64 = doc.unit_tokens.iter().map(|&t| u64::from(t)).sum();
        let removed: u64 =
            doc.unit_tokens.iter().zip(verdicts).filter(|(_, v)| v.removed()).map(|(&t, _)| u64::from(t)).sum();
        let fraction = if tokens == 0 { 0.0 } else { removed as f64 / tokens as f64 };
        if let Some(rows) = &mut self.table {
            return write_row(rows, out, self.strip, doc, verdicts, (fraction, all_removed));
        }
        self.line.clear();
        match &doc.body {
            Body::Vertical { bytes, ends, roles } => {
                let mut start = 0;
                for (&end, role) in ends.iter().zip(roles) {
                    let line = start..end as usize;
                    start = end as usize;
                    let gone = match role {
                        Role::DocTag => all_removed,
                        Role::Unit(u) => verdicts[*u as usize].removed(),
                    };
                    push_vertical_line(&mut self.line, (bytes, line), self.strip, gone);
                }
            }
            Body::Text { text, units } => {
                if self.strip {
                    if !all_removed {
                        self.line.extend_from_slice(kept_text(line_text(text), units, verdicts).as_bytes());
                        self.line.push(b'\n');
                    }
                } else {
                    self.line.extend_from_slice(format!("{fraction:.6}\t").as_bytes());
                    self.line.extend_from_slice(text.as_bytes());
                    self.line.push(b'\n');
                }
            }
            Body::Jsonl { line, text, units, appendable } => {
                if self.strip && all_removed {
                    return Ok(());
                }
                if !self.strip {
                    let spans = duplicate_spans(text, units, verdicts);
                    marked_record(&mut self.line, line, *appendable, fraction, &spans)?;
                } else {
                    let kept = verdicts.iter().any(UnitVerdict::removed).then(|| kept_text(text, units, verdicts));
                    stripped_record(&mut self.line, line, self.text_field, kept)?;
                }
            }
        }
        out.write_all(&self.line)
    }
}

/// One line of a vertical file, `bytes[range]` of its document's bytes:
/// with `strip` kept only when not `gone`, else marked `1`/`0` and a TAB
/// in front.
pub(crate) fn push_vertical_line(out: &mut Vec<u8>, (bytes, line): (&[u8], Range<usize>), strip: bool, gone: bool) {
    if strip && gone {
        return;
    }
    if !strip {
        out.extend_from_slice(if gone { b"1\t" } else { b"0\t" });
    }
    extend_short(out, bytes, line);
    out.push(b'\n');
}

/// A document's ID as the text of a table's `id` column.
fn id_text(id: &serde_json::Value) -> std::borrow::Cow<'_, str> {
    match id {
        serde_json::Value::String(s) => s.as_str().into(),
        serde_json::Value::Null => "".into(),
        other => other.to_string().into(),
    }
}

/// One document as a row of a Parquet table (see [`DocWriter`]).
fn write_row(
    rows: &mut Rows,
    out: &mut OutputFile,
    strip: bool,
    doc: &Doc,
    verdicts: &[UnitVerdict],
    (fraction, all_removed): (f64, bool),
) -> Result<(), PipelineError> {
    let (text, units) = match &doc.body {
        Body::Jsonl { text, units, .. } => (text, units),
        Body::Text { text, units } => (text, units),
        Body::Vertical { .. } => {
            return Err(PipelineError::Usage(
                "a vertical corpus cannot be written as Parquet; write a vertical file".into(),
            ));
        }
    };
    if strip && all_removed {
        return Ok(());
    }
    let kept;
    let text: &str = if strip && verdicts.iter().any(UnitVerdict::removed) {
        kept = kept_text(text, units, verdicts);
        &kept
    } else {
        text
    };
    let (id_column, rest) = rows.columns.split_at_mut(1);
    let (Column::Text(ids), [Column::Text(texts), Column::Score(fractions), spans @ ..]) = (&mut id_column[0], rest)
    else {
        return Err(PipelineError::Usage("internal error: the document table's columns".into()));
    };
    let id = id_text(&doc.id);
    ids.append_value(&id);
    texts.append_value(text);
    // Rounded as the JSON Lines output rounds it.
    fractions.append_value((fraction * 1e6).round() / 1e6);
    if let [spans] = spans {
        spans.append_spans(Some(duplicate_spans(text, units, verdicts)));
    }
    rows.added(id.len() + text.len());
    if rows.full() { out.write_rows(rows) } else { Ok(()) }
}

/// The text of the kept units (`text` may be shorter than the units cover: see [`line_text`]).
fn kept_text(text: &str, units: &[Range<usize>], verdicts: &[UnitVerdict]) -> String {
    units.iter().zip(verdicts).filter(|(_, v)| !v.removed()).map(|(r, _)| &text[clip(r, text.len())]).collect()
}

/// A unit's range within the first `len` bytes of its text.
fn clip(range: &Range<usize>, len: usize) -> Range<usize> {
    range.start.min(len)..range.end.min(len)
}

/// A plain-text document — a line — without the `\r` of a CRLF line end:
/// the text `--strip` writes out of (ending it with `\n`) and attribute
/// offsets count in. The `\r` is the last unit's last byte.
pub(crate) fn line_text(text: &str) -> &str {
    text.strip_suffix('\r').unwrap_or(text)
}

/// Writes a document's attributes: the units `--strip` removes, as
/// character spans, and its duplicate share. When `--strip` drops the
/// document whole (no unit with a token kept), every unit is listed and the
/// share is 1, so cutting the spans leaves nothing, as `--strip` does.
fn write_attributes(
    file: &mut AttributesFile,
    doc: &Doc,
    verdicts: &[UnitVerdict],
    exact: &[bool],
) -> Result<(), PipelineError> {
    let (text, units) = match &doc.body {
        Body::Jsonl { text, units, .. } => (text.as_str(), units),
        Body::Text { text, units } => (line_text(text), units),
        Body::Vertical { .. } => return Err(vertical_attributes("a vertical document")),
    };
    let whole = nothing_kept(&doc.unit_tokens, verdicts);
    let spans = units
        .iter()
        .zip(&doc.unit_tokens)
        .zip(verdicts.iter().zip(exact))
        .filter(|(_, (v, _))| whole || v.removed())
        .map(|((range, &tokens), (v, &x))| (clip(range, text.len()), span_score(tokens, v, x)))
        .filter(|(range, _)| !range.is_empty());
    let (spans, chars) = char_spans(text, spans);
    let fraction = if whole { 1.0 } else { removed_share(&doc.unit_tokens, verdicts) };
    file.write(&doc.id, &spans, chars, fraction)
}

/// A removed unit's score: the share of its tokens covered by n-grams seen
/// before; 1 when the exact test marked it (its whole text repeats); 0 for
/// a unit without tokens.
fn span_score(tokens: u32, verdict: &UnitVerdict, exact: bool) -> f64 {
    match (exact, tokens) {
        (true, _) => 1.0,
        (false, 0) => 0.0,
        (false, t) => f64::from(verdict.covered.min(t)) / f64::from(t),
    }
}

/// The share of a document's tokens in removed units.
fn removed_share(unit_tokens: &[u32], verdicts: &[UnitVerdict]) -> f64 {
    let tokens: u64 = unit_tokens.iter().map(|&t| u64::from(t)).sum();
    let removed: u64 = unit_tokens.iter().zip(verdicts).filter(|(_, v)| v.removed()).map(|(&t, _)| u64::from(t)).sum();
    if tokens == 0 { 0.0 } else { removed as f64 / tokens as f64 }
}

/// Character offsets `[start, end)` of the removed units, adjacent ones merged.
fn duplicate_spans(text: &str, units: &[Range<usize>], verdicts: &[UnitVerdict]) -> Vec<[u64; 2]> {
    let mut spans: Vec<[u64; 2]> = Vec::new();
    // Characters are counted up to the end of the last removed unit: none
    // in a document kept whole (most of them).
    let Some(last) = verdicts.iter().rposition(UnitVerdict::removed) else { return spans };
    let mut chars = 0u64;
    let mut at = 0usize;
    for (r, v) in units.iter().zip(verdicts).take(last + 1) {
        chars += text[at..r.start].chars().count() as u64;
        let len = text[r.clone()].chars().count() as u64;
        if v.removed() {
            match spans.last_mut() {
                Some(last) if last[1] == chars => last[1] = chars + len,
                _ => spans.push([chars, chars + len]),
            }
        }
        chars += len;
        at = r.end;
    }
    spans
}
