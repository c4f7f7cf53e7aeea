//! Trace → metrics (docs/analysis.md), in one streaming pass.
//!
//! Events are aggregated as they arrive. Besides the aggregates the pass
//! keeps small records: one per kernel (its interval and launch, for the
//! busy-time union, the communication overlap and the idle account), one
//! packed record per CPU op, runtime call and long Python frame the idle
//! account reads ([`cpulog::CpuLog`]), and the other inputs of step and
//! phase placement ([`Replay`]). Events are
//! placed with the ranges known at that moment: exact for current traces,
//! where Kineto writes ranges before the work they enclose. When the ranges
//! turn out different at the end — phases inferred (docs/analysis.md §6),
//! or a step marker written after its work (2020–21 traces) — the placed
//! aggregates are counted again from those records: every trace is read
//! once.

pub mod build;
pub mod busy;
pub mod calltree;
pub mod collectives;
pub mod cpulog;
pub mod facts;
pub mod gpusync;
pub mod graphs;
pub mod health;
pub mod idle;
pub mod kernel_calls;
mod kernel_index;
pub mod kernels;
pub mod levers;
mod memory;
pub mod model;
pub mod ranges;
pub mod roofline;
pub mod timeline;
pub mod verdict;
pub mod work;

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use crate::error::Result;
use crate::profile::{Measurements, Profile};
use crate::trace::event::{Id, Num};
use crate::trace::kind::span_ns;
use crate::trace::{
    self, Document, Event, EventKind, EventSink, GpuWork, RuntimeCall, SyncKind, TraceInfo,
};
use ranges::{PhaseNames, Ranges};

/// Where an event landed: inside a measured step or not, and its phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    in_step: bool,
    phase: u16,
}

/// Total duration and count.
#[derive(Debug, Clone, Copy, Default)]
pub struct Agg {
    pub ns: i64,
    pub count: u64,
}

impl Agg {
    fn add(&mut self, ns: i64) {
        // Durations are bounded (see `MAX_DUR_US`); a hostile trace of many
        // of the longest still must not wrap a total into the negative.
        self.ns = self.ns.saturating_add(ns);
        self.count += 1;
    }
}

/// What the CPU ops inside the steps are counted into.
#[derive(Debug, Default)]
struct OpTables {
    /// Per (phase, op name): every call counted (the ops table's own
    /// figures come from the call tree, `calltree::OpAccount`).
    ops_by_phase: HashMap<(u16, u32), Agg>,
    /// Per thread, the union of its CPU ops inside the steps: the time it
    /// spent inside framework ops rather than between them.
    op_cover: HashMap<u32, busy::StreamingUnion>,
}

impl OpTables {
    fn add(&mut self, thread: u32, name: u32, phase: u16, start: i64, dur: i64) {
        self.op_cover.entry(thread).or_default().add(start, start + dur);
        self.ops_by_phase.entry((phase, name)).or_default().add(dur);
    }
}

/// A GPU event waiting for its launch (or, at the end, placed by time).
#[derive(Debug, Clone, Copy)]
struct GpuEvent {
    kind: GpuWork,
    name: u32,
    device: i64,
    ts: i64,
    dur: i64,
    /// Its index in `kernel_spans`, or with [`COPY_SPAN`] in `copy_spans`:
    /// where its launch goes.
    span: Option<u32>,
}

/// Whether `launch` can have put `gpu` on the queue: work never starts
/// before its launch call does (1 µs of slack for the clocks' rounding).
fn launched_before(launch: &Launch, gpu: &GpuEvent) -> bool {
    launch.start <= gpu.ts + 1_000
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

/// A launch call waiting for its GPU events: when it ran, and whether it
/// launches a CUDA/HIP graph.
#[derive(Debug, Clone, Copy)]
struct PendingLaunch {
    launch: Launch,
    graph: bool,
}

/// How a GPU event is placed in a step and phase: by the CPU time of the
/// call that launched it, or (no launch in the trace) by its own time.
#[derive(Debug, Clone, Copy)]
enum Placed {
    Launch { thread: u32, start: i64, graph: bool },
    Time,
}

/// Kernel name id → (category, Tensor Core flag, short label).
pub(crate) type KernelClasses = HashMap<u32, (crate::profile::Category, bool, String)>;

/// What the step- and phase-keyed aggregates are counted from, kept
/// during the pass (docs/analysis.md §1): when the ranges turn out to
/// differ at the end (phases inferred, or a step marker written after the
/// work it encloses), the aggregates are counted again from this and from
/// the ops of the [`cpulog::CpuLog`] instead of reading the trace a second
/// time. O(calls + GPU events), small records.
#[derive(Debug, Default)]
struct Replay {
    /// Allocator and graph-launch calls (the other calls count nothing).
    calls: Vec<CallRec>,
    /// Every GPU event counted, in the order it was.
    gpu: Vec<GpuRec>,
    /// The GPU events kept whole ([`GpuRec::Event`]), in the same order.
    events: Vec<(GpuEvent, Placed)>,
}

/// A GPU event counted, to count again (8 bytes). A kernel is its entry
/// in `Analyzer::kernel_spans`, which holds its name, time, device and
/// launch: kept whole beside it, it was 56 bytes a kernel, the pass's
/// largest state on a real trace.
#[derive(Debug, Clone, Copy)]
enum GpuRec {
    /// A kernel placed by its launch (its span's) or, without, by time.
    Kernel { span: u32, launched: bool, graph: bool },
    /// Anything else: the next of `Replay::events`.
    Event,
}

/// What the performance model said of one op call with given shapes.
#[derive(Debug, Clone, Copy)]
enum Priced {
    /// Its entry in `Analyzer::works`.
    Work(u32),
    NoShapes,
    Unmodelled,
}

/// Bytes of (op, shapes) keys whose pricing is kept for the next call.
const MODEL_CACHE_BYTES: usize = 4 << 20;

/// What the performance model says one op call does (its FLOPs and bytes,
/// docs/analysis.md §13), kept for the roofline account at the end.
#[derive(Debug, Clone, Copy)]
struct OpWork {
    flops: f64,
    bytes: f64,
    dtype: work::Dtype,
    matrix: bool,
    /// The formula's inputs, interned.
    inputs: u32,
}

/// How many op calls the model met, by outcome: what a trace without
/// shapes is told.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelCounts {
    /// CPU ops carrying `Input Dims` (record_shapes=True).
    pub with_shapes: u64,
    /// Ops the model knows whose shapes were missing or did not fit.
    pub no_shapes: u64,
    pub priced: u64,
}

#[derive(Debug, Clone, Copy)]
struct CallRec {
    start: i64,
    malloc: bool,
    graph: bool,
}

/// A kernel's interval on its device and stream, 48 bytes (a trace holds
/// one per kernel).
#[derive(Debug, Clone, Copy)]
struct KernelSpan {
    start: i64,
    end: i64,
    /// Interned kernel name (for the communication / compute split).
    name: u32,
    /// Its (device, stream), by index in `Analyzer::queues`.
    queue: u32,
    /// The runtime call that launched it, when the trace has it (the idle
    /// account asks what the host did before it): [`KernelSpan::launch`].
    launch_start: i64,
    launch_end: i64,
    /// [`NO_LAUNCH`] when there is none.
    launch_thread: u32,
    launch_name: u32,
}

const NO_LAUNCH: u32 = u32::MAX;

/// A copy's or set's interval and launch, for the step model (copies
/// are few: a syncing `.item()`'s device-to-host copy among them).
#[derive(Debug, Clone, Copy)]
struct CopySpan {
    start: i64,
    end: i64,
    name: u32,
    device: i64,
    stream: i64,
    launch: Option<Launch>,
}

/// A [`GpuEvent::span`] that is an index into `Analyzer::copy_spans`.
const COPY_SPAN: u32 = 1 << 31;

impl KernelSpan {
    fn launch(&self) -> Option<Launch> {
        (self.launch_thread != NO_LAUNCH).then_some(Launch {
            thread: self.launch_thread,
            start: self.launch_start,
            end: self.launch_end,
            name: self.launch_name,
        })
    }

    fn set_launch(&mut self, l: Launch) {
        (self.launch_thread, self.launch_start, self.launch_end, self.launch_name) =
            (l.thread, l.start, l.end, l.name);
    }
}

