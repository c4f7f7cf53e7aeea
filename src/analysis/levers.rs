//! Levers (docs/analysis.md §16): each a value — the change, the measured
//! evidence it rests on, the trace facts that allow it, and its projected
//! saving, which is a what-if re-timed on the step model (§14) — ranked by
//! that saving. A lever the facts contradict is not one (no CUDA graphs
//! where graphs run, no SDPA on fused attention, no channels-last without
//! transposes to save); a lever whose what-if saves nothing is not printed.
//!
//! The registry: one small function per lever, [`LEVERS`]; adding a lever
//! is one entry and its test.

use crate::profile::facts::{AttentionKind, DataloaderKind};
use crate::profile::{IdleAccount, IdleCause, LeverKind, LeverRow, ScenarioRow, TraceFacts};

/// What the levers are decided from.
pub struct Ctx<'a> {
    /// The step model's what-ifs: the standard set and [`extra`]'s.
    pub scenarios: &'a [ScenarioRow],
    pub facts: &'a TraceFacts,
    pub idle: Option<&'a IdleAccount>,
    pub launches_per_step: f64,
    pub mean_kernel_us: f64,
    pub comm_exposed_ms: Option<f64>,
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

/// Softmax kernels: what fused attention (SDPA) does without.
pub const SOFTMAX: &str = "softmax";
/// The layout transposes around NHWC convolution kernels fed NCHW
/// tensors: what channels-last tensors do without.
pub const TRANSPOSES: &str = "nchwToNhwc|nhwcToNchw|batched_transpose";

/// The what-ifs the levers need beyond the standard set: (flags, what,
/// the kernel-name pattern they remove), where the facts call for them.
pub fn extra(facts: &TraceFacts) -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    if facts.attention.as_ref().is_some_and(|a| a.kind == AttentionKind::Eager) {
        out.push((
            format!("--grep '{SOFTMAX}'"),
            "no softmax kernels: attention fused into one kernel".into(),
            SOFTMAX,
        ));
    }
    if facts.channels_last.as_ref().is_some_and(|c| c.transpose_ms_per_step > 0.0) {
        out.push((
            format!("--grep '{TRANSPOSES}'"),
            "no layout transposes around the convolutions".into(),
            TRANSPOSES,
        ));
    }
    out
}

type Def = fn(&Ctx<'_>) -> Option<LeverRow>;

/// Every lever, each deciding from the context whether it applies.
pub const LEVERS: [Def; 11] = [
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
        b.saves_ms_per_step.total_cmp(&a.saves_ms_per_step).then(a.lever.cmp(&b.lever))
    });
    out
}

fn lever(
    kind: LeverKind,
    change: String,
    row: &ScenarioRow,
    evidence: String,
    rests_on: Vec<String>,
) -> Option<LeverRow> {
    Some(LeverRow {
        lever: kind,
        change,
        what_if: row.flags.clone(),
        saves_ms_per_step: row.saved_ms_per_step,
        saves_pct: row.saved_pct,
        evidence,
        rests_on,
    })
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
    let lazy =
        cause.and_then(|c| c.places.first()).is_some_and(|p| p.name.contains("LaunchKernel"));
    if let Some(c) =
        cause.filter(|c| lazy || c.before_first_kernel_ms_per_step >= 0.5 * c.ms_per_step)
    {
        return lever(
            LeverKind::WarmUp,
            "warm up before the profiled window: start-up work (CUDA context, cuDNN/MIOpen algorithm search, lazy module loading, first allocations)".into(),
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
        format!("{:.2} ms/step blocked in synchronising calls{}", ctx.idle_ms(IdleCause::Sync), ctx.place(IdleCause::Sync)),
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
        format!("{:.2} ms/step in cudaMalloc/cudaFree{}", ctx.idle_ms(IdleCause::Allocator), ctx.place(IdleCause::Allocator)),
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

/// Fusing elementwise chains removes their memory traffic: at least what
/// running them at their roofline saves.
fn elementwise(ctx: &Ctx<'_>) -> Option<LeverRow> {
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
        "fuse the elementwise chains (torch.compile, fused kernels): their time at least down to their roofline".into(),
        row,
        format!("elementwise kernels take {:.0}% of GPU time{top}", ctx.facts.elementwise_share * 100.0),
        vec![format!("elementwise {:.0}% of GPU time", ctx.facts.elementwise_share * 100.0)],
    )
}

/// Eager attention (softmax between batched matmuls) → SDPA: the softmax
/// kernels go.
fn sdpa(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let a = ctx.facts.attention.as_ref().filter(|a| a.kind == AttentionKind::Eager)?;
    let row = ctx.saving(&format!("--grep '{SOFTMAX}'"))?;
    lever(
        LeverKind::Sdpa,
        "torch.nn.functional.scaled_dot_product_attention instead of softmax between matmuls"
            .into(),
        row,
        format!("{:.2} ms/step of softmax kernels in eager attention", a.eager_softmax_ms_per_step),
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
            "{:.2} ms/step of layout transposes around {:.2} ms/step of convolutions ({:.0}% of them NHWC kernels)",
            c.transpose_ms_per_step,
            c.conv_ms_per_step,
            c.nhwc_share * 100.0
        ),
        vec!["convolutions with layout transposes around them".into()],
    )
}

fn streams(ctx: &Ctx<'_>) -> Option<LeverRow> {
    let row = ctx.saving("--remove-idle dependency")?;
    lever(
        LeverKind::StreamStructure,
        "the stream and event structure: cross-stream waits that serialise work, events recorded late".into(),
        row,
        format!("{:.2} ms/step of GPU idle with work queued behind another stream{}", ctx.idle_ms(IdleCause::Dependency), ctx.place(IdleCause::Dependency)),
        vec!["cross-stream waits inferred from the times (the trace records no event waits)".into()],
    )
}
