//! Collectives: the Ranks pane's second view of a distributed job (`c`
//! switches between them; docs/spec.md §6). Renders the `collectives` lens
//! that the loader thread ran over the ranks' profiles: per group the count
//! of each collective, per rank its total wait, last arrivals and
//! communication time, then every matched collective (group, order, kind,
//! time, size, arrival skew, the ranks' waits summed, the last rank, the
//! transfer time, bus bandwidth), sortable, with a details line for the
//! one under the cursor. Enter shows that collective rank by rank (arrival,
//! wait, kernel time); Enter on a rank there shows it in the other panes.
//!
//! The view owns its sort, selection and detail flag; the figures are the
//! lens's, as `profile collectives DIR` prints them.

use libreyolo_core::lens::collectives::{Collectives, Matched};
use libreyolo_core::render::text::num;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{clip, header, moved, right, window};
use crate::input::Action;
use crate::job::OpenJob;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// What the list is sorted by: a figure largest first (ties and missing
/// figures in time order), or time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CollSort {
    /// Arrival skew, as `profile collectives` lists them.
    #[default]
    Skew,
    /// The ranks' waits summed.
    Wait,
    /// The transfer time.
    Transfer,
    /// The message size.
    Size,
    /// Bus bandwidth.
    BusBw,
    /// When the earliest rank started it.
    Time,
}

impl CollSort {
    pub const ALL: [CollSort; 6] = [
        CollSort::Skew,
        CollSort::Wait,
        CollSort::Transfer,
        CollSort::Size,
        CollSort::BusBw,
        CollSort::Time,
    ];

    pub fn next(self) -> CollSort {
        let i = CollSort::ALL.iter().position(|s| *s == self).unwrap_or(0);
        CollSort::ALL[(i + 1) % CollSort::ALL.len()]
    }

    /// The name in the status and hint lines.
    pub fn as_str(self) -> &'static str {
        match self {
            CollSort::Skew => "skew",
            CollSort::Wait => "wait",
            CollSort::Transfer => "xfer",
            CollSort::Size => "size",
            CollSort::BusBw => "busbw",
            CollSort::Time => "time",
        }
    }

    /// The figure sorted on, largest first (`None` for time order and for
    /// a collective without that figure).
    pub fn value(self, m: &Matched) -> Option<f64> {
        match self {
            CollSort::Skew => m.skew_us,
            CollSort::Wait => Some(m.wait_us),
            CollSort::Transfer => Some(m.duration_us),
            CollSort::Size => m.bytes.map(|b| b as f64),
            CollSort::BusBw => m.busbw_gbps,
            CollSort::Time => None,
        }
    }
}

