//! The capture lens: what `profile infer` and `profile run` say once their
//! files are written (docs/spec.md §2.1, §2.2), from the profile they just
//! wrote (or the aggregate of their `--repeat` trials). The capture engine
//! builds it; `render::text::capture` and `render::json` print it, as every
//! reader prints its lens.

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::profile::{Mode, Profile, Stages, Verdict};

/// A capture's report: where its profile is and its headline figures.
/// The JSON keys and their order are the `--json` output of the capture.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Capture {
    /// The profile written (`<project>/infer/profile.json`, or the repeat
    /// aggregate beside it).
    pub profile: String,
    /// The trace written with it (`None` with `--no-trace`).
    pub trace: Option<String>,
    pub mode: Mode,
    pub img_per_s: Option<f64>,
    pub img_per_s_std: Option<f64>,
    pub img_per_s_n: u32,
    /// The figures only one of the two captures reports.
    #[serde(flatten)]
    pub detail: Detail,
}

/// What a capture of one mode adds to its report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Detail {
    Inference(Inference),
    Training(Training),
}

/// `profile infer`: latency percentiles and the stage split.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Inference {
    pub latency_p50_ms: f64,
    pub latency_p90_ms: f64,
    pub latency_p99_ms: f64,
    pub bound: Verdict,
    pub bound_why: String,
    pub stages_ms: Option<Stages>,
    /// `config.device` as the profile records it.
    pub device: Value,
    pub weights_source: Value,
}

/// `profile run`: the step and how much of it waits on the loader.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Training {
    pub bound: Verdict,
    pub bound_why: String,
    pub gpu_util: f64,
    pub step_ms: f64,
    pub dataload_frac: Option<f64>,
    pub device: Value,
}

fn config(p: &Profile, key: &str) -> Value {
    p.config.as_map().get(key).cloned().unwrap_or(Value::Null)
}

impl Capture {
    fn head(p: &Profile, path: &Path, mode: Mode, detail: Detail) -> Capture {
        Capture {
            profile: path.display().to_string(),
            trace: p.trace.clone(),
            mode,
            img_per_s: p.figures.img_per_s,
            img_per_s_std: p.img_per_s_std,
            img_per_s_n: p.img_per_s_n.unwrap_or(1),
            detail,
        }
    }

    /// The report of `profile infer`, whose profile `p` was written at `path`.
    pub fn inference(p: &Profile, path: &Path) -> Capture {
        let lat = p.figures.latency.clone().unwrap_or_default();
        let detail = Inference {
            latency_p50_ms: lat.p50_ms,
            latency_p90_ms: lat.p90_ms,
            latency_p99_ms: lat.p99_ms,
            bound: p.bound.clone(),
            bound_why: p.bound_why.clone(),
            stages_ms: p.figures.stages_ms.clone(),
            device: config(p, "device"),
            weights_source: config(p, "weights_source"),
        };
        Capture::head(p, path, Mode::Inference, Detail::Inference(detail))
    }

    /// The report of `profile run`, whose profile `p` was written at `path`.
    pub fn training(p: &Profile, path: &Path) -> Capture {
        let detail = Training {
            bound: p.bound.clone(),
            bound_why: p.bound_why.clone(),
            gpu_util: p.figures.gpu_util,
            step_ms: p.figures.step_ms,
            dataload_frac: p.figures.dataload_frac,
            device: config(p, "device"),
        };
        Capture::head(p, path, Mode::Training, Detail::Training(detail))
    }
}
