//! Keys → actions. The mapping depends only on whether a text field is
//! being edited, so it is easy to read (and the help overlay lists it).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::pane::Pane;
use crate::view::{KeyHint, hint};

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

/// A key binding: the keys, how the help shows them, and the action. The
/// key map reads this table; the help reads how it shows each action's
/// keys, and what an action does from [`APP_KEYS`] (the app's own keys) or
/// the pane's [`Component::keys`](crate::view::Component::keys). The pane
/// keys `0`–`9` come from [`Pane::JOB`], `0` being the Ranks pane of a
/// distributed job.
struct Binding {
    keys: &'static [KeyCode],
    shown: &'static str,
    action: Action,
}

const fn bind(keys: &'static [KeyCode], shown: &'static str, action: Action) -> Binding {
    Binding { keys, shown, action }
}

use KeyCode::{
    BackTab, Backspace, Char, Down, End, Enter, Esc, F, Home, Left, PageDown, PageUp, Right, Tab,
    Up,
};

const BINDINGS: &[Binding] = &[
    bind(&[Tab], "Tab", Action::NextPane),
    bind(&[BackTab], "Shift-Tab", Action::PrevPane),
    bind(&[Up, Char('k')], "Up/k", Action::Up),
    bind(&[Down, Char('j')], "Down/j", Action::Down),
    bind(&[PageUp], "PgUp", Action::PageUp),
    bind(&[PageDown, Char(' ')], "PgDn/Space", Action::PageDown),
    bind(&[Home, Char('g')], "g/Home", Action::Top),
    bind(&[End, Char('G')], "G/End", Action::Bottom),
    bind(&[Enter], "Enter", Action::Enter),
    bind(&[Char('s')], "s", Action::CycleSort),
    bind(&[Char('c')], "c", Action::CycleCategory),
    bind(&[Char('/')], "/", Action::StartRegex),
    bind(&[Char('t')], "t", Action::ToggleTensorCore),
    bind(&[Char('p')], "p", Action::CyclePhase),
    bind(&[Char('x')], "x", Action::ClearFilters),
    bind(&[Left, Char('h')], "Left/h", Action::Left),
    bind(&[Right, Char('l')], "Right/l", Action::Right),
    bind(&[Char('[')], "[", Action::PrevStep),
    bind(&[Char(']')], "]", Action::NextStep),
    bind(&[Char('+'), Char('=')], "+", Action::ZoomIn),
    bind(&[Char('-')], "-", Action::ZoomOut),
    bind(&[Char('n')], "n", Action::StartLaunches),
    bind(&[Char('o')], "o", Action::OpenOther),
    bind(&[Char('r')], "r", Action::Reload),
    bind(&[Char('?'), F(1)], "?, F1", Action::Help),
    bind(&[Esc], "Esc", Action::Back),
    bind(&[Char('q')], "q, Ctrl-C", Action::Quit),
];

/// The keys of a text field (while one has the focus, letters are text).
const EDITING: &[Binding] = &[
    bind(&[Enter], "Enter", Action::Submit),
    bind(&[Esc], "Esc", Action::Cancel),
    bind(&[Backspace], "Bksp", Action::Backspace),
];

/// What the app's own keys do, and the movement every pane shares unless
/// its keys say otherwise: the help's first rows.
pub const APP_KEYS: &[KeyHint] = &[
    hint(&[Action::NextPane, Action::PrevPane], "next / previous pane"),
    hint(&[Action::Up, Action::Down], "move the selection"),
    hint(&[Action::PageUp, Action::PageDown], "page up / down"),
    hint(&[Action::Top, Action::Bottom], "first / last row"),
    hint(&[Action::Reload], "reload from disk now (also automatic on change)"),
    hint(&[Action::Help], "this help"),
    hint(&[Action::Back], "close help, details (to Timeline); back to Ranks; quit"),
    hint(&[Action::Quit], "quit"),
    hint(
        &[Action::Submit, Action::Cancel, Action::Backspace],
        "in a text field: keep / cancel / delete (Ctrl-U clears)",
    ),
];

/// The moves of a selection or scroll ([`crate::panes::movement`]): every
/// pane may take them, so the help lists them once, in [`APP_KEYS`].
pub const MOVES: [Action; 6] =
    [Action::Up, Action::Down, Action::PageUp, Action::PageDown, Action::Top, Action::Bottom];

