//! The tasks of a staged count, each a function of the work directory, and
//! [`Stage::run`], which runs any task of a job: those of a postings state
//! (`postings`) and of a pairs job (`pair_tasks`) too.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dupgram_lexicon::{Lexicon, Scope};
use dupgram_pipeline::output::{DupTsvWriter, OutputFile, check_encoder_budget};
use dupgram_pipeline::{NgramStats, PairsStats, PipelineError, Sieve, WordSource, cpu_seconds, peak_rss};
use dupgram_runs::{RunHeader, RunWriter};
use dupgram_vocab::{VocabError, number_shard_words, write_shard_table, write_shard_words};

use crate::error::ClusterError;
use crate::record::{write_file, write_record};
use crate::stage::{
    ResolvedStreams, SHARD_DOCS, SHARD_TABLE, Stage, TaskId, TaskOutcome, TaskRecord, keep_dir, link_runs, run_entries,
};
use crate::state::generation_dir;
use crate::stats;

/// The zstd window of a saved shard sieve (128 KiB): the encoder stays a
/// few hundred KiB beside the task's table.
const SIEVE_WINDOW_LOG: u32 = 17;

impl<'a> Stage<'a> {
    /// Runs `task` unless the manifest says it finished.
    pub fn run(&self, task: TaskId) -> Result<TaskOutcome, ClusterError> {
        if self.record_path(task).exists() {
            return Ok(TaskOutcome::AlreadyDone);
        }
        let started = Instant::now();
        let cpu = cpu_seconds().unwrap_or(0.0);
        let mut record = match task {
            TaskId::Lexicon(shard) => self.lexicon(shard)?,
            TaskId::Vocab => self.vocab()?,
            TaskId::Map(shard) => self.map(shard)?,
            TaskId::Reduce(bucket) => self.reduce(bucket)?,
            TaskId::Index(shard) => self.index(shard)?,
            TaskId::Postings(bucket) => self.postings(bucket)?,
            TaskId::Candidates(bucket) => self.candidates(bucket)?,
            TaskId::Score(range) => self.score(range)?,
            TaskId::Finish if self.plan.command == "pairs" => self.finish_pairs()?,
            TaskId::Finish => self.finish()?,
        };
        record.task = task.name();
        record.cpu = cpu_seconds().unwrap_or(0.0) - cpu;
        record.stats.seconds.total = started.elapsed().as_secs_f64();
        record.stats.peak_rss = peak_rss().unwrap_or(0);
        write_record(&self.record_path(task), &record)?;
        if task == TaskId::Finish {
            self.remove_spill()?;
        }
        Ok(TaskOutcome::Ran)
    }

    /// CPU seconds of every finished task, added up.
    pub fn cpu_seconds(&self) -> Result<f64, ClusterError> {
        let mut total = 0.0;
        for task in TaskId::all(self.plan).into_iter().filter(|t| self.finished(*t)) {
            total += self.record(task, task)?.cpu;
        }
        Ok(total)
    }

    /// Whether `task` has recorded itself as finished.
    pub fn finished(&self, task: TaskId) -> bool {
        self.record_path(task).exists()
    }

    /// The job's summary, from every task's record (after `finish`).
    pub fn summary(&self) -> Result<NgramStats, ClusterError> {
        let mut total = NgramStats {
            n: self.config.n,
            min_count: self.config.min_count,
            memory_budget: self.config.memory,
            threads: self.config.threads,
            ..NgramStats::default()
        };
        for task in TaskId::all(self.plan).into_iter().filter(|t| *t != TaskId::Finish) {
            stats::absorb(&mut total, &self.record(task, TaskId::Finish)?.stats);
        }
        stats::settle(&mut total);
        Ok(total)
    }

    /// The summary of a finished `pairs` job, from every task's record;
    /// its times are the tasks' times added up.
    pub fn pairs_summary(&self) -> Result<PairsStats, ClusterError> {
        let mut total = PairsStats { n: self.config.n, memory_budget: self.config.memory, ..PairsStats::default() };
        let mut first = NgramStats::default();
        for task in TaskId::all(self.plan) {
            let record = self.record(task, TaskId::Finish)?;
            if matches!(task, TaskId::Lexicon(_) | TaskId::Vocab) {
                stats::absorb(&mut first, &record.stats);
            }
            if let Some(part) = &record.pairs {
                stats::absorb_pairs(&mut total, part);
            }
            total.peak_rss = total.peak_rss.max(record.stats.peak_rss);
        }
        stats::settle(&mut first);
        total.index.first_pass = Some(first);
        stats::settle_pairs(&mut total);
        Ok(total)
    }

