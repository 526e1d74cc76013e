//! `overlap`: how much of each query document occurs in a reference corpus
//! (benchmark decontamination, derived-text detection).
//!
//! Query and reference are indexed as one corpus, the query's documents
//! first, so an n-gram that occurs in both occurs twice at least and is in
//! the duplicate-only index ([`crate::index`]) with all its occurrences:
//! the index is exact (keys are word IDs, not hashes), so what follows is
//! too, with no false positive and no miss.
//!
//! 1. **The duplicate-only index** of query + reference.
//! 2. **Shared n-grams**: the index is read in n-gram order; an n-gram with
//!    an occurrence on each side is *shared*. Each of its query occurrences
//!    goes, as (query document, position), into an out-of-core sort
//!    ([`UnitSort`]); each reference occurrence adds one to its document's
//!    count. With `--top K`, each query occurrence also goes with each
//!    distinct reference document holding the n-gram, as (query document,
//!    reference document, position), into a second sort.
//! 3. **Merges**: the first sort, merged, is every found position of the
//!    query in corpus order (a file of 8 bytes each); the second gives, per
//!    (query, reference) pair, the query tokens the reference covers, of
//!    which each query document keeps its K best (a file of 12 bytes each).
//! 4. **Rows**: one per query document, in corpus order, from the document
//!    table, the found positions and the best references (with `--spans`,
//!    the query is read once more for character offsets); then the marked
//!    reference documents, and with `--drop-reference` the reference read
//!    once more and written without them (as `dedup --strip --unit doc`).
//!
//! Memory is the index's; the shared n-grams' sorts take what the document
//! table and the reference's counts (4 bytes a document) leave. The second
//! sort holds one entry per query position and reference document sharing
//! its n-gram: an n-gram common to many reference documents multiplies it,
//! on disk, not in memory.

use std::collections::HashSet;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use dupgram_corpus::{Batch, CorpusReader, Input};
use dupgram_dedup::{UnitKind, UnitVerdict};
use dupgram_lexicon::Tokenizer;
use dupgram_merge::MergeSink;
use dupgram_runs::RunReader;
use serde::Serialize;

use crate::dedup::{DedupOutput, line_text};
use crate::index::{DocPastTable, IndexJob, IndexStats, StreamedIndex, index_fraction};
use crate::ngrams::{NgramConfig, Reread, zstd_need};
use crate::span::token_ranges;
use dupgram_jobkit::attributes::char_spans;
use dupgram_jobkit::control::Control;
use dupgram_jobkit::doc_stream::{Body, DocStream, InputStamps, Item};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, human_bytes, peak_rss};
use dupgram_jobkit::output::{OutputFile, push_decimal, push_tsv_field};
use dupgram_jobkit::scratch::Scratch;
use dupgram_jobkit::table::{Column, Rows};
use dupgram_jobkit::unit_sort::UnitSort;

/// Run tags of the two sorts.
const FOUND_RUNS: u64 = 0x0E7A_0001;
const TOP_RUNS: u64 = 0x0E7A_0002;

/// What to measure, and how.
#[derive(Debug, Clone)]
pub struct OverlapConfig {
    /// The query's inputs, then the reference's; tokenisation, n, memory, threads.
    pub base: NgramConfig,
    /// How many of `base.inputs` are the query's.
    pub query_inputs: usize,
    /// Reference documents listed per query document, those covering most of it.
    pub top: usize,
    /// Each query document's covered token ranges (and character offsets).
    pub spans: bool,
}

/// How the per-query rows are written (a Parquet table when the file's name says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlapFormat {
    Tsv,
    Jsonl,
}

/// Where the results go.
pub struct OverlapOutput<'a> {
    /// A row per query document.
    pub queries: &'a mut OutputFile,
    pub format: OverlapFormat,
    /// `id<TAB>ngrams_found` of each reference document holding a query n-gram.
    pub marks: Option<&'a mut OutputFile>,
    /// The reference without those documents, in its own format.
    pub kept_reference: Option<&'a mut OutputFile>,
}

/// What a run found, and what it cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OverlapStats {
    pub n: usize,
    pub top: usize,
    pub query_documents: u64,
    pub query_tokens: u64,
    /// N-gram positions of the query.
    pub query_ngrams: u64,
    /// Query n-gram positions whose n-gram occurs in the reference.
    pub ngrams_found: u64,
    /// Query tokens inside at least one found n-gram.
    pub covered_tokens: u64,
    /// Query documents with at least one n-gram found.
    pub query_documents_found: u64,
    pub reference_documents: u64,
    pub reference_tokens: u64,
    /// Reference documents holding an n-gram of the query.
    pub reference_documents_found: u64,
    /// Reference n-gram positions whose n-gram occurs in the query.
    pub reference_ngrams_found: u64,
    /// Distinct n-grams in both.
    pub shared_ngrams: u64,
    /// (query position, reference document) entries sorted for `--top`.
    pub top_entries: u64,
    /// Reference documents written with `--drop-reference`.
    pub reference_documents_kept: Option<u64>,
    pub index: IndexStats,
    pub seconds: OverlapSeconds,
    pub peak_rss: u64,
    pub memory_budget: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct OverlapSeconds {
    pub index: f64,
    pub shared: f64,
    pub queries: f64,
    pub reference: f64,
    pub total: f64,
}

