//! `find_pairs`: every pair of documents that shares an n-gram, scored exactly.
//!
//! 1. **Lexicon pass.** The same first pass as the count: the lexicon, and a
//!    sieve through which every repeated n-gram passes. With a saved
//!    duplicate list, the lexicon comes from its file instead and the sieve
//!    is filled from the list.
//! 2. **Index pass.** Read the corpus again; every n-gram the sieve lets
//!    through goes, with its (document, position), into chunks sorted by
//!    n-gram and spilled as postings runs.
//! 3. **Index merge.** Merging the runs gathers each n-gram's occurrences;
//!    those with two or more are the duplicate-only index, written as one
//!    postings run in n-gram order (an n-gram's ID is its rank there). The
//!    sieve's false positives meet their single occurrence here and vanish.
//! 4. **Exact duplicates.** Documents whose token sequences are identical
//!    (equal 128-bit hashes, then checked against their index entries) form
//!    groups; only the group's first document takes part in the pairing.
//! 5. **Candidates.** Every pair of documents (group representatives) that
//!    share an n-gram held by at most `max_df` of them, sorted and made unique
//!    out of core.
//! 6. **Scores.** For each candidate, cheap upper bounds first, then the exact
//!    scores from the document-major view of the index ([`DocBlock`]), loaded
//!    in blocks of documents that fit in memory. Pairs that pass go to a last
//!    sort, so they come out in document order whatever the block layout.
//! 7. **Output.** Pairs, then the connected components (clusters).

use std::io::{BufRead, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_chunker::{Chunk, KeyLayout, PostingChunk};
use dupgram_corpus::{Batch, CorpusError, Input};
use dupgram_index::{DocBlock, DocStats, PairCounts, PairScores, ScoreScratch, UnionFind, score};
use dupgram_lexicon::{Lexicon, Lookup, Scope, word_hash};
use dupgram_merge::{MergeSink, RunFile, merge_all};
use dupgram_runs::{RunHeader, RunReader, RunWriter};
use dupgram_sieve::{DelayLine, RollingFingerprint, Sieve, Slot};
use serde::Serialize;
use xxhash_rust::xxh3::Xxh3;

use crate::feed::{BatchWorker, Source, feed};
use crate::memory::{MemoryPlan, human_bytes, open_file_allowance, peak_rss};
use crate::ngrams::{NgramConfig, NgramStats, prepare, zstd_need};
use crate::scan::{ScanSink, Scanner};
use crate::{Control, PipelineError};

/// A saved duplicate list to score with, instead of counting again.
#[derive(Debug, Clone)]
pub struct DupsInput {
    /// `dupgram ngrams` output: `words<TAB>count` lines (plain, .gz or .zst).
    pub dups: PathBuf,
    /// The lexicon saved with it.
    pub lexicon: PathBuf,
}

/// What to pair, and which pairs to keep.
#[derive(Debug, Clone)]
pub struct PairsConfig {
    /// Inputs, tokenisation, n, memory, threads, temporary directory.
    pub base: NgramConfig,
    pub dups: Option<DupsInput>,
    pub min_sscr: f64,
    pub min_ssr: f64,
    /// Keep a pair when either document is at least this covered.
    pub min_cover: f64,
    /// N-grams in more documents than this do not make candidates.
    pub max_df: u64,
    /// Pairs reported per group of identical documents (all members are in the clusters).
    pub max_group_pairs: u64,
}

impl PairsConfig {
    pub fn new(base: NgramConfig) -> Self {
        PairsConfig {
            base,
            dups: None,
            min_sscr: 0.0,
            min_ssr: 0.0,
            min_cover: 0.0,
            max_df: 1000,
            max_group_pairs: 100,
        }
    }

    fn check(&self) -> Result<(), PipelineError> {
        for (name, v) in [("--min-sscr", self.min_sscr), ("--min-ssr", self.min_ssr), ("--min-cover", self.min_cover)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(PipelineError::Usage(format!("{name} must be between 0 and 1, not {v}")));
            }
        }
        if self.max_df < 2 {
            return Err(PipelineError::Usage("--max-df must be at least 2".into()));
        }
        Ok(())
    }

    fn keeps(&self, s: &PairScores) -> bool {
        s.sscr >= self.min_sscr && s.ssr >= self.min_ssr && s.cover_a.max(s.cover_b) >= self.min_cover
    }
}

/// Receives the results, in order: pairs (by document order), then clusters.
pub trait PairsSink: Send {
    fn pair(&mut self, a: &str, b: &str, scores: &PairScores) -> Result<(), PipelineError>;
    fn cluster(&mut self, members: &[&str]) -> Result<(), PipelineError>;
}

