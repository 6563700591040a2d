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

use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/prelude_files.rs"));

/// Marker written into a build directory once the prelude has been built and loaded in it.
/// It holds the prelude's stamp: a build directory made for other prelude sources is not
/// ready (cargo would rebuild part of it), so it is refreshed from, or into, the template.
const READY_MARKER: &str = ".tchbook-ready";

/// `$TCHBOOK_CACHE_DIR`, else `$XDG_CACHE_HOME/tchbook`, else `~/.cache/tchbook`.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("TCHBOOK_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("tchbook");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("tchbook")
}

/// The cache directory for this kernel version and torch version.
#[derive(Debug, Clone)]
pub struct BuildCache {
    pub dir: PathBuf,
}

impl BuildCache {
    pub fn new(torch_version: Option<&str>) -> Self {
        let torch = torch_version.unwrap_or("none");
        let key = format!("{}-torch-{}", crate::VERSION, sanitize(torch));
        BuildCache {
            dir: cache_root().join("build").join(key),
        }
    }

    pub fn template_dir(&self) -> PathBuf {
        self.dir.join("template")
    }

    /// Writes the embedded prelude (unless `TCHBOOK_PRELUDE_DIR` points at a checkout) and the
    /// cargo config; returns the prelude crate's directory and its stamp (a hash of its files).
    pub fn prepare(&self) -> Result<(PathBuf, String)> {
        let dir = self
            .write_prelude()
            .map_err(|error| anyhow::anyhow!(explain(&error)))?;
        let stamp = stamp(&dir);
        Ok((dir, stamp))
    }

    fn write_prelude(&self) -> Result<PathBuf> {
        std::fs::create_dir_all(self.dir.join(".cargo"))
            .with_context(|| format!("creating the build cache {}", self.dir.display()))?;
        // Dependencies (tch, the prelude) are built once and run often: optimise them. The
        // cell crate's own opt-level is set per kernel by the engine (`:opt`). Profile settings
        // from cargo config take precedence over the cell crate's manifest.
        write_if_changed(
            &self.dir.join(".cargo").join("config.toml"),
            b"[profile.dev.package.\"*\"]\nopt-level = 2\ndebug = false\n",
        )?;
        if let Some(dir) = std::env::var_os("TCHBOOK_PRELUDE_DIR") {
            return std::fs::canonicalize(&dir)
                .with_context(|| format!("TCHBOOK_PRELUDE_DIR={}", PathBuf::from(&dir).display()));
        }
        let prelude = self.dir.join("prelude");
        for (relative, contents) in PRELUDE_FILES {
            write_if_changed(&prelude.join(relative), contents)?;
        }
        Ok(prelude)
    }

    /// The directory this kernel builds cells in: a slot of the cache, or, when the cache cannot
    /// be used (read-only, full, not a directory), a scratch directory of its own and why.
    pub fn build_dir(&self) -> BuildDir {
        let slot = self.acquire_slot().and_then(|slot| {
            std::fs::create_dir_all(&slot.dir)
                .with_context(|| format!("creating {}", slot.dir.display()))?;
            Ok(slot)
        });
        match slot {
            Ok(slot) => BuildDir {
                dir: slot.dir.clone(),
                _slot: Some(slot),
                problem: None,
            },
            Err(error) => {
                let problem = explain(&error);
                tracing::error!("{problem}");
                let dir =
                    std::env::temp_dir().join(format!("tchbook-scratch-{}", std::process::id()));
                let _ = std::fs::create_dir_all(&dir);
                BuildDir {
                    dir,
                    _slot: None,
                    problem: Some(problem),
                }
            }
        }
    }