/// String interner for kernel and op names.
#[derive(Debug, Default)]
pub struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    /// What each op name says, once worked out ([`OpTraits`]).
    op_traits: Vec<Option<OpTraits>>,
}

/// What a CPU op's name tells the pass, worked out once per distinct name
/// instead of once per call: the substring tests behind it were a large
/// share of the pass on real traces (1 M events, a few thousand names).
#[derive(Debug, Clone, Copy)]
struct OpTraits {
    backward: bool,
    optimizer: bool,
    dataload: bool,
    modelled: bool,
}

impl OpTraits {
    fn of(name: &str) -> OpTraits {
        OpTraits {
            backward: is_backward(name),
            optimizer: is_optimizer(name),
            dataload: is_dataload(name),
            modelled: work::is_modelled(name),
        }
    }
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    /// The id of an op's name, with what the name says.
    fn op(&mut self, s: &str) -> (u32, OpTraits) {
        let id = self.id(s);
        let i = id as usize;
        if self.op_traits.len() <= i {
            self.op_traits.resize(i + 1, None);
        }
        (id, *self.op_traits[i].get_or_insert_with(|| OpTraits::of(s)))
    }
    pub fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// (pid, tid) → a small thread id; integer ids take the fast path.
#[derive(Debug, Default, Clone)]
pub struct ThreadIds {
    ints: HashMap<(i64, i64), u32>,
    strs: HashMap<String, u32>,
    next: u32,
}

impl ThreadIds {
    fn id(&mut self, pid: Option<&Id<'_>>, tid: Option<&Id<'_>>) -> u32 {
        let next = self.next;
        let id = match (pid.and_then(Id::as_int), tid.and_then(Id::as_int)) {
            (Some(p), Some(t)) => *self.ints.entry((p, t)).or_insert(next),
            _ => {
                let show = |id: Option<&Id<'_>>| match id {
                    Some(Id::Int(v)) => v.to_string(),
                    Some(Id::Str(s)) => s.to_string(),
                    None => String::new(),
                };
                *self.strs.entry(format!("{}\u{0}{}", show(pid), show(tid))).or_insert(next)
            }
        };
        if id == next {
            self.next += 1;
        }
        id
    }
}

/// Per-device allocator evidence from `[memory]` events.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryPeak {
    pub reserved: f64,
    pub allocated: f64,
}

/// Counters for the attribution report.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub events: u64,
    pub malformed: u64,
    pub gpu_in_steps: u64,
    pub via_launch: u64,
    pub via_time: u64,
    pub gpu_outside: u64,
    pub mallocs: u64,
    /// Kernels in the steps that a CUDA/HIP graph launch owns.
    pub graph_kernels: u64,
    /// `cudaGraphLaunch` / `hipGraphLaunch` calls inside the steps.
    pub graph_launches: u64,
    /// GPU work whose correlation named a launch that began after it: ids
    /// of another process (a merged trace), not paired.
    pub launch_after_work: u64,
}

/// What the trace shows about the work it recorded (docs/analysis.md §10, mode).
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence {
    /// CPU ops of any kind, anywhere in the trace.
    pub cpu_ops: u64,
    /// Autograd backward work: `*Backward*` ops, the autograd engine.
    pub backward_ops: u64,
    /// `Optimizer.step#…` / `Optimizer.zero_grad#…` ranges or ops.
    pub optimizer_marks: u64,
    /// Runtime calls named `hip…` (a ROCm trace) and `cuda…`/`cu…`.
    pub hip_calls: u64,
    pub cuda_calls: u64,
    /// `cudaStreamBeginCapture` / `hipStreamBeginCapture`: the window
    /// records a graph capture, whose kernels are recorded, not run.
    pub graph_captures: u64,
}

/// The streaming aggregator. Feed it events, then [`Analyzer::finish`].
#[derive(Debug, Default)]
pub struct Analyzer {
    /// The lookups [`Analyzer::place`] remembers once the ranges are final.
    place_cache: ranges::PlaceCache,
    names: Names,
    phases: PhaseNames,
    threads: ThreadIds,
    ranges: Ranges,
    /// Latest timestamp placed so far (the ordering check).
    hi_ts: Option<i64>,
    /// A range arrived that could enclose work placed before it.
    ranges_late: bool,
    /// What the placed aggregates were counted from.
    replay: Replay,
    /// Where the analysis stands: what placing an event does.
    stage: Stage,

    kernels: HashMap<u32, Agg>,
    kernels_by_phase: HashMap<(u16, u32), Agg>,
    op_tables: OpTables,
    /// The ops are still to be counted (again) from the CPU log under the
    /// final ranges ([`Analyzer::count_ops`]): `build` does it beside the
    /// GPU accounts, which need nothing of it.
    ops_stale: bool,
    memcpy: Agg,
    memcpy_by_phase: HashMap<u16, i64>,
    kernel_spans: Vec<KernelSpan>,
    /// Every copy and set, for the step model.
    copy_spans: Vec<CopySpan>,
    /// Which kernel spans the tables counted, and each one's launch
    /// configuration: each kernel's spread, streams and configurations.
    kernel_calls: kernel_calls::Log,
    /// Each kernel name's category, Tensor Core flag and label, worked out
    /// when the name is first met (demangling is the costly part): the
    /// collectives read the category, the tables all three.
    kernel_classes: KernelClasses,
    /// Each (device, stream) a kernel ran on, and its index.
    queues: Vec<(i64, i64)>,
    queue_ids: HashMap<(i64, i64), u32>,
    /// Every CPU op, and what else the host threads did that the idle
    /// account reads, packed: the replay's ops and the host log in one.
    cpu: cpulog::CpuLog,
    /// Ops longer than this (ns) count as lasting it ([`Analyzer::clip_implausible`]).
    op_clip: Option<i64>,
    pending_launches: HashMap<i64, PendingLaunch>,
    /// Graph launches stay: every kernel of the graph shares their id.
    graph_launches: HashMap<i64, PendingLaunch>,
    pending_gpu: HashMap<i64, Vec<GpuEvent>>,
    unlaunched_gpu: Vec<GpuEvent>,
    memory: HashMap<i64, MemoryPeak>,
    /// Every `[memory]` event, per device, for the timeline.
    memory_samples: HashMap<memory::DeviceKey, Vec<memory::Sample>>,
    /// First and last timestamps of CPU ops, runtime calls and GPU events:
    /// the one step of a trace without step markers.
    span: Option<(i64, i64)>,
    counts: Counts,
    evidence: Evidence,
    /// Phase evidence in traces without `step/<phase>` ranges (docs/analysis.md §6):
    /// `enumerate(DataLoader)#…__next__` and `Optimizer.*#…` ranges as
    /// (thread, start, end, phase), and the union of the autograd engine's
    /// backward ops (gaps under [`BACKWARD_GAP`] closed).
    inferred: Vec<(u32, i64, i64, &'static str)>,
    backward_bursts: std::collections::BTreeMap<i64, i64>,
    /// How the phases were inferred, when they were.
    phases_inferred: Option<String>,
    /// Communication kernels for matching across ranks.
    collectives: collectives::Collector,
    /// What the performance model said of each distinct priced call (one
    /// per miss of `model_cache`); a priced op's record in the CPU log
    /// names its entry.
    works: Vec<OpWork>,
    /// What each runtime call's name says ([`RuntimeCall`]); apart from
    /// [`Names`], which interns only the calls the pass keeps.
    call_traits: HashMap<Box<str>, RuntimeCall>,
    model_counts: ModelCounts,
    /// The model's answer per distinct op name and shapes text (see
    /// [`Analyzer::price`]), and the key being looked up.
    model_cache: HashMap<Box<[u8]>, Priced>,
    model_cache_bytes: usize,
    model_key: Vec<u8>,
    /// What the trace-health checks read (docs/analysis.md §15).
    health: health::Seen,
    /// Graph captures (docs/analysis.md §17.1): each one's thread and
    /// time, and the kernel launches made once one was seen.
    capture_windows: Vec<graphs::CaptureWindow>,
    captured: Vec<graphs::CapturedLaunch>,
    /// The graphs a capture trace given beside this one recorded.
    attached: Option<graphs::Attached>,
    /// CUPTI's synchronisation records and the calls they name.
    sync_log: gpusync::SyncLog,
}

/// Where the analysis stands, which decides what placing an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Reading the trace: events are placed, kept in [`Replay`] and
    /// counted; `deferred`: the pass has met no phase ranges and leaves
    /// the counting to the end (nearly every real trace has none, and
    /// their phases, inferred at the end, mean counting everything again
    /// there anyway).
    Pass { deferred: bool },
    /// The pass is over: what is placed from now on (`finish`'s leftovers)
    /// is counted at once.
    Ended,
    /// Counting again from [`Replay`], which is not added to meanwhile.
    Replaying,
}

