//! `profile tree`: the call tree of a step (docs/analysis.md §17), top-down
//! or bottom-up, by module, Python frame or op.

use rustc_hash::FxHashMap as HashMap;
use schemars::JsonSchema;
use serde::Serialize;

use super::pattern::{compile_pattern, exactly};
use super::phases::check_phase;
use crate::error::{Error, Result};
use crate::profile::{CallNode, CallTree, NodeKind, Profile};
use crate::util::round;

/// Which host records the tree shows: the others are see-through, what
/// they enclosed is under their nearest shown ancestor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// Annotations, `nn.Module`s and ops.
    #[default]
    Module,
    /// Annotations, modules, every kept Python frame and ops.
    Frame,
    /// Annotations and ops.
    Op,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Module => "module",
            By::Frame => "frame",
            By::Op => "op",
        }
    }

    pub(super) fn shows(self, kind: NodeKind) -> bool {
        match kind {
            NodeKind::Frame => self == By::Frame,
            NodeKind::Module => self != By::Op,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TreeQuery {
    pub by: By,
    pub phase: Option<String>,
    /// Levels below the roots to show (None: all).
    pub depth: Option<usize>,
    /// Nodes under this % of both the GPU and the CPU total are hidden.
    pub min_pct: f64,
    /// Case-insensitive regex: top-down, only the paths through a matching
    /// node; bottom-up, the matching nodes and their callers.
    pub focus: Option<String>,
    /// Callers under each node instead of callees.
    pub bottom_up: bool,
}

impl Default for TreeQuery {
    fn default() -> TreeQuery {
        TreeQuery {
            by: By::Module,
            phase: None,
            depth: None,
            min_pct: 1.0,
            focus: None,
            bottom_up: false,
        }
    }
}

/// One row: a node of the view at its depth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct TreeRow {
    pub depth: usize,
    pub kind: NodeKind,
    pub name: String,
    pub calls_per_step: f64,
    pub cpu_ms_per_step: f64,
    pub cpu_self_ms_per_step: f64,
    pub gpu_ms_per_step: f64,
    pub pct_of_gpu: f64,
    pub pct_of_cpu: f64,
    pub kernels_per_step: f64,
    /// Its priced ops' work over all of its kernel time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tflops: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Tree {
    pub trace: Option<String>,
    pub query: TreeQuery,
    /// The totals the percentages are of (the shown phases' roots).
    pub gpu_ms_per_step: f64,
    pub cpu_ms_per_step: f64,
    pub rows: Vec<TreeRow>,
    /// Nodes of the view not shown (depth, share or focus).
    pub hidden: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A node of the view: the stored nodes it merges, summed.
#[derive(Debug, Clone, Default)]
pub(super) struct ViewNode {
    pub parent: Option<usize>,
    pub kind: NodeKind,
    pub name: String,
    pub calls: f64,
    pub cpu: f64,
    pub cpu_self: f64,
    pub gpu: f64,
    pub kernels: f64,
    pub gflop: f64,
    pub children: Vec<usize>,
}

impl ViewNode {
    fn add(&mut self, n: &CallNode) {
        self.calls += n.calls_per_step;
        self.cpu_self += n.cpu_self_ms_per_step;
        self.cpu += n.cpu_ms_per_step;
        self.gpu += n.gpu_ms_per_step;
        self.kernels += n.kernels_per_step;
        self.gflop += n.gflop_per_step.unwrap_or(0.0);
    }
}

/// The view's nodes, with a lookup of each child by (parent, kind, name).
#[derive(Default)]
pub(super) struct View {
    pub nodes: Vec<ViewNode>,
    index: HashMap<(Option<usize>, NodeKind, String), usize>,
}

impl View {
    pub fn node(&mut self, parent: Option<usize>, kind: NodeKind, name: &str) -> usize {
        let key = (parent, kind, name.to_string());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(ViewNode { parent, kind, name: name.to_string(), ..ViewNode::default() });
        if let Some(p) = parent {
            self.nodes[p].children.push(i);
        }
        self.index.insert(key, i);
        i
    }

    pub fn roots(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|i| self.nodes[*i].parent.is_none()).collect()
    }

    /// Depth-first from `roots`, costliest first (GPU, then CPU time):
    /// each node shown, with its depth, or hidden with its subtree (under
    /// `min_pct` of both totals, off the focused paths, deeper than
    /// `depth`). Returns how many were hidden.
    pub fn walk_shown(
        &self,
        roots: &[usize],
        (gpu_all, cpu_all): (f64, f64),
        limits: (f64, Option<usize>, Option<&[bool]>),
        mut show: impl FnMut(usize, usize),
    ) -> usize {
        let (min_pct, max_depth, focused) = limits;
        let costly = |x: &usize, y: &usize| {
            let (a, b) = (&self.nodes[*x], &self.nodes[*y]);
            b.gpu.total_cmp(&a.gpu).then(b.cpu.total_cmp(&a.cpu)).then(a.name.cmp(&b.name))
        };
        let mut hidden = 0;
        let mut todo: Vec<(usize, usize)> = {
            let mut r = roots.to_vec();
            r.sort_by(costly);
            r.into_iter().rev().map(|i| (i, 0)).collect()
        };
        while let Some((i, depth)) = todo.pop() {
            let n = &self.nodes[i];
            let big = pct(n.gpu, gpu_all).max(pct(n.cpu, cpu_all)) >= min_pct;
            let on_path = focused.is_none_or(|s| s[i]);
            if !big || !on_path || max_depth.is_some_and(|d| depth > d) {
                hidden += 1 + descendants(self, i);
                continue;
            }
            show(i, depth);
            let mut kids = n.children.clone();
            kids.sort_by(costly);
            todo.extend(kids.into_iter().rev().map(|c| (c, depth + 1)));
        }
        hidden
    }
}

/// `v` as a % of `all` (0 of nothing).
pub(super) fn pct(v: f64, all: f64) -> f64 {
    if all > 0.0 { v / all * 100.0 } else { 0.0 }
}

/// The view a query asks for and what of it is shown: the part `tree`
/// and its stacks share.
struct Selected<'a> {
    stored: &'a CallTree,
    in_phase: Vec<bool>,
    view: View,
    /// The totals the percentages are of (the view's roots).
    gpu_all: f64,
    cpu_all: f64,
    /// The shown nodes, depth-first, with their depths.
    shown: Vec<(usize, usize)>,
    hidden: usize,
    /// Top-down with a focus: the nodes that match or lie under a match.
    under_focus: Option<Vec<bool>>,
}

