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
//! The price is two more reads of the word streams per part (fill, count);
//! a count that would need three parts or more proves its repeats once
//! instead and reads the streams once a part (see [`crate::repeat_prints`]).
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
        let runs = lexicon.count_runs(self.start.min(end)..end);
        let total: u128 = runs.iter().map(|&(_, words, count)| u128::from(words) * u128::from(count)).sum();
        let parts = parts.max(1) as u128;
        let mut starts = vec![self.start];
        let mut before = 0u128;
        for (first, words, count) in runs {
            // `id` opens the next part once the IDs below it hold that part's
            // share: the first such ID of this run, each ID opening one part at most.
            let mut id = first.max(self.start + 1);
            while (starts.len() as u128) < parts && id < first + words {
                let share = total * starts.len() as u128;
                let below = before + u128::from(id - first) * u128::from(count);
                if below * parts < share {
                    let missing = share - below * parts;
                    let step = missing.div_ceil(parts * u128::from(count).max(1));
                    if step >= u128::from(first + words - id) {
                        break;
                    }
                    id += step as u32;
                    continue;
                }
                starts.push(id);
                id += 1;
            }
            before += u128::from(words) * u128::from(count);
        }
        let ends = starts.iter().skip(1).map(|&s| Some(s)).chain([self.end]);
        starts.iter().zip(ends).map(|(&start, end)| FirstWords { start, end }).collect()
    }

    /// The share of all tokens (about the share of the n-grams) this range starts.
    pub fn share(self, lexicon: &Lexicon) -> f64 {
        self.tokens(lexicon) as f64 / FirstWords::ALL.tokens(lexicon).max(1) as f64
    }

    /// The tokens of the words of this range: about the n-grams it starts.
    pub fn tokens(self, lexicon: &Lexicon) -> u64 {
        let end = self.end.unwrap_or(lexicon.len() as u32).min(lexicon.len() as u32);
        lexicon.count_runs(self.start.min(end)..end).iter().map(|&(_, words, count)| u64::from(words) * count).sum()
    }
}

/// Plans a count in parts by first word one part at a time: each part the
/// largest range of first words whose n-grams the sieve takes and whose
/// runs fit the room on disk, at the most bytes a token took in the parts
/// counted so far (a guess for the first).
#[derive(Debug)]
pub(crate) struct PartPlan {
    /// What is left to count.
    rest: Option<FirstWords>,
    /// Parts already planned and counted.
    done: usize,
    /// Parts fixed in advance ([`crate::Limits::sieve_parts`]), if any.
    fixed: Option<Vec<FirstWords>>,
    /// N-grams one sieve takes.
    sieve_tokens: u64,
    /// Bytes one part's runs may take on disk.
    disk_room: u64,
    /// Bytes the last part's runs may take: it gives the word streams back
    /// to the disk as it reads them, so its runs may take their room too.
    last_room: u64,
    /// Run bytes per token: the most measured so far, or the guess.
    rate: f64,
    /// The part being counted: its tokens.
    counting: u64,
}

/// Run bytes per token guessed before any part is counted: runs take about
/// [`RUN_BYTES_PER_SORTED`] bytes a sorted n-gram, and a web crawl sorts up
/// to two fifths of its n-grams.
pub(crate) const FIRST_RATE: f64 = 4.0;

/// Run bytes a sorted n-gram takes, about (10-grams of web-like text: 9.9
/// at 100M tokens, 8.5 at 1B, the larger runs sharing more of each key).
pub(crate) const RUN_BYTES_PER_SORTED: f64 = 9.0;

/// A part is planned at this many times the run bytes per token it expects.
const RATE_MARGIN: f64 = 1.1;

impl PartPlan {
    /// A plan for parts that `sieve_tokens` n-grams fill and whose runs fit in
    /// `disk_room` bytes; `fixed` parts instead, when forced.
    pub fn new(sieve_tokens: u64, disk_room: u64, fixed: Option<usize>, lexicon: &Lexicon) -> Self {
        PartPlan {
            rest: Some(FirstWords::ALL),
            done: 0,
            fixed: fixed.map(|p| FirstWords::split(lexicon, p)),
            sieve_tokens: sieve_tokens.max(1),
            disk_room: disk_room.max(1),
            last_room: disk_room.max(1),
            rate: FIRST_RATE,
            counting: 0,
        }
    }

    /// The plan, for a count known to sort `sorted` n-grams of `tokens`
    /// tokens (a sieve filled already says how many it lets through): its
    /// first part is planned at their run bytes instead of the guess.
    pub fn sorting(mut self, sorted: u64, tokens: u64) -> Self {
        if tokens > 0 {
            self.rate = sorted as f64 * RUN_BYTES_PER_SORTED * RATE_MARGIN / tokens as f64;
        }
        self
    }

    /// The plan, guessing `rate` run bytes per token for its first part.
    pub fn guessing(mut self, rate: f64) -> Self {
        self.rate = rate;
        self
    }

