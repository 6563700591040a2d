//! A build directory checked file by file: the ready marker, the manifest of its dependency
//! files' sizes, whole archives and shared libraries, and the repair of what is damaged.

use anyhow::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Marker written into a build directory once the prelude has been built and loaded in it.
/// It holds the prelude's stamp: a build directory made for other prelude sources is not
/// ready (cargo would rebuild part of it), so it is refreshed from, or into, the template.
const READY_MARKER: &str = ".tchbook-ready";

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
/// is missing; a replay record naming a missing file is not replayed, see the cargo front end;
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
