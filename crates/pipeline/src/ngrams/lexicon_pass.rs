//! The lexicon pass: every token read once, its word counted, its first-seen
//! ID written to the worker's word stream, and every n-gram's fingerprint
//! dropped into the sieve when it is filled here.
//!
//! Each worker tokenises its batches into a [`TokenBuffer`] and hands the
//! words over every [`HAND_OVER_WORDS`]: those its [`WordCache`] holds are
//! counted there, the rest in the shared [`LexiconBuilder`] under its lock.
//! At each hand-over the [`LexiconBudget`] sees that the vocabulary still
//! fits: it halves or drops the sieve, or freezes the table (the words it
//! does not hold go to the worker's [`OverflowLog`]), or stops the job.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use dupgram_corpus::{Batch, Input, ReadStats};
use dupgram_lexicon::stream::{END_OF_DOCUMENT, EPOCH_END, FIRST_WORD, OVERFLOW, SLOT};
use dupgram_lexicon::{LexiconBuilder, Seen, Tokenizer, WordCache, word_hash};
use dupgram_sieve::{InsertLine, RollingFingerprint, Sieve};
use dupgram_vocab::{OverflowLog, OverflowRuns};

use super::{Job, MIN_SIEVE_BYTES, NgramStats, SharedSieve};
use crate::doc_ids::{IdsKept, ListedIds};
use crate::first_words::parts_for;
use crate::words::{WordsFile, WordsOut};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::feed::{BatchWorker, feed};
use dupgram_jobkit::memory::{MemoryPlan, ZstdNeed, human_bytes};

type SieveGuard<'a> = std::sync::RwLockReadGuard<'a, Option<Sieve>>;

/// The shared sieve, held for reading (filling is reading: its cells are atomics).
fn read_sieve(sieve: &SharedSieve) -> Result<SieveGuard<'_>, PipelineError> {
    sieve.read().map_err(|_| PipelineError::Usage("sieve lock poisoned".into()))
}

/// The shared lexicon, locked: a worker counts there the words its cache does not hold.
fn lock_lexicon(lexicon: &Mutex<LexiconBuilder>) -> Result<MutexGuard<'_, LexiconBuilder>, PipelineError> {
    lexicon.lock().map_err(|_| PipelineError::Usage("lexicon lock poisoned".into()))
}

