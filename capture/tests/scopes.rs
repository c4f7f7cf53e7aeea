//! Module scopes in real captures (libtorch, YOLOv9-t, Kineto; no mocks):
//! inside each `step/forward` the groups `backbone`, `neck` and `head`
//! follow one another, every `model.N Class` layer range lies in its group,
//! and every CPU op of the forward lies in exactly one layer range. All of
//! it is read from the trace's raw events here, not through the analysis.
//! `--no-module-scopes` leaves the scopes out.

mod common;

use std::path::Path;

use libreyolo_core::cli::ProfileCommand;
use serde_json::Value;

/// YOLOv9-t's layer ranges, in forward order.
const LAYERS_T: [&str; 23] = [
    "model.0 Conv",
    "model.1 Conv",
    "model.2 ELAN",
    "model.3 AConv",
    "model.4 RepNCSPELAN",
    "model.5 AConv",
    "model.6 RepNCSPELAN",
    "model.7 AConv",
    "model.8 RepNCSPELAN",
    "model.9 SPPELAN",
    "model.10 Upsample",
    "model.11 Concat",
    "model.12 RepNCSPELAN",
    "model.13 Upsample",
    "model.14 Concat",
    "model.15 RepNCSPELAN",
    "model.16 AConv",
    "model.17 Concat",
    "model.18 RepNCSPELAN",
    "model.19 AConv",
    "model.20 Concat",
    "model.21 RepNCSPELAN",
    "model.22 DDetect",
];

/// The group of layer `i`: backbone up to SPPELAN, the FPN/PAN neck, the head.
fn group_of(i: usize) -> &'static str {
    match i {
        0..=9 => "backbone",
        10..=21 => "neck",
        _ => "head",
    }
}

/// One complete event (`ph: X`) of the trace.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    cat: String,
    /// `pid/tid`.
    thread: String,
    start: i64,
    end: i64,
}

impl Span {
    /// Whether `self` lies within `outer` on the same thread.
    fn inside(&self, outer: &Span) -> bool {
        self.thread == outer.thread && outer.start <= self.start && self.end <= outer.end
    }
    fn is_range(&self) -> bool {
        self.cat == "user_annotation"
    }
}

/// A trace time in µs as integer ns, from its decimal text (Kineto writes
/// at most three decimals), so that containment is decided exactly, not
/// through f64 arithmetic on epoch microseconds.
fn ns(v: &Value) -> i64 {
    let text = v.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    assert!(frac.len() <= 3 && !text.contains(['e', 'E', '-']), "a time of {text} µs");
    int.parse::<i64>().unwrap() * 1000 + format!("{frac:0<3}").parse::<i64>().unwrap()
}

/// The trace's complete events.
fn spans(trace: &Path) -> Vec<Span> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let start = ns(&e["ts"]);
            Span {
                name: e["name"].as_str().unwrap_or_default().to_string(),
                cat: e["cat"].as_str().unwrap_or_default().to_string(),
                thread: format!("{}/{}", e["pid"], e["tid"]),
                start,
                end: start + ns(&e["dur"]),
            }
        })
        .collect()
}

/// The `step/forward` ranges that lie in a `ProfilerStep#N`.
fn forwards(all: &[Span]) -> Vec<&Span> {
    let steps: Vec<&Span> =
        all.iter().filter(|s| s.is_range() && s.name.starts_with("ProfilerStep#")).collect();
    all.iter()
        .filter(|s| s.is_range() && s.name == "step/forward")
        .filter(|f| steps.iter().any(|st| f.inside(st)))
        .collect()
}

/// The user ranges inside `outer` whose name `keep` accepts, in time order.
fn ranges_in<'a>(all: &'a [Span], outer: &Span, keep: impl Fn(&str) -> bool) -> Vec<&'a Span> {
    let mut v: Vec<&Span> = all
        .iter()
        .filter(|s| s.is_range() && keep(&s.name) && s.inside(outer) && !std::ptr::eq(*s, outer))
        .collect();
    v.sort_by_key(|s| (s.start, -s.end));
    v
}

