//! The persistent per-user build cache.
//!
//! Layout, under `$TCHBOOK_CACHE_DIR` (default `~/.cache/tchbook`):
//!
//! ```text
//! build/<kernel version>-torch-<torch version>/
//!     .cargo/config.toml   dependency opt-level (cargo reads config from parent directories)
//!     prelude/             the embedded prelude sources, written only when they changed
//!     template/            an evcxr build directory with the prelude compiled (`tchbook install`)
//!     template.lock
//!     slots/<n>/           one evcxr build directory per running kernel
//!     slots/<n>.lock       held (flock) by the kernel using slot n for its whole life
//! ```
//!
//! evcxr keeps a cell's crate and its `target/` in one directory and rewrites `src/lib.rs` on
//! every cell, so two kernels can never share one. Each kernel takes the first free slot; a
//! new slot starts as a copy of the template, so only the very first build ever compiles tch.
//! The template is built under `template.lock`, so kernels started together while it is
//! missing wait for one build instead of each compiling tch.
//!
//! One file per job: this one the layout, slots and locks; `damage` the ready marker and the
//! file-by-file check and repair; `explain` what a failing cache means for the user.

use super::digest::Key;
use super::env;
use anyhow::{Context, Result};
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use walkdir::WalkDir;

mod damage;
mod explain;

pub(crate) use damage::{
    Check, describe, has_manifest, is_ready, mark_ready, remove_damaged, verify, write_manifest,
};
pub(crate) use explain::{explain, free_space, low_space_problem};

include!(concat!(env!("OUT_DIR"), "/prelude_files.rs"));

/// The profiles of the cell crates' dependencies, written as the cache's `.cargo/config.toml`
/// (the file says why each is what it is).
const CARGO_CONFIG: &str = include_str!("cargo-config.toml");

/// Where the build cache lives: `$TCHBOOK_CACHE_DIR`, else `$XDG_CACHE_HOME/tchbook`, else
/// `$HOME/.cache/tchbook`. Each must be an absolute path: a relative one would put the cache in
/// whatever folder the process runs in, a notebook's (a relative `XDG_CACHE_HOME` is ignored,
/// as the XDG specification asks). `Err` says why there is none; there is no shared fallback
/// such as `/tmp`, where another user could have made the directory first.
pub(crate) fn configured_root() -> Result<PathBuf, String> {
    fn absolute(name: &str) -> Option<Result<PathBuf, String>> {
        let path = PathBuf::from(std::env::var_os(name).filter(|value| !value.is_empty())?);
        Some(if path.is_absolute() {
            Ok(path)
        } else {
            Err(format!(
                "{name} is not an absolute path ({})",
                path.display()
            ))
        })
    }
    if let Some(dir) = absolute(env::CACHE_DIR) {
        return dir;
    }
    if let Some(Ok(dir)) = absolute("XDG_CACHE_HOME") {
        return Ok(dir.join("tchbook"));
    }
    match absolute("HOME") {
        Some(home) => home.map(|home| home.join(".cache").join("tchbook")),
        None => Err(format!(
            "HOME is not set (nor {} or XDG_CACHE_HOME)",
            env::CACHE_DIR
        )),
    }
}

/// A command for one of the tools the kernel asks about the machine (`rustc`, `rustup`, a
/// Python), run in the build cache's root rather than the notebook's folder: rustup obeys a
/// `rust-toolchain.toml` in the directory it runs in (whose `path` may name a `rustc` of the
/// folder's own), and `python -c` imports modules from it. The cache root is where the cells'
/// builds run, so the toolchain the kernel reports is the one that builds them.
pub(crate) fn tool(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    let root = cache_root();
    command.current_dir(if root.is_dir() {
        root
    } else {
        PathBuf::from("/")
    });
    command
}

/// The build cache's root ([`configured_root`]). A kernel without one has been given a private
/// directory of its own by [`use_private_root`] before this is asked; any other process without
/// one gets a path that cannot exist, so that whatever it would create there fails and says so.
pub(crate) fn cache_root() -> PathBuf {
    configured_root().unwrap_or_else(|_| PathBuf::from("/nonexistent/tchbook-cache"))
}

/// Why this kernel has no build cache, when [`use_private_root`] gave it a private directory.
static PRIVATE_ROOT: std::sync::OnceLock<(PathBuf, String)> = std::sync::OnceLock::new();

