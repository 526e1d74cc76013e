//! Slurm: one sbatch script per stage, job arrays for the per-shard and
//! per-bucket stages, `--dependency=afterok` between stages.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::ClusterError;
use crate::plan::JobPlan;
use crate::workdir::WorkDir;

/// How the scripts ask Slurm for resources.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// The dupgram binary the tasks run (on a shared filesystem).
    pub program: PathBuf,
    /// Memory per task in bytes: the job's `--memory`.
    pub memory: u64,
    pub cpus: usize,
    pub partition: Option<String>,
    /// Further `#SBATCH` options, as given (`--time=2:00:00`, `--account=x`).
    pub extra: Vec<String>,
}

/// One script, in submission order.
#[derive(Debug, Clone)]
pub struct Script {
    pub stage: &'static str,
    pub path: PathBuf,
    /// Tasks in its job array.
    pub tasks: usize,
}

/// A submitted stage.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub stage: &'static str,
    pub job_id: String,
}

/// Writes the job's scripts into `slurm/` of the work directory.
pub fn write_scripts(work: &WorkDir, plan: &JobPlan, options: &SlurmOptions) -> Result<Vec<Script>, ClusterError> {
    let (shards, buckets) = (plan.shards.len(), plan.buckets);
    let mut stages: Vec<(&'static str, usize)> = vec![("lexicon", shards), ("vocab", 1)];
    if plan.command == "pairs" {
        stages.extend([("index", shards), ("postings", buckets), ("candidates", buckets), ("score", shards)]);
    } else {
        stages.extend([("map", shards), ("reduce", buckets)]);
    }
    stages.push(("finish", 1));
    let mut scripts = Vec::new();
    for (stage, tasks) in stages {
        let path = work.path(&format!("slurm/{stage}.sbatch"));
        let text = script(work.root(), &plan.cwd, stage, tasks, options);
        crate::record::write_file(&path, |out| out.write_all(text.as_bytes()))?;
        set_executable(&path)?;
        scripts.push(Script { stage, path, tasks });
    }
    Ok(scripts)
}

fn script(root: &Path, cwd: &Path, stage: &str, tasks: usize, options: &SlurmOptions) -> String {
    let mut s = String::from("#!/bin/bash\n");
    s += &format!("#SBATCH --job-name=dupgram-{stage}\n");
    if tasks > 1 {
        s += &format!("#SBATCH --array=0-{}\n", tasks - 1);
    }
    s += &format!("#SBATCH --mem={}M\n", options.memory.div_ceil(1 << 20));
    s += &format!("#SBATCH --cpus-per-task={}\n", options.cpus);
    s += "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
    let log = if tasks > 1 { format!("{stage}-%a.log") } else { format!("{stage}.log") };
    s += &format!("#SBATCH --output={}\n", quote(&root.join("slurm").join(log)));
    s += &format!("#SBATCH --chdir={}\n", quote(cwd));
    if let Some(p) = &options.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    for extra in &options.extra {
        s += &format!("#SBATCH {extra}\n");
    }
    s += "set -euo pipefail\n";
    s += &format!(
        "exec {} stage {stage} --workdir {} --index \"${{SLURM_ARRAY_TASK_ID:-0}}\"\n",
        quote(&options.program),
        quote(root)
    );
    s
}

/// Single-quotes a path for bash (`#SBATCH` lines take it without quotes
/// when it has no spaces, which is all Slurm understands there).
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:%@,".contains(c)) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<(), ClusterError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|e| ClusterError::io(path, e))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<(), ClusterError> {
    Ok(())
}

/// Submits the scripts in order, each stage after the previous one succeeded.
pub fn submit(scripts: &[Script]) -> Result<Vec<Submitted>, ClusterError> {
    let mut submitted: Vec<Submitted> = Vec::new();
    for script in scripts {
        let mut sbatch = Command::new("sbatch");
        sbatch.arg("--parsable");
        if let Some(previous) = submitted.last() {
            sbatch.arg(format!("--dependency=afterok:{}", previous.job_id));
        }
        sbatch.arg(&script.path);
        let out = sbatch.output().map_err(|e| ClusterError::Slurm(format!("cannot run sbatch: {e}")))?;
        if !out.status.success() {
            return Err(ClusterError::Slurm(format!(
                "sbatch {} failed: {}",
                script.path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        // --parsable prints "jobid" or "jobid;cluster".
        let text = String::from_utf8_lossy(&out.stdout);
        let job_id = text.trim().split(';').next().unwrap_or_default().to_owned();
        if job_id.is_empty() || !job_id.chars().all(|c| c.is_ascii_digit()) {
            return Err(ClusterError::Slurm(format!("sbatch printed no job ID: {:?}", text.trim())));
        }
        submitted.push(Submitted { stage: script.stage, job_id });
    }
    Ok(submitted)
}

/// Waits until none of the jobs is queued or running, polling `squeue`.
pub fn wait(jobs: &[Submitted], poll: std::time::Duration, stop: &dyn Fn() -> bool) -> Result<(), ClusterError> {
    let ids: Vec<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
    loop {
        if stop() {
            return Err(ClusterError::Pipeline(dupgram_pipeline::PipelineError::Interrupted));
        }
        let out = Command::new("squeue")
            .args(["-h", "-o", "%i", "-j", &ids.join(",")])
            .output()
            .map_err(|e| ClusterError::Slurm(format!("cannot run squeue: {e}")))?;
        // squeue fails for job IDs it has already forgotten: they are done.
        if !out.status.success() || out.stdout.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        std::thread::sleep(poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_name_the_stage_array_memory_and_task() {
        let options = SlurmOptions {
            program: "/opt/dupgram".into(),
            memory: 1 << 30,
            cpus: 4,
            partition: Some("batch".into()),
            extra: vec!["--time=1:00:00".into()],
        };
        let text = script(Path::new("/shared/work dir"), Path::new("/home/u"), "map", 8, &options);
        for line in [
            "#SBATCH --job-name=dupgram-map",
            "#SBATCH --array=0-7",
            "#SBATCH --mem=1024M",
            "#SBATCH --cpus-per-task=4",
            "#SBATCH --partition=batch",
            "#SBATCH --time=1:00:00",
            "#SBATCH --chdir=/home/u",
            "exec /opt/dupgram stage map --workdir '/shared/work dir' --index \"${SLURM_ARRAY_TASK_ID:-0}\"",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        let single = script(Path::new("/w"), Path::new("/"), "vocab", 1, &options);
        assert!(!single.contains("--array"), "{single}");
    }
}