/// Each range ends before the next one starts.
fn assert_in_sequence(v: &[&Span], what: &str) {
    for w in v.windows(2) {
        assert!(w[0].end <= w[1].start, "{what}: {} overlaps {}", w[0].name, w[1].name);
    }
}

/// Checks one forward's groups and layers; returns its layer ranges.
fn check_groups_and_layers<'a>(all: &'a [Span], f: &Span, groups: &[&str]) -> Vec<&'a Span> {
    let is_group = |n: &str| ["backbone", "neck", "head", "aux"].contains(&n);
    let found = ranges_in(all, f, is_group);
    let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, groups, "the groups of the forward at {} ns", f.start);
    assert_in_sequence(&found, "groups");

    let layers = ranges_in(all, f, |n| n.starts_with("model."));
    let names: Vec<&str> = layers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, LAYERS_T, "the layers of the forward at {} ns", f.start);
    assert_in_sequence(&layers, "layers");
    for (i, layer) in layers.iter().enumerate() {
        let group = found.iter().find(|g| g.name == group_of(i)).unwrap();
        assert!(layer.inside(group), "{} lies outside {}", layer.name, group.name);
    }
    layers
}

/// Runs `profile infer ARGS` in this process.
fn infer(args: &str) {
    let _turn = common::turn();
    let ProfileCommand::Infer(a) = common::command("infer", &common::words(args)) else {
        unreachable!()
    };
    libreyolo_capture::infer(&a).unwrap();
}

fn config(profile: &Path) -> Value {
    let p: Value = serde_json::from_str(&std::fs::read_to_string(profile).unwrap()).unwrap();
    p["config"].clone()
}

const RUNS: usize = 4;

#[test]
fn every_op_of_the_inference_forward_lies_in_one_layer_range() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    infer(&format!(
        "--device cpu --imgsz 320 --warmup 1 --runs {RUNS} --weights no-such-weights.pt --project {project}"
    ));
    let infer_dir = dir.path().join("infer");
    assert_eq!(config(&infer_dir.join("profile.json"))["module_scopes"], true);
    let all = spans(&infer_dir.join("profile_trace.json"));
    let forwards = forwards(&all);
    assert_eq!(forwards.len(), RUNS, "one step/forward per measured run");

    for f in forwards {
        let layers = check_groups_and_layers(&all, f, &["backbone", "neck", "head"]);
        let ops: Vec<&Span> = all.iter().filter(|s| s.cat == "cpu_op" && s.inside(f)).collect();
        assert!(ops.len() > 1000, "only {} CPU ops in the forward", ops.len());
        let mut outside = Vec::new();
        for op in &ops {
            let enclosing: Vec<&str> =
                layers.iter().filter(|l| op.inside(l)).map(|l| l.name.as_str()).collect();
            if enclosing.len() != 1 {
                outside.push(format!("{} at {} ns in {enclosing:?}", op.name, op.start));
            }
        }
        assert!(
            outside.is_empty(),
            "{} of {} ops not in exactly one layer range, first: {:?}",
            outside.len(),
            ops.len(),
            &outside[..outside.len().min(5)]
        );
        // Where a few ops fall: convolutions in every layer but the neck's
        // upsamples and concats, the box decoding inside DDetect (as
        // LibreYOLO's eval-mode head decodes).
        let layers_with = |op: &str| -> Vec<&str> {
            layers
                .iter()
                .filter(|l| ops.iter().any(|o| o.name == op && o.inside(l)))
                .map(|l| l.name.as_str())
                .collect()
        };
        let convolving: Vec<&str> = LAYERS_T
            .into_iter()
            .filter(|n| !n.ends_with(" Upsample") && !n.ends_with(" Concat"))
            .collect();
        assert_eq!(layers_with("aten::conv2d"), convolving);
        assert_eq!(
            layers_with("aten::upsample_nearest2d"),
            ["model.10 Upsample", "model.13 Upsample"]
        );
        assert_eq!(layers_with("aten::sigmoid"), ["model.22 DDetect"]);
        assert_eq!(layers_with("aten::softmax"), ["model.22 DDetect"]);
    }
}