    /// A shard's words, by fingerprint, with their counts in the shard
    /// (see [`dupgram_vocab::write_shard_words`]).
    fn shard_words(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("lexicon/shard-{shard:04}.words"))
    }

    /// A shard's sieve, zstd-compressed: it is the job's size and holds an
    /// eighth of the n-grams of 8 shards, so most of its counters are zero
    /// (300M web-like tokens in 8 shards: 8 sieves of 379 MB, 3.03 GB on
    /// disk until finish).
    fn shard_sieve(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("lexicon/shard-{shard:04}.sieve.zst"))
    }

    fn shard_runs(&self, shard: usize) -> PathBuf {
        self.work.path(&format!("runs/shard-{shard:04}"))
    }

    /// A bucket's duplicates, zstd-compressed: at a billion tokens the
    /// buckets' TSV is 11 GB, which waits on disk until finish joins it.
    fn bucket_dups(&self, bucket: usize) -> PathBuf {
        self.work.path(&format!("dups/bucket-{bucket:04}.tsv.zst"))
    }

    /// Counts the words of a shard; fills and saves its sieve. The words
    /// past its table's room are counted on disk: the shard's words go to
    /// one file by fingerprint, table's and overflow's alike. For a count
    /// from word streams, the task also keeps its workers' streams, the
    /// runs of their overflow tokens and its table's words by fingerprint.
    fn lexicon(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        self.plan.check_shard(shard)?;
        let scratch = self.scratch(&self.work.path("tmp"), TaskId::Lexicon(shard))?;
        let passes = self.passes(scratch.path())?;
        let mut stats = NgramStats::default();
        let started = Instant::now();
        // Without the memory map there is simply no sieve: results are the same.
        let sieve =
            (self.plan.sieve_bytes > 0).then(|| Sieve::with_bytes(self.plan.sieve_bytes as usize).ok()).flatten();
        let inputs = self.plan.shard_inputs(shard);
        let (builder, sieve, overflow, streams) = if self.reads_streams() {
            // An index over the streams names their documents.
            let listed = self.plan.command == "pairs";
            let s = passes.shard_streams(&inputs, sieve, listed, &mut stats)?;
            if listed {
                write_file(&scratch.path().join(SHARD_DOCS), |out| s.documents.write_to(out))?;
            }
            (s.builder, s.sieve, s.overflow, Some(s.streams))
        } else {
            let (builder, sieve, overflow) = passes.count_shard_words(&inputs, sieve, &mut stats)?;
            (builder, sieve, overflow, None)
        };
        let mut record = TaskRecord {
            tokens: builder.tokens(),
            documents: stats.documents,
            sieve: sieve.is_some(),
            first_seen: builder.first_seen_len() as u64,
            ..Default::default()
        };
        if let Some(sieve) = sieve {
            write_file(&self.shard_sieve(shard), |out| {
                let mut packed = zstd::Encoder::new(out, 1)?;
                // Zeros need no long window; a short one keeps the encoder small.
                packed.window_log(SIEVE_WINDOW_LOG)?;
                packed.include_checksum(true)?;
                sieve.save(&mut packed)?;
                packed.finish().map(drop)
            })?;
        }
        stats.overflow_tokens = overflow.iter().map(|o| o.tokens).sum();
        stats.overflow_slots = overflow.iter().map(|o| o.slots).sum();
        let name = |path: &Path| path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        record.occurrences = overflow.iter().flat_map(|o| o.occurrence_paths().map(name)).collect();
        record.epoch_slots = overflow.iter().map(|o| o.epoch_slots).max().unwrap_or(0);
        let plan = passes.vocabulary_plan(builder.heap_bytes() as u64);
        if let Some(streams) = &streams {
            record.streams =
                streams.iter().map(|(segments, bytes)| (segments.iter().map(|p| name(p)).collect(), *bytes)).collect();
            write_shard_table(&builder, &scratch.path().join(SHARD_TABLE), &plan).map_err(PipelineError::from)?;
        }
        // Every word is kept, stop words by rank too: those are chosen from the whole corpus.
        let written = scratch.path().join("shard.words");
        let words = write_shard_words(&builder, overflow, &written, &plan).map_err(PipelineError::from)?;
        stats.overflow_words = words.overflow_words;
        stats.vocabulary_bytes = words.bytes;
        let target = self.shard_words(shard);
        std::fs::rename(&written, &target).map_err(|e| ClusterError::io(&target, e))?;
        if streams.is_some() {
            keep_dir(scratch, &self.shard_streams(shard))?;
        }
        stats.seconds.lexicon = started.elapsed().as_secs_f64();
        Ok(TaskRecord { stats, ..record })
    }

    /// The job's lexicon from the shards' words, numbered out of core (no
    /// vocabulary is held); the combined sieve; the buckets.
    fn vocab(&self) -> Result<TaskRecord, ClusterError> {
        let shards = self.plan.shards.len();
        let parts =
            (0..shards).map(|s| self.record(TaskId::Lexicon(s), TaskId::Vocab)).collect::<Result<Vec<_>, _>>()?;
        let mut stats = NgramStats::default();
        let scratch = self.scratch(&self.work.path("tmp"), TaskId::Vocab)?;
        let passes = self.passes(scratch.path())?;
        let files: Vec<PathBuf> = (0..shards).map(|shard| self.shard_words(shard)).collect();
        let mut listed = self.config.stopwords.clone();
        listed.sort_unstable();
        listed.dedup();
        let plan = passes.vocabulary_plan(0);
        let mut failure: Option<VocabError> = None;
        // What every word became, for the map tasks to read their streams by.
        let codes = self.reads_streams().then(|| scratch.path().join("vocab.codes"));
        let written = write_file(&self.vocab_lexicon(), |out| {
            let options = (self.config.norm, self.config.stop_top);
            number_shard_words(&files, &listed, options, out, codes.as_deref(), &plan).map(drop).map_err(|e| {
                let message = e.to_string();
                failure = Some(e);
                std::io::Error::other(message)
            })
        });
        if let Some(e) = failure {
            return Err(PipelineError::from(e).into());
        }
        written?;
        if let Some(codes) = codes {
            let target = self.vocab_codes();
            std::fs::rename(&codes, &target).map_err(|e| ClusterError::io(&target, e))?;
        }

        let sieve = if parts.iter().all(|p| p.sieve) && shards > 0 { self.combined_sieve(shards)? } else { None };
        let sieve = passes.settle_sieve(sieve, &mut stats);
        if let Some(sieve) = &sieve {
            write_file(&self.vocab_sieve(), |out| sieve.save(out))?;
        }
        // Counts only (as runs of equal counts): no word is held.
        let lexicon = Lexicon::load_limited(&self.vocab_lexicon(), Scope::Repeated, 0, &mut |_, _| Ok(()))?;
        stats.vocabulary = lexicon.total_words();
        stats.repeated_words = lexicon.repeated_len() as u64;
        stats.stopwords = lexicon.stopwords().len() as u64;
        Ok(TaskRecord {
            stats,
            sieve: sieve.is_some(),
            bounds: bucket_bounds(lexicon.len(), |id| lexicon.count(id as u32), self.plan.buckets),
            ..Default::default()
        })
    }

    fn combined_sieve(&self, shards: usize) -> Result<Option<Sieve>, ClusterError> {
        let open = |shard: usize| {
            let path = self.shard_sieve(shard);
            std::fs::File::open(&path)
                .and_then(zstd::stream::read::Decoder::new)
                .map_err(|e| ClusterError::io(&path, e))
                .map(|f| (f, path))
        };
        let (mut first, path) = open(0)?;
        let sieve = Sieve::load(&mut first, None).map_err(|e| ClusterError::io(&path, e))?;
        for shard in 1..shards {
            let (mut file, path) = open(shard)?;
            Sieve::load(&mut file, sieve.as_ref()).map_err(|e| ClusterError::io(&path, e))?;
        }
        Ok(sieve)
    }

    /// The count pass over a shard: runs cut by bucket.
    fn map(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        if self.plan.keep_postings {
            return self.map_postings(shard);
        }
        if self.reads_streams() {
            return self.map_streams(shard);
        }
        let vocab = self.record(TaskId::Vocab, TaskId::Map(shard))?;
        let read = self.record(TaskId::Lexicon(shard), TaskId::Map(shard))?;
        self.plan.check_shard(shard)?;
        let scratch = self.scratch(&self.work.path("runs"), TaskId::Map(shard))?;
        let passes = self.passes(scratch.path())?;
        let lexicon = Lexicon::load(&self.vocab_lexicon(), self.scope())?;
        let sieve = if vocab.sieve { Some(self.load_sieve()?) } else { None };
        let mut stats = NgramStats::default();
        let started = Instant::now();
        let counted =
            passes.count_ngrams(&self.plan.shard_inputs(shard), &lexicon, sieve.as_ref(), &vocab.bounds, &mut stats)?;
        stats.seconds.count = started.elapsed().as_secs_f64();
        if counted.tokens != read.tokens || counted.documents != read.documents {
            return Err(PipelineError::Changed(format!(
                "shard {shard}: the lexicon task read {} documents and {} tokens, the map task {} and {}",
                read.documents, read.tokens, counted.documents, counted.tokens
            ))
            .into());
        }
        let runs = run_entries(&counted.runs);
        keep_dir(scratch, &self.shard_runs(shard))?;
        Ok(TaskRecord { stats, runs, entries: counted.entries, ..Default::default() })
    }

    /// The count pass over a shard's word streams: their codes resolved
    /// against the job's codes file, runs cut by bucket. Holds no
    /// vocabulary: the renumbering of the shard's table (which the lexicon
    /// task held) and a reader per stream.
    fn map_streams(&self, shard: usize) -> Result<TaskRecord, ClusterError> {
        let vocab = self.record(TaskId::Vocab, TaskId::Map(shard))?;
        let read = self.record(TaskId::Lexicon(shard), TaskId::Map(shard))?;
        self.plan.check_shard(shard)?;
        let scratch = self.scratch(&self.work.path("runs"), TaskId::Map(shard))?;
        let passes = self.passes(scratch.path())?;
        let mut stats = NgramStats::default();
        let started = Instant::now();
        let lexicon = Lexicon::load_limited(&self.vocab_lexicon(), Scope::Repeated, 0, &mut |_, _| Ok(()))?;
        let plan = passes.vocabulary_plan(lexicon.heap_bytes() as u64);
        let ResolvedStreams { renumbering, sides, streams } = self.resolve_streams(shard, &read, &plan)?;
        let mut sieve = if vocab.sieve { Some(self.load_sieve()?) } else { None };
        stats.tokens = read.tokens;
        let counted = passes.count_shard_streams(
            &streams,
            &lexicon,
            renumbering,
            sides,
            sieve.as_mut(),
            &vocab.bounds,
            &mut stats,
        )?;
        stats.seconds.count = started.elapsed().as_secs_f64();
        if counted.documents != read.documents {
            return Err(PipelineError::Changed(format!(
                "shard {shard}: the lexicon task wrote {} documents to its streams, the map task read {}",
                read.documents, counted.documents
            ))
            .into());
        }
        // The lexicon task counted the tokens; the summary takes them from there.
        stats.tokens = 0;
        let runs = run_entries(&counted.runs);
        keep_dir(scratch, &self.shard_runs(shard))?;
        Ok(TaskRecord { stats, runs, entries: counted.entries, ..Default::default() })
    }

    /// Merges one bucket's runs from every shard into its duplicates.
    fn reduce(&self, bucket: usize) -> Result<TaskRecord, ClusterError> {
        let me = TaskId::Reduce(bucket);
        self.record(TaskId::Vocab, me)?;
        let scratch = self.scratch(&self.work.path("tmp"), me)?;
        // The merge deletes the runs it has read: give it links, and keep
        // the originals for a rerun of this task if it is killed.
        let mut runs = Vec::new();
        let mut entries = 0;
        for shard in 0..self.plan.shards.len() {
            let map = self.record(TaskId::Map(shard), me)?;
            entries += map.entries;
            runs.extend(link_runs(&map, bucket, &self.shard_runs(shard), scratch.path(), &format!("s{shard:04}"))?);
        }
        let passes = self.passes(scratch.path())?;
        let mut writer = DupTsvWriter::new(OutputFile::create(Some(&self.bucket_dups(bucket)))?);
        let mut stats = NgramStats::default();
        let started = Instant::now();
        if self.plan.keep_postings {
            self.reduce_postings(bucket, runs, scratch.path(), &mut writer, &mut stats)?;
        } else {
            // The words on disk, read back within a third of the memory: no vocabulary is held.
            let (lexicon, words) = passes.lexicon_for_output(&self.vocab_lexicon(), self.scope())?;
            let words = WordSource::Disk(&words);
            if self.plan.keep_state {
                // Every n-gram goes to the state; those counted often enough to the output too.
                let part = self.work.path(&format!("state/parts/bucket-{bucket:04}.dgr"));
                let tmp = scratch.path().join("state.dgr");
                let mut state = RunWriter::create(&tmp, RunHeader::counts(self.config.n as u8, lexicon.identity()))?;
                let (min_count, mut written) = (self.config.min_count, 0);
                passes.merge_every(runs, entries, &lexicon, words, &mut stats, &mut |lexicon, ids, count| {
                    state.push(ids, count)?;
                    if count >= min_count {
                        written += 1;
                        writer.write(lexicon, ids, count)?;
                    }
                    Ok(())
                })?;
                stats.output_ngrams = written;
                state.finish()?;
                std::fs::rename(&tmp, &part).map_err(|e| ClusterError::io(&part, e))?;
            } else {
                passes.merge(runs, entries, &lexicon, words, &mut stats, &mut |lexicon, ids, count| {
                    writer.write(lexicon, ids, count)
                })?;
            }
        }
        writer.finish()?;
        stats.seconds.merge = started.elapsed().as_secs_f64();
        Ok(TaskRecord { stats, ..Default::default() })
    }

    /// Joins the buckets' duplicates into the output, in bucket order
    /// (buckets are ranges of first word IDs), and copies the lexicon.
    fn finish(&self) -> Result<TaskRecord, ClusterError> {
        let mut out = OutputFile::create(self.outputs.dups.as_deref())?;
        check_encoder_budget(self.config.memory, &[out.encoder_bytes()])?;
        let mut buf = vec![0u8; 1 << 20];
        for bucket in 0..self.plan.buckets {
            self.record(TaskId::Reduce(bucket), TaskId::Finish)?;
            let path = self.bucket_dups(bucket);
            // Decompressed and written as one output: its bytes are those of the one-process job's.
            let mut part = std::fs::File::open(&path)
                .and_then(zstd::stream::read::Decoder::new)
                .map_err(|e| ClusterError::io(&path, e))?;
            loop {
                let got = std::io::Read::read(&mut part, &mut buf).map_err(|e| ClusterError::io(&path, e))?;
                if got == 0 {
                    break;
                }
                out.write_all(&buf[..got])?;
            }
        }
        out.finish()?;
        if let Some(target) = &self.outputs.lexicon {
            let from = self.vocab_lexicon();
            write_file(target, |out| std::io::copy(&mut std::fs::File::open(&from)?, out).map(drop))?;
        }
        if self.plan.keep_state {
            // The state's first generation: the runs of every n-gram and the lexicon of their IDs.
            let parts = self.work.path("state/parts");
            if self.plan.keep_postings {
                self.finish_postings_state(&parts)?;
            }
            let from = self.vocab_lexicon();
            write_file(&parts.join("lexicon.lex"), |out| {
                std::io::copy(&mut std::fs::File::open(&from)?, out).map(drop)
            })?;
            let generation = self.work.path(&generation_dir(0));
            std::fs::rename(&parts, &generation).map_err(|e| ClusterError::io(&generation, e))?;
        }
        Ok(TaskRecord::default())
    }

    /// Runs removed once the output is written: they are as large as the data.
    fn remove_spill(&self) -> Result<(), ClusterError> {
        for dir in ["runs", "streams", "dups", "tmp", "pairs"] {
            let path = self.work.path(dir);
            std::fs::remove_dir_all(&path).map_err(|e| ClusterError::io(&path, e))?;
            std::fs::create_dir_all(&path).map_err(|e| ClusterError::io(&path, e))?;
        }
        Ok(())
    }
}

