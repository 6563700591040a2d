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
//!
//! The port has no authentication (nor has the gateways' protocol; the README tells admins to
//! let only the gateway reach it), so whoever reaches it is held to what a gateway does: a
//! request of at most [`MAX_REQUEST`] bytes, sent and closed within [`DEADLINE`], naming one of
//! the [`GATEWAY_SIGNALS`]. Connections are read concurrently (up to [`MAX_CONNECTIONS`] at
//! once; more wait in the listen queue, not lost), on a small runtime of the thread's own, so a
//! client that sends slowly, too much or garbage costs at most one slot for [`DEADLINE`] and
//! never holds up the gateway's requests for longer.

use anyhow::bail;
use serde::Deserialize;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, Semaphore};

/// The signals the gateways send (gateway_provisioners' `RemoteProvisionerBase` and its
/// subclasses, Enterprise Gateway's process proxies): 0 to poll (the answer is the connection
/// itself), SIGINT to interrupt, SIGTERM and then SIGKILL to end the kernel. The Python
/// launcher hands any number to `os.kill`; here another (SIGSTOP would freeze the kernel for
/// good, SIGSEGV fake a crash) is refused and logged.
const GATEWAY_SIGNALS: [i32; 4] = [0, libc::SIGINT, libc::SIGKILL, libc::SIGTERM];
/// The longest request read; a gateway's is about 20 bytes (`{"signum": 15}`).
const MAX_REQUEST: usize = 4096;
/// How long a connection has to send its request and close its side.
pub(crate) const DEADLINE: Duration = Duration::from_secs(5);
/// Connections read at once.
const MAX_CONNECTIONS: usize = 16;

/// A request on the communication port; both fields may come together.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(crate) struct Request {
    signum: Option<i32>,
    pub(crate) shutdown: Option<serde_json::Value>,
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

/// Delivers a signal the gateway asked for.
type Deliver = Arc<dyn Fn(i32) + Send + Sync>;

/// Serves the gateway's requests on `listener` in a thread of its own until a shutdown request.
pub(crate) fn spawn(listener: TcpListener) -> std::io::Result<()> {
    let to_this_process: Deliver = Arc::new(|signum| {
        // SAFETY: kill(2) on our own pid with one of GATEWAY_SIGNALS.
        if unsafe { libc::kill(libc::getpid(), signum) } != 0 {
            tracing::warn!(
                "gateway listener: signal {signum}: {}",
                std::io::Error::last_os_error()
            );
        }
    });
    spawn_with(listener, to_this_process).map(drop)
}

/// [`spawn`] with the signals handed to `deliver` (tests record them).
fn spawn_with(
    listener: TcpListener,
    deliver: Deliver,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name("tchbook-gateway-listener".into())
        .spawn(move || runtime.block_on(serve(listener, deliver)))
}

async fn serve(listener: TcpListener, deliver: Deliver) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!("gateway listener: {error}");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let shutdown = Arc::new(Notify::new());
    loop {
        // While every slot is taken, connections wait in the listen queue.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors, say: do not spin.
                    tracing::warn!("gateway listener: accepting a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = shutdown.notified() => {
                tracing::info!("gateway listener: shutdown requested; no longer listening");
                return;
            }
        };
        let (deliver, shutdown) = (Arc::clone(&deliver), Arc::clone(&shutdown));
        tokio::spawn(async move {
            let _slot = slot;
            // Kept open until the request is handled: the client sees the end of the stream
            // only after that.
            let mut stream = stream;
            let reading = read_request(&mut stream);
            let request = match tokio::time::timeout(DEADLINE, reading).await {
                Ok(Ok(Some(request))) => request,
                Ok(Ok(None)) => return,
                Ok(Err(error)) => {
                    tracing::warn!("gateway listener: a request could not be read: {error:#}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(
                        "gateway listener: dropped a connection that sent no complete request \
                         within {DEADLINE:?}"
                    );
                    return;
                }
            };
            match request.signum {
                None | Some(0) => {}
                Some(signum) if GATEWAY_SIGNALS.contains(&signum) => {
                    tracing::info!("gateway listener: signal {signum} requested");
                    deliver(signum);
                }
                Some(signum) => {
                    tracing::warn!(
                        "gateway listener: refused signal {signum}: a gateway sends only \
                         {GATEWAY_SIGNALS:?}"
                    );
                }
            }
            if request.is_shutdown() {
                shutdown.notify_one();
            }
        });
    }
}

