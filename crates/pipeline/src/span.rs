//! `dedup --unit span --min-span K`: repeated passages cut out word-exactly,
//! the first copy kept (the rule is [`dupgram_dedup::SpanMarker`]'s).
//!
//! 0. **Sieve pass**: every K-gram's rolling fingerprint (a polynomial over
//!    its words' 64-bit hashes, [`RollingFingerprint`]) goes into a staged
//!    sieve ([`Sieve`], [`Filling::Staged`]) of most of the working memory.
//!    A K-gram whose "seen twice" bits the sieve does not hold occurs once:
//!    both copies of a repeated K-gram have the same words, so the same
//!    fingerprint, and the later insertion finds the earlier's bits. The
//!    sieve only ever discards such proven singletons; what it lets through
//!    is sorted and numbered exactly as without it, so it changes no result,
//!    only how much is sorted (most K-grams of a corpus occur once: without
//!    the sieve every one of them is written to disk, 24 bytes a token).
//!    Skipped when the configuration turns the sieve off (the tests compare
//!    both ways), and for a part hashed apart (`--hash-to`), whose K-grams
//!    may repeat in other parts. It costs one more read of the corpus and
//!    saves the 128-bit hash of every K-gram it proves unique: on web-like
//!    text the job is faster with it, and writes a quarter of the runs.
//!
//!    The pass counts the corpus's K-grams. A corpus of more than one sieve
//!    takes (about 1.6 a byte, [`Filling::capacity`]; a quarter more is
//!    let be) would saturate it, and most of its K-grams would get through:
//!    then they go in parts by fingerprint ([`RangeParts`]), as many as
//!    sieves of that size take, and each part fills the sieve afresh with
//!    its own K-grams in a pass and hashes those it lets through in
//!    another. Both copies of a repeated K-gram are in one part, so each
//!    part's sieve is as exact as the whole one. The corpus is read three
//!    times in one part and 2P + 2 times in P parts (the first pass, whose
//!    sieve is dropped, and the decisions included); in return the sort
//!    takes only what may repeat, whatever the corpus's size.
//! 1. **Fingerprint pass**: every K-gram of every document (K consecutive
//!    tokens, as the token options make them) that the sieve lets through
//!    gets the 128-bit XXH3 hash of its normalised text; hash and the
//!    K-gram's corpus position (its first token's number) are sorted out of
//!    core, as the exact tests sort units ([`UnitSort`]). 24 bytes a K-gram
//!    in memory chunks, whatever K: no packed key of K words.
//! 2. **Numbering**: the merge hands each distinct hash with its positions;
//!    a hash at two positions or more is a repeated K-gram and gets the next
//!    number, and each of its positions goes, with that number, into a
//!    second out-of-core sort, by position. The result, written to a file,
//!    is every repeated K-gram occurrence in corpus order, each as its
//!    position's gap from the one before and its number, two varints
//!    (about 5 bytes: most gaps are 1, a repeated passage being a run of
//!    repeated K-grams, and numbers take their own bits).
//! 3. **Decision pass**: the corpus is read once more; each document takes
//!    its occurrences from that file, the marker cuts its spans, and it is
//!    written out marked or stripped in its own format.
//!
//! The hashing pass can run apart, a part of the corpus at a time (`dedup
//! --hash-to DIR --part I`, one process per part, writing the part's sorted
//! runs and a [`KgramPart`] record): a K-gram's position is then its token's
//! number within its part, with the part's number above bit
//! [`PART_SHIFT`]; `dedup --hashed DIR…` (the parts in corpus order) merges
//! every part's runs as step 2 merges its own and turns each position into
//! a corpus position (the tokens of the parts before it added) as it writes
//! the occurrences, so the numbering, the occurrences and the output are
//! those of one process over the whole corpus. One process is part 0.
//!
//! Two different K-grams are confused only when their XXH3-128 hashes
//! collide: then a passage that never repeated could be cut. For a corpus
//! of N tokens the chance is about N²/2¹²⁹ (10⁻²⁰ for 10¹⁰ tokens).

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_corpus::{Input, VerticalLine};
use dupgram_dedup::{SpanMarker, SpanParams, SpanVerdict};
use dupgram_lexicon::Tokenizer;
use dupgram_merge::MergeSink;
use dupgram_sieve::{DelayLine, Filling, InsertLine, RollingFingerprint, Sieve, Slot};

use crate::dedup::{DedupConfig, DedupOutput, DedupStats, DocWriter, line_text, plan_and_scratch, push_vertical_line};
use crate::index::IndexJob;
use crate::occurrence_file::{OccurrenceReader, OccurrenceWriter};
use dupgram_jobkit::attributes::{AttributesFile, char_spans};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::doc_stream::{Body, Doc, DocStream, Item, Role, marked_record, read_batched, stripped_record};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, peak_rss};
use dupgram_jobkit::output::OutputFile;
use dupgram_jobkit::unit_sort::{SortedUnits, UnitSort};
use dupgram_merge::RunFile;

use crate::parts::KgramPart;

/// The longest passage `--min-span` may ask for: hashing costs K words a token.
pub const MAX_MIN_SPAN: u32 = 4096;

/// Run tags of the two sorts.
const KGRAM_RUNS: u64 = 0x5A4E_0001;
const POSITION_RUNS: u64 = 0x5A4E_0002;

/// Share of the working memory the sieve is filled in (the reader takes a
/// fifth); frozen, it keeps three tenths of that ([`Filling::Staged`]), and
/// the fingerprint pass's sort takes what it leaves.
const SIEVE_SHARE: f64 = 0.7;

