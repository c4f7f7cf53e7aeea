//! Aggregates → `profile.json` content: the accounts after the pass
//! (`accounts`), the step-level figures (`headline`), the tables (`rows`)
//! and what they say (`decide`), put together here.

mod accounts;
mod decide;
mod headline;
mod rows;

use std::path::Path;

use crate::analysis::PassRecord;
use crate::analysis::gpulog::KernelClasses;
use crate::analysis::kernels::classify;
use crate::analysis::ranges::{PHASE_ORDER, Ranges};
use crate::analysis::verdict::{self, Evidence, model_sentence};
use crate::error::{Error, Result};
use crate::profile::{
    Attribution, Category, ExtraFigures, Figures, HealthCheck, KernelRow, Measurements, Mode,
    PhaseGpuRow, PhaseRow, Profile, SCHEMA_ID, Severity, StepTime, Verdict, Window, metrics,
};
use crate::trace::TraceInfo;
use crate::util::round;
use accounts::device_props;
use decide::{caveats, decide, health, host_ranges};
use headline::headline;
use rows::{Rows, measured_wall};

const MS: f64 = 1e6; // ns per ms
const TOP_KERNELS: usize = 8;

/// What the accounts after the pass (idle, busy union, roofline, call
/// tree, each kernel's calls) hold at once while they run, per GPU event:
/// 38 bytes measured on a trace of a million kernels and nothing else
/// (`bench/memory_bound.sh`), with room.
const ACCOUNTS_BYTES_PER_GPU_EVENT: u64 = 48;

