//! The bottleneck verdict and its reason (docs/analysis.md §10), decided once here for
//! every profile we build.

use crate::hardware::PeakClass::{Bf16, Fp32, Fp32Matrix, Tf32};
use crate::profile::{
    Efficiency, HealthRow, IdleAccount, IdleCause, IdleCauseRow, LeverRow, Mode, RooflineBound,
    ScenarioRow, Stages, StepModelView, TraceFacts, Verdict,
};

/// Dataloader wait at or above this share of the real step is the verdict.
pub const DATALOADER_FRAC: f64 = 0.20;
/// GPU utilisation at or above this is compute-bound.
pub const COMPUTE_UTIL: f64 = 0.80;
/// An inference stage at or above this share of the step can be the verdict.
pub const STAGE_FRAC: f64 = 0.35;
/// cudaMalloc/cudaFree calls per step that mean allocator thrash.
pub const MALLOCS_PER_STEP: f64 = 5.0;
/// Reserved memory at this share of the device's capacity counts as full.
pub const RESERVED_FULL: f64 = 0.95;

/// The second idle cause is named from this share of the idle time up.
pub const SECOND_CAUSE_SHARE: f64 = 0.15;

/// A fusion lever is named from this share of the forward up.
pub const FUSION_SHARE: f64 = 0.02;

/// The range our capture records around each unfused RepConvN's 1×1
/// branch and sums (the capture's `model::REPCONV_BRANCH`, held equal by
/// its test): what `--fuse` merges away besides BatchNorm.
pub const REPCONV_BRANCH: &str = "RepConvN 1x1 branch";

/// BatchNorm left in an inference forward: what `--fuse` would fold into
/// the convolutions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unfused {
    /// BatchNorm launches per image in the forward.
    pub batch_norms_per_image: f64,
    /// Their share of the forward: CPU time on CPU, kernel time on CUDA.
    pub share: f64,
    /// RepConvN 1×1 branches per image our capture recorded as ranges
    /// (0: none recorded): `--fuse` merges them into their 3×3.
    pub repconv_branches_per_image: f64,
}

/// The numbers a verdict is decided from.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'a> {
    pub mode: Option<Mode>,
    pub cuda: bool,
    pub memory_pressure: bool,
    pub mallocs_per_step: f64,
    /// Device whose reserved memory reached its capacity: (reserved, capacity) MB.
    pub reserved_full: Option<(f64, f64)>,
    pub step_ms: f64,
    /// Measured dataloader wait per step (None: not measurable from a trace).
    pub dataload_ms: Option<f64>,
    pub gpu_util: f64,
    pub gpu_busy_ms: f64,
    pub launches_per_step: f64,
    /// CUDA/HIP graph launches per step: the trace already replays graphs.
    pub graph_launches_per_step: f64,
    /// Communication kernel time per step, and the part no compute kernel
    /// overlaps.
    pub comm_ms: f64,
    pub comm_exposed_ms: f64,
    pub mean_kernel_us: f64,
    pub host_overhead_ms: f64,
    /// CPU runs: share of the step inside framework ops.
    pub in_ops_frac: Option<f64>,
    pub stages: Option<&'a Stages>,
    /// Wall time per phase (synced when measured), for the CPU case.
    pub phase_wall: Vec<(String, f64)>,
    /// Unfolded BatchNorm in an inference forward (None: fused, or none).
    pub unfused: Option<Unfused>,
    /// Why the GPU waited (GPU traces).
    pub idle: Option<&'a IdleAccount>,
    /// Graph captures begun in the trace (`cudaStreamBeginCapture`).
    pub graph_captures: u64,
    /// How close to the hardware the GPU work ran (§13), where priced.
    pub efficiency: Option<&'a Efficiency>,
    /// How the work already runs (§16): a lever they contradict is not
    /// named.
    pub facts: Option<&'a TraceFacts>,
    /// The levers the trace supports, ranked by the step model's saving
    /// (§16): where there are any, the verdict names those instead of its
    /// cause's rule-written ones.
    pub levers: &'a [LeverRow],
    /// The step with all GPU work taken away, as the step model re-times
    /// it (§14): the host's own path. A busy GPU whose work is shorter than
    /// that is paced by its host.
    pub host_alone_ms: Option<f64>,
    /// The window cannot support a verdict (§15: a finding that cannot
    /// tell): what it reads as recorded names no levers, not even its
    /// cause's rule-written ones.
    pub withhold_levers: bool,
}

/// Ranked levers the verdict names.
pub const RANKED_LEVERS: usize = 2;

/// The verdict's levers: the ranked ones with their savings where the
/// step model gave any, else the cause's own (`rule`).
fn ranked_or(e: &Evidence<'_>, rule: String) -> String {
    if e.withhold_levers {
        return String::new();
    }
    match ranked(e) {
        Some(list) => format!("Levers, by what the step model says each saves: {list}."),
        None => rule,
    }
}

/// The ranked levers the verdict names, with their savings.
fn ranked(e: &Evidence<'_>) -> Option<String> {
    if e.levers.is_empty() {
        return None;
    }
    let shown: Vec<String> = e
        .levers
        .iter()
        .take(RANKED_LEVERS)
        .map(|l| {
            let bound = l.mostly_inferred().map_or(String::new(), |b| {
                format!(", {b:.3} without the waits the model inferred")
            });
            format!(
                "`{}` −{:.3} ms/step ({:.1}%{bound}): {}",
                l.lever, l.saved_ms_per_step, l.saved_pct, l.change
            )
        })
        .collect();
    Some(shown.join("; "))
}

/// A compute verdict's ranked levers from this share of the step up lead
/// it; below, they are the host's crumbs beside the GPU's own work, and
/// the roofline's levers come first.
pub const COMPUTE_LEVER_PCT: f64 = 5.0;

/// A priced op is a lever of the compute verdict from this share of the
/// GPU's time up …
pub const LEVER_GPU_SHARE: f64 = 5.0;
/// … when it runs below this share of its roofline.
pub const LEVER_BELOW_ROOFLINE: f64 = 50.0;
/// Ops at or above this share of their roofline run near it.
pub const NEAR_ROOFLINE: f64 = 70.0;

/// The verdict and its reason, with the fusion lever where it applies.
pub fn decide(e: &Evidence<'_>) -> (Verdict, String) {
    let (bound, why) = bottleneck(e);
    let why = match e.unfused {
        Some(u)
            if e.mode == Some(Mode::Inference)
                && (bound == Verdict::Compute || bound.is_host())
                && u.batch_norms_per_image >= 1.0
                && u.share >= FUSION_SHARE =>
        {
            let lever = format!(
                "{}. Lever: `--fuse` folds {:.0} BatchNorm launches per image into their convolutions (BatchNorm is {:.0}% of the forward here)",
                why.trim_end_matches('.'),
                u.batch_norms_per_image,
                u.share * 100.0
            );
            if u.repconv_branches_per_image >= 1.0 {
                // Our capture named the branches: the what-if can take
                // them away too.
                format!(
                    "{lever} and merges {:.0} RepConvN 1×1 branches into their 3×3; `what-if --op 'batch_norm|RepConvN 1x1'` re-times the ops it removes, and comparing the two profiles shows the gain.",
                    u.repconv_branches_per_image
                )
            } else {
                format!("{lever}; compare the two profiles for the gain.")
            }
        }
        _ => why,
    };
    // (a withheld lever leaves the sentence before it last)
    (bound, why.trim_end().to_string())
}

