//! The what-ifs of the step model (docs/analysis.md §14): each a [`Change`]
//! with what it touches, replayed on the model. The standard set is what
//! `what-if --all` ranks and the profile keeps.

use super::host::HostCause;
use super::replay::{Change, Replayed};
use super::{CLASSES, COPY_CLASS, LAUNCH_GAP, Lane, NONE, NodeKind, StepModel};
use crate::profile::{Achieved, Category, IdleCause};

/// A named change and the work it takes away in the trace (ns over the
/// window, [`StepModel::removed_by`]): no re-timing can save more.
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
    /// Where the model inferred waits: the saving with none of them, the
    /// bound beside it ([`StepModel::saved_without_inferred`]).
    pub without_inferred_ns: Option<i64>,
}

/// The name of a GPU class.
pub fn class_name(class: u8) -> String {
    if class == COPY_CLASS {
        return "memcpy / memset".into();
    }
    Category::ALL.get(usize::from(class)).unwrap_or(&Category::Other).as_str().to_string()
}

/// How `what-if` names a GPU class: its category, `memcpy` for copies.
pub fn class_flag(class: u8) -> String {
    if class == COPY_CLASS { "memcpy".into() } else { class_name(class) }
}

/// What removing a GPU class does.
pub fn describe_class(class: u8) -> String {
    if class == 0 {
        "communication fully overlapped with compute".into()
    } else {
        format!("no '{}' GPU work", class_name(class))
    }
}

/// A category at its roofline: its kernel time (`total_ms`) shortened by
/// what its priced work loses against the roofline (§13), as a factor of
/// that time, and the share of the time that is priced (%), which the
/// factor rests on.
pub fn roofline_factor(achieved: &Achieved, total_ms: f64) -> Option<AtRoofline> {
    let lost = achieved.lost_ms_per_step?;
    (total_ms > 0.0).then(|| AtRoofline {
        factor: ((total_ms - lost) / total_ms).clamp(0.0, 1.0),
        priced_pct: (achieved.modelled_ms_per_step.unwrap_or(total_ms) / total_ms * 100.0)
            .min(100.0),
    })
}

/// A category's time at its roofline ([`roofline_factor`]).
#[derive(Debug, Clone, Copy)]
pub struct AtRoofline {
    pub factor: f64,
    pub priced_pct: f64,
}

/// What a class at its roofline means: an upper bound where all of its
/// time is priced; where part is, what is not priced keeps its time, so
/// the figure is a floor for the class (a GEMM whose shapes the trace
/// does not record cannot be priced).
pub fn describe_roofline(class: u8, priced_pct: f64) -> String {
    let name = class_name(class);
    if priced_pct >= 99.95 {
        return format!(
            "'{name}' kernels at their roofline (an upper bound: no kernel reaches it)"
        );
    }
    format!(
        "'{name}' kernels at their roofline: the priced {} of their time (an upper bound for it; the rest, unpriced, keeps its time)",
        pct_label(priced_pct)
    )
}

/// A share of priced time, to one decimal (two under 1%), never rounded to
/// 0 or 100.
fn pct_label(pct: f64) -> String {
    let s = if pct < 1.0 { format!("{pct:.2}") } else { format!("{pct:.1}") };
    match s.as_str() {
        "0.00" => "<0.01%".into(),
        "100.0" => ">99.9%".into(),
        _ => format!("{s}%"),
    }
}

/// What setting an idle cause to zero does.
pub fn describe_idle(cause: IdleCause) -> String {
    match cause {
        IdleCause::Sync => "synchronising calls that do not wait for the GPU".into(),
        IdleCause::Launch => "no host launch overhead (launch calls and the dispatch between them): what CUDA graphs aim at".into(),
        IdleCause::Dependency => "no waits on other streams (inferred from the times)".into(),
        c => format!("no host time of cause {c} ({})", c.meaning()),
    }
}

/// Where a model's waits on other streams come from, by how many it
/// took from the trace's records and how many it inferred.
pub fn waits_from(recorded: u64, inferred: u64) -> &'static str {
    match (recorded > 0, inferred > 0) {
        (true, false) => "recorded by the trace",
        (true, true) => "recorded by the trace, and inferred from the times elsewhere",
        _ => "inferred from the times",
    }
}

impl StepModel {
    /// What setting an idle cause to zero does, saying where this model's
    /// waits on other streams come from.
    pub fn describe_idle(&self, cause: IdleCause) -> String {
        match cause {
            IdleCause::Dependency => format!("no waits on other streams ({})", self.waits_from()),
            c => describe_idle(c),
        }
    }

