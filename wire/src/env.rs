//! The name of every environment variable that more than one side reads or writes: the kernel,
//! its cargo front end and linker roles (the same binary, re-executed), the vendored evcxr
//! (`vendor/evcxr.patch`), the evaluation process and the prelude in it, and exported
//! notebooks. Each name is spelled here once; who sets it and who reads it is said beside it.
//! The kernel's side of setting them is `src/build/env.rs`.
//!
//! ```
//! assert_eq!(tchbook_wire::env::IS_RUNTIME, "EVCXR_IS_RUNTIME");
//! ```

// ---------------------------------------------------------------------------------------------
// evcxr's own names

/// Set by evcxr on the evaluation process it starts (its own binary, re-executed); read by
/// evcxr's `runtime_hook` and by the prelude (its SIGTERM handler is for that process only).
pub const IS_RUNTIME: &str = "EVCXR_IS_RUNTIME";
/// evcxr's build directory. Set by the kernel (the cache slot it holds); read by evcxr.
pub const EVCXR_TMPDIR: &str = "EVCXR_TMPDIR";
/// Where evcxr looks for its `evcxr.toml`. Set by the kernel unless the user set it; read by
/// evcxr.
pub const EVCXR_CONFIG_DIR: &str = "EVCXR_CONFIG_DIR";
/// Set by evcxr on the cargo it runs: the file in which the cell's built library's path is
/// written; read by evcxr as rustc's wrapper. The cargo front end passes it through.
pub const EXECUTION_SO_PATH: &str = "EVCXR_EXECUTION_SO_PATH";
/// Set by evcxr on the cargo it runs: makes evcxr's binary act as rustc's wrapper.
pub const RUSTC_WRAPPER: &str = "EVCXR_RUSTC_WRAPPER";

// ---------------------------------------------------------------------------------------------
// The vendored patch's names (read or written by `vendor/evcxr.patch`)

/// The cargo evcxr runs. Set by the kernel to its own binary (the cargo front end); read by
/// the vendored evcxr.
pub const EVCXR_CARGO: &str = "EVCXR_CARGO";
/// Set by the kernel when its cargo front end honours [`CHECK_SOURCE`]; read by the vendored
/// evcxr, which then type-checks a cell beside its build.
pub const CHECK_SOURCE_SUPPORTED: &str = "EVCXR_CHECK_SOURCE_SUPPORTED";
/// Set by the vendored evcxr on a `cargo check`: the source file to check; read by the cargo
/// front end.
pub const CHECK_SOURCE: &str = "EVCXR_CHECK_SOURCE";

// ---------------------------------------------------------------------------------------------
// Between the kernel's own roles

/// The real cargo. Set by the kernel for its evcxr; read by the kernel binary acting as cargo.
pub const REAL_CARGO: &str = "TCHBOOK_REAL_CARGO";
/// Set by the cargo front end on the real cargo; read by the kernel binary acting as cargo's
/// rustc wrapper (where to record the rustc commands).
pub const RECORD_RUSTC: &str = "TCHBOOK_RECORD_RUSTC";
/// Set by the cargo front end on a replayed rustc; read by the kernel binary acting as the
/// cell's linker (the link plan, JSON).
pub const LINK_PLAN: &str = "TCHBOOK_LINK_PLAN";

// ---------------------------------------------------------------------------------------------
// The evaluation process and the prelude

/// libtorch's directory. Set by the kernel (detected, or from kernel.json); read by tch's build
/// script and by the prelude (its device report, where CUDA libraries are looked for).
pub const LIBTORCH: &str = "LIBTORCH";
/// Set and read by the prelude only, across the copies of it that cells link: the address of
/// its process-wide state (`prelude/src/runtime/`).
pub const PRELUDE_STATE: &str = "TCHBOOK_PRELUDE_STATE";
/// The key every protocol line carries ([`crate::key`]). Set by the kernel, a fresh one each
/// time it starts, and inherited by its evaluation process; set by an exported notebook's runner
/// for itself. Read by every writer and reader of the line protocol.
pub const LINE_KEY: &str = "TCHBOOK_LINE_KEY";
/// When set, the prelude's `runtime::attach` leaves fds 1 and 2 alone (no stdout/stderr pump).
pub const NO_PUMP: &str = "TCHBOOK_NO_PUMP";
/// A base URL that replaces the data sets' canonical download locations; read by the
/// prelude's `fetch`.
pub const DATA_MIRROR: &str = "TCHBOOK_DATA_MIRROR";

// ---------------------------------------------------------------------------------------------
// The user's settings

/// The build cache's root (default `~/.cache/tchbook`); read by the kernel.
pub const CACHE_DIR: &str = "TCHBOOK_CACHE_DIR";
/// A prelude checkout to build cells against instead of the embedded one; read by the kernel.
pub const PRELUDE_DIR: &str = "TCHBOOK_PRELUDE_DIR";
/// The optimisation level of cells (default 1); read by the kernel.
pub const OPT_LEVEL: &str = "TCHBOOK_OPT_LEVEL";
/// The largest message, in bytes, the kernel's sockets take from a client (default 1 GiB);
/// read by the kernel.
pub const MAX_MESSAGE_SIZE: &str = "TCHBOOK_MAX_MESSAGE_SIZE";
/// The Python environment whose `torch` package gives libtorch; read by the kernel.
pub const VENV: &str = "TCHBOOK_VENV";
/// The kernel's log filter (tracing's `EnvFilter` syntax).
pub const LOG: &str = "TCHBOOK_LOG";
/// Seconds an interrupted cell has to stop before its process is ended (default 3); read by
/// the kernel and by exported notebooks.
pub const INTERRUPT_GRACE: &str = "TCHBOOK_INTERRUPT_GRACE";
