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
}

impl Pane {
    /// The panes of one profile, keys `1`–`8`.
    pub const ALL: [Pane; 8] = [
        Pane::Summary,
        Pane::Phases,
        Pane::Kernels,
        Pane::Ops,
        Pane::Compare,
        Pane::WhatIf,
        Pane::Timeline,
        Pane::Memory,
    ];
    /// The panes of a distributed job: Ranks, then those of the rank shown.
    pub const JOB: [Pane; 9] = [
        Pane::Ranks,
        Pane::Summary,
        Pane::Phases,
        Pane::Kernels,
        Pane::Ops,
        Pane::Compare,
        Pane::WhatIf,
        Pane::Timeline,
        Pane::Memory,
    ];

    /// The tabs, in Tab order: with Ranks first when a job is open.
    pub fn tabs(job: bool) -> &'static [Pane] {
        if job { &Pane::JOB } else { &Pane::ALL }
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
