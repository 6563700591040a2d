//! NVML (`libnvidia-ml.so.1`, installed with every NVIDIA driver), opened at run time: what
//! `nvidia-smi` shows for each GPU, all processes together. Where there is no driver the list is
//! empty; nothing here fails or panics.

use super::query::as_function;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
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
}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| {
        // SAFETY: dlopen/dlsym of the driver's NVML with nvml.h's signatures (as_function's
        // contract); the handle is never closed. NVML is safe to call from any thread.
        unsafe {
            let h = libc::dlopen(
                c"libnvidia-ml.so.1".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            );
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
            })
        }
    })
    .as_ref()
}

/// Every GPU NVML sees; empty without a driver.
pub(super) fn gpus() -> Vec<NvmlGpu> {
    let Some(n) = nvml() else {
        return Vec::new();
    };
    let mut count: c_uint = 0;
    // SAFETY: NVML calls with out-pointers to locals of the types nvml.h gives.
    unsafe {
        if (n.count)(&mut count) != 0 {
            return Vec::new();
        }
        (0..count)
            .filter_map(|index| {
                let mut device: Device = std::ptr::null_mut();
                if (n.handle)(index, &mut device) != 0 {
                    return None;
                }
                let mut name = [0 as c_char; 96];
                let name = if (n.name)(device, name.as_mut_ptr(), name.len() as c_uint) == 0 {
                    CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned()
                } else {
                    format!("GPU {index}")
                };
                let mut memory = Memory::default();
                if (n.memory)(device, &mut memory) != 0 {
                    memory = Memory::default();
                }
                let mut utilization = Utilization::default();
                let utilization =
                    ((n.utilization)(device, &mut utilization) == 0).then_some(utilization.gpu);
                let mut pci: PciInfo = std::mem::zeroed();
                let pci =
                    ((n.pci)(device, &mut pci) == 0).then_some((pci.domain, pci.bus, pci.device));
                Some(NvmlGpu {
                    index,
                    name,
                    memory_used: memory.used,
                    memory_total: memory.total,
                    utilization,
                    pci,
                })
            })
            .collect()
    }
}