/// Positions in `c.collectives`, sorted by `sort`: largest figure first,
/// those without it after, ties in time order (then the lens's order).
pub fn order(c: &Collectives, sort: CollSort) -> Vec<usize> {
    let mut v: Vec<usize> = (0..c.collectives.len()).collect();
    v.sort_by(|&a, &b| {
        let (x, y) = (&c.collectives[a], &c.collectives[b]);
        let by_figure = match (sort.value(x), sort.value(y)) {
            (Some(p), Some(q)) => q.total_cmp(&p),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        by_figure.then(x.at_ms.total_cmp(&y.at_ms)).then(a.cmp(&b))
    });
    v
}

#[derive(Debug, Clone, Default)]
pub struct CollectivesView {
    pub sort: CollSort,
    /// Row of the list under the cursor.
    pub selected: usize,
    /// The rows: positions in the lens's collectives, in the sort's order.
    pub order: Vec<usize>,
    /// Enter: the selected collective rank by rank.
    pub detail: bool,
    /// Row of the rank breakdown under the cursor.
    pub rank_row: usize,
}

impl Component for CollectivesView {
    fn keys(&self) -> Vec<KeyHint> {
        vec![
            hint(&[Action::Enter], "the collective rank by rank; on a rank: its panes"),
            hint(&[Action::CycleSort], "cycle sort"),
        ]
    }

    /// Handles a key; [`Effect::Pass`] when it is not the view's (Esc with
    /// no detail open goes back to the ranks, which the Ranks pane does).
    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let Some(j) = ctx.job else { return Effect::Pass };
        if let Some(delta) = super::movement(a, ctx.page) {
            if self.detail {
                let n = self.matched(&j.collectives).map_or(0, |m| m.ranks.len());
                self.rank_row = moved(self.rank_row, n, delta);
            } else {
                self.selected = moved(self.selected, self.order.len(), delta);
            }
            return Effect::None;
        }
        match a {
            Action::CycleSort => {
                self.sort = self.sort.next();
                let order = order(&j.collectives, self.sort);
                self.selected = super::resorted(&self.order, self.selected, &order);
                self.order = order;
                Effect::None
            }
            Action::Enter if self.detail => {
                let rank = self
                    .matched(&j.collectives)
                    .and_then(|m| m.ranks.get(self.rank_row))
                    .map(|r| r.rank);
                rank.and_then(|k| j.job.ranks.iter().position(|r| r.rank == k))
                    .map_or(Effect::None, Effect::OpenRank)
            }
            Action::Enter => {
                let Some(m) = self.matched(&j.collectives) else { return Effect::Pass };
                // The cursor starts on the rank everyone waited for.
                self.rank_row =
                    m.ranks.iter().position(|r| Some(r.rank) == m.last_rank).unwrap_or(0);
                self.detail = true;
                Effect::None
            }
            Action::Back if self.detail => {
                self.detail = false;
                Effect::None
            }
            _ => Effect::Pass,
        }
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let Some(j) = view.job else { return };
        let t = view.theme;
        let c = &j.collectives;
        let w = area.width as usize;
        let mut head = head_lines(c, t, w, (area.height / 8).max(1) as usize);
        if c.collectives.is_empty() {
            head.push(Line::styled(clip("no communication kernels (NCCL, RCCL) in these ranks' profiles: nothing to match", w), t.muted()));
        }
        let (per_rank, rank_w) = per_rank_rows(c, w);
        let single = c.ranks.len() == 1;
        let [top, ranks, list, details, hint] = Layout::vertical([
            Constraint::Length(head.len() as u16),
            Constraint::Length(per_rank.len() as u16),
            Constraint::Min(2),
            Constraint::Length(DETAIL_LINES),
            Constraint::Length(1),
        ])
        .areas(area);
        f.render_widget(Paragraph::new(head), top);
        let widths: Vec<Constraint> = std::iter::once(Constraint::Length(LABEL_W as u16))
            .chain(per_rank[0].1.iter().map(|_| Constraint::Length(rank_w as u16)))
            .collect();
        let rows = per_rank.iter().enumerate().map(|(k, (label, cells))| {
            let mut v = vec![Cell::from(label.as_str())];
            v.extend(cells.iter().map(|s| right(s.clone())));
            let row = Row::new(v);
            if k == 0 { row.style(t.header()) } else { row }
        });
        f.render_widget(Table::new(rows, widths).column_spacing(0), ranks);
        if self.detail {
            self.rank_table(f, j, t, list);
        } else {
            self.table(f, c, t, list);
        }
        let m = self.matched(c);
        f.render_widget(
            Paragraph::new(m.map(|m| detail_lines(m, t, w, single)).unwrap_or_default()),
            details,
        );
        let mut spans = Vec::new();
        if self.detail {
            let rank = m.and_then(|m| m.ranks.get(self.rank_row)).map(|r| r.rank);
            spans.push(Span::styled("times in µs · ", t.muted()));
            if let Some(k) = rank {
                spans.push(Span::styled("Enter: ", t.muted()));
                spans.push(Span::styled(format!("rank {k}'s panes"), t.accent()));
                spans.push(Span::styled(" · ", t.muted()));
            }
            spans.push(Span::styled("Esc: the list · c: ranks", t.muted()));
        } else {
            spans.push(Span::styled(
                format!(
                    "sort: {} (s) · Enter: per rank · c: ranks · µs, MB, GB/s",
                    self.sort.as_str()
                ),
                t.muted(),
            ));
        }
        let line = Line::from(spans);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        if text.chars().count() > w {
            f.render_widget(Paragraph::new(Line::styled(clip(&text, w), t.muted())), hint);
        } else {
            f.render_widget(Paragraph::new(line), hint);
        }
    }
}

