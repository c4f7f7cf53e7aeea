//! The explorer's background threads, so a key never waits: the worker
//! that runs the kernels lens on long lists, and the loader that reads
//! Timeline steps from the trace. Each runs the newest job queued, drops
//! the ones it overtook, and wakes the event loop through a `Notify`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

use libreyolo_core::lens::kernels::{KernelQuery, Kernels, kernels};
use libreyolo_core::lens::timeline::{self, StepIndex, Timeline};
use libreyolo_core::profile::Input;

/// Kernel lists longer than this are filtered on the worker thread (when
/// there is one), so a key never waits for the lens.
pub const BACKGROUND_ROWS: usize = 5_000;

/// A kernels-lens job for the worker, and its answer.
pub type KernelJob = (u64, Arc<Input>, KernelQuery);
pub type KernelDone = (u64, libreyolo_core::Result<Kernels>);

/// The thread that runs the kernels lens on large profiles.
pub struct Worker {
    jobs: Sender<KernelJob>,
    pub(crate) done: Receiver<KernelDone>,
    next: u64,
    /// Signalled after each answer, so the event loop wakes for it.
    pub answered: Arc<tokio::sync::Notify>,
}

impl Worker {
    /// Starts the worker. It always runs the newest job queued and drops
    /// the ones it overtook, so a burst of keys costs one lens run.
    pub fn spawn() -> Worker {
        let (jobs, job_rx) = mpsc::channel::<KernelJob>();
        let (done_tx, done) = mpsc::channel::<KernelDone>();
        let answered = Arc::new(tokio::sync::Notify::new());
        let wake = Arc::clone(&answered);
        std::thread::spawn(move || {
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    job = newer;
                }
                let (id, input, query) = job;
                let result = std::panic::catch_unwind(|| kernels(&input.profile, &query))
                    .unwrap_or_else(|_| Err(libreyolo_core::Error::failed("the kernels filter crashed")));
                if done_tx.send((id, result)).is_err() {
                    return;
                }
                wake.notify_one();
            }
        });
        Worker { jobs, done, next: 0, answered }
    }

    /// Queues a job; its id, or `None` when the thread is gone.
    pub fn send(&mut self, input: Arc<Input>, query: KernelQuery) -> Option<u64> {
        self.next += 1;
        self.jobs.send((self.next, input, query)).ok().map(|()| self.next)
    }
}

/// A Timeline step to read: pass 1 over the trace first when `index` is
/// not known yet.
#[derive(Debug, Clone)]
pub struct StepJob {
    pub id: u64,
    pub trace: PathBuf,
    pub index: Option<Arc<StepIndex>>,
    pub step: usize,
}

pub type StepDone = (u64, Result<(Arc<StepIndex>, usize, Timeline), String>);

impl StepJob {
    pub fn run(self) -> StepDone {
        let read = || -> libreyolo_core::Result<(Arc<StepIndex>, usize, Timeline)> {
            let index = match self.index {
                Some(ix) => ix,
                None => Arc::new(timeline::index(&self.trace)?),
            };
            let step = self.step.min(index.steps.len().saturating_sub(1));
            let tl = timeline::open_step(&index, step)?;
            Ok((index, step, tl))
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
            .unwrap_or_else(|_| Err(libreyolo_core::Error::failed("reading the step crashed")));
        (self.id, result.map_err(|e| format!("no timeline: {e}")))
    }
}

/// The thread that reads Timeline steps, so a key never waits on the
/// trace. It runs the newest job and drops those it overtook.
pub struct StepLoader {
    jobs: Sender<StepJob>,
    pub(crate) done: Receiver<StepDone>,
    /// Signalled after each answer, so the event loop wakes for it.
    pub answered: Arc<tokio::sync::Notify>,
}

impl StepLoader {
    pub fn spawn() -> StepLoader {
        let (jobs, job_rx) = mpsc::channel::<StepJob>();
        let (done_tx, done) = mpsc::channel::<StepDone>();
        let answered = Arc::new(tokio::sync::Notify::new());
        let wake = Arc::clone(&answered);
        std::thread::spawn(move || {
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    job = newer;
                }
                if done_tx.send(job.run()).is_err() {
                    return;
                }
                wake.notify_one();
            }
        });
        StepLoader { jobs, done, answered }
    }

    pub(crate) fn send(&self, job: StepJob) -> bool {
        self.jobs.send(job).is_ok()
    }
}
