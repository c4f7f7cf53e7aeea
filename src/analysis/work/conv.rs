//! Convolutions (`conv1d`–`conv3d`, the transposed ones, and the backend
//! ops under them: `convolution`, `cudnn_*`, `miopen_*`, `mkldnn_*`) and
//! `convolution_backward`.

use std::fmt::Write as _;

use super::args::{Args, Tensor};
use super::{Work, int, join_x, matrix};

/// Where a convolution op keeps its arguments.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConvSig {
    bias: Option<u8>,
    stride: u8,
    padding: u8,
    dilation: u8,
    groups: u8,
    /// Fixed by the op, or a `bool transposed` argument.
    transposed: Transposed,
    output_padding: Option<u8>,
}

#[derive(Debug, Clone, Copy)]
enum Transposed {
    Fixed(bool),
    At(u8),
}

pub(super) fn conv_sig(name: &str) -> Option<ConvSig> {
    let sig = |bias, stride, padding, dilation, groups, transposed, output_padding| ConvSig {
        bias,
        stride,
        padding,
        dilation,
        groups,
        transposed,
        output_padding,
    };
    Some(match name {
        // (input, weight, bias, stride, padding, dilation, groups)
        "conv1d" | "conv2d" | "conv3d" | "_convolution_mode" => {
            sig(Some(2), 3, 4, 5, 6, Transposed::Fixed(false), None)
        }
        // (input, weight, bias, stride, padding, output_padding, groups, dilation)
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => {
            sig(Some(2), 3, 4, 7, 6, Transposed::Fixed(true), Some(5))
        }
        // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, …)
        "convolution" | "_convolution" => sig(Some(2), 3, 4, 5, 8, Transposed::At(6), Some(7)),
        // (self, weight, padding, stride, dilation, groups, …)
        "cudnn_convolution" => sig(None, 3, 2, 4, 5, Transposed::Fixed(false), None),
        // (self, weight, padding, output_padding, stride, dilation, groups, …)
        "cudnn_convolution_transpose" => sig(None, 4, 2, 5, 6, Transposed::Fixed(true), Some(3)),
        // (self, weight, bias, padding, stride, dilation, groups, …)
        "miopen_convolution" | "miopen_depthwise_convolution" | "mkldnn_convolution" => {
            sig(Some(2), 4, 3, 5, 6, Transposed::Fixed(false), None)
        }
        // (self, weight, bias, padding, output_padding, stride, dilation, groups, …)
        "miopen_convolution_transpose" => {
            sig(Some(2), 5, 3, 6, 7, Transposed::Fixed(true), Some(4))
        }
        _ => return None,
    })
}

/// The convolution's sizes, as its formula and details line use them.
struct ConvShape {
    batch: f64,
    cin: f64,
    cout: f64,
    out: [f64; 3],
    /// The spatial size every weight element is applied over: the output's
    /// for a convolution, the input's for a transposed one.
    applied: f64,
    spatial: usize,
}

impl ConvShape {
    fn inputs(
        &self,
        w: &Tensor<'_>,
        groups: i64,
        stride: Option<[i64; 3]>,
        transposed: bool,
    ) -> String {
        let mut s = format!(
            "N={} Cin={} Cout={} out={} k={} groups={groups}",
            int(self.batch),
            int(self.cin),
            int(self.cout),
            join_x(self.out[..self.spatial].iter().map(|&v| int(v))),
            join_x(w.dims[2..].iter().copied())
        );
        if let Some(stride) = stride {
            let stride = &stride[..self.spatial];
            if stride.iter().all(|&v| v == stride[0]) {
                let _ = write!(s, " stride={}", stride[0]);
            } else {
                let _ = write!(s, " stride={}", join_x(stride.iter().map(|&v| v.unsigned_abs())));
            }
        }
        if transposed {
            s.push_str(" transposed");
        }
        s
    }
}

/// `Cin`, batch and spatial sizes of a convolution input with `spatial`
/// spatial dims (`[N, C, …]`, or unbatched `[C, …]`).
fn conv_input<'t>(x: &Tensor<'t>, spatial: usize) -> Option<(f64, f64, &'t [u64])> {
    match x.rank().checked_sub(spatial)? {
        2 => Some((x.dim(0), x.dim(1), &x.dims[2..])),
        1 => Some((1.0, x.dim(0), &x.dims[1..])),
        _ => None,
    }
}

