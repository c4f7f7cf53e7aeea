//! Chains of memory-bound kernels between matrix kernels (docs/analysis.md
//! §16): the elementwise, normalisation and copy kernels one stream runs
//! between two GEMM / convolution / attention kernels, which a compiler
//! (torch.compile) or a hand-fused kernel runs as one. Unfused, each
//! kernel reads its input from memory and writes its output back; fused,
//! the chain reads and writes once.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::replay::Change;
use super::scenarios::Scenario;
use super::{NONE, Node, NodeKind, StepModel};
use crate::profile::Category;

/// Chains of one sequence of kernels, wherever it runs.
#[derive(Debug, Clone)]
pub struct ChainGroup {
    /// The kernels' names in order ([`StepModel::names`] indexes).
    pub kernels: Vec<u32>,
    /// The ops that launched them ([`NONE`]: none recorded), in the first
    /// chain.
    pub ops: Vec<u32>,
    /// What runs before and after the first chain: the matrix kernel's
    /// name, or the op of a matrix op's helper kernel.
    pub between: (u32, u32),
    /// Chains of this sequence in the model.
    pub count: usize,
    /// Their kernels' time, and each chain's longest kernel's (ns).
    pub ns: i64,
    pub fused_ns: i64,
}

/// The classes that end a chain on both sides.
fn is_matrix(class: u8) -> bool {
    [Category::GemmConv, Category::Attention].iter().any(|c| c.index() == Some(class.into()))
}

/// The classes a chain holds: what a fusing compiler merges.
fn is_fusable(class: u8) -> bool {
    [Category::Elementwise, Category::ReductionNorm, Category::LayoutCopy]
        .iter()
        .any(|c| c.index() == Some(class.into()))
}

fn is_elementwise(class: u8) -> bool {
    Category::Elementwise.index() == Some(class.into())
}

/// A convolution library's own layout and tensor-op kernels, by name (the
/// channels-last lever's transposes, and MIOpen's `SubTensorOp*` casts
/// and adds around its NHWC kernels): its call's, not a chain's.
fn library_helpers(names: &[String]) -> HashSet<u32> {
    let Ok(re) = regex::RegexBuilder::new(&format!(
        "{}|subtensorop",
        crate::analysis::facts::LAYOUT_TRANSPOSE
    ))
    .case_insensitive(true)
    .build() else {
        return HashSet::default();
    };
    (0..names.len() as u32).filter(|&i| re.is_match(&names[i as usize])).collect()
}

/// One chain: the matrix node before it, its nodes, the matrix node after.
type Found = (u32, Vec<u32>, u32);

impl StepModel {
    /// Every chain of two or more memory-bound kernels, one of them
    /// elementwise, that a stream runs between two matrix kernels.
    fn each_chain(&self) -> Vec<Found> {
        let mut next = vec![NONE; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind == NodeKind::Gpu && n.prev != NONE {
                next[n.prev as usize] = i as u32;
            }
        }
        // A library's helper kernels (a convolution's transposes, a
        // GEMM's bias copy) belong to its call, not to a chain: kernels
        // launched by an op that launches matrix kernels end one too.
        let matrix_ops: HashSet<u32> = self
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Gpu && n.op != NONE && is_matrix(n.class))
            .map(|n| n.op)
            .collect();
        // Without ops (a GPU-only trace) that rule has nothing to go on:
        // the library's own layout kernels end a chain by their names.
        let helpers = library_helpers(&self.names);
        let mut out = Vec::new();
        let firsts = self.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Gpu);
        for (first, _) in firsts.filter(|(_, n)| n.prev == NONE) {
            let (mut after, mut run) = (NONE, Vec::new());
            let mut i = first as u32;
            while i != NONE {
                let Node { class, op, name, .. } = self.nodes[i as usize];
                if is_matrix(class) || matrix_ops.contains(&op) || helpers.contains(&name) {
                    let elementwise =
                        run.iter().any(|&j: &u32| is_elementwise(self.nodes[j as usize].class));
                    if after != NONE && run.len() >= 2 && elementwise {
                        out.push((after, std::mem::take(&mut run), i));
                    }
                    (after, run) = (i, Vec::new());
                } else if is_fusable(class) && after != NONE {
                    run.push(i);
                } else {
                    (after, run) = (NONE, Vec::new());
                }
                i = next[i as usize];
            }
        }
        out
    }

    /// The chains grouped by their sequence of kernels, most time first.
    pub fn chains(&self) -> Vec<ChainGroup> {
        let mut by: HashMap<Vec<u32>, ChainGroup> = HashMap::default();
        for (before, nodes, after) in self.each_chain() {
            let kernels: Vec<u32> = nodes.iter().map(|&j| self.nodes[j as usize].name).collect();
            let durs = nodes.iter().map(|&j| self.nodes[j as usize].dur());
            let (ns, longest) = durs.fold((0, 0), |(s, m), d| (s + d, m.max(d)));
            let g = by.entry(kernels.clone()).or_insert_with(|| ChainGroup {
                kernels,
                ops: nodes.iter().map(|&j| self.nodes[j as usize].op).collect(),
                between: (self.bound_name(before), self.bound_name(after)),
                count: 0,
                ns: 0,
                fused_ns: 0,
            });
            g.count += 1;
            g.ns += ns;
            g.fused_ns += longest;
        }
        let mut out: Vec<ChainGroup> = by.into_values().collect();
        out.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.kernels.cmp(&b.kernels)));
        out
    }

    /// A chain's end: its matrix kernel's name, or a helper kernel's op.
    fn bound_name(&self, i: u32) -> u32 {
        let n = &self.nodes[i as usize];
        if is_matrix(n.class) || n.op == NONE { n.name } else { n.op }
    }

    /// `what-if --fuse-chains`: each chain runs as one kernel as long as
    /// its longest (one pass over its largest tensor), launched once: the
    /// other kernels and their own launch calls go. None: no chain.
    pub fn chains_fused(&self) -> Option<Scenario> {
        let chains = self.each_chain();
        if chains.is_empty() {
            return None;
        }
        // A launch call that launched several kernels (a graph launch)
        // stays: the graph's other kernels still need it.
        let mut launched: HashMap<u32, u32> = HashMap::default();
        for n in self.nodes.iter().filter(|n| n.kind == NodeKind::Gpu && n.cross != NONE) {
            *launched.entry(n.cross).or_default() += 1;
        }
        let mut node_factor = Vec::new();
        for (_, nodes, _) in &chains {
            let keep = nodes.iter().copied().max_by_key(|&j| (self.nodes[j as usize].dur(), j));
            for &j in nodes.iter().filter(|&&j| Some(j) != keep) {
                node_factor.push((j, 0.0));
                let call = self.nodes[j as usize].cross;
                let alone = launched.get(&call) == Some(&1);
                if alone && self.nodes[call as usize].kind == NodeKind::Launch {
                    node_factor.push((call, 0.0));
                }
            }
        }
        node_factor.sort_unstable_by_key(|x| x.0);
        Some(Scenario {
            flags: FUSE_CHAINS.into(),
            what: format!(
                "the chains of memory-bound kernels between matrix kernels ({:.1} per step) each fused into one kernel as long as its longest, launched once",
                chains.len() as f64 / self.n_steps.max(1) as f64
            ),
            change: Change { node_factor, ..Change::default() },
            removes_ns: 0,
        })
    }
}

/// The what-if's flag.
pub const FUSE_CHAINS: &str = "--fuse-chains";
