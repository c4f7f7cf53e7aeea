//! The step model's inputs from what the pass kept: the kernels' and
//! copies' intervals with their launches, the synchronising calls and the
//! host records of the CPU log, the steps.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::host::{HostCause, HostCauses};
use super::{COPY_CLASS, GpuWork, Inputs, NONE, OpLog, StepModel};
use crate::analysis::PassRecord;
use crate::analysis::cpulog::{HostKind, RecKind};
use crate::analysis::gpulog::KernelClasses;
use crate::profile::Category;

/// GPU work a model takes at most: beyond it, the middle steps whose work
/// fits are modelled (steady steps are alike; about 90 bytes a node while
/// it is built, and each what-if is a pass over them).
pub const MAX_GPU_NODES: usize = 25_000;

/// GPU work one step may hold and still be modelled: a step is the
/// model's smallest unit, so past this (a trace with no step markers, read
/// as one step) there is no model rather than one that grows with the
/// trace (about 140 bytes a GPU event while built: issue #54's bound).
pub const MAX_STEP_NODES: usize = 4 * MAX_GPU_NODES;

/// The model of `a`'s window `steps`, and a note when it covers fewer
/// steps than the window has; no model, and the note saying why, when the
/// step to model holds more than [`MAX_STEP_NODES`].
pub(crate) fn model(
    a: &PassRecord,
    kinfo: &KernelClasses,
    steps: &[(i64, i64)],
    keep_ops: bool,
) -> (Option<StepModel>, Option<String>) {
    // Where each piece of GPU work belongs: its launch, else its start.
    let (steps, note) = {
        let kernels = a.gpu.kernel_spans.iter().map(|k| k.launch().map_or(k.start, |l| l.start));
        let copies = a.gpu.copy_spans.iter().map(|c| c.launch.map_or(c.start, |l| l.start));
        fitting(kernels.chain(copies), steps)
    };
    (built(a, kinfo, steps, keep_ops), note)
}

