//! The histogram of a tensor as PyTorch's `SummaryWriter.add_histogram(tag, values, step)`
//! computes it with its default `bins='tensorflow'` (torch 2.11,
//! `torch/utils/tensorboard/summary.py`, `make_histogram`): NumPy's `np.histogram` over
//! TensorFlow's fixed bucket edges, then trimmed to the buckets that hold values.

use tch::{Device, Kind, Tensor};

/// `SummaryWriter._get_default_bins()`: `v = 1e-12`, times 1.1 while below 1e20, mirrored
/// through 0 (TensorFlow's default buckets): 1549 edges, computed in the same order of
/// floating-point operations so the edges equal PyTorch's bit for bit.
///
/// ```
/// use tchbook_prelude::tensorboard::default_bucket_edges;
/// let edges = default_bucket_edges();
/// assert_eq!(edges.len(), 1549);
/// assert_eq!(edges[774], 0.0);
/// assert_eq!((edges[775], edges[776]), (1e-12, 1e-12 * 1.1));
/// assert_eq!(edges[0], -edges[1548]);
/// ```
pub fn default_bucket_edges() -> Vec<f64> {
    let mut positive = Vec::new();
    let mut v = 1e-12;
    while v < 1e20 {
        positive.push(v);
        v *= 1.1;
    }
    let mut edges: Vec<f64> = positive.iter().rev().map(|v| -v).collect();
    edges.push(0.0);
    edges.extend(positive);
    edges
}

/// A histogram in TensorBoard's `HistogramProto` form: what [`SummaryWriter::add_histogram`]
/// writes.
///
/// `bucket[i]` counts the values from the bucket's left edge (included) up to `bucket_limit[i]`
/// (excluded, except for the last edge of all), as `np.histogram` counts; the left edge of
/// `bucket[0]` is the edge below `bucket_limit[0]`, and `bucket[0]` is 0 (PyTorch adds that empty
/// bucket so that the leftmost limit is kept: TensorBoard stores only right limits). Values
/// beyond ±1.1e20 and NaNs are counted in `num` but in no bucket, as in PyTorch.
///
/// [`SummaryWriter::add_histogram`]: super::SummaryWriter::add_histogram
///
/// ```
/// use tchbook_prelude::prelude::*;
/// use tchbook_prelude::tensorboard::Histogram;
/// let h = Histogram::of(&Tensor::from_slice(&[1.0f32, 2.0, 2.0, -3.0]));
/// assert_eq!((h.min, h.max, h.num, h.sum, h.sum_squares), (-3.0, 2.0, 4.0, 2.0, 18.0));
/// assert_eq!(h.bucket.iter().sum::<f64>(), 4.0);
/// assert_eq!(h.bucket.len(), h.bucket_limit.len());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// How many values.
    pub num: f64,
    /// Their sum.
    pub sum: f64,
    /// The sum of their squares.
    pub sum_squares: f64,
    /// Each bucket's right edge.
    pub bucket_limit: Vec<f64>,
    /// Each bucket's count.
    pub bucket: Vec<f64>,
}

impl Histogram {
    /// The histogram of every element of `t` (any shape, dtype or device). Panics on an empty
    /// tensor, as PyTorch raises `ValueError` there; [`f_of`](Self::f_of) returns `None`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// use tchbook_prelude::tensorboard::Histogram;
    /// let h = Histogram::of(&Tensor::randn([100], (Kind::Float, Device::Cpu)));
    /// assert_eq!(h.num, 100.0);
    /// ```
    pub fn of(t: &Tensor) -> Histogram {
        Self::f_of(t).unwrap_or_else(|| {
            panic!(
                "add_histogram: the tensor has no elements (shape {:?})",
                t.size()
            )
        })
    }

    /// The fallible twin of [`of`](Self::of): `None` for a tensor without elements, or one
    /// whose values all fall outside the buckets (NaN, or beyond ±1.1e20).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// use tchbook_prelude::tensorboard::Histogram;
    /// assert!(Histogram::f_of(&Tensor::zeros([0], (Kind::Float, Device::Cpu))).is_none());
    /// ```
    pub fn f_of(t: &Tensor) -> Option<Histogram> {
        let flat = t
            .detach()
            .to_device(Device::Cpu)
            .to_kind(Kind::Double)
            .flatten(0, -1);
        let values = Vec::<f64>::try_from(&flat).ok()?;
        Self::of_values(&values, &default_bucket_edges())
    }

    /// `make_histogram(values, bins)` for bucket `edges` in ascending order.
    fn of_values(values: &[f64], edges: &[f64]) -> Option<Histogram> {
        if values.is_empty() {
            return None;
        }
        let mut counts = vec![0.0f64; edges.len() - 1];
        let last_bucket = counts.len() - 1;
        for &v in values {
            // np.histogram: [edge, next edge), the last bucket closed on the right; values
            // outside the edges (and NaNs) fall in no bucket.
            if v >= edges[0] && v <= edges[edges.len() - 1] {
                let i = edges.partition_point(|&e| e <= v) - 1;
                counts[i.min(last_bucket)] += 1.0;
            }
        }
        let first_full = counts.iter().position(|&c| c > 0.0)?;
        let last_full = counts.iter().rposition(|&c| c > 0.0)?;
        // PyTorch keeps the buckets from the first to the last non-empty one, with the bucket
        // before them (or a 0 where there is none) so that the first one's left edge survives.
        let (start, end) = (first_full, last_full + 1);
        let bucket = if start > 0 {
            counts[start - 1..end].to_vec()
        } else {
            std::iter::once(0.0)
                .chain(counts[..end].iter().copied())
                .collect()
        };
        let bucket_limit = edges[start..=end].to_vec();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Histogram {
            min,
            max,
            num: values.len() as f64,
            sum: values.iter().sum(),
            sum_squares: values.iter().map(|v| v * v).sum(),
            bucket_limit,
            bucket,
        })
    }
}
