//! The pass as a whole: the figures counted at its end, or again from
//! what it kept, are those counted as it went.

use super::*;

/// GPU events longer than all the steps are clipped and everything is
/// counted again, kernels from their spans: a kernel launched before
/// it ran, one launched after (waiting for its launch), and a copy
/// placed by time.
#[test]
fn implausible_gpu_events_are_clipped_and_counted_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clip.json");
    std::fs::write(
        &path,
        r#"[
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 5000000, "args": {"correlation": 9}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 40, "dur": 3000000},
 {"ph": "X", "cat": "kernel", "name": "late_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 100, "args": {"correlation": 11}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 300, "dur": 4, "args": {"correlation": 11}}
]"#,
    )
    .unwrap();
    let src = trace::Source::path(&path).unwrap();
    let a = analyze(&src, AnalyzeOptions::default()).unwrap().unwrap();
    assert!(
        a.notices.iter().any(|n| n.starts_with(
            "2 GPU event(s) and 0 CPU op(s) last longer than all the steps together (1.000 ms; the longest 5000.000 ms)"
        )),
        "{:?}",
        a.notices
    );
    // One step of 1 ms: the GEMM counts as 1 ms, the late kernel 0.1 ms.
    let ms = |label: &str| {
        let k = a.profile.kernels.iter().find(|k| k.raw_name == label);
        k.map(|k| k.ms_per_step)
    };
    assert_eq!(ms("volta_sgemm_128x64_nn"), Some(1.0));
    assert_eq!(ms("late_kernel"), Some(0.1));
}

/// With no `step/<phase>` range the pass leaves the step-keyed figures
/// to the end; they equal those of the same work under a phase range
/// met first (counted in the pass): a kernel launched before it ran,
/// one whose launch the trace never wrote (placed by time at the very
/// end), a copy and two ops.
#[test]
fn figures_counted_at_the_end_equal_those_counted_in_the_pass() {
    let trace = |phase: &str| {
        format!(
            r#"[
 {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}},{phase}
 {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50}},
 {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {{"correlation": 9}}}},
 {{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {{"correlation": 9}}}},
 {{"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 100, "args": {{"correlation": 77}}}},
 {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 600, "dur": 50}},
 {{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 700, "dur": 20}}
]"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let src = trace::Source::path(&path).unwrap();
        analyze(&src, AnalyzeOptions::default()).unwrap().unwrap().profile
    };
    let at_end = read("end.json", trace(""));
    let in_pass = read(
        "pass.json",
        trace(
            r#"
 {"ph": "X", "cat": "user_annotation", "name": "step/forward", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},"#,
        ),
    );
    let kernels = |p: &Profile| -> Vec<(String, f64, f64)> {
        p.kernels.iter().map(|k| (k.raw_name.clone(), k.ms_per_step, k.count_per_step)).collect()
    };
    let ops = |p: &Profile| -> Vec<(String, f64, f64)> {
        p.ops.iter().map(|o| (o.op.clone(), o.ms_per_step, o.count_per_step)).collect()
    };
    // The trace's own numbers: both kernels (0.3 + 0.1 ms) and both
    // ops (0.05 + 0.02 ms) lie in the one step.
    assert_eq!(at_end.figures.kernels_per_step, 2.0);
    let ms: f64 = kernels(&at_end).iter().map(|k| k.1).sum();
    assert!((ms - 0.4).abs() < 1e-9, "{:?}", kernels(&at_end));
    let ms: f64 = ops(&at_end).iter().map(|o| o.1).sum();
    assert!((ms - 0.07).abs() < 1e-9, "{:?}", ops(&at_end));
    assert_eq!(kernels(&at_end), kernels(&in_pass));
    assert_eq!(ops(&at_end), ops(&in_pass));
    assert_eq!(at_end.figures.kernels_per_step, in_pass.figures.kernels_per_step);
    // Nothing counted in the pass at all: a kernel with no launch,
    // placed when the pass is over, is counted then.
    let alone = read(
        "alone.json",
        r#"[
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 300}
]"#
        .to_string(),
    );
    assert_eq!(alone.figures.kernels_per_step, 1.0);
}

