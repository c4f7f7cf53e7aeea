//! Arguments and output streams a hostile or unlucky user gives the binary:
//! each ends with a clear exit code, never a panic.

mod common;

use std::process::{Command, Stdio};

use common::run;

fn devfull() -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full")
}

#[test]
#[cfg(unix)]
fn a_non_utf8_path_is_a_usage_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::OsStr::from_bytes(b"x\xff.json");
    for sub in ["summary", "kernels", "infer"] {
        let r = run(&[std::ffi::OsStr::new("profile"), std::ffi::OsStr::new(sub), path]);
        assert_eq!(r.code, 2, "{sub}: {}", r.stderr);
        assert!(r.stderr.contains("UTF-8"), "{sub}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{sub}: {}", r.stderr);
    }
}

#[test]
fn help_that_cannot_be_written_fails() {
    let st = Command::new(env!("CARGO_BIN_EXE_libreyolo"))
        .args(["profile", "summary", "--help"])
        .stdout(devfull())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(1), "--help >/dev/full must not claim success");
    // A reader that cannot write its answer fails the same way.
    let p = common::shared().join("reference/infer_b1/profile.json");
    let st = Command::new(env!("CARGO_BIN_EXE_libreyolo"))
        .args(["profile", "summary"])
        .arg(&p)
        .stdout(devfull())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(1));
}

#[test]
fn an_error_with_stderr_full_keeps_its_exit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_libreyolo"))
        .args(["profile", "summary", "no/such/profile.json"])
        .stdout(Stdio::piped())
        .stderr(devfull())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "not a panic (101)");
    assert!(out.stdout.is_empty());
}
