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
fn a_missing_non_utf8_path_is_a_usage_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    // Paths are taken as bytes (tests/hostile_readers.rs reads such files):
    // a missing one is "not found", said readably.
    let path = std::ffi::OsStr::from_bytes(b"x\xff.json");
    for (sub, says) in
        [("summary", "not found: x\u{fffd}.json"), ("kernels", "not found"), ("infer", "not found")]
    {
        let os = std::ffi::OsStr::new;
        let mut args = vec![os("profile"), os(sub), path];
        if sub == "infer" {
            args.extend([os("--device"), os("cpu")]);
        }
        let r = run(&args);
        assert_eq!(r.code, 2, "{sub}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{sub}: {}", r.stderr);
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
