//! Trace facts (issue #52): the preconditions of the levers, read from a
//! built profile — its kernel and op tables — and the host ranges the
//! trace recorded. The vocabulary is here, in the consts below, and
//! nowhere else; the kernel categories it builds on are
//! [`super::kernels`]'s.

use std::sync::LazyLock;

use regex::Regex;

use super::kernels::{demangle, label};
use super::model::{ChainGroup, NONE};
use crate::hardware::PeakClass;
use crate::profile::facts::{
    Attention, AttentionKind, CompiledRegions, ConvLayout, DataloaderKind, FusableChain,
    FusableChains, NamedKernel, Precision, PrecisionShare,
};
use crate::profile::{Category, Efficiency, KernelRow, OpRow, Profile, TraceFacts};
use crate::util::round;

/// A matrix kernel's number format from its lower-cased, demangled name,
/// first match wins. Narrowest first: a name that lists several types
/// (fp8 inputs with a bf16 output, bf16 inputs with fp32 accumulation)
/// runs at its inputs' rate.
///
/// - fp8: the OCP formats by name (`e4m3`, `e5m2`) or the library's word.
/// - int8: cuBLAS IMMA and the `i8816`/`i16832` MMA shapes, `i8i8` xmma.
/// - bf16 before fp16: `bf16` contains `f16`, `bfloat16` contains
///   `float16`, CK's `bhalf_t` contains `half`.
/// - fp16: `fp16`, `f16` (`_f16`, xmma `f16f16`), `half` (`__half`,
///   `half_t`), Volta/Turing/Ampere half MMA shapes (`h884`, `h1688`,
///   `h16816`).
/// - tf32: named (`tf32`, CUTLASS `tfloat32_t`, AMD `xf32`), or an fp32
///   Tensor Core MMA shape left without a 16-bit type above
///   (`cutlass_80_tensorop_s1688gemm`: fp32 in and out, TF32 math).
/// - fp32: the SIMT `sgemm`/`sgemv`, cuDNN's `scudnn`, FFT convolutions'
///   complex `gcgemm`, `fp32`, and a plain `float` template argument
///   (`dgrad_engine<float, …>`, `gemv2N_kernel<int, int, float, …>`).
const PRECISION_PATTERNS: &[(Precision, &str)] = &[
    (Precision::Fp8, r"e4m3|e5m2|fp8|float8|f8f8"),
    (Precision::Int8, r"int8|imma|i8i8|i8816|i16832"),
    (Precision::Bf16, r"bf16|bfloat16|bhalf"),
    (Precision::Fp16, r"fp16|f16|float16|half|h884|h1688|h16816|hmma|hgemm"),
    (Precision::Tf32, r"tf32|tfloat32|xf32|s(?:1688|16816)(?:gemm|fprop|dgrad|wgrad)"),
    (Precision::Fp32, r"sgemm|sgemv|scudnn|gcgemm|fp32|f32f32|\bfloat\b"),
];

/// ROCm Tensile / hipBLASLt GEMMs name their types in one code after the
/// operand layouts (`Cijk_Alik_Bljk_BBS_…`, `…_B_BS_…`, `…_SB_…`): the
/// input type's letters first (`B` bf16, `H` fp16, `S` fp32, `X` xf32,
/// `F8`/`B8` fp8, `I8` int8). Their other tokens (`_HA_S_SAV`, `MT…`)
/// would mislead the patterns above, so this decides alone.
const TENSILE: &str = r"^cijk_a[a-z]+_b[a-z]+_([0-9a-z]+)";

/// Convolution kernels among the GEMM / conv category: cuDNN's
/// `fprop`/`dgrad`/`wgrad`, `scudnn`, implicit GEMM and Winograd, FFT
/// convolutions, MIOpen's `igemm_{fwd,bwd,wrw}`. `conv(?:[^e]|$)` keeps
/// `convert` out. A GEMM kernel that cuDNN runs for a convolution
/// (`cutlass_80_tensorop_s1688gemm`) cannot be told by its name.
const CONV: &str =
    r"conv(?:[^e]|$)|fprop|dgrad|wgrad|scudnn|implicit|winograd|fft2d|im2col|^igemm_|_wrw_";

/// Channels-last convolution kernels: the layout in the name
/// (`nhwc`, cuDNN's `nhwckrsc`, MIOpen's `igemm_*_nhwc_*`).
const NHWC: &str = "nhwc";

/// The transposes libraries run to feed NHWC kernels from NCHW tensors.
pub const LAYOUT_TRANSPOSE: &str = r"nchwtonhwc|nhwctonchw|batched_transpose";

/// Host ranges of torch.compile, outermost first: the first kind found is
/// counted (the others nest inside it). `Torch-Compiled Region` wraps each
/// call of a compiled frame (a `cpu_op`); `CompiledFunction` is
/// AOTAutograd's autograd function (training); `## Call CompiledFxGraph`
/// is Inductor's annotation around the compiled graph (a
/// `user_annotation`). `CompiledFunctionBackward` is left out: it runs in
/// the backward, outside the forward's regions.
pub(crate) const COMPILED_RANGES: &[&str] =
    &["Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph"];

/// Inductor's generated kernels (`triton_poi_`, `triton_red_`,
/// `triton_per_`, `triton_tem_`).
const TRITON_PREFIX: &str = "triton_";

/// The DataLoader's iterator classes, in its `__next__` range
/// (`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`).
const SINGLE_PROCESS_LOADER: &str = "_SingleProcessDataLoaderIter";
const MULTI_PROCESS_LOADER: &str = "_MultiProcessingDataLoaderIter";

/// Ops of fused attention: PyTorch's SDPA and the backends it dispatches
/// to, the flash-attn package, xformers' memory-efficient attention.
const FUSED_ATTENTION_OPS: &[&str] =
    &["scaled_dot_product", "flash_attention", "efficient_attention", "flash_attn"];