impl CollectivesView {
    /// A job (re)loaded: the rows in the current sort, the cursor kept on
    /// its collective (group and position) when it is still there.
    pub fn reload(&mut self, before: Option<&Collectives>, now: &Collectives) {
        let key = before.and_then(|c| self.matched(c)).map(|m| (m.group.clone(), m.seq));
        self.order = order(now, self.sort);
        self.selected = key
            .and_then(|(g, s)| {
                self.order
                    .iter()
                    .position(|&i| now.collectives[i].group == g && now.collectives[i].seq == s)
            })
            .unwrap_or(0);
        let n = self.matched(now).map_or(0, |m| m.ranks.len());
        if n == 0 {
            self.detail = false;
        }
        self.rank_row = self.rank_row.min(n.saturating_sub(1));
    }

    /// The collective under the cursor.
    pub fn matched<'c>(&self, c: &'c Collectives) -> Option<&'c Matched> {
        self.order.get(self.selected).and_then(|i| c.collectives.get(*i))
    }

    fn table(&self, f: &mut Frame, c: &Collectives, t: &Theme, area: Rect) {
        let wide = area.width >= 110;
        let rows_h = area.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, self.order.len(), rows_h);
        let na = || "n/a".to_string();
        let rows = self.order[first..last].iter().enumerate().map(|(k, &i)| {
            let m = &c.collectives[i];
            let mut cells = vec![
                Cell::from(m.group.clone()),
                right(m.seq.to_string()),
                Cell::from(m.collective.clone()),
                right(num(m.at_ms, 3)),
                right(m.bytes.map_or_else(na, |b| num(b as f64 / 1e6, 3))),
            ];
            if wide {
                cells.push(Cell::from(m.dtype.clone().unwrap_or_else(na)));
            }
            cells.extend([
                right(m.skew_us.map_or_else(na, |s| num(s, 1))),
                right(num(m.wait_us, 1)),
                right(m.last_rank.map_or_else(na, |r| r.to_string())),
                right(num(m.duration_us, 1)),
            ]);
            if wide {
                cells.push(right(m.algbw_gbps.map_or_else(na, |b| num(b, 2))));
            }
            cells.push(right(m.busbw_gbps.map_or_else(na, |b| num(b, 2))));
            let row = Row::new(cells);
            if first + k == self.selected { row.style(t.selected()) } else { row }
        });
        // Each column as wide as its title (and the sort marker) or its
        // widest entry, whichever is wider: the largest figure is the widest.
        let all = &c.collectives;
        let text = |title: &str, widest: usize| (title.chars().count() + 1).max(widest) as u16;
        let plain = |title: &str, widest: usize| title.chars().count().max(widest) as u16;
        let longest = |f: &dyn Fn(&Matched) -> usize, max: usize| {
            all.iter().map(f).max().unwrap_or(0).min(max)
        };
        let figure = |f: &dyn Fn(&Matched) -> Option<f64>, digits: usize| {
            let top = all
                .iter()
                .filter_map(f)
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
            let missing = all.iter().any(|m| f(m).is_none());
            top.map_or(0, |v| num(v, digits).len()).max(if missing { 3 } else { 0 })
        };
        let mark = |s: CollSort, name: &'static str| {
            if self.sort == s { format!("▼{name}") } else { name.to_string() }
        };
        let (at, mb, skew, wait, xfer, busbw) = (
            mark(CollSort::Time, "at ms"),
            mark(CollSort::Size, "MB"),
            mark(CollSort::Skew, "skew µs"),
            mark(CollSort::Wait, "wait µs"),
            mark(CollSort::Transfer, "xfer µs"),
            mark(CollSort::BusBw, "busbw"),
        );
        let mut cols: Vec<(&str, bool, u16)> = vec![
            ("group", false, plain("group", longest(&|m| m.group.chars().count(), 12))),
            ("#", true, plain("#", longest(&|m| m.seq.to_string().len(), 8))),
            (
                "collective",
                false,
                plain("collective", longest(&|m| m.collective.chars().count(), 14)),
            ),
            (&at, true, text("at ms", figure(&|m| Some(m.at_ms), 3))),
            (&mb, true, text("MB", figure(&|m| m.bytes.map(|b| b as f64 / 1e6), 3))),
        ];
        if wide {
            cols.push((
                "dtype",
                false,
                plain(
                    "dtype",
                    longest(&|m| m.dtype.as_deref().map_or(3, |d| d.chars().count()), 12),
                ),
            ));
        }
        cols.extend([
            (skew.as_str(), true, text("skew µs", figure(&|m| m.skew_us, 1))),
            (wait.as_str(), true, text("wait µs", figure(&|m| Some(m.wait_us), 1))),
            ("last", true, plain("last", figure(&|m| m.last_rank.map(f64::from), 0))),
            (xfer.as_str(), true, text("xfer µs", figure(&|m| Some(m.duration_us), 1))),
        ]);
        if wide {
            cols.push(("algbw", true, text("algbw", figure(&|m| m.algbw_gbps, 2))));
        }
        cols.push((&busbw, true, text("busbw", figure(&|m| m.busbw_gbps, 2))));
        let widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.2)).collect();
        let names: Vec<(&str, bool)> = cols.iter().map(|c| (c.0, c.1)).collect();
        f.render_widget(
            Table::new(rows, widths).header(header(&names, t.header())).column_spacing(1),
            area,
        );
    }

    /// The selected collective rank by rank: arrival after the earliest
    /// rank, wait for the last, kernel time; the last rank marked.
    fn rank_table(&self, f: &mut Frame, j: &OpenJob, t: &Theme, area: Rect) {
        let Some(m) = self.matched(&j.collectives) else { return };
        let rows_h = area.height.saturating_sub(1) as usize;
        let (first, last) = window(self.rank_row, m.ranks.len(), rows_h);
        let rows = m.ranks[first..last].iter().enumerate().map(|(k, r)| {
            let mut marks = Vec::new();
            if Some(r.rank) == m.last_rank {
                marks.push(Span::styled("last: the others waited", t.warn()));
            } else if m.last_rank.is_some() && r.arrival_us == 0.0 {
                marks.push(Span::styled("first", t.muted()));
            }
            let row = Row::new(vec![
                right(r.rank.to_string()),
                right(num(r.arrival_us, 1)),
                right(num(r.wait_us, 1)),
                right(num(r.dur_us, 1)),
                Cell::from(Line::from(marks)),
            ]);
            if first + k == self.rank_row { row.style(t.selected()) } else { row }
        });
        let cols = [
            ("rank", true),
            ("arrival µs", true),
            ("wait µs", true),
            ("kernel µs", true),
            ("", false),
        ];
        let widths = [
            Constraint::Length(6),
            Constraint::Length(11),
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Fill(1),
        ];
        f.render_widget(
            Table::new(rows, widths).header(header(&cols, t.header())).column_spacing(1),
            area,
        );
    }
}

