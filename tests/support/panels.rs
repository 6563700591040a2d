//! Asking a kernel what JupyterLab's panels ask: `debug_request` (the Variables panel) and
//! `usage_request` (the Kernel Usage panel), both on control.

use super::Client;
use jupyter_protocol::{DebugRequest, JupyterMessageContent, UnknownMessage};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A DAP request's response (`debug_reply`'s content), checking its envelope.
pub async fn debug(
    client: &mut Client,
    command: &str,
    arguments: Value,
    timeout: Duration,
) -> Value {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let seq = SEQ.fetch_add(1, Ordering::SeqCst);
    let content =
        json!({"type": "request", "seq": seq, "command": command, "arguments": arguments});
    let sent = client.send_control(DebugRequest { content }).await;
    let reply = client.control_reply(timeout).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        sent.header.msg_id
    );
    assert_eq!(reply.header.msg_type, "debug_reply");
    let JupyterMessageContent::DebugReply(reply) = reply.content else {
        panic!("not a debug_reply: {reply:?}")
    };
    let response = reply.content;
    assert_eq!(response["type"], "response", "{response}");
    assert_eq!(response["command"], command, "{response}");
    assert_eq!(response["request_seq"], seq, "{response}");
    response
}

/// What JupyterLab's Variables panel asks when it opens: `initialize`, then `inspectVariables`'s
/// response.
pub async fn variables(client: &mut Client) -> Value {
    let initialize = json!({"clientID": "jupyterlab"});
    debug(client, "initialize", initialize, super::REPLY).await;
    debug(client, "inspectVariables", json!({}), super::REPLY).await
}

/// The `usage_reply`'s content.
pub async fn usage(client: &mut Client, timeout: Duration) -> Value {
    let request = UnknownMessage {
        msg_type: "usage_request".into(),
        content: json!({}),
    };
    let sent = client.send_control(request).await;
    let reply = client.control_reply(timeout).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        sent.header.msg_id
    );
    assert_eq!(reply.header.msg_type, "usage_reply");
    let JupyterMessageContent::UnknownMessage(reply) = reply.content else {
        panic!("not a usage_reply: {reply:?}")
    };
    reply.content
}

/// The variables `inspectVariables` lists, by name.
pub fn named<'a>(variables: &'a Value, name: &str) -> &'a Value {
    variables["body"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {variables}"))
}

/// The stand-in NVML (`tests/nvml/libnvidia-ml.c`), built with `cc` into a folder of its own,
/// and the script it answers from.
pub struct StandInNvml {
    dir: tempfile::TempDir,
}

impl StandInNvml {
    pub fn build() -> StandInNvml {
        let dir = tempfile::Builder::new()
            .prefix("tchbook-nvml-")
            .tempdir()
            .unwrap();
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nvml/libnvidia-ml.c");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.path().join("libnvidia-ml.so.1"))
            .arg(source)
            .status()
            .expect("running cc for the stand-in NVML");
        assert!(status.success(), "cc could not build {source}");
        StandInNvml { dir }
    }

    /// What the kernel needs to open the stand-in, and the stand-in to find its script.
    pub fn env(&self) -> [(&'static str, String); 2] {
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        [
            (tchbook_wire::env::NVML_LIBRARY, path("libnvidia-ml.so.1")),
            ("TCHBOOK_FAKE_NVML_SCRIPT", path("script")),
        ]
    }

    /// Replaces the script at once (a new file renamed over the old one).
    pub fn script(&self, text: &str) {
        let next = self.dir.path().join("script.next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(next, self.dir.path().join("script")).unwrap();
    }
}
