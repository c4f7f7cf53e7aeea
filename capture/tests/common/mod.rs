//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The python of the torch venv (`scripts/setup-torch.sh`), if present.
pub fn torch_python() -> Option<PathBuf> {
    let venv = std::env::var_os("VIRTUAL_ENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("LIBREYOLO_VENV").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/libreyolo/torch-venv")))?;
    let py = venv.join("bin/python");
    let ok = Command::new(&py).args(["-W", "ignore", "-c", "import torch"]).output().map(|o| o.status.success()).unwrap_or(false);
    if ok {
        Some(py)
    } else {
        eprintln!("SKIPPED: no torch venv at {} (run scripts/setup-torch.sh)", venv.display());
        None
    }
}

/// Runs a python script with the torch venv; panics with its stderr on failure.
pub fn run_python(py: &PathBuf, script: &str, args: &[&str]) -> String {
    let out = Command::new(py).args(["-W", "ignore", "-c", script]).args(args).output().expect("run python");
    assert!(out.status.success(), "python failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The profiler is process-wide: captures in one test binary take turns.
pub static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the profiler for the caller's capture.
pub fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Parses `libreyolo profile <sub> <extra…>` as the binary does.
pub fn command(sub: &str, extra: &[&str]) -> libreyolo_core::cli::ProfileCommand {
    use clap::Parser;
    use libreyolo_core::cli::{Cli, TopCommand};
    let mut argv = vec!["libreyolo", "profile", sub];
    argv.extend_from_slice(extra);
    let TopCommand::Profile(p) = Cli::try_parse_from(&argv).unwrap().command;
    p.command.unwrap()
}

/// Runs a reader command (`["summary", path, …]`) and returns its stdout.
pub fn reader(argv: &[&str]) -> String {
    let (sub, extra) = argv.split_first().expect("a reader subcommand");
    let r = command(sub, extra).into_reader().ok().expect("a reader subcommand");
    libreyolo_core::cli::run_reader(&r).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}
