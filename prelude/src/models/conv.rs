//! The tutorials' convolutional models: the CIFAR-10 `Net` and deeplizard's `Network`.

use super::layers::{conv, linear, model_display};
use super::tree::{ModuleNode, ModuleTree};
use tch::Tensor;
use tch::nn::{self, Module};

/// The CIFAR-10 `Net` of the PyTorch tutorial: conv1 3→6 (5×5), max-pool, conv2 6→16 (5×5),
/// max-pool, fc1 400→120, fc2 120→84, fc3 84→10.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let net = Net::new(&vs.root());
/// println!("{}", net.repr()); // print(net)
/// ```
#[derive(Debug)]
pub struct Net {
    /// Conv2d(3, 6, 5).
    pub conv1: nn::Conv2D,
    /// Conv2d(6, 16, 5).
    pub conv2: nn::Conv2D,
    /// Linear(400, 120).
    pub fc1: nn::Linear,
    /// Linear(120, 84).
    pub fc2: nn::Linear,
    /// Linear(84, 10).
    pub fc3: nn::Linear,
}

impl Net {
    /// Creates the layers under `p`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let net = Net::new(&vs.root());
    /// # let _ = net;
    /// ```
    pub fn new(p: &nn::Path) -> Self {
        Net {
            conv1: conv(p, "conv1", 3, 6, 5),
            conv2: conv(p, "conv2", 6, 16, 5),
            fc1: linear(p, "fc1", 16 * 5 * 5, 120),
            fc2: linear(p, "fc2", 120, 84),
            fc3: linear(p, "fc3", 84, 10),
        }
    }
}

/// PyTorch's `print(net)`, with the tutorial's `pool` line (its `MaxPool2d` is an attribute of
/// the Python `Net`; here it is a function call in `forward`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let text = Net::new(&vs.root()).repr().to_string();
/// assert!(text.contains("(fc3): Linear(in_features=84, out_features=10, bias=True)"));
/// ```
impl ModuleTree for Net {
    fn module_tree(&self) -> ModuleNode {
        let pool = "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)";
        ModuleNode::module(
            "Net",
            [
                ("conv1", self.conv1.module_tree()),
                ("pool", ModuleNode::Layer(pool.into())),
                ("conv2", self.conv2.module_tree()),
                ("fc1", self.fc1.module_tree()),
                ("fc2", self.fc2.module_tree()),
                ("fc3", self.fc3.module_tree()),
            ],
        )
    }
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x.apply(&self.conv1).relu().max_pool2d_default(2);
        let x = x.apply(&self.conv2).relu().max_pool2d_default(2);
        x.view([-1, 16 * 5 * 5])
            .apply(&self.fc1)
            .relu()
            .apply(&self.fc2)
            .relu()
            .apply(&self.fc3)
    }
}

model_display!(Net);

/// deeplizard's Fashion-MNIST `Network`: conv1 1→6 (5×5), conv2 6→12 (5×5), fc1 192→120,
/// fc2 120→60, out 60→10, with ReLU and 2×2 max-pooling after each convolution.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let network = Network::new(&vs.root());
/// let pred = network.forward(&Tensor::ones([1, 1, 28, 28], (Kind::Float, Device::Cpu)));
/// assert_eq!(pred.size(), [1, 10]);
/// ```
#[derive(Debug)]
pub struct Network {
    /// Conv2d(1, 6, 5).
    pub conv1: nn::Conv2D,
    /// Conv2d(6, 12, 5).
    pub conv2: nn::Conv2D,
    /// Linear(192, 120).
    pub fc1: nn::Linear,
    /// Linear(120, 60).
    pub fc2: nn::Linear,
    /// Linear(60, 10).
    pub out: nn::Linear,
}

impl Network {
    /// Creates the layers under `p`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let network = Network::new(&vs.root());
    /// # let _ = network;
    /// ```
    pub fn new(p: &nn::Path) -> Self {
        Network {
            conv1: conv(p, "conv1", 1, 6, 5),
            conv2: conv(p, "conv2", 6, 12, 5),
            fc1: linear(p, "fc1", 12 * 4 * 4, 120),
            fc2: linear(p, "fc2", 120, 60),
            out: linear(p, "out", 60, 10),
        }
    }
}

/// PyTorch's `print(network)`, as the deeplizard episode shows it.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// assert!(Network::new(&vs.root()).repr().to_string().starts_with("Network("));
/// ```
impl ModuleTree for Network {
    fn module_tree(&self) -> ModuleNode {
        ModuleNode::module(
            "Network",
            [
                ("conv1", self.conv1.module_tree()),
                ("conv2", self.conv2.module_tree()),
                ("fc1", self.fc1.module_tree()),
                ("fc2", self.fc2.module_tree()),
                ("out", self.out.module_tree()),
            ],
        )
    }
}

impl Module for Network {
    fn forward(&self, t: &Tensor) -> Tensor {
        let t = t.apply(&self.conv1).relu().max_pool2d_default(2);
        let t = t.apply(&self.conv2).relu().max_pool2d_default(2);
        t.reshape([-1, 12 * 4 * 4])
            .apply(&self.fc1)
            .relu()
            .apply(&self.fc2)
            .relu()
            .apply(&self.out)
    }
}

model_display!(Network);
