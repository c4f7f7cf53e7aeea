//! The call tree of the measured steps (docs/analysis.md §17), from what
//! the single pass kept: each thread's host records (ops, annotations,
//! `nn.Module` and Python frames) nested by time, and each in-step kernel
//! under the innermost record open at its launch on the launching thread,
//! each in its own phase (the records open around it re-created there
//! when they started in another).
//!
//! Nodes are keyed by their path (a calling-context tree): a name called
//! from two places is two nodes. A kernel's time counts for its node and
//! every ancestor; a node's CPU self time is its time in none of its
//! children; a record counts until the end of the step it started in.
//! The same pass gives the ops table its figures with a nested same-name
//! op (`aten::copy_` inside `aten::copy_`) counted once.

use rustc_hash::FxHashMap as HashMap;

use super::PassRecord;
use super::cpulog::{CpuRec, HostKind, RecPos, is_module_frame, thread_bit};
use super::gpulog::KernelClasses;
use super::graphs::{Matches, match_replays};
use super::ranges::{PlaceCache, Ranges, UNPHASED, UNPHASED_NAME};
use crate::profile::{CallNode, CallTree, NodeKind};
use crate::trace::RuntimeCall;
use crate::util::round;

const MS: f64 = 1e6;

/// A node while the tree is built: figures in whole units over all steps.
#[derive(Debug, Clone, Copy)]
struct Raw {
    parent: u32,
    kind: NodeKind,
    /// Interned name (kernels: their label's index in `labels`).
    key: u32,
    phase: u16,
    calls: u64,
    cpu_ns: i64,
    /// Kernel time launched directly under it (its subtree's at the end).
    gpu_ns: i64,
    kernels: u64,
    flops: f64,
}

const ROOT: u32 = u32::MAX;

/// How far a record may end after the one it starts in and still be its
/// child: a microsecond, the rounding of traces written in whole µs.
const OUTRUN_NS: i64 = 1_000;

/// What a record open on a thread's stack holds.
#[derive(Debug, Clone, Copy)]
struct Open {
    end: i64,
    node: u32,
    /// Its priced op's entry in `OpPricing::works`, when it is the
    /// outermost priced op open.
    owns: Option<u32>,
    /// Kernel time launched while it was open.
    gpu_ns: i64,
    /// A backward op put under its forward op's modules and annotations.
    mapped: bool,
}

/// Per (phase, op name): the ops table's figures from the tree.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpTotals {
    /// Calls and time of the outermost call of each same-name nest.
    pub calls: u64,
    pub ns: i64,
    /// Time in none of its children, every call.
    pub self_ns: i64,
    /// Kernel time under its outermost calls.
    pub gpu_ns: i64,
}

impl OpTotals {
    pub fn add(&mut self, o: &OpTotals) {
        self.calls += o.calls;
        self.ns = self.ns.saturating_add(o.ns);
        self.self_ns = self.self_ns.saturating_add(o.self_ns);
        self.gpu_ns = self.gpu_ns.saturating_add(o.gpu_ns);
    }
}

/// The ops table's figures from the tree.
#[derive(Debug, Default)]
pub struct OpAccount {
    pub by_phase: HashMap<(u16, u32), OpTotals>,
    /// Per phase, the time inside ops: the calls with no op above them.
    pub in_ops: HashMap<u16, i64>,
}

impl OpAccount {
    /// The time inside ops in one phase, or in all.
    pub fn in_ops_ns(&self, phase: Option<u16>) -> i64 {
        self.in_ops
            .iter()
            .filter(|(p, _)| phase.is_none_or(|x| x == **p))
            .map(|(_, ns)| *ns)
            .fold(0, i64::saturating_add)
    }
}

/// The tree as built, before it is given per step.
pub struct Built {
    nodes: Vec<Raw>,
    names: Vec<String>,
    /// In-step Python frames too short to be kept.
    pub short_frames: u64,
    /// The kernel time of graph replays matched to captured ops.
    pub graph_attributed_ns: i64,
}

/// A record of an out-of-order thread, to be swept once sorted: its
/// sort key (duration clipped) and where it sits in the log; 24 bytes, a
/// third of a decoded record with its kind and phase.
struct Pending {
    start: i64,
    dur: i64,
    pos: RecPos,
}

const _: () = assert!(size_of::<Pending>() == 24);

