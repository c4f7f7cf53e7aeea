//! Phases: the per-phase table of the `phases` lens; Enter drills into the
//! selected phase's kernels (or its ops when it launched none). The pane
//! owns the selected row; the drill-down is an [`Effect`] the app applies
//! to the Kernels or Ops pane.

use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::{fixed, header, moved, right, window};
use crate::input::Action;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

#[derive(Debug, Clone, Default)]
pub struct PhasesPane {
    pub selected: usize,
}

impl Component for PhasesPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![hint(&[Action::Enter], "the phase's kernels (its ops when it launched none)")]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let Some(d) = ctx.data else { return Effect::Pass };
        if let Some(delta) = super::movement(a, ctx.page) {
            self.selected = moved(self.selected, d.phases.phases.len(), delta);
            return Effect::None;
        }
        if a != Action::Enter {
            return Effect::Pass;
        }
        let Some(row) = d.phases.phases.get(self.selected) else { return Effect::None };
        let has_kernels =
            d.profile().kernels_by_phase.get(&row.phase).is_some_and(|k| !k.is_empty());
        Effect::Drill { phase: row.phase.clone(), kernels: has_kernels }
    }

    /// Keeps the selection on a row of a (re)loaded profile.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        self.selected =
            self.selected.min(ctx.data.map_or(0, |d| d.phases.phases.len().saturating_sub(1)));
        None
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(d) = view.data() else { return };
        // GPU time above a phase's wall time, said as `phases` says it.
        let past_wall = d.phases.gpu_past_wall();
        // The note wraps onto as many rows as it needs (two at 80 columns).
        let note_rows = past_wall.as_ref().map_or(0, |p| {
            // Words wrapped leave part of each row: a few columns to spare.
            let w = usize::from(area.width.saturating_sub(8).max(1));
            p.chars().count().div_ceil(w).min(3) as u16
        });
        let [table_area, note, hint] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(note_rows),
            Constraint::Length(1),
        ])
        .areas(area);
        if let Some(past) = past_wall {
            let para = Paragraph::new(Line::styled(past, t.muted())).wrap(Wrap { trim: true });
            f.render_widget(para, note);
        }
        let rows_h = table_area.height.saturating_sub(1) as usize;
        let ph = &d.phases.phases;
        if ph.is_empty() {
            f.render_widget(
                Paragraph::new(Line::styled(
                    "no phases: the trace has no step/<phase> ranges and no GPU work",
                    t.muted(),
                )),
                table_area,
            );
            return;
        }
        let (first, last) = window(self.selected, ph.len(), rows_h);
        let name_w =
            ph.iter().map(|r| r.phase.chars().count()).max().unwrap_or(5).clamp(8, 24) as u16;
        // GPU idle per phase, as `phases` prints it, where the profile has
        // the idle account (a GPU trace).
        let idle = ph.iter().any(|r| r.idle_ms_per_step.is_some());
        let idle_w = if idle { 10 } else { 0 };
        // The bar fills what the figures leave (7 columns and their spacing).
        let bar_w = table_area.width.saturating_sub(name_w + 4 * 9 + 7 + 9 + 7 + idle_w) as usize;
        let bars = d.phases.bars();
        let rows = ph[first..last].iter().enumerate().map(|(i, r)| {
            let mut cells = vec![
                Cell::from(r.phase.clone()),
                right(fixed(r.gpu_ms_per_step, 2)),
                right(r.wall_ms_per_step.map_or("-".to_string(), |w| fixed(w, 2))),
            ];
            if idle {
                cells.push(right(r.idle_ms_per_step.map_or("-".to_string(), |w| fixed(w, 2))));
            }
            cells.extend([
                right(num(r.kernels_per_step, 1)),
                right(num(r.ops_per_step, 1)),
                right(r.unique_kernels.to_string()),
                right(r.memcpy_ms_per_step.map_or("-".to_string(), |m| fixed(m, 3))),
                Cell::from(Span::styled(
                    libreyolo_core::render::text::bar(bars[first + i], bar_w.min(40)),
                    t.accent(),
                )),
            ]);
            let row = Row::new(cells);
            if first + i == self.selected { row.style(t.selected()) } else { row }
        });
        let mut columns = vec![("phase", false), ("GPU ms", true), ("wall ms", true)];
        if idle {
            columns.push(("GPU idle", true));
        }
        columns.extend([("kernels", true), ("ops", true), ("unique", true), ("memcpy ms", true)]);
        let header = header(&columns, t.header());
        let mut widths =
            vec![Constraint::Length(name_w), Constraint::Length(9), Constraint::Length(9)];
        if idle {
            widths.push(Constraint::Length(9));
        }
        widths.extend([
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Fill(1),
        ]);
        f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), table_area);
        let selected = ph.get(self.selected).map_or("", |r| r.phase.as_str());
        let what = if d.profile().kernels_by_phase.get(selected).is_some_and(|k| !k.is_empty()) {
            "kernels"
        } else {
            "ops"
        };
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("per step · Enter: ", t.muted()),
                Span::styled(format!("{what} of {selected}"), t.accent()),
            ])),
            hint,
        );
    }
}

