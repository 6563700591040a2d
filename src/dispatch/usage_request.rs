//! `usage_request`, on control (not in the protocol's specification; ipykernel ≥ 6.9 answers it,
//! and jupyter-resource-usage's Kernel Usage panel asks every 5 s, waiting 10 s): ipykernel's
//! fields over the kernel's process tree, and `gpus`, which no other kernel has: each GPU with
//! this notebook's caching allocator beside it, as the evaluation process reports them.

use super::Shared;
use crate::usage::ProcessUsage;
use jupyter_protocol::{JupyterMessage, UnknownMessage};
use std::time::Duration;
use tchbook_wire::side_channel::{Answer, Request};

/// How long the GPUs may take: NVML answers in milliseconds, and the panel waits 10 s for all.
const GPU_PATIENCE: Duration = Duration::from_secs(3);

pub(super) async fn usage_request(shared: &Shared, message: &JupyterMessage) -> JupyterMessage {
    let usage: ProcessUsage = shared
        .panels
        .usage
        .lock()
        .unwrap()
        .measure(std::process::id());
    let gpus = match shared.side_channel.ask(&Request::Usage, GPU_PATIENCE).await {
        Some(Answer::Usage { gpus }) => gpus,
        _ => Vec::new(),
    };
    let mut content = serde_json::to_value(usage).expect("usage serializes");
    content["gpus"] = serde_json::to_value(gpus).expect("gpus serialize");
    JupyterMessage::new(
        UnknownMessage {
            msg_type: "usage_reply".into(),
            content,
        },
        Some(message),
    )
}
