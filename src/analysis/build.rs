//! Aggregates → `profile.json` content.

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use indexmap::IndexMap;

use super::PassRecord;
use super::busy::{OverlapSum, intersect, merge_sorted, overlap_each};
use super::calltree::{OpAccount, OpTotals};
use super::cpulog::HostKind;
use super::gpulog::{KernelClasses, KernelSpan};
use super::idle::{Beside, GroupSweeps};
use super::kernel_index::{DeviceSpans, KernelIndex};
use super::kernels::{KernelClass, classify};
use super::placed::Agg;
use super::ranges::{PHASE_ORDER, PhaseNames, Ranges, UNPHASED, UNPHASED_NAME};
use super::verdict::{self, Evidence, model_sentence};
use crate::error::{Error, Result};
use crate::profile::{
    Attribution, Category, CategoryRow, DeviceRow, ExtraFigures, Figures, HealthCheck, HealthRow,
    IdleAccount, KernelRow, Measurements, Mode, OpRow, PhaseGpuRow, PhaseRow, Profile, RunConfig,
    SCHEMA_ID, Severity, StepTime, StreamRow, Verdict, Window, metrics,
};
use crate::trace::TraceInfo;
use crate::util::round;

const MS: f64 = 1e6; // ns per ms
const TOP_KERNELS: usize = 8;

/// What the accounts after the pass (idle, busy union, roofline, call
/// tree, each kernel's calls) hold at once while they run, per GPU event:
/// 38 bytes measured on a trace of a million kernels and nothing else
/// (`bench/memory_bound.sh`), with room.
const ACCOUNTS_BYTES_PER_GPU_EVENT: u64 = 48;

