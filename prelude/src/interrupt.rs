//! The kernel's interrupt flag, as seen from a running cell.
//!
//! `runtime::attach()` installs a SIGINT handler that only sets a flag (the one thing a signal
//! handler may safely do). Long loops — the [`DataLoader`](crate::data::DataLoader) iterator,
//! progress bars, run managers — call [`check`], which turns a pending interrupt into a panic
//! with the message Python users know. The panic ends the cell; the evaluation process and every
//! variable in it (the model, the optimizer) live on.

use crate::runtime::shared;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

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

/// Where this copy of the prelude reads the flag from in [`__point`]: the process's one flag
/// (`shared().interrupted`) once [`point_slow`] has looked it up, and until then [`UNSET`],
/// which is always set, so that the first check of each copy takes the slow path and looks.
/// (A cell linked without the shared library of its dependencies carries a copy of its own.)
static FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(&UNSET as *const AtomicBool as *mut AtomicBool);
static UNSET: AtomicBool = AtomicBool::new(true);

/// The check the kernel puts after the `{` of every loop body in a cell's own code (and in the
/// functions and closures cells define; `tchbook export` does the same) and after each of its
/// statements: panics with `KeyboardInterrupt` at that line when the user interrupted the cell,
/// on the thread cells run on (a thread the cell started runs on). Not for calling by hand:
/// [`check`] is.
///
/// Cells are built at opt-level 0, where `AtomicBool::load` is a call (two, with the ordering's
/// match), which cost a tight integer loop a third of its time; this is two plain loads and a
/// branch, inlined (`#[inline(always)]` is honoured at level 0). The loads are `asm!`, which
/// the compiler treats as opaque: it may neither drop them nor hoist them out of the loop, as it
/// might a plain read at a higher level, and an asm read races with the SIGINT handler's
/// atomic store no more than a relaxed atomic load does.
#[doc(hidden)]
#[inline(always)]
#[track_caller]
pub fn __point() {
    if flag_is_set() {
        point_slow();
    }
}

/// Two loads in one `asm!` block: the pointer in `$slot`, then the byte it points to.
macro_rules! load_through {
    ($slot:expr, $load_pointer:literal, $load_byte:literal) => {{
        let set: u32;
        // SAFETY: reads the pointer in FLAG (always a valid `&'static AtomicBool`) and the byte
        // it points to; writes only the two registers named; no stack, flags kept.
        unsafe {
            std::arch::asm!(
                $load_pointer,
                $load_byte,
                slot = in(reg) $slot,
                flag = out(reg) _,
                set = lateout(reg) set,
                options(nostack, readonly, preserves_flags),
            );
        }
        set != 0
    }};
}

#[inline(always)]
fn flag_is_set() -> bool {
    let slot = &FLAG as *const AtomicPtr<AtomicBool>;
    #[cfg(target_arch = "x86_64")]
    return load_through!(
        slot,
        "mov {flag}, qword ptr [{slot}]",
        "movzx {set:e}, byte ptr [{flag}]"
    );
    #[cfg(target_arch = "aarch64")]
    return load_through!(slot, "ldr {flag}, [{slot}]", "ldrb {set:w}, [{flag}]");
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: FLAG always holds a valid `&'static AtomicBool`.
        unsafe { &*FLAG.load(Ordering::Relaxed) }.load(Ordering::Relaxed)
    }
}

/// The flag was set, or this copy has not looked it up yet: look it up, then check for real.
#[cold]
#[inline(never)]
#[track_caller]
fn point_slow() {
    let state = shared();
    let flag = &state.interrupted as *const AtomicBool as *mut AtomicBool;
    FLAG.store(flag, Ordering::Relaxed);
    // A check in code that runs while the thread unwinds from another panic (a `Drop` of the
    // cell's own) leaves the interrupt for later: a panic then would abort the process. So does
    // one on a thread the cell started: the interrupt is the cell's thread's, as Python's
    // `KeyboardInterrupt` is the main thread's (0: not attached, any thread takes it).
    let cell_thread = state.cell_thread.load(Ordering::SeqCst);
    // SAFETY: gettid(2) cannot fail.
    let elsewhere = cell_thread != 0 && cell_thread != unsafe { libc::gettid() };
    if !std::thread::panicking() && !elsewhere {
        check();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test for all of it: the flag and the cells' thread are the process's, and the tests
    // of one binary run in parallel.
    #[test]
    fn a_check_stops_the_cells_thread_once_the_flag_is_set_and_only_once() {
        reset();
        for _ in 0..3 {
            __point();
        }
        // SAFETY: gettid(2) cannot fail.
        let this = unsafe { libc::gettid() };
        shared().cell_thread.store(this, Ordering::SeqCst);
        raise();
        // Another thread's check leaves the interrupt to the cells' thread.
        std::thread::spawn(__point)
            .join()
            .expect("another thread was stopped");
        assert!(is_pending());
        let stopped = std::panic::catch_unwind(|| {
            for _ in 0..3 {
                __point();
            }
        });
        shared().cell_thread.store(0, Ordering::SeqCst);
        let message = stopped.expect_err("the loop ran on");
        assert_eq!(
            message.downcast_ref::<String>().map(String::as_str),
            Some(MESSAGE)
        );
        __point(); // reported once, as check() does
    }
}
