//! The kernel's end of the side channel (`tchbook_wire::side_channel`): JupyterLab's Variables
//! panel, the GPU part of its Kernel Usage panel, the front end's comm messages and
//! `comm_info_request` ask the evaluation process, which serves a Unix socket with a name of
//! this kernel's own in the abstract namespace. Nothing is compiled to answer, and the cell's
//! output carries nothing.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tchbook_wire::side_channel::{Answer, Request};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A new address for this kernel's side channel: a name in the abstract socket namespace
/// (`tchbook_wire::side_channel::connect`), so there is no file to protect or to leave behind; the
/// evaluation process answers only the kernel that started it (`src/evaluation/side_channel.rs`).
pub(crate) fn new_address() -> String {
    let random: [u8; 16] = rand::random();
    let hex: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("@tchbook-side-channel-{}-{hex}", std::process::id())
}

/// Asks the evaluation process; cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct SideChannel {
    socket: Option<PathBuf>,
}

impl SideChannel {
    /// A client of the socket at `socket`; with `None` every question goes unanswered.
    pub(crate) fn new(socket: Option<PathBuf>) -> SideChannel {
        SideChannel { socket }
    }

    /// The answer to `request`, or `None` when the evaluation process does not answer within
    /// `patience` (not started yet, being restarted, or a kernel without the socket).
    pub(crate) async fn ask(&self, request: &Request, patience: Duration) -> Option<Answer> {
        let socket = self.socket.as_deref()?;
        match tokio::time::timeout(patience, exchange(socket, request)).await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(error)) => {
                tracing::debug!("side channel: {error:#}");
                None
            }
            Err(_) => {
                tracing::warn!(
                    "side channel: the evaluation process did not answer within {patience:?}"
                );
                None
            }
        }
    }
}

async fn exchange(socket: &Path, request: &Request) -> Result<Answer> {
    // A local socket's connect does not wait: the std call, then tokio's stream.
    let stream = tchbook_wire::side_channel::connect(socket.as_os_str())
        .with_context(|| format!("connecting to {}", socket.display()))?;
    stream.set_nonblocking(true)?;
    let mut stream = tokio::net::UnixStream::from_std(stream)?;
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

    #[test]
    fn each_address_is_new_and_names_no_file() {
        let (a, b) = (new_address(), new_address());
        assert_ne!(a, b);
        assert!(
            a.starts_with("@tchbook-side-channel-") && a.len() > 40,
            "{a}"
        );
    }
}
