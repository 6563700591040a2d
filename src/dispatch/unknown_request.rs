//! A message type tchbook does not handle (or a request whose content does not fit its type):
//! a request gets an error reply, so its sender does not wait forever; anything else is logged.

use jupyter_protocol::{JupyterMessage, UnknownMessage};

pub(super) fn unknown_request(
    message: &JupyterMessage,
    unknown: &UnknownMessage,
) -> Option<JupyterMessage> {
    tracing::warn!("unknown message type {}", unknown.msg_type);
    if !unknown.msg_type.ends_with("_request") {
        return None;
    }
    let content = unknown.reply(serde_json::json!({
        "status": "error",
        "ename": "UnknownMessageType",
        "evalue": format!(
            "tchbook cannot handle this {}: its type is unknown, or its content cannot be read \
             or does not fit the type (the kernel's log says which)",
            unknown.msg_type
        ),
        "traceback": [],
    }));
    Some(JupyterMessage::new(content, Some(message)))
}
