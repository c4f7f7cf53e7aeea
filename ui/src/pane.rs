//! The explorer's panes, in the order of the number keys and Tab. Its own
//! module so that the key map (`input`) and the state (`app`) both use it
//! without depending on each other.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Summary,
    Phases,
    Kernels,
    Ops,
    Compare,
    WhatIf,
    Timeline,
}

impl Pane {
    pub const ALL: [Pane; 7] = [Pane::Summary, Pane::Phases, Pane::Kernels, Pane::Ops, Pane::Compare, Pane::WhatIf, Pane::Timeline];

    pub fn title(self) -> &'static str {
        match self {
            Pane::Summary => "Summary",
            Pane::Phases => "Phases",
            Pane::Kernels => "Kernels",
            Pane::Ops => "Ops",
            Pane::Compare => "Compare",
            Pane::WhatIf => "What-if",
            Pane::Timeline => "Timeline",
        }
    }
    pub fn index(self) -> usize {
        Pane::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
    pub fn next(self) -> Pane {
        Pane::ALL[(self.index() + 1) % Pane::ALL.len()]
    }
    pub fn prev(self) -> Pane {
        Pane::ALL[(self.index() + Pane::ALL.len() - 1) % Pane::ALL.len()]
    }
}
