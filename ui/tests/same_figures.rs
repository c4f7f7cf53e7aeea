//! The same figure everywhere it appears (issue #54): on every fixture
//! trace, each headline figure of `summary --json` is the one `summary`
//! prints as text, `--format md` and `--format csv` carry, and the
//! explorer's Summary pane shows. The text and the screen are read back
//! as a user reads them (the number after its label, to the digits shown),
//! so a figure rounded, scaled or taken from another source in one of them
//! fails here. (Parquet's summary row is checked against the JSON in
//! src/cli/parquet_tests.rs.)

mod common;

use std::ffi::OsString;
use std::path::PathBuf;

use common::{screen, theme};
use libreyolo_core::cli::{Command, Parsed, ProfileCommand, parse, run_reader};
use libreyolo_ui::app::App;
use serde_json::Value;

/// `libreyolo profile ARGS…` as the binary runs it: its stdout.
fn cli(args: &[&str]) -> String {
    let all: Vec<OsString> =
        ["libreyolo", "profile"].iter().chain(args).map(OsString::from).collect();
    match parse(&all).unwrap() {
        Some(Parsed { command: Command::Profile(ProfileCommand::Reader(r)), read }) => {
            run_reader(&r, &read).unwrap_or_else(|e| panic!("{args:?}: {e}"))
        }
        other => panic!("{args:?} is no reader: {other:?}"),
    }
}

