//! `interrupt_request` (control): the engine interrupts the running cell; the cell's own
//! `execute_reply` says how it ended.

use super::Shared;
use crate::engine::Interrupts;

pub(super) fn interrupt_request(shared: &Shared, interrupter: &impl Interrupts) {
    let session = std::sync::Arc::clone(&shared.panels.session);
    if session.stopped().is_none() {
        interrupt(interrupter);
        return;
    }
    // A cell stopped at a breakpoint: the interrupt (its flag set by the SIGINT handler once
    // the process runs again) first, then gdb lets the process go (off the control loop: it
    // may take a moment); the SIGINT waits in the kernel meanwhile, and the cell ends at its
    // next check, as any running cell. Sent after the release, the signal could come after
    // a short cell had ended by itself. gdb, detaching, may drop the signal it holds: once it
    // has let go, the cell that still runs is sent it again.
    interrupt(interrupter);
    let again = interrupter.clone();
    tokio::task::spawn_blocking(move || {
        session.release();
        again.interrupt_again();
    });
}

fn interrupt(interrupter: &impl Interrupts) {
    if !interrupter.interrupt() {
        tracing::info!("interrupt requested while no cell runs");
    }
}
