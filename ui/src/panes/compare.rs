//! Compare: the `compare` lens — the two profiles side by side with the
//! change of each metric, coloured better/worse, the significance verdict,
//! and the phase, category and kernel deltas. With one profile it asks for
//! the path of a second. The pane owns the comparison (recomputed when
//! either side loads) and its scroll offset.

use std::path::Path;

use libreyolo_core::lens::compare::{Comparison, RowDelta, RowStatus, compare};
use libreyolo_core::render::text::metric_value;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clip, moved, opt};
use crate::editor::{Editor, Field};
use crate::input::Action;
use crate::slot::{Slot, display_name};
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// Lines the scroll may go down (a comparison is never longer).
const MAX_SCROLL: usize = 2000;

#[derive(Debug, Clone, Default)]
pub struct ComparePane {
    pub comparison: Option<Comparison>,
    pub scroll: u16,
}

impl Component for ComparePane {
    fn keys(&self) -> Vec<KeyHint> {
        vec![hint(
            &[Action::OpenOther, Action::Enter],
            "open a second profile (Enter too, before one is open)",
        )]
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        if let Some(delta) = super::movement(a, ctx.page) {
            self.scroll = moved(self.scroll as usize, MAX_SCROLL, delta) as u16;
            return Effect::None;
        }
        match a {
            Action::OpenOther => Effect::Edit(Editor { field: Field::Path, text: String::new() }),
            Action::Enter if ctx.other.data.is_none() => {
                Effect::Edit(Editor { field: Field::Path, text: String::new() })
            }
            _ => Effect::Pass,
        }
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        if let Some(c) = &self.comparison {
            let lines = lines(c, t, area.width as usize);
            f.render_widget(Paragraph::new(lines).scroll((self.scroll, 0)), area);
            return;
        }
        if view.other.loading.is_some() {
            super::loading(f, t, view.other, area, "Loading");
            return;
        }
        let mut lines = vec![
            Line::styled("Compare needs a second profile.", t.title()),
            Line::raw(""),
            Line::raw("Press o (or Enter) and type the path of a profile.json, a project"),
            Line::raw("folder or a raw trace; it opens as the \"after\" side."),
        ];
        if let Some(ed) = view.editor.filter(|e| e.field == Field::Path) {
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled("path: ", t.accent()),
                Span::raw(ed.text.clone()),
                Span::styled("█", t.accent()),
            ]));
        }
        if let Some(e) = &view.other.error {
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                format!("could not open {}: {e}", view.other.arg.display()),
                t.warn(),
            ));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
    }
}

impl ComparePane {
    /// Recomputes the comparison once both sides are loaded (either side
    /// loaded, or another rank shown).
    pub fn recompute(&mut self, main: &Slot, other: &Slot) {
        self.comparison = match (&main.data, &other.data) {
            (Some(a), Some(b)) => {
                let (m, o) = (main.arg.to_string_lossy(), other.arg.to_string_lossy());
                Some(compare(a.profile(), b.profile(), &m, &o))
            }
            _ => None,
        };
    }
}

fn improved_style(t: &Theme, improved: Option<bool>) -> Style {
    match improved {
        Some(true) => t.better(),
        Some(false) => t.worse(),
        None => Style::default(),
    }
}

