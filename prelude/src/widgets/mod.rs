//! Jupyter widgets from Rust: ipywidgets' models (protocol version 2, the model specification
//! of ipywidgets 8), so JupyterLab, Notebook 7 and VS Code draw sliders, buttons, progress bars
//! and output areas a notebook's code reads and writes, live while a cell runs.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let lr = FloatSlider::new().min(0.0001).max(0.1).step(0.0001).with_value(0.01).description("lr");
//! let stop = Checkbox::new().description("stop");
//! let status = Label::new("not started");
//! show(&VBox::new(&[&lr, &stop, &status])); // outside a kernel: prints the text form
//! for epoch in 0..3 {
//!     if stop.value() {
//!         break;
//!     }
//!     let rate = lr.value(); // the slider's position now, moved while this loop runs
//!     status.set_value(format!("epoch {epoch}, lr {rate}"));
//! }
//! ```
//!
//! # How it works
//!
//! Each widget is a comm of target `jupyter.widget` whose model the front end keeps in step
//! with the one here. A widget is a handle on that model (`Arc`): clones share it, builder
//! calls (`.max(10)`) only set its state, and the first show, [`crate::display::show`] or a
//! cell ending with it, opens its comm (its layout, style and children first, as their ids are
//! in its state) with the full state, then displays one output that carries the widget's view
//! (`application/vnd.jupyter.widget-view+json`), its repr as `text/plain` and an HTML
//! rendering of its state for front ends without a widget manager (nbconvert). After that,
//! every `set_*` sends an `update`. A widget stays open until [`Widget::close`], as in Python,
//! whether or not a variable still names it. Outside a kernel (`cargo test`, an exported
//! program) nothing is opened and showing prints the text form.
//!
//! The front end's messages reach the evaluation process on the kernel's panels socket, whose
//! thread applies them at once, even while a cell runs: a loop that reads `lr.value()` each
//! step sees the slider moved the moment the message arrives, with no cell boundary. That
//! thread answers an `update` with an `echo_update` (as ipywidgets 8 does), a `request_state`
//! with the full state, and a reloaded page's `request_states` (on a `jupyter.widget.control`
//! comm) with every open model's.
//!
//! # Callbacks
//!
//! `on_change`, `on_click` and [`interact`]'s closure run on one prelude thread, the callback
//! thread, one at a time in the order the changes arrived, never on the socket's thread and
//! never inside the cell. So a callback may touch only what it captured: clones of widgets
//! (to set a label, append to an [`Output`]), `Arc`s and atomics shared with the cell, data
//! it owns. The notebook's variables live in the running cell (or in the kernel's store between
//! cells) and cannot be borrowed by a callback, which Rust's `'static` bound on the closure
//! enforces. What a callback prints reaches the notebook with the next cell's output; to show
//! something at once, write it to an `Output` widget. A callback that panics is reported and
//! the thread goes on. Changes set from code (`set_value`) call the listeners too, as
//! traitlets' observers are.
//!
//! One job per file: `spec` (every model's full default state), `model` (the shared model, its
//! comm, the registry of open models and the callback thread), `render` (the text and HTML
//! views), `widget` (the [`Widget`] trait and what every widget type gets), `numeric`
//! (sliders, progress bars), `controls` (button, check box, drop-down, text, label, HTML),
//! `boxes`, `output`, `interact`, and `comm` (answering the front end).

mod boxes;
mod comm;
mod controls;
mod interact;
mod model;
mod numeric;
mod output;
mod render;
mod spec;
mod validate;
mod widget;

pub use boxes::{HBox, VBox};
pub(crate) use comm::{answer, open_comms};
pub use controls::{Button, Checkbox, Dropdown, HTML, Label, Text, UnknownOption};
pub use interact::{Control, Controls, Interact, IntoOutput, interact};
pub use numeric::{FloatProgress, FloatSlider, IntProgress, IntSlider};
pub use output::Output;
pub use widget::Widget;
