//! The memory a kernel's evaluation process starts with: `runtime::attach()` (as the kernel's
//! start-up cell calls it), `best_device()` and one small tensor operation, then the resident set
//! size and which CUDA libraries are mapped.
//!
//! ```text
//! cargo run --release -p tchbook-prelude --example startup_rss
//! ```
//! On a machine without an NVIDIA driver no CUDA library should be mapped; with one,
//! `libtorch_cuda.so` is, and `best_device()` is `cuda:0`.

use tchbook_prelude::prelude::*;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    tchbook_prelude::runtime::attach();
    let device = best_device();
    let t = Tensor::ones([64, 64], (Kind::Float, device));
    let sum = t.matmul(&t).sum(Kind::Float).double_value(&[]);
    assert_eq!(sum, 64.0 * 64.0 * 64.0);

    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut cuda_libs: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|p| p.rsplit('/').next())
        .filter(|name| {
            ["cuda", "libcu", "nccl", "nvshmem", "nvrtc", "nvJit"]
                .iter()
                .any(|part| name.contains(part))
        })
        .collect();
    cuda_libs.sort_unstable();
    cuda_libs.dedup();
    println!("best_device: {}", device_name(device));
    println!("VmRSS: {} MiB", status_kib("VmRSS:") / 1024);
    println!("VmHWM: {} MiB", status_kib("VmHWM:") / 1024);
    println!("CUDA libraries mapped: {cuda_libs:?}");
    // attach() sends stdout through the kernel pump's threads: give them time to forward the
    // lines above before the process exits.
    std::thread::sleep(std::time::Duration::from_millis(300));
}
