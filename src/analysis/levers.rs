//! Levers (docs/analysis.md §16): each a value — the change, the measured
//! evidence it rests on, the trace facts that allow it, and its projected
//! saving, which is a what-if re-timed on the step model (§14) — ranked by
//! that saving. A lever the facts contradict is not one (no CUDA graphs
//! where graphs run, no SDPA on fused attention, no channels-last without
//! transposes to save); a lever whose what-if saves nothing is not printed.
//!
//! The registry: one small function per lever, [`LEVERS`]; adding a lever
//! is one entry and its test.

// Softmax kernels (what fused attention does without) and the layout
// transposes around NHWC kernels fed NCHW tensors (what channels-last
// tensors do without): the facts' own patterns, lower case (`--grep`
// matches without case).
use super::facts::{COMPILED_RANGES, LAYOUT_TRANSPOSE as TRANSPOSES, SOFTMAX_KERNEL as SOFTMAX};
use super::verdict::{LEVER_BELOW_ROOFLINE, ShapeReading, is_attention, matrix_change, read_shape};
use crate::profile::facts::{AttentionKind, DataloaderKind, Precision};
use crate::profile::{
    Category, Efficiency, IdleAccount, IdleCause, LeverKind, LeverRow, ScenarioRow, TraceFacts,
};

/// AMP's projection: the GEMM/conv work at the same share of its
/// roofline, with a 16-bit format's peak and half the bytes. Only where
/// the roofline account priced most of that work (else the figure would
/// rest on the few kernels it priced).
#[derive(Debug, Clone)]
pub struct Amp {
    /// The factor on the GEMM/conv category's time.
    pub scale: f64,
    pub evidence: String,
}

/// GEMM/conv work priced from this share of its time up gives AMP a figure.
pub const AMP_PRICED_SHARE: f64 = 0.5;

impl Amp {
    /// The what-if that asks for it.
    pub fn flags(&self) -> String {
        format!("--remove-category 'gemm / conv' --scale {:.3}", self.scale)
    }

    /// From the roofline account (`eff`), the facts and the GEMM/conv
    /// category's time per step; None where the matrix work runs in 16 or
    /// 8 bits already, the device has no 16-bit peak, or too little of it
    /// was priced.
    pub fn of(eff: &Efficiency, facts: &TraceFacts, gemm_ms: f64) -> Option<Amp> {
        let lead = Amp::fp32_lead(facts)?;
        let m = eff.matrix.as_ref()?;
        let (format, target) = Amp::sixteen_bit(eff)?;
        let bw = eff.peak_tbps?;
        let g = Amp::gemm(eff)?;
        let (flops, bytes, priced) =
            (g.achieved.gflop_per_step?, g.achieved.gb_per_step?, g.achieved.modelled_ms_per_step?);
        if gemm_ms <= 0.0 || priced < AMP_PRICED_SHARE * gemm_ms || target <= m.peak_tflops {
            return None;
        }
        let covered = (priced / gemm_ms).min(1.0);
        // Seconds per step at each roofline (GFLOP / TFLOP/s and GB / TB/s
        // are both ms).
        let now = (flops / m.peak_tflops).max(bytes / bw);
        let then = (flops / target).max(bytes / 2.0 / bw);
        if now <= 0.0 {
            return None;
        }
        let f = then / now;
        let scale = 1.0 - covered * (1.0 - f);
        Some(Amp {
            scale: (scale * 1000.0).round() / 1000.0,
            evidence: format!(
                "GEMM/conv work runs in {} ({:.0}% of matrix time); priced at {:.0}% of its {:.0} TFLOP/s roofline, the same share of {format}'s {target:.0} TFLOP/s with half the bytes takes {:.2}× the time ({:.0}% of GEMM/conv time priced)",
                lead.precision,
                lead.share * 100.0,
                m.pct_of_roofline,
                m.peak_tflops,
                f,
                covered * 100.0
            ),
        })
    }

    /// The lead format of the matrix time, where it is fp32 or TF32.
    fn fp32_lead(facts: &TraceFacts) -> Option<&crate::profile::facts::PrecisionShare> {
        facts
            .matrix_precision
            .first()
            .filter(|l| matches!(l.precision, Precision::Fp32 | Precision::Tf32))
    }

