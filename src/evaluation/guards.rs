//! What a cell may break that the next cell needs, put back after it: fd 1 and fd 2 (the
//! end-of-cell line is written to fd 1, so a cell that closed it left the kernel waiting
//! forever); and whether a cell runs, under the lock the panels take to read
//! the variable store.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Whether a cell is running. The panels read the variable store only under this lock with no
/// cell running: a cell takes its variables out of the store into locals while it runs.
static CELL_RUNNING: Mutex<bool> = Mutex::new(false);

/// Set by SIGINT (the prelude's own handler, installed by the first cell that links it, sets
/// its flag and calls this one); cleared when a cell begins, so that an interrupt belongs to
/// the cell it was sent for.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The lock on whether a cell runs.
pub(super) fn running() -> MutexGuard<'static, bool> {
    CELL_RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the user interrupted the running cell.
pub(super) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub(super) use tchbook_waits::install;

/// SIGINT sets [`interrupted`]; `SA_RESTART`, so that no call fails just for the signal (the
/// calls an interrupt should end, `tchbook_waits` ends).
pub(super) fn install_sigint_handler() {
    extern "C" fn on_sigint(_signal: c_int) {
        INTERRUPTED.store(true, Ordering::SeqCst);
    }
    let _ = install(libc::SIGINT, on_sigint, libc::SA_RESTART);
}

/// Held while a cell runs: its fds 1 and 2 as they were before it.
pub(super) struct CellGuard {
    saved: [c_int; 2],
}

impl CellGuard {
    pub(super) fn begin() -> CellGuard {
        INTERRUPTED.store(false, Ordering::SeqCst);
        *running() = true;
        // SAFETY: duplicating this process's own fds 1 and 2 (-1 where they are not open).
        let saved = [1, 2].map(|fd| unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) });
        CellGuard { saved }
    }

    /// After the cell: fds 1 and 2 are what they were before the cell (said on stdout when the
    /// cell had closed them).
    pub(super) fn end(self) {
        *running() = false;
        let mut lost = Vec::new();
        for (fd, saved) in [1, 2].into_iter().zip(self.saved) {
            if saved < 0 {
                continue;
            }
            if !is_open(fd) {
                // SAFETY: both fds are this process's own.
                unsafe { libc::dup2(saved, fd) };
                lost.push(if fd == 1 {
                    "standard output"
                } else {
                    "standard error"
                });
            }
            // SAFETY: the duplicate made in `begin`, used for nothing else.
            unsafe { libc::close(saved) };
        }
        if !lost.is_empty() {
            println!(
                "This cell closed its {}: what it wrote there afterwards was lost. It is open \
                 again for the next cells.",
                lost.join(" and ")
            );
        }
    }
}

/// Whether `fd` is open. (A cell may replace fd 1 on purpose, as the prelude does when it
/// starts its output pump in the first cell; only a closed one is put back.)
pub(super) fn is_open(fd: c_int) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}
