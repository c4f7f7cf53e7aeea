//! Kernels: the `kernels` lens with its filters (category, regex, Tensor
//! Core, phase) and sort, and a detail view of one kernel on Enter, which
//! says where it was launched from (the `tree` lens bottom-up: its op,
//! Python line and modules); `o` shows its callers in the Tree pane. The
//! pane owns its query, the lens result, the selection and the detail
//! flag; large lists are filtered on the filter worker the [`Ctx`] carries.

use std::sync::Arc;

use libreyolo_core::analysis::kernels::label_within;
use libreyolo_core::lens::kernels::{KernelQuery, Kernels, kernels, phase_split};
use libreyolo_core::lens::tree::{TreeRow, kernel_callers};
use libreyolo_core::profile::{
    Achieved, KernelRow, NodeKind, Profile, RooflineBound, matrix_units_initials,
};
use libreyolo_core::render::text::{PAST_MARK, PAST_ROOFLINE, THIN_MARK, num};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};

use super::tree::{callers, name_of};
use super::{clip, cycle, exactly, fixed, header, moved, right, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::pane::Pane;
use crate::slot::Loaded;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

#[derive(Debug, Clone, Default)]
pub struct KernelsPane {
    pub query: KernelQuery,
    pub result: Option<Kernels>,
    /// The job the filter worker is running for the current query; the
    /// previous result stays on screen until it answers.
    pub pending: Option<u64>,
    /// Why the last query was refused (e.g. an unfinished regex); the
    /// previous result stays on screen meanwhile.
    pub error: Option<String>,
    pub selected: usize,
    pub detail: bool,
    /// The call the details were opened on, from the Timeline: said at
    /// their top, and Esc goes back there.
    pub call: Option<Call>,
}

/// One call of a kernel, as the Timeline shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub raw_name: String,
    /// `step 7`, or `the trace` without step markers.
    pub step: String,
    /// From the step's start (ns), and how long it ran.
    pub start_ns: i64,
    pub dur_ns: i64,
    /// Its lane: the device and stream it ran on.
    pub lane: String,
    /// The CPU op that launched it, when recorded.
    pub launched_by: Option<String>,
}

