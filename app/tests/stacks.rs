//! `tree --format folded|svg` on real traces: the stacks through each frame
//! sum to the tree's own figure for that node (`tree --json`, same flags),
//! and their GPU total is the kernel time the raw trace records in the
//! steps, derived here from the events as `tests/tree.rs` derives it.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::{run, truth};
use serde_json::Value;

fn trace(folder: &str) -> PathBuf {
    common::first_trace(folder)
}

fn timesformer() -> PathBuf {
    trace("tracelens_h100_timesformer")
}

/// `libreyolo profile <args>`: exit 0, stdout.
fn out(args: &[&str]) -> String {
    common::profile_out(args)
}

/// The folded lines: (frames, ns per step). Each line is `a;b;c N`, N an
/// integer, no frame empty.
fn folded(args: &[&str]) -> Vec<(Vec<String>, u64)> {
    let text = out(args);
    text.lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap_or_else(|| panic!("no weight: {l:?}"));
            let n: u64 = n.parse().unwrap_or_else(|_| panic!("weight not an integer: {l:?}"));
            assert!(n > 0, "a zero-weight line: {l:?}");
            let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
            assert!(frames.iter().all(|f| !f.is_empty()), "{l:?}");
            (frames, n)
        })
        .collect()
}

/// Each path prefix's total (ms per step): what a flame graph draws as the
/// width of that frame.
fn frame_totals(lines: &[(Vec<String>, u64)]) -> HashMap<Vec<String>, f64> {
    let mut totals: HashMap<Vec<String>, f64> = HashMap::new();
    for (frames, n) in lines {
        for k in 1..=frames.len() {
            *totals.entry(frames[..k].to_vec()).or_default() += *n as f64 / 1e6;
        }
    }
    totals
}

