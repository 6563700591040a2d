//! `interrupt_request` (control): the engine interrupts the running cell; the cell's own
//! `execute_reply` says how it ended.

use crate::engine::Interrupts;

pub(super) fn interrupt_request(interrupter: &impl Interrupts) {
    if !interrupter.interrupt() {
        tracing::info!("interrupt requested while no cell runs");
    }
}
