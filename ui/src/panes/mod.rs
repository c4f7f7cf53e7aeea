//! The panes, one module each: its state, its key handling (`update`) and
//! its drawing (`render`, which only reads). Here: the frame around them
//! (tabs, status line, overlays) and what the panes share. Panes only
//! format lens results; every figure on screen comes from a lens struct.

pub mod collectives;
pub mod compare;
pub mod kernels;
pub mod memory;
pub mod ops;
pub mod phases;
pub mod ranks;
pub mod summary;
pub mod timeline;
pub mod whatif;

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Gauge, Paragraph, Row, Table, Wrap};

use crate::app::{App, Editor, Field, Pane, Slot, display_name};
use crate::input::Action;
use ranks::JobView;

/// What a pane's key handling asks of the app, beyond its own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    /// Open a text field (the status line edits it).
    Edit(Editor),
    /// Phases → the phase's kernels (or its ops when it launched none).
    Drill {
        phase: String,
        kernels: bool,
    },
    /// Timeline: read the step at this position of the trace's steps.
    Step(usize),
    /// Timeline → the Kernels pane's details of the kernel with this name.
    ShowKernel(String),
    /// Ranks → show the rank at this position of the job in the other panes.
    OpenRank(usize),
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

/// Rows of a table page for a terminal `height` rows high: the tabs and
/// the status line take two, a table's header one more, and one is kept
/// for the pane's hint line.
pub fn page_rows(height: u16) -> usize {
    height.saturating_sub(4).max(1) as usize
}

/// Draws the whole screen. Reads the state only: anything that depends on
/// the screen's size (the page of PgUp/PgDn) is set by the event loop
/// through [`App::resize`] before a key is handled.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    f.buffer_mut().set_style(area, app.theme.base());
    let [top, body, status] = Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(area);
    tabs(f, app, top);
    if app.main.data.is_none() {
        loading(f, app, &app.main, body, "Loading");
    } else {
        match app.pane {
            Pane::Ranks => app.ranks.render(f, app, body),
            Pane::Summary => app.summary.render(f, app, body),
            Pane::Phases => app.phases.render(f, app, body),
            Pane::Kernels => app.kernels.render(f, app, body),
            Pane::Ops => app.ops.render(f, app, body),
            Pane::Compare => app.compare.render(f, app, body),
            Pane::WhatIf => app.whatif.render(f, app, body),
            Pane::Timeline => app.timeline.render(f, app, body),
            Pane::Memory => app.memory.render(f, app, body),
        }
    }
    status_line(f, app, status);
    if app.help {
        help(f, app, area);
    }
}