/// K-grams a sieve is planned for, per byte of input as stored: a token
/// takes two bytes of text or more (a letter and a space), and a
/// compressed input holds up to about four times its size in text. A
/// sieve planned too small only lets more unique K-grams through; too
/// large, it costs a small corpus its time and memory.
const KGRAMS_PER_INPUT_BYTE: u64 = 2;

/// The smallest sieve planned from the input (a few pages).
const MIN_SIEVE_BYTES: u64 = 64 << 10;

/// A K-gram's position in a hashed part: its token's number within the part
/// in the bits below, the part's number above.
pub const PART_SHIFT: u32 = 40;

/// The hashed part record's name in a `--hash-to` directory.
const PART_FILE: &str = "kgrams.part";

fn check(config: &DedupConfig) -> Result<(), PipelineError> {
    let k = config.min_span;
    if k == 0 || k > MAX_MIN_SPAN {
        return Err(PipelineError::Usage(format!("--min-span must be between 1 and {MAX_MIN_SPAN}, not {k}")));
    }
    if !(0.0..=1.0).contains(&config.threshold) {
        return Err(PipelineError::Usage(format!("--threshold must be between 0 and 1, not {}", config.threshold)));
    }
    if config.base.stop_top > 0 {
        return Err(PipelineError::Usage(
            "--stop-top needs a count of the corpus's words, which --unit span does not make; use --stopwords".into(),
        ));
    }
    if config.dups.is_some() || config.exact {
        return Err(PipelineError::Usage("--dups and --exact do not apply to --unit span".into()));
    }
    if config.part >= 1 << (64 - PART_SHIFT) {
        return Err(PipelineError::Usage(format!("--part must be below {}", 1u64 << (64 - PART_SHIFT))));
    }
    Ok(())
}

/// Cuts every repeated passage of at least `config.min_span` words out of the corpus, into `out`.
pub fn dedup_spans(config: &DedupConfig, control: &Control, out: &mut OutputFile) -> Result<DedupStats, PipelineError> {
    dedup_spans_to(config, control, DedupOutput::documents(out))
}

/// Cuts every repeated passage out of the corpus, into the documents and attribute files of `out`.
pub fn dedup_spans_to(
    config: &DedupConfig,
    control: &Control,
    mut out: DedupOutput,
) -> Result<DedupStats, PipelineError> {
    check(config)?;
    if config.hash_to.is_some() && (out.documents.is_some() || out.attributes.is_some()) {
        return Err(PipelineError::Usage("--hash-to writes the part's K-grams, not documents or attributes".into()));
    }
    if out.documents_parquet() {
        return Err(PipelineError::Usage(
            "--unit span writes its documents in the input's own format (JSON Lines, text or vertical), \
             not as a Parquet table; use a .jsonl name (Parquet input is written as JSON Lines records)"
                .into(),
        ));
    }
    out.check_inputs(&config.base.inputs, &config.base.read)?;
    let started = Instant::now();
    let base = &config.base;
    let (plan, work) = plan_and_scratch(base)?;
    let index = IndexJob::new(base, None, control, plan, work.path());
    let inputs = index.spool_stdin()?;
    let mut stats = DedupStats {
        unit: "span".into(),
        n: config.min_span as usize,
        threshold: config.threshold,
        min_span: config.min_span,
        memory_budget: base.memory,
        ..DedupStats::default()
    };
    let ids = out.id_names(&inputs);
    let job = SpanJob { config, control, plan, index: &index, inputs: &inputs, ids };
    let t = Instant::now();
    if let Some(dir) = &config.hash_to {
        job.hash_part(dir, &mut stats)?;
        stats.seconds.index = t.elapsed().as_secs_f64();
        stats.seconds.total = started.elapsed().as_secs_f64();
        stats.peak_rss = peak_rss().unwrap_or(0);
        return Ok(stats);
    }
    let (sorted, offsets) =
        if config.hashed.is_empty() { (job.sieve_and_hash(&mut stats)?, vec![0]) } else { job.take_parts(&mut stats)? };
    let found = job.number_repeats(sorted, &offsets, &mut stats)?;
    stats.seconds.index = t.elapsed().as_secs_f64() - stats.seconds.sieve;
    let t = Instant::now();
    job.decide(&found, &mut out, &mut stats)?;
    stats.seconds.decisions = t.elapsed().as_secs_f64();
    drop(work);
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

struct SpanJob<'a> {
    config: &'a DedupConfig,
    control: &'a Control,
    plan: MemoryPlan,
    index: &'a IndexJob<'a>,
    inputs: &'a [Input],
    /// Input names for default document IDs, when attributes are written.
    ids: Option<Vec<String>>,
}

/// What the first two steps found.
struct Repeats {
    /// Every repeated K-gram occurrence in corpus order.
    occurrences: PathBuf,
    /// Repeated K-grams (numbered `0..kgrams`).
    kgrams: u64,
}

