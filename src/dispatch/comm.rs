//! The comm messages: Jupyter widgets (ipywidgets' protocol, version 2, `tchbook_wire::widgets`).
//!
//! A widget's model lives in the evaluation process (the prelude's widgets). Its side of each
//! comm reaches the kernel as lines of the cell's output ([`crate::display::Comm`]), which are
//! published in order with the rest, as children of the message that caused them. Which comms
//! are open is the prelude's to say (one table, in the process that holds the models):
//! `comm_info_request` asks it, so a reloaded page restores its widgets, and a restarted
//! evaluation process has none. The front end's side (a slider moved, `request_state`, a closed widget) is passed
//! to the evaluation process on its side channel as it arrives, while a cell runs too, and
//! whatever the prelude answers (an `echo_update`, the state asked for) is published in reply.
//!
//! A `comm_open` from the front end for a target the prelude does not serve is closed at once,
//! as ipykernel closes one for an unknown target, so the front end does not wait on it.

use super::Shared;
use crate::display::Comm;
use crate::transport::{COMM_CONTENT_LIMIT, IoPub, RefusedComm};
use jupyter_protocol::{
    CommClose, CommId, CommInfo, CommInfoReply, CommInfoRequest, CommMsg, CommOpen, JupyterMessage,
    JupyterMessageContent, ReplyStatus,
};
use std::collections::HashMap;
use std::time::Duration;
use tchbook_wire::side_channel::{Answer, CommType, Request};
use tchbook_wire::widgets;

/// How long a front end's comm message waits for the evaluation process: it answers from a
/// thread of its own at once, unless it is starting, restarting or gone.
const PATIENCE: Duration = Duration::from_secs(2);

/// Publishes one of the evaluation process's comm messages as a child of `parent`.
pub(crate) fn publish(iopub: &IoPub, comm: Comm, parent: &JupyterMessage) {
    let mut message = JupyterMessage::new(comm.content, Some(parent));
    if !comm.metadata.is_empty() {
        message.metadata = serde_json::Value::Object(comm.metadata);
    }
    iopub.publish(message);
}

/// The open comms, as the evaluation process's widgets list them (the one table of them); none
/// where it does not answer (starting, restarting, gone: it then holds none the front end can
/// use).
pub(super) async fn comm_info_request(shared: &Shared, request: &CommInfoRequest) -> CommInfoReply {
    let open = match shared.side_channel.ask(&Request::Comms, PATIENCE).await {
        Some(Answer::Comms { comms }) => comms,
        other => {
            tracing::info!("comm_info_request: no list of comms ({other:?})");
            Default::default()
        }
    };
    let comms: HashMap<CommId, CommInfo> = open
        .into_iter()
        .filter(|(_, target)| request.target_name.as_ref().is_none_or(|t| t == target))
        .map(|(id, target_name)| (CommId(id), CommInfo { target_name }))
        .collect();
    CommInfoReply {
        status: ReplyStatus::Ok,
        comms,
        error: None,
    }
}

/// Whether `message` is one of the comm messages [`front_end_comm`] handles (one refused
/// unread by the transport included).
pub(super) fn is_comm(message: &JupyterMessage) -> bool {
    match &message.content {
        JupyterMessageContent::CommOpen(_)
        | JupyterMessageContent::CommMsg(_)
        | JupyterMessageContent::CommClose(_) => true,
        JupyterMessageContent::UnknownMessage(unknown) => RefusedComm::of(unknown).is_some(),
        _ => false,
    }
}

/// A front end's `comm_open`, `comm_msg` or `comm_close`: passed to the evaluation process,
/// and its answer published as children of `message`.
pub(super) async fn front_end_comm(shared: &Shared, message: &JupyterMessage) {
    match &message.content {
        JupyterMessageContent::CommOpen(open) => comm_open(shared, message, open).await,
        JupyterMessageContent::CommMsg(msg) => comm_msg(shared, message, msg).await,
        JupyterMessageContent::CommClose(close) => comm_close(shared, close).await,
        JupyterMessageContent::UnknownMessage(unknown) => {
            if let Some(refused) = RefusedComm::of(unknown) {
                comm_refused(shared, message, &unknown.msg_type, refused).await;
            }
        }
        _ => {}
    }
}

