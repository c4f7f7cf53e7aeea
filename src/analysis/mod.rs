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
mod counts;
pub mod cpulog;
pub mod facts;
mod gpulog;
pub mod gpusync;
pub mod graphs;
pub mod health;
pub mod idle;
mod inference;
pub mod kernel_calls;
mod kernel_index;
pub mod kernels;
mod launches;
pub mod levers;
mod memory;
pub mod model;
mod names;
mod placed;
mod pricing;
pub mod ranges;
mod replay;
pub mod roofline;
pub mod timeline;
pub mod verdict;
pub mod work;

use std::path::Path;

use crate::error::Result;
use crate::profile::{Measurements, Profile};
use crate::trace::event::Id;
use crate::trace::kind::span_ns;
use crate::trace::{
    self, Document, Event, EventKind, EventSink, GpuWork, RuntimeCall, SyncKind, TraceInfo,
};
use counts::{Counts, WorkSigns};
use gpulog::{CopySpan, GpuLog, Launch};
use inference::{INFERRED_HOW, PhaseInference};
use launches::{GpuEvent, Launches, PendingLaunch, Placed};
use names::{Names, ThreadIds, is_dataload, is_optimizer};
use placed::{GpuTables, OpTables, Place};
use pricing::OpPricing;
use ranges::{PhaseNames, Ranges};
use replay::{CallRec, GpuRec, Replay};

/// What the pass recorded: the names and threads met, the ranges, what it
/// kept of the host (`cpu`) and of the GPU (`gpu`), the aggregates placed
/// under the ranges, and what the other accounts read.
#[derive(Debug, Default)]
pub struct PassRecord {
    names: Names,
    threads: ThreadIds,
    phases: PhaseNames,
    ranges: Ranges,
    /// First and last timestamps of CPU ops, runtime calls and GPU events:
    /// the one step of a trace without step markers.
    span: Option<(i64, i64)>,
    /// Every CPU op, and what else the host threads did that the idle
    /// account reads, packed: the replay's ops and the host log in one.
    cpu: cpulog::CpuLog,
    /// Ops longer than this (ns) count as lasting it
    /// ([`Analyzer::clip_implausible`]).
    op_clip: Option<i64>,
    gpu: GpuLog,
    op_tables: OpTables,
    gpu_tables: GpuTables,
    counts: Counts,
    evidence: WorkSigns,
    /// Phase evidence in traces without `step/<phase>` ranges.
    inference: PhaseInference,
    pricing: OpPricing,
    memory: memory::MemoryLog,
    /// Communication kernels for matching across ranks.
    collectives: collectives::Collector,
    /// What the trace-health checks read (docs/analysis.md §15).
    health: health::Seen,
    captures: graphs::Captures,
    /// CUPTI's synchronisation records and the calls they name.
    sync_log: gpusync::SyncLog,
}

impl PassRecord {
    /// The ops' tables counted from the CPU log under the final ranges:
    /// what [`Analyzer::count_again`] leaves to be done ([`OpTables::stale`]).
    fn count_ops(&self) -> OpTables {
        OpTables::count(self.op_records(), &self.ranges, 16)
    }

    /// The CPU ops the pass kept, in its order, with the durations
    /// [`Analyzer::clip_implausible`] clipped.
    fn op_records(&self) -> impl Iterator<Item = cpulog::CpuRec> + '_ {
        self.cpu.ops_clipped(self.op_clip)
    }
}

/// The streaming aggregator. Feed it events, then [`Analyzer::finish`].
///
/// What the pass records is one value, [`PassRecord`], which the accounts
/// after it read; beside it, what only the pass itself needs: where it
/// stands, the launches still unmatched, and what the placed aggregates
/// are counted again from.
#[derive(Debug, Default)]
pub struct Analyzer {
    rec: PassRecord,
    /// The lookups [`Analyzer::place`] remembers once the ranges are final.
    place_cache: ranges::PlaceCache,
    /// Where the analysis stands: what placing an event does.
    stage: Stage,
    launches: Launches,
    /// What the placed aggregates were counted from.
    replay: Replay,
}

