//! Devices: picking one (cuda → mps → cpu), moving tensors and models, and what the hardware is.

use crate::cuda::{self, DeviceProperties, Versions};
use crate::display::{Bundle, Render, html_table, rich, text_table};
use crate::sys;
use crate::tensor_fmt::kind_name;

pub use crate::backend::{load_cuda, nvidia_driver_present};
use tch::{Device, TchError, Tensor, nn::VarStore};

/// What libtorch says when asked for CUDA on a machine without a driver (its CUDA backend's
/// message, and what notebooks showed when the prelude still loaded that backend everywhere).
const NO_NVIDIA_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have \
     an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

/// Whether `message` is libtorch failing because its CUDA backend is not loaded: a CUDA tensor
/// meets an operator registry without CUDA kernels, or a CUDA hook finds no ATen_cuda.
fn cuda_backend_missing(message: &str) -> bool {
    (message.starts_with("Could not run '") && message.contains("CUDA' backend"))
        || message.contains("without ATen_cuda library")
}

/// The best device here: CUDA if a CUDA device is present, else Apple's MPS, else the CPU —
/// the tutorials' `'cuda' if torch.cuda.is_available() else 'mps' if ... else 'cpu'`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let device = best_device();
/// let t = Tensor::ones([2, 2], (Kind::Float, device));
/// assert_eq!(t.device(), device);
/// ```
pub fn best_device() -> Device {
    if cuda::is_available() {
        Device::Cuda(0)
    } else if tch::utils::has_mps() {
        Device::Mps
    } else {
        Device::Cpu
    }
}

/// A device spec that does not parse.
///
/// ```
/// let e = tchbook_prelude::device::f_device("tpu").unwrap_err();
/// assert!(e.to_string().contains("tpu"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

/// The fallible twin of [`device`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(f_device("cuda:1").unwrap(), Device::Cuda(1));
/// assert!(f_device("gpu").is_err());
/// ```
pub fn f_device(spec: &str) -> Result<Device, DeviceError> {
    let spec = spec.trim();
    let (kind, index) = match spec.split_once(':') {
        Some((k, i)) => (k, Some(i)),
        None => (spec, None),
    };
    let index = match index {
        Some(i) => Some(i.parse::<usize>().map_err(|_| {
            DeviceError(format!(
                "invalid device index in {spec:?}: expected e.g. \"cuda:0\""
            ))
        })?),
        None => None,
    };
    match (kind, index) {
        ("cpu", None) => Ok(Device::Cpu),
        ("cuda", i) => Ok(Device::Cuda(i.unwrap_or(0))),
        ("mps", None | Some(0)) => Ok(Device::Mps),
        _ => Err(DeviceError(format!(
            "unknown device {spec:?}: expected \"cpu\", \"cuda\", \"cuda:N\" or \"mps\""
        ))),
    }
}

/// `torch.device("cuda:0")`: parses `cpu`, `cuda`, `cuda:N`, `mps`. Panics on anything else
/// (see [`f_device`]).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(device("cuda:1"), Device::Cuda(1));
/// let d = device(if cuda::is_available() { "cuda:0" } else { "cpu" });
/// # let _ = d;
/// ```
pub fn device(spec: &str) -> Device {
    f_device(spec).unwrap_or_else(|e| panic!("{e}"))
}

/// PyTorch's name for a device (`cpu`, `cuda:0`, `mps`), as `str(tensor.device)` prints it.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(device_name(Device::Cuda(0)), "cuda:0");
/// ```
pub fn device_name(device: Device) -> String {
    crate::tensor_fmt::device_name(device)
}

/// A libtorch error in one line, as Python's `print(e)` shows it — without the C++ backtrace
/// that tch keeps in its message.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
/// let e = catch_torch_error(|| &a + &b).unwrap_err();
/// assert!(e.to_string().contains("must match"), "{e}");
/// assert!(!e.to_string().contains("Exception raised from"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchError(pub String);

impl std::fmt::Display for TorchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TorchError {}

impl From<TchError> for TorchError {
    fn from(e: TchError) -> Self {
        TorchError(brief(&e.to_string()))
    }
}

