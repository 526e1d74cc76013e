//! The duplicate-only index: built by `dupgram pairs` and `dupgram dedup` alike.
//!
//! 1. **Lexicon pass** (the count's first pass): the lexicon, the word
//!    streams with their documents' lists, and a sieve through which every
//!    repeated n-gram passes. With a saved duplicate list the lexicon comes
//!    from its file and the sieve is filled from the list.
//! 2. **Index pass**: every n-gram the sieve lets through is sorted, with its
//!    (document, position), into *postings* runs — with two threads or more,
//!    a run for each of two buckets of n-grams, cut by first word
//!    ([`FirstWords::split`]: about as many n-grams in each). It reads the
//!    word streams, in parts by first word when the corpus is more than one
//!    sieve holds ([`streamed`]); from a saved duplicate list, and in the
//!    cluster's tasks (a shard of the corpus each), it reads the text
//!    ([`IndexJob::index_pass`]).
//! 3. **Index merge**: n-grams with two occurrences or more form the index,
//!    postings runs in n-gram order (an n-gram's ID is its rank there); the
//!    sieve's false positives meet their single occurrence and vanish. Each
//!    bucket is merged on a thread of its own into a file of its own (an
//!    [`IndexPart`]: its IDs count on from the bucket before): the merge
//!    reads and writes every duplicate occurrence, and on one thread it left
//!    the second core idle for a fifth of a `dedup` run. Keys sort by their
//!    first word first, so the parts together are the one-bucket index, ID
//!    for ID: the output does not depend on the buckets.
//!
//! The document-major view of the index ([`DocBlock`]) is loaded in blocks
//! of documents that fit in memory ([`BlockCache`]); when more than two
//! blocks are needed and one has been built, the index is cut into a file
//! per block (run files of the `dupgram-runs` format, postings kind, `n` = 1:
//! the key is an n-gram's ID) so later blocks do not decode all of it again;
//! when nothing reads the index after the cache (the scoring of `pairs`
//! and the decisions of `dedup` in one process, not the score tasks of a
//! staged job), each of its files goes once the cut has read it
//! ([`AfterCut`]), so the index and its copy by block never take the
//! disk together.
//! `dupgram dedup` can
//! instead have the merge gather each document's occurrences in memory as
//! it goes ([`DocLists`]), when they fit: the index is then never written
//! and read back. Both buckets' merges then feed one gathering thread; the
//! second bucket's IDs carry a tag bit until the first bucket's count is
//! known, and are numbered on from it before the lists are used. And when
//! its documents are too many for the tables those ways hold (the merge's
//! per-document totals, the block plan), the merge sorts every occurrence
//! by document on disk instead ([`by_doc`]), and nothing in memory grows
//! with the documents.

use std::io::{BufRead, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dupgram_chunker::{KeyLayout, PostingChunk};
use dupgram_corpus::{Batch, CorpusError, Input};
use dupgram_dedup::NgramAt;
use dupgram_index::{DocBlock, DocBlockBuilder};
use dupgram_lexicon::{Lexicon, Lookup, Scope, word_hash};
use dupgram_merge::{MergeSink, RunFile};
use dupgram_runs::{RunHeader, RunReader, RunWriter};
use dupgram_sieve::{DelayLine, RollingFingerprint, Sieve, Slot};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::doc_ids::{DocIds, IdsKept, ListedIds};
use crate::first_words::FirstWords;
use crate::ngrams::{NgramConfig, NgramStats, Reread, StreamDocs};
use crate::scan::{ScanSink, Scanner};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::feed::{BatchWorker, Source, feed};
use dupgram_jobkit::memory::{MemoryPlan, human_bytes, open_file_allowance};
use dupgram_jobkit::merging::merge_in;
use dupgram_jobkit::parted::PartedRuns;
use dupgram_jobkit::unit_sort::UnitSort;

mod by_doc;
mod streamed;
pub(crate) use by_doc::ByDoc;
pub(crate) use streamed::StreamedIndex;
use streamed::table_ids;

/// A saved duplicate list to score with, instead of counting again.
#[derive(Debug, Clone)]
pub struct DupsInput {
    /// `dupgram ngrams` output: `words<TAB>count` lines (plain, .gz or .zst).
    pub dups: PathBuf,
    /// The lexicon saved with it.
    pub lexicon: PathBuf,
}

/// Copies standard input to `path`, compressed unless it already is, by the
/// rule and in the form of the lexicon pass's copy
/// (`dupgram_corpus::spool_compresses`, `dupgram_corpus::spool_encoder`),
/// at the level of a copy made before reading (`dupgram_corpus::COPY_LEVEL`).
fn copy_stdin(path: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut stdin = std::io::stdin().lock();
    if !dupgram_corpus::spool_compresses(stdin.fill_buf()?) {
        std::io::copy(&mut stdin, &mut out)?;
        return out.flush();
    }
    let mut encoder = dupgram_corpus::spool_encoder(out, dupgram_corpus::COPY_LEVEL)?;
    std::io::copy(&mut stdin, &mut encoder)?;
    encoder.finish()?.flush()
}

/// What building the index found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexStats {
    /// Seconds of the index pass (with the sieve's fills for its parts, which
    /// `first_pass.seconds.sieve` gives alone) and of the index merge (the
    /// lexicon pass is in `first_pass`).
    pub index_seconds: f64,
    pub merge_seconds: f64,
    pub documents: u64,
    pub tokens: u64,
    pub duplicate_ngrams: u64,
    pub duplicate_occurrences: u64,
    /// N-gram positions of the corpus: the size of a full index.
    pub all_ngrams: u64,
    /// `duplicate_occurrences / all_ngrams`: how much smaller the duplicate-only index is.
    pub index_fraction: f64,
    pub bytes_spilled: u64,
    /// Buckets of n-grams the index merge ran in, each on a thread of its own.
    pub merge_buckets: u32,
    /// The lexicon pass (documents, tokens, vocabulary, sieve), when this job ran it.
    pub first_pass: Option<NgramStats>,
}

/// A built index and what it says about each document.
pub(crate) struct BuiltIndex {
    /// The index files, one a bucket; none when the merge gathered [`Self::lists`] instead.
    pub parts: Vec<IndexPart>,
    /// Each document's occurrences, gathered by the merge (see [`IndexJob::build_with_lists`]).
    pub lists: Option<DocLists>,
    /// Or the index sorted by document, when the documents went to disk
    /// ([`IndexJob::documents_on_disk`]): then the table and the totals
    /// hold no document.
    pub by_doc: Option<ByDoc>,
    pub table: DocTable,
    pub totals: IndexTotals,
    /// The inputs, for reading the corpus once more (standard input from its copy).
    pub inputs: Vec<Input>,
    /// How the corpus was tokenised, and its stop words, to tokenise it again.
    pub norm: dupgram_lexicon::Normalization,
    pub stopwords: Vec<String>,
}

/// Builds the duplicate-only index of a corpus.
pub(crate) struct IndexJob<'a> {
    pub base: &'a NgramConfig,
    pub dups: Option<&'a DupsInput>,
    pub control: &'a Control,
    pub plan: MemoryPlan,
    pub work: &'a Path,
    /// Bytes the caller holds while the index is merged, beside what the
    /// merge counts itself (the word streams' renumbering and lists).
    held: std::cell::Cell<u64>,
    /// Whether the caller reads the index sorted by document when its
    /// documents are many ([`by_doc`]): then no table grows with them.
    by_doc: bool,
}

/// What the index pass learned about the documents, by document number.
#[derive(Debug, Default)]
pub struct DocTable {
    pub tokens: Vec<u32>,
    /// A hash of each document's words, for [`exact_groups`]: empty in a
    /// job that groups none, and once the groups are made.
    pub hashes: Vec<u128>,
    /// Their IDs, when the job keeps them (see the crate's `doc_ids` module).
    pub ids: DocIds,
    /// Occurrences the sieve let through, per document (when asked for): at
    /// least the document's duplicate occurrences.
    pub candidates: Vec<u32>,
    /// The documents were too many to list: the index is sorted by
    /// document on disk instead ([`IndexJob::documents_on_disk`]), and the
    /// table is empty.
    pub on_disk: bool,
}

/// Where a document's ID is in [`DocIds::Memory`]: 12 bytes, where a
/// `(u64, u32)` takes 16 (the plan counts 12 a document).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    start: [u32; 2],
    length: u32,
}

impl IdRange {
    pub fn new(start: u64, length: u32) -> Self {
        IdRange { start: [start as u32, (start >> 32) as u32], length }
    }

    pub fn start(&self) -> u64 {
        u64::from(self.start[0]) | (u64::from(self.start[1]) << 32)
    }

    pub fn length(&self) -> u32 {
        self.length
    }
}

impl DocTable {
    /// Document `doc`'s ID (read from disk when kept there).
    pub fn id(&self, doc: u32) -> Result<std::borrow::Cow<'_, str>, PipelineError> {
        self.ids.id(doc)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Groups of documents with identical token sequences (by hash); each
/// document maps to its group's first document. Documents too short for an
/// n-gram share nothing and stay alone. Hashes are not proof: a
/// [`GroupCheck`] over the n-grams says who differs. Only `pairs` hashes
/// its documents, and it groups them before it lets the hashes go: a table
/// without them is refused.
pub fn exact_groups(table: &DocTable, n: u32) -> Result<Vec<u32>, PipelineError> {
    if table.hashes.len() != table.tokens.len() {
        return Err(PipelineError::Usage(format!(
            "internal error: documents grouped with {} hashes for {} documents",
            table.hashes.len(),
            table.tokens.len()
        )));
    }
    let mut rep_of: Vec<u32> = (0..table.len() as u32).collect();
    let mut order: Vec<u32> = (0..table.len() as u32).filter(|&d| table.tokens[d as usize] >= n).collect();
    order.sort_unstable_by_key(|&d| (table.hashes[d as usize], table.tokens[d as usize], d));
    for w in order.chunk_by(|&a, &b| {
        table.hashes[a as usize] == table.hashes[b as usize] && table.tokens[a as usize] == table.tokens[b as usize]
    }) {
        for &d in &w[1..] {
            rep_of[d as usize] = w[0];
        }
    }
    Ok(rep_of)
}

/// How much smaller the duplicate-only index is than a full one.
pub fn index_fraction(stats: &mut IndexStats, table: &DocTable, n: u32) {
    stats.all_ngrams = table.tokens.iter().map(|&t| u64::from(t.saturating_sub(n - 1))).sum();
    stats.index_fraction =
        if stats.all_ngrams == 0 { 0.0 } else { stats.duplicate_occurrences as f64 / stats.all_ngrams as f64 };
}

/// Per-document facts from the index merge.
#[derive(Debug)]
pub struct IndexTotals {
    /// Duplicate occurrences per document.
    pub occurrences: Vec<u32>,
    /// Distinct duplicate n-grams per document.
    pub types: Vec<u32>,
    pub ngrams: u64,
    pub total_occurrences: u64,
}

impl<'a> IndexJob<'a> {
    pub fn new(
        base: &'a NgramConfig,
        dups: Option<&'a DupsInput>,
        control: &'a Control,
        plan: MemoryPlan,
        work: &'a Path,
    ) -> Self {
        IndexJob { base, dups, control, plan, work, held: std::cell::Cell::new(0), by_doc: false }
    }

    /// Lets the index of a corpus of many documents be sorted by document
    /// on disk ([`by_doc`]) instead of holding a table of its documents:
    /// for a caller that reads [`BuiltIndex::by_doc`] in document order.
    pub fn documents_on_disk(mut self) -> Self {
        self.by_doc = true;
        self
    }

    pub fn working(&self) -> u64 {
        self.plan.working()
    }

    /// Lexicon pass, index pass and index merge. When `fits(documents,
    /// candidates)` says that lists of that many occurrences
    /// ([`DocLists::bytes_for`]) fit beside what comes next, the merge
    /// gathers each document's occurrences in memory instead of writing the
    /// index file.
    pub fn build_with_lists(
        &self,
        stats: &mut IndexStats,
        fits: &dyn Fn(u64, u64) -> bool,
    ) -> Result<BuiltIndex, PipelineError> {
        self.build_inner(stats, Some(fits))
    }

