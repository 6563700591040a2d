//! `torch.cuda` for Rust: availability, devices and their properties, and the CUDA caching
//! allocator's memory statistics.
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

use crate::display::{Bundle, Render, html_table, rich, text_table};
use crate::sys;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use tch::Device;

unsafe extern "C" {
    fn tchbook_torch_version() -> *const c_char;
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

/// A CUDA device index, from `0`, `0usize`, `0i64` or a [`Device`] (`Device::Cuda(1)` → 1; a
/// non-CUDA device means "no CUDA device").
///
/// ```
/// use tchbook_prelude::cuda::DeviceIndex;
/// use tch::Device;
/// assert_eq!(DeviceIndex::from(Device::Cuda(1)).0, Some(1));
/// assert_eq!(DeviceIndex::from(Device::Cpu).0, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceIndex(pub Option<usize>);

impl From<i32> for DeviceIndex {
    fn from(i: i32) -> Self {
        DeviceIndex(usize::try_from(i).ok())
    }
}
impl From<i64> for DeviceIndex {
    fn from(i: i64) -> Self {
        DeviceIndex(usize::try_from(i).ok())
    }
}
impl From<usize> for DeviceIndex {
    fn from(i: usize) -> Self {
        DeviceIndex(Some(i))
    }
}
impl From<Device> for DeviceIndex {
    fn from(d: Device) -> Self {
        match d {
            Device::Cuda(i) => DeviceIndex(Some(i)),
            _ => DeviceIndex(None),
        }
    }
}

/// `torch.cuda.is_available()`: a CUDA device is present and libtorch's CUDA backend is loaded
/// (the prelude loads it; see [`crate::device::load_cuda`]).
///
/// ```
/// let _ = tchbook_prelude::cuda::is_available();
/// ```
pub fn is_available() -> bool {
    crate::backend::load_cuda();
    tch::Cuda::is_available()
}

/// `torch.cuda.device_count()` (0 without CUDA).
///
/// ```
/// let n = tchbook_prelude::cuda::device_count();
/// assert_eq!(n == 0, !tchbook_prelude::cuda::is_available());
/// ```
pub fn device_count() -> usize {
    if is_available() {
        tch::Cuda::device_count().max(0) as usize
    } else {
        0
    }
}

/// `torch.cuda.current_device()` (0 without CUDA, as PyTorch would fail; here it never panics).
///
/// ```
/// let _ = tchbook_prelude::cuda::current_device();
/// ```
pub fn current_device() -> usize {
    if !is_available() {
        return 0;
    }
    // libcudart is in the process once libtorch_cuda is; its cudaGetDevice is the truth.
    type GetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;
    match lookup::<GetDevice>(c"cudaGetDevice") {
        Some(f) => {
            let mut d: c_int = 0;
            // SAFETY: cudaGetDevice(int*) from libcudart.
            if unsafe { f(&mut d) } == 0 {
                d.max(0) as usize
            } else {
                0
            }
        }
        None => 0,
    }
}

fn lookup<F: Copy>(name: &CStr) -> Option<F> {
    // SAFETY: dlsym on the global namespace; the caller gives the right signature.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if sym.is_null() {
        None
    } else {
        // SAFETY: F is a function pointer type of the same size as *mut c_void.
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&sym) })
    }
}

/// `torch.cuda.synchronize(i)`: waits for all queued work on the device (for honest timings).
/// Does nothing without CUDA.
///
/// ```
/// tchbook_prelude::cuda::synchronize(0);
/// ```
pub fn synchronize(index: impl Into<DeviceIndex>) {
    if let Some(i) = index.into().0
        && i < device_count()
    {
        tch::Cuda::synchronize(i as i64);
    }
}

/// What the CUDA driver says about one device (`torch.cuda.get_device_properties`).
///
/// ```
/// if let Some(p) = tchbook_prelude::cuda::get_device_properties(0) {
///     println!("{} sm_{}{} {} SMs", p.name, p.major, p.minor, p.multi_processor_count);
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The index, as in `cuda:0`.
    pub index: usize,
    /// The marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability major version.
    pub major: i32,
    /// Compute capability minor version.
    pub minor: i32,
    /// Streaming multiprocessors.
    pub multi_processor_count: i32,
    /// Device memory in bytes.
    pub total_memory: u64,
}

