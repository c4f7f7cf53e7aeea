//! The performance model (docs/analysis.md §13): FLOPs and bytes moved of
//! one op call, from the shapes, dtypes and scalar arguments the profiler
//! recorded (`record_shapes=True`: `Input Dims`, `Input type`,
//! `Concrete Inputs`). Conventional formulas, written once here; an op this
//! model does not know is reported as such, never guessed.
//!
//! This file holds the public types, the classification of an op by name
//! and the dispatch to its family's formula. `args.rs` parses the recorded
//! arguments; each op family's formulas, and their tests, have a file of
//! their own: `gemm.rs` (matrix multiplies), `conv.rs`, `attention.rs`,
//! `elementwise.rs`, `norm.rs` (normalisations and softmax), `reduction.rs`
//! (and `max`/`min`), `copies.rs` (copies, casts, concatenation, gathers).

mod args;
mod attention;
mod conv;
mod copies;
mod elementwise;
mod gemm;
mod norm;
mod reduction;

use std::fmt::Write as _;

use serde::Serialize;

use args::Args;
use attention::{AttnSig, attention, attn_sig};
use conv::{ConvSig, conv, conv_backward, conv_sig};
use copies::{clone, concat, copy, embedding, embedding_backward, gather, index_select, to_copy};
use elementwise::{ElementwiseSig, elementwise, elementwise_sig};
use gemm::{Gemm, add_gemm, bmm, linear, matmul, mm, mv, scaled_mm};
use norm::{
    NormBackwardSig, SoftmaxSig, norm, norm_backward, norm_backward_sig, norm_flops, softmax,
    softmax_backward, softmax_sig,
};
use reduction::{ReductionSig, max_min, reduce, reduction_sig};

/// The element type of an op's tensors, as `Input type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F64,
    F32,
    Bf16,
    F16,
    /// Any 8-bit float (`c10::Float8_e4m3fn`, `…e5m2`, their `fnuz` forms).
    Fp8,
    Int8,
    Uint8,
    Int16,
    Int32,
    Int64,
    Bool,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u32 {
        match self {
            Dtype::F64 | Dtype::Int64 => 8,
            Dtype::F32 | Dtype::Int32 => 4,
            Dtype::Bf16 | Dtype::F16 | Dtype::Int16 => 2,
            Dtype::Fp8 | Dtype::Int8 | Dtype::Uint8 | Dtype::Bool => 1,
        }
    }
}

/// The raw JSON text of an op call's shape arguments, as the trace holds
/// them (each an array with one entry per op input).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpShapes<'a> {
    pub dims: Option<&'a [u8]>,
    pub types: Option<&'a [u8]>,
    pub concrete: Option<&'a [u8]>,
}

/// What one op call does, by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub flops: f64,
    /// Bytes read and written, each tensor once (no cache reuse assumed).
    pub bytes: f64,
    pub dtype: Dtype,
    /// A matrix-multiply-like op (GEMM, convolution, attention) whose FLOPs
    /// can run on Tensor / Matrix Cores; the rest is judged by bytes.
    pub matrix: bool,
    /// The formula's inputs, for a details line: `M=8944 N=1024 K=1024`.
    pub inputs: String,
}

/// The model's answer for one op call.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    Work(Work),
    /// A modelled op whose shapes were not recorded or do not fit the
    /// formula (said, not guessed).
    NoShapes,
    /// An op the model does not know.
    Unmodelled,
}

/// True when the model knows `op` (a cheap test by name, made before any
/// shape is parsed).
pub fn is_modelled(op: &str) -> bool {
    classify(op).is_some()
}

/// FLOPs and bytes of one call of `op` with these shapes.
pub fn model(op: &str, shapes: &OpShapes<'_>) -> Model {
    let Some(kind) = classify(op) else {
        return Model::Unmodelled;
    };
    let Some(args) = Args::parse(shapes) else {
        return Model::NoShapes;
    };
    match kind.work(&args) {
        Some(work) if work.flops.is_finite() && work.bytes.is_finite() => Model::Work(work),
        _ => Model::NoShapes,
    }
}

