//! `profile infer --device cpu` end to end at a small size, every reader on
//! the result, and the bad inputs of docs/spec.md §1.1 (exit codes, nothing written).

mod common;

use std::path::Path;

use libreyolo_core::cli::{InferArgs, ProfileCommand};
use libreyolo_core::error::exit;

fn args(extra: &[&str]) -> InferArgs {
    match common::command("infer", extra) {
        ProfileCommand::Infer(a) => a,
        _ => unreachable!(),
    }
}

fn infer(extra: &[&str]) -> libreyolo_core::Result<String> {
    let _turn = common::turn();
    match common::try_command("infer", extra)? {
        ProfileCommand::Infer(a) => libreyolo_capture::infer(&a),
        _ => unreachable!(),
    }
}

const SMALL: &[&str] = &["--device", "cpu", "--imgsz", "320", "--warmup", "2", "--runs", "6"];

fn small(project: &Path, extra: &[&str]) -> Vec<String> {
    // SMALL's flags, minus those `extra` sets itself.
    let mut v: Vec<String> = Vec::new();
    for pair in SMALL.chunks(2) {
        if !extra.contains(&pair[0]) {
            v.extend(pair.iter().map(|s| s.to_string()));
        }
    }
    v.extend(["--project".to_string(), project.display().to_string()]);
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(project: &Path, extra: &[&str]) -> libreyolo_core::Result<String> {
    let v = small(project, extra);
    let refs: Vec<&str> = v.iter().map(String::as_str).collect();
    infer(&refs)
}

#[test]
fn infer_on_cpu_then_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &[]).unwrap();
    assert!(out.contains("latency  p50"), "{out}");
    assert!(out.contains("next:    libreyolo profile summary"), "{out}");
    let profile_path = dir.path().join("infer/profile.json");
    let trace_path = dir.path().join("infer/profile_trace.json");
    assert!(profile_path.is_file() && trace_path.is_file());

    let p = libreyolo_core::input::load(profile_path.to_str().unwrap(), Default::default())
        .unwrap()
        .input
        .profile;
    assert_eq!(p.mode, Some(libreyolo_core::profile::Mode::Inference));
    assert_eq!(p.bound, libreyolo_core::profile::Verdict::Compute, "CPU verdict: {}", p.bound_why);
    let lat = p.figures.latency.as_ref().unwrap();
    assert_eq!(lat.n, 3);
    assert!(lat.p50_ms > 0.0 && lat.p50_ms <= lat.p90_ms && lat.p90_ms <= lat.p99_ms, "{lat:?}");
    let stages = p.figures.stages_ms.as_ref().unwrap();
    assert!(
        stages.forward.unwrap() > 0.0
            && stages.preprocess.unwrap() > 0.0
            && stages.postprocess.unwrap() > 0.0
    );
    for phase in ["preprocess", "forward", "postprocess"] {
        assert!(p.phase_names().contains(&phase), "{phase} missing: {:?}", p.phase_names());
    }
    assert!(p.ops.iter().any(|o| o.op == "aten::conv2d"), "conv2d not recorded");
    assert_eq!(p.figures.window.real_steps, 6);
    assert_eq!(p.config.as_map()["weights_source"], "random-init");
    assert_eq!(p.config.as_map()["device"], "cpu");
    assert!(p.config.as_map()["threads"].as_i64().unwrap() >= 1);

    // The trace alone parses to the same steps.
    let t = libreyolo_core::input::load(trace_path.to_str().unwrap(), Default::default())
        .unwrap()
        .input
        .profile;
    assert_eq!(t.figures.window.real_steps, 6);

    let pp = profile_path.to_str().unwrap();
    assert!(common::reader(&["summary", pp]).contains("forward"));
    assert!(common::reader(&["phases", pp]).contains("postprocess"));
    assert!(common::reader(&["ops", pp, "--top", "5"]).contains("aten::"));
    common::reader(&["kernels", pp]);
    assert!(!common::reader(&["get", pp, "step_ms"]).trim().is_empty());
    let json: serde_json::Value =
        serde_json::from_str(&common::reader(&["summary", pp, "--json"])).unwrap();
    assert!(json.is_object());
}

