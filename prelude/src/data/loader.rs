//! `torch.utils.data.DataLoader`: batches in order or shuffled (seeded), `drop_last`, parallel
//! prefetch workers, pinned memory and the move to the training device.
//!
//! Workers prefetch batches in parallel but are read round-robin, so the batches come out in
//! exactly the order `num_workers(0)` gives. A batch is one `index_select` per tensor of a
//! contiguous data set (a view when unshuffled), never a stack of per-sample copies.
//!
//! **The same order as PyTorch.** A shuffled epoch is the permutation PyTorch's
//! `RandomSampler` draws (torch 2.11, `torch/utils/data/sampler.py` and `dataloader.py`), and
//! every epoch takes from the generator what PyTorch's DataLoader takes, so that training after
//! `tch::manual_seed(s)` sees the batches — and later random draws — that PyTorch sees after
//! `torch.manual_seed(s)`:
//! - each epoch (`iter(loader)`) first draws a 64-bit `_base_seed` for the workers (also when
//!   not shuffling);
//! - without [`DataLoader::seed`], `RandomSampler` then draws a seed from the global generator
//!   and runs `torch.randperm(n)` on a fresh `torch.Generator()` seeded with it;
//! - with `.seed(s)`, as with `DataLoader(..., generator=torch.Generator().manual_seed(s))`,
//!   both come from the loader's own generator, and when the sampler runs out at the end of an
//!   epoch it draws one more (unused) `randperm(n)` from it, as PyTorch's does.
//!
//! Where this cannot match: PyTorch with `num_workers > 0` reads sample indices ahead of the
//! loop, so if a seeded epoch is left early (`break`) the loader's generator may have moved on
//! further there than here, and the following epochs differ. Runs to the end of each epoch
//! match, with or without workers.

use super::dataset::{Dataset, TensorDataset};
use super::split::Mt19937;
use std::sync::{Arc, Mutex, PoisonError};
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
    pub(super) dataset: Arc<dyn Dataset>,
    pub(super) batch_size: usize,
    shuffle: bool,
    generator: Option<Mutex<TorchGenerator>>,
    pub(super) drop_last: bool,
    pub(super) num_workers: usize,
    pub(super) prefetch: usize,
    pub(super) pin_memory: bool,
    pub(super) device: Option<(Device, bool)>,
}

/// What [`DataLoader::new`] accepts: a [`TensorDataset`] by value, any cloneable data set
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

impl IntoLoaderDataset for TensorDataset {
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
            generator: None,
            drop_last: false,
            num_workers: 0,
            prefetch: 2,
            pin_memory: false,
            device: None,
        }
    }

    /// `shuffle=True`: a new order every epoch. Without [`seed`](Self::seed) the order comes
    /// from libtorch's global generator, so after `tch::manual_seed(s)` the epochs come in the
    /// order PyTorch's `DataLoader(..., shuffle=True)` gives after `torch.manual_seed(s)`.
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

    /// The loader's own generator, `generator=torch.Generator().manual_seed(seed)` in
    /// PyTorch: epoch `k` of two loaders with the same seed gives the same order, independent of
    /// anything else in the process, and the same order as PyTorch's loader with that generator.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let ds = TensorDataset::new(Tensor::zeros([10, 2], (Kind::Float, Device::Cpu)),
    ///                             Tensor::zeros([10], (Kind::Int64, Device::Cpu)));
    /// let loader = DataLoader::new(&ds, 4).shuffle(true).seed(0);
    /// # let _ = loader;
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.generator = Some(Mutex::new(TorchGenerator::new(seed)));
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

    /// The sample order of the next epoch, drawn as PyTorch's DataLoader draws it (see the
    /// module's documentation).
    pub(super) fn next_order(&self) -> Vec<i64> {
        let n = self.dataset.len();
        match &self.generator {
            Some(generator) => {
                let mut g = generator.lock().unwrap_or_else(PoisonError::into_inner);
                let _base_seed = g.random_int64();
                if self.shuffle {
                    g.randperm(n)
                } else {
                    (0..n as i64).collect()
                }
            }
            None => {
                let _base_seed = global_random_int64();
                if self.shuffle {
                    TorchGenerator::new(global_random_int64() as u64).randperm(n)
                } else {
                    (0..n as i64).collect()
                }
            }
        }
    }

    /// What PyTorch's `RandomSampler` draws from the loader's own generator when it runs out:
    /// the `randperm(n)` for a last, empty slice of samples.
    pub(super) fn sampler_exhausted(&self) {
        if let (true, Some(generator)) = (self.shuffle, &self.generator) {
            let mut g = generator.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = g.randperm(self.dataset.len());
        }
    }
}

/// `torch.empty((), dtype=torch.int64).random_()`: 63 random bits from libtorch's global CPU
/// generator (two of its 32-bit draws).
fn global_random_int64() -> i64 {
    let mut t = Tensor::empty([], (Kind::Int64, Device::Cpu));
    let _ = t.random_();
    t.int64_value(&[])
}

/// libtorch's CPU generator (`at::CPUGeneratorImpl`: the 32-bit Mersenne twister of
/// `ATen/core/MT19937RNGEngine.h`, seeded as numpy's), for the loader's own generator and
/// `RandomSampler`'s per-epoch one: tch has no `torch.Generator` objects.
/// `prelude/tests/parity.rs` checks the loader's orders against PyTorch's.
struct TorchGenerator(Mt19937);

impl TorchGenerator {
    /// `torch.Generator().manual_seed(seed)` (libtorch keeps the low 32 bits).
    fn new(seed: u64) -> Self {
        TorchGenerator(Mt19937::new(seed as u32))
    }

    /// `CPUGeneratorImpl::random64()`: two draws, the first the high half.
    fn random64(&mut self) -> u64 {
        let hi = u64::from(self.0.next_u32());
        let lo = u64::from(self.0.next_u32());
        (hi << 32) | lo
    }

    /// `torch.empty((), dtype=torch.int64).random_(generator=g)`: `random64()` modulo 2^63.
    fn random_int64(&mut self) -> i64 {
        (self.random64() & (u64::MAX >> 1)) as i64
    }

    /// `torch.randperm(n, generator=g)` on the CPU: libtorch's swap loop (`randperm_cpu`), one
    /// 32-bit draw per place, or a 64-bit one from n = 2^32 / 20 up.
    fn randperm(&mut self, n: usize) -> Vec<i64> {
        let small = (n as u64) < u64::from(u32::MAX / 20);
        let mut r: Vec<i64> = (0..n as i64).collect();
        for i in 0..n.saturating_sub(1) {
            let draw = if small {
                u64::from(self.0.next_u32())
            } else {
                self.random64()
            };
            let z = (draw % (n - i) as u64) as usize;
            r.swap(i, i + z);
        }
        r
    }
}
