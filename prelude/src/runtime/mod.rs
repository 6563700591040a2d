//! The prelude's side of the kernel contract (DEVELOPERS.md): the line protocol's writer, the
//! stdout/stderr pump, the SIGINT flag, the panic hook and `input`.
//!
//! The kernel calls [`attach`] once when the evaluation process starts. From then on:
//! - display calls write `TCHBOOK_DISPLAY <json>` lines ([`emit`] of a [`Message`], the types
//!   `tchbook_wire` shares with the kernel's reader), which the kernel turns into
//!   `display_data` / `update_display_data` / `clear_output` messages;
//! - a panic is reported as a [`Message::Panic`] line, which the kernel shows as the cell's
//!   error (or as stderr text, for a panic in a thread the cell spawned);
//! - fd 1 and fd 2 go through pipes read by one pump thread, which forwards stdout's complete
//!   lines unchanged and stderr's as `stream` messages on stdout (so the two stay in order on
//!   their way through evcxr), and flushes a partial line (a `print!` progress bar) as a
//!   `stream` message after ~50 ms without new bytes; between cells it sends everything on
//!   stderr as messages, which evcxr reads all the time (stdout only while a cell runs);
//! - SIGINT sets the flag that [`crate::interrupt::check`] reports.
//!
//! Outside a kernel (tests, benchmarks, `cargo run`) nothing is attached and every display call
//! prints plain text instead.
//!
//! One job per file: `cell` (the function each cell's code runs through), `state` (the
//! process-wide state all copies of the prelude share), `protocol` (the writer), `pump` and
//! `splitter` (the stdout/stderr pump), `signals`, `input`, `tuning` (allocator and threads),
//! `variables` (the store that keeps a notebook's variables between cells).

mod cell;
mod input;
mod protocol;
mod pump;
mod signals;
mod splitter;
mod state;
mod tuning;
// What the kernel's generated code calls (each cell's wrapper and its variable store): public
// because cells are other crates, hidden because no notebook calls them.
#[doc(hidden)]
pub mod variables;

#[doc(hidden)]
pub use cell::run_cell;
pub use input::{input, input_password};
pub use protocol::{emit, new_display_id};
pub(crate) use state::INTERRUPTED;
pub use state::in_kernel;
pub(crate) use state::shared;
pub use tchbook_wire::{Message, MimeData, StreamName};
pub use tuning::{limit_cpu_allocations, set_threads, tune_allocator};

use std::sync::atomic::Ordering;
use tchbook_wire::env;

/// Connects the prelude to the kernel: reports panics as the kernel reads them (call it on the
/// thread cells run on: a panic on another thread does not end the cell), installs the SIGINT
/// handler, starts the stdout/stderr pump, tunes glibc's allocator ([`tune_allocator`]; the
/// kernel's own process allocates through mimalloc, which these settings leave alone), has
/// libtorch refuse a CPU tensor larger than memory and swap ([`limit_cpu_allocations`]), loads
/// libtorch's CUDA backend where an NVIDIA driver is ([`crate::device::load_cuda`]; call this
/// before any CUDA question to tch), and marks the process as inside a kernel so display calls
/// emit message lines. Idempotent; the kernel calls it once.
///
/// ```no_run
/// tchbook_prelude::runtime::attach();
/// tchbook_prelude::runtime::attach(); // a second call does nothing
/// ```
pub fn attach() {
    let state = shared();
    if state.attached.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: gettid(2) cannot fail.
    state
        .cell_thread
        .store(unsafe { libc::gettid() }, Ordering::SeqCst);
    tchbook_wire::install_panic_hook_for(emit, signals::on_cells_thread);
    signals::install_sigint_handler();
    signals::install_sigterm_handler();
    signals::make_waits_interruptible();
    tune_allocator();
    limit_cpu_allocations();
    crate::backend::load_cuda();
    if std::env::var_os(env::NO_PUMP).is_none() {
        pump::start_pump();
    }
}
