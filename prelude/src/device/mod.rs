//! Devices: picking one (cuda → mps → cpu), moving tensors and models, and what the hardware is.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let device = best_device();
//! let mut vs = nn::VarStore::new(Device::Cpu);
//! let _model = TestModel::new(&vs.root());
//! vs.set_device(device);
//! assert_eq!(vs.is_cuda(), device.is_cuda());
//! ```

mod card;
mod ext;
mod select;

pub use crate::backend::{cuda_load_error, load_cuda, nvidia_driver_present};
pub use crate::torch_error::{TorchError, catch_torch_error, short_error};
pub use card::{DeviceCard, device_card};
pub use ext::{NamedParameters, TensorDevice, VarStoreExt, named_parameters};
pub use select::{DeviceError, best_device, device, device_name, f_device};
