//! What every model here shares: layers made as PyTorch makes them, and PyTorch's module repr
//! as the models' display.

use super::repr::ModuleDisplay;
use super::tree::ModuleTree;
use crate::display::Bundle;
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

/// A model's display: its repr, as text and as a `<pre>` block.
pub(super) fn model_bundle(model: &impl ModuleTree) -> Bundle {
    let text = model.repr().to_string();
    let html = format!("<pre>{}</pre>", crate::sys::escape_html(&text));
    Bundle::text(text).with_html(html)
}

macro_rules! model_display {
    ($t:ty) => {
        impl $crate::display::Render for $t {
            fn bundle(&self) -> $crate::display::Bundle {
                super::layers::model_bundle(self)
            }
        }
        $crate::display::rich!($t);
    };
}
pub(super) use model_display;
