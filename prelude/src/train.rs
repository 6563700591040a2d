//! Training helpers: small parts for a visible loop — batch accuracy, a timer, and deeplizard's
//! RunBuilder/RunManager over a grid of hyper-parameters with a results table that updates live.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let params = RunParams::new().lr(&[0.01]).batch_size(&[2]).num_workers(&[0]).device(&["cpu"]);
//! let ds = TensorDataset::new(Tensor::randn([4, 1, 28, 28], (Kind::Float, Device::Cpu)),
//!                             Tensor::zeros([4], (Kind::Int64, Device::Cpu)));
//! let mut m = RunManager::new();
//! for run in RunBuilder::get_runs(&params) {
//!     let vs = nn::VarStore::new(run.device);
//!     let network = Network::new(&vs.root());
//!     let mut opt = nn::Adam::default().build(&vs, run.lr).unwrap();
//!     let loader = DataLoader::new(&ds, run.batch_size).num_workers(run.num_workers);
//!     m.begin_run(&run, &loader);
//!     m.begin_epoch();
//!     for (images, labels) in &loader {
//!         let preds = network.forward(&images);
//!         let loss = preds.cross_entropy_for_logits(&labels);
//!         opt.zero_grad(); loss.backward(); opt.step();
//!         m.track_loss(&loss, images.size()[0]);
//!         m.track_num_correct(&preds, &labels);
//!     }
//!     m.end_epoch();
//!     m.end_run();
//! }
//! assert_eq!(m.results().len(), 1);
//! ```

use crate::data::DataLoader;
use crate::display::{Bundle, DisplayHandle, Render, html_table, rich, show, text_table};
use crate::interrupt;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;
use tch::{Device, Kind, Tensor};

/// Fraction of rows whose arg-max over the last dimension equals the label:
/// `(prob.argmax(dim=-1) == y).float().mean().item()`. (One device sync, like `.item()`.)
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let logits = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8]).view([2, 2]);
/// let labels = Tensor::from_slice(&[0i64, 0]);
/// assert_eq!(batch_accuracy(&logits, &labels), 0.5);
/// ```
pub fn batch_accuracy(scores: &Tensor, labels: &Tensor) -> f64 {
    scores
        .argmax(-1, false)
        .eq_tensor(labels)
        .to_kind(Kind::Float)
        .mean(Kind::Float)
        .double_value(&[])
}

/// deeplizard's `get_num_correct(preds, labels)`: how many rows are right.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let preds = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8]).view([2, 2]);
/// assert_eq!(num_correct(&preds, &Tensor::from_slice(&[0i64, 1])), 2);
/// ```
pub fn num_correct(preds: &Tensor, labels: &Tensor) -> i64 {
    preds
        .argmax(1, false)
        .eq_tensor(labels)
        .sum(Kind::Int64)
        .int64_value(&[])
}

/// A stopwatch (`start = time.time()` … `time.time() - start`). It does not synchronise a GPU:
/// call [`crate::cuda::synchronize`] first when timing CUDA work.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let timer = Timer::start();
/// assert!(timer.elapsed() >= 0.0);
/// println!("TOTAL TRAINING TIME: {}", timer.elapsed());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    start: Instant,
}

impl Timer {
    /// Starts now.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let start = Timer::start();
    /// println!("TOTAL TRAINING TIME: {}", start.elapsed());
    /// ```
    pub fn start() -> Self {
        Timer {
            start: Instant::now(),
        }
    }

    /// Seconds since the start.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(Timer::start().elapsed() < 60.0);
    /// ```
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Seconds since the start, and restarts.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut t = Timer::start();
    /// let first = t.lap();
    /// let second = t.lap();
    /// # let _ = (first, second);
    /// ```
    pub fn lap(&mut self) -> f64 {
        let e = self.elapsed();
        self.start = Instant::now();
        e
    }
}

impl Render for Timer {
    fn bundle(&self) -> Bundle {
        Bundle::text(format!("{:.3} s", self.elapsed()))
            .with_data("timer", json!({"elapsed_s": self.elapsed()}))
    }
}

