//! Trace health (docs/analysis.md §15): what about the recorded window
//! makes its figures or its verdict less true, checked before the verdict
//! is printed. Each check is a small function over what the pass saw; a
//! finding that leaves the window unable to support a verdict makes the
//! verdict `cannot tell`, with how to record a trace that can.

use std::collections::BTreeMap;

use crate::profile::{HealthCheck, HealthRow, Severity};

const MS: f64 = 1e6;

/// A backlog from this share of the window up leaves no verdict: the
/// window's figures are as much the earlier work's as the steps' own.
pub const BACKLOG_CANNOT_TELL: f64 = 0.25;
/// Smaller findings than this share of the window (and than
/// [`MIN_FINDING_NS`]) are not reported: they change no figure shown.
pub const MIN_SHARE: f64 = 0.02;
pub const MIN_FINDING_NS: i64 = 500_000;
/// The GPU falls behind the host when, step after step, it takes this
/// much longer than the host's markers say.
pub const BEHIND_RATIO: f64 = 1.05;
/// A lone step whose GPU work runs past its end by this share of it.
pub const TRAIL_SHARE: f64 = 0.10;
/// A first step this many times the others' median is warm-up.
pub const SLOW_FIRST: f64 = 2.0;
/// Compilation taking this share of the window leaves no verdict.
pub const COMPILE_CANNOT_TELL: f64 = 0.25;
/// Launch calls without one GPU event from this many up: the GPU side
/// was not recorded.
pub const UNTIMED_LAUNCHES: u64 = 10;
/// Kernel launch calls in the steps without their kernel, from this share
/// of them (and [`UNTIMED_LAUNCHES`]) up: the GPU side was recorded in part.
pub const LOST_SHARE: f64 = 0.02;
/// From this share up the figures miss too much of the GPU's work for a
/// verdict.
pub const LOST_CANNOT_TELL: f64 = 0.25;
/// GPU events starting before their launch call, from this share of
/// them (and [`UNTIMED_LAUNCHES`]) up: the clocks disagree.
pub const SKEW_SHARE: f64 = 0.01;
/// From this share up no wait of the host on the GPU can be told.
pub const SKEW_CANNOT_TELL: f64 = 0.10;

/// Category prefixes of devices whose events this reader does not read
/// (Kineto's activity types for them).
const UNREAD_DEVICES: [(&str, &str); 7] = [
    ("mtia", "MTIA"),
    ("hpu", "Gaudi (HPU)"),
    ("xpu", "Intel XPU"),
    ("privateuse1", "a PrivateUse1 backend"),
    ("glow", "Glow"),
    ("npu", "an NPU"),
    ("mlu", "an MLU"),
];
/// Kineto's category for CUPTI range (counter) profiling.
const COUNTER_RANGES: &str = "cuda_profiler_range";

/// Names of host ranges and Python frames that mean torch.compile is
/// compiling or autotuning, not running compiled code (whose frames,
/// `compile_fx.py(…): wrapper` among them, run on every call).
const COMPILING: [&str; 6] = [
    "(dynamo_timed)",
    "torch/_dynamo/convert_frame.py",
    "compile_fx_inner",
    "fx_codegen_and_compile",
    "torch/_inductor/select_algorithm.py",
    "torch/_inductor/async_compile.py",
];

/// What the pass notes for the checks.
#[derive(Debug, Default)]
pub struct Seen {
    /// End of the last event recorded, step markers aside.
    pub recorded_end: Option<i64>,
    /// End of the profiler's session (Kineto's `Trace` span), when written.
    pub session_end: Option<i64>,
    /// The GPU-side `ProfilerStep#N` ranges (`gpu_user_annotation`).
    pub gpu_steps: BTreeMap<u64, (i64, i64)>,
    /// Complete events of categories the reader does not read: (category,
    /// count). Few distinct ones: a list.
    pub unread: Vec<(String, u64)>,
    /// Runtime calls that put work on the GPU.
    pub launch_calls: u64,
    /// Kernel launch calls inside the steps that no kernel was met for
    /// (graph launches and launches in a graph capture aside).
    pub unmet_launches: u64,
    /// Kernels whose launch call is inside the steps.
    pub met_launches: u64,
    /// Host ranges and Python frames of compilation or autotuning.
    pub compiling: Vec<(i64, i64)>,
    /// Steps cut back to the last recorded event: (N, ns cut).
    pub cut: Vec<(u64, i64)>,
    /// The last step left out as the profiler stopping: (N, its ns).
    pub stub: Option<(u64, i64)>,
    /// The longest runtime call that does not wait for the GPU: (name,
    /// start, ns).
    pub longest_call: Option<(String, i64, i64)>,
    /// The earliest synchronising calls of [`MIN_FINDING_NS`] or more,
    /// (start, end, name), in time order: [`EARLY_SYNCS`] at most.
    pub early_syncs: Vec<(i64, i64, String)>,
}

