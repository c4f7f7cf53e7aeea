//! The Modules pane on real traces — TimeSformer on an H100 (TraceLens,
//! `nn.Module` frames, inference), a DLRM training step on A100s whose
//! scopes are annotations (forward and backward), the CPU training run
//! (annotations only), a trace with neither and the 8 ranks of a DLRM job
//! — whose figures are the `modules` lens's (docs/analysis.md §17),
//! formatted as `profile modules` prints them; the way from a module to
//! its subtree in the Tree pane; the tab bar and help with a pane past `9`.

#[macro_use]
mod common;

use std::path::PathBuf;

use common::*;
use libreyolo_core::lens::modules::{ModuleRow, Modules, ModulesQuery, modules};
use libreyolo_core::profile::NodeKind;
use libreyolo_core::render::text::num;
use libreyolo_ui::app::{App, Pane};
use libreyolo_ui::job::OpenJob;
use libreyolo_ui::panes::exactly;
use libreyolo_ui::panes::modules::{ModulesSort, name_of};

/// A DLRM training step on A100s (HTA's trace-diff control): forward and
/// backward under `record_function` annotations, no `nn.Module` frames.
const CONTROL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/hta_trace_diff_a100_2022/control.json.gz"
);
/// A ResNet-50 trace without modules or annotations in its steps.
const RESNET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz"
);
const DLRM: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/param_dlrm_v100_8rank");

/// The app on the Modules pane: Tab after Tree (no number key).
fn modules_app(path: &'static str) -> App {
    let mut a = app(path, None);
    press(&mut a, "9\t");
    assert_eq!(a.pane, Pane::Modules);
    a
}

fn lens(a: &App, q: &ModulesQuery) -> Modules {
    modules(a.profile().unwrap(), q).unwrap()
}

/// The rows on screen, in the pane's order.
fn shown(a: &App) -> Vec<ModuleRow> {
    let p = &a.panes.modules;
    let rows = &p.result.as_ref().unwrap().rows;
    p.order.iter().map(|i| rows[*i].clone()).collect()
}

/// A row as `profile modules` formats its figures, then its name as the
/// pane shows it: GPU (or CPU) ms, share, forward and backward ms, calls,
/// and the TFLOP/s columns asked for.
/// `other`: the row's GPU time in the loop's other phases (optimizer,
/// dataload, …), where the pane shows that column.
fn tokens(r: &ModuleRow, cpu: bool, tf: (bool, bool), other: Option<f64>) -> Vec<String> {
    let (all, share, fwd, bwd) = if cpu {
        (r.cpu_ms_per_step, r.pct_of_cpu, r.forward_cpu_ms_per_step, r.backward_cpu_ms_per_step)
    } else {
        (r.gpu_ms_per_step, r.pct_of_gpu, r.forward_gpu_ms_per_step, r.backward_gpu_ms_per_step)
    };
    let calls = if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".into() };
    let mut t =
        vec![format!("{all:.3}"), format!("{share:.1}"), format!("{fwd:.3}"), format!("{bwd:.3}")];
    t.push(calls);
    let rate = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    if tf.0 {
        t.push(rate(r.forward_tflops));
    }
    if tf.1 {
        t.push(rate(r.backward_tflops));
    }
    t.extend(other.map(|o| format!("{o:.3}")));
    t.extend(name_of(r).split_whitespace().map(String::from));
    t
}

/// Each row's parent in a list of rows in depth-first order.
fn parents(rows: &[ModuleRow]) -> Vec<Option<String>> {
    let mut stack: Vec<&str> = Vec::new();
    rows.iter()
        .map(|r| {
            stack.truncate(r.depth);
            let p = stack.last().map(|s| s.to_string());
            stack.push(&r.name);
            p
        })
        .collect()
}

