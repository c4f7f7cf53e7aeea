//! The timeline lens: one step of a trace as lanes of intervals — the loop
//! thread's phases and top-level ops, each GPU stream's kernels and
//! copies, and the union "GPU busy" — for the explorer's Timeline pane.
//!
//! The profile keeps aggregates only, so per-kernel intervals come from the
//! trace itself, one step at a time (docs/design.md §4, the timeline):
//!
//! 1. [`index`]: one streaming pass records the steps (`ProfilerStep#N`:
//!    number, window, thread) and, per block of [`BLOCK`] events, the
//!    block's byte offset and time range. Memory: 32 bytes per block.
//! 2. [`open_step`]: re-reads only the blocks whose time range meets the
//!    step (widened until every launch of the step has found its GPU
//!    work) with [`trace::read_spans`], and builds that step's lanes.
//!    Memory: the one step's intervals, at most [`MAX_SPANS`]. A
//!    `.json.gz` resumes inflating at the checkpoint pass 1 took before
//!    the blocks ([`trace::seekgz`], every 4 MiB of JSON) instead of
//!    inflating the file from its start.
//!
//! Which GPU work belongs to a step follows docs/analysis.md §3: work whose
//! launch (`args.correlation` → runtime call) lies in the step; work with
//! no launch among the events read is placed by its own start time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;

use super::idle::IdleGap;
use super::kernels::category;
use super::{Analyzer, busy, idle, kernel_index, model};
use crate::error::{Error, Result};
use crate::profile::{Category, Input};
use crate::trace::event::Id;
use crate::trace::kind::{span_ns, ts_ns};
use crate::trace::seekgz::Checkpoints;
use crate::trace::{self, Event, EventKind, EventSink, GpuWork, ReadOptions, RuntimeCall, Source};

/// Events per index block: about 140 kB of a Kineto trace, so a step's
/// re-read overshoots it by at most two blocks per contiguous run.
pub const BLOCK: u64 = 512;
/// Intervals kept for one step (all lanes together; about 48 bytes each).
/// A step with more shows its first `MAX_SPANS` and says so.
pub const MAX_SPANS: usize = 1_000_000;

/// One `ProfilerStep#N` (or the whole trace when it has no step markers).
#[derive(Debug, Clone, PartialEq)]
pub struct StepWindow {
    /// `None`: the trace has no step markers; this is its whole span.
    pub number: Option<u64>,
    /// Absolute trace time, ns.
    pub start: i64,
    pub end: i64,
    /// The loop thread that recorded the step (pid, tid as written).
    thread: Option<(String, String)>,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    offset: u64,
    min_ts: i64,
    max_ts: i64,
}

/// The steps of a trace and where their events are (pass 1).
#[derive(Debug, Clone)]
pub struct StepIndex {
    pub trace: PathBuf,
    pub steps: Vec<StepWindow>,
    blocks: Vec<Block>,
    /// Offset just past the last event.
    end_offset: u64,
    /// A `.json.gz`: where inflating can resume (zran-style), so a step
    /// far into the file opens without inflating all that comes before it.
    gz: Option<Arc<Checkpoints>>,
    /// Last timestamp of the trace (ns): how far a step's GPU work may lag.
    last_ts: i64,
    pub events: u64,
    /// How its steps are read again (the first read's settings, no bar).
    read: ReadOptions,
}

impl StepIndex {
    /// Bytes the index holds.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * size_of::<Block>()
            + self.steps.capacity() * size_of::<StepWindow>()
            + self.gz.as_ref().map_or(0, |g| g.heap_bytes())
    }
    /// The same index without its gzip checkpoints: a step then inflates
    /// the file from its start, as before them (the benchmark's "before").
    pub fn without_checkpoints(&self) -> StepIndex {
        StepIndex { gz: None, ..self.clone() }
    }
    /// How many gzip checkpoints the index holds.
    pub fn checkpoints(&self) -> usize {
        self.gz.as_ref().map_or(0, |g| g.len())
    }
    /// The position of step number `n`.
    pub fn find(&self, n: u64) -> Option<usize> {
        self.steps.iter().position(|s| s.number == Some(n))
    }
}

