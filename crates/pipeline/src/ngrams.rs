//! `count_ngrams`: every n-gram that occurs at least `min_count` times, exactly, in fixed memory.
//!
//! The job reads its corpus once in the [`lexicon_pass`] (words, word
//! streams, and the sieve when one sieve takes the corpus), numbers the
//! words, counts the n-grams from the streams (in parts when one sieve
//! does not take them all) and merges the counts into the output.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, bounded};
use dupgram_chunker::{Chunk, KeyLayout};
use dupgram_corpus::{Batch, CorpusError, Input, ReadOptions, ReadStats};
use dupgram_lexicon::{Lexicon, LexiconBuilder, Normalization, Renumbering, Scope, WordsById};
use dupgram_merge::{MergeSink, RunFile};
use dupgram_runs::RunHeader;
use dupgram_sieve::{DelayLine, Filling, Sieve, Slot};
use dupgram_vocab::{
    BatchWords, DiskWords, DiskWordsWriter, HeldWords, Numbered, OverflowRuns, RareWords, SideFile, VocabError,
    VocabularyPlan, number_vocabulary,
};
use serde::{Deserialize, Serialize};

mod each_n;
mod lexicon_pass;

pub use each_n::{SHARED_LEXICON_FROM, count_ngrams_each};

use crate::doc_ids::IdsKept;
use crate::first_words::{DiskRooms, FirstWords, KeyRange, PartPlan, parts_for};
use crate::repeat_prints::{BucketPlan, PRINT_READER_BYTES, PrintBuckets, Proof, ProofRoom, print_runs_fit, prove};
use crate::scan::{ScanSink, Scanner};
use crate::shard_docs::ShardDocuments;
use crate::stream_walk::{StreamJob, Streamed, fill_sieve, phase_of, renumber_streams};
use crate::words::{WordsFile, each_stream, read_words};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::feed::{BatchWorker, Source, feed};
use dupgram_jobkit::memory::{MemoryPlan, ZstdNeed, human_bytes, open_file_allowance, peak_rss};
use dupgram_jobkit::merging::merge_in;
use dupgram_jobkit::parted::PartedRuns;
pub(crate) use lexicon_pass::StreamDocs;
use lexicon_pass::{LexiconPass, LexiconPassKind};

/// What to count, and with what resources.
#[derive(Debug, Clone)]
pub struct NgramConfig {
    pub inputs: Vec<Input>,
    /// Format and field options; the size limits in it are set from `memory`.
    pub read: ReadOptions,
    pub norm: Normalization,
    /// Stop words, already normalised.
    pub stopwords: Vec<String>,
    /// Also drop this many of the corpus's most frequent words.
    pub stop_top: usize,
    pub n: usize,
    /// Report n-grams seen at least this often (≥ 2).
    pub min_count: u64,
    /// Peak resident memory allowed, in bytes.
    pub memory: u64,
    pub threads: usize,
    /// Where runs and other temporary files go (a fresh subdirectory is made).
    pub tmp_dir: PathBuf,
    /// Use the sieve (on by default: results are identical either way).
    pub sieve: bool,
    /// Temporary disk a count may use, as a share of the text it read
    /// (0.5 by default): the word streams, then a part's runs or the print
    /// runs (an index in parts: its postings runs and the index). More lets a count go in fewer parts, and prove its repeats
    /// once (see `repeat_prints`) where a sieve per part would be refilled.
    pub tmp_share: f64,
    /// Where the lexicon is written: a temporary name in that directory,
    /// returned in [`NgramOutcome::lexicon_file`] for the caller to keep.
    pub lexicon_dir: Option<PathBuf>,
    pub limits: Limits,
}

/// Temporary disk a count may use by default, as a share of the text.
pub const DEFAULT_TMP_SHARE: f64 = 0.5;

/// Overrides of sizes normally derived from the memory budget, so tests
/// can force many runs and multi-pass merges on tiny corpora.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub chunk_ngrams: Option<usize>,
    pub fan_in: Option<usize>,
    pub batch_bytes: Option<usize>,
    /// Count in this many parts by first word, whatever the corpus's size:
    /// each with the sieve refilled for it (see `crate::first_words`),
    /// or, over the repeat prints, each marking as many of them as that
    /// many parts share. `dedup --unit span`: sieve and hash its K-grams
    /// in this many parts by fingerprint.
    pub sieve_parts: Option<usize>,
    /// Count in parts over the repeat prints (see `repeat_prints`), proven
    /// once, instead of a sieve filled for each part (`Some(true)`); never
    /// (`Some(false)`); or when the count goes in parts and the prints fit
    /// on disk (`None`).
    pub repeat_prints: Option<bool>,
    /// Cut the index into a file per block of documents as soon as a block
    /// cache knows it must read it more than once (`Some(true)`), never
    /// (`Some(false)`), or when the files' writers fit (`None`).
    pub block_files: Option<bool>,
    /// Merge the duplicate-only index in this many buckets by first word,
    /// each on a thread of its own (1 or 2; see `crate::index`), instead
    /// of two when there are two threads or more.
    pub merge_buckets: Option<usize>,
    /// Freeze the lexicon pass's table of words once it holds this many, so
    /// the words met after it go through the overflow logs (see
    /// `dupgram-vocab`), whatever the memory: the same results either way.
    pub table_words: Option<usize>,
    /// End an epoch of the overflow's dictionaries at this many slots (see
    /// `dupgram-vocab`), whatever the memory: the same results either way.
    pub epoch_slots: Option<u32>,
    /// Hold at most this many bytes of words while writing n-grams out; the
    /// others are read from disk for each batch (see [`dupgram_vocab::DiskWords`]).
    pub output_word_bytes: Option<u64>,
    /// `pairs`: document sets of at least this many documents are paired
    /// once for all the n-grams they hold (see `dupgram_jobkit::shared_sets`);
    /// `usize::MAX` pairs every n-gram's documents as they come.
    pub shared_set_documents: Option<usize>,
    /// The room on disk one part of a count's runs may take, whatever the
    /// text's size and `--tmp-share` (and below their floor of 64 MiB), so
    /// a count is cut into parts by disk alone on a tiny corpus.
    pub disk_room: Option<u64>,
    /// `dedup` (every unit but `span`): sort the index by document on disk
    /// and hold nothing per document (`Some(true)`), never (`Some(false)`),
    /// or when the documents' tables would take more than a quarter of the
    /// working memory (`None`; see `crate::index::by_doc`).
    pub documents_on_disk: Option<bool>,
    /// `dedup --unit span`: its sieve of K-grams in this many bytes,
    /// whatever the memory, so a tiny corpus can fill it with collisions.
    pub sieve_bytes: Option<usize>,
}

impl NgramConfig {
    pub fn new(inputs: Vec<Input>, n: usize) -> Self {
        NgramConfig {
            inputs,
            read: ReadOptions::default(),
            norm: Normalization::default(),
            stopwords: Vec::new(),
            stop_top: 0,
            n,
            min_count: 2,
            memory: 1 << 30,
            threads: std::thread::available_parallelism().map_or(2, |p| p.get()),
            tmp_dir: std::env::temp_dir(),
            sieve: true,
            tmp_share: DEFAULT_TMP_SHARE,
            lexicon_dir: None,
            limits: Limits::default(),
        }
    }

    fn check(&self) -> Result<(), PipelineError> {
        if self.n == 0 || self.n > 32 {
            return Err(PipelineError::Usage(format!("n must be between 1 and 32, not {}", self.n)));
        }
        if self.min_count < 2 {
            return Err(PipelineError::Usage("--min-count must be at least 2".into()));
        }
        if self.threads == 0 {
            return Err(PipelineError::Usage("--threads must be at least 1".into()));
        }
        if !(self.tmp_share > 0.0 && self.tmp_share.is_finite()) {
            return Err(PipelineError::Usage(format!("--tmp-share must be above 0, not {}", self.tmp_share)));
        }
        self.norm.validate().map_err(|e| PipelineError::Usage(e.into()))?;
        Ok(())
    }

    /// Bytes of temporary disk a job over `text_bytes` of text may take (`--tmp-share`).
    pub(crate) fn disk_share(&self, text_bytes: u64) -> u64 {
        (text_bytes as f64 * self.tmp_share).min(u64::MAX as f64) as u64
    }
}

/// Seconds spent in each pass.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct PassSeconds {
    pub lexicon: f64,
    /// Rewriting the word streams with final IDs (a count or index in parts).
    #[serde(default)]
    pub renumber: f64,
    /// Proving n-grams unique: the sieve's fills from the word streams, or
    /// the print pass, its merge and the marking of each part's table.
    pub sieve: f64,
    pub count: f64,
    pub merge: f64,
    pub total: f64,
}

/// What the sieve did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SieveStats {
    pub used: bool,
    /// Its size as it is filled.
    pub bytes: u64,
    /// Its size once filled, as the count or index pass holds it ([`Sieve::freeze`]).
    #[serde(default)]
    pub frozen_bytes: u64,
    /// The chance a fingerprint never inserted passes, after filling (the
    /// fullest part's; [`Sieve::saturation`]): for counters, the share at "2 or more".
    pub saturation: f64,
    /// Why it was switched off, if it was.
    pub dropped: Option<String>,
    /// Times it was halved to make room for the vocabulary or for chunks.
    #[serde(default)]
    pub halvings: u32,
    /// Parts the count went in, the sieve refilled for each (1: one count,
    /// the sieve filled while the corpus was read), or marked with the
    /// repeat prints of each.
    #[serde(default)]
    pub parts: u32,
    /// N-gram prints proven to repeat, when the count went in parts over
    /// them instead of a sieve per part (see `repeat_prints`); 0 otherwise.
    #[serde(default)]
    pub repeat_prints: u64,
    /// Bytes of print runs written for that proof.
    #[serde(default)]
    pub print_bytes: u64,
}

