//! Why the GPU waits (docs/analysis.md §12): the idle account on the real
//! traces of tests/fixtures, checked against figures this test derives from
//! the raw JSON itself, and on generated traces with one known cause each.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{clip, common_len, fixtures, json, read_json, traces, truth, union_len};
use serde_json::{Value, json};

/// The idle intervals of the busiest device inside the steps, in µs, as a
/// whole-file reading finds them: each step minus the union of the kernels.
fn idle_intervals(path: &Path) -> (Vec<(f64, f64)>, usize) {
    let (idle, steps, _) = idle_of_busiest(path);
    (idle, steps)
}

/// [`idle_intervals`], and the busiest device.
fn idle_of_busiest(path: &Path) -> (Vec<(f64, f64)>, usize, i64) {
    let t = truth(path);
    let mut by_device: HashMap<i64, Vec<(f64, f64)>> = HashMap::new();
    for (_, d, s, e) in &t.spans {
        by_device.entry(*d).or_default().push((*s, *e));
    }
    let (device, busiest) = by_device
        .iter()
        .map(|(d, iv)| (*d, clip(iv, &t.windows)))
        .max_by(|a, b| union_len(&a.1).total_cmp(&union_len(&b.1)))
        .unwrap_or_default();
    let mut busy = busiest.clone();
    busy.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut idle = Vec::new();
    for &(ws, we) in &t.windows {
        let mut at = ws;
        for &(s, e) in busy.iter().filter(|(s, e)| *e > ws && *s < we) {
            if s > at {
                idle.push((at, s.min(we)));
            }
            at = at.max(e);
        }
        if we > at {
            idle.push((at, we));
        }
    }
    (idle, t.steps, device)
}