/// The first meaningful line of a libtorch/tch message.
pub(crate) fn brief(message: &str) -> String {
    // tch's panicking operators unwrap a `Result`: the panic message is the Debug form of
    // `TchError::Torch("...")`, with the newlines escaped.
    let unwrapped;
    let mut text = message
        .strip_prefix("called `Result::unwrap()` on an `Err` value: ")
        .unwrap_or(message);
    if let Some(inner) = text.strip_prefix("Torch(\"") {
        unwrapped = inner
            .trim_end_matches("\")")
            .replace("\\n", "\n")
            .replace("\\\"", "\"");
        text = &unwrapped;
    }
    for cut in ["\nException raised from", "Exception raised from"] {
        if let Some(i) = text.find(cut) {
            text = &text[..i];
        }
    }
    let text = text.trim();
    let text = text.strip_prefix("Internal torch error: ").unwrap_or(text);
    // Without a driver the prelude leaves libtorch's CUDA backend unloaded (load_cuda), and
    // libtorch then answers a CUDA request with a page-long list of dispatch keys, or with advice
    // about linker flags; the backend itself would have said there is no driver.
    if cuda_backend_missing(text) && !nvidia_driver_present() {
        return NO_NVIDIA_DRIVER.to_string();
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `f`, turning a panic (tch panics on every libtorch error) into a `TorchError` with the
/// one-line message, and without printing the panic.
///
/// The panic hook is swapped for a silent one around the call and the previous hook (the
/// kernel's, which reports a panic as the cell's error) is put back afterwards, so a caught
/// error does not fail the cell.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown error".into());
        TorchError(brief(&message))
    })
}

/// A tch error (or any error) as one line, as Python's `print(e)` shows it (no C++ backtrace).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
/// let e = a.f_add(&b).unwrap_err();
/// assert!(!short_error(&e).contains("Exception raised from"));
/// ```
pub fn short_error(error: &impl std::fmt::Display) -> String {
    brief(&error.to_string())
}

/// Python's `try: ... except Exception as e: print(e)` for tensor code: runs `f` and returns
/// the libtorch error as a one-line [`TorchError`] instead of ending the cell. This is the
/// fallible twin of any panicking tch call (operators, `forward`), e.g. the cross-device error.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let cpu_tensor = Tensor::ones([3, 3], (Kind::Float, Device::Cpu));
/// match catch_torch_error(|| &cpu_tensor + &cpu_tensor) {
///     Ok(t) => println!("{}", t.repr()),
///     Err(e) => println!("{e}"),
/// }
/// ```
pub fn catch_torch_error<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
    quietly(f)
}

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
    TorchError(
        "CUDA is not available: no CUDA device is present or libtorch has no CUDA support; \
         use best_device() to fall back to the CPU"
            .into(),
    )
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
                    crate::tensor_fmt::device_name(t.device()),
                ]
            })
            .collect();
        let json = serde_json::json!({
            "parameters": self.params.iter().map(|(n, t)| serde_json::json!({
                "name": n, "shape": t.size(), "dtype": kind_name(t.kind()),
                "device": crate::tensor_fmt::device_name(t.device()),
            })).collect::<Vec<_>>()
        });
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("parameters", json)
    }
}

rich!(NamedParameters);

/// A picture of the machine, like `nvidia-smi` or Colab's resource view: CUDA devices with
/// compute capability, SMs and memory; versions; CPU model, cores and RAM.
///
/// ```
/// let card = tchbook_prelude::device::device_card();
/// assert!(card.to_string().contains("CPU"));
/// ```
#[derive(Debug, Clone)]
pub struct DeviceCard {
    /// The device [`best_device`] picks.
    pub best: Device,
    /// Each CUDA device with (free, total) memory where known.
    pub gpus: Vec<(DeviceProperties, Option<(u64, u64)>)>,
    /// torch / CUDA / cuDNN versions.
    pub versions: Versions,
    /// CPU model name.
    pub cpu_model: String,
    /// Physical cores.
    pub physical_cores: usize,
    /// Logical CPUs available to this process.
    pub logical_cores: usize,
    /// libtorch's intra-op threads.
    pub torch_threads: i32,
    /// System RAM (bytes).
    pub ram_total: u64,
    /// Available RAM (bytes).
    pub ram_available: u64,
}

