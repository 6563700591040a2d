//! SIGINT sets the interrupt flag; SIGTERM ends the evaluation process's whole group.

use super::state::shared;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use tchbook_wire::env;

static INTERRUPT_FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());
/// The SIGINT handler this one replaced (the evaluation process's own, which ends a cell's
/// read of stdin), called after the flag is set; 0 when there was none to call.
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigint(signal: libc::c_int) {
    // Only atomic stores, tgkill and the previous handler, itself an atomic store: anything
    // else (allocation, locks, printing) is not async-signal-safe.
    let flag = INTERRUPT_FLAG.load(Ordering::SeqCst);
    if !flag.is_null() {
        // SAFETY: points into the leaked, never-freed shared state.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
    }
    let slot = CELL_THREAD.load(Ordering::SeqCst);
    let wake = WAKE.load(Ordering::SeqCst);
    if wake != 0 && !slot.is_null() {
        // SAFETY: points into the leaked, never-freed shared state.
        let thread = unsafe { (*slot).load(Ordering::SeqCst) };
        // SAFETY: tgkill(2) is async-signal-safe; the thread is this process's cells' thread
        // (a thread left in a stopped wait stays too), and its handler for `wake` does nothing.
        unsafe {
            libc::syscall(libc::SYS_tgkill, libc::getpid(), thread, wake);
        }
    }
    let previous = PREVIOUS.load(Ordering::SeqCst);
    if previous != 0 {
        // SAFETY: a plain handler's address, read from sigaction before this one replaced it
        // (never SIG_DFL, SIG_IGN or an SA_SIGINFO handler: those are not stored).
        let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(previous) };
        handler(signal);
    }
}

pub(super) fn install_sigint_handler() {
    let flag = &shared().interrupted as *const AtomicBool as *mut AtomicBool;
    INTERRUPT_FLAG.store(flag, Ordering::SeqCst);
    // SAFETY: a zeroed sigaction is valid; the handler only performs an atomic store.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as *const () as usize;
        // SA_RESTART: a read() in the user's code or in the pump must not fail with EINTR
        // just because the user pressed interrupt.
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, &action, &mut previous) == 0
            && previous.sa_flags & libc::SA_SIGINFO == 0
            && previous.sa_sigaction != libc::SIG_DFL
            && previous.sa_sigaction != libc::SIG_IGN
            && previous.sa_sigaction != on_sigint as *const () as usize
        {
            PREVIOUS.store(previous.sa_sigaction, Ordering::SeqCst);
        }
    }
}

/// The evaluation process gets SIGTERM when the kernel dies, however it dies (the kernel sets
/// `PR_SET_PDEATHSIG`). The processes its cells started are in its process group and would live
/// on under PID 1; SIGKILL to the group ends them and this process together. Installed only in
/// evcxr's evaluation process leading its own group (the kernel starts it so): a plain program
/// that calls [`super::attach`] shares its group with the shell that started it.
pub(super) fn install_sigterm_handler() {
    extern "C" fn on_sigterm(_signal: libc::c_int) {
        // SAFETY: kill(2) is async-signal-safe; 0 is this process's own group.
        unsafe { libc::kill(0, libc::SIGKILL) };
    }
    // SAFETY: getpgrp/getpid cannot fail.
    let leads_group = unsafe { libc::getpgrp() == libc::getpid() };
    if !leads_group || std::env::var_os(env::IS_RUNTIME).is_none() {
        return;
    }
    // SAFETY: a zeroed sigaction is valid; the handler only calls kill(2).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigterm as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}

/// The thread cells run on (the shared state's, which a new cells' thread takes over), and the
/// signal that ends its blocking call (0: none), once the kernel's evaluation process has made
/// its waits interruptible ([`make_waits_interruptible`]).
static CELL_THREAD: AtomicPtr<AtomicI32> = AtomicPtr::new(std::ptr::null_mut());
static WAKE: AtomicI32 = AtomicI32::new(0);

/// Tells the kernel's evaluation process how to see a pending interrupt, so that a blocking
/// call on this thread (the one cells run on: a sleep, a read or write of a pipe or socket, a
/// wait for a child) ends when the user interrupts the cell; the `tchbook-waits` crate says
/// how. From then on this thread blocks SIGINT, and the handler, run on another thread, sends
/// it the signal that ends its call. An exported program defines the function too (its runner
/// links the crate, and its build script exports the name); elsewhere (a test) the process does
/// not, and waits stay as they are. Called again on each new thread the
/// evaluation process runs cells on ([`super::cell`]), after it set `cell_thread`.
pub(super) fn make_waits_interruptible() {
    extern "C" fn pending() -> bool {
        shared().interrupted.load(Ordering::SeqCst)
    }
    // SAFETY: dlsym with the default scope and a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"tchbook_interruptible_waits".as_ptr()) };
    if found.is_null() {
        return;
    }
    // SAFETY: the kernel's binary exports this name for this function's signature alone.
    let register: extern "C" fn(extern "C" fn() -> bool) -> libc::c_int =
        unsafe { std::mem::transmute(found) };
    let slot = &shared().cell_thread as *const AtomicI32 as *mut AtomicI32;
    CELL_THREAD.store(slot, Ordering::SeqCst);
    WAKE.store(register(pending), Ordering::SeqCst);
}

/// Whether this is the thread cells run on (any thread before [`super::attach`]).
pub(super) fn on_cells_thread() -> bool {
    let cells = shared().cell_thread.load(Ordering::SeqCst);
    // SAFETY: gettid(2) cannot fail.
    cells == 0 || cells == unsafe { libc::gettid() }
}

/// Makes the calling thread the one cells run on, when it is not yet: the kernel's evaluation
/// process moves to a new thread when the user interrupted a cell in a wait that cannot be cut
/// short (a channel's `recv`, a lock), leaving the old thread in it. The interrupt checks, the
/// panic report and the waits the interrupt ends follow. Nothing before [`super::attach`].
pub(super) fn adopt_this_thread() {
    let state = shared();
    if !state.attached.load(Ordering::SeqCst) {
        return;
    }
    // SAFETY: gettid(2) cannot fail.
    let this = unsafe { libc::gettid() };
    if state.cell_thread.swap(this, Ordering::SeqCst) != this {
        make_waits_interruptible();
    }
}