impl OverlapConfig {
    fn check(&self) -> Result<(), PipelineError> {
        let n = self.base.n;
        if n == 0 || n > 32 {
            return Err(PipelineError::Usage(format!("-n must be between 1 and 32, not {n}")));
        }
        if self.query_inputs == 0 || self.query_inputs >= self.base.inputs.len() {
            return Err(PipelineError::Usage("overlap needs query inputs and --reference inputs".into()));
        }
        Ok(())
    }
}

/// Measures each query document against the reference.
pub fn overlap(
    config: &OverlapConfig,
    control: &Control,
    mut out: OverlapOutput,
) -> Result<OverlapStats, PipelineError> {
    config.check()?;
    // `--drop-reference` reads the reference again; these say it read what the index did.
    let stamps = InputStamps::of(&config.base.inputs);
    let started = Instant::now();
    let base = &config.base;
    let plan = MemoryPlan::new(base.memory, base.threads, zstd_need(&base.inputs)?)
        .map_err(|what| PipelineError::Memory { budget: human_bytes(base.memory), what })?;
    let work = Scratch::create(&base.tmp_dir, "dupgram-overlap")?;
    let index = IndexJob::new(base, None, control, plan, work.path());
    let mut stats = OverlapStats { n: base.n, top: config.top, memory_budget: base.memory, ..OverlapStats::default() };
    let built = index.build_streamed(false, None, Reread::Text, true, &mut stats.index)?;
    index_fraction(&mut stats.index, &built.table, base.n as u32);
    let queries = count_documents(&built.inputs[..config.query_inputs], base, control)?;
    if queries > built.table.len() as u64 {
        return Err(PipelineError::Changed(format!(
            "the query holds {queries} documents now, the index {} in all",
            built.table.len()
        )));
    }
    stats.seconds.index = started.elapsed().as_secs_f64();
    let job = OverlapJob { config, control, index: &index, built: &built, queries: queries as u32, plan, stamps };
    let t = Instant::now();
    let shared = job.find_shared(&mut stats)?;
    stats.seconds.shared = t.elapsed().as_secs_f64();
    let t = Instant::now();
    job.write_queries(&shared, &mut out, &mut stats)?;
    stats.seconds.queries = t.elapsed().as_secs_f64();
    let t = Instant::now();
    job.write_reference(&shared.reference_found, &mut out, &mut stats)?;
    stats.seconds.reference = t.elapsed().as_secs_f64();
    drop(shared);
    drop(built);
    drop(work);
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

/// Documents of `inputs`, numbered as the index pass numbered them.
fn count_documents(inputs: &[Input], base: &NgramConfig, control: &Control) -> Result<u64, PipelineError> {
    control.start_pass("counting query documents", inputs.iter().map(Input::size).sum());
    let mut reader = CorpusReader::new(inputs.to_vec(), base.read.clone(), control.progress.bytes.clone());
    let mut batch = Batch::default();
    while reader.fill(&mut batch, 1 << 20)? {
        if control.interrupted() {
            return Err(PipelineError::Interrupted);
        }
    }
    Ok(reader.stats().documents)
}

struct OverlapJob<'a> {
    config: &'a OverlapConfig,
    control: &'a Control,
    index: &'a IndexJob<'a>,
    built: &'a StreamedIndex,
    /// Documents `0..queries` are the query's, the rest the reference's.
    queries: u32,
    plan: MemoryPlan,
    /// The input files as they were before the index read them.
    stamps: InputStamps,
}

/// What step 2 and 3 found.
struct Shared {
    /// Every found query position in corpus order: (document u32, position u32).
    found: PathBuf,
    /// Per query document, its best references: (query u32, reference u32, covered u32).
    top: Option<PathBuf>,
    /// N-gram positions of each reference document whose n-gram the query holds.
    reference_found: Vec<u32>,
}

