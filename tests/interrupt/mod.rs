//! Interrupts: cooperative first (variables kept), kill and restart after the grace period.
//! `cooperative`: the checks a cell's loops make; `blocking`: the blocking calls an interrupt
//! ends; `grace`: what happens when the grace period runs out, or must not.

mod blocking;
mod cooperative;
mod grace;

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{ExecuteRequest, InterruptRequest, JupyterMessageContent};
use std::time::{Duration, Instant};

/// Starts a cell that announces itself and then runs until interrupted, and waits until it
/// runs.
async fn start_long_cell(kernel: &mut Kernel, body: &str) -> jupyter_protocol::JupyterMessage {
    let code = format!("println!(\"started\");\n{body}");
    let sent = kernel.send_shell(ExecuteRequest::new(code)).await;
    loop {
        let message = kernel.next_iopub(STARTUP).await;
        if let JupyterMessageContent::StreamContent(s) = &message.content
            && s.text.contains("started")
        {
            break;
        }
    }
    sent
}

const COOPERATIVE_LOOP: &str =
    "loop { interrupt::check(); std::thread::sleep(std::time::Duration::from_millis(10)); }";

/// A kernel whose grace period outlasts every test below: a cell that ended in time ended at its
/// own interrupt check, since the kill that would lose the variables had not come yet.
async fn kernel_that_would_kill_late() -> Kernel {
    Kernel::start_with_env(&[(tchbook_wire::env::INTERRUPT_GRACE, "60")]).await
}

/// Interrupts the running cell `sent` and returns its error and how long it took to end.
async fn interrupt_and_time(
    kernel: &mut Kernel,
    sent: &jupyter_protocol::JupyterMessage,
) -> (jupyter_protocol::ReplyError, Duration) {
    let (error, took, _) = interrupt_and_read(kernel, sent).await;
    (error, took)
}

/// Interrupts the running cell `sent`: its error, how long it took to end, and what it printed
/// after the interrupt.
async fn interrupt_and_read(
    kernel: &mut Kernel,
    sent: &jupyter_protocol::JupyterMessage,
) -> (jupyter_protocol::ReplyError, Duration, String) {
    let asked = Instant::now();
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let content = kernel.execute_reply_to(sent, REPLY).await;
    let took = asked.elapsed();
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let error = *content.error.expect("the cell ended without an error");
    (error, took, crate::support::streamed(&iopub))
}
