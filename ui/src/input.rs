//! Keys → actions. The mapping depends only on whether a text field is
//! being edited, so it is easy to read (and the help overlay lists it).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::pane::Pane;

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
    /// `[` / `]`: previous / next step (Timeline).
    PrevStep,
    NextStep,
    /// `+` / `-`: zoom the Timeline in / out.
    ZoomIn,
    ZoomOut,
    // While editing a field:
    Char(char),
    Backspace,
    ClearField,
    Submit,
    Cancel,
}

/// A key binding outside text fields: the keys, how the help shows them,
/// the action and what it does. The key map and the help overlay are both
/// read from this one table (the pane keys `0`–`9` come from [`Pane::JOB`],
/// `0` being the Ranks pane of a distributed job, whose collectives view
/// `c` turns to).
/// An empty `help` shares the previous binding's row ("next / previous").
struct Binding {
    keys: &'static [KeyCode],
    shown: &'static str,
    action: Action,
    help: &'static str,
}

const fn bind(
    keys: &'static [KeyCode],
    shown: &'static str,
    action: Action,
    help: &'static str,
) -> Binding {
    Binding { keys, shown, action, help }
}

use KeyCode::{
    BackTab, Backspace, Char, Down, End, Enter, Esc, F, Home, Left, PageDown, PageUp, Right, Tab,
    Up,
};

const BINDINGS: &[Binding] = &[
    bind(&[Tab], "Tab", Action::NextPane, "next / previous pane"),
    bind(&[BackTab], "Shift-Tab", Action::PrevPane, ""),
    bind(&[Up, Char('k')], "Up/k", Action::Up, "move the selection (scroll in Summary, Compare)"),
    bind(&[Down, Char('j')], "Down/j", Action::Down, ""),
    bind(&[PageUp], "PgUp", Action::PageUp, "page up / down"),
    bind(&[PageDown, Char(' ')], "PgDn/Space", Action::PageDown, ""),
    bind(
        &[Home, Char('g')],
        "g/Home",
        Action::Top,
        "first / last row (Timeline: g types a step number)",
    ),
    bind(&[End, Char('G')], "G/End", Action::Bottom, ""),
    bind(
        &[Enter],
        "Enter",
        Action::Enter,
        "details; Ranks: the rank; Phases: its kernels; Tree: fold",
    ),
    bind(
        &[Char('s')],
        "s",
        Action::CycleSort,
        "cycle sort (Kernels, Ops, Tree, Ranks, collectives)",
    ),
    bind(
        &[Char('c')],
        "c",
        Action::CycleCategory,
        "Kernels, What-if: category; Tree: by; Ranks ⇄ collectives",
    ),
    bind(
        &[Char('/')],
        "/",
        Action::StartRegex,
        "regex filter, applied as you type (Kernels, Ops, Tree)",
    ),
    bind(
        &[Char('t')],
        "t",
        Action::ToggleTensorCore,
        "Tensor Core kernels only (Kernels); bottom-up (Tree)",
    ),
    bind(&[Char('p')], "p", Action::CyclePhase, "cycle phase filter (Kernels, Ops, Tree)"),
    bind(&[Char('x')], "x", Action::ClearFilters, "clear every filter of the pane"),
    bind(
        &[Left, Char('h')],
        "Left/h",
        Action::Left,
        "What-if: category; Timeline: span; Tree: close / open",
    ),
    bind(&[Right, Char('l')], "Right/l", Action::Right, ""),
    bind(&[Char('[')], "[", Action::PrevStep, "previous / next step; zoom in / out (Timeline)"),
    bind(&[Char(']')], "]", Action::NextStep, ""),
    bind(&[Char('+'), Char('=')], "+", Action::ZoomIn, ""),
    bind(&[Char('-')], "-", Action::ZoomOut, ""),
    bind(&[Char('n')], "n", Action::StartLaunches, "type a launch count to remove (What-if)"),
    bind(
        &[Char('o')],
        "o",
        Action::OpenOther,
        "Compare: open a second profile; Tree ⇄ Kernels, Ops",
    ),
    bind(&[Char('r')], "r", Action::Reload, "reload from disk now (also automatic on change)"),
    bind(&[Char('?'), F(1)], "?, F1", Action::Help, "this help"),
    bind(&[Esc], "Esc", Action::Back, "close help, details (to Timeline); back to Ranks; quit"),
    bind(&[Char('q')], "q, Ctrl-C", Action::Quit, "quit"),
];