impl Job<'_> {
    /// Counts the words of `inputs`, and does what `kind` says besides.
    pub(super) fn lexicon_pass(
        &self,
        inputs: &[Input],
        sieve: &SharedSieve,
        kind: LexiconPassKind,
        stats: &mut NgramStats,
    ) -> Result<LexiconPass, PipelineError> {
        let LexiconPassKind { fused, streams, documents, ids, may_halve, words_past_table } = kind;
        // Words past the table's room are logged: with their places when
        // the streams need them, else as words to be counted.
        let may_freeze = streams || words_past_table;
        let config = self.config;
        self.control.start_pass("lexicon", self.total_input_bytes());
        // Each worker's cache takes at most 1/64 of the working memory.
        let cache_slots =
            (self.plan.working() as usize / 64 / config.threads / WordCache::SLOT_BYTES).clamp(1 << 8, 1 << 18);
        let per_worker = LEXICON_WORKER_BYTES + (cache_slots * WordCache::SLOT_BYTES) as u64;
        let working = self.plan.working().saturating_sub(config.threads as u64 * per_worker);
        let overflow = working / OVERFLOW_SHARE;
        let log_memory = (overflow + self.idle_until_numbering(working, overflow, sieve, kind)) / config.threads as u64;
        let budget = LexiconBudget {
            working,
            may_halve,
            may_freeze,
            overflow,
            word_limit: config.limits.table_words,
            threads: config.threads,
            dropped_sieve: std::sync::OnceLock::new(),
            halvings: std::sync::atomic::AtomicU32::new(0),
            documents: AtomicU64::new(0),
            listed: AtomicU64::new(0),
            per_document: documents.unwrap_or(0),
            index_working: self.plan.working(),
            zstd: self.plan.zstd_need(),
            budget: human_bytes(config.memory),
        };
        let shared = Mutex::new(LexiconBuilder::new(config.stopwords.iter().cloned()));
        let stoplist: HashSet<String> = config.stopwords.iter().cloned().collect();
        let mut workers = Vec::with_capacity(config.threads);
        for worker in 0..config.threads {
            workers.push(LexiconWorker {
                tokenizer: Tokenizer::new(config.norm),
                words: TokenBuffer::default(),
                stoplist: &stoplist,
                lexicon: &shared,
                roll: (fused && config.sieve).then(|| RollingFingerprint::new(config.n)),
                line: InsertLine::default(),
                sieve,
                budget: &budget,
                stream: if streams { Some(WordsOut::create(self.work, worker)?) } else { None },
                codes: Vec::new(),
                cache: WordCache::new(cache_slots),
                misses: Vec::new(),
                docs: documents.map(|_| ids.list(self.work, worker).map(StreamDocs::new)).transpose()?,
                docs_reported: 0,
                docs_listed: 0,
                overflow: may_freeze.then(|| {
                    if streams {
                        OverflowLog::new(self.work, worker, log_memory).with_epoch_slots(config.limits.epoch_slots)
                    } else {
                        OverflowLog::words_only(self.work, worker, log_memory)
                    }
                }),
                overflowed: Vec::new(),
            });
        }
        let options = self.read_options();
        let (outputs, read) = feed(workers, &self.source(inputs, &options), self.control)?;
        // The workers' dictionaries and sort buffers are freed, in their threads' arenas:
        // the passes after this one plan on that memory.
        dupgram_jobkit::memory::return_freed_memory();
        if let Some(why) = budget.dropped_sieve.get() {
            stats.sieve.dropped = Some(why.clone());
        }
        stats.sieve.halvings = budget.halvings.into_inner();
        let builder = shared.into_inner().map_err(|_| PipelineError::Usage("lexicon lock poisoned".into()))?;
        stats.long_tokens = outputs.iter().map(|w| w.long_tokens).sum();
        stats.tokens = builder.tokens();
        let mut pass = LexiconPass {
            builder,
            read,
            streams: Vec::new(),
            documents: Vec::new(),
            overflow: Vec::new(),
            sieve_again: outputs.iter().map(|w| w.sieve_again).sum(),
        };
        for w in outputs {
            pass.streams.extend(w.stream);
            pass.documents.extend(w.documents);
            pass.overflow.extend(w.overflow.filter(|o| !o.is_empty()));
        }
        Ok(pass)
    }

    /// Memory the overflow logs may take besides their reserve: the table
    /// takes at most two fifths of what the sieve and that reserve leave
    /// (see [`LexiconBudget::check`]), and the other three fifths wait for
    /// the numbering after the pass, when the logs are spilled and gone.
    /// Words go past the table only once it is frozen, so until then the
    /// logs hold nothing: half of those three fifths go to them, their
    /// dictionaries of words past the table above all (longer epochs: on
    /// copies of the Reddit comments, 30-40 % fewer records to sort and
    /// a fifth less disk at the peak). Not when the workers keep document
    /// lists, which grow into that room as the pass goes on.
    fn idle_until_numbering(&self, working: u64, overflow: u64, sieve: &SharedSieve, kind: LexiconPassKind) -> u64 {
        if !kind.streams || kind.documents.is_some() {
            return 0;
        }
        let sieve_bytes = sieve.read().map_or(0, |s| s.as_ref().map_or(0, |s| s.bytes() as u64));
        working.saturating_sub(sieve_bytes + overflow) * 3 / 10
    }
}

/// What a lexicon pass leaves.
pub(super) struct LexiconPass {
    pub builder: LexiconBuilder,
    pub read: ReadStats,
    /// The word streams, one per worker, when written.
    pub streams: Vec<WordsFile>,
    /// Each stream's documents, when listed.
    pub documents: Vec<StreamDocs>,
    /// The overflow logs of the streams that had overflow tokens.
    pub overflow: Vec<OverflowRuns>,
    /// Insertions into the sieve that found their slot seen already ([`Sieve::passing`]).
    pub sieve_again: u64,
}