/// The summary of a job, as printed and as written by `--stats-json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NgramStats {
    pub n: usize,
    pub min_count: u64,
    pub memory_budget: u64,
    pub threads: usize,
    pub documents: u64,
    pub input_bytes: u64,
    /// Tokens, stop words included.
    pub tokens: u64,
    /// Distinct words (stop words excluded).
    pub vocabulary: u64,
    /// Bytes of text read (after decompression).
    #[serde(default)]
    pub text_bytes: u64,
    /// Words seen at least twice: the only ones a duplicate n-gram can hold.
    pub repeated_words: u64,
    /// Bytes the vocabulary keeps on disk while n-grams are counted: the
    /// lexicon, the words by ID, the overflow's side files.
    #[serde(default)]
    pub vocabulary_bytes: u64,
    /// Distinct words met only after the lexicon's table had used its room,
    /// counted and numbered out of core (0 when the table held them all).
    #[serde(default)]
    pub overflow_words: u64,
    /// Tokens of those words.
    #[serde(default)]
    pub overflow_tokens: u64,
    /// Slots the overflow's dictionaries gave those tokens' words, one per
    /// distinct word and epoch: what its sorts took a record for.
    #[serde(default)]
    pub overflow_slots: u64,
    pub stopwords: u64,
    /// N-gram occurrences (positions).
    pub ngrams: u64,
    pub distinct_ngrams: u64,
    /// N-grams occurring at least twice, and their occurrences.
    pub duplicate_types: u64,
    pub duplicate_occurrences: u64,
    /// N-grams written (count ≥ min_count).
    pub output_ngrams: u64,
    /// N-grams the sieve let into chunks.
    pub sorted_ngrams: u64,
    pub sieve: SieveStats,
    pub chunk_ngrams: usize,
    pub runs_written: u64,
    pub run_bytes: u64,
    pub intermediate_merges: u64,
    pub merge_bytes: u64,
    /// All bytes written to temporary files: word-ID streams, runs,
    /// intermediate merges and print runs (`ngrams`); runs, intermediate merges and standard
    /// input's copy (the jobs that read the corpus twice).
    pub bytes_spilled: u64,
    pub merge_passes: u32,
    pub fan_in: usize,
    pub replaced_utf8: u64,
    pub skipped_records: u64,
    pub long_tokens: u64,
    pub warnings: Vec<String>,
    pub peak_rss: u64,
    pub seconds: PassSeconds,
}

/// A corpus read once into word streams, for a job that indexes it
/// (`pairs`, `dedup`): what [`tokenise_for_index`] gives.
pub(crate) struct StreamedCorpus {
    /// The repeated words, without a lookup table.
    pub lexicon: Lexicon,
    /// The file the lexicon was loaded from, in the work directory.
    _lexicon_file: tempfile::NamedTempFile,
    /// Every repeated n-gram passes it once filled; `None` without one.
    pub sieve: Option<Sieve>,
    /// Whether the lexicon pass filled the sieve (the corpus fits one), or
    /// left it empty for the index pass to fill part by part.
    pub sieve_filled: bool,
    pub streamed: Streamed,
    /// The word streams, one per worker, and each one's documents.
    pub streams: Vec<WordsFile>,
    pub documents: Vec<StreamDocs>,
}

/// The lexicon pass of `config` in `work` for a job that indexes the
/// corpus, with word streams that list their documents: the index pass
/// reads those instead of the corpus. With `reread`, returns the inputs
/// later passes must read (standard input from a copy made while it is
/// read); without, the job never reads the text again (`pairs`), so
/// standard input is not copied and no inputs are returned. The index
/// holds `per_document` bytes a document beside the streams while it fills a sieve;
/// the documents' IDs are kept as `ids` says.
pub(crate) fn tokenise_for_index(
    config: &NgramConfig,
    control: &Control,
    work: &Path,
    per_document: u64,
    ids: IdsKept,
    reread: Reread,
    stats: &mut NgramStats,
) -> Result<(StreamedCorpus, Vec<Input>), PipelineError> {
    config.check()?;
    let started = Instant::now();
    let plan = MemoryPlan::new(config.memory, config.threads, zstd_need(&config.inputs)?)
        .map_err(|what| memory_error(config, what))?;
    let mut job = Job { config, control, plan, work, inputs: config.inputs.clone() };
    let first_inputs = match reread {
        Reread::Text => job.spool_stdin(),
        Reread::StreamsOnly => {
            job.inputs.clear();
            config.inputs.clone()
        }
    };
    let Tokenised { lexicon, lexicon_file, sieve, renumbering, streams, documents, .. } =
        job.tokenise(&first_inputs, Some((per_document, ids)), stats, started)?;
    stats.bytes_spilled += spooled_bytes(&first_inputs);
    // Filled while reading a corpus of unknown size, and overloaded: the index goes in parts instead.
    let sieve = sieve.filter(|s| parts_for(stats.tokens, s.capacity()) <= 1);
    let sieve_filled = sieve.is_some();
    // Read at least twice from now on (fill, index): worth final IDs first.
    let (streams, renumbering) = if config.sieve && !sieve_filled {
        let t = Instant::now();
        let renumbered = renumber_streams(&streams, &renumbering, lexicon.len() as u32, work, control)?;
        stats.seconds.renumber += t.elapsed().as_secs_f64();
        renumbered
    } else {
        (streams, renumbering)
    };
    let mut corpus = StreamedCorpus {
        lexicon,
        _lexicon_file: lexicon_file,
        sieve,
        sieve_filled,
        streamed: renumbering,
        streams,
        documents,
    };
    if config.sieve && !sieve_filled {
        let beside = corpus.held_beside(per_document);
        corpus.sieve = job.fresh_sieve(&corpus.lexicon, beside, stats);
    }
    Ok((corpus, job.inputs))
}

/// Whether a job that indexes the corpus reads its text again after the
/// lexicon pass (to write documents out, or count its queries), or only the
/// word streams: then standard input needs no copy on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reread {
    Text,
    StreamsOnly,
}

impl StreamedCorpus {
    /// Bytes an index over the streams holds beside the lexicon and the
    /// sieve: the renumbering, the stream readers, the document lists and
    /// `per_document` bytes a document.
    pub(crate) fn held_beside(&self, per_document: u64) -> u64 {
        let listed: u64 = self.documents.iter().map(|d| d.len() as u64).sum();
        self.streamed.beside(self.streams.len())
            + self.documents.iter().map(StreamDocs::heap_bytes).sum::<u64>()
            + listed * per_document
    }
}

/// The passes of a count, one at a time, for running them as separate
/// tasks, each on a part of the corpus (see `dupgram-cluster`): the same code
/// [`count_ngrams`] runs in one process.
pub struct Passes<'a> {
    job: Job<'a>,
}

impl<'a> Passes<'a> {
    /// Passes of `config` whose temporary files go to `work`.
    pub fn new(config: &'a NgramConfig, control: &'a Control, work: &'a Path) -> Result<Self, PipelineError> {
        config.check()?;
        let plan = MemoryPlan::new(config.memory, config.threads, zstd_need(&config.inputs)?)
            .map_err(|what| memory_error(config, what))?;
        Ok(Passes { job: Job { config, control, plan, work, inputs: config.inputs.clone() } })
    }

    /// The bytes of a sieve for the whole corpus of the configuration (to
    /// be chosen once per job, so every task's sieve has the same size and
    /// they combine), or `None` when the job runs without one. With `--stop-top` the stop
    /// words are known only after all words are counted, too late for a
    /// sieve filled while counting them: such jobs run without one.
    pub fn sieve_size(&self) -> Option<u64> {
        if self.job.config.stop_top > 0 { None } else { self.job.sieve_size() }
    }

