//! Trace health (docs/analysis.md §15) on real traces and on windows made
//! from them: each finding's figure derived here from the raw JSON, and a
//! window that cannot support a verdict says `cannot tell`.

mod common;

use std::collections::HashSet;
use std::path::Path;

use common::{fixtures, read_json, trace_events as events, union_len};
use serde_json::{Value, json};

fn with_events(original: &Value, evs: Vec<Value>) -> Value {
    let mut v = original.clone();
    match &mut v {
        Value::Array(_) => Value::Array(evs),
        Value::Object(m) => {
            m.insert("traceEvents".into(), Value::Array(evs));
            v
        }
        _ => unreachable!(),
    }
}

fn summary(path: &Path) -> Value {
    common::json(&["summary", path.to_str().unwrap()])
}

fn write(dir: &Path, name: &str, v: &Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

fn cat(e: &Value) -> &str {
    e["cat"].as_str().unwrap_or("")
}

fn ts(e: &Value) -> f64 {
    e["ts"].as_f64().unwrap()
}

fn end(e: &Value) -> f64 {
    ts(e) + e["dur"].as_f64().unwrap_or(0.0)
}

fn is_gpu(e: &Value) -> bool {
    matches!(cat(e), "kernel" | "gpu_memcpy" | "gpu_memset" | "Kernel" | "Memcpy" | "Memset")
}

fn is_runtime(e: &Value) -> bool {
    matches!(cat(e), "cuda_runtime" | "cuda_driver" | "Runtime")
}

fn corr(e: &Value) -> Option<i64> {
    e["args"]["correlation"].as_i64()
}

/// The CPU-side `ProfilerStep#N` ranges, in time order (µs).
fn steps(evs: &[Value]) -> Vec<(String, f64, f64)> {
    let mut s: Vec<(String, f64, f64)> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && cat(e) != "gpu_user_annotation")
        .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with("ProfilerStep#")))
        .map(|e| (e["name"].as_str().unwrap().to_string(), ts(e), end(e)))
        .collect();
    s.sort_by(|a, b| a.1.total_cmp(&b.1));
    s
}

/// GPU work inside `[s, e)` whose launch is not among the runtime events
/// at or after `s`: work queued before the window, as a union (ms).
fn queued_before(evs: &[Value], s: f64, e: f64) -> f64 {
    let launched_in: HashSet<i64> =
        evs.iter().filter(|x| is_runtime(x) && ts(x) >= s).filter_map(corr).collect();
    let iv: Vec<(f64, f64)> = evs
        .iter()
        .filter(|x| is_gpu(x) && corr(x).is_none_or(|c| !launched_in.contains(&c)))
        .map(|x| (ts(x).max(s), end(x).min(e)))
        .filter(|(a, b)| a < b)
        .collect();
    union_len(&iv) / 1000.0
}

fn health<'a>(s: &'a Value, check: &str) -> Option<&'a Value> {
    s["health"].as_array()?.iter().find(|h| h["check"] == check)
}

fn ms(h: &Value) -> f64 {
    h["ms"].as_f64().unwrap()
}

