//! Phase inference (docs/analysis.md §6): in traces without `step/<phase>`
//! ranges, the phases are derived from PyTorch's own annotations.

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
}

/// Backward ops closer than this belong to the same backward pass.
pub(super) const BACKWARD_GAP: i64 = 1_000_000;

/// Said in the output when the phases were inferred.
pub(super) const INFERRED_HOW: &str = "the trace has no step/<phase> ranges; phases come from PyTorch's own annotations: enumerate(DataLoader)#…__next__ → dataload, Optimizer.step#…/Optimizer.zero_grad#… → optimizer, the autograd engine's backward ops (first to last, per step) → backward, the rest of each step → forward";

impl PhaseInference {
    /// Adds a backward op to the union of backward work.
    pub(super) fn note_backward(&mut self, start: i64, end: i64) {
        let (mut s, mut e) = (start, end);
        // Merge with every burst within BACKWARD_GAP of [s, e).
        let near: Vec<(i64, i64)> = self
            .backward_bursts
            .range(..=e + BACKWARD_GAP)
            .rev()
            .take_while(|(_, be)| **be + BACKWARD_GAP >= s)
            .map(|(a, b)| (*a, *b))
            .collect();
        for (bs, be) in near {
            self.backward_bursts.remove(&bs);
            s = s.min(bs);
            e = e.max(be);
        }
        self.backward_bursts.insert(s, e);
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
        let steps = match given.step_intervals() {
            s if !s.is_empty() => s,
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
