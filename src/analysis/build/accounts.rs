//! The accounts after the pass: the GPU busy union, the idle account, the
//! roofline, the ops' count, the call tree and the collectives' lead-ins,
//! each from the pass's records and nothing of each other, so that they
//! run side by side.

use rustc_hash::FxHashMap as HashMap;

use super::{Span, pct, ratio};
use crate::analysis::PassRecord;
use crate::analysis::busy::{OverlapSum, intersect, merge_sorted, overlap_each};
use crate::analysis::calltree::Built as CallTree;
use crate::analysis::collectives::LeadIns;
use crate::analysis::gpulog::{KernelClasses, KernelSpan};
use crate::analysis::idle::{Beside, GroupSweeps};
use crate::analysis::kernel_index::{DeviceSpans, KernelIndex};
use crate::analysis::placed::{Agg, OpTables};
use crate::analysis::roofline::Roofline;
use crate::profile::{Category, DeviceRow, StreamRow};
use crate::trace::TraceInfo;
use crate::util::round;

/// What the accounts found.
pub(super) struct Accounts {
    pub busy: Busy,
    pub roof: Option<Roofline>,
    pub idle: Option<crate::analysis::idle::Account>,
    /// The ops' tables counted again under the final ranges, where the
    /// pass left them to be ([`OpTables::stale`]).
    pub op_tables: Option<OpTables>,
    pub lead_ins: LeadIns,
    pub tree: CallTree,
}

