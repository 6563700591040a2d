//! PyTorch's printed forms of a device and a shape, which tch prints its own way: `a.device`
//! shows `device(type='cpu')` in Python where tch's `Device` debug-prints `Cpu`, and
//! `param.shape` shows `torch.Size([6, 1, 5, 5])` where `param.size()` prints `[6, 1, 5, 5]`.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let a = Tensor::from_slice(&[1f32, 2.]);
//! assert_eq!(a.device().repr().to_string(), "device(type='cpu')");   // a.device
//! assert_eq!(a.shape().to_string(), "torch.Size([2])");              // a.shape
//! ```

use crate::display::{Bundle, Render, rich};
use tch::{Device, Tensor};

/// A device as PyTorch prints it: `device(type='cpu')`, `device(type='cuda', index=0)`,
/// `device(type='mps')`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(Device::Cuda(0).repr().to_string(), "device(type='cuda', index=0)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DeviceRepr(pub Device);

impl Render for DeviceRepr {
    fn bundle(&self) -> Bundle {
        Bundle::text(match self.0 {
            Device::Cpu => "device(type='cpu')".to_string(),
            Device::Cuda(i) => format!("device(type='cuda', index={i})"),
            Device::Mps => "device(type='mps')".to_string(),
            Device::Vulkan => "device(type='vulkan')".to_string(),
        })
    }
}
rich!(DeviceRepr);

impl std::fmt::Debug for DeviceRepr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// `t.device` as Python shows it: `t.device().repr()` (an extension trait because `Device` is
/// tch's; tch has no `repr`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let t = Tensor::ones([2, 2], (Kind::Float, Device::Cpu));
/// println!("{}", t.device().repr()); // device(type='cpu')
/// ```
pub trait DeviceDisplay {
    /// PyTorch's repr of the device.
    fn repr(&self) -> DeviceRepr;
}

impl DeviceDisplay for Device {
    fn repr(&self) -> DeviceRepr {
        DeviceRepr(*self)
    }
}

/// A tensor's shape as PyTorch prints it, `torch.Size([1, 1, 28, 28])`; compares with and
/// dereferences to the dimensions (`&[i64]`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let sample = Tensor::ones([1, 1, 28, 28], (Kind::Float, Device::Cpu));
/// let shape = sample.shape();
/// assert_eq!(shape.to_string(), "torch.Size([1, 1, 28, 28])");
/// assert_eq!(shape[3], 28);
/// assert_eq!(shape, [1, 1, 28, 28]);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Size(pub Vec<i64>);

impl Render for Size {
    fn bundle(&self) -> Bundle {
        let dims: Vec<String> = self.0.iter().map(|d| d.to_string()).collect();
        Bundle::text(format!("torch.Size([{}])", dims.join(", ")))
    }
}
rich!(Size);

impl std::fmt::Debug for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::ops::Deref for Size {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        &self.0
    }
}

impl<const N: usize> PartialEq<[i64; N]> for Size {
    fn eq(&self, other: &[i64; N]) -> bool {
        self.0 == other
    }
}

/// `t.shape` as Python shows it: `t.shape()` gives a [`Size`] (tch's own `t.size()` gives the
/// dimensions as a `Vec<i64>`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let w = Tensor::zeros([6, 1, 5, 5], (Kind::Float, Device::Cpu));
/// println!("{}", w.shape()); // torch.Size([6, 1, 5, 5])
/// ```
pub trait TensorShape {
    /// The dimensions, printed as `torch.Size([...])`.
    fn shape(&self) -> Size;
}

impl TensorShape for Tensor {
    fn shape(&self) -> Size {
        Size(self.size())
    }
}
