//! `dedup --exact-only`: drop every unit whose normalised text repeats an
//! earlier unit's, with no n-gram passes, exactly, within `--memory`.
//!
//! A unit's *normalised text* is its token sequence as dupgram tokenises
//! (case folding, `--tokens raw`, `--numbers-as-token`, `--strip-markup`,
//! stop words dropped — the token options apply), so units that differ only
//! in whitespace, punctuation or case are equal. Units with no token are
//! never marked.
//!
//! 1. **Fingerprint pass**: each unit's normalised text gets a 128-bit XXH3
//!    fingerprint; its first 96 bits and the text's length form a key sorted
//!    with the unit's number out of core (runs and a merge, as the n-gram
//!    passes do). A group of two or more equal keys makes its units
//!    *candidates* (one bit per unit); the merge also cuts the key space into
//!    ranges whose first members' texts fit the room left.
//! 2. **Verification**: the corpus is read in order; a candidate unit whose
//!    key falls in the range at hand is compared with the texts kept so far
//!    under its fingerprint: equal to one of them, it is a duplicate; else its
//!    text is kept (a first copy, or a different text that collided). A
//!    fingerprint collision therefore never marks a unit. One pass per range;
//!    the last range is verified during the output pass, so a corpus whose
//!    candidates fit is read twice in all.
//! 3. **Output**: documents written marked or stripped, as `dedup` writes
//!    them.

use std::collections::HashMap;
use std::time::Instant;

use dupgram_corpus::Input;
use dupgram_dedup::UnitVerdict;
use dupgram_merge::MergeSink;

use dupgram_jobkit::control::Control;
use std::io::Write;

use crate::dedup::{DedupConfig, DedupOutput, DedupStats, plan_and_scratch, record};
use crate::index::IndexJob;
use dupgram_jobkit::doc_stream::{DocStream, Item, KnownUnits, read_batched};
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, peak_rss};
use dupgram_jobkit::output::OutputFile;
use dupgram_jobkit::unit_sort::UnitSort;

/// A unit's fingerprint from its normalised text.
pub type Fingerprint = fn(&[u8]) -> u128;

fn xxh3_128(text: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text)
}

/// Run tag of the fingerprint pass's runs.
const EXACT_ONLY_RUNS: u64 = 0xE4AC_7001;

/// Bytes a kept text costs in the verification table beyond its own length
/// (its box, its vector, the table's entry, allocator slack).
const PER_TEXT_BYTES: u64 = 96;

/// Deduplicates the corpus into `out` by exact normalised text only.
pub fn dedup_exact(config: &DedupConfig, control: &Control, out: &mut OutputFile) -> Result<DedupStats, PipelineError> {
    dedup_exact_with(config, control, DedupOutput::documents(out), xxh3_128)
}

/// Deduplicates the corpus by exact normalised text into the documents and attribute files of `out`.
pub fn dedup_exact_to(config: &DedupConfig, control: &Control, out: DedupOutput) -> Result<DedupStats, PipelineError> {
    dedup_exact_with(config, control, out, xxh3_128)
}

fn check(config: &DedupConfig) -> Result<(), PipelineError> {
    if config.base.stop_top > 0 {
        return Err(PipelineError::Usage(
            "--stop-top needs a count of the corpus's words, which --exact-only does not make; use --stopwords".into(),
        ));
    }
    if config.dups.is_some() {
        return Err(PipelineError::Usage("--dups has no use with --exact-only, which counts no n-grams".into()));
    }
    config.check_no_span_parts()
}