fn select<'a>(p: &'a Profile, q: &TreeQuery) -> Result<Selected<'a>> {
    let stored = stored_tree(p)?;
    if let Some(phase) = &q.phase {
        check_phase(p, phase)?;
    }
    if !q.min_pct.is_finite() || q.min_pct < 0.0 {
        return Err(Error::usage("--min-pct takes a share in percent, 0 or more"));
    }
    let focus = q.focus.as_deref().map(|f| compile_pattern("--focus", f)).transpose()?;
    let in_phase = phase_filter(stored, q.phase.as_deref());
    let whole = top_down(stored, |k| q.by.shows(k), &in_phase);
    let totals = |v: &View| {
        v.roots().iter().fold((0.0, 0.0), |s, &r| (s.0 + v.nodes[r].gpu, s.1 + v.nodes[r].cpu))
    };
    // Shares are of the whole, whichever way the tree is read; bottom-up
    // with a focus, of what matches (a kernel's callers: of its time).
    let (view, (gpu_all, cpu_all)) = match (q.bottom_up, &focus) {
        (true, Some(re)) => {
            let up = bottom_up(&whole, Some(re));
            let t = totals(&up);
            (up, t)
        }
        (true, None) => (bottom_up(&whole, None), totals(&whole)),
        (false, _) => {
            let t = totals(&whole);
            (whole, t)
        }
    };
    let roots = view.roots();
    // Top-down with a focus: only the nodes on a path through a match.
    let (shown_by_focus, under_focus) = match (&focus, q.bottom_up) {
        (Some(re), false) => {
            let (shown, under) = focused_paths(&view, re);
            (Some(shown), Some(under))
        }
        _ => (None, None),
    };
    let mut shown = Vec::new();
    let limits = (q.min_pct, q.depth, shown_by_focus.as_deref());
    let hidden =
        view.walk_shown(&roots, (gpu_all, cpu_all), limits, |i, depth| shown.push((i, depth)));
    Ok(Selected { stored, in_phase, view, gpu_all, cpu_all, shown, hidden, under_focus })
}