impl Dtype {
    /// Type-promotion category: bool < integer < floating point.
    fn category(self) -> u8 {
        match self {
            Dtype::Bool => 0,
            Dtype::Int8 | Dtype::Uint8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64 => 1,
            Dtype::F64 | Dtype::F32 | Dtype::Bf16 | Dtype::F16 | Dtype::Fp8 => 2,
        }
    }

    /// `torch.promote_types` for the dtypes the model knows.
    fn promote(self, other: Dtype) -> Dtype {
        if self == other {
            return self;
        }
        let (a, b) = (self.category(), other.category());
        if a != b {
            return if a > b { self } else { other };
        }
        match (self, other) {
            // Neither 16-bit float holds the other.
            (Dtype::Bf16, Dtype::F16) | (Dtype::F16, Dtype::Bf16) => Dtype::F32,
            (Dtype::Int8, Dtype::Uint8) | (Dtype::Uint8, Dtype::Int8) => Dtype::Int16,
            _ if self.size() >= other.size() => self,
            _ => other,
        }
    }
}

// ---------------------------------------------------------------------------
// Which formula an op takes
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Kind {
    Mm,
    /// `addmm`, `baddbmm`, `addmv`, `addbmm` (and in-place): a GEMM plus the
    /// tensor added to it, argument 0.
    AddGemm(Gemm),
    Bmm,
    Matmul,
    Linear,
    Mv,
    ScaledMm,
    Conv(ConvSig),
    ConvBackward,
    Attention(AttnSig),
    Elementwise(ElementwiseSig, bool),
    /// `max`/`min`: a reduction, or elementwise with a second tensor.
    MaxMin,
    Copy,
    ToCopy,
    Clone,
    /// `cat`, `stack`: a tensor list in, its elements out.
    Concat,
    IndexSelect,
    Gather,
    Embedding,
    EmbeddingBackward,
    Norm(f64),
    NormBackward(NormBackwardSig),
    Softmax(SoftmaxSig),
    SoftmaxBackward,
    Reduce(ReductionSig),
}

fn classify(op: &str) -> Option<Kind> {
    let name = op.strip_prefix("aten::")?;
    Some(match name {
        // Views, allocations and bookkeeping move no bytes of their own (`to`
        // copies through its `_to_copy`). The most frequent ops of a trace,
        // they leave here before the other tables are tried.
        "view"
        | "as_strided"
        | "t"
        | "transpose"
        | "reshape"
        | "_reshape_alias"
        | "_unsafe_view"
        | "permute"
        | "expand"
        | "slice"
        | "select"
        | "narrow"
        | "unsqueeze"
        | "squeeze"
        | "detach"
        | "alias"
        | "empty"
        | "empty_like"
        | "empty_strided"
        | "resize_"
        | "lift_fresh"
        | "record_stream"
        | "item"
        | "_local_scalar_dense"
        | "to" => return None,
        "mm" => Kind::Mm,
        "addmm" | "addmm_" | "_addmm_activation" => Kind::AddGemm(Gemm::Addmm),
        "bmm" => Kind::Bmm,
        "baddbmm" | "baddbmm_" => Kind::AddGemm(Gemm::Baddbmm),
        "addbmm" | "addbmm_" => Kind::AddGemm(Gemm::Addbmm),
        "addmv" | "addmv_" => Kind::AddGemm(Gemm::Addmv),
        "matmul" => Kind::Matmul,
        "linear" => Kind::Linear,
        "mv" => Kind::Mv,
        "_scaled_mm" => Kind::ScaledMm,
        "convolution_backward" => Kind::ConvBackward,
        "max" | "min" => Kind::MaxMin,
        "copy_" => Kind::Copy,
        "_to_copy" => Kind::ToCopy,
        "clone" | "contiguous" => Kind::Clone,
        "cat" | "_cat" | "concat" | "concatenate" | "stack" => Kind::Concat,
        "index_select" => Kind::IndexSelect,
        "gather" => Kind::Gather,
        "embedding" => Kind::Embedding,
        "embedding_dense_backward" => Kind::EmbeddingBackward,
        "_softmax_backward_data" | "_log_softmax_backward_data" => Kind::SoftmaxBackward,
        _ => {
            if let Some(sig) = conv_sig(name) {
                Kind::Conv(sig)
            } else if let Some(sig) = attn_sig(name) {
                Kind::Attention(sig)
            } else if let Some(flops) = norm_flops(name) {
                Kind::Norm(flops)
            } else if let Some(sig) = norm_backward_sig(name) {
                Kind::NormBackward(sig)
            } else if let Some(sig) = softmax_sig(name) {
                Kind::Softmax(sig)
            } else if let Some(sig) = reduction_sig(name) {
                Kind::Reduce(sig)
            } else if let Some(sig) = elementwise_sig(name) {
                Kind::Elementwise(sig, false)
            } else {
                // In-place forms (`add_`): the functional op written back.
                let base = name.strip_suffix('_').filter(|b| !b.ends_with('_'))?;
                Kind::Elementwise(elementwise_sig(base)?, true)
            }
        }
    })
}

