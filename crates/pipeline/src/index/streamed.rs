//! The index pass over the word streams, in parts by first word.
//!
//! `ngrams` reads the corpus once: its lexicon pass writes each worker's
//! tokens as first-seen word IDs, and the count reads those back. The index
//! of `pairs` and `dedup` did not: its pass read and tokenised the corpus a
//! second time, through the one sieve the lexicon pass had filled. On a
//! billion tokens of a growing vocabulary that sieve came out 36 % full after
//! halving for the words, let through 19× the postings of 100M tokens, and
//! its runs were 1.3–1.6× the text on disk.
//!
//! Here the lexicon pass also lists, per stream, the documents in it (their
//! numbers and IDs: a document's pieces all go to one worker). The index
//! pass then walks the streams instead of the text, and when the corpus is
//! more than one sieve holds it goes in parts by first word, as the count
//! does (see [`crate::first_words`]): for each part the sieve is cleared and
//! filled with that part's n-grams, the part's postings are sorted into
//! runs and merged into its own index files, and its runs are removed
//! before the next part's are written. The parts are planned one at a
//! time, as the count's are ([`PartPlan`]): each within the sieve, and with
//! its postings runs within the room on disk that the streams, the
//! vocabulary, standard input's copy and the index parts before it leave
//! of the text's share (`--tmp-share`, half by default). An n-gram's ID is its rank in the
//! whole index, so each part's IDs count on from the part before, as the
//! buckets of one merge do: the index is the same, ID for ID, whatever the
//! parts (only cut into more files).
//!
//! The document table comes from the first part's walk: each document's
//! tokens and, for a job that groups identical documents (`pairs`), its
//! hash, of the first-seen IDs, which name words exactly (as the
//! text-reading pass's mix of IDs and bytes did: only its value differs);
//! its IDs, when kept, from the lists' spills (see [`crate::doc_ids`]).

use std::path::PathBuf;
use std::time::Instant;

use dupgram_chunker::{KeyLayout, PostingChunk};
use dupgram_runs::RunHeader;
use dupgram_sieve::Sieve;

use super::{
    Blocks, DEDUP_DOC_BYTES, DocTable, IndexJob, IndexSink, IndexStats, MergeInto, MergedIndex, PER_DOC_BYTES,
    WRITER_BYTES, by_bucket, exact_groups,
};
use crate::doc_ids::{DocIds, IdsKept, IdsOnDisk, ListedIds, MemoryIds, places_of_lengths};
use crate::first_words::{DiskRooms, FirstWords, KeyRange, PartPlan};
use crate::ngrams::{NgramStats, Reread, StreamDocs, StreamedCorpus, shrink_sieve, tokenise_for_index};
use crate::scan::ScanSink;
use crate::stream_walk::{StreamJob, fill_sieve, phase_of};
use crate::words::{WordsFile, each_stream, read_words};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, human_bytes};

/// Postings run bytes per token guessed for an index's first part, before
/// one is measured: a posting takes about 11 bytes in its run, and web-like
/// text posts up to half its tokens (the repeated n-grams' occurrences and
/// what the sieve lets through).
const FIRST_POSTINGS_RATE: f64 = 6.0;

/// The smallest posting chunk a worker sorts: below it the sieve gives way.
const MIN_POSTINGS: u64 = 4096;

/// Bytes a document takes while the index is built beside the streams'
/// lists, and after, for the most of which a job holds room: each
/// stream's record of its tokens and, when hashed (to group identical
/// documents), its hash (4 and 16 bytes), then the table's (the same, and
/// 4 for its candidate count); after the index, when the hashes are gone,
/// [`PER_DOC_BYTES`] and 4 for `pairs`' count of common n-grams. Its ID is
/// on disk, or not kept (see [`crate::doc_ids`]). With 4 to spare.
const fn bytes_per_doc(hashed: bool) -> u64 {
    let hash = if hashed { 2 * DocHash::BYTES } else { 0 };
    let index = 4 + 4 + 4 + hash + 4;
    let after = PER_DOC_BYTES + 4;
    if index > after { index } else { after }
}

// `dedup` chooses its way to the index by what the lexicon pass counts for it.
const _: () = assert!(bytes_per_doc(false) == DEDUP_DOC_BYTES);

/// A document's hash as the index pass over a stream records it: 16
/// bytes aligned to 4, where a `u128` aligns to 16.
#[derive(Clone, Copy)]
struct DocHash([u32; 4]);