#[test]
fn the_modules_on_screen_are_the_lens() {
    let mut a = modules_app(TIMESFORMER);
    let m = lens(&a, &ModulesQuery::default());
    assert_eq!(a.panes.modules.result.as_ref(), Some(&m), "the pane holds the lens result");
    assert_eq!(shown(&a), m.rows, "at first in the lens's order");
    assert!(m.rows.len() >= 20 && m.rows[0].kind == NodeKind::Module, "{:?}", m.rows[0]);
    // Inference: no backward, so no backward TFLOP/s column.
    assert!(m.rows.iter().all(|r| r.backward_tflops.is_none() && r.forward_tflops.is_some()));

    let s = snap!("timesformer_modules", &mut a);
    let cli = libreyolo_core::render::text::modules(&m);
    for (screen, (w, _)) in s.iter().zip(SIZES) {
        let head = format!(
            "per step GPU {:.3} ms, {:.3} ms of it in no module",
            m.gpu_ms_per_step, m.outside_ms_per_step
        );
        assert!(screen.lines().nth(1).unwrap().contains(&head), "{screen}");
        let cols: Vec<&str> = screen.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(
            cols,
            ["GPU", "ms", "%gpu", "fwd", "ms", "bwd", "ms", "x/step", "fwd", "TF", "name"]
        );
        // The first rows, one a line under the header: the lens's figures
        // as the CLI prints them (less its empty `bwd TF`).
        let top = screen.lines().nth(2).unwrap().find("name").unwrap();
        for (i, r) in m.rows.iter().take(6).enumerate() {
            let line = screen.lines().nth(3 + i).unwrap();
            let got: Vec<&str> = line.split_whitespace().collect();
            let want = tokens(r, false, (true, false), None);
            assert_eq!(got[..6], want[..6], "row {i}: {line}");
            let printed: Vec<&str> = cli.lines().nth(2 + i).unwrap().split_whitespace().collect();
            assert_eq!(printed[..6], want[..6], "as `profile modules` prints row {i}");
            // The name, indented by depth (cut with `…` where too long).
            let step = if w >= 110 { 2 } else { 1 };
            let name = &line[top..];
            assert_eq!(name.len() - name.trim_start().len(), r.depth * step, "{line}");
            let name = name.trim();
            assert!(name_of(r).starts_with(name.trim_end_matches('…')), "{name} of {r:?}");
            assert!(name == name_of(r) || w < 110, "the whole name at {w} columns: {line}");
        }
        assert!(screen.contains("note: no backward phase in the steps: forward only"), "{screen}");
        let count = format!("{} shown, {} hidden", m.rows.len(), m.hidden);
        assert!(screen.contains(&count), "{count} missing: {screen}");
        assert!(screen.contains("Enter its subtree in Tree"), "{screen}");
    }
}

#[test]
fn forward_and_backward_side_by_side_and_the_sort() {
    let mut a = modules_app(CONTROL);
    let m = lens(&a, &ModulesQuery::default());
    assert!(m.rows.iter().all(|r| r.kind == NodeKind::Annotation), "no modules here");
    let both = m.rows.iter().filter(|r| r.forward_gpu_ms_per_step > 0.0);
    assert!(both.filter(|r| r.backward_gpu_ms_per_step > 0.0).count() >= 3);
    let s = screen(&mut a, 160, 48);
    assert!(s.contains("fwd TF") && s.contains("bwd TF") && !s.contains(" kind "), "{s}");
    assert!(s.contains("note: the trace records no nn.Module frames"), "{s}");
    // `## optimizer ##` holds the optimizer's 1.27 ms: other than forward.
    assert!(m.rows.iter().any(|r| r.other_gpu_ms_per_step > 1.0) && s.contains("other ms"), "{s}");
    for (i, r) in m.rows.iter().take(4).enumerate() {
        let line = s.lines().nth(3 + i).unwrap();
        let got: Vec<&str> = line.split_whitespace().collect();
        // The control trace's optimizer (and dataload) phase: other time.
        let other = Some(r.other_gpu_ms_per_step);
        assert_eq!(got, tokens(r, false, (true, true), other), "{line}");
    }

    // `s`: siblings by forward, then backward time, then the lens's order
    // again; every row under the parent it has in the lens, the cursor on
    // its row.
    let lens_parents = parents(&m.rows);
    let parent_of =
        |r: &ModuleRow| lens_parents[m.rows.iter().position(|x| x == r).unwrap()].clone();
    press(&mut a, "↓↓↓");
    let at = a.panes.modules.selected_row().unwrap().clone();
    type Key = fn(&ModuleRow) -> f64;
    let by: [(ModulesSort, Key); 2] = [
        (ModulesSort::Forward, |r| r.forward_gpu_ms_per_step),
        (ModulesSort::Backward, |r| r.backward_gpu_ms_per_step),
    ];
    for (sort, key) in by {
        press(&mut a, "s");
        assert_eq!(a.panes.modules.sort, sort);
        let v = shown(&a);
        assert_eq!(v.len(), m.rows.len());
        assert_ne!(v, m.rows, "{sort:?} reorders");
        let p = parents(&v);
        for (i, r) in v.iter().enumerate() {
            assert_eq!(p[i], parent_of(r), "{} moved", r.name);
            // The previous sibling costs at least as much.
            let prev = v[..i].iter().rposition(|x| x.depth <= r.depth);
            if let Some(j) = prev.filter(|j| v[*j].depth == r.depth) {
                assert!(key(&v[j]) >= key(r), "{sort:?}: {} before {}", v[j].name, r.name);
            }
        }
        assert_eq!(a.panes.modules.selected_row(), Some(&at), "the cursor stays on its row");
        if sort == ModulesSort::Backward {
            let s = snap!("control_modules_bwd", &mut a);
            assert!(s[1].contains("sort:bwd"), "{}", s[1]);
        }
    }
    press(&mut a, "s");
    assert_eq!((a.panes.modules.sort, shown(&a)), (ModulesSort::Total, m.rows.clone()));
}