#[test]
fn json_no_trace_and_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--no-trace", "--json"]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mode"], "inference");
    assert!(v["latency_p50_ms"].as_f64().unwrap() > 0.0);
    assert!(!dir.path().join("infer/profile_trace.json").exists());
    let p = libreyolo_core::input::load(
        dir.path().join("infer/profile.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    assert!(p.trace.is_none() && p.figures.latency.is_some());

    let rep = tempfile::tempdir().unwrap();
    let out = run(rep.path(), &["--repeat", "2", "--runs", "4"]).unwrap();
    assert!(out.contains("(n=2)"), "{out}");
    let r = libreyolo_core::input::load(
        rep.path().join("infer_repeat.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    assert_eq!(r.img_per_s_n, Some(2));
    assert_eq!(r.img_per_s_trials.as_ref().map(Vec::len), Some(2));
    assert!(r.img_per_s_std.is_some());
}

#[test]
fn sources_batches_and_checkpoint_weights() {
    let py = common::torch_python();
    let dir = tempfile::tempdir().unwrap();
    // A LibreYOLO-format checkpoint with YOLOv9-t's names and shapes, 3 classes.
    let ckpt = dir.path().join("w.pt");
    let other = dir.path().join("other.pt");
    let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/parity/keys_t.json");
    common::run_python(
        &py,
        r#"
import sys, json, collections, torch
torch.manual_seed(0)
keys = json.load(open(sys.argv[1]))
sd = collections.OrderedDict()
for k, shape in keys.items():
    if k.endswith("num_batches_tracked"):
        sd[k] = torch.tensor(0)
    elif k.startswith("head.cv3.") and (k.endswith(".2.weight") or k.endswith(".2.bias")):
        shape = [3] + shape[1:]
        sd[k] = torch.randn(shape) * 0.1
    elif k.endswith("running_var"):
        sd[k] = torch.rand(shape) + 0.5
    else:
        sd[k] = torch.randn(shape) * 0.1
ck = {"model": sd, "schema_version": "1.0", "libreyolo_version": "1.6.0", "model_family": "yolo9",
      "size": "t", "task": "detect", "nc": 3, "names": {0: "a", 1: "b", 2: "c"}, "imgsz": 320}
torch.save(ck, sys.argv[2])
ck["model_family"] = "yolox"
torch.save(ck, sys.argv[3])
"#,
        &[keys, ckpt.to_str().unwrap(), other.to_str().unwrap()],
    );
    // Two images in a directory, cycled through a batch of 3.
    let imgs = dir.path().join("imgs");
    std::fs::create_dir(&imgs).unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/astronaut.jpg");
    std::fs::copy(sample, imgs.join("a.jpg")).unwrap();
    image::RgbImage::from_fn(200, 120, |x, y| image::Rgb([x as u8, y as u8, 90]))
        .save(imgs.join("b.png"))
        .unwrap();

    let project = dir.path().join("runs");
    let out = run(
        &project,
        &[
            imgs.to_str().unwrap(),
            "--weights",
            ckpt.to_str().unwrap(),
            "--size",
            "s",
            "--batch",
            "3",
            "--runs",
            "2",
            "--no-trace",
        ],
    )
    .unwrap();
    assert!(out.contains("img/s"));
    let p = libreyolo_core::input::load(
        project.join("infer/profile.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    assert_eq!(p.config.as_map()["weights_source"], "file");
    assert_eq!(p.config.as_map()["size"], "t", "the checkpoint's size wins over --size");
    assert_eq!(p.config.as_map()["nc"], 3);
    assert_eq!(p.config.as_map()["images"], 2);
    assert_eq!(p.config.as_map()["batch"], 3);

    let err = run(&project, &["--weights", other.to_str().unwrap()]).unwrap_err();
    assert_eq!(err.exit_code(), exit::FAILURE);
    assert!(err.to_string().contains("yolox"), "{err}");
}

#[test]
fn bad_inputs_exit_with_the_spec_codes_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("runs");
    let corrupt = dir.path().join("bad.jpg");
    std::fs::write(&corrupt, b"not an image").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let junk_ckpt = dir.path().join("junk.pt");
    std::fs::write(&junk_ckpt, b"garbage").unwrap();
    let p = project.to_str().unwrap();

    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["/no/such/image.jpg", "--device", "cpu"], exit::USAGE, "source not found"),
        (vec![empty.to_str().unwrap(), "--device", "cpu"], exit::USAGE, "no images"),
        (vec![corrupt.to_str().unwrap(), "--device", "cpu"], exit::FAILURE, "cannot decode image"),
        (vec!["--weights", "no/such/weights.pt", "--device", "cpu"], exit::USAGE, "not found"),
        (
            vec!["--weights", junk_ckpt.to_str().unwrap(), "--device", "cpu"],
            exit::FAILURE,
            "cannot read checkpoint",
        ),
        (vec!["--device", "cpu", "--half"], exit::USAGE, "CUDA only"),
        (vec!["--device", "cpu", "--imgsz", "100"], exit::USAGE, "multiple of 32"),
        (vec!["--device", "cpu", "--runs", "1"], exit::USAGE, "at least 2"),
        (vec!["--device", "cpu", "--threads", "0"], exit::USAGE, "--threads 0"),
    ];
    for (argv, code, msg) in cases {
        let mut full = argv.clone();
        full.extend(["--project", p]);
        let err = infer(&full).unwrap_err();
        assert_eq!(err.exit_code(), code, "{argv:?}: {err}");
        assert!(err.to_string().contains(msg), "{argv:?}: {err}");
        assert!(!err.to_string().contains('\n'), "one line: {err}");
    }
    // A size, dtype or device that does not exist is refused as the
    // arguments are parsed (clap's usage error), before a capture starts.
    for (flag, value) in [("--size", "x"), ("--amp-dtype", "int8"), ("--device", "gpu0")] {
        use clap::Parser;
        let argv =
            ["libreyolo", "profile", "infer", "--device", "cpu", flag, value, "--project", p];
        let err = libreyolo_core::cli::Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(err.exit_code(), exit::USAGE, "{flag} {value}: {err}");
        assert!(err.to_string().contains(flag), "{flag} {value}: {err}");
    }
    if !tch::Cuda::is_available() {
        let err = infer(&["--project", p]).unwrap_err();
        assert_eq!(err.exit_code(), exit::USAGE);
        assert!(err.to_string().contains("--device cpu"), "{err}");
    }
    assert!(!project.exists(), "nothing may be written on bad input");
}

/// Forward-phase op counts per image of a profile.json.
fn forward_ops(profile: &serde_json::Value) -> std::collections::HashMap<String, f64> {
    let batch = profile["config"]["batch"].as_f64().unwrap_or(1.0);
    profile["ops_by_phase"]["forward"]
        .as_array()
        .expect("ops_by_phase.forward")
        .iter()
        .map(|o| {
            (o["op"].as_str().unwrap().to_string(), o["count_per_step"].as_f64().unwrap() / batch)
        })
        .collect()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn default_infer_runs_libreyolos_graph_and_fuse_folds_it() {
    // LibreYOLO 1.6's own profile of YOLOv9-t (its inference never fuses),
    // and the model's state-dict names: 221 BatchNorms, 42 RepConvN whose
    // 1×1 branch `--fuse` merges into the 3×3 one.
    let parity = Path::new(env!("CARGO_MANIFEST_DIR")).join("parity");
    let theirs = forward_ops(&read_json(&parity.join("libreyolo16_infer_b1_profile.json")));
    let keys: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(read_json(&parity.join("keys_t.json"))).unwrap();
    let batch_norms = keys.keys().filter(|k| k.ends_with(".bn.weight")).count() as f64;
    let repconvs = keys
        .keys()
        .filter(|k| {
            k.ends_with(".conv2.conv.weight") && keys.contains_key(&k.replace(".conv2.", ".conv1."))
        })
        .count() as f64;
    assert_eq!(theirs["aten::batch_norm"], batch_norms, "LibreYOLO runs every BatchNorm");

    let dir = tempfile::tempdir().unwrap();
    let unfused = dir.path().join("unfused");
    let fused = dir.path().join("fused");
    // Two intra-op threads, as LibreYOLO's profile ran: on one thread the
    // convolution path libtorch picks calls `aten::cat` inside
    // `aten::_convolution` three times per image (37 cats, not 34), and
    // the default thread count drops to one when the machine is busy.
    run(&unfused, &["--threads", "2"]).unwrap();
    run(&fused, &["--fuse", "--threads", "2"]).unwrap();
    let unfused = read_json(&unfused.join("infer/profile.json"));
    let fused = read_json(&fused.join("infer/profile.json"));
    assert_eq!(unfused["config"]["fused"], false);
    assert_eq!(fused["config"]["fused"], true);

    // The model's own ops (not the dispatcher's choice of conv backend, which
    // depends on the image size): the same count per image as LibreYOLO's.
    let ours = forward_ops(&unfused);
    let graph = [
        "aten::conv2d",
        "aten::batch_norm",
        "aten::silu",
        "aten::add",
        "aten::cat",
        "aten::avg_pool2d",
        "aten::max_pool2d",
    ];
    for op in graph {
        assert_eq!(ours.get(op), theirs.get(op), "{op} per image: ours (unfused) vs LibreYOLO 1.6");
    }
    // LibreYOLO 1.6's table counts every call; ours counts a call nested
    // in a same-name call once (docs/analysis.md §17), and
    // `aten::upsample_nearest2d` (the `.vec` overload) calls itself.
    let up = "aten::upsample_nearest2d";
    assert_eq!(ours.get(up).map(|n| n * 2.0), theirs.get(up).copied(), "{up} per image");

    let f = forward_ops(&fused);
    assert_eq!(f.get("aten::batch_norm"), None, "--fuse folds every BatchNorm");
    assert_eq!(
        f["aten::conv2d"],
        theirs["aten::conv2d"] - repconvs,
        "--fuse merges each RepConvN's two convolutions"
    );
    assert_eq!(
        f["aten::add"],
        theirs["aten::add"] - 2.0 * repconvs,
        "a fused RepConvN adds nothing"
    );
    for op in ["aten::silu", "aten::cat", "aten::avg_pool2d", "aten::max_pool2d"] {
        assert_eq!(f.get(op), theirs.get(op), "{op}: untouched by --fuse");
    }
    assert_eq!(f.get(up), ours.get(up), "{up}: untouched by --fuse");

    // The unfused verdict names the lever with its count; the fused one does not.
    let lever = format!("`--fuse` folds {batch_norms} BatchNorm launches per image");
    let why = unfused["bound_why"].as_str().unwrap();
    assert!(why.contains(&lever), "{why}");
    assert!(!fused["bound_why"].as_str().unwrap().contains("--fuse"), "{}", fused["bound_why"]);
}

/// Busy loops, one per CPU, until dropped.
struct Hog(Vec<std::process::Child>);

fn busy_loop() -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.args(["-c", "while :; do :; done"]);
    c
}

impl Hog {
    /// One busy loop per CPU.
    fn start() -> Hog {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Hog((0..cpus).map(|_| busy_loop().spawn().unwrap()).collect())
    }
}

/// `command` confined to one CPU, as `taskset -c CPU` would.
fn on_cpu(mut command: std::process::Command, cpu: usize) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only calls
    // async-signal-safe libc functions on its own stack.
    unsafe {
        command.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            match libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    command
}

impl Drop for Hog {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn conditions_of(project: &Path) -> libreyolo_core::conditions::Conditions {
    let p = libreyolo_core::input::load(
        project.join("infer/profile.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    libreyolo_core::conditions::Conditions::of_host(p.host.as_ref())
        .expect("host.conditions recorded")
}

#[test]
fn a_cpu_hog_marks_the_capture_contended_its_cores_are_left_alone_and_without_it_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get();
    let capture = |name: &str, extra: &[&str]| {
        let mut a = vec!["--imgsz", "160", "--warmup", "1", "--runs", "8"];
        a.extend_from_slice(extra);
        let v = small(&dir.path().join(name), &a);
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        libreyolo_capture::infer(&args(&refs)).unwrap();
        conditions_of(&dir.path().join(name))
    };
    let all = cpus.to_string();
    let (forced, default, quiet) = {
        // The profiler's turn for as long as the hog lives: no other test's
        // capture may start (and see the hog) until it is gone.
        let _turn = common::turn();
        let hog = Hog::start();
        let forced = capture("forced", &["--threads", &all]);
        let default = capture("default", &[]);
        drop(hog);
        // The same capture once the hog is gone is quiet. Another test's
        // process may still start mid-window on a shared machine: three tries.
        let quiet: Vec<_> = (0..3).map(|i| capture(&format!("quiet{i}"), &[])).collect();
        (forced, default, quiet)
    };
    assert!(
        quiet.iter().any(|c| !c.contended),
        "no quiet capture without the hog in three tries: {quiet:#?}"
    );

    // Every core asked for while a busy loop holds each: contended, and why.
    assert!(forced.contended, "{forced:?}");
    let why = forced.contended_why.as_deref().unwrap();
    assert!(
        why.starts_with("other processes used")
            && why.contains(&format!("on {cpus} cores ({cpus} threads ours)")),
        "{why}"
    );
    assert!(
        forced.other_cores.unwrap() >= 0.5,
        "the hog's busy loops show as other processes' CPU: {forced:?}"
    );
    // By default the capture leaves the busy cores alone (at least one thread).
    assert_eq!(default.threads, 1, "{default:?}");
    // The judgement is the rule, whatever else the machine was doing.
    for c in [&forced, &default].into_iter().chain(&quiet) {
        let free = c.cpus.saturating_sub(c.threads) as f64;
        assert_eq!(
            c.contended,
            c.other_cores.unwrap() > free + libreyolo_core::conditions::CONTENDED_CORES,
            "{c:?}"
        );
        assert!(c.window_s > 0.0 && c.load_avg_start.is_some() && c.load_avg_end.is_some());
    }
}

#[test]
fn a_hog_on_a_cpu_the_capture_may_not_use_is_recorded_not_judged() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!(
        cpus >= 2,
        "this test pins a busy loop and a capture to different CPUs: it needs two, the machine has {cpus}"
    );
    let dir = tempfile::tempdir().unwrap();
    // `taskset -c 1 libreyolo profile infer` beside a busy loop on CPU 0.
    // Another test's thread may still land on CPU 1 mid-window: three tries.
    let tries: Vec<_> = {
        let _turn = common::turn();
        let _hog = Hog(vec![on_cpu(busy_loop(), 0).spawn().unwrap()]);
        (0..3)
            .map(|i| {
                let project = dir.path().join(format!("pinned{i}"));
                let v = small(
                    &project,
                    &["--imgsz", "160", "--warmup", "1", "--runs", "8", "--no-trace"],
                );
                let out =
                    on_cpu(std::process::Command::new(env!("CARGO_BIN_EXE_libreyolo-capture")), 1)
                        .args(["profile", "infer"])
                        .args(&v)
                        .output()
                        .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                conditions_of(&project)
            })
            .collect()
    };
    for c in &tries {
        assert_eq!((c.cpus, c.threads), (1, 1), "the capture counts the CPU it may use: {c:?}");
        assert!(
            c.other_cores_elsewhere.unwrap() >= 0.8,
            "the busy loop shows on the other CPU: {c:?}"
        );
    }
    assert!(
        tries.iter().any(|c| !c.contended && c.other_cores.unwrap() < 0.25),
        "a busy CPU we may not use is no contention: {tries:#?}"
    );
}

#[test]
fn threads_are_what_was_asked_and_default_to_the_cpus_we_may_use() {
    let dir = tempfile::tempdir().unwrap();
    run(&dir.path().join("one"), &["--imgsz", "160", "--no-trace", "--threads", "1"]).unwrap();
    run(&dir.path().join("default"), &["--imgsz", "160", "--no-trace"]).unwrap();
    let one = conditions_of(&dir.path().join("one"));
    let default = conditions_of(&dir.path().join("default"));
    assert_eq!(one.threads, 1);
    // By default the CPUs we may use, less those others keep busy (another
    // test's Python may be one: the hog test checks the rule itself).
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!((1..=cpus).contains(&default.threads), "{default:?}");
    let p = read_json(&dir.path().join("one/infer/profile.json"));
    assert_eq!(p["config"]["threads"], 1);
}

#[test]
fn memory_records_the_cpu_allocator_and_the_profile_keeps_its_timeline() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["--memory"]).unwrap();
    let p = libreyolo_core::input::load(
        dir.path().join("infer/profile.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    let cpu = p
        .memory
        .iter()
        .find(|d| d.device == "cpu")
        .unwrap_or_else(|| panic!("no cpu timeline: {:?}", p.memory));
    // The trace, read whole: the CPU allocator's events inside the steps.
    let trace = read_json(&dir.path().join("infer/profile_trace.json"));
    let events = trace["traceEvents"].as_array().unwrap();
    let steps: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .map(|e| {
            (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        })
        .collect();
    let allocated: Vec<f64> = events
        .iter()
        .filter(|e| e["name"] == "[memory]" && e["args"]["Device Type"] == 0)
        .filter(|e| steps.iter().any(|(s, end)| (*s..*end).contains(&e["ts"].as_f64().unwrap())))
        .map(|e| e["args"]["Total Allocated"].as_f64().unwrap())
        .collect();
    assert!(!allocated.is_empty(), "profile_memory on CPU records the allocator");
    assert_eq!(cpu.events as usize, allocated.len());
    let peak = allocated.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!(cpu.peak_allocated_mb, (peak / 1e6 * 1000.0).round() / 1000.0);
    assert!(cpu.peak_allocated_mb > 1.0, "a YOLOv9-t forward at 320 allocates megabytes: {cpu:?}");
    assert!(cpu.peak_op.as_deref().is_some_and(|op| op.starts_with("aten::")), "{:?}", cpu.peak_op);
    let phases: Vec<&str> = cpu.phases.iter().map(|x| x.phase.as_str()).collect();
    assert!(
        phases.contains(&"forward") && phases.contains(&cpu.peak_phase.as_str()),
        "{phases:?} / {}",
        cpu.peak_phase
    );

    // Without --memory the trace has no allocator events, and the reader says so.
    let plain = tempfile::tempdir().unwrap();
    run(plain.path(), &[]).unwrap();
    let q = libreyolo_core::input::load(
        plain.path().join("infer/profile.json").to_str().unwrap(),
        Default::default(),
    )
    .unwrap()
    .input
    .profile;
    assert!(q.memory.is_empty(), "{:?}", q.memory);
    assert_eq!(
        libreyolo_core::lens::memory::memory(&q).none.as_deref(),
        Some(libreyolo_core::lens::memory::NO_MEMORY)
    );
}
