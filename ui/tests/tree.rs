//! The Tree pane on real traces — TimeSformer on an H100 (TraceLens,
//! recorded with `with_stack`: modules, Python frames, ops, kernels) and
//! the CPU training run — whose figures are the `tree` lens's
//! (docs/analysis.md §17); the ways between it and the Kernels and Ops
//! panes; the callers in a kernel's details.

#[macro_use]
mod common;

use std::collections::HashSet;

use common::*;
use libreyolo_core::lens::tree::{By, TreeQuery, TreeRow, tree};
use libreyolo_core::profile::NodeKind;
use libreyolo_ui::app::{App, Pane};
use libreyolo_ui::panes::exactly;
use libreyolo_ui::panes::tree::{MIN_PCT, callers, name_of};

fn tree_app(path: &'static str) -> App {
    let mut a = app(path, None);
    press(&mut a, "9");
    assert_eq!(a.pane, Pane::Tree);
    a
}

/// The rows on screen, top to bottom.
fn visible(a: &App) -> Vec<TreeRow> {
    let t = &a.panes.tree;
    let rows = &t.result.as_ref().unwrap().rows;
    t.visible.iter().map(|i| rows[*i].clone()).collect()
}

/// Moves the cursor onto the first visible row that `pick` accepts.
fn select(a: &mut App, pick: impl Fn(&TreeRow) -> bool) -> TreeRow {
    let v = visible(a);
    let i = v.iter().position(pick).expect("such a row on screen");
    press(a, "g");
    press(a, &"↓".repeat(i));
    assert_eq!(a.panes.tree.selected, i);
    v[i].clone()
}

#[test]
fn the_tree_on_screen_is_the_lens() {
    let mut a = tree_app(TIMESFORMER);
    let q = TreeQuery { min_pct: MIN_PCT, ..TreeQuery::default() };
    let t = tree(a.profile().unwrap(), &q).unwrap();
    assert_eq!(a.panes.tree.result.as_ref(), Some(&t), "the pane holds the lens result");
    let root = &t.rows[0];
    assert_eq!((root.kind, root.name.as_str()), (NodeKind::Phase, "unphased"));
    assert!(root.gpu_ms_per_step > 150.0, "{root:?}");

    let s = snap!("timesformer_tree", &mut a);
    for screen in &s {
        // The root row: its GPU ms, share and CPU ms as the lens gives them.
        let line = screen.lines().find(|l| l.contains("unphased")).unwrap();
        for v in [
            format!("{:.3}", root.gpu_ms_per_step),
            format!("{:.1}", root.pct_of_gpu),
            format!("{:.3}", root.cpu_ms_per_step),
        ] {
            assert!(line.contains(&v), "{v} missing: {line}");
        }
        assert!(screen.contains("GPU ms") && screen.contains("self ms"), "{screen}");
    }
    // At first the path of the costliest child is open down to a kernel,
    // on the first screen.
    let mut path = vec![0];
    loop {
        let at = *path.last().unwrap();
        let d = t.rows[at].depth;
        let kids = (at + 1..t.rows.len())
            .take_while(|j| t.rows[*j].depth > d)
            .filter(|j| t.rows[*j].depth == d + 1);
        let Some(c) =
            kids.max_by(|x, y| t.rows[*x].gpu_ms_per_step.total_cmp(&t.rows[*y].gpu_ms_per_step))
        else {
            break;
        };
        path.push(c);
    }
    let leaf = &t.rows[*path.last().unwrap()];
    assert_eq!(leaf.kind, NodeKind::Kernel, "{leaf:?}");
    assert!(leaf.name.contains("SoftMaxForward"), "{leaf:?}");
    for i in &path {
        assert!(a.panes.tree.visible.contains(i), "{} is not shown", t.rows[*i].name);
    }
    let leaf_line = s[0].lines().find(|l| l.contains("kernel")).unwrap();
    assert!(leaf_line.contains(&format!("{:.3}", leaf.gpu_ms_per_step)), "{leaf_line}");
    // The status line says the query; the hint line the pane's keys.
    assert!(s[1].contains("by:module top-down sort:gpu"), "{}", s[1]);
    assert!(s[1].contains("c by") && s[1].contains("t bottom-up"), "{}", s[1]);
}

