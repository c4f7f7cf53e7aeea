//! Ops: the `ops` lens (aten/autograd ops by CPU time), sortable, filtered
//! by regex, scoped to a phase.

use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::{clip, fixed, header, right, window};
use crate::app::App;

pub fn render(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let Some(o) = &app.ops.result else {
        let msg = app.ops.error.clone().unwrap_or_default();
        f.render_widget(Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }), area);
        return;
    };
    if o.ops.is_empty() {
        let why = if o.total == 0 { "no ops recorded in this scope" } else { "no op matches the filters (x clears them)" };
        f.render_widget(Paragraph::new(Line::styled(why, t.muted())), area);
        return;
    }
    let rows_h = area.height.saturating_sub(1) as usize;
    let (first, last) = window(app.ops.selected, o.ops.len(), rows_h);
    let name_w = area.width.saturating_sub(6 + 9 + 8 + 3).max(10) as usize;
    let rows = o.ops[first..last].iter().enumerate().map(|(i, r)| {
        let row = Row::new(vec![
            right(fixed(r.pct_of_cpu_ops, 2)),
            right(fixed(r.ms_per_step, 3)),
            right(num(r.count_per_step, 1)),
            Cell::from(clip(&r.op, name_w)),
        ]);
        if first + i == app.ops.selected { row.style(t.selected()) } else { row }
    });
    let header = header(&[("%cpu", true), ("ms/step", true), ("x/step", true), ("op", false)], t.header());
    let widths = [Constraint::Length(6), Constraint::Length(9), Constraint::Length(8), Constraint::Fill(1)];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
}

/// The status line: sort, regex, phase and the match count.
pub fn status(app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let q = &app.ops.query;
    let mut s = vec![Span::styled(format!("sort:{}", app.ops.sort.as_str()), t.accent())];
    if let Some(g) = &q.grep {
        s.push(Span::styled(format!(" /{g}/"), t.accent()));
    }
    if let Some(p) = &q.phase {
        s.push(Span::styled(format!(" phase:{p}"), t.accent()));
    }
    if let Some(o) = &app.ops.result {
        s.push(Span::raw(format!(" · {} of {} ops match", o.matched, o.total)));
    }
    if let Some(e) = &app.ops.error {
        s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
    }
    s
}