/// The CUDA driver API, opened from libcuda.so.1 (present wherever an NVIDIA driver is).
struct Driver {
    get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int,
    total_mem: unsafe extern "C" fn(*mut usize, c_int) -> c_int,
    attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int,
    get: unsafe extern "C" fn(*mut c_int, c_int) -> c_int,
    count: unsafe extern "C" fn(*mut c_int) -> c_int,
    version: unsafe extern "C" fn(*mut c_int) -> c_int,
}

fn driver() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            // SAFETY: dlopen/dlsym of the NVIDIA driver library with the documented signatures.
            unsafe {
                let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
                if h.is_null() {
                    return None;
                }
                let sym = |n: &CStr| {
                    let p = libc::dlsym(h, n.as_ptr());
                    (!p.is_null()).then_some(p)
                };
                fn cast<F: Copy>(p: *mut c_void) -> F {
                    // SAFETY (caller): F is the symbol's function-pointer type.
                    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
                }
                type Init = unsafe extern "C" fn(u32) -> c_int;
                let init: Init = std::mem::transmute::<*mut c_void, Init>(sym(c"cuInit")?);
                if init(0) != 0 {
                    return None;
                }
                Some(Driver {
                    get_name: cast(sym(c"cuDeviceGetName")?),
                    total_mem: cast(sym(c"cuDeviceTotalMem_v2")?),
                    attribute: cast(sym(c"cuDeviceGetAttribute")?),
                    get: cast(sym(c"cuDeviceGet")?),
                    count: cast(sym(c"cuDeviceGetCount")?),
                    version: cast(sym(c"cuDriverGetVersion")?),
                })
            }
        })
        .as_ref()
}

/// `torch.cuda.get_device_properties(i)`; `None` without CUDA or for an index out of range.
///
/// ```
/// let props = tchbook_prelude::cuda::get_device_properties(0);
/// assert_eq!(props.is_some(), tchbook_prelude::cuda::device_count() > 0);
/// ```
pub fn get_device_properties(index: impl Into<DeviceIndex>) -> Option<DeviceProperties> {
    let index = index.into().0?;
    let d = driver()?;
    // SAFETY: driver API calls with out-pointers to locals.
    unsafe {
        let mut count = 0;
        if (d.count)(&mut count) != 0 || index >= count.max(0) as usize {
            return None;
        }
        let mut dev = 0;
        if (d.get)(&mut dev, index as c_int) != 0 {
            return None;
        }
        let mut name = [0 as c_char; 256];
        (d.get_name)(name.as_mut_ptr(), name.len() as c_int, dev);
        let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let mut total = 0usize;
        (d.total_mem)(&mut total, dev);
        let attr = |a: c_int| {
            let mut v = 0;
            (d.attribute)(&mut v, a, dev);
            v
        };
        // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16, COMPUTE_CAPABILITY_MAJOR/MINOR = 75/76.
        Some(DeviceProperties {
            index,
            name,
            major: attr(75),
            minor: attr(76),
            multi_processor_count: attr(16),
            total_memory: total as u64,
        })
    }
}

/// `torch.cuda.get_device_name(i)`; "no CUDA device" when there is none.
///
/// ```
/// let name = tchbook_prelude::cuda::get_device_name(0);
/// assert!(!name.is_empty());
/// ```
pub fn get_device_name(index: impl Into<DeviceIndex>) -> String {
    get_device_properties(index)
        .map(|p| p.name)
        .unwrap_or_else(|| "no CUDA device".into())
}

/// `torch.cuda.get_device_capability(i)`: (major, minor), `None` without CUDA.
///
/// ```
/// let _ = tchbook_prelude::cuda::get_device_capability(0);
/// ```
pub fn get_device_capability(index: impl Into<DeviceIndex>) -> Option<(i32, i32)> {
    get_device_properties(index).map(|p| (p.major, p.minor))
}