impl DocHash {
    const BYTES: u64 = std::mem::size_of::<DocHash>() as u64;

    fn new(hash: u128) -> Self {
        DocHash([hash as u32, (hash >> 32) as u32, (hash >> 64) as u32, (hash >> 96) as u32])
    }

    fn get(&self) -> u128 {
        self.0.iter().rev().fold(0, |h, &part| (h << 32) | u128::from(part))
    }
}

/// The documents the lexicon pass listed, and the bytes the index holds
/// for them.
#[derive(Clone, Copy)]
struct ListedDocs {
    documents: u64,
    bytes: u64,
}

/// What [`IndexJob::build_streamed`] made.
pub(crate) struct StreamedIndex {
    pub merged: MergedIndex,
    /// Without hashes: they are gone once the groups are made.
    pub table: DocTable,
    /// Each document's group of identical documents by hash, as its first
    /// member ([`exact_groups`]), when asked for.
    pub rep_of: Option<Vec<u32>>,
    /// The index files, in the order of their IDs (empty when gathered).
    pub paths: Vec<PathBuf>,
    /// What later passes read the text from (none without [`Reread::Text`]).
    pub inputs: Vec<dupgram_corpus::Input>,
    pub norm: dupgram_lexicon::Normalization,
    pub stopwords: Vec<String>,
}

/// The document table and, when asked for, its groups.
struct BuiltTable {
    table: DocTable,
    rep_of: Option<Vec<u32>>,
}

/// What the index over the streams is built for.
#[derive(Clone, Copy)]
struct IndexHow<'f> {
    /// Each merge checks the groups of identical documents.
    groups: bool,
    /// Gather each document's occurrences in memory when they fit (one part only).
    fits: Option<&'f dyn Fn(u64, u64) -> bool>,
    /// Bytes of the job's files that stay on disk beside the index: standard
    /// input's copy, the documents' IDs.
    kept: u64,
}

/// Bytes of the inputs that are copies in the work directory `work`.
fn copied_bytes(inputs: &[dupgram_corpus::Input], work: &std::path::Path) -> u64 {
    inputs
        .iter()
        .filter_map(|input| match input {
            dupgram_corpus::Input::Path(p) if p.starts_with(work) => std::fs::metadata(p).ok(),
            _ => None,
        })
        .map(|m| m.len())
        .sum()
}

/// The parts of an index over the streams, one at a time.
enum IndexParts {
    /// One part: the sieve the lexicon pass filled, or none.
    Whole(Option<FirstWords>),
    /// Parts each filling a sieve of its own, within the room on disk when
    /// there is one to keep to.
    Planned(PartPlan, Option<DiskRooms>),
}

impl IndexParts {
    /// The next part, and how many the plan now expects in all.
    fn next(&mut self, lexicon: &dupgram_lexicon::Lexicon) -> Option<(FirstWords, usize)> {
        match self {
            IndexParts::Whole(all) => all.take().map(|all| (all, 1)),
            IndexParts::Planned(plan, _) => plan.next(lexicon),
        }
    }

    /// The part just indexed wrote `run_bytes` of postings runs, and its
    /// index takes `index_bytes` on disk from the parts after it.
    fn indexed(&mut self, run_bytes: u64, index_bytes: u64) {
        if let IndexParts::Planned(plan, rooms) = self {
            plan.counted(run_bytes);
            if let Some(rooms) = rooms.as_mut() {
                rooms.keep(index_bytes);
                plan.within(*rooms);
            }
        }
    }
}

/// What one part of the index pass takes, and how.
struct PartCut<'a, const L: usize> {
    range: KeyRange<L>,
    /// The first word ID of each of the part's merge buckets after its first.
    buckets: &'a [u32],
    /// Fill the (cleared) sieve with the part's n-grams first.
    fill: bool,
    /// Build the document table on the way.
    table: bool,
    /// With each document's hash (for the groups of identical documents).
    hash: bool,
    /// Count each document's kept occurrences (for gathering lists).
    count: bool,
    label: (usize, usize),
    /// The streams' last reading: each segment goes once read.
    last: bool,
    /// The corpus's number of the streams' first document (a shard's, in a
    /// staged job): postings name documents by the corpus's numbers, the
    /// document table by the streams' own.
    first_doc: u64,
}

