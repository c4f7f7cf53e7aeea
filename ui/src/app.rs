//! The explorer's shared state: the loaded profiles (slots and background
//! loads), the text field, the status message, the filter worker, and the
//! panes, each of which owns its own state in its module (`panes/*.rs`).
//! Keys change state through [`App::apply`], which handles the app's own
//! keys and hands the rest to the pane on screen through the pane table
//! ([`Panes`]); the pane's [`Effect`] comes back here. Drawing only reads.
//!
//! All figures come from the core's lenses; this module computes none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossterm::event::KeyEvent;
use libreyolo_core::analysis::model::StepModel;
use libreyolo_core::analysis::timeline::{self, StepIndex};
use libreyolo_core::profile::{Input, Profile};
use libreyolo_core::trace::ReadOptions;

pub use crate::background::{BACKGROUND_ROWS, StepDone, StepJob, StepLoader, Worker};
use crate::editor::{Editor, Field};
use crate::input::{self, Action};
use crate::job::OpenJob;
pub use crate::pane::Pane;
use crate::panes::Panes;
use crate::slot::{Loaded, Loading, Side, Slot};
use crate::theme::Theme;
use crate::view::{Ctx, Effect, View};

/// What the pane's key handling reads, from the app's own fields: a macro,
/// so that it borrows those fields only and `panes` stays free to change.
macro_rules! ctx {
    ($app:expr) => {
        Ctx {
            data: $app.main.data.as_ref(),
            other: &$app.other,
            job: $app.job.as_ref(),
            page: $app.page,
            worker: $app.worker.as_ref(),
            background_rows: $app.background_rows,
        }
    };
}

/// What a load produced: one profile, or a distributed job.
#[derive(Debug)]
pub enum Opened {
    /// A profile, and the Timeline's index when its trace was read here
    /// (built in the same pass).
    Profile(Box<Input>, Option<Arc<StepIndex>>, Option<Arc<StepModel>>),
    Job(Box<OpenJob>),
}

/// The explorer: the panes (each owns its state) and what they share —
/// the two profile slots, the theme, the text field, the status message,
/// the background threads.
pub struct App {
    pub theme: Theme,
    /// Filters large kernel lists off the UI thread; `None` runs the lens
    /// in place (tests, small profiles).
    pub worker: Option<Worker>,
    /// Kernel lists longer than this go to the worker.
    pub background_rows: usize,
    pub pane: Pane,
    /// The main slot's profile is `main.data`; for a distributed job it is
    /// the shown rank's, and the job is here.
    pub job: Option<OpenJob>,
    pub main: Slot,
    pub other: Slot,
    pub help: bool,
    pub editor: Option<Editor>,
    /// Every pane's state (the pane table).
    pub panes: Panes,
    /// Reads timeline steps off the UI thread; `None` reads in place.
    pub steps: Option<StepLoader>,
    /// Ids of timeline step reads.
    step_jobs: u64,
    /// A one-line message for the status bar (reloads, errors).
    pub message: Option<String>,
    /// Loads the event loop must start (side, path).
    pub requests: Vec<(Side, PathBuf)>,
    /// Rows of a table page (PgUp/PgDn), from the terminal's height.
    pub page: usize,
    pub quit: bool,
    /// How traces are read (the command line's `--threads`, `--no-mmap`,
    /// `--max-memory`).
    pub read: ReadOptions,
}

impl App {
    /// An app waiting for its profiles; the caller starts the loads listed
    /// in `requests`.
    pub fn new(theme: Theme, main: &Path, other: Option<&Path>) -> App {
        let mut app = App {
            theme,
            worker: None,
            background_rows: BACKGROUND_ROWS,
            pane: Pane::Summary,
            job: None,
            main: Slot { arg: main.to_path_buf(), ..Default::default() },
            other: Slot::default(),
            help: false,
            editor: None,
            panes: Panes::default(),
            steps: None,
            step_jobs: 0,
            message: None,
            requests: vec![(Side::Main, main.to_path_buf())],
            page: 10,
            quit: false,
            read: ReadOptions::default(),
        };
        if let Some(o) = other {
            app.other.arg = o.to_path_buf();
            app.requests.push((Side::Other, o.to_path_buf()));
        }
        app
    }

