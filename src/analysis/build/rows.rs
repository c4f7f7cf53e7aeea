//! The kernel, category, op and phase tables, per step over the window.

use indexmap::IndexMap;
use rustc_hash::FxHashMap as HashMap;

use super::{Span, pct};
use crate::analysis::PassRecord;
use crate::analysis::calltree::{OpAccount, OpTotals};
use crate::analysis::gpulog::KernelClasses;
use crate::analysis::kernels::KernelClass;
use crate::analysis::placed::{Agg, OpTables};
use crate::analysis::ranges::{PHASE_ORDER, UNPHASED, UNPHASED_NAME};
use crate::analysis::roofline::Roofline;
use crate::profile::{Category, CategoryRow, KernelRow, Measurements, Mode, OpRow, PhaseRow};
use crate::util::round;

/// Builds kernel and op rows per step over the window.
pub(super) struct Rows<'x> {
    pub a: &'x PassRecord,
    /// The ops' tables under the final ranges.
    pub op_tables: &'x OpTables,
    pub kinfo: &'x KernelClasses,
    pub win: &'x Span,
    pub roof: Option<&'x Roofline>,
    /// The ops' figures, from the call tree.
    pub ops: &'x OpAccount,
}

/// The whole window's kernel, category and op tables.
pub(super) struct Tables {
    pub kernels: Vec<KernelRow>,
    pub categories: Vec<CategoryRow>,
    pub ops: Vec<OpRow>,
}

/// Per phase: its row and its kernel and op tables.
pub(super) struct PhaseTables {
    pub phases: Vec<PhaseRow>,
    pub kernels: IndexMap<String, Vec<KernelRow>>,
    pub ops: IndexMap<String, Vec<OpRow>>,
}