#[test]
fn enter_and_arrows_open_and_close_rows() {
    let mut a = tree_app(TIMESFORMER);
    let first = visible(&a);
    let roots = first.iter().filter(|r| r.depth == 0).count();
    // Enter on the root closes it, and opens it again as it was.
    press(&mut a, "\n");
    assert_eq!(visible(&a).len(), roots);
    press(&mut a, "\n");
    assert_eq!(visible(&a), first);

    // Left closes the row under the cursor, Right opens it; Right on an
    // open row goes to its first child, Left on a closed one to its parent.
    let model = first[1].clone();
    assert_eq!(model.kind, NodeKind::Module);
    press(&mut a, "↓←");
    let closed = visible(&a);
    assert!(closed.len() < first.len());
    assert!(closed.iter().all(|r| r.depth <= 1), "nothing under the closed module");
    assert_eq!(a.panes.tree.selected_row(), Some(&model), "the cursor stays on it");
    press(&mut a, "→");
    assert_eq!(visible(&a), first);
    press(&mut a, "→");
    assert_eq!(a.panes.tree.selected_row(), Some(&first[2]));
    assert_eq!(first[2].depth, 2);
    press(&mut a, "←←");
    assert_eq!(a.panes.tree.selected_row(), Some(&model), "back to the parent");

    // x: the default query and rows again.
    press(&mut a, "ct");
    assert_ne!(visible(&a), first);
    press(&mut a, "x");
    assert_eq!(visible(&a), first);
}

#[test]
fn by_cycles_module_frame_op() {
    let mut a = tree_app(TIMESFORMER);
    let kinds = |a: &App| -> HashSet<NodeKind> {
        a.panes.tree.result.as_ref().unwrap().rows.iter().map(|r| r.kind).collect()
    };
    let k = kinds(&a);
    assert!(k.contains(&NodeKind::Module) && !k.contains(&NodeKind::Frame), "{k:?}");
    press(&mut a, "c");
    assert_eq!(a.panes.tree.query.by, By::Frame);
    let k = kinds(&a);
    assert!(k.contains(&NodeKind::Module) && k.contains(&NodeKind::Frame), "{k:?}");
    // The lens's note of the frames it did not keep is under the table.
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("note: ") && s.contains("Python frames shorter than"), "{s}");
    assert!(s.contains("by:frame"), "{s}");
    press(&mut a, "c");
    assert_eq!(a.panes.tree.query.by, By::Op);
    let k = kinds(&a);
    assert!(!k.contains(&NodeKind::Module) && !k.contains(&NodeKind::Frame), "{k:?}");
    assert!(k.contains(&NodeKind::Op) && k.contains(&NodeKind::Kernel), "{k:?}");
    press(&mut a, "c");
    assert_eq!(a.panes.tree.query.by, By::Module);

    // The CPU training trace has no nn.Module frames: the note says so,
    // and the columns are the CPU's.
    let mut a = tree_app(TRAIN_B4_TRACE);
    let s = snap!("train_b4_trace_tree", &mut a);
    assert!(s[0].contains("note: the trace records no nn.Module frames"), "{}", s[0]);
    assert!(s[0].contains("%CPU") && !s[0].contains("GPU ms"), "{}", s[0]);
}

#[test]
fn a_profile_without_a_call_tree_says_why() {
    let mut a = tree_app(TRAIN_B4);
    assert!(a.panes.tree.result.is_none());
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("no call tree: the trace records no CPU ops"), "{s}");
    press(&mut a, "ct\n↓→x");
    assert!(!a.quit && a.panes.tree.result.is_none());
}