impl OverlapJob<'_> {
    fn work(&self) -> &Path {
        self.index.work
    }

    /// Steps 2 and 3.
    fn find_shared(&self, stats: &mut OverlapStats) -> Result<Shared, PipelineError> {
        let table = &self.built.table;
        let docs = table.len() as u64;
        let q = self.queries;
        let mut reference_found = vec![0u32; (docs - u64::from(q)) as usize];
        let held = table.bytes() + reference_found.len() as u64 * 4;
        let room = self.index.working().saturating_sub(held);
        let top_k = self.config.top;
        let sorts = if top_k > 0 { 2 } else { 1 };
        let chunk = self.config.base.limits.chunk_ngrams;
        let found_dir = self.sort_dir("found")?;
        let top_dir = self.sort_dir("top")?;
        let mut found = UnitSort::new(&found_dir, room / sorts, chunk, FOUND_RUNS)?;
        let mut top = if top_k > 0 { Some(UnitSort::new(&top_dir, room / sorts, chunk, TOP_RUNS)?) } else { None };
        self.control.start_pass("finding shared n-grams", Some(stats.index.duplicate_ngrams));
        let mut references: Vec<u32> = Vec::new();
        let mut walked = 0u64;
        for part in &self.built.merged.parts {
            let name = part.path.display().to_string();
            let mut reader = RunReader::open(&part.path)?;
            while reader.advance()? {
                walked += 1;
                if walked.is_multiple_of(65536) {
                    if self.control.interrupted() {
                        return Err(PipelineError::Interrupted);
                    }
                    self.control.progress.bytes.store(walked, Ordering::Relaxed);
                }
                let occurrences = reader.occurrences();
                let (mut in_query, mut in_reference) = (false, false);
                for &o in occurrences {
                    let doc = o >> 32;
                    if doc >= docs {
                        return Err(DocPastTable { doc, first_doc: 0, docs }.in_file(&name));
                    }
                    in_query |= doc < u64::from(q);
                    in_reference |= doc >= u64::from(q);
                }
                if !(in_query && in_reference) {
                    continue;
                }
                stats.shared_ngrams += 1;
                references.clear();
                for &o in occurrences {
                    let (doc, pos) = ((o >> 32) as u32, o as u32);
                    if doc < q {
                        found.push([doc, pos, 0, 0], 0)?;
                    } else {
                        let count = &mut reference_found[(doc - q) as usize];
                        *count = count.saturating_add(1);
                        references.push(doc);
                    }
                }
                let Some(top) = top.as_mut() else { continue };
                references.sort_unstable();
                references.dedup();
                for &o in occurrences.iter().filter(|&&o| o >> 32 < u64::from(q)) {
                    for &r in &references {
                        top.push([(o >> 32) as u32, r, o as u32, 0], 0)?;
                    }
                    stats.top_entries += references.len() as u64;
                }
            }
        }
        let fan_in = self.index.fan_in(held);
        self.control.start_pass("gathering found positions", None);
        let sorted = found.finish()?;
        stats.index.bytes_spilled += sorted.spilled;
        let found_path = self.work().join("found.bin");
        let mut sink = RecordSink::create(&found_path)?;
        sorted.merge(fan_in, &mut sink, self.control)?;
        sink.finish()?;
        let top_path = match top {
            Some(sort) => {
                self.control.start_pass("ranking references", None);
                let sorted = sort.finish()?;
                stats.index.bytes_spilled += sorted.spilled;
                let path = self.work().join("top.bin");
                let mut sink = TopSink::new(RecordSink::create(&path)?, self.config.base.n as u32, top_k);
                sorted.merge(fan_in, &mut sink, self.control)?;
                sink.finish()?;
                Some(path)
            }
            None => None,
        };
        Ok(Shared { found: found_path, top: top_path, reference_found })
    }

    fn sort_dir(&self, name: &str) -> Result<PathBuf, PipelineError> {
        let dir = self.work().join(name);
        std::fs::create_dir(&dir).map_err(|e| PipelineError::io(&dir, e))?;
        Ok(dir)
    }

    /// Step 4: a row per query document.
    fn write_queries(
        &self,
        shared: &Shared,
        out: &mut OverlapOutput,
        stats: &mut OverlapStats,
    ) -> Result<(), PipelineError> {
        let table = &self.built.table;
        let n = self.config.base.n as u32;
        let inputs = &self.built.inputs[..self.config.query_inputs];
        self.control.start_pass("writing query rows", inputs.iter().map(Input::size).sum());
        let mut found = RecordReader::<8>::open(&shared.found)?;
        let mut top = shared.top.as_deref().map(RecordReader::<12>::open).transpose()?;
        let mut texts = self.config.spans.then(|| QueryTexts::new(self, inputs));
        let mut rows = QueryRows::new(out.queries, out.format, self.config.top, self.config.spans)?;
        let (mut positions, mut best): (Vec<[u32; 2]>, Vec<[u32; 3]>) = (Vec::new(), Vec::new());
        for doc in 0..self.queries {
            if doc % 4096 == 0 && self.control.interrupted() {
                return Err(PipelineError::Interrupted);
            }
            let tokens = table.tokens[doc as usize];
            found.take(doc, &mut positions)?;
            best.clear();
            if let Some(top) = top.as_mut() {
                top.take(doc, &mut best)?;
            }
            let covered = covered_ranges(positions.iter().map(|r| r[1]), n);
            let ids = best.iter().map(|r| table.id(r[1])).collect::<Result<Vec<_>, PipelineError>>()?;
            let named: Vec<(&str, u32)> = ids.iter().zip(&best).map(|(id, r)| (id.as_ref(), r[2])).collect();
            let id = table.id(doc)?;
            let chars = match texts.as_mut() {
                Some(texts) => texts.next(tokens, &covered)?,
                None => None,
            };
            let row = QueryRow {
                id: &id,
                tokens,
                ngrams: tokens.saturating_sub(n - 1),
                found: positions.len() as u64,
                covered: &covered,
                top: &named,
                chars: chars.as_deref(),
            };
            rows.write(&row, out.queries)?;
            stats.query_documents += 1;
            stats.query_tokens += u64::from(tokens);
            stats.query_ngrams += u64::from(row.ngrams);
            stats.ngrams_found += row.found;
            stats.covered_tokens += row.covered_tokens();
            stats.query_documents_found += u64::from(row.found > 0);
        }
        if let Some(texts) = texts {
            texts.finish()?;
        }
        rows.finish(out.queries)?;
        if !found.at_end() || top.as_ref().is_some_and(|top| !top.at_end()) {
            return Err(PipelineError::Changed("found positions past the query's last document".into()));
        }
        Ok(())
    }

    /// Step 4, the reference side: its marks and, with `--drop-reference`, its unmarked documents.
    fn write_reference(
        &self,
        reference_found: &[u32],
        out: &mut OverlapOutput,
        stats: &mut OverlapStats,
    ) -> Result<(), PipelineError> {
        let table = &self.built.table;
        let q = self.queries as usize;
        stats.reference_documents = reference_found.len() as u64;
        stats.reference_tokens = table.tokens[q..].iter().map(|&t| u64::from(t)).sum();
        let mut line = Vec::with_capacity(256);
        if let Some(marks) = out.marks.as_deref_mut() {
            marks.write_all(b"id\tngrams_found\n")?;
        }
        for (i, &count) in reference_found.iter().enumerate() {
            if count == 0 {
                continue;
            }
            stats.reference_documents_found += 1;
            stats.reference_ngrams_found += u64::from(count);
            if let Some(marks) = out.marks.as_deref_mut() {
                line.clear();
                push_tsv_field(&mut line, &table.id((q + i) as u32)?);
                line.push(b'\t');
                push_decimal(&mut line, u64::from(count));
                line.push(b'\n');
                marks.write_all(&line)?;
            }
        }
        match out.kept_reference.as_deref_mut() {
            Some(kept) => self.drop_reference(reference_found, kept, stats),
            None => Ok(()),
        }
    }

    /// Reads the reference once more and writes the documents that share no n-gram with the query.
    fn drop_reference(
        &self,
        reference_found: &[u32],
        kept: &mut OutputFile,
        stats: &mut OverlapStats,
    ) -> Result<(), PipelineError> {
        let base = &self.config.base;
        let inputs = &self.built.inputs[self.config.query_inputs..];
        self.control.start_pass("writing the reference", inputs.iter().map(Input::size).sum());
        let mut stream = self.stream(inputs);
        // Each document's count is the table's, its text unchanged as the stamps show at the end.
        stream.counts_known = true;
        let mut out = DedupOutput::documents(kept);
        let mut writer = out.doc_writer(true, &base.read.text_field)?;
        // Only documents holding a query n-gram go: not those with no tokens.
        writer.keep_empty = true;
        let table = &self.built.table;
        let (mut doc, mut kept_documents) = (0usize, 0u64);
        while let Some(item) = stream.next_doc()? {
            let mut d = match item {
                Item::Passthrough(line) => {
                    out.passthrough(&mut writer, &line, stream.is_vertical())?;
                    continue;
                }
                Item::Doc(d) => d,
            };
            if doc % 1024 == 0 && self.control.interrupted() {
                return Err(PipelineError::Interrupted);
            }
            let number = self.queries as usize + doc;
            let (Some(&expected), Some(&found)) = (table.tokens.get(number), reference_found.get(doc)) else {
                return Err(PipelineError::Changed(format!(
                    "the reference holds more documents now than the {} it held when it was indexed",
                    reference_found.len()
                )));
            };
            // A vertical document is counted as its lines are read: its count
            // must be the index's. Others take the index's count, their text
            // unchanged as the stamps show at the end.
            let tokens: u32 = d.unit_tokens.iter().sum();
            if matches!(d.body, Body::Vertical { .. }) && tokens != expected {
                return Err(PipelineError::Changed(format!(
                    "reference document {} has {tokens} tokens now and had {expected} when it was indexed",
                    doc + 1
                )));
            }
            d.count_as(expected);
            let verdicts: Vec<UnitVerdict> = d
                .unit_tokens
                .iter()
                .map(|_| UnitVerdict { covered: 0, duplicate: found > 0, smoothed: false })
                .collect();
            out.document(&mut writer, &d, &verdicts, &vec![false; verdicts.len()])?;
            kept_documents += u64::from(found == 0);
            self.control.progress.bytes.store(stream.position(), Ordering::Relaxed);
            doc += 1;
        }
        self.stamps.check(&self.config.base.inputs)?;
        out.finish_documents(&mut writer)?;
        stats.reference_documents_kept = Some(kept_documents);
        if doc != reference_found.len() {
            return Err(PipelineError::Changed(format!(
                "{} reference documents were indexed, {doc} read back",
                reference_found.len()
            )));
        }
        Ok(())
    }

    /// Whole documents of `inputs`, tokenised as they were indexed.
    fn stream<'s>(&'s self, inputs: &'s [Input]) -> DocStream<'s> {
        DocStream::new(
            inputs,
            &self.config.base.read,
            self.plan,
            UnitKind::Document,
            (self.built.norm, &self.built.stopwords),
            (self.index.working() / 8) as usize,
            crossbeam_channel::never(),
        )
    }
}

