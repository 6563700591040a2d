//! The waits std makes on a futex (a channel's `recv`, `Mutex::lock`, `Condvar::wait`, a
//! `thread::scope`'s end, `park`) and `JoinHandle::join`, on the cells' thread, when the user
//! interrupts the cell.
//!
//! std calls glibc's `syscall(SYS_futex, ...)` for every futex wait, and loops on any wake-up
//! until what it waits for is there; nothing it returns ends such a wait, and unwinding out of it
//! is unsound (`cells` says why). So the kernel's binary defines `syscall` (exported, as the
//! `tchbook_waits` crate's calls are): every call is glibc's, except a futex wait on the cells'
//! thread while an interrupt is pending. That wait gets [`GRACE`] to end by itself (a lock another thread lets go of, a
//! wake-up during the cell's unwinding); after that the thread is left in it for good, and the
//! loop runs the next cells on a new thread (`cells::say_held`). A wait with a shorter timeout of
//! its own ends at it, as always: the cell's loop around it then stops at its interrupt check.
//!
//! `JoinHandle::join` waits inside glibc's `pthread_join`, whose futex is glibc's own. The
//! binary's `pthread_join` waits in slices on the cells' thread, and at an interrupt detaches the
//! thread and fails with `ECANCELED`: std's `join` then panics, which unwinds cleanly and ends
//! the cell with `KeyboardInterrupt`, every variable kept; the joined thread runs on.

use std::cell::Cell;
use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tchbook_waits::{errno, interrupted, leave_cells, on_cells_thread};

/// How long a futex wait on the cells' thread may go on after the interrupt before the thread is
/// left in it.
const GRACE: Duration = Duration::from_millis(250);

/// How often a `pthread_join` on the cells' thread looks for an interrupt.
const JOIN_SLICE: Duration = Duration::from_millis(20);

thread_local! {
    /// When this thread's first futex wait under the current interrupt began.
    static INTERRUPTED_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

type Syscall =
    unsafe extern "C" fn(c_long, c_long, c_long, c_long, c_long, c_long, c_long) -> c_long;
type PthreadJoin = unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int;

/// glibc's `syscall`, once looked up ([`next`]); [`keep`] looks it up at the process's start, so
/// that a call from a signal handler (the prelude's `tgkill`) never runs `dlsym`.
static GLIBC_SYSCALL: AtomicUsize = AtomicUsize::new(0);

/// glibc's definition of `name`, the one after this binary's. No lock (a `OnceLock` would wait
/// on a futex, through `syscall`, while it is looked up): looking up twice finds the same.
fn next<T: Copy>(cache: &AtomicUsize, name: &std::ffi::CStr) -> T {
    let mut found = cache.load(Ordering::Relaxed);
    if found == 0 {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
        found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize };
        cache.store(found, Ordering::Relaxed);
    }
    if found == 0 {
        // glibc defines both; a process without them could not have started.
        std::process::abort();
    }
    // SAFETY: `T` is the function type glibc's `name` has (the callers below), of pointer size.
    unsafe { std::mem::transmute_copy(&found) }
}

/// glibc's `syscall`, except for a futex wait of the cells' thread at an interrupt (see the
/// module's docs). Declared with the seven arguments glibc's own reads: a variadic call passes
/// them in the same registers and stack slots, and those a caller did not pass are ignored by
/// the system call, as glibc's are.
///
/// # Safety
/// As syscall(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syscall(
    number: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    let glibc: Syscall = next(&GLIBC_SYSCALL, c"syscall");
    let wait = number == libc::SYS_futex && is_wait(a2 as c_int) && on_cells_thread();
    if !wait {
        // SAFETY: the caller's arguments, as it gave them.
        return unsafe { glibc(number, a1, a2, a3, a4, a5, a6) };
    }
    if !interrupted() {
        INTERRUPTED_SINCE.with(|since| since.set(None));
        // SAFETY: as above.
        let done = unsafe { glibc(number, a1, a2, a3, a4, a5, a6) };
        if !(done == -1 && errno() == libc::EINTR && interrupted()) {
            return done;
        }
    }
    let since = INTERRUPTED_SINCE.with(|since| {
        let first = since.get().unwrap_or_else(Instant::now);
        since.set(Some(first));
        first
    });
    let Some(left) = GRACE.checked_sub(since.elapsed()) else {
        hold();
        // Not a thread of the loop's after all (a test's): a spurious wake-up.
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINTR };
        return -1;
    };
    // SAFETY: the caller's futex word and flags; a relative timeout of our own.
    unsafe { wait_a_little(glibc, a1, a2 as c_int, a3, a4, left) }
}