/// For a kernel with no place for a build cache ([`configured_root`] fails): makes a private
/// directory (mode 0700, an unpredictable name in the system's temporary directory, created
/// only if it did not exist)
/// and names it in `TCHBOOK_CACHE_DIR`, so this process and every process it starts build there;
/// [`remove_private_root`] removes it when the kernel ends. Nothing persists from one kernel to
/// the next then (each compiles tch once), and the first cell says so. Must run before any
/// thread starts (it sets an environment variable).
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub unsafe fn use_private_root() -> Result<()> {
    let Err(why) = configured_root() else {
        return Ok(());
    };
    let temp = std::env::temp_dir();
    // A relative TMPDIR would be the folder the kernel runs in.
    let temp = if temp.is_absolute() {
        temp
    } else {
        PathBuf::from("/tmp")
    };
    let dir = tempfile::Builder::new()
        .prefix("tchbook-cache-")
        .permissions(private())
        .tempdir_in(&temp)
        .with_context(|| format!("creating a private build directory in {}", temp.display()))?
        .keep();
    tracing::warn!("{why}: building in {}, removed at exit", dir.display());
    // SAFETY: one thread, as this function's caller promises (# Safety).
    unsafe { std::env::set_var(env::CACHE_DIR, &dir) };
    let _ = PRIVATE_ROOT.set((dir, why));
    Ok(())
}

/// What the first cell says when the kernel runs on a private directory ([`use_private_root`]).
pub(crate) fn private_root_note() -> Option<String> {
    PRIVATE_ROOT.get().map(|(dir, why)| {
        format!(
            "No build cache: {why}. This kernel builds in {}, which goes when it ends, so \
             every start compiles tch and the prelude again (minutes). Set HOME, or \
             TCHBOOK_CACHE_DIR to a directory of yours, in the environment Jupyter starts \
             kernels with (or the kernelspec's `env`).",
            dir.display()
        )
    })
}

/// Removes the private directory [`use_private_root`] made, if it made one.
pub fn remove_private_root() {
    if let Some((dir, _)) = PRIVATE_ROOT.get()
        && let Err(error) = std::fs::remove_dir_all(dir)
    {
        tracing::warn!("removing {}: {error}", dir.display());
    }
}

/// Mode 0700, for a temporary directory that holds a user's builds.
fn private() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o700)
}

/// Creates `dir` and any missing parents with mode 0700 (the XDG specification's mode for
/// a cache directory it creates): builds hold the user's cells and what they printed.
/// An existing directory is left as it is.
fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the build cache {}", dir.display()))
}

/// The cache directory for this kernel version and torch version.
#[derive(Debug, Clone)]
pub(crate) struct BuildCache {
    pub(crate) dir: PathBuf,
}

impl BuildCache {
    pub(crate) fn new(torch_version: Option<&str>) -> Self {
        let torch = torch_version.unwrap_or("none");
        let key = format!("{}-torch-{}", crate::VERSION, sanitize(torch));
        BuildCache {
            dir: cache_root().join("build").join(key),
        }
    }

    pub(crate) fn template_dir(&self) -> PathBuf {
        self.dir.join("template")
    }

    /// Writes the embedded prelude (unless `TCHBOOK_PRELUDE_DIR` points at a checkout) and the
    /// cargo config; returns the prelude crate's directory and its stamp (a hash of its files).
    pub(crate) fn prepare(&self) -> Result<(PathBuf, String)> {
        let dir = self
            .write_prelude()
            .map_err(|error| anyhow::anyhow!(explain(&error)))?;
        let stamp = stamp(&dir);
        Ok((dir, stamp))
    }

    /// Creates the cache's root (and this version's directory in it) private to the user.
    fn create(&self) -> Result<()> {
        create_private_dir(&cache_root())?;
        create_private_dir(&self.dir)
    }

    fn write_prelude(&self) -> Result<PathBuf> {
        self.create()?;
        std::fs::create_dir_all(self.dir.join(".cargo"))
            .with_context(|| format!("creating the build cache {}", self.dir.display()))?;
        write_if_changed(
            &self.dir.join(".cargo").join("config.toml"),
            CARGO_CONFIG.as_bytes(),
        )?;
        if let Some(dir) = std::env::var_os(env::PRELUDE_DIR) {
            return std::fs::canonicalize(&dir)
                .with_context(|| format!("TCHBOOK_PRELUDE_DIR={}", PathBuf::from(&dir).display()));
        }
        let prelude = self.dir.join("prelude");
        write_prelude_copy(&prelude)?;
        Ok(prelude)
    }

