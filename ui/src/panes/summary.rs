//! Summary: the trace-health findings, the verdict and its reason, the headline figures, the kernel mix
//! as bars, the top kernels; latency and stages for inference. Renders the
//! `summary` lens (computed once per load, held by the slot); the pane's
//! own state is its scroll offset.

use libreyolo_core::lens::summary::Summary;
use libreyolo_core::profile::Severity;
use libreyolo_core::render::text::{graph_replay_note, num, throughput};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{bar, clip, fixed, moved, opt, pct};
use crate::input::Action;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View};

/// Lines the scroll may go past the top (the text is never longer).
const MAX_SCROLL: usize = 200;

#[derive(Debug, Clone, Default)]
pub struct SummaryPane {
    pub scroll: u16,
}

impl Component for SummaryPane {
    fn keys(&self) -> Vec<KeyHint> {
        // Moving scrolls it; no key of its own.
        Vec::new()
    }

    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let Some(delta) = super::movement(a, ctx.page) else { return Effect::Pass };
        self.scroll = moved(self.scroll as usize, MAX_SCROLL, delta) as u16;
        Effect::None
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let Some(d) = view.data() else { return };
        let lines = lines(&d.summary, view.theme, area.width as usize);
        f.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((self.scroll, 0)),
            area,
        );
    }
}

