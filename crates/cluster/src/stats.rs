//! The summary of a staged job: the tasks' summaries added up.

use dupgram_pipeline::{NgramStats, PairsStats};

/// Adds a task's summary to the job's. Each task fills only the fields of
/// its own pass (the lexicon tasks the reading, the map tasks the runs, …),
/// so counts add up and sizes take the largest.
pub fn absorb(total: &mut NgramStats, part: &NgramStats) {
    total.documents += part.documents;
    total.input_bytes += part.input_bytes;
    total.tokens += part.tokens;
    total.vocabulary = total.vocabulary.max(part.vocabulary);
    total.repeated_words = total.repeated_words.max(part.repeated_words);
    total.stopwords = total.stopwords.max(part.stopwords);
    total.ngrams += part.ngrams;
    total.duplicate_types += part.duplicate_types;
    total.duplicate_occurrences += part.duplicate_occurrences;
    total.output_ngrams += part.output_ngrams;
    total.sorted_ngrams += part.sorted_ngrams;
    total.chunk_ngrams = total.chunk_ngrams.max(part.chunk_ngrams);
    total.runs_written += part.runs_written;
    total.run_bytes += part.run_bytes;
    total.intermediate_merges += part.intermediate_merges;
    total.merge_bytes += part.merge_bytes;
    total.merge_passes = total.merge_passes.max(part.merge_passes);
    total.fan_in = total.fan_in.max(part.fan_in);
    total.replaced_utf8 += part.replaced_utf8;
    total.skipped_records += part.skipped_records;
    total.long_tokens += part.long_tokens;
    // Each lexicon task's words past its table: a word past several counts once in each.
    total.overflow_words += part.overflow_words;
    total.overflow_tokens += part.overflow_tokens;
    total.overflow_slots += part.overflow_slots;
    total.warnings.extend(part.warnings.iter().cloned());
    total.peak_rss = total.peak_rss.max(part.peak_rss);
    total.seconds.lexicon += part.seconds.lexicon;
    total.seconds.sieve += part.seconds.sieve;
    total.seconds.count += part.seconds.count;
    total.seconds.merge += part.seconds.merge;
    total.seconds.total += part.seconds.total;
    if part.sieve.bytes > 0 {
        total.sieve.bytes = part.sieve.bytes;
        total.sieve.frozen_bytes = part.sieve.frozen_bytes;
        total.sieve.saturation = part.sieve.saturation;
        total.sieve.used = part.sieve.used;
    }
    if part.sieve.dropped.is_some() {
        total.sieve.used = false;
        total.sieve.dropped = part.sieve.dropped.clone();
    }
}

/// The fields derived from the others, once every task is in.
pub fn settle(total: &mut NgramStats) {
    total.distinct_ngrams = total.ngrams - total.duplicate_occurrences.min(total.ngrams) + total.duplicate_types;
    total.bytes_spilled = total.run_bytes + total.merge_bytes;
}

/// Adds a task's part of a `pairs` job's summary to the job's (each task
/// fills the fields of its own step; times add up as task time).
pub fn absorb_pairs(total: &mut PairsStats, part: &PairsStats) {
    let (t, p) = (&mut total.index, &part.index);
    t.documents += p.documents;
    t.tokens += p.tokens;
    t.duplicate_ngrams += p.duplicate_ngrams;
    t.duplicate_occurrences += p.duplicate_occurrences;
    t.all_ngrams += p.all_ngrams;
    t.bytes_spilled += p.bytes_spilled;
    t.index_seconds += p.index_seconds;
    t.merge_seconds += p.merge_seconds;
    total.exact_groups += part.exact_groups;
    total.grouped_documents += part.grouped_documents;
    total.boilerplate_ngrams += part.boilerplate_ngrams;
    total.shared_sets += part.shared_sets;
    total.shared_set_ngrams += part.shared_set_ngrams;
    total.candidate_pairs += part.candidate_pairs;
    total.pruned_pairs += part.pruned_pairs;
    total.skipped.partition += part.skipped.partition;
    total.skipped.length += part.skipped.length;
    total.skipped.bounds += part.skipped.bounds;
    total.scored_pairs += part.scored_pairs;
    total.kept_pairs += part.kept_pairs;
    total.group_pairs += part.group_pairs;
    total.expanded_pairs += part.expanded_pairs;
    total.capped_groups += part.capped_groups;
    total.capped_named.extend(part.capped_named.iter().cloned());
    total.clusters += part.clusters;
    total.clustered_documents += part.clustered_documents;
    total.index_blocks += part.index_blocks;
    total.index_reads += part.index_reads;
    total.peak_rss = total.peak_rss.max(part.peak_rss);
    total.seconds.candidates += part.seconds.candidates;
    total.seconds.scoring += part.seconds.scoring;
    total.seconds.output += part.seconds.output;
    total.warnings.extend(part.warnings.iter().cloned());
}

/// The fields derived from the others, once every task is in.
pub fn settle_pairs(total: &mut PairsStats) {
    let i = &mut total.index;
    i.index_fraction = if i.all_ngrams == 0 { 0.0 } else { i.duplicate_occurrences as f64 / i.all_ngrams as f64 };
    total.seconds.index = i.index_seconds + i.merge_seconds;
    let s = &total.seconds;
    total.seconds.total = s.index + s.candidates + s.scoring + s.output;
}
