//! The control loop: interrupt, shutdown and kernel_info while the shell may be busy, and
//! JupyterLab's panels (`debug_request`, `usage_request`).

use super::Shared;
use super::debug_request::debug_request;
use super::interrupt_request::interrupt_request;
use super::kernel_info_request::kernel_info_request;
use super::shutdown_request::shutdown_request;
use super::unknown_request::unknown_request;
use super::usage_request::usage_request;
use crate::engine::Interrupts;
use crate::transport::Router;
use jupyter_protocol::{InterruptReply, JupyterMessage, JupyterMessageContent, Status};
use tokio::sync::mpsc::UnboundedSender;

/// Serves the control socket until it closes: each request between `busy` and `idle`. The
/// panels' requests (`debug_request`, `usage_request`), which may wait on the evaluation
/// process, are answered in order on a task of their own, so that an interrupt, a shutdown or a
/// `kernel_info_request` never waits behind one.
pub(crate) async fn run_control(mut control: Router, shared: Shared, interrupter: impl Interrupts) {
    let panels = panel_requests(shared.clone(), control.outgoing.clone());
    while let Some(message) = control.incoming.recv().await {
        shared.status(&message, Status::busy());
        let for_panels = match &message.content {
            JupyterMessageContent::DebugRequest(_) => true,
            JupyterMessageContent::UnknownMessage(unknown) => unknown.msg_type == "usage_request",
            _ => false,
        };
        if for_panels {
            if let Err(refused) = panels.send(message) {
                shared.status(&refused.0, Status::idle());
            }
            continue;
        }
        let reply = match &message.content {
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt_request(&shared, &interrupter);
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                Some(shutdown_request(&shared, &interrupter, request).as_child_of(&message))
            }
            JupyterMessageContent::KernelInfoRequest(_) => {
                let facts = shared.facts.lock().unwrap().clone();
                Some(kernel_info_request(&facts).as_child_of(&message))
            }
            JupyterMessageContent::UnknownMessage(unknown) => unknown_request(&message, unknown),
            other => {
                tracing::warn!("control: ignoring {}", other.message_type());
                None
            }
        };
        if let Some(reply) = reply {
            let _ = control.outgoing.send(reply);
        }
        shared.status(&message, Status::idle());
    }
}

/// The task that answers the panels' requests, one at a time in the order they came, each
/// followed by its `idle`.
fn panel_requests(
    shared: Shared,
    outgoing: UnboundedSender<JupyterMessage>,
) -> UnboundedSender<JupyterMessage> {
    let (requests, mut queue) = tokio::sync::mpsc::unbounded_channel::<JupyterMessage>();
    tokio::spawn(async move {
        while let Some(message) = queue.recv().await {
            let reply = match &message.content {
                JupyterMessageContent::DebugRequest(request) => {
                    debug_request(&shared, request, &message).await
                }
                _ => usage_request(&shared, &message).await,
            };
            let _ = outgoing.send(reply);
            shared.status(&message, Status::idle());
        }
    });
    requests
}
