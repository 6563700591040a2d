//! The records: a cell crate's rustc command as cargo chose it, stored per build directory with
//! its paths relative to it, so that records travel with the template into every slot.

use crate::cellbuild::link::{self, LinkPlan};
pub(super) use crate::cellbuild::placeholder::{absolute, relative};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Records kept per build directory (start-up alone uses two manifests).
const MAX_RECORDS: usize = 8;

/// A recorded rustc command for the cell crate.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    /// rustc and its arguments, build-directory paths as the placeholder
    /// (`crate::cellbuild::placeholder`).
    pub(super) args: Vec<String>,
    /// The variables cargo set for rustc (`CARGO_*`, `OUT_DIR`, the library path).
    pub(super) env: Vec<(String, String)>,
    /// How later builds link the cell (`build::link`): made from the linker command rustc printed
    /// for the recorded build, or for the first replayed one where that build failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) link_plan: Option<LinkPlan>,
}

/// The record at `path`, if there is one and everything it links still exists.
pub(super) fn load(path: &Path, dir: &Path) -> Option<Record> {
    let record: Record = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let mut args = record.args.iter().map(|arg| absolute(arg, dir));
    let rustc = args.next()?;
    if !Path::new(&rustc).is_file() {
        return None;
    }
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg != "--extern" {
            continue;
        }
        if let Some((_, file)) = args.peek().and_then(|value| value.split_once('='))
            && !Path::new(file).is_file()
        {
            return None;
        }
    }
    Some(record)
}

/// Writes a record whole or not at all (another kernel's slot never shares it, but a crash
/// mid-write must not leave half a record to be replayed).
pub(super) fn save(record: &Record, path: &Path) {
    let Ok(json) = serde_json::to_vec(record) else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    if let Ok(mut temporary) = tempfile::NamedTempFile::new_in(dir)
        && temporary.write_all(&json).is_ok()
    {
        let _ = temporary.persist(path);
    }
}

pub(super) fn clear_records(records: &Path, keep: &Path) {
    if let Ok(entries) = std::fs::read_dir(records) {
        for entry in entries.flatten() {
            if entry.path() != keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Keeps the newest [`MAX_RECORDS`] records, and the link libraries they name.
pub(super) fn prune(records: &Path) {
    if let Ok(entries) = std::fs::read_dir(records) {
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .collect();
        files.sort();
        let stale = files.len().saturating_sub(MAX_RECORDS);
        for (_, path) in &files[..stale] {
            let _ = std::fs::remove_file(path);
        }
    }
    if let Some(dir) = records.parent().and_then(Path::parent) {
        link::remove_unused_libraries(dir, records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cellbuild::placeholder::DIR_PLACEHOLDER;

    #[test]
    fn build_directory_paths_travel_with_the_directory() {
        let from = Path::new("/cache/slots/0");
        let to = Path::new("/cache/slots/3");
        let arg = "--out-dir=/cache/slots/0/target/debug/deps";
        let stored = relative(arg, from);
        assert_eq!(stored, "--out-dir={tchbook-build-dir}/target/debug/deps");
        assert_eq!(
            absolute(&stored, to),
            "--out-dir=/cache/slots/3/target/debug/deps"
        );
    }

    #[test]
    fn a_record_whose_dependency_is_gone_is_not_replayed() {
        let dir_temp = tempfile::Builder::new()
            .prefix("tchbook-front-")
            .tempdir()
            .unwrap();
        let dir = dir_temp.path().to_path_buf();
        let rustc = std::env::current_exe().unwrap();
        let present = dir.join("libpresent.rlib");
        std::fs::write(&present, b"").unwrap();
        let write = |extern_file: &str| {
            let record = Record {
                args: vec![
                    rustc.to_string_lossy().into_owned(),
                    "--extern".into(),
                    format!("dep={DIR_PLACEHOLDER}/{extern_file}"),
                ],
                env: vec![],
                link_plan: None,
            };
            let path = dir.join("record.json");
            std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
            path
        };
        assert!(load(&write("libpresent.rlib"), &dir).is_some());
        assert!(load(&write("libmissing.rlib"), &dir).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
