//! Graph replays given back to the ops that captured them
//! (docs/analysis.md §17.1), on vLLM's decode step and the capture of its
//! graph (tests/fixtures/README.md), against figures this file derives
//! from the raw events of both traces: the replayed kernels through the
//! graph launch's correlation id, the captured launches between the
//! capture's begin and end calls, and the ops open around each launch.

mod common;

use std::path::PathBuf;

use common::{read_json, trace_events};
use serde_json::Value;

fn dir() -> PathBuf {
    common::fixtures().join("traces/tracelens_vllm_cuda_graph_capture")
}
fn replay() -> PathBuf {
    dir().join("replay/graph_execution.json.gz")
}
fn capture() -> PathBuf {
    dir().join("graph_capture_rank_0.pt.trace.json.gz")
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// The replayed kernels, (name, µs), in start order.
fn replayed() -> Vec<(String, f64)> {
    let ev = trace_events(&read_json(&replay()));
    let graph: Vec<i64> = ev
        .iter()
        .filter(|e| e["name"].as_str().is_some_and(|n| n.ends_with("GraphLaunch")))
        .map(|e| e["args"]["correlation"].as_i64().unwrap())
        .collect();
    assert_eq!(graph.len(), 1);
    let mut k: Vec<&Value> = ev
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["args"]["correlation"].as_i64() == Some(graph[0]))
        .collect();
    k.sort_by(|a, b| f(a, "ts").total_cmp(&f(b, "ts")));
    k.iter().map(|e| (e["name"].as_str().unwrap().to_string(), f(e, "dur"))).collect()
}

/// A captured launch: its kernel's name, and the cpu_ops open around it
/// on its thread, (name, Input Dims), outermost first.
struct Captured {
    kernel: String,
    ops: Vec<(String, Value, f64)>,
}

fn captured() -> Vec<Captured> {
    let ev = trace_events(&read_json(&capture()));
    let call = |n: &str| ev.iter().find(|e| e["name"] == n).unwrap();
    let (begin, end) = (call("hipStreamBeginCapture"), call("hipStreamEndCapture"));
    let thread = (&begin["pid"], &begin["tid"]);
    let (from, to) = (f(begin, "ts"), f(end, "ts"));
    let mut launches: Vec<&Value> = ev
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime" && (&e["pid"], &e["tid"]) == thread)
        .filter(|e| e["name"].as_str().unwrap().contains("LaunchKernel"))
        .filter(|e| (from..=to).contains(&f(e, "ts")))
        .collect();
    launches.sort_by(|a, b| f(a, "ts").total_cmp(&f(b, "ts")));
    let mut ops: Vec<&Value> =
        ev.iter().filter(|e| e["cat"] == "cpu_op" && (&e["pid"], &e["tid"]) == thread).collect();
    ops.sort_by(|a, b| f(a, "ts").total_cmp(&f(b, "ts")).then(f(b, "dur").total_cmp(&f(a, "dur"))));
    launches
        .iter()
        .map(|l| {
            let at = f(l, "ts");
            Captured {
                kernel: l["args"]["kernel"].as_str().unwrap().to_string(),
                ops: ops
                    .iter()
                    .filter(|o| f(o, "ts") <= at && at <= f(o, "ts") + f(o, "dur"))
                    .map(|o| {
                        let name = o["name"].as_str().unwrap().to_string();
                        (name, o["args"]["Input Dims"].clone(), f(o, "ts"))
                    })
                    .collect(),
            }
        })
        .collect()
}

fn dims(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect()
}

/// `aten::linear(input [.., K], weight [N, K], bias)`: 2·M·N·K, M the
/// product of the input's leading dimensions.
fn linear_flops(d: &Value) -> f64 {
    let (x, w) = (dims(&d[0]), dims(&d[1]));
    let m: u64 = x[..x.len() - 1].iter().product();
    2.0 * m as f64 * w[0] as f64 * x[x.len() - 1] as f64
}