#[cfg(test)]
mod tests {
    //! The pane on its own: no `App`, only a profile, a [`Ctx`] and a [`View`].

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::slot::{Loaded, Slot};
    use crate::theme::{Depth, Theme};

    fn loaded() -> Loaded {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/reference/train_b4/profile.json"
        );
        Loaded::new(libreyolo_core::input::load(path, Default::default()).unwrap().input)
    }

    #[test]
    fn keys_and_drawing_without_an_app() {
        let data = loaded();
        let other = Slot::default();
        let ctx = Ctx::of(Some(&data), &other, 10);
        let mut pane = PhasesPane::default();
        let phases: Vec<String> = data.phases.phases.iter().map(|r| r.phase.clone()).collect();
        assert!(phases.len() >= 3, "{phases:?}");

        assert_eq!(pane.update(Action::Down, &ctx), Effect::None);
        assert_eq!(pane.update(Action::Down, &ctx), Effect::None);
        assert_eq!(pane.selected, 2);
        let has_kernels =
            data.profile().kernels_by_phase.get(&phases[2]).is_some_and(|k| !k.is_empty());
        assert_eq!(
            pane.update(Action::Enter, &ctx),
            Effect::Drill { phase: phases[2].clone(), kernels: has_kernels }
        );
        // Esc is not the pane's: the app goes back or quits.
        assert_eq!(pane.update(Action::Back, &ctx), Effect::Pass);
        assert_eq!(pane.update(Action::Bottom, &ctx), Effect::None);
        assert_eq!(pane.selected, phases.len() - 1);

        let theme = Theme::builtin_dark(Depth::Ansi16);
        let main =
            Slot { arg: "profile.json".into(), data: Some(data.clone()), ..Default::default() };
        let view = View { theme: &theme, main: &main, other: &other, job: None, editor: None };
        let mut term = Terminal::new(TestBackend::new(100, 12)).unwrap();
        term.draw(|f| pane.render(f, f.area(), &view)).unwrap();
        let screen: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        for p in &phases {
            assert!(screen.contains(p.as_str()), "{p} missing: {screen}");
        }
        assert!(
            screen.contains(&format!("of {}", phases[phases.len() - 1])),
            "the hint names the selected phase: {screen}"
        );
    }

    #[test]
    fn gpu_time_above_a_phases_wall_is_said_as_the_cli_says_it() {
        // ResNet-50's backward launches more kernel time than it lasts.
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/traces/kineto_resnet50_v100_2021jun"
        );
        let path = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path();
        let data = Loaded::new(
            libreyolo_core::input::load(path.to_str().unwrap(), Default::default()).unwrap().input,
        );
        let note = data.phases.gpu_past_wall().expect("backward runs past its wall");
        assert!(note.starts_with("GPU time above wall time (backward"), "{note}");
        let theme = Theme::builtin_dark(Depth::Ansi16);
        let (main, other) =
            (Slot { arg: "t".into(), data: Some(data), ..Default::default() }, Slot::default());
        let view = View { theme: &theme, main: &main, other: &other, job: None, editor: None };
        let mut term = Terminal::new(TestBackend::new(240, 12)).unwrap();
        term.draw(|f| PhasesPane::default().render(f, f.area(), &view)).unwrap();
        let screen: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        assert!(screen.contains(&note), "{screen}");
    }
}