#[test]
fn the_focus_keeps_the_paths_to_its_matches() {
    let mut a = tree_app(TIMESFORMER);
    press(&mut a, "/softmax");
    assert_eq!(a.panes.tree.query.focus.as_deref(), Some("softmax"));
    let v = visible(&a);
    let matches: Vec<&TreeRow> =
        v.iter().filter(|r| r.name.to_lowercase().contains("softmax")).collect();
    assert!(matches.len() >= 2, "every match's path is open: {v:?}");
    press(&mut a, "\n");
    assert!(a.editor.is_none());
    press(&mut a, "/(");
    assert!(a.panes.tree.error.is_some(), "an unfinished regex is refused");
    assert_eq!(visible(&a), v, "the previous rows stay");
    press(&mut a, "\x1b");
    assert_eq!(a.panes.tree.query.focus.as_deref(), Some("softmax"));
}

#[test]
fn bottom_up_shows_a_kernels_callers() {
    // t: callers under each node; the costliest own cost first, its
    // chain of callers open.
    let mut a = tree_app(TIMESFORMER);
    press(&mut a, "t");
    assert!(a.panes.tree.query.bottom_up);
    let v = visible(&a);
    assert_eq!((v[0].depth, v[0].kind), (0, NodeKind::Kernel), "{:?}", v[0]);
    assert_eq!((v[1].depth, v[1].kind, v[1].name.as_str()), (1, NodeKind::Op, "aten::_softmax"));

    // From the Kernels pane, `o` on the costliest kernel: its callers alone.
    let mut a = app(TIMESFORMER, None);
    press(&mut a, "3");
    let k = a.panes.kernels.selected_kernel().unwrap().clone();
    press(&mut a, "o");
    assert_eq!(a.pane, Pane::Tree);
    let q = &a.panes.tree.query;
    assert!(q.bottom_up && q.focus.as_deref() == Some(exactly(&k.kernel).as_str()), "{q:?}");
    let t = a.panes.tree.result.clone().unwrap();
    assert_eq!((t.rows[0].kind, t.rows[0].name.as_str()), (NodeKind::Kernel, k.kernel.as_str()));
    assert!(t.rows.iter().skip(1).all(|r| r.depth > 0), "one root: the kernel");
    // Its GPU time is the kernel table's, every kernel of that label.
    let table: f64 = a
        .profile()
        .unwrap()
        .kernels
        .iter()
        .filter(|r| r.kernel == k.kernel)
        .map(|r| r.ms_per_step)
        .sum();
    assert!(
        (t.rows[0].gpu_ms_per_step - table).abs() < 1e-3,
        "{} vs {table}",
        t.rows[0].gpu_ms_per_step
    );
    let v = visible(&a);
    assert_eq!(
        (v[1].kind, v[1].name.as_str(), v[1].pct_of_gpu),
        (NodeKind::Op, "aten::_softmax", 100.0)
    );
    let s = snap!("timesformer_tree_callers", &mut a);
    assert!(s[0].contains("aten::_softmax") && s[0].contains("bottom-up"), "{}", s[0]);
}

