//! What a capture measured besides the trace: the `profile_summary.json`
//! sidecar. The shape is the reference implementation's, so its sidecars
//! are read too; our capture writes the same file, and the analysis turns
//! trace + sidecar into `profile.json` (one path for both).

use std::path::Path;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kinds::Mode;
use crate::error::{Error, Result};

/// File name of the sidecar, beside `profile_trace.json`.
pub const SIDECAR: &str = "profile_summary.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Measurements {
    /// The run's configuration (model, device, batch, imgsz, …).
    pub meta: RunConfig,
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
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::kinds::mode_or_none"
    )]
    pub mode: Option<Mode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Value>,
}

/// Latency percentiles a capture timed itself.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Latency {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub n: u64,
}

impl Latency {
    /// What the samples can say of the tail: the percentiles that are the
    /// slowest sample itself (nearest rank, so every high percentile of a
    /// few samples is), named for the text; empty where none is.
    pub fn at_the_slowest(&self) -> Vec<&'static str> {
        [("p90", self.p90_ms), ("p99", self.p99_ms)]
            .into_iter()
            .filter(|(_, v)| self.n > 0 && *v >= self.max_ms)
            .map(|(name, _)| name)
            .collect()
    }
}

/// Wall time per inference stage, as the capture timed it.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Stages {
    pub preprocess: Option<f64>,
    pub forward: Option<f64>,
    pub postprocess: Option<f64>,
}

/// The run's configuration as a capture records it: `meta` in the
/// sidecar, `config` in `profile.json`. Kept as the object the file holds
/// (its keys in their order, and any key a writer adds), so it is written
/// back byte for byte; read through the accessors below, which name each
/// key once.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct RunConfig(Map<String, Value>);

impl From<Map<String, Value>> for RunConfig {
    fn from(map: Map<String, Value>) -> RunConfig {
        RunConfig(map)
    }
}

/// `weights_source` of a capture that loaded no weights.
pub const RANDOM_INIT: &str = "random-init";
/// What a model's label says of it.
const RANDOM_INIT_SAID: &str = " (random init)";