/// What one lexicon-pass worker leaves.
struct LexiconWorkerOutput {
    long_tokens: u64,
    sieve_again: u64,
    stream: Option<WordsFile>,
    documents: Option<StreamDocs>,
    overflow: Option<OverflowRuns>,
}

/// What a lexicon pass does besides counting words.
#[derive(Debug, Clone, Copy)]
pub(super) struct LexiconPassKind {
    /// Fill the sieve with every n-gram's fingerprint.
    pub fused: bool,
    /// Each worker writes the first-seen IDs of its tokens to a word stream
    /// in the work directory.
    pub streams: bool,
    /// Each worker lists the documents of its stream (see [`StreamDocs`]),
    /// for an index that holds this many bytes a document beside the list
    /// for the whole job: the pass stops as soon as the documents listed
    /// are more than the index could hold.
    pub documents: Option<u64>,
    /// Where the listed documents' IDs are kept.
    pub ids: IdsKept,
    /// The sieve may halve to make room for the vocabulary (else it goes).
    pub may_halve: bool,
    /// Without streams: the table may freeze all the same, the words past
    /// it counted in words-only overflow logs (a Slurm lexicon task's).
    pub words_past_table: bool,
}

/// The lexicon pass's share of memory, watched as the vocabulary grows.
struct LexiconBudget {
    /// The working memory; the vocabulary may take half of what the sieve leaves.
    working: u64,
    /// Whether the sieve may shrink (by halves) to make room, rather than go
    /// at once: not when tasks of one job must all have sieves of one size.
    may_halve: bool,
    /// Whether the table may stop taking words when it has no more room
    /// ([`LexiconBuilder::freeze`]): only when the workers write word
    /// streams, whose overflow tokens their logs resolve afterwards.
    may_freeze: bool,
    /// Bytes set aside for the workers' overflow logs.
    overflow: u64,
    /// Freeze at this many words whatever the memory ([`super::Limits::table_words`]).
    word_limit: Option<usize>,
    /// Workers handing words over.
    threads: usize,
    dropped_sieve: std::sync::OnceLock<String>,
    halvings: std::sync::atomic::AtomicU32,
    /// Bytes of the workers' document lists, which share the vocabulary's room.
    documents: AtomicU64,
    /// Documents the workers listed.
    listed: AtomicU64,
    /// Bytes the index holds a document beside its list, after this pass
    /// (when the word table is gone).
    per_document: u64,
    /// The working memory the index plans in.
    index_working: u64,
    /// The job's zstd need, for the budget a refusal names.
    zstd: ZstdNeed,
    budget: String,
}

impl LexiconBudget {
    /// Drops the sieve once the corpus has more n-grams than it takes (read
    /// from standard input, the corpus's size was not known when it was
    /// made): it would be dropped at the end of the pass anyway, for a count
    /// in parts, and its memory is the vocabulary's meanwhile.
    fn drop_outgrown_sieve(&self, tokens: u64, sieve: &SharedSieve) {
        // Tasks of one job keep their sieves, which add up to the job's.
        if !self.may_halve {
            return;
        }
        let outgrown = sieve.read().is_ok_and(|s| s.as_ref().is_some_and(|s| parts_for(tokens, s.capacity()) > 1));
        if outgrown && let Ok(mut guard) = sieve.write() {
            *guard = None;
            let _ = self.dropped_sieve.set("the corpus outgrew it: counted in parts instead".into());
        }
    }

    /// Fails once the documents listed so far are more than the index
    /// could hold in its working memory (with a sixteenth's margin: the two
    /// plans are made at different times), whatever the rest of the corpus:
    /// the index pass would refuse them after this whole pass.
    fn check_documents(&self) -> Result<(), PipelineError> {
        let held = self.held_for_documents();
        if self.per_document == 0 || held <= self.index_working + self.index_working / 16 {
            return Ok(());
        }
        Err(PipelineError::Memory {
            budget: self.budget.clone(),
            what: self.documents_need_room(held, "leaves no room for their index"),
        })
    }

