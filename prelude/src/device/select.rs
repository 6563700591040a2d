//! Picking a device: cuda → mps → cpu, and parsing `torch.device` specs.

use crate::cuda;
use tch::Device;

/// The best device here: CUDA if a CUDA device is present, else Apple's MPS, else the CPU —
/// the tutorials' `'cuda' if torch.cuda.is_available() else 'mps' if ... else 'cpu'`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let device = best_device();
/// let t = Tensor::ones([2, 2], (Kind::Float, device));
/// assert_eq!(t.device(), device);
/// ```
pub fn best_device() -> Device {
    if cuda::is_available() {
        Device::Cuda(0)
    } else if tch::utils::has_mps() {
        Device::Mps
    } else {
        Device::Cpu
    }
}

/// A device spec that does not parse.
///
/// ```
/// let e = tchbook_prelude::device::f_device("tpu").unwrap_err();
/// assert!(e.to_string().contains("tpu"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

/// The fallible twin of [`device`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(f_device("cuda:1").unwrap(), Device::Cuda(1));
/// assert!(f_device("gpu").is_err());
/// ```
pub fn f_device(spec: &str) -> Result<Device, DeviceError> {
    let spec = spec.trim();
    let (kind, index) = match spec.split_once(':') {
        Some((k, i)) => (k, Some(i)),
        None => (spec, None),
    };
    let index = match index {
        Some(i) => Some(i.parse::<usize>().map_err(|_| {
            DeviceError(format!(
                "invalid device index in {spec:?}: expected e.g. \"cuda:0\""
            ))
        })?),
        None => None,
    };
    match (kind, index) {
        ("cpu", None) => Ok(Device::Cpu),
        ("cuda", i) => Ok(Device::Cuda(i.unwrap_or(0))),
        ("mps", None | Some(0)) => Ok(Device::Mps),
        _ => Err(DeviceError(format!(
            "unknown device {spec:?}: expected \"cpu\", \"cuda\", \"cuda:N\" or \"mps\""
        ))),
    }
}

/// `torch.device("cuda:0")`: parses `cpu`, `cuda`, `cuda:N`, `mps`. Panics on anything else
/// (see [`f_device`]).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(device("cuda:1"), Device::Cuda(1));
/// let d = device(if cuda::is_available() { "cuda:0" } else { "cpu" });
/// # let _ = d;
/// ```
pub fn device(spec: &str) -> Device {
    f_device(spec).unwrap_or_else(|e| panic!("{e}"))
}

/// PyTorch's name for a device (`cpu`, `cuda:0`, `mps`), as `str(tensor.device)` prints it.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(device_name(Device::Cuda(0)), "cuda:0");
/// ```
pub fn device_name(device: Device) -> String {
    crate::display::device_name(device)
}
