//! The panes, one module each: its state, its key handling and its
//! drawing, all through one [`Component`] implementation (`update`,
//! `render`; `render` only reads). Here: the table of the panes, and what
//! they share (movement, table windows, cells, the loading screen). Panes
//! only format lens results; every figure on screen comes from a lens
//! struct. The frame around them (tabs, status line, help) is `screen`'s.

pub mod collectives;
pub mod compare;
pub mod kernels;
pub mod memory;
pub mod modules;
pub mod ops;
pub mod phases;
pub mod ranks;
pub mod summary;
pub mod timeline;
pub mod tree;
pub mod whatif;

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Gauge, Paragraph, Row, Wrap};

use crate::input::Action;
use crate::slot::{Slot, display_name};
use crate::theme::Theme;
use crate::view::Component;

/// The one list of the panes: each [`Pane`], its title and the field of
/// [`Panes`] that holds its state, in Tab order (the number keys, the
/// tabs and the help's pane rows follow it). A new pane is its module and
/// its line here.
macro_rules! pane_table {
    ($($(#[$doc:meta])* $pane:ident $title:literal => $field:ident: $ty:ty,)*) => {
        /// The explorer's panes ([`Pane::JOB`]: all of them, in Tab order).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Pane {
            $($(#[$doc])* $pane,)*
        }

        impl Pane {
            /// The panes of a distributed job, in Tab order: Ranks (key
            /// `0`), then those of the rank shown ([`Pane::ALL`]).
            pub const JOB: [Pane; [$($title),*].len()] = [$(Pane::$pane),*];

            pub fn title(self) -> &'static str {
                match self {
                    $(Pane::$pane => $title,)*
                }
            }
        }

        /// Every pane's state, one field per pane.
        #[derive(Debug, Clone, Default)]
        pub struct Panes {
            $(pub $field: $ty,)*
        }

        impl Panes {
            pub fn get(&self, p: Pane) -> &dyn Component {
                match p {
                    $(Pane::$pane => &self.$field,)*
                }
            }
            pub fn get_mut(&mut self, p: Pane) -> &mut dyn Component {
                match p {
                    $(Pane::$pane => &mut self.$field,)*
                }
            }
            /// Every pane, in the table's order.
            pub fn all_mut(&mut self) -> Vec<&mut dyn Component> {
                vec![$(&mut self.$field as &mut dyn Component,)*]
            }
        }
    };
}

pane_table! {
    /// A distributed job's ranks (key `0`); only when a job is open.
    Ranks "Ranks" => ranks: ranks::RanksPane,
    Summary "Summary" => summary: summary::SummaryPane,
    Phases "Phases" => phases: phases::PhasesPane,
    Kernels "Kernels" => kernels: kernels::KernelsPane,
    Ops "Ops" => ops: ops::OpsPane,
    Compare "Compare" => compare: compare::ComparePane,
    WhatIf "What-if" => whatif: whatif::WhatIfPane,
    Timeline "Timeline" => timeline: timeline::TimelinePane,
    Memory "Memory" => memory: memory::MemoryPane,
    /// The call tree of a step (the `tree` lens).
    Tree "Tree" => tree: tree::TreePane,
    /// The model's modules, forward and backward (the `modules` lens);
    /// past the number keys: Tab reaches it.
    Modules "Modules" => modules: modules::ModulesPane,
}

/// How far a movement key moves a selection or scroll, `page` rows being a
/// page; `None` for other keys.
pub fn movement(a: Action, page: usize) -> Option<isize> {
    match a {
        Action::Up => Some(-1),
        Action::Down => Some(1),
        Action::PageUp => Some(-(page.max(1) as isize)),
        Action::PageDown => Some(page.max(1) as isize),
        Action::Top => Some(isize::MIN / 2),
        Action::Bottom => Some(isize::MAX / 2),
        _ => None,
    }
}

/// `cur` moved by `delta` within `0..len`.
pub fn moved(cur: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    (cur as isize).saturating_add(delta).clamp(0, len as isize - 1) as usize
}

/// The row of a re-sorted list (`old` → `new`, both lists of item
/// indices) holding the item that was at `selected`: the cursor stays on
/// its item across a sort.
pub fn resorted(old: &[usize], selected: usize, new: &[usize]) -> usize {
    old.get(selected).and_then(|i| new.iter().position(|o| o == i)).unwrap_or(0)
}

/// None → first → … → last → None.
pub fn cycle(options: &[String], current: Option<&str>) -> Option<String> {
    match current {
        None => options.first().cloned(),
        Some(c) => {
            let i = options.iter().position(|o| o == c)?;
            options.get(i + 1).cloned()
        }
    }
}

/// A regex that matches `name` alone: how one pane shows another's row
/// through its regex filter.
pub use libreyolo_core::lens::pattern::exactly;

/// Rows of a table page for a terminal `height` rows high: the tabs and
/// the status line take two, a table's header one more, and one is kept
/// for the pane's hint line.
pub fn page_rows(height: u16) -> usize {
    height.saturating_sub(4).max(1) as usize
}

/// The loading screen of a slot: what is read, how far, how long.
pub fn loading(f: &mut Frame, t: &Theme, slot: &Slot, area: Rect, verb: &str) {
    let [_, msg, gauge, hint, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(2),
        Constraint::Fill(1),
    ])
    .areas(area);
    let inner = |r: Rect| Rect { x: r.x + 2, width: r.width.saturating_sub(4), ..r };
    if let Some(err) = &slot.error {
        let text = vec![
            Line::styled(format!("Could not open {}", slot.arg.display()), t.warn()),
            Line::raw(err.clone()),
        ];
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner(msg));
        f.render_widget(Paragraph::new(Line::styled("r retry · q quit", t.muted())), inner(hint));
        return;
    }
    let Some(l) = &slot.loading else {
        f.render_widget(
            Paragraph::new(Line::styled(format!("{verb} {} …", slot.arg.display()), t.muted())),
            inner(msg),
        );
        return;
    };
    let secs = l.started.elapsed().as_secs_f64();
    let mut detail = format!("{secs:.1} s");
    let ratio = match (l.bar.as_ref().map(|b| b.position()), l.size) {
        _ if l.ranks.is_some() => l.ranks.as_ref().map(|(done, total)| {
            let done = done.load(std::sync::atomic::Ordering::Relaxed).min(*total);
            let mb = l.size.map_or(String::new(), |s| format!(" ({:.1} MB)", s as f64 / 1e6));
            detail.push_str(&format!(" · {done} of {total} rank traces read{mb}"));
            done as f64 / (*total).max(1) as f64
        }),
        (Some(r), Some(size)) if size > 0 => {
            let mb = |b: u64| b as f64 / 1e6;
            let done = r.min(size);
            detail.push_str(&format!(" · {:.1} of {:.1} MB read", mb(done), mb(size)));
            Some(done as f64 / size as f64)
        }
        _ => None,
    };
    let text = vec![
        Line::styled(format!("{verb} {}", display_name(&slot.arg)), t.title()),
        Line::styled(detail, t.muted()),
    ];
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner(msg));
    match ratio {
        Some(r) => f.render_widget(Gauge::default().gauge_style(t.bar()).ratio(r), inner(gauge)),
        None => {
            // No byte count (a load that reports none): a moving marker
            // shows life.
            let w = inner(gauge).width.max(1) as usize;
            let pos = ((secs * 20.0) as usize) % w;
            let bar: String = (0..w).map(|i| if i.abs_diff(pos) < 3 { '█' } else { '·' }).collect();
            f.render_widget(Paragraph::new(Line::styled(bar, t.bar())), inner(gauge));
        }
    }
    f.render_widget(Paragraph::new(Line::styled("q quit", t.muted())), inner(hint));
}

