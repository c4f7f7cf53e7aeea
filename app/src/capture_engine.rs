//! Hands `profile infer` / `profile run` to `libreyolo-capture`, the
//! executable that links libtorch.
//!
//! Why a second executable rather than a library opened on demand: libtorch
//! and the CUDA libraries cost ~0.5 s and ~460 MB at load time, and a
//! `dlopen`ed Rust capture library would need a stable ABI between two
//! separately built Rust artefacts. A separate executable needs none, and on
//! Unix we `exec` it: the capture replaces this process, so stdin, stdout,
//! stderr, signals (Ctrl-C reaches the capture directly) and the exit code
//! are the capture's own, with nothing in between to forward or lose.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use libreyolo_core::error::{Error, Result};

/// The capture engine's file name.
const CAPTURE_EXE: &str = "libreyolo-capture";
/// Overrides where the capture engine is looked for.
const CAPTURE_ENV: &str = "LIBREYOLO_CAPTURE";

/// Runs the capture engine with this process's arguments. On Unix it only
/// returns on failure to start it.
pub fn hand_over(args: &[OsString]) -> Result<()> {
    let exe = locate().ok_or_else(not_installed)?;
    // A `$LIBREYOLO_CAPTURE` that names nothing runnable is the engine not
    // installed (exit 2, docs/spec.md §1.1), not a failure to start it.
    if !is_executable(&exe) {
        return Err(Error::usage(format!(
            "${CAPTURE_ENV} is {}, which is not an executable file: point it at the capture engine ({CAPTURE_EXE}) or unset it",
            exe.display()
        )));
    }
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(args.iter().skip(1));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Keep argv[0], so clap's messages from the capture say `libreyolo`.
        if let Some(arg0) = args.first() {
            cmd.arg0(arg0);
        }
        let err = cmd.exec();
        Err(Error::failed(format!("cannot start the capture engine {}: {err}", exe.display())))
    }
    #[cfg(not(unix))]
    {
        let status = cmd.status().map_err(|e| {
            Error::failed(format!("cannot start the capture engine {}: {e}", exe.display()))
                .caused_by(e)
        })?;
        std::process::exit(status.code().unwrap_or(libreyolo_core::error::exit::FAILURE));
    }
}

/// `$LIBREYOLO_CAPTURE`, else beside this executable, else on `PATH`.
fn locate() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CAPTURE_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let name = format!("{CAPTURE_EXE}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe().ok().and_then(|me| me.parent().map(|d| d.join(&name)));
    beside.filter(|p| is_executable(p)).or_else(|| on_path(OsStr::new(&name)))
}

fn on_path(name: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    p.is_file()
}

fn not_installed() -> Error {
    let here = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf));
    let beside = here.map(|d| format!(" beside {}", d.display())).unwrap_or_default();
    Error::usage(format!(
        "`profile infer` and `profile run` need the capture engine ({CAPTURE_EXE}), which is not installed: \
         not found{beside}, on PATH or in ${CAPTURE_ENV}. Install it with `scripts/setup.sh` from the \
         repository (it sets up libtorch, about 5 GB, and builds both executables)"
    ))
}
