//! The communication port: the gateway's signal and shutdown requests.
//!
//! Each request is one TCP connection carrying one JSON object, read to the end of the stream
//! (gateway_provisioners' `RemoteProvisionerBase._send_listener_request`, Enterprise
//! Gateway's `RemoteProcessProxy._send_listener_request`):
//! - `{"signum": N}`: deliver signal N to the kernel, as the launchers' `os.kill(pid, N)`.
//!   The gateway polls with signal 0 every few seconds (an answer means "alive"); SIGINT is an
//!   interrupt, which reaches the kernel's own SIGINT handling, so the running cell ends and
//!   the notebook's variables stay, exactly as a local `interrupt_mode: signal` interrupt;
//!   SIGTERM ends the kernel and its evaluation process.
//! - `{"shutdown": 1}`: stop listening (sent after the kernel's shutdown, so that nothing of
//!   the launcher outlives it).
//!
//! The listener is a thread of the kernel process itself, so a signal "to the kernel" is a
//! signal to this process: no second process has to be found or cleaned up.

use serde::Deserialize;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A request on the communication port; both fields may come together.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub struct Request {
    pub signum: Option<i32>,
    pub shutdown: Option<serde_json::Value>,
}

impl Request {
    fn is_shutdown(&self) -> bool {
        match &self.shutdown {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(flag)) => *flag,
            Some(serde_json::Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(_) => true,
        }
    }
}

/// Serves the gateway's requests on `listener` in a thread of its own until a shutdown request.
pub fn spawn(listener: TcpListener) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("tchbook-gateway-listener".into())
        .spawn(move || serve(&listener))
        .map(drop)
}

fn serve(listener: &TcpListener) {
    for stream in listener.incoming() {
        let request = match stream.map_err(anyhow::Error::from).and_then(read_request) {
            Ok(Some(request)) => request,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!("gateway listener: a request could not be read: {error:#}");
                continue;
            }
        };
        if let Some(signum) = request.signum.filter(|&signum| signum != 0) {
            tracing::info!("gateway listener: signal {signum} requested");
            // SAFETY: kill(2) on our own pid; an invalid number only returns EINVAL.
            if unsafe { libc::kill(libc::getpid(), signum) } != 0 {
                tracing::warn!(
                    "gateway listener: signal {signum}: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        if request.is_shutdown() {
            tracing::info!("gateway listener: shutdown requested; no longer listening");
            return;
        }
    }
}

/// One connection's JSON; `None` for an empty one (a port probe).
fn read_request(mut stream: TcpStream) -> anyhow::Result<Option<Request>> {
    // A client that connects and never closes must not stall the requests behind it.
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(&text)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_as_the_gateways_send_them() {
        let parse = |text: &str| serde_json::from_str::<Request>(text).unwrap();
        assert_eq!(parse(r#"{"signum": 2}"#).signum, Some(2));
        assert!(!parse(r#"{"signum": 0}"#).is_shutdown());
        assert!(parse(r#"{"shutdown": 1}"#).is_shutdown());
        assert!(parse(r#"{"shutdown": true}"#).is_shutdown());
        assert!(!parse(r#"{"shutdown": 0}"#).is_shutdown());
    }
}
