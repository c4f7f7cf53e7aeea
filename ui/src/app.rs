//! The explorer's state: the loaded profiles, the lens results each pane
//! renders, and every filter, selection and text field. Keys change this
//! state through [`App::apply`]; drawing only reads it.
//!
//! All figures come from the core's lenses (`summary`, `phases`, `kernels`,
//! `ops`, `compare`, `what_if`); this module stores their results and
//! re-runs them when a filter changes. It computes no figure itself.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use crossterm::event::KeyEvent;
use libreyolo_core::lens::compare::{Comparison, compare};
use libreyolo_core::lens::kernels::{KernelQuery, Kernels, Sort, kernels};
use libreyolo_core::lens::ops::{OpQuery, Ops, ops};
use libreyolo_core::lens::phases::{Phases, phases};
use libreyolo_core::lens::summary::{Summary, summary};
use libreyolo_core::lens::whatif::{Change, WhatIf, what_if};
use libreyolo_core::profile::{Input, Profile};

use crate::input::{self, Action};
pub use crate::pane::Pane;
use crate::theme::Theme;

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
    /// Bytes the loader thread has read so far, when the platform tells.
    pub read: Option<u64>,
    /// Where the loader thread's I/O counters are (`/proc/…/task/<tid>/io`),
    /// filled in by the thread when it starts.
    pub io: Arc<Mutex<Option<PathBuf>>>,
    /// True when this load replaces data already shown (live reload).
    pub reload: bool,
}

/// A profile and the lens results that do not depend on filters.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Shared with the filter worker, which runs the kernels lens.
    pub input: Arc<Input>,
    pub summary: Summary,
    pub phases: Phases,
    pub mtime: Option<SystemTime>,
}

impl Loaded {
    pub fn new(input: Input) -> Loaded {
        let summary = summary(&input.profile);
        let phases = phases(&input.profile);
        let mtime = std::fs::metadata(&input.path).and_then(|m| m.modified()).ok();
        Loaded { input: Arc::new(input), summary, phases, mtime }
    }
    pub fn profile(&self) -> &Profile {
        &self.input.profile
    }
}

/// One of the two profiles: what was asked for and what came of it.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// The path as the user gave it (shown as the profile's name).
    pub arg: String,
    pub data: Option<Loaded>,
    pub loading: Option<Loading>,
    /// Why the last load failed.
    pub error: Option<String>,
}

/// A text field being edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The regex of the Kernels or Ops pane; `before` is restored on Esc.
    Regex { pane: Pane, before: Option<String> },
    /// The path of a second profile.
    Path,
    /// A launch count for What-if.
    Launches,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    pub field: Field,
    pub text: String,
}

#[derive(Debug, Clone, Default)]
pub struct KernelView {
    pub query: KernelQuery,
    pub result: Option<Kernels>,
    /// The job the filter worker is running for the current query; the
    /// previous result stays on screen until it answers.
    pub pending: Option<u64>,
    /// Why the last query was refused (e.g. an unfinished regex); the
    /// previous result stays on screen meanwhile.
    pub error: Option<String>,
    pub selected: usize,
    pub detail: bool,
}

#[derive(Debug, Clone, Default)]
pub struct OpView {
    pub query: OpQuery,
    pub sort: Sort,
    pub result: Option<Ops>,
    pub error: Option<String>,
    pub selected: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhatIfChoice {
    /// Remove the category at this index of the profile's kernel mix.
    Category(usize),
    /// Remove this many launches per step.
    Launches(u64),
}

#[derive(Debug, Clone, Default)]
pub struct WhatIfView {
    pub choice: Option<WhatIfChoice>,
    pub result: Option<Result<WhatIf, String>>,
}

/// Kernel lists longer than this are filtered on the worker thread (when
/// there is one), so a key never waits for the lens.
pub const BACKGROUND_ROWS: usize = 5_000;

/// A kernels-lens job for the worker, and its answer.
pub type KernelJob = (u64, Arc<Input>, KernelQuery);
pub type KernelDone = (u64, libreyolo_core::Result<Kernels>);

/// The thread that runs the kernels lens on large profiles.
pub struct Worker {
    jobs: Sender<KernelJob>,
    done: Receiver<KernelDone>,
    next: u64,
    /// Signalled after each answer, so the event loop wakes for it.
    pub answered: Arc<tokio::sync::Notify>,
}

impl Worker {
    /// Starts the worker. It always runs the newest job queued and drops
    /// the ones it overtook, so a burst of keys costs one lens run.
    pub fn spawn() -> Worker {
        let (jobs, job_rx) = mpsc::channel::<KernelJob>();
        let (done_tx, done) = mpsc::channel::<KernelDone>();
        let answered = Arc::new(tokio::sync::Notify::new());
        let wake = Arc::clone(&answered);
        std::thread::spawn(move || {
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    job = newer;
                }
                let (id, input, query) = job;
                let result = std::panic::catch_unwind(|| kernels(&input.profile, &query))
                    .unwrap_or_else(|_| Err(libreyolo_core::Error::failed("the kernels filter crashed")));
                if done_tx.send((id, result)).is_err() {
                    return;
                }
                wake.notify_one();
            }
        });
        Worker { jobs, done, next: 0, answered }
    }
}

