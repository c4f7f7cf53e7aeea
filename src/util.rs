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

/// `s` after a noun counted `n` times, unless once: `1 gap/step`, `1.5
/// gaps/step`.
pub fn plural(n: f64) -> &'static str {
    if n == 1.0 { "" } else { "s" }
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

/// A percentage rounded to `digits` decimals, or to as many more as it
/// takes (up to 6) not to read 0 or 100 when it is neither: 0.04 → 0.04,
/// 99.96 → 99.96 at one decimal.
pub fn round_share(pct: f64, digits: i32) -> f64 {
    let mut d = digits;
    loop {
        let r = round(pct, d);
        let off_bounds = (r <= 0.0 && pct > 0.0) || (r >= 100.0 && pct < 100.0);
        if !off_bounds || d >= 6 {
            return r;
        }
        d += 1;
    }
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

/// The first index of sorted `v` at which `below` is false (as
/// `partition_point`), searched outward from `hint`, the answer to a
/// nearby earlier query: one or two probes when successive queries move
/// little, as when a sweep's records arrive nearly in time order; never
/// worse than twice a binary search.
pub fn partition_point_from<T>(v: &[T], hint: usize, below: impl Fn(&T) -> bool) -> usize {
    let hint = hint.min(v.len());
    let (mut lo, mut hi);
    if hint < v.len() && below(&v[hint]) {
        // Forward: the answer is past `hint`.
        (lo, hi) = (hint + 1, hint + 1);
        let mut step = 1;
        while hi < v.len() && below(&v[hi]) {
            lo = hi + 1;
            hi = (hi + step).min(v.len());
            step *= 2;
        }
    } else {
        // Backward: the answer is at or before `hint`.
        (lo, hi) = (hint, hint);
        let mut step = 1;
        while lo > 0 && !below(&v[lo - 1]) {
            hi = lo - 1;
            lo = lo.saturating_sub(step);
            step *= 2;
        }
    }
    lo + v[lo..hi].partition_point(below)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_point_from_any_hint_is_partition_point() {
        // Sorted with runs of equal keys; every query from every hint.
        let v: Vec<i64> = (0..300).map(|i| (i / 3) * 2).collect();
        for x in -3..205 {
            let want = v.partition_point(|&k| k < x);
            for hint in 0..=v.len() + 2 {
                assert_eq!(partition_point_from(&v, hint, |&k| k < x), want, "x {x} hint {hint}");
            }
        }
        assert_eq!(partition_point_from(&[] as &[i64], 5, |&k| k < 1), 0);
    }

    #[test]
    fn a_share_rounds_to_0_or_100_only_when_it_is() {
        assert_eq!(round_share(99.88, 1), 99.9);
        assert_eq!(round_share(99.96, 1), 99.96);
        assert_eq!(round_share(0.04, 1), 0.04);
        assert_eq!(round_share(0.0004, 1), 0.0004);
        assert_eq!((round_share(0.0, 1), round_share(100.0, 1)), (0.0, 100.0));
        assert_eq!(round_share(42.26, 1), 42.3);
    }
}
