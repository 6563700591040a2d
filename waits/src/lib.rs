//! A notebook cell's blocking waits end when the user interrupts the cell: a sleep, a read or
//! write of a pipe or socket, an `accept`, a wait for a child process. For the two processes that
//! run cells on one thread: the tchbook kernel's evaluation process, and an exported program
//! (`tchbook export`).
//!
//! Rust cannot unwind out of a signal handler, so a SIGINT only sets the prelude's flag, and a
//! cell blocked in a system call never reaches a check of it: std retries a call that a signal
//! cut short (`EINTR`), and the SIGINT handler is installed with `SA_RESTART`, so most calls are
//! not even cut short. Such a cell waited out its grace period, and the kernel then ended the
//! evaluation process with every variable (an exported program ended). Three parts end those
//! waits instead:
//!
//! - The cells' thread blocks SIGINT ([`tchbook_interruptible_waits`], which the prelude's
//!   `runtime::attach` finds with `dlsym` and calls on that thread), and a thread of this crate
//!   that never blocks it receives it; the prelude's handler then sends SIGUSR2 to the cells'
//!   thread. SIGUSR2's handler does nothing and is installed without `SA_RESTART`, so the
//!   thread's blocking call returns `EINTR`.
//! - This crate defines the calls std makes for those waits (`nanosleep`, `clock_nanosleep`,
//!   `read`, `write`, `recv`, `send`, `accept4`, `waitpid`). A binary that links it ([`keep`])
//!   calls these rather than glibc's, as the linker takes the executable's own definition first;
//!   the kernel's binary also exports them (its build.rs), so that the cells' libraries, loaded
//!   later, call them too. Each is the system call glibc makes; on the cells' thread, when it
//!   returns `EINTR` (or a sleep starts) with an interrupt pending, a sleep returns with nothing
//!   left to sleep and every other call fails with `ECANCELED`, which std does not retry (a
//!   write cut short after some bytes returns their count, and the next one fails).
//! - The interrupt check after each statement of the cell (the kernel's `interrupt_points`,
//!   exported programs' too) then ends the cell with `KeyboardInterrupt`; a failed call the cell
//!   unwraps panics, which is reported as the interrupt it was.
//!
//! Every other call (any other thread, a wait nothing interrupted, a process where nothing
//! registered) is the system call glibc would make, with glibc's results. A wait on a futex (a
//! channel's `recv`, a `Mutex`, a `Condvar`) cannot be ended so: std waits again after any
//! wake-up until the value it waits for is there, and there is no error to give it. The kernel's
//! evaluation process deals with those itself (its `futex` module); an exported program ends
//! after its grace period, as it does at a loop without a check.

use std::cell::Cell;
use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The prelude's `extern "C" fn() -> bool` that says whether an interrupt is pending; 0 until
/// it is registered.
static PENDING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread runs cells (set by the registration, on that thread).
    static CELL_THREAD: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread's last write or send was cut short by the interrupt after it moved
    /// some bytes: it then returned their count, and std's `write_all` writes again.
    static SHORT_AT_INTERRUPT: Cell<bool> = const { Cell::new(false) };
}

extern "C" fn on_wake(_signal: c_int) {}

/// SIGUSR2 does nothing but cut the cells' thread's blocking call short: no `SA_RESTART`.
fn install_wake_handler() -> bool {
    install(libc::SIGUSR2, on_wake, 0)
}

/// Installs `handler` for `signal` with `flags` (an empty mask); whether it took. The kernel's
/// evaluation process installs its SIGINT flag and crash reports with it too.
pub fn install(signal: c_int, handler: extern "C" fn(c_int), flags: c_int) -> bool {
    // SAFETY: a zeroed sigaction is valid; the handlers given here only store an atomic, do
    // nothing, or report a crash and abort.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
    }
}

