//! `find_pairs`: every pair of documents that shares an n-gram, scored exactly.
//!
//! 1. **The duplicate-only index** (see [`crate::index`]): lexicon pass,
//!    index pass, index merge.
//! 2. **Exact duplicates.** Documents whose token sequences hash alike
//!    (XXH3-128, and as many tokens) form groups, which the index merge
//!    checks against the index itself (`GroupCheck`), so a hash collision
//!    cannot join different documents; only a group's first document takes
//!    part in the pairing. With `expand_groups`, each pair kept is copied to
//!    the other members of its documents' groups (copies have the same
//!    tokens, so the same scores), and every pair within a group is listed
//!    (see [`dupgram_jobkit::groups`]).
//! 3. **Candidates.** Every pair of documents (group representatives) that
//!    share an n-gram held by at most `max_df` of them, sorted and made unique
//!    out of core, each with the number of n-grams that made it; and each
//!    document's number of n-grams held by more (see [`Candidates`]).
//! 4. **Scores.** For each candidate, cheap upper bounds first — from each
//!    document's own stats and from the candidate's count — then the exact
//!    scores from the document-major view of the index ([`DocBlock`]), loaded
//!    in blocks of documents that fit in memory. Pairs that pass go to a last
//!    sort, so they come out in document order whatever the block layout.
//! 5. **Output.** Pairs, then the connected components (clusters).
//!
//! [`PairPasses`] runs these steps one at a time over parts of the work —
//! the index pass over a shard of the corpus, the merge and the candidates
//! over a bucket of n-grams, the scoring over a range of documents — which
//! is how `dupgram-cluster` spreads a job over tasks; [`find_pairs`] runs
//! the same steps over one shard, one bucket and one range. Every step's
//! result is independent of the cut: an n-gram's occurrences are merged
//! whole in its bucket, a pair found in several buckets is made unique when
//! the scoring merges them, and the kept pairs are sorted at the end.
//!
//! [`DocBlock`]: dupgram_index::DocBlock

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_chunker::{Chunk, KeyLayout};
use dupgram_index::{DocStats, PairCounts, PairScores, ScoreScratch, UnionFind, score};
use dupgram_merge::{MergeSink, RunFile};
use dupgram_runs::{RunHeader, RunReader};
use serde::{Deserialize, Serialize};

use dupgram_corpus::Input;
use dupgram_lexicon::{Lexicon, Renumbering};
use dupgram_sieve::Sieve;

use crate::doc_ids::IdsKept;
use crate::index::{
    AfterCut, BlockCache, DocPastTable, DocTable, DupsInput, IndexJob, IndexPart, IndexStats, IndexTotals, MergeInto,
    MergedIndex, PER_DOC_BYTES, ShardCut, WRITER_BYTES, by_bucket, exact_groups, index_fraction, run_names,
};
use crate::ngrams::{NgramConfig, NgramStats, Reread, zstd_need};
use crate::parts::BucketTotals;
use crate::shard_docs::ShardDocuments;
use crate::stream_walk::{StreamJob, Streamed};
use crate::words::WordsFile;
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::groups::{Expansion, Groups};
use dupgram_jobkit::memory::{MemoryPlan, human_bytes, peak_rss};
use dupgram_jobkit::merging::merge_in;
use dupgram_jobkit::output::PairsSink;
use dupgram_jobkit::parted::PartedRuns;
use dupgram_jobkit::shared_sets::SharedSets;
use dupgram_vocab::SideFile;

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
    /// Pairs reported per group of identical documents (all members are in
    /// the clusters). With `expand_groups`, a group of more documents than
    /// this plus one is *capped*: reported as without expansion.
    pub max_group_pairs: u64,
    /// Every member of a group gets its first document's pairs, and every
    /// pair within a group is listed (see [`Groups`](crate::Groups)).
    pub expand_groups: bool,
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
            expand_groups: false,
        }
    }

    /// Refuses thresholds out of range.
    pub fn check(&self) -> Result<(), PipelineError> {
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

    /// Which groups of identical documents are expanded.
    pub fn expansion(&self) -> Expansion {
        Expansion { expand: self.expand_groups, max_group_pairs: self.max_group_pairs }
    }

    /// Whether a pair with these scores passes the thresholds.
    pub fn keeps(&self, s: &PairScores) -> bool {
        s.sscr >= self.min_sscr && s.ssr >= self.min_ssr && s.cover_a.max(s.cover_b) >= self.min_cover
    }
}

/// Receives the results, in order: pairs (by document order), then clusters.
/// Seconds per step.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PairsSeconds {
    pub index: f64,
    pub candidates: f64,
    pub scoring: f64,
    pub output: f64,
    pub total: f64,
}

/// The summary of a pairing job.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PairsStats {
    pub n: usize,
    #[serde(flatten)]
    pub index: IndexStats,
    /// Groups of identical documents, and the documents in them.
    pub exact_groups: u64,
    pub grouped_documents: u64,
    /// N-grams held by more than `max_df` documents: they make no candidates.
    pub boilerplate_ngrams: u64,
    /// Document sets of many n-grams alike, each paired once for all of
    /// them (see `shared_sets`; a set paired again after the table filled
    /// counts again), and the n-grams they stood for.
    pub shared_sets: u64,
    pub shared_set_ngrams: u64,
    pub candidate_pairs: u64,
    /// Candidates an upper bound showed could not reach the thresholds.
    pub pruned_pairs: u64,
    /// Pairs never made candidates, by reason (see [`CandidateSkips`]).
    pub skipped: CandidateSkips,
    pub scored_pairs: u64,
    pub kept_pairs: u64,
    /// Pairs of identical documents reported (at most `max_group_pairs` per group).
    pub group_pairs: u64,
    /// Pairs `expand_groups` added: those of the groups' other members, and
    /// those within a group beyond its first document's.
    pub expanded_pairs: u64,
    /// Groups of more than `max_group_pairs + 1` documents (not expanded),
    /// and the largest of them as `ID (N documents)`, at most [`NAMED_CAPPED`].
    pub capped_groups: u64,
    pub capped_named: Vec<String>,
    pub clusters: u64,
    pub clustered_documents: u64,
    /// Blocks the document-major index was split into to fit in memory.
    pub index_blocks: u64,
    /// Readings of the whole index to build blocks (the one that cut it
    /// into a file per block, when it was, included).
    pub index_reads: u64,
    pub memory_budget: u64,
    pub peak_rss: u64,
    pub seconds: PairsSeconds,
    pub warnings: Vec<String>,
}

/// Finds and scores the pairs; results go to `sink`.
pub fn find_pairs(
    config: &PairsConfig,
    control: &Control,
    sink: &mut dyn PairsSink,
) -> Result<PairsStats, PipelineError> {
    let started = Instant::now();
    let base = &config.base;
    let work = dupgram_jobkit::scratch::Scratch::create(&base.tmp_dir, "dupgram-pairs")?;
    let mut stats = PairsStats { n: base.n, memory_budget: base.memory, ..PairsStats::default() };
    let passes = PairPasses::new(config, control, work.path())?;
    let result = passes.run(&mut stats, sink, started);
    drop(work);
    result?;
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

/// The steps of [`find_pairs`], one at a time, for running them as
/// separate tasks, each over a part of the work (see `dupgram-cluster`):
/// the index pass over a shard of the corpus (documents numbered from the
/// shard's first), the index merge and the candidates over a bucket of
/// n-grams (the index in parts), the scoring over a range of documents, and
/// the output. [`find_pairs`] runs the same steps over one shard, one
/// bucket and one range.
pub struct PairPasses<'a> {
    config: &'a PairsConfig,
    control: &'a Control,
    index: IndexJob<'a>,
    work: &'a Path,
    /// The working memory of a nominal plan, which the scoring layout is cut
    /// by: tasks of a staged job must all cut it alike.
    nominal_working: u64,
}

