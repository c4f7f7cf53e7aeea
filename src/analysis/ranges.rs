//! Steps and phases: the `ProfilerStep#N` and `step/<phase>` ranges of a
//! trace, and the lookups that place an event (thread, time) in them.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Phase id 0: work outside every `step/<phase>` range.
pub const UNPHASED: u16 = 0;
pub const UNPHASED_NAME: &str = "unphased";

/// Canonical order of the phases both capture modes record.
pub const PHASE_ORDER: &[&str] =
    &["dataload", "to_device", "preprocess", "forward", "backward", "postprocess", "optimizer"];

/// Phase names ↔ small ids.
#[derive(Debug, Clone)]
pub struct PhaseNames {
    names: Vec<String>,
    ids: HashMap<String, u16>,
}

impl Default for PhaseNames {
    fn default() -> Self {
        let mut p = PhaseNames { names: Vec::new(), ids: HashMap::default() };
        p.id(UNPHASED_NAME);
        p
    }
}

impl PhaseNames {
    pub fn id(&mut self, name: &str) -> u16 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u16::try_from(self.names.len()).unwrap_or(u16::MAX);
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }
    /// The id of `name`, if it is one.
    pub fn get(&self, name: &str) -> Option<u16> {
        self.ids.get(name).copied()
    }
    pub fn name(&self, id: u16) -> &str {
        self.names.get(usize::from(id)).map_or(UNPHASED_NAME, String::as_str)
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Ranges on one thread, indexed by start for "innermost enclosing" lookups.
#[derive(Debug, Clone, Default)]
struct ThreadRanges {
    by_start: BTreeMap<(i64, u32), (i64, u16)>,
    /// Longest range seen: bounds the backward scan of a lookup.
    max_dur: i64,
    /// `by_start` as (start, end, phase) in its order once the ranges are
    /// final ([`Ranges::freeze`]): a lookup is then a binary search, not a
    /// tree walk. Empty while ranges are still added.
    frozen: Vec<(i64, i64, u16)>,
}

impl ThreadRanges {
    fn insert(&mut self, start: i64, end: i64, phase: u16) {
        let seq = self.by_start.len() as u32;
        self.by_start.insert((start, seq), (end, phase));
        self.max_dur = self.max_dur.max(end - start);
        self.frozen = Vec::new();
    }

    fn freeze(&mut self) {
        self.frozen = self.iter().collect();
    }

    /// [`ThreadRanges::phase_at`] on frozen ranges, with the time until
    /// which the answer stays the same for any later instant: the next
    /// range's start, and the end of the range found. (A range starting
    /// after the one found ended before `ts`; so until the found one ends,
    /// it stays the innermost. With none found, every range that starts
    /// before the next start ended before `ts`.)
    fn phase_until(&self, ts: i64) -> (Option<u16>, i64) {
        // The ranges starting at or before `ts`, latest first.
        let hi = self.frozen.partition_point(|r| r.0 <= ts);
        let next = self.frozen.get(hi).map_or(i64::MAX, |r| r.0);
        for &(start, end, phase) in self.frozen[..hi].iter().rev() {
            if start + self.max_dur < ts {
                break;
            }
            if ts < end {
                return (Some(phase), next.min(end));
            }
        }
        (None, next)
    }

    /// The phase of the innermost range containing `ts` (latest start).
    fn phase_at(&self, ts: i64) -> Option<u16> {
        if !self.frozen.is_empty() {
            return self.phase_until(ts).0;
        }
        for (&(start, _), &(end, phase)) in self.by_start.range(..(ts, u32::MAX)).rev() {
            if start + self.max_dur < ts {
                break;
            }
            if ts < end {
                return Some(phase);
            }
        }
        None
    }

    fn iter(&self) -> impl Iterator<Item = (i64, i64, u16)> + '_ {
        self.by_start.iter().map(|(&(s, _), &(e, p))| (s, e, p))
    }
}

/// What the output calls step `n`: `ProfilerStep#n` where the trace
/// recorded it, `step n` where it was inferred.
pub fn step_name(inferred: bool, n: u64) -> String {
    if inferred { format!("step {n}") } else { format!("ProfilerStep#{n}") }
}

