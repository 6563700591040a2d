//! Layers initialised exactly as PyTorch's `nn.Linear` and `nn.Conv2d` initialise theirs, so
//! that `tch::manual_seed(32)` followed by a model gives the parameters `torch.manual_seed(32)`
//! followed by the same PyTorch model gives — bit for bit, on the CPU.
//!
//! tch's `nn::linear` and `nn::conv2d` draw differently: Kaiming-uniform with gain √2 (bounds
//! √6 times PyTorch's), a zero bias for convolutions, and the bias drawn *before* the weight.
//! PyTorch's `reset_parameters()` draws the weight first, with `kaiming_uniform_(a=√5)`, then
//! the bias, uniform in ±1/√fan_in. tch and PyTorch share libtorch and its CPU generator (a
//! Mersenne twister), so the same `uniform_` calls on tensors of the same sizes, in the same
//! order, give the same numbers. The bounds below are computed with the same double-precision
//! operations as `torch.nn.init` (`math.sqrt(2.0 / (1 + a**2))` and so on), so that even the
//! last bit of each bound — cast to `float` inside `uniform_` — agrees.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let vs = nn::VarStore::new(Device::Cpu);
//! tch::manual_seed(32);
//! let fc1 = torch_nn::linear(vs.root() / "fc1", 4, 8); // torch.manual_seed(32); nn.Linear(4, 8)
//! let bound = 1.0 / 2.0; // 1/√fan_in
//! assert!(fc1.ws.abs().max().double_value(&[]) <= bound);
//! ```

use std::borrow::Borrow;
use tch::Tensor;
use tch::nn::{self, Init};

/// `torch.nn.init._calculate_fan_in_and_fan_out(w)[0]`: input features times the receptive
/// field (the kernel's size for a convolution).
fn fan_in(w: &Tensor) -> i64 {
    let dims = w.size();
    dims.get(1).copied().unwrap_or(1) * dims.iter().skip(2).product::<i64>()
}

/// The bound of `kaiming_uniform_(w, a=math.sqrt(5))`, computed as `torch.nn.init` computes
/// it: `gain = math.sqrt(2.0 / (1 + a**2))`, `std = gain / math.sqrt(fan)`,
/// `bound = math.sqrt(3.0) * std`.
///
/// ```
/// use tchbook_prelude::torch_nn::kaiming_uniform_bound;
/// // PyTorch's comment: a=√5 gives the same bound as uniform(±1/√fan_in)
/// assert!((kaiming_uniform_bound(400) - 1.0 / 20.0).abs() < 1e-12);
/// ```
pub fn kaiming_uniform_bound(fan: i64) -> f64 {
    let a = 5f64.sqrt();
    // Python's `a**2` is C's pow(a, 2.0); Rust's powf is the same libm call.
    let gain = (2.0 / (1.0 + a.powf(2.0))).sqrt();
    let std = gain / (fan as f64).sqrt();
    3f64.sqrt() * std
}

/// The bound of PyTorch's bias initialisation, `1 / math.sqrt(fan_in)` (0 for `fan_in == 0`).
///
/// ```
/// assert_eq!(tchbook_prelude::torch_nn::bias_bound(4), 0.5);
/// ```
pub fn bias_bound(fan_in: i64) -> f64 {
    if fan_in > 0 {
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.0
    }
}

/// Redraws a layer's parameters as its PyTorch twin's `reset_parameters()` does: the weight
/// with `kaiming_uniform_(a=√5)`, then the bias uniform in ±1/√fan_in, from libtorch's global
/// generator. Implemented for `nn::Linear` and `nn::Conv2D` (any `nn::Conv`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let mut fc = torch_nn::linear(vs.root() / "fc", 120, 84);
/// tch::manual_seed(0);
/// fc.reset_parameters(); // fc.reset_parameters() in PyTorch, after torch.manual_seed(0)
/// # let _ = fc;
/// ```
pub trait ResetParameters {
    /// Redraws the parameters in place (without recording the change in autograd).
    fn reset_parameters(&mut self);
}

