//! How a kept state is laid out in the work directory: a directory per
//! generation (`state/gen-NNNN/`) with its segments, its lexicon, and with
//! positions kept, the documents' tables (`docs-GGGG.table`, `.totals`,
//! one pair per generation that added documents).

use std::path::Path;

use dupgram_pipeline::{BucketTotals, DocTable, IndexTotals};

use crate::error::ClusterError;

/// The directory of state generation `generation`, in the work directory.
pub(crate) fn generation_dir(generation: u32) -> String {
    format!("state/{}", generation_name(generation))
}

/// The name of a generation's directory inside `state/`, which segment paths start with.
pub(crate) fn generation_name(generation: u32) -> String {
    format!("gen-{generation:04}")
}

/// The name of the document table a generation added.
pub(crate) fn docs_table(generation: u32) -> String {
    format!("docs-{generation:04}.table")
}

/// The name of the per-document totals a generation added.
pub(crate) fn docs_totals(generation: u32) -> String {
    format!("docs-{generation:04}.totals")
}

/// The document table of the whole corpus so far, and each document's
/// totals over every n-gram, from a generation's `docs-*` files.
pub(crate) fn load_corpus_docs(generation: &Path, generations: u32) -> Result<(DocTable, IndexTotals), ClusterError> {
    let mut table = DocTable::default();
    let mut totals = IndexTotals::empty(0);
    for g in 0..=generations {
        let path = generation.join(docs_table(g));
        if !path.exists() {
            continue;
        }
        let (first, part) = DocTable::read_from(&path)?;
        if first != table.len() as u64 {
            return Err(ClusterError::corrupt(&path, format!("starts at document {first}, not {}", table.len())));
        }
        let part_totals = BucketTotals::read_from(&generation.join(docs_totals(g)))?.totals;
        if part_totals.occurrences.len() != part.len() {
            return Err(ClusterError::corrupt(&path, "its totals are of another number of documents"));
        }
        table.append(part)?;
        totals.occurrences.extend(part_totals.occurrences);
        totals.types.extend(part_totals.types);
    }
    Ok((table, totals))
}
