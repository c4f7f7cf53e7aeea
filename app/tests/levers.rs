//! Levers (docs/analysis.md §16) on every real fixture: ranked by the
//! saving the step model projects, each saving the one its what-if gives,
//! and none that the trace contradicts — checked against facts this test
//! reads from the raw JSON itself.

mod common;

use std::path::Path;

use common::{read_json, trace_events as events, traces};
use serde_json::Value;

fn names_of(evs: &[Value], cats: &[&str]) -> Vec<String> {
    evs.iter()
        .filter(|e| cats.contains(&e["cat"].as_str().unwrap_or("")))
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect()
}

fn summary(t: &Path) -> Value {
    common::json(&["summary", t.to_str().unwrap()])
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// A what-if's flags as arguments: words, or 'quoted words'.
fn words(flags: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in flags.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => out.extend((!cur.is_empty()).then(|| std::mem::take(&mut cur))),
            c => cur.push(c),
        }
    }
    out.extend((!cur.is_empty()).then_some(cur));
    out
}

#[test]
fn levers_are_ranked_by_the_saving_their_what_if_gives() {
    let mut seen = 0;
    for t in traces() {
        let s = summary(&t);
        let name = t.display().to_string();
        let Some(levers) = s["levers"].as_array() else { continue };
        seen += levers.len();
        for w in levers.windows(2) {
            assert!(f(&w[0]["saved_ms_per_step"]) >= f(&w[1]["saved_ms_per_step"]), "{name}");
        }
        let scenarios = s["step_model"]["scenarios"].as_array().unwrap();
        for l in levers {
            let flags = l["what_if"].as_str().unwrap();
            let saves = f(&l["saved_ms_per_step"]);
            assert!(saves > 0.0, "{name}: {l}");
            assert!(!l["evidence"].as_str().unwrap().is_empty(), "{name}: {l}");
            // The same what-if asked of `what-if`: the same saving.
            let want = match scenarios.iter().find(|r| r["flags"] == flags) {
                Some(r) => f(&r["saved_ms_per_step"]),
                None => {
                    let mut args = vec!["what-if", t.to_str().unwrap()];
                    let words = words(flags);
                    args.extend(words.iter().map(String::as_str));
                    f(&common::json(&args)["saved_ms_per_step"])
                }
            };
            assert!((saves - want).abs() < 0.0015, "{name}: {flags} {saves} vs {want}");
        }
    }
    assert!(seen >= 20, "levers on the fixtures: {seen}");
}

