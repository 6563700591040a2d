//! tchbook: a Jupyter kernel for tensor notebooks in Rust, on evcxr and tch.
//!
//! Modules, each ignorant of the others' internals:
//! - [`transport`]: the connection file and the five ZeroMQ sockets (signing, CurveZMQ
//!   encryption when the file holds keys, the XPUB iopub with its welcome, the heartbeat echo,
//!   the limits on what a client can make them hold). One task owns iopub; everyone else sends
//!   to it through a channel.
//! - [`kernel`]: the wiring: a connection's sockets and the two loops on an engine
//!   ([`kernel::serve`]), and the `tchbook kernel` process around them ([`kernel::run`]).
//! - [`dispatch`]: one handler per message type, named after it; the shell loop (strictly one
//!   request at a time, as ipykernel) and the control loop (its own task, so interrupt and
//!   shutdown work while a cell runs). It drives the engine through [`engine::Evaluator`] only.
//! - [`engine`]: owns evcxr's `CommandContext` on a dedicated thread (evcxr blocks), the
//!   evaluation process, interrupts and crash recovery. Returns plain Rust values.
//! - `display`: turns what the engine reports (stdout lines, the live display line protocol,
//!   final values, compile errors, panics) into Jupyter message contents.
//! - `debugger`: breakpoints in cells for JupyterLab's debugger: gdb's Debug Adapter
//!   Protocol attached to the evaluation process, lines translated between cell and crate.
//! - [`completion`]: completion and hover within JupyterLab's one-second patience:
//!   rust-analyzer in a process of its own, a fallback index until it is warm.
//! - `commands`: the `:` command language, read once for the engine, export and `syntax`.
//! - `syntax`: `is_complete` and the code point ↔ byte offset conversions.
//! - `interrupt_points`: the interrupt check put into each loop of a cell's own code, for the
//!   engine and export.
//! - `history`: this session's cells for `history_request`.
//! - [`cellbuild`]: cell build speed: the cargo front end, the link plan, the persistent per-user build
//!   cache with the embedded prelude sources, libtorch discovery, the environment variables the
//!   kernel sets.
//! - `evaluation`: the evaluation process, the role that loads and runs the cells and holds the
//!   notebook's variables: its loop, its command pipe, its stdin, the guards around each cell and
//!   the side channel, and the blocking calls (sleep, read, write, wait) an interrupt ends on the
//!   cells' thread.
//! - `role`: which of its roles (kernel, evaluation process, cargo front end, rustc wrapper,
//!   linker) this binary plays, decided once at the top of `main`.
//! - [`export`]: `tchbook export`: a notebook as a Cargo project that runs it headless, and
//!   `--merge`, which writes what that program recorded back into the notebook.
//! - [`install`]: kernelspec install/uninstall, the up-front build, `tchbook doctor`.
//! - [`launch`]: `tchbook launch`, the kernel launcher Enterprise Gateway and gateway_provisioners
//!   start in a pod, a container or on a remote host, and the kernelspecs that make them do so.
//! - [`download`]: `tchbook download`, the real data sets where the prelude's loaders look.
//! - `side_channel`: the kernel's end of the evaluation process's side channel, which carries
//!   what JupyterLab's Variables and Kernel Usage panels show and the front end's comm messages,
//!   answered while a cell runs.
//! - `usage`: the process tree's CPU and memory, for the Kernel Usage panel.
//!
//! `tests/layers.rs` fails on an import cycle between these modules, and on the engine, display
//! or transport importing what the list above says they know nothing of.
//!
//! How an `execute_request` flows (DEVELOPERS.md, "The path of a cell", gives each hop's
//! reason): transport's shell reader task verifies and parses it → dispatch's shell loop
//! publishes `busy` and `execute_input` (via the iopub channel) and hands the code to the
//! engine ([`engine::Evaluator::execute`]) → the engine thread has evcxr compile it (through
//! [`cellbuild`]'s cargo front end and link plan) and run it in the evaluation process; every stdout
//! line the cell prints reaches the engine's output pump thread, which passes it on as an
//! engine event → dispatch turns events into `stream` / `display_data` / `update_display_data`
//! / `clear_output` with display's help (the prelude's lines are `tchbook_wire` messages) while
//! the cell runs → the pump forwards the engine's final result only after draining all earlier
//! output, so dispatch publishes the result or error, sends `execute_reply` on shell, then
//! `idle`.

#![warn(unreachable_pub)]

// The library's API is what the `tchbook` binary (src/main.rs, a crate of its own) and the
// integration tests (tests/) call: the commands' entry points and the seam the protocol tests
// drive a fake engine through. Everything else is `pub(crate)` or private: `unreachable_pub`
// warns of an item marked `pub` that the crate's root does not reach (CI denies warnings).
pub mod cellbuild;
pub mod completion;
pub mod dispatch;
pub mod download;
pub mod engine;
pub mod export;
pub mod install;
pub mod kernel;
pub mod launch;
pub mod transport;
pub use role::Role;

mod commands;
mod debugger;
mod display;
// Its `pub` items are the C symbols the evaluation process exports by name (build.rs) to the
// libraries it loads, outside the crate's module tree.
#[allow(unreachable_pub)]
mod evaluation;
mod history;
mod interrupt_points;
mod role;
mod side_channel;
mod syntax;
mod usage;

/// The kernel's version, part of the build cache key and of the banner.
const VERSION: &str = env!("CARGO_PKG_VERSION");