/// Versions of the software stack: torch (libtorch), CUDA runtime and driver, cuDNN.
///
/// ```
/// let v = tchbook_prelude::cuda::versions();
/// assert!(v.torch.starts_with("2."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    /// libtorch's version (`torch.__version__`).
    pub torch: String,
    /// The CUDA runtime libtorch was built with (`torch.version.cuda`), if it has CUDA.
    pub cuda: Option<String>,
    /// The CUDA version the installed driver supports.
    pub driver: Option<String>,
    /// cuDNN (`torch.backends.cudnn.version()`), if present.
    pub cudnn: Option<String>,
}

fn cuda_version_string(v: i64) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The versions of torch, CUDA and cuDNN in this process.
///
/// ```
/// println!("torch {}", tchbook_prelude::cuda::versions().torch);
/// ```
pub fn versions() -> Versions {
    // SAFETY: returns a pointer to a static string literal in the shim.
    let torch = unsafe { CStr::from_ptr(tchbook_torch_version()) }
        .to_string_lossy()
        .into_owned();
    let available = is_available();
    let cuda = if available {
        crate::device::quietly(tch::utils::version_cudart)
            .ok()
            .filter(|v| *v > 0)
            .map(cuda_version_string)
    } else {
        None
    };
    let cudnn = if available && tch::Cuda::cudnn_is_available() {
        crate::device::quietly(tch::utils::version_cudnn)
            .ok()
            .filter(|v| *v > 0)
            .map(|v| format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
    } else {
        None
    };
    let driver = driver().and_then(|d| {
        let mut v = 0;
        // SAFETY: out-pointer to a local.
        (unsafe { (d.version)(&mut v) } == 0).then(|| cuda_version_string(v as i64))
    });
    Versions {
        torch,
        cuda,
        driver,
        cudnn,
    }
}

// ---------------------------------------------------------------------------------------------
// Memory

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

/// `torch.cuda.memory_summary()`: a table per CUDA device from the caching allocator, with the
/// device's free and total memory; without CUDA, the process's and the system's RAM, and a line
/// saying that no CUDA device is present. Renders as a table in the notebook.
///
/// ```
/// let summary = tchbook_prelude::cuda::memory_summary();
/// println!("{summary}");
/// if !tchbook_prelude::cuda::is_available() {
///     assert!(summary.to_string().contains("No CUDA device is present"));
/// }
/// ```
pub fn memory_summary() -> MemorySummary {
    let devices = (0..device_count())
        .map(|i| DeviceMemory {
            index: i,
            name: get_device_name(i),
            stats: memory_stats(i),
            free_total: f_mem_get_info(i).ok(),
        })
        .collect();
    MemorySummary {
        devices,
        process_rss: sys::process_rss(),
        process_peak_rss: sys::process_peak_rss(),
        ram_total: sys::ram_total(),
        ram_available: sys::ram_available(),
    }
}

/// One CUDA device's part of a [`MemorySummary`].
///
/// ```no_run
/// for d in tchbook_prelude::cuda::memory_summary().devices {
///     println!("cuda:{} {} bytes allocated", d.index, d.stats.allocated_bytes.current);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct DeviceMemory {
    /// `cuda:index`.
    pub index: usize,
    /// Device name.
    pub name: String,
    /// Allocator statistics.
    pub stats: MemoryStats,
    /// (free, total) device memory, if the allocator could tell.
    pub free_total: Option<(u64, u64)>,
}

/// What [`memory_summary`] returns: per-device allocator tables plus process and system RAM.
///
/// ```no_run
/// let summary = tchbook_prelude::cuda::memory_summary();
/// println!("{summary}"); // a cell ending with `summary` shows the HTML table
/// ```
#[derive(Debug, Clone)]
pub struct MemorySummary {
    /// One entry per CUDA device (empty without CUDA).
    pub devices: Vec<DeviceMemory>,
    /// This process's resident memory.
    pub process_rss: u64,
    /// This process's peak resident memory.
    pub process_peak_rss: u64,
    /// System RAM.
    pub ram_total: u64,
    /// System RAM available.
    pub ram_available: u64,
}

impl MemorySummary {
    fn header() -> Vec<String> {
        [
            "Metric",
            "Cur Usage",
            "Peak Usage",
            "Tot Alloc",
            "Tot Freed",
        ]
        .map(String::from)
        .to_vec()
    }

