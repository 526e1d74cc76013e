//! `dupgram update`: a day's documents added to a job that keeps its state.
//!
//! The state of a job planned with `--keep-state` is the count of every
//! n-gram of its corpus, unique ones too, per bucket, with the lexicon of
//! their IDs. A bucket's counts are the sum of its *segments*: sorted runs
//! of n-grams with counts, each written by one generation — the job's
//! `finish` writes generation 0 (`state/gen-0000/`), each update the next.
//! An update
//!
//! 1. counts the new documents' words and extends the lexicon — known words
//!    keep their IDs, new words get the next ones ([`Lexicon::updated`]);
//! 2. counts the new documents' n-grams into runs, cut by the job's buckets
//!    (new words have the highest IDs, so their n-grams fall in the last),
//!    and merges each bucket's into one;
//! 3. per bucket, merges the stored segments and walks them beside the
//!    day's n-grams once, reporting every n-gram whose count reaches
//!    `--min-count` today, and writes a new segment: only the day's counts,
//!    or — once a bucket has `max_segments` segments — all of them merged
//!    into one (the merge policy: reading stays within a few segments per
//!    bucket, writing is mostly just the day's).
//!
//! Its cost is the new data plus one sequential read of the state; the old
//! corpus is not read again. The next generation is built under a temporary
//! name, renamed, and recorded in `tasks/update-NNNN.json` with the list of
//! segments it consists of; until then the previous one stands, so an update
//! killed midway leaves the state as it was and can simply be run again.
//! Generations no segment is read from any more are removed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_lexicon::{Lexicon, Scope};
use dupgram_pipeline::output::{DupTsvWriter, OutputFile};
use dupgram_pipeline::{Control, NgramConfig, NgramStats, Passes, PipelineError, RunFile, peak_rss};
use dupgram_runs::{RunHeader, RunReader, RunWriter};
use serde::{Deserialize, Serialize};

use crate::record::{read_record, write_record};
use crate::{ClusterError, InputFile, JobPlan, WorkDir};

/// The directory of state generation `generation`, in the work directory.
pub(crate) fn generation_dir(generation: u32) -> String {
    format!("state/gen-{generation:04}")
}

/// Segments per bucket, by default, before an update merges them into one.
pub const MAX_SEGMENTS: usize = 8;

/// Where an update's reports go, and its merge policy.
#[derive(Debug, Clone)]
pub struct UpdateOutputs {
    /// N-grams whose count reached `--min-count` with the new documents, with their counts.
    pub newly_duplicated: Option<PathBuf>,
    /// Every n-gram of the grown corpus counted at least `--min-count` times.
    pub all_duplicated: Option<PathBuf>,
    /// A bucket with this many segments gets them merged into one.
    pub max_segments: usize,
}

impl Default for UpdateOutputs {
    fn default() -> Self {
        UpdateOutputs { newly_duplicated: None, all_duplicated: None, max_segments: MAX_SEGMENTS }
    }
}

/// What an update did, as printed and recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UpdateStats {
    /// The state generation written.
    pub generation: u32,
    pub inputs: Vec<InputFile>,
    /// The segments of each bucket in this generation, as paths under `state/`.
    pub segments: Vec<Vec<String>>,
    /// Reading and counting the new documents.
    pub count: NgramStats,
    pub new_words: u64,
    /// Distinct n-grams of the whole corpus, before and after.
    pub ngrams_before: u64,
    pub ngrams_after: u64,
    /// N-grams counted at least `--min-count` times now, and those of them that were not before.
    pub duplicated: u64,
    pub newly_duplicated: u64,
    /// Bytes of all the state's segments now, and of those this update wrote.
    pub state_bytes: u64,
    pub written_bytes: u64,
    pub seconds: f64,
    pub peak_rss: u64,
}