/// What kind of interval a lane holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    /// `step/<phase>` ranges of the loop thread.
    Phases,
    /// CPU ops of the loop thread not inside another op.
    Ops,
    /// One GPU stream: kernels, memcpys, memsets.
    Stream { device: i64, stream: i64 },
    /// The union of every stream's kernels.
    Busy,
    /// The step's critical path (docs/analysis.md §14): the work its end
    /// waited on, one node after another.
    Critical,
}

/// One interval of a lane, times in ns from the step's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    /// Index into [`Timeline::names`].
    pub name: u32,
    /// Index into [`Category::ALL`] for GPU work; `u8::MAX` otherwise.
    pub category: u8,
    /// The CPU op that launched it (innermost op around the runtime call),
    /// an index into [`Timeline::names`].
    pub launch: Option<u32>,
    pub correlation: Option<i64>,
}

impl Span {
    pub fn dur(&self) -> i64 {
        self.end - self.start
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub kind: LaneKind,
    pub label: String,
    /// Sorted by start.
    pub spans: Vec<Span>,
}

/// One step's lanes.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub step: StepWindow,
    /// Step length (ns); the view extends to `extent` when GPU work
    /// finishes after the step's CPU range.
    pub len: i64,
    pub extent: i64,
    pub lanes: Vec<Lane>,
    pub names: Vec<String>,
    /// The step had more than [`MAX_SPANS`] intervals: the rest are left out.
    pub truncated: bool,
    /// Complete (`X`) events re-read to build it.
    pub events_read: u64,
    /// The busiest GPU's idle gaps in the step, ns from its start, with
    /// what caused each (docs/analysis.md §12).
    pub idle: Vec<IdleGap>,
}

impl Timeline {
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
    pub fn category_name(c: u8) -> Option<&'static str> {
        Category::ALL.get(usize::from(c)).map(Category::as_str)
    }
    /// The GPU idle gap the span ended (one ending where it starts).
    pub fn idle_before(&self, s: &Span) -> Option<&IdleGap> {
        let i = self.idle.partition_point(|g| g.end < s.start);
        self.idle.get(i).filter(|g| g.end == s.start)
    }
    /// Idle time on the span's lane before it: since the previous span's
    /// end (or the step's start). Negative never: overlaps give 0.
    pub fn gap_before(&self, lane: usize, i: usize) -> i64 {
        let Some(l) = self.lanes.get(lane) else { return 0 };
        let Some(s) = l.spans.get(i) else { return 0 };
        let prev_end = l.spans[..i].iter().map(|p| p.end).max().unwrap_or(0).max(0);
        (s.start - prev_end).max(0)
    }
    /// Bytes the intervals and names hold.
    pub fn heap_bytes(&self) -> usize {
        let spans: usize = self
            .lanes
            .iter()
            .map(|l| l.spans.capacity() * size_of::<Span>() + l.label.capacity())
            .sum();
        spans + self.names.iter().map(|n| n.capacity() + size_of::<String>()).sum::<usize>()
    }
}

/// The trace behind an input, if it can be read again: the input itself
/// when it was a trace; for a profile, the trace its `trace` field names,
/// looked for beside the profile first (a capture's folder moves), then as
/// written (unless `follow_recorded` is false). `Err` says why there is
/// none.
pub fn trace_of(input: &Input, follow_recorded: bool) -> Result<PathBuf> {
    if input.from_trace {
        if input.path.as_os_str() == "-" || !input.path.is_file() {
            return Err(Error::failed("the trace was read from a stream and cannot be read again"));
        }
        return Ok(input.path.clone());
    }
    let folder = input.path.parent().unwrap_or(Path::new("."));
    let named = input.profile.trace.as_deref().map(PathBuf::from);
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(file) = named.as_ref().and_then(|n| n.file_name()) {
        let file = file.to_string_lossy();
        candidates.push(folder.join(file.as_ref()));
        candidates.push(folder.join(format!("{file}.gz")));
    }
    candidates.push(folder.join("profile_trace.json"));
    candidates.push(folder.join("profile_trace.json.gz"));
    if follow_recorded {
        candidates.extend(named.clone());
    }
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| match named {
        Some(n) => Error::failed(format!(
            "no timeline: the trace this profile was built from ({}) is not beside it",
            n.display()
        )),
        None => Error::failed("no timeline: this profile was written without a trace (--no-trace)"),
    })
}