pub struct App {
    pub theme: Theme,
    /// Filters large kernel lists off the UI thread; `None` runs the lens
    /// in place (tests, small profiles).
    pub worker: Option<Worker>,
    /// Kernel lists longer than this go to the worker.
    pub background_rows: usize,
    pub pane: Pane,
    pub main: Slot,
    pub other: Slot,
    pub help: bool,
    pub editor: Option<Editor>,
    pub phase_selected: usize,
    pub kernels: KernelView,
    pub ops: OpView,
    pub comparison: Option<Comparison>,
    pub whatif: WhatIfView,
    /// Scroll offset of the Summary and Compare panes.
    pub summary_scroll: u16,
    pub compare_scroll: u16,
    /// A one-line message for the status bar (reloads, errors).
    pub message: Option<String>,
    /// Loads the event loop must start (side, path).
    pub requests: Vec<(Side, String)>,
    /// Rows visible in a table, updated by drawing (for page up/down).
    pub page: usize,
    pub quit: bool,
}

impl App {
    /// An app waiting for its profiles; the caller starts the loads listed
    /// in `requests`.
    pub fn new(theme: Theme, main: &str, other: Option<&str>) -> App {
        let mut app = App {
            theme,
            worker: None,
            background_rows: BACKGROUND_ROWS,
            pane: Pane::Summary,
            main: Slot { arg: main.to_string(), ..Default::default() },
            other: Slot::default(),
            help: false,
            editor: None,
            phase_selected: 0,
            kernels: KernelView::default(),
            ops: OpView::default(),
            comparison: None,
            whatif: WhatIfView::default(),
            summary_scroll: 0,
            compare_scroll: 0,
            message: None,
            requests: vec![(Side::Main, main.to_string())],
            page: 10,
            quit: false,
        };
        if let Some(o) = other {
            app.other.arg = o.to_string();
            app.requests.push((Side::Other, o.to_string()));
        }
        app
    }

    /// An app over profiles already loaded (tests, benchmarks).
    pub fn with_inputs(theme: Theme, main: Input, other: Option<Input>) -> App {
        let main_arg = main.path.display().to_string();
        let other_arg = other.as_ref().map(|o| o.path.display().to_string());
        let mut app = App::new(theme, &main_arg, other_arg.as_deref());
        app.requests.clear();
        app.loaded(Side::Main, Ok(main));
        if let Some(o) = other {
            app.loaded(Side::Other, Ok(o));
        }
        app
    }

    pub fn slot(&self, side: Side) -> &Slot {
        match side {
            Side::Main => &self.main,
            Side::Other => &self.other,
        }
    }
    fn slot_mut(&mut self, side: Side) -> &mut Slot {
        match side {
            Side::Main => &mut self.main,
            Side::Other => &mut self.other,
        }
    }

    pub fn profile(&self) -> Option<&Profile> {
        self.main.data.as_ref().map(Loaded::profile)
    }

    /// Marks a load as started (called by the event loop).
    pub fn loading(&mut self, side: Side, loading: Loading) {
        self.slot_mut(side).loading = Some(loading);
    }

