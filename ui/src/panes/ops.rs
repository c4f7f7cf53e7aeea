//! Ops: the `ops` lens (aten/autograd ops by CPU time), sortable, filtered
//! by regex, scoped to a phase. The pane owns its query, sort, the lens
//! result and the selection.

use libreyolo_core::lens::kernels::Sort;
use libreyolo_core::lens::ops::{OpQuery, Ops, ops};
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::kernels::phase_names;
use super::{clip, cycle, fixed, header, moved, right, window};
use crate::app::{App, Loaded};
use crate::input::Action;

#[derive(Debug, Clone, Default)]
pub struct OpsPane {
    pub query: OpQuery,
    pub sort: Sort,
    pub result: Option<Ops>,
    pub error: Option<String>,
    pub selected: usize,
}

impl OpsPane {
    /// Handles a key; true when it was the pane's.
    pub fn update(&mut self, a: Action, page: usize, data: Option<&Loaded>) -> bool {
        if let Some(delta) = super::movement(a, page) {
            let len = self.result.as_ref().map_or(0, |o| o.ops.len());
            self.selected = moved(self.selected, len, delta);
            return true;
        }
        match a {
            Action::CycleSort => self.sort = self.sort.next(),
            Action::CyclePhase => {
                let names = phase_names(data);
                self.query.phase = cycle(&names, self.query.phase.as_deref());
            }
            Action::ClearFilters => {
                self.query = OpQuery::default();
                self.sort = Sort::Time;
            }
            _ => return false,
        }
        self.requery(data);
        true
    }

    /// A new query from the first row.
    pub fn requery(&mut self, data: Option<&Loaded>) {
        self.selected = 0;
        self.refresh(data);
    }

    pub fn refresh(&mut self, data: Option<&Loaded>) {
        let Some(p) = data.map(Loaded::profile) else { return };
        match ops(p, &self.query) {
            Ok(mut o) => {
                // The lens orders by time; other orders only rearrange its rows.
                match self.sort {
                    Sort::Time => {}
                    Sort::Count => o.ops.sort_by(|a, b| b.count_per_step.total_cmp(&a.count_per_step).then_with(|| a.op.cmp(&b.op))),
                    Sort::Name => o.ops.sort_by(|a, b| a.op.cmp(&b.op)),
                }
                self.selected = self.selected.min(o.ops.len().saturating_sub(1));
                self.result = Some(o);
                self.error = None;
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    pub fn render(&self, f: &mut Frame, app: &App, area: Rect) {
        render(self, f, app, area)
    }
}

fn render(pane: &OpsPane, f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let Some(o) = &pane.result else {
        let msg = pane.error.clone().unwrap_or_default();
        f.render_widget(Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }), area);
        return;
    };
    if o.ops.is_empty() {
        let why = if o.total == 0 { "no ops recorded in this scope" } else { "no op matches the filters (x clears them)" };
        f.render_widget(Paragraph::new(Line::styled(why, t.muted())), area);
        return;
    }
    let rows_h = area.height.saturating_sub(1) as usize;
    let (first, last) = window(pane.selected, o.ops.len(), rows_h);
    let name_w = area.width.saturating_sub(6 + 9 + 8 + 3).max(10) as usize;
    let rows = o.ops[first..last].iter().enumerate().map(|(i, r)| {
        let row = Row::new(vec![
            right(fixed(r.pct_of_cpu_ops, 2)),
            right(fixed(r.ms_per_step, 3)),
            right(num(r.count_per_step, 1)),
            Cell::from(clip(&r.op, name_w)),
        ]);
        if first + i == pane.selected { row.style(t.selected()) } else { row }
    });
    let header = header(&[("%cpu", true), ("ms/step", true), ("x/step", true), ("op", false)], t.header());
    let widths = [Constraint::Length(6), Constraint::Length(9), Constraint::Length(8), Constraint::Fill(1)];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
}

/// The status line: sort, regex, phase and the match count.
pub fn status(app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let pane = &app.ops;
    let q = &pane.query;
    let mut s = vec![Span::styled(format!("sort:{}", pane.sort.as_str()), t.accent())];
    if let Some(g) = &q.grep {
        s.push(Span::styled(format!(" /{g}/"), t.accent()));
    }
    if let Some(p) = &q.phase {
        s.push(Span::styled(format!(" phase:{p}"), t.accent()));
    }
    if let Some(o) = &pane.result {
        s.push(Span::raw(format!(" · {} of {} ops match", o.matched, o.total)));
    }
    if let Some(e) = &pane.error {
        s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
    }
    s
}
