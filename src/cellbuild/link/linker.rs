//! The linker of a replayed cell build: the real linker, with the plan's library in place of
//! the rlibs it holds.

use super::LinkPlan;
use crate::cellbuild::env;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Runs as the linker rustc was given (`-C linker`, with `TCHBOOK_LINK_PLAN` set): the real linker,
/// with the plan's library in place of the rlibs it holds.
pub(crate) fn run_as_linker(plan: &str, args: Vec<OsString>) -> i32 {
    let Ok(LinkPlan::Shared {
        library,
        replaced,
        dropped,
        linker,
    }) = serde_json::from_str::<LinkPlan>(plan)
    else {
        eprintln!(
            "tchbook (linker): {} does not hold a link plan",
            env::LINK_PLAN
        );
        return 1;
    };
    let args = cell_link_arguments(args, &library, &replaced, &dropped);
    let error = Command::new(&linker).args(args).exec();
    eprintln!("tchbook (linker): running {linker}: {error}");
    1
}

/// A cell's link command with `library` in place of the `replaced` rlibs and without the
/// `dropped` libraries. The library's directory goes on the cell's run path, for the loader.
pub(super) fn cell_link_arguments(
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
    if out.iter().any(|arg| arg == "-fuse-ld=lld") {
        // A cell's link is small: lld's thread pool costs more to start than it saves (the
        // link replayed by hand, 20 ms with it, 17 without).
        out.push("-Wl,--threads=1".into());
    }
    out
}
