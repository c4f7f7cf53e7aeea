//! `profile what-if`: the payoff of a change before making it (docs/spec.md
//! §4), re-timed on the step model (docs/analysis.md §14). A trace's model
//! answers any change; a profile keeps the standard ones, which answer
//! `--all` and those same changes without the trace.

use regex::Regex;
use rustc_hash::FxHashMap as HashMap;
use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::model::host::HostCause;
use crate::analysis::model::job::{JobModel, JobReplayed};
use crate::analysis::model::scenarios::{
    self, AtRoofline, class_flag, class_name, describe_class, describe_roofline, waits_from,
};
use crate::analysis::model::{CLASSES, Change, NodeKind, StepModel};
use crate::error::{Error, Result};
use crate::profile::{IdleCause, PathShare, PathSpan, Profile, ScenarioRow, StepModelView};
use crate::util::round;

/// What to change. Several changes are one change: their factors multiply.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Request {
    /// A kernel category (case-insensitive substring), or `memcpy`.
    pub remove_category: Option<String>,
    /// Kernels whose name matches.
    pub grep: Option<String>,
    /// CPU ops whose name matches: their host time, launch calls and the
    /// GPU work they launched.
    pub op: Option<String>,
    /// What the chosen work keeps of its time (0: removed; 0.5: twice as
    /// fast).
    pub scale: Option<f64>,
    /// Launch calls per step taken away (fusion): kernel launches and
    /// memcpy/memset calls alike, their calls and the dispatch around them.
    pub remove_launches: Option<u64>,
    /// One idle cause set to zero (docs/analysis.md §12).
    pub remove_idle: Option<IdleCause>,
    /// A category's priced kernels at their roofline (docs/analysis.md §13).
    pub at_roofline: Option<String>,
    /// Each chain of memory-bound kernels between matrix kernels fused
    /// into one kernel (docs/analysis.md §16).
    pub fuse_chains: bool,
}

impl Request {
    fn is_empty(&self) -> bool {
        self.remove_category.is_none()
            && self.grep.is_none()
            && self.op.is_none()
            && self.remove_launches.is_none()
            && self.remove_idle.is_none()
            && self.at_roofline.is_none()
            && !self.fuse_chains
    }
}

/// Where the projection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// The trace's step model, re-timed now.
    StepModel,
    /// The standard what-if the profile keeps (re-timed when it was made).
    Stored,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct NowProjected {
    pub now: Option<f64>,
    pub projected: Option<f64>,
}

/// One what-if's answer.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct WhatIf {
    pub trace: Option<String>,
    /// The change, as the flags that ask for it.
    pub scenario: String,
    /// What it does, for people.
    pub what: String,
    pub model: Model,
    /// The work it takes away and the step time it saves, per step.
    pub removes_ms_per_step: f64,
    pub saved_ms_per_step: f64,
    /// Where the model inferred waits on other streams: the saving with
    /// none of them, as a bound beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_without_inferred_ms: Option<f64>,
    pub step_ms: NowProjected,
    pub img_per_s: NowProjected,
    pub change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub caveat: String,
}

/// `what-if --all`: the standard changes, largest saving first.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct WhatIfAll {
    pub trace: Option<String>,
    pub step_ms: f64,
    pub steps_modelled: u64,
    /// What `critical_path` covers per step: the steps, the time between
    /// them, and GPU work past the last one's end.
    #[serde(flatten)]
    pub span: PathSpan,
    pub scenarios: Vec<ScenarioRow>,
    pub critical_path: Vec<PathShare>,
    /// Of a job: the critical path through its ranks joined at their
    /// collectives, latest leg first (docs/analysis.md §14).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<crate::lens::job::PathLeg>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub caveat: String,
}

/// Said of every projection: how it was made, and where the model's
/// waits on other streams come from.
pub fn caveat(p: &Profile) -> String {
    let (recorded, inferred) =
        p.step_model.as_ref().map_or((0, 0), |m| (m.recorded_waits, m.inferred_waits));
    format!(
        "re-timed on the step model (docs/analysis.md §14): each piece of work keeps the dependencies and latencies the trace shows, the rest of the work as it was; waits on other streams are {}; only a second measurement proves the change",
        waits_from(recorded, inferred)
    )
}

/// Said when a run without GPU work is asked for a standard what-if.
const NO_GPU_WORK: &str = "no GPU work in this run: the standard what-ifs re-time GPU work; re-time the host's ops instead with `what-if --op REGEX` (e.g. --op 'batch_norm'), given the trace";

/// Said when a profile has no step model.
const NO_MODEL: &str = "this profile has no step model (a CPU run, or a profile written before it): give the trace itself, or a profile whose trace lies beside it";

