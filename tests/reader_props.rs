//! Property tests of the trace reader and the profile loader: whatever
//! bytes they are given (a real trace cut, flipped, spliced, nested deep,
//! its numbers made absurd, streamed in odd chunks), they return a profile
//! or an error, never panic, never hang, never overflow the stack, and
//! never print a negative or infinite time.
//!
//! Seeds: three traces built from real events of the shared traces (a
//! current Kineto trace, a 2021 one with string tids and its step marker
//! after the work, a ROCm one with a graph launch) and a profile. CI runs a
//! fixed number of cases: [`CASES`] per property, 8 properties, so 1,600
//! generated inputs (under a second). Longer runs on demand:
//! `LIBREYOLO_FUZZ_CASES=100000 cargo test -p libreyolo-core --test
//! reader_props --release`. Run so far: 5,000 per property (40,000 inputs,
//! 10 s of a dev build), no failure.

use std::io::{Read, Write};

use libreyolo_core::analysis::analyze;
use libreyolo_core::profile::{self, Profile};
use libreyolo_core::trace::Source;
use proptest::prelude::*;

/// Cases per property in CI (see the module note).
const CASES: u32 = 200;

fn cases() -> u32 {
    std::env::var("LIBREYOLO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES)
}

const VALID: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 1000000}],
"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "user_annotation", "name": "step/forward", "pid": 1, "tid": 1, "ts": 5, "dur": 500},
 {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 4}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "ac2g"},
 {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_\"q\"\\x", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9, "grid": [1, 2, 3]}},
 {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 40, "args": {"Total Reserved": 500, "Device Type": 1, "Device Id": 0}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 400, "dur": 10, "args": {"correlation": 11}}
]}"#;

/// kineto_resnet50_v100_2021jun's shapes: a bare array, `Operator` /
/// `Runtime` / `Kernel`, tids as strings, epoch-µs timestamps, and the step
/// marker written after the work it encloses (two passes).
const OLD_2021: &str = r#"[
 {"ph": "X", "cat": "Operator", "name": "aten::empty", "pid": 25738, "tid": "25738", "ts": 1623142623529000, "dur": 25, "args": {"Device": 25738, "External id": 2, "Trace name": "PyTorch Profiler", "Trace iteration": 0, "Input Dims": [[], [], [], [], [], []]}},
 {"ph": "i", "s": "t", "name": "[memory]", "pid": 25738, "tid": 25738, "ts": 1623142623529010, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 4}},
 {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 25738, "tid": "25738", "ts": 1623142623529088, "dur": 2022, "args": {"cbid": 41, "correlation": 34417, "external id": 537, "external ts": 1623142623529071}},
 {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 1623142623529248, "dur": 1940, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 34417, "external id": 537, "bytes": 19267584}},
 {"ph": "f", "id": 34417, "pid": 0, "tid": "stream 7", "ts": 1623142623529248, "cat": "async", "name": "launch", "bp": "e"},
 {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 25738, "tid": "25738", "ts": 1623142623531500, "dur": 9, "args": {"cbid": 211, "correlation": 34441, "external id": 544}},
 {"ph": "X", "cat": "Kernel", "name": "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)", "pid": 0, "tid": "stream 7", "ts": 1623142623531625, "dur": 2, "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 34441, "external id": 544, "registers per thread": 38, "blocks per SM": 0.625, "grid": [50, 1, 1], "block": [256, 1, 1]}},
 {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 1623142623579729, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 38304, "bytes": 128000}},
 {"name": "process_name", "ph": "M", "ts": 1623142623460016, "pid": 25738, "tid": 0, "args": {"name": "python"}},
 {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 25738, "tid": "25738", "ts": 1623142623528000, "dur": 60000, "args": {"External id": 1}},
 {"ph": "X", "cat": "Trace", "ts": 1623142623460016, "dur": 1065723, "pid": "Traces", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}
]"#;

