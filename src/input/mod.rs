//! Any reader input → a [`Profile`]: a path, a folder or standard input,
//! a profile (ours or the reference's, including its repeat files) or a
//! trace, which is analysed; and the rank traces of a distributed job
//! ([`ranks`]). What the arguments are — one input, a job's ranks, or
//! neither — is decided once, for every reader, by [`what`]. The kind of a
//! file is decided by content: a JSON object with a
//! libreyolo schema id is a profile; anything else is a trace. This sits
//! above the analysis and the lenses, which know nothing of files.

pub mod ranks;
mod what;

pub use what::{
    Chosen, Inputs, RankFile, Reads, What, folders_looked_into, json_files_in, rank_alone,
    rank_from_name, resolve_input, what,
};

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::analysis::model::StepModel;
use crate::analysis::timeline;
use crate::analysis::{self, Analysed, AnalyzeOptions, Sidecar};
use crate::error::{Error, Result};
use crate::profile::measured::Measurements;
use crate::profile::{ExtraFigures, Figures, Input, Profile, SCHEMA_ID};
use crate::trace::event::TOO_DEEP;
use crate::trace::seekgz::SPACING;
use crate::trace::{ReadOptions, Source};

/// How [`load`] reads an input.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// How a trace is read: threads, mapping, memory budget, progress.
    pub read: ReadOptions,
    /// Name the CPU op at each memory peak of a trace, from the same pass
    /// (`profile memory`; docs/analysis.md §9).
    pub peak_ops: bool,
    /// Index a trace file's steps for the Timeline in the same pass (the
    /// explorer: a step then opens with no pass of its own).
    pub timeline_index: bool,
    /// Keep a trace's step model (`what-if` beyond the standard ones).
    pub keep_model: bool,
}

/// What [`load`] read: the input, and the notices a reader prints on
/// stderr (measured numbers beside a trace that were not taken, an unknown
/// schema version, step names recorded more than once). The notices are in
/// the profile's warnings too.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub input: Input,
    pub notices: Vec<String>,
    /// With [`LoadOptions::timeline_index`], a trace file's step index.
    pub index: Option<timeline::StepIndex>,
    /// With [`LoadOptions::keep_model`], a trace's step model.
    pub model: Option<StepModel>,
}

/// Loads `arg` (a path, a folder or `-`, see [`resolve_input`]) as a
/// profile, analysing it first when it is a trace.
pub fn load(arg: impl AsRef<Path>, opts: LoadOptions) -> Result<Loaded> {
    let arg = arg.as_ref();
    let path = resolve_input(arg)?;
    let fail =
        |e: Error| Error::failed(format!("failed to analyse {}: {e}", arg.display())).caused_by(e);
    let src = if arg.as_os_str() == "-" {
        Source::stdin()
    } else {
        Source::path(&path)
            .map_err(|e| if e.exit_code() == crate::error::exit::USAGE { e } else { fail(e) })?
    };
    let found = src.file_path().and_then(Measurements::beside);
    let mut unread = None;
    let sidecar = match &found {
        Some((at, Ok(m))) => Sidecar::Found(m, at),
        Some((at, Err(why))) => {
            unread = Some(format!("measured numbers in {} ignored: {why}", at.display()));
            Sidecar::None
        }
        None => Sidecar::None,
    };
    let analyze = AnalyzeOptions {
        sidecar,
        read: opts.read.clone(),
        peak_ops: opts.peak_ops,
        keep_model: opts.keep_model,
    };
    let mut index = None;
    let analysed = match src.file_path().filter(|_| opts.timeline_index) {
        Some(file) => analysis::analyze_read(&src, analyze, |sink| {
            let (doc, ix) = timeline::read_indexed(file, SPACING, sink, &opts.read)?;
            index = ix.ok();
            Ok(doc)
        }),
        None => analysis::analyze(&src, analyze),
    };
    match analysed.map_err(fail)? {
        Some(Analysed { mut profile, mut notices, model }) => {
            profile.trace = Some(arg.to_string_lossy().into_owned());
            if let Some(n) = unread {
                profile.warnings.insert(0, n.clone());
                notices.insert(0, n);
            }
            Ok(Loaded { input: Input { path, profile, from_trace: true }, notices, index, model })
        }
        None => {
            let (profile, notices) = read_profile(&src, &opts.read).map_err(fail)?;
            let input = Input { path, profile, from_trace: false };
            Ok(Loaded { input, notices, index: None, model: None })
        }
    }
}