fn id_text(id: Option<&Id<'_>>) -> String {
    match id {
        Some(Id::Int(v)) => v.to_string(),
        Some(Id::Str(s)) => s.to_string(),
        None => String::new(),
    }
}

/// Pass 1: the steps and the block index.
#[derive(Default)]
struct Indexer {
    steps: HashMap<u64, StepWindow>,
    blocks: Vec<Block>,
    n: u64,
    span: Option<(i64, i64)>,
    last_offset: u64,
}

impl EventSink for Indexer {
    fn at(&mut self, offset: u64) {
        if self.n % BLOCK == 0 {
            self.blocks.push(Block { offset, min_ts: i64::MAX, max_ts: i64::MIN });
        }
        self.n += 1;
        self.last_offset = offset;
    }

    fn event(&mut self, ev: &Event<'_>) {
        // Instants and flows have a time too: a block's range holds them.
        if !matches!(ev.ph(), "X" | "i" | "I" | "s" | "f" | "t") {
            return;
        }
        let Some(start) = ts_ns(ev.ts.get()) else { return };
        let end = start + span_ns(ev.ts.get(), ev.dur.get()).map_or(0, |(_, d)| d);
        if let Some(b) = self.blocks.last_mut() {
            b.min_ts = b.min_ts.min(start);
            b.max_ts = b.max_ts.max(end);
        }
        if matches!(ev.kind, EventKind::NoSpan | EventKind::Memory) {
            return;
        }
        self.span = Some(self.span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
        let name = ev.name();
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            if ev.kind == EventKind::GpuAnnotation {
                return;
            }
            let Ok(number) = n.trim().parse::<u64>() else { return };
            let thread = Some((id_text(ev.pid.as_ref()), id_text(ev.tid.as_ref())));
            let w = self.steps.entry(number).or_insert(StepWindow {
                number: Some(number),
                start,
                end,
                thread,
            });
            w.start = w.start.min(start);
            w.end = w.end.max(end);
        }
    }

    fn malformed(&mut self) {}

    /// A profile has no events to index.
    fn declines(&mut self, schema: &str) -> bool {
        schema.starts_with(crate::profile::SCHEMA_PREFIX)
    }
}

/// Pass 1 over the trace at `path`: its steps, in time order, and where
/// their events lie.
pub fn index(path: &Path, opts: &ReadOptions) -> Result<StepIndex> {
    index_spaced(path, trace::seekgz::SPACING, opts)
}

/// [`index`], with gzip checkpoints every `spacing` inflated bytes.
fn index_spaced(path: &Path, spacing: u64, opts: &ReadOptions) -> Result<StepIndex> {
    match read_indexed(path, spacing, &mut Ignore, opts)? {
        (trace::Document::Declined, _) => {
            Err(Error::failed(format!("{} is a profile, not a trace", path.display())))
        }
        (trace::Document::Trace(_), index) => index,
    }
}

/// One pass over the trace file at `path` that feeds `sink` and builds
/// the Timeline's index beside it (with gzip checkpoints every `spacing`
/// inflated bytes): the explorer's first read, so that opening a step
/// needs no pass of its own. The index's own `Err` says why the trace has
/// none (no events to draw). `opts.progress` draws a reader's bar on
/// stderr for a plain file; a gzip file read with checkpoints moves only a
/// caller's own bar ([`trace::Progress::To`]). The index keeps `opts` to
/// read its steps with.
pub fn read_indexed(
    path: &Path,
    spacing: u64,
    sink: &mut dyn EventSink,
    opts: &ReadOptions,
) -> Result<(trace::Document, Result<StepIndex>)> {
    let mut ix = Indexer::default();
    let points = Arc::new(Mutex::new(Checkpoints::default()));
    let gz = trace::input::is_gzip_file(path);
    let doc = {
        let mut both = trace::Tee(sink, &mut ix);
        if gz {
            trace::read_gz_recording(path, Arc::clone(&points), spacing, &mut both, opts)?
        } else {
            trace::read_source(&Source::path(path)?, &mut both, opts)?
        }
    };
    let index = ix.finish(path, gz.then_some(points), opts);
    Ok((doc, index))
}