impl Kind {
    fn work(self, a: &Args<'_>) -> Option<Work> {
        match self {
            Kind::Mm => mm(a),
            Kind::AddGemm(g) => add_gemm(a, g),
            Kind::Bmm => bmm(a),
            Kind::Matmul => matmul(a),
            Kind::Linear => linear(a),
            Kind::Mv => mv(a),
            Kind::ScaledMm => scaled_mm(a),
            Kind::Conv(sig) => conv(a, sig),
            Kind::ConvBackward => conv_backward(a),
            Kind::Attention(sig) => attention(a, sig),
            Kind::Elementwise(sig, in_place) => elementwise(a, sig, in_place),
            Kind::MaxMin => max_min(a),
            Kind::Copy => copy(a),
            Kind::ToCopy => to_copy(a),
            Kind::Clone => clone(a),
            Kind::Concat => concat(a),
            Kind::IndexSelect => index_select(a),
            Kind::Gather => gather(a),
            Kind::Embedding => embedding(a),
            Kind::EmbeddingBackward => embedding_backward(a),
            Kind::Norm(flops) => norm(a, flops),
            Kind::NormBackward(sig) => norm_backward(a, sig),
            Kind::Softmax(sig) => softmax(a, sig),
            Kind::SoftmaxBackward => softmax_backward(a),
            Kind::Reduce(sig) => reduce(a, sig),
        }
    }
}

// ---------------------------------------------------------------------------
// What every family's formula writes
// ---------------------------------------------------------------------------

/// A matrix-multiply-like op's work (its FLOPs can run on Tensor Cores).
fn matrix(flops: f64, bytes: f64, dtype: Dtype, inputs: String) -> Work {
    Work { flops, bytes, dtype, matrix: true, inputs }
}

/// A memory-bound op's work (judged by its bytes).
fn memory(flops: f64, bytes: f64, dtype: Dtype, inputs: String) -> Work {
    Work { flops, bytes, dtype, matrix: false, inputs }
}

/// `4.19M`: an element count, three significant digits.
fn count(n: f64) -> String {
    let (v, unit) = match n {
        n if n >= 1e12 => (n / 1e12, "T"),
        n if n >= 1e9 => (n / 1e9, "G"),
        n if n >= 1e6 => (n / 1e6, "M"),
        n if n >= 1e3 => (n / 1e3, "K"),
        n => return format!("{n}"),
    };
    match v {
        v if v >= 100.0 => format!("{v:.0}{unit}"),
        v if v >= 10.0 => format!("{v:.1}{unit}"),
        v => format!("{v:.2}{unit}"),
    }
}

fn elements(n: f64) -> String {
    format!("{} elements", count(n))
}

/// A size for a details line (integer formatting is much cheaper than a
/// float's, and every size is a whole number).
fn int(v: f64) -> u64 {
    v as u64
}

/// `3x3`: spatial sizes for a details line.
fn join_x(vals: impl IntoIterator<Item = u64>) -> String {
    let mut s = String::new();
    for (i, v) in vals.into_iter().enumerate() {
        if i > 0 {
            s.push('x');
        }
        let _ = write!(s, "{v}");
    }
    s
}

#[cfg(test)]
mod tests {
    //! Every case, here and in each family's file, is a real `cpu_op`
    //! event's three shape arguments, copied from the public traces in
    //! `shared/traces/` (the source is named above each), unless its comment
    //! says it was written in the same format for a case no trace holds.
    //! Expected values are worked out from the shapes. The helpers and
    //! fixtures the families' tests share are here.
    use super::*;
    use proptest::prelude::*;

