//! `profile compare`: before → after, with the significance rule of docs/spec.md §4.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;

pub use super::stats::{SINGLE_RUN, Significance, significance};
use crate::profile::{Mode, Profile, Verdict};
use crate::util::round;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// The unit of a compared metric, written as its symbol (`"unit": "ms"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count or a rate without a symbol (img/s, launches per step).
    Count,
    Ms,
    MsPerStep,
    Mb,
    /// A percentage (0–100).
    Percent,
    /// A fraction (0–1), as `gpu_util` is everywhere it is written as a
    /// number (`"unit": "fraction"`); text shows it as a percentage.
    Fraction,
}

impl Unit {
    /// Every unit, for the JSON Schema's list of symbols.
    const ALL: [Unit; 6] =
        [Unit::Count, Unit::Ms, Unit::MsPerStep, Unit::Mb, Unit::Percent, Unit::Fraction];

    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Ms => "ms",
            Unit::MsPerStep => "ms/step",
            Unit::Mb => "MB",
            Unit::Percent => "%",
            Unit::Fraction => "fraction",
        }
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.symbol())
    }
}

impl Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.symbol())
    }
}

/// As it is serialized: one of the symbols.
impl JsonSchema for Unit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Unit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "enum": Unit::ALL.map(Unit::symbol) })
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct MetricDelta {
    /// A key of `get`'s metrics.
    pub metric: &'static str,
    pub label: &'static str,
    pub unit: Unit,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// Relative change in percent, when both sides are known and before ≠ 0;
    /// none for a share (`%`, `fraction`), which changes in points.
    pub change_pct: Option<f64>,
    /// A share's change in percentage points (after − before, ×100 on a
    /// fraction), when both sides are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_pts: Option<f64>,
    pub better: Better,
    /// True/false when the change is an improvement/regression; None if equal or unknown.
    pub improved: Option<bool>,
    pub significance: Significance,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    Faster,
    Slower,
    Same,
    Appeared,
    Disappeared,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct RowDelta {
    pub name: String,
    pub before_ms: Option<f64>,
    pub after_ms: Option<f64>,
    pub delta_ms: f64,
    pub change_pct: Option<f64>,
    pub status: RowStatus,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Comparison {
    pub before: String,
    pub after: String,
    pub mode: [Mode; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// What differs between the two sides beside the change under test:
    /// the device, the model (where both name theirs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub metrics: Vec<MetricDelta>,
    pub bound: [Verdict; 2],
    pub categories: Vec<RowDelta>,
    /// What `phases` compares: `wall` where both sides have every phase's
    /// wall time, else `gpu` (the kernels launched in each phase).
    pub phases_measure: PhaseMeasure,
    /// Empty where every phase on both sides is 0 on that measure (two
    /// CPU runs without phase walls: no GPU time to compare).
    pub phases: Vec<RowDelta>,
    /// GPU idle time by cause (docs/analysis.md §12), where a side has it.
    pub idle: Vec<RowDelta>,
    pub kernels: Vec<RowDelta>,
    /// `--fail-on` gates, when given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<super::gate::Gate>,
}

/// The device a profile ran on, as the peak table names it, else as the
/// trace does.
fn device_of(p: &Profile) -> Option<&str> {
    p.efficiency
        .as_ref()
        .and_then(|e| e.device.as_deref())
        .or_else(|| p.devices.iter().find_map(|d| d.name.as_deref()))
        .filter(|d| !d.is_empty())
}

/// The two sides' devices and models, where they differ: the change then
/// is not the code's alone.
fn differences(a: &Profile, b: &Profile) -> Vec<String> {
    let mut notes = Vec::new();
    if let (Some(x), Some(y)) = (device_of(a), device_of(b)) {
        if x != y {
            notes.push(format!(
                "the two sides ran on different devices ({x} -> {y}): the change is not the code's alone"
            ));
        }
    }
    if let (Some(x), Some(y)) = (a.model.as_deref(), b.model.as_deref()) {
        if x != y {
            notes.push(format!(
                "the two sides ran different models ({x} -> {y}): their steps measure different work"
            ));
        }
    }
    notes
}

/// Changes below this share are reported as "same".
const SAME_PCT: f64 = 1.0;

struct Spec {
    metric: &'static str,
    label: &'static str,
    unit: Unit,
    better: Better,
    get: fn(&Profile) -> Option<f64>,
    /// Key of the per-metric std in `metrics_std`.
    std_key: Option<&'static str>,
}

/// Not a CPU run: a CPU run has no GPU figures to compare, only zeros.
fn on_gpu(p: &Profile) -> bool {
    !crate::profile::schema::cpu_run(&p.config, &p.extras, &p.figures, &p.health)
}

fn ms_per_image(p: &Profile) -> Option<f64> {
    p.batch().filter(|_| p.figures.step_ms > 0.0).map(|b| round(p.figures.step_ms / b, 3))
}

const SPECS: &[Spec] = &[
    Spec {
        metric: "img_per_s",
        label: "img/s",
        unit: Unit::Count,
        better: Better::Higher,
        get: |p| p.figures.img_per_s,
        std_key: None,
    },
    Spec {
        metric: "ms_per_image",
        label: "ms/image",
        unit: Unit::Ms,
        better: Better::Lower,
        get: ms_per_image,
        std_key: Some("ms_per_image"),
    },
    Spec {
        metric: "step_ms",
        label: "step",
        unit: Unit::Ms,
        better: Better::Lower,
        get: |p| Some(p.figures.step_ms),
        std_key: Some("step_ms"),
    },
    Spec {
        metric: "latency_p50_ms",
        label: "latency p50",
        unit: Unit::Ms,
        better: Better::Lower,
        get: |p| p.figures.latency.as_ref().map(|l| l.p50_ms),
        std_key: None,
    },
    Spec {
        metric: "latency_p99_ms",
        label: "latency p99",
        unit: Unit::Ms,
        better: Better::Lower,
        get: |p| p.figures.latency.as_ref().map(|l| l.p99_ms),
        std_key: None,
    },
    Spec {
        metric: "gpu_util",
        label: "GPU util",
        unit: Unit::Fraction,
        better: Better::Higher,
        get: |p| on_gpu(p).then_some(p.figures.gpu_util),
        std_key: Some("gpu_util"),
    },
    Spec {
        metric: "gpu_busy_ms_per_step",
        label: "GPU busy",
        unit: Unit::MsPerStep,
        better: Better::Lower,
        get: |p| on_gpu(p).then_some(p.figures.gpu_busy_ms_per_step),
        std_key: Some("gpu_busy_ms_per_step"),
    },
    Spec {
        metric: "host_overhead_ms_per_step",
        label: "host overhead",
        unit: Unit::MsPerStep,
        better: Better::Lower,
        // A CPU run has no GPU to wait on the host: its share in ops instead.
        get: |p| p.extras.host_in_ops_frac.is_none().then_some(p.figures.host_overhead_ms_per_step),
        std_key: Some("host_overhead_ms_per_step"),
    },
    Spec {
        metric: "host_in_ops_frac",
        label: "in CPU ops",
        unit: Unit::Fraction,
        better: Better::Higher,
        get: |p| p.extras.host_in_ops_frac,
        std_key: None,
    },
    Spec {
        metric: "idle_ms",
        label: "GPU idle",
        unit: Unit::MsPerStep,
        better: Better::Lower,
        get: |p| p.idle.as_ref().filter(|_| on_gpu(p)).map(|i| i.ms_per_step),
        std_key: Some("idle_ms"),
    },
    Spec {
        metric: "launches_per_step",
        label: "launches/step",
        unit: Unit::Count,
        better: Better::Lower,
        get: |p| on_gpu(p).then_some(p.figures.launches_per_step),
        std_key: Some("launches_per_step"),
    },
    Spec {
        metric: "dataload_ms",
        label: "dataload",
        unit: Unit::MsPerStep,
        better: Better::Lower,
        get: |p| p.figures.dataload_ms,
        std_key: Some("dataload_ms"),
    },
    Spec {
        metric: "tensorcore_pct",
        label: "Tensor Cores",
        unit: Unit::Percent,
        better: Better::Higher,
        get: |p| on_gpu(p).then_some(p.figures.tensorcore_pct),
        std_key: Some("tensorcore_pct"),
    },
    Spec {
        metric: "peak_vram_mb",
        label: "peak VRAM",
        unit: Unit::Mb,
        better: Better::Lower,
        get: |p| p.figures.peak_vram_mb,
        std_key: None,
    },
];

/// Why no significance call can be made when a side ran on a busy machine.
pub fn contended_refusal(a: &Profile, b: &Profile) -> Option<String> {
    let why = |p: &Profile| crate::conditions::Conditions::contended_in(p.host.as_ref());
    let sides: Vec<String> = [("before", why(a)), ("after", why(b))]
        .into_iter()
        .filter_map(|(side, w)| Some(format!("the {side} side ran contended ({})", w?)))
        .collect();
    (!sides.is_empty()).then(|| format!("no significance call: {}", sides.join("; ")))
}

pub fn compare(a: &Profile, b: &Profile, before: &str, after: &str) -> Comparison {
    let (na, nb) = (a.img_per_s_n(), b.img_per_s_n());
    let refusal = contended_refusal(a, b);
    let metrics = SPECS
        .iter()
        .filter_map(|s| {
            let (x, y) = ((s.get)(a), (s.get)(b));
            if x.is_none() && y.is_none() {
                return None;
            }
            let (sa, sb) = match s.std_key {
                None if s.metric == "img_per_s" => (a.img_per_s_std, b.img_per_s_std),
                None => (None, None),
                Some(k) => (a.metrics_std.get(k).copied(), b.metrics_std.get(k).copied()),
            };
            let significance = match (x, y) {
                _ if refusal.is_some() => Significance {
                    n: [na, nb],
                    std: [sa, sb],
                    significant: None,
                    significance: refusal.clone().unwrap_or_default(),
                },
                (Some(x), Some(y)) => significance(x, y, sa, sb, na, nb),
                _ => Significance {
                    n: [na, nb],
                    std: [sa, sb],
                    significant: None,
                    significance: "not measured on both sides".into(),
                },
            };
            // A share's change is in points: 36.5% → 52.4% is +15.9 pts, not +44%.
            let points = match s.unit {
                Unit::Percent => Some(1.0),
                Unit::Fraction => Some(100.0),
                _ => None,
            };
            let change_pts = match (x, y, points) {
                (Some(x), Some(y), Some(k)) => Some(round((y - x) * k, 1)),
                _ => None,
            };
            let change_pct = match (x, y) {
                _ if points.is_some() => None,
                (Some(x), Some(y)) if x != 0.0 => Some(round((y - x) / x * 100.0, 1)),
                _ => None,
            };
            let improved = match (x, y) {
                (Some(x), Some(y)) if x != y => Some(match s.better {
                    Better::Higher => y > x,
                    Better::Lower => y < x,
                }),
                _ => None,
            };
            // Both sides AMD: their matrix units are Matrix Cores; one
            // side each: both names.
            let label = match s.metric {
                "tensorcore_pct" if a.matrix_units() == b.matrix_units() => a.matrix_units(),
                "tensorcore_pct" => "Tensor / Matrix Cores",
                _ => s.label,
            };
            Some(MetricDelta {
                metric: s.metric,
                label,
                unit: s.unit,
                before: x,
                after: y,
                change_pct,
                change_pts,
                better: s.better,
                improved,
                significance,
            })
        })
        .collect();
    let (ma, mb) = (a.mode(), b.mode());
    let warning = (ma != mb).then(|| {
        format!(
            "the two profiles' steps measure different work: {} before, {} after",
            ma.as_str(),
            mb.as_str()
        )
    });
    let rows = |xs: Vec<(String, f64)>, ys: Vec<(String, f64)>| row_deltas(xs, ys);
    let walls = a.phases.iter().chain(&b.phases).all(|p| p.wall_ms_per_step.is_some());
    let measure = if walls { PhaseMeasure::Wall } else { PhaseMeasure::Gpu };
    Comparison {
        before: before.to_string(),
        after: after.to_string(),
        mode: [ma, mb],
        warning,
        notes: differences(a, b),
        metrics,
        bound: [a.bound.clone(), b.bound.clone()],
        categories: rows(
            a.categories.iter().map(|c| (c.name.to_string(), c.ms_per_step)).collect(),
            b.categories.iter().map(|c| (c.name.to_string(), c.ms_per_step)).collect(),
        ),
        phases_measure: measure,
        phases: if a.phases.iter().chain(&b.phases).all(|p| measure.of(p) == 0.0) {
            Vec::new()
        } else {
            rows(
                a.phases.iter().map(|p| (p.phase.clone(), measure.of(p))).collect(),
                b.phases.iter().map(|p| (p.phase.clone(), measure.of(p))).collect(),
            )
        },
        idle: rows(idle_rows(a), idle_rows(b)),
        kernels: rows(
            a.kernels.iter().map(|k| (k.raw_name.clone(), k.ms_per_step)).collect(),
            b.kernels.iter().map(|k| (k.raw_name.clone(), k.ms_per_step)).collect(),
        ),
        gates: Vec::new(),
    }
}

/// Idle ms per step by cause.
fn idle_rows(p: &Profile) -> Vec<(String, f64)> {
    p.idle
        .iter()
        .flat_map(|i| i.causes.iter().map(|c| (c.cause.as_str().to_string(), c.ms_per_step)))
        .collect()
}

/// What a comparison's phases are compared on: one measure for every
/// row of both sides, never a wall time against a GPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PhaseMeasure {
    /// The phase's wall time per step.
    Wall,
    /// The time of the kernels launched in the phase per step.
    Gpu,
}

impl PhaseMeasure {
    fn of(self, p: &crate::profile::PhaseRow) -> f64 {
        match self {
            PhaseMeasure::Wall => p.wall_ms_per_step.unwrap_or(0.0),
            PhaseMeasure::Gpu => p.gpu_ms_per_step,
        }
    }

    /// The phases section's heading: `phases (wall ms/step)`.
    pub fn heading(self) -> &'static str {
        match self {
            PhaseMeasure::Wall => "wall ms",
            PhaseMeasure::Gpu => "GPU ms",
        }
    }
}

fn row_deltas(before: Vec<(String, f64)>, after: Vec<(String, f64)>) -> Vec<RowDelta> {
    let mut all: IndexMap<String, (Option<f64>, Option<f64>)> = IndexMap::new();
    for (n, v) in before {
        all.entry(n).or_default().0 = Some(v);
    }
    for (n, v) in after {
        all.entry(n).or_default().1 = Some(v);
    }
    let mut out: Vec<RowDelta> = all
        .into_iter()
        .map(|(name, (x, y))| {
            let delta = y.unwrap_or(0.0) - x.unwrap_or(0.0);
            let change_pct = match (x, y) {
                (Some(x), Some(y)) if x != 0.0 => Some(round((y - x) / x * 100.0, 1)),
                _ => None,
            };
            let status = match (x, y) {
                (None, Some(_)) => RowStatus::Appeared,
                (Some(_), None) => RowStatus::Disappeared,
                _ if change_pct.is_none_or(|c| c.abs() < SAME_PCT) => RowStatus::Same,
                _ if delta < 0.0 => RowStatus::Faster,
                _ => RowStatus::Slower,
            };
            RowDelta {
                name,
                before_ms: x,
                after_ms: y,
                delta_ms: round(delta, 4),
                change_pct,
                status,
            }
        })
        .collect();
    out.sort_by(|p, q| {
        q.delta_ms.abs().total_cmp(&p.delta_ms.abs()).then_with(|| p.name.cmp(&q.name))
    });
    out
}

impl Comparison {
    /// The kernels whose time changed, largest change first: what the
    /// "largest changes" list shows (unchanged ones would fill it by name).
    pub fn changed_kernels(&self) -> Vec<RowDelta> {
        self.kernels
            .iter()
            .filter(|r| r.delta_ms != 0.0 || r.before_ms.is_none() || r.after_ms.is_none())
            .cloned()
            .collect()
    }

    /// Said instead of the list where no kernel changed.
    pub fn no_kernel_changed(&self) -> Option<String> {
        (!self.kernels.is_empty() && self.changed_kernels().is_empty())
            .then(|| format!("none of the {} kernels changed its ms/step", self.kernels.len()))
    }

    /// Compares img/s, the headline figure.
    pub fn throughput(&self) -> Option<&MetricDelta> {
        self.metrics.iter().find(|m| m.metric == "img_per_s")
    }
    pub fn modes_differ(&self) -> bool {
        self.mode[0] != self.mode[1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Figures;

    #[test]
    fn two_se_rule_matches_the_reference_example() {
        // Reference: 4.59 ± 1.08 (n=3) → 7.55 ± 1.86 (n=3): |d|=3.0 vs 2*SE=2.5, significant.
        let s = significance(4.59, 7.55, Some(1.08), Some(1.86), 3, 3);
        assert_eq!(s.significant, Some(true));
        let se2 = 2.0 * ((1.08f64 * 1.08 + 1.86 * 1.86) / 3.0).sqrt();
        assert!((se2 - 2.483).abs() < 1e-3);
        assert_eq!(s.significance, "|d|=2.960 vs 2*SE=2.484");
        // Same mean: not significant.
        assert_eq!(significance(4.4, 4.4, Some(0.1), Some(0.1), 3, 3).significant, Some(false));
        // One side single: no call, and that side named.
        let single = significance(4.4, 5.0, Some(0.1), None, 3, 1);
        assert_eq!(single.significant, None);
        assert!(single.significance.starts_with("one run on the after side ("), "{single:?}");
        // Both: one run on each side.
        let both = significance(4.4, 5.0, None, None, 1, 1);
        assert_eq!(both.significant, None);
        assert_eq!(both.significance, SINGLE_RUN);
    }

    /// A repeat profile: img/s 10 ± 0.1 or 12 ± 0.1 over 3 trials, ran
    /// with other processes using `other` cores of 2.
    fn repeat(img_per_s: f64, other: f64) -> Profile {
        let conditions = crate::conditions::Conditions {
            cpus: 2,
            threads: 2,
            window_s: 2.0,
            other_cores: Some(other),
            contended: other > 0.25,
            contended_why: (other > 0.25)
                .then(|| format!("other processes used {other} of a core")),
            ..Default::default()
        };
        let mut p = Profile {
            figures: Figures {
                img_per_s: Some(img_per_s),
                step_ms: 1000.0 / img_per_s,
                ..Default::default()
            },
            img_per_s_std: Some(0.1),
            img_per_s_n: Some(3),
            ..Default::default()
        };
        crate::conditions::set_in_host(&mut p.host, Some(&conditions));
        p
    }

    #[test]
    fn a_contended_side_gets_no_significance_call() {
        let quiet = |v| repeat(v, 0.05);
        let c = compare(&quiet(10.0), &quiet(12.0), "a", "b");
        assert_eq!(
            c.metrics[0].significance.significant,
            Some(true),
            "two quiet sides keep the 2·SE call"
        );
        let c = compare(&quiet(10.0), &repeat(12.0, 0.9), "a", "b");
        let s = &c.metrics[0].significance;
        assert_eq!(s.significant, None);
        assert_eq!(
            s.significance,
            "no significance call: the after side ran contended (other processes used 0.9 of a core)"
        );
        assert!(c.metrics.iter().all(|m| m.significance.significant.is_none()));
        let c = compare(&repeat(10.0, 1.5), &repeat(12.0, 0.9), "a", "b");
        assert!(c.metrics[0].significance.significance.contains(
            "the before side ran contended (other processes used 1.5 of a core); the after side"
        ));
        // Profiles without host.conditions (older ones, LibreYOLO 1.6's) are not judged.
        let old = Profile {
            figures: Figures { img_per_s: Some(12.0), step_ms: 83.0, ..Default::default() },
            img_per_s_std: Some(0.1),
            img_per_s_n: Some(3),
            ..Default::default()
        };
        assert_eq!(
            compare(&quiet(10.0), &old, "a", "b").metrics[0].significance.significant,
            Some(true)
        );
    }

    #[test]
    fn row_deltas_classify_changes() {
        let d = row_deltas(
            vec![("a".into(), 10.0), ("b".into(), 5.0), ("c".into(), 1.0)],
            vec![("a".into(), 8.0), ("b".into(), 5.01), ("d".into(), 2.0)],
        );
        let status = |n: &str| d.iter().find(|r| r.name == n).unwrap().status;
        assert_eq!(status("a"), RowStatus::Faster);
        assert_eq!(status("b"), RowStatus::Same);
        assert_eq!(status("c"), RowStatus::Disappeared);
        assert_eq!(status("d"), RowStatus::Appeared);
        assert_eq!(d[0].name, "a", "largest change first");
    }
}
