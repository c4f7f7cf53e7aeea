//! `profile modules`: the tree by module scope, forward and backward side
//! by side.

use std::fmt::Write;

use super::num;
use super::tree::shown_footer;
use crate::lens::modules::Modules;

/// The per-step total `profile modules` heads its table with (the
/// explorer's Modules pane shows the same line): GPU time and the part in
/// no module, or a CPU run's host time.
pub fn modules_total(m: &Modules) -> String {
    if m.gpu_ms_per_step <= 0.0 {
        format!("per step CPU {:.3} ms (no GPU kernels: host time)", m.cpu_ms_per_step)
    } else {
        format!(
            "per step GPU {:.3} ms, {:.3} ms of it in no module or annotation",
            m.gpu_ms_per_step, m.outside_ms_per_step
        )
    }
}

pub fn modules(m: &Modules) -> String {
    // A CPU run has no kernel time: its modules by host time.
    let cpu = m.gpu_ms_per_step <= 0.0;
    let mut o = format!("modules, forward and backward: {}\n", modules_total(m));
    // A column for another phase only where a module has time in one.
    let other = !cpu && m.rows.iter().any(|r| r.other_gpu_ms_per_step > 0.0);
    let (unit, share) = if cpu { ("CPU ms", "%cpu") } else { ("GPU ms", "%gpu") };
    let _ = write!(o, "{:>9} {:>6} {:>9} {:>9} {:>8}", unit, share, "fwd ms", "bwd ms", "x/step");
    if !cpu {
        let _ = write!(o, " {:>7} {:>7}", "fwd TF", "bwd TF");
    }
    if other {
        let _ = write!(o, " {:>9}", "other ms");
    }
    let _ = writeln!(o, "  name");
    let tf = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    for r in &m.rows {
        let calls = if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
        let (all, pct, fwd, bwd) = if cpu {
            (r.cpu_ms_per_step, r.pct_of_cpu, r.forward_cpu_ms_per_step, r.backward_cpu_ms_per_step)
        } else {
            (r.gpu_ms_per_step, r.pct_of_gpu, r.forward_gpu_ms_per_step, r.backward_gpu_ms_per_step)
        };
        let _ = write!(o, "{all:>9.3} {pct:>6.1} {fwd:>9.3} {bwd:>9.3} {calls:>8}");
        if !cpu {
            let _ = write!(o, " {:>7} {:>7}", tf(r.forward_tflops), tf(r.backward_tflops));
        }
        if other {
            let _ = write!(o, " {:>9.3}", r.other_gpu_ms_per_step);
        }
        let tag = if r.kind == crate::profile::NodeKind::Annotation { " [annotation]" } else { "" };
        let _ = writeln!(o, "  {}{}{tag}", "  ".repeat(r.depth), crate::render::one_line(&r.name));
    }
    let q = &m.query;
    let view = (q.min_pct, q.depth, q.focus.as_deref());
    shown_footer(&mut o, "shown", (m.rows.len(), m.hidden), view, &m.notes);
    o
}
