//! CUDA/HIP graph replays given back to the ops that captured them
//! (docs/analysis.md §17.1). A capture trace records, between
//! `cudaStreamBeginCapture` and `cudaStreamEndCapture` on a thread, every
//! kernel launch of the graph, under the ops, modules and annotations that
//! made it, but no kernel runs; a replay trace records the graph's kernels
//! run under one `cudaGraphLaunch`, and no op above them. Each replayed
//! kernel is paired with its captured launch (by kernel name, in order on
//! each stream), and so with the op, shapes and stack that launched it.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;

use super::Analyzer;
use super::PassRecord;
use super::cpulog::is_module_frame;
use super::gpulog::GpuLog;
use super::names::Names;
use crate::error::{Error, Result};
use crate::profile::NodeKind;
use crate::trace::{self, Document, Event, ReadOptions, RuntimeCall};

/// The folder beside a trace that holds its graph captures, the layout
/// vLLM, SGLang and xDiT write (one trace per batch size).
pub const CAPTURE_TRACES: &str = "capture_traces";

/// The traces in a [`CAPTURE_TRACES`] folder beside `trace`.
pub fn beside(trace: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Some(dir) = trace.parent().map(|d| d.join(CAPTURE_TRACES)) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            p.is_file()
                && (name.ends_with(".json") || name.ends_with(".json.gz"))
                && name != "execution_details.json"
        })
        .collect();
    out.sort();
    out
}

/// A kernel launch made while its thread was capturing a graph.
#[derive(Debug, Clone, Copy)]
pub(super) struct CapturedLaunch {
    pub thread: u32,
    pub start: i64,
    /// The kernel's name, where the launch call records it (ROCm's
    /// `args.kernel`; CUDA's launch calls do not).
    pub kernel: Option<u32>,
}

/// One graph capture on a thread: its begin and end calls' times.
#[derive(Debug, Clone, Copy)]
pub(super) struct CaptureWindow {
    pub thread: u32,
    pub start: i64,
    pub end: i64,
}

/// A record above a captured launch: what it is, its name (an index in
/// [`Captured::names`], or once attached an id of the replay's names),
/// and, on the outermost priced op, its FLOPs (§13).
#[derive(Debug, Clone, Copy)]
struct CapRec {
    kind: NodeKind,
    name: u32,
    flops: f64,
}

/// One captured kernel: its name where recorded, and the records open
/// around its launch, outermost first (indices in [`Captured::recs`]).
#[derive(Debug, Clone)]
struct CapNode {
    kernel: Option<u32>,
    chain: Vec<u32>,
}

/// The graphs of a capture trace, each its kernels in launch order.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    names: Vec<String>,
    recs: Vec<CapRec>,
    graphs: Vec<Vec<CapNode>>,
}

impl Captured {
    /// The graphs captured in these traces, each read by the same reader
    /// in its own pass.
    pub fn read(paths: &[std::path::PathBuf], opts: &ReadOptions) -> Result<Captured> {
        let mut out = Captured::default();
        for path in paths {
            let src = trace::Source::path(path)?;
            let mut a = Analyzer::default();
            match trace::read_source(&src, &mut a, opts)? {
                Document::Trace(_) => {}
                Document::Declined => {
                    return Err(Error::failed(format!(
                        "{}: a profile, not a graph-capture trace",
                        path.display()
                    )));
                }
            }
            out.add(&a.rec);
        }
        Ok(out)
    }

    /// Captured graphs, kernels in all.
    pub fn counts(&self) -> (usize, usize) {
        (self.graphs.len(), self.graphs.iter().map(Vec::len).sum())
    }

