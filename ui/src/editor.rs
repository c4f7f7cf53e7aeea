//! The text field of the status line: which field is edited and its text.
//! A leaf module (it knows only [`Pane`]): panes open a field through an
//! [`crate::view::Effect::Edit`], the app edits it.

use crate::pane::Pane;

/// A text field being edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The regex of a pane (Kernels, Ops; the focus of Tree and Modules);
    /// `before` is restored on Esc.
    Regex { pane: Pane, before: Option<String> },
    /// The path of a second profile.
    Path,
    /// A launch count for What-if.
    Launches,
    /// A step number for the Timeline.
    Step,
}

impl Field {
    /// The pane a live field updates on every key (the regex, the launch
    /// count); `None` for fields read only when submitted.
    pub fn live_pane(&self) -> Option<Pane> {
        match self {
            Field::Regex { pane, .. } => Some(*pane),
            Field::Launches => Some(Pane::WhatIf),
            Field::Path | Field::Step => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    pub field: Field,
    pub text: String,
}