    fn build_inner(
        &self,
        stats: &mut IndexStats,
        fits: Option<&dyn Fn(u64, u64) -> bool>,
    ) -> Result<BuiltIndex, PipelineError> {
        let Some(dups) = self.dups else {
            let StreamedIndex { mut merged, table, inputs, norm, stopwords, .. } =
                self.build_streamed(false, fits, Reread::Text, false, stats)?;
            index_fraction(stats, &table, self.base.n as u32);
            let (parts, by_doc) = merged.parts_or_by_doc();
            let MergedIndex { totals, lists, .. } = merged;
            return Ok(BuiltIndex { parts, lists, by_doc, table, totals, inputs, norm, stopwords });
        };
        // From a saved duplicate list there is no lexicon pass, and so no word streams.
        let (lexicon, sieve, inputs) = self.read_dups_list(dups)?;
        let n = self.base.n;
        let t = std::time::Instant::now();
        let cut = self.merge_cut(&lexicon);
        let shard = ShardCut { first_doc: 0, buckets: &cut };
        // This job names documents as it reads the text again, and groups none.
        let (runs, table) =
            self.index_pass(&inputs, &lexicon, sieve.as_ref(), fits.is_some(), IdsKept::Not, shard, stats)?;
        drop(sieve);
        stats.index_seconds = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let paths = self.index_paths(cut.len() + 1);
        let candidates: u64 = table.candidates.iter().map(|&c| u64::from(c)).sum();
        let gather = fits.is_some_and(|fits| !table.candidates.is_empty() && fits(table.len() as u64, candidates));
        let buckets = by_bucket(runs, paths.len());
        let into = match (gather, table.on_disk) {
            (true, _) => MergeInto::Lists,
            (false, true) => MergeInto::ByDoc { slot: 0 },
            (false, false) => MergeInto::Files,
        };
        let mut merged = self.merge_index(buckets, &lexicon, &paths, &table, into, None, stats)?;
        stats.merge_seconds = t.elapsed().as_secs_f64();
        index_fraction(stats, &table, n as u32);
        let (parts, by_doc) = merged.parts_or_by_doc();
        Ok(BuiltIndex {
            parts,
            lists: merged.lists,
            by_doc,
            table,
            totals: merged.totals,
            inputs,
            norm: lexicon.normalization(),
            stopwords: lexicon.stopwords().to_vec(),
        })
    }

    /// Standard input can be read once, and this job reads the corpus twice
    /// or three times: copy it to the work directory first. The copy is
    /// compressed (zstd level 3, with its checksum), unless the input
    /// already is, so it takes about a third of the text's room on disk;
    /// the corpus reader decodes it as it decodes a `.zst` input.
    pub(crate) fn spool_stdin(&self) -> Result<Vec<Input>, PipelineError> {
        self.base
            .inputs
            .iter()
            .map(|input| match input {
                Input::Stdin { .. } => {
                    let path = self.work.join("stdin.copy");
                    copy_stdin(&path).map_err(|e| PipelineError::io(&path, e))?;
                    Ok(Input::Path(path))
                }
                other => Ok(other.clone()),
            })
            .collect()
    }

    /// The lexicon of a saved duplicate list, a sieve every duplicate
    /// n-gram of the list passes, and the inputs to read from now on.
    pub fn read_dups_list(&self, d: &DupsInput) -> Result<(Lexicon, Option<Sieve>, Vec<Input>), PipelineError> {
        let inputs = self.spool_stdin()?;
        self.control.start_pass("reading duplicates", None);
        let n = self.base.n;
        let lexicon = Lexicon::load(&d.lexicon, Scope::Repeated)?;
        let fingerprints = self.work.join("dups.fp");
        let count = read_dups(&d.dups, &lexicon, n, self.plan.max_record, &fingerprints)?;
        // Eight bytes (32 counters) per duplicate: about 3 % of other n-grams
        // get through. At least 1 MiB, unless a quarter of the working memory is less.
        let most = self.working() / 4;
        let bytes = (count * 8).min(most).max(most.min(1 << 20));
        let sieve = Sieve::with_bytes(bytes as usize).map_err(|e| PipelineError::io("anonymous memory map", e))?;
        let mut file = std::io::BufReader::new(
            std::fs::File::open(&fingerprints).map_err(|e| PipelineError::io(&fingerprints, e))?,
        );
        let mut buf = [0u8; 8];
        for _ in 0..count {
            std::io::Read::read_exact(&mut file, &mut buf).map_err(|e| PipelineError::io(&fingerprints, e))?;
            let fp = u64::from_le_bytes(buf);
            sieve.insert(fp);
            sieve.insert(fp);
        }
        let _ = std::fs::remove_file(&fingerprints);
        Ok((lexicon, Some(sieve), inputs))
    }

    /// The index pass over `inputs`, whose first document is number
    /// `shard.first_doc` of the corpus: postings runs, one set per bucket
    /// of first word IDs (`shard.buckets`, as for a count), and the documents
    /// read: unless `ids` is [`IdsKept::Not`] each one's ID, kept as it
    /// says, and hash (to name it and group identical documents), else its
    /// tokens alone.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn index_pass(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        count: bool,
        ids: IdsKept,
        shard: ShardCut,
        stats: &mut IndexStats,
    ) -> Result<(Vec<(usize, RunFile)>, DocTable), PipelineError> {
        // IDs are those of the loaded words: the repeated ones, or all of them for a kept state.
        let layout = KeyLayout::new(self.base.n, lexicon.len().saturating_sub(1) as u32)?;
        match layout.words() {
            1 => self.index_pass_with::<1>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            2 => self.index_pass_with::<2>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            3 => self.index_pass_with::<3>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            4 => self.index_pass_with::<4>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            6 => self.index_pass_with::<6>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            8 => self.index_pass_with::<8>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            12 => self.index_pass_with::<12>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
            _ => self.index_pass_with::<16>(inputs, lexicon, sieve, layout, count, ids, shard, stats),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn index_pass_with<const L: usize>(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        layout: KeyLayout,
        count: bool,
        ids: IdsKept,
        shard: ShardCut,
        stats: &mut IndexStats,
    ) -> Result<(Vec<(usize, RunFile)>, DocTable), PipelineError> {
        let base = self.base;
        let threads = base.threads as u64;
        let fixed = lexicon.heap_bytes() as u64 + sieve.map_or(0, |s| s.bytes() as u64) + threads * WRITER_BYTES;
        let room = self.working().saturating_sub(fixed) / 2 / threads;
        let capacity = base
            .limits
            .chunk_ngrams
            .unwrap_or((room / PostingChunk::<L>::item_bytes(layout) as u64).max(4096) as usize);
        let header = RunHeader::postings(base.n as u8, lexicon.identity());
        // The workers' lists of documents take at most what the postings
        // take (once they are written, the table is made of the lists), or a
        // sixteenth of the working memory, as the lexicon pass lets them:
        // at the smallest budgets the plan leaves little beside a list's
        // lexicon and sieve, yet the documents of a small corpus fit.
        let (held, listed) = (AtomicU64::new(0), AtomicU64::new(0));
        let working = self.working();
        // A job whose index may go by document never stops for its documents: it stops listing them.
        let may_go_to_disk = self.by_doc && ids == IdsKept::Not && self.base.limits.documents_on_disk != Some(false);
        let to_disk = AtomicBool::new(may_go_to_disk && self.base.limits.documents_on_disk == Some(true));
        let (zstd, threads_given) = (self.plan.zstd_need(), base.threads);
        let least = move |documents: u64| {
            MemoryPlan::least_budget_for((fixed + documents * 2).min(documents * 16), threads_given, zstd)
        };
        let workers = (0..base.threads)
            .map(|worker| {
                Ok(IndexWorker {
                    scanner: Scanner::new(lexicon.normalization(), lexicon, layout, sieve.is_some()),
                    sink: IndexSink {
                        first_doc: shard.first_doc,
                        buckets: shard.buckets,
                        counts: count.then(Blocks::default),
                        ..IndexSink::new(sieve, PostingChunk::new(layout, capacity), self.work, worker, header)
                    },
                    docs: WorkerDocs::new(ids, self.work, worker)?,
                    held: DocsHeld {
                        all: &held,
                        listed: &listed,
                        reported: (0, 0),
                        limit: (working.saturating_sub(fixed) / 2).max(working / 16),
                        budget: base.memory,
                        least: &least,
                        to_disk: may_go_to_disk.then_some((&to_disk, working / 4)),
                    },
                })
            })
            .collect::<Result<Vec<IndexWorker<L>>, PipelineError>>()?;
        self.control.start_pass("indexing", inputs.iter().map(Input::size).sum());
        let options = dupgram_corpus::ReadOptions {
            max_record_bytes: self.plan.max_record,
            zstd_window_log_max: self.plan.zstd_window_log,
            ..base.read.clone()
        };
        let source = Source {
            inputs,
            options: &options,
            batch_bytes: base.limits.batch_bytes.unwrap_or(self.plan.batch_bytes),
            batches: self.plan.batches,
        };
        let (outputs, read) = feed(workers, &source, self.control)?;
        stats.documents = read.documents;
        if shard.first_doc + read.documents >= u64::from(u32::MAX) {
            return Err(PipelineError::Usage(format!(
                "{} documents: dupgram pairs handles at most {}",
                shard.first_doc + read.documents,
                u32::MAX - 1
            )));
        }
        if let Some(first) = &stats.first_pass
            && first.documents != read.documents
        {
            return Err(PipelineError::Changed(format!(
                "the lexicon pass read {} documents, the index pass {}",
                first.documents, read.documents
            )));
        }
        // The postings' chunks go before the table is made.
        let (mut runs, mut workers_docs) = (Vec::new(), Vec::with_capacity(outputs.len()));
        for (sink, worker_docs, tokens) in outputs {
            stats.tokens += tokens;
            stats.bytes_spilled += sink.spilled;
            runs.extend(sink.runs);
            workers_docs.push((worker_docs, sink.counts));
        }
        if to_disk.load(Ordering::Relaxed) {
            // The workers stopped listing their documents: no table.
            return Ok((runs, DocTable { on_disk: true, ..DocTable::default() }));
        }
        let docs = read.documents as usize;
        let named = ids != IdsKept::Not;
        let mut table = DocTable {
            tokens: vec![0; docs],
            hashes: if named { vec![0; docs] } else { Vec::new() },
            ids: DocIds::Unnamed,
            candidates: if count { vec![0; docs] } else { Vec::new() },
            on_disk: false,
        };
        let mut lists = Vec::with_capacity(workers_docs.len());
        for (WorkerDocs { mut listed, tokens, hashes, .. }, counts) in workers_docs {
            for (doc, c) in counts.into_iter().flat_map(Blocks::into_items) {
                table.candidates[(doc - shard.first_doc) as usize] += c;
            }
            for (doc, tokens) in listed.numbers().zip(tokens.into_items()) {
                table.tokens[doc as usize] = tokens;
            }
            for (doc, hash) in listed.numbers().zip(hashes.into_items()) {
                table.hashes[doc as usize] = hash;
            }
            listed.ids.finish()?;
            lists.push(listed);
        }
        table.ids = table_ids(&mut lists, self.work)?;
        Ok((runs, table))
    }

    /// The first word ID of each bucket after the first that the index
    /// merge runs in: one merge a thread, two at most. The merge reads and
    /// writes every duplicate occurrence; on one thread it left the second
    /// core idle for a fifth of a `dedup` run.
    pub fn merge_cut(&self, lexicon: &Lexicon) -> Vec<u32> {
        let buckets = self.base.limits.merge_buckets.unwrap_or(self.base.threads).clamp(1, MERGE_BUCKETS);
        FirstWords::split(lexicon, buckets).iter().skip(1).map(|part| part.start).collect()
    }

    /// The index files of a merge in `buckets` buckets, one a bucket.
    pub fn index_paths(&self, buckets: usize) -> Vec<PathBuf> {
        match buckets {
            1 => vec![self.work.join("index.dgr")],
            _ => self.index_paths_from(0, buckets),
        }
    }

    /// The files of `buckets` buckets of an index in many, numbered from `first`.
    pub fn index_paths_from(&self, first: usize, buckets: usize) -> Vec<PathBuf> {
        (first..first + buckets).map(|b| self.work.join(format!("index-b{b}.dgr"))).collect()
    }

    /// Merges the postings runs of each bucket (`buckets`, in the order of
    /// their n-grams) into the duplicate-only index — bucket `b` written to
    /// `paths[b]`, or with `gather` gathered into lists of each document's
    /// occurrences (on a thread of their own, beside the merges). Each
    /// bucket is merged on a thread of its own; an n-gram's ID is its rank
    /// in the whole index, whatever the buckets.
    ///
    /// With `groups` (each document's group of identical documents, by
    /// hash: see [`GroupCheck`]) it also checks every group against the
    /// index and returns the documents that differ from their group's first.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_index(
        &self,
        buckets: Vec<Vec<RunFile>>,
        lexicon: &Lexicon,
        paths: &[PathBuf],
        table: &DocTable,
        into: MergeInto,
        groups: Option<&[u32]>,
        stats: &mut IndexStats,
    ) -> Result<MergedIndex, PipelineError> {
        if buckets.len() != paths.len() || !(1..=MERGE_BUCKETS).contains(&buckets.len()) {
            return Err(PipelineError::Usage(format!(
                "internal error: an index merge of {} buckets into {} files",
                buckets.len(),
                paths.len()
            )));
        }
        self.control.start_pass("merging", None);
        let docs = table.len();
        let merges = buckets.len();
        let gather = into == MergeInto::Lists;
        let builder = gather.then(|| DocListsBuilder::new(&table.candidates));
        let per_merge = docs as u64 * MERGE_DOC_BYTES * merges as u64;
        // Sorted by document: a quarter of the working memory for the sorts' chunks.
        let sorts = if let MergeInto::ByDoc { .. } = into { self.working() / 4 } else { 0 };
        let other =
            table.bytes() + per_merge + builder.as_ref().map_or(0, DocListsBuilder::bytes) + self.held.get() + sorts;
        let job = BucketMerge {
            work: self.work,
            control: self.control,
            header: RunHeader::postings(self.base.n as u8, lexicon.identity()),
            identity: lexicon.identity(),
            fan_in: self.fan_in_of(other, merges),
            docs,
            groups,
            // Gathered IDs of the second bucket carry a tag until the first's count is known.
            id_limit: if gather && merges > 1 { u64::from(SECOND_BUCKET) } else { 1 << 32 },
        };
        let (sinks, lists, by_doc) = match (builder, into) {
            (Some(builder), _) => {
                let (sinks, builder) = job.to_lists(buckets, builder)?;
                (sinks, Some(builder), None)
            }
            (None, MergeInto::ByDoc { slot }) => {
                let chunk = self.base.limits.chunk_ngrams;
                let (sinks, runs) = job.to_sorts(buckets, slot, (sorts / merges as u64, chunk))?;
                (sinks, None, Some(runs))
            }
            (None, _) => (job.to_files(buckets, paths)?, None, None),
        };
        let mut merged = MergedIndex::combine(sinks, stats)?;
        merged.by_doc = by_doc;
        stats.merge_buckets = stats.merge_buckets.max(merges as u32);
        if let Some(builder) = lists {
            let second = merged.parts.get(1).map(|p| p.first_id);
            merged.lists = Some(builder.finish(&merged.totals.occurrences, second)?);
            merged.parts.clear();
        } else {
            for (part, path) in merged.parts.iter_mut().zip(paths) {
                part.path = path.clone();
            }
        }
        Ok(merged)
    }

    pub(crate) fn fan_in(&self, other: u64) -> usize {
        self.fan_in_of(other, 1)
    }

    /// The fan-in of each of `merges` merges run at once beside `other` bytes.
    fn fan_in_of(&self, other: u64, merges: usize) -> usize {
        let merges = merges.max(1);
        let room = self.working().saturating_sub(other + 2 * WRITER_BYTES * merges as u64) / merges as u64;
        let files = (open_file_allowance() / merges).max(2);
        self.base.limits.fan_in.unwrap_or_else(|| ((room / (96 * 1024)) as usize).clamp(2, files))
    }

    /// Cuts documents `docs` into blocks whose index fits in `room` bytes each.
    /// The bytes of a block planned in `room` (a test limit may make it smaller).
    pub(crate) fn block_budget(&self, room: u64) -> u64 {
        self.base.limits.chunk_ngrams.map_or(room, |c| c as u64 * 8)
    }

    pub(crate) fn plan_blocks(&self, occurrences: &[u32], docs: Range<u32>, room: u64) -> Vec<Range<u32>> {
        let budget = self.block_budget(room);
        let mut blocks = Vec::new();
        let (mut start, mut occ) = (docs.start, 0u64);
        for (d, &c) in occurrences[docs.start as usize..docs.end as usize].iter().enumerate() {
            let d = docs.start + d as u32;
            if d > start && DocBlock::bytes_for(occ + u64::from(c), u64::from(d - start + 1)) > budget {
                blocks.push(start..d);
                start = d;
                occ = 0;
            }
            occ += u64::from(c);
        }
        blocks.push(start..docs.end);
        blocks
    }
}

/// Where the index merge puts the duplicate n-grams' occurrences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MergeInto {
    /// The index files, one a bucket, with the per-document totals.
    Files,
    /// Each document's list in memory ([`DocLists`]), with the totals.
    Lists,
    /// Sorts by document on disk ([`by_doc`]), and no per-document totals:
    /// the buckets take slots `slot..` of the job's.
    ByDoc { slot: usize },
}