/// A sink that keeps nothing: an index pass on its own.
struct Ignore;

impl EventSink for Ignore {
    fn event(&mut self, _: &Event<'_>) {}
    fn malformed(&mut self) {}
}

impl Indexer {
    /// The index of what the pass met (`points`: a gzip file's checkpoints).
    fn finish(
        self,
        path: &Path,
        points: Option<Arc<Mutex<Checkpoints>>>,
        opts: &ReadOptions,
    ) -> Result<StepIndex> {
        let mut steps: Vec<StepWindow> = self.steps.into_values().collect();
        steps.sort_by_key(|s| (s.start, s.number));
        let (first, last) =
            self.span.ok_or_else(|| Error::failed("the trace has no events to draw"))?;
        if steps.is_empty() {
            steps.push(StepWindow { number: None, start: first, end: last, thread: None });
        }
        // An offset past the last element's start: the end of the last block.
        let end_offset = self.last_offset + 1;
        let gz = points
            .map(|p| Arc::new(std::mem::take(&mut *p.lock().unwrap_or_else(|e| e.into_inner()))));
        Ok(StepIndex {
            trace: path.to_path_buf(),
            steps,
            blocks: self.blocks,
            end_offset,
            gz,
            last_ts: last,
            events: self.n,
            read: opts.with_progress(trace::Progress::Off),
        })
    }
}

/// The byte spans of the blocks meeting `[from, to]` (absolute ns), minus
/// the blocks `done` already read; marks them read.
fn spans_for(ix: &StepIndex, from: i64, to: i64, done: &mut [bool]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (i, b) in ix.blocks.iter().enumerate() {
        if done[i] || b.max_ts < from || b.min_ts > to {
            continue;
        }
        done[i] = true;
        let end = ix.blocks.get(i + 1).map_or(ix.end_offset, |n| n.offset);
        match out.last_mut() {
            Some(last) if last.1 == b.offset => last.1 = end,
            _ => out.push((b.offset, end)),
        }
    }
    out
}

#[derive(Debug, Clone, Copy)]
struct Gpu {
    start: i64,
    end: i64,
    name: u32,
    device: i64,
    stream: i64,
    kernel: bool,
    correlation: Option<i64>,
}

#[derive(Debug, Clone, Copy)]
struct Launch {
    thread: u32,
    ts: i64,
}

/// Pass 2 over one step's blocks: everything that can land on its lanes.
struct StepReader<'a> {
    step: &'a StepWindow,
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    threads: HashMap<(String, String), u32>,
    /// Ops per thread: (start, end, name).
    ops: HashMap<u32, Vec<(i64, i64, u32)>>,
    phases: Vec<(i64, i64, u32)>,
    launches: HashMap<i64, Launch>,
    gpu: Vec<Gpu>,
    events: u64,
    truncated: bool,
    /// The same events through the analysis, for the idle gaps' causes.
    idle: Analyzer,
}

impl StepReader<'_> {
    fn name(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.name_ids.insert(s.to_string(), id);
        id
    }
    fn thread(&mut self, ev: &Event<'_>) -> u32 {
        let key = (id_text(ev.pid.as_ref()), id_text(ev.tid.as_ref()));
        let next = self.threads.len() as u32;
        *self.threads.entry(key).or_insert(next)
    }
    fn kept(&self) -> usize {
        self.gpu.len() + self.phases.len() + self.ops.values().map(Vec::len).sum::<usize>()
    }
    fn in_step(&self, ts: i64) -> bool {
        ts >= self.step.start && ts < self.step.end
    }
}

