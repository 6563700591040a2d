//! fd 0 of the evaluation process, and every read of it.
//!
//! The command pipe evcxr writes to arrives as fd 0; it is moved to another fd at start
//! ([`take_over_fd_0`]), and fd 0 becomes `/dev/null`. Then:
//!
//! - A read of fd 0 in the process (`std::io::stdin()`, on any thread of the cell) goes through
//!   the binary's own `read` (`tchbook_waits`), which hands it here: while a cell runs, it asks
//!   the front end for a line (evcxr's input request, one per read that finds nothing left of
//!   the last answer), waits for the answer (`deliver`, from the command pipe's reader) and
//!   returns it with a newline. An empty answer is end-of-file, as Ctrl-D at a terminal, so
//!   `read_to_string` ends when the user sends an empty line. A read while no cell runs (a
//!   thread still reading after its cell) gets end-of-file.
//! - The prelude's `input()` asks through [`tchbook_input_line`], with its prompt.
//! - A wait for an answer ends when the user interrupts the cell: the read fails with
//!   `ECANCELED` (std does not retry it), `input()` stops the cell with `KeyboardInterrupt`.
//!   One request waits at a time; an answer that comes when none waits is dropped.
//! - Every other way to read fd 0 reads `/dev/null` and gets end-of-file at once: a child
//!   process (`head -c 5`, `cat`), a duplicate of fd 0, `/dev/stdin`. Before, they read the
//!   command pipe: they hung, or took the kernel's next command.
//! - A cell that closes fd 0 or puts something else there gets `/dev/null` back after it.

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tchbook_wire::InputRequest;

/// How often a waiting read looks whether its cell was interrupted or has ended.
const LOOK_EVERY: Duration = Duration::from_millis(20);

struct State {
    /// Whether a cell runs: only then does a read ask.
    running: bool,
    /// Whether a request is out and its answer not in yet.
    waiting: bool,
    /// The answer to that request, once it came.
    answer: Option<String>,
    /// What is left of the last answer (and its newline) after the read that took it.
    rest: Vec<u8>,
}

static STATE: Mutex<State> = Mutex::new(State {
    running: false,
    waiting: false,
    answer: None,
    rest: Vec::new(),
});
static CHANGED: Condvar = Condvar::new();

/// Whether fd 0 was taken over (only in the evaluation process).
static TAKEN: AtomicBool = AtomicBool::new(false);
/// The device and inode of the `/dev/null` put on fd 0.
static NULL_DEVICE: AtomicU64 = AtomicU64::new(0);
static NULL_INODE: AtomicU64 = AtomicU64::new(0);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves the command pipe off fd 0, puts `/dev/null` there, and returns the pipe.
pub(super) fn take_over_fd_0() -> std::io::Result<File> {
    // SAFETY: duplicating this process's own fd 0.
    let commands = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if commands < 0 {
        return Err(std::io::Error::last_os_error());
    }
    null_on_fd_0()?;
    TAKEN.store(true, Ordering::SeqCst);
    // SAFETY: a new fd of this process, owned by nothing else.
    Ok(unsafe { File::from_raw_fd(commands) })
}

/// Opens `/dev/null` onto fd 0 (inherited by child processes) and notes which file it is.
fn null_on_fd_0() -> std::io::Result<()> {
    // SAFETY: open/dup2/close/fstat on this process's own fds, with a valid path and buffer.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if null < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if null != 0 {
            let moved = libc::dup2(null, 0);
            libc::close(null);
            if moved < 0 {
                return Err(std::io::Error::last_os_error());
            }
        } else {
            libc::fcntl(0, libc::F_SETFD, 0);
        }
        let mut status: libc::stat = std::mem::zeroed();
        if libc::fstat(0, &mut status) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        NULL_DEVICE.store(status.st_dev, Ordering::SeqCst);
        NULL_INODE.store(status.st_ino, Ordering::SeqCst);
    }
    Ok(())
}

/// Whether fd 0 is still the `/dev/null` put there.
fn fd_0_is_ours() -> bool {
    // SAFETY: fstat into a zeroed buffer of the right type.
    unsafe {
        let mut status: libc::stat = std::mem::zeroed();
        libc::fstat(0, &mut status) == 0
            && status.st_dev == NULL_DEVICE.load(Ordering::SeqCst)
            && status.st_ino == NULL_INODE.load(Ordering::SeqCst)
    }
}

pub(super) fn cell_begins() {
    let mut state = state();
    state.running = true;
    state.waiting = false;
    state.answer = None;
    state.rest.clear();
}

