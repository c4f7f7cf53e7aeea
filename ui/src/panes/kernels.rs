//! Kernels: the `kernels` lens with its filters (category, regex, Tensor
//! Core, phase) and sort, and a detail view of one kernel on Enter.

use libreyolo_core::lens::kernels::phase_split;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::{clip, fixed, header, right, window};
use crate::app::App;

pub fn render(f: &mut Frame, app: &App, area: Rect) {
    if app.kernels.detail {
        detail(f, app, area);
        return;
    }
    let t = &app.theme;
    let Some(k) = &app.kernels.result else {
        let msg = app.kernels.error.clone().unwrap_or_default();
        f.render_widget(Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }), area);
        return;
    };
    if k.kernels.is_empty() {
        let why = if k.total == 0 {
            "no GPU kernels in this scope (a CPU profile has none: see Ops)"
        } else {
            "no kernel matches the filters (x clears them)"
        };
        f.render_widget(Paragraph::new(Line::styled(why, t.muted())), area);
        return;
    }
    let rows_h = area.height.saturating_sub(1) as usize;
    let (first, last) = window(app.kernels.selected, k.kernels.len(), rows_h);
    let wide = area.width >= 110;
    let cat_w: u16 = if wide { 18 } else { 12 };
    // Fixed columns: 6 + 9 + 7 + 2 + cat + spacing.
    let name_w = area.width.saturating_sub(6 + 9 + 7 + 2 + cat_w + 5).max(10) as usize;
    let rows = k.kernels[first..last].iter().enumerate().map(|(i, r)| {
        let row = Row::new(vec![
            right(fixed(r.pct_of_gpu, 2)),
            right(fixed(r.ms_per_step, 3)),
            right(num(r.count_per_step, 1)),
            Cell::from(if r.tensorcore { Span::styled("TC", t.accent()) } else { Span::raw("") }),
            Cell::from(clip(&r.kernel, name_w)),
            Cell::from(Span::styled(clip(&r.category, cat_w as usize), t.muted())),
        ]);
        if first + i == app.kernels.selected { row.style(t.selected()) } else { row }
    });
    let header =
        header(&[("%GPU", true), ("ms/step", true), ("x/step", true), ("TC", false), ("kernel", false), ("category", false)], t.header());
    let widths = [
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(cat_w),
    ];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
}

/// The status line: the active filters and the match count.
pub fn status(app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let q = &app.kernels.query;
    let mut s = vec![Span::styled(format!("sort:{}", q.sort.as_str()), t.accent())];
    if let Some(c) = &q.category {
        s.push(Span::styled(format!(" cat:{c}"), t.accent()));
    }
    if let Some(g) = &q.grep {
        s.push(Span::styled(format!(" /{g}/"), t.accent()));
    }
    if q.tensorcore {
        s.push(Span::styled(" TC-only", t.accent()));
    }
    if let Some(p) = &q.phase {
        s.push(Span::styled(format!(" phase:{p}"), t.accent()));
    }
    if let Some(k) = &app.kernels.result {
        s.push(Span::raw(format!(" · {} of {} match", k.matched, k.total)));
        if app.kernels.detail {
            s.push(Span::raw(format!(" · #{}", app.kernels.selected + 1)));
        }
    }
    if app.kernels.pending.is_some() {
        s.push(Span::styled(" · filtering…", t.warn()));
    }
    if let Some(e) = &app.kernels.error {
        s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
    }
    s
}

fn detail(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let (Some(k), Some(p)) = (app.selected_kernel(), app.profile()) else { return };
    let field = |label: &str, value: String| Line::from(vec![Span::styled(format!("{label:<14}"), t.header()), Span::raw(value)]);
    let mut lines = vec![Line::styled(k.kernel.clone(), t.title()), Line::raw(""), Line::styled("full name", t.header())];
    // Cut by characters, not words: a C++ signature has few spaces.
    let chars: Vec<char> = k.raw_name.chars().collect();
    for chunk in chars.chunks((area.width as usize).max(1)) {
        lines.push(Line::raw(chunk.iter().collect::<String>()));
    }
    lines.extend([
        Line::raw(""),
        field("category", k.category.clone()),
        field("Tensor Core", if k.tensorcore { "yes".into() } else { "no".into() }),
        field("share of GPU", format!("{}%", fixed(k.pct_of_gpu, 2))),
        field("ms per step", fixed(k.ms_per_step, 4)),
        field("calls/step", num(k.count_per_step, 2)),
        Line::raw(""),
    ]);
    let split = phase_split(p, &k.raw_name);
    if split.is_empty() {
        lines.push(Line::styled("no per-phase split in this profile", t.muted()));
    } else {
        lines.push(Line::styled(format!("{:<14}{:>10} {:>10} {:>8}", "phase", "ms/step", "calls/step", "%GPU"), t.header()));
        for (phase, r) in split {
            lines.push(Line::raw(format!(
                "{:<14}{:>10} {:>10} {:>8}",
                clip(&phase, 13),
                fixed(r.ms_per_step, 4),
                num(r.count_per_step, 2),
                fixed(r.pct_of_gpu, 2)
            )));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Esc/Enter: back to the list · Up/Down: previous/next kernel", t.muted()));
    f.render_widget(Paragraph::new(lines), area);
}
