//! Linking a cell without reading libtorch.
//!
//! Every cell is a `cdylib`, and rustc hands its linker every native library the dependencies
//! asked for, libtorch's among them. lld then reads their symbol tables to decide which ones the
//! cell needs: `libtorch_cpu.so` alone (78,000 dynamic symbols) costs it about 40 ms of a
//! trivial cell's 120 ms link, on every cell. A shared library may keep undefined symbols,
//! though; the loader resolves them when the evaluation process opens the cell, from the
//! libraries the cell names as needed.
//!
//! So the first build with a record prints its linker command (`--print link-args`), and the
//! record keeps a [`LinkPlan`] made from it. Later builds drop the dependencies' native
//! libraries (`-Zlink-native-libraries=no`) and name them again as linker arguments, with two
//! changes for those in libtorch's directory:
//!
//! - `libtorch_cpu`, `libtorch`, `libc10` and the like are replaced by stubs: empty shared
//!   libraries with the same `SONAME`, made once per build directory. The cell then records the
//!   real library as needed, and the loader, which finds it already open, resolves the cell's
//!   libtorch symbols there.
//! - The CUDA libraries are left out. The C wrapper the cells link (torch-sys) calls none of
//!   their symbols, so the original link never kept them either (`--as-needed`); where an
//!   NVIDIA driver exists the prelude loads them itself, globally, before the first tensor.
//!
//! A build with a plan that fails to link, or a rustc that no longer knows the flag, turns the
//! plan off for good (the record keeps [`LinkPlan::Full`]) and links as before.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{absolute, relative};

/// What a record does with a cell's native libraries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "link", rename_all = "lowercase")]
pub(super) enum LinkPlan {
    /// Link as rustc would: no plan could be made, or one failed.
    Full,
    /// rustc arguments that replace the dependencies' native libraries (build-directory
    /// paths as the placeholder).
    Trimmed { args: Vec<String> },
}

/// The arguments that make rustc print its linker command, for [`plan`].
pub(super) const PRINT_LINK_ARGS: [&str; 2] = ["--print", "link-args"];
/// Turns off the dependencies' native libraries; unstable, hence `RUSTC_BOOTSTRAP` on the
/// builds that use it (as for the type probes).
const NO_NATIVE_LIBRARIES: &str = "-Zlink-native-libraries=no";
/// The file every libtorch directory holds: how the plan knows libtorch's libraries.
const LIBTORCH_MARKER: &str = "libtorch_cpu.so";
/// Where the stubs live, under the build directory.
const STUB_DIR: &str = "target/tchbook-link";

impl LinkPlan {
    /// The rustc arguments to add to a build, or `None` to link as rustc would (also when a
    /// stub has gone missing: then a new plan is needed).
    pub(super) fn arguments(&self, dir: &Path) -> Option<Vec<String>> {
        let LinkPlan::Trimmed { args } = self else {
            return None;
        };
        let args: Vec<String> = args.iter().map(|arg| absolute(arg, dir)).collect();
        let stubs_present = args
            .iter()
            .filter_map(|arg| arg.strip_prefix("-Clink-arg="))
            .filter(|arg| arg.ends_with(".so") && arg.contains(STUB_DIR))
            .all(|stub| Path::new(stub).is_file());
        stubs_present.then_some(args)
    }
}

/// Whether a failed build's diagnostic says the plan itself is at fault (the link, or the
/// unstable flag), rather than the cell's code.
pub(super) fn blames_the_plan(message: &str) -> bool {
    message.starts_with("linking with `")
        || message.contains("link-native-libraries")
        || message.contains("unstable option")
}

