//! Rich display: every prelude value a cell ends with renders as HTML (or an image) in the
//! notebook and as text elsewhere.
//!
//! Two routes reach the front end:
//! - a cell's final value: evcxr calls the value's `evcxr_display()`. Prelude types have it as
//!   an inherent method, tensors through [`TensorDisplay`]; in the kernel (and exported
//!   programs) it sends the value's [`Bundle`] and its metadata as one message, which the kernel
//!   shows as the cell's result when the cell ends, and elsewhere prints evcxr's content blocks
//!   (`EVCXR_BEGIN_CONTENT <mime>` … `EVCXR_END_CONTENT`, [`Bundle::evcxr_blocks`]). A type of
//!   your own calls [`Bundle::evcxr_display`] in its `evcxr_display`, or prints evcxr's blocks
//!   itself, as for evcxr's own kernel.
//! - the live protocol (DEVELOPERS.md): [`show`] returns a [`DisplayHandle`] whose
//!   [`update`](DisplayHandle::update) replaces the output in place while the cell runs. Loss
//!   plots, progress bars and run tables use it.
//!
//! Outside a kernel, [`show`] and updates print the text form instead and never fail.
//!
//! Std values (numbers, strings, `Vec`, ...) get evcxr's own `{:?}` text through
//! [`PlainDisplay`], which spares evcxr a second compilation of the cell.
//!
//! One file per job, each importing at most `bundle` among its siblings: `bundle.rs` (the
//! vocabulary: [`Bundle`], [`Render`], the `rich!` macro), `table.rs` (text and HTML tables),
//! `live.rs` (mid-cell outputs over the kernel protocol), `tensor.rs` (tensors as PyTorch
//! prints them), `plain.rs` (std values as evcxr prints them).

pub(crate) mod bundle;
mod live;
mod plain;
mod table;
mod tensor;

pub use bundle::{Bundle, Render, data_mime};
pub(crate) use bundle::{encode_png, rich};
pub(crate) use live::Live;
pub(crate) use live::holding_live_outputs;
pub use live::{DisplayHandle, clear_output, show};
pub use plain::{PlainDisplay, set_plain_format};
pub(crate) use table::{html_table, text_table};
pub use tensor::TensorDisplay;
pub(crate) use tensor::{device_name, kind_name};

/// Marks the start (`end` false) and the end of a cell's final value's display: the code the
/// kernel generates for the value calls it around the value's `evcxr_display()`, so that the
/// content blocks printed between the marks are read as the value's own rendering
/// (`tchbook_wire::value`). Compiled here once rather than in every cell. Not for notebooks.
///
/// ```
/// tchbook_prelude::display::__value_mark(false); // outside a kernel: writes nothing
/// ```
#[doc(hidden)]
pub fn __value_mark(end: bool) {
    use std::io::Write;
    if let Some(line) = tchbook_wire::value::value_mark_line(end) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
}
