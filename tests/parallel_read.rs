//! The parallel reader gives what one thread gives (docs/analysis.md §1):
//! the same profile, byte for byte in JSON, on every real fixture at any
//! thread count and block size, from `.json` and `.json.gz`; the same
//! result or the same error on traces made to defeat the block cuts
//! (`}, {`, newlines and escaped quotes inside strings, a cut inside a 1 MB
//! string, nested arrays of objects), and on the property tests' mutated
//! real events. Every real trace is read once. A plain file is mapped
//! (src/trace/input.rs), a gzipped one read: comparing the two covers both.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use libreyolo_core::analysis::{Analysed, AnalyzeOptions, analyze};
use libreyolo_core::trace::{self, ReadOptions, Source, parallel};
use proptest::prelude::*;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn inflate(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The profile of `src` as JSON without the input's name, or the error's
/// sentence, read with `threads` threads in blocks of `block` bytes.
fn read(src: &Source, threads: usize, block: usize) -> String {
    match analyze(src, on(threads, block)) {
        Ok(Some(Analysed { profile: p, notices: notes, .. })) => {
            let mut v = serde_json::to_value(&p).unwrap();
            v.as_object_mut().unwrap().remove("trace");
            format!("{}\n{notes:?}", serde_json::to_string_pretty(&v).unwrap())
        }
        Ok(None) => "not a trace".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// A read on `threads` threads in blocks of `block` bytes.
fn reading(threads: usize, block: usize) -> ReadOptions {
    ReadOptions::default().with_threads(threads, block)
}

/// An analysis read so.
fn on(threads: usize, block: usize) -> AnalyzeOptions<'static> {
    AnalyzeOptions { read: reading(threads, block), ..Default::default() }
}

fn file(bytes: &[u8], name: &str) -> (tempfile::TempDir, Source) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    let src = Source::file(&p);
    (dir, src)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn every_fixture_reads_the_same_at_any_thread_count_plain_or_gzipped() {
    for path in fixtures() {
        let gz = Source::file(&path);
        let one = read(&gz, 1, parallel::BLOCK);
        assert!(!one.starts_with("error"), "{}: {one}", path.display());
        let (_dir, plain) = file(&inflate(&path), "t.json");
        for (threads, block) in [
            (1, parallel::BLOCK),
            (2, parallel::BLOCK),
            (7, parallel::BLOCK),
            (2, 4096),
            (7, 65536),
            (3, 777),
        ] {
            assert_eq!(
                read(&plain, threads, block),
                one,
                "{} plain, {threads} threads, blocks of {block}",
                path.display()
            );
        }
        assert_eq!(read(&gz, 7, 8192), one, "{} gzipped, 7 threads", path.display());
    }
}

/// A trace merged from several processes, each device's kernels launched
/// by threads of its own (three ranks of the real DLRM job in one file):
/// the idle account sweeps the processes after the first on whichever
/// thread is free, and every figure is the same at any thread count.
#[test]
fn a_merged_trace_s_processes_are_accounted_the_same_on_any_thread() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/param_dlrm_v100_8rank");
    let mut ranks: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|f| f.unwrap().path()).collect();
    ranks.sort();
    let mut events = Vec::new();
    for rank in &ranks[..3] {
        let v: serde_json::Value = serde_json::from_slice(&inflate(rank)).unwrap();
        events.extend(v["traceEvents"].as_array().unwrap().iter().cloned());
    }
    let merged = serde_json::to_vec(&serde_json::json!({ "traceEvents": events })).unwrap();
    let (_dir, src) = file(&merged, "merged.json");
    let profile = analyze(&src, on(2, parallel::BLOCK)).unwrap().unwrap().profile;
    let idle = profile.idle.expect("an idle account");
    assert_eq!(idle.devices.len(), 3, "{:?}", idle.devices);
    let one = read(&src, 1, parallel::BLOCK);
    for (threads, block) in [(2, parallel::BLOCK), (3, 65536), (2, 4096)] {
        assert_eq!(read(&src, threads, block), one, "{threads} threads, blocks of {block}");
    }
}

#[test]
fn a_real_trace_without_phase_ranges_is_read_once() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces/hta_trace_diff_a100_2022/control.json.gz");
    let (_dir, plain) = file(&inflate(&path), "control.json");
    for threads in [1, 2, 7] {
        let before = trace::passes_on_this_thread();
        let out = read(&plain, threads, 65536);
        assert!(out.contains("\"passes\": 1"), "{out}");
        assert!(out.contains("\"phases_inferred\""), "the trace has no step/<phase> ranges: {out}");
        assert_eq!(trace::passes_on_this_thread() - before, 1, "{threads} threads");
    }
}