/// The synchronising calls kept for the backlog check: those of the
/// first step, before its own GPU work, are among the earliest.
pub const EARLY_SYNCS: usize = 16;

impl Seen {
    pub fn note_end(&mut self, end: i64) {
        self.recorded_end = Some(self.recorded_end.map_or(end, |e| e.max(end)));
    }

    /// A complete event of a category the reader does not read.
    pub fn note_other(&mut self, category: &str, end: i64) {
        if category == "Trace" {
            self.session_end = Some(self.session_end.map_or(end, |e| e.max(end)));
        } else {
            self.note_unread(category);
        }
    }

    /// Where a step marker that runs past the recording is cut, and
    /// whether a tail `past` ns long of a step `len` long is worth cutting:
    /// past the profiler's session end (its `Trace` span) by a tenth of the
    /// step; without one, by more than was recorded of the step (a step
    /// can end in pure Python that records nothing, but not mostly).
    pub fn cut_at(&self, events_end: Option<i64>) -> Option<(i64, bool)> {
        let end = events_end.max(self.recorded_end);
        match self.session_end {
            Some(s) => Some((end.map_or(s, |e| e.max(s)), true)),
            None => end.map(|e| (e, false)),
        }
    }

    /// A runtime call that does not wait for the GPU.
    pub fn note_call(&mut self, name: &str, start: i64, dur: i64) {
        if self.longest_call.as_ref().is_none_or(|c| dur > c.2) {
            self.longest_call = Some((name.to_string(), start, dur));
        }
    }

    /// A synchronising call: kept when long and among the earliest.
    pub fn note_sync(&mut self, name: &str, start: i64, dur: i64) {
        let full = self.early_syncs.len() >= EARLY_SYNCS;
        if dur < MIN_FINDING_NS || full && self.early_syncs.last().is_some_and(|s| s.0 <= start) {
            return;
        }
        let at = self.early_syncs.partition_point(|s| s.0 <= start);
        self.early_syncs.insert(at, (start, start + dur, name.to_string()));
        self.early_syncs.truncate(EARLY_SYNCS);
    }

    pub fn note_unread(&mut self, category: &str) {
        match self.unread.iter_mut().find(|(c, _)| c == category) {
            Some((_, n)) => *n += 1,
            None => self.unread.push((category.to_string(), 1)),
        }
    }

    /// A host range or Python frame: kept when it is compilation.
    pub fn note_host_range(&mut self, name: &str, start: i64, end: i64) {
        if COMPILING.iter().any(|c| name.contains(c)) {
            self.compiling.push((start, end));
        }
    }
}

/// One piece of GPU work: its interval and when its launch began (None:
/// the trace has no launch for it).
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub start: i64,
    pub end: i64,
    pub launch: Option<(i64, i64)>,
}

/// The window the checks read.
pub struct CheckedWindow<'a> {
    /// `ProfilerStep#N`: (N, start, end), in time order (empty: no steps).
    pub numbered: &'a [(u64, i64, i64)],
    /// The measured steps as intervals (the whole trace as one without
    /// steps).
    pub steps: &'a [(i64, i64)],
    pub gpu_events: u64,
    pub graph_captures: u64,
    /// GPU events whose correlation id names a launch that began after
    /// them: not paired with it.
    pub launch_after_work: u64,
    /// Step numbers recorded apart in time, with how many times.
    pub repeated: &'a [(u64, u32)],
    /// The steps were inferred, not recorded (docs/analysis.md §2).
    pub inferred_steps: bool,
}

impl CheckedWindow<'_> {
    /// What the output calls step `n`.
    fn step(&self, n: u64) -> String {
        crate::analysis::ranges::step_name(self.inferred_steps, n)
    }
}

/// Every finding, most severe first.
pub fn check<I>(seen: &Seen, w: &CheckedWindow<'_>, work: impl Fn() -> I) -> Vec<HealthRow>
where
    I: Iterator<Item = Work>,
{
    let wall: i64 = w.steps.iter().map(|(s, e)| e - s).sum();
    let mut rows: Vec<HealthRow> = [
        empty_steps(w),
        repeated_steps(w),
        no_gpu_timings(seen, w),
        clock_skew(w),
        lost_gpu_events(seen, w),
        unread_device(seen, w),
        backlog(seen, w, wall, work()),
        gpu_behind(seen, w, work()),
        compilation(seen, w, wall),
        graph_capture(w),
    ]
    .into_iter()
    .flatten()
    .chain(step_past_end(seen, w))
    .chain(stub_step(seen, w))
    .chain(slow_first_step(w))
    .chain(start_up(seen, w, wall, work()))
    .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(rank(&r.severity)));
    rows
}

