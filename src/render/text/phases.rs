//! `profile phases`: per phase the GPU, wall and idle time, with a bar.

use std::fmt::Write;

use super::{bar, num};
use crate::lens::phases::Phases;

pub fn phases(p: &Phases) -> String {
    // GPU idle per phase, where the profile has the idle account.
    let idle = p.phases.iter().any(|r| r.idle_ms_per_step.is_some());
    let idle_head = if idle { format!(" {:>9}", "idle_ms") } else { String::new() };
    let mut o = format!(
        "{:<12} {:>9} {:>9}{idle_head} {:>9} {:>9}\n",
        "phase", "gpu_ms", "wall_ms", "kernels", "ops"
    );
    for (r, b) in p.phases.iter().zip(p.bars()) {
        let idle_cell = if idle {
            format!(" {:>9}", r.idle_ms_per_step.map_or("-".to_string(), |w| format!("{w:.2}")))
        } else {
            String::new()
        };
        let line = format!(
            "{:<12} {:>9} {:>9}{idle_cell} {:>9} {:>9}  {}",
            r.phase,
            format!("{:.2}", r.gpu_ms_per_step),
            r.wall_ms_per_step.map_or("-".to_string(), |w| format!("{w:.2}")),
            num(r.kernels_per_step, 1),
            num(r.ops_per_step, 1),
            bar(b, 20)
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
    if p.phases.is_empty() {
        o.push_str("(no phases: the trace has no step/<phase> ranges and no GPU work)\n");
    }
    if let Some(how) = &p.inferred {
        let _ = writeln!(o, "phases inferred: {how}");
    }
    if let Some(note) = p.gpu_past_wall() {
        let _ = writeln!(o, "{note}");
    }
    o
}
