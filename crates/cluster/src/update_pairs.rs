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
//! n-gram held by at most `max_df` groups of identical documents — sorted,
//! and each scored with `dupgram_index::score`, the scorer of `dupgram pairs`.
//!
//! Identical documents are grouped as `dupgram pairs` groups them over the
//! whole corpus (equal hashes, checked by the walk against every n-gram),
//! so the rows are exactly those of `dupgram pairs` over everything so far
//! whose first document is older and second new: a copy is paired only
//! through its group's first document, whose pairs with its copies are
//! listed as `--max-group-pairs` allows; with `expand_groups`, as
//! `dupgram pairs --expand-groups` lists them (every copy, and every pair of
//! an older and a new copy of one text, capped groups excepted).

use std::collections::HashMap;
use std::path::PathBuf;

use dupgram_index::{DocStats, Occurrence, PairCounts, ScoreScratch, score};
use dupgram_pipeline::{Control, DocPastTable, DocTable, Groups, IndexTotals, PairsConfig, PairsSink, PipelineError};
use dupgram_runs::RunReader;

use crate::error::ClusterError;
use crate::room::SharedRoom;

/// The documents of the grown corpus.
pub(crate) struct ScoredCorpus {
    pub table: DocTable,
    /// Each document's totals over every n-gram of it.
    pub totals: IndexTotals,
    /// Documents from this number on are the new ones.
    pub first_new: u32,
    pub n: u32,
    /// Each document's group of identical documents, as its first (itself when alone).
    pub rep_of: Vec<u32>,
}

/// Bytes counted per occurrence gathered, per document holding one, per candidate.
const OCCURRENCE_BYTES: u64 = std::mem::size_of::<Occurrence>() as u64;
const DOCUMENT_BYTES: u64 = 64;
const CANDIDATE_BYTES: u64 = 8;

/// Scores the pairs from the shared n-grams' runs (`shared`, in bucket
/// order); kept ones go to `sink` in document order (older, then new).
/// Returns the candidates and the pairs written.
pub(crate) fn score_pairs(
    shared: &[PathBuf],
    corpus: &ScoredCorpus,
    options: &PairsConfig,
    room: &SharedRoom,
    sink: &mut dyn PairsSink,
    control: &Control,
) -> Result<(u64, u64), ClusterError> {
    let rep_of = &corpus.rep_of;
    let groups = Groups::new(rep_of);
    room.take(groups.iter().map(|g| g.len() as u64 + 1).sum::<u64>() * 4)?;
    let expansion = options.expansion();
    // Whether a document is paired: a group's first, or a copy in an expanded group.
    let paired = |doc: u32| {
        let rep = rep_of[doc as usize];
        rep == doc || expansion.copies(&groups, rep).is_some()
    };
    let mut lists: HashMap<u32, Vec<Occurrence>> = HashMap::new();
    let mut candidates: Vec<(u32, u32)> = Vec::new();
    let (mut docs, mut reps, mut old, mut new) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Numbers go on across buckets, so they stay increasing and every list sorted.
    let mut ngram = 0u32;
    for path in shared {
        let mut reader = RunReader::open(path)?;
        while reader.advance()? {
            if control.interrupted() {
                return Err(PipelineError::Interrupted.into());
            }
            let occurrences = reader.occurrences();
            // Every document number below indexes the corpus's arrays.
            let corpus_docs = rep_of.len() as u64;
            if let Some(doc) = occurrences.iter().map(|&o| o >> 32).find(|&d| d >= corpus_docs) {
                let past = DocPastTable { doc, first_doc: 0, docs: corpus_docs };
                return Err(past.in_file(&path.display().to_string()).into());
            }
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
            // As `dupgram pairs` counts them: a group of identical documents once.
            reps.clear();
            reps.extend(docs.iter().map(|&d| rep_of[d as usize]));
            reps.sort_unstable();
            reps.dedup();
            if reps.len() as u64 <= options.max_df {
                let split = docs.partition_point(|&d| d < corpus.first_new);
                old.clear();
                old.extend(docs[..split].iter().copied().filter(|&d| paired(d)));
                new.clear();
                new.extend(docs[split..].iter().copied().filter(|&d| paired(d)));
                // Copies of one text are listed as a group's pairs, below.
                let before = candidates.len();
                for &o in &old {
                    let group = rep_of[o as usize];
                    candidates.extend(new.iter().filter(|&&n| rep_of[n as usize] != group).map(|&n| (o, n)));
                }
                room.take((candidates.len() - before) as u64 * CANDIDATE_BYTES)?;
            }
            ngram += 1;
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let copies = group_pairs(&groups, corpus.first_new, options, room)?;
    let stats = |doc: u32| {
        let tokens = corpus.table.tokens[doc as usize];
        DocStats { tokens, distinct: corpus.totals.distinct(doc as usize, tokens, corpus.n), ..DocStats::default() }
    };
    let (mut scratch, mut kept) = (ScoreScratch::default(), 0);
    // Both lists are sorted and have no pair in common: merged, the rows come in document order.
    let (mut scored, mut copied) = (candidates.iter().peekable(), copies.iter().peekable());
    loop {
        let (pair, identical) = match (scored.peek(), copied.peek()) {
            (Some(&&s), Some(&&c)) if c < s => (copied.next().copied(), true),
            (Some(_), _) => (scored.next().copied(), false),
            (None, Some(_)) => (copied.next().copied(), true),
            (None, None) => break,
        };
        let Some((old, new)) = pair else { break };
        let scores = if identical {
            // Every n-gram shared, every token covered: 1 on every measure, as `dupgram pairs` writes it.
            let (tokens, distinct) = (stats(old).tokens, stats(old).distinct);
            PairCounts { shared: distinct, covered_a: tokens, covered_b: tokens }.scores(stats(old), stats(new))
        } else {
            let counts = score(&lists[&old], &lists[&new], corpus.n, &mut scratch);
            let scores = counts.scores(stats(old), stats(new));
            if !options.keeps(&scores) {
                continue;
            }
            scores
        };
        kept += 1;
        sink.pair(&corpus.table.id(old)?, &corpus.table.id(new)?, &scores)?;
    }
    Ok((candidates.len() as u64, kept))
}

/// The pairs of an older and a new document of one group of identical
/// documents that `dupgram pairs` lists: its first's with the next
/// `max_group_pairs` members, or with `expand_groups` (and the group not
/// capped) every pair; sorted.
fn group_pairs(
    groups: &Groups,
    first_new: u32,
    options: &PairsConfig,
    room: &SharedRoom,
) -> Result<Vec<(u32, u32)>, ClusterError> {
    let expansion = options.expansion();
    let mut pairs = Vec::new();
    // A group's first is its lowest-numbered document: a group with an older and a new member has an older first.
    for group in groups.iter().filter(|g| g[0] < first_new && g[g.len() - 1] >= first_new) {
        let split = group.partition_point(|&d| d < first_new);
        let before = pairs.len();
        if expansion.copies(groups, group[0]).is_some() {
            pairs.extend(group[..split].iter().flat_map(|&o| group[split..].iter().map(move |&n| (o, n))));
        } else {
            let listed = group.iter().skip(1).take(options.max_group_pairs as usize);
            pairs.extend(listed.filter(|&&n| n >= first_new).map(|&n| (group[0], n)));
        }
        room.take((pairs.len() - before) as u64 * CANDIDATE_BYTES)?;
    }
    pairs.sort_unstable();
    Ok(pairs)
}