/// The token ranges `[start, end)` covered by n-grams at `positions` (ascending).
fn covered_ranges(positions: impl Iterator<Item = u32>, n: u32) -> Vec<[u32; 2]> {
    let mut ranges: Vec<[u32; 2]> = Vec::new();
    for p in positions {
        let end = p + n;
        match ranges.last_mut() {
            Some(last) if p <= last[1] => last[1] = last[1].max(end),
            _ => ranges.push([p, end]),
        }
    }
    ranges
}

/// One query document's results.
struct QueryRow<'a> {
    id: &'a str,
    tokens: u32,
    ngrams: u32,
    found: u64,
    covered: &'a [[u32; 2]],
    /// The best references' IDs and the tokens each covers, best first.
    top: &'a [(&'a str, u32)],
    /// The covered ranges in characters of the text, when it has them.
    chars: Option<&'a [[u64; 2]]>,
}

impl QueryRow<'_> {
    fn covered_tokens(&self) -> u64 {
        self.covered.iter().map(|r| u64::from(r[1] - r[0])).sum()
    }

    fn coverage(&self) -> f64 {
        if self.tokens == 0 { 0.0 } else { self.covered_tokens() as f64 / f64::from(self.tokens) }
    }
}

/// The query's texts, read once more in order, for the character offsets of covered ranges.
struct QueryTexts<'a> {
    stream: DocStream<'a>,
    tokenizer: Tokenizer,
    stopwords: HashSet<String>,
    bytes: Vec<std::ops::Range<usize>>,
    read: u64,
}

