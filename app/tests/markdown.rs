//! `--format md|csv` of the readers whose result is no single table
//! (`summary` of one trace, `compare`, `what-if`), on real traces and
//! profiles: the Markdown parses as GitHub's (pulldown-cmark, tables on)
//! into the tables expected, and every figure in them is the same figure
//! in the command's `--json`; the CSV is one table of those figures.

mod common;

use common::{fixtures, json, run};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

fn trace(dir: &str) -> String {
    common::first_trace(dir).to_string_lossy().into_owned()
}

fn reference(run: &str) -> String {
    fixtures().join("reference").join(run).to_string_lossy().into_owned()
}

const RESNET: &str = "kineto_resnet50_v100_2021jun";

fn out(args: &[&str]) -> String {
    common::profile_out(args)
}

/// A table as GitHub shows it: its header cells and rows of cells, as text.
#[derive(Debug)]
struct MdTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl MdTable {
    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    fn num(&self, row: usize, name: &str) -> Option<f64> {
        let cell = &self.rows[row][self.col(name)];
        (!cell.is_empty())
            .then(|| cell.parse().unwrap_or_else(|_| panic!("{name}: {cell:?} is not a number")))
    }
}

/// The Markdown parsed with GitHub's tables: its tables, and its text
/// outside them.
fn parse(md: &str) -> (Vec<MdTable>, String) {
    let (mut tables, mut prose) = (Vec::new(), String::new());
    let (mut cur, mut row, mut cell): (Option<MdTable>, Vec<String>, String) =
        (None, Vec::new(), String::new());
    let mut in_head = false;
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Table(_)) => cur = Some(MdTable { header: vec![], rows: vec![] }),
            Event::End(TagEnd::Table) => tables.push(cur.take().unwrap()),
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => {
                cur.as_mut().unwrap().header = std::mem::take(&mut row);
                in_head = false;
            }
            Event::End(TagEnd::TableRow) if !in_head => {
                cur.as_mut().unwrap().rows.push(std::mem::take(&mut row))
            }
            Event::End(TagEnd::TableCell) => row.push(std::mem::take(&mut cell)),
            Event::Text(t) | Event::Code(t) if cur.is_some() => cell.push_str(&t),
            Event::Text(t) | Event::Code(t) => prose.push_str(&t),
            Event::SoftBreak | Event::End(TagEnd::Paragraph | TagEnd::Item) => prose.push('\n'),
            Event::Html(h) | Event::InlineHtml(h) => panic!("raw HTML in the Markdown: {h}"),
            _ => {}
        }
    }
    (tables, prose)
}

/// The table whose header starts with `first`.
fn table<'a>(tables: &'a [MdTable], first: &[&str]) -> &'a MdTable {
    tables
        .iter()
        .find(|t| t.header.len() >= first.len() && t.header[..first.len()] == *first)
        .unwrap_or_else(|| {
            panic!(
                "no table headed {first:?}: {:?}",
                tables.iter().map(|t| &t.header).collect::<Vec<_>>()
            )
        })
}

/// The JSON value at a dotted path.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

fn same(a: f64, b: &Value, what: &str) {
    let b = b.as_f64().unwrap_or_else(|| panic!("{what}: the JSON has no number ({b})"));
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{what}: {a} vs the JSON's {b}");
}

/// `figure | value` rows: each figure's value is the JSON's at its path.
fn figures_are_the_json(t: &MdTable, doc: &Value, must: &[&str]) {
    assert_eq!(t.header, ["figure", "value"]);
    let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    for m in must {
        assert!(names.contains(m), "{m} among the figures {names:?}");
    }
    for (i, r) in t.rows.iter().enumerate() {
        same(t.num(i, "value").unwrap(), at(doc, &r[0]), &r[0]);
    }
}

