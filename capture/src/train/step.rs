//! The measured training loop of `profile run` (SPEC §1.1).
//!
//! Each iteration is one real YOLOv9 training step: the batch from the
//! loader (`step/dataload`, the time the step waits on it), the copy to the
//! device (`step/to_device`), the forward in training mode and the family's
//! loss (`step/forward`: the main head and the PGI auxiliary branch
//! LibreYOLO 1.6 attaches for training, loss = main + 0.25 · auxiliary),
//! backward (`step/backward`) and LibreYOLO's optimizer
//! step (`step/optimizer`: SGD, lr 0.01, momentum 0.937, Nesterov, weight
//! decay 5e-4 on conv weights only — BatchNorm weights and every bias are in
//! groups without decay, as their `_setup_optimizer`). Each measured step is
//! a `ProfilerStep#N` range.
//!
//! The window is `--warmup` + `--steps` batches within one pass over the data
//! (the last partial batch dropped). Warmup runs outside the trace. The first
//! half of the measured steps runs with no extra synchronisation and gives
//! the step time, the dataloader wait and img/s; the second half
//! synchronises after each phase to attribute wall time per phase.
//!
//! Outputs, under `<project>/train/`: `profile_trace.json`,
//! `profile_summary.json` and `profile.json`, all renamed into place at the
//! end.
//!
//! Not yet: AMP with loss scaling on CUDA (runs fp32, and says so),
//! `--batch -1` probing, `--repeat`, the augmentation.

use std::path::{Path, PathBuf};
use std::time::Instant;

use libreyolo_core::cli::RunArgs;
use libreyolo_core::profile::measured::RealTiming;
use libreyolo_core::profile::{self, Measurements, Profile};
use libreyolo_core::render::text::{num, throughput};
use libreyolo_core::{Error, Result};
use serde_json::{json, Map, Value};
use tch::{Device, Tensor};

use super::data::{Dataset, Loader};
use super::loss::{yolo9_train_loss, Gains};
use crate::checkpoint;
use crate::device;
use crate::model::{self, AuxLoad, Config, Yolo9};
use crate::profiler::{Options, Range, Session};
use crate::weights;

/// The phases, in step order.
pub const PHASES: [&str; 5] = ["dataload", "to_device", "forward", "backward", "optimizer"];

/// LibreYOLO's YOLOv9 optimizer defaults (`TrainConfig`, `YOLO9Config`).
pub const LR: f64 = 0.01;
pub const MOMENTUM: f64 = 0.937;
pub const WEIGHT_DECAY: f64 = 5e-4;
pub const NESTEROV: bool = true;
/// Weight of the PGI auxiliary head's loss (`YOLO9Config.aux_weight`; its
/// trainer calls `enable_aux(weight=0.25)` before training).
pub const AUX_WEIGHT: f64 = 0.25;

/// Validated settings of one `run`.
struct Plan {
    batch: usize,
    imgsz: i64,
    warmup: usize,
    steps: usize,
    unsynced: usize,
    workers: usize,
    device: Device,
    notes: Vec<String>,
    /// Progress lines on stderr during the window (interactive, not --json).
    progress: bool,
}

