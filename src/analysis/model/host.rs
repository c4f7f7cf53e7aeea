//! What a host thread was doing between its runtime calls, by cause: the
//! idle account's vocabulary (docs/analysis.md §12) for host time rather
//! than GPU idle time. Each thread's records become one sorted list of
//! segments, each with the cause that wins where records overlap
//! (DataLoader, then an allocator call, then a CPU op, then Python or an
//! annotation); time no record covers is Python when the trace records CPU
//! ops (code between ops), else unexplained.

use rustc_hash::FxHashMap as HashMap;

use crate::profile::IdleCause;

/// A cause of host time, most binding first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostCause {
    Dataloader = 0,
    Allocator = 1,
    CpuOp = 2,
    Python = 3,
    Other = 4,
}

impl HostCause {
    pub const ALL: [HostCause; 5] = [
        HostCause::Dataloader,
        HostCause::Allocator,
        HostCause::CpuOp,
        HostCause::Python,
        HostCause::Other,
    ];

    /// The idle account's name for it.
    pub fn idle_cause(self) -> IdleCause {
        match self {
            HostCause::Dataloader => IdleCause::Dataloader,
            HostCause::Allocator => IdleCause::Allocator,
            HostCause::CpuOp => IdleCause::CpuOp,
            HostCause::Python => IdleCause::Python,
            HostCause::Other => IdleCause::Other,
        }
    }

    /// The one an idle cause names, if it is host time.
    pub fn of_idle(c: IdleCause) -> Option<HostCause> {
        HostCause::ALL.into_iter().find(|h| h.idle_cause() == c)
    }
}

/// Time by cause, ns, indexed by `HostCause as usize`.
pub type ByCause = [i64; 5];

/// One thread's time cut into segments of one cause each, sorted.
#[derive(Debug, Clone, Copy)]
struct Seg {
    start: i64,
    end: i64,
    cause: HostCause,
}

/// Every thread's segments.
#[derive(Debug, Clone, Default)]
pub struct HostCauses {
    threads: HashMap<u32, Vec<Seg>>,
    /// What uncovered time is.
    pub uncovered: Option<HostCause>,
}

impl HostCauses {
    /// From records `(thread, start, end, cause)` of the threads wanted;
    /// `cpu_ops`: whether the trace records CPU ops at all.
    pub fn of(records: impl Iterator<Item = (u32, i64, i64, HostCause)>, cpu_ops: bool) -> Self {
        let mut per: HashMap<u32, Vec<(i64, i64, HostCause)>> = HashMap::default();
        for (t, s, e, c) in records {
            if e > s {
                per.entry(t).or_default().push((s, e, c));
            }
        }
        let threads = per.into_iter().map(|(t, recs)| (t, segments(recs))).collect();
        HostCauses {
            threads,
            uncovered: Some(if cpu_ops { HostCause::Python } else { HostCause::Other }),
        }
    }

    /// `[a, b)` on `thread`, by cause.
    pub fn split(&self, thread: u32, a: i64, b: i64) -> ByCause {
        let mut out = [0i64; 5];
        if b <= a {
            return out;
        }
        let rest = self.uncovered.unwrap_or(HostCause::Other) as usize;
        let Some(segs) = self.threads.get(&thread) else {
            out[rest] = b - a;
            return out;
        };
        let mut covered = 0;
        let first = segs.partition_point(|s| s.end <= a);
        for s in &segs[first..] {
            if s.start >= b {
                break;
            }
            let d = s.end.min(b) - s.start.max(a);
            if d > 0 {
                out[s.cause as usize] += d;
                covered += d;
            }
        }
        out[rest] += b - a - covered;
        out
    }

    /// The time `thread`'s records (of any cause) cover in `[a, b)`.
    pub fn covered(&self, thread: u32, a: i64, b: i64) -> i64 {
        let Some(segs) = self.threads.get(&thread).filter(|_| b > a) else { return 0 };
        let first = segs.partition_point(|s| s.end <= a);
        segs[first..]
            .iter()
            .take_while(|s| s.start < b)
            .map(|s| (s.end.min(b) - s.start.max(a)).max(0))
            .sum()
    }