    /// An app waiting for a distributed job: `arg` names it, `files` are
    /// its rank traces; it opens on the Ranks pane.
    pub fn for_job(theme: Theme, arg: &str, files: Vec<PathBuf>) -> App {
        let mut app = App::new(theme, Path::new(arg), None);
        app.main.ranks = files;
        app.pane = Pane::Ranks;
        app
    }

    /// An app over a job already read (tests, benchmarks).
    pub fn with_job(theme: Theme, arg: &str, job: OpenJob) -> App {
        let files = job.ranks.iter().map(|r| r.input.path.clone()).collect();
        let mut app = App::for_job(theme, arg, files);
        app.requests.clear();
        app.opened(Side::Main, Ok(Opened::Job(Box::new(job))));
        app
    }

    /// An app over profiles already loaded (tests, benchmarks).
    pub fn with_inputs(theme: Theme, main: Input, other: Option<Input>) -> App {
        let mut app = App::new(theme, &main.path, other.as_ref().map(|o| o.path.as_path()));
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

    /// What the panes' drawing reads.
    pub fn view(&self) -> View<'_> {
        View {
            theme: &self.theme,
            main: &self.main,
            other: &self.other,
            job: self.job.as_ref(),
            editor: self.editor.as_ref(),
        }
    }

    /// A load finished: a profile or a job.
    pub fn opened(&mut self, side: Side, result: libreyolo_core::Result<Opened>) {
        match result {
            Ok(Opened::Profile(input, index, model)) => {
                self.loaded_indexed(side, Ok(*input), index, model)
            }
            Ok(Opened::Job(job)) => self.job_loaded(*job),
            Err(e) => self.loaded(side, Err(e)),
        }
    }

    /// A job read. On a reload the pane, filters and the shown rank are
    /// kept; the first time it opens on the Ranks pane with the critical
    /// rank behind the other panes.
    fn job_loaded(&mut self, mut job: OpenJob) {
        let reload = self.job.is_some();
        if let Some(k) = self.job.as_ref().map(OpenJob::shown_rank) {
            if let Some(i) = job.job.ranks.iter().position(|r| r.rank == k) {
                job.shown = i;
            }
        }
        let shown = job.shown;
        self.main.loading = None;
        self.main.error = None;
        let before = self.job.replace(job);
        self.show_rank(shown);
        self.panes.ranks.reload(before.as_ref(), self.job.as_ref());
        if reload {
            self.message = Some(format!("reloaded {}", self.main.arg.display()));
        } else {
            self.pane = Pane::Ranks;
        }
    }

    /// Feeds the other panes with rank position `i` of the job, keeping
    /// their filters (as a reload does).
    pub fn show_rank(&mut self, i: usize) {
        let Some(j) = self.job.as_mut() else { return };
        let Some(data) = j.ranks.get(i).cloned() else { return };
        j.shown = i;
        self.main.data = Some(data);
        self.panes.kernels.detail = false;
        self.refresh_main();
        self.reset_timeline();
        self.panes.compare.recompute(&self.main, &self.other);
    }

    /// The main trace changed: the Timeline forgets it, and reads the step
    /// it showed again when it is on screen.
    fn reset_timeline(&mut self) {
        let step = self.panes.timeline.step;
        self.panes.timeline.reset();
        // The index the main trace's read built, if it did: no pass here.
        self.panes.timeline.index = self.main.data.as_ref().and_then(|d| d.index.clone());
        if self.pane == Pane::Timeline {
            self.request_step(step);
        }
    }

    /// Marks a load as started (called by the event loop).
    pub fn loading(&mut self, side: Side, loading: Loading) {
        self.slot_mut(side).loading = Some(loading);
    }

