//! Build speed: everything between a cell's source and the library the evaluation process
//! loads, and the persistent cache that makes a fresh kernel's first cell fast.
//!
//! - `cargo_front`: what evcxr runs as cargo; replays the cell crate's recorded rustc
//!   command instead of letting cargo check ~150 dependencies per cell.
//! - `link`: the link plan: the dependencies linked once into a shared library that later
//!   cells link against.
//! - `cache`: the per-user build cache: the template every kernel's slot is copied from, its
//!   file-by-file check and repair, and the embedded prelude sources.
//! - `seed`: a kernel's build directory at start-up: checked, repaired, seeded from the
//!   template; the first full build kept as the template.
//! - `process`: how the evaluation process is started (its group, loader path, parent death).
//! - [`libtorch`]: finding libtorch.
//! - [`env`]: every environment variable the kernel sets, named once.
//! - [`setup`]: the kernel's own environment for its builds, set once at start.
//! - `placeholder`: paths inside a build directory as they are stored.
//!
//! evcxr drives the build; the vendored evcxr patch (vendor/README.md) lets it run this
//! binary as its cargo and type-check cells beside their builds.

pub(crate) mod cache;
pub(crate) mod cargo_front;
mod digest;
pub(crate) mod env;
pub(crate) mod libtorch;
pub(crate) mod link;
mod placeholder;
pub(crate) mod process;
pub(crate) mod seed;
pub(crate) mod setup;

// What `main` sets up before any thread starts, and takes down at the end.
pub use cache::{remove_private_root, use_private_root};
pub use env::drop_relative_library_path;
pub use setup::{pin_toolchain, set_for_cargo_front};
