//! What-if: pick one of the profile's standard changes, each re-timed on
//! the step model (Up/Down, Left/Right, c), or type a launch count (n,
//! re-timed on the trace's model), and the `what_if` lens's projection
//! updates. The pane owns the choice and the lens result.

use libreyolo_core::lens::whatif::{Request, WhatIf, scenario, what_if};
use libreyolo_core::profile::{Profile, ScenarioRow};
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clip, fixed, opt, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::slot::Loaded;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, View};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhatIfChoice {
    /// The profile's standard what-if at this index (`what-if --all`).
    Category(usize),
    /// Remove this many launches per step.
    Launches(u64),
}

#[derive(Debug, Clone, Default)]
pub struct WhatIfPane {
    pub choice: Option<WhatIfChoice>,
    pub result: Option<Result<WhatIf, String>>,
}

impl Component for WhatIfPane {
    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let data = ctx.data;
        let delta = match a {
            Action::Left => -1,
            Action::Right | Action::CycleCategory => 1,
            Action::StartLaunches if data.is_some() => {
                let text = match self.choice {
                    Some(WhatIfChoice::Launches(n)) => n.to_string(),
                    _ => String::new(),
                };
                return Effect::Edit(Editor { field: Field::Launches, text });
            }
            a => match super::movement(a, ctx.page) {
                Some(d) => d,
                None => return Effect::Pass,
            },
        };
        let len = data.map_or(0, |d| scenarios(d.profile()).len());
        if len == 0 {
            return Effect::None;
        }
        let cur = match self.choice {
            Some(WhatIfChoice::Category(i)) => i,
            _ if delta < 0 => len,
            _ => usize::MAX,
        };
        // Wraps around, so Left/Right cycle through every category.
        let next = if cur == usize::MAX {
            0
        } else {
            (cur as isize + delta.signum()).rem_euclid(len as isize) as usize
        };
        self.choice = Some(WhatIfChoice::Category(next));
        self.rerun(data);
        Effect::None
    }

    /// A profile (re)loaded: the choice kept valid, the projection re-run.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        self.reset_for(ctx.data);
        self.rerun(ctx.data);
        None
    }

    /// A launch count typed in the field (live).
    fn typed(&mut self, text: &str, ctx: &Ctx<'_>) {
        self.choice = text.parse::<u64>().ok().map(WhatIfChoice::Launches).or(self.choice);
        self.rerun(ctx.data);
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(p) = view.profile() else { return };
        let (list_area, result_area) = if area.width >= 110 {
            let [a, b] = Layout::horizontal([Constraint::Length(46), Constraint::Fill(1)])
                .spacing(2)
                .areas(area);
            (a, b)
        } else {
            let n = scenarios(p).len().clamp(1, 8) as u16;
            let [a, b] =
                Layout::vertical([Constraint::Length(n + 3), Constraint::Fill(1)]).areas(area);
            (a, b)
        };

        // The choices: each standard what-if, then a launch count.
        let mut lines = vec![Line::styled("change (Up/Down)          saves/step", t.header())];
        let selected = match self.choice {
            Some(WhatIfChoice::Category(i)) => Some(i),
            _ => None,
        };
        let rows_all = scenarios(p);
        if rows_all.is_empty() {
            lines.push(Line::styled(
                "  no step model in this profile (a GPU trace has one)",
                t.muted(),
            ));
        }
        let rows = list_area.height.saturating_sub(3) as usize;
        let (first, last) = window(selected.unwrap_or(0), rows_all.len(), rows);
        let name_w = (list_area.width as usize).saturating_sub(24).clamp(8, 30);
        for (i, c) in rows_all[first..last].iter().enumerate() {
            let text = format!(
                "  {:<name_w$} {:>5}% {:>8} ms",
                clip(&c.flags, name_w),
                fixed(c.saved_pct, 1),
                num(c.saved_ms_per_step, 3)
            );
            lines.push(if Some(first + i) == selected {
                Line::styled(text, t.selected())
            } else {
                Line::raw(text)
            });
        }
        let editing = view.editor.filter(|e| e.field == Field::Launches);
        let launches = match (editing, self.choice) {
            (Some(ed), _) => Line::from(vec![
                Span::styled("or remove launches/step: ", t.header()),
                Span::raw(ed.text.clone()),
                Span::styled("█", t.accent()),
            ]),
            (None, Some(WhatIfChoice::Launches(n))) => Line::from(vec![
                Span::styled("or remove launches/step: ", t.header()),
                Span::styled(n.to_string(), t.selected()),
                Span::styled("  (n to change)", t.muted()),
            ]),
            _ => Line::from(vec![
                Span::styled("or remove launches/step: ", t.header()),
                Span::styled("press n", t.muted()),
            ]),
        };
        lines.push(launches);
        f.render_widget(Paragraph::new(lines), list_area);

        let result = match &self.result {
            None => {
                vec![Line::styled("choose a change or press n to type a launch count", t.muted())]
            }
            Some(Err(e)) => vec![Line::styled(e.clone(), t.warn())],
            Some(Ok(w)) => result_lines(w, t),
        };
        f.render_widget(Paragraph::new(result).wrap(Wrap { trim: false }), result_area);
    }
}