/// hta_amd_mi250_rocm62 / tracelens_vllm_cuda_graph_capture shapes: ROCm
/// keys, Kineto's `trace_id` and `traceName`, a backward op and an
/// optimizer range (training evidence), a graph launch owning two kernels.
const ROCM: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 2, "name": "AMD Instinct MI250X", "totalGlobalMem": 68702699520, "warpSize": 64}],
"hip_runtime_version": 60242134, "trace_id": "3C1F2B", "record_shapes": 1,
"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 597913, "tid": 597913, "ts": 4203669603187.439, "dur": 9288.291, "args": {"External id": 1, "Record function id": 1, "Ev Idx": 34}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 597913, "tid": 597913, "ts": 4203669603438.301, "dur": 60.204, "args": {"External id": 8, "stream": "0x0", "cid": 153, "correlation": 117, "size": "2560", "kind": "1"}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 2, "tid": 0, "ts": 4203669603454.206, "dur": 22.441, "args": {"External id": 8, "device": 2, "stream": 0, "correlation": 117, "kind": "HtoD"}},
 {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MseLossBackward0", "pid": 597913, "tid": 598009, "ts": 4203669604595.407, "dur": 340.024, "args": {"External id": 513, "Sequence number": 7, "Fwd thread id": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 597913, "tid": 597913, "ts": 4203669605000.5, "dur": 12.5, "args": {"cid": 60, "correlation": 33926}},
 {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)", "pid": 2, "tid": 1, "ts": 4203669605016.281, "dur": 2.239, "args": {"External id": 45085, "device": 2, "stream": 1, "correlation": 33926, "kind": "Dispatch Kernel", "grid": [1, 1, 1]}},
 {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_SB_MT64x64x16_MI32x32x2x1_SN", "pid": 2, "tid": 1, "ts": 4203669605020.0, "dur": 40.0, "args": {"device": 2, "stream": 1, "correlation": 33926}},
 {"ph": "X", "cat": "gpu_user_annotation", "name": "Optimizer.step#SGD.step", "pid": 2, "tid": 0, "ts": 4203669612357.611, "dur": 8.483, "args": {"External id": 35}},
 {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 597913, "tid": 597913, "ts": 4203669612300.0, "dur": 60.0, "args": {}},
 {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 4203669603018.756}
], "traceName": "/tmp/rocm/profile_trace.json"}"#;

const TRACES: [&str; 3] = [VALID, OLD_2021, ROCM];

/// A profile in the shape both implementations write (trimmed).
const PROFILE: &str = r#"{"schema": "libreyolo.profile.analysis/v1", "mode": "inference", "trace": "runs/a/infer/profile_trace.json",
 "model": "LibreYOLO9t.pt", "config": {"batch": 1, "imgsz": 640, "device": "cpu"}, "bound": "compute",
 "bound_why": "forward dominates the step (124.82 ms)", "step_ms": 241.403, "img_per_s": 4.14, "dataload_ms": 0.0,
 "dataload_frac": 0.0, "gpu_util": 0.0, "memory_pressure": false, "launches_per_step": 0.0, "kernels_per_step": 0.0,
 "window": {"wall_ms": 1812.9, "real_steps": 6},
 "latency": {"p50_ms": 135.751, "p90_ms": 166.247, "p99_ms": 1152.392, "mean_ms": 241.403, "min_ms": 120.558, "max_ms": 1152.392, "n": 10},
 "stages_ms": {"preprocess": 9.051, "forward": 124.817, "postprocess": 0.595},
 "metrics": {"step_ms": 241.403}, "categories": [{"name": "gemm / conv", "pct": 80.0, "ms_per_step": 1.5}],
 "phases": [{"phase": "forward", "gpu_ms_per_step": 0.0, "wall_ms_per_step": 124.817, "kernels_per_step": 0, "ops_per_step": 826.17}],
 "kernels": [{"kernel": "k", "raw_name": "k", "category": "gemm / conv", "tensorcore": false, "ms_per_step": 1.5, "pct_of_gpu": 100.0, "count_per_step": 2.0}],
 "ops": [{"op": "aten::conv2d", "ms_per_step": 80.1, "pct_of_cpu_ops": 40.0, "count_per_step": 60.0}], "warnings": []}"#;