    /// Adds the graphs one pass over a capture trace found.
    fn add(&mut self, a: &PassRecord) {
        let mut name_ids: HashMap<u32, u32> = HashMap::default();
        let mut intern = |names: &mut Vec<String>, id: u32| -> u32 {
            *name_ids.entry(id).or_insert_with(|| {
                names.push(a.names.get(id).to_string());
                names.len() as u32 - 1
            })
        };
        // Each launch's capture: the window open on its thread then.
        let mut per_graph: Vec<Vec<CapturedLaunch>> = vec![Vec::new(); a.captures.windows.len()];
        for l in &a.captures.launches {
            let w = a
                .captures
                .windows
                .iter()
                .position(|w| w.thread == l.thread && (w.start..=w.end).contains(&l.start));
            if let Some(w) = w {
                per_graph[w].push(*l);
            }
        }
        // The records open around each launch: each thread's nesting
        // records, in start order (the longer first), swept with its
        // launches.
        let threads: std::collections::BTreeSet<u32> =
            per_graph.iter().flatten().map(|l| l.thread).collect();
        let mut chains: HashMap<(u32, i64), Vec<u32>> = HashMap::default();
        for thread in threads {
            let mut recs: Vec<(i64, i64, NodeKind, u32, Option<u32>)> = a
                .cpu
                .iter_at(u64::MAX)
                .filter(|(_, r)| r.thread == thread)
                .filter_map(|(_, r)| r.tree_kind().map(|k| (r.start, r.dur, k, r.name, r.model())))
                .collect();
            recs.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
            let mut launches: Vec<i64> = per_graph
                .iter()
                .flatten()
                .filter(|l| l.thread == thread)
                .map(|l| l.start)
                .collect();
            launches.sort_unstable();
            // Each record's entry in `recs`, made when a launch is under it.
            let mut made: HashMap<usize, u32> = HashMap::default();
            let mut stack: Vec<usize> = Vec::new();
            let mut next = 0;
            for at in launches {
                while let Some(r) = recs.get(next).filter(|r| r.0 <= at) {
                    while stack.last().is_some_and(|&s| recs[s].0 + recs[s].1 <= r.0) {
                        stack.pop();
                    }
                    stack.push(next);
                    next += 1;
                }
                while stack.last().is_some_and(|&s| recs[s].0 + recs[s].1 < at) {
                    stack.pop();
                }
                let mut priced_above = false;
                let chain = stack
                    .iter()
                    .filter(|&&s| recs[s].0 + recs[s].1 >= at)
                    .map(|&s| {
                        let (_, _, kind, name, model) = recs[s];
                        let owns = model.filter(|_| !priced_above);
                        priced_above |= model.is_some();
                        *made.entry(s).or_insert_with(|| {
                            let kind = match kind {
                                NodeKind::Frame if is_module_frame(a.names.get(name)) => {
                                    NodeKind::Module
                                }
                                k => k,
                            };
                            let flops = owns.map_or(0.0, |m| a.pricing.works[m as usize].flops);
                            let name = intern(&mut self.names, name);
                            self.recs.push(CapRec { kind, name, flops });
                            self.recs.len() as u32 - 1
                        })
                    })
                    .collect();
                chains.insert((thread, at), chain);
            }
        }
        for launches in per_graph.into_iter().filter(|g| !g.is_empty()) {
            let nodes = launches
                .iter()
                .map(|l| CapNode {
                    kernel: l.kernel.map(|k| intern(&mut self.names, k)),
                    chain: chains.get(&(l.thread, l.start)).cloned().unwrap_or_default(),
                })
                .collect();
            self.graphs.push(nodes);
        }
    }
}

/// Graph captures (docs/analysis.md §17.1): each one's thread and time,
/// the kernel launches made once one was seen, and the graphs a capture
/// trace given beside this one recorded.
#[derive(Debug, Default)]
pub(super) struct Captures {
    pub(super) windows: Vec<CaptureWindow>,
    pub(super) launches: Vec<CapturedLaunch>,
    pub(super) attached: Option<Attached>,
}

impl Captures {
    /// A runtime call on `thread` over `[start, end)` once a capture began
    /// (or beginning or ending one): kept for [`Captured`].
    pub(super) fn note(
        &mut self,
        ev: &Event<'_>,
        traits: &RuntimeCall,
        thread: u32,
        (start, end): (i64, i64),
        names: &mut Names,
    ) {
        if traits.capture {
            let w = CaptureWindow { thread, start, end: i64::MAX };
            self.windows.push(w);
        } else if traits.capture_end {
            let open = self.windows.iter_mut().rev().find(|w| w.thread == thread);
            if let Some(w) = open.filter(|w| w.end == i64::MAX) {
                w.end = end;
            }
        } else if traits.launch && !traits.graph && ev.name().contains("Launch") {
            let kernel = ev.args.as_ref().and_then(|a| a.kernel.as_ref()).map(|k| names.id(&k.0));
            self.launches.push(CapturedLaunch { thread, start, kernel });
        }
    }
}

/// Captured graphs with their names interned in the replay's.
#[derive(Debug, Clone, Default)]
pub(super) struct Attached {
    recs: Vec<CapRec>,
    graphs: Vec<Vec<CapNode>>,
}

impl PassRecord {
    /// Takes the graphs captured in another trace: their names become
    /// this trace's.
    pub fn attach_captures(&mut self, c: Captured) {
        let ids: Vec<u32> = c.names.iter().map(|n| self.names.id(n)).collect();
        let mut recs = c.recs;
        for r in &mut recs {
            r.name = ids[r.name as usize];
        }
        let mut graphs = c.graphs;
        for n in graphs.iter_mut().flatten() {
            n.kernel = n.kernel.map(|k| ids[k as usize]);
        }
        self.captures.attached = Some(Attached { recs, graphs });
    }
}

