//! `torch.utils.data.DataLoader`: batches in order or shuffled (seeded), `drop_last`, parallel
//! prefetch workers, pinned memory and the move to the training device.
//!
//! Workers prefetch batches in parallel but are read round-robin, so the batches come out in
//! exactly the order `num_workers(0)` gives. A batch is one `index_select` per tensor of a
//! contiguous data set (a view when unshuffled), never a stack of per-sample copies.

use super::Dataset;
use crate::interrupt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, sync_channel};
use tch::{Device, Kind, Tensor};

/// Batches of a [`Dataset`], iterated as `for (x, y) in &loader`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let ds = TensorDataset::new(Tensor::arange(10, (Kind::Float, Device::Cpu)),
///                             Tensor::arange(10, (Kind::Int64, Device::Cpu)));
/// let loader = DataLoader::new(&ds, 4).drop_last(true);
/// assert_eq!(loader.len(), 2);
/// let sizes: Vec<i64> = loader.iter().map(|(x, _)| x.size()[0]).collect();
/// assert_eq!(sizes, [4, 4]);
/// ```
pub struct DataLoader {
    dataset: Arc<dyn Dataset>,
    batch_size: usize,
    shuffle: bool,
    seed: Option<u64>,
    drop_last: bool,
    num_workers: usize,
    prefetch: usize,
    pin_memory: bool,
    device: Option<(Device, bool)>,
    epoch: AtomicU64,
}

/// What [`DataLoader::new`] accepts: a [`super::TensorDataset`] by value, any cloneable data set
/// by reference (cloning a `TensorDataset` shares its tensors), or an `Arc` of any data set.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
/// let by_ref = DataLoader::new(&ds, 4);
/// let by_value = DataLoader::new(ds, 4);
/// # let _ = (by_ref, by_value);
/// ```
pub trait IntoLoaderDataset {
    /// The shared data set.
    fn into_shared(self) -> Arc<dyn Dataset>;
}

impl IntoLoaderDataset for super::TensorDataset {
    fn into_shared(self) -> Arc<dyn Dataset> {
        Arc::new(self)
    }
}

impl<D: Dataset + 'static> IntoLoaderDataset for Arc<D> {
    fn into_shared(self) -> Arc<dyn Dataset> {
        self
    }
}

impl<D: Dataset + Clone + 'static> IntoLoaderDataset for &D {
    fn into_shared(self) -> Arc<dyn Dataset> {
        Arc::new(self.clone())
    }
}

impl DataLoader {
    /// `DataLoader(dataset, batch_size=...)`: in order, no workers, last partial batch kept.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4);
    /// assert_eq!(loader.len(), 3);
    /// ```
    pub fn new(dataset: impl IntoLoaderDataset, batch_size: usize) -> Self {
        DataLoader {
            dataset: dataset.into_shared(),
            batch_size: batch_size.max(1),
            shuffle: false,
            seed: None,
            drop_last: false,
            num_workers: 0,
            prefetch: 2,
            pin_memory: false,
            device: None,
            epoch: AtomicU64::new(0),
        }
    }

    /// `shuffle=True`: a new order every epoch. Without [`seed`](Self::seed) the order comes
    /// from libtorch's global generator, so `tch::manual_seed` makes it repeatable as
    /// `torch.manual_seed` does in PyTorch.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).shuffle(true);
    /// # let _ = loader;
    /// ```
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// A fixed seed for the shuffle: epoch `k` of two loaders with the same seed gives the same
    /// order, independent of anything else in the process.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).shuffle(true).seed(0);
    /// # let _ = loader;
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// `drop_last=True`: skip the last batch if it is smaller than `batch_size`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).drop_last(true);
    /// assert_eq!(loader.len(), 2);
    /// # let _ = loader;
    /// ```
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// `num_workers=n`: `n` threads gather batches ahead of the loop (0: in the loop itself).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).num_workers(2);
    /// # let _ = loader;
    /// ```
    pub fn num_workers(mut self, n: usize) -> Self {
        self.num_workers = n;
        self
    }

    /// Batches each worker prepares ahead (`prefetch_factor`, default 2).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).num_workers(2).prefetch_factor(4);
    /// # let _ = loader;
    /// ```
    pub fn prefetch_factor(mut self, n: usize) -> Self {
        self.prefetch = n.max(1);
        self
    }

    /// `pin_memory=True`: batches are placed in page-locked memory so the copy to a CUDA device
    /// can be asynchronous. Ignored without CUDA (as PyTorch does, with a warning there).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).pin_memory(true);
    /// # let _ = loader;
    /// ```
    pub fn pin_memory(mut self, pin: bool) -> Self {
        self.pin_memory = pin;
        self
    }

    /// Moves every batch to `device` as it is handed out (`x.to(device, non_blocking=...)`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([4, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([4], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 2).pin_memory(true).to_device(best_device(), true);
    /// for (x, _) in &loader { assert_eq!(x.device(), best_device()); }
    /// ```
    pub fn to_device(mut self, device: Device, non_blocking: bool) -> Self {
        self.device = Some((device, non_blocking));
        self
    }