/// The standard what-ifs of a profile, largest saving first.
pub fn all(p: &Profile) -> Result<WhatIfAll> {
    // A CPU run's trace is modelled too, but its standard what-ifs would
    // all re-time GPU work it does not have.
    if p.step_model.is_none() && p.kernels.is_empty() && p.figures.kernels_per_step == 0.0 {
        return Err(Error::usage(NO_GPU_WORK));
    }
    let m = view(p)?;
    Ok(WhatIfAll {
        trace: p.trace.clone(),
        step_ms: p.figures.step_ms,
        steps_modelled: m.steps,
        span: m.span.clone(),
        scenarios: m.scenarios.clone(),
        critical_path: m.critical_path.clone(),
        through: Vec::new(),
        notes: m.notes.clone(),
        caveat: caveat(p),
    })
}

fn view(p: &Profile) -> Result<&StepModelView> {
    p.step_model.as_ref().ok_or_else(|| Error::usage(NO_MODEL))
}

/// What-if `r` on `p`: re-timed on `model` when there is one (a trace),
/// else the profile's standard what-if of the same change.
pub fn what_if(p: &Profile, model: Option<&StepModel>, r: &Request) -> Result<WhatIf> {
    checked(r)?;
    let Some(m) = model else { return stored(p, r) };
    let (change, scenario, what, mut notes) = change_of(p, m, r)?;
    if change.frees_host() {
        notes.extend(crate::analysis::model::few_steps_note(m.n_steps));
    }
    notes.extend(crate::analysis::model::rank_note(
        p.distributed.as_ref(),
        p.extras.comm_ms_per_step,
    ));
    let replayed = m.replay(&change);
    let steps = m.n_steps.max(1) as f64;
    let per_step = |ns: i64| ns as f64 / 1e6 / steps;
    let saved = m.saved_by(&replayed);
    let removes = m.removed_by(&change, &replayed);
    let mut w =
        projection(p, Model::StepModel, scenario, what, per_step(removes), per_step(saved), notes);
    // The inferred waits may be wrong either way: the same change with
    // none of them bounds what the inference decides.
    if let Some(base) = m.close_without_inferred() {
        let bound = m.saved_without_inferred(&change, base);
        w.saved_without_inferred_ms = Some(round(per_step(bound), 3));
    }
    Ok(w)
}

/// `r` refused where it asks for no change or a `--scale` that fits none.
fn checked(r: &Request) -> Result<()> {
    if r.scale.is_some() && r.remove_category.is_none() && r.grep.is_none() && r.op.is_none() {
        return Err(Error::usage("--scale F applies to --remove-category, --grep or --op"));
    }
    if r.is_empty() {
        return Err(Error::usage(
            "specify a change: --remove-category C, --grep REGEX, --op REGEX (each with --scale F to keep part), --remove-launches N, --remove-idle CAUSE, --at-roofline C or --fuse-chains; or --all",
        ));
    }
    // A slowdown would lengthen the step, which the re-timing does not
    // project (it counts savings): refused rather than shown as no change.
    if let Some(f) = r.scale.filter(|f| !(f.is_finite() && (0.0..=1.0).contains(f))) {
        return Err(Error::usage(format!(
            "--scale {f}: expected the share of the work's time to keep, from 0 to 1"
        )));
    }
    Ok(())
}

/// A standard what-if the profile keeps.
fn stored(p: &Profile, r: &Request) -> Result<WhatIf> {
    let m = view(p)?;
    let flags = flags_of(p, r);
    let Some(row) = m.scenarios.iter().find(|s| Some(&s.flags) == flags.as_ref()) else {
        return Err(Error::usage(format!(
            "this what-if needs the trace (the profile keeps only the standard ones: `what-if --all`); give the trace, or keep it beside the profile{}",
            p.trace.as_deref().map_or(String::new(), |t| format!(" ({t})"))
        )));
    };
    Ok(from_row(p, row, m))
}

/// The profile's standard what-if number `i` (`what-if --all`'s order).
pub fn scenario(p: &Profile, i: usize) -> Result<WhatIf> {
    let m = view(p)?;
    let row = m.scenarios.get(i).ok_or_else(|| Error::usage(format!("no what-if {i}")))?;
    Ok(from_row(p, row, m))
}

fn from_row(p: &Profile, row: &ScenarioRow, m: &StepModelView) -> WhatIf {
    // The few-steps note is said of changes that free the host, as the
    // re-timed what-if says it ([`what_if`]), not of a GPU change.
    let few = crate::analysis::model::few_steps_note(m.steps as usize);
    let notes = m.notes.iter().filter(|n| row.frees_host || few.as_ref() != Some(*n)).cloned();
    let mut w = projection(
        p,
        Model::Stored,
        row.flags.clone(),
        row.what.clone(),
        row.removes_ms_per_step,
        row.saved_ms_per_step,
        notes.collect(),
    );
    w.saved_without_inferred_ms = row.saved_without_inferred_ms_per_step;
    w
}

