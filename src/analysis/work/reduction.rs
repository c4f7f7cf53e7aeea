//! Reductions (`sum`, `mean`, `amax`, `norm`, `var`, …) and `max`/`min`,
//! which reduce unless given a second tensor: input read, the reduced
//! output written.

use super::args::{Args, MAX_RANK, wrap_dim};
use super::elementwise::{ElementwiseOut, ElementwiseSig, elementwise};
use super::{Dtype, Work, count, elements, memory};

#[derive(Debug, Clone, Copy)]
enum ReductionOut {
    Same,
    /// `sum`/`prod`: integers and bools accumulate in int64.
    Widened,
    Int64,
    Bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct ReductionSig {
    /// FLOPs per input element.
    flops: f64,
    /// Position of the `dim` argument.
    dim: u8,
    /// Calls with fewer entries are the overload without `dim` (reduce all).
    full_below: u8,
    /// Position of `dtype` in the full and the `dim` overload.
    dtype_full: Option<u8>,
    dtype_dim: Option<u8>,
    /// Outputs of the reduced shape (`var_mean`: 2).
    outputs: u8,
    out: ReductionOut,
}

pub(super) fn reduction_sig(name: &str) -> Option<ReductionSig> {
    let sig = |flops, dim, full_below, dtype_full, dtype_dim, outputs, out| ReductionSig {
        flops,
        dim,
        full_below,
        dtype_full,
        dtype_dim,
        outputs,
        out,
    };
    Some(match name {
        // sum(self, dtype) | sum.dim_IntList(self, dim, keepdim, dtype)
        "sum" | "prod" => sig(1.0, 1, 3, Some(1), Some(3), 1, ReductionOut::Widened),
        "mean" | "nansum" => sig(1.0, 1, 3, Some(1), Some(3), 1, ReductionOut::Same),
        // amax(self, dim, keepdim)
        "amax" | "amin" => sig(1.0, 1, 2, None, None, 1, ReductionOut::Same),
        "argmax" | "argmin" => sig(1.0, 1, 2, None, None, 1, ReductionOut::Int64),
        "all" | "any" => sig(1.0, 1, 2, None, None, 1, ReductionOut::Bool),
        "logsumexp" => sig(3.0, 1, 2, None, None, 1, ReductionOut::Same),
        // norm(self, p[, dtype]) | norm(self, p, dim, keepdim[, dtype])
        "norm" => sig(2.0, 2, 4, Some(2), Some(4), 1, ReductionOut::Same),
        // linalg_vector_norm(self, ord, dim, keepdim, dtype)
        "linalg_vector_norm" => sig(2.0, 2, 3, None, Some(4), 1, ReductionOut::Same),
        // var(self, unbiased) | var(self, dim, correction, keepdim)
        "var" | "std" => sig(3.0, 1, 3, None, None, 1, ReductionOut::Same),
        "var_mean" | "std_mean" => sig(3.0, 1, 3, None, None, 2, ReductionOut::Same),
        _ => return None,
    })
}

/// Elements of a reduction's output; `None` when the reduced dims are not
/// recorded.
fn reduced_numel(a: &Args<'_>, sig: ReductionSig) -> Option<f64> {
    let x = a.tensor(0)?;
    let at = usize::from(sig.dim);
    if a.n_entries < usize::from(sig.full_below) || x.rank() == 0 {
        return Some(1.0);
    }
    if !a.recorded(at) {
        return None;
    }
    let mut dims = [0i64; MAX_RANK];
    let n = match a.conc(at) {
        None => 0,
        Some(_) => a.conc_ints(at, &mut dims)?,
    };
    // No dim (`None`, `[]`): everything is reduced.
    if n == 0 {
        return Some(1.0);
    }
    let mut reduced = [false; MAX_RANK];
    for &d in &dims[..n] {
        reduced[wrap_dim(d, x.rank())?] = true;
    }
    Some(x.dims.iter().zip(reduced).filter(|(_, r)| !r).map(|(&d, _)| d as f64).product())
}

/// Reduction: input read, output(s) written.
pub(super) fn reduce(a: &Args<'_>, sig: ReductionSig) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let out = reduced_numel(a, sig)?;
    let full = a.n_entries < usize::from(sig.full_below);
    let dtype_at = if full { sig.dtype_full } else { sig.dtype_dim };
    let given = match dtype_at {
        Some(at) => a.dtype_arg(at.into())?,
        None => None,
    };
    let out_dtype = given.unwrap_or(match sig.out {
        ReductionOut::Same => dtype,
        ReductionOut::Widened if dtype.category() < 2 => Dtype::Int64,
        ReductionOut::Widened => dtype,
        ReductionOut::Int64 => Dtype::Int64,
        ReductionOut::Bool => Dtype::Bool,
    });
    let n = x.numel();
    let bytes = x.bytes()? + f64::from(sig.outputs) * out * f64::from(out_dtype.size());
    Some(memory(sig.flops * n, bytes, dtype, format!("{} → {}", elements(n), count(out))))
}

/// `max`/`min`: `max(self)` and `max.dim(self, dim, keepdim)` reduce,
/// `max.other(self, other)` is elementwise.
pub(super) fn max_min(a: &Args<'_>) -> Option<Work> {
    if a.tensor(1).is_some() {
        return elementwise(
            a,
            ElementwiseSig { flops: 1.0, nargs: 2, out: ElementwiseOut::Promoted },
            false,
        );
    }
    let sig = ReductionSig {
        flops: 1.0,
        dim: 1,
        full_below: 2,
        dtype_full: None,
        dtype_dim: None,
        outputs: 1,
        out: ReductionOut::Same,
    };
    if a.n_entries >= 2 {
        // `max.dim` also returns the int64 indices.
        let mut work = reduce(a, sig)?;
        let out = reduced_numel(a, sig)?;
        work.bytes += out * f64::from(Dtype::Int64.size());
        return Some(work);
    }
    reduce(a, sig)
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use crate::analysis::work::Model;
    use crate::analysis::work::tests::{F32, I64, check, run, work};

    #[test]
    fn reductions_write_the_reduced_shape() {
        // tracelens_h100_qwen_inference: mean(self [16, 559, 1024], dim=[-1], keepdim=True) (RMSNorm).
        let w = work(
            "aten::mean",
            "[[16, 559, 1024], [], [], []]",
            r#"["float", "ScalarList", "Scalar", ""]"#,
            Some(r#"["", "[-1]", "True", ""]"#),
        );
        let (n, out) = (16.0 * 559.0 * 1024.0, 16.0 * 559.0);
        check(&w, n, (n + out) * F32);
        assert_eq!(w.inputs, "9.16M elements → 8.94K");
        // hta_amd_mi250_rocm62: sum(self [5, 128], dim=[0]).
        let w = work(
            "aten::sum",
            "[[5, 128], [], [], []]",
            r#"["float", "ScalarList", "Scalar", ""]"#,
            Some(r#"["", "[0]", "True", ""]"#),
        );
        check(&w, 640.0, (640.0 + 128.0) * F32);
        // hta_trace_diff_a100_2022: the reduced dims are not recorded.
        assert_eq!(
            run("aten::sum", "[[1024, 40], [], [], []]", r#"["float", "", "Scalar", ""]"#, None),
            Model::NoShapes
        );
        // Written in the format: max.dim also writes int64 indices; a full sum of bools widens to int64.
        let w = work(
            "aten::max",
            "[[8, 100], [], []]",
            r#"["float", "Scalar", "Scalar"]"#,
            Some(r#"["", "1", "False"]"#),
        );
        check(&w, 800.0, 800.0 * F32 + 8.0 * (F32 + I64));
        let w = work("aten::sum", "[[64], []]", r#"["bool", ""]"#, Some(r#"["", ""]"#));
        check(&w, 64.0, 64.0 + I64);
    }
}
