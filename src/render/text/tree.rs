//! `profile tree`: the call tree, top-down or bottom-up, and the footer
//! the tree views share.

use std::fmt::Write;

use super::num;
use crate::lens::tree::Tree;

pub fn tree(t: &Tree) -> String {
    let q = &t.query;
    let how = if q.bottom_up { "bottom-up (callers under each node)" } else { "top-down" };
    let scope = q.phase.as_deref().map_or(String::new(), |p| format!(", phase {p}"));
    // A CPU run has no kernel time: its tree by host time, without the
    // GPU's columns of zeros.
    let cpu = t.gpu_ms_per_step <= 0.0;
    let mut o = if cpu {
        format!(
            "call tree by {}, {how}{scope}: per step CPU {:.3} ms (no GPU kernels: host time)\n",
            q.by.as_str(),
            t.cpu_ms_per_step
        )
    } else {
        format!(
            "call tree by {}, {how}{scope}: per step GPU {:.3} ms, CPU {:.3} ms\n",
            q.by.as_str(),
            t.gpu_ms_per_step,
            t.cpu_ms_per_step
        )
    };
    if cpu {
        let _ = writeln!(
            o,
            "{:>9} {:>6} {:>9} {:>8}  {:<10} name",
            "CPU ms", "%cpu", "self ms", "x/step", "kind"
        );
    } else {
        let _ = writeln!(
            o,
            "{:>9} {:>6} {:>9} {:>9} {:>8} {:>8} {:>7}  {:<10} name",
            "GPU ms", "%gpu", "CPU ms", "self ms", "x/step", "kernels", "TFLOP/s", "kind"
        );
    }
    for r in &t.rows {
        let tflops = r.tflops.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
        // Phases and the forward scopes of backward ops are no calls.
        let calls = if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
        let name = format!("{}{}", "  ".repeat(r.depth), crate::render::one_line(&r.name));
        let _ = if cpu {
            writeln!(
                o,
                "{:>9.3} {:>6.1} {:>9.3} {:>8}  {:<10} {name}",
                r.cpu_ms_per_step,
                r.pct_of_cpu,
                r.cpu_self_ms_per_step,
                calls,
                r.kind.as_str(),
            )
        } else {
            writeln!(
                o,
                "{:>9.3} {:>6.1} {:>9.3} {:>9.3} {:>8} {:>8} {:>7}  {:<10} {name}",
                r.gpu_ms_per_step,
                r.pct_of_gpu,
                r.cpu_ms_per_step,
                r.cpu_self_ms_per_step,
                calls,
                num(r.kernels_per_step, 1),
                tflops,
                r.kind.as_str(),
            )
        };
    }
    let view = (q.min_pct, q.depth, q.focus.as_deref());
    shown_footer(&mut o, "nodes shown", (t.rows.len(), t.hidden), view, &t.notes);
    o
}

/// A tree view's last lines: how much it shows and hides, and why; its
/// notes.
pub(super) fn shown_footer(
    o: &mut String,
    shown_what: &str,
    (shown, hidden): (usize, usize),
    (min_pct, depth, focus): (f64, Option<usize>, Option<&str>),
    notes: &[String],
) {
    // Why nodes are hidden: a floor of 0% hides none, so is not said.
    let mut why: Vec<String> = Vec::new();
    if min_pct > 0.0 {
        why.push(format!("under {min_pct}% of both totals"));
    }
    why.extend(depth.map(|d| format!("depth {d}")));
    why.extend(focus.map(|f| format!("focus /{f}/")));
    let why = if why.is_empty() { String::new() } else { format!(": {}", why.join(", ")) };
    match focus {
        // Nothing shown under a focus: it matched nothing, whatever else
        // would have hidden.
        Some(f) if shown == 0 => {
            let _ = writeln!(o, "(no node matches focus /{f}/; {hidden} hidden)");
        }
        _ => {
            let _ = writeln!(o, "({shown} {shown_what}, {hidden} hidden{why})");
        }
    }
    for n in notes {
        let _ = writeln!(o, "note: {n}");
    }
}
