//! A verified message's frames as a typed message, and the comm messages refused unread.

use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent, UnknownMessage};
use jupyter_zmq_client::{RawMessage, RuntimeError};
use serde_json::Value;

/// A verified message's frames as a typed message. Unlike jupyter-zmq-client's own `read`,
/// content that omits optional fields jupyter-protocol declares as required (e.g. a search
/// `history_request` without `unique`, which jupyter_client sends) gets the protocol's
/// defaults, and a request whose content still does not fit its type arrives as an
/// `UnknownMessage`, so it is answered with an error instead of being lost.
pub(super) fn parse(raw: RawMessage) -> Result<JupyterMessage, RuntimeError> {
    if raw.jparts.len() < 4 {
        return Err(RuntimeError::InsufficientMessageParts(raw.jparts.len()));
    }
    let header: Header = serde_json::from_slice(&raw.jparts[0])?;
    if let Some(refused) = RefusedComm::check(&header.msg_type, &raw.jparts[3]) {
        tracing::warn!(
            "{}: {} bytes of content refused unread",
            header.msg_type,
            refused.bytes
        );
        return Ok(JupyterMessage {
            zmq_identities: raw.zmq_identities,
            parent_header: serde_json::from_slice(&raw.jparts[1]).ok(),
            metadata: Value::Object(Default::default()),
            content: JupyterMessageContent::UnknownMessage(refused.message(&header.msg_type)),
            header,
            buffers: Vec::new(),
            channel: None,
        });
    }
    // Content that is not readable JSON (nested deeper than the reader goes, not JSON at all)
    // still makes a message of its type, with no content: the shell loop answers it with busy
    // and idle, and a request with an error, rather than the front end waiting on silence.
    let mut content: Value = match serde_json::from_slice(&raw.jparts[3]) {
        Ok(content) => content,
        Err(error) => {
            tracing::warn!("{}: unreadable content: {error}", header.msg_type);
            Value::Null
        }
    };
    if header.msg_type == "history_request"
        && let Value::Object(map) = &mut content
    {
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
    let content =
        match JupyterMessageContent::from_type_and_content(&header.msg_type, content.clone()) {
            Ok(content) => content,
            Err(error) => {
                tracing::warn!(
                    "{}: content does not fit its type: {error}",
                    header.msg_type
                );
                JupyterMessageContent::UnknownMessage(UnknownMessage {
                    msg_type: header.msg_type.clone(),
                    content,
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

/// The most JSON a front end's `comm_open` or `comm_msg` may carry as its content. Widget state
/// is small, and binary data (an upload's bytes, an image) travels in the message's buffers,
/// which this does not count. Reading a larger content would cost the kernel several times its
/// size (100 MB of JSON took it from 40 to 518 MiB) for a message the widget would refuse.
pub(crate) const COMM_CONTENT_LIMIT: usize = 16 << 20;

/// A front end's comm message whose content was over [`COMM_CONTENT_LIMIT`], refused unread:
/// it arrives as an `UnknownMessage` of its type whose content is this, under
/// [`RefusedComm::KEY`], so that the shell says so and gives the widget's state back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RefusedComm {
    /// The comm it was for, where the content names one.
    pub comm_id: Option<String>,
    /// The size of its content, in bytes.
    pub bytes: usize,
}

impl RefusedComm {
    const KEY: &str = "tchbook_refused_comm";

    /// A refusal of `content` when it is a comm message's and over the limit. Only its
    /// `comm_id` is read: the rest is skipped by the JSON reader without being kept.
    fn check(msg_type: &str, content: &[u8]) -> Option<RefusedComm> {
        if !matches!(msg_type, "comm_open" | "comm_msg") || content.len() <= COMM_CONTENT_LIMIT {
            return None;
        }
        #[derive(serde::Deserialize)]
        struct Named {
            comm_id: Option<String>,
        }
        let named = serde_json::from_slice::<Named>(content).ok();
        Some(RefusedComm {
            comm_id: named.and_then(|named| named.comm_id),
            bytes: content.len(),
        })
    }

    fn message(&self, msg_type: &str) -> UnknownMessage {
        UnknownMessage {
            msg_type: msg_type.to_owned(),
            content: serde_json::json!({ Self::KEY: self }),
        }
    }

    /// The refusal an `UnknownMessage` carries, if it is one.
    pub(crate) fn of(message: &UnknownMessage) -> Option<RefusedComm> {
        serde_json::from_value(message.content.get(Self::KEY)?.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_comm_message_over_the_limit_is_refused_and_only_its_comm_id_is_read() {
        let big = format!(
            r#"{{"comm_id":"c1","data":{{"state":{{"value":"{}"}}}}}}"#,
            "9".repeat(COMM_CONTENT_LIMIT)
        );
        let refused = RefusedComm::check("comm_msg", big.as_bytes()).unwrap();
        assert_eq!(refused.comm_id.as_deref(), Some("c1"));
        assert_eq!(refused.bytes, big.len());
        assert_eq!(RefusedComm::of(&refused.message("comm_msg")), Some(refused));
        assert!(RefusedComm::check("execute_request", big.as_bytes()).is_none());
        let small = br#"{"comm_id":"c1","data":{}}"#;
        assert!(RefusedComm::check("comm_msg", small).is_none());
        let unnamed = format!("[{}]", "1,".repeat(COMM_CONTENT_LIMIT / 2) + "1");
        let refused = RefusedComm::check("comm_open", unnamed.as_bytes()).unwrap();
        assert_eq!(refused.comm_id, None);
    }
}