/// How the documents are cut for scoring: ranges (one per scoring task),
/// each cut into blocks whose index fits in memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScoreLayout {
    pub blocks: Vec<Range<u32>>,
    /// The first block of each range.
    pub range_starts: Vec<u32>,
    /// Bytes of blocks that may be resident at once (two of the largest).
    pub resident: u64,
}

impl ScoreLayout {
    /// The range a block belongs to.
    fn range_of(&self, block: u32) -> usize {
        self.range_starts.partition_point(|&s| s <= block).saturating_sub(1)
    }

    /// The blocks of ranges `ranges`.
    fn range_blocks(&self, ranges: &Range<usize>) -> Range<usize> {
        let block = |range: usize| self.range_starts.get(range).map_or(self.blocks.len(), |&b| b as usize);
        block(ranges.start)..block(ranges.end)
    }

    /// The documents of ranges `ranges` (consecutive, so one range of documents).
    pub fn range_docs(&self, ranges: &Range<usize>) -> Range<u32> {
        let blocks = self.range_blocks(ranges);
        match (self.blocks.get(blocks.start), self.blocks.get(blocks.end.wrapping_sub(1))) {
            (Some(a), Some(b)) if blocks.end > blocks.start => a.start..b.end,
            _ => 0..0,
        }
    }

    /// The number of ranges.
    pub fn ranges(&self) -> usize {
        self.range_starts.len()
    }

    /// The documents the layout covers (its blocks', from the first).
    pub fn docs(&self) -> u32 {
        self.blocks.last().map_or(0, |b| b.end)
    }

    /// Whether the layout has the shape [`PairPasses::layout`] gives it:
    /// consecutive blocks from document 0, each range starting at a block of
    /// its own, in order. What fails says how (a layout read from a file).
    pub fn check(&self) -> Result<(), String> {
        let mut at = 0;
        for block in &self.blocks {
            if block.start != at || block.end < block.start {
                return Err(format!("block {}..{} does not follow document {at}", block.start, block.end));
            }
            at = block.end;
        }
        let starts_in_order = self.range_starts.first().is_none_or(|&s| s == 0)
            && self.range_starts.windows(2).all(|w| w[0] < w[1])
            && self.range_starts.last().is_none_or(|&s| (s as usize) < self.blocks.len());
        if !starts_in_order || self.range_starts.is_empty() != self.blocks.is_empty() {
            return Err("ranges that do not start at blocks of their own, in order".into());
        }
        Ok(())
    }
}

/// Run tags for the pair runs (they carry no lexicon).
const CANDIDATE_RUNS: u64 = 0xCA4D_1DA7;
const KEPT_RUNS: u64 = 0x4B45_5054;

impl<'a> PairPasses<'a> {
    pub fn new(config: &'a PairsConfig, control: &'a Control, work: &'a Path) -> Result<Self, PipelineError> {
        config.check()?;
        let base = &config.base;
        let zstd = zstd_need(&base.inputs)?;
        let memory_error = |what| PipelineError::Memory { budget: human_bytes(base.memory), what };
        let plan = MemoryPlan::new(base.memory, base.threads, zstd).map_err(memory_error)?;
        let nominal_working = MemoryPlan::nominal(base.memory, base.threads, zstd).map_err(memory_error)?.working();
        let index = IndexJob::new(base, config.dups.as_ref(), control, plan, work);
        Ok(PairPasses { config, control, index, work, nominal_working })
    }

    fn base(&self) -> &NgramConfig {
        &self.config.base
    }

    fn n(&self) -> u32 {
        self.base().n as u32
    }

    fn working(&self) -> u64 {
        self.index.working()
    }

    /// The whole job in this process.
    fn run(&self, stats: &mut PairsStats, sink: &mut dyn PairsSink, started: Instant) -> Result<(), PipelineError> {
        let (merged, table, by_hash, paths) = match &self.config.dups {
            None => {
                let built = self.index.build_streamed(true, None, Reread::StreamsOnly, true, &mut stats.index)?;
                let by_hash = built.rep_of.ok_or_else(|| PipelineError::Usage("internal error: no groups".into()))?;
                (built.merged, built.table, by_hash, built.paths)
            }
            Some(dups) => self.index_with_dups(dups, &mut stats.index)?,
        };
        index_fraction(&mut stats.index, &table, self.n());
        stats.seconds.index = started.elapsed().as_secs_f64();

        let t = Instant::now();
        let rep_of = self.proven_groups(by_hash, &table, &merged.totals, &merged.differing);
        let whole = 0..table.len() as u32;
        let layout = self.layout(&table, &merged.totals, std::slice::from_ref(&whole));
        let candidates = self.candidates(&paths, &rep_of, &table, &merged.totals, &layout, stats)?;
        stats.seconds.candidates = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let Candidates { runs, common } = candidates;
        let runs = runs.into_iter().map(|(_, run)| run).collect();
        // Nothing reads the index after the scoring: it goes once cut by block.
        let (parts, after) = (&merged.parts, AfterCut::RemoveIndex);
        let kept =
            self.score(0..1, runs, Some(&common), parts, after, &table, &merged.totals, &rep_of, &layout, stats)?;
        stats.seconds.scoring = t.elapsed().as_secs_f64();

        let t = Instant::now();
        self.output(kept, &table, &merged.totals, &rep_of, sink, stats)?;
        stats.seconds.output = t.elapsed().as_secs_f64();
        Ok(())
    }

    /// From a saved duplicate list (no lexicon pass, so no word streams):
    /// the index pass over the corpus and the index merge: the index, its
    /// documents, their groups by hash ([`exact_groups`]), its files.
    fn index_with_dups(
        &self,
        dups: &DupsInput,
        stats: &mut IndexStats,
    ) -> Result<(MergedIndex, DocTable, Vec<u32>, Vec<PathBuf>), PipelineError> {
        let (lexicon, sieve, inputs) = self.index.read_dups_list(dups)?;
        let cut = self.index.merge_cut(&lexicon);
        let shard = ShardCut { first_doc: 0, buckets: &cut };
        // The IDs go to disk: the job names documents from there.
        let (runs, table) = self.index_text(&inputs, &lexicon, sieve.as_ref(), shard, IdsKept::OnDisk, stats)?;
        drop(sieve);
        let paths = self.index.index_paths(cut.len() + 1);
        let (merged, by_hash) = self.merge_buckets(by_bucket(runs, paths.len()), &lexicon, &table, &paths, stats)?;
        Ok((merged, table, by_hash, paths))
    }

    /// The index pass over a part of the corpus: postings runs by bucket,
    /// and its documents, their IDs in memory (a task hands them on in its files).
    pub fn index_shard(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        cut: ShardCut,
        stats: &mut IndexStats,
    ) -> Result<(Vec<(usize, RunFile)>, DocTable), PipelineError> {
        self.index_text(inputs, lexicon, sieve, cut, IdsKept::Memory, stats)
    }

    /// The index pass over the text of `inputs`, the documents' IDs kept as `ids` says.
    fn index_text(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        cut: ShardCut,
        ids: IdsKept,
        stats: &mut IndexStats,
    ) -> Result<(Vec<(usize, RunFile)>, DocTable), PipelineError> {
        let t = Instant::now();
        let done = self.index.index_pass(inputs, lexicon, sieve, false, ids, cut, stats);
        stats.index_seconds += t.elapsed().as_secs_f64();
        done
    }

