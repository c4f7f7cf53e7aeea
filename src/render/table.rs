//! `--format md|csv`: the table-shaped lens results as one [`Table`],
//! built once from the lens struct's rows through serde (so the columns are
//! the JSON fields and no figure is formatted twice), and two renderers:
//! [`markdown`] for a PR comment, [`csv`] for DuckDB or pandas.

use serde::Serialize;
use serde_json::{Map, Value};

use super::text;
use crate::error::{Error, Result};
use crate::lens::collectives::Collectives;
use crate::lens::job::Job;
use crate::lens::kernels::{JobKernels, Kernels};
use crate::lens::memory::Memory;
use crate::lens::modules::Modules;
use crate::lens::ops::Ops;
use crate::lens::phases::Phases;
use crate::lens::tree::Tree;
use crate::profile::DeviceMemory;

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The JSON field's name.
    pub name: String,
    /// Every value is a number (or absent): right-aligned in Markdown.
    pub numeric: bool,
    /// Left out of the Markdown, kept in the CSV: the full kernel name
    /// beside its short label, as the text table shows only the label.
    pub wide: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// JSON null or a field the row leaves out.
    Empty,
    /// As the JSON writes it (full precision).
    Number(String),
    Text(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// One line above the Markdown table (Markdown text); not in the CSV.
    pub caption: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// What the text prints beside its table (why rates are missing, …):
    /// said on stderr, so stdout holds the table alone.
    pub notes: Vec<String>,
}

impl Table {
    /// One row per item, one column per scalar JSON field. Fields holding
    /// arrays or objects (a collective's per-rank arrivals, a memory
    /// series) are tables of their own and left out. The columns are those
    /// of `T::default()` (so an empty table keeps its header) merged with
    /// every row's, each new one after the field it follows in its row.
    pub fn of<T: Serialize + Default>(rows: &[T]) -> Result<Table> {
        let maps = rows.iter().map(to_map).collect::<Result<Vec<_>>>()?;
        Ok(Table::from_maps(&to_map(&T::default())?, &maps))
    }

    /// As [`Table::of`], from rows already in JSON form; `seed` gives the
    /// columns an empty table keeps.
    pub fn from_maps(seed: &Map<String, Value>, maps: &[Map<String, Value>]) -> Table {
        let mut names: Vec<String> = Vec::new();
        for m in std::iter::once(seed).chain(maps) {
            let mut after: Option<usize> = None;
            for (k, _) in m.iter().filter(|(_, v)| !v.is_array() && !v.is_object()) {
                match names.iter().position(|n| n == k) {
                    Some(i) => after = Some(i),
                    None => {
                        let at = after.map_or(0, |i| i + 1);
                        names.insert(at, k.clone());
                        after = Some(at);
                    }
                }
            }
        }
        let rows: Vec<Vec<Cell>> = maps
            .iter()
            .map(|m| {
                names
                    .iter()
                    .map(|n| match m.get(n) {
                        None | Some(Value::Null) => Cell::Empty,
                        Some(Value::Number(x)) => Cell::Number(x.to_string()),
                        Some(Value::String(s)) => Cell::Text(s.clone()),
                        Some(other) => Cell::Text(other.to_string()),
                    })
                    .collect()
            })
            .collect();
        // A column no row holds text in is numeric: all absent (skew on
        // one rank) is a number column still.
        let columns = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let numeric = !matches!(seed.get(&name), Some(Value::String(_) | Value::Bool(_)))
                    && rows.iter().all(|r| !matches!(r[i], Cell::Text(_)));
                Column { wide: name == "raw_name", name, numeric }
            })
            .collect();
        Table { caption: None, columns, rows, notes: Vec::new() }
    }

    fn caption(mut self, caption: String) -> Table {
        self.caption = Some(caption);
        self
    }
}

fn to_map<T: Serialize>(row: &T) -> Result<Map<String, Value>> {
    match serde_json::to_value(row) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Ok(Map::new()),
        Err(e) => Err(Error::failed(format!("cannot encode a table row: {e}")).caused_by(e)),
    }
}

/// The two tables of `collectives`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CollectivesTable {
    /// One row per matched collective.
    #[default]
    Collectives,
    /// One row per rank: its waits, last arrivals and the wait it caused.
    Ranks,
}

/// The two tables of `memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MemoryTable {
    /// One row per device: its peaks, when, and the phase and op at the peak.
    #[default]
    Devices,
    /// One row per device and phase: the phase's peaks.
    Phases,
}

/// `the trace` as a caption names it (a code span: paths hold `_`).
fn of_trace(trace: &Option<String>) -> String {
    trace.as_deref().map_or(String::new(), |t| format!("{}: ", code_span(t)))
}