fn tabs(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let tabs = Pane::tabs(app.job.is_some());
    let label = |p: Pane| format!("{} {}", p.key(), p.title());
    // Padded labels when they fit, else a single space between them.
    let padded: usize = tabs.iter().map(|p| label(*p).chars().count() + 2).sum();
    let pad = if padded <= area.width as usize { " " } else { "" };
    let mut spans = Vec::new();
    for &p in tabs {
        let label = format!("{pad}{}{pad}", label(p));
        if pad.is_empty() {
            spans.push(Span::raw(" "));
        }
        spans.push(if p == app.pane { Span::styled(label, t.selected()) } else { Span::styled(label, t.muted()) });
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let mut name = display_name(&app.main.arg);
    if !app.other.arg.is_empty() {
        name = format!("{name} vs {}", display_name(&app.other.arg));
    }
    let room = (area.width as usize).saturating_sub(used + 1);
    if room > 8 || (room > 3 && app.job.is_none()) {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(clip(&name, room), t.title()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn status_line(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    if let Some(ed) = &app.editor {
        let label = match &ed.field {
            Field::Regex { pane, .. } => format!("{} regex /", pane.title()),
            Field::Path => "second profile path: ".to_string(),
            Field::Launches => "launches to remove per step: ".to_string(),
            Field::Step => "go to step number: ".to_string(),
        };
        let err = match &ed.field {
            Field::Regex { pane: Pane::Ops, .. } => app.ops.error.as_deref(),
            Field::Regex { .. } => app.kernels.error.as_deref(),
            _ => None,
        };
        let mut spans = vec![Span::styled(label, t.accent()), Span::raw(ed.text.clone()), Span::styled("█", t.accent())];
        spans.push(Span::styled("  Enter keep · Esc cancel", t.muted()));
        if let Some(e) = err {
            spans.push(Span::styled(format!("  {}", first_line(e)), t.warn()));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let mut spans = match (&app.job, app.pane) {
        // Which rank the other panes show, on every pane of a job.
        (Some(j), Pane::Ranks) => vec![Span::styled(
            match app.ranks.view {
                JobView::Ranks => format!("{} ranks · sort:{}", j.job.ranks.len(), app.ranks.sort.as_str()),
                JobView::Collectives => {
                    format!("{} collectives · sort:{}", j.collectives.collectives.len(), app.ranks.collectives.sort.as_str())
                }
            },
            t.accent(),
        )],
        (Some(j), _) => {
            let k = j.shown_rank();
            let mut what = format!("rank {k} of {}", j.job.ranks.len());
            let tags: Vec<&str> = [(Some(k) == j.job.critical_rank, "slowest"), (j.straggler(k).is_some(), "straggler")]
                .into_iter()
                .filter(|t| t.0)
                .map(|t| t.1)
                .collect();
            if !tags.is_empty() {
                what.push_str(&format!(" ({})", tags.join(", ")));
            }
            vec![Span::styled(what, t.title()), Span::raw(" ")]
        }
        (None, _) => Vec::new(),
    };
    spans.extend(match app.pane {
        Pane::Kernels if app.main.data.is_some() => kernels::status(app),
        Pane::Ops if app.main.data.is_some() => ops::status(app),
        _ => Vec::new(),
    });
    if app.is_loading() && app.main.data.is_some() {
        spans.push(Span::styled(" reloading…", t.warn()));
    }
    if let Some(m) = &app.message {
        spans.push(Span::styled(format!(" {}", first_line(m)), t.warn()));
    }
    let hint = " ? help · q quit";
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let gap = (area.width as usize).saturating_sub(used + hint.len());
    if gap > 0 {
        spans.push(Span::raw(" ".repeat(gap)));
        spans.push(Span::styled(hint, t.muted()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The loading screen of a slot: what is read, how far, how long.
pub fn loading(f: &mut Frame, app: &App, slot: &Slot, area: Rect, verb: &str) {
    let t = &app.theme;
    let [_, msg, gauge, hint, _] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(3), Constraint::Length(1), Constraint::Length(2), Constraint::Fill(1)])
            .areas(area);
    let inner = |r: Rect| Rect { x: r.x + 2, width: r.width.saturating_sub(4), ..r };
    if let Some(err) = &slot.error {
        let text = vec![Line::styled(format!("Could not open {}", slot.arg), t.warn()), Line::raw(err.clone())];
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner(msg));
        f.render_widget(Paragraph::new(Line::styled("r retry · q quit", t.muted())), inner(hint));
        return;
    }
    let Some(l) = &slot.loading else {
        f.render_widget(Paragraph::new(Line::styled(format!("{verb} {} …", slot.arg), t.muted())), inner(msg));
        return;
    };
    let secs = l.started.elapsed().as_secs_f64();
    let mut detail = format!("{secs:.1} s");
    let ratio = match (l.read, l.size) {
        _ if l.ranks.is_some() => l.ranks.as_ref().map(|(done, total)| {
            let done = done.load(std::sync::atomic::Ordering::Relaxed).min(*total);
            let mb = l.size.map_or(String::new(), |s| format!(" ({:.1} MB)", s as f64 / 1e6));
            detail.push_str(&format!(" · {done} of {total} rank traces read{mb}"));
            done as f64 / (*total).max(1) as f64
        }),
        (Some(r), Some(size)) if size > 0 => {
            let mb = |b: u64| b as f64 / 1e6;
            // The analysis reads the file twice when ranges follow the work.
            let (done, pass) = if r > size { (r - size, " · second pass") } else { (r, "") };
            let done = done.min(size);
            detail.push_str(&format!(" · {:.1} of {:.1} MB read{pass}", mb(done), mb(size)));
            Some(done as f64 / size as f64)
        }
        _ => None,
    };
    let text = vec![Line::styled(format!("{verb} {}", display_name(&slot.arg)), t.title()), Line::styled(detail, t.muted())];
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner(msg));
    match ratio {
        Some(r) => f.render_widget(Gauge::default().gauge_style(t.bar()).ratio(r), inner(gauge)),
        None => {
            // No byte count on this platform: a moving marker shows life.
            let w = inner(gauge).width.max(1) as usize;
            let pos = ((secs * 20.0) as usize) % w;
            let bar: String = (0..w).map(|i| if i.abs_diff(pos) < 3 { '█' } else { '·' }).collect();
            f.render_widget(Paragraph::new(Line::styled(bar, t.bar())), inner(gauge));
        }
    }
    f.render_widget(Paragraph::new(Line::styled("q quit", t.muted())), inner(hint));
}

fn help(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let help = crate::input::help();
    let key_w = help.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0) as u16;
    // The whole width of an 80-column terminal: the pane list fills its row.
    let width = area.width.min(80);
    let height = (help.len() as u16 + 2).min(area.height);
    let popup = Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
    f.render_widget(Clear, popup);
    let rows = help.into_iter().map(|(k, d)| Row::new(vec![Span::styled(k, t.accent()), Span::raw(d)]));
    let table = Table::new(rows, [Constraint::Length(key_w), Constraint::Fill(1)])
        .column_spacing(2)
        .style(t.base())
        .block(Block::default().borders(Borders::ALL).border_style(t.border()).title(Span::styled(" keys (any key closes) ", t.title())));
    f.render_widget(table, popup);
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

fn first_line(s: &str) -> &str {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
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
