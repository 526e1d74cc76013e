//! Where the decisions of `dedup` take each document's duplicate n-gram
//! occurrences from, in document order: three ways to one answer (the
//! tests compare them), chosen by what fits in memory.

use std::ops::Range;

use dupgram_dedup::NgramAt;
use dupgram_jobkit::error::PipelineError;

use crate::index::{BlockCache, DocLists};
use crate::occurrence_file::OccurrenceReader;

/// A document's occurrences, each document's sorted by position, then ID.
pub(super) enum DocOccurrences<'a> {
    /// Gathered in memory by the index merge.
    Lists { lists: &'a DocLists, tokens: &'a [u32] },
    /// Read back from the index a block of documents at a time.
    Blocks {
        cache: BlockCache<'a>,
        blocks: &'a [Range<u32>],
        /// The block of the document asked for last.
        block: usize,
        /// Each document's occurrences and tokens, as indexed.
        occurrences: &'a [u32],
        tokens: &'a [u32],
        sorted: Vec<NgramAt>,
    },
    /// Read in order from the index sorted by document (`crate::index::ByDoc`):
    /// nothing held per document.
    ByDoc { reader: OccurrenceReader, list: Vec<NgramAt> },
}

impl<'a> DocOccurrences<'a> {
    /// The occurrences of document `doc`, asked for in increasing order,
    /// which has `tokens` tokens read back: fails when the document was
    /// indexed with other tokens than that (the text changed).
    pub fn of(&mut self, doc: u32, tokens: u64) -> Result<&[NgramAt], PipelineError> {
        match self {
            DocOccurrences::Lists { lists, tokens: indexed } => {
                same_tokens(doc, tokens, indexed)?;
                Ok(lists.doc(doc))
            }
            DocOccurrences::Blocks { cache, blocks, block, occurrences, tokens: indexed, sorted } => {
                same_tokens(doc, tokens, indexed)?;
                // `doc` is in the table, so in a block.
                while blocks[*block].end <= doc {
                    *block += 1;
                }
                cache.ensure(*block as u32, None, occurrences, indexed)?;
                let found = cache.block(*block as u32).expect("the block is loaded").doc(doc);
                sorted.clear();
                sorted.extend(found.iter().map(|o| NgramAt { pos: o.pos, id: o.ngram }));
                sorted.sort_unstable();
                Ok(sorted)
            }
            DocOccurrences::ByDoc { reader, list } => {
                // The positions are checked instead: one past the document's is an error.
                let tokens = u32::try_from(tokens)
                    .map_err(|_| PipelineError::Changed(format!("document {} has {tokens} tokens now", doc + 1)))?;
                reader.take_document(u64::from(doc) << 32, tokens, list)?;
                Ok(list)
            }
        }
    }

    /// Fails when occurrences are left after the last document: the text
    /// read back is not all the text indexed.
    pub fn check_all_taken(&mut self) -> Result<(), PipelineError> {
        if let DocOccurrences::ByDoc { reader, .. } = self
            && !reader.at_end()?
        {
            return Err(PipelineError::Changed(
                "repeated n-grams were indexed past the last document read back".into(),
            ));
        }
        Ok(())
    }

    /// Each document's token count as indexed, when a table in memory holds
    /// them (not when the index is read sorted by document).
    pub fn indexed_tokens(&self) -> Option<&'a [u32]> {
        match self {
            DocOccurrences::Lists { tokens, .. } | DocOccurrences::Blocks { tokens, .. } => Some(tokens),
            DocOccurrences::ByDoc { .. } => None,
        }
    }

    /// Readings of the whole index to build blocks.
    pub fn index_reads(&self) -> u64 {
        match self {
            DocOccurrences::Blocks { cache, .. } => cache.index_reads,
            _ => 0,
        }
    }
}

/// Fails unless document `doc` was indexed with `tokens` tokens.
fn same_tokens(doc: u32, tokens: u64, indexed: &[u32]) -> Result<(), PipelineError> {
    let expected = indexed.get(doc as usize).copied();
    if expected.map(u64::from) != Some(tokens) {
        return Err(PipelineError::Changed(format!(
            "document {} has {tokens} tokens now and had {} when it was indexed",
            doc + 1,
            expected.map_or("no".into(), |e| e.to_string())
        )));
    }
    Ok(())
}
