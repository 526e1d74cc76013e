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

use dupgram_lexicon::{LexiconBuilder, Normalization, TableWord};

use crate::error::VocabError;
use crate::overflow::OverflowRuns;
use crate::records::{Majors, RecordRunFile, RecordRunWriter, SortedWords, WordSort};
use crate::resolve::{RankedNumbering, numbered_words};
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
    let (ranked, _) = table.ranking();
    let table_words = ranked.len() as u64;
    let ranking_bytes = (ranked.capacity() * std::mem::size_of::<TableWord<'_>>()) as u64;
    let half = plan.memory.saturating_sub(ranking_bytes) / 2;
    let mut sort = WordSort::combining_by_fingerprint(plan.dir, "shard-table", half as usize);
    for w in &ranked {
        sort.push(fingerprint(w.bytes, w.hash), w.bytes, w.count)?;
    }
    drop(ranked);
    let mut parts = vec![sort.finish()?];
    parts.extend(overflow.into_iter().filter_map(|o| o.words));
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
    Ok(ShardWords { words, overflow_words: words.saturating_sub(table_words), bytes: run.bytes })
}

/// Numbers the words of every shard's file ([`write_shard_words`]) as one
/// builder holding them all (with the stop list `listed`, sorted) would,
/// and writes the lexicon file to `out`; returns it, the file's identity
/// and the words numbered (stop words by rank aside). The files are read
/// once and removed: give links to keep them.
pub fn number_shard_words<W: Write>(
    shards: Vec<PathBuf>,
    listed: &[String],
    (norm, stop_top): (Normalization, usize),
    out: W,
    plan: &VocabularyPlan<'_>,
) -> Result<(W, u64, u64), VocabError> {
    let mut runs = Vec::with_capacity(shards.len());
    for path in shards {
        let bytes = std::fs::metadata(&path).map_err(|e| VocabError::io(&path, e))?.len();
        // The reader checks the records against the file's own count.
        runs.push(RecordRunFile { path, records: 0, bytes, majors: Majors::Fingerprints });
    }
    let sorted = SortedWords::from_runs(plan.dir, "shard-words", Majors::Fingerprints, runs);
    let numbering = RankedNumbering { norm, listed, stop_top, half: plan.memory / 2, dir: plan.dir, stop: plan.stop };
    let numbered = numbering.number(Vec::new(), vec![sorted], out, |_, _| Ok(()))?;
    Ok((numbered.out, numbered.identity, numbered_words(numbered.candidates, stop_top)))
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
        let plan = VocabularyPlan { dir, memory: 1 << 12, stop: &() };
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
        let (out, _, _) =
            number_shard_words(files, &["s".to_string()], (Normalization::default(), stop_top), Vec::new(), &plan)
                .unwrap();
        out
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

    fn corpus() -> impl Strategy<Value = Vec<Vec<String>>> {
        let word = prop_oneof![
            4 => (0u32..8).prop_map(|i| format!("w{i}")),
            3 => (0u32..300).prop_map(|i| format!("r{i}")),
            1 => Just("s".to_string()),
        ];
        proptest::collection::vec(proptest::collection::vec(word, 0..150), 1..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn shards_numbered_together_write_the_lexicon_of_one_builder(
            shards in corpus(),
            freeze_after in 0usize..160,
            stop_top in 0usize..3,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let file = numbered_in_shards(&shards, freeze_after, stop_top, dir.path());
            prop_assert!(file == numbered_at_once(&shards, stop_top));
            // The shard files were read and removed; nothing else is left.
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
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