/// All ranges of a trace.
#[derive(Debug, Clone, Default)]
pub struct Ranges {
    /// `ProfilerStep#N` → [start, end); duplicates of one N are merged.
    steps: HashMap<u64, (i64, i64)>,
    /// Merged step intervals, for membership.
    step_index: BTreeMap<i64, i64>,
    /// `step_index` as a list once the ranges are final ([`Ranges::freeze`]).
    steps_frozen: Vec<(i64, i64)>,
    /// Step numbers recorded again at a time apart from their first range
    /// (not a copy on another thread): how many times in all.
    repeated: BTreeMap<u64, u32>,
    cpu_phases: HashMap<u32, ThreadRanges>,
    /// Threads that own step or phase ranges (the training/inference loop).
    main_threads: HashSet<u32>,
    /// `gpu_user_annotation` phase ranges per device, for GPU events that
    /// have no launch to follow.
    gpu_phases: HashMap<i64, ThreadRanges>,
    /// Which [`Ranges::freeze`] made these ranges final (unique in the
    /// process, kept by a clone while neither changes); 0 while ranges are
    /// still added. What a [`PlaceCache`] remembers holds for one value.
    generation: u64,
    /// Changes of `step_index` so far: while ranges are still added, what
    /// a [`PlaceCache`] remembers of the steps holds for one value.
    step_changes: u64,
    /// The steps were inferred ([`Ranges::infer_steps`]), not recorded.
    inferred: bool,
}

/// A last step shorter than this share of every other step, ending with
/// the recording and holds nothing, is the profiler stopping
/// ([`Ranges::stub_last_step`]).
pub const STUB_STEP_SHARE: f64 = 0.05;

/// The last generation [`Ranges::freeze`] gave.
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Lookups remembered over the time their answer holds. The counting
/// again and the accounts at the end place each thread's work in about
/// time order, many ops within one step and phase: a lookup is then a
/// comparison instead of a binary search (a quarter of what the end of a
/// 1 GB read did on its main thread). Used on final ranges only; anything
/// else goes to the plain lookups.
#[derive(Debug, Default, Clone)]
pub struct PlaceCache {
    generation: u64,
    /// [from, until) → in a step.
    step: Option<(i64, i64, bool)>,
    /// Per thread id: [from, until) → phase.
    phase: Vec<Option<(i64, i64, u16)>>,
    /// While ranges are still added (the first pass counts each op as it
    /// comes, in about time order): after so many step changes,
    /// [from, until) → in a step.
    step_streaming: Option<(u64, i64, i64, bool)>,
}

impl PlaceCache {
    /// Forgets what was remembered of other ranges than `r`'s.
    fn check(&mut self, r: &Ranges) {
        if self.generation != r.generation {
            *self = PlaceCache { generation: r.generation, ..PlaceCache::default() };
        }
    }
}

impl Ranges {
    pub fn add_step(&mut self, number: u64, thread: u32, start: i64, end: i64) {
        self.generation = 0;
        let e = self.steps.entry(number).or_insert((start, end));
        if (start >= e.1 || end <= e.0) && (start, end) != *e {
            *self.repeated.entry(number).or_insert(1) += 1;
        }
        e.0 = e.0.min(start);
        e.1 = e.1.max(end);
        let hull = *e;
        self.main_threads.insert(thread);
        self.merge_into_step_index(hull);
    }

    /// Steps inferred where the trace recorded none, numbered from 1.
    pub fn infer_steps(&mut self, thread: u32, steps: &[(i64, i64)]) {
        for (n, &(s, e)) in (1..).zip(steps) {
            self.add_step(n, thread, s, e);
        }
        self.inferred = true;
    }

    /// Whether the steps were inferred, not recorded.
    pub fn steps_inferred(&self) -> bool {
        self.inferred
    }

    /// Step numbers whose ranges were recorded apart in time, with how
    /// many times: they are merged into one step, which a reader must say.
    pub fn repeated_steps(&self) -> Vec<(u64, u32)> {
        self.repeated.iter().map(|(n, k)| (*n, *k)).collect()
    }