impl EventSink for StepReader<'_> {
    fn event(&mut self, ev: &Event<'_>) {
        self.idle.event(ev);
        if matches!(ev.kind, EventKind::NoSpan | EventKind::Memory) {
            return;
        }
        self.events += 1;
        let Some((start, dur)) = span_ns(ev.ts.get(), ev.dur.get()) else { return };
        let end = start + dur;
        if self.kept() >= MAX_SPANS {
            self.truncated = true;
            return;
        }
        let name = ev.name();
        match ev.kind {
            EventKind::Annotation | EventKind::CpuOp => {
                if !self.in_step(start) {
                    return;
                }
                let thread = self.thread(ev);
                if let Some(phase) = name.strip_prefix("step/") {
                    let key = (id_text(ev.pid.as_ref()), id_text(ev.tid.as_ref()));
                    if self.step.thread.as_ref().is_none_or(|t| *t == key) {
                        let id = self.name(phase);
                        self.phases.push((start, end, id));
                    }
                } else if ev.kind == EventKind::CpuOp && !name.starts_with("ProfilerStep#") {
                    let id = self.name(name);
                    self.ops.entry(thread).or_default().push((start, end, id));
                }
            }
            EventKind::Runtime => {
                // Only calls that put work on the GPU (docs/analysis.md §3):
                // a sync has a correlation id too, and no work to wait for.
                let launch = RuntimeCall::of(name).launch;
                if let Some(c) = ev.correlation().filter(|_| launch) {
                    if self.in_step(start) {
                        let thread = self.thread(ev);
                        self.launches.insert(c, Launch { thread, ts: start });
                    } else {
                        // Launched outside the step: its work is another step's.
                        self.launches.insert(c, Launch { thread: u32::MAX, ts: start });
                    }
                }
            }
            EventKind::Gpu(work) => {
                // Work never starts before its launch: what starts before
                // the step is an earlier step's.
                if start < self.step.start {
                    return;
                }
                let id = self.name(name);
                self.gpu.push(Gpu {
                    start,
                    end,
                    name: id,
                    device: ev.gpu_device(),
                    stream: ev.gpu_stream(),
                    kernel: work == GpuWork::Kernel,
                    correlation: ev.correlation(),
                });
            }
            _ => {}
        }
    }
    fn malformed(&mut self) {
        self.idle.malformed();
    }
}

/// Pass 2: the lanes of step `i` of `ix`.
pub fn open_step(ix: &StepIndex, i: usize) -> Result<Timeline> {
    let step = ix.steps.get(i).ok_or_else(|| Error::usage(format!("no step {i}")))?;
    let src = Source::path(&ix.trace)?;
    let mut r = StepReader {
        step,
        names: Vec::new(),
        name_ids: HashMap::default(),
        threads: HashMap::default(),
        ops: HashMap::default(),
        phases: Vec::new(),
        launches: HashMap::default(),
        gpu: Vec::new(),
        events: 0,
        truncated: false,
        idle: Analyzer::default(),
    };
    let mut done = vec![false; ix.blocks.len()];
    // GPU work runs after its launch: widen the window while that finds
    // the work of launches still waiting (a launch whose work the trace
    // never recorded must not drag the whole file in), or the trace ends.
    let mut to = step.end;
    let mut found = 0;
    loop {
        let spans = spans_for(ix, step.start, to, &mut done);
        trace::read_spans(&src, &spans, ix.gz.as_deref(), &mut r, &ix.read)?;
        let seen: std::collections::HashSet<i64> =
            r.gpu.iter().filter_map(|g| g.correlation).collect();
        let mine = r.launches.iter().filter(|(_, l)| l.thread != u32::MAX);
        let (now, all) =
            mine.fold((0, 0), |(n, a), (c, _)| (n + usize::from(seen.contains(c)), a + 1));
        if now == all || to >= ix.last_ts || (to > step.end && now == found) {
            break;
        }
        found = now;
        to = to.saturating_add((to - step.start).max(1_000_000));
    }
    Ok(build(r, step))
}

