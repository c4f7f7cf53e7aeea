//! Tree: the `tree` lens (docs/analysis.md §17), the call tree of a step —
//! phases, annotations, `nn.Module`s, Python frames and ops down to the
//! kernels each launched — folded and unfolded in place. The pane owns its
//! query (by, phase, focus, bottom-up), the lens result, the order of
//! siblings (GPU or CPU time), which rows are open and the selection. At
//! first the roots are open and so is the path of the costliest child
//! down to a kernel; `o` shows the row's kernel in Kernels or its op in
//! Ops. The lens's notes (graph replays, no `nn.Module` frames, short
//! frames left out) stay under the table.

use libreyolo_core::lens::kernels::compile_grep;
pub use libreyolo_core::lens::tree::callers;
use libreyolo_core::lens::tree::{By, Tree, TreeQuery, TreeRow, tree};
use libreyolo_core::profile::NodeKind;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::kernels::{drop_vanished_phase, phase_names};
use super::{clip, cycle, exactly, fixed, header, moved, right, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::pane::Pane;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// Nodes under this share of both the GPU and the CPU total are left out
/// (the lens's `--min-pct`): an open node lists what costs, not every
/// `aten::empty`.
pub const MIN_PCT: f64 = 0.1;

/// The order of siblings: costliest first by GPU time (the lens's), or by
/// CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TreeSort {
    #[default]
    Gpu,
    Cpu,
}

