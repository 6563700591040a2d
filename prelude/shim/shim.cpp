// The prelude's window on libtorch's CUDA caching allocator (and on a tensor's autograd node,
// for its PyTorch repr).
//
// It reaches the allocator through c10's device-generic interface (c10::GetAllocator and
// c10::DeviceAllocator, both in libc10), so it needs neither CUDA headers nor libc10_cuda at
// build or link time: against a CPU-only libtorch it builds, loads, and reports "no allocator".
// When libtorch_cuda is loaded, its allocator registers itself for DeviceType::CUDA and these
// calls read it. Every entry point catches C++ exceptions: one must never unwind into Rust.

#include <cstdint>
#include <cstring>
#include <exception>

// TCHBOOK_SHIM_STUB: build.rs's fallback when these headers do not compile here.
#if defined(__has_include) && !defined(TCHBOOK_SHIM_STUB)
#if __has_include(<c10/core/CachingDeviceAllocator.h>)
#define TCHBOOK_HAVE_DEVICE_ALLOCATOR 1
#endif
#endif

#if defined(__has_include)
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#elif __has_include(<torch/csrc/api/include/torch/version.h>)
#include <torch/csrc/api/include/torch/version.h>
#endif
#endif

#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
#include <c10/core/CachingDeviceAllocator.h>
#endif

// The autograd node behind a tensor, for PyTorch's `grad_fn=<AddmmBackward0>` in a tensor's repr
// (tch has no accessor for it).
#if defined(__has_include) && !defined(TCHBOOK_SHIM_STUB)
#if __has_include(<torch/csrc/autograd/function.h>)
#define TCHBOOK_HAVE_AUTOGRAD 1
#include <ATen/core/TensorBase.h>
#include <string>
#include <torch/csrc/autograd/function.h>
#endif
#endif

namespace {
void copy_message(const char* what, char* err, size_t err_len) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, what, err_len - 1);
  err[err_len - 1] = '\0';
}

// Runs `body`, turning any C++ exception into -1 and its message in `err`.
template <typename Body>
int guarded(char* err, size_t err_len, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    copy_message(e.what(), err, err_len);
    return -1;
  } catch (...) {
    copy_message("unknown C++ exception", err, err_len);
    return -1;
  }
}

#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
// nullptr when no CUDA allocator is registered (CPU-only libtorch, or libtorch_cuda not loaded).
c10::DeviceAllocator* cuda_allocator() {
  auto* allocator = c10::GetAllocator(c10::DeviceType::CUDA);
  return dynamic_cast<c10::DeviceAllocator*>(allocator);
}
#endif
}  // namespace

