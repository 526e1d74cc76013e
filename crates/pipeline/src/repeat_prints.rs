//! Counting in parts with the repeats proven once, out of core.
//!
//! A count in parts by first word ([`crate::first_words`]) refills a sieve
//! for every part, because a sieve must see every n-gram of its part to
//! prove one unique: two reads of the word streams a part, and the parts
//! grow with the corpus. Here the proof is made once for all parts:
//!
//! 1. **Prints** — one read of the streams writes every n-gram's *print*
//!    ([`print_bits`] bits: the n-gram's first-word bucket, then the top
//!    bits of its key's fingerprint) into sorted runs
//!    ([`dupgram_runs::prints`]), each print with a bit saying whether it
//!    repeated within its chunk, cut by range of buckets.
//! 2. **Repeats** — a merge of each range's runs (the ranges side by side,
//!    a thread each) keeps the prints that occur twice or more: the
//!    *repeat prints*, about as many as the distinct repeated n-grams.
//! 3. **Parts** — consecutive buckets whose repeat prints fill a table of
//!    marks ([`Sieve::marked`]); for each, the table is marked with those
//!    prints and the streams are read once, keeping the part's n-grams
//!    whose print is marked. The count and the merge are the ones a part of
//!    [`crate::first_words`] has.
//!
//! # Why the output is exact
//!
//! Every occurrence of an n-gram has the same print (made of its key), so
//! a repeated n-gram's print occurs twice or more in the runs, is kept by
//! the merge, is marked in its part's table (marks are only ever set), and
//! every occurrence of the n-gram is counted: nothing repeated is dropped.
//! A unique n-gram gets through when another n-gram of its bucket has the
//! same print (about once in 2^6 for the bits chosen) or when the marks
//! answer "may repeat" for it (about 3 %); it is then sorted and counted
//! exactly like the others, and the merge drops it with its count of one.
//! So prints decide only what gets sorted: the output is byte for byte
//! what a sieve per part, or none, gives.
//!
//! # What it costs
//!
//! One read of the streams, the print runs on disk until they are merged
//! (about 6 + log₂(n-grams / chunk) + 2.7 bits a print), their merge, and
//! a read of the repeat prints per part; then one read of the streams a
//! part, with parts of repeated n-grams instead of parts of all n-grams.
//! It is chosen when a sieve per part would need three parts or more and
//! the prints fit in the room on disk ([`print_runs_fit`]).

use std::ops::Range;
use std::path::{Path, PathBuf};

use dupgram_chunker::KeyLayout;
use dupgram_lexicon::Lexicon;
use dupgram_merge::LoserTree;
use dupgram_runs::prints::{PrintReader, PrintWriter, rice_for};
use dupgram_sieve::{DelayLine, Sieve};

use crate::first_words::FirstWords;
use crate::scan::ScanSink;
use crate::stream_walk::StreamJob;
use crate::words::{each_stream, read_words};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::human_bytes;

/// Bits of a print that name the first-word bucket.
const BUCKET_BITS: u32 = 10;
/// Bits of a print beyond the log of the n-grams: a unique n-gram shares
/// its print with another one of its bucket about once in 2^6 = 64.
const SPARE_BITS: u32 = 6;

/// The bits of a print for a corpus of `ngrams` n-grams: a unique n-gram
/// shares its print with another about once in 2^[`SPARE_BITS`], and the
/// runs take about `SPARE_BITS` + log₂(n-grams / chunk) + 2.7 bits a print.
pub(crate) fn print_bits(ngrams: u64) -> u32 {
    (64 - ngrams.max(1).leading_zeros() + SPARE_BITS).clamp(BUCKET_BITS + 16, 60)
}

/// Bytes a print run's reader holds: its buffered file (32 KiB) and a
/// block (64 KiB), and room for a block a little over that.
pub(crate) const PRINT_READER_BYTES: u64 = 128 << 10;

/// Ranges of first-word IDs holding about equal shares of the tokens
/// (at most 2^[`BUCKET_BITS`]), and how an n-gram's print is made.
pub(crate) struct PrintBuckets {
    /// Bucket `b` holds the first words `starts[b]..starts[b + 1]`.
    starts: Vec<u32>,
    layout: KeyLayout,
    /// The bucket of each first word below 2^16 (the frequent ones, which
    /// start most n-grams), so most prints need no search.
    low: Vec<u16>,
    /// Bits of a print, and of those the fingerprint's.
    bits: u32,
    hash_bits: u32,
}