fn rank(s: &Severity) -> u8 {
    match s {
        Severity::CannotTell => 2,
        Severity::Caution => 1,
        _ => 0,
    }
}

fn row(
    check: HealthCheck,
    severity: Severity,
    says: String,
    ms: Option<f64>,
    how: &str,
) -> HealthRow {
    HealthRow {
        check,
        severity,
        says,
        ms: ms.map(|v| (v * 1000.0).round() / 1000.0),
        recapture: how.into(),
    }
}

fn notable(ns: i64, wall: i64) -> bool {
    ns >= MIN_FINDING_NS && ns as f64 >= MIN_SHARE * wall as f64
}

const WARM_UP: &str = "record after a warm-up step, with the GPU idle when recording starts: torch.profiler.schedule(wait=1, warmup=1, active=N), or torch.cuda.synchronize() before the profiler starts";

/// Launches recorded, and not one GPU event: the GPU side is missing
/// (CUPTI counter profiling, or CUDA activity not recorded).
fn no_gpu_timings(seen: &Seen, w: &CheckedWindow<'_>) -> Option<HealthRow> {
    if w.gpu_events > 0 || seen.launch_calls < UNTIMED_LAUNCHES {
        return None;
    }
    let counters = seen.unread.iter().find(|(c, _)| c == COUNTER_RANGES);
    let why = match counters {
        Some((_, n)) => format!(
            "a counter-profiling trace: {} kernel launches and {n} `{COUNTER_RANGES}` counter ranges, but no kernel, copy or set with its time",
            seen.launch_calls
        ),
        None => format!(
            "{} kernel launches recorded, but no kernel, copy or set ran in the trace: the GPU side was not recorded",
            seen.launch_calls
        ),
    };
    Some(row(
        HealthCheck::NoGpuTimings,
        Severity::CannotTell,
        why,
        None,
        "record GPU activity: activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], without CUPTI range or counter profiling",
    ))
}

/// Every step marker lasts no time: there is no step to put a figure on.
fn empty_steps(w: &CheckedWindow<'_>) -> Option<HealthRow> {
    if w.numbered.is_empty() || w.numbered.iter().any(|&(_, s, e)| e > s) {
        return None;
    }
    Some(row(
        HealthCheck::EmptySteps,
        Severity::CannotTell,
        format!(
            "all {} ProfilerStep markers last 0 µs: the steps hold no time, so no figure per step is a step's",
            w.numbered.len()
        ),
        None,
        "record with torch.profiler.profile(schedule=…) and call prof.step() once per iteration, so that each ProfilerStep range spans its iteration",
    ))
}

/// Step names recorded again far from their first range: several
/// recordings joined in one file (or a restarted step counter). Each
/// name is one step spanning all its ranges, so a step's figures are
/// those of a span that holds others' time.
fn repeated_steps(w: &CheckedWindow<'_>) -> Option<HealthRow> {
    let (&(first, k), rest) = w.repeated.split_first()?;
    let shown = match rest.last() {
        Some(&(last, _)) => format!("ProfilerStep#{first} to #{last} ({} names)", w.repeated.len()),
        None => format!("ProfilerStep#{first}"),
    };
    Some(row(
        HealthCheck::RepeatedSteps,
        Severity::CannotTell,
        format!(
            "{shown} recorded {k} times at different times: the file joins several recordings (or the step counter restarted); each name is read as one step spanning all of its ranges, so no figure per step is a step's"
        ),
        None,
        "analyse each recording on its own (one trace per file; a folder of one trace per rank reads as a job)",
    ))
}

/// GPU work that starts before the call carrying its correlation id:
/// impossible on one clock, so the host's and the GPU's clocks disagree
/// (or the file merges processes whose ids collide). Such work is placed
/// by its own time, and the step model cannot order host and GPU.
fn clock_skew(w: &CheckedWindow<'_>) -> Option<HealthRow> {
    let n = w.launch_after_work;
    let share = n as f64 / w.gpu_events.max(1) as f64;
    if n < UNTIMED_LAUNCHES || share < SKEW_SHARE {
        return None;
    }
    let severity = if share >= SKEW_CANNOT_TELL { Severity::CannotTell } else { Severity::Caution };
    Some(row(
        HealthCheck::ClockSkew,
        severity,
        format!(
            "{n} of {} GPU events ({:.0}%) start before the launch call that carries their correlation id: the host's and the GPU's clocks disagree (or the file merges processes whose ids collide); they are placed by their own time, and what the host waited for cannot be told from the times",
            w.gpu_events,
            share * 100.0
        ),
        None,
        "record the host and the GPU in one profiler session, on one machine; a merged file: analyse each process's trace on its own",
    ))
}

