//! How the evaluation process is started: this binary, which evcxr re-executes in its runtime
//! role ([`super::Role::Evcxr`]), with what it needs to load the cells' libraries.

use super::env;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The command evcxr starts the evaluation process with (evcxr adds its own variables).
pub(crate) fn evaluation_process(libtorch_lib: Option<&Path>) -> std::io::Result<Command> {
    let mut command = Command::new(std::env::current_exe()?);
    // Its own process group: the SIGINT Jupyter sends to the kernel's group must not reach
    // the evaluation process; the kernel decides what an interrupt does.
    command.process_group(0);
    // Cells link libstd dynamically. Their RUNPATH points at the toolchain relative to
    // target/<triple>/debug/deps, but evcxr loads them from one directory up, where that
    // relative path is one level short whenever the build directory and the toolchain share
    // a parent (both under $HOME: ~/.cache/tchbook and ~/.rustup). Say where libstd is.
    // No empty entry: glibc would read it as the notebook's folder (`env::library_path`).
    let dirs: Vec<PathBuf> = libtorch_lib
        .map(Path::to_path_buf)
        .into_iter()
        .chain(rustc_target_libdir())
        .collect();
    let inherited = std::env::var_os(env::LD_LIBRARY_PATH);
    command.env(
        env::LD_LIBRARY_PATH,
        env::library_path(&dirs, inherited.as_deref()),
    );
    // SAFETY: prctl is async-signal-safe. The evaluation process dies with the kernel even
    // when the kernel is SIGKILLed, instead of living on with a notebook's tensors. SIGTERM,
    // not SIGKILL: the prelude's handler (`runtime::attach`) then ends the processes its cells
    // started too (its process group). The engine thread, which spawns every evaluation
    // process, lives as long as the kernel, so the signal never comes early.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    Ok(command)
}

/// The toolchain's library directory (where `libstd-*.so` lives).
fn rustc_target_libdir() -> Option<PathBuf> {
    let output = super::cache::tool("rustc")
        .args(["--print", "target-libdir"])
        .output()
        .ok()?;
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}