/// FLOPs = 2 · N · (applied spatial size) · numel(weight), which is
/// 2·N·Cout·prod(out)·(Cin/groups)·prod(k) for a convolution.
pub(super) fn conv(a: &Args<'_>, sig: ConvSig) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, w) = (a.tensor(0)?, a.tensor(1)?);
    let spatial = w.rank().checked_sub(2).filter(|n| (1..=3).contains(n))?;
    let (batch, cin, in_sp) = conv_input(&x, spatial)?;
    let transposed = match sig.transposed {
        Transposed::Fixed(t) => t,
        Transposed::At(i) => a.conc_bool(i.into())?,
    };
    let groups = a.conc_int(sig.groups.into()).filter(|&g| g >= 1)?;
    let positive = |v: &[i64; 3]| v[..spatial].iter().all(|&x| x >= 1);
    let stride = a.spatial(sig.stride.into(), spatial).filter(positive)?;
    let dilation = a.spatial(sig.dilation.into(), spatial).filter(positive)?;
    // `padding="same"` keeps the size (PyTorch allows it at stride 1 only).
    let padding = match a.conc(sig.padding.into())? {
        p if p.windows(4).any(|w| w == b"same") => None,
        p if p.windows(5).any(|w| w == b"valid") => Some([0; 3]),
        _ => Some(a.spatial(sig.padding.into(), spatial)?),
    };
    let output_padding = match (transposed, sig.output_padding) {
        (true, Some(i)) => a.spatial(i.into(), spatial)?,
        _ => [0; 3],
    };
    let params = ConvParams { groups, stride, padding, dilation, output_padding, transposed };
    let shape = conv_shape(batch, cin, in_sp, &w, &params)?;
    let bias = match sig.bias.and_then(|i| a.tensor(i.into())) {
        Some(b) => b.bytes_or(Some(dtype))?,
        None => 0.0,
    };
    let out: f64 = shape.out[..spatial].iter().product();
    let bytes = x.bytes_or(Some(dtype))?
        + w.bytes_or(Some(dtype))?
        + bias
        + batch * shape.cout * out * f64::from(dtype.size());
    let flops = 2.0 * batch * shape.applied * w.numel();
    Some(matrix(flops, bytes, dtype, shape.inputs(&w, groups, Some(stride), transposed)))
}

/// A convolution's recorded arguments.
#[derive(Debug, Clone, Copy)]
struct ConvParams {
    groups: i64,
    stride: [i64; 3],
    /// `None`: `padding="same"`.
    padding: Option<[i64; 3]>,
    dilation: [i64; 3],
    output_padding: [i64; 3],
    transposed: bool,
}

