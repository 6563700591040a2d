//! The name of every environment variable that more than one side reads or writes: the kernel,
//! its cargo front end and linker roles (the same binary, re-executed), the vendored evcxr
//! (`vendor/evcxr.patch`), the evaluation process and the prelude in it, and exported
//! notebooks. Each name is spelled here once; who sets it and who reads it is said beside it.
//! The kernel's side of setting them is `src/cellbuild/env.rs`.
//!
//! ```
//! assert_eq!(tchbook_wire::env::IS_RUNTIME, "EVCXR_IS_RUNTIME");
//! ```

use std::time::Duration;

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
/// The side channel: the Unix socket on which the evaluation process answers the kernel's
/// requests beside the cell's output ([`crate::side_channel`]: the Variables and Kernel Usage
/// panels' values, the front end's comm messages, the open comms). Set by the kernel to `@` and
/// a name in the abstract socket namespace ([`crate::side_channel::connect`]); read by the
/// evaluation process, which serves it.
pub const SIDE_CHANNEL: &str = "TCHBOOK_SIDE_CHANNEL";
/// When set, the prelude's `runtime::attach` leaves fds 1 and 2 alone (no stdout/stderr pump).
pub const NO_PUMP: &str = "TCHBOOK_NO_PUMP";
/// A base URL that replaces the data sets' canonical download locations; read by the
/// prelude's `fetch`.
pub const DATA_MIRROR: &str = "TCHBOOK_DATA_MIRROR";
/// An NVML library to open instead of the driver's `libnvidia-ml.so.1`: an absolute path whose
/// file name is `libnvidia-ml.so.1`, ignored in a set-user-id process. Set by the tests, which
/// name a stand-in that reports scripted GPUs; read by the prelude (`cuda::nvml`). It reaches
/// no further than `LD_LIBRARY_PATH` does (the same file name, from another folder).
pub const NVML_LIBRARY: &str = "TCHBOOK_NVML_LIBRARY";

// ---------------------------------------------------------------------------------------------
// The user's settings

/// The build cache's root (default `~/.cache/tchbook`); read by the kernel.
pub const CACHE_DIR: &str = "TCHBOOK_CACHE_DIR";
/// A prelude checkout to build cells against instead of the embedded one; read by the kernel.
pub const PRELUDE_DIR: &str = "TCHBOOK_PRELUDE_DIR";
/// The optimisation level of cells (default 0); read by the kernel.
pub const OPT_LEVEL: &str = "TCHBOOK_OPT_LEVEL";
/// The largest message, in bytes, the kernel's sockets take from a client (default 1 GiB);
/// read by the kernel.
pub const MAX_MESSAGE_SIZE: &str = "TCHBOOK_MAX_MESSAGE_SIZE";
/// The Python environment whose `torch` package gives libtorch; read by the kernel.
pub const VENV: &str = "TCHBOOK_VENV";
/// The kernel's log filter (tracing's `EnvFilter` syntax).
pub const LOG: &str = "TCHBOOK_LOG";
/// Seconds an interrupted cell has to stop before its process is ended (default 3); read by
/// the kernel and by exported notebooks, both through [`interrupt_grace`].
pub const INTERRUPT_GRACE: &str = "TCHBOOK_INTERRUPT_GRACE";

/// `0` builds a kernel's cells without the interrupt check in each of their loops (on by
/// default; read by the kernel): for a loop whose every cycle counts under `:opt 2`, where the
/// check costs a tight integer loop about a tenth. Such a loop is then ended only after the
/// grace period, with the evaluation process and its variables.
pub const INTERRUPT_CHECKS: &str = "TCHBOOK_INTERRUPT_CHECKS";

/// The grace period when [`INTERRUPT_GRACE`] is unset or unusable.
pub const DEFAULT_INTERRUPT_GRACE: Duration = Duration::from_secs(3);

/// The grace period a value of [`INTERRUPT_GRACE`] asks for ([`DEFAULT_INTERRUPT_GRACE`] for
/// none). A value that is not a number of seconds a `Duration` can hold (negative, NaN,
/// infinite, too large, not a number) is an `Err` that says so for the user: the caller warns
/// and uses the default, because a typo in a variable must not keep a kernel from starting
/// (`Duration::from_secs_f64` panics on all of them).
///
/// ```
/// use std::time::Duration;
/// use tchbook_wire::env::interrupt_grace;
///
/// assert_eq!(interrupt_grace(None), Ok(Duration::from_secs(3)));
/// assert_eq!(interrupt_grace(Some(" 0.5 ")), Ok(Duration::from_millis(500)));
/// assert!(interrupt_grace(Some("-1")).unwrap_err().contains("\"-1\""));
/// ```
pub fn interrupt_grace(value: Option<&str>) -> Result<Duration, String> {
    let Some(value) = value else {
        return Ok(DEFAULT_INTERRUPT_GRACE);
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .ok_or_else(|| {
            format!(
                "{INTERRUPT_GRACE}={value:?} is not a number of seconds (0 or more); using the \
                 default, {} s",
                DEFAULT_INTERRUPT_GRACE.as_secs()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_interrupt_grace_is_an_error_not_a_panic() {
        for value in ["-1", "NaN", "nan", "inf", "-inf", "1e300", "three", ""] {
            let why = interrupt_grace(Some(value)).unwrap_err();
            assert!(
                why.contains(INTERRUPT_GRACE) && why.contains("default, 3 s"),
                "{why}"
            );
        }
        assert_eq!(interrupt_grace(Some("0")), Ok(Duration::ZERO));
        assert_eq!(interrupt_grace(Some("10")), Ok(Duration::from_secs(10)));
    }
}