impl<'a> QueryTexts<'a> {
    fn new(job: &'a OverlapJob<'a>, inputs: &'a [Input]) -> Self {
        let mut stream = job.stream(inputs);
        // `next` tokenises each text for its ranges, and checks their number:
        // counting its tokens before that would tokenise it twice.
        stream.counts_known = true;
        QueryTexts {
            stream,
            tokenizer: Tokenizer::new(job.built.norm),
            stopwords: job.built.stopwords.iter().cloned().collect(),
            bytes: Vec::new(),
            read: 0,
        }
    }

    /// The next document's `covered` token ranges in characters; none for a vertical document.
    fn next(&mut self, tokens: u32, covered: &[[u32; 2]]) -> Result<Option<Vec<[u64; 2]>>, PipelineError> {
        let doc = loop {
            match self.stream.next_doc()? {
                Some(Item::Doc(d)) => break d,
                Some(Item::Passthrough(_)) => continue,
                None => {
                    return Err(PipelineError::Changed(format!(
                        "the query ended after {} documents, fewer than were indexed",
                        self.read
                    )));
                }
            }
        };
        self.read += 1;
        let text = match &doc.body {
            Body::Jsonl { text, .. } => text.as_str(),
            Body::Text { text, .. } => line_text(text),
            Body::Vertical { .. } => {
                // Counted as its lines were read.
                let found: u32 = doc.unit_tokens.iter().sum();
                if found != tokens {
                    return Err(PipelineError::Changed(format!(
                        "query document {} has {found} tokens now and had {tokens} when it was indexed",
                        self.read
                    )));
                }
                return Ok(None);
            }
        };
        token_ranges(&mut self.tokenizer, &self.stopwords, text, &mut self.bytes);
        if self.bytes.len() != tokens as usize {
            return Err(PipelineError::Changed(format!(
                "query document {} has {} tokens in its text and {tokens} in the index",
                self.read,
                self.bytes.len()
            )));
        }
        let bytes = covered.iter().map(|r| (self.bytes[r[0] as usize].start..self.bytes[r[1] as usize - 1].end, 1.0));
        let (spans, _) = char_spans(text, bytes);
        Ok(Some(spans.iter().map(|s| [s.start, s.end]).collect()))
    }