#[test]
fn o_shows_a_kernel_row_in_kernels_and_an_op_row_in_ops() {
    let mut a = tree_app(TIMESFORMER);
    let k = select(&mut a, |r| r.kind == NodeKind::Kernel);
    assert!(screen(&mut a, 80, 24).contains("o kernel in Kernels"));
    press(&mut a, "o");
    assert_eq!(a.pane, Pane::Kernels);
    assert!(a.panes.kernels.detail, "its details open");
    assert_eq!(a.panes.kernels.selected_kernel().unwrap().kernel, k.name);
    assert!(screen(&mut a, 160, 48).contains("launched from"));
    // Esc: the list, filtered to that kernel.
    press(&mut a, "\x1b");
    let list = a.panes.kernels.result.as_ref().unwrap();
    assert!(!list.kernels.is_empty() && list.kernels.iter().all(|r| r.kernel == k.name));

    // The op above it, in Ops; Enter on a kernel leaf goes to Kernels too.
    press(&mut a, "9");
    assert_eq!(a.panes.tree.selected_row(), Some(&k), "the Tree kept its cursor");
    press(&mut a, "\n");
    assert_eq!((a.pane, a.panes.kernels.detail), (Pane::Kernels, true));
    press(&mut a, "9↑");
    let op = a.panes.tree.selected_row().unwrap().clone();
    assert_eq!((op.kind, op.name.as_str()), (NodeKind::Op, "aten::_softmax"));
    press(&mut a, "o");
    assert_eq!(a.pane, Pane::Ops);
    let ops = a.panes.ops.result.as_ref().unwrap();
    assert_eq!(ops.ops[a.panes.ops.selected].op, op.name);
    assert_eq!(ops.matched, 1);
    // And back: `o` on the op, its callers in the Tree.
    press(&mut a, "o");
    assert_eq!(a.pane, Pane::Tree);
    let v = visible(&a);
    assert_eq!((v[0].kind, v[0].name.as_str()), (NodeKind::Op, "aten::_softmax"));
    assert_eq!((v[1].kind, v[1].name.as_str()), (NodeKind::Op, "aten::softmax"));
}

#[test]
fn kernel_details_say_where_it_was_launched_from() {
    let mut a = app(TIMESFORMER, None);
    press(&mut a, "3\n");
    let k = a.panes.kernels.selected_kernel().unwrap().clone();
    let s = snap!("timesformer_kernel_detail", &mut a);
    // The lens bottom-up, by frame, focused on this kernel's label alone.
    let q = TreeQuery {
        by: By::Frame,
        focus: Some(exactly(&k.kernel)),
        bottom_up: true,
        min_pct: 0.0,
        ..TreeQuery::default()
    };
    let t = tree(a.profile().unwrap(), &q).unwrap();
    let c = callers(&t);
    assert_eq!(c.chain[0].name, "aten::_softmax");
    assert!(
        c.chain.iter().any(|r| r.name.contains("modeling_timesformer.py(")),
        "the model's Python line: {:?}",
        c.chain
    );
    assert!(c.branch.len() >= 12, "one call per layer: {:?}", c.branch);
    assert!(c.branch.iter().all(|r| r.kind == NodeKind::Module));
    let sum: f64 = c.branch.iter().map(|r| r.pct_of_gpu).sum();
    assert!((sum - 100.0).abs() < 0.1, "the callers share its time: {sum}");
    let line =
        |r: &TreeRow| format!("{:>5.1}% {:<10}{}", r.pct_of_gpu, r.kind.as_str(), name_of(r, 130));
    assert!(s[0].contains(&format!("launched from {}", line(c.chain[0]))), "{}", s[0]);
    // How its calls ran (app/tests/kernel_calls.rs checks the figures
    // against the raw events): 12 calls, so no 99th percentile apart from
    // the longest; one stream, one launch configuration.
    let calls = k.calls.as_ref().expect("a trace's kernel row has its calls");
    assert_eq!(calls.calls, 12);
    let spread = format!("calls/step    12 · each p50 {:.3} ms, max", calls.p50_us / 1e3);
    assert!(s[0].contains(&spread), "{}", s[0]);
    assert!(!s[0].contains("p99"), "no 99th percentile of 12 calls:\n{}", s[0]);
    assert!(s[0].contains("launch        grid 301152×1×1 block 1024×1×1 · stream 0:7"), "{}", s[0]);
    for r in c.chain.iter().chain(&c.branch) {
        assert!(s[1].contains(&line(r)), "{} missing:\n{}", line(r), s[1]);
    }
    assert!(
        s[1].contains(&format!("from {} callers, costliest first", c.branch.len())),
        "{}",
        s[1]
    );
    assert!(s[0].contains("more lines of callers (o: every caller in Tree)"), "{}", s[0]);
}
