//! The readers' text on three real traces, pinned: a refactoring must
//! change none of it (docs/design.md; `bench/outputs.sh` compares every
//! reader's output of two builds byte for byte). A change that is meant
//! is reviewed with `cargo insta review` (or `INSTA_UPDATE=always`).

mod common;

use common::{fixtures, run};

const TRACES: [(&str, &str); 3] = [
    (
        "timesformer",
        "traces/tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    ),
    ("a100_control", "traces/hta_trace_diff_a100_2022/control.json.gz"),
    ("mi250", "traces/hta_amd_mi250_rocm62/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
];

/// `libreyolo profile ARGS… TRACE`'s stdout, the fixtures' folder written
/// as `<fixtures>` (the checkout's place is not the output's).
fn text(args: &[&str], trace: &str) -> String {
    let path = fixtures().join(trace);
    let p = path.to_str().unwrap();
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    all.push(p);
    let r = run(&all);
    assert_eq!(r.code, 0, "{args:?} {trace}: {}", r.stderr);
    r.stdout.replace(fixtures().to_str().unwrap(), "<fixtures>")
}

#[test]
fn the_readers_text_is_pinned() {
    for (name, trace) in TRACES {
        for (lens, args) in [
            ("summary", &["summary"][..]),
            ("kernels", &["kernels"]),
            ("phases", &["phases"]),
            ("ops", &["ops"]),
            ("tree", &["tree", "--depth", "4"]),
            ("what_if_all", &["what-if", "--all"]),
        ] {
            insta::assert_snapshot!(format!("{name}_{lens}"), text(args, trace));
        }
    }
}

#[test]
fn the_modules_text_is_pinned() {
    let dlrm = "traces/param_dlrm_v100_8rank/worker0_step_12.1694128201545.pt.trace.json.gz";
    insta::assert_snapshot!("timesformer_modules", text(&["modules", "--depth", "3"], TRACES[0].1));
    insta::assert_snapshot!("dlrm_worker0_modules", text(&["modules"], dlrm));
}