/// Every trace of the fixtures, by name.
fn traces() -> Vec<PathBuf> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces"));
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Where a figure is printed: right after a label, or right before a unit.
#[derive(Clone, Copy)]
enum At {
    After(&'static str),
    /// After the key, followed by the unit: `step 1.97 ms`, not the
    /// `step 1 took …` of a finding on inferred steps.
    AfterWith(&'static str, &'static str),
    Before(&'static str),
}

/// The figure `at` finds, the first place it is a number, with how many
/// decimals it was printed with and whether a `%` follows (a percentage).
fn find(text: &str, at: At) -> Option<(f64, i32, bool)> {
    let number = |n: &str| n.chars().all(|c| c.is_ascii_digit() || c == '.') && !n.is_empty();
    for line in text.lines() {
        let (key, after, unit) = match at {
            At::After(k) => (k, true, ""),
            At::AfterWith(k, u) => (k, true, u),
            At::Before(k) => (k, false, ""),
        };
        for (i, _) in line.match_indices(key) {
            let n: String = if after {
                line[i + key.len()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect()
            } else {
                let before: Vec<char> = line[..i]
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                before.into_iter().rev().collect()
            };
            let follows = |u: &str| line[i + key.len()..].trim_start()[n.len()..].starts_with(u);
            if !number(&n) || !(unit.is_empty() || follows(unit)) {
                continue;
            }
            let decimals = n.split_once('.').map_or(0, |(_, d)| d.len() as i32);
            let pct = after && line[i + key.len()..].trim_start()[n.len()..].starts_with('%');
            return Some((n.parse().ok()?, decimals, pct));
        }
    }
    None
}

/// The figure `at` finds in `text` is `value` to the digits shown (a
/// percentage is a 0–1 fraction times 100).
fn shows(text: &str, at: At, value: f64, what: &str) {
    let (shown, decimals, pct) = find(text, at).unwrap_or_else(|| panic!("{what}: not in\n{text}"));
    let value = if pct { value * 100.0 } else { value };
    assert!(
        (shown - value).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-9,
        "{what}: {shown} shown, the JSON has {value}"
    );
}

/// A CSV line's fields (quoted fields may hold commas and `""`).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A figure's JSON value by its dotted path (`idle.ms_per_step`).
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

#[test]
fn headline_figures_agree_in_text_json_md_csv_and_the_explorer() {
    // Each figure, and where the text and the pane print it.
    use At::{After, AfterWith, Before};
    const FIGURES: &[(&str, At, At)] = &[
        ("step_ms", After("|  step "), AfterWith("step ", " ms")),
        ("gpu_util", After("GPU util "), After("GPU util ")),
        ("gpu_busy_ms_per_step", Before(" ms busy)"), Before(" ms busy)")),
        ("host_overhead_ms_per_step", After("host overhead "), After("host overhead ")),
        ("memcpy_ms_per_step", After("memcpy "), After("memcpy ")),
        ("launches_per_step", Before(" kernel launches/step"), After("launches/step ")),
        ("kernels_per_step", Before(" kernels/step"), After("kernels/step ")),
    ];
    let (mut checked, mut recorded) = (0, 0);
    for path in traces() {
        let p = path.to_str().unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let json: Value = serde_json::from_str(&cli(&["summary", p, "--json"])).unwrap();
        let text = cli(&["summary", p]);
        let md = cli(&["summary", p, "--format", "md"]);
        let csv = cli(&["summary", p, "--format", "csv"]);
        let mut csv_lines = csv.lines();
        let head = csv_fields(csv_lines.next().unwrap());
        let row = csv_fields(csv_lines.next().unwrap());
        let mut app = App::with_inputs(
            theme(),
            libreyolo_core::input::load(p, Default::default()).unwrap().input,
            None,
        );
        let pane = screen(&mut app, 160, 60);

        for (field, text_at, pane_at) in FIGURES {
            let v = at(&json, field).as_f64().unwrap_or_else(|| panic!("{name}: {field}"));
            let what = format!("{name} {field}");
            // md/csv: the JSON's own digits.
            let i = head.iter().position(|h| h == field).unwrap_or_else(|| panic!("{what}: csv"));
            assert_eq!(row[i].parse::<f64>().unwrap(), v, "{what}: csv");
            let md_row = md
                .lines()
                .find(|l| l.starts_with(&format!("| `{field}` ")))
                .unwrap_or_else(|| panic!("{what}: md\n{md}"));
            let md_value = md_row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
            assert_eq!(md_value.parse::<f64>().unwrap(), v, "{what}: md");
            // Text and screen: as printed.
            shows(&text, *text_at, v, &format!("{what}: text"));
            shows(&pane, *pane_at, v, &format!("{what}: explorer"));
            checked += 1;
        }
        // The launches the trace recorded, where it lacks some.
        if let Some(r) = at(&json, "launches_recorded_per_step").as_f64() {
            let what = format!("{name} launches_recorded_per_step");
            shows(&text, Before(" of them recorded in the trace"), r, &format!("{what}: text"));
            shows(&pane, Before(" recorded)"), r, &format!("{what}: explorer"));
            let i = head.iter().position(|h| h == "launches_recorded_per_step").unwrap();
            assert_eq!(row[i].parse::<f64>().unwrap(), r, "{what}: csv");
            recorded += 1;
        }
        // The idle account's total, in the text's `idle` line and the JSON.
        if let Some(idle) = at(&json, "idle.ms_per_step").as_f64() {
            shows(&text, After("idle "), idle, &format!("{name} idle: text"));
            let i = head.iter().position(|h| h == "idle.ms_per_step").unwrap();
            assert_eq!(row[i].parse::<f64>().unwrap(), idle, "{name} idle: csv");
        }
    }
    assert!(checked >= 7 * 20, "{checked} figures checked");
    assert!(recorded >= 2, "the Qwen traces lack launch calls: {recorded} checked");
}

/// A printed lever carries the figures it rests on (issue #52): on every
/// fixture trace, each of the first three levers of `summary --json` is
/// printed by `summary` with its saving (to the digits shown) and its
/// whole evidence, the Markdown table has its row with the evidence, and
/// the explorer's Summary pane shows it with its saving.
#[test]
fn each_printed_lever_carries_its_saving_and_evidence_everywhere() {
    let mut checked = 0;
    for path in traces() {
        let p = path.to_str().unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let json: Value = serde_json::from_str(&cli(&["summary", p, "--json"])).unwrap();
        let Some(levers) = json["levers"].as_array().filter(|l| !l.is_empty()) else { continue };
        let text = cli(&["summary", p]);
        let md = cli(&["summary", p, "--format", "md"]);
        let mut app = App::with_inputs(
            theme(),
            libreyolo_core::input::load(p, Default::default()).unwrap().input,
            None,
        );
        let pane = screen(&mut app, 200, 80);
        for l in levers.iter().take(3) {
            let (lever, evidence) = (l["lever"].as_str().unwrap(), l["evidence"].as_str().unwrap());
            let saves = l["saved_ms_per_step"].as_f64().unwrap();
            let what = format!("{name} {lever}");
            assert!(!evidence.is_empty(), "{what}: a lever without evidence");
            let line = text
                .lines()
                .find(|s| s.trim_start().starts_with(&format!("{lever} ")))
                .unwrap_or_else(|| panic!("{what}: no line in\n{text}"));
            assert!(line.ends_with(evidence), "{what}: the text line lacks its evidence: {line}");
            shows(line, At::After("−"), saves, &format!("{what}: text"));
            let row = md
                .lines()
                .find(|s| s.starts_with(&format!("| {lever} ")))
                .unwrap_or_else(|| panic!("{what}: no md row"));
            // (A table cell escapes `|`.)
            let cell = evidence.replace('|', "\\|");
            assert!(row.contains(&cell), "{what}: the md row lacks its evidence: {row}");
            let shown = pane
                .lines()
                .find(|s| s.trim_start().starts_with(&format!("{lever} ")))
                .unwrap_or_else(|| panic!("{what}: not on the Summary pane\n{pane}"));
            shows(shown, At::After("−"), saves, &format!("{what}: explorer"));
            checked += 1;
        }
        // Beyond the third, the text says how many more (all in --json).
        if levers.len() > 3 {
            assert!(text.contains(&format!("; {} more", levers.len() - 3)), "{name}");
        }
    }
    assert!(checked >= 10, "{checked} levers checked");
}
