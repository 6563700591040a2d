//! tchbook's prelude: the library every notebook cell links.
//!
//! A cell starts with `use tchbook_prelude::prelude::*;` in scope, which brings tch (where tch
//! already mirrors PyTorch) and what PyTorch users reach for that tch lacks:
//!
//! - [`device`] — cuda → mps → cpu selection, moving tensors and var stores, device cards,
//!   one-line libtorch errors ([`device::attempt`]);
//! - [`cuda`] — `torch.cuda`-style queries and the caching allocator's memory statistics;
//! - [`display`] — rich output for every prelude value and live, in-place updates;
//! - [`runtime`] and [`interrupt`] — the kernel contract (live display protocol, stdout pump,
//!   SIGINT flag), see DEVELOPERS.md.

pub mod cuda;
pub mod device;
pub mod display;
pub mod interrupt;
pub mod runtime;
mod sys;
mod tensor_fmt;

/// Everything a notebook cell has in scope.
pub mod prelude {
    pub use tch::nn::{self, Module, ModuleT, OptimizerConfig};
    pub use tch::{self, no_grad, Device, IndexOp, Kind, Reduction, Tensor};

    pub use crate::cuda;
    pub use crate::device::{
        attempt, best_device, device, device_card, device_str, f_device, DeviceCard, TensorDevice,
        TorchError, VarStoreExt,
    };
    pub use crate::display::{clear_output, show, Render, TensorDisplay};
    pub use crate::interrupt;
    pub use crate::runtime::{set_threads, tune_allocator};
}