impl TreeSort {
    pub fn as_str(self) -> &'static str {
        match self {
            TreeSort::Gpu => "gpu",
            TreeSort::Cpu => "cpu",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TreePane {
    pub query: TreeQuery,
    pub sort: TreeSort,
    pub result: Option<Tree>,
    /// Why the last query was refused (an unfinished regex: the previous
    /// result stays), or why there is no tree.
    pub error: Option<String>,
    /// Each lens row's parent row.
    parent: Vec<Option<usize>>,
    /// Each row's children in the sort's order, and the roots.
    children: Vec<Vec<usize>>,
    roots: Vec<usize>,
    /// Rows whose children are shown.
    pub open: Vec<bool>,
    /// The rows on screen, in order (indices of the lens rows).
    pub visible: Vec<usize>,
    /// The cursor, a position in `visible`.
    pub selected: usize,
}

impl Default for TreePane {
    fn default() -> TreePane {
        TreePane {
            query: default_query(),
            sort: TreeSort::default(),
            result: None,
            error: None,
            parent: Vec::new(),
            children: Vec::new(),
            roots: Vec::new(),
            open: Vec::new(),
            visible: Vec::new(),
            selected: 0,
        }
    }
}

fn default_query() -> TreeQuery {
    TreeQuery { min_pct: MIN_PCT, ..TreeQuery::default() }
}

impl Component for TreePane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::Enter], "fold / unfold; on a leaf: its kernel or op"),
            hint(&[Action::Left, Action::Right], "close, to the parent / open, to the child"),
            hint(&[Action::OpenOther], "the row's kernel in Kernels, its op in Ops"),
            hint(&[Action::StartRegex], "focus: the paths through matching rows"),
            hint(&[Action::CycleSort], "siblings by GPU / CPU time"),
            hint(&[Action::CycleCategory], "by module, frame or op"),
            hint(&[Action::ToggleTensorCore], "bottom-up: the callers of each name"),
            hint(&[Action::CyclePhase], "cycle phase filter"),
            hint(&[Action::ClearFilters], "clear every filter and the sort"),
        ]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        if let Some(delta) = super::movement(a, ctx.page) {
            self.selected = moved(self.selected, self.visible.len(), delta);
            return Effect::None;
        }
        let row = self.visible.get(self.selected).copied();
        match a {
            Action::Enter => match row {
                Some(i) if !self.children[i].is_empty() => self.fold(i, !self.open[i]),
                // A leaf: its kernel or op in its pane.
                Some(_) => return self.jump(),
                None => {}
            },
            Action::Right => match row {
                Some(i) if !self.children[i].is_empty() && !self.open[i] => self.fold(i, true),
                Some(i) if self.open[i] && !self.children[i].is_empty() => self.selected += 1,
                _ => {}
            },
            Action::Left => match row {
                Some(i) if self.open[i] => self.fold(i, false),
                Some(i) => {
                    if let Some(p) = self.parent[i] {
                        self.selected = self.position(p).unwrap_or(self.selected);
                    }
                }
                None => {}
            },
            Action::OpenOther => return self.jump(),
            Action::StartRegex => {
                let before = self.query.focus.clone();
                return Effect::Edit(Editor {
                    text: before.clone().unwrap_or_default(),
                    field: Field::Regex { pane: Pane::Tree, before },
                });
            }
            Action::CycleCategory => {
                self.query.by = match self.query.by {
                    By::Module => By::Frame,
                    By::Frame => By::Op,
                    By::Op => By::Module,
                };
                self.requery(ctx);
            }
            Action::ToggleTensorCore => {
                self.query.bottom_up = !self.query.bottom_up;
                self.requery(ctx);
            }
            Action::CycleSort => {
                self.sort = match self.sort {
                    TreeSort::Gpu => TreeSort::Cpu,
                    TreeSort::Cpu => TreeSort::Gpu,
                };
                // The same rows, open as they were; the cursor on its row.
                let at = row;
                self.layout();
                self.show();
                self.selected = at.and_then(|i| self.position(i)).unwrap_or(0);
            }
            Action::CyclePhase => {
                let names = phase_names(ctx.data);
                self.query.phase = cycle(&names, self.query.phase.as_deref());
                self.requery(ctx);
            }
            Action::ClearFilters => {
                self.query = default_query();
                self.sort = TreeSort::default();
                self.requery(ctx);
            }
            _ => return Effect::Pass,
        }
        Effect::None
    }

    /// Drops a phase filter the profile lacks and re-runs the lens,
    /// keeping the open rows and the cursor where their paths remain.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        let dropped = drop_vanished_phase(&mut self.query.phase, ctx.data);
        let open: Vec<String> =
            (0..self.open.len()).filter(|i| self.open[*i]).map(|i| self.path(i)).collect();
        let at = self.visible.get(self.selected).map(|i| self.path(*i));
        let had = self.result.is_some();
        // A new profile: its own tree or none, never the previous one's.
        self.result = None;
        self.rerun(ctx);
        if had && dropped.is_none() {
            let n = self.open.len();
            let paths: Vec<String> = (0..n).map(|i| self.path(i)).collect();
            self.open = paths.iter().map(|p| open.contains(p)).collect();
            self.show();
            self.selected = at
                .and_then(|a| paths.iter().position(|p| *p == a))
                .and_then(|i| self.position(i))
                .unwrap_or(0);
        }
        dropped
    }

    /// The focus regex typed so far (live).
    fn typed(&mut self, text: &str, ctx: &Ctx<'_>) {
        self.query.focus = (!text.is_empty()).then(|| text.to_string());
        self.requery(ctx);
    }

    fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// By, direction, sort, focus, phase and the node count.
    fn status(&self, view: &View<'_>) -> Vec<Span<'static>> {
        if view.main.data.is_none() {
            return Vec::new();
        }
        let t = view.theme;
        let q = &self.query;
        let dir = if q.bottom_up { "bottom-up" } else { "top-down" };
        let mut s = vec![Span::styled(
            format!("by:{} {dir} sort:{}", q.by.as_str(), self.sort.as_str()),
            t.accent(),
        )];
        if let Some(g) = &q.focus {
            s.push(Span::styled(format!(" /{g}/"), t.accent()));
        }
        if let Some(p) = &q.phase {
            s.push(Span::styled(format!(" phase:{p}"), t.accent()));
        }
        if let Some(r) = &self.result {
            let n = r.rows.len();
            s.push(Span::raw(format!(" · {n} nodes ({} under {MIN_PCT}%)", r.hidden)));
        }
        if let Some(e) = self.error.as_ref().filter(|_| self.result.is_some()) {
            s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
        }
        s
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(tr) = &self.result else {
            let msg = self.error.clone().unwrap_or_default();
            f.render_widget(
                Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }),
                area,
            );
            return;
        };
        let w = area.width as usize;
        // The lens's notes, wrapped, at most a third of the pane.
        let notes: Vec<String> = tr.notes.iter().map(|n| format!("note: {n}")).collect();
        let notes_h = notes.iter().map(|n| n.chars().count().div_ceil(w.max(1))).sum::<usize>();
        let notes_h = (notes_h as u16).min(area.height / 3);
        let [table, notes_area, hint] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(notes_h),
            Constraint::Length(1),
        ])
        .areas(area);
        let lines: Vec<Line> = notes.into_iter().map(|n| Line::styled(n, t.warn())).collect();
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), notes_area);
        f.render_widget(Paragraph::new(Line::styled(clip(&self.hint(), w), t.muted())), hint);
        if self.visible.is_empty() {
            let why = match &self.query.focus {
                Some(_) => "no node matches the focus (x clears it)",
                None => "no node above 0.1% of the GPU or CPU time in this scope",
            };
            f.render_widget(Paragraph::new(Line::styled(why, t.muted())), table);
            return;
        }
        // A CPU run: no GPU columns, the CPU share instead.
        let gpu = tr.gpu_ms_per_step > 0.0;
        let wide = area.width >= 110;
        let mut head: Vec<(&str, bool)> = if gpu {
            vec![("GPU ms", true), ("%GPU", true), ("CPU ms", true)]
        } else {
            vec![("CPU ms", true), ("%CPU", true)]
        };
        head.extend([("self ms", true), ("x/step", true)]);
        if wide && gpu {
            head.extend([("kernels", true), ("TFLOP/s", true)]);
        }
        head.extend([("kind", false), ("name", false)]);
        let mut widths: Vec<Constraint> = head
            .iter()
            .map(|(h, _)| match *h {
                "%GPU" | "%CPU" => Constraint::Length(5),
                "x/step" => Constraint::Length(6),
                "kind" => Constraint::Length(10),
                _ => Constraint::Length(8),
            })
            .collect();
        widths.pop();
        widths.push(Constraint::Fill(1));
        let fixed_w: u16 =
            widths.iter().map(|c| if let Constraint::Length(l) = c { l + 1 } else { 0 }).sum();
        let name_w = (area.width.saturating_sub(fixed_w) as usize).max(12);
        let step = if wide { 2 } else { 1 };
        let rows_h = table.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, self.visible.len(), rows_h);
        let rows = self.visible[first..last].iter().enumerate().map(|(k, &i)| {
            let r = &tr.rows[i];
            let mut cells = if gpu {
                vec![
                    right(fixed(r.gpu_ms_per_step, 3)),
                    right(fixed(r.pct_of_gpu, 1)),
                    right(fixed(r.cpu_ms_per_step, 3)),
                ]
            } else {
                vec![right(fixed(r.cpu_ms_per_step, 3)), right(fixed(r.pct_of_cpu, 1))]
            };
            // A phase (or a scope copied into a later phase) is no call:
            // `-`, as `profile tree` prints it.
            let calls =
                if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
            cells.extend([right(fixed(r.cpu_self_ms_per_step, 3)), right(calls)]);
            if wide && gpu {
                let tflops = r.tflops.map_or_else(|| "-".to_string(), |v| fixed(v, 1));
                cells.extend([right(num(r.kernels_per_step, 1)), right(tflops)]);
            }
            let fold = match (self.children[i].is_empty(), self.open[i]) {
                (true, _) => "  ",
                (false, true) => "▾ ",
                (false, false) => "▸ ",
            };
            // Deep rows keep 12 columns of their name.
            let indent = (r.depth * step).min(name_w.saturating_sub(14));
            let name = name_of(r, name_w - indent - 2);
            cells.push(Cell::from(Span::styled(r.kind.as_str(), t.muted())));
            cells.push(Cell::from(format!("{}{fold}{name}", " ".repeat(indent))));
            let row = Row::new(cells);
            if first + k == self.selected { row.style(t.selected()) } else { row }
        });
        f.render_widget(
            Table::new(rows, widths).header(header(&head, t.header())).column_spacing(1),
            table,
        );
    }
}

