//! `libreyolo profile infer`: the measured inference loop (docs/spec.md §2.1).
//!
//! Everything that can fail on bad input (arguments, device, source, image
//! decoding, weights) is checked before anything is written. Warmup runs
//! outside the trace; the measured runs are split in two halves: the first
//! runs unsynced with one sync at the end of each iteration (the honest
//! latency), the second syncs between stages to attribute them. Each
//! measured iteration is a `ProfilerStep#N` range holding `step/preprocess`,
//! `step/forward` and `step/postprocess`; inside the forward, the model's
//! module scopes (`backbone` › `model.0 Conv`, …; [`crate::model`]) unless
//! `--no-module-scopes`.
//!
//! Outputs, under `<project>/infer/`: `profile_trace.json` (unless
//! `--no-trace`), `profile_summary.json` (the measured numbers) and
//! `profile.json`, the core's analysis of the two; with `--repeat N>1` also
//! `<project>/infer_repeat.json`. The trace is analysed from a temporary file
//! and every file is renamed into place at the end, so a failed capture
//! leaves nothing half-written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::window::Window;
use libreyolo_core::cli::{AmpDtype, InferArgs, ModelSize};
use libreyolo_core::conditions::{self, Conditions};
use libreyolo_core::lens::capture::Capture;
use libreyolo_core::profile::measured::RealTiming;
use libreyolo_core::profile::{self, Latency, Measurements, Mode, Stages};
use libreyolo_core::render::{self, text};
use libreyolo_core::{Error, Result};
use serde_json::{Map, Value, json};
use tch::{Device, Tensor};

use crate::device;
use crate::model;
use crate::postprocess;
use crate::preprocess;
use crate::profiler::{self, Options, Range, Session};
use crate::source::{self, Image};
use crate::weights::{self, Loaded};

/// The torch version this crate is built for (capture/TORCH_VERSION).
pub const TORCH_VERSION: &str = include_str!("../TORCH_VERSION");

/// Validated settings of one `infer`: the command line checked once
/// ([`Plan::new`]), so nothing past it reads the clap structs.
pub struct Plan {
    /// The memory the capture may use (`--max-memory`).
    budget: libreyolo_core::budget::Budget,
    /// `--weights`: a checkpoint path or name, as given.
    weights: String,
    size: ModelSize,
    /// `--source`: images (`None`: the bundled sample).
    source: Option<PathBuf>,
    /// `--fuse`: the deployed graph (BatchNorm folded, RepConv merged).
    fuse: bool,
    repeat: usize,
    threads: Option<usize>,
    project: PathBuf,
    /// `--json`: the report as JSON on stdout.
    json: bool,
    batch: usize,
    imgsz: i64,
    warmup: usize,
    runs: usize,
    /// Measured iterations of the unsynced first half.
    unsynced: usize,
    conf: f64,
    iou: f64,
    max_det: usize,
    half: bool,
    bf16: bool,
    trace: bool,
    /// Record allocator events in the trace.
    memory: bool,
    /// Record the model's module scopes in the trace.
    module_scopes: bool,
    device: Device,
}

