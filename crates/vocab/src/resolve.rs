//! Numbering a vocabulary part of which lives in overflow logs, and telling
//! each stream what its overflow tokens became.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use dupgram_lexicon::{LexiconBuilder, Normalization, Numbering, RankedWord, Renumbering, TableWord, order_prefix};
use dupgram_merge::{Interrupt, MergeReport, MergeSink, RunFile, merge_all};

use crate::error::VocabError;
use crate::overflow::{OverflowRuns, PLACE_BITS, occurrence, occurrence_header};
use crate::records::{MergedWords, SortedWords, WordSort};
use crate::side::{SideFile, SideWriter};

/// Where and in how much memory the vocabulary is numbered.
pub struct VocabularyPlan<'a> {
    /// Where the sorts spill (the job's work directory).
    pub dir: &'a Path,
    /// Bytes the sorts may hold, beside the table and its ranking.
    pub memory: u64,
    /// Asked between records; shared with the threads that write side files.
    pub stop: &'a (dyn Interrupt + Sync),
    /// Threads the job may use: with more than one, a sort of the numbering
    /// writes its full buffers on a helper thread ([`WordSort::in_background`]).
    pub threads: usize,
}

impl VocabularyPlan<'_> {
    /// A sort of the numbering named `name`, in `limit` bytes.
    pub(crate) fn sort(&self, name: &str, limit: u64) -> WordSort {
        let sort = WordSort::new(self.dir, name, limit as usize);
        if self.threads > 1 { sort.in_background() } else { sort }
    }
}

/// What numbering produced.
pub struct Numbered<W> {
    pub out: W,
    /// The lexicon file's identity.
    pub identity: u64,
    /// What each first-seen ID of the table became.
    pub renumbering: Renumbering,
    /// Each stream's side file (by stream number), `None` for a stream without overflow tokens.
    pub sides: Vec<Option<SideFile>>,
    /// Words in the lexicon file (stop words aside).
    pub words: u64,
    /// Distinct words met only after the table was frozen.
    pub overflow_words: u64,
    pub overflow_tokens: u64,
    /// Slots the overflow's epochs gave those tokens' words (see [`crate::OverflowLog`]).
    pub overflow_slots: u64,
    /// Bytes the overflow's runs and side files took on disk.
    pub spilled: u64,
}

impl<W> Numbered<W> {
    /// The lexicon file's writer, and the rest with `out` in its place.
    pub fn take_out<V>(self, out: V) -> (W, Numbered<V>) {
        let rest = Numbered {
            out,
            identity: self.identity,
            renumbering: self.renumbering,
            sides: self.sides,
            words: self.words,
            overflow_words: self.overflow_words,
            overflow_tokens: self.overflow_tokens,
            overflow_slots: self.overflow_slots,
            spilled: self.spilled,
        };
        (self.out, rest)
    }
}

/// The tag bit of an overflow word handed to [`Numbering`] (below it: its index in fingerprint order).
pub(crate) const OVERFLOW_TAG: u64 = 1 << 63;