pub fn tree(p: &Profile, q: &TreeQuery) -> Result<Tree> {
    let s = select(p, q)?;
    let (view, gpu_all, cpu_all) = (&s.view, s.gpu_all, s.cpu_all);
    let rows = s
        .shown
        .iter()
        .map(|&(i, depth)| {
            let n = &view.nodes[i];
            TreeRow {
                depth,
                kind: n.kind,
                name: n.name.clone(),
                calls_per_step: round(n.calls, 3),
                cpu_ms_per_step: round(n.cpu, 4),
                cpu_self_ms_per_step: round(n.cpu_self, 4),
                gpu_ms_per_step: round(n.gpu, 4),
                pct_of_gpu: round(pct(n.gpu, gpu_all), 2),
                pct_of_cpu: round(pct(n.cpu, cpu_all), 2),
                kernels_per_step: round(n.kernels, 3),
                tflops: (n.gflop > 0.0 && n.gpu > 0.0).then(|| round(n.gflop / n.gpu, 3)),
            }
        })
        .collect();
    Ok(Tree {
        trace: p.trace.clone(),
        query: q.clone(),
        gpu_ms_per_step: round(gpu_all, 4),
        cpu_ms_per_step: round(cpu_all, 4),
        rows,
        hidden: s.hidden,
        notes: notes(&s, q).into_iter().chain(measured_note(p, &s, q)).collect(),
    })
}

/// Where a capture timed its phases itself (synced, `stages_ms` or the
/// training composition), `phases` shows that timing, and the tree — the
/// trace's records, over every step of the window — can differ from it:
/// said, with the phases that differ by more than 2% (and 0.05 ms).
fn measured_note(p: &Profile, s: &Selected, q: &TreeQuery) -> Option<String> {
    if q.bottom_up || p.config.as_map().is_empty() {
        return None;
    }
    let differ: Vec<String> = s
        .view
        .roots()
        .into_iter()
        .map(|r| &s.view.nodes[r])
        .filter(|n| n.kind == NodeKind::Phase)
        .filter_map(|n| {
            let wall = p.phases.iter().find(|ph| ph.phase == n.name)?.wall_ms_per_step?;
            ((n.cpu - wall).abs() > (0.02 * wall).max(0.05))
                .then(|| format!("{} {:.2} ms there, {:.2} here", n.name, wall, n.cpu))
        })
        .collect();
    if differ.is_empty() {
        return None;
    }
    let steps = p.figures.window.real_steps;
    // Inference: the first half of the measured runs gives the latency,
    // the second, synced, the stages (docs/spec.md §2.1).
    let synced = match (&p.figures.latency, &p.figures.stages_ms) {
        (Some(l), Some(_)) if l.n > 0 && steps > l.n => {
            format!("the {} synced steps of {steps}", steps - l.n)
        }
        _ => "its synced steps".to_string(),
    };
    Some(format!(
        "CPU times here are the trace's records (ops and ranges) over its {steps} steps; `phases` and `summary` give the capture's own timing of {synced}, so they can differ ({})",
        differ.join("; ")
    ))
}