    /// The 16-bit format AMP would run in and its peak (bf16, else fp16).
    fn sixteen_bit(eff: &Efficiency) -> Option<(&'static str, f64)> {
        ["bf16", "fp16"].into_iter().find_map(|f| eff.peak_tflops.get(f).map(|p| (f, *p)))
    }

    /// The roofline account of the GEMM/conv category.
    fn gemm(eff: &Efficiency) -> Option<&crate::profile::CategoryEfficiency> {
        eff.categories.iter().find(|c| c.category == Category::GemmConv)
    }

    /// Why AMP has no figure where it would apply: the matrix work runs in
    /// fp32/TF32 on a device with a faster 16-bit peak, but under
    /// [`AMP_PRICED_SHARE`] of the GEMM/conv time is priced. Said beside
    /// the levers, so that its absence does not read as "AMP would not
    /// help".
    pub fn unpriced(eff: &Efficiency, facts: &TraceFacts, gemm_ms: f64) -> Option<String> {
        let lead = Amp::fp32_lead(facts).filter(|_| gemm_ms > 0.0)?;
        let now = *eff.peak_tflops.get(lead.precision.as_str())?;
        let (format, target) = Amp::sixteen_bit(eff)?;
        let priced = Amp::gemm(eff).and_then(|c| c.achieved.modelled_ms_per_step).unwrap_or(0.0);
        if target <= now || priced >= AMP_PRICED_SHARE * gemm_ms {
            return None;
        }
        let p = crate::util::round_share(priced / gemm_ms * 100.0, 0);
        let share = if p > 0.0 { format!("{p}%") } else { "none".to_string() };
        Some(format!(
            "AMP is not ranked: the matrix work runs in {} ({:.0}% of matrix time) on a device whose {format} peak is {:.1}× its {} peak, but {share} of the GEMM/conv time is priced (the shapes, or the strides and padding convolutions need, of the rest are not in the trace), too little for the step model to give AMP a figure",
            lead.precision,
            lead.share * 100.0,
            target / now,
            lead.precision,
        ))
    }
}

/// SDPA's projection for eager attention: the softmax kernels go, but
/// the fused kernel still does the softmax's arithmetic (on chip, without
/// their memory traffic), so they keep the time their FLOPs take at the
/// device's vector fp32 peak — the compute roof of the priced softmax
/// work, as a share of its time — and the batched matmuls stay as
/// measured. The saving is then at most what the what-if takes away: the
/// fused kernel's arithmetic runs below its peak.
#[derive(Debug, Clone)]
pub struct Sdpa {
    /// The share of the softmax kernels' time kept (0 where the model
    /// priced none of them or the device's peak is unknown).
    pub scale: f64,
    /// What it rests on: the priced softmax work's GFLOP per step, the
    /// time they take at the peak (ms per step) and that peak (TFLOP/s).
    pub kept: Option<(f64, f64, f64)>,
    /// The softmax kernels' time per step.
    pub softmax_ms: f64,
}

impl Sdpa {
    /// The what-if that asks for it.
    pub fn flags(&self) -> String {
        if self.scale > 0.0 {
            format!("--grep '{SOFTMAX}' --scale {:.3}", self.scale)
        } else {
            format!("--grep '{SOFTMAX}'")
        }
    }

    /// None where attention is not eager.
    pub fn of(eff: Option<&Efficiency>, facts: &TraceFacts) -> Option<Sdpa> {
        let a = facts.attention.as_ref().filter(|a| a.kind == AttentionKind::Eager)?;
        let kept = eff.and_then(|e| {
            let peak = *e.peak_tflops.get("fp32")?;
            let c = e.categories.iter().find(|c| c.category == Category::Softmax)?;
            let (gflop, priced) = (c.achieved.gflop_per_step?, c.achieved.modelled_ms_per_step?);
            // GFLOP over TFLOP/s is ms.
            (peak > 0.0 && priced > 0.0).then(|| (gflop, gflop / peak, peak, priced))
        });
        // The priced part's compute roof as a share of its time, for all
        // the softmax kernels; 3 decimals, as the flags say it, rounded up
        // so that the saving stays within the cap its evidence states.
        let scale =
            kept.map_or(0.0, |(_, ms, _, priced)| ((ms / priced).min(1.0) * 1e3).ceil() / 1e3);
        Some(Sdpa {
            scale,
            kept: kept.map(|(g, ms, peak, _)| (g, ms, peak)),
            softmax_ms: a.eager_softmax_ms_per_step,
        })
    }
}