/// Launch calls in the steps without the GPU work they put on a queue:
/// the GPU side was recorded in part (CUPTI dropped activity records, or
/// they were taken out), so busy time, idle and the step model miss it.
fn lost_gpu_events(seen: &Seen, w: &CheckedWindow<'_>) -> Option<HealthRow> {
    // Work that began before its launch is the skew's finding: its calls
    // are unmet too.
    let n = seen.unmet_launches.saturating_sub(w.launch_after_work);
    let all = n + seen.met_launches;
    let share = n as f64 / all.max(1) as f64;
    if w.gpu_events == 0 || n < UNTIMED_LAUNCHES || share < LOST_SHARE {
        return None;
    }
    let severity = if share >= LOST_CANNOT_TELL { Severity::CannotTell } else { Severity::Caution };
    Some(row(
        HealthCheck::LostGpuEvents,
        severity,
        format!(
            "{n} of {all} kernel launches in the steps ({:.0}%) have no kernel: the GPU side was recorded in part, so GPU busy time, idle time and the step model miss that work",
            share * 100.0
        ),
        None,
        "record again with fewer active steps (torch.profiler.schedule(active=N)) so that CUPTI's activity buffers do not overflow, and keep the GPU events when trimming a trace",
    ))
}

fn unread_device(seen: &Seen, w: &CheckedWindow<'_>) -> Option<HealthRow> {
    let found: Vec<(&str, &str, u64)> = seen
        .unread
        .iter()
        .filter_map(|(c, n)| {
            let lower = c.to_ascii_lowercase();
            UNREAD_DEVICES
                .iter()
                .find(|(p, _)| lower.starts_with(p))
                .map(|(_, d)| (c.as_str(), *d, *n))
        })
        .collect();
    let (_, device, _) = *found.first()?;
    let events: Vec<String> = found.iter().map(|(c, _, n)| format!("{n} `{c}`")).collect();
    let (severity, tail) = if w.gpu_events == 0 {
        (
            Severity::CannotTell,
            "and no GPU event this reader reads: the device's work is not in any figure",
        )
    } else {
        (Severity::Caution, "beside the GPU events it reads: that device's work is in no figure")
    };
    Some(row(
        HealthCheck::UnreadDevice,
        severity,
        format!(
            "the trace records {device}: {} events this reader does not read, {tail}",
            events.join(", ")
        ),
        None,
        "",
    ))
}

/// GPU work launched before the recording (or before the first step) that
/// ran inside the first step, and a first kernel, or a synchronising call
/// before it, that waited with nothing recorded running: work queued
/// before the window.
fn backlog(
    seen: &Seen,
    w: &CheckedWindow<'_>,
    wall: i64,
    work: impl Iterator<Item = Work>,
) -> Option<HealthRow> {
    let &(s0, e0) = w.steps.first()?;
    // A trace without one launch call (the GPU side alone recorded) says
    // nothing of when its work was launched: no backlog can be told.
    if seen.launch_calls == 0 {
        return None;
    }
    let mut earlier: Vec<(i64, i64)> = Vec::new();
    // The first piece of work launched in the window, by start.
    let mut first_own: Option<Work> = None;
    // The first step's long syncs, and the recorded work under each.
    let syncs: Vec<&(i64, i64, String)> =
        seen.early_syncs.iter().filter(|s| s.0 >= s0 && s.0 < e0).collect();
    let mut under: Vec<Vec<(i64, i64)>> = vec![Vec::new(); syncs.len()];
    for k in work {
        for (s, u) in syncs.iter().zip(under.iter_mut()) {
            if k.start < s.1 && k.end > s.0 {
                u.push((k.start.max(s.0), k.end.min(s.1)));
            }
        }
        if k.end <= s0 || k.start >= e0 {
            continue;
        }
        match k.launch {
            Some((l, _)) if l >= s0 => {
                if first_own.is_none_or(|f| k.start < f.start) {
                    first_own = Some(k);
                }
            }
            _ => earlier.push((k.start.max(s0), k.end.min(e0))),
        }
    }
    let queued = union_ns(&mut earlier);
    // The first own kernel waiting with the GPU idle in the trace: work
    // queued before the recording that the trace does not show.
    let unseen = first_own.map_or(0, |f| {
        let (_, launch_end) = f.launch.unwrap_or((f.start, f.start));
        let busy_until =
            earlier.iter().map(|&(_, e)| e).filter(|&e| e <= f.start).max().unwrap_or(s0);
        (f.start - launch_end.max(busy_until).max(s0)).max(0)
    });
    let unseen = if unseen >= MIN_FINDING_NS { unseen } else { 0 };
    // A sync before the window's own work that blocked with the GPU idle
    // in the trace (nine tenths of it or more) waited for work the trace
    // does not show, as the first kernel's wait does.
    let first_start = first_own.map_or(e0, |f| f.start);
    let blocked = syncs
        .iter()
        .zip(under.iter_mut())
        .filter(|(s, _)| s.0 < first_start)
        .map(|(s, u)| (s, (s.1 - s.0) - union_ns(u)))
        .filter(|(s, idle)| *idle >= MIN_FINDING_NS && *idle * 10 >= (s.1 - s.0) * 9)
        .max_by_key(|(_, idle)| *idle);
    let blocked = blocked.filter(|(_, idle)| *idle > unseen);
    let total = queued + blocked.map_or(unseen, |(_, idle)| idle);
    if !notable(total, wall) {
        return None;
    }
    let share = total as f64 / wall as f64;
    let step = w.numbered.first().map_or_else(|| "the window".to_string(), |n| w.step(n.0));
    let mut says = String::new();
    if queued > 0 {
        says = format!(
            "{:.2} ms of GPU work launched before the recording ran in {step} ({:.0}% of the window)",
            queued as f64 / MS,
            queued as f64 / wall as f64 * 100.0
        );
    }
    if let Some((s, idle)) = blocked {
        let sep = if says.is_empty() { "" } else { "; " };
        says = format!(
            "{says}{sep}the host waited {:.2} ms in `{}` with nothing recorded running on the GPU: work queued before the recording that the trace does not show",
            idle as f64 / MS,
            s.2
        );
    } else if unseen > 0 {
        let sep = if says.is_empty() { "" } else { "; " };
        says = format!(
            "{says}{sep}the first GPU work launched in the window waited {:.2} ms with nothing recorded running: work queued before the recording that the trace does not show",
            unseen as f64 / MS
        );
    }
    if let Some(f) = first_own {
        says = format!(
            "{says}. The window's own GPU work began {:.2} ms into {step}",
            (f.start - s0) as f64 / MS
        );
    }
    let severity =
        if share >= BACKLOG_CANNOT_TELL { Severity::CannotTell } else { Severity::Caution };
    Some(row(HealthCheck::Backlog, severity, says, Some(total as f64 / MS), WARM_UP))
}

