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
//! The front end's messages reach the evaluation process on the kernel's side channel, whose
//! thread applies them at once, even while a cell runs: a loop that reads `lr.value()` each
//! step sees the slider moved the moment the message arrives, with no cell boundary. That
//! thread answers an `update` with an `echo_update` (as ipywidgets 8 does), a `request_state`
//! with the full state, and a reloaded page's `request_states` (on a `jupyter.widget.control`
//! comm) with every open model's.
//!
//! # Callbacks
//!
//! `on_change`, `on_click` and [`interact()`]'s closure run on one prelude thread, the callback
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
//! # One file per widget
//!
//! Each widget's file holds everything about it: its public type and builders, and its kind
//! (a `static` `kind::Kind`, a table: the model's and view's names, its full default state, its
//! style model, its repr and static HTML for front ends without a widget manager, and its rules
//! for the front end's values beyond the types every attribute keeps), and, for a control, what
//! [`interact()`] reads. They are `slider`, `progress`, `button`, `checkbox`, `dropdown`, `text`,
//! `label` (`Label` and `HTML`), `boxes`, `output` and `interact`. What they share lies beside
//! them: `kind` (the table's type, style models, the attributes every DOM and described widget
//! has), `layout` (the layout model every widget references), `model` (the shared model, its
//! comm, the registry of open models), `callbacks` (the callback thread), `validate` (the checks
//! every value gets: size, depth, type), `shown` and `render` (what a kind renders from, and the
//! walk that renders a widget and its children), `bounded` (the sliders' and progress bars'
//! `min..=max`), `widget` (the [`Widget`] and [`Control`] traits and the macros that give a type
//! its builders) and `comm` (answering the front end).
//!
//! ## Adding a widget
//!
//! Write its file as `checkbox.rs` is written: a `pub struct` holding `model: Arc<Model>`, whose
//! `new` makes `Model::new(&KIND)`; `widget!` for its traits and `attributes!` for its builders
//! and setters; `control!` if [`interact()`] may take it; and `static KIND: Kind =
//! Kind { repr, html, style, check, ..Kind::control(name, model, view, defaults) }`, with a
//! `Kind::style` beside it if it has a style model (what it leaves out, `..` fills: no repr
//! fields, no HTML, values checked by their types). Then declare the file below (`mod`) and
//! add one line to the list at the end of this file, which exports its types and lets the
//! Variables panel show them by their repr; and add the types to [`crate::prelude`]'s list for
//! cells to have them in scope.

// What the widgets share.
mod bounded;
mod callbacks;
mod comm;
mod kind;
mod layout;
mod model;
mod render;
mod shown;
mod validate;
mod widget;

// The widgets, one file each (and `interact`, which makes a widget of controls).
mod boxes;
mod button;
mod checkbox;
mod dropdown;
mod interact;
mod label;
mod output;
mod progress;
mod slider;
mod text;

pub(crate) use comm::{answer, open_comms};
pub use dropdown::UnknownOption;
pub use interact::{Controls, IntoOutput, interact};
pub use widget::{Control, Widget};

/// Exports each widget file's widget types, and lists them for [`repr`].
macro_rules! widgets {
    ($($file:ident::{$($t:ident),+};)*) => {
        $(pub use $file::{$($t),+};)*

        /// The repr of `value` if it is a widget (`IntSlider(value=3, min=0, max=10)`), from its
        /// `Display`, which opens nothing: what the Variables panel shows for it.
        pub(crate) fn repr(value: &dyn std::any::Any) -> Option<String> {
            $($(
                if let Some(widget) = value.downcast_ref::<$t>() {
                    return Some(widget.to_string());
                }
            )+)*
            None
        }
    };
}

widgets! {
    slider::{IntSlider, FloatSlider};
    progress::{IntProgress, FloatProgress};
    button::{Button};
    checkbox::{Checkbox};
    dropdown::{Dropdown};
    text::{Text};
    label::{Label, HTML};
    boxes::{HBox, VBox};
    output::{Output};
    interact::{Interact};
}
