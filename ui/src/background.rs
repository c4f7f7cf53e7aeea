//! The explorer's background threads, so a key never waits: the worker
//! that runs the kernels lens on long lists, and the loader that reads
//! Timeline steps from the trace. Each runs the newest job queued, drops
//! the ones it overtook, and wakes the event loop through a `Notify`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

use libreyolo_core::analysis::timeline::{self, StepIndex, Timeline};
use libreyolo_core::lens::kernels::{KernelQuery, Kernels, kernels};
use libreyolo_core::profile::Input;
use libreyolo_core::trace::ReadOptions;

/// Kernel lists longer than this are filtered on the worker thread (when
/// there is one), so a key never waits for the lens.
pub const BACKGROUND_ROWS: usize = 5_000;

/// A kernels-lens job for the worker, and its answer.
pub type KernelJob = (u64, Arc<Input>, KernelQuery);
pub type KernelDone = (u64, libreyolo_core::Result<Kernels>);

/// A thread that runs the newest job queued and drops the ones it
/// overtook (a burst of keys costs one run), then signals `answered` so
/// the event loop wakes for the answer in `done`.
pub struct Latest<J, D> {
    jobs: Sender<J>,
    pub(crate) done: Receiver<D>,
    pub answered: Arc<tokio::sync::Notify>,
}

impl<J: Send + 'static, D: Send + 'static> Latest<J, D> {
    fn start(run: impl Fn(J) -> D + Send + 'static) -> Latest<J, D> {
        let (jobs, job_rx) = mpsc::channel::<J>();
        let (done_tx, done) = mpsc::channel::<D>();
        let answered = Arc::new(tokio::sync::Notify::new());
        let wake = Arc::clone(&answered);
        std::thread::spawn(move || {
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    job = newer;
                }
                if done_tx.send(run(job)).is_err() {
                    return;
                }
                wake.notify_one();
            }
        });
        Latest { jobs, done, answered }
    }

    /// Queues a job; false when the thread is gone.
    pub(crate) fn send(&self, job: J) -> bool {
        self.jobs.send(job).is_ok()
    }
}

/// The thread that runs the kernels lens on large profiles.
pub struct Worker {
    thread: Latest<KernelJob, KernelDone>,
    /// The last job's id (a `Cell`: panes queue jobs through a shared
    /// [`crate::view::Ctx`]).
    next: std::cell::Cell<u64>,
}

impl Worker {
    pub fn spawn() -> Worker {
        let thread = Latest::start(|(id, input, query): KernelJob| {
            let result = std::panic::catch_unwind(|| kernels(&input.profile, &query))
                .unwrap_or_else(|_| {
                    Err(libreyolo_core::Error::failed("the kernels filter crashed"))
                });
            (id, result)
        });
        Worker { thread, next: std::cell::Cell::new(0) }
    }

    /// Queues a job; its id, or `None` when the thread is gone.
    pub fn send(&self, input: Arc<Input>, query: KernelQuery) -> Option<u64> {
        let id = self.next.get() + 1;
        self.next.set(id);
        self.thread.send((id, input, query)).then_some(id)
    }

    pub(crate) fn done(&self) -> &Receiver<KernelDone> {
        &self.thread.done
    }

    pub fn answered(&self) -> &Arc<tokio::sync::Notify> {
        &self.thread.answered
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
    /// How the trace is read when it has no index yet.
    pub read: ReadOptions,
}

pub type StepDone = (u64, Result<(Arc<StepIndex>, usize, Timeline), String>);

impl StepJob {
    pub fn run(self) -> StepDone {
        let read = || -> libreyolo_core::Result<(Arc<StepIndex>, usize, Timeline)> {
            let index = match self.index {
                Some(ix) => ix,
                None => Arc::new(timeline::index(&self.trace, &self.read)?),
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
/// trace.
pub type StepLoader = Latest<StepJob, StepDone>;

impl StepLoader {
    pub fn spawn() -> StepLoader {
        Latest::start(StepJob::run)
    }
}