/// Where the analysis stands, which decides what placing an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Reading the trace: events are placed, kept in [`Replay`] and
    /// counted; `deferred`: the pass has met no phase ranges and leaves
    /// the counting to the end (nearly every real trace has none, and
    /// their phases, inferred at the end, mean counting everything again
    /// there anyway); `late`: a range arrived that could enclose work
    /// placed before it, which is counted again at the end; `placed_to`:
    /// the latest time placed so far (what `late` is checked against).
    Pass { deferred: bool, late: bool, placed_to: Option<i64> },
    /// The pass is over: what is placed from now on (`finish`'s leftovers)
    /// is counted at once.
    Ended,
    /// Counting again from [`Replay`], which is not added to meanwhile.
    Replaying,
}

impl Default for Stage {
    fn default() -> Stage {
        Stage::Pass { deferred: false, late: false, placed_to: None }
    }
}

impl Analyzer {
    fn thread(&mut self, pid: Option<&Id<'_>>, tid: Option<&Id<'_>>) -> u32 {
        self.rec.threads.id(pid, tid)
    }

    fn widen_span(&mut self, start: i64, end: i64) {
        self.rec.span = Some(match self.rec.span {
            Some((s, e)) => (s.min(start), e.max(end)),
            None => (start, end),
        });
    }

    /// Remembers how far the pass has got (the ordering check).
    fn note_ts(&mut self, ts: i64) {
        if let Stage::Pass { placed_to, .. } = &mut self.stage {
            *placed_to = Some(placed_to.map_or(ts, |h| h.max(ts)));
        }
    }

    /// Places CPU-side work, remembering how far the pass has got.
    fn place(&mut self, thread: u32, ts: i64) -> Place {
        self.note_ts(ts);
        let cache = &mut self.place_cache;
        Place {
            in_step: self.rec.ranges.in_step_cached(cache, ts),
            phase: self.rec.ranges.cpu_phase_cached(cache, thread, ts),
        }
    }

    /// A range starting at or before work already placed may enclose it.
    fn note_range(&mut self, start: i64) {
        if let Stage::Pass { late, placed_to, .. } = &mut self.stage {
            *late |= placed_to.is_some_and(|h| start <= h);
        }
    }