fn load(bytes: &[u8]) -> Result<profile::Input, libreyolo_core::Error> {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    libreyolo_core::input::load(f.path().to_str().unwrap(), Default::default()).map(|l| l.input)
}

/// Every time a profile states is finite and not negative.
fn sane(p: &Profile) -> Result<(), String> {
    let mut times = vec![
        ("step_ms", p.figures.step_ms),
        ("gpu_busy_ms_per_step", p.figures.gpu_busy_ms_per_step),
        ("mean_kernel_us", p.figures.mean_kernel_us),
    ];
    times.extend(p.kernels.iter().map(|k| ("kernel ms_per_step", k.ms_per_step)));
    times.extend(p.ops.iter().map(|o| ("op ms_per_step", o.ms_per_step)));
    times.extend(p.phases.iter().map(|r| ("phase gpu_ms_per_step", r.gpu_ms_per_step)));
    match times.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
        Some((what, v)) => Err(format!("{what} = {v}")),
        None => Ok(()),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A pipe that hands out the bytes in the given chunk sizes (cycled).
struct Chunks {
    bytes: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    k: usize,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = self.sizes[self.k % self.sizes.len()].max(1);
        self.k += 1;
        let n = want.min(buf.len()).min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The profile as JSON, without the field that names the input.
fn comparable(p: &Profile) -> serde_json::Value {
    let mut v = serde_json::to_value(p).unwrap();
    v.as_object_mut().unwrap().remove("trace");
    v
}

#[test]
fn the_valid_trace_reads() {
    let input = load(VALID.as_bytes()).unwrap();
    let p = input.profile;
    assert_eq!(p.figures.window.real_steps, 1);
    assert_eq!(p.figures.kernels_per_step, 1.0);
    assert_eq!(p.figures.tensorcore_pct, 100.0);
    assert_eq!(p.phases[0].phase, "forward");
    assert_eq!(p.phases[0].kernels_per_step, 1.0);
}

#[test]
fn every_seed_reads() {
    let old = load(OLD_2021.as_bytes()).unwrap().profile;
    assert_eq!(
        old.attribution.as_ref().unwrap().passes,
        1,
        "the step marker comes last: one pass still"
    );
    assert_eq!(old.figures.kernels_per_step, 1.0);
    let rocm = load(ROCM.as_bytes()).unwrap().profile;
    assert_eq!(rocm.mode, Some(profile::Mode::Training));
    assert_eq!(rocm.extras.graph_launches_per_step, Some(1.0));
    assert_eq!(rocm.figures.kernels_per_step, 2.0);
    assert_eq!(rocm.devices[0].vendor.as_deref(), Some("AMD"));
    let p = load(PROFILE.as_bytes()).unwrap();
    assert!(!p.from_trace);
    assert_eq!(p.profile.figures.step_ms, 241.403);
    for t in TRACES {
        sane(&load(t.as_bytes()).unwrap().profile).unwrap();
    }
}

fn seed() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(VALID), Just(OLD_2021), Just(ROCM), Just(PROFILE)]
}

/// A seed and a byte offset inside it.
fn seed_at() -> impl Strategy<Value = (&'static str, usize)> {
    seed().prop_flat_map(|s| (Just(s), 0..s.len()))
}