    /// Where, and in what memory, a vocabulary is sorted and numbered out
    /// of core: the work directory, the working memory less `held` bytes.
    pub fn vocabulary_plan(&self, held: u64) -> VocabularyPlan<'_> {
        VocabularyPlan {
            dir: self.job.work,
            memory: self.job.plan.working().saturating_sub(held),
            stop: self.job.control,
            threads: self.job.config.threads,
        }
    }

    /// The lexicon pass over `inputs`: word counts, and the sieve (when
    /// given) with the fingerprints of their n-grams added — or `None` if
    /// the vocabulary needed its memory. What reading found goes in `stats`.
    /// The builder holds every word: a vocabulary past the memory stops it.
    pub fn count_words(
        &self,
        inputs: &[Input],
        sieve: Option<Sieve>,
        stats: &mut NgramStats,
    ) -> Result<(LexiconBuilder, Option<Sieve>), PipelineError> {
        let (builder, sieve, _) = self.lexicon_pass_of_task(inputs, sieve, false, stats)?;
        Ok((builder, sieve))
    }

    /// [`count_words`](Self::count_words) for a shard of a corpus counted in
    /// tasks: the table freezes when its room is used, and the words past
    /// it are counted in words-only overflow logs (their runs in the work
    /// directory), for [`dupgram_vocab::write_shard_words`].
    pub fn count_shard_words(
        &self,
        inputs: &[Input],
        sieve: Option<Sieve>,
        stats: &mut NgramStats,
    ) -> Result<(LexiconBuilder, Option<Sieve>, Vec<OverflowRuns>), PipelineError> {
        self.lexicon_pass_of_task(inputs, sieve, true, stats)
    }

    /// The lexicon pass over a shard of a corpus counted in tasks, writing
    /// each worker's word stream to the work directory as the one-process
    /// count does: the table freezes when its room is used, and the words
    /// past it go to overflow logs (occurrences and words) for
    /// [`dupgram_vocab::resolve_shard`] and [`dupgram_vocab::write_shard_words`].
    /// With `documents`, each worker also lists the documents of its stream
    /// (for an index over the streams).
    pub fn shard_streams(
        &self,
        inputs: &[Input],
        sieve: Option<Sieve>,
        documents: bool,
        stats: &mut NgramStats,
    ) -> Result<ShardStreams, PipelineError> {
        let fused = sieve.is_some();
        let shared: SharedSieve = RwLock::new(sieve);
        // A shard's index plans its document table after the pass, from the lists alone.
        let documents = documents.then_some(0);
        // Its tasks hand the IDs on in their files.
        let ids = IdsKept::Memory;
        let kind = LexiconPassKind { fused, streams: true, documents, ids, may_halve: false, words_past_table: false };
        let pass = self.job.lexicon_pass(inputs, &shared, kind, stats)?;
        record_read(&pass.read, stats);
        Ok(ShardStreams {
            sieve: shared.into_inner().unwrap_or_else(|p| p.into_inner()),
            streams: pass.streams.into_iter().map(|w| (w.segments, w.bytes)).collect(),
            builder: pass.builder,
            overflow: pass.overflow,
            documents: ShardDocuments { lists: pass.documents },
        })
    }

    /// The count pass over a shard's word streams ([`shard_streams`](Self::shard_streams)):
    /// runs per bucket in the work directory, as [`count_ngrams`](Self::count_ngrams)
    /// writes from the text. `renumbering` and `sides` say what the streams'
    /// codes are ([`dupgram_vocab::resolve_shard`]); the streams are read, and
    /// stay; the side files go once read.
    #[allow(clippy::too_many_arguments)]
    pub fn count_shard_streams(
        &self,
        streams: &[(Vec<PathBuf>, u64)],
        lexicon: &Lexicon,
        renumbering: Renumbering,
        sides: Vec<Option<SideFile>>,
        sieve: Option<&mut Sieve>,
        buckets: &[u32],
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        let files: Vec<WordsFile> =
            streams.iter().map(|(segments, bytes)| WordsFile { segments: segments.clone(), bytes: *bytes }).collect();
        let vocabulary = u32::try_from(renumbering.ids.len())
            .map_err(|_| PipelineError::Corrupt("a shard table of over 2^32 words".into()))?;
        let streamed = Streamed { renumbering, vocabulary, sides, final_ids: false, shard_streams: None };
        // The sieve, filled by the lexicon tasks, is only asked.
        let part =
            StreamPart { sieve, fill: false, prints: None, part: FirstWords::ALL, label: (1, 1), last: false, buckets };
        let counted = self.job.count_streams(&files, lexicon, &streamed, part, stats);
        streamed.remove_sides();
        counted
    }

    fn lexicon_pass_of_task(
        &self,
        inputs: &[Input],
        sieve: Option<Sieve>,
        words_past_table: bool,
        stats: &mut NgramStats,
    ) -> Result<(LexiconBuilder, Option<Sieve>, Vec<OverflowRuns>), PipelineError> {
        let fused = sieve.is_some();
        let shared: SharedSieve = RwLock::new(sieve);
        // Tasks of one job combine their sieves: a task's sieve keeps the job's size.
        let ids = IdsKept::Not;
        let kind = LexiconPassKind { fused, streams: false, documents: None, ids, may_halve: false, words_past_table };
        let pass = self.job.lexicon_pass(inputs, &shared, kind, stats)?;
        record_read(&pass.read, stats);
        let sieve = shared.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok((pass.builder, sieve, pass.overflow))
    }

    /// Records how full a (combined) sieve is in `stats`; drops it when it
    /// would let most n-grams through anyway.
    pub fn settle_sieve(&self, sieve: Option<Sieve>, stats: &mut NgramStats) -> Option<Sieve> {
        let shared: SharedSieve = RwLock::new(sieve);
        settle_sieve(&shared, stats);
        shared.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// The count pass over `inputs`: runs per bucket in the work directory
    /// (bucket `b` holds the n-grams whose first word ID is in `[buckets[b-1], buckets[b])`).
    pub fn count_ngrams(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        buckets: &[u32],
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        self.job.count_pass(inputs, lexicon, sieve, buckets, stats)
    }

    /// Loads the lexicon at `path` for writing n-grams out: its counts in
    /// memory (as runs of equal counts), the words of `scope` by ID in a
    /// file of the work directory, which [`merge`](Self::merge) reads
    /// within a third of the memory. Returns the lexicon and that file.
    pub fn lexicon_for_output(&self, path: &Path, scope: Scope) -> Result<(Lexicon, PathBuf), PipelineError> {
        let words = self.job.work.join("words.dgi");
        let (lexicon, _) = load_words_to_disk(path, scope, &words)?;
        Ok((lexicon, words))
    }

    /// Merges runs; n-grams seen at least `min_count` times go to `emit`,
    /// their words from `words`.
    pub fn merge(
        &self,
        runs: Vec<RunFile>,
        entries: u64,
        lexicon: &Lexicon,
        words: WordSource<'_>,
        stats: &mut NgramStats,
        emit: &mut Emit,
    ) -> Result<(), PipelineError> {
        self.job.merge_pass(runs, entries, lexicon, words, self.job.config.min_count, stats, emit)
    }

    /// Merges runs of any kind (`header`'s) into `sink`, which gets each
    /// n-gram once with its count and, from postings runs, its occurrences;
    /// within the memory plan (a fan-in it allows, intermediate merges in
    /// the work directory). Returns the bytes the intermediate merges wrote.
    pub fn merge_runs<S: MergeSink<Error = PipelineError>>(
        &self,
        runs: Vec<RunFile>,
        header: RunHeader,
        lexicon: &Lexicon,
        sink: &mut S,
    ) -> Result<u64, PipelineError> {
        let fan_in = self.job.merge_fan_in(lexicon.heap_bytes() as u64);
        self.job.control.start_pass("merging", None);
        let work = self.job.work;
        let report = merge_in(work, "merge-runs", runs, header, fan_in, sink, self.job.control)?;
        Ok(report.bytes_written)
    }

    /// [`merge`](Self::merge), handing every n-gram to `emit`, unique ones
    /// too: for keeping the count of every n-gram of a corpus.
    pub fn merge_every(
        &self,
        runs: Vec<RunFile>,
        entries: u64,
        lexicon: &Lexicon,
        words: WordSource<'_>,
        stats: &mut NgramStats,
        emit: &mut Emit,
    ) -> Result<(), PipelineError> {
        self.job.merge_pass(runs, entries, lexicon, words, 1, stats, emit)
    }
}

/// What the lexicon pass over a shard leaves ([`Passes::shard_streams`]).
pub struct ShardStreams {
    pub builder: LexiconBuilder,
    pub sieve: Option<Sieve>,
    /// Each worker's word stream: its segments (in the work directory) and bytes.
    pub streams: Vec<(Vec<PathBuf>, u64)>,
    /// The overflow logs of the streams that had overflow tokens.
    pub overflow: Vec<OverflowRuns>,
    /// Each stream's documents, when listed.
    pub documents: ShardDocuments,
}

/// A finished count.
#[derive(Debug)]
pub struct NgramOutcome {
    pub stats: NgramStats,
    /// The lexicon (the part of it that duplicate n-grams use).
    pub lexicon: Lexicon,
    /// The whole lexicon file, under a temporary name in `lexicon_dir`
    /// (or the job's temporary directory, then already removed): persist it to keep it.
    pub lexicon_file: Option<tempfile::NamedTempFile>,
}

/// Counts the n-grams of the corpus and hands every one seen at least
/// `min_count` times to `emit`, in increasing order of word IDs.
pub fn count_ngrams(config: &NgramConfig, control: &Control, emit: &mut Emit) -> Result<NgramOutcome, PipelineError> {
    config.check()?;
    let started = Instant::now();
    let plan = MemoryPlan::new(config.memory, config.threads, zstd_need(&config.inputs)?)
        .map_err(|what| memory_error(config, what))?;
    let work = dupgram_jobkit::scratch::Scratch::create(&config.tmp_dir, "dupgram-ngrams")?;
    let mut stats = NgramStats {
        n: config.n,
        min_count: config.min_count,
        memory_budget: config.memory,
        threads: config.threads,
        ..NgramStats::default()
    };
    let job = Job { config, control, plan, work: work.path(), inputs: config.inputs.clone() };
    let result = job.run(&mut stats, emit, started);
    drop(work);
    let (lexicon, lexicon_file) = result?;
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(NgramOutcome { stats, lexicon, lexicon_file })
}

/// The largest zstd window the inputs announce.
pub(crate) fn zstd_need(inputs: &[Input]) -> Result<ZstdNeed, PipelineError> {
    let mut need = ZstdNeed::None;
    for input in inputs {
        let window = match input {
            Input::Stdin { .. } => return Ok(ZstdNeed::Unknown),
            Input::Range { .. } => None,
            Input::Path(p) => dupgram_corpus::zstd_window(p)
                .map_err(|error| CorpusError::Open { name: p.display().to_string(), error })?,
        };
        if let Some(w) = window {
            need = match need {
                ZstdNeed::Window(v) if v >= w => need,
                _ => ZstdNeed::Window(w),
            };
        }
    }
    Ok(need)
}

fn memory_error(config: &NgramConfig, what: String) -> PipelineError {
    PipelineError::Memory { budget: human_bytes(config.memory), what }
}

struct Job<'a> {
    config: &'a NgramConfig,
    control: &'a Control,
    plan: MemoryPlan,
    work: &'a Path,
    /// The inputs of the passes after the first (standard input becomes its copy).
    inputs: Vec<Input>,
}

type SharedSieve = RwLock<Option<Sieve>>;