/// What the tree says under its rows: frames left out, no modules, the
/// share of graph replays.
fn notes(s: &Selected, q: &TreeQuery) -> Vec<String> {
    let (stored, in_phase, gpu_all) = (s.stored, &s.in_phase, s.gpu_all);
    let mut notes = Vec::new();
    if stored.short_frames_left_out > 0 && q.by == By::Frame {
        notes.push(format!(
            "{} Python frames shorter than {} µs were not kept: what they enclosed is under their caller",
            stored.short_frames_left_out,
            crate::analysis::idle::PYTHON_MIN_NS / 1000
        ));
    }
    // Without frames `--by frame` is the op tree: said, not left to look
    // like a frame tree (audit s12 L1).
    if q.by == By::Frame
        && stored.short_frames_left_out == 0
        && !stored.nodes.iter().any(|n| n.kind == NodeKind::Frame)
    {
        notes.push(
            "the trace records no Python frames (record with with_stack=True): by annotation and op, as `--by op`"
                .to_string(),
        );
    }
    if q.by == By::Module && !stored.nodes.iter().any(|n| n.kind == NodeKind::Module) {
        notes.push(
            "the trace records no nn.Module frames (record with_modules=True or with_stack=True): by annotation and op"
                .to_string(),
        );
    }
    notes.extend(graph_note(stored, in_phase, gpu_all));
    notes
}

/// The share of GPU time in CUDA/HIP graph replays, and how much of it a
/// capture trace put under the ops that captured it (docs/analysis.md
/// §17.1): said by `tree` and `modules`.
pub(super) fn graph_note(stored: &CallTree, in_phase: &[bool], gpu_all: f64) -> Option<String> {
    let graph = stored
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.kind == NodeKind::Graph && in_phase[*i])
        .map(|(_, n)| n.gpu_ms_per_step)
        .sum::<f64>();
    // Kernels right under a graph node: not matched to a captured op.
    let unattributed = stored
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Kernel)
        .filter(|n| {
            n.parent.is_some_and(|p| {
                stored.nodes[p as usize].kind == NodeKind::Graph && in_phase[p as usize]
            })
        })
        .map(|n| n.gpu_ms_per_step)
        .sum::<f64>();
    if graph > 0.0 && unattributed < graph - 1e-9 {
        Some(format!(
            "{:.3} ms/step ({:.1}%) of GPU time is in CUDA/HIP graph replays: {:.1}% of it under the ops that captured their kernels, {:.3} ms/step under no op",
            graph,
            pct(graph, gpu_all),
            pct(graph - unattributed, graph),
            if unattributed > 0.0 { unattributed } else { 0.0 }
        ))
    } else if graph > 0.0 {
        Some(format!(
            "{:.3} ms/step ({:.1}%) of GPU time is in CUDA/HIP graph replays: their kernels were captured earlier and belong to no op here",
            graph,
            pct(graph, gpu_all)
        ))
    } else {
        None
    }
}

/// The callers of the first root of a bottom-up tree: the chain of its
/// only callers, innermost first, then the callers of the last of them
/// where it has several (costliest first, as the lens orders them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Callers<'a> {
    pub chain: Vec<&'a TreeRow>,
    pub branch: Vec<&'a TreeRow>,
}

pub fn callers(t: &Tree) -> Callers<'_> {
    let rows = &t.rows;
    let mut out = Callers::default();
    let mut at = 0;
    while at < rows.len() {
        let depth = rows[at].depth;
        let kids: Vec<&TreeRow> = rows[at + 1..]
            .iter()
            .take_while(|r| r.depth > depth)
            .filter(|r| r.depth == depth + 1)
            .collect();
        match kids.as_slice() {
            [] => break,
            [one] => {
                out.chain.push(one);
                at += 1;
            }
            _ => {
                out.branch = kids;
                break;
            }
        }
    }
    out
}