impl Component for KernelsPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::Enter], "details of the kernel (Esc closes them)"),
            hint(&[Action::StartRegex], "regex filter, applied as you type"),
            hint(&[Action::CycleSort], "cycle sort"),
            hint(&[Action::CycleCategory], "cycle category filter"),
            hint(&[Action::CyclePhase], "cycle phase filter"),
            hint(
                &[Action::ToggleTensorCore],
                if self.units() == "Matrix Cores" {
                    "Matrix Core kernels only"
                } else {
                    "Tensor Core kernels only"
                },
            ),
            hint(&[Action::ClearFilters], "clear every filter"),
            hint(&[Action::OpenOther], "the kernel's callers in the Tree pane"),
        ]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        if let Some(delta) = super::movement(a, ctx.page) {
            let len = self.result.as_ref().map_or(0, |k| k.kernels.len());
            self.selected = moved(self.selected, len, delta);
            return Effect::None;
        }
        match a {
            Action::Enter if self.result.as_ref().is_some_and(|k| !k.kernels.is_empty()) => {
                self.detail = !self.detail;
                self.call = None;
            }
            Action::Back if self.detail => {
                self.detail = false;
                // Opened on a call from the Timeline: back there.
                if self.call.take().is_some() {
                    return Effect::Return(Pane::Timeline);
                }
            }
            Action::StartRegex => {
                let before = self.query.grep.clone();
                return Effect::Edit(Editor {
                    text: before.clone().unwrap_or_default(),
                    field: Field::Regex { pane: Pane::Kernels, before },
                });
            }
            Action::CycleSort => {
                self.query.sort = self.query.sort.next();
                self.requery(ctx);
            }
            Action::CycleCategory => {
                let cats = categories(ctx.data);
                self.query.category = cycle(&cats, self.query.category.as_deref());
                self.requery(ctx);
            }
            Action::CyclePhase => {
                let names = phase_names(ctx.data);
                self.query.phase = cycle(&names, self.query.phase.as_deref());
                self.requery(ctx);
            }
            Action::ToggleTensorCore => {
                self.query.tensorcore = !self.query.tensorcore;
                self.requery(ctx);
            }
            Action::ClearFilters => {
                self.query = KernelQuery::default();
                self.requery(ctx);
            }
            // The callers of the kernel under the cursor, in the Tree pane.
            Action::OpenOther => {
                if let Some(k) = self.selected_kernel() {
                    return Effect::Callers(k.kernel.clone());
                }
            }
            _ => return Effect::Pass,
        }
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

    /// The active filters and the match count.
    fn status(&self, view: &View<'_>) -> Vec<Span<'static>> {
        if view.main.data.is_none() {
            return Vec::new();
        }
        let t = view.theme;
        let q = &self.query;
        let mut s = vec![Span::styled(format!("sort:{}", q.sort.as_str()), t.accent())];
        if let Some(c) = &q.category {
            s.push(Span::styled(format!(" cat:{c}"), t.accent()));
        }
        if let Some(g) = &q.grep {
            s.push(Span::styled(format!(" /{g}/"), t.accent()));
        }
        if q.tensorcore {
            s.push(Span::styled(
                format!(" {}-only", matrix_units_initials(self.units())),
                t.accent(),
            ));
        }
        if let Some(p) = &q.phase {
            s.push(Span::styled(format!(" phase:{p}"), t.accent()));
        }
        // A refused filter leaves the last answer's rows: their count
        // would read as the refused filter's.
        if let Some(k) = self.result.as_ref().filter(|_| self.error.is_none()) {
            s.push(Span::raw(format!(" · {} of {} match", k.matched, k.total)));
            if self.detail {
                s.push(Span::raw(format!(" · #{}", self.selected + 1)));
            }
        }
        if self.pending.is_some() {
            s.push(Span::styled(" · filtering…", t.warn()));
        }
        if let Some(e) = &self.error {
            s.push(Span::styled(format!(" · {}", e.lines().next().unwrap_or("")), t.warn()));
        }
        s
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        if self.detail {
            self.detail(f, area, view);
            return;
        }
        let t = view.theme;
        let Some(k) = &self.result else {
            let msg = self.error.clone().unwrap_or_default();
            f.render_widget(
                Paragraph::new(Line::styled(msg, t.warn())).wrap(Wrap { trim: false }),
                area,
            );
            return;
        };
        if k.kernels.is_empty() {
            let why = if k.total == 0 {
                "no GPU kernels in this scope (a CPU profile has none: see Ops)"
            } else {
                "no kernel matches the filters (x clears them)"
            };
            f.render_widget(Paragraph::new(Line::styled(why, t.muted())), area);
            return;
        }
        let rows_h = area.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, k.kernels.len(), rows_h);
        let wide = area.width >= 110;
        let cat_w: u16 = if wide { 18 } else { 12 };
        // The roofline's columns where the model priced a row (§13): % of
        // peak always, the achieved rate on wide screens.
        let rates = RateColumns::of(k.kernels.iter().map(|r| &r.achieved), wide);
        let tc = matrix_units_initials(k.matrix_units);
        // Fixed columns: 6 + 9 + 7 + 2 + cat + spacing.
        let name_w =
            area.width.saturating_sub(6 + 9 + 7 + 2 + cat_w + 5 + rates.width()).max(10) as usize;
        let rows = k.kernels[first..last].iter().enumerate().map(|(i, r)| {
            let mut cells = vec![
                right(fixed(r.pct_of_gpu, 2)),
                right(fixed(r.ms_per_step, 3)),
                right(num(r.count_per_step, 1)),
            ];
            cells.extend(rates.cells(&r.achieved, r.rates_thin()));
            cells.extend([
                Cell::from(if r.tensorcore {
                    Span::styled(tc.clone(), t.accent())
                } else {
                    Span::raw("")
                }),
                Cell::from(name_in(r, name_w)),
                Cell::from(Span::styled(clip(r.category.as_str(), cat_w as usize), t.muted())),
            ]);
            let row = Row::new(cells);
            if first + i == self.selected { row.style(t.selected()) } else { row }
        });
        let mut head = vec![("%GPU", true), ("ms/step", true), ("x/step", true)];
        head.extend(rates.headers());
        head.extend([(tc.as_str(), false), ("kernel", false), ("category", false)]);
        let mut widths = vec![Constraint::Length(6), Constraint::Length(9), Constraint::Length(7)];
        widths.extend(rates.widths());
        widths.extend([Constraint::Length(2), Constraint::Fill(1), Constraint::Length(cat_w)]);
        f.render_widget(
            Table::new(rows, widths).header(header(&head, t.header())).column_spacing(1),
            area,
        );
    }
}