impl PrintBuckets {
    /// Buckets of `lexicon`'s first words, prints of `bits` bits ([`print_bits`]).
    pub fn new(lexicon: &Lexicon, layout: KeyLayout, bits: u32) -> Self {
        let starts: Vec<u32> = FirstWords::split(lexicon, 1 << BUCKET_BITS).iter().map(|p| p.start).collect();
        let low = (0..lexicon.len().min(1 << 16) as u32).map(|id| bucket_in(&starts, id) as u16).collect();
        PrintBuckets { starts, low, layout, bits, hash_bits: bits - BUCKET_BITS }
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// The print of the n-gram of `key`, whose key fingerprint is `fingerprint`.
    #[inline]
    pub fn print<const L: usize>(&self, key: &[u64; L], fingerprint: u64) -> u64 {
        let first = self.layout.id_at(key, 0);
        let bucket = match self.low.get(first as usize) {
            Some(&b) => u64::from(b),
            None => bucket_in(&self.starts, first) as u64,
        };
        (bucket << self.hash_bits) | (fingerprint >> (64 - self.hash_bits))
    }

    /// The bucket a print names.
    #[inline]
    pub fn bucket_of(&self, print: u64) -> usize {
        (print >> self.hash_bits) as usize
    }

    /// The first words of buckets `buckets`.
    pub fn first_words(&self, buckets: Range<usize>) -> FirstWords {
        FirstWords { start: self.starts[buckets.start], end: self.starts.get(buckets.end).copied() }
    }
}

/// Plans the parts of a count over the repeat prints, one at a time: each
/// the most consecutive buckets whose repeat prints the marks take and
/// whose runs fit the room on disk, at the most bytes a token took in the
/// parts counted so far (a guess for the first), as [`crate::first_words::PartPlan`] does.
pub(crate) struct BucketPlan {
    /// Repeat prints and tokens of each bucket.
    repeats: Vec<u64>,
    tokens: Vec<u64>,
    /// The next bucket to count.
    next: usize,
    /// Repeat prints the marks take.
    marks: u64,
    disk_room: u64,
    rate: f64,
    /// Tokens of the part being counted.
    counting: u64,
    done: usize,
}

impl BucketPlan {
    pub fn new(prints: &RepeatPrints, buckets: &PrintBuckets, lexicon: &Lexicon, marks: u64, disk_room: u64) -> Self {
        let tokens = (0..buckets.len()).map(|b| buckets.first_words(b..b + 1).tokens(lexicon)).collect();
        BucketPlan {
            repeats: prints.per_bucket.clone(),
            tokens,
            next: 0,
            marks: marks.max(1),
            disk_room: disk_room.max(1),
            rate: crate::first_words::FIRST_RATE,
            counting: 0,
            done: 0,
        }
    }

    /// The next part's buckets, and how many parts the plan now expects in all.
    pub fn next(&mut self) -> Option<(Range<usize>, usize)> {
        let start = self.next;
        if start >= self.repeats.len() {
            return None;
        }
        let by_disk = (self.disk_room as f64 / self.rate).max(1.0) as u64;
        let (mut end, mut repeats, mut tokens) = (start + 1, self.repeats[start], self.tokens[start]);
        while end < self.repeats.len()
            && repeats + self.repeats[end] <= self.marks
            && tokens + self.tokens[end] <= by_disk
        {
            repeats += self.repeats[end];
            tokens += self.tokens[end];
            end += 1;
        }
        let left_repeats: u64 = self.repeats[end..].iter().sum();
        let left_tokens: u64 = self.tokens[end..].iter().sum();
        let left = left_repeats.div_ceil(self.marks).max(left_tokens.div_ceil(by_disk.max(1)));
        if left == 0 {
            // Buckets with nothing in them go with this part, which is then
            // the last: the streams may go as it reads them.
            end = self.repeats.len();
        }
        self.next = end;
        self.done += 1;
        self.counting = tokens;
        Some((start..end, self.done + left as usize))
    }