/// Width of the per-rank table's label column.
const LABEL_W: usize = 9;

/// The view's first lines: how many collectives on how many ranks, one
/// line per group (at most `max_groups`), the ranks that wait most and
/// arrive last most often, and the lens's notes; each cut to `width`.
pub fn head_lines(
    c: &Collectives,
    t: &Theme,
    width: usize,
    max_groups: usize,
) -> Vec<Line<'static>> {
    let world = c.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let plural = if c.ranks.len() == 1 { "" } else { "s" };
    let head = format!(
        "collectives: {} matched on {} rank{plural}{world}",
        c.collectives.len(),
        c.ranks.len()
    );
    let mut out = vec![Line::styled(clip(&head, width), t.title())];
    for (k, g) in c.groups.iter().enumerate() {
        if k + 1 == max_groups && c.groups.len() > max_groups {
            out.push(Line::styled(
                clip(
                    &format!("  … and {} more groups: profile collectives", c.groups.len() - k),
                    width,
                ),
                t.muted(),
            ));
            break;
        }
        let counts: Vec<String> = g.counts.iter().map(|(n, k)| format!("{k} {n}")).collect();
        out.push(Line::raw(clip(&format!("  group {}: {}", g.group, counts.join(", ")), width)));
    }
    if c.ranks.len() > 1 && !c.collectives.is_empty() {
        // Largest first, the lower rank on a tie.
        let waits = c
            .per_rank
            .iter()
            .max_by(|a, b| a.wait_ms.total_cmp(&b.wait_ms).then(b.rank.cmp(&a.rank)));
        let lasts = c
            .per_rank
            .iter()
            .max_by(|a, b| a.last_arrivals.cmp(&b.last_arrivals).then(b.rank.cmp(&a.rank)));
        if let (Some(w), Some(l)) = (waits, lasts) {
            let text = format!(
                "waits most: rank {} ({} ms) · arrives last most often: rank {} ({} of {})",
                w.rank,
                num(w.wait_ms, 3),
                l.rank,
                l.last_arrivals,
                c.collectives.len()
            );
            out.push(Line::raw(clip(&text, width)));
        }
    }
    for n in &c.notes {
        out.push(Line::styled(clip(&format!("note: {n}"), width), t.muted()));
    }
    out
}

