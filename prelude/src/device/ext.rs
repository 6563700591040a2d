//! PyTorch's device methods on tensors and models that tch lacks (`t.cuda()`,
//! `model.named_parameters()`, ...).

use crate::cuda;
use crate::display::{Bundle, Render, html_table, kind_name, rich, text_table};
use crate::torch_error::{TorchError, quietly};
use tch::{Device, Tensor, nn::VarStore};

/// PyTorch's tensor device methods that tch lacks: `t.cuda()`, `t.cpu()`, `t.is_cuda()`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let t = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// assert!(!t.is_cuda());
/// assert_eq!(t.cpu().device(), Device::Cpu);
/// if !cuda::is_available() {
///     assert!(t.f_cuda().is_err());
/// }
/// ```
pub trait TensorDevice {
    /// `t.cuda()`: a copy on `cuda:0` (panics without CUDA; see `f_cuda`).
    fn cuda(&self) -> Tensor;
    /// The fallible twin of `cuda`.
    fn f_cuda(&self) -> Result<Tensor, TorchError>;
    /// `t.cpu()`: a copy on the CPU (the same tensor if already there).
    fn cpu(&self) -> Tensor;
    /// `t.is_cuda`.
    fn is_cuda(&self) -> bool;
}

fn no_cuda_error() -> TorchError {
    // With a driver, CUDA should have worked: the reason is what the user needs to fix it.
    let why = match cuda::unavailable_reason() {
        Some(why) if crate::backend::nvidia_driver_present() => why,
        _ => "no CUDA device is present or libtorch has no CUDA support".into(),
    };
    TorchError(format!(
        "CUDA is not available: {why}; use best_device() to fall back to the CPU"
    ))
}

impl TensorDevice for Tensor {
    fn cuda(&self) -> Tensor {
        self.f_cuda().unwrap_or_else(|e| panic!("{e}"))
    }
    fn f_cuda(&self) -> Result<Tensor, TorchError> {
        if !cuda::is_available() {
            return Err(no_cuda_error());
        }
        Ok(self.f_to_device(Device::Cuda(0))?)
    }
    fn cpu(&self) -> Tensor {
        self.to_device(Device::Cpu)
    }
    fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }
}

/// Module-level helpers PyTorch has on `nn.Module` and tch lacks, for a model's [`VarStore`]:
/// `named_parameters`, `is_cuda`, `cuda`, `cpu`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let _model = TestModel::new(&vs.root());
/// assert_eq!(vs.named_parameters().names(), ["layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias"]);
/// assert!(!vs.is_cuda());
/// vs.cpu(); // model.cpu()
/// ```
pub trait VarStoreExt {
    /// `model.named_parameters()`: names and tensors in the order the model created them;
    /// displays as a table of name, shape, dtype, device.
    fn named_parameters(&self) -> NamedParameters;
    /// `next(model.parameters()).is_cuda`: whether the parameters live on a CUDA device.
    fn is_cuda(&self) -> bool;
    /// `model.cuda()`: moves every variable to `cuda:0` (panics without CUDA; see `f_cuda`).
    fn cuda(&mut self);
    /// The fallible twin of `cuda`.
    fn f_cuda(&mut self) -> Result<(), TorchError>;
    /// `model.cpu()`: moves every variable to the CPU.
    fn cpu(&mut self);
    /// Number of trainable scalars (`sum(p.numel() for p in model.parameters())`).
    fn num_parameters(&self) -> i64;
}

/// `model.named_parameters()` as a free function: `named_parameters(&vs)`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Network::new(&vs.root());
/// for (name, param) in named_parameters(&vs).iter() {
///     println!("{name}\t\t{:?}", param.size());
/// }
/// ```
pub fn named_parameters(vs: &VarStore) -> NamedParameters {
    vs.named_parameters()
}

