//! Every pane drawn with ratatui's TestBackend at 80×24 and 160×48, on two
//! reference profiles (CPU inference and training) and a raw GPU trace, with
//! filters applied. Snapshots hold the screens; the assertions name what a
//! person must be able to read on them.

#[macro_use]
mod common;

use common::*;
use libreyolo_ui::app::{App, Pane};

#[test]
fn summary_pane() {
    let mut a = app(TRAIN_B4, None);
    let s = snap!("train_b4_summary", &mut a);
    // LibreYOLO 1.6's `host / launch` on this CPU run, decided again.
    assert!(s[0].contains(">> COMPUTE: CPU run: forward dominates"), "{}", s[0]);
    assert!(s[0].contains("4.44 img/s"));

    let mut a = app(INFER_B1, None);
    let s = snap!("infer_b1_summary", &mut a);
    assert!(s[1].contains("latency") && s[1].contains("p50"), "inference shows latency:\n{}", s[1]);
    assert!(s[1].contains("stages") && s[1].contains("NMS"));
    assert!(s[1].contains("no GPU kernels in this profile"));

    let mut a = app(BERT_TRACE, None);
    let s = snap!("bert_trace_summary", &mut a);
    assert!(s[1].contains("Kernel mix") && s[1].contains("gemm / conv") && s[1].contains("█"));
    assert!(s[1].contains("[TC]"));
    assert!(
        s[1].contains("host overhead") && !s[1].contains("in CPU ops"),
        "a GPU run keeps host overhead"
    );

    // Trace health before the verdict, as `profile summary` prints it.
    let mut a = app(QWEN_TRACE, None);
    let s = screen(&mut a, 160, 48);
    let health = s.lines().position(|l| l.contains("health cannot tell backlog: 13.48 ms"));
    let verdict = s.lines().position(|l| l.contains(">> CANNOT TELL"));
    assert!(health.is_some() && health < verdict, "{s}");

    // Graph replays said as `profile summary` says them (audit s17 F3).
    let mut a = app(GRAPH_REPLAY, None);
    let s = screen(&mut a, 160, 48);
    assert!(s.contains("10.39 ms/step of kernel time is in CUDA/HIP graph replays"), "{s}");

    // The raw trace of the CPU training run: no GPU waits on the host, so
    // the pane shows where the step went instead (88%: app/tests/cli.rs checks it).
    let mut a = app(TRAIN_B4_TRACE, None);
    let s = screen(&mut a, 80, 24);
    assert!(
        s.contains("in CPU ops") && s.contains("88% of the step") && !s.contains("host overhead"),
        "{s}"
    );
}

#[test]
fn phases_pane() {
    let mut a = app(TRAIN_B4, None);
    press(&mut a, "2↓↓");
    let s = snap!("train_b4_phases", &mut a);
    for ph in ["dataload", "to_device", "forward", "backward", "optimizer"] {
        assert!(s[0].contains(ph), "{ph} missing:\n{}", s[0]);
    }
    assert!(s[0].contains("ops of forward"), "a CPU phase drills into its ops:\n{}", s[0]);
    assert!(!s[0].contains("GPU idle"), "a CPU run has no GPU idle:\n{}", s[0]);

    let mut a = app(INFER_B1, None);
    press(&mut a, "2");
    let _ = snap!("infer_b1_phases", &mut a);
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "2");
    let s = snap!("bert_trace_phases", &mut a);
    assert!(s[0].contains("unphased"));
    // The GPU's idle time per phase, as `profile phases` gives it.
    let row = &a.profile().unwrap().phases[0];
    let idle = format!("{:.2}", row.idle_ms_per_step.unwrap());
    let line = s[0].lines().find(|l| l.contains("unphased")).unwrap();
    assert!(s[0].contains("GPU idle") && line.contains(&idle), "{idle}:\n{}", s[0]);
}

#[test]
fn kernels_pane_with_filters() {
    // Category cycle + Tensor Core only.
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "3ct");
    let s = snap!("bert_trace_kernels_gemm_tc", &mut a);
    assert!(s[0].contains("cat:gemm / conv") && s[0].contains("TC-only"), "{}", s[0]);
    assert!(s[0].contains("4 of 11 match"), "{}", s[0]);

    // Live regex and count sort.
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "3s/norm|elementwise\n");
    let s = snap!("bert_trace_kernels_regex_count", &mut a);
    assert!(s[0].contains("sort:count") && s[0].contains("/norm|elementwise/"), "{}", s[0]);
    assert!(!s[0].contains("cutlass"), "the regex hides GEMMs:\n{}", s[0]);
    // A wide screen shortens a label only as far as it needs: what the
    // tables cut at 72 characters is whole at 160 columns.
    let gelu =
        "at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl, array<char*, 2ul>>";
    assert!(s[1].contains(gelu) && !s[0].contains(gelu), "{}", s[1]);
    // A refused regex keeps the last answer's rows, but not its count as
    // if it were the refused regex's.
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "3/norm((\n");
    let s = screen(&mut a, 160, 48);
    assert!(s.contains("/norm((/") && s.contains("invalid regex"), "{s}");
    assert!(!s.contains(" match"), "{s}");

    // A CPU profile has no kernels: the pane says so.
    let mut a = app(TRAIN_B4, None);
    press(&mut a, "3p");
    let s = snap!("train_b4_kernels_phase", &mut a);
    assert!(s[0].contains("phase:dataload") && s[0].contains("no GPU kernels"), "{}", s[0]);
}