/// The union's length of some intervals.
fn union_ns(v: &mut [(i64, i64)]) -> i64 {
    super::busy::merge(v).iter().map(|(s, e)| e - s).sum()
}

/// The GPU ends each step's work later and later after the host ends the
/// step: the host's markers understate the step. From the GPU side, a
/// step lasts from the end of one step's work to the end of the next's
/// (or between the GPU-side step annotations, when recorded).
fn gpu_behind(
    seen: &Seen,
    w: &CheckedWindow<'_>,
    work: impl Iterator<Item = Work>,
) -> Option<HealthRow> {
    let steps = w.numbered;
    if steps.is_empty() {
        return None;
    }
    // The end of each step's GPU work: work placed in a step by its launch.
    let mut ends: Vec<Option<i64>> = vec![None; steps.len()];
    for k in work {
        let Some((l, _)) = k.launch else { continue };
        let i = steps.partition_point(|&(_, s, _)| s <= l);
        if i == 0 || l >= steps[i - 1].2 {
            continue;
        }
        let e = &mut ends[i - 1];
        *e = Some(e.map_or(k.end, |v| v.max(k.end)));
    }
    let trails: Vec<(u64, i64)> =
        steps.iter().zip(&ends).filter_map(|(&(n, _, e), end)| end.map(|x| (n, x - e))).collect();
    let &(last_n, last_trail) = trails.last()?;
    if steps.len() == 1 {
        let (_, s, e) = steps[0];
        if last_trail < MIN_FINDING_NS || (last_trail as f64) < TRAIL_SHARE * (e - s) as f64 {
            return None;
        }
        return Some(row(
            HealthCheck::GpuBehind,
            Severity::Caution,
            format!(
                "the GPU ends ProfilerStep#{last_n}'s work {:.2} ms after the host ends the step ({:.0}% of it): that part is outside the window",
                last_trail as f64 / MS,
                last_trail as f64 / (e - s) as f64 * 100.0
            ),
            Some(last_trail as f64 / MS),
            "profile more than one step, so that each step's trailing GPU work falls in the next",
        ));
    }
    // Steps after the first: the host's step time against the GPU's.
    let host: f64 =
        steps[1..].iter().map(|&(_, s, e)| (e - s) as f64).sum::<f64>() / (steps.len() - 1) as f64;
    let annotated: Vec<i64> =
        steps.iter().filter_map(|(n, _, _)| seen.gpu_steps.get(n).map(|g| g.0)).collect();
    let (gpu, how) = if annotated.len() == steps.len() {
        (spacing(&annotated), "from the GPU-side step annotations")
    } else {
        let work_ends: Vec<i64> = ends.iter().flatten().copied().collect();
        if work_ends.len() != steps.len() {
            return None;
        }
        (spacing(&work_ends), "from the end of one step's GPU work to the next")
    };
    let gpu = gpu?;
    let first_trail = trails.first().map_or(0, |t| t.1);
    if gpu < BEHIND_RATIO * host || last_trail < MIN_FINDING_NS || last_trail <= first_trail {
        return None;
    }
    Some(row(
        HealthCheck::GpuBehind,
        Severity::Caution,
        format!(
            "the GPU falls behind the host: it ends ProfilerStep#{last_n}'s work {:.2} ms after the host ends the step (ProfilerStep#{}'s: {:.2} ms); a step takes {:.2} ms on the GPU ({how}), {:.2} ms by the host's markers, which the per-step figures use",
            last_trail as f64 / MS,
            trails[0].0,
            first_trail as f64 / MS,
            gpu / MS,
            host / MS
        ),
        Some((gpu - host) / MS),
        "profile more steps, so that the host's markers settle at the GPU's pace (the launch queue fills and the host waits)",
    ))
}