impl Default for Stage {
    fn default() -> Stage {
        Stage::Pass { deferred: false }
    }
}

/// Backward ops closer than this belong to the same backward pass.
const BACKWARD_GAP: i64 = 1_000_000;

/// Said in the output when the phases were inferred.
pub const INFERRED_HOW: &str = "the trace has no step/<phase> ranges; phases come from PyTorch's own annotations: enumerate(DataLoader)#…__next__ → dataload, Optimizer.step#…/Optimizer.zero_grad#… → optimizer, the autograd engine's backward ops (first to last, per step) → backward, the rest of each step → forward";

/// Evidence of a training step in a CPU op or range name.
fn is_backward(name: &str) -> bool {
    name.contains("Backward") || name.starts_with("autograd::engine::evaluate_function")
}

fn is_optimizer(name: &str) -> bool {
    name.starts_with("Optimizer.step#")
        || name.starts_with("Optimizer.zero_grad#")
        || name.starts_with("optimizer.step")
}

fn is_dataload(name: &str) -> bool {
    name.starts_with("enumerate(DataLoader)#") && name.contains("__next__")
}

impl Analyzer {
    /// A kernel's device.
    fn device(&self, k: &KernelSpan) -> i64 {
        self.queues[k.queue as usize].0
    }

    /// A kernel's stream.
    fn stream(&self, k: &KernelSpan) -> i64 {
        self.queues[k.queue as usize].1
    }

    fn thread(&mut self, pid: Option<&Id<'_>>, tid: Option<&Id<'_>>) -> u32 {
        self.threads.id(pid, tid)
    }

    fn widen_span(&mut self, start: i64, end: i64) {
        self.span = Some(match self.span {
            Some((s, e)) => (s.min(start), e.max(end)),
            None => (start, end),
        });
    }

    /// Remembers how far the pass has got (the ordering check).
    fn note_ts(&mut self, ts: i64) {
        self.hi_ts = Some(self.hi_ts.map_or(ts, |h| h.max(ts)));
    }

    /// Places CPU-side work, remembering how far the pass has got.
    fn place(&mut self, thread: u32, ts: i64) -> Place {
        self.note_ts(ts);
        let cache = &mut self.place_cache;
        Place {
            in_step: self.ranges.in_step_cached(cache, ts),
            phase: self.ranges.cpu_phase_cached(cache, thread, ts),
        }
    }

    /// A range starting at or before work already placed may enclose it.
    fn note_range(&mut self, start: i64) {
        if self.hi_ts.is_some_and(|h| start <= h) {
            self.ranges_late = true;
        }
    }