/// Output size and channels: out = ⌊(in + 2p − d·(k − 1) − 1) / s⌋ + 1, or
/// for a transposed convolution (in − 1)·s − 2p + d·(k − 1) + output_padding + 1.
fn conv_shape(
    batch: f64,
    cin: f64,
    in_sp: &[u64],
    w: &Tensor<'_>,
    p: &ConvParams,
) -> Option<ConvShape> {
    let ConvParams { groups, stride, padding, dilation, output_padding, transposed } = *p;
    let spatial = in_sp.len();
    let g = groups as f64;
    let k = &w.dims[2..];
    let mut out = [0f64; 3];
    for d in 0..spatial {
        let (i, kd) = (in_sp[d] as i128, k[d] as i128);
        let (s, dl, op) =
            (i128::from(stride[d]), i128::from(dilation[d]), i128::from(output_padding[d]));
        let reach = dl * (kd - 1);
        let o = match (transposed, padding) {
            (false, None) if s == 1 => i,
            (_, None) => return None,
            (false, Some(pad)) => {
                let span = i + 2 * i128::from(pad[d]) - reach - 1;
                if span < 0 { 0 } else { span / s + 1 }
            }
            (true, Some(pad)) => (i - 1) * s - 2 * i128::from(pad[d]) + reach + op + 1,
        };
        if o < 0 {
            return None;
        }
        out[d] = o as f64;
    }
    let in_size: f64 = in_sp.iter().map(|&d| d as f64).product();
    let out_size: f64 = out[..spatial].iter().product();
    let (cout, applied) = if transposed {
        // weight [Cin, Cout/groups, k…]
        (w.dim(0) == cin).then_some((w.dim(1) * g, in_size))?
    } else {
        // weight [Cout, Cin/groups, k…]
        (w.dim(1) * g == cin).then_some((w.dim(0), out_size))?
    };
    Some(ConvShape { batch, cin, cout, out, applied, spatial })
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride,
/// padding, dilation, transposed, output_padding, groups, output_mask)`:
/// grad_input and grad_weight each cost the forward's FLOPs, grad_bias one
/// add per grad_output element, each as `output_mask` asks.
pub(super) fn conv_backward(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (go, x, w) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    let spatial = w.rank().checked_sub(2).filter(|n| (1..=3).contains(n))?;
    if go.rank() != spatial + 2 || x.rank() != spatial + 2 || go.dims[0] != x.dims[0] {
        return None;
    }
    let transposed = a.conc_bool(7)?;
    let groups = a.conc_int(9).filter(|&g| g >= 1)?;
    let mut mask = [false; 4];
    if a.conc_bools(10, &mut mask)? != 3 {
        return None;
    }
    let g = groups as f64;
    let (batch, cin, cout) = (x.dim(0), x.dim(1), go.dim(1));
    let channels_fit = if transposed {
        w.dim(0) == cin && w.dim(1) * g == cout
    } else {
        w.dim(1) * g == cin && w.dim(0) == cout
    };
    if !channels_fit {
        return None;
    }
    let out: Vec<f64> = go.dims[2..].iter().map(|&d| d as f64).collect();
    let applied: f64 = if transposed {
        x.dims[2..].iter().map(|&d| d as f64).product()
    } else {
        out.iter().product()
    };
    let forward = 2.0 * batch * applied * w.numel();
    let size = f64::from(dtype.size());
    let (mut flops, mut bytes, mut grads) = (0.0, go.bytes_or(Some(dtype))?, Vec::new());
    if mask[0] {
        flops += forward;
        bytes += w.bytes_or(Some(dtype))? + x.numel() * size;
        grads.push("input");
    }
    if mask[1] {
        flops += forward;
        bytes += x.bytes_or(Some(dtype))? + w.numel() * size;
        grads.push("weight");
    }
    if mask[2] {
        flops += go.numel();
        bytes += cout * size;
        grads.push("bias");
    }
    let mut out3 = [0.0; 3];
    out3[..spatial].copy_from_slice(&out);
    let shape = ConvShape { batch, cin, cout, out: out3, applied, spatial };
    let stride = a.spatial(4, spatial);
    let inputs =
        format!("{} grad={}", shape.inputs(&w, groups, stride, transposed), grads.join(","));
    Some(matrix(flops, bytes, dtype, inputs))
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use crate::analysis::work::Model;
    use crate::analysis::work::tests::{BF16, F32, check, run, work};

    /// tracelens_h100_timesformer's patch embedding: 3 → 768 channels, 16×16
    /// kernel at stride 16 on 224×224: a 14×14 output.
    fn timesformer_conv() -> (f64, f64) {
        let (n, cin, cout, out, k) = (128.0, 3.0, 768.0, 14.0 * 14.0, 16.0 * 16.0);
        let flops = 2.0 * n * cout * out * cin * k;
        let bytes = (n * cin * 224.0 * 224.0 + cout * cin * k + n * cout * out) * BF16;
        (flops, bytes)
    }

    #[test]
    fn conv2d_and_the_ops_under_it_from_concrete_inputs() {
        let (flops, bytes) = timesformer_conv();
        let bias = 768.0 * BF16;
        // tracelens_h100_timesformer: conv2d(input, weight, bias, stride, padding, dilation, groups).
        let w = work(
            "aten::conv2d",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "1"]"#),
        );
        check(&w, flops, bytes + bias);
        assert_eq!(w.inputs, "N=128 Cin=3 Cout=768 out=14x14 k=16x16 groups=1 stride=16");
        assert!(w.matrix);
        // The same call's aten::convolution (transposed, output_padding, groups after dilation).
        let w = work(
            "aten::convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]"#),
        );
        check(&w, flops, bytes + bias);
        // Its aten::cudnn_convolution: no bias, padding before stride.
        let w = work(
            "aten::cudnn_convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False", "True"]"#),
        );
        check(&w, flops, bytes);
        // tracelens_mi300_inference, the same model on MI300X: aten::miopen_convolution
        // (bias, then padding before stride).
        let w = work(
            "aten::miopen_convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False"]"#),
        );
        check(&w, flops, bytes + bias);
    }

    #[test]
    fn depthwise_conv_with_stride_and_padding() {
        // Written in the format of the timesformer conv2d (no trace here has groups > 1): a
        // YOLO/MobileNet depthwise 3×3 at stride 2, padding 1: out = ⌊(56 + 2 − 2 − 1) / 2⌋ + 1 = 28.
        let w = work(
            "aten::conv2d",
            "[[16, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "64"]"#),
        );
        let (n, c, out, k) = (16.0, 64.0, 28.0 * 28.0, 9.0);
        check(
            &w,
            2.0 * n * c * out * (c / 64.0) * k,
            (n * c * 56.0 * 56.0 + c * k + n * c * out) * BF16,
        );
        assert_eq!(w.inputs, "N=16 Cin=64 Cout=64 out=28x28 k=3x3 groups=64 stride=2");
        // Groups that do not divide the input channels as the weight says: not a fit.
        let bad = run(
            "aten::conv2d",
            "[[16, 64, 56, 56], [64, 16, 3, 3], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2"]"#),
        );
        assert_eq!(bad, Model::NoShapes);
    }

    #[test]
    fn transposed_convolution_counts_over_the_input() {
        // Written in the aten::convolution format: a 2× upsampling, weight [Cin, Cout/groups, 2, 2]:
        // out = (14 − 1)·2 − 0 + (2 − 1) + 0 + 1 = 28.
        let w = work(
            "aten::convolution",
            "[[1, 64, 14, 14], [64, 32, 2, 2], [], [], [], [], [], [], []]",
            r#"["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]"#),
        );
        let (cin, cout, k) = (64.0, 32.0, 4.0);
        check(
            &w,
            2.0 * cin * 14.0 * 14.0 * cout * k,
            (cin * 14.0 * 14.0 + cin * cout * k + cout * 28.0 * 28.0) * F32,
        );
        assert!(w.inputs.ends_with("transposed"), "{}", w.inputs);
    }

    #[test]
    fn convolution_without_concrete_inputs_is_not_guessed() {
        // kineto_resnet50_v100_2021jun: stride and padding not recorded.
        let m = run(
            "aten::conv2d",
            "[[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], []]",
            r#"["float", "float", "", "GenericList", "GenericList", "GenericList", "Int"]"#,
            None,
        );
        assert_eq!(m, Model::NoShapes);
    }

    /// ResNet-50's first layer as kineto_resnet50_v100_2021jun records it
    /// (input [32, 3, 224, 224], grad_output [32, 64, 112, 112], weight
    /// [64, 3, 7, 7]), written as aten::convolution_backward with Concrete
    /// Inputs: no trace here records that op with them.
    fn resnet_conv_backward(mask: &str) -> Model {
        let concrete = format!(
            r#"["", "", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1", "{mask}"]"#
        );
        run(
            "aten::convolution_backward",
            "[[32, 64, 112, 112], [32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], []]",
            r#"["float", "float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "ScalarList"]"#,
            Some(&concrete),
        )
    }

    #[test]
    fn convolution_backward_counts_what_the_output_mask_asks() {
        let (go, x, wt) =
            (32.0 * 64.0 * 112.0 * 112.0, 32.0 * 3.0 * 224.0 * 224.0, 64.0 * 3.0 * 49.0);
        let forward = 2.0 * 32.0 * 64.0 * 112.0 * 112.0 * 3.0 * 49.0;
        // The first layer: no grad_input. grad_weight reads grad_output and input, writes the weight's grad.
        let Model::Work(w) = resnet_conv_backward("[False, True, False]") else { panic!() };
        check(&w, forward, (go + x + wt) * F32);
        assert!(w.inputs.ends_with("grad=weight"), "{}", w.inputs);
        // Both: grad_input also reads the weight and writes an input-sized gradient.
        let Model::Work(w) = resnet_conv_backward("[True, True, False]") else { panic!() };
        check(&w, 2.0 * forward, (go + wt + x + x + wt) * F32);
        // grad_bias: one add per grad_output element, Cout written.
        let Model::Work(w) = resnet_conv_backward("[False, False, True]") else { panic!() };
        check(&w, go, (go + 64.0) * F32);
        assert_eq!(resnet_conv_backward("[True, True]"), Model::NoShapes);
    }
}