impl VarStoreExt for VarStore {
    fn named_parameters(&self) -> NamedParameters {
        let mut named: Vec<(String, Tensor)> = self.variables().into_iter().collect();
        // tch keeps names in a HashMap; creation order survives only in the trainable list
        // (matched here by storage address). tch's layers create `bias` before `weight`, while
        // PyTorch registers `weight` first: order modules by their first parameter's creation,
        // and weight before bias inside a module, as `named_parameters()` lists them.
        let order: Vec<usize> = self
            .trainable_variables()
            .iter()
            .map(|t| t.data_ptr() as usize)
            .collect();
        let rank = |t: &Tensor| {
            order
                .iter()
                .position(|&p| p == t.data_ptr() as usize)
                .unwrap_or(usize::MAX)
        };
        let module = |name: &str| {
            name.rsplit_once('.')
                .map(|(m, _)| m.to_string())
                .unwrap_or_default()
        };
        let mut module_rank = std::collections::HashMap::<String, usize>::new();
        for (name, t) in &named {
            let r = module_rank.entry(module(name)).or_insert(usize::MAX);
            *r = (*r).min(rank(t));
        }
        named.sort_by_key(|(name, t)| {
            let leaf = name.rsplit('.').next().unwrap_or("");
            let within = match leaf {
                "weight" => 0,
                "bias" => 1,
                _ => 2,
            };
            (
                module_rank[&module(name)],
                module(name),
                within,
                rank(t),
                name.clone(),
            )
        });
        NamedParameters { params: named }
    }
    fn is_cuda(&self) -> bool {
        self.trainable_variables()
            .first()
            .map(|t| t.device().is_cuda())
            .unwrap_or(false)
    }
    fn cuda(&mut self) {
        self.f_cuda().unwrap_or_else(|e| panic!("{e}"))
    }
    fn f_cuda(&mut self) -> Result<(), TorchError> {
        if !cuda::is_available() {
            return Err(no_cuda_error());
        }
        quietly(|| self.set_device(Device::Cuda(0)))
    }
    fn cpu(&mut self) {
        self.set_device(Device::Cpu)
    }
    fn num_parameters(&self) -> i64 {
        self.trainable_variables()
            .iter()
            .map(|t| t.numel() as i64)
            .sum()
    }
}

/// A model's parameters in PyTorch's order: iterate `(name, &tensor)` pairs, or end a cell with
/// it to see a table of name, shape, dtype and device.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _model = IrisModel::new(&vs.root());
/// let params = vs.named_parameters();
/// for (name, param) in params.iter() {
///     println!("{name}\t{:?}", param.size());
/// }
/// ```
#[derive(Debug)]
pub struct NamedParameters {
    params: Vec<(String, Tensor)>,
}

impl NamedParameters {
    /// `(name, tensor)` pairs in creation order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let _model = IrisModel::new(&vs.root());
    /// let params = vs.named_parameters();
    /// assert_eq!(params.iter().count(), 6);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.params.iter().map(|(n, t)| (n.as_str(), t))
    }
    /// Number of parameter tensors.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let _model = IrisModel::new(&vs.root());
    /// let params = vs.named_parameters();
    /// assert_eq!(params.len(), 6);
    /// ```
    pub fn len(&self) -> usize {
        self.params.len()
    }
    /// Whether the model has no parameters.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let _model = IrisModel::new(&vs.root());
    /// let params = vs.named_parameters();
    /// assert!(!params.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }
    /// The names, in order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let _model = IrisModel::new(&vs.root());
    /// let params = vs.named_parameters();
    /// assert_eq!(params.names()[0], "fc1.weight");
    /// ```
    pub fn names(&self) -> Vec<String> {
        self.params.iter().map(|(n, _)| n.clone()).collect()
    }
}

impl IntoIterator for NamedParameters {
    type Item = (String, Tensor);
    type IntoIter = std::vec::IntoIter<(String, Tensor)>;
    fn into_iter(self) -> Self::IntoIter {
        self.params.into_iter()
    }
}

impl Render for NamedParameters {
    fn bundle(&self) -> Bundle {
        let header = ["name", "shape", "dtype", "device"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = self
            .params
            .iter()
            .map(|(n, t)| {
                vec![
                    n.clone(),
                    format!("{:?}", t.size()),
                    kind_name(t.kind()).to_string(),
                    crate::display::device_name(t.device()),
                ]
            })
            .collect();
        let json = serde_json::json!({
            "parameters": self.params.iter().map(|(n, t)| serde_json::json!({
                "name": n, "shape": t.size(), "dtype": kind_name(t.kind()),
                "device": crate::display::device_name(t.device()),
            })).collect::<Vec<_>>()
        });
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("parameters", json)
    }
}

rich!(NamedParameters);
