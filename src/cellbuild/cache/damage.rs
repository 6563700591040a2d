//! A build directory checked file by file: the ready marker, the manifest of its dependency
//! files' sizes and SHA-256 sums, whole archives and shared libraries, and the repair of what
//! is damaged.
//!
//! Two depths of checking: [`Check::Sizes`] at every kernel start (sizes and the archives' and
//! libraries' structure: milliseconds), [`Check::Contents`] where it is cheap beside what
//! happens anyway — before the template is copied into a new slot, when loading the prelude
//! failed, in `tchbook install` and `tchbook doctor` — which also finds a file corrupted at its
//! full size (about 350 MB read, a fraction of a second with the CPU's SHA instructions).

use anyhow::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Marker written into a build directory once the prelude has been built and loaded in it.
/// It holds the prelude's stamp: a build directory made for other prelude sources is not
/// ready (cargo would rebuild part of it), so it is refreshed from, or into, the template.
const READY_MARKER: &str = ".tchbook-ready";

/// Whether `build_dir` has the prelude with this stamp built.
pub(crate) fn is_ready(build_dir: &Path, stamp: &str) -> bool {
    std::fs::read_to_string(build_dir.join(READY_MARKER)).is_ok_and(|found| found == stamp)
}

/// Marks `build_dir` ready for the prelude with this stamp, recording its dependency files'
/// sizes and sums first ([`verify`] checks them): all of them for a new build, and for one that
/// was ready already only what changed since they were recorded.
pub(crate) fn mark_ready(build_dir: &Path, stamp: &str) -> Result<()> {
    if is_ready(build_dir, stamp) && has_manifest(build_dir) {
        // The start-up cell may have rebuilt a few files (cargo's own freshness checks): record
        // those again, and keep every other file's sum, read when it was written.
        refresh_manifest(build_dir)?;
    } else {
        write_manifest(build_dir)?;
    }
    let marker = build_dir.join(READY_MARKER);
    std::fs::write(&marker, stamp).with_context(|| format!("writing {}", marker.display()))
}

/// The list of a build directory's dependency files with their sizes and SHA-256 sums
/// (`size<TAB>sha256<TAB>path` a line; an older kernel's `size<TAB>path` lines still read),
/// written when the directory is marked ready (and so copied with the template into every
/// slot).
const MANIFEST: &str = ".tchbook-manifest";

/// How much of a build directory [`verify`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Each recorded file's size, and the structure of every rlib and shared library.
    Sizes,
    /// That, and each recorded file's SHA-256.
    Contents,
}

/// Something wrong with one file of a build directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Relative to the build directory.
    pub(crate) path: PathBuf,
    pub(crate) what: String,
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
    let files: Vec<PathBuf> = WalkDir::new(build_dir.join("target"))
        .into_iter()
        .filter_entry(|entry| {
            !(entry.file_type().is_dir()
                && SKIPPED_DIRS.contains(&entry.file_name().to_string_lossy().as_ref()))
        })
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy();
            // The cell crate is `ctx`; evcxr renames each cell's library `libcode_<n>.so`.
            entry.file_type().is_file()
                && !(name.starts_with('.')
                    || name.starts_with("ctx")
                    || name.starts_with("libctx")
                    || name.starts_with("libcode_"))
        })
        .map(walkdir::DirEntry::into_path)
        .collect();
    let mut relative: Vec<PathBuf> = files
        .iter()
        .filter_map(|path| path.strip_prefix(build_dir).ok())
        .map(Path::to_path_buf)
        .collect();
    relative.sort();
    relative
}

/// Whether `build_dir` has its dependency files' sizes recorded.
pub(crate) fn has_manifest(build_dir: &Path) -> bool {
    build_dir.join(MANIFEST).is_file()
}

