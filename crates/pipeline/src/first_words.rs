//! Counting in parts by first word, when one sieve cannot hold the corpus.
//!
//! A sieve of `s` counters lets a unique n-gram through with probability
//! about `1 − e^(−d/s)` for `d` distinct n-grams, and whatever it lets
//! through is sorted, spilled and merged. At a billion tokens of a growing
//! vocabulary under the default 1 GiB (780M distinct 10-grams, a sieve of
//! 0.7G counters) that was 63 % of the unique n-grams: 8.4 GB of runs for
//! 6.3 GB of text.
//!
//! The word streams make a second look at the corpus cheap (about two bytes
//! a token, nothing tokenised or looked up), so the count can go in `P`
//! parts instead: the n-grams are split by the ID of their first word into
//! ranges holding about equal numbers of tokens; for each range the sieve is
//! cleared and filled with that range's n-grams only, then that range is
//! counted and merged. Each part's sieve sees about `d/P` n-grams, so it lets
//! far fewer through, and only one part's runs are on disk at a time. Keys
//! sort by their first word first, so the parts leave their merges in the
//! output's order, one after the other: nothing is merged twice, and the
//! output is the same byte for byte whatever `P` is.
//!
//! The price is two more reads of the word streams per part (fill, count).
//! The sieve filled here is a staged one ([`dupgram_sieve::Filling::Staged`]):
//! in the same memory it lets far fewer unique n-grams through than
//! counters, so a billion tokens under 1 GiB take one part instead of two.

use dupgram_chunker::KeyLayout;
use dupgram_lexicon::Lexicon;
use dupgram_sieve::{InsertLine, Sieve};

use crate::scan::ScanSink;

/// More parts than this would read the streams more often than the sieve saves.
pub(crate) const MAX_PARTS: usize = 64;

/// The n-grams whose first word ID is in `start..end` (`None`: no end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FirstWords {
    pub start: u32,
    pub end: Option<u32>,
}

impl FirstWords {
    /// Every n-gram.
    pub const ALL: FirstWords = FirstWords { start: 0, end: None };

    /// At most `parts` consecutive ranges of the lexicon's IDs, each starting
    /// about as many n-grams (a word starts as many n-grams as it has
    /// occurrences, less the few near a document's end); fewer when a single
    /// word holds more than a part's share.
    pub fn split(lexicon: &Lexicon, parts: usize) -> Vec<FirstWords> {
        FirstWords::ALL.split_by(lexicon, parts)
    }

    /// This range cut as [`split`](Self::split) cuts them all: at most
    /// `parts` consecutive ranges that together are this one.
    pub fn split_by(self, lexicon: &Lexicon, parts: usize) -> Vec<FirstWords> {
        let end = self.end.unwrap_or(lexicon.len() as u32).min(lexicon.len() as u32);
        let ids = self.start.min(end)..end;
        let total: u128 = ids.clone().map(|id| u128::from(lexicon.count(id))).sum();
        let parts = parts.max(1) as u128;
        let mut starts = vec![self.start];
        let mut before = 0u128;
        for id in ids {
            // `id` opens the next part once the IDs below it hold that part's share.
            if id > self.start && (starts.len() as u128) < parts && before * parts >= total * starts.len() as u128 {
                starts.push(id);
            }
            before += u128::from(lexicon.count(id));
        }
        let ends = starts.iter().skip(1).map(|&s| Some(s)).chain([self.end]);
        starts.iter().zip(ends).map(|(&start, end)| FirstWords { start, end }).collect()
    }
}

/// Parts for a sieve that takes `capacity` n-grams ([`dupgram_sieve::Sieve::capacity`])
/// over `tokens` tokens (at most that many distinct n-grams), so each part
/// fills it at most that far.
pub(crate) fn parts_for(tokens: u64, capacity: u64) -> usize {
    let parts = tokens.div_ceil(capacity.max(1));
    (parts.min(MAX_PARTS as u64) as usize).max(1)
}

/// A [`FirstWords`] range as bounds on packed n-gram keys, which compare
/// as their word IDs do, first word first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRange<const L: usize> {
    start: Option<[u64; L]>,
    end: Option<[u64; L]>,
}

impl<const L: usize> KeyRange<L> {
    /// Every key.
    pub const ALL: KeyRange<L> = KeyRange { start: None, end: None };

    /// The keys of `part`'s n-grams; its IDs must fit the layout.
    pub fn new(part: FirstWords, layout: KeyLayout) -> Self {
        let bound = |first: u32| {
            let mut ids = vec![0u32; layout.n()];
            ids[0] = first;
            layout.pack::<L>(&ids)
        };
        KeyRange { start: (part.start > 0).then(|| bound(part.start)), end: part.end.map(bound) }
    }

    #[inline]
    pub fn contains(&self, key: &[u64; L]) -> bool {
        self.start.is_none_or(|s| *key >= s) && self.end.is_none_or(|e| *key < e)
    }
}