/// Rows of a Markdown table against the JSON's rows, field by field:
/// numbers equal, text equal (kernels: the short label the text shows).
fn rows_are_the_json(t: &MdTable, rows: &[Value], key: &str, numbers: &[&str]) {
    assert!(!t.rows.is_empty());
    assert!(t.rows.len() <= rows.len());
    for (i, r) in t.rows.iter().enumerate() {
        let name = &r[t.col(key)];
        let row = rows
            .iter()
            .find(|x| {
                x[key].as_str().is_some_and(|s| s == name)
                    || x[key].as_u64().is_some_and(|n| name.parse() == Ok(n))
            })
            .unwrap_or_else(|| panic!("{key} {name:?} is no JSON row"));
        for n in numbers {
            match t.num(i, n) {
                Some(x) => same(x, &row[*n], &format!("{name} {n}")),
                None => assert!(row[*n].is_null(), "{name} {n}: empty, the JSON has {}", row[*n]),
            }
        }
    }
}

#[test]
fn summary_of_one_trace_is_a_document_of_its_figures() {
    let t = trace(RESNET);
    let doc = json(&["summary", &t]);
    let md = out(&["summary", &t, "--format", "md"]);
    let (tables, prose) = parse(&md);
    let head = table(&tables, &["figure", "value"]);
    figures_are_the_json(
        head,
        &doc,
        &["step_ms", "gpu_util", "host_overhead_ms_per_step", "idle.ms_per_step"],
    );
    assert!(
        prose.contains(&format!("Verdict: {}", doc["bound"].as_str().unwrap().to_uppercase())),
        "{prose}"
    );
    // The verdict's reason, read back as text, is the JSON's (its code spans kept).
    let why = doc["bound_why"].as_str().unwrap().replace('`', "");
    assert!(prose.contains(&why), "{why}\nnot in\n{prose}");
    let mix = table(&tables, &["name", "pct", "ms_per_step"]);
    rows_are_the_json(mix, doc["categories"].as_array().unwrap(), "name", &["pct", "ms_per_step"]);
    assert_eq!(mix.rows.len(), doc["categories"].as_array().unwrap().len());
    let levers = table(&tables, &["lever", "saved_ms_per_step"]);
    rows_are_the_json(
        levers,
        doc["levers"].as_array().unwrap(),
        "lever",
        &["saved_ms_per_step", "saved_pct"],
    );
    let idle = table(&tables, &["cause", "ms_per_step"]);
    rows_are_the_json(idle, doc["idle"]["causes"].as_array().unwrap(), "cause", &["ms_per_step"]);
    let top = table(&tables, &["kernel", "category"]);
    rows_are_the_json(top, doc["top_kernels"].as_array().unwrap(), "kernel", &["ms_per_step"]);
    // Its notes are in the document, so not on stderr.
    let r = run(&["profile", "summary", &t, "--format", "md"]);
    assert!(!r.stderr.contains("note:"), "{}", r.stderr);
    assert!(prose.contains("no measured timing beside this trace"), "{prose}");

    // CSV: one row, the same figures after the trace, mode, model, verdict.
    let csv_text = out(&["summary", &t, "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let recs: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), 1);
    assert_eq!(header[..4], ["trace", "mode", "model", "bound"]);
    assert_eq!(&recs[0][3], doc["bound"].as_str().unwrap());
    let names: Vec<&str> = head.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(header[4..].iter().map(String::as_str).collect::<Vec<_>>(), names);
    for (h, cell) in header.iter().zip(recs[0].iter()).skip(4) {
        same(cell.parse().unwrap(), at(&doc, h), h);
    }
}

#[test]
fn summary_of_a_cpu_run_leaves_out_the_gpu() {
    let p = reference("infer_b1");
    let doc = json(&["summary", &p]);
    let (tables, _) = parse(&out(&["summary", &p, "--format", "md"]));
    let head = table(&tables, &["figure", "value"]);
    figures_are_the_json(head, &doc, &["step_ms", "img_per_s", "latency.p50_ms"]);
    let names: Vec<&str> = head.rows.iter().map(|r| r[0].as_str()).collect();
    assert!(!names.contains(&"gpu_util") && !names.contains(&"kernels_per_step"), "{names:?}");
}

#[test]
fn compare_is_its_table_of_deltas() {
    let (a, b) = (reference("infer_b1"), reference("infer_b4"));
    let doc = json(&["compare", &a, &b]);
    let md = out(&["compare", &a, &b, "--format", "md"]);
    let (tables, prose) = parse(&md);
    let metrics = table(&tables, &["metric", "unit", "before", "after"]);
    let rows = doc["metrics"].as_array().unwrap();
    assert_eq!(metrics.rows.len(), rows.len());
    rows_are_the_json(metrics, rows, "metric", &["before", "after", "change_pct"]);
    for (i, r) in metrics.rows.iter().enumerate() {
        let sig = &rows[i]["significance"]["significance"];
        assert_eq!(r[metrics.col("significance")], sig.as_str().unwrap());
    }
    // Two CPU runs without phase walls: no GPU time in any phase to
    // compare, so no phases (nor any other delta table).
    assert!(doc["phases"].as_array().unwrap().is_empty(), "{}", doc["phases"]);
    assert!(!tables.iter().any(|t| t.header.starts_with(&["name".to_string()])));
    assert!(prose.contains("Verdict: COMPUTE → COMPUTE"), "{prose}");

    // CSV: the metrics, the significance call beside them.
    let csv_text = out(&["compare", &a, &b, "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header[..5], ["metric", "label", "unit", "before", "after"]);
    assert!(header.contains(&"significance".to_string()), "{header:?}");
    let recs: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), rows.len());
    for (rec, row) in recs.iter().zip(rows) {
        assert_eq!(&rec[0], row["metric"].as_str().unwrap());
        same(rec[4].parse().unwrap(), &row["after"], "after");
    }

    // Two GPU traces: shares change in points; gates are a table.
    let (q, bert) = (
        trace("tracelens_h100_qwen_inference"),
        fixtures()
            .join("traces/tracelens_h100_qwen_inference/gaunernst_bert-small-uncased__1016001.json.gz")
            .to_string_lossy()
            .into_owned(),
    );
    let gate = ["--fail-on", "step_ms:+1000%"];
    let doc = json(&[&["compare", &q, &bert][..], &gate].concat());
    let (tables, _) =
        parse(&out(&[&["compare", &q, &bert][..], &gate, &["--format", "md"]].concat()));
    let metrics = table(&tables, &["metric", "unit", "before", "after"]);
    rows_are_the_json(
        metrics,
        doc["metrics"].as_array().unwrap(),
        "metric",
        &["before", "after", "change_pct", "change_pts"],
    );
    // The phases on the GPU time launched in each: the first delta table.
    assert_eq!(doc["phases_measure"], "gpu");
    let phases = table(&tables, &["name", "before_ms", "after_ms", "delta_ms"]);
    rows_are_the_json(
        phases,
        doc["phases"].as_array().unwrap(),
        "name",
        &["before_ms", "delta_ms"],
    );
    let gates = table(&tables, &["gate", "metric"]);
    rows_are_the_json(
        gates,
        doc["gates"].as_array().unwrap(),
        "gate",
        &["before", "after", "limit"],
    );
    // The last of the delta tables: the kernels' largest changes, as the text lists them.
    let kernels = tables.iter().rfind(|t| t.header.starts_with(&["name".to_string()])).unwrap();
    assert_eq!(kernels.rows.len(), 8, "{:?}", kernels.rows);
    assert!(doc["kernels"].as_array().unwrap().len() > 8);
}

#[test]
fn what_if_is_its_figures_and_all_its_scenarios() {
    let t = trace(RESNET);
    let change = ["what-if", &t, "--remove-category", "gemm"];
    let doc = json(&change);
    let (tables, prose) = parse(&out(&[&change[..], &["--format", "md"]].concat()));
    figures_are_the_json(
        table(&tables, &["figure", "value"]),
        &doc,
        &["saved_ms_per_step", "removes_ms_per_step", "step_ms.now", "step_ms.projected"],
    );
    assert!(prose.contains(doc["scenario"].as_str().unwrap()), "{prose}");
    let csv_text = out(&[&change[..], &["--format", "csv"]].concat());
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let rec = reader.records().next().unwrap().unwrap();
    assert_eq!(&rec[1], doc["scenario"].as_str().unwrap());
    for (h, cell) in header.iter().zip(rec.iter()).skip(4) {
        same(cell.parse().unwrap(), at(&doc, h), h);
    }

    let doc = json(&["what-if", &t, "--all"]);
    let (tables, _) = parse(&out(&["what-if", &t, "--all", "--format", "md"]));
    let scenarios = doc["scenarios"].as_array().unwrap();
    let md = table(&tables, &["flags", "what", "saved_ms_per_step"]);
    assert_eq!(md.rows.len(), scenarios.len());
    rows_are_the_json(
        md,
        scenarios,
        "flags",
        &["saved_ms_per_step", "saved_pct", "removes_ms_per_step"],
    );
    let path = table(&tables, &["part", "kind", "ms_per_step", "pct"]);
    rows_are_the_json(
        path,
        doc["critical_path"].as_array().unwrap(),
        "part",
        &["ms_per_step", "pct"],
    );
    let csv_text = out(&["what-if", &t, "--all", "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let recs: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), scenarios.len());
    for (rec, s) in recs.iter().zip(scenarios) {
        assert_eq!(&rec[0], s["flags"].as_str().unwrap());
        same(rec[2].parse().unwrap(), &s["saved_ms_per_step"], "saved_ms_per_step");
    }
}

#[test]
fn a_job_s_what_if_and_compare_are_their_ranks() {
    let dir = fixtures().join("traces/param_dlrm_v100_8rank").to_string_lossy().into_owned();
    let doc = json(&["what-if", &dir]);
    let (tables, _) = parse(&out(&["what-if", &dir, "--format", "md"]));
    let ranks = table(&tables, &["rank", "step_ms"]);
    assert_eq!(ranks.rows.len(), 8);
    rows_are_the_json(
        ranks,
        doc["ranks"].as_array().unwrap(),
        "rank",
        &["step_ms", "saved_ms_per_step", "projected_ms"],
    );
    let doc = json(&["compare", &dir, &dir]);
    let (tables, _) = parse(&out(&["compare", &dir, &dir, "--format", "md"]));
    let ranks = table(&tables, &["rank", "before_ms", "after_ms"]);
    rows_are_the_json(ranks, doc["ranks"].as_array().unwrap(), "rank", &["before_ms", "after_ms"]);
    let csv_text = out(&["compare", &dir, &dir, "--format", "csv"]);
    assert_eq!(csv_text.lines().count(), 9, "{csv_text}");
    // `summary DIR`: the ranks, the path through them, the stragglers.
    let doc = json(&["summary", &dir]);
    let (tables, _) = parse(&out(&["summary", &dir, "--format", "md"]));
    let ranks = table(&tables, &["rank", "step_ms", "gpu_util"]);
    rows_are_the_json(ranks, doc["ranks"].as_array().unwrap(), "rank", &["step_ms", "wait_ms"]);
    let legs = table(&tables, &["rank", "ms_per_step", "largest_parts"]);
    let through = doc["path"]["through"].as_array().unwrap();
    assert_eq!(legs.rows.len(), through.len());
    for (i, leg) in through.iter().enumerate() {
        same(legs.num(i, "rank").unwrap(), &leg["rank"], "rank");
        same(legs.num(i, "ms_per_step").unwrap(), &leg["ms_per_step"], "ms_per_step");
    }
    let stragglers = table(&tables, &["rank", "wait_caused_ms_per_step"]);
    rows_are_the_json(
        stragglers,
        doc["stragglers"].as_array().unwrap(),
        "rank",
        &["wait_caused_ms_per_step"],
    );
}

#[test]
fn the_text_is_unchanged_without_the_flag() {
    let t = trace(RESNET);
    let (a, b) = (reference("infer_b1"), reference("infer_b4"));
    let cases: [&[&str]; 4] = [
        &["summary", &t],
        &["compare", &a, &b],
        &["what-if", &t, "--all"],
        &["what-if", &t, "--remove-idle", "python"],
    ];
    for args in cases {
        let plain = out(args);
        assert!(!plain.is_empty());
        assert_eq!(out(&[args, &["--format", "text"]].concat()), plain, "{args:?}");
        assert_eq!(
            out(&[args, &["--format", "json"]].concat()),
            out(&[args, &["--json"]].concat())
        );
    }
}