#[test]
fn kernel_detail_view() {
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "3t\n");
    let s = snap!("bert_trace_kernel_detail", &mut a);
    let k = a.panes.kernels.selected_kernel().unwrap().clone();
    // The full name is shown (wrapped at 80 columns, whole at 160).
    for screen in &s {
        assert!(screen.replace('\n', "").contains(&k.raw_name), "{screen}");
    }
    assert!(s[0].contains("Tensor Core   yes"));
    assert!(s[0].contains("category      gemm / conv"));
    assert!(s[0].contains("calls/step"));
    assert!(s[0].contains("unphased"), "per-phase split:\n{}", s[0]);
    // Where it was launched from: the op, then (on a tall screen) the
    // Python line and the modules calling it (tree.rs checks the figures).
    assert!(s[0].contains("launched from 100.0% op        aten::addmm"), "{}", s[0]);
    assert!(s[1].contains("torch/nn/modules/linear.py(124): forward"), "{}", s[1]);
    assert!(s[1].contains("from 17 callers, costliest first"), "{}", s[1]);
}

#[test]
fn ops_pane_with_filters() {
    let mut a = app(TRAIN_B4, None);
    press(&mut a, "4ppp/conv|addmm\ns");
    let s = snap!("train_b4_ops_forward_regex", &mut a);
    assert!(
        s[0].contains("phase:forward")
            && s[0].contains("/conv|addmm/")
            && s[0].contains("sort:count"),
        "{}",
        s[0]
    );
    assert!(s[0].contains("aten::"), "{}", s[0]);

    let mut a = app(INFER_B1, None);
    press(&mut a, "4");
    let _ = snap!("infer_b1_ops", &mut a);
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "4/linear|matmul\n");
    let s = snap!("bert_trace_ops_regex", &mut a);
    assert!(s[0].contains("ops match"));
}

#[test]
fn compare_pane() {
    // Repeated runs: a significance call is made.
    let mut a = app(INFER_REPEAT3, Some(INFER_REPEAT3_B4));
    press(&mut a, "5");
    let s = snap!("infer_repeat3_compare", &mut a);
    assert!(s[1].contains("significant"), "{}", s[1]);
    assert!(s[0].contains("before") && s[0].contains("after"));

    let mut a = app(TRAIN_B4, Some(TRAIN_REPEAT3));
    press(&mut a, "5");
    let s = snap!("train_b4_compare", &mut a);
    // Both sides' phases have their wall time: compared on it, and said.
    assert!(s[1].contains("Phases (wall ms/step)"), "{}", s[1]);

    let mut a = app(INFER_B1, Some(INFER_B4));
    press(&mut a, "5↓↓");
    let _ = snap!("infer_b1_compare_scrolled", &mut a);

    // One profile: the prompt for a second.
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "5o/tmp/x");
    let s = snap!("bert_trace_compare_prompt", &mut a);
    assert!(
        s[0].contains("Compare needs a second profile") && s[0].contains("path: /tmp/x"),
        "{}",
        s[0]
    );
}

#[test]
fn whatif_pane() {
    let mut a = app(BERT_TRACE, None);
    press(&mut a, "6→");
    let s = snap!("bert_trace_whatif_category", &mut a);
    // The second of the standard what-ifs, largest saving first, as the
    // profile keeps them.
    let second = &a.main.data.as_ref().unwrap().profile().step_model.as_ref().unwrap().scenarios[1];
    assert!(s[0].contains(&format!("what-if {}", second.flags)), "{}", s[0]);
    assert!(s[0].contains("caveat"), "{}", s[0]);

    let mut a = app(TRAIN_B4, None);
    press(&mut a, "6n500\n");
    let s = snap!("train_b4_whatif_launches", &mut a);
    assert!(s[0].contains("remove launches/step: 500"), "{}", s[0]);

    let mut a = app(INFER_B1, None);
    press(&mut a, "6");
    let _ = snap!("infer_b1_whatif", &mut a);
}

#[test]
fn help_overlay_lists_every_key() {
    let mut a = app(TRAIN_B4, None);
    // The help of the pane on screen: the app's keys, then the pane's own.
    for (pane, name) in [("1", "help_80x24"), ("3", "help_kernels_80x24")] {
        press(&mut a, pane);
        press(&mut a, "?");
        let s = screen(&mut a, 80, 24);
        insta::assert_snapshot!(name, s);
        let keys = a.panes.get(a.pane).keys();
        for r in libreyolo_ui::input::help(a.pane, &keys) {
            assert!(
                s.contains(&r.keys) && s.contains(&r.what),
                "{r:?} missing from the help:\n{s}"
            );
        }
        press(&mut a, "?");
        assert!(!a.help, "any key closes it");
    }
    assert_eq!(a.pane, Pane::Kernels);
}

#[test]
fn no_color_and_light_themes_render_the_same_text() {
    use libreyolo_ui::theme::{Depth, Theme};
    let mut dark = app(BERT_TRACE, None);
    press(&mut dark, "3");
    let reference = screen(&mut dark, 80, 24);
    for (name, depth) in
        [("light", Depth::Ansi16), ("high-contrast", Depth::TrueColor), ("dark", Depth::None)]
    {
        let mut a = App::with_inputs(Theme::load(name, depth).unwrap(), input(BERT_TRACE), None);
        press(&mut a, "3");
        assert_eq!(screen(&mut a, 80, 24), reference, "{name} {depth:?}");
    }
}

#[test]
fn tiny_terminals_do_not_panic() {
    // Panes 1-6 and 9, and a kernel's details (with its callers).
    for pane in ["1", "2", "3", "4", "5", "6", "9", "3\n"] {
        let mut a = app(BERT_TRACE, None);
        press(&mut a, pane);
        for (w, h) in [(1, 1), (10, 3), (20, 5), (40, 10)] {
            screen(&mut a, w, h);
        }
        press(&mut a, "?");
        screen(&mut a, 12, 4);
    }
}
