//! A vocabulary counted in shards, each by a process of its own (the Slurm
//! stages), and numbered by one more, none of which holds it all.
//!
//! A shard's words — those its table held and those of its words-only
//! overflow logs ([`OverflowLog::words_only`](crate::OverflowLog::words_only))
//! alike — go to one run file by fingerprint, each word once with its count
//! in the shard ([`write_shard_words`]). The numbering merges the shards'
//! files by fingerprint, adding up each word's counts, and goes on as the
//! one-process numbering does (steps 1 and 2 of the crate documentation):
//! sorted again by rank, numbered, the lexicon file written as the words
//! come ([`number_shard_words`]). Its file is byte for byte the one a single
//! builder holding every word of every shard would write, and its memory is
//! that of its sorts' buffers and readers, whatever the vocabulary.
//!
//! Exactness is the crate's argument: the merge compares the bytes of every
//! two words under one fingerprint, and two different ones stop it
//! ([`VocabError::Collision`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use dupgram_lexicon::{LexiconBuilder, Normalization, Renumbering, TableWord};
use dupgram_merge::{MergeSink, RunFile};

use crate::error::VocabError;
use crate::overflow::{OverflowRuns, occurrence};
use crate::records::{Majors, MergedWords, RecordRunFile, RecordRunWriter, SortedWords, WordSort};
use crate::resolve::{CodesByPlace, OVERFLOW_TAG, RankedNumbering, merge_occurrences, numbered_words};
use crate::side::SideFile;
use crate::{VocabularyPlan, fingerprint};

/// What [`write_shard_words`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardWords {
    /// Distinct words of the shard (stop words on the list aside).
    pub words: u64,
    /// Of them, those past the table (a word is in the table from its
    /// first occurrence or never, so the two are disjoint).
    pub overflow_words: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Writes every word `table` and the words-only `overflow` logs counted,
/// each once with its count, to one word run by fingerprint at `path`.
/// The logs' runs are read and removed; `path` is whole only when this
/// returns `Ok` (write it under a temporary name).
pub fn write_shard_words(
    table: &LexiconBuilder,
    overflow: Vec<OverflowRuns>,
    path: &Path,
    plan: &VocabularyPlan<'_>,
) -> Result<ShardWords, VocabError> {
    let more = overflow.into_iter().filter_map(|o| o.words).collect();
    let (words, table_words, bytes) = write_table_by_fingerprint(table, |w| w.count, more, path, plan)?;
    Ok(ShardWords { words, overflow_words: words.saturating_sub(table_words), bytes })
}

