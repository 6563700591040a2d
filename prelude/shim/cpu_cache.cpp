// A caching allocator for libtorch's CPU tensors, as its CUDA caching allocator is for the GPU.
//
// A training step allocates and frees the same few dozen buffers every step (activations,
// gradients, oneDNN's temporaries). libtorch's default CPU allocator sends each to
// posix_memalign/free, and glibc's malloc/free was 12-15 % of a small conv net's step at batch 4
// (bench/NOTES.md). This keeps freed blocks by their size (rounded up to 64 bytes) and hands the
// same block back when a tensor of that size is allocated again, up to `kMaxCachedBytes` of free
// blocks; a block freed beyond that goes back to the system. Blocks are never returned otherwise:
// the memory a loop used stays with the process while it runs, as glibc's tuned trim threshold
// (runtime::tune_allocator) already keeps it.
//
// Installed with c10::SetCPUAllocator at a priority above the default allocator's. Tensors
// allocated before keep their own deleter, so the switch is safe at any time. The block's size
// sits in the 64 bytes before the data, so the data pointer is also the deleter's context
// (libtorch's code asks `is_simple_data_ptr`, data == context, before it resizes or wraps
// storage).
//
// Built twice: into the prelude (tchbook_cache_cpu_allocations, called when the runtime
// attaches), and by the benchmark as a preloadable library for the PyTorch side
// (TCHBOOK_CPU_CACHE_PRELOAD: installed from a constructor), so that both sides of the
// table can run with the same allocator.

#include <cstddef>
#include <cstdlib>

#if defined(__has_include) && !defined(TCHBOOK_SHIM_STUB)
#if __has_include(<c10/core/CPUAllocator.h>)
#define TCHBOOK_HAVE_CPU_ALLOCATOR 1
#endif
#endif

#ifdef TCHBOOK_HAVE_CPU_ALLOCATOR
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace {
constexpr std::size_t kAlign = 64;
// The header before each block's data: its size, padded to the alignment.
constexpr std::size_t kHeader = 64;
constexpr std::size_t kMaxCachedBytes = std::size_t(256) << 20;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;
  std::size_t cached_bytes = 0;
};

// Never destroyed: tensors may be freed during the process's exit, after static destructors.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

// Gives every cached block back to the system: before an allocation is refused.
void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& entry : c.free_blocks) {
    for (void* base : entry.second) std::free(base);
    entry.second.clear();
  }
  c.cached_bytes = 0;
}

void release(void* data) {
  if (data == nullptr) return;
  void* base = static_cast<char*>(data) - kHeader;
  std::size_t size = *static_cast<std::size_t*>(base);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached_bytes + size <= kMaxCachedBytes) {
      c.free_blocks[size].push_back(base);
      c.cached_bytes += size;
      return;
    }
  }
  std::free(base);
}

struct CachingCpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(std::size_t n) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &release, cpu};
    std::size_t size = (n + kAlign - 1) / kAlign * kAlign;
    void* base = nullptr;
    Cache& c = cache();
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      auto found = c.free_blocks.find(size);
      if (found != c.free_blocks.end() && !found->second.empty()) {
        base = found->second.back();
        found->second.pop_back();
        c.cached_bytes -= size;
      }
    }
    if (base == nullptr) {
      if (posix_memalign(&base, kAlign, kHeader + size) != 0) {
        // Refused: give the cached blocks back and ask libtorch's own allocator, which either
        // finds the memory now or throws its usual error ("not enough memory: you tried to
        // allocate N bytes"), which the kernel reads to say how much was asked and is free.
        // It allocates with posix_memalign too, so `release` frees its block alike.
        empty_cache();
        base = c10::alloc_cpu(kHeader + size);
      }
      *static_cast<std::size_t*>(base) = size;
    }
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &release, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

int install() {
  static int installed = [] {
    static CachingCpuAllocator* allocator = new CachingCpuAllocator();
    // Above the default allocator's priority (0), below nothing a user installs deliberately.
    c10::SetCPUAllocator(allocator, 1);
    return 1;
  }();
  return installed;
}
}  // namespace

#ifdef TCHBOOK_CPU_CACHE_PRELOAD
namespace {
struct InstallAtLoad {
  InstallAtLoad() { install(); }
} install_at_load;
}  // namespace
#endif

extern "C" int tchbook_cache_cpu_allocations() {
  try {
    return install();
  } catch (...) {
    return 0;
  }
}

#else  // no c10 headers: nothing to install

extern "C" int tchbook_cache_cpu_allocations() { return 0; }

#endif
