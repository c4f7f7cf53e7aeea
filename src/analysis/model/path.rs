//! The critical path of the window (docs/analysis.md §14): from the end of
//! the last work back to the first step's start, each node handing over to
//! what bound it in the trace. Its parts cover that span exactly once, so
//! they sum to it.

use super::host::HostCause;
use super::{BLOCKED_CALL, Bind, LAUNCH_GAP, Lane, NONE, NodeKind, StepModel};

/// A collective's kernel that waited less than this for another rank's
/// arrival arrived with it, within the clocks' and launches' noise: the
/// path stays on its own rank there (ns).
const CROSS_WAIT: i64 = 20_000;

/// What a stretch of the critical path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathPart {
    /// GPU work of one class ([`super::COPY_CLASS`] or a category index).
    Gpu(u8),
    /// From a launch call's start to the GPU work it launched starting:
    /// the call and the driver's latency.
    Launch,
    /// Host work between calls, by cause.
    Host(HostCause),
    /// Dispatch: gaps under 100 µs between a thread's calls, and launch
    /// calls on the host's own chain.
    Dispatch,
    /// A synchronising call's own time and its return after the GPU.
    Sync,
    /// A GPU start waiting for another stream's work (inferred).
    Dependency,
    /// A host thread waiting for another thread's call to end (inferred:
    /// the loop thread in `backward()` while the autograd engine launches).
    ThreadWait,
    /// Between consecutive work on one stream.
    StreamGap,
    /// Host time outside every step (between two steps): no step's work.
    BetweenSteps,
}

/// The critical path, summed by part.
#[derive(Debug, Clone, Default)]
pub struct CriticalPath {
    /// ns per part, largest first.
    pub parts: Vec<(PathPart, i64)>,
    /// The span it covers: first step start to the last work's end.
    pub span: i64,
    /// Nodes on it.
    pub nodes: Vec<u32>,
    /// Its stretches in time order: (start, end, part), tiling the span.
    pub segments: Vec<(i64, i64, PathPart)>,
}

/// Where the walk stands on a node.
#[derive(Clone, Copy)]
pub(super) enum At {
    Start(u32),
    End(u32),
}

impl StepModel {
    /// The critical path of the trace's own times.
    pub fn critical_path(&self) -> CriticalPath {
        match self.last_node() {
            Some(last) => self.path_from(At::End(last), &|_| None).0,
            None => CriticalPath::default(),
        }
    }

    /// The node that ends last; at a tie, the GPU's (it is what the host
    /// waits on).
    pub(super) fn last_node(&self) -> Option<u32> {
        (0..self.nodes.len() as u32).max_by_key(|&i| {
            let n = &self.nodes[i as usize];
            (n.end, n.kind == NodeKind::Gpu, std::cmp::Reverse(i))
        })
    }

