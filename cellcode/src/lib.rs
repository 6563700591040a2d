//! The code tchbook's evcxr writes into cells and reads back from rustc.
//!
//! evcxr builds each notebook cell into a crate of generated Rust: the cell's statements inside
//! a function that loads the notebook's variables from a store and puts them back after. The
//! vendored evcxr (`vendor/README.md`) changes what it generates and reads; the project's part
//! of that is here, where it is linted and tested as the workspace's own, and evcxr keeps the
//! calls and the state they need (its variables, its code blocks). Nothing here knows evcxr's
//! types: every function takes plain data (names, type names, rustc's JSON diagnostic, the
//! cell's syntax tree).
//!
//! - [`analysis`]: the source an analyzer in another process is given for a completion or a
//!   hover.
//! - [`hooks`]: what the kernel compiles once into a dependency of every cell, for evcxr to
//!   call instead of writing the same code into each cell.
//! - [`code`]: the statements evcxr writes into a cell for the kernel (keyed protocol lines,
//!   the runner's call, the compiled store's module, restores, forgets).
//! - [`names`]: which variables a cell names, and which it only declares again.
//! - [`probe`]: the type probe's reading of rustc's mismatch diagnostics.
//! - [`origin`]: where each piece of a built cell's source came from.
//! - [`panic`]: what a cell's panic did to the variables it declared.
//! - `store.rs`: the variable store written into a cell without the prelude
//!   ([`code::store_module`]).

pub mod analysis;
pub mod code;
pub mod hooks;
pub mod names;
pub mod origin;
pub mod panic;
pub mod probe;
#[cfg(test)]
mod store_tests;

pub use analysis::AnalysisSource;
pub use hooks::{Hook, Hooks};
pub use names::Names;
pub use origin::CodeOrigin;
pub use panic::PanicReport;
