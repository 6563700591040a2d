//! What a failing build cache means for the user, in words that say what to do.

use super::cache_root;
use std::io::ErrorKind;
use std::path::Path;

/// Below this much free space a build in the cache is likely to fail half-way (a cell's link
/// needs a few MB; cargo rebuilding the prelude, a few hundred).
const LOW_SPACE: u64 = 64 << 20;

/// What went wrong with the build cache, in words that say what to do. File system errors
/// that a user can fix (read-only, no permission, no space) are named as such.
pub(crate) fn explain(error: &anyhow::Error) -> String {
    let root = cache_root();
    let io = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let elsewhere = "or set TCHBOOK_CACHE_DIR to a directory that is (in the environment \
         Jupyter starts from, or in the kernelspec's `env`)";
    match io {
        Some(ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied) => format!(
            "The build cache {} cannot be written ({error:#}). Fix: make it writable, {elsewhere}; \
             then restart the kernel. Until then cells run without the prelude.",
            root.display()
        ),
        Some(ErrorKind::StorageFull | ErrorKind::QuotaExceeded) => format!(
            "The disk holding the build cache {} is full ({error:#}; {}). Fix: free some space \
             (old builds under {} can go: `tchbook doctor` lists them), {elsewhere}; then \
             restart the kernel.",
            root.display(),
            free_space_text(&root),
            root.join("build").display()
        ),
        _ => format!(
            "The build cache {} could not be used: {error:#}. Fix: run `tchbook doctor`, which \
             checks and repairs it, or set TCHBOOK_CACHE_DIR to another directory; then \
             restart the kernel.",
            root.display()
        ),
    }
}

/// Bytes free for an unprivileged user on the file system holding `path` (or its nearest
/// existing parent).
pub(crate) fn free_space(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let name = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct for a NUL-terminated path.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(name.as_ptr(), &mut stat) != 0 {
            return None;
        }
        Some(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
}

fn free_space_text(path: &Path) -> String {
    match free_space(path) {
        Some(bytes) => format!("{} MiB free", bytes >> 20),
        None => "free space unknown".to_owned(),
    }
}

/// A sentence for the user when the disk holding `build_dir` is (nearly) full: builds that
/// fail there fail in odd ways (the linker dies with "Bus error" when the file it maps cannot
/// grow), so a failed cell is checked against this.
pub(crate) fn low_space_problem(build_dir: &Path) -> Option<String> {
    let free = free_space(build_dir)?;
    (free < LOW_SPACE).then(|| {
        format!(
            "The disk holding the build cache ({}) is full: {} MiB free, so the cell could not \
             be built (a linker \"Bus error\" or \"No space left on device\" below comes from \
             that). Fix: free some space, or set TCHBOOK_CACHE_DIR to a disk with room and \
             restart the kernel.",
            build_dir.display(),
            free >> 20
        )
    })
}