impl Job<'_> {
    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            max_record_bytes: self.plan.max_record,
            zstd_window_log_max: self.plan.zstd_window_log,
            ..self.config.read.clone()
        }
    }

    fn source<'s>(&self, inputs: &'s [Input], options: &'s ReadOptions) -> Source<'s> {
        Source {
            inputs,
            options,
            batch_bytes: self.config.limits.batch_bytes.unwrap_or(self.plan.batch_bytes),
            batches: self.plan.batches,
        }
    }

    fn memory_error(&self, what: String) -> PipelineError {
        memory_error(self.config, what)
    }

    fn total_input_bytes(&self) -> Option<u64> {
        self.config.inputs.iter().map(Input::size).sum()
    }

    fn run(
        self,
        stats: &mut NgramStats,
        emit: &mut Emit,
        started: Instant,
    ) -> Result<(Lexicon, Option<tempfile::NamedTempFile>), PipelineError> {
        let config = self.config;
        let Tokenised { lexicon, words, lexicon_file, sieve, passing, mut renumbering, mut streams, .. } =
            self.tokenise(&config.inputs, None, stats, started)?;
        let words = words.ok_or_else(|| PipelineError::Usage("internal error: a count without its words".into()))?;
        let mut streamed =
            WordStreams { lexicon: &lexicon, words: &words, streams: &mut streams, renumbering: &mut renumbering };
        self.count_word_streams(&mut streamed, (sieve, passing), StreamsAfter::Removed, stats, emit)?;
        let keep = config.lexicon_dir.is_some().then_some(lexicon_file);
        Ok((lexicon, keep))
    }

    /// Counts the n-grams of the word streams the lexicon pass wrote, with
    /// the sieve it filled (and the n-grams that sieve lets through, when
    /// known), or none; the streams are left as `after` says.
    fn count_word_streams(
        &self,
        corpus: &mut WordStreams<'_>,
        (sieve, passing): (Option<Sieve>, Option<u64>),
        after: StreamsAfter,
        stats: &mut NgramStats,
        emit: &mut Emit,
    ) -> Result<(), PipelineError> {
        let config = self.config;
        let (lexicon, words) = (corpus.lexicon, corpus.words);
        let removed = after == StreamsAfter::Removed;
        // A sieve filled while reading a corpus of unknown size (standard
        // input) that turned out to hold more n-grams than it takes: a count
        // in parts lets far fewer unique n-grams through, so it goes.
        let sieve = sieve.filter(|s| parts_for(stats.tokens, s.capacity()) <= 1);
        // No sieve came out of the lexicon pass (none was filled there, or it
        // was too full or had to go): a fresh one, filled from the streams.
        let refill = config.sieve && sieve.is_none();
        // Read at least twice from now on (fill, count): worth final IDs first.
        if refill && !corpus.renumbering.final_ids {
            let t = Instant::now();
            let (streams, renumbering) =
                renumber_streams(corpus.streams, corpus.renumbering, lexicon.len() as u32, self.work, self.control)?;
            (*corpus.streams, *corpus.renumbering) = (streams, renumbering);
            stats.seconds.renumber += t.elapsed().as_secs_f64();
        }
        let (streams, renumbering) = (&*corpus.streams, &*corpus.renumbering);
        let beside = renumbering.beside(streams.len());
        let mut sieve = if refill { self.fresh_sieve(lexicon, beside, stats) } else { sieve };
        // The room on disk the streams leave of the text's share (half by
        // default), for a part's runs (see `PartPlan`) or the print runs (see `repeat_prints`).
        let on_disk: u64 = streams.iter().map(|f| f.bytes).sum::<u64>() + stats.vocabulary_bytes;
        let share = config.disk_share(stats.text_bytes);
        // Print runs must fit within the share itself; a part's runs get a floor of room.
        let within = share.saturating_sub(on_disk);
        let rooms = DiskRooms::new(share, on_disk, 0, config.limits.disk_room);
        // The last part takes the room of the streams it gives back as it reads them, if they go.
        let (room, last_room) = (rooms.part(), if removed { rooms.last() } else { rooms.part() });
        let layout = KeyLayout::new(config.n, lexicon.len().saturating_sub(1) as u32)?;
        let once = match &sieve {
            Some(s) if refill => self.proves_repeats_once(s, lexicon, beside, layout, within, stats)?,
            _ => false,
        };
        let proof = if once {
            // Its marks take the memory instead.
            sieve = None;
            let t = Instant::now();
            let job = StreamJob { streams, lexicon, streamed: renumbering, layout };
            let proof = self.prove_repeats(&job, beside, stats)?;
            stats.seconds.sieve += t.elapsed().as_secs_f64();
            Some(proof)
        } else {
            None
        };
        self.make_room_for_chunks(&mut sieve, lexicon, renumbering, streams.len(), stats)?;
        if !refill && let Some(s) = sieve.as_mut() {
            // Filled by the lexicon pass: from now on asked only "2 or more?".
            s.freeze();
        }
        // Parts planned one at a time, each within the sieve (or the marks)
        // and the room on disk.
        let mut plan = match (&sieve, &proof) {
            (_, Some(Proof { prints, buckets, marks })) => {
                // Parts forced: as many marks as that many parts take.
                let marks = match config.limits.sieve_parts {
                    Some(parts) => prints.total.div_ceil(parts.max(1) as u64),
                    None => Sieve::marked_capacity(marks.bytes() as u64),
                };
                CountPlan::Prints(BucketPlan::new(prints, buckets, lexicon, marks, room))
            }
            (Some(s), None) if refill => {
                let plan = PartPlan::new(s.capacity(), room, config.limits.sieve_parts, lexicon);
                CountPlan::Sieve(plan.last_within(last_room))
            }
            // The sieve the lexicon pass filled serves every part, or there is
            // none: parts by disk only, at what that sieve lets through, or all.
            _ => {
                let sorted = if sieve.is_some() { passing } else { Some(self.ngrams_at_most(stats)) };
                let plan = PartPlan::new(u64::MAX, room, config.limits.sieve_parts, lexicon).last_within(last_room);
                CountPlan::Sieve(match sorted {
                    Some(sorted) => plan.sorting(sorted, stats.tokens),
                    None => plan,
                })
            }
        };
        let mut proof = proof;
        let mut i = 0;
        while let Some((part, parts, buckets)) = plan.next(lexicon, proof.as_ref().map(|p| &p.buckets)) {
            i += 1;
            let last = i == parts && removed;
            let (table, fill, prints) = match (proof.as_mut(), buckets) {
                (Some(Proof { prints: repeats, buckets, marks }), Some(range)) => {
                    let t = Instant::now();
                    repeats.mark(marks, range, self.control)?;
                    stats.seconds.sieve += t.elapsed().as_secs_f64();
                    stats.sieve.saturation = stats.sieve.saturation.max(marks.saturation());
                    (Some(marks), false, Some(&*buckets))
                }
                _ => {
                    if refill && let Some(s) = sieve.as_mut() {
                        s.clear();
                    }
                    (sieve.as_mut(), refill, None)
                }
            };
            let written = stats.run_bytes;
            let counted = self.count_streams(
                streams,
                lexicon,
                renumbering,
                StreamPart { sieve: table, fill, prints, part, label: (i, parts), last, buckets: &[] },
                stats,
            )?;
            plan.counted(stats.run_bytes - written);
            stats.sieve.parts = i as u32;
            if counted.documents != stats.documents {
                return Err(PipelineError::Changed(format!(
                    "the lexicon pass read {} documents, its word streams hold {}",
                    stats.documents, counted.documents
                )));
            }
            if last {
                // Read for the last time: off the disk before the merge writes.
                remove_streams(streams);
                renumbering.remove_sides();
            }
            let t = Instant::now();
            let runs = counted.runs.into_iter().map(|(_, run)| run).collect();
            self.merge_pass(runs, counted.entries, lexicon, WordSource::Disk(words), config.min_count, stats, emit)?;
            stats.seconds.merge += t.elapsed().as_secs_f64();
        }
        drop(sieve);
        drop(proof);
        if removed {
            remove_streams(streams);
        }
        stats.distinct_ngrams = stats.ngrams - stats.duplicate_occurrences + stats.duplicate_types;
        stats.bytes_spilled += stats.run_bytes + stats.merge_bytes + stats.sieve.print_bytes;
        Ok(())
    }

    /// A sieve for the count over the word streams; what the lexicon pass
    /// said of its own sieve no longer holds. It is filled while only the
    /// lexicon and `beside` bytes are held, and frozen to three tenths of
    /// its size before chunks take the memory ([`Filling::Staged`]), so it
    /// is built at twice the size a sieve of counters the count keeps
    /// would have: a part per [`Sieve::capacity`] of n-grams.
    fn fresh_sieve(&self, lexicon: &Lexicon, beside: u64, stats: &mut NgramStats) -> Option<Sieve> {
        let fill_room = self.plan.working().saturating_sub(lexicon.heap_bytes() as u64 + beside);
        let bytes = self.sieve_size_for(Some(stats.tokens)).map(|b| (2 * b).min(fill_room) >> 12 << 12);
        // Without the memory map there is simply no sieve: results are the same.
        let sieve = bytes.filter(|&b| b >= 4096).and_then(|b| Sieve::new(Filling::Staged, b as usize).ok());
        stats.sieve = SieveStats { used: sieve.is_some(), ..SieveStats::default() };
        record_size(sieve.as_ref(), &mut stats.sieve);
        sieve
    }

    /// Whether the count proves its repeated n-grams once, from print runs
    /// (see [`crate::repeat_prints`]), instead of filling `sieve` for each
    /// part: when it would go in parts anyway, and the print runs fit in
    /// the `room` on disk beside the streams.
    fn proves_repeats_once(
        &self,
        sieve: &Sieve,
        lexicon: &Lexicon,
        beside: u64,
        layout: KeyLayout,
        room: u64,
        stats: &NgramStats,
    ) -> Result<bool, PipelineError> {
        let limits = &self.config.limits;
        if let Some(forced) = limits.repeat_prints {
            return Ok(forced);
        }
        // The print pass and its merge cost about what three reads of the
        // streams do: worth it when the sieve would need more fills than that.
        if limits.sieve_parts.is_some() || parts_for(stats.tokens, sieve.capacity()) < MIN_SIEVE_PARTS_FOR_PRINTS {
            return Ok(false);
        }
        let chunk = self.print_chunk(lexicon, beside, layout)?;
        Ok(print_runs_fit(self.ngrams_at_most(stats), chunk, room))
    }

    /// N-grams a count of `stats`' documents can meet: a document of `t`
    /// tokens has `t - n + 1` at most.
    fn ngrams_at_most(&self, stats: &NgramStats) -> u64 {
        stats.tokens.saturating_sub(stats.documents.saturating_mul(self.config.n as u64 - 1))
    }

    /// Prints a stream's chunk holds: the room chunks of keys would have.
    fn print_chunk(&self, lexicon: &Lexicon, beside: u64, layout: KeyLayout) -> Result<usize, PipelineError> {
        let keys = self.chunk_capacity(lexicon, beside, 0, layout)?;
        Ok(keys.saturating_mul(layout.key_bytes()) / 8)
    }

    /// The print pass and its merge (see [`crate::repeat_prints`]), and a
    /// table of marks for the parts: at most half the room beside the
    /// lexicon and the streams, and never the room the count's chunks need
    /// (halved until they fit: a smaller table only makes more parts).
    fn prove_repeats(&self, job: &StreamJob, beside: u64, stats: &mut NgramStats) -> Result<Proof, PipelineError> {
        let held = job.lexicon.heap_bytes() as u64 + beside;
        let free = self.plan.working().saturating_sub(held);
        let mut marks = free / 2;
        while marks > 4096 && self.chunk_capacity(job.lexicon, beside, marks, job.layout).is_err() {
            marks /= 2;
        }
        let fan_in = self
            .config
            .limits
            .fan_in
            .unwrap_or_else(|| (free / PRINT_READER_BYTES).clamp(2, open_file_allowance() as u64) as usize);
        let room = ProofRoom {
            chunk: self.print_chunk(job.lexicon, beside, job.layout)?,
            threads: self.config.threads,
            fan_in,
            marks,
            budget: self.config.memory,
        };
        let proof = prove(job, self.ngrams_at_most(stats), &room, self.work, self.control)?;
        stats.sieve.repeat_prints = proof.prints.total;
        stats.sieve.print_bytes = proof.prints.run_bytes;
        stats.sieve.bytes = proof.marks.bytes() as u64;
        stats.sieve.frozen_bytes = proof.marks.bytes() as u64;
        Ok(proof)
    }

    /// Whether the lexicon pass leaves the sieve alone, for the count to fill
    /// from the word streams: with `--stop-top` (the stop words are known
    /// only at its end), and when the inputs' sizes say the corpus is too
    /// large for one sieve, so it will be counted in parts anyway.
    fn sieve_after_lexicon(&self) -> bool {
        let config = self.config;
        if config.stop_top > 0 || config.limits.sieve_parts.is_some() || config.limits.repeat_prints == Some(true) {
            return true;
        }
        match (self.expected_ngrams(), self.sieve_size()) {
            (Some(ngrams), Some(bytes)) => parts_for(ngrams, Filling::Counters.capacity(bytes)) > 1,
            _ => false,
        }
    }

    /// The lexicon pass of a count, the only pass that reads the corpus:
    /// the lexicon, each worker's word-ID stream, how first-seen IDs become
    /// word IDs, and the sieve when this pass filled it (see [`run`](Self::run) for the others).
    /// The lexicon comes without its lookup table: nothing looks words up after this.
    /// With `documents`, each worker also lists the documents of its stream ([`StreamDocs`]),
    /// for an index holding that many bytes a document beside the lists, their IDs kept as said.
    fn tokenise(
        &self,
        inputs: &[Input],
        documents: Option<(u64, IdsKept)>,
        stats: &mut NgramStats,
        started: Instant,
    ) -> Result<Tokenised, PipelineError> {
        let config = self.config;
        let fused = config.sieve && !self.sieve_after_lexicon();
        let sieve: SharedSieve = RwLock::new(if fused { self.sized_sieve() } else { None });
        let ids = documents.map_or(IdsKept::Not, |(_, ids)| ids);
        let documents = documents.map(|(per_document, _)| per_document);
        let kind = LexiconPassKind { fused, streams: true, documents, ids, may_halve: true, words_past_table: false };
        let LexiconPass { builder, read, streams, documents: docs, overflow, sieve_again } =
            self.lexicon_pass(inputs, &sieve, kind, stats)?;
        // Counted through the insert lines of one sieve, never halved: exact.
        let passing = match sieve.read() {
            Ok(s) if stats.sieve.halvings == 0 => s.as_ref().and_then(|s| s.passing(sieve_again)),
            _ => None,
        };
        record_read(&read, stats);
        stats.bytes_spilled += streams.iter().map(|s| s.bytes).sum::<u64>();
        let vocabulary = builder.first_seen_len() as u32;
        // The sieve, when this pass filled it, stays beside the numbering.
        let sieve_bytes = sieve.read().map_or(0, |s| s.as_ref().map_or(0, |s| s.bytes() as u64));
        let (lexicon_file, numbered) = self.write_lexicon(builder, overflow, sieve_bytes)?;
        stats.overflow_words = numbered.overflow_words;
        stats.overflow_tokens = numbered.overflow_tokens;
        stats.overflow_slots = numbered.overflow_slots;
        stats.vocabulary_bytes = std::fs::metadata(lexicon_file.path()).map_or(0, |m| m.len())
            + numbered.sides.iter().flatten().map(|s| s.bytes).sum::<u64>();
        stats.bytes_spilled += numbered.spilled;
        stats.seconds.lexicon = started.elapsed().as_secs_f64();

        // The words are kept on disk, for the output only: none is held in memory.
        let (lexicon, words) = if documents.is_some() {
            (Lexicon::load_limited(lexicon_file.path(), Scope::Repeated, 0, &mut |_, _| Ok(()))?, None)
        } else {
            let path = self.work.join("words.dgi");
            let (lexicon, words_bytes) = load_words_to_disk(lexicon_file.path(), Scope::Repeated, &path)?;
            stats.bytes_spilled += words_bytes;
            stats.vocabulary_bytes += words_bytes;
            (lexicon, Some(path))
        };
        stats.vocabulary = lexicon.total_words();
        stats.repeated_words = lexicon.repeated_len() as u64;
        stats.stopwords = lexicon.stopwords().len() as u64;

        if fused {
            settle_sieve(&sieve, stats);
        }
        let sieve = sieve.into_inner().unwrap_or_else(|p| p.into_inner());
        let renumbering = Streamed {
            renumbering: numbered.renumbering,
            vocabulary,
            sides: numbered.sides,
            final_ids: false,
            shard_streams: None,
        };
        Ok(Tokenised { lexicon, words, lexicon_file, sieve, passing, renumbering, streams, documents: docs })
    }

    /// Numbers the words — the table's and, when it was frozen, those of
    /// the overflow logs — and writes the lexicon file (in `lexicon_dir`,
    /// or the work directory); returns it and what every first-seen ID and
    /// overflow token became. `beside` bytes (a sieve) stay held meanwhile.
    fn write_lexicon(
        &self,
        builder: LexiconBuilder,
        overflow: Vec<OverflowRuns>,
        beside: u64,
    ) -> Result<(tempfile::NamedTempFile, Numbered<()>), PipelineError> {
        let config = self.config;
        let dir = config.lexicon_dir.as_deref().unwrap_or(self.work);
        let file =
            dupgram_jobkit::output::temp_beside(dir, "dupgram-lexicon").map_err(|e| PipelineError::io(dir, e))?;
        let path = file.path().to_owned();
        let memory = self.plan.working().saturating_sub(builder.heap_bytes() as u64 + beside);
        let plan = VocabularyPlan { dir: self.work, memory, stop: self.control, threads: config.threads };
        let numbered = {
            let out = std::io::BufWriter::new(file.as_file());
            let numbered = number_vocabulary(&builder, overflow, (config.norm, config.stop_top), out, &plan).map_err(
                |e| match e {
                    VocabError::Lexicon(error) => PipelineError::io(&path, error),
                    other => other.into(),
                },
            )?;
            let (out, numbered) = numbered.take_out(());
            out.into_inner().map_err(|e| PipelineError::io(&path, e.into_error()))?;
            numbered
        };
        Ok((file, numbered))
    }

    /// The count pass over the word streams: what [`count_pass`](Self::count_pass)
    /// does over the corpus, without reading, tokenising or looking up a word.
    fn count_streams(
        &self,
        streams: &[WordsFile],
        lexicon: &Lexicon,
        streamed: &Streamed,
        part: StreamPart,
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        let layout = KeyLayout::new(self.config.n, lexicon.len().saturating_sub(1) as u32)?;
        let job = StreamJob { streams, lexicon, streamed, layout };
        match layout.words() {
            1 => self.count_streams_with::<1>(&job, part, stats),
            2 => self.count_streams_with::<2>(&job, part, stats),
            3 => self.count_streams_with::<3>(&job, part, stats),
            4 => self.count_streams_with::<4>(&job, part, stats),
            6 => self.count_streams_with::<6>(&job, part, stats),
            8 => self.count_streams_with::<8>(&job, part, stats),
            12 => self.count_streams_with::<12>(&job, part, stats),
            _ => self.count_streams_with::<16>(&job, part, stats),
        }
    }

    /// One part of the count over the word streams: fills the (cleared)
    /// sieve with the part's n-grams first when asked to, then sorts those
    /// it lets through into runs.
    fn count_streams_with<const L: usize>(
        &self,
        job: &StreamJob,
        part: StreamPart,
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        let config = self.config;
        let StreamJob { streams, lexicon, streamed, layout } = *job;
        let range = KeyRange::<L>::new(part.part, layout);
        let beside = streamed.beside(streams.len());
        let label = part.label;
        let mut sieve = part.sieve;
        if part.fill
            && let Some(sieve) = sieve.as_deref_mut()
        {
            let t = Instant::now();
            fill_sieve(job, sieve, range, label, stats.tokens + stats.documents, self.control)?;
            stats.seconds.sieve += t.elapsed().as_secs_f64();
            stats.sieve.saturation = stats.sieve.saturation.max(sieve.saturation());
        }
        let (sieve, capacity) = self.chunk_room(lexicon, beside, sieve.map(|s| &*s), layout, stats)?;
        let t = Instant::now();
        stats.chunk_ngrams = capacity;
        self.control.start_pass(&phase_of("counting", label), Some(stats.tokens + stats.documents));
        let header = RunHeader::counts(config.n as u8, lexicon.identity());
        let outputs = each_stream(streams, |worker, file, abort| {
            let spill = ChunkSpill::new(Chunk::new(layout, capacity), self.work, worker, header, part.buckets);
            let mut keep = KeepNgrams::new(sieve, range, spill);
            keep.prints = part.prints.filter(|_| sieve.is_some());
            let mut walk = streamed.walk::<L>(layout, worker, sieve.is_some())?;
            walk.keep_only(part.part, part.part.share(lexicon));
            let documents = read_words(file, streamed.vocabulary, part.last, self.control, abort, |codes| {
                walk.codes(codes, &mut keep);
                walk.check()?;
                keep.flush_line()
            })?;
            let ngrams = walk.ngrams;
            walk.finish()?;
            keep.flush_line()?;
            keep.spill.write()?;
            Ok((keep.spill, documents, ngrams))
        })?;
        let mut total = CountPassTotals::default();
        // Every part walks every n-gram: the total is the same each time.
        stats.ngrams = outputs.iter().map(|(_, _, ngrams)| ngrams).sum();
        for (spill, documents, _) in outputs {
            total.documents += documents;
            stats.sorted_ngrams += spill.sorted;
            stats.runs_written += spill.runs.len() as u64;
            stats.run_bytes += spill.bytes;
            total.entries += spill.distinct;
            total.runs.extend(spill.runs);
        }
        total.tokens = stats.tokens;
        stats.seconds.count += t.elapsed().as_secs_f64();
        Ok(total)
    }

    /// Halves the sieve until chunks of n-grams fit beside it (or drops it
    /// when it is as small as a sieve gets): a smaller sieve lets more
    /// unique n-grams through, none lets them all through.
    fn make_room_for_chunks(
        &self,
        sieve: &mut Option<Sieve>,
        lexicon: &Lexicon,
        streamed: &Streamed,
        streams: usize,
        stats: &mut NgramStats,
    ) -> Result<(), PipelineError> {
        let layout = KeyLayout::new(self.config.n, lexicon.len().saturating_sub(1) as u32)?;
        let beside = streamed.beside(streams);
        // The count holds the sieve frozen.
        let fits = |s: &Sieve| self.chunk_capacity(lexicon, beside, s.frozen_bytes() as u64, layout).is_ok();
        shrink_sieve(sieve, &mut stats.sieve, fits, "no room for chunks beside it");
        Ok(())
    }

    /// Chunk capacity beside the lexicon, `beside` more bytes and the sieve;
    /// without room for chunks beside the sieve, the count does without it.
    fn chunk_room<'s>(
        &self,
        lexicon: &Lexicon,
        beside: u64,
        sieve: Option<&'s Sieve>,
        layout: KeyLayout,
        stats: &mut NgramStats,
    ) -> Result<(Option<&'s Sieve>, usize), PipelineError> {
        match self.chunk_capacity(lexicon, beside, sieve.map_or(0, |s| s.bytes() as u64), layout) {
            Ok(c) => Ok((sieve, c)),
            Err(_) if sieve.is_some() => {
                stats.sieve.used = false;
                stats.sieve.dropped = Some("no room for chunks beside it".into());
                Ok((None, self.chunk_capacity(lexicon, beside, 0, layout)?))
            }
            Err(e) => Err(e),
        }
    }

    /// The inputs of the first pass, which copies standard input (it can be
    /// read only once) to the work directory; `self.inputs` reads that copy.
    fn spool_stdin(&mut self) -> Vec<Input> {
        let first_inputs: Vec<Input> = self
            .config
            .inputs
            .iter()
            .map(|i| match i {
                Input::Stdin { .. } => Input::Stdin { spool: Some(self.work.join("stdin.copy")) },
                other => other.clone(),
            })
            .collect();
        self.inputs = first_inputs
            .iter()
            .map(|i| match i {
                Input::Stdin { spool: Some(p) } => Input::Path(p.clone()),
                other => other.clone(),
            })
            .collect();
        first_inputs
    }

    /// A sieve of about 4 bytes (16 counters) per expected n-gram, within 40 % of the working memory.
    fn sized_sieve(&self) -> Option<Sieve> {
        self.sieve_of(self.sieve_size())
    }

    /// Without the memory map there is simply no sieve: results are the same.
    fn sieve_of(&self, bytes: Option<u64>) -> Option<Sieve> {
        Sieve::with_bytes(bytes? as usize).ok()
    }

    /// The size of [`sized_sieve`](Self::sized_sieve), `None` without a sieve.
    fn sieve_size(&self) -> Option<u64> {
        self.sieve_size_for(self.expected_ngrams())
    }

    /// A sieve's size for this many n-grams (unknown: as large as allowed).
    fn sieve_size_for(&self, ngrams: Option<u64>) -> Option<u64> {
        if !self.config.sieve {
            return None;
        }
        let cap = self.plan.working() * 2 / 5;
        let wanted = ngrams.map_or(cap, |n| n.saturating_mul(SIEVE_BYTES_PER_NGRAM).max(1 << 20));
        // Whole 4 KiB pages: a sieve that must make room halves cleanly ([`Sieve::halve`]) and frees whole pages.
        Some((wanted.min(cap) >> 12 << 12).max(4096))
    }

    /// The n-grams the inputs' sizes suggest, before anything is read.
    fn expected_ngrams(&self) -> Option<u64> {
        // Compressed text is roughly a quarter of its plain size; a token takes about 6 bytes.
        let ngrams = self.config.inputs.iter().map(|i| match i {
            Input::Path(p)
                if dupgram_corpus::is_compressed(p).unwrap_or(false)
                    || dupgram_corpus::is_parquet(p).unwrap_or(false) =>
            {
                i.size().map(|s| s * 4 / 6)
            }
            _ => i.size().map(|s| s / 6),
        });
        ngrams.sum()
    }

    /// Counts the n-grams of `inputs` into sorted runs in the work
    /// directory, one set of runs per bucket: bucket `b` holds the n-grams
    /// whose first word ID is in `[buckets[b-1], buckets[b])` (`buckets`
    /// lists the first ID of every bucket after the first; empty for one bucket).
    fn count_pass(
        &self,
        inputs: &[Input],
        lexicon: &Lexicon,
        sieve: Option<&Sieve>,
        buckets: &[u32],
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        let layout = KeyLayout::new(self.config.n, lexicon.len().saturating_sub(1) as u32)?;
        let job = CountJob { inputs, lexicon, sieve, buckets, layout };
        match layout.words() {
            1 => self.count_pass_with::<1>(&job, stats),
            2 => self.count_pass_with::<2>(&job, stats),
            3 => self.count_pass_with::<3>(&job, stats),
            4 => self.count_pass_with::<4>(&job, stats),
            6 => self.count_pass_with::<6>(&job, stats),
            8 => self.count_pass_with::<8>(&job, stats),
            12 => self.count_pass_with::<12>(&job, stats),
            _ => self.count_pass_with::<16>(&job, stats),
        }
    }

    fn chunk_capacity(
        &self,
        lexicon: &Lexicon,
        beside: u64,
        sieve_bytes: u64,
        layout: KeyLayout,
    ) -> Result<usize, PipelineError> {
        if let Some(n) = self.config.limits.chunk_ngrams {
            return Ok(n);
        }
        let threads = self.config.threads as u64;
        let fixed = lexicon.heap_bytes() as u64 + beside + sieve_bytes + threads * WRITER_BYTES;
        let room = self.plan.working().saturating_sub(fixed) / threads;
        let keys = room / layout.key_bytes() as u64;
        if keys < MIN_CHUNK_NGRAMS {
            return Err(self.memory_error(format!(
                "after the lexicon ({}) there is no room for chunks of n-grams",
                human_bytes(lexicon.heap_bytes() as u64)
            )));
        }
        Ok(keys.min(u32::MAX as u64) as usize)
    }

    fn count_pass_with<const L: usize>(
        &self,
        job: &CountJob,
        stats: &mut NgramStats,
    ) -> Result<CountPassTotals, PipelineError> {
        let config = self.config;
        let CountJob { inputs, lexicon, sieve, buckets, layout } = *job;
        let (sieve, capacity) = self.chunk_room(lexicon, 0, sieve, layout, stats)?;
        stats.chunk_ngrams = capacity;
        self.control.start_pass("counting", self.total_input_bytes());
        let header = RunHeader::counts(config.n as u8, lexicon.identity());
        let workers: Vec<CountWorker<L>> = (0..config.threads)
            .map(|worker| CountWorker {
                scanner: Scanner::new(config.norm, lexicon, layout, sieve.is_some()),
                keep: KeepNgrams::new(
                    sieve,
                    KeyRange::ALL,
                    ChunkSpill::new(Chunk::new(layout, capacity), self.work, worker, header, buckets),
                ),
                n: config.n as u64,
                ngrams: 0,
            })
            .collect();
        let options = self.read_options();
        let (outputs, read) = feed(workers, &self.source(inputs, &options), self.control)?;
        let mut total = CountPassTotals { documents: read.documents, ..CountPassTotals::default() };
        for (spill, counts) in outputs {
            total.tokens += counts.tokens;
            stats.ngrams += counts.ngrams;
            stats.sorted_ngrams += spill.sorted;
            stats.runs_written += spill.runs.len() as u64;
            stats.run_bytes += spill.bytes;
            total.entries += spill.distinct;
            total.runs.extend(spill.runs);
        }
        Ok(total)
    }

    /// Runs a merge may read at once: a block buffer each, in what
    /// `held` bytes (words for the output) and the output leave of the working memory.
    fn merge_fan_in(&self, held: u64) -> usize {
        let room = self.plan.working().saturating_sub(held + OUTPUT_BYTES + WRITER_BYTES);
        self.config
            .limits
            .fan_in
            .unwrap_or_else(|| ((room / self.merge_run_bytes()) as usize).clamp(2, open_file_allowance()))
    }

    /// What a merge holds for each run it reads.
    fn merge_run_bytes(&self) -> u64 {
        72 * 1024 + 4 * self.config.n as u64
    }

    /// Bytes of words the merge's output holds in memory: a third of the
    /// working memory, and none of what the output and the two runs a merge
    /// reads at least need (under the smallest budgets every word is read
    /// from disk, a batch at a time).
    fn output_word_bytes(&self) -> u64 {
        let working = self.plan.working();
        let least = OUTPUT_BYTES + WRITER_BYTES + 2 * self.merge_run_bytes();
        self.config.limits.output_word_bytes.unwrap_or((working / 3).min(working.saturating_sub(least)))
    }

    /// Merges all runs; the n-grams found go to `emit` on a thread of
    /// their own, so formatting and writing the output overlap decoding.
    /// `lexicon` names the runs' lexicon; `words` is where the output finds
    /// the n-grams' words.
    #[allow(clippy::too_many_arguments)]
    fn merge_pass(
        &self,
        runs: Vec<RunFile>,
        entries: u64,
        lexicon: &Lexicon,
        words: WordSource<'_>,
        min_count: u64,
        stats: &mut NgramStats,
        emit: &mut Emit,
    ) -> Result<(), PipelineError> {
        // Words take at most a third of the memory; the runs read at once, the rest.
        let held = self.output_word_bytes();
        let mut output = OutputWords::open(words, held)?;
        // The lexicon stays beside the merge: whole when it holds the words.
        let fan_in = self.merge_fan_in(lexicon.heap_bytes() as u64 + output.heap_bytes());
        stats.fan_in = fan_in;
        self.control.start_pass("merging", Some(entries));
        let header = RunHeader::counts(self.config.n as u8, lexicon.identity());
        let (full_tx, full_rx) = bounded::<DupBatch>(2);
        let (free_tx, free_rx) = bounded::<DupBatch>(3);
        for _ in 0..3 {
            free_tx.send(DupBatch::default()).expect("room for every batch");
        }
        let n = self.config.n;
        let work = self.work;
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || -> Result<(), PipelineError> {
                for mut batch in full_rx {
                    let words = output.batch(&batch.ids)?;
                    for (i, (ids, &count)) in batch.ids.chunks_exact(n).zip(&batch.counts).enumerate() {
                        prefetch_ngram_words(&words, &batch.ids, n, i);
                        emit(&words, ids, count)?;
                    }
                    batch.ids.clear();
                    batch.counts.clear();
                    let _ = free_tx.send(batch);
                }
                Ok(())
            });
            let mut sink = DupFilter {
                min_count,
                batch: DupBatch::default(),
                full: full_tx,
                free: free_rx,
                types: 0,
                occurrences: 0,
                written: 0,
            };
            let merged = merge_in(work, "merge", runs, header, fan_in, &mut sink, self.control)
                .and_then(|report| sink.flush().map(|()| report));
            let (types, occurrences, written) = (sink.types, sink.occurrences, sink.written);
            drop(sink);
            let wrote = writer
                .join()
                .unwrap_or_else(|_| Err(PipelineError::Usage("internal error: the output thread panicked".into())));
            // An output error (a full disk) explains why the merge could not hand over its batches.
            let report = match (merged, wrote) {
                (_, Err(e)) => return Err(e),
                (merged, Ok(())) => merged?,
            };
            // Added up: a count by parts merges once per part.
            stats.intermediate_merges += report.intermediate_merges;
            stats.merge_bytes += report.bytes_written;
            stats.merge_passes = stats.merge_passes.max(report.passes);
            stats.duplicate_types += types;
            stats.duplicate_occurrences += occurrences;
            stats.output_ngrams += written;
            Ok(())
        })
    }
}

