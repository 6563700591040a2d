//! Finding gdb and starting it as a debug adapter (`gdb -i=dap`, gdb 14 and later), with
//! Rust's pretty-printers and the signals the kernel itself uses passed through.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that names the gdb to use, before any other.
const GDB_VARIABLE: &str = "TCHBOOK_GDB";

/// What the reply says when no gdb with the Debug Adapter Protocol is found.
pub(crate) fn missing(why: &str) -> String {
    format!(
        "tchbook's breakpoints need gdb 14 or later with its Debug Adapter Protocol ({why}). \
         Install it into the kernel's Python environment with \
         `python -m pip install gdb-for-pwndbg==18.1.0.post1`, or name a gdb in ${GDB_VARIABLE}; \
         then restart the kernel. The Variables panel works without it."
    )
}

/// `$TCHBOOK_GDB`, else the `gdb` beside the Python of the kernel's environment (the
/// kernelspec's, or the one the kernel runs in), else `gdb` on PATH.
pub(crate) fn find() -> Option<PathBuf> {
    if let Some(named) = std::env::var_os(GDB_VARIABLE) {
        return Some(PathBuf::from(named));
    }
    let mut folders: Vec<PathBuf> = Vec::new();
    for variable in ["VIRTUAL_ENV", "CONDA_PREFIX", "TCHBOOK_VENV"] {
        if let Some(prefix) = std::env::var_os(variable) {
            folders.push(Path::new(&prefix).join("bin"));
        }
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(folder) = exe.parent()
    {
        folders.push(folder.to_owned());
    }
    if let Some(path) = std::env::var_os("PATH") {
        folders.extend(std::env::split_paths(&path));
    }
    folders
        .into_iter()
        .map(|folder| folder.join("gdb"))
        .find(|gdb| gdb.is_file())
}

/// gdb as a debug adapter. SIGINT (the stop button: the prelude's interrupt) and SIGPIPE go
/// to the evaluation process without stopping it, as they would without the debugger; a
/// SIGSTOP (the kernel's pause) stops it in gdb and goes no further.
pub(crate) fn command(gdb: &Path) -> Command {
    let mut command = Command::new(gdb);
    command.args(["-q", "-nx", "-i=dap"]);
    for signal in ["SIGINT", "SIGPIPE", "SIGUSR1", "SIGUSR2"] {
        command
            .arg("-iex")
            .arg(format!("handle {signal} nostop noprint pass"));
    }
    // The kernel's `pause` is a SIGSTOP (`requests::pause`): it stops the cell in gdb and must
    // not reach the process when the cell continues (it would stop it again, for good).
    command.arg("-iex").arg("handle SIGSTOP stop print nopass");
    if let Some(printers) = rust_printers() {
        command
            .arg("-iex")
            .arg(format!("source {}", printers.display()));
    }
    for (name, code) in OWN_SCRIPTS {
        match own_script(name, code) {
            Ok(script) => {
                command
                    .arg("-iex")
                    .arg(format!("source {}", script.display()));
            }
            Err(error) => tracing::warn!("debugger: tchbook's {name} not written: {error}"),
        }
    }
    // Its own process group: a SIGINT meant for the kernel's group must not reach gdb.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
}

/// Rust's gdb pretty-printers (`Vec`, `String`, `Option`, ...), which rustup ships beside the
/// toolchain the cells are built with.
fn rust_printers() -> Option<PathBuf> {
    let output = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(output.stdout).ok()?;
    let file = Path::new(sysroot.trim()).join("lib/rustlib/etc/gdb_load_rust_pretty_printers.py");
    file.is_file().then_some(file)
}

/// tchbook's own gdb scripts: `printers.py` (a tensor and a var store as the Variables panel
/// shows them) and `hits.py` (hit counts as debugpy counts them).
const OWN_SCRIPTS: [(&str, &str); 2] = [
    ("tchbook_printers.py", include_str!("printers.py")),
    ("tchbook_hits.py", include_str!("hits.py")),
];

/// One of [`OWN_SCRIPTS`], written beside the cells' files for gdb to read.
fn own_script(name: &str, code: &str) -> std::io::Result<PathBuf> {
    let folder = PathBuf::from(super::cells::prefix());
    std::fs::create_dir_all(&folder)?;
    let file = folder.join(name);
    std::fs::write(&file, code)?;
    Ok(file)
}