/// [`dedup_exact`] with another fingerprint: tests give a weak one, so that
/// fingerprints collide and the verification must tell the texts apart.
#[doc(hidden)]
pub fn dedup_exact_with(
    config: &DedupConfig,
    control: &Control,
    mut out: DedupOutput,
    fingerprint: Fingerprint,
) -> Result<DedupStats, PipelineError> {
    check(config)?;
    out.check_inputs(&config.base.inputs, &config.base.read)?;
    let started = Instant::now();
    let base = &config.base;
    let (plan, work) = plan_and_scratch(base)?;
    let index = IndexJob::new(base, None, control, plan, work.path());
    let inputs = index.spool_stdin()?;
    let mut stats = DedupStats {
        unit: crate::dedup::unit_name(config.unit).into(),
        exact_only: true,
        memory_budget: base.memory,
        ..DedupStats::default()
    };
    let job = ExactJob { config, control, plan, index: &index, inputs: &inputs, fingerprint };
    let t = Instant::now();
    let found = job.fingerprint_pass(&mut stats)?;
    stats.verify_passes = found.ranges.len() as u64;
    let mut marks = vec![0u64; found.candidates.len()];
    for range in 0..found.ranges.len().saturating_sub(1) {
        job.verify(&found, range, &mut marks, &mut stats)?;
    }
    stats.seconds.exact = t.elapsed().as_secs_f64();
    let t = Instant::now();
    job.write(&found, &mut marks, &mut out, &mut stats)?;
    stats.seconds.decisions = t.elapsed().as_secs_f64();
    drop(work);
    stats.seconds.total = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    Ok(stats)
}

struct ExactJob<'a> {
    config: &'a DedupConfig,
    control: &'a Control,
    plan: MemoryPlan,
    index: &'a IndexJob<'a>,
    inputs: &'a [Input],
    fingerprint: Fingerprint,
}

/// What the fingerprint pass found.
struct Candidates {
    /// One bit per unit: its key is shared with another unit.
    candidates: Vec<u64>,
    /// The first key prefix of each verification range, ascending; the first is 0.
    ranges: Vec<u128>,
    /// Units in the corpus.
    units: u64,
}

impl Candidates {
    /// The range a key prefix falls in.
    fn range_of(&self, prefix: u128) -> usize {
        self.ranges.partition_point(|&start| start <= prefix) - 1
    }
}