fn in_phase(phase: &Option<String>) -> String {
    phase.as_deref().map_or(String::new(), |p| format!(" in phase {}", md_text(p)))
}

pub fn kernels(k: &Kernels) -> Result<Table> {
    let mut t = Table::of(&k.kernels)?.caption(format!(
        "{}{} of {} kernels{} match; {} shown",
        of_trace(&k.trace),
        k.matched,
        k.total,
        in_phase(&k.query.phase),
        k.kernels.len()
    ));
    t.notes = k.efficiency_notes.iter().map(|n| text::rates_note(n)).collect();
    if k.kernels.iter().any(|r| r.rates_thin()) {
        t.notes.push(text::thin_rates_note(false));
    }
    if k.kernels.iter().any(|r| r.achieved.is_past_roofline()) {
        t.notes.push(text::past_roofline_note(false));
    }
    t.notes.extend(
        k.graph_replay_ms_per_step
            .map(|ms| text::graph_replay_note(ms, k.graph_replay_attributed_ms_per_step)),
    );
    Ok(t)
}

pub fn job_kernels(k: &JobKernels) -> Result<Table> {
    Ok(Table::of(&k.kernels)?.caption(format!(
        "{} ranks, per kernel the mean over ranks and the rank that spends the most (`max_rank`): {} of {} kernels{} match; {} shown",
        k.ranks.len(),
        k.matched,
        k.total,
        in_phase(&k.query.phase),
        k.kernels.len()
    )))
}

pub fn ops(o: &Ops) -> Result<Table> {
    let mut t = Table::of(&o.ops)?.caption(format!(
        "{}{} of {} ops{}; {} shown",
        of_trace(&o.trace),
        o.matched,
        o.total,
        in_phase(&o.query.phase),
        o.ops.len()
    ));
    t.notes = o.efficiency_notes.iter().map(|n| text::rates_note(n)).collect();
    if !o.ops.is_empty() {
        t.notes.push(format!("pct_of_cpu_ops: {}", text::PCT_OF_CPU_OPS));
    }
    if o.ops.iter().any(|r| r.achieved.is_past_roofline()) {
        t.notes.push(text::past_roofline_note(false));
    }
    t.notes.extend(text::ops_graph_notes(o));
    t.notes.extend(o.none.map(str::to_string));
    Ok(t)
}

pub fn tree(t: &Tree) -> Result<Table> {
    let q = &t.query;
    let how = if q.bottom_up { "bottom-up" } else { "top-down" };
    let mut table = Table::of(&t.rows)?.caption(format!(
        "{}call tree by {}, {how}{}: per step GPU {} ms, CPU {} ms; {} nodes shown, {} hidden",
        of_trace(&t.trace),
        q.by.as_str(),
        in_phase(&q.phase),
        t.gpu_ms_per_step,
        t.cpu_ms_per_step,
        t.rows.len(),
        t.hidden
    ));
    table.notes = t.notes.clone();
    Ok(table)
}

pub fn modules(m: &Modules) -> Result<Table> {
    let mut table = Table::of(&m.rows)?.caption(format!(
        "{}modules, forward and backward: per step GPU {} ms ({} ms in no module or annotation); {} shown, {} hidden",
        of_trace(&m.trace),
        m.gpu_ms_per_step,
        m.outside_ms_per_step,
        m.rows.len(),
        m.hidden
    ));
    table.notes = m.notes.clone();
    Ok(table)
}

pub fn phases(p: &Phases) -> Result<Table> {
    let mut t = Table::of(&p.phases)?;
    // How they were inferred is a paragraph: on stderr, the caption says that they were.
    let inferred = if p.inferred.is_some() { " (inferred)" } else { "" };
    t.caption = match &p.trace {
        Some(trace) => Some(format!("phases of {}{inferred}", code_span(trace))),
        None => p.inferred.as_ref().map(|_| "phases inferred".to_string()),
    };
    t.notes.extend(p.inferred.iter().map(|how| format!("phases inferred: {how}")));
    t.notes.extend(p.gpu_past_wall());
    if p.phases.is_empty() {
        t.notes.push("no phases: the trace has no step/<phase> ranges and no GPU work".to_string());
    }
    Ok(t)
}

