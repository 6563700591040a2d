//! PyTorch's `print(model)` for any model, a cell's own included: `model.repr()` lists the
//! model's layers as PyTorch's module repr does,
//!
//! ```text
//! Net(
//!   (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))
//!   (fc1): Linear(in_features=400, out_features=120, bias=True)
//! )
//! ```
//!
//! from the model's [`ModuleTree`] (`tree.rs`): a child that is a layer is a line, a child with
//! children of its own is a nested module, indented as PyTorch's `_addindent` does.
//! Parameter-free steps written as function calls in `forward` (`relu`, `max_pool2d`) are no
//! fields, so they have no line, where a PyTorch model that keeps them as attributes has one.

use super::tree::{ModuleNode, ModuleTree};
use crate::display::{Bundle, Render, rich};
use crate::sys::escape_html;
use std::fmt::{self, Debug};

/// A model printed as PyTorch prints it; see [`ModuleDisplay::repr`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let layer = torch_nn::linear(vs.root() / "fc", 4, 8);
/// assert_eq!(layer.repr().to_string(), "Linear(in_features=4, out_features=8, bias=True)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ModuleRepr(String);

impl Render for ModuleRepr {
    fn bundle(&self) -> Bundle {
        Bundle::text(self.0.clone()).with_html(format!("<pre>{}</pre>", escape_html(&self.0)))
    }
}
rich!(ModuleRepr);

impl Debug for ModuleRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `print(model)` for every value that says which layers it holds ([`ModuleTree`]): tch's
/// layers, the prelude's models, and a model defined in a cell that derives `ModuleTree`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// #[derive(Debug, ModuleTree)]
/// struct Model {
///     fc1: nn::Linear,
///     out: nn::Linear,
/// }
/// impl nn::Module for Model {
///     fn forward(&self, x: &Tensor) -> Tensor {
///         x.apply(&self.fc1).relu().apply(&self.out)
///     }
/// }
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = Model {
///     fc1: torch_nn::linear(vs.root() / "fc1", 4, 8),
///     out: torch_nn::linear(vs.root() / "out", 8, 3),
/// };
/// assert_eq!(
///     model.repr().to_string(),
///     "Model(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n  \
///      (out): Linear(in_features=8, out_features=3, bias=True)\n)"
/// );
/// ```
///
/// A struct without `ModuleTree` does not compile, and the error says what to add:
///
/// ```compile_fail
/// use tchbook_prelude::prelude::*;
/// #[derive(Debug)]
/// struct Model {
///     fc1: nn::Linear,
/// }
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = Model { fc1: torch_nn::linear(vs.root() / "fc1", 4, 8) };
/// model.repr(); // `Model` does not say which layers it holds: add `#[derive(Debug, ModuleTree)]`
/// ```
pub trait ModuleDisplay {
    /// PyTorch's repr of the module: `println!("{}", model.repr())` is `print(model)`.
    fn repr(&self) -> ModuleRepr;
}

impl<T: ModuleTree + ?Sized> ModuleDisplay for T {
    fn repr(&self) -> ModuleRepr {
        ModuleRepr(match self.module_tree() {
            ModuleNode::NoLayers => String::new(),
            node => render(&node),
        })
    }
}

/// A node's text: a layer's line, or a module with its children.
pub(super) fn render(node: &ModuleNode) -> String {
    match node {
        ModuleNode::Layer(line) => line.clone(),
        ModuleNode::Module { class, children } => {
            let children: Vec<(&str, String)> = children
                .iter()
                .map(|(name, child)| (name.as_str(), render(child)))
                .collect();
            module_repr(class, &children)
        }
        ModuleNode::NoLayers => String::new(),
    }
}

/// PyTorch's module repr from each child's `(name, repr)`: a child of several lines is
/// indented as PyTorch's `_addindent` does.
fn module_repr(class: &str, children: &[(&str, String)]) -> String {
    if children.is_empty() {
        return format!("{class}()");
    }
    let mut s = format!("{class}(\n");
    for (name, child) in children {
        s.push_str(&format!("  ({name}): {}\n", child.replace('\n', "\n  ")));
    }
    s.push(')');
    s
}