    fn device_rows(d: &DeviceMemory) -> Vec<Vec<String>> {
        let b = |s: &Stat, name: &str| {
            let h = |v: i64| sys::human_bytes(v.max(0) as u64);
            vec![
                name.into(),
                h(s.current),
                h(s.peak),
                h(s.allocated),
                h(s.freed),
            ]
        };
        let c = |s: &Stat, name: &str| {
            vec![
                name.into(),
                s.current.to_string(),
                s.peak.to_string(),
                s.allocated.to_string(),
                s.freed.to_string(),
            ]
        };
        let s = &d.stats;
        let mut rows = vec![
            b(&s.allocated_bytes, "Allocated memory"),
            b(&s.active_bytes, "Active memory"),
            b(&s.requested_bytes, "Requested memory"),
            b(&s.reserved_bytes, "GPU reserved memory"),
            b(&s.inactive_split_bytes, "Non-releasable memory"),
            c(&s.allocation, "Allocations"),
            c(&s.active, "Active allocs"),
            c(&s.segment, "GPU reserved segments"),
            c(&s.inactive_split, "Non-releasable allocs"),
            c(&s.oversize_allocations, "Oversize allocations"),
            c(&s.oversize_segments, "Oversize GPU segments"),
        ];
        rows.push(vec![
            "cudaMalloc retries / OOMs".into(),
            s.num_alloc_retries.to_string(),
            s.num_ooms.to_string(),
            String::new(),
            String::new(),
        ]);
        if let Some((free, total)) = d.free_total {
            rows.push(vec![
                "Device memory free / total".into(),
                sys::human_bytes(free),
                sys::human_bytes(total),
                String::new(),
                String::new(),
            ]);
        }
        rows
    }

    fn ram_line(&self) -> String {
        format!(
            "Process RAM: {} (peak {}) · System RAM: {} available of {}",
            sys::human_bytes(self.process_rss),
            sys::human_bytes(self.process_peak_rss),
            sys::human_bytes(self.ram_available),
            sys::human_bytes(self.ram_total)
        )
    }
}

impl Render for MemorySummary {
    fn bundle(&self) -> Bundle {
        let mut text = String::new();
        let mut html = String::from("<div class=\"tchbook-memory\">");
        if self.devices.is_empty() {
            text.push_str("No CUDA device is present: showing process and system RAM.\n");
            html.push_str(
                "<p><b>No CUDA device is present</b>: showing process and system RAM.</p>",
            );
        }
        for d in &self.devices {
            let title = format!("CUDA memory summary, device cuda:{} ({})", d.index, d.name);
            let rows = Self::device_rows(d);
            text.push_str(&format!(
                "{title}\n{}\n\n",
                text_table(&Self::header(), &rows)
            ));
            html.push_str(&html_table(Some(&title), &Self::header(), &rows));
        }
        text.push_str(&self.ram_line());
        html.push_str(&format!(
            "<p>{}</p></div>",
            crate::sys::escape_html(&self.ram_line())
        ));
        let mut rows: Vec<serde_json::Value> = self
            .devices
            .iter()
            .map(|d| {
                serde_json::json!({
                    "device": format!("cuda:{}", d.index),
                    "name": d.name,
                    "allocated": d.stats.allocated_bytes.current,
                    "reserved": d.stats.reserved_bytes.current,
                    "max_allocated": d.stats.allocated_bytes.peak,
                    "max_reserved": d.stats.reserved_bytes.peak,
                    "free": d.free_total.map(|m| m.0),
                    "total": d.free_total.map(|m| m.1),
                })
            })
            .collect();
        rows.push(serde_json::json!({
            "device": "cpu",
            "process_rss": self.process_rss,
            "process_peak_rss": self.process_peak_rss,
            "free": self.ram_available,
            "total": self.ram_total,
        }));
        let json = serde_json::json!({"cuda": !self.devices.is_empty(), "rows": rows});
        Bundle::text(text)
            .with_html(html)
            .with_data("memory-summary", json)
    }
}

rich!(MemorySummary);
