//! Tensor operations tch does not wrap (`shim/ops.cpp`): PyTorch's
//! multi-tensor `_foreach_*` kernels, which its SGD, EMA and GradScaler use
//! on CUDA (one launch per list instead of one per tensor, which decides
//! whether a small model's step is launch-bound), pinned host memory for
//! the loader, and the CUDA memory queries `--batch -1` needs. The kernels
//! run on CPU tensors too, which is how the tests check them.

use std::ffi::{c_char, c_int};

use libreyolo_core::{Error, Result};
use tch::Tensor;
use torch_sys::C_tensor;

use crate::profiler::{ShimError, call};

unsafe extern "C" {
    fn lyp_add_(
        t: *mut C_tensor,
        other: *mut C_tensor,
        alpha: f64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_add(
        t: *mut C_tensor,
        other: *mut C_tensor,
        alpha: f64,
        out: *mut *mut C_tensor,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_mul_(t: *mut C_tensor, s: f64, err: *mut c_char, err_len: usize) -> c_int;
    fn lyp_clear_grads(
        ts: *const *mut C_tensor,
        n: usize,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_foreach_mul_(
        ts: *const *mut C_tensor,
        n: usize,
        s: f64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_foreach_add_(
        ts: *const *mut C_tensor,
        others: *const *mut C_tensor,
        n: usize,
        alpha: f64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_foreach_add(
        ts: *const *mut C_tensor,
        others: *const *mut C_tensor,
        n: usize,
        alpha: f64,
        out: *mut *mut C_tensor,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_amp_unscale_(
        grads: *const *mut C_tensor,
        n: usize,
        found_inf: *mut C_tensor,
        inv_scale: *mut C_tensor,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_empty_pinned(
        sizes: *const i64,
        ndim: usize,
        out: *mut *mut C_tensor,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_cuda_memory_info(
        device: c_int,
        free: *mut i64,
        total: *mut i64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_cuda_empty_cache(err: *mut c_char, err_len: usize) -> c_int;
}

fn handles(ts: &[Tensor]) -> Vec<*mut C_tensor> {
    ts.iter().map(handle).collect()
}

fn failed(what: &str) -> impl FnOnce(ShimError) -> Error + '_ {
    move |msg| Error::failed(format!("{what}: {msg}"))
}

fn same_len(a: &[Tensor], b: &[Tensor]) -> Result<()> {
    if a.len() == b.len() {
        Ok(())
    } else {
        Err(Error::failed(format!("foreach: lists of {} and {} tensors", a.len(), b.len())))
    }
}

fn handle(t: &Tensor) -> *mut C_tensor {
    t.as_ptr() as *mut C_tensor
}

/// `t += alpha * other` in one op (`Tensor.add_(other, alpha=...)`).
pub fn add_(t: &Tensor, other: &Tensor, alpha: f64) -> Result<()> {
    // SAFETY: both handles are live tch tensors borrowed for the call.
    call(|e, n| unsafe { lyp_add_(handle(t), handle(other), alpha, e, n) }).map_err(failed("add_"))
}

/// `t *= s` in one op, as Python's `t.mul_(s)` with a float.
pub fn mul_(t: &Tensor, s: f64) -> Result<()> {
    // SAFETY: as above.
    call(|e, n| unsafe { lyp_mul_(handle(t), s, e, n) }).map_err(failed("mul_"))
}

/// A new tensor `t + alpha * other` (`Tensor.add(other, alpha=...)`).
pub fn add(t: &Tensor, other: &Tensor, alpha: f64) -> Result<Tensor> {
    let mut out = std::ptr::null_mut();
    // SAFETY: as above; on success `out` is a new tensor we own.
    call(|e, n| unsafe { lyp_add(handle(t), handle(other), alpha, &mut out, e, n) })
        .map_err(failed("add"))?;
    Ok(unsafe { Tensor::from_ptr(out) })
}

/// Drops the gradients of `ts` (`zero_grad(set_to_none=True)`), where tch's
/// `zero_grad` would zero them in place.
pub fn clear_grads(ts: &[Tensor]) -> Result<()> {
    let h = handles(ts);
    // SAFETY: as above.
    call(|e, n| unsafe { lyp_clear_grads(h.as_ptr(), h.len(), e, n) })
        .map_err(failed("clear grads"))
}

/// `ts[i] *= s` (`torch._foreach_mul_`).
pub fn foreach_mul_(ts: &[Tensor], s: f64) -> Result<()> {
    let h = handles(ts);
    // SAFETY: the handles are live tch tensors borrowed for the call.
    call(|e, n| unsafe { lyp_foreach_mul_(h.as_ptr(), h.len(), s, e, n) })
        .map_err(failed("_foreach_mul_"))
}

/// `ts[i] += alpha * others[i]` (`torch._foreach_add_`).
pub fn foreach_add_(ts: &[Tensor], others: &[Tensor], alpha: f64) -> Result<()> {
    same_len(ts, others)?;
    let (a, b) = (handles(ts), handles(others));
    // SAFETY: as above.
    call(|e, n| unsafe { lyp_foreach_add_(a.as_ptr(), b.as_ptr(), a.len(), alpha, e, n) })
        .map_err(failed("_foreach_add_"))
}

/// New tensors `ts[i] + alpha * others[i]` (`torch._foreach_add`).
pub fn foreach_add(ts: &[Tensor], others: &[Tensor], alpha: f64) -> Result<Vec<Tensor>> {
    same_len(ts, others)?;
    let (a, b) = (handles(ts), handles(others));
    let mut out: Vec<*mut C_tensor> = vec![std::ptr::null_mut(); a.len()];
    // SAFETY: as above; on success every out[i] is a new tensor we own.
    call(|e, n| unsafe {
        lyp_foreach_add(a.as_ptr(), b.as_ptr(), a.len(), alpha, out.as_mut_ptr(), e, n)
    })
    .map_err(failed("_foreach_add"))?;
    Ok(out.into_iter().map(|p| unsafe { Tensor::from_ptr(p) }).collect())
}

/// GradScaler's unscale: `grads[i] *= inv_scale`, and `found_inf` (a
/// one-element float tensor) set to 1 when any value is not finite.
pub fn amp_unscale_(grads: &[Tensor], found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    let h = handles(grads);
    let (f, s) = (handle(found_inf), handle(inv_scale));
    // SAFETY: as above.
    call(|e, n| unsafe { lyp_amp_unscale_(h.as_ptr(), h.len(), f, s, e, n) })
        .map_err(failed("_amp_foreach_non_finite_check_and_unscale_"))
}

/// An uninitialised float tensor in page-locked host memory (needs CUDA).
pub fn empty_pinned(shape: &[i64]) -> Result<Tensor> {
    let mut out = std::ptr::null_mut();
    // SAFETY: `shape` outlives the call; on success `out` is a new tensor we own.
    call(|e, n| unsafe { lyp_empty_pinned(shape.as_ptr(), shape.len(), &mut out, e, n) })
        .map_err(failed("cannot allocate pinned memory"))?;
    Ok(unsafe { Tensor::from_ptr(out) })
}

/// (free, total) bytes of CUDA device `device`.
pub fn cuda_memory_info(device: usize) -> Result<(i64, i64)> {
    let (mut free, mut total) = (0i64, 0i64);
    // SAFETY: plain C call writing two integers we own.
    call(|e, n| unsafe { lyp_cuda_memory_info(device as c_int, &mut free, &mut total, e, n) })
        .map_err(failed("cannot read CUDA memory"))?;
    Ok((free, total))
}

/// Hands cached, unused CUDA blocks back to the driver.
pub fn cuda_empty_cache() -> Result<()> {
    // SAFETY: plain C call.
    call(|e, n| unsafe { lyp_cuda_empty_cache(e, n) })
        .map_err(failed("cannot empty the CUDA cache"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    fn v(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn foreach_ops_match_their_per_tensor_forms() {
        let a = vec![Tensor::from_slice(&[1.0f32, 2.0]), Tensor::from_slice(&[3.0f32])];
        let b = vec![Tensor::from_slice(&[10.0f32, 20.0]), Tensor::from_slice(&[30.0f32])];
        let sum = foreach_add(&a, &b, 0.5).unwrap();
        assert_eq!(v(&sum[0]), [6.0, 12.0]);
        assert_eq!(v(&sum[1]), [18.0]);
        assert_eq!(v(&a[0]), [1.0, 2.0], "the out-of-place form leaves its inputs alone");
        foreach_mul_(&a, 2.0).unwrap();
        foreach_add_(&a, &b, -1.0).unwrap();
        assert_eq!(v(&a[0]), [-8.0, -16.0]);
        assert_eq!(v(&a[1]), [-24.0]);
        assert!(foreach_add_(&a, &b[..1], 1.0).is_err());
        let c = add(&b[1], &a[1], 2.0).unwrap();
        assert_eq!(v(&c), [-18.0]);
        add_(&c, &b[1], 1.0).unwrap();
        assert_eq!(v(&c), [12.0]);
        mul_(&c, 0.5).unwrap();
        assert_eq!(v(&c), [6.0]);
    }

    #[test]
    fn cleared_gradients_are_undefined() {
        let w = Tensor::from_slice(&[2.0f32]).set_requires_grad(true);
        (&w * &w).sum(Kind::Float).backward();
        assert!(w.grad().defined());
        clear_grads(std::slice::from_ref(&w)).unwrap();
        assert!(!w.grad().defined());
    }

    #[test]
    fn unscale_divides_and_flags_non_finite_gradients() {
        let g = vec![Tensor::from_slice(&[4.0f32, 8.0]), Tensor::from_slice(&[2.0f32])];
        let found = Tensor::zeros([1], (Kind::Float, tch::Device::Cpu));
        let inv = Tensor::from_slice(&[0.25f32]);
        amp_unscale_(&g, &found, &inv).unwrap();
        assert_eq!(v(&g[0]), [1.0, 2.0]);
        assert_eq!(v(&found), [0.0]);
        let bad = vec![Tensor::from_slice(&[f32::INFINITY])];
        amp_unscale_(&bad, &found, &inv).unwrap();
        assert_eq!(v(&found), [1.0]);
    }
}