    /// [`index_shard`](Self::index_shard) over the shard's word streams,
    /// as its lexicon task wrote them ([`crate::Passes::shard_streams`] with
    /// its documents listed): no text is read, no word looked up.
    /// `renumbering` and `sides` say what the streams' codes are
    /// (`dupgram_vocab::resolve_shard`); `read` is the lexicon task's
    /// documents and tokens, `first_stream` the number of the shard's first
    /// stream among all shards'. The streams stay; the side files go once read.
    #[allow(clippy::too_many_arguments)]
    pub fn index_shard_streams(
        &self,
        streams: &[(Vec<PathBuf>, u64)],
        mut documents: ShardDocuments,
        lexicon: &Lexicon,
        (renumbering, sides): (Renumbering, Vec<Option<SideFile>>),
        sieve: Option<Sieve>,
        (cut, first_stream): (ShardCut, usize),
        read: (u64, u64),
        stats: &mut IndexStats,
    ) -> Result<(Vec<(usize, RunFile)>, DocTable), PipelineError> {
        let t = Instant::now();
        let files: Vec<WordsFile> =
            streams.iter().map(|(segments, bytes)| WordsFile { segments: segments.clone(), bytes: *bytes }).collect();
        let vocabulary = u32::try_from(renumbering.ids.len())
            .map_err(|_| PipelineError::Corrupt("a shard table of over 2^32 words".into()))?;
        // Named by IDs, so identical documents of different shards hash alike.
        let streamed = Streamed { renumbering, vocabulary, sides, final_ids: false, shard_streams: Some(first_stream) };
        let layout = KeyLayout::new(self.config.base.n, lexicon.len().saturating_sub(1) as u32)?;
        let job = StreamJob { streams: &files, lexicon, streamed: &streamed, layout };
        let (documents_read, tokens) = read;
        let mut first =
            NgramStats { n: self.config.base.n, documents: documents_read, tokens, ..NgramStats::default() };
        let done = self.index.index_shard_streams(&job, &mut documents.lists, sieve, cut, &mut first);
        streamed.remove_sides();
        stats.documents = documents_read;
        stats.tokens = tokens;
        stats.index_seconds += t.elapsed().as_secs_f64();
        done
    }

    /// Merges postings runs (of one bucket of n-grams, or all) into the
    /// index, written to `out`; checks the groups of identical documents of
    /// `table` (every document of the corpus) as it goes.
    pub fn merge_postings(
        &self,
        runs: Vec<RunFile>,
        lexicon: &Lexicon,
        table: &DocTable,
        out: &Path,
        stats: &mut IndexStats,
    ) -> Result<BucketTotals, PipelineError> {
        let (merged, _) = self.merge_buckets(vec![runs], lexicon, table, &[out.to_path_buf()], stats)?;
        Ok(BucketTotals { totals: merged.totals, differing: merged.differing })
    }

    /// [`merge_postings`](Self::merge_postings) of the runs of each bucket
    /// of n-grams into the bucket's file of `paths`, each on a thread of its
    /// own; returns the index and the groups by hash it checked.
    fn merge_buckets(
        &self,
        buckets: Vec<Vec<RunFile>>,
        lexicon: &Lexicon,
        table: &DocTable,
        paths: &[PathBuf],
        stats: &mut IndexStats,
    ) -> Result<(MergedIndex, Vec<u32>), PipelineError> {
        let t = Instant::now();
        let rep_of = exact_groups(table, self.n())?;
        let merged = self.index.merge_index(buckets, lexicon, paths, table, MergeInto::Files, Some(&rep_of), stats)?;
        stats.merge_seconds += t.elapsed().as_secs_f64();
        Ok((merged, rep_of))
    }

    /// Each document's group of identical documents, as its first member:
    /// equal hashes and lengths, proven identical by the index (documents
    /// any bucket showed to differ, `differing`, stay alone).
    pub fn groups(&self, table: &DocTable, totals: &IndexTotals, differing: &[u32]) -> Result<Vec<u32>, PipelineError> {
        Ok(self.proven_groups(exact_groups(table, self.n())?, table, totals, differing))
    }

    /// The groups by hash `rep_of` ([`exact_groups`]) as [`Self::groups`] proves them.
    fn proven_groups(
        &self,
        mut rep_of: Vec<u32>,
        table: &DocTable,
        totals: &IndexTotals,
        differing: &[u32],
    ) -> Vec<u32> {
        let n = self.n();
        for &d in differing {
            rep_of[d as usize] = d;
        }
        for (d, rep) in rep_of.iter_mut().enumerate() {
            // Identical to the first only if every position is a duplicate occurrence.
            if *rep != d as u32 && totals.occurrences[d] != table.tokens[d].saturating_sub(n - 1) {
                *rep = d as u32;
            }
        }
        rep_of
    }

    /// Cuts `ranges` of documents (each scored by its own task; together
    /// every document, in order) into blocks whose index fits in memory.
    pub fn layout(&self, table: &DocTable, totals: &IndexTotals, ranges: &[Range<u32>]) -> ScoreLayout {
        // Two blocks may be resident at once, beside the per-document arrays.
        let room = self.nominal_working.saturating_sub(per_document_bytes(table)) / 3;
        let resident = 2 * self.index.block_budget(room);
        let mut layout = ScoreLayout { blocks: Vec::new(), range_starts: Vec::new(), resident };
        for range in ranges {
            layout.range_starts.push(layout.blocks.len() as u32);
            layout.blocks.extend(self.index.plan_blocks(&totals.occurrences, range.clone(), room));
        }
        layout
    }

    /// Every pair of group representatives sharing an n-gram of the index
    /// files `index` that at most `max_df` of them hold, as runs cut by the
    /// scoring range of the pair's first document. Pairs whose documents'
    /// totals (`table`, `totals`: the whole corpus's) rule the thresholds
    /// out are never made: with `--min-ssr` by their set sizes
    /// ([`LengthFilter`]), and by [`DocBounds`].
    pub fn candidates(
        &self,
        index: &[PathBuf],
        rep_of: &[u32],
        table: &DocTable,
        totals: &IndexTotals,
        layout: &ScoreLayout,
        stats: &mut PairsStats,
    ) -> Result<Candidates, PipelineError> {
        self.control.start_pass("candidates", None);
        let blocks = &layout.blocks;
        let block_of = |doc: u32| blocks.partition_point(|b| b.end <= doc) as u32;
        let key = KeyLayout::new(4, u32::MAX)?;
        let room = self.working().saturating_sub(per_document_bytes(table) + WRITER_BYTES);
        // Half the room: a pair comes once for each n-gram it shares, so the
        // chunk holds mostly repeats its sort counts away, and the job's peak
        // stays the index pass's (Gutenberg at 2G: 1334 MiB, not 1845 with
        // the whole room; the candidates took 22.1 s, not 21.0 s).
        let capacity = self.base().limits.chunk_ngrams.unwrap_or((room / 2 / 16).max(4096) as usize);
        // A quarter of the room: sets are paired when they fill it, and at the end.
        let mut shared = SharedSets::new(room / 4);
        let shared_min = self.base().limits.shared_set_documents.unwrap_or(SharedSets::MIN_DOCUMENTS);
        let mut spill = PairSpill::new(
            Chunk::<2>::new(key, capacity),
            self.work,
            "cand",
            RunHeader::counts(4, CANDIDATE_RUNS),
            Some(layout),
        );
        let sizes = (self.config.min_ssr > 0.0).then(|| distinct_ngrams(table, totals, self.n()));
        let mut maker = PairMaker {
            filter: sizes.as_deref().map(|sizes| LengthFilter::new(sizes, self.config.min_ssr)),
            bounds: DocBounds::new(self.config, &table.tokens, totals),
            scratch: Vec::new(),
        };
        let mut reps: Vec<u32> = Vec::new();
        let mut common = vec![0u32; rep_of.len()];
        let mut scanned = 0u64;
        for index in index {
            let mut reader = RunReader::open(index)?;
            while reader.advance()? {
                scanned += 1;
                if scanned.is_multiple_of(65536) && self.control.interrupted() {
                    return Err(PipelineError::Interrupted);
                }
                reps.clear();
                for &o in reader.occurrences() {
                    let doc = o >> 32;
                    let rep = rep_of.get(doc as usize).ok_or_else(|| {
                        DocPastTable { doc, first_doc: 0, docs: rep_of.len() as u64 }
                            .in_file(&index.display().to_string())
                    })?;
                    reps.push(*rep);
                }
                reps.sort_unstable();
                reps.dedup();
                if reps.len() as u64 > self.config.max_df {
                    stats.boilerplate_ngrams += 1;
                    for &rep in &reps {
                        if let Some(c) = common.get_mut(rep as usize) {
                            *c = c.saturating_add(1);
                        }
                    }
                    continue;
                }
                if reps.len() >= shared_min {
                    if shared.add(&reps) {
                        self.pair_shared(&mut shared, &mut maker, &block_of, &mut spill, stats)?;
                    }
                    continue;
                }
                maker.pairs(&mut reps, 1, &block_of, &mut spill, &mut stats.skipped)?;
            }
        }
        self.pair_shared(&mut shared, &mut maker, &block_of, &mut spill, stats)?;
        spill.write()?;
        stats.index.bytes_spilled += spill.bytes;
        Ok(Candidates { runs: spill.runs, common })
    }