pub(super) fn build(
    mut a: PassRecord,
    info: &TraceInfo,
    measured: Option<&Measurements>,
    path: Option<&Path>,
    read: &crate::trace::ReadOptions,
    keep_model: bool,
) -> Result<(Profile, Option<super::model::StepModel>)> {
    check_usable(&a)?;
    // The memory budget holds here too (docs/analysis.md §1): checked
    // before each of the stages that grow with the trace, the accounts'
    // working lists counted ahead.
    let (threads, budget) = (read.threads, &read.budget);
    let gpu_events = (a.gpu.kernel_spans.len() + a.gpu.copy_spans.len()) as u64;
    budget.check_analysis("the accounts", gpu_events * ACCOUNTS_BYTES_PER_GPU_EVENT)?;
    let win = window(&a);
    let kinfo = kernel_info(&mut a);
    // The idle account, the busy union, the roofline and the ops' count
    // each read the pass's records and nothing of each other: with a
    // spare thread, the idle account and the busy union run beside the
    // roofline and the ops' count. The idle sweep (its largest lists)
    // waits for the roofline to be done, so that their peaks come one
    // after the other (4 MB less at 1 GB; BENCHMARKS.md); the busy union,
    // which keeps no list, fills that wait.
    let collector = std::mem::take(&mut a.collectives);
    let keep_gaps = !collector.is_empty();
    // Sorted by the side thread first thing (the roofline needs none of
    // it); whoever asks first sorts it, the other waits.
    let sorted = std::sync::OnceLock::new();
    let index = || sorted.get_or_init(|| KernelIndex::of(&a.gpu));
    let compute_label = |name: u32| {
        kinfo.get(&name).filter(|k| k.category != Category::Communication).map(|k| k.label.clone())
    };
    // The idle account's device groups after the first, for the main
    // thread too once its part is done (a merged trace's processes).
    let share = GroupSweeps::default();
    let (busy, roof, idle, op_tables, lead_ins, tree) = std::thread::scope(|s| {
        let (roof_done, roof_wait) = std::sync::mpsc::channel::<()>();
        let side = (threads > 1).then(|| {
            let (a, win, kinfo, share) = (&a, &win, &kinfo, &share);
            s.spawn(move || {
                let index = index();
                let busy = std::cell::OnceCell::new();
                let before_sweep = || {
                    busy.get_or_init(|| gpu_busy(a, info, win, kinfo, index));
                    // Err once the roofline is done (or gone): the sender
                    // is dropped, never used.
                    let _ = roof_wait.recv();
                };
                let beside = Beside { before_sweep: &before_sweep, share };
                let idle = idle_account(a, win, kinfo, index, keep_gaps, beside);
                // (No sweep without kernels.)
                let busy =
                    busy.into_inner().unwrap_or_else(|| gpu_busy(a, info, win, kinfo, index));
                (busy, idle)
            })
        });
        let peaks = |device: i64| device_props(info, device).and_then(crate::hardware::recognise);
        let arithmetic = |k: u32| {
            kinfo
                .get(&k)
                .is_some_and(|i| matches!(i.category, Category::GemmConv | Category::Attention))
        };
        let roof = super::roofline::account(
            &a,
            &|k| kinfo.get(&k).is_some_and(|i| i.tensor_core),
            &arithmetic,
            &peaks,
        );
        drop(roof_done);
        // The ops, counted while the idle account sweeps (their tables
        // are small: the peak stays the sweep's).
        let op_tables = a.op_tables.stale.then(|| a.count_ops());
        // The call tree, from the same records (§17).
        let tree = super::calltree::build(&a, &kinfo);
        // The collectives' kernel lead-ins too (their idle part needs the
        // idle account's gaps).
        let lead_ins = collector.finish(&a, index(), &compute_label);
        share.sweep_pending();
        let (busy, idle) = match side {
            Some(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            None => (
                gpu_busy(&a, info, &win, &kinfo, index()),
                idle_account(
                    &a,
                    &win,
                    &kinfo,
                    index(),
                    keep_gaps,
                    Beside { before_sweep: &|| (), share: &share },
                ),
            ),
        };
        (busy, roof, idle, op_tables, lead_ins, tree)
    });
    if let Some(t) = op_tables {
        a.op_tables = t;
    }
    budget.check_analysis("the tables", 0)?;
    let efficiency = busy.devices.first().filter(|_| !a.gpu.kernel_spans.is_empty()).map(|d| {
        let device = device_props(info, d.device).map(|p| (p, crate::hardware::recognise(p)));
        super::roofline::efficiency(
            &a,
            roof.as_ref(),
            &|k| kinfo.get(&k).map_or(Category::Other, |i| i.category.clone()),
            device,
            win.n_steps,
            busy.kernel_total.ns,
        )
    });
    let head = headline(&a, &win, &busy, &kinfo, measured);
    let collectives = lead_ins.with_idle(idle.as_ref().and_then(|i| i.gaps.as_ref()));
    let op_account = tree.op_account();
    let rows = Rows { a: &a, kinfo: &kinfo, win: &win, roof: roof.as_ref(), ops: &op_account };
    let tables = rows.tables(busy.kernel_total.ns);
    let mut by_phase = rows.phases(measured);
    if let Some(idle) = &idle {
        for (row, id) in by_phase.phases.iter_mut().zip(rows.phase_ids()) {
            row.idle_ms_per_step =
                Some(round(win.per_step_ms(idle.phase_ns.get(&id).copied().unwrap_or(0)), 3));
        }
    }
    // How the work already runs: what the levers rest on (§16).
    let parts = super::facts::Parts {
        kernels: &tables.kernels,
        ops: &tables.ops,
        efficiency: efficiency.as_ref(),
        graph_launches_per_step: head.graph_launches_per_step,
        steps: win.n_steps,
    };
    let ranges = host_ranges(&a);
    let mut facts = super::facts::of_parts(&parts, &ranges);
    // Our capture's RepConvN branch ranges (what `--fuse` merges away
    // besides BatchNorm), per step, for the fusion lever.
    let repconv_branches = ranges
        .iter()
        .find(|r| r.0 == verdict::REPCONV_BRANCH)
        .map_or(0.0, |r| r.1 as f64 / win.n_steps.max(1.0));
    let mut warnings = caveats(&a, measured);
    budget.check_analysis("the step model", 0)?;
    // One model of the step (§14), once every account is done with its
    // lists: its critical path and the standard what-ifs.
    let model = if !a.gpu.kernel_spans.is_empty() || keep_model {
        match super::model::of_pass(&a, &kinfo, &win.steps, keep_model) {
            (Some(m), note) => Some((m, note)),
            (None, note) => {
                warnings.extend(note);
                None
            }
        }
    } else {
        None
    };
    if let Some((m, _)) = &model {
        let kernel_ms: f64 = tables.kernels.iter().map(|k| k.ms_per_step).sum();
        facts.fusable_chains =
            super::facts::chains(&m.chains(), &m.names, m.n_steps as f64, kernel_ms);
    }
    let step_model = model.as_ref().filter(|_| !a.gpu.kernel_spans.is_empty()).map(|(m, note)| {
        let roofline: Vec<(u8, f64)> = efficiency
            .iter()
            .flat_map(|e| &e.categories)
            .filter_map(|c| {
                let lost = c.achieved.lost_ms_per_step?;
                let total = tables.categories.iter().find(|r| r.name == c.category)?.ms_per_step;
                let class = Category::ALL.iter().position(|x| *x == c.category)? as u8;
                (total > 0.0).then(|| (class, ((total - lost) / total).clamp(0.0, 1.0)))
            })
            .collect();
        super::model::view(m, head.step_ms, &roofline, note.clone())
    });
    // The levers the trace supports, ranked by what the model says each
    // saves (§16), with the what-ifs they need beyond the standard set.
    // Only on a steady step: not where the window cannot support a verdict
    // or records a graph capture (§15).
    let health = health(&a, &win);
    let steady = !health
        .iter()
        .any(|r| r.severity == Severity::CannotTell || r.check == HealthCheck::GraphCapture);
    let levers = match (model.as_ref(), step_model.as_ref()) {
        (Some((m, _)), Some(view)) if steady => {
            let extra =
                super::levers::extra(&facts).into_iter().filter_map(|(flags, what, pattern)| {
                    let re =
                        regex::RegexBuilder::new(pattern).case_insensitive(true).build().ok()?;
                    m.kernels_removed(flags, what, |n| re.is_match(n))
                });
            let mut extra: Vec<super::model::Scenario> = extra.collect();
            extra.extend(facts.fusable_chains.as_ref().and_then(|_| m.chains_fused()));
            let gemm_ms = tables
                .categories
                .iter()
                .find(|c| c.name == Category::GemmConv)
                .map_or(0.0, |c| c.ms_per_step);
            let amp = efficiency.as_ref().and_then(|e| super::levers::Amp::of(e, &facts, gemm_ms));
            if let Some(a) = &amp {
                let mut change = super::model::Change::default();
                change.class_factor[Category::GemmConv.index().unwrap_or(2)] = a.scale;
                extra.push(super::model::Scenario {
                    flags: a.flags(),
                    what: "'gemm / conv' GPU work in a 16-bit format (AMP)".into(),
                    change,
                    removes_ns: 0,
                });
            }
            let mut rows = view.scenarios.clone();
            rows.extend(super::model::rows(m, head.step_ms, extra));
            super::levers::levers(&super::levers::Ctx {
                amp: amp.as_ref(),
                scenarios: &rows,
                facts: &facts,
                idle: idle.as_ref().map(|i| &i.account),
                launches_per_step: head.launches_per_step,
                mean_kernel_us: head.mean_kernel_us,
                comm_exposed_ms: head.comm_exposed_ms,
                waits_recorded: m.recorded_waits > 0,
            })
        }
        _ => Vec::new(),
    };
    let (mut bound, mut bound_why) = decide(
        &head,
        &busy,
        &by_phase,
        idle.as_ref().map(|i| &i.account),
        efficiency.as_ref(),
        measured,
        (&facts, &levers, repconv_branches),
    );
    // The verdict with what the model says of it: one set of figures.
    if let Some(said) =
        step_model.as_ref().and_then(|m| model_sentence(&bound, m, !levers.is_empty()))
    {
        bound_why = format!("{bound_why} {said}");
    }
    // The window's health before any verdict (§15): where it cannot
    // support one, the verdict says so, and what was recorded follows.
    if let Some(c) = health.iter().find(|r| r.severity == Severity::CannotTell) {
        bound_why = verdict::cannot_tell(c, &bound, &bound_why);
        bound = Verdict::CannotTell;
    }
    let n_steps = win.n_steps;
    let real = measured.and_then(|m| m.real.as_ref());
    let step_ms = head.step_ms;

    let mut profile = Profile {
        schema: SCHEMA_ID.to_string(),
        mode: head.mode,
        trace: path.map(|p| p.display().to_string()),
        model: head.config.model().map(str::to_string),
        config: head.config,
        bound,
        bound_why,
        figures: Figures {
            step_ms: round(step_ms, 3),
            img_per_s: real.and_then(|r| r.img_per_s).or_else(|| {
                let batch = measured?.meta.batch()?;
                (step_ms > 0.0).then(|| round(batch * 1000.0 / step_ms, 2))
            }),
            dataload_ms: head.dataload_ms.map(|v| round(v, 3)),
            dataload_frac: head.dataload_ms.map(|d| round(ratio(d, step_ms), 3)),
            gpu_util: round(busy.gpu_util, 3),
            gpu_util_raw: round(busy.gpu_util_raw, 3),
            memory_pressure: head.memory_pressure,
            cuda_mallocs_per_step: round(head.mallocs_per_step, 2),
            host_overhead_ms_per_step: round(head.host_overhead, 3),
            launches_per_step: round(head.launches_per_step, 2),
            gpu_busy_ms_per_step: round(busy.busy_ms, 3),
            mean_kernel_us: round(head.mean_kernel_us, 2),
            kernels_per_step: round(head.kernels_per_step, 2),
            unique_kernels: a.gpu_tables.kernels.len() as u64,
            memcpy_ms_per_step: round(win.per_step_ms(a.gpu_tables.memcpy.ns), 3),
            tensorcore_pct: round(pct(head.tc_ns, busy.kernel_total.ns), 1),
            peak_vram_mb: head.peak_vram_mb,
            window: Window {
                wall_ms: round(win.wall_ns as f64 / MS, 3),
                real_steps: n_steps as u64,
            },
            latency: measured.and_then(|m| m.latency.clone()),
            stages_ms: measured.and_then(|m| m.stages_ms.clone()),
        },
        phases_gpu: by_phase
            .phases
            .iter()
            .map(|p| PhaseGpuRow { phase: p.phase.clone(), gpu_ms_per_step: p.gpu_ms_per_step })
            .collect(),
        phases: by_phase.phases,
        categories: tables.categories,
        // The first rows of `kernels`, whose `calls` they do not repeat.
        top_kernels: tables
            .kernels
            .iter()
            .take(TOP_KERNELS)
            .map(|k| KernelRow { calls: None, ..k.clone() })
            .collect(),
        kernels: tables.kernels,
        kernels_by_phase: by_phase.kernels,
        ops_by_phase: by_phase.ops,
        ops: tables.ops,
        attribution: Some(Attribution {
            method: "correlation".into(),
            gpu_events: a.counts.gpu_in_steps,
            via_launch: a.counts.via_launch,
            via_time_window: a.counts.via_time,
            outside_steps: a.counts.gpu_outside,
            malformed_events: a.counts.malformed,
            events_read: info.events,
            passes: 1,
        }),
        memory: super::memory::timeline(&a),
        idle: idle.map(|i| i.account),
        efficiency,
        step_model,
        devices: busy.devices,
        streams: busy.streams,
        extras: ExtraFigures {
            comm_ms_per_step: head.comm_ms.map(|v| round(v, 3)),
            comm_exposed_ms_per_step: head.comm_exposed_ms.map(|v| round(v, 3)),
            comm_overlap_pct: (busy.comm_total.0 > 0)
                .then(|| round(pct(busy.comm_total.1, busy.comm_total.0), 1)),
            graph_launches_per_step: head.graph_launches_per_step,
            graph_replay_ms_per_step: Some(tree.graph_ns())
                .filter(|ns| *ns > 0)
                .map(|ns| round(win.per_step_ms(ns), 3)),
            graph_replay_attributed_ms_per_step: a
                .captures
                .attached
                .as_ref()
                .filter(|_| tree.graph_ns() > 0)
                .map(|_| round(win.per_step_ms(tree.graph_attributed_ns), 3)),
            phases_inferred: a.inference.how.clone(),
            host_in_ops_frac: head.in_ops_frac,
        },
        distributed: info.distributed.clone(),
        step_times: step_times(&a.ranges),
        collectives,
        call_tree: Some(tree.tree(win.n_steps)).filter(|t| !t.is_empty()),
        facts: Some(facts),
        levers,
        health,
        warnings,
        versions: measured.and_then(|m| m.versions.clone()),
        host: measured.and_then(|m| m.host.clone()),
        ..Default::default()
    };
    profile.metrics = metrics::of(&profile);
    Ok((profile, model.filter(|_| keep_model).map(|(m, _)| m)))
}

/// Refuses a trace with nothing to analyse (docs/spec.md §1.1) rather
/// than summarising it as zeros.
fn check_usable(a: &PassRecord) -> Result<()> {
    // (Ops still to be counted change nothing here: each widened the span.)
    let usable = a.counts.gpu_in_steps + a.counts.gpu_outside + a.counts.mallocs > 0
        || !a.op_tables.ops_by_phase.is_empty();
    if a.span.is_none() && !usable {
        return Err(Error::failed(format!(
            "the trace has no events to analyse ({} events read; none is a CPU op, runtime call or GPU event)",
            a.counts.events
        )));
    }
    Ok(())
}

// --- the window: every measured step, or the whole trace as one step.

/// The measured window (docs/analysis.md §2).
struct Span {
    steps: Vec<(i64, i64)>,
    n_steps: f64,
    wall_ns: i64,
}

impl Span {
    fn per_step_ms(&self, ns: i64) -> f64 {
        ns as f64 / MS / self.n_steps
    }
}

/// The step intervals, or the trace's span as one step when it has none.
fn window(a: &PassRecord) -> Span {
    let mut steps = a.ranges.step_intervals();
    if steps.is_empty() {
        let (s, e) = a.span.unwrap_or((0, 0));
        steps = vec![(s, e.max(s))];
    }
    let wall_ns = steps.iter().map(|(s, e)| e - s).sum();
    Span { steps, n_steps: a.ranges.step_count() as f64, wall_ns }
}

/// Each `ProfilerStep#N`'s wall time, when there are two or more.
fn step_times(ranges: &Ranges) -> Vec<StepTime> {
    let steps = ranges.numbered_steps();
    let times =
        steps.iter().map(|&(step, s, e)| StepTime { step, ms: round((e - s) as f64 / MS, 3) });
    if steps.len() >= 2 { times.collect() } else { Vec::new() }
}

// --- GPU busy: union per device, clipped to the steps.

/// Category, Tensor Core flag and label once per kernel name, for all the
/// GPU work the trace holds: the kernels' were worked out (demangled) in
/// the pass; the other GPU work's (copies, sets) here.
fn kernel_info(a: &mut PassRecord) -> KernelClasses {
    let mut kinfo = std::mem::take(&mut a.gpu.kernel_classes);
    for &n in a.gpu_tables.kernels.keys() {
        kinfo.entry(n).or_insert_with(|| classify(a.names.get(n)));
    }
    kinfo
}

/// Busy time per device and stream, communication overlap, utilisation.
struct Busy {
    devices: Vec<DeviceRow>,
    streams: Vec<StreamRow>,
    kernel_total: Agg,
    /// (communication, overlapped) ns summed over devices.
    comm_total: (i64, i64),
    n_dev: f64,
    busy_ms: f64,
    gpu_util: f64,
    gpu_util_raw: f64,
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
fn device_props(info: &TraceInfo, device: i64) -> Option<&crate::trace::DeviceProps> {
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
    let mut places = super::ranges::PlaceCache::default();
    // Communication and the rest, per device: how much communication the
    // compute kernels hide (only traces with communication split them).
    let has_comm = kinfo.values().any(|k| k.category == Category::Communication);
    let is_comm = |k: &KernelSpan| kinfo[&k.name].category == Category::Communication;
    let mut comm_total = (0i64, 0i64);
    let mut devices: Vec<DeviceRow> = Vec::new();
    // Each stream's busy time in the steps, and its kernels there: its
    // kernels come in time order, so no list of its union is kept.
    let mut by_stream: HashMap<(i64, i64), (OverlapSum, u64)> = HashMap::default();
    for (device, ks) in index.devices() {
        let spans = DeviceSpans { ks, all: &a.gpu.kernel_spans }.iter(0);
        let raw = overlap_each(spans.clone().map(|k| (k.start, k.end)), steps);
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
                .or_insert_with(|| (OverlapSum::new(steps), 0));
            stream.0.push(k.start, k.end);
            let counted = u64::from(a.ranges.in_step_cached(&mut places, k.start));
            stream.1 += counted;
            in_steps += counted;
        }
        let busy = busy.total();
        let props = device_props(info, device);
        let mem = a.memory.peaks.get(&device);
        comm_total.0 = comm_total.0.saturating_add(comm_ns);
        comm_total.1 = comm_total.1.saturating_add(hidden);
        devices.push(DeviceRow {
            vendor: vendor(a, info, props),
            name: props.map(|p| p.name.trim().to_string()).filter(|n| !n.is_empty()),
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
    let gpu_util_raw = ratio(kernel_total.ns as f64, wall_ns as f64) / n_dev;
    Busy { devices, streams, kernel_total, comm_total, n_dev, busy_ms, gpu_util, gpu_util_raw }
}

// --- why the GPU waits.

/// The idle account over each step (docs/analysis.md §12); None without
/// kernels (a CPU run).
fn idle_account<'a>(
    a: &'a PassRecord,
    win: &Span,
    kinfo: &KernelClasses,
    index: &'a KernelIndex,
    keep_gaps: bool,
    beside: Beside<'_, 'a>,
) -> Option<super::idle::Account> {
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
    super::idle::account(a, index, &steps, win.n_steps, &label, keep_gaps, beside)
}

// --- measured numbers win over trace-derived ones where they exist.

/// The step-level figures: measured where the capture timed them, else
/// from the trace (docs/analysis.md §4), and the memory-pressure evidence (§9).
struct Headline {
    mode: Option<Mode>,
    config: RunConfig,
    cuda: bool,
    step_ms: f64,
    dataload_ms: Option<f64>,
    host_overhead: f64,
    /// CPU runs: the share of the step the busiest thread spent inside
    /// framework ops (the rest is the loop's own code, Python, waits).
    in_ops_frac: Option<f64>,
    launches_per_step: f64,
    kernels_per_step: f64,
    graph_launches_per_step: Option<f64>,
    comm_ms: Option<f64>,
    comm_exposed_ms: Option<f64>,
    mean_kernel_us: f64,
    /// Kernel time in Tensor / Matrix Core kernels.
    tc_ns: i64,
    /// Graph captures begun in the trace.
    graph_captures: u64,
    mallocs_per_step: f64,
    reserved_full: Option<(f64, f64)>,
    memory_pressure: bool,
    peak_vram_mb: Option<f64>,
}

/// Mode, step time, launches, communication and memory pressure.
fn headline(
    a: &PassRecord,
    win: &Span,
    busy: &Busy,
    kinfo: &KernelClasses,
    measured: Option<&Measurements>,
) -> Headline {
    let n_steps = win.n_steps;
    let kernel_total = busy.kernel_total;
    let mode = measured
        .and_then(Measurements::mode)
        .map(|m| if m == Mode::Inference { Mode::Inference } else { Mode::Training })
        .or_else(|| if a.inference.how.is_some() { None } else { phase_mode(&a.phases) })
        .or(Some(evidence_mode(&a.evidence)));
    let trace_step_ms = win.wall_ns as f64 / MS / n_steps;
    let step_ms = measured.and_then(Measurements::step_ms).unwrap_or(trace_step_ms);
    let real = measured.and_then(|m| m.real.as_ref());
    let dataload_ms = match mode {
        Some(Mode::Inference) if measured.is_some() => Some(0.0),
        _ => real.and_then(|r| r.dataload_ms),
    };
    let config = measured.map(|m| m.meta.clone()).unwrap_or_default();
    let cuda = match config.on_cpu() {
        Some(cpu) => !cpu,
        None => !a.gpu.kernel_spans.is_empty() || a.counts.gpu_in_steps > 0,
    };
    let host_overhead = (step_ms - busy.busy_ms - dataload_ms.unwrap_or(0.0)).max(0.0);
    // On a GPU the host's ops only launch work (and backward runs on the
    // autograd engine's device threads): the share means something on CPU.
    let in_ops_frac = (!cuda && win.wall_ns > 0)
        .then(|| a.op_tables.op_cover.values().max_by_key(|u| u.total()).filter(|u| u.lost == 0))
        .flatten()
        .map(|u| u.total())
        // Rounded here, so the verdict's reason and the figure agree.
        .map(|ns| round(ratio(ns as f64, win.wall_ns as f64).min(1.0), 3));
    // A graph launch is one launch however many kernels it replays.
    let launches = kernel_total.count - a.counts.graph_kernels.min(kernel_total.count)
        + a.counts.graph_launches;
    let comm_ms = (!a.gpu.kernel_spans.is_empty())
        .then(|| busy.comm_total.0 as f64 / MS / n_steps / busy.n_dev);
    let comm_exposed_ms =
        comm_ms.map(|_| (busy.comm_total.0 - busy.comm_total.1) as f64 / MS / n_steps / busy.n_dev);
    let mallocs_per_step = a.counts.mallocs as f64 / n_steps;
    let reserved_full = busy
        .devices
        .iter()
        .filter_map(|d| Some((d.peak_reserved_mb?, d.capacity_mb?)))
        .find(|(r, cap)| *r >= verdict::RESERVED_FULL * cap);
    // Allocator churn per step means something only in a steady state, i.e.
    // between step markers; a whole trace (start-up included) is not one.
    let malloc_thrash = a.ranges.has_steps() && mallocs_per_step >= verdict::MALLOCS_PER_STEP;
    let peak_allocated = a.memory.peaks.values().map(|m| m.allocated).fold(0.0, f64::max);
    Headline {
        mode,
        cuda,
        step_ms,
        dataload_ms,
        host_overhead,
        in_ops_frac,
        launches_per_step: launches as f64 / n_steps,
        kernels_per_step: kernel_total.count as f64 / n_steps,
        graph_launches_per_step: (a.counts.graph_launches > 0)
            .then(|| round(a.counts.graph_launches as f64 / n_steps, 2)),
        comm_ms,
        comm_exposed_ms,
        mean_kernel_us: if kernel_total.count > 0 {
            kernel_total.ns as f64 / 1e3 / kernel_total.count as f64
        } else {
            0.0
        },
        tc_ns: a
            .gpu_tables
            .kernels
            .iter()
            .filter(|(n, _)| kinfo[*n].tensor_core)
            .map(|(_, k)| k.ns)
            .fold(0, i64::saturating_add),
        graph_captures: a.evidence.graph_captures,
        mallocs_per_step,
        reserved_full,
        memory_pressure: malloc_thrash || reserved_full.is_some(),
        peak_vram_mb: measured
            .and_then(Measurements::peak_vram_mb)
            .or((peak_allocated > 0.0).then(|| round(peak_allocated / 1e6, 1))),
        config,
    }
}

// --- kernels, categories, ops.

/// Builds kernel and op rows per step over the window.
struct Rows<'x> {
    a: &'x PassRecord,
    kinfo: &'x KernelClasses,
    win: &'x Span,
    roof: Option<&'x super::roofline::Roofline>,
    /// The ops' figures, from the call tree.
    ops: &'x OpAccount,
}

/// The whole window's kernel, category and op tables.
struct Tables {
    kernels: Vec<KernelRow>,
    categories: Vec<CategoryRow>,
    ops: Vec<OpRow>,
}

/// Per phase: its row and its kernel and op tables.
struct PhaseTables {
    phases: Vec<PhaseRow>,
    kernels: IndexMap<String, Vec<KernelRow>>,
    ops: IndexMap<String, Vec<OpRow>>,
}

impl Rows<'_> {
    fn kernel_row(&self, name: u32, k: &Agg, denom: i64, phase: Option<u16>) -> KernelRow {
        let perf = self.roof.and_then(|r| match phase {
            Some(p) => r.kernels_by_phase.get(&(p, name)),
            None => r.kernels.get(&name),
        });
        let raw = self.a.names.get(name);
        let KernelClass { category: cat, tensor_core: tc, label } = &self.kinfo[&name];
        KernelRow {
            kernel: label.clone(),
            raw_name: raw.to_string(),
            category: cat.clone(),
            tensorcore: *tc,
            ms_per_step: round(self.win.per_step_ms(k.ns), 4),
            pct_of_gpu: round(pct(k.ns, denom), 2),
            count_per_step: round(k.count as f64 / self.win.n_steps, 2),
            achieved: super::roofline::achieved(perf, self.win.n_steps),
            calls: None,
        }
    }

    fn op_row(&self, name: u32, o: &OpTotals, denom: i64, phase: Option<u16>) -> OpRow {
        let perf = self.roof.and_then(|r| match phase {
            Some(p) => r.ops_by_phase.get(&(p, name)),
            None => r.ops.get(&name),
        });
        OpRow {
            op: self.a.names.get(name).to_string(),
            ms_per_step: round(self.win.per_step_ms(o.ns), 4),
            pct_of_cpu_ops: round(pct(o.ns, denom), 2),
            count_per_step: round(o.calls as f64 / self.win.n_steps, 2),
            self_ms_per_step: Some(round(self.win.per_step_ms(o.self_ns), 4)),
            gpu_ms_per_step: (o.gpu_ns > 0).then(|| round(self.win.per_step_ms(o.gpu_ns), 4)),
            achieved: super::roofline::achieved(perf, self.win.n_steps),
            shape: perf
                .and(self.roof)
                .and_then(|r| r.op_inputs.get(&name))
                .map(|(inputs, _)| self.a.names.get(*inputs).to_string()),
        }
    }

    /// Kernels, the kernel mix by category and ops, sorted by time.
    fn tables(&self, kernel_ns: i64) -> Tables {
        let a = self.a;
        let call = |span: u32| {
            let k = &a.gpu.kernel_spans[span as usize];
            super::kernel_calls::Call { name: k.name, dur: k.end - k.start, queue: k.queue }
        };
        let mut calls =
            super::kernel_calls::calls(&a.gpu.kernel_calls, call, &a.gpu.queues, self.win.n_steps);
        let mut kernels: Vec<KernelRow> = a
            .gpu_tables
            .kernels
            .iter()
            .map(|(n, k)| KernelRow {
                calls: calls.remove(n),
                ..self.kernel_row(*n, k, kernel_ns, None)
            })
            .collect();
        sort_kernels(&mut kernels);
        let mut cat_ns: IndexMap<&Category, i64> = IndexMap::new();
        for (n, k) in &a.gpu_tables.kernels {
            let c = cat_ns.entry(&self.kinfo[n].category).or_insert(0);
            *c = c.saturating_add(k.ns);
        }
        let mut categories: Vec<CategoryRow> = cat_ns
            .iter()
            .filter(|(_, ns)| **ns > 0)
            .map(|(c, ns)| CategoryRow {
                name: (*c).clone(),
                pct: round(pct(*ns, kernel_ns), 1),
                ms_per_step: round(self.win.per_step_ms(*ns), 3),
            })
            .collect();
        categories
            .sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then(x.name.cmp(&y.name)));
        let mut op_totals: HashMap<u32, OpTotals> = HashMap::default();
        for (&(_, name), o) in &self.ops.by_phase {
            op_totals.entry(name).or_default().add(o);
        }
        let op_total = self.ops.in_ops_ns(None);
        let mut ops: Vec<OpRow> =
            op_totals.iter().map(|(n, o)| self.op_row(*n, o, op_total, None)).collect();
        sort_ops(&mut ops);
        Tables { kernels, categories, ops }
    }

    // --- phases.

    /// The phases present, in the usual order (PHASE_ORDER, then the rest
    /// as first seen, `unphased` last when it holds kernels).
    fn phase_ids(&self) -> Vec<u16> {
        let a = self.a;
        let mut phase_ids: Vec<u16> = Vec::new();
        let with_ranges = a.ranges.phases_with_ranges();
        let mut present: Vec<u16> = with_ranges.iter().copied().collect();
        present.extend(a.gpu_tables.kernels_by_phase.keys().map(|(p, _)| *p));
        present.extend(a.op_tables.ops_by_phase.keys().map(|(p, _)| *p).filter(|p| *p != UNPHASED));
        present.extend(a.gpu_tables.memcpy_by_phase.keys().copied().filter(|p| *p != UNPHASED));
        for name in PHASE_ORDER {
            if let Some(id) = (0..a.phases.len() as u16).find(|id| a.phases.name(*id) == *name) {
                if present.contains(&id) && !phase_ids.contains(&id) {
                    phase_ids.push(id);
                }
            }
        }
        for id in 1..a.phases.len() as u16 {
            if present.contains(&id) && !phase_ids.contains(&id) {
                phase_ids.push(id);
            }
        }
        let unphased_kernels = a.gpu_tables.kernels_by_phase.keys().any(|(p, _)| *p == UNPHASED);
        if unphased_kernels
            || (phase_ids.is_empty()
                && a.op_tables.ops_by_phase.keys().any(|(p, _)| *p == UNPHASED))
        {
            phase_ids.push(UNPHASED);
        }
        phase_ids
    }

    /// Per phase: GPU and wall time (measured where synced), kernels, ops,
    /// memcpy, and its kernel and op tables (docs/analysis.md §6).
    fn phases(&self, measured: Option<&Measurements>) -> PhaseTables {
        let a = self.a;
        let range_wall = a.ranges.cpu_phase_wall();
        let mut out =
            PhaseTables { phases: Vec::new(), kernels: IndexMap::new(), ops: IndexMap::new() };
        for id in self.phase_ids() {
            let name = if id == UNPHASED {
                UNPHASED_NAME.to_string()
            } else {
                a.phases.name(id).to_string()
            };
            let ks: Vec<(u32, &Agg)> = a
                .gpu_tables
                .kernels_by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), k)| (*n, k))
                .collect();
            let os: Vec<(u32, &Agg)> = a
                .op_tables
                .ops_by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), o)| (*n, o))
                .collect();
            let trees: Vec<(u32, &OpTotals)> = self
                .ops
                .by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), o)| (*n, o))
                .collect();
            let k_ns: i64 = ks.iter().map(|(_, k)| k.ns).fold(0, i64::saturating_add);
            let k_count: u64 = ks.iter().map(|(_, k)| k.count).sum();
            let o_count: u64 = os.iter().map(|(_, o)| o.count).sum();
            let mut krows: Vec<KernelRow> =
                ks.iter().map(|(n, k)| self.kernel_row(*n, k, k_ns, Some(id))).collect();
            sort_kernels(&mut krows);
            let in_ops = self.ops.in_ops_ns(Some(id));
            let mut orows: Vec<OpRow> =
                trees.iter().map(|(n, o)| self.op_row(*n, o, in_ops, Some(id))).collect();
            sort_ops(&mut orows);
            let wall = measured_wall(measured, &name)
                .or_else(|| range_wall.get(&id).map(|ns| self.win.per_step_ms(*ns)))
                .map(|w| round(w, 3));
            out.phases.push(PhaseRow {
                phase: name.clone(),
                gpu_ms_per_step: round(self.win.per_step_ms(k_ns), 3),
                wall_ms_per_step: wall,
                kernels_per_step: round(k_count as f64 / self.win.n_steps, 2),
                ops_per_step: round(o_count as f64 / self.win.n_steps, 2),
                unique_kernels: ks.len() as u64,
                memcpy_ms_per_step: a
                    .gpu_tables
                    .memcpy_by_phase
                    .get(&id)
                    .map(|ns| round(self.win.per_step_ms(*ns), 3)),
                idle_ms_per_step: None,
            });
            out.kernels.insert(name.clone(), krows);
            out.ops.insert(name, orows);
        }
        out
    }
}