impl SpanJob<'_> {
    /// The documents of the corpus, each with its key (its tokens) when
    /// `keys` (the K-grams are made from it), else with its token count only.
    fn stream(&self, ids: Option<Vec<String>>, keys: bool) -> DocStream<'_> {
        let base = &self.config.base;
        let mut stream = DocStream::new(
            self.inputs,
            &base.read,
            self.plan,
            dupgram_dedup::UnitKind::Document,
            (base.norm, &base.stopwords),
            (self.index.working() / 8) as usize,
            crossbeam_channel::never(),
        );
        stream.keys = keys;
        stream.ids = ids;
        stream
    }

    /// Steps 0 and 1 in one process: the K-grams sieved, then those the
    /// sieve lets through hashed into sorted runs in the work directory.
    /// When the corpus holds more K-grams than one sieve takes, they go in
    /// parts by fingerprint ([`RangeParts`]), each sieved and hashed in a
    /// pass of its own, their runs merged as one.
    fn sieve_and_hash(&self, stats: &mut DedupStats) -> Result<SortedUnits<'_>, PipelineError> {
        let work = self.index.work;
        if !self.config.base.sieve {
            return self.hash_kgrams(work, 0, None, stats);
        }
        let planned = self.inputs.iter().filter_map(Input::size).sum::<u64>().saturating_mul(KGRAMS_PER_INPUT_BYTE);
        let mut sieve = self.new_sieve(planned)?;
        let kgrams = self.fill_sieve(&mut sieve, RangeParts::WHOLE, stats)?;
        let forced = self.config.base.limits.sieve_parts;
        let mut parts = RangeParts::planned(kgrams, sieve.sieve.capacity(), forced);
        let needed = Filling::Staged.capacity(self.sieve_bytes(kgrams) as u64);
        if parts.count > 1 && forced.is_none() && needed > sieve.sieve.capacity() {
            // Planned from the input's size, the sieve was smaller than the memory allows (a
            // compressed input of many repeats): the K-grams counted get the sieve they need.
            sieve = self.new_sieve(kgrams)?;
            parts = RangeParts::planned(kgrams, sieve.sieve.capacity(), None);
            if parts.count == 1 {
                self.fill_sieve(&mut sieve, RangeParts::WHOLE, stats)?;
            }
        }
        stats.kgram_parts = parts.count;
        if parts.count == 1 {
            return self.hash_kgrams(work, 0, Some(&mut sieve), stats);
        }
        // The sieve filled with every K-gram is too full to prove much: each part fills it afresh.
        let mut runs = Vec::new();
        for part in 0..parts.count {
            let range = parts.part(part);
            sieve.sieve.clear();
            self.fill_sieve(&mut sieve, range, stats)?;
            let dir = work.join(format!("kgrams-{part}"));
            std::fs::create_dir(&dir).map_err(|e| PipelineError::io(&dir, e))?;
            stats.index.documents = 0;
            runs.extend(self.hash_kgrams(&dir, 0, Some(&mut sieve), stats)?.into_runs());
        }
        Ok(UnitSort::sorted(work, runs, KGRAM_RUNS))
    }

    /// The bytes of a sieve for `kgrams` K-grams, within the memory.
    fn sieve_bytes(&self, kgrams: u64) -> usize {
        let fits = (self.index.working() as f64 * SIEVE_SHARE) as u64;
        let wanted = Filling::Staged.bytes_for(kgrams).max(MIN_SIEVE_BYTES);
        self.config.base.limits.sieve_bytes.unwrap_or(wanted.min(fits) as usize)
    }

    /// A sieve of K-grams for `kgrams` of them, within the memory.
    fn new_sieve(&self, kgrams: u64) -> Result<KgramSieve, PipelineError> {
        let sieve =
            Sieve::new(Filling::Staged, self.sieve_bytes(kgrams)).map_err(|e| PipelineError::io(self.index.work, e))?;
        let words = KgramWords::new(self.config.min_span as usize);
        Ok(KgramSieve { sieve, words, line: DelayLine::default(), range: RangeParts::WHOLE, proven: 0 })
    }

    /// Step 0: the fingerprint of every K-gram in `range` into `sieve`
    /// (new, or cleared by the caller), which is then frozen; returns the
    /// K-grams of the whole corpus, counted.
    fn fill_sieve(
        &self,
        sieve: &mut KgramSieve,
        range: PartRange,
        stats: &mut DedupStats,
    ) -> Result<u64, PipelineError> {
        let t = Instant::now();
        let phase = match range.count {
            1 => "sieving K-grams".to_owned(),
            count => format!("sieving K-grams, part {} of {count}", range.part + 1),
        };
        self.control.start_pass(&phase, self.inputs.iter().map(Input::size).sum());
        let KgramSieve { sieve: table, words, .. } = sieve;
        let (mut line, mut kgrams) = (InsertLine::default(), 0u64);
        let threads = self.config.base.threads;
        read_batched(self.stream(None, true), self.control, (self.index.working(), threads), |item, _, _| {
            let Item::Doc(doc) = item else { return Ok(()) };
            words.fingerprints(doc.key(0), |_, fingerprint| {
                kgrams += 1;
                if range.holds(fingerprint) {
                    table.insert_delayed(&mut line, fingerprint);
                }
            });
            Ok(())
        })?;
        table.flush(&mut line);
        table.freeze();
        sieve.range = range;
        stats.kgram_sieve_fills += 1;
        stats.seconds.sieve += t.elapsed().as_secs_f64();
        Ok(kgrams)
    }

    /// Step 1: hashes every K-gram of the inputs (part `part` of the corpus)
    /// that `sieve` lets through (every one without it; none outside its
    /// range) into sorted runs in `dir`.
    fn hash_kgrams<'d>(
        &self,
        dir: &'d Path,
        part: u64,
        mut sieve: Option<&mut KgramSieve>,
        stats: &mut DedupStats,
    ) -> Result<SortedUnits<'d>, PipelineError> {
        self.control.start_pass("hashing K-grams", self.inputs.iter().map(Input::size).sum());
        let k = self.config.min_span as usize;
        let working = self.index.working();
        // The frozen sieve stays beside the sort: the sort's chunks take half of what they are given.
        let held = sieve.as_ref().map_or(0, |s| 2 * s.sieve.bytes() as u64);
        let chunk = self.config.base.limits.chunk_ngrams;
        let mut sort = UnitSort::new(dir, working.saturating_sub(held), chunk, KGRAM_RUNS)?;
        let first = part << PART_SHIFT;
        let mut position = 0u64;
        let mut starts: Vec<usize> = Vec::new();
        let mut passing: Vec<usize> = Vec::new();
        read_batched(self.stream(None, true), self.control, (working, self.config.base.threads), |item, _, _| {
            let Item::Doc(doc) = item else { return Ok(()) };
            stats.index.documents += 1;
            let keys = doc.key(0);
            token_starts(keys, &mut starts);
            let tokens = starts.len() - 1;
            if position + tokens as u64 >= 1 << PART_SHIFT {
                return Err(PipelineError::Usage(format!(
                    "a part of the corpus hashed apart holds at most 2^{PART_SHIFT} tokens: cut it into more parts"
                )));
            }
            match sieve.as_deref_mut() {
                Some(sieve) => sieve.passing(keys, &mut passing),
                None => {
                    passing.clear();
                    passing.extend(0..(tokens + 1).saturating_sub(k));
                }
            }
            for &i in &passing {
                let fp = xxhash_rust::xxh3::xxh3_128(&keys[starts[i]..starts[i + k]]);
                sort.push(key_words(fp), first + position + i as u64)?;
            }
            if let Some(sieve) = sieve.as_deref() {
                stats.kgrams_sieved_out += sieve.proven;
            }
            position += tokens as u64;
            Ok(())
        })?;
        stats.index.tokens = position;
        let sorted = sort.finish()?;
        stats.index.bytes_spilled += sorted.spilled;
        Ok(sorted)
    }

    /// `--hash-to DIR`: step 1 over this part of the corpus, its runs and
    /// their record left in `DIR` (a new directory) for a `--hashed` job.
    fn hash_part(&self, dir: &Path, stats: &mut DedupStats) -> Result<(), PipelineError> {
        std::fs::create_dir(dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                PipelineError::Usage(format!("{}: exists; --hash-to writes a new directory", dir.display()))
            }
            _ => PipelineError::io(dir, e),
        })?;
        let written = self.hash_kgrams(dir, self.config.part, None, stats).and_then(|sorted| {
            let runs = sorted.into_runs();
            let part = KgramPart {
                k: self.config.min_span,
                options: self.hash_options(),
                part: self.config.part,
                documents: stats.index.documents,
                tokens: stats.index.tokens,
                runs: runs.iter().map(|r| (file_name(&r.path), r.bytes)).collect(),
            };
            // Whole or not at all: the record is renamed into place last.
            let (path, partial) = (dir.join(PART_FILE), dir.join(format!(".{PART_FILE}.partial")));
            let mut bytes = Vec::new();
            part.write_to(&mut bytes).map_err(|e| PipelineError::io(&partial, e))?;
            std::fs::write(&partial, &bytes).map_err(|e| PipelineError::io(&partial, e))?;
            std::fs::rename(&partial, &path).map_err(|e| PipelineError::io(&path, e))
        });
        if written.is_err() {
            let _ = std::fs::remove_dir_all(dir);
        }
        written
    }

    /// What decides a K-gram's hash: K and how the text is cut into tokens.
    fn hash_options(&self) -> u64 {
        let base = &self.config.base;
        let what = format!("{}|{:?}|{:?}", self.config.min_span, base.norm, base.stopwords);
        xxhash_rust::xxh3::xxh3_64(what.as_bytes())
    }

    /// `--hashed DIR…`: the runs of every part, linked into the work
    /// directory (the merge removes what it merges; the parts keep theirs),
    /// and each part's first corpus position.
    fn take_parts(&self, stats: &mut DedupStats) -> Result<(SortedUnits<'_>, Vec<u64>), PipelineError> {
        let (mut runs, mut offsets) = (Vec::new(), Vec::new());
        let linked = self.index.work.join("parts");
        std::fs::create_dir(&linked).map_err(|e| PipelineError::io(&linked, e))?;
        for (i, dir) in self.config.hashed.iter().enumerate() {
            let record = dir.join(PART_FILE);
            let part = KgramPart::read_from(&record)?;
            let refuse = |what: String| Err(PipelineError::Usage(format!("{}: {what}", record.display())));
            if part.part != i as u64 {
                return refuse(format!(
                    "part {} of the corpus, given as part {i}: give --hashed in part order",
                    part.part
                ));
            }
            if part.k != self.config.min_span || part.options != self.hash_options() {
                return refuse("hashed with another --min-span or other token options".into());
            }
            offsets.push(stats.index.tokens);
            stats.index.documents += part.documents;
            stats.index.tokens += part.tokens;
            for (name, bytes) in part.runs {
                let (from, to) = (dir.join(&name), linked.join(format!("{i}-{name}")));
                dupgram_runs::reclaim::second_name(&from, &to).map_err(|e| PipelineError::io(&from, e))?;
                runs.push(RunFile { path: to, bytes, depth: 0 });
            }
        }
        Ok((UnitSort::sorted(self.index.work, runs, KGRAM_RUNS), offsets))
    }

    /// Step 2: numbers the repeated K-grams and lists their occurrences by
    /// corpus position (`offsets`: each part's first).
    fn number_repeats(
        &self,
        sorted: SortedUnits<'_>,
        offsets: &[u64],
        stats: &mut DedupStats,
    ) -> Result<Repeats, PipelineError> {
        self.control.start_pass("numbering repeated K-grams", None);
        let working = self.index.working();
        let chunk = self.config.base.limits.chunk_ngrams;
        // The second sort gets a quarter of the memory; the merge's buffers the rest.
        let positions_dir = self.index.work.join("positions");
        std::fs::create_dir(&positions_dir).map_err(|e| PipelineError::io(&positions_dir, e))?;
        let mut sink =
            NumberSink { positions: UnitSort::new(&positions_dir, working / 2, chunk, POSITION_RUNS)?, kgrams: 0 };
        sorted.merge(self.index.fan_in(working / 4), &mut sink, self.control)?;
        let NumberSink { positions, kgrams } = sink;
        stats.index.duplicate_ngrams = kgrams;
        let positions = positions.finish()?;
        stats.index.bytes_spilled += positions.spilled;
        let out = OccurrenceWriter::create(&self.index.work.join("occurrences.bin"))?;
        let mut sink = OccurrenceSink { out, offsets };
        positions.merge(self.index.fan_in(0), &mut sink, self.control)?;
        stats.index.duplicate_occurrences = sink.out.count;
        let (path, bytes) = sink.out.finish()?;
        stats.index.bytes_spilled += bytes;
        Ok(Repeats { occurrences: path, kgrams })
    }

    /// Step 3: reads the corpus once more, cuts each document's spans and writes it out.
    fn decide(&self, found: &Repeats, out: &mut DedupOutput, stats: &mut DedupStats) -> Result<(), PipelineError> {
        self.control.start_pass("cutting repeated spans", self.inputs.iter().map(Input::size).sum());
        let params = SpanParams {
            k: self.config.min_span,
            threshold: self.config.threshold,
            min_tokens: self.config.min_tokens,
        };
        let kgrams = usize::try_from(found.kgrams)
            .map_err(|_| PipelineError::Usage("too many repeated K-grams for this machine".into()))?;
        let mut marker = SpanMarker::new(params, kgrams);
        let mut occurrences = OccurrenceReader::open(&found.occurrences)?;
        let base = &self.config.base;
        let mut writer = SpanWriter {
            strip: self.config.strip,
            text_field: &base.read.text_field,
            tokenizer: Tokenizer::new(base.norm),
            stopwords: base.stopwords.iter().cloned().collect(),
            ranges: Vec::new(),
            line: Vec::new(),
        };
        let mut passthrough = DocWriter::lines(self.config.strip, &base.read.text_field);
        let (mut position, mut docs, mut kgrams_here) = (0u64, 0u64, Vec::new());
        read_batched(
            // Counts are all the decisions need; spans cut are tokenised again for their ranges.
            self.stream(self.ids.clone(), false),
            self.control,
            // The outputs' encoders fill up as they are written: beside the reading, not in its room.
            (self.index.working().saturating_sub(out.encoder_bytes()), self.config.base.threads),
            |item, vertical, _| {
                let doc = match item {
                    Item::Passthrough(line) => return out.passthrough(&mut passthrough, &line, vertical),
                    Item::Doc(doc) => doc,
                };
                let tokens: u32 = doc.unit_tokens.iter().sum();
                occurrences.take_document(position, tokens, &mut kgrams_here)?;
                let verdict = marker.document(tokens, &kgrams_here);
                record(stats, &verdict);
                if let Some(documents) = out.documents.as_deref_mut() {
                    writer.write(documents, &doc, &verdict)?;
                }
                if let Some(file) = out.attributes.as_deref_mut() {
                    writer.attributes(file, &doc, &verdict)?;
                }
                position += u64::from(tokens);
                docs += 1;
                Ok(())
            },
        )?;
        if docs != stats.index.documents || position != stats.index.tokens || !occurrences.at_end()? {
            return Err(PipelineError::Changed(format!(
                "{} documents and {} tokens were hashed, {docs} and {position} read back",
                stats.index.documents, stats.index.tokens
            )));
        }
        Ok(())
    }
}

