//! Linking a cell against one shared library of its dependencies.
//!
//! Every cell is a `cdylib`, and rustc links into it, statically, the ~100 rlibs of the prelude
//! and its dependencies, then hands the linker every native library they asked for, libtorch's
//! among them. That link was most of a cell's build: lld read the rlibs' archive indexes and
//! libtorch's symbol tables (`libtorch_cpu.so` alone has 78,000 dynamic symbols) on every cell,
//! 120 ms of a trivial cell's 190 ms in rustc. Yet the dependencies are the same for every cell
//! of a build directory.
//!
//! So the first build with a record prints its linker command (`--print link-args`), and the
//! record keeps a [`LinkPlan`] made from it: the dependencies' rlibs are linked once, whole,
//! into a shared library (`target/tchbook-link/libtchbook-deps-<hash>.so`, with libtorch as
//! needed, exactly as rustc would have linked them into the cell), and later builds run rustc
//! with this binary as the linker (`TCHBOOK_LINK_PLAN` holds the plan), which hands the real linker the same command
//! with that library in place of the rlibs and without libtorch's libraries. The cell then
//! needs the library, which needs libtorch; the loader finds both already open after the first
//! cell. Link time for a cell goes from ~120 ms to ~40 ms.
//!
//! One copy of the dependencies' code and statics then serves every cell (before, each cell
//! carried its own), and the CUDA libraries stay out of the cells as before: the C wrapper calls
//! none of their symbols, and where an NVIDIA driver exists the prelude loads them itself.
//!
//! A build whose plan fails to link turns the plan off for good (the record keeps
//! [`LinkPlan::Full`]) and links as rustc does.

use super::digest::Key;
use super::placeholder::{absolute, relative};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

mod linker;
pub(crate) use linker::run_as_linker;

/// What a record does at a cell's link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "link", rename_all = "lowercase")]
pub(super) enum LinkPlan {
    /// Link as rustc would: no plan could be made, or one failed.
    Full,
    /// Link against `library` in place of the `replaced` rlibs, leaving out the `dropped`
    /// native libraries (`-l` names); `linker` is the program rustc would have run. Paths are
    /// stored with the build-directory placeholder.
    Shared {
        library: String,
        replaced: Vec<String>,
        dropped: Vec<String>,
        linker: String,
    },
}

/// The arguments that make rustc print its linker command, for [`plan`].
pub(super) const PRINT_LINK_ARGS: [&str; 2] = ["--print", "link-args"];
/// The file every libtorch directory holds: how the plan knows libtorch's libraries.
const LIBTORCH_MARKER: &str = "libtorch_cpu.so";
/// Where the shared libraries live, under the build directory.
const LIBRARY_DIR: &str = "target/tchbook-link";

impl LinkPlan {
    /// The plan with absolute paths, if it links through a library that is still there.
    pub(super) fn usable(&self, dir: &Path) -> Option<LinkPlan> {
        let LinkPlan::Shared {
            library,
            replaced,
            dropped,
            linker,
        } = self
        else {
            return None;
        };
        let library = absolute(library, dir);
        Path::new(&library).is_file().then(|| LinkPlan::Shared {
            library,
            replaced: replaced.iter().map(|path| absolute(path, dir)).collect(),
            dropped: dropped.clone(),
            linker: linker.clone(),
        })
    }
}

/// Whether a failed build's diagnostic says the plan itself is at fault (the link), rather
/// than the cell's code.
pub(super) fn blames_the_plan(message: &str) -> bool {
    message.starts_with("linking with `")
}

/// A plan from rustc's `--print link-args` output for one build in `dir`; links the shared
/// library of the dependencies.
pub(super) fn plan(printed: &str, dir: &Path) -> Result<LinkPlan> {
    let Some(line) = printed.lines().find(|line| line.contains("\"-shared\"")) else {
        bail!("rustc printed no linker command for a shared library");
    };
    let words = linker_words(line);
    let Some((linker, args)) = words.split_first() else {
        bail!("rustc's linker command is empty");
    };
    let target = dir.join("target");
    let replaced: Vec<String> = args
        .iter()
        .filter(|arg| is_dependency(arg, &target))
        .cloned()
        .collect();
    if replaced.is_empty() {
        return Ok(LinkPlan::Full);
    }
    let library = link_library(linker, args, &replaced, dir)?;
    let mut dropped = libtorch_libraries(args);
    for name in loaded_with(&library, args) {
        if !dropped.contains(&name) {
            dropped.push(name);
        }
    }
    Ok(LinkPlan::Shared {
        library: relative(&library.to_string_lossy(), dir),
        replaced: replaced.iter().map(|path| relative(path, dir)).collect(),
        dropped,
        linker: linker.clone(),
    })
}