// --- verdict.

/// The verdict and its reason from the figures above (docs/analysis.md §10).
fn decide(
    head: &Headline,
    busy: &Busy,
    by_phase: &PhaseTables,
    idle: Option<&IdleAccount>,
    efficiency: Option<&crate::profile::Efficiency>,
    measured: Option<&Measurements>,
    // The trace's facts, its levers, and our capture's RepConvN branch
    // ranges per step.
    (facts, levers, repconv_branches_per_step): (
        &crate::profile::TraceFacts,
        &[crate::profile::LeverRow],
        f64,
    ),
) -> (Verdict, String) {
    let phase_wall: Vec<(String, f64)> = by_phase
        .phases
        .iter()
        .filter_map(|p| Some((p.phase.clone(), p.wall_ms_per_step?)))
        .collect();
    let evidence = Evidence {
        mode: head.mode,
        cuda: head.cuda,
        memory_pressure: head.memory_pressure,
        mallocs_per_step: head.mallocs_per_step,
        reserved_full: head.reserved_full,
        step_ms: head.step_ms,
        dataload_ms: if measured.is_some() { head.dataload_ms } else { None },
        gpu_util: busy.gpu_util,
        gpu_busy_ms: busy.busy_ms,
        launches_per_step: head.launches_per_step,
        graph_launches_per_step: head.graph_launches_per_step.unwrap_or(0.0),
        comm_exposed_ms: head.comm_exposed_ms.unwrap_or(0.0),
        comm_ms: head.comm_ms.unwrap_or(0.0),
        mean_kernel_us: head.mean_kernel_us,
        host_overhead_ms: head.host_overhead,
        in_ops_frac: head.in_ops_frac,
        stages: measured.and_then(|m| m.stages_ms.as_ref()),
        phase_wall,
        unfused: unfused_batch_norm(
            &head.config,
            &by_phase.phases,
            &by_phase.ops,
            &by_phase.kernels,
            head.cuda,
            repconv_branches_per_step,
        ),
        idle,
        graph_captures: head.graph_captures,
        efficiency,
        facts: Some(facts),
        levers,
    };
    verdict::decide(&evidence)
}

