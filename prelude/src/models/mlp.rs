//! The tutorials' fully connected models: `testModel`, `Classifier_MLP`, the Iris model.

use super::layers::{linear, model_display};
use super::tree::{ModuleNode, ModuleTree};
use tch::Tensor;
use tch::nn::{self, Module};

/// The two-layer `testModel` of the "CPU / CUDA / MPS" tutorial: `layer1` Linear(10, 5), ReLU,
/// `layer2` Linear(5, 1).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = TestModel::new(&vs.root());
/// println!("{}", device_name(model.layer1.ws.device())); // model.layer1.weight.device
/// assert_eq!(model.forward(&Tensor::zeros([2, 10], (Kind::Float, Device::Cpu))).size(), [2, 1]);
/// ```
#[derive(Debug)]
pub struct TestModel {
    /// Linear(10, 5).
    pub layer1: nn::Linear,
    /// Linear(5, 1).
    pub layer2: nn::Linear,
}

impl TestModel {
    /// Creates the layers under `p`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let model = TestModel::new(&vs.root());
    /// # let _ = model;
    /// ```
    pub fn new(p: &nn::Path) -> Self {
        TestModel {
            layer1: linear(p, "layer1", 10, 5),
            layer2: linear(p, "layer2", 5, 1),
        }
    }
}

/// PyTorch's `print(model)`, with the tutorial's class name, `testModel`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// println!("{}", TestModel::new(&vs.root()).repr());
/// ```
impl ModuleTree for TestModel {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::module(
            "testModel",
            [
                ("layer1", self.layer1.module_tree()),
                ("layer2", self.layer2.module_tree()),
            ],
        )
    }
}

impl Module for TestModel {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.apply(&self.layer1).relu().apply(&self.layer2)
    }
}

model_display!(TestModel);

/// `Classifier_MLP(in_dim, hidden_dim, out_dim)` of the "Using the GPU" lesson: two hidden
/// layers `h1`, `h2` with ReLU and an output layer `out`; `forward` returns the logits and the
/// softmax probabilities, as `pred, prob = model(x)`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = ClassifierMlp::new(&vs.root(), 4, 16, 3);
/// let (pred, prob) = model.forward(&Tensor::zeros([5, 4], (Kind::Float, Device::Cpu)));
/// assert_eq!(pred.size(), [5, 3]);
/// assert!((prob.sum(Kind::Float).double_value(&[]) - 5.0).abs() < 1e-5);
/// ```
#[derive(Debug)]
pub struct ClassifierMlp {
    /// Linear(in_dim, hidden_dim).
    pub h1: nn::Linear,
    /// Linear(hidden_dim, hidden_dim).
    pub h2: nn::Linear,
    /// Linear(hidden_dim, out_dim).
    pub out: nn::Linear,
    /// Number of classes.
    pub out_dim: i64,
}

impl ClassifierMlp {
    /// Creates the layers under `p`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let model = ClassifierMlp::new(&vs.root(), 4, 16, 3);
    /// assert_eq!(model.out_dim, 3);
    /// ```
    pub fn new(p: &nn::Path, in_dim: i64, hidden_dim: i64, out_dim: i64) -> Self {
        ClassifierMlp {
            h1: linear(p, "h1", in_dim, hidden_dim),
            h2: linear(p, "h2", hidden_dim, hidden_dim),
            out: linear(p, "out", hidden_dim, out_dim),
            out_dim,
        }
    }

    /// `pred, prob = model(x)`: logits and `softmax(logits, dim=1)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let model = ClassifierMlp::new(&vs.root(), 4, 16, 3);
    /// let (pred, prob) = model.forward(&Tensor::zeros([2, 4], (Kind::Float, Device::Cpu)));
    /// assert_eq!(pred.size(), prob.size());
    /// ```
    pub fn forward(&self, x: &Tensor) -> (Tensor, Tensor) {
        let logits = x
            .apply(&self.h1)
            .relu()
            .apply(&self.h2)
            .relu()
            .apply(&self.out);
        let prob = logits.softmax(1, logits.kind());
        (logits, prob)
    }
}

/// PyTorch's `print(model)`, with the lesson's class name, `Classifier_MLP`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let text = ClassifierMlp::new(&vs.root(), 4, 16, 3).repr().to_string();
/// assert!(text.starts_with("Classifier_MLP("));
/// ```
impl ModuleTree for ClassifierMlp {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::module(
            "Classifier_MLP",
            [
                ("h1", self.h1.module_tree()),
                ("h2", self.h2.module_tree()),
                ("out", self.out.module_tree()),
            ],
        )
    }
}

model_display!(ClassifierMlp);

/// The BootCamp's Iris `Model(in_features=4, h1=8, h2=9, out_features=3)`: fc1, fc2 with ReLU,
/// and `out`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = IrisModel::new(&vs.root());
/// assert_eq!(model.forward(&Tensor::zeros([7, 4], (Kind::Float, Device::Cpu))).size(), [7, 3]);
/// ```
#[derive(Debug)]
pub struct IrisModel {
    /// Linear(in_features, h1).
    pub fc1: nn::Linear,
    /// Linear(h1, h2).
    pub fc2: nn::Linear,
    /// Linear(h2, out_features).
    pub out: nn::Linear,
}

impl IrisModel {
    /// `Model()` with the tutorial's defaults 4 → 8 → 9 → 3.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// tch::manual_seed(32);
    /// let model = IrisModel::new(&vs.root());
    /// # let _ = model;
    /// ```
    pub fn new(p: &nn::Path) -> Self {
        Self::with_sizes(p, 4, 8, 9, 3)
    }

    /// `Model(in_features, h1, h2, out_features)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let model = IrisModel::with_sizes(&vs.root(), 4, 16, 16, 3);
    /// # let _ = model;
    /// ```
    pub fn with_sizes(p: &nn::Path, in_features: i64, h1: i64, h2: i64, out_features: i64) -> Self {
        IrisModel {
            fc1: linear(p, "fc1", in_features, h1),
            fc2: linear(p, "fc2", h1, h2),
            out: linear(p, "out", h2, out_features),
        }
    }
}

/// PyTorch's `print(model)`, with the lesson's class name, `Model`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let text = IrisModel::new(&vs.root()).repr().to_string();
/// assert!(text.contains("(out): Linear(in_features=9, out_features=3, bias=True)"));
/// ```
impl ModuleTree for IrisModel {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::module(
            "Model",
            [
                ("fc1", self.fc1.module_tree()),
                ("fc2", self.fc2.module_tree()),
                ("out", self.out.module_tree()),
            ],
        )
    }
}

impl Module for IrisModel {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.apply(&self.fc1)
            .relu()
            .apply(&self.fc2)
            .relu()
            .apply(&self.out)
    }
}

model_display!(IrisModel);
