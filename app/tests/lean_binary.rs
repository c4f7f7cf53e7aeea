//! The `libreyolo` binary stands alone: readers and the explorer never load
//! libtorch, and `profile infer|run` are handed whole to the capture
//! engine's executable — arguments, stdin, stdout, exit code and signals —
//! or refused with exit 2 and how to install it when it is absent.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::shared;

/// A copy of the binary alone in a folder, run with an empty PATH and no
/// `LIBREYOLO_CAPTURE`: no capture engine can be found.
struct Alone {
    _dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Alone {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("libreyolo");
        std::fs::copy(env!("CARGO_BIN_EXE_libreyolo"), &bin).unwrap();
        Alone { _dir: dir, bin }
    }

    fn cmd(&self, capture: Option<&Path>) -> Command {
        let mut c = Command::new(&self.bin);
        c.env("PATH", "").env_remove("LIBREYOLO_CAPTURE");
        if let Some(p) = capture {
            c.env("LIBREYOLO_CAPTURE", p);
        }
        c
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = {
            let _forks = forks();
            self.cmd(None).args(args).output().unwrap()
        };
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

#[test]
fn links_no_libtorch_and_no_cuda() {
    let out = {
        let _forks = forks();
        Command::new("ldd")
            .arg(env!("CARGO_BIN_EXE_libreyolo"))
            .output()
            .expect("ldd (Debian's libc-bin) runs")
    };
    assert!(out.status.success());
    let libs = String::from_utf8_lossy(&out.stdout);
    // Only the libraries' names: a load address such as 0x…fc1000 holds
    // "c10" too (it failed a run that way).
    let names: Vec<&str> = libs.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for bad in ["torch", "c10", "cuda", "cudnn", "nccl"] {
        assert!(!names.iter().any(|n| n.contains(bad)), "libreyolo links {bad}:\n{libs}");
    }
}

#[test]
fn readers_answer_without_the_capture_engine() {
    let alone = Alone::new();
    let reference = shared().join("reference/train_b4/profile.json");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&reference).unwrap()).unwrap();

    let (code, out, err) = alone.run(&["profile", "get", reference.to_str().unwrap(), "step_ms"]);
    assert_eq!(code, 0, "{err}");
    let got: f64 = out.trim().parse().unwrap_or_else(|_| panic!("a number: {out}"));
    assert!(
        (got - expected["step_ms"].as_f64().unwrap()).abs() < 1e-6,
        "{got} vs {}",
        expected["step_ms"]
    );

    let trace = shared()
        .join("traces/hta_alexnet_a100_nosteps/benchmark_result_2869224_1695835535_trace.json.gz");
    let (code, out, err) = alone.run(&["profile", "summary", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(s["gpu_busy_ms_per_step"].as_f64().unwrap() > 0.0, "{out}");
}

#[test]
fn capture_commands_without_the_engine_exit_2_and_say_how_to_install() {
    let alone = Alone::new();
    for sub in ["infer", "run"] {
        let args: &[&str] = if sub == "run" {
            &["profile", "run", "synthetic:8", "--device", "cpu"]
        } else {
            &["profile", "infer", "--device", "cpu"]
        };
        let (code, out, err) = alone.run(args);
        assert_eq!(code, 2, "{sub}: {err}");
        assert!(out.is_empty(), "{sub}: stdout stays clean: {out}");
        assert_eq!(err.lines().count(), 1, "{sub}: one line: {err}");
        assert!(
            err.contains("libreyolo-capture") && err.contains("scripts/setup.sh"),
            "{sub}: {err}"
        );
    }
    // Help and flag errors are answered by the binary itself, as before.
    let (code, out, _) = alone.run(&["profile", "infer", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--imgsz") && out.contains("--warmup"), "{out}");
    let (code, _, err) = alone.run(&["profile", "run", "synthetic", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
}

/// Held while a script is written and while a process is forked: a fork on
/// another test's thread would inherit the script's open write descriptor
/// until it execs, and exec'ing the script then fails with ETXTBSY.
static FORKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn forks() -> std::sync::MutexGuard<'static, ()> {
    FORKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stand-in engine that reports what it was given: this tests the hand-over
/// itself (the real engine's run through `libreyolo` is in
/// capture/tests/through_main.rs, which needs libtorch).
fn script(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let _forks = forks();
    let p = dir.join("engine.sh");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn the_engine_gets_the_arguments_stdin_and_gives_back_its_exit_code() {
    let alone = Alone::new();
    let dir = tempfile::tempdir().unwrap();
    let engine = script(
        dir.path(),
        r#"echo "pid=$$ argv0=$0"; for a in "$@"; do echo "arg=$a"; done; read line; echo "stdin=$line"; echo "to stderr" >&2; exit 7"#,
    );
    let mut child = {
        let _forks = forks();
        alone
            .cmd(Some(&engine))
            .args(["profile", "infer", "my images", "--device", "cpu", "--imgsz", "320"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let pid = child.id();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    let args: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("arg=")).collect();
    assert_eq!(args, ["profile", "infer", "my images", "--device", "cpu", "--imgsz", "320"]);
    assert!(stdout.contains("stdin=hello"), "{stdout}");
    // exec: the engine is the same process, so signals need no forwarding.
    assert!(stdout.contains(&format!("pid={pid} ")), "{stdout}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "to stderr\n");
}

#[test]
fn a_signal_to_libreyolo_reaches_the_engine() {
    let alone = Alone::new();
    let dir = tempfile::tempdir().unwrap();
    // The engine runs with libreyolo's empty PATH: it names its own.
    let engine = script(
        dir.path(),
        r#"PATH=/usr/bin:/bin; trap 'echo got-term; exit 143' TERM; echo ready; while :; do sleep 0.05; done"#,
    );
    let mut child = {
        let _forks = forks();
        alone
            .cmd(Some(&engine))
            .args(["profile", "infer", "--device", "cpu"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let killed = {
        let _forks = forks();
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap()
    };
    assert!(killed.success());
    assert_eq!(lines.next().unwrap().unwrap(), "got-term");
    assert_eq!(child.wait().unwrap().code(), Some(143));
}