/// No fixture gets a lever its own trace contradicts.
#[test]
fn no_lever_the_trace_contradicts() {
    for t in traces() {
        let s = summary(&t);
        let name = t.display().to_string();
        let evs = events(&read_json(&t));
        let runtime = names_of(&evs, &["cuda_runtime", "cuda_driver", "Runtime"]);
        let host = names_of(&evs, &["cpu_op", "Operator", "user_annotation"]);
        let kernels: Vec<(String, f64)> = evs
            .iter()
            .filter(|e| matches!(e["cat"].as_str(), Some("kernel" | "Kernel")))
            .map(|e| {
                (e["name"].as_str().unwrap_or("").to_lowercase(), e["dur"].as_f64().unwrap_or(0.0))
            })
            .collect();
        let kinds: Vec<&str> = s["levers"]
            .as_array()
            .map(|a| a.iter().map(|l| l["lever"].as_str().unwrap()).collect())
            .unwrap_or_default();
        let why = s["bound_why"].as_str().unwrap();

        let graphs = runtime.iter().any(|n| n.contains("GraphLaunch"));
        if graphs {
            assert!(
                !kinds.contains(&"cuda-graphs") && !kinds.contains(&"reduce-overhead"),
                "{name}"
            );
        }
        let compiled = host.iter().any(|n| {
            n.starts_with("Torch-Compiled Region")
                || n.starts_with("CompiledFunction")
                || n.starts_with("## Call CompiledFxGraph")
        });
        if compiled {
            assert!(!kinds.contains(&"torch-compile") && !kinds.contains(&"cuda-graphs"), "{name}");
        }
        // A compiled region entered from its cache (nothing compiles in
        // the window: no Dynamo/Inductor compile ranges) costs its entry
        // every step: not start-up work to warm up before the window.
        let compiling = host.iter().any(|n| {
            n.contains("compile_fx")
                || n.contains("_compile.compile_inner")
                || n.contains("autotune")
        });
        if compiled && !compiling {
            for l in s["levers"].as_array().into_iter().flatten() {
                let ev = l["evidence"].as_str().unwrap();
                let in_region = ev.contains("in `Torch-Compiled Region");
                assert!(!(l["lever"] == "warm-up" && in_region), "{name}: {l}");
            }
        }
        let sdpa = host.iter().any(|n| n.contains("scaled_dot_product"));
        let eager = host.iter().any(|n| n.ends_with("softmax"))
            && host.iter().any(|n| n == "aten::bmm" || n == "aten::baddbmm");
        if kinds.contains(&"sdpa") {
            assert!(eager && !sdpa, "{name}: SDPA lever without eager attention");
        }
        if kinds.contains(&"dataloader-workers") {
            assert!(host.iter().any(|n| n.contains("_SingleProcessDataLoaderIter")), "{name}");
        }
        // Matrix work in 16 bits already (by the kernels' own names): no AMP.
        let matrix = |k: &str| k.contains("gemm") || k.contains("cijk_") || k.contains("xmma");
        let total: f64 = kernels.iter().filter(|(k, _)| matrix(k)).map(|(_, d)| d).sum();
        let half: f64 = kernels
            .iter()
            .filter(|(k, _)| {
                matrix(k)
                    && (k.contains("bf16")
                        || k.contains("f16")
                        || k.contains("_bbs_")
                        || k.contains("_b_bs_"))
            })
            .map(|(_, d)| d)
            .sum();
        if total > 0.0 && half / total > 0.5 {
            assert!(!why.contains("AMP"), "{name}: AMP on 16-bit matrix work: {why}");
        }
        let convs = kernels
            .iter()
            .any(|(k, _)| k.contains("conv") || k.contains("fprop") || k.contains("igemm"));
        if !convs {
            assert!(!why.contains("channels-last") && !kinds.contains(&"channels-last"), "{name}");
        }
    }
}