/// Eager attention: a softmax op with batched matmuls (`matmul` on 3-D
/// and 4-D tensors dispatches to `bmm`). A softmax alone is a classifier's
/// head, not attention.
const SOFTMAX_OPS: &[&str] = &["aten::softmax", "aten::_softmax", "aten::_safe_softmax"];
const BATCHED_MATMUL_OPS: &[&str] = &["aten::bmm", "aten::baddbmm"];
/// Softmax kernels (`cunn_SoftMaxForward`, `softmax_warp_forward`).
pub const SOFTMAX_KERNEL: &str = "softmax";

/// Elementwise kernels listed by name.
const ELEMENTWISE_TOP: usize = 3;

/// Chain sequences listed.
const CHAINS_TOP: usize = 3;

struct Patterns {
    precision: Vec<(Precision, Regex)>,
    tensile: Regex,
    conv: Regex,
    transpose: Regex,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    precision: PRECISION_PATTERNS
        .iter()
        .map(|(p, re)| (*p, Regex::new(re).expect("precision pattern compiles")))
        .collect(),
    tensile: Regex::new(TENSILE).expect("tensile pattern compiles"),
    conv: Regex::new(CONV).expect("conv pattern compiles"),
    transpose: Regex::new(LAYOUT_TRANSPOSE).expect("transpose pattern compiles"),
});

/// The number format a matrix kernel's name (raw or demangled) says it
/// runs in.
pub fn precision_of(name: &str) -> Precision {
    precision_of_lower(&demangle(name).to_lowercase())
}

fn precision_of_lower(lower: &str) -> Precision {
    let p = &*PATTERNS;
    if let Some(code) = p.tensile.captures(lower).and_then(|c| c.get(1)) {
        let code = code.as_str();
        return match code.as_bytes()[0] {
            _ if code.starts_with("f8") || code.starts_with("b8") => Precision::Fp8,
            _ if code.starts_with("i8") || code.starts_with("4xi8") => Precision::Int8,
            b'b' => Precision::Bf16,
            b'h' => Precision::Fp16,
            b'x' => Precision::Tf32,
            b's' => Precision::Fp32,
            _ => Precision::Unknown,
        };
    }
    p.precision.iter().find(|(_, re)| re.is_match(lower)).map_or(Precision::Unknown, |(p, _)| *p)
}

/// The format the roofline account priced most matrix work in, where it
/// names one for sure: `fp32` is also its fallback for a format the device
/// table has no peak for, so it says nothing.
fn priced_precision(efficiency: Option<&Efficiency>) -> Option<Precision> {
    match efficiency?.matrix.as_ref()?.format {
        PeakClass::Fp8 => Some(Precision::Fp8),
        PeakClass::Int8 => Some(Precision::Int8),
        PeakClass::Fp16 => Some(Precision::Fp16),
        PeakClass::Bf16 => Some(Precision::Bf16),
        PeakClass::Tf32 | PeakClass::Fp32Matrix => Some(Precision::Tf32),
        PeakClass::Fp32 | PeakClass::Fp64 => None,
    }
}

/// What the facts read of a profile: its parts, which the analysis has
/// before it assembles the profile (the verdict reads the facts).
pub struct Parts<'a> {
    pub kernels: &'a [KernelRow],
    pub ops: &'a [OpRow],
    pub efficiency: Option<&'a Efficiency>,
    pub graph_launches_per_step: Option<f64>,
    /// Steps in the window.
    pub steps: f64,
}