/// The model of the steps [`fitting`] chose.
fn built(
    a: &PassRecord,
    kinfo: &KernelClasses,
    steps: Vec<(i64, i64)>,
    keep_ops: bool,
) -> Option<StepModel> {
    let class_of = |name: u32| {
        let c = kinfo.get(&name).map_or(Category::Other, |k| k.category.clone());
        Category::ALL.iter().position(|x| *x == c).unwrap_or(Category::ALL.len() - 1) as u8
    };
    let (w0, w1) = (steps.first()?.0, steps.last()?.1);
    let in_window = |t: i64| t >= w0 && t <= w1;
    let mut gpu: Vec<GpuWork> = Vec::new();
    // The names of the work modelled, by a local index.
    let mut names: Vec<String> = Vec::new();
    let mut name_of: HashMap<u32, u32> = HashMap::default();
    let mut local = |id: u32| {
        *name_of.entry(id).or_insert_with(|| {
            names.push(a.names.get(id).to_string());
            names.len() as u32 - 1
        })
    };
    for k in &a.gpu.kernel_spans {
        if !in_window(k.launch().map_or(k.start, |l| l.start)) {
            continue;
        }
        let (device, stream) = a.gpu.queues[k.queue as usize];
        gpu.push(GpuWork {
            start: k.start,
            end: k.end,
            device,
            stream,
            class: class_of(k.name),
            name: local(k.name),
            launch: k.launch().map(|l| (l.thread, l.start, l.end)),
            op: NONE,
        });
    }
    for c in &a.gpu.copy_spans {
        if !in_window(c.launch.map_or(c.start, |l| l.start)) {
            continue;
        }
        gpu.push(GpuWork {
            start: c.start,
            end: c.end,
            device: c.device,
            stream: c.stream,
            class: COPY_CLASS,
            name: local(c.name),
            launch: c.launch.map(|l| (l.thread, l.start, l.end)),
            op: NONE,
        });
    }
    let loop_thread = a.ranges.loop_threads().min();
    let mut threads: HashSet<u32> = gpu.iter().filter_map(|g| g.launch.map(|l| l.0)).collect();
    threads.extend(loop_thread);
    if loop_thread.is_none() {
        // No step markers: the window is its events' span, and the thread
        // whose records end last may hold its end without launching
        // anything (a cut of a longer recording, a post-processing
        // thread).
        threads.extend(last_active(a, w0, w1));
    }
    // One walk of the CPU log: the syncs in the window, and what the
    // threads with calls did around them.
    let mut syncs = Vec::new();
    let mut records = Vec::new();
    let mut ops = keep_ops.then(OpLog::default);
    let mut op_name: HashMap<u32, u32> = HashMap::default();
    let mut launched_in = LaunchingOps::of(&gpu);
    for r in a.cpu.iter() {
        let end = r.start + r.dur;
        if r.dur <= 0 || r.start > w1 || end < w0 {
            continue;
        }
        if let RecKind::Op { .. } = r.kind {
            launched_in.see(r.thread, r.start, end, r.name);
        }
        let cause = match r.kind {
            RecKind::Host(HostKind::Sync) => {
                if in_window(r.start) {
                    syncs.push((r.thread, r.start, end));
                }
                continue;
            }
            _ if !threads.contains(&r.thread) => continue,
            // The DataLoader's ops and ranges are `--op`'s too (`--op
            // DataLoader` takes the loading away, as the idle account names it).
            RecKind::Op { dataload: true, .. } | RecKind::Host(HostKind::Dataload) => {
                if let Some(log) = ops.as_mut() {
                    log.push(r.thread, r.start, end, a.names.get(r.name), r.name, &mut op_name);
                }
                HostCause::Dataloader
            }
            RecKind::Op { .. } => {
                if let Some(log) = ops.as_mut() {
                    log.push(r.thread, r.start, end, a.names.get(r.name), r.name, &mut op_name);
                }
                HostCause::CpuOp
            }
            RecKind::Host(HostKind::Alloc) => HostCause::Allocator,
            // `--op` names annotations too: a module scope or a
            // `record_function` range selects the ops and launches inside.
            RecKind::Host(HostKind::Annotation) => {
                if let Some(log) = ops.as_mut() {
                    log.push(r.thread, r.start, end, a.names.get(r.name), r.name, &mut op_name);
                }
                HostCause::Python
            }
            RecKind::Host(HostKind::Python) => HostCause::Python,
            RecKind::Host(HostKind::Op) => continue,
        };
        records.push((r.thread, r.start, end, cause));
    }
    // A capture's (or an inferred) `dataload` phase is DataLoader time too.
    let dataload = (0..a.phases.len() as u16).find(|&p| a.phases.name(p) == "dataload");
    if let Some(d) = dataload {
        for (t, s, e, p) in a.ranges.cpu_phase_spans() {
            if p == d && threads.contains(&t) && s <= w1 && e >= w0 {
                records.push((t, s, e, HostCause::Dataloader));
            }
        }
    }
    for (g, op) in gpu.iter_mut().zip(launched_in.innermost) {
        if op.2 != NONE {
            g.op = local(op.2);
        }
    }
    let host = HostCauses::of(records.into_iter(), a.evidence.cpu_ops > 0);
    let recorded = a.sync_log.resolve();
    let inputs = Inputs { gpu, syncs, steps, loop_thread, host, names, ops, recorded };
    StepModel::build(inputs)
}

/// The thread whose host record (op, annotation, frame) in `[w0, w1]`
/// ends last.
fn last_active(a: &PassRecord, w0: i64, w1: i64) -> Option<u32> {
    a.cpu
        .iter()
        .filter(|r| r.dur > 0 && r.start <= w1 && r.start + r.dur >= w0)
        .filter(|r| !matches!(r.kind, RecKind::Host(HostKind::Sync)))
        .max_by_key(|r| ((r.start + r.dur).min(w1), std::cmp::Reverse(r.thread)))
        .map(|r| r.thread)
}