fn plan(args: &RunArgs, ds: &Dataset) -> Result<Plan> {
    let device = device::parse(&args.device)?;
    let mut notes = Vec::new();
    let batch = match args.batch {
        -1 => {
            notes.push(format!(
                "note: --batch -1 fits the batch to CUDA memory{}; using 16",
                if device.is_cuda() { ", which this build does not do yet" } else { " and needs CUDA" }
            ));
            16
        }
        b if b >= 1 => b as usize,
        b => return Err(Error::usage(format!("--batch {b}: expected a positive batch or -1 (auto-fit on CUDA)"))),
    };
    if args.steps < 2 {
        return Err(Error::usage(format!(
            "--steps {}: at least 2 measured steps are needed (one unsynced for the step time, one synced for the phase split)",
            args.steps
        )));
    }
    if args.repeat == 0 {
        return Err(Error::usage("--repeat must be at least 1"));
    }
    let imgsz = args.imgsz as i64;
    if imgsz < 32 || imgsz % 32 != 0 {
        return Err(Error::usage(format!("--imgsz {imgsz}: YOLOv9 needs a multiple of 32 (e.g. 320, 640)")));
    }
    let amp = !args.no_amp;
    if amp && device.is_cuda() {
        notes.push("note: AMP is not implemented in this build yet; training in fp32".into());
    }
    // The window must fit in one pass over the data (last partial batch dropped).
    let available = ds.len() / batch;
    let needed = args.warmup + args.steps;
    if available < needed {
        let fit_steps = available.saturating_sub(args.warmup);
        let fit_batch = ds.len() / needed;
        let mut ways = vec![format!("a larger dataset (at least {} images)", needed * batch)];
        ways.push(if fit_steps >= 2 {
            format!("fewer steps (--steps {fit_steps})")
        } else {
            format!("fewer steps (with --warmup {} there is no room for 2 steps)", args.warmup)
        });
        ways.push(if fit_batch >= 1 { format!("a smaller batch (--batch {fit_batch})") } else { "a smaller batch (not even --batch 1 fits)".into() });
        return Err(Error::NoProfile(format!(
            "no profile: {} images at batch {batch} give {available} iterations, but --warmup {} + --steps {} need {needed}. Ways out: {}",
            ds.len(),
            args.warmup,
            args.steps,
            ways.join("; ")
        )));
    }
    use std::io::IsTerminal;
    let progress = !args.json && std::io::stderr().is_terminal();
    Ok(Plan {
        batch,
        imgsz,
        warmup: args.warmup,
        steps: args.steps,
        unsynced: args.steps.div_ceil(2),
        workers: args.workers,
        device,
        notes,
        progress,
    })
}

/// The model to train and what the profile records about it.
struct TrainModel {
    model: Yolo9,
    size: String,
    weights_source: &'static str,
    weights_path: Option<String>,
    /// How the PGI auxiliary branch started: tensors taken from the
    /// checkpoint (the rest random-init).
    aux: AuxLoad,
    notes: Vec<String>,
}