/// Records the sizes and SHA-256 sums of `build_dir`'s dependency files (see [`verify`]).
pub(crate) fn write_manifest(build_dir: &Path) -> Result<()> {
    let mut text = String::new();
    for relative in dependency_files(build_dir) {
        let path = build_dir.join(&relative);
        if let (Ok(meta), Ok(sum)) = (std::fs::metadata(&path), sha256_of(&path)) {
            text.push_str(&format!("{}\t{sum}\t{}\n", meta.len(), relative.display()));
        }
    }
    let path = build_dir.join(MANIFEST);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Records `build_dir`'s dependency files again, hashing only those that are new, have another
/// size, or were written after the manifest (a sum read once stays valid while its file is not
/// written again).
fn refresh_manifest(build_dir: &Path) -> Result<()> {
    let path = build_dir.join(MANIFEST);
    let written = std::fs::metadata(&path)
        .and_then(|meta| meta.modified())
        .ok();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let known: std::collections::HashMap<PathBuf, (u64, String)> = text
        .lines()
        .filter_map(manifest_entry)
        .filter_map(|(file, size, sum)| Some((file, (size, sum?.to_owned()))))
        .collect();
    let mut fresh = String::new();
    for relative in dependency_files(build_dir) {
        let file = build_dir.join(&relative);
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        let unchanged = |(size, _): &&(u64, String)| {
            *size == meta.len()
                && matches!((meta.modified().ok(), written), (Some(m), Some(w)) if m <= w)
        };
        let sum = match known.get(&relative).filter(unchanged) {
            Some((_, sum)) => sum.clone(),
            None => match sha256_of(&file) {
                Ok(sum) => sum,
                Err(_) => continue,
            },
        };
        fresh.push_str(&format!("{}\t{sum}\t{}\n", meta.len(), relative.display()));
    }
    std::fs::write(&path, fresh).with_context(|| format!("writing {}", path.display()))
}

/// The SHA-256 of the file at `path`, lowercase hex.
fn sha256_of(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut hasher = Sha256::new();
    let mut file = File::open(path)?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// One line of the manifest: the file, its size, and its sum where recorded.
fn manifest_entry(line: &str) -> Option<(PathBuf, u64, Option<&str>)> {
    let mut fields = line.splitn(3, '\t');
    let size = fields.next()?.parse::<u64>().ok()?;
    let second = fields.next()?;
    Some(match fields.next() {
        Some(path) => (PathBuf::from(path), size, Some(second)),
        None => (PathBuf::from(second), size, None),
    })
}

/// Checks `build_dir`'s dependency files: each recorded one must exist with its recorded size
/// (and, with [`Check::Contents`], its recorded SHA-256), and every rlib and shared library
/// must be whole (an `ar` archive whose members reach its end; an ELF file whose section
/// headers lie inside it), which also covers a directory whose records are missing. Returns
/// what is wrong, empty when nothing is.
pub(crate) fn verify(build_dir: &Path, check: Check) -> Vec<Damage> {
    let mut damage = Vec::new();
    if let Ok(text) = std::fs::read_to_string(build_dir.join(MANIFEST)) {
        for (relative, size, sum) in text.lines().filter_map(manifest_entry) {
            let path = build_dir.join(&relative);
            let what = match std::fs::metadata(&path) {
                Err(_) => Some("missing".to_owned()),
                Ok(meta) if meta.len() != size => {
                    Some(format!("{} bytes, {size} when it was built", meta.len()))
                }
                Ok(_) => match (check, sum) {
                    (Check::Contents, Some(sum)) => match sha256_of(&path) {
                        Ok(found) if found == sum => None,
                        Ok(_) => Some(format!(
                            "its {size} bytes are not those it was built with (SHA-256 differs)"
                        )),
                        Err(error) => Some(format!("unreadable: {error}")),
                    },
                    _ => None,
                },
            };
            if let Some(what) = what {
                damage.push(Damage {
                    path: relative,
                    what,
                });
            }
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
        let Some(size) = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        else {
            return Some(format!("overwritten: no member header at byte {at}"));
        };
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
pub(crate) fn remove_damaged(build_dir: &Path, damage: &[Damage]) -> Result<()> {
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
pub(crate) fn describe(damage: &[Damage]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A build directory holding one rlib: an `ar` archive with one member.
    fn build_dir(name: &str) -> PathBuf {
        let dir = tempfile::Builder::new()
            .prefix(&format!("tchbook-damage-{name}-"))
            .tempdir()
            .unwrap()
            .keep();
        let deps = dir.join("target/debug/deps");
        std::fs::create_dir_all(&deps).unwrap();
        let data = vec![7u8; 1000];
        let mut rlib = b"!<arch>\n".to_vec();
        rlib.extend(
            format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                "lib.rmeta/",
                0,
                0,
                0,
                644,
                data.len()
            )
            .bytes(),
        );
        rlib.extend(&data);
        std::fs::write(deps.join("libdep-1.rlib"), rlib).unwrap();
        dir
    }

    /// The one damaged file `verify` finds in `dir`, which is then removed.
    fn only_damage(dir: &Path, check: Check) -> Damage {
        let mut damage = verify(dir, check);
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(damage.len(), 1, "{damage:?}");
        damage.remove(0)
    }

    fn overwrite(path: &Path, at: u64, bytes: &[u8]) {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.seek(SeekFrom::Start(at)).unwrap();
        file.write_all(bytes).unwrap();
    }

    #[test]
    fn a_file_overwritten_at_its_full_size_is_found_by_its_contents_only() {
        let dir = build_dir("contents");
        write_manifest(&dir).unwrap();
        assert!(verify(&dir, Check::Contents).is_empty());
        let rlib = dir.join("target/debug/deps/libdep-1.rlib");
        // Inside the member's data: the archive's structure and the size still look right.
        overwrite(&rlib, 500, &[0; 64]);
        assert!(verify(&dir, Check::Sizes).is_empty());
        let damage = only_damage(&dir, Check::Contents);
        assert_eq!(damage.path, Path::new("target/debug/deps/libdep-1.rlib"));
        assert!(damage.what.contains("SHA-256"), "{damage}");
    }

    #[test]
    fn an_archive_whose_member_headers_were_overwritten_is_damaged_by_its_structure() {
        let dir = build_dir("headers");
        let rlib = dir.join("target/debug/deps/libdep-1.rlib");
        overwrite(&rlib, 8, &[0; 60]);
        let damage = only_damage(&dir, Check::Sizes);
        assert!(
            damage.what.contains("no member header at byte 8"),
            "{damage}"
        );
    }

    #[test]
    fn marking_a_ready_directory_ready_records_what_a_build_rewrote_and_keeps_the_rest() {
        let dir = build_dir("refresh");
        let metadata = dir.join("target/debug/deps/libdep-1.rmeta");
        std::fs::write(&metadata, b"metadata of the first build").unwrap();
        mark_ready(&dir, "s").unwrap();
        // Rewritten by a build after the manifest, as cargo rewrites what it finds stale.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&metadata, b"metadata of a second build").unwrap();
        mark_ready(&dir, "s").unwrap();
        assert!(verify(&dir, Check::Contents).is_empty());
        // A file overwritten without its time changing keeps its old sum, and is found.
        let modified = std::fs::metadata(&metadata).unwrap().modified().unwrap();
        std::fs::write(&metadata, b"metadata of a second bui1d").unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&metadata)
            .unwrap();
        file.set_modified(modified - std::time::Duration::from_secs(60))
            .unwrap();
        mark_ready(&dir, "s").unwrap();
        let damage = only_damage(&dir, Check::Contents);
        assert_eq!(damage.path, Path::new("target/debug/deps/libdep-1.rmeta"));
    }

    #[test]
    fn a_manifest_an_older_kernel_wrote_is_still_checked_by_size() {
        let dir = build_dir("older");
        let rlib = dir.join("target/debug/deps/libdep-1.rlib");
        let size = std::fs::metadata(&rlib).unwrap().len();
        let line = format!("{}\ttarget/debug/deps/libdep-1.rlib\n", size + 1);
        std::fs::write(dir.join(MANIFEST), line).unwrap();
        let damage = only_damage(&dir, Check::Contents);
        assert!(damage.what.contains("when it was built"), "{damage}");
    }
}