impl Rows<'_> {
    fn kernel_row(&self, name: u32, k: &Agg, denom: i64, phase: Option<u16>) -> KernelRow {
        let perf = self.roof.and_then(|r| match phase {
            Some(p) => r.kernels_by_phase.get(&(p, name)),
            None => r.kernels.get(&name),
        });
        let raw = self.a.names.get(name);
        let KernelClass { category: cat, tensor_core: tc, label } = &self.kinfo[&name];
        KernelRow {
            kernel: label.clone(),
            raw_name: raw.to_string(),
            category: cat.clone(),
            tensorcore: *tc,
            ms_per_step: round(self.win.per_step_ms(k.ns), 4),
            pct_of_gpu: round(pct(k.ns, denom), 2),
            count_per_step: round(k.count as f64 / self.win.n_steps, 2),
            priced_pct: perf
                .filter(|r| r.ns > 0.0 && k.ns > 0)
                .map(|r| round((r.ns / k.ns as f64 * 100.0).min(100.0), 2)),
            achieved: crate::analysis::roofline::achieved(perf, self.win.n_steps),
            calls: None,
        }
    }

    fn op_row(&self, name: u32, o: &OpTotals, denom: i64, phase: Option<u16>) -> OpRow {
        let perf = self.roof.and_then(|r| match phase {
            Some(p) => r.ops_by_phase.get(&(p, name)),
            None => r.ops.get(&name),
        });
        OpRow {
            op: self.a.names.get(name).to_string(),
            ms_per_step: round(self.win.per_step_ms(o.ns), 4),
            pct_of_cpu_ops: round(pct(o.ns, denom), 2),
            count_per_step: round(o.calls as f64 / self.win.n_steps, 2),
            self_ms_per_step: Some(round(self.win.per_step_ms(o.self_ns), 4)),
            gpu_ms_per_step: (o.gpu_ns > 0).then(|| round(self.win.per_step_ms(o.gpu_ns), 4)),
            achieved: crate::analysis::roofline::achieved(perf, self.win.n_steps),
            shape: perf
                .and(self.roof)
                .and_then(|r| r.op_inputs.get(&name))
                .map(|(inputs, _)| self.a.names.get(*inputs).to_string()),
        }
    }

    /// Kernels, the kernel mix by category and ops, sorted by time.
    pub(super) fn tables(&self, kernel_ns: i64) -> Tables {
        let a = self.a;
        let call = |span: u32| {
            let k = &a.gpu.kernel_spans[span as usize];
            crate::analysis::kernel_calls::Call {
                name: k.name,
                dur: k.end - k.start,
                queue: k.queue,
            }
        };
        let mut calls = crate::analysis::kernel_calls::calls(
            &a.gpu.kernel_calls,
            call,
            &a.gpu.queues,
            self.win.n_steps,
        );
        let mut kernels: Vec<KernelRow> = a
            .gpu_tables
            .kernels
            .iter()
            .map(|(n, k)| KernelRow {
                calls: calls.remove(n),
                ..self.kernel_row(*n, k, kernel_ns, None)
            })
            .collect();
        sort_kernels(&mut kernels);
        let mut cat_ns: IndexMap<&Category, i64> = IndexMap::new();
        for (n, k) in &a.gpu_tables.kernels {
            let c = cat_ns.entry(&self.kinfo[n].category).or_insert(0);
            *c = c.saturating_add(k.ns);
        }
        let mut categories: Vec<CategoryRow> = cat_ns
            .iter()
            .filter(|(_, ns)| **ns > 0)
            .map(|(c, ns)| CategoryRow {
                name: (*c).clone(),
                pct: round(pct(*ns, kernel_ns), 1),
                ms_per_step: round(self.win.per_step_ms(*ns), 3),
            })
            .collect();
        categories
            .sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then(x.name.cmp(&y.name)));
        let mut op_totals: HashMap<u32, OpTotals> = HashMap::default();
        for (&(_, name), o) in &self.ops.by_phase {
            op_totals.entry(name).or_default().add(o);
        }
        let op_total = self.ops.in_ops_ns(None);
        let mut ops: Vec<OpRow> =
            op_totals.iter().map(|(n, o)| self.op_row(*n, o, op_total, None)).collect();
        sort_ops(&mut ops);
        Tables { kernels, categories, ops }
    }

    // --- phases.

    /// The phases present, in the usual order (PHASE_ORDER, then the rest
    /// as first seen, `unphased` last when it holds kernels).
    pub(super) fn phase_ids(&self) -> Vec<u16> {
        let a = self.a;
        let mut phase_ids: Vec<u16> = Vec::new();
        let with_ranges = a.ranges.phases_with_ranges();
        let mut present: Vec<u16> = with_ranges.iter().copied().collect();
        present.extend(a.gpu_tables.kernels_by_phase.keys().map(|(p, _)| *p));
        present
            .extend(self.op_tables.ops_by_phase.keys().map(|(p, _)| *p).filter(|p| *p != UNPHASED));
        present.extend(a.gpu_tables.memcpy_by_phase.keys().copied().filter(|p| *p != UNPHASED));
        for name in PHASE_ORDER {
            if let Some(id) = (0..a.phases.len() as u16).find(|id| a.phases.name(*id) == *name) {
                if present.contains(&id) && !phase_ids.contains(&id) {
                    phase_ids.push(id);
                }
            }
        }
        for id in 1..a.phases.len() as u16 {
            if present.contains(&id) && !phase_ids.contains(&id) {
                phase_ids.push(id);
            }
        }
        let unphased_kernels = a.gpu_tables.kernels_by_phase.keys().any(|(p, _)| *p == UNPHASED);
        if unphased_kernels
            || (phase_ids.is_empty()
                && self.op_tables.ops_by_phase.keys().any(|(p, _)| *p == UNPHASED))
        {
            phase_ids.push(UNPHASED);
        }
        phase_ids
    }

    /// Per phase: GPU and wall time (measured where synced), kernels, ops,
    /// memcpy, and its kernel and op tables (docs/analysis.md §6).
    pub(super) fn phases(&self, measured: Option<&Measurements>) -> PhaseTables {
        let a = self.a;
        let range_wall = a.ranges.cpu_phase_wall();
        let mut out =
            PhaseTables { phases: Vec::new(), kernels: IndexMap::new(), ops: IndexMap::new() };
        for id in self.phase_ids() {
            let name = if id == UNPHASED {
                UNPHASED_NAME.to_string()
            } else {
                a.phases.name(id).to_string()
            };
            let ks: Vec<(u32, &Agg)> = a
                .gpu_tables
                .kernels_by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), k)| (*n, k))
                .collect();
            let os: Vec<(u32, &Agg)> = self
                .op_tables
                .ops_by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), o)| (*n, o))
                .collect();
            let trees: Vec<(u32, &OpTotals)> = self
                .ops
                .by_phase
                .iter()
                .filter(|((p, _), _)| *p == id)
                .map(|((_, n), o)| (*n, o))
                .collect();
            let k_ns: i64 = ks.iter().map(|(_, k)| k.ns).fold(0, i64::saturating_add);
            let k_count: u64 = ks.iter().map(|(_, k)| k.count).sum();
            let o_count: u64 = os.iter().map(|(_, o)| o.count).sum();
            let mut krows: Vec<KernelRow> =
                ks.iter().map(|(n, k)| self.kernel_row(*n, k, k_ns, Some(id))).collect();
            sort_kernels(&mut krows);
            let in_ops = self.ops.in_ops_ns(Some(id));
            let mut orows: Vec<OpRow> =
                trees.iter().map(|(n, o)| self.op_row(*n, o, in_ops, Some(id))).collect();
            sort_ops(&mut orows);
            let wall = measured_wall(measured, &name)
                .or_else(|| range_wall.get(&id).map(|ns| self.win.per_step_ms(*ns)))
                .map(|w| round(w, 3));
            out.phases.push(PhaseRow {
                phase: name.clone(),
                gpu_ms_per_step: round(self.win.per_step_ms(k_ns), 3),
                wall_ms_per_step: wall,
                kernels_per_step: round(k_count as f64 / self.win.n_steps, 2),
                ops_per_step: round(o_count as f64 / self.win.n_steps, 2),
                unique_kernels: ks.len() as u64,
                memcpy_ms_per_step: a
                    .gpu_tables
                    .memcpy_by_phase
                    .get(&id)
                    .map(|ns| round(self.win.per_step_ms(*ns), 3)),
                idle_ms_per_step: None,
            });
            out.kernels.insert(name.clone(), krows);
            out.ops.insert(name, orows);
        }
        out
    }
}

/// A phase's wall time as the capture measured it (synced), if it did.
pub(super) fn measured_wall(m: Option<&Measurements>, phase: &str) -> Option<f64> {
    let m = m?;
    if phase == "dataload" {
        if let Some(dl) = m.real.as_ref().and_then(|r| r.dataload_ms) {
            return Some(dl);
        }
    }
    if let Some(v) = m.composition_ms.get(phase) {
        return Some(*v);
    }
    let s = m.stages_ms.as_ref()?;
    match phase {
        "preprocess" => s.preprocess,
        "forward" if m.mode() == Some(Mode::Inference) => s.forward,
        "postprocess" => s.postprocess,
        _ => None,
    }
}

pub(super) fn sort_kernels(rows: &mut [KernelRow]) {
    rows.sort_by(|x, y| {
        y.ms_per_step.total_cmp(&x.ms_per_step).then_with(|| x.raw_name.cmp(&y.raw_name))
    });
}

pub(super) fn sort_ops(rows: &mut [OpRow]) {
    rows.sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then_with(|| x.op.cmp(&y.op)));
}
