//! The key a record is stored under: everything that decides the rustc command cargo would
//! run for the cell crate.

use super::record::relative;
use crate::build::env;
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
pub(super) fn inputs_key(dir: &Path, args: &[OsString]) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same inputs give the same key in every process.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // `--offline` changes how cargo may fetch, never the rustc command (evcxr's start-up cell
    // is built offline, later cells not).
    for arg in args.iter().filter(|arg| *arg != "--offline") {
        arg.hash(&mut hasher);
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        std::fs::read(dir.join(file)).ok().hash(&mut hasher);
    }
    for ancestor in dir.ancestors() {
        for name in ["config.toml", "config"] {
            let config = ancestor.join(".cargo").join(name);
            if let Ok(contents) = std::fs::read(&config) {
                relative(&config.to_string_lossy(), dir).hash(&mut hasher);
                contents.hash(&mut hasher);
            }
        }
    }
    // Path dependencies (the prelude) are sources cargo would check for changes: so does the
    // key, by every file's size and modification time, as cargo's own freshness check does.
    for source in path_dependencies(dir) {
        source.hash(&mut hasher);
        hash_tree(&source, &mut hasher);
    }
    let mut variables: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            (name.starts_with("CARGO") || name.starts_with("RUST") || name.starts_with("EVCXR"))
                && !KEY_IGNORES.contains(&name.as_str())
        })
        .map(|(name, value)| (name, relative(&value, dir)))
        .collect();
    variables.sort();
    variables.hash(&mut hasher);
    if let Some(meta) = std::env::var_os("RUSTC").and_then(|rustc| std::fs::metadata(rustc).ok()) {
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
    }
    hasher.finish()
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
fn hash_tree(dir: &Path, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        name.hash(hasher);
        if meta.is_dir() {
            hash_tree(&entry.path(), hasher);
        } else {
            meta.len().hash(hasher);
            meta.modified().ok().hash(hasher);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_a_path_dependency_changes_the_key() {
        let dir = std::env::temp_dir().join(format!("tchbook-front-key-{}", std::process::id()));
        let dep = dir.join("dep");
        std::fs::create_dir_all(dep.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"ctx\"\n[dependencies]\ndep = { path = \"dep\" }\n",
        )
        .unwrap();
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() {}").unwrap();
        let args = [OsString::from("build")];
        let before = inputs_key(&dir, &args);
        assert_eq!(inputs_key(&dir, &args), before);
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() { let _ = 1; }").unwrap();
        assert_ne!(inputs_key(&dir, &args), before);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