/// Bytes each bucket's merge holds per document: its totals (occurrences
/// and types, 4 bytes each) and its group check's flag, with 3 to spare.
/// The table's own bytes are counted beside.
const MERGE_DOC_BYTES: u64 = 12;

/// The most buckets an index merge runs in, one a thread.
const MERGE_BUCKETS: usize = 2;
/// Marks an ID gathered from the second bucket of a merge: its rank in that
/// bucket, to which the first bucket's count is added once both are done.
const SECOND_BUCKET: u32 = 1 << 31;

/// What each bucket's merge of [`IndexJob::merge_index`] shares.
struct BucketMerge<'j> {
    work: &'j Path,
    control: &'j Control,
    /// Of the postings runs merged.
    header: RunHeader,
    /// Of the lexicon, for the index files' headers.
    identity: u64,
    fan_in: usize,
    docs: usize,
    groups: Option<&'j [u32]>,
    /// IDs a bucket may give, counted from 0 in each.
    id_limit: u64,
}

/// Postings runs tagged with their bucket, as lists by bucket.
pub(crate) fn by_bucket(runs: Vec<(usize, RunFile)>, buckets: usize) -> Vec<Vec<RunFile>> {
    let mut by = vec![Vec::new(); buckets];
    for (bucket, run) in runs {
        by[bucket].push(run);
    }
    by
}

/// A bucket's merge, done: its sink, and the bytes it wrote.
type BucketDone<'g> = (IndexMerge<'g>, u64);

impl<'j> BucketMerge<'j> {
    fn sink(&self, out: IndexOut<'j>, tag: u32, runs: &[RunFile]) -> IndexMerge<'j> {
        let docs = if let IndexOut::ByDoc { .. } = out { 0 } else { self.docs };
        IndexMerge {
            out,
            totals: IndexTotals::empty(docs),
            check: self.groups.map(GroupCheck::new),
            inputs: run_names(runs),
            tag,
            id_limit: self.id_limit,
        }
    }

    /// Merges bucket `bucket`'s runs into `sink`.
    fn merge(&self, bucket: usize, runs: Vec<RunFile>, sink: &mut IndexMerge) -> Result<u64, PipelineError> {
        let work = self.work;
        let report =
            merge_in(work, &format!("postings-m{bucket}"), runs, self.header, self.fan_in, sink, self.control)?;
        Ok(report.bytes_written)
    }

    /// Each bucket's index written to its file, each merged on a thread of its own.
    fn to_files(&self, buckets: Vec<Vec<RunFile>>, paths: &[PathBuf]) -> Result<Vec<BucketDone<'j>>, PipelineError> {
        std::thread::scope(|scope| {
            let merges: Vec<_> = buckets
                .into_iter()
                .zip(paths)
                .enumerate()
                .map(|(bucket, (runs, path))| {
                    scope.spawn(move || -> Result<BucketDone<'j>, PipelineError> {
                        // The index keeps each n-gram's rank, not its words: nothing after the merge needs them.
                        let writer = RunWriter::create(path, RunHeader::postings(1, self.identity))?;
                        let mut sink = self.sink(IndexOut::File(writer), 0, &runs);
                        let written = self.merge(bucket, runs, &mut sink)?;
                        let IndexOut::File(writer) = std::mem::replace(&mut sink.out, IndexOut::Done) else {
                            unreachable!("the sink writes a file")
                        };
                        let (_, summary) = writer.finish()?;
                        Ok((sink, written + summary.bytes))
                    })
                })
                .collect();
            merges.into_iter().map(joined).collect()
        })
    }

    /// Each bucket's occurrences sorted by document into runs of its own
    /// (bucket `b` as slot `first_slot + b`), each merged on a thread of its
    /// own, each sort's chunk `sort.0` bytes (or `sort.1` occurrences).
    fn to_sorts(
        &self,
        buckets: Vec<Vec<RunFile>>,
        first_slot: usize,
        sort: (u64, Option<usize>),
    ) -> Result<(Vec<BucketDone<'j>>, Vec<RunFile>), PipelineError> {
        let done: Vec<(BucketDone<'j>, Vec<RunFile>)> = std::thread::scope(|scope| {
            let merges: Vec<_> = buckets
                .into_iter()
                .enumerate()
                .map(|(bucket, runs)| {
                    scope.spawn(move || -> Result<(BucketDone<'j>, Vec<RunFile>), PipelineError> {
                        let slot = first_slot + bucket;
                        // `UnitSort::new` gives its chunk half of what it is handed.
                        let chunk = UnitSort::new(self.work, 2 * sort.0, sort.1, by_doc::BY_DOC_RUNS)?
                            .named(format!("by-doc-{slot}"));
                        let mut sink = self.sink(IndexOut::ByDoc { sort: chunk, slot }, 0, &runs);
                        let written = self.merge(bucket, runs, &mut sink)?;
                        let IndexOut::ByDoc { sort, .. } = std::mem::replace(&mut sink.out, IndexOut::Done) else {
                            unreachable!("the sink sorts by document")
                        };
                        let sorted = sort.finish()?;
                        let spilled = sorted.spilled;
                        Ok(((sink, written + spilled), sorted.into_runs()))
                    })
                })
                .collect();
            merges.into_iter().map(joined).collect::<Result<_, _>>()
        })?;
        let mut sinks = Vec::with_capacity(done.len());
        let mut runs = Vec::new();
        for (sink, sorted) in done {
            sinks.push(sink);
            runs.extend(sorted);
        }
        Ok((sinks, runs))
    }

    /// Each bucket's occurrences handed to one thread gathering them into
    /// `builder`, the buckets merged on threads of their own.
    fn to_lists(
        &self,
        buckets: Vec<Vec<RunFile>>,
        builder: DocListsBuilder,
    ) -> Result<(Vec<BucketDone<'j>>, DocListsBuilder), PipelineError> {
        let (full_tx, full_rx) = crossbeam_channel::bounded::<Vec<(u32, u64)>>(GATHER_BUFFERS);
        let (empty_tx, empty_rx) = crossbeam_channel::bounded::<Vec<(u32, u64)>>(GATHER_BUFFERS);
        for _ in 0..GATHER_BUFFERS {
            empty_tx.send(Vec::with_capacity(GATHER_BATCH)).expect("room for every buffer");
        }
        let (merged, builder) = std::thread::scope(|scope| {
            let gatherer = scope.spawn(move || -> Result<DocListsBuilder, PipelineError> {
                let mut builder = builder;
                for mut batch in full_rx {
                    builder.push_all(&batch)?;
                    batch.clear();
                    // The merges may be gone (one failed): the buffer is simply dropped.
                    let _ = empty_tx.send(batch);
                }
                Ok(builder)
            });
            let merges: Vec<_> = buckets
                .into_iter()
                .enumerate()
                .map(|(bucket, runs)| {
                    let out = IndexOut::Lists {
                        batch: Vec::with_capacity(GATHER_BATCH),
                        full: full_tx.clone(),
                        empty: empty_rx.clone(),
                    };
                    let mut sink = self.sink(out, if bucket == 0 { 0 } else { SECOND_BUCKET }, &runs);
                    scope.spawn(move || -> Result<BucketDone<'j>, PipelineError> {
                        let merged = self.merge(bucket, runs, &mut sink).and_then(|written| {
                            sink.flush()?;
                            Ok(written)
                        });
                        // Ends this merge's part of the gatherer's input.
                        sink.out = IndexOut::Done;
                        Ok((sink, merged?))
                    })
                })
                .collect();
            // The gatherer stops when the merges' senders are gone.
            drop((full_tx, empty_rx));
            let merged: Vec<Result<BucketDone<'j>, PipelineError>> = merges.into_iter().map(joined).collect();
            (merged, joined(gatherer))
        });
        // The gatherer's failure first: the merges only stopped because of it.
        let builder = builder?;
        let merged = merged.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok((merged, builder))
    }
}