/// N-grams ahead of the one being written whose words' offsets, then
/// bytes, the output asks for: far enough for a miss to arrive (an n-gram's
/// line takes some tens of nanoseconds to format), near enough to stay cached.
const OFFSETS_AHEAD: usize = 8;
const BYTES_AHEAD: usize = 4;

/// Asks for the words the output will look up for the n-grams after the
/// `i`-th of `ids` (n IDs each): their IDs are random in a sorted list, so
/// nearly every one of the last words' look-ups misses the cache.
fn prefetch_ngram_words(words: &BatchWordsOf<'_>, ids: &[u32], n: usize, i: usize) {
    for (ahead, near) in [(OFFSETS_AHEAD, false), (BYTES_AHEAD, true)] {
        if let Some(next) = ids.get((i + ahead) * n..(i + ahead + 1) * n) {
            for &id in next {
                words.prefetch_word(id, near);
            }
        }
    }
}

/// Where a merge's output finds the words of the n-grams it writes.
#[derive(Clone, Copy)]
pub enum WordSource<'a> {
    /// A lexicon that holds every word in scope.
    Held(&'a Lexicon),
    /// The words by ID on disk ([`dupgram_vocab::DiskWords`]): those of the
    /// lowest IDs are read into memory first, the rest looked up per batch.
    Disk(&'a Path),
}

/// The output's words: those held in memory, and the file the others are
/// looked up in, a batch of n-grams at a time.
enum OutputWords<'a> {
    Held(&'a Lexicon),
    Disk { held: HeldWords, disk: Box<DiskWords>, wanted: Vec<u32>, rare: RareWords },
}

impl<'a> OutputWords<'a> {
    /// Holds the words of the lowest IDs within `bytes`.
    fn open(source: WordSource<'a>, bytes: u64) -> Result<Self, PipelineError> {
        Ok(match source {
            WordSource::Held(lexicon) => OutputWords::Held(lexicon),
            WordSource::Disk(path) => {
                let mut disk = DiskWords::open(path)?;
                let held = disk.read_held(bytes)?;
                OutputWords::Disk { held, disk: Box::new(disk), wanted: Vec::new(), rare: RareWords::default() }
            }
        })
    }

    /// Bytes held (a lexicon that holds the words is counted beside it).
    fn heap_bytes(&self) -> u64 {
        match self {
            OutputWords::Held(_) => 0,
            OutputWords::Disk { held, .. } => held.heap_bytes(),
        }
    }

    /// The words of a batch of n-grams (`ids`, all their IDs): those not
    /// held are read from disk first, in increasing order.
    fn batch(&mut self, ids: &[u32]) -> Result<BatchWordsOf<'_>, PipelineError> {
        match self {
            OutputWords::Held(lexicon) => Ok(BatchWordsOf::Held(lexicon)),
            OutputWords::Disk { held, disk, wanted, rare } => {
                let held_len = held.len();
                wanted.clear();
                wanted.extend(ids.iter().copied().filter(|&id| id >= held_len));
                wanted.sort_unstable();
                wanted.dedup();
                rare.clear();
                disk.resolve(wanted, rare)?;
                Ok(BatchWordsOf::Disk(BatchWords { held: &*held, held_len, rare: &*rare }))
            }
        }
    }
}

