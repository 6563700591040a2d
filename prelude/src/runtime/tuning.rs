//! Process settings that change speed: glibc's allocator, libtorch's thread count.

/// Raises glibc's mmap and trim thresholds so that libtorch's large per-step temporaries (oneDNN
/// allocates ~37 MB per conv step at batch 1000) are reused from the heap instead of being
/// mmapped and unmapped every step — 1.9–2.4× faster on such loops (bench/NOTES.md). Applied by
/// [`super::attach`]; call it at the start of a plain program or benchmark. Returns whether glibc
/// accepted the settings.
///
/// ```
/// assert!(tchbook_prelude::runtime::tune_allocator());
/// ```
pub fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc refuses an mmap threshold above HEAP_MAX_SIZE/2 (32 MiB on 64-bit), so the
        // threshold alone cannot cover a 37 MB block; M_MMAP_MAX = 0 sends every allocation
        // to the heap, and the trim threshold and top pad keep freed memory for the next step.
        const M_TRIM_THRESHOLD: libc::c_int = -1;
        const M_TOP_PAD: libc::c_int = -2;
        const M_MMAP_THRESHOLD: libc::c_int = -3;
        const M_MMAP_MAX: libc::c_int = -4;
        // SAFETY: mallopt only changes allocator parameters.
        unsafe {
            let a = libc::mallopt(M_MMAP_THRESHOLD, 32 << 20);
            let b = libc::mallopt(M_MMAP_MAX, 0);
            let c = libc::mallopt(M_TRIM_THRESHOLD, 1 << 30);
            let d = libc::mallopt(M_TOP_PAD, 64 << 20);
            a == 1 && b == 1 && c == 1 && d == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Makes libtorch refuse a CPU tensor larger than the machine's memory and swap together, with
/// its usual "not enough memory" error (`shim/cpu_limit.cpp`). Under glibc's malloc the kernel
/// refused such a request itself; the kernel's process allocates through mimalloc, which maps
/// memory the kernel does not check, so without this a 16 TiB tensor would be filled until the
/// OOM killer ended the process. Returns whether it is installed (false only where the libtorch
/// headers were missing at build time); calling it again does nothing. The kernel calls it when
/// the runtime attaches.
///
/// ```
/// assert!(tchbook_prelude::runtime::limit_cpu_allocations());
/// let huge = tch::Tensor::f_zeros([1i64 << 42], (tch::Kind::Float, tch::Device::Cpu));
/// assert!(huge.unwrap_err().to_string().contains("not enough memory"));
/// ```
pub fn limit_cpu_allocations() -> bool {
    unsafe extern "C" {
        fn tchbook_limit_cpu_allocations() -> libc::c_int;
    }
    // SAFETY: installs an allocator once; no arguments, and C++ exceptions are caught there.
    unsafe { tchbook_limit_cpu_allocations() == 1 }
}

/// Sets libtorch's intra-op thread count (`torch.set_num_threads`) and returns the previous one.
/// On a small machine one thread is often fastest for tiny models (bench/NOTES.md).
///
/// ```
/// let before = tchbook_prelude::runtime::set_threads(1);
/// assert_eq!(tch::get_num_threads(), 1);
/// tchbook_prelude::runtime::set_threads(before);
/// ```
pub fn set_threads(n: usize) -> usize {
    let before = tch::get_num_threads().max(1) as usize;
    tch::set_num_threads(n.max(1) as i32);
    before
}