    fn on_range(&mut self, ev: &Event<'_>, start: i64, end: i64) {
        let name = ev.name();
        let gpu_side = ev.kind == EventKind::GpuAnnotation;
        if !gpu_side {
            self.note_phase_evidence(ev, is_optimizer(name), is_dataload(name), start, end);
        }
        if !name.starts_with("ProfilerStep#") {
            self.rec.health.note_end(end);
            self.rec.health.note_host_range(name, start, end);
        }
        if !gpu_side && !name.starts_with("ProfilerStep#") && !name.starts_with("step/") {
            let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
            let kind = if is_dataload(name) {
                cpulog::HostKind::Dataload
            } else {
                cpulog::HostKind::Annotation
            };
            let name = self.rec.names.id(name);
            self.rec.cpu.host(thread, start, end, name, kind);
        }
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            let Ok(number) = n.trim().parse::<u64>() else { return };
            if gpu_side {
                // The GPU-side mirror of the CPU step: when the GPU ran it.
                let g = self.rec.health.gpu_steps.entry(number).or_insert((start, end));
                *g = (g.0.min(start), g.1.max(end));
                return;
            }
            self.note_range(start);
            let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
            self.rec.ranges.add_step(number, thread, start, end);
        } else if let Some(phase) = name.strip_prefix("step/") {
            if phase.is_empty() {
                return;
            }
            let id = self.rec.phases.id(phase);
            if gpu_side {
                let device = ev.pid.as_ref().and_then(Id::as_int).unwrap_or(0);
                self.rec.ranges.add_gpu_phase(device, start, end, id);
            } else {
                self.note_range(start);
                let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
                self.rec.ranges.add_cpu_phase(thread, start, end, id);
            }
        }
    }

    fn on_op(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        self.rec.evidence.cpu_ops += 1;
        let (name, traits) = self.rec.names.op(ev.name());
        if traits.backward {
            self.rec.evidence.backward_ops += 1;
            self.rec.inference.note_backward(start, start + dur);
        } else {
            self.note_phase_evidence(ev, traits.optimizer, traits.dataload, start, start + dur);
        }
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let work = self.rec.pricing.price(&mut self.rec.names, ev, name, traits.modelled);
        let autograd = self.autograd(ev);
        self.rec.cpu.op(thread, name, start, dur, work, traits.dataload, autograd);
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

    /// Whether the pass leaves the placed aggregates to the end (see
    /// [`Stage::Pass`]).
    fn defer_count(&mut self) -> bool {
        let Stage::Pass { deferred, .. } = &mut self.stage else { return false };
        if self.rec.ranges.has_phase_ranges() {
            return false;
        }
        *deferred = true;
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
        self.rec.op_tables.add(thread, name, place.phase, start, dur);
    }

    fn count_call(&mut self, call: CallRec) {
        if self.stage != Stage::Replaying {
            self.replay.calls.push(call);
        }
        if self.defer_count() {
            return;
        }
        if !self.rec.ranges.in_step_cached(&mut self.place_cache, call.start) {
            return;
        }
        if call.malloc {
            self.rec.counts.mallocs += 1;
        }
        if call.graph {
            self.rec.counts.graph_launches += 1;
        }
    }

    fn on_runtime(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        let name = ev.name();
        let traits = self.rec.names.call(name);
        if traits.hip {
            self.rec.evidence.hip_calls += 1;
        } else if traits.cuda {
            self.rec.evidence.cuda_calls += 1;
        }
        if traits.capture {
            self.rec.evidence.graph_captures += 1;
        }
        if traits.capture
            || traits.capture_end
            || self.rec.captures.windows.last().is_some_and(|w| w.end == i64::MAX)
        {
            self.note_capture(ev, &traits, start, dur);
        }
        if traits.launch {
            self.rec.health.launch_calls += 1;
        }
        if traits.sync {
            self.rec.health.note_sync(name, start, dur);
        } else {
            self.rec.health.note_call(name, start, dur);
        }
        if traits.event || traits.sync {
            if let Some(corr) = ev.correlation() {
                let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
                self.rec.sync_log.call(corr, thread, start, start + dur);
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
            let id = self.rec.names.id(name);
            self.rec.cpu.host(thread, start, start + dur, id, kind);
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
            let launch = Launch { thread, start, end: start + dur, name: self.rec.names.id(name) };
            let pending = PendingLaunch { launch, graph };
            let after_work = &mut self.rec.counts.launch_after_work;
            for gpu in self.launches.launch_met(corr, pending, after_work).into_iter().flatten() {
                self.rec.gpu.give_launch(gpu.span, launch);
                self.count_gpu(gpu, Placed::Launch { thread, start, graph });
            }
        }
    }

    /// A `cuda_sync` record: kept for the step model
    /// ([`gpusync::SyncLog::resolve`]).
    fn on_sync_record(&mut self, ev: &Event<'_>, kind: SyncKind) {
        if let Some(r) = gpusync::SyncRecord::of(ev, kind) {
            self.rec.sync_log.record(r);
        }
    }

    /// A graph capture begins or ends, or a kernel is launched once one
    /// began: kept for [`graphs::Captured`].
    fn note_capture(&mut self, ev: &Event<'_>, traits: &RuntimeCall, start: i64, dur: i64) {
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        self.rec.captures.note(ev, traits, thread, (start, start + dur), &mut self.rec.names);
    }

    /// A Python frame (`with_stack=True`): kept when long enough to explain
    /// idle time (see [`idle::PYTHON_MIN_NS`]).
    fn on_python(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.rec.health.note_end(start + dur);
        if dur < idle::PYTHON_MIN_NS && !cpulog::is_module_frame(ev.name()) {
            self.rec.cpu.short_python += 1;
            return;
        }
        self.rec.health.note_host_range(ev.name(), start, start + dur);
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let name = self.rec.names.id(ev.name());
        self.rec.cpu.host(thread, start, start + dur, name, cpulog::HostKind::Python);
    }

    fn on_gpu(&mut self, ev: &Event<'_>, kind: GpuWork, start: i64, dur: i64) {
        self.widen_span(start, start + dur);
        let args = ev.args.as_ref();
        let device = ev.gpu_device();
        let name = self.rec.names.id(ev.name());
        let mut gpu = GpuEvent { kind, name, device, ts: start, dur, span: None };
        if kind != GpuWork::Kernel {
            let stream = ev.gpu_stream();
            let copy = CopySpan { start, end: start + dur, name, device, stream, launch: None };
            gpu.span = self.rec.gpu.add_copy(copy);
        }
        if kind == GpuWork::Kernel {
            let stream = ev.gpu_stream();
            let (span, communication) =
                self.rec.gpu.add_kernel(ev, name, (device, stream), start, dur);
            gpu.span = span;
            self.rec.collectives.kernel(collectives::Kernel {
                communication,
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
        let after_work = &mut self.rec.counts.launch_after_work;
        if let Some(p) = self.launches.work_met(ev.correlation(), gpu, after_work) {
            let (thread, start, graph) = (p.launch.thread, p.launch.start, p.graph);
            self.rec.gpu.give_launch(gpu.span, p.launch);
            self.count_gpu(gpu, Placed::Launch { thread, start, graph });
        }
    }

    fn count_gpu(&mut self, gpu: GpuEvent, how: Placed) {
        if self.stage != Stage::Replaying {
            self.replay.keep(&self.rec.gpu, gpu, how);
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
                    in_step: self.rec.ranges.in_step_cached(&mut self.place_cache, gpu.ts),
                    phase: self.rec.ranges.gpu_phase_by_time(gpu.device, gpu.ts),
                },
                false,
                false,
            ),
        };
        if !place.in_step {
            self.rec.counts.gpu_outside += 1;
            return;
        }
        self.rec.counts.gpu_in_steps += 1;
        if via_launch {
            self.rec.counts.via_launch += 1;
        } else {
            self.rec.counts.via_time += 1;
        }
        match gpu.kind {
            GpuWork::Kernel => {
                if via_graph {
                    self.rec.counts.graph_kernels += 1;
                }
                if !via_launch {
                    self.rec.counts.kernels_via_time += 1;
                }
                self.rec.gpu_tables.kernels.entry(gpu.name).or_default().add(gpu.dur);
                if let Some(span) = gpu.span {
                    self.rec.gpu.kernel_calls.counted(span);
                }
                self.rec
                    .gpu_tables
                    .kernels_by_phase
                    .entry((place.phase, gpu.name))
                    .or_default()
                    .add(gpu.dur);
            }
            GpuWork::Memcpy | GpuWork::Memset => {
                self.rec.gpu_tables.memcpy.add(gpu.dur);
                let by_phase = self.rec.gpu_tables.memcpy_by_phase.entry(place.phase).or_insert(0);
                *by_phase = by_phase.saturating_add(gpu.dur);
            }
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
            self.rec.evidence.optimizer_marks += 1;
            "optimizer"
        } else if dataload {
            "dataload"
        } else {
            return;
        };
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        self.rec.inference.marks.push((thread, start, end, phase));
        if optimizer && ev.name().starts_with(inference::OPTIMIZER_STEP) {
            self.rec.inference.optimizer_steps.push((thread, start, end));
        }
    }

    /// GPU events with no launch in the trace are placed by their own time.
    fn place_leftovers_by_time(&mut self) {
        let (left, order) = self.launches.take_unlaunched();
        for i in order {
            self.count_gpu(left[i as usize], Placed::Time);
        }
    }

    /// Durations longer than the whole step window (first step's start to
    /// the last one's end) cannot be work inside a step: a clock or export
    /// error (a kernel of 9·10¹¹ µs in a 1 ms step printed 199 800 000
    /// ms/step). Each such GPU event and CPU op is counted as lasting the
    /// window, everything is counted again, and the sentence to warn with
    /// is returned. Real traces have none, and are left as they are.
    fn clip_implausible(&mut self) -> Option<String> {
        let steps = self.rec.ranges.step_intervals();
        let (first, last) = (steps.first()?, steps.last()?);
        let window = last.1 - first.0;
        if window <= 0 {
            return None;
        }
        let over = |dur: i64| dur > window;
        let found = self.replay.events.iter().any(|(g, _)| over(g.dur))
            || self.launches.waiting().any(|g| over(g.dur))
            || over(self.rec.cpu.longest_op())
            || self.rec.gpu.kernel_spans.iter().any(|k| over(k.end - k.start));
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
                let k = &self.rec.gpu.kernel_spans[*span as usize];
                if over(k.end - k.start) {
                    longest = longest.max(k.end - k.start);
                    gpu += 1;
                }
            }
        }
        for o in self.rec.cpu.ops().filter(|o| over(o.dur)) {
            longest = longest.max(o.dur);
            ops += 1;
        }
        self.rec.op_clip = Some(window);
        for k in &mut self.rec.gpu.kernel_spans {
            if over(k.end - k.start) {
                longest = longest.max(k.end - k.start);
                k.end = k.start + window;
            }
        }
        for c in &mut self.rec.gpu.copy_spans {
            c.end = c.end.min(c.start + window);
        }
        let ranges = self.rec.ranges.clone();
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
        self.rec.ranges = ranges;
        self.rec.ranges.freeze();
        self.rec.gpu_tables.clear();
        self.rec.gpu.kernel_calls.recount();
        // The ops are counted later, beside the GPU accounts.
        self.rec.op_tables = OpTables { stale: true, ..OpTables::default() };
        let c = &mut self.rec.counts;
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
                    replay::kernel(&self.rec.gpu, span, launched, graph)
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

impl EventSink for Analyzer {
    fn event(&mut self, ev: &Event<'_>) {
        self.rec.counts.events += 1;
        match ev.kind {
            EventKind::NoSpan => return,
            EventKind::Memory => {
                let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
                return self.rec.memory.add(ev, thread);
            }
            _ => {}
        }
        let Some((start, dur)) = span_ns(ev.ts.get(), ev.dur.get()) else {
            self.rec.counts.malformed += 1;
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
            EventKind::OtherSpan => self.rec.health.note_other(ev.cat(), start + dur),
            EventKind::NoSpan | EventKind::Memory => {}
        }
    }

    fn malformed(&mut self) {
        self.rec.counts.events += 1;
        self.rec.counts.malformed += 1;
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
    let stale = match analyzer.stage {
        Stage::Pass { deferred, late, .. } => deferred || late,
        Stage::Ended | Stage::Replaying => false,
    };
    analyzer.stage = Stage::Ended;
    // The window's steps are final before the phases are inferred in them.
    let cut = analyzer.cut_steps_past_the_recording();
    let steps_inferred = analyzer.infer_steps();
    let stale = stale || cut || steps_inferred;
    analyzer.split_backward_at_steps();
    let inferred = analyzer.rec.inference.ranges(
        &analyzer.rec.ranges,
        analyzer.rec.span,
        &mut analyzer.rec.phases,
    );
    if let Some(inferred) = inferred {
        analyzer.rec.inference.how = Some(INFERRED_HOW.to_string());
        analyzer.count_again(inferred);
    } else if stale {
        let ranges = analyzer.rec.ranges.clone();
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
    let repeated = analyzer.rec.ranges.repeated_steps();
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
    if analyzer.launches.has_graph_launches() {
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
            analyzer.rec.attach_captures(captured);
        }
    }
    let probes = if peak_ops { memory::probes(&analyzer.rec) } else { Vec::new() };
    let peak_ops = memory::ops_at(&analyzer.rec, &probes);
    // The roofline account (§13) still reads the CPU log; the rest is done.
    analyzer.replay.calls = Vec::new();
    analyzer.replay.gpu = Vec::new();
    analyzer.replay.events = Vec::new();
    let (mut profile, model) =
        analyzer.finish(&info, measured, src.file_path(), &read_opts, keep_model)?;
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
    ///
    /// Whether a step changed.
    fn cut_steps_past_the_recording(&mut self) -> bool {
        let Some((end, session)) = self.rec.health.cut_at(self.rec.span.map(|s| s.1)) else {
            return false;
        };
        let worth = |past: i64, len: i64| {
            past >= 1_000_000 && if session { past * 10 >= len } else { 2 * past > len }
        };
        self.rec.health.cut = self.rec.ranges.cut_steps_at(end, worth);
        // A stub holds nothing: checked (one scan) only for a candidate.
        if let Some((n, s, e)) = self.rec.ranges.stub_last_step(end) {
            let starts_in = |t: i64| t >= s && t < e;
            let cpu = self.rec.cpu.iter().any(|r| starts_in(r.start));
            let gpu = self
                .rec
                .gpu
                .kernel_spans
                .iter()
                .any(|k| starts_in(k.start) || k.launch().is_some_and(|l| starts_in(l.start)))
                || self.rec.gpu.copy_spans.iter().any(|c| starts_in(c.start));
            if !cpu && !gpu {
                self.rec.ranges.drop_step(n);
                self.rec.health.stub = Some((n, e - s));
            }
        }
        !self.rec.health.cut.is_empty() || self.rec.health.stub.is_some()
    }

    /// Where phases are inferred in two steps or more, the backward
    /// bursts are made again from the ops so that none spans two steps.
    fn split_backward_at_steps(&mut self) {
        let rec = &mut self.rec;
        if rec.ranges.has_phase_ranges() {
            return;
        }
        let steps: Vec<(i64, i64)> =
            rec.ranges.numbered_steps().iter().map(|&(_, s, e)| (s, e)).collect();
        // Only where one does (a read of every op, else spared).
        if steps.len() < 2 || !rec.inference.burst_spans_a_step(&steps) {
            return;
        }
        let names = &rec.names;
        let backward = rec
            .cpu
            .ops_clipped(rec.op_clip)
            .filter(|r| names.op_traits(r.name).is_some_and(|t| t.backward))
            .map(|r| (r.start, r.start + r.dur));
        rec.inference.split_bursts_at(&steps, backward);
    }

    /// A training trace without step markers gets its steps from its
    /// `Optimizer.step#…` ranges (docs/analysis.md §2). Whether it did.
    fn infer_steps(&mut self) -> bool {
        if self.rec.ranges.has_steps() {
            return false;
        }
        let start = self.rec.span.map_or(i64::MAX, |s| s.0);
        let Some((thread, steps)) = self.rec.inference.steps(start) else { return false };
        self.rec.ranges.infer_steps(thread, &steps);
        true
    }

    /// The kernel launch calls in the steps, with and without a kernel
    /// (the `lost-gpu-events` check, §15): copies and sets aside (a trace
    /// may record their calls without their activity), and launches in a
    /// graph capture (recorded, not run).
    fn count_kernel_launches(&mut self) {
        let (ranges, names) = (&self.rec.ranges, &self.rec.names);
        let captures = &self.rec.captures.windows;
        let counted = |l: &Launch| {
            ranges.in_step(l.start)
                && !captures.iter().any(|w| w.start <= l.start && l.start < w.end)
        };
        let unmet = self.launches.unmet().filter(|l| RuntimeCall::of(names.get(l.name)).kernel);
        self.rec.health.unmet_launches = unmet.filter(|l| counted(l)).count() as u64;
        let met = self.rec.gpu.kernel_spans.iter().filter_map(|k| k.launch());
        self.rec.health.met_launches = met.filter(counted).count() as u64;
    }

    /// Turns the aggregates into a profile, on up to `threads` threads;
    /// the step model too, when `keep_model`.
    pub fn finish(
        mut self,
        info: &TraceInfo,
        measured: Option<&Measurements>,
        path: Option<&Path>,
        read: &trace::ReadOptions,
        keep_model: bool,
    ) -> Result<(Profile, Option<model::StepModel>)> {
        self.place_leftovers_by_time();
        self.rec.ranges.freeze();
        self.count_kernel_launches();
        build::build(&self.rec, info, measured, path, read, keep_model)
    }
}

#[cfg(test)]
mod tests;