/// The bottom-up tree of kernel `label` alone, by frame: its callers, each
/// with its share of the kernel's time (docs/analysis.md §17).
pub fn kernel_callers(p: &Profile, label: &str) -> Result<Tree> {
    let q = TreeQuery {
        by: By::Frame,
        focus: Some(exactly(label)),
        bottom_up: true,
        min_pct: 0.0,
        ..TreeQuery::default()
    };
    tree(p, &q)
}

/// One caller of a kernel, as `kernels --json` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Caller {
    pub kind: NodeKind,
    pub name: String,
    /// Its share of the kernel's time per step, in percent.
    pub pct_of_kernel: f64,
}

/// Where a kernel was launched from: the chain of its only callers,
/// innermost first — the op, its modules, the Python lines — then, where
/// the chain branches, the callers there, costliest first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LaunchedFrom {
    /// The kernel's label, as its row names it.
    pub kernel: String,
    pub chain: Vec<Caller>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub branch: Vec<Caller>,
}

/// [`LaunchedFrom`] of kernel `label`; None where the profile has no call
/// tree.
pub fn launched_from(p: &Profile, label: &str) -> Option<LaunchedFrom> {
    let t = kernel_callers(p, label).ok()?;
    let c = callers(&t);
    let caller =
        |r: &&TreeRow| Caller { kind: r.kind, name: r.name.clone(), pct_of_kernel: r.pct_of_gpu };
    Some(LaunchedFrom {
        kernel: label.to_string(),
        chain: c.chain.iter().map(caller).collect(),
        branch: c.branch.iter().map(caller).collect(),
    })
}

/// What a flame graph's widths are: the kernel time launched inside each
/// node, or its host time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Weight {
    /// GPU time: the kernels launched inside each frame.
    #[default]
    Gpu,
    /// CPU time: the host time inside each frame.
    Cpu,
}

impl Weight {
    pub fn as_str(self) -> &'static str {
        match self {
            Weight::Gpu => "gpu",
            Weight::Cpu => "cpu",
        }
    }
}

/// The shown tree as collapsed stacks (`tree --format folded|svg`): one
/// stack per shown node that has weight of its own, its frames the names
/// from a root down to it. Each node's own weight is its total less its
/// shown children's, so the stacks through a node sum to the tree's
/// figure for it (what `--min-pct`/`--depth` hide stays in its parent's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stacks {
    pub trace: Option<String>,
    pub query: TreeQuery,
    pub weight: Weight,
    /// The weight of every stack summed, ns per step.
    pub total_ns_per_step: u64,
    pub stacks: Vec<Stack>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stack {
    /// The view's root first: top-down the outermost record, bottom-up the
    /// kernel or op whose cost it is, then its callers.
    pub frames: Vec<String>,
    /// Integer nanoseconds per step: what flame-graph tools count.
    pub ns_per_step: u64,
}

