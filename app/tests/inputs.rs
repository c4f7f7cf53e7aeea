//! What a reader's input is, decided once for every reader (docs/spec.md
//! §3.2): the same folder or file gets the same answer and exit code from
//! each of them — a job's rank folder (`--rank N`, or the lowest rank), a
//! folder of traces that are not one job, another tool's JSON.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Run, run};
use serde_json::Value;

fn fixture(p: &str) -> PathBuf {
    common::fixtures().join(p)
}

fn dlrm() -> PathBuf {
    fixture("traces/param_dlrm_v100_8rank")
}

fn rank_file(rank: usize) -> PathBuf {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dlrm()).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    assert!(v[rank].to_string_lossy().contains(&format!("worker{rank}_")), "{v:?}");
    v.remove(rank)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn profile(args: &[&str]) -> Run {
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    run(&all)
}

fn json_of(r: &Run, what: &str) -> Value {
    assert_eq!(r.code, 0, "{what}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {}", r.stdout))
}

/// Every reader, on `input` (compare: against itself).
fn every_reader(input: &str) -> Vec<(&'static str, Vec<String>)> {
    let one = |cmd: &'static str, extra: &[&str]| {
        let mut v = vec![cmd.to_string(), input.to_string()];
        v.extend(extra.iter().map(|e| e.to_string()));
        (cmd, v)
    };
    vec![
        one("summary", &[]),
        one("get", &["step_ms"]),
        one("phases", &[]),
        one("kernels", &[]),
        one("ops", &[]),
        one("tree", &[]),
        one("modules", &[]),
        one("memory", &[]),
        one("what-if", &["--all"]),
        one("collectives", &[]),
        one("compare", &[input]),
    ]
}

fn run_args(args: &[String]) -> Run {
    let mut all = vec!["profile".to_string()];
    all.extend_from_slice(args);
    run(&all)
}