impl Plan {
    /// Checks the flags (exit 2 on a bad one) before anything is loaded.
    pub fn new(args: &InferArgs) -> Result<Plan> {
        let bf16 = args.amp_dtype == AmpDtype::Bfloat16;
        if args.batch == 0 {
            return Err(Error::usage("--batch must be at least 1"));
        }
        if args.runs < 2 {
            return Err(Error::usage(format!(
                "--runs {}: at least 2 measured runs are needed (one unsynced for latency, one synced for the stage split)",
                args.runs
            )));
        }
        if args.repeat == 0 {
            return Err(Error::usage("--repeat must be at least 1"));
        }
        let imgsz = model::check_imgsz(args.imgsz)?;
        if !(0.0..=1.0).contains(&args.conf) || !(0.0..=1.0).contains(&args.iou) {
            return Err(Error::usage("--conf and --iou must be between 0 and 1"));
        }
        let device = device::parse(args.device)?;
        let budget = libreyolo_core::budget::Budget::from_flag(args.max_memory.as_deref())?;
        model::check_memory(args.batch, imgsz, 6, device, &budget)?;
        let half = args.half();
        if half && device == Device::Cpu {
            return Err(Error::usage(
                "--half autocasts the forward on CUDA only; on --device cpu drop --half (or run on a GPU with --device 0)",
            ));
        }
        Ok(Plan {
            budget,
            weights: args.weights.clone(),
            size: args.size,
            source: args.source.clone(),
            fuse: args.fuse,
            repeat: args.repeat,
            threads: args.threads,
            project: PathBuf::from(&args.project),
            json: args.json,
            batch: args.batch,
            imgsz,
            warmup: args.warmup,
            runs: args.runs,
            unsynced: (args.runs / 2).max(1),
            conf: args.conf,
            iou: args.iou,
            max_det: args.max_det,
            half,
            bf16,
            trace: args.trace(),
            memory: args.memory,
            module_scopes: !args.no_module_scopes,
            device,
        })
    }
}

/// What one trial measured.
struct Trial {
    latencies_ms: Vec<f64>,
    stages_ms: [Vec<f64>; 3],
    detections: usize,
    images_postprocessed: usize,
    /// Peak VRAM of the trial, MB (1e6 bytes, as the reference), CUDA only.
    peak_vram_mb: Option<f64>,
    /// What else ran on the machine during the measured runs.
    conditions: Option<Conditions>,
    /// The trace of this trial, in a temporary file beside its final place.
    trace: Option<tempfile::TempPath>,
}

fn range<'a>(s: &'a Option<Session>, name: &str) -> Option<Range<'a>> {
    s.as_ref().map(|s| s.range(name))
}

fn run_trial(
    p: &Plan,
    images: &[Image],
    m: &Loaded,
    keep_trace_in: Option<&Path>,
) -> Result<Trial> {
    let n = images.len();
    let total = p.warmup + p.runs;
    let mut session: Option<Session> = None;
    let mut t = Trial {
        latencies_ms: Vec::with_capacity(p.unsynced),
        stages_ms: Default::default(),
        detections: 0,
        images_postprocessed: 0,
        peak_vram_mb: None,
        conditions: None,
        trace: None,
    };
    profiler::reset_peak_vram(p.device)?;
    let mut window = None;
    for i in 0..total {
        if i == p.warmup {
            window = Some(Window::start(p.device));
            if p.trace {
                session = Some(Session::start(Options {
                    cuda: p.device.is_cuda(),
                    all_threads: false,
                    memory: p.memory,
                    module_scopes: p.module_scopes,
                })?);
            }
        }
        let measuring = i >= p.warmup;
        let synced = measuring && i - p.warmup >= p.unsynced;
        let batch: Vec<&Image> = (0..p.batch).map(|j| &images[(i * p.batch + j) % n]).collect();

        let _step = if measuring { session.as_ref().map(|s| s.step(i as u64)) } else { None };
        let t0 = Instant::now();
        let (x, geoms) = {
            let _r = range(&session, "step/preprocess");
            preprocess_batch(&batch, p, m)
        };
        if synced {
            device::sync(p.device);
        }
        let t1 = Instant::now();
        let out = {
            let _r = range(&session, "step/forward");
            if p.half {
                profiler::set_cuda_autocast(true, p.bf16)?;
            }
            let out = m.model.forward(&x);
            if p.half {
                profiler::set_cuda_autocast(false, p.bf16)?;
            }
            out
        };
        if synced {
            device::sync(p.device);
        }
        let t2 = Instant::now();
        {
            let _r = range(&session, "step/postprocess");
            for (j, g) in geoms.iter().enumerate() {
                let d = postprocess::detections(
                    &out.predictions,
                    j as i64,
                    g,
                    p.conf,
                    p.iou,
                    p.max_det,
                );
                if measuring {
                    t.detections += d.len();
                    t.images_postprocessed += 1;
                }
            }
        }
        device::sync(p.device);
        let t3 = Instant::now();
        drop(_step);
        if synced {
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            t.stages_ms[0].push(ms(t0, t1));
            t.stages_ms[1].push(ms(t1, t2));
            t.stages_ms[2].push(ms(t2, t3));
        } else if measuring {
            t.latencies_ms.push((t3 - t0).as_secs_f64() * 1e3);
        }
    }
    t.conditions = window.map(Window::finish);
    t.peak_vram_mb = profiler::peak_vram_mb(p.device)?;
    if let Some(s) = session {
        match keep_trace_in {
            Some(dir) => t.trace = Some(s.finish_in(dir)?),
            None => s.discard()?,
        }
    }
    Ok(t)
}

