//! Data: the [`Dataset`] abstraction, [`TensorDataset`], the [`DataLoader`] a training loop
//! iterates, the tutorials' data sets in their real on-disk formats, transforms, splits,
//! downloads and stand-ins.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let x = Tensor::arange(20, (Kind::Float, Device::Cpu)).view([10, 2]);
//! let y = Tensor::arange(10, (Kind::Int64, Device::Cpu));
//! let dataset = TensorDataset::new(x, y);
//! let loader = DataLoader::new(&dataset, 4).shuffle(true).seed(0);
//! for (inputs, labels) in &loader {
//!     assert_eq!(inputs.size()[0], labels.size()[0]);
//! }
//! ```

/// `new`, `f_new` and `locate_or_standin` for a data set type (`Cifar10`, `Mnist`, ...):
/// `$read(set, root, train, transform)` reads its files.
macro_rules! dataset_entry_points {
    ($t:ident, $set:expr, $read:path) => {
        impl $t {
            /// Loads the training (`train = true`) or the test split from `root` (torchvision's
            /// layout under it, or the files themselves), applying `transform` to all images.
            /// Panics naming the file and what is wrong with it (see [`f_new`](Self::f_new)).
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("let train_set = ", stringify!($t), "::new(\"./data\", true, &transforms::ToTensor());")]
            /// println!("{} images", train_set.len());
            /// ```
            // `new` returns the data set, not `Self`, to read like torchvision's constructor:
            // `Cifar10::new("./data", true, &transform)` ≈ `CIFAR10(root='./data', train=True, ...)`.
            #[allow(clippy::new_ret_no_self)]
            pub fn new(
                root: impl AsRef<std::path::Path>,
                train: bool,
                transform: &$crate::data::transforms::Transform,
            ) -> $crate::data::TensorDataset {
                Self::f_new(root, train, transform).unwrap_or_else(|e| panic!("{e}"))
            }

            /// The fallible twin of [`new`](Self::new).
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("match ", stringify!($t), "::f_new(\"./data\", false, &transforms::ToTensor()) {")]
            ///     Ok(test_set) => println!("{}", test_set.name()),
            ///     Err(e) => println!("{e}"), // names the file and what is wrong
            /// }
            /// ```
            pub fn f_new(
                root: impl AsRef<std::path::Path>,
                train: bool,
                transform: &$crate::data::transforms::Transform,
            ) -> Result<$crate::data::TensorDataset, $crate::data::DataError> {
                $read($set, root.as_ref(), train, transform)
            }

            /// Finds the data set under `root`; if its files are absent, writes marked stand-in
            /// files there (`n_train` and `n_test` images) in the real format. Never downloads
            /// (see [`fetch`](crate::data::fetch)). The handle says which it is.
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("let located = ", stringify!($t), "::locate_or_standin(\"data\", 12_000, 2_000).unwrap();")]
            /// println!("{}", located.describe());
            /// let train_set = located.train(&transforms::ToTensor()).unwrap();
            /// # let _ = train_set;
            /// ```
            pub fn locate_or_standin(
                root: impl AsRef<std::path::Path>,
                n_train: usize,
                n_test: usize,
            ) -> Result<$crate::data::Located, $crate::data::DataError> {
                $crate::data::fetch::locate($set, root.as_ref(), n_train, n_test)
            }
        }
    };
}

mod cifar;
mod csv;
mod fetch;
mod idx;
mod loader;
mod split;
pub mod standin;
pub mod transforms;

pub use cifar::Cifar10;
pub use csv::{Bunch, CsvTable, IRIS_CSV, f_read_csv, iris, load_iris, read_csv, write_iris};
pub use fetch::{DataSet, Located, f_fetch, fetch};
pub use idx::{FashionMnist, Mnist};
pub use loader::{Batches, DataLoader, IntoLoaderDataset};
pub use split::{f_train_test_split, train_test_split};

use crate::display::{Bundle, Render, html_table, rich, text_table};
use std::path::{Path, PathBuf};
use tch::{Device, Kind, Tensor};

