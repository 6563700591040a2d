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
//! with this binary as the linker ([`LINKER_ENV`]), which hands the real linker the same command
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

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{absolute, relative};

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
/// Set on a replayed build for the linker rustc runs (this binary): the plan, as JSON with
/// absolute paths. Its presence is what makes this binary act as the linker.
pub(crate) const LINKER_ENV: &str = "TCHBOOK_LINK_PLAN";
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
    let search = search_dirs(args);
    let torch_dir = search
        .iter()
        .find(|dir| dir.join(LIBTORCH_MARKER).is_file());
    let target = dir.join("target");
    let is_dependency = |arg: &str| arg.ends_with(".rlib") && Path::new(arg).starts_with(&target);
    let replaced: Vec<String> = args
        .iter()
        .filter(|arg| is_dependency(arg))
        .cloned()
        .collect();
    if replaced.is_empty() {
        return Ok(LinkPlan::Full);
    }
    let dropped: Vec<String> = args
        .iter()
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
        .collect();

    // The cell's link, turned into the library's: the rlibs whole (every symbol a later cell
    // may call), without the cell's own objects, its symbol list and rustc's temporary files
    // (gone by now), and with a name of its own.
    let library_dir = dir.join(LIBRARY_DIR);
    std::fs::create_dir_all(&library_dir)
        .with_context(|| format!("creating {}", library_dir.display()))?;
    let name = format!("libtchbook-deps-{:016x}.so", fingerprint(&replaced));
    let library = library_dir.join(&name);
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
        if is_dependency(arg) {
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
    link_args.push(format!("-Wl,-soname,{name}"));
    link_args.push("-o".into());
    link_args.push(library.to_string_lossy().into_owned());
    // Named after its rlibs: one already there holds these same ones (the linker writes its
    // output whole or not at all).
    if !library.is_file() {
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
    }
    Ok(LinkPlan::Shared {
        library: relative(&library.to_string_lossy(), dir),
        replaced: replaced.iter().map(|path| relative(path, dir)).collect(),
        dropped,
        linker: linker.clone(),
    })
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

/// Runs as the linker rustc was given (`-C linker`, with [`LINKER_ENV`] set): the real linker,
/// with the plan's library in place of the rlibs it holds.
pub(crate) fn run_as_linker(plan: &str, args: Vec<OsString>) -> i32 {
    let Ok(LinkPlan::Shared {
        library,
        replaced,
        dropped,
        linker,
    }) = serde_json::from_str::<LinkPlan>(plan)
    else {
        eprintln!("tchbook (linker): {LINKER_ENV} does not hold a link plan");
        return 1;
    };
    let args = cell_link_arguments(args, &library, &replaced, &dropped);
    let error = Command::new(&linker).args(args).exec();
    eprintln!("tchbook (linker): running {linker}: {error}");
    1
}

/// A cell's link command with `library` in place of the `replaced` rlibs and without the
/// `dropped` libraries. The library's directory goes on the cell's run path, for the loader.
fn cell_link_arguments(
    args: Vec<OsString>,
    library: &str,
    replaced: &[String],
    dropped: &[String],
) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut placed = false;
    for arg in args {
        let text = arg.to_string_lossy();
        if replaced.iter().any(|path| *path == *text) {
            if !placed {
                // The rlibs stand in rustc's static section (`-Bstatic`), where a shared
                // library may not.
                out.push("-Wl,--push-state,-Bdynamic".into());
                out.push(OsString::from(library));
                out.push("-Wl,--pop-state".into());
                placed = true;
            }
            continue;
        }
        if text == "-Wl,--no-undefined-version" {
            // The symbol list rustc wrote for the cell names the dependencies' exported
            // symbols (tch's `#[no_mangle]` callbacks), which are now the library's.
            out.push("-Wl,--undefined-version".into());
            continue;
        }
        if text
            .strip_prefix("-l")
            .is_some_and(|name| dropped.iter().any(|dropped| dropped == name))
        {
            continue;
        }
        out.push(arg);
    }
    if let Some(parent) = Path::new(library).parent() {
        out.push(format!("-Wl,-rpath,{}", parent.display()).into());
    }
    // Every cell's library stays mapped in the evaluation process for good (evcxr never
    // unloads one: a variable may hold a vtable, a function pointer or a string literal of the
    // cell that made it, and nothing tells which). Each loadable segment is a memory map, and a
    // process may have 65,530: with the linkers' default layout (read-only data, code, RELRO,
    // data) that was 4 maps per cell; with code and read-only data in one segment and no RELRO
    // segment it is 2. GNU ld, lld and mold read `-z`; only lld and mold (rustc's own linker is
    // lld, `-fuse-ld=lld`) know `--no-rosegment`, which lld needs to merge the first two.
    let lld_or_mold = out
        .iter()
        .any(|arg| arg == "-fuse-ld=lld" || arg == "-fuse-ld=mold");
    out.push("-Wl,-z,noseparate-code".into());
    out.push("-Wl,-z,norelro".into());
    if lld_or_mold {
        out.push("-Wl,--no-rosegment".into());
    }
    out
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
fn fingerprint(rlibs: &[String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for rlib in rlibs {
        rlib.hash(&mut hasher);
        if let Ok(meta) = std::fs::metadata(rlib) {
            meta.len().hash(&mut hasher);
            meta.modified().ok().hash(&mut hasher);
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_command_is_read_without_its_environment() {
        let line = r#"LC_ALL="C" PATH="/a b:/c" "cc" "-Wl,--as-needed" "-L" "/x/lib" "-lsay \"hi\"" "-shared""#;
        assert_eq!(
            linker_words(line),
            [
                "cc",
                "-Wl,--as-needed",
                "-L",
                "/x/lib",
                "-lsay \"hi\"",
                "-shared"
            ]
        );
    }

    #[test]
    fn a_cell_links_the_library_in_place_of_the_rlibs_and_without_libtorch() {
        let args = [
            "-Wl,--version-script=/tmp/rustcX/list",
            "-Wl,--no-undefined-version",
            "/b/target/deps/ctx.a.rcgu.o",
            "-Wl,-Bstatic",
            "/b/target/deps/libtch-1.rlib",
            "/b/target/deps/libprelude-2.rlib",
            "/rust/lib/libcompiler_builtins-3.rlib",
            "-lstdc++",
            "-ltorch_cpu",
            "-lc10",
            "-lc",
            "-fuse-ld=lld",
        ]
        .map(OsString::from)
        .to_vec();
        let out = cell_link_arguments(
            args,
            "/b/target/tchbook-link/libtchbook-deps-1.so",
            &[
                "/b/target/deps/libtch-1.rlib".into(),
                "/b/target/deps/libprelude-2.rlib".into(),
            ],
            &["torch_cpu".into(), "c10".into()],
        );
        assert_eq!(
            out,
            [
                "-Wl,--version-script=/tmp/rustcX/list",
                "-Wl,--undefined-version",
                "/b/target/deps/ctx.a.rcgu.o",
                "-Wl,-Bstatic",
                "-Wl,--push-state,-Bdynamic",
                "/b/target/tchbook-link/libtchbook-deps-1.so",
                "-Wl,--pop-state",
                "/rust/lib/libcompiler_builtins-3.rlib",
                "-lstdc++",
                "-lc",
                "-fuse-ld=lld",
                "-Wl,-rpath,/b/target/tchbook-link",
                "-Wl,-z,noseparate-code",
                "-Wl,-z,norelro",
                "-Wl,--no-rosegment",
            ]
            .map(OsString::from)
        );
    }

    #[test]
    fn the_library_holds_the_rlibs_whole_and_the_plan_names_libtorch() {
        let dir = std::env::temp_dir().join(format!("tchbook-link-{}", std::process::id()));
        let deps = dir.join("target").join("deps");
        let torch = dir.join("torch").join("lib");
        std::fs::create_dir_all(&deps).unwrap();
        std::fs::create_dir_all(&torch).unwrap();
        let cc = |args: &[&str]| {
            let status = Command::new("cc").args(args).status().unwrap();
            assert!(status.success(), "cc {args:?}");
        };
        // libtorch_cpu: a real shared library defining what the "rlib" calls.
        let torch_c = dir.join("torch.c");
        std::fs::write(&torch_c, "int torch_answer(void) { return 42; }\n").unwrap();
        let libtorch = torch.join(LIBTORCH_MARKER);
        cc(&[
            "-shared",
            "-fPIC",
            "-o",
            libtorch.to_str().unwrap(),
            torch_c.to_str().unwrap(),
        ]);
        // An "rlib": an archive with a function nothing in the cell calls yet.
        let dep_c = dir.join("dep.c");
        std::fs::write(
            &dep_c,
            "int torch_answer(void);\nint dep_unused(void) { return torch_answer(); }\n",
        )
        .unwrap();
        let dep_o = dir.join("dep.o");
        cc(&[
            "-c",
            "-fPIC",
            "-o",
            dep_o.to_str().unwrap(),
            dep_c.to_str().unwrap(),
        ]);
        let rlib = deps.join("libdep-1.rlib");
        let status = Command::new("ar")
            .arg("crs")
            .arg(&rlib)
            .arg(&dep_o)
            .status()
            .unwrap();
        assert!(status.success());

        let line = format!(
            r#"LC_ALL="C" "cc" "{}/ctx.x.rcgu.o" "{}" "-L" "{}" "-ltorch_cpu" "-lm" "-L" "/gone/rustcX/raw-dylibs" "-shared" "-o" "{}/libctx.so""#,
            deps.display(),
            rlib.display(),
            torch.display(),
            deps.display()
        );
        let plan = plan(&line, &dir).unwrap();
        let LinkPlan::Shared {
            library,
            replaced,
            dropped,
            linker,
        } = plan.clone()
        else {
            panic!("no shared plan: {plan:?}");
        };
        assert_eq!(replaced, ["{tchbook-build-dir}/target/deps/libdep-1.rlib"]);
        assert_eq!(dropped, ["torch_cpu"]);
        assert_eq!(linker, "cc");
        let library = absolute(&library, &dir);
        // Whole: the unused function is there, and libtorch is needed.
        let symbols = Command::new("nm").arg("-D").arg(&library).output().unwrap();
        let symbols = String::from_utf8_lossy(&symbols.stdout);
        assert!(symbols.contains("T dep_unused"), "{symbols}");
        let needed = Command::new("readelf")
            .arg("-d")
            .arg(&library)
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&needed.stdout).contains("[libtorch_cpu.so]"));
        assert!(plan.usable(&dir).is_some());
        std::fs::remove_file(&library).unwrap();
        assert!(
            plan.usable(&dir).is_none(),
            "a plan whose library is gone must not be used"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn libraries_no_record_names_are_removed() {
        let dir = std::env::temp_dir().join(format!("tchbook-link-gc-{}", std::process::id()));
        let libraries = dir.join(LIBRARY_DIR);
        let records = dir.join("target").join("tchbook-replay");
        std::fs::create_dir_all(&libraries).unwrap();
        std::fs::create_dir_all(&records).unwrap();
        for name in ["libtchbook-deps-1.so", "libtchbook-deps-2.so"] {
            std::fs::write(libraries.join(name), b"").unwrap();
        }
        std::fs::write(
            records.join("1.json"),
            r#"{"link_plan":{"library":"{tchbook-build-dir}/target/tchbook-link/libtchbook-deps-1.so"}}"#,
        )
        .unwrap();
        remove_unused_libraries(&dir, &records);
        assert!(libraries.join("libtchbook-deps-1.so").is_file());
        assert!(!libraries.join("libtchbook-deps-2.so").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_without_dependencies_keeps_rustcs_own_plan() {
        let line = r#""cc" "a.o" "-lm" "-L" "/nonexistent" "-shared""#;
        assert_eq!(
            plan(line, Path::new("/nonexistent")).unwrap(),
            LinkPlan::Full
        );
    }
}