/// The rows of `tree --json` with each row's path of names from its root.
fn tree_paths(args: &[&str]) -> (Value, Vec<(Vec<String>, Value)>) {
    let doc = common::json(args);
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for r in doc["rows"].as_array().unwrap() {
        let depth = r["depth"].as_u64().unwrap() as usize;
        stack.truncate(depth);
        stack.push(r["name"].as_str().unwrap().to_string());
        out.push((stack.clone(), r.clone()));
    }
    (doc, out)
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// Every shown row's figure is its frame's width, to the profile's
/// rounding (0.1 µs a figure: at most half of it for each node below); the
/// lines' total is the tree's. Returns the total (ms per step).
fn frames_are_the_rows(tree_args: &[&str], weight: &str) -> f64 {
    let key = if weight == "gpu" { "gpu_ms_per_step" } else { "cpu_ms_per_step" };
    let mut args = tree_args.to_vec();
    args.extend(["--format", "folded", "--weight", weight]);
    let lines = folded(&args);
    let totals = frame_totals(&lines);
    let (doc, rows) = tree_paths(tree_args);
    // Rows of one path (a name under one parent twice, as two kinds) are one frame.
    let mut want: HashMap<Vec<String>, (f64, usize)> = HashMap::new();
    for (path, r) in &rows {
        let w = want.entry(path.clone()).or_default();
        w.0 += f(r, key);
        w.1 += 1;
    }
    // How many rows lie at or below each path.
    let mut under: HashMap<&[String], usize> = HashMap::new();
    for (path, _) in &rows {
        for k in 1..=path.len() {
            *under.entry(&path[..k]).or_default() += 1;
        }
    }
    let below = |path: &Vec<String>| under[path.as_slice()];
    let mut checked = 0;
    for (path, (ms, n)) in &want {
        let got = totals.get(path).copied().unwrap_or(0.0);
        let tol = 5e-5 * (below(path) + n) as f64 + 1e-6;
        assert!(
            (got - ms).abs() <= tol,
            "{tree_args:?} {weight}: frame {path:?} is {got} ms wide, the tree says {ms}"
        );
        checked += (*ms > 0.0) as usize;
    }
    assert!(checked >= 2, "{tree_args:?} {weight}: only {checked} rows with weight");
    // No frame the tree does not show, but a root `--min-pct` hides: it
    // has no parent to keep its weight (audit s19 L1).
    let hidden_root = |path: &Vec<String>| path.len() == 1 && !want.contains_key(path);
    for path in totals.keys() {
        assert!(
            want.contains_key(path) || hidden_root(path),
            "{tree_args:?} {weight}: {path:?} is no row"
        );
    }
    let all: f64 = lines.iter().map(|(_, n)| *n as f64).sum::<f64>() / 1e6;
    let hidden: f64 =
        lines.iter().filter(|(p, _)| hidden_root(p)).map(|(_, n)| *n as f64).sum::<f64>() / 1e6;
    let roots: f64 = rows.iter().filter(|(p, _)| p.len() == 1).map(|(_, r)| f(r, key)).sum();
    let tol = 5e-5 * rows.len() as f64 + 1e-6;
    assert!(
        (all - hidden - roots).abs() <= tol,
        "{tree_args:?} {weight}: lines {all} ({hidden} in hidden roots) vs roots {roots}"
    );
    let doc_all = f(&doc, key);
    if !tree_args.contains(&"--focus") {
        // Bottom-up the tree heads with the top-down total; its frames are
        // the nodes' own times, which a few records overlapping their
        // siblings make 0.005% more on TimeSformer (0.020 of 382.508 ms).
        let tol = if tree_args.contains(&"--bottom-up") { tol.max(1e-4 * doc_all) } else { tol };
        assert!((all - doc_all).abs() <= tol, "{tree_args:?}: {all} vs the tree's {doc_all}");
    }
    all
}

#[test]
fn each_frame_is_as_wide_as_the_tree_says_and_the_gpu_total_is_the_kernels() {
    let path = timesformer();
    let p = path.to_str().unwrap();
    // The kernels the raw trace launches inside its steps, per step.
    let t = truth(&path);
    let kernels_ms = t.kernel_us / 1000.0 / t.steps as f64;
    assert!(kernels_ms > 100.0, "{kernels_ms}");
    for by in ["module", "frame", "op"] {
        for bottom_up in [false, true] {
            let mut args = vec!["tree", p, "--by", by, "--min-pct", "0"];
            if bottom_up {
                args.push("--bottom-up");
            }
            let gpu = frames_are_the_rows(&args, "gpu");
            assert!(
                (gpu - kernels_ms).abs() <= 0.01 + 1e-4 * kernels_ms,
                "{args:?}: stacks weigh {gpu} ms of GPU time per step, the trace's kernels {kernels_ms}"
            );
            frames_are_the_rows(&args, "cpu");
        }
    }
}

#[test]
fn hidden_nodes_stay_in_their_parents_frame() {
    // A root --min-pct hides (the A100 trace's 0.07 ms/step dataload phase,
    // under 1% of its CPU time) keeps a line of its own: the lines' total
    // is still the tree's (asserted inside).
    let control = common::fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    frames_are_the_rows(&["tree", control.to_str().unwrap()], "cpu");
    let path = timesformer();
    let p = path.to_str().unwrap();
    let t = truth(&path);
    let kernels_ms = t.kernel_us / 1000.0 / t.steps as f64;
    // The default --min-pct 1 and a --depth: fewer frames, the same total.
    for extra in [&[][..], &["--depth", "2"][..], &["--by", "op", "--depth", "1"][..]] {
        let mut args = vec!["tree", p];
        args.extend_from_slice(extra);
        let all = frames_are_the_rows(&args, "gpu");
        assert!((all - kernels_ms).abs() <= 0.01 + 1e-4 * kernels_ms, "{args:?}: {all}");
        let depth = folded(&[&args[..], &["--format", "folded"]].concat())
            .iter()
            .map(|(fr, _)| fr.len())
            .max()
            .unwrap();
        if let Some(i) = args.iter().position(|a| *a == "--depth") {
            let d: usize = args[i + 1].parse().unwrap();
            assert_eq!(depth, d + 1, "{args:?}: stacks as deep as the rows shown");
        }
    }
    // Of one phase: the phase's own total.
    let resnet = trace("kineto_resnet50_v100_2021jun");
    let r = resnet.to_str().unwrap();
    let phases = common::json(&["phases", r]);
    let fwd = phases["phases"].as_array().unwrap().iter().find(|x| x["phase"] == "forward");
    let fwd_gpu = f(fwd.expect("resnet has a forward phase"), "gpu_ms_per_step");
    let all = frames_are_the_rows(&["tree", r, "--phase", "forward", "--min-pct", "0"], "gpu");
    assert!((all - fwd_gpu).abs() <= 0.01, "forward: stacks {all} vs phases {fwd_gpu}");
    let lines = folded(&["tree", r, "--phase", "forward", "--format", "folded"]);
    assert!(lines.iter().all(|(fr, _)| fr[0] == "forward"), "one phase's stacks");
}

#[test]
fn a_focus_weighs_the_matches_alone() {
    let path = timesformer();
    let p = path.to_str().unwrap();
    let focus = "SoftMaxForward";
    let lines = folded(&[
        "tree",
        p,
        "--by",
        "op",
        "--focus",
        focus,
        "--min-pct",
        "0",
        "--format",
        "folded",
    ]);
    let total: f64 = lines.iter().map(|(_, n)| *n as f64).sum::<f64>() / 1e6;
    // Every stack passes through a match, and weighs only below it.
    for (frames, _) in &lines {
        assert!(frames.iter().any(|f| f.contains(focus)), "{frames:?}");
    }
    // The matches' own time: the kernels by that name.
    let k = common::json(&["kernels", p, "--grep", focus, "--top", "1000"]);
    let want: f64 = k["kernels"].as_array().unwrap().iter().map(|r| f(r, "ms_per_step")).sum();
    assert!(want > 1.0, "{want}");
    assert!((total - want).abs() <= 0.002, "focused stacks {total} vs the kernels {want}");
    // Bottom-up: the same weight, the kernel as the base frame.
    let up = folded(&[
        "tree",
        p,
        "--by",
        "op",
        "--focus",
        focus,
        "--bottom-up",
        "--min-pct",
        "0",
        "--format",
        "folded",
    ]);
    let up_total: f64 = up.iter().map(|(_, n)| *n as f64).sum::<f64>() / 1e6;
    assert!((up_total - want).abs() <= 0.002, "bottom-up {up_total} vs {want}");
    assert!(up.iter().all(|(fr, _)| fr[0].contains(focus)), "{up:?}");
}

#[test]
fn the_svg_is_a_flame_graph_of_the_same_frames() {
    use quick_xml::events::Event;
    let path = timesformer();
    let p = path.to_str().unwrap();
    let svg = out(&["tree", p, "--format", "svg"]);
    let lines = folded(&["tree", p, "--format", "folded"]);
    let totals = frame_totals(&lines);
    // Well-formed XML: every element closed, <svg> the root.
    let mut reader = quick_xml::Reader::from_str(&svg);
    let (mut depth, mut root, mut titles, mut in_title) = (0i64, None, Vec::new(), false);
    loop {
        match reader
            .read_event()
            .unwrap_or_else(|e| panic!("not XML at {}: {e}", reader.buffer_position()))
        {
            Event::Start(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                if depth == 0 {
                    assert!(root.replace(name.clone()).is_none(), "one root element");
                }
                in_title = name == "title";
                depth += 1;
            }
            Event::Empty(_) => {}
            Event::End(_) => {
                depth -= 1;
                in_title = false;
            }
            Event::Text(t) if in_title => titles.push(t.decode().unwrap().into_owned()),
            Event::GeneralRef(r) if in_title => {
                // An entity inside a title (`&lt;`): kept as its character.
                let c = match &*r.decode().unwrap() {
                    "lt" => "<",
                    "gt" => ">",
                    "amp" => "&",
                    "quot" => "\"",
                    _ => "'",
                };
                titles.last_mut().unwrap().push_str(c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "every element closed");
    assert_eq!(root.as_deref(), Some("svg"));
    // Each top frame (the roots and their largest children) drawn, with
    // its width in ns per step as the folded lines give it.
    let (_, rows) = tree_paths(&["tree", p]);
    let top: Vec<&Vec<String>> = rows
        .iter()
        .filter(|(path, r)| path.len() <= 3 && f(r, "gpu_ms_per_step") > 0.0)
        .map(|(path, _)| path)
        .collect();
    assert!(top.len() >= 3, "{top:?}");
    for path in top {
        let name = path.last().unwrap();
        let ns = (totals[path] * 1e6).round() as u64;
        let with_commas = {
            let s = ns.to_string();
            let mut o = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i) % 3 == 0 {
                    o.push(',');
                }
                o.push(c);
            }
            o
        };
        let want = format!("{name} ({with_commas} ns/step");
        assert!(
            titles.iter().any(|t| t.starts_with(&want)),
            "no frame titled {want:?} among {} titles",
            titles.len()
        );
    }
    // The same input draws the same file (colours by name, not at random).
    assert_eq!(out(&["tree", p, "--format", "svg"]), svg);
}

#[test]
fn weights_and_formats_that_do_not_fit_exit_2() {
    let path = timesformer();
    let p = path.to_str().unwrap();
    let fail = |args: &[&str], says: &str| {
        let mut all = vec!["profile"];
        all.extend_from_slice(args);
        let r = run(&all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    };
    for f in [&[][..], &["--json"], &["--format", "md"], &["--format", "csv"]] {
        let args = [&["tree", p, "--weight", "cpu"][..], f].concat();
        fail(&args, "--weight picks what --format folded or --format svg");
    }
    fail(&["tree", p, "--format", "svg", "--json"], "--json means --format json");
    fail(&["tree", p, "--format", "folded", "--weight", "ram"], "possible values: gpu, cpu");
    fail(&["kernels", p, "--format", "folded"], "possible values");
    fail(&["tree", p, "--format", "folded", "--focus", "no such node"], "matches --focus");
    // A CPU run: no GPU time to weigh.
    let cpu = common::fixtures().join("reference/infer_b1/profile_trace.json.gz");
    let c = cpu.to_str().unwrap();
    fail(&["tree", c, "--format", "svg", "--weight", "gpu"], "no GPU time; try --weight cpu");
    // Without --weight it is weighed by CPU time, and says so.
    let r = run(&["profile", "tree", c, "--format", "folded"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("weighted by CPU time"), "{}", r.stderr);
    // The lines' total is the tree's, roots --min-pct hides included.
    let (doc, _) = tree_paths(&["tree", c]);
    let cpu_roots = f(&doc, "cpu_ms_per_step");
    let total: f64 = r
        .stdout
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
        .sum::<f64>()
        / 1e6;
    assert!((total - cpu_roots).abs() <= 1e-3, "{total} vs {cpu_roots}");
}