/// The C runtime and the unwinder, which a cell's own code calls: rustc names them for every
/// link, and the cell keeps them.
const C_RUNTIME: [&str; 8] = ["c", "m", "dl", "rt", "pthread", "util", "gcc_s", "gcc"];

/// The `-l` names of the linker command, the C runtime aside, that the loader opens with the
/// dependencies' `library` anyway: its own needed libraries (the C++ runtime of torch-sys's
/// wrapper) and theirs where the command's search path holds them (libtorch's OpenMP). A cell's
/// code calls none of them itself, only the dependencies that do; and where a dependency's
/// inlined code in the cell does, the loader finds the symbol in those same libraries, which are
/// in the cell's scope through the library. So the cell's link need not read their symbol
/// tables: libstdc++'s alone cost ~10 ms of every cell's link.
fn loaded_with(library: &Path, args: &[String]) -> Vec<String> {
    let search = search_dirs(args);
    let mut loaded = needed_libraries(library);
    for name in loaded.clone() {
        if let Some(path) = search
            .iter()
            .map(|dir| dir.join(&name))
            .find(|path| path.is_file())
        {
            loaded.extend(needed_libraries(&path));
        }
    }
    let mut names: Vec<String> = Vec::new();
    for name in args.iter().filter_map(|arg| arg.strip_prefix("-l")) {
        let file = format!("lib{name}.so");
        let is_loaded = loaded
            .iter()
            .any(|soname| *soname == file || soname.starts_with(&format!("{file}.")));
        if is_loaded && !C_RUNTIME.contains(&name) && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The `DT_NEEDED` entries of the shared library at `path`; none where it cannot be read.
fn needed_libraries(path: &Path) -> Vec<String> {
    use object::read::elf::ElfFile64;
    let read = || -> Result<Vec<String>> {
        let data = std::fs::read(path)?;
        let file = ElfFile64::<object::Endianness>::parse(&*data)?;
        let table = file
            .elf_section_table()
            .dynamic_table(file.endian(), &*data)?;
        Ok(table
            .iter()
            .filter(|entry| entry.tag == object::elf::DT_NEEDED)
            .filter_map(|entry| table.string(entry).ok())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect())
    };
    read().unwrap_or_else(|error| {
        tracing::debug!(
            "reading the needed libraries of {}: {error:#}",
            path.display()
        );
        Vec::new()
    })
}

/// Whether a linker argument is one of the dependencies' rlibs (built under `target`).
fn is_dependency(arg: &str, target: &Path) -> bool {
    arg.ends_with(".rlib") && Path::new(arg).starts_with(target)
}

/// The `-l` names of the linker command that resolve to libtorch's directory.
fn libtorch_libraries(args: &[String]) -> Vec<String> {
    let search = search_dirs(args);
    let torch_dir = search
        .iter()
        .find(|dir| dir.join(LIBTORCH_MARKER).is_file());
    args.iter()
        .filter_map(|arg| arg.strip_prefix("-l"))
        .filter(|name| {
            torch_dir.is_some_and(|torch| {
                search
                    .iter()
                    .find(|dir| dir.join(format!("lib{name}.so")).is_file())
                    == Some(torch)
            })
        })
        .map(str::to_owned)
        .collect()
}

/// Links the dependencies' shared library (named after its rlibs: one already there holds these
/// same ones, as the linker writes its output whole or not at all) and returns its path.
fn link_library(linker: &str, args: &[String], replaced: &[String], dir: &Path) -> Result<PathBuf> {
    let library_dir = dir.join(LIBRARY_DIR);
    std::fs::create_dir_all(&library_dir)
        .with_context(|| format!("creating {}", library_dir.display()))?;
    let name = format!("libtchbook-deps-{}.so", fingerprint(replaced));
    let library = library_dir.join(&name);
    if library.is_file() {
        return Ok(library);
    }
    let mut link_args = library_arguments(args, replaced, &dir.join("target"));
    link_args.push(format!("-Wl,-soname,{name}"));
    link_args.push("-o".into());
    link_args.push(library.to_string_lossy().into_owned());
    let output = Command::new(linker)
        .args(&link_args)
        .output()
        .with_context(|| format!("running {linker}"))?;
    if !output.status.success() {
        bail!(
            "linking the dependencies' library failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(library)
}

/// The cell's link, turned into the library's: the rlibs whole (every symbol a later cell may
/// call), without the cell's own objects, its symbol list, its output and rustc's temporary
/// files (gone by now).
fn library_arguments(args: &[String], replaced: &[String], target: &Path) -> Vec<String> {
    let gone = |path: &str| path.starts_with('/') && !Path::new(path).exists();
    let mut link_args: Vec<String> = Vec::new();
    let mut args_iter = args.iter();
    while let Some(arg) = args_iter.next() {
        if arg == "-o" {
            args_iter.next();
            continue;
        }
        if arg == "-L" {
            if let Some(dir) = args_iter.next().filter(|dir| !gone(dir)) {
                link_args.extend([arg.clone(), dir.clone()]);
            }
            continue;
        }
        if is_dependency(arg, target) {
            // All of them, in rustc's order, where the first stood.
            if arg == &replaced[0] {
                link_args.push("-Wl,--whole-archive".into());
                link_args.extend(replaced.iter().cloned());
                link_args.push("-Wl,--no-whole-archive".into());
            }
            continue;
        }
        if gone(arg.strip_prefix("-L").unwrap_or(arg))
            || arg.ends_with(".rcgu.o")
            || arg.starts_with("-Wl,--version-script=")
            || arg == "-Wl,--no-undefined-version"
        {
            continue;
        }
        link_args.push(arg.clone());
    }
    // rustc's run path for libstd is relative to the cell's directory, not this library's: name
    // the directories of the shared libraries it links outright.
    let shared_dirs: Vec<String> = link_args
        .iter()
        .filter(|arg| arg.starts_with('/') && arg.ends_with(".so"))
        .filter_map(|arg| Some(Path::new(arg).parent()?.to_string_lossy().into_owned()))
        .collect();
    for shared_dir in shared_dirs {
        link_args.push(format!("-Wl,-rpath,{shared_dir}"));
    }
    link_args
}

/// Removes the libraries under `dir` that no record in `records` names any more (a `:dep`
/// or a rebuilt dependency made a new one). A process that has one loaded keeps its mapping.
pub(super) fn remove_unused_libraries(dir: &Path, records: &Path) {
    let Ok(libraries) = std::fs::read_dir(dir.join(LIBRARY_DIR)) else {
        return;
    };
    let named: Vec<String> = std::fs::read_dir(records)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .collect();
    for library in libraries.flatten() {
        let name = library.file_name().to_string_lossy().into_owned();
        if !named.iter().any(|record| record.contains(&name)) {
            let _ = std::fs::remove_file(library.path());
        }
    }
}

/// The words of rustc's printed command (`NAME="value" ... "cc" "arg" ...`): the linker and
/// its arguments, unquoted, without the environment assignments in front.
fn linker_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            break;
        };
        let assignment = first != '"';
        // An assignment's name, up to its quoted value.
        while chars.next_if(|c| *c != '"' && !c.is_whitespace()).is_some() {}
        if chars.next_if_eq(&'"').is_none() {
            continue;
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => word.extend(chars.next()),
                '"' => break,
                c => word.push(c),
            }
        }
        if !assignment {
            words.push(word);
        }
    }
    words
}

/// The library search directories of a linker command, in order.
fn search_dirs(args: &[String]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "-L" {
            dirs.extend(args.next().map(PathBuf::from));
        } else if let Some(dir) = arg.strip_prefix("-L") {
            dirs.push(PathBuf::from(dir));
        }
    }
    dirs
}

/// Names the library after the rlibs it holds, by path, size and modification time: a
/// rebuilt dependency gives a new library (and a process that loaded the old one keeps it).
fn fingerprint(rlibs: &[String]) -> String {
    let mut key = Key::new();
    key.number(rlibs.len() as u64);
    for rlib in rlibs {
        key.bytes(rlib.as_bytes());
        let meta = std::fs::metadata(rlib).ok();
        key.number(meta.as_ref().map_or(0, |m| m.len()));
        key.time(meta.and_then(|m| m.modified().ok()));
    }
    key.hex(16)
}

#[cfg(test)]
mod tests;
