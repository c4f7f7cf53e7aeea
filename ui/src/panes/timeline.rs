//! Timeline: one step of the trace as lanes (the loop thread's phases and
//! top-level ops, each GPU stream, the union "GPU busy"), drawn at the
//! terminal's resolution. The lanes come from the core's timeline lens,
//! which re-reads one step of the trace on a background thread; the pane
//! owns the step shown, the visible window, the selected lane and the
//! cursor (a span of that lane).
//!
//! Drawing reads only: each cell of a lane is the share of its time each
//! category covers, computed from the spans in the visible window (binary
//! search to the first, then one pass), so a frame costs the visible spans
//! plus the cells, whatever the size of the trace.

use std::sync::Arc;

use libreyolo_core::analysis::timeline::{LaneKind, Span, StepIndex, Timeline};
use libreyolo_core::profile::Category;
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span as Text};
use ratatui::widgets::{Paragraph, Wrap};

use super::kernels::Call;
use super::{clip, window};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// The narrowest window a zoom reaches (ns).
const MIN_VIEW: i64 = 1_000;
/// Width of the lane labels.
const LABEL_W: u16 = 11;

#[derive(Debug, Clone, Default)]
pub struct TimelinePane {
    /// The trace's steps, once indexed.
    pub index: Option<Arc<StepIndex>>,
    /// The step shown (position in `index.steps`).
    pub step: usize,
    pub timeline: Option<Arc<Timeline>>,
    /// Why there is no timeline (no trace, a read error).
    pub error: Option<String>,
    /// The load job running for `step`.
    pub pending: Option<u64>,
    /// The step that job reads: `[` and `]` count from it, so a burst of
    /// them moves as many steps as keys.
    pub requested: Option<usize>,
    /// Selected lane.
    pub lane: usize,
    /// Selected span of the lane.
    pub cursor: usize,
    /// Visible window, ns from the step's start: [t0, t1).
    pub view: (i64, i64),
}