rich!(Timer);

/// deeplizard's `params = OrderedDict(lr=[...], batch_size=[...], num_workers=[...], device=[...])`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let params = RunParams::new()
///     .lr(&[0.01])
///     .batch_size(&[1000, 10000, 20000])
///     .num_workers(&[0, 1])
///     .device(&RunParams::available_devices());
/// assert_eq!(RunBuilder::get_runs(&params).len(), 6 * RunParams::available_devices().len());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunParams {
    lr: Vec<f64>,
    batch_size: Vec<usize>,
    num_workers: Vec<usize>,
    device: Vec<String>,
}

impl Default for RunParams {
    fn default() -> Self {
        RunParams {
            lr: vec![0.01],
            batch_size: vec![1000],
            num_workers: vec![0],
            device: vec!["cpu".into()],
        }
    }
}

impl RunParams {
    /// lr 0.01, batch_size 1000, num_workers 0, device cpu; replace any with the setters.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
    /// Learning rates.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn lr(mut self, values: &[f64]) -> Self {
        self.lr = values.to_vec();
        self
    }
    /// Batch sizes.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn batch_size(mut self, values: &[usize]) -> Self {
        self.batch_size = values.to_vec();
        self
    }
    /// Worker counts.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn num_workers(mut self, values: &[usize]) -> Self {
        self.num_workers = values.to_vec();
        self
    }
    /// Devices by name (`"cuda"`, `"cuda:1"`, `"cpu"`, `"mps"`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn device(mut self, values: &[&str]) -> Self {
        self.device = values.iter().map(|s| s.to_string()).collect();
        self
    }
    /// `["cuda", "cpu"]` where CUDA is present, else `["cpu"]`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let params = RunParams::new()
    ///     .lr(&[0.01])
    ///     .batch_size(&[1000, 10000, 20000])
    ///     .num_workers(&[0, 1])
    ///     .device(&RunParams::available_devices());
    /// # let _ = params;
    /// ```
    pub fn available_devices() -> Vec<&'static str> {
        if crate::cuda::is_available() {
            vec!["cuda", "cpu"]
        } else {
            vec!["cpu"]
        }
    }
}

/// One combination of hyper-parameters (deeplizard's `Run` named tuple).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let params = RunParams::new()
///     .lr(&[0.01])
///     .batch_size(&[1000, 10000, 20000])
///     .num_workers(&[0, 1])
///     .device(&RunParams::available_devices());
/// for run in RunBuilder::get_runs(&params) {
///     println!("{run}: lr {} batch {} on {:?}", run.lr, run.batch_size, run.device);
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// 1-based run number.
    pub index: usize,
    /// Learning rate.
    pub lr: f64,
    /// Batch size.
    pub batch_size: usize,
    /// DataLoader workers.
    pub num_workers: usize,
    /// The device.
    pub device: Device,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Run(lr={}, batch_size={}, num_workers={}, device='{}')",
            self.lr,
            self.batch_size,
            self.num_workers,
            crate::tensor_fmt::device_name(self.device)
        )
    }
}

/// deeplizard's `RunBuilder`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let params = RunParams::new()
///     .lr(&[0.01])
///     .batch_size(&[1000, 10000, 20000])
///     .num_workers(&[0, 1])
///     .device(&RunParams::available_devices());
/// let runs = RunBuilder::get_runs(&params);
/// assert_eq!(runs[0].index, 1);
/// ```
pub struct RunBuilder;