/// One batch's words, as [`OutputWords::batch`] gives them.
enum BatchWordsOf<'a> {
    Held(&'a Lexicon),
    Disk(BatchWords<'a>),
}

impl WordsById for BatchWordsOf<'_> {
    fn word_bytes(&self, id: u32) -> &[u8] {
        match self {
            BatchWordsOf::Held(lexicon) => lexicon.word_bytes(id),
            BatchWordsOf::Disk(words) => words.word_bytes(id),
        }
    }

    fn prefetch_word(&self, id: u32, near: bool) {
        match self {
            BatchWordsOf::Held(lexicon) => WordsById::prefetch_word(*lexicon, id, near),
            BatchWordsOf::Disk(words) => words.prefetch_word(id, near),
        }
    }
}

/// Loads the lexicon at `path` without its words: its counts, as runs of
/// equal counts; the words of `scope` go by ID to a [`DiskWords`] file at
/// `words`. Returns the lexicon and the file's bytes.
fn load_words_to_disk(path: &Path, scope: Scope, words: &Path) -> Result<(Lexicon, u64), PipelineError> {
    let mut out = DiskWordsWriter::create(words, 0)?;
    let mut failure = None;
    let lexicon = Lexicon::load_limited(path, scope, 0, &mut |_, word| {
        out.push(word).map_err(|e| {
            let message = e.to_string();
            failure = Some(e);
            std::io::Error::other(message)
        })
    });
    if let Some(e) = failure {
        return Err(e.into());
    }
    let lexicon = lexicon?;
    Ok((lexicon, out.finish()?.bytes()))
}