/// Builds the (unfused) model for `nc` classes: from the checkpoint when
/// `--weights` resolves to a file (class layers re-initialised when the
/// dataset's class count differs, as LibreYOLO does), else random-init.
/// Then attaches the PGI auxiliary branch at [`AUX_WEIGHT`] as LibreYOLO's
/// `train()` does: freshly initialised, then the checkpoint's `aux.*` /
/// `aux_head.*` tensors of the same name and shape loaded into it (none for
/// a single-head checkpoint, which so trains a random-init branch).
fn load_model(arg: &str, size: &str, nc: i64, dev: Device) -> Result<TrainModel> {
    if Config::of(size).is_none() {
        return Err(Error::usage(format!("--size {size}: expected one of t, s, m, c")));
    }
    match weights::resolve(arg)? {
        weights::Source::RandomInit { .. } => {
            tch::manual_seed(0);
            let mut model = Yolo9::new(size, nc, dev).map_err(Error::failed)?;
            model.enable_aux(AUX_WEIGHT);
            let aux = model.load_aux_state(&[]);
            Ok(TrainModel {
                model,
                size: size.into(),
                weights_source: "random-init",
                weights_path: None,
                aux,
                notes: vec![format!("note: weights {arg} not found; training a randomly initialised YOLOv9-{size} (timings are real)")],
            })
        }
        weights::Source::File(path) => {
            let shown = path.display().to_string();
            let ck = checkpoint::load(&path).map_err(|e| Error::failed(format!("cannot read checkpoint {shown}: {e}")))?;
            let used = ck.meta_str("size").map(str::to_string).unwrap_or_else(|| size.to_string());
            if Config::of(&used).is_none() {
                return Err(Error::failed(format!("checkpoint {shown} has unknown YOLOv9 size `{used}`")));
            }
            let ck_nc = ck.meta_int("nc").or_else(|| ck.tensor("head.cv3.0.2.weight").map(|t| t.size()[0]));
            let cls_hidden = ck.tensor("head.cv3.0.0.conv.weight").map(|t| t.size()[0]);
            tch::manual_seed(0);
            let mut model = Yolo9::with_class_width(&used, nc, cls_hidden, dev).map_err(Error::failed)?;
            let mut notes = Vec::new();
            let state: Vec<(String, Tensor)> = if ck_nc == Some(nc) {
                ck.state.iter().map(|(k, t)| (k.clone(), t.shallow_clone())).collect()
            } else {
                notes.push(format!(
                    "note: checkpoint {shown} has {} classes, the dataset {nc}; the class output layers start fresh",
                    ck_nc.map_or("?".into(), |n| n.to_string())
                ));
                let own = model.vs.variables();
                let is_cls_out = |k: &str| k.starts_with("head.cv3.") && k.contains(".2.");
                let mut s: Vec<(String, Tensor)> =
                    ck.state.iter().filter(|(k, _)| !is_cls_out(k)).map(|(k, t)| (k.clone(), t.shallow_clone())).collect();
                s.extend(own.iter().filter(|(k, _)| is_cls_out(k)).map(|(k, t)| (k.clone(), t.copy())));
                s
            };
            model.load_state(&state).map_err(|e| Error::failed(format!("checkpoint {shown}: {e}")))?;
            model.enable_aux(AUX_WEIGHT);
            let aux = model.load_aux_state(&ck.state);
            if aux.loaded < aux.total {
                notes.push(format!(
                    "note: checkpoint {shown} holds {} of the {} PGI auxiliary tensors this model trains; the rest start from random init, as in LibreYOLO",
                    aux.loaded, aux.total
                ));
            }
            Ok(TrainModel { model, size: used, weights_source: "file", weights_path: Some(shown), aux, notes })
        }
    }
}

/// SGD as torch's single-tensor implementation (the CPU path), with
/// LibreYOLO's three parameter groups folded into a per-tensor decay.
pub struct Sgd {
    params: Vec<(Tensor, f64)>,
    bufs: Vec<Option<Tensor>>,
    pub lr: f64,
}

impl Sgd {
    /// Groups by name: BatchNorm weights (`*.bn.weight`) and biases get no
    /// weight decay; every other weight gets `WEIGHT_DECAY`.
    pub fn new(vs: &tch::nn::VarStore) -> Sgd {
        let mut named: Vec<(String, Tensor)> = vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let params: Vec<(Tensor, f64)> = named.into_iter().map(|(k, t)| (t, decay_of(&k))).collect();
        let n = params.len();
        Sgd { params, bufs: (0..n).map(|_| None).collect(), lr: LR }
    }

    /// (no-decay BatchNorm weights, decayed weights, biases) counts.
    pub fn group_sizes(vs: &tch::nn::VarStore) -> (usize, usize, usize) {
        let mut g = (0, 0, 0);
        for (k, t) in vs.variables() {
            if !t.requires_grad() {
                continue;
            }
            if k.ends_with(".bn.weight") {
                g.0 += 1
            } else if k.ends_with("bias") {
                g.2 += 1
            } else {
                g.1 += 1
            }
        }
        g
    }

    pub fn zero_grad(&mut self) {
        for (p, _) in &mut self.params {
            p.zero_grad();
        }
    }

    pub fn step(&mut self) {
        tch::no_grad(|| {
            for ((p, wd), buf) in self.params.iter_mut().zip(self.bufs.iter_mut()) {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let d = if *wd != 0.0 { &g + &*p * *wd } else { g };
                let b = match buf {
                    Some(b) => {
                        let mut b = b.shallow_clone();
                        let _ = b.f_mul_scalar_(MOMENTUM);
                        let _ = b.f_add_(&d);
                        b.shallow_clone()
                    }
                    None => {
                        let b = d.detach().copy();
                        *buf = Some(b.shallow_clone());
                        b
                    }
                };
                let upd = if NESTEROV { d + b * MOMENTUM } else { b };
                let _ = p.f_sub_(&(upd * self.lr));
            }
        });
    }
}

