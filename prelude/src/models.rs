//! The tutorials' models, with the parameter names of the PyTorch originals (`conv1.weight`,
//! `fc1.bias`, …) so state dicts move between the two, and safetensors save/load that
//! `safetensors.torch.load_file` + `load_state_dict` read (and write) unchanged.
//!
//! Each model initialises its layers as the PyTorch original does ([`crate::torch_nn`]): after
//! `tch::manual_seed(s)` its parameters equal those of the PyTorch model built after
//! `torch.manual_seed(s)` on the CPU, bit for bit (`prelude/tests/parity.rs` checks it).
//!
//! Build a model on a var store's root, as tch does:
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let vs = nn::VarStore::new(Device::Cpu);
//! let net = Net::new(&vs.root());
//! let out = net.forward(&Tensor::zeros([4, 3, 32, 32], (Kind::Float, Device::Cpu)));
//! assert_eq!(out.size(), [4, 10]);
//! ```

use crate::device::TorchError;
use crate::display::{Bundle, Render, rich};
use crate::torch_nn;
use std::path::Path;
use tch::Tensor;
use tch::nn::{self, Module, VarStore};

// Every layer is made as PyTorch's nn.Linear / nn.Conv2d make theirs (weight, then bias, with
// PyTorch's bounds), in the order the tutorial's __init__ creates them: after the same
// manual_seed, a model here starts from the PyTorch model's parameters, bit for bit.
fn linear(p: &nn::Path, name: &str, i: i64, o: i64) -> nn::Linear {
    torch_nn::linear(p / name, i, o)
}

fn conv(p: &nn::Path, name: &str, i: i64, o: i64, k: i64) -> nn::Conv2D {
    torch_nn::conv2d(p / name, i, o, k)
}

/// PyTorch's module repr for a list of `(name, layer description)`.
fn module_repr(class: &str, layers: &[(&str, String)]) -> String {
    let mut s = format!("{class}(\n");
    for (name, layer) in layers {
        s.push_str(&format!("  ({name}): {layer}\n"));
    }
    s.push(')');
    s
}

fn linear_repr(i: i64, o: i64) -> String {
    format!("Linear(in_features={i}, out_features={o}, bias=True)")
}

fn conv_repr(i: i64, o: i64, k: i64) -> String {
    format!("Conv2d({i}, {o}, kernel_size=({k}, {k}), stride=(1, 1))")
}

