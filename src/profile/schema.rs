//! `profile.json`: the contract between capture and every reader.
//!
//! Field names are those of the reference implementation (LibreYOLO 1.6,
//! `docs/profile-schema.md`), so its files deserialize as they are;
//! our additions (attribution, streams, devices, warnings, per-metric std)
//! are optional and skipped when empty. Every field has a default so that a
//! partial file from another writer still loads; readers decide what a
//! missing value means.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kinds::{Category, HealthCheck, LeverKind, Mode, Severity, Verdict};
pub use super::measured::{Latency, RunConfig, Stages};

/// Schema id written by both implementations.
pub const SCHEMA_ID: &str = "libreyolo.profile.analysis/v1";
/// Prefix that marks a JSON object as a profile rather than a trace.
pub const SCHEMA_PREFIX: &str = "libreyolo.profile.analysis";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Profile {
    pub schema: String,
    /// "training" or "inference". The reference omits it for training; a
    /// name this reader does not know reads as absent.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::kinds::mode_or_none"
    )]
    pub mode: Option<Mode>,
    pub trace: Option<String>,
    pub model: Option<String>,
    pub config: RunConfig,
    pub bound: Verdict,
    pub bound_why: String,
    /// `step_ms` … `stages_ms`: the figures `profile summary` shows.
    #[serde(flatten)]
    pub figures: Figures,
    /// Flat map for `profile get`; see [`crate::lens::get`].
    pub metrics: Map<String, Value>,
    pub categories: Vec<CategoryRow>,
    pub phases: Vec<PhaseRow>,
    pub phases_gpu: Vec<PhaseGpuRow>,
    pub kernels_by_phase: IndexMap<String, Vec<KernelRow>>,
    pub ops_by_phase: IndexMap<String, Vec<OpRow>>,
    pub top_kernels: Vec<KernelRow>,
    pub kernels: Vec<KernelRow>,
    pub ops: Vec<OpRow>,

    // --- repeats (both implementations) ---
    #[serde(skip_serializing_if = "Option::is_none")]
    pub img_per_s_std: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub img_per_s_n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub img_per_s_trials: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<Value>,

    // --- additions of ours ---
    /// Population std of each averaged scalar across repeat trials.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub metrics_std: IndexMap<String, f64>,
    /// How GPU work was attributed to steps and phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamRow>,
    /// Allocated and reserved memory over the window, per device, from the
    /// trace's `[memory]` events (docs/analysis.md §9).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<crate::profile::DeviceMemory>,
    /// `comm_ms_per_step` … `phases_inferred`: what `profile summary` also
    /// shows when the trace has it.
    #[serde(flatten)]
    pub extras: ExtraFigures,
    /// Each step's wall time in the trace, in time order (two or more steps).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_times: Vec<StepTime>,
    /// The rank of a distributed job this trace is (`distributedInfo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributed: Option<Distributed>,
    /// Why the GPU waited (docs/analysis.md §12): GPU traces only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleAccount>,
    /// How close to the hardware the GPU work ran (docs/analysis.md §13):
    /// GPU traces only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<Efficiency>,
    /// One model of the step (docs/analysis.md §14): its critical path and
    /// the standard what-ifs re-timed on it. GPU traces only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_model: Option<StepModelView>,
    /// What the trace says about how the work already runs (number
    /// formats, layout, compiled regions, graphs, DataLoader, attention):
    /// the levers' preconditions (docs/analysis.md §16). Traces only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<super::TraceFacts>,
    /// The levers the trace supports, largest projected saving first
    /// (docs/analysis.md §16). GPU traces with a step model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levers: Vec<LeverRow>,
    /// What about the window makes its figures or its verdict less true
    /// (docs/analysis.md §15), most severe first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<HealthRow>,
    /// Every communication kernel of the trace in time order: what the
    /// job-level matching of collectives needs of each rank (docs/analysis.md §11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveCall>,
    /// What ran inside what, down to the kernels (docs/analysis.md §17).
    /// Traces with CPU ops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_tree: Option<super::CallTree>,
    /// Things the analysis had to skip or approximate, for people to read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Value>,
}

