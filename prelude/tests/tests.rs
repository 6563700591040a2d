//! The prelude's integration tests: one binary, one module per area. Every file these tests read
//! is written by the tests themselves, in the real formats (and broken on purpose).

mod data;
mod device;
mod display;
mod loader;
mod memory;
mod models;
mod runtime;
mod train;

use std::path::PathBuf;

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
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TCHBOOK_TEST_CHILD", test)
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