impl IndexJob<'_> {
    /// The lexicon pass into word streams, then the index pass over them,
    /// in parts when one sieve cannot hold the corpus, each part merged
    /// into index files of its own. With `groups`, each merge checks the
    /// groups of identical documents ([`super::GroupCheck`]); with `fits`
    /// (one part only), the merge gathers each document's occurrences
    /// in memory when `fits(documents, candidates)` says they fit. `reread`
    /// says whether the job reads the text again (see [`tokenise_for_index`]),
    /// `named` whether the table keeps the documents' IDs (on disk: one
    /// process never holds them) or none.
    pub(crate) fn build_streamed(
        &self,
        groups: bool,
        fits: Option<&dyn Fn(u64, u64) -> bool>,
        reread: Reread,
        named: bool,
        stats: &mut IndexStats,
    ) -> Result<StreamedIndex, PipelineError> {
        let ids = if named { IdsKept::OnDisk } else { IdsKept::Not };
        let mut first = NgramStats { n: self.base.n, ..NgramStats::default() };
        // Documents that may go to disk never make the lexicon pass stop.
        let may_go_to_disk = self.by_doc && self.base.limits.documents_on_disk != Some(false);
        let per_doc = if may_go_to_disk { 0 } else { bytes_per_doc(groups) };
        let (corpus, inputs) =
            tokenise_for_index(self.base, self.control, self.work, per_doc, ids, reread, &mut first)?;
        stats.bytes_spilled += first.bytes_spilled;
        let layout = KeyLayout::new(self.base.n, corpus.lexicon.len().saturating_sub(1) as u32)?;
        // Standard input's copy stays on disk for the passes after the index, and so do the IDs.
        let ids_on_disk: u64 = corpus.documents.iter().map(|list| list.ids.bytes_on_disk()).sum();
        let how = IndexHow { groups, fits, kept: copied_bytes(&inputs, self.work) + ids_on_disk };
        let built = match layout.words() {
            1 => self.parts_with::<1>(corpus, layout, &how, &mut first, stats),
            2 => self.parts_with::<2>(corpus, layout, &how, &mut first, stats),
            3 => self.parts_with::<3>(corpus, layout, &how, &mut first, stats),
            4 => self.parts_with::<4>(corpus, layout, &how, &mut first, stats),
            6 => self.parts_with::<6>(corpus, layout, &how, &mut first, stats),
            8 => self.parts_with::<8>(corpus, layout, &how, &mut first, stats),
            12 => self.parts_with::<12>(corpus, layout, &how, &mut first, stats),
            _ => self.parts_with::<16>(corpus, layout, &how, &mut first, stats),
        };
        stats.first_pass = Some(first);
        let (merged, BuiltTable { table, rep_of }, paths, norm, stopwords) = built?;
        Ok(StreamedIndex { merged, table, rep_of, paths, inputs, norm, stopwords })
    }

    #[allow(clippy::type_complexity)]
    fn parts_with<const L: usize>(
        &self,
        corpus: StreamedCorpus,
        layout: KeyLayout,
        how: &IndexHow,
        first: &mut NgramStats,
        stats: &mut IndexStats,
    ) -> Result<(MergedIndex, BuiltTable, Vec<PathBuf>, dupgram_lexicon::Normalization, Vec<String>), PipelineError>
    {
        let IndexHow { groups, fits, kept } = *how;
        let docs: u64 = corpus.documents.iter().map(|d| d.len() as u64).sum();
        let by_doc = self.by_doc
            && !groups
            && self.base.limits.documents_on_disk.unwrap_or(docs * DEDUP_DOC_BYTES > self.working() / 4);
        let per_doc = if by_doc { 0 } else { bytes_per_doc(groups) };
        let beside = corpus.held_beside(per_doc);
        let StreamedCorpus { lexicon, sieve, sieve_filled, streamed, streams, mut documents, .. } = corpus;
        let job = StreamJob { streams: &streams, lexicon: &lexicon, streamed: &streamed, layout };
        if docs != first.documents {
            return Err(PipelineError::Changed(format!(
                "the lexicon pass read {} documents and listed {docs}",
                first.documents
            )));
        }
        if docs >= u64::from(u32::MAX) {
            return Err(PipelineError::Usage(format!("{docs} documents: dupgram handles at most {}", u32::MAX - 1)));
        }
        let mut sieve = sieve;
        let list = ListedDocs {
            documents: docs,
            bytes: documents.iter().map(StreamDocs::heap_bytes).sum::<u64>() + docs * per_doc,
        };
        let capacity = self.make_room_for_postings::<L>(&mut sieve, &lexicon, beside, list, layout, first)?;
        // A sieve the lexicon pass did not fill is made anew for each part
        // (and gone while the part is merged); a filled one serves the one part.
        let refill = match &sieve {
            Some(s) if !sieve_filled => Some((s.filling(), s.bytes())),
            _ => None,
        };
        let mut parts = match &sieve {
            Some(s) if refill.is_some() => self.plan_parts(s.capacity(), &streams, &lexicon, first, kept),
            _ => IndexParts::Whole(Some(FirstWords::ALL)),
        };
        let mut filled = if refill.is_some() { None } else { sieve };
        if let Some(s) = filled.as_mut() {
            // Filled by the lexicon pass: from now on asked only "2 or more?".
            s.freeze();
        }
        let per_part = self.base.limits.merge_buckets.unwrap_or(self.base.threads).clamp(1, super::MERGE_BUCKETS);
        let mut paths = Vec::new();
        let mut gather_possible = false;
        // Sorted by document, the job holds a table of no document.
        let mut table: Option<DocTable> = by_doc.then(|| DocTable { on_disk: true, ..DocTable::default() });
        let mut rep_of = None;
        let mut merged: Option<MergedIndex> = None;
        let mut i = 0;
        while let Some((part, expected)) = parts.next(&lexicon) {
            i += 1;
            let last = i == expected;
            if i == 1 {
                gather_possible = fits.is_some() && last && !by_doc;
            }
            let cut: Vec<u32> = part.split_by(&lexicon, per_part).iter().skip(1).map(|b| b.start).collect();
            let buckets = cut.len() + 1;
            let part_paths =
                if i == 1 && last { self.index_paths(buckets) } else { self.index_paths_from(paths.len(), buckets) };
            let mut part_sieve = match refill {
                // Without the memory map there is simply no sieve: results are the same.
                Some((filling, bytes)) => Sieve::new(filling, bytes).ok(),
                None => filled.take(),
            };
            let how = PartCut {
                range: KeyRange::<L>::new(part, layout),
                buckets: &cut,
                fill: refill.is_some(),
                table: table.is_none(),
                hash: groups,
                count: gather_possible,
                label: (i, expected),
                last,
                first_doc: 0,
            };
            let it = Instant::now();
            let (runs, spilled) =
                self.index_streams::<L>(&job, &mut documents, part_sieve.as_mut(), capacity, how, &mut table, first)?;
            drop(part_sieve);
            if last {
                // Read for the last time: off the disk before the merge writes the index.
                for file in &streams {
                    file.remove();
                }
                streamed.remove_sides();
            }
            let run_bytes: u64 = runs.iter().map(|(_, run)| run.bytes).sum();
            stats.bytes_spilled += spilled;
            stats.index_seconds += it.elapsed().as_secs_f64();
            let table =
                table.as_mut().ok_or_else(|| PipelineError::Usage("internal error: no document table".into()))?;
            if groups && rep_of.is_none() {
                rep_of = Some(exact_groups(table, self.base.n as u32)?);
                // The hashes served the groups only.
                table.hashes = Vec::new();
            }
            let table = &*table;
            let mt = Instant::now();
            let candidates: u64 = table.candidates.iter().map(|&c| u64::from(c)).sum();
            let gather = gather_possible
                && fits.is_some_and(|fits| !table.candidates.is_empty() && fits(table.len() as u64, candidates));
            let into = match (gather, by_doc) {
                (true, _) => MergeInto::Lists,
                (false, true) => MergeInto::ByDoc { slot: paths.len() },
                (false, false) => MergeInto::Files,
            };
            let held = lexicon.heap_bytes() as u64
                + streamed.beside(0)
                + documents.iter().map(StreamDocs::heap_bytes).sum::<u64>()
                + rep_of.as_ref().map_or(0, |r| r.len() as u64 * 4);
            self.held.set(held);
            let done = self.merge_index(
                by_bucket(runs, buckets),
                &lexicon,
                &part_paths,
                table,
                into,
                rep_of.as_deref(),
                stats,
            );
            self.held.set(0);
            stats.merge_seconds += mt.elapsed().as_secs_f64();
            merged = Some(match merged {
                None => done?,
                Some(before) => before.followed_by(done?)?,
            });
            parts.indexed(run_bytes, part_paths.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum());
            paths.extend(part_paths);
        }
        first.sieve.parts = i as u32;
        let merged = merged.ok_or_else(|| PipelineError::Usage("internal error: an index of no parts".into()))?;
        stats.duplicate_ngrams = merged.totals.ngrams;
        stats.duplicate_occurrences = merged.totals.total_occurrences;
        stats.documents = first.documents;
        stats.tokens = first.tokens;
        let table = table.ok_or_else(|| PipelineError::Usage("internal error: no document table".into()))?;
        let paths = if merged.lists.is_some() || merged.by_doc.is_some() { Vec::new() } else { paths };
        let table = BuiltTable { table, rep_of };
        Ok((merged, table, paths, lexicon.normalization(), lexicon.stopwords().to_vec()))
    }

    /// The index pass over a shard's word streams (a staged job's index
    /// task): postings runs cut by `cut.buckets`, the documents numbered
    /// from `cut.first_doc`, and the shard's document table. `first` holds
    /// the shard's documents and tokens (its lexicon task's reading).
    pub(crate) fn index_shard_streams(
        &self,
        job: &StreamJob,
        documents: &mut [StreamDocs],
        sieve: Option<Sieve>,
        cut: super::ShardCut,
        first: &mut NgramStats,
    ) -> Result<(Vec<(usize, dupgram_merge::RunFile)>, DocTable), PipelineError> {
        match job.layout.words() {
            1 => self.index_shard_streams_with::<1>(job, documents, sieve, cut, first),
            2 => self.index_shard_streams_with::<2>(job, documents, sieve, cut, first),
            3 => self.index_shard_streams_with::<3>(job, documents, sieve, cut, first),
            4 => self.index_shard_streams_with::<4>(job, documents, sieve, cut, first),
            6 => self.index_shard_streams_with::<6>(job, documents, sieve, cut, first),
            8 => self.index_shard_streams_with::<8>(job, documents, sieve, cut, first),
            12 => self.index_shard_streams_with::<12>(job, documents, sieve, cut, first),
            _ => self.index_shard_streams_with::<16>(job, documents, sieve, cut, first),
        }
    }

    fn index_shard_streams_with<const L: usize>(
        &self,
        job: &StreamJob,
        documents: &mut [StreamDocs],
        mut sieve: Option<Sieve>,
        cut: super::ShardCut,
        first: &mut NgramStats,
    ) -> Result<(Vec<(usize, dupgram_merge::RunFile)>, DocTable), PipelineError> {
        let listed: u64 = documents.iter().map(|d| d.len() as u64).sum();
        if listed != first.documents {
            return Err(PipelineError::Changed(format!(
                "the lexicon task read {} documents and listed {listed}",
                first.documents
            )));
        }
        let list = ListedDocs { documents: listed, bytes: documents.iter().map(StreamDocs::heap_bytes).sum::<u64>() };
        let beside = job.streamed.beside(job.streams.len()) + list.bytes;
        let capacity = self.make_room_for_postings::<L>(&mut sieve, job.lexicon, beside, list, job.layout, first)?;
        let how = PartCut {
            range: KeyRange::<L>::new(FirstWords::ALL, job.layout),
            buckets: cut.buckets,
            fill: false,
            table: true,
            // The tasks after group the identical documents of all shards.
            hash: true,
            count: false,
            label: (1, 1),
            last: false,
            first_doc: cut.first_doc,
        };
        let mut table = None;
        let (runs, _) = self.index_streams::<L>(job, documents, sieve.as_mut(), capacity, how, &mut table, first)?;
        let table = table.ok_or_else(|| PipelineError::Usage("internal error: no document table".into()))?;
        Ok((runs, table))
    }

    /// The parts of an index whose sieve is filled for each, planned one at
    /// a time (see [`PartPlan`]): each within a sieve of `capacity` n-grams,
    /// with its postings runs within the room on disk that the `streams`,
    /// the vocabulary, `kept` bytes of the job's other files and the index
    /// parts before it leave of the text's share — unless what stays there
    /// leaves too little of the share for any number of parts to keep to it
    /// (standard input's copy, for `dedup`): then within the sieve alone.
    fn plan_parts(
        &self,
        capacity: u64,
        streams: &[WordsFile],
        lexicon: &dupgram_lexicon::Lexicon,
        first: &NgramStats,
        kept: u64,
    ) -> IndexParts {
        let share = self.base.disk_share(first.text_bytes);
        let on_disk = streams.iter().map(|f| f.bytes).sum::<u64>();
        let rooms = DiskRooms::new(share, on_disk, first.vocabulary_bytes + kept, self.base.limits.disk_room);
        let rooms = rooms.worth_parts().then_some(rooms);
        let (room, last_room) = rooms.map_or((u64::MAX, u64::MAX), |r| (r.part(), r.last()));
        let plan = PartPlan::new(capacity, room, self.base.limits.sieve_parts, lexicon);
        IndexParts::Planned(plan.guessing(FIRST_POSTINGS_RATE).last_within(last_room), rooms)
    }

    /// The posting chunk each worker sorts, beside the lexicon, `beside`
    /// bytes and the sieve: halves the sieve (or drops it, as small as a
    /// sieve gets) until a chunk of [`MIN_POSTINGS`] fits.
    fn make_room_for_postings<const L: usize>(
        &self,
        sieve: &mut Option<Sieve>,
        lexicon: &dupgram_lexicon::Lexicon,
        beside: u64,
        list: ListedDocs,
        layout: KeyLayout,
        first: &mut NgramStats,
    ) -> Result<usize, PipelineError> {
        let threads = self.base.threads as u64;
        let item = PostingChunk::<L>::item_bytes(layout) as u64;
        let fixed = |sieve_bytes: u64| lexicon.heap_bytes() as u64 + beside + sieve_bytes + threads * WRITER_BYTES;
        let room = |sieve_bytes: u64| self.working().saturating_sub(fixed(sieve_bytes)) / 2 / threads / item;
        // The index pass holds the sieve frozen.
        let fits = |s: &Sieve| room(s.frozen_bytes() as u64) >= MIN_POSTINGS;
        shrink_sieve(sieve, &mut first.sieve, fits, "no room for postings beside it");
        let postings = room(sieve.as_ref().map_or(0, |s| s.frozen_bytes() as u64));
        if let Some(n) = self.base.limits.chunk_ngrams {
            return Ok(n);
        }
        if postings < MIN_POSTINGS {
            // Room for the list, the lexicon and postings a quarter of that again.
            let needed = (fixed(0) + 2 * threads * MIN_POSTINGS * item) / 4 * 5;
            let least = MemoryPlan::least_budget_for(needed, self.base.threads, self.plan.zstd_need());
            return Err(PipelineError::Memory {
                budget: human_bytes(self.base.memory),
                what: format!(
                    "the list of {} documents ({}, held for the whole job) and the lexicon ({}) leave no room \
                     for postings: give --memory {}M or more",
                    list.documents,
                    human_bytes(list.bytes),
                    human_bytes(lexicon.heap_bytes() as u64),
                    least >> 20
                ),
            });
        }
        Ok(postings.min(u32::MAX as u64) as usize)
    }

    /// One part of the index pass over the word streams: fills the sieve
    /// with the part's n-grams first when asked to, then sorts the
    /// occurrences of the part's n-grams it lets through into postings runs
    /// (each with its bucket); and, when asked to, the document table.
    #[allow(clippy::too_many_arguments)]
    fn index_streams<const L: usize>(
        &self,
        job: &StreamJob,
        documents: &mut [StreamDocs],
        mut sieve: Option<&mut Sieve>,
        capacity: usize,
        how: PartCut<L>,
        table: &mut Option<DocTable>,
        first: &mut NgramStats,
    ) -> Result<(Vec<(usize, dupgram_merge::RunFile)>, u64), PipelineError> {
        let codes = first.tokens + first.documents;
        if how.fill
            && let Some(sieve) = sieve.as_deref_mut()
        {
            let t = Instant::now();
            fill_sieve(job, sieve, how.range, how.label, codes, self.control)?;
            first.seconds.sieve += t.elapsed().as_secs_f64();
            first.sieve.saturation = first.sieve.saturation.max(sieve.saturation());
        }
        let sieve = sieve.map(|s| &*s);
        self.control.start_pass(&phase_of("indexing", how.label), Some(codes));
        let header = RunHeader::postings(self.base.n as u8, job.lexicon.identity());
        let StreamJob { streamed, layout, .. } = *job;
        let lists: &[StreamDocs] = documents;
        let outputs = each_stream(job.streams, |worker, file: &WordsFile, abort| {
            let listed = lists
                .get(worker)
                .ok_or_else(|| PipelineError::Usage(format!("internal error: no document list for {}", file.name())))?;
            let mut inner = IndexSink::new(sieve, PostingChunk::new(layout, capacity), self.work, worker, header);
            inner.doc = how.first_doc + listed.numbers().next().unwrap_or(0);
            inner.buckets = how.buckets;
            inner.counts = how.count.then(Blocks::default);
            let mut numbers = listed.numbers().map(|doc| how.first_doc + doc);
            numbers.next();
            let mut sink = StreamIndexSink {
                inner,
                range: how.range,
                numbers,
                ended: 0,
                table: how.table,
                words: (how.table && how.hash).then(Vec::new),
                tokens: if how.table { Vec::with_capacity(listed.len()) } else { Vec::new() },
                hashes: if how.table && how.hash { Vec::with_capacity(listed.len()) } else { Vec::new() },
            };
            let mut walk = streamed.walk::<L>(layout, worker, sieve.is_some())?;
            let part = how.range.first_words();
            walk.keep_only(part, part.share(job.lexicon));
            let read = read_words(file, streamed.vocabulary, how.last, self.control, abort, |codes| {
                walk.codes(codes, &mut sink);
                walk.check()?;
                sink.inner.flush_line()
            })?;
            walk.finish()?;
            sink.inner.flush_line()?;
            sink.inner.write()?;
            if read != listed.len() as u64 || sink.ended != listed.len() {
                return Err(PipelineError::Corrupt(format!(
                    "{}: {read} documents, where the lexicon pass listed {}",
                    file.name(),
                    listed.len()
                )));
            }
            Ok(PartOfStream {
                runs: sink.inner.runs,
                spilled: sink.inner.spilled,
                counts: sink.inner.counts,
                tokens: sink.tokens,
                hashes: sink.hashes,
            })
        })?;
        let mut runs = Vec::new();
        let mut spilled = 0;
        let docs = first.documents as usize;
        let mut built = how.table.then(|| DocTable {
            tokens: vec![0; docs],
            hashes: if how.hash { vec![0; docs] } else { Vec::new() },
            ids: DocIds::Unnamed,
            candidates: if how.count { vec![0; docs] } else { Vec::new() },
            on_disk: false,
        });
        for (part, listed) in outputs.into_iter().zip(documents.iter()) {
            spilled += part.spilled;
            runs.extend(part.runs);
            let Some(table) = built.as_mut() else { continue };
            for (doc, c) in part.counts.into_iter().flat_map(Blocks::into_items) {
                table.candidates[(doc - how.first_doc) as usize] += c;
            }
            for (doc, &tokens) in listed.numbers().zip(&part.tokens) {
                table.tokens[doc as usize] = tokens;
            }
            for (doc, hash) in listed.numbers().zip(&part.hashes) {
                table.hashes[doc as usize] = hash.get();
            }
        }
        if let Some(table) = built.as_mut() {
            table.ids = table_ids(documents, self.work)?;
        }
        if built.is_some() {
            *table = built;
        }
        Ok((runs, spilled))
    }
}

