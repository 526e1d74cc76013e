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
//!
//! A job planned with `--keep-postings` keeps where every n-gram occurs
//! (see `postings`): its segments are postings runs, and an update
//! indexes the day's documents (numbered after the older ones) rather than
//! counting them, so the walk sees each n-gram's old and new occurrences.
//! With `--pairs` it writes those of the n-grams both have to a run per
//! bucket, from which [`crate::update_pairs`] scores each pair of a new and
//! an older document, and checks the grown corpus's groups of identical
//! documents (equal hashes) against every n-gram it walks, as the index
//! merge of `dupgram pairs` checks them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_lexicon::{Lexicon, Scope};
use dupgram_pipeline::output::{DupTsvWriter, OutputFile, PairFiles, PairFormat, PairsSink, check_encoder_budget};
use dupgram_pipeline::scratch::Scratch;
use dupgram_pipeline::{
    BucketTotals, Control, DocTable, GroupCheck, IndexStats, IndexTotals, NgramConfig, NgramStats, PairPasses,
    PairsConfig, Passes, PipelineError, RunFile, ShardCut, WordSource, peak_rss, run_names,
};
use dupgram_runs::{RunHeader, RunKind, RunReader, RunWriter};
use serde::{Deserialize, Serialize};

use crate::error::ClusterError;
use crate::plan::{InputFile, JobPlan};
use crate::record::{fresh_scratch, read_record, write_file, write_record};
use crate::room::SharedRoom;
use crate::state::{docs_table, docs_totals, generation_dir, generation_name, load_corpus_docs};
use crate::update_pairs::{self, ScoredCorpus};
use crate::workdir::WorkDir;

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
    /// Each new document that shares n-grams with older text, with the share
    /// of its tokens those n-grams cover.
    pub documents: Option<PathBuf>,
    /// Jobs with a postings state: the pairs of a new and an older document
    /// that share n-grams, scored, and the thresholds they must pass.
    pub pairs: Option<UpdatePairs>,
}

/// Where `update --pairs` writes, and what it keeps.
#[derive(Debug, Clone)]
pub struct UpdatePairs {
    pub output: PathBuf,
    pub format: PairFormat,
    /// Thresholds, `max_df`, `max_group_pairs` and `expand_groups` (its `base` is not used).
    pub config: PairsConfig,
}