/// The tree of `q` as stacks weighted by `weight`; `None`: GPU time, or
/// CPU time where the view has no GPU time (a CPU run; said in a note).
/// A weight the view has none of is refused (exit 2).
pub fn stacks(p: &Profile, q: &TreeQuery, weight: Option<Weight>) -> Result<Stacks> {
    let s = select(p, q)?;
    let mut notes = notes(&s, q);
    let weight = match weight {
        Some(w) => w,
        None if s.gpu_all <= 0.0 && s.cpu_all > 0.0 => {
            notes.push(
                "this view has no GPU time (a CPU run?): the stacks are weighted by CPU time"
                    .to_string(),
            );
            Weight::Cpu
        }
        None => Weight::Gpu,
    };
    let view = &s.view;
    let value = |i: usize| match weight {
        Weight::Gpu => view.nodes[i].gpu,
        Weight::Cpu => view.nodes[i].cpu,
    };
    // ms per step → integer ns; a node's own weight is its rounded total
    // less its shown children's, so the totals telescope exactly.
    let ns = |ms: f64| (ms * 1e6).round().max(0.0) as u64;
    let (mut kids_ns, mut kids) = (vec![0u64; view.nodes.len()], vec![0u64; view.nodes.len()]);
    let mut is_shown = vec![false; view.nodes.len()];
    for &(i, _) in &s.shown {
        is_shown[i] = true;
        if let Some(p) = view.nodes[i].parent {
            kids_ns[p] += ns(value(i));
            kids[p] += 1;
        }
    }
    let mut stacks = Vec::new();
    let mut short = 0usize;
    for &(i, _) in &s.shown {
        // Above a focus's matches a frame is only the path to them.
        if s.under_focus.as_ref().is_some_and(|u| !u[i]) {
            continue;
        }
        let total = ns(value(i));
        // Its children's time exceeds its own by more than the profile's
        // rounding (0.1 µs a figure; work of other threads placed under
        // it): its frame is theirs.
        if kids_ns[i] > total + 100 * kids[i] {
            short += 1;
        }
        let own = total.saturating_sub(kids_ns[i]);
        if own == 0 {
            continue;
        }
        let mut frames = Vec::new();
        let mut at = Some(i);
        while let Some(c) = at {
            debug_assert!(is_shown[c], "a shown node's ancestors are shown");
            frames.push(view.nodes[c].name.clone());
            at = view.nodes[c].parent;
        }
        // The view's root first: bottom-up, the callee under its callers.
        frames.reverse();
        stacks.push(Stack { frames, ns_per_step: own });
    }
    // A root that `--min-pct` hides has no parent to keep its weight: its
    // own frame does, so that the lines' total is the tree's.
    if q.focus.is_none() {
        for i in view.roots() {
            let own = ns(value(i));
            if !is_shown[i] && own > 0 {
                stacks.push(Stack { frames: vec![view.nodes[i].name.clone()], ns_per_step: own });
            }
        }
    }
    if short > 0 {
        notes.push(format!(
            "{short} frames hold less {} time than their children (work of other threads placed under them): those frames are as wide as their children",
            weight.as_str().to_uppercase()
        ));
    }
    let total_ns_per_step = stacks.iter().map(|s| s.ns_per_step).sum();
    if total_ns_per_step == 0 {
        let w = weight.as_str().to_uppercase();
        return Err(Error::usage(match (&q.focus, weight) {
            (Some(f), _) => {
                format!("nothing to draw: no node with {w} time in this view matches --focus {f}")
            }
            (None, Weight::Gpu) => {
                format!("nothing to draw: this view of the tree has no {w} time; try --weight cpu")
            }
            (None, Weight::Cpu) => {
                format!("nothing to draw: this view of the tree has no {w} time; try --weight gpu")
            }
        }));
    }
    Ok(Stacks {
        trace: p.trace.clone(),
        query: q.clone(),
        weight,
        total_ns_per_step,
        stacks,
        notes,
    })
}

/// The profile's call tree, or why there is none.
pub(super) fn stored_tree(p: &Profile) -> Result<&CallTree> {
    p.call_tree.as_ref().filter(|t| !t.is_empty()).ok_or_else(|| {
        Error::failed(
            "no call tree: the trace records no CPU ops (or the profile was written before \
             call trees; read the trace itself)",
        )
    })
}

/// Which stored nodes are in the phase asked for (all without one).
pub(super) fn phase_filter(t: &CallTree, phase: Option<&str>) -> Vec<bool> {
    let mut out = vec![phase.is_none(); t.nodes.len()];
    if let Some(phase) = phase {
        for (i, n) in t.nodes.iter().enumerate() {
            out[i] = match n.parent {
                None => n.kind == NodeKind::Phase && n.name == phase,
                Some(p) => out.get(p as usize).copied().unwrap_or(false),
            };
        }
    }
    out
}