    fn finish(mut self) -> Result<(), PipelineError> {
        loop {
            match self.stream.next_doc()? {
                Some(Item::Passthrough(_)) => continue,
                Some(Item::Doc(_)) => {
                    return Err(PipelineError::Changed(format!(
                        "the query holds more documents now than the {} it held when it was indexed",
                        self.read
                    )));
                }
                None => return Ok(()),
            }
        }
    }
}

/// Writes the rows: TSV with a header, JSON Lines, or a Parquet table.
///
/// Columns: `id`, `tokens`, `ngrams`, `ngrams_found`, `covered_tokens`,
/// `coverage`; with `--top K`, `ref_1`, `covered_1` … `ref_K`, `covered_K`
/// (JSON Lines: `top`, a list of `{"id", "covered_tokens"}`); with
/// `--spans`, `spans` and `char_spans`, `[start, end)` ranges in tokens and
/// in characters (TSV: `start-end` separated by spaces).
struct QueryRows {
    format: OverlapFormat,
    top: usize,
    spans: bool,
    table: Option<Rows>,
    line: Vec<u8>,
}

impl QueryRows {
    fn new(out: &mut OutputFile, format: OverlapFormat, top: usize, spans: bool) -> Result<Self, PipelineError> {
        let mut names: Vec<String> =
            ["id", "tokens", "ngrams", "ngrams_found", "covered_tokens", "coverage"].map(String::from).to_vec();
        for k in 1..=top {
            names.push(format!("ref_{k}"));
            names.push(format!("covered_{k}"));
        }
        if spans {
            names.push("spans".into());
            names.push("char_spans".into());
        }
        let table = if out.is_parquet() {
            let mut columns = vec![
                Column::text(),
                Column::count(),
                Column::count(),
                Column::count(),
                Column::count(),
                Column::score(),
            ];
            for _ in 0..top {
                columns.push(Column::text());
                columns.push(Column::count());
            }
            if spans {
                columns.push(Column::spans());
                columns.push(Column::spans());
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let rows = Rows::new(&names, columns);
            out.begin_table(rows.schema())?;
            Some(rows)
        } else {
            if format == OverlapFormat::Tsv {
                out.write_all(format!("{}\n", names.join("\t")).as_bytes())?;
            }
            None
        };
        Ok(QueryRows { format, top, spans, table, line: Vec::with_capacity(256) })
    }

    fn write(&mut self, row: &QueryRow, out: &mut OutputFile) -> Result<(), PipelineError> {
        if let Some(rows) = &mut self.table {
            return write_parquet_row(rows, row, self.top, self.spans, out);
        }
        self.line.clear();
        let line = &mut self.line;
        match self.format {
            OverlapFormat::Tsv => {
                use std::io::Write as _;
                push_tsv_field(line, row.id);
                let _ = write!(
                    line,
                    "\t{}\t{}\t{}\t{}\t{:.6}",
                    row.tokens,
                    row.ngrams,
                    row.found,
                    row.covered_tokens(),
                    row.coverage()
                );
                for k in 0..self.top {
                    line.push(b'\t');
                    if let Some(&(id, covered)) = row.top.get(k) {
                        push_tsv_field(line, id);
                        let _ = write!(line, "\t{covered}");
                    } else {
                        line.push(b'\t');
                    }
                }
                if self.spans {
                    line.push(b'\t');
                    push_tsv_ranges(line, row.covered.iter().map(|r| [u64::from(r[0]), u64::from(r[1])]));
                    line.push(b'\t');
                    push_tsv_ranges(line, row.chars.unwrap_or_default().iter().copied());
                }
                line.push(b'\n');
            }
            OverlapFormat::Jsonl => {
                let mut object = serde_json::Map::new();
                object.insert("id".into(), row.id.into());
                object.insert("tokens".into(), row.tokens.into());
                object.insert("ngrams".into(), row.ngrams.into());
                object.insert("ngrams_found".into(), row.found.into());
                object.insert("covered_tokens".into(), row.covered_tokens().into());
                object.insert("coverage".into(), rounded(row.coverage()).into());
                if self.top > 0 {
                    let top = row
                        .top
                        .iter()
                        .map(|&(id, covered)| serde_json::json!({"id": id, "covered_tokens": covered}))
                        .collect();
                    object.insert("top".into(), serde_json::Value::Array(top));
                }
                if self.spans {
                    object.insert("spans".into(), serde_json::json!(row.covered));
                    let chars = row.chars.map_or(serde_json::Value::Null, |c| serde_json::json!(c));
                    object.insert("char_spans".into(), chars);
                }
                serde_json::to_writer(&mut *line, &object).map_err(|e| PipelineError::Usage(e.to_string()))?;
                line.push(b'\n');
            }
        }
        out.write_all(&self.line)
    }

    fn finish(self, out: &mut OutputFile) -> Result<(), PipelineError> {
        match self.table {
            Some(mut rows) => out.write_rows(&mut rows),
            None => Ok(()),
        }
    }
}

/// A share as the TSV prints it (six decimals), for JSON too.
fn rounded(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn push_tsv_ranges(line: &mut Vec<u8>, ranges: impl Iterator<Item = [u64; 2]>) {
    for (i, [start, end]) in ranges.enumerate() {
        if i > 0 {
            line.push(b' ');
        }
        push_decimal(line, start);
        line.push(b'-');
        push_decimal(line, end);
    }
}

fn write_parquet_row(
    rows: &mut Rows,
    row: &QueryRow,
    top: usize,
    spans: bool,
    out: &mut OutputFile,
) -> Result<(), PipelineError> {
    let bad = || PipelineError::Usage("internal error: the overlap table's columns".into());
    let mut columns = rows.columns.iter_mut();
    let mut bytes = row.id.len();
    let (
        Some(Column::Text(id)),
        Some(Column::Count(tokens)),
        Some(Column::Count(ngrams)),
        Some(Column::Count(found)),
        Some(Column::Count(covered)),
        Some(Column::Score(coverage)),
    ) = (columns.next(), columns.next(), columns.next(), columns.next(), columns.next(), columns.next())
    else {
        return Err(bad());
    };
    id.append_value(row.id);
    tokens.append_value(u64::from(row.tokens));
    ngrams.append_value(u64::from(row.ngrams));
    found.append_value(row.found);
    covered.append_value(row.covered_tokens());
    coverage.append_value(row.coverage());
    for k in 0..top {
        let (Some(Column::Text(name)), Some(Column::Count(count))) = (columns.next(), columns.next()) else {
            return Err(bad());
        };
        let (r, c) = row.top.get(k).copied().unwrap_or(("", 0));
        name.append_value(r);
        count.append_value(u64::from(c));
        bytes += r.len();
    }
    if spans {
        let (Some(tokens), Some(chars)) = (columns.next(), columns.next()) else { return Err(bad()) };
        let token_spans = row.covered.iter().map(|r| [u64::from(r[0]), u64::from(r[1])]);
        if !tokens.append_spans(Some(token_spans)) || !chars.append_spans(row.chars.map(|c| c.iter().copied())) {
            return Err(bad());
        }
        bytes += 16 * row.covered.len();
    }
    rows.added(bytes);
    if rows.full() { out.write_rows(rows) } else { Ok(()) }
}

/// Writes the keys a merge hands it as records of little-endian u32s: the
/// found positions, (document, position), 8 bytes each.
struct RecordSink {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
}

impl RecordSink {
    fn create(path: &Path) -> Result<Self, PipelineError> {
        let file = std::fs::File::create(path).map_err(|e| PipelineError::io(path, e))?;
        Ok(RecordSink { out: BufWriter::with_capacity(1 << 16, file), path: path.to_owned() })
    }

    fn record(&mut self, words: &[u32]) -> Result<(), PipelineError> {
        for w in words {
            self.out.write_all(&w.to_le_bytes()).map_err(|e| PipelineError::io(&self.path, e))?;
        }
        Ok(())
    }

    fn finish(self) -> Result<(), PipelineError> {
        let RecordSink { out, path } = self;
        out.into_inner().map_err(|e| PipelineError::io(&path, e.into_error()))?;
        Ok(())
    }
}

impl MergeSink for RecordSink {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, _units: &[u64]) -> Result<(), PipelineError> {
        self.record(&key[..2])
    }
}

/// Adds up, per (query, reference) pair, the query tokens the reference
/// covers — keys arrive as (query, reference, position), ascending — and
/// keeps each query document's `k` best: most tokens first, then the
/// reference document first in corpus order.
struct TopSink {
    out: RecordSink,
    n: u32,
    k: usize,
    /// The pair being added up: query, reference, tokens so far, end of the last n-gram.
    pair: Option<(u32, u32, u32, u32)>,
    /// The current query document's candidates: (reference, covered).
    best: Vec<(u32, u32)>,
}

impl TopSink {
    fn new(out: RecordSink, n: u32, k: usize) -> Self {
        TopSink { out, n, k, pair: None, best: Vec::new() }
    }