    /// Makes the pairs of every set in `shared`, each counted as many times
    /// as n-grams made the set.
    fn pair_shared(
        &self,
        shared: &mut SharedSets,
        maker: &mut PairMaker,
        block_of: &impl Fn(u32) -> u32,
        spill: &mut PairSpill<2>,
        stats: &mut PairsStats,
    ) -> Result<(), PipelineError> {
        for (mut docs, ngrams) in shared.drain() {
            if self.control.interrupted() {
                return Err(PipelineError::Interrupted);
            }
            stats.shared_sets += 1;
            stats.shared_set_ngrams += ngrams;
            maker.pairs(&mut docs, ngrams, block_of, spill, &mut stats.skipped)?;
        }
        Ok(())
    }

    /// Scores the candidates of consecutive ranges `ranges` (runs from any
    /// number of buckets: a pair found in several comes once) against the
    /// index `parts` (whose files go once cut by block when `after_cut`
    /// says so); the kept pairs, and those of the groups whose first
    /// document is in the ranges, as runs. With `expand_groups`, each kept
    /// pair's copies too, and every pair within a group (see [`Groups`]).
    /// With `common` ([`Candidates::common`], from every bucket's
    /// candidates), a candidate's count bounds its scores before they are
    /// computed; without, only each document's own stats do.
    #[allow(clippy::too_many_arguments)]
    pub fn score(
        &self,
        ranges: Range<usize>,
        candidates: Vec<RunFile>,
        common: Option<&[u32]>,
        parts: &[IndexPart],
        after_cut: AfterCut,
        table: &DocTable,
        totals: &IndexTotals,
        rep_of: &[u32],
        layout: &ScoreLayout,
        stats: &mut PairsStats,
    ) -> Result<Vec<RunFile>, PipelineError> {
        self.control.start_pass("scoring", None);
        let key = KeyLayout::new(5, u32::MAX)?;
        let capacity = self.base().limits.chunk_ngrams.unwrap_or((self.working() / 16 / 24).max(4096) as usize);
        let mut cache = BlockCache::new(parts, self.n(), &layout.blocks, layout.resident, self.control)
            .split_in(self.work, self.base().limits.block_files)
            .after_cut(after_cut);
        if ranges != (0..layout.ranges()) {
            // Part of the pairs: blocks need hold only the documents they name.
            cache = cache.only(named_documents(&candidates, table.len())?);
        }
        let groups = Groups::new(rep_of);
        let expansion = self.config.expansion();
        let mut scorer = Scorer {
            config: self.config,
            groups: &groups,
            expansion,
            n: self.n(),
            cache: &mut cache,
            common,
            totals,
            table,
            kept: PairSpill::new(
                Chunk::<3>::new(key, capacity),
                self.work,
                "kept",
                RunHeader::counts(5, KEPT_RUNS),
                None,
            ),
            scratch: ScoreScratch::default(),
            candidates: 0,
            pruned: 0,
            scored: 0,
            kept_pairs: 0,
            expanded_pairs: 0,
            inputs: run_names(&candidates),
        };
        let blocks = &layout.blocks;
        let fan_in =
            self.index.fan_in(per_document_bytes(table) + blocks_bytes(blocks) * 2 / blocks.len().max(1) as u64);
        let work = self.work;
        let report = merge_in(
            work,
            "cand-merge",
            candidates,
            RunHeader::counts(4, CANDIDATE_RUNS),
            fan_in,
            &mut scorer,
            self.control,
        )?;
        stats.index.bytes_spilled += report.bytes_written;
        // Identical documents: every n-gram shared, every token covered (a
        // group's documents have at least n tokens), so their pairs score 1
        // on every measure.
        let docs = layout.range_docs(&ranges);
        for group in groups.iter().filter(|g| docs.contains(&g[0])) {
            let rep = group[0];
            let whole = totals.distinct(rep as usize, table.tokens[rep as usize], self.n());
            let tokens = table.tokens[rep as usize];
            for &member in group.iter().skip(1).take(self.config.max_group_pairs as usize) {
                scorer.kept.keep([rep, member, whole, tokens, tokens])?;
                stats.group_pairs += 1;
            }
            if expansion.copies(&groups, rep).is_some() {
                for (i, &x) in group.iter().enumerate().skip(1) {
                    for &y in &group[i + 1..] {
                        scorer.kept.keep([x, y, whole, tokens, tokens])?;
                        stats.expanded_pairs += 1;
                    }
                }
            }
        }
        scorer.kept.write()?;
        stats.index_blocks += layout.range_blocks(&ranges).len() as u64;
        stats.index_reads += scorer.cache.index_reads;
        stats.candidate_pairs += scorer.candidates;
        stats.pruned_pairs += scorer.pruned;
        stats.scored_pairs += scorer.scored;
        stats.kept_pairs += scorer.kept_pairs;
        stats.expanded_pairs += scorer.expanded_pairs;
        stats.index.bytes_spilled += scorer.kept.bytes;
        Ok(scorer.kept.runs.into_iter().map(|(_, run)| run).collect())
    }