struct Builder<'a> {
    a: &'a PassRecord,
    nodes: Vec<Raw>,
    child: HashMap<(u32, NodeKind, u32), u32>,
    /// Phase id → its root node.
    roots: HashMap<u16, u32>,
    /// Kernel label → index in `labels`.
    label_ids: HashMap<&'a str, u32>,
    labels: Vec<&'a str>,
    kinfo: &'a KernelClasses,
    graph_call: HashMap<u32, bool>,
    /// Per sequence number, the last forward op to start with it: its
    /// start and node.
    forward: HashMap<u64, (i64, u32)>,
    /// Graph-replayed kernels' captured launches (§17.1), the records
    /// each graph launch counted a call of, and their kernels' time.
    matches: Matches,
    replayed: rustc_hash::FxHashSet<(u32, u32)>,
    attributed_ns: i64,
}

impl<'a> Builder<'a> {
    fn node(&mut self, parent: u32, kind: NodeKind, key: u32, phase: u16) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.child.entry((parent, kind, key)).or_insert(next);
        if id == next {
            self.nodes.push(Raw {
                parent,
                kind,
                key,
                phase,
                calls: 0,
                cpu_ns: 0,
                gpu_ns: 0,
                kernels: 0,
                flops: 0.0,
            });
        }
        id
    }

    fn root(&mut self, phase: u16) -> u32 {
        if let Some(&r) = self.roots.get(&phase) {
            return r;
        }
        let r = self.node(ROOT, NodeKind::Phase, phase as u32, phase);
        self.roots.insert(phase, r);
        r
    }

    fn label(&mut self, name: u32) -> u32 {
        let label: &'a str =
            self.kinfo.get(&name).map_or_else(|| self.a.names.get(name), |k| k.label.as_str());
        let next = self.labels.len() as u32;
        let id = *self.label_ids.entry(label).or_insert(next);
        if id == next {
            self.labels.push(label);
        }
        id
    }

    /// Kernel `k` (by index in `kernel_spans`) under `parent`.
    fn kernel(&mut self, parent: u32, k: u32) {
        let span = &self.a.gpu.kernel_spans[k as usize];
        let (name, dur) = (span.name, span.end - span.start);
        let phase = self.nodes[parent as usize].phase;
        let label = self.label(name);
        let leaf = self.node(parent, NodeKind::Kernel, label, phase);
        let n = &mut self.nodes[leaf as usize];
        n.gpu_ns = n.gpu_ns.saturating_add(dur);
        n.kernels += 1;
        n.calls += 1;
    }

    /// Where a record or kernel of `phase` goes inside `top`, the
    /// innermost record open around it: `top` when it is in that phase,
    /// else a copy of `top`'s chain (from its phase's root down: the
    /// annotations, modules, frames and ops open around it) under
    /// `phase`'s root. The copies hold no calls of their own, and no time
    /// but what records move there ([`Builder::move_later`]).
    fn in_phase(&mut self, top: Option<u32>, phase: u16) -> u32 {
        let Some(top) = top.filter(|t| self.nodes[*t as usize].phase != phase) else {
            return top.unwrap_or_else(|| self.root(phase));
        };
        let mut chain = Vec::new();
        let mut at = top;
        while at != ROOT && self.nodes[at as usize].kind != NodeKind::Phase {
            let n = &self.nodes[at as usize];
            chain.push((n.kind, n.key));
            at = n.parent;
        }
        let mut parent = self.root(phase);
        for (kind, key) in chain.into_iter().rev() {
            parent = self.node(parent, kind, key, phase);
        }
        parent
    }

    /// Moves `ns` of a record's time from its node `from`, and the scopes
    /// made for it alone between it and `stop` (a backward op's forward
    /// scopes), to their copies under `phase`. The records around it
    /// move their own time in each phase (the chain is copied, not
    /// charged): theirs holds its.
    fn move_later(&mut self, from: u32, stop: u32, phase: u16, ns: i64) {
        let mut copy = self.in_phase(Some(from), phase);
        let mut at = from;
        while at != stop && at != ROOT && copy != ROOT {
            let n = &mut self.nodes[at as usize];
            n.cpu_ns = n.cpu_ns.saturating_sub(ns);
            at = n.parent;
            let c = &mut self.nodes[copy as usize];
            c.cpu_ns = c.cpu_ns.saturating_add(ns);
            copy = c.parent;
        }
    }

    /// The modules and annotations above a node, outermost first.
    fn scopes_of(&self, node: u32) -> Vec<(NodeKind, u32)> {
        let mut out = Vec::new();
        let mut at = self.nodes[node as usize].parent;
        while at != ROOT {
            let n = &self.nodes[at as usize];
            if matches!(n.kind, NodeKind::Module | NodeKind::Annotation) {
                out.push((n.kind, n.key));
            }
            at = n.parent;
        }
        out.reverse();
        out
    }

    /// A graph-replayed kernel's captured records, under its graph node:
    /// each a call once per graph launch, an owner's FLOPs with it.
    fn captured(&mut self, mut parent: u32, k: u32, dur: i64, phase: u16) -> u32 {
        let a = self.a;
        let (Some(at), Some(&r)) = (a.captures.attached.as_ref(), self.matches.by_kernel.get(&k))
        else {
            return parent;
        };
        self.attributed_ns = self.attributed_ns.saturating_add(dur);
        let chain: Vec<_> = self.matches.chain(at, r).collect();
        for (rec, kind, name, flops) in chain {
            parent = self.node(parent, kind, name, phase);
            if self.replayed.insert((r.launch, rec)) {
                let n = &mut self.nodes[parent as usize];
                n.calls += 1;
                n.flops += flops;
            }
        }
        parent
    }

    fn is_graph_launch(&mut self, call: u32) -> bool {
        let names = &self.a.names;
        *self.graph_call.entry(call).or_insert_with(|| RuntimeCall::of(names.get(call)).graph)
    }
}

