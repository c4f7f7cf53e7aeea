//! Launch matching: runtime launch calls and the GPU work they put on a
//! queue, paired by correlation id as either side arrives.

use rustc_hash::FxHashMap as HashMap;

use crate::trace::GpuWork;

use super::gpulog::Launch;

/// Launch calls waiting for their GPU work, and GPU work waiting for its
/// launch, by correlation id.
#[derive(Debug, Default)]
pub(super) struct Launches {
    pub(super) pending: HashMap<i64, PendingLaunch>,
    /// Graph launches stay: every kernel of the graph shares their id.
    pub(super) graphs: HashMap<i64, PendingLaunch>,
    pub(super) pending_gpu: HashMap<i64, Vec<GpuEvent>>,
    /// GPU work without a correlation id: placed by time at the end.
    pub(super) unlaunched_gpu: Vec<GpuEvent>,
}

/// A GPU event waiting for its launch (or, at the end, placed by time).
#[derive(Debug, Clone, Copy)]
pub(super) struct GpuEvent {
    pub(super) kind: GpuWork,
    pub(super) name: u32,
    pub(super) device: i64,
    pub(super) ts: i64,
    pub(super) dur: i64,
    /// Its index in `kernel_spans`, or with
    /// [`COPY_SPAN`](super::gpulog::COPY_SPAN) in `copy_spans`:
    /// where its launch goes.
    pub(super) span: Option<u32>,
}

/// Whether `launch` can have put `gpu` on the queue: work never starts
/// before its launch call does (1 µs of slack for the clocks' rounding).
pub(super) fn launched_before(launch: &Launch, gpu: &GpuEvent) -> bool {
    launch.start <= gpu.ts + 1_000
}

/// A launch call waiting for its GPU events: when it ran, and whether it
/// launches a CUDA/HIP graph.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingLaunch {
    pub(super) launch: Launch,
    pub(super) graph: bool,
}

/// How a GPU event is placed in a step and phase: by the CPU time of the
/// call that launched it, or (no launch in the trace) by its own time.
#[derive(Debug, Clone, Copy)]
pub(super) enum Placed {
    Launch { thread: u32, start: i64, graph: bool },
    Time,
}
