//! Modules: the `modules` lens (docs/analysis.md §17, "Modules, forward
//! and backward"), the model's `nn.Module`s and annotations with their
//! forward and backward time side by side, indented by depth, as `profile
//! modules` prints them. The pane owns its query (the focus regex), the
//! order of siblings and the selection; `Enter` shows the module's
//! subtree in the Tree pane. The lens's per-step figures head the table,
//! its notes (no `nn.Module` frames, no backward phase) stay under it.

use libreyolo_core::lens::modules::{ModuleRow, Modules, ModulesQuery, modules};
use libreyolo_core::profile::NodeKind;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::{clip, fixed, header, moved, resorted, right, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::pane::Pane;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// The order of siblings (`s`): the lens's (total time, costliest first),
/// or by forward or backward time. A module stays under its parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ModulesSort {
    #[default]
    Total,
    Forward,
    Backward,
}

impl ModulesSort {
    pub fn as_str(self) -> &'static str {
        match self {
            ModulesSort::Total => "total",
            ModulesSort::Forward => "fwd",
            ModulesSort::Backward => "bwd",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ModulesPane {
    /// The lens's defaults (`profile modules` without options) and the
    /// focus.
    pub query: ModulesQuery,
    pub sort: ModulesSort,
    pub result: Option<Modules>,
    /// Why the last query was refused (an unfinished regex: the previous
    /// result stays), or why there are no modules.
    pub error: Option<String>,
    /// The lens rows in the sort's order (indices).
    pub order: Vec<usize>,
    /// The cursor, a position in `order`.
    pub selected: usize,
}

impl Component for ModulesPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::Enter], "the module's subtree in the Tree pane"),
            hint(&[Action::StartRegex], "focus: the paths through matching modules"),
            hint(&[Action::CycleSort], "siblings by total, forward or backward time"),
            hint(&[Action::ClearFilters], "clear the focus and the sort"),
        ]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        if let Some(delta) = super::movement(a, ctx.page) {
            self.selected = moved(self.selected, self.order.len(), delta);
            return Effect::None;
        }
        match a {
            Action::Enter => {
                if let Some(r) = self.selected_row() {
                    return Effect::InTree(r.name.clone());
                }
            }
            Action::StartRegex => {
                let before = self.query.focus.clone();
                return Effect::Edit(Editor {
                    text: before.clone().unwrap_or_default(),
                    field: Field::Regex { pane: Pane::Modules, before },
                });
            }
            Action::CycleSort => {
                self.sort = match self.sort {
                    ModulesSort::Total => ModulesSort::Forward,
                    ModulesSort::Forward => ModulesSort::Backward,
                    ModulesSort::Backward => ModulesSort::Total,
                };
                let old = std::mem::take(&mut self.order);
                self.layout();
                self.selected = resorted(&old, self.selected, &self.order);
            }
            Action::ClearFilters => {
                self.query = ModulesQuery::default();
                self.sort = ModulesSort::default();
                self.requery(ctx);
            }
            _ => return Effect::Pass,
        }
        Effect::None
    }

    /// Re-runs the lens on the new profile (a reload, another rank),
    /// keeping the focus, the sort and the cursor on its module where its
    /// path remains.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        let at = self.order.get(self.selected).map(|i| self.path(*i));
        // A new profile: its own modules or none, never the previous one's.
        self.result = None;
        self.requery(ctx);
        if let Some(at) = at {
            let i = (0..self.rows().len()).find(|i| self.path(*i) == at);
            self.selected = i.and_then(|i| self.order.iter().position(|o| *o == i)).unwrap_or(0);
        }
        None
    }

    /// The focus regex typed so far (live).
    fn typed(&mut self, text: &str, ctx: &Ctx<'_>) {
        self.query.focus = (!text.is_empty()).then(|| text.to_string());
        self.requery(ctx);
    }

    fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Sort, focus and the rows shown and hidden.
    fn status(&self, view: &View<'_>) -> Vec<Span<'static>> {
        if view.main.data.is_none() {
            return Vec::new();
        }
        let t = view.theme;
        let mut s = vec![Span::styled(format!("sort:{}", self.sort.as_str()), t.accent())];
        if let Some(g) = &self.query.focus {
            s.push(Span::styled(format!(" /{g}/"), t.accent()));
        }
        if let Some(m) = &self.result {
            let why = match &self.query.focus {
                Some(_) => "or off the focus",
                None => "of both totals",
            };
            let under = self.query.min_pct;
            s.push(Span::raw(format!(
                " · {} shown, {} hidden (under {under}% {why})",
                m.rows.len(),
                m.hidden
            )));
        }
        if let Some(e) = self.error.as_ref().filter(|_| self.result.is_some()) {
            s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
        }
        s
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(m) = &self.result else {
            let msg = self.error.clone().unwrap_or_default();
            f.render_widget(
                Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }),
                area,
            );
            return;
        };
        let w = area.width as usize;
        // A CPU run has no kernel time: its modules by host time, as
        // `profile modules` prints them.
        let cpu = m.gpu_ms_per_step <= 0.0;
        let head = libreyolo_core::render::text::modules_total(m);
        // The lens's notes, wrapped, at most a third of the pane.
        let notes: Vec<String> = m.notes.iter().map(|n| format!("note: {n}")).collect();
        let notes_h = notes.iter().map(|n| n.chars().count().div_ceil(w.max(1))).sum::<usize>();
        let notes_h = (notes_h as u16).min(area.height / 3);
        let [head_area, table, notes_area, hint] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(notes_h),
            Constraint::Length(1),
        ])
        .areas(area);
        f.render_widget(Paragraph::new(Line::styled(clip(&head, w), t.title())), head_area);
        let lines: Vec<Line> = notes.into_iter().map(|n| Line::styled(n, t.warn())).collect();
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), notes_area);
        let keys = "Enter its subtree in Tree · s sort (total, fwd, bwd) · / focus · x reset";
        f.render_widget(Paragraph::new(Line::styled(clip(keys, w), t.muted())), hint);
        if self.order.is_empty() {
            let why = match &self.query.focus {
                Some(_) => "no module matches the focus (x clears it)".to_string(),
                None => format!("no module above {}% of the GPU or CPU time", self.query.min_pct),
            };
            f.render_widget(Paragraph::new(Line::styled(why, t.muted())), table);
            return;
        }

        // The columns of `profile modules`; a TFLOP/s column where the
        // lens priced work that way, another phase's where a module has
        // time in one, the kind where modules and annotations mix.
        let rows = &m.rows;
        let fwd_tf = !cpu && rows.iter().any(|r| r.forward_tflops.is_some());
        let bwd_tf = !cpu && rows.iter().any(|r| r.backward_tflops.is_some());
        let other = !cpu && rows.iter().any(|r| r.other_gpu_ms_per_step > 0.0);
        let mixed = rows.iter().any(|r| r.kind == NodeKind::Annotation)
            && rows.iter().any(|r| r.kind != NodeKind::Annotation);
        let mut head: Vec<(&str, bool)> = if cpu {
            vec![("CPU ms", true), ("%cpu", true)]
        } else {
            vec![("GPU ms", true), ("%gpu", true)]
        };
        head.extend([("fwd ms", true), ("bwd ms", true), ("x/step", true)]);
        if fwd_tf {
            head.push(("fwd TF", true));
        }
        if bwd_tf {
            head.push(("bwd TF", true));
        }
        if other {
            head.push(("other ms", true));
        }
        if mixed {
            head.push(("kind", false));
        }
        head.push(("name", false));
        let mut widths: Vec<Constraint> = head
            .iter()
            .map(|(h, _)| match *h {
                "%gpu" | "%cpu" => Constraint::Length(5),
                "x/step" | "fwd TF" | "bwd TF" => Constraint::Length(6),
                "kind" => Constraint::Length(10),
                _ => Constraint::Length(8),
            })
            .collect();
        widths.pop();
        widths.push(Constraint::Fill(1));
        let fixed_w: u16 =
            widths.iter().map(|c| if let Constraint::Length(l) = c { l + 1 } else { 0 }).sum();
        let name_w = (area.width.saturating_sub(fixed_w) as usize).max(12);
        let step = if area.width >= 110 { 2 } else { 1 };
        let tf = |v: Option<f64>| right(v.map_or_else(|| "-".to_string(), |v| fixed(v, 1)));
        let rows_h = table.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, self.order.len(), rows_h);
        let lines = self.order[first..last].iter().enumerate().map(|(k, &i)| {
            let r = &rows[i];
            let (all, share, fwd, bwd) = if cpu {
                (
                    r.cpu_ms_per_step,
                    r.pct_of_cpu,
                    r.forward_cpu_ms_per_step,
                    r.backward_cpu_ms_per_step,
                )
            } else {
                (
                    r.gpu_ms_per_step,
                    r.pct_of_gpu,
                    r.forward_gpu_ms_per_step,
                    r.backward_gpu_ms_per_step,
                )
            };
            let calls =
                if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
            let mut cells = vec![
                right(fixed(all, 3)),
                right(fixed(share, 1)),
                right(fixed(fwd, 3)),
                right(fixed(bwd, 3)),
                right(calls),
            ];
            if fwd_tf {
                cells.push(tf(r.forward_tflops));
            }
            if bwd_tf {
                cells.push(tf(r.backward_tflops));
            }
            if other {
                cells.push(right(fixed(r.other_gpu_ms_per_step, 3)));
            }
            if mixed {
                cells.push(Cell::from(Span::styled(r.kind.as_str(), t.muted())));
            }
            // Deep rows keep 12 columns of their name.
            let indent = (r.depth * step).min(name_w.saturating_sub(12));
            cells.push(Cell::from(format!(
                "{}{}",
                " ".repeat(indent),
                clip(name_of(r), name_w - indent)
            )));
            let row = Row::new(cells);
            if first + k == self.selected { row.style(t.selected()) } else { row }
        });
        f.render_widget(
            Table::new(lines, widths).header(header(&head, t.header())).column_spacing(1),
            table,
        );
    }
}