/// The (start, end) µs of the raw events `keep` picks, read whole.
fn spans_of(path: &Path, keep: &dyn Fn(&Value) -> bool) -> Vec<(f64, f64)> {
    read_json(path)["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| keep(e))
        .map(|e| {
            (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        })
        .collect()
}

fn idle_of(v: &Value) -> &Value {
    assert!(v["idle"].is_object(), "no idle account: {v}");
    &v["idle"]
}

fn cause_ms(idle: &Value, cause: &str) -> f64 {
    idle["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == cause)
        .map_or(0.0, |c| c["ms_per_step"].as_f64().unwrap())
}

fn place_ms(idle: &Value, cause: &str, name: &str) -> Option<f64> {
    let c = idle["causes"].as_array().unwrap().iter().find(|c| c["cause"] == cause)?;
    c["where"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["ms_per_step"].as_f64())
}

fn close(got: f64, want: f64, rel: f64, what: &str) {
    let tol = (want.abs() * rel).max(0.002);
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} (±{tol})");
}

#[test]
fn idle_time_equals_the_union_complement_and_causes_sum_to_it_on_every_trace() {
    let (mut checked, mut copied) = (0, 0);
    for path in traces() {
        let v = json(&["summary", path.to_str().unwrap()]);
        let (idle, steps, device) = idle_of_busiest(&path);
        if v["idle"].is_null() {
            assert_eq!(
                v["gpu_busy_ms_per_step"],
                0.0,
                "{}: a GPU trace without an idle account",
                path.display()
            );
            continue;
        }
        let want = union_len(&idle) / 1e3 / steps as f64;
        let account = idle_of(&v);
        let got = account["ms_per_step"].as_f64().unwrap();
        close(got, want, 0.001, &format!("{}: idle ms/step", path.display()));
        let causes = account["causes"].as_array().unwrap();
        let sum: f64 = causes.iter().map(|c| c["ms_per_step"].as_f64().unwrap()).sum();
        // Each cause is rounded to the µs.
        assert!(
            (sum - got).abs() <= 0.001 * causes.len() as f64 + 1e-9,
            "{}: causes sum to {sum}, idle {got}",
            path.display()
        );
        let ms: Vec<f64> = causes.iter().map(|c| c["ms_per_step"].as_f64().unwrap()).collect();
        assert!(
            ms.windows(2).all(|w| w[0] >= w[1]),
            "{}: causes not largest first: {ms:?}",
            path.display()
        );
        // The device's memcpy/memset time inside that idle time is each
        // cause's `copy_ms_per_step`, added up (none larger than its cause).
        let copies = spans_of(&path, &|e| {
            matches!(e["cat"].as_str(), Some("gpu_memcpy" | "gpu_memset" | "Memcpy" | "Memset"))
                && e["ph"] == "X"
                && e["args"]["device"].as_i64().or_else(|| e["pid"].as_i64()) == Some(device)
        });
        let want_copy = common_len(&idle, &copies) / 1e3 / steps as f64;
        let copy: f64 = causes.iter().filter_map(|c| c["copy_ms_per_step"].as_f64()).sum();
        assert!(
            (copy - want_copy).abs() <= 0.001 * causes.len() as f64 + want_copy * 1e-3,
            "{}: copies under the idle time {copy}, the raw events {want_copy}",
            path.display()
        );
        for c in causes {
            let under = c["copy_ms_per_step"].as_f64().unwrap_or(0.0);
            assert!(under <= c["ms_per_step"].as_f64().unwrap() + 1e-9, "{}: {c}", path.display());
        }
        copied += (want_copy > 0.01) as usize;
        // Idle per phase sums to the account too.
        let phases = json(&["phases", path.to_str().unwrap()]);
        let by_phase: f64 = phases["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["idle_ms_per_step"].as_f64())
            .sum();
        assert!(
            (by_phase - got).abs() <= 0.001 * 8.0 + got * 1e-4,
            "{}: phases' idle {by_phase} vs {got}",
            path.display()
        );
        // No phase idles longer than it lasts: a gap across a phase
        // boundary is charged to each side (each figure rounded to the µs).
        for p in phases["phases"].as_array().unwrap() {
            let (Some(idle), Some(wall)) =
                (p["idle_ms_per_step"].as_f64(), p["wall_ms_per_step"].as_f64())
            else {
                continue;
            };
            assert!(
                idle <= wall + 0.002,
                "{}: phase {} idles {idle} ms of its {wall} ms",
                path.display(),
                p["phase"]
            );
        }
        // `get` has the same figures.
        let got_metric = json(&["get", path.to_str().unwrap(), "idle_ms"]);
        assert_eq!(got_metric["idle_ms"], account["ms_per_step"], "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} traces had an idle account");
    assert!(copied >= 5, "only {copied} traces copied while idle");
}

/// The Python frame's idle time in the stretch before the first kernel,
/// derived from the raw events: the frame's part of that stretch that no
/// CPU op covers.
fn frame_idle_before_first_launch(path: &Path, frame: &str) -> (f64, f64) {
    let doc = read_json(path);
    let events = doc["traceEvents"].as_array().unwrap();
    let t = truth(path);
    let first_kernel = t.spans.iter().map(|s| s.2).fold(f64::INFINITY, f64::min);
    let launches: HashMap<i64, f64> = events
        .iter()
        .filter(|e| matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver")))
        .filter_map(|e| Some((e["args"]["correlation"].as_i64()?, e["ts"].as_f64()?)))
        .collect();
    let first_launch = events
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["ts"].as_f64() == Some(first_kernel))
        .filter_map(|e| launches.get(&e["args"]["correlation"].as_i64()?).copied())
        .fold(f64::NEG_INFINITY, f64::max);
    let start = t.windows[0].0;
    let lead = [(start, first_launch)];
    let spans = |pred: &dyn Fn(&Value) -> bool| -> Vec<(f64, f64)> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && pred(e))
            .map(|e| {
                (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
            })
            .collect()
    };
    let in_frame = clip(&spans(&|e| e["cat"] == "python_function" && e["name"] == frame), &lead);
    let ops = clip(&spans(&|e| e["cat"] == "cpu_op"), &in_frame);
    ((union_len(&in_frame) - union_len(&ops)) / 1e3, (first_kernel - start) / 1e3)
}

#[test]
fn timesformer_waits_on_python_preprocessing_before_the_first_launch() {
    for (dir, file) in [
        ("tracelens_h100_timesformer", "facebook_timesformer-base-finetuned-k400__1016002.json.gz"),
        ("tracelens_mi300_inference", "facebook_timesformer-base-finetuned-k400__1016002.json.gz"),
    ] {
        let path = fixtures().join("traces").join(dir).join(file);
        let v = json(&["summary", path.to_str().unwrap()]);
        let idle = idle_of(&v);
        let frame = "transformers/pipelines/video_classification.py(129): preprocess";
        let (want, lead_ms) = frame_idle_before_first_launch(&path, frame);
        assert!(want > 150.0, "{dir}: the test's own reading finds {want} ms");
        let got = place_ms(idle, "python", frame)
            .unwrap_or_else(|| panic!("{dir}: {frame} not named: {idle}"));
        // The account also counts the frame's time in later gaps (a few ms).
        assert!(
            got >= want * 0.99 && got <= want * 1.05,
            "{dir}: {frame} {got} ms, the raw events say {want}"
        );
        assert_eq!(idle["causes"][0]["cause"], "python", "{dir}");
        close(idle["before_first_kernel_ms_per_step"].as_f64().unwrap(), lead_ms, 0.001, dir);
        assert_eq!(v["bound"], "host / python", "{dir}");
        let why = v["bound_why"].as_str().unwrap();
        assert!(
            why.contains(frame) && why.contains("image_processing_videomae.py"),
            "{dir}: {why}"
        );
        assert!(!why.contains("CUDA graphs"), "{dir}: {why}");
    }
}

#[test]
fn alexnet_waits_on_a_cold_start_cudnn_and_the_allocator_not_on_launches() {
    let path = fixtures()
        .join("traces/hta_alexnet_a100_nosteps/benchmark_result_2869224_1695835535_trace.json.gz");
    let v = json(&["summary", path.to_str().unwrap()]);
    let idle = idle_of(&v);
    // The allocator's share, from the raw events: cudaMalloc/cudaFree time
    // while the GPU was idle.
    let (gaps, _) = idle_intervals(&path);
    let alloc = spans_of(&path, &|e| {
        e["cat"] == "cuda_runtime" && matches!(e["name"].as_str(), Some("cudaMalloc" | "cudaFree"))
    });
    let want = common_len(&alloc, &gaps) / 1e3;
    assert!(want > 8000.0, "the raw events hold {want} ms of allocator calls while idle");
    close(cause_ms(idle, "allocator"), want, 0.01, "allocator ms");
    let cudnn_free =
        place_ms(idle, "allocator", "aten::conv2d > aten::cudnn_convolution > cudaFree")
            .expect("named");
    assert!(cudnn_free > 6000.0, "{cudnn_free}");
    assert_eq!(idle["causes"][0]["cause"], "cpu_op");
    assert_eq!(v["bound"], "host / cpu op");
    let why = v["bound_why"].as_str().unwrap();
    assert!(
        why.contains("warm up before the profiled window") && !why.contains("CUDA graphs"),
        "{why}"
    );
}

#[test]
fn a_graph_capture_is_said_to_be_one() {
    let path = fixtures()
        .join("traces/tracelens_vllm_cuda_graph_capture/graph_capture_rank_0.pt.trace.json.gz");
    let v = json(&["summary", path.to_str().unwrap()]);
    let idle = idle_of(&v);
    // Upper bound from the raw events: vllm::moe_forward's time while idle.
    let (gaps, _) = idle_intervals(&path);
    let moe = spans_of(&path, &|e| e["cat"] == "cpu_op" && e["name"] == "vllm::moe_forward");
    let bound = common_len(&moe, &gaps) / 1e3;
    let got = place_ms(idle, "cpu_op", "vllm::moe_forward").expect("named");
    assert!(got <= bound + 0.001 && got >= 0.5 * bound, "moe_forward {got} ms of at most {bound}");
    let why = v["bound_why"].as_str().unwrap();
    assert!(why.contains("graph capture") && !why.contains("CUDA graphs,"), "{why}");
}

// --- generated traces, one known cause each.

/// A Kineto-shaped trace: one loop thread (tid 1), kernels on device 0.
#[derive(Default)]
struct Trace {
    events: Vec<Value>,
    corr: i64,
}

impl Trace {
    fn x(&mut self, cat: &str, name: &str, ts: f64, dur: f64, args: Value) {
        self.events.push(json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}));
    }
    fn step(&mut self, n: u64, ts: f64, dur: f64) {
        self.x("user_annotation", &format!("ProfilerStep#{n}"), ts, dur, json!({}));
    }
    /// An op at `ts` that launches one kernel of `kdur` µs starting at
    /// `kstart` (on `stream`).
    fn launch(&mut self, op: &str, ts: f64, kstart: f64, kdur: f64, stream: i64) {
        self.corr += 1;
        let c = self.corr;
        self.x("cpu_op", op, ts, 4.0, json!({}));
        self.x("cuda_runtime", "cudaLaunchKernel", ts + 1.0, 2.0, json!({"correlation": c}));
        self.events.push(json!({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": stream, "ts": kstart, "dur": kdur,
            "args": {"correlation": c, "device": 0, "stream": stream}}));
    }
    fn write(&self, dir: &Path, name: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&json!({"traceEvents": self.events})).unwrap())
            .unwrap();
        path.to_str().unwrap().to_string()
    }
}

