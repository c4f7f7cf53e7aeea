//! What a capture leaves and says: the output folder, checked before
//! anything is measured (a `--project` that is a file, read-only or under a
//! file fails at once, not after minutes of measurement), and the report
//! of a `--repeat`'s trials.

use std::io::Write;
use std::path::Path;

use libreyolo_core::analysis::{self, AnalyzeOptions};
use libreyolo_core::conditions::{self, Conditions};
use libreyolo_core::profile::{Measurements, Profile, measured};
use libreyolo_core::trace::Source;
use libreyolo_core::{Error, Result};

/// Writes a line to stderr: control and bidi characters escaped (a
/// `--weights` name, a dataset path, Kineto's text may hold any), and never
/// a panic when stderr cannot be written (`2>/dev/full`), which
/// `eprintln!` would be. Every line the capture says goes through here.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", libreyolo_core::render::printable(line));
}

/// Creates `dir` if needed and proves a file can be written in it.
pub fn prepare(dir: &Path) -> Result<()> {
    let unusable = |e: std::io::Error| {
        Error::usage(format!("--project: cannot write in {}: {e}", dir.display())).caused_by(e)
    };
    std::fs::create_dir_all(dir).map_err(unusable)?;
    tempfile::tempfile_in(dir).map_err(unusable)?;
    Ok(())
}

/// Prints each trial's img/s and conditions to stderr, warns about a trial
/// that ran under different conditions, and returns the aggregate's.
pub fn report_trials(trials: &[Profile]) -> Option<Conditions> {
    let judged: Vec<_> = trials
        .iter()
        .map(|p| (p.figures.img_per_s, Conditions::of_host(p.host.as_ref())))
        .collect();
    let t = conditions::across_trials(&judged);
    for line in &t.lines {
        say(line);
    }
    for w in &t.warnings {
        say(&format!("warning: {w}"));
    }
    t.aggregate
}

/// The core's analysis of a trace the capture just wrote, with the numbers
/// it measured alongside (trusted; the op at each memory peak named).
pub fn analyze(trace: &Path, measured: &Measurements) -> Result<Profile> {
    let fail =
        |e: Error| Error::failed(format!("cannot analyse the captured trace: {e}")).caused_by(e);
    let src = Source::path(trace).map_err(fail)?;
    let analysed = analysis::analyze(&src, AnalyzeOptions::captured(measured)).map_err(fail)?;
    Ok(analysed
        .ok_or_else(|| Error::failed("the captured trace was not recognised as a trace"))?
        .profile)
}

/// Records in the sidecar which trace it belongs to: the file name the
/// profiler exported to, which Kineto writes into the trace as `traceName`
/// (the temporary `.profile_trace.XXXXXX.json` names are unique). Readers
/// take a sidecar's numbers only for its own trace.
pub fn link_sidecar(m: &mut Measurements, trace_tmp: &Path) {
    if let Some(name) = trace_tmp.file_name() {
        m.meta.insert(measured::TRACE_NAME_KEY, name.to_string_lossy().into());
    }
}