/// The file name of a run its writer named (UTF-8 by construction).
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Where each token starts in a document's key (tokens back to back, each
/// ended by a separator byte), and where the key ends.
fn token_starts(keys: &[u8], starts: &mut Vec<usize>) {
    starts.clear();
    starts.push(0);
    starts.extend(
        keys.iter().enumerate().filter(|&(_, &b)| b == dupgram_jobkit::doc_stream::KEY_SEPARATOR).map(|(i, _)| i + 1),
    );
}

/// The rolling fingerprints of a document's K-grams, from its key.
struct KgramWords {
    rolling: RollingFingerprint,
}

impl KgramWords {
    fn new(k: usize) -> Self {
        KgramWords { rolling: RollingFingerprint::new(k) }
    }

    /// Calls `each(i, fingerprint)` for the K-gram at each token `i` of a
    /// document's key (tokens back to back, each ended by a separator), in order.
    fn fingerprints(&mut self, keys: &[u8], mut each: impl FnMut(usize, u64)) {
        self.rolling.reset();
        // The K-gram a word completes starts K − 1 words before it.
        let mut first = 0;
        for word in keys.split_inclusive(|&b| b == dupgram_jobkit::doc_stream::KEY_SEPARATOR) {
            if let Some(fingerprint) = self.rolling.push(dupgram_lexicon::word_hash(word)) {
                each(first, fingerprint);
                first += 1;
            }
        }
    }
}

