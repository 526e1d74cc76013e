//! What the staged-job tests share: a job's plan over the inputs of a
//! configuration, cut as `dupgram slurm` cuts them.

use std::path::{Path, PathBuf};

use dupgram_cluster::JobPlan;
use dupgram_corpus::Input;
use dupgram_pipeline::{Control, NgramConfig, Passes};

/// The plan of a `command` job over `base`'s input files in `shards` shards and `buckets` buckets.
pub fn job_plan(command: &str, base: &NgramConfig, work: &Path, shards: usize, buckets: usize) -> JobPlan {
    let paths: Vec<PathBuf> =
        base.inputs.iter().map(|i| if let Input::Path(p) = i { p.clone() } else { unreachable!() }).collect();
    let (inputs, cut) = JobPlan::cut(&paths, None, shards, buckets).unwrap();
    let sieve_bytes = Passes::new(base, &Control::default(), work).unwrap().sieve_size().unwrap_or(0);
    JobPlan {
        command: command.into(),
        argv: vec![],
        cwd: std::env::current_dir().unwrap(),
        options: String::new(),
        inputs,
        shards: cut,
        buckets,
        sieve_bytes,
        keep_state: false,
        keep_postings: false,
    }
}