/// The two Qwen inference traces were taken mid-flight: the first 13 ms
/// of their one step run GPU work launched before the recording. A third
/// of the window is not the step's own: no verdict, and what was recorded
/// after.
#[test]
fn qwen_traces_taken_mid_flight_cannot_tell() {
    for dir in ["tracelens_h100_qwen_inference", "tracelens_mi300_inference"] {
        let path =
            fixtures().join("traces").join(dir).join("Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let raw = events(&read_json(&path));
        let st = steps(&raw);
        assert_eq!(st.len(), 1, "{dir}");
        let (_, s, e) = st[0].clone();
        let want = queued_before(&raw, s, e);
        let share = want * 1000.0 / (e - s);
        assert!(share > 0.25, "{dir}: the fixture's backlog is {want} ms ({share})");
        let out = summary(&path);
        let h = health(&out, "backlog").unwrap_or_else(|| panic!("{dir}: {out}"));
        assert!((ms(h) - want).abs() < 0.002, "{dir}: {} vs {want}", ms(h));
        assert_eq!(h["severity"], "cannot tell");
        assert_eq!(out["bound"], "cannot tell");
        let why = out["bound_why"].as_str().unwrap();
        assert!(why.contains("Re-capture: record after a warm-up step"), "{why}");
        assert!(why.contains("As recorded, the window reads COMPUTE"), "{why}");
    }
}

/// The H100 Qwen trace without the GPU work its recording did not see
/// launched (as if CUPTI had missed it too): the host's first sync then
/// blocks with nothing recorded running, which is the same backlog, its
/// figure the sync's time less the recorded work under it.
#[test]
fn a_sync_that_blocks_on_nothing_recorded_is_a_backlog() {
    let path = fixtures()
        .join("traces/tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let v = read_json(&path);
    let raw = events(&v);
    let (_, s, e) = steps(&raw)[0].clone();
    let launched: HashSet<i64> = raw.iter().filter(|x| is_runtime(x)).filter_map(corr).collect();
    let kept: Vec<Value> = raw
        .iter()
        .filter(|x| !is_gpu(x) || corr(x).is_some_and(|c| launched.contains(&c)))
        .cloned()
        .collect();
    let sync = kept
        .iter()
        .filter(|x| is_runtime(x) && x["name"].as_str().is_some_and(|n| n.contains("Synchronize")))
        .filter(|x| ts(x) >= s && ts(x) < e)
        .min_by(|a, b| ts(a).total_cmp(&ts(b)))
        .unwrap()
        .clone();
    let (a, b) = (ts(&sync), end(&sync));
    let under: Vec<(f64, f64)> = kept
        .iter()
        .filter(|x| is_gpu(x) && ts(x) < b && end(x) > a)
        .map(|x| (ts(x).max(a), end(x).min(b)))
        .collect();
    let idle = (b - a - union_len(&under)) / 1000.0;
    assert!(idle > 10.0, "the fixture's first sync waits on the removed work: {idle} ms");
    let dir = tempfile::tempdir().unwrap();
    let out = summary(&write(dir.path(), "unseen.json", &with_events(&v, kept)));
    let h = health(&out, "backlog").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(h["severity"], "cannot tell");
    let name = sync["name"].as_str().unwrap();
    let says = h["says"].as_str().unwrap();
    let want = format!("the host waited {idle:.2} ms in `{name}` with nothing recorded running");
    assert!(says.starts_with(&want), "{want}: {says}");
    assert!((ms(h) - idle).abs() < 0.002, "{} vs {idle}", ms(h));
    assert_eq!(out["bound"], "cannot tell");
}

/// A window cut from a real training trace (ResNet-50 on a V100, whose GPU
/// ends each step's work 9–16 ms after the host ends the step): the
/// recording starts at its last step, so the step before's trailing
/// kernels run in it with their launches unrecorded.
#[test]
fn a_window_cut_from_a_real_trace_has_its_backlog() {
    let path = fixtures()
        .join("traces/kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz");
    let v = read_json(&path);
    let raw = events(&v);
    let st = steps(&raw);
    let (_, s, e) = st.last().unwrap().clone();
    // What a recording started at `s` holds: no host event before it, no
    // GPU event that ended before it.
    let kept: Vec<Value> = raw
        .iter()
        .filter(|x| x["ph"] != "X" || if is_gpu(x) { end(x) > s } else { ts(x) >= s })
        .cloned()
        .collect();
    let want = queued_before(&kept, s, e);
    assert!(want > 5.0, "the step before's kernels run into the last step: {want} ms");
    let dir = tempfile::tempdir().unwrap();
    let out = summary(&write(dir.path(), "cut.json", &with_events(&v, kept)));
    let h = health(&out, "backlog").unwrap_or_else(|| panic!("{out}"));
    assert!((ms(h) - want).abs() < 0.002, "{} vs {want}", ms(h));
    let share = want * 1000.0 / (e - s);
    assert!(share < 0.25, "{share}");
    assert_eq!(h["severity"], "caution", "a tenth of the step: the verdict stands");
    assert_ne!(out["bound"], "cannot tell");
    // The whole trace: no step starts with work queued before the window.
    assert!(health(&summary(&path), "backlog").is_none());
}

/// A real trace whose last `ProfilerStep` marker runs 10 s past the
/// recording (the profiler stopped inside the step): the step is cut at
/// the recording's end, and its tail counts as nobody's time.
#[test]
fn a_step_past_the_recording_is_cut_there() {
    let path = fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let v = read_json(&path);
    let raw = events(&v);
    let st = steps(&raw);
    let (last, s_last, _) = st.last().unwrap().clone();
    let before = summary(&path);
    for keep_session in [true, false] {
        let mut evs: Vec<Value> =
            raw.iter().filter(|x| keep_session || cat(x) != "Trace").cloned().collect();
        for x in evs.iter_mut() {
            if x["name"] == last.as_str() && cat(x) != "gpu_user_annotation" {
                x["dur"] = json!(10_000_000.0);
            }
        }
        // Where the recording ends: its session's end, or its last event.
        let recorded = evs
            .iter()
            .filter(|x| x["ph"] == "X" && x["name"] != last.as_str())
            .map(end)
            .fold(f64::MIN, f64::max);
        let cut_at = recorded;
        let dir = tempfile::tempdir().unwrap();
        let out = summary(&write(dir.path(), "past.json", &with_events(&v, evs)));
        let h = health(&out, "step-past-end").unwrap_or_else(|| panic!("{out}"));
        let want_cut = (s_last + 10_000_000.0 - cut_at) / 1000.0;
        assert!((ms(h) - want_cut).abs() < 0.002, "{} vs {want_cut}", ms(h));
        // The step time: every step as recorded, the last one cut.
        let wall: f64 =
            st[..st.len() - 1].iter().map(|(_, a, b)| b - a).sum::<f64>() + (cut_at - s_last);
        let want_step = wall / st.len() as f64 / 1000.0;
        let step = out["step_ms"].as_f64().unwrap();
        assert!((step - want_step).abs() < 0.002, "{step} vs {want_step}");
        // The finding says how far the cut step, averaged in, moves the
        // step from the whole steps' mean.
        let n = st.len() - 1;
        let whole = st[..n].iter().map(|(_, a, b)| b - a).sum::<f64>() / n as f64 / 1000.0;
        let says = format!(
            "the step's mean is {want_step:.2} ms with it, {whole:.2} ms over the {n} whole steps"
        );
        assert!(h["says"].as_str().unwrap().contains(&says), "{says}: {h}");
        assert!((step - before["step_ms"].as_f64().unwrap()).abs() < 0.5);
        assert_eq!(out["bound"], before["bound"], "the verdict of the steps recorded");
    }
}

/// The MI250 trace's last `ProfilerStep` lasts microseconds and ends the
/// recording (the profiler stopped as it began): left out of the window,
/// said in the health, so the step time is the whole step's (both read
/// here from the raw markers). The A100 control trace's steps are alike:
/// none is left out.
#[test]
fn a_stub_last_step_is_left_out() {
    let path =
        fixtures().join("traces/hta_amd_mi250_rocm62/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let st = steps(&events(&read_json(&path)));
    assert_eq!(st.len(), 2, "{st:?}");
    let len = |i: usize| (st[i].2 - st[i].1) / 1000.0;
    assert!(len(1) < 0.05 * len(0), "{st:?}");
    let out = summary(&path);
    let h = health(&out, "step-stub").unwrap_or_else(|| panic!("{out}"));
    assert!((ms(h) - len(1)).abs() < 0.001, "{} vs {}", ms(h), len(1));
    assert_eq!(h["severity"], "caution");
    assert!((out["step_ms"].as_f64().unwrap() - len(0)).abs() < 0.001, "{}", out["step_ms"]);
    assert_eq!(out["window"]["real_steps"], 1);
    let control = summary(&fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz"));
    assert!(health(&control, "step-stub").is_none());
}

/// Kernel launches with no GPU event (a counter-profiling trace, or CUDA
/// activity not recorded), made from a real training trace by taking its
/// GPU events out: not "a CPU run", but cannot tell.
#[test]
fn launches_without_gpu_timings_cannot_tell() {
    let path = fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let v = read_json(&path);
    let raw = events(&v);
    let launches = raw
        .iter()
        .filter(|x| is_runtime(x) && x["ph"] == "X")
        .filter(|x| {
            let n = x["name"].as_str().unwrap_or("");
            ["Launch", "Memcpy", "Memset", "Graph"].iter().any(|w| n.contains(w))
        })
        .count();
    let kept: Vec<Value> = raw.into_iter().filter(|x| !is_gpu(x)).collect();
    let dir = tempfile::tempdir().unwrap();
    let out = summary(&write(dir.path(), "nogpu.json", &with_events(&v, kept)));
    let h = health(&out, "no-gpu-timings").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(h["severity"], "cannot tell");
    let says = h["says"].as_str().unwrap();
    assert!(says.starts_with(&format!("{launches} kernel launches recorded")), "{says}");
    assert_eq!(out["bound"], "cannot tell");
    assert!(!out["bound_why"].as_str().unwrap().starts_with("CPU run"));
}

/// A device the reader does not read (MTIA's Kineto categories), made
/// from a real trace by renaming its CUDA categories: the verdict does not
/// call it a CPU run.
#[test]
fn an_unread_device_cannot_tell() {
    let path = fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let v = read_json(&path);
    let mut raw = events(&v);
    let (mut runtime, mut device) = (0, 0);
    for x in raw.iter_mut() {
        let renamed = match cat(x) {
            "cuda_runtime" => {
                runtime += 1;
                "mtia_runtime"
            }
            "kernel" | "gpu_memcpy" | "gpu_memset" => {
                device += 1;
                "mtia_ccp_events"
            }
            _ => continue,
        };
        x["cat"] = json!(renamed);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = summary(&write(dir.path(), "mtia.json", &with_events(&v, raw)));
    let h = health(&out, "unread-device").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(h["severity"], "cannot tell");
    let says = h["says"].as_str().unwrap();
    assert!(says.contains(&format!("{runtime} `mtia_runtime`")), "{says}");
    assert!(says.contains(&format!("{device} `mtia_ccp_events`")), "{says}");
    assert_eq!(out["bound"], "cannot tell");
}

/// The vLLM capture records a graph capture, the MI250 trace ends in a
/// stub step, the AlexNet trace is mostly the GPU's start-up, the GP100's
/// first inferred step holds its set-up; no fixture's
/// healthy window
/// gets a finding it does not have.
#[test]
fn findings_on_the_fixtures_are_the_ones_they_have() {
    for t in common::traces() {
        let out = summary(&t);
        let name = t.display().to_string();
        let checks: Vec<&str> = out["health"]
            .as_array()
            .map(|a| a.iter().map(|h| h["check"].as_str().unwrap()).collect())
            .unwrap_or_default();
        let want: &[&str] = if name.contains("Qwen_Qwen1.5") {
            &["backlog"]
        } else if name.contains("vllm_cuda_graph_capture") {
            &["graph-capture"]
        } else if name.contains("mi250_minitoy") {
            &["step-stub"]
        } else if name.contains("alexnet_a100_nosteps") {
            &["start-up"]
        } else if name.contains("gp100_gpu_annotation") {
            // Steps from the optimizer's: the first holds the set-up.
            &["slow-first-step"]
        } else {
            &[]
        };
        assert_eq!(checks, want, "{name}");
        let cannot = out["bound"] == "cannot tell";
        let has = out["health"]
            .as_array()
            .is_some_and(|a| a.iter().any(|h| h["severity"] == "cannot tell"));
        assert_eq!(cannot, has, "{name}: cannot tell exactly when a finding says so");
        assert_eq!(out["trustworthy"], !cannot, "{name}: a script gates on it");
        // A window that cannot support levers names none, not even as
        // what the window reads as recorded.
        if cannot {
            let why = out["bound_why"].as_str().unwrap();
            assert!(!why.contains("Levers") && !why.contains("Lever:"), "{name}: {why}");
            assert!(out["levers"].as_array().is_none_or(|l| l.is_empty()), "{name}");
        }
    }
}

/// A real training trace with every GPU-side event taken out (kernels,
/// copies, runtime calls, memory records) is a CPU run: no GPU line in
/// the summary, and its verdict is the dataloader's, the loop spending
/// ≥ 20% of the step in `enumerate(DataLoader)#…__next__` (derived here:
/// those ranges' time inside the steps).
#[test]
fn a_trace_without_gpu_events_is_a_cpu_run_that_waits_on_its_loader() {
    let path = fixtures().join("traces/kineto_resnet50_v100_2021jun");
    let path = std::fs::read_dir(path).unwrap().next().unwrap().unwrap().path();
    let v = read_json(&path);
    let raw = events(&v);
    let kept: Vec<Value> = raw
        .into_iter()
        .filter(|x| !is_gpu(x) && !is_runtime(x) && x["name"] != "[memory]")
        .collect();
    let st = steps(&kept);
    let step_us: f64 = st.iter().map(|s| s.2 - s.1).sum::<f64>() / st.len() as f64;
    let loader_us: f64 = kept
        .iter()
        .filter(|x| x["ph"] == "X")
        .filter(|x| x["name"].as_str().is_some_and(|n| n.starts_with("enumerate(DataLoader)#")))
        .map(|x| st.iter().map(|s| (end(x).min(s.2) - ts(x).max(s.1)).max(0.0)).sum::<f64>())
        .sum::<f64>()
        / st.len() as f64;
    assert!(loader_us >= 0.2 * step_us, "{loader_us} of {step_us} µs");
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "cpu.json", &with_events(&v, kept));
    let out = summary(&p);
    assert_eq!(out["bound"], "dataloader", "{}", out["bound_why"]);
    let why = out["bound_why"].as_str().unwrap();
    let said = format!("the step waits {:.1} ms of {:.1} ms", loader_us / 1e3, step_us / 1e3);
    assert!(why.starts_with(&said), "{why} (derived: {said})");
    let text = common::profile_out(&["summary", p.to_str().unwrap()]);
    assert!(!text.lines().any(|l| l.starts_with("GPU util")), "{text}");
}

/// The AlexNet A100 trace has no step markers: the window is the whole
/// recording, and 69% of it is `cudaDeviceGetStreamPriorityRange`, the
/// first CUDA call, creating the context before any GPU work. The finding
/// names that call and its time, both read here from the raw events (no
/// other fixture has one: `findings_on_the_fixtures_are_the_ones_they_have`).
#[test]
fn a_window_that_is_mostly_the_gpu_s_start_up_says_so() {
    let path = fixtures().join("traces/hta_alexnet_a100_nosteps");
    let path = std::fs::read_dir(&path).unwrap().next().unwrap().unwrap().path();
    let evs = events(&read_json(&path));
    let xs: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    let first_gpu = xs.iter().filter(|e| is_gpu(e)).map(|e| ts(e)).fold(f64::MAX, f64::min);
    let call = xs
        .iter()
        .filter(|e| is_runtime(e) && end(e) <= first_gpu)
        .max_by(|a, b| a["dur"].as_f64().unwrap().total_cmp(&b["dur"].as_f64().unwrap()))
        .unwrap();
    let window = xs.iter().map(|e| end(e)).fold(f64::MIN, f64::max)
        - xs.iter().map(|e| ts(e)).fold(f64::MAX, f64::min);
    let call_ms = call["dur"].as_f64().unwrap() / 1000.0;
    assert!(call_ms > 0.25 * window / 1000.0, "{call_ms} ms of {window} µs");
    let s = summary(&path);
    let h = health(&s, "start-up").unwrap_or_else(|| panic!("{}", s["health"]));
    assert!((ms(h) - call_ms).abs() < 0.001, "{} vs {call_ms}", ms(h));
    let name = call["name"].as_str().unwrap();
    assert!(h["says"].as_str().unwrap().contains(&format!("`{name}`")), "{h}");
    assert_eq!(h["severity"], "caution");
    // Its lever stays: warming up first is what the finding asks for.
    assert_eq!(s["levers"][0]["lever"], "warm-up", "{}", s["levers"]);
}

/// Windows made from the A100 trace whose figures are not the steps':
/// the kernels of two of its six steps lost, its GPU clock 50 ms behind
/// the host's, the file joined to itself 10 s later with the same step
/// names, every step marker 0 µs long. Each cannot tell, with the figure
/// derived here from the raw events, and gives no lever; `trustworthy`
/// says so to a script.
#[test]
fn windows_whose_figures_are_not_the_steps_cannot_tell() {
    let path = fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let v = read_json(&path);
    let raw = events(&v);
    let marks = steps(&raw);
    let in_steps = |t: f64| marks.iter().any(|(_, s, e)| t >= *s && t < *e);
    let kernel_launch = |x: &&Value| {
        let n = x["name"].as_str().unwrap_or("");
        is_runtime(x) && x["ph"] == "X" && n.contains("Launch") && !n.contains("Graph")
    };
    let launches: Vec<&Value> =
        raw.iter().filter(kernel_launch).filter(|x| in_steps(ts(x))).collect();
    let dir = tempfile::tempdir().unwrap();
    let cannot_tell = |out: &Value, check: &str| -> String {
        let h = health(out, check).unwrap_or_else(|| panic!("{check}: {out}"));
        assert_eq!(h["severity"], "cannot tell", "{h}");
        assert_eq!(out["bound"], "cannot tell", "{check}");
        assert_eq!(out["trustworthy"], false, "{check}");
        assert!(out["levers"].as_array().is_none_or(|l| l.is_empty()), "{check}");
        h["says"].as_str().unwrap().to_string()
    };

    // Lost: the kernels launched in the third and fourth steps.
    let (s3, e4) = (marks[2].1, marks[3].2);
    let lost: HashSet<i64> =
        launches.iter().filter(|x| ts(x) >= s3 && ts(x) < e4).filter_map(|x| corr(x)).collect();
    let kept: Vec<Value> = raw
        .iter()
        .filter(|x| !(cat(x) == "kernel" && corr(x).is_some_and(|c| lost.contains(&c))))
        .cloned()
        .collect();
    let with_kernel: HashSet<i64> =
        kept.iter().filter(|x| cat(x) == "kernel").filter_map(corr).collect();
    let unmet = launches.iter().filter(|x| corr(x).is_none_or(|c| !with_kernel.contains(&c)));
    let n = unmet.count();
    assert!(n * 4 > launches.len(), "a third of the launches: {n} of {}", launches.len());
    let out = summary(&write(dir.path(), "lost.json", &with_events(&v, kept)));
    let says = cannot_tell(&out, "lost-gpu-events");
    let want = format!("{n} of {} kernel launches in the steps", launches.len());
    assert!(says.starts_with(&want), "{want}: {says}");

    // Skew: every GPU event 50 ms earlier than recorded.
    let launch_at: std::collections::HashMap<i64, f64> = raw
        .iter()
        .filter(|x| is_runtime(x) && x["ph"] == "X")
        .filter_map(|x| corr(x).map(|c| (c, ts(x))))
        .collect();
    let mut skewed = raw.clone();
    let (mut gpu, mut before) = (0, 0);
    for x in skewed.iter_mut().filter(|x| is_gpu(x)) {
        let t = ts(x) - 50_000.0;
        x["ts"] = json!(t);
        gpu += 1;
        before += corr(x).and_then(|c| launch_at.get(&c)).is_some_and(|&l| l > t + 1.0) as usize;
    }
    let out = summary(&write(dir.path(), "skew.json", &with_events(&v, skewed)));
    let says = cannot_tell(&out, "clock-skew");
    assert!(says.starts_with(&format!("{before} of {gpu} GPU events")), "{before}/{gpu}: {says}");

    // Joined: the file and itself 10 s later, step names unchanged.
    let mut joined = raw.clone();
    joined.extend(raw.iter().map(|x| {
        let mut y = x.clone();
        if let Some(t) = y["ts"].as_f64() {
            y["ts"] = json!(t + 10_000_000.0);
        }
        y
    }));
    let out = summary(&write(dir.path(), "joined.json", &with_events(&v, joined)));
    let says = cannot_tell(&out, "repeated-steps");
    let (first, last) = (&marks[0].0, &marks[marks.len() - 1].0);
    let last = last.trim_start_matches("ProfilerStep");
    let want = format!("{first} to {last} ({} names) recorded 2 times", marks.len());
    assert!(says.starts_with(&want), "{want}: {says}");

    // Empty: every step marker 0 µs long.
    let mut empty = raw.clone();
    for x in empty.iter_mut().filter(|x| x["ph"] == "X" && cat(x) != "gpu_user_annotation") {
        if x["name"].as_str().is_some_and(|n| n.starts_with("ProfilerStep#")) {
            x["dur"] = json!(0);
        }
    }
    let out = summary(&write(dir.path(), "empty.json", &with_events(&v, empty)));
    let says = cannot_tell(&out, "empty-steps");
    assert!(says.starts_with(&format!("all {} ProfilerStep markers last 0 µs", marks.len())));
}

/// A trace of the GPU side alone (the A100 trace's kernels, copies and
/// sets, nothing of its host): nothing says when its work was launched,
/// so no backlog is told, and the verdict says the trace cannot explain
/// the GPU's idle time.
#[test]
fn a_gpu_only_trace_is_no_backlog() {
    let path = fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let v = read_json(&path);
    let gpu: Vec<Value> = events(&v).into_iter().filter(is_gpu).collect();
    assert!(gpu.len() > 9000, "{}", gpu.len());
    let dir = tempfile::tempdir().unwrap();
    let out = summary(&write(dir.path(), "gpu_only.json", &with_events(&v, gpu)));
    assert!(health(&out, "backlog").is_none(), "{}", out["health"]);
    assert_eq!(out["bound"], "idle / unexplained", "{}", out["bound_why"]);
}
