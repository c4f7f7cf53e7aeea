//! Whole-product invariants over every fixture trace (issue #54): no share
//! outside 0–100 %, no fraction outside 0–1, no part larger than its whole
//! (a phase within its step, idle and busy time within the step), and no
//! time at the roofline longer than the time it ran.

mod common;

use common::{json, traces};
use serde_json::Value;

/// Every number under `v` with the name of its field, depth first.
fn numbers<'a>(v: &'a Value, key: &'a str, out: &mut Vec<(&'a str, f64)>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| numbers(x, k, out)),
        Value::Array(a) => a.iter().for_each(|x| numbers(x, key, out)),
        Value::Number(n) => out.extend(n.as_f64().map(|x| (key, x))),
        _ => {}
    }
}

/// A share in percent: `pct`, `*_pct`, `pct_of_*` (a change is not one).
fn is_pct(key: &str) -> bool {
    (key == "pct" || key.ends_with("_pct") || key.starts_with("pct_")) && !key.contains("change")
}

/// A 0–1 fraction, as docs/spec.md §3 names them.
fn is_fraction(key: &str) -> bool {
    key.ends_with("_util") || key.ends_with("_frac") || key == "gpu_util"
}

#[test]
fn shares_and_fractions_stay_in_range_in_every_readers_json() {
    let mut checked = 0;
    for path in traces() {
        let p = path.to_str().unwrap();
        for args in [
            &["summary", p][..],
            &["kernels", p, "--top", "100000"],
            &["ops", p, "--top", "100000"],
            &["phases", p],
            &["tree", p, "--min-pct", "0"],
            &["what-if", p, "--all"],
        ] {
            let v = json(args);
            let mut nums = Vec::new();
            numbers(&v, "", &mut nums);
            for (key, x) in nums {
                if is_pct(key) {
                    assert!(
                        (-1e-9..=100.0 + 1e-6).contains(&x),
                        "{args:?}: {key} = {x}, outside 0–100 %"
                    );
                    checked += 1;
                }
                if is_fraction(key) {
                    assert!(
                        (-1e-9..=1.0 + 1e-9).contains(&x),
                        "{args:?}: {key} = {x}, outside 0–1"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10_000, "only {checked} shares checked");
}

#[test]
fn no_part_is_larger_than_its_whole() {
    for path in traces() {
        let p = path.to_str().unwrap();
        let s = json(&["summary", p]);
        let step = s["step_ms"].as_f64().unwrap();
        // Each figure is rounded to 0.01 ms at most.
        let within = |what: &str, part: f64| {
            assert!(part <= step + 0.01, "{p}: {what} {part} ms in a {step} ms step");
        };
        within("GPU busy", s["gpu_busy_ms_per_step"].as_f64().unwrap_or(0.0));
        if let Some(idle) = s["idle"]["ms_per_step"].as_f64() {
            within("GPU idle", idle);
            let busy = s["gpu_busy_ms_per_step"].as_f64().unwrap_or(0.0);
            within("idle + busy", idle + busy);
        }
        let phases = json(&["phases", p]);
        let mut wall = 0.0;
        for ph in phases["phases"].as_array().unwrap() {
            let w = ph["wall_ms_per_step"].as_f64().unwrap_or(0.0);
            within(&format!("phase {}", ph["phase"]), w);
            wall += w;
        }
        within("the phases' wall time", wall);
        // A phase's GPU time (the kernels launched in it) may exceed its
        // wall time: then the text says so, naming the phase.
        let text = common::profile_out(&["phases", p]);
        let past: Vec<&Value> = phases["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|ph| {
                ph["wall_ms_per_step"]
                    .as_f64()
                    .is_some_and(|w| ph["gpu_ms_per_step"].as_f64().unwrap() > w + 0.005)
            })
            .collect();
        assert_eq!(past.is_empty(), !text.contains("GPU time above wall time"), "{p}:\n{text}");
        for ph in past {
            let said = format!(
                "{} {:.2} ms in {:.2}",
                ph["phase"].as_str().unwrap(),
                ph["gpu_ms_per_step"].as_f64().unwrap(),
                ph["wall_ms_per_step"].as_f64().unwrap()
            );
            assert!(text.contains(&said), "{p}: no '{said}' in\n{text}");
        }
        // The roofline: no row's time at its roofline exceeds its time.
        for (lens, rows) in [("kernels", "kernels"), ("ops", "ops")] {
            let v = json(&[lens, p, "--top", "100000"]);
            for r in v[rows].as_array().unwrap() {
                if let Some(lost) = r["lost_ms_per_step"].as_f64() {
                    assert!(lost >= 0.0, "{p}: {lens} {r}: negative time lost");
                }
            }
        }
    }
}

/// The traces issue #54 found a figure counted two ways on.
const AUDITED: [&str; 4] = [
    "kineto_resnet50_v100_2021jun",
    "hta_trace_diff_a100_2022",
    "tracelens_h100_qwen_inference",
    "tracelens_mi300_inference",
];

/// The audited traces: each folder's Qwen trace where it has several.
fn audited() -> Vec<std::path::PathBuf> {
    AUDITED
        .iter()
        .map(|folder| {
            let dir = common::fixtures().join("traces").join(folder);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|f| f.unwrap().path())
                .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
                .collect();
            files.sort();
            let qwen = files.iter().find(|p| p.to_string_lossy().contains("Qwen"));
            qwen.unwrap_or(&files[0]).clone()
        })
        .collect()
}

#[test]
fn raw_gpu_share_is_the_kernel_time_clipped_to_the_steps_everywhere() {
    for path in audited() {
        let p = path.to_str().unwrap();
        // From the raw events: per device, each kernel's time inside the
        // steps, summed (overlaps counted twice), over the steps' wall.
        let t = common::truth(&path);
        let wall: f64 = t.windows.iter().map(|(s, e)| e - s).sum();
        let mut by_device: std::collections::BTreeMap<i64, f64> = Default::default();
        for (_, device, s, e) in &t.spans {
            let inside: f64 =
                common::clip(&[(*s, *e)], &t.windows).iter().map(|(a, b)| b - a).sum();
            *by_device.entry(*device).or_default() += inside;
        }
        let s = json(&["summary", p]);
        let devices = s["devices"].as_array().unwrap();
        assert_eq!(devices.len(), by_device.len(), "{p}");
        let mut mean = 0.0;
        for d in devices {
            let raw = by_device[&d["device"].as_i64().unwrap()] / wall;
            let shown = d["util_raw"].as_f64().unwrap();
            assert!(
                (shown - raw).abs() < 6e-4,
                "{p}: device {} util_raw {shown} vs {raw}",
                d["device"]
            );
            mean += raw / devices.len() as f64;
        }
        let top = s["gpu_util_raw"].as_f64().unwrap();
        assert!((top - mean).abs() < 6e-4, "{p}: gpu_util_raw {top}, the devices' {mean}");
        // No more than the union where one stream runs: nothing overlaps.
        let streams = s["streams"].as_array().unwrap();
        let text = common::profile_out(&["summary", p]);
        if streams.len() == 1 {
            assert!(top <= s["gpu_util"].as_f64().unwrap() + 1e-3, "{p}: {top} on one stream");
            assert!(!text.contains("streams overlap"), "{p}: one stream, yet\n{text}");
        }
    }
    // The A100 trace's NCCL stream overlaps its compute stream: said.
    let a100 = common::first_trace("hta_trace_diff_a100_2022");
    let text = common::profile_out(&["summary", a100.to_str().unwrap()]);
    assert!(text.contains("streams overlap: kernel time sums to 96%"), "{text}");
}

#[test]
fn device_and_stream_rows_count_the_kernels_the_header_counts() {
    for path in audited() {
        let p = path.to_str().unwrap();
        // From the raw events: each kernel by its launch's step (without
        // a launch, its own start), per (device, stream).
        let events = common::trace_events(&common::read_json(&path));
        let (steps, launches) = common::steps_and_launches(&events);
        let in_step = |t: f64| steps.values().any(|(s, e)| *s <= t && t < *e);
        let mut by_stream: std::collections::BTreeMap<(i64, i64), f64> = Default::default();
        for e in &events {
            if e["ph"] != "X" || !matches!(e["cat"].as_str(), Some("kernel" | "Kernel")) {
                continue;
            }
            let ts = e["ts"].as_f64().unwrap();
            let at = e["args"]["correlation"].as_i64().and_then(|c| launches.get(&c)).copied();
            if in_step(at.unwrap_or(ts)) {
                let device = e["args"]["device"].as_i64().or_else(|| e["pid"].as_i64()).unwrap();
                let stream = e["args"]["stream"].as_i64().or_else(|| e["tid"].as_i64()).unwrap();
                *by_stream.entry((device, stream)).or_default() += 1.0 / steps.len() as f64;
            }
        }
        let s = json(&["summary", p]);
        let header = s["kernels_per_step"].as_f64().unwrap();
        let all: f64 = by_stream.values().sum();
        assert!((header - all).abs() < 0.01, "{p}: header {header}, the raw events {all}");
        let mut rows = 0.0;
        for st in s["streams"].as_array().unwrap() {
            let key = (st["device"].as_i64().unwrap(), st["stream"].as_i64().unwrap());
            let shown = st["kernels_per_step"].as_f64().unwrap();
            let raw = by_stream.get(&key).copied().unwrap_or(0.0);
            assert!((shown - raw).abs() < 0.01, "{p}: stream {key:?} {shown} vs {raw}");
            rows += shown;
        }
        assert!(
            (rows - header).abs() < 0.02,
            "{p}: the streams sum to {rows}, the header {header}"
        );
        let devices: f64 = s["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["kernels_per_step"].as_f64().unwrap())
            .sum();
        assert!((devices - header).abs() < 0.01, "{p}: the devices {devices}, the header {header}");
    }
}

#[test]
fn launches_the_trace_did_not_record_are_said() {
    // The Qwen traces and a DLRM rank launch some kernels through calls the
    // profiler missed (audit H3): every kernel was launched, but the trace
    // holds fewer launch calls, and the summary says how many.
    let dlrm = common::fixtures().join("traces/param_dlrm_v100_8rank");
    let worker1 = std::fs::read_dir(&dlrm)
        .unwrap()
        .map(|f| f.unwrap().path())
        .find(|p| p.to_string_lossy().contains("worker1_"))
        .unwrap();
    for path in audited().into_iter().chain([worker1]) {
        let p = path.to_str().unwrap();
        // From the raw events: kernels in the steps, and those of them
        // whose correlation names a launch call in the trace.
        let events = common::trace_events(&common::read_json(&path));
        let (steps, launches) = common::steps_and_launches(&events);
        let in_step = |t: f64| steps.values().any(|(s, e)| *s <= t && t < *e);
        let (mut all, mut recorded) = (0.0, 0.0);
        for e in &events {
            if e["ph"] != "X" || !matches!(e["cat"].as_str(), Some("kernel" | "Kernel")) {
                continue;
            }
            let at = e["args"]["correlation"].as_i64().and_then(|c| launches.get(&c)).copied();
            if in_step(at.unwrap_or(e["ts"].as_f64().unwrap())) {
                all += 1.0 / steps.len() as f64;
                recorded += at.map_or(0.0, |_| 1.0 / steps.len() as f64);
            }
        }
        let s = json(&["summary", p]);
        assert!((s["launches_per_step"].as_f64().unwrap() - all).abs() < 0.01, "{p}");
        let text = common::profile_out(&["summary", p]);
        if recorded < all {
            let shown = s["launches_recorded_per_step"].as_f64().unwrap();
            assert!((shown - recorded).abs() < 0.01, "{p}: {shown} recorded, the raw {recorded}");
            let said = format!("({recorded:.0} of them recorded in the trace)");
            assert!(text.contains(&said), "{p}: no '{said}' in\n{text}");
        } else {
            assert!(s.get("launches_recorded_per_step").is_none(), "{p}");
            assert!(!text.contains("recorded in the trace"), "{p}");
        }
    }
}