impl RunConfig {
    /// The object as written (to show or copy it whole).
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
    /// Sets a key (writers: the capture, tests).
    pub fn insert(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_string(), value);
    }
    fn str_of(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The model as readers label it: `model` as written, but where the
    /// capture loaded no weights (`weights_source: random-init`) the name
    /// without its file extension and `(random init)` — no weights file
    /// was read, so `LibreYOLO9t.pt` would say what did not happen.
    pub fn model_label(&self, model: &str) -> String {
        if self.str_of("weights_source") != Some(RANDOM_INIT) || model.ends_with(RANDOM_INIT_SAID) {
            return model.to_string();
        }
        let stem =
            model.strip_suffix(".pt").or_else(|| model.strip_suffix(".pth")).unwrap_or(model);
        format!("{stem}{RANDOM_INIT_SAID}")
    }

    /// Images per step (`batch`), as written (a number, for display).
    pub fn batch_value(&self) -> Option<&Value> {
        self.0.get("batch")
    }
    /// Images per step (`batch`), when it is a number.
    pub fn batch(&self) -> Option<f64> {
        self.batch_value().and_then(Value::as_f64)
    }
    /// The measured runs asked for (`runs`), when written.
    pub fn runs(&self) -> Option<u64> {
        self.0.get("runs").and_then(Value::as_u64)
    }
    /// `cpu`, or the CUDA device's name.
    pub fn device(&self) -> Option<&str> {
        self.str_of("device")
    }
    /// Whether the capture ran on the CPU; `None` when no device is named.
    pub fn on_cpu(&self) -> Option<bool> {
        self.device().map(|d| d == "cpu")
    }
    pub fn model(&self) -> Option<&str> {
        self.str_of("model")
    }
    /// The mode the capture names (LibreYOLO 1.6 writes it here).
    pub fn mode(&self) -> Option<Mode> {
        self.str_of("mode").and_then(Mode::parse)
    }
    /// Whether the inference graph had BatchNorm folded (`--fuse`).
    pub fn fused(&self) -> Option<bool> {
        self.0.get("fused").and_then(Value::as_bool)
    }
    /// Intra-op CPU threads of a CPU capture.
    pub fn threads(&self) -> Option<u64> {
        self.0.get("threads").and_then(Value::as_u64)
    }
    /// Kineto's `trace_id` of the trace the capture measured with.
    pub fn trace_id(&self) -> Option<&str> {
        self.str_of(TRACE_ID_KEY)
    }
    /// The file name the capture had the profiler export to.
    pub fn trace_name(&self) -> Option<&str> {
        self.str_of(TRACE_NAME_KEY)
    }
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

/// The trace file names a capture writes beside its sidecar.
const TRACE_NAMES: [&str; 2] = ["profile_trace.json", "profile_trace.json.gz"];

/// Key of `meta` where a capture records Kineto's `trace_id` of the trace
/// it measured with (see [`crate::trace::trace_id`]).
pub const TRACE_ID_KEY: &str = "trace_id";
/// Key of `meta` where a capture records the file name it had the profiler
/// export to (Kineto writes it as `traceName`; the capture's temporary
/// `.profile_trace.XXXXXX.json` names are unique).
pub const TRACE_NAME_KEY: &str = "trace_name";

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl Measurements {
    /// The sidecar beside a trace and what reading it gave: `None` when
    /// there is none, `Err` (why) when it cannot be read as one.
    pub fn beside(trace: &Path) -> Option<(std::path::PathBuf, Result<Measurements>)> {
        let path = trace.with_file_name(SIDECAR);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                return Some((
                    path,
                    Err(Error::failed(format!("cannot read it: {e}")).caused_by(e)),
                ));
            }
        };
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
        let m = serde_json::from_slice(text)
            .map_err(|e| Error::failed(format!("not a measured-numbers file: {e}")).caused_by(e));
        Some((path, m))
    }

    /// Whether these numbers were measured with this trace. A sidecar that
    /// records the trace's Kineto `trace_id` (or the name the trace was
    /// exported as, Kineto's `traceName`) must match it; one that records
    /// neither (LibreYOLO 1.6's) is taken only beside a trace under the
    /// name the capture gives it, exported by a capture. `Err` says why not.
    pub fn belongs_to(
        &self,
        info: &crate::trace::TraceInfo,
        trace_file: Option<&Path>,
    ) -> Result<()> {
        match (self.meta.trace_id(), info.trace_id.as_deref()) {
            (Some(ours), Some(theirs)) if ours == theirs => return Ok(()),
            (Some(ours), Some(theirs)) => {
                return Err(Error::failed(format!(
                    "they belong to trace {ours}, and this is trace {theirs}"
                )));
            }
            (Some(ours), None) => {
                return Err(Error::failed(format!(
                    "they belong to trace {ours}, and this trace has no trace_id"
                )));
            }
            (None, _) => {}
        }
        match (self.meta.trace_name(), info.trace_name.as_deref()) {
            (Some(ours), Some(theirs)) if base_name(ours) == base_name(theirs) => return Ok(()),
            (Some(ours), Some(theirs)) => {
                return Err(Error::failed(format!(
                    "they belong to the trace exported as {ours}, and this one was exported as {theirs}"
                )));
            }
            _ => {}
        }
        let name = trace_file
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !TRACE_NAMES.contains(&name.as_str()) {
            return Err(Error::failed(format!(
                "they name no trace_id, and the capture writes its trace as profile_trace.json, not {name}"
            )));
        }
        if let Some(exported) = &info.trace_name {
            let base = base_name(exported);
            if !TRACE_NAMES.contains(&base) && !base.starts_with(".profile_trace.") {
                return Err(Error::failed(format!(
                    "they name no trace_id, and this trace was exported as {exported}, not by the capture"
                )));
            }
        }
        Ok(())
    }

    pub fn mode(&self) -> Option<Mode> {
        self.mode.or_else(|| self.meta.mode())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceInfo;

    fn with(key: &str, v: &str) -> Measurements {
        let mut m = Measurements::default();
        m.meta.insert(key, Value::from(v));
        m
    }

    #[test]
    fn a_sidecar_belongs_to_its_trace_only() {
        let info = |id: Option<&str>, name: Option<&str>| TraceInfo {
            trace_id: id.map(str::to_string),
            trace_name: name.map(str::to_string),
            ..Default::default()
        };
        let ours = Path::new("runs/x/profile_trace.json");
        let other = Path::new("runs/x/resnet.json");
        // Linked by id: the file name does not matter.
        assert!(with(TRACE_ID_KEY, "A1").belongs_to(&info(Some("A1"), None), Some(other)).is_ok());
        assert!(with(TRACE_ID_KEY, "A1").belongs_to(&info(Some("B2"), None), Some(ours)).is_err());
        assert!(with(TRACE_ID_KEY, "A1").belongs_to(&info(None, None), Some(ours)).is_err());
        // Linked by the exported name.
        let tmp = Some("/r/x/.profile_trace.Ab12Cd.json");
        assert!(
            with(TRACE_NAME_KEY, ".profile_trace.Ab12Cd.json")
                .belongs_to(&info(None, tmp), Some(ours))
                .is_ok()
        );
        assert!(
            with(TRACE_NAME_KEY, ".profile_trace.Zz99Zz.json")
                .belongs_to(&info(None, tmp), Some(ours))
                .is_err()
        );
        // No link (LibreYOLO 1.6): the capture's file names.
        let none = Measurements::default();
        assert!(
            none.belongs_to(&info(Some("X"), Some("runs/a/infer/profile_trace.json")), Some(ours))
                .is_ok()
        );
        assert!(
            none.belongs_to(&info(None, tmp), Some(Path::new("d/profile_trace.json.gz"))).is_ok()
        );
        assert!(none.belongs_to(&info(None, None), Some(other)).is_err());
        assert!(
            none.belongs_to(&info(None, Some("/w/worker0.pt.trace.json")), Some(ours)).is_err()
        );
        assert!(none.belongs_to(&info(None, None), None).is_err(), "a stream has no sidecar");
    }
}

#[cfg(test)]
mod model_label_tests {
    use super::*;

    #[test]
    fn a_model_without_weights_is_labelled_random_init() {
        let mut c = RunConfig::default();
        // LibreYOLO 1.6 and foreign profiles say nothing: as written.
        assert_eq!(c.model_label("LibreYOLO9t.pt"), "LibreYOLO9t.pt");
        c.insert("weights_source", Value::from("file"));
        assert_eq!(c.model_label("LibreYOLO9t.pt"), "LibreYOLO9t.pt");
        c.insert("weights_source", Value::from(RANDOM_INIT));
        assert_eq!(c.model_label("LibreYOLO9t.pt"), "LibreYOLO9t (random init)");
        assert_eq!(c.model_label("YOLOv9-t"), "YOLOv9-t (random init)");
        // A capture that wrote the label already: once.
        assert_eq!(c.model_label("LibreYOLO9t (random init)"), "LibreYOLO9t (random init)");
    }
}