impl Component for TimelinePane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::PrevStep, Action::NextStep], "previous / next step"),
            hint(&[Action::Top], "type a step number"),
            hint(&[Action::ZoomIn, Action::ZoomOut], "zoom in / out"),
            hint(&[Action::Up, Action::Down], "lane above / below"),
            hint(&[Action::Left, Action::Right], "previous / next span in the lane"),
            hint(&[Action::PageUp, Action::PageDown], "pan by a screen"),
            hint(&[Action::Enter], "details of the kernel call (Esc comes back)"),
        ]
    }

    fn update(&mut self, a: Action, _ctx: &Ctx<'_>) -> Effect {
        let steps = self.index.as_ref().map_or(0, |ix| ix.steps.len());
        let at = self.requested.unwrap_or(self.step);
        match a {
            Action::PrevStep if at > 0 => return Effect::Step(at - 1),
            Action::NextStep if at + 1 < steps => return Effect::Step(at + 1),
            Action::Top if steps > 0 => {
                return Effect::Edit(Editor { field: Field::Step, text: String::new() });
            }
            _ => {}
        }
        let Some(tl) = self.timeline.clone() else { return Effect::Pass };
        let lanes = tl.lanes.len();
        match a {
            Action::Up | Action::Down if lanes > 0 => {
                let t = self.cursor_time(&tl);
                self.lane = if a == Action::Up {
                    self.lane.saturating_sub(1)
                } else {
                    (self.lane + 1).min(lanes - 1)
                };
                self.cursor = nearest(
                    &tl.lanes[self.lane].spans,
                    t.unwrap_or((self.view.0 + self.view.1) / 2),
                );
            }
            Action::Left | Action::Right => {
                let n = tl.lanes.get(self.lane).map_or(0, |l| l.spans.len());
                if n > 0 {
                    self.cursor = if a == Action::Left {
                        self.cursor.saturating_sub(1)
                    } else {
                        (self.cursor + 1).min(n - 1)
                    };
                    self.follow(&tl);
                }
            }
            Action::PageUp | Action::PageDown => {
                let w = self.view.1 - self.view.0;
                let shift = if a == Action::PageUp { -w } else { w };
                self.pan_to(self.view.0 + shift, &tl);
                if let Some(l) = tl.lanes.get(self.lane) {
                    self.cursor = nearest(&l.spans, (self.view.0 + self.view.1) / 2);
                }
            }
            Action::ZoomIn | Action::ZoomOut => {
                let centre = self.cursor_time(&tl).unwrap_or((self.view.0 + self.view.1) / 2);
                let w = self.view.1 - self.view.0;
                let whole = tl.extent.max(MIN_VIEW);
                // Halving an odd width drops a nanosecond: doubling back
                // to within it is the whole step again.
                let w = if a == Action::ZoomIn {
                    (w / 2).max(MIN_VIEW)
                } else {
                    (w.saturating_mul(2) + 1).min(whole)
                };
                self.view.1 = self.view.0 + w;
                self.pan_to(centre - w / 2, &tl);
            }
            Action::Enter => {
                let span = tl
                    .lanes
                    .get(self.lane)
                    .filter(|l| matches!(l.kind, LaneKind::Stream { .. }))
                    .and_then(|l| l.spans.get(self.cursor));
                if let Some(s) = span.filter(|s| s.category != u8::MAX) {
                    let step = tl.step.number.map_or("the trace".into(), |n| format!("step {n}"));
                    return Effect::ShowCall(Call {
                        raw_name: tl.name(s.name).to_string(),
                        step,
                        start_ns: s.start,
                        dur_ns: s.dur(),
                        lane: tl.lanes[self.lane].label.clone(),
                        launched_by: s.launch.map(|op| tl.name(op).to_string()),
                    });
                }
            }
            _ => return Effect::Pass,
        }
        Effect::None
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(tl) = self.timeline.as_deref() else {
            let msg = match (&self.error, self.pending) {
                (Some(e), _) => Line::styled(e.clone(), t.warn()),
                (None, Some(_)) if self.index.is_none() => {
                    Line::styled("finding the trace's steps (one pass over the file)…", t.muted())
                }
                (None, Some(_)) => Line::styled("reading the step from the trace…", t.muted()),
                _ => Line::styled("no timeline loaded", t.muted()),
            };
            f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: false }), area);
            return;
        };
        let [head, lanes_area, detail, legend] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(area);
        let steps = self.index.as_ref().map_or(1, |ix| ix.steps.len());
        let number = tl
            .step
            .number
            .map_or("whole trace (no step markers)".to_string(), |n| format!("step {n}"));
        let mut head_spans = vec![
            Text::styled(format!("{number} ({} of {steps})", self.step + 1), t.title()),
            Text::raw(format!(
                " · {} ms · view {}–{} ms",
                num(tl.len as f64 / 1e6, 3),
                num(self.view.0 as f64 / 1e6, 3),
                num(self.view.1 as f64 / 1e6, 3)
            )),
        ];
        if self.pending.is_some() {
            head_spans.push(Text::styled(" · reading…", t.warn()));
        }
        if tl.truncated {
            head_spans.push(Text::styled(" · step cut at the interval cap", t.warn()));
        }
        f.render_widget(Paragraph::new(Line::from(head_spans)), head);

        let rows = lanes_area.height as usize;
        let (first, last) = window(self.lane, tl.lanes.len(), rows);
        let cells = lanes_area.width.saturating_sub(LABEL_W + 1) as usize;
        let lines: Vec<Line> = (first..last)
            .map(|i| {
                let lane = &tl.lanes[i];
                let label_style = if i == self.lane { t.selected() } else { t.header() };
                let mut spans = vec![Text::styled(
                    format!("{:<w$} ", clip(&lane.label, LABEL_W as usize), w = LABEL_W as usize),
                    label_style,
                )];
                let cursor = (i == self.lane).then(|| lane.spans.get(self.cursor)).flatten();
                spans.extend(lane_cells(tl, &lane.spans, lane.kind, self.view, cells, cursor, t));
                Line::from(spans)
            })
            .collect();
        f.render_widget(Paragraph::new(lines), lanes_area);

        f.render_widget(Paragraph::new(detail_lines(self, t, detail.width as usize)), detail);
        let mut l = vec![Text::styled("legend ", t.muted())];
        for c in &Category::ALL {
            l.push(Text::styled(glyph(c).to_string(), category_style(c, t)));
            l.push(Text::raw(format!("{} ", short_category(c.as_str()))));
        }
        f.render_widget(Paragraph::new(Line::from(l)), legend);
    }
}

impl TimelinePane {
    /// A step arrived: the whole step in view, the cursor on the first GPU
    /// work (the lane a user came for).
    pub fn show(&mut self, index: Arc<StepIndex>, step: usize, tl: Timeline) {
        self.index = Some(index);
        self.step = step;
        self.error = None;
        self.view = (0, tl.extent.max(MIN_VIEW));
        self.lane =
            tl.lanes.iter().position(|l| matches!(l.kind, LaneKind::Stream { .. })).unwrap_or(0);
        self.cursor = 0;
        self.timeline = Some(Arc::new(tl));
    }

