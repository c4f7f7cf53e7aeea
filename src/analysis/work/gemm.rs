//! Matrix multiplies: `mm`, `addmm` and its batched and matrix-vector
//! kin, `bmm`, `mv`, `matmul`, `linear` and the FP8 `_scaled_mm`, each
//! 2·M·N·K.

use super::args::{Args, dims2, dims3};
use super::{Work, int, matrix};

/// Which GEMM an `addmm`-like op runs before adding its `self`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Gemm {
    Addmm,
    Baddbmm,
    Addbmm,
    Addmv,
}

fn gemm_inputs(batch: f64, m: f64, n: f64, k: f64) -> String {
    let (m, n, k) = (int(m), int(n), int(k));
    if batch == 1.0 {
        format!("M={m} N={n} K={k}")
    } else {
        format!("B={} M={m} N={n} K={k}", int(batch))
    }
}

/// `mm(self [M, K], mat2 [K, N])`, also as `mm.out` (the third tensor is
/// the output, written once either way).
pub(super) fn mm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
    if k != k2 {
        return None;
    }
    let bytes =
        x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + m * n * f64::from(dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

/// `addmm(self, mat1 [M, K], mat2 [K, N])` and its batched and
/// matrix-vector kin: the GEMM's 2·M·N·K (the added `self` is the GEMM's
/// epilogue, not counted), `self` read with the operands.
pub(super) fn add_gemm(a: &Args<'_>, g: Gemm) -> Option<Work> {
    let dtype = a.dtype()?;
    let (added, x, y) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    let (batch, m, n, k, out) = match g {
        Gemm::Addmm => {
            let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
            (k == k2).then_some((1.0, m, n, k, m * n))?
        }
        Gemm::Baddbmm | Gemm::Addbmm => {
            let ((b, m, k), (b2, k2, n)) = (dims3(&x)?, dims3(&y)?);
            let out = if matches!(g, Gemm::Baddbmm) { b * m * n } else { m * n };
            (b == b2 && k == k2).then_some((b, m, n, k, out))?
        }
        Gemm::Addmv => {
            let (m, k) = dims2(&x)?;
            (y.dims == [k as u64]).then_some((1.0, m, 1.0, k, m))?
        }
    };
    let fallback = Some(dtype);
    let bytes = added.bytes_or(fallback)?
        + x.bytes_or(fallback)?
        + y.bytes_or(fallback)?
        + out * f64::from(dtype.size());
    Some(matrix(2.0 * batch * m * n * k, bytes, dtype, gemm_inputs(batch, m, n, k)))
}

/// `bmm(self [B, M, K], mat2 [B, K, N])`.
pub(super) fn bmm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((b, m, k), (b2, k2, n)) = (dims3(&x)?, dims3(&y)?);
    if b != b2 || k != k2 {
        return None;
    }
    let bytes =
        x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + b * m * n * f64::from(dtype.size());
    Some(matrix(2.0 * b * m * n * k, bytes, dtype, gemm_inputs(b, m, n, k)))
}

/// `mv(self [M, K], vec [K])`.
pub(super) fn mv(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let (m, k) = dims2(&x)?;
    if y.dims != [k as u64] {
        return None;
    }
    let bytes = x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + m * f64::from(dtype.size());
    Some(matrix(2.0 * m * k, bytes, dtype, gemm_inputs(1.0, m, 1.0, k)))
}

/// Elements of the broadcast of two batch shapes; `None` if they do not
/// broadcast.
fn broadcast_numel(x: &[u64], y: &[u64]) -> Option<f64> {
    let mut numel = 1.0;
    for i in 0..x.len().max(y.len()) {
        let dx = x.len().checked_sub(i + 1).map_or(1, |j| x[j]);
        let dy = y.len().checked_sub(i + 1).map_or(1, |j| y[j]);
        let d = match (dx, dy) {
            _ if dx == dy => dx,
            (1, d) | (d, 1) => d,
            _ => return None,
        };
        numel *= d as f64;
    }
    Some(numel)
}

