//! The analysis of a generated trace against the generator's own ground
//! truth (`<trace>.expect.json`): every figure asserted here is counted by
//! the generator while it writes the events, never taken from the analysis.

use std::path::{Path, PathBuf};
use std::process::Command;

use libreyolo_core::profile::Profile;
use serde_json::Value;

/// Runs the real `gen-trace` binary; returns the trace and its ground truth.
fn generate(dir: &Path, name: &str, size: &str, seed: u64, gzip: bool) -> (PathBuf, Value) {
    let out = dir.join(name);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gen-trace"));
    cmd.args(["--size", size, "--seed", &seed.to_string(), "--out"]).arg(&out);
    if gzip {
        cmd.arg("--gzip");
    }
    let run = cmd.output().expect("gen-trace runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "gen-trace failed: {stderr}");
    // The summary the benchmark script and people read.
    assert!(
        stderr.contains("steps ")
            && stderr.contains("kernels ")
            && stderr.contains("total kernel time"),
        "{stderr}"
    );
    let side = dir.join(format!("{name}.expect.json"));
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(&side).expect("sidecar written"))
            .expect("sidecar is JSON");
    (out, truth)
}

fn load(path: &Path) -> Profile {
    libreyolo_core::input::load(path.to_str().expect("utf-8 temp path"), Default::default())
        .expect("the generated trace analyses")
        .input
        .profile
}

fn u(t: &Value, key: &str) -> u64 {
    t[key].as_u64().unwrap_or_else(|| panic!("truth.{key} missing"))
}

fn f(t: &Value, key: &str) -> f64 {
    t[key].as_f64().unwrap_or_else(|| panic!("truth.{key} missing"))
}

/// Equal after the profile's own rounding to `digits` decimals.
fn close(what: &str, got: f64, want: f64, digits: i32) {
    let tol = 0.5 * 10f64.powi(-digits) + 1e-9;
    assert!((got - want).abs() <= tol, "{what}: analysis says {got}, generator says {want}");
}

