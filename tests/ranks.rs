//! `summary` of a distributed job: the 8 rank traces of one DLRM training
//! job on V100s (tests/fixtures/traces/param_dlrm_v100_8rank), checked rank
//! by rank against `summary` of each file alone; and a straggler made from
//! a real rank trace by lengthening one GEMM kernel.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::{json, run};
use serde_json::Value;

fn dlrm() -> PathBuf {
    common::shared().join("traces/param_dlrm_v100_8rank")
}

fn rank_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dlrm()).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn a_folder_of_rank_traces_is_one_job() {
    let dir = dlrm();
    let job = json(&["summary", dir.to_str().unwrap()]);
    assert_eq!(job["world_size"], 8);
    let rows = job["ranks"].as_array().unwrap();
    assert_eq!(rows.iter().map(|r| r["rank"].as_u64().unwrap()).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());

    // Each rank's row is what `summary` says of that file alone.
    let (mut busy, mut steps, mut slowest) = (0.0, 0.0, (0u64, 0.0f64));
    for (row, file) in rows.iter().zip(rank_files()) {
        let alone = json(&["summary", file.to_str().unwrap()]);
        let rank = row["rank"].as_u64().unwrap();
        assert!(
            file.file_name().unwrap().to_string_lossy().starts_with(&format!("worker{rank}_")),
            "rank {rank} from distributedInfo matches the file"
        );
        let (step, b) = (alone["step_ms"].as_f64().unwrap(), alone["gpu_busy_ms_per_step"].as_f64().unwrap());
        let exposed = alone["comm_exposed_ms_per_step"].as_f64().unwrap();
        assert_eq!(row["step_ms"].as_f64().unwrap(), step);
        assert_eq!(row["comm_ms"], alone["comm_ms_per_step"]);
        assert_eq!(row["exposed_comm_ms"].as_f64().unwrap(), exposed);
        assert!((row["compute_ms"].as_f64().unwrap() - (b - exposed)).abs() < 1e-3, "compute = busy − exposed communication");
        assert!((row["idle_ms"].as_f64().unwrap() - (step - b)).abs() < 1e-3);
        assert_eq!(row["bound"], alone["bound"]);
        busy += b;
        steps += step;
        if step > slowest.1 {
            slowest = (rank, step);
        }
    }
    assert_eq!(job["step_ms"].as_f64().unwrap(), slowest.1, "the job's step is the slowest rank's");
    assert_eq!(job["critical_rank"].as_u64().unwrap(), slowest.0);
    assert!((job["gpu_util"].as_f64().unwrap() - busy / steps).abs() < 1e-3);
    // Compute differs by at most 0.22 ms between ranks here: under the 5% threshold.
    assert_eq!(job["stragglers"], Value::Array(vec![]));

    let text = run(&["profile", "summary", dir.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.starts_with("job      8 ranks of world size 8  |  step"), "{}", text.stdout);
    assert!(text.stdout.contains("stragglers: none"), "{}", text.stdout);
}

#[test]
fn several_files_are_ranks_and_gaps_or_duplicates_are_said() {
    let files = rank_files();
    let args: Vec<&str> =
        ["profile", "summary"].into_iter().chain([&files[0], &files[2], &files[5]].map(|f| f.to_str().unwrap())).collect();
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("note: ranks 1, 3, 4, 6, 7 of 8 are missing"), "{}", r.stderr);
    assert!(r.stdout.starts_with("job      3 ranks of world size 8"), "{}", r.stdout);

    let f = files[3].to_str().unwrap();
    let r = run(&["profile", "summary", f, f]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("rank 3 twice"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

fn read_gz(path: &Path) -> Value {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut s).unwrap();
    serde_json::from_str(&s).unwrap()
}

#[test]
fn a_rank_that_computes_longer_is_the_straggler_and_its_kernel_the_reason() {
    // Three ranks of the same real trace; rank 2's GEMMs each take 1 ms more.
    let dir = tempfile::tempdir().unwrap();
    let before = tempfile::tempdir().unwrap();
    let base = read_gz(&rank_files()[0]);
    const SLOW: &str = "volta_sgemm_128x32_nt";
    let mut slowed = 0;
    for rank in 0..3u32 {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = 3.into();
        std::fs::write(before.path().join(format!("trace_rank{rank}.json")), t.to_string()).unwrap();
    }
    for rank in 0..3u32 {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = 3.into();
        if rank == 2 {
            for e in t["traceEvents"].as_array_mut().unwrap() {
                if e["cat"] == "kernel" && e["name"] == SLOW {
                    e["dur"] = (e["dur"].as_f64().unwrap() + 1000.0).into();
                    slowed += 1;
                }
            }
        }
        let mut f = std::fs::File::create(dir.path().join(format!("trace_rank{rank}.json"))).unwrap();
        f.write_all(t.to_string().as_bytes()).unwrap();
    }
    assert!(slowed >= 1);
    let job = json(&["summary", dir.path().to_str().unwrap()]);
    let s = job["stragglers"].as_array().unwrap();
    assert_eq!(s.len(), 1, "{job:#}");
    assert_eq!(s[0]["rank"], 2);
    let late = s[0]["late_ms"].as_f64().unwrap();
    // Lengthened kernels overlap the ones after them, so the GPU's busy time
    // (compute) grows by less than the kernel time added, but it grows.
    assert!(
        late > job["straggler_threshold_ms"].as_f64().unwrap() && late <= slowed as f64 + 1e-3,
        "late by at most the added {slowed} ms: {late}"
    );
    assert_eq!(s[0]["kernels"][0]["name"], SLOW);
    assert!((s[0]["kernels"][0]["extra_ms"].as_f64().unwrap() - slowed as f64).abs() < 1e-3);
    assert!((s[0]["phase"]["extra_ms"].as_f64().unwrap() - slowed as f64).abs() < 1e-3, "the phase's kernel time: {}", s[0]["phase"]);

    // Before → after: rank 2 is now the straggler and the GPUs are busier
    // (the CPU-side step ranges of the edited trace did not move).
    let c = json(&["compare", before.path().to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(c["stragglers"], serde_json::json!([[], [2]]));
    assert!(c["gpu_util"][1].as_f64().unwrap() > c["gpu_util"][0].as_f64().unwrap(), "{c:#}");
    assert_eq!(c["ranks"][0]["change_pct"], 0.0);
}

#[test]
fn compare_of_two_rank_sets_is_per_job_and_per_rank() {
    let a = dlrm();
    let dir = tempfile::tempdir().unwrap();
    // After: the same job with rank 5 missing.
    for f in rank_files().iter().filter(|f| !f.file_name().unwrap().to_string_lossy().starts_with("worker5_")) {
        std::fs::copy(f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    let c = json(&["compare", a.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(c["step_ms"][0], c["step_ms"][1], "the slowest rank is still there");
    let ranks = c["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    assert_eq!(ranks[5]["after_ms"], Value::Null);
    assert_eq!(ranks[0]["change_pct"], 0.0);
    let r = run(&["profile", "compare", a.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("8 ranks before, 7 after"), "{}", r.stderr);
    assert!(r.stdout.starts_with("job step "), "{}", r.stdout);
}
