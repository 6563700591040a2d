//! What a model holds, typed: [`ModuleTree`] names a module's children and describes a layer,
//! and [`ModuleNode`] is the answer that `model.repr()` prints as PyTorch's `print(model)`.
//!
//! Rust has no reflection, so a model says what it holds: `#[derive(ModuleTree)]` on a notebook's
//! own struct, an implementation for every tch layer the prelude prints (`tch_layers.rs`) and for
//! the containers (`Vec` and arrays are PyTorch's `ModuleList`; `Option`, `Box`, `Rc` and `Arc`
//! are what they hold). The derive asks each field's type through [`ModuleField`]: every
//! `ModuleTree` is one, and so are the values that hold no layers (numbers, flags, strings,
//! tensors, devices, and lists and options of them), which have no line, as PyTorch leaves out
//! attributes that are not modules. Any other type is neither, so a field of that type is a
//! compile error that says what to add, never a model printed without a layer it holds.
//!
//! Two traits, because the values that hold no layers must not have a `repr()` of a module:
//! tensors and devices have their own (`TensorDisplay`, `DeviceDisplay`).

use std::rc::Rc;
use std::sync::Arc;

/// A module's place in PyTorch's `print(model)`: the trait behind `model.repr()`
/// ([`ModuleDisplay`](super::ModuleDisplay)).
///
/// A notebook's model derives it beside `Debug`; each field is a child, in the order written,
/// and a field that holds no layers (a size, a flag, a tensor) has no line. A field of a type
/// that does not say what it holds (a closure, a struct of settings) is marked
/// `#[module(skip)]`; `#[module(name = "Model")]` on the struct prints another class name.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// #[derive(Debug, ModuleTree)]
/// struct Model {
///     fc1: nn::Linear,
///     heads: Vec<nn::Linear>,
///     dropout: f64,
/// }
/// let vs = nn::VarStore::new(Device::Cpu);
/// let p = vs.root();
/// let model = Model {
///     fc1: torch_nn::linear(&p / "fc1", 4, 8),
///     heads: vec![torch_nn::linear(&p / "h0", 8, 2)],
///     dropout: 0.5,
/// };
/// assert_eq!(
///     model.repr().to_string(),
///     "Model(
///   (fc1): Linear(in_features=4, out_features=8, bias=True)
///   (heads): ModuleList(
///     (0): Linear(in_features=8, out_features=2, bias=True)
///   )
/// )"
/// );
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say which layers it holds, so `repr()` cannot print it",
    label = "a model of the notebook's own needs `#[derive(Debug, ModuleTree)]`",
    note = "the prelude brings the derive into scope; a field of the model that holds no layers \
            (a closure, a struct of settings) is marked `#[module(skip)]`",
    note = "tch's `nn::seq()` keeps its layers where they cannot be read: use the prelude's `seq()`"
)]
pub trait ModuleTree {
    /// This value's node: a layer's line, a module with its children, or no layers.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let fc = torch_nn::linear(vs.root() / "fc", 4, 8);
    /// assert_eq!(
    ///     fc.module_tree(),
    ///     ModuleNode::Layer("Linear(in_features=4, out_features=8, bias=True)".into())
    /// );
    /// ```
    fn module_tree(&self) -> ModuleNode;
}

/// What [`ModuleTree::module_tree`] says of a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleNode {
    /// A layer, as the PyTorch layer it reproduces prints itself:
    /// `Linear(in_features=4, out_features=8, bias=True)`.
    Layer(String),
    /// A module: PyTorch's class name and its children, each with its name (a field's, or an
    /// index in a list), in order; children that hold no layers are not kept.
    Module {
        /// The class name printed: `Net`, `ModuleList`, `Sequential`.
        class: String,
        /// The children that hold layers, each with its name.
        children: Vec<(String, ModuleNode)>,
    },
    /// A value that holds no layers: it has no line.
    NoLayers,
}

impl ModuleNode {
    /// A module named `class` with the children that hold layers among `children`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let node = ModuleNode::module("Net", vec![("n", ModuleNode::NoLayers)]);
    /// assert_eq!(node, ModuleNode::Module { class: "Net".into(), children: vec![] });
    /// ```
    pub fn module(
        class: impl Into<String>,
        children: impl IntoIterator<Item = (impl Into<String>, ModuleNode)>,
    ) -> ModuleNode {
        ModuleNode::Module {
            class: class.into(),
            children: children
                .into_iter()
                .filter(|(_, child)| *child != ModuleNode::NoLayers)
                .map(|(name, child)| (name.into(), child))
                .collect(),
        }
    }