/// The host annotations (`record_function` ranges, the DataLoader's)
/// that start inside the steps: (name, count, total ms), for the facts.
fn host_ranges(a: &PassRecord) -> Vec<(String, u64, f64)> {
    let mut by: HashMap<u32, (u64, i64)> = HashMap::default();
    for r in a.cpu.iter() {
        let super::cpulog::RecKind::Host(HostKind::Annotation | HostKind::Dataload) = r.kind else {
            continue;
        };
        if a.ranges.in_step(r.start) {
            let e = by.entry(r.name).or_default();
            (e.0, e.1) = (e.0 + 1, e.1 + r.dur);
        }
    }
    let mut v: Vec<(String, u64, f64)> = by
        .into_iter()
        .map(|(n, (c, ns))| (a.names.get(n).to_string(), c, ns as f64 / MS))
        .collect();
    v.sort_by(|x, y| x.0.cmp(&y.0));
    v
}

// --- the window's health.

/// The trace-health findings (docs/analysis.md §15) from what the pass saw.
fn health(a: &PassRecord, win: &Span) -> Vec<HealthRow> {
    let numbered = a.ranges.numbered_steps();
    let w = super::health::CheckedWindow {
        numbered: &numbered,
        steps: &win.steps,
        gpu_events: a.counts.gpu_in_steps + a.counts.gpu_outside,
        graph_captures: a.evidence.graph_captures,
    };
    let work = || {
        let kernels = a.gpu.kernel_spans.iter().map(|k| super::health::Work {
            start: k.start,
            end: k.end,
            launch: k.launch().map(|l| (l.start, l.end)),
        });
        let copies = a.gpu.copy_spans.iter().map(|c| super::health::Work {
            start: c.start,
            end: c.end,
            launch: c.launch.map(|l| (l.start, l.end)),
        });
        kernels.chain(copies)
    };
    super::health::check(&a.health, &w, work)
}

