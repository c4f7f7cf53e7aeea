//! Helpers shared by the end-to-end tests: the binary, the fixtures (real
//! traces and reference profiles in `tests/fixtures/`), and an independent (brute-force, whole-file) reading of traces to check the
//! streaming analysis against.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `tests/fixtures/`: `traces/<folder>/*.json.gz` (real GPU traces) and
/// `reference/<run>/…` (LibreYOLO 1.6's profiles); sources and licences in
/// `tests/fixtures/README.md`.
pub fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures"))
}

/// A fixture folder's trace: its first `.json.gz`, by name.
pub fn first_trace(folder: &str) -> PathBuf {
    let dir = fixtures().join("traces").join(folder);
    let files = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let traces = files.map(|f| f.unwrap().path());
    traces.filter(|p| p.to_string_lossy().ends_with(".json.gz")).min().expect("a .json.gz")
}

/// `libreyolo profile <args>`: exit 0, its stdout.
pub fn profile_out(args: &[&str]) -> String {
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    let r = run(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    r.stdout
}

/// The fixtures folder under the name the tests have always used:
/// `shared().join("traces/…")`, `shared().join("reference/…")`.
pub fn shared() -> PathBuf {
    fixtures()
}

pub fn traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(fixtures().join("traces")).expect("tests/fixtures/traces exists") {
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
    assert!(out.len() >= 7, "expected the GPU traces of tests/fixtures/traces, found {out:?}");
    out
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    let out: Output =
        Command::new(env!("CARGO_BIN_EXE_libreyolo")).args(args).output().expect("binary runs");
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
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{all:?}: stdout is not JSON ({e}): {}", r.stdout))
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

/// A trace's events, from its JSON (an object with `traceEvents`, or a
/// bare array as late-2020 files are).
pub fn trace_events(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        _ => v["traceEvents"].as_array().unwrap().clone(),
    }
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
    /// The measured steps as [start, end) in µs (the whole trace when none).
    pub windows: Vec<(f64, f64)>,
    /// Every kernel: (name, device, start µs, end µs).
    pub spans: Vec<(String, i64, f64, f64)>,
}

/// The reviewed table of real kernel names: name → (category, Tensor Core).
pub fn kernel_table() -> HashMap<String, (String, bool)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/kernel_names.tsv"
    ))
    .unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c.len() == 4).then(|| (c[3].to_string(), (c[0].to_string(), c[1] == "1")))
        })
        .collect()
}

/// Union length of intervals (sorted or not).
pub fn union_len(iv: &[(f64, f64)]) -> f64 {
    let mut v = iv.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut total, mut cur): (f64, Option<(f64, f64)>) = (0.0, None);
    for (s, e) in v {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0.0, |(s, e)| e - s)
}

/// Length of the part of `a` (a union) that `b` (a union) also covers,
/// by sweeping both as sets of points: |a ∩ b| = |a| + |b| − |a ∪ b|.
pub fn common_len(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let all: Vec<(f64, f64)> = a.iter().chain(b.iter()).copied().collect();
    union_len(a) + union_len(b) - union_len(&all)
}

/// Clips intervals to windows.
pub fn clip(iv: &[(f64, f64)], windows: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for &(s, e) in iv {
        for &(ws, we) in windows {
            let (cs, ce) = (s.max(ws), e.min(we));
            if ce > cs {
                out.push((cs, ce));
            }
        }
    }
    out
}

/// The `ProfilerStep#N` windows (µs, a step's copies merged), or without
/// them the optimizer's ([`optimizer_steps`]), and each launch's start by
/// correlation id, from the raw events.
pub fn steps_and_launches(events: &[Value]) -> (BTreeMap<u64, (f64, f64)>, HashMap<i64, f64>) {
    let mut steps: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let mut launches: HashMap<i64, f64> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let name = e["name"].as_str().unwrap_or("");
        let cat = e["cat"].as_str().unwrap_or("");
        let (ts, dur) = (e["ts"].as_f64().unwrap_or(0.0), e["dur"].as_f64().unwrap_or(0.0));
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
    // An empty last step under 5% of every other step that ends with the
    // recording is the profiler stopping (docs/analysis.md §15, `step-stub`).
    let recorded_end = events
        .iter()
        .filter(|e| {
            e["ph"] == "X" && !e["name"].as_str().unwrap_or("").starts_with("ProfilerStep#")
        })
        .map(|e| e["ts"].as_f64().unwrap_or(0.0) + e["dur"].as_f64().unwrap_or(0.0))
        .fold(f64::MIN, f64::max);
    if let Some((&last, &(s, e))) = steps.iter().next_back().filter(|_| steps.len() >= 2) {
        let shortest = steps.values().rev().skip(1).map(|(s, e)| e - s).fold(f64::MAX, f64::min);
        let empty = !events.iter().any(|x| {
            let t = x["ts"].as_f64().unwrap_or(f64::MIN);
            x["ph"] == "X"
                && x["cat"] != "Trace"
                && !x["name"].as_str().unwrap_or("").starts_with("ProfilerStep#")
                && t >= s
                && t < e
        });
        if empty && e - s < 0.05 * shortest && e >= recorded_end - 1000.0 {
            steps.remove(&last);
        }
    }
    if steps.is_empty() {
        steps = optimizer_steps(events, span(events).0);
    }
    (steps, launches)
}

