//! `profile ops`: the CPU op table, with the GPU time and achieved rates
//! where the trace gives them.

use std::fmt::Write;

use super::efficiency::{
    RATES_HEADER, efficiency_notes, graph_replay_note, past_roofline_note, rate_columns,
};
use super::num;
use crate::lens::ops::Ops;
use crate::render::one_line;

pub fn ops(x: &Ops) -> String {
    if let Some(none) = x.none {
        return format!("ops  {none}\n");
    }
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
            let _ =
                writeln!(o, " {}  {}{shape}", rate_columns(&r.achieved, false), one_line(&r.op));
        } else {
            let _ = writeln!(o, "  {}", one_line(&r.op));
        }
    }
    let scope = x.query.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    // (What `%cpu` is a share of, under a table that shows it.)
    let pct = if x.ops.is_empty() { String::new() } else { format!("; %cpu: {PCT_OF_CPU_OPS}") };
    let _ = writeln!(o, "({} of {} ops{scope}; {} shown{pct})", x.matched, x.total, x.ops.len());
    if x.ops.iter().any(|r| r.achieved.is_past_roofline()) {
        let _ = writeln!(o, "{}", past_roofline_note(true));
    }
    for note in graph_notes(x) {
        let _ = writeln!(o, "note: {note}");
    }
    efficiency_notes(&mut o, &x.efficiency_notes);
    o
}

/// What the op tables say of graph replays: their share, and, where a
/// capture trace gave them ops, that those rows mix two scopes.
pub fn graph_notes(x: &Ops) -> Vec<String> {
    let Some(ms) = x.graph_replay_ms_per_step else { return Vec::new() };
    let mut notes = vec![graph_replay_note(ms, x.graph_replay_attributed_ms_per_step)];
    if x.graph_replay_attributed_ms_per_step.is_some_and(|a| a > 0.0) {
        notes.push(GRAPH_ROWS.to_string());
    }
    notes
}

/// A row with replayed kernels: calls and GPU time count the replays, the
/// rate columns only the calls the trace ran itself (§17.1).
pub const GRAPH_ROWS: &str = "rows of captured ops count each replay as a call and its kernels' GPU time; their rate columns and shape come from the calls this trace ran itself, not from the replays";

/// What the `%cpu` column is a share of (docs/analysis.md §17).
pub const PCT_OF_CPU_OPS: &str = "of the time inside ops, every thread's outermost calls; a row includes the ops nested in it, so rows overlap";