    /// Until when `thread`'s records ran, up to `t`: the end of its last
    /// record begun before `t` (capped at `t`), if any.
    pub fn active_until(&self, thread: u32, t: i64) -> Option<i64> {
        let segs = self.threads.get(&thread)?;
        let k = segs.partition_point(|s| s.start < t);
        segs[..k].last().map(|s| s.end.min(t))
    }

    /// When `thread` last took up work before `t`: the start of its run of
    /// records (gaps under `slack` ns bridged) that reaches `t`, if one
    /// does.
    pub fn resumed_at(&self, thread: u32, t: i64, slack: i64) -> Option<i64> {
        let segs = self.threads.get(&thread)?;
        let k = segs.partition_point(|s| s.start < t);
        let last = segs[..k].last().filter(|s| s.end >= t - slack)?;
        let mut at = last.start;
        for s in segs[..k - 1].iter().rev() {
            if s.end < at - slack {
                break;
            }
            at = s.start.min(at);
        }
        Some(at)
    }

    /// The threads with records.
    pub fn threads(&self) -> impl Iterator<Item = u32> + '_ {
        self.threads.keys().copied()
    }

    /// When `thread`'s records begin, from `t` on: the start of its first
    /// record ending after `t` (no earlier than `t`), if any.
    pub fn active_from(&self, thread: u32, t: i64) -> Option<i64> {
        let segs = self.threads.get(&thread)?;
        let k = segs.partition_point(|s| s.end <= t);
        segs.get(k).map(|s| s.start.max(t))
    }

    pub fn heap_bytes(&self) -> usize {
        self.threads.values().map(|v| v.capacity() * size_of::<Seg>()).sum()
    }
}

/// Records of one thread → disjoint segments, each with the most binding
/// cause active there.
fn segments(mut recs: Vec<(i64, i64, HostCause)>) -> Vec<Seg> {
    // Boundaries: +1 at a start, −1 at an end, per cause.
    let mut events: Vec<(i64, i8, HostCause)> = Vec::with_capacity(recs.len() * 2);
    recs.sort_unstable_by_key(|r| (r.0, r.1));
    for (s, e, c) in recs {
        events.push((s, 1, c));
        events.push((e, -1, c));
    }
    events.sort_unstable_by_key(|e| e.0);
    let mut active = [0i32; 5];
    let mut out: Vec<Seg> = Vec::new();
    let mut at = i64::MIN;
    let mut i = 0;
    while i < events.len() {
        let t = events[i].0;
        let now = HostCause::ALL.into_iter().find(|c| active[*c as usize] > 0);
        if let Some(c) = now.filter(|_| t > at) {
            match out.last_mut() {
                Some(last) if last.cause == c && last.end == at => last.end = t,
                _ => out.push(Seg { start: at, end: t, cause: c }),
            }
        }
        while i < events.len() && events[i].0 == t {
            active[events[i].2 as usize] += i32::from(events[i].1);
            i += 1;
        }
        at = t;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_binding_cause_wins_and_the_rest_is_python() {
        use HostCause::*;
        let recs = vec![
            (1, 0, 100, Python),
            (1, 10, 50, CpuOp),
            (1, 20, 30, Allocator),
            (1, 60, 70, Dataloader),
            (1, 65, 80, CpuOp),
        ];
        let h = HostCauses::of(recs.into_iter(), true);
        // [0,10) py, [10,20) op, [20,30) alloc, [30,50) op, [50,60) py,
        // [60,70) dl, [70,80) op, [80,100) py, then uncovered.
        assert_eq!(h.split(1, 0, 120), [10, 10, 40, 60, 0]);
        assert_eq!(h.split(1, 25, 65), [5, 5, 20, 10, 0]);
        assert_eq!(h.split(2, 0, 7), [0, 0, 0, 7, 0], "a thread with no records");
        let none = HostCauses::of(std::iter::empty(), false);
        assert_eq!(none.split(1, 0, 7), [0, 0, 0, 0, 7]);
    }
}