    /// Forgets the trace (a reload): the next visit reads it again.
    pub fn reset(&mut self) {
        *self = TimelinePane::default();
    }

    /// True when the pane has nothing to show and nothing on the way: its
    /// first visit reads step 0.
    pub fn unread(&self) -> bool {
        self.timeline.is_none() && self.pending.is_none() && self.error.is_none()
    }

    /// The position of the step numbered `text` in the trace's steps, or
    /// why there is none (for the status line).
    pub fn step_numbered(&self, text: &str) -> Result<usize, String> {
        let ix = self.index.as_ref();
        text.parse::<u64>().ok().and_then(|n| ix.and_then(|ix| ix.find(n))).ok_or_else(|| {
            let have: Vec<String> = ix.map_or_else(Vec::new, |ix| {
                ix.steps.iter().filter_map(|s| s.number).map(|n| n.to_string()).collect()
            });
            format!("no step {text} in this trace (steps: {})", have.join(", "))
        })
    }

    /// The selected span.
    pub fn selected(&self) -> Option<(&Timeline, &Span)> {
        let tl = self.timeline.as_deref()?;
        Some((tl, tl.lanes.get(self.lane)?.spans.get(self.cursor)?))
    }

    fn cursor_time(&self, tl: &Timeline) -> Option<i64> {
        let s = tl.lanes.get(self.lane)?.spans.get(self.cursor)?;
        Some((s.start + s.end) / 2)
    }

    /// Pans so the cursor's span is in view.
    fn follow(&mut self, tl: &Timeline) {
        let Some(s) = tl.lanes.get(self.lane).and_then(|l| l.spans.get(self.cursor)) else {
            return;
        };
        let w = self.view.1 - self.view.0;
        if s.start < self.view.0 {
            self.pan_to(s.start - w / 8, tl);
        } else if s.start >= self.view.1 {
            self.pan_to(s.start - w * 7 / 8, tl);
        }
    }

    fn pan_to(&mut self, t0: i64, tl: &Timeline) {
        let w = self.view.1 - self.view.0;
        let t0 = t0.clamp(0, (tl.extent - w).max(0));
        self.view = (t0, t0 + w);
    }
}

/// The selected span's name, duration, category, launch, the gap before
/// it and, when it ended a GPU idle gap, that gap's causes.
fn detail_lines(pane: &TimelinePane, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let Some((tl, s)) = pane.selected() else {
        return vec![Line::styled("nothing on this lane", t.muted())];
    };
    let us = |ns: i64| format!("{} us", num(ns as f64 / 1e3, 1));
    let mut out = vec![Line::styled(clip(tl.name(s.name), width), t.title())];
    let mut facts = format!("{} at {} ms", us(s.dur()), num(s.start as f64 / 1e6, 3));
    if let Some(c) = Timeline::category_name(s.category) {
        facts.push_str(&format!(" · {c}"));
    }
    facts.push_str(&format!(" · gap before {}", us(tl.gap_before(pane.lane, pane.cursor))));
    let mut hint = String::new();
    // The GPU idle this kernel ended, and why the GPU waited.
    if let Some(g) = tl.idle_before(s) {
        facts.push_str(&format!(" · GPU idle {} before it", us(g.end - g.start)));
        let why: Vec<String> = g
            .causes
            .iter()
            .take(3)
            .map(|(c, ns, at)| format!("{} {} ({at})", c.as_str(), us(*ns)))
            .collect();
        hint.push_str(&format!("why: {} · ", why.join(", ")));
    }
    out.push(Line::raw(clip(&facts, width)));
    if let Some(op) = s.launch {
        hint.push_str(&format!("launched by {} · ", tl.name(op)));
    }
    hint.push_str("[ ] step · g step # · +/- zoom · h/l span · PgUp/PgDn pan · Enter details");
    out.push(Line::styled(clip(&hint, width), t.muted()));
    out
}

/// The span at or after time `t` on a lane (the last one when none is).
fn nearest(spans: &[Span], t: i64) -> usize {
    let i = spans.partition_point(|s| s.end <= t);
    i.min(spans.len().saturating_sub(1))
}