/// Called by the prelude's `runtime::attach`, on the thread that runs cells, and again on each
/// new thread cells move to (`cells`): from then on that thread's waits end at an interrupt.
/// Returns the signal the prelude's SIGINT handler is to send that thread (SIGUSR2), or 0 when
/// nothing was set up. Not for calling by hand.
#[unsafe(no_mangle)]
pub extern "C" fn tchbook_interruptible_waits(pending: extern "C" fn() -> bool) -> c_int {
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ready = *READY.get_or_init(|| {
        // A thread that never blocks SIGINT, started before this thread blocks it (threads
        // inherit their starter's mask): the process always has one to take the signal.
        let receiver = std::thread::Builder::new()
            .name("tchbook-sigint".to_owned())
            .spawn(|| {
                loop {
                    std::thread::park();
                }
            });
        // No SA_RESTART: the blocking call returns EINTR.
        receiver.is_ok() && install_wake_handler()
    });
    if !ready {
        return 0;
    }
    // SAFETY: a zeroed sigset is valid; the mask change is this thread's own.
    unsafe {
        let mut sigint: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut sigint);
        libc::sigaddset(&mut sigint, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &sigint, std::ptr::null_mut());
    }
    CELL_THREAD.with(|cell| cell.set(true));
    PENDING.store(pending as usize, Ordering::SeqCst);
    libc::SIGUSR2
}

/// This thread runs no more cells (the kernel left it in a stopped wait): its waits are plain
/// again.
pub fn leave_cells() {
    CELL_THREAD.with(|cell| cell.set(false));
}

/// Whether this thread runs cells.
pub fn on_cells_thread() -> bool {
    CELL_THREAD.with(Cell::get)
}

/// Whether a wait on this thread should end now: it is the cells' thread and the user
/// interrupted the cell.
pub fn interrupted() -> bool {
    let pending = PENDING.load(Ordering::SeqCst);
    if pending == 0 || !CELL_THREAD.with(Cell::get) {
        return false;
    }
    // SAFETY: a non-zero value is the `extern "C" fn() -> bool` stored by the registration.
    let pending: extern "C" fn() -> bool = unsafe { std::mem::transmute(pending) };
    pending()
}

/// This thread's `errno`.
pub fn errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// A system call's result as glibc's wrapper gives it (the value, or -1 with errno), except that
/// one cut short while an interrupt is pending on the cells' thread fails with `ECANCELED`.
fn ended_at_interrupt(done: c_long) -> c_long {
    if done == -1 && errno() == libc::EINTR && interrupted() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ECANCELED };
    }
    done
}

/// A write or send of `count` bytes, ended at an interrupt on the cells' thread. A signal that
/// cuts a blocking write short after it moved some bytes makes it return their count, not
/// `EINTR`, and std's `write_all` then writes the rest, blocking again: the write after such a
/// short one fails with `ECANCELED` at once if the interrupt is still pending. (Only then: a
/// write that cannot block, such as a file's or the panic report's, is never refused.)
fn write_ended_at_interrupt(count: usize, call: impl FnOnce() -> c_long) -> isize {
    if SHORT_AT_INTERRUPT.with(|short| short.replace(false)) && interrupted() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ECANCELED };
        return -1;
    }
    let done = ended_at_interrupt(call());
    if done >= 0 && (done as usize) < count && interrupted() {
        SHORT_AT_INTERRUPT.with(|short| short.set(true));
    }
    done as isize
}

/// Reads of fd 0 go to this function first, once set ([`read_fd_0_with`]); 0 until then.
static FD_0_READER: AtomicUsize = AtomicUsize::new(0);

/// What reads fd 0 first: `reader(buffer, count)` answers a read with its result, or `None` to
/// leave it to the system call. The kernel's evaluation process sets it, so that a cell's read of
/// its stdin asks the front end for a line.
pub fn read_fd_0_with(reader: fn(*mut c_void, usize) -> Option<isize>) {
    FD_0_READER.store(reader as usize, Ordering::SeqCst);
}