fn reset(ws: &mut Tensor, bs: Option<&mut Tensor>) {
    let fan = fan_in(ws);
    tch::no_grad(|| {
        let w = kaiming_uniform_bound(fan);
        let _ = ws.uniform_(-w, w);
        if let Some(bs) = bs {
            let b = bias_bound(fan);
            let _ = bs.uniform_(-b, b);
        }
    });
}

impl ResetParameters for nn::Linear {
    fn reset_parameters(&mut self) {
        reset(&mut self.ws, self.bs.as_mut());
    }
}

impl<ND> ResetParameters for nn::Conv<ND> {
    fn reset_parameters(&mut self) {
        reset(&mut self.ws, self.bs.as_mut());
    }
}

/// Initialisations that draw nothing from the generator: tch creates the variables with these,
/// then [`ResetParameters`] draws the values in PyTorch's order.
const NO_DRAW: Init = Init::Const(0.);

/// `nn.Linear(in_features, out_features)`: tch's `nn::Linear` with PyTorch's initialisation,
/// its parameters named `weight` and `bias` under `p`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let fc1 = torch_nn::linear(vs.root() / "fc1", 16 * 5 * 5, 120);
/// assert_eq!(fc1.ws.size(), [120, 400]);
/// assert!(vs.variables().contains_key("fc1.bias"));
/// ```
pub fn linear<'a, T: Borrow<nn::Path<'a>>>(
    p: T,
    in_features: i64,
    out_features: i64,
) -> nn::Linear {
    linear_with(p, in_features, out_features, true)
}

/// `nn.Linear(in_features, out_features, bias=bias)`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let proj = torch_nn::linear_with(vs.root() / "proj", 8, 8, false);
/// assert!(proj.bs.is_none());
/// ```
pub fn linear_with<'a, T: Borrow<nn::Path<'a>>>(
    p: T,
    in_features: i64,
    out_features: i64,
    bias: bool,
) -> nn::Linear {
    let config = nn::LinearConfig {
        ws_init: NO_DRAW,
        bs_init: Some(NO_DRAW),
        bias,
    };
    let mut layer = nn::linear(p, in_features, out_features, config);
    layer.reset_parameters();
    layer
}

/// `nn.Conv2d(in_channels, out_channels, kernel_size)`: stride 1, no padding, with bias, and
/// PyTorch's initialisation.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let conv1 = torch_nn::conv2d(vs.root() / "conv1", 3, 6, 5);
/// assert_eq!(conv1.ws.size(), [6, 3, 5, 5]);
/// ```
pub fn conv2d<'a, T: Borrow<nn::Path<'a>>>(
    p: T,
    in_channels: i64,
    out_channels: i64,
    kernel_size: i64,
) -> nn::Conv2D {
    conv2d_with(
        p,
        in_channels,
        out_channels,
        kernel_size,
        Default::default(),
    )
}

/// `nn.Conv2d(..., stride=, padding=, dilation=, groups=, bias=)` from tch's `ConvConfig`; its
/// `ws_init` and `bs_init` are ignored (PyTorch's initialisation is used).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let cfg = nn::ConvConfig { padding: 1, ..Default::default() };
/// let conv = torch_nn::conv2d_with(vs.root() / "conv", 3, 8, 3, cfg);
/// let y = conv.forward(&Tensor::zeros([1, 3, 32, 32], (Kind::Float, Device::Cpu)));
/// assert_eq!(y.size(), [1, 8, 32, 32]);
/// ```
pub fn conv2d_with<'a, T: Borrow<nn::Path<'a>>>(
    p: T,
    in_channels: i64,
    out_channels: i64,
    kernel_size: i64,
    config: nn::ConvConfig,
) -> nn::Conv2D {
    let config = nn::ConvConfig {
        ws_init: NO_DRAW,
        bs_init: NO_DRAW,
        ..config
    };
    let mut layer = nn::conv2d(p, in_channels, out_channels, kernel_size, config);
    layer.reset_parameters();
    layer
}
