//! NVML (`libnvidia-ml.so.1`, installed with every NVIDIA driver), opened at run time: what
//! `nvidia-smi` shows for each GPU, all processes together, and the driver's and CUDA's
//! versions. Where there is no driver the list is empty; nothing here fails or panics, and a
//! GPU NVML cannot read (one that fell off the bus: `GPU is lost`) is listed with NVML's words.
//!
//! Tests on machines without a GPU name a stand-in library in `TCHBOOK_NVML_LIBRARY`
//! ([`tchbook_wire::env::NVML_LIBRARY`]). It is taken only as an absolute path whose file name
//! is the driver's own, `libnvidia-ml.so.1`, and never in a set-user-id or set-group-id process
//! (where glibc ignores `LD_LIBRARY_PATH` too): so it opens nothing that `LD_LIBRARY_PATH`, which
//! whoever sets a kernel's environment also sets, would not open under the same name, and a
//! notebook's own code, which can load any library anyway, gains nothing by it.

use super::query::as_function;
use std::ffi::{CStr, CString, OsStr, c_char, c_int, c_uint, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NvmlGpu {
    pub index: u32,
    pub name: String,
    pub memory_used: u64,
    pub memory_total: u64,
    pub utilization: Option<u32>,
    /// (domain, bus, device) on the PCI bus.
    pub pci: Option<(u32, u32, u32)>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    /// NVML's error for a call about this GPU that failed.
    pub error: Option<String>,
}

type Device = *mut c_void;

// The layouts of nvml.h's `nvmlMemory_t`, `nvmlUtilization_t` and `nvmlPciInfo_t` (v3).
#[repr(C)]
#[derive(Default)]
struct Memory {
    total: u64,
    free: u64,
    used: u64,
}

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

struct Nvml {
    count: unsafe extern "C" fn(*mut c_uint) -> c_int,
    handle: unsafe extern "C" fn(c_uint, *mut Device) -> c_int,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int,
    memory: unsafe extern "C" fn(Device, *mut Memory) -> c_int,
    utilization: unsafe extern "C" fn(Device, *mut Utilization) -> c_int,
    pci: unsafe extern "C" fn(Device, *mut PciInfo) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    /// Drivers older than NVML's versioned functions lack these two.
    driver_version: Option<unsafe extern "C" fn(*mut c_char, c_uint) -> c_int>,
    cuda_version: Option<unsafe extern "C" fn(*mut c_int) -> c_int>,
}

/// The driver's file name, which a stand-in must share.
const DRIVER_LIBRARY: &str = "libnvidia-ml.so.1";

/// The library to open: the driver's, found as the loader finds it, or the stand-in
/// `TCHBOOK_NVML_LIBRARY` names, if it passes [`stand_in`].
fn library() -> CString {
    let driver = || CString::new(DRIVER_LIBRARY).expect("no NUL");
    let Some(value) = std::env::var_os(tchbook_wire::env::NVML_LIBRARY) else {
        return driver();
    };
    // SAFETY: getauxval reads the process's auxiliary vector; AT_SECURE is always present.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    match stand_in(&value, secure) {
        Ok(path) => path,
        Err(why) => {
            eprintln!("tchbook: {why}; using the driver's {DRIVER_LIBRARY}");
            driver()
        }
    }
}

/// `value` as the stand-in's path, or why it is refused.
fn stand_in(value: &OsStr, secure: bool) -> Result<CString, String> {
    let name = tchbook_wire::env::NVML_LIBRARY;
    let path = Path::new(value);
    if secure {
        return Err(format!("{name} is ignored in a set-user-id process"));
    }
    if !path.is_absolute() {
        return Err(format!("{name}={value:?} is not an absolute path"));
    }
    if path.file_name() != Some(OsStr::new(DRIVER_LIBRARY)) {
        return Err(format!(
            "{name}={value:?} is not a file named {DRIVER_LIBRARY}"
        ));
    }
    CString::new(value.as_bytes()).map_err(|_| format!("{name} holds a NUL byte"))
}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| {
        let library = library();
        // SAFETY: dlopen/dlsym of NVML with nvml.h's signatures (as_function's contract); the
        // handle is never closed. NVML is safe to call from any thread.
        unsafe {
            let h = libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if h.is_null() {
                return None;
            }
            let sym = |n: &CStr| {
                let p = libc::dlsym(h, n.as_ptr());
                (!p.is_null()).then_some(p)
            };
            type Init = unsafe extern "C" fn() -> c_int;
            let init: Init = as_function(sym(c"nvmlInit_v2")?);
            if init() != 0 {
                return None;
            }
            Some(Nvml {
                count: as_function(sym(c"nvmlDeviceGetCount_v2")?),
                handle: as_function(sym(c"nvmlDeviceGetHandleByIndex_v2")?),
                name: as_function(sym(c"nvmlDeviceGetName")?),
                memory: as_function(sym(c"nvmlDeviceGetMemoryInfo")?),
                utilization: as_function(sym(c"nvmlDeviceGetUtilizationRates")?),
                pci: as_function(sym(c"nvmlDeviceGetPciInfo_v3")?),
                error_string: as_function(sym(c"nvmlErrorString")?),
                driver_version: sym(c"nvmlSystemGetDriverVersion").map(|p| as_function(p)),
                cuda_version: sym(c"nvmlSystemGetCudaDriverVersion_v2").map(|p| as_function(p)),
            })
        }
    })
    .as_ref()
}

