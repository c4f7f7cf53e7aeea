//! Ops: the `ops` lens (aten/autograd ops by CPU time, with their self
//! time and the GPU time launched inside them where the profile has them),
//! sortable, filtered by regex, scoped to a phase. The pane owns its query
//! (with its sort), the lens result and the selection.
//! `o` shows the callers of the op under the cursor in the Tree pane.

use libreyolo_core::lens::kernels::Sort;
use libreyolo_core::lens::ops::{OpQuery, Ops, ops};
use libreyolo_core::profile::OpRow;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::kernels::{RateColumns, drop_vanished_phase, phase_names, rate_lines};
use super::{clip, cycle, exactly, fixed, header, moved, right, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::pane::Pane;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

#[derive(Debug, Clone, Default)]
pub struct OpsPane {
    pub query: OpQuery,
    pub result: Option<Ops>,
    pub error: Option<String>,
    pub selected: usize,
}

impl Component for OpsPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::StartRegex], "regex filter, applied as you type"),
            hint(&[Action::CycleSort], "cycle sort"),
            hint(&[Action::CyclePhase], "cycle phase filter"),
            hint(&[Action::ClearFilters], "clear every filter"),
            hint(&[Action::OpenOther], "the op's callers in the Tree pane"),
        ]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        if let Some(delta) = super::movement(a, ctx.page) {
            let len = self.result.as_ref().map_or(0, |o| o.ops.len());
            self.selected = moved(self.selected, len, delta);
            return Effect::None;
        }
        match a {
            Action::StartRegex => {
                let before = self.query.grep.clone();
                return Effect::Edit(Editor {
                    text: before.clone().unwrap_or_default(),
                    field: Field::Regex { pane: Pane::Ops, before },
                });
            }
            Action::CycleSort => self.query.sort = next_sort(self.query.sort, self.has_gpu()),
            Action::CyclePhase => {
                let names = phase_names(ctx.data);
                self.query.phase = cycle(&names, self.query.phase.as_deref());
            }
            Action::ClearFilters => {
                self.query = OpQuery::default();
            }
            // The callers of the op under the cursor, in the Tree pane.
            Action::OpenOther => {
                return match self.result.as_ref().and_then(|o| o.ops.get(self.selected)) {
                    Some(r) => Effect::Callers(r.op.clone()),
                    None => Effect::None,
                };
            }
            _ => return Effect::Pass,
        }
        self.requery(ctx);
        Effect::None
    }

    /// Drops a phase filter the profile lacks and re-runs the lens,
    /// keeping the selection.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        let dropped = drop_vanished_phase(&mut self.query.phase, ctx.data);
        self.rerun(ctx);
        dropped
    }

    /// The regex typed so far (live).
    fn typed(&mut self, text: &str, ctx: &Ctx<'_>) {
        self.query.grep = (!text.is_empty()).then(|| text.to_string());
        self.requery(ctx);
    }

    fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Sort, regex, phase and the match count.
    fn status(&self, view: &View<'_>) -> Vec<Span<'static>> {
        if view.main.data.is_none() {
            return Vec::new();
        }
        let t = view.theme;
        let q = &self.query;
        let mut s = vec![Span::styled(format!("sort:{}", q.sort.as_str()), t.accent())];
        if let Some(g) = &q.grep {
            s.push(Span::styled(format!(" /{g}/"), t.accent()));
        }
        if let Some(p) = &q.phase {
            s.push(Span::styled(format!(" phase:{p}"), t.accent()));
        }
        if let Some(o) = &self.result {
            s.push(Span::raw(format!(" · {} of {} ops match", o.matched, o.total)));
        }
        if let Some(e) = &self.error {
            s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
        }
        s
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(o) = &self.result else {
            let msg = self.error.clone().unwrap_or_default();
            f.render_widget(
                Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }),
                area,
            );
            return;
        };
        if o.ops.is_empty() {
            let why = if o.total == 0 {
                "no ops recorded in this scope"
            } else {
                "no op matches the filters (x clears them)"
            };
            f.render_widget(Paragraph::new(Line::styled(why, t.muted())), area);
            return;
        }
        let rates = RateColumns::of(o.ops.iter().map(|r| &r.achieved), area.width >= 110);
        // A priced op under the cursor: its formula inputs and rates below.
        let details = o.ops.get(self.selected).filter(|r| r.achieved.is_priced()).map(details_line);
        let (area, below) = match details {
            Some(_) if area.height > 4 => {
                let [top, bottom] =
                    Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(area);
                (top, Some(bottom))
            }
            _ => (area, None),
        };
        let rows_h = area.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, o.ops.len(), rows_h);
        // Self and GPU time where the profile has them (from its call
        // tree, docs/analysis.md §17).
        let own = o.ops.iter().any(|r| r.self_ms_per_step.is_some());
        let gpu = o.ops.iter().any(|r| r.gpu_ms_per_step.is_some());
        let extra = 10 * (own as u16 + gpu as u16);
        let name_w =
            area.width.saturating_sub(6 + 9 + 8 + 3 + extra + rates.width()).max(10) as usize;
        let dash = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| fixed(v, 3));
        let rows = o.ops[first..last].iter().enumerate().map(|(i, r)| {
            let mut cells = vec![right(fixed(r.pct_of_cpu_ops, 2)), right(fixed(r.ms_per_step, 3))];
            if own {
                cells.push(right(dash(r.self_ms_per_step)));
            }
            if gpu {
                cells.push(right(dash(r.gpu_ms_per_step)));
            }
            cells.push(right(num(r.count_per_step, 1)));
            cells.extend(rates.cells(&r.achieved, false));
            cells.push(Cell::from(clip(&r.op, name_w)));
            let row = Row::new(cells);
            if first + i == self.selected { row.style(t.selected()) } else { row }
        });
        let mut head = vec![("%cpu", true), ("ms/step", true)];
        let mut widths = vec![Constraint::Length(6), Constraint::Length(9)];
        for (shown, name) in [(own, "self ms"), (gpu, "GPU ms")] {
            if shown {
                head.push((name, true));
                widths.push(Constraint::Length(9));
            }
        }
        head.push(("x/step", true));
        widths.push(Constraint::Length(8));
        head.extend(rates.headers());
        head.push(("op", false));
        widths.extend(rates.widths());
        widths.push(Constraint::Fill(1));
        f.render_widget(
            Table::new(rows, widths).header(header(&head, t.header())).column_spacing(1),
            area,
        );
        if let (Some(line), Some(at)) = (details, below) {
            f.render_widget(
                Paragraph::new(Line::styled(clip(&line, at.width as usize), t.muted())),
                at,
            );
        }
    }
}

