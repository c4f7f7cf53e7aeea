//! `--format text|json|md|csv` on the table-shaped readers, on real traces
//! (docs/spec.md §3): the CSV is the JSON rows, the Markdown one table line
//! per row with every `|` in a cell escaped, `--json` is `--format json`, and
//! the text is what it was without the flag.

mod common;

use common::{fixtures, json, run};
use serde_json::Value;

/// The trace of a fixture folder (its first, by name).
fn trace(dir: &str) -> String {
    common::first_trace(dir).to_string_lossy().into_owned()
}

/// A folder of rank traces.
fn ranks(dir: &str) -> String {
    fixtures().join("traces").join(dir).to_string_lossy().into_owned()
}

const QWEN: &str = "tracelens_h100_qwen_inference";
const RESNET: &str = "kineto_resnet50_v100_2021jun";
const DLRM: &str = "param_dlrm_v100_8rank";

/// `libreyolo profile <args>`, exit 0, stdout.
fn out(args: &[&str]) -> String {
    common::profile_out(args)
}

fn with(args: &[&str], more: &[&str]) -> Vec<String> {
    args.iter().chain(more).map(|s| s.to_string()).collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The CSV of `args` parsed, checked against the JSON rows at `key`: the
/// same rows in order, every scalar JSON field a column, every cell the
/// field's value (a number equal as a number), empty exactly where the
/// JSON has null or leaves the field out. Returns the header.
fn csv_is_json_rows(args: &[&str], key: &str, table: &[&str]) -> Vec<String> {
    let csv_text = out(&strs(&with(args, &[&["--format", "csv"], table].concat())));
    let doc = json(args);
    let rows = doc[key].as_array().unwrap_or_else(|| panic!("{args:?}: no {key}[] in the JSON"));
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(records.len(), rows.len(), "{args:?}: CSV records against JSON rows");
    for (i, (rec, row)) in records.iter().zip(rows).enumerate() {
        let obj = row.as_object().unwrap();
        for (k, _) in obj.iter().filter(|(_, v)| !v.is_array() && !v.is_object()) {
            assert!(header.contains(k), "{args:?}: JSON field {k} is no CSV column ({header:?})");
        }
        for (col, cell) in header.iter().zip(rec.iter()) {
            let at = format!("{args:?} row {i} column {col}");
            match obj.get(col) {
                None | Some(Value::Null) => {
                    assert_eq!(cell, "", "{at}: absent in the JSON, so empty")
                }
                Some(Value::Number(n)) => {
                    let x: f64 =
                        cell.parse().unwrap_or_else(|_| panic!("{at}: {cell:?} is not a number"));
                    // serde_json (without `float_roundtrip`) may read a
                    // full-precision f64 one ulp off; the CSV's is exact.
                    let want = n.as_f64().unwrap();
                    assert!(
                        (x - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                        "{at}: {x} vs {want}"
                    );
                }
                Some(Value::String(s)) => {
                    assert_eq!(cell, s, "{at}");
                    assert!(!s.is_empty() || cell.is_empty());
                }
                Some(Value::Bool(b)) => assert_eq!(cell, b.to_string(), "{at}"),
                Some(other) => panic!("{at}: a nested value {other} became a column"),
            }
        }
    }
    header
}

/// Splits a Markdown table line into its cells as GitHub does: a backslash
/// and the character after it are one unit, so `\|` stays in the cell.
fn md_cells(line: &str) -> Vec<String> {
    let inner = line
        .strip_prefix('|')
        .and_then(|l| l.strip_suffix('|'))
        .unwrap_or_else(|| panic!("not a table line: {line}"));
    let (mut cells, mut cur, mut chars) = (Vec::new(), String::new(), inner.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                cur.extend(chars.next());
            }
            '|' => cells.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    cells.push(cur);
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The Markdown of `args`: an optional caption and blank line, the header,
/// a separator with one entry per column (numbers right-aligned), one line
/// per row with as many cells. Returns (header, rows).
fn markdown(args: &[&str], table: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
    let md = out(&strs(&with(args, &[&["--format", "md"], table].concat())));
    let mut lines: Vec<&str> = md.lines().collect();
    if !lines[0].starts_with('|') {
        assert_eq!(lines[1], "", "{args:?}: a blank line after the caption:\n{md}");
        assert!(!lines[0].contains('\n'));
        lines.drain(..2);
    }
    let header = md_cells(lines[0]);
    let sep = md_cells(lines[1]);
    assert_eq!(sep.len(), header.len(), "{args:?}: one separator entry per column:\n{md}");
    for s in &sep {
        assert!(
            s.len() >= 3 && s.trim_end_matches(':').chars().all(|c| c == '-'),
            "{args:?}: separator {s:?}"
        );
    }
    let rows: Vec<Vec<String>> = lines[2..].iter().map(|l| md_cells(l)).collect();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            r.len(),
            header.len(),
            "{args:?}: row {i} has {} cells for {} columns:\n{}",
            r.len(),
            header.len(),
            lines[2 + i]
        );
    }
    // Numbers right-aligned.
    for (h, s) in header.iter().zip(&sep) {
        if h == "ms_per_step" || h == "step_ms" || h == "skew_us" {
            assert!(s.ends_with(':'), "{args:?}: {h} right-aligned");
        }
    }
    (header, rows)
}

#[test]
fn kernels_and_ops_with_roofline_fields() {
    let t = trace(QWEN);
    let header = csv_is_json_rows(&["kernels", &t, "--top", "60"], "kernels", &[]);
    for col in [
        "kernel",
        "raw_name",
        "category",
        "tensorcore",
        "ms_per_step",
        "pct_of_gpu",
        "count_per_step",
    ] {
        assert!(header.contains(&col.to_string()), "{col} in {header:?}");
    }
    for col in [
        "modelled_ms_per_step",
        "gflop_per_step",
        "tflops",
        "pct_of_peak",
        "lost_ms_per_step",
        "roofline_bound",
    ] {
        assert!(header.contains(&col.to_string()), "the roofline's {col} in {header:?}");
    }
    csv_is_json_rows(&["kernels", &t, "--sort", "efficiency", "--top", "15"], "kernels", &[]);
    let header = csv_is_json_rows(&["ops", &t, "--top", "60"], "ops", &[]);
    assert!(header.contains(&"shape".to_string()), "{header:?}");

    let (head, rows) = markdown(&["kernels", &t, "--top", "60"], &[]);
    assert_eq!(
        rows.len(),
        json(&["kernels", &t, "--top", "60"])["kernels"].as_array().unwrap().len()
    );
    assert!(
        !head.contains(&"raw_name".to_string()),
        "the Markdown shows the short label, as the text does"
    );
    assert_eq!(head[0], "kernel");
    let (_, rows) = markdown(&["ops", &t], &[]);
    assert_eq!(rows.len(), json(&["ops", &t])["ops"].as_array().unwrap().len());
}

#[test]
fn markdown_caption_says_what_matched() {
    let t = trace(QWEN);
    let md = out(&["kernels", &t, "--grep", "gemm", "--format", "md"]);
    let doc = json(&["kernels", &t, "--grep", "gemm"]);
    let caption = md.lines().next().unwrap();
    assert!(
        caption.contains(&format!("{} of {} kernels match", doc["matched"], doc["total"])),
        "{caption}"
    );
    // Names Markdown would take for markup are code spans.
    assert!(!md.lines().skip(2).any(|l| l.contains('<') && !l.contains('`')), "{md}");
}

#[test]
fn phases_and_memory() {
    let t = trace(RESNET);
    csv_is_json_rows(&["phases", &t], "phases", &[]);
    let (_, rows) = markdown(&["phases", &t], &[]);
    assert_eq!(rows.len(), json(&["phases", &t])["phases"].as_array().unwrap().len());

    let header = csv_is_json_rows(&["memory", &t], "devices", &[]);
    assert!(
        !header.contains(&"series".to_string()) && !header.contains(&"phases".to_string()),
        "{header:?}"
    );
    csv_is_json_rows(&["memory", &t], "devices", &["--table", "devices"]);
    // Per device and phase: the device, then the phase's own fields.
    let csv_text = out(&["memory", &t, "--format", "csv", "--table", "phases"]);
    let doc = json(&["memory", &t]);
    let want: Vec<(String, Value)> = doc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            d["phases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (d["device"].as_str().unwrap().to_string(), p.clone()))
        })
        .collect();
    assert!(!want.is_empty());
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    // Reserved only where the trace recorded it.
    let reserved = want.iter().any(|(_, p)| !p["peak_reserved_mb"].is_null());
    let mut expect = vec!["device", "phase", "peak_allocated_mb"];
    expect.extend(reserved.then_some("peak_reserved_mb"));
    assert_eq!(header, expect);
    let recs: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), want.len());
    for (r, (device, p)) in recs.iter().zip(&want) {
        assert_eq!(&r[0], device);
        assert_eq!(&r[1], p["phase"].as_str().unwrap());
        assert_eq!(r[2].parse::<f64>().unwrap(), p["peak_allocated_mb"].as_f64().unwrap());
        if reserved {
            assert_eq!(r[3].is_empty(), p["peak_reserved_mb"].is_null());
        }
    }
    markdown(&["memory", &t], &["--table", "phases"]);
    let qwen = trace(QWEN);
    csv_is_json_rows(&["memory", &qwen], "devices", &[]);
    markdown(&["memory", &qwen], &[]);

    // No memory events: a header, the reason on stderr.
    let none = trace("hta_alexnet_a100_nosteps");
    let r = run(&["profile", "memory", &none, "--format", "csv"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stderr.contains("no memory events"), "{}", r.stderr);
}