/// Numbers the words of `table` and of the `overflow` logs (one per stream)
/// together, as one builder holding them all would, and writes the lexicon
/// file to `out`. See the crate documentation for the steps.
pub fn number_vocabulary<W: Write>(
    table: &LexiconBuilder,
    overflow: Vec<OverflowRuns>,
    (norm, stop_top): (Normalization, usize),
    out: W,
    plan: &VocabularyPlan<'_>,
) -> Result<Numbered<W>, VocabError> {
    let streams = overflow.iter().map(|o| o.stream + 1).max().unwrap_or(0);
    let overflow_tokens: u64 = overflow.iter().map(|o| o.tokens).sum();
    let overflow_slots: u64 = overflow.iter().map(|o| o.slots).sum();
    let epoch_slots = overflow.iter().map(|o| o.epoch_slots).max().unwrap_or(0);
    let mut spilled: u64 = overflow.iter().map(|o| o.spilled).sum();
    let (ranked, listed) = table.ranking();
    let ranking_bytes = (ranked.capacity() * std::mem::size_of::<TableWord<'_>>()) as u64;
    // Each step holds the readers of one sorted stream and the buffer of the next sort: half each.
    let room = plan.memory.saturating_sub(ranking_bytes + table.first_seen_len() as u64 * 12);
    let half = room / 2;
    let mut renumbering = Renumbering::for_table(table.first_seen_len());
    let numbering = |candidates: u64| Numbering { norm, listed: &listed, stop_top, candidates };

    let mut words_runs = Vec::new();
    let mut occurrence_runs = Vec::new();
    for o in overflow {
        occurrence_runs.extend(o.occurrences);
        words_runs.extend(o.words);
    }
    if words_runs.is_empty() {
        let total = ranked.len() as u64;
        let words = ranked.into_iter().map(|w| Ok::<_, VocabError>(w.ranked()));
        let (out, identity) = numbering(total).write(out, words, |w, code| {
            renumbering.assign(w.tag as u32, code, w.hash);
            Ok::<_, VocabError>(())
        })?;
        let words = numbered_words(total, stop_top);
        return Ok(Numbered {
            out,
            identity,
            renumbering,
            sides: vec![None; streams],
            words,
            overflow_words: 0,
            overflow_tokens,
            overflow_slots,
            spilled,
        });
    }

    // 1 and 2: every word numbered in rank order; the overflow's codes by index.
    let mut codes = plan.sort("overflow-codes", half);
    let ranked_numbering = RankedNumbering { norm, listed: &listed, stop_top, half, plan };
    let numbered = ranked_numbering.number(ranked, words_runs, out, |w, code| {
        if w.tag & OVERFLOW_TAG == 0 {
            renumbering.assign(w.tag as u32, code, w.hash);
            Ok(())
        } else {
            codes.push(u128::from(w.tag & !OVERFLOW_TAG), &[], u64::from(code))
        }
    })?;
    let RankedOut { out, identity, candidates, overflow_words, spilled: ranked_spill } = numbered;
    let codes = codes.finish()?;
    spilled += ranked_spill + codes.run_bytes();

    // 3. Each slot of each stream's epochs, by its word's fingerprint, gets its word's code.
    let mut by_place = CodesByPlace::new(plan, "overflow-places", streams, half);
    {
        let mut codes = codes.open(half / 2, plan.stop)?;
        let mut join = Join { codes: &mut codes, by_place: &mut by_place, word: None, index: 0, code: 0 };
        let report = merge_occurrences(occurrence_runs, &mut join, "overflow-tokens", half / 2, plan)?;
        spilled += report.bytes_written;
        if join.index != overflow_words || join.codes.next_record()?.is_some() {
            return Err(VocabError::Inconsistent(format!(
                "the overflow's tokens name {} words, its word lists {overflow_words}",
                join.index
            )));
        }
    }
    // 4. The codes in each stream's order: its side file.
    let (sides, sorted) = by_place.write_side_files(room, epoch_slots, plan)?;
    spilled += sorted + sides.iter().flatten().map(|s| s.bytes).sum::<u64>();
    Ok(Numbered {
        out,
        identity,
        renumbering,
        sides,
        words: numbered_words(candidates, stop_top),
        overflow_words,
        overflow_tokens,
        overflow_slots,
        spilled,
    })
}

/// Merges occurrence runs (by fingerprint, then place) into `sink`, with
/// as many readers at once as `memory` holds; intermediate merges are
/// `{name}-merged-NNNNNN.dgr` in `plan.dir`.
pub(crate) fn merge_occurrences<S: MergeSink<Error = VocabError>>(
    runs: Vec<RunFile>,
    sink: &mut S,
    name: &str,
    memory: u64,
    plan: &VocabularyPlan<'_>,
) -> Result<MergeReport, VocabError> {
    let fan_in = ((memory / OCCURRENCE_READER_BYTES) as usize).max(2);
    let mut made = 0u64;
    let new_run = || {
        made += 1;
        plan.dir.join(format!("{name}-merged-{made:06}.dgr"))
    };
    Ok(merge_all(runs, occurrence_header(), fan_in, new_run, sink, plan.stop)?)
}

/// The codes of overflow tokens gathered by place, a sort per stream, so
/// that step 4 writes each stream's side file on a thread of its own.
pub(crate) struct CodesByPlace {
    sorts: Vec<WordSort>,
}

impl CodesByPlace {
    /// Sorts named `{name}-sN` for `streams` streams, in `memory` bytes together.
    pub fn new(plan: &VocabularyPlan<'_>, name: &str, streams: usize, memory: u64) -> Self {
        let share = memory / streams.max(1) as u64;
        let sorts = (0..streams).map(|s| plan.sort(&format!("{name}-s{s}"), share)).collect();
        CodesByPlace { sorts }
    }

    /// Files the code of the overflow token at `place` (its stream, then its
    /// number there), with its word's hash.
    pub fn push(&mut self, place: u64, hash: u64, code: u64) -> Result<(), VocabError> {
        let stream = (place >> PLACE_BITS) as usize;
        let streams = self.sorts.len();
        let Some(sort) = self.sorts.get_mut(stream) else {
            return Err(VocabError::Inconsistent(format!("an overflow token of stream {stream} of {streams}")));
        };
        sort.push(u128::from(place), &hash.to_le_bytes(), code)
    }

    /// Step 4: the codes in each stream's order, as its side file in
    /// `plan.dir` (none for a stream without one); the streams are written
    /// `plan.threads` at a time, sharing `memory` for their readers.
    /// Returns the side files and the bytes the sorts spilled.
    pub fn write_side_files(
        self,
        memory: u64,
        epoch_slots: u32,
        plan: &VocabularyPlan<'_>,
    ) -> Result<(Vec<Option<SideFile>>, u64), VocabError> {
        let mut sorted = Vec::with_capacity(self.sorts.len());
        for sort in self.sorts {
            sorted.push(sort.finish()?);
        }
        let spilled = sorted.iter().map(SortedWords::run_bytes).sum();
        let at_once = plan.threads.clamp(1, sorted.len().max(1));
        let share = memory / at_once as u64;
        let mut sides = Vec::with_capacity(sorted.len());
        if at_once == 1 {
            // One thread: no other is started. A finished thread's stack and
            // allocator arena can stay resident, which the smallest budgets lack.
            for (stream, codes) in sorted.into_iter().enumerate() {
                sides.push(write_side_file((stream, epoch_slots), codes, share, plan)?);
            }
            return Ok((sides, spilled));
        }
        let mut streams = sorted.into_iter().enumerate().peekable();
        while streams.peek().is_some() {
            let group: Vec<(usize, SortedWords)> = streams.by_ref().take(at_once).collect();
            let written: Vec<Result<Option<SideFile>, VocabError>> = std::thread::scope(|scope| {
                let writers: Vec<_> = group
                    .into_iter()
                    .map(|(stream, codes)| {
                        scope.spawn(move || write_side_file((stream, epoch_slots), codes, share, plan))
                    })
                    .collect();
                writers.into_iter().map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
            });
            for side in written {
                sides.push(side?);
            }
        }
        Ok((sides, spilled))
    }
}

/// One stream's side file from its codes in place order, if it has any
/// (its epochs have at most `epoch_slots` slots).
fn write_side_file(
    (stream, epoch_slots): (usize, u32),
    codes: SortedWords,
    memory: u64,
    plan: &VocabularyPlan<'_>,
) -> Result<Option<SideFile>, VocabError> {
    let mut codes = codes.open(memory, plan.stop)?;
    let mut writer: Option<SideWriter> = None;
    while let Some(r) = codes.next_record()? {
        if (r.major >> PLACE_BITS) as usize != stream {
            return Err(VocabError::Inconsistent(format!("an overflow token of another stream in stream {stream}'s")));
        }
        let k = (r.major as u64) & ((1 << PLACE_BITS) - 1);
        if epoch_slots == 0 {
            return Err(VocabError::Inconsistent(format!("stream {stream} has slots but no epoch size")));
        }
        let hash = u64::from_le_bytes(
            r.bytes.try_into().map_err(|_| VocabError::Inconsistent("a token's hash is not 8 bytes".into()))?,
        );
        let code = u32::try_from(r.payload).map_err(|_| VocabError::Inconsistent("a code beyond 32 bits".into()))?;
        if writer.is_none() {
            writer = Some(SideWriter::create(&plan.dir.join(format!("overflow-side-s{stream}.dgs")))?);
        }
        writer.as_mut().expect("opened above").push(k, code, hash)?;
    }
    writer.map(|w| w.finish(epoch_slots)).transpose()
}

/// Bytes a reader of an occurrence run holds (a block and its decoding).
const OCCURRENCE_READER_BYTES: u64 = 160 << 10;

pub(crate) fn numbered_words(candidates: u64, stop_top: usize) -> u64 {
    candidates - candidates.min(stop_top as u64)
}

/// Steps 1 and 2 of the numbering (see the crate documentation): the words
/// of sorted runs by fingerprint, counts added up, sorted again by rank and
/// merged with a table's words in rank order, numbered as [`Numbering`]
/// numbers them, the lexicon file written as they come.
pub(crate) struct RankedNumbering<'a> {
    pub norm: Normalization,
    pub listed: &'a [String],
    pub stop_top: usize,
    /// Bytes a step's sort buffer, and the next step's readers, may take.
    pub half: u64,
    pub plan: &'a VocabularyPlan<'a>,
}