    /// A load finished. On a reload the pane, filters and selections are
    /// kept; a filter the new profile cannot satisfy (a vanished phase) is
    /// dropped with a message.
    pub fn loaded(&mut self, side: Side, result: libreyolo_core::Result<Input>) {
        self.loaded_indexed(side, result, None, None);
    }

    /// [`App::loaded`], with the Timeline's index of its trace.
    fn loaded_indexed(
        &mut self,
        side: Side,
        result: libreyolo_core::Result<Input>,
        index: Option<Arc<StepIndex>>,
        model: Option<Arc<StepModel>>,
    ) {
        let slot = self.slot_mut(side);
        let reload = slot.data.is_some();
        slot.loading = None;
        match result {
            Ok(input) => {
                slot.error = None;
                slot.data = Some(Loaded { index, model, ..Loaded::new(input) });
                if reload {
                    self.message = Some(format!("reloaded {}", self.slot(side).arg.display()));
                }
                if side == Side::Main {
                    self.refresh_main();
                    // The trace may have changed with the profile.
                    self.reset_timeline();
                }
                self.panes.compare.recompute(&self.main, &self.other);
            }
            Err(e) => {
                let msg = e.to_string();
                // Do not retry the same broken file every second.
                if let Some(d) = slot.data.as_mut() {
                    d.mtime = std::fs::metadata(&d.input.path).and_then(|m| m.modified()).ok();
                }
                if side == Side::Main {
                    for d in self.job.iter_mut().flat_map(|j| j.ranks.iter_mut()) {
                        d.mtime = std::fs::metadata(&d.input.path).and_then(|m| m.modified()).ok();
                    }
                }
                let slot = self.slot_mut(side);
                slot.error = Some(msg.clone());
                self.message = Some(if reload {
                    format!("reload failed, showing the previous data: {msg}")
                } else {
                    msg
                });
            }
        }
    }

    /// The terminal's size changed (and at start): sets what depends on it.
    pub fn resize(&mut self, _width: u16, height: u16) {
        self.page = crate::panes::page_rows(height);
    }

    /// Re-runs every pane's lens over the main profile with the current
    /// filters; a phase filter the new profile lacks is dropped, and said.
    fn refresh_main(&mut self) {
        if self.main.data.is_none() {
            return;
        }
        let ctx = ctx!(self);
        let dropped: Vec<String> =
            self.panes.all_mut().into_iter().filter_map(|p| p.refresh(&ctx)).collect();
        if !dropped.is_empty() {
            self.message = Some(format!(
                "phase {} is gone from the new profile: filter dropped",
                dropped.join(", ")
            ));
        }
    }

    /// Takes the worker's answers; true when the screen changed.
    pub fn poll_worker(&mut self) -> bool {
        let mut changed = false;
        while let Some((id, result)) = self.worker.as_ref().and_then(|w| w.done().try_recv().ok()) {
            changed |= self.panes.kernels.answered(id, result);
        }
        changed
    }

    /// Handles one key press.
    pub fn handle_key(&mut self, key: KeyEvent) {
        self.message = None;
        if let Some(a) = input::map(key, self.editor.is_some()) {
            self.apply(a);
        }
    }

