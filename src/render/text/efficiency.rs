//! How close to the hardware (docs/analysis.md §13), as the summary, the
//! kernels and the ops print it: the efficiency line, the rate columns,
//! the notes on what is not priced and on graph replays.

use std::fmt::Write;

use super::{num, pct};
use crate::profile::{Achieved, Efficiency, RooflineBound};

/// The summary's efficiency line (docs/analysis.md §13): the matrix work
/// against its peak, the GPU time far from its roofline, the priced share;
/// or why there are no such figures.
pub fn efficiency_line(e: &Efficiency) -> Option<String> {
    let parts = efficiency_parts(e);
    (!parts.is_empty()).then(|| format!("efficiency  {}", parts.join("; ")))
}

/// The efficiency line's parts, one finding each (the explorer shows one
/// per line).
pub fn efficiency_parts(e: &Efficiency) -> Vec<String> {
    let mut parts = Vec::new();
    if let (Some(m), Some(device)) = (&e.matrix, &e.device) {
        // A % of peak is the rate over the peak; the roofline share (which
        // judges memory-bound calls by the bandwidth) is said as such.
        let mut part = format!(
            "GEMM/conv/attention at {} TFLOP/s, {} of {device} {} peak ({} TFLOP/s), {} of its roofline (time-weighted)",
            num(m.tflops, 1),
            share(m.pct_of_peak),
            m.format,
            num(m.peak_tflops, 1),
            share(m.pct_of_roofline),
        );
        if m.pct_of_matrix_time < MATRIX_TIME_SAID {
            part.push_str(&format!(
                ", over {} of the GEMM/conv/attention kernel time (the rest unpriced)",
                share(m.pct_of_matrix_time)
            ));
        }
        parts.push(part);
    }
    if let Some(low) = e.below_30_pct_of_gpu {
        parts.push(format!("{} of GPU time in ops below 30% of their roofline", share(low)));
    }
    if e.priced_calls > 0 {
        let unpriced: Vec<String> = e
            .unpriced_by_category
            .iter()
            .take(UNPRICED_SAID)
            .map(|u| {
                format!(
                    "{} {} ms ({})",
                    u.category,
                    num(u.ms_per_step, 2),
                    share(u.pct_of_category)
                )
            })
            .collect();
        let unpriced = if unpriced.is_empty() {
            String::new()
        } else {
            format!(" (unpriced: {})", unpriced.join(", "))
        };
        parts.push(format!("{} of GPU time priced{unpriced}", share(e.modelled_pct_of_gpu)));
    }
    parts.extend(e.notes.iter().cloned());
    parts
}

/// Categories named with their unpriced time on the efficiency line.
const UNPRICED_SAID: usize = 3;

/// Below this share of the matrix kernel time priced, the matrix headline
/// says what it rests on.
const MATRIX_TIME_SAID: f64 = 50.0;

/// Every share on the efficiency line: a decimal below 10% ("0.2%",
/// "3.5%", "15%"), and never 0% or 100% for one that is neither: "<0.1%",
/// "99.7%", ">99.9%".
fn share(p: f64) -> String {
    match p {
        p if p <= 0.0 => "0%".to_string(),
        p if p >= 100.0 => "100%".to_string(),
        p if p < 0.05 => "<0.1%".to_string(),
        p if p < 9.95 => format!("{p:.1}%"),
        p if p < 99.5 => format!("{p:.0}%"),
        p if p < 99.95 => format!("{p:.1}%"),
        _ => ">99.9%".to_string(),
    }
}

/// The rate columns of the kernels and ops tables (docs/analysis.md §13).
pub(super) const RATES_HEADER: &str = "TFLOP/s    TB/s  %roof   bound ";

/// One row's rate columns under [`RATES_HEADER`]; dashes where unpriced.
/// `thin`: the rates rest on under half of the row's time, and each carries
/// [`THIN_MARK`] ([`thin_rates_note`] says so under the table).
pub(super) fn rate_columns(a: &Achieved, thin: bool) -> String {
    if !a.is_priced() {
        return format!("{:>7} {:>7} {:>6} {:>7}", "-", "-", "-", "-");
    }
    let mark = if thin { THIN_MARK } else { "" };
    let (flop_mark, byte_mark) = past_marks(a);
    format!(
        "{:>7} {:>7} {:>6} {:>7}",
        a.tflops.map_or_else(|| "-".to_string(), |v| format!("{v:.1}{flop_mark}{mark}")),
        a.tbps.map_or_else(|| "-".to_string(), |v| format!("{v:.2}{byte_mark}{mark}")),
        a.pct_of_peak.map_or_else(|| "-".to_string(), |p| format!("{p:.0}%{mark}")),
        a.roofline_bound.map_or("-", RooflineBound::as_str)
    )
}