/// TimeSformer's attention is eager (softmax between matmuls): SDPA is a
/// lever worth its softmax kernels' time, less what the fused kernel still
/// spends on the softmax's arithmetic — its FLOPs (5 per element of the
/// softmax ops' inputs, docs/analysis.md §13.1) at the H100 SXM's 67
/// TFLOP/s vector fp32 peak (NVIDIA's H100 datasheet) — all read from the
/// raw trace here; said as an upper bound.
#[test]
fn eager_attention_gets_sdpa_worth_its_softmax_less_its_arithmetic() {
    let t = common::fixtures().join(
        "traces/tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    );
    let evs = events(&read_json(&t));
    let softmax_ms: f64 = evs
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter(|e| e["name"].as_str().is_some_and(|n| n.to_lowercase().contains("softmax")))
        .map(|e| e["dur"].as_f64().unwrap())
        .sum::<f64>()
        / 1000.0;
    // One ProfilerStep: per step is the window. `aten::softmax` calls
    // `aten::_softmax`: the inner op's inputs, once.
    let elements: f64 = evs
        .iter()
        .filter(|e| e["cat"] == "cpu_op" && e["name"] == "aten::_softmax")
        .map(|e| {
            e["args"]["Input Dims"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_f64().unwrap())
                .product::<f64>()
        })
        .sum();
    let gflop = 5.0 * elements / 1e9;
    let kept_ms = gflop / 67.0;
    // Rounded up to the flags' 3 decimals: the saving stays within the cap.
    let scale = (kept_ms / softmax_ms * 1e3).ceil() / 1e3;
    assert!(scale > 0.0 && scale < 0.05, "{scale}");
    let s = summary(&t);
    let l = s["levers"].as_array().unwrap().iter().find(|l| l["lever"] == "sdpa").unwrap();
    assert_eq!(l["what_if"], format!("--grep 'softmax' --scale {scale:.3}"), "{l}");
    let saves = f(&l["saved_ms_per_step"]);
    // The GPU is busy from the first kernel on: the softmax kernels cut to
    // their arithmetic shorten the step by nearly all of the rest, and
    // never by more.
    let rest = softmax_ms * (1.0 - scale);
    assert!(saves <= rest + 0.001 && saves >= 0.95 * rest, "{saves} vs {rest}");
    assert!(saves <= softmax_ms - kept_ms, "{saves}: past the cap, {softmax_ms} less {kept_ms}");
    let evidence = l["evidence"].as_str().unwrap();
    for said in [
        format!("{softmax_ms:.2} ms/step of softmax kernels"),
        format!("their {gflop:.2} GFLOP/step still take at least {kept_ms:.2} ms/step"),
        "so the softmax saves at most the rest".to_string(),
        // The matmuls' part is not in the figure, and it says so.
        "so the change can save more".to_string(),
    ] {
        assert!(evidence.contains(&said), "{said}: {evidence}");
    }
}

/// TimeSformer on an MI300X converts its input on the host before the
/// first kernel (`aten::to` of the 5-D video tensor, found here in the raw
/// trace): a cast every step repeats, so the lever is to prepare the input
/// on the GPU, not to warm up. The MI250 trace's time before its first
/// kernel is in launch calls loading GPU code: warm-up stays.
#[test]
fn a_host_cast_before_the_first_kernel_is_input_work_not_warm_up() {
    let t = common::fixtures().join(
        "traces/tracelens_mi300_inference/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    );
    let evs = events(&read_json(&t));
    let first_kernel =
        evs.iter().filter(|e| e["cat"] == "kernel").map(|e| f(&e["ts"])).fold(f64::MAX, f64::min);
    let cast_ms: f64 = evs
        .iter()
        .filter(|e| e["cat"] == "cpu_op" && e["name"] == "aten::to")
        .filter(|e| f(&e["ts"]) + f(&e["dur"]) <= first_kernel)
        .map(|e| f(&e["dur"]))
        .fold(0.0, f64::max)
        / 1000.0;
    assert!(cast_ms > 10.0, "{cast_ms} ms");
    let s = summary(&t);
    let levers = s["levers"].as_array().unwrap();
    let l = levers.iter().find(|l| l["lever"] == "input-on-gpu").expect("input-on-gpu");
    assert!(levers.iter().all(|l| l["lever"] != "warm-up"), "{levers:?}");
    let evidence = l["evidence"].as_str().unwrap();
    assert!(evidence.contains("`aten::to > aten::copy_`"), "{evidence}");
    let saves = f(&l["saved_ms_per_step"]);
    assert!(saves >= 0.9 * cast_ms, "{saves} vs {cast_ms} ms");

    let mi250 = common::fixtures()
        .join("traces/hta_amd_mi250_rocm62/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let s = summary(&mi250);
    let kinds: Vec<&str> =
        s["levers"].as_array().unwrap().iter().filter_map(|l| l["lever"].as_str()).collect();
    assert!(kinds.contains(&"warm-up") && !kinds.contains(&"input-on-gpu"), "{kinds:?}");
}

/// The ResNet-50 V100 trace loads in the loop's process: the DataLoader
/// lever says workers first, and it is the largest.
#[test]
fn a_single_process_loader_gets_workers_first() {
    let t = common::fixtures()
        .join("traces/kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz");
    let s = summary(&t);
    let first = &s["levers"][0];
    assert_eq!(first["lever"], "dataloader-workers", "{}", s["levers"]);
    assert!(first["evidence"].as_str().unwrap().contains("_SingleProcessDataLoaderIter"));
    let saved = format!("`dataloader-workers` −{:.3} ms/step", f(&first["saved_ms_per_step"]));
    assert!(s["bound_why"].as_str().unwrap().contains(&saved), "{saved}: {}", s["bound_why"]);
}

/// Where the trace supports levers, the verdict names them in their
/// ranked order, each with its saving: the first is the largest.
#[test]
fn the_verdict_names_the_largest_lever_first() {
    let mut named = 0;
    for t in traces() {
        let s = summary(&t);
        let Some(levers) = s["levers"].as_array().filter(|l| !l.is_empty()) else { continue };
        let why = s["bound_why"].as_str().unwrap();
        let at = |l: &Value| {
            let said = format!(
                "`{}` −{:.3} ms/step ({:.1}%",
                l["lever"].as_str().unwrap(),
                f(&l["saved_ms_per_step"]),
                f(&l["saved_pct"])
            );
            why.find(&said).unwrap_or_else(|| panic!("{}: {said} not in {why}", t.display()))
        };
        let first = at(&levers[0]);
        if let Some(second) = levers.get(1) {
            assert!(first < at(second), "{}", t.display());
        }
        named += 1;
    }
    assert!(named >= 10, "{named}");
}

/// The A100 control trace runs its GEMMs in TF32: AMP's figure is the
/// GEMM/conv work at the same share of its roofline with bf16's peak and
/// half the bytes, worked out here from the profile's roofline figures.
#[test]
fn tf32_matrix_work_gets_amp_from_its_roofline() {
    let t = common::fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let s = summary(&t);
    let e = &s["efficiency"];
    assert_eq!(e["matrix"]["format"], "tf32");
    let g = e["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["category"] == "gemm / conv")
        .unwrap();
    let (flops, bytes) = (f(&g["gflop_per_step"]), f(&g["gb_per_step"]));
    let (tf32, bf16, bw) =
        (f(&e["peak_tflops"]["tf32"]), f(&e["peak_tflops"]["bf16"]), f(&e["peak_tbps"]));
    let now = (flops / tf32).max(bytes / bw);
    let then = (flops / bf16).max(bytes / 2.0 / bw);
    let gemm_ms =
        s["categories"].as_array().unwrap().iter().find(|c| c["name"] == "gemm / conv").unwrap();
    let covered = (f(&g["modelled_ms_per_step"]) / f(&gemm_ms["ms_per_step"])).min(1.0);
    let scale = 1.0 - covered * (1.0 - then / now);
    let amp =
        s["levers"].as_array().unwrap().iter().find(|l| l["lever"] == "amp").expect("an AMP lever");
    assert_eq!(amp["what_if"], format!("--remove-category 'gemm / conv' --scale {scale:.3}"));
    // bf16-trace fixtures never get one.
    for t in traces() {
        let s = summary(&t);
        let lead = &s["facts"]["matrix_precision"][0]["precision"];
        if lead == "bf16" || lead == "fp16" {
            let kinds = s["levers"].as_array().cloned().unwrap_or_default();
            assert!(!kinds.iter().any(|l| l["lever"] == "amp"), "{}", t.display());
        }
    }
}

/// The intervals in both `a` and `b` (each merged first).
fn both(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let merged = |v: &[(f64, f64)]| {
        let mut v = v.to_vec();
        v.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut out: Vec<(f64, f64)> = Vec::new();
        for (s, e) in v {
            match out.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    };
    let (a, b) = (merged(a), merged(b));
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if e > s {
            out.push((s, e));
        }
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    out
}

#[test]
fn a_sync_waiting_for_a_copy_is_said_to_copy() {
    // ResNet-50's syncs wait for host-to-device copies: under them no
    // kernel runs, but the copy engine works (audit M11). From the raw
    // events: sync calls ∩ copies ∩ no kernel, inside the steps.
    let t = common::first_trace("kineto_resnet50_v100_2021jun");
    let evs = events(&read_json(&t));
    let truth = common::truth(&t);
    let spans = |keep: &dyn Fn(&Value) -> bool| -> Vec<(f64, f64)> {
        evs.iter()
            .filter(|e| e["ph"] == "X" && keep(e))
            .map(|e| (f(&e["ts"]), f(&e["ts"]) + f(&e["dur"])))
            .collect()
    };
    let kernels: Vec<(f64, f64)> = truth.spans.iter().map(|(_, _, s, e)| (*s, *e)).collect();
    let mut idle = Vec::new();
    for &(s, e) in &truth.windows {
        let mut at = s;
        for (k0, k1) in both(&kernels, &[(s, e)]) {
            if k0 > at {
                idle.push((at, k0));
            }
            at = at.max(k1);
        }
        if e > at {
            idle.push((at, e));
        }
    }
    let syncs =
        spans(&|e| e["cat"] == "Runtime" && e["name"].as_str().unwrap().contains("Synchronize"));
    let copies = spans(&|e| matches!(e["cat"].as_str(), Some("Memcpy" | "Memset")));
    let per_step = |iv: &[(f64, f64)]| common::union_len(iv) / 1e3 / truth.steps as f64;
    let (under, copying) =
        (per_step(&both(&syncs, &idle)), per_step(&both(&both(&syncs, &idle), &copies)));
    assert!(copying > 0.5 * under, "the syncs wait mostly on copies: {copying} of {under}");
    let v = summary(&t);
    let lever = v["levers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lever"] == "remove-syncs")
        .expect("a remove-syncs lever");
    let said = format!(
        "the GPU runs no kernel for {under:.2} ms/step under them (a memcpy/memset runs for {copying:.2} of it)"
    );
    let evidence = lever["evidence"].as_str().unwrap();
    assert!(evidence.contains(&said), "'{said}' not in '{evidence}'");
}

/// Each call of `op`: its input dims and the time of the kernels it
/// launched (by correlation id, the launch inside the call on its thread).
fn calls_of(evs: &[Value], op: &str) -> Vec<(Vec<Vec<f64>>, f64)> {
    let launches: std::collections::HashMap<u64, &Value> = evs
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime")
        .filter_map(|e| Some((e["args"]["correlation"].as_u64()?, e)))
        .collect();
    let launched: Vec<(&Value, f64)> = evs
        .iter()
        .filter(|k| k["cat"] == "kernel")
        .filter_map(|k| Some((*launches.get(&k["args"]["correlation"].as_u64()?)?, f(&k["dur"]))))
        .collect();
    evs.iter()
        .filter(|e| e["cat"] == "cpu_op" && e["name"] == op)
        .map(|c| {
            let dims = c["args"]["Input Dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
                .collect();
            let (t0, t1) = (f(&c["ts"]), f(&c["ts"]) + f(&c["dur"]));
            let us: f64 = launched
                .iter()
                .filter(|(r, _)| r["tid"] == c["tid"] && (t0..=t1).contains(&f(&r["ts"])))
                .map(|(_, d)| d)
                .sum();
            (dims, us / 1e3)
        })
        .collect()
}

/// Matrix work far below its roofline is a lever only where its shapes
/// are the reason, worked out here from the raw traces' `Input Dims`:
/// - the Triton MI300X trace (97 % busy) runs its GEMMs at 42 % of their
///   roofline — the rate from their FLOPs (2·M·K·N) over the kernels they
///   launched, against the bf16 peak the profile quotes — but every one
///   is large and aligned (M, N, K ≥ 256; N, K multiples of 64), as its
///   flash attention is (head dimension 128): no shape lever, and the
///   verdict says the kernel, not the shapes, runs below the peak;
/// - the A100 control trace's costliest `aten::mm` call multiplies
///   through K = 30: `matrix-shapes`, its what-if the GEMM/conv work at
///   its roofline, its evidence that call's shape.
#[test]
fn matrix_work_is_a_lever_where_its_shapes_hold_it_back() {
    let t = common::fixtures().join("traces/tracelens_rocm_triton_compile/trace.json.gz");
    let evs = events(&read_json(&t));
    let s = summary(&t);
    let mm = calls_of(&evs, "aten::mm");
    let (mut flop, mut ms) = (0.0, 0.0);
    for (d, call_ms) in &mm {
        let (m, k, n) = (d[0][0], d[0][1], d[1][1]);
        assert!(m.min(n).min(k) >= 256.0 && n % 64.0 == 0.0 && k % 64.0 == 0.0, "{d:?}");
        (flop, ms) = (flop + 2.0 * m * k * n, ms + call_ms);
    }
    let pct = flop / 1e9 / f(&s["efficiency"]["peak_tflops"]["bf16"]) / ms * 100.0;
    for (d, _) in calls_of(&evs, "aten::_scaled_dot_product_flash_attention") {
        assert!(d[0][3] % 64.0 == 0.0 && d[0][2] >= 256.0, "{d:?}");
    }
    let kinds: Vec<&str> =
        s["levers"].as_array().unwrap().iter().map(|l| l["lever"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"matrix-shapes") && !kinds.contains(&"attention-shapes"), "{kinds:?}");
    let (d, _) = mm.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let costliest = format!("M={} N={} K={}", d[0][0], d[1][1], d[0][1]);
    let why = s["bound_why"].as_str().unwrap();
    let said = format!(
        "runs at {pct:.0}% of its roofline, compute-bound with large, aligned matrices already (its costliest call `{costliest}`)"
    );
    assert!(why.contains("aten::mm (") && why.contains(&said), "{said}: {why}");

    let t = common::fixtures().join("traces/hta_trace_diff_a100_2022/control.json.gz");
    let evs = events(&read_json(&t));
    let s = summary(&t);
    let (d, _) = calls_of(&evs, "aten::mm").into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let (m, k, n) = (d[0][0], d[0][1], d[1][1]);
    assert!(k < 256.0 || n % 64.0 != 0.0 || k % 64.0 != 0.0, "{d:?}");
    let l = s["levers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lever"] == "matrix-shapes")
        .unwrap_or_else(|| panic!("no matrix-shapes: {}", s["levers"]));
    assert_eq!(l["what_if"], "--at-roofline 'gemm / conv'");
    let ev = l["evidence"].as_str().unwrap();
    assert!(
        ev.contains(&format!(
            "`aten::mm` (compute-bound), whose costliest call `M={m} N={n} K={k}`"
        )),
        "{ev}"
    );
    assert!(l["change"].as_str().unwrap().contains("multiples of 64"), "{l}");

    // No fixture gets one where that work runs at half its roofline or
    // more, nor where most of its time is unpriced.
    for t in traces() {
        let s = summary(&t);
        for l in s["levers"].as_array().into_iter().flatten() {
            let category = match l["lever"].as_str() {
                Some("matrix-shapes") => "gemm / conv",
                Some("attention-shapes") => "attention",
                _ => continue,
            };
            let c = s["efficiency"]["categories"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["category"] == category)
                .unwrap();
            assert!(f(&c["pct_of_peak"]) < 50.0, "{}: {l}", t.display());
            let unpriced = s["efficiency"]["unpriced_by_category"].as_array().and_then(|u| {
                u.iter().find(|u| u["category"] == category).map(|u| f(&u["pct_of_category"]))
            });
            assert!(unpriced.unwrap_or(0.0) <= 50.0, "{}: {l}", t.display());
        }
    }
}

/// ResNet-50 on the V100 runs its convolutions in fp32 (no half-precision
/// kernel among them), but the 2021 trace records no strides or padding
/// for them (`GenericList` inputs without values), so the model prices
/// almost none of that work: AMP has no figure, is not a lever, and a
/// note says why rather than leave it out without a word.
#[test]
fn fp32_matrix_work_without_its_price_says_why_amp_is_not_ranked() {
    let t = common::fixtures()
        .join("traces/kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz");
    let evs = events(&read_json(&t));
    let (mut all, mut half) = (0.0, 0.0);
    for k in evs.iter().filter(|e| e["cat"] == "Kernel") {
        let name = k["name"].as_str().unwrap().to_lowercase();
        if name.contains("conv") || name.contains("gemm") {
            all += f(&k["dur"]);
            if name.contains("h884") || name.contains("hmma") || name.contains("fp16") {
                half += f(&k["dur"]);
            }
        }
    }
    assert!(all > 0.0 && half / all < 0.5, "{half} of {all}");
    let conv = evs.iter().find(|e| e["name"] == "aten::cudnn_convolution").unwrap();
    assert!(conv["args"]["Concrete Inputs"].is_null(), "{conv}");
    assert!(conv["args"]["Input type"].to_string().contains("GenericList"), "{conv}");
    let s = summary(&t);
    let kinds = s["levers"].as_array().cloned().unwrap_or_default();
    assert!(!kinds.iter().any(|l| l["lever"] == "amp"), "{kinds:?}");
    let peaks = &s["efficiency"]["peak_tflops"];
    let faster =
        format!("fp16 peak is {:.1}× its fp32 peak", f(&peaks["fp16"]) / f(&peaks["fp32"]));
    let note = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.starts_with("AMP is not ranked"))
        .unwrap_or_else(|| panic!("no AMP note: {}", s["warnings"]));
    assert!(note.contains(&faster) && note.contains("runs in fp32"), "{note}");
    // Traces whose matrix work runs in 16 bits, or whose AMP has a
    // figure, get no such note.
    for t in traces() {
        let s = summary(&t);
        let noted = s["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| w.as_str().is_some_and(|w| w.starts_with("AMP is not ranked")));
        let amp = s["levers"].as_array().into_iter().flatten().any(|l| l["lever"] == "amp");
        let lead = &s["facts"]["matrix_precision"][0]["precision"];
        if amp || lead == "bf16" || lead == "fp16" {
            assert!(!noted, "{}", t.display());
        }
    }
}
