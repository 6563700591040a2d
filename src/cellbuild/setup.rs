//! The kernel's own environment for its builds, set once in `main` before any thread starts
//! (the only time that is sound): the toolchain every tool runs with, the cargo front end evcxr
//! runs, and what evcxr and the evaluation process read. The names are `super::env`'s.

use super::cache::tool;
use super::env::{
    CHECK_SOURCE_SUPPORTED, EVCXR_CARGO, EVCXR_CONFIG_DIR, EVCXR_TMPDIR, LIBTORCH, LINE_KEY,
    REAL_CARGO, RUSTUP_TOOLCHAIN,
};
use super::libtorch::Libtorch;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Pins rustup's toolchain, for everything this process starts, to the one rustup picks in the
/// build cache's root (`RUSTUP_TOOLCHAIN`, unless the user set it). Without it rustup obeys a
/// `rust-toolchain.toml` in whatever directory a tool runs in, and evcxr and rust-analyzer run
/// `rustc -vV` and `rustc --print target-libdir` in the kernel's own, the notebook's folder,
/// whose toolchain file may name a `rustc` of the folder's own. Call from `main` before any
/// thread starts. Does nothing without rustup (a toolchain not under `.../toolchains/`).
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub unsafe fn pin_toolchain() {
    if std::env::var_os(RUSTUP_TOOLCHAIN).is_some() {
        return;
    }
    let Ok(output) = tool("rustc").args(["--print", "sysroot"]).output() else {
        return;
    };
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if sysroot.parent().and_then(Path::file_name) == Some(OsStr::new("toolchains"))
        && let Some(name) = sysroot.file_name()
    {
        // SAFETY: one thread, as this function's caller promises (# Safety).
        unsafe { std::env::set_var(RUSTUP_TOOLCHAIN, name) };
    }
}

/// Makes this process's evcxr use the cargo front end. Call from `main` before any thread
/// starts. Does nothing where cargo cannot be found: evcxr then reports that itself.
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub unsafe fn set_for_cargo_front() {
    let Some(real) = super::cargo_front::real_cargo() else {
        return;
    };
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(REAL_CARGO, real) };
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(EVCXR_CARGO, me) };
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(CHECK_SOURCE_SUPPORTED, "1") };
}

/// The environment evcxr and the evaluation process read: evcxr builds in `build_dir`, tch
/// against `libtorch` when there is one. Call before starting any thread.
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub(crate) unsafe fn set_for_build(libtorch: Option<&Libtorch>, build_dir: &Path) {
    if let Some(libtorch) = libtorch {
        // SAFETY: one thread, as this function's caller promises (# Safety).
        unsafe { std::env::set_var(LIBTORCH, &libtorch.dir) };
    }
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(EVCXR_TMPDIR, build_dir) };
    // A fresh key for every kernel (one inherited from a kernel that started this one, from a
    // cell, included): the evaluation process keys its protocol lines with it, and the kernel
    // reads no other line as protocol (`tchbook_wire::key`).
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(LINE_KEY, tchbook_wire::new_line_key(rand::random())) };
    // Keeps evcxr from reading an `evcxr.toml` meant for evcxr_jupyter; tchbook's own lives in
    // `~/.config/tchbook` (or `$EVCXR_CONFIG_DIR` when set).
    // Without HOME there is no such place: an empty HOME would make it relative, that is
    // the notebook's folder, so the variable points nowhere that exists instead.
    if std::env::var_os(EVCXR_CONFIG_DIR).is_none() {
        let config = match std::env::var_os("HOME").map(PathBuf::from) {
            Some(home) if home.is_absolute() => home.join(".config/tchbook"),
            _ => PathBuf::from("/nonexistent/tchbook-config"),
        };
        // SAFETY: one thread, as this function's caller promises (# Safety).
        unsafe { std::env::set_var(EVCXR_CONFIG_DIR, config) };
    }
}