/// Removes the word streams; what is already gone needs no removing.
fn remove_streams(streams: &[WordsFile]) {
    for file in streams {
        file.remove();
    }
}

/// The bytes of standard input's copy, if the first pass made one.
fn spooled_bytes(first_inputs: &[Input]) -> u64 {
    match first_inputs.iter().find(|i| matches!(i, Input::Stdin { .. })) {
        Some(Input::Stdin { spool: Some(p) }) => std::fs::metadata(p).map_or(0, |m| m.len()),
        _ => 0,
    }
}

/// Records what the first reading of the corpus found.
fn record_read(read: &ReadStats, stats: &mut NgramStats) {
    stats.documents = read.documents;
    stats.input_bytes = read.input_bytes;
    stats.text_bytes = read.text_bytes;
    stats.replaced_utf8 = read.replaced_utf8;
    stats.skipped_records = read.skipped_records;
    if let Some(at) = &read.first_replaced_at {
        stats
            .warnings
            .push(format!("{} invalid UTF-8 sequences replaced by U+FFFD, the first at {at}", read.replaced_utf8));
    }
    if let Some(why) = &read.first_skipped {
        stats.warnings.push(format!("{} bad records skipped, the first at {why}", read.skipped_records));
    }
}

/// Halves `sieve` until `fits` says what must go beside it does (or drops
/// it when it is as small as a sieve gets, saying `why`): a smaller sieve
/// lets more unique n-grams through, none lets them all through.
pub(crate) fn shrink_sieve(
    sieve: &mut Option<Sieve>,
    stats: &mut SieveStats,
    fits: impl Fn(&Sieve) -> bool,
    why: &str,
) {
    while let Some(s) = sieve.as_mut() {
        if fits(s) {
            return;
        }
        if s.bytes() >= 2 * MIN_SIEVE_BYTES && s.halve() {
            stats.halvings += 1;
            record_size(Some(s), stats);
            continue;
        }
        *sieve = None;
        stats.used = false;
        stats.dropped = Some(why.into());
    }
}

/// Records the sieve's sizes, filling and filled (0 without one).
fn record_size(sieve: Option<&Sieve>, stats: &mut SieveStats) {
    stats.bytes = sieve.map_or(0, |s| s.bytes() as u64);
    stats.frozen_bytes = sieve.map_or(0, |s| s.frozen_bytes() as u64);
}

/// Records how full the sieve is, and drops it when it would let most n-grams through anyway.
fn settle_sieve(sieve: &SharedSieve, stats: &mut NgramStats) {
    let Ok(mut guard) = sieve.write() else { return };
    if let Some(s) = guard.as_ref() {
        record_size(Some(s), &mut stats.sieve);
        stats.sieve.saturation = s.saturation();
        if stats.sieve.saturation > 0.6 {
            stats.sieve.dropped = Some(format!("{:.0} % of its counters were full", stats.sieve.saturation * 100.0));
            *guard = None;
        }
    }
    stats.sieve.used = guard.is_some();
}

/// The fewest parts a sieve per part would take for a count to prove its
/// repeats once instead (see `repeat_prints`): measured on 100M tokens of
/// web-like text, three parts by disk took 25.8 s with a sieve per part and
/// 27.4 s over prints (the pass and its merge cost what about three fills do).
const MIN_SIEVE_PARTS_FOR_PRINTS: usize = 3;

/// Buffers of one run writer (block, frame, file buffer).
const WRITER_BYTES: u64 = 256 * 1024;
/// Buffers of the output thread and file, and a `.zst` output's encoder.
const OUTPUT_BYTES: u64 = (2 << 20) + dupgram_jobkit::output::ZSTD_OUTPUT_BYTES;
const MIN_CHUNK_NGRAMS: u64 = 4096;

/// Sieve bytes wanted per n-gram: 16 two-bit counters.
const SIEVE_BYTES_PER_NGRAM: u64 = 4;

