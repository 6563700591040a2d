//! The [`Dataset`] abstraction and [`TensorDataset`], which every data set the prelude loads is.

use super::error::DataError;
use crate::display::{Bundle, Render, device_name, html_table, kind_name, rich, text_table};
use tch::{Device, Tensor};

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
                kind_name(t.kind()).to_string(),
                device_name(t.device()),
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