#[test]
fn analysis_matches_the_generators_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let (path, t) = generate(dir.path(), "train.json", "2MB", 42, false);
    let bytes = std::fs::metadata(&path).unwrap().len();
    assert_eq!(bytes, u(&t, "bytes"), "sidecar byte count");
    assert!((2_000_000..2_800_000).contains(&bytes), "size near the 2 MB target: {bytes}");

    // The file is a well-formed Kineto trace with the event mix we promise.
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("valid JSON");
    assert_eq!(doc["schemaVersion"], 1);
    assert_eq!(
        doc["deviceProperties"][0]["totalGlobalMem"].as_u64(),
        Some(u(&t, "total_global_mem"))
    );
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(events.len() as u64, u(&t, "events"));
    let count = |ph: &str, cat: &str| {
        events.iter().filter(|e| e["ph"] == ph && e["cat"] == cat).count() as u64
    };
    for (ph, cat) in [
        ("X", "cpu_op"),
        ("X", "cuda_runtime"),
        ("X", "kernel"),
        ("X", "gpu_memcpy"),
        ("X", "gpu_memset"),
        ("s", "ac2g"),
        ("f", "ac2g"),
        ("X", "user_annotation"),
        ("i", "cpu_instant_event"),
    ] {
        assert!(count(ph, cat) > 0, "no {ph}/{cat} events");
        assert_eq!(count(ph, cat), u(&t["events_by_kind"], &format!("{ph}/{cat}")), "{ph}/{cat}");
    }
    assert!(events.iter().any(|e| e["ph"] == "M"));
    // Kineto order: the CPU section sorted by ts, then the GPU section.
    let gpu_section =
        events.iter().position(|e| e["cat"] == "cuda_runtime" || e["cat"] == "kernel").unwrap();
    let cpu_ts: Vec<f64> =
        events[..gpu_section].iter().map(|e| e["ts"].as_f64().unwrap()).collect();
    assert!(cpu_ts.windows(2).all(|w| w[0] <= w[1]), "CPU section sorted by ts");
    assert!(
        events[gpu_section..].iter().all(|e| e["cat"] != "cpu_op"),
        "no cpu_op after the GPU section starts"
    );
    // In the GPU section each launch's GPU record comes first, then the
    // runtime call (as Kineto writes them).
    let kernel_at = events.iter().position(|e| e["cat"] == "kernel").unwrap();
    let runtime_after = events[kernel_at..].iter().find(|e| e["cat"] == "cuda_runtime").unwrap();
    assert_eq!(runtime_after["args"]["correlation"], events[kernel_at]["args"]["correlation"]);
    // Every kernel's correlation has exactly one runtime launch.
    let corr = |cat: &str| -> std::collections::BTreeSet<u64> {
        events
            .iter()
            .filter(|e| e["cat"] == cat)
            .map(|e| e["args"]["correlation"].as_u64().unwrap())
            .collect()
    };
    let launches = corr("cuda_runtime");
    assert!(corr("kernel").is_subset(&launches));
    assert_eq!(count("X", "kernel") as usize, corr("kernel").len(), "one correlation per kernel");

    let p = load(&path);
    let steps = u(&t, "steps");
    assert!(steps >= 3, "the test trace has several steps");
    assert_eq!(p.figures.window.real_steps, steps);
    close("window.wall_ms", p.figures.window.wall_ms, u(&t, "step_wall_ns") as f64 / 1e6, 3);
    close("step_ms", p.figures.step_ms, f(&t, "step_ms"), 3);
    close("kernels_per_step", p.figures.kernels_per_step, f(&t, "kernels_per_step"), 2);
    close("launches_per_step", p.figures.launches_per_step, f(&t, "kernels_per_step"), 2);
    assert_eq!(p.figures.unique_kernels, u(&t, "unique_kernels"));
    assert_eq!(p.kernels.len() as u64, u(&t, "unique_kernels"));
    close("mean_kernel_us", p.figures.mean_kernel_us, f(&t, "mean_kernel_us"), 2);
    close("tensorcore_pct", p.figures.tensorcore_pct, f(&t, "tensorcore_pct"), 1);
    close(
        "memcpy_ms_per_step",
        p.figures.memcpy_ms_per_step,
        u(&t, "memcpy_ns") as f64 / 1e6 / steps as f64,
        3,
    );
    let kernel_ms: f64 = p.kernels.iter().map(|k| k.ms_per_step).sum();
    assert!(
        (kernel_ms - f(&t, "kernel_ms_per_step")).abs() < 1e-4 * p.kernels.len() as f64,
        "total kernel time: {kernel_ms} vs {}",
        f(&t, "kernel_ms_per_step")
    );

    // Busy time is the union over two streams, never more than the window.
    assert!(p.figures.gpu_util <= 1.0);
    close("gpu_util", p.figures.gpu_util, f(&t, "gpu_util"), 3);
    close("gpu_busy_ms_per_step", p.figures.gpu_busy_ms_per_step, f(&t, "gpu_busy_ms_per_step"), 3);
    close("gpu_util_raw", p.figures.gpu_util_raw, f(&t, "gpu_util_raw"), 3);
    assert!(f(&t, "gpu_util_raw") > f(&t, "gpu_util"), "the streams overlap in this trace");
    assert_eq!(p.streams.len(), 2);
    assert_eq!(p.devices.len(), 1);
    let dev = &p.devices[0];
    close(
        "peak_reserved_mb",
        dev.peak_reserved_mb.unwrap(),
        u(&t, "peak_reserved_bytes") as f64 / 1e6,
        1,
    );
    close("capacity_mb", dev.capacity_mb.unwrap(), u(&t, "total_global_mem") as f64 / 1e6, 1);
    close(
        "peak_vram_mb",
        p.figures.peak_vram_mb.unwrap(),
        u(&t, "peak_allocated_bytes") as f64 / 1e6,
        1,
    );

    // Every GPU event in the steps joined through its launch; none by time.
    let a = p.attribution.as_ref().expect("attribution of a trace");
    assert_eq!(a.gpu_events, u(&t, "gpu_events_in_steps"));
    assert_eq!(a.via_launch, u(&t, "gpu_events_in_steps"));
    assert_eq!(a.via_time_window, 0);
    assert_eq!(a.outside_steps, u(&t, "gpu_events_outside_steps"));
    assert_eq!(a.malformed_events, 0);
    assert_eq!(a.events_read, u(&t, "events"));
    assert_eq!(a.passes, 1, "Kineto order needs one pass");

    // Phases: the generator's count of what each `step/<phase>` launched.
    let truth_phases = t["phases"].as_array().unwrap();
    let names: Vec<&str> = p.phases.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(names, ["dataload", "to_device", "forward", "backward", "optimizer"]);
    for tp in truth_phases {
        let name = tp["phase"].as_str().unwrap();
        let row = p.phases.iter().find(|r| r.phase == name).unwrap();
        close(
            &format!("{name}.kernels_per_step"),
            row.kernels_per_step,
            tp["kernels_per_step"].as_f64().unwrap(),
            2,
        );
        close(
            &format!("{name}.ops_per_step"),
            row.ops_per_step,
            tp["ops_per_step"].as_f64().unwrap(),
            2,
        );
        assert_eq!(
            row.unique_kernels,
            tp["unique_kernels"].as_u64().unwrap(),
            "{name}.unique_kernels"
        );
        close(
            &format!("{name}.gpu_ms_per_step"),
            row.gpu_ms_per_step,
            tp["kernel_ns"].as_f64().unwrap() / 1e6 / steps as f64,
            3,
        );
        let wall = tp["wall_ns"].as_f64().unwrap() / 1e6 / steps as f64;
        close(&format!("{name}.wall_ms_per_step"), row.wall_ms_per_step.unwrap(), wall, 3);
    }
    let ops: f64 = p.phases.iter().map(|r| r.ops_per_step).sum();
    close("ops per step", ops, f(&t, "ops_per_step"), 1);
    let kernels: f64 = p.phases.iter().map(|r| r.kernels_per_step).sum();
    close("kernels over phases", kernels, f(&t, "kernels_per_step"), 1);
}

#[test]
fn same_seed_same_bytes_and_gzip_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, t1) = generate(dir.path(), "a.json", "700KB", 3, false);
    let (again, _) = generate(dir.path(), "b.json", "700KB", 3, false);
    assert_eq!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&again).unwrap(),
        "deterministic for a seed"
    );
    let (gz, t2) = generate(dir.path(), "c.json.gz", "700KB", 3, true);
    assert_eq!(t1["bytes"], t2["bytes"], "--size counts uncompressed bytes");
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], &[0x1f, 0x8b]);
    let (a, b) = (load(&plain), load(&gz));
    assert_eq!(a.figures.window, b.figures.window);
    assert_eq!(a.kernels, b.kernels);
    assert_eq!(a.phases, b.phases);
    let (_, other) = generate(dir.path(), "d.json", "700KB", 4, false);
    assert_eq!(other["steps"], t1["steps"]);
    assert_ne!(other["kernel_ns"], t1["kernel_ns"], "another seed, other durations");
}
