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
