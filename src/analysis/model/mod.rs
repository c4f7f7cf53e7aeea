//! One model of the step (docs/analysis.md §14): what waited for what, as a
//! graph of the window's work, from which the critical path and every
//! what-if are derived.
//!
//! Nodes are the host threads' runtime calls (launches, synchronising
//! calls), markers at the step boundaries on the loop thread, and the GPU's
//! kernels, copies and sets. Edges: each lane's order (a thread's calls
//! one after the other, with the host work between them as the gap; a
//! stream's work in order), a launch before its GPU work (CUDA/HIP graph
//! launches before every kernel of the graph), a synchronising call (or a
//! launch that blocked) waiting for the GPU work it returned after, and a
//! GPU start that neither its launch nor its stream explains waiting for
//! the work that ended just before it on another stream of the device
//! (inferred from the times), or, where the trace records CUPTI's
//! synchronisation records, the waits they name ([`Recorded`]: a stream
//! waiting for an event's record, a sync waiting for one stream). Built
//! from the pass's records ([`of_pass`]), never a second read.
//!
//! Re-timing ([`replay`]) walks the nodes in dependency order: a node
//! starts when its binding constraint allows, after the same latency the
//! trace shows; a constraint that did not bind keeps the smaller of its
//! usual latency and the slack it had. With no change the trace's own
//! times come back, to the nanosecond; every change is a change of
//! durations or gaps, so the projected times can only move earlier as work
//! shrinks (max-plus: monotone, and never by more than the work removed).

mod chains;
mod from_pass;
pub mod host;
pub mod job;
mod path;
pub mod replay;
pub mod scenarios;
mod view;

#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap as HashMap;

pub use chains::{ChainGroup, FUSE_CHAINS};
pub(crate) use from_pass::model as of_pass;
pub use path::{CriticalPath, PathPart};
pub use replay::{Change, Replayed};
pub use scenarios::Scenario;
pub use view::{few_steps_note, job_world, rank_note, rows, view};

use host::{ByCause, HostCause, HostCauses};

use crate::profile::Category;

/// No node.
pub const NONE: u32 = u32::MAX;

/// Host gaps shorter than this are dispatch (the idle account's `launch`
/// cause, docs/analysis.md §12); longer ones are classified by what the
/// thread was doing.
pub const LAUNCH_GAP: i64 = 100_000;

/// A runtime call at least this long that returned when GPU work ended
/// was waiting for it (a full launch queue, a blocking copy).
pub(crate) const BLOCKED_CALL: i64 = 100_000;

/// Latency defaults where the trace shows none to measure (ns).
const DEFAULT_LAUNCH_LATENCY: i64 = 5_000;
const DEFAULT_SYNC_RETURN: i64 = 5_000;
const DEFAULT_SYNC_BASE: i64 = 5_000;

/// A GPU start more than this after everything that explains it waited on
/// something else.
const UNEXPLAINED: i64 = 20_000;

/// A worker thread handed work takes it up within this of the loop
/// thread's call (the autograd engine: 0.08–0.61 ms after `backward()`'s
/// seed on the fixtures); one that starts later began on its own (a
/// prefetch thread's copy when its data was ready).
const HANDOFF: i64 = 2_000_000;

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// GPU work: a kernel, copy or set.
    Gpu,
    /// A runtime call that put work on the GPU and returned.
    Launch,
    /// A call that can wait for the GPU: a synchronising call, a blocking
    /// copy, a launch that blocked.
    Sync,
    /// A step boundary on the loop thread.
    Mark,
}

/// What bound a node in the trace: its start (GPU, host) or its end (a
/// sync that waited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    /// Nothing before it in the model: it starts where it started.
    Free,
    /// The previous node on its lane.
    Prev,
    /// Its launch (GPU).
    Launch,
    /// Another stream's work (GPU), or the GPU work a sync waited for.
    Wait,
}

/// A host call's class: a synchronising call (or blocking copy) as the
/// trace names it, or a launch (one that ran long may have blocked).
const CALL_SYNC: u8 = 0;
const CALL_LAUNCH: u8 = 1;

/// The class of a GPU node: a kernel category by its index in
/// [`Category::ALL`], or a copy/set.
pub const COPY_CLASS: u8 = Category::ALL.len() as u8;

/// How many GPU classes there are: the categories and [`COPY_CLASS`].
pub const CLASSES: usize = Category::ALL.len() + 1;

/// One node of the graph, with its times in the trace (ns).
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub start: i64,
    pub end: i64,
    pub kind: NodeKind,
    pub lane: u32,
    /// The previous node on its lane.
    pub prev: u32,
    /// GPU: the call that launched it. Sync: the GPU node it waits for.
    pub cross: u32,
    /// GPU: the other stream's node it waited for (recorded or inferred);
    /// host: the other thread's call it waited for (inferred).
    pub wait: u32,
    /// Its `wait` is one the trace records (a `cuda_sync` stream wait).
    pub recorded: bool,
    /// What bound its start (GPU, host) — for a Sync, its end.
    pub bind: Bind,
    /// GPU: [`COPY_CLASS`] or a kernel category's index; a host call:
    /// whether it is a launch.
    pub class: u8,
    /// GPU: the interned kernel name; host: the thread.
    pub name: u32,
    /// GPU: the innermost CPU op around its launch (interned in
    /// [`StepModel::names`]), or [`NONE`].
    pub op: u32,
}

impl Node {
    pub fn dur(&self) -> i64 {
        self.end - self.start
    }
}

/// A lane: a host thread or a GPU stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    Thread(u32),
    Stream { device: i64, stream: i64 },
}

