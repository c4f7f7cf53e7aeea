//! Copies and gathers: `copy_`, `_to_copy`, `clone`, `cat`/`stack`,
//! `index_select`, `gather`, `embedding` and its backward: bytes moved,
//! next to no FLOPs.

use std::fmt::Write as _;

use super::args::{Args, dims2, wrap_dim};
use super::{Dtype, Work, elements, memory};

/// `copy_(self, src)`: src read, self written, each at its own dtype.
pub(super) fn copy(a: &Args<'_>) -> Option<Work> {
    let (dst, src) = (a.tensor(0)?, a.tensor(1)?);
    let bytes = src.bytes()? + dst.bytes()?;
    let mut inputs = elements(dst.numel());
    if src.dtype != dst.dtype {
        let _ = write!(inputs, " {}→{}", dtype_name(src.dtype?), dtype_name(dst.dtype?));
    }
    Some(memory(0.0, bytes, dst.dtype?, inputs))
}

fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F64 => "f64",
        Dtype::F32 => "f32",
        Dtype::Bf16 => "bf16",
        Dtype::F16 => "f16",
        Dtype::Fp8 => "fp8",
        Dtype::Int8 => "i8",
        Dtype::Uint8 => "u8",
        Dtype::Int16 => "i16",
        Dtype::Int32 => "i32",
        Dtype::Int64 => "i64",
        Dtype::Bool => "bool",
    }
}

/// `_to_copy(self, dtype, layout, device, …)`: self read, written at
/// `dtype` (its own when not given).
pub(super) fn to_copy(a: &Args<'_>) -> Option<Work> {
    let src = a.tensor(0)?;
    let from = src.dtype?;
    let to = a.dtype_arg(1)?.unwrap_or(from);
    let mut inputs = elements(src.numel());
    if to != from {
        let _ = write!(inputs, " {}→{}", dtype_name(from), dtype_name(to));
    }
    Some(memory(0.0, src.bytes()? + src.numel() * f64::from(to.size()), from, inputs))
}

/// `clone`, `contiguous`: read once, written once.
pub(super) fn clone(a: &Args<'_>) -> Option<Work> {
    let src = a.tensor(0)?;
    Some(memory(0.0, 2.0 * src.bytes()?, src.dtype?, elements(src.numel())))
}

/// `cat`/`stack(tensors, dim)`: every listed element read and written.
/// Kineto records a tensor list's shapes but not its element type, so this
/// needs a dtype from a typed tensor argument, which these ops do not have:
/// they come out as shapes not recorded.
pub(super) fn concat(a: &Args<'_>) -> Option<Work> {
    let (_, numel) = a.list(0)?;
    let dtype = a.dtype()?;
    Some(memory(0.0, 2.0 * numel * f64::from(dtype.size()), dtype, elements(numel)))
}

/// `index_select(self, dim, index)`: the selected slices read and written,
/// the indices read.
pub(super) fn index_select(a: &Args<'_>) -> Option<Work> {
    let (src, index) = (a.tensor(0)?, a.tensor(2)?);
    let dtype = src.dtype?;
    let dim = match src.rank() {
        0 | 1 => 0,
        r => wrap_dim(a.conc_int(1)?, r)?,
    };
    let along = src.dim(dim);
    let out = if along == 0.0 { 0.0 } else { src.numel() / along * index.numel() };
    let bytes = index.bytes()? + 2.0 * out * f64::from(dtype.size());
    Some(memory(0.0, bytes, dtype, elements(out)))
}

/// `gather(self, dim, index)`: one element read per index, the output
/// (index-shaped) written, the indices read.
pub(super) fn gather(a: &Args<'_>) -> Option<Work> {
    let (src, index) = (a.tensor(0)?, a.tensor(2)?);
    let dtype = src.dtype?;
    let out = index.numel();
    Some(memory(0.0, index.bytes()? + 2.0 * out * f64::from(dtype.size()), dtype, elements(out)))
}

/// `embedding(weight [V, D], indices)`: one row read and written per index.
pub(super) fn embedding(a: &Args<'_>) -> Option<Work> {
    let (weight, indices) = (a.tensor(0)?, a.tensor(1)?);
    let dtype = weight.dtype?;
    let (_, d) = dims2(&weight)?;
    let out = indices.numel() * d;
    Some(memory(0.0, indices.bytes()? + 2.0 * out * f64::from(dtype.size()), dtype, elements(out)))
}