/// The sieve shrinks no further than this; below it, it goes.
const MIN_SIEVE_BYTES: usize = 256 << 10;

/// What a count pass reads and how it cuts its runs.
#[derive(Clone, Copy)]
struct CountJob<'a> {
    inputs: &'a [Input],
    lexicon: &'a Lexicon,
    sieve: Option<&'a Sieve>,
    buckets: &'a [u32],
    layout: KeyLayout,
}

/// What the lexicon pass of a count leaves for the passes after it.
struct Tokenised {
    /// The repeated words' counts, none of the words held ([`Lexicon::held`] is 0).
    lexicon: Lexicon,
    /// The repeated words by ID, for the output (not made for an index).
    words: Option<PathBuf>,
    lexicon_file: tempfile::NamedTempFile,
    sieve: Option<Sieve>,
    /// The n-grams `sieve`, filled by the lexicon pass, lets through, when known.
    passing: Option<u64>,
    renumbering: Streamed,
    /// The word streams, one per worker.
    streams: Vec<WordsFile>,
    /// Each stream's documents, when asked for.
    documents: Vec<StreamDocs>,
}

/// The word streams of a corpus and what a count over them reads beside
/// them: the lexicon, the repeated words by ID (for the output) and what the
/// streams' IDs become. A count that renumbers the streams first puts the
/// renumbered ones in their place.
struct WordStreams<'a> {
    lexicon: &'a Lexicon,
    words: &'a Path,
    streams: &'a mut Vec<WordsFile>,
    renumbering: &'a mut Streamed,
}

/// What a count leaves of the word streams it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamsAfter {
    /// Removed, the last part giving each segment back as it reads it.
    Removed,
    /// Kept whole for another count (of another n).
    Kept,
}

/// Which n-grams one count over the word streams takes, through what sieve.
struct StreamPart<'a> {
    sieve: Option<&'a mut Sieve>,
    /// Filled (cleared) for this part first, then frozen (else filled by the lexicon pass, and frozen).
    fill: bool,
    /// The sieve is a table of marked repeat prints: it is asked with an n-gram's print.
    prints: Option<&'a PrintBuckets>,
    part: FirstWords,
    /// This part's number (from 1), and how many there are.
    label: (usize, usize),
    /// The streams' last reading: each segment goes once read.
    last: bool,
    /// Runs cut by bucket of first word IDs (see [`Passes::count_ngrams`]); none when empty.
    buckets: &'a [u32],
}

/// How a count's parts are planned: each with the sieve filled for it, or
/// over the repeat prints proven once (see [`crate::repeat_prints`]).
enum CountPlan {
    Sieve(PartPlan),
    Prints(BucketPlan),
}

impl CountPlan {
    /// The next part, how many parts are expected in all, and its buckets
    /// (of `buckets`) when it is counted over the repeat prints.
    fn next(
        &mut self,
        lexicon: &Lexicon,
        buckets: Option<&PrintBuckets>,
    ) -> Option<(FirstWords, usize, Option<std::ops::Range<usize>>)> {
        match self {
            CountPlan::Sieve(plan) => plan.next(lexicon).map(|(part, parts)| (part, parts, None)),
            CountPlan::Prints(plan) => {
                let (range, parts) = plan.next()?;
                Some((buckets?.first_words(range.clone()), parts, Some(range)))
            }
        }
    }

    fn counted(&mut self, run_bytes: u64) {
        match self {
            CountPlan::Sieve(plan) => plan.counted(run_bytes),
            CountPlan::Prints(plan) => plan.counted(run_bytes),
        }
    }
}

/// Totals of the count pass.
#[derive(Debug, Default)]
pub struct CountPassTotals {
    pub documents: u64,
    pub tokens: u64,
    /// Each run with its bucket.
    pub runs: Vec<(usize, RunFile)>,
    /// Entries in all runs.
    pub entries: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct CountTotals {
    tokens: u64,
    ngrams: u64,
}

/// A worker's chunk and where it goes when full.
struct ChunkSpill<'a, const L: usize> {
    chunk: Chunk<L>,
    dir: &'a Path,
    worker: usize,
    next: u32,
    header: RunHeader,
    /// First word ID of each bucket after the first.
    buckets: &'a [u32],
    runs: Vec<(usize, RunFile)>,
    bytes: u64,
    distinct: u64,
    sorted: u64,
}

impl<'a, const L: usize> ChunkSpill<'a, L> {
    /// Worker `worker`'s spill of `chunk` into runs in `dir`, one per bucket touched.
    fn new(chunk: Chunk<L>, dir: &'a Path, worker: usize, header: RunHeader, buckets: &'a [u32]) -> Self {
        ChunkSpill { chunk, dir, worker, next: 0, header, buckets, runs: Vec::new(), bytes: 0, distinct: 0, sorted: 0 }
    }

    /// Adds an n-gram; a full chunk is sorted and written as a run.
    #[inline]
    fn keep(&mut self, key: [u64; L]) -> Result<(), PipelineError> {
        self.sorted += 1;
        self.chunk.push(key);
        if self.chunk.is_full() { self.write() } else { Ok(()) }
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
        let counts = self.chunk.drain_sorted(|ids, count| -> Result<(), PipelineError> {
            let bucket = buckets.partition_point(|&start| start <= ids[0]);
            let path = |b: usize| dir.join(format!("run-b{b:04}-w{worker}-{chunk:06}.dgr"));
            Ok(runs.writer(bucket, path)?.push(ids, count)?)
        })?;
        let finished = runs.finish()?;
        self.distinct += counts.distinct;
        self.bytes += finished.iter().map(|(_, r)| r.bytes).sum::<u64>();
        self.runs.extend(finished);
        Ok(())
    }
}

struct CountWorker<'a, const L: usize> {
    scanner: Scanner<'a, L>,
    keep: KeepNgrams<'a, L>,
    n: u64,
    ngrams: u64,
}

/// The count pass's sink: n-grams the sieve lets through go into the chunk.
struct KeepNgrams<'a, const L: usize> {
    sieve: Option<&'a Sieve>,
    /// The sieve is a table of marked repeat prints, asked with an n-gram's print.
    prints: Option<&'a PrintBuckets>,
    /// Only these n-grams are counted (all but in a count by parts).
    range: KeyRange<L>,
    /// N-grams whose sieve counter is being prefetched.
    line: DelayLine<(Slot, [u64; L])>,
    spill: ChunkSpill<'a, L>,
    failure: Option<PipelineError>,
}

impl<const L: usize> ScanSink<L> for KeepNgrams<'_, L> {
    #[inline]
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, _start: u64) {
        if self.failure.is_some() || !self.range.contains(&key) {
            return;
        }
        let kept = match self.sieve {
            Some(s) => {
                let fingerprint = match self.prints {
                    Some(prints) => prints.print(&key, fingerprint),
                    None => fingerprint,
                };
                let slot = s.locate(fingerprint);
                s.prefetch(slot);
                match self.line.push((slot, key)) {
                    Some((ready, key)) if s.may_repeat_at(ready) => self.spill.keep(key),
                    _ => Ok(()),
                }
            }
            None => self.spill.keep(key),
        };
        if let Err(e) = kept {
            self.failure = Some(e);
        }
    }
}

impl<'a, const L: usize> KeepNgrams<'a, L> {
    fn new(sieve: Option<&'a Sieve>, range: KeyRange<L>, spill: ChunkSpill<'a, L>) -> Self {
        KeepNgrams { sieve, prints: None, range, line: DelayLine::default(), spill, failure: None }
    }

    /// Settles the n-grams still waiting for their sieve counter.
    fn flush_line(&mut self) -> Result<(), PipelineError> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        let Some(sieve) = self.sieve else { return Ok(()) };
        for (slot, key) in self.line.drain() {
            if sieve.may_repeat_at(slot) {
                self.spill.keep(key)?;
            }
        }
        Ok(())
    }
}

impl<'a, const L: usize> BatchWorker for CountWorker<'a, L> {
    type Output = (ChunkSpill<'a, L>, CountTotals);

    fn batch(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        for piece in &batch.pieces {
            if let Some(tokens) = self.scanner.piece(batch.piece_text(piece), piece.last, &mut self.keep) {
                self.ngrams += tokens.saturating_sub(self.n - 1);
            }
        }
        self.keep.flush_line()
    }

    fn finish(mut self) -> Result<(ChunkSpill<'a, L>, CountTotals), PipelineError> {
        self.keep.flush_line()?;
        self.keep.spill.write()?;
        Ok((self.keep.spill, CountTotals { tokens: self.scanner.tokens(), ngrams: self.ngrams }))
    }
}

/// Where the n-grams of a job go: called for each, in order, on the output thread.
pub type Emit<'a> = dyn FnMut(&dyn WordsById, &[u32], u64) -> Result<(), PipelineError> + Send + 'a;

/// N-grams handed from the merge to the output thread in one go.
#[derive(Default)]
struct DupBatch {
    ids: Vec<u32>,
    counts: Vec<u64>,
}

/// Entries per [`DupBatch`].
const DUP_BATCH: usize = 2048;

/// The last merge's sink: counts duplicates, passes on those frequent enough.
struct DupFilter {
    min_count: u64,
    batch: DupBatch,
    full: Sender<DupBatch>,
    free: Receiver<DupBatch>,
    types: u64,
    occurrences: u64,
    written: u64,
}

impl DupFilter {
    fn flush(&mut self) -> Result<(), PipelineError> {
        if self.batch.counts.is_empty() {
            return Ok(());
        }
        let next = self.free.recv().map_err(|_| PipelineError::Interrupted)?;
        let full = std::mem::replace(&mut self.batch, next);
        self.full.send(full).map_err(|_| PipelineError::Interrupted)
    }
}

impl MergeSink for DupFilter {
    type Error = PipelineError;

    #[inline]
    fn accept(&mut self, ngram: &[u32], count: u64, _: &[u64]) -> Result<(), PipelineError> {
        if count >= 2 {
            self.types += 1;
            self.occurrences += count;
        }
        if count >= self.min_count {
            self.written += 1;
            self.batch.ids.extend_from_slice(ngram);
            self.batch.counts.push(count);
            if self.batch.counts.len() == DUP_BATCH {
                self.flush()?;
            }
        }
        Ok(())
    }
}