fn build(mut r: StepReader<'_>, step: &StepWindow) -> Timeline {
    let s0 = step.start;
    // The innermost op around each launch, per thread (a sweep with a
    // stack of open ops).
    let mut launch_op: HashMap<i64, u32> = HashMap::default();
    let mut by_thread: HashMap<u32, Vec<(i64, i64)>> = HashMap::default();
    for (&c, l) in &r.launches {
        if l.thread != u32::MAX {
            by_thread.entry(l.thread).or_default().push((l.ts, c));
        }
    }
    for ops in r.ops.values_mut() {
        ops.sort_by_key(|o| (o.0, std::cmp::Reverse(o.1)));
    }
    for (thread, mut calls) in by_thread {
        calls.sort_unstable();
        let ops = r.ops.get(&thread).map_or(&[][..], Vec::as_slice);
        let mut stack: Vec<(i64, u32)> = Vec::new();
        let mut k = 0;
        for (ts, c) in calls {
            while k < ops.len() && ops[k].0 <= ts {
                while stack.last().is_some_and(|t| t.0 <= ops[k].0) {
                    stack.pop();
                }
                stack.push((ops[k].1, ops[k].2));
                k += 1;
            }
            while stack.last().is_some_and(|t| t.0 <= ts) {
                stack.pop();
            }
            if let Some(&(_, name)) = stack.last() {
                launch_op.insert(c, name);
            }
        }
    }

    let mut lanes = Vec::new();
    let rel = |t: i64| t - s0;
    if !r.phases.is_empty() {
        r.phases.sort_by_key(|p| p.0);
        let spans = r.phases.iter().map(|&(s, e, n)| Span {
            start: rel(s),
            end: rel(e),
            name: n,
            category: u8::MAX,
            launch: None,
            correlation: None,
        });
        lanes.push(Lane { kind: LaneKind::Phases, label: "phases".into(), spans: spans.collect() });
    }
    // The loop thread: the step's own, else the thread with the most ops.
    let loop_thread = step
        .thread
        .as_ref()
        .and_then(|t| r.threads.get(t).copied())
        .or_else(|| r.ops.iter().max_by_key(|(_, v)| v.len()).map(|(t, _)| *t));
    if let Some(ops) = loop_thread.and_then(|t| r.ops.get(&t)) {
        let mut top = Vec::new();
        let mut open_until = i64::MIN;
        for &(s, e, n) in ops {
            if s >= open_until {
                top.push(Span {
                    start: rel(s),
                    end: rel(e),
                    name: n,
                    category: u8::MAX,
                    launch: None,
                    correlation: None,
                });
                open_until = e;
            }
        }
        lanes.push(Lane { kind: LaneKind::Ops, label: "CPU ops".into(), spans: top });
    }

    // GPU work of the step: launched in it, or (no launch read) started in it.
    let mut cats: HashMap<u32, u8> = HashMap::default();
    let mut streams: std::collections::BTreeMap<(i64, i64), Vec<Span>> = Default::default();
    let mut busy_iv: Vec<(i64, i64)> = Vec::new();
    for g in &r.gpu {
        let launch = g.correlation.and_then(|c| r.launches.get(&c));
        let mine = match launch {
            Some(l) => l.thread != u32::MAX,
            None => g.start >= step.start && g.start < step.end,
        };
        if !mine {
            continue;
        }
        let names = &r.names;
        let cat = *cats.entry(g.name).or_insert_with(|| {
            let c = category(&names[g.name as usize]);
            c.index().map_or(u8::MAX, |p| p as u8)
        });
        let op = g.correlation.and_then(|c| launch_op.get(&c).copied());
        streams.entry((g.device, g.stream)).or_default().push(Span {
            start: rel(g.start),
            end: rel(g.end),
            name: g.name,
            category: cat,
            launch: op,
            correlation: g.correlation,
        });
        if g.kernel {
            busy_iv.push((rel(g.start), rel(g.end)));
        }
    }
    let several_devices =
        streams.keys().map(|k| k.0).collect::<std::collections::BTreeSet<_>>().len() > 1;
    for ((device, stream), mut spans) in streams {
        spans.sort_by_key(|s| (s.start, s.end));
        let label = if several_devices {
            format!("GPU{device} s{stream}")
        } else {
            format!("stream {stream}")
        };
        lanes.push(Lane { kind: LaneKind::Stream { device, stream }, label, spans });
    }
    let busy_name = {
        let id = r.names.len() as u32;
        r.names.push("GPU busy".into());
        id
    };
    let merged = busy::merge(&mut busy_iv);
    if !merged.is_empty() {
        let spans = merged.iter().map(|&(s, e)| Span {
            start: s,
            end: e,
            name: busy_name,
            category: u8::MAX,
            launch: None,
            correlation: None,
        });
        lanes.push(Lane { kind: LaneKind::Busy, label: "GPU busy".into(), spans: spans.collect() });
    }
    // The critical path, from the same events (the step model).
    let path = r.idle.critical_path(step.start, step.end);
    if !path.is_empty() {
        let mut spans = Vec::with_capacity(path.len());
        for (s, e, name, class) in path {
            let category = match class {
                Some(c) if usize::from(c) < Category::ALL.len() => c,
                Some(_) => category(&name).index().map_or(u8::MAX, |p| p as u8),
                None => u8::MAX,
            };
            let id = r.name(&name);
            spans.push(Span {
                start: rel(s),
                end: rel(e),
                name: id,
                category,
                launch: None,
                correlation: None,
            });
        }
        lanes.push(Lane { kind: LaneKind::Critical, label: "crit. path".into(), spans });
    }
    let len = step.end - step.start;
    let extent =
        lanes.iter().flat_map(|l| l.spans.iter().map(|s| s.end)).max().unwrap_or(len).max(len);
    let idle = r
        .idle
        .idle_gaps(step.start, step.end)
        .into_iter()
        .map(|g| IdleGap { start: g.start - s0, end: g.end - s0, causes: g.causes })
        .collect();
    Timeline {
        step: step.clone(),
        len,
        extent,
        lanes,
        names: r.names,
        truncated: r.truncated,
        events_read: r.events,
        idle,
    }
}