/// `embedding_dense_backward(grad_output [..., D], indices, num_weights,
/// …)`: gradient and indices read, the `[num_weights, D]` gradient written,
/// one add per gradient element.
pub(super) fn embedding_backward(a: &Args<'_>) -> Option<Work> {
    let (grad, indices) = (a.tensor(0)?, a.tensor(1)?);
    let dtype = grad.dtype?;
    let d = *grad.dims.last()? as f64;
    let rows = a.conc_int(2).filter(|&n| n >= 0)? as f64;
    let bytes = grad.bytes()? + indices.bytes()? + rows * d * f64::from(dtype.size());
    Some(memory(grad.numel(), bytes, dtype, elements(grad.numel())))
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use super::*;
    use crate::analysis::work::tests::{BF16, F32, I64, check, run, work};
    use crate::analysis::work::{Model, OpShapes};

    #[test]
    fn copies_read_and_write_each_side_at_its_dtype() {
        // tracelens_h100_timesformer: copy_(dst bf16, src float).
        let w = work(
            "aten::copy_",
            "[[1, 128, 3, 224, 224], [1, 128, 3, 224, 224], []]",
            r#"["c10::BFloat16", "float", "Scalar"]"#,
            Some(r#"["", "", "False"]"#),
        );
        let n = 128.0 * 3.0 * 224.0 * 224.0;
        check(&w, 0.0, n * F32 + n * BF16);
        assert_eq!((w.dtype, w.inputs.as_str()), (Dtype::Bf16, "19.3M elements f32→bf16"));
        // tracelens_h100_timesformer: _to_copy(self, dtype=15 (bfloat16), …).
        let w = work(
            "aten::_to_copy",
            "[[1, 128, 3, 224, 224], [], [], [], [], [], []]",
            r#"["float", "Scalar", "", "", "", "Scalar", ""]"#,
            Some(r#"["", "15", "", "", "", "False", ""]"#),
        );
        check(&w, 0.0, n * F32 + n * BF16);
        // tracelens_h100_qwen_inference: clone.
        let w = work(
            "aten::clone",
            "[[16, 16, 559, 64], []]",
            r#"["c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "0"]"#),
        );
        check(&w, 0.0, 2.0 * 16.0 * 16.0 * 559.0 * 64.0 * BF16);
    }

    #[test]
    fn gathers_read_what_they_select() {
        // tracelens_h100_qwen_inference: embedding(weight [151936, 1024], indices [16, 559]).
        let w = work(
            "aten::embedding",
            "[[151936, 1024], [16, 559], [], [], []]",
            r#"["c10::BFloat16", "long int", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "-1", "False", "False"]"#),
        );
        let tokens = 16.0 * 559.0;
        check(&w, 0.0, tokens * I64 + 2.0 * tokens * 1024.0 * BF16);
        // tracelens_h100_qwen_inference: index_select(self, dim=0, index [8944]).
        let w = work(
            "aten::index_select",
            "[[151936, 1024], [], [8944]]",
            r#"["c10::BFloat16", "Scalar", "long int"]"#,
            Some(r#"["", "0", ""]"#),
        );
        check(&w, 0.0, 8944.0 * I64 + 2.0 * 8944.0 * 1024.0 * BF16);
        // hta_trace_diff_a100_2022: gather(self [50], dim, index [61072]): index-shaped output.
        let w = work(
            "aten::gather",
            "[[50], [], [61072], []]",
            r#"["float", "Scalar", "long", "Scalar"]"#,
            None,
        );
        check(&w, 0.0, 61072.0 * I64 + 2.0 * 61072.0 * F32);
    }

    #[test]
    fn tensor_lists_have_no_recorded_element_type() {
        // tracelens_h100_qwen_inference: cat of two [1, 559, 32] (the rotary halves): shapes
        // recorded, element type not.
        let dims = "[[[1, 559, 32], [1, 559, 32]], []]";
        let args = Args::parse(&OpShapes {
            dims: Some(dims.as_bytes()),
            types: Some(br#"["TensorList", "Scalar"]"#),
            concrete: None,
        })
        .unwrap();
        assert_eq!(args.list(0), Some((2, 2.0 * 559.0 * 32.0)));
        assert_eq!(
            run("aten::cat", dims, r#"["TensorList", "Scalar"]"#, Some(r#"["", "-1"]"#)),
            Model::NoShapes
        );
        // hta_amd_mi250_rocm62: the optimiser's _foreach_add_ is not modelled.
        let m = run(
            "aten::_foreach_add_",
            "[[[128, 128], [128]], [[128, 128], [128]], []]",
            r#"["TensorList", "TensorList", "Scalar"]"#,
            Some(r#"["", "", "-0.001"]"#),
        );
        assert_eq!(m, Model::Unmodelled);
    }
}