/// The headline figures of a profile: step time and throughput, the
/// dataloader's share, GPU busy time and utilisation, launches and kernels
/// per step, memcpy, Tensor Core share, peak VRAM, the window they were
/// averaged over and, for inference, latency and the stage split.
///
/// Flattened (`#[serde(flatten)]`) into both [`Profile`] and
/// [`crate::lens::summary::Summary`], so the summary takes them as one value
/// instead of listing them again. These keys are contiguous in
/// `profile.json` and in this order, so flattening writes them where they
/// always were; a figure added here lands in both. `#[serde(default)]` keeps
/// a missing key defaulted as before.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Figures {
    pub step_ms: f64,
    pub img_per_s: Option<f64>,
    pub dataload_ms: Option<f64>,
    pub dataload_frac: Option<f64>,
    pub gpu_util: f64,
    pub gpu_util_raw: f64,
    pub memory_pressure: bool,
    pub cuda_mallocs_per_step: f64,
    pub host_overhead_ms_per_step: f64,
    pub launches_per_step: f64,
    pub gpu_busy_ms_per_step: f64,
    pub mean_kernel_us: f64,
    pub kernels_per_step: f64,
    pub unique_kernels: u64,
    pub memcpy_ms_per_step: f64,
    pub tensorcore_pct: f64,
    pub peak_vram_mb: Option<f64>,
    pub window: Window,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages_ms: Option<Stages>,
}

/// Headline figures of ours that only some traces give (skipped when
/// absent, so never in the reference's files): communication, graph
/// launches, and how the phases were found. Flattened into [`Profile`] and
/// the summary like [`Figures`]; these keys are contiguous in
/// `profile.json` too, but not next to [`Figures`]'s, hence a second struct.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct ExtraFigures {
    /// Communication kernels (NCCL/RCCL, …): time per step, the part not
    /// overlapped by compute, and the overlapped share (docs/analysis.md §8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_ms_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_exposed_ms_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_overlap_pct: Option<f64>,
    /// CUDA/HIP graph launches per step (each counts as one launch; its
    /// kernels count as kernels).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_launches_per_step: Option<f64>,
    /// Where the trace lacks some kernels' launch calls (kernels launched
    /// through an API the profiler did not record, e.g. the driver's): the
    /// launches it did record, per step. `launches_per_step` counts every
    /// kernel's launch all the same: the host launched each one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launches_recorded_per_step: Option<f64>,
    /// The kernel time of those replays: it belongs to no op, shape or
    /// module of this trace (docs/analysis.md §17).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_ms_per_step: Option<f64>,
    /// The part of it matched to the ops that captured the graphs, from a
    /// capture trace given beside this one (docs/analysis.md §17.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_attributed_ms_per_step: Option<f64>,
    /// How the phases were found when the trace has no `step/<phase>`
    /// ranges of its own (inferred from PyTorch's own annotations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases_inferred: Option<String>,
    /// CPU runs: the share of the step the busiest thread (the training or
    /// inference loop's) spent inside framework ops, the union of its CPU
    /// ops; the rest is the code between them. "Host overhead" means time
    /// the GPU waits on the host, which a CPU run has no use for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_in_ops_frac: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Window {
    pub wall_ms: f64,
    pub real_steps: u64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct CategoryRow {
    pub name: Category,
    pub pct: f64,
    pub ms_per_step: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PhaseRow {
    pub phase: String,
    pub gpu_ms_per_step: f64,
    pub wall_ms_per_step: Option<f64>,
    pub kernels_per_step: f64,
    pub ops_per_step: f64,
    pub unique_kernels: u64,
    /// Ours: memcpy + memset time launched from this phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcpy_ms_per_step: Option<f64>,
    /// Ours: GPU idle time while the loop was in this phase (the idle
    /// account's, docs/analysis.md §12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_ms_per_step: Option<f64>,
}

/// Why the GPU waited: the idle time inside the steps, by cause
/// (docs/analysis.md §12).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct IdleAccount {
    /// GPU idle time per step on the busiest device: the step minus the
    /// union of its kernels.
    pub ms_per_step: f64,
    /// The device the account is of (the busiest one).
    pub device: i64,
    /// Idle gaps per step, and the part of the idle time before each step's
    /// first kernel and after its last one.
    pub gaps_per_step: f64,
    pub before_first_kernel_ms_per_step: f64,
    pub after_last_kernel_ms_per_step: f64,
    /// Largest first; their `ms_per_step` sum to the account's.
    pub causes: Vec<IdleCauseRow>,
    /// Every device's idle time, when the trace has several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceIdle>,
}

impl IdleAccount {
    /// The cause's row, if it took any time.
    pub fn cause(&self, cause: IdleCause) -> Option<&IdleCauseRow> {
        self.causes.iter().find(|c| c.cause == cause)
    }
}

/// The closed vocabulary of idle causes (docs/analysis.md §12).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    JsonSchema,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum IdleCause {
    /// Short gaps while the host dispatches and launches as fast as it can.
    Launch,
    /// The host blocked in a synchronising call or a blocking copy.
    Sync,
    /// Inside an op's own CPU work that launches nothing meanwhile.
    CpuOp,
    /// Outside any op: Python or framework code.
    Python,
    /// Inside the DataLoader's `__next__`.
    Dataloader,
    /// `cudaMalloc`/`cudaFree` and their HIP and driver kin.
    Allocator,
    /// The next GPU work was already launched before the gap began.
    Dependency,
    /// The rest: no host events to explain it.
    #[serde(other)]
    Other,
}