    /// Takes the first free slot, holding its lock until the returned value is dropped.
    pub fn acquire_slot(&self) -> Result<Slot> {
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
    pub fn slots(&self) -> Result<Vec<(PathBuf, Option<File>)>> {
        let slots = self.dir.join("slots");
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir(&slots) else {
            return Ok(found);
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() {
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
    pub fn other_builds(&self) -> Vec<PathBuf> {
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
    pub fn lock_template(&self) -> Result<File> {
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
pub struct Slot {
    pub dir: PathBuf,
    _lock: File,
}

/// Where a kernel builds its cells; see [`BuildCache::build_dir`].
#[derive(Debug)]
pub struct BuildDir {
    pub dir: PathBuf,
    _slot: Option<Slot>,
    /// Why the cache is not used, said to the user with the first cell.
    pub problem: Option<String>,
}

/// Below this much free space a build in the cache is likely to fail half-way (a cell's link
/// needs a few MB; cargo rebuilding the prelude, a few hundred).
const LOW_SPACE: u64 = 64 << 20;

/// What went wrong with the build cache, in words that say what to do. File system errors
/// that a user can fix (read-only, no permission, no space) are named as such.
pub fn explain(error: &anyhow::Error) -> String {
    let root = cache_root();
    let io = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::raw_os_error);
    let elsewhere = "or set TCHBOOK_CACHE_DIR to a directory that is (in the environment \
         Jupyter starts from, or in the kernelspec's `env`)";
    match io {
        Some(libc::EROFS | libc::EACCES | libc::EPERM) => format!(
            "The build cache {} cannot be written ({error:#}). Fix: make it writable, {elsewhere}; \
             then restart the kernel. Until then cells run without the prelude.",
            root.display()
        ),
        Some(libc::ENOSPC | libc::EDQUOT) => format!(
            "The disk holding the build cache {} is full ({error:#}; {}). Fix: free some space \
             (old builds under {} can go: `tchbook doctor` lists them), {elsewhere}; then \
             restart the kernel.",
            root.display(),
            free_space_text(&root),
            root.join("build").display()
        ),
        _ => format!(
            "The build cache {} could not be used: {error:#}. Fix: run `tchbook doctor`, which \
             checks and repairs it, or set TCHBOOK_CACHE_DIR to another directory; then \
             restart the kernel.",
            root.display()
        ),
    }
}

/// Bytes free for an unprivileged user on the file system holding `path` (or its nearest
/// existing parent).
pub fn free_space(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let name = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct for a NUL-terminated path.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(name.as_ptr(), &mut stat) != 0 {
            return None;
        }
        Some(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
}

fn free_space_text(path: &Path) -> String {
    match free_space(path) {
        Some(bytes) => format!("{} MiB free", bytes >> 20),
        None => "free space unknown".to_owned(),
    }
}

/// A sentence for the user when the disk holding `build_dir` is (nearly) full: builds that
/// fail there fail in odd ways (the linker dies with "Bus error" when the file it maps cannot
/// grow), so a failed cell is checked against this.
pub fn low_space_problem(build_dir: &Path) -> Option<String> {
    let free = free_space(build_dir)?;
    (free < LOW_SPACE).then(|| {
        format!(
            "The disk holding the build cache ({}) is full: {} MiB free, so the cell could not \
             be built (a linker \"Bus error\" or \"No space left on device\" below comes from \
             that). Fix: free some space, or set TCHBOOK_CACHE_DIR to a disk with room and \
             restart the kernel.",
            build_dir.display(),
            free >> 20
        )
    })
}

/// Whether `build_dir` has the prelude with this stamp built.
pub fn is_ready(build_dir: &Path, stamp: &str) -> bool {
    std::fs::read_to_string(build_dir.join(READY_MARKER)).is_ok_and(|found| found == stamp)
}

/// Marks `build_dir` ready for the prelude with this stamp, recording its dependency files'
/// sizes first ([`verify`] checks them).
pub fn mark_ready(build_dir: &Path, stamp: &str) -> Result<()> {
    write_manifest(build_dir)?;
    let marker = build_dir.join(READY_MARKER);
    std::fs::write(&marker, stamp).with_context(|| format!("writing {}", marker.display()))
}

/// The kernel version and a hash of every file of the prelude crate at `dir`.
fn stamp(dir: &Path) -> String {
    use std::hash::{Hash, Hasher};
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                walk(&path, files);
            } else {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    // SipHash with fixed keys: the same files give the same stamp in every process.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in files {
        file.strip_prefix(dir).unwrap_or(&file).hash(&mut hasher);
        std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
    }
    format!("{}-{:016x}", crate::VERSION, hasher.finish())
}

/// Replaces `to` with a copy of `from`, keeping modification times (cargo's freshness checks
/// compare them) and sharing blocks where the file system can.
pub fn copy_build_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    let output = std::process::Command::new("cp")
        .arg("-a")
        .arg("--reflink=auto")
        .arg(from)
        .arg(to)
        .output()
        .context("running cp")?;
    if !output.status.success() {
        // A half-made copy must not look like a build directory to the next kernel.
        let _ = std::fs::remove_dir_all(to);
        let said = String::from_utf8_lossy(&output.stderr);
        let first = said.lines().next().unwrap_or("").trim();
        let error = anyhow::anyhow!(
            "copying {} to {} failed ({}): {}",
            from.display(),
            to.display(),
            output.status,
            if first.is_empty() {
                "cp said nothing"
            } else {
                first
            }
        );
        // cp reports ENOSPC/EACCES only in its words; name them as errors so `explain` can.
        let os = if said.contains("No space left") {
            Some(libc::ENOSPC)
        } else if said.contains("Read-only file system") {
            Some(libc::EROFS)
        } else if said.contains("Permission denied") {
            Some(libc::EACCES)
        } else {
            None
        };
        return Err(match os {
            Some(code) => anyhow::Error::new(std::io::Error::from_raw_os_error(code))
                .context(error.to_string()),
            None => error,
        });
    }
    Ok(())
}

fn try_lock(file: &File) -> bool {
    // SAFETY: flock on a file descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
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

/// The list of a build directory's dependency files with their sizes, written when the
/// directory is marked ready (and so copied with the template into every slot).
const MANIFEST: &str = ".tchbook-manifest";

/// Something wrong with one file of a build directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Relative to the build directory.
    pub path: PathBuf,
    pub what: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// The files a build directory's dependencies consist of, relative to it: what cargo built for
/// the prelude and tch (rlibs, metadata, shared libraries, build script outputs, for the host in
/// `target/debug` and for the target in `target/<triple>/debug`) and the dependencies' shared
/// library the cells link (`target/tchbook-link`). Not the cell crate's own outputs, which every
/// cell rewrites, nor cargo's and rustc's bookkeeping (fingerprints, incremental caches) or the
/// front end's records, which are checked where they are used.
fn dependency_files(build_dir: &Path) -> Vec<PathBuf> {
    const SKIPPED_DIRS: &[&str] = &[
        "incremental",
        ".fingerprint",
        "examples",
        "tchbook-replay",
        "tchbook-check",
    ];
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_ref()) {
                    walk(&entry.path(), files);
                }
            } else if kind.is_file()
                // The cell crate is `ctx`; evcxr renames each cell's library `libcode_<n>.so`.
                && !(name.starts_with('.')
                    || name.starts_with("ctx")
                    || name.starts_with("libctx")
                    || name.starts_with("libcode_"))
            {
                files.push(entry.path());
            }
        }
    }
    let mut files = Vec::new();
    walk(&build_dir.join("target"), &mut files);
    let mut relative: Vec<PathBuf> = files
        .iter()
        .filter_map(|path| path.strip_prefix(build_dir).ok())
        .map(Path::to_path_buf)
        .collect();
    relative.sort();
    relative
}

/// Whether `build_dir` has its dependency files' sizes recorded.
pub fn has_manifest(build_dir: &Path) -> bool {
    build_dir.join(MANIFEST).is_file()
}

/// Records the sizes of `build_dir`'s dependency files (see [`verify`]).
pub fn write_manifest(build_dir: &Path) -> Result<()> {
    let mut text = String::new();
    for relative in dependency_files(build_dir) {
        if let Ok(meta) = std::fs::metadata(build_dir.join(&relative)) {
            text.push_str(&format!("{}\t{}\n", meta.len(), relative.display()));
        }
    }
    let path = build_dir.join(MANIFEST);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Checks `build_dir`'s dependency files: each recorded one must exist with its recorded size,
/// and every rlib and shared library must be whole (an `ar` archive whose members reach its
/// end; an ELF file whose section headers lie inside it), which also covers a directory whose
/// records are missing. Returns what is wrong, empty when nothing is.
pub fn verify(build_dir: &Path) -> Vec<Damage> {
    let mut damage = Vec::new();
    let mut recorded = std::collections::BTreeSet::new();
    if let Ok(text) = std::fs::read_to_string(build_dir.join(MANIFEST)) {
        for line in text.lines() {
            let Some((size, relative)) = line.split_once('\t') else {
                continue;
            };
            let Ok(size) = size.parse::<u64>() else {
                continue;
            };
            let relative = PathBuf::from(relative);
            match std::fs::metadata(build_dir.join(&relative)) {
                Err(_) => damage.push(Damage {
                    path: relative.clone(),
                    what: "missing".to_owned(),
                }),
                Ok(meta) if meta.len() != size => damage.push(Damage {
                    path: relative.clone(),
                    what: format!("{} bytes, {size} when it was built", meta.len()),
                }),
                Ok(_) => {}
            }
            recorded.insert(relative);
        }
    }
    for relative in dependency_files(build_dir) {
        if damage.iter().any(|d| d.path == relative) {
            continue;
        }
        let name = relative.to_string_lossy();
        let problem = if name.ends_with(".rlib") {
            archive_problem(&build_dir.join(&relative))
        } else if name.ends_with(".so") {
            elf_problem(&build_dir.join(&relative))
        } else {
            None
        };
        if let Some(what) = problem {
            damage.push(Damage {
                path: relative,
                what,
            });
        }
    }
    damage
}

/// Why the `ar` archive (an rlib) at `path` is not whole, if it is not.
fn archive_problem(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut magic = [0u8; 8];
    if file.read_exact(&mut magic).is_err() || &magic != b"!<arch>\n" {
        return Some("not an rlib (no archive header)".to_owned());
    }
    let mut at = 8u64;
    while at < len {
        let mut header = [0u8; 60];
        if file.seek(SeekFrom::Start(at)).is_err() || file.read_exact(&mut header).is_err() {
            return Some(format!("cut off: {len} bytes, a member header at {at}"));
        }
        let size: u64 = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse().ok())?;
        let end = at + 60 + size;
        if end > len {
            return Some(format!("cut off: {len} bytes, a member ends at {end}"));
        }
        at = end + (end % 2);
    }
    None
}

/// Why the ELF file (a shared library) at `path` is not whole, if it is not.
fn elf_problem(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut header = [0u8; 64];
    if file.read_exact(&mut header).is_err() || &header[..4] != b"\x7fELF" {
        return Some(format!("not a shared library ({len} bytes, no ELF header)"));
    }
    if header[4] != 2 || header[5] != 1 {
        return None; // not 64-bit little-endian: not ours to judge
    }
    let shoff = u64::from_le_bytes(header[0x28..0x30].try_into().ok()?);
    let shentsize = u64::from(u16::from_le_bytes(header[0x3a..0x3c].try_into().ok()?));
    let shnum = u64::from(u16::from_le_bytes(header[0x3c..0x3e].try_into().ok()?));
    let end = shoff + shentsize * shnum;
    (end > len).then(|| format!("cut off: {len} bytes, its section headers end at {end}"))
}

/// Makes a damaged build directory buildable again: the damaged files go (cargo rebuilds what
/// is missing; a replay record naming a missing file is not replayed, see `cargo_front.rs`;
/// the dependencies' shared library is linked again), and the directory is no longer ready,
/// so the next kernel builds the prelude with cargo first.
pub fn remove_damaged(build_dir: &Path, damage: &[Damage]) -> Result<()> {
    for found in damage {
        let path = build_dir.join(&found.path);
        if path.exists() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    let marker = build_dir.join(READY_MARKER);
    if marker.exists() {
        std::fs::remove_file(&marker).with_context(|| format!("removing {}", marker.display()))?;
    }
    Ok(())
}

/// One line per damaged file, for messages.
pub fn describe(damage: &[Damage]) -> String {
    const SHOWN: usize = 8;
    let mut lines: Vec<String> = damage
        .iter()
        .take(SHOWN)
        .map(|d| format!("  {d}"))
        .collect();
    if damage.len() > SHOWN {
        lines.push(format!("  ... and {} more", damage.len() - SHOWN));
    }
    lines.join("\n")
}
