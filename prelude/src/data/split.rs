//! `sklearn.model_selection.train_test_split`, with the same rows in each part as scikit-learn
//! picks for the same `random_state`: scikit-learn shuffles with numpy's legacy `RandomState`
//! (MT19937), reproduced here, so the Iris tutorial's `random_state=33` split is the same split.

use super::error::DataError;
use tch::Tensor;

/// MT19937 seeded as numpy's `RandomState(seed)` — and as libtorch's CPU generator, which is
/// the same engine with the same seeding (the DataLoader's shuffle uses it).
pub(crate) struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    pub(crate) fn new(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1812433253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for i in 0..624 {
                let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
                let mut v = self.state[(i + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.state[i] = v;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// numpy's legacy `random_interval(max)`: uniform in 0..=max by masked rejection.
    fn interval(&mut self, max: u32) -> u32 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        for shift in [1, 2, 4, 8, 16] {
            mask |= mask >> shift;
        }
        loop {
            let v = self.next_u32() & mask;
            if v <= max {
                return v;
            }
        }
    }
}

/// `numpy.random.RandomState(seed).permutation(n)`.
pub(crate) fn numpy_permutation(n: usize, seed: u32) -> Vec<i64> {
    let mut rng = Mt19937::new(seed);
    let mut p: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        let j = rng.interval(i as u32) as usize;
        p.swap(i, j);
    }
    p
}

/// The fallible twin of [`train_test_split`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let x = Tensor::zeros([10, 2], (Kind::Float, Device::Cpu));
/// let y = Tensor::zeros([9], (Kind::Int64, Device::Cpu));
/// assert!(tchbook_prelude::data::f_train_test_split(&x, &y, 0.2, 0).is_err());
/// ```
pub fn f_train_test_split(
    x: &Tensor,
    y: &Tensor,
    test_size: f64,
    random_state: u32,
) -> Result<(Tensor, Tensor, Tensor, Tensor), DataError> {
    let n = x.size().first().copied().unwrap_or(0);
    if y.size().first().copied() != Some(n) || n == 0 {
        return Err(DataError::Invalid(format!(
            "train_test_split: x and y need the same, non-zero first dimension, got {:?} and {:?}",
            x.size(),
            y.size()
        )));
    }
    if !(test_size > 0.0 && test_size < 1.0) {
        return Err(DataError::Invalid(format!(
            "train_test_split: test_size must be between 0 and 1, got {test_size}"
        )));
    }
    // scikit-learn: n_test = ceil(test_size * n), n_train = floor((1 - test_size) * n).
    let n_test = (test_size * n as f64).ceil() as usize;
    let n_train = ((1.0 - test_size) * n as f64).floor() as usize;
    let perm = numpy_permutation(n as usize, random_state);
    let test = Tensor::from_slice(&perm[..n_test]).to_device(x.device());
    let train = Tensor::from_slice(&perm[n_test..n_test + n_train]).to_device(x.device());
    let ty = if y.device() == x.device() {
        None
    } else {
        Some(y.device())
    };
    let pick = |t: &Tensor, idx: &Tensor| match ty {
        Some(d) if t.device() == d => t.index_select(0, &idx.to_device(d)),
        _ => t.index_select(0, idx),
    };
    Ok((
        pick(x, &train),
        pick(x, &test),
        pick(y, &train),
        pick(y, &test),
    ))
}

/// `X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=33)`:
/// the same rows in each part as scikit-learn.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let iris = load_iris().unwrap();
/// let (x_train, x_test, y_train, y_test) = train_test_split(&iris.data, &iris.target, 0.2, 33);
/// assert_eq!((x_train.size()[0], x_test.size()[0]), (120, 30));
/// assert_eq!((y_train.size()[0], y_test.size()[0]), (120, 30));
/// ```
pub fn train_test_split(
    x: &Tensor,
    y: &Tensor,
    test_size: f64,
    random_state: u32,
) -> (Tensor, Tensor, Tensor, Tensor) {
    f_train_test_split(x, y, test_size, random_state).unwrap_or_else(|e| panic!("{e}"))
}