/// One thread's sweep: its open records and its launches still to give.
struct Sweep<'l> {
    stack: Vec<Open>,
    /// Its in-step launches (start, kernel, phase), by start.
    launches: &'l [(i64, u32, u16)],
    next: usize,
}

impl Sweep<'_> {
    /// Gives the launches before `until` to the records open around them.
    fn give(&mut self, until: i64, b: &mut Builder<'_>) {
        while let Some(&(at, k, phase)) = self.launches.get(self.next).filter(|l| l.0 < until) {
            self.next += 1;
            while self.stack.last().is_some_and(|o| o.end < at) {
                close(self.stack.pop().expect("a top"), b);
            }
            let span = &b.a.gpu.kernel_spans[k as usize];
            let dur = span.end - span.start;
            // In the launch's own phase, under the records open around it.
            let mut parent = b.in_phase(self.stack.last().map(|o| o.node), phase);
            let launch = span.launch().map_or(0, |l| l.name);
            if b.is_graph_launch(launch) {
                parent = b.node(parent, NodeKind::Graph, launch, phase);
                parent = b.captured(parent, k, dur, phase);
            }
            b.kernel(parent, k);
            for o in &mut self.stack {
                o.gpu_ns = o.gpu_ns.saturating_add(dur);
            }
        }
    }

    /// Takes the thread's next record (in start order, the longer first),
    /// in the phases its time falls in.
    fn take(&mut self, r: &CpuRec, kind: NodeKind, phases: &Phases, b: &mut Builder<'_>) {
        let phase = phases.start;
        self.give(r.start, b);
        // A record that outlives the one it starts in is not its child:
        // a `record_function` range opens inside the Python frame that
        // enters it and closes inside the one that exits it (vLLM's
        // 58 ms `capture_32_FULL` in a 0.07 ms `_record_function_enter_new`).
        // The outrun record closes where this one starts, its time after
        // that this one's, so the thread's time is counted once. A child
        // ending within the timestamps' rounding of its parent stays its
        // child.
        let end = r.start.saturating_add(r.dur);
        while self
            .stack
            .last()
            .is_some_and(|o| o.end <= r.start || o.end.saturating_add(OUTRUN_NS) < end)
        {
            let o = self.stack.pop().expect("a top");
            let n = &mut b.nodes[o.node as usize];
            n.cpu_ns = n.cpu_ns.saturating_sub((o.end - r.start).max(0));
            close(o, b);
        }
        // The child that ends within the rounding after its parent ends
        // with it: no child outlasts its parent in the tree.
        let mut r = *r;
        if let Some(top) = self.stack.last() {
            r.dur = r.dur.min(top.end - r.start);
        }
        let r = &r;
        // In its own phase (that of its start), under the records open
        // around it: those that started in another phase, the optimizer's
        // step inside a user range that opened in forward, copied there
        // (their time in this phase moved there when they were taken).
        let top = self.stack.last().map(|o| o.node);
        let under = b.in_phase(top, phase);
        let mut parent = under;
        // A forward op: where its backward ops go. A backward op, the
        // outermost of its nest: under its forward op's modules and
        // annotations (the chain made in its own phase).
        let mut mapped = false;
        let autograd = r.autograd();
        match autograd {
            Some(a) if a.fwd_thread.is_some() && !self.stack.iter().any(|o| o.mapped) => {
                if let Some(&(_, fwd)) = b.forward.get(&a.seq) {
                    for (kind, key) in b.scopes_of(fwd) {
                        parent = b.node(parent, kind, key, phase);
                        let n = &mut b.nodes[parent as usize];
                        n.cpu_ns = n.cpu_ns.saturating_add(r.dur);
                        mapped = true;
                    }
                }
            }
            _ => {}
        }
        let kind = match kind {
            NodeKind::Frame if is_module_frame(b.a.names.get(r.name)) => NodeKind::Module,
            k => k,
        };
        let node = b.node(parent, kind, r.name, phase);
        let n = &mut b.nodes[node as usize];
        n.calls += 1;
        n.cpu_ns = n.cpu_ns.saturating_add(r.dur);
        // Its time in the phases after its start goes there: a thread's
        // time in a phase never exceeds the phase's (the loop thread's
        // `## backward ##` opens in forward).
        for &(p, ns) in &phases.later {
            b.move_later(node, under, p, ns);
        }
        if let Some(a) = autograd.filter(|a| a.fwd_thread.is_none()) {
            // The last op of a sequence number to start is the one that
            // made its autograd node, or one inside it.
            let last = b.forward.entry(a.seq).or_insert((r.start, node));
            if r.start >= last.0 {
                *last = (r.start, node);
            }
        }
        let priced_above = self.stack.iter().any(|o| o.owns.is_some());
        let owns = r.model().filter(|_| !priced_above);
        let mapped = mapped || self.stack.iter().any(|o| o.mapped);
        self.stack.push(Open { end: r.start + r.dur, node, owns, gpu_ns: 0, mapped });
    }

    fn finish(&mut self, b: &mut Builder<'_>) {
        self.give(i64::MAX, b);
        while let Some(o) = self.stack.pop() {
            close(o, b);
        }
    }
}