/// The first word ID of buckets 1.. so each holds about the same number of
/// n-gram occurrences: an n-gram starts with a word as often as the word
/// occurs (words are numbered by decreasing count, so early buckets hold
/// few words). Buckets may be empty when one word outweighs a bucket.
fn bucket_bounds(words: usize, count: impl Fn(usize) -> u64, buckets: usize) -> Vec<u32> {
    let total: u128 = (0..words).map(|id| count(id) as u128).sum();
    let mut bounds = Vec::with_capacity(buckets.saturating_sub(1));
    let mut seen: u128 = 0;
    let mut id = 0usize;
    for b in 1..buckets {
        let target = total * b as u128 / buckets as u128;
        while id < words && seen + count(id) as u128 <= target {
            seen += count(id) as u128;
            id += 1;
        }
        bounds.push(id as u32);
    }
    bounds
}

#[cfg(test)]
mod tests {
    fn bucket_bounds(counts: &[u64], buckets: usize) -> Vec<u32> {
        super::bucket_bounds(counts.len(), |id| counts[id], buckets)
    }

    #[test]
    fn buckets_split_the_occurrences_evenly() {
        assert_eq!(bucket_bounds(&[10, 10, 10, 10], 4), [1, 2, 3]);
        assert_eq!(bucket_bounds(&[10, 10, 10, 10], 1), Vec::<u32>::new());
        // One word holding most occurrences leaves the middle buckets empty.
        assert_eq!(bucket_bounds(&[70, 10, 10, 10], 4), [0, 0, 1]);
        let bounds = bucket_bounds(&[5; 100], 3);
        assert_eq!(bounds, [33, 66]);
        assert!(bucket_bounds(&[], 4).iter().all(|&b| b == 0));
    }
}
