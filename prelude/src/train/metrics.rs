//! Small metrics for a visible loop: batch accuracy, correct counts, a stopwatch.

use crate::display::{Bundle, Render, rich};
use serde_json::json;
use std::time::Instant;
use tch::{Kind, Tensor};

/// Fraction of rows whose arg-max over the last dimension equals the label:
/// `(prob.argmax(dim=-1) == y).float().mean().item()`. (One device sync, like `.item()`.)
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let logits = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8]).view([2, 2]);
/// let labels = Tensor::from_slice(&[0i64, 0]);
/// assert_eq!(batch_accuracy(&logits, &labels), 0.5);
/// ```
pub fn batch_accuracy(scores: &Tensor, labels: &Tensor) -> f64 {
    scores
        .argmax(-1, false)
        .eq_tensor(labels)
        .to_kind(Kind::Float)
        .mean(Kind::Float)
        .double_value(&[])
}

/// deeplizard's `get_num_correct(preds, labels)`: how many rows are right.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let preds = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8]).view([2, 2]);
/// assert_eq!(num_correct(&preds, &Tensor::from_slice(&[0i64, 1])), 2);
/// ```
pub fn num_correct(preds: &Tensor, labels: &Tensor) -> i64 {
    preds
        .argmax(1, false)
        .eq_tensor(labels)
        .sum(Kind::Int64)
        .int64_value(&[])
}

/// A stopwatch (`start = time.time()` … `time.time() - start`). It does not synchronise a GPU:
/// call [`crate::cuda::synchronize`] first when timing CUDA work.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let timer = Timer::start();
/// assert!(timer.elapsed() >= 0.0);
/// println!("TOTAL TRAINING TIME: {}", timer.elapsed());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    start: Instant,
}

impl Timer {
    /// Starts now.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let start = Timer::start();
    /// println!("TOTAL TRAINING TIME: {}", start.elapsed());
    /// ```
    pub fn start() -> Self {
        Timer {
            start: Instant::now(),
        }
    }

    /// Seconds since the start.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(Timer::start().elapsed() < 60.0);
    /// ```
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Seconds since the start, and restarts.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut t = Timer::start();
    /// let first = t.lap();
    /// let second = t.lap();
    /// # let _ = (first, second);
    /// ```
    pub fn lap(&mut self) -> f64 {
        let e = self.elapsed();
        self.start = Instant::now();
        e
    }
}

impl Render for Timer {
    fn bundle(&self) -> Bundle {
        Bundle::text(format!("{:.3} s", self.elapsed()))
            .with_data("timer", json!({"elapsed_s": self.elapsed()}))
    }
}

rich!(Timer);
