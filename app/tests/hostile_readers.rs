//! Traces made to exhaust the readers (issue #27, readers): many steps, one
//! huge event, a gzip bomb of tiny events, `--write-profile` onto special
//! files. Each is generated here, small on disk, and each must end with a
//! clear exit code and sentence in bounded time and memory, leaving nothing
//! behind.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary did, with its peak resident memory.
struct Measured {
    code: i32,
    stdout: String,
    stderr: String,
    peak_rss: u64,
    took: Duration,
}

/// Runs `libreyolo profile <args>` (with `env` set), polling the child's
/// `VmHWM` (peak resident set) in `/proc` until it exits.
fn measure(args: &[&str], env: &[(&str, &str)]) -> Measured {
    let start = Instant::now();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_libreyolo"));
    cmd.arg("profile")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("binary runs");
    let status_path = format!("/proc/{}/status", child.id());
    // Drain the pipes on threads, so a chatty child never blocks.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let mut peak = 0;
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            if let Some(kb) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{args:?} still running after 120 s");
        std::thread::sleep(Duration::from_millis(5));
    };
    Measured {
        code: status.code().unwrap_or(-1),
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
        peak_rss: peak,
        took: start.elapsed(),
    }
}

const MIB: u64 = 1 << 20;

fn gzip_to(path: &Path, write: impl FnOnce(&mut dyn Write)) {
    let f = std::fs::File::create(path).unwrap();
    let mut e =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::fast());
    write(&mut e);
    e.finish().unwrap().flush().unwrap();
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Only the files the test itself wrote are in `dir`.
fn nothing_left(dir: &Path, expected: &[&str]) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want, "files left behind");
}