impl Analyzer {
    /// The GPU's idle gaps inside `[start, end)` with their causes
    /// (docs/analysis.md §12), from the events fed so far: the Timeline
    /// pane's step, re-read.
    pub fn idle_gaps(&self, start: i64, end: i64) -> Vec<IdleGap> {
        let label = |n: u32| self.rec.names.get(n).to_string();
        let index = kernel_index::KernelIndex::of(&self.rec.gpu);
        let beside = idle::Beside { before_sweep: &|| (), share: &idle::GroupSweeps::default() };
        idle::account(&self.rec, &index, &[(start, end)], 1.0, &label, true, beside)
            .and_then(|a| a.gaps)
            .map_or_else(Vec::new, |g| g.each(&self.rec.names, &label))
    }

    /// The critical path of `[start, end)` (docs/analysis.md §14) from the
    /// events fed so far: the Timeline pane's step, re-read. Its stretches
    /// in time order: start, end, what it is (a kernel's name, or the
    /// part's), and the GPU class of GPU work.
    pub fn critical_path(&self, start: i64, end: i64) -> Vec<(i64, i64, String, Option<u8>)> {
        let (Some(m), _) =
            model::of_pass(&self.rec, &self.rec.gpu.kernel_classes, &[(start, end)], false)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const NCCL: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traces/hta_nccl_a100_2024/nccl_data.json.gz"
    );

