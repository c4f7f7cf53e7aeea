//! The step model as the profile keeps it: the critical path and the
//! standard what-ifs, per step.

use super::StepModel;
use super::path::PathPart;
use super::scenarios::{AtRoofline, class_name};
use crate::profile::{PathShare, PathSpan, ScenarioRow, StepModelView};
use crate::util::round;

impl PathPart {
    /// The part's name in the output.
    pub fn label(&self) -> String {
        match self {
            PathPart::Gpu(c) => class_name(*c),
            PathPart::Launch => "launch → start".into(),
            PathPart::Host(c) => c.idle_cause().to_string(),
            PathPart::Dispatch => "launch".into(),
            PathPart::Sync => "sync".into(),
            PathPart::Dependency => "dependency".into(),
            PathPart::ThreadWait => "other thread".into(),
            PathPart::StreamGap => "stream gaps".into(),
            PathPart::BetweenSteps => "between steps".into(),
        }
    }

    /// `gpu`, `host` or `wait`.
    pub fn kind(&self) -> &'static str {
        match self {
            PathPart::Gpu(_) => "gpu",
            PathPart::Host(_) | PathPart::Dispatch | PathPart::Sync | PathPart::BetweenSteps => {
                "host"
            }
            PathPart::Launch
            | PathPart::Dependency
            | PathPart::ThreadWait
            | PathPart::StreamGap => "wait",
        }
    }
}

/// What the profile keeps of `m`: per step of the model, `step_ms` the
/// profile's step (the base of the savings' shares). `at_roofline`: the
/// categories (index) whose priced time can shrink, and their factor.
pub fn view(
    m: &StepModel,
    step_ms: f64,
    at_roofline: &[(u8, AtRoofline)],
    note: Option<String>,
) -> StepModelView {
    let steps = m.n_steps.max(1) as f64;
    let per_step = |ns: i64| ns as f64 / 1e6 / steps;
    let path = m.critical_path();
    let critical_path = path
        .parts
        .iter()
        .map(|&(p, ns)| PathShare {
            part: p.label(),
            kind: p.kind().to_string(),
            ms_per_step: round(per_step(ns), 3),
            pct: round(ns as f64 * 100.0 / path.span.max(1) as f64, 1),
        })
        .collect();
    let scenarios = rows(m, step_ms, m.standard(at_roofline));
    let mut notes: Vec<String> = note.into_iter().collect();
    notes.extend(few_steps_note(m.n_steps));
    if let Some(past) = m.held_by_idle_thread().filter(|&ns| ns * 50 >= path.span) {
        notes.push(format!(
            "no step markers: the window ends with the records of a thread that launches and waits for nothing, {:.3} ms after every other thread's and the GPU's last work; no change to them ends it sooner (where that thread is not the step's, a monitor's, record with prof.step() markers)",
            past as f64 / 1e6
        ));
    }
    if m.unordered > 0 {
        notes.push(format!(
            "{} nodes could not be ordered by their dependencies (clocks out of step): kept at their trace times",
            m.unordered
        ));
    }
    // The path runs from the first step's start to the last work's end:
    // the steps, the time between them, and GPU work past the last one
    // (the time between is what the others leave of the rounded span, so
    // that the three printed figures add up to it).
    let span_ms = round(per_step(path.span), 3);
    let steps_ms = round(per_step(m.steps_ns), 3);
    let after_ms = round(per_step((m.end() - m.window.1).max(0)), 3);
    let span = PathSpan {
        span_ms_per_step: span_ms,
        steps_ms_per_step: steps_ms,
        between_steps_ms_per_step: round((span_ms - steps_ms - after_ms).max(0.0), 3),
        after_steps_ms_per_step: after_ms,
    };
    StepModelView {
        span,
        steps: m.n_steps as u64,
        critical_path,
        scenarios,
        without_gpu_work_saved_ms_per_step: round(per_step(m.saved_without_gpu_work()), 3),
        inferred_waits: m.inferred_waits as u64,
        recorded_waits: m.recorded_waits as u64,
        recorded_syncs: m.recorded_syncs as u64,
        thread_waits: m.thread_waits as u64,
        notes,
    }
}

/// Said where the window holds fewer than 3 steps: a change that frees
/// the host saves by starting the next step while the GPU finishes this
/// one only where there is a next step (the HTA A100 trace's sync waits:
/// 0 ms/step over one step, 8.7 over two, 11.6 over six).
pub fn few_steps_note(steps: usize) -> Option<String> {
    (steps < 3).then(|| {
        format!(
            "{} modelled: a change that frees the host is credited only with the overlap of consecutive steps the window holds{}; over a longer run it may save more (record 3 or more steps)",
            if steps <= 1 { "one step".to_string() } else { format!("{steps} steps") },
            if steps <= 1 { " (none)" } else { "" }
        )
    })
}

/// Said of one rank's trace of a job (its `distributedInfo`), where it
/// runs collectives: a collective kernel's time holds its rank's wait for
/// the others to arrive, which one trace cannot tell from the transfer,
/// so a saving here holds only if the others' steps shrink as much.
pub fn rank_note(d: Option<&crate::profile::Distributed>, comm_ms: Option<f64>) -> Option<String> {
    let world = job_world(d, comm_ms)?;
    let rank = d?.rank.map_or(String::new(), |r| format!(" {r}"));
    Some(format!(
        "rank{rank} of {world}: its collectives' time holds its wait for the other ranks to arrive, which one trace cannot tell from the transfer; a saving here holds only if the other ranks' steps shrink as much (`what-if` on the folder of every rank's trace re-times the job)"
    ))
}

/// The world size of the job whose rank's trace this is, where the trace
/// runs collectives (what [`rank_note`] is said of).
pub fn job_world(d: Option<&crate::profile::Distributed>, comm_ms: Option<f64>) -> Option<u32> {
    comm_ms.filter(|&c| c > 0.0)?;
    d?.world_size.filter(|&w| w > 1)
}

/// Scenarios re-timed on `m`, as rows, largest saving first.
pub fn rows(
    m: &StepModel,
    step_ms: f64,
    scenarios: Vec<super::scenarios::Scenario>,
) -> Vec<ScenarioRow> {
    let per_step = |ns: i64| ns as f64 / 1e6 / m.n_steps.max(1) as f64;
    m.outcomes(scenarios)
        .into_iter()
        .map(|o| ScenarioRow {
            flags: o.scenario.flags,
            what: o.scenario.what,
            saved_ms_per_step: round(per_step(o.saved_ns), 3),
            saved_pct: if step_ms > 0.0 {
                round(per_step(o.saved_ns) * 100.0 / step_ms, 1)
            } else {
                0.0
            },
            removes_ms_per_step: round(per_step(o.scenario.removes_ns), 3),
            saved_without_inferred_ms_per_step: o
                .without_inferred_ns
                .map(|b| round(per_step(b), 3)),
            frees_host: o.scenario.change.frees_host(),
        })
        .collect()
}
