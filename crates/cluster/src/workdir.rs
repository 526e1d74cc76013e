//! The shared directory a job's tasks meet in, and the job planned there.

use std::path::{Path, PathBuf};

use crate::error::ClusterError;
use crate::plan::JobPlan;
use crate::record::{read_record, write_record};

/// The shared directory a job's tasks meet in.
#[derive(Debug, Clone)]
pub struct WorkDir {
    root: PathBuf,
}

impl WorkDir {
    /// The work directory at `root` (made if missing), as an absolute path.
    pub fn new(root: &Path) -> Result<WorkDir, ClusterError> {
        std::fs::create_dir_all(root).map_err(|e| ClusterError::io(root, e))?;
        let root = std::path::absolute(root).map_err(|e| ClusterError::io(root, e))?;
        for sub in ["tasks", "lexicon", "streams", "runs", "dups", "slurm", "tmp", "state/parts", "pairs"] {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| ClusterError::io(&dir, e))?;
        }
        Ok(WorkDir { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn job_file(&self) -> PathBuf {
        self.root.join("job.json")
    }

    /// The job planned in this directory, if any.
    pub fn plan(&self) -> Result<Option<JobPlan>, ClusterError> {
        let path = self.job_file();
        if !path.exists() {
            return Ok(None);
        }
        let plan: JobPlan = read_record(&path)?;
        plan.check_shape(&path)?;
        Ok(Some(plan))
    }

    /// Records the plan; a directory holds one job for its whole life.
    pub fn save_plan(&self, plan: &JobPlan) -> Result<(), ClusterError> {
        match self.plan()? {
            Some(old)
                if old.options != plan.options
                    || old.shards.len() != plan.shards.len()
                    || old.buckets != plan.buckets =>
            {
                Err(ClusterError::Plan(format!(
                    "{} already holds another job (planned as `{}`); use a new --workdir",
                    self.root.display(),
                    old.argv.join(" ")
                )))
            }
            Some(old) => old.check_all(),
            None => write_record(&self.job_file(), plan),
        }
    }

    /// The plan, which must exist.
    pub fn load_plan(&self) -> Result<JobPlan, ClusterError> {
        self.plan()?.ok_or_else(|| {
            ClusterError::Plan(format!(
                "{}: no job planned here (no job.json); run `dupgram slurm` first",
                self.root.display()
            ))
        })
    }
}
