//! Re-timing the step model under a change (docs/analysis.md §14): every
//! what-if is one pass over the nodes in dependency order.

use rustc_hash::FxHashMap as HashMap;

use super::host::{ByCause, HostCause};
use super::{BLOCKED_CALL, Bind, LAUNCH_GAP, Lane, NONE, NodeKind, StepModel};

/// A change to the step: durations and gaps scaled or removed.
#[derive(Debug, Clone)]
pub struct Change {
    /// Each GPU class's duration factor ([`super::COPY_CLASS`] and the
    /// kernel categories' indices).
    pub class_factor: [f64; super::CLASSES],
    /// A factor for chosen nodes (a name pattern's kernels, an op's
    /// kernels and launch calls), by node index.
    pub node_factor: Vec<(u32, f64)>,
    /// The share of each host cause's time taken out of the gaps between
    /// calls (1: all of it).
    pub host_removed: [f64; 5],
    /// Host time cut besides, per thread: merged intervals (an op's own
    /// time), of which `cut_keep` stays.
    pub host_cut: HashMap<u32, Vec<(i64, i64)>>,
    pub cut_keep: f64,
    /// Launch calls and the dispatch gaps between them (< 100 µs) × this.
    pub launch_factor: f64,
    /// Synchronising calls wait for the GPU (false: they return at once).
    pub sync_waits: bool,
    /// Inferred waits on other streams hold (false: dropped).
    pub dependencies: bool,
    /// Recorded waits on other streams hold (false: dropped, as if the
    /// streams did not wait for each other).
    pub recorded_waits: bool,
    /// Inferred waits of one host thread on another hold (false: the gap
    /// is the thread's own host time, as if it had waited for nothing).
    pub thread_waits: bool,
    /// Collective kernels joined to other ranks ([`super::job`]), by node:
    /// (the last rank's arrival, the transfer after it, ns). Such a kernel
    /// ends its transfer after its own start and that arrival.
    pub arrivals: HashMap<u32, (i64, i64)>,
}

impl Change {
    /// Whether it takes host time out (a cause's gaps, an op's own time,
    /// launch cost, sync or thread waits): what lets the host run ahead,
    /// into the next step where the window holds one.
    pub fn frees_host(&self) -> bool {
        self.host_removed.iter().any(|&r| r > 0.0)
            || !self.host_cut.is_empty()
            || self.launch_factor < 1.0
            || !self.sync_waits
            || !self.thread_waits
    }
}

impl Default for Change {
    /// No change: the trace's own times.
    fn default() -> Change {
        Change {
            class_factor: [1.0; super::CLASSES],
            node_factor: Vec::new(),
            host_removed: [0.0; 5],
            host_cut: HashMap::default(),
            cut_keep: 0.0,
            launch_factor: 1.0,
            sync_waits: true,
            dependencies: true,
            recorded_waits: true,
            thread_waits: true,
            arrivals: HashMap::default(),
        }
    }
}

/// The re-timed nodes.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    /// The window's new span: first step start to the last node's end.
    pub span: i64,
}

