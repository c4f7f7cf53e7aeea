//! Phase inference (docs/analysis.md §6): in traces without `step/<phase>`
//! ranges, the phases are derived from PyTorch's own annotations; in
//! traces without `ProfilerStep` ranges, the steps from the optimizer's
//! (§2).

use super::busy;
use super::ranges::{PhaseNames, Ranges};

/// What phases are inferred from, kept during the pass.
#[derive(Debug, Default)]
pub(super) struct PhaseInference {
    /// `enumerate(DataLoader)#…__next__` and `Optimizer.*#…` ranges as
    /// (thread, start, end, phase).
    pub(super) marks: Vec<(u32, i64, i64, &'static str)>,
    /// The union of the autograd engine's backward ops (gaps under
    /// [`BACKWARD_GAP`] closed).
    backward_bursts: std::collections::BTreeMap<i64, i64>,
    /// How the phases were inferred, when they were.
    pub(super) how: Option<String>,
    /// `Optimizer.step#…` ranges as (thread, start, end): the ends of the
    /// steps of a training trace without `ProfilerStep` markers.
    pub(super) optimizer_steps: Vec<(u32, i64, i64)>,
}

/// The name of the range PyTorch records around each `optimizer.step()`.
pub(super) const OPTIMIZER_STEP: &str = "Optimizer.step#";

/// Backward ops closer than this belong to the same backward pass.
pub(super) const BACKWARD_GAP: i64 = 1_000_000;

/// Said in the output when the phases were inferred.
pub(super) const INFERRED_HOW: &str = "the trace has no step/<phase> ranges; phases come from PyTorch's own annotations: enumerate(DataLoader)#…__next__ → dataload, Optimizer.step#…/Optimizer.zero_grad#… → optimizer, the autograd engine's backward ops (first to last, per step) → backward, the rest of each step → forward";

impl PhaseInference {
    /// Adds a backward op to the union of backward work.
    pub(super) fn note_backward(&mut self, start: i64, end: i64) {
        self.note_backward_in(start, end, &[]);
    }

    /// [`PhaseInference::note_backward`], joining no burst that begins in
    /// another step than `start` (steps beginning at `step_starts`, in
    /// time order).
    fn note_backward_in(&mut self, start: i64, end: i64, step_starts: &[i64]) {
        let (mut s, mut e) = (start, end);
        let step = |t: i64| step_starts.partition_point(|&b| b <= t);
        // Merge with every burst within BACKWARD_GAP of [s, e).
        let near: Vec<(i64, i64)> = self
            .backward_bursts
            .range(..=e + BACKWARD_GAP)
            .rev()
            .take_while(|(_, be)| **be + BACKWARD_GAP >= s)
            .map(|(a, b)| (*a, *b))
            .filter(|(a, _)| step(*a) == step(start))
            .collect();
        for (bs, be) in near {
            self.backward_bursts.remove(&bs);
            s = s.min(bs);
            e = e.max(be);
        }
        self.backward_bursts.insert(s, e);
    }

    /// The backward bursts again from the backward ops `ops`, none joined
    /// across a step's start: a small model's backward passes, under
    /// [`BACKWARD_GAP`] apart (the GP100 trace's, 0.97 ms), were one burst
    /// that began in the first step, and the steps after had none.
    pub(super) fn split_bursts_at(
        &mut self,
        steps: &[(i64, i64)],
        ops: impl Iterator<Item = (i64, i64)>,
    ) {
        let mut starts: Vec<i64> = steps.iter().map(|s| s.0).collect();
        starts.sort_unstable();
        self.backward_bursts.clear();
        for (s, e) in ops {
            self.note_backward_in(s, e, &starts);
        }
    }

    /// Whether a backward burst spans the start of one of `steps`.
    pub(super) fn burst_spans_a_step(&self, steps: &[(i64, i64)]) -> bool {
        steps.iter().any(|&(s, _)| {
            self.backward_bursts.range(..s).next_back().is_some_and(|(_, &end)| end > s)
        })
    }

    /// The steps of a trace without step markers, from its
    /// `Optimizer.step#…` ranges (docs/analysis.md §2): on the thread that
    /// recorded most of them, each step ends as one ends (nested ones
    /// aside), the first starting at `start` (the recording's) and each
    /// other where the one before ended. Two at least; (thread, steps).
    pub(super) fn steps(&self, start: i64) -> Option<(u32, Vec<(i64, i64)>)> {
        let mut per_thread: std::collections::HashMap<u32, usize> = Default::default();
        for &(t, _, _) in &self.optimizer_steps {
            *per_thread.entry(t).or_default() += 1;
        }
        let (&thread, _) = per_thread.iter().max_by_key(|&(t, n)| (*n, std::cmp::Reverse(*t)))?;
        let mut ranges: Vec<(i64, i64)> = self
            .optimizer_steps
            .iter()
            .filter(|r| r.0 == thread)
            .map(|&(_, s, e)| (s, e))
            .collect();
        ranges.sort_unstable();
        let mut steps: Vec<(i64, i64)> = Vec::new();
        let mut outer_end = i64::MIN;
        for (s, e) in ranges {
            if s < outer_end {
                continue; // inside the one before
            }
            outer_end = e;
            let from = steps.last().map_or(start.min(s), |l| l.1);
            steps.push((from, e));
        }
        (steps.len() >= 2).then_some((thread, steps))
    }

