//! The job questions as SQL (sql/, docs/spec.md §7) answer as `summary DIR`
//! and `collectives DIR` do: each of the 8 DLRM ranks writes its own tables
//! (`summary TRACE --write-parquet`, one process per rank, as a cluster's
//! nodes would), DuckDB runs every shipped SQL file over the parts, and the
//! stragglers, skews, steps and kernels are those of the job view of the
//! same traces; the bus bandwidth is checked on the fixture whose traces
//! record message sizes (the DLRM ones do not: none on either side).
//!
//! DuckDB is not part of the Rust toolchain: the tests are `#[ignore]`d,
//! and asked to run (`--ignored`: scripts/test.sh when DuckDB is there, and
//! always in CI) they fail when it is missing instead of passing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::json;
use serde_json::Value;

const NEEDS: &str = "needs DuckDB for Python (pip install duckdb): LIBREYOLO_DUCKDB_PYTHON, or the torch venv scripts/test.sh sets up";

/// A Python that imports duckdb: `LIBREYOLO_DUCKDB_PYTHON`, else the torch
/// venv's (scripts/setup-torch.sh, where scripts/test.sh installs it), else
/// `python3`.
fn duckdb_python() -> PathBuf {
    let venv = std::env::var_os("LIBREYOLO_VENV").map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/libreyolo/torch-venv"))
    });
    let candidates = std::env::var_os("LIBREYOLO_DUCKDB_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain(venv.map(|v| v.join("bin/python")))
        .chain([PathBuf::from("python3")]);
    for py in candidates {
        let ok = Command::new(&py).args(["-c", "import duckdb"]).output();
        if ok.is_ok_and(|o| o.status.success()) {
            return py;
        }
    }
    panic!("{NEEDS}");
}

/// Each trace's tables written by its own process into `root`.
fn write_parts(traces: &[PathBuf], root: &Path) {
    let children: Vec<_> = traces
        .iter()
        .map(|t| {
            Command::new(env!("CARGO_BIN_EXE_libreyolo"))
                .args(["profile", "summary"])
                .arg(t)
                .arg("--write-parquet")
                .arg(root)
                .output()
        })
        .collect();
    for (t, out) in traces.iter().zip(children) {
        let out = out.expect("binary runs");
        assert!(out.status.success(), "{}: {}", t.display(), String::from_utf8_lossy(&out.stderr));
    }
}