#[test]
fn no_module_scopes_leaves_only_the_steps_and_phases() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    infer(&format!(
        "--device cpu --imgsz 64 --warmup 1 --runs 2 --no-module-scopes --weights no-such-weights.pt --project {project}"
    ));
    let infer_dir = dir.path().join("infer");
    assert_eq!(config(&infer_dir.join("profile.json"))["module_scopes"], false);
    let all = spans(&infer_dir.join("profile_trace.json"));
    let others: Vec<&str> = all
        .iter()
        .filter(|s| s.is_range())
        .map(|s| s.name.as_str())
        .filter(|n| !n.starts_with("ProfilerStep#") && !n.starts_with("step/"))
        .collect();
    assert!(others.is_empty(), "ranges left: {others:?}");
    assert!(all.iter().any(|s| s.cat == "cpu_op" && s.name == "aten::conv2d"));
}

/// The training forward records the same layers and groups, then the PGI
/// branch's `aux` group; the loss after them is outside every scope.
#[test]
fn the_training_forward_records_the_layers_and_the_aux_branch() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    let ProfileCommand::Run(a) = common::command(
        "run",
        &common::words(&format!(
            "synthetic:8 --device cpu --batch 2 --imgsz 64 --warmup 1 --steps 2 --workers 1 --weights no-such-weights.pt --project {project}"
        )),
    ) else {
        unreachable!()
    };
    {
        let _turn = common::turn();
        libreyolo_capture::train::run(&a).unwrap();
    }
    let train_dir = dir.path().join("train");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(train_dir.join("profile_summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["meta"]["module_scopes"], true, "{summary}");
    let all = spans(&train_dir.join("profile_trace.json"));
    let forwards = forwards(&all);
    assert_eq!(forwards.len(), 2);
    for f in forwards {
        let layers = check_groups_and_layers(&all, f, &["backbone", "neck", "head", "aux"]);
        let aux = ranges_in(&all, f, |n| n == "aux")[0];
        let aux_modules: Vec<&Span> = ranges_in(&all, aux, |n| n.starts_with("aux"));
        let names: Vec<&str> = aux_modules.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["aux AuxNeck", "aux_head DDetect"]);
        // Every op inside a group lies in exactly one module range.
        let modules: Vec<&Span> = layers.iter().chain(&aux_modules).copied().collect();
        let groups = ranges_in(&all, f, |n| ["backbone", "neck", "head", "aux"].contains(&n));
        for op in all.iter().filter(|s| s.cat == "cpu_op" && groups.iter().any(|g| s.inside(g))) {
            let n = modules.iter().filter(|m| op.inside(m)).count();
            assert_eq!(n, 1, "{} at {} ns lies in {n} module ranges", op.name, op.start);
        }
        // The loss follows the model: its ops are in step/forward, after aux.
        assert!(
            all.iter().any(|s| s.cat == "cpu_op" && s.inside(f) && s.start >= aux.end),
            "no loss ops after the model"
        );
    }
    // The profile's call tree puts the backward ops under the scopes of
    // the forward ops they differentiate (docs/analysis.md §17): most of
    // the backward's host time is under the four groups.
    let profile: Value =
        serde_json::from_str(&std::fs::read_to_string(train_dir.join("profile.json")).unwrap())
            .unwrap();
    let nodes = profile["call_tree"]["nodes"].as_array().expect("a call tree");
    let backward = nodes
        .iter()
        .position(|n| n["kind"] == "phase" && n["name"] == "backward")
        .expect("a backward phase");
    let ms = |n: &Value| n["cpu_ms_per_step"].as_f64().unwrap_or(0.0);
    let under_groups: f64 = nodes
        .iter()
        .filter(|n| n["parent"].as_u64() == Some(backward as u64))
        .filter(|n| n["kind"] == "annotation")
        .filter(|n| ["backbone", "neck", "head", "aux"].contains(&n["name"].as_str().unwrap()))
        .map(ms)
        .sum();
    let all_backward = ms(&nodes[backward]);
    assert!(
        under_groups > 0.5 * all_backward,
        "{under_groups} of {all_backward} ms/step of backward under the model's groups"
    );
    // And a layer's backward sits under its group.
    let layer = |name: &str| {
        nodes.iter().any(|n| {
            n["name"] == name
                && n["parent"].as_u64().is_some_and(|p| {
                    let g = &nodes[p as usize];
                    g["name"] == "backbone" && g["parent"].as_u64() == Some(backward as u64)
                })
        })
    };
    assert!(layer("model.4 RepNCSPELAN"), "model.4's backward under backbone");

    // `profile modules`: each group's forward and backward side by side,
    // the backward side the backward phase's time under that group.
    let p: libreyolo_core::profile::Profile = serde_json::from_value(profile.clone()).unwrap();
    let q = libreyolo_core::lens::modules::ModulesQuery { min_pct: 0.0, ..Default::default() };
    let m = libreyolo_core::lens::modules::modules(&p, &q).expect("modules of a YOLO capture");
    for group in ["backbone", "neck", "head"] {
        let row = m.rows.iter().find(|r| r.depth == 0 && r.name == group).expect(group);
        let under = nodes
            .iter()
            .filter(|n| n["parent"].as_u64() == Some(backward as u64) && n["name"] == group)
            .map(ms)
            .sum::<f64>();
        assert!(row.forward_cpu_ms_per_step > 0.0, "{row:?}");
        assert!((row.backward_cpu_ms_per_step - under).abs() < 1e-3, "{row:?} vs {under}");
        assert!(row.calls_per_step >= 1.0, "{row:?}");
    }
}