/// A scoped thread's result; its panic as an error.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, PipelineError>>) -> Result<T, PipelineError> {
    handle.join().unwrap_or_else(|_| Err(PipelineError::Usage("internal error: an index merge thread panicked".into())))
}

impl MergedIndex {
    /// The index files, or, sorted by document, its runs and the parts'
    /// first IDs (all that is left of the parts then).
    fn parts_or_by_doc(&mut self) -> (Vec<IndexPart>, Option<ByDoc>) {
        let parts = std::mem::take(&mut self.parts);
        match self.by_doc.take() {
            Some(runs) => (Vec::new(), Some(ByDoc { runs, first_ids: parts.iter().map(|p| p.first_id).collect() })),
            None => (parts, None),
        }
    }

    /// This index followed by `next`, merged after it (the next part of the
    /// n-grams by first word): `next`'s IDs count on from this one's.
    pub(crate) fn followed_by(mut self, next: MergedIndex) -> Result<MergedIndex, PipelineError> {
        if self.lists.is_some() || next.lists.is_some() {
            return Err(PipelineError::Usage("internal error: lists gathered from an index in parts".into()));
        }
        let offset = self.totals.ngrams;
        if offset + next.totals.ngrams > 1 << 32 {
            return Err(PipelineError::Usage("more than 2^32 duplicate n-grams: use a larger n".into()));
        }
        self.totals.absorb(&next.totals)?;
        match (&mut self.by_doc, next.by_doc) {
            (Some(runs), Some(more)) => runs.extend(more),
            (None, None) => {}
            _ => return Err(PipelineError::Usage("internal error: index parts sorted two ways".into())),
        }
        let moved =
            next.parts.into_iter().map(|p| IndexPart { first_id: (u64::from(p.first_id) + offset) as u32, ..p });
        self.parts.extend(moved);
        self.differing.extend(next.differing);
        self.differing.sort_unstable();
        self.differing.dedup();
        Ok(self)
    }

    /// The index of the buckets' merges, in bucket order: their totals
    /// added, their IDs numbered on from one bucket to the next.
    fn combine(sinks: Vec<BucketDone>, stats: &mut IndexStats) -> Result<MergedIndex, PipelineError> {
        let mut totals: Option<IndexTotals> = None;
        let mut parts = Vec::with_capacity(sinks.len());
        let mut differing = Vec::new();
        for (sink, written) in sinks {
            let first_id = totals.as_ref().map_or(0, |t| t.ngrams);
            if first_id + sink.totals.ngrams > 1 << 32 {
                return Err(PipelineError::Usage("more than 2^32 duplicate n-grams: use a larger n".into()));
            }
            parts.push(IndexPart { path: PathBuf::new(), first_id: first_id as u32 });
            stats.bytes_spilled += written;
            differing.extend(sink.check.map(GroupCheck::differing).unwrap_or_default());
            match totals.as_mut() {
                None => totals = Some(sink.totals),
                Some(t) => t.absorb(&sink.totals)?,
            }
        }
        let totals =
            totals.ok_or_else(|| PipelineError::Usage("internal error: an index merge of no buckets".into()))?;
        differing.sort_unstable();
        differing.dedup();
        stats.duplicate_ngrams = totals.ngrams;
        stats.duplicate_occurrences = totals.total_occurrences;
        Ok(MergedIndex { totals, lists: None, by_doc: None, differing, parts })
    }
}

/// Where a part of the corpus sits in the whole: the number of its first
/// document, and the buckets its postings are cut into (the first word ID
/// of every bucket after the first; none for one bucket).
#[derive(Debug, Clone, Copy)]
pub struct ShardCut<'a> {
    pub first_doc: u64,
    pub buckets: &'a [u32],
}

impl ShardCut<'_> {
    /// The whole corpus, in one bucket.
    pub const WHOLE: ShardCut<'static> = ShardCut { first_doc: 0, buckets: &[] };
}

/// Bytes kept per document across the job: tokens, index counts, group,
/// cluster. Hashes and IDs held in memory ([`DocTable::bytes`]) come on top.
pub(crate) const PER_DOC_BYTES: u64 = 4 + 4 + 4 + 4 + 8;
/// Bytes a document takes in the tables of a `dedup` that holds them (with
/// 4 to spare, as the lexicon pass counts it): past a quarter of the
/// working memory for them, its index goes by document ([`by_doc`]).
pub(crate) const DEDUP_DOC_BYTES: u64 = PER_DOC_BYTES + 4;
/// Buffers of one run writer.
pub(crate) const WRITER_BYTES: u64 = 256 * 1024;

/// Reads a `dupgram ngrams` list and writes the fingerprint of each n-gram;
/// returns how many. A line longer than `max_line` bytes is refused before
/// it is held whole: no list of n-grams has one, and memory is planned.
fn read_dups(path: &Path, lexicon: &Lexicon, n: usize, max_line: usize, out: &Path) -> Result<u64, PipelineError> {
    let (mut reader, stored) = dupgram_corpus::open_decoded_counted(path)
        .map_err(|error| CorpusError::Open { name: path.display().to_string(), error })?;
    let mut writer = FingerprintWriter::create(out, n)?;
    let mut ids = Vec::with_capacity(n);
    let mut bytes = Vec::new();
    for i in 0u64.. {
        let bad = |what: String| {
            PipelineError::Corpus(CorpusError::BadRecord { name: path.display().to_string(), line: i + 1, what })
        };
        bytes.clear();
        let limit = max_line as u64 + 1;
        let read = std::io::Read::take(&mut reader, limit).read_until(b'\n', &mut bytes).map_err(|error| {
            let offset = stored.load(std::sync::atomic::Ordering::Relaxed);
            CorpusError::reading(&path.display().to_string(), i + 1, offset, error)
        })?;
        if read == 0 {
            break;
        }
        let content = bytes.strip_suffix(b"\n").map(|l| l.strip_suffix(b"\r").unwrap_or(l)).unwrap_or(&bytes);
        if content.len() > max_line || (read as u64 == limit && !bytes.ends_with(b"\n")) {
            return Err(bad(format!("longer than {max_line} bytes: not a list of n-grams")));
        }
        let line = std::str::from_utf8(content).map_err(|_| bad("not UTF-8".into()))?;
        let gram = line.rsplit_once('\t').map_or(line, |(g, _)| g);
        ids.clear();
        for word in gram.split(' ') {
            match lexicon.lookup(word) {
                Lookup::Id(id) => ids.push(id),
                _ => {
                    return Err(bad(format!(
                        "\"{word}\" is not a repeated word of the lexicon: is this the lexicon saved with these duplicates?"
                    )));
                }
            }
        }
        if ids.len() != n {
            return Err(bad(format!("{}-gram where n = {n} was asked for", ids.len())));
        }
        writer.write(lexicon, &ids)?;
    }
    writer.finish()
}

/// Fingerprints of duplicate n-grams, written to a temporary file as they come.
struct FingerprintWriter {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    roll: RollingFingerprint,
    count: u64,
}

impl FingerprintWriter {
    fn create(path: &Path, n: usize) -> Result<Self, PipelineError> {
        let file = std::fs::File::create(path).map_err(|e| PipelineError::io(path, e))?;
        Ok(FingerprintWriter {
            out: BufWriter::new(file),
            path: path.to_owned(),
            roll: RollingFingerprint::new(n),
            count: 0,
        })
    }

    fn write(&mut self, lexicon: &Lexicon, ids: &[u32]) -> Result<(), PipelineError> {
        self.roll.reset();
        let mut fp = 0;
        for &id in ids {
            if let Some(f) = self.roll.push(word_hash(lexicon.word_bytes(id))) {
                fp = f;
            }
        }
        self.count += 1;
        self.out.write_all(&fp.to_le_bytes()).map_err(|e| PipelineError::io(&self.path, e))
    }

    fn finish(mut self) -> Result<u64, PipelineError> {
        self.out.flush().map_err(|e| PipelineError::io(&self.path, e))?;
        Ok(self.count)
    }
}

/// The documents one index-pass worker read, in its order: 4 bytes a
/// document (its tokens), and for a named job ([`IndexJob::index_pass`])
/// 16 more (its hash) and its ID where the job keeps it.
#[derive(Debug)]
struct WorkerDocs {
    /// Their numbers in the corpus and their IDs.
    listed: StreamDocs,
    tokens: Blocks<u32>,
    /// Named jobs only (IDs kept in `listed`): each document's hash.
    hashes: Blocks<u128>,
    /// Tokens and hashes are no longer listed ([`DocsHeld::to_disk`]).
    dropped: bool,
}

/// A list that grows a block of [`BLOCK_ITEMS`] items at a time: a `Vec`
/// that doubles holds up to twice what it lists, and these lists are
/// counted against the budget.
#[derive(Debug, Default)]
struct Blocks<T> {
    blocks: Vec<Vec<T>>,
}

const BLOCK_ITEMS: usize = 4 << 10;

impl<T> Blocks<T> {
    fn push(&mut self, item: T) {
        match self.blocks.last_mut() {
            Some(block) if block.len() < BLOCK_ITEMS => block.push(item),
            _ => {
                let mut block = Vec::with_capacity(BLOCK_ITEMS);
                block.push(item);
                self.blocks.push(block);
            }
        }
    }

    fn last_mut(&mut self) -> Option<&mut T> {
        self.blocks.last_mut().and_then(|block| block.last_mut())
    }

    fn heap_bytes(&self) -> u64 {
        (self.blocks.capacity() * std::mem::size_of::<Vec<T>>()
            + self.blocks.len() * BLOCK_ITEMS * std::mem::size_of::<T>()) as u64
    }

    /// The items, in order, as the blocks go.
    fn into_items(self) -> impl Iterator<Item = T> {
        self.blocks.into_iter().flatten()
    }
}

impl WorkerDocs {
    /// A list whose IDs are kept as `ids` says (for `worker`, in `work` when on disk).
    fn new(ids: IdsKept, work: &Path, worker: usize) -> Result<Self, PipelineError> {
        Ok(WorkerDocs {
            listed: StreamDocs::new(ids.list(work, worker)?),
            tokens: Blocks::default(),
            hashes: Blocks::default(),
            dropped: false,
        })
    }

    /// Document `doc`, named `id`, begins.
    fn start(&mut self, doc: u64, id: &str) -> Result<(), PipelineError> {
        self.listed.push(doc, id)?;
        if self.dropped {
            return Ok(());
        }
        self.tokens.push(0);
        if !matches!(self.listed.ids, ListedIds::Unnamed) {
            self.hashes.push(0);
        }
        Ok(())
    }

    /// Stops listing the documents' tokens and hashes, and lets those listed go.
    fn stop_listing(&mut self) {
        self.dropped = true;
        self.tokens = Blocks::default();
        self.hashes = Blocks::default();
    }