    /// A load finished. On a reload the pane, filters and selections are
    /// kept; a filter the new profile cannot satisfy (a vanished phase) is
    /// dropped with a message.
    pub fn loaded(&mut self, side: Side, result: libreyolo_core::Result<Input>) {
        let slot = self.slot_mut(side);
        let reload = slot.data.is_some();
        slot.loading = None;
        match result {
            Ok(input) => {
                slot.error = None;
                slot.data = Some(Loaded::new(input));
                if reload {
                    self.message = Some(format!("reloaded {}", self.slot(side).arg));
                }
                if side == Side::Main {
                    self.refresh_main();
                }
                self.refresh_compare();
            }
            Err(e) => {
                let msg = e.to_string();
                // Do not retry the same broken file every second.
                if let Some(d) = slot.data.as_mut() {
                    d.mtime = std::fs::metadata(&d.input.path).and_then(|m| m.modified()).ok();
                }
                slot.error = Some(msg.clone());
                self.message = Some(if reload { format!("reload failed, showing the previous data: {msg}") } else { msg });
            }
        }
    }

    /// Re-runs every lens over the main profile with the current filters.
    fn refresh_main(&mut self) {
        let Some(p) = self.profile() else { return };
        let names: Vec<String> = p.phase_names().iter().map(|s| s.to_string()).collect();
        let n_categories = p.categories.len();
        let mut dropped = Vec::new();
        for phase in [&mut self.kernels.query.phase, &mut self.ops.query.phase] {
            if phase.as_ref().is_some_and(|ph| !names.contains(ph)) {
                dropped.push(phase.take().unwrap_or_default());
            }
        }
        if let Some(WhatIfChoice::Category(i)) = self.whatif.choice {
            if i >= n_categories {
                self.whatif.choice = None;
            }
        }
        if self.whatif.choice.is_none() && n_categories > 0 {
            self.whatif.choice = Some(WhatIfChoice::Category(0));
        }
        if !dropped.is_empty() {
            self.message = Some(format!("phase {} is gone from the new profile: filter dropped", dropped.join(", ")));
        }
        self.phase_selected = self.phase_selected.min(self.main.data.as_ref().map_or(0, |d| d.phases.phases.len().saturating_sub(1)));
        self.refresh_kernels();
        self.refresh_ops();
        self.refresh_whatif();
    }

    fn refresh_kernels(&mut self) {
        let Some(d) = self.main.data.as_ref() else { return };
        let rows = d.profile().kernels.len();
        if let Some(w) = self.worker.as_mut().filter(|_| rows > self.background_rows) {
            w.next += 1;
            if w.jobs.send((w.next, Arc::clone(&d.input), self.kernels.query.clone())).is_ok() {
                self.kernels.pending = Some(w.next);
                return;
            }
        }
        let result = kernels(d.profile(), &self.kernels.query);
        self.kernels.pending = None;
        self.kernels_done(result);
    }

    /// Takes the worker's answers; true when the screen changed.
    pub fn poll_worker(&mut self) -> bool {
        let mut changed = false;
        while let Some((id, result)) = self.worker.as_ref().and_then(|w| w.done.try_recv().ok()) {
            if self.kernels.pending == Some(id) {
                self.kernels.pending = None;
                self.kernels_done(result);
                changed = true;
            }
        }
        changed
    }

    fn kernels_done(&mut self, result: libreyolo_core::Result<Kernels>) {
        match result {
            Ok(k) => {
                self.kernels.selected = self.kernels.selected.min(k.kernels.len().saturating_sub(1));
                self.kernels.result = Some(k);
                self.kernels.error = None;
            }
            Err(e) => self.kernels.error = Some(e.to_string()),
        }
        if self.kernels.result.as_ref().is_none_or(|k| k.kernels.is_empty()) {
            self.kernels.detail = false;
        }
    }

    fn refresh_ops(&mut self) {
        let Some(p) = self.main.data.as_ref().map(Loaded::profile) else { return };
        match ops(p, &self.ops.query) {
            Ok(mut o) => {
                // The lens orders by time; other orders only rearrange its rows.
                match self.ops.sort {
                    Sort::Time => {}
                    Sort::Count => o.ops.sort_by(|a, b| b.count_per_step.total_cmp(&a.count_per_step).then_with(|| a.op.cmp(&b.op))),
                    Sort::Name => o.ops.sort_by(|a, b| a.op.cmp(&b.op)),
                }
                self.ops.selected = self.ops.selected.min(o.ops.len().saturating_sub(1));
                self.ops.result = Some(o);
                self.ops.error = None;
            }
            Err(e) => self.ops.error = Some(e.to_string()),
        }
    }

    fn refresh_compare(&mut self) {
        self.comparison = match (&self.main.data, &self.other.data) {
            (Some(a), Some(b)) => Some(compare(a.profile(), b.profile(), &self.main.arg, &self.other.arg)),
            _ => None,
        };
    }

