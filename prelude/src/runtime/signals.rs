//! SIGINT sets the interrupt flag; SIGTERM ends the evaluation process's whole group.

use super::state::shared;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use tchbook_wire::env;

static INTERRUPT_FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());
/// The SIGINT handler this one replaced (the evaluation process's own, which ends a cell's
/// read of stdin), called after the flag is set; 0 when there was none to call.
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigint(signal: libc::c_int) {
    // Only an atomic store and the previous handler, itself an atomic store: anything else
    // (allocation, locks, printing) is not async-signal-safe.
    let flag = INTERRUPT_FLAG.load(Ordering::SeqCst);
    if !flag.is_null() {
        // SAFETY: points into the leaked, never-freed shared state.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
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
