//! What every model here shares: layers made as PyTorch makes them, and PyTorch's module repr
//! as the models' display.

use crate::torch_nn;
use tch::nn;

// Every layer is made as PyTorch's nn.Linear / nn.Conv2d make theirs (weight, then bias, with
// PyTorch's bounds), in the order the tutorial's __init__ creates them: after the same
// manual_seed, a model here starts from the PyTorch model's parameters, bit for bit.
pub(super) fn linear(p: &nn::Path, name: &str, i: i64, o: i64) -> nn::Linear {
    torch_nn::linear(p / name, i, o)
}

pub(super) fn conv(p: &nn::Path, name: &str, i: i64, o: i64, k: i64) -> nn::Conv2D {
    torch_nn::conv2d(p / name, i, o, k)
}

pub(super) use super::repr::module_repr;

pub(super) fn linear_repr(i: i64, o: i64) -> String {
    super::repr::linear_repr(i, o, true)
}

pub(super) fn conv_repr(i: i64, o: i64, k: i64) -> String {
    super::repr::Conv::square(i, o, k).to_string()
}

macro_rules! model_display {
    ($t:ty) => {
        impl $crate::display::Render for $t {
            fn bundle(&self) -> $crate::display::Bundle {
                let text = self.repr();
                let html = format!("<pre>{}</pre>", $crate::sys::escape_html(&text));
                $crate::display::Bundle::text(text).with_html(html)
            }
        }
        $crate::display::rich!($t);
    };
}
pub(super) use model_display;