fn decay_of(name: &str) -> f64 {
    if name.ends_with(".bn.weight") || name.ends_with("bias") { 0.0 } else { WEIGHT_DECAY }
}

/// What one trial measured.
struct Trial {
    step_ms: Vec<f64>,
    dataload_ms: Vec<f64>,
    phase_ms: [Vec<f64>; 5],
    losses: Vec<f64>,
    params_changed: bool,
    trace: Option<tempfile::TempPath>,
}

fn range<'a>(s: &'a Option<Session>, name: &str) -> Option<Range<'a>> {
    s.as_ref().map(|s| s.range(name))
}

fn run_trial(p: &Plan, ds: &Dataset, m: &TrainModel, out_dir: &Path) -> Result<Trial> {
    let total = p.warmup + p.steps;
    let nc = m.model.nc;
    let gains = Gains::default();
    let mut opt = Sgd::new(&m.model.vs);
    // A few tensors to prove the weights move.
    let watched: Vec<(String, Tensor)> = {
        let mut v: Vec<(String, Tensor)> = m.model.vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(k, t)| (k, t.detach().copy())).collect()
    };
    let mut loader = Loader::new(ds.clone(), p.batch, p.imgsz as usize, total, p.workers);
    model::set_training(true);
    let mut session: Option<Session> = None;
    let mut t = Trial {
        step_ms: Vec::new(),
        dataload_ms: Vec::new(),
        phase_ms: Default::default(),
        losses: Vec::new(),
        params_changed: false,
        trace: None,
    };
    let result = (|| -> Result<()> {
        for i in 0..total {
            if i == p.warmup {
                session = Some(Session::start(Options { cuda: p.device.is_cuda(), all_threads: false })?);
            }
            let measuring = i >= p.warmup;
            let synced = measuring && i - p.warmup >= p.unsynced;
            let sync = |on: bool| {
                if on {
                    device::sync(p.device)
                }
            };
            let step = if measuring { session.as_ref().map(|s| s.step(i as u64)) } else { None };
            let t0 = Instant::now();
            let batch = {
                let _r = range(&session, "step/dataload");
                loader.next_batch().ok_or_else(|| Error::failed("the loader ran out of batches inside the window"))??
            };
            let t1 = Instant::now();
            let (x, y) = {
                let _r = range(&session, "step/to_device");
                (batch.images.to_device(p.device), batch.targets.to_device(p.device))
            };
            sync(synced);
            let t2 = Instant::now();
            let loss = {
                let _r = range(&session, "step/forward");
                let maps = m.model.forward_train(&x);
                yolo9_train_loss(&maps, &y, (p.imgsz, p.imgsz), nc, &gains, m.model.aux_weight())
            };
            sync(synced);
            let t3 = Instant::now();
            {
                let _r = range(&session, "step/backward");
                loss.total.backward();
            }
            sync(synced);
            let t4 = Instant::now();
            {
                let _r = range(&session, "step/optimizer");
                opt.step();
                opt.zero_grad();
            }
            // LibreYOLO's trainer reads the loss every step (`.item()`).
            let value = f64::try_from(&loss.total).unwrap_or(f64::NAN);
            let t5 = Instant::now();
            drop(step);
            if !value.is_finite() {
                return Err(Error::failed(format!("the training loss is not finite ({value}) at step {i}")));
            }
            t.losses.push(value);
            if p.progress {
                let (what, k, n) = if measuring { ("step", i - p.warmup + 1, p.steps) } else { ("warmup", i + 1, p.warmup) };
                eprint!("\r\x1b[2K{what} {k}/{n}  loss {value:.3}  {:.0} ms", ms_since(t0));
            }
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            if synced {
                for (k, (a, b)) in [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)].into_iter().enumerate() {
                    t.phase_ms[k].push(ms(a, b));
                }
            } else if measuring {
                t.step_ms.push(ms(t0, t5));
                t.dataload_ms.push(ms(t0, t1));
            }
        }
        Ok(())
    })();
    model::set_training(false);
    if p.progress {
        eprint!("\r\x1b[2K");
    }
    result?;
    let s = session.take().expect("the window has measured steps");
    std::fs::create_dir_all(out_dir).map_err(|e| Error::failed(format!("cannot create {}: {e}", out_dir.display())))?;
    let tmp = tempfile::Builder::new()
        .prefix(".profile_trace.")
        .suffix(".json")
        .tempfile_in(out_dir)
        .map_err(|e| Error::failed(format!("cannot write in {}: {e}", out_dir.display())))?
        .into_temp_path();
    s.finish(&tmp)?;
    t.trace = Some(tmp);
    let now = m.model.vs.variables();
    t.params_changed = watched.iter().any(|(k, before)| now.get(k).is_some_and(|v| !v.detach().equal(before)));
    Ok(t)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn measurements(args: &RunArgs, p: &Plan, m: &TrainModel, ds: &Dataset, t: &Trial) -> Measurements {
    let r3 = |v: f64| libreyolo_core::util::round(v, 3);
    let step_ms = mean(&t.step_ms).unwrap_or(0.0);
    let dl = mean(&t.dataload_ms).unwrap_or(0.0);
    let img_per_s = (step_ms > 0.0).then(|| libreyolo_core::util::round(p.batch as f64 * 1e3 / step_ms, 2));
    let mut meta = Map::new();
    // The reference's keys, in its order, then ours.
    meta.insert("model".into(), json!(format!("YOLOv9-{}", m.size)));
    meta.insert("device".into(), json!(device::name(p.device)));
    meta.insert("batch".into(), json!(p.batch));
    meta.insert("imgsz".into(), json!(p.imgsz));
    meta.insert("amp".into(), json!(false));
    meta.insert("amp_dtype".into(), json!("float16"));
    meta.insert("workers".into(), json!(p.workers));
    meta.insert("mode".into(), json!("training"));
    meta.insert("size".into(), json!(m.size));
    meta.insert("nc".into(), json!(m.model.nc));
    meta.insert("weights".into(), json!(m.weights_path.clone().unwrap_or_else(|| args.weights.clone())));
    meta.insert("weights_source".into(), json!(m.weights_source));
    meta.insert("data".into(), json!(args.data));
    meta.insert("images".into(), json!(ds.len()));
    meta.insert("warmup".into(), json!(p.warmup));
    meta.insert("steps".into(), json!(p.steps));
    meta.insert("unsynced_steps".into(), json!(t.step_ms.len()));
    meta.insert("synced_steps".into(), json!(t.phase_ms[0].len()));
    meta.insert("optimizer".into(), json!({"name": "SGD", "lr": LR, "momentum": MOMENTUM, "nesterov": NESTEROV, "weight_decay": WEIGHT_DECAY}));
    meta.insert("aux_weight".into(), json!(m.model.aux_weight()));
    meta.insert("aux_tensors".into(), json!(m.aux.total));
    meta.insert("aux_tensors_loaded".into(), json!(m.aux.loaded));
    meta.insert("loss_first".into(), json!(t.losses.first().map(|v| r3(*v))));
    meta.insert("loss_last".into(), json!(t.losses.last().map(|v| r3(*v))));
    meta.insert("loss_finite".into(), json!(t.losses.iter().all(|v| v.is_finite())));
    meta.insert("params_changed".into(), json!(t.params_changed));
    meta.insert("threads".into(), json!(tch::get_num_threads()));
    let mut composition = Measurements::default().composition_ms;
    for (k, name) in PHASES.iter().enumerate() {
        if let Some(v) = mean(&t.phase_ms[k]) {
            composition.insert(name.to_string(), r3(v));
        }
    }
    Measurements {
        meta,
        real: Some(RealTiming {
            step_ms: r3(step_ms),
            img_per_s,
            dataload_ms: Some(r3(dl)),
            dataload_frac: Some(if step_ms > 0.0 { r3(dl / step_ms) } else { 0.0 }),
        }),
        composition_ms: composition,
        mode: Some("training".into()),
        versions: Some(crate::infer::versions()),
        host: Some(crate::infer::host()),
        ..Default::default()
    }
}