impl KernelsPane {
    /// What the profile's devices call the units the `tensorcore` flag
    /// marks: "Tensor Cores" until a result is in.
    fn units(&self) -> &'static str {
        self.result.as_ref().map_or("Tensor Cores", |k| k.matrix_units)
    }

    /// A new query from the first row (filters, regex, drill-down).
    pub fn requery(&mut self, ctx: &Ctx<'_>) {
        self.selected = 0;
        self.rerun(ctx);
    }

    /// Phases → this phase's kernels: the phase filter set, from the first row.
    pub fn drill(&mut self, phase: String, ctx: &Ctx<'_>) {
        self.query.phase = Some(phase);
        self.requery(ctx);
    }

    /// Re-runs the lens with the current query, on the worker when the
    /// list is long.
    fn rerun(&mut self, ctx: &Ctx<'_>) {
        let Some(d) = ctx.data else { return };
        let rows = d.profile().kernels.len();
        if let Some(w) = ctx.worker.filter(|_| rows > ctx.background_rows) {
            if let Some(id) = w.send(Arc::clone(&d.input), self.query.clone()) {
                self.pending = Some(id);
                return;
            }
        }
        let result = kernels(d.profile(), &self.query);
        self.pending = None;
        self.done(result);
    }

    /// The worker's answer for job `id`; true when it was the awaited one.
    pub fn answered(&mut self, id: u64, result: libreyolo_core::Result<Kernels>) -> bool {
        if self.pending != Some(id) {
            return false;
        }
        self.pending = None;
        self.done(result);
        true
    }

    fn done(&mut self, result: libreyolo_core::Result<Kernels>) {
        match result {
            Ok(k) => {
                self.selected = self.selected.min(k.kernels.len().saturating_sub(1));
                self.result = Some(k);
                self.error = None;
            }
            Err(e) => self.error = Some(crate::view::refusal(&e)),
        }
        if self.result.as_ref().is_none_or(|k| k.kernels.is_empty()) {
            self.detail = false;
        }
    }

    /// Opens the details of the kernel named `raw_name`, clearing the
    /// filters so it is in the list (run in place: the row's position is
    /// needed now). False when the profile has no such kernel.
    pub fn show(&mut self, raw_name: &str, data: Option<&Loaded>) -> bool {
        let Some(d) = data else { return false };
        self.query = KernelQuery::default();
        self.pending = None;
        self.done(kernels(d.profile(), &self.query));
        let Some(i) = self
            .result
            .as_ref()
            .and_then(|k| k.kernels.iter().position(|r| r.raw_name == raw_name))
        else {
            return false;
        };
        self.selected = i;
        self.detail = true;
        true
    }

    /// Tree → the kernels with this label (the tree's name for a kernel):
    /// the list filtered to them, the costliest one's details open (run in
    /// place). False when the profile has no such kernel.
    pub fn show_label(&mut self, label: &str, data: Option<&Loaded>) -> bool {
        let Some(d) = data else { return false };
        self.query = KernelQuery { grep: Some(exactly(label)), ..KernelQuery::default() };
        self.pending = None;
        self.selected = 0;
        self.done(kernels(d.profile(), &self.query));
        self.detail = self.result.as_ref().is_some_and(|k| !k.kernels.is_empty());
        if !self.detail {
            self.query = KernelQuery::default();
            self.done(kernels(d.profile(), &self.query));
        }
        self.detail
    }

    /// The kernel under the cursor.
    pub fn selected_kernel(&self) -> Option<&KernelRow> {
        self.result.as_ref()?.kernels.get(self.selected)
    }

    /// The details of the kernel under the cursor, phase by phase.
    fn detail(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let (Some(k), Some(p)) = (self.selected_kernel(), view.profile()) else { return };
        let field = |label: &str, value: String| {
            Line::from(vec![Span::styled(format!("{label:<14}"), t.header()), Span::raw(value)])
        };
        let mut lines = vec![Line::styled(k.kernel.clone(), t.title())];
        // The call it was opened on (the selection may have moved since).
        let call = self.call.as_ref().filter(|c| c.raw_name == k.raw_name);
        if let Some(c) = call {
            let ms = |ns: i64| fixed(ns as f64 / 1e6, 3);
            let mut text =
                format!("{} ms at {} ms of {} · {}", ms(c.dur_ns), ms(c.start_ns), c.step, c.lane);
            if let Some(op) = &c.launched_by {
                text.push_str(&format!(" · launched by {op}"));
            }
            lines.push(field("this call", text));
        }
        lines.extend([Line::raw(""), Line::styled("full name", t.header())]);
        // Cut by characters, not words: a C++ signature has few spaces.
        let chars: Vec<char> = k.raw_name.chars().collect();
        for chunk in chars.chunks((area.width as usize).max(1)) {
            lines.push(Line::raw(chunk.iter().collect::<String>()));
        }
        lines.extend([
            Line::raw(""),
            field("category", k.category.to_string()),
            field(
                self.units().trim_end_matches('s'),
                if k.tensorcore { "yes".into() } else { "no".into() },
            ),
            field("share of GPU", format!("{}%", fixed(k.pct_of_gpu, 2))),
            field("ms per step", fixed(k.ms_per_step, 4)),
        ]);
        let (spread, launch) = call_lines(k);
        lines.push(field("calls/step", format!("{}{spread}", num(k.count_per_step, 2))));
        lines.extend(launch.map(|l| field("launch", l)));
        for (label, value) in rate_lines(&k.achieved, None) {
            lines.push(field(label, value));
        }
        if let Some(p) = k.priced_share().filter(|p| *p < 100.0) {
            // The rates describe the priced part only (docs/analysis.md §13.2).
            let thin = if k.rates_thin() {
                format!(" {} (rates over that part only)", THIN_MARK)
            } else {
                String::new()
            };
            lines.push(field("priced", format!("{}% of its time{thin}", fixed(p, 1))));
        }
        let mut phases = vec![Line::raw("")];
        let split = phase_split(p, &k.raw_name);
        if split.is_empty() {
            phases.push(Line::styled("no per-phase split in this profile", t.muted()));
        } else {
            phases.push(Line::styled(
                format!("{:<14}{:>10} {:>10} {:>8}", "phase", "ms/step", "calls/step", "%GPU"),
                t.header(),
            ));
            for (phase, r) in split {
                phases.push(Line::raw(format!(
                    "{:<14}{:>10} {:>10} {:>8}",
                    clip(&phase, 13),
                    fixed(r.ms_per_step, 4),
                    num(r.count_per_step, 2),
                    fixed(r.pct_of_gpu, 2)
                )));
            }
        }
        let [body, hint] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(area);
        // The callers get what the phase split leaves, and at least 2 rows
        // where there are.
        let room = (body.height as usize).saturating_sub(lines.len());
        let callers_room = room.saturating_sub(phases.len()).max(room.min(2));
        lines.extend(launched_from(p, k, view, area.width as usize, callers_room));
        lines.extend(phases);
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
        f.render_widget(
            Paragraph::new(Line::styled(
                clip(
                    if self.call.is_some() {
                        "Esc: back to the Timeline · Enter: the list · Up/Down: previous/next kernel · o: its callers in Tree"
                    } else {
                        "Esc/Enter: the list · Up/Down: previous/next kernel · o: its callers in Tree"
                    },
                    area.width as usize,
                ),
                t.muted(),
            )),
            hint,
        );
    }
}