    /// The part just planned wrote `run_bytes` of runs.
    pub fn counted(&mut self, run_bytes: u64) {
        if self.counting > 0 {
            let rate = run_bytes as f64 / self.counting as f64 * 1.1;
            self.rate = if self.done == 1 { rate } else { self.rate.max(rate) };
        }
    }
}

/// The bucket of first word `id`, of buckets starting at `starts`.
fn bucket_in(starts: &[u32], id: u32) -> usize {
    starts.partition_point(|&s| s <= id).saturating_sub(1)
}

/// The prints proven to repeat, on disk (a file per range of buckets, in
/// order), with how many fall in each bucket.
pub(crate) struct RepeatPrints {
    /// File `r` holds the prints of the buckets of range `r` ([`range_of`]).
    paths: Vec<PathBuf>,
    /// Bits of a print below its bucket number.
    hash_bits: u32,
    pub per_bucket: Vec<u64>,
    pub total: u64,
    /// Bytes of print runs written on the way (all removed by now).
    pub run_bytes: u64,
}

/// Of `ranges` ranges of buckets, the one bucket `bucket` is in: ranges
/// hold about equal numbers of buckets, in order.
fn range_of(bucket: usize, ranges: usize) -> usize {
    (bucket * ranges) >> BUCKET_BITS
}

impl RepeatPrints {
    /// Marks `marks` (cleared first) with the repeat prints of `buckets`.
    pub fn mark(&self, marks: &mut Sieve, buckets: Range<usize>, control: &Control) -> Result<(), PipelineError> {
        marks.clear();
        let mut line = DelayLine::default();
        let ranges = self.paths.len();
        let wanted = range_of(buckets.start, ranges)..range_of(buckets.end.saturating_sub(1), ranges) + 1;
        for path in &self.paths[wanted] {
            let mut reader = PrintReader::open(path)?;
            let mut read = 0u64;
            while let Some((print, _)) = reader.next_print()? {
                read += 1;
                if read.is_multiple_of(1 << 20) && control.interrupted() {
                    return Err(PipelineError::Interrupted);
                }
                let bucket = (print >> self.hash_bits) as usize;
                if bucket >= buckets.end {
                    break;
                }
                if bucket >= buckets.start {
                    marks.mark_delayed(&mut line, print);
                }
            }
        }
        marks.flush_marks(&mut line);
        Ok(())
    }
}

impl Drop for RepeatPrints {
    fn drop(&mut self) {
        remove_all(&self.paths);
    }
}

/// A count's repeats, proven once: the repeat prints, the buckets they
/// are cut by, and the table of marks each part fills with its share.
pub(crate) struct Proof {
    pub prints: RepeatPrints,
    pub buckets: PrintBuckets,
    pub marks: Sieve,
}

/// What a proof may use.
pub(crate) struct ProofRoom {
    /// Prints a stream's chunk holds.
    pub chunk: usize,
    /// Ranges of buckets merged side by side, a thread each.
    pub threads: usize,
    /// Runs merged at once, in all.
    pub fan_in: usize,
    /// The most bytes the table of marks may take.
    pub marks: u64,
    /// The job's `--memory`, named when the table cannot be had.
    pub budget: u64,
}

/// Whether the print runs of a count of at most `ngrams` n-grams, sorted
/// `chunk` prints at a time, fit in `room` bytes of disk: a print takes
/// about log₂(2^bits / chunk) + 2.7 bits in its run (see
/// [`dupgram_runs::prints`]), and the repeat prints, written while the runs
/// are merged, a quarter more.
pub(crate) fn print_runs_fit(ngrams: u64, chunk: usize, room: u64) -> bool {
    let bits = (f64::from(print_bits(ngrams)) - (chunk.max(2) as f64).log2()).max(0.0) + 2.8;
    ngrams as f64 * bits / 8.0 * 1.25 <= room as f64
}

/// The print pass and its merge over a count of at most `ngrams` n-grams
/// ([`prove_repeats`]), and a table of marks no larger than the room allows
/// nor than all the repeats need.
pub(crate) fn prove(
    job: &StreamJob,
    ngrams: u64,
    room: &ProofRoom,
    work: &Path,
    control: &Control,
) -> Result<Proof, PipelineError> {
    let buckets = PrintBuckets::new(job.lexicon, job.layout, print_bits(ngrams));
    let merges = (room.threads.max(1), room.fan_in);
    let prints = match job.layout.words() {
        1 => prove_repeats::<1>(job, &buckets, room.chunk, merges, work, control),
        2 => prove_repeats::<2>(job, &buckets, room.chunk, merges, work, control),
        3 => prove_repeats::<3>(job, &buckets, room.chunk, merges, work, control),
        4 => prove_repeats::<4>(job, &buckets, room.chunk, merges, work, control),
        6 => prove_repeats::<6>(job, &buckets, room.chunk, merges, work, control),
        8 => prove_repeats::<8>(job, &buckets, room.chunk, merges, work, control),
        12 => prove_repeats::<12>(job, &buckets, room.chunk, merges, work, control),
        _ => prove_repeats::<16>(job, &buckets, room.chunk, merges, work, control),
    }?;
    let bytes = room.marks.min(prints.total.max(1 << 16)) >> 12 << 12;
    let marks = Sieve::marked(bytes.max(4096) as usize).map_err(|e| PipelineError::Memory {
        budget: human_bytes(room.budget),
        what: format!("no memory map for the table of repeats: {e}"),
    })?;
    Ok(Proof { prints, buckets, marks })
}

/// Reads the word streams once and writes every n-gram's print into sorted
/// runs of at most `capacity` prints a stream, cut into `ranges` ranges of
/// buckets; then merges each range's runs (on a thread of its own, at most
/// `fan_in` runs at a time in all) into the prints seen twice or more.
pub(crate) fn prove_repeats<const L: usize>(
    job: &StreamJob,
    buckets: &PrintBuckets,
    capacity: usize,
    (ranges, fan_in): (usize, usize),
    work: &Path,
    control: &Control,
) -> Result<RepeatPrints, PipelineError> {
    let StreamJob { streams, streamed, layout, .. } = *job;
    let ranges = ranges.clamp(1, 1 << BUCKET_BITS);
    let codes: u64 = streams.iter().map(|f| f.bytes).sum();
    control.start_pass("prints", Some(codes));
    let outputs = each_stream(streams, |stream, file, abort| {
        let mut sink = PrintSink {
            buckets,
            prints: Vec::with_capacity(capacity),
            capacity: capacity.max(1),
            ranges,
            runs: vec![Vec::new(); ranges],
            chunks: 0,
            work,
            stream,
            bytes: 0,
            failure: None,
        };
        let mut walk = streamed.walk::<L>(layout, stream, true)?;
        read_words(file, streamed.vocabulary, false, control, abort, |codes| {
            walk.codes(codes, &mut sink);
            walk.check()?;
            sink.failure.take().map_or(Ok(()), Err)
        })?;
        walk.finish()?;
        sink.spill()?;
        Ok((sink.runs, sink.bytes))
    })?;
    let mut by_range = vec![Vec::new(); ranges];
    let mut run_bytes = 0;
    for (runs, bytes) in outputs {
        for (all, these) in by_range.iter_mut().zip(runs) {
            all.extend(these);
        }
        run_bytes += bytes;
    }
    control.start_pass("repeats", None);
    let fan_in = (fan_in / ranges).max(2);
    let merged: Vec<Result<RangeRepeats, PipelineError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = by_range
            .into_iter()
            .enumerate()
            .map(|(r, runs)| scope.spawn(move || merge_range(r, runs, buckets, fan_in, work, control)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(PipelineError::Usage("internal error: a merge thread panicked".into())))
            })
            .collect()
    });
    let mut proof = RepeatPrints {
        paths: Vec::new(),
        hash_bits: buckets.hash_bits,
        per_bucket: vec![0; buckets.len()],
        total: 0,
        run_bytes,
    };
    let mut first_error = None;
    for range in merged {
        match range {
            Ok(range) => {
                proof.paths.push(range.path);
                for (all, this) in proof.per_bucket.iter_mut().zip(range.per_bucket) {
                    *all += this;
                }
                proof.total += range.total;
                proof.run_bytes += range.run_bytes;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(proof),
    }
}

/// What the merge of one range of buckets gives.
struct RangeRepeats {
    path: PathBuf,
    per_bucket: Vec<u64>,
    total: u64,
    /// Bytes of intermediate runs written.
    run_bytes: u64,
}

/// Merges the print runs of range `r`, at most `fan_in` at a time, into
/// the file of its repeat prints; removes the runs.
fn merge_range(
    r: usize,
    mut runs: Vec<PathBuf>,
    buckets: &PrintBuckets,
    fan_in: usize,
    work: &Path,
    control: &Control,
) -> Result<RangeRepeats, PipelineError> {
    let mut run_bytes = 0;
    let mut round = 0;
    while runs.len() > fan_in {
        // More runs than the fan-in: merge as few of the first ones as
        // leave the fan-in's worth into one run that keeps every print (and
        // whether it repeated), and go again. Few, because the merged run
        // sits on disk beside its inputs until it is done.
        let rest = runs.split_off((runs.len() - fan_in + 1).clamp(2, fan_in));
        let path = work.join(format!("prints-r{r:04}-m{round:04}.dgp"));
        round += 1;
        let mut out = PrintOut::create(&path, buckets.bits, 0)?;
        let merged = merge_prints(&runs, control, |print, repeated| out.push(print, repeated));
        remove_all(&runs);
        merged?;
        run_bytes += out.finish()?;
        runs = rest;
        runs.push(path);
    }
    let path = work.join(format!("repeats-r{r:04}.dgp"));
    let mut per_bucket = vec![0u64; buckets.len()];
    let mut out = PrintOut::create(&path, buckets.bits, 0)?;
    let mut total = 0;
    let merged = merge_prints(&runs, control, |print, repeated| {
        if !repeated {
            return Ok(());
        }
        total += 1;
        if let Some(c) = per_bucket.get_mut(buckets.bucket_of(print)) {
            *c += 1;
        }
        out.push(print, false)
    });
    remove_all(&runs);
    merged?;
    out.finish()?;
    Ok(RangeRepeats { path, per_bucket, total, run_bytes })
}

fn remove_all(paths: &[PathBuf]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

/// A print run being written to a file.
struct PrintOut {
    writer: PrintWriter<std::io::BufWriter<std::fs::File>>,
}

impl PrintOut {
    /// A run of prints of `bits` bits at `path`, Rice-coded for about
    /// `expected` prints (0: unknown, a few thousandths of the space).
    fn create(path: &Path, bits: u32, expected: u64) -> Result<Self, PipelineError> {
        let file = std::fs::File::create(path).map_err(|e| PipelineError::io(path, e))?;
        let space = 1u64 << bits;
        let rice = rice_for(space / expected.max(space >> 8).max(1));
        let writer = PrintWriter::new(std::io::BufWriter::with_capacity(64 << 10, file), path, bits, rice)?;
        Ok(PrintOut { writer })
    }

    fn push(&mut self, print: u64, repeated: bool) -> Result<(), PipelineError> {
        Ok(self.writer.push(print, repeated)?)
    }

    /// Bytes written.
    fn finish(self) -> Result<u64, PipelineError> {
        Ok(self.writer.finish()?.1)
    }
}

/// Merges print runs: hands each distinct print to `emit` once, repeated
/// when any run says so or more than one run holds it.
fn merge_prints(
    runs: &[PathBuf],
    control: &Control,
    mut emit: impl FnMut(u64, bool) -> Result<(), PipelineError>,
) -> Result<(), PipelineError> {
    const DONE: u64 = u64::MAX;
    let mut readers = runs.iter().map(|p| PrintReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let mut heads = Vec::with_capacity(readers.len());
    for r in &mut readers {
        heads.push(r.next_print()?.unwrap_or((DONE, false)));
    }
    let mut tree = LoserTree::new(readers.len(), |a, b| heads[a].0 < heads[b].0);
    let mut current: Option<(u64, bool)> = None;
    let mut merged = 0u64;
    loop {
        let w = tree.winner();
        let (print, repeated) = heads[w];
        if print == DONE {
            break;
        }
        merged += 1;
        if merged.is_multiple_of(1 << 22) && control.interrupted() {
            return Err(PipelineError::Interrupted);
        }
        current = match current {
            Some((p, _)) if p == print => Some((p, true)),
            Some((p, r)) => {
                emit(p, r)?;
                Some((print, repeated))
            }
            None => Some((print, repeated)),
        };
        heads[w] = readers[w].next_print()?.unwrap_or((DONE, false));
        tree.replay(w, |a, b| heads[a].0 < heads[b].0);
    }
    if let Some((p, r)) = current {
        emit(p, r)?;
    }
    Ok(())
}

/// The print pass's sink: every n-gram's print into a chunk, sorted and
/// written as runs (one per range of buckets) when full.
struct PrintSink<'a> {
    buckets: &'a PrintBuckets,
    prints: Vec<u64>,
    capacity: usize,
    ranges: usize,
    /// Each range's runs.
    runs: Vec<Vec<PathBuf>>,
    chunks: usize,
    work: &'a Path,
    stream: usize,
    bytes: u64,
    failure: Option<PipelineError>,
}

impl<const L: usize> ScanSink<L> for PrintSink<'_> {
    #[inline]
    fn ngram(&mut self, key: [u64; L], fingerprint: u64, _start: u64) {
        self.prints.push(self.buckets.print(&key, fingerprint));
        if self.prints.len() >= self.capacity
            && let Err(e) = self.spill()
        {
            self.failure.get_or_insert(e);
        }
    }
}

impl PrintSink<'_> {
    /// Sorts the chunk and writes it as runs, one per range of buckets:
    /// each print once, with whether it occurred more than once.
    fn spill(&mut self) -> Result<(), PipelineError> {
        if self.prints.is_empty() {
            return Ok(());
        }
        self.prints.sort_unstable();
        let chunk = self.chunks;
        self.chunks += 1;
        let mut from = 0;
        for r in 0..self.ranges {
            let buckets = self.buckets;
            let to = from + self.prints[from..].partition_point(|&p| range_of(buckets.bucket_of(p), self.ranges) <= r);
            if to > from {
                let path = self.work.join(format!("prints-r{r:04}-w{}-{chunk:06}.dgp", self.stream));
                // The range's prints spread over a share of the space: spaced as if all were there.
                self.bytes += write_run(&path, buckets.bits, &self.prints[from..to], self.ranges)?;
                self.runs[r].push(path);
            }
            from = to;
        }
        self.prints.clear();
        Ok(())
    }
}

