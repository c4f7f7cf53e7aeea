//! Small numeric helpers shared by the analysis and the lenses.

/// Rounds to `digits` decimals (for stable, readable JSON).
pub fn round(v: f64, digits: i32) -> f64 {
    if !v.is_finite() {
        return 0.0;
    }
    let f = 10f64.powi(digits);
    // `+ 0.0` turns -0.0 into 0.0, which prints as "0", not "-0".
    (v * f).round() / f + 0.0
}