/// What [`RankedNumbering::number`] leaves.
pub(crate) struct RankedOut<W> {
    pub out: W,
    pub identity: u64,
    /// Words numbered, stop words by rank included.
    pub candidates: u64,
    /// Distinct words of the runs.
    pub overflow_words: u64,
    /// Bytes the rank sort spilled.
    pub spilled: u64,
}

impl RankedNumbering<'_> {
    /// Numbers `table` (ranked) and the words of `runs` together, writing
    /// the lexicon file to `out`; `assign` learns what each word became (a
    /// word of the runs is tagged [`OVERFLOW_TAG`] and its index in
    /// fingerprint order). Two different words under one fingerprint stop it.
    pub fn number<'t, W: Write>(
        &self,
        table: Vec<TableWord<'t>>,
        runs: Vec<SortedWords>,
        out: W,
        mut assign: impl FnMut(&RankedWord<'t>, u32) -> Result<(), VocabError>,
    ) -> Result<RankedOut<W>, VocabError> {
        // 1. The runs' words, fingerprint by fingerprint, into rank order.
        let mut by_rank = self.plan.sort("overflow-rank", self.half);
        let mut merged = SortedWords::concat(runs, self.plan.dir, "overflow-words")?.open(self.half, self.plan.stop)?;
        let mut last: Option<(u128, Vec<u8>)> = None;
        let mut overflow_words = 0u64;
        while let Some(w) = merged.next_combined()? {
            if let Some((fp, bytes)) = &last
                && *fp == w.major
            {
                return Err(VocabError::Collision {
                    a: String::from_utf8_lossy(bytes).into_owned(),
                    b: String::from_utf8_lossy(w.bytes).into_owned(),
                });
            }
            by_rank.push(rank_major(w.payload), w.bytes, overflow_words)?;
            overflow_words += 1;
            last = Some((w.major, w.bytes.to_vec()));
            if overflow_words.is_multiple_of(65536) && self.plan.stop.interrupted() {
                return Err(VocabError::Interrupted);
            }
        }
        drop(merged);
        let by_rank = by_rank.finish()?;
        let spilled = by_rank.run_bytes();

        // 2. The table's words and the runs', merged in rank order, numbered.
        let candidates = table.len() as u64 + overflow_words;
        let mut by_rank = by_rank.open(self.half, self.plan.stop)?;
        let words =
            RankMerge { table: table.into_iter().peekable(), overflow: &mut by_rank, next: None, started: false };
        let numbering = Numbering { norm: self.norm, listed: self.listed, stop_top: self.stop_top, candidates };
        let (out, identity) = numbering.write(out, words, |w, code| assign(w, code))?;
        Ok(RankedOut { out, identity, candidates, overflow_words, spilled })
    }
}