    /// The path from `from` back to the window's start, or to the first
    /// GPU node that `cross` says began [`CROSS_WAIT`] or more before
    /// another rank arrived (a
    /// collective's kernel: [`super::job`]): the stretch from that arrival
    /// to its end is on the path, and the walk stops there, returning it.
    pub(super) fn path_from(
        &self,
        from: At,
        cross: &dyn Fn(u32) -> Option<i64>,
    ) -> (CriticalPath, Option<u32>) {
        let w0 = self.window.0;
        let mut crossed = None;
        let mut sums: std::collections::BTreeMap<PathPart, i64> = Default::default();
        let mut segments = Vec::new();
        let mut add = |p: PathPart, a: i64, b: i64| {
            let d = b - a.max(w0);
            if d > 0 {
                *sums.entry(p).or_default() += d;
                segments.push((a.max(w0), b, p));
            }
        };
        let mut nodes = Vec::new();
        let mut at = from;
        // Each step moves back in time or to a node's other end: bounded.
        for _ in 0..self.nodes.len() * 3 + 3 {
            match at {
                At::End(i) => {
                    let n = self.nodes[i as usize];
                    nodes.push(i);
                    match n.kind {
                        NodeKind::Gpu => match cross(i).filter(|&l| l - n.start > CROSS_WAIT) {
                            Some(l) => {
                                add(PathPart::Gpu(n.class), l, n.end);
                                crossed = Some(i);
                                break;
                            }
                            None => add(PathPart::Gpu(n.class), n.start, n.end),
                        },
                        // A launch that ran long loaded GPU code lazily (§12: cpu_op).
                        NodeKind::Launch if n.dur() >= BLOCKED_CALL => {
                            add(PathPart::Host(HostCause::CpuOp), n.start, n.end)
                        }
                        NodeKind::Launch => add(PathPart::Dispatch, n.start, n.end),
                        NodeKind::Mark => {}
                        NodeKind::Sync if n.bind == Bind::Wait => {
                            let w = self.nodes[n.cross as usize];
                            add(PathPart::Sync, w.end, n.end);
                            at = At::End(n.cross);
                            if w.end <= w0 {
                                break;
                            }
                            continue;
                        }
                        NodeKind::Sync => add(PathPart::Sync, n.start, n.end),
                    }
                    if n.start <= w0 {
                        break;
                    }
                    at = At::Start(i);
                }
                At::Start(i) => {
                    let n = self.nodes[i as usize];
                    let next = match (n.kind, n.bind) {
                        (NodeKind::Gpu, Bind::Prev) => {
                            add(PathPart::StreamGap, self.nodes[n.prev as usize].end, n.start);
                            At::End(n.prev)
                        }
                        (NodeKind::Gpu, Bind::Launch) => {
                            add(PathPart::Launch, self.nodes[n.cross as usize].start, n.start);
                            At::Start(n.cross)
                        }
                        (NodeKind::Gpu, Bind::Wait) => {
                            add(PathPart::Dependency, self.nodes[n.wait as usize].end, n.start);
                            At::End(n.wait)
                        }
                        // A window without step markers begins before its
                        // closing thread's first record: nothing recorded
                        // there explains the time.
                        (NodeKind::Mark, Bind::Free) => {
                            add(PathPart::Host(HostCause::Other), w0, n.start);
                            break;
                        }
                        // (a worker's first call too: it waits for the
                        // loop thread that handed it work)
                        _ if n.wait != NONE => {
                            // Waiting until the thread went on; its own
                            // time after that.
                            let on = self.went_on(i);
                            add(PathPart::ThreadWait, self.nodes[n.wait as usize].end, on);
                            self.host_gap(n.lane, on, n.start, &mut add);
                            At::End(n.wait)
                        }
                        (_, Bind::Free) => {
                            self.host_before(n.lane, w0, n.start, &mut add);
                            break;
                        }
                        _ if n.prev == NONE => {
                            self.host_before(n.lane, w0, n.start, &mut add);
                            break;
                        }
                        _ => {
                            let p = self.nodes[n.prev as usize];
                            self.host_gap(n.lane, p.end, n.start, &mut add);
                            At::End(n.prev)
                        }
                    };
                    let t = match next {
                        At::Start(j) => self.nodes[j as usize].start,
                        At::End(j) => self.nodes[j as usize].end,
                    };
                    if t <= w0 {
                        // What remains before the window is not the step's.
                        if let At::End(j) = next {
                            nodes.push(j);
                        }
                        break;
                    }
                    at = next;
                }
            }
        }
        let mut parts: Vec<(PathPart, i64)> = sums.into_iter().collect();
        parts.sort_by_key(|&(p, ns)| (std::cmp::Reverse(ns), p));
        segments.sort_by_key(|s| (s.0, s.1));
        (CriticalPath { parts, span: self.end() - w0, nodes, segments }, crossed)
    }

    /// A gap between two calls of a host lane, by cause (short ones are
    /// dispatch).
    fn host_gap(&self, lane: u32, a: i64, b: i64, add: &mut impl FnMut(PathPart, i64, i64)) {
        if b <= a {
            return;
        }
        if b - a < LAUNCH_GAP {
            let inside = self.in_steps_ns(a, b);
            add(PathPart::Dispatch, a, a + inside);
            return add(PathPart::BetweenSteps, a + inside, b);
        }
        self.host_before(lane, a, b, add);
    }

    /// `[a, b)` of a lane's host time by cause, clipped to the window.
    fn host_before(&self, lane: u32, a: i64, b: i64, add: &mut impl FnMut(PathPart, i64, i64)) {
        let a = a.max(self.window.0);
        if b <= a {
            return;
        }
        let by = match self.lanes[lane as usize] {
            Lane::Thread(t) => self.split_in_steps(t, a, b),
            // Before a GPU lane's first work: nothing recorded explains it.
            Lane::Stream { .. } => [0, 0, 0, 0, self.in_steps_ns(a, b)],
        };
        // Laid end to end from `a`: only their lengths matter.
        let mut at = a;
        for c in HostCause::ALL {
            let d = by[c as usize];
            if d > 0 {
                add(PathPart::Host(c), at, at + d);
                at += d;
            }
        }
        add(PathPart::BetweenSteps, at, b);
    }
}