/// The table's IDs, moved out of the lists: every part walks every
/// document, but none after the first needs their names.
pub(super) fn table_ids(documents: &mut [StreamDocs], work: &std::path::Path) -> Result<DocIds, PipelineError> {
    let lists: Vec<ListedIds> = documents.iter_mut().map(|list| std::mem::take(&mut list.ids)).collect();
    match lists.first() {
        None | Some(ListedIds::Unnamed) => Ok(DocIds::Unnamed),
        Some(ListedIds::Memory { .. }) => {
            let docs: u64 = documents.iter().map(|d| d.listed).sum();
            let mut all = MemoryIds::new(docs as usize);
            for (list, ids) in documents.iter().zip(lists) {
                let ListedIds::Memory { ids, lens } = ids else {
                    return Err(PipelineError::Usage("internal error: document IDs kept two ways".into()));
                };
                all.add(&ids, places_of_lengths(list.numbers().map(|doc| doc as usize), lens));
            }
            Ok(all.finish())
        }
        Some(ListedIds::Spilled(_)) => {
            let mut spilled = Vec::with_capacity(lists.len());
            for (list, ids) in documents.iter().zip(&lists) {
                let ListedIds::Spilled(spill) = ids else {
                    return Err(PipelineError::Usage("internal error: document IDs kept two ways".into()));
                };
                spilled.push((&list.runs[..], &**spill));
            }
            Ok(DocIds::OnDisk(IdsOnDisk::from_spills(work, &spilled)?))
        }
    }
}