/// The phases a record's time falls in: that of its start, and its time
/// (ns) in each other phase it runs into, in order of first entry.
struct Phases {
    start: u16,
    later: Vec<(u16, i64)>,
}

impl Phases {
    /// `r`'s phases on its thread's phase timeline.
    fn of(ranges: &Ranges, cache: &mut PlaceCache, r: &CpuRec) -> Phases {
        let (start, mut until) = ranges.cpu_phase_span(cache, r.thread, r.start);
        let end = r.start.saturating_add(r.dur);
        let mut later: Vec<(u16, i64)> = Vec::new();
        while until < end {
            let (p, next) = ranges.cpu_phase_span(cache, r.thread, until);
            let ns = next.min(end) - until;
            if p != start {
                match later.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, t)) => *t += ns,
                    None => later.push((p, ns)),
                }
            }
            if next <= until {
                break;
            }
            until = next;
        }
        Phases { start, later }
    }
}

/// Every thread's sweep, and the records set aside.
struct Sweeps<'l> {
    /// By thread id (the pass's ids are dense).
    by_thread: Vec<Option<Sweep<'l>>>,
    /// Every thread's in-step launches, by thread then start.
    launches: &'l [(i64, u32, u16)],
    /// Thread → its launches' range in `launches`.
    threads: &'l HashMap<u32, (usize, usize)>,
    places: PlaceCache,
    /// The window records are clipped to where the trace has no steps.
    window: Option<(i64, i64)>,
    /// Out-of-order threads' in-step records.
    sorted: HashMap<u32, Vec<Pending>>,
    /// In-order threads with backward ops, swept on a second read.
    backward_bits: u64,
}