    fn refresh_whatif(&mut self) {
        let Some(p) = self.main.data.as_ref().map(Loaded::profile) else { return };
        let change = match self.whatif.choice {
            None => {
                self.whatif.result = None;
                return;
            }
            Some(WhatIfChoice::Category(i)) => {
                Change { remove_category: p.categories.get(i).map(|c| c.name.clone()), remove_launches: None }
            }
            Some(WhatIfChoice::Launches(n)) => Change { remove_category: None, remove_launches: Some(n) },
        };
        self.whatif.result = Some(what_if(p, &change).map_err(|e| e.to_string()));
    }

    /// Refreshes the byte counts of running loads (Linux: the loader
    /// thread's `rchar`; elsewhere the screen shows a moving marker).
    pub fn poll_progress(&mut self) {
        for l in [self.main.loading.as_mut(), self.other.loading.as_mut()].into_iter().flatten() {
            let io = l.io.lock().ok().and_then(|p| p.clone());
            if let Some(text) = io.and_then(|p| std::fs::read_to_string(p).ok()) {
                l.read = text.lines().find_map(|line| line.strip_prefix("rchar:")).and_then(|v| v.trim().parse().ok());
            }
        }
    }

    /// Handles one key press.
    pub fn handle_key(&mut self, key: KeyEvent) {
        self.message = None;
        if let Some(a) = input::map(key, self.editor.is_some()) {
            self.apply(a);
        }
    }

    /// Applies one action to the state.
    pub fn apply(&mut self, a: Action) {
        if self.editor.is_some() {
            self.edit(a);
            return;
        }
        if self.help {
            // Any key closes the help; quitting still quits.
            self.help = false;
            if a == Action::Quit {
                self.quit = true;
            }
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::Back => {
                if self.pane == Pane::Kernels && self.kernels.detail {
                    self.kernels.detail = false;
                } else {
                    self.quit = true;
                }
            }
            Action::Help => self.help = true,
            Action::Pane(p) => self.switch(p),
            Action::NextPane => self.switch(self.pane.next()),
            Action::PrevPane => self.switch(self.pane.prev()),
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.move_by(-(self.page.max(1) as isize)),
            Action::PageDown => self.move_by(self.page.max(1) as isize),
            Action::Top => self.move_by(isize::MIN / 2),
            Action::Bottom => self.move_by(isize::MAX / 2),
            Action::Left if self.pane == Pane::WhatIf => self.move_by(-1),
            Action::Right if self.pane == Pane::WhatIf => self.move_by(1),
            Action::Enter => self.enter(),
            Action::CycleSort => match self.pane {
                Pane::Kernels => {
                    self.kernels.query.sort = self.kernels.query.sort.next();
                    self.kernels.selected = 0;
                    self.refresh_kernels();
                }
                Pane::Ops => {
                    self.ops.sort = self.ops.sort.next();
                    self.ops.selected = 0;
                    self.refresh_ops();
                }
                _ => {}
            },
            Action::CycleCategory => match self.pane {
                Pane::Kernels => self.cycle_category(),
                Pane::WhatIf => self.move_by(1),
                _ => {}
            },
            Action::CyclePhase => self.cycle_phase(),
            Action::ToggleTensorCore if self.pane == Pane::Kernels => {
                self.kernels.query.tensorcore = !self.kernels.query.tensorcore;
                self.kernels.selected = 0;
                self.refresh_kernels();
            }
            Action::StartRegex => {
                let pane = if self.pane == Pane::Ops { Pane::Ops } else { Pane::Kernels };
                self.switch(pane);
                let before = if pane == Pane::Ops { self.ops.query.grep.clone() } else { self.kernels.query.grep.clone() };
                self.editor = Some(Editor { text: before.clone().unwrap_or_default(), field: Field::Regex { pane, before } });
            }
            Action::StartLaunches if self.pane == Pane::WhatIf && self.profile().is_some() => {
                let text = match self.whatif.choice {
                    Some(WhatIfChoice::Launches(n)) => n.to_string(),
                    _ => String::new(),
                };
                self.editor = Some(Editor { field: Field::Launches, text });
            }
            Action::OpenOther if self.pane == Pane::Compare => {
                self.editor = Some(Editor { field: Field::Path, text: String::new() });
            }
            Action::ClearFilters => match self.pane {
                Pane::Kernels => {
                    self.kernels.query = KernelQuery::default();
                    self.kernels.selected = 0;
                    self.refresh_kernels();
                }
                Pane::Ops => {
                    self.ops.query = OpQuery::default();
                    self.ops.sort = Sort::Time;
                    self.ops.selected = 0;
                    self.refresh_ops();
                }
                _ => {}
            },
            Action::Reload => {
                for side in [Side::Main, Side::Other] {
                    let arg = self.slot(side).arg.clone();
                    if !arg.is_empty() && self.slot(side).loading.is_none() {
                        self.requests.push((side, arg));
                    }
                }
            }
            _ => {}
        }
    }

