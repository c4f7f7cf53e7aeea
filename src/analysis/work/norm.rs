//! Normalisations (layer, batch, group, instance and RMS norm) forward and
//! backward, and softmax forward and backward.

use super::args::Args;
use super::{Dtype, Work, elements, memory};

/// FLOPs per element of a forward normalisation.
pub(super) fn norm_flops(name: &str) -> Option<f64> {
    Some(match name {
        "native_layer_norm"
        | "layer_norm"
        | "native_batch_norm"
        | "batch_norm"
        | "_batch_norm_impl_index"
        | "cudnn_batch_norm"
        | "miopen_batch_norm"
        | "_native_batch_norm_legit"
        | "_native_batch_norm_legit_no_training"
        | "_native_batch_norm_legit_functional"
        | "_batch_norm_with_update"
        | "_batch_norm_no_update"
        | "native_group_norm"
        | "group_norm"
        | "instance_norm" => 5.0,
        "rms_norm" | "_fused_rms_norm" => 4.0,
        _ => return None,
    })
}

/// Forward normalisation: every tensor argument read (input, weight, bias,
/// running statistics), the input-sized output written; the per-group
/// statistics it also writes (mean, rstd) are left out.
pub(super) fn norm(a: &Args<'_>, flops: f64) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let bytes = a.all_tensor_bytes(None)? + x.bytes()?;
    Some(memory(flops * x.numel(), bytes, dtype, elements(x.numel())))
}

#[derive(Debug, Clone, Copy)]
pub(super) struct NormBackwardSig {
    /// Position of the forward input (grad_input has its shape).
    input: u8,
    /// Position of the weight (grad_weight and grad_bias have its shape).
    weight: u8,
    /// Position of `bool[3] output_mask` (`bool[2]` without a bias);
    /// none: all are computed.
    mask: Option<u8>,
    /// Whether the op has a bias gradient (RMS norm has none).
    bias: bool,
}

pub(super) fn norm_backward_sig(name: &str) -> Option<NormBackwardSig> {
    let sig = |input, weight, mask| NormBackwardSig { input, weight, mask, bias: true };
    Some(match name {
        // (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
        "native_layer_norm_backward" => sig(1, 5, Some(7)),
        // (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
        "native_batch_norm_backward" => sig(1, 2, Some(9)),
        // (grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps, output_mask, reserve)
        "batch_norm_backward" => sig(1, 2, Some(9)),
        // (input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon[, reserveSpace])
        "cudnn_batch_norm_backward" | "miopen_batch_norm_backward" => sig(0, 2, None),
        // (grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
        "native_group_norm_backward" => sig(1, 4, Some(9)),
        // (grad_out, input, normalized_shape, rstd, weight, output_mask[2])
        "_fused_rms_norm_backward" => NormBackwardSig { bias: false, ..sig(1, 4, Some(5)) },
        _ => return None,
    })
}

/// Normalisation backward: every tensor argument read; grad_input (7 FLOPs
/// per element), grad_weight (2) and grad_bias (1) written as the mask asks.
pub(super) fn norm_backward(a: &Args<'_>, sig: NormBackwardSig) -> Option<Work> {
    let x = a.tensor(sig.input.into())?;
    let dtype = x.dtype?;
    let mut mask = [true, true, sig.bias, true];
    if let Some(at) = sig.mask {
        if a.conc_bools(at.into(), &mut mask)? != if sig.bias { 3 } else { 2 } {
            return None;
        }
    }
    let n = x.numel();
    let (mut flops, mut bytes) = (0.0, a.all_tensor_bytes(None)?);
    if mask[0] {
        flops += 7.0 * n;
        bytes += x.bytes()?;
    }
    for (wanted, per_element) in [(mask[1], 2.0), (mask[2], 1.0)] {
        if wanted {
            flops += per_element * n;
            bytes += a.tensor(sig.weight.into())?.bytes()?;
        }
    }
    Some(memory(flops, bytes, dtype, elements(n)))
}

#[derive(Debug, Clone, Copy)]
pub(super) enum SoftmaxSig {
    /// `_softmax(self, dim, half_to_float)`: a float32 output on request.
    HalfToFloat,
    /// `softmax(self, dim, dtype)`.
    DtypeArg,
}