/// A trace whose strings hold what the block cuts look for.
fn hostile_strings(long: usize) -> String {
    let mut ev =
        vec![r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100000}"#.to_string()];
    for i in 0..400 {
        let name = match i % 5 {
            0 => r#"aten::a}, {\"ph\": \"X\", \"name\": \"fake\"}, {"#.to_string(),
            1 => r#"aten::b}\n,\n{\"x\""#.to_string(),
            2 => r#"aten::c\\\"}, {"#.to_string(),
            3 if i == 3 => format!("aten::long{}", "}, {".repeat(long / 4)),
            _ => "aten::d".to_string(),
        };
        ev.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {}, "dur": 10, "args": {{"nested": [{{"a": 1}}, {{"b": "}}, {{"}}], "External id": {i}}}}}"#,
            i * 20 + 5
        ));
        ev.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 4, "args": {{"correlation": {i}}}}}"#,
            i * 20 + 6
        ));
        ev.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": 8, "args": {{"correlation": {i}, "stream": 7, "device": 0}}}}"#,
            i % 3,
            i * 20 + 9
        ));
    }
    format!(
        "{{\"schemaVersion\": 1, \"traceEvents\": [\n{}\n], \"traceName\": \"x\"}}",
        ev.join(",\n")
    )
}

#[test]
fn cuts_inside_strings_and_nested_arrays_change_nothing() {
    for long in [64, 1 << 20] {
        let doc = hostile_strings(long);
        let (_dir, src) = file(doc.as_bytes(), "t.json");
        let one = read(&src, 1, parallel::BLOCK);
        assert!(one.contains("\"kernels_per_step\": 400.0"), "{}", &one[..one.len().min(2000)]);
        for (threads, block) in [(2, 64), (3, 200), (7, 1000), (2, 4096), (4, 300_000)] {
            assert_eq!(
                read(&src, threads, block),
                one,
                "{long}-byte string, {threads} threads, blocks of {block}"
            );
        }
    }
}

#[test]
fn broken_traces_fail_with_the_same_sentence() {
    let doc = hostile_strings(64);
    let cut = doc.len() * 2 / 3;
    let mut cases =
        vec![doc[..cut].to_string(), doc.replacen("\"dur\": 10,", "\"dur\": 10,,", 150)];
    cases.push(doc.replacen("\"ts\": 605", "\"ts\": 60 5", 1));
    cases.push(doc.replace("\n],", "\n,],"));
    cases.push(doc.replacen("\"cat\": \"kernel\"", "\"cat\": [\"kernel\"]", 100));
    cases.push(doc.replacen(
        "{\"ph\": \"X\", \"cat\": \"kernel\"",
        "7, {\"ph\": \"X\", \"cat\": \"kernel\"",
        30,
    ));
    for (k, bytes) in cases.iter().enumerate() {
        let (_dir, src) = file(bytes.as_bytes(), "t.json");
        let one = read(&src, 1, parallel::BLOCK);
        for (threads, block) in [(2, 64), (7, 999), (2, 1 << 16)] {
            assert_eq!(
                read(&src, threads, block),
                one,
                "case {k}, {threads} threads, blocks of {block}"
            );
        }
        let (_dir, src) = file(&gzip(bytes.as_bytes()), "t.json.gz");
        assert_eq!(read(&src, 3, 500), one, "case {k} gzipped");
    }
}

/// Real events, from the shared traces (see tests/reader_props.rs).
const SEED: &str = r#"{"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 4, "Input Dims": [[1, 3, 64, 64], [8, 3, 3, 3]], "Input type": ["float", "float"]}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_\"q\"\\x", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9, "grid": [1, 2, 3]}},
 {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 40, "args": {"Total Reserved": 500, "Device Type": 1, "Device Id": 0}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 400, "dur": 10, "args": {"correlation": 11}}
], "traceName": "x"}"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_traces_read_the_same_at_any_thread_count(
        pos in 0..SEED.len(),
        insert in prop_oneof![Just("}, {"), Just("\""), Just("\\"), Just(","), Just("]"), Just("{"), Just("}"), Just("\n"), Just("")],
        cut in any::<bool>(),
        threads in 2usize..8,
        block in 64usize..400,
    ) {
        let mut bytes = SEED.as_bytes()[..pos].to_vec();
        bytes.extend_from_slice(insert.as_bytes());
        if !cut {
            bytes.extend_from_slice(&SEED.as_bytes()[pos..]);
        }
        // Many copies of the events, so that blocks cut them.
        let doc = String::from_utf8_lossy(&bytes).replace("\n {", "\n {\"ph\": \"X\", \"name\": \"pad\", \"ts\": 1, \"dur\": 1}, {");
        let (_dir, src) = file(doc.as_bytes(), "t.json");
        prop_assert_eq!(read(&src, threads, block), read(&src, 1, parallel::BLOCK));
    }
}