impl IdleCause {
    pub const ALL: [IdleCause; 8] = [
        IdleCause::Launch,
        IdleCause::Sync,
        IdleCause::CpuOp,
        IdleCause::Python,
        IdleCause::Dataloader,
        IdleCause::Allocator,
        IdleCause::Dependency,
        IdleCause::Other,
    ];

    /// The name in JSON, metrics and text.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleCause::Launch => "launch",
            IdleCause::Sync => "sync",
            IdleCause::CpuOp => "cpu_op",
            IdleCause::Python => "python",
            IdleCause::Dataloader => "dataloader",
            IdleCause::Allocator => "allocator",
            IdleCause::Dependency => "dependency",
            IdleCause::Other => "other",
        }
    }

    /// What it means, in a few words, for people.
    pub fn meaning(self) -> &'static str {
        match self {
            IdleCause::Launch => "the host dispatching kernels: launch calls, short gaps",
            IdleCause::Sync => "host blocked in a synchronising call",
            IdleCause::CpuOp => "inside ops' own CPU work",
            IdleCause::Python => "Python / framework code outside any op",
            IdleCause::Dataloader => "waiting on the DataLoader",
            IdleCause::Allocator => "device malloc / free calls (cudaMalloc, hipFree, …)",
            IdleCause::Dependency => "work already queued, waiting on a dependency",
            IdleCause::Other => "no host events to explain it",
        }
    }
}

impl std::fmt::Display for IdleCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize, PartialEq)]
pub struct IdleCauseRow {
    pub cause: IdleCause,
    pub ms_per_step: f64,
    /// Gaps per step in which this cause took some of the time.
    #[serde(default)]
    pub gaps_per_step: f64,
    /// The part of it before each step's first kernel.
    #[serde(default)]
    pub before_first_kernel_ms_per_step: f64,
    /// The part of it in which the device ran a memcpy or memset (GPU work
    /// that is no kernel, which the account counts as idle): for `sync`,
    /// mostly the copy the host waited for. Absent when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_ms_per_step: Option<f64>,
    /// The places that account for it, largest first: ops (`outer > inner`),
    /// runtime calls, annotations, kernels; for `python`, frames from the
    /// outermost one that is not a wrapper of the whole step down to the
    /// deepest holding most of the time, then the next largest (frames
    /// nest: each includes its callees, so those do not add up).
    #[serde(default, rename = "where")]
    pub places: Vec<IdlePlace>,
}

impl IdleCauseRow {
    /// The share of the cause's time under memcpy/memset from which the
    /// text says it (the JSON has every one).
    pub const COPY_SHARE_SAID: f64 = 0.1;

    /// Its time under memcpy/memset, where that is worth saying: a tenth
    /// of the cause's time or more.
    pub fn copy_said(&self) -> Option<f64> {
        self.copy_ms_per_step.filter(|c| *c >= Self::COPY_SHARE_SAID * self.ms_per_step)
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize, PartialEq)]
pub struct IdlePlace {
    pub name: String,
    pub ms_per_step: f64,
    /// Python frames: depth below the step's wrappers (0 = outermost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Python frames: on the call path that holds most of the cause's
    /// time (outermost first; pass-through frames left out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path: bool,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct DeviceIdle {
    pub device: i64,
    pub ms_per_step: f64,
    /// This device's idle time by cause, as `IdleAccount::causes` is the
    /// busiest device's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<IdleCauseRow>,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PhaseGpuRow {
    pub phase: String,
    pub gpu_ms_per_step: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct KernelRow {
    /// Short, readable label.
    pub kernel: String,
    /// The full kernel name (never cut by us; the reference cut at 90).
    pub raw_name: String,
    pub category: Category,
    pub tensorcore: bool,
    pub ms_per_step: f64,
    pub pct_of_gpu: f64,
    pub count_per_step: f64,
    /// The share of its time its rates rest on: `modelled_ms_per_step`
    /// over `ms_per_step`, in percent (its calls under no priced op are
    /// not in them); absent where the model priced none of it. Below
    /// [`RATES_PRICED_PCT`] the tables mark its rates (docs/analysis.md
    /// §13.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priced_pct: Option<f64>,
    /// Its share of the work of the ops that launched it (docs/analysis.md §13).
    #[serde(flatten)]
    pub achieved: Achieved,
    /// How its calls ran: their spread, streams and launch configurations
    /// (docs/analysis.md §7.1). Only on a trace's whole-window rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<KernelCalls>,
}

/// A kernel whose rates rest on less than this share of its time (%)
/// has them marked: they describe the priced part, not the kernel.
pub const RATES_PRICED_PCT: f64 = 50.0;

impl KernelRow {
    /// Its priced share in percent ([`KernelRow::priced_pct`]), from the
    /// row's own figures where a profile written before the field lacks it.
    pub fn priced_share(&self) -> Option<f64> {
        self.priced_pct.or_else(|| {
            let m = self.achieved.modelled_ms_per_step?;
            (self.ms_per_step > 0.0)
                .then(|| crate::util::round((m / self.ms_per_step * 100.0).min(100.0), 2))
        })
    }