/// Seconds per step.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PairsSeconds {
    pub duplicates: f64,
    pub index: f64,
    pub candidates: f64,
    pub scoring: f64,
    pub output: f64,
    pub total: f64,
}

/// The summary of a pairing job.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PairsStats {
    pub n: usize,
    pub documents: u64,
    pub tokens: u64,
    pub duplicate_ngrams: u64,
    pub duplicate_occurrences: u64,
    /// N-gram positions of the corpus: the size of a full index.
    pub all_ngrams: u64,
    /// `duplicate_occurrences / all_ngrams`: how much smaller the duplicate-only index is.
    pub index_fraction: f64,
    /// Groups of identical documents, and the documents in them.
    pub exact_groups: u64,
    pub grouped_documents: u64,
    /// N-grams held by more than `max_df` documents: they make no candidates.
    pub boilerplate_ngrams: u64,
    pub candidate_pairs: u64,
    /// Candidates an upper bound showed could not reach the thresholds.
    pub pruned_pairs: u64,
    pub scored_pairs: u64,
    pub kept_pairs: u64,
    /// Pairs of identical documents reported (at most `max_group_pairs` per group).
    pub group_pairs: u64,
    pub clusters: u64,
    pub clustered_documents: u64,
    /// Blocks the document-major index was split into to fit in memory.
    pub index_blocks: u64,
    pub bytes_spilled: u64,
    pub memory_budget: u64,
    pub peak_rss: u64,
    pub seconds: PairsSeconds,
    /// The lexicon pass (documents, tokens, vocabulary, sieve), when this job ran it.
    pub first_pass: Option<NgramStats>,
    pub warnings: Vec<String>,
}

/// Finds and scores the pairs; results go to `sink`.
pub fn find_pairs(
    config: &PairsConfig,
    control: &Control,
    sink: &mut dyn PairsSink,
) -> Result<PairsStats, PipelineError> {
    config.check()?;
    let started = Instant::now();
    let base = &config.base;
    let plan = MemoryPlan::new(base.memory, base.threads, zstd_need(&base.inputs)?)
        .map_err(|what| PipelineError::Memory { budget: human_bytes(base.memory), what })?;
    let work = tempfile::Builder::new()
        .prefix("dupgram-pairs-")
        .tempdir_in(&base.tmp_dir)
        .map_err(|e| PipelineError::io(&base.tmp_dir, e))?;
    let mut stats = PairsStats { n: base.n, memory_budget: base.memory, ..PairsStats::default() };
    let job = PairsJob { config, control, plan, work: work.path(), first_tokens: std::cell::Cell::new(None) };
    let result = job.run(&mut stats, sink, started);
    drop(work);
    result?;
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

struct PairsJob<'a> {
    config: &'a PairsConfig,
    control: &'a Control,
    plan: MemoryPlan,
    work: &'a Path,
    /// Tokens the lexicon pass read, when it ran.
    first_tokens: std::cell::Cell<Option<u64>>,
}

/// Run tags for the pair runs (they carry no lexicon).
const CANDIDATE_RUNS: u64 = 0xCA4D_1DA7;
const KEPT_RUNS: u64 = 0x4B45_5054;

/// What the index pass learned about the documents, by document number.
struct DocTable {
    tokens: Vec<u32>,
    hashes: Vec<u128>,
    ids: String,
    id_ranges: Vec<(u64, u32)>,
}

impl DocTable {
    fn id(&self, doc: u32) -> &str {
        let (start, len) = self.id_ranges[doc as usize];
        &self.ids[start as usize..start as usize + len as usize]
    }

    fn len(&self) -> usize {
        self.tokens.len()
    }
}

/// Per-document facts from the index merge.
struct IndexTotals {
    /// Duplicate occurrences per document.
    occurrences: Vec<u32>,
    /// Distinct duplicate n-grams per document.
    types: Vec<u32>,
    ngrams: u64,
    total_occurrences: u64,
}