pub(super) fn build(
    a: &PassRecord,
    info: &TraceInfo,
    measured: Option<&Measurements>,
    path: Option<&Path>,
    read: &crate::trace::ReadOptions,
    keep_model: bool,
) -> Result<(Profile, Option<crate::analysis::model::StepModel>)> {
    check_usable(a)?;
    // The memory budget holds here too (docs/analysis.md §1): checked
    // before each of the stages that grow with the trace, the accounts'
    // working lists counted ahead.
    let budget = &read.budget;
    let gpu_events = (a.gpu.kernel_spans.len() + a.gpu.copy_spans.len()) as u64;
    budget.check_analysis("the accounts", gpu_events * ACCOUNTS_BYTES_PER_GPU_EVENT)?;
    let win = window(a);
    let kinfo = kernel_info(a);
    let accounts::Accounts { busy, roof, idle, op_tables, lead_ins, tree } =
        accounts::run(a, info, &win, &kinfo, read.threads);
    let op_tables = op_tables.as_ref().unwrap_or(&a.op_tables);
    budget.check_analysis("the tables", 0)?;
    let efficiency = busy.devices.first().filter(|_| !a.gpu.kernel_spans.is_empty()).map(|d| {
        let device = device_props(info, d.device).map(|p| (p, crate::hardware::recognise(p)));
        crate::analysis::roofline::efficiency(
            a,
            roof.as_ref(),
            &|k| kinfo.get(&k).map_or(Category::Other, |i| i.category.clone()),
            device,
            win.n_steps,
            busy.kernel_total.ns,
        )
    });
    let head = headline(a, op_tables, &win, &busy, &kinfo, measured);
    let collectives = lead_ins.with_idle(idle.as_ref().and_then(|i| i.gaps.as_ref()));
    let op_account = tree.op_account();
    let rows =
        Rows { a, op_tables, kinfo: &kinfo, win: &win, roof: roof.as_ref(), ops: &op_account };
    let tables = rows.tables(busy.kernel_total.ns);
    let mut by_phase = rows.phases(measured);
    if let Some(idle) = &idle {
        for (row, id) in by_phase.phases.iter_mut().zip(rows.phase_ids()) {
            row.idle_ms_per_step =
                Some(round(win.per_step_ms(idle.phase_ns.get(&id).copied().unwrap_or(0)), 3));
        }
    }
    // How the work already runs: what the levers rest on (§16).
    let parts = crate::analysis::facts::Parts {
        kernels: &tables.kernels,
        ops: &tables.ops,
        efficiency: efficiency.as_ref(),
        graph_launches_per_step: head.graph_launches_per_step,
        steps: win.n_steps,
    };
    let ranges = host_ranges(a);
    let mut facts = crate::analysis::facts::of_parts(&parts, &ranges);
    // Our capture's RepConvN branch ranges (what `--fuse` merges away
    // besides BatchNorm), per step, for the fusion lever.
    let repconv_branches = ranges
        .iter()
        .find(|r| r.0 == verdict::REPCONV_BRANCH)
        .map_or(0.0, |r| r.1 as f64 / win.n_steps.max(1.0));
    let mut warnings = caveats(a, measured);
    budget.check_analysis("the step model", 0)?;
    // One model of the step (§14), once every account is done with its
    // lists: its critical path and the standard what-ifs.
    let model = if !a.gpu.kernel_spans.is_empty() || keep_model {
        match crate::analysis::model::of_pass(a, &kinfo, &win.steps, keep_model) {
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
            crate::analysis::facts::chains(&m.chains(), &m.names, m.n_steps as f64, kernel_ms);
    }
    let step_model = model.as_ref().filter(|_| !a.gpu.kernel_spans.is_empty()).map(|(m, note)| {
        let roofline: Vec<_> = efficiency
            .iter()
            .flat_map(|e| &e.categories)
            .filter_map(|c| {
                let total = tables.categories.iter().find(|r| r.name == c.category)?.ms_per_step;
                let class = Category::ALL.iter().position(|x| *x == c.category)? as u8;
                Some((
                    class,
                    crate::analysis::model::scenarios::roofline_factor(&c.achieved, total)?,
                ))
            })
            .collect();
        let mut v = crate::analysis::model::view(m, head.step_ms, &roofline, note.clone());
        v.notes.extend(crate::analysis::model::rank_note(info.distributed.as_ref(), head.comm_ms));
        v
    });
    // The levers the trace supports (§16), only on a steady step: not where the window cannot support a verdict
    // or records a graph capture (§15).
    let health = health(a, &win);
    let steady = !health
        .iter()
        .any(|r| r.severity == Severity::CannotTell || r.check == HealthCheck::GraphCapture);
    let (levers, amp_unpriced) = match (model.as_ref(), step_model.as_ref()) {
        (Some((m, _)), Some(view)) if steady => decide::levers(
            (m, view),
            &head,
            &facts,
            &tables.categories,
            efficiency.as_ref(),
            idle.as_ref().map(|i| &i.account),
            health.iter().any(|r| r.check == HealthCheck::Compilation),
        ),
        _ => (Vec::new(), None),
    };
    warnings.extend(amp_unpriced);
    let (mut bound, mut bound_why) = decide(
        &head,
        &busy,
        &by_phase,
        idle.as_ref().map(|i| &i.account),
        efficiency.as_ref(),
        measured,
        &decide::ModelSays {
            facts: &facts,
            levers: &levers,
            repconv_branches_per_step: repconv_branches,
            host_alone_ms: step_model
                .as_ref()
                .map(|v| v.span.steps_ms_per_step - v.without_gpu_work_saved_ms_per_step),
            cannot_tell: health.iter().any(|r| r.severity == Severity::CannotTell),
        },
    );
    // The verdict with what the model says of it: one set of figures. Not
    // of a graph capture: its waits are by design, and the capture is
    // made once, not every step.
    let capture = health.iter().any(|r| r.check == HealthCheck::GraphCapture);
    if let Some(said) = step_model
        .as_ref()
        .filter(|_| !capture)
        .and_then(|m| model_sentence(&bound, m, !levers.is_empty()))
    {
        bound_why = format!("{bound_why} {said}");
    }
    // One rank of a job: its savings hold only if the others keep up.
    let world = crate::analysis::model::job_world(info.distributed.as_ref(), head.comm_ms);
    if let Some(w) = world.filter(|_| !levers.is_empty()) {
        bound_why = format!(
            "{bound_why} One rank of {w}: its collectives' time holds its wait for the others, so these savings hold only if their steps shrink too; `what-if` on the folder of every rank's trace re-times the job."
        );
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
        memory: crate::analysis::memory::timeline(a),
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
            launches_recorded_per_step: head.launches_recorded_per_step,
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
        let (n, m) = (a.counts.events, a.counts.malformed);
        let why = if m > 0 {
            format!(
                "{m} of them malformed (missing, negative or absurd times, wrong field types), the rest no CPU op, runtime call or GPU event"
            )
        } else {
            "none is a CPU op, runtime call or GPU event".to_string()
        };
        return Err(Error::failed(format!(
            "the trace has no events to analyse ({n} event{} read; {why})",
            crate::util::plural(n as f64)
        )));
    }
    Ok(())
}

/// The measured window (docs/analysis.md §2).
struct Span {
    steps: Vec<(i64, i64)>,
    n_steps: f64,
    wall_ns: i64,
}

impl Span {
    pub(super) fn per_step_ms(&self, ns: i64) -> f64 {
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

/// Category, Tensor Core flag and label once per kernel name, for all the
/// GPU work the trace holds: the kernels' were worked out (demangled) in
/// the pass; the other GPU work's (copies, sets) here.
fn kernel_info(a: &PassRecord) -> KernelClasses {
    let mut kinfo = a.gpu.kernel_classes.clone();
    for &n in a.gpu_tables.kernels.keys() {
        kinfo.entry(n).or_insert_with(|| classify(a.names.get(n)));
    }
    kinfo
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