// --- what we could not do exactly, said plainly.

/// The profile's warnings: skipped events, placement by time, no steps,
/// no measured numbers.
fn caveats(a: &PassRecord, measured: Option<&Measurements>) -> Vec<String> {
    let mut warnings = Vec::new();
    if a.counts.malformed > 0 {
        warnings.push(format!(
            "{} malformed events skipped (missing, negative or absurd times, wrong field types)",
            a.counts.malformed
        ));
    }
    if a.counts.via_time > 0 {
        warnings.push(format!(
            "{} of {} GPU events had no launch in the trace and were placed by time",
            a.counts.via_time, a.counts.gpu_in_steps
        ));
    }
    if a.counts.launch_after_work > 0 {
        warnings.push(format!(
            "{} GPU events share their correlation id with a launch that began after them (another process's ids, as in a merged trace): not paired with it",
            a.counts.launch_after_work
        ));
    }
    if !a.ranges.has_steps() {
        warnings.push("no ProfilerStep markers: the whole trace is analysed as one step".into());
    }
    if measured.is_none() {
        warnings.push("no measured timing beside this trace: step time, throughput and dataloader wait come from the trace alone".into());
    }
    warnings
}

/// The forward's BatchNorm, unless the capture says its graph was fused:
/// launches per image and their share of the forward (CPU op time over the
/// forward's wall time on CPU, BatchNorm kernel time over the forward's
/// kernel time on CUDA); with the RepConvN branch ranges our capture
/// recorded per step, per image too.
fn unfused_batch_norm(
    config: &RunConfig,
    phases: &[PhaseRow],
    ops_by_phase: &IndexMap<String, Vec<OpRow>>,
    kernels_by_phase: &IndexMap<String, Vec<KernelRow>>,
    cuda: bool,
    repconv_branches_per_step: f64,
) -> Option<verdict::Unfused> {
    if config.fused() == Some(true) {
        return None;
    }
    let forward = "forward";
    let bn = ops_by_phase.get(forward)?.iter().find(|o| o.op == "aten::batch_norm")?;
    let share = if cuda {
        let kernels = kernels_by_phase.get(forward)?;
        let total: f64 = kernels.iter().map(|k| k.ms_per_step).sum();
        let is_bn = |k: &&KernelRow| {
            let n = k.raw_name.to_ascii_lowercase();
            n.contains("batch_norm") || n.contains("batchnorm") || n.contains("bn_fw")
        };
        ratio(kernels.iter().filter(is_bn).map(|k| k.ms_per_step).sum(), total)
    } else {
        ratio(bn.ms_per_step, phases.iter().find(|p| p.phase == forward)?.wall_ms_per_step?)
    };
    let batch = config.batch().unwrap_or(1.0).max(1.0);
    Some(verdict::Unfused {
        batch_norms_per_image: bn.count_per_step / batch,
        share,
        repconv_branches_per_image: repconv_branches_per_step / batch,
    })
}

