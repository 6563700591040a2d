// Refuses a CPU tensor larger than the machine's memory and swap together, as glibc's malloc
// used to have the kernel refuse it.
//
// The kernel's process allocates through mimalloc (its src/main.rs). On a Linux that overcommits
// (vm.overcommit_memory 0 or 1) mimalloc maps memory with MAP_NORESERVE, which the kernel's
// overcommit heuristic does not check: a 16 TiB tensor is "allocated", libtorch fills it with
// zeros, and the OOM killer ends the evaluation process with every variable. glibc's mmap
// without MAP_NORESERVE was refused by that heuristic (more than RAM + swap), libtorch threw
// "not enough memory: you tried to allocate N bytes", and the cell got an OutOfMemoryError with
// its variables kept. This allocator gives that back: it throws libtorch's own error, in
// libtorch's own words (wire/src/report/torch.rs reads them), for a request above RAM + swap,
// and hands every other request to the allocator it replaced, unchanged (its deleter included).
//
// Installed with c10::SetCPUAllocator at a priority above the default allocator's. Tensors
// allocated before keep their own deleter, so the switch is safe at any time.

#include <cstddef>
#include <cstdio>

#if defined(__has_include) && !defined(TCHBOOK_SHIM_STUB)
#if __has_include(<c10/core/CPUAllocator.h>)
#define TCHBOOK_HAVE_CPU_ALLOCATOR 1
#endif
#endif

#ifdef TCHBOOK_HAVE_CPU_ALLOCATOR
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Logging.h>

#include <sys/sysinfo.h>

namespace {

// RAM + swap, in bytes, as the kernel's overcommit heuristic counts them; 0 where unknown
// (then nothing is refused here).
std::size_t memory_and_swap() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return 0;
  return (static_cast<std::size_t>(info.totalram) + info.totalswap) * info.mem_unit;
}

struct LimitedCpuAllocator final : c10::Allocator {
  c10::Allocator* inner;
  std::size_t limit;

  LimitedCpuAllocator(c10::Allocator* inner, std::size_t limit) : inner(inner), limit(limit) {}

  c10::DataPtr allocate(std::size_t n) override {
    // libtorch's error for a refused CPU allocation, raised as c10/core/impl/alloc_cpu.cpp
    // raises it (CAFFE_ENFORCE: a one-line "[enforce fail at ...]" message, no C++ frames).
    const bool fits = limit == 0 || n <= limit;
    CAFFE_ENFORCE(fits, "DefaultCPUAllocator: not enough memory: you tried to allocate ", n,
                  " bytes.");
    return inner->allocate(n);
  }

  c10::DeleterFnPtr raw_deleter() const override { return inner->raw_deleter(); }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner->copy_data(dest, src, count);
  }
};

int install() {
  static int installed = [] {
    c10::Allocator* inner = c10::GetCPUAllocator();
    static LimitedCpuAllocator* allocator = new LimitedCpuAllocator(inner, memory_and_swap());
    // Above the default allocator's priority (0), below nothing a user installs deliberately.
    c10::SetCPUAllocator(allocator, 1);
    return 1;
  }();
  return installed;
}
}  // namespace

extern "C" int tchbook_limit_cpu_allocations() {
  try {
    return install();
  } catch (...) {
    return 0;
  }
}

#else  // no c10 headers: nothing to install

extern "C" int tchbook_limit_cpu_allocations() { return 0; }

#endif
