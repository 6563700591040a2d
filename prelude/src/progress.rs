//! Progress bars for long loops (tqdm's shape): done/total, rate, elapsed and ETA, updated in
//! place in the notebook at most ten times a second. Each tick checks the interrupt flag.
//! In a plain process nothing is printed until [`Progress::finish`], which prints one line.
//!
//! Inside a kernel a bar is what `tqdm.notebook` shows: a widget, `HBox([HTML(description),
//! FloatProgress(value = steps done, max = total, bar_style), HTML("12/100 [00:01<00:09,
//! 9.8 batch/s]")])`, moved by comm updates. Its one display also carries the HTML bar and the text line, for front ends
//! without a widget manager (nbconvert, a notebook viewer); at the end, `finish` (or the bar
//! dropped unfinished: a panic, an interrupt, a loop left early) sets the bar's colour, green
//! (`success`) or red (`danger`), and replaces that display with the final state, so the saved
//! notebook's fallback is current.

use crate::display::{Bundle, Live, Render, rich};
use crate::interrupt;
use crate::widgets::{FloatProgress, HBox, HTML};
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
    /// The widget, once shown inside a kernel.
    widget: Option<Tqdm>,
    finished: bool,
    /// Ended by a panic or before its total: drawn red.
    failed: bool,
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
            widget: None,
            finished: false,
            failed: false,
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

    /// Starts the bar again over `total` steps, with a new description, in the same display
    /// (the same widget inside a kernel): one bar for a loop that repeats, such as the
    /// `RunManager`'s over each epoch's batches.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut bar = Progress::new(2, "batch").description("epoch 1");
    /// bar.inc(2);
    /// bar.finish();
    /// bar.restart(3, "epoch 2");
    /// bar.tick();
    /// assert_eq!(bar.done(), 1);
    /// ```
    pub fn restart(&mut self, total: usize, description: &str) {
        self.total = total;
        self.done = 0;
        self.description = description.to_string();
        self.postfix.clear();
        self.start = Instant::now();
        self.finished = false;
        self.failed = false;
        self.redraw(true);
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
        self.settle();
        if !self.live.shown() {
            println!("{}", self.bundle().text);
        }
    }

    /// Inside a kernel, when due: the widget's state (one update each of its parts that
    /// changed), or, the first time, the widget and its display.
    fn redraw(&mut self, force: bool) {
        if !self.live.due(force) {
            return;
        }
        let parts = self.parts();
        let style = self.bar_style();
        match &self.widget {
            Some(widget) => widget.set(&parts, style),
            None => {
                let widget = Tqdm::new();
                widget.set(&parts, style);
                let frame = self.frame(&widget);
                self.live.draw(&frame);
                self.widget = Some(widget);
            }
        }
    }

    /// Replaces the display with the final state: the fallback views a saved notebook keeps.
    fn settle(&mut self) {
        if let Some(widget) = &self.widget {
            let frame = self.frame(widget);
            self.live.draw(&frame);
        }
    }

    /// The display: the widget's view beside the HTML bar and the text line.
    fn frame(&self, widget: &Tqdm) -> Bundle {
        let mut frame = self.bundle();
        frame.widget = widget.view();
        frame
    }

    fn bar_style(&self) -> &'static str {
        match (self.finished, self.failed) {
            (false, _) => "",
            (true, false) => "success",
            (true, true) => "danger",
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

/// A bar's numbers, as text: what every view of it shows.
struct Parts {
    /// Done over total, 0 to 1 (`None` when the total is unknown).
    frac: Option<f64>,
    /// Steps done and the total, as `tqdm.notebook`'s bar counts them (its value and max).
    steps: (usize, usize),
    /// ` 42%` (`None` when the total is unknown).
    percent: Option<String>,
    /// `42/100`, or `42` when the total is unknown.
    count: String,
    /// `00:01<00:09, 9.8 batch/s` (elapsed, remaining, rate).
    times: String,
    /// The description and a space, or nothing.
    label: String,
    /// A space and the postfix, or nothing.
    post: String,
}

impl Progress {
    fn parts(&self) -> Parts {
        let frac = (self.total > 0).then(|| (self.done as f64 / self.total as f64).min(1.0));
        let rate = self.rate();
        let eta = if rate > 0.0 && self.total > self.done {
            clock((self.total - self.done) as f64 / rate)
        } else {
            "00:00".into()
        };
        let (percent, count) = match frac {
            Some(frac) => (
                Some(format!("{:3.0}%", frac * 100.0)),
                format!("{}/{}", self.done, self.total),
            ),
            None => (None, self.done.to_string()),
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
        Parts {
            frac,
            steps: (self.done.min(self.total), self.total),
            percent,
            count,
            times: format!("{}<{eta}, {rate:.1} {}/s", clock(self.elapsed()), self.unit),
            label,
            post,
        }
    }
}

impl Render for Progress {
    fn bundle(&self) -> Bundle {
        let Parts {
            frac,
            percent,
            count,
            times,
            label,
            post,
            ..
        } = self.parts();
        let counts = match percent {
            Some(percent) => format!("{percent} {count}"),
            None => count,
        };
        let width = 20;
        let filled = (frac.unwrap_or(0.0) * width as f64).round() as usize;
        let bar = format!("{}{}", "█".repeat(filled), "░".repeat(width - filled));
        let text = format!("{label}{bar} {counts} [{times}]{post}");
        let html = format!(
            "<div class=\"tchbook-progress\" style=\"font-family:monospace\">{}\
             <progress value=\"{}\" max=\"{}\" style=\"width:20em\"></progress> {} [{}]{}</div>",
            crate::sys::escape_html(&label),
            self.done,
            self.total.max(1),
            crate::sys::escape_html(&counts),
            crate::sys::escape_html(&times),
            crate::sys::escape_html(&post)
        );
        Bundle::text(text).with_html(html).with_data(
            "progress",
            serde_json::json!({
                "done": self.done, "total": self.total, "elapsed_s": self.elapsed(),
                "rate": self.rate(), "description": self.description, "postfix": self.postfix,
            }),
        )
    }
}

impl Drop for Progress {
    /// A bar shown inside a kernel and dropped unfinished ends as tqdm's does: red if a panic
    /// (an interrupt is one) unwinds through it or it stopped short of its total, green
    /// otherwise, and its display replaced with that final state.
    fn drop(&mut self) {
        if self.finished || self.widget.is_none() {
            return;
        }
        self.failed = std::thread::panicking() || (self.total > 0 && self.done < self.total);
        self.finished = true;
        self.redraw(true);
        self.settle();
    }
}

/// The widget `tqdm.notebook` draws: the description and percentage, the bar, and the counts,
/// times and rate.
struct Tqdm {
    row: HBox,
    left: HTML,
    bar: FloatProgress,
    right: HTML,
}

impl Tqdm {
    fn new() -> Self {
        let left = HTML::new("");
        let bar = FloatProgress::new().min(0.0);
        let right = HTML::new("");
        let row = HBox::new(&[&left, &bar, &right]);
        Tqdm {
            row,
            left,
            bar,
            right,
        }
    }

    /// Moves the widget to `parts` (each `set_*` is an update only where the value changed).
    fn set(&self, parts: &Parts, style: &str) {
        let escape = crate::sys::escape_html;
        let left = format!("{}{}", parts.label, parts.percent.as_deref().unwrap_or(""));
        self.left.set_value(escape(left.trim()));
        match parts.frac {
            Some(_) => {
                let (done, total) = parts.steps;
                self.bar.set_max(total as f64);
                self.bar.set_value(done as f64);
                self.bar.set_bar_style(style);
            }
            None => {
                // tqdm's bar without a total: full, in the info colour, until it ends.
                self.bar.set_max(1.0);
                self.bar.set_value(1.0);
                self.bar
                    .set_bar_style(if style.is_empty() { "info" } else { style });
            }
        }
        self.right.set_value(escape(&format!(
            "{} [{}]{}",
            parts.count, parts.times, parts.post
        )));
    }

    /// The widget view's model id (its comms opened now, inside a kernel).
    fn view(&self) -> Option<String> {
        self.row.bundle().widget
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
