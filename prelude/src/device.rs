//! Devices: picking one (cuda → mps → cpu), moving tensors and models, and what the hardware is.

use std::sync::Once;

extern "C" {
    fn tchbook_cuda_anchor() -> *const std::ffi::c_void;
}

/// Loads `libtorch_cuda.so` into the process (RTLD_GLOBAL) so that libtorch registers its CUDA
/// backend. Rust links with `--as-needed`, which drops the library from a binary that calls none
/// of its symbols; CUDA then looks absent on a GPU machine (tch-rs issue #980). The build script
/// also links it with `-as-needed` off; this call covers binaries built some other way.
/// Runs once; harmless on a CPU-only libtorch.
///
/// ```
/// tchbook_prelude::device::load_cuda();
/// ```
pub fn load_cuda() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Referencing the anchor pulls the shim's object (and its libtorch_cuda reference) into
        // every binary that can reach this function.
        // SAFETY: returns a function address or null; nothing is called through it.
        let linked = unsafe { tchbook_cuda_anchor() };
        let _ = std::hint::black_box(linked);
        for candidate in cuda_library_candidates() {
            let Ok(path) = std::ffi::CString::new(candidate) else { continue };
            // SAFETY: dlopen with a valid C string; the handle is deliberately never closed.
            let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                return;
            }
        }
    });
}

fn cuda_library_candidates() -> Vec<String> {
    let mut out = Vec::new();
    // The directory of the libtorch_cpu.so already mapped into this process is the surest place.
    if let Ok(maps) = std::fs::read_to_string("/proc/self/maps") {
        if let Some(path) = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.ends_with("/libtorch_cpu.so"))
        {
            out.push(path.replace("/libtorch_cpu.so", "/libtorch_cuda.so"));
        }
    }
    if let Some(lib) = std::env::var_os("LIBTORCH") {
        out.push(format!("{}/lib/libtorch_cuda.so", lib.to_string_lossy()));
    }
    out.push("libtorch_cuda.so".to_string());
    out
}