/// A frozen sieve of K-gram fingerprints, asked a document at a time.
struct KgramSieve {
    sieve: Sieve,
    words: KgramWords,
    /// Slots being prefetched, with their K-grams' first tokens.
    line: DelayLine<(Slot, usize)>,
    /// The fingerprints the sieve was filled with; it knows nothing of the others.
    range: PartRange,
    /// K-grams of the last document asked that the sieve proved unique.
    proven: u64,
}

impl KgramSieve {
    /// The first tokens of a document's K-grams in the sieve's range that
    /// may repeat, in order, into `passing`: every one the sieve cannot
    /// prove unique.
    fn passing(&mut self, keys: &[u8], passing: &mut Vec<usize>) {
        passing.clear();
        let KgramSieve { sieve, words, line, range, proven } = self;
        let mut in_range = 0u64;
        words.fingerprints(keys, |i, fingerprint| {
            if !range.holds(fingerprint) {
                return;
            }
            in_range += 1;
            let slot = sieve.locate(fingerprint);
            sieve.prefetch(slot);
            if let Some((slot, i)) = line.push((slot, i))
                && sieve.may_repeat_at(slot)
            {
                passing.push(i);
            }
        });
        passing.extend(line.drain().filter(|&(slot, _)| sieve.may_repeat_at(slot)).map(|(_, i)| i));
        *proven = in_range - passing.len() as u64;
    }
}

