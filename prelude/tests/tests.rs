//! The prelude's integration tests: one binary, one module per area. Every file these tests read
//! is written by the tests themselves, in the real formats (and broken on purpose).

mod data;
mod debugger;
mod device;
mod display;
mod layer_scan;
mod layers;
mod loader;
mod memory;
mod model_repr;
mod models;
mod parity;
mod runtime;
#[cfg(feature = "tensorboard")]
mod tensorboard;
mod train;
mod widgets;

use std::path::PathBuf;
use std::process::Command;

/// Names the prelude's source folder for a test binary run away from the checkout it was built in
/// (the GPU bundle of scripts/gpu-check runs it on another machine, from a copy of the repository
/// at another path): see [`prelude_dir`].
const PRELUDE_DIR: &str = "TCHBOOK_PRELUDE_DIR";

/// The prelude's source folder, where tests find the files beside them (`tests/parity.py`, which
/// imports `bench/torch_loops.py` from the same tree; `src/` for the layer check): `$TCHBOOK_PRELUDE_DIR`
/// if set, else the folder this binary was built from. The compiled-in path is the build machine's
/// and may name a checkout that no longer exists, or another one that shared the build's target
/// folder (cargo does not rebuild a workspace crate whose sources it finds unchanged elsewhere).
pub fn prelude_dir() -> PathBuf {
    std::env::var_os(PRELUDE_DIR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The path of one of the prelude's examples (`prelude/examples/NAME.rs`), which `cargo test`
/// builds into `examples/` beside the test binary's folder (and the GPU bundle lays out the same
/// way). Panics, saying how to build it, if it is missing.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join(name))
        .unwrap();
    assert!(
        example.exists(),
        "{} is missing: run the tests with `cargo test`, which builds the examples",
        example.display()
    );
    example
}

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tchbook-prelude-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Re-runs this test binary as a child that runs only `test` (an ignored test that checks
/// [`is_child`]), so that what it does to the process (attaching to a pretend kernel, printing
/// to the real stdout) can be observed from outside. Returns the child's stdout.
pub fn run_child(test: &str) -> String {
    run_child_with(test, &[])
}

/// [`run_child`] with more environment variables for the child.
pub fn run_child_with(test: &str, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TCHBOOK_TEST_CHILD", test)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Whether this process is the child that [`run_child`] started for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var("TCHBOOK_TEST_CHILD").as_deref() == Ok(test)
}

/// The Python with torch 2.11 and safetensors the PyTorch-side tests run: `$TCHBOOK_PYTHON`,
/// else the venv's (`$TCHBOOK_VENV`, default `~/.cache/tchbook/venv`). Panics, saying how to
/// get one, if it cannot import both.
pub fn python() -> PathBuf {
    let candidates: Vec<PathBuf> = match std::env::var_os("TCHBOOK_PYTHON") {
        Some(p) => vec![PathBuf::from(p)],
        None => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            let venv = std::env::var_os("TCHBOOK_VENV")
                .map(PathBuf::from)
                .unwrap_or(home.join(".cache/tchbook/venv"));
            vec![venv.join("bin/python")]
        }
    };
    for p in &candidates {
        let ok = Command::new(p)
            .args(["-c", "import torch, safetensors"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return p.clone();
        }
    }
    panic!(
        "no Python with torch and safetensors found (tried {candidates:?}): set TCHBOOK_PYTHON to one, \
         or create the venv with scripts/env.sh; parity with PyTorch cannot be checked without it"
    );
}