    /// The bytes the documents listed so far take: their lists, and the index's for them.
    fn held_for_documents(&self) -> u64 {
        self.documents.load(Ordering::Relaxed) + self.listed.load(Ordering::Relaxed) * self.per_document
    }

    /// Why the documents listed so far, whose lists and index take `held`
    /// bytes, leave no room (for `what`), and the budget they alone need
    /// (the corpus's rest needs more).
    fn documents_need_room(&self, held: u64, what: &str) -> String {
        let listed = self.listed.load(Ordering::Relaxed);
        // The index's table and lists, postings a quarter of that again.
        let least = MemoryPlan::least_budget_for(held / 4 * 5, self.threads, self.zstd);
        format!(
            "the list of the first {listed} documents ({}, held for the whole job) {what}: those documents \
             alone need --memory {}M or more (the rest of the corpus adds to it)",
            human_bytes(held),
            least >> 20
        )
    }
}

/// What the vocabulary's growth asks of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableRoom {
    /// Room to grow.
    Grow,
    /// No room: take no new words (they go to the overflow logs).
    Freeze,
}

impl LexiconBudget {
    /// Whether the table may still grow. When the vocabulary needs the
    /// room the sieve holds, the table is frozen if it may be (words it
    /// does not hold go to the overflow logs, and the sieve keeps its
    /// size); else the sieve is halved (or dropped), and the job fails when
    /// even no sieve is not enough.
    fn check(&self, bytes: u64, words: usize, tokens: u64, sieve: &SharedSieve) -> Result<TableRoom, PipelineError> {
        self.drop_outgrown_sieve(tokens, sieve);
        // Numbering the words needs about as much again as counting them
        // (their ranking), and a tenth more (what each first-seen ID
        // becomes); when the table may freeze, two fifths of the room leave
        // that and the overflow's sorts their share. The workers' document
        // lists (see `StreamDocs`) take their bytes once.
        let documents = self.documents.load(Ordering::Relaxed);
        let reserve = if self.may_freeze { self.overflow } else { 0 };
        let share = if self.may_freeze { 5 } else { 4 };
        let room = |sieve_bytes: u64| self.working.saturating_sub(sieve_bytes + documents + reserve) * 2 / share;
        let sieve_bytes = sieve.read().map_or(0, |s| s.as_ref().map_or(0, |s| s.bytes() as u64));
        if self.may_freeze && self.word_limit.is_some_and(|limit| words >= limit) {
            return Ok(TableRoom::Freeze);
        }
        if bytes <= room(sieve_bytes) {
            return Ok(TableRoom::Grow);
        }
        if self.may_freeze && bytes <= self.working.saturating_sub(sieve_bytes + documents + reserve) {
            // Frozen as it stands, which its growth foreseen leaves within the memory.
            return Ok(TableRoom::Freeze);
        }
        if sieve_bytes > 0
            && let Ok(mut guard) = sieve.write()
        {
            while let Some(s) = guard.as_mut() {
                if bytes <= room(s.bytes() as u64) {
                    break;
                }
                if self.may_halve && s.bytes() >= 2 * MIN_SIEVE_BYTES && s.halve() {
                    self.halvings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    continue;
                }
                *guard = None;
                let _ = self
                    .dropped_sieve
                    .set(format!("the vocabulary needed its memory ({} for {words}+ words)", human_bytes(bytes)));
            }
        }
        let without_sieve = room(0);
        if bytes > without_sieve {
            return Err(PipelineError::Memory {
                budget: self.budget.clone(),
                what: if self.may_freeze && documents > 0 {
                    self.documents_need_room(self.held_for_documents(), "leaves the words no room")
                } else {
                    format!("the vocabulary alone outgrew {} after {words} distinct words", human_bytes(without_sieve))
                },
            });
        }
        Ok(if self.may_freeze { TableRoom::Freeze } else { TableRoom::Grow })
    }
}