/// Writes the words of `table`, each with `payload` of it, and the records
/// of `more` (sorted by fingerprint too), to one word run by fingerprint at
/// `path`; equal words add their payloads up. Returns the records written,
/// the table's words and the file's bytes.
fn write_table_by_fingerprint(
    table: &LexiconBuilder,
    payload: impl Fn(&TableWord<'_>) -> u64,
    more: Vec<SortedWords>,
    path: &Path,
    plan: &VocabularyPlan<'_>,
) -> Result<(u64, u64, u64), VocabError> {
    let (ranked, _) = table.ranking();
    let table_words = ranked.len() as u64;
    let ranking_bytes = (ranked.capacity() * std::mem::size_of::<TableWord<'_>>()) as u64;
    let half = plan.memory.saturating_sub(ranking_bytes) / 2;
    let mut sort = WordSort::combining_by_fingerprint(plan.dir, "shard-table", half as usize);
    for w in &ranked {
        sort.push(fingerprint(w.bytes, w.hash), w.bytes, payload(w))?;
    }
    drop(ranked);
    let mut parts = vec![sort.finish()?];
    parts.extend(more);
    let mut merged = SortedWords::concat(parts, plan.dir, "shard-words")?.open(half, plan.stop)?;
    let mut out = RecordRunWriter::create(path, Majors::Fingerprints)?;
    let mut words = 0u64;
    // A word the table froze out in one worker's log and met again in
    // another's comes once from each: their counts add up here.
    while let Some(w) = merged.next_combined()? {
        out.push(&w)?;
        words += 1;
        if words.is_multiple_of(65536) && plan.stop.interrupted() {
            return Err(VocabError::Interrupted);
        }
    }
    let run = out.finish()?;
    Ok((words, table_words, run.bytes))
}

/// What [`number_shard_words`] wrote.
pub struct NumberedShards<W> {
    pub out: W,
    /// The lexicon file's identity.
    pub identity: u64,
    /// Words in the lexicon file (stop words aside).
    pub words: u64,
}

/// Numbers the words of every shard's file ([`write_shard_words`]) as one
/// builder holding them all (with the stop list `listed`, sorted) would,
/// and writes the lexicon file to `out`. With `codes`, also writes there
/// what each word became, by fingerprint ([`resolve_shard`] reads it): its
/// ID, or [`Renumbering::STOP`] for a stop word by rank; a word seen once,
/// which breaks every n-gram, is left out. The shards' files are read
/// through links in `plan.dir` and stay whole.
pub fn number_shard_words<W: Write>(
    shards: &[PathBuf],
    listed: &[String],
    (norm, stop_top): (Normalization, usize),
    out: W,
    codes: Option<&Path>,
    plan: &VocabularyPlan<'_>,
) -> Result<NumberedShards<W>, VocabError> {
    let half = plan.memory / 2;
    let mut by_index = codes.map(|_| plan.sort("shard-codes", half));
    let numbering = RankedNumbering { norm, listed, stop_top, half, plan };
    let numbered = numbering.number(Vec::new(), vec![linked_words(shards, plan.dir, "a")?], out, |w, code| {
        match by_index.as_mut() {
            Some(sort) if code != Renumbering::BREAK => {
                sort.push(u128::from(w.tag & !OVERFLOW_TAG), &[], u64::from(code))
            }
            _ => Ok(()),
        }
    })?;
    if let (Some(path), Some(by_index)) = (codes, by_index) {
        write_codes(shards, by_index, numbered.overflow_words, path, plan)?;
    }
    Ok(NumberedShards {
        out: numbered.out,
        identity: numbered.identity,
        words: numbered_words(numbered.candidates, stop_top),
    })
}

/// The shards' files, linked into `dir` (copied where a link cannot be
/// made), as one sorted stream to be read once.
fn linked_words(shards: &[PathBuf], dir: &Path, round: &str) -> Result<SortedWords, VocabError> {
    let runs = shards
        .iter()
        .enumerate()
        .map(|(i, from)| linked_run(from, dir.join(format!("shard-words-{round}{i:06}.dgr"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SortedWords::from_runs(dir, "shard-words", Majors::Fingerprints, runs))
}

/// A run of `majors` records read through a second name for `from` at
/// `to` (see [`dupgram_runs::reclaim::second_name`]): whoever reads and
/// removes it leaves `from` whole.
fn linked_run(from: &Path, to: PathBuf) -> Result<RecordRunFile, VocabError> {
    dupgram_runs::reclaim::second_name(from, &to).map_err(|e| VocabError::io(from, e))?;
    let bytes = std::fs::metadata(&to).map_err(|e| VocabError::io(&to, e))?.len();
    // The reader checks the records against the file's own count.
    Ok(RecordRunFile { path: to, records: 0, bytes, majors: Majors::Fingerprints })
}

/// The codes file: the shards' words merged by fingerprint once more (the
/// order their indexes count), each beside its code from `by_index`.
fn write_codes(
    shards: &[PathBuf],
    by_index: WordSort,
    words: u64,
    path: &Path,
    plan: &VocabularyPlan<'_>,
) -> Result<(), VocabError> {
    let quarter = plan.memory / 4;
    let mut merged = linked_words(shards, plan.dir, "b")?.open(quarter, plan.stop)?;
    let mut codes = by_index.finish()?.open(quarter, plan.stop)?;
    let mut next = codes.next_record()?.map(|r| (r.major, r.payload));
    let mut out = RecordRunWriter::create(path, Majors::Fingerprints)?;
    let mut index = 0u64;
    while let Some(w) = merged.next_combined()? {
        if let Some((at, code)) = next
            && at == u128::from(index)
        {
            out.push(&crate::records::WordRecord { major: w.major, bytes: w.bytes, payload: code })?;
            next = codes.next_record()?.map(|r| (r.major, r.payload));
        }
        index += 1;
        if index.is_multiple_of(65536) && plan.stop.interrupted() {
            return Err(VocabError::Interrupted);
        }
    }
    if index != words || next.is_some() {
        return Err(VocabError::Inconsistent(format!(
            "the shards' words were {words} when numbered and {index} when read again"
        )));
    }
    out.finish()?;
    Ok(())
}

/// Writes the words of a shard's table by fingerprint, each with its
/// first-seen ID, to `path`: how the shard's word streams name them.
pub fn write_shard_table(table: &LexiconBuilder, path: &Path, plan: &VocabularyPlan<'_>) -> Result<u64, VocabError> {
    let (words, _, _) = write_table_by_fingerprint(table, |w| u64::from(w.first_seen), Vec::new(), path, plan)?;
    Ok(words)
}

/// What a shard's word streams' codes become once the job's words are
/// numbered: the renumbering of its table's `first_seen` first-seen IDs
/// (from its table file, [`write_shard_table`]) and a side file per
/// stream (of `streams`) for its overflow tokens (from their occurrence
/// runs; their epochs have at most `epoch_slots` slots), both joined with
/// the job's codes file ([`number_shard_words`]) by fingerprint. The files
/// are read through links in `plan.dir` and stay whole.
///
/// A fingerprint names one word: the job's numbering merged every word of
/// every shard by fingerprint and compared the bytes of any two under one
/// ([`VocabError::Collision`]), so a join by fingerprint is a join by word.
pub fn resolve_shard(
    table: &Path,
    first_seen: usize,
    (occurrences, epoch_slots): (&[PathBuf], u32),
    codes: &Path,
    streams: usize,
    plan: &VocabularyPlan<'_>,
) -> Result<(Renumbering, Vec<Option<SideFile>>), VocabError> {
    let renumbering = renumber_table(table, first_seen, codes, plan)?;
    let reserved = renumbering.heap_bytes() as u64;
    let room = plan.memory.saturating_sub(reserved);
    let half = room / 2;
    let mut by_place = CodesByPlace::new(plan, "shard-places", streams, half);
    {
        let mut codes = open_linked(codes, plan.dir, "codes-b", half / 2, plan)?;
        let mut runs = Vec::with_capacity(occurrences.len());
        for (i, from) in occurrences.iter().enumerate() {
            let run = linked_run(from, plan.dir.join(format!("shard-tokens-{i:06}.dgr")))?;
            runs.push(RunFile { path: run.path, bytes: run.bytes, depth: 0 });
        }
        let mut join = FingerprintJoin {
            next: codes.next_record()?.map(|r| (r.major, r.payload)),
            codes,
            by_place: &mut by_place,
        };
        merge_occurrences(runs, &mut join, "shard-tokens", half / 2, plan)?;
    }
    let (sides, _) = by_place.write_side_files(room, epoch_slots, plan)?;
    Ok((renumbering, sides))
}

/// A file of words by fingerprint, read once through a link in `dir`.
fn open_linked(
    from: &Path,
    dir: &Path,
    name: &str,
    memory: u64,
    plan: &VocabularyPlan<'_>,
) -> Result<MergedWords, VocabError> {
    let run = linked_run(from, dir.join(format!("{name}.dgr")))?;
    SortedWords::from_runs(dir, name, Majors::Fingerprints, vec![run]).open(memory, plan.stop)
}

/// The table's first-seen IDs joined with the codes by fingerprint: a word
/// the codes file does not hold was seen once in the whole corpus.
fn renumber_table(
    table: &Path,
    first_seen: usize,
    codes: &Path,
    plan: &VocabularyPlan<'_>,
) -> Result<Renumbering, VocabError> {
    let mut renumbering = Renumbering::for_table(first_seen);
    let quarter = plan.memory.saturating_sub(renumbering.heap_bytes() as u64) / 4;
    let mut words = open_linked(table, plan.dir, "table", quarter, plan)?;
    let mut codes = open_linked(codes, plan.dir, "codes-a", quarter, plan)?;
    // By fingerprint alone, as the occurrences are joined (see `resolve_shard`).
    let mut next = codes.next_record()?.map(|r| (r.major, r.payload));
    while let Some(w) = words.next_record()? {
        while next.is_some_and(|(fp, _)| fp < w.major) {
            next = codes.next_record()?.map(|r| (r.major, r.payload));
        }
        let code = match next {
            Some((fp, code)) if fp == w.major => code,
            _ => u64::from(Renumbering::BREAK),
        };
        let id = usize::try_from(w.payload).ok().filter(|&id| id < first_seen).ok_or_else(|| {
            VocabError::Inconsistent(format!("a table word's first-seen ID {} of {first_seen}", w.payload))
        })?;
        let code = u32::try_from(code).map_err(|_| VocabError::Inconsistent("a code beyond 32 bits".into()))?;
        renumbering.assign(id as u32, code, (w.major >> 64) as u64);
    }
    Ok(renumbering)
}

/// Walks the merged occurrences (by fingerprint, then place) beside the
/// codes file (by fingerprint) and files each token under its place with
/// its word's code; a word the codes file does not hold was seen once, and
/// its tokens are left out (a token not filed breaks the window).
struct FingerprintJoin<'a> {
    codes: MergedWords,
    /// The codes file's next record: fingerprint and code.
    next: Option<(u128, u64)>,
    by_place: &'a mut CodesByPlace,
}

impl MergeSink for FingerprintJoin<'_> {
    type Error = VocabError;

    fn accept(&mut self, key: &[u32], count: u64, _: &[u64]) -> Result<(), VocabError> {
        let (word, place) = occurrence(key, count)?;
        while self.next.is_some_and(|(fp, _)| fp < word) {
            self.next = self.codes.next_record()?.map(|r| (r.major, r.payload));
        }
        if let Some((fp, code)) = self.next
            && fp == word
        {
            let hash = (word >> 64) as u64;
            self.by_place.push(place, hash, code)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overflow::OverflowLog;
    use dupgram_lexicon::{Lexicon, Scope, Seen, word_hash};
    use proptest::prelude::*;

    /// Counts `shards` (token lists), each through a builder frozen after
    /// `freeze_after` of its tokens and a words-only log, into shard files;
    /// numbers them; returns the lexicon file.
    fn numbered_in_shards(shards: &[Vec<String>], freeze_after: usize, stop_top: usize, dir: &Path) -> Vec<u8> {
        let plan = VocabularyPlan { dir, memory: 1 << 12, stop: &(), threads: 2 };
        let mut files = Vec::new();
        for (s, words) in shards.iter().enumerate() {
            let mut builder = LexiconBuilder::new(["s".to_string()]);
            let mut log = OverflowLog::words_only(dir, s, 1 << 10);
            for (i, w) in words.iter().enumerate() {
                if i == freeze_after {
                    builder.freeze();
                }
                if builder.is_stopword(w) {
                    continue;
                }
                if let Seen::Overflow = builder.add_first_seen(w.as_bytes(), word_hash(w.as_bytes())) {
                    log.push(w.as_bytes(), word_hash(w.as_bytes())).unwrap();
                }
            }
            let path = dir.join(format!("shard-{s}.words"));
            write_shard_words(&builder, vec![log.finish().unwrap()], &path, &plan).unwrap();
            files.push(path);
        }
        let listed = ["s".to_string()];
        let norm = Normalization::default();
        number_shard_words(&files, &listed, (norm, stop_top), Vec::new(), None, &plan).unwrap().out
    }

    /// The lexicon file of one builder that saw every shard's tokens.
    fn numbered_at_once(shards: &[Vec<String>], stop_top: usize) -> Vec<u8> {
        let mut builder = LexiconBuilder::new(["s".to_string()]);
        for w in shards.iter().flatten() {
            if !builder.is_stopword(w) {
                builder.add_first_seen(w.as_bytes(), word_hash(w.as_bytes()));
            }
        }
        let mut out = Vec::new();
        builder.write_to(Normalization::default(), stop_top, &mut out).unwrap();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn shards_numbered_together_write_the_lexicon_of_one_builder(
            shards in crate::testing::token_lists(300, 150, 5),
            freeze_after in 0usize..160,
            stop_top in 0usize..3,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let file = numbered_in_shards(&shards, freeze_after, stop_top, dir.path());
            prop_assert!(file == numbered_at_once(&shards, stop_top));
            // The shards' files stay whole; nothing else is left.
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| !(name.starts_with("shard-") && name.ends_with(".words")))
                .collect();
            prop_assert!(left.is_empty(), "{:?}", left);
        }
    }

    #[test]
    fn a_shard_file_holds_each_word_once_with_its_count() {
        let dir = tempfile::tempdir().unwrap();
        let shards = vec![vec!["b".to_string(), "a".into(), "b".into(), "c".into(), "c".into(), "c".into()]];
        let file = numbered_in_shards(&shards, 1, 0, dir.path());
        let path = dir.path().join("words.lex");
        std::fs::write(&path, &file).unwrap();
        let lexicon = Lexicon::load(&path, Scope::All).unwrap();
        let words: Vec<_> = (0..lexicon.len() as u32).map(|id| (lexicon.word(id), lexicon.count(id))).collect();
        assert_eq!(words, [("c", 3), ("b", 2), ("a", 1)]);
    }
}
