//! The seam between the kernel and an evaluation engine: what dispatch and the kernel's wiring
//! need of one. [`Engine`](super::Engine) (evcxr) is the real one; the protocol tests drive
//! the same kernel with a fake, so heartbeats, signatures, ordering and stop_on_error are
//! tested without booting evcxr and libtorch.

use super::Event;
use crate::completion::{Prepared, Source};
use std::future::Future;

/// An evaluation engine: cells in, [`Event`]s out, in order.
///
/// Contract: after [`Evaluator::execute`] the events of that cell follow, ending with exactly
/// one [`Event::Finished`]; an [`Event::Started`] comes once before the first cell's events
/// (and again after the evaluation process was restarted). Requests are served in the order
/// they were made.
pub trait Evaluator: Send + 'static {
    /// Interrupts the running cell and ends the evaluation process, from any task or thread.
    type Interrupter: Interrupts;

    /// A handle on the running cell for the control loop, signals and the parent watch.
    fn interrupter(&self) -> Self::Interrupter;

    /// Starts a cell. With `allow_stdin` false, a cell that reads input gets an empty line.
    fn execute(&mut self, code: String, allow_stdin: bool);

    /// The next event, waiting for it; `None` once the engine has stopped for good. Cancel-safe:
    /// dispatch waits on it with a timeout, and an event must not be lost when it expires.
    fn next_event(&mut self) -> impl Future<Output = Option<Event>> + Send;

    /// The next event if one is queued already, without waiting.
    fn queued_event(&mut self) -> Option<Event>;

    /// What the completer must be given to complete at byte offset `position` of `code`.
    fn prepare_completion(
        &mut self,
        code: String,
        position: usize,
    ) -> impl Future<Output = Prepared> + Send;

    /// JupyterLab's debugger, which the engine tells of each cell it builds.
    fn debugger(&self) -> std::sync::Arc<crate::debugger::Session> {
        std::sync::Arc::default()
    }

    /// The address of the evaluation process's side channel (`tchbook_wire::side_channel`), if
    /// it has one.
    fn side_channel(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// What the completer must be given for the documentation of the name ending at byte
    /// offset `position` of `code`, if anything.
    fn prepare_hover(
        &mut self,
        code: String,
        position: usize,
    ) -> impl Future<Output = Option<Source>> + Send;
}

/// Control over the running cell and the evaluation process, shared between tasks.
pub trait Interrupts: Clone + Send + Sync + 'static {
    /// Interrupts the running cell, if any. Returns whether a cell was running.
    fn interrupt(&self) -> bool;

    /// Whether the running cell has been interrupted (a cell waiting for input stops waiting).
    fn was_interrupted(&self) -> bool;

    /// Sends the interrupt again to the cell it was sent for, if that cell still runs: a
    /// debugger that detached from a stopped cell may have dropped the signal.
    fn interrupt_again(&self);

    /// Ends the evaluation process and every process a cell started (kernel shutdown).
    fn kill(&self);
}
