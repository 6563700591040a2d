//! The build cache: damage is found, said and repaired; a cache that cannot be written (read
//! only, full) still gives a kernel that starts, answers, and says in the first cell what is
//! wrong and what to do; the directories a kernel makes are its user's alone.
//!
//! Each test works on a copy of the real cache's build template (`TCHBOOK_CACHE_DIR`), with
//! `TCHBOOK_PRELUDE_DIR` naming the real cache's prelude, so that the copy's records and
//! cargo's fingerprints stay valid and nothing but the damage is rebuilt (`copy`).

mod copy;
mod damaged;
mod private;
mod unwritable;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The path a cell's `String` value names (its `Debug` text, in quotes).
pub(super) fn path_result(cell: &crate::support::Execution) -> PathBuf {
    let text = cell.result().expect("a value");
    PathBuf::from(text.trim_matches('"'))
}

pub(super) fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
