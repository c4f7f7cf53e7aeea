//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod hostile;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of the torch venv (`scripts/setup-torch.sh`). This crate is
/// built against that venv's libtorch, so the venv is a prerequisite of every
/// test here: a missing one fails the test with how to set it up, never
/// passes it silently.
pub fn torch_python() -> PathBuf {
    let venv = std::env::var_os("VIRTUAL_ENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("LIBREYOLO_VENV").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/libreyolo/torch-venv")))
        .unwrap_or_else(|| panic!("needs the torch venv: none named by VIRTUAL_ENV, LIBREYOLO_VENV or HOME; run `eval \"$(scripts/setup-torch.sh)\"` and test in that shell"));
    let py = venv.join("bin/python");
    assert!(
        imports(&py, "torch"),
        "needs the torch venv: no python with torch at {}; run `eval \"$(scripts/setup-torch.sh)\"` and test in that shell",
        py.display()
    );
    py
}

/// How to get the LibreYOLO 1.6 parity venv, for messages and ignore reasons.
pub const PARITY_SETUP: &str = "scripts/test.sh --parity sets it up (python3 -m venv /tmp/libreyolo-bench-venv, a .pth onto the torch venv, pip install libreyolo==1.6.0 torch==2.11.0; capture/parity/README.md), or name one with LIBREYOLO_PARITY_PYTHON";

/// The python with LibreYOLO 1.6 (`LIBREYOLO_PARITY_PYTHON`, default
/// /tmp/libreyolo-bench-venv/bin/python). The tests that need it are
/// `#[ignore]`d; asked to run (`--ignored`, as scripts/test.sh does in CI or
/// with `--parity`), they fail when it is missing.
pub fn parity_python() -> PathBuf {
    let py = std::env::var_os("LIBREYOLO_PARITY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/libreyolo-bench-venv/bin/python"));
    assert!(
        imports(&py, "libreyolo"),
        "needs a python with libreyolo==1.6.0 at {}: {PARITY_SETUP}",
        py.display()
    );
    py
}

/// Where LibreYOLO 1.6's sources are: `LIBREYOLO_REF_DIR` (an unpacked
/// wheel), else the site-packages folder of the parity python's `libreyolo`.
pub fn libreyolo_sources() -> PathBuf {
    if let Some(dir) = std::env::var_os("LIBREYOLO_REF_DIR") {
        return PathBuf::from(dir);
    }
    let py = parity_python();
    let out = run_python(
        &py,
        "import os, libreyolo; print(os.path.dirname(os.path.dirname(os.path.abspath(libreyolo.__file__))))",
        &[],
    );
    PathBuf::from(out.trim())
}

/// Whether `py` runs and imports `module`.
fn imports(py: &Path, module: &str) -> bool {
    Command::new(py)
        .args(["-W", "ignore", "-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs a python script with the torch venv; panics with its stderr on failure.
pub fn run_python(py: &Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(py)
        .args(["-W", "ignore", "-c", script])
        .args(args)
        .output()
        .expect("run python");
    assert!(out.status.success(), "python failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The profiler is process-wide: captures in one test binary take turns.
pub static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the profiler for the caller's capture.
pub fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command line's words, split on spaces: the tests write their
/// arguments as one line (their paths are temporary folders, no spaces).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Parses `libreyolo profile <sub> <extra…>` as the binary does.
pub fn command(sub: &str, extra: &[&str]) -> libreyolo_core::cli::ProfileCommand {
    try_command(sub, extra).unwrap_or_else(|e| panic!("{e}"))
}

/// [`command`], a value clap refuses (a typed argument) as the usage
/// error the binary exits 2 with: its first line.
pub fn try_command(
    sub: &str,
    extra: &[&str],
) -> libreyolo_core::Result<libreyolo_core::cli::ProfileCommand> {
    use clap::Parser;
    use libreyolo_core::cli::{Cli, TopCommand};
    let mut argv = vec!["libreyolo", "profile", sub];
    argv.extend_from_slice(extra);
    let parsed = Cli::try_parse_from(&argv).map_err(|e| {
        libreyolo_core::Error::usage(e.to_string().lines().next().unwrap_or_default())
    })?;
    let TopCommand::Profile(p) = parsed.command else { unreachable!("a profile command") };
    Ok(p.into_command().expect("a subcommand"))
}

/// Runs a reader command (`["summary", path, …]`) and returns its stdout.
pub fn reader(argv: &[&str]) -> String {
    let (sub, extra) = argv.split_first().expect("a reader subcommand");
    let libreyolo_core::cli::ProfileCommand::Reader(r) = command(sub, extra) else {
        panic!("{sub} is not a reader subcommand")
    };
    libreyolo_core::cli::run_reader(&r, &Default::default())
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}