    /// `step/<phase>`-like ranges derived from the evidence, for a second
    /// pass: per step, the backward window (first to last backward burst
    /// starting in it), the dataloader and optimizer ranges, and forward as
    /// the rest of the step. None when the trace has phase ranges of its
    /// own or no evidence.
    pub(super) fn ranges(
        &self,
        given: &Ranges,
        span: Option<(i64, i64)>,
        phases: &mut PhaseNames,
    ) -> Option<Ranges> {
        if given.has_phase_ranges() || (self.marks.is_empty() && self.backward_bursts.is_empty()) {
            return None;
        }
        // Step by step: steps that touch are one interval in the index.
        let steps: Vec<(i64, i64)> = match given.numbered_steps() {
            s if !s.is_empty() => s.iter().map(|&(_, s, e)| (s, e)).collect(),
            _ => vec![span?],
        };
        let mut loop_threads: Vec<u32> = given.loop_threads().collect();
        if loop_threads.is_empty() {
            loop_threads.extend(self.marks.first().map(|r| r.0));
        }
        let &main = loop_threads.first()?;
        let mut ranges = given.clone();
        for &(step_start, step_end) in &steps {
            let mut taken: Vec<(i64, i64)> = Vec::new();
            for &(thread, s, e, phase) in &self.marks {
                if s >= step_start && s < step_end {
                    let id = phases.id(phase);
                    ranges.add_cpu_phase(thread, s, e.min(step_end), id);
                    if thread == main {
                        taken.push((s, e.min(step_end)));
                    }
                }
            }
            let bursts: Vec<(i64, i64)> = self
                .backward_bursts
                .range(step_start..step_end)
                .map(|(s, e)| (*s, (*e).min(step_end)))
                .collect();
            if let (Some(first), Some(last)) = (bursts.first(), bursts.iter().map(|b| b.1).max()) {
                let id = phases.id("backward");
                ranges.add_cpu_phase(main, first.0, last, id);
                taken.push((first.0, last));
            }
            // Forward: the step minus everything above, on the loop thread.
            let taken = busy::merge(&mut taken);
            let id = phases.id("forward");
            let mut at = step_start;
            for (s, e) in taken.iter().copied().chain(std::iter::once((step_end, step_end))) {
                if s > at {
                    ranges.add_cpu_phase(main, at, s, id);
                }
                at = at.max(e);
            }
        }
        Some(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(optimizer_steps: Vec<(u32, i64, i64)>) -> PhaseInference {
        PhaseInference { optimizer_steps, ..PhaseInference::default() }
    }

    #[test]
    fn optimizer_steps_end_the_steps_on_their_thread() {
        // Thread 1 steps three times (one nested call inside the second);
        // thread 2 once: thread 1's ranges make the steps.
        let p = with(vec![(1, 50, 60), (2, 10, 20), (1, 150, 170), (1, 155, 160), (1, 250, 255)]);
        assert_eq!(p.steps(5), Some((1, vec![(5, 60), (60, 170), (170, 255)])));
    }

    #[test]
    fn backward_passes_closer_than_the_gap_stay_in_their_steps() {
        // Two backward passes 0.5 ms apart: one burst, unless a step
        // begins between them.
        let mut p = PhaseInference::default();
        let ops = [(0, 100_000), (600_000, 700_000)];
        for (s, e) in ops {
            p.note_backward(s, e);
        }
        assert_eq!(p.backward_bursts.len(), 1);
        let steps = [(0, 300_000), (300_000, 900_000)];
        assert!(p.burst_spans_a_step(&steps));
        p.split_bursts_at(&steps, ops.into_iter());
        assert!(!p.burst_spans_a_step(&steps));
        let bursts: Vec<(i64, i64)> = p.backward_bursts.iter().map(|(s, e)| (*s, *e)).collect();
        assert_eq!(bursts, vec![(0, 100_000), (600_000, 700_000)]);
    }

    #[test]
    fn one_optimizer_step_is_no_steps() {
        assert_eq!(with(vec![(1, 50, 60), (2, 70, 80)]).steps(0), None);
        assert_eq!(with(Vec::new()).steps(0), None);
    }
}