    fn on_range(&mut self, ev: &Event<'_>, start: i64, end: i64) {
        let name = ev.name();
        let gpu_side = ev.kind == EventKind::GpuAnnotation;
        if !gpu_side {
            self.note_phase_evidence(ev, is_optimizer(name), is_dataload(name), start, end);
        }
        if !name.starts_with("ProfilerStep#") {
            self.health.note_end(end);
            self.health.note_host_range(name, start, end);
        }
        if !gpu_side && !name.starts_with("ProfilerStep#") && !name.starts_with("step/") {
            let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
            let kind = if is_dataload(name) {
                cpulog::HostKind::Dataload
            } else {
                cpulog::HostKind::Annotation
            };
            let name = self.names.id(name);
            self.cpu.host(thread, start, end, name, kind);
        }
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            let Ok(number) = n.trim().parse::<u64>() else { return };
            if gpu_side {
                // The GPU-side mirror of the CPU step: when the GPU ran it.
                let g = self.health.gpu_steps.entry(number).or_insert((start, end));
                *g = (g.0.min(start), g.1.max(end));
                return;
            }
            self.note_range(start);
            let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
            self.ranges.add_step(number, thread, start, end);
        } else if let Some(phase) = name.strip_prefix("step/") {
            if phase.is_empty() {
                return;
            }
            let id = self.phases.id(phase);
            if gpu_side {
                let device = ev.pid.as_ref().and_then(Id::as_int).unwrap_or(0);
                self.ranges.add_gpu_phase(device, start, end, id);
            } else {
                self.note_range(start);
                let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
                self.ranges.add_cpu_phase(thread, start, end, id);
            }
        }
    }

    fn on_op(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        self.evidence.cpu_ops += 1;
        let (name, traits) = self.names.op(ev.name());
        if traits.backward {
            self.evidence.backward_ops += 1;
            self.note_backward(start, start + dur);
        } else {
            self.note_phase_evidence(ev, traits.optimizer, traits.dataload, start, start + dur);
        }
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let work = self.price(ev, name, traits.modelled);
        let autograd = self.autograd(ev);
        self.cpu.op(thread, name, start, dur, work, traits.dataload, autograd);
        self.count_op(thread, name, start, dur);
    }

    /// An op's sequence number and, on a backward op, its forward thread
    /// as autograd numbers it (0 on forward ops).
    fn autograd(&mut self, ev: &Event<'_>) -> Option<cpulog::Autograd> {
        let args = ev.args.as_ref()?;
        let seq = u64::try_from(args.sequence.id()?).ok()?;
        let fwd_thread = args.fwd_thread.id().filter(|t| *t > 0).map(|t| t as u32);
        Some(cpulog::Autograd { seq, fwd_thread })
    }

    /// The performance model's FLOPs and bytes for this op call: its entry
    /// in `works`. Shapes are parsed only for the ops it knows
    /// (`modelled`).
    fn price(&mut self, ev: &Event<'_>, name: u32, modelled: bool) -> Option<u32> {
        let args = ev.args.as_ref()?;
        if args.input_dims.is_some() {
            self.model_counts.with_shapes += 1;
        }
        if !modelled {
            return None;
        }
        let shapes = work::OpShapes {
            dims: args.input_dims,
            types: args.input_types,
            concrete: args.concrete_inputs,
        };
        // A training loop calls each op with the same few shapes step after
        // step: the model (shapes parsed, formula worked out and written)
        // runs once per distinct call, not once per call.
        let key = &mut self.model_key;
        key.clear();
        key.extend_from_slice(&name.to_le_bytes());
        for part in [shapes.dims, shapes.types, shapes.concrete] {
            match part {
                Some(b) => {
                    key.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    key.extend_from_slice(b);
                }
                None => key.extend_from_slice(&u64::MAX.to_le_bytes()),
            }
        }
        let priced = match self.model_cache.get(key.as_slice()) {
            Some(&priced) => priced,
            None => {
                let priced = match work::model(ev.name(), &shapes) {
                    work::Model::Work(w) => {
                        let Ok(index) = u32::try_from(self.works.len()) else { return None };
                        self.works.push(OpWork {
                            flops: w.flops,
                            bytes: w.bytes,
                            dtype: w.dtype,
                            matrix: w.matrix,
                            inputs: self.names.id(&w.inputs),
                        });
                        Priced::Work(index)
                    }
                    work::Model::NoShapes => Priced::NoShapes,
                    work::Model::Unmodelled => Priced::Unmodelled,
                };
                // Bounded: a trace of ever-new shapes starts the cache over.
                let cost = self.model_key.len() + size_of::<(Box<[u8]>, Priced)>();
                self.model_cache_bytes += cost;
                if self.model_cache_bytes > MODEL_CACHE_BYTES {
                    self.model_cache.clear();
                    self.model_cache_bytes = cost;
                }
                self.model_cache.insert(self.model_key.as_slice().into(), priced);
                priced
            }
        };
        match priced {
            Priced::Work(index) => {
                self.model_counts.priced += 1;
                Some(index)
            }
            Priced::NoShapes => {
                self.model_counts.no_shapes += 1;
                None
            }
            Priced::Unmodelled => None,
        }
    }

    /// Whether the pass leaves the placed aggregates to the end (see
    /// [`Stage::Pass`]).
    fn defer_count(&mut self) -> bool {
        if !matches!(self.stage, Stage::Pass { .. }) || self.ranges.has_phase_ranges() {
            return false;
        }
        self.stage = Stage::Pass { deferred: true };
        true
    }

    fn count_op(&mut self, thread: u32, name: u32, start: i64, dur: i64) {
        if self.defer_count() {
            self.note_ts(start); // as placing it would
            return;
        }
        let place = self.place(thread, start);
        if !place.in_step {
            return;
        }
        self.op_tables.add(thread, name, place.phase, start, dur);
    }

    /// The ops' tables counted from the CPU log under the final ranges:
    /// what [`Analyzer::count_again`] leaves to be done ([`Analyzer::ops_stale`]).
    fn count_ops(&self) -> OpTables {
        self.count_ops_dense_for(16)
    }

    /// [`Analyzer::count_ops`], with an index per phase for the first
    /// `dense_phases` phases met; any further phase's counted through a
    /// map (a hostile trace's thousands of phases must not each cost a
    /// vector of every name).
    fn count_ops_dense_for(&self, dense_phases: usize) -> OpTables {
        // Counted by index (threads and names are dense ids: two hash
        // lookups an op were a fifth of this loop), then moved into the
        // tables in the order their keys were first met. That is the
        // order counting into them directly inserts them, so the maps come
        // out laid out the same, and so does all that iterates them (the
        // headline's choice among equal threads).
        const NONE: u32 = u32::MAX;
        // Each thread's entry in `covers` (`NONE`: no op yet).
        let mut cover_of: Vec<u32> = Vec::new();
        let mut covers: Vec<(u32, busy::StreamingUnion)> = Vec::new();
        // Per phase, each op name's entry in `aggs`.
        let mut slots: Vec<(u16, Vec<u32>)> = Vec::new();
        let mut spilled: HashMap<(u16, u32), u32> = HashMap::default();
        let mut aggs: Vec<((u16, u32), Agg)> = Vec::new();
        let mut places = ranges::PlaceCache::default();
        for op in self.op_records() {
            if !self.ranges.in_step_cached(&mut places, op.start) {
                continue;
            }
            let phase = self.ranges.cpu_phase_cached(&mut places, op.thread, op.start);
            let t = op.thread as usize;
            if t >= cover_of.len() {
                cover_of.resize(t + 1, NONE);
            }
            if cover_of[t] == NONE {
                cover_of[t] = covers.len() as u32;
                covers.push((op.thread, busy::StreamingUnion::default()));
            }
            covers[cover_of[t] as usize].1.add(op.start, op.start + op.dur);
            let next = aggs.len() as u32;
            let dense = match slots.iter().position(|s| s.0 == phase) {
                Some(p) => Some(p),
                None if slots.len() < dense_phases => {
                    slots.push((phase, Vec::new()));
                    Some(slots.len() - 1)
                }
                None => None,
            };
            let at = match dense {
                Some(p) => {
                    let names = &mut slots[p].1;
                    let n = op.name as usize;
                    if n >= names.len() {
                        names.resize(n + 1, NONE);
                    }
                    if names[n] == NONE {
                        names[n] = next;
                    }
                    names[n]
                }
                None => *spilled.entry((phase, op.name)).or_insert(next),
            };
            if at == next {
                aggs.push(((phase, op.name), Agg::default()));
            }
            aggs[at as usize].1.add(op.dur);
        }
        let mut tables = OpTables::default();
        // One by one, not `extend` (which sizes the table first).
        for (thread, cover) in covers {
            tables.op_cover.insert(thread, cover);
        }
        for (key, agg) in aggs {
            tables.ops_by_phase.insert(key, agg);
        }
        tables
    }

    /// The CPU ops the pass kept, in its order, with the durations
    /// [`Analyzer::clip_implausible`] clipped.
    fn op_records(&self) -> impl Iterator<Item = cpulog::CpuRec> + '_ {
        clipped(&self.cpu, self.op_clip)
    }

    fn count_call(&mut self, call: CallRec) {
        if self.stage != Stage::Replaying {
            self.replay.calls.push(call);
        }
        if self.defer_count() {
            return;
        }
        if !self.ranges.in_step_cached(&mut self.place_cache, call.start) {
            return;
        }
        if call.malloc {
            self.counts.mallocs += 1;
        }
        if call.graph {
            self.counts.graph_launches += 1;
        }
    }

    fn on_runtime(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        let name = ev.name();
        let traits = match self.call_traits.get(name) {
            Some(t) => *t,
            None => *self.call_traits.entry(name.into()).or_insert_with(|| RuntimeCall::of(name)),
        };
        if traits.hip {
            self.evidence.hip_calls += 1;
        } else if traits.cuda {
            self.evidence.cuda_calls += 1;
        }
        if traits.capture {
            self.evidence.graph_captures += 1;
        }
        if traits.capture
            || traits.capture_end
            || self.capture_windows.last().is_some_and(|w| w.end == i64::MAX)
        {
            self.note_capture(ev, &traits, start, dur);
        }
        if traits.launch {
            self.health.launch_calls += 1;
        }
        if traits.event || traits.sync {
            if let Some(corr) = ev.correlation() {
                let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
                self.sync_log.call(corr, thread, start, start + dur);
            }
        }
        let malloc = traits.malloc;
        let launch = ev.correlation().filter(|_| traits.launch);
        let host_kind = cpulog::HostKind::of_call(&traits);
        if !malloc && launch.is_none() && host_kind.is_none() {
            return;
        }
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        if let Some(kind) = host_kind {
            let id = self.names.id(name);
            self.cpu.host(thread, start, start + dur, id, kind);
        }
        if !malloc && launch.is_none() {
            return;
        }
        self.note_ts(start);
        let graph = launch.is_some() && traits.graph;
        if malloc || graph {
            self.count_call(CallRec { start, malloc, graph });
        }
        if let Some(corr) = launch {
            let launch = Launch { thread, start, end: start + dur, name: self.names.id(name) };
            let pending = PendingLaunch { launch, graph };
            let mut waiting = self.pending_gpu.remove(&corr);
            // Work that began before this call is another process's with
            // the same id: it waits on for its own launch.
            if let Some(list) = waiting.as_mut() {
                let before = list.len();
                let (own, others): (Vec<GpuEvent>, Vec<GpuEvent>) =
                    list.drain(..).partition(|g| launched_before(&pending.launch, g));
                self.counts.launch_after_work += (before - own.len()) as u64;
                if !others.is_empty() {
                    self.pending_gpu.insert(corr, others);
                }
                *list = own;
            }
            let waiting = waiting.filter(|w| !w.is_empty());
            for gpu in waiting.iter().flatten() {
                self.give_launch(gpu.span, pending.launch);
                self.count_gpu(*gpu, Placed::Launch { thread, start, graph });
            }
            if graph {
                self.graph_launches.insert(corr, pending);
            } else if waiting.is_none() {
                self.pending_launches.insert(corr, pending);
            }
        }
    }

    /// A `cuda_sync` record: kept for the step model
    /// ([`gpusync::SyncLog::resolve`]).
    fn on_sync_record(&mut self, ev: &Event<'_>, kind: SyncKind) {
        let Some(call) = ev.correlation() else { return };
        let args = ev.args.as_ref();
        let id = |n: Option<&Num>| n.and_then(|n| n.id()).unwrap_or(-1);
        self.sync_log.record(gpusync::SyncRecord {
            kind,
            call,
            device: ev.gpu_device(),
            stream: id(args.map(|a| &a.stream)),
            on_stream: id(args.map(|a| &a.wait_on_stream)),
            on_record: id(args.map(|a| &a.wait_on_record)),
        });
    }

    /// A graph capture begins or ends, or a kernel is launched once one
    /// began: kept for [`graphs::Captured`].
    fn note_capture(&mut self, ev: &Event<'_>, traits: &RuntimeCall, start: i64, dur: i64) {
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        if traits.capture {
            let w = graphs::CaptureWindow { thread, start, end: i64::MAX };
            self.capture_windows.push(w);
        } else if traits.capture_end {
            let open = self.capture_windows.iter_mut().rev().find(|w| w.thread == thread);
            if let Some(w) = open.filter(|w| w.end == i64::MAX) {
                w.end = start + dur;
            }
        } else if traits.launch && !traits.graph && ev.name().contains("Launch") {
            let kernel =
                ev.args.as_ref().and_then(|a| a.kernel.as_ref()).map(|k| self.names.id(&k.0));
            self.captured.push(graphs::CapturedLaunch { thread, start, kernel });
        }
    }

    /// A Python frame (`with_stack=True`): kept when long enough to explain
    /// idle time (see [`idle::PYTHON_MIN_NS`]).
    fn on_python(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.health.note_end(start + dur);
        if dur < idle::PYTHON_MIN_NS && !cpulog::is_module_frame(ev.name()) {
            self.cpu.short_python += 1;
            return;
        }
        self.health.note_host_range(ev.name(), start, start + dur);
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let name = self.names.id(ev.name());
        self.cpu.host(thread, start, start + dur, name, cpulog::HostKind::Python);
    }

    fn on_gpu(&mut self, ev: &Event<'_>, kind: GpuWork, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        let args = ev.args.as_ref();
        let device = ev.gpu_device();
        let name = self.names.id(ev.name());
        let mut gpu = GpuEvent { kind, name, device, ts: start, dur, span: None };
        if kind != GpuWork::Kernel {
            gpu.span = u32::try_from(self.copy_spans.len())
                .ok()
                .filter(|&i| i < COPY_SPAN)
                .map(|i| i | COPY_SPAN);
            let stream = ev.gpu_stream();
            self.copy_spans.push(CopySpan {
                start,
                end: start + dur,
                name,
                device,
                stream,
                launch: None,
            });
        }
        if kind == GpuWork::Kernel {
            let stream = ev.gpu_stream();
            gpu.span = u32::try_from(self.kernel_spans.len()).ok();
            let next = self.queues.len() as u32;
            let queue = *self.queue_ids.entry((device, stream)).or_insert(next);
            if queue == next {
                self.queues.push((device, stream));
            }
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
            self.kernel_calls.kernel(args.and_then(|a| a.grid), args.and_then(|a| a.block));
            let class =
                self.kernel_classes.entry(name).or_insert_with(|| kernels::classify(ev.name()));
            self.collectives.kernel(collectives::Kernel {
                communication: class.0 == crate::profile::Category::Communication,
                name_id: name,
                span: gpu.span,
                name: ev.name(),
                device,
                stream,
                start,
                dur,
                args: args.and_then(|a| a.collective.as_deref()),
            });
        }
        match ev.correlation() {
            Some(corr) => {
                let found = self
                    .pending_launches
                    .remove(&corr)
                    .or_else(|| self.graph_launches.get(&corr).copied());
                match found {
                    Some(p) if launched_before(&p.launch, &gpu) => {
                        self.give_launch(gpu.span, p.launch);
                        self.count_gpu(
                            gpu,
                            Placed::Launch {
                                thread: p.launch.thread,
                                start: p.launch.start,
                                graph: p.graph,
                            },
                        );
                    }
                    found => {
                        // A launch after the work began is another
                        // process's with the same id: it stays for its own.
                        if let Some(p) = found.filter(|p| !p.graph) {
                            self.counts.launch_after_work += 1;
                            self.pending_launches.insert(corr, p);
                        }
                        self.pending_gpu.entry(corr).or_default().push(gpu);
                    }
                }
            }
            None => self.unlaunched_gpu.push(gpu),
        }
    }

    fn give_launch(&mut self, span: Option<u32>, launch: Launch) {
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

    fn keep_for_replay(&mut self, gpu: GpuEvent, how: Placed) {
        let kernel = gpu.span.filter(|_| gpu.kind == GpuWork::Kernel);
        let rec = match (kernel, how) {
            // A launch is given to the span before its kernel is counted.
            (Some(span), Placed::Launch { thread, start, graph })
                if self.kernel_spans[span as usize]
                    .launch()
                    .is_some_and(|l| (l.thread, l.start) == (thread, start)) =>
            {
                GpuRec::Kernel { span, launched: true, graph }
            }
            (Some(span), Placed::Time) => GpuRec::Kernel { span, launched: false, graph: false },
            _ => {
                self.replay.events.push((gpu, how));
                GpuRec::Event
            }
        };
        self.replay.gpu.push(rec);
    }

    /// A kept kernel as it was counted.
    fn replayed_kernel(&self, span: u32, launched: bool, graph: bool) -> (GpuEvent, Placed) {
        let k = &self.kernel_spans[span as usize];
        let gpu = GpuEvent {
            kind: GpuWork::Kernel,
            name: k.name,
            device: self.device(k),
            ts: k.start,
            dur: k.end - k.start,
            span: Some(span),
        };
        let how = match k.launch().filter(|_| launched) {
            Some(l) => Placed::Launch { thread: l.thread, start: l.start, graph },
            None => Placed::Time,
        };
        (gpu, how)
    }

    fn count_gpu(&mut self, gpu: GpuEvent, how: Placed) {
        if self.stage != Stage::Replaying {
            self.keep_for_replay(gpu, how);
        }
        if self.defer_count() {
            if let Placed::Launch { start, .. } = how {
                self.note_ts(start); // as placing it would
            }
            return;
        }
        let (place, via_launch, via_graph) = match how {
            Placed::Launch { thread, start, graph } => (self.place(thread, start), true, graph),
            Placed::Time => (
                Place {
                    in_step: self.ranges.in_step_cached(&mut self.place_cache, gpu.ts),
                    phase: self.ranges.gpu_phase_by_time(gpu.device, gpu.ts),
                },
                false,
                false,
            ),
        };
        if !place.in_step {
            self.counts.gpu_outside += 1;
            return;
        }
        self.counts.gpu_in_steps += 1;
        if via_launch {
            self.counts.via_launch += 1;
        } else {
            self.counts.via_time += 1;
        }
        match gpu.kind {
            GpuWork::Kernel => {
                if via_graph {
                    self.counts.graph_kernels += 1;
                }
                self.kernels.entry(gpu.name).or_default().add(gpu.dur);
                if let Some(span) = gpu.span {
                    self.kernel_calls.counted(span);
                }
                self.kernels_by_phase.entry((place.phase, gpu.name)).or_default().add(gpu.dur);
            }
            GpuWork::Memcpy | GpuWork::Memset => {
                self.memcpy.add(gpu.dur);
                let by_phase = self.memcpy_by_phase.entry(place.phase).or_insert(0);
                *by_phase = by_phase.saturating_add(gpu.dur);
            }
        }
    }

    fn on_memory(&mut self, ev: &Event<'_>) {
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        if let Some((key, sample)) = memory::sample(ev, thread) {
            self.memory_samples.entry(key).or_default().push(sample);
        }
        let Some(args) = ev.args.as_ref() else { return };
        // VRAM: CUDA's and ROCm's allocators (CPU allocations carry 0).
        if !matches!(args.device_type.id(), Some(memory::CUDA | memory::HIP)) {
            return;
        }
        let device = args.device_id.id().unwrap_or(0);
        let peak = self.memory.entry(device).or_default();
        if let Some(r) = args.total_reserved.get() {
            peak.reserved = peak.reserved.max(r);
        }
        if let Some(a) = args.total_allocated.get() {
            peak.allocated = peak.allocated.max(a);
        }
    }

    /// Dataloader and optimizer ranges, kept for phase inference.
    fn note_phase_evidence(
        &mut self,
        ev: &Event<'_>,
        optimizer: bool,
        dataload: bool,
        start: i64,
        end: i64,
    ) {
        let phase = if optimizer {
            self.evidence.optimizer_marks += 1;
            "optimizer"
        } else if dataload {
            "dataload"
        } else {
            return;
        };
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        self.inferred.push((thread, start, end, phase));
    }

    /// Adds a backward op to the union of backward work.
    fn note_backward(&mut self, start: i64, end: i64) {
        let (mut s, mut e) = (start, end);
        // Merge with every burst within BACKWARD_GAP of [s, e).
        let near: Vec<(i64, i64)> = self
            .backward_bursts
            .range(..=e + BACKWARD_GAP)
            .rev()
            .take_while(|(_, be)| **be + BACKWARD_GAP >= s)
            .map(|(a, b)| (*a, *b))
            .collect();
        for (bs, be) in near {
            self.backward_bursts.remove(&bs);
            s = s.min(bs);
            e = e.max(be);
        }
        self.backward_bursts.insert(s, e);
    }

    /// `step/<phase>`-like ranges derived from the evidence, for a second
    /// pass: per step, the backward window (first to last backward burst
    /// starting in it), the dataloader and optimizer ranges, and forward as
    /// the rest of the step. None when the trace has phase ranges of its
    /// own or no evidence.
    fn inferred_ranges(&mut self) -> Option<Ranges> {
        if self.ranges.has_phase_ranges()
            || (self.inferred.is_empty() && self.backward_bursts.is_empty())
        {
            return None;
        }
        let steps = match self.ranges.step_intervals() {
            s if !s.is_empty() => s,
            _ => vec![self.span?],
        };
        let mut loop_threads: Vec<u32> = self.ranges.loop_threads().collect();
        if loop_threads.is_empty() {
            loop_threads.extend(self.inferred.first().map(|r| r.0));
        }
        let &main = loop_threads.first()?;
        let mut ranges = self.ranges.clone();
        for &(step_start, step_end) in &steps {
            let mut taken: Vec<(i64, i64)> = Vec::new();
            for &(thread, s, e, phase) in &self.inferred {
                if s >= step_start && s < step_end {
                    let id = self.phases.id(phase);
                    ranges.add_cpu_phase(thread, s, e.min(step_end), id);
                    if thread == main {
                        taken.push((s, e.min(step_end)));
                    }
                }
            }
            let bursts: Vec<(i64, i64)> = self
                .backward_bursts
                .range(step_start..step_end)
                .map(|(s, e)| (*s, (*e).min(step_end)))
                .collect();
            if let (Some(first), Some(last)) = (bursts.first(), bursts.iter().map(|b| b.1).max()) {
                let id = self.phases.id("backward");
                ranges.add_cpu_phase(main, first.0, last, id);
                taken.push((first.0, last));
            }
            // Forward: the step minus everything above, on the loop thread.
            let taken = busy::merge(&mut taken);
            let id = self.phases.id("forward");
            let mut at = step_start;
            for (s, e) in taken.iter().copied().chain(std::iter::once((step_end, step_end))) {
                if s > at {
                    ranges.add_cpu_phase(main, at, s, id);
                }
                at = at.max(e);
            }
        }
        Some(ranges)
    }

    /// GPU events with no launch in the trace are placed by their own time.
    fn place_leftovers_by_time(&mut self) {
        let mut left: Vec<GpuEvent> = self.pending_gpu.drain().flat_map(|(_, g)| g).collect();
        left.append(&mut self.unlaunched_gpu);
        left.sort_by_key(|g| g.ts);
        for gpu in left {
            self.count_gpu(gpu, Placed::Time);
        }
    }

    /// The GPU's idle gaps inside `[start, end)` with their causes
    /// (docs/analysis.md §12), from the events fed so far: the Timeline
    /// pane's step, re-read.
    pub fn idle_gaps(&self, start: i64, end: i64) -> Vec<idle::IdleGap> {
        let label = |n: u32| self.names.get(n).to_string();
        let index = kernel_index::KernelIndex::of(self);
        let beside = idle::Beside { before_sweep: &|| (), share: &idle::Share::default() };
        idle::account(self, &index, &[(start, end)], 1.0, &label, true, beside)
            .and_then(|a| a.gaps)
            .map_or_else(Vec::new, |g| g.each(&self.names, &label))
    }

    /// The critical path of `[start, end)` (docs/analysis.md §14) from the
    /// events fed so far: the Timeline pane's step, re-read. Its stretches
    /// in time order: start, end, what it is (a kernel's name, or the
    /// part's), and the GPU class of GPU work.
    pub fn critical_path(&self, start: i64, end: i64) -> Vec<(i64, i64, String, Option<u8>)> {
        let Some((m, _)) = model::of_pass(self, &self.kernel_classes, &[(start, end)], false)
        else {
            return Vec::new();
        };
        let path = m.critical_path();
        // A GPU stretch is a node's whole span: its name is the kernel's.
        let gpu_name: HashMap<(i64, i64), u32> = path
            .nodes
            .iter()
            .map(|&i| &m.nodes[i as usize])
            .filter(|n| n.kind == model::NodeKind::Gpu)
            .map(|n| ((n.start, n.end), n.name))
            .collect();
        path.segments
            .iter()
            .map(|&(s, e, part)| match part {
                model::PathPart::Gpu(class) => {
                    let name = gpu_name
                        .get(&(s, e))
                        .map_or_else(|| part.label(), |&n| m.names[n as usize].clone());
                    (s, e, name, Some(class))
                }
                _ => (s, e, part.label(), None),
            })
            .collect()
    }

    /// Durations longer than the whole step window (first step's start to
    /// the last one's end) cannot be work inside a step: a clock or export
    /// error (a kernel of 9·10¹¹ µs in a 1 ms step printed 199 800 000
    /// ms/step). Each such GPU event and CPU op is counted as lasting the
    /// window, everything is counted again, and the sentence to warn with
    /// is returned. Real traces have none, and are left as they are.
    fn clip_implausible(&mut self) -> Option<String> {
        let steps = self.ranges.step_intervals();
        let (first, last) = (steps.first()?, steps.last()?);
        let window = last.1 - first.0;
        if window <= 0 {
            return None;
        }
        let over = |dur: i64| dur > window;
        let found = self.replay.events.iter().any(|(g, _)| over(g.dur))
            || self.pending_gpu.values().flatten().chain(&self.unlaunched_gpu).any(|g| over(g.dur))
            || over(self.cpu.longest_op())
            || self.kernel_spans.iter().any(|k| over(k.end - k.start));
        if !found {
            return None;
        }
        // The GPU events still waiting are placed now (as `finish` would),
        // so that they are clipped and counted with the rest.
        self.place_leftovers_by_time();
        let (mut gpu, mut ops, mut longest) = (0u64, 0u64, 0i64);
        for (g, _) in &mut self.replay.events {
            if over(g.dur) {
                longest = longest.max(g.dur);
                g.dur = window;
                gpu += 1;
            }
        }
        // The kernels kept as their span are clipped there, below.
        for rec in &self.replay.gpu {
            if let GpuRec::Kernel { span, .. } = rec {
                let k = &self.kernel_spans[*span as usize];
                if over(k.end - k.start) {
                    longest = longest.max(k.end - k.start);
                    gpu += 1;
                }
            }
        }
        for o in self.cpu.ops().filter(|o| over(o.dur)) {
            longest = longest.max(o.dur);
            ops += 1;
        }
        self.op_clip = Some(window);
        for k in &mut self.kernel_spans {
            if over(k.end - k.start) {
                longest = longest.max(k.end - k.start);
                k.end = k.start + window;
            }
        }
        for c in &mut self.copy_spans {
            c.end = c.end.min(c.start + window);
        }
        let ranges = self.ranges.clone();
        self.count_again(ranges);
        let ms = |ns: i64| ns as f64 / 1e6;
        Some(format!(
            "{gpu} GPU event(s) and {ops} CPU op(s) last longer than all the steps together ({:.3} ms; the longest {:.3} ms): \
             a clock or export error, each counted as lasting {:.3} ms",
            ms(window),
            ms(longest),
            ms(window)
        ))
    }

    /// Counts every step- and phase-keyed aggregate again under `ranges`
    /// (the final ones), from what the pass kept, in the order it met it.
    fn count_again(&mut self, ranges: Ranges) {
        self.ranges = ranges;
        self.ranges.freeze();
        self.kernels.clear();
        self.kernels_by_phase.clear();
        self.kernel_calls.recount();
        // The ops are counted later, beside the GPU accounts.
        self.op_tables = OpTables::default();
        self.ops_stale = true;
        self.memcpy = Agg::default();
        self.memcpy_by_phase.clear();
        let c = &mut self.counts;
        (
            c.gpu_in_steps,
            c.via_launch,
            c.via_time,
            c.gpu_outside,
            c.mallocs,
            c.graph_kernels,
            c.graph_launches,
        ) = (0, 0, 0, 0, 0, 0, 0);
        let replay = std::mem::take(&mut self.replay);
        let stage = std::mem::replace(&mut self.stage, Stage::Replaying);
        for call in &replay.calls {
            self.count_call(*call);
        }
        let mut events = replay.events.iter();
        for &rec in &replay.gpu {
            let (gpu, how) = match rec {
                GpuRec::Kernel { span, launched, graph } => {
                    self.replayed_kernel(span, launched, graph)
                }
                // As many as the records that point to them.
                GpuRec::Event => match events.next() {
                    Some(&e) => e,
                    None => break,
                },
            };
            self.count_gpu(gpu, how);
        }
        self.stage = stage;
        self.replay = replay;
    }
}

