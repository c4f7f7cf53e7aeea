//! `profile run --device cpu` end to end on the built-in synthetic dataset,
//! the readers on the result, and the window that does not fit (exit 3).

mod common;

use libreyolo_core::cli::ProfileCommand;
use libreyolo_core::error::exit;
use serde_json::Value;

/// `profile run ARGS` in this process (ARGS split on spaces, as a shell
/// would: the tests' paths are temporary folders without spaces).
fn run(args: &str) -> libreyolo_core::Result<String> {
    let ProfileCommand::Run(a) = common::command("run", &common::words(args)) else {
        unreachable!()
    };
    let _turn = common::turn();
    libreyolo_capture::train::run(&a)
}

/// Random-init weights whatever the machine holds: a name found nowhere.
const WEIGHTS: &str = "no-such-weights-for-the-test.pt";

#[test]
fn run_synthetic_on_cpu_trains_and_profiles_five_phases() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    let out = run(&format!(
        "synthetic:16 --device cpu --batch 2 --imgsz 160 --warmup 1 --steps 4 --workers 2 --weights {WEIGHTS} --project {project}"
    ))
    .unwrap();
    assert!(out.contains("img/s"), "{out}");
    let train = dir.path().join("train");
    for f in ["profile.json", "profile_trace.json", "profile_summary.json"] {
        assert!(train.join(f).is_file(), "{f} missing");
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(train.join("profile_summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["mode"], "training");
    assert_eq!(summary["meta"]["loss_finite"], true, "{summary}");
    assert_eq!(summary["meta"]["params_changed"], true, "{summary}");
    assert!(summary["meta"]["loss_last"].as_f64().unwrap().is_finite());
    // LibreYOLO's training graph: the PGI auxiliary branch at 0.25, freshly
    // initialised without a checkpoint.
    assert_eq!(summary["meta"]["aux_weight"], 0.25, "{summary}");
    assert!(summary["meta"]["aux_tensors"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["meta"]["aux_tensors_loaded"], 0, "{summary}");
    assert!(summary["real"]["img_per_s"].as_f64().unwrap() > 0.0);
    // LibreYOLO's schedule from a fresh start: the lr climbs from 1e-4
    // through the window (warmup = 3 epochs of 8 iterations); AMP is CUDA's,
    // so a CPU run with the default --amp trains fp32 and says so.
    let opt = &summary["meta"]["optimizer"];
    assert_eq!(opt["warmup_iters"], 24, "{opt}");
    let (lr0, lr1) = (opt["lr_window"][0].as_f64().unwrap(), opt["lr_window"][1].as_f64().unwrap());
    assert!(1e-4 < lr0 && lr0 < lr1 && lr1 < 0.01, "{opt}");
    assert_eq!(opt["ema"], true);
    assert_eq!(summary["meta"]["amp"], false, "{summary}");
    for p in ["dataload", "to_device", "forward", "backward", "optimizer"] {
        assert!(summary["composition_ms"][p].as_f64().is_some(), "composition {p}: {summary}");
    }

    let prof: Value =
        serde_json::from_str(&std::fs::read_to_string(train.join("profile.json")).unwrap())
            .unwrap();
    assert!(prof["img_per_s"].as_f64().unwrap() > 0.0);
    let phases = prof["phases"].as_array().unwrap();
    for p in ["dataload", "to_device", "forward", "backward", "optimizer"] {
        let row = phases
            .iter()
            .find(|r| r["phase"] == p)
            .unwrap_or_else(|| panic!("phase {p} missing: {phases:?}"));
        if p != "dataload" {
            assert!(row["ops_per_step"].as_f64().unwrap() > 0.0, "no ops counted in {p}: {row}");
        }
    }
    // On CPU the verdict is CPU-aware, never launch-bound.
    assert_ne!(prof["bound"], "host / launch", "{}", prof["bound_why"]);
    // And it says how much of the step ran inside libtorch's ops.
    let in_ops = prof["host_in_ops_frac"].as_f64().expect("a CPU run records its share inside ops");
    assert!(0.0 < in_ops && in_ops <= 1.0, "{in_ops}");

    let profile = train.join("profile.json").display().to_string();
    assert!(common::reader(&["summary", &profile]).contains("img/s"));
    assert!(common::reader(&["phases", &profile]).contains("backward"));
    let trace = train.join("profile_trace.json").display().to_string();
    assert!(common::reader(&["summary", &trace]).contains("img/s"));
}

/// Plain `synthetic` makes as many images as the window needs (here more
/// than its default 128); `--batch -1` on the CPU says it needs CUDA and
/// trains at 16.
#[test]
fn plain_synthetic_fills_the_window_and_batch_auto_falls_back_on_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    run(&format!("synthetic --device cpu --batch -1 --imgsz 64 --warmup 1 --steps 8 --workers 2 --weights {WEIGHTS} --project {project}"))
        .unwrap();
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("train/profile_summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["meta"]["batch"], 16, "{summary}");
    assert_eq!(summary["meta"]["images"], 9 * 16, "{summary}");
}

#[test]
fn a_window_the_dataset_cannot_fill_exits_3_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    let err = run(&format!("synthetic:8 --device cpu --batch 4 --imgsz 64 --warmup 1 --steps 4 --weights {WEIGHTS} --project {project}"))
        .unwrap_err();
    assert_eq!(err.exit_code(), exit::NO_PROFILE);
    let msg = err.to_string();
    for want in
        ["8 images", "batch 4", "2 iterations", "need 5", "20 images", "--steps", "--batch 1"]
    {
        assert!(msg.contains(want), "`{want}` not in: {msg}");
    }
    assert!(!dir.path().join("train").exists());
}

#[test]
fn unreadable_data_and_bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    for args in [
        "synthetic:0 --device cpu",
        "synthetic:8 --device cpu --imgsz 100",
        "synthetic:8 --device cpu --steps 1",
        "synthetic:8 --device cpu --batch 0",
    ] {
        let err = run(&format!("{args} --project {project}")).unwrap_err();
        assert_eq!(err.exit_code(), exit::USAGE, "{args}: {err}");
    }
    assert!(!dir.path().join("train").exists());
}

/// A YOLO dataset on disk: `n` images of 96×64 with one box each, one image
/// without a label file and one malformed label line.
fn write_dataset(dir: &std::path::Path, n: usize) -> String {
    let img_dir = dir.join("images/train");
    let lbl_dir = dir.join("labels/train");
    std::fs::create_dir_all(&img_dir).unwrap();
    std::fs::create_dir_all(&lbl_dir).unwrap();
    for i in 0..n {
        let img = image::RgbImage::from_fn(96, 64, |x, y| {
            if (20..60).contains(&x) && (10..40).contains(&y) {
                image::Rgb([200, 30, (i * 20) as u8])
            } else {
                image::Rgb([40, 90, 140])
            }
        });
        img.save(img_dir.join(format!("{i:03}.png"))).unwrap();
        if i == 1 {
            continue; // no label file: a background image
        }
        let mut text = format!("{} 0.4167 0.3906 0.4167 0.4688\n", i % 2);
        if i == 2 {
            text += "0 0.5 oops 0.1 0.1\n";
        }
        std::fs::write(lbl_dir.join(format!("{i:03}.txt")), text).unwrap();
    }
    let yaml = dir.join("data.yaml");
    std::fs::write(
        &yaml,
        "path: .\ntrain: images/train\nval: images/train\nnames:\n  0: red\n  1: blue\n",
    )
    .unwrap();
    yaml.display().to_string()
}

#[test]
fn run_on_a_yolo_dataset_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = write_dataset(dir.path(), 10);
    let project = dir.path().join("runs").display().to_string();
    let out = run(&format!(
        "{yaml} --device cpu --batch 2 --imgsz 64 --warmup 1 --steps 4 --workers 1 --weights {WEIGHTS} --project {project} --json"
    ))
    .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["img_per_s"].as_f64().unwrap() > 0.0, "{v}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("runs/train/profile_summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["meta"]["nc"], 2);
    assert_eq!(summary["meta"]["images"], 10);
    assert_eq!(summary["meta"]["params_changed"], true);
    // Too small for the window: exit 3. An unknown name: exit 2.
    let err = run(&format!(
        "{yaml} --device cpu --batch 4 --imgsz 64 --warmup 1 --steps 4 --project {project}"
    ))
    .unwrap_err();
    assert_eq!(err.exit_code(), exit::NO_PROFILE);
    let err = run(&format!("no-such-dataset-name --device cpu --project {project}")).unwrap_err();
    assert_eq!(err.exit_code(), exit::USAGE);
    assert!(err.to_string().contains("looked for"), "{err}");
}

#[test]
fn repeat_writes_the_aggregate_beside_the_trials() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    let out = run(&format!(
        "synthetic:8 --device cpu --batch 2 --imgsz 64 --warmup 1 --steps 2 --repeat 2 --weights {WEIGHTS} --project {project}"
    ))
    .unwrap();
    assert!(out.contains("(n=2)"), "{out}");
    let agg: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("profile_repeat.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(agg["img_per_s_n"], 2);
    assert_eq!(agg["img_per_s_trials"].as_array().unwrap().len(), 2);
    assert_eq!(agg["aggregation"]["n"], 2);
    assert!(agg["metrics_std"]["step_ms"].as_f64().is_some(), "{}", agg["metrics_std"]);
    assert!(dir.path().join("train/profile.json").is_file());
    assert!(
        common::reader(&["summary", &dir.path().join("profile_repeat.json").display().to_string()])
            .contains("img/s")
    );
}
