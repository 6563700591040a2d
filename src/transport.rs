//! The kernel's five sockets.
//!
//! Each socket gets tasks of its own and the rest of the kernel sees only channels: a reader per
//! ROUTER socket (shell, control, stdin) that verifies signatures and parses messages, a writer
//! per ROUTER socket, the one task that owns iopub, and the heartbeat echo. A message that fails
//! to parse or whose HMAC does not verify is logged and dropped by its reader; nothing a client
//! sends can end a reader.
//!
//! Nor can a client end or stall the kernel below that: every socket refuses a message longer
//! than [`max_message_size`] as soon as its length is announced, before anything is allocated
//! for it (a 9-byte frame header declaring 2^60 bytes once made the allocator abort the
//! kernel, with no key needed: signatures are checked only on whole messages), and iopub
//! queues at most [`SUBSCRIBER_QUEUE`] messages for each subscriber, dropping beyond that for
//! it alone, so one client that stops reading does not hold up everyone's output.

use anyhow::{Context, Result};
use bytes::Bytes;
use jupyter_protocol::{
    ConnectionInfo, Header, IoPubWelcome, JupyterMessage, JupyterMessageContent, UnknownMessage,
};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError, SubscriptionEvent};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;
use zeromq::{Socket, SocketOptions, SocketRecv, SocketSend};

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
pub struct IoPub {
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
    pub fn publish(&self, mut message: JupyterMessage) {
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
    pub async fn room_for_output(&self) {
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
pub struct Router {
    pub incoming: UnboundedReceiver<JupyterMessage>,
    pub outgoing: UnboundedSender<JupyterMessage>,
}

pub struct Sockets {
    pub iopub: IoPub,
    pub shell: Router,
    pub control: Router,
    pub stdin: Router,
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

/// A socket of type `S` bound to `endpoint`, taking messages of at most `max_message_size`.
/// jupyter-zmq-client's `create_kernel_*_connection` make theirs with zeromq's default options,
/// which accept any length.
async fn bind_socket<S: Socket>(
    name: &str,
    endpoint: &str,
    max_message_size: usize,
    configure: impl FnOnce(&mut SocketOptions),
) -> Result<S> {
    let mut options = SocketOptions::default();
    options.max_message_size(Some(max_message_size));
    configure(&mut options);
    let mut socket = S::with_options(options);
    socket
        .bind(endpoint)
        .await
        .with_context(|| format!("binding {name} ({endpoint})"))?;
    Ok(socket)
}

/// Binds all sockets of `info` and starts their tasks.
pub async fn bind(info: &ConnectionInfo, session_id: &str) -> Result<Sockets> {
    let max = max_message_size();
    let iopub = bind_socket("iopub", &info.iopub_url(), max, |options| {
        options.send_high_water_mark(SUBSCRIBER_QUEUE);
    })
    .await?;
    let iopub = Connection::new(iopub, &info.key, session_id);
    let signed = |socket| Connection::new(socket, &info.key, session_id);
    let shell = signed(bind_socket("shell", &info.shell_url(), max, |_| {}).await?);
    let control = signed(bind_socket("control", &info.control_url(), max, |_| {}).await?);
    let stdin = signed(bind_socket("stdin", &info.stdin_url(), max, |_| {}).await?);
    let heartbeat: zeromq::RepSocket =
        bind_socket("heartbeat", &info.hb_url(), max, |_| {}).await?;

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
    Ok(Sockets {
        iopub: IoPub {
            tx: iopub_tx,
            backlog,
            topic_prefix: format!("kernel.{session_id}"),
        },
        shell: router("shell", shell),
        control: router("control", control),
        stdin: router("stdin", stdin),
    })
}

fn router(name: &'static str, connection: Connection<zeromq::RouterSocket>) -> Router {
    let (mut send, mut recv) = connection.split();
    let (in_tx, in_rx) = unbounded_channel();
    let (out_tx, mut out_rx) = unbounded_channel::<JupyterMessage>();
    tokio::spawn(async move {
        loop {
            let parsed = match recv.socket.recv().await {
                Ok(frames) => RawMessage::from_multipart(frames, &recv.mac).and_then(parse),
                Err(error) => Err(RuntimeError::ZmqError(error)),
            };
            match parsed {
                Ok(message) => {
                    tracing::debug!("{name} <- {}", message.header.msg_type);
                    if in_tx.send(message).is_err() {
                        break;
                    }
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

/// A verified message's frames as a typed message. Unlike jupyter-zmq-client's own `read`,
/// content that omits optional fields jupyter-protocol declares as required (e.g. a search
/// `history_request` without `unique`, which jupyter_client sends) gets the protocol's
/// defaults, and a request whose content still does not fit its type arrives as an
/// `UnknownMessage`, so it is answered with an error instead of being lost.
fn parse(raw: RawMessage) -> Result<JupyterMessage, RuntimeError> {
    if raw.jparts.len() < 4 {
        return Err(RuntimeError::InsufficientMessageParts(raw.jparts.len()));
    }
    let header: Header = serde_json::from_slice(&raw.jparts[0])?;
    let mut content: Value = serde_json::from_slice(&raw.jparts[3])?;
    if header.msg_type == "history_request" {
        if let Value::Object(map) = &mut content {
            for (key, default) in [
                ("output", Value::Bool(false)),
                ("raw", Value::Bool(true)),
                ("unique", Value::Bool(false)),
                ("n", Value::from(0)),
                ("start", Value::from(0)),
                ("stop", Value::from(0)),
                ("pattern", Value::from("*")),
            ] {
                if map.get(key).is_none_or(Value::is_null) {
                    map.insert(key.to_owned(), default);
                }
            }
        }
    }
    let content =
        match JupyterMessageContent::from_type_and_content(&header.msg_type, content.clone()) {
            Ok(content) => content,
            Err(error) if header.msg_type.ends_with("_request") => {
                tracing::warn!(
                    "{}: content does not fit its type: {error}",
                    header.msg_type
                );
                JupyterMessageContent::UnknownMessage(UnknownMessage {
                    msg_type: header.msg_type.clone(),
                    content,
                })
            }
            Err(error) => {
                return Err(RuntimeError::ParseError {
                    msg_type: header.msg_type,
                    source: error,
                })
            }
        };
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities,
        parent_header: serde_json::from_slice(&raw.jparts[1]).ok(),
        metadata: serde_json::from_slice(&raw.jparts[2])?,
        header,
        content,
        buffers: raw.jparts[4..].to_vec(),
        channel: None,
    })
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
