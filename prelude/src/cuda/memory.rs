//! The CUDA caching allocator's memory statistics, as `torch.cuda.memory_stats` has them, and
//! its operations (reset the peaks, empty the cache).

use super::query::{DeviceIndex, device_count, get_device_properties};
use crate::sys;
use std::ffi::{CStr, c_char, c_int};

unsafe extern "C" {
    fn tchbook_cuda_allocator_state() -> c_int;
    fn tchbook_cuda_stats(
        device: c_int,
        out: *mut i64,
        n: c_int,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn tchbook_cuda_allocator_op(device: c_int, what: c_int, err: *mut c_char, len: usize)
    -> c_int;
    fn tchbook_cuda_mem_info(
        device: c_int,
        free: *mut u64,
        total: *mut u64,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
}

/// Whether libtorch's CUDA caching allocator is in this process, and whether it has started.
///
/// ```
/// use tchbook_prelude::cuda::{allocator_state, AllocatorState};
/// if !tchbook_prelude::cuda::is_available() {
///     assert_ne!(allocator_state(), AllocatorState::Initialized);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocatorState {
    /// No CUDA allocator: libtorch without CUDA, a machine without an NVIDIA driver (where the
    /// prelude does not load libtorch's CUDA library), or that library could not load.
    Absent,
    /// Registered (libtorch_cuda is loaded) but nothing was allocated on a GPU yet.
    Registered,
    /// In use: the statistics are live.
    Initialized,
}

/// Asks the shim about libtorch's CUDA caching allocator (never panics).
pub fn allocator_state() -> AllocatorState {
    crate::backend::load_cuda();
    // SAFETY: the shim catches every C++ exception.
    match unsafe { tchbook_cuda_allocator_state() } {
        2 => AllocatorState::Initialized,
        1 => AllocatorState::Registered,
        _ => AllocatorState::Absent,
    }
}

/// The caching allocator's counters for one device, as `torch.cuda.memory_stats` has them.
///
/// ```
/// let s = tchbook_prelude::cuda::memory_stats(0).allocated_bytes;
/// assert!(s.peak >= s.current);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// Now.
    pub current: i64,
    /// Highest since the last reset.
    pub peak: i64,
    /// Total ever added.
    pub allocated: i64,
    /// Total ever removed.
    pub freed: i64,
}

/// `torch.cuda.memory_stats(i)` for the aggregate pool.
///
/// ```
/// let s = tchbook_prelude::cuda::memory_stats(0);
/// assert!(s.allocated_bytes.current >= 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Allocations (count).
    pub allocation: Stat,
    /// Segments obtained with cudaMalloc (count).
    pub segment: Stat,
    /// Active blocks (count).
    pub active: Stat,
    /// Inactive, non-releasable blocks (count).
    pub inactive_split: Stat,
    /// Bytes in tensors (`memory_allocated`).
    pub allocated_bytes: Stat,
    /// Bytes held by the allocator (`memory_reserved`).
    pub reserved_bytes: Stat,
    /// Bytes in active blocks.
    pub active_bytes: Stat,
    /// Bytes in inactive, non-releasable blocks.
    pub inactive_split_bytes: Stat,
    /// Bytes requested by callers (before rounding).
    pub requested_bytes: Stat,
    /// cudaMalloc retries after freeing the cache.
    pub num_alloc_retries: i64,
    /// Out-of-memory errors.
    pub num_ooms: i64,
    /// Allocations above max_split_size.
    pub oversize_allocations: Stat,
    /// Segments above max_split_size.
    pub oversize_segments: Stat,
}

fn err_buf() -> [c_char; 512] {
    [0; 512]
}

fn err_text(buf: &[c_char]) -> String {
    // SAFETY: the shim always NUL-terminates within the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .lines()
        .next()
        .unwrap_or("")
        .into()
}