    #[test]
    fn a_step_reads_the_same_from_gzip_and_plain_json_and_only_its_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let plain = plain_copy(NCCL, &dir);
        let (gz, js) = (
            index(Path::new(NCCL), &ReadOptions::default()).unwrap(),
            index(&plain, &ReadOptions::default()).unwrap(),
        );
        assert_eq!(gz.steps, js.steps);
        assert_eq!(
            gz.steps.iter().map(|s| s.number).collect::<Vec<_>>(),
            [Some(4), Some(5), Some(6)]
        );
        for i in 0..gz.steps.len() {
            let (a, b) = (open_step(&gz, i).unwrap(), open_step(&js, i).unwrap());
            assert_eq!(a, b, "step {i}");
            assert!(
                a.events_read < gz.events / 2,
                "step {i} re-read {} of {} events",
                a.events_read,
                gz.events
            );
            // Lanes are sorted, and the busy lane is the union of the streams.
            for l in &a.lanes {
                assert!(l.spans.windows(2).all(|w| w[0].start <= w[1].start), "{}", l.label);
            }
            let busy: i64 = a
                .lanes
                .iter()
                .filter(|l| l.kind == LaneKind::Busy)
                .flat_map(|l| &l.spans)
                .map(Span::dur)
                .sum();
            let kernels: i64 = a
                .lanes
                .iter()
                .filter(|l| matches!(l.kind, LaneKind::Stream { .. }))
                .flat_map(|l| &l.spans)
                .map(Span::dur)
                .sum();
            assert!(busy > 0 && busy <= kernels);
        }
    }

    #[test]
    fn a_gzip_step_resumes_at_a_checkpoint_and_reads_the_same() {
        // Checkpoints every 64 KiB: the later steps resume mid-file.
        let ix = index_spaced(Path::new(NCCL), 64 << 10, &ReadOptions::default()).unwrap();
        let points = ix.gz.as_ref().expect("a gzip trace keeps checkpoints");
        assert!(points.len() > 8, "{} checkpoints", points.len());
        let dir = tempfile::tempdir().unwrap();
        let js = index(&plain_copy(NCCL, &dir), &ReadOptions::default()).unwrap();
        let last = ix.steps.len() - 1;
        let first_block =
            ix.blocks.iter().find(|b| b.max_ts >= ix.steps[last].start).unwrap().offset;
        assert!(points.before(first_block).unwrap() > 0, "the last step resumes past the start");
        for i in 0..ix.steps.len() {
            assert_eq!(open_step(&ix, i).unwrap(), open_step(&js, i).unwrap(), "step {i}");
        }
    }

    fn plain_copy(gz: &str, dir: &tempfile::TempDir) -> PathBuf {
        let plain = dir.path().join("plain.json");
        let mut out = std::fs::File::create(&plain).unwrap();
        std::io::copy(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap()),
            &mut out,
        )
        .unwrap();
        plain
    }

    #[test]
    fn a_trace_without_step_markers_is_one_step() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/hta_alexnet_a100_nosteps/benchmark_result_2869224_1695835535_trace.json.gz"
        );
        let ix = index(Path::new(p), &ReadOptions::default()).unwrap();
        assert_eq!(ix.steps.len(), 1);
        assert_eq!(ix.steps[0].number, None);
        let tl = open_step(&ix, 0).unwrap();
        assert!(
            tl.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Stream { .. })).count() >= 2,
            "streams 7 and 20"
        );
    }

    #[test]
    fn each_gap_in_the_gpu_busy_lane_says_why_the_gpu_waited() {
        let ix = index(Path::new(NCCL), &ReadOptions::default()).unwrap();
        let tl = open_step(&ix, 1).unwrap();
        let busy = &tl.lanes.iter().find(|l| l.kind == LaneKind::Busy).unwrap().spans;
        // The lane's own union, clipped to the step: its complement is the idle.
        let mut want: Vec<(i64, i64)> = Vec::new();
        let mut at = 0;
        for b in busy.iter().filter(|b| b.end > 0 && b.start < tl.len) {
            if b.start > at {
                want.push((at, b.start));
            }
            at = at.max(b.end);
        }
        if at < tl.len {
            want.push((at, tl.len));
        }
        let got: Vec<(i64, i64)> = tl.idle.iter().map(|g| (g.start, g.end)).collect();
        assert_eq!(got, want);
        for g in &tl.idle {
            assert_eq!(g.causes.iter().map(|c| c.1).sum::<i64>(), g.end - g.start, "{g:?}");
            assert!(g.causes.iter().all(|c| !c.2.is_empty()), "each cause names its place: {g:?}");
            assert!(
                g.causes.iter().enumerate().all(|(i, c)| g.causes[..i].iter().all(|d| d.0 != c.0)),
                "each cause once: {g:?}"
            );
        }
        // The kernel that ends a gap carries it.
        let next = busy.iter().find(|b| b.start == tl.idle[1].end).unwrap();
        assert_eq!(tl.idle_before(next), Some(&tl.idle[1]));
        // A kernel that starts while the GPU is already busy ended no gap.
        let inside = tl
            .lanes
            .iter()
            .filter(|l| matches!(l.kind, LaneKind::Stream { .. }))
            .flat_map(|l| l.spans.iter())
            .find(|s| busy.iter().any(|b| b.start < s.start && s.start < b.end))
            .expect("a kernel starting inside a busy interval");
        assert_eq!(tl.idle_before(inside), None);
    }
}
