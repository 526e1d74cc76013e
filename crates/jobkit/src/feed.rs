//! Feeding workers: one thread reads and decodes the corpus into batches,
//! `threads` workers consume them.
//!
//! Batches come from a fixed pool and go back to it once processed, so the
//! text in flight never exceeds `pool × batch size` whatever the corpus. A
//! batch that continues a document still open in the previous batch (a
//! document longer than a batch) goes to the worker that saw its beginning:
//! tokenizer and n-gram window state live in the worker, and n-grams must
//! run across the cut.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_channel::{Receiver, Select, Sender, bounded};
use dupgram_corpus::{Batch, CorpusReader, Input, ReadOptions, ReadStats};

use crate::control::Control;
use crate::error::PipelineError;

/// A worker of one pass: fed batches in order, then finished.
pub trait BatchWorker: Send {
    type Output: Send;
    fn batch(&mut self, batch: &Batch) -> Result<(), PipelineError>;
    fn finish(self) -> Result<Self::Output, PipelineError>;
}

/// What a pass reads.
pub struct Source<'a> {
    pub inputs: &'a [Input],
    pub options: &'a ReadOptions,
    pub batch_bytes: usize,
    pub batches: usize,
}

/// Runs `workers` over every batch of `source`; returns their outputs in order and what reading found.
pub fn feed<W: BatchWorker>(
    workers: Vec<W>,
    source: &Source,
    control: &Control,
) -> Result<(Vec<W::Output>, ReadStats), PipelineError> {
    let abort = AtomicBool::new(false);
    let (pool_tx, pool_rx) = bounded::<Batch>(source.batches);
    for _ in 0..source.batches {
        pool_tx.send(Batch::default()).expect("pool has room for every batch");
    }
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..workers.len() {
        let (tx, rx) = bounded::<Batch>(2);
        senders.push(tx);
        receivers.push(rx);
    }
    let progress = control.progress.bytes.clone();
    progress.store(0, Ordering::Relaxed);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| read_into(source, senders, &pool_rx, progress, control, &abort));
        let handles: Vec<_> = workers
            .into_iter()
            .zip(receivers)
            .map(|(worker, rx)| {
                let pool = pool_tx.clone();
                let abort = &abort;
                scope.spawn(move || work(worker, rx, pool, abort))
            })
            .collect();
        drop(pool_tx);
        let outputs: Vec<Result<W::Output, PipelineError>> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(panicked()))).collect();
        let read = reader.join().unwrap_or_else(|_| Err(panicked()));
        let mut results = Vec::with_capacity(outputs.len());
        let mut errors = Vec::new();
        let stats = match read {
            Ok(stats) => Some(stats),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        for out in outputs {
            match out {
                Ok(v) => results.push(v),
                Err(e) => errors.push(e),
            }
        }
        if control.interrupted() {
            return Err(PipelineError::Interrupted);
        }
        // The first real error wins (the reader's first): the others only stopped because of it.
        if let Some(i) = errors.iter().position(|e| !matches!(e, PipelineError::Interrupted)) {
            return Err(errors.swap_remove(i));
        }
        match stats {
            Some(stats) if errors.is_empty() => Ok((results, stats)),
            _ => Err(PipelineError::Interrupted),
        }
    })
}

fn panicked() -> PipelineError {
    PipelineError::Usage("internal error: a worker thread panicked".into())
}

fn read_into(
    source: &Source,
    senders: Vec<Sender<Batch>>,
    pool: &Receiver<Batch>,
    progress: Arc<AtomicU64>,
    control: &Control,
    abort: &AtomicBool,
) -> Result<ReadStats, PipelineError> {
    let result = read_loop(source, &senders, pool, progress, control, abort);
    if result.is_err() {
        abort.store(true, Ordering::Relaxed);
    }
    result
}

fn read_loop(
    source: &Source,
    senders: &[Sender<Batch>],
    pool: &Receiver<Batch>,
    progress: Arc<AtomicU64>,
    control: &Control,
    abort: &AtomicBool,
) -> Result<ReadStats, PipelineError> {
    let mut reader = CorpusReader::new(source.inputs.to_vec(), source.options.clone(), progress);
    let mut last_worker = 0;
    loop {
        if control.interrupted() || abort.load(Ordering::Relaxed) {
            return Err(PipelineError::Interrupted);
        }
        let mut batch = match pool.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(batch) => batch,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Err(PipelineError::Interrupted),
        };
        if !reader.fill(&mut batch, source.batch_bytes)? {
            return Ok(reader.stats().clone());
        }
        let continues = batch.pieces.first().is_some_and(|p| p.id.is_none());
        last_worker = if continues {
            senders[last_worker].send(batch).map_err(|_| PipelineError::Interrupted)?;
            last_worker
        } else {
            send_to_any(senders, batch)?
        };
    }
}

/// Sends to whichever worker has room first; returns its index.
fn send_to_any(senders: &[Sender<Batch>], batch: Batch) -> Result<usize, PipelineError> {
    let mut select = Select::new();
    for s in senders {
        select.send(s);
    }
    let op = select.select();
    let index = op.index();
    op.send(&senders[index], batch).map_err(|_| PipelineError::Interrupted)?;
    Ok(index)
}

fn work<W: BatchWorker>(
    mut worker: W,
    rx: Receiver<Batch>,
    pool: Sender<Batch>,
    abort: &AtomicBool,
) -> Result<W::Output, PipelineError> {
    for batch in rx {
        if abort.load(Ordering::Relaxed) {
            return Err(PipelineError::Interrupted);
        }
        if let Err(e) = worker.batch(&batch) {
            abort.store(true, Ordering::Relaxed);
            return Err(e);
        }
        // The reader may already be gone (at the end); then the batch is simply freed.
        let _ = pool.send(batch);
    }
    worker.finish().inspect_err(|_| abort.store(true, Ordering::Relaxed))
}