/// The mean spacing of successive times.
fn spacing(t: &[i64]) -> Option<f64> {
    (t.len() >= 2).then(|| (t[t.len() - 1] - t[0]) as f64 / (t.len() - 1) as f64)
}

/// How to re-capture a window whose last step the recording cut.
const STOP_AFTER_THE_LAST_STEP: &str = "stop the profiler after the last profiled step ends (call prof.step() once more, or let the schedule end the active steps)";

fn step_past_end(seen: &Seen, w: &CheckedWindow<'_>) -> Vec<HealthRow> {
    // The cut step counts as a whole one in the per-step figures (its
    // events are in the tables): say how far that moves the step.
    let mean = |steps: &[i64]| steps.iter().sum::<i64>() as f64 / steps.len().max(1) as f64 / MS;
    let all: Vec<i64> = w.numbered.iter().map(|&(_, s, e)| e - s).collect();
    let whole: Vec<i64> = w
        .numbered
        .iter()
        .filter(|&&(n, _, _)| !seen.cut.iter().any(|c| c.0 == n))
        .map(|&(_, s, e)| e - s)
        .collect();
    let averaged = if whole.is_empty() || whole.len() == all.len() {
        String::new()
    } else {
        format!(
            "; it counts as a whole step in the per-step figures: the step's mean is {:.2} ms with it, {:.2} ms over {}",
            mean(&all),
            mean(&whole),
            if whole.len() == 1 {
                "the whole step".to_string()
            } else {
                format!("the {} whole steps", whole.len())
            }
        )
    };
    seen.cut
        .iter()
        .map(|&(n, cut)| {
            row(
                HealthCheck::StepPastEnd,
                Severity::Caution,
                format!(
                    "ProfilerStep#{n} runs {:.2} ms past the last recorded event (the recording stopped first): the step is cut there{averaged}",
                    cut as f64 / MS
                ),
                Some(cut as f64 / MS),
                STOP_AFTER_THE_LAST_STEP,
            )
        })
        .collect()
}

fn stub_step(seen: &Seen, w: &CheckedWindow<'_>) -> Option<HealthRow> {
    let (n, len) = seen.stub?;
    let shortest = w.numbered.iter().map(|&(_, s, e)| e - s).min().unwrap_or(0);
    Some(row(
        HealthCheck::StepStub,
        Severity::Caution,
        format!(
            "ProfilerStep#{n} lasts {:.3} ms, under {:.0}% of the shortest other step ({:.2} ms), and ends the recording: the profiler stopped as it began; it is left out of the window",
            len as f64 / MS,
            crate::analysis::ranges::STUB_STEP_SHARE * 100.0,
            shortest as f64 / MS
        ),
        Some(len as f64 / MS),
        STOP_AFTER_THE_LAST_STEP,
    ))
}

fn slow_first_step(w: &CheckedWindow<'_>) -> Option<HealthRow> {
    let (first, rest) = w.numbered.split_first()?;
    if rest.len() < 2 {
        return None;
    }
    let others: Vec<f64> = rest.iter().map(|&(_, s, e)| (e - s) as f64).collect();
    let median = crate::util::median(&others);
    let took = (first.2 - first.1) as f64;
    if took < SLOW_FIRST * median || took - median < MIN_FINDING_NS as f64 {
        return None;
    }
    Some(row(
        HealthCheck::SlowFirstStep,
        Severity::Caution,
        format!(
            "{} took {:.2} ms, {:.1}× the other steps' median ({:.2} ms): warm-up inside the window, averaged into the per-step figures",
            w.step(first.0),
            took / MS,
            took / median,
            median / MS
        ),
        Some((took - median) / MS),
        WARM_UP,
    ))
}

/// A window without steps (the whole recording) whose one runtime call
/// before any GPU work takes this share of it: creating the CUDA context
/// (its first call) or loading modules lazily, not the step.
pub const START_UP_SHARE: f64 = 0.25;