/// The pane's lines for a given width.
pub fn lines(s: &Summary, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if let Some(w) = &s.contended {
        out.push(Line::styled(format!("** {w} **"), t.worse()));
    }
    // Trace health before the verdict (analysis.md §15), as `summary`.
    for h in &s.health {
        let style = if h.severity == Severity::CannotTell { t.worse() } else { t.warn() };
        out.push(Line::from(vec![
            Span::styled(format!("health {} {}: ", h.severity, h.check), style),
            Span::raw(h.says.clone()),
        ]));
    }
    out.push(Line::from(vec![
        Span::styled(format!(">> {}", s.bound.as_str().to_uppercase()), t.warn()),
        Span::raw(": "),
        Span::raw(s.bound_why.clone()),
    ]));
    if s.figures.memory_pressure {
        out.push(Line::styled("** UNTRUSTWORTHY: taken under VRAM pressure; utilisation and throughput are unreliable **", t.worse()));
    }
    let batch = s.config.batch_value().map(|b| format!(" · batch {b}")).unwrap_or_default();
    out.push(Line::from(vec![
        Span::styled(s.model.clone().unwrap_or_else(|| "model n/a".into()), t.title()),
        Span::styled(
            format!(
                " · {}{batch} · {} step{} in {} ms",
                s.mode,
                s.figures.window.real_steps,
                if s.figures.window.real_steps == 1 { "" } else { "s" },
                num(s.figures.window.wall_ms, 1)
            ),
            t.muted(),
        ),
    ]));
    if let Some(steps) = &s.steps {
        // The same line `profile summary` prints, its sparkline fitted to the pane.
        let spark = width.saturating_sub(60).clamp(8, 60);
        let style = if steps.outliers.is_empty() { t.muted() } else { t.warn() };
        out.push(Line::styled(libreyolo_core::render::text::step_line(steps, spark), style));
    }
    out.push(Line::raw(""));

    let dataload = match (s.figures.dataload_ms, s.figures.dataload_frac) {
        (Some(d), Some(fr)) => format!("{} ms ({})", num(d, 2), pct(fr)),
        (Some(d), None) => format!("{} ms", num(d, 2)),
        _ => "n/a".into(),
    };
    let mut figures: Vec<(&str, String)> = vec![
        ("throughput", throughput(s.figures.img_per_s, s.img_per_s_std, s.img_per_s_n)),
        ("step", format!("{} ms", num(s.figures.step_ms, 2))),
    ];
    if s.cpu_run() {
        // The same as `profile summary`: no GPU figures on a CPU run, and
        // its threads and share in ops where the profile knows them.
        figures.extend(s.threads().map(|n| ("threads", n.to_string())));
        figures.extend(
            s.extras.host_in_ops_frac.map(|f| ("in CPU ops", format!("{} of the step", pct(f)))),
        );
        figures.push(("dataload", dataload));
    } else {
        figures.extend([
            (
                "GPU util",
                format!(
                    "{} ({} ms busy)",
                    pct(s.figures.gpu_util),
                    num(s.figures.gpu_busy_ms_per_step, 2)
                ),
            ),
            (s.matrix_units(), format!("{}%", fixed(s.figures.tensorcore_pct, 0))),
            (
                "kernels/step",
                format!(
                    "{} @ ~{} us",
                    num(s.figures.kernels_per_step, 1),
                    num(s.figures.mean_kernel_us.round(), 0)
                ),
            ),
            (
                "launches/step",
                match s.extras.launches_recorded_per_step {
                    Some(r) => {
                        format!("{} ({} recorded)", num(s.figures.launches_per_step, 1), num(r, 1))
                    }
                    None => num(s.figures.launches_per_step, 1),
                },
            ),
            ("host overhead", format!("{} ms/step", num(s.figures.host_overhead_ms_per_step, 2))),
            ("dataload", dataload),
            (
                "peak VRAM",
                s.figures
                    .peak_vram_mb
                    .map_or_else(|| "n/a".into(), libreyolo_core::render::text::size_mb),
            ),
            ("memcpy", format!("{} ms/step", num(s.figures.memcpy_ms_per_step, 3))),
        ]);
    }
    let two_cols = width >= 78;
    let col = if two_cols { width / 2 } else { width };
    let cell = |(label, value): &(&str, String)| -> Vec<Span<'static>> {
        vec![
            Span::styled(format!("{label:<14}"), t.header()),
            Span::raw(clip(value, col.saturating_sub(15))),
        ]
    };
    for chunk in figures.chunks(if two_cols { 2 } else { 1 }) {
        let mut spans = cell(&chunk[0]);
        if let Some(second) = chunk.get(1) {
            let used: usize = spans.iter().map(Span::width).sum();
            spans.push(Span::raw(" ".repeat(col.saturating_sub(used))));
            spans.extend(cell(second));
        }
        out.push(Line::from(spans));
    }
    if let Some(raw) = s.stream_concurrency() {
        out.push(Line::styled(
            format!("streams overlap: kernel time sums to {} of the window", pct(raw)),
            t.muted(),
        ));
    }
    // As `profile summary` and `kernels` say it: replayed kernels belong
    // to no op unless a capture trace gives them theirs.
    if let Some(ms) = s.extras.graph_replay_ms_per_step {
        let note = graph_replay_note(ms, s.extras.graph_replay_attributed_ms_per_step);
        out.push(Line::styled(note, t.muted()));
    }
    if let Some(l) = &s.figures.latency {
        out.push(Line::from(vec![
            Span::styled(format!("{:<14}", "latency"), t.header()),
            Span::raw(format!(
                "p50 {} · p90 {} · p99 {} ms ({})",
                num(l.p50_ms, 3),
                num(l.p90_ms, 3),
                num(l.p99_ms, 3),
                libreyolo_core::render::text::latency_samples(l, s.config.runs())
            )),
        ]));
    }
    if let Some(st) = &s.figures.stages_ms {
        out.push(Line::from(vec![
            Span::styled(format!("{:<14}", "stages"), t.header()),
            Span::raw(format!(
                "preprocess {} · forward {} · NMS {} ms",
                opt(st.preprocess, 3),
                opt(st.forward, 3),
                opt(st.postprocess, 3)
            )),
        ]));
    }

    if !s.levers.is_empty() {
        // The same lines as `profile summary`'s: each lever with the
        // figures it rests on, wrapped rather than cut (the What-if pane
        // re-times them).
        out.push(Line::raw(""));
        out.push(Line::styled("Levers, by what the step model says each saves", t.header()));
        for line in libreyolo_core::render::text::lever_lines(&s.levers, 3) {
            out.push(Line::raw(line));
        }
    }

    if let Some(idle) = &s.idle {
        // The same block as `profile summary`'s, with one place per cause.
        out.push(Line::raw(""));
        out.push(Line::styled("Why the GPU waits", t.header()));
        for line in libreyolo_core::render::text::idle_lines(idle, 1) {
            out.push(Line::raw(clip(&line, width)));
        }
    }

    if let Some(e) = s.efficiency.as_ref().filter(|e| e.priced_calls > 0) {
        out.push(Line::raw(""));
        out.push(Line::styled("How close to the hardware", t.header()));
        for part in libreyolo_core::render::text::efficiency_parts(e) {
            out.push(Line::raw(clip(&format!("  {part}"), width)));
        }
    }

    out.push(Line::raw(""));
    out.push(Line::styled("Kernel mix", t.header()));
    if s.categories.is_empty() {
        out.push(Line::styled("  no GPU kernels in this profile", t.muted()));
    }
    let name_w =
        s.categories.iter().map(|c| c.name.as_str().chars().count()).max().unwrap_or(8).min(18);
    let bar_w = width.saturating_sub(name_w + 26).clamp(6, 60);
    for c in &s.categories {
        out.push(Line::from(vec![
            Span::raw(format!("  {:<name_w$} ", clip(c.name.as_str(), name_w))),
            Span::styled(bar(c.pct, bar_w), t.bar()),
            Span::raw(format!(" {:>5}% {:>8} ms", fixed(c.pct, 1), num(c.ms_per_step, 3))),
        ]));
    }

    if !s.top_kernels.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::styled("Top kernels per step", t.header()));
        for k in &s.top_kernels {
            let head = format!(
                "  {:>5}% {:>8} ms x{:<5} ",
                fixed(k.pct_of_gpu, 1),
                fixed(k.ms_per_step, 3),
                num(k.count_per_step, 1)
            );
            let room =
                width.saturating_sub(head.chars().count() + if k.tensorcore { 5 } else { 0 });
            let mut spans = vec![Span::raw(head), Span::raw(clip(&k.kernel, room))];
            if k.tensorcore {
                spans.push(Span::styled(" [TC]", t.accent()));
            }
            out.push(Line::from(spans));
        }
    }
    if s.streams.len() > 1 {
        out.push(Line::raw(""));
        out.push(Line::styled("Streams", t.header()));
        for st in &s.streams {
            out.push(Line::raw(format!("  {}", libreyolo_core::render::text::stream_line(st))));
        }
    }
    for w in &s.warnings {
        out.push(Line::styled(format!("note: {w}"), t.muted()));
    }
    out
}