/// Training or inference from the phases a trace recorded, if it says.
fn phase_mode(phases: &PhaseNames) -> Option<Mode> {
    let names: Vec<&str> = (1..phases.len() as u16).map(|id| phases.name(id)).collect();
    if names.iter().any(|n| *n == "preprocess" || *n == "postprocess") {
        Some(Mode::Inference)
    } else if names.iter().any(|n| *n == "backward" || *n == "optimizer" || *n == "dataload") {
        Some(Mode::Training)
    } else {
        None
    }
}

/// Training, inference or unknown from what the trace recorded (docs/analysis.md §10):
/// backward or optimizer work means training; CPU ops without any means
/// inference; no CPU side at all (a GPU-only trace) says nothing.
fn evidence_mode(e: &super::counts::WorkSigns) -> Mode {
    if e.backward_ops > 0 || e.optimizer_marks > 0 {
        Mode::Training
    } else if e.cpu_ops > 0 {
        Mode::Inference
    } else {
        Mode::Unknown
    }
}

/// A phase's wall time as the capture measured it (synced), if it did.
fn measured_wall(m: Option<&Measurements>, phase: &str) -> Option<f64> {
    let m = m?;
    if phase == "dataload" {
        if let Some(dl) = m.real.as_ref().and_then(|r| r.dataload_ms) {
            return Some(dl);
        }
    }
    if let Some(v) = m.composition_ms.get(phase) {
        return Some(*v);
    }
    let s = m.stages_ms.as_ref()?;
    match phase {
        "preprocess" => s.preprocess,
        "forward" if m.mode() == Some(Mode::Inference) => s.forward,
        "postprocess" => s.postprocess,
        _ => None,
    }
}