fn start_up(
    seen: &Seen,
    w: &CheckedWindow<'_>,
    wall: i64,
    mut work: impl Iterator<Item = Work>,
) -> Option<HealthRow> {
    let (name, start, ns) = seen.longest_call.as_ref().filter(|_| w.numbered.is_empty())?;
    if (*ns as f64) < START_UP_SHARE * wall as f64 || work.any(|g| g.start < start + ns) {
        return None;
    }
    Some(row(
        HealthCheck::StartUp,
        Severity::Caution,
        format!(
            "`{name}` takes {:.1} ms ({:.0}% of the window) before any GPU work: the GPU's start-up (its context, code loaded lazily), which the per-step figures and the verdict read as the step's",
            *ns as f64 / MS,
            *ns as f64 * 100.0 / wall.max(1) as f64
        ),
        Some(*ns as f64 / MS),
        "record steady steps after a warm-up: wrap the loop in torch.profiler with schedule(wait=1, warmup=1, active=N) and call prof.step() each step",
    ))
}

fn graph_capture(w: &CheckedWindow<'_>) -> Option<HealthRow> {
    (w.graph_captures > 0).then(|| {
        row(
            HealthCheck::GraphCapture,
            Severity::Caution,
            format!(
                "the window records {} CUDA/HIP graph capture{}: kernels launched during a capture are recorded, not run, so the GPU waits by design",
                w.graph_captures,
                crate::util::plural(w.graph_captures as f64)
            ),
            None,
            "profile the graph replays, after the capture",
        )
    })
}