/// Runs `profile run` and returns what to print on stdout.
pub fn run(args: &RunArgs) -> Result<String> {
    let ds = Dataset::parse(&args.data)?;
    let p = plan(args, &ds)?;
    let m = load_model(&args.weights, &args.size, ds.nc(), p.device)?;
    for note in ds.notes().iter().chain(p.notes.iter()).chain(m.notes.iter()) {
        eprintln!("{note}");
    }
    let project = PathBuf::from(&args.project);
    let out_dir = project.join("train");
    let mut m = m;
    let mut trial_profiles = Vec::new();
    let mut trial_paths = Vec::new();
    let mut last = None;
    for k in 0..args.repeat {
        if args.repeat > 1 {
            eprintln!("trial {}/{}", k + 1, args.repeat);
            if k > 0 {
                // Every trial trains the same starting weights.
                m = load_model(&args.weights, &args.size, ds.nc(), p.device)?;
            }
        }
        let trial = run_trial(&p, &ds, &m, &out_dir)?;
        let meas = measurements(args, &p, &m, &ds, &trial);
        let trace_tmp = trial.trace.ok_or_else(|| Error::failed("no trace was captured"))?;
        let prof = libreyolo_core::analysis::analyze_file(&trace_tmp, Some(&meas), false)
            .map_err(|e| Error::failed(format!("cannot analyse the captured trace: {e}")))?
            .ok_or_else(|| Error::failed("the captured trace was not recognised as a trace"))?;
        let is_last = k + 1 == args.repeat;
        trial_paths.push(if is_last { out_dir.join("profile.json").display().to_string() } else { format!("trial {}", k + 1) });
        trial_profiles.push(prof.clone());
        if is_last {
            last = Some((meas, trace_tmp, prof));
        }
    }
    let (meas, trace_tmp, mut prof) = last.expect("at least one trial");
    let trace_path = out_dir.join("profile_trace.json");
    let profile_path = out_dir.join("profile.json");
    profile::write_json(&out_dir.join(profile::measured::SIDECAR), &meas)?;
    trace_tmp.persist(&trace_path).map_err(|e| Error::failed(format!("cannot write {}: {e}", trace_path.display())))?;
    prof.trace = Some(trace_path.display().to_string());
    profile::write_json(&profile_path, &prof)?;
    if args.repeat > 1 {
        if let Some(l) = trial_profiles.last_mut() {
            *l = prof.clone();
        }
        let agg = profile::repeat::aggregate(&trial_profiles, &trial_paths).expect("at least one trial");
        let path = project.join("profile_repeat.json");
        profile::write_json(&path, &agg)?;
        return Ok(if args.json { render_json(&agg, &path) } else { render_text(&agg, &path) });
    }
    Ok(if args.json { render_json(&prof, &profile_path) } else { render_text(&prof, &profile_path) })
}

