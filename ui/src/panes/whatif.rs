//! What-if: pick a category of the kernel mix (Up/Down, Left/Right, c) or
//! type a launch count (n), and the `what_if` lens's projection updates.

use libreyolo_core::lens::whatif::{Model, WhatIf};
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clip, fixed, opt, window};
use crate::app::{App, Field, WhatIfChoice};
use crate::theme::Theme;

pub fn render(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.theme;
    let Some(p) = app.profile() else { return };
    let (list_area, result_area) = if area.width >= 110 {
        let [a, b] = Layout::horizontal([Constraint::Length(46), Constraint::Fill(1)]).spacing(2).areas(area);
        (a, b)
    } else {
        let n = p.categories.len().clamp(1, 8) as u16;
        let [a, b] = Layout::vertical([Constraint::Length(n + 3), Constraint::Fill(1)]).areas(area);
        (a, b)
    };

    // The choices: each category, then a launch count.
    let mut lines = vec![Line::styled("remove a category (Up/Down)", t.header())];
    let selected = match app.whatif.choice {
        Some(WhatIfChoice::Category(i)) => Some(i),
        _ => None,
    };
    if p.categories.is_empty() {
        lines.push(Line::styled("  no GPU kernel categories in this profile", t.muted()));
    }
    let rows = list_area.height.saturating_sub(3) as usize;
    let (first, last) = window(selected.unwrap_or(0), p.categories.len(), rows);
    let name_w = (list_area.width as usize).saturating_sub(24).clamp(8, 22);
    for (i, c) in p.categories[first..last].iter().enumerate() {
        let text = format!("  {:<name_w$} {:>5}% {:>8} ms", clip(&c.name, name_w), fixed(c.pct, 1), num(c.ms_per_step, 3));
        lines.push(if Some(first + i) == selected { Line::styled(text, t.selected()) } else { Line::raw(text) });
    }
    let editing = app.editor.as_ref().filter(|e| e.field == Field::Launches);
    let launches = match (editing, app.whatif.choice) {
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
        _ => Line::from(vec![Span::styled("or remove launches/step: ", t.header()), Span::styled("press n", t.muted())]),
    };
    lines.push(launches);
    f.render_widget(Paragraph::new(lines), list_area);

    let result = match &app.whatif.result {
        None => vec![Line::styled("choose a category or press n to type a launch count", t.muted())],
        Some(Err(e)) => vec![Line::styled(e.clone(), t.warn())],
        Some(Ok(w)) => result_lines(w, t),
    };
    f.render_widget(Paragraph::new(result).wrap(Wrap { trim: false }), result_area);
}

fn result_lines(w: &WhatIf, t: &Theme) -> Vec<Line<'static>> {
    let change = w.change_pct.map_or(String::new(), |c| format!(" ({c:+.1}%)"));
    let style = match w.change_pct {
        Some(c) if c < 0.0 => t.better(),
        _ => t.base(),
    };
    let mut out =
        vec![Line::from(vec![Span::styled(format!("what-if [{}]", w.bound), t.title())]), Line::raw(w.mechanism.clone()), Line::raw("")];
    let removes = match &w.removed.category {
        Some(c) => format!("category '{c}': {} ms GPU work and {} launches per step", num(w.removed.gpu_ms, 3), num(w.removed.launches, 1)),
        None => format!("{} launches per step", num(w.removed.launches, 1)),
    };
    out.push(Line::from(vec![Span::styled(format!("{:<12}", "removes"), t.header()), Span::raw(removes)]));
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
        Span::styled(w.img_per_s.projected.map_or(String::new(), |p| format!("~{}", num(p, 2))), style),
    ]));
    if let Some(us) = w.per_launch_us {
        out.push(Line::from(vec![
            Span::styled(format!("{:<12}", "per launch"), t.header()),
            Span::raw(format!("~{} us host cost", num(us, 1))),
        ]));
    }
    out.push(Line::raw(""));
    if w.model != Model::NoGpu {
        out.push(Line::styled(format!("caveat: {}", w.caveat), t.warn()));
    }
    out
}