    /// The document begun last ends, with `tokens` and its words' `hash`.
    fn end(&mut self, tokens: u32, hash: u128) {
        if let Some(last) = self.tokens.last_mut() {
            *last = tokens;
        }
        if let Some(last) = self.hashes.last_mut() {
            *last = hash;
        }
    }

    /// Bytes allocated.
    fn heap_bytes(&self) -> u64 {
        self.listed.heap_bytes() + self.tokens.heap_bytes() + self.hashes.heap_bytes()
    }
}

/// What the workers of an index pass hold of their documents, against the
/// share of the budget it may take.
struct DocsHeld<'a> {
    /// Bytes held by all workers.
    all: &'a AtomicU64,
    /// Documents read by all workers.
    listed: &'a AtomicU64,
    /// This worker's share of the two, as last reported.
    reported: (u64, u64),
    limit: u64,
    /// For the message when the limit is passed: the budget given, and
    /// the budget the documents read so far need, given what they hold.
    budget: u64,
    least: &'a (dyn Fn(u64) -> u64 + Sync),
    /// For a job whose index may go by document: raised, instead of an
    /// error, once the documents pass the limit or their tables (see
    /// [`DEDUP_DOC_BYTES`]) the bytes beside it; and from then on, no
    /// worker lists its documents.
    to_disk: Option<(&'a AtomicBool, u64)>,
}

/// What the workers do with their documents' lists from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Keep,
    /// Drop them: the index goes by document.
    Drop,
}

impl DocsHeld<'_> {
    /// Reports this worker's `listed` documents and the `bytes` it holds
    /// for them; an error once all workers' hold more than the limit, or,
    /// when the documents may go to disk, the word to drop the lists.
    fn report(&mut self, bytes: u64, listed: u64) -> Result<Listing, PipelineError> {
        if let Some((flag, _)) = self.to_disk
            && flag.load(Ordering::Relaxed)
        {
            return Ok(Listing::Drop);
        }
        let all = self.all.fetch_add(bytes.saturating_sub(self.reported.0), Ordering::Relaxed)
            + bytes.saturating_sub(self.reported.0);
        let documents = self.listed.fetch_add(listed - self.reported.1, Ordering::Relaxed) + listed - self.reported.1;
        self.reported = (bytes, listed);
        if let Some((flag, table_room)) = self.to_disk {
            if all <= self.limit && documents * DEDUP_DOC_BYTES <= table_room {
                return Ok(Listing::Keep);
            }
            flag.store(true, Ordering::Relaxed);
            return Ok(Listing::Drop);
        }
        if all <= self.limit {
            return Ok(Listing::Keep);
        }
        Err(PipelineError::Memory {
            budget: human_bytes(self.budget),
            what: format!(
                "the index pass's list of the first {documents} documents ({}, held for the whole job as their \
                 table) leaves no room: those documents alone need --memory {}M or more (the rest of the corpus \
                 adds to it)",
                human_bytes(all),
                (self.least)(all) >> 20
            ),
        })
    }
}

struct IndexWorker<'a, const L: usize> {
    scanner: Scanner<'a, L>,
    sink: IndexSink<'a, L>,
    docs: WorkerDocs,
    held: DocsHeld<'a>,
}

/// The index pass's sink: occurrences of possible duplicates, and each document's hash.
struct IndexSink<'a, const L: usize> {
    /// Without a sieve, every occurrence is kept (and the merge sorts it out).
    sieve: Option<&'a Sieve>,
    line: DelayLine<(Slot, [u64; L], u64)>,
    chunk: PostingChunk<L>,
    dir: &'a Path,
    worker: usize,
    next: u32,
    header: RunHeader,
    /// Each run with its bucket.
    runs: Vec<(usize, RunFile)>,
    spilled: u64,
    failure: Option<PipelineError>,
    /// The current document's number in the corpus.
    doc: u64,
    /// The number of this part's first document.
    first_doc: u64,
    /// First word ID of each bucket after the first.
    buckets: &'a [u32],
    /// XXH3-128 of the current document's token sequence.
    hasher: Xxh3,
    /// (document, occurrences kept), when counted.
    counts: Option<Blocks<(u64, u32)>>,
}

impl<const L: usize> ScanSink<L> for IndexSink<'_, L> {
    #[inline]
    fn token(&mut self, id: Option<u32>, word: &str) {
        // IDs name repeated words exactly; other words by their bytes.
        match id {
            Some(id) => {
                let mut b = [1u8; 5];
                b[1..].copy_from_slice(&id.to_le_bytes());
                self.hasher.update(&b);
            }
            None => {
                let mut b = [2u8; 5];
                b[1..].copy_from_slice(&(word.len() as u32).to_le_bytes());
                self.hasher.update(&b);
                self.hasher.update(word.as_bytes());
            }
        }
    }

    #[inline]
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, start: u64) {
        if self.failure.is_some() {
            return;
        }
        if start > u64::from(u32::MAX) {
            self.failure =
                Some(PipelineError::Usage(format!("document {} has more than {} tokens", self.doc, u32::MAX)));
            return;
        }
        let occurrence = (self.doc << 32) | start;
        let kept = match self.sieve {
            None => self.keep(key, occurrence),
            Some(sieve) => {
                let slot = sieve.locate(fingerprint);
                sieve.prefetch(slot);
                match self.line.push((slot, key, occurrence)) {
                    Some((ready, key, occ)) if sieve.may_repeat_at(ready) => self.keep(key, occ),
                    _ => Ok(()),
                }
            }
        };
        if let Err(e) = kept {
            self.failure = Some(e);
        }
    }
}

impl<'a, const L: usize> IndexSink<'a, L> {
    /// A sink of worker `worker`'s postings runs in `dir`, numbering from
    /// document 0, in one bucket, counting nothing.
    fn new(sieve: Option<&'a Sieve>, chunk: PostingChunk<L>, dir: &'a Path, worker: usize, header: RunHeader) -> Self {
        IndexSink {
            sieve,
            line: DelayLine::default(),
            chunk,
            dir,
            worker,
            next: 0,
            header,
            runs: Vec::new(),
            spilled: 0,
            failure: None,
            doc: 0,
            first_doc: 0,
            buckets: &[],
            hasher: Xxh3::new(),
            counts: None,
        }
    }

    fn keep(&mut self, key: [u64; L], occurrence: u64) -> Result<(), PipelineError> {
        if let Some(counts) = self.counts.as_mut() {
            // Occurrences come in document order.
            let doc = occurrence >> 32;
            match counts.last_mut() {
                Some((d, c)) if *d == doc => *c += 1,
                _ => counts.push((doc, 1)),
            }
        }
        self.chunk.push(key, occurrence);
        if self.chunk.is_full() { self.write() } else { Ok(()) }
    }

    fn flush_line(&mut self) -> Result<(), PipelineError> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        let Some(sieve) = self.sieve else { return Ok(()) };
        let waiting: Vec<(Slot, [u64; L], u64)> = self.line.drain().collect();
        for (slot, key, occ) in waiting {
            if sieve.may_repeat_at(slot) {
                self.keep(key, occ)?;
            }
        }
        Ok(())
    }

    /// Sorts the chunk and writes it as one run per bucket it touches.
    fn write(&mut self) -> Result<(), PipelineError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = self.next;
        self.next += 1;
        let (dir, worker, buckets) = (self.dir, self.worker, self.buckets);
        let mut runs = PartedRuns::new(self.header);
        self.chunk.drain_sorted(|ids, occ| -> Result<(), PipelineError> {
            let bucket = buckets.partition_point(|&start| start <= ids[0]);
            let path = |b: usize| dir.join(format!("postings-b{b:04}-w{worker}-{chunk:06}.dgr"));
            Ok(runs.writer(bucket, path)?.push_postings(ids, occ)?)
        })?;
        let finished = runs.finish()?;
        self.spilled += finished.iter().map(|(_, r)| r.bytes).sum::<u64>();
        self.runs.extend(finished);
        Ok(())
    }
}

impl<'a, const L: usize> BatchWorker for IndexWorker<'a, L> {
    type Output = (IndexSink<'a, L>, WorkerDocs, u64);

    fn batch(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        for piece in &batch.pieces {
            if let Some(id) = batch.piece_id(piece) {
                self.sink.doc = self.sink.first_doc + piece.doc;
                self.sink.hasher.reset();
                self.docs.start(piece.doc, id)?;
            }
            if let Some(tokens) = self.scanner.piece(batch.piece_text(piece), piece.last, &mut self.sink) {
                let tokens = u32::try_from(tokens).map_err(|_| {
                    PipelineError::Usage(format!("document {} has more than {} tokens", piece.doc, u32::MAX))
                })?;
                self.docs.end(tokens, self.sink.hasher.digest128());
            }
        }
        let counts = self.sink.counts.as_ref().map_or(0, Blocks::heap_bytes);
        if self.held.report(self.docs.heap_bytes() + counts, self.docs.listed.listed)? == Listing::Drop {
            self.docs.stop_listing();
            self.sink.counts = None;
        }
        self.sink.flush_line()
    }

    fn finish(mut self) -> Result<Self::Output, PipelineError> {
        self.sink.flush_line()?;
        self.sink.write()?;
        let tokens = self.scanner.tokens();
        Ok((self.sink, self.docs, tokens))
    }
}

/// Writes the duplicate-only index from the merged postings — each duplicate
/// n-gram as its rank (its ID), with its occurrences — or hands them to the
/// thread gathering [`DocLists`]; and counts, per document, what it holds.
struct IndexMerge<'a> {
    out: IndexOut<'a>,
    totals: IndexTotals,
    check: Option<GroupCheck<'a>>,
    /// The runs merged, named in errors.
    inputs: String,
    /// Or'ed into the IDs gathered ([`SECOND_BUCKET`] for the second bucket's).
    tag: u32,
    /// This merge's IDs are below it.
    id_limit: u64,
}

/// An occurrence of a document outside the document table: the postings
/// and the table are of different corpora, or one is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocPastTable {
    pub doc: u64,
    pub first_doc: u64,
    pub docs: u64,
}

impl DocPastTable {
    /// The error, naming the runs whose merge held the occurrence.
    pub fn in_runs(self, runs: &[RunFile]) -> PipelineError {
        self.in_file(&run_names(runs))
    }

    /// The error, naming the file (or files) that held the occurrence.
    pub fn in_file(self, source: &str) -> PipelineError {
        PipelineError::Corrupt(format!("{source}: {self}"))
    }
}

impl std::fmt::Display for DocPastTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let DocPastTable { doc, first_doc, docs } = self;
        write!(
            f,
            "corrupt postings: an occurrence in document {doc}, outside the document table's {docs} documents from {first_doc}"
        )
    }
}

/// The runs of a merge, for a message: the first, and how many more.
pub fn run_names(runs: &[RunFile]) -> String {
    files_named(runs.iter().map(|r| r.path.as_path()))
}

/// Files read together, for a message: the first, and how many more.
fn files_named<'a>(mut paths: impl ExactSizeIterator<Item = &'a Path>) -> String {
    let others = paths.len().saturating_sub(1);
    match paths.next() {
        None => "no files".into(),
        Some(first) if others == 0 => first.display().to_string(),
        Some(first) => format!("{} (or one of {others} other files read with it)", first.display()),
    }
}

/// What the index merge made.
pub(crate) struct MergedIndex {
    pub totals: IndexTotals,
    pub lists: Option<DocLists>,
    /// The runs sorted by document, when merged [`MergeInto::ByDoc`]: the
    /// parts then name no file, and the totals no document.
    pub by_doc: Option<Vec<RunFile>>,
    /// Documents shown to differ from their group's first (see [`GroupCheck`]).
    pub differing: Vec<u32>,
    /// The index files, one a bucket; none when the merge gathered [`Self::lists`].
    pub parts: Vec<IndexPart>,
}

