//! deeplizard's `RunManager`: times runs and epochs and collects their loss and accuracy.

use super::runs::Run;
use super::table::{DeviceComparison, EpochResult, RunTable, row_text};
use crate::display::{Bundle, DisplayHandle, Render, rich, show};
use crate::interrupt;
use std::path::Path;
use std::time::Instant;
use tch::{Device, Kind, Tensor};

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

    /// `m.begin_run(run)`: starts timing a run. deeplizard's (PyTorch's) `begin_run(run,
    /// network, loader)` keeps the network and the loader to send a batch of images and the graph
    /// to TensorBoard and to divide the epoch's sums by `len(loader.dataset)`; this manager shows
    /// its table in the notebook instead and counts the samples that
    /// [`track_loss`](Self::track_loss) is given, so the run is all it needs.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// assert_eq!(m.results()[0].params, *run);
    /// ```
    pub fn begin_run(&mut self, run: &Run) {
        interrupt::check();
        self.run = Some(run.clone());
        self.run_start = Instant::now();
        self.epoch = 0;
    }

    /// Starts an epoch.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
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
    }

    /// `m.track_loss(loss, batch)`: adds `loss × batch_len` (the loss is a batch mean).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
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
    }

    /// `m.track_num_correct(preds, labels)`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
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
    /// m.begin_run(run);
    /// m.begin_epoch();
    /// m.end_epoch();
    /// m.end_run();
    /// ```
    pub fn end_run(&mut self) {
        self.run = None;
    }

    /// Every epoch of every run so far.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let run = &RunBuilder::get_runs(&RunParams::new())[0];
    /// let mut m = RunManager::new();
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
