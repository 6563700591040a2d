//! deeplizard's `RunManager`: times runs and epochs, collects their loss and accuracy, and
//! logs them to TensorBoard.

use super::runs::Run;
use super::table::{DeviceComparison, EpochResult, RunTable, row_text};
use crate::data::DataLoader;
use crate::display::{Bundle, DisplayHandle, Render, rich, show};
use crate::interrupt;
use crate::progress::Progress;
#[cfg(feature = "tensorboard")]
use crate::tensorboard::{SummaryWriter, make_grid, run_dir_name};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

/// deeplizard's `RunManager`: times runs and epochs, accumulates loss and correct predictions
/// (on the device, read once per epoch: no per-batch sync), keeps a results table that
/// updates in place in the notebook after every epoch, and writes each run to TensorBoard as
/// the episode does (`runs/<date>_<hostname>-lr=0.01,batch_size=1000,…`; view them with
/// `tensorboard --logdir runs`):
///
/// - at [`begin_run_with`](Self::begin_run_with), the grid of the first 64 images of the
///   loader's first batch (`images`);
/// - at every [`end_epoch`](Self::end_epoch), the scalars `Loss`, `Number Correct` and
///   `Accuracy`, and, for runs begun with a var store, a histogram of every parameter and of
///   its gradient (`conv1.weight`, `conv1.weight.grad`, …);
/// - at [`end_run`](Self::end_run), the file is closed.
///
/// Inside a kernel it also shows each epoch's progress over the loader's batches, ticked by
/// [`track_loss`](Self::track_loss), as `tqdm.notebook`'s bar: one bar for all the runs, named
/// after the run and epoch it counts, started again at each epoch.
///
/// The episode's `add_graph` is left out: [`SummaryWriter`] says why. Without the prelude's
/// `tensorboard` feature, or after [`without_tensorboard`](Self::without_tensorboard), only the
/// table is kept.
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
    /// Inside a kernel, the epoch's progress over its batches (`tqdm.notebook`'s widget), one
    /// bar for all the runs, started again at each epoch.
    bar: Option<Progress>,
    /// Batches per epoch, from the run's loader (0: not known, `begin_run` without one).
    batches: usize,
    /// Where runs are logged; `None`: not at all.
    runs_dir: Option<PathBuf>,
    /// Every run's TensorBoard folder so far.
    log_dirs: Vec<PathBuf>,
    #[cfg(feature = "tensorboard")]
    tb: Option<SummaryWriter>,
    /// The watched network's parameters (shallow copies: they see its updates and gradients).
    #[cfg(feature = "tensorboard")]
    parameters: Vec<(String, Tensor)>,
}

impl Default for RunManager {
    fn default() -> Self {
        Self::new()
    }
}