/// One glyph per category, so the lanes read without colour (NO_COLOR).
/// A category's glyph, keyed by the category (a category added to
/// [`Category`] shows as `other` until it is given its own here).
fn glyph(c: &Category) -> char {
    match c {
        Category::Communication => '≈',
        Category::Attention => '▓',
        Category::GemmConv => '█',
        Category::ReductionNorm => '▒',
        Category::LayoutCopy => '=',
        Category::Elementwise => '░',
        Category::Softmax => '~',
        _ => '#',
    }
}

/// A category's word on the legend (which must fit 80 columns).
fn short_category(name: &str) -> &str {
    match name {
        "communication" => "comm",
        _ => name.split(" /").next().unwrap_or(name),
    }
}

fn category_style(c: &Category, t: &Theme) -> Style {
    match c {
        Category::Communication => t.warn(),
        Category::Attention => t.title(),
        Category::GemmConv => t.accent(),
        Category::ReductionNorm | Category::Softmax => t.header(),
        Category::LayoutCopy => t.muted(),
        Category::Elementwise => t.better(),
        _ => t.worse(),
    }
}

/// The cells of one lane for the window `view` at `cells` columns: per
/// cell, the category covering most of it; a cell less than half covered
/// shows `·`; an idle one is blank.
fn lane_cells(
    tl: &Timeline,
    spans: &[Span],
    kind: LaneKind,
    view: (i64, i64),
    cells: usize,
    cursor: Option<&Span>,
    t: &Theme,
) -> Vec<Text<'static>> {
    if cells == 0 {
        return Vec::new();
    }
    let (t0, t1) = view;
    let w = ((t1 - t0) as f64 / cells as f64).max(1e-9);
    // Coverage per cell and key (category, or the phase's name for phases).
    // One key per category, and the last for spans of none (busy, phases).
    const NO_CATEGORY: usize = Category::ALL.len();
    let mut cover: Vec<[f64; NO_CATEGORY + 1]> = vec![[0.0; NO_CATEGORY + 1]; cells];
    let mut phase_at: Vec<Option<u32>> = vec![None; cells];
    let mut selected = vec![false; cells];
    // From the first span still running at t0: lanes hold serial work
    // (one stream, top-level ops, merged busy time), so looking back stops
    // at the first span that ended before the window.
    let mut first = spans.partition_point(|s| s.start < t0);
    while first > 0 && spans[first - 1].end > t0 {
        first -= 1;
    }
    for s in &spans[first..] {
        if s.start >= t1 {
            break;
        }
        if s.end <= t0 {
            continue;
        }
        let a = ((s.start.max(t0) - t0) as f64 / w).max(0.0);
        let b = ((s.end.min(t1) - t0) as f64 / w).min(cells as f64);
        let key = if s.category == u8::MAX {
            NO_CATEGORY
        } else {
            usize::from(s.category).min(NO_CATEGORY - 1)
        };
        let is_cursor = cursor.is_some_and(|c| std::ptr::eq(c, s));
        // A span narrower than a cell still marks its cell (as `·`).
        let c0 = (a.floor() as usize).min(cells - 1);
        let c1 = (b.ceil() as usize).max(c0 + 1).min(cells);
        for c in c0..c1 {
            cover[c][key] += (b.min(c as f64 + 1.0) - a.max(c as f64)).max(1e-6);
            if kind == LaneKind::Phases {
                phase_at[c] = Some(s.name);
            }
            selected[c] |= is_cursor;
        }
    }
    let mut out: Vec<Text<'static>> = Vec::with_capacity(cells);
    for c in 0..cells {
        let total: f64 = cover[c].iter().sum();
        let (key, _) = cover[c]
            .iter()
            .enumerate()
            .fold((NO_CATEGORY, 0.0), |best, (k, v)| if *v > best.1 { (k, *v) } else { best });
        let (ch, style) = if total <= 0.0 {
            (' ', t.base())
        } else if kind == LaneKind::Phases {
            let name = phase_at[c].map_or("", |n| tl.name(n));
            (name.chars().next().unwrap_or('?'), t.accent())
        } else if key == NO_CATEGORY {
            (
                if total >= 0.5 { '▬' } else { '·' },
                if kind == LaneKind::Busy { t.bar() } else { t.base() },
            )
        } else {
            let c = &Category::ALL[key];
            (if total >= 0.5 { glyph(c) } else { '·' }, category_style(c, t))
        };
        let style = if selected[c] { t.selected() } else { style };
        out.push(Text::styled(ch.to_string(), style));
    }
    out
}
