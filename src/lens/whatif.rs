//! `profile what-if`: the payoff of a change before making it (docs/spec.md §4).

use serde::Serialize;

use crate::analysis::verdict::COMPUTE_UTIL;
use crate::error::{Error, Result};
use crate::profile::{Category, IdleCause, Profile, Verdict};
use crate::util::round;

/// What to remove.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Change {
    /// Case-insensitive substring of one kernel category.
    pub remove_category: Option<String>,
    /// Kernel launches per step to remove.
    pub remove_launches: Option<u64>,
    /// One cause of GPU idle time to remove (docs/analysis.md §12).
    pub remove_idle: Option<IdleCause>,
    /// Case-insensitive substring of one kernel category whose priced work
    /// would run at its roofline (docs/analysis.md §13).
    pub at_roofline: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Below 80% GPU utilisation: launches × measured per-launch host cost.
    HostLaunch,
    /// At or above: the removed GPU work.
    GpuWork,
    /// No GPU launches were recorded: nothing to model.
    NoGpu,
    /// Removing `communication`: perfect overlap, the exposed part hidden.
    CommOverlap,
    /// Removing one idle cause: its idle time goes from the step.
    IdleCause,
    /// One category's priced kernels at their roofline: the time they lose
    /// against it goes from the step.
    AtRoofline,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Removed {
    pub category: Option<Category>,
    pub gpu_ms: f64,
    pub launches: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NowProjected {
    pub now: Option<f64>,
    pub projected: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WhatIf {
    pub trace: Option<String>,
    pub bound: Verdict,
    pub model: Model,
    pub mechanism: String,
    pub per_launch_us: Option<f64>,
    pub removed: Removed,
    pub step_ms: NowProjected,
    pub img_per_s: NowProjected,
    pub change_pct: Option<f64>,
    pub caveat: &'static str,
}

pub const CAVEAT: &str = "rough estimate: the per-launch host cost is an average, and only a second measurement proves the change";

/// Removing communication does not make collectives go away; the model is
/// perfect overlap, which real runs only approach.
pub const COMM_CAVEAT: &str = "perfect-overlap model: only the exposed communication (the part no compute kernel overlaps) is removed, the collectives and their launches stay; real overlap is partial, and only a second measurement proves the change";

/// An idle cause removed: the GPU would still need the host for the next
/// kernel, and the work removed may move elsewhere.
pub const IDLE_CAVEAT: &str = "upper bound: it assumes the GPU's idle time of that cause simply goes, and that the work behind it (Python, a sync, a copy) does not move into another gap; only a second measurement proves the change";

/// A category at its roofline: an upper bound, since no kernel reaches it.
pub const ROOFLINE_CAVEAT: &str = "upper bound: no real kernel reaches the roofline, only its priced kernels are changed (docs/analysis.md §13), and the GPU time saved shortens the step only where the GPU is its critical path; only a second measurement proves the change";

/// Said when several changes are asked at once.
pub const BOTH: &str = "--remove-category, --remove-launches, --remove-idle and --at-roofline cannot be combined: the launches could be the category's own, \
                        so the count would be wrong; ask one what-if at a time";

pub fn what_if(p: &Profile, change: &Change) -> Result<WhatIf> {
    let asked = [
        change.remove_category.is_some(),
        change.remove_launches.is_some(),
        change.remove_idle.is_some(),
        change.at_roofline.is_some(),
    ];
    match asked.iter().filter(|a| **a).count() {
        0 => {
            return Err(Error::usage(
                "specify --remove-category C, --remove-launches N, --remove-idle CAUSE or --at-roofline C",
            ));
        }
        // Whether the N launches are the category's own or others cannot be
        // told, and the models (host cost per launch, GPU work, idle time)
        // answer different questions: one change at a time.
        1 => {}
        _ => return Err(Error::usage(BOTH)),
    }
    if let Some(cause) = change.remove_idle {
        return idle_removed(p, cause);
    }
    if let Some(wanted) = &change.at_roofline {
        return at_roofline(p, wanted);
    }
    let launches = p.figures.launches_per_step;
    let mut removed = Removed {
        category: None,
        gpu_ms: 0.0,
        launches: change.remove_launches.unwrap_or(0) as f64,
    };
    if let Some(wanted) = &change.remove_category {
        let needle = wanted.to_lowercase();
        let hits: Vec<_> = p
            .categories
            .iter()
            .filter(|c| c.name.as_str().to_lowercase().contains(&needle))
            .collect();
        let have = || p.categories.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
        let cat = match hits.as_slice() {
            [one] => *one,
            [] if p.categories.is_empty() => {
                return Err(Error::usage(format!(
                    "no category matching '{wanted}': this profile has no GPU kernels"
                )));
            }
            [] => {
                return Err(Error::usage(format!(
                    "no category matching '{wanted}'. have: {}",
                    have()
                )));
            }
            _ => {
                return Err(Error::usage(format!(
                    "'{wanted}' matches several categories ({}); be more specific",
                    hits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        };
        removed.category = Some(cat.name.clone());
        if cat.name == Category::Communication {
            return Ok(comm_overlap(p, removed, cat.ms_per_step));
        }
        removed.gpu_ms = cat.ms_per_step;
        // Its share of launches: counted from the kernel list when present,
        // else in proportion to its share of GPU time.
        let counted: f64 =
            p.kernels.iter().filter(|k| k.category == cat.name).map(|k| k.count_per_step).sum();
        removed.launches += if counted > 0.0 { counted } else { launches * cat.pct / 100.0 };
    }
    removed.launches = round(removed.launches.min(launches), 2);
    let step = p.figures.step_ms;
    let (model, projected, mechanism, per_launch_us) = if launches <= 0.0 {
        (
            Model::NoGpu,
            step,
            "no GPU kernel launches were recorded (a CPU profile): removing launches or GPU work changes nothing measurable here"
                .to_string(),
            None,
        )
    } else if p.figures.gpu_util < COMPUTE_UTIL {
        let per_launch_ms = p.figures.host_overhead_ms_per_step / launches;
        let floor = p.figures.gpu_busy_ms_per_step
            - removed.gpu_ms.min(p.figures.gpu_busy_ms_per_step)
            + p.figures.dataload_ms.unwrap_or(0.0);
        let projected = (step - removed.launches * per_launch_ms).max(floor).min(step);
        (
            Model::HostLaunch,
            projected,
            format!(
                "host/launch-bound (GPU {:.0}% busy): ~{} fewer launches x ~{:.1} us host cost each",
                p.figures.gpu_util * 100.0,
                fmt_count(removed.launches),
                per_launch_ms * 1000.0
            ),
            Some(round(per_launch_ms * 1000.0, 2)),
        )
    } else {
        let floor = step - p.figures.gpu_busy_ms_per_step;
        let projected = (step - removed.gpu_ms).max(floor).min(step);
        (
            Model::GpuWork,
            projected,
            format!(
                "compute-bound (GPU {:.0}% busy): ~{:.3} ms less GPU work per step",
                p.figures.gpu_util * 100.0,
                removed.gpu_ms
            ),
            None,
        )
    };
    Ok(WhatIf {
        per_launch_us,
        ..projection(p, model, mechanism, removed, round(projected, 3), CAVEAT)
    })
}

/// What-if for `communication`: every collective fully overlapped by
/// compute, so the step loses its exposed communication and nothing else.
fn comm_overlap(p: &Profile, mut removed: Removed, category_ms: f64) -> WhatIf {
    let step = p.figures.step_ms;
    // A profile written before overlap was measured: all of it exposed.
    let exposed = p.extras.comm_exposed_ms_per_step.unwrap_or(category_ms).min(step).max(0.0);
    removed.gpu_ms = round(exposed, 3);
    let projected = round(step - exposed, 3);
    let overlap = match (p.extras.comm_exposed_ms_per_step, p.extras.comm_overlap_pct) {
        (None, _) => {
            " (overlap not measured in this profile: all of it taken as exposed)".to_string()
        }
        (_, Some(o)) => format!(" ({o:.0}% overlapped now)"),
        _ => String::new(),
    };
    let mechanism = format!(
        "communication fully overlapped with compute: ~{exposed:.3} ms/step of exposed collectives hidden{overlap}"
    );
    projection(p, Model::CommOverlap, mechanism, removed, projected, COMM_CAVEAT)
}

/// What-if for one idle cause: the step without that cause's idle time,
/// never below the GPU's busy time.
fn idle_removed(p: &Profile, cause: IdleCause) -> Result<WhatIf> {
    let Some(idle) = &p.idle else {
        return Err(Error::usage(
            "this profile has no idle account (a CPU run, or a profile written before it): nothing to remove",
        ));
    };
    let ms = idle.cause(cause).map_or(0.0, |c| c.ms_per_step);
    let step = p.figures.step_ms;
    let projected = round((step - ms).max(p.figures.gpu_busy_ms_per_step).min(step), 3);
    let mechanism = format!(
        "GPU idle of cause {cause} ({}) removed: ~{ms:.3} ms/step of the {:.3} ms idle",
        cause.meaning(),
        idle.ms_per_step
    );
    let removed = Removed { category: None, gpu_ms: 0.0, launches: 0.0 };
    Ok(projection(p, Model::IdleCause, mechanism, removed, projected, IDLE_CAVEAT))
}

/// What-if for one category at its roofline: its priced kernels lose no
/// time against it; the step never below its non-GPU part.
fn at_roofline(p: &Profile, wanted: &str) -> Result<WhatIf> {
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
    let needle = wanted.to_lowercase();
    let hits: Vec<_> = e
        .categories
        .iter()
        .filter(|c| c.category.as_str().to_lowercase().contains(&needle))
        .collect();
    let have = || e.categories.iter().map(|c| c.category.as_str()).collect::<Vec<_>>().join(", ");
    let cat = match hits.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::usage(format!(
                "no priced category matching '{wanted}'. priced: {}",
                have()
            )));
        }
        _ => {
            return Err(Error::usage(format!(
                "'{wanted}' matches several categories ({}); be more specific",
                have()
            )));
        }
    };
    let Some(lost) = cat.achieved.lost_ms_per_step else {
        let why =
            e.notes.first().cloned().unwrap_or_else(|| "the device's peaks are unknown".into());
        return Err(Error::usage(format!("no roofline for '{}': {why}", cat.category)));
    };
    let step = p.figures.step_ms;
    let projected = round((step - lost).max(step - p.figures.gpu_busy_ms_per_step).min(step), 3);
    let modelled = cat.achieved.modelled_ms_per_step.unwrap_or(0.0);
    let now = cat.achieved.pct_of_peak.map_or_else(|| "n/a".to_string(), |v| format!("{v:.0}%"));
    let mechanism = format!(
        "'{}' at its roofline: its priced kernels ({modelled:.3} ms/step, at {now} of it now) would take ~{lost:.3} ms/step less",
        cat.category
    );
    let removed =
        Removed { category: Some(cat.category.clone()), gpu_ms: round(lost, 3), launches: 0.0 };
    Ok(projection(p, Model::AtRoofline, mechanism, removed, projected, ROOFLINE_CAVEAT))
}

/// The answer for a projected step time: the change and img/s with it.
fn projection(
    p: &Profile,
    model: Model,
    mechanism: String,
    removed: Removed,
    projected: f64,
    caveat: &'static str,
) -> WhatIf {
    let step = p.figures.step_ms;
    WhatIf {
        trace: p.trace.clone(),
        bound: p.bound.clone(),
        model,
        mechanism,
        per_launch_us: None,
        removed,
        step_ms: NowProjected { now: Some(step), projected: Some(projected) },
        change_pct: (step > 0.0).then(|| round((projected - step) / step * 100.0, 1)),
        img_per_s: NowProjected {
            now: p.figures.img_per_s,
            projected: projected_img_per_s(p, step, projected),
        },
        caveat,
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

fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{CategoryRow, Figures};

    fn gpu_profile(util: f64) -> Profile {
        Profile {
            figures: Figures {
                step_ms: 10.0,
                gpu_util: util,
                gpu_busy_ms_per_step: 10.0 * util,
                host_overhead_ms_per_step: 10.0 * (1.0 - util),
                launches_per_step: 100.0,
                ..Default::default()
            },
            categories: vec![CategoryRow {
                name: Category::Elementwise,
                pct: 30.0,
                ms_per_step: 1.5,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn launch_model_below_80_percent() {
        let p = gpu_profile(0.5); // host 5 ms over 100 launches = 50 us each
        let w = what_if(&p, &Change { remove_launches: Some(20), ..Default::default() }).unwrap();
        assert_eq!(w.model, Model::HostLaunch);
        assert_eq!(w.per_launch_us, Some(50.0));
        assert_eq!(w.step_ms.projected, Some(9.0));
        // A category removes its share of launches (30% of 100) and its GPU time.
        let w = what_if(&p, &Change { remove_category: Some("ELEM".into()), ..Default::default() })
            .unwrap();
        assert_eq!(w.removed.launches, 30.0);
        assert_eq!(w.step_ms.projected, Some(8.5));
    }

    #[test]
    fn gpu_work_model_at_80_percent_and_above() {
        let p = gpu_profile(0.8);
        let w = what_if(
            &p,
            &Change { remove_category: Some("elementwise".into()), ..Default::default() },
        )
        .unwrap();
        assert_eq!(w.model, Model::GpuWork);
        assert_eq!(w.step_ms.projected, Some(8.5));
    }

    #[test]
    fn communication_is_removed_as_perfect_overlap() {
        let mut p = gpu_profile(0.5);
        p.categories.push(CategoryRow {
            name: Category::Communication,
            pct: 50.0,
            ms_per_step: 3.0,
        });
        p.extras.comm_ms_per_step = Some(3.0);
        p.extras.comm_exposed_ms_per_step = Some(2.0);
        p.extras.comm_overlap_pct = Some(33.3);
        let w = what_if(&p, &Change { remove_category: Some("comm".into()), ..Default::default() })
            .unwrap();
        assert_eq!(w.model, Model::CommOverlap);
        // Only the exposed 2 ms go, not the category's 3 ms; launches stay.
        assert_eq!(w.removed.gpu_ms, 2.0);
        assert_eq!(w.removed.launches, 0.0);
        assert_eq!(w.step_ms.projected, Some(8.0));
        assert_eq!(w.caveat, COMM_CAVEAT);
        assert!(
            w.caveat.contains("perfect-overlap") && w.mechanism.contains("33% overlapped now"),
            "{}",
            w.mechanism
        );
    }

    #[test]
    fn cpu_profiles_and_bad_requests() {
        let p = Profile {
            figures: Figures { step_ms: 100.0, ..Default::default() },
            ..Default::default()
        };
        let w = what_if(&p, &Change { remove_launches: Some(50), ..Default::default() }).unwrap();
        assert_eq!(w.model, Model::NoGpu);
        assert_eq!(w.step_ms.projected, Some(100.0));
        assert!(what_if(&p, &Change::default()).is_err());
        let both = Change {
            remove_category: Some("elementwise".into()),
            remove_launches: Some(100),
            ..Default::default()
        };
        assert_eq!(what_if(&gpu_profile(0.5), &both).unwrap_err().exit_code(), 2);
        let e = what_if(
            &gpu_profile(0.5),
            &Change { remove_category: Some("gemm".into()), ..Default::default() },
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("have: elementwise"));
    }
}