/// Three steps of 100 ms: a kernel at the start and one at the end of each
/// step, and `inject(trace, step_start)` putting one cause between them.
fn generated(dir: &Path, name: &str, inject: &dyn Fn(&mut Trace, f64)) -> Value {
    json(&["summary", &three_steps(inject).write(dir, name)])
}

fn three_steps(inject: &dyn Fn(&mut Trace, f64)) -> Trace {
    let mut t = Trace::default();
    for n in 0..3 {
        let s = n as f64 * 100_000.0;
        t.step(n + 1, s, 100_000.0);
        t.launch("aten::mm", s, s + 5.0, 10_000.0, 7);
        t.launch("aten::mm", s + 89_990.0, s + 89_995.0, 10_000.0, 7);
        inject(&mut t, s);
    }
    t
}

/// The step is 100 ms and kernels fill 20 ms of it; the injected cause
/// takes `want` ms of the 80 ms gap and the rest is the background below.
fn check(v: &Value, cause: &str, want: f64, bound: &str, place: Option<&str>) {
    let idle = idle_of(v);
    close(idle["ms_per_step"].as_f64().unwrap(), 80.0, 0.001, "idle");
    close(cause_ms(idle, cause), want, 0.05, cause);
    if let Some(p) = place {
        let got =
            place_ms(idle, cause, p).unwrap_or_else(|| panic!("{p} not named for {cause}: {idle}"));
        close(got, want, 0.05, p);
    }
    assert_eq!(v["bound"], bound, "{}", v["bound_why"]);
}