    /// Hands the kept pairs (runs from any number of ranges) to `sink` in
    /// document order, then the clusters.
    pub fn output(
        &self,
        kept: Vec<RunFile>,
        table: &DocTable,
        totals: &IndexTotals,
        rep_of: &[u32],
        sink: &mut dyn PairsSink,
        stats: &mut PairsStats,
    ) -> Result<(), PipelineError> {
        self.control.start_pass("writing", None);
        let groups = Groups::new(rep_of);
        stats.exact_groups = groups.len() as u64;
        stats.grouped_documents = groups.iter().map(|g| g.len() as u64).sum();
        let expansion = self.config.expansion();
        let mut capped: Vec<&[u32]> = groups.iter().filter(|g| expansion.capped(g)).collect();
        stats.capped_groups = capped.len() as u64;
        capped.sort_unstable_by_key(|g| (std::cmp::Reverse(g.len()), g[0]));
        stats.capped_named = capped
            .iter()
            .take(NAMED_CAPPED)
            .map(|g| Ok(format!("{} ({} documents)", table.id(g[0])?, g.len())))
            .collect::<Result<_, PipelineError>>()?;
        let distinct = distinct_ngrams(table, totals, self.n());
        let mut clusters = UnionFind::new(table.len());
        let inputs = run_names(&kept);
        // The outputs' encoders fill up as they are written: beside the merge, not in its room.
        let encoders = sink.encoder_bytes();
        let mut out = PairOutput { table, distinct: &distinct, sink, clusters: &mut clusters, inputs };
        let work = self.work;
        merge_in(
            work,
            "kept-merge",
            kept,
            RunHeader::counts(5, KEPT_RUNS),
            self.index.fan_in(per_document_bytes(table) + encoders),
            &mut out,
            self.control,
        )?;
        for group in groups.iter() {
            for &member in &group[1..] {
                clusters.union(group[0], member);
            }
        }
        for cluster in clusters.clusters() {
            stats.clusters += 1;
            stats.clustered_documents += cluster.len() as u64;
            let ids = cluster.iter().map(|&d| table.id(d)).collect::<Result<Vec<_>, PipelineError>>()?;
            let ids: Vec<&str> = ids.iter().map(|id| id.as_ref()).collect();
            sink.cluster(&ids)?;
        }
        Ok(())
    }
}

/// The documents candidate runs name (a bit each).
fn named_documents(candidates: &[RunFile], docs: usize) -> Result<Vec<u64>, PipelineError> {
    let mut bits = vec![0u64; docs.div_ceil(64)];
    for run in candidates {
        let mut reader = RunReader::open(&run.path)?;
        while reader.advance()? {
            for &doc in &reader.ngram()[2..4] {
                let past = || {
                    let docs = docs as u64;
                    PipelineError::Corrupt(format!(
                        "{}: corrupt candidates: document {doc}, outside the document table's {docs} documents",
                        run.path.display()
                    ))
                };
                let word = bits.get_mut((doc / 64) as usize).filter(|_| (doc as usize) < docs).ok_or_else(past)?;
                *word |= 1 << (doc % 64);
            }
        }
    }
    Ok(bits)
}

/// `|S_X|` of every document: its n-gram positions less its repeats.
fn distinct_ngrams(table: &DocTable, totals: &IndexTotals, n: u32) -> Vec<u32> {
    (0..table.len()).map(|d| totals.distinct(d, table.tokens[d], n)).collect()
}

fn blocks_bytes(blocks: &[Range<u32>]) -> u64 {
    // The plan cut blocks to fit; this is only the share of memory they may take.
    blocks.iter().map(|b| u64::from(b.end - b.start) * 32).sum()
}

/// Pairs never made candidates, by reason; each pair counted once per
/// n-gram it shares (the work saved).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CandidateSkips {
    /// `--min-ssr`: in length partitions more than one apart.
    pub partition: u64,
    /// `--min-ssr`: in the same or neighbouring partitions, set sizes still too far apart.
    pub length: u64,
    /// Within the sizes, but the two documents' own totals bound a score
    /// below its threshold ([`DocBounds`]).
    pub bounds: u64,
}

/// What two documents' own totals say about any pair of them, before the
/// pair is made: SpotSigs' idea (Theobald et al. 2008) of pruning by what a
/// pair can still share, for every threshold.
///
/// A candidate is made once for each n-gram its documents share, then
/// sorted, spilled, merged and looked up in the index before its upper
/// bound ([`PairCounts::most`]) rules it out. On short documents that is
/// most of the work: on 3.3M Reddit comments, 95 % of the candidates fail
/// the bound. Here the same bound is taken with what is known per document
/// when the pairs are made — tokens, duplicate occurrences and duplicate
/// types ([`IndexTotals`]) — and with no count of shared n-grams (the pair
/// may share as many as the smaller of their duplicate types), which can
/// only make it larger:
///
/// * the tokens of A a pair covers are at most A's tokens, and at most `n`
///   for each of A's duplicate occurrences left once every duplicate type A
///   does not share takes one;
/// * the shared types are at most either document's duplicate types.
///
/// The scores grow with each count and are computed by the same functions
/// as the scorer's, so a pair ruled out here is one the scorer would rule
/// out or score below its thresholds: the pairs kept do not change.
pub struct DocBounds<'a> {
    config: &'a PairsConfig,
    tokens: &'a [u32],
    totals: &'a IndexTotals,
    n: u32,
}

impl<'a> DocBounds<'a> {
    /// The bounds of a job's thresholds; none when they keep every pair
    /// (all zero), where a bound could rule nothing out.
    pub fn new(config: &'a PairsConfig, tokens: &'a [u32], totals: &'a IndexTotals) -> Option<Self> {
        let open = PairScores {
            sscr: 0.0,
            ssr: 0.0,
            contain_a_in_b: 0.0,
            contain_b_in_a: 0.0,
            cover_a: 0.0,
            cover_b: 0.0,
            shared: 0,
        };
        let n = config.base.n as u32;
        (!config.keeps(&open)).then_some(DocBounds { config, tokens, totals, n })
    }

    /// Document `d` as far as its totals know it; `None` past the arrays.
    fn doc(&self, d: u32) -> Option<BoundDoc> {
        let i = d as usize;
        let (&tokens, &occurrences, &dup_types) =
            (self.tokens.get(i)?, self.totals.occurrences.get(i)?, self.totals.types.get(i)?);
        let distinct = self.totals.distinct(i, tokens, self.n);
        // Every covered token is one of the document's: `tokens` bounds the
        // tokens its duplicates cover, which the index blocks count exactly.
        let stats = DocStats { tokens, distinct, dup_types, dup_covered: tokens };
        let most_covered = u64::from(tokens).min(u64::from(occurrences) * u64::from(self.n));
        let slack = most_covered as f64 - self.config.min_sscr * f64::from(tokens);
        Some(BoundDoc { doc: d, stats, occurrences: occurrences as usize, slack })
    }

    fn could_pass(&self, a: &BoundDoc, b: &BoundDoc) -> bool {
        let most = PairCounts::most(a.stats, a.occurrences, b.stats, b.occurrences, u64::MAX, self.n);
        self.config.keeps(&most.scores(a.stats, b.stats))
    }

    /// Whether a pair of `a` and `b` could pass the thresholds (true when
    /// either is unknown: only a proof rules a pair out).
    pub fn could_keep(&self, a: u32, b: u32) -> bool {
        match (self.doc(a), self.doc(b)) {
            (Some(a), Some(b)) => self.could_pass(&a, &b),
            _ => true,
        }
    }