/// The kernel's name in `width` columns: its label, and where the screen
/// has room for more, the name shortened only as far as it needs (a
/// label is cut to the tables' 72 characters).
fn name_in(r: &KernelRow, width: usize) -> String {
    // Only a label with something left out can gain from the room.
    if width > r.kernel.chars().count() && r.kernel.contains('…') {
        return label_within(&r.raw_name, width);
    }
    clip(&r.kernel, width)
}

/// How the kernel's calls ran (docs/analysis.md §7.1): their spread, to
/// follow the calls per step (` · each p50 5.8 µs, max 6.1 µs`), and their
/// launch configuration and streams.
fn call_lines(k: &KernelRow) -> (String, Option<String>) {
    let Some(c) = &k.calls else { return (String::new(), None) };
    let us = |v: f64| {
        if v >= 1000.0 {
            format!("{} ms", fixed(v / 1e3, 3))
        } else {
            format!("{} µs", fixed(v, 1))
        }
    };
    // A 99th percentile of fewer than 100 calls is their longest: not said.
    let p99 = if c.calls >= 100 { format!(", p99 {}", us(c.p99_us)) } else { String::new() };
    let spread = format!(" · each p50 {}{p99}, max {}", us(c.p50_us), us(c.max_us));
    let xyz = |d: [u32; 3]| format!("{}×{}×{}", d[0], d[1], d[2]);
    let mut launch: Vec<String> = Vec::new();
    if let Some(l) = &c.launch_config {
        let more = c.distinct_launch_configs.saturating_sub(1);
        let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
        launch.push(format!("grid {} block {}{more}", xyz(l.grid), xyz(l.block)));
    }
    let streams: Vec<String> =
        c.streams.iter().map(|s| format!("{}:{}", s.device, s.stream)).collect();
    if !streams.is_empty() {
        let noun = if streams.len() == 1 { "stream" } else { "streams" };
        launch.push(format!("{noun} {}", streams.join(", ")));
    }
    (spread, (!launch.is_empty()).then(|| launch.join(" · ")))
}