impl StepModel {
    /// Re-times every node under `change`.
    pub fn replay(&self, change: &Change) -> Replayed {
        // Every node starts at its trace times: one the order could not
        // place (clock skew) is read as it was.
        let mut start: Vec<i64> = self.nodes.iter().map(|n| n.start).collect();
        let mut end: Vec<i64> = self.nodes.iter().map(|n| n.end).collect();
        // A factor per node only when some node has one.
        let mut factor_of: Vec<f64> = Vec::new();
        if !change.node_factor.is_empty() {
            factor_of = vec![1.0; self.nodes.len()];
            for &(i, f) in &change.node_factor {
                if let Some(slot) = factor_of.get_mut(i as usize) {
                    *slot = f;
                }
            }
        }
        for &i in &self.order {
            let node = &self.nodes[i as usize];
            let s = match node.kind {
                NodeKind::Gpu => self.gpu_start(i, change, &end),
                _ => self.host_start(i, change, &end),
            };
            let e = match node.kind {
                NodeKind::Gpu => {
                    let by_node = factor_of.get(i as usize).copied().unwrap_or(1.0);
                    let class = usize::from(node.class).min(super::CLASSES - 1);
                    let f = change.class_factor[class] * by_node;
                    match change.arrivals.get(&i) {
                        Some(&(last, transfer)) => s.max(last) + scaled(transfer, f),
                        None => s + scaled(node.dur(), f),
                    }
                }
                NodeKind::Launch => {
                    let by_node = factor_of.get(i as usize).copied().unwrap_or(1.0);
                    // A launch that ran long loaded GPU code lazily: the
                    // idle account's cpu_op, not dispatch.
                    let own = if node.dur() >= BLOCKED_CALL {
                        1.0 - change.host_removed[HostCause::CpuOp as usize]
                    } else {
                        change.launch_factor
                    };
                    s + scaled(node.dur(), own * by_node)
                }
                NodeKind::Mark => s,
                NodeKind::Sync => {
                    let (base, ret) = self.sync_parts.get(&i).copied().unwrap_or((node.dur(), 0));
                    if node.cross != NONE && change.sync_waits {
                        (s + base).max(end[node.cross as usize] + ret)
                    } else {
                        s + base
                    }
                }
            };
            start[i as usize] = s;
            end[i as usize] = e;
        }
        let first = self.window.0;
        let last = end.iter().copied().max().unwrap_or(first).max(first);
        Replayed { start, end, span: last - first }
    }

    /// When host node `i` starts: its lane's previous node's new end plus
    /// the gap as the change leaves it; the first of its lane stays, but
    /// for a worker's first call handed work by the loop thread.
    pub(super) fn host_start(&self, i: u32, change: &Change, end: &[i64]) -> i64 {
        let node = &self.nodes[i as usize];
        let Lane::Thread(t) = self.lanes[node.lane as usize] else { return node.start };
        if node.wait != NONE && change.thread_waits {
            // It went on when another thread's call ended (with the
            // latency the trace shows); what it did after is its own.
            let (x, on) = (node.wait as usize, self.went_on(i));
            let after = node.start - on - self.removed_in(t, on, node.start, change, false);
            let from_other = end[x] + on - self.nodes[x].end + after;
            if node.prev == NONE {
                return from_other;
            }
            // Meanwhile it did its own work, which it still needs.
            let p = node.prev as usize;
            let a = self.nodes[p].end;
            let own = self.own_work_in(t, a, on).iter().sum::<i64>()
                - self.removed_in(t, a, on, change, true);
            return from_other.max(end[p] + own + after);
        }
        if node.prev == NONE {
            return node.start;
        }
        let p = node.prev as usize;
        let gap = node.start - self.nodes[p].end;
        end[p] + gap - self.removed_from_gap(i, change)
    }

    /// The host time `change` takes out of the gap before host node `i`.
    pub(super) fn removed_from_gap(&self, i: u32, change: &Change) -> i64 {
        let n = &self.nodes[i as usize];
        let Lane::Thread(t) = self.lanes[n.lane as usize] else { return 0 };
        if n.wait != NONE && change.thread_waits {
            // Waiting for another thread: only its own work, until it
            // went on; after, all of its time.
            let on = self.went_on(i);
            let before = self.gap(i).map_or(0, |(a, _)| self.removed_in(t, a, on, change, true));
            return before + self.removed_in(t, on, n.start, change, false);
        }
        self.gap(i).map_or(0, |(a, b)| self.removed_in(t, a, b, change, false))
    }