/// The stored tree with the records `shows` refuses made see-through.
pub(super) fn top_down(t: &CallTree, shows: impl Fn(NodeKind) -> bool, in_phase: &[bool]) -> View {
    let mut view = View::default();
    // Each stored node's place in the view: its own, or its nearest shown
    // ancestor's.
    let mut at: Vec<Option<usize>> = vec![None; t.nodes.len()];
    for (i, n) in t.nodes.iter().enumerate() {
        if !in_phase[i] {
            continue;
        }
        let parent = n.parent.and_then(|p| at[p as usize]);
        let v = match parent {
            Some(v) if !shows(n.kind) => {
                // See-through: its self time is its nearest shown ancestor's.
                view.nodes[v].cpu_self += n.cpu_self_ms_per_step;
                v
            }
            _ => {
                let v = view.node(parent, n.kind, &n.name);
                view.nodes[v].add(n);
                v
            }
        };
        at[i] = Some(v);
    }
    view
}

/// Callers under each node: every shown node's own cost (its self time,
/// the kernels directly under it) goes up its chain of callers — a
/// phase's own (Python outside any op or module) is a root of its own;
/// with a focus, the matching nodes' whole cost (the outermost of each
/// nest).
fn bottom_up(td: &View, focus: Option<&regex::Regex>) -> View {
    let mut view = View::default();
    let matches = |n: &ViewNode| focus.is_none_or(|re| re.is_match(&n.name));
    for (i, n) in td.nodes.iter().enumerate() {
        if (n.kind == NodeKind::Phase && focus.is_some()) || !matches(n) {
            continue;
        }
        let own = match focus {
            // The matching node's total, once per nest of matches.
            Some(_) => {
                let mut up = n.parent;
                let mut nested = false;
                while let Some(p) = up {
                    nested |= matches(&td.nodes[p]) && td.nodes[p].kind != NodeKind::Phase;
                    up = td.nodes[p].parent;
                }
                if nested {
                    continue;
                }
                (n.cpu, n.gpu, n.kernels, n.gflop)
            }
            None => {
                let kids = n.children.iter().map(|c| &td.nodes[*c]);
                let (gpu, kernels, gflop) = kids.fold((n.gpu, n.kernels, n.gflop), |s, c| {
                    (s.0 - c.gpu, s.1 - c.kernels, s.2 - c.gflop)
                });
                (n.cpu_self, gpu.max(0.0), kernels.max(0.0), gflop.max(0.0))
            }
        };
        if own.0 <= 0.0 && own.1 <= 0.0 {
            continue;
        }
        let mut parent = None;
        let mut cur = Some(i);
        while let Some(c) = cur {
            let s = &td.nodes[c];
            let v = view.node(parent, s.kind, &s.name);
            let x = &mut view.nodes[v];
            x.cpu += own.0;
            x.cpu_self += if parent.is_none() { n.cpu_self } else { 0.0 };
            x.gpu += own.1;
            x.kernels += own.2;
            x.gflop += own.3;
            if parent.is_none() {
                x.calls += n.calls;
            }
            parent = Some(v);
            cur = s.parent;
        }
    }
    view
}

/// Top-down with a focus: the nodes that match, their ancestors and their
/// descendants.
pub(super) fn on_focused_paths(view: &View, re: &regex::Regex) -> Vec<bool> {
    focused_paths(view, re).0
}

/// The nodes on the paths through a match, and those that match or lie
/// under a match.
fn focused_paths(view: &View, re: &regex::Regex) -> (Vec<bool>, Vec<bool>) {
    let n = view.nodes.len();
    let mut shown = vec![false; n];
    // Nodes come after their parent: one pass down marks the descendants
    // of a match, one pass up its ancestors.
    let mut under = vec![false; n];
    for i in 0..n {
        let x = &view.nodes[i];
        under[i] = re.is_match(&x.name) || x.parent.is_some_and(|p| under[p]);
        shown[i] = under[i];
    }
    for i in (0..n).rev() {
        if shown[i] {
            if let Some(p) = view.nodes[i].parent {
                shown[p] = true;
            }
        }
    }
    (shown, under)
}

pub(super) fn descendants(view: &View, i: usize) -> usize {
    view.nodes[i].children.iter().map(|c| 1 + descendants(view, *c)).sum()
}
