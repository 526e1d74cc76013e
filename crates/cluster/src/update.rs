//! `dupgram update`: a day's documents added to a job that keeps its state.
//!
//! The state of a job planned with `--keep-state` is the count of every
//! n-gram of its corpus, unique ones too, as one run per bucket, with the
//! lexicon of their IDs: `state/gen-NNNN/` (generation 0 written by the
//! job's `finish`, each update writing the next). An update
//!
//! 1. counts the new documents' words and extends the lexicon — known words
//!    keep their IDs, new words get the next ones ([`Lexicon::updated`]);
//! 2. counts the new documents' n-grams into runs, cut by the job's buckets
//!    (new words have the highest IDs, so their n-grams fall in the last);
//! 3. per bucket, merges the day's runs and walks the stored state beside
//!    them once, writing the next state and reporting every n-gram whose
//!    count reaches `--min-count` today.
//!
//! Its cost is the new data plus one sequential read (and write) of the
//! state; the old corpus is not read again. The next generation is built
//! under a temporary name, renamed, and recorded in `tasks/update-NNNN.json`;
//! until then the previous one stands, so an update killed midway leaves the
//! state as it was and can simply be run again.

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

/// Where an update's reports go.
#[derive(Debug, Clone, Default)]
pub struct UpdateOutputs {
    /// N-grams whose count reached `--min-count` with the new documents, with their counts.
    pub newly_duplicated: Option<PathBuf>,
    /// Every n-gram of the grown corpus counted at least `--min-count` times.
    pub all_duplicated: Option<PathBuf>,
}

/// What an update did, as printed and recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UpdateStats {
    /// The state generation written.
    pub generation: u32,
    pub inputs: Vec<InputFile>,
    /// Reading and counting the new documents.
    pub count: NgramStats,
    pub new_words: u64,
    /// Distinct n-grams of the whole corpus, before and after.
    pub ngrams_before: u64,
    pub ngrams_after: u64,
    /// N-grams counted at least `--min-count` times now, and those of them that were not before.
    pub duplicated: u64,
    pub newly_duplicated: u64,
    pub state_bytes: u64,
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
        old: &state,
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
    for tally in tallies {
        for (_, tally) in tally? {
            stats.state_bytes += tally.state_bytes;
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
    write_record(&update_record(work, next), &stats)?;
    // The previous generation is no longer needed once the next is recorded.
    let _ = std::fs::remove_dir_all(&state);
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
    state_bytes: u64,
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
    /// The stored generation, and the next one being written (with the day's runs in it).
    old: &'a Path,
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

    /// Walks one bucket's stored state beside the day's n-grams (both in
    /// increasing order), writing the next state and the bucket's reports.
    fn bucket(&self, bucket: usize) -> Result<Tally, ClusterError> {
        let mut old = RunReader::open(&self.old.join(bucket_file(bucket)))?;
        old.expect_header(self.old_header)?;
        let mut day = RunReader::open(&self.new.join(format!("day-{bucket:04}.dgr")))?;
        day.expect_header(self.new_header)?;
        let mut next = NextState {
            run: RunWriter::create(&self.new.join(bucket_file(bucket)), self.new_header)?,
            newly: DupTsvWriter::new(OutputFile::create(Some(&self.report(bucket, "newly")))?),
            all: if self.all {
                Some(DupTsvWriter::new(OutputFile::create(Some(&self.report(bucket, "all")))?))
            } else {
                None
            },
            min_count: self.min_count,
            tally: Tally::default(),
        };
        let (mut old_live, mut day_live) = (old.advance()?, day.advance()?);
        let mut steps = 0u32;
        while old_live || day_live {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(65536) && self.control.interrupted() {
                return Err(PipelineError::Interrupted.into());
            }
            let order = match (old_live, day_live) {
                (true, true) => old.ngram().cmp(day.ngram()),
                (true, false) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match order {
                std::cmp::Ordering::Less => {
                    next.keep(self.lexicon, old.ngram(), old.count(), old.count())?;
                    old_live = old.advance()?;
                }
                std::cmp::Ordering::Greater => {
                    next.keep(self.lexicon, day.ngram(), 0, day.count())?;
                    day_live = day.advance()?;
                }
                std::cmp::Ordering::Equal => {
                    next.keep(self.lexicon, day.ngram(), old.count(), old.count() + day.count())?;
                    (old_live, day_live) = (old.advance()?, day.advance()?);
                }
            }
        }
        let NextState { run, newly, all, mut tally, .. } = next;
        tally.state_bytes = run.finish()?.1.bytes;
        newly.finish()?;
        if let Some(all) = all {
            all.finish()?;
        }
        drop(day);
        let _ = std::fs::remove_file(self.new.join(format!("day-{bucket:04}.dgr")));
        Ok(tally)
    }
}

/// Where a walk writes: the next state and the bucket's reports.
struct NextState {
    run: RunWriter<std::io::BufWriter<std::fs::File>>,
    newly: DupTsvWriter,
    all: Option<DupTsvWriter>,
    min_count: u64,
    tally: Tally,
}

impl NextState {
    /// An n-gram of the grown corpus, counted `before` times before today and `after` times now.
    fn keep(&mut self, lexicon: &Lexicon, ids: &[u32], before: u64, after: u64) -> Result<(), PipelineError> {
        self.run.push(ids, after)?;
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
