//! The call tree of a step (docs/analysis.md §17): what ran inside what on
//! the host — phases, annotations, `nn.Module`s, Python frames, ops — down
//! to the kernels each launched, with CPU and GPU time per step. Data only:
//! [`crate::analysis::calltree`] builds it, [`crate::lens::tree`] views it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a node of the tree is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// The phase its records were placed in (a root).
    Phase,
    /// A `record_function` / user annotation.
    Annotation,
    /// An `nn.Module: Name_N` frame (`with_modules` / `with_stack`).
    Module,
    /// Any other Python frame (`with_stack`).
    Frame,
    /// An aten / autograd / framework op.
    #[default]
    Op,
    /// A CUDA/HIP graph launch: its kernels were captured earlier and
    /// belong to no op here.
    Graph,
    /// A kernel, by its short name: always a leaf.
    Kernel,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Phase => "phase",
            NodeKind::Annotation => "annotation",
            NodeKind::Module => "module",
            NodeKind::Frame => "frame",
            NodeKind::Op => "op",
            NodeKind::Graph => "graph",
            NodeKind::Kernel => "kernel",
        }
    }
}

/// One node: a name at one place in the tree, its calls summed over the
/// steps and given per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallNode {
    /// Its parent's index in [`CallTree::nodes`] (always smaller); None
    /// for a root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    pub kind: NodeKind,
    pub name: String,
    pub calls_per_step: f64,
    /// Host time inside its calls (0 for kernels and graph launches).
    #[serde(skip_serializing_if = "is_zero_f")]
    pub cpu_ms_per_step: f64,
    /// Of that, the time in none of its children.
    #[serde(skip_serializing_if = "is_zero_f")]
    pub cpu_self_ms_per_step: f64,
    /// Kernel time launched inside it, its children's included.
    #[serde(skip_serializing_if = "is_zero_f")]
    pub gpu_ms_per_step: f64,
    #[serde(skip_serializing_if = "is_zero_f")]
    pub kernels_per_step: f64,
    /// The work of the priced ops inside it that launched kernels (each
    /// counted at the outermost priced op, as in §13).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflop_per_step: Option<f64>,
}

/// The call tree: nodes in depth-first order, each node's children after
/// it, costliest (GPU, then CPU) first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallTree {
    pub nodes: Vec<CallNode>,
    /// Python frames shorter than the recorded minimum, left out: what
    /// they enclosed is under their nearest kept ancestor.
    #[serde(skip_serializing_if = "super::is_zero")]
    pub short_frames_left_out: u64,
}

fn is_zero_f(v: &f64) -> bool {
    *v == 0.0
}

impl CallTree {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Each node's children, by index.
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(p) = n.parent.filter(|p| (*p as usize) < i) {
                out[p as usize].push(i as u32);
            }
        }
        out
    }
}
