//! The step-level figures: measured where the capture timed them, else
//! from the trace.

use super::accounts::Busy;
use super::{MS, Span, ratio};
use crate::analysis::PassRecord;
use crate::analysis::counts::WorkSigns;
use crate::analysis::gpulog::KernelClasses;
use crate::analysis::placed::OpTables;
use crate::analysis::ranges::PhaseNames;
use crate::analysis::verdict;
use crate::profile::{Measurements, Mode, RunConfig};
use crate::util::round;

/// The step-level figures: measured where the capture timed them, else
/// from the trace (docs/analysis.md §4), and the memory-pressure evidence (§9).
pub(super) struct Headline {
    pub mode: Option<Mode>,
    pub config: RunConfig,
    pub cuda: bool,
    pub step_ms: f64,
    pub dataload_ms: Option<f64>,
    pub host_overhead: f64,
    /// CPU runs: the share of the step the busiest thread spent inside
    /// framework ops (the rest is the loop's own code, Python, waits).
    pub in_ops_frac: Option<f64>,
    pub launches_per_step: f64,
    pub kernels_per_step: f64,
    pub graph_launches_per_step: Option<f64>,
    /// Where some kernels' launches are not in the trace: the launches it
    /// did record, per step.
    pub launches_recorded_per_step: Option<f64>,
    pub comm_ms: Option<f64>,
    pub comm_exposed_ms: Option<f64>,
    pub mean_kernel_us: f64,
    /// Kernel time in Tensor / Matrix Core kernels.
    pub tc_ns: i64,
    /// Graph captures begun in the trace.
    pub graph_captures: u64,
    pub mallocs_per_step: f64,
    pub reserved_full: Option<(f64, f64)>,
    pub memory_pressure: bool,
    pub peak_vram_mb: Option<f64>,
}

/// Mode, step time, launches, communication and memory pressure.
pub(super) fn headline(
    a: &PassRecord,
    op_tables: &OpTables,
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
        .then(|| op_tables.op_cover.values().max_by_key(|u| u.total()).filter(|u| u.lost == 0))
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
        launches_recorded_per_step: (a.counts.kernels_via_time > 0)
            .then(|| round(launches.saturating_sub(a.counts.kernels_via_time) as f64 / n_steps, 2)),
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
fn evidence_mode(e: &WorkSigns) -> Mode {
    if e.backward_ops > 0 || e.optimizer_marks > 0 {
        Mode::Training
    } else if e.cpu_ops > 0 {
        Mode::Inference
    } else {
        Mode::Unknown
    }
}
