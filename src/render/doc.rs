//! `--format md|csv` of the readers whose result is no single table:
//! `summary` of one trace, `compare`, `what-if`. The Markdown is a small
//! document — lines of prose, lists and [`Table`]s — written by one
//! function, [`markdown_document`]; the CSV is the one table in it that
//! fits a spreadsheet (the headline figures as one row, the metrics
//! compared, the scenarios). Figures come from the lens structs through
//! serde, as every table's do, so they are the JSON's.

use serde::Serialize;
use serde_json::{Map, Value};

use super::table::{Table, code_span, markdown};
use super::text;
use crate::error::{Error, Result};
use crate::lens::compare::{Comparison, RowDelta};
use crate::lens::job::{Job, JobComparison, PathLeg};
use crate::lens::summary::Summary;
use crate::lens::whatif::{JobWhatIf, WhatIf, WhatIfAll};

/// A part of a Markdown document.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// A paragraph, already Markdown (see [`md_prose`]).
    Text(String),
    /// A bulleted list, each item already Markdown.
    List(Vec<String>),
    /// A table with its caption.
    Table(Table),
}

/// The parts one after another, a blank line between them; empty lists
/// and tables without rows are left out.
pub fn markdown_document(parts: &[Part]) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for p in parts {
        match p {
            Part::Text(t) => blocks.push(t.trim_end().to_string()),
            Part::List(items) if !items.is_empty() => {
                let lines: Vec<String> =
                    items.iter().map(|i| format!("- {}", i.replace('\n', " "))).collect();
                blocks.push(lines.join("\n"));
            }
            Part::Table(t) if !t.rows.is_empty() => blocks.push(markdown(t).trim_end().to_string()),
            _ => {}
        }
    }
    let mut out = blocks.join("\n\n");
    out.push('\n');
    out
}

/// Prose as Markdown shows it literally: the code spans it already holds
/// (`` `name` ``) kept, elsewhere every character Markdown or GitHub could
/// take for markup backslash-escaped, line breaks made spaces.
pub fn md_prose(s: &str) -> String {
    let s: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            // A closing run of the same length makes a code span: kept whole.
            let close = (i + run..chars.len()).find(|&j| {
                chars[j..].iter().take_while(|c| **c == '`').count() == run
                    && (j == 0 || chars[j - 1] != '`')
            });
            if let Some(j) = close {
                let span: String = chars[i..j + run].iter().collect();
                out.push_str(&span.replace('|', "\\|"));
                i = j + run;
                continue;
            }
            out.push_str(&"\\`".repeat(run));
            i += run;
            continue;
        }
        // `:` before a letter may open an emoji (`:x:`), before `/` a link.
        let colon = c == ':' && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric() || *n == '/');
        if "\\*_[]<>|~$&#!{}".contains(c) || colon {
            out.push('\\');
        }
        out.push(c);
        i += 1;
    }
    out
}

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v)
        .map_err(|e| Error::failed(format!("cannot encode a table: {e}")).caused_by(e))
}

/// The value at a dotted JSON path (`latency.p50_ms`).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

/// The figures at `paths` that the JSON holds as numbers, named by their
/// paths.
fn figures(v: &Value, paths: &[&str]) -> Vec<(String, Value)> {
    paths
        .iter()
        .filter_map(|p| at(v, p).filter(|x| x.is_number()).map(|x| (p.to_string(), x.clone())))
        .collect()
}

/// Figures as a two-column table, `figure | value`: what Markdown shows.
fn vertical(figs: &[(String, Value)], caption: String) -> Table {
    let rows: Vec<Map<String, Value>> = figs
        .iter()
        .map(|(k, v)| {
            let mut m = Map::new();
            m.insert("figure".into(), Value::String(k.clone()));
            m.insert("value".into(), v.clone());
            m
        })
        .collect();
    let mut t = Table::from_maps(&Map::new(), &rows);
    t.caption = Some(caption);
    t
}

/// `lead` fields and then the figures as one row: what CSV holds.
fn one_row(v: &Value, lead: &[&str], figs: &[(String, Value)]) -> Table {
    let mut row = Map::new();
    for k in lead {
        row.insert(k.to_string(), at(v, k).cloned().unwrap_or(Value::Null));
    }
    row.extend(figs.iter().cloned());
    Table::from_maps(&row, &[row.clone()])
}