/// `collectives`: every collective in each group's order (`top: None`, as
/// the JSON), or the `top` largest skews first (as the text lists them);
/// or the per-rank waits.
pub fn collectives(c: &Collectives, which: CollectivesTable, top: Option<usize>) -> Result<Table> {
    let ranks = format!("{} rank{}", c.ranks.len(), if c.ranks.len() == 1 { "" } else { "s" });
    let world = c.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let t = match which {
        CollectivesTable::Ranks => Table::of(&c.per_rank)?.caption(format!(
            "{ranks}{world}: per rank its waits at the {} matched collectives",
            c.collectives.len()
        )),
        CollectivesTable::Collectives => {
            let n = c.collectives.len();
            match top {
                None => Table::of(&c.collectives)?
                    .caption(format!("{n} collectives on {ranks}{world}, in each group's order")),
                Some(top) => {
                    let rows: Vec<_> =
                        c.largest_skew_first().into_iter().take(top).cloned().collect();
                    let what = if c.ranks.len() == 1 { "in order" } else { "largest skew first" };
                    Table::of(&rows)?.caption(format!(
                        "{n} collectives on {ranks}{world} ({what}; {} of {n})",
                        rows.len()
                    ))
                }
            }
        }
    };
    Ok(t)
}

pub fn memory(m: &Memory, which: MemoryTable) -> Result<Table> {
    let mut t = match which {
        MemoryTable::Devices => Table::of(&m.devices)?,
        MemoryTable::Phases => {
            // The device first, then the phase's own fields.
            let with_device = |device: &str, phase: Map<String, Value>| {
                let mut row = Map::new();
                row.insert("device".to_string(), Value::String(device.to_string()));
                row.extend(phase);
                row
            };
            let seed = with_device("", to_map(&crate::profile::PhaseMemory::default())?);
            let rows = m
                .devices
                .iter()
                .flat_map(|d: &DeviceMemory| d.phases.iter().map(move |p| (d.device.as_str(), p)))
                .map(|(device, p)| to_map(p).map(|p| with_device(device, p)))
                .collect::<Result<Vec<_>>>()?;
            Table::from_maps(&seed, &rows)
        }
    };
    t.caption = Some(format!(
        "{}memory over a window of {} ms",
        of_trace(&m.trace),
        text::num(m.window_ms, 3)
    ));
    t.notes.extend(m.none.clone());
    Ok(t)
}

/// `summary` of a rank set: one row per rank.
pub fn job_ranks(j: &Job) -> Result<Table> {
    let world = j.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let stragglers = if j.stragglers.is_empty() {
        "none".to_string()
    } else {
        j.stragglers.iter().map(|s| format!("rank {}", s.rank)).collect::<Vec<_>>().join(", ")
    };
    Ok(Table::of(&j.ranks)?.caption(format!(
        "{} ranks{world}: step {} ms ({}), GPU util {} over all ranks; per rank, ms per step; stragglers: {stragglers}",
        j.ranks.len(),
        text::num(j.step_ms, 2),
        text::slowest(j),
        text::pct(j.gpu_util)
    )))
}

/// A GitHub-flavoured Markdown table: the caption, a blank line, the header,
/// the separator (`---:` for numbers) and one line per row, padded so the
/// source reads as a table too.
pub fn markdown(t: &Table) -> String {
    let shown: Vec<usize> = (0..t.columns.len()).filter(|i| !t.columns[*i].wide).collect();
    let mut out = String::new();
    if let Some(c) = &t.caption {
        out.push_str(c);
        out.push_str("\n\n");
    }
    if shown.is_empty() {
        return out;
    }
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            shown
                .iter()
                .map(|i| match &r[*i] {
                    Cell::Empty => String::new(),
                    Cell::Number(n) => n.clone(),
                    Cell::Text(s) => md_text(s),
                })
                .collect()
        })
        .collect();
    let width = |j: usize| {
        let head = t.columns[shown[j]].name.chars().count();
        cells.iter().map(|r| r[j].chars().count()).fold(head, usize::max).max(3)
    };
    let widths: Vec<usize> = (0..shown.len()).map(width).collect();
    let line = |row: Vec<(&str, bool)>| {
        let padded: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|((s, right), w)| if *right { format!("{s:>w$}") } else { format!("{s:<w$}") })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    out.push_str(&line(
        shown.iter().map(|i| (t.columns[*i].name.as_str(), t.columns[*i].numeric)).collect(),
    ));
    let sep: Vec<String> = shown
        .iter()
        .zip(&widths)
        .map(|(i, w)| {
            if t.columns[*i].numeric {
                format!("{}:", "-".repeat(w + 1))
            } else {
                "-".repeat(w + 2)
            }
        })
        .collect();
    out.push_str(&format!("|{}|\n", sep.join("|")));
    for r in &cells {
        out.push_str(&line(
            r.iter().zip(&shown).map(|(s, i)| (s.as_str(), t.columns[*i].numeric)).collect(),
        ));
    }
    out
}