impl<'l> Sweeps<'l> {
    fn of(&mut self, thread: u32) -> &mut Sweep<'l> {
        let i = thread as usize;
        if i >= self.by_thread.len() {
            self.by_thread.resize_with(i + 1, || None);
        }
        let (launches, threads) = (self.launches, self.threads);
        self.by_thread[i].get_or_insert_with(|| {
            let (from, to) = threads.get(&thread).copied().unwrap_or((0, 0));
            Sweep { stack: Vec::new(), launches: &launches[from..to], next: 0 }
        })
    }

    /// Takes a record from the log: swept now if its thread came in order
    /// (and, when it has backward ops, on the second read), else set
    /// aside to be sorted.
    fn offer(&mut self, pos: RecPos, r: &CpuRec, second_read: bool, b: &mut Builder<'_>) {
        let Some(kind) = r.tree_kind() else { return };
        let order = b.a.cpu.thread_order(r.thread);
        if order.backward && !order.unsorted && !second_read {
            self.backward_bits |= thread_bit(r.thread);
            return;
        }
        if second_read && (order.unsorted || !order.backward) {
            return;
        }
        let Some(end) = b.a.ranges.step_end_cached(&mut self.places, r.start) else { return };
        if order.unsorted {
            // Sorted by the recorded duration (the longer first), clipped
            // when taken.
            let p = Pending { start: r.start, dur: r.dur, pos };
            self.sorted.entry(r.thread).or_default().push(p);
            return;
        }
        let r = within(*r, end, self.window);
        let phases = Phases::of(&b.a.ranges, &mut self.places, &r);
        self.of(r.thread).take(&r, kind, &phases, b);
    }

    /// Takes an out-of-order thread's records, sorted.
    fn take_sorted(&mut self, thread: u32, mut recs: Vec<Pending>, b: &mut Builder<'_>) {
        // Ties in the log's order: the only order the file gives records
        // of the same start and duration.
        recs.sort_unstable_by_key(|p| (p.start, std::cmp::Reverse(p.dur), p.pos));
        for p in recs {
            let mut r = b.a.cpu.record_at(p.pos, p.start);
            r.dur = p.dur;
            let kind = r.tree_kind().expect("a nesting record was set aside");
            let end = b.a.ranges.step_end_cached(&mut self.places, r.start);
            let r = within(r, end.expect("set aside in a step"), self.window);
            let phases = Phases::of(&b.a.ranges, &mut self.places, &r);
            self.of(thread).take(&r, kind, &phases, b);
        }
    }
}

/// A record that started in a step, clipped to the step's end (`end`):
/// what ran after it (the profiler's own `step()` frame closing, 2.2 ms
/// on the H100 Qwen trace) is not the step's time. Without step markers
/// the one step is the `window` (§2), which Python frames and annotations
/// may begin before and end after: clipped to it at both ends, so that
/// nesting holds and no thread has more time than the window.
fn within(mut r: CpuRec, end: i64, window: Option<(i64, i64)>) -> CpuRec {
    let mut end = end;
    if let Some((from, until)) = window {
        let start = r.start.max(from);
        r.dur = r.dur.saturating_sub(start - r.start);
        r.start = start;
        end = end.min(until);
    }
    r.dur = r.dur.min(end.saturating_sub(r.start)).max(0);
    r
}

/// A record closes: an outermost priced op that launched kernels adds its
/// work (§13 prices a call by the kernels it launched).
fn close(o: Open, b: &mut Builder<'_>) {
    if let Some(m) = o.owns.filter(|_| o.gpu_ns > 0) {
        b.nodes[o.node as usize].flops += b.a.pricing.works[m as usize].flops;
    }
}