fn sort_kernels(rows: &mut [KernelRow]) {
    rows.sort_by(|x, y| {
        y.ms_per_step.total_cmp(&x.ms_per_step).then_with(|| x.raw_name.cmp(&y.raw_name))
    });
}

fn sort_ops(rows: &mut [OpRow]) {
    rows.sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then_with(|| x.op.cmp(&y.op)));
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

fn pct(part: i64, whole: i64) -> f64 {
    ratio(part as f64, whole as f64) * 100.0
}

/// A profile from measured numbers alone (`infer --no-trace`): the latency,
/// stages and verdict, with no kernel or op detail.
pub fn without_trace(m: &Measurements) -> Profile {
    let mode = if m.mode() == Some(Mode::Inference) { Mode::Inference } else { Mode::Training };
    let config = m.meta.clone();
    let cuda = config.on_cpu() == Some(false);
    let step_ms = m.step_ms().unwrap_or(0.0);
    let real = m.real.as_ref();
    let dataload_ms =
        if mode == Mode::Inference { Some(0.0) } else { real.and_then(|r| r.dataload_ms) };
    let mut phases: Vec<PhaseRow> = Vec::new();
    for name in PHASE_ORDER {
        if let Some(wall) = measured_wall(Some(m), name) {
            phases.push(PhaseRow {
                phase: name.to_string(),
                wall_ms_per_step: Some(round(wall, 3)),
                ..Default::default()
            });
        }
    }
    let phase_wall =
        phases.iter().filter_map(|p| Some((p.phase.clone(), p.wall_ms_per_step?))).collect();
    let evidence = Evidence {
        mode: Some(mode),
        cuda,
        step_ms,
        dataload_ms,
        stages: m.stages_ms.as_ref(),
        phase_wall,
        ..Default::default()
    };
    let (bound, bound_why) = verdict::decide(&evidence);
    let n = m.latency.as_ref().map_or(1, |l| l.n.max(1));
    let mut profile = Profile {
        schema: SCHEMA_ID.to_string(),
        mode: Some(mode),
        trace: None,
        model: config.model().map(str::to_string),
        config,
        bound,
        bound_why,
        figures: Figures {
            step_ms: round(step_ms, 3),
            img_per_s: real.and_then(|r| r.img_per_s),
            dataload_ms,
            dataload_frac: dataload_ms.map(|d| round(ratio(d, step_ms), 3)),
            peak_vram_mb: m.peak_vram_mb(),
            window: Window { wall_ms: 0.0, real_steps: n },
            latency: m.latency.clone(),
            stages_ms: m.stages_ms.clone(),
            ..Default::default()
        },
        phases_gpu: Vec::new(),
        phases,
        warnings: vec![
            "captured without a trace (--no-trace): no kernel, op or GPU-utilisation detail".into(),
        ],
        versions: m.versions.clone(),
        host: m.host.clone(),
        ..Default::default()
    };
    profile.metrics = metrics::of(&profile);
    profile
}