/// A folder of copies of `files` (real traces of the fixtures).
fn folder_of(files: &[PathBuf]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::copy(f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn a_folder_of_unrelated_traces_gets_one_refusal_from_every_reader() {
    // Two single-GPU traces with no rank anywhere, then two ranks of two
    // different jobs (rank 0 of 2, rank 3 of 8).
    let rankless = folder_of(&[
        fixture(
            "traces/tracelens_h100_qwen_inference/gaunernst_bert-small-uncased__1016001.json.gz",
        ),
        fixture(
            "traces/hta_alexnet_a100_nosteps/benchmark_result_2869224_1695835535_trace.json.gz",
        ),
    ]);
    let two_jobs = folder_of(&[
        fixture("traces/hta_nccl_a100_2024/nccl_data.json.gz"),
        fixture("traces/hta_trace_diff_a100_2022/control.json.gz"),
    ]);
    for (dir, why) in [
        (rankless.path(), "gaunernst_bert-small-uncased__1016001.json.gz names no rank"),
        (
            two_jobs.path(),
            "nccl_data.json.gz is rank 0 of a world of 2, control.json.gz of a world of 8",
        ),
    ] {
        let mut first: Option<String> = None;
        for (cmd, args) in every_reader(s(dir)) {
            let r = run_args(&args);
            assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{cmd}: {}", r.stdout);
            assert!(
                r.stderr.contains("not the ranks of one job") && r.stderr.contains(why),
                "{cmd}: {}",
                r.stderr
            );
            // The same message, word for word, whichever reader.
            match &first {
                None => first = Some(r.stderr),
                Some(f) => assert_eq!(&r.stderr, f, "{cmd}"),
            }
        }
    }
    // The same traces named on the command line: the same rule.
    let files: Vec<PathBuf> =
        std::fs::read_dir(rankless.path()).unwrap().map(|e| e.unwrap().path()).collect();
    for cmd in ["summary", "kernels", "collectives"] {
        let r = profile(&[cmd, s(&files[0]), s(&files[1])]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stderr.contains("these 2 traces are not the ranks of one job"), "{}", r.stderr);
    }
    // One trace alone in a folder is that trace, for every reader.
    let alone = folder_of(&[fixture("traces/hta_nccl_a100_2024/nccl_data.json.gz")]);
    for (cmd, args) in every_reader(s(alone.path())) {
        assert_eq!(run_args(&args).code, 0, "{cmd}");
    }
}

#[test]
fn a_rank_folder_is_read_by_every_reader_one_rank_or_the_job() {
    let d = dlrm();
    let d = s(&d);
    // Readers of one rank: the lowest without --rank (said on stderr),
    // rank N with it — each the reader of that rank's trace alone.
    for (cmd, extra) in [
        ("phases", vec![]),
        ("ops", vec![]),
        ("tree", vec![]),
        ("modules", vec![]),
        ("memory", vec![]),
        ("get", vec!["step_ms"]),
    ] {
        for rank in [None, Some(5)] {
            let file = rank_file(rank.unwrap_or(0));
            let mut on_dir = vec![cmd, d];
            let mut on_file = vec![cmd, s(&file)];
            on_dir.extend(&extra);
            on_file.extend(&extra);
            let r5 = rank.map(|r| r.to_string());
            if let Some(r) = &r5 {
                on_dir.extend(["--rank", r.as_str()]);
            }
            on_dir.push("--json");
            on_file.push("--json");
            let (a, b) = (profile(&on_dir), profile(&on_file));
            assert_eq!(json_of(&a, cmd), json_of(&b, cmd), "{cmd} {rank:?}");
            let said = a.stderr.contains("holds the traces of a job's ranks 0-7: showing rank 0");
            assert_eq!(said, rank.is_none(), "{cmd} {rank:?}: {}", a.stderr);
        }
        let r = profile(&[cmd, d, "--rank", "8"]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains("--rank 8: ") && r.stderr.contains("holds ranks 0-7"),
            "{}",
            r.stderr
        );
    }
    // Readers of a job: the job without --rank, rank N's trace alone with
    // it (a what-if's change: made on every rank, the job re-timed).
    let three = rank_file(3);
    for (cmd, extra) in [
        ("summary", vec![]),
        ("kernels", vec![]),
        ("collectives", vec![]),
        ("what-if", vec!["--remove-category", "communication"]),
        ("what-if", vec!["--all"]),
    ] {
        let with = |args: &[&str]| {
            let mut v = args.to_vec();
            v.extend(&extra);
            v.push("--json");
            json_of(&profile(&v), cmd)
        };
        let job = with(&[cmd, d]);
        let rank3 = with(&[cmd, d, "--rank", "3"]);
        assert_eq!(rank3, with(&[cmd, s(&three)]), "{cmd} --rank 3");
        assert_ne!(job, rank3, "{cmd}: without --rank, the job");
    }
    // A rank read alone for a verdict says that its waits for later ranks
    // read as its own communication, and where the job tells them apart.
    for args in [vec!["summary", d, "--rank", "3"], vec!["what-if", d, "--rank", "3", "--all"]] {
        let r = profile(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let note = format!(
            "note: rank 3 read alone: the time it waited at collectives for later ranks reads here as its own communication (`profile summary {d}`"
        );
        assert!(r.stderr.contains(&note), "{args:?}: {}", r.stderr);
    }
    // The explorer picks its rank by the same rule: rank 3 alone, with the
    // note, reaches the explorer (here without a terminal: exit 2 for
    // that); a rank the job lacks is refused as every reader refuses it.
    for (rank, says) in
        [("3", ["rank 3 read alone", "needs a terminal"]), ("8", ["--rank 8: ", "holds ranks 0-7"])]
    {
        let r = profile(&["explore", d, "--rank", rank]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(says.iter().all(|s| r.stderr.contains(s)), "{}", r.stderr);
    }
    // compare: rank 2 of each side (the sides named as given).
    let two = rank_file(2);
    let mut of_dirs = json_of(&profile(&["compare", d, d, "--rank", "2", "--json"]), "compare");
    let mut of_files = json_of(&profile(&["compare", s(&two), s(&two), "--json"]), "compare");
    assert_eq!(of_dirs["before"], d);
    for side in ["before", "after"] {
        of_dirs[side] = Value::Null;
        of_files[side] = Value::Null;
    }
    assert_eq!(of_dirs, of_files);
    assert_ne!(of_dirs, json_of(&profile(&["compare", d, d, "--json"]), "compare job"));
    // --rank where there is no job: one trace, or neither side of a compare.
    let one = fixture("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    for args in [
        vec!["phases", s(&one), "--rank", "0"],
        vec!["summary", s(&one), "--rank", "0"],
        vec!["kernels", s(&one), "--rank", "0"],
        vec!["compare", s(&one), s(&one), "--rank", "0"],
    ] {
        let r = profile(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("--rank"), "{args:?}: {}", r.stderr);
    }
    // --rank and --ranks: one rank, or a job of some ranks, not both.
    assert_eq!(profile(&["summary", d, "--rank", "1", "--ranks", "1-2"]).code, 2);
}

/// `libreyolo profile ARGS… < file`.
fn piped(args: &[&str], file: &Path) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_libreyolo"))
        .arg("profile")
        .args(args)
        .stdin(Stdio::from(std::fs::File::open(file).unwrap()))
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn another_tools_json_is_named_with_what_to_give_instead() {
    for (file, what) in [
        ("foreign/rocprofv3_results.json", "this is a rocprofv3 trace"),
        ("foreign/pt2_et.json.gz", "this is a PyTorch execution trace"),
        ("foreign/memory_timeline.json", "this is a PyTorch memory timeline"),
    ] {
        let path = fixture(file);
        let mut runs: Vec<(String, Run)> = every_reader(s(&path))
            .into_iter()
            .map(|(cmd, args)| (cmd.to_string(), run_args(&args)))
            .collect();
        runs.push(("phases -".into(), piped(&["phases", "-"], &path)));
        // Alone in a folder: the same refusal.
        let dir = folder_of(std::slice::from_ref(&path));
        runs.push(("ops DIR".into(), profile(&["ops", s(dir.path())])));
        for (cmd, r) in runs {
            assert_eq!(r.code, 1, "{file} {cmd}: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{file} {cmd}");
            assert!(
                r.stderr.contains(what)
                    && r.stderr.contains("give a PyTorch profiler (Kineto) trace instead")
                    && r.stderr.contains("export_chrome_trace"),
                "{file} {cmd}: {}",
                r.stderr
            );
            assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
        }
        // Beside a real trace: left out with a note, the trace read.
        let trace = fixture("traces/hta_nccl_a100_2024/nccl_data.json.gz");
        let dir = folder_of(&[path.clone(), trace.clone()]);
        let r = profile(&["get", s(dir.path()), "step_ms"]);
        assert_eq!(r.code, 0, "{file}: {}", r.stderr);
        assert_eq!(r.stdout, profile(&["get", s(&trace), "step_ms"]).stdout);
        assert!(
            r.stderr.contains("left out: it is") && r.stderr.contains(&what[8..]),
            "{}",
            r.stderr
        );
    }
}