/// Writes sorted `prints` as a run: each once, with whether it repeated.
fn write_run(path: &Path, bits: u32, prints: &[u64], ranges: usize) -> Result<u64, PipelineError> {
    let mut out = PrintOut::create(path, bits, (prints.len() * ranges) as u64)?;
    let mut i = 0;
    while i < prints.len() {
        let print = prints[i];
        let mut j = i + 1;
        while j < prints.len() && prints[j] == print {
            j += 1;
        }
        out.push(print, j - i > 1)?;
        i = j;
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(repeats: Vec<u64>, tokens: Vec<u64>, marks: u64, disk_room: u64) -> BucketPlan {
        BucketPlan { repeats, tokens, next: 0, marks, disk_room, rate: 1.0, counting: 0, done: 0 }
    }

    /// Every part's buckets, and the parts the plan expected when it gave it.
    fn parts(mut plan: BucketPlan) -> Vec<(Range<usize>, usize)> {
        std::iter::from_fn(|| plan.next()).collect()
    }

    #[test]
    fn parts_cover_every_bucket_once_within_the_marks_and_the_last_is_known() {
        let repeats = vec![5, 5, 5, 20, 1, 1, 1, 0, 0];
        let tokens = vec![10; 9];
        let got = parts(plan(repeats.clone(), tokens.clone(), 10, 1000));
        let ranges: Vec<Range<usize>> = got.iter().map(|(r, _)| r.clone()).collect();
        // A bucket past the marks is a part alone; empty buckets at the end go with the last.
        assert_eq!(ranges, vec![0..2, 2..3, 3..4, 4..9]);
        assert_eq!(got.last().unwrap().1, got.len(), "the last part knows it is the last");
        assert!(got[..got.len() - 1].iter().enumerate().all(|(i, (_, p))| *p > i + 1), "{got:?}");
        // The disk cuts too: at most 20 tokens a part (rate 1).
        let by_disk = parts(plan(repeats, tokens, 100, 20));
        assert!(by_disk.iter().all(|(r, _)| r.len() <= 2 || r.end == 9), "{by_disk:?}");
        assert_eq!(by_disk.iter().map(|(r, _)| r.len()).sum::<usize>(), 9);
    }

    #[test]
    fn prints_have_six_bits_beyond_the_log_of_the_ngrams() {
        assert_eq!(print_bits(1), BUCKET_BITS + 16);
        assert_eq!(print_bits(1_000_000_000), 30 + SPARE_BITS);
        assert_eq!(print_bits(10_000_000_000), 34 + SPARE_BITS);
        assert_eq!(print_bits(u64::MAX), 60);
    }
}