/// Why a memory query has no numbers.
///
/// ```
/// use tchbook_prelude::cuda::MemoryError;
/// assert_eq!(MemoryError::NoCuda.to_string(), "no CUDA device is present");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryError {
    /// No CUDA device, or libtorch without CUDA.
    NoCuda,
    /// libtorch raised an error (the first line of its message).
    Torch(String),
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemoryError::NoCuda => f.write_str("no CUDA device is present"),
            MemoryError::Torch(m) => write!(f, "CUDA allocator error: {m}"),
        }
    }
}

impl std::error::Error for MemoryError {}

fn cuda_index(index: DeviceIndex) -> Result<c_int, MemoryError> {
    match index.0 {
        Some(i) if i < device_count() => Ok(i as c_int),
        _ => Err(MemoryError::NoCuda),
    }
}

/// The fallible twin of [`memory_stats`].
///
/// ```
/// if !tchbook_prelude::cuda::is_available() {
///     assert!(tchbook_prelude::cuda::f_memory_stats(0).is_err());
/// }
/// ```
pub fn f_memory_stats(index: impl Into<DeviceIndex>) -> Result<MemoryStats, MemoryError> {
    let device = cuda_index(index.into())?;
    let mut v = [0i64; 50];
    let mut err = err_buf();
    // SAFETY: buffers sized as the shim documents.
    let rc = unsafe { tchbook_cuda_stats(device, v.as_mut_ptr(), 50, err.as_mut_ptr(), err.len()) };
    match rc {
        0 => {
            let s = |k: usize| Stat {
                current: v[k],
                peak: v[k + 1],
                allocated: v[k + 2],
                freed: v[k + 3],
            };
            Ok(MemoryStats {
                allocation: s(0),
                segment: s(4),
                active: s(8),
                inactive_split: s(12),
                allocated_bytes: s(16),
                reserved_bytes: s(20),
                active_bytes: s(24),
                inactive_split_bytes: s(28),
                requested_bytes: s(32),
                num_alloc_retries: v[36],
                num_ooms: v[37],
                oversize_allocations: s(38),
                oversize_segments: s(42),
            })
        }
        // The allocator initialises on the first CUDA allocation: until then everything is 0.
        2 => Ok(MemoryStats::default()),
        1 => Err(MemoryError::NoCuda),
        _ => Err(MemoryError::Torch(err_text(&err))),
    }
}

/// `torch.cuda.memory_stats(i)`; all zeros without CUDA.
///
/// ```no_run
/// let stats = tchbook_prelude::cuda::memory_stats(0);
/// println!("{} allocations", stats.allocation.current);
/// ```
pub fn memory_stats(index: impl Into<DeviceIndex>) -> MemoryStats {
    f_memory_stats(index).unwrap_or_default()
}

/// `torch.cuda.memory_allocated(i)`: bytes occupied by tensors on the device (0 without CUDA).
///
/// ```
/// assert!(tchbook_prelude::cuda::memory_allocated(0) <= tchbook_prelude::cuda::memory_reserved(0));
/// ```
pub fn memory_allocated(index: impl Into<DeviceIndex>) -> u64 {
    memory_stats(index).allocated_bytes.current.max(0) as u64
}

/// `torch.cuda.memory_reserved(i)`: bytes the caching allocator holds (0 without CUDA).
///
/// ```
/// let _ = tchbook_prelude::cuda::memory_reserved(0);
/// ```
pub fn memory_reserved(index: impl Into<DeviceIndex>) -> u64 {
    memory_stats(index).reserved_bytes.current.max(0) as u64
}

/// `torch.cuda.memory_cached(i)`, the old name of [`memory_reserved`].
///
/// ```
/// assert_eq!(tchbook_prelude::cuda::memory_cached(0), tchbook_prelude::cuda::memory_reserved(0));
/// ```
pub fn memory_cached(index: impl Into<DeviceIndex>) -> u64 {
    memory_reserved(index)
}

