//! The measured training loop of `profile run` (docs/spec.md §2.2).
//!
//! Each iteration is one real YOLOv9 training step: the batch from the
//! loader (`step/dataload`, the time the step waits on it), the copy to the
//! device (`step/to_device`), the forward in training mode and the family's
//! loss (`step/forward`: the main head and the PGI auxiliary branch
//! LibreYOLO 1.6 attaches for training, loss = main + 0.25 · auxiliary),
//! backward (`step/backward`) and the weight update (`step/optimizer`:
//! LibreYOLO's SGD over its three parameter groups, then its model EMA; see
//! [`super::optim`] and [`super::ema`]; LibreYOLO updates the EMA outside
//! its phases, where its time shows in no phase). The learning rate and momentum
//! follow YOLO9's linear warmup from the first iteration, as in a fresh
//! LibreYOLO training. With `--amp` on CUDA the forward and the loss run
//! under float16 autocast and the loss is scaled ([`super::scaler`]). Each
//! measured step is a `ProfilerStep#N` range; inside `step/forward`, the
//! model's module scopes (`backbone` › `model.0 Conv`, …, and the `aux`
//! branch; [`crate::model`]) unless `--no-module-scopes`.
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
//! `--batch -1` on CUDA probes memory first ([`super::autobatch`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use libreyolo_core::cli::{ModelSize, RunArgs};
use libreyolo_core::lens::capture::Capture;
use libreyolo_core::profile::measured::RealTiming;
use libreyolo_core::profile::{self, Measurements, Mode};
use libreyolo_core::render::{self, text};
use libreyolo_core::{Error, Result};
use serde_json::{Map, json};
use tch::{Device, Tensor};

use super::autobatch;
use super::data::{Dataset, Loader, MAX_LABELS};
use super::ema::Ema;
use super::loss::{Gains, yolo9_train_loss};
use super::optim::{self, Schedule, Sgd};
use super::scaler::GradScaler;
use crate::checkpoint;
use crate::device;
use crate::model::{self, AuxLoad, Yolo9};
use crate::profiler::{self, Options, Range, Session};
use crate::weights;
use crate::window::Window;

/// The phases, in step order.
pub const PHASES: [&str; 5] = ["dataload", "to_device", "forward", "backward", "optimizer"];

/// Weight of the PGI auxiliary head's loss (`YOLO9Config.aux_weight`; its
/// trainer calls `enable_aux(weight=0.25)` before training).
pub const AUX_WEIGHT: f64 = 0.25;

/// Validated settings of one `run`: the command line checked once
/// ([`Plan::new`]), so nothing past it reads the clap structs.
pub struct Plan {
    /// The dataset argument as given (`synthetic`, a YAML, a name).
    data: String,
    /// `--weights`: a checkpoint path or name, as given.
    weights: String,
    size: ModelSize,
    repeat: usize,
    threads: Option<usize>,
    project: PathBuf,
    /// `--json`: the report as JSON on stdout.
    json: bool,
    batch: usize,
    imgsz: i64,
    warmup: usize,
    steps: usize,
    unsynced: usize,
    workers: usize,
    device: Device,
    /// Float16 autocast + loss scaling (`--amp` on CUDA).
    amp: bool,
    /// `--batch -1` on CUDA: fit the batch after the model is built.
    fit_batch: bool,
    /// What the `--batch -1` probe saw and chose.
    autobatch: Option<autobatch::Fit>,
    /// Full batches in one pass over the data (the schedule's epoch).
    iters_per_epoch: usize,
    notes: Vec<String>,
    /// Progress lines on stderr during the window (interactive, not --json).
    progress: bool,
    /// Record the model's module scopes in the trace.
    module_scopes: bool,
}

impl Plan {
    /// The epochs of the schedule: LibreYOLO's `profile run` asks its
    /// trainer for warmup + steps + 5 and stops once the window is full.
    fn epochs(&self) -> usize {
        self.warmup + self.steps + 5
    }
}