/// Builds the tree of the in-step records and kernels.
pub fn build(a: &PassRecord, kinfo: &KernelClasses) -> Built {
    let mut places = PlaceCache::default();
    // Each thread's in-step launches, (thread, start, kernel, phase).
    let mut launches: Vec<(u32, i64, u32, u16)> = Vec::new();
    let mut unlaunched: Vec<(u32, u16)> = Vec::new();
    for (k, span) in a.gpu.kernel_spans.iter().enumerate() {
        match span.launch() {
            Some(l) if a.ranges.in_step_cached(&mut places, l.start) => {
                let phase = a.ranges.cpu_phase_cached(&mut places, l.thread, l.start);
                launches.push((l.thread, l.start, k as u32, phase));
            }
            Some(_) => {}
            None if a.ranges.in_step_cached(&mut places, span.start) => {
                let device = a.gpu.queues.get(span.queue as usize).map_or(0, |q| q.0);
                unlaunched.push((k as u32, a.ranges.gpu_phase_by_time(device, span.start)));
            }
            None => {}
        }
    }
    launches.sort_unstable();
    let per_thread: Vec<(i64, u32, u16)> = launches.iter().map(|l| (l.1, l.2, l.3)).collect();
    let mut threads: HashMap<u32, (usize, usize)> = HashMap::default();
    for (i, l) in launches.iter().enumerate() {
        threads.entry(l.0).or_insert((i, i)).1 = i + 1;
    }
    drop(launches);

    let mut b = Builder {
        a,
        nodes: Vec::new(),
        child: HashMap::default(),
        roots: HashMap::default(),
        label_ids: HashMap::default(),
        labels: Vec::new(),
        kinfo,
        graph_call: HashMap::default(),
        forward: HashMap::default(),
        matches: match_replays(a),
        replayed: Default::default(),
        attributed_ns: 0,
    };
    let mut sweeps = Sweeps {
        by_thread: Vec::new(),
        launches: &per_thread,
        threads: &threads,
        places,
        window: a.span.filter(|_| !a.ranges.has_steps()),
        sorted: HashMap::default(),
        backward_bits: 0,
    };
    // The log knows which threads' records came in start order (the
    // longer first on a tie): those are swept as the log gives them, the
    // others sorted first (by where their records sit, not copies of
    // them). Threads with backward ops are swept last, once every forward
    // op has its node: read again from the log when they came in order.
    for (pos, r) in tree_records(a, u64::MAX) {
        sweeps.offer(pos, &r, false, &mut b);
    }
    let mut sorted: Vec<(bool, u32, Vec<Pending>)> = std::mem::take(&mut sweeps.sorted)
        .into_iter()
        .map(|(t, recs)| (a.cpu.thread_order(t).backward, t, recs))
        .collect();
    sorted.sort_unstable_by_key(|(backward, t, _)| (*backward, *t));
    // Threads out of order first, then those with backward ops: in order
    // from the log, then out of order.
    let backward_from = sorted.iter().position(|s| s.0).unwrap_or(sorted.len());
    let backward_sorted = sorted.split_off(backward_from);
    for (_, thread, recs) in sorted {
        sweeps.take_sorted(thread, recs, &mut b);
    }
    if sweeps.backward_bits != 0 {
        for (pos, r) in tree_records(a, sweeps.backward_bits) {
            sweeps.offer(pos, &r, true, &mut b);
        }
    }
    for (_, thread, recs) in backward_sorted {
        sweeps.take_sorted(thread, recs, &mut b);
    }
    // Every thread's sweep ends, threads that launched but recorded no op
    // included.
    for &thread in threads.keys() {
        sweeps.of(thread);
    }
    for s in sweeps.by_thread.iter_mut().flatten() {
        s.finish(&mut b);
    }
    for (k, phase) in unlaunched {
        let root = b.root(phase);
        b.kernel(root, k);
    }

    // Names, and the subtree sums (children come after their parent).
    let names = b
        .nodes
        .iter()
        .map(|n| match n.kind {
            NodeKind::Phase if n.key == UNPHASED as u32 => UNPHASED_NAME.to_string(),
            NodeKind::Phase => a.phases.name(n.key as u16).to_string(),
            NodeKind::Kernel => b.labels[n.key as usize].to_string(),
            _ => a.names.get(n.key).to_string(),
        })
        .collect();
    let graph_attributed_ns = b.attributed_ns;
    let mut nodes = b.nodes;
    for i in (0..nodes.len()).rev() {
        let n = nodes[i];
        if n.parent == ROOT {
            continue;
        }
        let p = &mut nodes[n.parent as usize];
        p.gpu_ns = p.gpu_ns.saturating_add(n.gpu_ns);
        p.kernels += n.kernels;
        p.flops += n.flops;
    }
    // A phase's CPU time: its top-level records'.
    for i in 0..nodes.len() {
        let n = nodes[i];
        if n.parent != ROOT && nodes[n.parent as usize].kind == NodeKind::Phase {
            let p = &mut nodes[n.parent as usize];
            p.cpu_ns = p.cpu_ns.saturating_add(n.cpu_ns);
        }
    }
    Built { nodes, names, short_frames: a.cpu.short_python, graph_attributed_ns }
}

/// The records the tree can nest in the blocks of `threads` (a union of
/// [`thread_bit`]s; `u64::MAX`: all), with where they sit, ops' durations
/// clipped as the pass clipped them.
fn tree_records(a: &PassRecord, threads: u64) -> impl Iterator<Item = (RecPos, CpuRec)> + '_ {
    a.cpu
        .iter_at(threads)
        .filter(|(_, r)| r.tree_kind().is_some())
        .map(move |(pos, r)| (pos, clip(a, r)))
}

