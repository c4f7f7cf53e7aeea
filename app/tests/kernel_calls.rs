//! Each kernel's calls (`kernels --json`: `calls`, docs/analysis.md §7.1)
//! against a whole-file reading of the raw events: the calls counted in
//! the steps (placed by their launch), their durations' median, 99th
//! percentile and longest by nearest rank, their streams and their most
//! used launch configuration.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use common::{json, read_json, steps_and_launches, trace_events, traces};
use serde_json::Value;

/// One kernel's calls in the steps, as the raw events give them.
#[derive(Default)]
struct Raw {
    durs: Vec<f64>,
    streams: BTreeSet<(i64, i64)>,
    configs: HashMap<(Vec<u64>, Vec<u64>), u64>,
}

fn raw_calls(path: &Path) -> HashMap<String, Raw> {
    let events = trace_events(&read_json(path));
    let (steps, launches) = steps_and_launches(&events);
    let in_step = |ts: f64| steps.is_empty() || steps.values().any(|(s, e)| *s <= ts && ts < *e);
    let dims = |v: &Value| -> Option<Vec<u64>> {
        let d: Vec<u64> = v.as_array()?.iter().map(|x| x.as_u64()).collect::<Option<_>>()?;
        (1..=3).contains(&d.len()).then(|| {
            let mut d = d;
            d.resize(3, 1);
            d
        })
    };
    let mut out: HashMap<String, Raw> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        if !matches!(e["cat"].as_str(), Some("kernel" | "Kernel")) {
            continue;
        }
        let ts = e["ts"].as_f64().unwrap_or(0.0);
        let args = &e["args"];
        let at = args["correlation"].as_i64().and_then(|c| launches.get(&c).copied()).unwrap_or(ts);
        if !in_step(at) {
            continue;
        }
        let r = out.entry(e["name"].as_str().unwrap_or("").to_string()).or_default();
        r.durs.push(e["dur"].as_f64().unwrap_or(0.0));
        let device = args["device"].as_i64().or_else(|| e["pid"].as_i64()).unwrap_or(0);
        r.streams
            .insert((device, args["stream"].as_i64().or_else(|| e["tid"].as_i64()).unwrap_or(0)));
        if let (Some(g), Some(b)) = (dims(&args["grid"]), dims(&args["block"])) {
            *r.configs.entry((g, b)).or_default() += 1;
        }
    }
    out
}

/// The `q` quantile of sorted `v` by nearest rank.
fn nearest(v: &[f64], q: f64) -> f64 {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

#[test]
fn each_kernels_calls_are_those_of_the_raw_events() {
    let (mut checked, mut with_configs) = (0, 0);
    for path in traces() {
        let p = path.to_str().unwrap();
        let v = json(&["kernels", p, "--top", "1000000"]);
        let raw = raw_calls(&path);
        for k in v["kernels"].as_array().unwrap() {
            let name = k["raw_name"].as_str().unwrap();
            let c = &k["calls"];
            let r = &raw[name];
            let mut durs = r.durs.clone();
            durs.sort_by(f64::total_cmp);
            assert_eq!(c["calls"].as_u64().unwrap() as usize, durs.len(), "{p}: {name}: calls");
            for (field, want) in [
                ("p50_us", nearest(&durs, 0.5)),
                ("p99_us", nearest(&durs, 0.99)),
                ("max_us", *durs.last().unwrap()),
            ] {
                let got = c[field].as_f64().unwrap();
                assert!((got - want).abs() <= 0.0015, "{p}: {name}: {field} {got} vs {want}");
            }
            let streams: BTreeSet<(i64, i64)> = c["streams"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["device"].as_i64().unwrap(), s["stream"].as_i64().unwrap()))
                .collect();
            assert_eq!(streams, r.streams, "{p}: {name}: streams");
            assert_eq!(
                c["distinct_launch_configs"].as_u64().unwrap_or(0) as usize,
                r.configs.len(),
                "{p}: {name}: distinct configurations"
            );
            // Calls without grid/block beside calls with them are counted
            // (audit s19 L6: 52 of 172 on the MI300X Qwen trace).
            let configured: u64 = r.configs.values().sum();
            let without = if r.configs.is_empty() { 0 } else { durs.len() as u64 - configured };
            assert_eq!(
                c["calls_without_config"].as_u64().unwrap_or(0),
                without,
                "{p}: {name}: calls without a configuration"
            );
            if let Some(first) = c["launch_config"].as_object() {
                let dims = |f: &str| -> Vec<u64> {
                    first[f].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
                };
                let most = r.configs.values().max().unwrap();
                assert_eq!(r.configs[&(dims("grid"), dims("block"))], *most, "{p}: {name}");
                with_configs += 1;
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "only {checked} kernels checked");
    assert!(with_configs > 100, "only {with_configs} kernels with launch configurations");
}

#[test]
fn rows_merged_over_ranks_and_phase_rows_carry_no_calls() {
    let dlrm = common::fixtures().join("traces/param_dlrm_v100_8rank");
    let v = json(&["kernels", dlrm.to_str().unwrap()]);
    let rows = v["kernels"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|k| k["calls"].is_null()), "a mean over ranks has no calls");
    let resnet = common::first_trace("kineto_resnet50_v100_2021jun");
    let v = json(&["kernels", resnet.to_str().unwrap(), "--phase", "backward"]);
    let rows = v["kernels"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|k| k["calls"].is_null()), "phase rows have no calls");
}
