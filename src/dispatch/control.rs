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
use jupyter_protocol::{InterruptReply, JupyterMessageContent, Status};

/// Serves the control socket until it closes: each request between `busy` and `idle`.
pub async fn run_control(mut control: Router, shared: Shared, interrupter: impl Interrupts) {
    while let Some(message) = control.incoming.recv().await {
        shared.status(&message, Status::busy());
        let reply = match &message.content {
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt_request(&interrupter);
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                Some(shutdown_request(&shared, &interrupter, request).as_child_of(&message))
            }
            JupyterMessageContent::KernelInfoRequest(_) => {
                let facts = shared.facts.lock().unwrap().clone();
                Some(kernel_info_request(&facts).as_child_of(&message))
            }
            JupyterMessageContent::DebugRequest(request) => {
                Some(debug_request(&shared, request, &message).await)
            }
            JupyterMessageContent::UnknownMessage(unknown)
                if unknown.msg_type == "usage_request" =>
            {
                Some(usage_request(&shared, &message).await)
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
