// A C ABI over the tensor operations tch does not wrap and training needs:
// the multi-tensor (`_foreach_*`) kernels PyTorch's SGD, EMA and GradScaler
// use on CUDA (one launch per group of tensors instead of one per tensor),
// and the CUDA memory queries of `--batch -1`. Tensors arrive as tch's
// handles (`at::Tensor*`). Every entry point catches C++ exceptions and
// reports them through an error buffer, so nothing unwinds into Rust.

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

void set_error(char* err, size_t len, const std::string& msg) {
  if (err == nullptr || len == 0) return;
  std::strncpy(err, msg.c_str(), len - 1);
  err[len - 1] = '\0';
}

std::vector<at::Tensor> list(at::Tensor* const* ts, size_t n) {
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back(*ts[i]);
  return v;
}

template <typename F>
int guarded(char* err, size_t err_len, F f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

}  // namespace

extern "C" {

// t += alpha * other (Tensor.add_ with alpha: one fused op, as PyTorch's
// single-tensor SGD and EMA call it on CPU).
int lyp_add_(at::Tensor* t, at::Tensor* other, double alpha, char* err, size_t err_len) {
  return guarded(err, err_len, [&] { t->add_(*other, alpha); });
}

// t *= s the way Python's `t.mul_(0.9)` dispatches it: the float becomes a
// wrapped-number tensor and goes to the Tensor overload, one aten::mul_
// (tch's Scalar overload adds a nested aten::mul per call).
int lyp_mul_(at::Tensor* t, double s, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto w = c10::scalar_to_tensor(s);
    w.unsafeGetTensorImpl()->set_wrapped_number(true);
    t->mul_(w);
  });
}

// *out = new tensor t + alpha * other; the caller owns *out.
int lyp_add(at::Tensor* t, at::Tensor* other, double alpha, at::Tensor** out, char* err, size_t err_len) {
  return guarded(err, err_len, [&] { *out = new at::Tensor(t->add(*other, alpha)); });
}

// Drops the .grad of every tensor (`zero_grad(set_to_none=True)`, torch's
// default): no fill kernel per parameter, and backward allocates afresh.
int lyp_clear_grads(at::Tensor* const* ts, size_t n, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    for (size_t i = 0; i < n; ++i) ts[i]->mutable_grad() = at::Tensor();
  });
}

// ts[i] *= s
int lyp_foreach_mul_(at::Tensor* const* ts, size_t n, double s, char* err, size_t err_len) {
  return guarded(err, err_len, [&] { at::_foreach_mul_(list(ts, n), s); });
}

// ts[i] += alpha * others[i]
int lyp_foreach_add_(at::Tensor* const* ts, at::Tensor* const* others, size_t n, double alpha, char* err,
                     size_t err_len) {
  return guarded(err, err_len, [&] { at::_foreach_add_(list(ts, n), list(others, n), alpha); });
}

// out[i] = new tensor ts[i] + alpha * others[i]; the caller owns out[i].
int lyp_foreach_add(at::Tensor* const* ts, at::Tensor* const* others, size_t n, double alpha, at::Tensor** out,
                    char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto r = at::_foreach_add(list(ts, n), list(others, n), alpha);
    for (size_t i = 0; i < n; ++i) out[i] = new at::Tensor(std::move(r[i]));
  });
}

// GradScaler's unscale: grads[i] *= inv_scale; found_inf = 1 if any value is
// not finite.
int lyp_amp_unscale_(at::Tensor* const* grads, size_t n, at::Tensor* found_inf, at::Tensor* inv_scale, char* err,
                     size_t err_len) {
  return guarded(err, err_len,
                 [&] { at::_amp_foreach_non_finite_check_and_unscale_(list(grads, n), *found_inf, *inv_scale); });
}

// *out = new uninitialised float tensor of `sizes` in page-locked host
// memory (DataLoader's pin_memory), without a copy.
int lyp_empty_pinned(const int64_t* sizes, size_t ndim, at::Tensor** out, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    *out = new at::Tensor(at::empty(at::IntArrayRef(sizes, ndim), at::TensorOptions().dtype(at::kFloat).pinned_memory(true)));
  });
}

// Free and total bytes of CUDA device `device` (torch.cuda.mem_get_info).
int lyp_cuda_memory_info(int device, int64_t* free_bytes, int64_t* total_bytes, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto info = c10::getDeviceAllocator(c10::DeviceType::CUDA)->getMemoryInfo(static_cast<c10::DeviceIndex>(device));
    *free_bytes = static_cast<int64_t>(info.first);
    *total_bytes = static_cast<int64_t>(info.second);
  });
}

// Returns cached, unused blocks to the driver (torch.cuda.empty_cache).
int lyp_cuda_empty_cache(char* err, size_t err_len) {
  return guarded(err, err_len, [&] { c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache(); });
}

}  // extern "C"
