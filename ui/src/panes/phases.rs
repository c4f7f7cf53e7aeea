//! Phases: the per-phase table of the `phases` lens; Enter drills into the
//! selected phase's kernels (or its ops when it launched none). The pane
//! owns the selected row; the drill-down is an [`Effect`] the app applies
//! to the Kernels or Ops pane.

use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{Effect, fixed, header, moved, right, window};
use crate::app::{App, Loaded};
use crate::input::Action;

#[derive(Debug, Clone, Default)]
pub struct PhasesPane {
    pub selected: usize,
}

impl PhasesPane {
    pub fn update(&mut self, a: Action, page: usize, data: Option<&Loaded>) -> Effect {
        let Some(d) = data else { return Effect::None };
        if let Some(delta) = super::movement(a, page) {
            self.selected = moved(self.selected, d.phases.phases.len(), delta);
            return Effect::None;
        }
        if a != Action::Enter {
            return Effect::None;
        }
        let Some(row) = d.phases.phases.get(self.selected) else { return Effect::None };
        let has_kernels = d.profile().kernels_by_phase.get(&row.phase).is_some_and(|k| !k.is_empty());
        Effect::Drill { phase: row.phase.clone(), kernels: has_kernels }
    }

    /// Keeps the selection on a row of a (re)loaded profile.
    pub fn clamp(&mut self, data: Option<&Loaded>) {
        self.selected = self.selected.min(data.map_or(0, |d| d.phases.phases.len().saturating_sub(1)));
    }

    pub fn render(&self, f: &mut Frame, app: &App, area: Rect) {
        render(self, f, app, area)
    }
}

fn render(pane: &PhasesPane, f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let Some(d) = &app.main.data else { return };
    let [table_area, hint] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    let rows_h = table_area.height.saturating_sub(1) as usize;
    let ph = &d.phases.phases;
    if ph.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled("no phases: the trace has no step/<phase> ranges and no GPU work", t.muted())),
            table_area,
        );
        return;
    }
    let (first, last) = window(pane.selected, ph.len(), rows_h);
    let name_w = ph.iter().map(|r| r.phase.chars().count()).max().unwrap_or(5).clamp(8, 24) as u16;
    // The bar fills what the figures leave (7 columns and their spacing).
    let bar_w = table_area.width.saturating_sub(name_w + 4 * 9 + 7 + 9 + 7) as usize;
    let bars = d.phases.bars();
    let rows = ph[first..last].iter().enumerate().map(|(i, r)| {
        let row = Row::new(vec![
            Cell::from(r.phase.clone()),
            right(fixed(r.gpu_ms_per_step, 2)),
            right(r.wall_ms_per_step.map_or("-".to_string(), |w| fixed(w, 2))),
            right(num(r.kernels_per_step, 1)),
            right(num(r.ops_per_step, 1)),
            right(r.unique_kernels.to_string()),
            right(r.memcpy_ms_per_step.map_or("-".to_string(), |m| fixed(m, 3))),
            Cell::from(Span::styled(libreyolo_core::render::text::bar(bars[first + i], bar_w.min(40)), t.accent())),
        ]);
        if first + i == pane.selected { row.style(t.selected()) } else { row }
    });
    let header = header(
        &[("phase", false), ("GPU ms", true), ("wall ms", true), ("kernels", true), ("ops", true), ("unique", true), ("memcpy ms", true)],
        t.header(),
    );
    let widths = [
        Constraint::Length(name_w),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Fill(1),
    ];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), table_area);
    let selected = ph.get(pane.selected).map_or("", |r| r.phase.as_str());
    let what = if d.profile().kernels_by_phase.get(selected).is_some_and(|k| !k.is_empty()) { "kernels" } else { "ops" };
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("per step · Enter: ", t.muted()),
            Span::styled(format!("{what} of {selected}"), t.accent()),
        ])),
        hint,
    );
}
