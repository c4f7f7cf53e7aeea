//! What-if: pick one of the profile's standard changes, each re-timed on
//! the step model (Up/Down, Left/Right, c), or type a launch count (n,
//! re-timed on the trace's model), and the `what_if` lens's projection
//! updates. In a distributed job the job's changes come first: the
//! critical rank's lateness removed and each standard change made on every
//! rank, the ranks re-timed together (`what-if DIR`); then the shown
//! rank's own. The pane owns the choice and the lens result.

use libreyolo_core::lens::whatif::{JobWhatIf, Request, WhatIf, scenario, what_if};
use libreyolo_core::profile::{Profile, ScenarioRow};
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clip, fixed, opt, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::job::OpenJob;
use crate::slot::Loaded;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhatIfChoice {
    /// The profile's standard what-if at this index (`what-if --all`).
    Category(usize),
    /// The job's what-if at this index ([`OpenJob::whatifs`]).
    Job(usize),
    /// Remove this many launches per step.
    Launches(u64),
}

#[derive(Debug, Clone, Default)]
pub struct WhatIfPane {
    pub choice: Option<WhatIfChoice>,
    pub result: Option<Result<WhatIf, String>>,
}

impl Component for WhatIfPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::Left, Action::Right], "previous / next change (also c, Up, Down)"),
            hint(&[Action::CycleCategory], "next change"),
            hint(&[Action::StartLaunches], "type a launch count to remove"),
        ]
    }

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
        let list = entries(data, ctx.job);
        if list.is_empty() {
            return Effect::None;
        }
        let cur = self.choice.and_then(|c| list.iter().position(|e| *e == c));
        // Wraps around, so Left/Right cycle through every change.
        let next = match cur {
            Some(i) => (i as isize + delta.signum()).rem_euclid(list.len() as isize) as usize,
            None if delta < 0 => list.len() - 1,
            None => 0,
        };
        self.choice = Some(list[next]);
        self.rerun(data);
        Effect::None
    }

    /// A profile (re)loaded: the choice kept valid, the projection re-run.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        self.reset_for(ctx.data, ctx.job);
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
            // The list widens with the screen, so the flags show whole.
            let list_w = (area.width * 2 / 5).clamp(46, 90);
            let [a, b] = Layout::horizontal([Constraint::Length(list_w), Constraint::Fill(1)])
                .spacing(2)
                .areas(area);
            (a, b)
        } else {
            let n = entries(view.data(), view.job).len().clamp(1, 8) as u16;
            let [a, b] =
                Layout::vertical([Constraint::Length(n + 3), Constraint::Fill(1)]).areas(area);
            (a, b)
        };

        // The choices: the job's what-ifs, each standard what-if, then a
        // launch count.
        // A row: the flags, then ` {pct:>5}% {ms:>8} ms` (19 columns).
        let name_w = (list_area.width as usize).saturating_sub(24).clamp(8, 66);
        let header = format!("{:<w$}{:>19}", "change (Up/Down)", "saves/step", w = name_w + 2);
        let mut lines = vec![Line::styled(header, t.header())];
        let list = entries(view.data(), view.job);
        if list.is_empty() {
            lines.push(Line::styled(
                "  no step model in this profile (a GPU trace has one)",
                t.muted(),
            ));
        }
        let selected = self.choice.and_then(|c| list.iter().position(|e| *e == c));
        // In a job, a heading above each part (the job's, the rank's own)
        // takes a row.
        let headings = if view.job.is_some() { 2 } else { 0 };
        let rows = (list_area.height as usize).saturating_sub(3 + headings).max(1);
        let (first, last) = window(selected.unwrap_or(0), list.len(), rows);
        let mut part: Option<String> = None;
        for (i, e) in list[first..last].iter().enumerate() {
            let (c, heading) = match (*e, view.job) {
                (WhatIfChoice::Job(k), Some(j)) => {
                    (j.whatifs[k].row(), Some("the job: on every rank, re-timed together".into()))
                }
                (WhatIfChoice::Category(k), j) => {
                    (scenarios(p)[k].clone(), j.map(|j| format!("rank {} alone", j.shown_rank())))
                }
                _ => continue,
            };
            if heading.is_some() && part != heading {
                lines.push(Line::styled(heading.clone().unwrap_or_default(), t.muted()));
                part = heading;
            }
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

        let job_whatif = match self.choice {
            Some(WhatIfChoice::Job(j)) => view.job.and_then(|job| job.whatifs.get(j)),
            _ => None,
        };
        let result = match (job_whatif, &self.result) {
            (Some(w), _) => job_lines(w, t),
            (None, None) => {
                vec![Line::styled("choose a change or press n to type a launch count", t.muted())]
            }
            (None, Some(Err(e))) => vec![Line::styled(e.clone(), t.warn())],
            (None, Some(Ok(w))) => result_lines(w, t),
        };
        f.render_widget(Paragraph::new(result).wrap(Wrap { trim: false }), result_area);
    }
}

impl WhatIfPane {
    /// Keeps the choice valid for a (re)loaded profile or another rank: a
    /// vanished change falls back to the first.
    fn reset_for(&mut self, data: Option<&Loaded>, job: Option<&OpenJob>) {
        let list = entries(data, job);
        if self
            .choice
            .is_some_and(|c| !matches!(c, WhatIfChoice::Launches(_)) && !list.contains(&c))
        {
            self.choice = None;
        }
        if self.choice.is_none() {
            self.choice = list.first().copied();
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
            // Worked out when the job was read: drawn from it.
            Some(WhatIfChoice::Job(_)) => {
                self.result = None;
                return;
            }
            Some(WhatIfChoice::Launches(n)) => {
                let r = Request { remove_launches: Some(n), ..Default::default() };
                what_if(p, d.model.as_deref(), &r)
            }
        };
        self.result = Some(result.map_err(|e| e.to_string()));
    }
}

/// What the list offers, in its order: the job's what-ifs (in a job),
/// then the profile's standard ones.
fn entries(data: Option<&Loaded>, job: Option<&OpenJob>) -> Vec<WhatIfChoice> {
    let jobs = job.map_or(0, |j| j.whatifs.len());
    let own = data.map_or(0, |d| scenarios(d.profile()).len());
    (0..jobs).map(WhatIfChoice::Job).chain((0..own).map(WhatIfChoice::Category)).collect()
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
    // The saving as `what-if` prints it, with its bound where the model
    // inferred waits on other streams.
    let bound = w.saved_without_inferred_ms.map_or(String::new(), |b| {
        format!(" ({} ms without the waits the model inferred)", num(b, 3))
    });
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "takes away"), t.header()),
        Span::raw(format!(
            "{} ms of work per step; saves {} ms{bound}",
            num(w.removes_ms_per_step, 3),
            num(w.saved_ms_per_step, 3)
        )),
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

/// A job's what-if as `what-if DIR` prints it (the same figures, one
/// renderer): each rank's step now and re-timed, and the job's.
fn job_lines(w: &JobWhatIf, t: &Theme) -> Vec<Line<'static>> {
    let text = libreyolo_core::render::text::job_what_if(w);
    text.lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => Line::styled(l.to_string(), t.title()),
            _ if l.starts_with("  (") => Line::styled(l.to_string(), t.warn()),
            _ => Line::raw(l.to_string()),
        })
        .collect()
}