    /// Number of batches per epoch (`len(loader)`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(DataLoader::new(&ds, 4).len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        let n = self.dataset.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// Whether an epoch has no batches.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// assert!(!DataLoader::new(&ds, 4).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of samples (`len(loader.dataset)`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(DataLoader::new(&ds, 4).dataset_len(), 10);
    /// ```
    pub fn dataset_len(&self) -> usize {
        self.dataset.len()
    }

    /// The batch size.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// assert_eq!(DataLoader::new(&ds, 4).batch_size(), 4);
    /// ```
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The sample order of the next epoch (and advances the epoch).
    fn next_order(&self) -> Vec<i64> {
        let n = self.dataset.len();
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst);
        if !self.shuffle {
            return (0..n as i64).collect();
        }
        match self.seed {
            Some(seed) => {
                let mut rng = super::standin::Rng::new(
                    seed.wrapping_add(epoch.wrapping_mul(0x2545_f491_4f6c_dd1d)),
                );
                let mut order: Vec<i64> = (0..n as i64).collect();
                for i in (1..n).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    order.swap(i, j);
                }
                order
            }
            None => Vec::<i64>::try_from(&Tensor::randperm(n as i64, (Kind::Int64, Device::Cpu)))
                .unwrap_or_else(|_| (0..n as i64).collect()),
        }
    }

    /// One epoch's batches. Each call starts a new epoch (a new shuffle).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// for (i, (x, y)) in DataLoader::new(&ds, 4).iter().enumerate() {
    ///     println!("batch {i}: {:?} {:?}", x.size(), y.size());
    /// }
    /// ```
    pub fn iter(&self) -> Batches<'_> {
        let order = Arc::new(self.next_order());
        let total = self.len();
        let pin = self.pin_memory && crate::cuda::is_available();
        let workers = (0..self.num_workers.min(total))
            .map(|k| {
                let (tx, rx) = sync_channel(self.prefetch);
                let dataset = Arc::clone(&self.dataset);
                let order = Arc::clone(&order);
                let (step, bs, n) = (
                    self.num_workers.min(total),
                    self.batch_size,
                    self.dataset.len(),
                );
                std::thread::Builder::new()
                    .name(format!("tchbook-loader-{k}"))
                    .spawn(move || {
                        let mut b = k;
                        while b < total {
                            let batch = gather(&*dataset, &order, b, bs, n, pin);
                            // The receiver is gone when the loop ended early (break, interrupt).
                            if tx.send(batch).is_err() {
                                return;
                            }
                            b += step;
                        }
                    })
                    .expect("failed to start a DataLoader worker thread");
                rx
            })
            .collect();
        Batches {
            loader: self,
            order,
            next: 0,
            total,
            workers,
            pin,
        }
    }
}

fn gather(
    dataset: &dyn Dataset,
    order: &[i64],
    b: usize,
    bs: usize,
    n: usize,
    pin: bool,
) -> (Tensor, Tensor) {
    let start = b * bs;
    let end = (start + bs).min(n);
    let (x, y) = dataset.get_batch(&order[start..end]);
    // Only CPU memory can be page-locked; a data set already on the GPU is left alone.
    if pin && x.device() == Device::Cpu {
        (x.pin_memory(Device::Cuda(0)), y.pin_memory(Device::Cuda(0)))
    } else {
        (x, y)
    }
}

impl<'a> IntoIterator for &'a DataLoader {
    type Item = (Tensor, Tensor);
    type IntoIter = Batches<'a>;
    fn into_iter(self) -> Batches<'a> {
        self.iter()
    }
}

/// One epoch of a [`DataLoader`]. Checks the kernel's interrupt flag before every batch.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
/// let loader = DataLoader::new(&ds, 4);
/// let batches = loader.iter();
/// assert_eq!(batches.len(), 3);
/// ```
pub struct Batches<'a> {
    loader: &'a DataLoader,
    order: Arc<Vec<i64>>,
    next: usize,
    total: usize,
    workers: Vec<Receiver<(Tensor, Tensor)>>,
    pin: bool,
}

impl Iterator for Batches<'_> {
    type Item = (Tensor, Tensor);

    fn next(&mut self) -> Option<(Tensor, Tensor)> {
        if self.next >= self.total {
            return None;
        }
        interrupt::check();
        let b = self.next;
        self.next += 1;
        let (x, y) = if self.workers.is_empty() {
            let l = self.loader;
            gather(
                &*l.dataset,
                &self.order,
                b,
                l.batch_size,
                l.dataset.len(),
                self.pin,
            )
        } else {
            let k = b % self.workers.len();
            self.workers[k]
                .recv()
                .expect("a DataLoader worker thread died (see its panic above)")
        };
        Some(match self.loader.device {
            Some((device, non_blocking)) if x.device() != device => (
                x.to_device_(device, x.kind(), non_blocking, false),
                y.to_device_(device, y.kind(), non_blocking, false),
            ),
            _ => (x, y),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.total - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Batches<'_> {}
