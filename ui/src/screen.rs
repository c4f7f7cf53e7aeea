//! The whole screen: the tab bar, the pane on screen (drawn through its
//! [`crate::view::Component::render`]), the status line and the help
//! overlay. Reads the app only: anything that depends on the screen's size
//! (the page of PgUp/PgDn) is set by the event loop through
//! [`App::resize`] before a key is handled.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table};

use crate::app::App;
use crate::editor::Field;
use crate::pane::Pane;
use crate::panes::{clip, loading};
use crate::slot::display_name;

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    f.buffer_mut().set_style(area, app.theme.base());
    let [top, body, status] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)])
            .areas(area);
    tabs(f, app, top);
    if app.main.data.is_none() {
        loading(f, &app.theme, &app.main, body, "Loading");
    } else {
        app.panes.get(app.pane).render(f, body, &app.view());
    }
    status_line(f, app, status);
    if app.help {
        help(f, app, area);
    }
}

fn tabs(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let tabs = Pane::tabs(app.job.is_some());
    // Padded labels when they fit, else a single space between them, else
    // (80 columns) no space between a tab's key and its title, else (80
    // columns and a job) the tabs around the pane on screen, `…` marking
    // those left out. A pane past `9` has no key.
    let width = |label: &dyn Fn(Pane) -> String, extra: usize| -> usize {
        tabs.iter().map(|p| label(*p).chars().count() + extra).sum()
    };
    let keyed = |p: Pane, sep: &str| p.key().map_or(String::new(), |k| format!("{k}{sep}"));
    let spaced = |p: Pane| format!("{}{}", keyed(p, " "), p.title());
    let tight = |p: Pane| format!("{}{}", keyed(p, ""), p.title());
    let w = area.width as usize;
    let (label, pad): (&dyn Fn(Pane) -> String, &str) = if width(&spaced, 2) <= w {
        (&spaced, " ")
    } else if width(&spaced, 1) <= w {
        (&spaced, "")
    } else {
        (&tight, "")
    };
    let n = tabs.len();
    let lens: Vec<usize> = tabs.iter().map(|p| label(*p).chars().count() + 2 * pad.len()).collect();
    let sep = usize::from(pad.is_empty());
    let shown_w = |lo: usize, hi: usize| {
        let marks = usize::from(lo > 0) + usize::from(hi < n);
        lens[lo..hi].iter().sum::<usize>() + (hi - lo - 1) * sep + marks
    };
    let at = tabs.iter().position(|p| *p == app.pane).unwrap_or(0);
    let (mut lo, mut hi) = (0, n);
    while hi > at + 1 && shown_w(lo, hi) > w {
        hi -= 1;
    }
    while lo < at && shown_w(lo, hi) > w {
        lo += 1;
    }
    let mut spans = Vec::new();
    if lo > 0 {
        spans.push(Span::styled("…", t.muted()));
    }
    for (i, &p) in tabs.iter().enumerate().take(hi).skip(lo) {
        let label = format!("{pad}{}{pad}", label(p));
        // One space before each tight label, but the first's where it
        // would not fit.
        if pad.is_empty() && (i > lo || (lo, hi) == (0, n) && shown_w(0, n) < w) {
            spans.push(Span::raw(" "));
        }
        spans.push(if p == app.pane {
            Span::styled(label, t.selected())
        } else {
            Span::styled(label, t.muted())
        });
    }
    if hi < n {
        spans.push(Span::styled("…", t.muted()));
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let mut name = display_name(&app.main.arg);
    if !app.other.arg.as_os_str().is_empty() {
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
            Field::Regex { pane, .. } => app.panes.get(*pane).error(),
            _ => None,
        };
        let mut spans = vec![
            Span::styled(label, t.accent()),
            Span::raw(ed.text.clone()),
            Span::styled("█", t.accent()),
        ];
        spans.push(Span::styled("  Enter keep · Esc cancel", t.muted()));
        if let Some(e) = err {
            spans.push(Span::styled(format!("  {}", first_line(e)), t.warn()));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let mut spans = match (&app.job, app.pane) {
        // Which rank the other panes show, on every pane of a job but its
        // Ranks (whose status says what it lists).
        (Some(j), p) if p != Pane::Ranks => {
            let k = j.shown_rank();
            let mut what = format!("rank {k} of {}", j.job.ranks.len());
            let tags: Vec<&str> = [
                (Some(k) == j.job.critical_rank, crate::panes::ranks::critical_mark(&j.job)),
                (j.straggler(k).is_some(), "straggler"),
            ]
            .into_iter()
            .filter(|t| t.0)
            .map(|t| t.1)
            .collect();
            if !tags.is_empty() {
                what.push_str(&format!(" ({})", tags.join(", ")));
            }
            vec![Span::styled(what, t.title()), Span::raw(" ")]
        }
        _ => Vec::new(),
    };
    spans.extend(app.panes.get(app.pane).status(&app.view()));
    if app.is_loading() && app.main.data.is_some() {
        spans.push(Span::styled(" reloading…", t.warn()));
    }
    // A message the pane's own status already gives (a refused regex) is
    // said once.
    let said = |m: &str| spans.iter().any(|s| s.content.contains(first_line(m)));
    if let Some(m) = app.message.as_deref().filter(|m| !said(m)) {
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

fn help(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let help = crate::input::help(app.pane, &app.panes.get(app.pane).keys());
    let key_w = help.iter().map(|r| r.keys.chars().count()).max().unwrap_or(0) as u16;
    // The whole width of an 80-column terminal: the pane list fills its row.
    let width = area.width.min(80);
    let height = (help.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    f.render_widget(Clear, popup);
    let rows = help.into_iter().map(|r| {
        if r.heading {
            Row::new(vec![Span::styled(r.keys, t.title()), Span::styled(r.what, t.muted())])
        } else {
            Row::new(vec![Span::styled(r.keys, t.accent()), Span::raw(r.what)])
        }
    });
    let table = Table::new(rows, [Constraint::Length(key_w), Constraint::Fill(1)])
        .column_spacing(2)
        .style(t.base())
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.border())
                .title(Span::styled(" keys (any key closes) ", t.title())),
        );
    f.render_widget(table, popup);
}

fn first_line(s: &str) -> &str {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}