/// Adds `inputs` to the job in `work`. `config` is the job's configuration.
pub fn update(
    work: &WorkDir,
    plan: &JobPlan,
    config: &NgramConfig,
    control: &Control,
    inputs: &[PathBuf],
    outputs: &UpdateOutputs,
) -> Result<UpdateStats, ClusterError> {
    let started = Instant::now();
    if !plan.keep_state {
        return Err(ClusterError::Plan(
            "this job keeps no state to update: plan it with --keep-state (the count of every n-gram)".into(),
        ));
    }
    let current = current_generation(work)?;
    let state = work.path(&generation_dir(current));
    if !state.is_dir() {
        return Err(ClusterError::NotReady { task: "update".into(), needs: "finish".into() });
    }
    let segments = current_segments(work, plan, current)?;
    let identities = inputs.iter().map(|p| InputFile::of(p)).collect::<Result<Vec<_>, _>>()?;
    refuse_known(work, plan, current, &identities)?;
    // Open the reports before any work, so a bad path fails at once.
    let mut newly = OutputFile::create(outputs.newly_duplicated.as_deref())?;
    let mut all = outputs.all_duplicated.as_deref().map(|p| OutputFile::create(Some(p))).transpose()?;

    let next = current + 1;
    let scratch = fresh_generation(work, next)?;
    let old = Lexicon::load(&state.join("lexicon.lex"), Scope::All)?;
    // The stop words stay those of the job: changing them would change every n-gram.
    let day_config = NgramConfig {
        inputs: identities.iter().map(|i| dupgram_corpus::Input::Path(i.path.clone())).collect(),
        stopwords: old.stopwords().to_vec(),
        stop_top: 0,
        sieve: false,
        ..config.clone()
    };
    let passes = Passes::new(&day_config, control, scratch.path())?;
    let mut stats = UpdateStats { generation: next, inputs: identities, ..UpdateStats::default() };
    let t = Instant::now();
    let (words, _) = passes.count_words(&day_config.inputs, None, &mut stats.count)?;
    stats.count.seconds.lexicon = t.elapsed().as_secs_f64();
    let lexicon = old.updated(&words).ok_or_else(|| ClusterError::corrupt(&state, "lexicon not fully loaded"))?;
    stats.new_words = (lexicon.len() - old.len()) as u64;
    let old_header = RunHeader::counts(config.n as u8, old.identity());
    drop(old);
    let (day_tokens, day_documents) = (words.tokens(), stats.count.documents);
    drop(words);
    lexicon.save(&scratch.path().join("lexicon.lex"))?;

    let t = Instant::now();
    let bounds = bucket_bounds(work)?;
    let counted = passes.count_ngrams(&day_config.inputs, &lexicon, None, &bounds, &mut stats.count)?;
    stats.count.seconds.count = t.elapsed().as_secs_f64();
    if counted.tokens != day_tokens || counted.documents != day_documents {
        return Err(PipelineError::Changed(format!(
            "the new documents were read twice with different results ({day_documents} documents and {day_tokens} tokens, then {} and {})",
            counted.documents, counted.tokens
        ))
        .into());
    }

    let t = Instant::now();
    let new_header = RunHeader::counts(config.n as u8, lexicon.identity());
    // First the day's runs of each bucket become one run, within the memory plan ...
    for bucket in 0..plan.buckets {
        let runs: Vec<RunFile> =
            counted.runs.iter().filter(|(b, _)| *b == bucket).map(|(_, run)| run.clone()).collect();
        let mut day = RunWriter::create(&scratch.path().join(format!("day-{bucket:04}.dgr")), new_header)?;
        passes.merge_every(runs, counted.entries, &lexicon, &mut stats.count, &mut |_, ids, count| {
            Ok(day.push(ids, count)?)
        })?;
        day.finish()?;
    }
    // ... then the buckets' states are walked beside them, a bucket per thread
    // at a time: each walk holds two readers and three writers, nothing more.
    let walk = Walk {
        state: &work.path("state"),
        segments: &segments,
        max_segments: outputs.max_segments.max(1),
        new: scratch.path(),
        old_header,
        new_header,
        lexicon: &lexicon,
        min_count: config.min_count,
        all: all.is_some(),
        control,
    };
    let threads = config.threads.clamp(1, plan.buckets.max(1));
    let tallies: Vec<Result<Vec<(usize, Tally)>, ClusterError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let walk = &walk;
                scope.spawn(move || {
                    (thread..plan.buckets).step_by(threads).map(|b| walk.bucket(b).map(|t| (b, t))).collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(ClusterError::Plan("a walk thread panicked".into()))))
            .collect()
    });
    stats.segments = segments.clone();
    for tally in tallies {
        for (bucket, tally) in tally? {
            if tally.merged {
                stats.segments[bucket].clear();
            }
            stats.segments[bucket].push(format!(
                "{}/{}",
                generation_dir(next).trim_start_matches("state/"),
                bucket_file(bucket)
            ));
            stats.written_bytes += tally.state_bytes;
            stats.ngrams_before += tally.before;
            stats.ngrams_after += tally.after;
            stats.duplicated += tally.duplicated;
            stats.newly_duplicated += tally.newly;
        }
    }
    // The buckets' reports, joined in bucket order (the order of word IDs).
    for bucket in 0..plan.buckets {
        append(&mut newly, &walk.report(bucket, "newly"))?;
        if let Some(all) = all.as_mut() {
            append(all, &walk.report(bucket, "all"))?;
        }
    }
    stats.count.seconds.merge = t.elapsed().as_secs_f64();
    // Reports first: if the state cannot be committed, running again rewrites them the same.
    newly.finish()?;
    if let Some(all) = all {
        all.finish()?;
    }
    commit(work, scratch, current, next)?;
    stats.seconds = started.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss().unwrap_or(0);
    stats.state_bytes = stats
        .segments
        .iter()
        .flatten()
        .map(|s| std::fs::metadata(work.path("state").join(s)).map_or(0, |m| m.len()))
        .sum();
    write_record(&update_record(work, next), &stats)?;
    remove_unread_generations(work, next, &stats.segments);
    Ok(stats)
}