    /// Applies one action to the state: the app's own keys first, then
    /// the pane's.
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
            Action::Help => self.help = true,
            Action::Pane(p) => self.switch(p),
            Action::NextPane => self.switch(self.pane.next(self.job.is_some())),
            Action::PrevPane => self.switch(self.pane.prev(self.job.is_some())),
            Action::StartRegex => {
                // The regex of the pane on screen where it has one (its
                // keys say so: Ops, Tree, Modules…), else the Kernels pane's.
                let own = self.panes.get(self.pane).keys().iter().any(|h| h.actions.contains(&a));
                let pane = if own { self.pane } else { Pane::Kernels };
                self.switch(pane);
                let effect = self.pane_update(a);
                self.effect(effect);
            }
            Action::Reload => {
                for side in [Side::Main, Side::Other] {
                    let arg = self.slot(side).arg.clone();
                    if !arg.as_os_str().is_empty() && self.slot(side).loading.is_none() {
                        self.requests.push((side, arg));
                    }
                }
            }
            a => match self.pane_update(a) {
                // Esc that closed nothing goes back to a job's Ranks, or quits.
                Effect::Pass if a == Action::Back => {
                    if self.job.is_some() && self.pane != Pane::Ranks {
                        self.switch(Pane::Ranks);
                    } else {
                        self.quit = true;
                    }
                }
                effect => self.effect(effect),
            },
        }
    }

    /// Hands a key to the pane on screen; what it asks of the app is
    /// returned, not done (the tests hold it to the pane's help).
    pub fn pane_update(&mut self, a: Action) -> Effect {
        let ctx = ctx!(self);
        self.panes.get_mut(self.pane).update(a, &ctx)
    }

    /// Does what a pane's key asked of the app.
    fn effect(&mut self, effect: Effect) {
        match effect {
            Effect::None | Effect::Pass => {}
            Effect::Edit(ed) => self.editor = Some(ed),
            Effect::Drill { phase, kernels: true } => {
                self.panes.kernels.drill(phase, &ctx!(self));
                self.switch(Pane::Kernels);
            }
            Effect::Drill { phase, kernels: false } => {
                self.panes.ops.drill(phase.clone(), &ctx!(self));
                self.switch(Pane::Ops);
                self.message =
                    Some(format!("phase {phase} launched no GPU kernels: showing its ops"));
            }
            Effect::Step(i) => self.request_step(i),
            Effect::OpenRank(i) => {
                self.show_rank(i);
                self.switch(Pane::Summary);
            }
            Effect::ShowCall(call) => {
                if self.panes.kernels.show(&call.raw_name, self.main.data.as_ref()) {
                    self.panes.kernels.call = Some(call);
                    self.pane = Pane::Kernels;
                } else {
                    let name = call.raw_name;
                    self.message = Some(format!("{name} is not in the profile's kernel table"));
                }
            }
            Effect::Return(p) => self.switch(p),
            Effect::ShowKernelLabel(label) => {
                // Not `switch`, which closes the details.
                if self.panes.kernels.show_label(&label, self.main.data.as_ref()) {
                    self.pane = Pane::Kernels;
                } else {
                    self.message = Some(format!("{label} is not in the profile's kernel table"));
                }
            }
            Effect::ShowOp(op) => {
                if self.panes.ops.show(&op, &ctx!(self)) {
                    self.switch(Pane::Ops);
                } else {
                    self.message = Some(format!("{op} is not in the profile's ops table"));
                }
            }
            Effect::Callers(name) => {
                self.panes.tree.callers(&name, &ctx!(self));
                self.switch(Pane::Tree);
            }
            Effect::InTree(name) => {
                self.panes.tree.under(&name, &ctx!(self));
                self.switch(Pane::Tree);
            }
        }
    }

    fn switch(&mut self, p: Pane) {
        if p == Pane::Ranks && self.job.is_none() {
            self.message = Some(
                "not a distributed job: no Ranks or collectives; open a folder of rank traces"
                    .into(),
            );
            return;
        }
        self.pane = p;
        self.panes.kernels.detail = false;
        if p == Pane::Timeline && self.panes.timeline.unread() {
            self.request_step(0);
        }
    }

    /// Reads step `i` of the main trace for the Timeline: on the loader
    /// thread when there is one (the pane says "reading…" meanwhile).
    fn request_step(&mut self, i: usize) {
        let Some(d) = self.main.data.as_ref() else { return };
        let trace = match timeline::trace_of(&d.input, true) {
            Ok(t) => t,
            Err(why) => {
                self.panes.timeline.error = Some(why.to_string());
                return;
            }
        };
        self.step_jobs += 1;
        let tl = &mut self.panes.timeline;
        let job = StepJob {
            id: self.step_jobs,
            trace,
            index: tl.index.clone(),
            step: i,
            read: self.read.clone(),
        };
        // `timeline.step` stays the step on screen until the answer.
        tl.pending = Some(job.id);
        tl.requested = Some(i);
        match self.steps.as_ref() {
            Some(l) if l.send(job.clone()) => {}
            _ => {
                let done = job.run();
                self.step_done(done);
            }
        }
    }

    fn step_done(&mut self, (id, result): StepDone) {
        let pane = &mut self.panes.timeline;
        if pane.pending != Some(id) {
            return;
        }
        pane.pending = None;
        pane.requested = None;
        match result {
            Ok((index, step, tl)) => pane.show(index, step, tl),
            Err(e) => pane.error = Some(e),
        }
    }

    /// Takes the step loader's answers; true when the screen changed.
    pub fn poll_steps(&mut self) -> bool {
        let mut changed = false;
        while let Some(done) = self.steps.as_ref().and_then(|l| l.done.try_recv().ok()) {
            changed = true;
            self.step_done(done);
        }
        changed
    }

    fn edit(&mut self, a: Action) {
        let Some(ed) = self.editor.as_mut() else { return };
        match a {
            Action::Quit => {
                self.quit = true;
                return;
            }
            Action::Char(c) => {
                if matches!(ed.field, Field::Launches | Field::Step) && !c.is_ascii_digit() {
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
                    self.typed(pane, before.as_deref().unwrap_or_default());
                }
                return;
            }
            Action::Submit => {
                let ed = self.editor.take();
                match ed {
                    Some(Editor { field: Field::Path, text }) => self.open_other(text.trim()),
                    Some(Editor { field: Field::Step, text }) => {
                        match self.panes.timeline.step_numbered(&text) {
                            Ok(i) => self.request_step(i),
                            Err(why) => self.message = Some(why),
                        }
                    }
                    Some(Editor { field: Field::Regex { pane, .. }, .. }) => {
                        if let Some(e) = self.panes.get(pane).error() {
                            self.message = Some(e.to_string());
                        }
                    }
                    _ => {}
                }
                return;
            }
            _ => return,
        }
        // Live fields update their pane on every key.
        if let Some(pane) = ed.field.live_pane() {
            let text = ed.text.clone();
            self.typed(pane, &text);
        }
    }

    /// A live field of `pane` now holds `text`.
    fn typed(&mut self, pane: Pane, text: &str) {
        let ctx = ctx!(self);
        self.panes.get_mut(pane).typed(text, &ctx);
    }

    fn open_other(&mut self, path: &str) {
        if path.is_empty() {
            return;
        }
        match libreyolo_core::input::resolve_input(path) {
            Ok(_) => {
                self.other = Slot { arg: PathBuf::from(path), ..Default::default() };
                self.panes.compare.comparison = None;
                self.requests.push((Side::Other, PathBuf::from(path)));
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    /// Files whose modification time changed since they were loaded
    /// (live reload); the loop calls this when the file watcher reports a
    /// change in their folders.
    pub fn changed_on_disk(&self) -> Vec<(Side, PathBuf)> {
        [Side::Main, Side::Other]
            .into_iter()
            .filter_map(|side| {
                let s = self.slot(side);
                let d = s.data.as_ref()?;
                if s.loading.is_some() {
                    return None;
                }
                let changed = |d: &Loaded| {
                    std::fs::metadata(&d.input.path)
                        .and_then(|m| m.modified())
                        .ok()
                        .is_some_and(|now| Some(now) != d.mtime)
                };
                let job = self.job.as_ref().filter(|_| side == Side::Main);
                let any = job.map_or_else(|| changed(d), |j| j.ranks.iter().any(changed));
                any.then(|| (side, s.arg.clone()))
            })
            .collect()
    }

    pub fn is_loading(&self) -> bool {
        self.main.loading.is_some() || self.other.loading.is_some()
    }

    /// The files on screen, for the file watcher.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = [&self.main, &self.other]
            .into_iter()
            .filter_map(|s| s.data.as_ref().map(|d| d.input.path.clone()))
            .collect();
        files.extend(self.job.iter().flat_map(|j| j.ranks.iter().map(|r| r.input.path.clone())));
        files
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("pane", &self.pane)
            .field("main", &self.main.arg)
            .field("other", &self.other.arg)
            .finish()
    }
}
