//! Training helpers: small parts for a visible loop — batch accuracy, a timer, and deeplizard's
//! RunBuilder/RunManager over a grid of hyper-parameters with a results table that updates live
//! and a TensorBoard run per combination.
//!
//! The whole loop, as a notebook writes it (the methods' own examples show one step each):
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let params = RunParams::new().lr(&[0.01]).batch_size(&[2]).num_workers(&[0]).device(&["cpu"]);
//! let ds = TensorDataset::new(Tensor::randn([4, 1, 28, 28], (Kind::Float, Device::Cpu)),
//!                             Tensor::zeros([4], (Kind::Int64, Device::Cpu)));
//! let mut m = RunManager::new();
//! # let mut m = m.runs_dir(std::env::temp_dir().join("tchbook-doc-runs"));
//! for run in RunBuilder::get_runs(&params) {
//!     let vs = nn::VarStore::new(run.device);
//!     let network = Network::new(&vs.root());
//!     let mut opt = nn::Adam::default().build(&vs, run.lr).unwrap();
//!     let loader = DataLoader::new(&ds, run.batch_size).num_workers(run.num_workers);
//!     m.begin_run_with(&run, &vs, &loader); // TensorBoard: images, and histograms per epoch
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

mod manager;
mod metrics;
mod runs;
mod table;

pub use manager::RunManager;
pub use metrics::{Timer, batch_accuracy, num_correct};
pub use runs::{Run, RunBuilder, RunParams};
pub use table::{DeviceComparison, EpochResult, RunTable};