/// glibc's `read`, ended at an interrupt on the cells' thread; a read of fd 0 goes to the
/// reader set by [`read_fd_0_with`] first.
///
/// # Safety
/// As read(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn read(fd: c_int, buffer: *mut c_void, count: usize) -> isize {
    let reader = FD_0_READER.load(Ordering::SeqCst);
    if fd == 0 && reader != 0 {
        // SAFETY: a non-zero value is the `fn` stored by `read_fd_0_with`.
        let reader: fn(*mut c_void, usize) -> Option<isize> =
            unsafe { std::mem::transmute(reader) };
        if let Some(done) = reader(buffer, count) {
            return done;
        }
    }
    // SAFETY: the caller's arguments, as read(2) takes them.
    ended_at_interrupt(unsafe { libc::syscall(libc::SYS_read, fd, buffer, count) }) as isize
}

/// glibc's `write`, ended at an interrupt on the cells' thread.
///
/// # Safety
/// As write(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buffer: *const c_void, count: usize) -> isize {
    // SAFETY: the caller's arguments, as write(2) takes them.
    write_ended_at_interrupt(count, || unsafe {
        libc::syscall(libc::SYS_write, fd, buffer, count)
    })
}

/// glibc's `recv` (recvfrom(2) with no address), ended at an interrupt on the cells' thread.
///
/// # Safety
/// As recv(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn recv(fd: c_int, buffer: *mut c_void, count: usize, flags: c_int) -> isize {
    let none = std::ptr::null_mut::<c_void>();
    // SAFETY: the caller's arguments, as recvfrom(2) takes them, with no address wanted.
    let done = unsafe { libc::syscall(libc::SYS_recvfrom, fd, buffer, count, flags, none, none) };
    ended_at_interrupt(done) as isize
}

/// glibc's `send` (sendto(2) with no address), ended at an interrupt on the cells' thread.
///
/// # Safety
/// As send(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn send(
    fd: c_int,
    buffer: *const c_void,
    count: usize,
    flags: c_int,
) -> isize {
    let none = std::ptr::null::<c_void>();
    // SAFETY: the caller's arguments, as sendto(2) takes them, with no address.
    write_ended_at_interrupt(count, || unsafe {
        libc::syscall(libc::SYS_sendto, fd, buffer, count, flags, none, 0)
    })
}

/// glibc's `accept4`, ended at an interrupt on the cells' thread.
///
/// # Safety
/// As accept4(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accept4(
    fd: c_int,
    address: *mut libc::sockaddr,
    length: *mut libc::socklen_t,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's arguments, as accept4(2) takes them.
    let done = unsafe { libc::syscall(libc::SYS_accept4, fd, address, length, flags) };
    ended_at_interrupt(done) as c_int
}

/// glibc's `waitpid` (wait4(2) without usage), ended at an interrupt on the cells' thread.
///
/// # Safety
/// As waitpid(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn waitpid(
    pid: libc::pid_t,
    status: *mut c_int,
    options: c_int,
) -> libc::pid_t {
    let none = std::ptr::null_mut::<libc::rusage>();
    // SAFETY: the caller's arguments, as wait4(2) takes them, with no usage wanted.
    let done = unsafe { libc::syscall(libc::SYS_wait4, pid, status, options, none) };
    ended_at_interrupt(done) as libc::pid_t
}

/// clock_nanosleep(2) as glibc's returns it: 0, or the error number; cut short by an interrupt
/// on the cells' thread, `EINTR` with nothing left to sleep.
///
/// # Safety
/// As clock_nanosleep(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    request: *const libc::timespec,
    remain: *mut libc::timespec,
) -> c_int {
    if interrupted() {
        nothing_left(flags, remain);
        return libc::EINTR;
    }
    // SAFETY: the caller's pointers, as the system call takes them.
    let done = unsafe { libc::syscall(libc::SYS_clock_nanosleep, clock, flags, request, remain) };
    if done == 0 {
        return 0;
    }
    let error = errno();
    if error == libc::EINTR && interrupted() {
        nothing_left(flags, remain);
    }
    error
}

/// What a relative sleep cut short by an interrupt has left: nothing, so std's loop ends.
fn nothing_left(flags: c_int, remain: *mut libc::timespec) {
    if !remain.is_null() && flags & libc::TIMER_ABSTIME == 0 {
        // SAFETY: the sleep's caller passed `remain` writable (or null, checked).
        unsafe {
            *remain = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            }
        };
    }
}

