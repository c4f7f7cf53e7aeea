//! Keys → actions. The mapping depends only on whether a text field is
//! being edited, so it is easy to read (and the help overlay lists it).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::Pane;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Esc: closes the help, a detail view or an input; quits otherwise.
    Back,
    Help,
    Pane(Pane),
    NextPane,
    PrevPane,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Left,
    Right,
    Enter,
    CycleSort,
    CycleCategory,
    CyclePhase,
    ToggleTensorCore,
    /// `/`: edit the regex filter (live).
    StartRegex,
    /// `n`: type a launch count (What-if).
    StartLaunches,
    /// `o`: type the path of a second profile (Compare).
    OpenOther,
    ClearFilters,
    Reload,
    // While editing a field:
    Char(char),
    Backspace,
    ClearField,
    Submit,
    Cancel,
}

/// One row of the help overlay: keys and what they do.
pub const HELP: &[(&str, &str)] = &[
    ("1-6", "Summary, Phases, Kernels, Ops, Compare, What-if"),
    ("Tab / Shift-Tab", "next / previous pane"),
    ("Up/Down, j/k", "move the selection (scroll in Summary, Compare)"),
    ("PgUp/PgDn/Space", "page up / down"),
    ("g/G, Home/End", "first / last row"),
    ("Enter", "Phases: drill into the phase; Kernels: details"),
    ("s", "cycle sort: time, count, name (Kernels, Ops)"),
    ("c", "cycle category filter (Kernels); category (What-if)"),
    ("/", "regex filter, applied as you type (Kernels, Ops)"),
    ("t", "Tensor Core kernels only (Kernels)"),
    ("p", "cycle phase filter (Kernels, Ops)"),
    ("x", "clear every filter of the pane"),
    ("Left/Right, h/l", "previous / next category (What-if)"),
    ("n", "type a launch count to remove (What-if)"),
    ("o", "open a second profile to compare (Compare)"),
    ("r", "reload from disk now (also automatic on change)"),
    ("Enter/Esc/Ctrl-U", "in a text field: keep / cancel / clear"),
    ("?, F1", "this help"),
    ("Esc", "close help or details; quit"),
    ("q, Ctrl-C", "quit"),
];

/// Maps a key press. `editing` is true while a text field has the focus.
pub fn map(key: KeyEvent, editing: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c')) {
        return Some(Action::Quit);
    }
    if editing {
        return match key.code {
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc => Some(Action::Cancel),
            KeyCode::Backspace => Some(Action::Backspace),
            KeyCode::Char('u') if ctrl => Some(Action::ClearField),
            KeyCode::Char(c) if !ctrl => Some(Action::Char(c)),
            _ => None,
        };
    }
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('?') | KeyCode::F(1) => Action::Help,
        KeyCode::Char(c @ '1'..='6') => Action::Pane(Pane::ALL[(c as u8 - b'1') as usize]),
        KeyCode::Tab => Action::NextPane,
        KeyCode::BackTab => Action::PrevPane,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown | KeyCode::Char(' ') => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Top,
        KeyCode::End | KeyCode::Char('G') => Action::Bottom,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::Enter => Action::Enter,
        KeyCode::Char('s') => Action::CycleSort,
        KeyCode::Char('c') => Action::CycleCategory,
        KeyCode::Char('p') => Action::CyclePhase,
        KeyCode::Char('t') => Action::ToggleTensorCore,
        KeyCode::Char('/') => Action::StartRegex,
        KeyCode::Char('n') => Action::StartLaunches,
        KeyCode::Char('o') => Action::OpenOther,
        KeyCode::Char('x') => Action::ClearFilters,
        KeyCode::Char('r') => Action::Reload,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn letters_are_commands_unless_a_field_is_edited() {
        assert_eq!(map(k(KeyCode::Char('q')), false), Some(Action::Quit));
        assert_eq!(map(k(KeyCode::Char('q')), true), Some(Action::Char('q')));
        assert_eq!(map(k(KeyCode::Char('3')), false), Some(Action::Pane(Pane::Kernels)));
        assert_eq!(map(k(KeyCode::Esc), true), Some(Action::Cancel));
        assert_eq!(map(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), true), Some(Action::Quit));
        assert_eq!(map(k(KeyCode::F(9)), false), None);
    }
}