    /// Hands `keep` every pair of `docs` that could pass, in document order
    /// within the pair; returns how many it ruled out.
    ///
    /// The pairs that could reach `--min-sscr` are not all looked at: a
    /// document covers at most `c = min(tokens, n × occurrences)` of its
    /// tokens, so a pair reaches SSCR τ only if `(c_a − τ t_a) + (c_b − τ
    /// t_b) ≥ 0`. With the documents in decreasing order of that *slack*,
    /// each document's partners are a prefix of those after it; the pairs
    /// past it are counted, never made (two documents that are mostly their
    /// own words, the most common pair on the web, never meet). Each pair
    /// in the prefix then takes the whole bound. The prefix ends a
    /// thousandth of a token late: far more than the rounding of any sum of
    /// 32-bit counts, so no pair the bound passes is left out.
    pub fn pairs<E>(
        &self,
        docs: &[u32],
        scratch: &mut Vec<BoundDoc>,
        mut keep: impl FnMut(u32, u32) -> Result<(), E>,
    ) -> Result<u64, E> {
        scratch.clear();
        let mut unknown = Vec::new();
        for &d in docs {
            match self.doc(d) {
                Some(bound) => scratch.push(bound),
                None => unknown.push(d),
            }
        }
        scratch.sort_unstable_by(|x, y| y.slack.total_cmp(&x.slack).then(x.doc.cmp(&y.doc)));
        let mut ruled_out = 0u64;
        for (i, a) in scratch.iter().enumerate() {
            let rest = &scratch[i + 1..];
            let reach = rest.partition_point(|b| b.slack + a.slack >= -SLACK_MARGIN);
            for b in &rest[..reach] {
                if self.could_pass(a, b) {
                    keep(a.doc.min(b.doc), a.doc.max(b.doc))?;
                } else {
                    ruled_out += 1;
                }
            }
            ruled_out += (rest.len() - reach) as u64;
        }
        // Documents past the arrays (files that disagree) pair with every other: only a proof rules a pair out.
        for (i, &a) in unknown.iter().enumerate() {
            for &b in unknown[i + 1..].iter().chain(scratch.iter().map(|x| &x.doc)) {
                keep(a.min(b), a.max(b))?;
            }
        }
        Ok(ruled_out)
    }
}

/// Tokens by which a pair's slack may fall short and the pair still be made.
const SLACK_MARGIN: f64 = 1e-3;

/// A document of a posting list, with what bounds its pairs.
#[derive(Debug, Clone, Copy)]
pub struct BoundDoc {
    doc: u32,
    stats: DocStats,
    occurrences: usize,
    /// The most tokens it can cover less `--min-sscr` of its tokens.
    slack: f64,
}

/// The length-based partitioning and pruning of SpotSigs (Theobald et al.
/// 2008) for a Jaccard threshold τ (`--min-ssr`). Jaccard is at most the
/// ratio of the smaller set to the larger, so a pair with `|A| / |B| < τ`
/// (`|A| ≤ |B|`) can never be kept, and is not made a candidate.
///
/// The partitions are the paper's: `p_0 = 1`, and `p_{k+1}` the smallest
/// integer with `p_{k+1} - p_k > (1 - τ) p_{k+1}`. Any pair within the
/// ratio then lies in one partition or two neighbouring ones, which is the
/// first, coarse cut; the exact ratio is the second. (The slides' example
/// boundaries for τ = 0.7, 1, 3, 6, 10, …, do not follow from that rule,
/// which gives 1, 2, 3, 5, 8, 12, …; the rule is what is implemented.)
///
/// Each posting list is sorted by set size, so every document meets only
/// the documents from its own size up to `|A| / τ`: the pairs beyond are
/// counted, never enumerated.
pub struct LengthFilter<'a> {
    sizes: &'a [u32],
    tau: f64,
    /// Partition lower bounds, ascending, from 1.
    bounds: Vec<u32>,
}

impl<'a> LengthFilter<'a> {
    pub fn new(sizes: &'a [u32], tau: f64) -> Self {
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let mut bounds = vec![1u32];
        loop {
            let last = *bounds.last().expect("bounds start with 1");
            if last > largest || bounds.len() >= Self::MAX_PARTITIONS {
                break;
            }
            // The smallest p > last with p - last > (1 - τ) p, i.e. τ p > last.
            let mut next = ((f64::from(last) / tau).floor() as u64 + 1).max(u64::from(last) + 1);
            while next > u64::from(last) + 1 && tau * ((next - 1) as f64) > f64::from(last) {
                next -= 1;
            }
            let Ok(next) = u32::try_from(next) else { break };
            bounds.push(next);
        }
        LengthFilter { sizes, tau, bounds }
    }

    /// At most this many partitions (τ near 1 makes one per size): sizes
    /// past the last bound share its partition, which only moves pairs from
    /// the `partition` count to the `length` count.
    const MAX_PARTITIONS: usize = 1 << 16;

    fn size(&self, doc: u32) -> u32 {
        self.sizes.get(doc as usize).copied().unwrap_or(0)
    }

    /// The partition of a set size.
    pub fn partition(&self, size: u32) -> usize {
        self.bounds.partition_point(|&b| b <= size).saturating_sub(1)
    }

    /// Whether sizes `small ≤ large` allow a Jaccard of τ. The same division
    /// as the score's, so a pair whose score could reach τ always passes.
    fn within(&self, small: u32, large: u32) -> bool {
        large == 0 || f64::from(small) / f64::from(large) >= self.tau
    }

    /// Hands `keep` every pair of `docs` (a posting list, reordered here)
    /// whose sizes allow τ, in document order within the pair; counts the others.
    pub fn pairs<E>(
        &self,
        docs: &mut [u32],
        skipped: &mut CandidateSkips,
        mut keep: impl FnMut(u32, u32) -> Result<(), E>,
    ) -> Result<(), E> {
        docs.sort_unstable_by_key(|&d| (self.size(d), d));
        for (i, &a) in docs.iter().enumerate() {
            let small = self.size(a);
            let rest = &docs[i + 1..];
            let reach = rest.partition_point(|&b| self.within(small, self.size(b)));
            for &b in &rest[..reach] {
                keep(a.min(b), a.max(b))?;
            }
            let next_partition = self.partition(small) + 1;
            let near = rest[reach..].partition_point(|&b| self.partition(self.size(b)) <= next_partition);
            skipped.length += near as u64;
            skipped.partition += (rest.len() - reach - near) as u64;
        }
        Ok(())
    }
}

/// Capped groups named in the summary (the largest).
pub const NAMED_CAPPED: usize = 10;

/// Bytes a document costs while candidates are made and scored: the
/// index's arrays and its count of common n-grams ([`Candidates::common`]).
const PAIR_DOC_BYTES: u64 = PER_DOC_BYTES + 4;

/// What the documents of `table` hold while candidates are made and
/// scored: [`PAIR_DOC_BYTES`] each, and their hashes and IDs when held (a
/// staged job's).
fn per_document_bytes(table: &DocTable) -> u64 {
    table.len() as u64 * PAIR_DOC_BYTES + table.hashes.len() as u64 * 16 + table.ids.heap_bytes()
}

/// The candidate pairs, as runs cut by scoring range, and what their counts leave out.
///
/// A candidate's count (the merge sums it over runs and buckets) is the
/// number of n-grams that made it: the n-gram types both documents hold
/// among those at most `max_df` documents hold. The others, *common* to
/// more documents, make no candidates; `common[d]` counts those document
/// `d` holds, so a pair shares at most its count plus the smaller of its
/// documents' `common` — a bound the scorer uses before the exact walk.
pub struct Candidates {
    pub runs: Vec<(usize, RunFile)>,
    pub common: Vec<u32>,
}

/// Makes the pairs of posting lists, less those its filter or bounds rule out.
struct PairMaker<'a> {
    filter: Option<LengthFilter<'a>>,
    bounds: Option<DocBounds<'a>>,
    /// The documents of a list with what bounds them, reused.
    scratch: Vec<BoundDoc>,
}