/// The innermost CPU op around each piece of GPU work's launch, found in
/// one walk of the CPU log: of the ops open at a launch on its thread, the
/// latest-starting (the shorter of two that start together).
struct LaunchingOps {
    /// Per thread, the launches by start: (start, GPU work index).
    launches: HashMap<u32, Vec<(i64, u32)>>,
    /// Per GPU work: the op's start, end and name (`PassRecord::names`).
    innermost: Vec<(i64, i64, u32)>,
}

impl LaunchingOps {
    fn of(gpu: &[GpuWork]) -> LaunchingOps {
        let mut launches: HashMap<u32, Vec<(i64, u32)>> = HashMap::default();
        for (i, g) in gpu.iter().enumerate() {
            if let Some((t, s, _)) = g.launch {
                launches.entry(t).or_default().push((s, i as u32));
            }
        }
        for list in launches.values_mut() {
            list.sort_unstable();
        }
        LaunchingOps { launches, innermost: vec![(i64::MIN, i64::MAX, NONE); gpu.len()] }
    }

    /// An op on `thread` from `start` to `end`.
    fn see(&mut self, thread: u32, start: i64, end: i64, name: u32) {
        let Some(list) = self.launches.get(&thread) else { return };
        let from = list.partition_point(|&(s, _)| s < start);
        for &(_, g) in list[from..].iter().take_while(|&&(s, _)| s <= end) {
            let best = &mut self.innermost[g as usize];
            if start > best.0 || (start == best.0 && end < best.1) {
                *best = (start, end, name);
            }
        }
    }
}

/// The steps to model: all of them, or the middle run whose GPU work
/// (placed by `at`) fits [`MAX_GPU_NODES`], with a note saying which;
/// none, with a note, when the one step to model holds more than
/// [`MAX_STEP_NODES`].
fn fitting(
    at: impl Iterator<Item = i64>,
    steps: &[(i64, i64)],
) -> (Vec<(i64, i64)>, Option<String>) {
    let mut count = vec![0usize; steps.len()];
    let mut total = 0;
    for t in at {
        let k = steps.partition_point(|&(s, _)| s <= t);
        if k > 0 && t <= steps[k - 1].1 {
            count[k - 1] += 1;
            total += 1;
        }
    }
    if total <= MAX_GPU_NODES {
        return (steps.to_vec(), None);
    }
    let mid = steps.len() / 2;
    if count[mid] > MAX_STEP_NODES {
        let which = if steps.len() == 1 {
            "the window's one step".to_string()
        } else {
            format!("step {} of {} (the middle one)", mid + 1, steps.len())
        };
        return (
            Vec::new(),
            Some(format!(
                "no step model (critical path, what-ifs, levers' savings): {which} holds {} GPU events, past the {MAX_STEP_NODES} one step may hold and be modelled in bounded memory; profile with ProfilerStep markers around shorter steps",
                count[mid]
            )),
        );
    }
    if steps.len() < 2 {
        return (steps.to_vec(), None);
    }
    let (mut lo, mut hi) = (mid, mid + 1);
    let mut n = count[mid];
    loop {
        let before = lo.checked_sub(1).filter(|&k| n + count[k] <= MAX_GPU_NODES);
        if let Some(k) = before {
            (n, lo) = (n + count[k], k);
        }
        let after = (hi < steps.len()).then_some(hi).filter(|&k| n + count[k] <= MAX_GPU_NODES);
        if let Some(k) = after {
            (n, hi) = (n + count[k], k + 1);
        }
        if before.is_none() && after.is_none() {
            break;
        }
    }
    let note = format!(
        "the step model covers steps {}–{} of {} (the middle of the window: {total} GPU events in all, at most {MAX_GPU_NODES} modelled)",
        lo + 1,
        hi,
        steps.len(),
    );
    (steps[lo..hi].to_vec(), Some(note))
}