extern "C" {

// The TORCH_VERSION of the headers the shim was built against ("" if unknown).
const char* tchbook_torch_version() {
#ifdef TORCH_VERSION
  return TORCH_VERSION;
#else
  return "";
#endif
}

// 1 if the shim was built with the device-allocator interface.
int tchbook_shim_has_allocator() {
#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
  return 1;
#else
  return 0;
#endif
}

// 0: no CUDA allocator registered (CPU-only libtorch, or libtorch_cuda not loaded);
// 1: registered, not initialised yet (no CUDA allocation so far, or no device);
// 2: registered and initialised; -1: error.
int tchbook_cuda_allocator_state() {
#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
  return guarded(nullptr, 0, [&] {
    auto* allocator = cuda_allocator();
    if (allocator == nullptr) return 0;
    return allocator->initialized() ? 2 : 1;
  });
#else
  return 0;
#endif
}

// Fills out[0..n) with the allocator's statistics for `device`:
// for each of the 9 StatArrays (allocation, segment, active, inactive_split, allocated_bytes,
// reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes), the aggregate pool's
// current, peak, allocated, freed (36 values); then num_alloc_retries, num_ooms,
// oversize_allocations (current, peak, allocated, freed), oversize_segments (4 values),
// num_sync_all_streams, num_device_alloc, num_device_free, max_split_size (50 values total).
// Returns 0 on success, 1 when there is no CUDA allocator, 2 when it is not initialized yet
// (nothing was ever allocated on CUDA), -1 on error (message in err).
int tchbook_cuda_stats(int device, int64_t* out, int n, char* err, size_t err_len) {
#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
  return guarded(err, err_len, [&] {
    auto* allocator = cuda_allocator();
    if (allocator == nullptr) return 1;
    if (!allocator->initialized()) return 2;
    auto stats = allocator->getDeviceStats(static_cast<c10::DeviceIndex>(device));
    int64_t values[50];
    int k = 0;
    const c10::CachingAllocator::StatArray* arrays[9] = {
        &stats.allocation,      &stats.segment,        &stats.active,
        &stats.inactive_split,  &stats.allocated_bytes, &stats.reserved_bytes,
        &stats.active_bytes,    &stats.inactive_split_bytes, &stats.requested_bytes};
    for (auto* a : arrays) {
      const auto& s = (*a)[0];
      values[k++] = s.current;
      values[k++] = s.peak;
      values[k++] = s.allocated;
      values[k++] = s.freed;
    }
    values[k++] = stats.num_alloc_retries;
    values[k++] = stats.num_ooms;
    for (const auto* s : {&stats.oversize_allocations, &stats.oversize_segments}) {
      values[k++] = s->current;
      values[k++] = s->peak;
      values[k++] = s->allocated;
      values[k++] = s->freed;
    }
    values[k++] = stats.num_sync_all_streams;
    values[k++] = stats.num_device_alloc;
    values[k++] = stats.num_device_free;
    values[k++] = stats.max_split_size;
    for (int i = 0; i < n && i < k; ++i) out[i] = values[i];
    return 0;
  });
#else
  (void)device; (void)out; (void)n; (void)err; (void)err_len;
  return 1;
#endif
}

// what: 0 = reset peak stats, 1 = reset accumulated stats, 2 = empty cache (all devices).
int tchbook_cuda_allocator_op(int device, int what, char* err, size_t err_len) {
#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
  return guarded(err, err_len, [&] {
    auto* allocator = cuda_allocator();
    if (allocator == nullptr) return 1;
    if (!allocator->initialized()) return 2;
    auto index = static_cast<c10::DeviceIndex>(device);
    switch (what) {
      case 0: allocator->resetPeakStats(index); break;
      case 1: allocator->resetAccumulatedStats(index); break;
      case 2: allocator->emptyCache(); break;
      default: copy_message("unknown allocator operation", err, err_len); return -1;
    }
    return 0;
  });
#else
  (void)device; (void)what; (void)err; (void)err_len;
  return 1;
#endif
}

// Free and total device memory as cudaMemGetInfo reports them, through the allocator.
int tchbook_cuda_mem_info(int device, uint64_t* free_bytes, uint64_t* total_bytes, char* err,
                          size_t err_len) {
#ifdef TCHBOOK_HAVE_DEVICE_ALLOCATOR
  return guarded(err, err_len, [&] {
    auto* allocator = cuda_allocator();
    if (allocator == nullptr) return 1;
    auto info = allocator->getMemoryInfo(static_cast<c10::DeviceIndex>(device));
    *free_bytes = info.first;
    *total_bytes = info.second;
    return 0;
  });
#else
  (void)device; (void)free_bytes; (void)total_bytes; (void)err; (void)err_len;
  return 1;
#endif
}

// The name of the autograd node that made `tensor` (a tch tensor, an `at::Tensor*`), as
// `type(t.grad_fn).__name__` gives it: 1 and the name in `out`; 0 when the tensor has none
// (a leaf, or made without gradient tracking); -1 when unknown (stub build, or an error).
int tchbook_grad_fn_name(const void* tensor, char* out, size_t out_len) {
#ifdef TCHBOOK_HAVE_AUTOGRAD
  return guarded(out, out_len, [&] {
    const auto& node = static_cast<const at::TensorBase*>(tensor)->grad_fn();
    if (!node) return 0;
    std::string name = node->name();  // "AddmmBackward0", or "torch::autograd::AccumulateGrad"
    auto colons = name.rfind("::");
    copy_message(colons == std::string::npos ? name.c_str() : name.c_str() + colons + 2, out,
                 out_len);
    return 1;
  });
#else
  (void)tensor; (void)out; (void)out_len;
  return -1;
#endif
}

}  // extern "C"