/// The mark on a kernel's rates that rest on under half of its time.
pub const THIN_MARK: &str = "*";

/// The mark on a rate past the device's roofline ([`past_roofline_note`]).
pub const PAST_MARK: &str = "^";

/// [`PAST_MARK`] on the rate that bounds a row past its roofline: (on its
/// TFLOP/s, on its TB/s).
fn past_marks(a: &Achieved) -> (&'static str, &'static str) {
    match (a.is_past_roofline(), a.roofline_bound) {
        (true, Some(RooflineBound::Compute)) => (PAST_MARK, ""),
        (true, _) => ("", PAST_MARK),
        _ => ("", ""),
    }
}

/// What [`PAST_MARK`] means, said under a table that shows it
/// (docs/analysis.md §13.2); `marked`: the text table's, else the
/// Markdown/CSV tables' (which carry `past_roofline` as a column).
pub fn past_roofline_note(marked: bool) -> String {
    if marked {
        format!("{PAST_MARK} {PAST_ROOFLINE}; `past_roofline` in --json")
    } else {
        format!("rows with `past_roofline`: {PAST_ROOFLINE}")
    }
}

/// What a rate past the roofline means.
pub const PAST_ROOFLINE: &str = "faster than the device's roofline for the work the model counts: it counts every byte from memory, and the cache served part of them (its % of roofline shows 100)";

/// What [`THIN_MARK`] means, said under a table that shows it
/// (docs/analysis.md §13.2); `marked`: the text table's, else the
/// Markdown/CSV tables' (which carry `priced_pct` as a column).
pub fn thin_rates_note(marked: bool) -> String {
    let pct = crate::profile::RATES_PRICED_PCT;
    let what = format!(
        "rates over under {pct:.0}% of the kernel's time, the part launched by priced ops (its other calls ran under ops without FLOPs or shapes)"
    );
    if marked {
        format!("{THIN_MARK} {what}; `priced_pct` in --json")
    } else {
        format!("rows with `priced_pct` under {pct:.0}%: {what}")
    }
}

/// What the kernel tables say of graph replays (docs/analysis.md §17).
pub fn graph_replay_note(ms: f64, attributed: Option<f64>) -> String {
    match attributed {
        None => format!(
            "{} ms/step of kernel time is in CUDA/HIP graph replays: captured earlier, launched by no op of this trace (no shapes or module for them; --graph-capture gives the capture trace)",
            num(ms, 2)
        ),
        Some(_) => format!(
            "{} ms/step of kernel time is in CUDA/HIP graph replays, {}",
            num(ms, 2),
            graph_attribution(ms, attributed)
        ),
    }
}

/// How much of the graph replays' kernel time the capture trace gave an
/// op (docs/analysis.md §17.1).
pub(super) fn graph_attribution(ms: f64, attributed: Option<f64>) -> String {
    match attributed {
        None => "attributed to no op".to_string(),
        Some(a) => format!(
            "{} attributed to the ops that captured them ({} ms/step not)",
            pct(if ms > 0.0 { (a / ms).min(1.0) } else { 0.0 }),
            num((ms - a).max(0.0), 2)
        ),
    }
}

/// Why the rate columns are missing or partial, as the tables say it.
pub fn rates_note(note: &str) -> String {
    format!("rates: {note}")
}

/// A table's rate notes, one line each, under the rows.
pub(super) fn efficiency_notes(o: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(o, "{}", rates_note(n));
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn a_share_never_reads_0_or_100_when_it_is_neither() {
        let said: Vec<String> =
            [0.0, 0.04, 0.12, 9.94, 9.96, 42.4, 99.49, 99.88, 99.96, 100.0].map(share).into();
        assert_eq!(
            said,
            ["0%", "<0.1%", "0.1%", "9.9%", "10%", "42%", "99%", "99.9%", ">99.9%", "100%"]
        );
    }
}