/// Whether a futex operation is a wait (`FUTEX_WAIT` or `FUTEX_WAIT_BITSET`).
fn is_wait(operation: c_int) -> bool {
    let command = operation & libc::FUTEX_CMD_MASK;
    command == libc::FUTEX_WAIT || command == libc::FUTEX_WAIT_BITSET
}

/// Waits on the caller's futex for at most `left` (or the caller's own timeout, when that comes
/// first): the wait's result when it ended by itself, `EINTR` (a spurious wake-up, which std's
/// callers wait again after) when `left` ran out first.
///
/// # Safety
/// `word` is the futex word of the caller's wait; `timeout` its timeout, as its operation reads
/// it.
unsafe fn wait_a_little(
    glibc: Syscall,
    word: c_long,
    operation: c_int,
    expected: c_long,
    timeout: c_long,
    left: Duration,
) -> c_long {
    let private = operation & libc::FUTEX_PRIVATE_FLAG;
    // SAFETY: the caller's timeout pointer, read as its operation reads it.
    let own = unsafe { caller_timeout(operation, timeout as *const libc::timespec) };
    let (slice, callers) = match own {
        Some(own) if own <= left => (own, true),
        _ => (left, false),
    };
    let relative = libc::timespec {
        tv_sec: slice.as_secs() as libc::time_t,
        tv_nsec: slice.subsec_nanos() as libc::c_long,
    };
    let wait = libc::FUTEX_WAIT | private;
    let pointer = &relative as *const libc::timespec as c_long;
    // SAFETY: a plain relative FUTEX_WAIT on the caller's word with its expected value.
    let done = unsafe {
        glibc(
            libc::SYS_futex,
            word,
            wait as c_long,
            expected,
            pointer,
            0,
            0,
        )
    };
    if done == -1 && errno() == libc::ETIMEDOUT && !callers {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINTR };
    }
    done
}

/// How long the caller's own wait had left (`None`: no timeout). `FUTEX_WAIT` takes a relative
/// timeout; `FUTEX_WAIT_BITSET` an absolute one, on CLOCK_REALTIME with `FUTEX_CLOCK_REALTIME`
/// and CLOCK_MONOTONIC otherwise.
///
/// # Safety
/// `timeout` is null or the caller's readable timespec.
unsafe fn caller_timeout(operation: c_int, timeout: *const libc::timespec) -> Option<Duration> {
    if timeout.is_null() {
        return None;
    }
    // SAFETY: non-null, the caller's.
    let timeout = unsafe { *timeout };
    let at = Duration::new(timeout.tv_sec.max(0) as u64, timeout.tv_nsec.max(0) as u32);
    if operation & libc::FUTEX_CMD_MASK == libc::FUTEX_WAIT {
        return Some(at);
    }
    let clock = if operation & libc::FUTEX_CLOCK_REALTIME != 0 {
        libc::CLOCK_REALTIME
    } else {
        libc::CLOCK_MONOTONIC
    };
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct it is given.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let now = Duration::new(now.tv_sec.max(0) as u64, now.tv_nsec.max(0) as u32);
    Some(at.saturating_sub(now))
}

/// Leaves this thread in its wait for good, once the loop knows (see the module's docs); returns
/// only on a thread the loop did not start, which then waits as any other thread.
fn hold() {
    leave_cells();
    INTERRUPTED_SINCE.with(|since| since.set(None));
    if !super::cells::say_held() {
        return;
    }
    loop {
        // SAFETY: pause(2) only waits for a signal, whose handler returns.
        unsafe { libc::pause() };
    }
}