/// A data set: indexable (input, target) pairs. `get_batch` gathers many at once; the default
/// stacks `get` results, [`TensorDataset`] overrides it with one `index_select` per tensor.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// struct Squares;
/// impl Dataset for Squares {
///     fn len(&self) -> usize { 10 }
///     fn get(&self, i: usize) -> (Tensor, Tensor) {
///         (Tensor::from(i as f32), Tensor::from((i * i) as f32))
///     }
/// }
/// let (x, y) = Squares.get_batch(&[2, 3]);
/// assert_eq!(Vec::<f32>::try_from(&y).unwrap(), [4.0, 9.0]);
/// # let _ = x;
/// ```
pub trait Dataset: Send + Sync {
    /// Number of samples (`len(dataset)`).
    fn len(&self) -> usize;
    /// Sample `index` (`dataset[index]`).
    fn get(&self, index: usize) -> (Tensor, Tensor);
    /// Samples at `indices`, stacked along a new first dimension.
    fn get_batch(&self, indices: &[i64]) -> (Tensor, Tensor) {
        let (xs, ys): (Vec<Tensor>, Vec<Tensor>) =
            indices.iter().map(|&i| self.get(i as usize)).unzip();
        (Tensor::stack(&xs, 0), Tensor::stack(&ys, 0))
    }
    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Inputs and targets held as two tensors with the same first dimension
/// (`torch.utils.data.TensorDataset`). Every data set the prelude loads is one.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
/// assert_eq!(ds.len(), 5);
/// let (x, y) = ds.get(0);
/// assert_eq!((x.size(), y.size()), (vec![3], vec![]));
/// ```
#[derive(Debug)]
pub struct TensorDataset {
    inputs: Tensor,
    targets: Tensor,
    name: String,
    classes: Vec<String>,
    standin: bool,
}

// SAFETY: tch's Tensor is Send but not Sync because nothing stops two threads from mutating one
// tensor in place. A TensorDataset only ever reads its tensors through &self (index_select,
// narrow, shallow_clone), which libtorch supports from many threads at once; nothing reachable
// through &TensorDataset mutates them.
unsafe impl Sync for TensorDataset {}

impl Clone for TensorDataset {
    fn clone(&self) -> Self {
        TensorDataset {
            inputs: self.inputs.shallow_clone(),
            targets: self.targets.shallow_clone(),
            name: self.name.clone(),
            classes: self.classes.clone(),
            standin: self.standin,
        }
    }
}

impl TensorDataset {
    /// A data set of `inputs[i]`, `targets[i]`. Panics if the first dimensions differ
    /// (see [`f_new`](Self::f_new)).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.len(), 5);
    /// ```
    pub fn new(inputs: Tensor, targets: Tensor) -> Self {
        Self::f_new(inputs, targets).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`new`](Self::new).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let e = TensorDataset::f_new(Tensor::zeros([3], (Kind::Float, Device::Cpu)),
    ///                              Tensor::zeros([4], (Kind::Float, Device::Cpu)));
    /// assert!(e.is_err());
    /// ```
    pub fn f_new(inputs: Tensor, targets: Tensor) -> Result<Self, DataError> {
        let (a, b) = (
            inputs.size().first().copied(),
            targets.size().first().copied(),
        );
        if a.is_none() || a != b {
            return Err(DataError::Invalid(format!(
                "inputs and targets must have the same first dimension, got {:?} and {:?}",
                inputs.size(),
                targets.size()
            )));
        }
        // Contiguous once here, so every batch is a plain gather (index_select) or a view.
        Ok(TensorDataset {
            inputs: inputs.contiguous(),
            targets: targets.contiguous(),
            name: "TensorDataset".into(),
            classes: Vec::new(),
            standin: false,
        })
    }

    pub(crate) fn named(mut self, name: &str, classes: &[&str], standin: bool) -> Self {
        self.name = name.to_string();
        self.classes = classes.iter().map(|s| s.to_string()).collect();
        self.standin = standin;
        self
    }

    /// All inputs as one tensor (`dataset.data` after transforms).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.inputs().size(), [5, 3]);
    /// ```
    pub fn inputs(&self) -> &Tensor {
        &self.inputs
    }

    /// All targets as one tensor (`dataset.targets`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.targets().size(), [5]);
    /// ```
    pub fn targets(&self) -> &Tensor {
        &self.targets
    }

    /// Class names (`dataset.classes`), empty if unnamed.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert!(ds.classes().is_empty());
    /// ```
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Whether this data set was loaded from generated stand-in files, not the real data.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert!(!ds.is_standin());
    /// ```
    pub fn is_standin(&self) -> bool {
        self.standin
    }

    /// The data set's name as shown, e.g. "CIFAR-10 train" or "CIFAR-10 train (stand-in)".
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([5, 3], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([5], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.name(), "TensorDataset");
    /// ```
    pub fn name(&self) -> String {
        if self.standin {
            format!("{} (stand-in)", self.name)
        } else {
            self.name.clone()
        }
    }

    /// A copy with both tensors on `device` (a whole small data set on the GPU, as the Iris
    /// tutorial does with `X_train.cuda()`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([2, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([2], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.to_device(Device::Cpu).inputs().device(), Device::Cpu);
    /// ```
    pub fn to_device(&self, device: Device) -> TensorDataset {
        let mut out = self.clone();
        out.inputs = self.inputs.to_device(device);
        out.targets = self.targets.to_device(device);
        out
    }

    /// The first `n` samples (a smaller data set for a quick run; shares storage).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([9, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([9], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(ds.take(4).len(), 4);
    /// ```
    pub fn take(&self, n: usize) -> TensorDataset {
        let n = n.min(Dataset::len(self)) as i64;
        let mut out = self.clone();
        out.inputs = self.inputs.narrow(0, 0, n);
        out.targets = self.targets.narrow(0, 0, n);
        out
    }
}

impl Dataset for TensorDataset {
    fn len(&self) -> usize {
        self.inputs.size()[0] as usize
    }

    fn get(&self, index: usize) -> (Tensor, Tensor) {
        (
            self.inputs.get(index as i64),
            self.targets.get(index as i64),
        )
    }

    fn get_batch(&self, indices: &[i64]) -> (Tensor, Tensor) {
        let first = indices.first().copied().unwrap_or(0);
        let consecutive = indices
            .iter()
            .enumerate()
            .all(|(k, &i)| i == first + k as i64);
        if consecutive {
            // An unshuffled batch is a view: no copy at all.
            let n = indices.len() as i64;
            (
                self.inputs.narrow(0, first, n),
                self.targets.narrow(0, first, n),
            )
        } else {
            let index = Tensor::from_slice(indices).to_device(self.inputs.device());
            (
                self.inputs.index_select(0, &index),
                self.targets.index_select(0, &index),
            )
        }
    }
}

impl Render for TensorDataset {
    fn bundle(&self) -> Bundle {
        let header = ["", "shape", "dtype", "device"].map(String::from).to_vec();
        let row = |label: &str, t: &Tensor| {
            vec![
                label.to_string(),
                format!("{:?}", t.size()),
                crate::tensor_fmt::kind_name(t.kind()).to_string(),
                crate::tensor_fmt::device_name(t.device()),
            ]
        };
        let rows = vec![row("inputs", &self.inputs), row("targets", &self.targets)];
        let mut title = format!("{}: {} samples", self.name(), Dataset::len(self));
        if !self.classes.is_empty() {
            title.push_str(&format!(" · classes: {}", self.classes.join(", ")));
        }
        let text = format!("{title}\n{}", text_table(&header, &rows));
        Bundle::text(text).with_html(html_table(Some(&title), &header, &rows))
    }
}

rich!(TensorDataset);

/// Why data could not be loaded: always names the file and what was wrong.
///
/// ```
/// use tchbook_prelude::data::DataError;
/// let e = DataError::Format { path: "data_batch_1.bin".into(), problem: "truncated".into() };
/// assert_eq!(e.to_string(), "data_batch_1.bin: truncated");
/// ```
#[derive(Debug)]
pub enum DataError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file is not in the expected format (truncated, corrupt, wrong magic number, ...).
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        problem: String,
    },
    /// The files are not there; the message says how to get them.
    Missing {
        /// Where they were looked for.
        path: PathBuf,
        /// What to do next.
        hint: String,
    },
    /// A download failed (offline, server error, checksum mismatch).
    Download(String),
    /// Bad arguments.
    Invalid(String),
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DataError::Format { path, problem } => write!(f, "{}: {problem}", path.display()),
            DataError::Missing { path, hint } => write!(f, "{} not found: {hint}", path.display()),
            DataError::Download(m) | DataError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> DataError {
    DataError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn format_error(path: &Path, problem: impl Into<String>) -> DataError {
    DataError::Format {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Reads a whole file, transparently gunzipping `*.gz`.
pub(crate) fn read_maybe_gz(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = std::fs::read(path).map_err(|e| io_error(path, e))?;
    if path.extension().and_then(|e| e.to_str()) == Some("gz") {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| format_error(path, format!("not a valid gzip file ({e})")))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Marks a directory as holding stand-in files (read by the loaders, shown in displays).
pub(crate) const STANDIN_MARKER: &str = "STANDIN.txt";

pub(crate) fn is_standin_dir(dir: &Path) -> bool {
    dir.join(STANDIN_MARKER).exists()
}

/// Uint8 images [N, C, H, W] from raw bytes.
pub(crate) fn images_u8(bytes: &[u8], n: i64, c: i64, h: i64, w: i64) -> Tensor {
    Tensor::from_slice(bytes).view([n, c, h, w])
}

/// Int64 labels from raw bytes.
pub(crate) fn labels_i64(bytes: &[u8]) -> Tensor {
    Tensor::from_slice(bytes).to_kind(Kind::Int64)
}
