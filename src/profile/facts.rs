//! Trace facts: what the trace says about how the model already runs —
//! the number formats of its matrix work, its convolution layout,
//! torch.compile, CUDA/HIP graphs, the DataLoader, the attention
//! implementation, its elementwise work. They are the preconditions of the
//! levers (issue #52): a lever the facts contradict (AMP on bf16 matrix
//! time, channels-last without convolutions, torch.compile on compiled
//! code) is not one. Computed by [`crate::analysis::facts::of`]; data only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The facts of one trace. Times are per step, shares are 0..1 of the
/// kernel time (the sum of kernel durations, as `pct_of_gpu` is).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct TraceFacts {
    /// Matrix time (GEMM / convolution / attention kernels) by the number
    /// format it ran in, largest first; the shares sum to 1. Empty: no
    /// matrix kernels.
    pub matrix_precision: Vec<PrecisionShare>,
    /// The layout of the convolutions; None: no convolution kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels_last: Option<ConvLayout>,
    /// torch.compile's regions on the host; None: none recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiled_regions: Option<CompiledRegions>,
    /// Share of the kernel time in Triton kernels that torch.compile
    /// (Inductor) generated (`triton_poi_…`, `triton_red_…`, …).
    pub triton_kernels_share: f64,
    /// CUDA/HIP graph launches per step; None: no graph launched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_launches_per_step: Option<f64>,
    /// How the DataLoader loads: in the training loop's process
    /// (`num_workers=0`) or in worker processes; None: no DataLoader seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataloader: Option<DataloaderKind>,
    /// How attention is computed; None: no attention seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention: Option<Attention>,
    /// Share of the kernel time in elementwise kernels (what fusion
    /// removes the memory traffic of).
    pub elementwise_share: f64,
    /// The elementwise kernels with the most time, largest first (a few).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub elementwise_top: Vec<NamedKernel>,
    /// Chains of memory-bound kernels between matrix kernels (what fusion
    /// merges), from the step model; None: none, or no model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusable_chains: Option<FusableChains>,
}

/// The chains of two or more memory-bound kernels (elementwise, one at
/// least; normalisation, copies) that a stream runs between two matrix
/// kernels (docs/analysis.md §16).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct FusableChains {
    pub count_per_step: f64,
    /// Their kernels' time, and its share of the kernel time.
    pub ms_per_step: f64,
    pub share: f64,
    /// Their time fused: each chain as long as its longest kernel.
    pub fused_ms_per_step: f64,
    /// The sequences with the most time, largest first (a few).
    pub top: Vec<FusableChain>,
}

/// One sequence of kernels, wherever a stream runs it between matrix
/// kernels.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct FusableChain {
    /// The innermost op around each kernel's launch, in order (empty
    /// string: none recorded).
    pub ops: Vec<String>,
    /// The kernels' labels, in order.
    pub kernels: Vec<String>,
    /// The matrix kernels before and after its first run.
    pub between: [String; 2],
    pub count_per_step: f64,
    pub ms_per_step: f64,
    pub fused_ms_per_step: f64,
}

impl FusableChain {
    /// Its ops where recorded, else its kernels.
    fn names(&self) -> &[String] {
        if self.ops.iter().all(|o| !o.is_empty()) { &self.ops } else { &self.kernels }
    }

    /// `aten::mul → aten::add → …`: its ops where recorded, else its
    /// kernels.
    pub fn sequence(&self) -> String {
        self.names().join(" → ")
    }

    /// [`sequence`](Self::sequence) in about `max` characters: past that,
    /// its first two names and its last, the rest an ellipsis (a chain of
    /// long kernel labels runs to a page; its length is said beside it).
    pub fn sequence_within(&self, max: usize) -> String {
        let (full, names) = (self.sequence(), self.names());
        if full.chars().count() <= max || names.len() <= 3 {
            return full;
        }
        format!("{} → {} → … → {}", names[0], names[1], names[names.len() - 1])
    }
}

/// A number format of matrix work, narrowest first.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 8-bit floats (e4m3, e5m2).
    Fp8,
    Int8,
    Fp16,
    Bf16,
    /// fp32 inputs on Tensor / Matrix Cores (TF32, AMD's xf32).
    Tf32,
    /// fp32 on the vector units (SIMT).
    Fp32,
    /// Neither the kernel's name nor a priced op says.
    #[default]
    Unknown,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Tf32 => "tf32",
            Precision::Fp32 => "fp32",
            Precision::Unknown => "unknown",
        }
    }

    /// A 16- or 8-bit format: what AMP / bf16 would give already.
    pub fn is_reduced(self) -> bool {
        matches!(self, Precision::Fp8 | Precision::Int8 | Precision::Fp16 | Precision::Bf16)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One format's part of the matrix time.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PrecisionShare {
    pub precision: Precision,
    pub ms_per_step: f64,
    /// Of the matrix time.
    pub share: f64,
}

/// The layout convolutions ran in.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct ConvLayout {
    /// Share of the convolution kernel time in NHWC (channels-last)
    /// kernels: cuDNN's `…nhwc…`/`nhwckrsc`, MIOpen's `igemm_*_nhwc_*`.
    pub nhwc_share: f64,
    /// Convolution kernel time.
    pub conv_ms_per_step: f64,
    /// Time in the layout transposes libraries run around NHWC kernels
    /// when the tensors are NCHW (cuDNN's `nchwToNhwc`, MIOpen's
    /// `batched_transpose`): what channels-last tensors save.
    pub transpose_ms_per_step: f64,
}

/// torch.compile's regions on the host.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct CompiledRegions {
    /// The range counted (`Torch-Compiled Region`, `CompiledFunction`,
    /// `## Call CompiledFxGraph`): the outermost kind the trace records.
    pub range: String,
    pub per_step: f64,
    /// Host (CPU) time inside them.
    pub host_ms_per_step: f64,
}

/// The DataLoader's iterator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataloaderKind {
    /// `_SingleProcessDataLoaderIter`: `num_workers=0`, loading in the loop.
    SingleProcess,
    /// `_MultiProcessingDataLoaderIter`: worker processes.
    Workers,
}

/// The attention implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKind {
    /// softmax between batched matmuls, each its own kernels.
    Eager,
    /// A fused attention kernel: SDPA, FlashAttention, fmha, Triton's.
    Sdpa,
}

/// How attention is computed, with the kernel time of each kind.
#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize, PartialEq)]
pub struct Attention {
    /// The kind with the most time.
    pub kind: AttentionKind,
    /// Fused attention kernels.
    pub fused_ms_per_step: f64,
    /// Softmax kernels of eager attention (its matmuls are GEMMs like any
    /// other); 0 when the trace has no eager attention.
    pub eager_softmax_ms_per_step: f64,
}

/// A kernel and its time.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct NamedKernel {
    /// The kernel's label.
    pub kernel: String,
    pub ms_per_step: f64,
    pub count_per_step: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_sequence_keeps_its_ends() {
        let chain = |n: usize, name: &str| FusableChain {
            ops: vec![String::new(); n],
            kernels: (0..n).map(|i| format!("{name}{i}")).collect(),
            ..FusableChain::default()
        };
        // Unrecorded ops: the kernels name it; short ones in full.
        assert_eq!(chain(4, "k").sequence_within(40), "k0 → k1 → k2 → k3");
        let long = chain(13, "a_kernel_label_of_some_length_");
        assert_eq!(
            long.sequence_within(160),
            "a_kernel_label_of_some_length_0 → a_kernel_label_of_some_length_1 → … → a_kernel_label_of_some_length_12"
        );
        assert_eq!(long.sequence().matches(" → ").count(), 12);
    }
}