fn compilation(seen: &Seen, w: &CheckedWindow<'_>, wall: i64) -> Option<HealthRow> {
    let mut inside: Vec<(i64, i64)> = seen
        .compiling
        .iter()
        .flat_map(|&(s, e)| w.steps.iter().map(move |&(a, b)| (s.max(a), e.min(b))))
        .filter(|(s, e)| s < e)
        .collect();
    let ns = union_ns(&mut inside);
    if !notable(ns, wall) {
        return None;
    }
    let share = ns as f64 / wall as f64;
    let severity =
        if share >= COMPILE_CANNOT_TELL { Severity::CannotTell } else { Severity::Caution };
    Some(row(
        HealthCheck::Compilation,
        severity,
        format!(
            "torch.compile compiles or autotunes for {:.2} ms inside the window ({:.0}% of it)",
            ns as f64 / MS,
            share * 100.0
        ),
        Some(ns as f64 / MS),
        "run the compiled model once (or a few times, for autotuning) before the profiled window",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window<'a>(numbered: &'a [(u64, i64, i64)], steps: &'a [(i64, i64)]) -> CheckedWindow<'a> {
        CheckedWindow {
            numbered,
            steps,
            gpu_events: 1,
            graph_captures: 0,
            launch_after_work: 0,
            repeated: &[],
            inferred_steps: false,
        }
    }

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_ns(&mut [(5, 10), (0, 3), (2, 6), (20, 21)]), 11);
        assert_eq!(union_ns(&mut []), 0);
    }

    #[test]
    fn a_slow_first_step_is_warm_up() {
        let ms = 1_000_000;
        let numbered =
            [(1, 0, 30 * ms), (2, 30 * ms, 40 * ms), (3, 40 * ms, 51 * ms), (4, 51 * ms, 60 * ms)];
        let steps: Vec<(i64, i64)> = numbered.iter().map(|&(_, s, e)| (s, e)).collect();
        let r = slow_first_step(&window(&numbered, &steps)).unwrap();
        // Median of 10, 11, 9 ms is 10: 3.0×, 20 ms more.
        assert_eq!(r.ms, Some(20.0));
        assert!(r.says.contains("3.0×"), "{}", r.says);
        let even = [(1, 0, 11 * ms), (2, 11 * ms, 21 * ms), (3, 21 * ms, 31 * ms)];
        assert!(slow_first_step(&window(&even, &steps)).is_none());
    }

    #[test]
    fn a_gpu_falling_further_behind_is_found_and_a_steady_lag_is_not() {
        let ms = 1_000_000;
        let numbered = [(1, 0, 10 * ms), (2, 10 * ms, 20 * ms), (3, 20 * ms, 30 * ms)];
        let steps: Vec<(i64, i64)> = numbered.iter().map(|&(_, s, e)| (s, e)).collect();
        // Each step's one kernel, launched at its start, ends 1, 3, 5 ms
        // after the step: the GPU takes 12 ms a step, the host 10.
        let behind = |trail: [i64; 3]| {
            (0..3)
                .map(|i| Work {
                    start: i * 10 * ms,
                    end: (i + 1) * 10 * ms + trail[i as usize] * ms,
                    launch: Some((i * 10 * ms, i * 10 * ms + 1)),
                })
                .collect::<Vec<_>>()
        };
        let seen = Seen::default();
        let w = window(&numbered, &steps);
        let r = gpu_behind(&seen, &w, behind([1, 3, 5]).into_iter()).unwrap();
        assert_eq!(r.ms, Some(2.0), "12 ms on the GPU against 10 by the markers");
        assert!(r.says.contains("ProfilerStep#3's work 5.00 ms after"), "{}", r.says);
        assert!(gpu_behind(&seen, &w, behind([4, 4, 4]).into_iter()).is_none());
    }

    #[test]
    fn compilation_is_named_by_its_frames_not_by_compiled_code() {
        let mut seen = Seen::default();
        seen.note_host_range("_compile.compile_inner (dynamo_timed)", 0, 10);
        seen.note_host_range("torch/_dynamo/convert_frame.py(1046): _compile", 2, 8);
        seen.note_host_range("Torch-Compiled Region: 0/0", 0, 10);
        seen.note_host_range("## Call CompiledFxGraph f4ii27dd ##", 0, 10);
        seen.note_host_range("torch/_inductor/compile_fx.py(2735): wrapper", 0, 10);
        assert_eq!(seen.compiling, vec![(0, 10), (2, 8)]);
    }

    #[test]
    fn launches_without_gpu_events_cannot_tell() {
        let seen = Seen { launch_calls: 400, ..Seen::default() };
        let w = CheckedWindow { gpu_events: 0, ..window(&[], &[(0, 1)]) };
        let r = no_gpu_timings(&seen, &w).unwrap();
        assert_eq!(r.severity, Severity::CannotTell);
        assert!(r.says.starts_with("400 kernel launches"), "{}", r.says);
        assert!(no_gpu_timings(&seen, &window(&[], &[(0, 1)])).is_none());
    }

    #[test]
    fn unread_devices_are_named() {
        let mut seen = Seen::default();
        for _ in 0..3 {
            seen.note_unread("mtia_ccp_events");
        }
        seen.note_unread("Trace");
        let w = CheckedWindow { gpu_events: 0, ..window(&[], &[(0, 1)]) };
        let r = unread_device(&seen, &w).unwrap();
        assert_eq!(r.severity, Severity::CannotTell);
        assert!(r.says.contains("MTIA: 3 `mtia_ccp_events`"), "{}", r.says);
    }

    #[test]
    fn lost_kernels_weigh_by_their_share_of_the_launches() {
        let w = window(&[], &[(0, 1)]);
        let lost =
            |unmet, met| Seen { unmet_launches: unmet, met_launches: met, ..Seen::default() };
        // 1 % of the launches, or fewer than 10: nothing said.
        assert!(lost_gpu_events(&lost(10, 990), &w).is_none());
        assert!(lost_gpu_events(&lost(9, 0), &w).is_none());
        let r = lost_gpu_events(&lost(30, 970), &w).unwrap();
        assert_eq!(r.severity, Severity::Caution);
        assert!(r.says.starts_with("30 of 1000 kernel launches in the steps (3%)"), "{}", r.says);
        assert_eq!(lost_gpu_events(&lost(250, 750), &w).unwrap().severity, Severity::CannotTell);
        // Calls whose work began before them are the skew's, not lost.
        let skewed = CheckedWindow { launch_after_work: 250, ..window(&[], &[(0, 1)]) };
        assert!(lost_gpu_events(&lost(250, 750), &skewed).is_none());
    }

    #[test]
    fn work_before_its_launch_is_a_clock_skew() {
        let skew = |n, of| CheckedWindow {
            launch_after_work: n,
            gpu_events: of,
            ..window(&[], &[(0, 1)])
        };
        assert!(clock_skew(&skew(10, 2000)).is_none());
        assert_eq!(clock_skew(&skew(40, 2000)).unwrap().severity, Severity::Caution);
        let r = clock_skew(&skew(300, 2000)).unwrap();
        assert_eq!(r.severity, Severity::CannotTell);
        assert!(r.says.starts_with("300 of 2000 GPU events (15%)"), "{}", r.says);
    }

    #[test]
    fn repeated_and_empty_steps_leave_no_step_to_read() {
        let repeated = [(7, 2), (8, 2), (9, 2)];
        let w = CheckedWindow { repeated: &repeated, ..window(&[], &[(0, 1)]) };
        let r = repeated_steps(&w).unwrap();
        assert!(
            r.says.starts_with("ProfilerStep#7 to #9 (3 names) recorded 2 times"),
            "{}",
            r.says
        );
        assert!(repeated_steps(&window(&[], &[(0, 1)])).is_none());
        assert!(empty_steps(&window(&[(1, 5, 5), (2, 9, 9)], &[])).is_some());
        assert!(empty_steps(&window(&[(1, 5, 5), (2, 9, 10)], &[(9, 10)])).is_none());
        assert!(empty_steps(&window(&[], &[(0, 1)])).is_none());
    }
}
