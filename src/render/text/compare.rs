//! `profile compare`: two profiles' metrics, phases, kernel mix, idle and
//! kernels before → after, with the regression gates; and two runs of a
//! distributed job.

use std::fmt::Write;

use super::{change, num, opt, pct};
use crate::lens::compare::{Comparison, MetricDelta, RowDelta, RowStatus, Unit};
use crate::lens::gate::{GateUnit, GateVerdict};
use crate::lens::job::JobComparison;

/// One side of a compared metric, in its unit.
pub fn metric_value(m: &MetricDelta, v: Option<f64>) -> String {
    match (v, m.unit) {
        (None, _) => "n/a".to_string(),
        (Some(v), Unit::Fraction) => pct(v),
        (Some(v), Unit::Percent) => format!("{v:.1}%"),
        (Some(v), Unit::Count) => num(v, 2),
        (Some(v), Unit::Mb) => super::size_mb(v),
        (Some(v), unit) => format!("{} {unit}", num(v, 3)),
    }
}

pub fn compare(c: &Comparison) -> String {
    // The mode warning goes to stderr (see cli); stdout holds results only.
    let mut o = String::new();
    for m in &c.metrics {
        let show = |v: Option<f64>| metric_value(m, v);
        let sig = match m.significance.significant {
            Some(true) => format!("  [significant: {}]", m.significance.significance),
            Some(false) => format!("  [NOT significant: {}]", m.significance.significance),
            None if m.metric == "img_per_s" => format!("  [{}]", m.significance.significance),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "{:<14} {} -> {}{}{sig}",
            m.label,
            show(m.before),
            show(m.after),
            m.change_pts.map_or_else(|| change(m.change_pct), |p| format!(" ({p:+.1} pts)"))
        );
    }
    let _ = writeln!(o, "{:<14} {} -> {}", "verdict", c.bound[0], c.bound[1]);
    let phases = format!("phases ({}/step)", c.phases_measure.heading());
    section(&mut o, &phases, &c.phases, 8);
    section(&mut o, "kernel mix (ms/step)", &c.categories, 8);
    section(&mut o, "GPU idle by cause (ms/step)", &c.idle, 8);
    section(&mut o, "kernels, largest changes (ms/step)", &c.changed_kernels(), 8);
    if let Some(none) = c.no_kernel_changed() {
        let _ = writeln!(o, "kernels: {none}");
    }
    if !c.gates.is_empty() {
        let _ = writeln!(o, "gates:");
        for g in &c.gates {
            let unit = match g.unit {
                GateUnit::Percent => "%",
                GateUnit::Points => " pts",
                GateUnit::Absolute => "",
            };
            let verdict = match g.verdict {
                GateVerdict::Pass => "pass",
                GateVerdict::Fail => "FAIL",
                GateVerdict::Undecided => "undecided",
            };
            let _ = writeln!(
                o,
                "  {:<9} {}  {} -> {} ({:+}{unit}; limit {:+}{unit})  [{}]",
                verdict,
                g.gate,
                num(g.before, 3),
                num(g.after, 3),
                g.change,
                g.limit,
                g.significance
            );
        }
    }
    o
}

fn section(o: &mut String, title: &str, rows: &[RowDelta], limit: usize) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "{title}:");
    for r in rows.iter().take(limit) {
        let status = match r.status {
            RowStatus::Faster => "faster",
            RowStatus::Slower => "slower",
            RowStatus::Same => "same",
            RowStatus::Appeared => "appeared",
            RowStatus::Disappeared => "disappeared",
        };
        let name = crate::analysis::kernels::short_name(&r.name);
        let _ = writeln!(
            o,
            "  {:<12} {:>9} -> {:<9}{:<8} {name}",
            status,
            opt(r.before_ms, 3),
            opt(r.after_ms, 3),
            change(r.change_pct)
        );
    }
    if rows.len() > limit {
        let _ = writeln!(o, "  … {} more (--json lists all)", rows.len() - limit);
    }
}

/// Two runs of a distributed job, before → after.
pub fn compare_jobs(c: &JobComparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "job step      {} ms -> {} ms{}  (waited for: {} -> {})",
        num(c.step_ms[0], 2),
        num(c.step_ms[1], 2),
        change(c.step_change_pct),
        c.critical_rank[0].map_or("nobody".to_string(), |r| format!("rank {r}")),
        c.critical_rank[1].map_or("nobody".to_string(), |r| format!("rank {r}"))
    );
    let _ = writeln!(
        o,
        "GPU util      {} -> {} over all ranks",
        pct(c.gpu_util[0]),
        pct(c.gpu_util[1])
    );
    let list = |v: &[u32]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|r| format!("rank {r}")).collect::<Vec<_>>().join(", ")
        }
    };
    let _ = writeln!(o, "stragglers    {} -> {}", list(&c.stragglers[0]), list(&c.stragglers[1]));
    let _ = writeln!(
        o,
        "per rank, ms per step: step, and the wait it caused the others at collectives:"
    );
    for r in &c.ranks {
        let side = |v: Option<f64>| v.map_or("-".to_string(), |v| num(v, 2));
        let _ = writeln!(
            o,
            "  rank {:>4}  {:>9} -> {:<9}{:<8}  caused {:>8} -> {}",
            r.rank,
            side(r.before_ms),
            side(r.after_ms),
            change(r.change_pct),
            side(r.wait_caused_ms[0]),
            side(r.wait_caused_ms[1])
        );
    }
    o
}
