//! The lexicon: tokens in, word IDs out, and back again for output.
//!
//! dupgram works on integers, not strings (Pomikálek & Rychlý, section 4):
//! a first pass over the corpus counts every normalised word
//! ([`LexiconBuilder`]), then [`LexiconBuilder::finish`] numbers the words by
//! decreasing frequency. Frequency order is what makes run files small: an
//! Elias delta code of ID `i` takes about `log₂ i + 2 log₂ log₂ i` bits, and
//! most tokens are frequent words (`benches/run_size.rs` at the workspace root
//! measures first-seen order against it).
//!
//! Words seen once get IDs too (a later incremental run may see them again),
//! but they sort last, and a stage that only deals in repeated n-grams loads
//! the lexicon with [`Scope::Repeated`]: a word seen once cannot be part of a
//! repeated n-gram, so it is [`Lookup::Unknown`] there and breaks the n-gram
//! window, which roughly halves the memory a web-corpus lexicon needs.
//!
//! The lexicon file records the [`Normalization`] and the stop list, so a
//! later stage that reads the corpus again tokenises it exactly as the first.

mod cache;
mod lexicon;
pub mod stream;
mod table_hint;
pub mod tokenize;

pub use cache::WordCache;
pub use lexicon::{
    Counted, LEXICON_MAGIC, LEXICON_VERSION, Lexicon, LexiconBuilder, LexiconError, LexiconWriter, Lookup, Numbering,
    RankedWord, Renumbering, Scope, Seen, SpillWord, TableWord, WordsById, order_prefix, rank_order, read_varint,
    word_hash, write_varint,
};
pub use tokenize::{MAX_TOKEN_BYTES, NUMBER_TOKEN, Normalization, TokenMode, Tokenizer, tokenize};

#[cfg(test)]
mod tests;