    /// PyTorch's `ModuleList` of `items`, named by index.
    fn list<'a, T: ModuleTree + 'a>(items: impl IntoIterator<Item = &'a T>) -> ModuleNode {
        let children = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| (i.to_string(), item.module_tree()));
        ModuleNode::module("ModuleList", children)
    }
}

/// What a field of a model holds: its [`ModuleTree`]'s node, or no layers for a value that
/// holds none (numbers, flags, strings, tensors, devices; a `Vec`, an array, an `Option` or a
/// `Box` of one of those). `#[derive(ModuleTree)]` asks it of every field not marked
/// `#[module(skip)]`.
///
/// ```
/// use tchbook_prelude::models::ModuleField;
/// use tchbook_prelude::prelude::*;
/// assert_eq!(vec![3_i64, 4].field_node(), ModuleNode::NoLayers);
/// assert_eq!(Tensor::zeros([2], (Kind::Float, Device::Cpu)).field_node(), ModuleNode::NoLayers);
/// ```
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` does not say whether it holds layers, so `repr()` cannot \
               print the model",
    label = "a struct of the notebook's own needs `#[derive(Debug, ModuleTree)]`, or the field \
             `#[module(skip)]`",
    note = "a struct of the notebook's own: add `ModuleTree` to its derives, \
            `#[derive(Debug, ModuleTree)]`",
    note = "a field that holds no layers (a closure, a struct of settings): mark it `#[module(skip)]`; \
            tch's `nn::seq()` keeps its layers where they cannot be read: use the prelude's `seq()`"
)]
pub trait ModuleField {
    /// This field's node ([`ModuleNode::NoLayers`] for a value that holds no layers).
    ///
    /// ```
    /// use tchbook_prelude::models::ModuleField;
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(0.5_f64.field_node(), ModuleNode::NoLayers);
    /// ```
    fn field_node(&self) -> ModuleNode;
}

impl<T: ModuleTree + ?Sized> ModuleField for T {
    fn field_node(&self) -> ModuleNode {
        self.module_tree()
    }
}

/// Values that hold no layers, and lists, options and boxes of them.
macro_rules! no_layers {
    ($($t:ty),* $(,)?) => {$(
        impl ModuleField for $t {
            fn field_node(&self) -> ModuleNode {
                ModuleNode::NoLayers
            }
        }
        impl ModuleField for Vec<$t> {
            fn field_node(&self) -> ModuleNode {
                ModuleNode::NoLayers
            }
        }
        impl<const N: usize> ModuleField for [$t; N] {
            fn field_node(&self) -> ModuleNode {
                ModuleNode::NoLayers
            }
        }
        impl ModuleField for Option<$t> {
            fn field_node(&self) -> ModuleNode {
                ModuleNode::NoLayers
            }
        }
        impl ModuleField for Box<$t> {
            fn field_node(&self) -> ModuleNode {
                ModuleNode::NoLayers
            }
        }
    )*};
}

// Braces keep this list on a few lines (rustfmt leaves brace-delimited macro calls alone).
no_layers! {
    bool, char, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64,
    String, &'static str, tch::Tensor, tch::Device, tch::Kind, std::time::Duration
}

impl<T: ?Sized> ModuleField for std::marker::PhantomData<T> {
    fn field_node(&self) -> ModuleNode {
        ModuleNode::NoLayers
    }
}

/// PyTorch's `nn.ModuleList`.
impl<T: ModuleTree> ModuleTree for Vec<T> {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::list(self)
    }
}

/// PyTorch's `nn.ModuleList`, of a fixed length.
impl<T: ModuleTree, const N: usize> ModuleTree for [T; N] {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::list(self)
    }
}

/// What it holds; `None` has no line, as PyTorch prints no line for a module set to `None`.
impl<T: ModuleTree> ModuleTree for Option<T> {
    fn module_tree(&self) -> ModuleNode {
        self.as_ref()
            .map_or(ModuleNode::NoLayers, ModuleTree::module_tree)
    }
}

/// Pointers are what they point at.
macro_rules! pointer {
    ($($p:ident),*) => {$(
        impl<T: ModuleTree + ?Sized> ModuleTree for $p<T> {
            fn module_tree(&self) -> ModuleNode {
                (**self).module_tree()
            }
        }
    )*};
}

pointer!(Box, Rc, Arc);

/// A borrowed module, as a model that holds a layer by reference (`struct Head<'a>`).
impl<T: ModuleTree + ?Sized> ModuleTree for &T {
    fn module_tree(&self) -> ModuleNode {
        (**self).module_tree()
    }
}
