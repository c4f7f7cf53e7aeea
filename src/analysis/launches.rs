//! Launch matching: runtime launch calls and the GPU work they put on a
//! queue, paired by correlation id as either side arrives.

use rustc_hash::FxHashMap as HashMap;

use crate::trace::GpuWork;

use super::gpulog::Launch;

/// Launch calls waiting for their GPU work, and GPU work waiting for its
/// launch, by correlation id.
#[derive(Debug, Default)]
pub(super) struct Launches {
    pending: HashMap<i64, PendingLaunch>,
    /// Graph launches stay: every kernel of the graph shares their id.
    graphs: HashMap<i64, PendingLaunch>,
    pending_gpu: HashMap<i64, Vec<GpuEvent>>,
    /// GPU work without a correlation id: placed by time at the end.
    unlaunched_gpu: Vec<GpuEvent>,
}

impl Launches {
    /// A launch call with correlation id `corr`: the GPU work that waited
    /// for it, if any; the launch is kept for the work still to come.
    /// Work that began before the call is counted in `after_work`.
    pub(super) fn launch_met(
        &mut self,
        corr: i64,
        pending: PendingLaunch,
        after_work: &mut u64,
    ) -> Option<Vec<GpuEvent>> {
        let mut waiting = self.pending_gpu.remove(&corr);
        // Work that began before this call is another process's with
        // the same id: it waits on for its own launch.
        if let Some(list) = waiting.as_mut() {
            let before = list.len();
            let (own, others): (Vec<GpuEvent>, Vec<GpuEvent>) =
                list.drain(..).partition(|g| launched_before(&pending.launch, g));
            *after_work += (before - own.len()) as u64;
            if !others.is_empty() {
                self.pending_gpu.insert(corr, others);
            }
            *list = own;
        }
        let waiting = waiting.filter(|w| !w.is_empty());
        if pending.graph {
            self.graphs.insert(corr, pending);
        } else if waiting.is_none() {
            self.pending.insert(corr, pending);
        }
        waiting
    }

    /// GPU work with correlation id `corr`: its launch when the call was
    /// met already; else the work waits for it. A launch met that began
    /// after the work is counted in `after_work`.
    pub(super) fn work_met(
        &mut self,
        corr: Option<i64>,
        gpu: GpuEvent,
        after_work: &mut u64,
    ) -> Option<PendingLaunch> {
        let Some(corr) = corr else {
            self.unlaunched_gpu.push(gpu);
            return None;
        };
        let found = self.pending.remove(&corr).or_else(|| self.graphs.get(&corr).copied());
        match found {
            Some(p) if launched_before(&p.launch, &gpu) => Some(p),
            found => {
                // A launch after the work began is another process's with
                // the same id: it stays for its own.
                if let Some(p) = found.filter(|p| !p.graph) {
                    *after_work += 1;
                    self.pending.insert(corr, p);
                }
                self.pending_gpu.entry(corr).or_default().push(gpu);
                None
            }
        }
    }

    /// The GPU work still waiting for a launch.
    pub(super) fn waiting(&self) -> impl Iterator<Item = &GpuEvent> {
        self.pending_gpu.values().flatten().chain(&self.unlaunched_gpu)
    }

    /// The GPU work no launch was met for, and the order to place it in
    /// (time, ties as met: waiting for a launch first); none waits on.
    /// Built in the list that holds it already, ordered by index, so that
    /// a trace of nothing but such work (no launches recorded) is not held
    /// twice at the end of the pass: 6 bytes an event more, not 48 + 24.
    pub(super) fn take_unlaunched(&mut self) -> (Vec<GpuEvent>, Vec<u32>) {
        let mut left = std::mem::take(&mut self.unlaunched_gpu);
        let waiting: Vec<GpuEvent> = self.pending_gpu.drain().flat_map(|(_, g)| g).collect();
        left.splice(0..0, waiting);
        let mut order: Vec<u32> = (0..left.len() as u32).collect();
        order.sort_by_key(|&i| left[i as usize].ts);
        (left, order)
    }

    /// The launch calls no GPU work was met for (graph launches aside).
    pub(super) fn unmet(&self) -> impl Iterator<Item = &Launch> {
        self.pending.values().map(|p| &p.launch)
    }

    /// Whether the trace launched a CUDA/HIP graph.
    pub(super) fn has_graph_launches(&self) -> bool {
        !self.graphs.is_empty()
    }
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
fn launched_before(launch: &Launch, gpu: &GpuEvent) -> bool {
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
