//! `profile summary`: the headline figures and the verdict.

use schemars::JsonSchema;
use serde::Serialize;

use crate::profile::{
    Attribution, CategoryRow, DeviceRow, Efficiency, ExtraFigures, Figures, HealthRow, IdleAccount,
    KernelRow, LeverRow, Mode, PhaseGpuRow, Profile, RunConfig, StepModelView, StepTime, StreamRow,
    TraceFacts, Verdict,
};

/// What `profile summary` shows, in every form (text, `--json`, the
/// explorer's pane). The profile's headline figures come as its own
/// [`Figures`] and [`ExtraFigures`], flattened, so `--json` writes them as
/// top-level keys in `profile.json`'s order; what is listed here is either
/// derived (`mode`, `trustworthy`, `steps`, `contended`, `img_per_s_n`) or
/// a field that is not next to the others in [`Profile`].
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Summary {
    pub trace: Option<String>,
    pub mode: Mode,
    /// The profile's `model` as labelled: `(random init)` added where the
    /// capture loaded no weights (`config.weights_source`).
    pub model: Option<String>,
    pub config: RunConfig,
    pub bound: Verdict,
    pub bound_why: String,
    /// False when the profile was taken under VRAM thrash
    /// (`figures.memory_pressure`), or a health finding says the window
    /// cannot support a verdict (`cannot tell`): what a script gates on.
    pub trustworthy: bool,
    /// How the window's step times spread (two or more steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepSpread>,
    /// The warning shown above the verdict when the capture ran on a busy
    /// machine (`host.conditions.contended`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contended: Option<String>,
    /// `step_ms` … `stages_ms`, as in the profile.
    #[serde(flatten)]
    pub figures: Figures,
    pub img_per_s_std: Option<f64>,
    /// Repeat count of img/s (1 for a single run).
    pub img_per_s_n: u32,
    /// Communication, graph launches, inferred phases, when the trace has them.
    #[serde(flatten)]
    pub extras: ExtraFigures,
    /// Why the GPU waited: idle time by cause (GPU traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleAccount>,
    /// How close to the hardware (GPU traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<Efficiency>,
    /// The step model: critical path and what-ifs (GPU traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_model: Option<StepModelView>,
    /// What about the window makes its figures or verdict less true
    /// (docs/analysis.md §15).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<HealthRow>,
    /// The levers the trace supports, largest projected saving first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levers: Vec<LeverRow>,
    /// How the work already runs: the levers' preconditions (traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<TraceFacts>,
    pub categories: Vec<CategoryRow>,
    pub phases_gpu: Vec<PhaseGpuRow>,
    pub top_kernels: Vec<KernelRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Summary {
    /// What its devices call their matrix units (Tensor or Matrix Cores).
    pub fn matrix_units(&self) -> &'static str {
        crate::profile::schema::matrix_units(&self.devices)
    }

    /// A run on the CPU: its capture says so, or its trace has CPU ops and
    /// no GPU work. GPU utilisation, kernels and host overhead say nothing
    /// about it.
    pub fn cpu_run(&self) -> bool {
        crate::profile::schema::cpu_run(&self.config, &self.extras, &self.figures, &self.health)
    }

    /// The intra-op threads the capture used, where it says.
    pub fn threads(&self) -> Option<u64> {
        self.config.threads()
    }

    /// `gpu_util_raw`, where it says something the union does not: two
    /// streams of one device ran kernels in the window, and their kernel
    /// time sums to more than its union (concurrency, counted once in
    /// `gpu_util`). None on a trace whose devices each ran one stream.
    pub fn stream_concurrency(&self) -> Option<f64> {
        let mut busy: Vec<i64> =
            self.streams.iter().filter(|s| s.busy_ms_per_step > 0.0).map(|s| s.device).collect();
        busy.sort_unstable();
        let two_on_one = busy.windows(2).any(|w| w[0] == w[1]);
        (two_on_one && self.figures.gpu_util_raw > self.figures.gpu_util + 0.005)
            .then_some(self.figures.gpu_util_raw)
    }
}

/// A step this far from the median (as a ratio, either way) is an outlier.
pub const OUTLIER_RATIO: f64 = 1.5;

/// The window's step times: every step in time order, their spread, and
/// the outliers (a step [`OUTLIER_RATIO`]× slower or faster than the median:
/// a GC pause, a checkpoint, a recompile, a busy machine).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct StepSpread {
    pub min_ms: f64,
    pub median_ms: f64,
    pub max_ms: f64,
    pub each_ms: Vec<f64>,
    /// `ProfilerStep#N` numbers of the outliers.
    pub outliers: Vec<u64>,
}

pub fn step_spread(steps: &[StepTime]) -> Option<StepSpread> {
    if steps.len() < 2 {
        return None;
    }
    let each: Vec<f64> = steps.iter().map(|s| s.ms).collect();
    let median = crate::util::median(&each);
    let outliers = steps
        .iter()
        .filter(|s| {
            median > 0.0 && (s.ms > median * OUTLIER_RATIO || s.ms * OUTLIER_RATIO < median)
        })
        .map(|s| s.step)
        .collect();
    let (min_ms, max_ms) =
        each.iter().fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    Some(StepSpread {
        min_ms,
        median_ms: crate::util::round(median, 3),
        max_ms,
        each_ms: each,
        outliers,
    })
}