impl<'a> Parts<'a> {
    pub fn of(p: &'a Profile) -> Parts<'a> {
        Parts {
            kernels: &p.kernels,
            ops: &p.ops,
            efficiency: p.efficiency.as_ref(),
            graph_launches_per_step: p.extras.graph_launches_per_step,
            steps: p.figures.window.real_steps as f64,
        }
    }
}

/// The facts of a profile. `host_ranges`: (name, count, total ms) of the
/// host annotations (`user_annotation`) inside the window's steps.
pub fn of(p: &Profile, host_ranges: &[(String, u64, f64)]) -> TraceFacts {
    of_parts(&Parts::of(p), host_ranges)
}

/// [`of`], from the profile's parts.
pub fn of_parts(p: &Parts<'_>, host_ranges: &[(String, u64, f64)]) -> TraceFacts {
    let steps = p.steps.max(1.0);
    let kernels: Vec<(&KernelRow, String)> = p
        .kernels
        .iter()
        .map(|k| {
            let name = if k.raw_name.is_empty() { &k.kernel } else { &k.raw_name };
            (k, demangle(name).to_lowercase())
        })
        .collect();
    let total: f64 = kernels.iter().map(|(k, _)| k.ms_per_step).sum();
    let share = |ms: f64| if total > 0.0 { round(ms / total, 4) } else { 0.0 };
    let sum = |keep: &dyn Fn(&KernelRow, &str) -> bool| -> f64 {
        kernels.iter().filter(|(k, n)| keep(k, n)).map(|(k, _)| k.ms_per_step).sum()
    };

    // Ops and host ranges by name: (count, ms) per step; a range the op
    // table already holds is counted once.
    let ops = p.ops.iter().map(|o| (o.op.as_str(), o.count_per_step, o.ms_per_step));
    let ranges = host_ranges
        .iter()
        .filter(|(n, _, _)| !p.ops.iter().any(|o| o.op == *n))
        .map(|(n, c, ms)| (n.as_str(), *c as f64 / steps, *ms / steps));
    let named: Vec<(&str, f64, f64)> = ops.chain(ranges).collect();
    let any_op = |names: &[&str]| p.ops.iter().any(|o| names.iter().any(|n| o.op.contains(n)));

    let elementwise_ms = sum(&|k, _| k.category == Category::Elementwise);
    let mut elementwise: Vec<&KernelRow> =
        p.kernels.iter().filter(|k| k.category == Category::Elementwise).collect();
    elementwise.sort_by(|a, b| b.ms_per_step.total_cmp(&a.ms_per_step));

    TraceFacts {
        matrix_precision: matrix_precision(&kernels, priced_precision(p.efficiency)),
        channels_last: channels_last(&kernels),
        compiled_regions: compiled_regions(&named),
        triton_kernels_share: share(sum(&|_, n| n.starts_with(TRITON_PREFIX))),
        graph_launches_per_step: p.graph_launches_per_step.filter(|g| *g > 0.0),
        dataloader: dataloader(&named),
        attention: attention(
            sum(&|k, _| k.category == Category::Attention),
            sum(&|k, _| k.category == Category::Softmax),
            any_op(FUSED_ATTENTION_OPS),
            any_op(SOFTMAX_OPS) && any_op(BATCHED_MATMUL_OPS),
        ),
        elementwise_share: share(elementwise_ms),
        elementwise_top: elementwise
            .iter()
            .take(ELEMENTWISE_TOP)
            .map(|k| NamedKernel {
                kernel: k.kernel.clone(),
                ms_per_step: k.ms_per_step,
                count_per_step: k.count_per_step,
            })
            .collect(),
        // From the step model, when there is one (the pass adds them).
        fusable_chains: None,
    }
}

/// The fusable chains of a step model's window ([`ChainGroup`]s, most
/// time first, names from `names`) over `steps` steps, as shares of
/// `kernel_ms` per step; None: no chain.
pub fn chains(
    groups: &[ChainGroup],
    names: &[String],
    steps: f64,
    kernel_ms: f64,
) -> Option<FusableChains> {
    if groups.is_empty() {
        return None;
    }
    let steps = steps.max(1.0);
    let ms = |ns: i64| ns as f64 / 1e6 / steps;
    let name = |i: u32| if i == NONE { String::new() } else { names[i as usize].clone() };
    let total: i64 = groups.iter().map(|g| g.ns).sum();
    Some(FusableChains {
        count_per_step: round(groups.iter().map(|g| g.count).sum::<usize>() as f64 / steps, 2),
        ms_per_step: round(ms(total), 4),
        share: if kernel_ms > 0.0 { round(ms(total) / kernel_ms, 4) } else { 0.0 },
        fused_ms_per_step: round(ms(groups.iter().map(|g| g.fused_ns).sum()), 4),
        top: groups
            .iter()
            .take(CHAINS_TOP)
            .map(|g| FusableChain {
                ops: g.ops.iter().map(|&o| name(o)).collect(),
                kernels: g.kernels.iter().map(|&k| label(&names[k as usize])).collect(),
                between: [label(&names[g.between.0 as usize]), label(&names[g.between.1 as usize])],
                count_per_step: round(g.count as f64 / steps, 2),
                ms_per_step: round(ms(g.ns), 4),
                fused_ms_per_step: round(ms(g.fused_ns), 4),
            })
            .collect(),
    })
}

fn is_matrix(k: &KernelRow) -> bool {
    k.category == Category::GemmConv || k.category == Category::Attention
}

/// Matrix time by format, largest first. A kernel whose name says no
/// format takes the one the roofline account priced most matrix work in,
/// where that account priced the kernel's op.
fn matrix_precision(
    kernels: &[(&KernelRow, String)],
    priced: Option<Precision>,
) -> Vec<PrecisionShare> {
    let mut by: Vec<(Precision, f64)> = Vec::new();
    for (k, name) in kernels.iter().filter(|(k, _)| is_matrix(k)) {
        let mut precision = precision_of_lower(name);
        if precision == Precision::Unknown && k.achieved.is_priced() {
            precision = priced.unwrap_or(Precision::Unknown);
        }
        match by.iter_mut().find(|(p, _)| *p == precision) {
            Some((_, ms)) => *ms += k.ms_per_step,
            None => by.push((precision, k.ms_per_step)),
        }
    }
    let total: f64 = by.iter().map(|(_, ms)| ms).sum();
    by.retain(|(_, ms)| *ms > 0.0);
    by.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    by.into_iter()
        .map(|(precision, ms)| PrecisionShare {
            precision,
            ms_per_step: round(ms, 4),
            share: round(ms / total, 4),
        })
        .collect()
}

fn channels_last(kernels: &[(&KernelRow, String)]) -> Option<ConvLayout> {
    let p = &*PATTERNS;
    let (mut conv, mut nhwc, mut transpose) = (0.0, 0.0, 0.0);
    for (k, name) in kernels {
        if k.category == Category::GemmConv && p.conv.is_match(name) {
            conv += k.ms_per_step;
            if name.contains(NHWC) {
                nhwc += k.ms_per_step;
            }
        } else if k.category == Category::LayoutCopy && p.transpose.is_match(name) {
            transpose += k.ms_per_step;
        }
    }
    (conv > 0.0).then(|| ConvLayout {
        nhwc_share: round(nhwc / conv, 4),
        conv_ms_per_step: round(conv, 4),
        transpose_ms_per_step: round(transpose, 4),
    })
}

/// The outermost kind of compiled range the trace records, summed over its
/// names (`Torch-Compiled Region: 0/0`, `…: 1/0`, each graph's hash).
fn compiled_regions(named: &[(&str, f64, f64)]) -> Option<CompiledRegions> {
    COMPILED_RANGES.iter().find_map(|range| {
        let hits = named.iter().filter(|(n, _, _)| {
            // `CompiledFunction` but not `CompiledFunctionBackward`.
            n.starts_with(range) && !n[range.len()..].starts_with("Backward")
        });
        let (count, ms) = hits.fold((0.0, 0.0), |(c, m), (_, nc, nm)| (c + nc, m + nm));
        (count > 0.0).then(|| CompiledRegions {
            range: range.to_string(),
            per_step: round(count, 2),
            host_ms_per_step: round(ms, 4),
        })
    })
}

/// The DataLoader's kind, by the iterator that took the most time.
fn dataloader(named: &[(&str, f64, f64)]) -> Option<DataloaderKind> {
    let ms = |class: &str| -> Option<f64> {
        let hits: Vec<f64> =
            named.iter().filter(|(n, _, _)| n.contains(class)).map(|(_, _, ms)| *ms).collect();
        (!hits.is_empty()).then(|| hits.iter().sum())
    };
    match (ms(SINGLE_PROCESS_LOADER), ms(MULTI_PROCESS_LOADER)) {
        (Some(single), Some(multi)) if multi > single => Some(DataloaderKind::Workers),
        (Some(_), _) => Some(DataloaderKind::SingleProcess),
        (None, Some(_)) => Some(DataloaderKind::Workers),
        (None, None) => None,
    }
}

/// Fused attention where its kernels or ops appear, eager where softmax
/// runs between batched matmuls; the kind with more kernel time when both.
fn attention(
    fused_ms: f64,
    softmax_ms: f64,
    fused_ops: bool,
    eager_ops: bool,
) -> Option<Attention> {
    let fused = fused_ms > 0.0 || fused_ops;
    let eager_ms = if eager_ops { softmax_ms } else { 0.0 };
    let kind = match (fused, eager_ops) {
        (false, false) => return None,
        (true, true) if eager_ms > fused_ms => AttentionKind::Eager,
        (true, _) => AttentionKind::Sdpa,
        (false, true) => AttentionKind::Eager,
    };
    Some(Attention {
        kind,
        fused_ms_per_step: round(fused_ms, 4),
        eager_softmax_ms_per_step: round(eager_ms, 4),
    })
}

#[cfg(test)]
mod tests {
    //! Each fixture's facts against figures taken from its raw JSON here,
    //! by the test's own reading: kernels summed by name, ops' input
    //! dtypes, annotations counted.

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;
    use crate::analysis::{AnalyzeOptions, analyze};
    use crate::trace::Source;