/// The K-grams of a corpus cut by fingerprint into parts of about what one
/// sieve takes. A K-gram's part comes from its fingerprint remixed, not
/// from the bits the sieve places it by, so each part spreads over the
/// whole sieve. Both copies of a repeated K-gram have one fingerprint, so
/// one part: a part's sieve proves unique only what is unique in the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RangeParts {
    count: u64,
}

/// One part of [`RangeParts`]: the fingerprints whose remix falls in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PartRange {
    part: u64,
    count: u64,
}

/// K-grams a sieve may take past its planned capacity before the corpus
/// goes in parts: a little over it still proves most unique ones so.
const PART_OVERLOAD: f64 = 1.25;

impl RangeParts {
    const WHOLE: PartRange = PartRange { part: 0, count: 1 };

    /// Parts for `kgrams` K-grams (counted, repeats included) and a sieve
    /// of `capacity`; `forced` (a test limit) sets their number.
    fn planned(kgrams: u64, capacity: u64, forced: Option<usize>) -> Self {
        if let Some(count) = forced {
            return RangeParts { count: count.max(1) as u64 };
        }
        if kgrams as f64 <= capacity as f64 * PART_OVERLOAD {
            return RangeParts { count: 1 };
        }
        RangeParts { count: kgrams.div_ceil(capacity.max(1)) }
    }

    fn part(self, part: u64) -> PartRange {
        PartRange { part, count: self.count }
    }
}

impl PartRange {
    fn holds(self, fingerprint: u64) -> bool {
        if self.count == 1 {
            return true;
        }
        // SplitMix64's finaliser over the fingerprint, then its high bits scaled to the parts.
        let mut h = (fingerprint ^ (fingerprint >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        h ^= h >> 31;
        ((u128::from(h) * u128::from(self.count)) >> 64) as u64 == self.part
    }
}

/// A hash as a sort key.
fn key_words(fp: u128) -> [u32; 4] {
    [(fp >> 96) as u32, (fp >> 64) as u32, (fp >> 32) as u32, fp as u32]
}

/// A corpus position as a sort key: ascending keys, ascending positions.
fn position_key(position: u64) -> [u32; 4] {
    [(position >> 32) as u32, position as u32, 0, 0]
}

fn record(stats: &mut DedupStats, verdict: &SpanVerdict) {
    stats.units += 1;
    stats.spans_removed += verdict.spans.len() as u64;
    stats.tokens_removed += u64::from(verdict.removed_tokens());
    stats.tokens_in_spans += u64::from(verdict.span_tokens());
    if verdict.nothing_kept() {
        stats.documents_removed += 1;
        stats.units_removed += 1;
    }
    if verdict.whole {
        stats.documents_whole += 1;
    }
}

/// Numbers each repeated K-gram and sorts its positions.
struct NumberSink<'a> {
    positions: UnitSort<'a>,
    kgrams: u64,
}

impl MergeSink for NumberSink<'_> {
    type Error = PipelineError;

    fn accept(&mut self, _hash: &[u32], _count: u64, positions: &[u64]) -> Result<(), PipelineError> {
        if positions.len() < 2 {
            return Ok(());
        }
        if self.kgrams > u64::from(u32::MAX) {
            return Err(PipelineError::Usage("more than 2³² repeated K-grams: raise --min-span".into()));
        }
        for &p in positions {
            self.positions.push(position_key(p), self.kgrams)?;
        }
        self.kgrams += 1;
        Ok(())
    }
}

/// Writes the occurrences, in position order, to a file, each position
/// turned from its part's into the corpus's.
struct OccurrenceSink<'o> {
    out: OccurrenceWriter,
    /// Each part's first corpus position.
    offsets: &'o [u64],
}

impl MergeSink for OccurrenceSink<'_> {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, numbers: &[u64]) -> Result<(), PipelineError> {
        let in_part = (u64::from(key[0]) << 32) | u64::from(key[1]);
        let part = (in_part >> PART_SHIFT) as usize;
        let Some(first) = self.offsets.get(part) else {
            return Err(PipelineError::Corrupt(format!("a K-gram of part {part}, of {} parts", self.offsets.len())));
        };
        // Parts are in corpus order and positions in a part below its tokens, so this keeps the order.
        let position = first + (in_part & ((1 << PART_SHIFT) - 1));
        for &number in numbers {
            self.out.push(position, number)?;
        }
        Ok(())
    }
}

/// Writes documents with their spans marked or cut, in their own format.
struct SpanWriter<'a> {
    strip: bool,
    text_field: &'a str,
    tokenizer: Tokenizer,
    stopwords: HashSet<String>,
    /// Byte ranges of the current text's tokens.
    ranges: Vec<Range<usize>>,
    line: Vec<u8>,
}