/// The words of one batch, gathered so the shared lexicon is locked once per batch.
#[derive(Default)]
struct TokenBuffer {
    bytes: Vec<u8>,
    /// (end in `bytes`, word hash) of each word; [`DOCUMENT_END`] marks where
    /// a document ends (only when the worker writes a word stream).
    words: Vec<(u32, u64)>,
    stop_tokens: u64,
}

/// The end of a document among a [`TokenBuffer`]'s words.
const DOCUMENT_END: (u32, u64) = (u32::MAX, 0);

struct LexiconWorker<'a> {
    tokenizer: Tokenizer,
    words: TokenBuffer,
    stoplist: &'a HashSet<String>,
    lexicon: &'a Mutex<LexiconBuilder>,
    /// Present when the sieve is filled in this pass.
    roll: Option<RollingFingerprint>,
    line: InsertLine,
    sieve: &'a SharedSieve,
    budget: &'a LexiconBudget,
    /// Where the first-seen IDs of the worker's tokens go, if anywhere.
    stream: Option<WordsOut>,
    /// A batch's stream codes (see [`dupgram_lexicon::stream`]): the end of a
    /// document, a first-seen ID, a slot of the overflow or an epoch's end.
    codes: Vec<u32>,
    /// The words this worker met last, counted without the lexicon's lock.
    cache: WordCache,
    /// The buffered words the cache did not hold: (start, end) in the token
    /// buffer, hash, and where the word's code goes.
    misses: Vec<(u32, u32, u64, usize)>,
    /// The documents of this worker's stream, when listed.
    docs: Option<StreamDocs>,
    /// The bytes of `docs` already added to the budget's count.
    docs_reported: u64,
    /// The documents of `docs` already added to the budget's count.
    docs_listed: u64,
    /// Where the stream's overflow tokens go (words met after the table was frozen).
    overflow: Option<OverflowLog>,
    /// The buffered words the frozen table does not hold: (start, end) in
    /// the token buffer, hash, and where the word's code goes.
    overflowed: Vec<(u32, u32, u64, usize)>,
}

/// Text tokenised between two looks at how full a worker's [`TokenBuffer`] is.
const FEED_BYTES: usize = 8 << 10;

/// A worker hands its words to the shared lexicon once it holds this many
/// (or [`HAND_OVER_BYTES`] of them), not only at the end of a batch: a batch
/// may be one record of millions of words, and a buffer of a whole record
/// (about 16 bytes a token) is memory the plan has not counted.
const HAND_OVER_WORDS: usize = 4 << 10;
/// How many words ahead a worker asks for the cache lines its look-ups
/// (in its word cache, then in the shared table) will touch: far enough
/// for the line to arrive, near enough that it is still there.
const LOOK_AHEAD: usize = 12;
/// How many words ahead the overflow dictionary's look-ups begin: three
/// loads, each of which names the next line (cell, entry, bytes), so each
/// step must find its line arrived. Eight words apart, not four: two
/// copies of the Reddit comments with their own word forms (90M tokens past
/// the table), lexicon pass 15.2 -> 14.7 s, medians of 5 and 8 runs (sixteen apart:
/// 14.9 s, 3 runs).
const OVERFLOW_LOOK_AHEAD: usize = 24;
/// Bytes a new word brings to the arena, on average, as the table's growth is foreseen.
const AVERAGE_WORD_BYTES: usize = 16;
const HAND_OVER_BYTES: usize = 32 << 10;

/// What one lexicon-pass worker may hold besides its batch and its word
/// cache, at most: a full buffer plus the words of one more [`FEED_BYTES`]
/// of text (a word per two bytes at most), at 16 bytes a word, 4 a stream
/// code and 24 a cache miss, and their bytes.
const LEXICON_WORKER_BYTES: u64 = ((HAND_OVER_WORDS + FEED_BYTES / 2) * 44 + HAND_OVER_BYTES + FEED_BYTES) as u64;

