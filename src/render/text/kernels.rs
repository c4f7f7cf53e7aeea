//! `profile kernels`: the kernel table, of one profile or over a rank set.

use std::fmt::Write;

use super::efficiency::{
    RATES_HEADER, efficiency_notes, graph_replay_note, past_roofline_note, rate_columns,
    thin_rates_note,
};
use super::num;
use crate::lens::kernels::{JobKernels, KernelQuery, Kernels};
use crate::profile::schema::matrix_units_initials;

pub fn kernels(k: &Kernels) -> String {
    if let Some(none) = k.none {
        return format!("kernels  {none}\n");
    }
    let priced = k.kernels.iter().any(|r| r.achieved.is_priced());
    let rates = if priced { RATES_HEADER } else { "" };
    let tc = matrix_units_initials(k.matrix_units);
    let mut o =
        format!("{:>6} {:>9} {:>7} {rates}{tc}  kernel  [category]\n", "%GPU", "ms/step", "x/step");
    for r in &k.kernels {
        let _ = writeln!(
            o,
            "{:6.2} {:>9} {:>7} {} {}  {}  [{}]",
            r.pct_of_gpu,
            format!("{:.3}", r.ms_per_step),
            num(r.count_per_step, 1),
            if priced { rate_columns(&r.achieved, r.rates_thin()) } else { String::new() },
            if r.tensorcore { "Y" } else { " " },
            r.kernel,
            r.category
        );
    }
    matched_line(&mut o, &k.query, k.matched, k.total, k.kernels.len());
    if k.kernels.iter().any(|r| r.rates_thin()) {
        let _ = writeln!(o, "{}", thin_rates_note(true));
    }
    if k.kernels.iter().any(|r| r.achieved.is_past_roofline()) {
        let _ = writeln!(o, "{}", past_roofline_note(true));
    }
    if let Some(ms) = k.graph_replay_ms_per_step {
        let _ =
            writeln!(o, "note: {}", graph_replay_note(ms, k.graph_replay_attributed_ms_per_step));
    }
    efficiency_notes(&mut o, &k.efficiency_notes);
    o
}

/// `kernels` over a rank set: the mean row and where the ranks spread.
pub fn job_kernels(k: &JobKernels) -> String {
    let mut o = format!(
        "{} ranks; per kernel the mean over ranks, and the rank that spends the most\n",
        k.ranks.len()
    );
    let _ = writeln!(
        o,
        "{:>6} {:>9} {:>7} {:>9} {:>9} {:>5} {}  kernel  [category]",
        "%GPU",
        "ms/step",
        "x/step",
        "min",
        "max",
        "rank",
        matrix_units_initials(k.matrix_units)
    );
    for r in &k.kernels {
        let m = &r.mean;
        let _ = writeln!(
            o,
            "{:6.2} {:>9} {:>7} {:>9} {:>9} {:>5}  {}  {}  [{}]",
            m.pct_of_gpu,
            format!("{:.3}", m.ms_per_step),
            num(m.count_per_step, 1),
            format!("{:.3}", r.min_ms_per_step),
            format!("{:.3}", r.max_ms_per_step),
            r.max_rank,
            if m.tensorcore { "Y" } else { " " },
            m.kernel,
            m.category
        );
    }
    matched_line(&mut o, &k.query, k.matched, k.total, k.kernels.len());
    o
}

/// `(12 of 40 kernels in phase forward match; 12 shown)`.
fn matched_line(o: &mut String, q: &KernelQuery, matched: usize, total: usize, shown: usize) {
    let scope = q.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    let _ = writeln!(o, "({matched} of {total} kernels{scope} match; {shown} shown)");
}