    /// Its rates rest on under [`RATES_PRICED_PCT`] of its time.
    pub fn rates_thin(&self) -> bool {
        self.priced_share().is_some_and(|p| p < RATES_PRICED_PCT)
    }
}

/// How one kernel's calls in the window ran (docs/analysis.md §7.1).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct KernelCalls {
    /// Its calls in the window (all steps).
    pub calls: u64,
    /// The durations of those calls, µs, by nearest rank: the median, the
    /// 99th percentile (with under 100 calls, the longest) and the longest.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The streams it ran on.
    pub streams: Vec<StreamRef>,
    /// The launch configuration most of its calls used, as the trace
    /// recorded it; absent where the trace has no `grid`/`block`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_config: Option<LaunchConfig>,
    /// How many distinct configurations its calls used.
    #[serde(skip_serializing_if = "super::is_zero")]
    pub distinct_launch_configs: u64,
    /// Of its calls, those the trace records no configuration for (a
    /// kernel without its launch, as ROCm traces leave some), where others
    /// have one.
    #[serde(skip_serializing_if = "super::is_zero")]
    pub calls_without_config: u64,
}

/// A GPU stream: the device and the stream's id as the trace numbers them.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema, Deserialize, PartialEq, Eq)]
pub struct StreamRef {
    pub device: i64,
    pub stream: i64,
}

/// A kernel's launch configuration and how often it was launched so.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct LaunchConfig {
    /// Blocks in the grid, `[x, y, z]`.
    pub grid: [u32; 3],
    /// Threads in a block, `[x, y, z]`.
    pub block: [u32; 3],
    pub calls_per_step: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct OpRow {
    pub op: String,
    pub ms_per_step: f64,
    pub pct_of_cpu_ops: f64,
    pub count_per_step: f64,
    /// Its time in none of the ops, frames or annotations it encloses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ms_per_step: Option<f64>,
    /// Kernel time launched inside it (docs/analysis.md §17).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_ms_per_step: Option<f64>,
    /// The performance model's account of its calls and their kernels.
    #[serde(flatten)]
    pub achieved: Achieved,
    /// The formula inputs of its costliest call: `M=8944 N=1024 K=1024 bf16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

/// Work done over GPU time and how far from the device's roofline
/// (docs/analysis.md §13). Every figure is absent where the performance
/// model priced none of the row's work; `pct_of_peak`, `lost_ms_per_step`
/// and `roofline_bound` also where the device's peaks are unknown.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Achieved {
    /// The GPU time these rates are over: the kernels of priced calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modelled_ms_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflop_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gb_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tbps: Option<f64>,
    /// The roofline time of the work over its actual time, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct_of_peak: Option<f64>,
    /// Actual time minus roofline time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_ms_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline_bound: Option<RooflineBound>,
    /// `true` where its rates are past its roofline: the bytes the model
    /// counts (each from memory) could not have moved in its time, so the
    /// cache served part of them; `pct_of_peak` stays at 100
    /// (docs/analysis.md §13.2). Absent otherwise (nullable, as the
    /// Parquet tables need).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub past_roofline: Option<bool>,
}

impl Achieved {
    pub fn is_priced(&self) -> bool {
        self.modelled_ms_per_step.is_some()
    }
    /// Its rates are past its roofline ([`Achieved::past_roofline`]).
    pub fn is_past_roofline(&self) -> bool {
        self.past_roofline == Some(true)
    }
}

/// Which roof limits the work: the arithmetic rate or the memory bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RooflineBound {
    Compute,
    Memory,
}

impl RooflineBound {
    pub fn as_str(self) -> &'static str {
        match self {
            RooflineBound::Compute => "compute",
            RooflineBound::Memory => "memory",
        }
    }
}