impl LexiconWorker<'_> {
    /// Tokenises `text`, the next part of a piece of a document (`last`: the
    /// document ends with it), into the buffer, and into `sieve` when it is
    /// filled here. The sieve's insertions stay in flight across documents
    /// (a comment of a dozen words has too few n-grams to hide a cache miss
    /// behind the others); [`settle`](Self::settle) finishes them.
    fn tokenise(&mut self, sieve: Option<&Sieve>, text: &str, last: bool) {
        let (words, roll, line, stoplist) = (&mut self.words, &mut self.roll, &mut self.line, self.stoplist);
        let mut emit = |w: &str| {
            if !stoplist.is_empty() && stoplist.contains(w) {
                words.stop_tokens += 1;
                return;
            }
            let h = word_hash(w.as_bytes());
            words.bytes.extend_from_slice(w.as_bytes());
            words.words.push((words.bytes.len() as u32, h));
            if let (Some(r), Some(s)) = (roll.as_mut(), sieve)
                && let Some(fp) = r.push(h)
            {
                s.insert_delayed(line, fp);
            }
        };
        self.tokenizer.feed(text, &mut emit);
        if last {
            self.tokenizer.finish(&mut emit);
            if let Some(r) = self.roll.as_mut() {
                r.reset();
            }
            if self.stream.is_some() {
                self.words.words.push(DOCUMENT_END);
            }
        }
    }

    /// Finishes the sieve insertions still in flight and lets the sieve go:
    /// once its guard is dropped it may be halved or dropped (at a hand-over).
    fn settle(&mut self, guard: SieveGuard<'_>) {
        if let Some(s) = guard.as_ref() {
            s.flush(&mut self.line);
        }
    }

    fn is_full(&self) -> bool {
        self.words.words.len() >= HAND_OVER_WORDS || self.words.bytes.len() >= HAND_OVER_BYTES
    }

    /// Counts the buffered words (and writes their codes to the word
    /// stream), empties the buffer, and sees that the vocabulary still fits.
    fn hand_over(&mut self) -> Result<(), PipelineError> {
        let (bytes, words, tokens) = self.count_words()?;
        if let Some(stream) = self.stream.as_mut() {
            stream.codes(&self.codes)?;
            self.codes.clear();
        }
        self.words.bytes.clear();
        self.words.words.clear();
        self.words.stop_tokens = 0;
        let (docs, listed) = self.docs.as_ref().map_or((0, 0), |d| (d.heap_bytes(), d.listed));
        let grown = docs.saturating_sub(self.docs_reported);
        self.docs_reported = docs;
        self.budget.documents.fetch_add(grown, Ordering::Relaxed);
        self.budget.listed.fetch_add(listed - self.docs_listed, Ordering::Relaxed);
        self.docs_listed = listed;
        self.budget.check_documents()?;
        if self.budget.check(bytes, words, tokens, self.sieve)? == TableRoom::Freeze {
            let mut lexicon = lock_lexicon(self.lexicon)?;
            lexicon.freeze();
        }
        Ok(())
    }

    /// Counts the buffered words: those in the worker's cache there, the
    /// others in the shared lexicon, under its lock, and those the frozen
    /// lexicon does not hold in the worker's overflow log; their stream
    /// codes go to `codes` in token order. Returns the bytes the vocabulary
    /// holds (the lexicon's and this worker's cache), the distinct words and the tokens so far.
    fn count_words(&mut self) -> Result<(u64, usize, u64), PipelineError> {
        let streaming = self.stream.is_some();
        let mut start = 0u32;
        for (i, &(end, hash)) in self.words.words.iter().enumerate() {
            if let Some(&(_, ahead)) = self.words.words.get(i + LOOK_AHEAD) {
                self.cache.prefetch(ahead);
            }
            if (end, hash) == DOCUMENT_END {
                self.codes.push(END_OF_DOCUMENT);
                continue;
            }
            match self.cache.hit(&self.words.bytes[start as usize..end as usize], hash) {
                Some(Seen::Word(id)) if streaming => self.codes.push(id + FIRST_WORD),
                Some(Seen::Overflow) => {
                    // Frozen out of the table: logged below, with the misses that are, in token order.
                    self.overflowed.push((start, end, hash, self.codes.len()));
                    if streaming {
                        self.codes.push(OVERFLOW);
                    }
                }
                Some(_) => {}
                None => {
                    self.misses.push((start, end, hash, self.codes.len()));
                    if streaming {
                        self.codes.push(STOP_CODE);
                    }
                }
            }
            start = end;
        }
        let mut lexicon = lock_lexicon(self.lexicon)?;
        let mut stops = false;
        let cached_overflow = self.overflowed.len();
        for (i, &(start, end, hash, at)) in self.misses.iter().enumerate() {
            if let Some(&(_, _, ahead, _)) = self.misses.get(i + LOOK_AHEAD) {
                lexicon.prefetch(ahead);
                if let Some(displaced) = self.cache.displaced(ahead) {
                    lexicon.prefetch(displaced);
                }
            }
            let seen = self.cache.miss(&mut lexicon, &self.words.bytes[start as usize..end as usize], hash);
            if seen == Seen::Overflow {
                self.overflowed.push((start, end, hash, at));
            }
            if streaming {
                self.codes[at] = match seen {
                    Seen::Word(id) => id + FIRST_WORD,
                    Seen::Stop => {
                        stops = true;
                        STOP_CODE
                    }
                    Seen::Overflow => OVERFLOW,
                };
            }
        }
        lexicon.add_stop_tokens(self.words.stop_tokens);
        // The cache's overflow hits never reached the table.
        lexicon.add_overflow_tokens(cached_overflow as u64);
        // What the table would hold if the words a hand-over may bring grew it
        // (the other workers' too, before the next look): it must be frozen before that growth.
        let after = if self.budget.may_freeze {
            let margin = HAND_OVER_WORDS * self.budget.threads;
            lexicon.heap_bytes_after(margin, margin * AVERAGE_WORD_BYTES)
        } else {
            lexicon.heap_bytes()
        };
        let seen = (after as u64 + self.cache.heap_bytes() as u64, lexicon.len(), lexicon.tokens());
        drop(lexicon);
        // Logged outside the lock (a log that fills sorts and writes a run), in token order.
        if cached_overflow > 0 && cached_overflow < self.overflowed.len() {
            self.overflowed.sort_unstable_by_key(|&(_, _, _, at)| at);
        }
        if let Some(log) = self.overflow.as_mut() {
            let mut ended = Vec::new();
            for (i, &(start, end, hash, at)) in self.overflowed.iter().enumerate() {
                // The dictionary's cell, entry and bytes, asked for in turn as the token comes nearer.
                for (step, ahead) in
                    [OVERFLOW_LOOK_AHEAD, 2 * OVERFLOW_LOOK_AHEAD / 3, OVERFLOW_LOOK_AHEAD / 3].into_iter().enumerate()
                {
                    if let Some(&(_, _, hash, _)) = self.overflowed.get(i + ahead) {
                        log.prefetch(hash, step as u8);
                    }
                }
                let slotted = log.push(&self.words.bytes[start as usize..end as usize], hash)?;
                if streaming {
                    self.codes[at] = SLOT | slotted.slot;
                    ended.extend(slotted.ended.map(|slots| (at, slots)));
                }
            }
            if !ended.is_empty() {
                // An epoch ended (rarely: once per dictionary filled): its end goes before the token that began the next.
                self.codes = with_epoch_ends(&self.codes, &ended);
            }
        }
        self.overflowed.clear();
        self.misses.clear();
        if stops {
            // A word the lexicon counts as a stop word has no code.
            self.codes.retain(|&c| c != STOP_CODE);
        }
        Ok(seen)
    }
}