/// A plan from rustc's `--print link-args` output for one build in `dir`; makes the stubs.
pub(super) fn plan(printed: &str, dir: &Path) -> Result<LinkPlan> {
    let Some(line) = printed.lines().find(|line| line.contains("\"-shared\"")) else {
        bail!("rustc printed no linker command for a shared library");
    };
    let words = linker_words(line);
    let Some((linker, args)) = words.split_first() else {
        bail!("rustc's linker command is empty");
    };
    let search = search_dirs(args);
    let Some(torch_dir) = search
        .iter()
        .find(|dir| dir.join(LIBTORCH_MARKER).is_file())
    else {
        return Ok(LinkPlan::Full);
    };

    let mut stubs = Vec::new();
    let mut others = Vec::new();
    let mut static_mode = false;
    for arg in args {
        match arg.as_str() {
            "-Wl,-Bstatic" => static_mode = true,
            "-Wl,-Bdynamic" => static_mode = false,
            _ => {}
        }
        let Some(name) = arg.strip_prefix("-l") else {
            continue;
        };
        let file = format!("lib{name}.so");
        let found = (!static_mode && !name.starts_with(':'))
            .then(|| search.iter().find(|dir| dir.join(&file).is_file()))
            .flatten();
        match found {
            Some(found) if found == torch_dir => {
                if !name.contains("cuda") {
                    stubs.push(found.join(&file));
                }
            }
            _ if static_mode => others.extend([
                "-Wl,-Bstatic".to_owned(),
                arg.clone(),
                "-Wl,-Bdynamic".to_owned(),
            ]),
            _ => others.push(arg.clone()),
        }
    }
    if stubs.is_empty() {
        return Ok(LinkPlan::Full);
    }

    let stub_dir = dir.join(STUB_DIR);
    std::fs::create_dir_all(&stub_dir)
        .with_context(|| format!("creating {}", stub_dir.display()))?;
    let mut linker_args = vec!["-Wl,--push-state,--no-as-needed".to_owned()];
    for real in &stubs {
        linker_args.push(
            make_stub(linker, real, &stub_dir)?
                .to_string_lossy()
                .into_owned(),
        );
    }
    linker_args.push("-Wl,--pop-state".to_owned());
    linker_args.extend(others);

    let mut rustc_args = vec![NO_NATIVE_LIBRARIES.to_owned()];
    rustc_args.extend(
        linker_args
            .iter()
            .map(|arg| relative(&format!("-Clink-arg={arg}"), dir)),
    );
    Ok(LinkPlan::Trimmed { args: rustc_args })
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

/// An empty shared library with `real`'s `SONAME`, in `stub_dir`.
fn make_stub(linker: &str, real: &Path, stub_dir: &Path) -> Result<PathBuf> {
    let soname = soname(real).with_context(|| format!("reading {}", real.display()))?;
    let stub = stub_dir.join(real.file_name().context("a library without a file name")?);
    let output = Command::new(linker)
        .args(["-shared", "-nostdlib", "-x", "c", "/dev/null", "-o"])
        .arg(&stub)
        .arg(format!("-Wl,-soname,{soname}"))
        .output()
        .with_context(|| format!("running {linker}"))?;
    if !output.status.success() {
        bail!(
            "{linker} could not make a stub for {}: {}",
            real.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(stub)
}

/// A shared library's `SONAME`, reading only its headers and dynamic section (libtorch_cpu.so
/// is half a gigabyte).
fn soname(path: &Path) -> Result<String> {
    use object::read::elf::{FileHeader, SectionHeader};
    let file = std::fs::File::open(path)?;
    let data = object::ReadCache::new(file);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, &data)?;
    for section in sections.iter() {
        if section.sh_type(endian) != object::elf::SHT_DYNAMIC {
            continue;
        }
        let table = sections.dynamic_table(endian, &data)?;
        for entry in &table {
            if entry.tag == object::elf::DT_SONAME {
                return Ok(String::from_utf8_lossy(table.string(entry)?).into_owned());
            }
        }
    }
    Ok(path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default())
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
    fn libtorch_is_stubbed_cuda_dropped_and_the_rest_kept_in_order() {
        let dir = std::env::temp_dir().join(format!("tchbook-link-{}", std::process::id()));
        let torch = dir.join("torch").join("lib");
        std::fs::create_dir_all(&torch).unwrap();
        // Real shared libraries, so that the stubs get their SONAMEs.
        for (name, soname) in [("torch_cpu", "libtorch_cpu.so"), ("c10", "libc10.so.2")] {
            let status = Command::new("cc")
                .args(["-shared", "-nostdlib", "-x", "c", "/dev/null", "-o"])
                .arg(torch.join(format!("lib{name}.so")))
                .arg(format!("-Wl,-soname,{soname}"))
                .status()
                .unwrap();
            assert!(status.success());
        }
        std::fs::write(torch.join("libtorch_cuda.so"), b"").unwrap();
        let line = format!(
            r#"LC_ALL="C" "cc" "a.o" "-Wl,-Bstatic" "-lbundled" "-Wl,-Bdynamic" "-lstdc++" "-ltorch_cuda" "-ltorch_cpu" "-lc10" "-lm" "-L" "{}" "-shared""#,
            torch.display()
        );
        let LinkPlan::Trimmed { args } = plan(&line, &dir).unwrap() else {
            panic!("no plan for a link with libtorch");
        };
        let stub = |name: &str| format!("-Clink-arg={{tchbook-build-dir}}/{STUB_DIR}/lib{name}.so");
        assert_eq!(
            args,
            [
                NO_NATIVE_LIBRARIES.to_owned(),
                "-Clink-arg=-Wl,--push-state,--no-as-needed".into(),
                stub("torch_cpu"),
                stub("c10"),
                "-Clink-arg=-Wl,--pop-state".into(),
                "-Clink-arg=-Wl,-Bstatic".into(),
                "-Clink-arg=-lbundled".into(),
                "-Clink-arg=-Wl,-Bdynamic".into(),
                "-Clink-arg=-lstdc++".into(),
                "-Clink-arg=-lm".into(),
            ]
        );
        assert_eq!(
            soname(&dir.join(STUB_DIR).join("libc10.so")).unwrap(),
            "libc10.so.2"
        );
        assert!(LinkPlan::Trimmed { args: args.clone() }
            .arguments(&dir)
            .is_some());
        std::fs::remove_file(dir.join(STUB_DIR).join("libc10.so")).unwrap();
        assert!(
            LinkPlan::Trimmed { args }.arguments(&dir).is_none(),
            "a plan whose stub is gone must not be used"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_without_libtorch_keeps_rustcs_own_plan() {
        let line = r#""cc" "a.o" "-lm" "-L" "/nonexistent" "-shared""#;
        assert_eq!(
            plan(line, Path::new("/nonexistent")).unwrap(),
            LinkPlan::Full
        );
    }
}