impl PairMaker<'_> {
    /// Every pair of `docs` (sorted, distinct) into `spill`, counted
    /// `ngrams` times (the n-grams the documents share), less those the
    /// filter or the bounds rule out (counted in `skipped`, once per
    /// n-gram, as the work saved).
    fn pairs(
        &mut self,
        docs: &mut [u32],
        ngrams: u64,
        block_of: &impl Fn(u32) -> u32,
        spill: &mut PairSpill<2>,
        skipped: &mut CandidateSkips,
    ) -> Result<(), PipelineError> {
        let mut keep = |a: u32, b: u32| spill.keep_counted([block_of(a), block_of(b), a, b], ngrams);
        match (&self.filter, &self.bounds) {
            (Some(filter), bounds) => {
                let (mut these, mut bounded) = (CandidateSkips::default(), 0);
                filter.pairs(docs, &mut these, |a, b| {
                    if bounds.as_ref().is_some_and(|bounds| !bounds.could_keep(a, b)) {
                        bounded += 1;
                        return Ok(());
                    }
                    keep(a, b)
                })?;
                skipped.length += these.length * ngrams;
                skipped.partition += these.partition * ngrams;
                skipped.bounds += bounded * ngrams;
            }
            (None, Some(bounds)) => {
                skipped.bounds += bounds.pairs(docs, &mut self.scratch, keep)? * ngrams;
            }
            (None, None) => {
                for (i, &a) in docs.iter().enumerate() {
                    for &b in &docs[i + 1..] {
                        keep(a, b)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Sorted pair keys spilled as runs; with a scoring layout, cut by the
/// range of the key's first field (a block number).
struct PairSpill<'a, const L: usize> {
    chunk: Chunk<L>,
    layout: KeyLayout,
    dir: &'a Path,
    prefix: &'static str,
    header: RunHeader,
    ranges: Option<&'a ScoreLayout>,
    next: u32,
    /// Each run with its range.
    runs: Vec<(usize, RunFile)>,
    bytes: u64,
}

impl<'a, const L: usize> PairSpill<'a, L> {
    fn new(
        chunk: Chunk<L>,
        dir: &'a Path,
        prefix: &'static str,
        header: RunHeader,
        ranges: Option<&'a ScoreLayout>,
    ) -> Self {
        let layout = KeyLayout::new(usize::from(header.n), u32::MAX).expect("pair keys fit");
        PairSpill { chunk, layout, dir, prefix, header, ranges, next: 0, runs: Vec::new(), bytes: 0 }
    }

    fn keep(&mut self, fields: impl AsRef<[u32]>) -> Result<(), PipelineError> {
        self.chunk.push(self.layout.pack::<L>(fields.as_ref()));
        if self.chunk.is_full() { self.write() } else { Ok(()) }
    }

    /// [`Self::keep`], `count` times.
    fn keep_counted(&mut self, fields: impl AsRef<[u32]>, count: u64) -> Result<(), PipelineError> {
        let key = self.layout.pack::<L>(fields.as_ref());
        if count == 1 {
            self.chunk.push(key)
        } else {
            self.chunk.push_counted(key, count)
        }
        if self.chunk.is_full() { self.write() } else { Ok(()) }
    }

    fn write(&mut self) -> Result<(), PipelineError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = self.next;
        self.next += 1;
        let (dir, prefix, ranges) = (self.dir, self.prefix, self.ranges);
        let mut runs = PartedRuns::new(self.header);
        self.chunk.drain_sorted(|fields, count| -> Result<(), PipelineError> {
            let range = ranges.map_or(0, |r| r.range_of(fields[0]));
            let path = |r: usize| dir.join(format!("{prefix}-r{r:04}-{chunk:06}.dgr"));
            Ok(runs.writer(range, path)?.push(fields, count)?)
        })?;
        let finished = runs.finish()?;
        self.bytes += finished.iter().map(|(_, r)| r.bytes).sum::<u64>();
        self.runs.extend(finished);
        Ok(())
    }
}

/// Scores candidate pairs as the candidate merge delivers them.
struct Scorer<'s, 'b> {
    config: &'s PairsConfig,
    groups: &'s Groups,
    expansion: Expansion,
    n: u32,
    cache: &'s mut BlockCache<'b>,
    common: Option<&'s [u32]>,
    totals: &'s IndexTotals,
    table: &'s DocTable,
    kept: PairSpill<'s, 3>,
    scratch: ScoreScratch,
    candidates: u64,
    pruned: u64,
    scored: u64,
    kept_pairs: u64,
    expanded_pairs: u64,
    /// The candidate runs merged, named in errors.
    inputs: String,
}

impl Scorer<'_, '_> {
    /// Keeps representatives `a` < `b`'s pair and, with `expand_groups`,
    /// the same pair of each of their copies: `(x, y)` with `x < y`, the
    /// counts turned round when a copy of `a` comes after one of `b`.
    fn keep(&mut self, a: u32, b: u32, counts: PairCounts) -> Result<(), PipelineError> {
        let PairCounts { shared, covered_a, covered_b } = counts;
        self.kept.keep([a, b, shared, covered_a, covered_b])?;
        let (copies_a, copies_b) = (self.expansion.copies(self.groups, a), self.expansion.copies(self.groups, b));
        if copies_a.is_none() && copies_b.is_none() {
            return Ok(());
        }
        let (only_a, only_b) = ([a], [b]);
        for &x in copies_a.unwrap_or(&only_a) {
            for &y in copies_b.unwrap_or(&only_b) {
                if (x, y) == (a, b) {
                    continue;
                }
                let key =
                    if x < y { [x, y, shared, covered_a, covered_b] } else { [y, x, shared, covered_b, covered_a] };
                self.kept.keep(key)?;
                self.expanded_pairs += 1;
            }
        }
        Ok(())
    }

    /// The most n-gram types representatives `a` and `b`, a candidate made
    /// by `count` n-grams, can share (see [`Candidates`]).
    fn shared_types(&self, a: u32, b: u32, count: u64) -> u64 {
        let common = |d: u32| self.common.and_then(|c| c.get(d as usize)).copied();
        match (common(a), common(b)) {
            (Some(x), Some(y)) => count.saturating_add(u64::from(x.min(y))),
            _ => u64::MAX,
        }
    }
}

impl MergeSink for Scorer<'_, '_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], count: u64, _: &[u64]) -> Result<(), PipelineError> {
        let (block_a, block_b, a, b) = (key[0], key[1], key[2], key[3]);
        // The key's documents index the blocks: each must be in the block it names.
        let blocks = self.cache.blocks;
        let holds = |block: u32, doc: u32| blocks.get(block as usize).is_some_and(|r| r.contains(&doc));
        if !holds(block_a, a) || !holds(block_b, b) {
            return Err(PipelineError::Corrupt(format!(
                "{}: corrupt candidates: documents {a} and {b} are not in blocks {block_a} and {block_b} of the layout",
                self.inputs
            )));
        }
        self.candidates += 1;
        let (occurrences, tokens) = (&self.totals.occurrences, &self.table.tokens);
        self.cache.ensure(block_a, (block_b != block_a).then_some(block_b), occurrences, tokens)?;
        let ba = self.cache.block(block_a).expect("block a is loaded");
        let bb = self.cache.block(block_b).expect("block b is loaded");
        let (sa, sb) = (ba.stats(a), bb.stats(b));
        let (da, db) = (ba.doc(a), bb.doc(b));
        // The scores only grow with the counts, so an upper bound of the
        // counts that misses the thresholds rules the pair out.
        let most = PairCounts::most(sa, da.len(), sb, db.len(), self.shared_types(a, b, count), self.n);
        if !self.config.keeps(&most.scores(sa, sb)) {
            self.pruned += 1;
            return Ok(());
        }
        self.scored += 1;
        let counts = score(da, db, self.n, &mut self.scratch);
        if self.config.keeps(&counts.scores(sa, sb)) {
            self.kept_pairs += 1;
            self.keep(a, b, counts)?;
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
    /// The kept runs merged, named in errors.
    inputs: String,
}

impl MergeSink for PairOutput<'_, '_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, _: &[u64]) -> Result<(), PipelineError> {
        let (a, b) = (key[0], key[1]);
        let docs = self.table.len() as u64;
        if let Some(doc) = [a, b].into_iter().find(|&d| u64::from(d) >= docs) {
            return Err(PipelineError::Corrupt(format!(
                "{}: corrupt kept pairs: document {doc}, outside the document table's {docs} documents",
                self.inputs
            )));
        }
        let counts = PairCounts { shared: key[2], covered_a: key[3], covered_b: key[4] };
        let stats = |d: u32| DocStats {
            tokens: self.table.tokens[d as usize],
            distinct: self.distinct[d as usize],
            ..DocStats::default()
        };
        let scores = counts.scores(stats(a), stats(b));
        self.sink.pair(&self.table.id(a)?, &self.table.id(b)?, &scores)?;
        self.clusters.union(a, b);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dupgram_runs::RunWriter;

    #[test]
    fn length_partitions_follow_the_papers_rule() {
        let sizes = [40u32];
        let filter = LengthFilter::new(&sizes, 0.7);
        assert_eq!(filter.bounds, [1, 2, 3, 5, 8, 12, 18, 26, 38, 55]);
        // Each bound is the smallest p with p - previous > (1 - τ) p.
        for w in filter.bounds.windows(2) {
            let (prev, p) = (f64::from(w[0]), f64::from(w[1]));
            let smaller = p - 1.0;
            assert!(p - prev > 0.3 * p, "{w:?}");
            assert!(smaller == prev || smaller - prev <= 0.3 * smaller, "{w:?} is not the smallest");
        }
    }

    proptest::proptest! {
        /// The filter makes exactly the pairs whose size ratio reaches τ,
        /// each once, in document order, and counts every other pair once;
        /// a pair it skips by partition is more than one partition apart.
        #[test]
        fn the_length_filter_makes_exactly_the_pairs_within_the_ratio(
            sizes in proptest::collection::vec(1u32..200, 2..40),
            tau in 0.05f64..1.0,
        ) {
            let filter = LengthFilter::new(&sizes, tau);
            let mut docs: Vec<u32> = (0..sizes.len() as u32).collect();
            let mut made = Vec::new();
            let mut skipped = CandidateSkips::default();
            filter.pairs(&mut docs, &mut skipped, |a, b| -> Result<(), ()> { made.push((a, b)); Ok(()) }).unwrap();
            made.sort_unstable();
            let mut expected = Vec::new();
            let mut far = 0u64;
            for a in 0..sizes.len() as u32 {
                for b in a + 1..sizes.len() as u32 {
                    let (x, y) = (sizes[a as usize], sizes[b as usize]);
                    if f64::from(x.min(y)) / f64::from(x.max(y)) >= tau {
                        expected.push((a, b));
                    } else if filter.partition(x).abs_diff(filter.partition(y)) > 1 {
                        far += 1;
                    }
                }
            }
            let all = (sizes.len() * (sizes.len() - 1) / 2) as u64;
            proptest::prop_assert_eq!(&made, &expected);
            proptest::prop_assert_eq!(made.len() as u64 + skipped.length + skipped.partition, all);
            proptest::prop_assert_eq!(skipped.partition, far);
        }
    }

    proptest::proptest! {
        /// The slack order makes exactly the pairs the whole bound passes,
        /// each once, and counts every other pair once, whatever the
        /// thresholds; documents past the arrays pair with every other.
        #[test]
        fn the_slack_order_makes_exactly_the_pairs_the_bound_passes(
            docs in proptest::collection::vec((1u32..60, 0u32..60, 0u32..30), 2..40),
            n in 1usize..6,
            thresholds in (0usize..5, 0usize..3, 0usize..3),
            unknown in 0usize..3,
        ) {
            let tokens: Vec<u32> = docs.iter().map(|d| d.0).collect();
            let mut totals = IndexTotals::empty(docs.len());
            for (i, &(t, occurrences, types)) in docs.iter().enumerate() {
                let positions = t.saturating_sub(n as u32 - 1);
                totals.occurrences[i] = occurrences.min(positions);
                totals.types[i] = types.min(totals.occurrences[i]);
            }
            let mut config = PairsConfig::new(NgramConfig::new(Vec::new(), n));
            config.min_sscr = [0.0, 0.3, 0.5, 0.8, 1.0][thresholds.0];
            config.min_ssr = [0.0, 0.2, 0.6][thresholds.1];
            config.min_cover = [0.0, 0.5, 0.9][thresholds.2];
            let Some(bounds) = DocBounds::new(&config, &tokens, &totals) else {
                proptest::prop_assert_eq!(thresholds, (0, 0, 0));
                return Ok(());
            };
            let list: Vec<u32> = (0..(docs.len() + unknown) as u32).collect();
            let mut made = Vec::new();
            let ruled_out = bounds
                .pairs(&list, &mut Vec::new(), |a, b| -> Result<(), ()> { made.push((a, b)); Ok(()) })
                .unwrap();
            made.sort_unstable();
            let mut expected = Vec::new();
            for (i, &a) in list.iter().enumerate() {
                for &b in &list[i + 1..] {
                    if bounds.could_keep(a, b) {
                        expected.push((a, b));
                    }
                }
            }
            let all = (list.len() * (list.len() - 1) / 2) as u64;
            proptest::prop_assert_eq!(&made, &expected);
            proptest::prop_assert_eq!(made.len() as u64 + ruled_out, all);
        }
    }

    /// The bound holds no more than the scorer's: two documents that are
    /// each other's copy pass at any threshold, and a pair whose coverage
    /// is capped by few occurrences fails a high SSCR.
    #[test]
    fn the_bound_passes_copies_and_rules_out_documents_of_their_own_words() {
        let tokens = [20, 20, 20];
        let mut totals = IndexTotals::empty(3);
        // Documents 0 and 1 are copies (every 4-gram repeated); 2 shares one 4-gram.
        totals.occurrences = vec![17, 17, 1];
        totals.types = vec![17, 17, 1];
        let mut config = PairsConfig::new(NgramConfig::new(Vec::new(), 4));
        config.min_sscr = 1.0;
        let bounds = DocBounds::new(&config, &tokens, &totals).unwrap();
        assert!(bounds.could_keep(0, 1));
        assert!(!bounds.could_keep(0, 2) && !bounds.could_keep(1, 2));
        let mut made = Vec::new();
        let ruled_out = bounds
            .pairs(&[0, 1, 2], &mut Vec::new(), |a, b| -> Result<(), ()> {
                made.push((a, b));
                Ok(())
            })
            .unwrap();
        assert_eq!((made, ruled_out), (vec![(0, 1)], 2));
        config.min_sscr = 0.0;
        assert!(DocBounds::new(&config, &tokens, &totals).is_none(), "no threshold: nothing to bound");
    }

    #[test]
    fn candidates_naming_a_document_past_the_table_are_refused_naming_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cand-r0001-000001.dgr");
        let mut w = RunWriter::create(&path, RunHeader::counts(4, CANDIDATE_RUNS)).unwrap();
        w.push(&[0, 0, 1, 2], 1).unwrap();
        w.push(&[0, 1, 2, 70], 1).unwrap();
        let bytes = w.finish().unwrap().1.bytes;
        let run = RunFile { path: path.clone(), bytes, depth: 0 };
        assert_eq!(named_documents(std::slice::from_ref(&run), 71).unwrap(), [0b110, 1 << 6]);
        for docs in [3, 70] {
            let err = named_documents(std::slice::from_ref(&run), docs).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()) && err.contains("document 70"), "{err}");
        }
    }
}
