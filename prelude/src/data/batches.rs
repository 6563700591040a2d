//! One epoch of a [`DataLoader`]: the batches in the epoch's order, gathered on the loop's thread
//! or by worker threads that are read round-robin (so the order never depends on the workers),
//! pinned and moved to the training device as they are handed out.

use super::dataset::Dataset;
use super::loader::DataLoader;
use crate::interrupt;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use tch::{Device, Tensor};

impl DataLoader {
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
            sampler_exhausted: false,
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
    // Only CPU memory can be page-locked; a data set already on the GPU is left alone. The batch
    // is freshly gathered, so never pinned yet: `_pin_memory` pins it without the check
    // `pin_memory` makes first, and without the deprecation warning libtorch prints on every call
    // of `pin_memory` given a device (which tch always passes).
    if pin && x.device() == Device::Cpu {
        (
            x.internal_pin_memory(Device::Cuda(0)),
            y.internal_pin_memory(Device::Cuda(0)),
        )
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
    sampler_exhausted: bool,
}

impl Batches<'_> {
    /// PyTorch's sampler runs out when the batch after the last is asked for, or already while
    /// a partial last batch is filled (`drop_last=False`).
    fn exhaust_sampler(&mut self) {
        if !self.sampler_exhausted {
            self.sampler_exhausted = true;
            self.loader.sampler_exhausted();
        }
    }
}

impl Iterator for Batches<'_> {
    type Item = (Tensor, Tensor);

    fn next(&mut self) -> Option<(Tensor, Tensor)> {
        if self.next >= self.total {
            self.exhaust_sampler();
            return None;
        }
        interrupt::check();
        let b = self.next;
        self.next += 1;
        let l = self.loader;
        if b + 1 == self.total && !l.drop_last && !l.dataset.len().is_multiple_of(l.batch_size) {
            self.exhaust_sampler();
        }
        let (x, y) = if self.workers.is_empty() {
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
