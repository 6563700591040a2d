//! The kernel's interrupt flag, as seen from a running cell.
//!
//! `runtime::attach()` installs a SIGINT handler that only sets a flag (the one thing a signal
//! handler may safely do). Long loops — the [`DataLoader`](crate::data::DataLoader) iterator,
//! progress bars, run managers — call [`check`], which turns a pending interrupt into a panic
//! with the message Python users know. The panic ends the cell; the evaluation process and every
//! variable in it (the model, the optimizer) live on.

use crate::runtime::shared;
use std::sync::atomic::Ordering;

/// The message a cell ends with when the user interrupts it.
///
/// ```
/// assert!(tchbook_prelude::interrupt::MESSAGE.starts_with("KeyboardInterrupt"));
/// ```
pub const MESSAGE: &str = crate::runtime::INTERRUPTED;

/// The error [`f_check`] returns when an interrupt is pending.
///
/// ```
/// use tchbook_prelude::interrupt::Interrupted;
/// assert_eq!(Interrupted.to_string(), "KeyboardInterrupt: interrupted by the user");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MESSAGE)
    }
}

impl std::error::Error for Interrupted {}

/// Panics with `KeyboardInterrupt: interrupted by the user` if the user interrupted the cell.
///
/// The flag is cleared when it is reported, so the next cell starts clean. The panic is
/// reported at the caller's line (`#[track_caller]`): a check in a cell points at that cell line,
/// not at this file.
///
/// ```
/// use tchbook_prelude::interrupt;
/// for step in 0..3 {
///     interrupt::check(); // no interrupt pending: returns at once
///     let _ = step;
/// }
/// ```
#[track_caller]
pub fn check() {
    if let Err(e) = f_check() {
        // resume_unwind would skip the panic hook and so print nothing: the user must see why
        // the cell stopped, in Python's words.
        panic!("{e}");
    }
}

/// The fallible twin of [`check`]: `Err(Interrupted)` when an interrupt was pending (and clears it).
///
/// ```
/// use tchbook_prelude::interrupt;
/// interrupt::raise();
/// assert!(interrupt::f_check().is_err());
/// assert!(interrupt::f_check().is_ok()); // reported once
/// ```
pub fn f_check() -> Result<(), Interrupted> {
    if shared().interrupted.swap(false, Ordering::SeqCst) {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// Whether an interrupt is pending, without clearing it.
///
/// ```
/// use tchbook_prelude::interrupt;
/// interrupt::reset();
/// assert!(!interrupt::is_pending());
/// ```
pub fn is_pending() -> bool {
    shared().interrupted.load(Ordering::SeqCst)
}

/// Sets the flag as the SIGINT handler would (tests, or code that wants to stop a loop).
///
/// ```
/// use tchbook_prelude::interrupt;
/// interrupt::raise();
/// assert!(interrupt::is_pending());
/// interrupt::reset();
/// ```
pub fn raise() {
    shared().interrupted.store(true, Ordering::SeqCst);
}

/// Clears a pending interrupt. The kernel may call this before each cell so that an interrupt
/// that arrived while no loop was checking does not stop the next cell.
///
/// ```
/// use tchbook_prelude::interrupt;
/// interrupt::raise();
/// interrupt::reset();
/// assert!(interrupt::f_check().is_ok());
/// ```
pub fn reset() {
    shared().interrupted.store(false, Ordering::SeqCst);
}