/// `cpu`'s ops, those longer than `clip` counted as lasting it.
fn clipped(cpu: &cpulog::CpuLog, clip: Option<i64>) -> impl Iterator<Item = cpulog::CpuRec> + '_ {
    cpu.ops().map(move |mut r| {
        if let Some(w) = clip.filter(|&w| r.dur > w) {
            r.dur = w;
        }
        r
    })
}

impl EventSink for Analyzer {
    fn event(&mut self, ev: &Event<'_>) {
        self.counts.events += 1;
        match ev.kind {
            EventKind::NoSpan => return,
            EventKind::Memory => return self.on_memory(ev),
            _ => {}
        }
        let Some((start, dur)) = span_ns(ev.ts.get(), ev.dur.get()) else {
            self.counts.malformed += 1;
            return;
        };
        match ev.kind {
            EventKind::Annotation | EventKind::GpuAnnotation => {
                self.on_range(ev, start, start + dur)
            }
            EventKind::CpuOp => self.on_op(ev, start, dur),
            EventKind::Runtime => self.on_runtime(ev, start, dur),
            EventKind::Python => self.on_python(ev, start, dur),
            EventKind::Gpu(kind) => self.on_gpu(ev, kind, start, dur),
            EventKind::GpuSync(kind) => self.on_sync_record(ev, kind),
            EventKind::OtherSpan => self.health.note_other(ev.cat(), start + dur),
            EventKind::NoSpan | EventKind::Memory => {}
        }
    }