    /// The plan, for a count whose last part may write `last_room` bytes of
    /// runs (the room the word streams leave as that part reads them, and
    /// their own), when the sieve takes all that is left.
    pub fn last_within(mut self, last_room: u64) -> Self {
        self.last_room = last_room.max(self.disk_room);
        self
    }

    /// The next part, and how many the plan now expects in all; `None` when every part is counted.
    pub fn next(&mut self, lexicon: &Lexicon) -> Option<(FirstWords, usize)> {
        if let Some(fixed) = &self.fixed {
            let part = *fixed.get(self.done)?;
            self.done += 1;
            self.counting = part.tokens(lexicon);
            return Some((part, fixed.len()));
        }
        let rest = self.rest?;
        let tokens = rest.tokens(lexicon);
        if tokens <= self.sieve_tokens && tokens as f64 * self.rate <= self.last_room as f64 {
            // The rest fits as the last part.
            self.rest = None;
            self.done += 1;
            self.counting = tokens;
            return Some((rest, self.done));
        }
        let by_disk = (self.disk_room as f64 / self.rate).max(1.0) as u64;
        let per_part = self.sieve_tokens.min(by_disk).max(1);
        let parts = tokens.div_ceil(per_part).clamp(1, MAX_PARTS.saturating_sub(self.done).max(1) as u64) as usize;
        let pieces = rest.split_by(lexicon, parts);
        let part = pieces[0];
        self.rest = pieces.get(1).map(|next| FirstWords { start: next.start, end: rest.end });
        self.done += 1;
        self.counting = part.tokens(lexicon);
        Some((part, self.done + pieces.len() - 1))
    }

    /// The part just planned wrote `run_bytes` of runs.
    pub fn counted(&mut self, run_bytes: u64) {
        if self.counting > 0 {
            let rate = run_bytes as f64 / self.counting as f64 * RATE_MARGIN;
            self.rate = if self.done == 1 { rate } else { self.rate.max(rate) };
        }
    }

    /// The rooms of the parts still to plan: files the parts before left on
    /// disk (an index part) take room from the parts after them.
    pub fn within(&mut self, rooms: DiskRooms) {
        self.disk_room = rooms.part().max(1);
        self.last_room = rooms.last().max(self.disk_room);
    }
}

/// Room on disk a count in parts gives one part's runs at least, however
/// little text there is: below it, more parts would cost time and save
/// nothing that matters.
pub(crate) const MIN_DISK_ROOM: u64 = 64 << 20;

/// The room on disk of a count in parts: what the files beside a part's
/// runs leave of the text's share (`--tmp-share`), at least
/// [`MIN_DISK_ROOM`]; or the room [`crate::Limits::disk_room`] forces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DiskRooms {
    share: u64,
    /// The share less the files that stay on disk through every part.
    last: u64,
    /// That less the word streams, which the last part gives back as it reads them.
    part: u64,
    forced: Option<u64>,
}

impl DiskRooms {
    /// The rooms in `share` bytes beside `streams` bytes of word streams and
    /// `kept` bytes of files that stay on disk.
    pub fn new(share: u64, streams: u64, kept: u64, forced: Option<u64>) -> Self {
        let last = share.saturating_sub(kept);
        DiskRooms { share, last, part: last.saturating_sub(streams), forced }
    }

    /// Whether what stays on disk leaves a part's runs a quarter of the
    /// share or more: with less, the share cannot be kept without a number
    /// of parts (each a read of the streams) that would cost more than the
    /// disk it saves.
    pub fn worth_parts(&self) -> bool {
        self.forced.is_some() || self.part >= self.share / 4
    }

    /// Bytes a part's runs may take beside the word streams.
    pub fn part(&self) -> u64 {
        self.forced.unwrap_or(self.part.max(MIN_DISK_ROOM))
    }

    /// Bytes the last part's runs may take: the streams' room as it gives it back.
    pub fn last(&self) -> u64 {
        self.forced.unwrap_or(self.last.max(MIN_DISK_ROOM))
    }

    /// `bytes` more now stay on disk (a part's index, kept for the passes after the count).
    pub fn keep(&mut self, bytes: u64) {
        self.last = self.last.saturating_sub(bytes);
        self.part = self.part.saturating_sub(bytes);
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
    /// The first words whose n-grams these keys are.
    first: FirstWords,
}

impl<const L: usize> KeyRange<L> {
    /// Every key.
    pub const ALL: KeyRange<L> = KeyRange { start: None, end: None, first: FirstWords::ALL };

    /// The keys of `part`'s n-grams; its IDs must fit the layout.
    pub fn new(part: FirstWords, layout: KeyLayout) -> Self {
        let bound = |first: u32| {
            let mut ids = vec![0u32; layout.n()];
            ids[0] = first;
            layout.pack::<L>(&ids)
        };
        KeyRange { start: (part.start > 0).then(|| bound(part.start)), end: part.end.map(bound), first: part }
    }

