//! Plain-text renderings, laid out after the reference transcript and made
//! clearer where it was not (units, n/a instead of "?", notes at the end).
//!
//! One file per reader's output (summary, get, phases, kernels, ops, tree,
//! modules, compare, what-if, job, collectives, memory, merge, capture),
//! `efficiency.rs` for the §13 figures several of them print; the number
//! formats and the small drawings they share are here. Every function is
//! re-exported here: `render::text::X` is each one's path.

mod capture;
mod collectives;
mod compare;
mod efficiency;
mod get;
mod job;
mod kernels;
mod memory;
mod merge;
mod modules;
mod ops;
mod phases;
mod summary;
mod tree;
mod whatif;

pub use capture::capture;
pub use collectives::collectives;
pub use compare::{compare, compare_jobs, metric_value};
pub use efficiency::{
    PAST_MARK, PAST_ROOFLINE, THIN_MARK, efficiency_line, efficiency_parts, graph_replay_note,
    past_roofline_note, rates_note, thin_rates_note,
};
pub use get::{get, scalar};
pub use job::{job, slowest, straggler_line, stragglers_head, why};
pub use kernels::{job_kernels, kernels};
pub use memory::{memory, memory_peak_at, memory_peaks};
pub use merge::merge;
pub use modules::{modules, modules_total};
pub use ops::{PCT_OF_CPU_OPS, graph_notes as ops_graph_notes, ops};
pub use phases::phases;
pub use summary::{idle_lines, latency_samples, lever_lines, step_line, stream_line, summary};
pub use tree::tree;
pub use whatif::{job_what_if, what_if, what_if_all};

/// `12.3456` → "12.35"; integers print without decimals.
pub fn num(v: f64, digits: usize) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.digits$}") }
}

/// A figure that may be missing: `n/a` for none.
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| num(v, digits))
}

/// A memory size given in MB (10⁶ bytes): in GB from 10 GB on, so that a
/// 192 GB device reads as one (`191.6 GB`, not `191628.7 MB`).
pub fn size_mb(mb: f64) -> String {
    if mb.abs() >= 10_000.0 {
        format!("{} GB", num(mb / 1000.0, 1))
    } else {
        format!("{} MB", num(mb, 1))
    }
}

/// `n thing`/`n things`: a count with its noun.
pub fn count(n: impl Into<f64>, noun: &str) -> String {
    let n = n.into();
    format!("{} {noun}{}", num(n, 0), if n == 1.0 { "" } else { "s" })
}

/// A fraction as a whole percentage: `0.873` → "87%".
pub fn pct(frac: f64) -> String {
    format!("{:.0}%", frac * 100.0)
}

/// Images per second, with the spread over repeats where there are
/// several: `512.30 ± 4.10 (n=5) img/s`.
pub fn throughput(img_per_s: Option<f64>, std: Option<f64>, n: u32) -> String {
    match (img_per_s, std) {
        (Some(v), Some(s)) if n > 1 => format!("{} ± {} (n={n}) img/s", num(v, 2), num(s, 2)),
        (Some(v), _) => format!("{} img/s", num(v, 2)),
        (None, _) => "n/a img/s".to_string(),
    }
}

/// A change in per cent, bracketed: ` (+12%)`, a tenth below 1% (` (-0.4%)`,
/// not ` (-0%)`) and unsigned when it rounds to nothing (` (0.0%)`); empty
/// when there is none.
fn change(c: Option<f64>) -> String {
    c.map_or(String::new(), |c| {
        let digits = if c.abs() < 0.95 { 1 } else { 0 };
        let r = crate::util::round(c, digits as i32);
        if r == 0.0 { format!(" ({:.digits$}%)", 0.0) } else { format!(" ({r:+.digits$}%)") }
    })
}

/// The critical path's largest parts on one line.
pub fn path_line(parts: &[crate::profile::PathShare], top: usize) -> String {
    let shown: Vec<String> = parts
        .iter()
        .take(top)
        .map(|p| format!("{} {} {} ms ({:.0}%)", p.kind, p.part, num(p.ms_per_step, 3), p.pct))
        .collect();
    let rest = parts.len().saturating_sub(top);
    let more = if rest > 0 { format!(" · {rest} more") } else { String::new() };
    format!("{}{more}", shown.join(" · "))
}

/// What the critical path spans per step where that is more than the
/// steps (`steps` modelled): "177.592 ms: the steps' 174.829 ms, 0.057 ms
/// between them and 2.706 ms of GPU work after the last one's end". None
/// where it is the steps' time (or a profile written before the split
/// was kept).
pub fn path_span(s: &crate::profile::PathSpan, steps: u64) -> Option<String> {
    let (between, after) = (s.between_steps_ms_per_step, s.after_steps_ms_per_step);
    if s.steps_ms_per_step <= 0.0 || between + after <= 0.0 {
        return None;
    }
    let one = steps <= 1;
    let mut parts = vec![format!(
        "the step{} {} ms",
        if one { "'s" } else { "s'" },
        num(s.steps_ms_per_step, 3)
    )];
    if between > 0.0 {
        parts.push(format!("{} ms between them", num(between, 3)));
    }
    if after > 0.0 {
        let end = if one { "its end" } else { "the last one's end" };
        parts.push(format!("{} ms of GPU work after {end}", num(after, 3)));
    }
    let last = parts.pop().expect("the steps");
    Some(format!("{} ms: {} and {last}", num(s.span_ms_per_step, 3), parts.join(", ")))
}

/// Eight-level block sparkline of `values`, at most `width` cells (a wider
/// series is bucketed, each cell its bucket's maximum, so a slow step
/// always shows). Scaled from 0 so equal steps draw as equal bars.
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let width = width.max(1);
    let cells: Vec<f64> = if values.len() <= width {
        values.to_vec()
    } else {
        (0..width)
            .map(|c| {
                values[c * values.len() / width
                    ..((c + 1) * values.len() / width).max(c * values.len() / width + 1)]
                    .iter()
                    .copied()
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    let max = cells.iter().copied().fold(0.0, f64::max);
    cells
        .iter()
        .map(|v| {
            if max > 0.0 {
                BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            } else {
                BARS[0]
            }
        })
        .collect()
}

/// A horizontal bar of `frac` (0..=1) of `width` cells, in eighths.
pub fn bar(frac: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    let eighths = (frac.clamp(0.0, 1.0) * width as f64 * 8.0).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(EIGHTHS[eighths % 8 - 1]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparklines_scale_from_zero_and_keep_slow_steps_when_bucketed() {
        assert_eq!(sparkline(&[1.0, 2.0, 4.0, 8.0], 10), "▂▃▅█");
        assert_eq!(sparkline(&[5.0, 5.0], 10), "██");
        let mut many = vec![1.0; 100];
        many[57] = 10.0;
        let s = sparkline(&many, 10);
        assert_eq!(s.chars().count(), 10);
        assert_eq!(s.chars().filter(|c| *c == '█').count(), 1, "{s}");
    }

    #[test]
    fn bars_count_eighths() {
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 4), "██");
        assert_eq!(bar(0.53, 4), "██▏", "17 eighths of 32");
        assert_eq!(bar(0.0, 4), "");
    }
}