/// `torch.cuda.max_memory_allocated(i)`: peak of [`memory_allocated`] since the last reset.
///
/// ```
/// let _ = tchbook_prelude::cuda::max_memory_allocated(0);
/// ```
pub fn max_memory_allocated(index: impl Into<DeviceIndex>) -> u64 {
    memory_stats(index).allocated_bytes.peak.max(0) as u64
}

/// `torch.cuda.max_memory_reserved(i)`.
///
/// ```
/// let _ = tchbook_prelude::cuda::max_memory_reserved(0);
/// ```
pub fn max_memory_reserved(index: impl Into<DeviceIndex>) -> u64 {
    memory_stats(index).reserved_bytes.peak.max(0) as u64
}

fn allocator_op(index: DeviceIndex, what: c_int) -> Result<(), MemoryError> {
    let device = cuda_index(index)?;
    let mut err = err_buf();
    // SAFETY: error buffer sized as passed.
    match unsafe { tchbook_cuda_allocator_op(device, what, err.as_mut_ptr(), err.len()) } {
        0 | 2 => Ok(()),
        1 => Err(MemoryError::NoCuda),
        _ => Err(MemoryError::Torch(err_text(&err))),
    }
}

/// The fallible twin of [`reset_peak_memory_stats`].
///
/// ```no_run
/// if let Err(e) = tchbook_prelude::cuda::f_reset_peak_memory_stats(0) {
///     println!("{e}"); // no CUDA device is present
/// }
/// ```
pub fn f_reset_peak_memory_stats(index: impl Into<DeviceIndex>) -> Result<(), MemoryError> {
    allocator_op(index.into(), 0)
}

/// `torch.cuda.reset_peak_memory_stats(i)`; does nothing without CUDA.
///
/// ```
/// tchbook_prelude::cuda::reset_peak_memory_stats(0);
/// ```
pub fn reset_peak_memory_stats(index: impl Into<DeviceIndex>) {
    let _ = f_reset_peak_memory_stats(index);
}

/// The fallible twin of [`empty_cache`].
///
/// ```no_run
/// let _ = tchbook_prelude::cuda::f_empty_cache();
/// ```
pub fn f_empty_cache() -> Result<(), MemoryError> {
    allocator_op(DeviceIndex(Some(0)), 2)
}

/// `torch.cuda.empty_cache()`: returns cached, unused blocks to the driver. Does nothing
/// without CUDA.
///
/// ```
/// tchbook_prelude::cuda::empty_cache();
/// ```
pub fn empty_cache() {
    let _ = f_empty_cache();
}

/// The fallible twin of [`mem_get_info`].
///
/// ```no_run
/// match tchbook_prelude::cuda::f_mem_get_info(0) {
///     Ok((free, total)) => println!("{free} of {total} bytes free"),
///     Err(e) => println!("{e}"),
/// }
/// ```
pub fn f_mem_get_info(index: impl Into<DeviceIndex>) -> Result<(u64, u64), MemoryError> {
    let device = cuda_index(index.into())?;
    let (mut free, mut total) = (0u64, 0u64);
    let mut err = err_buf();
    // SAFETY: out-pointers to locals, error buffer sized as passed.
    match unsafe {
        tchbook_cuda_mem_info(device, &mut free, &mut total, err.as_mut_ptr(), err.len())
    } {
        0 => Ok((free, total)),
        1 => Err(MemoryError::NoCuda),
        _ => Err(MemoryError::Torch(err_text(&err))),
    }
}

/// `torch.cuda.mem_get_info(i)`: (free, total) device memory in bytes; without CUDA, the
/// system's available and total RAM.
///
/// ```
/// let (free, total) = tchbook_prelude::cuda::mem_get_info(0);
/// assert!(free <= total);
/// ```
pub fn mem_get_info(index: impl Into<DeviceIndex>) -> (u64, u64) {
    let index = index.into();
    match f_mem_get_info(index) {
        Ok(v) => v,
        Err(_) => match index.0.and_then(get_device_properties) {
            Some(p) => (0, p.total_memory),
            None => (sys::ram_available().min(sys::ram_total()), sys::ram_total()),
        },
    }
}