/// Checks groups of documents with equal hashes against the index as it is
/// merged, so no hash collision can join two different documents: a
/// document is identical to its group's first exactly when (1) they have
/// as many tokens, (2) every n-gram position of it is a duplicate
/// occurrence, and (3) it holds each of its n-grams at the same positions
/// as the first. (Then the first has no other occurrences either: it has
/// as many positions, and they are all taken.) This sees (3), one n-gram
/// at a time; the caller, who adds up occurrences, sees (1) and (2).
/// Each n-gram is checked on its own, so a merge per bucket of n-grams
/// checks its part and the parts' findings add up.
pub struct GroupCheck<'a> {
    /// Each document's group's first document (itself when alone).
    rep_of: &'a [u32],
    differs: Vec<bool>,
}

impl<'a> GroupCheck<'a> {
    /// A check of groups `rep_of` (each document's group's first, see [`exact_groups`]).
    pub fn new(rep_of: &'a [u32]) -> Self {
        GroupCheck { rep_of, differs: vec![false; rep_of.len()] }
    }

    /// One n-gram's occurrences, in increasing order (so by document).
    /// Fails, checking nothing, on a document past the groups'.
    pub fn ngram(&mut self, occurrences: &[u64]) -> Result<(), DocPastTable> {
        let docs = self.rep_of.len() as u64;
        if let Some(doc) = occurrences.iter().map(|&o| o >> 32).find(|&d| d >= docs) {
            return Err(DocPastTable { doc, first_doc: 0, docs });
        }
        let doc_of = |o: u64| (o >> 32) as u32;
        let mut start = 0;
        while start < occurrences.len() {
            let doc = doc_of(occurrences[start]);
            let end = start + occurrences[start..].partition_point(|&o| doc_of(o) == doc);
            let rep = self.rep_of[doc as usize];
            if rep != doc && !self.differs[doc as usize] {
                // A group's first is its lowest-numbered document: its occurrences come earlier.
                let earlier = &occurrences[..start];
                let from = earlier.partition_point(|&o| doc_of(o) < rep);
                let to = earlier.partition_point(|&o| doc_of(o) <= rep);
                let same = to - from == end - start
                    && earlier[from..to].iter().zip(&occurrences[start..end]).all(|(&a, &b)| a as u32 == b as u32);
                if !same {
                    self.differs[doc as usize] = true;
                }
            }
            start = end;
        }
        Ok(())
    }

    /// The documents shown to differ from their group's first.
    pub fn differing(self) -> Vec<u32> {
        self.differs.iter().enumerate().filter(|(_, d)| **d).map(|(doc, _)| doc as u32).collect()
    }
}

enum IndexOut<'a> {
    File(RunWriter<BufWriter<std::fs::File>>),
    /// Each occurrence to a sort by document, with the n-gram's rank and its bucket's slot.
    ByDoc {
        sort: UnitSort<'a>,
        slot: usize,
    },
    /// (ID, occurrence) pairs, sent a batch at a time.
    Lists {
        batch: Vec<(u32, u64)>,
        full: crossbeam_channel::Sender<Vec<(u32, u64)>>,
        empty: crossbeam_channel::Receiver<Vec<(u32, u64)>>,
    },
    Done,
}

/// Buffers of (ID, occurrence) pairs between the merge and the gathering thread.
const GATHER_BUFFERS: usize = 4;
const GATHER_BATCH: usize = 1 << 16;

impl IndexMerge<'_> {
    /// Sends what is batched to the gathering thread.
    fn flush(&mut self) -> Result<(), PipelineError> {
        if let IndexOut::Lists { batch, full, empty } = &mut self.out
            && !batch.is_empty()
        {
            let gone = || PipelineError::Usage("internal error: the gathering thread stopped".into());
            let next = empty.recv().map_err(|_| gone())?;
            full.send(std::mem::replace(batch, next)).map_err(|_| gone())?;
        }
        Ok(())
    }
}

impl MergeSink for IndexMerge<'_> {
    type Error = PipelineError;

    fn accept(&mut self, _ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), PipelineError> {
        if count < 2 {
            return Ok(());
        }
        if self.totals.ngrams >= self.id_limit {
            return Err(PipelineError::Usage(format!(
                "more than {} duplicate n-grams in a bucket of the index: use a larger n",
                self.id_limit
            )));
        }
        let id = self.totals.ngrams as u32;
        if let IndexOut::ByDoc { .. } = self.out {
            // No per-document totals: an occurrence past the corpus's
            // documents is found where the decisions read them back.
            self.totals.add_uncounted(occurrences.len());
        } else {
            // First: what follows indexes per-document arrays by these documents.
            self.totals.add_ngram(occurrences, 0).map_err(|e| e.in_file(&self.inputs))?;
        }
        let full = match &mut self.out {
            IndexOut::ByDoc { sort, slot } => {
                for &o in occurrences {
                    sort.push(by_doc::key(o), by_doc::value(*slot, id))?;
                }
                false
            }
            IndexOut::File(writer) => {
                writer.push_postings(&[id], occurrences)?;
                false
            }
            IndexOut::Lists { batch, .. } => {
                let id = id | self.tag;
                batch.extend(occurrences.iter().map(|&o| (id, o)));
                batch.len() >= GATHER_BATCH
            }
            IndexOut::Done => unreachable!("the merge is over"),
        };
        if full {
            self.flush()?;
        }
        if let Some(check) = &mut self.check {
            check.ngram(occurrences).map_err(|e| e.in_file(&self.inputs))?;
        }
        Ok(())
    }
}

/// Every document's duplicate occurrences, each document's sorted by
/// position (then ID): what `dupgram dedup` walks.
pub(crate) struct DocLists {
    offsets: Vec<u64>,
    entries: Vec<NgramAt>,
}

impl DocLists {
    /// Bytes of lists of `occurrences` over `docs` documents, as they are built.
    pub fn bytes_for(occurrences: u64, docs: u64) -> u64 {
        occurrences * std::mem::size_of::<NgramAt>() as u64
            + (docs + 1) * 16
            + 2 * GATHER_BUFFERS as u64 * GATHER_BATCH as u64 * std::mem::size_of::<(u32, u64)>() as u64
    }

    /// Document `doc`'s occurrences, sorted by position.
    pub fn doc(&self, doc: u32) -> &[NgramAt] {
        &self.entries[self.offsets[doc as usize] as usize..self.offsets[doc as usize + 1] as usize]
    }
}

/// Fills [`DocLists`]: each document gets room for its candidates (the
/// occurrences the sieve let through), of which the duplicates arrive.
struct DocListsBuilder {
    /// Where each document's room starts; one more for the end.
    starts: Vec<u64>,
    /// Next free slot of each document.
    fill: Vec<u64>,
    entries: Vec<NgramAt>,
}

impl DocListsBuilder {
    fn new(candidates: &[u32]) -> Self {
        let mut starts = Vec::with_capacity(candidates.len() + 1);
        let mut total = 0u64;
        starts.push(0);
        for &c in candidates {
            total += u64::from(c);
            starts.push(total);
        }
        let fill = starts[..candidates.len()].to_vec();
        DocListsBuilder { starts, fill, entries: vec![NgramAt { pos: 0, id: 0 }; total as usize] }
    }

    fn bytes(&self) -> u64 {
        DocLists::bytes_for(self.entries.len() as u64, self.fill.len() as u64)
    }

    fn push_all(&mut self, batch: &[(u32, u64)]) -> Result<(), PipelineError> {
        for &(id, o) in batch {
            let doc = (o >> 32) as usize;
            let slot = self.fill[doc];
            if slot >= self.starts[doc + 1] {
                return Err(PipelineError::Usage(format!(
                    "internal error: document {doc} has more duplicate occurrences than the index pass kept"
                )));
            }
            self.entries[slot as usize] = NgramAt { pos: o as u32, id };
            self.fill[doc] = slot + 1;
        }
        Ok(())
    }

    /// Closes the gaps between documents, numbers the second bucket's IDs
    /// on from `second` (its first ID, when there were two), and sorts each
    /// document's list by position.
    fn finish(self, occurrences: &[u32], second: Option<u32>) -> Result<DocLists, PipelineError> {
        let DocListsBuilder { starts, fill, mut entries } = self;
        let mut offsets = Vec::with_capacity(fill.len() + 1);
        let mut at = 0u64;
        offsets.push(0);
        for (doc, (&start, &end)) in starts.iter().zip(&fill).enumerate() {
            let len = end - start;
            if len != u64::from(occurrences[doc]) {
                return Err(PipelineError::Usage(format!(
                    "internal error: document {doc} has {len} occurrences gathered, {} counted",
                    occurrences[doc]
                )));
            }
            // Rooms are laid out in document order and `at <= start`: moving down never overwrites what is still to move.
            entries.copy_within(start as usize..end as usize, at as usize);
            at += len;
            offsets.push(at);
        }
        entries.truncate(at as usize);
        entries.shrink_to_fit();
        // The merges gave each document its occurrences by ID; the rule walks them by position.
        let half = offsets[offsets.len() / 2] as usize;
        let (low, high) = entries.split_at_mut(half);
        let sort = |part: &mut [NgramAt], base: u64, offsets: &[u64]| {
            if let Some(first) = second {
                for at in part.iter_mut().filter(|at| at.id & SECOND_BUCKET != 0) {
                    // `combine` checked that all IDs fit a u32.
                    at.id = (at.id & !SECOND_BUCKET) + first;
                }
            }
            for w in offsets.windows(2) {
                part[(w[0] - base) as usize..(w[1] - base) as usize].sort_unstable();
            }
        };
        let middle = offsets.len() / 2;
        std::thread::scope(|scope| {
            scope.spawn(|| sort(high, half as u64, &offsets[middle..]));
            sort(low, 0, &offsets[..=middle]);
        });
        Ok(DocLists { offsets, entries })
    }
}

/// A file of the duplicate-only index: the whole index, or one bucket's
/// part of it (its n-grams' IDs are their ranks in the part; `first_id` is
/// the number of n-grams in the parts before it).
#[derive(Debug, Clone)]
pub struct IndexPart {
    pub path: PathBuf,
    pub first_id: u32,
}

/// The document-major index of the blocks of documents in use, built from
/// the index parts: as many blocks stay resident as fit in `budget` bytes.
/// A block is built by reading the whole index, so when one is missing the
/// blocks after it that fit are built in the same reading (pairs are
/// scored in block order: they are likely next).
///
/// Scoring the pairs of B blocks, k of them resident at a time, takes about
/// B²/2k such readings: at a billion tokens (1.7 GB of index, a dozen
/// blocks) that was most of the job. So, given a directory
/// ([`split_in`](Self::split_in)), the cache cuts the index by block
/// ([`BlockFiles`]) in its first reading when the blocks will not all be
/// resident at once (else the first time it must read it a second time),
/// and from then on builds each block from its own file. Cutting in the
/// first reading, rather than after one, spared `dedup` (which wants every
/// block once, in order) one of its two readings of a 1.7 GB index at a
/// billion tokens.
pub(crate) struct BlockCache<'a> {
    /// The index, in parts of increasing n-gram IDs.
    pub parts: &'a [IndexPart],
    pub n: u32,
    pub blocks: &'a [Range<u32>],
    /// Bytes the resident blocks may take; the two blocks of a pair are kept even beyond it.
    pub budget: u64,
    /// (block number, block).
    pub loaded: Vec<(u32, DocBlock)>,
    /// The documents whose occurrences are wanted (a bit each), when not all
    /// are: blocks then hold only theirs (the others' lists stay empty).
    needed: Option<Vec<u64>>,
    /// Readings of the whole index so far, the one that cut it included.
    pub index_reads: u64,
    /// Where the index may be cut by block.
    split_dir: Option<&'a Path>,
    split_forced: bool,
    split: Option<BlockFiles>,
    /// What becomes of the index's files once it is cut by block.
    after_cut: AfterCut,
    /// Asked between n-grams while the index is read (a reading takes
    /// half a minute at a billion tokens).
    control: &'a Control,
}

impl<'a> BlockCache<'a> {
    pub fn new(parts: &'a [IndexPart], n: u32, blocks: &'a [Range<u32>], budget: u64, control: &'a Control) -> Self {
        BlockCache {
            parts,
            n,
            blocks,
            budget,
            loaded: Vec::new(),
            needed: None,
            index_reads: 0,
            split_dir: None,
            split_forced: false,
            split: None,
            after_cut: AfterCut::KeepIndex,
            control,
        }
    }