/// The documents one lexicon-pass worker read, in the order of its word
/// stream (a document's pieces all go to one worker, so its stream holds
/// whole documents, each ended by a code of its own): what a pass over the
/// streams numbers and names them by.
#[derive(Debug, Default)]
pub(crate) struct StreamDocs {
    /// The documents' numbers in the corpus, increasing, as runs of
    /// consecutive numbers (first, count): a batch's documents are consecutive.
    pub runs: Vec<(u64, u64)>,
    /// The documents listed.
    pub listed: u64,
    /// Their IDs, when the job keeps them (see [`crate::doc_ids`]).
    pub ids: ListedIds,
}

impl StreamDocs {
    pub(crate) fn new(ids: ListedIds) -> Self {
        StreamDocs { runs: Vec::new(), listed: 0, ids }
    }

    pub(crate) fn push(&mut self, number: u64, id: &str) -> Result<(), PipelineError> {
        match self.runs.last_mut() {
            Some((first, count)) if *first + *count == number => *count += 1,
            _ => self.runs.push((number, 1)),
        }
        self.listed += 1;
        self.ids.push(id)
    }

    /// The documents, in stream order.
    pub fn len(&self) -> usize {
        self.listed as usize
    }

    /// The documents' numbers, in stream order.
    pub fn numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(|&(first, count)| first..first + count)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        self.runs.capacity() as u64 * 16 + self.ids.heap_bytes()
    }
}