    fn malformed(&mut self) {
        self.counts.events += 1;
        self.counts.malformed += 1;
    }

    /// A profile is loaded as one, not analysed.
    fn declines(&mut self, schema: &str) -> bool {
        schema.starts_with(crate::profile::SCHEMA_PREFIX)
    }
}

pub use build::without_trace as profile_without_trace;

/// A capture's measured numbers for a trace, and whether they are known to
/// belong to it.
#[derive(Debug, Clone, Copy, Default)]
pub enum Sidecar<'m> {
    #[default]
    None,
    /// Given by the caller that captured the trace (the capture itself).
    Trusted(&'m Measurements),
    /// Found beside the trace file: used only when it belongs to this
    /// trace (see [`Measurements::belongs_to`]), else ignored with a notice.
    Found(&'m Measurements, &'m Path),
}

/// How [`analyze`] reads a trace.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions<'m> {
    /// The measured numbers that go with the trace, if any.
    pub sidecar: Sidecar<'m>,
    /// How the trace is read (its threads also run the end's accounts side
    /// by side).
    pub read: trace::ReadOptions,
    /// Name the CPU op at each device's memory peak (docs/analysis.md §9),
    /// from the ops the pass kept.
    pub peak_ops: bool,
    /// Keep the step model (docs/analysis.md §14) beside the profile, for
    /// what-ifs the profile's standard ones do not cover.
    pub keep_model: bool,
}

