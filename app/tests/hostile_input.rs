//! Files and streams a hostile or unlucky user gives the readers: each ends
//! with a clear exit code and one line on stderr, never a crash, a hang or
//! numbers taken from the wrong file; results alone on stdout.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use common::run;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_libreyolo"))
}

/// A small trace: one step with a CPU op, a launch and its GEMM kernel;
/// `extra` events are added to `traceEvents`, `top` keys to the object.
fn trace_with(top: &str, extra: &str) -> String {
    format!(
        r#"{{{top}"traceEvents": [
 {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}},
 {{"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 50}},
 {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {{"correlation": 9}}}},
 {{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_f16f16", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {{"correlation": 9}}}}{extra}
]}}"#
    )
}

fn trace() -> String {
    trace_with("", "")
}

fn write(dir: &Path, name: &str, body: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn reader(args: &[&str]) -> common::Run {
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    run(&all)
}

/// Exit `code`, stdout empty, exactly one line on stderr that contains `what`.
fn refused(r: &common::Run, code: i32, what: &str) {
    assert_eq!(r.code, code, "stderr: {}", r.stderr);
    assert!(r.stdout.is_empty(), "stdout: {}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    assert!(r.stderr.contains(what), "expected {what:?} in: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

fn json_of(r: &common::Run) -> Value {
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", r.stdout))
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let cases = [
        write(dir.path(), "top.json", &deep),
        write(
            dir.path(),
            "args.json",
            trace_with("", &format!(r#", {{"ph": "X", "name": "x", "args": {{"a": {deep}}}}}"#)),
        ),
        write(dir.path(), "value.json", format!(r#"{{"x": {deep}, "traceEvents": []}}"#)),
        write(
            dir.path(),
            "profile.json",
            format!(
                r#"{{"schema": "libreyolo.profile.analysis/v1", "step_ms": 1, "bound": "x", "x": {deep}}}"#
            ),
        ),
    ];
    for f in &cases {
        for sub in ["summary", "kernels"] {
            let r = reader(&[sub, path(f)]);
            // A value the reader skips may be refused as deep or accepted; a
            // crash (134, 101) is never right.
            if f.ends_with("value.json") {
                assert!(
                    r.code == 1 && !r.stderr.contains("panicked"),
                    "{f:?}: {} {}",
                    r.code,
                    r.stderr
                );
                continue;
            }
            refused(&r, 1, "nesting too deep");
        }
    }
}

#[test]
fn pipes_and_stdin_are_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let plain = trace();
    let from_file =
        json_of(&reader(&["kernels", path(&write(dir.path(), "t.json", &plain)), "--json"]));
    for bytes in [plain.as_bytes().to_vec(), gzip(plain.as_bytes())] {
        for arg in ["-", "/dev/stdin"] {
            let mut child = bin()
                .args(["profile", "kernels", arg, "--json"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let body = bytes.clone();
            let writer = std::thread::spawn(move || {
                let _ = stdin.write_all(&body);
            });
            let out = child.wait_with_output().unwrap();
            writer.join().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{arg}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(got["kernels"], from_file["kernels"], "{arg}");
        }
    }
}

#[test]
fn compare_reads_stdin_for_one_side_only() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", trace());
    let out = bin()
        .args(["profile", "compare", "-", "-"])
        .stdin(std::fs::File::open(&t).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read once"));
    let out = bin()
        .args(["profile", "compare", "-", path(&t), "--json"])
        .stdin(std::fs::File::open(&t).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["bound"][0], c["bound"][1]);
}

#[test]
fn a_trace_whose_step_marker_comes_last_reads_from_a_pipe() {
    // The step marker comes after the work it encloses (2020-21 traces):
    // the work is counted again at the end from what the one pass kept.
    let body = r#"[
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9}},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}
]"#;
    let dir = tempfile::tempdir().unwrap();
    let file = json_of(&reader(&["summary", path(&write(dir.path(), "old.json", body)), "--json"]));
    assert_eq!(file["attribution"]["passes"], 1);
    let out = bin()
        .args(["profile", "summary", "-", "--json"])
        .stdin(std::fs::File::open(dir.path().join("old.json")).unwrap())
        .output()
        .unwrap();
    // A regular file on stdin works too; a pipe:
    assert_eq!(out.status.code(), Some(0));
    let mut child = bin()
        .args(["profile", "summary", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&gzip(body.as_bytes())).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let piped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(piped["attribution"]["passes"], 1);
    assert_eq!(piped["kernels_per_step"], file["kernels_per_step"]);
    assert_eq!(piped["kernels_per_step"], 1.0);
}

#[test]
#[cfg(unix)]
fn a_named_fifo_streams() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let body = gzip(trace().as_bytes());
    let f2 = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(&f2).unwrap();
        let _ = w.write_all(&body);
    });
    let mut child = bin()
        .args(["profile", "summary", path(&fifo), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the reader hangs on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    writer.join().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn an_unrelated_sidecar_is_not_taken() {
    let sidecar = |trace_id: Option<&str>| {
        let mut meta =
            serde_json::json!({"model": "SIDECAR-MODEL", "batch": 8, "mode": "inference"});
        if let Some(id) = trace_id {
            meta["trace_id"] = Value::from(id);
        }
        serde_json::json!({"meta": meta, "latency": {"p50_ms": 5.0, "p90_ms": 5.0, "p99_ms": 5.0, "mean_ms": 5.0, "min_ms": 5.0, "max_ms": 5.0, "n": 3}})
            .to_string()
    };
    let with_id = |id: &str| trace_with(&format!(r#""trace_id": "{id}", "#), "");
    // (trace file name, trace, sidecar, taken?)
    let cases = [
        ("profile_trace.json", trace(), sidecar(None), true),
        ("profile_trace.json", with_id("AB12"), sidecar(Some("AB12")), true),
        ("renamed.json", with_id("AB12"), sidecar(Some("AB12")), true),
        ("worker0.pt.trace.json", trace(), sidecar(None), false),
        ("profile_trace.json", with_id("OTHER"), sidecar(Some("AB12")), false),
        ("profile_trace.json", trace(), sidecar(Some("AB12")), false),
        (
            "profile_trace.json",
            trace_with(r#""traceName": "/runs/x/worker0.pt.trace.json", "#, ""),
            sidecar(None),
            false,
        ),
        (
            "profile_trace.json",
            trace(),
            r#"{"meta": {"model": "SIDECAR-MODEL"}, "latency": "#.to_string(),
            false,
        ),
    ];
    for (name, body, side, taken) in cases {
        let dir = tempfile::tempdir().unwrap();
        let t = write(dir.path(), name, &body);
        write(dir.path(), "profile_summary.json", &side);
        let r = reader(&["summary", path(&t), "--json"]);
        let s = json_of(&r);
        if taken {
            assert_eq!(s["model"], "SIDECAR-MODEL", "{name}: {}", r.stderr);
            assert_eq!(s["step_ms"], 5.0);
            assert!(!r.stderr.contains("ignored"), "{}", r.stderr);
        } else {
            assert_eq!(s["model"], Value::Null, "{name} took an unrelated sidecar");
            assert_ne!(s["step_ms"], 5.0);
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
            assert!(
                r.stderr.starts_with("warning: measured numbers in ")
                    && r.stderr.contains("ignored"),
                "{}",
                r.stderr
            );
        }
    }
}

#[test]
fn absurd_durations_are_malformed_not_negative() {
    let dir = tempfile::tempdir().unwrap();
    let extra = r#",
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 4, "args": {"correlation": 10}},
 {"ph": "X", "cat": "kernel", "name": "huge_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 1e308, "args": {"correlation": 10}},
 {"ph": "X", "cat": "kernel", "name": "huge_kernel", "pid": 0, "tid": 7, "ts": 500, "dur": 1e26, "args": {"correlation": 10}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::huge", "pid": 1, "tid": 1, "ts": 60, "dur": 1e26}"#;
    let t = write(dir.path(), "t.json", trace_with("", extra));
    let k = json_of(&reader(&["kernels", path(&t), "--json"]));
    for row in k["kernels"].as_array().unwrap() {
        assert!(row["ms_per_step"].as_f64().unwrap() >= 0.0, "{row}");
        assert_ne!(row["kernel"], "huge_kernel");
    }
    let s = json_of(&reader(&["summary", path(&t), "--json"]));
    assert_eq!(s["attribution"]["malformed_events"], 3);
    assert!(
        s["gpu_busy_ms_per_step"].as_f64().unwrap() >= 0.0 && s["step_ms"].as_f64().unwrap() >= 0.0
    );
    // Durations each within bounds whose sum passes 2^63 ns: totals
    // saturate instead of wrapping negative (or aborting a debug build).
    let many: String = (0..12_000)
        .map(|i| format!(",\n {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"long_kernel\", \"pid\": 0, \"tid\": {}, \"ts\": {}, \"dur\": 9.9e11}}", 7 + i % 3, 100 + i % 800))
        .collect();
    let t = write(dir.path(), "many.json", trace_with("", &many));
    for sub in ["summary", "kernels", "phases"] {
        let r = reader(&[sub, path(&t), "--json"]);
        let v = json_of(&r);
        let text = v.to_string();
        assert!(
            !text.contains(":-"),
            "{sub}: a negative figure in {}",
            &text[..text.len().min(2000)]
        );
    }
}

#[test]
fn control_characters_in_names_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let body = trace()
        .replace("sm90_xmma_gemm_f16f16", r"evil\u001b[2J\u001b]0;pwned\u0007_kernel")
        .replace("aten::conv2d", r"aten::\u001b[31mred\rop");
    let t = write(dir.path(), "t.json", body);
    for args in [
        vec!["kernels", path(&t)],
        vec!["ops", path(&t)],
        vec!["summary", path(&t)],
        vec!["compare", path(&t), path(&t)],
    ] {
        let r = reader(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(
            !r.stdout.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?} printed raw control characters: {:?}",
            r.stdout
        );
    }
    let r = reader(&["kernels", path(&t)]);
    assert!(r.stdout.contains(r"evil\u{1b}[2J\u{1b}]0;pwned\u{7}_kernel"), "{}", r.stdout);
    // JSON keeps the name as it is (escaped by JSON itself).
    let k = json_of(&reader(&["kernels", path(&t), "--json"]));
    assert_eq!(k["kernels"][0]["raw_name"], "evil\u{1b}[2J\u{1b}]0;pwned\u{7}_kernel");
}

#[test]
fn a_step_name_recorded_three_times_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let extra = r#",
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 2000, "dur": 1000},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 4000, "dur": 1000}"#;
    let t = write(dir.path(), "t.json", trace_with("", extra));
    let r = reader(&["phases", path(&t)]);
    assert_eq!(r.code, 0);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("warning: ") && r.stderr.contains("ProfilerStep#3 (3 times)"),
        "{}",
        r.stderr
    );
    // The same step on two threads at once is one step, and says nothing.
    let extra = r#",
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 2, "ts": 5, "dur": 990}"#;
    let t = write(dir.path(), "t2.json", trace_with("", extra));
    let r = reader(&["phases", path(&t)]);
    assert!(r.code == 0 && r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let bom = |s: &str| [&b"\xEF\xBB\xBF"[..], s.as_bytes()].concat();
    let t = write(dir.path(), "t.json", bom(&trace()));
    assert_eq!(json_of(&reader(&["summary", path(&t), "--json"]))["kernels_per_step"], 1.0);
    let gz = write(dir.path(), "t.json.gz", gzip(&bom(&trace())));
    assert_eq!(json_of(&reader(&["summary", path(&gz), "--json"]))["kernels_per_step"], 1.0);
    let p = write(
        dir.path(),
        "p.json",
        bom(r#"{"schema": "libreyolo.profile.analysis/v1", "step_ms": 12.5, "bound": "compute"}"#),
    );
    assert_eq!(json_of(&reader(&["get", path(&p), "step_ms", "--json"]))["step_ms"], 12.5);
}

#[test]
fn a_directory_with_one_trace_under_another_name_is_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "worker0.1623143089861.pt.trace.json.gz", gzip(trace().as_bytes()));
    let s = json_of(&reader(&["summary", path(dir.path()), "--json"]));
    assert_eq!(s["kernels_per_step"], 1.0);
    write(dir.path(), "worker1.pt.trace.json", trace());
    // Two traces whose names give their ranks: a job. `phases` shows its
    // lowest rank and says so; `summary` reads the job.
    let r = reader(&["phases", path(dir.path())]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("showing rank 0, the lowest"), "{}", r.stderr);
    let job = json_of(&reader(&["summary", path(dir.path()), "--json"]));
    assert_eq!(job["ranks"].as_array().map(Vec::len), Some(2), "{job}");
    // A third with no rank in its name: not one job, for every reader.
    write(dir.path(), "other.json", trace());
    for cmd in ["phases", "summary"] {
        let r = reader(&[cmd, path(dir.path())]);
        refused(&r, 2, "name one of them");
        assert!(
            r.stderr.contains("worker0.1623143089861.pt.trace.json.gz")
                && r.stderr.contains("worker1.pt.trace.json")
                && r.stderr.contains("other.json names no rank"),
            "{}",
            r.stderr
        );
    }
}

#[test]
#[cfg(unix)]
fn unreadable_paths_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let r = reader(&["summary", path(&a)]);
    refused(&r, 1, "symbolic links");
    assert!(!r.stderr.contains("not found"), "{}", r.stderr);
    // A folder that cannot be traversed (not testable as root, who may).
    use std::os::unix::fs::PermissionsExt;
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    write(&locked, "t.json", trace());
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::metadata(locked.join("t.json")).is_err() {
        let r = reader(&["summary", path(&locked.join("t.json"))]);
        refused(&r, 1, "ermission denied");
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A path that does not exist is still a usage error.
    refused(&reader(&["summary", path(&dir.path().join("missing.json"))]), 2, "not found");
}

#[test]
fn an_unknown_category_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", trace());
    let r = reader(&["kernels", path(&t), "--category", "bogus"]);
    refused(&r, 2, "no category matching 'bogus'");
    assert!(r.stderr.contains("gemm / conv") && r.stderr.contains("elementwise"), "{}", r.stderr);
    // A real one, even absent from this trace, is a filter that matches nothing.
    assert_eq!(reader(&["kernels", path(&t), "--category", "attention"]).code, 0);
    assert_eq!(
        json_of(&reader(&["kernels", path(&t), "--category", "GEMM", "--json"]))["matched"],
        1
    );
}

/// Several changes are one, re-timed on the step model. By hand: the step
/// is the host's range (0–1000 µs), its one kernel runs 30–330 µs. Taking
/// the GEMM (300 µs), the launch call (4 µs) and the dispatch before it
/// (12 µs) away takes 316 µs of work; the host's end marker then comes
/// 16 µs earlier, and the kernel ends long before it.
#[test]
fn what_if_combines_changes_into_one() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", trace());
    let r = reader(&[
        "what-if",
        path(&t),
        "--remove-category",
        "gemm",
        "--remove-launches",
        "1",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let w = json_of(&r);
    assert_eq!(w["scenario"], "--remove-category 'gemm / conv' --remove-launches 1");
    assert_eq!(w["removes_ms_per_step"].as_f64(), Some(0.316), "{w}");
    assert_eq!(w["saved_ms_per_step"].as_f64(), Some(0.016), "{w}");
    // The GPU work alone is off the critical path: nothing saved.
    let w = json_of(&reader(&["what-if", path(&t), "--remove-category", "gemm", "--json"]));
    assert_eq!(w["saved_ms_per_step"].as_f64(), Some(0.0), "{w}");
    assert_eq!(w["removes_ms_per_step"].as_f64(), Some(0.3), "{w}");
    refused(&reader(&["what-if", path(&t)]), 2, "specify a change");
    refused(&reader(&["what-if", path(&t), "--scale", "0.5"]), 2, "--scale F applies to");
    refused(&reader(&["what-if", path(&t), "--grep", "nothing_like_it"]), 2, "no GPU work");
    refused(&reader(&["what-if", path(&t), "--all", "--grep", "x"]), 2, "give it alone");
}

#[test]
fn a_newer_schema_is_read_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.json",
        r#"{"schema": "libreyolo.profile.analysis/v999", "step_ms": 12.5, "bound": "compute", "new_field": [1]}"#,
    );
    let r = reader(&["get", path(&p), "step_ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "12.5\n");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with("warning: ") && r.stderr.contains("v999"), "{}", r.stderr);
    let ours = write(
        dir.path(),
        "q.json",
        r#"{"schema": "libreyolo.profile.analysis/v1", "step_ms": 12.5, "bound": "compute"}"#,
    );
    assert!(reader(&["get", path(&ours), "step_ms"]).stderr.is_empty());
}

#[test]
fn notes_go_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", trace());
    let r = reader(&["summary", path(&t)]);
    assert_eq!(r.code, 0);
    assert!(!r.stdout.contains("note:"), "{}", r.stdout);
    assert!(r.stdout.contains("top kernels/step:"));
    assert!(r.stderr.lines().any(|l| l.starts_with("note: no measured timing")), "{}", r.stderr);
    assert!(r.stderr.lines().all(|l| l.starts_with("note: ")), "{}", r.stderr);
}

#[test]
#[cfg(unix)]
fn a_terminal_on_stdin_is_refused_not_waited_on() {
    // `script` gives the reader a terminal; without it there is nothing to test.
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let exe = env!("CARGO_BIN_EXE_libreyolo");
    for arg in ["-", "/dev/stdin"] {
        let out = Command::new("timeout")
            .args(["20", "script", "-qec", &format!("'{exe}' profile summary {arg}"), "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{arg}: {text}");
        assert!(text.contains("terminal"), "{arg}: {text}");
    }
}