    /// A raw trace, as JSON.
    struct Raw {
        events: Vec<Value>,
        /// The in-step kernels, read once.
        kernels: Vec<RawKernel>,
    }

    /// An in-step kernel: its name, duration (µs) and the input types of
    /// the innermost CPU op around its launch.
    struct RawKernel {
        name: String,
        us: f64,
        op_types: Option<Vec<String>>,
    }

    fn path(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces").join(rel)
    }

    fn cat(e: &Value) -> String {
        e["cat"].as_str().unwrap_or("").to_lowercase()
    }

    fn ts(e: &Value) -> f64 {
        e["ts"].as_f64().unwrap_or(0.0)
    }

    fn dur(e: &Value) -> f64 {
        e["dur"].as_f64().unwrap_or(0.0)
    }

    fn name(e: &Value) -> &str {
        e["name"].as_str().unwrap_or("")
    }

    impl Raw {
        fn read(rel: &str) -> Raw {
            let file = std::fs::File::open(path(rel)).unwrap();
            let doc: Value = serde_json::from_reader(std::io::BufReader::new(
                flate2::read::GzDecoder::new(file),
            ))
            .unwrap();
            let events = match doc {
                Value::Array(a) => a,
                Value::Object(mut o) => match o.remove("traceEvents") {
                    Some(Value::Array(a)) => a,
                    _ => panic!("{rel}: no traceEvents"),
                },
                _ => panic!("{rel}: not a trace"),
            };
            let mut raw = Raw { events, kernels: Vec::new() };
            raw.kernels = raw.read_kernels();
            raw
        }

        /// `ProfilerStep#N` intervals on the host (µs), and how many distinct N.
        fn steps(&self) -> (Vec<(f64, f64)>, usize) {
            let steps: Vec<&Value> = self
                .events
                .iter()
                .filter(|e| name(e).starts_with("ProfilerStep#") && cat(e) != "gpu_user_annotation")
                .collect();
            let distinct: BTreeSet<&str> = steps.iter().map(|e| name(e)).collect();
            (steps.iter().map(|e| (ts(e), ts(e) + dur(e))).collect(), distinct.len().max(1))
        }

        fn in_steps(&self, at: f64) -> bool {
            let (steps, _) = self.steps();
            steps.is_empty() || steps.iter().any(|(s, e)| *s <= at && at <= *e)
        }

        /// The kernels launched (or, with no launch, run) inside the steps.
        fn read_kernels(&self) -> Vec<RawKernel> {
            let (steps, _) = self.steps();
            let inside =
                |at: f64| steps.is_empty() || steps.iter().any(|(s, e)| *s <= at && at <= *e);
            let mut launches: BTreeMap<i64, &Value> = BTreeMap::new();
            let mut ops: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
            for e in &self.events {
                match cat(e).as_str() {
                    "cuda_runtime" | "runtime" | "cuda_driver" => {
                        if let Some(c) = e["args"]["correlation"].as_i64() {
                            launches.insert(c, e);
                        }
                    }
                    "cpu_op" | "operator" if !name(e).starts_with("ProfilerStep#") => {
                        ops.entry(e["tid"].as_i64().unwrap_or(0)).or_default().push(e)
                    }
                    _ => {}
                }
            }
            for thread in ops.values_mut() {
                thread.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
            }
            // The innermost op around a launch: the latest-starting one
            // that encloses it.
            let op_at = |l: &Value| -> Option<Vec<String>> {
                let thread = ops.get(&l["tid"].as_i64().unwrap_or(0))?;
                let at = ts(l);
                thread[..thread.partition_point(|o| ts(o) <= at)]
                    .iter()
                    .rev()
                    .find(|o| at <= ts(o) + dur(o))
                    .and_then(|o| o["args"]["Input type"].as_array())
                    .map(|a| a.iter().map(|t| t.as_str().unwrap_or("").to_string()).collect())
            };
            self.events
                .iter()
                .filter(|e| cat(e) == "kernel")
                .filter_map(|e| {
                    let launch = e["args"]["correlation"].as_i64().and_then(|c| launches.get(&c));
                    let at = launch.map_or(ts(e), |l| ts(l));
                    inside(at).then(|| RawKernel {
                        name: name(e).to_string(),
                        us: dur(e),
                        op_types: launch.and_then(|l| op_at(l)),
                    })
                })
                .collect()
        }

