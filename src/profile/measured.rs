//! What a capture measured besides the trace: the `profile_summary.json`
//! sidecar. The shape is the reference implementation's, so its sidecars
//! are read too; our capture writes the same file, and the analysis turns
//! trace + sidecar into `profile.json` (one path for both).

use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema::{Latency, Stages};

/// File name of the sidecar, beside `profile_trace.json`.
pub const SIDECAR: &str = "profile_summary.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Measurements {
    /// The run's configuration (model, device, batch, imgsz, …).
    pub meta: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<RealTiming>,
    /// Synced wall time per phase (training), ms.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub composition_ms: IndexMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Synced wall time per inference stage, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages_ms: Option<Stages>,
    /// The reference keeps `peak_vram_mb` here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_vram_mb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Value>,
}

/// Unsynced timing from the first half of the measured window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RealTiming {
    pub step_ms: f64,
    pub img_per_s: Option<f64>,
    pub dataload_ms: Option<f64>,
    pub dataload_frac: Option<f64>,
}

impl Measurements {
    /// Reads the sidecar beside a trace, if there is a valid one.
    pub fn beside(trace: &Path) -> Option<Measurements> {
        let path = trace.with_file_name(SIDECAR);
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub fn mode(&self) -> Option<&str> {
        self.mode.as_deref().or_else(|| self.meta.get("mode").and_then(Value::as_str))
    }

    pub fn peak_vram_mb(&self) -> Option<f64> {
        self.peak_vram_mb.or_else(|| self.analysis.as_ref()?.get("peak_vram_mb")?.as_f64())
    }

    /// Mean step time measured without extra syncs.
    pub fn step_ms(&self) -> Option<f64> {
        self.latency
            .as_ref()
            .map(|l| l.mean_ms)
            .or_else(|| self.real.as_ref().map(|r| r.step_ms))
            .filter(|v| *v > 0.0)
    }
}