    fn switch(&mut self, p: Pane) {
        self.pane = p;
        self.kernels.detail = false;
    }

    fn enter(&mut self) {
        match self.pane {
            Pane::Phases => {
                let Some(d) = &self.main.data else { return };
                let Some(row) = d.phases.phases.get(self.phase_selected) else { return };
                let phase = row.phase.clone();
                let has_kernels = d.profile().kernels_by_phase.get(&phase).is_some_and(|k| !k.is_empty());
                if has_kernels {
                    self.kernels.query.phase = Some(phase.clone());
                    self.kernels.selected = 0;
                    self.refresh_kernels();
                    self.switch(Pane::Kernels);
                } else {
                    self.ops.query.phase = Some(phase.clone());
                    self.ops.selected = 0;
                    self.refresh_ops();
                    self.switch(Pane::Ops);
                    self.message = Some(format!("phase {phase} launched no GPU kernels: showing its ops"));
                }
            }
            Pane::Kernels if self.kernels.result.as_ref().is_some_and(|k| !k.kernels.is_empty()) => {
                self.kernels.detail = !self.kernels.detail;
            }
            Pane::Compare if self.other.data.is_none() => {
                self.editor = Some(Editor { field: Field::Path, text: String::new() });
            }
            _ => {}
        }
    }

    /// The categories the Kernels pane cycles through: the profile's kernel
    /// mix, in its order.
    pub fn categories(&self) -> Vec<String> {
        self.profile().map_or_else(Vec::new, |p| p.categories.iter().map(|c| c.name.clone()).collect())
    }

    fn cycle_category(&mut self) {
        let cats = self.categories();
        let q = &mut self.kernels.query;
        q.category = cycle(&cats, q.category.as_deref());
        self.kernels.selected = 0;
        self.refresh_kernels();
    }

    fn cycle_phase(&mut self) {
        let Some(p) = self.profile() else { return };
        let names: Vec<String> = p.phase_names().iter().map(|s| s.to_string()).collect();
        match self.pane {
            Pane::Kernels => {
                self.kernels.query.phase = cycle(&names, self.kernels.query.phase.as_deref());
                self.kernels.selected = 0;
                self.refresh_kernels();
            }
            Pane::Ops => {
                self.ops.query.phase = cycle(&names, self.ops.query.phase.as_deref());
                self.ops.selected = 0;
                self.refresh_ops();
            }
            _ => {}
        }
    }

    fn move_by(&mut self, delta: isize) {
        let step = |cur: usize, len: usize| -> usize {
            if len == 0 {
                return 0;
            }
            (cur as isize).saturating_add(delta).clamp(0, len as isize - 1) as usize
        };
        match self.pane {
            Pane::Summary => self.summary_scroll = step(self.summary_scroll as usize, 200) as u16,
            Pane::Compare => self.compare_scroll = step(self.compare_scroll as usize, 2000) as u16,
            Pane::Phases => {
                let len = self.main.data.as_ref().map_or(0, |d| d.phases.phases.len());
                self.phase_selected = step(self.phase_selected, len);
            }
            Pane::Kernels => {
                let len = self.kernels.result.as_ref().map_or(0, |k| k.kernels.len());
                self.kernels.selected = step(self.kernels.selected, len);
            }
            Pane::Ops => {
                let len = self.ops.result.as_ref().map_or(0, |o| o.ops.len());
                self.ops.selected = step(self.ops.selected, len);
            }
            Pane::WhatIf => {
                let len = self.profile().map_or(0, |p| p.categories.len());
                if len == 0 {
                    return;
                }
                let cur = match self.whatif.choice {
                    Some(WhatIfChoice::Category(i)) => i,
                    _ if delta < 0 => len,
                    _ => usize::MAX,
                };
                // Wraps around, so Left/Right cycle through every category.
                let next = if cur == usize::MAX { 0 } else { (cur as isize + delta.signum()).rem_euclid(len as isize) as usize };
                self.whatif.choice = Some(WhatIfChoice::Category(next));
                self.refresh_whatif();
            }
        }
    }