/// The efficiency account of a GPU trace (docs/analysis.md §13).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Efficiency {
    /// The device the peaks are those of, as the peak table names it;
    /// None: not in the table (no "% of peak").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Its dense peaks: TFLOP/s (TOP/s for int8) per format, TB/s.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub peak_tflops: IndexMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_tbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_source: Option<String>,
    /// Op calls priced, and calls of known ops whose shapes were missing.
    pub priced_calls: u64,
    pub unpriced_calls: u64,
    /// Share of the GPU's kernel time under a priced op.
    pub modelled_pct_of_gpu: f64,
    /// GEMM, convolution and attention work, time-weighted, against the
    /// peak of the format most of it ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<MatrixEfficiency>,
    /// Share of the GPU's kernel time in ops below 30% of their roofline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below_30_pct_of_gpu: Option<f64>,
    /// Per kernel category, over its priced kernels.
    pub categories: Vec<CategoryEfficiency>,
    /// The priced ops (outermost ones) that lose the most time against
    /// their roofline.
    pub least_efficient: Vec<OpEfficiency>,
    /// Kernel time under no priced op, by the CPU op that launched it.
    pub unmodelled: Vec<UnmodelledRow>,
    /// Kernel time under no priced op, by kernel category (communication
    /// left out: its rate is bus bandwidth, docs/analysis.md §8), most
    /// first; categories wholly priced are not listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced_by_category: Vec<UnpricedCategory>,
    /// Why figures are missing: no shapes recorded, device unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct MatrixEfficiency {
    /// The number format of the peak (`bf16`, `tf32`, …).
    pub format: crate::hardware::PeakClass,
    pub peak_tflops: f64,
    pub tflops: f64,
    /// `tflops` over `peak_tflops`, in percent.
    pub pct_of_peak: f64,
    /// The work's roofline time over its actual time, in percent (its
    /// memory-bound calls judged against the bandwidth).
    pub pct_of_roofline: f64,
    /// The priced matrix ops' kernel time per step, their helper kernels
    /// (layout transposes, split-K reductions) included: the time the
    /// rates above are over. It can exceed the `gemm / conv` category's
    /// time, which holds the arithmetic kernels alone.
    pub ms_per_step: f64,
    /// The share of all GEMM/conv/attention kernel time these figures rest
    /// on (the arithmetic kernels of priced matrix ops), in percent.
    pub pct_of_matrix_time: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct CategoryEfficiency {
    pub category: Category,
    #[serde(flatten)]
    pub achieved: Achieved,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct OpEfficiency {
    pub op: String,
    /// GEMM, convolution or attention work (its FLOPs can run on Tensor /
    /// Matrix Cores), not memory-bound by nature.
    pub matrix: bool,
    /// Its kernels' share of the GPU's kernel time.
    pub pct_of_gpu: f64,
    #[serde(flatten)]
    pub achieved: Achieved,
    /// The formula inputs of its costliest call, as `ops` gives them:
    /// `M=8944 N=1024 K=1024`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

/// A kernel category's time that no priced op accounts for.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct UnpricedCategory {
    pub category: Category,
    pub ms_per_step: f64,
    /// Its share of the category's kernel time, %.
    pub pct_of_category: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct UnmodelledRow {
    /// The innermost CPU op above the launch; None: no CPU op (or no
    /// launch) in the trace.
    pub op: Option<String>,
    pub ms_per_step: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct Attribution {
    /// "correlation": GPU events joined to their CPU launch by correlation id.
    pub method: String,
    /// GPU events (kernel, memcpy, memset) inside the measured steps.
    pub gpu_events: u64,
    /// Of those, joined to a launch through `args.correlation`.
    pub via_launch: u64,
    /// Of those, placed by time because no launch matched (docs/analysis.md §3).
    pub via_time_window: u64,
    /// GPU events that fell outside every measured step.
    pub outside_steps: u64,
    /// Events skipped as malformed (missing/negative duration, bad types).
    pub malformed_events: u64,
    /// Events read from the trace.
    pub events_read: u64,
    /// Passes over the file: 2 when ranges came after the work they enclose.
    pub passes: u8,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct DeviceRow {
    pub device: i64,
    pub busy_ms_per_step: f64,
    pub util: f64,
    pub util_raw: f64,
    pub kernels_per_step: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_reserved_mb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_mb: Option<f64>,
    /// "NVIDIA" or "AMD", from the trace's device properties and runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Communication kernel time (union) per step on this device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_ms_per_step: Option<f64>,
    /// Of it, the part during which no other kernel ran on the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_exposed_ms_per_step: Option<f64>,
    /// Share of communication time overlapped by compute kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_overlap_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct StreamRow {
    pub device: i64,
    pub stream: i64,
    pub busy_ms_per_step: f64,
    pub util: f64,
    pub kernels_per_step: f64,
}

/// A run on the CPU: its capture says so, or its trace has CPU ops and no
/// GPU work (the share of the step in CPU ops is then known, unless the
/// ops' order hid it: no kernel and no GPU time says the same, where the
/// trace's health does not say GPU work went unread). GPU utilisation,
/// kernels and host overhead say nothing about it.
pub fn cpu_run(
    config: &RunConfig,
    extras: &ExtraFigures,
    figures: &Figures,
    health: &[HealthRow],
) -> bool {
    let unread = |h: &HealthRow| {
        matches!(
            h.check,
            HealthCheck::NoGpuTimings | HealthCheck::UnreadDevice | HealthCheck::LostGpuEvents
        )
    };
    let no_gpu_work = figures.kernels_per_step == 0.0
        && figures.gpu_busy_ms_per_step == 0.0
        && !health.iter().any(unread);
    config.on_cpu() == Some(true)
        || extras.host_in_ops_frac.is_some()
        || (config.on_cpu().is_none() && no_gpu_work)
}

impl Profile {
    /// The mode as written, else inferred: inference profiles carry latency
    /// or inference stages; everything else is read as training (the
    /// reference omits `mode` on its training profiles).
    pub fn mode(&self) -> Mode {
        match self.mode {
            Some(m) => m,
            None => {
                let infer_phase =
                    self.phases.iter().any(|p| p.phase == "preprocess" || p.phase == "postprocess");
                let infer_cfg = self.config.mode() == Some(Mode::Inference);
                if self.figures.latency.is_some() || infer_phase || infer_cfg {
                    Mode::Inference
                } else {
                    Mode::Training
                }
            }
        }
    }

    /// Images per step, from the config (`batch`), when known.
    pub fn batch(&self) -> Option<f64> {
        self.config.batch().filter(|b| *b > 0.0)
    }

    /// Phases the profile knows, in its own order.
    pub fn phase_names(&self) -> Vec<&str> {
        if !self.phases.is_empty() {
            self.phases.iter().map(|p| p.phase.as_str()).collect()
        } else {
            self.kernels_by_phase.keys().map(String::as_str).collect()
        }
    }

    /// True when the numbers were taken under VRAM thrash, or a health
    /// finding says the window cannot support a verdict.
    pub fn untrustworthy(&self) -> bool {
        self.figures.memory_pressure
            || self.health.iter().any(|h| h.severity == Severity::CannotTell)
    }

    /// Repeat count of img/s (1 for a single run).
    pub fn img_per_s_n(&self) -> u32 {
        self.img_per_s_n.unwrap_or(1).max(1)
    }

    /// What its devices call their matrix units ([`matrix_units`]).
    pub fn matrix_units(&self) -> &'static str {
        matrix_units(&self.devices)
    }
}

/// What the devices call their matrix units: AMD's are Matrix Cores,
/// NVIDIA's (and unknown devices') Tensor Cores.
pub fn matrix_units(devices: &[DeviceRow]) -> &'static str {
    let mut vendors = devices.iter().filter_map(|d| d.vendor.as_deref()).peekable();
    if vendors.peek().is_some() && vendors.all(|v| v == "AMD") {
        "Matrix Cores"
    } else {
        "Tensor Cores"
    }
}

/// The short column label of [`matrix_units`]: "TC" or "MC".
pub fn matrix_units_initials(units: &str) -> String {
    units.split_whitespace().filter_map(|w| w.chars().next()).collect()
}

/// A trace's `distributedInfo`, as the reader read it.
pub use crate::trace::Distributed;

/// The step model's findings (docs/analysis.md §14).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct StepModelView {
    /// What the critical path covers per step, and why that can be longer
    /// than the step.
    #[serde(flatten)]
    pub span: PathSpan,
    /// Steps modelled.
    pub steps: u64,
    /// The critical path by part, largest first: its `ms_per_step` sum to
    /// `span_ms_per_step`.
    pub critical_path: Vec<PathShare>,
    /// The standard what-ifs (`what-if --all`), largest saving first.
    pub scenarios: Vec<ScenarioRow>,
    /// What taking away all GPU work (kernels, copies, sets) would save
    /// per step, re-timed: the part of the step the GPU paces. The host's
    /// own path stays; a busy GPU that saves little here is paced by its
    /// host (docs/analysis.md §10).
    #[serde(default)]
    pub without_gpu_work_saved_ms_per_step: f64,
    /// GPU starts explained by a wait on another stream's work, inferred
    /// from the times (on devices whose trace records no event waits).
    pub inferred_waits: u64,
    /// Waits of GPU work on another stream's that the trace records
    /// (CUPTI `cuda_sync` stream waits), and synchronising calls whose
    /// target it records.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub recorded_waits: u64,
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub recorded_syncs: u64,
    /// Host calls explained by a wait on another thread (the loop thread
    /// in `backward()`), inferred the same way.
    pub thread_waits: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What the critical path covers, per modelled step (ms): `span_ms_per_step`
/// = `steps_ms_per_step` + `between_steps_ms_per_step` +
/// `after_steps_ms_per_step`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PathSpan {
    /// From the first modelled step's start to the end of the last work
    /// launched in the steps: what the critical path's parts sum to.
    pub span_ms_per_step: f64,
    /// Of it, the modelled steps' own wall time.
    pub steps_ms_per_step: f64,
    /// Of it, the time between the modelled steps (one beginning after the
    /// one before ended).
    pub between_steps_ms_per_step: f64,
    /// Of it, work launched in the steps that ran past the last step's
    /// end — GPU work, or a call waiting for it: the step's range had
    /// closed while the GPU still worked.
    pub after_steps_ms_per_step: f64,
}

/// One part of the critical path.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PathShare {
    /// A kernel category, `memcpy / memset`, a host cause (`python`,
    /// `launch`, `sync`, …), `launch → start`, `dependency` or
    /// `stream gaps`.
    pub part: String,
    /// `gpu`, `host` or `wait`.
    pub kind: String,
    pub ms_per_step: f64,
    /// Of the path's length.
    pub pct: f64,
}