#[test]
fn enter_shows_the_module_in_the_tree() {
    let mut a = modules_app(TIMESFORMER);
    press(&mut a, "↓↓↓");
    let r = a.panes.modules.selected_row().unwrap().clone();
    assert_eq!((r.kind, r.depth), (NodeKind::Module, 3), "{r:?}");
    press(&mut a, "\n");
    assert_eq!(a.pane, Pane::Tree);
    let t = &a.panes.tree;
    assert!(!t.query.bottom_up && t.query.focus == Some(exactly(&r.name)), "{:?}", t.query);
    let row = t.selected_row().unwrap();
    assert_eq!((row.kind, row.name.as_str()), (NodeKind::Module, r.name.as_str()));
    // Its GPU time is the one the Modules pane showed (one phase here).
    assert_eq!(format!("{:.3}", row.gpu_ms_per_step), format!("{:.3}", r.gpu_ms_per_step));
    // Opened: what runs under it follows.
    let next = t.visible[t.selected + 1];
    assert_eq!(t.result.as_ref().unwrap().rows[next].depth, row.depth + 1);
    // And back: Tab, the cursor where it was.
    press(&mut a, "\t");
    assert_eq!((a.pane, a.panes.modules.selected), (Pane::Modules, 3));
}

#[test]
fn the_focus_keeps_the_paths_through_its_matches() {
    let mut a = modules_app(TIMESFORMER);
    press(&mut a, "/layer_2");
    assert!(screen(&mut a, 80, 24).contains("Modules regex /layer_2"));
    press(&mut a, "\n");
    assert!(a.editor.is_none());
    let q = ModulesQuery { focus: Some("layer_2".into()), ..ModulesQuery::default() };
    let m = lens(&a, &q);
    assert_eq!(a.panes.modules.result.as_ref(), Some(&m));
    assert!(m.rows.len() < lens(&a, &ModulesQuery::default()).rows.len());
    assert!(m.rows.iter().any(|r| r.name.ends_with("TimesformerLayer_2")), "{:?}", m.rows);
    assert!(!m.rows.iter().any(|r| r.name.ends_with("TimesformerLayer_3")), "{:?}", m.rows);
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("/layer_2/"), "{s}");
    // An unfinished regex is refused, the rows stay; Esc restores.
    press(&mut a, "/(");
    assert!(a.panes.modules.error.is_some());
    assert_eq!(a.panes.modules.result.as_ref(), Some(&m));
    press(&mut a, "\x1b");
    assert_eq!(a.panes.modules.query.focus.as_deref(), Some("layer_2"));
    press(&mut a, "x");
    assert_eq!(a.panes.modules.result.as_ref(), Some(&lens(&a, &ModulesQuery::default())));
}

