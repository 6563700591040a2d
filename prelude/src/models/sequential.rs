//! PyTorch's `nn.Sequential` with a tree: tch's `nn::seq()` keeps its layers as
//! `Box<dyn Module>`, whose only view is their `Debug` text, so `repr()` cannot list them; this
//! one keeps each layer's [`ModuleTree`] beside its `Module`.

use super::tree::{ModuleNode, ModuleTree};
use std::fmt;
use tch::Tensor;
use tch::nn::Module;

/// A layer of a [`Sequential`]: a tch module that says what it holds.
trait Layer: Module + ModuleTree {}

impl<T: Module + ModuleTree> Layer for T {}

/// Layers applied in order, as PyTorch's `nn.Sequential`; built with [`seq`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = seq()
///     .add(torch_nn::linear(vs.root() / "0", 4, 16)) // nn.Linear(4, 16)
///     .add_fn(|x| x.relu())                          // nn.ReLU(), a function here
///     .add(torch_nn::linear(vs.root() / "2", 16, 3));
/// assert_eq!(model.forward(&Tensor::zeros([5, 4], (Kind::Float, Device::Cpu))).size(), [5, 3]);
/// assert_eq!(
///     model.repr().to_string(),
///     "Sequential(
///   (0): Linear(in_features=4, out_features=16, bias=True)
///   (2): Linear(in_features=16, out_features=3, bias=True)
/// )"
/// );
/// ```
#[derive(Debug, Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Layer>>,
}

/// An empty [`Sequential`], as tch's `nn::seq()`, whose layers `repr()` lists.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let model = seq().add_fn(|x| x * 2);
/// assert_eq!(model.len(), 1);
/// ```
pub fn seq() -> Sequential {
    Sequential::default()
}

impl Sequential {
    /// Appends a layer.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let model = seq().add(torch_nn::linear(vs.root() / "0", 4, 2));
    /// assert_eq!(model.len(), 1);
    /// ```
    #[expect(
        clippy::should_implement_trait,
        reason = "the name of tch's `nn::seq().add(layer)`, which this mirrors"
    )]
    pub fn add<M: Module + ModuleTree + 'static>(mut self, layer: M) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Appends a function of the tensor (`relu`, a reshape): it counts in the indices, as
    /// PyTorch's `nn.ReLU()` does, and has no line.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let model = seq().add_fn(|x| x.relu());
    /// assert_eq!(model.repr().to_string(), "Sequential()");
    /// ```
    pub fn add_fn<F: Fn(&Tensor) -> Tensor + Send + 'static>(self, f: F) -> Self {
        self.add(Func(Box::new(f)))
    }

    /// How many layers and functions it holds.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(seq().is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether it holds nothing.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(seq().len(), 0);
    /// ```
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl Module for Sequential {
    fn forward(&self, xs: &Tensor) -> Tensor {
        match self.layers.split_first() {
            None => xs.shallow_clone(),
            Some((first, rest)) => rest.iter().fold(first.forward(xs), |x, l| l.forward(&x)),
        }
    }
}

impl ModuleTree for Sequential {
    fn module_tree(&self) -> ModuleNode {
        let children = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, layer)| (i.to_string(), layer.module_tree()));
        ModuleNode::module("Sequential", children)
    }
}

/// A function added with [`Sequential::add_fn`].
struct Func(Box<dyn Fn(&Tensor) -> Tensor + Send>);

impl fmt::Debug for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("func")
    }
}

impl Module for Func {
    fn forward(&self, xs: &Tensor) -> Tensor {
        (self.0)(xs)
    }
}

impl ModuleTree for Func {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::NoLayers
    }
}