impl SpanWriter<'_> {
    fn write(&mut self, out: &mut OutputFile, doc: &Doc, verdict: &SpanVerdict) -> Result<(), PipelineError> {
        self.line.clear();
        match &doc.body {
            Body::Vertical { bytes, ends, roles } => self.vertical(bytes, ends, roles, verdict),
            Body::Text { text, .. } => {
                if self.strip {
                    if !verdict.nothing_kept() {
                        let cuts = self.cuts(text, verdict)?;
                        self.line.extend_from_slice(cut_out(text, &cuts).trim_end_matches(['\n', '\r']).as_bytes());
                        self.line.push(b'\n');
                    }
                } else {
                    self.line.extend_from_slice(format!("{:.6}\t", fraction(verdict)).as_bytes());
                    self.line.extend_from_slice(text.as_bytes());
                    self.line.push(b'\n');
                }
            }
            Body::Jsonl { line, text, appendable, .. } => {
                if self.strip && verdict.nothing_kept() {
                    return Ok(());
                }
                let cuts = self.cuts(text, verdict)?;
                if !self.strip {
                    let spans = if verdict.whole { std::iter::once(0..text.len()).collect() } else { cuts };
                    marked_record(&mut self.line, line, *appendable, fraction(verdict), &char_offsets(text, &spans))?;
                } else {
                    let kept = (!cuts.is_empty()).then(|| cut_out(text, &cuts));
                    stripped_record(&mut self.line, line, self.text_field, kept)?;
                }
            }
        }
        out.write_all(&self.line)
    }

    /// A document's attribute line: its cut spans (the whole text when it
    /// goes whole), each of score 1 — every token in it is covered by a
    /// repeated K-gram — and the share of its tokens cut (1 when it goes whole).
    fn attributes(&mut self, file: &mut AttributesFile, doc: &Doc, verdict: &SpanVerdict) -> Result<(), PipelineError> {
        let text = match &doc.body {
            Body::Jsonl { text, .. } => text.as_str(),
            Body::Text { text, .. } => line_text(text),
            Body::Vertical { .. } => {
                return Err(PipelineError::Usage("--attributes: a vertical document has no character offsets".into()));
            }
        };
        // A document `--strip` drops whole is one span of share 1, as the other units give it.
        let whole = verdict.whole || verdict.nothing_kept();
        let cuts = if whole { std::iter::once(0..text.len()).collect() } else { self.cuts(text, verdict)? };
        let (spans, chars) = char_spans(text, cuts.into_iter().filter(|r| !r.is_empty()).map(|r| (r, 1.0)));
        let share = if whole { 1.0 } else { fraction(verdict) };
        file.write(&doc.id, &spans, chars, share)
    }

    /// A vertical document: a token line goes with its span, every line with the whole document.
    fn vertical(&mut self, bytes: &[u8], ends: &[u32], roles: &[Role], verdict: &SpanVerdict) {
        let mut start = 0;
        let mut token = 0u32;
        let mut span = 0;
        for (&end, role) in ends.iter().zip(roles) {
            let range = start..end as usize;
            let line = &bytes[range.clone()];
            start = end as usize;
            let gone = match (role, VerticalLine::classify(line)) {
                (Role::DocTag, _) => verdict.nothing_kept(),
                (Role::Unit(_), VerticalLine::Token(word)) if self.counts(word) => {
                    while span < verdict.spans.len() && verdict.spans[span].end <= token {
                        span += 1;
                    }
                    let in_span = verdict.spans.get(span).is_some_and(|s| s.start <= token);
                    token += 1;
                    verdict.whole || in_span
                }
                _ => verdict.whole,
            };
            push_vertical_line(&mut self.line, (bytes, range), self.strip, gone);
        }
    }

    /// Whether a vertical token line counts as a token (the reader's rule).
    fn counts(&self, word: &[u8]) -> bool {
        !word.is_empty()
            && (self.stopwords.is_empty() || !self.stopwords.contains(String::from_utf8_lossy(word).as_ref()))
    }

    /// Byte ranges of a text to cut: from the first character of a span's
    /// first token to the last character of its last.
    fn cuts(&mut self, text: &str, verdict: &SpanVerdict) -> Result<Vec<Range<usize>>, PipelineError> {
        if verdict.spans.is_empty() {
            return Ok(Vec::new());
        }
        token_ranges(&mut self.tokenizer, &self.stopwords, text, &mut self.ranges);
        if self.ranges.len() != verdict.tokens as usize {
            return Err(PipelineError::Changed(format!(
                "a document has {} tokens now and had {} when it was hashed",
                self.ranges.len(),
                verdict.tokens
            )));
        }
        Ok(verdict
            .spans
            .iter()
            .map(|s| self.ranges[s.start as usize].start..self.ranges[s.end as usize - 1].end)
            .collect())
    }
}

fn fraction(verdict: &SpanVerdict) -> f64 {
    if verdict.tokens == 0 { 0.0 } else { f64::from(verdict.removed_tokens()) / f64::from(verdict.tokens) }
}

/// Byte ranges of a text's tokens, stop words left out, as [`Tokenizer`]
/// makes them. The text is fed one character at a time; a token runs from
/// the first character taken into it (the `&` of an entity that starts it)
/// to the last one taken in, so markup or an unknown entity right after a
/// token is not part of it.
pub(crate) fn token_ranges(
    tokenizer: &mut Tokenizer,
    stopwords: &HashSet<String>,
    text: &str,
    ranges: &mut Vec<Range<usize>>,
) {
    ranges.clear();
    let (mut start, mut last_end, mut entity_start) = (0, 0, 0);
    let keep = |word: &str, range: Range<usize>, ranges: &mut Vec<Range<usize>>| {
        if stopwords.is_empty() || !stopwords.contains(word) {
            ranges.push(range);
        }
    };
    for (i, c) in text.char_indices() {
        let (in_token, in_entity, taken) = (tokenizer.in_token(), tokenizer.in_entity(), tokenizer.taken());
        let mut emitted = false;
        let (s, e) = (start, last_end);
        tokenizer.feed(&text[i..i + c.len_utf8()], &mut |w| {
            keep(w, s..e, ranges);
            emitted = true;
        });
        if !in_entity && tokenizer.in_entity() {
            entity_start = i;
        }
        if tokenizer.taken() != taken {
            if !in_token || emitted {
                start = if in_entity { entity_start } else { i };
            }
            last_end = i + c.len_utf8();
        }
    }
    let (s, e) = (start, last_end);
    tokenizer.finish(&mut |w| keep(w, s..e, ranges));
}