    /// Adds a step's interval to the merged index: every interval it
    /// overlaps or touches is taken out and joined to it. A step's interval
    /// only ever grows, so the union of the steps' current intervals is
    /// kept without rebuilding it (O(log n) amortised per step; rebuilding
    /// per step made 100 000 steps take minutes).
    fn merge_into_step_index(&mut self, (start, end): (i64, i64)) {
        let (mut s, mut e) = (start, end);
        let touching: Vec<(i64, i64)> = self
            .step_index
            .range(..=e)
            .rev()
            .take_while(|&(_, &ie)| ie >= s)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in touching {
            self.step_index.remove(&a);
            s = s.min(a);
            e = e.max(b);
        }
        self.step_index.insert(s, e);
        self.steps_frozen = Vec::new();
        self.step_changes += 1;
    }

    /// Cuts back to `end` (the last recorded event) each step that runs
    /// past it by a part `worth(past, length)` cutting: nothing was
    /// recorded there. A step that begins after `end` goes. Returns each
    /// step cut, (N, ns cut), in step order.
    pub fn cut_steps_at(&mut self, end: i64, worth: impl Fn(i64, i64) -> bool) -> Vec<(u64, i64)> {
        let mut cut: Vec<(u64, i64)> = Vec::new();
        for (&n, (s, e)) in self.steps.iter_mut() {
            if *e > end && worth(*e - end, *e - *s) {
                let to = end.max(*s);
                cut.push((n, *e - to));
                *e = to;
            }
        }
        if cut.is_empty() {
            return cut;
        }
        self.steps.retain(|_, (s, e)| e > s);
        self.index_steps_again();
        cut.sort_unstable();
        cut
    }

    /// The last step, if it may be the recording ending as it began:
    /// shorter than [`STUB_STEP_SHARE`] of every other step and ending
    /// within a millisecond of `end` (the last event recorded). Kineto
    /// writes such a `ProfilerStep#N` when the profiler stops just after
    /// `prof.step()`; averaged in, it halves every per-step figure of a
    /// two-step window. It is one when nothing starts in it (the caller
    /// checks). (N, start, end).
    pub fn stub_last_step(&self, end: i64) -> Option<(u64, i64, i64)> {
        let steps = self.numbered_steps();
        let (&(n, s, e), rest) = steps.split_last()?;
        // Against the shortest: a slow first step (warm-up) says nothing
        // of how long a steady one is.
        let shortest = rest.iter().map(|&(_, s, e)| e - s).min()?;
        let short = ((e - s) as f64) < STUB_STEP_SHARE * shortest as f64;
        (short && e >= end - 1_000_000).then_some((n, s, e))
    }

    /// Removes step `n` from the window.
    pub fn drop_step(&mut self, n: u64) {
        self.steps.remove(&n);
        self.index_steps_again();
    }

    /// The step index built again from the steps, after some changed.
    fn index_steps_again(&mut self) {
        self.step_index.clear();
        let hulls: Vec<(i64, i64)> = self.steps.values().copied().collect();
        for h in hulls {
            self.merge_into_step_index(h);
        }
        self.generation = 0;
    }

    /// Readies the lookups for ranges that will not change any more (the
    /// counting again and the accounts at the end, which place every op
    /// and GPU event once more); adding a range undoes it.
    pub fn freeze(&mut self) {
        self.generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        self.steps_frozen = self.indexed_intervals();
        for r in self.cpu_phases.values_mut().chain(self.gpu_phases.values_mut()) {
            r.freeze();
        }
    }

    pub fn add_cpu_phase(&mut self, thread: u32, start: i64, end: i64, phase: u16) {
        self.generation = 0;
        self.cpu_phases.entry(thread).or_default().insert(start, end, phase);
        self.main_threads.insert(thread);
    }

    pub fn add_gpu_phase(&mut self, device: i64, start: i64, end: i64, phase: u16) {
        self.generation = 0;
        self.gpu_phases.entry(device).or_default().insert(start, end, phase);
    }