/// What the index pass over one stream made of one part.
struct PartOfStream {
    /// Postings runs, each with its bucket.
    runs: Vec<(usize, dupgram_merge::RunFile)>,
    spilled: u64,
    /// (document, occurrences kept), when counted.
    counts: Option<Blocks<(u64, u32)>>,
    /// Each document's tokens, in stream order, when the table is built.
    tokens: Vec<u32>,
    /// And its hash, when hashed.
    hashes: Vec<DocHash>,
}

/// Word identities hashed at a time.
const HASH_BATCH: usize = 1024;

/// The index sink over a stream: keeps the n-grams of one part, numbers the
/// documents from the stream's list as they end, and hashes their words.
struct StreamIndexSink<'a, const L: usize, N> {
    inner: IndexSink<'a, L>,
    range: KeyRange<L>,
    /// The numbers of the stream's documents after the current one.
    numbers: N,
    /// Documents of the stream ended so far.
    ended: usize,
    /// Build the document table.
    table: bool,
    /// The current document's word identities not yet hashed, when the
    /// document table is built with hashes.
    words: Option<Vec<u64>>,
    /// Each ended document's tokens, in stream order (when the table is built).
    tokens: Vec<u32>,
    /// And its hash (when hashed).
    hashes: Vec<DocHash>,
}