/// A stream code no word has: marks a stop word's place until it is dropped.
const STOP_CODE: u32 = u32::MAX;

/// `codes` with the end of an epoch of `slots` slots before the code at
/// `at`, for each `(at, slots)` of `ended` (in increasing `at`).
fn with_epoch_ends(codes: &[u32], ended: &[(usize, u32)]) -> Vec<u32> {
    let mut out = Vec::with_capacity(codes.len() + ended.len());
    let mut from = 0;
    for &(at, slots) in ended {
        out.extend_from_slice(&codes[from..at]);
        out.push(EPOCH_END | slots);
        from = at;
    }
    out.extend_from_slice(&codes[from..]);
    out
}

/// The overflow logs of all workers take this share of the lexicon pass's
/// working memory (one over it), set aside from the table's room.
const OVERFLOW_SHARE: u64 = 16;

/// The length of the next part of `text` to tokenise: at most [`FEED_BYTES`], cut between characters.
fn feed_cut(text: &str) -> usize {
    if text.len() <= FEED_BYTES {
        return text.len();
    }
    let mut cut = FEED_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

impl BatchWorker for LexiconWorker<'_> {
    type Output = LexiconWorkerOutput;

    fn batch(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        let shared = self.sieve;
        let mut guard = read_sieve(shared)?;
        for piece in &batch.pieces {
            if let (Some(docs), Some(id)) = (self.docs.as_mut(), batch.piece_id(piece)) {
                docs.push(piece.doc, id)?;
            }
            let mut rest = batch.piece_text(piece);
            loop {
                let (part, after) = rest.split_at(feed_cut(rest));
                self.tokenise(guard.as_ref(), part, piece.last && after.is_empty());
                if self.is_full() {
                    self.settle(guard);
                    self.hand_over()?;
                    guard = read_sieve(shared)?;
                }
                rest = after;
                if rest.is_empty() {
                    break;
                }
            }
        }
        self.settle(guard);
        self.hand_over()
    }

    fn finish(mut self) -> Result<Self::Output, PipelineError> {
        let mut lexicon = lock_lexicon(self.lexicon)?;
        self.cache.flush(&mut lexicon);
        drop(lexicon);
        let stream = self.stream.map(WordsOut::finish).transpose()?;
        let overflow = self.overflow.map(OverflowLog::finish).transpose()?;
        if let Some(docs) = self.docs.as_mut() {
            docs.ids.finish()?;
        }
        Ok(LexiconWorkerOutput {
            long_tokens: self.tokenizer.long_tokens(),
            sieve_again: self.line.again(),
            stream,
            documents: self.docs,
            overflow,
        })
    }
}