/// One connection's JSON, read to the end of the stream; `None` for an empty one (a port
/// probe).
async fn read_request(stream: &mut tokio::net::TcpStream) -> anyhow::Result<Option<Request>> {
    let mut bytes = Vec::new();
    stream
        .take(MAX_REQUEST as u64 + 1)
        .read_to_end(&mut bytes)
        .await?;
    if bytes.len() > MAX_REQUEST {
        bail!("a request longer than {MAX_REQUEST} bytes");
    }
    let text = std::str::from_utf8(&bytes)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(text)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::sync::mpsc::{Receiver, channel};
    use std::time::Instant;

    #[test]
    fn requests_parse_as_the_gateways_send_them() {
        let parse = |text: &str| serde_json::from_str::<Request>(text).unwrap();
        assert_eq!(parse(r#"{"signum": 2}"#).signum, Some(2));
        assert!(!parse(r#"{"signum": 0}"#).is_shutdown());
        assert!(parse(r#"{"shutdown": 1}"#).is_shutdown());
        assert!(parse(r#"{"shutdown": true}"#).is_shutdown());
        assert!(!parse(r#"{"shutdown": 0}"#).is_shutdown());
    }

    /// A listener on a loopback port whose signals arrive on the receiver instead of being
    /// delivered.
    struct Listener {
        port: u16,
        delivered: Receiver<i32>,
        thread: std::thread::JoinHandle<()>,
    }

    fn listener() -> Listener {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let (sender, delivered) = channel();
        let deliver: Deliver = Arc::new(move |signum| sender.send(signum).unwrap());
        let thread = spawn_with(socket, deliver).unwrap();
        Listener {
            port,
            delivered,
            thread,
        }
    }

    impl Listener {
        fn connect(&self) -> TcpStream {
            let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            stream
        }

        /// Sends `bytes` as the gateway does (send, close its side) and waits until the
        /// listener has handled them and closed the connection.
        fn send(&self, bytes: &[u8]) {
            let mut stream = self.connect();
            // A listener that stopped reading may reset the connection: that is an answer.
            let _ = stream.write_all(bytes);
            let _ = stream.shutdown(Shutdown::Write);
            let _ = stream.read_to_end(&mut Vec::new());
        }

        fn delivered(&self) -> Vec<i32> {
            self.delivered.try_iter().collect()
        }
    }

    #[test]
    fn only_the_signals_a_gateway_sends_are_delivered() {
        let listener = listener();
        for signum in [0, 2, 15, 9, 19, 11, 1, -1, 64, 1000] {
            listener.send(format!(r#"{{"signum": {signum}}}"#).as_bytes());
        }
        assert_eq!(listener.delivered(), [2, 15, 9]);
    }

    #[test]
    fn huge_garbage_and_empty_requests_are_dropped_and_the_listener_serves_on() {
        let listener = listener();
        let mut huge = br#"{"signum": 2, "padding": ""#.to_vec();
        huge.resize(1 << 20, b'x');
        huge.extend_from_slice(br#""}"#);
        let padded = [br#"{"signum": 2}"#.as_slice(), &[b' '; MAX_REQUEST]].concat();
        for request in [
            huge.as_slice(),
            &padded,
            b"\xff\xfe\x00garbage",
            b"{\"signum\": ",
            br#"{"signum": "2"}"#,
            br#"[2]"#,
            b"",
        ] {
            listener.send(request);
        }
        assert_eq!(listener.delivered(), Vec::<i32>::new());
        listener.send(br#"{"signum": 2}"#);
        assert_eq!(listener.delivered(), [2]);
    }

    /// Whether the listener still holds `stream` open (has neither closed nor answered it).
    fn still_open(stream: &TcpStream) -> bool {
        stream.set_nonblocking(true).unwrap();
        let open = matches!(
            stream.peek(&mut [0]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock
        );
        stream.set_nonblocking(false).unwrap();
        open
    }

    #[test]
    fn a_client_that_sends_slowly_or_never_closes_holds_up_no_one() {
        let listener = listener();
        let stalled: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut stream = listener.connect();
                stream.write_all(br#"{"signum": "#).unwrap();
                stream
            })
            .collect();
        // A whole request, a byte at a time, each within a read's wait but the whole well past
        // the deadline.
        let mut trickling = listener.connect();
        let trickler = std::thread::spawn(move || {
            for byte in br#"{"signum": 2}"# {
                if trickling.write_all(&[*byte]).is_err() {
                    return false;
                }
                std::thread::sleep(DEADLINE / 8);
            }
            let _ = trickling.shutdown(Shutdown::Write);
            let _ = trickling.read_to_end(&mut Vec::new());
            true
        });
        listener.send(br#"{"signum": 2}"#);
        assert_eq!(listener.delivered(), [2]);
        for stream in &stalled {
            assert!(
                still_open(stream),
                "answered only after a stalled client's deadline"
            );
        }
        // Each stalled connection is closed at its deadline, having delivered nothing.
        for mut stream in stalled {
            stream.read_to_end(&mut Vec::new()).unwrap();
        }
        trickler.join().unwrap();
        assert_eq!(
            listener.delivered(),
            Vec::<i32>::new(),
            "a request slower than the deadline counted"
        );
    }

    #[test]
    fn connections_beyond_the_slots_wait_and_are_served() {
        let listener = listener();
        let _stalled: Vec<TcpStream> = (0..MAX_CONNECTIONS + 2)
            .map(|_| {
                let mut stream = listener.connect();
                stream.write_all(b"{").unwrap();
                stream
            })
            .collect();
        listener.send(br#"{"signum": 15}"#);
        assert_eq!(listener.delivered(), [15]);
    }

    #[test]
    fn a_shutdown_request_ends_the_listener() {
        let listener = listener();
        listener.send(br#"{"shutdown": 1}"#);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !listener.thread.is_finished() {
            assert!(Instant::now() < deadline, "the listener did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(TcpStream::connect(("127.0.0.1", listener.port)).is_err());
    }
}
