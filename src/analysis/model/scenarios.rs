//! The what-ifs of the step model (docs/analysis.md §14): each a [`Change`]
//! with what it touches, replayed on the model. The standard set is what
//! `what-if --all` ranks and the profile keeps.

use super::host::HostCause;
use super::replay::Change;
use super::{COPY_CLASS, LAUNCH_GAP, Lane, NONE, NodeKind, StepModel};
use crate::profile::{Category, IdleCause};

/// A named change and the work it takes away in the trace (ns over the
/// window): no re-timing can save more than that.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The `what-if` flags that ask for it.
    pub flags: String,
    /// What it does, for people.
    pub what: String,
    pub change: Change,
    pub removes_ns: i64,
}

/// A scenario's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: Scenario,
    /// The window's span saved (ns over the window; never negative).
    pub saved_ns: i64,
}

/// The name of a GPU class.
pub fn class_name(class: u8) -> String {
    if class == COPY_CLASS {
        return "memcpy / memset".into();
    }
    Category::ALL.get(usize::from(class)).unwrap_or(&Category::Other).as_str().to_string()
}

impl StepModel {
    /// The window's span saved by `change` (ns).
    pub fn saving(&self, change: &Change) -> i64 {
        let now = self.end() - self.window.0;
        (now - self.replay(change).span).max(0)
    }

    /// GPU time per class in the model (ns).
    pub fn class_time(&self) -> [i64; 8] {
        let mut t = [0i64; 8];
        for n in &self.nodes {
            if n.kind == NodeKind::Gpu {
                t[usize::from(n.class).min(7)] += n.dur();
            }
        }
        t
    }

    /// Every host gap between calls, split: short ones as dispatch, the
    /// rest by cause. (dispatch, by cause) in ns.
    pub fn host_time(&self) -> (i64, [i64; 5]) {
        let mut dispatch = 0;
        let mut by = [0i64; 5];
        for i in 0..self.nodes.len() as u32 {
            let Some((a, b)) = self.gap(i) else { continue };
            if b <= a {
                continue;
            }
            if b - a < LAUNCH_GAP {
                dispatch += b - a;
                continue;
            }
            if let Lane::Thread(t) = self.lanes[self.nodes[i as usize].lane as usize] {
                let s = self.host.split(t, a, b);
                for k in 0..5 {
                    by[k] += s[k];
                }
            }
        }
        (dispatch, by)
    }

    /// Time syncs spent waiting on the GPU, and launch calls' own time.
    fn waits_and_calls(&self) -> (i64, i64) {
        let (mut waits, mut calls) = (0, 0);
        for (i, n) in self.nodes.iter().enumerate() {
            match n.kind {
                NodeKind::Sync if n.cross != NONE => {
                    let base = self.sync_parts.get(&(i as u32)).map_or(n.dur(), |b| b.0);
                    waits += n.dur() - base;
                }
                NodeKind::Launch => calls += n.dur(),
                _ => {}
            }
        }
        (waits, calls)
    }

    /// The standard scenarios, those that touch any time: each GPU class
    /// removed (communication: fully overlapped), each host cause of
    /// the gaps removed, syncs that do not wait, no launch overhead,
    /// inferred cross-stream waits dropped; and `at_roofline`'s
    /// categories at their roofline (category index, its factor).
    pub fn standard(&self, at_roofline: &[(u8, f64)]) -> Vec<Scenario> {
        let mut out = Vec::new();
        let classes = self.class_time();
        for (class, &ns) in classes.iter().enumerate() {
            if ns <= 0 {
                continue;
            }
            let mut change = Change::default();
            change.class_factor[class] = 0.0;
            let name = class_name(class as u8);
            let what = if class == 0 {
                "communication fully overlapped with compute".to_string()
            } else {
                format!("no '{name}' GPU work")
            };
            let flag = if class == usize::from(COPY_CLASS) { "memcpy" } else { &name };
            out.push(Scenario {
                flags: format!("--remove-category '{flag}'"),
                what,
                change,
                removes_ns: ns,
            });
        }
        let (dispatch, by) = self.host_time();
        for c in HostCause::ALL {
            let ns = by[c as usize];
            if ns <= 0 {
                continue;
            }
            let mut change = Change::default();
            change.host_removed[c as usize] = 1.0;
            let cause = c.idle_cause();
            out.push(Scenario {
                flags: format!("--remove-idle {cause}"),
                what: format!("no host time of cause {cause} ({})", cause.meaning()),
                change,
                removes_ns: ns,
            });
        }
        let (waits, calls) = self.waits_and_calls();
        if waits > 0 {
            out.push(Scenario {
                flags: format!("--remove-idle {}", IdleCause::Sync),
                what: "synchronising calls that do not wait for the GPU".into(),
                change: Change { sync_waits: false, ..Change::default() },
                removes_ns: waits,
            });
        }
        if dispatch + calls > 0 {
            out.push(Scenario {
                flags: format!("--remove-idle {}", IdleCause::Launch),
                what: "no host launch overhead (launch calls and the dispatch between them): what CUDA graphs aim at".into(),
                change: Change { launch_factor: 0.0, ..Change::default() },
                removes_ns: dispatch + calls,
            });
        }
        if self.inferred_waits > 0 {
            out.push(Scenario {
                flags: format!("--remove-idle {}", IdleCause::Dependency),
                what: "no waits on other streams (inferred from the times)".into(),
                change: Change { dependencies: false, ..Change::default() },
                removes_ns: self.held_back(),
            });
        }
        for &(class, f) in at_roofline {
            let ns = classes.get(usize::from(class)).copied().unwrap_or(0);
            if ns <= 0 || !(0.0..1.0).contains(&f) {
                continue;
            }
            let mut change = Change::default();
            change.class_factor[usize::from(class)] = f;
            let name = class_name(class);
            out.push(Scenario {
                flags: format!("--at-roofline '{name}'"),
                what: format!("'{name}' kernels at their roofline"),
                change,
                removes_ns: (ns as f64 * (1.0 - f)).round() as i64,
            });
        }
        out
    }

    /// How long the work that waited on other streams was held back past
    /// its launch and its stream: what dropping those waits can save at
    /// most.
    fn held_back(&self) -> i64 {
        let held: i64 = self
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Gpu && n.wait != NONE)
            .map(|n| {
                let other = [n.prev, n.cross]
                    .iter()
                    .filter(|&&j| j != NONE)
                    .map(|&j| {
                        let m = &self.nodes[j as usize];
                        if m.kind == NodeKind::Gpu { m.end } else { m.start }
                    })
                    .max()
                    .unwrap_or(self.window.0);
                (n.start - other).max(0)
            })
            .sum();
        held.min(self.end() - self.window.0)
    }

    /// Every scenario replayed, largest saving first.
    pub fn outcomes(&self, scenarios: Vec<Scenario>) -> Vec<Outcome> {
        let mut out: Vec<Outcome> = scenarios
            .into_iter()
            .map(|s| Outcome { saved_ns: self.saving(&s.change), scenario: s })
            .collect();
        out.sort_by(|a, b| {
            b.saved_ns.cmp(&a.saved_ns).then_with(|| a.scenario.flags.cmp(&b.scenario.flags))
        });
        out
    }
}