    /// The directory this kernel builds cells in: a slot of the cache, or, when the cache cannot
    /// be used (read-only, full, not a directory), a scratch directory of its own and why.
    pub(crate) fn build_dir(&self) -> BuildDir {
        let slot = self.acquire_slot().and_then(|slot| {
            std::fs::create_dir_all(&slot.dir)
                .with_context(|| format!("creating {}", slot.dir.display()))?;
            Ok(slot)
        });
        match slot {
            Ok(slot) => BuildDir {
                dir: slot.dir.clone(),
                _slot: Some(slot),
                _scratch: None,
                problem: None,
            },
            Err(error) => {
                let problem = explain(&error);
                tracing::error!("{problem}");
                // Private (mode 0700, a random name created only if new), removed with
                // the kernel's BuildDir.
                let scratch = tempfile::Builder::new()
                    .prefix("tchbook-scratch-")
                    .permissions(private())
                    .tempdir();
                let (dir, scratch) = match scratch {
                    Ok(scratch) => (scratch.path().to_path_buf(), Some(scratch)),
                    Err(error) => {
                        tracing::error!("no scratch directory either: {error}");
                        (PathBuf::from("/nonexistent/tchbook-scratch"), None)
                    }
                };
                BuildDir {
                    dir,
                    _slot: None,
                    _scratch: scratch,
                    problem: Some(problem),
                }
            }
        }
    }

    /// Takes the first free slot, holding its lock until the returned value is dropped.
    fn acquire_slot(&self) -> Result<Slot> {
        self.create()?;
        let slots = self.dir.join("slots");
        std::fs::create_dir_all(&slots).with_context(|| format!("creating {}", slots.display()))?;
        for n in 0.. {
            let lock_path = slots.join(format!("{n}.lock"));
            let file = File::create(&lock_path)
                .with_context(|| format!("creating {}", lock_path.display()))?;
            if try_lock(&file) {
                return Ok(Slot {
                    dir: slots.join(n.to_string()),
                    _lock: file,
                });
            }
        }
        unreachable!("slot numbers are unbounded")
    }

    /// Every slot directory with its lock, held for the caller, or `None` when a running
    /// kernel holds it.
    pub(crate) fn slots(&self) -> Result<Vec<(PathBuf, Option<File>)>> {
        let slots = self.dir.join("slots");
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir(&slots) else {
            return Ok(found);
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // A hidden directory is a copy a process ended part way (`copy_build_dir`).
            if !path.is_dir() || entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let lock_path = path.with_extension("lock");
            let file = File::create(&lock_path)
                .with_context(|| format!("creating {}", lock_path.display()))?;
            let held = try_lock(&file).then_some(file);
            found.push((path, held));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// Build directories of other kernel or torch versions, next to this one.
    pub(crate) fn other_builds(&self) -> Vec<PathBuf> {
        let Some(parent) = self.dir.parent() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(parent) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir() && *path != self.dir)
            .collect();
        found.sort();
        found
    }

    /// Blocks until this process holds the template lock.
    pub(crate) fn lock_template(&self) -> Result<File> {
        self.create()?;
        let path = self.dir.join("template.lock");
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error()).context("locking the build template");
        }
        Ok(file)
    }
}

/// A build directory this kernel owns exclusively.
#[derive(Debug)]
struct Slot {
    pub(crate) dir: PathBuf,
    _lock: File,
}

/// Where a kernel builds its cells; see [`BuildCache::build_dir`].
#[derive(Debug)]
pub(crate) struct BuildDir {
    pub(crate) dir: PathBuf,
    _slot: Option<Slot>,
    _scratch: Option<tempfile::TempDir>,
    /// Why the cache is not used, said to the user with the first cell.
    pub(crate) problem: Option<String>,
}

/// Every entry under a crate's folder `dir` but `target/` and hidden ones, in file name order
/// (parents before their contents).
pub(crate) fn crate_entries(
    dir: &Path,
) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> + use<> {
    WalkDir::new(dir)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name();
            !(name.to_string_lossy().starts_with('.') || name == "target")
        })
}

/// The kernel version and a hash of every file of the prelude crate at `dir` (its path and
/// contents; `target/` and hidden entries aside).
fn stamp(dir: &Path) -> String {
    let mut key = Key::new();
    // The profiles too: built under other ones, every dependency would be built again by the
    // first cell of the first kernel instead of by `install`.
    key.bytes(CARGO_CONFIG.as_bytes());
    let files = crate_entries(dir)
        .flatten()
        .filter(|entry| !entry.file_type().is_dir());
    for file in files {
        let path = file.path();
        key.os(path.strip_prefix(dir).unwrap_or(path).as_os_str());
        key.bytes(&std::fs::read(path).unwrap_or_default());
    }
    format!("{}-{}", crate::VERSION, key.hex(16))
}

