//! The explorer's panes, in the order of the number keys and Tab: how the
//! keys move between them. The list itself is `panes::pane_table!`, one
//! line a pane beside its state.

pub use crate::panes::Pane;

impl Pane {
    /// The panes of one profile: keys `1`–`9`, then those only Tab reaches.
    pub const ALL: &'static [Pane] = Pane::JOB.split_at(1).1;

    /// The tabs, in Tab order: with Ranks first when a job is open.
    pub fn tabs(job: bool) -> &'static [Pane] {
        if job { &Pane::JOB } else { Pane::ALL }
    }

    /// The number key that shows the pane (`0` for Ranks); `None` past
    /// `9` (Tab reaches those).
    pub fn key(self) -> Option<char> {
        match Pane::ALL.iter().position(|p| *p == self) {
            Some(i) if i < 9 => Some(char::from(b'1' + i as u8)),
            Some(_) => None,
            None => Some('0'),
        }
    }
    pub fn next(self, job: bool) -> Pane {
        let tabs = Pane::tabs(job);
        let i = tabs.iter().position(|p| *p == self).unwrap_or(0);
        tabs[(i + 1) % tabs.len()]
    }
    pub fn prev(self, job: bool) -> Pane {
        let tabs = Pane::tabs(job);
        let i = tabs.iter().position(|p| *p == self).unwrap_or(0);
        tabs[(i + tabs.len() - 1) % tabs.len()]
    }
}