impl TreePane {
    /// A new query: the lens re-run, the default rows open, the cursor on
    /// the first row.
    pub fn requery(&mut self, ctx: &Ctx<'_>) {
        self.rerun(ctx);
        self.selected = 0;
    }

    /// Kernels, Ops → the callers of the kernel label or op `name`:
    /// bottom-up, focused on it alone.
    pub fn callers(&mut self, name: &str, ctx: &Ctx<'_>) {
        self.query.bottom_up = true;
        self.query.focus = Some(exactly(name));
        self.query.phase = None;
        self.requery(ctx);
    }

    /// Modules → what runs under the module or annotation `name`:
    /// top-down, focused on it alone, the cursor on its first row, opened.
    pub fn under(&mut self, name: &str, ctx: &Ctx<'_>) {
        self.query = TreeQuery { focus: Some(exactly(name)), ..default_query() };
        self.sort = TreeSort::default();
        self.requery(ctx);
        let rows = self.rows();
        if let Some(i) = self.visible.iter().copied().find(|i| rows[*i].name == name) {
            self.fold(i, true);
        }
    }

    /// Runs the lens; on success lays the rows out with the default ones
    /// open. A refused query keeps the previous result.
    fn rerun(&mut self, ctx: &Ctx<'_>) {
        let Some(p) = ctx.data.map(|d| d.profile()) else { return };
        match tree(p, &self.query) {
            Ok(t) => {
                self.result = Some(t);
                self.error = None;
                self.layout();
                self.default_open();
                self.show();
            }
            Err(e) => {
                self.error = Some(crate::view::refusal(&e));
                if self.result.is_none() {
                    self.layout();
                    self.show();
                }
            }
        }
    }