fn preprocess_batch(
    batch: &[&Image],
    p: &Plan,
    m: &Loaded,
) -> (Tensor, Vec<preprocess::Letterbox>) {
    let mut xs = Vec::with_capacity(batch.len());
    let mut gs = Vec::with_capacity(batch.len());
    for img in batch {
        let (x, g) = preprocess::letterbox(&img.pixels, p.imgsz, m.pad, p.device);
        xs.push(x);
        gs.push(g);
    }
    let x = if xs.len() == 1 { xs.pop().unwrap() } else { Tensor::cat(&xs, 0) };
    (x, gs)
}

/// Python's `round` (half to even), for the reference's percentile rule.
fn round_half_even(v: f64) -> f64 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 { 2.0 * (v / 2.0).round() } else { r }
}

/// Latency statistics as the reference computes them: nearest rank
/// `sorted[min(n-1, round(q/100·(n-1)))]`, 3 decimals.
pub fn latency(samples: &[f64]) -> Latency {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return Latency::default();
    }
    let pick = |q: f64| s[((q / 100.0 * (n - 1) as f64).pipe(round_half_even) as usize).min(n - 1)];
    let r = |v: f64| libreyolo_core::util::round(v, 3);
    Latency {
        p50_ms: r(pick(50.0)),
        p90_ms: r(pick(90.0)),
        p99_ms: r(pick(99.0)),
        mean_ms: r(s.iter().sum::<f64>() / n as f64),
        min_ms: r(s[0]),
        max_ms: r(s[n - 1]),
        n: n as u64,
    }
}

trait Pipe: Sized {
    fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}
impl Pipe for f64 {}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| libreyolo_core::util::round(v.iter().sum::<f64>() / v.len() as f64, 3))
}

