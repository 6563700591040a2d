//! The comm messages. tchbook registers no comm targets: `comm_info_request` lists none, a
//! `comm_open` is closed at once (as ipykernel closes one for an unknown target, so the front
//! end does not wait on it), and `comm_msg` / `comm_close` can only name unknown comms.

use super::Shared;
use jupyter_protocol::{CommClose, CommInfoReply, CommMsg, CommOpen, JupyterMessage, ReplyStatus};
use std::collections::HashMap;

pub(super) fn comm_info_request() -> CommInfoReply {
    CommInfoReply {
        status: ReplyStatus::Ok,
        comms: HashMap::new(),
        error: None,
    }
}

pub(super) fn comm_open(shared: &Shared, message: &JupyterMessage, open: &CommOpen) {
    tracing::info!("comm_open for unknown target {}", open.target_name);
    shared.iopub.publish(
        CommClose {
            comm_id: open.comm_id.clone(),
            data: serde_json::Map::new(),
        }
        .as_child_of(message),
    );
}

pub(super) fn comm_msg(msg: &CommMsg) {
    tracing::info!("comm_msg for unknown comm {}", msg.comm_id.0);
}

pub(super) fn comm_close(close: &CommClose) {
    tracing::info!("comm_close for unknown comm {}", close.comm_id.0);
}
