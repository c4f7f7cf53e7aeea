//! `--weights` resolution (docs/spec.md §2.3) and building the model from it.
//!
//! A path that names a directory part (`runs/best.pt`) must exist (exit 2).
//! A bare name (`LibreYOLO9t.pt`) is looked up in the working directory,
//! then in the weights directory (`$LIBREYOLO_WEIGHTS_DIR`, default
//! `$XDG_CACHE_HOME/libreyolo/weights` or `~/.cache/libreyolo/weights`); not
//! found, the model is built with random initialisation and the profile says
//! so (`weights_source: "random-init"`): kernel timings do not depend on
//! weight values, NMS work does.

use std::path::{Path, PathBuf};

use libreyolo_core::{Error, Result};
use tch::Device;

use crate::checkpoint;
use libreyolo_core::cli::ModelSize;

use crate::model::Yolo9;
use crate::preprocess::Pad;

/// Classes of the random-init model (COCO's count, as LibreYOLO9t.pt).
pub const DEFAULT_NC: i64 = 80;

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File(PathBuf),
    RandomInit { looked_in: Vec<PathBuf> },
}

pub fn weights_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LIBREYOLO_WEIGHTS_DIR") {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("."));
    cache.join("libreyolo").join("weights")
}

pub fn resolve(arg: &str) -> Result<Source> {
    let p = Path::new(arg);
    let bare = p.components().count() == 1 && !p.is_absolute();
    if p.is_file() {
        return Ok(Source::File(p.to_path_buf()));
    }
    if p.is_dir() {
        return Err(Error::usage(format!("--weights {arg} is a directory, not a checkpoint file")));
    }
    if p.exists() {
        // A device, FIFO or socket: never read as a checkpoint (`/dev/zero`
        // would be read forever).
        return Err(Error::usage(format!("--weights {arg} is not a regular file")));
    }
    if !bare {
        return Err(Error::usage(format!("--weights {arg}: file not found")));
    }
    let dir = weights_dir();
    let candidate = dir.join(arg);
    if candidate.is_file() {
        return Ok(Source::File(candidate));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    Ok(Source::RandomInit { looked_in: vec![cwd, dir] })
}

/// A model ready for inference, and what the profile records about it.
pub struct Loaded {
    pub model: Yolo9,
    pub size: ModelSize,
    pub nc: i64,
    pub names: Option<Vec<String>>,
    pub pad: Pad,
    /// `file` or `random-init`.
    pub weights_source: &'static str,
    pub weights_path: Option<String>,
    pub checkpoint_imgsz: Option<i64>,
    /// Lines for stderr (warnings, overrides).
    pub notes: Vec<String>,
}

/// Builds the model: from the checkpoint, or random-init. The checkpoint's
/// `size`/`nc` win over `--size` (with a note).
pub fn load(arg: &str, size: ModelSize, device: Device) -> Result<Loaded> {
    match resolve(arg)? {
        Source::RandomInit { looked_in } => {
            tch::manual_seed(0);
            let model =
                Yolo9::new(size, DEFAULT_NC, device).map_err(|e| Error::failed(e.to_string()))?;
            let looked: Vec<String> = looked_in.iter().map(|p| p.display().to_string()).collect();
            Ok(Loaded {
                model,
                size,
                nc: DEFAULT_NC,
                names: None,
                pad: Pad::TopLeft,
                weights_source: "random-init",
                weights_path: None,
                checkpoint_imgsz: None,
                notes: vec![format!(
                    "warning: weights {arg} not found (looked in {}); using a randomly initialised YOLOv9-{size}: timings are real, detections are not (profile records weights_source: random-init)",
                    looked.join(" and ")
                )],
            })
        }
        Source::File(path) => {
            let shown = path.display().to_string();
            let ck = checkpoint::load(&path).map_err(|e| {
                Error::failed(format!("cannot read checkpoint {shown}: {e}")).caused_by(e)
            })?;
            if let Some(family) = ck.meta_str("model_family").filter(|f| *f != "yolo9") {
                return Err(Error::failed(format!(
                    "checkpoint {shown} is a `{family}` model; `profile infer` runs YOLOv9 (model_family \"yolo9\")"
                )));
            }
            if let Some(task) = ck.meta_str("task").filter(|t| *t != "detect") {
                return Err(Error::failed(format!(
                    "checkpoint {shown} is a `{task}` model; only detection is supported"
                )));
            }
            let mut notes = Vec::new();
            let used_size = match ck.meta_str("size") {
                Some(s) => ModelSize::parse(s).ok_or_else(|| {
                    Error::failed(format!("checkpoint {shown} has unknown YOLOv9 size `{s}`"))
                })?,
                None => detect_size(&ck).unwrap_or(size),
            };
            if used_size != size {
                notes.push(format!("note: checkpoint {shown} is YOLOv9-{used_size}; using it instead of --size {size}"));
            }
            let nc = ck
                .meta_int("nc")
                .or_else(|| ck.tensor("head.cv3.0.2.weight").and_then(rows))
                .ok_or_else(|| {
                    Error::failed(format!(
                        "checkpoint {shown}: no `nc` and no class head to read it from"
                    ))
                })?;
            let cls_hidden = ck.tensor("head.cv3.0.0.conv.weight").and_then(rows);
            let mut model = Yolo9::with_class_width(used_size, nc, cls_hidden, device)
                .map_err(|e| Error::failed(e.to_string()))?;
            model
                .load_state(&ck.state)
                .map_err(|e| Error::failed(format!("checkpoint {shown}: {e}")).caused_by(e))?;
            Ok(Loaded {
                model,
                size: used_size,
                nc,
                names: ck.names(),
                pad: Pad::parse(ck.meta_str("letterbox_pad")),
                weights_source: "file",
                weights_path: Some(shown),
                checkpoint_imgsz: ck.meta_int("imgsz"),
                notes,
            })
        }
    }
}

/// The size of a bare state dict, from the stem's width and first block.
fn detect_size(ck: &checkpoint::Checkpoint) -> Option<ModelSize> {
    let c0 = rows(ck.tensor("backbone.conv0.conv.weight")?)?;
    let elan = ck.tensor("backbone.elan1.cv2.conv.weight").is_some();
    Some(match (c0, elan) {
        (16, _) => ModelSize::T,
        (32, true) => ModelSize::S,
        (32, false) => ModelSize::M,
        (64, _) => ModelSize::C,
        _ => return None,
    })
}

/// A tensor's first dimension; none for a scalar (a file can hold anything).
fn rows(t: &tch::Tensor) -> Option<i64> {
    t.size().first().copied()
}