/// The text without the cuts; the words on either side of a cut are joined
/// by one space (the space around a cut goes with it).
fn cut_out(text: &str, cuts: &[Range<usize>]) -> String {
    if cuts.is_empty() {
        return text.to_owned();
    }
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut at = 0;
    for (i, cut) in cuts.iter().enumerate() {
        let piece = &text[at..cut.start];
        pieces.push(if i == 0 { piece.trim_end() } else { piece.trim() });
        at = cut.end;
    }
    pieces.push(text[at..].trim_start());
    pieces.retain(|p| !p.is_empty());
    pieces.join(" ")
}

/// Byte ranges as character offsets `[start, end)`.
fn char_offsets(text: &str, ranges: &[Range<usize>]) -> Vec<[u64; 2]> {
    let mut out = Vec::with_capacity(ranges.len());
    let (mut chars, mut at) = (0u64, 0usize);
    for r in ranges {
        chars += text[at..r.start].chars().count() as u64;
        let start = chars;
        chars += text[r.start..r.end].chars().count() as u64;
        at = r.end;
        out.push([start, chars]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fingerprint lies in exactly one part, the parts about even.
    #[test]
    fn parts_by_fingerprint_cut_every_fingerprint_once() {
        let parts = RangeParts::planned(10_000, 3_000, None);
        assert_eq!(parts.count, 4);
        let mut sizes = [0u32; 4];
        for i in 0..40_000u64 {
            let fingerprint = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let holding: Vec<u64> = (0..parts.count).filter(|&p| parts.part(p).holds(fingerprint)).collect();
            assert_eq!(holding.len(), 1, "{fingerprint:x}: {holding:?}");
            sizes[holding[0] as usize] += 1;
        }
        assert!(sizes.iter().all(|&n| (9_000..11_000).contains(&n)), "{sizes:?}");
        assert!(RangeParts::WHOLE.holds(7));
        // A little past a sieve's capacity still goes whole; forced parts win.
        assert_eq!(RangeParts::planned(3_700, 3_000, None).count, 1);
        assert_eq!(RangeParts::planned(3_700, 3_000, Some(5)).count, 5);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // one cut: a slice of one range
    fn cuts_join_the_words_around_with_one_space() {
        let text = "keep this  REPEATED PART\n and this";
        let start = text.find("REPEATED").unwrap();
        let end = start + "REPEATED PART".len();
        assert_eq!(cut_out(text, &[start..end]), "keep this and this");
        assert_eq!(cut_out(text, &[0..4]), "this  REPEATED PART\n and this");
        assert_eq!(cut_out(text, &[text.len() - 4..text.len()]), "keep this  REPEATED PART\n and");
        // Two cuts with only space between: one space in all.
        let two = "a X Y b";
        assert_eq!(cut_out(two, &[2..3, 4..5]), "a b");
    }

    /// The tokens of a text, fed whole.
    fn tokens(norm: dupgram_lexicon::Normalization, text: &str) -> Vec<String> {
        let mut tokenizer = Tokenizer::new(norm);
        let mut out = Vec::new();
        tokenizer.feed(text, &mut |w| out.push(w.to_owned()));
        tokenizer.finish(&mut |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn token_ranges_point_at_the_tokens_in_the_text() {
        use dupgram_lexicon::Normalization;
        let text = "Straße, 3.5 vs. état-civil! &eacute;t&eacute; <b>bold</b>x &amp; 12,000";
        let norms = [
            Normalization::default(),
            Normalization::raw(),
            Normalization { numbers_as_token: true, ..Normalization::default() },
            Normalization { strip_markup: true, ..Normalization::default() },
        ];
        for norm in norms {
            let mut tokenizer = Tokenizer::new(norm);
            let mut ranges = Vec::new();
            token_ranges(&mut tokenizer, &HashSet::new(), text, &mut ranges);
            let whole = tokens(norm, text);
            assert_eq!(ranges.len(), whole.len(), "{norm:?}");
            // Each range, tokenised alone, is its token; ranges ascend.
            for (r, token) in ranges.iter().zip(&whole) {
                assert_eq!(tokens(norm, &text[r.clone()]), std::slice::from_ref(token), "{norm:?} {r:?}");
            }
            assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start));
        }
        let mut tokenizer = Tokenizer::new(Normalization::default());
        let mut ranges = Vec::new();
        let words = |ranges: &[Range<usize>]| ranges.iter().map(|r| text[r.clone()].to_owned()).collect::<Vec<_>>();
        token_ranges(&mut tokenizer, &HashSet::new(), text, &mut ranges);
        assert_eq!(words(&ranges)[..6], ["Straße", "3", "5", "vs", "état", "civil"]);
        let stop: HashSet<String> = ["vs".to_owned()].into();
        token_ranges(&mut tokenizer, &stop, text, &mut ranges);
        assert_eq!(words(&ranges)[..5], ["Straße", "3", "5", "état", "civil"]);
    }

    #[test]
    fn char_offsets_count_characters() {
        let text = "é ab c";
        assert_eq!(char_offsets(text, &[3..5, 6..7]), vec![[2, 4], [5, 6]]);
    }
}