impl RunBuilder {
    /// `RunBuilder.get_runs(params)`: the Cartesian product, last parameter varying fastest
    /// (as `itertools.product`). Panics on an unknown device name.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let p = RunParams::new().lr(&[0.01]).batch_size(&[1000, 10000]).num_workers(&[0, 1]).device(&["cpu"]);
    /// let runs = RunBuilder::get_runs(&p);
    /// assert_eq!(runs.len(), 4);
    /// assert_eq!((runs[1].batch_size, runs[1].num_workers), (1000, 1));
    /// ```
    pub fn get_runs(params: &RunParams) -> Vec<Run> {
        Self::f_get_runs(params).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`get_runs`](Self::get_runs): an unknown device name is an error.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let p = RunParams::new().device(&["tpu"]);
    /// assert!(RunBuilder::f_get_runs(&p).unwrap_err().to_string().contains("tpu"));
    /// ```
    pub fn f_get_runs(params: &RunParams) -> Result<Vec<Run>, crate::device::DeviceError> {
        let devices = params
            .device
            .iter()
            .map(|d| crate::device::f_device(d))
            .collect::<Result<Vec<Device>, _>>()?;
        let mut runs = Vec::new();
        for &lr in &params.lr {
            for &batch_size in &params.batch_size {
                for &num_workers in &params.num_workers {
                    for &device in &devices {
                        runs.push(Run {
                            index: runs.len() + 1,
                            lr,
                            batch_size,
                            num_workers,
                            device,
                        });
                    }
                }
            }
        }
        Ok(runs)
    }
}

/// One row of the results table: a run's epoch.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let m = RunManager::new();
/// for r in m.results() {
///     println!("run {} epoch {}: loss {:.3} accuracy {:.3}", r.run, r.epoch, r.loss, r.accuracy);
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EpochResult {
    /// Run number.
    pub run: usize,
    /// Epoch number within the run (1-based).
    pub epoch: usize,
    /// Mean loss per sample.
    pub loss: f64,
    /// Fraction correct.
    pub accuracy: f64,
    /// Seconds this epoch took.
    pub epoch_duration: f64,
    /// Seconds since the run began.
    pub run_duration: f64,
    /// The run's parameters.
    pub params: Run,
}

/// deeplizard's `RunManager`: times runs and epochs, accumulates loss and correct predictions
/// (on the device, read once per epoch: no per-batch sync), and keeps a results table that
/// updates in place in the notebook after every epoch.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut m = RunManager::new();
/// assert!(m.results().is_empty());
/// # let _ = &mut m;
/// ```
pub struct RunManager {
    results: Vec<EpochResult>,
    run: Option<Run>,
    run_start: Instant,
    epoch: usize,
    epoch_start: Instant,
    loss_sum: Option<Tensor>,
    correct: Option<Tensor>,
    samples: i64,
    handle: Option<DisplayHandle>,
}

impl Default for RunManager {
    fn default() -> Self {
        Self::new()
    }
}

impl RunManager {
    /// An empty manager.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// # let _ = &mut m;
    /// ```
    pub fn new() -> Self {
        RunManager {
            results: Vec::new(),
            run: None,
            run_start: Instant::now(),
            epoch: 0,
            epoch_start: Instant::now(),
            loss_sum: None,
            correct: None,
            samples: 0,
            handle: None,
        }
    }

    /// `m.begin_run(run, network, loader)`: starts timing a run.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    ///
    /// ```
    pub fn begin_run(&mut self, run: &Run, _loader: &DataLoader) {
        interrupt::check();
        self.run = Some(run.clone());
        self.run_start = Instant::now();
        self.epoch = 0;
    }

    /// Starts an epoch.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    ///
    /// ```
    pub fn begin_epoch(&mut self) {
        interrupt::check();
        self.epoch += 1;
        self.epoch_start = Instant::now();
        self.loss_sum = None;
        self.correct = None;
        self.samples = 0;
    }

    /// `m.track_loss(loss, batch)`: adds `loss × batch_len` (the loss is a batch mean).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// assert_eq!(m.results()[0].loss, 1.0);
    /// ```
    pub fn track_loss(&mut self, loss: &Tensor, batch_len: i64) {
        let v = loss.detach().to_kind(Kind::Double) * batch_len as f64;
        self.loss_sum = Some(match self.loss_sum.take() {
            Some(s) => s + v,
            None => v,
        });
        self.samples += batch_len;
    }

    /// `m.track_num_correct(preds, labels)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// assert_eq!(m.results()[0].accuracy, 1.0);
    /// ```
    pub fn track_num_correct(&mut self, preds: &Tensor, labels: &Tensor) {
        let c = preds.argmax(1, false).eq_tensor(labels).sum(Kind::Int64);
        self.correct = Some(match self.correct.take() {
            Some(s) => s + c,
            None => c,
        });
    }

