//! The kernel's side of the panels socket: JupyterLab's Variables panel and the GPU part of its
//! Kernel Usage panel ask the evaluation process (`tchbook_wire::panels`), which serves a Unix
//! socket in a directory of this kernel's own. Nothing is compiled to answer, and the cell's
//! output carries nothing.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tchbook_wire::panels::{Answer, Request};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The socket's directory (mode 0700, so no other user can ask), removed with the kernel.
pub(crate) struct PanelsDir {
    dir: tempfile::TempDir,
    /// `LOCK` in the directory, locked while this kernel lives (`sweep_left_behind`).
    _lock: std::fs::File,
}

impl PanelsDir {
    /// A fresh directory under the system's temporary directory: a Unix socket's path must stay
    /// under 108 bytes, which a build cache's path may not.
    pub(crate) fn create() -> Result<PanelsDir> {
        sweep_left_behind(&std::env::temp_dir());
        // 0700 whatever the umask: tempfile would create it with the process's umask, and
        // under `umask 000` any local user could connect and read every variable.
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .context("creating the directory of the panels socket")?;
        let lock = std::fs::File::create(dir.path().join(LOCK))
            .context("creating the lock of the panels socket's directory")?;
        // SAFETY: flock(2) on a file this process just opened.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
            anyhow::bail!(
                "locking {}: {}",
                dir.path().join(LOCK).display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(PanelsDir { dir, _lock: lock })
    }

    /// Where the evaluation process listens.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join(SOCKET)
    }
}

const PREFIX: &str = "tchbook-panels-";
const SOCKET: &str = "panels.sock";
/// A file every kernel keeps locked (`flock`) in its directory while it lives; the kernel opens
/// it close-on-exec, so the lock ends with the kernel, SIGKILL included.
const LOCK: &str = "kernel.lock";

/// Removes what killed kernels left in `tmp`: a kernel removes its directory when it ends, but a
/// SIGKILL leaves it, with the socket file. A directory goes when it is this user's and its lock
/// can be taken (its kernel is gone); one without a lock file is being created, or is not ours
/// to judge, and stays.
fn sweep_left_behind(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: getuid(2) cannot fail.
    let me = unsafe { libc::getuid() };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me) {
            continue;
        }
        let Ok(lock) = std::fs::File::open(path.join(LOCK)) else {
            continue;
        };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&lock);
        // SAFETY: flock(2) on a file just opened; the lock ends when `lock` is dropped.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            tracing::info!(
                "removing {}, left by a kernel that was killed",
                path.display()
            );
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Asks the evaluation process; cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct PanelsClient {
    socket: Option<PathBuf>,
}

impl PanelsClient {
    /// A client of the socket at `socket`; with `None` every question goes unanswered.
    pub(crate) fn new(socket: Option<PathBuf>) -> PanelsClient {
        PanelsClient { socket }
    }

    /// The answer to `request`, or `None` when the evaluation process does not answer within
    /// `patience` (not started yet, being restarted, or a kernel without the socket).
    pub(crate) async fn ask(&self, request: &Request, patience: Duration) -> Option<Answer> {
        let socket = self.socket.as_deref()?;
        match tokio::time::timeout(patience, exchange(socket, request)).await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(error)) => {
                tracing::debug!("panels: {error:#}");
                None
            }
            Err(_) => {
                tracing::warn!("panels: the evaluation process did not answer within {patience:?}");
                None
            }
        }
    }
}

async fn exchange(socket: &Path, request: &Request) -> Result<Answer> {
    let mut stream = tokio::net::UnixStream::connect(socket)
        .await
        .with_context(|| format!("connecting to {}", socket.display()))?;
    let mut line = serde_json::to_string(request)?;
    line.push('\n');
    stream.write_all(line.as_bytes()).await?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).await?;
    serde_json::from_str(answer.trim()).with_context(|| format!("reading the answer {answer:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_killed_kernels_directory_is_swept_and_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let dir = tmp.path().join(format!("{PREFIX}{name}"));
            std::fs::create_dir(&dir).unwrap();
            // A socket file nobody listens on, as a killed evaluation process leaves it.
            drop(std::os::unix::net::UnixListener::bind(dir.join(SOCKET)).unwrap());
            dir
        };
        let (left, live, creating) = (dir("left"), dir("live"), dir("creating"));
        // The killed kernel's lock file, unlocked; the live one's, held.
        std::fs::File::create(left.join(LOCK)).unwrap();
        let held = std::fs::File::create(live.join(LOCK)).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
        // SAFETY: flock(2) on a file just opened.
        let locked = unsafe { libc::flock(fd, libc::LOCK_EX) };
        assert_eq!(locked, 0);
        sweep_left_behind(tmp.path());
        assert!(!left.exists(), "the killed kernel's directory stays");
        assert!(live.exists() && creating.exists());
    }

    #[test]
    fn the_socket_directory_is_private_whatever_the_umask() {
        // SAFETY: umask(2) cannot fail; it is put back at once.
        let before = unsafe { libc::umask(0) };
        let dir = PanelsDir::create();
        // SAFETY: as above.
        unsafe { libc::umask(before) };
        let dir = dir.unwrap();
        let mode = std::fs::metadata(dir.dir.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
