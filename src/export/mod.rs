//! `tchbook export`: a notebook as a standalone Cargo project whose one binary runs the notebook
//! headless, and `--merge`, which writes the outputs that binary recorded back into the notebook.
//!
//! The project (`DIR/`):
//!
//! ```text
//! Cargo.toml             the package, `:dep` lines as [dependencies], the prelude and the runner
//!                        by path
//! Cargo.lock             this kernel's own lock file: the versions the kernel was tested with
//! src/main.rs            the cells in order: items (fn, struct, impl, use, ...) at the top level
//!                        as evcxr keeps them, statements in one function, each cell's final
//!                        expression shown as the kernel shows it
//! tchbook-runner/        the headless runner (the workspace's `runner/` crate): output,
//!                        --record, errors; its tchbook-wire is the prelude's
//! tchbook-prelude/       the prelude's sources, embedded in this kernel (unless --prelude)
//! ```
//!
//! Why the prelude is copied in: a batch job on a cluster, or a GPU machine that has no Rust
//! toolchain (the binary travels there), must not need this kernel's build cache or a checkout;
//! the project directory alone builds anywhere with a Rust toolchain and libtorch. `--prelude
//! DIR` names a prelude checkout instead (CI and `scripts/gpu-check` use the workspace's, so
//! every exported project shares one build of tch and the prelude in one target directory).
//!
//! `:` commands are translated where a compiled program has an equivalent (`:dep`, `:timing`,
//! `:timeit`, `:fmt`, `:types`) and otherwise dropped with a comment saying why (`:vars`,
//! `:help`, `:clear`, ...).
//!
//! The files, by job: `notebook.rs` reads the notebook's code cells; `split.rs` splits a cell's
//! Rust as evcxr does (items, statements, final value); `translate.rs` turns the cells into one
//! program; `generate.rs` makes the text of its `Cargo.toml` and `src/main.rs`; `project.rs`
//! writes the project; `merge.rs` is `--merge`, and `beside.rs` its `--beside`.

mod beside;
mod generate;
mod merge;
mod notebook;
mod project;
mod split;
mod translate;

pub use merge::merge;
pub use project::export;

use std::path::PathBuf;

/// What `tchbook export NOTEBOOK` was asked for.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub notebook: PathBuf,
    /// Default: the notebook's name without `.ipynb`, next to it.
    pub out_dir: Option<PathBuf>,
    /// A prelude crate to depend on by path instead of a copy of the embedded one.
    pub prelude: Option<PathBuf>,
    /// Write into `out_dir` even where it holds something other than an earlier export.
    pub force: bool,
}