    /// Ends the epoch: records loss, accuracy and durations, and updates the live table.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// assert_eq!(m.results().len(), 1);
    /// ```
    pub fn end_epoch(&mut self) {
        let Some(run) = self.run.clone() else {
            panic!("RunManager::end_epoch called before begin_run");
        };
        let n = self.samples.max(1) as f64;
        let loss = self
            .loss_sum
            .as_ref()
            .map(|t| t.double_value(&[]))
            .unwrap_or(f64::NAN)
            / n;
        let correct = self
            .correct
            .as_ref()
            .map(|t| t.int64_value(&[]))
            .unwrap_or(0) as f64;
        self.results.push(EpochResult {
            run: run.index,
            epoch: self.epoch,
            loss,
            accuracy: correct / n,
            epoch_duration: self.epoch_start.elapsed().as_secs_f64(),
            run_duration: self.run_start.elapsed().as_secs_f64(),
            params: run,
        });
        if crate::runtime::in_kernel() {
            let table = self.table();
            match &self.handle {
                Some(h) => h.update(&table),
                None => self.handle = Some(show(&table)),
            }
        } else if let Some(last) = self.results.last() {
            println!("{}", row_text(last).join("  "));
        }
    }

    /// Ends the run.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    ///
    /// ```
    pub fn end_run(&mut self) {
        self.run = None;
    }

    /// Every epoch of every run so far.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// assert_eq!(m.results()[0].epoch, 1);
    /// ```
    pub fn results(&self) -> &[EpochResult] {
        &self.results
    }

    /// The results table (what the live display shows).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// println!("{}", m.table());
    /// ```
    pub fn table(&self) -> RunTable {
        RunTable {
            results: self.results.clone(),
        }
    }

    /// Mean epoch duration per device and the speed-up over the CPU.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([8, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([8], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// let run = RunBuilder::get_runs(&RunParams::new().batch_size(&[4]))[0].clone();
    /// let mut m = RunManager::new();
    /// m.begin_run(&run, &loader);
    /// m.begin_epoch();
    /// for (x, y) in &loader {
    ///     let preds = x.shallow_clone(); // a model's scores
    ///     let loss = Tensor::from(1.0f32);
    ///     m.track_loss(&loss, x.size()[0]);
    ///     m.track_num_correct(&preds, &y);
    /// }
    /// m.end_epoch();
    /// m.end_run();
    /// println!("{}", m.compare_devices());
    /// ```
    pub fn compare_devices(&self) -> DeviceComparison {
        let mut devices: Vec<Device> = Vec::new();
        for r in &self.results {
            if !devices.contains(&r.params.device) {
                devices.push(r.params.device);
            }
        }
        let mean = |d: Device| {
            let v: Vec<f64> = self
                .results
                .iter()
                .filter(|r| r.params.device == d)
                .map(|r| r.epoch_duration)
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let cpu = devices.contains(&Device::Cpu).then(|| mean(Device::Cpu));
        DeviceComparison {
            rows: devices
                .iter()
                .map(|&d| {
                    let m = mean(d);
                    (crate::tensor_fmt::device_name(d), m, cpu.map(|c| c / m))
                })
                .collect(),
        }
    }

    /// `m.save(fileName)`: writes `<name>.csv` and `<name>.json`.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// m.save("results").unwrap(); // results.csv and results.json
    /// ```
    pub fn save(&self, name: impl AsRef<Path>) -> std::io::Result<()> {
        self.table().save(name)
    }
}

impl Render for RunManager {
    fn bundle(&self) -> Bundle {
        self.table().bundle()
    }
}

rich!(RunManager);

const COLUMNS: [&str; 10] = [
    "run",
    "epoch",
    "loss",
    "accuracy",
    "epoch_duration",
    "run_duration",
    "lr",
    "batch_size",
    "num_workers",
    "device",
];

fn row_text(r: &EpochResult) -> Vec<String> {
    vec![
        r.run.to_string(),
        r.epoch.to_string(),
        format!("{:.4}", r.loss),
        format!("{:.4}", r.accuracy),
        format!("{:.2}", r.epoch_duration),
        format!("{:.2}", r.run_duration),
        r.params.lr.to_string(),
        r.params.batch_size.to_string(),
        r.params.num_workers.to_string(),
        crate::tensor_fmt::device_name(r.params.device),
    ]
}

fn row_json(r: &EpochResult) -> Value {
    json!({
        "run": r.run, "epoch": r.epoch, "loss": r.loss, "accuracy": r.accuracy,
        "epoch_duration": r.epoch_duration, "run_duration": r.run_duration,
        "lr": r.params.lr, "batch_size": r.params.batch_size, "num_workers": r.params.num_workers,
        "device": crate::tensor_fmt::device_name(r.params.device),
    })
}

/// The run results as a table (pandas' `DataFrame.from_dict(run_data, orient='columns')`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut m = RunManager::new();
/// let table = m.table();
/// assert!(table.results.is_empty());
/// # let _ = &mut m;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunTable {
    /// The rows.
    pub results: Vec<EpochResult>,
}

