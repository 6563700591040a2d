//! One handler per message type, named after it, each in a file of the same name.
//!
//! The shell loop ([`Shell`]) handles one request at a time, as ipykernel does: each gets
//! `busy`, its reply, then `idle`, so every output of a cell reaches iopub before its `idle`.
//! The control loop ([`run_control`]) is a task of its own, so `interrupt_request` and
//! `shutdown_request` are answered while a cell runs.
//!
//! Dispatch drives the engine only through [`Evaluator`] and [`Interrupts`]: the kernel runs
//! on evcxr ([`crate::engine::Engine`]), and the protocol tests run the same handlers on a
//! fake engine.

mod comm;
mod complete_request;
mod control;
mod debug_request;
mod execute_request;
mod history_request;
mod inspect_request;
mod interrupt_request;
mod is_complete_request;
mod kernel_info_request;
mod panels;
mod shell;
mod shutdown_request;
mod unknown_request;
mod usage_request;

pub(crate) use comm::publish as publish_comm;
pub(crate) use control::run_control;
pub use kernel_info_request::Facts;
pub(crate) use panels::PanelsState;
pub(crate) use shell::Shell;

use crate::side_channel::SideChannel;
use crate::transport::IoPub;
use jupyter_protocol::{JupyterMessage, Status};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// Shared between the shell and control loops.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) iopub: IoPub,
    pub(crate) facts: Arc<Mutex<Facts>>,
    /// Told when a shutdown was requested (the flag is `restart`).
    pub(crate) shutdown: UnboundedSender<bool>,
    /// JupyterLab's Variables and Kernel Usage panels (`debug_request`, `usage_request`).
    pub(crate) panels: Arc<PanelsState>,
    /// The evaluation process's side channel: the panels' values, comm messages, open comms.
    pub(crate) side_channel: SideChannel,
}

impl Shared {
    fn status(&self, parent: &JupyterMessage, status: Status) {
        self.iopub.publish(status.as_child_of(parent));
    }
}