/// Every shipped question over `root`, by file stem (sql/run.py --json).
fn answers(root: &Path) -> Value {
    let sql = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sql");
    let out = Command::new(duckdb_python())
        .arg(sql.join("run.py"))
        .arg(root)
        .arg("--json")
        .output()
        .expect("python runs");
    assert!(out.status.success(), "sql/run.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("sql/run.py prints JSON")
}

fn traces_in(folder: &str) -> Vec<PathBuf> {
    let dir = common::shared().join("traces").join(folder);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Equal within the JSON's rounding (3 decimals, or 4 for kernel times).
fn close(a: &Value, b: &Value, what: &str) {
    assert!((f(a) - f(b)).abs() <= 1.5e-3, "{what}: SQL {a}, the job view {b}");
}

#[test]
#[ignore = "needs DuckDB for Python (pip install duckdb) and --features parquet; scripts/test.sh runs it, or cargo test -p libreyolo --features parquet --test sql -- --ignored"]
fn the_sql_files_find_the_job_views_stragglers_skews_steps_and_kernels() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = traces_in("param_dlrm_v100_8rank");
    assert_eq!(traces.len(), 8);
    write_parts(&traces, tmp.path());
    let sql = answers(tmp.path());
    let dir = common::shared().join("traces/param_dlrm_v100_8rank");
    let dir = dir.to_str().unwrap();
    let job = json(&["summary", dir]);
    let coll = json(&["collectives", dir]);

    // Stragglers: the same ranks in the same order, with the same waits.
    let rows = sql["stragglers"].as_array().unwrap();
    let want = job["stragglers"].as_array().unwrap();
    assert!(!want.is_empty(), "rank 7 is waited for");
    let ranks = |v: &[Value]| v.iter().map(|s| s["rank"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ranks(rows), ranks(want));
    for (s, w) in rows.iter().zip(want) {
        let r = w["rank"].clone();
        assert_eq!(s["rule"], job["straggler_rule"]);
        close(&s["threshold_ms"], &job["straggler_threshold_ms"], "threshold");
        close(&s["wait_caused_ms_per_step"], &w["wait_caused_ms_per_step"], &format!("rank {r}"));
        close(&s["late_ms"], &w["late_ms"], &format!("rank {r} late"));
        close(&s["compute_excess_ms"], &w["compute_excess_ms"], &format!("rank {r} compute"));
        assert_eq!([&s["late_steps"], &s["steps"]], [&w["late_steps"][0], &w["late_steps"][1]]);
        let top = &w["late_at"][0];
        assert_eq!(s["most_at"], top["collective"], "rank {r}");
        close(&s["most_at_ms_per_step"], &top["wait_caused_ms_per_step"], &format!("rank {r}"));
    }
    assert_eq!(rows[0]["rank"], job["critical_rank"]);

    // Skew: every collective (8, under the file's top 20), largest first.
    let rows = sql["skew"].as_array().unwrap();
    let mut want: Vec<&Value> = coll["collectives"].as_array().unwrap().iter().collect();
    want.sort_by(|a, b| f(&b["skew_us"]).total_cmp(&f(&a["skew_us"])));
    assert_eq!(rows.len(), want.len());
    for (s, w) in rows.iter().zip(want) {
        let at = format!("{} #{}", w["group"], w["seq"]);
        assert_eq!((&s["process_group"], &s["seq"]), (&w["group"], &w["seq"]), "order");
        assert_eq!(s["collective"], w["collective"], "{at}");
        assert_eq!(s["last_rank"], w["last_rank"], "{at}");
        for k in ["skew_us", "wait_us", "duration_us", "at_ms"] {
            close(&s[k], &w[k], &format!("{at} {k}"));
        }
        // No message sizes in these traces: no bandwidth on either side.
        assert!(s["busbw_gbps"].is_null() && w.get("busbw_gbps").is_none(), "{at}");
    }
    assert_eq!(sql["busbw"], Value::Array(vec![]), "no sizes, no rows");

    // Step spread: the job's step is the slowest rank's.
    let spread = &sql["step_spread"][0];
    let steps: Vec<(u64, f64)> = job["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rank"].as_u64().unwrap(), f(&r["step_ms"])))
        .collect();
    let slowest = steps.iter().fold(steps[0], |a, b| if b.1 > a.1 { *b } else { a });
    let fastest = steps.iter().fold(steps[0], |a, b| if b.1 < a.1 { *b } else { a });
    assert_eq!(spread["ranks"], 8);
    close(&spread["step_ms"], &job["step_ms"], "job step");
    assert_eq!(spread["slowest_rank"], slowest.0);
    assert_eq!(spread["fastest_rank"], fastest.0);
    close(&spread["spread_ms"], &Value::from(slowest.1 - fastest.1), "spread");
    close(&spread["gpu_util"], &job["gpu_util"], "GPU use");

    // Costliest kernels: the job-wide rows of `kernels DIR`.
    let rows = sql["kernels"].as_array().unwrap();
    let want = json(&["kernels", dir]);
    let want = want["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), want.len().min(20));
    for (s, w) in rows.iter().zip(want) {
        assert_eq!(s["raw_name"], w["raw_name"]);
        for k in ["ms_per_step", "pct_of_gpu", "count_per_step", "min_ms_per_step"] {
            close(&s[k], &w[k], &format!("{} {k}", w["kernel"]));
        }
        close(&s["max_ms_per_step"], &w["max_ms_per_step"], "max");
        assert_eq!((&s["max_rank"], &s["on_ranks"]), (&w["max_rank"], &w["on_ranks"]));
    }
}

#[test]
#[ignore = "needs DuckDB for Python (pip install duckdb) and --features parquet; scripts/test.sh runs it, or cargo test -p libreyolo --features parquet --test sql -- --ignored"]
fn the_sql_bus_bandwidth_is_the_collectives_view() {
    // The fixture with message sizes (A100, 2 ranks' allreduce and
    // broadcast; rank 0's trace).
    let tmp = tempfile::tempdir().unwrap();
    let traces = traces_in("hta_nccl_a100_2024");
    write_parts(&traces, tmp.path());
    let sql = answers(tmp.path());
    let coll = json(&["collectives", traces[0].to_str().unwrap()]);
    let calls = coll["collectives"].as_array().unwrap();

    // Per kind, size and dtype: the calls and their busBw's median and range.
    let rows = sql["busbw"].as_array().unwrap();
    assert!(rows.len() >= 2, "allreduce and broadcast: {rows:?}");
    let mut seen = 0;
    for s in rows {
        let mut bw: Vec<f64> = calls
            .iter()
            .filter(|c| {
                c["collective"] == s["collective"]
                    && c["bytes"] == s["bytes"]
                    && c["dtype"] == s["dtype"]
            })
            .map(|c| f(&c["busbw_gbps"]))
            .collect();
        bw.sort_by(f64::total_cmp);
        let what = format!("{} of {} B", s["collective"], s["bytes"]);
        assert_eq!(s["calls"], bw.len(), "{what}");
        let n = bw.len();
        let median = if n % 2 == 1 { bw[n / 2] } else { (bw[n / 2 - 1] + bw[n / 2]) / 2.0 };
        close(&s["busbw_gbps_median"], &Value::from(median), &what);
        close(&s["busbw_gbps_min"], &Value::from(bw[0]), &what);
        close(&s["busbw_gbps_max"], &Value::from(bw[n - 1]), &what);
        seen += n;
    }
    assert_eq!(seen, calls.len(), "every collective has a size and a row");
    // One rank: no skew, and no one waited for.
    assert!(sql["stragglers"].as_array().unwrap().is_empty());
    assert!(sql["skew"][0]["skew_us"].is_null());
}