pub(super) fn softmax_sig(name: &str) -> Option<SoftmaxSig> {
    match name {
        "_softmax" | "_log_softmax" => Some(SoftmaxSig::HalfToFloat),
        "softmax" | "log_softmax" => Some(SoftmaxSig::DtypeArg),
        _ => None,
    }
}

/// Softmax: 5 FLOPs per element (max, subtract, exp, sum, divide), input
/// read, output written.
pub(super) fn softmax(a: &Args<'_>, sig: SoftmaxSig) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let out = match sig {
        SoftmaxSig::DtypeArg => a.dtype_arg(2)?.unwrap_or(dtype),
        SoftmaxSig::HalfToFloat => match a.conc_bool(2) {
            Some(true) => Dtype::F32,
            Some(false) => dtype,
            // Unrecorded, it only matters for half-precision input.
            None => (!matches!(dtype, Dtype::F16 | Dtype::Bf16)).then_some(dtype)?,
        },
    };
    let n = x.numel();
    Some(memory(5.0 * n, x.bytes()? + n * f64::from(out.size()), dtype, elements(n)))
}

/// `_softmax_backward_data(grad_output, output, dim, input_dtype)`: 4 FLOPs
/// per element (product, sum, subtract, product), both read, grad_input
/// written in `input_dtype` (PyTorch ≤ 1.10 passed the input tensor there).
pub(super) fn softmax_backward(a: &Args<'_>) -> Option<Work> {
    let grad = a.tensor(0)?;
    let dtype = grad.dtype?;
    let out = if a.tensor(3).is_some() { dtype } else { a.dtype_arg(3)?.unwrap_or(dtype) };
    let n = grad.numel();
    Some(memory(4.0 * n, a.all_tensor_bytes(None)? + n * f64::from(out.size()), dtype, elements(n)))
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use crate::analysis::work::Model;
    use crate::analysis::work::tests::{BF16, F32, check, run, work};

    #[test]
    fn normalisations() {
        // tracelens_h100_timesformer: native_layer_norm(input, normalized_shape, weight, bias, eps).
        let w = work(
            "aten::native_layer_norm",
            "[[3136, 8, 768], [], [768], [768], []]",
            r#"["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "[768]", "", "", "9.9999999999999995e-07"]"#),
        );
        let n = 3136.0 * 8.0 * 768.0;
        check(&w, 5.0 * n, (n + 768.0 + 768.0) * BF16 + n * BF16);
        // hta_trace_diff_a100_2022: layer_norm without Concrete Inputs needs none.
        let w = work(
            "aten::layer_norm",
            "[[1024, 512], [], [512], [512], [], []]",
            r#"["float", "", "float", "float", "Scalar", "Scalar"]"#,
            None,
        );
        let n = 1024.0 * 512.0;
        check(&w, 5.0 * n, (n + 512.0 + 512.0) * F32 + n * F32);
        // kineto_resnet50_v100_2021jun: cudnn_batch_norm reads input, weight, bias and the running stats.
        let w = work(
            "aten::cudnn_batch_norm",
            "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]",
            r#"["float", "float", "float", "float", "float", "Bool", "Double", "Double"]"#,
            None,
        );
        let n = 32.0 * 64.0 * 112.0 * 112.0;
        check(&w, 5.0 * n, (n + 4.0 * 64.0) * F32 + n * F32);
        // kineto_resnet50_v100_2021jun: cudnn_batch_norm_backward(input, grad_output, weight,
        // running_mean, running_var, save_mean, save_var, epsilon, reserveSpace): all three grads.
        let w = work(
            "aten::cudnn_batch_norm_backward",
            "[[32, 64, 112, 112], [32, 64, 112, 112], [64], [64], [64], [64], [64], [], [0]]",
            r#"["float", "float", "float", "float", "float", "float", "float", "Double", "unsigned char"]"#,
            None,
        );
        check(&w, (7.0 + 2.0 + 1.0) * n, (2.0 * n + 5.0 * 64.0) * F32 + (n + 64.0 + 64.0) * F32);
    }

    #[test]
    fn group_norm_and_rms_norm_backward_are_priced() {
        // GroupNorm as PyTorch 2.x records it: group_norm(input, num_groups,
        // weight, bias, eps, cudnn_enabled) → native_group_norm(input,
        // weight, bias, N, C, HxW, group, eps).
        let n = 8.0 * 64.0 * 32.0 * 32.0;
        let w = work(
            "aten::group_norm",
            "[[8, 64, 32, 32], [], [64], [64], [], []]",
            r#"["float", "Scalar", "float", "float", "Scalar", "Scalar"]"#,
            Some(r#"["", "32", "", "", "1.0000000000000001e-05", "True"]"#),
        );
        check(&w, 5.0 * n, (n + 64.0 + 64.0) * F32 + n * F32);
        let w = work(
            "aten::native_group_norm",
            "[[8, 64, 32, 32], [64], [64], [], [], [], [], []]",
            r#"["float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "8", "64", "1024", "32", "1.0000000000000001e-05"]"#),
        );
        check(&w, 5.0 * n, (n + 64.0 + 64.0) * F32 + n * F32);
        // native_group_norm_backward(grad_out, input, mean [N, G], rstd [N, G],
        // weight, N, C, HxW, group, output_mask): all three gradients.
        let w = work(
            "aten::native_group_norm_backward",
            "[[8, 64, 32, 32], [8, 64, 32, 32], [8, 32], [8, 32], [64], [], [], [], [], []]",
            r#"["float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar", "GenericList"]"#,
            Some(r#"["", "", "", "", "", "8", "64", "1024", "32", "[True, True, True]"]"#),
        );
        let read = (2.0 * n + 2.0 * 8.0 * 32.0 + 64.0) * F32;
        check(&w, (7.0 + 2.0 + 1.0) * n, read + (n + 64.0 + 64.0) * F32);
        // _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd,
        // weight, output_mask[2]): grad_input and grad_weight, no bias.
        let rows = 4.0 * 2048.0;
        let n = rows * 4096.0;
        let w = work(
            "aten::_fused_rms_norm_backward",
            "[[4, 2048, 4096], [4, 2048, 4096], [], [4, 2048, 1], [4096], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "ScalarList", "float", "c10::BFloat16", "GenericList"]"#,
            Some(r#"["", "", "[4096]", "", "", "[True, True]"]"#),
        );
        let read = 2.0 * n * BF16 + rows * F32 + 4096.0 * BF16;
        check(&w, (7.0 + 2.0) * n, read + (n + 4096.0) * BF16);
    }

    #[test]
    fn layer_norm_backward_follows_its_output_mask() {
        // hta_trace_diff_a100_2022: output_mask not recorded.
        let dims = "[[1024, 512], [1024, 512], [], [1024, 1], [1024, 1], [512], [512], []]";
        let types = r#"["float", "float", "", "float", "float", "float", "float", ""]"#;
        assert_eq!(run("aten::native_layer_norm_backward", dims, types, None), Model::NoShapes);
        // The same, written with the Concrete Inputs a current trace records.
        let w = work(
            "aten::native_layer_norm_backward",
            dims,
            types,
            Some(r#"["", "", "[512]", "", "", "", "", "[True, True, False]"]"#),
        );
        let n = 1024.0 * 512.0;
        let read = (2.0 * n + 2.0 * 1024.0 + 2.0 * 512.0) * F32;
        check(&w, (7.0 + 2.0) * n, read + (n + 512.0) * F32);
    }

    #[test]
    fn softmax_and_its_backward() {
        // tracelens_h100_timesformer: _softmax(self, dim=-1, half_to_float=False).
        let w = work(
            "aten::_softmax",
            "[[3136, 12, 8, 8], [], []]",
            r#"["c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "-1", "False"]"#),
        );
        let n = 3136.0 * 12.0 * 64.0;
        check(&w, 5.0 * n, 2.0 * n * BF16);
        // Written in the same format: half_to_float=True writes float32.
        let w = work(
            "aten::_softmax",
            "[[3136, 12, 8, 8], [], []]",
            r#"["c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "-1", "True"]"#),
        );
        check(&w, 5.0 * n, n * BF16 + n * F32);
        // kineto_resnet50_v100_2021jun: the 1.9 form passes the input tensor last.
        let w = work(
            "aten::_log_softmax_backward_data",
            "[[32, 1000], [32, 1000], [], [32, 1000]]",
            r#"["float", "float", "Int", "float"]"#,
            None,
        );
        let n = 32.0 * 1000.0;
        check(&w, 4.0 * n, 3.0 * n * F32 + n * F32);
    }
}
