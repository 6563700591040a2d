//! deeplizard's hyper-parameter grid: [`RunParams`] → [`RunBuilder::get_runs`] → one [`Run`] per
//! combination.

use crate::device::{DeviceError, f_device};
use tch::Device;

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
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// assert_eq!((run.lr, run.batch_size, run.num_workers), (0.01, 1000, 0));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
    /// Learning rates.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(RunBuilder::get_runs(&RunParams::new().lr(&[0.01, 0.001])).len(), 2);
    /// ```
    pub fn lr(mut self, values: &[f64]) -> Self {
        self.lr = values.to_vec();
        self
    }
    /// Batch sizes.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let runs = RunBuilder::get_runs(&RunParams::new().batch_size(&[100, 1000]));
    /// assert_eq!(runs[1].batch_size, 1000);
    /// ```
    pub fn batch_size(mut self, values: &[usize]) -> Self {
        self.batch_size = values.to_vec();
        self
    }
    /// Worker counts.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let runs = RunBuilder::get_runs(&RunParams::new().num_workers(&[0, 1]));
    /// assert_eq!(runs[1].num_workers, 1);
    /// ```
    pub fn num_workers(mut self, values: &[usize]) -> Self {
        self.num_workers = values.to_vec();
        self
    }
    /// Devices by name (`"cuda"`, `"cuda:1"`, `"cpu"`, `"mps"`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let runs = RunBuilder::get_runs(&RunParams::new().device(&["cpu", "cuda:1"]));
    /// assert_eq!(runs[1].device, Device::Cuda(1));
    /// ```
    pub fn device(mut self, values: &[&str]) -> Self {
        self.device = values.iter().map(|s| s.to_string()).collect();
        self
    }
    /// `["cuda", "cpu"]` where CUDA is present, else `["cpu"]`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(RunParams::available_devices().last(), Some(&"cpu"));
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
/// let params = RunParams::new().lr(&[0.01, 0.001]).batch_size(&[100, 1000]);
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
            crate::display::device_name(self.device)
        )
    }
}

impl Run {
    /// The run's parameters as a [`SummaryWriter`](crate::tensorboard::SummaryWriter) comment,
    /// the suffix of its TensorBoard folder (deeplizard's `comment=f'-{run}'`, without the
    /// spaces and quotes a folder name is better without).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new().lr(&[0.01]).batch_size(&[100]))[0];
    /// assert_eq!(run.comment(), "-lr=0.01,batch_size=100,num_workers=0,device=cpu");
    /// ```
    pub fn comment(&self) -> String {
        format!(
            "-lr={},batch_size={},num_workers={},device={}",
            self.lr,
            self.batch_size,
            self.num_workers,
            crate::display::device_name(self.device)
        )
    }
}

/// deeplizard's `RunBuilder`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let runs = RunBuilder::get_runs(&RunParams::new().lr(&[0.01, 0.001]));
/// assert_eq!((runs[0].index, runs[1].index), (1, 2));
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
    pub fn f_get_runs(params: &RunParams) -> Result<Vec<Run>, DeviceError> {
        let devices = params
            .device
            .iter()
            .map(|d| f_device(d))
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