/// The pane's lines: a metric table, then the row deltas.
pub fn lines(c: &Comparison, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    out.push(Line::from(vec![
        Span::styled(format!("{:<14}", "before"), t.header()),
        Span::raw(clip(
            &format!("{} ({})", display_name(Path::new(&c.before)), c.mode[0]),
            width.saturating_sub(14),
        )),
    ]));
    out.push(Line::from(vec![
        Span::styled(format!("{:<14}", "after"), t.header()),
        Span::raw(clip(
            &format!("{} ({})", display_name(Path::new(&c.after)), c.mode[1]),
            width.saturating_sub(14),
        )),
    ]));
    if let Some(w) = &c.warning {
        out.push(Line::styled(format!("warning: {w}"), t.warn()));
    }
    for n in &c.notes {
        out.push(Line::styled(clip(&format!("note: {n}"), width), t.muted()));
    }
    out.push(Line::raw(""));
    let wide = width >= 100;
    let vw = if wide { 16 } else { 15 };
    let mut head = format!("{:<14}{:>vw$} {:>vw$} {:>8}", "metric", "before", "after", "change");
    if wide {
        head.push_str("  significance");
    }
    out.push(Line::styled(head, t.header()));
    for m in &c.metrics {
        // A share changes in points, anything else in percent (as the text).
        let change = match (m.change_pts, m.change_pct) {
            (Some(p), _) => format!("{p:+.1} pts"),
            (None, Some(p)) => format!("{p:+.1}%"),
            (None, None) => String::new(),
        };
        let mut spans = vec![
            Span::raw(format!("{:<14}", m.label)),
            Span::raw(format!("{:>vw$} ", clip(&metric_value(m, m.before), vw))),
            Span::styled(
                format!("{:>vw$} ", clip(&metric_value(m, m.after), vw)),
                improved_style(t, m.improved),
            ),
            Span::styled(format!("{change:>8}"), improved_style(t, m.improved)),
        ];
        let sig = match m.significance.significant {
            Some(true) => Some(("significant".to_string(), t.better())),
            Some(false) => Some(("NOT significant".to_string(), t.warn())),
            None if m.metric == "img_per_s" => Some(("no call".to_string(), t.muted())),
            None => None,
        };
        if let Some((label, style)) = sig {
            let detail =
                if wide { format!(": {}", m.significance.significance) } else { String::new() };
            spans.push(Span::styled(
                clip(&format!("  {label}{detail}"), width.saturating_sub(14 + 2 * vw + 10)),
                style,
            ));
        }
        out.push(Line::from(spans));
    }
    if let Some(m) = c.throughput().filter(|m| m.significance.significant.is_none()) {
        out.push(Line::styled(clip(&m.significance.significance, width), t.muted()));
    }
    out.push(Line::from(vec![
        Span::styled(format!("{:<14}", "verdict"), t.header()),
        Span::raw(format!("{} -> {}", c.bound[0], c.bound[1])),
    ]));
    let phases = format!("Phases ({}/step)", c.phases_measure.heading());
    section(&mut out, t, &phases, &c.phases, width);
    section(&mut out, t, "Kernel mix (ms/step)", &c.categories, width);
    section(&mut out, t, "GPU idle by cause (ms/step)", &c.idle, width);
    section(&mut out, t, "Kernels, largest changes first (ms/step)", &c.kernels, width);
    out.push(Line::raw(""));
    out.push(Line::styled("Up/Down scroll · o open another profile", t.muted()));
    out
}

fn section(out: &mut Vec<Line<'static>>, t: &Theme, title: &str, rows: &[RowDelta], width: usize) {
    if rows.is_empty() {
        return;
    }
    out.push(Line::raw(""));
    let n = rows.len();
    out.push(Line::styled(
        format!("{title} · {n} row{}", if n == 1 { "" } else { "s" }),
        t.header(),
    ));
    for r in rows {
        let (label, style) = match r.status {
            RowStatus::Faster => ("faster", t.better()),
            RowStatus::Slower => ("slower", t.worse()),
            RowStatus::Same => ("same", t.muted()),
            RowStatus::Appeared => ("appeared", t.warn()),
            RowStatus::Disappeared => ("gone", t.warn()),
        };
        let change = r.change_pct.map_or(String::new(), |p| format!("{p:+.0}%"));
        let head =
            format!("{:>9} -> {:<9} {:>6} ", opt(r.before_ms, 3), opt(r.after_ms, 3), change);
        let name = libreyolo_core::analysis::kernels::short_name(&r.name);
        let room = width.saturating_sub(head.chars().count() + 11);
        out.push(Line::from(vec![
            Span::styled(format!("  {label:<9}"), style),
            Span::raw(head),
            Span::raw(clip(&name, room)),
        ]));
    }
}