/// The A100 trace without phase ranges as stored (gzipped) and inflated
/// into a temporary folder, which lives as long as the first value.
fn a100_plain_and_gz() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let gz = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces/hta_trace_diff_a100_2022/control.json.gz");
    let (dir, _) = file(&inflate(&gz), "control.json");
    let plain = dir.path().join("control.json");
    (dir, plain, gz)
}

/// The explorer's read (`LoadOptions::timeline_index`) builds the
/// Timeline's step index in the pass that analyses the trace: one pass,
/// the profile of a plain read, and steps that open as from an index pass
/// of their own — plain and gzipped, on one thread and on several.
#[test]
fn the_explorer_reads_a_trace_once_for_the_lenses_and_the_timeline() {
    use libreyolo_core::analysis::timeline;
    use libreyolo_core::input::{self, LoadOptions, Loaded};
    let (_dir, plain, gz) = a100_plain_and_gz();
    let json = |l: &Loaded| serde_json::to_string(&l.input.profile).unwrap();
    for path in [&plain, &gz] {
        for threads in [1, 2] {
            let read = reading(threads, 65536);
            let plain_load = LoadOptions { read: read.clone(), ..LoadOptions::default() };
            let alone = input::load(path, plain_load.clone()).unwrap();
            let before = trace::passes_on_this_thread();
            let opts = LoadOptions { timeline_index: true, ..plain_load };
            let both = input::load(path, opts).unwrap();
            let at = format!("{}, {threads} threads", path.display());
            assert_eq!(trace::passes_on_this_thread() - before, 1, "{at}");
            assert_eq!(json(&both), json(&alone), "{at}");
            let ix = both.index.expect("an index");
            let own = timeline::index(path, &read).unwrap();
            assert_eq!((ix.events, ix.checkpoints()), (own.events, own.checkpoints()), "{at}");
            assert_eq!(ix.steps, own.steps, "{at}");
            assert!(ix.steps.len() > 2, "{at}");
            for step in [0, ix.steps.len() / 2, ix.steps.len() - 1] {
                let got = timeline::open_step(&ix, step).unwrap();
                assert_eq!(got, timeline::open_step(&own, step).unwrap(), "{at}, step {step}");
            }
        }
    }
    // A reader's plain load builds none.
    assert!(input::load(&plain, LoadOptions::default()).unwrap().index.is_none());
}

/// A caller that draws its own progress (the explorer) sees a load move
/// its bar to the file's size, whichever way the file is read: mapped on
/// one thread or several, or gzipped with or without the Timeline's index
/// (inflated on another thread). The loader thread's read(2) count, which
/// the explorer used before, stays at zero on the first and misses the
/// inflating thread's reads on the others.
#[test]
fn a_load_moves_the_callers_progress_bar_to_the_end_of_the_file() {
    use libreyolo_core::input::{self, LoadOptions};
    use libreyolo_core::trace::Progress;
    use libreyolo_core::trace::input::ProgressBar;
    let (_dir, plain, gz) = a100_plain_and_gz();
    for path in [&plain, &gz] {
        let len = std::fs::metadata(path).unwrap().len();
        for (threads, index) in [(1, false), (2, false), (2, true)] {
            let bar = ProgressBar::hidden();
            let read = reading(threads, 65536).with_progress(Progress::To(bar.clone()));
            let opts = LoadOptions { timeline_index: index, read, ..LoadOptions::default() };
            input::load(path, opts).unwrap();
            let at = format!("{}, {threads} threads, index {index}", path.display());
            assert_eq!(bar.length(), Some(len), "{at}");
            assert_eq!(bar.position(), len, "{at}");
        }
    }
}

/// A broken `.json.gz` fails with the same sentence whether the explorer
/// reads it (seekable gzip, taking checkpoints for the Timeline) or a
/// reader command does (flate2): a bad checksum, a cut file, a bad header.
#[test]
fn a_broken_gzip_reads_the_same_in_the_explorer() {
    use libreyolo_core::input::{self, LoadOptions};
    let (dir, _, gz) = a100_plain_and_gz();
    let good = std::fs::read(&gz).unwrap();
    let mut crc = good.clone();
    let k = crc.len() - 8;
    crc[k] ^= 0xff;
    let mut header = good.clone();
    header[2] = 7;
    for (what, bytes) in
        [("checksum", crc), ("truncated", good[..good.len() / 2].to_vec()), ("header", header)]
    {
        let path = dir.path().join(format!("{what}.json.gz"));
        std::fs::write(&path, bytes).unwrap();
        let error = |timeline_index| {
            let opts = LoadOptions { timeline_index, ..LoadOptions::default() };
            input::load(&path, opts).map(drop).unwrap_err().to_string()
        };
        let (reader, explorer) = (error(false), error(true));
        assert_eq!(explorer, reader, "{what}");
        assert!(reader.contains("gzip"), "{what}: {reader}");
    }
}