impl Default for UpdateOutputs {
    fn default() -> Self {
        UpdateOutputs {
            newly_duplicated: None,
            all_duplicated: None,
            max_segments: MAX_SEGMENTS,
            documents: None,
            pairs: None,
        }
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
    /// With a documents report: distinct n-grams of the new text that older text has too,
    /// and the new documents holding one.
    pub shared_ngrams: u64,
    pub documents_sharing: u64,
    /// With a pairs report: pairs of a new and an older document sharing an
    /// n-gram held by at most `--max-df` documents, and those kept.
    #[serde(default)]
    pub candidate_pairs: u64,
    #[serde(default)]
    pub kept_pairs: u64,
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
    if outputs.pairs.is_some() && !plan.keep_postings {
        return Err(ClusterError::Plan(
            "--pairs needs a job that keeps where every n-gram occurs: plan it with --keep-postings".into(),
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
    let documents = outputs.documents.as_deref().map(|p| OutputFile::create(Some(p))).transpose()?;
    let pair_files = match &outputs.pairs {
        Some(p) => Some(PairFiles::new(OutputFile::create(Some(&p.output))?, p.format, None)?),
        None => None,
    };
    let encoders = [
        newly.encoder_bytes(),
        all.as_ref().map_or(0, OutputFile::encoder_bytes),
        documents.as_ref().map_or(0, OutputFile::encoder_bytes),
        pair_files.as_ref().map_or(0, PairsSink::encoder_bytes),
    ];
    check_encoder_budget(config.memory, &encoders)?;

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
    let kind = if plan.keep_postings { RunKind::Postings } else { RunKind::Counts };
    let old_header = RunHeader { kind, ..RunHeader::counts(config.n as u8, old.identity()) };
    drop(old);
    let (day_tokens, day_documents) = (words.tokens(), stats.count.documents);
    drop(words);
    lexicon.save(&scratch.path().join("lexicon.lex"))?;

    let t = Instant::now();
    let bounds = bucket_bounds(work, plan.buckets)?;
    let new_header = RunHeader { kind, ..RunHeader::counts(config.n as u8, lexicon.identity()) };
    let day = DayPass { passes: &passes, config: &day_config, lexicon: &lexicon, bounds: &bounds, header: new_header };
    let (read, docs) = if plan.keep_postings {
        let first_new = documents_so_far(work, plan, current)?;
        let (read, day) = day.index(first_new, control, scratch.path(), &mut stats.count)?;
        (read, Some((first_new, day)))
    } else {
        (day.count(scratch.path(), &mut stats.count)?, None)
    };
    stats.count.seconds.count = t.elapsed().as_secs_f64();
    if read != (day_documents, day_tokens) {
        return Err(PipelineError::Changed(format!(
            "the new documents were read twice with different results ({day_documents} documents and {day_tokens} tokens, then {} and {})",
            read.0, read.1
        ))
        .into());
    }

    // The day's documents join the table of the whole corpus. With --pairs,
    // that table and its groups of identical documents are needed from
    // here on: the walk checks the groups against every n-gram.
    let threads = config.threads.clamp(1, plan.buckets.max(1));
    let mut grown = None;
    if let Some((first_new, day)) = docs {
        let generation = scratch.path();
        write_file(&generation.join(docs_table(next)), |out| day.table.write_to(first_new, out))?;
        let day_totals = BucketTotals { totals: day.totals, differing: Vec::new() };
        write_file(&generation.join(docs_totals(next)), |out| day_totals.write_to(out))?;
        link_docs(&state, generation, current)?;
        if outputs.pairs.is_some() {
            // The whole corpus's table, the day's included, from the files just written.
            let (table, totals) = load_corpus_docs(generation, next)?;
            if table.len() as u64 != first_new + day_totals.totals.occurrences.len() as u64 {
                return Err(ClusterError::corrupt(generation, "the documents' tables do not add up to the job's"));
            }
            let room = SharedRoom::new(config.memory, "--pairs");
            // The table and totals, each document's group, and a mark per document in each walk's check.
            let docs = table.len() as u64;
            room.take(table.bytes() + docs * 8 + docs * 4 + docs * threads as u64)?;
            let rep_of = dupgram_pipeline::exact_groups(&table, config.n as u32)?;
            let corpus = ScoredCorpus { table, totals, first_new: first_new as u32, n: config.n as u32, rep_of };
            grown = Some((corpus, room));
        }
    }

    let t = Instant::now();
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
        shared_room: documents.is_some().then(|| SharedRoom::new(config.memory, "--documents")),
        shared_runs: pair_files.is_some(),
        groups: grown.as_ref().map(|(corpus, _)| corpus.rep_of.as_slice()),
        control,
    };
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
    // Buckets are ranges of first word IDs: joined in order, the shared n-grams are sorted.
    let mut shared: Vec<u32> = Vec::new();
    let mut differing: Vec<u32> = Vec::new();
    for tally in tallies {
        for (bucket, mut tally) in tally? {
            shared.append(&mut tally.shared);
            differing.append(&mut tally.differing);
            if tally.merged {
                stats.segments[bucket].clear();
            }
            stats.segments[bucket].push(format!("{}/{}", generation_name(next), bucket_file(bucket)));
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
    let shared_runs: Vec<PathBuf> = (0..plan.buckets).map(|b| walk.shared_run(b)).collect();
    if let Some(out) = documents {
        stats.shared_ngrams = (shared.len() / config.n) as u64;
        let read =
            dupgram_corpus::ReadOptions { max_record_bytes: (config.memory / 16) as usize, ..config.read.clone() };
        let shared = SharedNgrams { ids: &shared, n: config.n };
        stats.documents_sharing = report_documents(&day_config.inputs, read, &lexicon, &shared, out, control)?;
    }
    if let (Some((mut corpus, room)), Some(mut files), Some(p)) = (grown, pair_files, &outputs.pairs) {
        // Documents a hash grouped with another but the walk showed to differ stay alone.
        for d in differing {
            corpus.rep_of[d as usize] = d;
        }
        let (candidates, kept) =
            update_pairs::score_pairs(&shared_runs, &corpus, &p.config, &room, &mut files, control)?;
        (stats.candidate_pairs, stats.kept_pairs) = (candidates, kept);
        files.finish()?;
    }
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
        let gen0 = generation_name(0);
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
        let prefix = format!("{}/", generation_name(generation));
        if !segments.iter().flatten().any(|s| s.starts_with(&prefix)) {
            let _ = std::fs::remove_dir_all(work.path(&generation_dir(generation)));
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
/// killed update left: its temporary directory (when its owner is dead, the
/// rule of every scratch directory), or one renamed but never recorded.
fn fresh_generation(work: &WorkDir, next: u32) -> Result<Scratch, ClusterError> {
    let state = work.path("state");
    let name = format!("gen-{next:04}");
    let renamed = state.join(&name);
    if renamed.exists() {
        std::fs::remove_dir_all(&renamed).map_err(|e| ClusterError::io(&renamed, e))?;
    }
    fresh_scratch(&state, &format!("{name}.tmp"))
}

fn commit(work: &WorkDir, scratch: Scratch, current: u32, next: u32) -> Result<(), ClusterError> {
    let target = work.path(&generation_dir(next));
    debug_assert_eq!(next, current + 1);
    // The state is the buckets' runs and the lexicon; the day's runs and reports are not part of it.
    for entry in std::fs::read_dir(scratch.path()).map_err(|e| ClusterError::io(scratch.path(), e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("bucket-") || name.starts_with("docs-") || name == "lexicon.lex") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let kept = scratch.keep()?;
    std::fs::rename(&kept, &target).map_err(|e| ClusterError::io(&target, e))
}

/// The job's buckets, from its vocab task.
fn bucket_bounds(work: &WorkDir, buckets: usize) -> Result<Vec<u32>, ClusterError> {
    #[derive(Deserialize)]
    struct Bounds {
        bounds: Vec<u32>,
    }
    let path = work.path("tasks/vocab.json");
    let record: Bounds = read_record(&path)?;
    crate::stage::check_bounds(&record.bounds, buckets, &path)?;
    Ok(record.bounds)
}

/// The run tag of the shared n-grams' runs (their "words" are numbers, not lexicon IDs).
const SHARED_RUNS: u64 = 0x5348_4152;

/// The day's reading: its n-grams, into one run per bucket (`day-NNNN.dgr`).
struct DayPass<'a> {
    passes: &'a Passes<'a>,
    config: &'a NgramConfig,
    lexicon: &'a Lexicon,
    bounds: &'a [u32],
    /// The runs' header: counts, or postings for a postings state.
    header: RunHeader,
}

/// The new documents of a postings state: their table and totals.
struct DayDocs {
    table: DocTable,
    totals: IndexTotals,
}

/// Documents the job has read so far: the base's and every recorded update's.
fn documents_so_far(work: &WorkDir, plan: &JobPlan, current: u32) -> Result<u64, ClusterError> {
    #[derive(Deserialize)]
    struct Read {
        documents: u64,
    }
    let mut documents = 0;
    for shard in 0..plan.shards.len() {
        let record: Read = read_record(&work.path(&format!("tasks/lexicon-{shard:04}.json")))?;
        documents += record.documents;
    }
    for generation in 1..=current {
        let earlier: UpdateStats = read_record(&update_record(work, generation))?;
        documents += earlier.count.documents;
    }
    Ok(documents)
}

impl DayPass<'_> {
    fn buckets(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Counts the day's n-grams; returns the documents and tokens read.
    fn count(&self, dir: &Path, stats: &mut NgramStats) -> Result<(u64, u64), ClusterError> {
        let counted = self.passes.count_ngrams(&self.config.inputs, self.lexicon, None, self.bounds, stats)?;
        // The day's runs of each bucket become one run, within the memory plan.
        for bucket in 0..self.buckets() {
            let runs: Vec<RunFile> =
                counted.runs.iter().filter(|(b, _)| *b == bucket).map(|(_, run)| run.clone()).collect();
            let mut day = RunWriter::create(&dir.join(format!("day-{bucket:04}.dgr")), self.header)?;
            self.passes.merge_every(
                runs,
                counted.entries,
                self.lexicon,
                WordSource::Held(self.lexicon),
                stats,
                &mut |_, ids, count| Ok(day.push(ids, count)?),
            )?;
            day.finish()?;
        }
        Ok((counted.documents, counted.tokens))
    }

    /// Indexes the day's documents, numbered from `first_doc`; returns the
    /// documents and tokens read, and the documents' table and totals.
    fn index(
        &self,
        first_doc: u64,
        control: &Control,
        dir: &Path,
        stats: &mut NgramStats,
    ) -> Result<((u64, u64), DayDocs), ClusterError> {
        let config = PairsConfig::new(self.config.clone());
        let passes = PairPasses::new(&config, control, dir)?;
        let mut index = IndexStats::default();
        let cut = ShardCut { first_doc, buckets: self.bounds };
        let (runs, table) = passes.index_shard(&self.config.inputs, self.lexicon, None, cut, &mut index)?;
        stats.run_bytes += runs.iter().map(|(_, r)| r.bytes).sum::<u64>();
        let mut totals = IndexTotals::empty(table.len());
        for bucket in 0..self.buckets() {
            let runs: Vec<RunFile> = runs.iter().filter(|(b, _)| *b == bucket).map(|(_, run)| run.clone()).collect();
            let run = RunWriter::create(&dir.join(format!("day-{bucket:04}.dgr")), self.header)?;
            let source = run_names(&runs);
            let mut sink = DaySink { run, totals: &mut totals, first_doc, source };
            stats.merge_bytes += self.passes.merge_runs(runs, self.header, self.lexicon, &mut sink)?;
            sink.run.finish()?;
        }
        Ok(((index.documents, index.tokens), DayDocs { table, totals }))
    }
}

/// Writes the day's merged postings of a bucket, and counts each new document's occurrences.
struct DaySink<'a> {
    run: RunWriter<std::io::BufWriter<std::fs::File>>,
    totals: &'a mut IndexTotals,
    first_doc: u64,
    /// The day's postings runs of the bucket, named in errors.
    source: String,
}

impl dupgram_merge::MergeSink for DaySink<'_> {
    type Error = PipelineError;

    fn accept(&mut self, ids: &[u32], _count: u64, occurrences: &[u64]) -> Result<(), PipelineError> {
        self.run.push_postings(ids, occurrences)?;
        self.totals.add_ngram(occurrences, self.first_doc).map_err(|e| e.in_file(&self.source))?;
        Ok(())
    }
}

/// Links the document tables and totals of `from` (generation `current`)
/// into the next generation's directory `to`.
fn link_docs(from: &Path, to: &Path, current: u32) -> Result<(), ClusterError> {
    for generation in 0..=current {
        for name in [docs_table(generation), docs_totals(generation)] {
            let (source, target) = (from.join(&name), to.join(&name));
            if !source.exists() {
                continue;
            }
            dupgram_runs::reclaim::second_name(&source, &target).map_err(|e| ClusterError::io(&source, e))?;
        }
    }
    Ok(())
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
    /// With a documents report: the bucket's n-grams older text has too.
    shared: Vec<u32>,
    /// With a pairs report: documents shown to differ from their group's first.
    differing: Vec<u32>,
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
    /// With a documents report: the bytes left for the day's n-grams older text has too.
    shared_room: Option<SharedRoom>,
    /// With a pairs report: write the occurrences of the n-grams older and
    /// new text share, each bucket's to a run of its own ([`Self::shared_run`]).
    shared_runs: bool,
    /// With a pairs report: each document's group of identical documents
    /// (by hash), which the walk checks against every n-gram it sees.
    groups: Option<&'a [u32]>,
    control: &'a Control,
}

impl Walk<'_> {
    fn report(&self, bucket: usize, which: &str) -> PathBuf {
        self.new.join(format!("{which}-{bucket:04}.tsv"))
    }

    /// A bucket's n-grams that older and new text share, numbered in
    /// order, with their occurrences (a postings run with one "word": the number).
    fn shared_run(&self, bucket: usize) -> PathBuf {
        self.new.join(format!("shared-{bucket:04}.dgr"))
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
        let shared_run = match self.shared_runs {
            true => Some((RunWriter::create(&self.shared_run(bucket), RunHeader::postings(1, SHARED_RUNS))?, 0)),
            false => None,
        };
        let mut walk = BucketWalk {
            day,
            day_live,
            shared_run,
            check: self.groups.map(GroupCheck::new),
            both: Vec::new(),
            next: NextState {
                run: RunWriter::create(&self.new.join(bucket_file(bucket)), self.new_header)?,
                postings: self.new_header.kind == RunKind::Postings,
                both: Vec::new(),
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
            shared: self.shared_room.as_ref().map(|room| (Vec::new(), room)),
            segments: segments_named(self.state, segments, &day_path),
        };
        dupgram_merge::merge_into(old, &mut walk, self.control).map_err(PipelineError::from)?;
        walk.rest()?;
        let BucketWalk { day, next, shared, shared_run, check, .. } = walk;
        if let Some((run, _)) = shared_run {
            run.finish()?;
        }
        let NextState { run, newly, all, mut tally, .. } = next;
        tally.shared = shared.map(|(ids, _)| ids).unwrap_or_default();
        tally.differing = check.map(GroupCheck::differing).unwrap_or_default();
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

/// A bucket's stored segments and the day's run, for a message.
fn segments_named(state: &Path, segments: &[String], day: &Path) -> String {
    let mut names: Vec<String> = segments.iter().map(|s| state.join(s).display().to_string()).collect();
    names.push(day.display().to_string());
    format!("{} (one of them)", names.join(", "))
}

/// One bucket's walk: the stored counts arrive from the merge of its
/// segments, the day's from its run.
struct BucketWalk<'l> {
    day: RunReader<std::fs::File>,
    day_live: bool,
    /// With a pairs report: the shared n-grams' run, and the next number.
    shared_run: Option<(RunWriter<std::io::BufWriter<std::fs::File>>, u32)>,
    /// With a pairs report: the check of the groups of identical documents,
    /// which sees every n-gram's occurrences, old and new.
    check: Option<GroupCheck<'l>>,
    /// Room for an n-gram's old and new occurrences together.
    both: Vec<u64>,
    next: NextState,
    lexicon: &'l Lexicon,
    /// With a documents report: the day's n-grams older text has too (their
    /// IDs, one after another), and the memory left for them.
    shared: Option<(Vec<u32>, &'l SharedRoom)>,
    /// The bucket's stored segments (and the day's run), named in errors.
    segments: String,
}

impl BucketWalk<'_> {
    /// The day's n-grams after the last stored one.
    fn rest(&mut self) -> Result<(), PipelineError> {
        while self.day_live {
            self.day_only()?;
        }
        Ok(())
    }

    /// The day's next n-gram, which older text does not have.
    fn day_only(&mut self) -> Result<(), PipelineError> {
        if let Some(check) = self.check.as_mut() {
            check.ngram(self.day.occurrences()).map_err(|e| e.in_file(&self.day.path().display().to_string()))?;
        }
        self.next.keep(self.lexicon, self.day.ngram(), 0, self.day.count(), &[], self.day.occurrences())?;
        self.day_live = self.day.advance()?;
        Ok(())
    }
}

impl dupgram_merge::MergeSink for BucketWalk<'_> {
    type Error = PipelineError;

    /// A stored n-gram (in increasing order) with its count over all
    /// segments: the day's n-grams before it come first.
    fn accept(&mut self, ids: &[u32], before: u64, old: &[u64]) -> Result<(), PipelineError> {
        while self.day_live && self.day.ngram() < ids {
            self.day_only()?;
        }
        if self.day_live && self.day.ngram() == ids {
            if let Some((shared, room)) = self.shared.as_mut() {
                room.take((ids.len() * 4) as u64)?;
                shared.extend_from_slice(ids);
            }
            let (after, day) = (before + self.day.count(), self.day.occurrences());
            if self.shared_run.is_some() || self.check.is_some() {
                // New documents are numbered after the old ones: old then new is in order.
                self.both.clear();
                self.both.extend_from_slice(old);
                self.both.extend_from_slice(day);
            }
            if let Some(check) = self.check.as_mut() {
                check.ngram(&self.both).map_err(|e| e.in_file(&self.segments))?;
            }
            if let Some((run, number)) = self.shared_run.as_mut() {
                run.push_postings(&[*number], &self.both)?;
                *number += 1;
            }
            self.next.keep(self.lexicon, ids, before, after, old, day)?;
            self.day_live = self.day.advance()?;
        } else {
            if let Some(check) = self.check.as_mut() {
                check.ngram(old).map_err(|e| e.in_file(&self.segments))?;
            }
            self.next.keep(self.lexicon, ids, before, before, old, &[])?;
        }
        Ok(())
    }
}

/// Where a walk writes: the next state and the bucket's reports.
struct NextState {
    run: RunWriter<std::io::BufWriter<std::fs::File>>,
    /// A postings state: n-grams are written with their occurrences.
    postings: bool,
    /// Room for an n-gram's old and new occurrences together.
    both: Vec<u64>,
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
    /// With a postings state, `old` and `day` are its occurrences before and today.
    fn keep(
        &mut self,
        lexicon: &Lexicon,
        ids: &[u32],
        before: u64,
        after: u64,
        old: &[u64],
        day: &[u64],
    ) -> Result<(), PipelineError> {
        match (self.postings, self.merged) {
            (false, true) => self.run.push(ids, after)?,
            (false, false) if after > before => self.run.push(ids, after - before)?,
            (true, true) => {
                self.both.clear();
                self.both.extend_from_slice(old);
                self.both.extend_from_slice(day);
                self.run.push_postings(ids, &self.both)?;
            }
            (true, false) if !day.is_empty() => self.run.push_postings(ids, day)?,
            _ => {}
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

/// The day's distinct n-grams that older text has too, sorted: `n` IDs each.
struct SharedNgrams<'a> {
    ids: &'a [u32],
    n: usize,
}

impl SharedNgrams<'_> {
    fn contains(&self, ngram: &[u32]) -> bool {
        let count = self.ids.len() / self.n;
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.ids[mid * self.n..(mid + 1) * self.n].cmp(ngram) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// Reads the new documents again and reports each one that holds an n-gram
/// older text has too: its ID, its tokens (stop words left out), those
/// covered by such n-grams, and the share covered. Returns how many.
fn report_documents(
    inputs: &[dupgram_corpus::Input],
    read: dupgram_corpus::ReadOptions,
    lexicon: &Lexicon,
    shared: &SharedNgrams,
    mut out: OutputFile,
    control: &Control,
) -> Result<u64, ClusterError> {
    use dupgram_lexicon::{Lookup, Tokenizer};
    let mut reader = dupgram_corpus::CorpusReader::new(inputs.to_vec(), read, control.progress.bytes.clone());
    let mut batch = dupgram_corpus::Batch::default();
    let mut tokenizer = Tokenizer::new(lexicon.normalization());
    let n = shared.n;
    out.write_all(b"id\ttokens\tcovered\tcover\n")?;
    let (mut id, mut ids, mut reported) = (String::new(), Vec::<Option<u32>>::new(), 0u64);
    let mut line = Vec::new();
    while reader.fill(&mut batch, 1 << 20).map_err(PipelineError::from)? {
        if control.interrupted() {
            return Err(PipelineError::Interrupted.into());
        }
        for piece in &batch.pieces {
            if let Some(doc_id) = batch.piece_id(piece) {
                id = doc_id.to_owned();
            }
            let mut emit = |w: &str| match lexicon.lookup(w) {
                Lookup::Stop => {}
                Lookup::Id(i) => ids.push(Some(i)),
                Lookup::Unknown => ids.push(None),
            };
            tokenizer.feed(batch.piece_text(piece), &mut emit);
            if !piece.last {
                continue;
            }
            tokenizer.finish(&mut emit);
            // A token is covered when an n-gram over it (no unknown word in it) is shared.
            let mut covered_until = 0usize;
            let mut covered = 0usize;
            let mut window: Vec<u32> = Vec::with_capacity(n);
            for start in 0..ids.len().saturating_sub(n - 1) {
                window.clear();
                window.extend(ids[start..start + n].iter().map_while(|i| *i));
                if window.len() == n && shared.contains(&window) {
                    covered += start + n - covered_until.max(start);
                    covered_until = start + n;
                }
            }
            if covered > 0 {
                reported += 1;
                line.clear();
                dupgram_pipeline::output::push_tsv_field(&mut line, &id);
                let fields = format!("\t{}\t{covered}\t{:.6}\n", ids.len(), covered as f64 / ids.len() as f64);
                line.extend_from_slice(fields.as_bytes());
                out.write_all(&line)?;
            }
            ids.clear();
            id.clear();
        }
    }
    out.finish()?;
    Ok(reported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_ngrams_are_found_by_their_ids() {
        let ids = [1, 2, 1, 5, 3, 0, 7, 7];
        let shared = SharedNgrams { ids: &ids, n: 2 };
        for present in [[1, 2], [1, 5], [3, 0], [7, 7]] {
            assert!(shared.contains(&present));
        }
        for absent in [[0, 0], [1, 3], [2, 9], [8, 0]] {
            assert!(!shared.contains(&absent));
        }
    }
}