#[test]
fn a_trace_without_module_frames_says_so() {
    // The CPU training run: annotations only, by host time.
    let mut a = modules_app(TRAIN_B4_TRACE);
    let m = lens(&a, &ModulesQuery::default());
    assert_eq!(m.gpu_ms_per_step, 0.0);
    let s = snap!("train_b4_trace_modules", &mut a);
    for screen in &s {
        let head = format!("per step CPU {:.3} ms (no GPU kernels: host time)", m.cpu_ms_per_step);
        assert!(screen.contains(&head), "{screen}");
        assert!(screen.contains("CPU ms") && screen.contains("%cpu"), "{screen}");
        assert!(!screen.contains("GPU ms") && !screen.contains("fwd TF"), "{screen}");
        let line = screen.lines().nth(3).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            tokens(&m.rows[0], true, (false, false), None)
        );
        assert!(
            screen.contains(
                "note: the trace records no nn.Module frames (record with_modules=True or"
            ),
            "{screen}"
        );
    }

    // Neither modules nor annotations: the lens's reason, as the CLI says it.
    for path in [RESNET, TRAIN_B4] {
        let mut a = modules_app(path);
        let why = modules(a.profile().unwrap(), &ModulesQuery::default()).unwrap_err().to_string();
        assert!(a.panes.modules.result.is_none());
        let s = screen(&mut a, 80, 24);
        let first: String = why.chars().take(60).collect();
        assert!(s.contains(&first), "{first} missing: {s}");
        press(&mut a, "s↓\nx");
        assert!(!a.quit && a.pane == Pane::Modules && a.panes.modules.result.is_none());
    }
}

#[test]
fn tab_reaches_it_and_no_number_key_does() {
    let mut a = app(BERT_TRACE, None);
    for k in "0123456789".chars() {
        press(&mut a, &k.to_string());
        assert_ne!(a.pane, Pane::Modules, "{k}");
    }
    press(&mut a, "9\t");
    assert_eq!(a.pane, Pane::Modules);
    press(&mut a, "\t");
    assert_eq!(a.pane, Pane::Summary, "Tab wraps around");
    press(&mut a, "⇤");
    assert_eq!(a.pane, Pane::Modules);
    // Every tab in 80 columns, Modules last without a key.
    let s = screen(&mut a, 80, 24);
    let tabs = s.lines().next().unwrap();
    assert!(tabs.starts_with("1Summary ") && tabs.ends_with(" 9Tree Modules"), "{tabs}");
    press(&mut a, "?");
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("5-9") && s.contains("Tree · Tab: Modules"), "{s}");
}

/// The DLRM job as the explorer reads it.
fn job_app() -> App {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(DLRM).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let job = OpenJob::read(&files, &done, &Default::default()).unwrap();
    App::with_job(theme(), DLRM, job)
}

#[test]
fn a_job_shows_the_shown_ranks_modules() {
    let mut a = job_app();
    // 80 columns hold the tabs of keys 0-9; the rest behind `…`.
    let tabs = screen(&mut a, 80, 24).lines().next().unwrap().to_string();
    assert!(tabs.starts_with("0Ranks ") && tabs.ends_with(" 9Tree…"), "{tabs}");
    press(&mut a, "9\t");
    assert_eq!(a.pane, Pane::Modules);
    let tabs = screen(&mut a, 80, 24).lines().next().unwrap().to_string();
    assert!(tabs.starts_with('…') && tabs.ends_with(" 9Tree Modules"), "{tabs}");
    assert!(!tabs.contains("0Ranks"), "{tabs}");

    let first = a.job.as_ref().unwrap().shown;
    assert_eq!(a.panes.modules.result.as_ref(), Some(&lens(&a, &ModulesQuery::default())));
    press(&mut a, "↓");
    let at = a.panes.modules.selected_row().unwrap().name.clone();
    // Another rank: its own modules, the cursor on the same module.
    let other = (first + 1) % 8;
    a.show_rank(other);
    let m = lens(&a, &ModulesQuery::default());
    assert_eq!(a.panes.modules.result.as_ref(), Some(&m));
    assert_eq!(a.panes.modules.selected_row().unwrap().name, at);
    let s = screen(&mut a, 80, 24);
    let rank = format!("rank {} of 8", a.job.as_ref().unwrap().shown_rank());
    let head = format!("per step GPU {:.3} ms", m.gpu_ms_per_step);
    assert!(s.contains(&head) && s.contains(&rank), "{s}");
}
