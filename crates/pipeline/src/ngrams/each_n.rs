//! Counts for several n over one lexicon pass (`dupgram stats --n 1..10`).
//!
//! The words, their IDs and the word streams do not depend on n, so the
//! corpus is read and tokenised once: the first n is counted as `dupgram
//! ngrams` counts it (its sieve filled while reading), and each other n
//! from the word streams as `ngrams` counts a corpus whose sieve the
//! lexicon pass could not fill (the streams renumbered to final IDs once,
//! and a sieve per n filled from them: the n-grams of one n are not those
//! of another). The streams stay whole on disk until the last n is
//! counted, whose last part gives them back as it reads them; so the
//! temporary disk is the streams and one n's runs at a time, and the
//! memory what one count holds. Standard input needs no copy: only the
//! streams are read again. For one or two n, each is counted on its own
//! ([`SHARED_LEXICON_FROM`] says why).

use std::time::Instant;

use dupgram_corpus::Input;

use super::{Job, NgramConfig, NgramStats, StreamsAfter, Tokenised, WordStreams, memory_error, zstd_need};
use dupgram_jobkit::control::Control;
use dupgram_jobkit::error::PipelineError;
use dupgram_jobkit::memory::{MemoryPlan, peak_rss};

/// The fewest n counted over one lexicon pass; fewer are counted each on
/// its own (standard input, which cannot be read twice, always over one).
///
/// A count over kept streams costs more than its share of a lexicon pass:
/// its sieve is filled from the streams, and with the streams kept whole
/// the first n's last part cannot take their room on disk, so it may need
/// more parts. On 3.3M Reddit comments (97M tokens, `--memory 1G`, 2
/// threads), n = 1..10 took 64.2 s over one lexicon pass against 79.4 s
/// each on its own, but n = 5 and 10 took 17.1 s against 15.7 s.
pub const SHARED_LEXICON_FROM: usize = 3;

/// Counts the n-grams of `config`'s corpus for each n of `ns`, in order,
/// and hands each count's summary to `each` as it is made. The first
/// summary's times include the lexicon pass; the others' are their own count's.
pub fn count_ngrams_each(
    config: &NgramConfig,
    ns: &[usize],
    control: &Control,
    each: &mut dyn FnMut(NgramStats) -> Result<(), PipelineError>,
) -> Result<(), PipelineError> {
    let configs: Vec<NgramConfig> = ns.iter().map(|&n| NgramConfig { n, ..config.clone() }).collect();
    let Some(first) = configs.first() else { return Ok(()) };
    for c in &configs {
        c.check()?;
    }
    let stdin = config.inputs.iter().any(|i| matches!(i, Input::Stdin { .. }));
    if configs.len() < SHARED_LEXICON_FROM && !stdin {
        for c in &configs {
            each(super::count_ngrams(c, control, &mut |_, _, _| Ok(()))?.stats)?;
        }
        return Ok(());
    }
    let started = Instant::now();
    let plan = MemoryPlan::new(config.memory, config.threads, zstd_need(&config.inputs)?)
        .map_err(|what| memory_error(config, what))?;
    let work = dupgram_jobkit::scratch::Scratch::create(&config.tmp_dir, "dupgram-ngrams")?;
    let job = |config| Job { config, control, plan, work: work.path(), inputs: Vec::new() };
    let mut read = NgramStats {
        n: first.n,
        min_count: config.min_count,
        memory_budget: config.memory,
        threads: config.threads,
        ..NgramStats::default()
    };
    // The first n's sieve is filled while reading, as `ngrams` fills it.
    let Tokenised { lexicon, words, sieve, passing, mut renumbering, mut streams, .. } =
        job(first).tokenise(&config.inputs, None, &mut read, started)?;
    let words = words.ok_or_else(|| PipelineError::Usage("internal error: a count without its words".into()))?;
    let mut corpus =
        WordStreams { lexicon: &lexicon, words: &words, streams: &mut streams, renumbering: &mut renumbering };
    let mut filled = Some((sieve, passing));
    for (i, c) in configs.iter().enumerate() {
        let counting = Instant::now();
        let mut stats = NgramStats { n: c.n, ..read.clone() };
        if i > 0 {
            stats.seconds = Default::default();
            stats.sieve = Default::default();
        }
        let after = if i + 1 == configs.len() { StreamsAfter::Removed } else { StreamsAfter::Kept };
        // The other n get a sieve of their own, filled from the streams.
        let sieve = filled.take().unwrap_or((None, None));
        job(c).count_word_streams(&mut corpus, sieve, after, &mut stats, &mut |_, _, _| Ok(()))?;
        stats.seconds.total = match i {
            0 => started.elapsed().as_secs_f64(),
            _ => counting.elapsed().as_secs_f64(),
        };
        stats.peak_rss = peak_rss().unwrap_or(0);
        each(stats)?;
    }
    Ok(())
}