/// One line saying the machine distorted the capture, if it did.
pub fn contended_warning(p: &Profile) -> Option<String> {
    let why = crate::conditions::Conditions::contended_in(p.host.as_ref())?;
    Some(format!("CONTENDED: {why} — timings here are distorted; measure again on a quiet machine"))
}

pub fn summary(p: &Profile) -> Summary {
    Summary {
        trace: p.trace.clone(),
        mode: p.mode(),
        model: p.model.as_deref().map(|m| p.config.model_label(m)),
        config: p.config.clone(),
        bound: p.bound.clone(),
        bound_why: p.bound_why.clone(),
        trustworthy: !p.untrustworthy(),
        contended: contended_warning(p),
        steps: step_spread(&p.step_times),
        figures: p.figures.clone(),
        img_per_s_std: p.img_per_s_std,
        img_per_s_n: p.img_per_s_n(),
        extras: p.extras.clone(),
        idle: p.idle.clone(),
        efficiency: p.efficiency.clone(),
        health: p.health.clone(),
        levers: p.levers.clone(),
        facts: p.facts.clone(),
        step_model: p.step_model.clone(),
        categories: p.categories.clone(),
        phases_gpu: p.phases_gpu.clone(),
        top_kernels: p.top_kernels.clone(),
        devices: p.devices.clone(),
        streams: p.streams.clone(),
        attribution: p.attribution.clone(),
        warnings: p
            .warnings
            .iter()
            .cloned()
            .chain(crate::conditions::Conditions::neighbours_in(p.host.as_ref()))
            .chain(vram_counted(p))
            .collect(),
    }
}

/// Where `peak VRAM` is n/a but the trace's memory events give a peak
/// counted from their first event (sizes without totals: PyTorch before
/// 1.10), which is not the allocated total (docs/spec.md, `peak_vram_mb`):
/// said, with that figure and where it is (audit s12 L5).
fn vram_counted(p: &Profile) -> Option<String> {
    if p.figures.peak_vram_mb.is_some() {
        return None;
    }
    let counted: Vec<String> = p
        .memory
        .iter()
        .filter(|d| !d.totals && d.device != "cpu" && d.peak_allocated_mb > 0.0)
        .map(|d| format!("{} {:.1} MB", d.device, d.peak_allocated_mb))
        .collect();
    (!counted.is_empty()).then(|| {
        format!(
            "peak VRAM n/a: the trace's memory events record sizes, not totals, so what was allocated before its first event is unknown; counted from that event, `profile memory` gives a peak of {}",
            counted.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_times_spread_and_outliers() {
        let t = |step, ms| StepTime { step, ms };
        assert_eq!(step_spread(&[t(1, 10.0)]), None, "one step has no spread");
        let s = step_spread(&[t(1, 10.0), t(2, 11.0), t(3, 30.0), t(4, 10.5), t(5, 4.0)]).unwrap();
        assert_eq!((s.min_ms, s.median_ms, s.max_ms), (4.0, 10.5, 30.0));
        assert_eq!(s.outliers, vec![3, 5], "3x slower and 2.6x faster than the median");
        assert_eq!(s.each_ms, vec![10.0, 11.0, 30.0, 10.5, 4.0], "time order kept");
    }

    #[test]
    fn busy_cpus_a_pinned_capture_could_not_use_are_a_note_not_contention() {
        let mut p = Profile::default();
        let pinned = crate::conditions::Conditions {
            cpus: 1,
            threads: 1,
            other_cores: Some(0.01),
            other_cores_elsewhere: Some(1.0),
            ..Default::default()
        };
        crate::conditions::set_in_host(&mut p.host, Some(&pinned));
        let s = summary(&p);
        assert_eq!(s.contended, None);
        assert_eq!(
            s.warnings,
            [
                "other processes kept 1.0 of a core busy on CPUs this capture could not use (it ran on 1 CPU): not contention, but they share its caches and memory bandwidth"
            ]
        );
        let calm = crate::conditions::Conditions { other_cores_elsewhere: Some(0.1), ..pinned };
        crate::conditions::set_in_host(&mut p.host, Some(&calm));
        assert!(summary(&p).warnings.is_empty(), "a tenth of a core elsewhere is noise");
    }

    #[test]
    fn a_contended_capture_is_said_above_the_verdict() {
        let mut p = Profile::default();
        assert_eq!(summary(&p).contended, None, "no host.conditions: nothing to say");
        let busy = crate::conditions::Conditions {
            contended: true,
            contended_why: Some("other processes used 0.9 of a core during the 2.0 s window on 2 cores (2 threads ours)".into()),
            ..Default::default()
        };
        crate::conditions::set_in_host(&mut p.host, Some(&busy));
        let s = summary(&p);
        assert_eq!(
            s.contended.as_deref(),
            Some(
                "CONTENDED: other processes used 0.9 of a core during the 2.0 s window on 2 cores (2 threads ours) — timings here are distorted; measure again on a quiet machine"
            )
        );
        let text = crate::render::text::summary(&s);
        let warn = text.lines().position(|l| l.starts_with("** CONTENDED")).expect("printed");
        let verdict = text.lines().position(|l| l.starts_with(">> ")).unwrap();
        assert!(warn < verdict, "{text}");
    }
}
