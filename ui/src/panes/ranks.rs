//! Ranks: a distributed job, one row per rank (docs/spec.md §6, §7). Renders
//! the `job` lens: the job's line (world size, step = the slowest rank's,
//! the critical rank, GPU utilisation), the stragglers with their reason,
//! and per rank the step, GPU utilisation, compute, communication, exposed
//! communication and idle time, kernels per step and a straggler marker.
//! The pane owns its sort and selection; Enter asks the app (an
//! [`Effect::OpenRank`]) to show that rank in the other panes. `c` turns
//! it to its second view of the job, the collectives matched across the
//! ranks ([`super::collectives`]), and back.
//!
//! Why a view of this pane and not a pane of its own: both are the job as
//! a whole (the numbered panes show one rank's profile), an 80-column tab
//! bar is full already, and `0` stays the one key to the job.

use libreyolo_core::lens::job::{Job, RankRow, StragglerRule};
use libreyolo_core::render::text::{self, num};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::collectives::CollectivesView;
use super::{clip, header, moved, pct, right, window};
use crate::input::Action;
use crate::job::OpenJob;
use crate::theme::Theme;
use crate::view::{Component, Ctx, Effect, KeyHint, View, hint};

/// The column the rows are sorted by: rank order, or a figure largest
/// first (ties in rank order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankSort {
    #[default]
    Rank,
    Step,
    GpuUtil,
    Compute,
    Comm,
    Exposed,
    Idle,
    Kernels,
}

impl RankSort {
    pub const ALL: [RankSort; 8] = [
        RankSort::Rank,
        RankSort::Step,
        RankSort::GpuUtil,
        RankSort::Compute,
        RankSort::Comm,
        RankSort::Exposed,
        RankSort::Idle,
        RankSort::Kernels,
    ];

    pub fn next(self) -> RankSort {
        let i = RankSort::ALL.iter().position(|s| *s == self).unwrap_or(0);
        RankSort::ALL[(i + 1) % RankSort::ALL.len()]
    }

    /// The column's name in the header and the status line.
    pub fn as_str(self) -> &'static str {
        match self {
            RankSort::Rank => "rank",
            RankSort::Step => "step",
            RankSort::GpuUtil => "GPU",
            RankSort::Compute => "compute",
            RankSort::Comm => "comm",
            RankSort::Exposed => "exposed",
            RankSort::Idle => "idle",
            RankSort::Kernels => "kernels",
        }
    }

    fn value(self, r: &RankRow) -> f64 {
        match self {
            RankSort::Rank => -f64::from(r.rank),
            RankSort::Step => r.step_ms,
            RankSort::GpuUtil => r.gpu_util,
            RankSort::Compute => r.compute_ms,
            RankSort::Comm => r.comm_ms,
            RankSort::Exposed => r.exposed_comm_ms,
            RankSort::Idle => r.idle_ms,
            RankSort::Kernels => r.kernels_per_step,
        }
    }
}

/// The word for the job's critical rank: the one the others wait for at
/// collectives (its own step may be the shortest: it runs ahead elsewhere),
/// or, without matched collectives, the one with the longest step.
pub fn critical_mark(j: &Job) -> &'static str {
    match j.straggler_rule {
        StragglerRule::Waits => "awaited",
        StragglerRule::Compute => "slowest",
    }
}

/// Positions in `job.ranks`, sorted by `sort`.
pub fn order(job: &Job, sort: RankSort) -> Vec<usize> {
    let mut v: Vec<usize> = (0..job.ranks.len()).collect();
    v.sort_by(|&a, &b| {
        let (x, y) = (&job.ranks[a], &job.ranks[b]);
        sort.value(y).total_cmp(&sort.value(x)).then(x.rank.cmp(&y.rank))
    });
    v
}

/// Which view of the job the Ranks pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobView {
    /// One row per rank (the `job` lens).
    #[default]
    Ranks,
    /// The collectives matched across the ranks (the `collectives` lens).
    Collectives,
}

#[derive(Debug, Clone, Default)]
pub struct RanksPane {
    pub view: JobView,
    pub sort: RankSort,
    /// Row on screen under the cursor.
    pub selected: usize,
    /// The rows: positions in the job's ranks, in the sort's order.
    pub order: Vec<usize>,
    /// The collectives view's own state.
    pub collectives: CollectivesView,
}

