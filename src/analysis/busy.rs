//! Busy time as a union of intervals, clipped to the measured steps, so that
//! overlapping streams are never counted twice.

/// Sorts and merges `iv` in place, returning the merged intervals.
pub fn merge(iv: &mut [(i64, i64)]) -> Vec<(i64, i64)> {
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &(s, e) in iv.iter() {
        if e <= s {
            continue;
        }
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Length of the intersection of two sorted, merged interval lists.
pub fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            total += e - s;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// The intersection of two sorted, merged interval lists, as a list.
pub fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            out.push((s, e));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Sum over each interval of `iv` (sorted by start, possibly overlapping)
/// of its overlap with `steps` (sorted, disjoint): the plain, not unioned,
/// busy time. One forward sweep, O(|iv| + |steps|).
pub fn overlap_each(iv: &[(i64, i64)], steps: &[(i64, i64)]) -> i64 {
    let mut first = 0;
    let mut total = 0i64;
    for &(s, e) in iv {
        while first < steps.len() && steps[first].1 <= s {
            first += 1;
        }
        let mut j = first;
        while j < steps.len() && steps[j].0 < e {
            total = total.saturating_add((e.min(steps[j].1) - s.max(steps[j].0)).max(0));
            j += 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_overlapping_streams_is_not_double_counted() {
        let mut k = vec![(10, 20), (15, 30), (40, 50), (45, 46), (60, 60)];
        let merged = merge(&mut k);
        assert_eq!(merged, vec![(10, 30), (40, 50)]);
        // Clipped to a window [0, 45): 20 + 5.
        assert_eq!(overlap(&merged, &[(0, 45)]), 25);
        assert_eq!(overlap(&merged, &[(0, 12), (18, 42)]), 2 + 12 + 2);
    }

    #[test]
    fn intersection_lists_the_common_parts() {
        let a = [(0, 10), (20, 30)];
        let b = [(5, 25), (28, 40)];
        let both = intersect(&a, &b);
        assert_eq!(both, vec![(5, 10), (20, 25), (28, 30)]);
        let len: i64 = both.iter().map(|(s, e)| e - s).sum();
        assert_eq!(len, overlap(&a, &b));
    }

    #[test]
    fn plain_sum_counts_overlaps_twice() {
        let mut k = vec![(15, 30), (10, 20), (40, 50)];
        k.sort_unstable();
        let steps = [(0, 12), (18, 45)];
        let brute: i64 = k.iter().map(|iv| overlap(&[*iv], &steps)).sum();
        assert_eq!(overlap_each(&k, &steps), brute);
        assert_eq!(brute, 2 + 2 + 12 + 5);
    }
}