impl<'m> AnalyzeOptions<'m> {
    /// A capture's own trace and numbers: trusted, and the op at the memory
    /// peak kept in its profile.json (other readers' outputs name it where
    /// they show memory, `profile memory`).
    pub fn captured(measured: &'m Measurements) -> Self {
        AnalyzeOptions { sidecar: Sidecar::Trusted(measured), peak_ops: true, ..Default::default() }
    }
}

/// A trace analysed: its profile, and the notices a reader should show on
/// stderr (also kept in the profile's warnings): measured numbers ignored,
/// step names recorded more than once.
#[derive(Debug, Clone)]
pub struct Analysed {
    pub profile: Profile,
    pub notices: Vec<String>,
    /// With [`AnalyzeOptions::keep_model`], the step model.
    pub model: Option<model::StepModel>,
}

/// Analyses the trace `src` holds. Returns `Ok(None)` when it turns out to
/// be a profile, not a trace.
pub fn analyze(src: &trace::Source, opts: AnalyzeOptions<'_>) -> Result<Option<Analysed>> {
    let read = opts.read.clone();
    analyze_read(src, opts, |sink| trace::read_source(src, sink, &read))
}

/// [`analyze`], with the pass made by `read`: a reader that feeds other
/// sinks from the same pass (the explorer's Timeline index).
pub fn analyze_read(
    src: &trace::Source,
    opts: AnalyzeOptions<'_>,
    read: impl FnOnce(&mut dyn EventSink) -> Result<Document>,
) -> Result<Option<Analysed>> {
    let AnalyzeOptions { sidecar, peak_ops, read: read_opts, keep_model } = opts;
    let mut analyzer = Analyzer::default();
    let info = match read(&mut analyzer)? {
        Document::Declined => return Ok(None),
        Document::Trace(info) => info,
    };
    // One pass: where the ranges the aggregates were placed by turn out
    // different at the end, or the pass left them uncounted, they are
    // counted (again) from what the pass kept.
    let deferred = analyzer.stage == Stage::Pass { deferred: true };
    analyzer.stage = Stage::Ended;
    if let Some(inferred) = analyzer.inferred_ranges() {
        analyzer.phases_inferred = Some(INFERRED_HOW.to_string());
        analyzer.count_again(inferred);
    } else if analyzer.ranges_late || deferred {
        let ranges = analyzer.ranges.clone();
        analyzer.count_again(ranges);
    }
    let mut notices = Vec::new();
    if let Some(clipped) = analyzer.clip_implausible() {
        notices.push(clipped);
    }
    let measured = match sidecar {
        Sidecar::None => None,
        Sidecar::Trusted(m) => Some(m),
        Sidecar::Found(m, at) => match m.belongs_to(&info, src.file_path()) {
            Ok(()) => Some(m),
            Err(why) => {
                notices.push(format!("measured numbers in {} ignored: {why}", at.display()));
                None
            }
        },
    };
    let repeated = analyzer.ranges.repeated_steps();
    if !repeated.is_empty() {
        let shown: Vec<String> =
            repeated.iter().take(5).map(|(n, k)| format!("ProfilerStep#{n} ({k} times)")).collect();
        let more = if repeated.len() > 5 {
            format!(" and {} more", repeated.len() - 5)
        } else {
            String::new()
        };
        notices.push(format!(
            "step names recorded more than once at different times: {}{more}; each name is counted as one step spanning all of them",
            shown.join(", ")
        ));
    }
    // The graphs a replay's kernels were captured in (§17.1): read in a
    // pass of their own.
    if !analyzer.graph_launches.is_empty() {
        let given = !read_opts.graph_capture.is_empty();
        let paths = if given {
            read_opts.graph_capture.clone()
        } else {
            src.file_path().map(graphs::beside).unwrap_or_default()
        };
        if !paths.is_empty() {
            let opts = trace::ReadOptions { graph_capture: Vec::new(), ..read_opts.clone() };
            let captured = graphs::Captured::read(&paths, &opts)?;
            if captured.counts().0 == 0 {
                let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                notices.push(format!("{} record no graph capture", shown.join(", ")));
            }
            analyzer.attach_captures(captured);
        }
    }
    let probes = if peak_ops { memory::probes(&analyzer) } else { Vec::new() };
    let peak_ops = memory::ops_at(&analyzer, &probes);
    // The roofline account (§13) still reads the CPU log; the rest is done.
    analyzer.replay.calls = Vec::new();
    analyzer.replay.gpu = Vec::new();
    analyzer.replay.events = Vec::new();
    let (mut profile, model) =
        analyzer.finish(&info, measured, src.file_path(), read_opts.threads, keep_model)?;
    for (row, op) in profile.memory.iter_mut().zip(peak_ops) {
        row.peak_op = op;
    }
    for (k, n) in notices.iter().enumerate() {
        profile.warnings.insert(k, n.clone());
    }
    Ok(Some(Analysed { profile, notices, model }))
}

impl Analyzer {
    /// A step marker that runs on after the last recorded event (the
    /// recording stopped inside the step) is cut back to it: its tail
    /// would otherwise count as time nobody spent (docs/analysis.md §15,
    /// [`health::Seen::cut_at`] says when). A tail under a millisecond is
    /// the marker's own end.
    fn cut_steps_past_the_recording(&mut self) {
        let Some((end, session)) = self.health.cut_at(self.span.map(|s| s.1)) else { return };
        let worth = |past: i64, len: i64| {
            past >= 1_000_000 && if session { past * 10 >= len } else { 2 * past > len }
        };
        self.health.cut = self.ranges.cut_steps_at(end, worth);
    }