/// One what-if re-timed on the step model.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct ScenarioRow {
    /// The `what-if` flags that ask for it.
    pub flags: String,
    pub what: String,
    /// The step time saved (ms per step) and its share of the step.
    pub saved_ms_per_step: f64,
    pub saved_pct: f64,
    /// The work the change takes away, per step: no saving exceeds it.
    pub removes_ms_per_step: f64,
    /// Where the model inferred waits on other streams: the saving with
    /// none of them, the bound beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_without_inferred_ms_per_step: Option<f64>,
    /// The change takes host time out (it lets the host run ahead into
    /// the next step): what the model's few-steps note is said of.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub frees_host: bool,
}

/// One communication kernel of a rank's trace (docs/analysis.md §11).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CollectiveCall {
    /// `Process Group Name` where PyTorch records it, else `stream <n>`.
    pub group: String,
    /// `allreduce`, `allgather`, `alltoall`, … (`Collective name`, else
    /// from the kernel name).
    pub collective: String,
    /// Start on the trace's clock and duration, ns.
    pub start_ns: i64,
    pub dur_ns: i64,
    pub device: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_nelems: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_nelems: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// The `ProfilerStep#N` it was launched in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// What this rank's GPU did since its previous collective ended: the
    /// compute kernels with the most time, and the idle time by cause
    /// (docs/analysis.md §11). A rank that arrives late is late for these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lead_in: Vec<LeadIn>,
    /// Where the kernel list is cut: the longest kernel time left out, µs
    /// (a kernel absent from the list took at most this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_in_floor_us: Option<f64>,
}

