//! Devices and what the driver says about them: availability, counts, properties, versions.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use tch::Device;

unsafe extern "C" {
    fn tchbook_torch_version() -> *const c_char;
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

/// Why [`is_available`] is false, in words a user can act on; `None` where CUDA is available.
/// Without an NVIDIA driver: "no CUDA device is present". With one: why libtorch's CUDA backend did
/// not load ([`crate::device::cuda_load_error`]), or what the CUDA runtime answered when asked for
/// its devices (a driver too old for libtorch's CUDA, no device visible to this process).
///
/// ```
/// use tchbook_prelude::cuda;
/// assert_eq!(cuda::unavailable_reason().is_none(), cuda::is_available());
/// ```
pub fn unavailable_reason() -> Option<String> {
    if is_available() {
        return None;
    }
    if !crate::backend::nvidia_driver_present() {
        return Some("no CUDA device is present".into());
    }
    if let Some(why) = crate::backend::cuda_load_error() {
        return Some(format!(
            "an NVIDIA driver is present, but libtorch's CUDA backend (libtorch_cuda.so) did not \
             load: {why}"
        ));
    }
    type GetDeviceCount = unsafe extern "C" fn(*mut c_int) -> c_int;
    type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
    // SAFETY: the CUDA runtime API's signatures of these symbols (cuda_runtime_api.h).
    let (count, error_string) = unsafe {
        (
            lookup::<GetDeviceCount>(c"cudaGetDeviceCount"),
            lookup::<GetErrorString>(c"cudaGetErrorString"),
        )
    };
    let runtime = match count {
        Some(count) => {
            let mut n: c_int = 0;
            // SAFETY: cudaGetDeviceCount(int*) from libcudart.
            match unsafe { count(&mut n) } {
                0 => format!("the CUDA runtime sees {n} device(s)"),
                code => match error_string {
                    // SAFETY: cudaGetErrorString returns a static NUL-terminated string.
                    Some(text) => unsafe { CStr::from_ptr(text(code)) }
                        .to_string_lossy()
                        .into_owned(),
                    None => format!("CUDA runtime error {code}"),
                },
            }
        }
        None => "the CUDA runtime is not loaded".into(),
    };
    Some(format!(
        "an NVIDIA driver is present, but libtorch finds no usable CUDA device: {runtime}"
    ))
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
    // SAFETY: cudaGetDevice's signature in the CUDA runtime API (cuda_runtime_api.h).
    match unsafe { lookup::<GetDevice>(c"cudaGetDevice") } {
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

/// The function named `name` in the process's global namespace (libcudart's, once libtorch_cuda
/// is loaded) as the function-pointer type `F`; `None` where no such symbol is loaded.
///
/// # Safety
/// `F` must be an `unsafe extern "C" fn` type with the symbol's own signature: the result is
/// called through `F`, and a symbol's signature cannot be checked at run time.
unsafe fn lookup<F: Copy>(name: &CStr) -> Option<F> {
    // SAFETY: dlsym(3) only reads the NUL-terminated name and the loaded objects' tables.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: a non-null symbol, and the caller's promise that F is its type.
    (!symbol.is_null()).then(|| unsafe { as_function::<F>(symbol) })
}

/// The address `symbol` as the function-pointer type `F`.
///
/// # Safety
/// `symbol` must be the address of a function whose signature is `F`'s, and `F` a function
/// pointer type (its size is checked when this compiles; what it is cannot be).
pub(super) unsafe fn as_function<F: Copy>(symbol: *mut c_void) -> F {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    // SAFETY: F has a pointer's size (checked above) and, by the caller's promise, is the
    // type of the function at `symbol`.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&symbol) }
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
                // Each type is the CUDA driver API's signature of the symbol it is read from
                // (cuda.h): as_function's contract.
                type Init = unsafe extern "C" fn(u32) -> c_int;
                let init: Init = as_function(sym(c"cuInit")?);
                if init(0) != 0 {
                    return None;
                }
                Some(Driver {
                    get_name: as_function(sym(c"cuDeviceGetName")?),
                    total_mem: as_function(sym(c"cuDeviceTotalMem_v2")?),
                    attribute: as_function(sym(c"cuDeviceGetAttribute")?),
                    get: as_function(sym(c"cuDeviceGet")?),
                    count: as_function(sym(c"cuDeviceGetCount")?),
                    version: as_function(sym(c"cuDriverGetVersion")?),
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

/// Where CUDA device `index` sits on the PCI bus (domain, bus, device), which is how NVML's
/// devices are matched to CUDA's ordinals (`CUDA_VISIBLE_DEVICES` renumbers the latter).
pub(super) fn pci_location(index: usize) -> Option<(u32, u32, u32)> {
    let d = driver()?;
    // SAFETY: driver API calls with out-pointers to locals.
    unsafe {
        let mut dev = 0;
        if (d.get)(&mut dev, c_int::try_from(index).ok()?) != 0 {
            return None;
        }
        // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50, PCI_BUS_ID = 33, PCI_DEVICE_ID = 34.
        let mut location = [0; 3];
        for (value, attribute) in location.iter_mut().zip([50, 33, 34]) {
            if (d.attribute)(value, attribute, dev) != 0 {
                return None;
            }
        }
        let [domain, bus, device] = location.map(|v| v as u32);
        Some((domain, bus, device))
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
        crate::torch_error::quietly(tch::utils::version_cudart)
            .ok()
            .filter(|v| *v > 0)
            .map(cuda_version_string)
    } else {
        None
    };
    let cudnn = if available && tch::Cuda::cudnn_is_available() {
        crate::torch_error::quietly(tch::utils::version_cudnn)
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
