//! Small numeric and parsing helpers shared by the analysis and the lenses.

/// The median of `values` (0 for none): the middle one, or the mean of the
/// two middle ones.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Rounds to `digits` decimals (for stable, readable JSON).
pub fn round(v: f64, digits: i32) -> f64 {
    if !v.is_finite() {
        return 0.0;
    }
    let f = 10f64.powi(digits);
    // `+ 0.0` turns -0.0 into 0.0, which prints as "0", not "-0".
    (v * f).round() / f + 0.0
}

/// A list of numbers and ranges as Linux and `--ranks` write them:
/// `0-3,7` → [0, 1, 2, 3, 7], sorted, each once; `None` when malformed.
pub fn parse_ranges(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        if a > b || b - a > 1_000_000 {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}