/// A share of a collective's lead-in: a kernel's time, or idle time of one
/// cause.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LeadIn {
    pub kind: LeadKind,
    /// The kernel's label, or the idle cause (`python`, `dataloader`, …).
    pub name: String,
    pub us: f64,
}

/// What a [`LeadIn`] (and a straggler's reason) is.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    Serialize,
    JsonSchema,
    Deserialize,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum LeadKind {
    #[default]
    Kernel,
    /// GPU idle time, named by its cause.
    Idle,
}

/// One lever (docs/analysis.md §16): a change, the measured evidence it
/// rests on, the trace facts that allow it, and what the step model says
/// it saves.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct LeverRow {
    pub lever: LeverKind,
    /// What to change, for people.
    pub change: String,
    /// The what-if whose re-timing on the step model is its saving.
    pub what_if: String,
    pub saved_ms_per_step: f64,
    pub saved_pct: f64,
    /// Its what-if's saving with none of the waits the model inferred,
    /// where it inferred any ([`ScenarioRow`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_without_inferred_ms_per_step: Option<f64>,
    /// The measured figures it rests on, and where.
    pub evidence: String,
    /// The trace facts that allow it (what would contradict it is absent).
    pub rests_on: Vec<String>,
}

impl LeverRow {
    /// Its saving without the waits the model inferred, where that is
    /// under half the saving: a saving that rests mostly on them.
    pub fn mostly_inferred(&self) -> Option<f64> {
        self.saved_without_inferred_ms_per_step.filter(|b| *b < 0.5 * self.saved_ms_per_step)
    }
}

/// One trace-health finding (docs/analysis.md §15).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct HealthRow {
    pub check: HealthCheck,
    pub severity: Severity,
    /// What was found, with the measured figures it rests on.
    pub says: String,
    /// The figure it rests on, in ms (per step where it is a step's), when
    /// it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// How to record a trace that does not have the problem.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub recapture: String,
}