/// Replacement numbers a hostile or broken writer puts in a trace.
const ABSURD: [&str; 12] = [
    "1e308",
    "-1e308",
    "1e26",
    "-1e26",
    "-0",
    "9007199254740993",
    "NaN",
    "-Infinity",
    "\"1e5\"",
    "1e-320",
    "18446744073709551616",
    "-5",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn truncated_inputs_never_panic((s, cut) in seed_at()) {
        let r = load(&s.as_bytes()[..cut]);
        // Only a cut that still ends the document can succeed.
        if cut < s.trim_end().len() - 1 {
            prop_assert!(r.is_err());
        }
    }

    #[test]
    fn corrupted_bytes_never_panic((s, pos) in seed_at(), byte in any::<u8>()) {
        let mut bytes = s.as_bytes().to_vec();
        bytes[pos] = byte;
        // Times read from a trace are checked; a profile file says what it says.
        if let Ok(input) = load(&bytes).map_err(|e| e.to_string()).and_then(|i| if i.from_trace { Ok(i) } else { Err(String::new()) }) {
            prop_assert!(sane(&input.profile).is_ok(), "{:?}", sane(&input.profile));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = load(&bytes);
    }

    #[test]
    fn spliced_inputs_never_panic((s, a) in seed_at(), b in any::<prop::sample::Index>()) {
        let b = b.index(s.len());
        let (a, b) = (a.min(b), a.max(b));
        let mut bytes = s.as_bytes()[..a].to_vec();
        bytes.extend_from_slice(&s.as_bytes()[b..]);
        let _ = load(&bytes);
    }

    #[test]
    fn deep_nesting_anywhere_never_overflows((s, pos) in seed_at(), depth in 1usize..20_000, curly in any::<bool>()) {
        let (open, close) = if curly { ("{\"a\":", "}") } else { ("[", "]") };
        let mut bytes = s.as_bytes()[..pos].to_vec();
        bytes.extend_from_slice(open.repeat(depth).as_bytes());
        bytes.extend_from_slice(if curly { b"1" } else { b"" });
        bytes.extend_from_slice(close.repeat(depth).as_bytes());
        bytes.extend_from_slice(&s.as_bytes()[pos..]);
        // An abort (stack overflow) fails the whole test binary.
        if let Ok(input) = load(&bytes) {
            prop_assert!(!input.from_trace || sane(&input.profile).is_ok());
        }
    }

    #[test]
    fn absurd_numbers_give_no_negative_times(s in prop_oneof![Just(VALID), Just(OLD_2021), Just(ROCM)], which in any::<prop::sample::Index>(), n in 0..ABSURD.len()) {
        // Replace one number of the trace (a ts, dur, id…) with an absurd one.
        let spans: Vec<(usize, usize)> = regex_lite_numbers(s);
        let (a, b) = spans[which.index(spans.len())];
        let bytes = format!("{}{}{}", &s[..a], ABSURD[n], &s[b..]);
        if let Ok(input) = load(bytes.as_bytes()) {
            prop_assert!(sane(&input.profile).is_ok(), "{} -> {:?}", &s[a..b], sane(&input.profile));
        }
    }

    #[test]
    fn a_stream_in_any_chunks_reads_as_the_file(s in prop_oneof![Just(VALID), Just(OLD_2021), Just(ROCM)], sizes in proptest::collection::vec(1usize..4096, 1..8), gz in any::<bool>(), bom in any::<bool>()) {
        let mut bytes = if bom { [&b"\xEF\xBB\xBF"[..], s.as_bytes()].concat() } else { s.as_bytes().to_vec() };
        if gz {
            bytes = gzip(&bytes);
        }
        let file = load(&bytes).unwrap().profile;
        let src = Source::stream("pipe", Box::new(Chunks { bytes, at: 0, sizes, k: 0 }));
        let streamed = analyze(&src, Default::default()).unwrap().unwrap().profile;
        prop_assert_eq!(comparable(&streamed), comparable(&file));
    }

    #[test]
    fn profiles_with_unknown_fields_and_versions_load(extra in "[a-z_]{1,12}", value in prop_oneof![Just("1"), Just("[[1]]"), Just("{\"a\": null}"), Just("\"x\"")], version in 1u32..1000) {
        let body = PROFILE.replacen("{", &format!("{{\"{extra}\": {value}, "), 1).replace("analysis/v1", &format!("analysis/v{version}"));
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(body.as_bytes()).unwrap();
        let libreyolo_core::input::Loaded { input, notices, .. } = libreyolo_core::input::load(f.path().to_str().unwrap(), Default::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(input.profile.figures.step_ms, 241.403);
        prop_assert_eq!(notices.len(), usize::from(version != 1));
    }
}

/// Byte spans of the bare numbers in `s` (outside strings).
fn regex_lite_numbers(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}