/// A comm message the transport refused unread, its content over [`COMM_CONTENT_LIMIT`]:
/// said on stderr, as a widget says what it refused, and the widget's whole state sent back
/// (the prelude's answer to `request_state`), so the front end shows what the model holds
/// rather than what it sent; a refused `comm_open` is closed.
async fn comm_refused(shared: &Shared, message: &JupyterMessage, kind: &str, refused: RefusedComm) {
    let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
    let text = format!(
        "A widget's {kind} of {:.1} MiB from the front end was refused unread: a comm message \
         may carry at most {:.0} MiB of JSON (binary data travels in its buffers). The widget \
         keeps the state it had.\n",
        mib(refused.bytes),
        mib(COMM_CONTENT_LIMIT),
    );
    let stream = jupyter_protocol::StreamContent {
        name: jupyter_protocol::Stdio::Stderr,
        text,
    };
    shared
        .iopub
        .publish(JupyterMessage::new(stream, Some(message)));
    let Some(comm_id) = refused.comm_id else {
        return;
    };
    if kind == "comm_open" {
        let close = CommClose {
            comm_id: CommId(comm_id),
            data: serde_json::Map::new(),
        };
        shared.iopub.publish(close.as_child_of(message));
        return;
    }
    let mut data = serde_json::Map::new();
    data.insert("method".into(), "request_state".into());
    let request = Request::Comm {
        msg_type: CommType::Msg,
        comm_id,
        target_name: None,
        data,
    };
    if let Some(messages) = ask(shared, &request).await {
        publish_all(shared, messages, message);
    }
}

async fn comm_open(shared: &Shared, message: &JupyterMessage, open: &CommOpen) {
    let comm_id = &open.comm_id.0;
    let served = [widgets::TARGET, widgets::CONTROL_TARGET].contains(&open.target_name.as_str());
    if served {
        let request = Request::Comm {
            msg_type: CommType::Open,
            comm_id: comm_id.clone(),
            target_name: Some(open.target_name.clone()),
            data: open.data.clone(),
        };
        if let Some(messages) = ask(shared, &request).await {
            publish_all(shared, messages, message);
            return;
        }
    }
    tracing::info!(
        "comm_open for target {} closed: nothing serves it",
        open.target_name
    );
    shared.iopub.publish(
        CommClose {
            comm_id: open.comm_id.clone(),
            data: serde_json::Map::new(),
        }
        .as_child_of(message),
    );
}

async fn comm_msg(shared: &Shared, message: &JupyterMessage, msg: &CommMsg) {
    let comm_id = &msg.comm_id.0;
    let request = Request::Comm {
        msg_type: CommType::Msg,
        comm_id: comm_id.clone(),
        target_name: None,
        data: msg.data.clone(),
    };
    if let Some(messages) = ask(shared, &request).await {
        publish_all(shared, messages, message);
    }
}

async fn comm_close(shared: &Shared, close: &CommClose) {
    let comm_id = &close.comm_id.0;
    let request = Request::Comm {
        msg_type: CommType::Close,
        comm_id: comm_id.clone(),
        target_name: None,
        data: close.data.clone(),
    };
    let _ = ask(shared, &request).await;
}

/// The evaluation process's answer to a comm request: the messages to publish, or `None`
/// (logged) when it does not know the comm or did not answer.
async fn ask(shared: &Shared, request: &Request) -> Option<Vec<tchbook_wire::Message>> {
    match shared.side_channel.ask(request, PATIENCE).await {
        Some(Answer::Comm { messages }) => Some(messages),
        Some(Answer::Error { message }) => {
            tracing::info!("comm: {message}");
            None
        }
        Some(other) => {
            tracing::warn!("comm: unexpected answer {other:?}");
            None
        }
        None => None,
    }
}

fn publish_all(shared: &Shared, messages: Vec<tchbook_wire::Message>, parent: &JupyterMessage) {
    for message in messages {
        // A widget's word on what it refused: JupyterLab shows output with no cell in its log.
        if let tchbook_wire::Message::Stream { name, text } = &message {
            let name = match name {
                tchbook_wire::StreamName::Stderr => jupyter_protocol::Stdio::Stderr,
                tchbook_wire::StreamName::Stdout => jupyter_protocol::Stdio::Stdout,
            };
            let stream = jupyter_protocol::StreamContent {
                name,
                text: text.clone(),
            };
            shared
                .iopub
                .publish(JupyterMessage::new(stream, Some(parent)));
            continue;
        }
        match Comm::from_message(message) {
            Some(comm) => publish(&shared.iopub, comm, parent),
            None => tracing::warn!("comm: the answer held a message that is not a comm's"),
        }
    }
}