impl PairsJob<'_> {
    fn base(&self) -> &NgramConfig {
        &self.config.base
    }

    fn working(&self) -> u64 {
        self.plan.working()
    }

    fn run(&self, stats: &mut PairsStats, sink: &mut dyn PairsSink, started: Instant) -> Result<(), PipelineError> {
        let (lexicon, sieve, inputs) = self.duplicates(stats)?;
        stats.seconds.duplicates = started.elapsed().as_secs_f64();

        let t = Instant::now();
        let n = self.base().n;
        let layout = KeyLayout::new(n, lexicon.repeated_len().saturating_sub(1) as u32)?;
        let (runs, table) = self.index_pass(&inputs, &lexicon, sieve.as_ref(), layout, stats)?;
        drop(sieve);
        let index_path = self.work.join("index.dgr");
        let totals = self.merge_index(runs, &lexicon, &index_path, table.len(), stats)?;
        stats.seconds.index = t.elapsed().as_secs_f64();
        drop(lexicon);

        let t = Instant::now();
        let distinct: Vec<u32> = (0..table.len())
            .map(|d| {
                let positions = table.tokens[d].saturating_sub(n as u32 - 1);
                positions - (totals.occurrences[d] - totals.types[d])
            })
            .collect();
        stats.all_ngrams = table.tokens.iter().map(|&t| u64::from(t.saturating_sub(n as u32 - 1))).sum();
        stats.index_fraction =
            if stats.all_ngrams == 0 { 0.0 } else { stats.duplicate_occurrences as f64 / stats.all_ngrams as f64 };
        let blocks = self.plan_blocks(&totals.occurrences, table.len())?;
        stats.index_blocks = blocks.len() as u64;
        let mut rep_of = exact_groups(&table, n as u32);
        let mut cache = BlockCache { path: &index_path, n: n as u32, blocks: &blocks, loaded: Vec::new() };
        if blocks.len() == 1 {
            // Everything fits: check every group against the index itself.
            cache.ensure(0, None, &totals, &table)?;
            verify_groups(&mut rep_of, cache.block(0).expect("block 0 is loaded"), &table, n as u32);
        } else {
            stats.warnings.push(format!(
                "the index was split into {} blocks to fit in memory; groups of identical documents rest on 128-bit hashes of their token sequences",
                blocks.len()
            ));
        }
        let groups = group_members(&rep_of);
        stats.exact_groups = groups.len() as u64;
        stats.grouped_documents = groups.iter().map(|g| g.len() as u64).sum();
        let candidates = self.candidates(&index_path, &rep_of, &blocks, stats)?;
        stats.seconds.candidates = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let kept = self.score(candidates, &mut cache, &totals, &table, &distinct, &groups, stats)?;
        drop(cache);
        stats.seconds.scoring = t.elapsed().as_secs_f64();

        let t = Instant::now();
        self.output(kept, &table, &distinct, &groups, sink, stats)?;
        stats.seconds.output = t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Standard input can be read once, and this job reads the corpus twice
    /// or three times: copy it to the work directory first.
    fn spool_stdin(&self) -> Result<Vec<Input>, PipelineError> {
        self.base()
            .inputs
            .iter()
            .map(|input| match input {
                Input::Stdin { .. } => {
                    let path = self.work.join("stdin.copy");
                    let mut out = std::fs::File::create(&path).map_err(|e| PipelineError::io(&path, e))?;
                    std::io::copy(&mut std::io::stdin().lock(), &mut out).map_err(|e| PipelineError::io(&path, e))?;
                    Ok(Input::Path(path))
                }
                other => Ok(other.clone()),
            })
            .collect()
    }

    /// The lexicon, a sieve every duplicate n-gram passes (none if it was
    /// switched off), and the inputs to read from now on.
    fn duplicates(&self, stats: &mut PairsStats) -> Result<(Lexicon, Option<Sieve>, Vec<Input>), PipelineError> {
        let Some(d) = &self.config.dups else {
            let mut first = NgramStats { n: self.base().n, ..NgramStats::default() };
            let (prepared, inputs) = prepare(self.base(), self.control, self.work, &mut first)?;
            stats.bytes_spilled += first.bytes_spilled;
            self.first_tokens.set(Some(prepared.first_tokens));
            stats.first_pass = Some(first);
            return Ok((prepared.lexicon, prepared.sieve, inputs));
        };
        let inputs = self.spool_stdin()?;
        self.control.progress.start("reading duplicates", None);
        let n = self.base().n;
        let lexicon = Lexicon::load(&d.lexicon, Scope::Repeated)?;
        let fingerprints = self.work.join("dups.fp");
        let count = read_dups(&d.dups, &lexicon, n, &fingerprints)?;
        // Eight bytes (32 counters) per duplicate: about 3 % of other n-grams get through.
        let bytes = (count * 8).clamp(1 << 20, self.working() / 4);
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

    fn index_pass(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        layout: KeyLayout,
        stats: &mut PairsStats,
    ) -> Result<(Vec<RunFile>, DocTable), PipelineError> {
        match layout.words() {
            1 => self.index_pass_with::<1>(inputs, lexicon, sieve, layout, stats),
            2 => self.index_pass_with::<2>(inputs, lexicon, sieve, layout, stats),
            3 => self.index_pass_with::<3>(inputs, lexicon, sieve, layout, stats),
            4 => self.index_pass_with::<4>(inputs, lexicon, sieve, layout, stats),
            6 => self.index_pass_with::<6>(inputs, lexicon, sieve, layout, stats),
            8 => self.index_pass_with::<8>(inputs, lexicon, sieve, layout, stats),
            12 => self.index_pass_with::<12>(inputs, lexicon, sieve, layout, stats),
            _ => self.index_pass_with::<16>(inputs, lexicon, sieve, layout, stats),
        }
    }

    fn index_pass_with<const L: usize>(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        layout: KeyLayout,
        stats: &mut PairsStats,
    ) -> Result<(Vec<RunFile>, DocTable), PipelineError> {
        let base = self.base();
        let threads = base.threads as u64;
        let fixed = lexicon.heap_bytes() as u64 + sieve.map_or(0, |s| s.bytes() as u64) + threads * WRITER_BYTES;
        let room = self.working().saturating_sub(fixed) / 2 / threads;
        let capacity = base
            .limits
            .chunk_ngrams
            .unwrap_or((room / PostingChunk::<L>::item_bytes(layout) as u64).max(4096) as usize);
        let header = RunHeader::postings(base.n as u8, lexicon.identity());
        let workers: Vec<IndexWorker<L>> = (0..base.threads)
            .map(|worker| IndexWorker {
                scanner: Scanner::new(lexicon.normalization(), lexicon, layout, sieve.is_some()),
                sink: IndexSink {
                    sieve,
                    line: DelayLine::default(),
                    chunk: PostingChunk::new(layout, capacity),
                    dir: self.work,
                    worker,
                    next: 0,
                    header,
                    runs: Vec::new(),
                    spilled: 0,
                    failure: None,
                    doc: 0,
                    hasher: Xxh3::new(),
                },
                docs: Vec::new(),
                ids: String::new(),
            })
            .collect();
        self.control.progress.start("indexing", inputs.iter().map(Input::size).sum());
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
        if read.documents >= u64::from(u32::MAX) {
            return Err(PipelineError::Usage(format!(
                "{} documents: dupgram pairs handles at most {}",
                read.documents,
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
        let docs = read.documents as usize;
        let mut table = DocTable {
            tokens: vec![0; docs],
            hashes: vec![0; docs],
            ids: String::new(),
            id_ranges: vec![(0, 0); docs],
        };
        let mut runs = Vec::new();
        for (sink, records, ids, tokens) in outputs {
            stats.tokens += tokens;
            stats.bytes_spilled += sink.spilled;
            runs.extend(sink.runs);
            let offset = table.ids.len() as u64;
            table.ids.push_str(&ids);
            for r in records {
                let d = r.doc as usize;
                table.tokens[d] = r.tokens;
                table.hashes[d] = r.hash;
                table.id_ranges[d] = (offset + r.id_start, r.id_len);
            }
        }
        if let Some(first) = self.first_tokens.get()
            && first != stats.tokens
        {
            return Err(PipelineError::Changed(format!(
                "the lexicon pass read {first} tokens, the index pass {}",
                stats.tokens
            )));
        }
        Ok((runs, table))
    }

    /// Merges the postings runs into the duplicate-only index.
    fn merge_index(
        &self,
        runs: Vec<RunFile>,
        lexicon: &Lexicon,
        path: &Path,
        docs: usize,
        stats: &mut PairsStats,
    ) -> Result<IndexTotals, PipelineError> {
        self.control.progress.start("merging", None);
        let header = RunHeader::postings(self.base().n as u8, lexicon.identity());
        let mut sink = IndexMerge {
            writer: RunWriter::create(path, header)?,
            totals: IndexTotals { occurrences: vec![0; docs], types: vec![0; docs], ngrams: 0, total_occurrences: 0 },
        };
        let fan_in = self.fan_in(docs as u64 * 40);
        let mut next = 0u64;
        let work = self.work;
        let report = merge_all(
            runs,
            header,
            fan_in,
            || {
                next += 1;
                work.join(format!("postings-{next:06}.dgr"))
            },
            &mut sink,
            self.control,
        )?;
        let (_, summary) = sink.writer.finish()?;
        stats.bytes_spilled += report.bytes_written + summary.bytes;
        stats.duplicate_ngrams = sink.totals.ngrams;
        stats.duplicate_occurrences = sink.totals.total_occurrences;
        Ok(sink.totals)
    }

    fn fan_in(&self, other: u64) -> usize {
        let room = self.working().saturating_sub(other + 2 * WRITER_BYTES);
        self.base().limits.fan_in.unwrap_or_else(|| ((room / (96 * 1024)) as usize).clamp(2, open_file_allowance()))
    }

    /// Cuts the documents into blocks whose index fits in a third of the working memory.
    fn plan_blocks(&self, occurrences: &[u32], docs: usize) -> Result<Vec<Range<u32>>, PipelineError> {
        let arrays = docs as u64 * PER_DOC_BYTES;
        let budget = self.working().saturating_sub(arrays) / 3;
        let budget = self.base().limits.chunk_ngrams.map_or(budget, |c| c as u64 * 8);
        let mut blocks = Vec::new();
        let (mut start, mut occ) = (0u32, 0u64);
        for (d, &c) in occurrences.iter().enumerate() {
            let d = d as u32;
            if d > start && DocBlock::bytes_for(occ + u64::from(c), u64::from(d - start + 1)) > budget {
                blocks.push(start..d);
                start = d;
                occ = 0;
            }
            occ += u64::from(c);
        }
        blocks.push(start..docs as u32);
        Ok(blocks)
    }

    /// Every pair of representatives sharing an n-gram of at most `max_df` of them, unique, as runs.
    fn candidates(
        &self,
        index: &Path,
        rep_of: &[u32],
        blocks: &[Range<u32>],
        stats: &mut PairsStats,
    ) -> Result<Vec<RunFile>, PipelineError> {
        self.control.progress.start("candidates", None);
        let block_of = |doc: u32| blocks.partition_point(|b| b.end <= doc) as u32;
        let layout = KeyLayout::new(4, u32::MAX)?;
        let resident = if blocks.len() == 1 { blocks_bytes(blocks) } else { 0 };
        let room = self.working().saturating_sub(rep_of.len() as u64 * PER_DOC_BYTES + resident + WRITER_BYTES);
        let capacity = self.base().limits.chunk_ngrams.unwrap_or((room / 16).max(4096) as usize);
        let mut spill =
            PairSpill::new(Chunk::<2>::new(layout, capacity), self.work, "cand", RunHeader::counts(4, CANDIDATE_RUNS));
        let mut reader = RunReader::open(index)?;
        let mut reps: Vec<u32> = Vec::new();
        let mut scanned = 0u64;
        while reader.advance()? {
            scanned += 1;
            if scanned.is_multiple_of(65536) && self.control.interrupted() {
                return Err(PipelineError::Interrupted);
            }
            reps.clear();
            reps.extend(reader.occurrences().iter().map(|&o| rep_of[(o >> 32) as usize]));
            reps.sort_unstable();
            reps.dedup();
            if reps.len() as u64 > self.config.max_df {
                stats.boilerplate_ngrams += 1;
                continue;
            }
            for (i, &a) in reps.iter().enumerate() {
                for &b in &reps[i + 1..] {
                    spill.keep([block_of(a), block_of(b), a, b])?;
                }
            }
        }
        spill.write()?;
        stats.bytes_spilled += spill.bytes;
        Ok(spill.runs)
    }

    #[allow(clippy::too_many_arguments)]
    fn score(
        &self,
        candidates: Vec<RunFile>,
        cache: &mut BlockCache,
        totals: &IndexTotals,
        table: &DocTable,
        distinct: &[u32],
        groups: &[Vec<u32>],
        stats: &mut PairsStats,
    ) -> Result<Vec<RunFile>, PipelineError> {
        self.control.progress.start("scoring", None);
        let layout = KeyLayout::new(5, u32::MAX)?;
        let capacity = self.base().limits.chunk_ngrams.unwrap_or((self.working() / 16 / 24).max(4096) as usize);
        let mut scorer = Scorer {
            config: self.config,
            n: self.base().n as u32,
            cache,
            totals,
            table,
            kept: PairSpill::new(Chunk::<3>::new(layout, capacity), self.work, "kept", RunHeader::counts(5, KEPT_RUNS)),
            scratch: ScoreScratch::default(),
            candidates: 0,
            pruned: 0,
            scored: 0,
            kept_pairs: 0,
        };
        let fan_in = self.fan_in(
            table.len() as u64 * PER_DOC_BYTES
                + blocks_bytes(scorer.cache.blocks) * 2 / scorer.cache.blocks.len().max(1) as u64,
        );
        let mut next = 0u64;
        let work = self.work;
        let report = merge_all(
            candidates,
            RunHeader::counts(4, CANDIDATE_RUNS),
            fan_in,
            || {
                next += 1;
                work.join(format!("cand-merge-{next:06}.dgr"))
            },
            &mut scorer,
            self.control,
        )?;
        stats.bytes_spilled += report.bytes_written;
        // Identical documents: their pairs score 1 on every measure.
        for group in groups {
            let rep = group[0];
            for &member in group.iter().skip(1).take(self.config.max_group_pairs as usize) {
                let whole = distinct[rep as usize];
                let tokens = table.tokens[rep as usize];
                scorer.kept.keep([rep, member, whole, tokens, tokens])?;
                stats.group_pairs += 1;
            }
        }
        scorer.kept.write()?;
        stats.candidate_pairs = scorer.candidates;
        stats.pruned_pairs = scorer.pruned;
        stats.scored_pairs = scorer.scored;
        stats.kept_pairs = scorer.kept_pairs;
        stats.bytes_spilled += scorer.kept.bytes;
        Ok(scorer.kept.runs)
    }

    fn output(
        &self,
        kept: Vec<RunFile>,
        table: &DocTable,
        distinct: &[u32],
        groups: &[Vec<u32>],
        sink: &mut dyn PairsSink,
        stats: &mut PairsStats,
    ) -> Result<(), PipelineError> {
        self.control.progress.start("writing", None);
        let mut clusters = UnionFind::new(table.len());
        let mut out = PairOutput { table, distinct, sink, clusters: &mut clusters };
        let mut next = 0u64;
        let work = self.work;
        merge_all(
            kept,
            RunHeader::counts(5, KEPT_RUNS),
            self.fan_in(table.len() as u64 * PER_DOC_BYTES),
            || {
                next += 1;
                work.join(format!("kept-merge-{next:06}.dgr"))
            },
            &mut out,
            self.control,
        )?;
        for group in groups {
            for &member in &group[1..] {
                clusters.union(group[0], member);
            }
        }
        for cluster in clusters.clusters() {
            stats.clusters += 1;
            stats.clustered_documents += cluster.len() as u64;
            let ids: Vec<&str> = cluster.iter().map(|&d| table.id(d)).collect();
            sink.cluster(&ids)?;
        }
        Ok(())
    }
}

/// Bytes kept per document across the job: tokens, index counts, group, cluster, ID range, hash.
const PER_DOC_BYTES: u64 = 4 + 4 + 4 + 4 + 8 + 12 + 16;
/// Buffers of one run writer.
const WRITER_BYTES: u64 = 256 * 1024;

fn blocks_bytes(blocks: &[Range<u32>]) -> u64 {
    // The plan cut blocks to fit; this is only the share of memory they may take.
    blocks.iter().map(|b| u64::from(b.end - b.start) * 32).sum()
}

/// Groups of documents with identical token sequences (by hash); each
/// document maps to its group's first document. Documents too short for an
/// n-gram share nothing and stay alone.
fn exact_groups(table: &DocTable, n: u32) -> Vec<u32> {
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
    rep_of
}

/// Keeps in a group only documents whose index entries prove them identical
/// to the group's first: the same duplicate n-gram at every position.
fn verify_groups(rep_of: &mut [u32], block: &DocBlock, table: &DocTable, n: u32) {
    for d in 0..rep_of.len() as u32 {
        let rep = rep_of[d as usize];
        if rep == d {
            continue;
        }
        let positions = table.tokens[d as usize].saturating_sub(n - 1) as usize;
        let same = block.doc(d) == block.doc(rep) && block.doc(d).len() == positions;
        if !same {
            rep_of[d as usize] = d;
        }
    }
}

/// Members of each group of identical documents, the representative first.
fn group_members(rep_of: &[u32]) -> Vec<Vec<u32>> {
    let mut groups: std::collections::BTreeMap<u32, Vec<u32>> = std::collections::BTreeMap::new();
    for (d, &rep) in rep_of.iter().enumerate() {
        if rep != d as u32 {
            groups.entry(rep).or_insert_with(|| vec![rep]).push(d as u32);
        }
    }
    groups.into_values().collect()
}

/// Reads a `dupgram ngrams` list and writes the fingerprint of each n-gram; returns how many.
fn read_dups(path: &Path, lexicon: &Lexicon, n: usize, out: &Path) -> Result<u64, PipelineError> {
    let reader = dupgram_corpus::open_decoded(path)
        .map_err(|source| CorpusError::Open { name: path.display().to_string(), source })?;
    let mut writer = FingerprintWriter::create(out, n)?;
    let mut ids = Vec::with_capacity(n);
    for (i, line) in reader.lines().enumerate() {
        let bad = |what: String| {
            PipelineError::Corpus(CorpusError::BadRecord { name: path.display().to_string(), line: i as u64 + 1, what })
        };
        let line = line.map_err(|e| bad(e.to_string()))?;
        let gram = line.rsplit_once('\t').map_or(line.as_str(), |(g, _)| g);
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

/// A document the index pass finished.
struct DocRecord {
    doc: u64,
    tokens: u32,
    hash: u128,
    id_start: u64,
    id_len: u32,
}

struct IndexWorker<'a, const L: usize> {
    scanner: Scanner<'a, L>,
    sink: IndexSink<'a, L>,
    docs: Vec<DocRecord>,
    ids: String,
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
    runs: Vec<RunFile>,
    spilled: u64,
    failure: Option<PipelineError>,
    doc: u64,
    /// XXH3-128 of the current document's token sequence.
    hasher: Xxh3,
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

impl<const L: usize> IndexSink<'_, L> {
    fn keep(&mut self, key: [u64; L], occurrence: u64) -> Result<(), PipelineError> {
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

    fn write(&mut self) -> Result<(), PipelineError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(format!("postings-w{}-{:06}.dgr", self.worker, self.next));
        self.next += 1;
        let mut writer = RunWriter::create(&path, self.header)?;
        self.chunk.drain_sorted(|ids, occ| writer.push_postings(ids, occ))?;
        let (_, summary) = writer.finish()?;
        self.spilled += summary.bytes;
        self.runs.push(RunFile { path, bytes: summary.bytes, depth: 0 });
        Ok(())
    }
}

impl<'a, const L: usize> BatchWorker for IndexWorker<'a, L> {
    type Output = (IndexSink<'a, L>, Vec<DocRecord>, String, u64);

    fn batch(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        for piece in &batch.pieces {
            if let Some(id) = batch.piece_id(piece) {
                self.sink.doc = piece.doc;
                self.sink.hasher.reset();
                self.docs.push(DocRecord {
                    doc: piece.doc,
                    tokens: 0,
                    hash: 0,
                    id_start: self.ids.len() as u64,
                    id_len: id.len() as u32,
                });
                self.ids.push_str(id);
            }
            if let Some(tokens) = self.scanner.piece(batch.piece_text(piece), piece.last, &mut self.sink) {
                let record = self.docs.last_mut().expect("a document starts before it ends");
                record.tokens = u32::try_from(tokens).map_err(|_| {
                    PipelineError::Usage(format!("document {} has more than {} tokens", piece.doc, u32::MAX))
                })?;
                record.hash = self.sink.hasher.digest128();
            }
        }
        self.sink.flush_line()
    }

    fn finish(mut self) -> Result<Self::Output, PipelineError> {
        self.sink.flush_line()?;
        self.sink.write()?;
        let tokens = self.scanner.tokens();
        Ok((self.sink, self.docs, self.ids, tokens))
    }
}

/// Writes the duplicate-only index from the merged postings and counts, per document, what it holds.
struct IndexMerge {
    writer: RunWriter<BufWriter<std::fs::File>>,
    totals: IndexTotals,
}

impl MergeSink for IndexMerge {
    type Error = PipelineError;

    fn accept(&mut self, ngram: &[u32], count: u64, occurrences: &[u64]) -> Result<(), PipelineError> {
        if count < 2 {
            return Ok(());
        }
        self.writer.push_postings(ngram, occurrences)?;
        self.totals.ngrams += 1;
        self.totals.total_occurrences += count;
        let mut last = u64::MAX;
        for &o in occurrences {
            let doc = o >> 32;
            self.totals.occurrences[doc as usize] += 1;
            if doc != last {
                self.totals.types[doc as usize] += 1;
                last = doc;
            }
        }
        Ok(())
    }
}

/// Sorted pair keys spilled as runs.
struct PairSpill<'a, const L: usize> {
    chunk: Chunk<L>,
    layout: KeyLayout,
    dir: &'a Path,
    prefix: &'static str,
    header: RunHeader,
    next: u32,
    runs: Vec<RunFile>,
    bytes: u64,
}

impl<'a, const L: usize> PairSpill<'a, L> {
    fn new(chunk: Chunk<L>, dir: &'a Path, prefix: &'static str, header: RunHeader) -> Self {
        let layout = KeyLayout::new(usize::from(header.n), u32::MAX).expect("pair keys fit");
        PairSpill { chunk, layout, dir, prefix, header, next: 0, runs: Vec::new(), bytes: 0 }
    }

    fn keep(&mut self, fields: impl AsRef<[u32]>) -> Result<(), PipelineError> {
        self.chunk.push(self.layout.pack::<L>(fields.as_ref()));
        if self.chunk.is_full() { self.write() } else { Ok(()) }
    }

    fn write(&mut self) -> Result<(), PipelineError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(format!("{}-{:06}.dgr", self.prefix, self.next));
        self.next += 1;
        let mut writer = RunWriter::create(&path, self.header)?;
        self.chunk.drain_sorted(|fields, count| writer.push(fields, count))?;
        let (_, summary) = writer.finish()?;
        self.bytes += summary.bytes;
        self.runs.push(RunFile { path, bytes: summary.bytes, depth: 0 });
        Ok(())
    }
}

/// The document-major index of one or two blocks of documents.
struct BlockCache<'a> {
    path: &'a Path,
    n: u32,
    blocks: &'a [Range<u32>],
    /// (block number, block), at most two.
    loaded: Vec<(u32, DocBlock)>,
}

impl BlockCache<'_> {
    fn block(&self, number: u32) -> Option<&DocBlock> {
        self.loaded.iter().find(|(b, _)| *b == number).map(|(_, block)| block)
    }

    /// Makes blocks `a` and `b` resident (dropping others first, so at most two ever are).
    fn ensure(&mut self, a: u32, b: Option<u32>, totals: &IndexTotals, table: &DocTable) -> Result<(), PipelineError> {
        let wanted = [Some(a), b];
        self.loaded.retain(|(number, _)| wanted.contains(&Some(*number)));
        for number in wanted.into_iter().flatten() {
            if self.block(number).is_none() {
                let block = self.load(number, totals, table)?;
                self.loaded.push((number, block));
            }
        }
        Ok(())
    }

    /// Builds a block by reading the whole index once.
    fn load(&self, number: u32, totals: &IndexTotals, table: &DocTable) -> Result<DocBlock, PipelineError> {
        let range = self.blocks[number as usize].clone();
        let (lo, hi) = (range.start as usize, range.end as usize);
        let mut builder = DocBlock::builder(range.start, &totals.occurrences[lo..hi], self.n);
        let mut reader = RunReader::open(self.path)?;
        let mut id = 0u32;
        while reader.advance()? {
            for &o in reader.occurrences() {
                let doc = (o >> 32) as u32;
                if builder.wants(doc) {
                    builder.push(doc, id, o as u32);
                }
            }
            id += 1;
        }
        Ok(builder.finish(&table.tokens[lo..hi]))
    }
}

/// Scores candidate pairs as the candidate merge delivers them.
struct Scorer<'s, 'b> {
    config: &'s PairsConfig,
    n: u32,
    cache: &'s mut BlockCache<'b>,
    totals: &'s IndexTotals,
    table: &'s DocTable,
    kept: PairSpill<'s, 3>,
    scratch: ScoreScratch,
    candidates: u64,
    pruned: u64,
    scored: u64,
    kept_pairs: u64,
}

impl Scorer<'_, '_> {
    /// Whether an upper bound shows the pair cannot reach the thresholds.
    fn hopeless(&self, a: DocStats, b: DocStats) -> bool {
        let c = self.config;
        let ratio = |x: u64, y: u64| if y == 0 { 0.0 } else { x as f64 / y as f64 };
        let sscr =
            ratio(u64::from(a.dup_covered) + u64::from(b.dup_covered), u64::from(a.tokens) + u64::from(b.tokens));
        let cover = ratio(u64::from(a.dup_covered), u64::from(a.tokens))
            .max(ratio(u64::from(b.dup_covered), u64::from(b.tokens)));
        // At most min(dup types) n-grams are shared, and Jaccard grows with what is shared.
        let m = u64::from(a.dup_types.min(b.dup_types));
        let ssr = ratio(m, u64::from(a.distinct) + u64::from(b.distinct) - m);
        sscr < c.min_sscr || cover < c.min_cover || ssr < c.min_ssr
    }
}

impl MergeSink for Scorer<'_, '_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, _: &[u64]) -> Result<(), PipelineError> {
        let (block_a, block_b, a, b) = (key[0], key[1], key[2], key[3]);
        self.candidates += 1;
        self.cache.ensure(block_a, (block_b != block_a).then_some(block_b), self.totals, self.table)?;
        let ba = self.cache.block(block_a).expect("block a is loaded");
        let bb = self.cache.block(block_b).expect("block b is loaded");
        let (sa, sb) = (ba.stats(a), bb.stats(b));
        if self.hopeless(sa, sb) {
            self.pruned += 1;
            return Ok(());
        }
        self.scored += 1;
        let counts = score(ba.doc(a), bb.doc(b), self.n, &mut self.scratch);
        if self.config.keeps(&counts.scores(sa, sb)) {
            self.kept_pairs += 1;
            self.kept.keep([a, b, counts.shared, counts.covered_a, counts.covered_b])?;
        }
        Ok(())
    }
}

/// Writes kept pairs in document order and joins their clusters.
struct PairOutput<'a, 's> {
    table: &'a DocTable,
    distinct: &'a [u32],
    sink: &'s mut dyn PairsSink,
    clusters: &'s mut UnionFind,
}

impl MergeSink for PairOutput<'_, '_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, _: &[u64]) -> Result<(), PipelineError> {
        let (a, b) = (key[0], key[1]);
        let counts = PairCounts { shared: key[2], covered_a: key[3], covered_b: key[4] };
        let stats = |d: u32| DocStats {
            tokens: self.table.tokens[d as usize],
            distinct: self.distinct[d as usize],
            ..DocStats::default()
        };
        let scores = counts.scores(stats(a), stats(b));
        self.sink.pair(self.table.id(a), self.table.id(b), &scores)?;
        self.clusters.union(a, b);
        Ok(())
    }
}
