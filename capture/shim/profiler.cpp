// A small C ABI over the parts of libtorch that tch does not wrap: the Kineto
// profiler (start, user ranges, stop + Chrome trace) and autocast. Every
// entry point catches C++ exceptions and reports them through an error
// buffer, so nothing unwinds into Rust.

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ExperimentalConfig;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

namespace {

void set_error(char* err, size_t len, const std::string& msg) {
  if (err == nullptr || len == 0) return;
  std::strncpy(err, msg.c_str(), len - 1);
  err[len - 1] = '\0';
}

// The result of the last stop, kept until it is saved or dropped.
std::unique_ptr<prof::ProfilerResult> g_result;

}  // namespace

extern "C" {

// Starts the Kineto profiler with CPU activities, plus CUDA when `cuda` is
// set, recording every thread when `all_threads` is set and allocator
// events (`[memory]`) when `memory` is set. CUDA captures record the ops'
// input shapes too: the roofline account needs them (docs/analysis.md §13),
// and on CPU there is no peak to hold them against. 0 on success.
int lyp_profiler_start(int cuda, int all_threads, int memory, char* err, size_t err_len) {
  try {
    ExperimentalConfig experimental;
    experimental.profile_all_threads = all_threads != 0;
    ProfilerConfig config(ProfilerState::KINETO,
                          /*report_input_shapes=*/cuda != 0,
                          /*profile_memory=*/memory != 0,
                          /*with_stack=*/false,
                          /*with_flops=*/false,
                          /*with_modules=*/false,
                          experimental);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda) activities.insert(ActivityType::CUDA);
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

// Stops the profiler and keeps its result for lyp_profiler_save. 0 on success.
int lyp_profiler_stop(char* err, size_t err_len) {
  try {
    g_result = prof::disableProfiler();
    if (!g_result) {
      set_error(err, err_len, "the profiler returned no result");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

// Writes the kept result as a Chrome trace to `path`. 0 on success.
int lyp_profiler_save(const char* path, char* err, size_t err_len) {
  try {
    if (!g_result) {
      set_error(err, err_len, "no profiler result to save");
      return 1;
    }
    g_result->save(path);
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

// Drops the kept result.
void lyp_profiler_discard() { g_result.reset(); }

// Opens a user range (cat `user_annotation` in the trace). Returns an opaque
// handle for lyp_range_end, which must be called on the same thread.
void* lyp_range_begin(const char* name) {
  try {
    auto* rf = new at::RecordFunction(at::RecordScope::USER_SCOPE);
    if (rf->isActive()) rf->before(std::string(name));
    return rf;
  } catch (...) {
    return nullptr;
  }
}

// Opens a module scope: a user range (cat `user_annotation`) named by a
// string that lives as long as the process (the Rust side passes static
// names only, so the name is neither copied nor allocated). When no profiler
// records USER_SCOPE on this thread, nothing is allocated and nullptr comes
// back; otherwise a handle for lyp_range_end, on the same thread.
void* lyp_scope_begin(const char* static_name) {
  try {
    auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
    if (!callbacks) return nullptr;
    auto* rf = new at::RecordFunction(std::move(*callbacks));
    rf->before(std::string_view(static_name));
    return rf;
  } catch (...) {
    return nullptr;
  }
}

void lyp_range_end(void* handle) {
  if (handle == nullptr) return;
  auto* rf = static_cast<at::RecordFunction*>(handle);
  try {
    rf->end();
  } catch (...) {
  }
  delete rf;
}

// Autocast on CUDA (`cuda` set) or the CPU: enable/disable and choose the
// dtype (0 = float16, 1 = bfloat16). Clears the cast cache so casts of
// another dtype never mix. The CPU form lets the tests run the AMP code path
// (bfloat16) on a machine without a GPU.
int lyp_autocast(int cuda, int enabled, int bf16, char* err, size_t err_len) {
  try {
    auto device = cuda ? at::kCUDA : at::kCPU;
    at::autocast::clear_cache();
    at::autocast::set_autocast_dtype(device, bf16 ? at::kBFloat16 : at::kHalf);
    at::autocast::set_autocast_enabled(device, enabled != 0);
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

// Peak VRAM through the device-generic allocator interface (no CUDA headers
// needed): reset the peak of CUDA device `device`, or read the peak of bytes
// allocated since (torch.cuda.max_memory_allocated). 0 on success.
int lyp_cuda_reset_peak(int device, char* err, size_t err_len) {
  try {
    c10::getDeviceAllocator(c10::DeviceType::CUDA)->resetPeakStats(static_cast<c10::DeviceIndex>(device));
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

int lyp_cuda_peak_allocated(int device, int64_t* bytes, char* err, size_t err_len) {
  try {
    auto stats = c10::getDeviceAllocator(c10::DeviceType::CUDA)->getDeviceStats(static_cast<c10::DeviceIndex>(device));
    *bytes = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

}  // extern "C"
