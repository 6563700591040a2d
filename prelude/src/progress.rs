//! Progress bars for long loops (tqdm's shape): done/total, rate, elapsed and ETA, updated in
//! place in the notebook at most ten times a second. Each tick checks the interrupt flag.
//! In a plain process nothing is printed until [`Progress::finish`], which prints one line.

use crate::display::{Bundle, Live, Render, rich};
use crate::interrupt;
use std::time::{Duration, Instant};

const REDRAW: Duration = Duration::from_millis(100);

/// A progress bar.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut bar = Progress::new(100, "batch").description("epoch 1");
/// for _ in 0..100 {
///     bar.tick();
/// }
/// bar.set_postfix("loss=0.123");
/// bar.finish();
/// assert_eq!(bar.done(), 100);
/// ```
pub struct Progress {
    total: usize,
    done: usize,
    unit: String,
    description: String,
    postfix: String,
    start: Instant,
    live: Live,
    finished: bool,
}

impl Progress {
    /// A bar over `total` steps of `unit` (0 when unknown).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// # let _ = &mut bar;
    /// ```
    pub fn new(total: usize, unit: &str) -> Self {
        Progress {
            total,
            done: 0,
            unit: unit.to_string(),
            description: String::new(),
            postfix: String::new(),
            start: Instant::now(),
            live: Live::new(REDRAW),
            finished: false,
        }
    }

    /// A label shown before the bar ("epoch 1").
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let bar = Progress::new(100, "batch").description("epoch 1");
    /// # let _ = bar;
    /// ```
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.to_string();
        self
    }

    /// Text shown after the bar ("loss=0.52").
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// bar.set_postfix(format!("loss={:.3}", 0.25));
    /// ```
    pub fn set_postfix(&mut self, text: impl Into<String>) {
        self.postfix = text.into();
        self.redraw(false);
    }

    /// One step done.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// bar.tick();
    /// assert_eq!(bar.done(), 1);
    /// ```
    pub fn tick(&mut self) {
        self.inc(1)
    }

    /// `n` steps done. Panics with `KeyboardInterrupt` if the user interrupted.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// bar.inc(10);
    /// assert_eq!(bar.done(), 10);
    /// ```
    pub fn inc(&mut self, n: usize) {
        interrupt::check();
        self.done += n;
        self.redraw(false);
    }

    /// Steps done so far.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// assert_eq!(bar.done(), 0);
    /// ```
    pub fn done(&self) -> usize {
        self.done
    }

    /// Seconds since the bar started.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// assert!(bar.elapsed() >= 0.0);
    /// ```
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Draws the final state (and prints it in a plain process).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(100, "batch");
    /// bar.inc(100);
    /// bar.finish();
    /// ```
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.redraw(true);
        if !self.live.shown() {
            println!("{}", self.bundle().text);
        }
    }

    fn redraw(&mut self, force: bool) {
        if self.live.due(force) {
            let frame = self.bundle();
            self.live.draw(&frame);
        }
    }

    fn rate(&self) -> f64 {
        let e = self.elapsed();
        // Over the first few milliseconds a rate is noise (one step in 10 µs is not 100k/s).
        if e > 0.05 { self.done as f64 / e } else { 0.0 }
    }
}

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

impl Render for Progress {
    fn bundle(&self) -> Bundle {
        let frac = if self.total > 0 {
            (self.done as f64 / self.total as f64).min(1.0)
        } else {
            0.0
        };
        let rate = self.rate();
        let eta = if rate > 0.0 && self.total > self.done {
            clock((self.total - self.done) as f64 / rate)
        } else {
            "00:00".into()
        };
        let width = 20;
        let filled = (frac * width as f64).round() as usize;
        let bar = format!("{}{}", "█".repeat(filled), "░".repeat(width - filled));
        let counts = if self.total > 0 {
            format!("{:3.0}% {}/{}", frac * 100.0, self.done, self.total)
        } else {
            format!("{}", self.done)
        };
        let label = if self.description.is_empty() {
            String::new()
        } else {
            format!("{} ", self.description)
        };
        let post = if self.postfix.is_empty() {
            String::new()
        } else {
            format!(" {}", self.postfix)
        };
        let text = format!(
            "{label}{bar} {counts} [{}<{eta}, {rate:.1} {}/s]{post}",
            clock(self.elapsed()),
            self.unit
        );
        let html = format!(
            "<div class=\"tchbook-progress\" style=\"font-family:monospace\">{}\
             <progress value=\"{}\" max=\"{}\" style=\"width:20em\"></progress> {} [{}&lt;{}, {:.1} {}/s]{}</div>",
            crate::sys::escape_html(&label),
            self.done,
            self.total.max(1),
            crate::sys::escape_html(&counts),
            clock(self.elapsed()),
            eta,
            rate,
            crate::sys::escape_html(&self.unit),
            crate::sys::escape_html(&post)
        );
        Bundle::text(text).with_html(html).with_data(
            "progress",
            serde_json::json!({
                "done": self.done, "total": self.total, "elapsed_s": self.elapsed(), "rate": rate,
                "description": self.description, "postfix": self.postfix,
            }),
        )
    }
}

rich!(Progress);

/// Wraps an iterator with a progress bar (`tqdm(iterable)`); the bar finishes when the
/// iterator ends.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let total: i32 = progress(0..10).sum();
/// assert_eq!(total, 45);
/// ```
pub fn progress<I: IntoIterator>(iter: I) -> ProgressIter<I::IntoIter> {
    let iter = iter.into_iter();
    let total = iter.size_hint().1.unwrap_or(0);
    ProgressIter {
        iter,
        bar: Progress::new(total, "it"),
    }
}

/// The iterator [`progress`] returns.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// for x in progress(0..3).description("warm-up") {
///     let _ = x;
/// }
/// ```
pub struct ProgressIter<I> {
    iter: I,
    bar: Progress,
}

impl<I> ProgressIter<I> {
    /// A label before the bar.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let n = progress(0..3).description("warm-up").count();
    /// assert_eq!(n, 3);
    /// ```
    pub fn description(mut self, text: &str) -> Self {
        self.bar = self.bar.description(text);
        self
    }
}

impl<I: Iterator> Iterator for ProgressIter<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        match self.iter.next() {
            Some(item) => {
                if self.bar.done == 0 && !self.bar.live.shown() {
                    interrupt::check();
                    self.bar.redraw(true);
                }
                self.bar.done += 1;
                self.bar.redraw(false);
                interrupt::check();
                Some(item)
            }
            None => {
                self.bar.finish();
                None
            }
        }
    }
}