/// The cell has ended: its reads still waiting get end-of-file, and fd 0 is `/dev/null` again
/// if the cell closed it or put something else there.
pub(super) fn cell_ends() {
    {
        let mut state = state();
        state.running = false;
        state.rest.clear();
    }
    CHANGED.notify_all();
    if TAKEN.load(Ordering::SeqCst) && !fd_0_is_ours() {
        let _ = null_on_fd_0();
    }
}

/// An answer from the front end: the waiting read's, or dropped when none waits (its read was
/// interrupted or ended with its cell).
pub(super) fn deliver(answer: String) {
    let mut state = state();
    if state.waiting && state.answer.is_none() {
        state.answer = Some(answer);
        drop(state);
        CHANGED.notify_all();
    }
}

enum Asked {
    Answer(String),
    EndOfFile,
    Interrupted,
}

/// Asks the front end once and waits for the answer, the cell's end or an interrupt.
fn ask(request: &InputRequest) -> Asked {
    let look = |state: MutexGuard<'static, State>| {
        CHANGED
            .wait_timeout(state, LOOK_EVERY)
            .unwrap_or_else(|e| e.into_inner())
            .0
    };
    let mut state = state();
    // One request at a time: another thread's is answered first.
    while state.waiting && state.running && !super::guards::interrupted() {
        state = look(state);
    }
    if !state.running {
        return Asked::EndOfFile;
    }
    if super::guards::interrupted() {
        return Asked::Interrupted;
    }
    state.waiting = true;
    state.answer = None;
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(request.to_line().as_bytes());
        let _ = out.flush();
    }
    let asked = loop {
        if let Some(answer) = state.answer.take() {
            break Asked::Answer(answer);
        }
        if !state.running {
            break Asked::EndOfFile;
        }
        if super::guards::interrupted() {
            break Asked::Interrupted;
        }
        state = look(state);
    };
    state.waiting = false;
    drop(state);
    CHANGED.notify_all();
    asked
}

/// A read of fd 0 (from `tchbook_waits::read`): `None` when it is not this module's (fd 0 is
/// not the `/dev/null` put there, or this is not the evaluation process), else what `read`
/// returns.
pub(super) fn read(buffer: *mut c_void, count: usize) -> Option<isize> {
    if !TAKEN.load(Ordering::SeqCst) || !fd_0_is_ours() {
        return None;
    }
    if count == 0 {
        return Some(0);
    }
    let mut state = state();
    if state.rest.is_empty() {
        drop(state);
        let request = InputRequest {
            prompt: String::new(),
            password: false,
        };
        match ask(&request) {
            Asked::Answer(answer) if !answer.is_empty() => {
                state = self::state();
                state.rest = format!("{answer}\n").into_bytes();
            }
            Asked::Answer(_) | Asked::EndOfFile => return Some(0),
            Asked::Interrupted => {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ECANCELED };
                return Some(-1);
            }
        }
    }
    let taken = count.min(state.rest.len());
    // SAFETY: the caller's buffer holds `count` bytes; `taken` is at most that.
    unsafe { std::ptr::copy_nonoverlapping(state.rest.as_ptr(), buffer.cast(), taken) };
    state.rest.drain(..taken);
    Some(taken as isize)
}

/// Receives an answer's text (`context`, the bytes, their length).
pub type AnswerSink = extern "C" fn(*mut c_void, *const u8, usize);

/// The prelude's `input()` and `input_password()` in the kernel: asks the front end for a line
/// with `prompt` (hidden typing when `password`), and gives the answer to `sink`. Returns 0 when
/// answered, 1 when no cell runs (nothing asked), 2 when the user interrupted the cell.
/// The prelude finds it with `dlsym`; not for calling by hand.
///
/// # Safety
/// `prompt` points to `prompt_len` bytes of UTF-8; `sink` accepts `context`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tchbook_input_line(
    prompt: *const u8,
    prompt_len: usize,
    password: bool,
    sink: AnswerSink,
    context: *mut c_void,
) -> c_int {
    // SAFETY: the caller's promise.
    let prompt = unsafe { std::slice::from_raw_parts(prompt, prompt_len) };
    let request = InputRequest {
        prompt: String::from_utf8_lossy(prompt).into_owned(),
        password,
    };
    match ask(&request) {
        Asked::Answer(answer) => {
            sink(context, answer.as_ptr(), answer.len());
            0
        }
        Asked::EndOfFile => 1,
        Asked::Interrupted => 2,
    }
}

/// Keeps [`tchbook_input_line`] in the binary (nothing in it calls the function by name).
pub(super) fn keep() {
    std::hint::black_box(tchbook_input_line as *const () as usize);
}