/// Replaces `to` with a copy of `from`, keeping modification times (cargo's freshness checks
/// compare them) and permissions, and sharing blocks where the file system can (reflinks). A
/// copy that fails leaves nothing behind, and its error keeps the system's error (no space, a
/// read-only file system, no permission) for `explain` to name.
///
/// The copy is made under another name ([`partial_copy`]) and renamed to `to` when whole. A
/// process that ends part way (a kernel restarted or shut down while it seeds its slot, which
/// takes seconds) must not leave a directory that holds the ready marker, which the walk meets
/// first, without the libraries: the next kernel would take it as built and recompile tch in its
/// first cell. What it leaves instead is a `.partial` directory, removed by the next copy.
pub(crate) fn copy_build_dir(from: &Path, to: &Path) -> Result<()> {
    let partial = partial_copy(to);
    for old in [&partial, to] {
        if old.exists() {
            std::fs::remove_dir_all(old).with_context(|| format!("removing {}", old.display()))?;
        }
    }
    copy_tree(from, &partial)
        .and_then(|()| {
            std::fs::rename(&partial, to)
                .with_context(|| format!("renaming {} to {}", partial.display(), to.display()))
        })
        .map_err(|error| {
            let _ = std::fs::remove_dir_all(&partial);
            error.context(format!(
                "copying {} to {} failed",
                from.display(),
                to.display()
            ))
        })
}

/// Where [`copy_build_dir`] makes the copy of `to`: beside it (the same file system, so the
/// rename is atomic), hidden, so that [`BuildCache::slots`] never takes it for a slot.
fn partial_copy(to: &Path) -> PathBuf {
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    to.with_file_name(format!(".{name}.partial"))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let mut directories = Vec::new();
    for entry in WalkDir::new(from) {
        let entry = entry.map_err(std::io::Error::from)?;
        let source = entry.path();
        let target = to.join(source.strip_prefix(from).unwrap_or(source));
        let meta = entry.metadata().map_err(std::io::Error::from)?;
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir(&target)
                .with_context(|| format!("creating {}", target.display()))?;
            directories.push((target, meta));
        } else if kind.is_symlink() {
            let link = std::fs::read_link(source)?;
            std::os::unix::fs::symlink(&link, &target)
                .with_context(|| format!("linking {}", target.display()))?;
        } else {
            reflink_copy::reflink_or_copy(source, &target)
                .with_context(|| format!("copying {}", source.display()))?;
            let file = File::options().write(true).open(&target)?;
            file.set_permissions(meta.permissions())?;
            file.set_modified(meta.modified()?)?;
        }
    }
    // Directories last, deepest first: writing into one changes its modification time.
    for (directory, meta) in directories.iter().rev() {
        std::fs::set_permissions(directory, meta.permissions())?;
        File::open(directory)?.set_modified(meta.modified()?)?;
    }
    Ok(())
}

fn try_lock(file: &File) -> bool {
    // SAFETY: flock on a file descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Writes the embedded prelude (with the crates build.rs embeds inside it) into `dir`, each file
/// only when it changed, and removes the files there that it no longer has: one an earlier
/// kernel wrote would still be compiled (a `runtime.rs` beside the `runtime/mod.rs` that replaced
/// it fails the build). Hidden entries and `target/` are left alone.
pub(crate) fn write_prelude_copy(dir: &Path) -> Result<()> {
    for (relative, contents) in PRELUDE_FILES {
        write_if_changed(&dir.join(relative), contents)?;
    }
    let keep: std::collections::HashSet<PathBuf> = PRELUDE_FILES
        .iter()
        .map(|(relative, _)| dir.join(relative))
        .collect();
    remove_stale(dir, &keep)
}

fn remove_stale(dir: &Path, keep: &std::collections::HashSet<PathBuf>) -> Result<()> {
    let mut entries = Vec::new();
    let walk = crate_entries(dir);
    for entry in walk {
        entries.push(entry.with_context(|| format!("reading {}", dir.display()))?);
    }
    // Children before their directory, so an emptied directory goes too. A link is removed as
    // a file, never followed.
    for entry in entries.iter().rev() {
        let path = entry.path();
        if entry.file_type().is_dir() {
            // Fails, as it should, while something is kept inside.
            let _ = std::fs::remove_dir(path);
        } else if !keep.contains(path) {
            std::fs::remove_file(path).with_context(|| {
                format!("removing {}, left by an earlier kernel", path.display())
            })?;
        }
    }
    Ok(())
}

/// Writes only when the contents differ, so unchanged files keep their modification time and
/// cargo does not rebuild the prelude.
fn write_if_changed(path: &Path, contents: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