    /// The first words whose n-grams these keys are.
    pub fn first_words(&self) -> FirstWords {
        self.first
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
    fn a_lexicon_held_in_part_splits_as_one_held_whole() {
        let words: Vec<(String, u64)> = (0..3000).map(|i| (format!("w{i}"), 2 + (i * i % 97) as u64)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let held = lexicon(&words);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.lex");
        held.save(&path).unwrap();
        for bytes in [0, 500, 40_000] {
            let limited =
                Lexicon::load_limited(&path, dupgram_lexicon::Scope::Repeated, bytes, &mut |_, _| Ok(())).unwrap();
            assert_eq!(limited.len(), held.len());
            for parts in 1..20 {
                assert_eq!(
                    FirstWords::split(&limited, parts),
                    FirstWords::split(&held, parts),
                    "{bytes} bytes, {parts} parts"
                );
                let inner = FirstWords { start: 17, end: Some(2500) };
                assert_eq!(inner.split_by(&limited, parts), inner.split_by(&held, parts));
                assert_eq!(inner.tokens(&limited), (17..2500).map(|id| held.count(id)).sum::<u64>());
            }
        }
    }

    #[test]
    fn a_plan_makes_parts_that_fit_the_sieve_and_then_the_disk_measured() {
        let words: Vec<(String, u64)> = (0..1000).map(|i| (format!("w{i}"), 10)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let lex = lexicon(&words);
        // The sieve takes 2,500 n-grams: four parts, whatever the disk.
        let mut plan = PartPlan::new(2500, u64::MAX / 8, None, &lex);
        let mut seen = Vec::new();
        while let Some((part, all)) = plan.next(&lex) {
            assert_eq!(all, 4);
            seen.push(part);
            plan.counted(0);
        }
        assert_eq!(seen, FirstWords::split(&lex, 4));
        // A disk room of 4,000 bytes, guessed at 4 bytes a token: parts of
        // 1,000 tokens, until the first measures 1 byte a token.
        let mut plan = PartPlan::new(u64::MAX, 4000, None, &lex);
        let (first, all) = plan.next(&lex).unwrap();
        assert_eq!((first.tokens(&lex), all), (1000, 10));
        plan.counted(1000);
        let (second, all) = plan.next(&lex).unwrap();
        assert_eq!((second.start, all), (first.end.unwrap(), 4));
        let mut covered = first.tokens(&lex) + second.tokens(&lex);
        let mut last = second;
        while let Some((part, _)) = plan.next(&lex) {
            assert_eq!(part.start, last.end.unwrap());
            covered += part.tokens(&lex);
            last = part;
            plan.counted(part.tokens(&lex));
        }
        assert_eq!((covered, last.end), (10_000, None));
    }

    #[test]
    fn what_stays_on_disk_takes_room_from_the_parts_after_it() {
        let words: Vec<(String, u64)> = (0..1000).map(|i| (format!("w{i}"), 10)).collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let lex = lexicon(&words);
        // A share of 1 GiB: 256 MiB of streams and 128 MiB of other files
        // leave 640 MiB for a part's runs, and 896 MiB for the last one's.
        let mut rooms = DiskRooms::new(1 << 30, 256 << 20, 128 << 20, None);
        assert!(rooms.worth_parts());
        assert_eq!((rooms.part(), rooms.last()), (640 << 20, 896 << 20));
        // At a byte a token, 10,000 tokens fit as one part...
        let mut plan = PartPlan::new(u64::MAX, rooms.part(), None, &lex).guessing(1.0).last_within(rooms.last());
        let (part, all) = plan.next(&lex).unwrap();
        assert_eq!((part, all), (FirstWords::ALL, 1));
        // ...but at a MiB a token, the first part takes at most 640 tokens,
        // and each part after an index of 512 MiB has 128 MiB to its runs.
        let mut plan = PartPlan::new(u64::MAX, rooms.part(), None, &lex).guessing(1048576.0).last_within(rooms.last());
        let (first, _) = plan.next(&lex).unwrap();
        assert!((600..=640).contains(&first.tokens(&lex)), "{} tokens", first.tokens(&lex));
        plan.counted(first.tokens(&lex) << 20);
        rooms.keep(512 << 20);
        plan.within(rooms);
        let (second, all) = plan.next(&lex).unwrap();
        assert!(
            second.tokens(&lex) < first.tokens(&lex) / 4,
            "{} tokens after {}",
            second.tokens(&lex),
            first.tokens(&lex)
        );
        assert!(all > 10, "{all} parts");
        // Streams and kept files past three quarters of the share: no parts for the disk.
        assert!(!DiskRooms::new(1 << 30, 600 << 20, 200 << 20, None).worth_parts());
        // A room below the floor is the floor; a forced room is what it is.
        assert_eq!(DiskRooms::new(1 << 20, 0, 0, None).part(), MIN_DISK_ROOM);
        assert_eq!(DiskRooms::new(1 << 30, 0, 2 << 30, Some(7)).part(), 7);
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
