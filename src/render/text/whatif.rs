//! `profile what-if`: one change re-timed on the step model, on one
//! profile or a rank set, or every standard change at once (`--all`).

use std::fmt::Write;

use super::job::through;
use super::{change, num, opt, path_line, path_span};
use crate::lens::whatif::{JobWhatIf, Model, WhatIf, WhatIfAll};
use crate::profile::ScenarioRow;

pub fn what_if(w: &WhatIf) -> String {
    let mut o = format!("what-if {}: {}\n", w.scenario, w.what);
    let source = match w.model {
        Model::StepModel => "re-timed on the trace's step model",
        Model::Stored => "the profile's own what-if (re-timed on its step model when it was made)",
    };
    let bound = w.saved_without_inferred_ms.map_or(String::new(), |b| {
        format!(" ({} ms without the waits the model inferred)", num(b, 3))
    });
    let _ = writeln!(
        o,
        "  takes away {} ms of work per step; saves {} ms{bound} ({source})",
        num(w.removes_ms_per_step, 3),
        num(w.saved_ms_per_step, 3)
    );
    let _ = writeln!(
        o,
        "  step   {} -> ~{} ms{}",
        opt(w.step_ms.now, 2),
        opt(w.step_ms.projected, 2),
        change(w.change_pct)
    );
    if let (Some(now), Some(p)) = (w.img_per_s.now, w.img_per_s.projected) {
        let c = if now > 0.0 { Some((p - now) / now * 100.0) } else { None };
        let _ = writeln!(o, "  img/s  {} -> ~{}{}", num(now, 2), num(p, 1), change(c));
    }
    for n in &w.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "  ({})", w.caveat);
    o
}

/// A rank set's what-if: each rank re-timed, the job's step.
pub fn job_what_if(w: &JobWhatIf) -> String {
    let mut o = format!("what-if {}: {}\n", w.scenario, w.what);
    let _ = writeln!(
        o,
        "  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}",
        "rank", "step ms", "takes ms", "saves ms", "~ms"
    );
    for r in &w.ranks {
        let _ = writeln!(
            o,
            "  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}",
            r.rank,
            num(r.step_ms, 3),
            num(r.removes_ms_per_step, 3),
            num(r.saved_ms_per_step, 3),
            num(r.projected_ms, 3)
        );
    }
    let _ = writeln!(
        o,
        "  job step (the slowest rank's)  {} -> ~{} ms{}",
        opt(w.job_step_ms.now, 2),
        opt(w.job_step_ms.projected, 2),
        change(w.change_pct)
    );
    for n in &w.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "  ({})", w.caveat);
    o
}

/// `what-if --all`: the standard changes, largest saving first, and the
/// critical path they act on.
pub fn what_if_all(w: &WhatIfAll) -> String {
    let mut o = format!(
        "what-if --all: the standard changes re-timed on the step model ({} step{} modelled, step {} ms)\n",
        w.steps_modelled,
        if w.steps_modelled == 1 { "" } else { "s" },
        num(w.step_ms, 2)
    );
    // The bound beside each saving, only where the model inferred waits.
    let inferred = w.scenarios.iter().any(|r| r.saved_without_inferred_ms_per_step.is_some());
    let bound = |r: &ScenarioRow| {
        if !inferred {
            return String::new();
        }
        let b = r.saved_without_inferred_ms_per_step.map_or("-".into(), |b| num(b, 3));
        format!("  {b:>11}")
    };
    let bound_head = if inferred { format!("  {:>11}", "no-infer ms") } else { String::new() };
    let _ =
        writeln!(o, "  {:>9}  {:>6}{bound_head}  {:>9}  change", "saves ms", "step", "takes ms");
    for r in &w.scenarios {
        let _ = writeln!(
            o,
            "  {:>9}  {:>5}%{}  {:>9}  {}: {}",
            num(r.saved_ms_per_step, 3),
            // No "-0.0" where (nearly) nothing is saved.
            format!("{:.1}", (-r.saved_pct * 10.0).round() / 10.0 + 0.0),
            bound(r),
            num(r.removes_ms_per_step, 3),
            r.flags,
            r.what
        );
    }
    if inferred {
        let _ = writeln!(
            o,
            "no-infer ms: the saving with none of the waits on other streams the model inferred from the times (a lever well above it rests on them)"
        );
    }
    let span = path_span(&w.span, w.steps_modelled).map_or(String::new(), |s| format!(" ({s})"));
    let _ = writeln!(o, "critical path per step{span}: {}", path_line(&w.critical_path, 8));
    through(&mut o, &w.through);
    for n in &w.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(o, "({})", w.caveat);
    o
}
