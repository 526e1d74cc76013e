//! The vocabulary out of core: words past the lexicon's memory, counted,
//! numbered and resolved through sorted runs on disk, so that no number of
//! distinct words is too many for a memory budget.
//!
//! # Why
//!
//! dupgram works on word IDs numbered by decreasing frequency (frequent words
//! get short codes in run files, and the count's parts are ranges of IDs).
//! The lexicon pass counts words in a hash table ([`LexiconBuilder`]) that
//! lives in memory. A web crawl's vocabulary grows with the crawl — names,
//! numbers, typos, URLs: tens of millions of word forms per ten billion
//! tokens — so a table of every word would make the corpus a budget can
//! take depend on its vocabulary.
//!
//! # How
//!
//! The table takes words until its share of the memory is used, then it is
//! frozen ([`LexiconBuilder::freeze`]): the words it holds are still counted
//! there, and a word it does not hold is an *overflow* token. The worker's
//! [`OverflowLog`] gives its word a *slot* in a dictionary of its own, in
//! fixed memory, which the stream writes the token as
//! ([`dupgram_lexicon::stream::SLOT`]); when the dictionary is full, its
//! *epoch* ends (the stream marks it, with its number of slots) and it
//! starts again empty. Each slot of an ended epoch goes to two sorts in
//! fixed memory, spilled as sorted runs:
//!
//! * its **place**: the word's 128-bit [`fingerprint`] and the slot's
//!   [`place`] (its stream, and its number among the slots of all the
//!   stream's epochs), as the key of a run entry ([`dupgram_runs`]);
//! * its **word**: the bytes under the fingerprint, with the epoch's count
//!   of it, in a [`records::WordSort`] that adds up equal words.
//!
//! A word's tokens within an epoch cost a look-up in the dictionary and
//! the slot's code in the stream; the sorts take one record per distinct
//! word and epoch. How many that saves depends on the words and on the
//! dictionary's size: on copies of the Reddit comments with word forms of
//! their own, a record for 5 % of the tokens past the table at `--memory
//! 1G` (two copies) and 13 % at 128M (four); on generated text whose words
//! past the table are mostly seen once, for 83 % of them (1B tokens at 256M).
//!
//! After the pass, [`number_vocabulary`] gives every word the ID a table
//! holding all of them would have given it, and every slot its word's ID:
//!
//! 1. the overflow's words are merged by fingerprint (counts added up across
//!    workers and epochs), each numbered by its place in that order, and
//!    sorted again by rank (decreasing count, then bytes);
//! 2. the table's words (sorted in memory) and the overflow's (from disk) are
//!    merged in rank order and numbered as [`Numbering`] numbers them — the
//!    lexicon file is written as they come, byte for byte the one a single
//!    table would have written; each overflow word's code (its ID, a stop
//!    word's mark, or "seen once") is filed under its number;
//! 3. the places are merged by fingerprint — the same order as the words'
//!    numbers — and each slot gets its word's code, filed under its place;
//!    slots of words seen once are left out;
//! 4. the codes, in place order, are the streams' [side files](SideFile):
//!    the passes over the word streams read a stream's side file beside it
//!    ([`SideReader`]), holding the codes of one epoch's slots at a time,
//!    one entry per slot whose word has an ID; the caller removes a side
//!    file once its stream is read for the last time.
//!
//! A corpus counted in shards by tasks of their own (the Slurm stages) is
//! numbered the same way from files: each shard's words, table's and
//! overflow's alike, by fingerprint with their counts, merged by one task
//! that holds none of them ([`write_shard_words`], [`number_shard_words`]).
//!
//! Every record is read and written a fixed number of times, whatever the
//! vocabulary; the memory each step holds is a sort buffer and a reader per
//! run merged at once. The numbering runs after the pass, when nothing else
//! does: with more than one thread, each of its sorts hands a full buffer
//! to a helper thread, which sorts and writes it while the next one fills
//! ([`records::WordSort::in_background`]; two buffers of half the size),
//! and the codes of step 4 are sorted per stream, each stream's side file
//! written on a thread of its own. The runs are the same, so the output is
//! too.
//!
//! The disk holds the word streams and these runs at once, so the runs are
//! kept small: a word's fingerprint is not written in its run but computed
//! again from its bytes when read, any other record's key is written as its
//! gap from the one before ([`records`]), and every run (of records or of
//! occurrences), read once by a merge and removed after it, gives its blocks
//! back to the disk as it is read (a hole punched behind the reader,
//! [`dupgram_runs::reclaim`]), so no merge's output sits on disk beside all
//! of its inputs.
//!
//! For the output, words are kept by ID in a file of checked blocks
//! ([`DiskWords`]): the words of the lowest (most frequent) IDs are read
//! into memory ([`HeldWords`]) as far as the budget allows, and the others
//! are looked up, a batch of n-grams at a time, in increasing order.
//!
//! # Exactness
//!
//! A fingerprint never decides which word a token is without the words
//! having been compared:
//!
//! * the table compares bytes, as it always did;
//! * the words' merge meets every distinct overflow word with its bytes. Two
//!   different words under one fingerprint come out next to each other,
//!   and the job stops with [`VocabError::Collision`] instead of taking them
//!   for one word. Without such a stop, fingerprints and overflow words are
//!   one to one, so the occurrences grouped by fingerprint are grouped by
//!   word exactly: no token is given another word's ID, no count is merged
//!   or split, no n-gram, pair, mark or count can change. The stop is not
//!   expected to be seen: the fingerprint is the word's 64-bit XXH3 hash
//!   beside a second, independently seeded one, and 10⁹ distinct words
//!   share one with a probability of about 10⁻²¹;
//! * the join of step 3 checks that the places name exactly the words of
//!   step 1, in the same order, so damage or a mismatch of files stops the
//!   job instead of shifting codes;
//! * an epoch's dictionary compares bytes too (its hash finds the slot, the
//!   bytes decide it), and a reader refuses a stream that asks for a slot
//!   beyond its epoch's size, ends an epoch before a slot it used, or ends
//!   before a slot its side file lists.
//!
//! # Formats
//!
//! Each file has a magic, a version and checksums ([`frames`] describes
//! the framing the record runs and side files share):
//!
//! | file | magic | what |
//! |---|---|---|
//! | occurrence run | `DGRUN` (a run of [`dupgram_runs`], n = 6) | fingerprint (4 × 32 bits) and place (2 × 32 bits) per slot |
//! | record run | `DGWREC` (version 2) | `(major u128, bytes, payload)` in increasing order, each major as its gap from the one before ([`records`]) |
//! | word run by fingerprint | `DGWFPR` (version 1) | `(bytes, count)` in increasing order of the words' fingerprints, which are not written ([`records`]) |
//! | side file | `DGWSIDE` (version 2) | per slot whose word has an ID: gap, code, word hash ([`side`](SideReader)) |
//! | shard words | `DGWFPR` (a word run by fingerprint) | every word of a shard with its count ([`write_shard_words`]) |
//! | words by ID | `DGWBYID` | words in blocks of [`BLOCK_WORDS`], an index of offsets and block checksums ([`DiskWords`]) |
//!
//! All of them are temporary files of one job.
//!
//! [`LexiconBuilder`]: dupgram_lexicon::LexiconBuilder
//! [`LexiconBuilder::freeze`]: dupgram_lexicon::LexiconBuilder::freeze
//! [`Numbering`]: dupgram_lexicon::Numbering
//! [`OVERFLOW`]: dupgram_lexicon::stream::OVERFLOW