/// The major of a word's rank record: decreasing count first (then bytes).
fn rank_major(count: u64) -> u128 {
    u128::from(u64::MAX - count)
}

/// The table's words and the overflow's, in rank order: the two are
/// disjoint (a word is in the table from its first occurrence or never).
struct RankMerge<'a, 't> {
    table: std::iter::Peekable<std::vec::IntoIter<TableWord<'t>>>,
    overflow: &'a mut MergedWords,
    /// The overflow's next word: its bytes, count and index.
    next: Option<(Vec<u8>, u64, u64)>,
    started: bool,
}

impl<'t> Iterator for RankMerge<'_, 't> {
    type Item = Result<RankedWord<'t>, VocabError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            if let Err(e) = self.pull() {
                return Some(Err(e));
            }
        }
        let take_table = match (self.table.peek(), &self.next) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(t), Some((bytes, count, _))) => t.rank_cmp(*count, order_prefix(bytes), bytes).is_lt(),
        };
        if take_table {
            return self.table.next().map(|t| Ok(t.ranked()));
        }
        let (bytes, count, index) = self.next.take().expect("checked above");
        if let Err(e) = self.pull() {
            return Some(Err(e));
        }
        Some(Ok(RankedWord { bytes: Cow::Owned(bytes), count, tag: OVERFLOW_TAG | index, hash: 0 }))
    }
}

