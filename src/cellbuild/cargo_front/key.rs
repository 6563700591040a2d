//! The key a record is stored under: everything that decides the rustc command cargo would
//! run for the cell crate.

use super::record::relative;
use crate::cellbuild::cache::crate_entries;
use crate::cellbuild::digest::Key;
use crate::cellbuild::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables that do not change what rustc is asked to do: cargo's jobserver, and the file
/// evcxr's own rustc wrapper would report the library in (set for builds, not checks).
/// Nor does the file a check is asked to check, nor evcxr being told that it may ask.
const KEY_IGNORES: &[&str] = &[
    env::CARGO_MAKEFLAGS,
    env::EXECUTION_SO_PATH,
    env::CHECK_SOURCE,
    env::CHECK_SOURCE_SUPPORTED,
];

/// A hash of everything that decides the rustc command cargo would run for the cell crate:
/// the arguments, the manifest, the lock file, every cargo config file that applies, the
/// environment cargo and rustc read, and the compiler itself.
pub(super) fn inputs_key(dir: &Path, args: &[OsString]) -> String {
    let mut key = Key::new();
    // `--offline` changes how cargo may fetch, never the rustc command (evcxr's start-up cell
    // is built offline, later cells not).
    let args: Vec<&OsString> = args.iter().filter(|arg| *arg != "--offline").collect();
    key.number(args.len() as u64);
    for arg in args {
        key.os(arg);
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        key.optional(std::fs::read(dir.join(file)).ok().as_deref());
    }
    for ancestor in dir.ancestors() {
        for name in ["config.toml", "config"] {
            let config = ancestor.join(".cargo").join(name);
            if let Ok(contents) = std::fs::read(&config) {
                key.bytes(relative(&config.to_string_lossy(), dir).as_bytes());
                key.bytes(&contents);
            }
        }
    }
    // Path dependencies (the prelude) are sources cargo would check for changes: so does the
    // key, by every file's size and modification time, as cargo's own freshness check does.
    for source in path_dependencies(dir) {
        key.os(source.as_os_str());
        hash_tree(&source, &mut key);
    }
    let mut variables: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            (name.starts_with("CARGO") || name.starts_with("RUST") || name.starts_with("EVCXR"))
                && !KEY_IGNORES.contains(&name.as_str())
        })
        .map(|(name, value)| (name, relative(&value, dir)))
        .collect();
    variables.sort();
    key.number(variables.len() as u64);
    for (name, value) in &variables {
        key.bytes(name.as_bytes()).bytes(value.as_bytes());
    }
    if let Some(meta) = std::env::var_os("RUSTC").and_then(|rustc| std::fs::metadata(rustc).ok()) {
        key.number(meta.len()).time(meta.modified().ok());
    }
    key.hex(32)
}

/// The directories of the manifest's `path` dependencies.
fn path_dependencies(dir: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return Vec::new();
    };
    let Ok(manifest) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for table in ["dependencies", "build-dependencies"] {
        if let Some(deps) = manifest.get(table).and_then(toml::Value::as_table) {
            for spec in deps.values() {
                if let Some(path) = spec.get("path").and_then(toml::Value::as_str) {
                    found.push(dir.join(path));
                }
            }
        }
    }
    found
}

/// Hashes every file under `dir` (but `target/` and hidden entries) by relative path, size
/// and modification time.
fn hash_tree(dir: &Path, key: &mut Key) {
    for entry in crate_entries(dir).flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        key.os(entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .as_os_str());
        if !meta.is_dir() {
            key.number(meta.len()).time(meta.modified().ok());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_a_path_dependency_changes_the_key() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let dep = dir.join("dep");
        std::fs::create_dir_all(dep.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"ctx\"\n[dependencies]\ndep = { path = \"dep\" }\n",
        )
        .unwrap();
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() {}").unwrap();
        let args = [OsString::from("build")];
        let before = inputs_key(dir, &args);
        assert_eq!(inputs_key(dir, &args), before);
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() { let _ = 1; }").unwrap();
        assert_ne!(inputs_key(dir, &args), before);
    }
}