    fn close_pair(&mut self) {
        if let Some((_, reference, covered, _)) = self.pair.take() {
            self.best.push((reference, covered));
            if self.best.len() >= 2 * self.k.max(64) {
                self.rank();
            }
        }
    }

    fn rank(&mut self) {
        self.best.sort_unstable_by_key(|&(reference, covered)| (std::cmp::Reverse(covered), reference));
        self.best.truncate(self.k);
    }

    fn close_query(&mut self, query: u32) -> Result<(), PipelineError> {
        self.rank();
        for i in 0..self.best.len() {
            let (reference, covered) = self.best[i];
            self.out.record(&[query, reference, covered])?;
        }
        self.best.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<(), PipelineError> {
        if let Some((query, ..)) = self.pair {
            self.close_pair();
            self.close_query(query)?;
        }
        self.out.finish()
    }
}

impl MergeSink for TopSink {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, _units: &[u64]) -> Result<(), PipelineError> {
        let (query, reference, pos) = (key[0], key[1], key[2]);
        let end = pos + self.n;
        match &mut self.pair {
            Some((q, r, covered, last)) if *q == query && *r == reference => {
                *covered += end - pos.max(*last);
                *last = end;
                return Ok(());
            }
            Some((q, ..)) => {
                let previous = *q;
                self.close_pair();
                if previous != query {
                    self.close_query(previous)?;
                }
            }
            None => {}
        }
        self.pair = Some((query, reference, self.n, end));
        Ok(())
    }
}

/// Reads a file of `B`-byte records (little-endian u32s, the first the
/// query document) in order, a document's records at a time.
struct RecordReader<const B: usize> {
    input: BufReader<std::fs::File>,
    path: PathBuf,
    next: Option<[u8; B]>,
}

impl<const B: usize> RecordReader<B> {
    fn open(path: &Path) -> Result<Self, PipelineError> {
        let file = std::fs::File::open(path).map_err(|e| PipelineError::io(path, e))?;
        let mut reader =
            RecordReader { input: BufReader::with_capacity(1 << 16, file), path: path.to_owned(), next: None };
        reader.advance()?;
        Ok(reader)
    }