fn bucket_file(bucket: usize) -> String {
    format!("bucket-{bucket:04}.dgr")
}

fn update_record(work: &WorkDir, generation: u32) -> PathBuf {
    work.path(&format!("tasks/update-{generation:04}.json"))
}

/// The newest recorded generation: 0 (the job's own) until an update is recorded.
fn current_generation(work: &WorkDir) -> Result<u32, ClusterError> {
    let mut generation = 0;
    while update_record(work, generation + 1).exists() {
        generation += 1;
    }
    Ok(generation)
}

/// The segments of each bucket in generation `generation`.
fn current_segments(work: &WorkDir, plan: &JobPlan, generation: u32) -> Result<Vec<Vec<String>>, ClusterError> {
    if generation == 0 {
        let gen0 = generation_dir(0);
        let gen0 = gen0.trim_start_matches("state/");
        return Ok((0..plan.buckets).map(|b| vec![format!("{gen0}/{}", bucket_file(b))]).collect());
    }
    let record: UpdateStats = read_record(&update_record(work, generation))?;
    if record.segments.len() != plan.buckets {
        return Err(ClusterError::corrupt(&update_record(work, generation), "segments do not match the buckets"));
    }
    Ok(record.segments)
}

/// Removes the generations (other than the newest, which holds the
/// lexicon) that none of `segments` lies in any more.
fn remove_unread_generations(work: &WorkDir, newest: u32, segments: &[Vec<String>]) {
    for generation in 0..newest {
        let dir = generation_dir(generation);
        let name = dir.trim_start_matches("state/");
        let read = segments.iter().flatten().any(|s| s.starts_with(&format!("{name}/")));
        if !read {
            let _ = std::fs::remove_dir_all(work.path(&dir));
        }
    }
}

/// Refuses files the job has counted already: counting them twice would double their n-grams.
fn refuse_known(work: &WorkDir, plan: &JobPlan, current: u32, new: &[InputFile]) -> Result<(), ClusterError> {
    let mut known: Vec<InputFile> = plan.inputs.clone();
    for generation in 1..=current {
        let earlier: UpdateStats = read_record(&update_record(work, generation))?;
        known.extend(earlier.inputs);
    }
    for (i, input) in new.iter().enumerate() {
        let same = |k: &InputFile| k.size == input.size && k.sample == input.sample;
        if known.iter().any(same) || new[..i].iter().any(same) {
            return Err(ClusterError::Plan(format!(
                "{}: the job has counted this file already (same size and content); refusing to count it twice",
                input.path.display()
            )));
        }
    }
    Ok(())
}