/// The per-rank figures, one column per rank, as many ranks as `width`
/// holds (the last column then says how many more): `(label, cells)` rows,
/// the first the rank numbers, and the width of a rank's column (its
/// widest figure and two spaces). One rank has no waits or last arrivals.
pub fn per_rank_rows(c: &Collectives, width: usize) -> (Vec<(String, Vec<String>)>, usize) {
    let mut rows = vec![(
        "rank".to_string(),
        c.per_rank.iter().map(|r| r.rank.to_string()).collect::<Vec<_>>(),
    )];
    if c.ranks.len() > 1 {
        rows.push(("wait ms".to_string(), c.per_rank.iter().map(|r| num(r.wait_ms, 3)).collect()));
        rows.push((
            "last".to_string(),
            c.per_rank.iter().map(|r| r.last_arrivals.to_string()).collect(),
        ));
    }
    rows.push(("comm ms".to_string(), c.per_rank.iter().map(|r| num(r.comm_ms, 3)).collect()));
    let rank_w = rows
        .iter()
        .flat_map(|(_, v)| v.iter().map(|s| s.chars().count()))
        .max()
        .unwrap_or(0)
        .max(4)
        + 2;
    let fit = (width.saturating_sub(LABEL_W) / rank_w).max(1);
    let n = c.per_rank.len();
    if n > fit {
        let shown = fit - 1;
        for (k, (_, cells)) in rows.iter_mut().enumerate() {
            cells.truncate(shown);
            cells.push(if k == 0 { format!("+{}", n - shown) } else { "…".to_string() });
        }
    }
    (rows, rank_w)
}

/// Lines of the details of the selected collective.
pub const DETAIL_LINES: u16 = 3;

/// The selected collective in [`DETAIL_LINES`] lines: what, when and how
/// big; the transfer and its bandwidth; who arrived last and what the
/// waiting cost.
pub fn detail_lines(m: &Matched, t: &Theme, width: usize, single: bool) -> Vec<Line<'static>> {
    let mut what = format!("{} #{} {} · at {} ms", m.group, m.seq, m.collective, num(m.at_ms, 3));
    match (m.bytes, &m.dtype) {
        (Some(b), Some(d)) => what.push_str(&format!(" · {} MB {d}", num(b as f64 / 1e6, 3))),
        (Some(b), None) => what.push_str(&format!(" · {} MB", num(b as f64 / 1e6, 3))),
        _ => what.push_str(" · size n/a"),
    }
    let mut xfer = format!("transfer {} µs", num(m.duration_us, 1));
    match (m.algbw_gbps, m.busbw_gbps) {
        (Some(a), Some(b)) => {
            xfer.push_str(&format!(" · algbw {} GB/s · busbw {} GB/s", num(a, 2), num(b, 2)))
        }
        (Some(a), None) => {
            xfer.push_str(&format!(" · algbw {} GB/s · busbw n/a ({})", num(a, 2), m.collective))
        }
        _ => xfer.push_str(" · bandwidth n/a: the trace records no message size"),
    }
    let who = if single {
        "one rank: skew and waits need every rank's trace; its time includes any wait".to_string()
    } else {
        let first = m.ranks.iter().filter(|r| r.arrival_us == 0.0).map(|r| r.rank).min();
        format!(
            "skew {} µs · last: rank {} · first: rank {} · {} µs waited over {} ranks",
            m.skew_us.map_or_else(|| "n/a".to_string(), |s| num(s, 1)),
            m.last_rank.map_or_else(|| "n/a".to_string(), |r| r.to_string()),
            first.map_or_else(|| "n/a".to_string(), |r| r.to_string()),
            num(m.wait_us, 1),
            m.ranks.len()
        )
    };
    vec![
        Line::styled(clip(&what, width), t.title()),
        Line::raw(clip(&xfer, width)),
        Line::raw(clip(&who, width)),
    ]
}