fn bottleneck(e: &Evidence<'_>) -> (Verdict, String) {
    if e.memory_pressure {
        let mut why = format!(
            "allocator thrash: ~{:.0} device malloc/free calls (cudaMalloc, hipFree, …) per step",
            e.mallocs_per_step
        );
        if let Some(a) = e.idle.and_then(|i| i.cause(IdleCause::Allocator)) {
            why = format!("{why}; the GPU waits {:.1} ms/step in them", a.ms_per_step);
        }
        if let Some((r, cap)) = e.reserved_full {
            why = format!("{why}; reserved memory reached {r:.0} of {cap:.0} MB");
        }
        return (
            Verdict::MemoryPressure,
            format!(
                "{why} — VRAM pressure, so utilisation and throughput here are unreliable. Lever: a smaller --batch."
            ),
        );
    }
    if e.mode == Some(Mode::Inference) {
        if let Some(v) = inference_stage_verdict(e) {
            return v;
        }
    }
    if let Some(v) = e.dataload_ms.and_then(|dl| dataloader_verdict(e, dl)) {
        return v;
    }
    if !e.cuda {
        return cpu_verdict(e);
    }
    if e.mode != Some(Mode::Inference) {
        if let Some(v) = communication_verdict(e) {
            return v;
        }
    }
    if e.gpu_util >= COMPUTE_UTIL {
        // Busy is not the limit where the host's own path is as long.
        if let Some(host) = e.host_alone_ms.filter(|h| *h >= e.gpu_busy_ms) {
            return (
                Verdict::HostLaunch,
                format!(
                    "GPU {:.0}% busy ({:.2} ms of {:.2} ms per step), but the host paces it: re-timed on the step model with no GPU work at all, the host's own path still takes {host:.2} ms/step, at least as long as the GPU's work ({:.0} kernel launches/step, mean kernel {:.0} µs). {}",
                    e.gpu_util * 100.0,
                    e.gpu_busy_ms,
                    e.step_ms,
                    e.launches_per_step,
                    e.mean_kernel_us,
                    ranked_or(e, launch_levers(e))
                ),
            );
        }
        let head = format!(
            "GPU {:.0}% busy ({:.2} ms of {:.2} ms per step) — the GPU is the limit",
            e.gpu_util * 100.0,
            e.gpu_busy_ms,
            e.step_ms
        );
        let rule = e
            .efficiency
            .and_then(|eff| roofline_levers(eff, e.facts))
            .unwrap_or_else(|| compute_levers(e.facts));
        // Levers that save a sliver of a GPU-bound step do not lead it.
        let small = e.levers.first().is_some_and(|l| l.saved_pct < COMPUTE_LEVER_PCT);
        let levers = match ranked(e).filter(|_| small && !e.withhold_levers) {
            Some(list) => format!(
                "{rule} The levers the step model ranks save little beside the GPU's own work: {list}."
            ),
            None => ranked_or(e, rule),
        };
        return (Verdict::Compute, format!("{head}. {levers}"));
    }
    if let Some(v) = e.idle.and_then(|idle| idle_verdict(e, idle)) {
        return v;
    }
    let measured = if e.dataload_ms.is_none() {
        " (dataloader wait is not measurable from a trace alone)"
    } else {
        ""
    };
    (
        Verdict::HostLaunch,
        format!(
            "GPU only {:.0}% busy: {:.0} kernel launches/step (mean kernel {:.0} µs), {:.2} ms/step of host time{measured}. {}",
            e.gpu_util * 100.0,
            e.launches_per_step,
            e.mean_kernel_us,
            e.host_overhead_ms,
            ranked_or(e, launch_levers(e))
        ),
    )
}

/// The compute verdict's levers without a roofline account: those the
/// trace facts (§16) do not contradict — no AMP where the matrix work runs
/// in 16 or 8 bits already (or there is none), no channels-last without
/// convolutions or where they run NHWC with no transposes to save.
fn compute_levers(facts: Option<&TraceFacts>) -> String {
    let amp =
        facts.is_none_or(|f| f.matrix_precision.first().is_some_and(|p| !p.precision.is_reduced()));
    let channels_last = facts.is_none_or(|f| {
        f.channels_last
            .as_ref()
            .is_some_and(|c| c.nhwc_share < 0.5 || c.transpose_ms_per_step > 0.0)
    });
    let mut levers: Vec<&str> = Vec::new();
    if amp {
        levers.push("AMP/bf16");
    }
    if channels_last {
        levers.push("channels-last");
    }
    levers.push("fewer or cheaper kernels");
    format!("Levers: {}.", levers.join(", "))
}

/// Whether the facts say the matrix work runs in 16 or 8 bits already.
fn reduced_precision(facts: Option<&TraceFacts>) -> bool {
    facts.is_some_and(|f| f.matrix_precision.first().is_some_and(|p| p.precision.is_reduced()))
}

