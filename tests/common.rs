//! Helpers shared by the end-to-end tests: the binary, the shared data, and
//! an independent (brute-force, whole-file) reading of traces to check the
//! streaming analysis against.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn shared() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared"))
}

pub fn traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(shared().join("traces")).expect("shared/traces exists") {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                if f.to_string_lossy().ends_with(".json.gz") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    assert!(out.len() >= 7, "expected the shared GPU traces, found {out:?}");
    out
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_libreyolo")).args(args).output().expect("binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `libreyolo profile <args> --json`, expects exit 0, parses stdout.
pub fn json(args: &[&str]) -> Value {
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    all.push("--json");
    let r = run(&all);
    assert_eq!(r.code, 0, "{all:?} failed: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{all:?}: stdout is not JSON ({e}): {}", r.stdout))
}

pub fn read_json(path: &Path) -> Value {
    let mut bytes = Vec::new();
    std::fs::File::open(path).unwrap().read_to_end(&mut bytes).unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out).unwrap();
        bytes = out;
    }
    serde_json::from_slice(&bytes).unwrap()
}

/// What a whole-file reading of a trace says, computed the simple way.
#[derive(Debug, Default)]
pub struct Truth {
    pub steps: usize,
    /// Kernels launched (or, without a launch, running) inside the steps.
    pub kernels: u64,
    pub kernel_us: f64,
    pub per_kernel: HashMap<String, (u64, f64)>,
    pub ops: u64,
}

pub fn truth(path: &Path) -> Truth {
    let doc = read_json(path);
    let events = match &doc {
        Value::Array(a) => a.clone(),
        v => v["traceEvents"].as_array().unwrap().clone(),
    };
    let mut steps: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let mut launches: HashMap<i64, f64> = HashMap::new();
    for e in &events {
        let name = e["name"].as_str().unwrap_or("");
        let cat = e["cat"].as_str().unwrap_or("");
        let (ts, dur) = (e["ts"].as_f64().unwrap_or(0.0), e["dur"].as_f64().unwrap_or(0.0));
        if e["ph"] != "X" {
            continue;
        }
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            if cat == "user_annotation" || cat == "Operator" {
                let n: u64 = n.parse().unwrap();
                let s = steps.entry(n).or_insert((ts, ts + dur));
                s.0 = s.0.min(ts);
                s.1 = s.1.max(ts + dur);
            }
        }
        if matches!(cat, "cuda_runtime" | "Runtime" | "cuda_driver") {
            if let Some(c) = e["args"]["correlation"].as_i64() {
                launches.insert(c, ts);
            }
        }
    }
    let in_step = |ts: f64| steps.is_empty() || steps.values().any(|(s, e)| *s <= ts && ts < *e);
    let mut t = Truth { steps: steps.len().max(1), ..Default::default() };
    for e in &events {
        let cat = e["cat"].as_str().unwrap_or("");
        if e["ph"] != "X" {
            continue;
        }
        let ts = e["ts"].as_f64().unwrap_or(0.0);
        let name = e["name"].as_str().unwrap_or("");
        if cat == "kernel" || cat == "Kernel" {
            let at = e["args"]["correlation"].as_i64().and_then(|c| launches.get(&c).copied()).unwrap_or(ts);
            if in_step(at) {
                let dur = e["dur"].as_f64().unwrap_or(0.0);
                t.kernels += 1;
                t.kernel_us += dur;
                let k = t.per_kernel.entry(name.to_string()).or_default();
                k.0 += 1;
                k.1 += dur;
            }
        }
        let is_op = cat == "cpu_op" || (cat == "Operator" && !name.starts_with("ProfilerStep#") && !name.starts_with("step/"));
        if is_op && in_step(ts) {
            t.ops += 1;
        }
    }
    t
}