/// GPU work as the model takes it.
#[derive(Debug, Clone, Copy)]
pub struct GpuWork {
    pub start: i64,
    pub end: i64,
    pub device: i64,
    pub stream: i64,
    pub class: u8,
    /// Its index in [`Inputs::names`].
    pub name: u32,
    /// The call that launched it: thread, start, end.
    pub launch: Option<(u32, i64, i64)>,
    /// The innermost CPU op around the launch (its index in
    /// [`Inputs::names`]), or [`NONE`].
    pub op: u32,
}

/// A host call that can wait for the GPU (thread, start, end).
pub type SyncCall = (u32, i64, i64);

/// A recorded stream wait (`cudaStreamWaitEvent`): work launched on
/// `stream` after `wait_at` waits for the work launched on `on_stream`
/// before `record_at` (the `cudaEventRecord` call).
#[derive(Debug, Clone, Copy)]
pub struct StreamWait {
    pub device: i64,
    pub stream: i64,
    pub wait_at: i64,
    pub on_stream: i64,
    pub record_at: i64,
}

/// What a synchronising call waited for, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncOn {
    /// The work launched on one stream before it.
    Stream { device: i64, stream: i64 },
    /// The work launched on `stream` before `at` (an event's record).
    Record { device: i64, stream: i64, at: i64 },
    /// Every stream of the device.
    Device(i64),
}

/// The waits a trace records (CUPTI's `cuda_sync` records).
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    pub waits: Vec<StreamWait>,
    /// By the synchronising call (thread, start, end).
    pub sync_on: HashMap<SyncCall, SyncOn>,
    /// Devices with records: their cross-stream waits are all recorded,
    /// none inferred.
    pub devices: Vec<i64>,
}

/// What the model is built from.
#[derive(Debug, Default)]
pub struct Inputs {
    pub gpu: Vec<GpuWork>,
    pub syncs: Vec<SyncCall>,
    /// The steps (merged, in order).
    pub steps: Vec<(i64, i64)>,
    /// The thread whose step ranges the markers go on.
    pub loop_thread: Option<u32>,
    /// What each host thread was doing between its calls.
    pub host: HostCauses,
    /// The GPU work's names and the names of the ops that launched it.
    pub names: Vec<String>,
    /// The CPU ops of the threads with calls, when a what-if may name one.
    pub ops: Option<OpLog>,
    /// The waits the trace records.
    pub recorded: Recorded,
}

/// CPU ops and annotations as `--op` reads them: (thread, start, end,
/// name index).
#[derive(Debug, Clone, Default)]
pub struct OpLog {
    pub spans: Vec<(u32, i64, i64, u32)>,
    pub names: Vec<String>,
}

impl OpLog {
    /// Notes one span of `name` (`id` in the pass's names; `local` maps
    /// those to this log's).
    fn push(
        &mut self,
        thread: u32,
        start: i64,
        end: i64,
        name: &str,
        id: u32,
        local: &mut rustc_hash::FxHashMap<u32, u32>,
    ) {
        let n = *local.entry(id).or_insert_with(|| {
            self.names.push(name.to_string());
            self.names.len() as u32 - 1
        });
        self.spans.push((thread, start, end, n));
    }
}

/// Latencies the trace shows, per device: what a constraint that did not
/// bind in the trace adds if it comes to bind.
#[derive(Debug, Clone, Copy)]
struct Usual {
    launch: i64,
}

/// The graph of a window.
#[derive(Debug, Clone)]
pub struct StepModel {
    pub nodes: Vec<Node>,
    pub lanes: Vec<Lane>,
    /// Dependency order: every node after what it depends on.
    order: Vec<u32>,
    /// Per lane (index), the usual latencies of its device (GPU lanes).
    usual: Vec<Usual>,
    /// The window: first step start, last step end.
    pub window: (i64, i64),
    pub n_steps: usize,
    /// The steps' own wall time (their union): the window less the time
    /// between them.
    pub steps_ns: i64,
    /// The steps, merged, in order: host time outside them (between two
    /// steps) is no step's work, which no change takes away.
    steps: Vec<(i64, i64)>,
    /// Host work between calls, per thread.
    pub host: HostCauses,
    /// GPU nodes' names and their ops' ([`Node::name`], [`Node::op`]
    /// index it).
    pub names: Vec<String>,
    /// CPU ops, when kept ([`Inputs::ops`]).
    pub ops: Option<OpLog>,
    /// The non-waiting part and return latency of each Sync (ns), by node.
    sync_parts: HashMap<u32, (i64, i64)>,
    /// GPU starts explained by an inferred wait on another stream.
    pub inferred_waits: usize,
    /// Recorded waits of GPU work on another stream's (edges), and
    /// synchronising calls whose target the trace records.
    pub recorded_waits: usize,
    pub recorded_syncs: usize,
    /// Recorded waits beside the one in [`Node::wait`] (a start waiting
    /// on several streams), by node.
    also_waits: HashMap<u32, Vec<u32>>,
    /// Host calls explained by an inferred wait on another thread.
    pub thread_waits: usize,
    /// When each such call's thread went on (took up its own work again,
    /// by its records): the wait ends there, and what it did after is
    /// its own host time.
    went_on: HashMap<u32, i64>,
    /// The loop thread's lane (the step markers'), if any.
    loop_lane: Option<u32>,
    /// The last step's end marker, where the trace marks its steps: the
    /// window closes there, GPU work after it being no step's.
    last_mark: Option<u32>,
    /// Nodes whose order had to be broken (clock skew): kept at their
    /// trace times.
    pub unordered: usize,
}