macro_rules! model_display {
    ($t:ty) => {
        impl Render for $t {
            fn bundle(&self) -> Bundle {
                let text = self.repr();
                let html = format!("<pre>{}</pre>", crate::sys::escape_html(&text));
                Bundle::text(text).with_html(html)
            }
        }
        rich!($t);
    };
}

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

    /// PyTorch's `print(model)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// println!("{}", TestModel::new(&vs.root()).repr());
    /// ```
    pub fn repr(&self) -> String {
        module_repr(
            "testModel",
            &[
                ("layer1", linear_repr(10, 5)),
                ("layer2", linear_repr(5, 1)),
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
    in_dim: i64,
    hidden_dim: i64,
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
            in_dim,
            hidden_dim,
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

    /// PyTorch's `print(model)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// assert!(ClassifierMlp::new(&vs.root(), 4, 16, 3).repr().starts_with("Classifier_MLP("));
    /// ```
    pub fn repr(&self) -> String {
        module_repr(
            "Classifier_MLP",
            &[
                ("h1", linear_repr(self.in_dim, self.hidden_dim)),
                ("h2", linear_repr(self.hidden_dim, self.hidden_dim)),
                ("out", linear_repr(self.hidden_dim, self.out_dim)),
            ],
        )
    }
}

model_display!(ClassifierMlp);

/// The CIFAR-10 `Net` of the PyTorch tutorial: conv1 3→6 (5×5), max-pool, conv2 6→16 (5×5),
/// max-pool, fc1 400→120, fc2 120→84, fc3 84→10.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let net = Net::new(&vs.root());
/// println!("{}", net.repr());
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

    /// PyTorch's `print(net)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// assert!(Net::new(&vs.root()).repr().contains("(fc3): Linear(in_features=84, out_features=10, bias=True)"));
    /// ```
    pub fn repr(&self) -> String {
        module_repr(
            "Net",
            &[
                ("conv1", conv_repr(3, 6, 5)),
                (
                    "pool",
                    "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
                        .into(),
                ),
                ("conv2", conv_repr(6, 16, 5)),
                ("fc1", linear_repr(400, 120)),
                ("fc2", linear_repr(120, 84)),
                ("fc3", linear_repr(84, 10)),
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

    /// PyTorch's `print(network)`, as the deeplizard episode shows it.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// assert!(Network::new(&vs.root()).repr().starts_with("Network("));
    /// ```
    pub fn repr(&self) -> String {
        module_repr(
            "Network",
            &[
                ("conv1", conv_repr(1, 6, 5)),
                ("conv2", conv_repr(6, 12, 5)),
                (
                    "fc1",
                    "Linear(in_features=192, out_features=120, bias=True)".into(),
                ),
                ("fc2", linear_repr(120, 60)),
                ("out", linear_repr(60, 10)),
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
    sizes: [i64; 4],
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
            sizes: [in_features, h1, h2, out_features],
        }
    }

    /// PyTorch's `print(model)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// assert!(IrisModel::new(&vs.root()).repr().contains("(out): Linear(in_features=9, out_features=3, bias=True)"));
    /// ```
    pub fn repr(&self) -> String {
        let [i, a, b, o] = self.sizes;
        module_repr(
            "Model",
            &[
                ("fc1", linear_repr(i, a)),
                ("fc2", linear_repr(a, b)),
                ("out", linear_repr(b, o)),
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

/// Why a state dict could not be saved or loaded.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let mut other = nn::VarStore::new(Device::Cpu);
/// let _small = TestModel::new(&other.root());
/// let path = std::env::temp_dir().join(format!("sd-doc-{}.safetensors", std::process::id()));
/// save_state_dict(&vs, &path);
/// let e = tchbook_prelude::models::f_load_state_dict(&mut other, &path).unwrap_err();
/// assert!(e.to_string().contains("Missing key(s)"));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub enum StateDictError {
    /// Reading or writing the file failed (tch's message, one line).
    File(String),
    /// The file lacks parameters the model has, or has ones it lacks (PyTorch's strict load).
    Mismatch {
        /// In the model, not in the file.
        missing: Vec<String>,
        /// In the file, not in the model.
        unexpected: Vec<String>,
    },
    /// A parameter's shape differs between file and model.
    Shape {
        /// The parameter.
        name: String,
        /// Shape in the file.
        file: Vec<i64>,
        /// Shape in the model.
        model: Vec<i64>,
    },
}

impl std::fmt::Display for StateDictError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateDictError::File(m) => f.write_str(m),
            StateDictError::Mismatch {
                missing,
                unexpected,
            } => write!(
                f,
                "Error(s) in loading state_dict: Missing key(s): {missing:?}. Unexpected key(s): {unexpected:?}."
            ),
            StateDictError::Shape { name, file, model } => write!(
                f,
                "size mismatch for {name}: copying a param with shape {file:?} from checkpoint, the shape in current model is {model:?}."
            ),
        }
    }
}

impl std::error::Error for StateDictError {}

/// The fallible twin of [`save_state_dict`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// if let Err(e) = tchbook_prelude::models::f_save_state_dict(&vs, "/nonexistent/cifar_net.safetensors") {
///     println!("{e}");
/// }
/// ```
pub fn f_save_state_dict(vs: &VarStore, path: impl AsRef<Path>) -> Result<(), StateDictError> {
    let named: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| (n, t.detach().to_device(tch::Device::Cpu).contiguous()))
        .collect();
    let refs: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Tensor::write_safetensors(&refs, path.as_ref())
        .map_err(|e| StateDictError::File(TorchError::from(e).to_string()))
}

/// `torch.save(net.state_dict(), PATH)` as safetensors: every variable under its PyTorch name,
/// on the CPU, loadable in Python with
/// `net.load_state_dict(safetensors.torch.load_file(PATH))`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let path = std::env::temp_dir().join(format!("cifar_net-{}.safetensors", std::process::id()));
/// save_state_dict(&vs, &path);
/// let mut vs2 = nn::VarStore::new(Device::Cpu);
/// let _net2 = Net::new(&vs2.root());
/// load_state_dict(&mut vs2, &path);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_state_dict(vs: &VarStore, path: impl AsRef<Path>) {
    f_save_state_dict(vs, path).unwrap_or_else(|e| panic!("{e}"))
}

/// The fallible twin of [`load_state_dict`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let e = tchbook_prelude::models::f_load_state_dict(&mut vs, "missing.safetensors").unwrap_err();
/// assert!(e.to_string().contains("missing.safetensors"));
/// ```
pub fn f_load_state_dict(vs: &mut VarStore, path: impl AsRef<Path>) -> Result<(), StateDictError> {
    let path = path.as_ref();
    let file: std::collections::HashMap<String, Tensor> = Tensor::read_safetensors(path)
        .map_err(|e| StateDictError::File(format!("{}: {}", path.display(), TorchError::from(e))))?
        .into_iter()
        .collect();
    let vars = vs.variables();
    let mut missing: Vec<String> = vars
        .keys()
        .filter(|k| !file.contains_key(*k))
        .cloned()
        .collect();
    let mut unexpected: Vec<String> = file
        .keys()
        .filter(|k| !vars.contains_key(*k))
        .cloned()
        .collect();
    if !missing.is_empty() || !unexpected.is_empty() {
        missing.sort();
        unexpected.sort();
        return Err(StateDictError::Mismatch {
            missing,
            unexpected,
        });
    }
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    for name in names {
        let (src, var) = (&file[name], &vars[name]);
        if src.size() != var.size() {
            return Err(StateDictError::Shape {
                name: name.clone(),
                file: src.size(),
                model: var.size(),
            });
        }
    }
    tch::no_grad(|| {
        for (name, var) in vars {
            let mut var = var;
            var.copy_(&file[&name].to_kind(var.kind()).to_device(var.device()));
        }
    });
    Ok(())
}

/// `net.load_state_dict(torch.load(PATH))` from safetensors (strict: names and shapes must
/// match, as PyTorch's default). Values are copied into the existing variables, on whatever
/// device the model lives.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let net = Net::new(&vs.root());
/// load_state_dict(&mut vs, "cifar_net.safetensors");
/// # let _ = net;
/// ```
pub fn load_state_dict(vs: &mut VarStore, path: impl AsRef<Path>) {
    f_load_state_dict(vs, path).unwrap_or_else(|e| panic!("{e}"))
}