impl Plan {
    /// Checks the flags (exit 2 on a bad one); the batch of `--batch -1` on
    /// CUDA is fitted later, once the model is built.
    pub fn new(args: &RunArgs) -> Result<Plan> {
        let device = device::parse(args.device)?;
        let mut notes = Vec::new();
        let (batch, fit_batch) = match args.batch {
            -1 if device.is_cuda() => (0, true),
            -1 => {
                notes.push("note: --batch -1 fits the batch to CUDA memory and needs a CUDA device; using 16".into());
                (16, false)
            }
            b if b >= 1 => (b as usize, false),
            b => {
                return Err(Error::usage(format!(
                    "--batch {b}: expected a positive batch or -1 (auto-fit on CUDA)"
                )));
            }
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
        let imgsz = model::check_imgsz(args.imgsz)?;
        let budget = libreyolo_core::budget::Budget::from_flag(args.max_memory.as_deref())?;
        model::check_memory(batch, imgsz, 100, device, &budget)?;
        // LibreYOLO's AMP path is CUDA's; on the CPU it trains fp32 either way.
        let amp = !args.no_amp && device.is_cuda();
        use std::io::IsTerminal;
        let progress = !args.json && std::io::stderr().is_terminal();
        Ok(Plan {
            data: args.data.clone(),
            weights: args.weights.clone(),
            size: args.size,
            repeat: args.repeat,
            threads: args.threads,
            project: PathBuf::from(&args.project),
            json: args.json,
            batch,
            imgsz,
            warmup: args.warmup,
            steps: args.steps,
            unsynced: args.steps.div_ceil(2),
            workers: args.workers,
            device,
            amp,
            fit_batch,
            autobatch: None,
            iters_per_epoch: 0,
            notes,
            progress,
            module_scopes: !args.no_module_scopes,
        })
    }
}

/// The window must fit in one pass over the data (last partial batch
/// dropped); otherwise no profile (exit 3) with the three ways out.
fn check_window(p: &mut Plan, ds: &Dataset) -> Result<()> {
    let batch = p.batch;
    let available = ds.len() / batch;
    let needed = p.warmup + p.steps;
    if available < needed {
        let fit_steps = available.saturating_sub(p.warmup);
        let fit_batch = ds.len() / needed;
        let mut ways = vec![format!("a larger dataset (at least {} images)", needed * batch)];
        ways.push(if fit_steps >= 2 {
            format!("fewer steps (--steps {fit_steps})")
        } else {
            format!("fewer steps (with --warmup {} there is no room for 2 steps)", p.warmup)
        });
        ways.push(if fit_batch >= 1 {
            format!("a smaller batch (--batch {fit_batch})")
        } else {
            "a smaller batch (not even --batch 1 fits)".into()
        });
        return Err(Error::no_profile(format!(
            "no profile: {} images at batch {batch} give {available} iterations, but --warmup {} + --steps {} need {needed}. Ways out: {}",
            ds.len(),
            p.warmup,
            p.steps,
            ways.join("; ")
        )));
    }
    p.iters_per_epoch = available;
    Ok(())
}

/// `--batch -1` on CUDA: real training steps at a few batches, no
/// optimizer step, and the batch that fills [`autobatch::FRACTION`] of VRAM.
fn fit_batch(p: &mut Plan, m: &TrainModel) -> Result<()> {
    let vars = m.model.vs.variables();
    let stats: Vec<Tensor> =
        vars.values().filter(|t| !t.requires_grad()).map(|t| t.shallow_clone()).collect();
    let params: Vec<Tensor> =
        vars.values().filter(|t| t.requires_grad()).map(|t| t.shallow_clone()).collect();
    let (dev, imgsz, nc, amp) = (p.device, p.imgsz, m.model.nc, p.amp);
    let training = model::training();
    let fit = autobatch::probe(dev, &stats, |b| {
        let x = Tensor::zeros([b as i64, 3, imgsz, imgsz], (tch::Kind::Float, dev));
        // Targets as every batch has them, padded to MAX_LABELS rows: the
        // assignment's tensors are (batch, MAX_LABELS, anchors), most of the
        // memory at a large batch (a probe with one row chose batch 534 on
        // an H200, whose first step asked for 20 GiB more than was left).
        let y = Tensor::full([b as i64, MAX_LABELS as i64, 5], -1.0, (tch::Kind::Float, dev));
        y.select(1, 0).copy_(&Tensor::from_slice(&[0.0f32, 0.25, 0.25, 0.75, 0.75]));
        let loss = autocast(amp, || {
            let maps = m.model.forward_train(&x);
            yolo9_train_loss(&maps, &y, (imgsz, imgsz), nc, &Gains::default(), m.model.aux_weight())
        })?;
        loss.total.backward();
        crate::ops::clear_grads(&params)
    });
    drop(training);
    let fit = fit?;
    let gib = |bytes: i64| bytes as f64 / (1u64 << 30) as f64;
    p.notes.push(format!(
        "note: --batch -1 chose batch {} ({:.0}% of {:.1} GiB; probes {}{})",
        fit.batch,
        autobatch::FRACTION * 100.0,
        gib(fit.total_bytes),
        fit.probes
            .iter()
            .map(|(b, bytes)| format!("{b}: {:.2} GiB", gib(*bytes)))
            .collect::<Vec<_>>()
            .join(", "),
        fit.checked
            .iter()
            .map(|(b, bytes)| match bytes {
                Some(bytes) => format!("; batch {b} ran: {:.2} GiB", gib(*bytes)),
                None => format!("; batch {b} ran out of memory"),
            })
            .collect::<String>()
    ));
    p.batch = fit.batch;
    p.autobatch = Some(fit);
    Ok(())
}

/// Runs `f` under CUDA float16 autocast when `on` (LibreYOLO's forward and
/// loss under `autocast("cuda")`).
fn autocast<T>(on: bool, f: impl FnOnce() -> T) -> Result<T> {
    if !on {
        return Ok(f());
    }
    profiler::set_cuda_autocast(true, false)?;
    let out = f();
    profiler::set_cuda_autocast(false, false)?;
    Ok(out)
}

/// The model to train and what the profile records about it.
struct TrainModel {
    model: Yolo9,
    size: ModelSize,
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
fn load_model(arg: &str, size: ModelSize, nc: i64, dev: Device) -> Result<TrainModel> {
    match weights::resolve(arg)? {
        weights::Source::RandomInit { .. } => {
            tch::manual_seed(0);
            let mut model = Yolo9::new(size, nc, dev).map_err(|e| Error::failed(e.to_string()))?;
            model.enable_aux(AUX_WEIGHT);
            let aux = model.load_aux_state(&[]);
            Ok(TrainModel {
                model,
                size,
                weights_source: "random-init",
                weights_path: None,
                aux,
                notes: vec![format!(
                    "note: weights {arg} not found; training a randomly initialised YOLOv9-{size} (timings are real)"
                )],
            })
        }
        weights::Source::File(path) => {
            let shown = path.display().to_string();
            let ck = checkpoint::load(&path).map_err(|e| {
                Error::failed(format!("cannot read checkpoint {shown}: {e}")).caused_by(e)
            })?;
            let used = match ck.meta_str("size") {
                Some(s) => ModelSize::parse(s).ok_or_else(|| {
                    Error::failed(format!("checkpoint {shown} has unknown YOLOv9 size `{s}`"))
                })?,
                None => size,
            };
            let ck_nc =
                ck.meta_int("nc").or_else(|| ck.tensor("head.cv3.0.2.weight").map(|t| t.size()[0]));
            let cls_hidden = ck.tensor("head.cv3.0.0.conv.weight").map(|t| t.size()[0]);
            tch::manual_seed(0);
            let mut model = Yolo9::with_class_width(used, nc, cls_hidden, dev)
                .map_err(|e| Error::failed(e.to_string()))?;
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
                let mut s: Vec<(String, Tensor)> = ck
                    .state
                    .iter()
                    .filter(|(k, _)| !is_cls_out(k))
                    .map(|(k, t)| (k.clone(), t.shallow_clone()))
                    .collect();
                s.extend(
                    own.iter().filter(|(k, _)| is_cls_out(k)).map(|(k, t)| (k.clone(), t.copy())),
                );
                s
            };
            model
                .load_state(&state)
                .map_err(|e| Error::failed(format!("checkpoint {shown}: {e}")).caused_by(e))?;
            model.enable_aux(AUX_WEIGHT);
            let aux = model.load_aux_state(&ck.state);
            if aux.loaded < aux.total {
                notes.push(format!(
                    "note: checkpoint {shown} holds {} of the {} PGI auxiliary tensors this model trains; the rest start from random init, as in LibreYOLO",
                    aux.loaded, aux.total
                ));
            }
            Ok(TrainModel {
                model,
                size: used,
                weights_source: "file",
                weights_path: Some(shown),
                aux,
                notes,
            })
        }
    }
}

/// What one trial measured.
struct Trial {
    step_ms: Vec<f64>,
    dataload_ms: Vec<f64>,
    phase_ms: [Vec<f64>; 5],
    losses: Vec<f64>,
    /// Learning rate of the first and last step of the window.
    lr: (f64, f64),
    /// Optimizer steps AMP skipped for overflowing gradients.
    amp_skipped: usize,
    /// Peak CUDA memory allocated over the whole trial, MB.
    peak_vram_mb: Option<f64>,
    params_changed: bool,
    /// What else ran on the machine during the measured steps.
    conditions: Option<libreyolo_core::conditions::Conditions>,
    trace: Option<tempfile::TempPath>,
}

fn range<'a>(s: &'a Option<Session>, name: &str) -> Option<Range<'a>> {
    s.as_ref().map(|s| s.range(name))
}

