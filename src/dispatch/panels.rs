//! What the control loop keeps for JupyterLab's panels between requests: the debugger's state
//! and the last variables, and the usage meter's previous sample.

use crate::debugger::Session;
use crate::usage::UsageMeter;
use std::sync::{Arc, Mutex};
use tchbook_wire::side_channel::Variable;

/// Shared by the control loop's handlers (`debug_request`, `usage_request`).
pub(crate) struct PanelsState {
    pub(super) debugger: Mutex<Debugger>,
    /// Breakpoints, stepping and the adapter (shared with the engine).
    pub(super) session: Arc<Session>,
    pub(super) usage: Mutex<UsageMeter>,
}

impl PanelsState {
    /// The state of a kernel whose debugger is `session`.
    pub(crate) fn new(session: Arc<Session>) -> PanelsState {
        PanelsState {
            session,
            debugger: Mutex::new(Debugger::default()),
            usage: Mutex::new(UsageMeter::default()),
        }
    }
}

/// The debugger as JupyterLab sees it.
#[derive(Default)]
pub(super) struct Debugger {
    /// Between `initialize` and `disconnect` (`debugInfo`'s `isStarted`).
    pub(crate) started: bool,
    /// The variables as of the last finished cell: what the panel shows while a cell runs.
    pub(crate) variables: Vec<Variable>,
}
