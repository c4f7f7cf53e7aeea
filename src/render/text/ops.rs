//! `profile ops`: the CPU op table, with the GPU time and achieved rates
//! where the trace gives them.

use std::fmt::Write;

use super::efficiency::{RATES_HEADER, efficiency_notes, past_roofline_note, rate_columns};
use super::num;
use crate::lens::ops::Ops;

pub fn ops(x: &Ops) -> String {
    let priced = x.ops.iter().any(|r| r.achieved.is_priced());
    let gpu = x.ops.iter().any(|r| r.gpu_ms_per_step.is_some());
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let mut o = format!("{:>6} {:>9} {:>9} {:>7}", "%cpu", "ms/step", "self ms", "x/step");
    if gpu {
        let _ = write!(o, " {:>9}", "GPU ms");
    }
    if priced {
        let _ = write!(o, " {RATES_HEADER} op  (shape of its costliest call)");
    } else {
        let _ = write!(o, "  op");
    }
    o.push('\n');
    for r in &x.ops {
        let _ = write!(
            o,
            "{:6.2} {:>9} {:>9} {:>7}",
            r.pct_of_cpu_ops,
            format!("{:.3}", r.ms_per_step),
            ms(r.self_ms_per_step),
            num(r.count_per_step, 1)
        );
        if gpu {
            let _ = write!(o, " {:>9}", ms(r.gpu_ms_per_step));
        }
        if priced {
            let shape = r.shape.as_deref().map_or(String::new(), |s| format!("  ({s})"));
            let _ = writeln!(o, " {}  {}{shape}", rate_columns(&r.achieved, false), r.op);
        } else {
            let _ = writeln!(o, "  {}", r.op);
        }
    }
    let scope = x.query.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    // (What `%cpu` is a share of, under a table that shows it.)
    let pct = if x.ops.is_empty() { String::new() } else { format!("; %cpu: {PCT_OF_CPU_OPS}") };
    let _ = writeln!(o, "({} of {} ops{scope}; {} shown{pct})", x.matched, x.total, x.ops.len());
    if x.ops.iter().any(|r| r.achieved.is_past_roofline()) {
        let _ = writeln!(o, "{}", past_roofline_note(true));
    }
    efficiency_notes(&mut o, &x.efficiency_notes);
    o
}

/// What the `%cpu` column is a share of (docs/analysis.md §17).
pub const PCT_OF_CPU_OPS: &str = "of the time inside ops, every thread's outermost calls; a row includes the ops nested in it, so rows overlap";