mod by_id;
mod error;
pub mod frames;
mod overflow;
pub mod records;
mod resolve;
mod shards;
mod side;

pub use by_id::{BLOCK_WORDS, BatchWords, DiskWords, DiskWordsWriter, HeldWords, RareWords};
pub use error::VocabError;
pub use overflow::{OverflowLog, OverflowRuns, PLACE_BITS, Slotted, fingerprint, place};
pub use resolve::{Numbered, VocabularyPlan, number_vocabulary};
pub use shards::{NumberedShards, ShardWords, number_shard_words, resolve_shard, write_shard_table, write_shard_words};
pub use side::{OverflowWord, SideFile, SideReader};

/// What the tests of several modules draw their token lists from.
#[cfg(test)]
pub(crate) mod testing {
    use proptest::prelude::*;

    /// Between 1 and `lists - 1` lists of under `len` tokens over a Zipf-ish
    /// vocabulary: a few frequent words, `rare` rare ones, and the stop word `s`.
    pub fn token_lists(rare: u32, len: usize, lists: usize) -> impl Strategy<Value = Vec<Vec<String>>> {
        let word = prop_oneof![
            4 => (0u32..8).prop_map(|i| format!("w{i}")),
            3 => (0u32..rare).prop_map(|i| format!("r{i}")),
            1 => Just("s".to_string()),
        ];
        proptest::collection::vec(proptest::collection::vec(word, 0..len), 1..lists)
    }
}