    fn advance(&mut self) -> Result<(), PipelineError> {
        let mut record = [0u8; B];
        self.next = match self.input.read_exact(&mut record) {
            Ok(()) => Some(record),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => return Err(PipelineError::io(&self.path, e)),
        };
        Ok(())
    }

    fn word(record: &[u8; B], i: usize) -> u32 {
        u32::from_le_bytes([record[4 * i], record[4 * i + 1], record[4 * i + 2], record[4 * i + 3]])
    }

    /// The records of document `doc` (their words), in file order.
    fn take<const W: usize>(&mut self, doc: u32, into: &mut Vec<[u32; W]>) -> Result<(), PipelineError> {
        into.clear();
        while let Some(record) = self.next {
            if Self::word(&record, 0) != doc {
                break;
            }
            into.push(std::array::from_fn(|i| Self::word(&record, i)));
            self.advance()?;
        }
        Ok(())
    }

    /// Whether every record has been taken.
    fn at_end(&self) -> bool {
        self.next.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covered_ranges_join_overlapping_and_touching_ngrams() {
        assert_eq!(covered_ranges([0, 1, 5, 8, 20].into_iter(), 3), vec![[0, 4], [5, 11], [20, 23]]);
        assert_eq!(covered_ranges(std::iter::empty(), 3), Vec::<[u32; 2]>::new());
    }

    #[test]
    fn the_top_sink_adds_up_each_pair_and_keeps_the_best() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("top.bin");
        let mut sink = TopSink::new(RecordSink::create(&path).unwrap(), 3, 2);
        // Query 0: reference 5 covers 0..4 (positions 0, 1), reference 6 covers 0..3, reference 7 covers 0..6.
        for key in [[0, 5, 0], [0, 5, 1], [0, 6, 0], [0, 7, 0], [0, 7, 3], [2, 9, 4]] {
            sink.accept(&[key[0], key[1], key[2], 0], 1, &[0]).unwrap();
        }
        sink.finish().unwrap();
        let mut reader = RecordReader::<12>::open(&path).unwrap();
        let mut records: Vec<[u32; 3]> = Vec::new();
        reader.take(0, &mut records).unwrap();
        assert_eq!(records, vec![[0, 7, 6], [0, 5, 4]]);
        reader.take(1, &mut records).unwrap();
        assert!(records.is_empty());
        reader.take(2, &mut records).unwrap();
        assert_eq!(records, vec![[2, 9, 3]]);
        assert!(reader.at_end());
    }
}
