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
pub struct PanelsDir {
    dir: tempfile::TempDir,
}

impl PanelsDir {
    /// A fresh directory under the system's temporary directory: a Unix socket's path must stay
    /// under 108 bytes, which a build cache's path may not.
    pub fn create() -> Result<PanelsDir> {
        // 0700 whatever the umask: tempfile would create it with the process's umask, and
        // under `umask 000` any local user could connect and read every variable.
        let dir = tempfile::Builder::new()
            .prefix("tchbook-panels-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .context("creating the directory of the panels socket")?;
        Ok(PanelsDir { dir })
    }

    /// Where the evaluation process listens.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("panels.sock")
    }
}

/// Asks the evaluation process; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct PanelsClient {
    socket: Option<PathBuf>,
}

impl PanelsClient {
    /// A client of the socket at `socket`; with `None` every question goes unanswered.
    pub fn new(socket: Option<PathBuf>) -> PanelsClient {
        PanelsClient { socket }
    }

    /// The answer to `request`, or `None` when the evaluation process does not answer within
    /// `patience` (not started yet, being restarted, or a kernel without the socket).
    pub async fn ask(&self, request: &Request, patience: Duration) -> Option<Answer> {
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
