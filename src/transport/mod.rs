//! The kernel's five sockets.
//!
//! Each socket gets tasks of its own and the rest of the kernel sees only channels: a reader per
//! ROUTER socket (shell, control, stdin) that verifies signatures and parses messages, a writer
//! per ROUTER socket, the one task that owns iopub, and the heartbeat echo. A message whose
//! frames or header fail to parse, whose HMAC does not verify, or whose signature was seen before
//! (a replay) is logged and dropped by its reader; a signed message whose content cannot be read
//! or does not fit its type arrives as an `UnknownMessage` of its type, so that it gets busy and
//! idle (and a request an error reply). Nothing a client sends can end a reader.
//!
//! Signing is checked as jupyter_client's `Session` checks it: HMAC-SHA256 over the four JSON
//! frames ([`check_signing`] refuses a connection file that asks for another scheme, or for no
//! key where other machines can reach the ports), and one history of signatures for the three
//! sockets together ([`DigestHistory`]), so a captured request cannot be sent again on any of
//! them.
//!
//! Nor can a client end or stall the kernel below that: every socket refuses a message longer
//! than [`max_message_size`] as soon as its length is announced, before anything is allocated
//! for it (a 9-byte frame header declaring 2^60 bytes once made the allocator abort the
//! kernel, with no key needed: signatures are checked only on whole messages), and iopub
//! queues at most [`SUBSCRIBER_QUEUE`] messages for each subscriber, dropping beyond that for
//! it alone, so one client that stops reading does not hold up everyone's output.

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use jupyter_protocol::{ConnectionInfo, IoPubWelcome, JupyterMessage, Transport};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError, SubscriptionEvent};
use std::collections::{HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use zeromq::{CurveKeyPair, Socket, SocketOptions, SocketRecv, SocketSend};

mod connection;
mod parse;

pub(crate) use connection::{KernelConnection, read_connection_file};
pub(crate) use parse::{COMM_CONTENT_LIMIT, RefusedComm};

/// The largest message, all frames together, that any socket takes from a client, unless
/// `TCHBOOK_MAX_MESSAGE_SIZE` gives another number of bytes. Far above anything a front end
/// sends (code, comm messages, widget buffers); what it stops is a length announced in a frame
/// header, which the socket would otherwise reserve memory for before reading a byte of it.
const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 30;

/// Messages iopub queues for one subscriber before it drops that subscriber's messages:
/// libzmq's default send high-water mark, which ipykernel's iopub has. The queues share each
/// message's bytes, so subscribers that stopped reading together hold one set of messages.
const SUBSCRIBER_QUEUE: usize = 1000;

/// Messages that may wait for the iopub task before a running cell's output waits for them.
/// See [`IoPub::room_for_output`].
const IOPUB_BACKLOG: usize = 64;

/// Sends messages to the one task that owns the iopub socket.
#[derive(Clone)]
pub(crate) struct IoPub {
    tx: UnboundedSender<JupyterMessage>,
    backlog: Arc<Backlog>,
    topic_prefix: String,
}

/// How many published messages the iopub task has not yet handed to the socket.
#[derive(Default)]
struct Backlog {
    queued: AtomicUsize,
    below_limit: Notify,
}

impl IoPub {
    /// Publishes `message`; the topic is `kernel.<session>.<msg_type>`, as ipykernel does.
    /// Never waits: `status` from the control loop must get through while a cell floods iopub.
    pub(crate) fn publish(&self, mut message: JupyterMessage) {
        let topic = format!("{}.{}", self.topic_prefix, message.header.msg_type);
        message.zmq_identities = vec![Bytes::from(topic)];
        self.backlog.queued.fetch_add(1, Ordering::AcqRel);
        // The receiver lives as long as the runtime; a send error means we are shutting down.
        let _ = self.tx.send(message);
    }

    /// Waits until fewer than [`IOPUB_BACKLOG`] messages wait for the iopub task. The channel
    /// to that task is unbounded so that [`IoPub::publish`] never waits, and this is its bound:
    /// the one source of unbounded output, a running cell, calls it before taking each event,
    /// so the backlog exceeds the limit by at most one event's messages (plus each request's
    /// few status and result messages). Without it, a socket that could not keep up (as when
    /// one stalled subscriber stopped zeromq's XPUB) made the channel hold a cell's whole
    /// output. A cell that prints faster than iopub sends keeps its lines in the engine's queue
    /// meanwhile, where the shell loop joins them into fewer, larger `stream` messages: no
    /// output is dropped on the kernel's side, and only the running cell's output loop waits
    /// (control, status and replies go out as before). The socket below never waits for a
    /// client: each subscriber has a queue of its own ([`SUBSCRIBER_QUEUE`]).
    pub(crate) async fn room_for_output(&self) {
        loop {
            // Created before the check, so a wake-up between the two is not lost.
            let below_limit = self.backlog.below_limit.notified();
            if self.backlog.queued.load(Ordering::Acquire) < IOPUB_BACKLOG {
                return;
            }
            below_limit.await;
        }
    }
}

/// One ROUTER socket as two channels.
pub(crate) struct Router {
    pub(crate) incoming: UnboundedReceiver<JupyterMessage>,
    pub(crate) outgoing: UnboundedSender<JupyterMessage>,
}

pub(crate) struct Sockets {
    pub(crate) iopub: IoPub,
    pub(crate) shell: Router,
    pub(crate) control: Router,
    pub(crate) stdin: Router,
}

/// The one signature scheme this kernel implements (jupyter-zmq-client signs and verifies
/// with HMAC-SHA256 only). jupyter_client accepts any `hmac-<hashlib name>`, but writes this one
/// unless told otherwise.
const SIGNATURE_SCHEME: &str = "hmac-sha256";

/// Set to `1` to serve a connection file with an empty key on an address other machines can
/// reach (see [`check_signing`]).
pub const ALLOW_UNSIGNED: &str = "TCHBOOK_ALLOW_UNSIGNED";

/// Refuses, before anything binds, a connection this kernel cannot serve as the file asks or
/// should not serve at all:
/// - a `signature_scheme` other than [`SIGNATURE_SCHEME`]: the kernel would verify with
///   another hash than the client signs with, and drop every message as forged;
/// - an empty `key` (messages unsigned: whoever reaches a port can run code) on an `ip` that is
///   not loopback, unless [`ALLOW_UNSIGNED`] is `1`. On loopback (or an `ipc` transport, whose
///   sockets are files) only this machine's users reach the ports, which is what Jupyter's
///   own `--Session.key=''` assumes.
pub(crate) fn check_signing(info: &ConnectionInfo) -> Result<()> {
    let allowed = std::env::var(ALLOW_UNSIGNED).is_ok_and(|value| value == "1");
    signing_problem(info, allowed).map_or(Ok(()), |problem| bail!(problem))
}

fn signing_problem(info: &ConnectionInfo, allow_unsigned: bool) -> Option<String> {
    if info.signature_scheme != SIGNATURE_SCHEME {
        return Some(format!(
            "the connection file asks for signature_scheme {:?}, which tchbook does not \
             implement: it supports only {SIGNATURE_SCHEME:?}. Start the kernel with \
             signature_scheme {SIGNATURE_SCHEME:?} (jupyter_client's default; e.g. \
             --Session.signature_scheme={SIGNATURE_SCHEME})",
            info.signature_scheme
        ));
    }
    let local = match info.transport {
        Transport::IPC => true,
        Transport::TCP => {
            info.ip == "localhost" || info.ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
    };
    if info.key.is_empty() && !local && !allow_unsigned {
        return Some(format!(
            "the connection file has an empty key, so messages would not be signed, and ip {:?} \
             lets other machines reach the kernel's ports: anyone who can reach them could run \
             code. Give the kernel a key (Jupyter writes one unless told not to), or bind it to \
             127.0.0.1; to serve unsigned messages on {:?} anyway (a network only you can \
             reach), set {ALLOW_UNSIGNED}=1",
            info.ip, info.ip
        ));
    }
    None
}

/// The signatures of the messages the kernel accepted, to drop a message sent again: what
/// jupyter_client's `Session.digest_history` does. Its memory is bounded as jupyter_client
/// bounds it, at 2^16 signatures (about 7 MiB at most); past that the oldest is forgotten (where
/// jupyter_client forgets a random tenth), so only a message older than the last 65536 could be
/// replayed. The messages carry their date and a fresh `msg_id`, so no client sends one
/// signature twice in good faith.
#[derive(Default)]
struct DigestHistory {
    seen: HashSet<Arc<[u8]>>,
    order: VecDeque<Arc<[u8]>>,
}

impl DigestHistory {
    /// How many signatures are remembered.
    const CAPACITY: usize = 1 << 16;

    /// Records `signature`; `false` if it was recorded before (a replay).
    pub(crate) fn insert(&mut self, signature: &[u8]) -> bool {
        if self.seen.contains(signature) {
            return false;
        }
        let signature: Arc<[u8]> = signature.into();
        self.seen.insert(Arc::clone(&signature));
        self.order.push_back(signature);
        if self.order.len() > Self::CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        true
    }
}

/// The limit on a client's messages: `TCHBOOK_MAX_MESSAGE_SIZE` bytes, else 1 GiB. A value
/// that is not a positive number of bytes gets the default and a warning: a typo in a variable
/// must not keep the kernel from starting.
fn max_message_size() -> usize {
    let name = tchbook_wire::env::MAX_MESSAGE_SIZE;
    let Ok(value) = std::env::var(name) else {
        return DEFAULT_MAX_MESSAGE_SIZE;
    };
    match value.trim().parse() {
        Ok(size) if size > 0 => size,
        _ => {
            tracing::warn!(
                "{name}={value:?} is not a positive number of bytes; using the default, \
                 {DEFAULT_MAX_MESSAGE_SIZE}"
            );
            DEFAULT_MAX_MESSAGE_SIZE
        }
    }
}

/// How every socket of a kernel is made: the message size limit, and the CURVE server key pair
/// of an encrypted kernel.
struct Binding<'a> {
    max_message_size: usize,
    curve: Option<&'a CurveKeyPair>,
}

/// A socket of type `S` bound to `endpoint`, taking messages of at most `max_message_size`,
/// a CURVE server when the kernel has keys. jupyter-zmq-client's `create_kernel_*_connection`
/// make theirs with zeromq's default options, which accept any length and only NULL.
async fn bind_socket<S: Socket>(
    name: &str,
    endpoint: &str,
    binding: &Binding<'_>,
    configure: impl FnOnce(&mut SocketOptions),
) -> Result<S> {
    let mut options = SocketOptions::default();
    options.max_message_size(Some(binding.max_message_size));
    if let Some(keys) = binding.curve {
        options.curve_server(keys.clone());
    }
    configure(&mut options);
    let mut socket = S::with_options(options);
    socket
        .bind(endpoint)
        .await
        .with_context(|| format!("binding {name} ({endpoint})"))?;
    Ok(socket)
}

/// Binds all sockets of `info` and starts their tasks.
pub(crate) async fn bind(connection: &KernelConnection, session_id: &str) -> Result<Sockets> {
    let info = &connection.info;
    check_signing(info)?;
    let binding = &Binding {
        max_message_size: max_message_size(),
        curve: connection.curve.as_ref(),
    };
    if let Some(keys) = binding.curve {
        tracing::info!(
            "transport encryption: every socket is a CURVE server with public key {}",
            keys.public_z85()
        );
    }
    let iopub = bind_socket("iopub", &info.iopub_url(), binding, |options| {
        options.send_high_water_mark(SUBSCRIBER_QUEUE);
    })
    .await?;
    let iopub = Connection::new(iopub, &info.key, session_id);
    let signed = |socket| Connection::new(socket, &info.key, session_id);
    let shell = signed(bind_socket("shell", &info.shell_url(), binding, |_| {}).await?);
    let control = signed(bind_socket("control", &info.control_url(), binding, |_| {}).await?);
    let stdin = signed(bind_socket("stdin", &info.stdin_url(), binding, |_| {}).await?);
    let heartbeat: zeromq::RepSocket =
        bind_socket("heartbeat", &info.hb_url(), binding, |_| {}).await?;

    let (iopub_tx, iopub_rx) = unbounded_channel();
    let backlog = Arc::new(Backlog::default());
    tokio::spawn(run_iopub(iopub, iopub_rx, backlog.clone()));
    tokio::spawn(async move {
        let mut socket = heartbeat;
        loop {
            // Echo each ping back unchanged, which is all the heartbeat protocol asks.
            match socket.recv().await {
                Ok(ping) => {
                    if let Err(error) = socket.send(ping).await {
                        tracing::warn!("heartbeat: {error}");
                    }
                }
                Err(error) => {
                    tracing::warn!("heartbeat: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    });
    // One history for the three sockets, as jupyter_client has one per session.
    let history = Arc::new(Mutex::new(DigestHistory::default()));
    Ok(Sockets {
        iopub: IoPub {
            tx: iopub_tx,
            backlog,
            topic_prefix: format!("kernel.{session_id}"),
        },
        shell: router("shell", shell, &history),
        control: router("control", control, &history),
        stdin: router("stdin", stdin, &history),
    })
}

fn router(
    name: &'static str,
    connection: Connection<zeromq::RouterSocket>,
    history: &Arc<Mutex<DigestHistory>>,
) -> Router {
    let (mut send, mut recv) = connection.split();
    let (in_tx, in_rx) = unbounded_channel();
    let (out_tx, mut out_rx) = unbounded_channel::<JupyterMessage>();
    let history = Arc::clone(history);
    tokio::spawn(async move {
        loop {
            let parsed = match recv.socket.recv().await {
                Ok(frames) => {
                    let signature = signature(&frames);
                    RawMessage::from_multipart(frames, &recv.mac).and_then(|raw| {
                        // Only a verified signature is remembered, so forged messages cannot
                        // crowd real ones out; an unsigned connection has none to remember.
                        let replayed = recv.mac.is_some()
                            && !history
                                .lock()
                                .unwrap()
                                .insert(signature.as_deref().unwrap_or(&[]));
                        if replayed {
                            return Ok(None);
                        }
                        parse::parse(raw).map(Some)
                    })
                }
                Err(error) => Err(RuntimeError::ZmqError(error)),
            };
            match parsed {
                Ok(Some(message)) => {
                    tracing::debug!("{name} <- {}", message.header.msg_type);
                    if in_tx.send(message).is_err() {
                        break;
                    }
                }
                Ok(None) => {
                    tracing::warn!(
                        "{name}: dropped a replayed message (its signature was seen before)"
                    );
                }
                Err(RuntimeError::VerifyError(_)) => {
                    tracing::warn!("{name}: dropped a message with a wrong HMAC signature");
                }
                Err(RuntimeError::ZmqError(error)) => {
                    tracing::warn!("{name}: socket error: {error}");
                    // A socket-level error can repeat at once; do not spin.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Err(error) => {
                    tracing::warn!("{name}: dropped a malformed message: {error}");
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Some(message) = out_rx.recv().await {
            tracing::debug!("{name} -> {}", message.header.msg_type);
            if let Err(error) = send.send(message).await {
                tracing::warn!("{name}: sending failed: {error}");
            }
        }
    });
    Router {
        incoming: in_rx,
        outgoing: out_tx,
    }
}

/// The signature frame of a message's `frames` (the one after `<IDS|MSG>`), as
/// jupyter-zmq-client reads it; `None` where the frames have none (which it then refuses).
fn signature(frames: &zeromq::ZmqMessage) -> Option<Bytes> {
    let delimiter = frames.iter().position(|frame| &frame[..] == b"<IDS|MSG>")?;
    frames.get(delimiter + 1).cloned()
}

/// The only owner of the iopub socket. It must keep reading: the XPUB socket learns about
/// subscribers only while `recv` is polled, and each new subscription gets an `iopub_welcome`
/// (JEP 65) so a client knows its subscription is live before it sends requests.
async fn run_iopub(
    mut socket: Connection<zeromq::XPubSocket>,
    mut outgoing: UnboundedReceiver<JupyterMessage>,
    backlog: Arc<Backlog>,
) {
    loop {
        tokio::select! {
            // Outgoing first: once a message is queued it goes out before further reads.
            biased;
            message = outgoing.recv() => {
                let Some(message) = message else { break };
                tracing::debug!("iopub -> {}", message.header.msg_type);
                if let Err(error) = socket.send(message).await {
                    tracing::warn!("iopub: sending failed: {error}");
                }
                if backlog.queued.fetch_sub(1, Ordering::AcqRel) == IOPUB_BACKLOG {
                    backlog.below_limit.notify_waiters();
                }
            }
            event = socket.recv_subscription() => match event {
                Ok(SubscriptionEvent::Subscribe(topic)) => {
                    let welcome: JupyterMessage = IoPubWelcome::new(topic.clone()).into();
                    let mut welcome = welcome;
                    welcome.zmq_identities = vec![Bytes::from(topic)];
                    if let Err(error) = socket.send(welcome).await {
                        tracing::warn!("iopub: sending iopub_welcome failed: {error}");
                    }
                }
                Ok(SubscriptionEvent::Unsubscribe(_)) => {}
                Err(error) => {
                    tracing::warn!("iopub: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_history_forgets_only_its_oldest_signature_when_full() {
        let mut history = DigestHistory::default();
        let signature = |n: usize| format!("{n:064x}").into_bytes();
        for n in 0..DigestHistory::CAPACITY {
            assert!(history.insert(&signature(n)));
        }
        assert!(!history.insert(&signature(0)), "a replay of the first");
        assert!(history.insert(&signature(DigestHistory::CAPACITY)));
        assert!(history.insert(&signature(0)), "the oldest was forgotten");
        assert!(!history.insert(&signature(2)), "the others are remembered");
        assert_eq!(history.order.len(), DigestHistory::CAPACITY);
        assert_eq!(history.seen.len(), DigestHistory::CAPACITY);
    }

    #[test]
    fn an_unsigned_connection_is_refused_only_where_other_machines_reach_it() {
        let info = |ip: &str, key: &str| ConnectionInfo {
            ip: ip.into(),
            transport: Transport::TCP,
            shell_port: 1,
            iopub_port: 2,
            stdin_port: 3,
            control_port: 4,
            hb_port: 5,
            key: key.into(),
            signature_scheme: SIGNATURE_SCHEME.into(),
            kernel_name: None,
        };
        for ip in ["127.0.0.1", "127.0.0.2", "::1", "localhost"] {
            assert_eq!(signing_problem(&info(ip, ""), false), None, "{ip}");
        }
        for ip in ["0.0.0.0", "10.0.0.5", "::", "kernel.example"] {
            let problem = signing_problem(&info(ip, ""), false).expect(ip);
            assert!(problem.contains(ALLOW_UNSIGNED), "{problem}");
            assert_eq!(signing_problem(&info(ip, ""), true), None, "{ip}");
            assert_eq!(signing_problem(&info(ip, "key"), false), None, "{ip}");
        }
        let mut ipc = info("/tmp/kernel", "");
        ipc.transport = Transport::IPC;
        assert_eq!(signing_problem(&ipc, false), None);
    }
}