/// What the levers are decided from.
pub struct Ctx<'a> {
    /// AMP's projection, where it has one ([`Amp::of`]).
    pub amp: Option<&'a Amp>,
    /// SDPA's, where attention is eager ([`Sdpa::of`]).
    pub sdpa: Option<&'a Sdpa>,
    /// The roofline account (§13), where the trace has one.
    pub efficiency: Option<&'a Efficiency>,
    /// The step model's what-ifs: the standard set and [`extra`]'s.
    pub scenarios: &'a [ScenarioRow],
    pub facts: &'a TraceFacts,
    pub idle: Option<&'a IdleAccount>,
    pub launches_per_step: f64,
    pub mean_kernel_us: f64,
    pub comm_exposed_ms: Option<f64>,
    /// Whether the model's waits on other streams are the trace's records.
    pub waits_recorded: bool,
    /// Whether the window compiles (the `compilation` health check).
    pub compiling: bool,
    /// Steps the model re-timed: a next step to start early needs two.
    pub steps_modelled: usize,
}

impl Ctx<'_> {
    /// The what-if asked by `flags`, when it saves something.
    fn saving(&self, flags: &str) -> Option<&ScenarioRow> {
        self.scenarios.iter().find(|r| r.flags == flags && r.saved_ms_per_step > 0.0)
    }

    fn cause(&self, c: IdleCause) -> Option<&crate::profile::IdleCauseRow> {
        self.idle.and_then(|i| i.cause(c)).filter(|r| r.ms_per_step > 0.0)
    }

    /// ` — 4.2 ms/step in `x``: a cause's largest place.
    fn place(&self, c: IdleCause) -> String {
        self.cause(c)
            .and_then(|r| r.places.first())
            .map(|p| format!(", {:.2} ms/step in `{}`", p.ms_per_step, p.name))
            .unwrap_or_default()
    }

    fn idle_ms(&self, c: IdleCause) -> f64 {
        self.cause(c).map_or(0.0, |r| r.ms_per_step)
    }
}

/// The what-ifs the levers need beyond the standard set: (flags, what,
/// the kernel-name pattern they scale, the share of its time kept), where
/// the facts call for them.
pub fn extra(facts: &TraceFacts, sdpa: Option<&Sdpa>) -> Vec<(String, String, &'static str, f64)> {
    let mut out = Vec::new();
    if let Some(s) = sdpa {
        out.push((
            s.flags(),
            "softmax kernels down to their arithmetic: attention fused into one kernel".into(),
            SOFTMAX,
            s.scale,
        ));
    }
    if facts.channels_last.as_ref().is_some_and(|c| c.transpose_ms_per_step > 0.0) {
        out.push((
            format!("--grep '{TRANSPOSES}'"),
            "no layout transposes around the convolutions".into(),
            TRANSPOSES,
            0.0,
        ));
    }
    out
}

