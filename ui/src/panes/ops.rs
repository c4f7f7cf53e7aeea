//! Ops: the `ops` lens (aten/autograd ops by CPU time), sortable, filtered
//! by regex, scoped to a phase. The pane owns its query (with its sort), the lens
//! result and the selection.

use libreyolo_core::lens::ops::{OpQuery, Ops, ops};
use libreyolo_core::profile::OpRow;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::kernels::{RateColumns, phase_names, rate_lines};
use super::{clip, cycle, fixed, header, moved, right, window};
use crate::app::{App, Loaded};
use crate::input::Action;

#[derive(Debug, Clone, Default)]
pub struct OpsPane {
    pub query: OpQuery,
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
            Action::CycleSort => self.query.sort = self.query.sort.next(),
            Action::CyclePhase => {
                let names = phase_names(data);
                self.query.phase = cycle(&names, self.query.phase.as_deref());
            }
            Action::ClearFilters => {
                self.query = OpQuery::default();
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
            Ok(o) => {
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
    let rates = RateColumns::of(o.ops.iter().map(|r| &r.achieved), area.width >= 110);
    // A priced op under the cursor: its formula inputs and rates below.
    let details = o.ops.get(pane.selected).filter(|r| r.achieved.is_priced()).map(details_line);
    let (area, below) = match details {
        Some(_) if area.height > 4 => {
            let [top, bottom] = Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(area);
            (top, Some(bottom))
        }
        _ => (area, None),
    };
    let rows_h = area.height.saturating_sub(1) as usize;
    let (first, last) = window(pane.selected, o.ops.len(), rows_h);
    let name_w = area.width.saturating_sub(6 + 9 + 8 + 3 + rates.width()).max(10) as usize;
    let rows = o.ops[first..last].iter().enumerate().map(|(i, r)| {
        let mut cells = vec![right(fixed(r.pct_of_cpu_ops, 2)), right(fixed(r.ms_per_step, 3)), right(num(r.count_per_step, 1))];
        cells.extend(rates.cells(&r.achieved));
        cells.push(Cell::from(clip(&r.op, name_w)));
        let row = Row::new(cells);
        if first + i == pane.selected { row.style(t.selected()) } else { row }
    });
    let mut head = vec![("%cpu", true), ("ms/step", true), ("x/step", true)];
    head.extend(rates.headers());
    head.push(("op", false));
    let mut widths = vec![Constraint::Length(6), Constraint::Length(9), Constraint::Length(8)];
    widths.extend(rates.widths());
    widths.push(Constraint::Fill(1));
    f.render_widget(Table::new(rows, widths).header(header(&head, t.header())).column_spacing(1), area);
    if let (Some(line), Some(at)) = (details, below) {
        f.render_widget(Paragraph::new(Line::styled(clip(&line, at.width as usize), t.muted())), at);
    }
}

/// One line on the selected priced op: shape, work, rate, roofline.
fn details_line(r: &OpRow) -> String {
    let parts: Vec<String> = rate_lines(&r.achieved, r.shape.as_deref()).into_iter().map(|(label, v)| format!("{label} {v}")).collect();
    parts.join(" · ")
}

/// The status line: sort, regex, phase and the match count.
pub fn status(app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let pane = &app.ops;
    let q = &pane.query;
    let mut s = vec![Span::styled(format!("sort:{}", pane.query.sort.as_str()), t.accent())];
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
