//! The step- and phase-keyed aggregates: what is counted under the ranges,
//! and counted again when they change.

use rustc_hash::FxHashMap as HashMap;

use super::busy;
use super::cpulog::CpuRec;
use super::ranges::{PlaceCache, Ranges};

/// Where an event landed: inside a measured step or not, and its phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) in_step: bool,
    pub(super) phase: u16,
}

/// Total duration and count.
#[derive(Debug, Clone, Copy, Default)]
pub struct Agg {
    pub ns: i64,
    pub count: u64,
}

impl Agg {
    pub(super) fn add(&mut self, ns: i64) {
        // Durations are bounded (see `MAX_DUR_US`); a hostile trace of many
        // of the longest still must not wrap a total into the negative.
        self.ns = self.ns.saturating_add(ns);
        self.count += 1;
    }
}

/// What the CPU ops inside the steps are counted into.
#[derive(Debug, Default)]
pub(super) struct OpTables {
    /// Per (phase, op name): every call counted (the ops table's own
    /// figures come from the call tree, `calltree::OpAccount`).
    pub(super) ops_by_phase: HashMap<(u16, u32), Agg>,
    /// Per thread, the union of its CPU ops inside the steps: the time it
    /// spent inside framework ops rather than between them.
    pub(super) op_cover: HashMap<u32, busy::StreamingUnion>,
    /// Still to be counted (again) from the CPU log under the final ranges
    /// (`PassRecord::count_ops`): `build` does it beside the GPU accounts,
    /// which need nothing of it.
    pub(super) stale: bool,
}

impl OpTables {
    pub(super) fn add(&mut self, thread: u32, name: u32, phase: u16, start: i64, dur: i64) {
        self.op_cover.entry(thread).or_default().add(start, start + dur);
        self.ops_by_phase.entry((phase, name)).or_default().add(dur);
    }
    /// The tables of `ops` (in the pass's order) under `ranges`, with an
    /// index per phase for the first `dense_phases` phases met; any further
    /// phase's counted through a map (a hostile trace's thousands of phases
    /// must not each cost a vector of every name).
    pub(super) fn count(
        ops: impl Iterator<Item = CpuRec>,
        ranges: &Ranges,
        dense_phases: usize,
    ) -> OpTables {
        // Counted by index (threads and names are dense ids: two hash
        // lookups an op were a fifth of this loop), then moved into the
        // tables in the order their keys were first met. That is the
        // order counting into them directly inserts them, so the maps come
        // out laid out the same, and so does all that iterates them (the
        // headline's choice among equal threads).
        const NONE: u32 = u32::MAX;
        // Each thread's entry in `covers` (`NONE`: no op yet).
        let mut cover_of: Vec<u32> = Vec::new();
        let mut covers: Vec<(u32, busy::StreamingUnion)> = Vec::new();
        // Per phase, each op name's entry in `aggs`.
        let mut slots: Vec<(u16, Vec<u32>)> = Vec::new();
        let mut spilled: HashMap<(u16, u32), u32> = HashMap::default();
        let mut aggs: Vec<((u16, u32), Agg)> = Vec::new();
        let mut places = PlaceCache::default();
        for op in ops {
            if !ranges.in_step_cached(&mut places, op.start) {
                continue;
            }
            let phase = ranges.cpu_phase_cached(&mut places, op.thread, op.start);
            let t = op.thread as usize;
            if t >= cover_of.len() {
                cover_of.resize(t + 1, NONE);
            }
            if cover_of[t] == NONE {
                cover_of[t] = covers.len() as u32;
                covers.push((op.thread, busy::StreamingUnion::default()));
            }
            covers[cover_of[t] as usize].1.add(op.start, op.start + op.dur);
            let next = aggs.len() as u32;
            let dense = match slots.iter().position(|s| s.0 == phase) {
                Some(p) => Some(p),
                None if slots.len() < dense_phases => {
                    slots.push((phase, Vec::new()));
                    Some(slots.len() - 1)
                }
                None => None,
            };
            let at = match dense {
                Some(p) => {
                    let names = &mut slots[p].1;
                    let n = op.name as usize;
                    if n >= names.len() {
                        names.resize(n + 1, NONE);
                    }
                    if names[n] == NONE {
                        names[n] = next;
                    }
                    names[n]
                }
                None => *spilled.entry((phase, op.name)).or_insert(next),
            };
            if at == next {
                aggs.push(((phase, op.name), Agg::default()));
            }
            aggs[at as usize].1.add(op.dur);
        }
        let mut tables = OpTables::default();
        // One by one, not `extend` (which sizes the table first).
        for (thread, cover) in covers {
            tables.op_cover.insert(thread, cover);
        }
        for (key, agg) in aggs {
            tables.ops_by_phase.insert(key, agg);
        }
        tables
    }
}

/// What the GPU work inside the steps is counted into.
#[derive(Debug, Default)]
pub(super) struct GpuTables {
    pub(super) kernels: HashMap<u32, Agg>,
    pub(super) kernels_by_phase: HashMap<(u16, u32), Agg>,
    pub(super) memcpy: Agg,
    pub(super) memcpy_by_phase: HashMap<u16, i64>,
}

impl GpuTables {
    /// Emptied to be counted again (the maps keep their room).
    pub(super) fn clear(&mut self) {
        self.kernels.clear();
        self.kernels_by_phase.clear();
        self.memcpy = Agg::default();
        self.memcpy_by_phase.clear();
    }
}