impl Component for RanksPane {
    fn keys(&self) -> Vec<KeyHint> {
        match self.view {
            JobView::Ranks => vec![
                hint(&[Action::Enter], "the rank in the other panes"),
                hint(&[Action::CycleSort], "cycle sort"),
                hint(&[Action::CycleCategory], "the job's collectives"),
            ],
            JobView::Collectives => {
                let mut keys = vec![hint(&[Action::CycleCategory], "back to the ranks (also Esc)")];
                keys.extend(self.collectives.keys());
                keys
            }
        }
    }

    /// Handles a key; [`Effect::Pass`] when it is not the pane's (Esc on
    /// the ranks view, which the app turns into quitting).
    fn update(&mut self, a: Action, ctx: &Ctx<'_>) -> Effect {
        let Some(j) = ctx.job else { return Effect::Pass };
        if a == Action::CycleCategory {
            self.view = match self.view {
                JobView::Ranks => JobView::Collectives,
                JobView::Collectives => JobView::Ranks,
            };
            return Effect::None;
        }
        if self.view == JobView::Collectives {
            return match self.collectives.update(a, ctx) {
                // Esc with nothing open in the view: back to the ranks.
                Effect::Pass if a == Action::Back => {
                    self.view = JobView::Ranks;
                    Effect::None
                }
                effect => effect,
            };
        }
        if let Some(delta) = super::movement(a, ctx.page) {
            self.selected = moved(self.selected, self.order.len(), delta);
            return Effect::None;
        }
        match a {
            Action::CycleSort => {
                self.sort = self.sort.next();
                let order = order(&j.job, self.sort);
                self.selected = super::resorted(&self.order, self.selected, &order);
                self.order = order;
                Effect::None
            }
            Action::Enter => {
                self.order.get(self.selected).map_or(Effect::None, |i| Effect::OpenRank(*i))
            }
            _ => Effect::Pass,
        }
    }

    /// How many rows and the sort of the view on screen.
    fn status(&self, view: &View<'_>) -> Vec<Span<'static>> {
        let Some(j) = view.job else { return Vec::new() };
        let what = match self.view {
            JobView::Ranks => format!("{} ranks · sort:{}", j.job.ranks.len(), self.sort.as_str()),
            JobView::Collectives => format!(
                "{} collectives · sort:{}",
                j.collectives.collectives.len(),
                self.collectives.sort.as_str()
            ),
        };
        vec![Span::styled(what, view.theme.accent())]
    }

    fn render(&self, f: &mut Frame, area: Rect, view: &View<'_>) {
        let t = view.theme;
        let Some(j) = view.job else {
            f.render_widget(
                Paragraph::new(Line::styled(
                    "one profile, not a distributed job: no ranks",
                    t.muted(),
                )),
                area,
            );
            return;
        };
        if self.view == JobView::Collectives {
            self.collectives.render(f, area, view);
            return;
        }
        let head = job_lines(&j.job, t, area.width as usize, (area.height / 4).max(2) as usize);
        let [top, table_area, hint] = Layout::vertical([
            Constraint::Length(head.len() as u16),
            Constraint::Min(2),
            Constraint::Length(1),
        ])
        .areas(area);
        f.render_widget(Paragraph::new(head), top);
        self.table(f, j, t, table_area);
        let mut spans = vec![Span::styled(
            format!("per step, ms · sort: {} (s)", self.sort.as_str()),
            t.muted(),
        )];
        if let Some(r) = self.selected_rank().and_then(|i| j.job.ranks.get(i)) {
            spans.push(Span::styled(" · Enter: ", t.muted()));
            spans.push(Span::styled(format!("rank {}'s panes", r.rank), t.accent()));
        }
        spans.push(Span::styled(" · c: collectives", t.muted()));
        f.render_widget(Paragraph::new(Line::from(spans)), hint);
    }
}

impl RanksPane {
    /// A job (re)loaded: the rows in the current sort, the cursor on the
    /// rank shown by the other panes; `before` is the job it replaces.
    pub fn reload(&mut self, before: Option<&OpenJob>, job: Option<&OpenJob>) {
        let Some(j) = job else {
            self.order.clear();
            self.collectives =
                CollectivesView { sort: self.collectives.sort, ..Default::default() };
            return;
        };
        self.order = order(&j.job, self.sort);
        self.selected = self.order.iter().position(|i| *i == j.shown).unwrap_or(0);
        self.collectives.reload(before.map(|b| &b.collectives), &j.collectives);
    }