fn render_text(p: &Profile, path: &Path) -> String {
    let mut o = format!("img/s: {}  |  {}\n", throughput(p.img_per_s, p.img_per_s_std, p.img_per_s_n.unwrap_or(1)).trim_end_matches(" img/s"), p.bound);
    o += &format!("step {} ms  |  dataload {}\n", num(p.step_ms, 2), p.dataload_frac.map_or("n/a".into(), |f| format!("{:.0}%", f * 100.0)));
    o += &format!(">> {}: {}\n", p.bound.to_uppercase(), p.bound_why);
    o += &format!("profile: {}\n", path.display());
    o += &format!("next:    libreyolo profile summary {}", path.display());
    o
}

fn render_json(p: &Profile, path: &Path) -> String {
    let v = json!({
        "profile": path.display().to_string(),
        "trace": p.trace,
        "mode": "training",
        "img_per_s": p.img_per_s,
        "img_per_s_std": p.img_per_s_std,
        "img_per_s_n": p.img_per_s_n.unwrap_or(1),
        "bound": p.bound,
        "bound_why": p.bound_why,
        "gpu_util": p.gpu_util,
        "step_ms": p.step_ms,
        "dataload_frac": p.dataload_frac,
        "device": p.config.get("device").cloned().unwrap_or(Value::Null),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::loss::yolo9_loss;

    #[test]
    fn parameter_groups_follow_libreyolo() {
        assert_eq!(decay_of("backbone.conv0.bn.weight"), 0.0);
        assert_eq!(decay_of("backbone.conv0.bn.bias"), 0.0);
        assert_eq!(decay_of("head.cv3.0.2.bias"), 0.0);
        assert_eq!(decay_of("backbone.conv0.conv.weight"), WEIGHT_DECAY);
        assert_eq!(decay_of("head.cv2.1.2.weight"), WEIGHT_DECAY);
        let m = Yolo9::new("t", 2, Device::Cpu).unwrap();
        let (bn, w, b) = Sgd::group_sizes(&m.vs);
        assert!(bn > 0 && w > 0 && b > 0);
        // Every conv+BN contributes one conv weight, one BN weight and one BN
        // bias; the head's plain output convs add a weight and a bias each.
        assert_eq!(w, bn + 6);
        assert_eq!(b, bn + 6);
    }

    /// One step by hand: d = g + wd·p, buf = d, p -= lr·(d + m·buf).
    #[test]
    fn sgd_matches_torch_nesterov_with_decay() {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let w = (vs.root() / "conv").var("weight", &[1], tch::nn::Init::Const(1.0));
        let mut opt = Sgd::new(&vs);
        (&w * &w).sum(tch::Kind::Float).backward();
        opt.step();
        let d = 2.0 + WEIGHT_DECAY;
        let want = 1.0 - LR * (d + MOMENTUM * d);
        assert!((f64::try_from(w.get(0)).unwrap() - want).abs() < 1e-6);
        opt.zero_grad();
        // Second step: buf = m·buf + d'.
        (&w * &w).sum(tch::Kind::Float).backward();
        opt.step();
        let p1 = want;
        let d2 = 2.0 * p1 + WEIGHT_DECAY * p1;
        let buf = MOMENTUM * d + d2;
        let want2 = p1 - LR * (d2 + MOMENTUM * buf);
        assert!((f64::try_from(w.get(0)).unwrap() - want2).abs() < 1e-6);
    }

    /// A few SGD steps on a fixed batch lower the loss of the real model.
    #[test]
    fn training_steps_lower_the_loss_on_a_fixed_batch() {
        tch::manual_seed(0);
        let m = Yolo9::new("t", 2, Device::Cpu).unwrap();
        let ds = Dataset::Synthetic { n: 2 };
        let b = super::super::data::collate(&[ds.sample(0, 64).unwrap(), ds.sample(1, 64).unwrap()], 8);
        let mut opt = Sgd::new(&m.vs);
        // A smaller step than LibreYOLO's lr0 (which it reaches after a
        // warmup from 1e-4): from random init at batch 2 lr 0.01 is noisy.
        opt.lr = 1e-4;
        model::set_training(true);
        let mut losses = Vec::new();
        for _ in 0..8 {
            let l = yolo9_loss(&m.forward_raw(&b.images), &b.targets, (64, 64), 2, &Gains::default());
            l.total.backward();
            opt.step();
            opt.zero_grad();
            losses.push(f64::try_from(&l.total).unwrap());
        }
        model::set_training(false);
        assert!(losses.iter().all(|v| v.is_finite()), "{losses:?}");
        let tail = losses[5..].iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(tail < losses[0], "{losses:?}");
    }
}
