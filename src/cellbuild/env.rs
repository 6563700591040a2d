//! Every environment variable the kernel sets for its build, by name. The kernel process sets
//! them once, in `main` before any thread starts (the only time that is sound): what evcxr reads
//! and what evcxr's children inherit from it (`super::setup`). Variables meant for one child only are set on that child's
//! `Command`, named by the constants below. (`tchbook launch` sets `HOME` and `PATH` for a
//! kernel started by a gateway: `crate::launch`.) The names shared with the vendored
//! evcxr patch and the prelude are defined once, in `tchbook_wire::env`.
//!
//! | variable | set by | read by |
//! | --- | --- | --- |
//! | `TCHBOOK_REAL_CARGO` | kernel, for its evcxr | this binary as evcxr's cargo ([`super::Role`]) |
//! | `EVCXR_CARGO` | kernel, for its evcxr | vendored evcxr: the cargo it runs |
//! | `EVCXR_CHECK_SOURCE_SUPPORTED` | kernel, for its evcxr | vendored evcxr: probes beside the build |
//! | `EVCXR_CHECK_SOURCE` | vendored evcxr, per `cargo check` | the cargo front end: the file to check |
//! | `TCHBOOK_RECORD_RUSTC` | the cargo front end, for the real cargo | this binary as cargo's rustc wrapper |
//! | `TCHBOOK_LINK_PLAN` | the cargo front end, for a replayed rustc | this binary as the cell's linker |
//! | `RUSTC_WORKSPACE_WRAPPER` | the cargo front end, for the real cargo | cargo |
//! | `RUSTC_BOOTSTRAP` | the cargo front end, for a check's rustc | rustc (`-Z` flags) |
//! | `CARGO_MAKEFLAGS`, `MAKEFLAGS` | removed by the cargo front end from a replayed rustc | the jobserver client |
//! | `LIBTORCH` | kernel (from detection or kernel.json) | tch's build script, the prelude |
//! | `EVCXR_TMPDIR` | kernel | evcxr: the build directory |
//! | `EVCXR_CONFIG_DIR` | kernel, unless set | evcxr: where its `evcxr.toml` is looked for |
//! | `LD_LIBRARY_PATH` | kernel, for the evaluation process | the loader: libtorch, libstd |
//! | `RUSTUP_TOOLCHAIN` | kernel, unless set | rustup, for every cargo and rustc the kernel starts |
//! | `TCHBOOK_LINE_KEY` | kernel, a fresh one at each start | the evaluation process's protocol writers, and the kernel's readers |
//!
//! Variables the kernel only reads (`TCHBOOK_CACHE_DIR`, `TCHBOOK_PRELUDE_DIR`,
//! `TCHBOOK_OPT_LEVEL`, `TCHBOOK_VENV`, `TCHBOOK_LOG`, `TCHBOOK_INTERRUPT_GRACE`,
//! `TCHBOOK_MAX_MESSAGE_SIZE`) are the user's, and DEVELOPERS.md lists them.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

pub(crate) use tchbook_wire::env::{
    CACHE_DIR, CHECK_SOURCE, CHECK_SOURCE_SUPPORTED, EVCXR_CARGO, EVCXR_CONFIG_DIR, EVCXR_TMPDIR,
    EXECUTION_SO_PATH, IS_RUNTIME, LIBTORCH, LINE_KEY, LINK_PLAN, OPT_LEVEL, PRELUDE_DIR,
    REAL_CARGO, RECORD_RUSTC, RUSTC_WRAPPER, VENV,
};

/// The evaluation process's loader path (libtorch, libstd).
pub(crate) const LD_LIBRARY_PATH: &str = "LD_LIBRARY_PATH";
/// rustup's toolchain for every tool the kernel starts (`super::setup::pin_toolchain`).
pub(crate) const RUSTUP_TOOLCHAIN: &str = "RUSTUP_TOOLCHAIN";
/// cargo's rustc wrapper for workspace members: the cell crate only.
pub(crate) const RUSTC_WORKSPACE_WRAPPER: &str = "RUSTC_WORKSPACE_WRAPPER";
/// Lets a stable rustc take `-Z` flags (a type probe's full type paths).
pub(crate) const RUSTC_BOOTSTRAP: &str = "RUSTC_BOOTSTRAP";
/// cargo's jobserver, and make's: cargo's own, gone with it, so never replayed.
pub(crate) const CARGO_MAKEFLAGS: &str = "CARGO_MAKEFLAGS";
pub(crate) const MAKEFLAGS: &str = "MAKEFLAGS";

/// A loader path made of `dirs` then the absolute entries of `inherited`, without the empty or
/// relative ones: glibc reads an empty entry (a leading or trailing `:`, or `::`) as the
/// current directory and a relative one as relative to it, so a `libcuda.so.1` or `libc.so.6`
/// left in a notebook's folder would be loaded and run in its place.
pub(crate) fn library_path(dirs: &[PathBuf], inherited: Option<&OsStr>) -> OsString {
    let inherited = inherited.map(std::env::split_paths).into_iter().flatten();
    let entries = dirs
        .iter()
        .cloned()
        .chain(inherited)
        .filter(|dir| dir.is_absolute());
    // join_paths fails only on an entry holding ':', which split_paths never yields and a
    // directory given to the kernel cannot usefully hold.
    std::env::join_paths(entries).unwrap_or_default()
}

/// Removes the empty and relative entries of this process's own `LD_LIBRARY_PATH` (see
/// [`library_path`]), so that nothing the kernel starts (cargo, rustc, the linker, the
/// evaluation process, rust-analyzer) loads libraries from the folder it was started in. Call
/// from `main` before any thread starts.
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub unsafe fn drop_relative_library_path() {
    let Some(inherited) = std::env::var_os(LD_LIBRARY_PATH) else {
        return;
    };
    let clean = library_path(&[], Some(&inherited));
    if clean != inherited {
        if clean.is_empty() {
            // SAFETY: one thread, as this function's caller promises (# Safety).
            unsafe { std::env::remove_var(LD_LIBRARY_PATH) };
        } else {
            // SAFETY: one thread, as this function's caller promises (# Safety).
            unsafe { std::env::set_var(LD_LIBRARY_PATH, clean) };
        }
    }
}

/// The optimisation level cells are compiled at: `$TCHBOOK_OPT_LEVEL`, default 0. A cell's code is
/// mostly calls into the prelude and libtorch, which are optimised already; at level 1 LLVM spent
/// more on a small tensor cell's generic wrappers than rustc did on everything else
/// (bench/NOTES.md, "Cells at opt-level 0"). `:opt 2` gives a kernel's own loops the optimiser.
pub(crate) fn cell_opt_level() -> String {
    std::env::var(OPT_LEVEL).unwrap_or_else(|_| "0".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_path_keeps_only_absolute_entries() {
        let path = library_path(
            &[PathBuf::from("/opt/torch/lib")],
            Some(":lib::/usr/lib:".as_ref()),
        );
        assert_eq!(path, "/opt/torch/lib:/usr/lib");
        assert_eq!(library_path(&[], Some("".as_ref())), "");
    }
}