/// The rows of a table of `len` rows that fit `height`, keeping `selected`
/// in view: `(first, last_exclusive)`.
pub fn window(selected: usize, len: usize, height: usize) -> (usize, usize) {
    if height == 0 || len == 0 {
        return (0, 0);
    }
    let first = if selected < height { 0 } else { selected + 1 - height };
    (first, (first + height).min(len))
}

/// A right-aligned table cell (for figures).
pub fn right<'a>(s: impl Into<std::borrow::Cow<'a, str>>) -> Cell<'a> {
    Cell::from(Line::from(s.into()).alignment(Alignment::Right))
}

/// A header row: figures right-aligned, names left.
pub fn header<'a>(cols: &[(&'a str, bool)], style: ratatui::style::Style) -> Row<'a> {
    Row::new(cols.iter().map(|(c, r)| if *r { right(*c) } else { Cell::from(*c) })).style(style)
}

/// A fraction as a whole percentage (0.34 → "34%").
pub use libreyolo_core::render::text::pct;

/// An optional figure, or "n/a".
pub fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| libreyolo_core::render::text::num(v, digits))
}

/// A fixed-decimals figure.
pub fn fixed(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// Cuts `s` to `width` characters, marking the cut with `…`.
pub fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// A horizontal bar of `width` cells filled to `pct` percent, with eighth
/// blocks for the fractional cell.
pub fn bar(pct: f64, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = ((pct / 100.0).clamp(0.0, 1.0) * width as f64 * 8.0).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(PARTS[eighths % 8]);
    }
    let used = s.chars().count();
    s.push_str(&" ".repeat(width.saturating_sub(used)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_the_selection_visible() {
        assert_eq!(window(0, 100, 10), (0, 10));
        assert_eq!(window(9, 100, 10), (0, 10));
        assert_eq!(window(10, 100, 10), (1, 11));
        assert_eq!(window(99, 100, 10), (90, 100));
        assert_eq!(window(0, 3, 10), (0, 3));
        assert_eq!(window(0, 0, 10), (0, 0));
    }

    #[test]
    fn bars_and_clipping() {
        assert_eq!(bar(50.0, 4), "██  ");
        assert_eq!(bar(100.0, 3), "███");
        assert_eq!(bar(0.0, 2), "  ");
        assert_eq!(bar(12.5, 1), "▏");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