fn measurements(p: &Plan, m: &Loaded, images: &[Image], t: &Trial) -> Measurements {
    let lat = latency(&t.latencies_ms);
    let img_per_s = if lat.mean_ms > 0.0 {
        Some(libreyolo_core::util::round(p.batch as f64 * 1e3 / lat.mean_ms, 2))
    } else {
        None
    };
    let mut meta = Map::new();
    // The reference's keys, in its order, then ours.
    // No weights loaded: the label says so, not the file name that was
    // not read (docs/profile-schema.md §1 `model`).
    meta.insert("model".into(), json!(model_label(&p.weights, m.weights_source)));
    meta.insert("batch".into(), json!(p.batch));
    meta.insert("imgsz".into(), json!(p.imgsz));
    meta.insert("half".into(), json!(p.half));
    meta.insert(
        "amp_dtype".into(),
        json!(if p.bf16 { AmpDtype::Bfloat16 } else { AmpDtype::Float16 }),
    );
    meta.insert("device".into(), json!(device::name(p.device)));
    meta.insert("conf".into(), json!(p.conf));
    meta.insert("iou".into(), json!(p.iou));
    meta.insert("max_det".into(), json!(p.max_det));
    meta.insert("mode".into(), json!("inference"));
    meta.insert("size".into(), json!(m.size));
    meta.insert("nc".into(), json!(m.nc));
    meta.insert(
        "weights".into(),
        json!(m.weights_path.clone().unwrap_or_else(|| p.weights.clone())),
    );
    meta.insert("weights_source".into(), json!(m.weights_source));
    if let Some(s) = m.checkpoint_imgsz {
        meta.insert("checkpoint_imgsz".into(), json!(s));
    }
    meta.insert("letterbox_pad".into(), json!(m.pad.as_str()));
    meta.insert(
        "source".into(),
        json!(p.source.as_ref().map_or(source::SAMPLE_NAME.into(), |s| s.to_string_lossy())),
    );
    meta.insert("images".into(), json!(images.len()));
    meta.insert("warmup".into(), json!(p.warmup));
    meta.insert("runs".into(), json!(p.runs));
    meta.insert("threads".into(), json!(tch::get_num_threads()));
    meta.insert("trace".into(), json!(p.trace));
    meta.insert("fused".into(), json!(p.fuse));
    meta.insert("module_scopes".into(), json!(p.trace && p.module_scopes));
    if t.images_postprocessed > 0 {
        meta.insert(
            "detections_per_image".into(),
            json!(libreyolo_core::util::round(
                t.detections as f64 / t.images_postprocessed as f64,
                2
            )),
        );
    }
    Measurements {
        meta: meta.into(),
        real: Some(RealTiming {
            step_ms: lat.mean_ms,
            img_per_s,
            dataload_ms: Some(0.0),
            dataload_frac: Some(0.0),
        }),
        latency: Some(lat),
        stages_ms: Some(Stages {
            preprocess: mean(&t.stages_ms[0]),
            forward: mean(&t.stages_ms[1]),
            postprocess: mean(&t.stages_ms[2]),
        }),
        peak_vram_mb: t.peak_vram_mb,
        mode: Some(Mode::Inference),
        versions: Some(versions()),
        host: Some(host(t.conditions.as_ref())),
        ..Default::default()
    }
}

/// Versions recorded in every profile we capture.
pub fn versions() -> Value {
    json!({ "libreyolo": env!("CARGO_PKG_VERSION"), "torch": TORCH_VERSION.trim(), "tch": "0.24.0" })
}