/// Runs the accounts, on a second thread where there is one.
pub(super) fn run(
    a: &PassRecord,
    info: &TraceInfo,
    win: &Span,
    kinfo: &KernelClasses,
    threads: usize,
) -> Accounts {
    // The accounts each read the pass's records and nothing of each other.
    // With a spare thread, the main thread builds the roofline and the
    // call tree (the two longest, ~70 and ~120 ms at 1 GB) while the side
    // thread sorts the kernels, takes the busy union, counts the ops and
    // the collectives' lead-ins, then sweeps the idle account: about even
    // halves (BENCHMARKS.md). The idle sweep (its largest lists) waits
    // for the roofline to be done, so that their peaks come one after the
    // other (4 MB less at 1 GB); the side's other accounts, which keep
    // small tables, fill that wait.
    let keep_gaps = !a.collectives.is_empty();
    // Sorted by the side thread first thing (the roofline needs none of
    // it); whoever asks first sorts it, the other waits.
    let sorted = std::sync::OnceLock::new();
    let index = || sorted.get_or_init(|| KernelIndex::of(&a.gpu));
    let compute_label = |name: u32| {
        kinfo.get(&name).filter(|k| k.category != Category::Communication).map(|k| k.label.clone())
    };
    // The side's accounts before the idle sweep.
    let small = |index: &KernelIndex| SideAccounts {
        busy: gpu_busy(a, info, win, kinfo, index),
        // The ops' tables, counted again under the final ranges where the
        // pass left them to be.
        op_tables: a.op_tables.stale.then(|| a.count_ops()),
        // The collectives' kernel lead-ins (their idle part is added once
        // the idle account is done).
        lead_ins: a.collectives.finish(a, index, &compute_label),
    };
    // The idle account's device groups after the first, for the main
    // thread too once its part is done (a merged trace's processes).
    let share = GroupSweeps::default();
    std::thread::scope(|s| {
        let (roof_done, roof_wait) = std::sync::mpsc::channel::<()>();
        let side = (threads > 1).then(|| {
            let share = &share;
            let small = &small;
            s.spawn(move || {
                let index = index();
                let before = std::cell::OnceCell::new();
                let before_sweep = || {
                    before.get_or_init(|| small(index));
                    // Err once the roofline is done (or gone): the sender
                    // is dropped, never used.
                    let _ = roof_wait.recv();
                };
                let beside = Beside { before_sweep: &before_sweep, share };
                let idle = idle_account(a, win, kinfo, index, keep_gaps, beside);
                // (No sweep without kernels.)
                (before.into_inner().unwrap_or_else(|| small(index)), idle)
            })
        });
        let peaks = |device: i64| device_props(info, device).and_then(crate::hardware::recognise);
        let arithmetic = |k: u32| {
            kinfo
                .get(&k)
                .is_some_and(|i| matches!(i.category, Category::GemmConv | Category::Attention))
        };
        let roof = crate::analysis::roofline::account(
            a,
            &|k| kinfo.get(&k).is_some_and(|i| i.tensor_core),
            &arithmetic,
            &peaks,
        );
        drop(roof_done);
        // The call tree, from the same records (§17).
        let tree = crate::analysis::calltree::build(a, kinfo);
        share.sweep_pending();
        let (side, idle) = match side {
            Some(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            None => (
                small(index()),
                idle_account(
                    a,
                    win,
                    kinfo,
                    index(),
                    keep_gaps,
                    Beside { before_sweep: &|| (), share: &share },
                ),
            ),
        };
        let SideAccounts { busy, op_tables, lead_ins } = side;
        Accounts { busy, roof, idle, op_tables, lead_ins, tree }
    })
}

/// The side thread's accounts before its idle sweep.
struct SideAccounts {
    busy: Busy,
    op_tables: Option<OpTables>,
    lead_ins: LeadIns,
}

/// Busy time per device and stream, communication overlap, utilisation.
pub(super) struct Busy {
    pub devices: Vec<DeviceRow>,
    pub streams: Vec<StreamRow>,
    pub kernel_total: Agg,
    /// (communication, overlapped) ns summed over devices.
    pub comm_total: (i64, i64),
    pub n_dev: f64,
    pub busy_ms: f64,
    pub gpu_util: f64,
    pub gpu_util_raw: f64,
}

/// Vendor from the device's name, else from the runtime the trace used.
fn vendor(
    a: &PassRecord,
    info: &TraceInfo,
    props: Option<&crate::trace::DeviceProps>,
) -> Option<String> {
    let name = props.map(|p| p.name.to_lowercase()).unwrap_or_default();
    let amd_words = ["amd", "instinct", "radeon", "gfx"];
    let nvidia_words = ["nvidia", "tesla", "quadro", "geforce", "rtx", "titan"];
    let v = if amd_words.iter().any(|w| name.contains(w)) {
        "AMD"
    } else if nvidia_words.iter().any(|w| name.contains(w)) {
        "NVIDIA"
    } else if info.rocm || a.evidence.hip_calls > 0 || props.and_then(|p| p.warp_size) == Some(64) {
        "AMD"
    } else if info.cuda || a.evidence.cuda_calls > 0 || props.and_then(|p| p.warp_size) == Some(32)
    {
        "NVIDIA"
    } else {
        return None;
    };
    Some(v.to_string())
}

/// The `deviceProperties` entry of a device id. Kineto numbers devices as
/// the process sees them and may list only some (HIP/CUDA_VISIBLE_DEVICES):
/// with no entry for this id, a list of one model names them all.
pub(super) fn device_props(info: &TraceInfo, device: i64) -> Option<&crate::trace::DeviceProps> {
    info.devices.iter().find(|d| d.id == device).or_else(|| {
        let first = info.devices.first()?;
        info.devices
            .iter()
            .all(|d| d.name == first.name && d.warp_size == first.warp_size)
            .then_some(first)
    })
}

/// GPU busy time as the union of kernel intervals per device and stream,
/// clipped to the steps (docs/analysis.md §4), and the communication
/// kernels' overlap with compute (§8).
fn gpu_busy(
    a: &PassRecord,
    info: &TraceInfo,
    win: &Span,
    kinfo: &KernelClasses,
    index: &KernelIndex,
) -> Busy {
    let (steps, n_steps, wall_ns) = (&win.steps, win.n_steps, win.wall_ns);
    let kernel_total = a.gpu_tables.kernels.values().fold(Agg::default(), |acc, k| Agg {
        ns: acc.ns.saturating_add(k.ns),
        count: acc.count + k.count,
    });
    // The kernels the tables count (those launched in the steps, or with
    // no launch starting in them), per queue: the device and stream rows
    // count the same kernels as the header and the kernels table.
    let mut counted = vec![0u64; a.gpu.queues.len()];
    for &span in a.gpu.kernel_calls.counted_spans() {
        if let Some(k) = a.gpu.kernel_spans.get(span as usize) {
            counted[k.queue as usize] += 1;
        }
    }
    // Communication and the rest, per device: how much communication the
    // compute kernels hide (only traces with communication split them).
    let has_comm = kinfo.values().any(|k| k.category == Category::Communication);
    let is_comm = |k: &KernelSpan| kinfo[&k.name].category == Category::Communication;
    let mut comm_total = (0i64, 0i64);
    // Each device's kernel time clipped to the steps, summed (not a union).
    let mut raw_total = 0f64;
    let mut devices: Vec<DeviceRow> = Vec::new();
    // Each stream's busy time in the steps, and its counted kernels: its
    // kernels come in time order, so no list of its union is kept.
    let mut by_stream: HashMap<(i64, i64), (OverlapSum, u64)> = HashMap::default();
    for (device, ks) in index.devices() {
        let spans = DeviceSpans { ks, all: &a.gpu.kernel_spans }.iter(0);
        let raw = overlap_each(spans.clone().map(|k| (k.start, k.end)), steps);
        raw_total += raw as f64;
        let (comm_ns, hidden) = if has_comm {
            let comm = merge_sorted(spans.clone().filter(|k| is_comm(k)).map(|k| (k.start, k.end)));
            let comm = intersect(&comm, steps);
            let mut hidden = OverlapSum::new(&comm);
            for k in spans.clone().filter(|k| !is_comm(k)) {
                hidden.push(k.start, k.end);
            }
            (comm.iter().map(|(s, e)| e - s).sum(), hidden.total())
        } else {
            (0, 0)
        };
        let (mut busy, mut in_steps) = (OverlapSum::new(steps), 0u64);
        for k in spans {
            busy.push(k.start, k.end);
            let stream = by_stream
                .entry((device, a.gpu.stream(k)))
                .or_insert_with(|| (OverlapSum::new(steps), counted[k.queue as usize]));
            stream.0.push(k.start, k.end);
        }
        for (q, &(d, _)) in a.gpu.queues.iter().enumerate() {
            if d == device {
                in_steps += counted[q];
            }
        }
        let busy = busy.total();
        let props = device_props(info, device);
        let mem = a.memory.peaks.get(&device);
        comm_total.0 = comm_total.0.saturating_add(comm_ns);
        comm_total.1 = comm_total.1.saturating_add(hidden);
        devices.push(DeviceRow {
            vendor: vendor(a, info, props),
            // The trace's name; where it left it empty (vLLM's ROCm
            // traces), the device table's for the properties it gave, as
            // the efficiency account names it.
            name: props.and_then(|p| {
                let name = p.name.trim();
                if name.is_empty() {
                    crate::hardware::recognise(p).map(|peaks| peaks.name)
                } else {
                    Some(name.to_string())
                }
            }),
            comm_ms_per_step: (comm_ns > 0).then(|| round(win.per_step_ms(comm_ns), 3)),
            comm_exposed_ms_per_step: (comm_ns > 0)
                .then(|| round(win.per_step_ms(comm_ns - hidden), 3)),
            comm_overlap_pct: (comm_ns > 0).then(|| round(pct(hidden, comm_ns), 1)),
            device,
            busy_ms_per_step: round(win.per_step_ms(busy), 3),
            util: round(ratio(busy as f64, wall_ns as f64).min(1.0), 3),
            util_raw: round(ratio(raw as f64, wall_ns as f64), 3),
            kernels_per_step: round(in_steps as f64 / n_steps, 2),
            peak_reserved_mb: mem.filter(|m| m.reserved > 0.0).map(|m| round(m.reserved / 1e6, 1)),
            capacity_mb: props
                .filter(|p| p.total_global_mem > 0.0)
                .map(|p| round(p.total_global_mem / 1e6, 1)),
        });
    }
    let mut streams: Vec<StreamRow> = by_stream
        .into_iter()
        .map(|((device, stream), (busy, count))| {
            let busy = busy.total();
            StreamRow {
                device,
                stream,
                busy_ms_per_step: round(win.per_step_ms(busy), 3),
                util: round(ratio(busy as f64, wall_ns as f64).min(1.0), 3),
                kernels_per_step: round(count as f64 / n_steps, 2),
            }
        })
        .collect();
    streams.sort_by_key(|s| (s.device, s.stream));

    // One device: its numbers. Several (rare in one trace): their mean.
    let n_dev = devices.len().max(1) as f64;
    let busy_ms = devices.iter().fold(0.0, |acc, d| acc + d.busy_ms_per_step) / n_dev;
    let gpu_util = devices.iter().fold(0.0, |acc, d| acc + d.util) / n_dev;
    // The same kernel time as each device's `util_raw`: clipped to the
    // steps, so that it is the union where no two kernels overlap.
    let gpu_util_raw = ratio(raw_total, wall_ns as f64) / n_dev;
    Busy { devices, streams, kernel_total, comm_total, n_dev, busy_ms, gpu_util, gpu_util_raw }
}

/// The idle account over each step (docs/analysis.md §12); None without
/// kernels (a CPU run).
fn idle_account<'a>(
    a: &'a PassRecord,
    win: &Span,
    kinfo: &KernelClasses,
    index: &'a KernelIndex,
    keep_gaps: bool,
    beside: Beside<'_, 'a>,
) -> Option<crate::analysis::idle::Account> {
    // Each step on its own (a step's first and last kernel matter), kept
    // apart where steps overlap.
    let mut steps: Vec<(i64, i64)> = Vec::new();
    for (_, s, e) in a.ranges.numbered_steps() {
        let s = steps.last().map_or(s, |l| s.max(l.1));
        if e > s {
            steps.push((s, e));
        }
    }
    if steps.is_empty() {
        steps.clone_from(&win.steps);
    }
    let label = |name: u32| {
        kinfo.get(&name).map_or_else(|| a.names.get(name).to_string(), |k| k.label.clone())
    };
    crate::analysis::idle::account(a, index, &steps, win.n_steps, &label, keep_gaps, beside)
}