impl RunTable {
    /// The table as CSV text.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// assert!(m.table().to_csv().starts_with("run,epoch,loss"));
    /// # let _ = &mut m;
    /// ```
    pub fn to_csv(&self) -> String {
        let mut s = COLUMNS.join(",");
        s.push('\n');
        for r in &self.results {
            let row = row_json(r);
            let cells: Vec<String> = COLUMNS
                .iter()
                .map(|c| match &row[*c] {
                    Value::String(v) => v.clone(),
                    v => v.to_string(),
                })
                .collect();
            s.push_str(&cells.join(","));
            s.push('\n');
        }
        s
    }

    /// The table as JSON: `{"columns": [...], "rows": [{...}, ...]}`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// assert_eq!(m.table().to_json()["columns"][0], "run");
    /// # let _ = &mut m;
    /// ```
    pub fn to_json(&self) -> Value {
        json!({"columns": COLUMNS, "rows": self.results.iter().map(row_json).collect::<Vec<_>>()})
    }

    /// Writes `<name>.csv` and `<name>.json`.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// m.table().save("results").unwrap();
    /// ```
    pub fn save(&self, name: impl AsRef<Path>) -> std::io::Result<()> {
        let name = name.as_ref();
        std::fs::write(name.with_extension("csv"), self.to_csv())?;
        std::fs::write(
            name.with_extension("json"),
            serde_json::to_string_pretty(&self.to_json()).unwrap_or_default(),
        )
    }
}

impl Render for RunTable {
    fn bundle(&self) -> Bundle {
        let header: Vec<String> = COLUMNS.iter().map(|s| s.to_string()).collect();
        let rows: Vec<Vec<String>> = self.results.iter().map(row_text).collect();
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("run-table", self.to_json())
    }
}

rich!(RunTable);

/// Mean epoch duration per device, and how many times faster than the CPU.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut m = RunManager::new();
/// let cmp = m.compare_devices();
/// assert!(cmp.rows.is_empty());
/// # let _ = &mut m;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceComparison {
    /// (device, mean epoch seconds, speed-up over cpu).
    pub rows: Vec<(String, f64, Option<f64>)>,
}

impl Render for DeviceComparison {
    fn bundle(&self) -> Bundle {
        let header = ["device", "mean epoch duration (s)", "speed-up vs cpu"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|(d, m, s)| {
                vec![
                    d.clone(),
                    format!("{m:.3}"),
                    s.map(|s| format!("{s:.2}×")).unwrap_or_else(|| "—".into()),
                ]
            })
            .collect();
        let json = json!({"rows": self.rows.iter().map(|(d, m, s)| json!({"device": d, "mean_epoch_duration": m, "speedup_vs_cpu": s})).collect::<Vec<_>>()});
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("device-comparison", json)
    }
}

rich!(DeviceComparison);