/// RFC 4180: the header (the JSON field names), then one record per row;
/// absent values are empty fields.
pub fn csv(t: &Table) -> Result<String> {
    let fail = |e: csv::Error| Error::failed(format!("cannot write CSV: {e}")).caused_by(e);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(t.columns.iter().map(|c| c.name.as_str())).map_err(fail)?;
    for r in &t.rows {
        w.write_record(r.iter().map(|c| match c {
            Cell::Empty => "",
            Cell::Number(s) | Cell::Text(s) => s.as_str(),
        }))
        .map_err(fail)?;
    }
    let bytes =
        w.into_inner().map_err(|e| Error::failed(format!("cannot write CSV: {e}")).caused_by(e))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::failed(format!("cannot write CSV: {e}")).caused_by(e))
}

/// A text cell as Markdown shows it literally, on one line: plain words
/// as they are; anything Markdown or GitHub could read as markup (`<T>`,
/// `*`, `_`, `&amp;`, `:emoji:`, `$math$`, links) as a code span.
pub fn md_text(s: &str) -> String {
    let s: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    // Letters beyond ASCII mean nothing to Markdown; of ASCII punctuation, these.
    let plain = s.chars().all(|c| {
        c.is_alphanumeric() || (!c.is_ascii() && !c.is_control()) || " .,;-+=()%/:'\"?".contains(c)
    }) && s.matches(':').count() < 2
        && !s.contains("://")
        && !s.to_lowercase().contains("www.");
    if plain {
        s
    } else if s.contains("\\|") {
        // A backslash before a pipe cannot be written inside a code span
        // of a table cell (the pipe's escape takes it): escape it all.
        escape_all(&s)
    } else {
        code_span(&s)
    }
}

/// `s` as a code span: fenced by one backtick more than its longest run,
/// padded where it starts or ends with a backtick (or with spaces, which
/// a code span trims), `|` escaped for the table.
pub fn code_span(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", s.replace('|', "\\|"))
}

/// Every ASCII punctuation character backslash-escaped (CommonMark's rule:
/// each then shows as itself).
fn escape_all(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn maps(v: Value) -> Vec<Map<String, Value>> {
        v.as_array().unwrap().iter().map(|r| r.as_object().unwrap().clone()).collect()
    }

    #[test]
    fn columns_merge_in_field_order_and_skip_nested_values() {
        let seed = maps(json!([{"op": "", "ms": 0.0, "shape": null}]));
        let rows = maps(json!([
            {"op": "a", "ms": 1.5, "shape": "M=1"},
            {"op": "b", "ms": 2.0, "gflop": 3, "tflops": 1.25, "shape": null, "ranks": [1, 2]},
        ]));
        let t = Table::from_maps(&seed[0], &rows);
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["op", "ms", "gflop", "tflops", "shape"]);
        assert_eq!(
            t.columns.iter().map(|c| c.numeric).collect::<Vec<_>>(),
            [false, true, true, true, false]
        );
        assert_eq!(t.rows[0][2], Cell::Empty);
        assert_eq!(t.rows[1][3], Cell::Number("1.25".into()));
    }

    #[test]
    fn markdown_aligns_numbers_and_keeps_names_literal() {
        let rows = maps(
            json!([{"kernel": "void k<float*, 2>|x", "raw_name": "long", "ms": 1.5}, {"kernel": "gemm", "ms": 10}]),
        );
        let mut t = Table::from_maps(&Map::new(), &rows);
        t.caption = Some("2 kernels".into());
        let md = markdown(&t);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "2 kernels");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "| kernel                 |  ms |");
        assert_eq!(lines[3], "|------------------------|----:|");
        assert_eq!(lines[4], "| `void k<float*, 2>\\|x` | 1.5 |");
        assert_eq!(lines[5], "| gemm                   |  10 |");
        assert_eq!(lines.len(), 6);
    }

    #[test]
    fn markdown_cells_escape_what_markup_would_take() {
        assert_eq!(md_text("forward"), "forward");
        assert_eq!(md_text("cuda:0"), "cuda:0");
        assert_eq!(md_text("at::native::add_kernel"), "`at::native::add_kernel`");
        assert_eq!(md_text("a`b"), "``a`b``");
        assert_eq!(md_text("`x`"), "`` `x` ``");
        assert_eq!(md_text("a\nb"), "a b");
        assert_eq!(md_text("a\\|b"), "a\\\\\\|b");
        assert_eq!(md_text("see http://x"), "`see http://x`");
        assert_eq!(md_text("host / launch"), "host / launch");
        assert_eq!(md_text("a <b> & c"), "`a <b> & c`");
    }

    #[test]
    fn csv_quotes_and_leaves_absent_values_empty() {
        let rows = maps(json!([{"name": "a, \"b\"", "v": 0.1}, {"name": "c"}]));
        let t = Table::from_maps(&Map::new(), &rows);
        assert_eq!(csv(&t).unwrap(), "name,v\n\"a, \"\"b\"\"\",0.1\nc,\n");
    }
}
