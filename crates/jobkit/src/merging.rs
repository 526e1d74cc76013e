//! Merges of run files within a job's work directory.
//!
//! A bottom floor of the crate: the jobs use it; it uses only the merge
//! crate, the job's control and the error type.

use std::path::Path;

use dupgram_merge::{MergeReport, MergeSink, RunFile, merge_all};
use dupgram_runs::RunHeader;

use crate::control::Control;
use crate::error::PipelineError;

/// Merges `runs` into `sink`, reading at most `fan_in` runs at once; the
/// intermediate merges that needs are written to `work` as
/// `{name}-NNNNNN.dgr` (named per merge, so merges running at once in one
/// directory never meet).
pub fn merge_in<S>(
    work: &Path,
    name: &str,
    runs: Vec<RunFile>,
    header: RunHeader,
    fan_in: usize,
    sink: &mut S,
    control: &Control,
) -> Result<MergeReport, PipelineError>
where
    S: MergeSink,
    S::Error: Into<PipelineError>,
{
    let mut next = 0u64;
    let report = merge_all(
        runs,
        header,
        fan_in,
        || {
            next += 1;
            work.join(format!("{name}-{next:06}.dgr"))
        },
        sink,
        control,
    )?;
    Ok(report)
}