        /// The `user_annotation` ranges that start inside the steps:
        /// (name, count, total ms).
        fn host_ranges(&self) -> Vec<(String, u64, f64)> {
            let mut by: BTreeMap<String, (u64, f64)> = BTreeMap::new();
            for e in &self.events {
                if cat(e) == "user_annotation"
                    && !name(e).starts_with("ProfilerStep#")
                    && self.in_steps(ts(e))
                {
                    let r = by.entry(name(e).to_string()).or_default();
                    r.0 += 1;
                    r.1 += dur(e) / 1e3;
                }
            }
            by.into_iter().map(|(n, (c, ms))| (n, c, ms)).collect()
        }

        /// The host events whose name starts with `prefix`: count and ms.
        fn host_events(&self, prefix: &str) -> (usize, f64) {
            let hits: Vec<&Value> = self
                .events
                .iter()
                .filter(|e| cat(e) != "gpu_user_annotation" && name(e).starts_with(prefix))
                .collect();
            (hits.len(), hits.iter().map(|e| dur(e)).sum::<f64>() / 1e3)
        }
    }

    /// The trace's facts, from the analyser's profile and the raw trace's
    /// host ranges, with the raw trace.
    fn facts(rel: &str) -> (TraceFacts, Profile, Raw) {
        let p = analyze(&Source::path(&path(rel)).unwrap(), AnalyzeOptions::default())
            .unwrap()
            .unwrap()
            .profile;
        let raw = Raw::read(rel);
        (of(&p, &raw.host_ranges()), p, raw)
    }

    /// ms per step of the in-step kernels `keep` selects, and how many
    /// distinct names (profile rows, each rounded) they are.
    fn ms(raw: &Raw, keep: impl Fn(&str) -> bool) -> (f64, usize) {
        let (_, steps) = raw.steps();
        let hits: Vec<&RawKernel> = raw.kernels.iter().filter(|k| keep(&k.name)).collect();
        let names: BTreeSet<&str> = hits.iter().map(|k| k.name.as_str()).collect();
        (hits.iter().map(|k| k.us).sum::<f64>() / 1e3 / steps as f64, names.len())
    }

    fn precision(f: &TraceFacts, p: Precision) -> Option<&PrecisionShare> {
        f.matrix_precision.iter().find(|s| s.precision == p)
    }

    /// Equal up to the profile's rounding: 4 decimals per kernel row
    /// summed, 4 decimals on the result.
    fn close(got: f64, (want, rows): (f64, usize), what: &str) {
        let tol = 5e-5 * (rows + 1) as f64 + 1e-9;
        assert!((got - want).abs() <= tol, "{what}: {got} vs {want} (±{tol})");
    }

    /// A share equal to `part / whole` up to rounding.
    fn close_share(got: f64, part: (f64, usize), whole: (f64, usize), what: &str) {
        let want = part.0 / whole.0;
        let tol = 5e-5 * (part.1 + whole.1 + 2) as f64 / whole.0.min(1.0) + 1e-4;
        assert!((got - want).abs() <= tol, "{what}: {got} vs {want} (±{tol})");
    }

    fn has(n: &str, words: &[&str]) -> bool {
        let n = n.to_lowercase();
        words.iter().any(|w| n.contains(w))
    }

    /// The facts' precision of every in-step matrix kernel whose launching
    /// op recorded its input types agrees with them: a name never says
    /// bf16 where the op ran fp32, nor the reverse.
    fn names_agree_with_op_dtypes(p: &Profile, raw: &Raw) -> usize {
        let matrix: BTreeSet<&str> =
            p.kernels.iter().filter(|k| is_matrix(k)).map(|k| k.raw_name.as_str()).collect();
        let mut checked = 0;
        for k in &raw.kernels {
            let Some(types) = k.op_types.as_ref().filter(|_| matrix.contains(k.name.as_str()))
            else {
                continue;
            };
            // The op's first floating-point input.
            let first = types.iter().find_map(|t| match t.trim_start_matches("c10::") {
                "BFloat16" => Some(&[Precision::Bf16][..]),
                "Half" => Some(&[Precision::Fp16][..]),
                "float" => Some(&[Precision::Fp32, Precision::Tf32][..]),
                _ => None,
            });
            let Some(want) = first else { continue };
            let got = precision_of(&k.name);
            assert!(
                got == Precision::Unknown || want.contains(&got),
                "{}: {got} by name, {types:?} by its op",
                k.name
            );
            checked += 1;
        }
        checked
    }