    /// Fails with `Interrupted` once Ctrl-C was pressed, asked at the
    /// first n-gram read (`ngrams` counts from 1) and every 65,536 after.
    fn check_stop(&self, ngrams: u64) -> Result<(), PipelineError> {
        if (ngrams - 1).is_multiple_of(65536) && self.control.interrupted() {
            return Err(PipelineError::Interrupted);
        }
        Ok(())
    }

    /// Only documents `needed` (a bit per document) will be asked for.
    pub fn only(mut self, needed: Vec<u64>) -> Self {
        self.needed = Some(needed);
        self
    }

    /// Lets the cache cut the index by block in a scratch directory of
    /// `dir` (removed with the cache) rather than read it whole again;
    /// `force` overrides the check that the files' writers fit (see
    /// [`Limits::block_files`](crate::ngrams::Limits::block_files)).
    pub fn split_in(mut self, dir: &'a Path, force: Option<bool>) -> Self {
        self.split_dir = (force != Some(false)).then_some(dir);
        self.split_forced = force == Some(true);
        self
    }

    /// Says what becomes of the index's files once the cache has cut the
    /// index by block: [`AfterCut::RemoveIndex`] when nothing reads them
    /// after this cache (the blocks then come from their own files only).
    pub fn after_cut(mut self, after: AfterCut) -> Self {
        self.after_cut = after;
        self
    }

    /// Whether the next load should first cut the index by block: the
    /// whole index would be read a second time (it was read once already,
    /// or the blocks do not all fit in the budget together, so they cannot
    /// all be built in one reading), there are more than two blocks (with
    /// two, a second reading is all the cut would save), and the block
    /// files' writers fit in a quarter of the budget.
    fn should_split(&self, occurrences: &[u32]) -> bool {
        self.split_dir.is_some()
            && self.split.is_none()
            && self.blocks.len() > 2
            && (self.split_forced || self.blocks.len() as u64 * WRITER_BYTES <= self.budget / 4)
            && (self.index_reads >= 1 || !self.all_fit(occurrences))
    }

    /// Whether every block fits in the budget at once.
    fn all_fit(&self, occurrences: &[u32]) -> bool {
        let all: u64 = (0..self.blocks.len() as u32).map(|b| self.bytes(b, occurrences)).sum();
        all <= self.budget
    }

    fn is_needed(&self, doc: u32) -> bool {
        self.needed.as_ref().is_none_or(|bits| bits[(doc / 64) as usize] & (1 << (doc % 64)) != 0)
    }

    /// The occurrences of block `number`'s documents that it will hold.
    fn held(&self, number: u32, occurrences: &[u32]) -> Vec<u32> {
        let range = self.blocks[number as usize].clone();
        range.map(|d| if self.is_needed(d) { occurrences[d as usize] } else { 0 }).collect()
    }

    pub fn block(&self, number: u32) -> Option<&DocBlock> {
        self.loaded.iter().find(|(b, _)| *b == number).map(|(_, block)| block)
    }

    fn bytes(&self, number: u32, occurrences: &[u32]) -> u64 {
        let range = &self.blocks[number as usize];
        let occ: u64 = match self.needed {
            None => occurrences[range.start as usize..range.end as usize].iter().map(|&c| u64::from(c)).sum(),
            Some(_) => self.held(number, occurrences).iter().map(|&c| u64::from(c)).sum(),
        };
        DocBlock::bytes_for(occ, u64::from(range.end - range.start))
    }

    /// Makes blocks `a` and `b` resident, dropping others that leave too little room.
    pub fn ensure(&mut self, a: u32, b: Option<u32>, occurrences: &[u32], tokens: &[u32]) -> Result<(), PipelineError> {
        let wanted = [Some(a), b];
        let mut missing: Vec<u32> = wanted.iter().flatten().copied().filter(|&w| self.block(w).is_none()).collect();
        missing.dedup();
        if missing.is_empty() {
            return Ok(());
        }
        let need: u64 = missing.iter().map(|&m| self.bytes(m, occurrences)).sum();
        let mut resident: u64 = self.loaded.iter().map(|(number, _)| self.bytes(*number, occurrences)).sum();
        // Oldest first; never a block of this pair.
        while resident + need > self.budget {
            let Some(i) = self.loaded.iter().position(|(number, _)| !wanted.contains(&Some(*number))) else { break };
            let (number, _) = self.loaded.remove(i);
            resident -= self.bytes(number, occurrences);
        }
        if self.should_split(occurrences) {
            // The writers take the room of the blocks evicted here; blocks
            // come back cheaply from their files.
            self.loaded.retain(|(number, _)| wanted.contains(&Some(*number)));
            self.split = Some(self.cut_by_block()?);
        }
        if self.split.is_some() {
            // Each block has its own file: read ahead nothing.
            let built = self.load(&missing, occurrences, tokens)?;
            self.loaded.extend(missing.into_iter().zip(built));
            return Ok(());
        }
        let mut total = resident + need;
        let last = *missing.iter().max().expect("a missing block");
        for next in last + 1..self.blocks.len() as u32 {
            let bytes = self.bytes(next, occurrences);
            if self.block(next).is_some() || total + bytes > self.budget {
                break;
            }
            missing.push(next);
            total += bytes;
        }
        let built = self.load(&missing, occurrences, tokens)?;
        self.loaded.extend(missing.into_iter().zip(built));
        Ok(())
    }

    /// Writes each block's occurrences to a file of its own, in one reading
    /// of the whole index (removing each of its files once read, when
    /// nothing reads it after the cache: [`AfterCut::RemoveIndex`]).
    fn cut_by_block(&mut self) -> Result<BlockFiles, PipelineError> {
        let parent = self.split_dir.expect("cut only with a directory");
        let dir =
            tempfile::Builder::new().prefix("blocks-").tempdir_in(parent).map_err(|e| PipelineError::io(parent, e))?;
        let paths: Vec<PathBuf> =
            (0..self.blocks.len()).map(|b| dir.path().join(format!("block-{b:05}.dgr"))).collect();
        let header = RunHeader::postings(1, BLOCK_RUNS);
        let mut writers = paths.iter().map(|p| RunWriter::create(p, header)).collect::<Result<Vec<_>, _>>()?;
        self.index_reads += 1;
        let mut read = 0u64;
        for part in self.parts {
            let mut reader = RunReader::open(&part.path)?;
            let mut id = part.first_id;
            while reader.advance()? {
                read += 1;
                self.check_stop(read)?;
                // Occurrences come in document order and blocks are ranges
                // of documents: each block's share is one slice.
                let mut rest = reader.occurrences();
                while let Some(&first) = rest.first() {
                    let doc = (first >> 32) as u32;
                    let b = self.blocks.partition_point(|r| r.end <= doc);
                    let Some(range) = self.blocks.get(b) else { break };
                    if doc < range.start {
                        // Between blocks: documents no block holds.
                        rest = &rest[rest.partition_point(|&o| ((o >> 32) as u32) < range.start)..];
                        continue;
                    }
                    let end = rest.partition_point(|&o| ((o >> 32) as u32) < range.end);
                    writers[b].push_postings(&[id], &rest[..end])?;
                    rest = &rest[end..];
                }
                id += 1;
            }
            if self.after_cut == AfterCut::RemoveIndex {
                // Its occurrences are in the block files now, all the cache
                // will ask for: the index and its copy by block are never
                // on disk together, only the parts not yet read beside them.
                drop(reader);
                let _ = std::fs::remove_file(&part.path);
            }
        }
        for writer in writers {
            writer.finish()?;
        }
        Ok(BlockFiles { _dir: dir, paths })
    }

    /// Builds blocks `numbers` in one reading of the whole index, or from
    /// their own files once it is cut by block.
    fn load(&mut self, numbers: &[u32], occurrences: &[u32], tokens: &[u32]) -> Result<Vec<DocBlock>, PipelineError> {
        if self.split.is_none() {
            self.index_reads += 1;
        }
        let mut order: Vec<u32> = numbers.to_vec();
        order.sort_unstable();
        let mut builders: Vec<DocBlockBuilder> = order
            .iter()
            .map(|&number| {
                let range = &self.blocks[number as usize];
                match self.needed {
                    None => {
                        DocBlock::builder(range.start, &occurrences[range.start as usize..range.end as usize], self.n)
                    }
                    Some(_) => DocBlock::builder(range.start, &self.held(number, occurrences), self.n),
                }
            })
            .collect();
        let starts: Vec<u32> = order.iter().map(|&number| self.blocks[number as usize].start).collect();
        let mut read = 0u64;
        let mut batch = PushBatch::default();
        match &self.split {
            Some(files) => {
                for (i, &number) in order.iter().enumerate() {
                    let path = &files.paths[number as usize];
                    let mut reader = RunReader::open(path)?;
                    reader.expect_header(RunHeader::postings(1, BLOCK_RUNS))?;
                    while reader.advance()? {
                        read += 1;
                        self.check_stop(read)?;
                        let id = reader.ngram()[0];
                        for &o in reader.occurrences() {
                            batch.add(self, &mut builders, i, o, id, path)?;
                        }
                    }
                    batch.flush(self, &mut builders, path)?;
                }
            }
            None => {
                for part in self.parts {
                    let mut reader = RunReader::open(&part.path)?;
                    let mut id = part.first_id;
                    while reader.advance()? {
                        read += 1;
                        self.check_stop(read)?;
                        for &o in reader.occurrences() {
                            // The last block starting at or before the document, if it holds it.
                            let i = starts.partition_point(|&s| s <= (o >> 32) as u32);
                            if i > 0 {
                                batch.add(self, &mut builders, i - 1, o, id, &part.path)?;
                            }
                        }
                        id += 1;
                    }
                    batch.flush(self, &mut builders, &part.path)?;
                }
            }
        }
        let mut built: Vec<(u32, DocBlock)> = order
            .iter()
            .zip(builders)
            .map(|(&number, builder)| {
                let range = &self.blocks[number as usize];
                let block = builder.finish(&tokens[range.start as usize..range.end as usize]).map_err(|e| {
                    let parts = match &self.split {
                        Some(files) => files.paths[number as usize].display().to_string(),
                        None => files_named(self.parts.iter().map(|p| p.path.as_path())),
                    };
                    PipelineError::Corrupt(format!("{parts}: corrupt index part: {e}"))
                })?;
                Ok((number, block))
            })
            .collect::<Result<_, PipelineError>>()?;
        // Back in the order asked for.
        Ok(numbers
            .iter()
            .map(|number| {
                let i = built.iter().position(|(b, _)| b == number).expect("every block asked for is built");
                built.swap_remove(i).1
            })
            .collect())
    }

    /// Adds occurrence `o` of n-gram `id` (read from `path`) to `builder`
    /// if its document is the builder's and wanted.
    fn push_occurrence(
        &self,
        builder: &mut DocBlockBuilder,
        o: u64,
        id: u32,
        path: &Path,
    ) -> Result<(), PipelineError> {
        let doc = (o >> 32) as u32;
        if builder.wants(doc) && self.is_needed(doc) {
            builder
                .push(doc, id, o as u32)
                .map_err(|e| PipelineError::Corrupt(format!("{}: corrupt index part: {e}", path.display())))?;
        }
        Ok(())
    }
}

/// Occurrences on their way into the blocks being built, as (builder,
/// occurrence, n-gram ID), in three steps so that the cache misses of a
/// batch overlap rather than come one after another: when one joins, its
/// document's free slots are prefetched ([`DocBlockBuilder::prefetch_doc`]);
/// when the batch is full, the slot each will take
/// ([`DocBlockBuilder::prefetch`]); then all are written. At a billion
/// tokens (blocks of 400 MB, 7 MB of free slots) this took the building of
/// a block from its file from 6.1 s to 2.3 s, where each write had waited
/// for both of its misses before the next could start.
#[derive(Default)]
struct PushBatch {
    items: Vec<(usize, u64, u32)>,
}

/// Occurrences a [`PushBatch`] holds: about as many cache misses as a core keeps in flight, twice.
const PUSH_BATCH: usize = 32;