use crate::cuda::{self, DeviceProperties, Versions};
use crate::display::{html_table, rich, text_table, Bundle, Render};
use crate::sys;
use crate::tensor_fmt::{device_name, kind_name};
use tch::{nn::VarStore, Device, TchError, Tensor};

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
pub fn f_device(spec: &str) -> Result<Device, DeviceError> {
    let spec = spec.trim();
    let (kind, index) = match spec.split_once(':') {
        Some((k, i)) => (k, Some(i)),
        None => (spec, None),
    };
    let index = match index {
        Some(i) => Some(i.parse::<usize>().map_err(|_| {
            DeviceError(format!("invalid device index in {spec:?}: expected e.g. \"cuda:0\""))
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
/// assert_eq!(device_str(Device::Cuda(0)), "cuda:0");
/// ```
pub fn device_str(device: Device) -> String {
    device_name(device)
}

/// A libtorch error in one line, as Python's `print(e)` shows it — without the C++ backtrace
/// that tch keeps in its message.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
/// let e = attempt(|| &a + &b).unwrap_err();
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
    let mut text = message;
    for cut in ["\nException raised from", "Exception raised from"] {
        if let Some(i) = text.find(cut) {
            text = &text[..i];
        }
    }
    let text = text.trim();
    let text = text.strip_prefix("Internal torch error: ").unwrap_or(text);
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic (tch panics on every libtorch error) into a `TorchError` with the
/// one-line message, and without printing the panic.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
    install_quiet_hook();
    let before = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(before));
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown error".into());
        TorchError(brief(&message))
    })
}

/// Python's `try: ... except Exception as e: print(e)` for tensor code: runs `f` and returns
/// the libtorch error as a one-line [`TorchError`] instead of ending the cell. This is the
/// fallible twin of any panicking tch call (operators, `forward`), e.g. the cross-device error.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let cpu_tensor = Tensor::ones([3, 3], (Kind::Float, Device::Cpu));
/// match attempt(|| &cpu_tensor + &cpu_tensor) {
///     Ok(t) => println!("{}", t.repr()),
///     Err(e) => println!("{e}"),
/// }
/// ```
pub fn attempt<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
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

/// One parameter of a model: what `named_parameters()` yields.
#[derive(Debug)]
pub struct Parameter {
    /// PyTorch's dotted name, e.g. `conv1.weight`.
    pub name: String,
    /// The tensor (shares storage with the model's variable).
    pub tensor: Tensor,
}

/// Module-level helpers PyTorch has on `nn.Module` and tch lacks, for a model's [`VarStore`]:
/// `named_parameters`, `parameters_table`, `is_cuda`, `cuda`, `cpu`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let _model = TestModel::new(&vs.root());
/// let names: Vec<String> = vs.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias"]);
/// assert!(!vs.is_cuda());
/// vs.cpu(); // model.cpu()
/// ```
pub trait VarStoreExt {
    /// `model.named_parameters()`: names and tensors in the order the model created them.
    fn named_parameters(&self) -> Vec<(String, Tensor)>;
    /// A displayable table of name, shape, dtype, device and trainability.
    fn parameters_table(&self) -> ParameterTable;
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

impl VarStoreExt for VarStore {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut named: Vec<(String, Tensor)> = self.variables().into_iter().collect();
        // tch keeps names in a HashMap; creation order survives only in the trainable list.
        // Match by storage address to recover PyTorch's order; the rest (buffers) by name.
        let order: Vec<usize> =
            self.trainable_variables().iter().map(|t| t.data_ptr() as usize).collect();
        named.sort_by_key(|(name, t)| {
            let rank = order.iter().position(|&p| p == t.data_ptr() as usize);
            (rank.unwrap_or(usize::MAX), name.clone())
        });
        named
    }
    fn parameters_table(&self) -> ParameterTable {
        let trainable: Vec<usize> =
            self.trainable_variables().iter().map(|t| t.data_ptr() as usize).collect();
        ParameterTable {
            rows: self
                .named_parameters()
                .into_iter()
                .map(|(name, t)| ParameterRow {
                    trainable: trainable.contains(&(t.data_ptr() as usize)),
                    shape: t.size(),
                    kind: kind_name(t.kind()).to_string(),
                    device: device_name(t.device()),
                    name,
                })
                .collect(),
        }
    }
    fn is_cuda(&self) -> bool {
        self.trainable_variables().first().map(|t| t.device().is_cuda()).unwrap_or(false)
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
        self.trainable_variables().iter().map(|t| t.numel() as i64).sum()
    }
}

/// One row of a [`ParameterTable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterRow {
    /// `conv1.weight`.
    pub name: String,
    /// `[6, 1, 5, 5]`.
    pub shape: Vec<i64>,
    /// `float32`.
    pub kind: String,
    /// `cuda:0`.
    pub device: String,
    /// Whether the optimizer updates it.
    pub trainable: bool,
}

/// A model's parameters with shape, dtype and device (the deeplizard `named_parameters` loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterTable {
    /// One row per parameter, in creation order.
    pub rows: Vec<ParameterRow>,
}

impl Render for ParameterTable {
    fn bundle(&self) -> Bundle {
        let header = ["name", "shape", "dtype", "device", "trainable"].map(String::from).to_vec();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    format!("{:?}", r.shape),
                    r.kind.clone(),
                    r.device.clone(),
                    r.trainable.to_string(),
                ]
            })
            .collect();
        Bundle::text(text_table(&header, &rows)).with_html(html_table(None, &header, &rows))
    }
}

rich!(ParameterTable);

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
                    format!("{} free of {}", sys::human_bytes(*free), sys::human_bytes(*total))
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
        let text = rows.iter().map(|(k, v)| format!("{k:<width$}  {v}")).collect::<Vec<_>>().join("\n");
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
        Bundle::text(text).with_html(html)
    }
}

rich!(DeviceCard);