impl RankMerge<'_, '_> {
    fn pull(&mut self) -> Result<(), VocabError> {
        self.next = self.overflow.next_record()?.map(|r| (r.bytes.to_vec(), u64::MAX - r.major as u64, r.payload));
        Ok(())
    }
}

/// Walks the merged occurrences (by fingerprint, then place) beside the
/// words' codes (by index, which is fingerprint order), and files each
/// token under its place with its word's code. Words seen once are left
/// out: a token not filed breaks the window.
struct Join<'a> {
    codes: &'a mut MergedWords,
    by_place: &'a mut CodesByPlace,
    /// The fingerprint of the word being walked.
    word: Option<u128>,
    /// Words walked so far.
    index: u64,
    code: u32,
}

impl MergeSink for Join<'_> {
    type Error = VocabError;

    fn accept(&mut self, key: &[u32], count: u64, _: &[u64]) -> Result<(), VocabError> {
        let (word, place) = occurrence(key, count)?;
        if self.word != Some(word) {
            if self.word.is_some_and(|w| w > word) {
                return Err(VocabError::Inconsistent("overflow tokens out of order".into()));
            }
            let next = self.codes.next_record()?;
            let Some(r) = next.filter(|r| r.major == u128::from(self.index)) else {
                return Err(VocabError::Inconsistent(format!("overflow token of word {} has no code", self.index)));
            };
            self.code =
                u32::try_from(r.payload).map_err(|_| VocabError::Inconsistent("a code beyond 32 bits".into()))?;
            self.word = Some(word);
            self.index += 1;
        }
        if self.code != Renumbering::BREAK {
            let hash = (word >> 64) as u64;
            self.by_place.push(place, hash, u64::from(self.code))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overflow::OverflowLog;
    use crate::side::{OverflowWord, SideReader};
    use dupgram_lexicon::{Lexicon, Lookup, Scope, Seen, word_hash};
    use proptest::prelude::*;

    /// What one token of a stream became: a first-seen ID, a stop word, or a slot of the overflow.
    #[derive(Debug, Clone, Copy)]
    enum Token {
        Table(u32),
        Stop,
        Overflow(crate::overflow::Slotted),
    }

    /// Counts `streams` (token lists) through one builder frozen after
    /// `freeze_after` tokens, logging the overflow per stream; returns the
    /// lexicon file, what numbering (with `threads`) said and each token's outcome.
    fn numbered_with(
        streams: &[Vec<String>],
        (freeze_after, stop_top): (usize, usize),
        memory: u64,
        threads: usize,
        dir: &Path,
    ) -> (Vec<u8>, Numbered<Vec<u8>>, Vec<Vec<Token>>) {
        let mut builder = LexiconBuilder::new(["s".to_string()]);
        let mut logs: Vec<OverflowLog> = (0..streams.len()).map(|i| OverflowLog::new(dir, i, memory)).collect();
        let mut outcomes = vec![Vec::new(); streams.len()];
        // Round-robin over the streams, as workers interleave.
        let longest = streams.iter().map(Vec::len).max().unwrap_or(0);
        let mut seen = 0;
        for at in 0..longest {
            for (s, words) in streams.iter().enumerate() {
                let Some(w) = words.get(at) else { continue };
                if seen == freeze_after {
                    builder.freeze();
                }
                seen += 1;
                if builder.is_stopword(w) {
                    builder.add_stop_tokens(1);
                    continue;
                }
                let outcome = match builder.add_first_seen(w.as_bytes(), word_hash(w.as_bytes())) {
                    Seen::Word(id) => Token::Table(id),
                    Seen::Stop => Token::Stop,
                    Seen::Overflow => Token::Overflow(logs[s].push(w.as_bytes(), word_hash(w.as_bytes())).unwrap()),
                };
                outcomes[s].push(outcome);
            }
        }
        let runs = logs.into_iter().map(|l| l.finish().unwrap()).collect();
        let plan = VocabularyPlan { dir, memory, stop: &(), threads };
        let numbered =
            number_vocabulary(&builder, runs, (Normalization::default(), stop_top), Vec::new(), &plan).unwrap();
        (numbered.out.clone(), numbered, outcomes)
    }

    /// What the side file says of an overflow token's slot, past the end of
    /// the epoch before it if it ended there.
    fn read_slot(side: &mut SideReader, slotted: crate::overflow::Slotted) -> OverflowWord {
        if let Some(slots) = slotted.ended {
            side.end_epoch(slots).unwrap();
        }
        side.slot(slotted.slot).unwrap()
    }

    /// The numbering with `threads` (sorts and side files on helper threads
    /// from two on) against the plain path's lexicon and every token's ID.
    fn check(
        streams: &[Vec<String>],
        (freeze_after, stop_top): (usize, usize),
        memory: u64,
        threads: usize,
    ) -> Result<(), TestCaseError> {
        let dir = tempfile::tempdir().unwrap();
        // The plain path: one builder that never freezes.
        let (plain, _, _) = numbered_with(streams, (usize::MAX, stop_top), memory, 1, dir.path());
        let (file, numbered, outcomes) = numbered_with(streams, (freeze_after, stop_top), memory, threads, dir.path());
        prop_assert!(file == plain, "the lexicon file is the one a builder holding every word writes");
        let path = dir.path().join("words.lex");
        std::fs::write(&path, &file).unwrap();
        let lexicon = Lexicon::load(&path, Scope::Repeated).unwrap();
        prop_assert_eq!(lexicon.identity(), numbered.identity);
        for (s, words) in streams.iter().enumerate() {
            let mut side = SideReader::open(numbered.sides.get(s).and_then(Option::as_ref)).unwrap();
            let mut outcome = outcomes[s].iter();
            for w in words.iter().filter(|w| w.as_str() != "s") {
                let want = lexicon.lookup(w);
                let got = match outcome.next().unwrap() {
                    Token::Stop => Lookup::Stop,
                    Token::Table(first) => match numbered.renumbering.ids[*first as usize] {
                        Renumbering::STOP => Lookup::Stop,
                        Renumbering::BREAK => Lookup::Unknown,
                        id => {
                            prop_assert_eq!(numbered.renumbering.hashes[*first as usize], word_hash(w.as_bytes()));
                            Lookup::Id(id)
                        }
                    },
                    Token::Overflow(slotted) => match read_slot(&mut side, *slotted) {
                        OverflowWord::Id(id, hash) => {
                            prop_assert_eq!(hash, word_hash(w.as_bytes()));
                            Lookup::Id(id)
                        }
                        OverflowWord::Stop => Lookup::Stop,
                        OverflowWord::Break => Lookup::Unknown,
                    },
                };
                prop_assert_eq!(got, want, "{}", w);
            }
            side.finish().unwrap();
        }
        // Nothing is left behind but the lexicon written here and the side files.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "words.lex" && !n.starts_with("overflow-side"))
            .collect();
        prop_assert!(left.is_empty(), "{:?}", left);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn freezing_the_table_changes_no_id(
            streams in crate::testing::token_lists(200, 120, 4),
            freeze_after in 0usize..200,
            stop_top in 0usize..3,
            memory in prop_oneof![Just(0u64), Just(1u64 << 20)],
            threads in 1usize..4,
        ) {
            check(&streams, (freeze_after, stop_top), memory, threads)?;
        }
    }

    #[test]
    fn an_empty_overflow_numbers_the_table_alone() {
        let streams = vec![vec!["a".to_string(), "b".into(), "a".into()]];
        let dir = tempfile::tempdir().unwrap();
        let (_, numbered, _) = numbered_with(&streams, (usize::MAX, 0), 1 << 20, 2, dir.path());
        assert_eq!(numbered.overflow_words, 0);
        assert!(numbered.sides.iter().all(Option::is_none));
        check(&streams, (0, 0), 1 << 20, 2).unwrap();
    }
}
