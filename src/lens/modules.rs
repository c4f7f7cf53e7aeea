//! `profile modules`: the model's modules and annotations, forward and
//! backward side by side (docs/analysis.md §17). The call tree by scope
//! (ops, frames and kernels see-through) with each phase's subtree merged
//! by path: a backward op already sits under its forward op's modules, so
//! one row holds a module's forward and backward time.

use schemars::JsonSchema;
use serde::Serialize;

use super::pattern::compile_pattern;
use super::tree::{View, graph_note, on_focused_paths, pct, stored_tree, top_down};
use crate::analysis::ranges::PHASE_ORDER;
use crate::error::{Error, Result};
use crate::profile::{NodeKind, Profile};
use crate::util::round;

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ModulesQuery {
    /// Levels below the top modules to show (None: all).
    pub depth: Option<usize>,
    /// Rows under this % of both the GPU and the CPU total are hidden.
    pub min_pct: f64,
    /// Case-insensitive regex: only the paths through a matching module.
    pub focus: Option<String>,
}

impl Default for ModulesQuery {
    fn default() -> ModulesQuery {
        ModulesQuery { depth: None, min_pct: 1.0, focus: None }
    }
}

/// One module (or annotation) at its place in the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct ModuleRow {
    pub depth: usize,
    pub kind: NodeKind,
    pub name: String,
    /// Forward calls (backward has none of its own: its ops are mapped).
    pub calls_per_step: f64,
    pub forward_gpu_ms_per_step: f64,
    pub backward_gpu_ms_per_step: f64,
    /// In the loop's own phases (dataload, to_device, preprocess,
    /// postprocess, optimizer).
    pub other_gpu_ms_per_step: f64,
    pub gpu_ms_per_step: f64,
    pub pct_of_gpu: f64,
    /// Priced work over kernel time, in each direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_tflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backward_tflops: Option<f64>,
    /// Host time under the module: its frames', or on the backward side
    /// its backward ops' (a CPU run's only figures).
    pub cpu_ms_per_step: f64,
    pub forward_cpu_ms_per_step: f64,
    pub backward_cpu_ms_per_step: f64,
    pub pct_of_cpu: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Modules {
    pub trace: Option<String>,
    pub query: ModulesQuery,
    /// The steps' kernel time, all phases: what `pct_of_gpu` is of.
    pub gpu_ms_per_step: f64,
    /// Of it, in no module or annotation.
    pub outside_ms_per_step: f64,
    /// The steps' host time in records, all phases: what `pct_of_cpu` is of.
    pub cpu_ms_per_step: f64,
    pub rows: Vec<ModuleRow>,
    /// Modules not shown (depth, share or focus).
    pub hidden: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A merged node's figures per direction: (GPU ms, GFLOP, CPU ms).
#[derive(Debug, Clone, Copy, Default)]
struct Sides {
    forward: (f64, f64, f64),
    backward: (f64, f64, f64),
    other: f64,
}

enum Side {
    Forward,
    Backward,
    Other,
}

impl Side {
    /// Backward is its phase; the loop's own phases (dataload, to_device,
    /// pre/postprocess, optimizer) are other; the rest runs the model
    /// forward: `forward`, a trace without phases (`unphased`), a phase of
    /// the user's.
    fn of(phase: &str) -> Side {
        match phase {
            "backward" => Side::Backward,
            "forward" => Side::Forward,
            p if PHASE_ORDER.contains(&p) => Side::Other,
            _ => Side::Forward,
        }
    }
}

fn is_scope(kind: NodeKind) -> bool {
    matches!(kind, NodeKind::Module | NodeKind::Annotation)
}

pub fn modules(p: &Profile, q: &ModulesQuery) -> Result<Modules> {
    let stored = stored_tree(p)?;
    if !q.min_pct.is_finite() || q.min_pct < 0.0 {
        return Err(Error::usage("--min-pct takes a share in percent, 0 or more"));
    }
    let focus = q.focus.as_deref().map(|f| compile_pattern("--focus", f)).transpose()?;
    let every = vec![true; stored.nodes.len()];
    let view = top_down(stored, |k| k == NodeKind::Phase || is_scope(k), &every);
    let roots = view.roots();
    let gpu_all: f64 = roots.iter().map(|r| view.nodes[*r].gpu).sum();
    let cpu_all: f64 = roots.iter().map(|r| view.nodes[*r].cpu).sum();

    // Each phase's scopes onto one tree, keyed by path (phase left out).
    let mut merged = View::default();
    let mut sides: Vec<Sides> = Vec::new();
    for &root in &roots {
        let phase = view.nodes[root].name.as_str();
        let mut todo: Vec<(usize, Option<usize>)> =
            view.nodes[root].children.iter().map(|c| (*c, None)).collect();
        while let Some((i, parent)) = todo.pop() {
            let n = &view.nodes[i];
            if !is_scope(n.kind) {
                continue;
            }
            let m = merged.node(parent, n.kind, &n.name);
            sides.resize(merged.nodes.len(), Sides::default());
            let x = &mut merged.nodes[m];
            x.calls += n.calls;
            x.cpu += n.cpu;
            x.gpu += n.gpu;
            x.gflop += n.gflop;
            let s = &mut sides[m];
            let add = |t: &mut (f64, f64, f64)| *t = (t.0 + n.gpu, t.1 + n.gflop, t.2 + n.cpu);
            match Side::of(phase) {
                Side::Forward => add(&mut s.forward),
                Side::Backward => add(&mut s.backward),
                Side::Other => s.other += n.gpu,
            }
            todo.extend(n.children.iter().map(|c| (*c, Some(m))));
        }
    }
    let tops = merged.roots();
    if tops.is_empty() {
        return Err(Error::failed(
            "no modules or annotations in the steps: record with_modules=True (or \
             with_stack=True), or scopes with torch.profiler.record_function",
        ));
    }
    let in_scopes: f64 = tops.iter().map(|r| merged.nodes[*r].gpu).sum();

    let shown_by_focus = focus.as_ref().map(|re| on_focused_paths(&merged, re));
    let rate =
        |(ms, gflop, _): (f64, f64, f64)| (gflop > 0.0 && ms > 0.0).then(|| round(gflop / ms, 3));
    let mut rows = Vec::new();
    let limits = (q.min_pct, q.depth, shown_by_focus.as_deref());
    let hidden = merged.walk_shown(&tops, (gpu_all, cpu_all), limits, |i, depth| {
        let (n, s) = (&merged.nodes[i], sides[i]);
        rows.push(ModuleRow {
            depth,
            kind: n.kind,
            name: n.name.clone(),
            calls_per_step: round(n.calls, 3),
            forward_gpu_ms_per_step: round(s.forward.0, 4),
            backward_gpu_ms_per_step: round(s.backward.0, 4),
            other_gpu_ms_per_step: round(s.other, 4),
            gpu_ms_per_step: round(n.gpu, 4),
            pct_of_gpu: round(pct(n.gpu, gpu_all), 2),
            forward_tflops: rate(s.forward),
            backward_tflops: rate(s.backward),
            cpu_ms_per_step: round(n.cpu, 4),
            forward_cpu_ms_per_step: round(s.forward.2, 4),
            backward_cpu_ms_per_step: round(s.backward.2, 4),
            pct_of_cpu: round(pct(n.cpu, cpu_all), 2),
        });
    });
    let mut notes = Vec::new();
    if !stored.nodes.iter().any(|n| n.kind == NodeKind::Module) {
        notes.push(
            "the trace records no nn.Module frames (record with_modules=True or with_stack=True): annotations only"
                .to_string(),
        );
    }
    if !roots.iter().any(|r| matches!(Side::of(&view.nodes[*r].name), Side::Backward)) {
        notes.push("no backward phase in the steps: forward only".to_string());
    }
    // Replays sit under the scope around the graph launch, not under the
    // modules that captured them unless a capture trace says which.
    notes.extend(graph_note(stored, &every, gpu_all));
    Ok(Modules {
        trace: p.trace.clone(),
        query: q.clone(),
        gpu_ms_per_step: round(gpu_all, 4),
        outside_ms_per_step: round((gpu_all - in_scopes).max(0.0), 4),
        cpu_ms_per_step: round(cpu_all, 4),
        rows,
        hidden,
        notes,
    })
}
