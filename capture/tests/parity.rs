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

use libreyolo_capture::{checkpoint, model::Yolo9};
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

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

fn check(size: &str) {
    let Some(py) = parity_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/parity/parity.py");
    let out = Command::new(&py)
        .args(["-W", "ignore", script, "--size", size, "--out", dir.path().to_str().unwrap()])
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
}

#[test]
fn parity_t() {
    check("t");
}

#[test]
fn parity_s() {
    check("s");
}