/// The compute verdict's levers from the roofline account (§13): the
/// priced ops that take a real share of the GPU and run far below their
/// roofline, each with the lever its limit implies; AMP where the matrix
/// work runs in fp32; or, when the big ops already run near the roofline,
/// that only less work or a faster device helps. None without priced work
/// on a device with known peaks.
fn roofline_levers(eff: &Efficiency, facts: Option<&TraceFacts>) -> Option<String> {
    let priced: Vec<_> =
        eff.least_efficient.iter().filter(|o| o.achieved.pct_of_peak.is_some()).collect();
    if priced.is_empty() {
        return None;
    }
    let far: Vec<_> = priced
        .iter()
        .filter(|o| {
            o.pct_of_gpu >= LEVER_GPU_SHARE
                && o.achieved.pct_of_peak.is_some_and(|p| p < LEVER_BELOW_ROOFLINE)
        })
        .take(2)
        .collect();
    let mut parts = Vec::new();
    for o in &far {
        let (pct, bound) = (o.achieved.pct_of_peak.unwrap_or(0.0), o.achieved.roofline_bound);
        let attention = is_attention(&o.op);
        let reading = |b| o.shape.as_deref().map(|sh| (sh, read_shape(sh, b, attention)));
        let lever = match (bound, o.matrix) {
            (Some(b), true) => match reading(b) {
                Some((sh, ShapeReading::Fault(why))) => format!(
                    "{}-bound: {} (its costliest call `{sh}`: {why})",
                    b.as_str(),
                    matrix_change(b, attention)
                ),
                Some((sh, ShapeReading::LargeAndAligned)) => format!(
                    "{}-bound with large, aligned matrices already (its costliest call `{sh}`): the kernel, not the shapes, runs below the device's peak — a better kernel for them (another library, or one tuned to them) is what raises it",
                    b.as_str()
                ),
                _ => format!("{}-bound: {}", b.as_str(), matrix_change(b, attention)),
            },
            (Some(RooflineBound::Memory), false) if is_copy(&o.op) => {
                "memory-bound, a copy: keep one layout and dtype so it is not needed, or fuse it (torch.compile)".into()
            }
            (Some(RooflineBound::Memory), false) => {
                "memory-bound: fuse it with its neighbours (torch.compile) so its bytes move once".into()
            }
            _ => format!("compute-bound: {}", matrix_change(RooflineBound::Compute, false)),
        };
        parts.push(format!(
            "{} ({:.0}% of GPU time) runs at {pct:.0}% of its roofline, {lever}",
            o.op, o.pct_of_gpu
        ));
    }
    let fp32 = eff.matrix.as_ref().filter(|m| matches!(m.format, Fp32 | Tf32 | Fp32Matrix));
    if let Some(m) = fp32.filter(|_| !reduced_precision(facts)) {
        let faster = eff.peak_tflops.get(Bf16.as_str()).map_or(String::new(), |bf16| {
            format!(": {:.0} → {bf16:.0} TFLOP/s peak", m.peak_tflops)
        });
        parts.push(format!(
            "GEMM/conv/attention run in {} — AMP/bf16 raises their roof{faster}",
            m.format
        ));
    }
    if parts.is_empty() {
        let big: Vec<_> = priced.iter().filter(|o| o.pct_of_gpu >= LEVER_GPU_SHARE).collect();
        if big.is_empty()
            || big.iter().any(|o| o.achieved.pct_of_peak.is_some_and(|p| p < NEAR_ROOFLINE))
        {
            return None;
        }
        return Some(format!(
            "The largest priced ops run near their roofline ({}): only less work (a smaller model or input, fewer kernels) or a faster device helps.",
            big.iter()
                .take(3)
                .map(|o| format!("{} {:.0}%", o.op, o.achieved.pct_of_peak.unwrap_or(0.0)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(format!("Levers: {}.", parts.join("; ")))
}

/// What raises matrix work's rate at its roofline `bound`.
pub fn matrix_change(bound: RooflineBound, attention: bool) -> &'static str {
    match (bound, attention) {
        // Attention's FLOPs per byte grow with the sequence, not the batch.
        (RooflineBound::Memory, true) => {
            "too little work per byte moved — longer sequences (a larger batch does not) raise its arithmetic intensity"
        }
        (RooflineBound::Memory, false) => {
            "too little work per byte moved — a larger batch (more rows per GEMM) raises its arithmetic intensity"
        }
        (RooflineBound::Compute, true) => {
            "more work per attention kernel (a larger batch, longer sequences, head dimensions in multiples of 64) fills the GPU"
        }
        (RooflineBound::Compute, false) => {
            "larger or better-shaped matrices (a larger batch, dimensions in multiples of 64) fill the GPU"
        }
    }
}

/// Attention work, by its op's name.
pub fn is_attention(op: &str) -> bool {
    op.contains("attention")
}

/// Matrix dimensions under this are small: too few tiles to fill the
/// GPU, or too little work per byte moved.
pub const SMALL_DIM: u64 = 256;
/// Dimensions in multiples of this fit the matrix units' tiles.
pub const TILE_ALIGN: u64 = 64;

/// What a matrix call's shape says of its distance from the roofline.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeReading {
    /// The shape holds it back, as its bound explains: small or
    /// unaligned dimensions (compute), few rows or a short sequence
    /// (memory) — said, e.g. `K=30 under 256`.
    Fault(String),
    /// Large and aligned already: the kernel, not the shape, runs below
    /// the peak.
    LargeAndAligned,
    /// Not a GEMM's or attention's inputs, or a shape that explains
    /// nothing either way (a batched matmul's matrices, whose size a
    /// batch does not change).
    Unknown,
}

/// Reads a matrix call's formula inputs (`M=98304 N=647 K=30`,
/// `B=8 H=16 Lq=4096 Lk=4096 D=128`) against its roofline `bound`.
pub fn read_shape(shape: &str, bound: RooflineBound, attention: bool) -> ShapeReading {
    let dims: Vec<(&str, u64)> = shape
        .split_whitespace()
        .filter_map(|t| {
            let (k, v) = t.split_once('=')?;
            Some((k, v.parse().ok()?))
        })
        .collect();
    let get = |k: &str| dims.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    let small = |ks: &[(&str, u64)]| -> Vec<String> {
        ks.iter().filter(|(_, v)| *v < SMALL_DIM).map(|(k, v)| format!("{k}={v}")).collect()
    };
    let said = |small: Vec<String>, unaligned: Vec<String>| {
        let mut parts = Vec::new();
        if !small.is_empty() {
            parts.push(format!("{} under {SMALL_DIM}", small.join(", ")));
        }
        if !unaligned.is_empty() {
            parts.push(format!(
                "{} not {} of {TILE_ALIGN}",
                unaligned.join(", "),
                if unaligned.len() == 1 { "a multiple" } else { "multiples" }
            ));
        }
        if parts.is_empty() {
            ShapeReading::LargeAndAligned
        } else {
            ShapeReading::Fault(parts.join("; "))
        }
    };
    if attention {
        let (Some(lq), Some(lk), Some(d)) = (get("Lq"), get("Lk"), get("D")) else {
            return ShapeReading::Unknown;
        };
        let short = small(&[("Lq", lq), ("Lk", lk)]);
        return match bound {
            RooflineBound::Compute => {
                let unaligned =
                    if d % TILE_ALIGN == 0 { Vec::new() } else { vec![format!("D={d}")] };
                said(short, unaligned)
            }
            RooflineBound::Memory if !short.is_empty() => said(short, Vec::new()),
            RooflineBound::Memory => ShapeReading::Unknown,
        };
    }
    let (Some(m), Some(n), Some(k)) = (get("M"), get("N"), get("K")) else {
        return ShapeReading::Unknown;
    };
    match bound {
        // The rows tail a tile at most once; the inner and output
        // dimensions set every tile's shape.
        RooflineBound::Compute => said(
            small(&[("M", m), ("N", n), ("K", k)]),
            [("N", n), ("K", k)]
                .iter()
                .filter(|(_, v)| v % TILE_ALIGN != 0)
                .map(|(d, v)| format!("{d}={v}"))
                .collect(),
        ),
        // Few rows against the weights they read: a larger batch brings
        // more. Not a batched matmul's: a batch adds matrices, not rows.
        RooflineBound::Memory if get("B").is_none() && m < SMALL_DIM && m <= n.min(k) => {
            ShapeReading::Fault(format!("M={m} rows under {SMALL_DIM}"))
        }
        RooflineBound::Memory => ShapeReading::Unknown,
    }
}

/// Ops that only copy or convert data (by aten name: `scatter` and
/// `concat`-like names are not copies to avoid).
fn is_copy(op: &str) -> bool {
    let name = op.strip_prefix("aten::").unwrap_or(op);
    matches!(
        name,
        "copy_"
            | "_to_copy"
            | "to"
            | "contiguous"
            | "clone"
            | "_copy_from"
            | "_copy_from_and_resize"
    )
}

/// The facts say the DataLoader runs in the loop's process.
fn single_process(e: &Evidence<'_>) -> bool {
    e.facts
        .is_some_and(|f| f.dataloader == Some(crate::profile::facts::DataloaderKind::SingleProcess))
}

/// What shortens a DataLoader wait: workers first where it has none.
fn dataloader_levers(e: &Evidence<'_>) -> String {
    if single_process(e) {
        "Levers: DataLoader(num_workers>0) first — the loader runs in the loop's process (`_SingleProcessDataLoaderIter`); then pinned memory, caching decoded images, lighter augmentation.".into()
    } else {
        "Levers: more DataLoader workers, pinned memory, caching decoded images, lighter augmentation.".into()
    }
}

/// What removes launch gaps, unless the trace already replays graphs.
fn launch_levers(e: &Evidence<'_>) -> String {
    if e.graph_launches_per_step > 0.0 {
        format!(
            "CUDA/HIP graphs are already in use ({:.0} graph launches/step). Levers: fewer host-side ops between graph replays, op fusion, a larger batch.",
            e.graph_launches_per_step
        )
    } else if let Some(c) = e.facts.and_then(|f| f.compiled_regions.as_ref()) {
        format!(
            "The step runs compiled already ({:.0} `{}` per step). Levers: CUDA graphs inside the compiled regions (torch.compile mode=\"reduce-overhead\"), op fusion, a larger batch.",
            c.per_step, c.range
        )
    } else {
        "Levers: CUDA graphs, torch.compile, op fusion, a larger batch.".to_string()
    }
}

/// The host-side verdict from the idle account: its largest cause, with
/// its figure and place, and the levers that fit that cause (§12).
fn idle_verdict(e: &Evidence<'_>, idle: &IdleAccount) -> Option<(Verdict, String)> {
    let top = idle.causes.first().filter(|c| c.ms_per_step > 0.0)?;
    let head = format!(
        "GPU idle {:.1} of {:.1} ms per step ({:.0}%)",
        idle.ms_per_step,
        e.step_ms,
        ratio(idle.ms_per_step, e.step_ms) * 100.0
    );
    let lead = if top.before_first_kernel_ms_per_step >= 0.5 * top.ms_per_step {
        format!(" ({:.1} ms before the first kernel)", top.before_first_kernel_ms_per_step)
    } else {
        String::new()
    };
    let (bound, what, levers) = match top.cause {
        IdleCause::Python => (
            Verdict::HostPython,
            format!("the host runs Python outside any op{lead}{}", python_places(top)),
            "Levers: move that work into DataLoader workers or onto the GPU, or overlap it with the previous step's GPU work.".to_string(),
        ),
        IdleCause::Sync => (
            Verdict::HostSync,
            format!("the host waits in synchronising calls{lead}{}", flat_places(top, 2)),
            "Levers: remove the sync from the step (`.item()`, `.cpu()`, `nonzero`, printing tensors), or copy `non_blocking=True` from pinned memory.".to_string(),
        ),
        IdleCause::CpuOp => (
            Verdict::HostCpuOp,
            format!(
                "the host is inside ops' own CPU work, launching nothing{lead}{}{}",
                flat_places(top, 3),
                // Said of the launch call it is about, not of the last place.
                match top.places.iter().take(3).find(|p| p.name.ends_with("LaunchKernel")) {
                    Some(p) => format!(
                        " (`{}` is a launch call that long: it loads the kernel's code first, so its time is its op's own)",
                        p.name.rsplit(" > ").next().unwrap_or(&p.name)
                    ),
                    None => String::new(),
                }
            ),
            cpu_op_levers(e, top),
        ),
        IdleCause::Allocator => (
            Verdict::HostAllocator,
            format!("the host is in device malloc/free calls{lead}{}", flat_places(top, 2)),
            "The caching allocator is still growing, so this window is not a steady step. Levers: warm up before the profiled window; if it persists, keep tensor shapes fixed or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.".to_string(),
        ),
        IdleCause::Launch => (
            Verdict::HostLaunch,
            format!(
                "in {:.0} gaps in which the host dispatched kernels (launch calls, and gaps under {} µs with no other host work; {:.0} launches/step, mean kernel {:.0} µs){}",
                top.gaps_per_step,
                super::idle::LAUNCH_GAP_NS / 1000,
                e.launches_per_step,
                e.mean_kernel_us,
                flat_places(top, 2)
            ),
            launch_levers(e),
        ),
        IdleCause::Dataloader => (
            Verdict::Dataloader,
            format!("the loop waits on the DataLoader{lead}{}", python_places(top)),
            dataloader_levers(e),
        ),
        IdleCause::Dependency => (
            Verdict::Dependency,
            format!(
                "the next kernel was already queued and did not start: it waited on another stream, an event, or work the trace does not show{}",
                flat_places(top, 2)
            ),
            "Levers: the stream and event structure: cross-stream waits that serialise work, events recorded too late.".to_string(),
        ),
        IdleCause::Other => (
            Verdict::IdleUnexplained,
            format!("and the trace cannot say why{}", flat_places(top, 1)),
            "Record the CPU side too (ProfilerActivity.CPU, with_stack=True) to see what the GPU waited for.".to_string(),
        ),
    };
    let second = idle
        .causes
        .get(1)
        .filter(|c| c.ms_per_step >= SECOND_CAUSE_SHARE * idle.ms_per_step)
        .map(|c| format!(" Next: {} {:.1} ms ({}).", c.cause, c.ms_per_step, c.cause.meaning()))
        .unwrap_or_default();
    let sep = if top.cause == IdleCause::Other { " " } else { ": " };
    let figure = if top.cause == IdleCause::Other {
        String::new()
    } else {
        format!("{:.1} ms of it ", top.ms_per_step)
    };
    let levers = ranked_or(e, levers);
    let why = format!(
        "{head}{}{figure}{what}.{second} {levers}",
        if figure.is_empty() { sep } else { "; " }
    );
    Some((bound, why))
}

/// ` — 4.2 ms in `a`, 1.0 ms in `b``: the cause's largest places.
fn flat_places(c: &IdleCauseRow, n: usize) -> String {
    let shown: Vec<String> = c
        .places
        .iter()
        .take(n)
        .filter(|p| p.ms_per_step > 0.0)
        .map(|p| format!("{:.1} ms in `{}`", p.ms_per_step, p.name))
        .collect();
    if shown.is_empty() { String::new() } else { format!(" — {}", shown.join(", ")) }
}

/// The Python frames that explain the time (the Python cause's, or those
/// under the DataLoader, rooted at its range): the outermost one on the
/// path and the deepest, or the largest place when no frame was recorded.
fn python_places(c: &IdleCauseRow) -> String {
    let path: Vec<_> = c.places.iter().filter(|p| p.path).collect();
    match (path.first(), path.last()) {
        (Some(first), Some(last)) if first.name != last.name => {
            format!(
                " — {:.1} ms in `{}`, {:.1} ms of it in `{}`",
                first.ms_per_step, first.name, last.ms_per_step, last.name
            )
        }
        (Some(first), _) => format!(" — {:.1} ms in `{}`", first.ms_per_step, first.name),
        _ => flat_places(c, 2),
    }
}

/// Levers for time inside ops' own CPU work, from what those ops are and
/// how the time is spread.
fn cpu_op_levers(e: &Evidence<'_>, c: &IdleCauseRow) -> String {
    if e.graph_captures > 0 {
        return format!(
            "The window records {} CUDA/HIP graph capture{}: kernels are recorded then, not run, so the GPU waits by design. Lever: profile the graph replays instead.",
            e.graph_captures,
            crate::util::plural(e.graph_captures as f64)
        );
    }
    let per_gap = ratio(c.ms_per_step, c.gaps_per_step);
    if c.gaps_per_step >= 20.0 && per_gap < 1.0 {
        let facts = e.facts;
        let remove = match facts.and_then(|f| f.compiled_regions.as_ref()) {
            Some(r) => format!(
                "the compiled regions' host time ({:.2} ms/step in {:.0} `{}` per step): mode=\"reduce-overhead\" (CUDA graphs inside them), fewer graph breaks",
                r.host_ms_per_step, r.per_step, r.range
            ),
            None if facts.is_some_and(|f| f.graph_launches_per_step.is_some()) => {
                "torch.compile (CUDA/HIP graphs run already: it removes per-op host work between them)".into()
            }
            None => "CUDA graphs or torch.compile (they remove per-op host work)".into(),
        };
        return format!(
            "Spread over {:.0} gaps/step of ~{:.2} ms: each op's CPU work outlasts the kernels it launches. Levers: {remove}, larger kernels (a larger batch, fusion); a busy host CPU makes it worse.",
            c.gaps_per_step, per_gap
        );
    }
    let mut levers: Vec<&str> = Vec::new();
    if c.before_first_kernel_ms_per_step >= 0.5 * c.ms_per_step {
        levers.push("most of it comes before the first kernel, one-off start-up work (GPU context, first allocations, module loading): warm up before the profiled window");
    }
    // Places too small to matter get no lever of their own.
    for p in c.places.iter().take(3).filter(|p| p.ms_per_step >= 0.05 * c.ms_per_step) {
        let n = p.name.as_str();
        let lever = if n.contains("LaunchKernel") {
            "first launches load GPU code lazily: warm up before the profiled window"
        } else if n.contains("convolution") {
            "cuDNN/MIOpen search algorithms on each new shape (benchmark mode): warm up before the profiled window"
        } else if n.ends_with("aten::copy_") {
            "host-to-device copies from pageable memory: pin it (`pin_memory=True`) and copy with `non_blocking=True`"
        } else if n.ends_with("aten::empty_strided") || n.ends_with("aten::empty") {
            continue; // an allocation: start-up or allocator growth, said above or by `allocator`
        } else {
            "move that CPU work out of the step or onto the GPU"
        };
        if !levers.contains(&lever) {
            levers.push(lever);
        }
    }
    if levers.is_empty() { String::new() } else { format!("Levers: {}.", levers.join("; ")) }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// `communication` when the communication no compute kernel hides is the
/// largest share of the step: larger than the compute, than the idle
/// (host) time and than the dataloader wait.
fn communication_verdict(e: &Evidence<'_>) -> Option<(Verdict, String)> {
    let exposed = e.comm_exposed_ms;
    if exposed <= 0.0 || e.step_ms <= 0.0 {
        return None;
    }
    let compute = (e.gpu_busy_ms - exposed).max(0.0);
    let idle = e.host_overhead_ms;
    let dataload = e.dataload_ms.unwrap_or(0.0);
    if exposed <= compute || exposed <= idle || exposed <= dataload {
        return None;
    }
    let hidden = if e.comm_ms > 0.0 { (e.comm_ms - exposed) / e.comm_ms * 100.0 } else { 0.0 };
    Some((
        Verdict::Communication,
        format!(
            "exposed communication takes {exposed:.2} ms of the {:.2} ms step ({:.0}%), more than compute ({compute:.2} ms); only {hidden:.0}% of the {:.2} ms of collectives overlaps compute. {}",
            e.step_ms,
            exposed / e.step_ms * 100.0,
            e.comm_ms,
            ranked_or(e, "Levers: overlap communication with compute (DDP/FSDP bucket sizes, prefetch), fewer ranks per node or a faster interconnect, gradient compression.".into())
        ),
    ))
}

fn inference_stage_verdict(e: &Evidence<'_>) -> Option<(Verdict, String)> {
    let s = e.stages?;
    let (pre, fwd, post) =
        (s.preprocess.unwrap_or(0.0), s.forward.unwrap_or(0.0), s.postprocess.unwrap_or(0.0));
    let total = pre + fwd + post;
    if total <= 0.0 {
        return None;
    }
    if post >= fwd && post / total >= STAGE_FRAC {
        return Some((
            Verdict::NmsPostprocess,
            format!(
                "postprocess/NMS takes {post:.2} ms ({:.0}% of the step), no less than forward ({fwd:.2} ms). Levers: a higher --conf, a lower --max-det, class-agnostic or batched NMS.",
                post / total * 100.0
            ),
        ));
    }
    if pre >= fwd && pre / total >= STAGE_FRAC {
        return Some((
            Verdict::Preprocess,
            format!(
                "preprocess takes {pre:.2} ms ({:.0}% of the step), no less than forward ({fwd:.2} ms). Levers: decode once, resize on the GPU, a smaller --imgsz, larger batches.",
                pre / total * 100.0
            ),
        ));
    }
    if !e.cuda {
        return Some((
            Verdict::Compute,
            format!("forward dominates the step ({fwd:.2} ms) — CPU-bound{}", in_ops(e)),
        ));
    }
    None
}

/// On CPU, how much of the step ran inside framework ops, as a clause.
fn in_ops(e: &Evidence<'_>) -> String {
    e.in_ops_frac.map_or_else(String::new, |f| {
        format!(
            "; {:.0}% of it inside framework ops, {:.0}% between them",
            f * 100.0,
            (1.0 - f) * 100.0
        )
    })
}

/// The dataloader verdict, when the step waits `dl` ms, at least
/// [`DATALOADER_FRAC`] of it, on the loader.
fn dataloader_verdict(e: &Evidence<'_>, dl: f64) -> Option<(Verdict, String)> {
    let frac = dl / e.step_ms;
    (e.step_ms > 0.0 && frac >= DATALOADER_FRAC).then(|| {
        (
            Verdict::Dataloader,
            format!(
                "the step waits {dl:.1} ms of {:.1} ms ({:.0}%) on the dataloader. {}",
                e.step_ms,
                frac * 100.0,
                ranked_or(e, if single_process(e) {
                    "Levers: DataLoader workers first — the loader runs in the loop's process (`_SingleProcessDataLoaderIter`): more --workers; then caching decoded images, lighter augmentation, a larger batch."
                } else {
                    "Levers: more --workers, caching decoded images, lighter augmentation, a larger batch."
                }.into())
            ),
        )
    })
}

/// On CPU there is no launch queue to starve: the step is compute, and the
/// phase that dominates it is the thing to look at; unless the loop waits
/// on its dataloader (the `dataload` phase, where no wait was measured).
fn cpu_verdict(e: &Evidence<'_>) -> (Verdict, String) {
    let dataload = e.phase_wall.iter().find(|(p, _)| p == "dataload").map(|(_, ms)| *ms);
    if let Some(v) =
        dataload.filter(|_| e.dataload_ms.is_none()).and_then(|dl| dataloader_verdict(e, dl))
    {
        return v;
    }
    let total: f64 = e.phase_wall.iter().map(|(_, ms)| ms).sum();
    let top =
        e.phase_wall.iter().filter(|(p, _)| p != "dataload").max_by(|a, b| a.1.total_cmp(&b.1));
    let why = match top {
        Some((phase, ms)) if total > 0.0 => {
            format!(
                "CPU run: {phase} dominates the step ({ms:.2} ms, {:.0}% of the phases) — CPU-bound",
                ms / total * 100.0
            )
        }
        _ => format!("CPU run: no GPU work recorded; the step ({:.2} ms) is CPU-bound", e.step_ms),
    };
    (Verdict::Compute, format!("{why}{}", in_ops(e)))
}

/// The reason of a `cannot tell` verdict: the health finding that leaves
/// the window without one, how to record a window that has one, and the
/// verdict the window as recorded would get, for what it is worth.
pub fn cannot_tell(finding: &HealthRow, recorded: &Verdict, why: &str) -> String {
    let how = if finding.recapture.is_empty() {
        String::new()
    } else {
        format!(" Re-capture: {}.", finding.recapture)
    };
    format!(
        "{}.{how} As recorded, the window reads {}: {why}",
        finding.says.trim_end_matches('.'),
        recorded.as_str().to_uppercase()
    )
}

/// The standard what-if that fixes what a verdict names.
fn own_change(bound: &Verdict) -> Option<&'static str> {
    Some(match bound {
        Verdict::HostLaunch => "--remove-idle launch",
        Verdict::HostPython => "--remove-idle python",
        Verdict::HostSync => "--remove-idle sync",
        Verdict::HostCpuOp => "--remove-idle cpu_op",
        Verdict::HostAllocator => "--remove-idle allocator",
        Verdict::Dataloader => "--remove-idle dataloader",
        Verdict::Dependency => "--remove-idle dependency",
        Verdict::Communication => "--remove-category 'communication'",
        _ => return None,
    })
}

/// What the step model says of a verdict (docs/analysis.md §14): what
/// fixing its cause saves, re-timed, and the largest saving when that is
/// another change and clearly larger (`ranked`: the verdict names the
/// ranked levers, so only its own cause's saving). `None` without a model
/// or a saving.
pub fn model_sentence(bound: &Verdict, m: &StepModelView, ranked: bool) -> Option<String> {
    let top = m.scenarios.first().filter(|r| r.saved_ms_per_step > 0.0)?;
    let own = own_change(bound).and_then(|f| m.scenarios.iter().find(|r| r.flags == f));
    if ranked {
        // The ranked levers name the largest savings already.
        return own.map(|o| {
            format!(
                "Re-timed on the step model, fixing its cause saves {:.3} ms/step ({:.1}%).",
                o.saved_ms_per_step, o.saved_pct
            )
        });
    }
    let say = |r: &ScenarioRow| {
        format!(
            "`{}` ({}): {:.3} ms/step ({:.1}%)",
            r.flags, r.what, r.saved_ms_per_step, r.saved_pct
        )
    };
    Some(match own {
        Some(o) if o.flags == top.flags => format!(
            "Re-timed on the step model, fixing its cause saves {:.3} ms/step ({:.1}%): the largest of its what-ifs.",
            o.saved_ms_per_step, o.saved_pct
        ),
        Some(o) if top.saved_ms_per_step >= 1.5 * o.saved_ms_per_step && top.saved_pct >= 2.0 => {
            format!(
                "Re-timed on the step model, fixing its cause saves {:.3} ms/step ({:.1}%); its largest saving is {}.",
                o.saved_ms_per_step,
                o.saved_pct,
                say(top)
            )
        }
        Some(o) => format!(
            "Re-timed on the step model, fixing its cause saves {:.3} ms/step ({:.1}%).",
            o.saved_ms_per_step, o.saved_pct
        ),
        None => format!("The step model's largest saving: {}.", say(top)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda(util: f64) -> Evidence<'static> {
        Evidence {
            cuda: true,
            gpu_util: util,
            step_ms: 10.0,
            mode: Some(Mode::Training),
            ..Default::default()
        }
    }

    /// A busy GPU without ranked levers names its priced ops far from
    /// their roofline, with the lever their limit implies; a window that
    /// cannot support a verdict names none of them.
    #[test]
    fn the_ops_far_from_their_roofline_are_the_compute_levers() {
        use crate::profile::{Achieved, Efficiency, OpEfficiency, RooflineBound};
        let sdpa = OpEfficiency {
            op: "aten::scaled_dot_product_attention".into(),
            matrix: true,
            pct_of_gpu: 40.0,
            achieved: Achieved {
                pct_of_peak: Some(19.0),
                roofline_bound: Some(RooflineBound::Memory),
                ..Default::default()
            },
            shape: None,
        };
        let eff = Efficiency { least_efficient: vec![sdpa], ..Default::default() };
        let e = Evidence { efficiency: Some(&eff), gpu_busy_ms: 9.5, ..cuda(0.95) };
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::Compute);
        assert!(
            why.contains("aten::scaled_dot_product_attention (40% of GPU time) runs at 19% of its roofline, memory-bound")
                && why.contains("longer sequences"),
            "{why}"
        );
        let (_, why) = decide(&Evidence { withhold_levers: true, ..e });
        assert!(why.ends_with("the GPU is the limit."), "{why}");
    }

    /// A shape holds matrix work back where its bound explains how: small
    /// or unaligned dimensions (compute), few rows or a short sequence
    /// (memory); large, aligned shapes leave the kernel as the reason.
    #[test]
    fn a_shape_says_whether_it_holds_matrix_work_back() {
        use RooflineBound::{Compute, Memory};
        use ShapeReading::{Fault, LargeAndAligned, Unknown};
        let fault = |s: &str| Fault(s.to_string());
        // The A100 control trace's aten::mm, and the Triton MI300X trace's.
        assert_eq!(
            read_shape("M=98304 N=647 K=30", Compute, false),
            fault("K=30 under 256; N=647, K=30 not multiples of 64")
        );
        assert_eq!(read_shape("M=32768 N=2048 K=2048", Compute, false), LargeAndAligned);
        // A ragged row count tails one tile: not the reason.
        assert_eq!(read_shape("M=25089 N=3072 K=768", Compute, false), LargeAndAligned);
        assert_eq!(read_shape("M=8 N=4096 K=4096", Memory, false), fault("M=8 rows under 256"));
        // Batched: a batch adds matrices, not rows. Tall and narrow: more
        // rows do not help either.
        assert_eq!(read_shape("B=96 M=3137 N=3137 K=64", Memory, false), Unknown);
        assert_eq!(read_shape("M=98304 N=30 K=647", Memory, false), Unknown);
        let attention = "B=8 H=16 Lq=4096 Lk=4096 D=128";
        assert_eq!(read_shape(attention, Compute, true), LargeAndAligned);
        assert_eq!(
            read_shape("B=8 H=16 Lq=4096 Lk=4096 D=80", Compute, true),
            fault("D=80 not a multiple of 64")
        );
        assert_eq!(
            read_shape("B=64 H=32 Lq=1 Lk=2048 D=128", Memory, true),
            fault("Lq=1 under 256")
        );
        assert_eq!(read_shape(attention, Memory, true), Unknown);
        // A convolution's inputs are not a GEMM's.
        assert_eq!(read_shape("N=128 Cin=3 Cout=768 out=14x14 k=16x16", Compute, false), Unknown);
    }

    #[test]
    fn a_gpu_bound_step_leads_with_the_gpu_not_with_host_crumbs() {
        let lever = |saved_pct: f64| LeverRow {
            lever: crate::profile::LeverKind::RemoveSyncs,
            change: "take the syncs out".into(),
            what_if: "--remove-idle sync".into(),
            saved_ms_per_step: saved_pct / 10.0,
            saved_pct,
            saved_without_inferred_ms_per_step: None,
            evidence: String::new(),
            rests_on: Vec::new(),
        };
        let small = [lever(1.5)];
        let (v, why) = decide(&Evidence { levers: &small, ..cuda(0.97) });
        assert_eq!(v, Verdict::Compute);
        let (rule, crumbs) = why.split_once("The levers the step model ranks save little").unwrap();
        assert!(rule.contains("Levers: AMP/bf16"), "{why}");
        assert!(crumbs.contains("`remove-syncs` −0.150 ms/step (1.5%)"), "{why}");
        let large = [lever(12.0)];
        let (_, why) = decide(&Evidence { levers: &large, ..cuda(0.97) });
        assert!(why.contains("Levers, by what the step model says each saves: `remove-syncs`"));
        assert!(!why.contains("AMP"), "{why}");
    }

    #[test]
    fn training_verdicts_in_order() {
        let mut e = cuda(0.9);
        assert_eq!(decide(&e).0, Verdict::Compute);
        e.gpu_util = 0.5;
        assert_eq!(decide(&e).0, Verdict::HostLaunch);
        e.dataload_ms = Some(2.0); // 20% of 10 ms
        assert_eq!(decide(&e).0, Verdict::Dataloader);
        e.dataload_ms = Some(1.99);
        assert_eq!(decide(&e).0, Verdict::HostLaunch);
        e.memory_pressure = true;
        assert_eq!(decide(&e).0, Verdict::MemoryPressure);
    }

    #[test]
    fn communication_when_exposed_collectives_dominate() {
        // 10 ms step, 9 ms busy of which 5 ms is communication no compute
        // hides: exposed 5 > compute 4 > idle 1.
        let mut e = cuda(0.9);
        e.gpu_busy_ms = 9.0;
        e.host_overhead_ms = 1.0;
        e.comm_ms = 6.0;
        e.comm_exposed_ms = 5.0;
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::Communication);
        assert!(
            why.contains("5.00 ms of the 10.00 ms step (50%)")
                && why.contains("17% of the 6.00 ms"),
            "{why}"
        );
        // Hidden behind compute: not the verdict.
        e.comm_exposed_ms = 4.0;
        assert_eq!(decide(&e).0, Verdict::Compute);
        // The dataloader still comes first.
        e.comm_exposed_ms = 5.0;
        e.dataload_ms = Some(2.0);
        assert_eq!(decide(&e).0, Verdict::Dataloader);
        // Inference is never called communication-bound.
        e.dataload_ms = None;
        e.mode = Some(Mode::Inference);
        assert_ne!(decide(&e).0, Verdict::Communication);
    }

    #[test]
    fn graphs_in_use_are_not_recommended() {
        let mut e = cuda(0.3);
        assert!(decide(&e).1.contains("CUDA graphs, torch.compile, op fusion"));
        e.graph_launches_per_step = 1.0;
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::HostLaunch);
        assert!(
            why.contains("already in use (1 graph launches/step)")
                && !why.contains("CUDA graphs, op fusion"),
            "{why}"
        );
    }

    #[test]
    fn fusion_is_a_lever_for_an_unfused_compute_bound_inference() {
        let fwd = Stages { preprocess: Some(1.0), forward: Some(90.0), postprocess: Some(2.0) };
        let mut e = Evidence {
            mode: Some(Mode::Inference),
            stages: Some(&fwd),
            step_ms: 93.0,
            ..Default::default()
        };
        e.unfused =
            Some(Unfused { batch_norms_per_image: 221.0, share: 0.07, ..Default::default() });
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::Compute);
        assert!(
            why.contains("CPU-bound. Lever: `--fuse` folds 221 BatchNorm launches per image")
                && why.contains("7% of the forward"),
            "{why}"
        );
        assert!(!why.contains("RepConvN"), "no branch ranges recorded: {why}");
        // Our capture's branch ranges: the lever names them and the what-if.
        e.unfused = Some(Unfused {
            batch_norms_per_image: 221.0,
            share: 0.07,
            repconv_branches_per_image: 42.0,
        });
        let why = decide(&e).1;
        assert!(
            why.contains("and merges 42 RepConvN 1×1 branches into their 3×3; `what-if --op 'batch_norm|RepConvN 1x1'`"),
            "{why}"
        );
        // Too small a share to matter, a fused graph, or training: no lever.
        e.unfused =
            Some(Unfused { batch_norms_per_image: 221.0, share: 0.01, ..Default::default() });
        assert!(!decide(&e).1.contains("--fuse"));
        e.unfused = None;
        assert!(!decide(&e).1.contains("--fuse"));
        e.unfused =
            Some(Unfused { batch_norms_per_image: 221.0, share: 0.07, ..Default::default() });
        e.mode = Some(Mode::Training);
        assert!(!decide(&e).1.contains("--fuse"));
        // A CUDA inference fed too slowly: fusion also removes launches.
        let mut e = cuda(0.3);
        e.mode = Some(Mode::Inference);
        e.unfused =
            Some(Unfused { batch_norms_per_image: 221.0, share: 0.2, ..Default::default() });
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::HostLaunch);
        assert!(why.contains("a larger batch. Lever: `--fuse` folds 221"), "{why}");
    }

    #[test]
    fn inference_verdicts() {
        let nms = Stages { preprocess: Some(1.0), forward: Some(3.0), postprocess: Some(3.0) };
        let mut e = cuda(0.9);
        e.mode = Some(Mode::Inference);
        e.stages = Some(&nms);
        assert_eq!(decide(&e).0, Verdict::NmsPostprocess);
        let pre = Stages { preprocess: Some(4.0), forward: Some(4.0), postprocess: Some(1.0) };
        e.stages = Some(&pre);
        assert_eq!(decide(&e).0, Verdict::Preprocess);
        let fwd = Stages { preprocess: Some(1.0), forward: Some(8.0), postprocess: Some(1.0) };
        e.stages = Some(&fwd);
        assert_eq!(decide(&e).0, Verdict::Compute);
        e.gpu_util = 0.3;
        assert_eq!(decide(&e).0, Verdict::HostLaunch);
        e.cuda = false;
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::Compute);
        assert!(why.contains("forward dominates the step (8.00 ms)"), "{why}");
        e.in_ops_frac = Some(0.94);
        assert_eq!(
            decide(&e).1,
            "forward dominates the step (8.00 ms) — CPU-bound; 94% of it inside framework ops, 6% between them"
        );
    }

    /// A busy GPU is the limit only where its work is longer than the
    /// host's own path, as the step model re-times it without GPU work.
    #[test]
    fn a_busy_gpu_the_host_paces_is_not_the_limit() {
        let e = Evidence {
            cuda: true,
            mode: Some(Mode::Training),
            gpu_util: 0.89,
            gpu_busy_ms: 5.34,
            step_ms: 6.02,
            launches_per_step: 562.0,
            mean_kernel_us: 10.0,
            host_alone_ms: Some(4.7),
            ..Default::default()
        };
        assert_eq!(decide(&e).0, Verdict::Compute);
        let paced = Evidence { host_alone_ms: Some(6.02), ..e };
        let (bound, why) = decide(&paced);
        assert_eq!(bound, Verdict::HostLaunch);
        assert!(why.contains("the host's own path still takes 6.02 ms/step"), "{why}");
        assert_eq!(decide(&Evidence { host_alone_ms: None, ..paced }).0, Verdict::Compute);
    }

    #[test]
    fn cpu_training_names_the_dominant_phase() {
        let e = Evidence {
            mode: Some(Mode::Training),
            step_ms: 900.0,
            dataload_ms: Some(3.0),
            phase_wall: vec![
                ("dataload".into(), 3.0),
                ("forward".into(), 562.5),
                ("backward".into(), 277.5),
            ],
            ..Default::default()
        };
        let (bound, why) = decide(&e);
        assert_eq!(bound, Verdict::Compute);
        assert_eq!(
            why,
            "CPU run: forward dominates the step (562.50 ms, 67% of the phases) — CPU-bound"
        );
        let e = Evidence { in_ops_frac: Some(0.881), ..e };
        assert!(
            decide(&e).1.ends_with("— CPU-bound; 88% of it inside framework ops, 12% between them"),
            "{}",
            decide(&e).1
        );
    }
}