    fn rows(&self) -> &[TreeRow] {
        self.result.as_ref().map_or(&[], |t| t.rows.as_slice())
    }

    /// Parents from the rows' depths (the lens lists them depth-first),
    /// children ordered by the sort, costliest first.
    fn layout(&mut self) {
        let rows = self.result.as_ref().map_or(&[][..], |t| t.rows.as_slice());
        let n = rows.len();
        let mut parent = vec![None; n];
        let mut stack: Vec<usize> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            stack.truncate(r.depth);
            parent[i] = stack.last().copied();
            stack.push(i);
        }
        let mut children = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (i, p) in parent.iter().enumerate() {
            match p {
                Some(p) => children[*p].push(i),
                None => roots.push(i),
            }
        }
        let key = |i: &usize| {
            let r = &rows[*i];
            match self.sort {
                TreeSort::Gpu => (r.gpu_ms_per_step, r.cpu_ms_per_step),
                TreeSort::Cpu => (r.cpu_ms_per_step, r.gpu_ms_per_step),
            }
        };
        let costly = |a: &usize, b: &usize| {
            let (ka, kb) = (key(a), key(b));
            kb.0.total_cmp(&ka.0).then(kb.1.total_cmp(&ka.1)).then(a.cmp(b))
        };
        for c in &mut children {
            c.sort_by(costly);
        }
        roots.sort_by(costly);
        self.open.resize(n, false);
        self.open.truncate(n);
        (self.parent, self.children, self.roots) = (parent, children, roots);
    }

    /// The rows open at first: with a focus top-down, the paths to its
    /// matches; otherwise the roots (top-down) and the path of the
    /// costliest child down from the first root, to a kernel where it
    /// leads to one.
    fn default_open(&mut self) {
        let rows = self.rows();
        let mut open = vec![false; rows.len()];
        let focus = self.query.focus.as_deref().filter(|_| !self.query.bottom_up);
        if let Some(re) = focus.and_then(|f| compile_grep(f).ok()) {
            for (i, r) in rows.iter().enumerate() {
                if !re.is_match(&r.name) {
                    continue;
                }
                let mut up = self.parent[i];
                while let Some(p) = up.filter(|p| !open[*p]) {
                    open[p] = true;
                    up = self.parent[p];
                }
            }
        } else {
            if !self.query.bottom_up {
                for r in &self.roots {
                    open[*r] = true;
                }
            }
            let mut at = self.roots.first().copied();
            while let Some(i) = at.filter(|i| !self.children[*i].is_empty()) {
                open[i] = true;
                at = self.children[i].first().copied();
            }
        }
        self.open = open;
    }

    /// The rows on screen: each root, and the children of open rows.
    fn show(&mut self) {
        let mut out = Vec::new();
        let mut todo: Vec<usize> = self.roots.iter().rev().copied().collect();
        while let Some(i) = todo.pop() {
            out.push(i);
            if self.open[i] {
                todo.extend(self.children[i].iter().rev());
            }
        }
        self.visible = out;
        self.selected = self.selected.min(self.visible.len().saturating_sub(1));
    }

    /// Opens or closes row `i`, the cursor staying on it.
    fn fold(&mut self, i: usize, open: bool) {
        self.open[i] = open;
        self.show();
        self.selected = self.position(i).unwrap_or(0);
    }

    /// Where row `i` is on screen.
    fn position(&self, i: usize) -> Option<usize> {
        self.visible.iter().position(|v| *v == i)
    }

    /// The names from the root down to row `i`: a row's identity across
    /// reloads.
    fn path(&self, i: usize) -> String {
        let rows = self.rows();
        let mut names = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            names.push(format!("{}:{}", rows[j].kind.as_str(), rows[j].name));
            at = self.parent[j];
        }
        names.reverse();
        names.join("\n")
    }

    /// The row under the cursor.
    pub fn selected_row(&self) -> Option<&TreeRow> {
        self.visible.get(self.selected).and_then(|i| self.rows().get(*i))
    }

    /// `o`: the selected kernel in Kernels, the selected op in Ops.
    fn jump(&self) -> Effect {
        match self.selected_row() {
            Some(r) if r.kind == NodeKind::Kernel => Effect::ShowKernelLabel(r.name.clone()),
            Some(r) if r.kind == NodeKind::Op => Effect::ShowOp(r.name.clone()),
            _ => Effect::None,
        }
    }

    /// The pane's keys, for the row under the cursor.
    fn hint(&self) -> String {
        let mut h = match self.selected_row().map(|r| r.kind) {
            Some(NodeKind::Kernel) => "o kernel in Kernels · ",
            Some(NodeKind::Op) => "o op in Ops · ",
            _ => "",
        }
        .to_string();
        h.push_str("Enter/←→ fold · c by · t ");
        h.push_str(if self.query.bottom_up { "top-down" } else { "bottom-up" });
        h.push_str(" · s sort · / focus · p phase · x reset");
        h
    }
}