    /// The host time `change` takes out of `[a, b)` of `thread`'s time
    /// between two calls; `own_only`: of its own work only (ops, loading,
    /// allocation), the rest being a wait for another thread.
    fn removed_in(&self, thread: u32, a: i64, b: i64, change: &Change, own_only: bool) -> i64 {
        let causes = change.host_removed.iter().any(|&r| r > 0.0);
        let cuts = change.launch_factor != 1.0 || !change.host_cut.is_empty() || causes;
        if b <= a || !cuts {
            return 0;
        }
        let mut removed = 0.0;
        // Only the part inside the steps: the time between two steps is
        // no step's work (two windows joined can leave seconds there).
        let inside = self.in_steps_ns(a, b);
        if b - a < LAUNCH_GAP && !own_only {
            removed += inside as f64 * (1.0 - change.launch_factor);
        } else if causes {
            let by: ByCause = if own_only {
                self.own_work_in(thread, a, b)
            } else {
                self.split_in_steps(thread, a, b)
            };
            for c in HostCause::ALL {
                removed += by[c as usize] as f64 * change.host_removed[c as usize];
            }
        }
        if let Some(iv) = change.host_cut.get(&thread) {
            let mut covered = 0;
            for (a, b) in self.in_steps(a, b) {
                let first = iv.partition_point(|&(_, e)| e <= a);
                covered += iv[first..]
                    .iter()
                    .take_while(|&&(s, _)| s < b)
                    .map(|&(s, e)| e.min(b) - s.max(a))
                    .sum::<i64>();
            }
            removed += covered as f64 * (1.0 - change.cut_keep);
        }
        let cap = if own_only { self.own_work_in(thread, a, b).iter().sum() } else { inside };
        (removed.round() as i64).min(cap)
    }

    /// When GPU node `i` starts: the latest of what it waits for, each
    /// with its latency (the trace's for what bound it, the usual one,
    /// never more than the slack it had, for the rest).
    fn gpu_start(&self, i: u32, change: &Change, end: &[i64]) -> i64 {
        let node = &self.nodes[i as usize];
        let new_end = |j: u32| end[j as usize];
        let mut t: Option<i64> = None;
        let mut take = |v: i64| t = Some(t.map_or(v, |x| x.max(v)));
        if node.prev != NONE {
            let slack = node.start - self.nodes[node.prev as usize].end;
            let lat = if node.bind == Bind::Prev { slack } else { slack.min(0) };
            take(new_end(node.prev) + lat);
        }
        if node.cross != NONE {
            let l = node.cross;
            let call = &self.nodes[l as usize];
            let usual = self.usual[node.lane as usize].launch;
            let after_return = node.start - call.end;
            if call.kind == NodeKind::Launch && call.dur() >= BLOCKED_CALL && after_return >= 0 {
                // A launch that loaded GPU code lazily (placed before this
                // one): its work went when the call returned, so a call
                // the change shortens launches it that much sooner.
                let lat =
                    if node.bind == Bind::Launch { after_return } else { after_return.min(usual) };
                take(end[l as usize] + lat);
            } else {
                let slack = node.start - call.start;
                let lat = if node.bind == Bind::Launch { slack } else { slack.min(usual) };
                // The launch's start, from its lane's previous node (placed
                // before this one): a blocking call itself is placed after
                // the work it waits for.
                take(self.host_start(l, change, end) + lat);
            }
        }
        if node.wait != NONE && self.wait_holds(node, change) {
            let slack = node.start - self.nodes[node.wait as usize].end;
            let lat = if node.bind == Bind::Wait { slack } else { slack.min(0) };
            take(new_end(node.wait) + lat);
        }
        if let Some(also) = self.also_waits.get(&i).filter(|_| change.recorded_waits) {
            for &j in also {
                take(new_end(j) + (node.start - self.nodes[j as usize].end).min(0));
            }
        }
        t.unwrap_or(node.start)
    }

    /// Whether GPU node `n`'s wait on another stream holds under `change`.
    pub(super) fn wait_holds(&self, n: &super::Node, change: &Change) -> bool {
        if n.recorded { change.recorded_waits } else { change.dependencies }
    }
}

/// `dur` × `f`, rounded to the ns.
fn scaled(dur: i64, f: f64) -> i64 {
    if f == 1.0 { dur } else { (dur as f64 * f).round() as i64 }
}