/// The actions the app hands to the pane on screen, which its help
/// describes: every bound action but the app's own (those of
/// [`APP_KEYS`] other than the moves).
pub fn pane_actions() -> Vec<Action> {
    let apps = |a: &Action| !MOVES.contains(a) && APP_KEYS.iter().any(|h| h.actions.contains(a));
    BINDINGS.iter().map(|b| b.action).filter(|a| !apps(a)).collect()
}

/// How the help shows an action's keys (the first binding of it).
fn shown(a: Action) -> &'static str {
    BINDINGS.iter().chain(EDITING).find(|b| b.action == a).map_or("?", |b| b.shown)
}

/// One row of the help overlay: keys and what they do, or the heading of
/// the pane's own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpRow {
    pub keys: String,
    pub what: String,
    pub heading: bool,
}

fn row(h: &KeyHint) -> HelpRow {
    let keys: Vec<&str> = h.actions.iter().map(|a| shown(*a)).collect();
    HelpRow { keys: keys.join(" / "), what: h.what.to_string(), heading: false }
}

/// The help overlay's rows: the panes, the app's keys, then `pane`'s own
/// keys under its title.
pub fn help(pane: Pane, keys: &[KeyHint]) -> Vec<HelpRow> {
    // The pane keys in two rows (one is wider than the help): `0` is
    // Ranks, only in a distributed job.
    let keyed: Vec<Pane> = Pane::JOB.into_iter().filter(|p| p.key().is_some()).collect();
    let (first, rest) = keyed.split_at(keyed.len().div_ceil(2));
    let numbers = |from: usize, to: usize| format!("{from}-{}", to - 1);
    let names = |ps: &[Pane]| -> String {
        let names: Vec<&str> = ps.iter().map(|p| p.title()).collect();
        names.join(" ")
    };
    let plain = |keys: String, what: String| HelpRow { keys, what, heading: false };
    let mut rows = vec![
        plain(numbers(0, first.len()), names(first)),
        plain(numbers(first.len(), keyed.len()), names(rest)),
    ];
    // The panes past `9`, which only Tab reaches.
    let tabbed: Vec<Pane> = Pane::JOB.into_iter().filter(|p| p.key().is_none()).collect();
    if !tabbed.is_empty() {
        rows[1].what.push_str(&format!(" · Tab: {}", names(&tabbed)));
    }
    rows.extend(APP_KEYS.iter().map(row));
    let what = if keys.is_empty() { "no keys of its own" } else { "its own keys" };
    rows.push(HelpRow { keys: pane.title().to_string(), what: what.to_string(), heading: true });
    rows.extend(keys.iter().map(row));
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
        let panes = crate::panes::Panes::default();
        let pane_keys: Vec<(Pane, Vec<KeyHint>)> =
            Pane::JOB.iter().map(|p| (*p, panes.get(*p).keys())).collect();
        let listed = |a: Action| {
            APP_KEYS
                .iter()
                .chain(pane_keys.iter().flat_map(|(_, k)| k.iter()))
                .any(|h| h.actions.contains(&a))
        };
        for b in BINDINGS.iter().chain(EDITING) {
            assert!(listed(b.action), "{} is in no help", b.shown);
            for code in b.keys {
                let editing = EDITING.iter().any(|e| std::ptr::eq(e, b));
                assert_eq!(map(k(*code), editing), Some(b.action), "{code:?}");
            }
        }
        for (pane, keys) in &pane_keys {
            let help = help(*pane, keys);
            assert_eq!(help[0].keys, "0-4", "the Ranks pane and the first of one profile's");
            assert_eq!(help[1].keys, "5-9");
            assert!(help.len() <= 22, "{pane:?}: fits 80x24 with its border: {} rows", help.len());
            // And 80 columns: the keys' column, two spaces, the border.
            let key_w = help.iter().map(|r| r.keys.chars().count()).max().unwrap();
            for r in &help {
                let w = key_w + 2 + r.what.chars().count();
                assert!(w <= 78, "{pane:?}: too wide for 80 columns: {}", r.what);
            }
            // Every action a pane lists has a key in the map.
            for a in keys.iter().flat_map(|h| h.actions) {
                assert!(BINDINGS.iter().chain(EDITING).any(|b| b.action == *a), "{pane:?}: {a:?}");
            }
        }
    }
}