fn bit(bits: &[u64], i: u64) -> bool {
    bits.get((i / 64) as usize).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

fn set_bit(bits: &mut [u64], i: u64) {
    bits[(i / 64) as usize] |= 1 << (i % 64);
}

/// A unit's sort key: the first 96 bits of its fingerprint, then its text's length.
fn key_words(fp: u128, len: usize) -> [u32; 4] {
    [(fp >> 96) as u32, (fp >> 64) as u32, (fp >> 32) as u32, u32::try_from(len).unwrap_or(u32::MAX)]
}

/// The part of a key that orders the verification ranges (fingerprint bits only).
fn key_prefix(words: &[u32]) -> u128 {
    (u128::from(words[0]) << 64) | (u128::from(words[1]) << 32) | u128::from(words[2])
}

impl ExactJob<'_> {
    fn stream<'s>(&'s self, wanted: Option<&'s [u64]>) -> Result<DocStream<'s>, PipelineError> {
        let base = &self.config.base;
        let mut stream = DocStream::new(
            self.inputs,
            &base.read,
            self.plan,
            self.config.unit,
            (base.norm, &base.stopwords),
            (self.index.working() / 8) as usize,
            crossbeam_channel::never(),
        );
        stream.keys = true;
        if wanted.is_none() {
            // The fingerprint pass compares fingerprints and lengths only.
            stream.digest = Some(self.fingerprint);
        }
        // Markup may run across units, which are then not tokenised alone: tokenise everything.
        if let Some(wanted) = wanted
            && !base.norm.strip_markup
        {
            let path = self.token_counts();
            let file = std::fs::File::open(&path).map_err(|e| PipelineError::io(&path, e))?;
            stream.known = Some(KnownUnits { counts: std::io::BufReader::new(file), path, wanted, next: 0 });
        }
        Ok(stream)
    }

    /// Where the fingerprint pass saves each unit's token count (4 bytes a unit), for the
    /// later passes, which then tokenise only the candidates again.
    fn token_counts(&self) -> std::path::PathBuf {
        self.index.work.join("unit-tokens.u32")
    }

    /// Room for the verification table: half of what the bit sets leave; the
    /// documents read ahead take at most a fifth (see [`Self::read_all`]), and a
    /// test limit may make the room smaller.
    fn verify_room(&self, units: u64) -> u64 {
        let bits = units.div_ceil(64) * 8 * 2;
        let room = self.index.working().saturating_sub(bits) / 2;
        self.config.base.limits.chunk_ngrams.map_or(room, |c| c as u64 * 8)
    }

    /// Documents of the corpus in order (see [`read_batched`]).
    fn read_all(
        &self,
        wanted: Option<&[u64]>,
        ids: Option<Vec<String>>,
        each: impl FnMut(Item, bool, u64) -> Result<(), PipelineError>,
    ) -> Result<(), PipelineError> {
        let mut stream = self.stream(wanted)?;
        stream.ids = ids;
        read_batched(stream, self.control, (self.index.working(), self.config.base.threads), each)
    }

    /// Fingerprints every unit, sorts them out of core and finds the candidates.
    fn fingerprint_pass(&self, stats: &mut DedupStats) -> Result<Candidates, PipelineError> {
        self.control.start_pass("fingerprinting units", self.inputs.iter().map(Input::size).sum());
        let chunk = self.config.base.limits.chunk_ngrams;
        let mut sort = UnitSort::new(self.index.work, self.index.working(), chunk, EXACT_ONLY_RUNS)?;
        let mut unit = 0u64;
        let counts_path = self.token_counts();
        let mut counts = std::io::BufWriter::with_capacity(
            1 << 16,
            std::fs::File::create(&counts_path).map_err(|e| PipelineError::io(&counts_path, e))?,
        );
        self.read_all(None, None, |item, _, _| {
            let Item::Doc(doc) = item else { return Ok(()) };
            stats.index.documents += 1;
            for (u, &tokens) in doc.unit_tokens.iter().enumerate() {
                stats.index.tokens += u64::from(tokens);
                counts.write_all(&tokens.to_le_bytes()).map_err(|e| PipelineError::io(&counts_path, e))?;
                if tokens > 0 {
                    sort.push(key_words(doc.fingerprints[u], doc.key_len(u)), unit)?;
                }
                unit += 1;
            }
            Ok(())
        })?;
        let sorted = sort.finish()?;
        counts.flush().map_err(|e| PipelineError::io(&counts_path, e))?;
        drop(counts);
        stats.index.bytes_spilled += sorted.spilled;
        self.control.start_pass("finding repeated fingerprints", None);
        let mut sink = GroupSink {
            candidates: vec![0; unit.div_ceil(64) as usize],
            ranges: vec![0],
            room: self.verify_room(unit),
            filled: 0,
            last_prefix: None,
            groups: 0,
        };
        sorted.merge(self.index.fan_in(unit / 4), &mut sink, self.control)?;
        stats.exact_groups = sink.groups;
        Ok(Candidates { candidates: sink.candidates, ranges: sink.ranges, units: unit })
    }

    /// One verification pass: marks the duplicates among the candidates of `range`.
    fn verify(
        &self,
        found: &Candidates,
        range: usize,
        marks: &mut [u64],
        stats: &mut DedupStats,
    ) -> Result<(), PipelineError> {
        self.control.start_pass(
            &format!("verifying range {} of {}", range + 1, found.ranges.len()),
            self.inputs.iter().map(Input::size).sum(),
        );
        let mut table = Verifier::default();
        let mut unit = 0u64;
        self.read_all(Some(&found.candidates), None, |item, _, _| {
            let Item::Doc(doc) = item else { return Ok(()) };
            for u in 0..doc.unit_tokens.len() {
                if bit(&found.candidates, unit) {
                    let text = doc.key(u);
                    let fp = (self.fingerprint)(text);
                    if found.range_of(key_prefix(&key_words(fp, text.len()))) == range && table.seen(fp, text) {
                        set_bit(marks, unit);
                    }
                }
                unit += 1;
            }
            Ok(())
        })?;
        stats.fingerprint_collisions += table.collisions;
        Ok(())
    }

    /// The output pass, verifying the last range on the way.
    fn write(
        &self,
        found: &Candidates,
        marks: &mut [u64],
        out: &mut DedupOutput,
        stats: &mut DedupStats,
    ) -> Result<(), PipelineError> {
        self.control.start_pass("deduplicating", self.inputs.iter().map(Input::size).sum());
        let last = found.ranges.len() - 1;
        let mut table = Verifier::default();
        let mut writer = out.doc_writer(self.config.strip, &self.config.base.read.text_field)?;
        let (mut unit, mut docs) = (0u64, 0u64);
        let mut verdicts = Vec::new();
        let mut exact = Vec::new();
        let ids = out.id_names(&self.config.base.inputs);
        self.read_all(Some(&found.candidates), ids, |item, vertical, _| {
            let doc = match item {
                Item::Passthrough(line) => return out.passthrough(&mut writer, &line, vertical),
                Item::Doc(doc) => doc,
            };
            verdicts.clear();
            exact.clear();
            for u in 0..doc.unit_tokens.len() {
                let mut duplicate = bit(marks, unit);
                if !duplicate && bit(&found.candidates, unit) {
                    let text = doc.key(u);
                    let fp = (self.fingerprint)(text);
                    if found.range_of(key_prefix(&key_words(fp, text.len()))) == last && table.seen(fp, text) {
                        set_bit(marks, unit);
                        duplicate = true;
                    }
                }
                verdicts.push(UnitVerdict { covered: 0, duplicate, smoothed: false });
                exact.push(duplicate);
                unit += 1;
            }
            record(stats, &doc.unit_tokens, &verdicts, &exact);
            docs += 1;
            out.document(&mut writer, &doc, &verdicts, &exact)
        })?;
        out.finish_documents(&mut writer)?;
        stats.fingerprint_collisions += table.collisions;
        if docs != stats.index.documents || unit != found.units {
            return Err(PipelineError::Changed(format!(
                "{} documents and {} units were fingerprinted, {docs} and {unit} read back",
                stats.index.documents, found.units
            )));
        }
        Ok(())
    }
}

