//! `shutdown_request`, on control or shell: the evaluation process goes at once, and the
//! kernel's wiring ends the kernel once the reply is out.

use super::Shared;
use crate::engine::Interrupts;
use jupyter_protocol::{ReplyStatus, ShutdownReply, ShutdownRequest};

pub(super) fn shutdown_request(
    shared: &Shared,
    interrupter: &impl Interrupts,
    request: &ShutdownRequest,
) -> ShutdownReply {
    interrupter.kill();
    let _ = shared.shutdown.send(request.restart);
    ShutdownReply {
        restart: request.restart,
        status: ReplyStatus::Ok,
        error: None,
    }
}