impl PushBatch {
    /// Adds occurrence `o` of n-gram `id` (read from `path`) for `builders[b]`.
    fn add(
        &mut self,
        cache: &BlockCache,
        builders: &mut [DocBlockBuilder],
        b: usize,
        o: u64,
        id: u32,
        path: &Path,
    ) -> Result<(), PipelineError> {
        builders[b].prefetch_doc((o >> 32) as u32);
        self.items.push((b, o, id));
        if self.items.len() == PUSH_BATCH {
            self.flush(cache, builders, path)?;
        }
        Ok(())
    }

    /// Writes every occurrence held (all read from `path`).
    fn flush(
        &mut self,
        cache: &BlockCache,
        builders: &mut [DocBlockBuilder],
        path: &Path,
    ) -> Result<(), PipelineError> {
        for &(b, o, _) in &self.items {
            builders[b].prefetch((o >> 32) as u32);
        }
        for (b, o, id) in self.items.drain(..) {
            cache.push_occurrence(&mut builders[b], o, id, path)?;
        }
        Ok(())
    }
}

/// What becomes of an index's files once a `BlockCache` has cut it by block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCut {
    /// Something reads the index after the cache (the tasks of a staged
    /// job that score other ranges against it).
    KeepIndex,
    /// The cache is the index's last reader: its files go once cut, so
    /// the index and its copy by block are not on disk together.
    RemoveIndex,
}

/// The index cut by blocks of documents: for each block a postings run
/// whose key is an n-gram's ID alone (`n` = 1), holding that block's
/// occurrences in index order, so a block built from it is the one a
/// reading of the whole index builds. Removed with the cache.
struct BlockFiles {
    _dir: tempfile::TempDir,
    paths: Vec<PathBuf>,
}

/// The lexicon identity in the header of [`BlockFiles`]' runs: their keys are n-gram IDs, not words.
const BLOCK_RUNS: u64 = 0xB10C_F11E;

#[cfg(test)]
mod tests {
    use super::{AfterCut, BlockCache, DEDUP_DOC_BYTES, GroupCheck, IndexPart};
    use dupgram_jobkit::{Control, PipelineError};
    use dupgram_runs::{RunHeader, RunWriter};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A worker's list gives its documents' numbers and IDs in its order,
    /// hashes only when named, and a refusal once the workers' lists pass
    /// the limit, naming a budget.
    #[test]
    fn a_workers_documents_are_listed_by_number_and_held_within_a_limit() {
        use crate::doc_ids::{IdsKept, ListedIds};
        let work = tempfile::tempdir().unwrap();
        let mut docs = super::WorkerDocs::new(IdsKept::Memory, work.path(), 0).unwrap();
        for (doc, id, tokens) in [(4, "a", 3), (5, "bé", 0), (9, "c", 7)] {
            docs.start(doc, id).unwrap();
            docs.end(tokens, u128::from(tokens) + 1);
        }
        assert_eq!(docs.listed.numbers().collect::<Vec<_>>(), [4, 5, 9]);
        assert_eq!(docs.tokens.blocks, [vec![3, 0, 7]]);
        assert_eq!(docs.hashes.blocks, [vec![4, 1, 8]]);
        let ListedIds::Memory { ids, lens } = &docs.listed.ids else { panic!("IDs not in memory") };
        assert_eq!((ids.as_str(), lens.as_slice()), ("abéc", &[1, 3, 1][..]));
        let mut unnamed = super::WorkerDocs::new(IdsKept::Not, work.path(), 1).unwrap();
        unnamed.start(0, "d").unwrap();
        unnamed.end(2, 99);
        assert!(unnamed.hashes.blocks.is_empty() && matches!(unnamed.listed.ids, ListedIds::Unnamed));

        let (all, listed) = (std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0));
        let least = |held: u64| held * 1000;
        let limit = docs.heap_bytes();
        let mut held = super::DocsHeld {
            all: &all,
            listed: &listed,
            reported: (0, 0),
            limit,
            budget: 16 << 20,
            least: &least,
            to_disk: None,
        };
        assert_eq!(held.report(docs.heap_bytes(), docs.listed.listed).unwrap(), super::Listing::Keep);
        // Another worker's list passes the limit.
        let mut other = super::DocsHeld { reported: (0, 0), ..held };
        let refused = other.report(unnamed.heap_bytes(), unnamed.listed.listed).unwrap_err().to_string();
        assert!(refused.contains("the first 4 documents"), "{refused}");
        let need = ((limit + unnamed.heap_bytes()) * 1000) >> 20;
        assert!(refused.contains(&format!("--memory {need}M")), "{refused}");

        // A job whose index may go by document drops its lists instead, for good.
        let (all, listed, flag) = (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
        let room = 4 * DEDUP_DOC_BYTES;
        let mut held =
            super::DocsHeld { all: &all, listed: &listed, reported: (0, 0), to_disk: Some((&flag, room)), ..held };
        assert_eq!(held.report(docs.heap_bytes(), docs.listed.listed).unwrap(), super::Listing::Keep);
        // A fifth document: its table would pass the room.
        unnamed.start(1, "e").unwrap();
        assert_eq!(held.report(docs.heap_bytes(), 5).unwrap(), super::Listing::Drop);
        assert!(flag.load(Ordering::Relaxed));
        let mut other = super::DocsHeld { reported: (0, 0), ..held };
        assert_eq!(other.report(0, 1).unwrap(), super::Listing::Drop);
        unnamed.stop_listing();
        unnamed.start(2, "f").unwrap();
        unnamed.end(4, 0);
        assert!(unnamed.tokens.blocks.is_empty());
        assert_eq!(unnamed.listed.numbers().collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn documents_are_grouped_by_hash_and_length_and_only_with_their_hashes() {
        let mut table = super::DocTable::default();
        // 0 and 2 alike; 1 the same hash, another length; 3 too short for an n-gram.
        for (tokens, hash) in [(5, 7), (6, 7), (5, 7), (2, 7)] {
            table.tokens.push(tokens);
            table.hashes.push(hash);
        }
        assert_eq!(super::exact_groups(&table, 3).unwrap(), [0, 1, 0, 3]);
        table.hashes = Vec::new();
        let refused = super::exact_groups(&table, 3).unwrap_err().to_string();
        assert!(refused.contains("0 hashes for 4 documents"), "{refused}");
    }

    #[test]
    fn reading_the_index_for_blocks_stops_on_ctrl_c() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.dgr");
        // Three documents, each a block, holding three n-grams at positions 0, 1, 2.
        let mut writer = RunWriter::create(&path, RunHeader::postings(1, 0)).unwrap();
        for id in 0..3u32 {
            writer.push_postings(&[id], &[at(0, id.into()), at(1, id.into()), at(2, id.into())]).unwrap();
        }
        writer.finish().unwrap();
        let parts = [IndexPart { path, first_id: 0 }];
        let blocks = [0..1, 1..2, 2..3];
        let (occurrences, tokens) = ([3, 3, 3], [5, 5, 5]);
        let control = Control::default();
        let stop = |on: bool| control.stop.store(on, Ordering::Relaxed);
        // The whole index, read for a block.
        stop(true);
        let mut whole = BlockCache::new(&parts, 3, &blocks, 1 << 20, &control);
        let err = whole.ensure(0, None, &occurrences, &tokens);
        assert!(matches!(err, Err(PipelineError::Interrupted)), "{err:?}");
        // A budget of one block at a time, and the cut by block allowed: the
        // blocks cannot all be built in one reading, so the first block
        // wanted cuts the index by block first.
        let mut cache = BlockCache::new(&parts, 3, &blocks, 1, &control).split_in(dir.path(), Some(true));
        let err = cache.ensure(0, None, &occurrences, &tokens);
        assert!(matches!(err, Err(PipelineError::Interrupted)), "{err:?}");
        assert!(cache.split.is_none(), "stopped while cutting, not after");
        stop(false);
        let mut cache = BlockCache::new(&parts, 3, &blocks, 1, &control).split_in(dir.path(), Some(true));
        cache.ensure(0, None, &occurrences, &tokens).unwrap();
        assert!(cache.split.is_some() && cache.block(0).unwrap().doc(0).len() == 3);
        // Blocks read from their own files: the whole index was read once.
        cache.ensure(2, None, &occurrences, &tokens).unwrap();
        assert!(cache.block(2).unwrap().doc(2).len() == 3);
        assert_eq!(cache.index_reads, 1);
        stop(true);
        let err = cache.ensure(1, None, &occurrences, &tokens);
        assert!(matches!(err, Err(PipelineError::Interrupted)), "{err:?}");
    }

    #[test]
    fn an_index_whose_last_reader_cut_it_by_block_goes_from_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let index = |name: &str| {
            let path = dir.path().join(name);
            // Three documents, each a block, holding three n-grams at positions 0, 1, 2.
            let mut writer = RunWriter::create(&path, RunHeader::postings(1, 0)).unwrap();
            for id in 0..3u32 {
                writer.push_postings(&[id], &[at(0, id.into()), at(1, id.into()), at(2, id.into())]).unwrap();
            }
            writer.finish().unwrap();
            [IndexPart { path, first_id: 0 }]
        };
        let blocks = [0..1, 1..2, 2..3];
        let (occurrences, tokens) = ([3, 3, 3], [5, 5, 5]);
        let control = Control::default();
        let (kept, removed) = (index("kept.dgr"), index("removed.dgr"));
        let mut keeping = BlockCache::new(&kept, 3, &blocks, 1, &control).split_in(dir.path(), Some(true));
        let mut removing = BlockCache::new(&removed, 3, &blocks, 1, &control)
            .split_in(dir.path(), Some(true))
            .after_cut(AfterCut::RemoveIndex);
        for block in [0, 2, 1, 0] {
            keeping.ensure(block, None, &occurrences, &tokens).unwrap();
            removing.ensure(block, None, &occurrences, &tokens).unwrap();
            let doc = block;
            assert_eq!(removing.block(block).unwrap().doc(doc), keeping.block(block).unwrap().doc(doc));
            assert_eq!(removing.block(block).unwrap().doc(doc).len(), 3);
        }
        assert!(removing.split.is_some() && keeping.split.is_some());
        assert!(!removed[0].path.exists(), "cut by block, the index went");
        assert!(kept[0].path.exists(), "kept for a reader after the cache");
    }

    fn at(doc: u64, pos: u64) -> u64 {
        (doc << 32) | pos
    }

    #[test]
    fn group_check_finds_members_that_differ_from_their_first() {
        // Documents 0, 1, 2 and 4 hash alike (as if by collision); 3 is alone.
        let rep_of = [0, 0, 0, 3, 0];
        let mut check = GroupCheck::new(&rep_of);
        // N-gram A: documents 0 and 1 at the same positions; 2 at another; 3 anywhere.
        check.ngram(&[at(0, 1), at(0, 5), at(1, 1), at(1, 5), at(2, 1), at(2, 6), at(3, 0)]).unwrap();
        // N-gram B: document 4 holds it, its first does not.
        check.ngram(&[at(3, 2), at(4, 0)]).unwrap();
        // N-gram C: 1 holds it once where 0 holds it twice.
        check.ngram(&[at(0, 7), at(0, 9), at(1, 7), at(3, 3)]).unwrap();
        assert_eq!(check.differing(), [1, 2, 4]);
        // Alike everywhere: nobody differs.
        let mut check = GroupCheck::new(&rep_of);
        check.ngram(&[at(0, 3), at(1, 3), at(2, 3), at(4, 3)]).unwrap();
        assert!(check.differing().is_empty());
    }

    #[test]
    fn group_check_refuses_a_document_past_its_groups() {
        let rep_of = [0, 0];
        let mut check = GroupCheck::new(&rep_of);
        let past = check.ngram(&[at(0, 1), at(2, 1)]).unwrap_err();
        assert_eq!((past.doc, past.docs), (2, 2));
        assert!(past.in_file("bucket-0000.dgr").to_string().starts_with("bucket-0000.dgr: corrupt postings"));
        assert!(check.differing().is_empty());
    }
}