/// Gathers a [`DeviceCard`] for this machine.
///
/// ```no_run
/// let card = tchbook_prelude::device::device_card();
/// println!("{card}"); // a cell ending with `device_card()` shows the HTML card
/// ```
pub fn device_card() -> DeviceCard {
    let gpus = (0..cuda::device_count())
        .filter_map(|i| cuda::get_device_properties(i).map(|p| (p, cuda::f_mem_get_info(i).ok())))
        .collect();
    DeviceCard {
        best: best_device(),
        gpus,
        versions: cuda::versions(),
        cpu_model: sys::cpu_model(),
        physical_cores: sys::physical_cores(),
        logical_cores: sys::logical_cores(),
        torch_threads: tch::get_num_threads(),
        ram_total: sys::ram_total(),
        ram_available: sys::ram_available(),
    }
}

impl DeviceCard {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![("Best device".to_string(), device_name(self.best))];
        if self.gpus.is_empty() {
            rows.push(("CUDA".into(), "no CUDA device is present".into()));
        }
        for (p, mem) in &self.gpus {
            let memory = match mem {
                Some((free, total)) => {
                    format!(
                        "{} free of {}",
                        sys::human_bytes(*free),
                        sys::human_bytes(*total)
                    )
                }
                None => sys::human_bytes(p.total_memory),
            };
            rows.push((
                format!("cuda:{}", p.index),
                format!(
                    "{} · compute capability {}.{} · {} SMs · {}",
                    p.name, p.major, p.minor, p.multi_processor_count, memory
                ),
            ));
        }
        let v = &self.versions;
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "—".into());
        rows.push((
            "Versions".into(),
            format!(
                "torch {} · CUDA {} · driver CUDA {} · cuDNN {}",
                v.torch,
                opt(&v.cuda),
                opt(&v.driver),
                opt(&v.cudnn)
            ),
        ));
        rows.push((
            "CPU".into(),
            format!(
                "{} · {} cores / {} threads · torch uses {} threads",
                self.cpu_model, self.physical_cores, self.logical_cores, self.torch_threads
            ),
        ));
        rows.push((
            "RAM".into(),
            format!(
                "{} available of {}",
                sys::human_bytes(self.ram_available),
                sys::human_bytes(self.ram_total)
            ),
        ));
        rows
    }
}

impl Render for DeviceCard {
    fn bundle(&self) -> Bundle {
        let rows = self.rows();
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let text = rows
            .iter()
            .map(|(k, v)| format!("{k:<width$}  {v}"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut html = String::from(
            "<table class=\"tchbook-device-card\" style=\"border:1px solid #ccc\"><tbody>",
        );
        for (k, v) in &rows {
            html.push_str(&format!(
                "<tr><th style=\"text-align:left\">{}</th><td style=\"text-align:left\">{}</td></tr>",
                sys::escape_html(k),
                sys::escape_html(v)
            ));
        }
        html.push_str("</tbody></table>");
        let mut devices: Vec<serde_json::Value> = self
            .gpus
            .iter()
            .map(|(p, mem)| {
                serde_json::json!({
                    "device": format!("cuda:{}", p.index), "name": p.name,
                    "total_memory": p.total_memory, "free_memory": mem.map(|m| m.0),
                    "compute_capability": [p.major, p.minor],
                    "multi_processor_count": p.multi_processor_count,
                })
            })
            .collect();
        if self.best == Device::Mps {
            devices.push(serde_json::json!({"device": "mps", "name": "Apple MPS"}));
        }
        devices.push(serde_json::json!({
            "device": "cpu", "name": self.cpu_model, "total_memory": self.ram_total,
            "free_memory": self.ram_available,
        }));
        let v = &self.versions;
        let json = serde_json::json!({
            "best_device": crate::tensor_fmt::device_name(self.best),
            "cuda_available": !self.gpus.is_empty(),
            "device_count": self.gpus.len(),
            "devices": devices,
            "torch_version": v.torch, "cuda_version": v.cuda, "driver_cuda_version": v.driver,
            "cudnn_version": v.cudnn,
            "cpu": {"model": self.cpu_model, "cores": self.physical_cores,
                    "threads": self.logical_cores, "torch_threads": self.torch_threads,
                    "ram_bytes": self.ram_total, "ram_available_bytes": self.ram_available},
        });
        Bundle::text(text)
            .with_html(html)
            .with_data("device-card", json)
    }
}

rich!(DeviceCard);