impl OpsPane {
    /// A new query from the first row.
    pub fn requery(&mut self, ctx: &Ctx<'_>) {
        self.selected = 0;
        self.rerun(ctx);
    }

    /// Phases → this phase's ops (it launched no GPU kernels).
    pub fn drill(&mut self, phase: String, ctx: &Ctx<'_>) {
        self.query.phase = Some(phase);
        self.requery(ctx);
    }

    /// Tree → the op named `op`: the list filtered to it, from the
    /// first row. False when the profile has no such op.
    pub fn show(&mut self, op: &str, ctx: &Ctx<'_>) -> bool {
        self.query = OpQuery { grep: Some(exactly(op)), ..OpQuery::default() };
        self.requery(ctx);
        let found = self.result.as_ref().is_some_and(|o| !o.ops.is_empty());
        if !found {
            self.query = OpQuery::default();
            self.requery(ctx);
        }
        found
    }

    /// Whether the profile's ops carry GPU time (the call tree's).
    fn has_gpu(&self) -> bool {
        self.result.as_ref().is_some_and(|o| o.ops.iter().any(|r| r.gpu_ms_per_step.is_some()))
    }

    fn rerun(&mut self, ctx: &Ctx<'_>) {
        let Some(p) = ctx.data.map(|d| d.profile()) else { return };
        match ops(p, &self.query) {
            Ok(o) => {
                self.selected = self.selected.min(o.ops.len().saturating_sub(1));
                self.result = Some(o);
                self.error = None;
            }
            Err(e) => self.error = Some(crate::view::refusal(&e)),
        }
    }
}

/// The Ops pane's sort after `s`: time, GPU time (where the ops carry
/// it), count, name, efficiency, and time again.
pub fn next_sort(s: Sort, gpu: bool) -> Sort {
    match s {
        Sort::Time if gpu => Sort::Gpu,
        Sort::Time | Sort::Gpu => Sort::Count,
        s => s.next(),
    }
}

/// One line on the selected priced op: shape, work, rate, roofline.
fn details_line(r: &OpRow) -> String {
    let parts: Vec<String> = rate_lines(&r.achieved, r.shape.as_deref())
        .into_iter()
        .map(|(label, v)| format!("{label} {v}"))
        .collect();
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    //! The pane on its own: its live regex field and its keys, with no `App`.

    use super::*;
    use crate::slot::{Loaded, Slot};

    #[test]
    fn the_regex_field_and_keys_without_an_app() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/reference/train_b4/profile.json"
        );
        let data =
            Loaded::new(libreyolo_core::input::load(path, Default::default()).unwrap().input);
        let other = Slot::default();
        let ctx = Ctx::of(Some(&data), &other, 10);
        let mut pane = OpsPane::default();
        assert_eq!(pane.refresh(&ctx), None, "no phase filter to drop");
        let total = pane.result.as_ref().unwrap().total;
        assert!(total > 10);

        let field = Field::Regex { pane: Pane::Ops, before: None };
        assert_eq!(
            pane.update(Action::StartRegex, &ctx),
            Effect::Edit(Editor { field, text: String::new() })
        );
        pane.typed("conv", &ctx);
        assert_eq!(pane.query.grep.as_deref(), Some("conv"));
        let matched = pane.result.as_ref().unwrap().matched;
        assert!(matched > 0 && matched < total, "{matched} of {total}");
        pane.typed("conv(", &ctx);
        assert!(pane.error().is_some(), "an unfinished regex is refused");
        assert_eq!(pane.result.as_ref().unwrap().matched, matched, "the previous result stays");
        pane.typed("", &ctx);
        assert_eq!((pane.query.grep.as_deref(), pane.error()), (None, None));

        let sort = pane.query.sort;
        assert_eq!(pane.update(Action::CycleSort, &ctx), Effect::None);
        assert_ne!(pane.query.sort, sort);
        assert_eq!(pane.update(Action::Back, &ctx), Effect::Pass, "Esc is the app's");
    }
}
