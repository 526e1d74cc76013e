//! `dupgram update --pairs`: each pair of a new and an older document that
//! share an n-gram, scored as `dupgram pairs` scores it.
//!
//! The walk of a postings state writes, per bucket, every n-gram that older
//! and new text share with all its occurrences (old and new). That is all
//! the scores need: a pair's shared n-grams are among them, and so are the
//! positions that cover each side; `|S_X|` comes from the per-document
//! totals the state keeps. The occurrences are gathered per document in
//! memory (within a quarter of `--memory`, or the update stops with a
//! message), the candidate pairs — an older and a new document sharing an
//! n-gram held by at most `max_df` documents — sorted, and each scored with
//! `dupgram_index::score`, the scorer of `dupgram pairs`.

use std::collections::HashMap;
use std::path::PathBuf;

use dupgram_index::{DocStats, Occurrence, ScoreScratch, score};
use dupgram_pipeline::{Control, DocTable, IndexTotals, PairsConfig, PairsSink, PipelineError};
use dupgram_runs::RunReader;

use crate::ClusterError;
use crate::update::SharedRoom;

/// The documents of the grown corpus.
pub(crate) struct ScoredCorpus<'a> {
    pub table: &'a DocTable,
    /// Each document's totals over every n-gram of it.
    pub totals: &'a IndexTotals,
    /// Documents from this number on are the new ones.
    pub first_new: u32,
    pub n: u32,
}

/// Bytes counted per occurrence gathered, per document holding one, per candidate.
const OCCURRENCE_BYTES: u64 = std::mem::size_of::<Occurrence>() as u64;
const DOCUMENT_BYTES: u64 = 64;
const CANDIDATE_BYTES: u64 = 8;

/// Scores the pairs from the shared n-grams' runs (`shared`, in bucket
/// order); kept ones go to `sink` in document order (older, then new).
/// Returns the candidates and the pairs kept.
pub(crate) fn score_pairs(
    shared: &[PathBuf],
    corpus: &ScoredCorpus,
    options: &PairsConfig,
    room: &SharedRoom,
    sink: &mut dyn PairsSink,
    control: &Control,
) -> Result<(u64, u64), ClusterError> {
    let mut lists: HashMap<u32, Vec<Occurrence>> = HashMap::new();
    let mut candidates: Vec<(u32, u32)> = Vec::new();
    let mut docs: Vec<u32> = Vec::new();
    // Numbers go on across buckets, so they stay increasing and every list sorted.
    let mut ngram = 0u32;
    for path in shared {
        let mut reader = RunReader::open(path)?;
        while reader.advance()? {
            if control.interrupted() {
                return Err(PipelineError::Interrupted.into());
            }
            let occurrences = reader.occurrences();
            room.take(occurrences.len() as u64 * OCCURRENCE_BYTES)?;
            for &o in occurrences {
                let list = match lists.entry((o >> 32) as u32) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        room.take(DOCUMENT_BYTES)?;
                        e.insert(Vec::new())
                    }
                };
                list.push(Occurrence { ngram, pos: o as u32 });
            }
            // Occurrences come by document: each document once, in order.
            docs.clear();
            docs.extend(occurrences.iter().map(|&o| (o >> 32) as u32));
            docs.dedup();
            if docs.len() as u64 <= options.max_df {
                let split = docs.partition_point(|&d| d < corpus.first_new);
                let (old, new) = docs.split_at(split);
                room.take((old.len() * new.len()) as u64 * CANDIDATE_BYTES)?;
                candidates.extend(old.iter().flat_map(|&o| new.iter().map(move |&n| (o, n))));
            }
            ngram += 1;
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let stats = |doc: u32| {
        let tokens = corpus.table.tokens[doc as usize];
        DocStats { tokens, distinct: corpus.totals.distinct(doc as usize, tokens, corpus.n), ..DocStats::default() }
    };
    let (mut scratch, mut kept) = (ScoreScratch::default(), 0);
    for &(old, new) in &candidates {
        let counts = score(&lists[&old], &lists[&new], corpus.n, &mut scratch);
        let scores = counts.scores(stats(old), stats(new));
        if options.keeps(&scores) {
            kept += 1;
            sink.pair(corpus.table.id(old), corpus.table.id(new), &scores)?;
        }
    }
    Ok((candidates.len() as u64, kept))
}