/// Fills a sieve with the fingerprints of the n-grams in one key range.
pub(crate) struct FillSieve<'a, const L: usize> {
    sieve: &'a Sieve,
    range: KeyRange<L>,
    /// Insertions whose cache lines are being prefetched.
    line: InsertLine,
}

impl<'a, const L: usize> FillSieve<'a, L> {
    pub fn new(sieve: &'a Sieve, range: KeyRange<L>) -> Self {
        FillSieve { sieve, range, line: InsertLine::default() }
    }

    /// Finishes the insertions still being prefetched.
    pub fn flush(&mut self) {
        self.sieve.flush(&mut self.line);
    }
}

impl<const L: usize> ScanSink<L> for FillSieve<'_, L> {
    #[inline]
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, _start: u64) {
        if self.range.contains(&key) {
            self.sieve.insert_delayed(&mut self.line, fingerprint);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dupgram_lexicon::{LexiconBuilder, Normalization};

    fn lexicon(counts: &[(&str, u64)]) -> Lexicon {
        let mut b = LexiconBuilder::new(Vec::<String>::new());
        for &(w, c) in counts {
            b.add_counted(w.as_bytes(), c);
        }
        b.finish(Normalization::default(), 0)
    }

    #[test]
    fn parts_cover_every_id_once_in_order() {
        let words: Vec<(String, u64)> = (0..50).map(|i| (format!("w{i}"), 1 + (i % 7) as u64)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let lex = lexicon(&words);
        for parts in 1..12 {
            let split = FirstWords::split(&lex, parts);
            assert!(!split.is_empty() && split.len() <= parts, "{parts}: {split:?}");
            assert_eq!(split[0].start, 0);
            assert_eq!(split.last().unwrap().end, None);
            for pair in split.windows(2) {
                assert_eq!(pair[0].end, Some(pair[1].start), "{split:?}");
                assert!(pair[0].start < pair[1].start, "{split:?}");
            }
        }
    }

    #[test]
    fn parts_hold_about_equal_counts() {
        let words: Vec<(String, u64)> = (0..1000).map(|i| (format!("w{i}"), 10)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let lex = lexicon(&words);
        let split = FirstWords::split(&lex, 4);
        assert_eq!(split.len(), 4);
        for p in &split {
            let end = p.end.unwrap_or(lex.len() as u32);
            assert_eq!(end - p.start, 250, "{split:?}");
        }
    }

    #[test]
    fn a_part_splits_into_pieces_of_itself() {
        let words: Vec<(String, u64)> = (0..1000).map(|i| (format!("w{i}"), 10)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let lex = lexicon(&words);
        for part in FirstWords::split(&lex, 3) {
            let pieces = part.split_by(&lex, 2);
            assert_eq!(pieces.len(), 2, "{part:?}: {pieces:?}");
            assert_eq!((pieces[0].start, pieces[1].end), (part.start, part.end));
            assert_eq!(pieces[0].end, Some(pieces[1].start));
            let end = part.end.unwrap_or(1000);
            assert!((pieces[1].start - part.start).abs_diff(end - pieces[1].start) <= 1, "{pieces:?}");
        }
        assert_eq!(FirstWords::ALL.split_by(&lex, 4), FirstWords::split(&lex, 4));
    }

    #[test]
    fn one_heavy_word_makes_fewer_parts() {
        let lex = lexicon(&[("the", 1000), ("a", 2), ("b", 2)]);
        let split = FirstWords::split(&lex, 4);
        assert!(split.len() < 4, "{split:?}");
    }

    #[test]
    fn key_ranges_follow_the_first_word() {
        let layout = KeyLayout::new(3, 40).unwrap();
        let parts = [
            FirstWords { start: 0, end: Some(5) },
            FirstWords { start: 5, end: Some(40) },
            FirstWords { start: 40, end: None },
        ];
        let ranges: Vec<KeyRange<1>> = parts.iter().map(|&p| KeyRange::new(p, layout)).collect();
        for first in 0..=40u32 {
            for rest in [0u32, 1, 39, 40] {
                let key = layout.pack::<1>(&[first, rest, 40 - rest]);
                let holders: Vec<usize> = (0..3).filter(|&i| ranges[i].contains(&key)).collect();
                let want = parts.iter().position(|p| first >= p.start && p.end.is_none_or(|e| first < e)).unwrap();
                assert_eq!(holders, vec![want], "first word {first}");
            }
        }
        assert!(KeyRange::<1>::ALL.contains(&layout.pack::<1>(&[40, 40, 40])));
    }

    #[test]
    fn parts_grow_with_tokens_per_capacity() {
        assert_eq!(parts_for(0, 1 << 20), 1);
        assert_eq!(parts_for(100_000_000, 570_425_344), 1);
        assert_eq!(parts_for(1_000_000_000, 570_425_344), 2);
        assert_eq!(parts_for(1_000_000_000, 1_000_000_000), 1);
        assert_eq!(parts_for(u64::MAX, 1), MAX_PARTS);
        assert_eq!(parts_for(5, 0), 5);
    }
}