/// The machine as the capture used it, and the conditions of its measured
/// window (other processes' CPU use, load, governor; see
/// `libreyolo_core::conditions`).
pub fn host(conditions: Option<&Conditions>) -> Value {
    json!({
        "threads": tch::get_num_threads(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cuda_devices": tch::Cuda::device_count(),
        "conditions": conditions,
    })
}

/// Runs `profile infer` and returns what to print on stdout: the flags
/// checked into a [`Plan`], the capture run, its report rendered.
pub fn infer(args: &InferArgs) -> Result<String> {
    let p = Plan::new(args)?;
    let report = capture(&p)?;
    if p.json { render::json(&report) } else { Ok(text::capture(&report)) }
}

/// Runs the capture `p` plans: writes its files and returns its report.
pub fn capture(p: &Plan) -> Result<Capture> {
    device::set_threads(p.threads)?;
    let files = source::resolve(p.source.as_deref())?;
    // Only the images the window takes are decoded (batches cycle through
    // them in order): a folder of thousands costs what warmup + runs
    // batches use, not the whole folder, and the budget counts those.
    let batches = p.warmup + p.runs;
    let used = files.len().min(batches.saturating_mul(p.batch));
    if used < files.len() {
        crate::output::say(&format!(
            "note: the window takes {used} of the {} images ({batches} batches of {}); the rest are not read",
            files.len(),
            p.batch
        ));
    }
    let images = source::load(&files[..used], &p.budget)?;
    let mut loaded = weights::load(&p.weights, p.size, p.device)?;
    // The graph LibreYOLO's inference runs, unless the deployed one is asked for.
    if p.fuse {
        loaded.model.fuse();
    }
    for note in &loaded.notes {
        crate::output::say(note);
    }

    let project = &p.project;
    let out_dir = project.join("infer");
    crate::output::prepare(&out_dir)?;
    let mut trial_profiles = Vec::new();
    let mut trial_paths = Vec::new();
    let mut final_files: Option<(Measurements, Option<tempfile::TempPath>)> = None;
    for k in 0..p.repeat {
        let last = k + 1 == p.repeat;
        if p.repeat > 1 {
            crate::output::say(&format!("trial {}/{}", k + 1, p.repeat));
        }
        let trial = run_trial(p, &images, &loaded, if last { Some(&out_dir) } else { None })?;
        let m = measurements(p, &loaded, &images, &trial);
        let prof = match &trial.trace {
            Some(tmp) => crate::output::analyze(tmp, &m)?,
            None => libreyolo_core::analysis::profile_without_trace(&m),
        };
        trial_paths.push(if last {
            out_dir.join("profile.json").display().to_string()
        } else {
            format!("trial {}", k + 1)
        });
        trial_profiles.push(prof);
        if last {
            final_files = Some((m, trial.trace));
        }
    }
    let (mut m, trace_tmp) = final_files.expect("the last trial ran");
    if let Some(tmp) = &trace_tmp {
        crate::output::link_sidecar(&mut m, tmp);
    }
    let mut prof = trial_profiles.last().cloned().expect("one profile");

    // Everything measured and analysed: put the files in place.
    let trace_path = out_dir.join("profile_trace.json");
    let profile_path = out_dir.join("profile.json");
    std::fs::create_dir_all(&out_dir).map_err(|e| {
        Error::failed(format!("cannot create {}: {e}", out_dir.display())).caused_by(e)
    })?;
    libreyolo_core::files::write_json(&out_dir.join(profile::measured::SIDECAR), &m)?;
    match trace_tmp {
        Some(tmp) => {
            tmp.persist(&trace_path).map_err(|e| {
                Error::failed(format!("cannot write {}: {e}", trace_path.display())).caused_by(e)
            })?;
            prof.trace = Some(trace_path.display().to_string());
        }
        None => {
            // A trace left by an earlier run would not match this profile.
            let _ = std::fs::remove_file(&trace_path);
            prof.trace = None;
        }
    }
    libreyolo_core::files::write_json(&profile_path, &prof)?;
    let mut shown = prof.clone();
    let mut shown_path = profile_path.clone();
    if p.repeat > 1 {
        if let Some(last) = trial_profiles.last_mut() {
            *last = prof.clone();
        }
        let mut agg =
            profile::repeat::aggregate(&trial_profiles, &trial_paths).expect("at least one trial");
        conditions::set_in_host(
            &mut agg.host,
            crate::output::report_trials(&trial_profiles).as_ref(),
        );
        shown_path = project.join("infer_repeat.json");
        libreyolo_core::files::write_json(&shown_path, &agg)?;
        shown = agg;
    }
    Ok(Capture::inference(&shown, &shown_path))
}

/// `model` as the profile records it: the weights' name, `(random init)`
/// where none were loaded (the readers' label, one rule).
pub(crate) fn model_label(model: &str, weights_source: &str) -> String {
    let mut c = profile::RunConfig::default();
    c.insert("weights_source", json!(weights_source));
    c.model_label(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_field_says_random_init_where_no_weights_were_loaded() {
        // What `profile infer` with no weights file writes, and with one.
        assert_eq!(model_label("LibreYOLO9t.pt", "random-init"), "LibreYOLO9t (random init)");
        assert_eq!(model_label("LibreYOLO9t.pt", "file"), "LibreYOLO9t.pt");
    }

    #[test]
    fn percentiles_follow_the_reference_rule() {
        let s: Vec<f64> = (1..=10).map(f64::from).collect();
        let l = latency(&s);
        // n=10: p50 → round(4.5)=4 → 5.0; p90 → round(8.1)=8 → 9.0; p99 → round(8.91)=9 → 10.0
        assert_eq!((l.p50_ms, l.p90_ms, l.p99_ms), (5.0, 9.0, 10.0));
        assert_eq!((l.min_ms, l.max_ms, l.n), (1.0, 10.0, 10));
        assert!(l.p50_ms <= l.p90_ms && l.p90_ms <= l.p99_ms);
    }
}