/// Each unfused RepConvN's 1×1 branch and sums are a range
/// (`RepConvN 1x1 branch`, inside a layer range) holding one convolution,
/// one BatchNorm and the two adds; the fused graph records none, and runs
/// exactly one convolution fewer per range: what `--fuse` removes besides
/// the BatchNorms, read from the two captures' raw events.
#[test]
fn the_repconv_branch_ranges_hold_what_fuse_removes() {
    const BRANCH: &str = "RepConvN 1x1 branch";
    let dir = tempfile::tempdir().unwrap();
    let capture = |fuse: &str| -> Vec<Span> {
        let project = dir.path().join(if fuse.is_empty() { "unfused" } else { "fused" });
        infer(&format!(
            "--device cpu --imgsz 64 --warmup 1 --runs 2 {fuse} --weights no-such-weights.pt --project {}",
            project.display()
        ));
        spans(&project.join("infer/profile_trace.json"))
    };
    let (unfused, fused) = (capture(""), capture("--fuse"));
    let count = |all: &[Span], f: &Span, op: &str| {
        all.iter().filter(|s| s.cat == "cpu_op" && s.name == op && s.inside(f)).count()
    };
    let (uf, ff) = (forwards(&unfused)[0], forwards(&fused)[0]);
    let branches = ranges_in(&unfused, uf, |n| n == BRANCH);
    let layers = ranges_in(&unfused, uf, |n| n.starts_with("model."));
    assert!(branches.len() >= 20, "{} branch ranges", branches.len());
    for b in &branches {
        assert_eq!(layers.iter().filter(|l| b.inside(l)).count(), 1, "in one layer");
        let ops = |op: &str| count(&unfused, b, op);
        assert_eq!(
            (ops("aten::conv2d"), ops("aten::batch_norm"), ops("aten::add")),
            (1, 1, 2),
            "a branch at {} ns",
            b.start
        );
    }
    assert!(ranges_in(&fused, ff, |n| n == BRANCH).is_empty(), "the fused graph has none");
    assert_eq!(
        count(&unfused, uf, "aten::conv2d") - count(&fused, ff, "aten::conv2d"),
        branches.len(),
        "one convolution fewer per branch"
    );
    assert_eq!(count(&fused, ff, "aten::batch_norm"), 0);
    // The unfused profile's verdict names the branches it counted and the
    // what-if that takes them away (one image a forward here).
    let why = |side: &str| -> String {
        let p = dir.path().join(side).join("infer/profile.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["bound_why"].as_str().unwrap_or_default().to_string()
    };
    let unfused_why = why("unfused");
    assert!(
        unfused_why.contains("Lever: `--fuse` folds 221 BatchNorm launches per image"),
        "{unfused_why}"
    );
    let said = format!("merges {} RepConvN 1×1 branches", branches.len());
    assert!(unfused_why.contains(&said), "{unfused_why}");
    assert!(!why("fused").contains("RepConvN"));
}