impl<const L: usize, N> StreamIndexSink<'_, L, N> {
    fn hash_words(&mut self) {
        if let Some(words) = self.words.as_mut() {
            for id in words.drain(..) {
                self.inner.hasher.update(&id.to_le_bytes());
            }
        }
    }
}

impl<const L: usize, N: Iterator<Item = u64>> ScanSink<L> for StreamIndexSink<'_, L, N> {
    #[inline]
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, start: u64) {
        if self.range.contains(&key) {
            self.inner.ngram(key, fingerprint, start);
        }
    }

    fn wants_words(&self) -> bool {
        self.words.is_some()
    }

    #[inline]
    fn word(&mut self, identity: u64) {
        if let Some(words) = self.words.as_mut() {
            words.push(identity);
            if words.len() >= HASH_BATCH {
                self.hash_words();
            }
        }
    }

    fn document_end(&mut self, tokens: u64) {
        if self.table {
            let Ok(tokens) = u32::try_from(tokens) else {
                let doc = self.inner.doc;
                self.inner
                    .failure
                    .get_or_insert(PipelineError::Usage(format!("document {doc} has more than {} tokens", u32::MAX)));
                return;
            };
            self.tokens.push(tokens);
        }
        if self.words.is_some() {
            self.hash_words();
            self.hashes.push(DocHash::new(self.inner.hasher.digest128()));
            self.inner.hasher.reset();
        }
        self.ended += 1;
        // A stream with more documents than its list is caught at its end.
        if let Some(next) = self.numbers.next() {
            self.inner.doc = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DocHash, bytes_per_doc};
    use proptest::prelude::*;

    /// A document costs 48 bytes when hashed (`pairs`) and 28 when not
    /// (`dedup`, `overlap`): what the documentation says.
    #[test]
    fn a_document_costs_what_the_limits_say() {
        assert_eq!((bytes_per_doc(true), bytes_per_doc(false)), (48, 28));
    }

    proptest! {
        /// A hash comes back as it went in, in 16 bytes aligned to 4.
        #[test]
        fn a_doc_hash_keeps_its_value(hash: u128) {
            prop_assert_eq!(DocHash::new(hash).get(), hash);
            prop_assert_eq!(DocHash::BYTES, 16);
            prop_assert_eq!(std::mem::align_of::<DocHash>(), 4);
        }

        /// An ID's range gives back its start and length, in the 12 bytes the plan counts.
        #[test]
        fn an_id_range_keeps_its_place(start: u64, length: u32) {
            let range = crate::index::IdRange::new(start, length);
            prop_assert_eq!((range.start(), range.length()), (start, length));
            prop_assert_eq!(std::mem::size_of::<crate::index::IdRange>(), 12);
        }
    }
}