/// `matmul` as `torch.matmul` defines it: a 1-D left operand is a row
/// [1, K], a 1-D right one a column [K, 1]; batch dims broadcast.
pub(super) fn matmul(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let (xr, yr) = (x.rank(), y.rank());
    let (m, k, xb) = match xr {
        0 => return None,
        1 => (1, x.dims[0], &[][..]),
        _ => (x.dims[xr - 2], x.dims[xr - 1], &x.dims[..xr - 2]),
    };
    let (k2, n, yb) = match yr {
        0 => return None,
        1 => (y.dims[0], 1, &[][..]),
        _ => (y.dims[yr - 2], y.dims[yr - 1], &y.dims[..yr - 2]),
    };
    if k != k2 {
        return None;
    }
    let batch = broadcast_numel(xb, yb)?;
    let (m, n, k) = (m as f64, n as f64, k as f64);
    let bytes = x.bytes_or(Some(dtype))?
        + y.bytes_or(Some(dtype))?
        + batch * m * n * f64::from(dtype.size());
    Some(matrix(2.0 * batch * m * n * k, bytes, dtype, gemm_inputs(batch, m, n, k)))
}

/// `linear(input [..., K], weight [N, K], bias [N]?)`: M is every leading
/// dim of the input together.
pub(super) fn linear(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, w) = (a.tensor(0)?, a.tensor(1)?);
    let (&k, lead) = x.dims.split_last()?;
    let (n, k2) = match w.dims {
        [n, k2] => (*n as f64, *k2),
        [k2] => (1.0, *k2),
        _ => return None,
    };
    if k != k2 {
        return None;
    }
    let (m, k) = (lead.iter().map(|&d| d as f64).product::<f64>(), k as f64);
    let bias = match a.tensor(2) {
        Some(b) => b.bytes_or(Some(dtype))?,
        None => 0.0,
    };
    let bytes = x.bytes_or(Some(dtype))?
        + w.bytes_or(Some(dtype))?
        + bias
        + m * n * f64::from(dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

/// `_scaled_mm`, the FP8 GEMM: 2·M·N·K; the output in `out_dtype` (its
/// position moved in PyTorch 2.4, when `scale_a`/`scale_b` became the
/// required third and fourth tensors).
pub(super) fn scaled_mm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
    if k != k2 {
        return None;
    }
    let out_dtype_at = if a.tensor(3).is_some() { 6 } else { 3 };
    let out_dtype = a.dtype_arg(out_dtype_at)?.unwrap_or(dtype);
    let bytes = a.all_tensor_bytes(Some(dtype))? + m * n * f64::from(out_dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use crate::analysis::work::tests::{BF16, F32, check, run, work};
    use crate::analysis::work::{Dtype, Model};

    #[test]
    fn addmm_with_bias_counts_the_gemm_and_reads_the_bias() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: bias [N], mat1 [M, K], mat2 [K, N].
        let w = work(
            "aten::addmm",
            "[[1024], [8944, 1024], [1024, 1024], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "1", "1"]"#),
        );
        let (m, n, k) = (8944.0, 1024.0, 1024.0);
        check(&w, 2.0 * m * n * k, (n + m * k + k * n + m * n) * BF16);
        assert_eq!(
            (w.dtype, w.matrix, w.inputs.as_str()),
            (Dtype::Bf16, true, "M=8944 N=1024 K=1024")
        );
    }

    #[test]
    fn mm_and_its_out_form() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B.
        let w = work(
            "aten::mm",
            "[[8944, 1024], [1024, 2816]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        check(
            &w,
            2.0 * 8944.0 * 2816.0 * 1024.0,
            (8944.0 * 1024.0 + 1024.0 * 2816.0 + 8944.0 * 2816.0) * BF16,
        );
        assert_eq!(w.inputs, "M=8944 N=2816 K=1024");
        // tracelens_rocm_triton_compile: mm.out, the output tensor recorded third (written once).
        let w = work(
            "aten::mm",
            "[[32768, 2048], [2048, 8192], [32768, 8192]]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", "", ""]"#),
        );
        check(
            &w,
            2.0 * 32768.0 * 8192.0 * 2048.0,
            (32768.0 * 2048.0 + 2048.0 * 8192.0 + 32768.0 * 8192.0) * BF16,
        );
        // Inner dimensions that differ do not fit the formula.
        assert_eq!(
            run("aten::mm", "[[4, 8], [9, 16]]", r#"["float", "float"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    pub(super) fn bmm() {
        // tracelens_h100_timesformer: [B, M, K] @ [B, K, N].
        let w = work(
            "aten::bmm",
            "[[37632, 8, 64], [37632, 64, 8]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        let (b, m, k, n) = (37632.0, 8.0, 64.0, 8.0);
        check(&w, 2.0 * b * m * n * k, (b * m * k + b * k * n + b * m * n) * BF16);
        assert_eq!(w.inputs, "B=37632 M=8 N=8 K=64");
    }

    #[test]
    fn baddbmm_reads_the_added_tensor() {
        // Written in the trace format (no trace here holds a baddbmm): self [B, M, N], batch1, batch2.
        let w = work(
            "aten::baddbmm",
            "[[12, 128, 128], [12, 128, 64], [12, 64, 128], [], []]",
            r#"["float", "float", "float", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "0", "0.125"]"#),
        );
        let (b, m, k, n) = (12.0, 128.0, 64.0, 128.0);
        check(&w, 2.0 * b * m * n * k, (b * m * n + b * m * k + b * k * n + b * m * n) * F32);
    }

    #[test]
    fn matmul_broadcasts_batch_dims() {
        // hta_trace_diff_a100_2022 (no Concrete Inputs): [1024, 96, 50] @ [50, 15], the
        // 2-D right operand broadcast over the batch.
        let w = work("aten::matmul", "[[1024, 96, 50], [50, 15]]", r#"["float", "float"]"#, None);
        let (b, m, k, n) = (1024.0, 96.0, 50.0, 15.0);
        check(&w, 2.0 * b * m * n * k, (b * m * k + k * n + b * m * n) * F32);
        assert_eq!(w.inputs, "B=1024 M=96 N=15 K=50");
        // tracelens_h100_timesformer: 4-D, batch 3136·12.
        let w = work(
            "aten::matmul",
            "[[3136, 12, 8, 64], [3136, 12, 64, 8]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        let b = 3136.0 * 12.0;
        check(&w, 2.0 * b * 8.0 * 8.0 * 64.0, (b * 8.0 * 64.0 * 2.0 + b * 8.0 * 8.0) * BF16);
        // Written in the format: a 1-D right operand is a column, [5, 1, 4, 3] @ [3] → [5, 1, 4].
        let w = work("aten::matmul", "[[5, 1, 4, 3], [3]]", r#"["float", "float"]"#, None);
        check(&w, 2.0 * 5.0 * 4.0 * 3.0, (5.0 * 4.0 * 3.0 + 3.0 + 5.0 * 4.0) * F32);
        // Batch dims [2] and [3] do not broadcast.
        assert_eq!(
            run("aten::matmul", "[[2, 4, 3], [3, 3, 5]]", r#"["float", "float"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    fn linear_takes_every_leading_dim_as_m() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: input [16, 559, 1024], weight [N, K], bias [N].
        let w = work(
            "aten::linear",
            "[[16, 559, 1024], [1024, 1024], [1024]]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", "", ""]"#),
        );
        let (m, n, k) = (16.0 * 559.0, 1024.0, 1024.0);
        check(&w, 2.0 * m * n * k, (m * k + n * k + n + m * n) * BF16);
        assert_eq!(w.inputs, "M=8944 N=1024 K=1024");
    }

    #[test]
    fn a_tensor_whose_type_was_not_written_takes_the_matrix_ops_dtype() {
        // Written in the 2021–22 format, one type blank.
        let w = work("aten::mm", "[[4, 8], [8, 16]]", r#"["float", ""]"#, None);
        check(&w, 2.0 * 4.0 * 16.0 * 8.0, (4.0 * 8.0 + 8.0 * 16.0 + 4.0 * 16.0) * F32);
    }
}
