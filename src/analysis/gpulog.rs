//! The GPU side of the pass: every kernel and copy met, each with its
//! queue and launch, and what each kernel name is.

use rustc_hash::FxHashMap as HashMap;

use crate::profile::Category;
use crate::trace::Event;

use super::kernels::KernelClass;
use super::{kernel_calls, kernels};

/// Every kernel and copy the pass met, each with its queue and launch: the
/// records the busy union, the idle account, the step model and the call
/// tree read.
#[derive(Debug, Default)]
pub(super) struct GpuLog {
    pub(super) kernel_spans: Vec<KernelSpan>,
    /// Every copy and set, for the step model.
    pub(super) copy_spans: Vec<CopySpan>,
    /// Which kernel spans the tables counted, and each one's launch
    /// configuration: each kernel's spread, streams and configurations.
    pub(super) kernel_calls: kernel_calls::Log,
    /// Each kernel name's category, Tensor Core flag and label, worked out
    /// when the name is first met (demangling is the costly part): the
    /// collectives read the category, the tables all three.
    pub(super) kernel_classes: KernelClasses,
    /// Each (device, stream) a kernel ran on, and its index.
    pub(super) queues: Vec<(i64, i64)>,
    queue_ids: HashMap<(i64, i64), u32>,
}

impl GpuLog {
    /// A kernel's device.
    pub(super) fn device(&self, k: &KernelSpan) -> i64 {
        self.queues[k.queue as usize].0
    }

    /// A kernel's stream.
    pub(super) fn stream(&self, k: &KernelSpan) -> i64 {
        self.queues[k.queue as usize].1
    }

    /// The index of a (device, stream), given one when first met.
    pub(super) fn queue(&mut self, device: i64, stream: i64) -> u32 {
        let next = self.queues.len() as u32;
        let queue = *self.queue_ids.entry((device, stream)).or_insert(next);
        if queue == next {
            self.queues.push((device, stream));
        }
        queue
    }

    /// Keeps a copy or set: its index, marked [`COPY_SPAN`] (none past
    /// that many).
    pub(super) fn add_copy(&mut self, copy: CopySpan) -> Option<u32> {
        let span = u32::try_from(self.copy_spans.len())
            .ok()
            .filter(|&i| i < COPY_SPAN)
            .map(|i| i | COPY_SPAN);
        self.copy_spans.push(copy);
        span
    }

    /// Keeps the kernel `ev` (name id `name`) that ran on `queue`, a
    /// (device, stream): its index, and whether it communicates (its name
    /// classified when first met).
    pub(super) fn add_kernel(
        &mut self,
        ev: &Event<'_>,
        name: u32,
        queue: (i64, i64),
        start: i64,
        dur: i64,
    ) -> (Option<u32>, bool) {
        let span = u32::try_from(self.kernel_spans.len()).ok();
        let queue = self.queue(queue.0, queue.1);
        self.kernel_spans.push(KernelSpan {
            start,
            end: start + dur,
            name,
            queue,
            launch_start: 0,
            launch_end: 0,
            launch_thread: NO_LAUNCH,
            launch_name: 0,
        });
        let args = ev.args.as_ref();
        self.kernel_calls.kernel(args.and_then(|a| a.grid), args.and_then(|a| a.block));
        let class = self.kernel_classes.entry(name).or_insert_with(|| kernels::classify(ev.name()));
        (span, class.category == Category::Communication)
    }

    /// Gives the kernel or copy at `span` its launch.
    pub(super) fn give_launch(&mut self, span: Option<u32>, launch: Launch) {
        match span {
            Some(i) if i & COPY_SPAN != 0 => {
                if let Some(c) = self.copy_spans.get_mut((i & !COPY_SPAN) as usize) {
                    c.launch = Some(launch);
                }
            }
            Some(i) => {
                if let Some(k) = self.kernel_spans.get_mut(i as usize) {
                    k.set_launch(launch);
                }
            }
            None => {}
        }
    }
}

/// The runtime call that put GPU work on the queue: which thread, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub thread: u32,
    pub start: i64,
    pub end: i64,
    /// The call's interned name.
    pub name: u32,
}

/// Kernel name id → (category, Tensor Core flag, short label).
pub(crate) type KernelClasses = HashMap<u32, KernelClass>;

/// A kernel's interval on its device and stream, 48 bytes (a trace holds
/// one per kernel).
#[derive(Debug, Clone, Copy)]
pub(super) struct KernelSpan {
    pub(super) start: i64,
    pub(super) end: i64,
    /// Interned kernel name (for the communication / compute split).
    pub(super) name: u32,
    /// Its (device, stream), by index in [`GpuLog::queues`].
    pub(super) queue: u32,
    /// The runtime call that launched it, when the trace has it (the idle
    /// account asks what the host did before it): [`KernelSpan::launch`].
    pub(super) launch_start: i64,
    pub(super) launch_end: i64,
    /// [`NO_LAUNCH`] when there is none.
    pub(super) launch_thread: u32,
    pub(super) launch_name: u32,
}

const NO_LAUNCH: u32 = u32::MAX;

/// A copy's or set's interval and launch, for the step model (copies
/// are few: a syncing `.item()`'s device-to-host copy among them).
#[derive(Debug, Clone, Copy)]
pub(super) struct CopySpan {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) name: u32,
    pub(super) device: i64,
    pub(super) stream: i64,
    pub(super) launch: Option<Launch>,
}

/// A [`GpuEvent::span`](super::launches::GpuEvent::span) that is an index
/// into [`GpuLog::copy_spans`].
pub(super) const COPY_SPAN: u32 = 1 << 31;

impl KernelSpan {
    pub(super) fn launch(&self) -> Option<Launch> {
        (self.launch_thread != NO_LAUNCH).then_some(Launch {
            thread: self.launch_thread,
            start: self.launch_start,
            end: self.launch_end,
            name: self.launch_name,
        })
    }

    pub(super) fn set_launch(&mut self, l: Launch) {
        (self.launch_thread, self.launch_start, self.launch_end, self.launch_name) =
            (l.thread, l.start, l.end, l.name);
    }
}
