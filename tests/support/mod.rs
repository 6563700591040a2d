//! Kernels on loopback ports, driven through jupyter-zmq-client's client connections: the
//! client ([`Client`]) and what one execute_request caused ([`Execution`]) here, the real
//! kernel process in `process` (the in-process kernel on a fake engine is `fake_engine`).

use jupyter_protocol::connection_info::Transport;
use jupyter_protocol::{
    ConnectionInfo, ExecuteRequest, JupyterMessage, JupyterMessageContent, KernelInfoRequest,
    Status,
};
use jupyter_zmq_client::{
    ClientControlConnection, ClientHeartbeatConnection, ClientIoPubConnection,
    ClientShellConnection, ClientStdinConnection, create_client_control_connection,
    create_client_heartbeat_connection, create_client_iopub_connection,
    create_client_shell_connection_with_identity, create_client_stdin_connection_with_identity,
    peek_ports, peer_identity_for_session, wait_for_iopub_welcome,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub mod panels;
mod process;

pub use process::{Kernel, binary, children, is_gone, refused_start, wait_until_gone};

/// How long a kernel may take to get ready. The very first start on a machine builds tch and
/// the prelude (minutes); every later one reuses the build cache.
pub const STARTUP: Duration = Duration::from_secs(900);
/// How long an ordinary request may take.
pub const REPLY: Duration = Duration::from_secs(120);

/// A client's five connections to a kernel, and the helpers tests drive it with.
pub struct Client {
    pub info: ConnectionInfo,
    pub shell: ClientShellConnection,
    pub iopub: ClientIoPubConnection,
    pub control: ClientControlConnection,
    pub stdin: ClientStdinConnection,
    pub heartbeat: ClientHeartbeatConnection,
    /// iopub messages read while waiting for something else, in arrival order.
    pub backlog: Vec<JupyterMessage>,
    /// The kernel's log file, shown when an assertion fails.
    pub log_file: Option<PathBuf>,
}
/// Everything one execute_request caused, in arrival order.
#[derive(Debug)]
pub struct Execution {
    pub request: JupyterMessage,
    pub reply: JupyterMessage,
    /// iopub messages whose parent is the request, from `busy` to `idle` inclusive.
    pub iopub: Vec<JupyterMessage>,
}

impl Execution {
    pub fn types(&self) -> Vec<String> {
        self.iopub
            .iter()
            .map(|m| m.header.msg_type.clone())
            .collect()
    }

    pub fn stdout(&self) -> String {
        self.stream(false)
    }

    pub fn stderr(&self) -> String {
        self.stream(true)
    }

    fn stream(&self, stderr: bool) -> String {
        self.iopub
            .iter()
            .filter_map(|m| match &m.content {
                JupyterMessageContent::StreamContent(s)
                    if matches!(s.name, jupyter_protocol::Stdio::Stderr) == stderr =>
                {
                    Some(s.text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The `text/plain` of the execute_result, if any.
    pub fn result(&self) -> Option<String> {
        self.iopub.iter().find_map(|m| match &m.content {
            JupyterMessageContent::ExecuteResult(r) => {
                r.data.content.iter().find_map(|d| match d {
                    jupyter_protocol::MediaType::Plain(text) => Some(text.clone()),
                    _ => None,
                })
            }
            _ => None,
        })
    }

    pub fn error(&self) -> Option<(String, String, Vec<String>)> {
        self.iopub.iter().find_map(|m| match &m.content {
            JupyterMessageContent::ErrorOutput(e) => {
                Some((e.ename.clone(), e.evalue.clone(), e.traceback.clone()))
            }
            _ => None,
        })
    }

    pub fn reply_status(&self) -> jupyter_protocol::ReplyStatus {
        match &self.reply.content {
            JupyterMessageContent::ExecuteReply(r) => r.status.clone(),
            other => panic!("not an execute_reply: {other:?}"),
        }
    }

    pub fn execution_count(&self) -> usize {
        match &self.reply.content {
            JupyterMessageContent::ExecuteReply(r) => r.execution_count.value(),
            other => panic!("not an execute_reply: {other:?}"),
        }
    }
}
/// The kernel states (`Busy`, `Idle`) among `iopub`, in order.
pub fn states(iopub: &[JupyterMessage]) -> Vec<String> {
    iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::Status(s) => Some(format!("{:?}", s.execution_state)),
            _ => None,
        })
        .collect()
}

/// The text of every `stream` message among `iopub`, in order.
pub fn streamed(iopub: &[JupyterMessage]) -> String {
    iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect()
}

/// Five free loopback ports and a fresh key, as Jupyter picks them for a kernel.
pub async fn loopback_connection() -> ConnectionInfo {
    let ip = "127.0.0.1";
    let ports = peek_ports(ip.parse().unwrap(), 5).await.unwrap();
    ConnectionInfo {
        ip: ip.into(),
        transport: Transport::TCP,
        shell_port: ports[0],
        iopub_port: ports[1],
        stdin_port: ports[2],
        control_port: ports[3],
        hb_port: ports[4],
        key: format!("test-key-{}-{}", std::process::id(), ports[0]),
        signature_scheme: "hmac-sha256".into(),
        kernel_name: Some("tchbook".into()),
    }
}

impl Client {
    /// Connects to the kernel on `info` and waits for its `iopub_welcome`, so no iopub
    /// message of a later request can be missed. A kernel spawned a moment ago may reset a
    /// connection made while it binds its sockets (seen once in CI: "Connection reset by
    /// peer" on the shell socket); a front end's libzmq reconnects by itself, zmq.rs does not,
    /// so the whole set is made again, for up to 20 s.
    pub async fn connect(info: ConnectionInfo) -> Client {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            match Self::try_connect(&info).await {
                Ok(client) => return client,
                Err(error) if std::time::Instant::now() < deadline => {
                    eprintln!("connecting to the kernel again after: {error}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => panic!("could not connect to the kernel: {error}"),
            }
        }
    }

    async fn try_connect(info: &ConnectionInfo) -> Result<Client, String> {
        let failed = |error: &dyn std::fmt::Debug| format!("{error:?}");
        let session = format!("test-session-{}", info.shell_port);
        let identity = peer_identity_for_session(&session).map_err(|e| failed(&e))?;
        let shell = create_client_shell_connection_with_identity(info, &session, identity.clone())
            .await
            .map_err(|e| failed(&e))?;
        let stdin = create_client_stdin_connection_with_identity(info, &session, identity)
            .await
            .map_err(|e| failed(&e))?;
        let control = create_client_control_connection(info, &session)
            .await
            .map_err(|e| failed(&e))?;
        let heartbeat = create_client_heartbeat_connection(info)
            .await
            .map_err(|e| failed(&e))?;
        let mut iopub = create_client_iopub_connection(info, "", &session)
            .await
            .map_err(|e| failed(&e))?;
        let welcome = wait_for_iopub_welcome(&mut iopub, Duration::from_secs(30))
            .await
            .map_err(|e| failed(&e))?;
        assert!(welcome.is_some(), "the kernel sent no iopub_welcome");
        Ok(Client {
            info: info.clone(),
            shell,
            iopub,
            control,
            stdin,
            heartbeat,
            backlog: Vec::new(),
            log_file: None,
        })
    }

    /// What the kernel logged so far (empty for a kernel without a log file).
    pub fn log(&self) -> String {
        self.log_file
            .as_ref()
            .and_then(|file| std::fs::read_to_string(file).ok())
            .unwrap_or_default()
    }

    /// Sends a shell request, returning the message sent (for its msg_id).
    pub async fn send_shell(
        &mut self,
        content: impl Into<JupyterMessageContent>,
    ) -> JupyterMessage {
        let message = JupyterMessage::new(content.into(), None);
        self.shell.send(message.clone()).await.unwrap();
        message
    }

    pub async fn send_control(
        &mut self,
        content: impl Into<JupyterMessageContent>,
    ) -> JupyterMessage {
        let message = JupyterMessage::new(content.into(), None);
        self.control.send(message.clone()).await.unwrap();
        message
    }

    /// The next shell reply (panics after `timeout`).
    pub async fn shell_reply(&mut self, timeout: Duration) -> JupyterMessage {
        tokio::time::timeout(timeout, self.shell.read())
            .await
            .expect("timed out waiting for a shell reply")
            .unwrap()
    }

    /// The next shell reply, which must answer `request`, as an execute_reply.
    pub async fn execute_reply_to(
        &mut self,
        request: &JupyterMessage,
        timeout: Duration,
    ) -> jupyter_protocol::ExecuteReply {
        let reply = self.shell_reply(timeout).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            request.header.msg_id,
            "reply to the wrong request"
        );
        match reply.content {
            JupyterMessageContent::ExecuteReply(content) => content,
            other => panic!("not an execute_reply: {other:?}"),
        }
    }

    pub async fn control_reply(&mut self, timeout: Duration) -> JupyterMessage {
        tokio::time::timeout(timeout, self.control.read())
            .await
            .expect("timed out waiting for a control reply")
            .unwrap()
    }

    /// Sends a shell request and returns its reply.
    pub async fn request(&mut self, content: impl Into<JupyterMessageContent>) -> JupyterMessage {
        let sent = self.send_shell(content).await;
        let reply = self.shell_reply(REPLY).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            sent.header.msg_id,
            "reply to the wrong request"
        );
        reply
    }

    /// The next iopub message (from the backlog first).
    pub async fn next_iopub(&mut self, timeout: Duration) -> JupyterMessage {
        if !self.backlog.is_empty() {
            return self.backlog.remove(0);
        }
        tokio::time::timeout(timeout, self.iopub.read())
            .await
            .expect("timed out waiting for iopub")
            .unwrap()
    }

    /// The iopub messages read past by [`Client::iopub_until_idle`] (other requests'), taken.
    pub fn drain_backlog(&mut self) -> Vec<JupyterMessage> {
        std::mem::take(&mut self.backlog)
    }

    /// iopub messages with parent `msg_id`, up to and including its `idle`.
    pub async fn iopub_until_idle(
        &mut self,
        msg_id: &str,
        timeout: Duration,
    ) -> Vec<JupyterMessage> {
        let deadline = Instant::now() + timeout;
        let mut mine = Vec::new();
        let mut others = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.next_iopub(left).await;
            let is_mine = message
                .parent_header
                .as_ref()
                .is_some_and(|p| p.msg_id == msg_id);
            if !is_mine {
                others.push(message);
                continue;
            }
            let idle = matches!(
                &message.content,
                JupyterMessageContent::Status(Status { execution_state })
                    if *execution_state == jupyter_protocol::ExecutionState::Idle
            );
            mine.push(message);
            if idle {
                break;
            }
        }
        self.backlog.extend(others);
        mine
    }

    /// Runs `request`, reading iopub while the cell runs, as a front end does: the kernel's
    /// iopub keeps a bounded queue for each subscriber (libzmq's high-water mark) and drops
    /// beyond it, and this client reads only when asked. The reply, sent before `idle`, waits
    /// on shell meanwhile.
    pub async fn execute_with(&mut self, request: ExecuteRequest, timeout: Duration) -> Execution {
        let sent = self.send_shell(request).await;
        let iopub = self.iopub_until_idle(&sent.header.msg_id, timeout).await;
        let reply = self.shell_reply(timeout).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            sent.header.msg_id
        );
        Execution {
            request: sent,
            reply,
            iopub,
        }
    }

    /// Runs `code` and returns everything it caused.
    pub async fn execute(&mut self, code: &str) -> Execution {
        self.execute_with(ExecuteRequest::new(code.into()), STARTUP)
            .await
    }

    /// Runs `code`, asserting it succeeded.
    pub async fn run_ok(&mut self, code: &str) -> Execution {
        let execution = self.execute(code).await;
        assert_eq!(
            execution.reply_status(),
            jupyter_protocol::ReplyStatus::Ok,
            "`{code}` failed: {:?}\nkernel log:\n{}",
            execution.error(),
            self.log()
        );
        execution
    }

    /// The source evcxr generated for the last cell it compiled (`src/lib.rs` of
    /// `:last_compile_dir`).
    pub async fn last_cell_source(&mut self) -> String {
        let dir = self.run_ok(":last_compile_dir").await.result().unwrap();
        let dir = std::path::PathBuf::from(dir.trim().trim_matches('"'));
        std::fs::read_to_string(dir.join("src/lib.rs")).unwrap()
    }

    /// The documentation at `cursor_pos` of `code` (an `inspect_reply`). The first hover of a
    /// kernel loads rust-analyzer, tens of seconds on two busy cores, so it waits longer than
    /// other requests.
    pub async fn inspect(
        &mut self,
        code: &str,
        cursor_pos: usize,
    ) -> jupyter_protocol::InspectReply {
        self.send_shell(jupyter_protocol::InspectRequest {
            code: code.into(),
            cursor_pos,
            detail_level: Some(0),
        })
        .await;
        let reply = self.shell_reply(Duration::from_secs(200)).await;
        let JupyterMessageContent::InspectReply(reply) = reply.content else {
            panic!("{reply:?}")
        };
        reply
    }

    pub async fn kernel_info(&mut self) -> JupyterMessage {
        self.request(KernelInfoRequest {}).await
    }

    /// Asserts that nothing arrives on iopub for `wait`.
    pub async fn assert_iopub_quiet(&mut self, wait: Duration) {
        assert!(
            self.backlog.is_empty(),
            "unexpected iopub: {:?}",
            self.backlog
        );
        if let Ok(message) = tokio::time::timeout(wait, self.iopub.read()).await {
            panic!("unexpected iopub message: {:?}", message.map(|m| m.content));
        }
    }
}
