//! The cargo front end: what evcxr runs in cargo's place to build a cell.
//!
//! evcxr builds every cell with `cargo build`. With the prelude's ~150 dependency crates, cargo
//! spends 0.5–1 s checking that every one of them is fresh before it runs rustc once, on the cell
//! crate: most of a trivial cell's time. The kernel points evcxr at this binary instead
//! (`EVCXR_CARGO`, change 1 of the patch in vendor/evcxr) and names the real cargo in
//! `TCHBOOK_REAL_CARGO`. Then, for `build` and `check`:
//!
//! - The first time for a given manifest, lock file, cargo config and environment, the real
//!   cargo runs with this binary as its `RUSTC_WORKSPACE_WRAPPER`. Cargo applies that wrapper to
//!   the cell crate only (the one workspace member), so the dependencies' fingerprints are
//!   untouched; the wrapper writes down the exact rustc command and environment cargo chose for
//!   the cell, then runs it.
//! - Every later build with the same inputs runs that recorded rustc command directly: same
//!   arguments, same environment, the cell's new `src/lib.rs`. rustc's JSON diagnostics go to
//!   stderr as cargo would relay them, and the library's path goes to stdout as cargo's
//!   `compiler-artifact` message, which is what evcxr reads.
//! - A `check` is that same command emitting metadata only, into a directory of its own (it may
//!   run beside a build). evcxr's checks are the kernel's type probes (vendor/README.md), so they
//!   also ask rustc for full type paths. cargo's own `check` would type-check every dependency
//!   again first (minutes), and never runs here while a build record exists.
//! - A record also carries a link plan (`build::link`): the dependencies linked once into a shared
//!   library, which later cells link against instead of ~100 rlibs and libtorch.
//!
//! A record is only replayed while everything it names still exists, and all records are
//! dropped when a real cargo run rebuilds any dependency (a `:dep` that changes features, a
//! toolchain update). Paths inside the build directory are stored relative to it, so records
//! travel with the build template into every kernel's slot (`build::cache`). Anything else
//! (`clean`, `metadata`, a `RUSTC_WRAPPER` such as evcxr's `:cache`) goes to the real cargo

use anyhow::{Context, Result};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod key;
mod learn;
mod record;
mod replay;

pub(crate) use learn::run_wrapper;

/// Where checks write, under the build directory.
const CHECK_DIR: &str = "target/tchbook-check";
/// The cell crate's name in evcxr's manifest.
const CELL_CRATE: &str = "ctx";
/// While JupyterLab's debugger is on, the file that names the cell's own source path (the file
/// the debugger's `dumpCell` wrote): beside the build directory (`slots/0.debug-source`, as
/// its lock), outside the tree the build cache checks and copies. A build then carries debug
/// information whose lines name that path instead of `src/lib.rs`, so that each cell's library
/// answers for its own file, and every other build is as before.
fn debug_source_file(dir: &Path) -> PathBuf {
    dir.with_extension("debug-source")
}

/// The cell's source path for its debug information, while the debugger is on.
fn debug_source(dir: &Path) -> Option<String> {
    std::fs::read_to_string(debug_source_file(dir)).ok()
}

/// Makes the next builds in `dir` carry debug information for `source` (`None`: none, as
/// without the debugger).
pub(crate) fn set_debug_source(dir: &Path, source: Option<&Path>) -> std::io::Result<()> {
    let file = debug_source_file(dir);
    match source {
        Some(source) => std::fs::write(file, source.as_os_str().as_encoded_bytes()),
        None => match std::fs::remove_file(file) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        },
    }
}

/// The cargo subcommands evcxr runs. A `tchbook` invocation with one of these first, while
/// `TCHBOOK_REAL_CARGO` is set, is a cargo invocation.
const CARGO_WORDS: &[&str] = &["build", "check", "clean", "metadata", "--offline"];

/// Whether a process started with these arguments (the program's name left out) is evcxr
/// running cargo.
pub(crate) fn is_cargo_invocation(first: Option<&OsString>) -> bool {
    first.is_some_and(|first| CARGO_WORDS.iter().any(|word| first == *word))
}

/// Runs as evcxr's cargo: `real` is the real cargo, `args` what evcxr asked of it.
pub(crate) fn run(real: &Path, args: &[OsString]) -> i32 {
    match run_front(real, args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tchbook (cargo front end): {error:#}");
            101
        }
    }
}

/// `rustup which cargo`, else `cargo` on PATH: what evcxr itself would run.
pub(super) fn real_cargo() -> Option<PathBuf> {
    if let Ok(output) = super::cache::tool("rustup")
        .args(["which", "cargo"])
        .output()
    {
        let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() && !path.is_empty() {
            return Some(PathBuf::from(path));
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("cargo"))
        .find(|candidate| candidate.is_file())
}

fn run_front(real: &Path, args: &[OsString]) -> Result<i32> {
    let dir = std::env::current_dir().context("reading the build directory")?;
    let subcommand = args.iter().find(|arg| *arg != "--offline");
    let replayable = matches!(subcommand, Some(s) if s == "build" || s == "check")
        && args.iter().any(|arg| arg == "--message-format=json")
        && std::env::var_os("RUSTC_WRAPPER").is_none()
        && dir.join("Cargo.toml").is_file();
    if !replayable {
        // Not ours to speed up: become the real cargo.
        let error = Command::new(real).args(args).exec();
        return Err(error).with_context(|| format!("running {}", real.display()));
    }
    let records = dir.join("target").join("tchbook-replay");
    // A `check` is the build's rustc command with metadata for output: cargo's own `check`
    // would first type-check every dependency again (its check units are not its build units).
    let check = subcommand.is_some_and(|s| s == "check");
    let build_args: Vec<OsString> = args
        .iter()
        .map(|arg| {
            if arg == "check" {
                "build".into()
            } else {
                arg.clone()
            }
        })
        .collect();
    let key = key::inputs_key(&dir, &build_args);
    let path = records.join(format!("{key}.json"));
    if let Some(record) = record::load(&path, &dir) {
        return replay::replay(record, &path, &dir, check);
    }
    if check {
        // Record the build's command first (the build of a probe fails by design, but rustc
        // has been asked, so the command is known), then check with it.
        learn::record_with_real_cargo(real, &build_args, &dir, &records, key, false)?;
        if let Some(record) = record::load(&path, &dir) {
            return replay::replay(record, &path, &dir, check);
        }
        let error = Command::new(real).args(args).exec();
        return Err(error).with_context(|| format!("running {}", real.display()));
    }
    learn::record_with_real_cargo(real, args, &dir, &records, key, true)
}
