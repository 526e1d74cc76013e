//! The dupgram jobs, wired from the stage crates.
//!
//! `count_ngrams` is the out-of-core duplicate n-gram count of Pomikálek &
//! Rychlý (section 4), with one addition, the sieve:
//!
//! 1. **lexicon pass** — read the corpus, count every word (`dupgram-lexicon`),
//!    write each worker's tokens as a word-ID stream (`words`) and drop a
//!    fingerprint of every n-gram into the sieve (`dupgram-sieve`); number
//!    the words by frequency and save the lexicon;
//! 2. **sieve pass** — fill the sieve from the word streams instead, when the
//!    lexicon pass could not: with `--stop-top` (whose stop words are known
//!    only at its end), or when the corpus is too large for one sieve, and
//!    then once per part of a count in parts by first word (`first_words`);
//!    or, for a count that would need three sieves or more, the repeats
//!    proven once from sorted print runs and marked part by part
//!    (`repeat_prints`);
//! 3. **count pass** — read the word streams, keep the n-grams (of the part)
//!    the sieve lets through in fixed-memory chunks (`dupgram-chunker`), sort
//!    them and spill each chunk as a run (`dupgram-runs`);
//! 4. **merge** — k-way merge of all runs (`dupgram-merge`), in several
//!    passes if memory limits the fan-in; n-grams with a count ≥ `min_count`
//!    go to the caller. Parts are merged one after the other, in output order.
//!
//! Each pass has one reader thread and `threads` workers (see
//! `dupgram_jobkit::feed`). The result does not depend on the thread count
//! or the memory budget: those only change how the corpus is cut into runs,
//! and merging sums counts.
//!
//! The jobs are a module each, over the bottom floor of `dupgram-jobkit`
//! (control, errors, the memory plan, outputs, document streams): `ngrams`
//! (the lexicon pass and the count, with `words`, `scan`, `stream_walk`,
//! `first_words` and `repeat_prints` for the passes over the word streams), `index` (the
//! duplicate-only index, over the same passes), `pairs`, `spot` and `parts`
//! (document pairs), `dedup`, `exact_only` and `span` (decisions), `overlap`
//! (one corpus measured against another).

mod dedup;
mod doc_ids;
mod exact_only;
mod first_words;
mod index;
mod ngrams;
mod occurrence_file;
mod overlap;
mod pairs;
mod parts;
mod repeat_prints;
mod scan;
mod shard_docs;
mod span;
mod spot;
mod stream_walk;
mod words;

pub use dedup::{DedupConfig, DedupOutput, DedupStats, dedup, dedup_to};
pub use doc_ids::{DocIds, IdsOnDisk};
pub use dupgram_dedup::{LengthRow, LengthTable, UnitKind};
pub use dupgram_index::PairScores;
pub use dupgram_jobkit::control::{Control, Progress};
pub use dupgram_jobkit::error::PipelineError;
pub use dupgram_jobkit::groups::{Expansion, Groups};
pub use dupgram_jobkit::memory::{
    MemoryPlan, ZstdNeed, cpu_seconds, human_bytes, page_in_code_as_it_runs, parse_bytes, peak_rss, tune_allocator,
};
pub use dupgram_jobkit::output::PairsSink;
pub use dupgram_jobkit::{attributes, memory, output, scratch, table};
pub use dupgram_merge::RunFile;
pub use dupgram_sieve::Sieve;
pub use dupgram_spotsigs::SpotParams;
pub use exact_only::{dedup_exact, dedup_exact_to, dedup_exact_with};
pub use index::{
    AfterCut, DocPastTable, DocTable, DupsInput, GroupCheck, IdRange, IndexPart, IndexStats, IndexTotals, ShardCut,
    exact_groups, index_fraction, run_names,
};
pub use ngrams::{
    CountPassTotals, DEFAULT_TMP_SHARE, Emit, Limits, NgramConfig, NgramOutcome, NgramStats, Passes,
    SHARED_LEXICON_FROM, ShardStreams, WordSource, count_ngrams, count_ngrams_each,
};
pub use overlap::{OverlapConfig, OverlapFormat, OverlapOutput, OverlapSeconds, OverlapStats, overlap};
pub use pairs::{
    BoundDoc, CandidateSkips, Candidates, DocBounds, LengthFilter, NAMED_CAPPED, PairPasses, PairsConfig, PairsStats,
    ScoreLayout, find_pairs,
};
pub use parts::{BucketTotals, add_common, write_common};
pub use shard_docs::ShardDocuments;
pub use span::{MAX_MIN_SPAN, dedup_spans, dedup_spans_to};
pub use spot::{SpotConfig, SpotStats, find_spot_pairs};