impl StepModel {
    /// Builds the graph of `inputs`' window: the GPU work launched in it
    /// (or, with no launch, starting in it), the calls around it, the
    /// step boundaries.
    pub fn build(inputs: Inputs) -> Option<StepModel> {
        let Inputs { gpu, syncs, steps, loop_thread, host, names, ops, recorded } = inputs;
        let (&(w0, _), &(_, w1)) = (steps.first()?, steps.last()?);
        let inside = |t: i64| t >= w0 && t <= w1;
        let mut lanes: Vec<Lane> = Vec::new();
        let mut lane_ids: HashMap<Lane, u32> = HashMap::default();
        fn lane_of(lanes: &mut Vec<Lane>, ids: &mut HashMap<Lane, u32>, l: Lane) -> u32 {
            *ids.entry(l).or_insert_with(|| {
                lanes.push(l);
                lanes.len() as u32 - 1
            })
        }
        macro_rules! lane {
            ($l:expr) => {
                lane_of(&mut lanes, &mut lane_ids, $l)
            };
        }
        let mut nodes: Vec<Node> = Vec::new();
        let node = |start, end, kind, lane, class, name| Node {
            start,
            end,
            kind,
            lane,
            prev: NONE,
            cross: NONE,
            wait: NONE,
            recorded: false,
            bind: Bind::Free,
            class,
            name,
            op: NONE,
        };
        // Host calls, one node per distinct (thread, start, end): a graph
        // launch's kernels share it; a blocking copy both launches and waits.
        let mut calls: HashMap<(u32, i64, i64), u32> = HashMap::default();
        for &(t, s, e) in &syncs {
            if inside(s) {
                let l = lane!(Lane::Thread(t));
                calls.insert((t, s, e), nodes.len() as u32);
                nodes.push(node(s, e, NodeKind::Sync, l, CALL_SYNC, t));
            }
        }
        let mut gpu_nodes = 0usize;
        for g in &gpu {
            let keep = match g.launch {
                Some((_, ls, _)) => inside(ls),
                None => inside(g.start),
            };
            if !keep {
                continue;
            }
            let launch = g.launch.map(|(t, s, e)| {
                *calls.entry((t, s, e)).or_insert_with(|| {
                    let l = lane!(Lane::Thread(t));
                    let kind =
                        if e - s >= BLOCKED_CALL { NodeKind::Sync } else { NodeKind::Launch };
                    nodes.push(node(s, e, kind, l, CALL_LAUNCH, t));
                    nodes.len() as u32 - 1
                })
            });
            let l = lane!(Lane::Stream { device: g.device, stream: g.stream });
            let mut n = node(g.start, g.end, NodeKind::Gpu, l, g.class, g.name);
            n.cross = launch.unwrap_or(NONE);
            n.op = g.op;
            nodes.push(n);
            gpu_nodes += 1;
        }
        if gpu_nodes == 0 && (loop_thread.is_none() || ops.is_none()) {
            return None;
        }
        // Step boundaries on the loop thread. Without one (no step
        // markers) the window is its events' span, whose end is often GPU
        // work the host launched long before: the marks go on the thread
        // whose own calls and records end last, from where its activity
        // begins to where it ends, so that no change holds the GPU's tail
        // (or a thread's idle time before its first record) as host time.
        let (marks_on, active) = match loop_thread {
            Some(t) => (Some(t), None),
            None => closing_thread(&nodes, &lanes, &host, (w0, w1)).unzip(),
        };
        let (mut loop_lane, mut last_mark) = (None, None);
        if let Some(t) = marks_on {
            let l = lane!(Lane::Thread(t));
            loop_lane = Some(l);
            let n = steps.len();
            for (i, &(s, e)) in steps.iter().enumerate() {
                let (s, e) = match active {
                    Some((a, b)) => {
                        let s = if i == 0 { a.clamp(s, e) } else { s };
                        (s, if i + 1 == n { b.clamp(s, e) } else { e })
                    }
                    None => (s, e),
                };
                nodes.push(node(s, s, NodeKind::Mark, l, 0, t));
                nodes.push(node(e, e, NodeKind::Mark, l, 0, t));
            }
            last_mark = loop_thread.map(|_| nodes.len() as u32 - 1);
        }
        let merged = crate::analysis::busy::merge(&mut steps.clone());
        let mut model = StepModel {
            nodes,
            lanes,
            order: Vec::new(),
            usual: Vec::new(),
            window: (w0, w1),
            n_steps: steps.len(),
            steps_ns: merged.iter().map(|(s, e)| e - s).sum(),
            steps: merged,
            host,
            names,
            ops,
            sync_parts: HashMap::default(),
            inferred_waits: 0,
            recorded_waits: 0,
            recorded_syncs: 0,
            also_waits: HashMap::default(),
            thread_waits: 0,
            went_on: HashMap::default(),
            loop_lane,
            last_mark,
            unordered: 0,
        };
        model.link_lanes();
        model.link_waits(&recorded);
        model.bind();
        model.order();
        Some(model)
    }

    /// The parts of `[a, b)` inside the steps, in order.
    pub(super) fn in_steps(&self, a: i64, b: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        let first = self.steps.partition_point(|&(_, e)| e <= a);
        self.steps[first..]
            .iter()
            .take_while(move |&&(s, _)| s < b)
            .map(move |&(s, e)| (s.max(a), e.min(b)))
            .filter(|(s, e)| e > s)
    }

    /// How much of `[a, b)` lies inside the steps (ns).
    pub(super) fn in_steps_ns(&self, a: i64, b: i64) -> i64 {
        self.in_steps(a, b).map(|(s, e)| e - s).sum()
    }