#[cfg(test)]
mod idle_tests {
    use super::*;
    use crate::profile::IdlePlace;

    fn account(causes: &[(IdleCause, f64, &str)]) -> IdleAccount {
        IdleAccount {
            ms_per_step: causes.iter().map(|c| c.1).sum(),
            causes: causes
                .iter()
                .map(|&(cause, ms, place)| IdleCauseRow {
                    cause,
                    ms_per_step: ms,
                    gaps_per_step: 3.0,
                    before_first_kernel_ms_per_step: 0.0,
                    copy_ms_per_step: None,
                    places: vec![IdlePlace {
                        name: place.into(),
                        ms_per_step: ms,
                        depth: None,
                        path: false,
                    }],
                })
                .collect(),
            ..Default::default()
        }
    }

    fn host_bound(idle: &IdleAccount) -> (Verdict, String) {
        let e = Evidence {
            cuda: true,
            gpu_util: 0.3,
            step_ms: 100.0,
            mode: Some(Mode::Training),
            launches_per_step: 900.0,
            idle: Some(idle),
            ..Default::default()
        };
        decide(&e)
    }

    #[test]
    fn the_largest_idle_cause_decides_and_graphs_only_for_launch_gaps() {
        for (cause, bound, lever) in [
            (IdleCause::Python, Verdict::HostPython, "DataLoader workers"),
            (IdleCause::Sync, Verdict::HostSync, "non_blocking"),
            (IdleCause::CpuOp, Verdict::HostCpuOp, "move that CPU work"),
            (IdleCause::Allocator, Verdict::HostAllocator, "warm up"),
            (IdleCause::Dependency, Verdict::Dependency, "stream and event"),
            (IdleCause::Dataloader, Verdict::Dataloader, "DataLoader workers"),
        ] {
            let idle = account(&[(cause, 50.0, "where"), (IdleCause::Launch, 10.0, "aten::add")]);
            let (b, why) = host_bound(&idle);
            assert_eq!(b, bound, "{why}");
            assert!(
                why.contains("50.0 ms of it")
                    && why.contains("50.0 ms in `where`")
                    && why.contains(lever),
                "{why}"
            );
            assert!(!why.contains("CUDA graphs"), "{cause}: {why}");
            assert!(
                why.contains("Next: launch 10.0 ms"),
                "the second cause is 17% of the idle: {why}"
            );
        }
        let idle =
            account(&[(IdleCause::Launch, 50.0, "aten::add"), (IdleCause::Python, 5.0, "x")]);
        let (b, why) = host_bound(&idle);
        assert_eq!(b, Verdict::HostLaunch);
        assert!(
            why.contains("CUDA graphs")
                && why.contains("3 gaps in which the host dispatched kernels")
                && !why.contains("Next:"),
            "{why}"
        );
    }
}