impl WhatIfPane {
    /// Keeps the choice valid for a (re)loaded profile: a vanished category
    /// falls back to the first.
    fn reset_for(&mut self, data: Option<&Loaded>) {
        let n = data.map_or(0, |d| scenarios(d.profile()).len());
        if let Some(WhatIfChoice::Category(i)) = self.choice {
            if i >= n {
                self.choice = None;
            }
        }
        if self.choice.is_none() && n > 0 {
            self.choice = Some(WhatIfChoice::Category(0));
        }
    }

    fn rerun(&mut self, data: Option<&Loaded>) {
        let Some(d) = data else { return };
        let p = d.profile();
        let result = match self.choice {
            None => {
                self.result = None;
                return;
            }
            Some(WhatIfChoice::Category(i)) => scenario(p, i),
            Some(WhatIfChoice::Launches(n)) => {
                let r = Request { remove_launches: Some(n), ..Default::default() };
                what_if(p, d.model.as_deref(), &r)
            }
        };
        self.result = Some(result.map_err(|e| e.to_string()));
    }
}

/// The profile's standard what-ifs.
fn scenarios(p: &Profile) -> &[ScenarioRow] {
    p.step_model.as_ref().map_or(&[], |m| m.scenarios.as_slice())
}

fn result_lines(w: &WhatIf, t: &Theme) -> Vec<Line<'static>> {
    let change = w.change_pct.map_or(String::new(), |c| format!(" ({c:+.1}%)"));
    let style = match w.change_pct {
        Some(c) if c < 0.0 => t.better(),
        _ => t.base(),
    };
    let mut out = vec![
        Line::from(vec![Span::styled(format!("what-if {}", w.scenario), t.title())]),
        Line::raw(w.what.clone()),
        Line::raw(""),
    ];
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "takes away"), t.header()),
        Span::raw(format!("{} ms of work per step", num(w.removes_ms_per_step, 3))),
    ]));
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "step"), t.header()),
        Span::raw(format!("{} -> ", opt(w.step_ms.now, 2))),
        Span::styled(format!("~{} ms{change}", opt(w.step_ms.projected, 2)), style),
    ]));
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "img/s"), t.header()),
        Span::raw(match w.img_per_s.now {
            Some(_) => format!("{} -> ", opt(w.img_per_s.now, 2)),
            None => "n/a (no batch size or throughput in this profile)".to_string(),
        }),
        Span::styled(
            w.img_per_s.projected.map_or(String::new(), |p| format!("~{}", num(p, 2))),
            style,
        ),
    ]));
    for n in &w.notes {
        out.push(Line::styled(format!("note: {n}"), t.muted()));
    }
    out.push(Line::raw(""));
    out.push(Line::styled(format!("caveat: {}", w.caveat), t.warn()));
    out
}