    pub(super) fn run(op: &str, dims: &str, types: &str, concrete: Option<&str>) -> Model {
        model(
            op,
            &OpShapes {
                dims: Some(dims.as_bytes()),
                types: Some(types.as_bytes()),
                concrete: concrete.map(str::as_bytes),
            },
        )
    }

    pub(super) fn work(op: &str, dims: &str, types: &str, concrete: Option<&str>) -> Work {
        match run(op, dims, types, concrete) {
            Model::Work(w) => w,
            other => panic!("{op} {dims}: {other:?}"),
        }
    }

    fn close(got: f64, want: f64, what: &str) {
        assert!((got - want).abs() <= want.abs() * 1e-12, "{what}: got {got}, want {want}");
    }

    pub(super) fn check(w: &Work, flops: f64, bytes: f64) {
        close(w.flops, flops, "flops");
        close(w.bytes, bytes, "bytes");
    }

    pub(super) const BF16: f64 = 2.0;
    pub(super) const F32: f64 = 4.0;
    pub(super) const I64: f64 = 8.0;

    /// Qwen1.5-0.5B's attention call (tracelens_h100_qwen_inference).
    pub(super) const QWEN_SDPA_DIMS: &str =
        "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], [], []]";
    pub(super) const QWEN_SDPA_TYPES: &str = r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar"]"#;

    // --- What is not modelled, and bad input -------------------------------