fn read_profile(src: &Source, opts: &ReadOptions) -> Result<(Profile, Vec<String>)> {
    let mut text = Vec::new();
    src.open(&opts.with_progress(crate::trace::Progress::Off))?
        .read_to_end(&mut text)
        .map_err(|e| Error::failed(format!("cannot read: {e}")).caused_by(e))?;
    let body = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        if e.to_string().contains("recursion limit") {
            Error::failed(format!(
                "invalid JSON: {} at line {} column {}",
                TOO_DEEP,
                e.line(),
                e.column()
            ))
            .caused_by(e)
        } else {
            Error::failed(format!("invalid JSON: {e}")).caused_by(e)
        }
    })?;
    let obj = value.as_object().ok_or_else(|| Error::failed("a profile must be a JSON object"))?;
    for (key, what) in [("step_ms", "a number"), ("bound", "a string")] {
        let ok = match obj.get(key) {
            Some(v) if key == "step_ms" => v.is_number(),
            Some(v) => v.is_string(),
            None => false,
        };
        if !ok {
            return Err(Error::failed(format!(
                "incomplete profile: `{key}` is missing or not {what}"
            )));
        }
    }
    let mut notices = Vec::new();
    if let Some(schema) = obj.get("schema").and_then(Value::as_str).filter(|s| *s != SCHEMA_ID) {
        notices.push(format!(
            "profile schema {schema} is not {SCHEMA_ID}, the one this reader knows: read as {SCHEMA_ID}, fields it does not know are ignored"
        ));
    }
    let mut profile: Profile =
        serde_path_to_error::deserialize(value).map_err(|e| field_error(e, body))?;
    implausible(&profile.figures)?;
    notices.extend(cpu_verdict_again(&mut profile));
    for (k, n) in notices.iter().enumerate() {
        profile.warnings.insert(k, n.clone());
    }
    Ok((profile, notices))
}

/// A CPU run's profile whose recorded verdict is about a GPU (LibreYOLO
/// 1.6 wrote `host / launch`, "GPU only ~0% busy — fed too slowly", for its
/// CPU training runs): a claim the run's own figures contradict, so the
/// verdict is decided again from its phases (docs/analysis.md §10), and
/// the notice says so.
fn cpu_verdict_again(p: &mut Profile) -> Option<String> {
    use crate::profile::Verdict;
    let about_a_gpu =
        p.bound.is_host() || matches!(p.bound, Verdict::Dependency | Verdict::IdleUnexplained);
    if !about_a_gpu || !crate::profile::cpu_run(&p.config, &p.extras, &p.figures, &p.health) {
        return None;
    }
    let evidence = analysis::verdict::Evidence {
        mode: Some(p.mode()),
        cuda: false,
        step_ms: p.figures.step_ms,
        dataload_ms: p.figures.dataload_ms,
        in_ops_frac: p.extras.host_in_ops_frac,
        stages: p.figures.stages_ms.as_ref(),
        phase_wall: p
            .phases
            .iter()
            .filter_map(|r| Some((r.phase.clone(), r.wall_ms_per_step?)))
            .collect(),
        ..Default::default()
    };
    let (bound, why) = analysis::verdict::decide(&evidence);
    let was = std::mem::replace(&mut p.bound, bound);
    let said = std::mem::replace(&mut p.bound_why, why);
    Some(format!(
        "the profile's verdict `{was}` (\"{said}\") is about a GPU, and this run is on the CPU: decided again from its phases"
    ))
}

/// Longest step a profile may claim, in ms: the traces' own bound on a
/// duration (1e12 µs, about 11.6 days; see `analysis::MAX_DUR_US`).
const MAX_STEP_MS: f64 = 1e9;

