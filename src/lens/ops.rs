//! `profile ops`: aten/autograd ops by CPU time (a call nested in a call
//! of the same name counted once), their self time and the GPU time
//! launched inside them (docs/analysis.md §17), with the performance
//! model's account of their GPU work where it priced them.

use schemars::JsonSchema;
use serde::Serialize;

use super::kernels::{Sort, compile_grep, efficiency_notes, sort_rows};
use super::phases::check_phase;
use crate::error::Result;
use crate::profile::{OpRow, Profile};

#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct OpQuery {
    pub top: Option<usize>,
    pub phase: Option<String>,
    /// Case-insensitive regex on the op name.
    pub grep: Option<String>,
    pub sort: Sort,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Ops {
    pub trace: Option<String>,
    pub query: OpQuery,
    pub matched: usize,
    pub total: usize,
    pub ops: Vec<OpRow>,
    /// Why rates or % of peak are missing: GPU traces only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub efficiency_notes: Vec<String>,
    /// Why the table is empty: the trace records no CPU ops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<&'static str>,
    /// As `kernels`: the kernel time in CUDA/HIP graph replays, which no
    /// op of the trace launched, and of it the part a capture trace gave
    /// its captured ops (docs/analysis.md §17.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_ms_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_attributed_ms_per_step: Option<f64>,
}

/// Why `ops` has no rows on a trace without CPU ops.
pub const NO_OPS: &str = "none in this trace: it records no CPU ops (a GPU-only trace; record with ProfilerActivity.CPU); `profile kernels` on the same file shows the GPU work";

pub fn ops(p: &Profile, q: &OpQuery) -> Result<Ops> {
    let scope: &[OpRow] = match &q.phase {
        Some(phase) => {
            check_phase(p, phase)?;
            p.ops_by_phase.get(phase).map_or(&[], Vec::as_slice)
        }
        None => &p.ops,
    };
    let re = q.grep.as_deref().map(compile_grep).transpose()?;
    let mut rows: Vec<&OpRow> =
        scope.iter().filter(|o| re.as_ref().is_none_or(|re| re.is_match(&o.op))).collect();
    sort_rows(
        &mut rows,
        q.sort,
        |o| o.ms_per_step,
        |o| o.gpu_ms_per_step.unwrap_or(0.0),
        |o| o.count_per_step,
        |o| o.achieved.lost_ms_per_step,
        |o| &o.op,
    );
    let matched = rows.len();
    let shown = q.top.unwrap_or(matched).min(matched);
    let ops = rows[..shown].iter().map(|o| (*o).clone()).collect();
    Ok(Ops {
        trace: p.trace.clone(),
        query: q.clone(),
        matched,
        total: scope.len(),
        ops,
        efficiency_notes: efficiency_notes(p),
        none: p.ops.is_empty().then_some(NO_OPS),
        graph_replay_ms_per_step: p.extras.graph_replay_ms_per_step,
        graph_replay_attributed_ms_per_step: p.extras.graph_replay_attributed_ms_per_step,
    })
}