/// A temporary directory for the next generation, after removing what a
/// killed update left (a temporary directory, or one renamed but never recorded).
fn fresh_generation(work: &WorkDir, next: u32) -> Result<tempfile::TempDir, ClusterError> {
    let state = work.path("state");
    let name = format!("gen-{next:04}");
    for entry in std::fs::read_dir(&state).map_err(|e| ClusterError::io(&state, e))?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&name) {
            std::fs::remove_dir_all(entry.path()).map_err(|e| ClusterError::io(entry.path(), e))?;
        }
    }
    tempfile::Builder::new().prefix(&format!("{name}.tmp")).tempdir_in(&state).map_err(|e| ClusterError::io(&state, e))
}

fn commit(work: &WorkDir, scratch: tempfile::TempDir, current: u32, next: u32) -> Result<(), ClusterError> {
    let target = work.path(&generation_dir(next));
    debug_assert_eq!(next, current + 1);
    // The state is the buckets' runs and the lexicon; the day's runs and reports are not part of it.
    for entry in std::fs::read_dir(scratch.path()).map_err(|e| ClusterError::io(scratch.path(), e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("bucket-") || name == "lexicon.lex") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let kept = scratch.keep();
    std::fs::rename(&kept, &target).map_err(|e| ClusterError::io(&target, e))
}

/// The job's buckets, from its vocab task.
fn bucket_bounds(work: &WorkDir) -> Result<Vec<u32>, ClusterError> {
    #[derive(Deserialize)]
    struct Bounds {
        bounds: Vec<u32>,
    }
    let record: Bounds = read_record(&work.path("tasks/vocab.json"))?;
    Ok(record.bounds)
}

/// Distinct n-grams of one bucket, before and after, and those counted often enough.
#[derive(Debug, Default)]
struct Tally {
    before: u64,
    after: u64,
    duplicated: u64,
    newly: u64,
    /// Bytes of the segment written.
    state_bytes: u64,
    /// Whether the segment replaces the bucket's others.
    merged: bool,
}

/// Copies a file to the end of an output.
fn append(out: &mut OutputFile, path: &Path) -> Result<(), ClusterError> {
    let mut file = std::fs::File::open(path).map_err(|e| ClusterError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let got = std::io::Read::read(&mut file, &mut buf).map_err(|e| ClusterError::io(path, e))?;
        if got == 0 {
            return Ok(());
        }
        out.write_all(&buf[..got])?;
    }
}

/// What every bucket's walk shares.
struct Walk<'a> {
    /// The state directory, and the segments of each bucket under it.
    state: &'a Path,
    segments: &'a [Vec<String>],
    max_segments: usize,
    /// The next generation being written (with the day's runs in it).
    new: &'a Path,
    old_header: RunHeader,
    new_header: RunHeader,
    lexicon: &'a Lexicon,
    min_count: u64,
    /// Whether every duplicate is reported too, not only the new ones.
    all: bool,
    control: &'a Control,
}

