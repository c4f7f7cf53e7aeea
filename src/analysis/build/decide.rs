//! The verdict, its levers, the window's health and the warnings: what
//! the figures above say.

use indexmap::IndexMap;
use rustc_hash::FxHashMap as HashMap;

use super::accounts::Busy;
use super::headline::Headline;
use super::rows::PhaseTables;
use super::{MS, Span, ratio};
use crate::analysis::PassRecord;
use crate::analysis::cpulog::{HostKind, RecKind};
use crate::analysis::model::{Change, Scenario, StepModel};
use crate::analysis::verdict::{self, Evidence};
use crate::profile::{
    Category, CategoryRow, Efficiency, HealthRow, IdleAccount, KernelRow, LeverRow, Measurements,
    OpRow, PhaseRow, RunConfig, StepModelView, TraceFacts, Verdict,
};

/// The levers the trace supports, ranked by what the model says each
/// saves (§16), with the what-ifs they need beyond the standard set; and
/// why AMP is not among them where it would apply but has no figure
/// ([`Amp::unpriced`](crate::analysis::levers::Amp::unpriced)).
pub(super) fn levers(
    (m, view): (&StepModel, &StepModelView),
    head: &Headline,
    facts: &TraceFacts,
    categories: &[CategoryRow],
    efficiency: Option<&Efficiency>,
    idle: Option<&IdleAccount>,
    compiling: bool,
) -> (Vec<LeverRow>, Option<String>) {
    use crate::analysis::levers;
    let sdpa = levers::Sdpa::of(efficiency, facts);
    let extra = levers::extra(facts, sdpa.as_ref()).into_iter().filter_map(
        |(flags, what, pattern, factor)| {
            let re = regex::RegexBuilder::new(pattern).case_insensitive(true).build().ok()?;
            m.kernels_scaled(flags, what, |n| re.is_match(n), factor)
        },
    );
    let mut extra: Vec<Scenario> = extra.collect();
    extra.extend(facts.fusable_chains.as_ref().and_then(|_| m.chains_fused()));
    let gemm_ms =
        categories.iter().find(|c| c.name == Category::GemmConv).map_or(0.0, |c| c.ms_per_step);
    let amp = efficiency.and_then(|e| levers::Amp::of(e, facts, gemm_ms));
    let amp_unpriced =
        efficiency.filter(|_| amp.is_none()).and_then(|e| levers::Amp::unpriced(e, facts, gemm_ms));
    if let Some(a) = &amp {
        let mut change = Change::default();
        change.class_factor[Category::GemmConv.index().unwrap_or(2)] = a.scale;
        extra.push(Scenario {
            flags: a.flags(),
            what: "'gemm / conv' GPU work in a 16-bit format (AMP)".into(),
            change,
            removes_ns: 0,
        });
    }
    let mut rows = view.scenarios.clone();
    rows.extend(crate::analysis::model::rows(m, head.step_ms, extra));
    let ranked = levers::levers(&levers::Ctx {
        amp: amp.as_ref(),
        sdpa: sdpa.as_ref(),
        efficiency,
        scenarios: &rows,
        facts,
        idle,
        launches_per_step: head.launches_per_step,
        mean_kernel_us: head.mean_kernel_us,
        comm_exposed_ms: head.comm_exposed_ms,
        waits_recorded: m.recorded_waits > 0,
        compiling,
        steps_modelled: m.n_steps,
    });
    (ranked, amp_unpriced)
}

/// The verdict and its reason from the figures above (docs/analysis.md §10).
pub(super) fn decide(
    head: &Headline,
    busy: &Busy,
    by_phase: &PhaseTables,
    idle: Option<&IdleAccount>,
    efficiency: Option<&Efficiency>,
    measured: Option<&Measurements>,
    said: &ModelSays<'_>,
) -> (Verdict, String) {
    let ModelSays { facts, levers, repconv_branches_per_step, host_alone_ms, cannot_tell } = *said;
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
        // The figures as the headline gives them (rounded once, to the µs),
        // so that the verdict's "of 6.02 ms" is the header's 6.03 (one
        // number, one rounding: 6.02496 → 6.025 → "6.03").
        step_ms: crate::util::round(head.step_ms, 3),
        dataload_ms: if measured.is_some() { head.dataload_ms } else { None },
        gpu_util: busy.gpu_util,
        gpu_busy_ms: crate::util::round(busy.busy_ms, 3),
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
        host_alone_ms,
        withhold_levers: cannot_tell,
    };
    verdict::decide(&evidence)
}

/// What the verdict reads besides the figures: the trace's facts, the
/// levers and what the step model says.
#[derive(Clone, Copy)]
pub(super) struct ModelSays<'a> {
    pub facts: &'a TraceFacts,
    pub levers: &'a [LeverRow],
    /// Our capture's RepConvN branch ranges per step.
    pub repconv_branches_per_step: f64,
    /// The step with all GPU work taken away (the step model).
    pub host_alone_ms: Option<f64>,
    /// A health finding says the window cannot support a verdict.
    pub cannot_tell: bool,
}

/// The host annotations (`record_function` ranges, the DataLoader's)
/// that start inside the steps: (name, count, total ms), for the facts.
pub(super) fn host_ranges(a: &PassRecord) -> Vec<(String, u64, f64)> {
    let mut by: HashMap<u32, (u64, i64)> = HashMap::default();
    for r in a.cpu.iter() {
        let RecKind::Host(HostKind::Annotation | HostKind::Dataload) = r.kind else {
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

/// The trace-health findings (docs/analysis.md §15) from what the pass saw.
pub(super) fn health(a: &PassRecord, win: &Span) -> Vec<HealthRow> {
    let numbered = a.ranges.numbered_steps();
    let repeated = a.ranges.repeated_steps();
    let c = &a.counts;
    let w = crate::analysis::health::CheckedWindow {
        numbered: &numbered,
        steps: &win.steps,
        gpu_events: c.gpu_in_steps + c.gpu_outside,
        graph_captures: a.evidence.graph_captures,
        launch_after_work: c.launch_after_work,
        repeated: &repeated,
        inferred_steps: a.ranges.steps_inferred(),
    };
    let work = || {
        let kernels = a.gpu.kernel_spans.iter().map(|k| crate::analysis::health::Work {
            start: k.start,
            end: k.end,
            launch: k.launch().map(|l| (l.start, l.end)),
        });
        let copies = a.gpu.copy_spans.iter().map(|c| crate::analysis::health::Work {
            start: c.start,
            end: c.end,
            launch: c.launch.map(|l| (l.start, l.end)),
        });
        kernels.chain(copies)
    };
    crate::analysis::health::check(&a.health, &w, work)
}

/// The profile's warnings: skipped events, placement by time, no steps,
/// no measured numbers.
pub(super) fn caveats(a: &PassRecord, measured: Option<&Measurements>) -> Vec<String> {
    let mut warnings = Vec::new();
    if a.counts.malformed > 0 {
        warnings.push(format!(
            "{} malformed event{} skipped (missing, negative or absurd times, wrong field types)",
            a.counts.malformed,
            crate::util::plural(a.counts.malformed as f64)
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
    if a.ranges.steps_inferred() {
        warnings.push(format!(
            "no ProfilerStep markers: {} steps inferred from the `{}…` ranges, each ending as one does (the first from the recording's start)",
            a.ranges.step_count(),
            crate::analysis::inference::OPTIMIZER_STEP
        ));
    } else if !a.ranges.has_steps() {
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