    #[test]
    fn qwen_on_h100_runs_bf16_gemms_and_sdpa() {
        let (f, p, raw) =
            facts("tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        // cuBLAS/CUTLASS GEMMs and FlashAttention are the matrix work.
        let matrix = |n: &str| has(n, &["gemm", "flash_fwd"]);
        let bf16 = ms(&raw, |n| matrix(n) && has(n, &["bf16", "bfloat16"]));
        let top = &f.matrix_precision[0];
        assert_eq!(top.precision, Precision::Bf16);
        close(top.ms_per_step, bf16, "bf16 ms");
        close_share(top.share, bf16, ms(&raw, matrix), "bf16 share");
        assert!(names_agree_with_op_dtypes(&p, &raw) > 0);

        let a = f.attention.as_ref().unwrap();
        assert_eq!(a.kind, AttentionKind::Sdpa);
        close(a.fused_ms_per_step, ms(&raw, |n| has(n, &["flash_fwd"])), "flash ms");
        assert_eq!(a.eager_softmax_ms_per_step, 0.0);

        let elementwise = ms(&raw, |n| has(n, &["elementwise_kernel"]));
        close_share(f.elementwise_share, elementwise, ms(&raw, |_| true), "elementwise share");
        assert_eq!(f.channels_last, None);
        assert_eq!(f.compiled_regions, None);
        assert_eq!(f.dataloader, None);
        assert_eq!(f.graph_launches_per_step, None);
        assert_eq!(f.triton_kernels_share, 0.0);
    }

    #[test]
    fn timesformer_on_h100_runs_eager_attention_in_bf16() {
        let (f, p, raw) = facts(
            "tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
        );
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        // Every GEMM, GEMV and cuDNN convolution names bf16.
        let matrix = |n: &str| has(n, &["gemm", "gemv", "fprop"]);
        assert_eq!(ms(&raw, matrix).0, ms(&raw, |n| matrix(n) && has(n, &["bf16", "bfloat16"])).0);
        assert_eq!(f.matrix_precision.len(), 1, "{:?}", f.matrix_precision);
        assert_eq!(f.matrix_precision[0].precision, Precision::Bf16);
        close(f.matrix_precision[0].ms_per_step, ms(&raw, matrix), "bf16 ms");
        assert!(names_agree_with_op_dtypes(&p, &raw) > 0);

        // softmax between bmm ops, no fused attention: eager.
        let a = f.attention.as_ref().unwrap();
        assert_eq!(a.kind, AttentionKind::Eager);
        assert_eq!(a.fused_ms_per_step, 0.0);
        close(a.eager_softmax_ms_per_step, ms(&raw, |n| has(n, &["softmax"])), "softmax ms");

        // Its one convolution (the patch embedding) runs NHWC, fed by
        // cuDNN's transposes.
        let c = f.channels_last.as_ref().unwrap();
        assert_eq!(c.nhwc_share, 1.0);
        close(c.conv_ms_per_step, ms(&raw, |n| has(n, &["fprop"])), "conv ms");
        let transposes = ms(&raw, |n| has(n, &["nchwtonhwc", "nhwctonchw"]));
        close(c.transpose_ms_per_step, transposes, "transpose ms");
        assert_eq!(f.compiled_regions, None);
        assert_eq!(f.dataloader, None);
    }

    #[test]
    fn mi210_gpu_only_runs_bf16_nhwc_convolutions() {
        let (f, _, raw) = facts("tracelens_mi210_gpu_only/gpu_only_trace.json.gz");
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        // MIOpen's implicit-GEMM convolutions and Tensile GEMMs.
        let matrix = |n: &str| n.starts_with("igemm_") || n.starts_with("Cijk_");
        let bf16 = |n: &str| matrix(n) && (n.contains("_bf16_") || n.contains("_BBS_"));
        assert_eq!(ms(&raw, matrix).0, ms(&raw, bf16).0, "every matrix kernel bf16");
        assert_eq!(f.matrix_precision.len(), 1);
        assert_eq!(f.matrix_precision[0].precision, Precision::Bf16);
        close(f.matrix_precision[0].ms_per_step, ms(&raw, matrix), "bf16 ms");

        let conv = |n: &str| n.starts_with("igemm_");
        assert_eq!(ms(&raw, conv).0, ms(&raw, |n| conv(n) && n.contains("_nhwc_")).0);
        let c = f.channels_last.as_ref().unwrap();
        assert_eq!(c.nhwc_share, 1.0);
        close(c.conv_ms_per_step, ms(&raw, conv), "conv ms");
        close(
            c.transpose_ms_per_step,
            ms(&raw, |n| n.starts_with("batched_transpose")),
            "transposes",
        );
        // A GPU-only trace: no ops, so no attention, DataLoader or regions.
        assert_eq!((f.attention, f.dataloader, f.compiled_regions), (None, None, None));
    }

    #[test]
    fn rocm_triton_compile_is_compiled() {
        let (f, p, raw) = facts("tracelens_rocm_triton_compile/trace.json.gz");
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        let (_, steps) = raw.steps();
        let total = ms(&raw, |_| true);
        close_share(
            f.triton_kernels_share,
            ms(&raw, |n| n.starts_with("triton_")),
            total,
            "triton",
        );
        let (count, host_ms) = raw.host_events("Torch-Compiled Region");
        assert_eq!(
            f.compiled_regions,
            Some(CompiledRegions {
                range: "Torch-Compiled Region".into(),
                per_step: count as f64 / steps as f64,
                host_ms_per_step: round(host_ms / steps as f64, 4),
            })
        );
        // Triton's `attn_fwd` names no format; its op ran bf16, as the
        // roofline account priced it.
        let a = f.attention.as_ref().unwrap();
        assert_eq!(a.kind, AttentionKind::Sdpa);
        close(a.fused_ms_per_step, ms(&raw, |n| n == "attn_fwd"), "attention ms");
        let bf16_by_op = |n: &str| {
            raw.kernels.iter().any(|k| {
                k.name == n && k.op_types.as_ref().is_some_and(|t| t[0] == "c10::BFloat16")
            })
        };
        let matrix = |n: &str| n.starts_with("Cijk_") || n == "attn_fwd";
        assert_eq!(ms(&raw, matrix).0, ms(&raw, |n| matrix(n) && bf16_by_op(n)).0);
        assert_eq!(f.matrix_precision.len(), 1);
        assert_eq!(f.matrix_precision[0].precision, Precision::Bf16);
        close(f.matrix_precision[0].ms_per_step, ms(&raw, matrix), "bf16 ms");
        assert!(names_agree_with_op_dtypes(&p, &raw) > 0);
        let elementwise = ms(&raw, |n| n.starts_with("triton_poi_"));
        close_share(f.elementwise_share, elementwise, total, "elementwise");
    }

    #[test]
    fn vllm_graph_capture_counts_compiled_graphs() {
        let (f, _, raw) =
            facts("tracelens_vllm_cuda_graph_capture/graph_capture_rank_0.pt.trace.json.gz");
        let (_, steps) = raw.steps();
        let (count, host_ms) = raw.host_events("## Call CompiledFxGraph");
        assert!(count > 1);
        let r = f.compiled_regions.as_ref().unwrap();
        assert_eq!(r.range, "## Call CompiledFxGraph");
        assert_eq!(r.per_step, count as f64 / steps as f64);
        close(r.host_ms_per_step, (host_ms / steps as f64, 0), "host ms");
        // Graphs captured, never launched.
        assert_eq!(raw.host_events("cudaGraphLaunch").0 + raw.host_events("hipGraphLaunch").0, 0);
        assert_eq!(f.graph_launches_per_step, None);
    }

    #[test]
    fn a100_training_2022_runs_tf32_with_loader_workers() {
        let (f, p, raw) = facts("hta_trace_diff_a100_2022/control.json.gz");
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        // cuBLAS's Ampere tensor-op fp32 GEMMs run TF32; SIMT sgemm and
        // cuBLAS's float helpers fp32.
        let tf32 = precision(&f, Precision::Tf32).unwrap();
        close(tf32.ms_per_step, ms(&raw, |n| n.contains("tensorop_s1688gemm")), "tf32 ms");
        let fp32 = precision(&f, Precision::Fp32).unwrap();
        let simt = |n: &str| {
            has(n, &["sgemm", "gemv", "gemmk1", "gemmsn", "splitkreduce", "dot_kernel", "epilogue"])
                && !n.contains("tensorop")
        };
        close(fp32.ms_per_step, ms(&raw, simt), "fp32 ms");
        assert_eq!(f.matrix_precision.len(), 2, "{:?}", f.matrix_precision);
        assert!(names_agree_with_op_dtypes(&p, &raw) > 0);

        assert!(
            raw.host_ranges().iter().any(|(n, _, _)| n.contains("_MultiProcessingDataLoaderIter"))
        );
        assert_eq!(f.dataloader, Some(DataloaderKind::Workers));
        // bmm without softmax (the DLRM interaction): no attention.
        assert_eq!(f.attention, None);
        assert_eq!(f.channels_last, None);
    }

    #[test]
    fn resnet50_on_v100_2021_runs_fp32_nchw_with_one_loader_process() {
        let (f, p, raw) =
            facts("kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz");
        println!("{}", serde_json::to_string_pretty(&f).unwrap());
        // cuDNN's offset helpers name no format; everything else is fp32.
        let matrix = |n: &str| {
            has(n, &["gemm", "scudnn", "conv", "winograd", "dgrad", "wgrad", "splitkreduce"])
                || n.starts_with("void cudnn::ops::scale")
        };
        let fp32 = precision(&f, Precision::Fp32).unwrap();
        close(
            fp32.ms_per_step,
            ms(&raw, |n| matrix(n) && has(n, &["float", "sgemm", "scudnn"])),
            "fp32 ms",
        );
        let unknown = precision(&f, Precision::Unknown).unwrap();
        close(unknown.ms_per_step, ms(&raw, |n| n.starts_with("cask_cudnn::")), "helpers ms");
        assert_eq!(f.matrix_precision.len(), 2, "{:?}", f.matrix_precision);
        assert!(names_agree_with_op_dtypes(&p, &raw) > 0);

        // NCHW but for one cuDNN kernel that names NHWC.
        let conv = |n: &str| has(n, &["conv", "scudnn", "winograd", "dgrad", "wgrad"]);
        let c = f.channels_last.as_ref().unwrap();
        close(c.conv_ms_per_step, ms(&raw, conv), "conv ms");
        close_share(
            c.nhwc_share,
            ms(&raw, |n| conv(n) && has(n, &["nhwc"])),
            ms(&raw, conv),
            "nhwc",
        );

        // 2021: the loader's range is an `Operator`, read with the ops.
        assert!(raw.host_events("enumerate(DataLoader)#_SingleProcessDataLoaderIter").0 > 0);
        assert_eq!(f.dataloader, Some(DataloaderKind::SingleProcess));
    }

    /// Kernel names as the libraries write them (most from the fixtures)
    /// and the format each runs in.
    #[test]
    fn precision_vocabulary() {
        use Precision::*;
        for (name, want) in [
            ("void deep_gemm::fp8_gemm_kernel<4096u, 7168u>(__nv_bfloat16*, float*)", Fp8),
            ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128", Fp8),
            ("sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64", Int8),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", Bf16),
            ("cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_nn_align8", Bf16),
            ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1", Bf16),
            ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1", Bf16),
            ("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt32x256x32_wt16x64x4", Bf16),
            ("volta_h884gemm_64x64_nt", Fp16),
            ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_nn", Fp16),
            ("Cijk_Alik_Bljk_HHS_BH_MT128x64x64_MI32x32x8x1", Fp16),
            ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1>", Tf32),
            ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", Tf32),
            ("ampere_sgemm_128x128_tn", Fp32),
            ("volta_scudnn_128x64_relu_interior_nn_v1", Fp32),
            ("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)", Fp32),
            ("Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1", Fp32),
            ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1", Fp32),
            ("attn_fwd", Unknown),
            ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", Unknown),
        ] {
            assert_eq!(precision_of(name), want, "{name}");
        }
    }

    /// On every fixture, the format a matrix kernel's name says is the one
    /// the op that launched it ran in, wherever the op recorded its types.
    #[test]
    fn names_never_contradict_the_ops_dtypes_on_any_fixture() {
        let dir = path("");
        let mut checked = 0;
        for d in std::fs::read_dir(&dir).unwrap() {
            for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
                let f = f.unwrap().path();
                if !f.is_file() {
                    continue; // the vLLM replay's own folder (graph_replay.rs)
                }
                let rel = f.strip_prefix(&dir).unwrap().to_str().unwrap().to_string();
                let p = analyze(&Source::path(&f).unwrap(), AnalyzeOptions::default())
                    .unwrap()
                    .unwrap()
                    .profile;
                checked += names_agree_with_op_dtypes(&p, &Raw::read(&rel));
            }
        }
        assert!(checked > 1000, "{checked} kernels checked");
    }