/// Real traces without phase ranges (phases inferred), with memory
/// events (the op at the peak named), and a 2021-style trace whose step
/// marker comes after its work: each read once, counted.
#[test]
fn every_trace_is_read_once() {
    let fixture = |p: &str| {
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces"))
            .join(p)
    };
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.json");
    std::fs::write(
        &late,
        r#"[
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9}},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}
]"#,
    )
    .unwrap();
    for (path, peak_ops) in [
        (fixture("hta_trace_diff_a100_2022/control.json.gz"), false),
        (fixture("kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz"), true),
        (late, false),
    ] {
        let before = trace::passes_on_this_thread();
        let opts = AnalyzeOptions { peak_ops, ..Default::default() };
        let p = analyze(&trace::Source::path(&path).unwrap(), opts).unwrap().unwrap().profile;
        assert_eq!(trace::passes_on_this_thread() - before, 1, "{}", path.display());
        assert_eq!(p.attribution.unwrap().passes, 1);
        assert!(p.figures.kernels_per_step > 0.0);
        if peak_ops {
            assert!(
                p.memory.iter().all(|m| m.peak_op.is_some()),
                "the op at the peak, from the same pass"
            );
        }
    }
}

/// The ops counted by index after the pass (`count_ops`) give the
/// tables that counting each op into them gives, laid out the same:
/// their iteration order decides ties in what reads them. On a real
/// trace without phase ranges (its phases inferred at the end).
#[test]
fn ops_counted_by_index_give_the_tables_counted_one_by_one() {
    let path = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traces/hta_trace_diff_a100_2022/control.json.gz"
    ));
    let mut a = Analyzer::default();
    let src = trace::Source::path(&path).unwrap();
    assert!(matches!(
        trace::read_source(&src, &mut a, &Default::default()).unwrap(),
        Document::Trace(_)
    ));
    a.stage = Stage::Ended;
    let inferred = a.rec.inference.ranges(&a.rec.ranges, a.rec.span, &mut a.rec.phases);
    let inferred = inferred.expect("no phase ranges: phases inferred");
    a.count_again(inferred);
    assert!(a.rec.op_tables.stale);

    let mut one_by_one = OpTables::default();
    let mut places = ranges::PlaceCache::default();
    for op in a.rec.op_records() {
        if a.rec.ranges.in_step_cached(&mut places, op.start) {
            let phase = a.rec.ranges.cpu_phase_cached(&mut places, op.thread, op.start);
            one_by_one.add(op.thread, op.name, phase, op.start, op.dur);
        }
    }
    assert!(one_by_one.ops_by_phase.len() > 100, "{}", one_by_one.ops_by_phase.len());
    let rows = |t: &OpTables| -> Vec<((u16, u32), i64, u64)> {
        t.ops_by_phase.iter().map(|(k, v)| (*k, v.ns, v.count)).collect()
    };
    let cover = |t: &OpTables| -> Vec<(u32, i64, u64)> {
        t.op_cover.iter().map(|(k, u)| (*k, u.total(), u.lost)).collect()
    };
    let phases: std::collections::BTreeSet<u16> =
        one_by_one.ops_by_phase.keys().map(|k| k.0).collect();
    assert!(phases.len() > 1, "{phases:?}");
    // Every phase by index (as `count_ops`), only the first, and none.
    for dense in [16, 1, 0] {
        let by_index = OpTables::count(a.rec.op_records(), &a.rec.ranges, dense);
        assert_eq!(rows(&by_index), rows(&one_by_one), "{dense} phases by index");
        assert_eq!(cover(&by_index), cover(&one_by_one), "{dense} phases by index");
    }
}