fn run_trial(p: &Plan, ds: &Dataset, m: &TrainModel, out_dir: &Path) -> Result<Trial> {
    let total = p.warmup + p.steps;
    let nc = m.model.nc;
    let gains = Gains::default();
    // Built after the model (PGI branch included), as LibreYOLO's setup.
    let mut opt = Sgd::new(&m.model.vs);
    let schedule = Schedule::new(p.iters_per_epoch, p.epochs());
    schedule.apply(&mut opt, 0);
    let mut ema = Ema::new(&m.model.vs);
    let mut scaler = p.amp.then(|| GradScaler::new(p.device));
    // A few tensors to prove the weights move.
    let watched: Vec<(String, Tensor)> = {
        let mut v: Vec<(String, Tensor)> =
            m.model.vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(k, t)| (k, t.detach().copy())).collect()
    };
    let mut loader =
        Loader::new(ds.clone(), p.batch, p.imgsz as usize, total, p.workers, p.device.is_cuda());
    let training = model::training();
    let mut session: Option<Session> = None;
    let mut t = Trial {
        step_ms: Vec::new(),
        dataload_ms: Vec::new(),
        phase_ms: Default::default(),
        losses: Vec::new(),
        lr: (0.0, 0.0),
        amp_skipped: 0,
        peak_vram_mb: None,
        params_changed: false,
        conditions: None,
        trace: None,
    };
    profiler::reset_peak_vram(p.device)?;
    let mut window = None;
    let result = (|| -> Result<()> {
        for i in 0..total {
            if i == p.warmup {
                window = Some(Window::start(p.device));
                session = Some(Session::start(Options {
                    cuda: p.device.is_cuda(),
                    all_threads: false,
                    memory: false,
                    module_scopes: p.module_scopes,
                })?);
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
                loader.next_batch().ok_or_else(|| {
                    Error::failed("the loader ran out of batches inside the window")
                })??
            };
            let t1 = Instant::now();
            let (x, y) = {
                let _r = range(&session, "step/to_device");
                // Non-blocking from pinned memory on CUDA, as LibreYOLO's loader.
                let copy = |t: &Tensor| t.to_device_(p.device, t.kind(), p.device.is_cuda(), false);
                (copy(&batch.images), copy(&batch.targets))
            };
            sync(synced);
            let t2 = Instant::now();
            let loss = {
                let _r = range(&session, "step/forward");
                autocast(p.amp, || {
                    let maps = m.model.forward_train(&x);
                    yolo9_train_loss(
                        &maps,
                        &y,
                        (p.imgsz, p.imgsz),
                        nc,
                        &gains,
                        m.model.aux_weight(),
                    )
                })?
            };
            sync(synced);
            let t3 = Instant::now();
            {
                let _r = range(&session, "step/backward");
                match &scaler {
                    Some(sc) => sc.scale(&loss.total).backward(),
                    None => loss.total.backward(),
                }
            }
            sync(synced);
            let t4 = Instant::now();
            {
                let _r = range(&session, "step/optimizer");
                if i == p.warmup {
                    t.lr.0 = opt.lr;
                }
                t.lr.1 = opt.lr;
                match &mut scaler {
                    Some(sc) => {
                        sc.step(&mut opt)?;
                        sc.update()?;
                    }
                    None => opt.step()?,
                }
                ema.update()?;
                opt.zero_grad()?;
            }
            // LibreYOLO's trainer reads the loss every step (`.item()`).
            let value = f64::try_from(&loss.total).unwrap_or(f64::NAN);
            schedule.apply(&mut opt, i + 1);
            let t5 = Instant::now();
            drop(step);
            if !value.is_finite() {
                return Err(Error::failed(format!(
                    "the training loss is not finite ({value}) at step {i}"
                )));
            }
            t.losses.push(value);
            if p.progress {
                let (what, k, n) = if measuring {
                    ("step", i - p.warmup + 1, p.steps)
                } else {
                    ("warmup", i + 1, p.warmup)
                };
                // The progress line redraws itself (CR, erase line): written
                // as is, and not a panic on an unwritable stderr.
                let _ = write!(
                    std::io::stderr(),
                    "\r\x1b[2K{what} {k}/{n}  loss {value:.3}  {:.0} ms",
                    ms_since(t0)
                );
            }
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            if synced {
                for (k, (a, b)) in
                    [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)].into_iter().enumerate()
                {
                    t.phase_ms[k].push(ms(a, b));
                }
            } else if measuring {
                t.step_ms.push(ms(t0, t5));
                t.dataload_ms.push(ms(t0, t1));
            }
        }
        Ok(())
    })();
    drop(training);
    if p.progress {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    result?;
    t.conditions = window.map(Window::finish);
    t.amp_skipped = scaler.map_or(0, |sc| sc.skipped);
    t.peak_vram_mb = profiler::peak_vram_mb(p.device)?;
    let s = session.take().expect("the window has measured steps");
    t.trace = Some(s.finish_in(out_dir)?);
    let now = m.model.vs.variables();
    t.params_changed =
        watched.iter().any(|(k, before)| now.get(k).is_some_and(|v| !v.detach().equal(before)));
    Ok(t)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn measurements(p: &Plan, m: &TrainModel, ds: &Dataset, t: &Trial) -> Measurements {
    let r3 = |v: f64| libreyolo_core::util::round(v, 3);
    let step_ms = mean(&t.step_ms).unwrap_or(0.0);
    let dl = mean(&t.dataload_ms).unwrap_or(0.0);
    let img_per_s =
        (step_ms > 0.0).then(|| libreyolo_core::util::round(p.batch as f64 * 1e3 / step_ms, 2));
    let mut meta = Map::new();
    // The reference's keys, in its order, then ours.
    meta.insert(
        "model".into(),
        json!(crate::infer::model_label(&format!("YOLOv9-{}", m.size), m.weights_source)),
    );
    meta.insert("device".into(), json!(device::name(p.device)));
    meta.insert("batch".into(), json!(p.batch));
    meta.insert("imgsz".into(), json!(p.imgsz));
    meta.insert("amp".into(), json!(p.amp));
    meta.insert("amp_dtype".into(), json!("float16"));
    meta.insert("workers".into(), json!(p.workers));
    meta.insert("mode".into(), json!("training"));
    meta.insert("size".into(), json!(m.size));
    meta.insert("nc".into(), json!(m.model.nc));
    meta.insert(
        "weights".into(),
        json!(m.weights_path.clone().unwrap_or_else(|| p.weights.clone())),
    );
    meta.insert("weights_source".into(), json!(m.weights_source));
    meta.insert("data".into(), json!(p.data));
    meta.insert("images".into(), json!(ds.len()));
    meta.insert("warmup".into(), json!(p.warmup));
    meta.insert("steps".into(), json!(p.steps));
    meta.insert("unsynced_steps".into(), json!(t.step_ms.len()));
    meta.insert("synced_steps".into(), json!(t.phase_ms[0].len()));
    meta.insert(
        "optimizer".into(),
        json!({
            "name": "SGD", "lr0": optim::LR, "momentum": optim::MOMENTUM, "nesterov": optim::NESTEROV,
            "weight_decay": optim::WEIGHT_DECAY, "schedule": "linear",
            "warmup_iters": Schedule::new(p.iters_per_epoch, p.epochs()).warmup_iters(),
            "lr_window": [t.lr.0, t.lr.1], "ema": true,
        }),
    );
    if p.amp {
        meta.insert("amp_skipped_steps".into(), json!(t.amp_skipped));
    }
    if let Some(f) = &p.autobatch {
        meta.insert(
            "autobatch".into(),
            json!({"fraction": autobatch::FRACTION, "total_bytes": f.total_bytes, "probes": f.probes, "checked": f.checked, "batch": f.batch}),
        );
    }
    meta.insert("aux_weight".into(), json!(m.model.aux_weight()));
    meta.insert("aux_tensors".into(), json!(m.aux.total));
    meta.insert("aux_tensors_loaded".into(), json!(m.aux.loaded));
    meta.insert("loss_first".into(), json!(t.losses.first().map(|v| r3(*v))));
    meta.insert("loss_last".into(), json!(t.losses.last().map(|v| r3(*v))));
    meta.insert("loss_finite".into(), json!(t.losses.iter().all(|v| v.is_finite())));
    meta.insert("params_changed".into(), json!(t.params_changed));
    meta.insert("module_scopes".into(), json!(p.module_scopes));
    meta.insert("threads".into(), json!(tch::get_num_threads()));
    let mut composition = Measurements::default().composition_ms;
    for (k, name) in PHASES.iter().enumerate() {
        if let Some(v) = mean(&t.phase_ms[k]) {
            composition.insert(name.to_string(), r3(v));
        }
    }
    Measurements {
        meta: meta.into(),
        real: Some(RealTiming {
            step_ms: r3(step_ms),
            img_per_s,
            dataload_ms: Some(r3(dl)),
            dataload_frac: Some(if step_ms > 0.0 { r3(dl / step_ms) } else { 0.0 }),
        }),
        composition_ms: composition,
        peak_vram_mb: t.peak_vram_mb,
        mode: Some(Mode::Training),
        versions: Some(crate::infer::versions()),
        host: Some(crate::infer::host(t.conditions.as_ref())),
        ..Default::default()
    }
}

/// Runs `profile run` and returns what to print on stdout: the dataset
/// and the flags checked into a [`Plan`], the capture run, its report
/// rendered.
pub fn run(args: &RunArgs) -> Result<String> {
    let ds = Dataset::parse(&args.data)?;
    let p = Plan::new(args)?;
    let json = p.json;
    let report = capture(p, ds)?;
    if json { render::json(&report) } else { Ok(text::capture(&report)) }
}

/// Runs the capture `p` plans over `ds`: writes its files and returns its
/// report.
pub fn capture(mut p: Plan, mut ds: Dataset) -> Result<Capture> {
    device::set_threads(p.threads)?;
    let m = load_model(&p.weights, p.size, ds.nc(), p.device)?;
    if p.fit_batch {
        fit_batch(&mut p, &m)?;
    }
    // Plain `synthetic` grows to fill the window; `synthetic:N` is exactly N.
    if let (Dataset::Synthetic { n }, "synthetic") = (&mut ds, p.data.trim()) {
        *n = (*n).max((p.warmup + p.steps) * p.batch);
    }
    check_window(&mut p, &ds)?;
    for note in ds.notes().iter().chain(p.notes.iter()).chain(m.notes.iter()) {
        crate::output::say(note);
    }
    let project = p.project.clone();
    let out_dir = project.join("train");
    crate::output::prepare(&out_dir)?;
    let mut m = m;
    let mut trial_profiles = Vec::new();
    let mut trial_paths = Vec::new();
    let mut last = None;
    for k in 0..p.repeat {
        if p.repeat > 1 {
            crate::output::say(&format!("trial {}/{}", k + 1, p.repeat));
            if k > 0 {
                // Every trial trains the same starting weights.
                m = load_model(&p.weights, p.size, ds.nc(), p.device)?;
            }
        }
        let trial = run_trial(&p, &ds, &m, &out_dir)?;
        let meas = measurements(&p, &m, &ds, &trial);
        let trace_tmp = trial.trace.ok_or_else(|| Error::failed("no trace was captured"))?;
        let prof = crate::output::analyze(&trace_tmp, &meas)?;
        let is_last = k + 1 == p.repeat;
        trial_paths.push(if is_last {
            out_dir.join("profile.json").display().to_string()
        } else {
            format!("trial {}", k + 1)
        });
        trial_profiles.push(prof.clone());
        if is_last {
            last = Some((meas, trace_tmp, prof));
        }
    }
    let (mut meas, trace_tmp, mut prof) = last.expect("at least one trial");
    crate::output::link_sidecar(&mut meas, &trace_tmp);
    let trace_path = out_dir.join("profile_trace.json");
    let profile_path = out_dir.join("profile.json");
    libreyolo_core::files::write_json(&out_dir.join(profile::measured::SIDECAR), &meas)?;
    trace_tmp.persist(&trace_path).map_err(|e| {
        Error::failed(format!("cannot write {}: {e}", trace_path.display())).caused_by(e)
    })?;
    prof.trace = Some(trace_path.display().to_string());
    libreyolo_core::files::write_json(&profile_path, &prof)?;
    if p.repeat > 1 {
        if let Some(l) = trial_profiles.last_mut() {
            *l = prof.clone();
        }
        let mut agg =
            profile::repeat::aggregate(&trial_profiles, &trial_paths).expect("at least one trial");
        libreyolo_core::conditions::set_in_host(
            &mut agg.host,
            crate::output::report_trials(&trial_profiles).as_ref(),
        );
        let path = project.join("profile_repeat.json");
        libreyolo_core::files::write_json(&path, &agg)?;
        return Ok(Capture::training(&agg, &path));
    }
    Ok(Capture::training(&prof, &profile_path))
}