/// Rows of any serialisable items; each object field in `lift` has its
/// scalar fields put in the row beside the others (a metric's
/// `significance`).
fn rows_of<T: Serialize>(items: &[T], lift: &[&str]) -> Result<Table> {
    let maps = items
        .iter()
        .map(|x| {
            let Value::Object(mut m) = to_value(x)? else { return Ok(Map::new()) };
            for key in lift {
                if let Some(Value::Object(inner)) = m.remove(*key) {
                    m.extend(inner.into_iter().filter(|(_, v)| !v.is_array() && !v.is_object()));
                }
            }
            Ok(m)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Table::from_maps(&Map::new(), &maps))
}

fn captioned(mut t: Table, caption: String) -> Table {
    t.caption = Some(caption);
    t
}

/// Only these columns, in this order.
fn only(mut t: Table, names: &[&str]) -> Table {
    let keep: Vec<usize> =
        names.iter().filter_map(|n| t.columns.iter().position(|c| c.name == *n)).collect();
    t.columns = keep.iter().map(|i| t.columns[*i].clone()).collect();
    t.rows = t.rows.iter().map(|r| keep.iter().map(|i| r[*i].clone()).collect()).collect();
    t
}

/// The headline figures of a summary, by their JSON paths. A CPU run
/// leaves out the GPU's, which would be zeros.
const HEADLINE: &[&str] = &[
    "step_ms",
    "img_per_s",
    "img_per_s_std",
    "latency.p50_ms",
    "latency.p90_ms",
    "latency.p99_ms",
    "gpu_util",
    "gpu_busy_ms_per_step",
    "tensorcore_pct",
    "peak_vram_mb",
    "host_overhead_ms_per_step",
    "host_in_ops_frac",
    "launches_per_step",
    "launches_recorded_per_step",
    "kernels_per_step",
    "mean_kernel_us",
    "memcpy_ms_per_step",
    "idle.ms_per_step",
    "dataload_ms",
    "dataload_frac",
    "comm_ms_per_step",
    "comm_exposed_ms_per_step",
];

const GPU_ONLY: &[&str] = &[
    "gpu_util",
    "gpu_busy_ms_per_step",
    "tensorcore_pct",
    "host_overhead_ms_per_step",
    "launches_per_step",
    "launches_recorded_per_step",
    "kernels_per_step",
    "mean_kernel_us",
    "memcpy_ms_per_step",
    "idle.ms_per_step",
];

fn headline(s: &Summary, v: &Value) -> Vec<(String, Value)> {
    let cpu = s.cpu_run();
    let paths: Vec<&str> = HEADLINE
        .iter()
        .copied()
        .filter(|p| !(cpu && GPU_ONLY.contains(p)))
        .filter(|p| *p != "img_per_s_std" || s.img_per_s_n > 1)
        .collect();
    figures(v, &paths)
}

/// `summary --format csv` of one trace: its headline figures as one row,
/// after the trace, mode, model and verdict (the same row for any number
/// of traces, for a spreadsheet of runs).
pub fn summary_row(s: &Summary) -> Result<Table> {
    let v = to_value(s)?;
    Ok(one_row(&v, &["trace", "mode", "model", "bound"], &headline(s, &v)))
}

/// `summary --format md` of one trace.
pub fn summary(s: &Summary) -> Result<Vec<Part>> {
    let v = to_value(s)?;
    let mut parts = Vec::new();
    let of = s.trace.as_deref().map_or(String::new(), |t| format!("{}: ", code_span(t)));
    let model = s.model.as_deref().map_or(String::new(), |m| format!(", model {}", md_prose(m)));
    parts.push(Part::Text(format!(
        "{of}{} {} of {} ms{model}",
        s.mode,
        text::count(s.figures.window.real_steps as f64, "step"),
        text::num(s.figures.window.wall_ms, 1)
    )));
    if s.figures.memory_pressure {
        parts.push(Part::Text(
            "**Untrustworthy**: taken under VRAM pressure; utilisation and throughput here are unreliable"
                .into(),
        ));
    }
    if let Some(w) = &s.contended {
        parts.push(Part::Text(format!("**{}**", md_prose(w))));
    }
    parts.push(Part::Text(format!(
        "**Verdict: {}** — {}",
        s.bound.as_str().to_uppercase(),
        md_prose(&s.bound_why)
    )));
    parts.push(Part::Table(vertical(
        &headline(s, &v),
        "Headline figures (ms per step where a step's; `*_util`, `*_frac` are 0–1 fractions)"
            .into(),
    )));
    parts.push(Part::List(
        s.health
            .iter()
            .map(|h| {
                format!(
                    "**{}** {}: {}",
                    h.severity,
                    md_prose(&h.check.to_string()),
                    md_prose(&h.says)
                )
            })
            .collect(),
    ));
    if !s.levers.is_empty() {
        let t = only(
            rows_of(&s.levers, &[])?,
            &["lever", "saved_ms_per_step", "saved_pct", "evidence", "change", "what_if"],
        );
        parts.push(Part::Table(captioned(
            t,
            "Levers, by the step time the step model says each saves".into(),
        )));
    }
    if let Some(idle) = &s.idle {
        let t = only(rows_of(&idle.causes, &[])?, &["cause", "ms_per_step", "gaps_per_step"]);
        parts.push(Part::Table(captioned(
            t,
            format!(
                "Why the GPU waits: {} ms per step idle on device {}, by cause",
                idle.ms_per_step, idle.device
            ),
        )));
    }
    if let Some(m) = &s.step_model {
        let t = rows_of(&m.critical_path, &[])?;
        parts.push(Part::Table(captioned(t, path_caption(&m.span, m.steps))));
    }
    parts.push(Part::Table(captioned(rows_of(&s.categories, &[])?, "Kernel mix".into())));
    let kernels = only(
        rows_of(&s.top_kernels, &[])?,
        &["kernel", "category", "tensorcore", "ms_per_step", "pct_of_gpu", "count_per_step"],
    );
    parts.push(Part::Table(captioned(kernels, "Top kernels per step".into())));
    if s.categories.is_empty() && s.top_kernels.is_empty() {
        parts.push(Part::Text(md_prose(&format!("kernels: {}", crate::lens::kernels::NO_KERNELS))));
    }
    parts.push(Part::List(s.warnings.iter().map(|w| format!("note: {}", md_prose(w))).collect()));
    Ok(parts)
}

/// Rows shown per delta table, as the text shows them.
const DELTAS_SHOWN: usize = 8;

/// `compare --format csv`: the metrics, before and after, with the
/// significance call's fields beside them.
pub fn compare_metrics(c: &Comparison) -> Result<Table> {
    rows_of(&c.metrics, &["significance"])
}

/// `compare --format md`.
pub fn compare(c: &Comparison) -> Result<Vec<Part>> {
    let mut parts = vec![Part::Text(format!("{} → {}", code_span(&c.before), code_span(&c.after)))];
    if let Some(w) = &c.warning {
        parts.push(Part::Text(format!("**Warning**: {}", md_prose(w))));
    }
    if !c.notes.is_empty() {
        parts.push(Part::List(c.notes.iter().map(|n| format!("note: {}", md_prose(n))).collect()));
    }
    let metrics = only(
        compare_metrics(c)?,
        &[
            "metric",
            "unit",
            "before",
            "after",
            "change_pct",
            "change_pts",
            "improved",
            "significant",
            "significance",
        ],
    );
    parts.push(Part::Table(captioned(metrics, "Metrics, before → after".into())));
    parts.push(Part::Text(format!(
        "**Verdict**: {} → {}",
        c.bound[0].as_str().to_uppercase(),
        c.bound[1].as_str().to_uppercase()
    )));
    let phases = format!("Phases ({} per step)", c.phases_measure.heading());
    for (title, rows) in [
        (phases.as_str(), &c.phases),
        ("Kernel mix (ms per step)", &c.categories),
        ("GPU idle by cause (ms per step)", &c.idle),
    ] {
        parts.push(Part::Table(deltas(title, rows)?));
    }
    match c.no_kernel_changed() {
        Some(none) => parts.push(Part::Text(format!("Kernels: {none}."))),
        None => parts.push(Part::Table(deltas(
            "Kernels, largest changes (ms per step)",
            &c.changed_kernels(),
        )?)),
    }
    if !c.gates.is_empty() {
        parts.push(Part::Table(captioned(rows_of(&c.gates, &[])?, "Gates (`--fail-on`)".into())));
    }
    Ok(parts)
}

/// A section of row deltas: its largest changes, kernels by their short
/// name as the text shows them.
fn deltas(title: &str, rows: &[RowDelta]) -> Result<Table> {
    let shown: Vec<RowDelta> = rows
        .iter()
        .take(DELTAS_SHOWN)
        .map(|r| RowDelta { name: crate::analysis::kernels::short_name(&r.name), ..r.clone() })
        .collect();
    let more = if rows.len() > shown.len() {
        format!(" ({} of {}; `--json` lists all)", shown.len(), rows.len())
    } else {
        String::new()
    };
    Ok(captioned(rows_of(&shown, &[])?, format!("{title}{more}")))
}

/// The figures of one what-if, by their JSON paths.
const WHAT_IF: &[&str] = &[
    "removes_ms_per_step",
    "saved_ms_per_step",
    "saved_without_inferred_ms",
    "step_ms.now",
    "step_ms.projected",
    "img_per_s.now",
    "img_per_s.projected",
    "change_pct",
];

/// `what-if --format csv` of one change: one row.
pub fn what_if_row(w: &WhatIf) -> Result<Table> {
    let v = to_value(w)?;
    Ok(one_row(&v, &["trace", "scenario", "what", "model"], &figures(&v, WHAT_IF)))
}

/// `what-if --format md` of one change.
pub fn what_if(w: &WhatIf) -> Result<Vec<Part>> {
    let v = to_value(w)?;
    let mut parts =
        vec![Part::Text(format!("**what-if {}**: {}", code_span(&w.scenario), md_prose(&w.what)))];
    parts.push(Part::Table(vertical(&figures(&v, WHAT_IF), "Per step".into())));
    parts.push(Part::List(w.notes.iter().map(|n| format!("note: {}", md_prose(n))).collect()));
    parts.push(Part::Text(format!("_{}_", md_prose(&w.caveat))));
    Ok(parts)
}

/// `what-if --all --format csv`: the scenarios.
pub fn what_if_scenarios(w: &WhatIfAll) -> Result<Table> {
    Table::of(&w.scenarios)
}

/// The critical path table's caption: what it spans, where that is more
/// than the steps.
fn path_caption(span: &crate::profile::PathSpan, steps: u64) -> String {
    match text::path_span(span, steps) {
        Some(s) => format!("Critical path, per step ({s})"),
        None => "Critical path, per step".into(),
    }
}

/// `what-if --all --format md`.
pub fn what_if_all(w: &WhatIfAll) -> Result<Vec<Part>> {
    let of = w.trace.as_deref().map_or(String::new(), |t| format!("{}: ", code_span(t)));
    let mut parts = vec![Part::Text(format!(
        "{of}the standard changes re-timed on the step model ({} modelled, step {} ms)",
        text::count(w.steps_modelled as f64, "step"),
        text::num(w.step_ms, 2)
    ))];
    parts.push(Part::Table(captioned(
        what_if_scenarios(w)?,
        "What-ifs, largest saving first (ms per step)".into(),
    )));
    parts.push(Part::Table(captioned(
        rows_of(&w.critical_path, &[])?,
        path_caption(&w.span, w.steps_modelled),
    )));
    if !w.through.is_empty() {
        parts.push(Part::Table(through(&w.through)?));
    }
    parts.push(Part::List(w.notes.iter().map(|n| format!("note: {}", md_prose(n))).collect()));
    parts.push(Part::Text(format!("_{}_", md_prose(&w.caveat))));
    Ok(parts)
}

/// The path through a job's ranks, latest leg first: a row per leg, with
/// its largest parts and where it waited for the next leg's rank.
fn through(legs: &[PathLeg]) -> Result<Table> {
    let rows: Vec<Map<String, Value>> = legs
        .iter()
        .map(|l| {
            let mut m = Map::new();
            m.insert("rank".into(), l.rank.into());
            m.insert("ms_per_step".into(), l.ms_per_step.into());
            m.insert("largest_parts".into(), text::path_line(&l.parts, 3).into());
            let w = l.waits_at.as_ref();
            m.insert(
                "waited_at".into(),
                w.map_or(Value::Null, |w| {
                    format!("{} #{} ({})", w.collective, w.seq, w.group).into()
                }),
            );
            m.insert("waited_ms".into(), w.map_or(Value::Null, |w| w.wait_ms.into()));
            m.insert("for_rank".into(), w.map_or(Value::Null, |w| w.for_rank.into()));
            m
        })
        .collect();
    Ok(captioned(
        Table::from_maps(&Map::new(), &rows),
        "Path through the ranks, from the job's last work back (ms per step)".into(),
    ))
}

/// `summary DIR --format md`: the job's line, its ranks, the path through
/// them and the stragglers.
pub fn job(j: &Job) -> Result<Vec<Part>> {
    let mut parts = vec![Part::Table(crate::render::table::job_ranks(j)?)];
    if let Some(p) = &j.path {
        let mut said = format!(
            "The job's step is rank {}'s: {}.",
            p.rank,
            md_prose(&text::path_line(&p.parts, 3))
        );
        if let Some(w) = &p.waits_at {
            said.push_str(&format!(
                " Its longest wait: {} ms at {} #{} ({}) for rank {}.",
                text::num(w.wait_ms, 3),
                md_prose(&w.collective),
                w.seq,
                md_prose(&w.group),
                w.for_rank
            ));
        }
        parts.push(Part::Text(said));
        if !p.through.is_empty() {
            parts.push(Part::Table(through(&p.through)?));
        }
    }
    if !j.stragglers.is_empty() {
        parts.push(Part::Table(captioned(
            rows_of(&j.stragglers, &[])?,
            "Stragglers, by the wait they cause (ms per step)".into(),
        )));
    }
    parts.push(Part::List(j.notes.iter().map(|n| format!("note: {}", md_prose(n))).collect()));
    Ok(parts)
}

/// `what-if DIR --format csv` (a straggler removed, or a change on every
/// rank): each rank re-timed.
pub fn job_what_if_ranks(w: &JobWhatIf) -> Result<Table> {
    rows_of(&w.ranks, &[])
}

/// `what-if DIR --format md`.
pub fn job_what_if(w: &JobWhatIf) -> Result<Vec<Part>> {
    let step = |v: Option<f64>| v.map_or("n/a".to_string(), |v| text::num(v, 2));
    Ok(vec![
        Part::Text(format!("**what-if {}**: {}", md_prose(&w.scenario), md_prose(&w.what))),
        Part::Table(captioned(job_what_if_ranks(w)?, "Each rank re-timed (ms per step)".into())),
        Part::Text(format!(
            "Job step (the slowest rank's): {} → ~{} ms",
            step(w.job_step_ms.now),
            step(w.job_step_ms.projected)
        )),
        Part::List(w.notes.iter().map(|n| format!("note: {}", md_prose(n))).collect()),
        Part::Text(format!("_{}_", md_prose(&w.caveat))),
    ])
}

/// `compare` of two jobs `--format csv`: each rank's step before and after.
pub fn job_compare_ranks(c: &JobComparison) -> Result<Table> {
    rows_of(&c.ranks, &[])
}

/// `compare` of two jobs `--format md`.
pub fn job_compare(c: &JobComparison) -> Result<Vec<Part>> {
    let rank = |r: Option<u32>| r.map_or("none".to_string(), |r| format!("rank {r}"));
    let mut parts = vec![Part::Text(format!(
        "{} → {}: job step {} → {} ms, GPU util {} → {}, waited for: {} → {}",
        code_span(&c.before),
        code_span(&c.after),
        text::num(c.step_ms[0], 2),
        text::num(c.step_ms[1], 2),
        text::pct(c.gpu_util[0]),
        text::pct(c.gpu_util[1]),
        rank(c.critical_rank[0]),
        rank(c.critical_rank[1])
    ))];
    if let Some(w) = &c.warning {
        parts.push(Part::Text(format!("**Warning**: {}", md_prose(w))));
    }
    parts.push(Part::Table(captioned(job_compare_ranks(c)?, "Each rank's step (ms)".into())));
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_keeps_its_code_spans_and_escapes_markup() {
        assert_eq!(md_prose("GPU idle 45%; see `a_b|c`"), "GPU idle 45%; see `a_b\\|c`");
        assert_eq!(md_prose("a_b *c* <T>"), "a\\_b \\*c\\* \\<T\\>");
        assert_eq!(md_prose("one: two"), "one: two");
        assert_eq!(md_prose("see http://x :smile:"), "see http\\://x \\:smile:");
        assert_eq!(md_prose("a ` b"), "a \\` b");
        assert_eq!(md_prose("x\ny"), "x y");
    }

    #[test]
    fn a_document_is_its_parts_with_blank_lines_between() {
        let rows = vec![Map::from_iter([("a".to_string(), Value::from(1.5))])];
        let mut t = Table::from_maps(&Map::new(), &rows);
        t.caption = Some("cap".into());
        let empty = Table::from_maps(&Map::new(), &[]);
        let doc = markdown_document(&[
            Part::Text("head".into()),
            Part::List(vec![]),
            Part::Table(empty),
            Part::List(vec!["x".into(), "y\nz".into()]),
            Part::Table(t),
        ]);
        assert_eq!(doc, "head\n\n- x\n- y z\n\ncap\n\n|   a |\n|----:|\n| 1.5 |\n");
    }
}
