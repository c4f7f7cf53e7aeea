//! Temporary files a capture has in flight (the trace before it is renamed
//! into place, a profile being written atomically), removed if a signal ends
//! the process. A normal exit removes them through their owners
//! (`tempfile`'s `Drop`); SIGINT, SIGTERM and SIGHUP run no destructors, so
//! the paths are also noted here and a signal thread removes them before
//! the process dies by that signal. Paths are never un-noted: by then they
//! were renamed or removed, and removing a missing file is a no-op.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Notes a temporary file to remove if a signal ends the process.
pub fn track(path: &Path) {
    if let Ok(mut paths) = IN_FLIGHT.lock() {
        paths.push(path.to_path_buf());
    }
}

/// From now on, SIGINT/SIGTERM/SIGHUP first remove the noted files, then end
/// the process as the signal would have (exit status: killed by it).
#[cfg(unix)]
pub fn remove_on_signal() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            remove_all();
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    })?;
    Ok(())
}

#[cfg(not(unix))]
pub fn remove_on_signal() -> std::io::Result<()> {
    Ok(())
}

fn remove_all() {
    let paths = IN_FLIGHT.lock().map(|p| p.clone()).unwrap_or_default();
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}