/// The keys of a text field (while one has the focus, letters are text).
const EDITING: &[Binding] = &[
    bind(
        &[Enter],
        "Enter",
        Action::Submit,
        "in a text field: keep / cancel / delete (Ctrl-U clears)",
    ),
    bind(&[Esc], "Esc", Action::Cancel, ""),
    bind(&[Backspace], "Bksp", Action::Backspace, ""),
];

/// The help overlay's rows, from the tables the key map reads.
pub fn help() -> Vec<(String, String)> {
    // The pane keys in two rows (one is wider than the help): `0` is
    // Ranks, only in a distributed job.
    let keyed: Vec<Pane> = Pane::JOB.into_iter().filter(|p| p.key().is_some()).collect();
    let (first, rest) = keyed.split_at(keyed.len().div_ceil(2));
    let keys = |from: usize, to: usize| format!("{from}-{}", to - 1);
    let names = |ps: &[Pane]| -> String {
        let names: Vec<&str> = ps.iter().map(|p| p.title()).collect();
        names.join(" ").replacen("Ranks", "Ranks (c: its collectives)", 1)
    };
    let mut rows =
        vec![(keys(0, first.len()), names(first)), (keys(first.len(), keyed.len()), names(rest))];
    // The panes past `9`, which only Tab reaches.
    let tabbed: Vec<Pane> = Pane::JOB.into_iter().filter(|p| p.key().is_none()).collect();
    if !tabbed.is_empty() {
        rows[1].1.push_str(&format!(" · Tab: {}", names(&tabbed)));
    }
    for b in BINDINGS.iter().chain(EDITING) {
        match rows.last_mut() {
            Some((keys, _)) if b.help.is_empty() => *keys = format!("{keys} / {}", b.shown),
            _ => rows.push((b.shown.to_string(), b.help.to_string())),
        }
    }
    rows
}

/// Maps a key press. `editing` is true while a text field has the focus.
pub fn map(key: KeyEvent, editing: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, Char('c')) {
        return Some(Action::Quit);
    }
    let lookup =
        |table: &[Binding]| table.iter().find(|b| b.keys.contains(&key.code)).map(|b| b.action);
    if editing {
        return match key.code {
            Char('u') if ctrl => Some(Action::ClearField),
            Char(c) if !ctrl => Some(Action::Char(c)),
            _ => lookup(EDITING),
        };
    }
    if key.code == Char('0') {
        return Some(Action::Pane(Pane::Ranks));
    }
    if let Char(c @ '1'..='9') = key.code {
        return Pane::ALL.get((c as u8 - b'1') as usize).map(|p| Action::Pane(*p));
    }
    lookup(BINDINGS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn letters_are_commands_unless_a_field_is_edited() {
        assert_eq!(map(k(Char('q')), false), Some(Action::Quit));
        assert_eq!(map(k(Char('q')), true), Some(Action::Char('q')));
        assert_eq!(map(k(Char('3')), false), Some(Action::Pane(Pane::Kernels)));
        assert_eq!(map(k(Esc), true), Some(Action::Cancel));
        assert_eq!(map(KeyEvent::new(Char('c'), KeyModifiers::CONTROL), true), Some(Action::Quit));
        assert_eq!(map(k(F(9)), false), None);
        assert_eq!(map(k(Char('7')), false), Some(Action::Pane(Pane::Timeline)));
        assert_eq!(map(k(Char('8')), false), Some(Action::Pane(Pane::Memory)));
        assert_eq!(map(k(Char('9')), false), Some(Action::Pane(Pane::Tree)));
        assert_eq!(map(k(Char('0')), false), Some(Action::Pane(Pane::Ranks)));
    }

    #[test]
    fn the_help_lists_every_binding_of_the_key_map() {
        let help = help();
        let keys: Vec<&str> = help.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys[0], "0-4", "the Ranks pane and the first of one profile's");
        assert_eq!(keys[1], "5-9");
        for b in BINDINGS.iter().chain(EDITING) {
            assert!(
                keys.iter().any(|k| k.split(" / ").any(|s| s == b.shown)),
                "{} missing from the help: {keys:?}",
                b.shown
            );
            for code in b.keys {
                let editing = EDITING.iter().any(|e| std::ptr::eq(e, b));
                assert_eq!(map(k(*code), editing), Some(b.action), "{code:?}");
            }
        }
        assert!(help.len() <= 22, "fits 80x24 with its border: {} rows", help.len());
        // And 80 columns: the keys' column, two spaces, the border.
        let key_w = help.iter().map(|(k, _)| k.chars().count()).max().unwrap();
        for (_, what) in &help {
            assert!(key_w + 2 + what.chars().count() <= 78, "too wide for 80 columns: {what}");
        }
    }
}