/// A row's name in `width` characters, beside its kind: a module without
/// the `nn.Module: ` its kind says, a Python frame keeping its end (the
/// file's name, line and function), anything else its start.
pub fn name_of(r: &TreeRow, width: usize) -> String {
    let name = match r.kind {
        NodeKind::Module => r.name.strip_prefix("nn.Module: ").unwrap_or(&r.name),
        _ => &r.name,
    };
    let n = name.chars().count();
    if r.kind != NodeKind::Frame || n <= width || width == 0 {
        return clip(name, width);
    }
    let tail: String = name.chars().skip(n + 1 - width).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    //! The pane on its own: the structure it builds from the lens rows.

    use super::*;

    fn row(depth: usize, name: &str, gpu: f64, cpu: f64) -> TreeRow {
        TreeRow {
            depth,
            name: name.into(),
            gpu_ms_per_step: gpu,
            cpu_ms_per_step: cpu,
            pct_of_gpu: gpu,
            ..TreeRow::default()
        }
    }

    fn pane(rows: Vec<TreeRow>) -> TreePane {
        let mut p = TreePane {
            result: Some(Tree {
                trace: None,
                query: default_query(),
                gpu_ms_per_step: 100.0,
                cpu_ms_per_step: 100.0,
                rows,
                hidden: 0,
                notes: vec![],
            }),
            ..TreePane::default()
        };
        p.layout();
        p.default_open();
        p.show();
        p
    }

    #[test]
    fn the_costliest_path_opens_and_the_sort_reorders_siblings() {
        let mut p = pane(vec![
            row(0, "root", 100.0, 10.0),
            row(1, "a", 70.0, 1.0),
            row(2, "a1", 70.0, 1.0),
            row(1, "b", 30.0, 9.0),
            row(2, "b1", 30.0, 9.0),
        ]);
        let names = |p: &TreePane| -> Vec<String> {
            p.visible.iter().map(|i| p.rows()[*i].name.clone()).collect()
        };
        assert_eq!(names(&p), ["root", "a", "a1", "b"]);
        p.sort = TreeSort::Cpu;
        p.layout();
        p.show();
        assert_eq!(names(&p), ["root", "b", "a", "a1"], "b costs more CPU");

        // Read bottom-up: root's only caller is "x", whose callers are
        // "a" and "b".
        let mut t = p.result.clone().unwrap();
        t.rows.insert(1, row(1, "x", 100.0, 0.0));
        for r in &mut t.rows[2..] {
            r.depth += 1;
        }
        let c = callers(&t);
        let names =
            |rs: &[&TreeRow]| -> Vec<String> { rs.iter().map(|r| r.name.clone()).collect() };
        assert_eq!(
            (names(&c.chain), names(&c.branch)),
            (vec!["x".into()], vec!["a".into(), "b".into()])
        );
        t.rows.truncate(4);
        let c = callers(&t);
        assert_eq!(
            (names(&c.chain), names(&c.branch)),
            (vec!["x".into(), "a".into(), "a1".into()], vec![])
        );
    }
}
