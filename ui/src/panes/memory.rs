//! Memory: the allocator timeline of the window, per device
//! (docs/spec.md §3, the `memory` lens). The selected device's allocated
//! memory (and reserved, when the trace records it) is charted over the
//! window with the peak marked; below, the peak's time, phase and op, and
//! each phase's peak. Up/Down choose the device when there are several.
//! A profile without `[memory]` events shows the lens's one line. The op
//! at the peak shows when the profile names it: the explorer loads a raw
//! trace without the extra pass `profile memory` makes for it
//! (docs/spec.md §6).
//!
//! In a job, the shown rank's profile; in Compare mode, the main one's.

use libreyolo_core::lens::memory::{Memory, memory};
use libreyolo_core::profile::DeviceMemory;
use libreyolo_core::render::text::{memory_peak_at, memory_peaks, num};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Row, Table, Wrap};

use super::{clip, header, opt, right};
use crate::input::Action;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

#[derive(Debug, Clone, Default)]
pub struct MemoryPane {
    /// The device charted (position in the lens's devices).
    pub device: usize,
}

impl Component for MemoryPane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![hint(&[Action::Up, Action::Down], "previous / next device")]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let n = ctx.data.map_or(0, |d| d.profile().memory.len());
        match super::movement(a, ctx.page) {
            Some(delta) => {
                self.device = super::moved(self.device, n, delta);
                Effect::None
            }
            None => Effect::Pass,
        }
    }

    /// A profile (re)loaded: keep the device when it is still there.
    fn refresh(&mut self, ctx: &Ctx<'_>) -> Option<String> {
        let n = ctx.data.map_or(0, |d| d.profile().memory.len());
        self.device = self.device.min(n.saturating_sub(1));
        None
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(p) = view.profile() else { return };
        let m = memory(p);
        if let Some(none) = &m.none {
            f.render_widget(
                Paragraph::new(Line::styled(none.clone(), t.muted())).wrap(Wrap { trim: false }),
                area,
            );
            return;
        }
        let Some(d) = m.devices.get(self.device.min(m.devices.len().saturating_sub(1))) else {
            return;
        };
        let w = area.width as usize;
        let head = head_lines(&m, d, self.device, t, w);
        // The phase table takes at most a third of the pane.
        let table_h = (d.phases.len() as u16 + 1).min(area.height / 3).max(2);
        let [top, chart, table, hint] = Layout::vertical([
            Constraint::Length(head.len() as u16),
            Constraint::Min(5),
            Constraint::Length(table_h),
            Constraint::Length(1),
        ])
        .areas(area);
        f.render_widget(Paragraph::new(head), top);
        self.chart(f, &m, d, t, chart);
        phase_table(f, d, t, table);
        let mut h = "MB over the window's ms · allocated".to_string();
        if d.peak_reserved_mb.is_some() {
            h.push_str(", reserved (dim)");
        }
        h.push_str(" · █ peak");
        if m.devices.len() > 1 {
            h.push_str(" · Up/Down device");
        }
        if d.phases.len() + 1 > table_h as usize {
            h.push_str(&format!(
                " · {} more phases: profile memory",
                d.phases.len() + 1 - table_h as usize
            ));
        }
        f.render_widget(Paragraph::new(Line::styled(clip(&h, w), t.muted())), hint);
    }
}

impl MemoryPane {
    fn chart(&self, f: &mut Frame, m: &Memory, d: &DeviceMemory, t: &Theme, area: Rect) {
        let alloc: Vec<(f64, f64)> = d.series.iter().map(|p| (p.0, p.1)).collect();
        let resv: Vec<(f64, f64)> = d.series.iter().filter_map(|p| p.2.map(|r| (p.0, r))).collect();
        let peak = [(d.peak_ms, d.peak_allocated_mb)];
        let top = d
            .peak_reserved_mb
            .unwrap_or(0.0)
            .max(d.peak_allocated_mb)
            .max(resv.iter().map(|p| p.1).fold(0.0, f64::max));
        let lo = d.series.iter().map(|p| p.1).fold(0.0, f64::min);
        let x1 = m.window_ms.max(d.series.last().map_or(0.0, |p| p.0)).max(1e-3);
        let y1 = if top > lo { top * 1.05 } else { lo + 1.0 };
        let mut sets = Vec::new();
        if !resv.is_empty() {
            sets.push(
                Dataset::default()
                    .name("reserved")
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(t.muted())
                    .data(&resv),
            );
        }
        sets.push(
            Dataset::default()
                .name("allocated")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(t.accent())
                .data(&alloc),
        );
        sets.push(
            Dataset::default()
                .name("peak")
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(t.warn())
                .data(&peak),
        );
        let x = Axis::default()
            .style(t.muted())
            .bounds([0.0, x1])
            .labels(vec![Span::raw("0"), Span::raw(num(x1, 1))]);
        let y = Axis::default()
            .style(t.muted())
            .bounds([lo, y1])
            .labels(vec![Span::raw(num(lo, 0)), Span::raw(num(y1, 0))]);
        f.render_widget(Chart::new(sets).x_axis(x).y_axis(y), area);
    }
}

/// The device list, the peaks and where the allocated peak is.
fn head_lines(
    m: &Memory,
    d: &DeviceMemory,
    sel: usize,
    t: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    let mut devs = vec![Span::styled("device ", t.muted())];
    for (i, x) in m.devices.iter().enumerate() {
        if i > 0 {
            devs.push(Span::raw(" "));
        }
        let (mark, style) = if i == sel { ("▸", t.selected()) } else { ("", t.muted()) };
        devs.push(Span::styled(format!("{mark}{}", x.device), style));
    }
    devs.push(Span::styled(format!(" · {} events", d.events), t.muted()));
    let peaks = memory_peaks(d, " · ");
    let at = memory_peak_at(m, d, " · ");
    let mut out = vec![
        Line::from(devs),
        Line::styled(clip(&peaks, width), t.title()),
        Line::raw(clip(&at, width)),
    ];
    if !d.totals {
        out.push(Line::styled(
            clip("counted from the first event: the trace records sizes, not totals", width),
            t.warn(),
        ));
    }
    out
}

fn phase_table(f: &mut Frame, d: &DeviceMemory, t: &Theme, area: Rect) {
    let rows = d.phases.iter().map(|p| {
        Row::new(vec![
            p.phase.clone().into(),
            right(num(p.peak_allocated_mb, 1)),
            right(opt(p.peak_reserved_mb, 1)),
        ])
    });
    let widths = [Constraint::Fill(1), Constraint::Length(14), Constraint::Length(13)];
    let cols = [("phase", false), ("peak alloc MB", true), ("peak resv MB", true)];
    f.render_widget(
        Table::new(rows, widths).header(header(&cols, t.header())).column_spacing(2),
        area,
    );
}
