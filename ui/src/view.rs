//! The one contract of every pane: what it is given and what it gives
//! back. A pane's state implements [`Component`]: `update` handles a key
//! with a [`Ctx`] (what the app shares with key handling) and returns an
//! [`Effect`] (what it asks of the app); `render` draws it from a [`View`]
//! (what the app shares with drawing). Neither needs an `App`, so a pane is
//! built, fed keys and drawn on its own in a test.
//!
//! A leaf of the crate's import graph beside `slot`, `editor` and `job`:
//! `app` and the panes use it, it uses neither.

use libreyolo_core::profile::Profile;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;

use crate::background::Worker;
use crate::editor::Editor;
use crate::input::Action;
use crate::job::OpenJob;
use crate::slot::{Loaded, Slot};
use crate::theme::Theme;

/// What a pane's key handling may read besides its own state.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The main profile (in a job, the shown rank's), once loaded.
    pub data: Option<&'a Loaded>,
    /// The second profile's slot (Compare).
    pub other: &'a Slot,
    /// The distributed job, when one is open.
    pub job: Option<&'a OpenJob>,
    /// Rows of a table page (PgUp/PgDn), from the terminal's height.
    pub page: usize,
    /// Filters large kernel lists off the UI thread; `None` runs the lens
    /// in place (tests, small profiles).
    pub worker: Option<&'a Worker>,
    /// Kernel lists longer than this go to the worker.
    pub background_rows: usize,
}

impl<'a> Ctx<'a> {
    /// A context over one profile alone: no second profile, no job, no
    /// worker (a pane's unit test).
    pub fn of(data: Option<&'a Loaded>, other: &'a Slot, page: usize) -> Ctx<'a> {
        Ctx {
            data,
            other,
            job: None,
            page,
            worker: None,
            background_rows: crate::background::BACKGROUND_ROWS,
        }
    }
}

/// What a pane's drawing may read besides its own state.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub theme: &'a Theme,
    pub main: &'a Slot,
    pub other: &'a Slot,
    /// The distributed job, when one is open.
    pub job: Option<&'a OpenJob>,
    /// The text field being edited (a pane may show it in place).
    pub editor: Option<&'a Editor>,
}

impl<'a> View<'a> {
    /// The main profile and its lens results, once loaded.
    pub fn data(&self) -> Option<&'a Loaded> {
        self.main.data.as_ref()
    }
    pub fn profile(&self) -> Option<&'a Profile> {
        self.data().map(Loaded::profile)
    }
}

/// What a pane's key handling asks of the app, beyond its own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The key was the pane's (or did nothing); nothing for the app to do.
    None,
    /// The key is not the pane's: Esc then goes back to a job's Ranks, or
    /// quits.
    Pass,
    /// Open a text field (the status line edits it).
    Edit(Editor),
    /// Phases → the phase's kernels (or its ops when it launched none).
    Drill { phase: String, kernels: bool },
    /// Timeline: read the step at this position of the trace's steps.
    Step(usize),
    /// Timeline → the Kernels pane's details of this call's kernel, the
    /// call said; Esc there comes back.
    ShowCall(crate::panes::kernels::Call),
    /// Back to this pane, where the user came from (Esc in details opened
    /// from it).
    Return(crate::pane::Pane),
    /// Ranks → show the rank at this position of the job in the other panes.
    OpenRank(usize),
    /// Tree → the Kernels pane filtered to the kernels with this label,
    /// the first one's details open.
    ShowKernelLabel(String),
    /// Tree → the Ops pane filtered to the op with this name.
    ShowOp(String),
    /// Kernels, Ops → the Tree pane, bottom-up: the callers of the kernel
    /// label or op with this name.
    Callers(String),
    /// Modules → the Tree pane, top-down, focused on the module or
    /// annotation with this name: what runs under it.
    InTree(String),
}

/// Keys a pane gives a meaning of its own, as its part of the help shows
/// them: the actions (their keys come from the key map; a pair reads
/// "next / previous") and what they do there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHint {
    pub actions: &'static [Action],
    pub what: &'static str,
}

pub const fn hint(actions: &'static [Action], what: &'static str) -> KeyHint {
    KeyHint { actions, what }
}

/// A pane: its key handling and its drawing, with the same two signatures
/// for every pane, and hooks with defaults for what only some panes do.
pub trait Component {
    /// Handles one key: [`Effect::Pass`] for a key that is not the pane's.
    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect;

    /// The keys `update` answers beyond moving the selection, for the
    /// help. Written beside `update`, so that the two are read together;
    /// a test holds them to each other on real profiles.
    fn keys(&self) -> Vec<KeyHint>;

    /// Draws the pane into `area`. Reads only: what depends on the
    /// screen's size is set before keys are handled.
    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>);

    /// The main profile was (re)loaded, or another rank is shown: re-run
    /// the pane's lens and keep its selection on a row. Returns the phase
    /// filter it dropped because the new profile lacks that phase.
    fn refresh(&mut self, _ctx: &Ctx<'_>) -> Option<String> {
        None
    }

    /// The pane's live text field (see [`crate::editor::Field::live_pane`])
    /// now holds `text`.
    fn typed(&mut self, _text: &str, _ctx: &Ctx<'_>) {}

    /// Why the pane's last query was refused (e.g. an unfinished regex).
    fn error(&self) -> Option<&str> {
        None
    }

    /// The pane's part of the status line.
    fn status(&self, _view: &View<'_>) -> Vec<Span<'static>> {
        Vec::new()
    }
}

/// Why a pane refused its query, in one line (the status line's room): a
/// bad regex as the regex crate's last line says it ("unclosed group"),
/// without the command line's option name (it was typed after `/`).
pub fn refusal(e: &libreyolo_core::error::Error) -> String {
    let msg = e.to_string();
    let Some((_, rest)) = msg.strip_prefix("invalid --").and_then(|m| m.split_once(" regex '"))
    else {
        return msg.lines().next().unwrap_or("").to_string();
    };
    let why = match rest.split_once("': ") {
        Some((_, why)) if why.lines().count() <= 1 => why.trim(),
        _ => msg.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or(""),
    };
    format!("invalid regex: {}", why.trim_start_matches("error: "))
}

#[cfg(test)]
mod refusal_tests {
    use super::refusal;

    /// The Kernels pane's `/sgemm((` once read "invalid --grep regex
    /// 'sgemm((': regex parse error:" twice in the status line.
    #[test]
    fn a_bad_regex_is_refused_in_one_line_without_an_option_name() {
        let e = libreyolo_core::lens::kernels::compile_grep("sgemm((").unwrap_err();
        assert_eq!(refusal(&e), "invalid regex: unclosed group");
        let e = libreyolo_core::error::Error::usage("no kernel named x");
        assert_eq!(refusal(&e), "no kernel named x");
    }
}