/// 100 000 `ProfilerStep#N` ranges, each with an op and a kernel: the step
/// index was rebuilt per step (quadratic, over 60 s); now read in seconds.
#[test]
fn a_hundred_thousand_steps_read_in_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("steps.json.gz");
    gzip_to(&t, |w| {
        write!(w, "{{\"traceEvents\": [").unwrap();
        for n in 0..100_000u64 {
            let ts = n * 1000;
            let sep = if n == 0 { "" } else { "," };
            write!(
                w,
                "{sep}\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{n}\", \"pid\": 1, \"tid\": 1, \"ts\": {ts}, \"dur\": 900}},\
                 \n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": {}, \"dur\": 50}},\
                 \n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_gemm\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 300}}",
                ts + 10,
                ts + 100
            )
            .unwrap();
        }
        write!(w, "\n]}}").unwrap();
    });
    let r = measure(&["summary", path(&t), "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let each = v["steps"]["each_ms"].as_array().map(Vec::len);
    assert_eq!(each, Some(100_000), "{}", &r.stdout[..r.stdout.len().min(800)]);
    assert!((v["step_ms"].as_f64().unwrap() - 0.9).abs() < 0.01, "{}", v["step_ms"]);
    assert!(r.took < Duration::from_secs(20), "100 000 steps took {:?}", r.took);
    eprintln!("100 000 steps: {:?}, peak RSS {} MiB", r.took, r.peak_rss / MIB);
}

/// One 300 MiB kernel name in a `.json.gz` (300 KB on disk): refused as an
/// event over the limit, in bounded memory and time (it took 45 s and 2 GB).
#[test]
fn one_huge_event_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("huge.json.gz");
    gzip_to(&t, |w| {
        write!(w, "{{\"traceEvents\": [\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000}},\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"").unwrap();
        let block = vec![b'k'; 1 << 20];
        for _ in 0..300 {
            w.write_all(&block).unwrap();
        }
        write!(w, "\", \"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 5}}\n]}}").unwrap();
    });
    let r = measure(&["kernels", path(&t)], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("event 2 at byte") && r.stderr.contains("is larger than 64 MiB"),
        "{}",
        r.stderr
    );
    assert!(r.peak_rss < 400 * MIB, "peak RSS {} MiB", r.peak_rss / MIB);
    assert!(r.took < Duration::from_secs(20), "took {:?}", r.took);
    eprintln!("300 MiB event: {:?}, peak RSS {} MiB", r.took, r.peak_rss / MIB);
    // A huge value only skipped (an unknown top-level key) is streamed past.
    let t2 = dir.path().join("skipped.json.gz");
    gzip_to(&t2, |w| {
        write!(w, "{{\"junk\": \"").unwrap();
        let block = vec![b'j'; 1 << 20];
        for _ in 0..200 {
            w.write_all(&block).unwrap();
        }
        write!(w, "\", \"traceEvents\": [{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 5}}]}}").unwrap();
    });
    let r = measure(&["kernels", path(&t2), "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.peak_rss < 200 * MIB, "peak RSS {} MiB skipping", r.peak_rss / MIB);
    nothing_left(dir.path(), &["huge.json.gz", "skipped.json.gz"]);
}

/// A gzip bomb of tiny kernels with distinct names: the pass stops at the
/// memory budget with a sentence saying how far it got and how to raise it.
#[test]
fn a_gzip_bomb_stops_at_the_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("bomb.json.gz");
    gzip_to(&t, |w| {
        write!(w, "[{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000000000}}").unwrap();
        for i in 0..1_500_000u64 {
            write!(
                w,
                ",\n{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_{i}_with_a_longer_name\",\"pid\":0,\"tid\":7,\"ts\":{},\"dur\":1}}",
                10 + i
            )
            .unwrap();
        }
        write!(w, "]").unwrap();
    });
    for (args, env) in [
        (vec!["summary", path(&t), "--max-memory", "80M"], vec![]),
        (vec!["kernels", path(&t)], vec![("LIBREYOLO_MAX_MEMORY", "80M")]),
    ] {
        let r = measure(&args, &env);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("stopped reading after") && r.stderr.contains("--max-memory SIZE"),
            "{}",
            r.stderr
        );
        assert!(r.peak_rss < 200 * MIB, "{args:?}: peak RSS {} MiB", r.peak_rss / MIB);
        eprintln!(
            "bomb at 80M: {:?}, peak RSS {} MiB: {}",
            r.took,
            r.peak_rss / MIB,
            r.stderr.trim()
        );
    }
    // With room enough, the same trace reads.
    let r = measure(&["kernels", path(&t), "--max-memory", "0", "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = measure(&["kernels", path(&t), "--max-memory", "lots"], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-memory \"lots\": expected a size"), "{}", r.stderr);
    nothing_left(dir.path(), &["bomb.json.gz"]);
}

fn small_trace(dir: &Path) -> PathBuf {
    let t = dir.join("t.json");
    std::fs::write(
        &t,
        r#"[{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 300}]"#,
    )
    .unwrap();
    t
}

/// `--write-profile` onto a FIFO writes through it (the FIFO stays); onto
/// a symlink replaces the link's target (the link stays); onto a directory
/// is refused with exit 2. No temporary file is left anywhere.
#[cfg(unix)]
#[test]
fn write_profile_never_replaces_special_files_or_links() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let t = small_trace(dir.path());
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let via = dir.path().join("to-fifo");
    std::os::unix::fs::symlink("fifo", &via).unwrap();
    for target in [&fifo, &via] {
        let f = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(f).unwrap());
        let r = measure(&["summary", path(&t), "--write-profile", path(target)], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let got = reader.join().unwrap();
        assert!(
            String::from_utf8_lossy(&got).contains("\"schema\""),
            "the profile came through the FIFO"
        );
        assert!(
            std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
            "the FIFO was replaced"
        );
    }
    assert!(std::fs::symlink_metadata(&via).unwrap().file_type().is_symlink());
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let r = measure(&["summary", path(&t), "--write-profile", path(&link)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "the link was replaced"
    );
    assert!(std::fs::read_to_string(&real).unwrap().contains("\"schema\""));
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let r = measure(&["summary", path(&t), "--write-profile", path(&sub)], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is a directory"), "{}", r.stderr);
    nothing_left(dir.path(), &["fifo", "link.json", "real.json", "sub", "t.json", "to-fifo"]);
    nothing_left(&sub, &[]);
}

/// A kernel of 9·10¹¹ µs in a 1 ms step printed 199 800 000 ms/step: it is
/// counted as lasting the step window, with a warning, so no share
/// exceeds what is possible.
#[test]
fn a_kernel_longer_than_the_trace_is_clipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("long.json");
    std::fs::write(
        &t,
        r#"[{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 900000000000, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "sm90_other", "pid": 0, "tid": 8, "ts": 40, "dur": 100}]"#,
    )
    .unwrap();
    let r = measure(&["summary", path(&t), "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("last longer than all the steps together"), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["gpu_util"].as_f64().unwrap() <= 1.0, "{}", v["gpu_util"]);
    assert!(v["gpu_busy_ms_per_step"].as_f64().unwrap() <= 1.0, "{}", v["gpu_busy_ms_per_step"]);
    assert!(v["gpu_util_raw"].as_f64().unwrap() <= 2.0, "{}", v["gpu_util_raw"]);
    assert!(
        v["warnings"].to_string().contains("last longer than all the steps together"),
        "{}",
        v["warnings"]
    );
    let r = measure(&["kernels", path(&t), "--json"], &[]);
    let k: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for row in k["kernels"].as_array().unwrap() {
        assert!(row["ms_per_step"].as_f64().unwrap() <= 1.0, "{row}");
    }
}

/// A profile.json claiming a step of −1, 0 or 1e308 ms, or a utilisation of
/// 5, is refused as malformed, naming the field.
#[test]
fn implausible_profile_figures_are_malformed() {
    let dir = tempfile::tempdir().unwrap();
    for (figures, field) in [
        (r#""step_ms": -1"#, "step_ms"),
        (r#""step_ms": 0"#, "step_ms"),
        (r#""step_ms": 1e308"#, "step_ms"),
        (r#""step_ms": 12, "gpu_util": 5"#, "gpu_util"),
        (r#""step_ms": 12, "dataload_frac": -0.5"#, "dataload_frac"),
        (r#""step_ms": 12, "gpu_busy_ms_per_step": 1e300"#, "gpu_busy_ms_per_step"),
    ] {
        let p = dir.path().join("profile.json");
        std::fs::write(
            &p,
            format!(
                r#"{{"schema": "libreyolo.profile.analysis/v1", {figures}, "bound": "compute"}}"#
            ),
        )
        .unwrap();
        for sub in ["summary", "what-if"] {
            let mut args = vec![sub, path(&p)];
            if sub == "what-if" {
                args.extend(["--remove-launches", "1"]);
            }
            let r = measure(&args, &[]);
            assert_eq!(r.code, 1, "{figures} {sub}: {}", r.stderr);
            assert!(
                r.stderr.contains(&format!("malformed profile: `{field}` is")),
                "{figures}: {}",
                r.stderr
            );
        }
    }
    let p = dir.path().join("profile.json");
    std::fs::write(&p, r#"{"schema": "libreyolo.profile.analysis/v1", "step_ms": 12, "gpu_util": 0.5, "bound": "compute"}"#).unwrap();
    assert_eq!(measure(&["summary", path(&p)], &[]).code, 0);
}

/// Minor ones: bidi controls in names are escaped like control characters;
/// a `LIBREYOLO_CAPTURE` naming nothing is the engine not installed (exit
/// 2); a corrupt gzip header's error names no misleading "byte 0".
#[test]
fn bidi_controls_capture_path_and_gzip_errors_are_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("bidi.json");
    std::fs::write(
        &t,
        r#"[{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "kernel", "name": "gemm\u202eexe.txt\u2066x\u200f", "pid": 0, "tid": 7, "ts": 10, "dur": 300}]"#,
    )
    .unwrap();
    let r = measure(&["kernels", path(&t)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains('\u{202e}')
            && !r.stdout.contains('\u{2066}')
            && !r.stdout.contains('\u{200f}'),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(r"gemm\u{202e}exe.txt\u{2066}x\u{200f}"), "{}", r.stdout);

    let r = measure(
        &["infer", "--device", "cpu"],
        &[("LIBREYOLO_CAPTURE", "/nonexistent/libreyolo-capture")],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "LIBREYOLO_CAPTURE is /nonexistent/libreyolo-capture, which is not an executable file"
        ),
        "{}",
        r.stderr
    );

    let g = dir.path().join("bad.json.gz");
    std::fs::write(&g, b"\x1f\x8b\x08\xff\xff\xff\xff\xff\xff\xff garbage garbage").unwrap();
    let r = measure(&["summary", path(&g)], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("gzip") && !r.stderr.contains("at byte 0"), "{}", r.stderr);
}

/// `summary runs/profile` (a capture's `--project` folder): the one
/// profile in `infer/` or `train/` is read; with both, exit 2 naming them.
#[test]
fn a_project_folder_stands_for_the_capture_inside() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("profile");
    std::fs::create_dir_all(project.join("infer")).unwrap();
    let reference = common::fixtures().join("reference/infer_b1/profile.json");
    std::fs::copy(&reference, project.join("infer/profile.json")).unwrap();
    let r = measure(&["get", path(&project), "step_ms"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "241.4");
    std::fs::create_dir_all(project.join("train")).unwrap();
    std::fs::copy(
        common::fixtures().join("reference/train_b4/profile.json"),
        project.join("train/profile.json"),
    )
    .unwrap();
    let r = measure(&["summary", path(&project)], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds the profiles of two captures")
            && r.stderr.contains("infer/profile.json")
            && r.stderr.contains("train/profile.json"),
        "{}",
        r.stderr
    );
}

/// A file or folder whose name is not UTF-8 (Linux allows any bytes but
/// `/` and NUL) is read like any other: the path travels as bytes, and
/// only what is printed is made readable.
#[test]
fn names_that_are_not_utf8_are_read() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    // `libreyolo profile WORDS…`, each a path or a plain word.
    let profile = |words: &[&dyn AsRef<OsStr>]| {
        let mut args = vec![OsStr::new("profile")];
        args.extend(words.iter().map(|w| w.as_ref()));
        common::run(&args)
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(OsStr::from_bytes(b"job-\xff\xfe"));
    std::fs::create_dir(&dir).unwrap();
    let ranks = common::fixtures().join("traces/param_dlrm_v100_8rank");
    let mut rank_files: Vec<PathBuf> = std::fs::read_dir(&ranks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    rank_files.sort();
    for (i, f) in rank_files.iter().take(2).enumerate() {
        let name = [b"rank".as_slice(), i.to_string().as_bytes(), b"-\xe9t\xe9.json.gz"].concat();
        std::fs::copy(f, dir.join(OsStr::from_bytes(&name))).unwrap();
    }
    let trace = dir.join(OsStr::from_bytes(b"rank0-\xe9t\xe9.json.gz"));
    let expected = profile(&[&"kernels", &rank_files[0], &"--json"]);
    assert_eq!(expected.code, 0, "{}", expected.stderr);
    let got = profile(&[&"kernels", &trace, &"--json"]);
    assert_eq!(got.code, 0, "one trace: {}", got.stderr);
    // The same rows; only the path it names differs.
    let rows = |out: &str| {
        let mut v: serde_json::Value = serde_json::from_str(out).unwrap();
        let path = v["trace"].take();
        (v, path)
    };
    let ((got_rows, got_path), (want_rows, _)) = (rows(&got.stdout), rows(&expected.stdout));
    assert_eq!(got_rows, want_rows, "the same trace under a non-UTF-8 name");
    assert!(
        got_path.as_str().is_some_and(|p| p.ends_with("/rank0-\u{fffd}t\u{fffd}.json.gz")),
        "{got_path}"
    );
    // The folder as a rank set, a profile written beside it and read back.
    let job = profile(&[&"summary", &dir, &"--json"]);
    assert_eq!(job.code, 0, "the folder as a job: {}", job.stderr);
    let v: serde_json::Value = serde_json::from_str(&job.stdout).unwrap();
    assert_eq!(v["ranks"].as_array().map(Vec::len), Some(2), "{}", job.stdout);
    let out = tmp.path().join(OsStr::from_bytes(b"p\xff.json"));
    let w = profile(&[&"summary", &trace, &"--write-profile", &out]);
    assert_eq!(w.code, 0, "--write-profile: {}", w.stderr);
    let back = profile(&[&"get", &out, &"step_ms"]);
    assert_eq!(back.code, 0, "the written profile read back: {}", back.stderr);
    // A missing one is said with its name made readable, as a usage error.
    let r = profile(&[&"summary", &tmp.path().join(OsStr::from_bytes(b"gone-\xff.json"))]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not found") && r.stderr.contains("gone-\u{fffd}.json"),
        "{}",
        r.stderr
    );
}

/// A plain trace is mapped, not read (src/trace/input.rs): the pages behind
/// the reader are given back as it goes, so a 96 MiB file is read in far
/// less memory than its size, on one thread and on two; `--no-mmap` reads
/// it with read(2) and says the same.
#[test]
fn a_mapped_trace_is_read_in_less_memory_than_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("big.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&t).unwrap());
    // Events of about 1 KiB whose bulk is a string the reader skips.
    let pad = "f".repeat(900);
    write!(w, "{{\"traceEvents\": [").unwrap();
    let n = 100 * 1024;
    for i in 0..n {
        let sep = if i == 0 { "" } else { "," };
        write!(
            w,
            "{sep}\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": {}, \"dur\": 5, \"args\": {{\"Call stack\": \"{pad}\"}}}}",
            i * 10
        )
        .unwrap();
    }
    write!(w, "\n]}}").unwrap();
    drop(w);
    let size = std::fs::metadata(&t).unwrap().len();
    assert!(size > 96 * MIB, "{size}");
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let r = measure(&["summary", path(&t), "--json", "--threads", threads], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.peak_rss < 48 * MIB,
            "{threads} threads: peak RSS {} MiB for a {} MiB file",
            r.peak_rss / MIB,
            size / MIB
        );
        eprintln!(
            "{} MiB mapped, {threads} threads: peak RSS {} MiB",
            size / MIB,
            r.peak_rss / MIB
        );
        outputs.push(r.stdout);
    }
    let r = measure(&["summary", path(&t), "--json", "--no-mmap"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    outputs.push(r.stdout);
    // Every event read: the step runs from the first op to the last one's end.
    let v: serde_json::Value = serde_json::from_str(&outputs[0]).unwrap();
    let last_end_ms = ((n - 1) * 10 + 5) as f64 / 1000.0;
    assert!((v["step_ms"].as_f64().unwrap() - last_end_ms).abs() < 0.01, "{}", v["step_ms"]);
    assert!(outputs.iter().all(|o| *o == outputs[0]), "mapped vs --no-mmap outputs differ");
}

/// A trace of nothing but kernels in one step, none launched (issue #54's
/// "all-kernel trace", at 400 000 kernels): the memory budget holds to the
/// end, whatever the outcome (a read that stops, or one that finishes,
/// peaks within the budget and one check's growth); and the step, too
/// large to model in bounded memory, gets no step model, which the
/// summary and `what-if` say.
#[test]
fn an_all_kernel_step_keeps_to_the_budget_and_is_not_modelled() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("kernels.json.gz");
    gzip_to(&t, |w| {
        write!(w, "[{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000000000}}").unwrap();
        for i in 0..400_000u64 {
            write!(
                w,
                ",\n{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)\",\"pid\":0,\"tid\":7,\"ts\":{},\"dur\":1}}",
                10 + i
            )
            .unwrap();
        }
        write!(w, "]").unwrap();
    });
    let free = measure(&["summary", path(&t), "--json", "--max-memory", "0"], &[]);
    assert_eq!(free.code, 0, "{}", free.stderr);
    let v: serde_json::Value = serde_json::from_str(&free.stdout).unwrap();
    assert!(v.get("step_model").is_none(), "no step model of 400 000 events in one step");
    let warned = v["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str().unwrap().contains("no step model") && w.as_str().unwrap().contains("400000")
    });
    assert!(warned, "{}", v["warnings"]);
    let r = measure(&["what-if", path(&t), "--all"], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no step model"), "{}", r.stderr);
    // Budgets below and about the peak: within each, plus one check's
    // growth (65 536 events, ~7 MiB here) on each of the two parsing
    // threads (a CI run under load peaked 11 MiB over a 40 MiB budget).
    for share in [0.6, 0.9, 1.0] {
        let budget = (free.peak_rss as f64 * share) as u64;
        let args =
            ["summary", path(&t), "--json", "--threads", "2", "--max-memory", &budget.to_string()];
        let r = measure(&args, &[]);
        assert!(r.code == 0 || r.code == 1, "{share}: {}", r.stderr);
        if r.code == 1 {
            assert!(r.stderr.contains("--max-memory SIZE"), "{}", r.stderr);
        }
        assert!(
            r.peak_rss <= budget + 16 * MIB,
            "budget {} MiB ({share} of the peak {} MiB): exit {}, peak {} MiB",
            budget / MIB,
            free.peak_rss / MIB,
            r.code,
            r.peak_rss / MIB
        );
        eprintln!(
            "all-kernel step, budget {} MiB: exit {}, peak {} MiB",
            budget / MIB,
            r.code,
            r.peak_rss / MIB
        );
    }
    nothing_left(dir.path(), &["kernels.json.gz"]);
}
