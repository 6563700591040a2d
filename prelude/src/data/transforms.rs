//! torchvision's transforms, spelled as in the tutorials:
//! `transforms::Compose(vec![transforms::ToTensor(), transforms::Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])`.
//!
//! They apply to a whole batch of images `[N, C, H, W]` at once: the data sets transform all
//! their images when loaded, so the training loop pays nothing per batch.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let transform = transforms::Compose(vec![
//!     transforms::ToTensor(),
//!     transforms::Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
//! ]);
//! let images = Tensor::full([1, 3, 2, 2], 255, (Kind::Uint8, Device::Cpu));
//! let out = transform.apply(&images);
//! assert_eq!(out.kind(), Kind::Float);
//! assert_eq!(out.max().double_value(&[]), 1.0); // (1.0 - 0.5) / 0.5
//! ```
#![allow(non_snake_case)]

use tch::{Kind, Tensor};

/// A transform of a batch of images `[N, C, H, W]`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let t: transforms::Transform = transforms::Normalize([0.1307], [0.3081]);
/// # let _ = t;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Transform {
    /// uint8 in 0..=255 → float32 in [0, 1].
    ToTensor,
    /// `(x - mean[c]) / std[c]` per channel.
    Normalize {
        /// Per-channel means.
        mean: Vec<f64>,
        /// Per-channel standard deviations.
        std: Vec<f64>,
    },
    /// Each transform in turn.
    Compose(Vec<Transform>),
    /// Leaves the images as they are.
    Identity,
}

/// `transforms.ToTensor()`: uint8 pixels → float32 in [0, 1].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(transforms::ToTensor(), transforms::Transform::ToTensor);
/// ```
pub fn ToTensor() -> Transform {
    Transform::ToTensor
}

/// `transforms.Normalize(mean, std)`, one value per channel.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let n = transforms::Normalize([0.5], [0.5]);
/// # let _ = n;
/// ```
pub fn Normalize(mean: impl AsRef<[f64]>, std: impl AsRef<[f64]>) -> Transform {
    Transform::Normalize {
        mean: mean.as_ref().to_vec(),
        std: std.as_ref().to_vec(),
    }
}

/// `transforms.Compose([...])`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let t = transforms::Compose(vec![transforms::ToTensor()]);
/// # let _ = t;
/// ```
pub fn Compose(transforms: Vec<Transform>) -> Transform {
    Transform::Compose(transforms)
}

impl Transform {
    /// Applies the transform to images `[N, C, H, W]` (or one image `[C, H, W]`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let images = Tensor::zeros([2, 1, 28, 28], (Kind::Uint8, Device::Cpu));
    /// let x = transforms::ToTensor().apply(&images);
    /// assert_eq!(x.kind(), Kind::Float);
    /// ```
    pub fn apply(&self, images: &Tensor) -> Tensor {
        match self {
            Transform::Identity => images.shallow_clone(),
            Transform::ToTensor => {
                if images.kind() == Kind::Uint8 {
                    images.to_kind(Kind::Float) / 255.0
                } else {
                    images.to_kind(Kind::Float)
                }
            }
            Transform::Normalize { mean, std } => {
                let channel_dim = if images.dim() == 3 { 0 } else { 1 };
                let mut shape = vec![1i64; images.dim()];
                shape[channel_dim] = mean.len() as i64;
                let opts = (images.kind(), images.device());
                let m = Tensor::from_slice(mean)
                    .to_kind(opts.0)
                    .to_device(opts.1)
                    .view(&shape[..]);
                let s = Tensor::from_slice(std)
                    .to_kind(opts.0)
                    .to_device(opts.1)
                    .view(&shape[..]);
                (images - m) / s
            }
            Transform::Compose(list) => list
                .iter()
                .fold(images.shallow_clone(), |acc, t| t.apply(&acc)),
        }
    }
}

impl Default for Transform {
    fn default() -> Self {
        Transform::Compose(vec![Transform::ToTensor])
    }
}