/// The texts seen so far under each fingerprint of a verification range.
#[derive(Default)]
struct Verifier {
    texts: HashMap<u128, Vec<Box<[u8]>>>,
    /// Units whose fingerprint matched an earlier unit's text but whose text differed.
    collisions: u64,
}

impl Verifier {
    /// Whether `text` was seen before; if not, it is remembered.
    fn seen(&mut self, fp: u128, text: &[u8]) -> bool {
        let texts = self.texts.entry(fp).or_default();
        if texts.iter().any(|t| **t == *text) {
            return true;
        }
        if !texts.is_empty() {
            self.collisions += 1;
        }
        texts.push(text.into());
        false
    }
}

/// Takes the merged groups of equal keys: marks the members of groups of two
/// or more as candidates, and cuts the key space into verification ranges
/// whose first members' texts fit `room`.
struct GroupSink {
    candidates: Vec<u64>,
    ranges: Vec<u128>,
    room: u64,
    /// Bytes of the current range's table so far.
    filled: u64,
    last_prefix: Option<u128>,
    groups: u64,
}

impl MergeSink for GroupSink {
    type Error = PipelineError;

    fn accept(&mut self, key: &[u32], _count: u64, units: &[u64]) -> Result<(), PipelineError> {
        if units.len() < 2 {
            return Ok(());
        }
        self.groups += 1;
        for &u in units {
            set_bit(&mut self.candidates, u);
        }
        let need = u64::from(key[3]) + PER_TEXT_BYTES;
        let prefix = key_prefix(key);
        // A range starts only where the fingerprint changes, so that every
        // key of a fingerprint lies in one range.
        if self.filled > 0 && self.filled + need > self.room && self.last_prefix != Some(prefix) {
            self.ranges.push(prefix);
            self.filled = 0;
        }
        self.filled += need;
        self.last_prefix = Some(prefix);
        Ok(())
    }
}