/// The chain of callers of kernel `k` in the call tree (the `tree` lens
/// bottom-up, by frame, focused on its label alone), innermost first,
/// following the costliest caller, each with its share of the kernel's GPU
/// time: from the kernel to its op, module and Python line. At most `room`
/// lines, labelled as the fields above them.
fn launched_from(
    p: &Profile,
    k: &KernelRow,
    view: &View<'_>,
    width: usize,
    room: usize,
) -> Vec<Line<'static>> {
    let t = view.theme;
    let label = |text: &str| Span::styled(format!("{text:<14}"), t.header());
    let line =
        |text: String| Line::from(vec![label("launched from"), Span::styled(text, t.muted())]);
    let tr = match kernel_callers(p, &k.kernel) {
        Ok(tr) => tr,
        Err(e) => return vec![line(e.to_string())],
    };
    let c = callers(&tr);
    if c.chain.is_empty() && c.branch.is_empty() {
        return vec![line("no launch of it recorded: it sits under its phase".into())];
    }
    let w = width.saturating_sub(14);
    let mut out: Vec<Line<'static>> = Vec::new();
    for (i, r) in c.chain.iter().enumerate() {
        out.push(caller_line(label(if i == 0 { "launched from" } else { "" }), r, "", w));
        // The launching op's shapes, where the performance model read
        // them: those of its costliest call.
        if r.kind == NodeKind::Op && c.chain[..i].iter().all(|r| r.kind != NodeKind::Op) {
            if let Some(shape) =
                p.ops.iter().find(|o| o.op == r.name).and_then(|o| o.shape.as_ref())
            {
                let text = format!("         costliest call: {shape}");
                out.push(Line::from(vec![label(""), Span::styled(clip(&text, w), t.muted())]));
            }
        }
    }
    if !c.branch.is_empty() {
        let first = out.is_empty();
        let from = if first { "" } else { "from " };
        out.push(Line::from(vec![
            label(if first { "launched from" } else { "" }),
            Span::styled(
                clip(&format!("{from}{} callers, costliest first:", c.branch.len()), w),
                t.muted(),
            ),
        ]));
        out.extend(c.branch.iter().map(|r| caller_line(label(""), r, "  ", w)));
    }
    // What does not fit: said, with where to see it.
    if out.len() > room.max(2) {
        let more = out.len() - room.max(2) + 1;
        out.truncate(room.max(2) - 1);
        let text = format!("… {more} more lines of callers (o: every caller in Tree)");
        out.push(Line::from(vec![label(""), Span::styled(clip(&text, w), t.muted())]));
    }
    out
}