#[test]
fn rank_sets_kernels_collectives_and_the_ranks_table() {
    let dir = ranks(DLRM);
    let header = csv_is_json_rows(&["kernels", &dir], "kernels", &[]);
    assert!(header.contains(&"max_rank".to_string()), "{header:?}");
    markdown(&["kernels", &dir], &[]);

    let header = csv_is_json_rows(&["collectives", &dir], "collectives", &[]);
    assert!(
        !header.contains(&"ranks".to_string()),
        "per-rank arrivals are nested, not a column: {header:?}"
    );
    csv_is_json_rows(&["collectives", &dir], "collectives", &["--table", "collectives"]);
    csv_is_json_rows(&["collectives", &dir], "per_rank", &["--table", "ranks"]);
    let (_, rows) = markdown(&["collectives", &dir, "--top", "5"], &[]);
    assert_eq!(rows.len(), 5, "Markdown lists the --top largest skews, as the text");
    let (_, rows) = markdown(&["collectives", &dir], &["--table", "ranks"]);
    assert_eq!(rows.len(), 8);

    let header = csv_is_json_rows(&["summary", &dir], "ranks", &[]);
    assert_eq!(header[0], "rank");
    // Its Markdown is a document (the ranks, the path through them, the
    // stragglers): app/tests/markdown.rs.

    let nccl = trace("hta_nccl_a100_2024");
    csv_is_json_rows(&["collectives", &nccl], "collectives", &[]);
    markdown(&["collectives", &nccl], &[]);
}

