//! Elementwise ops: unary and binary arithmetic, comparisons, activations
//! and their gradients, selects and fills, each operand read once and the
//! output written once.

use super::args::{Args, MAX_RANK};
use super::{Dtype, Work, elements, memory};

/// What an elementwise op writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElementwiseOut {
    /// The operands' promoted dtype.
    Promoted,
    /// Floating point even for integer operands (`div`, `sqrt`): float32
    /// from integers.
    Float,
    /// `bool` (comparisons, logical ops).
    Bool,
    /// Writes `self` without reading it (`fill_`, `zero_`).
    WriteOnly,
    /// The output and a `bool` mask (`native_dropout`).
    WithMask,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct ElementwiseSig {
    /// FLOPs per output element.
    pub(super) flops: f64,
    /// Arguments of the functional form: a tensor at or after this
    /// position is an `out=` tensor (written, not read).
    pub(super) nargs: u8,
    pub(super) out: ElementwiseOut,
}

pub(super) fn elementwise_sig(name: &str) -> Option<ElementwiseSig> {
    let e = |flops, nargs, out| ElementwiseSig { flops, nargs, out };
    Some(match name {
        // Unary arithmetic and activations: 1 per element.
        "abs" | "neg" | "sign" | "sgn" | "floor" | "ceil" | "trunc" | "frac" | "relu" | "silu"
        | "mish" | "hardswish" | "hardsigmoid" | "bitwise_not" => {
            e(1.0, 1, ElementwiseOut::Promoted)
        }
        "exp" | "exp2" | "expm1" | "log" | "log2" | "log10" | "log1p" | "sqrt" | "rsqrt"
        | "reciprocal" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh"
        | "tanh" | "sigmoid" | "erf" | "erfc" | "erfinv" => e(1.0, 1, ElementwiseOut::Float),
        "round" | "gelu" | "leaky_relu" | "pow" | "clamp_min" | "clamp_max" => {
            e(1.0, 2, ElementwiseOut::Promoted)
        }
        "hardtanh" | "softplus" | "threshold" => e(1.0, 3, ElementwiseOut::Promoted),
        "elu" | "nan_to_num" => e(1.0, 4, ElementwiseOut::Promoted),
        "clamp" | "clip" => e(2.0, 3, ElementwiseOut::Promoted),
        "logical_not" | "isnan" | "isinf" => e(1.0, 1, ElementwiseOut::Bool),
        // Binary: 1 per element (`alpha` folded in).
        "add" | "sub" | "rsub" => e(1.0, 3, ElementwiseOut::Promoted),
        "div" => e(1.0, 3, ElementwiseOut::Float),
        "true_divide" | "atan2" => e(1.0, 2, ElementwiseOut::Float),
        "mul" | "floor_divide" | "remainder" | "fmod" | "maximum" | "minimum" | "hypot"
        | "xlogy" | "copysign" | "bitwise_and" | "bitwise_or" | "bitwise_xor" => {
            e(1.0, 2, ElementwiseOut::Promoted)
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "logical_xor" => {
            e(1.0, 2, ElementwiseOut::Bool)
        }
        // Ternary, counted by their definition: self + value·t1·t2, self + w·(end − self).
        "addcmul" | "addcdiv" => e(3.0, 4, ElementwiseOut::Promoted),
        "lerp" => e(3.0, 3, ElementwiseOut::Promoted),
        // Selects move data, compute nothing.
        "where" => e(0.0, 3, ElementwiseOut::Promoted),
        "masked_fill" => e(0.0, 3, ElementwiseOut::Promoted),
        "fill" | "zero" => e(0.0, if name == "fill" { 2 } else { 1 }, ElementwiseOut::WriteOnly),
        // Activation gradients: the derivative and its product with the gradient.
        "threshold_backward" => e(1.0, 3, ElementwiseOut::Promoted),
        "hardtanh_backward" => e(1.0, 4, ElementwiseOut::Promoted),
        "gelu_backward" => e(2.0, 3, ElementwiseOut::Promoted),
        "silu_backward"
        | "sigmoid_backward"
        | "tanh_backward"
        | "hardswish_backward"
        | "hardsigmoid_backward" => e(2.0, 2, ElementwiseOut::Promoted),
        "leaky_relu_backward" | "softplus_backward" => e(2.0, 4, ElementwiseOut::Promoted),
        "elu_backward" => e(2.0, 6, ElementwiseOut::Promoted),
        "native_dropout" => e(1.0, 3, ElementwiseOut::WithMask),
        "native_dropout_backward" => e(1.0, 3, ElementwiseOut::Promoted),
        _ => return None,
    })
}

/// Elementwise: every operand read once, the output (the operands'
/// broadcast, `self` in place, or the `out=` tensor) written once.
pub(super) fn elementwise(a: &Args<'_>, sig: ElementwiseSig, in_place: bool) -> Option<Work> {
    let label = a.dtype()?;
    let nargs = usize::from(sig.nargs);
    // `where(condition)` alone is `nonzero`, not a select.
    if a.n_entries < nargs.min(2) {
        return None;
    }
    let out_tensor = (nargs..a.n_entries).find_map(|i| a.tensor(i));
    let mut shape = [1u64; MAX_RANK];
    let mut rank = 0;
    let (mut dimmed, mut zero_dim): (Option<Dtype>, Option<Dtype>) = (None, None);
    let mut read = 0.0;
    let write_only = sig.out == ElementwiseOut::WriteOnly;
    for i in 0..nargs.min(a.n_entries) {
        let Some(t) = a.tensor(i) else { continue };
        let dtype = t.dtype?;
        if !(write_only && i == 0) {
            read += t.bytes()?;
        }
        broadcast_into(&mut shape, &mut rank, t.dims)?;
        let slot = if t.rank() == 0 { &mut zero_dim } else { &mut dimmed };
        *slot = Some(slot.map_or(dtype, |d| d.promote(dtype)));
    }
    let first = a.tensor(0);
    let (out_numel, out_dtype) = if in_place || write_only {
        let t = first?;
        (t.numel(), t.dtype?)
    } else if let Some(t) = out_tensor {
        (t.numel(), t.dtype?)
    } else {
        // torch's rule: a 0-dim tensor decides only from a higher category.
        let promoted = match (dimmed, zero_dim) {
            (Some(d), Some(z)) if z.category() > d.category() => z,
            (Some(d), _) => d,
            (None, z) => z?,
        };
        let dtype = match sig.out {
            ElementwiseOut::Bool => Dtype::Bool,
            ElementwiseOut::Float if promoted.category() < 2 => Dtype::F32,
            _ => promoted,
        };
        (shape[..rank].iter().map(|&d| d as f64).product(), dtype)
    };
    let mut written = out_numel * f64::from(out_dtype.size());
    if sig.out == ElementwiseOut::WithMask {
        written += out_numel;
    }
    Some(memory(sig.flops * out_numel, read + written, label, elements(out_numel)))
}

/// Broadcasts `dims` into `shape` (right-aligned, `rank` dims used).
fn broadcast_into(shape: &mut [u64; MAX_RANK], rank: &mut usize, dims: &[u64]) -> Option<()> {
    if dims.len() > MAX_RANK {
        return None;
    }
    // Right-align: shift the current shape up when `dims` is longer.
    if dims.len() > *rank {
        let grow = dims.len() - *rank;
        shape.copy_within(0..*rank, grow);
        shape[..grow].fill(1);
        *rank = dims.len();
    }
    let offset = *rank - dims.len();
    for (s, &d) in shape[offset..*rank].iter_mut().zip(dims) {
        *s = match (*s, d) {
            (s, d) if s == d => s,
            (1, d) => d,
            (s, 1) => s,
            _ => return None,
        };
    }
    Some(())
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use crate::analysis::work::Model;
    use crate::analysis::work::tests::{BF16, F32, I64, check, run, work};

    #[test]
    fn elementwise_broadcasts_and_ignores_scalars() {
        // tracelens_h100_timesformer: [128, 197, 768] + [1, 197, 768] (the position embedding), alpha a Scalar.
        let w = work(
            "aten::add",
            "[[128, 197, 768], [1, 197, 768], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "", "1"]"#),
        );
        let n = 128.0 * 197.0 * 768.0;
        check(&w, n, (n + 197.0 * 768.0 + n) * BF16);
        assert_eq!((w.matrix, w.inputs.as_str()), (false, "19.4M elements"));
        // tracelens_h100_timesformer: a 0-dim double tensor (a wrapped Python float) does not
        // promote the bf16 output; it is read once, 8 bytes.
        let w = work(
            "aten::mul",
            "[[3136, 12, 8, 8], []]",
            r#"["c10::BFloat16", "double"]"#,
            Some(r#"["", ""]"#),
        );
        let n = 3136.0 * 12.0 * 64.0;
        check(&w, n, n * BF16 + 8.0 + n * BF16);
        // kineto_resnet50_v100_2021jun: float / a 0-dim int64 tensor.
        let w = work("aten::div", "[[3, 224, 224], []]", r#"["float", "long int"]"#, None);
        let n = 3.0 * 224.0 * 224.0;
        check(&w, n, n * F32 + I64 + n * F32);
        // tracelens_h100_qwen_inference: a comparison writes bool.
        let w =
            work("aten::eq", "[[16, 559], []]", r#"["long int", "Scalar"]"#, Some(r#"["", "1"]"#));
        check(&w, 16.0 * 559.0, 16.0 * 559.0 * (I64 + 1.0));
        // hta_trace_diff_a100_2022: where(condition, self, other) selects, computes nothing.
        let w =
            work("aten::where", "[[1024], [1024], [1024]]", r#"["bool", "long", "long"]"#, None);
        check(&w, 0.0, 1024.0 * (1.0 + I64 + I64) + 1024.0 * I64);
        // tracelens_h100_timesformer: gelu(self, approximate).
        let w = work(
            "aten::gelu",
            "[[1, 25089, 3072], []]",
            r#"["c10::BFloat16", ""]"#,
            Some(r#"["", ""]"#),
        );
        check(&w, 25089.0 * 3072.0, 2.0 * 25089.0 * 3072.0 * BF16);
        // Shapes that do not broadcast.
        assert_eq!(
            run("aten::add", "[[3, 4], [5, 4], []]", r#"["float", "float", "Scalar"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    fn in_place_and_out_forms_write_their_tensor() {
        // tracelens_h100_timesformer: add_ of a [1, 768, 1, 1] bias into [128, 768, 14, 14]:
        // self read and written back.
        let w = work(
            "aten::add_",
            "[[128, 768, 14, 14], [1, 768, 1, 1], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "", "1"]"#),
        );
        let n = 128.0 * 768.0 * 14.0 * 14.0;
        check(&w, n, (n + 768.0) * BF16 + n * BF16);
        // kineto_resnet50_v100_2021jun: clamp_min.out(self, min, out), the output recorded third.
        let w = work(
            "aten::clamp_min",
            "[[32, 64, 112, 112], [], [32, 64, 112, 112]]",
            r#"["float", "Int", "float"]"#,
            None,
        );
        let n = 32.0 * 64.0 * 112.0 * 112.0;
        check(&w, n, 2.0 * n * F32);
        // hta_amd_mi250_rocm62: fill_ and zero_ write without reading.
        let w =
            work("aten::fill_", "[[5, 128], []]", r#"["float", "Scalar"]"#, Some(r#"["", "0"]"#));
        check(&w, 0.0, 5.0 * 128.0 * F32);
        let w = work("aten::zero_", "[[5, 128]]", r#"["float"]"#, Some(r#"[""]"#));
        check(&w, 0.0, 5.0 * 128.0 * F32);
        // kineto_resnet50_v100_2021jun: threshold_backward(grad_output, self, threshold).
        let w = work(
            "aten::threshold_backward",
            "[[32, 2048, 7, 7], [32, 2048, 7, 7], []]",
            r#"["float", "float", "Int"]"#,
            None,
        );
        let n = 32.0 * 2048.0 * 49.0;
        check(&w, n, 3.0 * n * F32);
    }
}