/// `  8.4% module nn.Module: Attention_3` after `head`, in `width` columns.
fn caller_line(head: Span<'static>, r: &TreeRow, indent: &str, width: usize) -> Line<'static> {
    let lead = format!("{indent}{:>5}% {:<10}", fixed(r.pct_of_gpu, 1), r.kind.as_str());
    let name_w = width.saturating_sub(lead.chars().count()).max(12);
    Line::from(vec![head, Span::raw(lead), Span::raw(name_of(r, name_w))])
}

/// Drops `phase` when the (re)loaded profile has no such phase; the name
/// dropped, for the app's message.
pub fn drop_vanished_phase(phase: &mut Option<String>, data: Option<&Loaded>) -> Option<String> {
    let names = phase_names(data);
    if phase.as_ref().is_some_and(|ph| !names.contains(ph)) { phase.take() } else { None }
}

/// The categories the pane cycles through: the profile's kernel mix, in
/// its order.
pub fn categories(data: Option<&Loaded>) -> Vec<String> {
    data.map_or_else(Vec::new, |d| {
        d.profile().categories.iter().map(|c| c.name.to_string()).collect()
    })
}

pub fn phase_names(data: Option<&Loaded>) -> Vec<String> {
    data.map_or_else(Vec::new, |d| {
        d.profile().phase_names().iter().map(|s| s.to_string()).collect()
    })
}

/// The roofline columns of the Kernels and Ops tables: none when no row is
/// priced, `%roof` (the share of its roofline) and its bound, and on wide screens the achieved TFLOP/s.
#[derive(Debug, Clone, Copy)]
pub struct RateColumns {
    shown: bool,
    wide: bool,
}

impl RateColumns {
    pub fn of<'a>(mut rows: impl Iterator<Item = &'a Achieved>, wide: bool) -> RateColumns {
        RateColumns { shown: rows.any(Achieved::is_priced), wide }
    }
    /// Screen columns they take, spacing included.
    pub fn width(self) -> u16 {
        match (self.shown, self.wide) {
            (false, _) => 0,
            (true, false) => 6 + 4 + 2,
            (true, true) => 6 + 4 + 8 + 3,
        }
    }
    pub fn headers(self) -> Vec<(&'static str, bool)> {
        match (self.shown, self.wide) {
            (false, _) => vec![],
            (true, false) => vec![("%roof", true), ("bnd", false)],
            (true, true) => vec![("TFLOP/s", true), ("%roof", true), ("bnd", false)],
        }
    }
    pub fn widths(self) -> Vec<Constraint> {
        let mut w = Vec::new();
        if self.shown {
            if self.wide {
                w.push(Constraint::Length(8));
            }
            w.extend([Constraint::Length(6), Constraint::Length(4)]);
        }
        w
    }
    /// `thin`: the rates rest on under half of the row's time
    /// (docs/analysis.md §13.2), marked as the text table marks them.
    pub fn cells(self, a: &Achieved, thin: bool) -> Vec<Cell<'static>> {
        if !self.shown {
            return Vec::new();
        }
        let dash = || "-".to_string();
        let mark = if thin { THIN_MARK } else { "" };
        // Past its roofline: marked on the % (the pane shows no TB/s).
        let past = if a.is_past_roofline() { PAST_MARK } else { "" };
        let mut c = Vec::new();
        if self.wide {
            c.push(right(a.tflops.map_or_else(dash, |v| format!("{}{mark}", fixed(v, 1)))));
        }
        c.push(right(a.pct_of_peak.map_or_else(dash, |v| format!("{v:.0}%{past}{mark}"))));
        c.push(Cell::from(
            a.roofline_bound
                .map_or("", |b| if b == RooflineBound::Compute { "cmp" } else { "mem" }),
        ));
        c
    }
}

/// The roofline figures of a priced row, for a details view.
pub fn rate_lines(a: &Achieved, shape: Option<&str>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(s) = shape {
        out.push(("shape", s.to_string()));
    }
    let (Some(gflop), Some(gb), Some(tflops), Some(tbps)) =
        (a.gflop_per_step, a.gb_per_step, a.tflops, a.tbps)
    else {
        return out;
    };
    out.push(("work/step", format!("{} GFLOP, {} GB", num(gflop, 3), num(gb, 4))));
    out.push((
        "achieved",
        format!(
            "{} TFLOP/s, {} TB/s over {} ms/step",
            fixed(tflops, 2),
            fixed(tbps, 3),
            fixed(a.modelled_ms_per_step.unwrap_or(0.0), 4)
        ),
    ));
    let roof = match (a.pct_of_peak, a.roofline_bound, a.lost_ms_per_step) {
        (Some(p), Some(b), Some(_)) if a.is_past_roofline() => {
            format!("at {p:.0}% of it ({}-bound) {PAST_MARK} {PAST_ROOFLINE}", b.as_str())
        }
        (Some(p), Some(b), Some(l)) => {
            format!("at {p:.0}% of it ({}-bound), {} ms/step lost", b.as_str(), fixed(l, 4))
        }
        _ => "device peaks unknown: no % of peak".to_string(),
    };
    out.push(("roofline", roof));
    out
}