#[test]
fn json_is_format_json_and_contradictions_exit_2() {
    let t = trace(RESNET);
    assert_eq!(out(&["phases", &t, "--json"]), out(&["phases", &t, "--format", "json"]));
    assert_eq!(out(&["phases", &t, "--json", "--format", "json"]), out(&["phases", &t, "--json"]));
    for f in ["csv", "md", "text"] {
        let r = run(&["profile", "kernels", &t, "--json", "--format", f]);
        assert_eq!(r.code, 2, "--json --format {f}: {}", r.stderr);
        assert!(r.stderr.contains("--json means --format json"), "{}", r.stderr);
        assert!(r.stdout.is_empty());
    }
    let r = run(&["profile", "memory", &t, "--table", "phases"]);
    assert_eq!(r.code, 2, "--table without md or csv: {}", r.stderr);
    for cmd in [&["summary", &t][..], &["what-if", &t, "--all"], &["compare", &t, &t]] {
        let r = run(&[&["profile"][..], cmd, &["--json", "--format", "md"]].concat());
        assert_eq!(r.code, 2, "{cmd:?} --json --format md: {}", r.stderr);
    }
    let r = run(&["profile", "ops", &t, "--format", "xml"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("md") && r.stderr.contains("csv"),
        "the formats are listed: {}",
        r.stderr
    );
}

#[test]
fn text_without_the_flag_is_unchanged() {
    let (qwen, resnet, dlrm) = (trace(QWEN), trace(RESNET), ranks(DLRM));
    let cases: [&[&str]; 9] = [
        &["kernels", &qwen],
        &["ops", &qwen],
        &["phases", &resnet],
        &["memory", &resnet],
        &["kernels", &dlrm],
        &["collectives", &dlrm],
        &["collectives", &qwen],
        &["summary", &dlrm],
        &["summary", &resnet],
    ];
    for args in cases {
        let plain = out(args);
        assert!(!plain.is_empty());
        assert_eq!(out(&strs(&with(args, &["--format", "text"]))), plain, "{args:?}");
    }
}
