//! `torch.cuda` for Rust: availability, devices and their properties, and the CUDA caching
//! allocator's memory statistics, and each GPU's usage as NVML reports it ([`gpu_usage`],
//! [`gpu_monitor`]).
//!
//! Every function works on a machine without CUDA: counts are 0, memory statistics are 0,
//! [`memory_summary`] reports process and system RAM and says that no CUDA device is present.
//! None of them panics.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! if cuda::is_available() {
//!     println!("{} on cuda:{}", cuda::get_device_name(0), cuda::current_device());
//! }
//! println!("{} bytes allocated", cuda::memory_allocated(0));
//! ```

mod memory;
mod nvml;
mod query;
mod summary;
mod usage;

pub use memory::{
    AllocatorState, MemoryError, MemoryStats, Stat, allocator_state, empty_cache, f_empty_cache,
    f_mem_get_info, f_memory_stats, f_reset_peak_memory_stats, max_memory_allocated,
    max_memory_reserved, mem_get_info, memory_allocated, memory_cached, memory_reserved,
    memory_stats, reset_peak_memory_stats,
};
pub use query::{
    DeviceIndex, DeviceProperties, Versions, current_device, device_count, get_device_capability,
    get_device_name, get_device_properties, is_available, synchronize, unavailable_reason,
    versions,
};
pub use summary::{DeviceMemory, MemorySummary, memory_summary};
pub use usage::{Allocator, Gpu, GpuMonitor, GpuUsage, gpu_monitor, gpu_monitor_every, gpu_usage};