#[test]
fn each_injected_cause_is_recovered_with_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 30 ms cudaStreamSynchronize bubble, then Python till the next launch
    // (annotated, no ops).
    let v = generated(d, "sync.json", &|t, s| {
        t.x("cpu_op", "aten::item", s + 10_100.0, 60_000.0, json!({}));
        t.x("cuda_runtime", "cudaStreamSynchronize", s + 10_200.0, 59_800.0, json!({}));
    });
    check(&v, "sync", 60.0, "host / sync", None);
    close(
        place_ms(idle_of(&v), "sync", "aten::item > cudaStreamSynchronize").unwrap(),
        59.8,
        0.01,
        "the sync call",
    );
    let v = generated(d, "sync30.json", &|t, s| {
        t.x("cuda_runtime", "cudaStreamSynchronize", s + 10_005.0, 30_000.0, json!({}));
        t.x("cpu_op", "aten::cat", s + 40_005.0, 49_900.0, json!({}));
    });
    close(cause_ms(idle_of(&v), "sync"), 30.0, 0.05, "30 ms sync bubble");
    assert!(!v["bound_why"].as_str().unwrap().contains("CUDA graphs"), "{}", v["bound_why"]);

    // A 20 ms Python gap inside a frame that wraps the whole step.
    let v = generated(d, "python.json", &|t, s| {
        t.x("python_function", "train.py(5): main", s, 100_000.0, json!({}));
        t.x("python_function", "train.py(40): augment", s + 20_000.0, 20_000.0, json!({}));
        t.x("python_function", "numpy/core.py(9): resize", s + 21_000.0, 15_000.0, json!({}));
        t.x("cpu_op", "aten::copy_", s + 40_000.0, 10_000.0, json!({}));
    });
    check(&v, "python", 80.0 - 10.0 - 0.01, "host / python", None);
    let idle = idle_of(&v);
    close(place_ms(idle, "python", "train.py(40): augment").unwrap(), 20.0, 0.05, "augment");
    close(place_ms(idle, "python", "numpy/core.py(9): resize").unwrap(), 15.0, 0.05, "resize");
    let on_path: Vec<&str> = idle["causes"][0]["where"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"] == true)
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        on_path,
        ["train.py(40): augment", "numpy/core.py(9): resize"],
        "the wrapper of the whole step is not on the path: {idle}"
    );
    let why = v["bound_why"].as_str().unwrap();
    assert!(why.contains("train.py(40): augment") && !why.contains("CUDA graphs"), "{why}");

    // A dataloader wait.
    let v = generated(d, "dataloader.json", &|t, s| {
        t.x(
            "cpu_op",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            s + 10_010.0,
            60_000.0,
            json!({}),
        );
    });
    check(
        &v,
        "dataloader",
        60.0,
        "dataloader",
        Some("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
    );

    // A single-process DataLoader recorded with Python frames: its wait is
    // named down to the frame that holds it (an image resize in the
    // dataset), as the Python cause's is; the lever says workers first.
    let v = generated(d, "dataloader_frames.json", &|t, s| {
        let dl = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
        t.x("python_function", "train.py(5): main", s, 100_000.0, json!({}));
        t.x("user_annotation", dl, s + 10_010.0, 60_000.0, json!({}));
        t.x(
            "python_function",
            "torch/utils/data/dataloader.py(630): __next__",
            s + 10_020.0,
            59_980.0,
            json!({}),
        );
        t.x("python_function", "dataset.py(40): __getitem__", s + 10_030.0, 59_900.0, json!({}));
        t.x("python_function", "PIL/Image.py(2200): resize", s + 20_000.0, 45_000.0, json!({}));
        t.x("cpu_op", "aten::copy_", s + 75_000.0, 10_000.0, json!({}));
    });
    let idle = idle_of(&v);
    close(cause_ms(idle, "dataloader"), 60.0, 0.05, "the loader's wait");
    let on_path: Vec<(&str, f64)> = idle["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "dataloader")
        .unwrap()["where"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"] == true)
        .map(|p| (p["name"].as_str().unwrap(), p["ms_per_step"].as_f64().unwrap()))
        .collect();
    // (The loader's range and `__next__` hold all of it: passed through,
    // as a decorator's frame is.)
    assert_eq!(on_path.first().map(|p| p.0), Some("dataset.py(40): __getitem__"), "{idle}");
    let resize = on_path
        .iter()
        .find(|p| p.0 == "PIL/Image.py(2200): resize")
        .expect("the resize on the path");
    close(resize.1, 45.0, 0.01, "the resize under the loader");
    assert!(
        !on_path.iter().any(|p| p.0 == "train.py(5): main"),
        "frames above the loader are not its own: {idle}"
    );
    let why = v["bound_why"].as_str().unwrap();
    assert!(why.contains("of it in `PIL/Image.py(2200): resize`"), "{why}");

    // A cudaMalloc storm: 50 calls of 1 ms.
    let v = generated(d, "malloc.json", &|t, s| {
        for i in 0..50 {
            let at = s + 12_000.0 + i as f64 * 1_200.0;
            t.x("cpu_op", "aten::empty", at, 1_100.0, json!({}));
            t.x("cuda_runtime", "cudaMalloc", at + 50.0, 1_000.0, json!({}));
        }
    });
    // 50 calls a step are also the allocator thrash of docs/analysis.md §9,
    // which comes first and now says what it costs.
    check(&v, "allocator", 50.0, "memory-pressure", Some("aten::empty > cudaMalloc"));
    assert!(
        v["bound_why"].as_str().unwrap().contains("the GPU waits 50.0 ms/step in them"),
        "{}",
        v["bound_why"]
    );

    // A cross-stream wait: the next kernel was launched long before.
    let v = generated(d, "dependency.json", &|t, s| {
        t.launch("aten::add", s + 10_010.0, s + 30_000.0, 1.0, 9);
    });
    close(cause_ms(idle_of(&v), "dependency"), 20.0 - 0.013, 0.05, "dependency");
}

#[test]
fn thousands_of_tiny_kernels_are_launch_gaps_and_the_lever_is_graphs() {
    // 2000 kernels of 5 µs launched every 15 µs: 10 µs gaps, 20 ms of them.
    let dir = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(1, 0.0, 30_010.0);
    for i in 0..2000 {
        let at = i as f64 * 15.0;
        t.launch("aten::add", at, at + 5.0, 5.0, 7);
    }
    let v = json(&["summary", &t.write(dir.path(), "tiny.json")]);
    let idle = idle_of(&v);
    let total = idle["ms_per_step"].as_f64().unwrap();
    close(total, 30.01 - 10.0, 0.01, "idle");
    close(cause_ms(idle, "launch"), total, 0.05, "launch");
    assert_eq!(v["bound"], "host / launch");
    assert!(v["bound_why"].as_str().unwrap().contains("CUDA graphs"), "{}", v["bound_why"]);
    assert!(!v["bound_why"].as_str().unwrap().contains("µs each"), "{}", v["bound_why"]);
}

#[test]
fn what_if_removes_one_cause_and_compare_shows_the_causes_move() {
    let path = fixtures().join("traces/tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz");
    let p = path.to_str().unwrap();
    let s = json(&["summary", p]);
    let python = cause_ms(idle_of(&s), "python");
    // Re-timed on the step model: the host's Python time goes, and from
    // the first kernel on the GPU is busy, so the step loses about the
    // GPU's idle time of that cause (the account's, another code path).
    let w = json(&["what-if", p, "--remove-idle", "python"]);
    assert_eq!(w["model"], "step-model");
    let step = s["step_ms"].as_f64().unwrap();
    let saved = w["saved_ms_per_step"].as_f64().unwrap();
    assert!((saved - python).abs() <= 0.01 * python, "saved {saved} vs python idle {python}");
    close(w["step_ms"]["projected"].as_f64().unwrap(), step - saved, 0.0001, "projected step");
    // More taken away saves no less.
    let both = json(&["what-if", p, "--remove-idle", "python", "--remove-launches", "3"]);
    assert!(both["saved_ms_per_step"].as_f64().unwrap() >= saved, "{both}");

    // Two generated traces: a sync bubble before, a Python gap after.
    let dir = tempfile::tempdir().unwrap();
    let mut before = Trace::default();
    let mut after = Trace::default();
    for (t, cat, name) in [
        (&mut before, "cuda_runtime", "cudaStreamSynchronize"),
        (&mut after, "python_function", "train.py(9): log"),
    ] {
        t.step(1, 0.0, 100_000.0);
        t.launch("aten::mm", 0.0, 5.0, 10_000.0, 7);
        t.x(cat, name, 10_100.0, 70_000.0, json!({}));
        t.launch("aten::mm", 89_990.0, 89_995.0, 10_000.0, 7);
    }
    let (a, b) = (before.write(dir.path(), "before.json"), after.write(dir.path(), "after.json"));
    let c = json(&["compare", &a, &b]);
    let row = |name: &str| {
        c["idle"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {c}"))
    };
    assert_eq!(row("sync")["status"], "disappeared");
    // After: all but the launch gaps' few µs of the 80 ms is Python.
    close(
        row("python")["after_ms"].as_f64().unwrap(),
        80.0 - cause_ms(idle_of(&json(&["summary", &b])), "launch"),
        0.0002,
        "python after",
    );
    close(row("sync")["before_ms"].as_f64().unwrap(), 70.0, 0.001, "sync before");
    assert_eq!(c["bound"], json!(["host / sync", "host / python"]));
    let text = common::run(&["profile", "compare", &a, &b]).stdout;
    assert!(text.contains("GPU idle by cause (ms/step):"), "{text}");
}

#[test]
fn a_hostile_stack_of_nested_ops_ends_quickly() {
    // 20 000 ops nested inside each other around one long gap: the sweep
    // follows a bounded stack instead of all of them at every boundary.
    let dir = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(1, 0.0, 1_000_000.0);
    t.launch("aten::mm", 0.0, 5.0, 10.0, 7);
    for i in 0..20_000 {
        let at = 100.0 + i as f64 * 0.01;
        t.x("cpu_op", "aten::deep", at, 900_000.0 - i as f64 * 0.02, json!({}));
    }
    t.launch("aten::mm", 999_000.0, 999_005.0, 10.0, 7);
    let v = json(&["summary", &t.write(dir.path(), "deep.json")]);
    let idle = idle_of(&v);
    let sum: f64 =
        idle["causes"].as_array().unwrap().iter().map(|c| c["ms_per_step"].as_f64().unwrap()).sum();
    close(sum, idle["ms_per_step"].as_f64().unwrap(), 0.001, "causes sum");
    close(cause_ms(idle, "cpu_op"), 900.0 - 0.1, 0.01, "inside the ops");
}

/// Device 0: 20 ms of kernels per 100 ms step with a 60 ms sync between
/// them (as above); device 1: one 5 ms kernel at each step's start,
/// launched by the same thread. Device 1 then waits 95 ms a step, on what
/// thread 1 did: the same sync, and the ops around it.
fn two_devices() -> Trace {
    three_steps(&|t, s| {
        t.x("cpu_op", "aten::item", s + 10_100.0, 60_000.0, json!({}));
        t.x("cuda_runtime", "cudaStreamSynchronize", s + 10_200.0, 59_800.0, json!({}));
        t.corr += 1;
        let c = t.corr;
        t.x("cuda_runtime", "cudaLaunchKernel", s + 8.0, 1.0, json!({"correlation": c}));
        t.events.push(json!({"ph": "X", "cat": "kernel", "name": "k1", "pid": 1, "tid": 11, "ts": s + 10.0, "dur": 5_000.0,
            "args": {"correlation": c, "device": 1, "stream": 11}}));
    })
}

#[test]
fn each_device_of_a_multi_gpu_trace_has_its_causes() {
    let t = two_devices();
    let dir = tempfile::tempdir().unwrap();
    let path = t.write(dir.path(), "two.json");
    let v = json(&["summary", &path]);
    let idle = idle_of(&v);
    assert_eq!(idle["device"], 0, "the busiest device leads");
    let text = common::run(&["profile", "summary", &path]).stdout;
    assert!(text.contains("  device 1: idle 95 ms/step — sync 60, python"), "{text}");
    let devices = idle["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    for (d, want) in devices.iter().zip([80.0, 95.0]) {
        close(
            d["ms_per_step"].as_f64().unwrap(),
            want,
            0.001,
            "device idle = step − its busy time",
        );
        let sum: f64 = d["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["ms_per_step"].as_f64().unwrap())
            .sum();
        close(sum, want, 0.001, "its causes sum to it");
    }
    assert_eq!(devices[0]["causes"], idle["causes"], "device 0's are the account's");
    close(cause_ms(&devices[1], "sync"), 59.8, 0.01, "device 1 waits on the same sync");
}

#[test]
fn each_devices_causes_are_those_it_has_alone() {
    // The host log is read once for every device's gaps; what one device
    // waited on must not depend on another's kernels. So each device's
    // causes equal those of the same trace with only its own kernels.
    let t = two_devices();
    let dir = tempfile::tempdir().unwrap();
    let both = json(&["summary", &t.write(dir.path(), "both.json")]);
    let devices = idle_of(&both)["devices"].as_array().unwrap().clone();
    assert_eq!(devices.len(), 2);
    for (d, shared) in devices.iter().enumerate() {
        let alone = Trace {
            events: t
                .events
                .iter()
                .filter(|e| e["cat"] != "kernel" || e["args"]["device"] == d)
                .cloned()
                .collect(),
            corr: t.corr,
        };
        let v = json(&["summary", &alone.write(dir.path(), &format!("alone{d}.json"))]);
        let idle = idle_of(&v);
        assert_eq!(idle["device"], d);
        assert!(idle["devices"].as_array().is_none_or(|v| v.is_empty()), "{idle}");
        assert_eq!(shared["causes"], idle["causes"], "device {d}");
    }
}

/// The step model (docs/analysis.md §14) takes a capture's `step/dataload`
/// phase as DataLoader time: by hand, the loop thread loads for 30 ms,
/// then launches; without the loading everything after it, the step's
/// end included, comes 30 ms earlier.
#[test]
fn a_dataload_phase_is_dataloader_time_in_the_step_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(1, 0.0, 100_000.0);
    t.x("user_annotation", "step/dataload", 0.0, 30_000.0, json!({}));
    t.launch("aten::mm", 30_000.0, 30_010.0, 10_000.0, 7);
    t.launch("aten::mm", 99_000.0, 99_010.0, 500.0, 7);
    let p = t.write(dir.path(), "load.json");
    let w = json(&["what-if", &p, "--remove-idle", "dataloader"]);
    let saved = w["saved_ms_per_step"].as_f64().unwrap();
    close(saved, 30.0, 0.0005, "saved");
    close(w["removes_ms_per_step"].as_f64().unwrap(), 30.0, 0.0005, "taken away");
}

#[test]
fn the_summary_text_leaves_out_causes_and_places_of_0_ms() {
    // The ROCm Triton trace's dependency stretches are 11 sub-µs gaps:
    // 0 ms/step at the text's three decimals. Its places, two GEMM
    // kernels whose labels are cut alike, keep names that differ.
    let trace = fixtures().join("traces/tracelens_rocm_triton_compile/trace.json.gz");
    let p = trace.to_str().unwrap();
    let j = json(&["summary", p]);
    let causes = j["idle"]["causes"].as_array().unwrap();
    let tiny: Vec<&str> = causes
        .iter()
        .filter(|c| c["ms_per_step"].as_f64().unwrap() < 0.0005)
        .map(|c| c["cause"].as_str().unwrap())
        .collect();
    assert!(tiny.contains(&"dependency"), "{causes:?}");
    for c in causes {
        let names: Vec<&str> =
            c["where"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "places that read the same: {c}");
    }
    let text = common::profile_out(&["summary", p]);
    let idle: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("idle "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(!idle.is_empty(), "{text}");
    for line in &idle {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(!tiny.contains(&words[0]), "a cause of 0 ms: {line}");
        assert_ne!(words.first(), Some(&"0"), "a place of 0 ms: {line}");
    }
}

#[test]
fn a_thread_waiting_in_backward_is_charged_what_the_engine_did() {
    // HTA's NCCL (DDP) trace: after the last backward op the loop thread
    // is still in `## backward ##` (in `backward()`), while the autograd
    // engine's thread runs the DDP reducer's `copy_bucket_to_grad` ops and
    // the GPU idles until the optimizer's first kernel. That is op work on
    // the engine's thread, not Python on the loop thread.
    let path = fixtures().join("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    let events = common::trace_events(&read_json(&path));
    let (steps, _) = common::steps_and_launches(&events);
    let xs: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let span = |e: &Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap_or(0.0))
    };
    let named = |prefix: &str, (s, e): (f64, f64)| -> Vec<(f64, f64)> {
        xs.iter()
            .filter(|x| x["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .map(|x| span(x))
            .filter(|&(a, _)| s <= a && a < e)
            .collect()
    };
    // Per step: from the last backward op to the range's end, and the
    // reducer's copies inside it.
    let (mut after_backward, mut copies) = (0.0, 0.0);
    for &step in steps.values() {
        let last = named("autograd::engine::evaluate_function", step)
            .iter()
            .map(|s| s.1)
            .fold(f64::MIN, f64::max);
        let range = named("## backward ##", step);
        let end = range.iter().map(|s| s.1).fold(f64::MIN, f64::max);
        after_backward += end - last;
        copies += named("torch.distributed.ddp.reducer::copy_bucket_to_grad", step)
            .iter()
            .map(|&(a, b)| (b.min(end) - a.max(last)).max(0.0))
            .sum::<f64>();
    }
    let n = steps.len() as f64;
    let (after_backward, copies) = (after_backward / 1e3 / n, copies / 1e3 / n);
    assert!(copies > 5.0 && after_backward > copies, "{copies} of {after_backward} ms/step");

    let s = json(&["summary", path.to_str().unwrap()]);
    let idle = idle_of(&s);
    let reducer: f64 = idle["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cause"] == "cpu_op")
        .flat_map(|c| c["where"].as_array().unwrap())
        .filter(|p| {
            p["name"].as_str().unwrap().starts_with("torch.distributed.ddp.reducer::copy_bucket")
        })
        .map(|p| p["ms_per_step"].as_f64().unwrap())
        .sum();
    assert!(reducer >= 0.5 * copies, "{reducer} ms/step of idle in the copies, {copies} of them");
    let waiting = place_ms(idle, "python", "## backward ##").unwrap_or(0.0);
    assert!(
        waiting <= after_backward - copies,
        "{waiting} ms/step of Python in `## backward ##`; the engine's copies took {copies} of {after_backward}"
    );
}