    #[test]
    fn unknown_dtypes_give_no_shapes() {
        // The 2021–22 form: tensor types left blank.
        assert_eq!(
            run("aten::add", "[[2, 3], [2, 3], []]", r#"["", "", "Scalar"]"#, None),
            Model::NoShapes
        );
        assert_eq!(run("aten::mm", "[[2, 3], [3, 4]]", r#"["", ""]"#, None), Model::NoShapes);
        assert_eq!(
            run("aten::copy_", "[[2, 3], [2, 3], []]", r#"["float", "", "Scalar"]"#, None),
            Model::NoShapes
        );
        // A dtype the model has no size for, and no types at all.
        assert_eq!(
            run(
                "aten::mul",
                "[[2, 3], [2, 3]]",
                r#"["c10::complex<float>", "c10::complex<float>"]"#,
                None
            ),
            Model::NoShapes
        );
        assert_eq!(
            model(
                "aten::mm",
                &OpShapes { dims: Some(b"[[2, 3], [3, 4]]"), types: None, concrete: None }
            ),
            Model::NoShapes
        );
        assert_eq!(model("aten::mm", &OpShapes::default()), Model::NoShapes);
    }

    #[test]
    fn views_and_unknown_ops_are_not_modelled() {
        for op in [
            "aten::view",
            "aten::reshape",
            "aten::permute",
            "aten::transpose",
            "aten::t",
            "aten::expand",
            "aten::as_strided",
            "aten::slice",
            "aten::select",
            "aten::unsqueeze",
            "aten::squeeze",
            "aten::detach",
            "aten::alias",
            "aten::empty",
            "aten::empty_strided",
            "aten::resize_",
            "aten::to",
            "aten::max_pool2d",
            "aten::__and__",
            "vllm::unified_attention_with_output",
            "ProfilerStep#2",
            "addmm",
            "",
        ] {
            assert!(!is_modelled(op), "{op}");
        }
        // hta_amd_mi250_rocm62: a view reads nothing.
        assert_eq!(
            run(
                "aten::view",
                "[[1, 128], []]",
                r#"["float", "ScalarList"]"#,
                Some(r#"["", "[128]"]"#)
            ),
            Model::Unmodelled
        );
        for op in [
            "aten::addmm",
            "aten::add_",
            "aten::relu_",
            "aten::native_layer_norm",
            "aten::_flash_attention_backward",
            "aten::sum",
        ] {
            assert!(is_modelled(op), "{op}");
        }
    }

    #[test]
    fn malformed_input_never_panics() {
        let types = r#"["float", "float", "Scalar"]"#;
        for dims in [
            "",
            "[",
            "[[1, 2]",
            "[[1, -2], [2]]",
            "[[1e30, 3], [3]]",
            "[[1.5, 3], [3]]",
            "[[100000000000000000000000, 2], [2]]",
            // 2^40 + 1 elements in one dim, and in a product.
            "[[1099511627777], [1]]",
            "[[1048576, 1048577], [1]]",
            "[[[[1]]], [1]]",
            "[null, [1]]",
            "{\"a\": 1}",
            "[[1, 2]] trailing",
        ] {
            assert_eq!(run("aten::add", dims, types, None), Model::NoShapes, "{dims}");
        }
        let garbage: &[u8] = b"\xff\xfe\x00[[\"\\";
        for op in [
            "aten::mm",
            "aten::conv2d",
            "aten::scaled_dot_product_attention",
            "aten::add",
            "aten::sum",
        ] {
            let m = model(
                op,
                &OpShapes { dims: Some(garbage), types: Some(garbage), concrete: Some(garbage) },
            );
            assert_eq!(m, Model::NoShapes, "{op}");
        }
        // Concrete values that are not what the op expects.
        let conv = run(
            "aten::conv2d",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[-16, 16]", "[0, 0]", "[1, 1]", "0"]"#),
        );
        assert_eq!(conv, Model::NoShapes);
        let sdpa = run(
            "aten::scaled_dot_product_attention",
            QWEN_SDPA_DIMS,
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "maybe", "0.125", "False"]"#),
        );
        assert_eq!(sdpa, Model::NoShapes);
    }

    /// Every op the model knows, for the property test.
    const OPS: &[&str] = &[
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addbmm",
        "aten::addmv",
        "aten::matmul",
        "aten::linear",
        "aten::mv",
        "aten::_scaled_mm",
        "aten::conv2d",
        "aten::conv_transpose2d",
        "aten::convolution",
        "aten::cudnn_convolution",
        "aten::miopen_convolution_transpose",
        "aten::convolution_backward",
        "aten::scaled_dot_product_attention",
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_backward",
        "aten::add",
        "aten::add_",
        "aten::where",
        "aten::native_dropout",
        "aten::max",
        "aten::copy_",
        "aten::_to_copy",
        "aten::cat",
        "aten::index_select",
        "aten::gather",
        "aten::embedding",
        "aten::embedding_dense_backward",
        "aten::native_layer_norm",
        "aten::native_batch_norm_backward",
        "aten::native_group_norm_backward",
        "aten::_fused_rms_norm_backward",
        "aten::_softmax",
        "aten::softmax",
        "aten::_softmax_backward_data",
        "aten::sum",
        "aten::norm",
        "aten::var_mean",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_bytes_are_answered_without_panicking(dims in proptest::collection::vec(any::<u8>(), 0..64), op in 0..OPS.len()) {
            let _ = model(OPS[op], &OpShapes { dims: Some(&dims), types: Some(&dims), concrete: Some(&dims) });
        }

        #[test]
        fn any_shapes_are_answered_without_panicking(
            shapes in proptest::collection::vec(proptest::collection::vec(0u64..5000, 0..6), 0..12),
            concrete in proptest::collection::vec(prop_oneof![
                Just(""), Just("1"), Just("-1"), Just("0"), Just("True"), Just("False"), Just("[1, 1]"),
                Just("[2, 2]"), Just("[0, 0]"), Just("[-1]"), Just("[True, True, True]"), Just("15"),
            ], 0..16),
            op in 0..OPS.len(),
        ) {
            let dims = format!("[{}]", shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", "));
            let types = format!("[{}]", shapes.iter().map(|_| "\"float\"").collect::<Vec<_>>().join(", "));
            let concrete = format!("[{}]", concrete.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", "));
            if let Model::Work(w) = run(OPS[op], &dims, &types, Some(&concrete)) {
                prop_assert!(w.flops >= 0.0 && w.bytes >= 0.0, "{} {dims} {concrete}: {w:?}", OPS[op]);
            }
        }
    }

    #[test]
    fn element_counts_read_short() {
        assert_eq!(elements(4_194_304.0), "4.19M elements");
        assert_eq!(count(512.0), "512");
        assert_eq!(count(19_365_888.0), "19.4M");
        assert_eq!(count(1.5e9), "1.50G");
    }
}