/// Without `ProfilerStep` markers, the steps a training trace's
/// `Optimizer.step#…` ranges end (docs/analysis.md §6): on the thread with
/// most of them, each ends as one (not nested in another) ends, the first
/// from `start`, each other from the end of the one before; two at least.
pub fn optimizer_steps(events: &[Value], start: f64) -> BTreeMap<u64, (f64, f64)> {
    let mut by_thread: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let name = e["name"].as_str().unwrap_or("");
        let host = matches!(e["cat"].as_str(), Some("user_annotation" | "cpu_op" | "Operator"));
        if host && name.starts_with("Optimizer.step#") {
            let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap_or(0.0));
            by_thread.entry(format!("{}/{}", e["pid"], e["tid"])).or_default().push((ts, ts + dur));
        }
    }
    let mut ranges = by_thread.into_values().max_by_key(|v| v.len()).unwrap_or_default();
    ranges.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut ends: Vec<f64> = Vec::new();
    for (s, e) in ranges {
        if ends.last().is_none_or(|&last| s >= last) {
            ends.push(e);
        }
    }
    let mut steps = BTreeMap::new();
    if ends.len() >= 2 {
        let mut from = start;
        for (n, &e) in (1..).zip(&ends) {
            steps.insert(n, (from, e));
            from = e;
        }
    }
    steps
}

/// First to last CPU op, runtime call or GPU event: the one step of a
/// trace without steps.
pub fn span(events: &[Value]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in events {
        let cat = e["cat"].as_str().unwrap_or("");
        let counted = matches!(
            cat,
            "cpu_op"
                | "Operator"
                | "cuda_runtime"
                | "Runtime"
                | "cuda_driver"
                | "kernel"
                | "Kernel"
                | "gpu_memcpy"
                | "gpu_memset"
                | "Memcpy"
                | "Memset"
        );
        if e["ph"] == "X" && counted {
            let (ts, dur) = (e["ts"].as_f64().unwrap_or(0.0), e["dur"].as_f64().unwrap_or(0.0));
            lo = lo.min(ts);
            hi = hi.max(ts + dur);
        }
    }
    (lo, hi)
}

pub fn truth(path: &Path) -> Truth {
    let events = trace_events(&read_json(path));
    let (steps, launches) = steps_and_launches(&events);
    let in_step = |ts: f64| steps.is_empty() || steps.values().any(|(s, e)| *s <= ts && ts < *e);
    let mut t = Truth { steps: steps.len().max(1), ..Default::default() };
    t.windows = steps.values().copied().collect();
    if t.windows.is_empty() {
        t.windows.push(span(&events));
    }
    for e in &events {
        if e["ph"] == "X" && matches!(e["cat"].as_str(), Some("kernel" | "Kernel")) {
            let (ts, dur) = (e["ts"].as_f64().unwrap_or(0.0), e["dur"].as_f64().unwrap_or(0.0));
            let device = e["args"]["device"].as_i64().or_else(|| e["pid"].as_i64()).unwrap_or(0);
            t.spans.push((e["name"].as_str().unwrap_or("").to_string(), device, ts, ts + dur));
        }
    }
    for e in &events {
        let cat = e["cat"].as_str().unwrap_or("");
        if e["ph"] != "X" {
            continue;
        }
        let ts = e["ts"].as_f64().unwrap_or(0.0);
        let name = e["name"].as_str().unwrap_or("");
        if cat == "kernel" || cat == "Kernel" {
            let at = e["args"]["correlation"]
                .as_i64()
                .and_then(|c| launches.get(&c).copied())
                .unwrap_or(ts);
            if in_step(at) {
                let dur = e["dur"].as_f64().unwrap_or(0.0);
                t.kernels += 1;
                t.kernel_us += dur;
                let k = t.per_kernel.entry(name.to_string()).or_default();
                k.0 += 1;
                k.1 += dur;
            }
        }
        let is_op = cat == "cpu_op"
            || (cat == "Operator"
                && !name.starts_with("ProfilerStep#")
                && !name.starts_with("step/"));
        if is_op && in_step(ts) {
            t.ops += 1;
        }
    }
    t
}