    /// Graph launches, AOTAutograd's compiled function (its backward left
    /// out) and a DataLoader that has both iterators, the workers' with
    /// more time: from a small trace.
    #[test]
    fn graphs_compiled_functions_and_loaders_from_event_names() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        std::fs::write(
            &file,
            r#"[
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10000},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 10000, "dur": 10000},
 {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
 {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 10010, "dur": 300},
 {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 1, "tid": 1, "ts": 500, "dur": 2000},
 {"ph": "X", "cat": "cpu_op", "name": "CompiledFunctionBackward", "pid": 1, "tid": 1, "ts": 3000, "dur": 1000},
 {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 1, "tid": 1, "ts": 10500, "dur": 2000},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 600, "dur": 10, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7, "ts": 700, "dur": 100, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "triton_red_fused_sum_1", "pid": 0, "tid": 7, "ts": 800, "dur": 100, "args": {"correlation": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 10600, "dur": 10, "args": {"correlation": 2}},
 {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7, "ts": 10700, "dur": 100, "args": {"correlation": 2}},
 {"ph": "X", "cat": "kernel", "name": "triton_red_fused_sum_1", "pid": 0, "tid": 7, "ts": 10800, "dur": 100, "args": {"correlation": 2}}
]"#,
        )
        .unwrap();
        let p = analyze(&Source::path(&file).unwrap(), AnalyzeOptions::default())
            .unwrap()
            .unwrap()
            .profile;
        let ranges = vec![
            ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__".to_string(), 1, 0.1),
            ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__".to_string(), 1, 0.3),
        ];
        let f = of(&p, &ranges);
        // Two launches in two steps.
        assert_eq!(f.graph_launches_per_step, Some(1.0));
        assert_eq!(
            f.compiled_regions,
            Some(CompiledRegions {
                range: "CompiledFunction".into(),
                per_step: 1.0,
                host_ms_per_step: 2.0
            })
        );
        assert_eq!(f.dataloader, Some(DataloaderKind::Workers));
        assert_eq!(f.triton_kernels_share, 1.0);
        assert_eq!(f.elementwise_share, 0.5);
        assert!(f.matrix_precision.is_empty());
        assert_eq!(TraceFacts::default(), of(&Profile::default(), &[]));
    }

    /// Qwen's RMSNorm chain (`pow → mean → add → rsqrt → mul`, with its
    /// bf16 ↔ fp32 copies), counted in the raw trace: each stream's GPU
    /// work in order, a kernel's op the innermost `cpu_op` around its
    /// launch; a chain is the sequence right after a GEMM kernel and
    /// right before a GEMM / flash kernel or a memset.
    #[test]
    fn qwen_s_rmsnorm_chains_are_found_where_the_raw_trace_runs_them() {
        let rel = "tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
        let (_, p, raw) = facts(rel);
        let chains = p.facts.as_ref().and_then(|f| f.fusable_chains.as_ref()).expect("chains");
        let norm = chains
            .top
            .iter()
            .find(|c| c.ops.iter().any(|o| o == "aten::rsqrt"))
            .expect("an RMSNorm chain");
        assert!(norm.ops.iter().all(|o| !o.is_empty()), "{norm:?}");
        assert!(norm.sequence().contains("aten::pow → aten::mean → aten::add → aten::rsqrt"));

        let (step_ranges, steps) = raw.steps();
        let inside = |at: f64| step_ranges.iter().any(|(s, e)| *s <= at && at <= *e);
        let mut launches: BTreeMap<i64, &Value> = BTreeMap::new();
        let mut ops: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
        for e in &raw.events {
            match cat(e).as_str() {
                "cuda_runtime" | "cuda_driver" => {
                    if let Some(c) = e["args"]["correlation"].as_i64() {
                        launches.insert(c, e);
                    }
                }
                "cpu_op" => ops.entry(e["tid"].as_i64().unwrap_or(0)).or_default().push(e),
                _ => {}
            }
        }
        for thread in ops.values_mut() {
            thread.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
        }
        let op_of = |l: &Value| -> String {
            let Some(thread) = ops.get(&l["tid"].as_i64().unwrap_or(0)) else {
                return String::new();
            };
            let at = ts(l);
            thread[..thread.partition_point(|o| ts(o) <= at)]
                .iter()
                .filter(|o| at <= ts(o) + dur(o))
                .max_by(|a, b| ts(a).total_cmp(&ts(b)).then(dur(b).total_cmp(&dur(a))))
                .map_or(String::new(), |o| name(o).to_string())
        };
        // Per stream: (start, name, op) of the work launched in the step.
        let mut streams: BTreeMap<i64, Vec<(f64, String, String)>> = BTreeMap::new();
        for e in &raw.events {
            if !matches!(cat(e).as_str(), "kernel" | "gpu_memcpy" | "gpu_memset") {
                continue;
            }
            let launch = e["args"]["correlation"].as_i64().and_then(|c| launches.get(&c));
            if !inside(launch.map_or(ts(e), |l| ts(l))) {
                continue;
            }
            let op = launch.map_or(String::new(), |l| op_of(l));
            let stream = e["args"]["stream"].as_i64().unwrap_or(0);
            streams.entry(stream).or_default().push((ts(e), name(e).to_string(), op));
        }
        let gemm = |n: &str| n.to_lowercase().contains("gemm");
        let ends = |n: &str| gemm(n) || n.contains("flash_fwd") || n.starts_with("Memset");
        let mut found = 0;
        for work in streams.values_mut() {
            work.sort_by(|a, b| a.0.total_cmp(&b.0));
            let len = norm.ops.len();
            for w in work.windows(len + 2) {
                let run = w[1..=len].iter().map(|x| x.2.as_str());
                if gemm(&w[0].1)
                    && run.eq(norm.ops.iter().map(String::as_str))
                    && ends(&w[len + 1].1)
                {
                    found += 1;
                }
            }
        }
        assert!(found > 0);
        assert_eq!(norm.count_per_step, found as f64 / steps as f64, "{norm:?}");
    }
}