/// What one replayed kernel was matched to: its graph launch (numbered),
/// and the captured records above it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Replayed {
    pub launch: u32,
    graph: u32,
    node: u32,
}

/// Each replayed kernel's captured launch, by index in `kernel_spans`.
#[derive(Debug, Default)]
pub(super) struct Matches {
    pub by_kernel: HashMap<u32, Replayed>,
}

impl Matches {
    /// The records above a matched kernel, outermost first: (kind, name,
    /// FLOPs of an owner) and the record's index, which a launch counts
    /// once.
    pub fn chain<'a>(
        &self,
        at: &'a Attached,
        r: Replayed,
    ) -> impl Iterator<Item = (u32, NodeKind, u32, f64)> + 'a {
        let node = &at.graphs[r.graph as usize][r.node as usize];
        node.chain.iter().map(move |&i| {
            let c = at.recs[i as usize];
            (i, c.kind, c.name, c.flops)
        })
    }
}

/// How many kernels of a graph launch may lie between two that follow
/// each other in the capture, on one stream, for a name match.
const LOOKAHEAD: usize = 8;

/// Pairs every graph-replayed kernel of the trace with a captured launch:
/// per graph launch, its kernels (per stream, in start order) against
/// each captured graph's launches in capture order, name by name; the
/// graph that matches most is taken. Launches that recorded no kernel
/// name (CUDA) pair by position, only with a graph of the same length.
pub(super) fn match_replays(a: &PassRecord) -> Matches {
    let mut out = Matches::default();
    let Some(at) = a.captures.attached.as_ref() else { return out };
    let mut graph_call: HashMap<u32, bool> = HashMap::default();
    let mut launches: HashMap<(u32, i64), Vec<u32>> = HashMap::default();
    for (k, span) in a.gpu.kernel_spans.iter().enumerate() {
        let Some(l) = span.launch() else { continue };
        let graph =
            *graph_call.entry(l.name).or_insert_with(|| RuntimeCall::of(a.names.get(l.name)).graph);
        if graph {
            launches.entry((l.thread, l.start)).or_default().push(k as u32);
        }
    }
    let mut keys: Vec<(u32, i64)> = launches.keys().copied().collect();
    keys.sort_unstable();
    for (n, key) in keys.iter().enumerate() {
        let mut kernels = launches.remove(key).unwrap_or_default();
        kernels.sort_by_key(|&k| {
            let s = &a.gpu.kernel_spans[k as usize];
            (s.start, s.queue, k)
        });
        let best = (0..at.graphs.len())
            .map(|g| (g, align(&a.gpu, &at.graphs[g], &kernels)))
            .max_by_key(|(g, pairs)| {
                let matched = pairs.iter().filter(|p| p.is_some()).count();
                (matched, std::cmp::Reverse(at.graphs[*g].len().abs_diff(kernels.len())))
            });
        let Some((g, pairs)) = best else { continue };
        for (node, k) in pairs.into_iter().enumerate() {
            if let Some(k) = k {
                let r = Replayed { launch: n as u32, graph: g as u32, node: node as u32 };
                out.by_kernel.insert(kernels[k], r);
            }
        }
    }
    out
}

/// For each captured launch of `graph`, the replayed kernel (an index in
/// `kernels`, which are in start order) it is.
fn align(gpu: &GpuLog, graph: &[CapNode], kernels: &[u32]) -> Vec<Option<usize>> {
    if graph.iter().any(|n| n.kernel.is_none()) {
        // No names: by position, and only when nothing is left over.
        return if graph.len() == kernels.len() {
            (0..kernels.len()).map(Some).collect()
        } else {
            vec![None; graph.len()]
        };
    }
    // Each stream's kernels in start order: a stream runs its part of the
    // graph in the order it was captured.
    let mut queues: Vec<(u32, VecDeque<usize>)> = Vec::new();
    for (i, &k) in kernels.iter().enumerate() {
        let q = gpu.kernel_spans[k as usize].queue;
        match queues.iter_mut().find(|(id, _)| *id == q) {
            Some((_, v)) => v.push_back(i),
            None => queues.push((q, VecDeque::from([i]))),
        }
    }
    let name = |i: usize| gpu.kernel_spans[kernels[i] as usize].name;
    graph
        .iter()
        .map(|node| {
            let want = node.kernel?;
            // The earliest-starting of the streams' next kernels of that
            // name (near their head).
            let (q, pos) = queues
                .iter()
                .enumerate()
                .filter_map(|(q, (_, v))| {
                    v.iter().take(LOOKAHEAD).position(|&i| name(i) == want).map(|p| (q, p))
                })
                .min_by_key(|&(q, p)| queues[q].1[p])?;
            queues[q].1.remove(pos)
        })
        .collect()
}
