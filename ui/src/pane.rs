//! The explorer's panes, in the order of the number keys and Tab. Its own
//! module so that the key map (`input`) and the state (`app`) both use it
//! without depending on each other.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// A distributed job's ranks (key `0`); only when a job is open.
    Ranks,
    Summary,
    Phases,
    Kernels,
    Ops,
    Compare,
    WhatIf,
    Timeline,
    Memory,
    /// The call tree of a step (the `tree` lens).
    Tree,
}

impl Pane {
    /// The panes of a distributed job, in Tab order: Ranks (key `0`), then
    /// those of the rank shown. The one list of the panes: [`Pane::ALL`] is
    /// its tail.
    pub const JOB: [Pane; 10] = [
        Pane::Ranks,
        Pane::Summary,
        Pane::Phases,
        Pane::Kernels,
        Pane::Ops,
        Pane::Compare,
        Pane::WhatIf,
        Pane::Timeline,
        Pane::Memory,
        Pane::Tree,
    ];
    /// The panes of one profile, keys `1`–`9`.
    pub const ALL: &'static [Pane] = Pane::JOB.split_at(1).1;

    /// The tabs, in Tab order: with Ranks first when a job is open.
    pub fn tabs(job: bool) -> &'static [Pane] {
        if job { &Pane::JOB } else { Pane::ALL }
    }

    pub fn title(self) -> &'static str {
        match self {
            Pane::Ranks => "Ranks",
            Pane::Summary => "Summary",
            Pane::Phases => "Phases",
            Pane::Kernels => "Kernels",
            Pane::Ops => "Ops",
            Pane::Compare => "Compare",
            Pane::WhatIf => "What-if",
            Pane::Timeline => "Timeline",
            Pane::Memory => "Memory",
            Pane::Tree => "Tree",
        }
    }
    /// The number key that shows the pane (`0` for Ranks).
    pub fn key(self) -> char {
        match Pane::ALL.iter().position(|p| *p == self) {
            Some(i) => char::from(b'1' + i as u8),
            None => '0',
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
