//! The real engine's set-up, from what this machine has: libtorch, the build cache and this
//! kernel's build directory in it, the environment evcxr reads, and the facts kernel_info
//! reports.

use crate::cellbuild::cache::{BuildCache, BuildDir};
use crate::cellbuild::env;
use crate::cellbuild::libtorch::detect_libtorch;
use crate::completion::Completer;
use crate::dispatch::Facts;
use crate::engine::{EngineOptions, PRELUDE_IMPORT};
use std::time::Duration;

/// What the kernel process needs to start the real engine.
pub(super) struct Setup {
    pub(crate) options: EngineOptions,
    pub(crate) completer: Completer,
    pub(crate) facts: Facts,
    /// This kernel's build directory, its own until the process ends.
    pub(crate) build: BuildDir,
}

/// Finds libtorch and the build cache and writes the environment.
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread.
pub(super) unsafe fn setup() -> Setup {
    let libtorch = detect_libtorch();
    let cache = BuildCache::new(libtorch.as_ref().ok().and_then(|l| l.version.as_deref()));
    let prelude = match &libtorch {
        Ok(_) => cache.prepare().map_err(|e| format!("{e:#}")),
        Err(why) => Err(why.clone()),
    };
    // A cache that cannot be written (read-only, full) must not stop the kernel: it starts
    // in a scratch directory and the first cell says what is wrong.
    let build = cache.build_dir();
    let usable_cache = build.problem.is_none();
    let prelude = match &build.problem {
        Some(why) => Err(why.clone()),
        None => prelude,
    };
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { crate::cellbuild::setup::set_for_build(libtorch.as_ref().ok(), &build.dir) };
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { side_channel_address() };
    let rustc = rustc_version();
    let facts = Facts {
        rustc_version: rustc.version,
        rustc_banner: rustc.banner,
        torch: libtorch.as_ref().ok().and_then(|l| l.version.clone()),
        libtorch_dir: libtorch.as_ref().ok().map(|l| l.dir.display().to_string()),
        cuda_devices: None,
    };
    let cache_dir = usable_cache.then(|| cache.dir.clone());
    let completer = Completer::new(&build.dir, cache_dir.as_deref(), PRELUDE_IMPORT);
    let options = EngineOptions {
        build_dir: build.dir.clone(),
        cache: usable_cache.then_some(cache),
        prelude: prelude.map_err(|why| why.to_string()),
        libtorch_lib: libtorch.as_ref().ok().map(|l| l.lib_dir()),
        interrupt_grace: interrupt_grace(),
        cell_opt_level: env::cell_opt_level(),
        debugger: std::sync::Arc::default(),
    };
    Setup {
        options,
        completer,
        facts,
        build,
    }
}

/// The side channel's address, in the environment the evaluation process inherits.
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread.
unsafe fn side_channel_address() {
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe {
        std::env::set_var(
            tchbook_wire::env::SIDE_CHANNEL,
            crate::side_channel::new_address(),
        )
    };
}

/// `TCHBOOK_INTERRUPT_GRACE` seconds, 3 by default, and by default with a warning where the
/// value is unusable.
fn interrupt_grace() -> Duration {
    use tchbook_wire::env::{DEFAULT_INTERRUPT_GRACE, INTERRUPT_GRACE, interrupt_grace};
    let value = std::env::var(INTERRUPT_GRACE).ok();
    interrupt_grace(value.as_deref()).unwrap_or_else(|why| {
        tracing::warn!("{why}");
        DEFAULT_INTERRUPT_GRACE
    })
}

/// The Rust compiler cells are built with, as `rustc --version` names it.
pub struct Rustc {
    /// `1.95.0`.
    pub(crate) version: String,
    /// `rustc 1.95.0 (59807616e 2026-04-14)`, or why there is none.
    pub banner: String,
}

pub fn rustc_version() -> Rustc {
    let banner = crate::cellbuild::cache::tool("rustc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "rustc not found on PATH".to_owned());
    let version = banner
        .split_whitespace()
        .nth(1)
        .unwrap_or("unknown")
        .to_owned();
    Rustc { version, banner }
}