/// glibc's `pthread_join`, except on the cells' thread, where an interrupt ends it (see the
/// module's docs).
///
/// # Safety
/// As pthread_join(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, result: *mut *mut c_void) -> c_int {
    static GLIBC: AtomicUsize = AtomicUsize::new(0);
    if !on_cells_thread() {
        let glibc: PthreadJoin = next(&GLIBC, c"pthread_join");
        // SAFETY: the caller's arguments.
        return unsafe { glibc(thread, result) };
    }
    loop {
        if interrupted() {
            // SAFETY: a joinable thread nobody else joins; it frees itself when it ends.
            unsafe { libc::pthread_detach(thread) };
            return libc::ECANCELED;
        }
        let mut until = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the struct it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut until) };
        let nanos = until.tv_nsec as u64 + JOIN_SLICE.as_nanos() as u64;
        until.tv_sec += (nanos / 1_000_000_000) as libc::time_t;
        until.tv_nsec = (nanos % 1_000_000_000) as libc::c_long;
        // SAFETY: the caller's thread and result; a deadline of our own.
        match unsafe { libc::pthread_timedjoin_np(thread, result, &until) } {
            libc::ETIMEDOUT => continue,
            done => return done,
        }
    }
}

/// Keeps the definitions above in the kernel's binary (as `tchbook_waits::keep`), and looks up
/// glibc's `syscall` now.
pub(super) fn keep() {
    let _: Syscall = next(&GLIBC_SYSCALL, c"syscall");
    std::hint::black_box([
        syscall as *const () as usize,
        pthread_join as *const () as usize,
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_but_a_cells_threads_interrupted_wait_is_glibcs() {
        // SAFETY: system calls without pointers.
        unsafe {
            assert_eq!(
                syscall(libc::SYS_getpid, 0, 0, 0, 0, 0, 0),
                libc::getpid() as c_long
            );
            assert_eq!(syscall(libc::SYS_close, -1, 0, 0, 0, 0, 0), -1);
        }
        assert_eq!(errno(), libc::EBADF);
        // A wait on a word that no longer holds the value: EAGAIN at once, as glibc's.
        let word = std::sync::atomic::AtomicU32::new(1);
        let operation = (libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG) as c_long;
        // SAFETY: a futex wait on a live word, without a timeout.
        let done = unsafe {
            syscall(
                libc::SYS_futex,
                word.as_ptr() as c_long,
                operation,
                0,
                0,
                0,
                -1,
            )
        };
        assert_eq!((done, errno()), (-1, libc::EAGAIN));
        // A joined thread's result, on a thread that is not the cells'.
        let joined = std::thread::spawn(|| 7).join();
        assert_eq!(joined.ok(), Some(7));
    }

    #[test]
    fn a_waits_own_timeout_is_read_as_its_operation_gives_it() {
        assert!(is_wait(libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG));
        assert!(is_wait(
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_CLOCK_REALTIME
        ));
        assert!(!is_wait(libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG));
        let relative = libc::timespec {
            tv_sec: 2,
            tv_nsec: 5,
        };
        // SAFETY: a valid timespec, and null.
        unsafe {
            assert_eq!(
                caller_timeout(libc::FUTEX_WAIT, &relative),
                Some(Duration::new(2, 5))
            );
            assert_eq!(caller_timeout(libc::FUTEX_WAIT, std::ptr::null()), None);
        }
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the struct it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let absolute = libc::timespec {
            tv_sec: now.tv_sec + 3,
            tv_nsec: now.tv_nsec,
        };
        // SAFETY: a valid timespec.
        let left = unsafe { caller_timeout(libc::FUTEX_WAIT_BITSET, &absolute) }.unwrap();
        assert!(
            left <= Duration::from_secs(3) && left > Duration::from_secs(2),
            "{left:?}"
        );
    }
}
