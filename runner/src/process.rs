//! The process-wide runner: what the cells (on the main thread), the two reader threads, the
//! panic hook and the interrupt watch share, each part behind its own lock.

use super::Notebook;
use super::outputs::Recorder;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;
use tchbook_wire::Panic;
use tchbook_wire::record::Ran;

pub(super) struct Runner {
    pub(super) recorder: Mutex<Recorder>,
    /// Notified whenever a reader thread has handled bytes (a sync line among them, perhaps).
    pub(super) synced: Condvar,
    pub(super) notebook: &'static Notebook,
    pub(super) record: Option<std::path::PathBuf>,
    /// How this run's outputs are made (the record's `ran`).
    pub(super) ran: Ran,
    pub(super) state: Mutex<CellState>,
    /// The main-thread panic being unwound.
    pub(super) panic: Mutex<Option<Panic>>,
    /// Whether the user's interrupt is pending (the prelude's flag).
    pub(super) interrupt_pending: fn() -> bool,
}

/// The running cell and the `:` command settings.
#[derive(Default)]
pub(super) struct CellState {
    pub(super) position: usize,
    pub(super) started: Option<Instant>,
    pub(super) timing: bool,
    pub(super) pretty: bool,
    pub(super) types: bool,
    pub(super) sync_token: u64,
}

impl Runner {
    pub(super) fn new(
        notebook: &'static Notebook,
        record: Option<std::path::PathBuf>,
        ran: Ran,
        interrupt_pending: fn() -> bool,
    ) -> Self {
        Runner {
            recorder: Mutex::new(Recorder::default()),
            synced: Condvar::new(),
            notebook,
            record,
            ran,
            state: Mutex::new(CellState::default()),
            panic: Mutex::new(None),
            interrupt_pending,
        }
    }

    /// The cell state; a panic while it was held does not make it unusable.
    pub(super) fn state(&self) -> MutexGuard<'_, CellState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(super) static RUNNER: OnceLock<Runner> = OnceLock::new();

pub(super) fn runner() -> &'static Runner {
    RUNNER
        .get()
        .expect("tchbook_runner::run starts the notebook")
}

pub(super) fn lock(runner: &Runner) -> MutexGuard<'_, Recorder> {
    runner.recorder.lock().unwrap_or_else(|e| e.into_inner())
}