impl Nvml {
    /// `call: <NVML's text for code>`.
    fn error(&self, call: &str, code: c_int) -> String {
        // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
        let text = unsafe { (self.error_string)(code) };
        let text = if text.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        format!("{call}: {text}")
    }

    /// The driver's version and the CUDA version it supports (`12.4` from 12040).
    fn versions(&self) -> (Option<String>, Option<String>) {
        let mut text = [0 as c_char; 96];
        // SAFETY: out-pointers to locals of the sizes given.
        let driver = self.driver_version.and_then(|f| unsafe {
            (f(text.as_mut_ptr(), text.len() as c_uint) == 0)
                .then(|| CStr::from_ptr(text.as_ptr()).to_string_lossy().into_owned())
        });
        let mut cuda: c_int = 0;
        // SAFETY: as above.
        let cuda = self
            .cuda_version
            .and_then(|f| unsafe { (f(&mut cuda) == 0).then_some(cuda) })
            .filter(|v| *v > 0)
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
        (driver, cuda)
    }

    /// GPU `index`, with what NVML could not say in `error`.
    fn gpu(&self, index: u32, driver: &Option<String>, cuda: &Option<String>) -> NvmlGpu {
        let mut gpu = NvmlGpu {
            index,
            name: format!("GPU {index}"),
            memory_used: 0,
            memory_total: 0,
            utilization: None,
            pci: None,
            driver: driver.clone(),
            cuda: cuda.clone(),
            error: None,
        };
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: NVML calls with out-pointers to locals of the types nvml.h gives.
        unsafe {
            let code = (self.handle)(index, &mut device);
            if code != 0 {
                gpu.error = Some(self.error("nvmlDeviceGetHandleByIndex", code));
                return gpu;
            }
            let mut name = [0 as c_char; 96];
            if (self.name)(device, name.as_mut_ptr(), name.len() as c_uint) == 0 {
                gpu.name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            }
            let mut memory = Memory::default();
            match (self.memory)(device, &mut memory) {
                0 => (gpu.memory_used, gpu.memory_total) = (memory.used, memory.total),
                code => gpu.error = Some(self.error("nvmlDeviceGetMemoryInfo", code)),
            }
            let mut utilization = Utilization::default();
            gpu.utilization =
                ((self.utilization)(device, &mut utilization) == 0).then_some(utilization.gpu);
            let mut pci: PciInfo = std::mem::zeroed();
            gpu.pci =
                ((self.pci)(device, &mut pci) == 0).then_some((pci.domain, pci.bus, pci.device));
        }
        gpu
    }
}

/// Every GPU NVML sees; empty without a driver.
pub(super) fn gpus() -> Vec<NvmlGpu> {
    let Some(n) = nvml() else {
        return Vec::new();
    };
    let mut count: c_uint = 0;
    // SAFETY: an out-pointer to a local of the type nvml.h gives.
    if unsafe { (n.count)(&mut count) } != 0 {
        return Vec::new();
    }
    let (driver, cuda) = n.versions();
    (0..count).map(|i| n.gpu(i, &driver, &cuda)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_in_reaches_no_further_than_ld_library_path() {
        let ok = stand_in(OsStr::new("/opt/fake/libnvidia-ml.so.1"), false);
        assert_eq!(ok.unwrap().as_bytes(), b"/opt/fake/libnvidia-ml.so.1");
        for (value, why) in [
            ("libnvidia-ml.so.1", "not an absolute path"),
            ("fake/libnvidia-ml.so.1", "not an absolute path"),
            ("/tmp/evil.so", "not a file named libnvidia-ml.so.1"),
            ("/tmp/libnvidia-ml.so.1/..", "not a file named"),
        ] {
            let error = stand_in(OsStr::new(value), false).unwrap_err();
            assert!(error.contains(why), "{value}: {error}");
        }
        let error = stand_in(OsStr::new("/opt/fake/libnvidia-ml.so.1"), true).unwrap_err();
        assert!(error.contains("set-user-id"), "{error}");
    }
}