/// One `ProfilerStep#N` of the window and its wall time in the trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StepTime {
    pub step: u64,
    pub ms: f64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every key of `profile.json` in the order it has always been written;
    /// [`Figures`] and [`ExtraFigures`] are flattened into it in place.
    const KEYS: [&str; 61] = [
        "schema",
        "mode",
        "trace",
        "model",
        "config",
        "bound",
        "bound_why",
        "step_ms",
        "img_per_s",
        "dataload_ms",
        "dataload_frac",
        "gpu_util",
        "gpu_util_raw",
        "memory_pressure",
        "cuda_mallocs_per_step",
        "host_overhead_ms_per_step",
        "launches_per_step",
        "gpu_busy_ms_per_step",
        "mean_kernel_us",
        "kernels_per_step",
        "unique_kernels",
        "memcpy_ms_per_step",
        "tensorcore_pct",
        "peak_vram_mb",
        "window",
        "latency",
        "stages_ms",
        "metrics",
        "categories",
        "phases",
        "phases_gpu",
        "kernels_by_phase",
        "ops_by_phase",
        "top_kernels",
        "kernels",
        "ops",
        "img_per_s_std",
        "img_per_s_n",
        "img_per_s_trials",
        "aggregation",
        "metrics_std",
        "attribution",
        "devices",
        "streams",
        "memory",
        "comm_ms_per_step",
        "comm_exposed_ms_per_step",
        "comm_overlap_pct",
        "graph_launches_per_step",
        "launches_recorded_per_step",
        "graph_replay_ms_per_step",
        "graph_replay_attributed_ms_per_step",
        "phases_inferred",
        "host_in_ops_frac",
        "step_times",
        "distributed",
        "collectives",
        "call_tree",
        "warnings",
        "versions",
        "host",
    ];

    #[test]
    fn every_key_in_its_place_and_back() {
        let p = Profile {
            mode: Some(Mode::Training),
            figures: Figures {
                step_ms: 12.5,
                img_per_s: Some(320.0),
                latency: Some(Latency::default()),
                stages_ms: Some(Stages::default()),
                ..Default::default()
            },
            img_per_s_std: Some(1.0),
            img_per_s_n: Some(3),
            img_per_s_trials: Some(vec![319.0, 320.0, 321.0]),
            aggregation: Some(json!({"n": 3})),
            metrics_std: [("step_ms".to_string(), 0.1)].into_iter().collect(),
            attribution: Some(Attribution::default()),
            devices: vec![DeviceRow::default()],
            streams: vec![StreamRow::default()],
            memory: vec![Default::default()],
            extras: ExtraFigures {
                comm_ms_per_step: Some(1.0),
                comm_exposed_ms_per_step: Some(0.5),
                comm_overlap_pct: Some(50.0),
                graph_launches_per_step: Some(2.0),
                launches_recorded_per_step: Some(3.0),
                graph_replay_ms_per_step: Some(1.5),
                graph_replay_attributed_ms_per_step: Some(1.2),
                phases_inferred: Some("from PyTorch's annotations".into()),
                host_in_ops_frac: Some(0.95),
            },
            step_times: vec![StepTime::default()],
            distributed: Some(Distributed::default()),
            collectives: vec![CollectiveCall::default()],
            call_tree: Some(crate::profile::CallTree {
                nodes: vec![crate::profile::CallNode::default()],
                ..Default::default()
            }),
            warnings: vec!["w".into()],
            versions: Some(json!({})),
            host: Some(json!({})),
            ..Default::default()
        };
        let text = serde_json::to_string_pretty(&p).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v.as_object().unwrap().keys().map(String::as_str).collect::<Vec<_>>(), KEYS);
        let back: Profile = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    }

    /// The same number, whether written as an integer or a float.
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.iter().all(|(k, x)| y.get(k).is_some_and(|y| same(x, y)))
            }
            _ => a == b,
        }
    }

    #[test]
    fn reference_files_read_and_write_back() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference");
        let mut files = 0;
        for case in std::fs::read_dir(&dir).unwrap() {
            for f in std::fs::read_dir(case.unwrap().path()).unwrap() {
                let path = f.unwrap().path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let file: Value = serde_json::from_str(&text).unwrap();
                if !file["schema"].as_str().is_some_and(|s| s.starts_with(SCHEMA_PREFIX)) {
                    continue; // a measured sidecar
                }
                files += 1;
                let p: Profile = serde_json::from_str(&text).unwrap();
                let out = serde_json::to_value(&p).unwrap();
                let out = out.as_object().unwrap();
                // Every key the reference wrote comes back with its value
                // (its order is not ours: it writes `mode` and `latency` last).
                for (k, v) in file.as_object().unwrap() {
                    let o =
                        out.get(k).unwrap_or_else(|| panic!("{}: `{k}` dropped", path.display()));
                    assert!(same(v, o), "{}: `{k}` changed: {v} → {o}", path.display());
                }
            }
        }
        assert!(files >= 7, "the reference profiles: {files}");
    }
}