type Def = fn(&Ctx<'_>) -> Option<LeverRow>;

/// Every lever, each deciding from the context whether it applies.
pub const LEVERS: [Def; 14] = [
    amp,
    matrix_shapes,
    attention_shapes,
    graphs,
    per_op_host_work,
    dataloader,
    syncs,
    python,
    allocator,
    communication,
    elementwise,
    sdpa,
    channels_last,
    streams,
];

/// The levers that apply, largest saving first.
pub fn levers(ctx: &Ctx<'_>) -> Vec<LeverRow> {
    let mut out: Vec<LeverRow> = LEVERS.iter().filter_map(|l| l(ctx)).collect();
    out.sort_by(|a, b| {
        b.saved_ms_per_step.total_cmp(&a.saved_ms_per_step).then(a.lever.cmp(&b.lever))
    });
    out
}

/// A lever from its what-if `row`. Its evidence ends with the work that
/// what-if takes away: the figure its saving cannot exceed, which the
/// cause's GPU-idle figure before it can be far below (host work on the
/// critical path idles the GPU only where nothing else is queued).
fn lever(
    kind: LeverKind,
    change: String,
    row: &ScenarioRow,
    evidence: String,
    rests_on: Vec<String>,
) -> Option<LeverRow> {
    let takes = row.removes_ms_per_step;
    let mut l = LeverRow {
        lever: kind,
        change,
        what_if: row.flags.clone(),
        saved_ms_per_step: row.saved_ms_per_step,
        saved_pct: row.saved_pct,
        saved_without_inferred_ms_per_step: row.saved_without_inferred_ms_per_step,
        evidence: if takes > 0.0 {
            format!("{evidence}; its what-if takes away {takes:.2} ms/step")
        } else {
            evidence
        },
        rests_on,
    };
    if let Some(b) = l.mostly_inferred() {
        l.evidence =
            format!("{}; without the waits the model inferred it saves {b:.3} ms/step", l.evidence);
    }
    Some(l)
}

/// fp32/TF32 matrix work → bf16/fp16 (AMP), at its measured share of
/// the roofline ([`Amp::of`]).
fn amp(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let a = ctx.amp?;
    let row = ctx.saving(&a.flags())?;
    lever(
        LeverKind::Amp,
        "AMP (torch.autocast to bf16/fp16) for the matrix work".into(),
        row,
        a.evidence.clone(),
        vec!["matrix time mostly fp32/TF32".into()],
    )
}

fn compiled(ctx: &Ctx<'_>) -> Option<String> {
    ctx.facts.compiled_regions.as_ref().map(|c| {
        format!(
            "compiled: {:.1} `{}` per step, {:.2} ms/step of host time in them",
            c.per_step, c.range, c.host_ms_per_step
        )
    })
}

/// Launch overhead: CUDA graphs, or inside compiled regions
/// `mode="reduce-overhead"`. Not where graphs already run.
fn graphs(ctx: &Ctx<'_>) -> Option<LeverRow> {
    if ctx.facts.graph_launches_per_step.is_some() {
        return None;
    }
    let row = ctx.saving("--remove-idle launch")?;
    let evidence = format!(
        "{:.2} ms/step of launch gaps; {:.0} launches/step, mean kernel {:.0} µs{}",
        ctx.idle_ms(IdleCause::Launch),
        ctx.launches_per_step,
        ctx.mean_kernel_us,
        ctx.place(IdleCause::Launch)
    );
    let mut rests = vec!["no CUDA/HIP graph launches".to_string()];
    let (kind, change) = match compiled(ctx) {
        Some(c) => {
            rests.push(c);
            (
                LeverKind::ReduceOverhead,
                "torch.compile(mode=\"reduce-overhead\"): CUDA graphs inside the compiled regions"
                    .to_string(),
            )
        }
        None => (
            LeverKind::CudaGraphs,
            "CUDA graphs (torch.cuda.graphs, or torch.compile mode=\"reduce-overhead\")"
                .to_string(),
        ),
    };
    lever(kind, change, row, evidence, rests)
}

/// Ops' own CPU work: torch.compile, or where the step is compiled
/// already, the compiled regions' host time.
fn per_op_host_work(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle cpu_op")?;
    let evidence = format!(
        "{:.2} ms/step inside ops' own CPU work{}",
        ctx.idle_ms(IdleCause::CpuOp),
        ctx.place(IdleCause::CpuOp)
    );
    // Mostly before the first kernel, or in launch calls that load GPU
    // code lazily (the verdict's reading too): start-up work, not per-op
    // overhead.
    let cause = ctx.cause(IdleCause::CpuOp);
    let first = cause.and_then(|c| c.places.first());
    let lazy = first.is_some_and(|p| p.name.contains("LaunchKernel"));
    // A copy or cast on the host before the first kernel is the input's
    // own preparation, which every step repeats: not start-up work.
    let input = first.is_some_and(|p| {
        let leaf = p.name.rsplit(" > ").next().unwrap_or(&p.name);
        matches!(leaf, "aten::copy_" | "aten::_to_copy" | "aten::to")
    });
    if let Some(c) =
        cause.filter(|c| !lazy && input && c.before_first_kernel_ms_per_step >= 0.5 * c.ms_per_step)
    {
        return lever(
            LeverKind::InputOnGpu,
            "prepare the input on the GPU: copy it as loaded (pinned memory, non_blocking) and convert its dtype or layout there".into(),
            row,
            format!("{evidence}, {:.2} ms/step of it before the first kernel", c.before_first_kernel_ms_per_step),
            vec!["its largest place a host copy or cast before the step's first kernel".into()],
        );
    }
    // A compiled region entered from its cache (nothing compiles in the
    // window): its per-call entry cost (guards, wrappers), every step's.
    let cached_region = !ctx.compiling
        && compiled(ctx).is_some()
        && first.is_some_and(|p| COMPILED_RANGES.iter().any(|r| p.name.contains(r)));
    if let Some(c) = cause.filter(|c| {
        !cached_region && (lazy || c.before_first_kernel_ms_per_step >= 0.5 * c.ms_per_step)
    }) {
        return lever(
            LeverKind::WarmUp,
            "warm up before the profiled window: start-up work (GPU context, cuDNN/MIOpen algorithm search, lazy module loading, first allocations)".into(),
            row,
            format!("{evidence}, {:.2} ms/step of it before the first kernel", c.before_first_kernel_ms_per_step),
            vec![if lazy {
                "its largest place a launch call that loads GPU code lazily".into()
            } else {
                "most of it before the first kernel".into()
            }],
        );
    }
    match compiled(ctx) {
        Some(c) => lever(
            LeverKind::CompiledHostWork,
            "the compiled regions' host time: mode=\"reduce-overhead\" (CUDA graphs inside them), fewer graph breaks".into(),
            row,
            evidence,
            vec![c],
        ),
        None => lever(
            LeverKind::TorchCompile,
            "torch.compile: fused ops, less per-op host work".into(),
            row,
            evidence,
            vec!["no compiled regions recorded".into()],
        ),
    }
}

/// DataLoader wait: workers first where the loader is single-process.
fn dataloader(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle dataloader")?;
    let evidence = format!(
        "the loop waits {:.2} ms/step on the DataLoader{}",
        ctx.idle_ms(IdleCause::Dataloader),
        ctx.place(IdleCause::Dataloader)
    );
    match ctx.facts.dataloader {
        Some(DataloaderKind::SingleProcess) => lever(
            LeverKind::DataloaderWorkers,
            "DataLoader(num_workers>0): loading runs in the training loop's process now".into(),
            row,
            evidence,
            vec!["single-process DataLoader (`_SingleProcessDataLoaderIter`)".into()],
        ),
        kind => lever(
            LeverKind::FasterLoading,
            "more DataLoader workers, pinned memory, cached decoding, lighter augmentation".into(),
            row,
            evidence,
            match kind {
                Some(DataloaderKind::Workers) => vec!["DataLoader workers already".into()],
                _ => Vec::new(),
            },
        ),
    }
}

fn syncs(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle sync")?;
    lever(
        LeverKind::RemoveSyncs,
        "take the syncs out of the step (`.item()`, `.cpu()`, `nonzero`, printing tensors) or copy non_blocking from pinned memory".into(),
        row,
        // The host's wait (what the what-if takes away) delays every launch
        // after it: the GPU's idle then shows up later, as launch gaps.
        // A copy the host waits for is work, though no kernel runs.
        format!(
            "the host waits {:.2} ms/step in synchronising calls; {}{}",
            row.removes_ms_per_step,
            match ctx.cause(IdleCause::Sync).and_then(|c| c.copy_said()) {
                Some(copy) => format!(
                    "the GPU runs no kernel for {:.2} ms/step under them (a memcpy/memset runs for {copy:.2} of it)",
                    ctx.idle_ms(IdleCause::Sync)
                ),
                None => format!("the GPU idles {:.2} ms/step under them", ctx.idle_ms(IdleCause::Sync)),
            },
            ctx.place(IdleCause::Sync)
        ) + if ctx.steps_modelled >= 2
            && row.saved_without_inferred_ms_per_step.unwrap_or(row.saved_ms_per_step)
                > 2.0 * ctx.idle_ms(IdleCause::Sync) + 0.1
        {
            // The A100 trace: 0.08 ms/step idle under them, 11.6 saved
            // (5.9 without the inferred waits) over six steps.
            "; it saves more: the host, no longer waiting, launches sooner and starts the next step while the GPU finishes this one"
        } else {
            ""
        },
        Vec::new(),
    )
}

fn python(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle python")?;
    lever(
        LeverKind::MovePython,
        "move that Python work out of the step (into DataLoader workers, onto the GPU) or overlap it with GPU work".into(),
        row,
        format!("{:.2} ms/step of Python outside any op{}", ctx.idle_ms(IdleCause::Python), ctx.place(IdleCause::Python)),
        Vec::new(),
    )
}

fn allocator(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle allocator")?;
    lever(
        LeverKind::WarmUpAllocator,
        "warm up before the window; fixed shapes or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True".into(),
        row,
        format!("{:.2} ms/step in device malloc/free calls{}", ctx.idle_ms(IdleCause::Allocator), ctx.place(IdleCause::Allocator)),
        Vec::new(),
    )
}

fn communication(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let exposed = ctx.comm_exposed_ms.filter(|&e| e > 0.0)?;
    let row = ctx.saving("--remove-category 'communication'")?;
    lever(
        LeverKind::OverlapCommunication,
        "overlap communication with compute (DDP/FSDP bucket sizes, prefetch)".into(),
        row,
        format!("{exposed:.2} ms/step of communication no compute overlaps"),
        Vec::new(),
    )
}

/// Chains of memory-bound kernels between matrix kernels at least this
/// share of the kernel time make fusing them a lever.
pub const CHAINS_SHARE: f64 = 0.05;

/// A chain's sequence is said in full up to this many characters.
const SEQUENCE_CHARS: usize = 160;

/// Fusing elementwise chains removes their memory traffic. Where the step
/// model found chains between matrix kernels, each fused into one kernel
/// (`what-if --fuse-chains`), the largest named; else, with elementwise
/// kernels a tenth of GPU time, at least what running them at their
/// roofline saves.
fn elementwise(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let change = "fuse the elementwise chains (torch.compile, fused kernels)";
    if let Some(c) = ctx.facts.fusable_chains.as_ref().filter(|c| c.share >= CHAINS_SHARE) {
        let row = ctx.saving(super::model::FUSE_CHAINS)?;
        let top = c
            .top
            .first()
            .map(|t| {
                format!(
                    "; largest `{}` ({} kernels, ×{:.0}/step) {:.2} ms/step",
                    t.sequence_within(SEQUENCE_CHARS),
                    t.kernels.len(),
                    t.count_per_step,
                    t.ms_per_step
                )
            })
            .unwrap_or_default();
        return lever(
            LeverKind::FuseElementwise,
            format!("{change}: each chain into one kernel"),
            row,
            format!(
                "{:.1} chains/step of memory-bound kernels between matrix kernels take {:.2} ms/step ({:.0}% of GPU time){top}",
                c.count_per_step,
                c.ms_per_step,
                c.share * 100.0
            ),
            vec![format!(
                "chains of elementwise kernels between matrix kernels, {:.0}% of GPU time",
                c.share * 100.0
            )],
        );
    }
    if ctx.facts.elementwise_share < 0.10 {
        return None;
    }
    let row = ctx.saving("--at-roofline 'elementwise'")?;
    let top = ctx
        .facts
        .elementwise_top
        .first()
        .map(|k| format!("; largest `{}` {:.2} ms/step", k.kernel, k.ms_per_step))
        .unwrap_or_default();
    lever(
        LeverKind::FuseElementwise,
        format!("{change}: their time at least down to their roofline"),
        row,
        format!(
            "elementwise kernels take {:.0}% of GPU time{top}",
            ctx.facts.elementwise_share * 100.0
        ),
        vec![format!("elementwise {:.0}% of GPU time", ctx.facts.elementwise_share * 100.0)],
    )
}

/// Eager attention (softmax between batched matmuls) → SDPA: the softmax
/// kernels go, their arithmetic stays in the fused kernel ([`Sdpa`]). The
/// batched matmuls stay as measured, though a fused kernel also spares
/// them the score matrix's traffic: the figure is the softmax's part,
/// said as such.
fn sdpa(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let s = ctx.sdpa?;
    let row = ctx.saving(&s.flags())?;
    let kept = match s.kept {
        Some((gflop, ms, peak)) => format!(
            "fused, their {gflop:.2} GFLOP/step still take at least {ms:.2} ms/step (at the {peak:.0} TFLOP/s fp32 peak), so the softmax saves at most the rest; the batched matmuls are kept as measured, though a fused kernel also spares them the score matrix's reads and writes, so the change can save more"
        ),
        None => "fused, the kernel still does their arithmetic, which the model could not price here (no shapes or peaks), so the softmax saves at most their time; the batched matmuls are kept as measured, though a fused kernel also spares them the score matrix's reads and writes, so the change can save more".into(),
    };
    lever(
        LeverKind::Sdpa,
        "torch.nn.functional.scaled_dot_product_attention instead of softmax between matmuls"
            .into(),
        row,
        format!("{:.2} ms/step of softmax kernels in eager attention; {kept}", s.softmax_ms),
        vec![
            "eager attention (softmax with bmm/baddbmm), no fused attention kernel leading".into(),
        ],
    )
}

/// NCHW tensors into NHWC convolution kernels: the transposes go with
/// channels-last tensors.
fn channels_last(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let c = ctx.facts.channels_last.as_ref().filter(|c| c.transpose_ms_per_step > 0.0)?;
    let row = ctx.saving(&format!("--grep '{TRANSPOSES}'"))?;
    lever(
        LeverKind::ChannelsLast,
        "channels-last tensors (model and inputs .to(memory_format=torch.channels_last))".into(),
        row,
        format!(
            "{:.2} ms/step of layout transposes around {:.2} ms/step of convolutions ({:.0}% of them NHWC kernels, the transposes turning NCHW tensors to NHWC and back)",
            c.transpose_ms_per_step,
            c.conv_ms_per_step,
            c.nhwc_share * 100.0
        ),
        vec!["convolutions with layout transposes around them".into()],
    )
}

/// GEMM/conv work far below its roofline, its shapes the reason.
fn matrix_shapes(ctx: &Ctx<'_>) -> Option<LeverRow> {
    at_roofline(ctx, Category::GemmConv, LeverKind::MatrixShapes)
}

/// Attention far below its roofline, its shapes the reason.
fn attention_shapes(ctx: &Ctx<'_>) -> Option<LeverRow> {
    at_roofline(ctx, Category::Attention, LeverKind::AttentionShapes)
}

/// A matrix category whose priced work — most of its time — runs below
/// half its roofline (§13), where the op that loses most of it has a
/// shape its bound holds against it ([`read_shape`]: small or unaligned
/// dimensions, few rows, short sequences). Not where the shapes are
/// large and aligned already (the kernel is then what runs below the
/// peak), nor a batched matmul's (a batch adds matrices, not rows: eager
/// attention's are `sdpa`'s). Its what-if runs the category's priced work
/// at the roofline, a bound no real kernel reaches, so the saving is at
/// most that.
fn at_roofline(ctx: &Ctx<'_>, category: Category, kind: LeverKind) -> Option<LeverRow> {
    let eff = ctx.efficiency?;
    let c = eff.categories.iter().find(|c| c.category == category)?;
    let a = &c.achieved;
    let pct = a.pct_of_peak.filter(|p| *p < LEVER_BELOW_ROOFLINE)?;
    let (priced, lost) = (a.modelled_ms_per_step?, a.lost_ms_per_step?);
    // Its rate stands for the category where most of its time is priced
    // (as AMP's figure needs).
    let unpriced = eff.unpriced_by_category.iter().find(|u| u.category == category);
    if unpriced.is_some_and(|u| u.pct_of_category > (1.0 - AMP_PRICED_SHARE) * 100.0) {
        return None;
    }
    let attention = category == Category::Attention;
    let op = eff.least_efficient.iter().find(|o| o.matrix && is_attention(&o.op) == attention)?;
    let bound = op.achieved.roofline_bound.or(a.roofline_bound)?;
    let shape = op.shape.as_deref()?;
    let ShapeReading::Fault(why) = read_shape(shape, bound, attention) else { return None };
    let row = ctx.saving(&format!("--at-roofline '{category}'"))?;
    lever(
        kind,
        format!(
            "{}; the figure is a bound (the work at its roofline)",
            matrix_change(bound, attention)
        ),
        row,
        format!(
            "'{category}' work runs at {pct:.0}% of its roofline (time-weighted over its {priced:.2} ms/step priced), {lost:.2} ms/step lost against it; most in `{}` ({}-bound), whose costliest call `{shape}` has {why} — the roofline is a bound no real kernel reaches, so the saving is at most this",
            op.op,
            bound.as_str()
        ),
        vec![format!("`{}` {}-bound, its costliest call `{shape}`: {why}", op.op, bound.as_str())],
    )
}

fn streams(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle dependency")?;
    lever(
        LeverKind::StreamStructure,
        "the stream and event structure: cross-stream waits that serialise work, events recorded late".into(),
        row,
        format!("{:.2} ms/step of GPU idle with work queued behind another stream{}", ctx.idle_ms(IdleCause::Dependency), ctx.place(IdleCause::Dependency)),
        vec![if ctx.waits_recorded {
            "cross-stream waits the trace records (its cuda_sync stream waits)"
        } else {
            "cross-stream waits inferred from the times (the trace records no event waits)"
        }
        .into()],
    )
}