impl ModulesPane {
    /// A new query: the lens re-run, the cursor on the first row. A
    /// refused query keeps the previous result.
    pub fn requery(&mut self, ctx: &Ctx<'_>) {
        if let Some(p) = ctx.data.map(|d| d.profile()) {
            match modules(p, &self.query) {
                Ok(m) => {
                    self.result = Some(m);
                    self.error = None;
                }
                Err(e) => self.error = Some(crate::view::refusal(&e)),
            }
        }
        self.layout();
        self.selected = 0;
    }

    fn rows(&self) -> &[ModuleRow] {
        self.result.as_ref().map_or(&[], |m| m.rows.as_slice())
    }

    /// The rows in the sort's order: the lens lists them depth-first,
    /// siblings costliest first; a sort by one direction reorders each
    /// module's children (ties keep the lens's order) and keeps them
    /// under it.
    fn layout(&mut self) {
        let rows = self.rows();
        let cpu = self.result.as_ref().is_some_and(|m| m.gpu_ms_per_step <= 0.0);
        let key = |r: &ModuleRow| match (self.sort, cpu) {
            (ModulesSort::Total, _) => 0.0,
            (ModulesSort::Forward, false) => r.forward_gpu_ms_per_step,
            (ModulesSort::Backward, false) => r.backward_gpu_ms_per_step,
            (ModulesSort::Forward, true) => r.forward_cpu_ms_per_step,
            (ModulesSort::Backward, true) => r.backward_cpu_ms_per_step,
        };
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
        let mut roots = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            stack.truncate(r.depth);
            match stack.last() {
                Some(p) => children[*p].push(i),
                None => roots.push(i),
            }
            stack.push(i);
        }
        let costly = |a: &usize, b: &usize| key(&rows[*b]).total_cmp(&key(&rows[*a]));
        roots.sort_by(costly);
        let mut order = Vec::with_capacity(rows.len());
        let mut todo: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(i) = todo.pop() {
            order.push(i);
            let mut kids = std::mem::take(&mut children[i]);
            kids.sort_by(costly);
            todo.extend(kids.into_iter().rev());
        }
        self.order = order;
    }

    /// The names from the top module down to row `i`: a row's identity
    /// across reloads.
    fn path(&self, i: usize) -> String {
        let rows = self.rows();
        let mut names = vec![rows[i].name.as_str()];
        let mut depth = rows[i].depth;
        for r in rows[..i].iter().rev() {
            if r.depth < depth {
                names.push(&r.name);
                depth = r.depth;
            }
        }
        names.reverse();
        names.join("\n")
    }

    /// The row under the cursor.
    pub fn selected_row(&self) -> Option<&ModuleRow> {
        self.order.get(self.selected).and_then(|i| self.rows().get(*i))
    }
}

/// A row's name on screen: a module's without the `nn.Module: ` every
/// module's name starts with.
pub fn name_of(r: &ModuleRow) -> &str {
    match r.kind {
        NodeKind::Module => r.name.strip_prefix("nn.Module: ").unwrap_or(&r.name),
        _ => &r.name,
    }
}