    /// Turns the aggregates into a profile, on up to `threads` threads;
    /// the step model too, when `keep_model`.
    pub fn finish(
        mut self,
        info: &TraceInfo,
        measured: Option<&Measurements>,
        path: Option<&Path>,
        threads: usize,
        keep_model: bool,
    ) -> Result<(Profile, Option<model::StepModel>)> {
        self.cut_steps_past_the_recording();
        self.place_leftovers_by_time();
        self.ranges.freeze();
        build::build(self, info, measured, path, threads, keep_model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPU events longer than all the steps are clipped and everything is
    /// counted again, kernels from their spans: a kernel launched before
    /// it ran, one launched after (waiting for its launch), and a copy
    /// placed by time.
    #[test]
    fn implausible_gpu_events_are_clipped_and_counted_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clip.json");
        std::fs::write(
            &path,
            r#"[
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 5000000, "args": {"correlation": 9}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 40, "dur": 3000000},
 {"ph": "X", "cat": "kernel", "name": "late_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 100, "args": {"correlation": 11}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 300, "dur": 4, "args": {"correlation": 11}}
]"#,
        )
        .unwrap();
        let src = trace::Source::path(&path).unwrap();
        let a = analyze(&src, AnalyzeOptions::default()).unwrap().unwrap();
        assert!(
            a.notices.iter().any(|n| n.starts_with(
                "2 GPU event(s) and 0 CPU op(s) last longer than all the steps together (1.000 ms; the longest 5000.000 ms)"
            )),
            "{:?}",
            a.notices
        );
        // One step of 1 ms: the GEMM counts as 1 ms, the late kernel 0.1 ms.
        let ms = |label: &str| {
            let k = a.profile.kernels.iter().find(|k| k.raw_name == label);
            k.map(|k| k.ms_per_step)
        };
        assert_eq!(ms("volta_sgemm_128x64_nn"), Some(1.0));
        assert_eq!(ms("late_kernel"), Some(0.1));
    }

    /// With no `step/<phase>` range the pass leaves the step-keyed figures
    /// to the end; they equal those of the same work under a phase range
    /// met first (counted in the pass): a kernel launched before it ran,
    /// one whose launch the trace never wrote (placed by time at the very
    /// end), a copy and two ops.
    #[test]
    fn figures_counted_at_the_end_equal_those_counted_in_the_pass() {
        let trace = |phase: &str| {
            format!(
                r#"[
 {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}},{phase}
 {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50}},
 {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {{"correlation": 9}}}},
 {{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {{"correlation": 9}}}},
 {{"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 100, "args": {{"correlation": 77}}}},
 {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 600, "dur": 50}},
 {{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 700, "dur": 20}}
]"#
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let src = trace::Source::path(&path).unwrap();
            analyze(&src, AnalyzeOptions::default()).unwrap().unwrap().profile
        };
        let at_end = read("end.json", trace(""));
        let in_pass = read(
            "pass.json",
            trace(
                r#"
 {"ph": "X", "cat": "user_annotation", "name": "step/forward", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},"#,
            ),
        );
        let kernels = |p: &Profile| -> Vec<(String, f64, f64)> {
            p.kernels
                .iter()
                .map(|k| (k.raw_name.clone(), k.ms_per_step, k.count_per_step))
                .collect()
        };
        let ops = |p: &Profile| -> Vec<(String, f64, f64)> {
            p.ops.iter().map(|o| (o.op.clone(), o.ms_per_step, o.count_per_step)).collect()
        };
        // The trace's own numbers: both kernels (0.3 + 0.1 ms) and both
        // ops (0.05 + 0.02 ms) lie in the one step.
        assert_eq!(at_end.figures.kernels_per_step, 2.0);
        let ms: f64 = kernels(&at_end).iter().map(|k| k.1).sum();
        assert!((ms - 0.4).abs() < 1e-9, "{:?}", kernels(&at_end));
        let ms: f64 = ops(&at_end).iter().map(|o| o.1).sum();
        assert!((ms - 0.07).abs() < 1e-9, "{:?}", ops(&at_end));
        assert_eq!(kernels(&at_end), kernels(&in_pass));
        assert_eq!(ops(&at_end), ops(&in_pass));
        assert_eq!(at_end.figures.kernels_per_step, in_pass.figures.kernels_per_step);
        // Nothing counted in the pass at all: a kernel with no launch,
        // placed when the pass is over, is counted then.
        let alone = read(
            "alone.json",
            r#"[
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 300}
]"#
            .to_string(),
        );
        assert_eq!(alone.figures.kernels_per_step, 1.0);
    }

    /// Real traces without phase ranges (phases inferred), with memory
    /// events (the op at the peak named), and a 2021-style trace whose step
    /// marker comes after its work: each read once, counted.
    #[test]
    fn every_trace_is_read_once() {
        let fixture = |p: &str| {
            std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces"))
                .join(p)
        };
        let dir = tempfile::tempdir().unwrap();
        let late = dir.path().join("late.json");
        std::fs::write(
            &late,
            r#"[
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9}},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}
]"#,
        )
        .unwrap();
        for (path, peak_ops) in [
            (fixture("hta_trace_diff_a100_2022/control.json.gz"), false),
            (fixture("kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz"), true),
            (late, false),
        ] {
            let before = trace::passes_on_this_thread();
            let opts = AnalyzeOptions { peak_ops, ..Default::default() };
            let p = analyze(&trace::Source::path(&path).unwrap(), opts).unwrap().unwrap().profile;
            assert_eq!(trace::passes_on_this_thread() - before, 1, "{}", path.display());
            assert_eq!(p.attribution.unwrap().passes, 1);
            assert!(p.figures.kernels_per_step > 0.0);
            if peak_ops {
                assert!(
                    p.memory.iter().all(|m| m.peak_op.is_some()),
                    "the op at the peak, from the same pass"
                );
            }
        }
    }

    /// The ops counted by index after the pass (`count_ops`) give the
    /// tables that counting each op into them gives, laid out the same:
    /// their iteration order decides ties in what reads them. On a real
    /// trace without phase ranges (its phases inferred at the end).
    #[test]
    fn ops_counted_by_index_give_the_tables_counted_one_by_one() {
        let path = std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/hta_trace_diff_a100_2022/control.json.gz"
        ));
        let mut a = Analyzer::default();
        let src = trace::Source::path(&path).unwrap();
        assert!(matches!(
            trace::read_source(&src, &mut a, &Default::default()).unwrap(),
            Document::Trace(_)
        ));
        a.stage = Stage::Ended;
        let inferred = a.inferred_ranges().expect("no phase ranges: phases inferred");
        a.count_again(inferred);
        assert!(a.ops_stale);

        let mut one_by_one = OpTables::default();
        let mut places = ranges::PlaceCache::default();
        for op in a.op_records() {
            if a.ranges.in_step_cached(&mut places, op.start) {
                let phase = a.ranges.cpu_phase_cached(&mut places, op.thread, op.start);
                one_by_one.add(op.thread, op.name, phase, op.start, op.dur);
            }
        }
        assert!(one_by_one.ops_by_phase.len() > 100, "{}", one_by_one.ops_by_phase.len());
        let rows = |t: &OpTables| -> Vec<((u16, u32), i64, u64)> {
            t.ops_by_phase.iter().map(|(k, v)| (*k, v.ns, v.count)).collect()
        };
        let cover = |t: &OpTables| -> Vec<(u32, i64, u64)> {
            t.op_cover.iter().map(|(k, u)| (*k, u.total(), u.lost)).collect()
        };
        let phases: std::collections::BTreeSet<u16> =
            one_by_one.ops_by_phase.keys().map(|k| k.0).collect();
        assert!(phases.len() > 1, "{phases:?}");
        // Every phase by index (as `count_ops`), only the first, and none.
        for dense in [16, 1, 0] {
            let by_index = a.count_ops_dense_for(dense);
            assert_eq!(rows(&by_index), rows(&one_by_one), "{dense} phases by index");
            assert_eq!(cover(&by_index), cover(&one_by_one), "{dense} phases by index");
        }
    }
}