impl RunManager {
    /// An empty manager that logs its runs under `runs/`, where PyTorch's `SummaryWriter`
    /// puts them.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
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
            bar: None,
            batches: 0,
            runs_dir: Some(PathBuf::from("runs")),
            log_dirs: Vec::new(),
            #[cfg(feature = "tensorboard")]
            tb: None,
            #[cfg(feature = "tensorboard")]
            parameters: Vec::new(),
        }
    }

    /// Logs runs under `dir` instead of `runs/` (`tensorboard --logdir <dir>`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let dir = std::env::temp_dir().join("tchbook-doc-runs");
    /// let mut m = RunManager::new().runs_dir(&dir);
    /// m.begin_run(&RunBuilder::get_runs(&RunParams::new())[0]);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// m.end_run();
    /// assert!(std::fs::read_dir(&dir).unwrap().count() > 0);
    /// ```
    pub fn runs_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.runs_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Keeps the table only: no TensorBoard files.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new().without_tensorboard();
    /// m.begin_run(&RunBuilder::get_runs(&RunParams::new())[0]);
    /// assert!(m.log_dir().is_none());
    /// ```
    pub fn without_tensorboard(mut self) -> Self {
        self.runs_dir = None;
        self
    }

    /// The current run's TensorBoard folder, `runs/<date>_<hostname><run.comment()>`; `None`
    /// between runs, and when nothing is logged.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let dir = std::env::temp_dir().join("tchbook-doc-runs");
    /// let mut m = RunManager::new().runs_dir(&dir);
    /// m.begin_run(&RunBuilder::get_runs(&RunParams::new())[0]);
    /// let log_dir = m.log_dir().unwrap();
    /// assert!(log_dir.to_string_lossy().ends_with("-lr=0.01,batch_size=1000,num_workers=0,device=cpu"));
    /// ```
    pub fn log_dir(&self) -> Option<&Path> {
        #[cfg(feature = "tensorboard")]
        return self.tb.as_ref().map(|tb| tb.log_dir());
        #[cfg(not(feature = "tensorboard"))]
        None
    }

    /// The folder each run's TensorBoard folder is made in (`runs` by default, as PyTorch's
    /// `SummaryWriter`); `None` after [`without_tensorboard`](Self::without_tensorboard).
    /// Without the prelude's `tensorboard` feature nothing is written there.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(RunManager::new().runs_root(), Some(std::path::Path::new("runs")));
    /// assert_eq!(RunManager::new().without_tensorboard().runs_root(), None);
    /// ```
    pub fn runs_root(&self) -> Option<&Path> {
        self.runs_dir.as_deref()
    }

    /// Every run's TensorBoard folder so far, in the order of the runs.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// for run in RunBuilder::get_runs(&RunParams::new().lr(&[0.01, 0.001])) {
    ///     m.begin_run(&run);
    ///     m.end_run();
    /// }
    /// assert_eq!(m.log_dirs().len(), 2);
    /// for dir in m.log_dirs() {
    ///     println!("{}", dir.display()); // runs/Nov25_20-19-40_myhost-lr=0.01,batch_size=1000,…
    /// }
    /// ```
    pub fn log_dirs(&self) -> &[PathBuf] {
        &self.log_dirs
    }

    /// `m.begin_run(run)`: starts timing a run, and its TensorBoard file
    /// (`SummaryWriter(comment=f'-{run}')`), which gets the epochs' scalars. To log the images
    /// and the parameters' histograms too, as deeplizard's `begin_run(run, network, loader)`
    /// does, use [`begin_run_with`](Self::begin_run_with). The epoch's sums are divided by the
    /// samples that [`track_loss`](Self::track_loss) is given (deeplizard divides by
    /// `len(loader.dataset)`), so the run is all this needs.
    ///
    /// If the folder cannot be made (a read-only directory) the run goes on without TensorBoard
    /// and a warning on stderr says why.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// assert_eq!(m.results()[0].params, *run);
    /// ```
    pub fn begin_run(&mut self, run: &Run) {
        interrupt::check();
        self.end_run();
        self.run = Some(run.clone());
        self.run_start = Instant::now();
        self.epoch = 0;
        self.batches = 0;
        #[cfg(feature = "tensorboard")]
        if let Some(dir) = &self.runs_dir {
            match SummaryWriter::f_with_log_dir(dir.join(run_dir_name(&run.comment()))) {
                Ok(tb) => {
                    self.log_dirs.push(tb.log_dir().to_path_buf());
                    self.tb = Some(tb);
                }
                Err(e) => eprintln!("{e}; this run is not logged to TensorBoard"),
            }
        }
    }

    /// deeplizard's `m.begin_run(run, network, loader)`: [`begin_run`](Self::begin_run), then
    /// `tb.add_image('images', make_grid(images))` of the loader's first batch (its first 64
    /// images: deeplizard grids the whole batch, which at its batch size of 20,000 is one PNG
    /// of 242 × 75,002 pixels and 50 MB in every run's file), and the
    /// network's parameters (its var store's) are watched: every epoch adds a histogram of each
    /// parameter and of its gradient. Like deeplizard's `next(iter(loader))`, taking the first
    /// batch starts an epoch of the loader, which draws from the random generator as PyTorch's
    /// does.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::rand([4, 1, 28, 28], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([4], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 2);
    /// let vs = nn::VarStore::new(Device::Cpu);
    /// let network = Network::new(&vs.root());
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run_with(&RunBuilder::get_runs(&RunParams::new())[0], &vs, &loader);
    /// m.begin_epoch();
    /// m.end_epoch(); // Loss, Accuracy, and conv1.weight … out.bias with their .grad
    /// m.end_run();
    /// # let _ = network;
    /// ```
    pub fn begin_run_with(&mut self, run: &Run, vs: &VarStore, loader: &DataLoader) {
        self.begin_run(run);
        self.batches = loader.len();
        #[cfg(feature = "tensorboard")]
        if let Some(tb) = &mut self.tb {
            self.parameters = crate::device::named_parameters(vs)
                .iter()
                .map(|(name, t)| (name.to_string(), t.shallow_clone()))
                .collect();
            if let Some((images, _labels)) = loader.iter().next() {
                let shown = images.narrow(0, 0, images.size()[0].min(GRID_IMAGES));
                report(tb.f_add_image("images", &make_grid(&shown), 0));
            }
        }
        #[cfg(not(feature = "tensorboard"))]
        let _ = (vs, loader);
    }

    /// Starts an epoch.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// for _ in 0..2 {
    ///     m.begin_epoch();
    ///     m.end_epoch();
    /// }
    /// assert_eq!(m.results()[1].epoch, 2);
    /// ```
    pub fn begin_epoch(&mut self) {
        interrupt::check();
        self.epoch += 1;
        self.epoch_start = Instant::now();
        self.loss_sum = None;
        self.correct = None;
        self.samples = 0;
        if crate::runtime::in_kernel() {
            let run = self.run.as_ref().map_or(0, |run| run.index);
            let description = format!("run {run} epoch {}", self.epoch);
            match &mut self.bar {
                Some(bar) => bar.restart(self.batches, &description),
                None => {
                    self.bar = Some(Progress::new(self.batches, "batch").description(&description))
                }
            }
        }
    }

    /// `m.track_loss(loss, batch)`: adds `loss × batch_len` (the loss is a batch mean).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.track_loss(&Tensor::from(1.0f32), 4); // a batch of 4 with mean loss 1.0
    /// m.track_loss(&Tensor::from(0.5f32), 4);
    /// m.end_epoch();
    /// assert_eq!(m.results()[0].loss, 0.75); // per sample, over the epoch
    /// ```
    pub fn track_loss(&mut self, loss: &Tensor, batch_len: i64) {
        let v = loss.detach().to_kind(Kind::Double) * batch_len as f64;
        self.loss_sum = Some(match self.loss_sum.take() {
            Some(s) => s + v,
            None => v,
        });
        self.samples += batch_len;
        if let Some(bar) = &mut self.bar {
            bar.tick();
        }
    }

    /// `m.track_num_correct(preds, labels)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// let preds = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8]).view([2, 2]);
    /// m.track_loss(&Tensor::from(1.0f32), 2);
    /// m.track_num_correct(&preds, &Tensor::from_slice(&[0i64, 0]));
    /// m.end_epoch();
    /// assert_eq!(m.results()[0].accuracy, 0.5);
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
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch(); // prints the row here; updates the live table in a notebook
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
        #[cfg(feature = "tensorboard")]
        self.log_epoch(correct);
        if let Some(bar) = &mut self.bar {
            bar.finish();
        }
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
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// m.end_run();
    /// ```
    pub fn end_run(&mut self) {
        self.run = None;
        #[cfg(feature = "tensorboard")]
        self.parameters.clear();
        #[cfg(feature = "tensorboard")]
        if let Some(tb) = self.tb.take() {
            report(tb.f_close());
        }
    }

    /// deeplizard's `end_epoch` TensorBoard calls, for the epoch just recorded.
    #[cfg(feature = "tensorboard")]
    fn log_epoch(&mut self, correct: f64) {
        let (Some(tb), Some(last)) = (&mut self.tb, self.results.last()) else {
            return;
        };
        let step = last.epoch as i64;
        report(tb.f_add_scalar("Loss", last.loss, step));
        report(tb.f_add_scalar("Number Correct", correct, step));
        report(tb.f_add_scalar("Accuracy", last.accuracy, step));
        for (name, param) in &self.parameters {
            report(tb.f_add_histogram(name, param, step));
            let grad = param.grad();
            // PyTorch would fail on a parameter that has no gradient yet (`param.grad` is
            // None); an epoch without a backward pass simply has no gradient histograms.
            if grad.defined() {
                report(tb.f_add_histogram(&format!("{name}.grad"), &grad, step));
            }
        }
        // TensorBoard shows every finished epoch while the run goes on.
        report(tb.f_flush());
    }

    /// Every epoch of every run so far.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// let r = &m.results()[0];
    /// println!("run {} epoch {}: loss {:.3} accuracy {:.3}", r.run, r.epoch, r.loss, r.accuracy);
    /// ```
    pub fn results(&self) -> &[EpochResult] {
        &self.results
    }

    /// The results table (what the live display shows).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// assert_eq!(m.table().results.len(), 1);
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
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// let cmp = m.compare_devices();
    /// assert_eq!(cmp.rows[0].0, "cpu");
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
                    (crate::display::device_name(d), m, cpu.map(|c| c / m))
                })
                .collect(),
        }
    }

    /// `m.save(fileName)`: writes `<name>.csv` and `<name>.json`.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
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

/// How many images of the first batch `begin_run_with` puts in the `images` grid: 8 rows of 8.
#[cfg(feature = "tensorboard")]
const GRID_IMAGES: i64 = 64;

/// TensorBoard logging never ends a run: a write that fails says so on stderr.
#[cfg(feature = "tensorboard")]
fn report(result: Result<(), crate::tensorboard::SummaryError>) {
    if let Err(e) = result {
        eprintln!("{e}");
    }
}
