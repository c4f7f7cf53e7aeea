//! The two profiles the explorer shows and their background loads: what
//! was asked for, what came of it, and the lens results computed once per
//! load. A leaf module: the app, the panes and the job all use it, and it
//! uses none of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Instant, SystemTime};

use libreyolo_core::analysis::model::StepModel;
use libreyolo_core::analysis::timeline::StepIndex;
use libreyolo_core::lens::phases::{Phases, phases};
use libreyolo_core::lens::summary::{Summary, summary};
use libreyolo_core::profile::{Input, Profile};
use libreyolo_core::trace::input::ProgressBar;

/// Which of the two profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Main,
    Other,
}

/// A background load in progress.
#[derive(Debug, Clone)]
pub struct Loading {
    /// Distinguishes this load from an older one still running.
    pub id: u64,
    pub started: Instant,
    /// Size of the file being read, when known.
    pub size: Option<u64>,
    /// The bar the reader moves: the bytes of the file read so far (a
    /// single trace or profile; a job counts its ranks instead).
    pub bar: Option<ProgressBar>,
    /// True when this load replaces data already shown (live reload).
    pub reload: bool,
    /// A job's load: the rank files read so far (counted by the loader)
    /// and how many there are.
    pub ranks: Option<(Arc<AtomicUsize>, usize)>,
}

/// A profile and the lens results that do not depend on filters.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Shared with the filter worker, which runs the kernels lens.
    pub input: Arc<Input>,
    pub summary: Summary,
    pub phases: Phases,
    pub mtime: Option<SystemTime>,
    /// The Timeline's index of the trace, when its read built one.
    pub index: Option<Arc<StepIndex>>,
    /// The trace's step model, when the input was a trace: what-ifs
    /// beyond the profile's standard ones.
    pub model: Option<Arc<StepModel>>,
}

impl Loaded {
    pub fn new(input: Input) -> Loaded {
        let summary = summary(&input.profile);
        let phases = phases(&input.profile);
        let mtime = std::fs::metadata(&input.path).and_then(|m| m.modified()).ok();
        Loaded { input: Arc::new(input), summary, phases, mtime, index: None, model: None }
    }
    pub fn profile(&self) -> &Profile {
        &self.input.profile
    }
}

/// One of the two profiles: what was asked for and what came of it.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// The path as the user gave it (shown as the profile's name).
    pub arg: PathBuf,
    pub data: Option<Loaded>,
    pub loading: Option<Loading>,
    /// Why the last load failed.
    pub error: Option<String>,
    /// The rank traces when this slot is a distributed job (loads read
    /// them all); empty for a profile.
    pub ranks: Vec<PathBuf>,
}

/// Where a path of the main profile points, for the title bar.
pub fn display_name(p: &Path) -> String {
    let parts: Vec<_> = p.components().rev().take(2).collect();
    parts
        .into_iter()
        .rev()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}
