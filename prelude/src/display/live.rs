//! Live outputs: shown mid-cell through the kernel's display protocol and replaced in place.

use super::bundle::{Bundle, Render};
use crate::runtime;
use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    /// How many calls of [`holding_live_outputs`] this thread is inside.
    static HELD: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` with live outputs held back on this thread: a plot or progress bar made and fed
/// inside it draws nothing while it runs. `interact` calls its function so, as ipywidgets runs
/// it inside the widget's output: what the function returns is drawn there, and a plot it
/// fills point by point must not also appear, half drawn, above the widget.
pub(crate) fn holding_live_outputs<R>(f: impl FnOnce() -> R) -> R {
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            HELD.with(|held| held.set(held.get() - 1));
        }
    }
    HELD.with(|held| held.set(held.get() + 1));
    let _release = Release;
    f()
}

/// A live output: created by [`show`], replaced in place by [`update`](Self::update).
///
/// ```
/// use tchbook_prelude::display::{show, Bundle};
/// let handle = show(&Bundle::text("step 1"));
/// handle.update(&Bundle::text("step 2")); // outside a kernel: prints "step 2"
/// ```
#[derive(Debug, Clone)]
pub struct DisplayHandle {
    id: Option<String>,
}

impl DisplayHandle {
    /// Replaces the output with a new rendering (inside a kernel; prints the text otherwise).
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// let h = show(&Bundle::text("epoch 1"));
    /// h.update(&Bundle::text("epoch 2"));
    /// ```
    pub fn update<T: Render + ?Sized>(&self, value: &T) {
        let bundle = value.bundle();
        match &self.id {
            Some(id) => runtime::emit(&update_message(&bundle, id)),
            None => println!("{}", bundle.text),
        }
    }

    /// Replaces the output only inside a kernel; a plain process prints nothing. For frequent
    /// updates (progress) whose text form would flood a log.
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// let h = show(&Bundle::text("0%"));
    /// h.update_quiet(&Bundle::text("50%")); // prints nothing outside a kernel
    /// ```
    pub fn update_quiet<T: Render + ?Sized>(&self, value: &T) {
        if let Some(id) = &self.id {
            runtime::emit(&update_message(&value.bundle(), id));
        }
    }

    /// The display id used on the protocol (`None` outside a kernel).
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// assert!(show(&Bundle::text("x")).id().is_none()); // not inside a kernel
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

/// Shows a value now (mid-cell) and returns a handle to update it in place.
/// Outside a kernel it prints the value's text form.
///
/// ```
/// use tchbook_prelude::display::{show, Bundle};
/// let h = show(&Bundle::text("hello"));
/// assert!(h.id().is_none()); // doc tests are not inside a kernel
/// ```
pub fn show<T: Render + ?Sized>(value: &T) -> DisplayHandle {
    let bundle = value.bundle();
    if runtime::in_kernel() {
        let id = runtime::new_display_id();
        runtime::emit(&display_message(&bundle, &id));
        DisplayHandle { id: Some(id) }
    } else {
        println!("{}", bundle.text);
        DisplayHandle { id: None }
    }
}

fn display_message(bundle: &Bundle, display_id: &str) -> runtime::Message {
    runtime::Message::Display {
        data: bundle.data(),
        metadata: bundle.metadata(),
        display_id: Some(display_id.to_owned()),
    }
}

fn update_message(bundle: &Bundle, display_id: &str) -> runtime::Message {
    runtime::Message::Update {
        data: bundle.data(),
        metadata: bundle.metadata(),
        display_id: display_id.to_owned(),
    }
}

/// Like [`show`] but a plain process prints nothing now (the caller prints a final text later).
pub(crate) fn show_quiet<T: Render + ?Sized>(value: &T) -> DisplayHandle {
    if runtime::in_kernel() {
        let id = runtime::new_display_id();
        runtime::emit(&display_message(&value.bundle(), &id));
        DisplayHandle { id: Some(id) }
    } else {
        DisplayHandle { id: None }
    }
}

/// A live output redrawn at most once per `every` (the shared half of plots and progress bars).
/// Outside a kernel it never draws.
pub(crate) struct Live {
    every: Duration,
    handle: Option<DisplayHandle>,
    last: Option<Instant>,
}

impl Live {
    pub(crate) fn new(every: Duration) -> Self {
        Live {
            every,
            handle: None,
            last: None,
        }
    }

    /// Whether to redraw now: inside a kernel and not held back ([`holding_live_outputs`]),
    /// when forced or when `every` has passed.
    pub(crate) fn due(&mut self, force: bool) -> bool {
        if !runtime::in_kernel() || HELD.with(|held| held.get() > 0) {
            return false;
        }
        let now = Instant::now();
        if !force && self.last.is_some_and(|t| now - t < self.every) {
            return false;
        }
        self.last = Some(now);
        true
    }

    /// Shows the value the first time, replaces it in place afterwards.
    pub(crate) fn draw<T: Render + ?Sized>(&mut self, value: &T) {
        match &self.handle {
            Some(h) => h.update_quiet(value),
            None => self.handle = Some(show_quiet(value)),
        }
    }

    /// Whether anything was drawn yet.
    pub(crate) fn shown(&self) -> bool {
        self.handle.is_some()
    }
}

/// Clears the cell's output (Jupyter's `clear_output(wait)`); does nothing outside a kernel.
///
/// ```
/// tchbook_prelude::display::clear_output(true);
/// ```
pub fn clear_output(wait: bool) {
    runtime::emit(&runtime::Message::Clear { wait });
}