/// Refuses a profile whose headline figures no run can have (a step of
/// −1, 0 or 1e308 ms, a utilisation of 5): every reader would print them
/// as they are (what-if: "→ ~inf ms"). Names the first such field.
fn implausible(f: &Figures) -> Result<()> {
    let per_step = (0.0, MAX_STEP_MS);
    let mut checks: Vec<(&str, f64, (f64, f64))> = vec![
        ("gpu_util", f.gpu_util, (0.0, 1.0)),
        // Overlapping streams sum to more than the wall time, but not
        // beyond a few hundred streams' worth.
        ("gpu_util_raw", f.gpu_util_raw, (0.0, 1e3)),
        ("tensorcore_pct", f.tensorcore_pct, (0.0, 100.0)),
        ("cuda_mallocs_per_step", f.cuda_mallocs_per_step, (0.0, f64::MAX)),
        ("host_overhead_ms_per_step", f.host_overhead_ms_per_step, per_step),
        ("launches_per_step", f.launches_per_step, (0.0, f64::MAX)),
        ("gpu_busy_ms_per_step", f.gpu_busy_ms_per_step, per_step),
        ("mean_kernel_us", f.mean_kernel_us, (0.0, MAX_STEP_MS * 1e3)),
        ("kernels_per_step", f.kernels_per_step, (0.0, f64::MAX)),
        ("memcpy_ms_per_step", f.memcpy_ms_per_step, per_step),
    ];
    for (name, v, range) in [
        ("img_per_s", f.img_per_s, (0.0, f64::MAX)),
        ("dataload_ms", f.dataload_ms, per_step),
        ("dataload_frac", f.dataload_frac, (0.0, 1.0)),
        ("peak_vram_mb", f.peak_vram_mb, (0.0, f64::MAX)),
    ] {
        if let Some(v) = v {
            checks.push((name, v, range));
        }
    }
    let step = f.step_ms;
    if !(step.is_finite() && step > 0.0 && step <= MAX_STEP_MS) {
        return Err(Error::failed(format!(
            "malformed profile: `step_ms` is {step}, not a step time (more than 0, at most {MAX_STEP_MS:e} ms)"
        )));
    }
    for (name, v, (lo, hi)) in checks {
        if !(v.is_finite() && v >= lo && v <= hi) {
            let range = if hi == f64::MAX {
                format!("at least {lo}")
            } else {
                format!("between {lo} and {hi}")
            };
            return Err(Error::failed(format!(
                "malformed profile: `{name}` is {v}, outside what a run can have ({range})"
            )));
        }
    }
    Ok(())
}

/// The error of a profile that does not deserialize, naming the field.
/// serde reads the flattened parts of a profile ([`Figures`],
/// [`ExtraFigures`]) through a buffer the path tracker does not see, so an
/// error in one of them comes back at the root: reading those parts alone
/// again (only on this failure path) names the field as before.
fn field_error(e: serde_path_to_error::Error<serde_json::Error>, body: &[u8]) -> Error {
    fn part<T: DeserializeOwned>(v: &Value) -> Option<(String, serde_json::Error)> {
        serde_path_to_error::deserialize::<_, T>(v)
            .err()
            .map(|e| (e.path().to_string(), e.into_inner()))
    }
    let at_root = e.path().iter().next().is_none();
    let mut at = e.path().to_string();
    let mut why = e.into_inner();
    if at_root {
        let flattened = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| part::<Figures>(&v).or_else(|| part::<ExtraFigures>(&v)));
        if let Some(found) = flattened {
            (at, why) = found;
        }
    }
    Error::failed(format!("profile field `{at}`: {why}")).caused_by(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_field_is_named_also_in_the_flattened_figures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.json");
        let base =
            r#""schema": "libreyolo.profile.analysis/v1", "step_ms": 12, "bound": "compute""#;
        for (field, at, why) in [
            (r#""gpu_util": "x""#, "gpu_util", "invalid type: string \"x\", expected f64"),
            (r#""gpu_util": null"#, "gpu_util", "invalid type: null, expected f64"),
            (
                r#""unique_kernels": 1.5"#,
                "unique_kernels",
                "invalid type: floating point `1.5`, expected u64",
            ),
            (
                r#""window": {"real_steps": -1}"#,
                "window.real_steps",
                "invalid value: integer `-1`, expected u64",
            ),
            (
                r#""stages_ms": {"forward": "f"}"#,
                "stages_ms.forward",
                "invalid type: string \"f\", expected f64",
            ),
            (
                r#""comm_overlap_pct": "c""#,
                "comm_overlap_pct",
                "invalid type: string \"c\", expected f64",
            ),
            (r#""categories": 3"#, "categories", "invalid type: integer `3`, expected a sequence"),
        ] {
            std::fs::write(&path, format!("{{{base}, {field}}}")).unwrap();
            let err = read_profile(&Source::path(&path).unwrap(), &ReadOptions::default())
                .unwrap_err()
                .to_string();
            assert_eq!(err, format!("profile field `{at}`: {why}"), "{field}");
        }
        // Integers into f64 fields, nulls into optional ones, missing fields defaulted.
        std::fs::write(
            &path,
            format!(
                r#"{{{base}, "img_per_s": null, "gpu_util": 1, "window": {{"real_steps": 3}}}}"#
            ),
        )
        .unwrap();
        let (p, _) = read_profile(&Source::path(&path).unwrap(), &ReadOptions::default()).unwrap();
        assert_eq!((p.figures.step_ms, p.figures.gpu_util, p.figures.img_per_s), (12.0, 1.0, None));
        assert_eq!(
            (p.figures.window.real_steps, p.figures.latency.as_ref(), p.extras.comm_ms_per_step),
            (3, None, None)
        );
    }
}