    /// Where the waits on other streams come from.
    pub fn waits_from(&self) -> &'static str {
        waits_from(self.recorded_waits as u64, self.inferred_waits as u64)
    }

    /// What `change` saves (ns, [`StepModel::saved_by`]).
    pub fn saving(&self, change: &Change) -> i64 {
        self.saved_by(&self.replay(change))
    }

    /// What a re-timing saves (ns): how much earlier the window closes.
    pub fn saved_by(&self, r: &Replayed) -> i64 {
        saved_between(self.closes(None), self.closes(Some(r)))
    }

    /// Where the window closes, in the trace (`None`) or re-timed: (its
    /// last step's end marker, the end of its last work). Where the trace
    /// marks its steps, a change saves what moves both: GPU work running
    /// past the last marker (an asynchronous inference's tail) is no
    /// step's, so taking it away saves nothing and a saving never exceeds
    /// the steps; a host that ends its step sooner while the GPU still
    /// runs saves only what the GPU's end moves.
    fn closes(&self, r: Option<&Replayed>) -> (i64, i64) {
        let end = r.map_or_else(|| self.end(), |r| self.window.0 + r.span);
        let mark = match (self.last_mark, r) {
            (Some(m), Some(r)) => r.end[m as usize],
            (Some(m), None) => self.nodes[m as usize].end,
            (None, _) => end,
        };
        (mark, end)
    }

    /// GPU time per class in the model (ns).
    pub fn class_time(&self) -> [i64; CLASSES] {
        let mut t = [0i64; CLASSES];
        for n in &self.nodes {
            if n.kind == NodeKind::Gpu {
                t[usize::from(n.class).min(CLASSES - 1)] += n.dur();
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

    /// The work `change` takes away in the trace (ns over the window):
    /// the durations it shortens, the host gaps it cuts, the waits it
    /// drops — no re-timing can save more than that.
    pub fn removed_by(&self, change: &Change, replayed: &Replayed) -> i64 {
        let mut ns = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            // A sync's wait shrinks with the work it waits for: only a
            // change that drops the wait itself takes it away.
            if n.kind != NodeKind::Sync || !change.sync_waits {
                let now = replayed.end[i] - replayed.start[i];
                ns += (n.dur() - now).max(0);
            }
            if n.kind != NodeKind::Gpu {
                ns += self.removed_from_gap(i as u32, change);
            } else if n.wait != NONE && !self.wait_holds(n, change) {
                ns += self.held_back(n);
            }
        }
        ns
    }

    /// How long GPU work that waited on another stream was held back past
    /// its launch and its stream.
    fn held_back(&self, n: &super::Node) -> i64 {
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
    }

    /// The standard scenarios, those that touch any time: each GPU class
    /// removed (communication: fully overlapped), each host cause of
    /// the gaps removed, syncs that do not wait, no launch overhead,
    /// inferred cross-stream waits dropped; and `at_roofline`'s
    /// categories at their roofline (category index, its factor).
    pub fn standard(&self, at_roofline: &[(u8, AtRoofline)]) -> Vec<Scenario> {
        let mut out = Vec::new();
        let classes = self.class_time();
        for (class, &ns) in classes.iter().enumerate() {
            if ns <= 0 {
                continue;
            }
            let mut change = Change::default();
            change.class_factor[class] = 0.0;
            let class = class as u8;
            out.push(Scenario {
                flags: format!("--remove-category '{}'", class_flag(class)),
                what: describe_class(class),
                change,
                removes_ns: 0,
            });
        }
        let (dispatch, mut by) = self.host_time();
        let (mut calls, mut lazy) = (0, 0);
        for n in self.nodes.iter().filter(|n| n.kind == NodeKind::Launch) {
            if n.dur() >= super::BLOCKED_CALL { lazy += n.dur() } else { calls += n.dur() }
        }
        by[HostCause::CpuOp as usize] += lazy;
        let waits = self.nodes.iter().any(|n| n.kind == NodeKind::Sync && n.cross != NONE);
        for cause in IdleCause::ALL {
            let change = match cause {
                IdleCause::Sync if waits => Change { sync_waits: false, ..Change::default() },
                IdleCause::Launch if dispatch + calls > 0 => {
                    Change { launch_factor: 0.0, ..Change::default() }
                }
                IdleCause::Dependency if self.inferred_waits + self.recorded_waits > 0 => {
                    Change { dependencies: false, recorded_waits: false, ..Change::default() }
                }
                other => match HostCause::of_idle(other).filter(|c| by[*c as usize] > 0) {
                    Some(c) => {
                        let mut change = Change::default();
                        change.host_removed[c as usize] = 1.0;
                        change
                    }
                    None => continue,
                },
            };
            out.push(Scenario {
                flags: format!("--remove-idle {cause}"),
                what: self.describe_idle(cause),
                change,
                removes_ns: 0,
            });
        }
        for &(class, at) in at_roofline {
            let ns = classes.get(usize::from(class)).copied().unwrap_or(0);
            if ns <= 0 || !(0.0..1.0).contains(&at.factor) {
                continue;
            }
            let mut change = Change::default();
            change.class_factor[usize::from(class)] = at.factor;
            out.push(Scenario {
                flags: format!("--at-roofline '{}'", class_flag(class)),
                what: describe_roofline(class, at.priced_pct),
                change,
                removes_ns: 0,
            });
        }
        out
    }

    /// The GPU work whose name `hit` matches kept at `factor` of its time
    /// (0: removed), as `what-if --grep PATTERN [--scale F]` asks (`flags`
    /// says so); None when nothing matches.
    pub fn kernels_scaled(
        &self,
        flags: String,
        what: String,
        hit: impl Fn(&str) -> bool,
        factor: f64,
    ) -> Option<Scenario> {
        let hits: Vec<bool> = self.names.iter().map(|n| hit(n)).collect();
        let node_factor: Vec<(u32, f64)> = (0..self.nodes.len() as u32)
            .filter(|&i| {
                let n = &self.nodes[i as usize];
                n.kind == NodeKind::Gpu && hits.get(n.name as usize).copied().unwrap_or(false)
            })
            .map(|i| (i, factor))
            .collect();
        (!node_factor.is_empty()).then(|| Scenario {
            flags,
            what,
            change: Change { node_factor, ..Change::default() },
            removes_ns: 0,
        })
    }

    /// What taking away every piece of GPU work (kernels and copies) would
    /// save over the window (ns): how much of the step the GPU paces. The
    /// host's own path stays, so a host that issues work no faster than
    /// the GPU runs it leaves little to save.
    pub fn saved_without_gpu_work(&self) -> i64 {
        let change = Change { class_factor: [0.0; CLASSES], ..Change::default() };
        self.saving(&change)
    }

    /// Where the window closes without the waits on other streams the
    /// model inferred from the times, where it inferred any: the base that
    /// [`StepModel::saved_without_inferred`] measures from. A thread's
    /// wait on another stays: without it, the waiting thread's idle time
    /// would count as its own work (the autograd thread's between two
    /// backward passes), which no change could shorten.
    pub fn close_without_inferred(&self) -> Option<(i64, i64)> {
        (self.inferred_waits > 0).then(|| {
            let r = self.replay(&Change { dependencies: false, ..Change::default() });
            self.closes(Some(&r))
        })
    }

    /// What `change` saves with none of the inferred stream waits (ns;
    /// `base`: [`StepModel::close_without_inferred`]): the inference may be
    /// wrong either way, so the two savings bound what it decides.
    pub fn saved_without_inferred(&self, change: &Change, base: (i64, i64)) -> i64 {
        let plain = Change { dependencies: false, ..change.clone() };
        saved_between(base, self.closes(Some(&self.replay(&plain))))
    }

    /// Every scenario replayed, largest saving first.
    pub fn outcomes(&self, scenarios: Vec<Scenario>) -> Vec<Outcome> {
        let base = self.close_without_inferred();
        let mut out: Vec<Outcome> = scenarios
            .into_iter()
            .map(|mut s| {
                let r = self.replay(&s.change);
                s.removes_ns = self.removed_by(&s.change, &r);
                let saved_ns = self.saved_by(&r);
                let without_inferred_ns = base.map(|b| self.saved_without_inferred(&s.change, b));
                Outcome { saved_ns, without_inferred_ns, scenario: s }
            })
            .collect();
        out.sort_by(|a, b| {
            b.saved_ns.cmp(&a.saved_ns).then_with(|| a.scenario.flags.cmp(&b.scenario.flags))
        });
        out
    }
}

/// What moving the window's close from `now` to `new` saves: the lesser
/// move of its marker and of its work's end ([`StepModel::closes`]).
fn saved_between(now: (i64, i64), new: (i64, i64)) -> i64 {
    (now.0 - new.0).min(now.1 - new.1).max(0)
}