/// The standard scenario's flags a request is, if it is one.
fn flags_of(p: &Profile, r: &Request) -> Option<String> {
    let one = [
        r.remove_category.is_some(),
        r.remove_idle.is_some(),
        r.at_roofline.is_some(),
        r.grep.is_some()
            || r.op.is_some()
            || r.scale.is_some()
            || r.remove_launches.is_some()
            || r.fuse_chains,
    ];
    if one.iter().filter(|x| **x).count() != 1 {
        return None;
    }
    let names: Vec<String> =
        p.categories.iter().map(|c| c.name.as_str().to_string()).chain(["memcpy".into()]).collect();
    let pick = |needle: &str| {
        let hits: Vec<&String> =
            names.iter().filter(|n| n.to_lowercase().contains(&needle.to_lowercase())).collect();
        (hits.len() == 1).then(|| hits[0].clone())
    };
    if let Some(c) = &r.remove_category {
        return pick(c).map(|n| format!("--remove-category '{n}'"));
    }
    if let Some(c) = &r.at_roofline {
        return pick(c).map(|n| format!("--at-roofline '{n}'"));
    }
    r.remove_idle.map(|c| format!("--remove-idle {c}"))
}

/// The model's [`Change`] for `r`, its flags, what it does, and notes.
fn change_of(
    p: &Profile,
    m: &StepModel,
    r: &Request,
) -> Result<(Change, String, String, Vec<String>)> {
    let mut change = Change::default();
    let mut flags = Vec::new();
    let mut what = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let keep = r.scale.unwrap_or(0.0);
    let verb = |thing: String| match r.scale {
        Some(f) => format!("{thing} at {f}× its time"),
        None => format!("no {thing}"),
    };
    let scale_flag = r.scale.map_or(String::new(), |f| format!(" --scale {f}"));
    if let Some(needle) = &r.remove_category {
        let class = class_matching(m, needle, "category")?;
        change.class_factor[usize::from(class)] *= keep;
        flags.push(format!("--remove-category '{}'{scale_flag}", class_flag(class)));
        what.push(match r.scale {
            None => describe_class(class),
            Some(_) => verb(format!("'{}' GPU work", class_name(class))),
        });
    }
    let mut node_factor: HashMap<u32, f64> = HashMap::default();
    if let Some(pattern) = &r.grep {
        let re = crate::lens::kernels::compile_grep(pattern)?;
        let hit: Vec<bool> = m.names.iter().map(|n| re.is_match(n)).collect();
        let mut n = 0;
        for (i, node) in m.nodes.iter().enumerate() {
            if node.kind == NodeKind::Gpu && hit.get(node.name as usize).copied().unwrap_or(false) {
                *node_factor.entry(i as u32).or_insert(1.0) *= keep;
                n += 1;
            }
        }
        if n == 0 {
            return Err(Error::usage(format!(
                "--grep '{pattern}': no GPU work in the model matches"
            )));
        }
        flags.push(format!("--grep '{pattern}'{scale_flag}"));
        // Said as what is taken away: "no GPU work matching" reads as if
        // none had matched.
        what.push(match r.scale {
            None => {
                format!("the GPU work matching '{pattern}' taken away ({n} kernels in the model)")
            }
            Some(f) => format!(
                "the GPU work matching '{pattern}' ({n} kernels in the model) at {f}× its time"
            ),
        });
    }
    if let Some(pattern) = &r.op {
        let n = op_change(m, pattern, keep, &mut change, &mut node_factor)?;
        flags.push(format!("--op '{pattern}'{scale_flag}"));
        let calls = if n == 1 { "call" } else { "calls" };
        // Said as what is taken away: "no CPU ops matching" reads as if
        // none had matched.
        what.push(match r.scale {
            None => format!(
                "the CPU ops or annotations matching '{pattern}' taken away ({n} {calls} per step: their host time, launches and GPU work)"
            ),
            Some(_) => verb(format!(
                "CPU ops or annotations matching '{pattern}' ({n} {calls} per step: their host time, launches and GPU work)"
            )),
        });
    }
    if r.fuse_chains {
        let fused = m.chains_fused().ok_or_else(|| {
            Error::usage("--fuse-chains: no chain of memory-bound kernels between matrix kernels in the model")
        })?;
        for (i, f) in fused.change.node_factor {
            *node_factor.entry(i).or_insert(1.0) *= f;
        }
        flags.push(fused.flags);
        what.push(fused.what);
    }
    change.node_factor = node_factor.into_iter().collect();
    change.node_factor.sort_unstable_by_key(|x| x.0);
    if let Some(n) = r.remove_launches {
        // Every launch call counts, as the model re-times them all: those
        // of copies and sets too, which the headline's kernel launches
        // leave out; said as such (docs/analysis.md §14).
        let steps = m.n_steps.max(1) as f64;
        let (kernel_calls, copy_calls) = m.launch_calls();
        let launches = (kernel_calls + copy_calls) as f64 / steps;
        if launches <= 0.0 {
            return Err(Error::usage("no launch calls in the model: nothing to remove"));
        }
        // The parts rounded so that they add up to the whole as printed.
        let kernels = (kernel_calls as f64 / steps).round();
        let copies = (launches.round() - kernels).max(0.0);
        let held = format!(
            "{launches:.0} launch calls per step ({kernels:.0} kernel launches, {copies:.0} memcpy/memset)"
        );
        if n as f64 > launches.round() {
            return Err(Error::usage(format!("--remove-launches {n}: the model holds {held}")));
        }
        change.launch_factor *= (1.0 - n as f64 / launches).max(0.0);
        flags.push(format!("--remove-launches {n}"));
        what.push(format!("{n} of {held} fewer: their calls and the dispatch between them"));
    }
    if let Some(cause) = r.remove_idle {
        match cause {
            IdleCause::Sync => change.sync_waits = false,
            IdleCause::Launch => change.launch_factor = 0.0,
            IdleCause::Dependency => {
                change.dependencies = false;
                change.recorded_waits = false;
            }
            IdleCause::Dataloader => {
                // Loading in worker threads moves the work, it does not
                // end it: it saves only what cores left free can take.
                let free = free_core_share(p);
                change.host_removed[HostCause::Dataloader as usize] = free;
                if free < 1.0 {
                    notes.push(format!(
                        "a CPU run using every core ({:.0}% of the step inside ops): DataLoader work moved to worker threads takes the same cores, so only {:.0}% of it is saved",
                        (1.0 - free) * 100.0,
                        free * 100.0
                    ));
                }
            }
            other => {
                let host = HostCause::of_idle(other).expect("every other cause is host time");
                change.host_removed[host as usize] = 1.0;
            }
        }
        flags.push(format!("--remove-idle {cause}"));
        what.push(m.describe_idle(cause));
        if cause == IdleCause::Dependency && m.inferred_waits + m.recorded_waits == 0 {
            notes.push("no waits on other streams were found in this trace".into());
        }
    }
    if let Some(needle) = &r.at_roofline {
        let (class, at) = roofline_factor(p, m, needle)?;
        change.class_factor[usize::from(class)] *= at.factor;
        flags.push(format!("--at-roofline '{}'", class_flag(class)));
        what.push(describe_roofline(class, at.priced_pct));
    }
    Ok((change, flags.join(" "), what.join("; "), notes))
}