    fn edit(&mut self, a: Action) {
        let Some(ed) = self.editor.as_mut() else { return };
        match a {
            Action::Quit => {
                self.quit = true;
                return;
            }
            Action::Char(c) => {
                if ed.field == Field::Launches && !c.is_ascii_digit() {
                    return;
                }
                ed.text.push(c);
            }
            Action::Backspace => {
                ed.text.pop();
            }
            Action::ClearField => ed.text.clear(),
            Action::Cancel => {
                let ed = self.editor.take();
                if let Some(Editor { field: Field::Regex { pane, before }, .. }) = ed {
                    self.set_regex(pane, before);
                }
                return;
            }
            Action::Submit => {
                let ed = self.editor.take();
                match ed {
                    Some(Editor { field: Field::Path, text }) => self.open_other(text.trim()),
                    Some(Editor { field: Field::Regex { pane, .. }, .. }) => {
                        let err = if pane == Pane::Ops { &self.ops.error } else { &self.kernels.error };
                        if let Some(e) = err {
                            self.message = Some(e.clone());
                        }
                    }
                    _ => {}
                }
                return;
            }
            _ => return,
        }
        // Live fields update their pane on every key.
        let (field, text) = (ed.field.clone(), ed.text.clone());
        match field {
            Field::Regex { pane, .. } => self.set_regex(pane, (!text.is_empty()).then_some(text)),
            Field::Launches => {
                self.whatif.choice = text.parse::<u64>().ok().map(WhatIfChoice::Launches).or(self.whatif.choice);
                self.refresh_whatif();
            }
            Field::Path => {}
        }
    }

    fn set_regex(&mut self, pane: Pane, grep: Option<String>) {
        if pane == Pane::Ops {
            self.ops.query.grep = grep;
            self.ops.selected = 0;
            self.refresh_ops();
        } else {
            self.kernels.query.grep = grep;
            self.kernels.selected = 0;
            self.refresh_kernels();
        }
    }

    fn open_other(&mut self, path: &str) {
        if path.is_empty() {
            return;
        }
        match libreyolo_core::profile::resolve_input(path) {
            Ok(_) => {
                self.other = Slot { arg: path.to_string(), ..Default::default() };
                self.comparison = None;
                self.requests.push((Side::Other, path.to_string()));
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    /// Files whose modification time changed since they were loaded
    /// (live reload); the loop calls this when the file watcher reports a
    /// change in their folders.
    pub fn changed_on_disk(&self) -> Vec<(Side, String)> {
        [Side::Main, Side::Other]
            .into_iter()
            .filter_map(|side| {
                let s = self.slot(side);
                let d = s.data.as_ref()?;
                if s.loading.is_some() {
                    return None;
                }
                let now = std::fs::metadata(&d.input.path).and_then(|m| m.modified()).ok()?;
                (Some(now) != d.mtime).then(|| (side, s.arg.clone()))
            })
            .collect()
    }

    pub fn is_loading(&self) -> bool {
        self.main.loading.is_some() || self.other.loading.is_some()
    }

    /// The files on screen, for the file watcher.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        [&self.main, &self.other].into_iter().filter_map(|s| s.data.as_ref().map(|d| d.input.path.clone())).collect()
    }

    /// The kernel under the cursor in the Kernels pane.
    pub fn selected_kernel(&self) -> Option<&libreyolo_core::profile::KernelRow> {
        self.kernels.result.as_ref()?.kernels.get(self.kernels.selected)
    }
}

/// None → first → … → last → None.
fn cycle(options: &[String], current: Option<&str>) -> Option<String> {
    match current {
        None => options.first().cloned(),
        Some(c) => {
            let i = options.iter().position(|o| o == c)?;
            options.get(i + 1).cloned()
        }
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("pane", &self.pane).field("main", &self.main.arg).field("other", &self.other.arg).finish()
    }
}

/// Where a path of the main profile points, for the title bar.
pub fn display_name(arg: &str) -> String {
    let p = PathBuf::from(arg);
    let parts: Vec<_> = p.components().rev().take(2).collect();
    parts.into_iter().rev().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}