/// glibc's `nanosleep` (CLOCK_REALTIME, relative), ended at an interrupt on the cells' thread.
///
/// # Safety
/// As nanosleep(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nanosleep(
    request: *const libc::timespec,
    remain: *mut libc::timespec,
) -> c_int {
    // SAFETY: the caller's pointers, as it promised them.
    match unsafe { clock_nanosleep(libc::CLOCK_REALTIME, 0, request, remain) } {
        0 => 0,
        error => {
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = error };
            -1
        }
    }
}

/// Keeps the definitions above in a binary that links this crate (call it once, early): nothing
/// calls them by name, and the linker takes from a library only what something asks for.
pub fn keep() {
    std::hint::black_box([
        tchbook_interruptible_waits as *const () as usize,
        nanosleep as *const () as usize,
        clock_nanosleep as *const () as usize,
        read as *const () as usize,
        write as *const () as usize,
        recv as *const () as usize,
        send as *const () as usize,
        accept4 as *const () as usize,
        waitpid as *const () as usize,
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    static SET: AtomicBool = AtomicBool::new(false);

    extern "C" fn pending() -> bool {
        SET.load(Ordering::SeqCst)
    }

    #[test]
    fn only_the_cells_thread_stops_waiting_and_only_while_an_interrupt_is_pending() {
        let request = libc::timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        let mut remain = libc::timespec {
            tv_sec: 9,
            tv_nsec: 9,
        };
        PENDING.store(pending as *const () as usize, Ordering::SeqCst);
        SET.store(true, Ordering::SeqCst);
        // (Joined before this thread becomes the cells': a join there ends at the interrupt.)
        let other = std::thread::spawn(move || {
            let started = Instant::now();
            // SAFETY: valid pointers.
            let done = unsafe { nanosleep(&request, std::ptr::null_mut()) };
            (done, started.elapsed())
        })
        .join()
        .unwrap();
        assert_eq!(other.0, 0);
        assert!(
            other.1 >= Duration::from_millis(20),
            "another thread slept in full"
        );
        CELL_THREAD.with(|cell| cell.set(true));
        // SAFETY: valid pointers.
        let done = unsafe { nanosleep(&request, &mut remain) };
        assert_eq!(done, -1);
        assert_eq!(errno(), libc::EINTR);
        assert_eq!((remain.tv_sec, remain.tv_nsec), (0, 0));
        // A call cut short fails with ECANCELED; a call that was not is left as it was.
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINTR };
        assert_eq!(ended_at_interrupt(-1), -1);
        assert_eq!(errno(), libc::ECANCELED);
        assert_eq!(ended_at_interrupt(5), 5);
        SET.store(false, Ordering::SeqCst);
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINTR };
        assert_eq!(ended_at_interrupt(-1), -1);
        assert_eq!(
            errno(),
            libc::EINTR,
            "without an interrupt std retries, as with glibc"
        );
        let started = Instant::now();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { nanosleep(&request, &mut remain) }, 0);
        assert!(started.elapsed() >= Duration::from_millis(20));
        PENDING.store(0, Ordering::SeqCst);
        CELL_THREAD.with(|cell| cell.set(false));
    }

    #[test]
    fn reads_and_writes_are_the_system_calls_glibc_makes() {
        let mut fds = [0; 2];
        // SAFETY: a pipe into an array of two.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the pipe's fds and buffers of the lengths given.
        unsafe {
            assert_eq!(write(fds[1], b"abc".as_ptr().cast(), 3), 3);
            let mut buffer = [0u8; 8];
            assert_eq!(read(fds[0], buffer.as_mut_ptr().cast(), 8), 3);
            assert_eq!(&buffer[..3], b"abc");
            assert_eq!(read(-1, buffer.as_mut_ptr().cast(), 8), -1);
            assert_eq!(errno(), libc::EBADF);
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
