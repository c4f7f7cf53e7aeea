//! `compare --fail-on METRIC:CHANGE`: a regression gate for CI
//! (docs/spec.md §4). A gate fails when the metric moved past its
//! threshold, in the threshold's direction, and the significance call
//! (`compare`'s 2·SE rule over the repeats) says the change is real; with
//! single runs it cannot be decided.

use schemars::JsonSchema;
use serde::Serialize;

use super::stats::significance;
use crate::error::{Error, Result};
use crate::profile::{Profile, metrics};
use crate::util::round;

/// A parsed `METRIC:CHANGE`: `step_ms:+5%`, `gpu_util:-3pts`,
/// `idle_ms:+2` (absolute, in the metric's unit).
#[derive(Debug, Clone, PartialEq)]
pub struct GateSpec {
    pub metric: String,
    /// Signed threshold: +5 for `+5%` (fails on a rise of 5% or more),
    /// −3 for `-3pts`.
    pub limit: f64,
    pub unit: GateUnit,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateUnit {
    /// Relative change, % of the before value.
    Percent,
    /// Percentage points: ×100 on a fraction (`gpu_util`, `*_frac`), the
    /// metric's own unit on a `*_pct` metric.
    Points,
    /// The metric's own unit.
    Absolute,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    Pass,
    Fail,
    /// Past the threshold, but no significance call (single runs, or a
    /// contended side): fails only with `--strict`.
    Undecided,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Gate {
    pub gate: String,
    pub metric: String,
    pub before: f64,
    pub after: f64,
    /// The change in the gate's unit (%, points or absolute).
    pub change: f64,
    pub unit: GateUnit,
    pub limit: f64,
    pub verdict: GateVerdict,
    /// The significance call behind the verdict.
    pub significance: String,
}

/// Parses `METRIC:CHANGE`.
pub fn parse(spec: &str) -> Result<GateSpec> {
    let bad = |why: &str| {
        Error::usage(format!(
            "--fail-on {spec:?}: {why} (METRIC:CHANGE, e.g. step_ms:+5%, gpu_util:-3pts, idle_ms:+2)"
        ))
    };
    let (metric, change) = spec.split_once(':').ok_or_else(|| bad("no ':'"))?;
    let change = change.trim();
    if !change.starts_with(['+', '-']) {
        return Err(bad("the change needs a sign: + fails on a rise, - on a fall"));
    }
    let (number, unit) = if let Some(n) = change.strip_suffix('%') {
        (n, GateUnit::Percent)
    } else if let Some(n) = change.strip_suffix("pts").or_else(|| change.strip_suffix("pt")) {
        (n, GateUnit::Points)
    } else {
        (change, GateUnit::Absolute)
    };
    let limit: f64 = number.trim().parse().map_err(|_| bad("not a number"))?;
    if !limit.is_finite() || limit == 0.0 {
        return Err(bad("the threshold must be a non-zero number"));
    }
    Ok(GateSpec { metric: metric.trim().to_string(), limit, unit, text: spec.to_string() })
}

/// The metric's std over the side's repeats, where recorded.
fn std_of(p: &Profile, metric: &str) -> Option<f64> {
    if metric == "img_per_s" {
        return p.img_per_s_std;
    }
    p.metrics_std.get(metric).or_else(|| p.metrics_std.get(&format!("{metric}_per_step"))).copied()
}

/// Each gate over `before` → `after`; an unknown metric, or one missing on
/// a side, is a usage error naming `profile get`'s list.
pub fn evaluate(
    before: &Profile,
    after: &Profile,
    specs: &[GateSpec],
    contended: Option<&str>,
) -> Result<Vec<Gate>> {
    // Each side's metrics as `profile get` names them, made once.
    let (mb, ma) = (metrics::of(before), metrics::of(after));
    let value = |m: &serde_json::Map<String, serde_json::Value>, metric: &str| {
        m.get(metric).and_then(serde_json::Value::as_f64)
    };
    specs
        .iter()
        .map(|g| {
            let missing = |side: &str| {
                Error::usage(format!(
                    "--fail-on {}: no numeric metric '{}' in the {side} profile (`libreyolo profile get PROFILE` lists them)",
                    g.text, g.metric
                ))
            };
            let a = value(&mb, &g.metric).ok_or_else(|| missing("before"))?;
            let b = value(&ma, &g.metric).ok_or_else(|| missing("after"))?;
            let change = match g.unit {
                GateUnit::Percent if a != 0.0 => (b - a) / a.abs() * 100.0,
                GateUnit::Percent => {
                    return Err(Error::usage(format!("--fail-on {}: the before value is 0, so a % change has no meaning", g.text)));
                }
                GateUnit::Points if !g.metric.ends_with("_pct") => (b - a) * 100.0,
                GateUnit::Points | GateUnit::Absolute => b - a,
            };
            let past = if g.limit > 0.0 { change >= g.limit } else { change <= g.limit };
            let (sa, sb) = (std_of(before, &g.metric), std_of(after, &g.metric));
            let (na, nb) = (before.img_per_s_n(), after.img_per_s_n());
            let mut sig = significance(a, b, sa, sb, na, nb);
            if na >= 2 && nb >= 2 && (sa.is_none() || sb.is_none()) {
                sig.significance = format!("the repeats record no spread of {} (only of img_per_s in LibreYOLO 1.6 files)", g.metric);
            }
            let (verdict, why) = match (past, contended, sig.significant) {
                (false, _, _) => (GateVerdict::Pass, sig.significance),
                (true, Some(c), _) => (GateVerdict::Undecided, c.to_string()),
                (true, None, Some(true)) => (GateVerdict::Fail, sig.significance),
                (true, None, Some(false)) => (GateVerdict::Pass, format!("within noise: {}", sig.significance)),
                (true, None, None) => (GateVerdict::Undecided, sig.significance),
            };
            Ok(Gate {
                gate: g.text.clone(),
                metric: g.metric.clone(),
                before: a,
                after: b,
                change: round(change, 3),
                unit: g.unit,
                limit: g.limit,
                verdict,
                significance: why,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_say_why_not() {
        let g = parse("step_ms:+5%").unwrap();
        assert_eq!((g.metric.as_str(), g.limit, g.unit), ("step_ms", 5.0, GateUnit::Percent));
        assert_eq!(parse("gpu_util:-3pts").unwrap().unit, GateUnit::Points);
        assert_eq!(parse("idle_ms:+2").unwrap().unit, GateUnit::Absolute);
        for bad in ["step_ms", "step_ms:5%", "step_ms:+x%", "step_ms:+0%", "step_ms:+inf"] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