    /// Threads that own step or phase ranges (the loop threads).
    pub fn loop_threads(&self) -> impl Iterator<Item = u32> + '_ {
        self.main_threads.iter().copied()
    }

    /// Every CPU-side phase range: (thread, start, end, phase).
    pub fn cpu_phase_spans(&self) -> impl Iterator<Item = (u32, i64, i64, u16)> + '_ {
        self.cpu_phases.iter().flat_map(|(&t, r)| r.iter().map(move |(s, e, p)| (t, s, e, p)))
    }

    /// Whether any `step/<phase>` range was recorded (CPU or GPU side).
    pub fn has_phase_ranges(&self) -> bool {
        !self.cpu_phases.is_empty() || !self.gpu_phases.is_empty()
    }

    pub fn has_steps(&self) -> bool {
        !self.steps.is_empty()
    }

    /// Number of distinct steps (`#N`), at least 1.
    pub fn step_count(&self) -> u64 {
        (self.steps.len() as u64).max(1)
    }

    /// Each recorded step, `ProfilerStep#N` → (N, start, end), in time order.
    pub fn numbered_steps(&self) -> Vec<(u64, i64, i64)> {
        let mut v: Vec<(u64, i64, i64)> =
            self.steps.iter().map(|(&n, &(s, e))| (n, s, e)).collect();
        v.sort_by_key(|&(n, s, _)| (s, n));
        v
    }

    /// The steps' intervals, in time order, those that overlap merged: a
    /// step that begins as the one before ends stays a step of its own
    /// (steps inferred from the optimizer's do).
    pub fn step_intervals(&self) -> Vec<(i64, i64)> {
        let mut hulls: Vec<(i64, i64)> = self.steps.values().copied().collect();
        hulls.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(hulls.len());
        for (s, e) in hulls {
            match merged.last_mut() {
                Some(last) if s < last.1 || s == last.0 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }

    /// The membership index's intervals: steps that overlap or touch, one.
    fn indexed_intervals(&self) -> Vec<(i64, i64)> {
        self.step_index.iter().map(|(&s, &e)| (s, e)).collect()
    }

    /// Whether `ts` falls inside a measured step. Without any step marker the
    /// whole trace is one step.
    pub fn in_step(&self, ts: i64) -> bool {
        if self.steps.is_empty() {
            return true;
        }
        if !self.steps_frozen.is_empty() {
            return self.in_step_until(ts).0;
        }
        self.step_index.range(..=ts).next_back().is_some_and(|(_, &end)| ts < end)
    }

    /// [`Ranges::in_step`], remembered in `cache` over the time it holds.
    pub fn in_step_cached(&self, cache: &mut PlaceCache, ts: i64) -> bool {
        if self.generation == 0 {
            return self.in_step_streaming(cache, ts);
        }
        cache.check(self);
        match cache.step {
            Some((from, until, v)) if from <= ts && ts < until => v,
            _ => {
                let (v, until) = self.in_step_until(ts);
                cache.step = Some((ts, until, v));
                v
            }
        }
    }

    /// The end of the measured step `ts` falls in (of its merged
    /// interval: steps that overlap end together); None outside every
    /// step, `i64::MAX` without step markers (the whole trace is one).
    pub fn step_end_cached(&self, cache: &mut PlaceCache, ts: i64) -> Option<i64> {
        if self.steps.is_empty() {
            return Some(i64::MAX);
        }
        if self.generation == 0 {
            let (_, &end) = self.step_index.range(..=ts).next_back()?;
            return (ts < end).then_some(end);
        }
        cache.check(self);
        // Within a step, the time the answer holds is the step's end.
        match cache.step {
            Some((from, until, v)) if from <= ts && ts < until => v.then_some(until),
            _ => {
                let (v, until) = self.in_step_until(ts);
                cache.step = Some((ts, until, v));
                v.then_some(until)
            }
        }
    }

    /// [`Ranges::in_step_cached`] while steps are still added: remembered
    /// until the steps change or `ts` leaves the step (or the gap between
    /// steps) it fell in.
    fn in_step_streaming(&self, cache: &mut PlaceCache, ts: i64) -> bool {
        if self.steps.is_empty() {
            return true;
        }
        if let Some((changes, from, until, v)) = cache.step_streaming {
            if changes == self.step_changes && from <= ts && ts < until {
                return v;
            }
        }
        // The merged intervals are apart: the one starting at or before
        // `ts` and the next start bound the time the answer holds.
        use std::ops::Bound::{Excluded, Unbounded};
        let next =
            self.step_index.range((Excluded(ts), Unbounded)).next().map_or(i64::MAX, |s| *s.0);
        let (from, until, v) = match self.step_index.range(..=ts).next_back() {
            Some((&start, &end)) if ts < end => (start, end.min(next), true),
            Some((_, &end)) => (end, next, false),
            None => (i64::MIN, next, false),
        };
        cache.step_streaming = Some((self.step_changes, from, until, v));
        v
    }

    /// [`Ranges::in_step`] on final ranges, with the time until which the
    /// answer holds: the next step's start, and the end of the step `ts`
    /// is in.
    fn in_step_until(&self, ts: i64) -> (bool, i64) {
        if self.steps.is_empty() {
            return (true, i64::MAX);
        }
        let hi = self.steps_frozen.partition_point(|s| s.0 <= ts);
        let next = self.steps_frozen.get(hi).map_or(i64::MAX, |s| s.0);
        match hi.checked_sub(1).map(|i| self.steps_frozen[i].1) {
            Some(end) if ts < end => (true, next.min(end)),
            _ => (false, next),
        }
    }

    /// [`Ranges::cpu_phase`], remembered in `cache` over the time it holds.
    pub fn cpu_phase_cached(&self, cache: &mut PlaceCache, thread: u32, ts: i64) -> u16 {
        self.cpu_phase_span(cache, thread, ts).0
    }

    /// [`Ranges::cpu_phase_cached`], with the time until which the answer
    /// holds (at least: a phase boundary may come later), so that a span
    /// of time is charged to each phase it crosses. `i64::MAX` while the
    /// ranges are still added.
    pub fn cpu_phase_span(&self, cache: &mut PlaceCache, thread: u32, ts: i64) -> (u16, i64) {
        if self.generation == 0 {
            return (self.cpu_phase(thread, ts), i64::MAX);
        }
        cache.check(self);
        let t = thread as usize;
        if let Some(Some((from, until, phase))) = cache.phase.get(t) {
            if *from <= ts && ts < *until {
                return (*phase, *until);
            }
        }
        let (phase, until) = self.cpu_phase_until(thread, ts);
        if cache.phase.len() <= t {
            cache.phase.resize(t + 1, None);
        }
        cache.phase[t] = Some((ts, until, phase));
        (phase, until)
    }

    /// [`Ranges::cpu_phase`] on final ranges, with the time until which
    /// the answer holds.
    fn cpu_phase_until(&self, thread: u32, ts: i64) -> (u16, i64) {
        if let Some(r) = self.cpu_phases.get(&thread) {
            let (p, until) = r.phase_until(ts);
            return (p.unwrap_or(UNPHASED), until);
        }
        if self.main_threads.contains(&thread) {
            return (UNPHASED, i64::MAX);
        }
        self.phase_by_time_until(ts)
    }

    /// [`Ranges::phase_by_time`] on final ranges, with the time until which
    /// the answer holds: the first loop thread (in the map's order, which
    /// final ranges keep) in a phase. Those before it stay out of one until
    /// their own answers change.
    fn phase_by_time_until(&self, ts: i64) -> (u16, i64) {
        let mut until = i64::MAX;
        for r in self.cpu_phases.values() {
            let (p, u) = r.phase_until(ts);
            until = until.min(u);
            if let Some(p) = p {
                return (p, until);
            }
        }
        (UNPHASED, until)
    }

    /// The phase of CPU work on `thread` at `ts`: the innermost `step/<p>`
    /// range on the same thread; for helper threads with no ranges of their
    /// own (autograd engine, dataloader), the phase the loop thread was in.
    pub fn cpu_phase(&self, thread: u32, ts: i64) -> u16 {
        // Most real traces have no phase ranges (a fast path of the pass).
        if self.cpu_phases.is_empty() {
            return UNPHASED;
        }
        if let Some(r) = self.cpu_phases.get(&thread) {
            return r.phase_at(ts).unwrap_or(UNPHASED);
        }
        if self.main_threads.contains(&thread) {
            return UNPHASED;
        }
        self.phase_by_time(ts)
    }

    /// The loop threads' phase at `ts`, for work placed by time.
    pub fn phase_by_time(&self, ts: i64) -> u16 {
        self.cpu_phases.values().find_map(|r| r.phase_at(ts)).unwrap_or(UNPHASED)
    }

    /// The phase of a GPU event placed by time: the device's own phase
    /// annotations first, then the loop threads' CPU phases.
    pub fn gpu_phase_by_time(&self, device: i64, ts: i64) -> u16 {
        self.gpu_phases
            .get(&device)
            .and_then(|r| r.phase_at(ts))
            .unwrap_or_else(|| self.phase_by_time(ts))
    }

    /// [`Ranges::gpu_phase_by_time`] on final ranges, with the time until
    /// which the answer holds (at least), as [`Ranges::cpu_phase_span`].
    pub fn gpu_phase_span(&self, device: i64, ts: i64) -> (u16, i64) {
        if self.generation == 0 {
            return (self.gpu_phase_by_time(device, ts), i64::MAX);
        }
        let mut until = i64::MAX;
        if let Some(r) = self.gpu_phases.get(&device) {
            let (p, u) = r.phase_until(ts);
            if let Some(p) = p {
                return (p, u);
            }
            until = u;
        }
        let (p, u) = self.phase_by_time_until(ts);
        (p, until.min(u))
    }

    /// Total duration of CPU phase ranges inside steps, per phase id, on the
    /// loop threads.
    ///
    /// Each instant counts once, for the innermost range (as a lookup
    /// places work): ranges that overlap — an inferred backward window
    /// around optimizer ranges, nested `step/<p>` ranges — are not summed
    /// twice, so the phases' wall time fits in the steps.
    pub fn cpu_phase_wall(&self) -> HashMap<u16, i64> {
        let mut out = HashMap::default();
        for r in self.cpu_phases.values() {
            let frozen;
            let r = if r.frozen.is_empty() {
                frozen = ThreadRanges { frozen: r.iter().collect(), ..r.clone() };
                &frozen
            } else {
                r
            };
            let Some(&(mut t, _, _)) = r.frozen.first() else { continue };
            while t < i64::MAX {
                let (phase, until) = r.phase_until(t);
                if let Some(p) = phase.filter(|_| self.in_step(t)) {
                    let w: &mut i64 = out.entry(p).or_insert(0);
                    *w = w.saturating_add(until - t);
                }
                t = until;
            }
        }
        out
    }

    /// Phase ids that have a CPU or GPU range.
    pub fn phases_with_ranges(&self) -> HashSet<u16> {
        self.cpu_phases
            .values()
            .chain(self.gpu_phases.values())
            .flat_map(|r| r.iter().map(|(_, _, p)| p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn innermost_range_on_the_same_thread_wins() {
        let mut r = Ranges::default();
        r.add_cpu_phase(1, 0, 100, 1);
        r.add_cpu_phase(1, 10, 20, 2);
        r.add_cpu_phase(1, 30, 40, 3);
        assert_eq!(r.cpu_phase(1, 5), 1);
        assert_eq!(r.cpu_phase(1, 15), 2);
        assert_eq!(r.cpu_phase(1, 25), 1);
        assert_eq!(r.cpu_phase(1, 35), 3);
        assert_eq!(r.cpu_phase(1, 100), UNPHASED);
        // A helper thread without ranges follows the loop thread by time.
        assert_eq!(r.cpu_phase(2, 15), 2);
    }

    proptest::proptest! {
        /// The cached lookups give what the plain ones give, for queries in
        /// time order and out of it, on nested and overlapping ranges, a
        /// helper thread without ranges, and after the ranges change.
        #[test]
        fn cached_lookups_answer_as_the_plain_ones(
            phases in proptest::collection::vec((1u32..3, 0i64..400, 1i64..150, 1u16..5), 0..12),
            steps in proptest::collection::vec((0i64..400, 1i64..120), 0..4),
            mut queries in proptest::collection::vec((1u32..4, -10i64..560), 1..120),
            sorted in proptest::bool::ANY,
        ) {
            let mut r = Ranges::default();
            for (i, &(s, d)) in steps.iter().enumerate() {
                r.add_step(i as u64, 1, s, s + d);
            }
            for &(t, s, d, p) in &phases {
                r.add_cpu_phase(t, s, s + d, p);
            }
            if sorted {
                queries.sort_by_key(|q| q.1);
            }
            let mut cache = PlaceCache::default();
            for round in 0..2 {
                r.freeze();
                for &(t, ts) in &queries {
                    proptest::prop_assert_eq!(r.in_step_cached(&mut cache, ts), r.in_step(ts));
                    proptest::prop_assert_eq!(
                        r.cpu_phase_cached(&mut cache, t, ts),
                        r.cpu_phase(t, ts),
                        "thread {} at {} (round {})", t, ts, round
                    );
                }
                // What the cache holds must not outlive a change.
                r.add_cpu_phase(1, 50, 60, 9);
                r.add_step(99, 1, 500, 550);
            }
        }
    }

    proptest::proptest! {
        /// While steps are still added between lookups (the first pass),
        /// the cached step lookup gives what the plain one gives.
        #[test]
        fn streaming_step_lookups_answer_as_the_plain_ones(
            events in proptest::collection::vec(
                (proptest::bool::weighted(0.2), 0i64..400, 0i64..120), 1..150),
        ) {
            let mut r = Ranges::default();
            let mut cache = PlaceCache::default();
            for (i, &(is_step, ts, d)) in events.iter().enumerate() {
                if is_step {
                    r.add_step(i as u64 % 7, 1, ts, ts + d);
                }
                for at in [ts, ts + d / 2] {
                    proptest::prop_assert_eq!(
                        r.in_step_cached(&mut cache, at), r.in_step(at), "at {}", at
                    );
                }
            }
        }
    }

    #[test]
    fn duplicate_step_markers_count_once() {
        let mut r = Ranges::default();
        r.add_step(5, 1, 0, 100);
        r.add_step(5, 1, 2, 90);
        r.add_step(6, 1, 100, 200);
        assert_eq!(r.step_count(), 2);
        // Touching steps are two steps, one stretch of membership.
        assert_eq!(r.step_intervals(), vec![(0, 100), (100, 200)]);
        assert_eq!(r.indexed_intervals(), vec![(0, 200)]);
        assert!(r.in_step(0) && r.in_step(199) && !r.in_step(200) && !r.in_step(-1));
    }

    #[test]
    fn no_steps_means_everything_is_in_the_one_step() {
        let r = Ranges::default();
        assert!(r.in_step(i64::MIN) && r.in_step(0));
        assert_eq!(r.step_count(), 1);
    }

    /// The merged index kept step by step equals merging every step's
    /// interval at once (what it was rebuilt from before).
    #[test]
    fn the_step_index_kept_incrementally_matches_a_rebuild() {
        let mut seed = 0x2545_f491_u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        for _ in 0..200 {
            let mut r = Ranges::default();
            for _ in 0..next(40) {
                let (n, s) = (next(12), next(300) as i64);
                r.add_step(n, 1, s, s + next(40) as i64);
                let mut iv: Vec<(i64, i64)> = r.steps.values().copied().collect();
                iv.sort_unstable();
                let mut want: Vec<(i64, i64)> = Vec::new();
                for (s, e) in iv {
                    match want.last_mut() {
                        Some(last) if s <= last.1 => last.1 = last.1.max(e),
                        _ => want.push((s, e)),
                    }
                }
                assert_eq!(r.indexed_intervals(), want);
            }
        }
    }

    #[test]
    fn many_steps_are_not_quadratic() {
        let mut r = Ranges::default();
        for n in 0..200_000u64 {
            let s = n as i64 * 1000;
            r.add_step(n, 1, s, s + 900);
            assert!(r.in_step(s + 10));
        }
        assert_eq!(r.step_intervals().len(), 200_000);
    }
}