/// The share of host work moved off the loop thread that no other work
/// waits for: all of it on a GPU run (the host's cores are mostly free);
/// on a CPU run whose intra-op threads take every core, the share of the
/// step spent outside ops (docs/analysis.md §14; BENCHMARKS.md, the
/// `--workers` pair: 6.2 ms of loading moved to 8 workers saved nothing on
/// 2 cores).
fn free_core_share(p: &Profile) -> f64 {
    let cpus = crate::conditions::Conditions::of_host(p.host.as_ref()).map(|c| c.cpus as u64);
    let on_every_core = match (p.config.on_cpu(), p.config.threads(), cpus) {
        (Some(true), Some(t), Some(c)) => t >= c,
        _ => false,
    };
    match p.extras.host_in_ops_frac {
        Some(in_ops) if on_every_core => (1.0 - in_ops).clamp(0.0, 1.0),
        _ => 1.0,
    }
}

/// The GPU class whose name contains `needle` (`memcpy`: copies and sets).
fn class_matching(m: &StepModel, needle: &str, what: &str) -> Result<u8> {
    let times = m.class_time();
    let present: Vec<u8> = (0..CLASSES as u8).filter(|&c| times[usize::from(c)] > 0).collect();
    let lower = needle.to_lowercase();
    let hits: Vec<u8> = present
        .iter()
        .copied()
        .filter(|&c| class_name(c).to_lowercase().contains(&lower))
        .collect();
    let have = || present.iter().map(|&c| class_name(c)).collect::<Vec<_>>().join(", ");
    match hits.as_slice() {
        [one] => Ok(*one),
        [] if present.is_empty() => Err(Error::usage(format!(
            "no {what} matching '{needle}': this profile has no GPU kernels"
        ))),
        [] => Err(Error::usage(format!("no {what} matching '{needle}'. have: {}", have()))),
        _ => Err(Error::usage(format!(
            "'{needle}' matches several categories ({}); be more specific",
            hits.iter().map(|&c| class_name(c)).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `--op`: the host time inside matching ops (or annotations) cut, and their launches and
/// the GPU work those launched scaled by `keep`. Returns the calls matched.
fn op_change(
    m: &StepModel,
    pattern: &str,
    keep: f64,
    change: &mut Change,
    node_factor: &mut HashMap<u32, f64>,
) -> Result<usize> {
    let Some(log) = &m.ops else {
        return Err(Error::usage("--op needs the trace's CPU ops: give the trace itself"));
    };
    let re: Regex = crate::lens::kernels::compile_pattern("--op", pattern)?;
    let hit: Vec<bool> = log.names.iter().map(|n| re.is_match(n)).collect();
    let mut per: HashMap<u32, Vec<(i64, i64)>> = HashMap::default();
    for &(t, s, e, n) in &log.spans {
        if hit[n as usize] {
            per.entry(t).or_default().push((s, e));
        }
    }
    if per.is_empty() {
        return Err(Error::usage(format!(
            "--op '{pattern}': no CPU op or annotation in the model matches"
        )));
    }
    for iv in per.values_mut() {
        *iv = crate::analysis::busy::merge(iv);
    }
    // Calls nested in a matching call count once.
    let calls = per.values().map(Vec::len).sum::<usize>() / m.n_steps.max(1);
    let inside = |t: u32, at: i64| {
        per.get(&t).is_some_and(|iv| {
            let k = iv.partition_point(|&(_, e)| e <= at);
            iv.get(k).is_some_and(|&(s, _)| s <= at)
        })
    };
    for (i, node) in m.nodes.iter().enumerate() {
        let launch = match node.kind {
            NodeKind::Gpu if node.cross != crate::analysis::model::NONE => {
                &m.nodes[node.cross as usize]
            }
            NodeKind::Launch => node,
            _ => continue,
        };
        let crate::analysis::model::Lane::Thread(t) = m.lanes[launch.lane as usize] else {
            continue;
        };
        if inside(t, launch.start) {
            *node_factor.entry(i as u32).or_insert(1.0) *= keep;
        }
    }
    change.host_cut = per;
    change.cut_keep = keep;
    Ok(calls)
}

/// A category's roofline factor from the profile's efficiency account:
/// what its time would be with no time lost against the roofline.
fn roofline_factor(p: &Profile, m: &StepModel, needle: &str) -> Result<(u8, AtRoofline)> {
    let Some(e) = p.efficiency.as_ref().filter(|e| !e.categories.is_empty()) else {
        let why = p
            .efficiency
            .as_ref()
            .and_then(|e| e.notes.first().cloned())
            .unwrap_or_else(|| "a CPU run, or a profile written before it".into());
        return Err(Error::usage(format!(
            "this profile has no roofline account ({why}): nothing to move to the roofline"
        )));
    };
    let lower = needle.to_lowercase();
    let hits: Vec<_> = e
        .categories
        .iter()
        .filter(|c| c.category.as_str().to_lowercase().contains(&lower))
        .collect();
    let have = || e.categories.iter().map(|c| c.category.as_str()).collect::<Vec<_>>().join(", ");
    let cat = match hits.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::usage(format!(
                "no priced category matching '{needle}'. priced: {}",
                have()
            )));
        }
        _ => {
            return Err(Error::usage(format!(
                "'{needle}' matches several categories ({}); be more specific",
                have()
            )));
        }
    };
    if cat.achieved.lost_ms_per_step.is_none() {
        let why =
            e.notes.first().cloned().unwrap_or_else(|| "the device's peaks are unknown".into());
        return Err(Error::usage(format!("no roofline for '{}': {why}", cat.category)));
    }
    let class = class_matching(m, cat.category.as_str(), "priced category")?;
    let total = p.categories.iter().find(|r| r.name == cat.category).map_or(0.0, |r| r.ms_per_step);
    let none = AtRoofline { factor: 1.0, priced_pct: 100.0 };
    Ok((class, scenarios::roofline_factor(&cat.achieved, total).unwrap_or(none)))
}

/// The answer for a saving: the projected step and img/s.
fn projection(
    p: &Profile,
    model: Model,
    scenario: String,
    what: String,
    removes_ms: f64,
    saved_ms: f64,
    notes: Vec<String>,
) -> WhatIf {
    let step = p.figures.step_ms;
    let projected = round((step - saved_ms).max(0.0), 3);
    WhatIf {
        trace: p.trace.clone(),
        scenario,
        what,
        model,
        removes_ms_per_step: round(removes_ms, 3),
        saved_ms_per_step: round(saved_ms, 3),
        saved_without_inferred_ms: None,
        step_ms: NowProjected { now: Some(step), projected: Some(projected) },
        change_pct: (step > 0.0).then(|| round((projected - step) / step * 100.0, 1)),
        img_per_s: NowProjected {
            now: p.figures.img_per_s,
            projected: projected_img_per_s(p, step, projected),
        },
        notes,
        caveat: caveat(p),
    }
}

/// img/s at the projected step time: from the batch, else scaled from the
/// measured img/s.
fn projected_img_per_s(p: &Profile, step: f64, projected: f64) -> Option<f64> {
    match (p.batch(), p.figures.img_per_s) {
        (Some(b), _) if projected > 0.0 => Some(round(b * 1000.0 / projected, 2)),
        (None, Some(now)) if projected > 0.0 => Some(round(now * step / projected, 2)),
        _ => None,
    }
}

/// A rank set's what-if, re-timed on the ranks' joined step models: one
/// rank's lateness at the collectives removed, or a change on every rank.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct JobWhatIf {
    /// The change's flags: `--straggler N`, or a change made on every rank.
    pub scenario: String,
    /// The late rank whose lateness goes (`--straggler`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub straggler: Option<u32>,
    pub what: String,
    /// The collectives the straggler arrived last at; for a change on
    /// every rank, the collectives joining the ranks.
    pub collectives: usize,
    /// Each rank's step now and re-timed on its own step model.
    pub ranks: Vec<RankProjection>,
    /// The job's step: the slowest rank's.
    pub job_step_ms: NowProjected,
    pub change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub caveat: String,
    /// Some rank's change takes host time out ([`ScenarioRow::frees_host`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub frees_host: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct RankProjection {
    pub rank: u32,
    pub step_ms: f64,
    /// The work its change takes away and the time its collective kernels
    /// no longer wait for the last rank, per step; and what re-timing saves.
    pub removes_ms_per_step: f64,
    pub saved_ms_per_step: f64,
    pub projected_ms: f64,
}

/// Said of the job's what-if.
pub const JOB_CAVEAT: &str = "the ranks' step models joined at their collectives (docs/analysis.md §14): each rank re-timed on its own model, every collective's transfer starting once the last rank arrives (a straggler's arrivals left out); only a second measurement proves the change";

/// `rank`'s lateness removed: at every collective the others no longer
/// wait for it (the transfer starts once the last of them arrives), the
/// ranks re-timed together on their joined step models, so a rank that
/// then runs earlier meets the others earlier at later collectives too;
/// the job's step is the slowest rank's. `models` in the set's rank order.
pub fn straggler_removed(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    matched: &crate::lens::collectives::Collectives,
    rank: u32,
) -> Result<JobWhatIf> {
    let Some(straggler) = set.ranks.iter().position(|r| r.rank == rank) else {
        return Err(Error::usage(format!("--straggler {rank}: no such rank in the set")));
    };
    let count = matched
        .collectives
        .iter()
        .filter(|m| m.last_rank == Some(rank) && m.ranks.len() >= 2)
        .count();
    if count == 0 {
        return Err(Error::usage(format!(
            "rank {rank} arrives last at no matched collective: nobody waits for it (`collectives DIR` lists who does)"
        )));
    }
    let job = crate::lens::job::joined(set, models, matched);
    let replayed = job.replay(&[], Some(straggler));
    let (ranks, notes) = job_rows(set, models, &job, &replayed, &[]);
    Ok(job_what_if(
        format!("--straggler {rank}"),
        Some(rank),
        format!(
            "rank {rank}'s lateness removed: the others no longer wait for it at the {count} collectives it arrived last at, and meet each other earlier at the rest"
        ),
        count,
        ranks,
        notes,
        false,
    ))
}

/// What [`job_changed`] adds to a change's description.
const ON_EVERY_RANK: &str = ", on every rank, the ranks meeting at their collectives";

/// Change `r` made on every rank, the ranks re-timed together on their
/// joined step models: a rank the change speeds up still meets the others
/// at each collective, and one it leaves alone waits less for them.
pub fn job_changed(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    matched: &crate::lens::collectives::Collectives,
    r: &Request,
) -> Result<JobWhatIf> {
    changed_on(set, models, &crate::lens::job::joined(set, models, matched), r)
}

/// [`job_changed`] on the ranks already joined.
fn changed_on(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    job: &JobModel<'_>,
    r: &Request,
) -> Result<JobWhatIf> {
    checked(r)?;
    let mut changes = Vec::new();
    let (mut scenario, mut what, mut notes) = (None, None, Vec::new());
    let mut first_error = None;
    for (pos, m) in models.iter().enumerate() {
        let rank = set.ranks[pos].rank;
        let Some(m) = m else {
            changes.push(Change::default());
            continue;
        };
        match change_of(&set.ranks[pos].input.profile, m, r) {
            Ok((change, flags, w, n)) => {
                changes.push(change);
                scenario.get_or_insert(flags);
                what.get_or_insert(w);
                notes.extend(n.into_iter().map(|n| format!("rank {rank}: {n}")));
            }
            Err(e) => {
                notes.push(format!("rank {rank}: left as it is ({e})"));
                first_error.get_or_insert(e);
                changes.push(Change::default());
            }
        }
    }
    let (Some(scenario), Some(what)) = (scenario, what) else {
        return Err(first_error.unwrap_or_else(|| Error::usage(NO_MODEL)));
    };
    let frees_host = changes.iter().any(Change::frees_host);
    if frees_host {
        notes.extend(crate::analysis::model::few_steps_note(fewest_steps(models)));
    }
    let replayed = job.replay(&changes, None);
    let (ranks, more) = job_rows(set, models, job, &replayed, &changes);
    notes.extend(more);
    Ok(job_what_if(
        format!("{scenario} on every rank"),
        None,
        format!("{what}{ON_EVERY_RANK}"),
        job.links(),
        ranks,
        notes,
        frees_host,
    ))
}

/// The standard changes any rank has, each made on every rank and the
/// job re-timed ([`job_changed`]), in the order the ranks first list
/// them; and a note for each change no rank could make.
pub fn job_scenarios(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    job: &JobModel<'_>,
) -> (Vec<JobWhatIf>, Vec<String>) {
    let mut flags: Vec<String> = Vec::new();
    for r in &set.ranks {
        for row in r.input.profile.step_model.iter().flat_map(|m| &m.scenarios) {
            if !flags.contains(&row.flags) {
                flags.push(row.flags.clone());
            }
        }
    }
    let (mut out, mut notes) = (Vec::new(), Vec::new());
    for f in &flags {
        let Some(request) = standard_request(f) else { continue };
        match changed_on(set, models, job, &request) {
            Ok(w) => out.push(w),
            Err(e) => notes.push(format!("{f}: {e}")),
        }
    }
    (out, notes)
}

impl JobWhatIf {
    /// The change's row in a ranked table: what the job's step saves, and
    /// the most any rank's change and waits took away (the job saves no
    /// more than that).
    pub fn row(&self) -> ScenarioRow {
        let (now, after) = (self.job_step_ms.now.unwrap_or(0.0), self.job_step_ms.projected);
        let saved = round((now - after.unwrap_or(now)).max(0.0), 3);
        ScenarioRow {
            flags: self.scenario.strip_suffix(" on every rank").unwrap_or(&self.scenario).into(),
            what: self.what.strip_suffix(ON_EVERY_RANK).unwrap_or(&self.what).to_string(),
            saved_ms_per_step: saved,
            saved_pct: if now > 0.0 { round(saved * 100.0 / now, 1) } else { 0.0 },
            removes_ms_per_step: self
                .ranks
                .iter()
                .map(|r| r.removes_ms_per_step)
                .fold(0.0, f64::max),
            saved_without_inferred_ms_per_step: None,
            frees_host: self.frees_host,
        }
    }
}

/// The order a ranked list of what-ifs is shown in: the largest saving
/// first, ties by their flags.
pub fn largest_saving_first(a: &ScenarioRow, b: &ScenarioRow) -> std::cmp::Ordering {
    b.saved_ms_per_step.total_cmp(&a.saved_ms_per_step).then_with(|| a.flags.cmp(&b.flags))
}

/// `what-if DIR --all`: [`job_scenarios`], largest saving of the job's
/// step first.
pub fn job_all(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    matched: &crate::lens::collectives::Collectives,
    label: Option<String>,
) -> Result<WhatIfAll> {
    let job = crate::lens::job::joined(set, models, matched);
    let (changes, mut notes) = job_scenarios(set, models, &job);
    let mut scenarios: Vec<ScenarioRow> = changes.iter().map(JobWhatIf::row).collect();
    if scenarios.is_empty() {
        return Err(Error::usage(NO_MODEL));
    }
    scenarios.sort_by(largest_saving_first);
    // The job's step is the slowest rank's: its critical path.
    let slowest = set
        .ranks
        .iter()
        .max_by(|a, b| a.input.profile.figures.step_ms.total_cmp(&b.input.profile.figures.step_ms));
    let path = slowest.and_then(|r| r.input.profile.step_model.as_ref());
    if let Some(r) = slowest {
        notes.push(format!(
            "each change made on every rank, the ranks re-timed together; the job's step is rank {}'s, whose own critical path this is; `through`: the path through the ranks joined at their collectives",
            r.rank
        ));
    }
    notes.extend(crate::analysis::model::few_steps_note(fewest_steps(models)));
    Ok(WhatIfAll {
        trace: label,
        step_ms: slowest.map_or(0.0, |r| r.input.profile.figures.step_ms),
        steps_modelled: path.map_or(0, |m| m.steps),
        span: path.map(|m| m.span.clone()).unwrap_or_default(),
        scenarios,
        critical_path: path.map(|m| m.critical_path.clone()).unwrap_or_default(),
        through: crate::lens::job::legs(&job, set, models, matched),
        notes,
        caveat: JOB_CAVEAT.into(),
    })
}

/// The fewest steps any rank's model holds: what a job's overlap of
/// consecutive steps is credited with.
fn fewest_steps(models: &[Option<StepModel>]) -> usize {
    models.iter().flatten().map(|m| m.n_steps).min().unwrap_or(0)
}

/// The request a standard scenario's flags ask for
/// ([`crate::analysis::model::Scenario`]).
fn standard_request(flags: &str) -> Option<Request> {
    let quoted = |rest: &str| rest.trim().trim_matches('\'').to_string();
    let mut r = Request::default();
    if let Some(rest) = flags.strip_prefix("--remove-category ") {
        r.remove_category = Some(quoted(rest));
    } else if let Some(rest) = flags.strip_prefix("--at-roofline ") {
        r.at_roofline = Some(quoted(rest));
    } else if let Some(rest) = flags.strip_prefix("--remove-idle ") {
        r.remove_idle = Some(IdleCause::ALL.into_iter().find(|c| c.to_string() == rest.trim())?);
    } else {
        return None;
    }
    Some(r)
}

/// Each rank's row of a joined re-timing: what its change took away plus
/// the waits re-synchronising took, and what it saves; and the notes.
fn job_rows(
    set: &crate::profile::ranks::RankSet,
    models: &[Option<StepModel>],
    job: &JobModel<'_>,
    replayed: &JobReplayed,
    changes: &[Change],
) -> (Vec<RankProjection>, Vec<String>) {
    let mut notes = Vec::new();
    if !replayed.settled {
        notes.push(format!(
            "the ranks did not settle in {} rounds (their collectives' order differs): the last round's times",
            replayed.rounds
        ));
    }
    if job.unlinked > 0 {
        notes.push(format!(
            "{} collective kernels outside the modelled steps (or ending before the last arrival) are left as they were",
            job.unlinked
        ));
    }
    let none = Change::default();
    let mut rows = Vec::new();
    for (pos, r) in set.ranks.iter().enumerate() {
        let (mut removes, mut saved) = (0.0, 0.0);
        match (models.get(pos).and_then(Option::as_ref), &replayed.ranks[pos]) {
            (Some(model), Some(x)) => {
                let per_step = |ns: i64| ns as f64 / 1e6 / model.n_steps.max(1) as f64;
                let own = model.removed_by(changes.get(pos).unwrap_or(&none), x);
                removes = per_step(own + replayed.waits_removed[pos]);
                saved = per_step(model.saved_by(x));
            }
            _ => notes
                .push(format!("rank {}: no trace to re-time (a profile): left as it is", r.rank)),
        }
        let step = r.input.profile.figures.step_ms;
        rows.push(RankProjection {
            rank: r.rank,
            step_ms: step,
            removes_ms_per_step: round(removes, 3),
            saved_ms_per_step: round(saved, 3),
            projected_ms: round((step - saved).max(0.0), 3),
        });
    }
    (rows, notes)
}

fn job_what_if(
    scenario: String,
    straggler: Option<u32>,
    what: String,
    collectives: usize,
    ranks: Vec<RankProjection>,
    notes: Vec<String>,
    frees_host: bool,
) -> JobWhatIf {
    let now = ranks.iter().map(|r| r.step_ms).fold(0.0, f64::max);
    let projected = ranks.iter().map(|r| r.projected_ms).fold(0.0, f64::max);
    JobWhatIf {
        scenario,
        straggler,
        what,
        collectives,
        ranks,
        job_step_ms: NowProjected { now: Some(now), projected: Some(round(projected, 3)) },
        change_pct: (now > 0.0).then(|| round((projected - now) / now * 100.0, 1)),
        notes,
        caveat: JOB_CAVEAT.into(),
        frees_host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loading moved off the loop thread is saved only where cores are
    /// free: all of it on a GPU run, the step's share outside ops on a
    /// CPU run whose threads take every core.
    #[test]
    fn work_moved_to_other_threads_is_saved_where_cores_are_free() {
        let mut p = Profile::default();
        assert_eq!(free_core_share(&p), 1.0);
        p.config =
            serde_json::from_value(serde_json::json!({"device": "cpu", "threads": 2})).unwrap();
        p.host = Some(serde_json::json!({"conditions": {"cpus": 2, "threads": 2}}));
        p.extras.host_in_ops_frac = Some(0.956);
        assert!((free_core_share(&p) - 0.044).abs() < 1e-9);
        // Threads fewer than the cores: a core is free for the loader.
        p.config =
            serde_json::from_value(serde_json::json!({"device": "cpu", "threads": 1})).unwrap();
        assert_eq!(free_core_share(&p), 1.0);
    }
}
