//! Numerical parity with LibreYOLO 1.6 on the same checkpoint and input:
//! capture/parity/parity.py builds their model (random init, fixed seed),
//! saves the checkpoint and the outputs; we load the checkpoint with our
//! reader, run our model on the same preprocessed input and compare raw head
//! outputs (max |diff| <= 1e-4), unfused and fused.
//!
//! Needs a Python with libreyolo==1.6.0: `LIBREYOLO_PARITY_PYTHON`, default
//! /tmp/libreyolo-bench-venv/bin/python (see capture/parity/README.md);
//! skipped with a message when there is none.

use std::path::PathBuf;
use std::process::Command;

use libreyolo_capture::postprocess::{self, Detection};
use libreyolo_capture::preprocess::{self, Pad};
use libreyolo_capture::{checkpoint, model::Yolo9, source};
use tch::{Device, Tensor};

fn parity_python() -> Option<PathBuf> {
    let py = std::env::var_os("LIBREYOLO_PARITY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/libreyolo-bench-venv/bin/python"));
    let ok = Command::new(&py).args(["-W", "ignore", "-c", "import libreyolo"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: no python with libreyolo==1.6.0 at {} (set LIBREYOLO_PARITY_PYTHON)", py.display());
    }
    ok.then_some(py)
}

/// Confidence threshold of the comparison: high enough that NMS sees about a
/// hundred boxes. (At 0.25 a random model gives thousands of near-identical
/// overlapping boxes, and float noise at 1e-6 flips an IoU-vs-threshold
/// decision somewhere and NMS cascades from there.)
const CONF: f64 = 0.25;

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

fn check(size: &str) {
    let Some(py) = parity_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/parity/parity.py");
    let out = Command::new(&py)
        .args(["-W", "ignore", script, "--size", size, "--conf", &CONF.to_string(), "--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "parity.py failed: {}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());

    let ck = checkpoint::load(&dir.path().join("checkpoint.pt")).unwrap();
    let reference = checkpoint::load(&dir.path().join("reference.pt")).unwrap();
    let nc = ck.meta_int("nc").unwrap();
    let mut model = Yolo9::new(ck.meta_str("size").unwrap(), nc, Device::Cpu).unwrap();
    model.load_state(&ck.state).unwrap();
    let x = reference.tensor("input").unwrap();

    let report = |label: &str, model: &Yolo9| {
        let ours = model.forward(x);
        let mut worst = 0f64;
        for (i, r) in ours.raw.iter().enumerate() {
            let d = max_abs_diff(r, reference.tensor(&format!("raw{i}")).unwrap());
            worst = worst.max(d);
        }
        let dp = max_abs_diff(&ours.predictions, reference.tensor("predictions").unwrap());
        eprintln!("parity yolo9-{size} {label}: raw max|diff| = {worst:.3e}, predictions max|diff| = {dp:.3e}");
        assert!(worst <= 1e-4, "{label}: raw head outputs differ by {worst}");
        ours
    };
    let unfused = report("unfused", &model);
    model.fuse();
    let fused = report("fused", &model);
    let d = max_abs_diff(&unfused.raw[0], &fused.raw[0]);
    eprintln!("parity yolo9-{size}: fused vs unfused raw0 max|diff| = {d:.3e}");
    assert!(d > 0.0, "fusing changed nothing: is the fused path used?");

    // Postprocess: our filter + NMS gives their boxes, on their predictions
    // and on ours.
    let img = &source::load(&[dir.path().join("image.png")]).unwrap()[0];
    let g = preprocess::geometry(img.width, img.height, 320, Pad::TopLeft);
    let theirs = reference_detections(&reference);
    let on_theirs = postprocess::detections(reference.tensor("predictions").unwrap(), 0, &g, CONF, 0.45, 300);
    let on_ours = postprocess::detections(&fused.predictions, 0, &g, CONF, 0.45, 300);
    let unmatched = |ours: &[Detection]| {
        theirs
            .iter()
            .filter(|t| {
                !ours.iter().any(|o| {
                    o.class == t.class && (o.score - t.score).abs() < 1e-4 && o.xyxy.iter().zip(&t.xyxy).all(|(a, b)| (a - b).abs() < 1e-2)
                })
            })
            .count()
    };
    eprintln!(
        "parity yolo9-{size}: NMS on their predictions: {} boxes vs their {} ({} unmatched); on ours: {} boxes ({} unmatched)",
        on_theirs.len(),
        theirs.len(),
        unmatched(&on_theirs),
        on_ours.len(),
        unmatched(&on_ours)
    );
    assert_eq!(on_theirs.len(), theirs.len());
    assert_eq!(unmatched(&on_theirs), 0, "our postprocess differs from theirs on the same predictions");

    // On our own predictions: the same boxes in the same order up to the
    // first exact tie. A random model gives anchors along the image border
    // identical scores (zero padding makes their features equal); float
    // noise of 1e-7 then decides which of the tied boxes NMS keeps first,
    // and everything after differs by which equivalent box was kept.
    let same = |a: &Detection, b: &Detection| {
        a.class == b.class && (a.score - b.score).abs() < 1e-4 && a.xyxy.iter().zip(&b.xyxy).all(|(x, y)| (x - y).abs() < 1e-2)
    };
    let agree = theirs.iter().zip(&on_ours).take_while(|(a, b)| same(a, b)).count();
    eprintln!("parity yolo9-{size}: our pipeline agrees with theirs on the first {agree} of {} boxes", theirs.len());
    if agree < theirs.len().min(on_ours.len()) {
        let (a, b) = (&theirs[agree], &on_ours[agree]);
        eprintln!("  first difference: theirs {:?} {} cls {} | ours {:?} {} cls {}", a.xyxy, a.score, a.class, b.xyxy, b.score, b.class);
        assert!((a.score - b.score).abs() < 1e-5 && a.class == b.class, "the first difference is not at a tie");
    }

    // Preprocess: our letterbox against theirs (cv2 INTER_LINEAR on uint8).
    let (x_ours, _) = preprocess::letterbox(&img.pixels, 320, Pad::TopLeft, Device::Cpu);
    let dx = max_abs_diff(&x_ours, x) * 255.0;
    let frac = (&x_ours - x).abs().gt(0.5 / 255.0).to_kind(tch::Kind::Float).mean(tch::Kind::Float).double_value(&[]);
    eprintln!("parity yolo9-{size}: letterbox max|diff| = {dx:.1} grey levels, {:.2}% of values differ", frac * 100.0);
    assert!(dx <= 2.0, "letterbox differs by {dx} grey levels");
}

fn reference_detections(r: &checkpoint::Checkpoint) -> Vec<Detection> {
    let b: Vec<f32> = Vec::try_from(r.tensor("boxes").unwrap().flatten(0, -1)).unwrap();
    let s: Vec<f32> = Vec::try_from(r.tensor("scores").unwrap()).unwrap();
    let c: Vec<i64> = Vec::try_from(r.tensor("classes").unwrap()).unwrap();
    (0..s.len()).map(|i| Detection { xyxy: [b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]], score: s[i], class: c[i] }).collect()
}

#[test]
fn parity_t() {
    check("t");
}

#[test]
fn parity_s() {
    check("s");
}
