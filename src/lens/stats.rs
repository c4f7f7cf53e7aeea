//! The significance call of two measured sides (docs/spec.md §4): shared
//! by `compare` and its `--fail-on` gates.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Significance {
    pub n: [u32; 2],
    pub std: [Option<f64>; 2],
    /// `None` when the call cannot be made (a side has fewer than 2 trials).
    pub significant: Option<bool>,
    /// The comparison made, or why none was.
    pub significance: String,
}

/// No call: one run on each side. A run's steps are not independent runs
/// (they share its process, warm-up and contention), so a trace of many
/// steps is still one run (docs/spec.md §4).
pub const SINGLE_RUN: &str = "one run on each side (a run's steps are not independent runs): measure both sides with --repeat N (N >= 2) for a significance call";

/// The 2·SE rule: significant when |Δmean| > 2·sqrt(sa²/na + sb²/nb).
pub fn significance(
    a: f64,
    b: f64,
    sa: Option<f64>,
    sb: Option<f64>,
    na: u32,
    nb: u32,
) -> Significance {
    let base = Significance {
        n: [na, nb],
        std: [sa, sb],
        significant: None,
        significance: SINGLE_RUN.to_string(),
    };
    // One side measured more than once: said of the other alone.
    let one_side = |side: &str| Significance {
        significance: format!(
            "one run on the {side} side (a run's steps are not independent runs): measure it with --repeat N (N >= 2) for a significance call"
        ),
        ..base.clone()
    };
    match (na >= 2 && sa.is_some(), nb >= 2 && sb.is_some()) {
        (true, false) => return one_side("after"),
        (false, true) => return one_side("before"),
        (false, false) => return base,
        (true, true) => {}
    }
    let (Some(sa), Some(sb)) = (sa, sb) else { return base };
    let se = (sa * sa / f64::from(na) + sb * sb / f64::from(nb)).sqrt();
    let d = (b - a).abs();
    Significance {
        significant: Some(d > 2.0 * se),
        significance: format!("|d|={} vs 2*SE={}", fmt_sig(d), fmt_sig(2.0 * se)),
        ..base
    }
}

fn fmt_sig(v: f64) -> String {
    if v >= 10.0 { format!("{v:.1}") } else { format!("{v:.3}") }
}