impl Walk<'_> {
    fn report(&self, bucket: usize, which: &str) -> PathBuf {
        self.new.join(format!("{which}-{bucket:04}.tsv"))
    }

    /// Opens a stored segment. Older segments carry the identity of the
    /// lexicon of their generation; IDs never change, so only the shape is checked.
    fn open_segment(&self, segment: &str) -> Result<RunReader<std::fs::File>, ClusterError> {
        let path = self.state.join(segment);
        let reader = RunReader::open(&path)?;
        let header = reader.header();
        if header.n != self.old_header.n || header.kind != self.old_header.kind {
            return Err(ClusterError::corrupt(&path, "a state segment of another job"));
        }
        Ok(reader)
    }

    /// Merges one bucket's segments and walks them beside the day's
    /// n-grams (both in increasing order), writing the bucket's new segment
    /// and reports.
    fn bucket(&self, bucket: usize) -> Result<Tally, ClusterError> {
        let segments = &self.segments[bucket];
        let old = segments.iter().map(|s| self.open_segment(s)).collect::<Result<Vec<_>, _>>()?;
        let day_path = self.new.join(format!("day-{bucket:04}.dgr"));
        let mut day = RunReader::open(&day_path)?;
        day.expect_header(self.new_header)?;
        let day_live = day.advance()?;
        let merged = segments.len() + 1 > self.max_segments;
        let mut walk = BucketWalk {
            day,
            day_live,
            next: NextState {
                run: RunWriter::create(&self.new.join(bucket_file(bucket)), self.new_header)?,
                merged,
                newly: DupTsvWriter::new(OutputFile::create(Some(&self.report(bucket, "newly")))?),
                all: if self.all {
                    Some(DupTsvWriter::new(OutputFile::create(Some(&self.report(bucket, "all")))?))
                } else {
                    None
                },
                min_count: self.min_count,
                tally: Tally { merged, ..Tally::default() },
            },
            lexicon: self.lexicon,
        };
        dupgram_merge::merge_into(old, &mut walk, self.control).map_err(PipelineError::from)?;
        walk.rest()?;
        let BucketWalk { day, next, .. } = walk;
        let NextState { run, newly, all, mut tally, .. } = next;
        tally.state_bytes = run.finish()?.1.bytes;
        newly.finish()?;
        if let Some(all) = all {
            all.finish()?;
        }
        drop(day);
        let _ = std::fs::remove_file(&day_path);
        Ok(tally)
    }
}

/// One bucket's walk: the stored counts arrive from the merge of its
/// segments, the day's from its run.
struct BucketWalk<'l> {
    day: RunReader<std::fs::File>,
    day_live: bool,
    next: NextState,
    lexicon: &'l Lexicon,
}

impl BucketWalk<'_> {
    /// The day's n-grams after the last stored one.
    fn rest(&mut self) -> Result<(), PipelineError> {
        while self.day_live {
            self.next.keep(self.lexicon, self.day.ngram(), 0, self.day.count())?;
            self.day_live = self.day.advance()?;
        }
        Ok(())
    }
}

impl dupgram_merge::MergeSink for BucketWalk<'_> {
    type Error = PipelineError;

    /// A stored n-gram (in increasing order) with its count over all
    /// segments: the day's n-grams before it come first.
    fn accept(&mut self, ids: &[u32], before: u64, _: &[u64]) -> Result<(), PipelineError> {
        while self.day_live && self.day.ngram() < ids {
            self.next.keep(self.lexicon, self.day.ngram(), 0, self.day.count())?;
            self.day_live = self.day.advance()?;
        }
        if self.day_live && self.day.ngram() == ids {
            self.next.keep(self.lexicon, ids, before, before + self.day.count())?;
            self.day_live = self.day.advance()?;
        } else {
            self.next.keep(self.lexicon, ids, before, before)?;
        }
        Ok(())
    }
}

/// Where a walk writes: the next state and the bucket's reports.
struct NextState {
    run: RunWriter<std::io::BufWriter<std::fs::File>>,
    /// Write every n-gram with its whole count (the bucket's segments merged
    /// into one), rather than the day's n-grams with the day's counts.
    merged: bool,
    newly: DupTsvWriter,
    all: Option<DupTsvWriter>,
    min_count: u64,
    tally: Tally,
}

impl NextState {
    /// An n-gram of the grown corpus, counted `before` times before today and `after` times now.
    fn keep(&mut self, lexicon: &Lexicon, ids: &[u32], before: u64, after: u64) -> Result<(), PipelineError> {
        if self.merged {
            self.run.push(ids, after)?;
        } else if after > before {
            self.run.push(ids, after - before)?;
        }
        self.tally.before += u64::from(before > 0);
        self.tally.after += 1;
        if after >= self.min_count {
            self.tally.duplicated += 1;
            if let Some(all) = self.all.as_mut() {
                all.write(lexicon, ids, after)?;
            }
            if before < self.min_count {
                self.tally.newly += 1;
                self.newly.write(lexicon, ids, after)?;
            }
        }
        Ok(())
    }
}