    /// The position in the job's ranks of the row under the cursor.
    pub fn selected_rank(&self) -> Option<usize> {
        self.order.get(self.selected).copied()
    }

    fn table(&self, f: &mut Frame, j: &OpenJob, t: &Theme, area: Rect) {
        let wide = area.width >= 110;
        let rows_h = area.height.saturating_sub(1) as usize;
        let (first, last) = window(self.selected, self.order.len(), rows_h);
        let rows = self.order[first..last].iter().enumerate().map(|(k, &i)| {
            let r = &j.job.ranks[i];
            let mut cells = vec![
                right(format!("{}{}", if i == j.shown { "▸" } else { " " }, r.rank)),
                right(num(r.step_ms, 2)),
                right(pct(r.gpu_util)),
                right(num(r.compute_ms, 2)),
                right(num(r.comm_ms, 2)),
                right(num(r.exposed_comm_ms, 2)),
                right(num(r.idle_ms, 2)),
                right(num(r.kernels_per_step, 0)),
            ];
            if wide {
                cells.push(right(r.dataload_ms.map_or_else(|| "n/a".to_string(), |d| num(d, 2))));
                cells.push(Cell::from(r.verdict()));
            }
            // The critical rank (the one waited for) is also the first
            // straggler: one mark says both, to fit 80 columns.
            let critical = Some(r.rank) == j.job.critical_rank;
            let mut marks = Vec::new();
            if let Some(s) = j.straggler(r.rank) {
                let ms = s.wait_caused_ms_per_step.unwrap_or(s.compute_excess_ms);
                let what = if critical { critical_mark(&j.job) } else { "straggler" };
                marks.push(Span::styled(format!("{what} +{}", num(ms, 2)), t.warn()));
            } else if critical {
                marks.push(Span::styled(critical_mark(&j.job), t.accent()));
            }
            cells.push(Cell::from(Line::from(marks)));
            let row = Row::new(cells);
            if first + k == self.selected { row.style(t.selected()) } else { row }
        });
        // The sorted column's name carries a marker.
        let names: Vec<String> = RankSort::ALL
            .iter()
            .map(|s| {
                if self.sort == *s { format!("▼{}", s.as_str()) } else { s.as_str().to_string() }
            })
            .collect();
        let mut cols: Vec<(&str, bool)> = names.iter().map(|n| (n.as_str(), true)).collect();
        if wide {
            cols.extend([("dataload", true), ("verdict", false)]);
        }
        cols.push(("", false));
        let mut widths = vec![
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(8),
        ];
        if wide {
            widths.extend([Constraint::Length(9), Constraint::Length(18)]);
        }
        widths.push(Constraint::Fill(1));
        f.render_widget(
            Table::new(rows, widths).header(header(&cols, t.header())).column_spacing(1),
            area,
        );
    }
}

/// The job's lines above the table: the job, then the stragglers (at most
/// `max` lines of them) and the rank set's notes, each cut to `width`.
pub fn job_lines(j: &Job, t: &Theme, width: usize, max: usize) -> Vec<Line<'static>> {
    let world = j.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let head = format!("job: {} ranks{world}", j.ranks.len());
    let rest = format!(
        " · step {} ms ({}) · GPU util {}",
        num(j.step_ms, 2),
        text::slowest(j),
        pct(j.gpu_util)
    );
    let room = width.saturating_sub(head.chars().count());
    let mut out =
        vec![Line::from(vec![Span::styled(head, t.title()), Span::raw(clip(&rest, room))])];
    let style = if j.stragglers.is_empty() { t.muted() } else { t.warn() };
    out.push(Line::styled(clip(&text::stragglers_head(j), width), style));
    let room = max.max(2) - 1;
    for (k, s) in j.stragglers.iter().enumerate() {
        if k + 1 == room && j.stragglers.len() > room {
            out.push(Line::styled(
                format!("  … and {} more, marked in the table", j.stragglers.len() - k),
                t.muted(),
            ));
            break;
        }
        let others = j.ranks.len().saturating_sub(1);
        let mut why = format!("  {}", text::straggler_line(s, others, true));
        for w in &s.why {
            why.push_str(&format!(" · {}", text::why(w)));
        }
        if let Some(p) = &s.phase {
            why.push_str(&format!(" · {} +{} ms", p.name, num(p.extra_ms, 2)));
        }
        out.push(Line::raw(clip(&why, width)));
    }
    for n in &j.notes {
        out.push(Line::styled(clip(&format!("note: {n}"), width), t.muted()));
    }
    out
}
