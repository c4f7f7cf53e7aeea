//! The capture engine reached the way users reach it: through the
//! `libreyolo` binary, which finds `libreyolo-capture` beside itself and
//! hands `profile infer|run` over. Needs both executables built in the same
//! target folder (`cargo test --workspace`, as scripts/test.sh runs).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `libreyolo`, beside this package's `libreyolo-capture`.
fn main_binary() -> PathBuf {
    let capture = PathBuf::from(env!("CARGO_BIN_EXE_libreyolo-capture"));
    let main = capture.with_file_name(format!("libreyolo{}", std::env::consts::EXE_SUFFIX));
    assert!(
        main.is_file(),
        "{} is not built: run `cargo test --workspace` (scripts/test.sh), or `cargo build -p libreyolo` first",
        main.display()
    );
    main
}

fn libreyolo() -> Command {
    let mut c = Command::new(main_binary());
    // Found beside the binary, not through the environment.
    c.env_remove("LIBREYOLO_CAPTURE");
    c
}

#[test]
fn infer_through_libreyolo_then_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_str().unwrap();
    let out = libreyolo()
        .args(common::words(&format!(
            "profile infer --device cpu --imgsz 160 --warmup 1 --runs 4 --project {project} --json"
        )))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(printed["mode"], "inference");
    let profile = dir.path().join("infer/profile.json");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(written["latency"]["n"], 2, "the first half of 4 runs gives the latency");
    let out = libreyolo()
        .args(["profile", "get", profile.to_str().unwrap(), "latency_p50_ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let p50: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(
        p50,
        printed["latency_p50_ms"].as_f64().unwrap(),
        "the reader reads what the capture printed"
    );
}

#[test]
fn capture_errors_keep_their_exit_codes_through_libreyolo() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_str().unwrap();
    // Too small a dataset for the window: exit 3, nothing written.
    let out = libreyolo()
        .args(common::words(&format!(
            "profile run synthetic:2 --device cpu --batch 2 --imgsz 160 --warmup 1 --steps 4 --project {project}"
        )))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.path().join("train/profile.json").exists());
    // A weights path that does not exist: exit 2.
    let out = libreyolo()
        .args(common::words(&format!(
            "profile infer --device cpu --weights /no/such/w.pt --project {project}"
        )))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn sigint_during_a_capture_leaves_no_profile() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_str().unwrap();
    let mut child = libreyolo()
        .args(common::words(&format!(
            "profile run synthetic --device cpu --batch 2 --imgsz 160 --warmup 1 --steps 500 --workers 1 --project {project}"
        )))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    assert!(child.try_wait().unwrap().is_none(), "500 steps take longer than 4 s");
    assert!(
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success()
    );
    let status = child.wait().unwrap();
    assert!(!status.success(), "interrupted: {status:?}");
    let left: Vec<_> = walk(dir.path()).into_iter().filter(|p| p.is_file()).collect();
    assert!(left.is_empty(), "an interrupted capture leaves nothing: {left:?}");
}

fn walk(p: &std::path::Path) -> Vec<PathBuf> {
    let mut out = vec![p.to_path_buf()];
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            out.extend(walk(&e.unwrap().path()));
        }
    }
    out
}

#[test]
fn hostile_sizes_and_an_unusable_project_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_str().unwrap();
    for args in [
        vec!["profile", "infer", "--device", "cpu", "--imgsz", "100000", "--project", project],
        vec![
            "profile",
            "run",
            "synthetic:8",
            "--device",
            "cpu",
            "--imgsz",
            "100000",
            "--project",
            project,
        ],
    ] {
        let out = libreyolo().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--imgsz 100000: at most 4096"), "{err}");
    }
    // --project names a file, or a folder under a file.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for project in [file.clone(), file.join("under")] {
        let out = libreyolo()
            .args(common::words(
                "profile infer --device cpu --imgsz 160 --warmup 1 --runs 2 --project",
            ))
            .arg(&project)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", project.display());
        assert!(err.contains("--project: cannot write in"), "{err}");
        assert!(!err.contains("latency"), "refused before measuring: {err}");
    }
}

#[test]
fn sigint_while_the_trace_is_written_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_str().unwrap();
    // Enough runs that saving and analysing the trace takes a while.
    let mut child = libreyolo()
        .args(common::words(&format!(
            "profile infer --device cpu --imgsz 64 --warmup 1 --runs 400 --project {project}"
        )))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out_dir = dir.path().join("infer");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let is_temp = |p: &PathBuf| {
        p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".profile_trace."))
    };
    loop {
        if walk(&out_dir).iter().any(is_temp) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the capture ended before its trace was seen in flight"
        );
        assert!(std::time::Instant::now() < deadline, "no trace in flight within 120 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success()
    );
    let status = child.wait().unwrap();
    assert!(!status.success(), "interrupted: {status:?}");
    let left: Vec<_> = walk(dir.path()).into_iter().filter(|p| p.is_file()).collect();
    assert!(left.is_empty(), "an interrupted capture leaves nothing: {left:?}");
}

#[test]
fn a_trace_takes_its_own_sidecar_and_not_another_captures() {
    let dir = tempfile::tempdir().unwrap();
    let capture = |name: &str| {
        let project = dir.path().join(name);
        let out = libreyolo()
            .args(common::words(
                "profile infer --device cpu --imgsz 160 --warmup 1 --runs 4 --project",
            ))
            .arg(&project)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        project.join("infer")
    };
    let (a, b) = (capture("a"), capture("b"));
    let summary = |trace: &std::path::Path| {
        let out = libreyolo().args(["profile", "summary", "--json"]).arg(trace).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let profile_a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("profile.json")).unwrap()).unwrap();
    let (own, err) = summary(&a.join("profile_trace.json"));
    assert_eq!(
        own["img_per_s"], profile_a["img_per_s"],
        "the trace read with its own measured numbers: {err}"
    );
    assert!(!err.contains("warning"), "{err}");

    // b's sidecar beside a's trace: another capture's numbers, refused.
    std::fs::copy(b.join("profile_summary.json"), a.join("profile_summary.json")).unwrap();
    let (mixed, err) = summary(&a.join("profile_trace.json"));
    assert!(err.contains("warning:") && err.contains("profile_summary.json"), "{err}");
    assert!(
        mixed["img_per_s"].is_null(),
        "no img/s taken from another capture: {}",
        mixed["img_per_s"]
    );
}