    /// `thread`'s host time in `[a, b)` by cause, inside the steps only.
    pub(super) fn split_in_steps(&self, thread: u32, a: i64, b: i64) -> ByCause {
        let mut by = [0; 5];
        for (s, e) in self.in_steps(a, b) {
            for (x, y) in by.iter_mut().zip(self.host.split(thread, s, e)) {
                *x += y;
            }
        }
        by
    }

    /// Each node's previous node on its lane.
    fn link_lanes(&mut self) {
        let mut by_lane: Vec<Vec<u32>> = vec![Vec::new(); self.lanes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            by_lane[n.lane as usize].push(i as u32);
        }
        for list in &mut by_lane {
            // Markers sort after the calls that end where they are.
            list.sort_by_key(|&i| {
                let n = &self.nodes[i as usize];
                (n.start, n.end, n.kind == NodeKind::Mark, i)
            });
            for w in list.windows(2) {
                self.nodes[w[1] as usize].prev = w[0];
            }
        }
    }

    /// The GPU work each Sync waits for, and the other stream's work a GPU
    /// start waits for: as the trace records them where it does, else
    /// inferred from the times.
    fn link_waits(&mut self, rec: &Recorded) {
        // Every GPU node by end, per device.
        let mut by_end: HashMap<i64, Vec<u32>> = HashMap::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind == NodeKind::Gpu {
                by_end.entry(self.device(n)).or_default().push(i as u32);
            }
        }
        for list in by_end.values_mut() {
            list.sort_by_key(|&i| (self.nodes[i as usize].end, i));
        }
        let launched = self.launched(rec);
        self.link_recorded(rec, &launched);
        let launched_before = |m: &StepModel, g: &Node, t: i64| {
            g.cross == NONE || m.nodes[g.cross as usize].start <= t
        };
        // A sync waits for the latest-ending work launched before it that
        // ended before it returned (a device-wide view: stream syncs are
        // not told apart).
        for i in 0..self.nodes.len() {
            let h = self.nodes[i];
            if h.kind != NodeKind::Sync {
                continue;
            }
            if let Some(target) = self.sync_target(&h, rec, &launched) {
                self.nodes[i].cross = target.unwrap_or(NONE);
                self.recorded_syncs += 1;
                continue;
            }
            let mut best: Option<u32> = None;
            for list in by_end.values() {
                let upto = list.partition_point(|&g| self.nodes[g as usize].end <= h.end);
                let found = list[..upto].iter().rev().take(64).copied().find(|&g| {
                    let gn = &self.nodes[g as usize];
                    launched_before(self, gn, h.start)
                });
                if let Some(g) = found {
                    if best.is_none_or(|b| self.nodes[g as usize].end > self.nodes[b as usize].end)
                    {
                        best = Some(g);
                    }
                }
            }
            // A launch that blocked waited for work that ended while it
            // ran; one that no GPU work ended during was host work (lazy
            // loading), not a wait.
            let long_launch = h.class == CALL_LAUNCH;
            match best {
                Some(g) if !long_launch || self.nodes[g as usize].end > h.start => {
                    self.nodes[i].cross = g;
                }
                _ if long_launch => self.nodes[i].kind = NodeKind::Launch,
                _ => {}
            }
        }
        // Unexplained GPU starts, on devices whose waits are not recorded.
        for i in 0..self.nodes.len() {
            let g = self.nodes[i];
            if g.kind != NodeKind::Gpu || g.wait != NONE || rec.devices.contains(&self.device(&g)) {
                continue;
            }
            let by_prev = (g.prev != NONE).then(|| self.nodes[g.prev as usize].end);
            let by_launch = (g.cross != NONE).then(|| self.nodes[g.cross as usize].start);
            let explained = by_prev.into_iter().chain(by_launch).max();
            if explained.is_some_and(|t| g.start - t <= UNEXPLAINED) {
                continue;
            }
            let Some(list) = by_end.get(&self.device(&g)) else { continue };
            let upto = list.partition_point(|&x| self.nodes[x as usize].end <= g.start);
            let other = list[..upto]
                .iter()
                .rev()
                .take(16)
                .copied()
                .find(|&x| self.nodes[x as usize].lane != g.lane);
            if let Some(x) = other {
                let xe = self.nodes[x as usize].end;
                if explained.is_none_or(|t| xe > t) && g.start - xe <= UNEXPLAINED {
                    self.nodes[i].wait = x;
                    self.inferred_waits += 1;
                }
            }
        }
        self.link_thread_waits();
    }

    /// Each GPU lane's launched nodes by launch start (when the trace
    /// records waits to place on them).
    fn launched(&self, rec: &Recorded) -> HashMap<Lane, Vec<(i64, u32)>> {
        let mut out: HashMap<Lane, Vec<(i64, u32)>> = HashMap::default();
        if rec.waits.is_empty() && rec.sync_on.is_empty() {
            return out;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind == NodeKind::Gpu && n.cross != NONE {
                let at = self.nodes[n.cross as usize].start;
                out.entry(self.lanes[n.lane as usize]).or_default().push((at, i as u32));
            }
        }
        for list in out.values_mut() {
            list.sort_unstable();
        }
        out
    }

    /// The recorded stream waits as edges: the first work launched on the
    /// waiting stream after the wait waits for the last work launched on
    /// the recording stream before the record. A start waiting on several
    /// streams keeps the latest-ending as its `wait`, the rest besides.
    fn link_recorded(&mut self, rec: &Recorded, launched: &HashMap<Lane, Vec<(i64, u32)>>) {
        for w in &rec.waits {
            if w.stream == w.on_stream {
                continue;
            }
            let lane = |stream| launched.get(&Lane::Stream { device: w.device, stream });
            let (Some(waiting), Some(recording)) = (lane(w.stream), lane(w.on_stream)) else {
                continue;
            };
            let first = waiting.partition_point(|&(at, _)| at <= w.wait_at);
            let last = recording.partition_point(|&(at, _)| at < w.record_at);
            let (Some(&(_, g)), Some(&(_, x))) =
                (waiting.get(first), last.checked_sub(1).map(|k| &recording[k]))
            else {
                continue;
            };
            // Out of step with the times (clock skew): not taken.
            if self.nodes[x as usize].end > self.nodes[g as usize].start {
                continue;
            }
            self.recorded_waits += 1;
            let node = &mut self.nodes[g as usize];
            let held = node.wait;
            if held == NONE {
                (node.wait, node.recorded) = (x, true);
                continue;
            }
            let later = self.nodes[x as usize].end > self.nodes[held as usize].end;
            let besides = if later {
                self.nodes[g as usize].wait = x;
                held
            } else {
                x
            };
            let also = self.also_waits.entry(g).or_default();
            if !also.contains(&besides) {
                also.push(besides);
            }
        }
    }

    /// What a synchronising call waited for as the trace records it:
    /// `None` when it does not (or only device-wide), `Some(None)` when the
    /// stream it waited for had no work pending in the model.
    fn sync_target(
        &self,
        h: &Node,
        rec: &Recorded,
        launched: &HashMap<Lane, Vec<(i64, u32)>>,
    ) -> Option<Option<u32>> {
        let Lane::Thread(t) = self.lanes[h.lane as usize] else { return None };
        let (device, stream, before) = match *rec.sync_on.get(&(t, h.start, h.end))? {
            SyncOn::Stream { device, stream } => (device, stream, h.start),
            SyncOn::Record { device, stream, at } => (device, stream, at),
            SyncOn::Device(_) => return None,
        };
        let Some(list) = launched.get(&Lane::Stream { device, stream }) else {
            return Some(None);
        };
        let k = list.partition_point(|&(at, _)| at < before);
        let g = k.checked_sub(1).map(|k| list[k].1);
        match g {
            // Out of step with the times: left to the inference.
            Some(g) if self.nodes[g as usize].end > h.end => None,
            g => Some(g),
        }
    }

    /// A thread that sat for a long gap and went on (its own work began
    /// again, or its next call came) just as another thread's own work
    /// ended waited for that thread: the loop thread in
    /// `backward()` while the autograd engine's thread launches (the host
    /// records no such wait). Inferred like the streams' waits; the other
    /// thread's last call before is what the wait hangs on, with the work
    /// it did after that call kept as the latency.
    fn link_thread_waits(&mut self) {
        let mut by_lane: HashMap<u32, Vec<u32>> = HashMap::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if matches!(n.kind, NodeKind::Launch | NodeKind::Sync) {
                by_lane.entry(n.lane).or_default().push(i as u32);
            }
        }
        for list in by_lane.values_mut() {
            list.sort_by_key(|&i| (self.nodes[i as usize].end, i));
        }
        for i in 0..self.nodes.len() {
            let h = self.nodes[i];
            if h.kind == NodeKind::Gpu {
                continue;
            }
            if h.prev == NONE {
                self.link_first_call(i as u32, &by_lane);
                continue;
            }
            let prev_end = self.nodes[h.prev as usize].end;
            if h.start - prev_end < LAUNCH_GAP {
                continue;
            }
            let mut best: Option<(i64, u32, i64)> = None;
            for (&lane, list) in &by_lane {
                let Lane::Thread(t) = self.lanes[lane as usize] else { continue };
                if lane == h.lane {
                    continue;
                }
                let Some(active) = self.host.active_until(t, h.start) else { continue };
                // It went on as that thread stopped: its next call came
                // then, or its own work before that call began then.
                let went_on = match self.lanes[h.lane as usize] {
                    Lane::Thread(own) => self.host.resumed_at(own, h.start, UNEXPLAINED),
                    Lane::Stream { .. } => None,
                };
                // (Returning from the wait to Python takes tens of µs;
                // work taken up before the other thread stopped was not
                // waiting for it.)
                let near = |at: i64, within: i64| (at - active).abs() <= within;
                let resumed = went_on
                    .is_some_and(|at| at >= active - UNEXPLAINED && at - active <= LAUNCH_GAP);
                if active <= prev_end || !(near(h.start, UNEXPLAINED) || resumed) {
                    continue;
                }
                let on = went_on.filter(|_| resumed).unwrap_or(h.start);
                let upto = list.partition_point(|&x| self.nodes[x as usize].end <= h.start);
                let Some(&x) = upto.checked_sub(1).and_then(|k| list.get(k)) else { continue };
                if self.nodes[x as usize].end > prev_end && best.is_none_or(|b| active > b.0) {
                    best = Some((active, x, on));
                }
            }
            // A worker thread (the autograd engine's) that sat idle, doing
            // no work of its own, went on when the loop thread handed it
            // work (`backward()`): it waited for the loop thread's last
            // call before, not for its own gap to pass.
            let worker_idle = || {
                let idle = (h.start - prev_end) - self.own_work(i as u32).iter().sum::<i64>();
                self.loop_lane.filter(|&l| l != h.lane && 2 * idle >= h.start - prev_end)
            };
            let handed = if best.is_none() { worker_idle() } else { None };
            if let Some(list) = handed.and_then(|l| by_lane.get(&l)) {
                if let Some((x, on)) = self.handed_by(i as u32, prev_end, list) {
                    best = Some((0, x, on));
                }
            }
            if let Some((_, x, on)) = best {
                self.link_thread(i as u32, x, on);
            }
        }
        self.link_returns(&by_lane);
    }

    /// Host node `i` waited for another thread's call `x` and went on at
    /// `on`.
    fn link_thread(&mut self, i: u32, x: u32, on: i64) {
        self.nodes[i as usize].wait = x;
        self.went_on.insert(i, on);
        self.thread_waits += 1;
    }

    /// When host node `i`, which waited for another thread, went on:
    /// between that thread's call's end and its own start.
    pub(super) fn went_on(&self, i: u32) -> i64 {
        let n = &self.nodes[i as usize];
        let from = self.nodes[n.wait as usize].end;
        let from = if n.prev == NONE { from } else { from.max(self.nodes[n.prev as usize].end) };
        self.went_on.get(&i).map_or(n.start, |&on| on.clamp(from.min(n.start), n.start))
    }

    /// A thread that handed another thread work and then sat waiting —
    /// no work of its own, a scope such as `## backward ##` open around
    /// the wait — went on when that thread stopped: the loop thread's
    /// return from `backward()` once the autograd engine's thread is
    /// done. The open scope hides when it went on from
    /// [`Self::link_thread_waits`]'s test; the handing over shows it
    /// waited. What it did after that thread stopped is its own.
    fn link_returns(&mut self, by_lane: &HashMap<u32, Vec<u32>>) {
        // Host node → the lanes of the other threads' calls it handed work.
        let mut handed: HashMap<u32, Vec<u32>> = HashMap::default();
        for n in &self.nodes {
            if n.kind != NodeKind::Gpu && n.wait != NONE {
                let by = self.nodes[n.wait as usize].lane;
                if by != n.lane {
                    handed.entry(n.wait).or_default().push(n.lane);
                }
            }
        }
        for i in 0..self.nodes.len() {
            let h = self.nodes[i];
            if h.kind == NodeKind::Gpu || h.prev == NONE || h.wait != NONE {
                continue;
            }
            let Some(lanes) = handed.get(&h.prev) else { continue };
            let Lane::Thread(own) = self.lanes[h.lane as usize] else { continue };
            let prev_end = self.nodes[h.prev as usize].end;
            if h.start - prev_end < LAUNCH_GAP {
                continue;
            }
            let mut best: Option<(i64, u32)> = None;
            for &lane in lanes {
                let (Lane::Thread(t), Some(list)) = (self.lanes[lane as usize], by_lane.get(&lane))
                else {
                    continue;
                };
                // It stopped before this thread went on; meanwhile this
                // thread mostly did nothing of its own.
                let Some(active) = self.host.active_until(t, h.start).filter(|&a| a < h.start)
                else {
                    continue;
                };
                let waited: i64 = self.own_work_in(own, prev_end, active).iter().sum();
                if active <= prev_end || 2 * waited > active - prev_end {
                    continue;
                }
                let upto = list.partition_point(|&x| self.nodes[x as usize].end <= h.start);
                let Some(&x) = upto.checked_sub(1).and_then(|k| list.get(k)) else { continue };
                if self.nodes[x as usize].end > prev_end && best.is_none_or(|b| active > b.0) {
                    best = Some((active, x));
                }
            }
            if let Some((active, x)) = best {
                self.link_thread(i as u32, x, active);
            }
        }
    }

    /// A worker thread's first call in the window (the autograd engine's
    /// first backward launch) after it sat idle from the window's start:
    /// it went on when the loop thread handed it work, so it waits for
    /// the loop thread's last call before, as a later call after a long
    /// idle gap does. Pinned to its trace time, it would hold the step's
    /// backward where it was however much sooner the forward ended.
    fn link_first_call(&mut self, i: u32, by_lane: &HashMap<u32, Vec<u32>>) {
        let (h, w0) = (self.nodes[i as usize], self.window.0);
        let Lane::Thread(t) = self.lanes[h.lane as usize] else { return };
        let Some(list) = self.loop_lane.filter(|&l| l != h.lane).and_then(|l| by_lane.get(&l))
        else {
            return;
        };
        if h.start - w0 < LAUNCH_GAP {
            return;
        }
        // Idle: no record of its own (Python frames included) for most of
        // the stretch; a thread busy in its own code went on by itself.
        let idle = (h.start - w0) - self.host.covered(t, w0, h.start);
        if 2 * idle < h.start - w0 {
            return;
        }
        if let Some((x, on)) = self.handed_by(i, w0, list) {
            self.link_thread(i, x, on);
        }
    }

    /// The loop thread's call (of `list`, by end) that handed host node
    /// `i`'s thread its work: its last one ending after `after` and before
    /// `i` starts, where the loop thread then waited — no call of its own
    /// starting before `i` does, and mostly no work of its own (ops,
    /// loading) — and the thread took up its work (its first record or
    /// call after that call) within [`HANDOFF`] of it. In `backward()` the
    /// loop thread sits exactly so while the autograd engine's thread
    /// works; a loop thread still launching, syncing or in its ops did
    /// not hand the other thread what it then did.
    fn handed_by(&self, i: u32, after: i64, list: &[u32]) -> Option<(u32, i64)> {
        let h = self.nodes[i as usize];
        let Lane::Thread(t) = self.lanes[h.lane as usize] else { return None };
        let upto = list.partition_point(|&x| self.nodes[x as usize].end <= h.start);
        let x = upto.checked_sub(1).map(|k| list[k])?;
        let handed_at = self.nodes[x as usize].end;
        // (its calls do not overlap: the next by end is the next one)
        let busy = list.get(upto).is_some_and(|&n| self.nodes[n as usize].start < h.start);
        let Lane::Thread(by) = self.lanes[self.nodes[x as usize].lane as usize] else {
            return None;
        };
        let own: i64 = self.own_work_in(by, handed_at, h.start).iter().sum();
        let took_up = self.host.active_from(t, handed_at).map_or(h.start, |a| a.min(h.start));
        let waited = !busy && 2 * own <= h.start - handed_at;
        (handed_at > after && waited && took_up - handed_at <= HANDOFF).then_some((x, took_up))
    }

    /// The host work a thread did itself in the gap before host node `i`
    /// (ops, loading, allocation): what a gap spent waiting for another
    /// thread still needs.
    pub(super) fn own_work(&self, i: u32) -> ByCause {
        let n = &self.nodes[i as usize];
        let (Some((a, b)), Lane::Thread(t)) = (self.gap(i), self.lanes[n.lane as usize]) else {
            return [0; 5];
        };
        self.own_work_in(t, a, b)
    }

    /// [`Self::own_work`] of `thread` in `[a, b)`.
    pub(super) fn own_work_in(&self, thread: u32, a: i64, b: i64) -> ByCause {
        let mut by = self.split_in_steps(thread, a, b);
        by[HostCause::Python as usize] = 0;
        by[HostCause::Other as usize] = 0;
        by
    }

    /// What bound each node in the trace, and the usual latencies.
    fn bind(&mut self) {
        // Usual launch latency per device: the median over GPU work its
        // launch bound (its stream was free well before).
        let mut lat: HashMap<i64, Vec<i64>> = HashMap::default();
        for n in &self.nodes {
            if n.kind == NodeKind::Gpu && n.cross != NONE {
                let free = n.prev == NONE || self.nodes[n.prev as usize].end + 5_000 < n.start;
                let l = n.start - self.nodes[n.cross as usize].start;
                if free && (0..1_000_000).contains(&l) {
                    lat.entry(self.device(n)).or_default().push(l);
                }
            }
        }
        let median = |v: &mut Vec<i64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        let usual_of: HashMap<i64, Usual> = lat
            .into_iter()
            .map(|(d, mut v)| {
                (d, Usual { launch: median(&mut v).unwrap_or(DEFAULT_LAUNCH_LATENCY) })
            })
            .collect();
        self.usual = self
            .lanes
            .iter()
            .map(|l| match l {
                Lane::Stream { device, .. } => usual_of
                    .get(device)
                    .copied()
                    .unwrap_or(Usual { launch: DEFAULT_LAUNCH_LATENCY }),
                Lane::Thread(_) => Usual { launch: DEFAULT_LAUNCH_LATENCY },
            })
            .collect();
        // Syncs: the non-waiting part is the usual short sync's length.
        let mut short: Vec<i64> = self
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Sync && n.cross != NONE)
            .filter(|n| self.nodes[n.cross as usize].end <= n.start)
            .map(Node::dur)
            .collect();
        let base_usual = median(&mut short).unwrap_or(DEFAULT_SYNC_BASE);
        for i in 0..self.nodes.len() {
            let n = self.nodes[i];
            let bind = match n.kind {
                NodeKind::Gpu => {
                    let u = self.usual[n.lane as usize];
                    let cands = [
                        (Bind::Prev, (n.prev != NONE).then(|| self.nodes[n.prev as usize].end)),
                        (
                            Bind::Launch,
                            (n.cross != NONE)
                                .then(|| self.nodes[n.cross as usize].start + u.launch),
                        ),
                        (Bind::Wait, (n.wait != NONE).then(|| self.nodes[n.wait as usize].end)),
                    ];
                    cands
                        .iter()
                        .filter_map(|&(b, t)| t.map(|t| (t, b)))
                        .max_by_key(|&(t, b)| (t, b == Bind::Wait))
                        .map_or(Bind::Free, |(_, b)| b)
                }
                NodeKind::Sync if n.cross != NONE && self.nodes[n.cross as usize].end > n.start => {
                    let w = self.nodes[n.cross as usize].end;
                    let ret = (n.end - w).max(0);
                    let base = base_usual.min(n.dur());
                    self.sync_parts.insert(i as u32, (base, ret));
                    Bind::Wait
                }
                NodeKind::Sync if n.cross != NONE => {
                    let w = self.nodes[n.cross as usize].end;
                    self.sync_parts.insert(i as u32, (n.dur(), DEFAULT_SYNC_RETURN.min(n.end - w)));
                    if n.prev != NONE { Bind::Prev } else { Bind::Free }
                }
                _ if n.prev != NONE => Bind::Prev,
                _ => Bind::Free,
            };
            self.nodes[i].bind = bind;
        }
    }

    /// A dependency order (Kahn's, the earliest trace time first among the
    /// ready): clock skew that makes a circle leaves its nodes at their
    /// trace times ([`StepModel::unordered`]).
    fn order(&mut self) {
        let n = self.nodes.len();
        let mut indegree = vec![0u32; n];
        let mut succ_count = vec![0u32; n + 1];
        // A launch's start is its lane's previous end plus the gap: GPU
        // work depends on that, not on the launch's end (a blocking copy
        // launches the copy it then waits for).
        let nodes = &self.nodes;
        let deps = |node: &Node| -> [u32; 3] {
            match node.kind {
                NodeKind::Gpu => {
                    let launch_prev =
                        if node.cross == NONE { NONE } else { nodes[node.cross as usize].prev };
                    [node.prev, launch_prev, node.wait]
                }
                NodeKind::Sync => [node.prev, node.cross, node.wait],
                _ => [node.prev, node.wait, NONE],
            }
        };
        let also = &self.also_waits;
        // Each (node, dependency) edge once.
        let edges = || {
            let listed = self.nodes.iter().enumerate().flat_map(move |(i, node)| {
                deps(node).into_iter().filter(|&d| d != NONE).map(move |d| (i, d))
            });
            let besides =
                also.iter().flat_map(|(&i, list)| list.iter().map(move |&d| (i as usize, d)));
            listed.chain(besides)
        };
        for (i, d) in edges() {
            indegree[i] += 1;
            succ_count[d as usize + 1] += 1;
        }
        for i in 0..n {
            succ_count[i + 1] += succ_count[i];
        }
        let mut fill = succ_count.clone();
        let mut succ = vec![0u32; succ_count[n] as usize];
        for (i, d) in edges() {
            succ[fill[d as usize] as usize] = i as u32;
            fill[d as usize] += 1;
        }
        let key = |i: u32| {
            let node = &nodes[i as usize];
            (node.start, node.kind != NodeKind::Gpu, i)
        };
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<(i64, bool, u32)>> = (0..n
            as u32)
            .filter(|&i| indegree[i as usize] == 0)
            .map(|i| std::cmp::Reverse(key(i)))
            .collect();
        let mut order = Vec::with_capacity(n);
        let mut placed = vec![false; n];
        // (A GPU node may list one dependency twice: both edges count.)
        while let Some(std::cmp::Reverse((_, _, i))) = ready.pop() {
            order.push(i);
            placed[i as usize] = true;
            for &s in &succ[succ_count[i as usize] as usize..succ_count[i as usize + 1] as usize] {
                indegree[s as usize] -= 1;
                if indegree[s as usize] == 0 {
                    ready.push(std::cmp::Reverse(key(s)));
                }
            }
        }
        let mut left: Vec<u32> = (0..n as u32).filter(|&i| !placed[i as usize]).collect();
        self.unordered = left.len();
        left.sort_by_key(|&i| key(i));
        order.extend(left);
        self.order = order;
    }

    fn device(&self, n: &Node) -> i64 {
        match self.lanes[n.lane as usize] {
            Lane::Stream { device, .. } => device,
            Lane::Thread(_) => -1,
        }
    }

    /// The nodes in dependency order.
    pub fn in_order(&self) -> &[u32] {
        &self.order
    }

    /// The launch calls the model holds (those that returned: a blocked
    /// one is a Sync), by what they put on the GPU: (calls launching
    /// kernels — a graph launch once —, calls of copies or sets alone).
    pub fn launch_calls(&self) -> (usize, usize) {
        let mut kernels = vec![false; self.nodes.len()];
        for n in &self.nodes {
            if n.kind == NodeKind::Gpu && n.cross != NONE && n.class != COPY_CLASS {
                kernels[n.cross as usize] = true;
            }
        }
        let launches = self.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Launch);
        let with_kernels = launches.clone().filter(|(i, _)| kernels[*i]).count();
        (with_kernels, launches.count() - with_kernels)
    }

    /// The host gap before host node `i`: from its lane's previous node's
    /// end to its start (ns; negative where calls overlap).
    pub fn gap(&self, i: u32) -> Option<(i64, i64)> {
        let n = &self.nodes[i as usize];
        (n.kind != NodeKind::Gpu && n.prev != NONE)
            .then(|| (self.nodes[n.prev as usize].end, n.start))
    }

    /// The window's end in the trace: its last step's end or, later, the
    /// end of the last GPU work launched in it.
    pub fn end(&self) -> i64 {
        self.nodes.iter().map(|n| n.end).max().unwrap_or(self.window.1).max(self.window.1)
    }

    /// A window without step markers that a thread launching and
    /// waiting for nothing holds (a monitor's records running past every
    /// other thread's and the GPU's work): how far past, ns. No change to
    /// the GPU's work or the other threads' ends it sooner.
    pub fn held_by_idle_thread(&self) -> Option<i64> {
        let lane = self.loop_lane.filter(|_| self.last_mark.is_none())?;
        let on = |n: &&Node| n.lane == lane;
        if self.nodes.iter().filter(on).any(|n| n.kind != NodeKind::Mark) {
            return None;
        }
        let held = self.nodes.iter().filter(on).map(|n| n.end).max()?;
        let rest = self.nodes.iter().filter(|n| n.lane != lane).map(|n| n.end).max()?;
        (held > rest).then_some(held - rest)
    }

    /// Bytes the graph holds.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
            + self.order.capacity() * 4
            + self.host.heap_bytes()
            + self.also_waits.values().map(|v| v.capacity() * 4).sum::<usize>()
    }
}

/// The host thread whose activity — its calls and records in the window
/// `w` — ends last, and when its activity begins and ends.
fn closing_thread(
    nodes: &[Node],
    lanes: &[Lane],
    host: &HostCauses,
    (w0, w1): (i64, i64),
) -> Option<(u32, (i64, i64))> {
    let mut span: HashMap<u32, (i64, i64)> = HashMap::default();
    for n in nodes.iter().filter(|n| n.kind != NodeKind::Gpu) {
        if let Lane::Thread(t) = lanes[n.lane as usize] {
            let e = span.entry(t).or_insert((n.start, n.end));
            *e = (e.0.min(n.start), e.1.max(n.end));
        }
    }
    for t in host.threads() {
        if let (Some(a), Some(b)) = (host.active_from(t, w0), host.active_until(t, w1)) {
            let e = span.entry(t).or_insert((a, b));
            *e = (e.0.min(a), e.1.max(b));
        }
    }
    span.into_iter().max_by_key(|&(t, (_, e))| (e, std::cmp::Reverse(t)))
}