/// An op's duration clipped as the pass clipped it.
fn clip(a: &PassRecord, mut r: CpuRec) -> CpuRec {
    let op = matches!(r.host_kind(), HostKind::Op | HostKind::Dataload);
    if let Some(w) = a.op_clip.filter(|&w| op && r.dur > w) {
        r.dur = w;
    }
    r
}

impl Built {
    /// The kernel time of CUDA/HIP graph replays.
    pub fn graph_ns(&self) -> i64 {
        let graphs = self.nodes.iter().filter(|n| n.kind == NodeKind::Graph);
        graphs.map(|n| n.gpu_ns).fold(0, i64::saturating_add)
    }

    /// Each node's CPU time in none of its children.
    fn self_ns(&self) -> Vec<i64> {
        let mut out: Vec<i64> = self.nodes.iter().map(|n| n.cpu_ns).collect();
        for n in &self.nodes {
            if n.parent != ROOT {
                let p = &mut out[n.parent as usize];
                *p = p.saturating_sub(n.cpu_ns);
            }
        }
        out.iter_mut().for_each(|v| *v = (*v).max(0));
        out
    }

    /// Per (phase, op name): the ops table's figures (a nested same-name
    /// op counted once), and the time inside ops.
    pub fn op_account(&self) -> OpAccount {
        let self_ns = self.self_ns();
        let mut out = OpAccount::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind != NodeKind::Op {
                continue;
            }
            let t = out.by_phase.entry((n.phase, n.key)).or_default();
            t.self_ns = t.self_ns.saturating_add(self_ns[i]);
            let (same, any) = self.ops_above(i);
            if !same {
                t.calls += n.calls;
                t.ns = t.ns.saturating_add(n.cpu_ns);
                t.gpu_ns = t.gpu_ns.saturating_add(n.gpu_ns);
            }
            if !any {
                let p = out.in_ops.entry(n.phase).or_insert(0);
                *p = p.saturating_add(n.cpu_ns);
            }
        }
        out
    }

    /// Whether an op of the same name, and whether any op, is above node i.
    fn ops_above(&self, i: usize) -> (bool, bool) {
        let n = &self.nodes[i];
        let (mut same, mut any) = (false, false);
        let mut p = n.parent;
        while p != ROOT {
            let up = &self.nodes[p as usize];
            if up.kind == NodeKind::Op {
                any = true;
                same |= up.key == n.key;
            }
            p = up.parent;
        }
        (same, any)
    }

    /// The tree per step, children costliest first (GPU, then CPU time).
    pub fn tree(&self, steps: f64) -> CallTree {
        let self_ns = self.self_ns();
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); self.nodes.len()];
        let mut roots: Vec<u32> = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            match node.parent {
                ROOT => roots.push(i as u32),
                p => children[p as usize].push(i as u32),
            }
        }
        let costly = |x: &u32, y: &u32| {
            let (a, b) = (&self.nodes[*x as usize], &self.nodes[*y as usize]);
            b.gpu_ns.cmp(&a.gpu_ns).then(b.cpu_ns.cmp(&a.cpu_ns)).then(x.cmp(y))
        };
        roots.sort_by(costly);
        let per = |ns: i64| round(ns as f64 / MS / steps, 4);
        let mut out = CallTree { short_frames_left_out: self.short_frames, ..CallTree::default() };
        // Depth-first: a node, then its children's subtrees.
        let mut todo: Vec<(u32, Option<u32>)> = roots.iter().rev().map(|r| (*r, None)).collect();
        while let Some((i, parent)) = todo.pop() {
            let at = out.nodes.len() as u32;
            let x = &self.nodes[i as usize];
            out.nodes.push(CallNode {
                parent,
                kind: x.kind,
                name: self.names[i as usize].clone(),
                calls_per_step: round(x.calls as f64 / steps, 3),
                cpu_ms_per_step: per(x.cpu_ns),
                cpu_self_ms_per_step: per(self_ns[i as usize]),
                gpu_ms_per_step: per(x.gpu_ns),
                kernels_per_step: round(x.kernels as f64 / steps, 3),
                gflop_per_step: (x.flops > 0.0).then(|| round(x.flops / 1e9 / steps, 4)),
            });
            let kids = &mut children[i as usize];
            kids.sort_by(costly);
            todo.extend(kids.iter().rev().map(|c| (*c, Some(at))));
        }
        out
    }
}
