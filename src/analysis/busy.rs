//! Busy time as a union of intervals, clipped to the measured steps, so that
//! overlapping streams are never counted twice.

/// Sorts and merges `iv` in place, returning the merged intervals.
pub fn merge(iv: &mut [(i64, i64)]) -> Vec<(i64, i64)> {
    iv.sort_unstable();
    merge_sorted(iv.iter().copied())
}

/// [`merge`] of intervals that already come sorted (no list of them kept).
pub fn merge_sorted(iv: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in iv {
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

/// [`overlap`] of `steps` with the union of intervals that come sorted by
/// start, added up as they come: no list of the union is kept (a device's
/// is as long as its kernels).
pub struct OverlapSum<'s> {
    steps: &'s [(i64, i64)],
    /// The first step not yet passed.
    at: usize,
    /// The union's last interval, still open to merge with.
    open: Option<(i64, i64)>,
    total: i64,
}

impl<'s> OverlapSum<'s> {
    pub fn new(steps: &'s [(i64, i64)]) -> OverlapSum<'s> {
        OverlapSum { steps, at: 0, open: None, total: 0 }
    }

    /// Adds `[s, e)`, which starts at or after every interval before it.
    pub fn push(&mut self, s: i64, e: i64) {
        if e <= s {
            return;
        }
        match &mut self.open {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => {
                self.close();
                self.open = Some((s, e));
            }
        }
    }

    fn close(&mut self) {
        let Some((s, e)) = self.open.take() else { return };
        self.total = self.total.saturating_add(overlap_from(s, e, self.steps, &mut self.at));
    }

    pub fn total(mut self) -> i64 {
        self.close();
        self.total
    }
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

/// The overlap of `[s, e)` with `steps` (sorted, disjoint): [`overlap`]
/// of one interval, found by a search rather than a walk from the first
/// step (a trace can hold millions of records and thousands of steps).
pub fn overlap_one(s: i64, e: i64, steps: &[(i64, i64)]) -> i64 {
    let first = steps.partition_point(|st| st.1 <= s);
    steps[first..]
        .iter()
        .take_while(|st| st.0 < e)
        .map(|st| (e.min(st.1) - s.max(st.0)).max(0))
        .sum()
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
pub fn overlap_each(iv: impl IntoIterator<Item = (i64, i64)>, steps: &[(i64, i64)]) -> i64 {
    let mut first = 0;
    let mut total = 0i64;
    for (s, e) in iv {
        total = total.saturating_add(overlap_from(s, e, steps, &mut first));
    }
    total
}

/// The overlap of `[s, e)` with `steps` (sorted, disjoint) from `first`
/// on, which moves past the steps that end by `s`: the walk of callers
/// whose intervals come by start.
fn overlap_from(s: i64, e: i64, steps: &[(i64, i64)], first: &mut usize) -> i64 {
    while *first < steps.len() && steps[*first].1 <= s {
        *first += 1;
    }
    steps[*first..]
        .iter()
        .take_while(|st| st.0 < e)
        .fold(0i64, |acc, st| acc.saturating_add((e.min(st.1) - s.max(st.0)).max(0)))
}

/// The union of intervals that arrive nearly in order (one thread's CPU ops
/// as profilers write them: by start, or a parent after its children), in
/// constant memory: the last merged intervals stay open to merge with, older
/// ones are only counted. An interval reaching back before those cannot be
/// merged exactly and is counted in `lost` instead.
#[derive(Debug, Clone, Default)]
pub struct StreamingUnion {
    /// Merged, disjoint, sorted.
    recent: Vec<(i64, i64)>,
    /// Length of the intervals no longer open, and where the last one ended.
    settled: i64,
    settled_until: Option<i64>,
    pub lost: u64,
}

/// Merged intervals a [`StreamingUnion`] keeps open (twice this, at most).
const OPEN: usize = 256;

impl StreamingUnion {
    pub fn add(&mut self, s: i64, e: i64) {
        if e <= s {
            return;
        }
        if self.settled_until.is_some_and(|u| s < u) {
            self.lost += 1;
            return;
        }
        // Most work arrives in time order: it touches only the last open
        // interval, or lies past it (what the general case below finds,
        // without its two searches and splice).
        if let Some(last) = self.recent.last_mut()
            && s >= last.0
        {
            if s <= last.1 {
                last.1 = last.1.max(e);
            } else {
                self.recent.push((s, e));
                self.settle();
            }
            return;
        }
        // The open intervals [i, j) touch [s, e]: merge them into one.
        let i = self.recent.partition_point(|iv| iv.1 < s);
        let j = self.recent.partition_point(|iv| iv.0 <= e);
        if i == j {
            self.recent.insert(i, (s, e));
        } else {
            let merged = (s.min(self.recent[i].0), e.max(self.recent[j - 1].1));
            self.recent.splice(i..j, [merged]);
        }
        self.settle();
    }

    /// Past twice [`OPEN`] intervals, the oldest half is counted and closed.
    fn settle(&mut self) {
        if self.recent.len() >= 2 * OPEN {
            for (a, b) in self.recent.drain(..OPEN) {
                self.settled += b - a;
                self.settled_until = Some(b);
            }
        }
    }

    /// Length of the union so far.
    pub fn total(&self) -> i64 {
        self.recent.iter().fold(self.settled, |t, (a, b)| t + (b - a))
    }
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
        let mut k = [(15, 30), (10, 20), (40, 50)];
        k.sort_unstable();
        let steps = [(0, 12), (18, 45)];
        let brute: i64 = k.iter().map(|iv| overlap(&[*iv], &steps)).sum();
        assert_eq!(overlap_each(k.iter().copied(), &steps), brute);
        assert_eq!(brute, 2 + 2 + 12 + 5);
        // One interval at a time, by search: the same as the walk.
        let steps: Vec<(i64, i64)> = (0..50).map(|k| (k * 10, k * 10 + 6)).collect();
        for s in -5..505 {
            for len in [0, 1, 3, 4, 6, 9, 25, 600] {
                let e = s + len;
                assert_eq!(overlap_one(s, e, &steps), overlap(&[(s, e)], &steps), "[{s}, {e})");
            }
        }
    }

    #[test]
    fn overlap_sum_equals_the_merged_overlap() {
        // Intervals by start, overlapping, nested, empty and touching, over
        // steps that cut them anywhere.
        let mut seed = 7u64;
        let mut next = |m: i64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as i64 % m
        };
        for round in 0..200 {
            let mut iv: Vec<(i64, i64)> = (0..round % 40)
                .map(|_| {
                    let s = next(1000);
                    (s, s + next(60) - 5)
                })
                .collect();
            iv.sort_by_key(|k| k.0);
            let mut steps =
                merge(&mut (0..next(6)).map(|_| (next(1000), next(1000))).collect::<Vec<_>>());
            if round % 7 == 0 {
                steps.clear();
            }
            let mut sum = OverlapSum::new(&steps);
            for &(s, e) in &iv {
                sum.push(s, e);
            }
            assert_eq!(sum.total(), overlap(&merge(&mut iv.clone()), &steps), "{iv:?} {steps:?}");
        }
    }

    #[test]
    fn streaming_union_equals_the_sorted_merge() {
        // Nested children, a parent written after its children (post-order)
        // and siblings in order, enough of them to settle old intervals.
        let mut iv = Vec::new();
        for k in 0..2000i64 {
            let base = k * 100;
            iv.extend([
                (base + 10, base + 20),
                (base + 30, base + 40),
                (base + 5, base + 45),
                (base + 50, base + 60),
                (base + 52, base + 55),
            ]);
        }
        let mut u = StreamingUnion::default();
        for &(s, e) in &iv {
            u.add(s, e);
        }
        let merged = merge(&mut iv);
        assert_eq!(u.total(), merged.iter().map(|(s, e)| e - s).sum::<i64>());
        assert_eq!(u.total(), 2000 * (40 + 10));
        assert_eq!(u.lost, 0);
        // Reaching back before the open intervals cannot be merged: counted, not guessed.
        u.add(0, 1_000);
        assert_eq!(u.lost, 1);
    }
}
