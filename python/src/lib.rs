//! `dupgram._dupgram`: runs a dupgram command inside the Python process.
//!
//! The arguments are the command line's, parsed by the same clap
//! definitions and run by the same [`cli::run`] as the binary, so every
//! option, default and check is the command line's own; nothing is spawned.
//! The job runs on its own thread without the GIL while the calling thread
//! watches for Ctrl-C (see [`watch`]); `dupgram/__init__.py` turns keyword
//! arguments into the command line and reads the results back.

use std::ffi::OsString;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use clap::CommandFactory;
use crossbeam_channel::RecvTimeoutError;
use dupgram::cli::{self, Cli};
use dupgram_pipeline::{Control, PipelineError};
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _dupgram,
    DupgramError,
    PyException,
    "A dupgram job failed; the message is the command line's."
);

/// How often the watching thread looks for a signal.
const POLL: Duration = Duration::from_millis(50);

/// Runs `dupgram ARGS…` in this process. Raises ValueError for arguments the
/// command line refuses (the message is clap's), DupgramError when the job
/// fails, and KeyboardInterrupt on Ctrl-C, after the job has removed its
/// temporary files and left no output.
#[pyfunction]
fn run(py: Python<'_>, args: Vec<OsString>) -> PyResult<()> {
    let argv = std::iter::once(OsString::from("dupgram")).chain(args).collect();
    let parsed = Cli::try_parse_args(argv).map_err(|e| PyValueError::new_err(e.render().to_string()))?;
    let control = Control::default();
    let (done, finished) = crossbeam_channel::bounded(1);
    let job = {
        let control = control.clone();
        std::thread::Builder::new().name("dupgram-job".into()).spawn(move || {
            let result = cli::run(parsed, &control);
            // The watcher may already be gone (it never is: it joins us).
            let _ = done.send(());
            result
        })?
    };
    watch(py, &control, &finished, job)
}

/// Waits for `job` without holding the GIL, checking for Python signals in
/// between. On a signal (KeyboardInterrupt from Ctrl-C), asks the job to
/// stop, waits while it removes its temporary files, and raises the signal's
/// exception.
fn watch(
    py: Python<'_>,
    control: &Control,
    finished: &crossbeam_channel::Receiver<()>,
    job: JoinHandle<anyhow::Result<()>>,
) -> PyResult<()> {
    loop {
        match py.detach(|| finished.recv_timeout(POLL)) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(signal) = py.check_signals() {
            control.stop.store(true, Ordering::SeqCst);
            // The job checks the flag often; its cleanup is what we wait for.
            let _ = py.detach(|| job.join());
            return Err(signal);
        }
    }
    let outcome = py.detach(|| job.join());
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(failure(&error, control)),
        Err(_) => Err(DupgramError::new_err("internal error: the job panicked (its message is on standard error)")),
    }
}

/// The Python exception for a failed job: KeyboardInterrupt when it was
/// stopped, else DupgramError with the command line's one-line message.
fn failure(error: &anyhow::Error, control: &Control) -> PyErr {
    if control.interrupted() || matches!(error.downcast_ref::<PipelineError>(), Some(PipelineError::Interrupted)) {
        return PyKeyboardInterrupt::new_err("dupgram: interrupted; temporary files removed, no output written");
    }
    DupgramError::new_err(cli::one_line(error))
}

/// The values the command line accepts for `--FLAG` of `COMMAND` (empty
/// when it takes any value or none), e.g. the input formats: what this
/// build can read, for callers and tests that depend on a format.
#[pyfunction]
fn choices(command: &str, flag: &str) -> PyResult<Vec<String>> {
    let cli = Cli::command();
    let sub = cli
        .find_subcommand(command)
        .ok_or_else(|| PyValueError::new_err(format!("dupgram has no command {command:?}")))?;
    let arg = sub
        .get_arguments()
        .find(|a| a.get_long() == Some(flag))
        .ok_or_else(|| PyValueError::new_err(format!("dupgram {command} has no option --{flag}")))?;
    Ok(arg.get_possible_values().iter().map(|v| v.get_name().to_owned()).collect())
}

#[pymodule]
fn _dupgram(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(choices, m)?)?;
    m.add("DupgramError", m.py().get_type::<DupgramError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