/// The replay alone: the share in graph replays is said, and none of it
/// is given an op.
#[test]
fn without_the_capture_the_replays_are_said_unattributed() {
    let p = replay();
    let p = p.to_str().unwrap();
    let want: f64 = replayed().iter().map(|k| k.1).sum::<f64>() / 1e3;
    let s = common::json(&["summary", p]);
    assert!((f(&s, "graph_replay_ms_per_step") - want).abs() < 0.002, "{s}");
    assert!(s.get("graph_replay_attributed_ms_per_step").is_none());
    let text = common::run(&["profile", "summary", p]).stdout;
    assert!(text.contains("attributed to no op"), "{text}");
    let k = common::run(&["profile", "kernels", p]).stdout;
    assert!(k.contains("graph replays") && k.contains("--graph-capture"), "{k}");
    // The op and module views say it too: no op or module of this trace
    // launched those kernels (audit s17 F3: `modules` said "0.000 ms of
    // it in no module", `ops` nothing).
    let o = common::json(&["ops", p]);
    assert!((f(&o, "graph_replay_ms_per_step") - want).abs() < 0.002, "{o}");
    let ops = common::run(&["profile", "ops", p]).stdout;
    assert!(ops.contains("graph replays") && ops.contains("launched by no op"), "{ops}");
    let m = common::json(&["modules", p]);
    let notes: Vec<&str> =
        m["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let note = notes.iter().find(|n| n.contains("graph replays")).unwrap_or_else(|| panic!("{m}"));
    let said: f64 = note.split(" ms/step").next().unwrap().parse().unwrap();
    assert!((said - want).abs() < 0.002, "{want}: {note}");
}

/// With the capture: every replayed kernel matched by name, in order, to
/// a captured launch; the share, the tree and the GEMM FLOPs agree with
/// the capture's own ops.
#[test]
fn the_capture_gives_each_replayed_kernel_its_op() {
    let (rep, cap) = (replayed(), captured());
    assert_eq!(rep.len(), 421);
    assert_eq!(rep.len(), cap.len(), "one replayed kernel per captured launch");
    // Name by name in order (one stream): those that agree are attributed.
    let matched: Vec<bool> = rep.iter().zip(&cap).map(|(r, c)| r.0 == c.kernel).collect();
    let attributed: f64 =
        rep.iter().zip(&matched).filter(|m| *m.1).map(|(r, _)| r.1).sum::<f64>() / 1e3;
    let all: f64 = rep.iter().map(|k| k.1).sum::<f64>() / 1e3;
    assert!(attributed > 0.99 * all, "{attributed} of {all}");

    let p = replay();
    let p = p.to_str().unwrap();
    let c = capture();
    let c = c.to_str().unwrap();
    let s = common::json(&["summary", p, "--graph-capture", c]);
    assert!((f(&s, "graph_replay_ms_per_step") - all).abs() < 0.002, "{s}");
    assert!((f(&s, "graph_replay_attributed_ms_per_step") - attributed).abs() < 0.002, "{s}");
    let text = common::run(&["profile", "summary", p, "--graph-capture", c]).stdout;
    assert!(text.contains("100% attributed to the ops that captured them"), "{text}");
    let k = common::run(&["profile", "kernels", p, "--graph-capture", c]).stdout;
    assert!(k.contains("100% attributed to the ops that captured them"), "{k}");
    // `ops` rows of captured ops mix the replays' calls and GPU time with
    // the rates of the trace's own calls: said.
    let o = common::run(&["profile", "ops", p, "--graph-capture", c]).stdout;
    assert!(o.contains("their rate columns and shape come from the calls this trace ran"), "{o}");

    // The tree: under the graph node, every kernel under exactly the ops
    // that were open around its captured launch (none: right under the
    // captured annotations and modules); each kernel once.
    let t = common::json(&["tree", p, "--graph-capture", c, "--by", "op", "--min-pct", "0"]);
    let rows = t["rows"].as_array().unwrap();
    let mut stack: Vec<usize> = Vec::new();
    let mut under_graph = 0.0;
    let mut by_ops: std::collections::HashMap<Vec<String>, f64> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        stack.truncate(r["depth"].as_u64().unwrap() as usize);
        let graph = stack.iter().position(|&a| rows[a]["kind"] == "graph");
        if let (Some(g), "kernel") = (graph, r["kind"].as_str().unwrap()) {
            under_graph += f(r, "kernels_per_step");
            let ops: Vec<String> = stack[g + 1..]
                .iter()
                .filter(|&&a| rows[a]["kind"] == "op")
                .map(|&a| rows[a]["name"].as_str().unwrap().to_string())
                .collect();
            *by_ops.entry(ops).or_default() += f(r, "kernels_per_step");
        }
        stack.push(i);
    }
    assert_eq!(under_graph, rep.len() as f64, "every replayed kernel once");
    let mut want: std::collections::HashMap<Vec<String>, f64> = Default::default();
    for c in &cap {
        *want.entry(c.ops.iter().map(|o| o.0.clone()).collect()).or_default() += 1.0;
    }
    assert_eq!(by_ops, want, "kernels per chain of captured ops");

    // GEMM FLOPs: the captured `aten::linear` calls that launched a
    // kernel, each counted once per replay, priced from their shapes.
    // A call that launched several kernels counts once (its start).
    let mut gemm = 0.0;
    let mut seen = std::collections::HashSet::new();
    for c in &cap {
        if let Some(o) = c.ops.iter().find(|o| o.0 == "aten::linear") {
            if seen.insert(o.2.to_bits()) {
                gemm += linear_flops(&o.1);
            }
        }
    }
    let linear_gflop: f64 = rows
        .iter()
        .filter(|r| r["kind"] == "op" && r["name"] == "aten::linear")
        // TFLOP/s × ms is GFLOP.
        .map(|r| f(r, "tflops") * f(r, "gpu_ms_per_step"))
        .sum();
    let captured_linear: f64 = gemm / 1e9;
    // The replay's own lm_head linear runs outside the graph: add it.
    let ev = trace_events(&read_json(&replay()));
    let own: f64 = ev
        .iter()
        .filter(|e| e["cat"] == "cpu_op" && e["name"] == "aten::linear")
        .map(|e| linear_flops(&e["args"]["Input Dims"]))
        .sum::<f64>()
        / 1e9;
    assert!(captured_linear > 0.0);
    let want = captured_linear + own;
    assert!(
        (linear_gflop - want).abs() <= 1e-3 * want,
        "aten::linear GFLOP {linear_gflop} vs {want} (captured {captured_linear}, own {own})"
    );
}

/// The layout vLLM, SGLang and xDiT write: the capture traces in a
/// `capture_traces/` folder beside the trace, found without the option.
#[test]
fn a_capture_traces_folder_beside_the_trace_is_found() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("capture_traces")).unwrap();
    std::fs::copy(capture(), d.path().join("capture_traces/graph_capture_rank_0.json.gz")).unwrap();
    let p = d.path().join("graph_execution.json.gz");
    std::fs::copy(replay(), &p).unwrap();
    let s = common::json(&["summary", p.to_str().unwrap()]);
    let (all, got) =
        (f(&s, "graph_replay_ms_per_step"), f(&s, "graph_replay_attributed_ms_per_step"));
    assert!(all > 0.0 && (all - got).abs() < 0.002, "{s}");
}
