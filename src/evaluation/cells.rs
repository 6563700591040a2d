//! The thread cells run on, and the next one when the user interrupts a cell in a wait that
//! cannot be cut short.
//!
//! A cell blocked on a futex (a channel's `recv`, `Mutex::lock`, `Condvar::wait`) cannot be
//! ended from outside: std waits again after every wake-up, and unwinding out of the wait is
//! unsound (a `Condvar` wait holds its guard with the mutex unlocked; a rendezvous channel's
//! receiver has a packet on its stack that a sender will write into). Killing the process loses
//! every variable. So the evaluation process leaves that thread where it is, for good (`futex`):
//! it never runs another line, so every borrow it holds stays valid, and what it took out of the
//! variable store stays with it. The loop then runs the next cells on a new thread, which the
//! prelude adopts as the cells' thread at its next cell (its interrupt checks, panic report and
//! interruptible waits follow), and tells the kernel which variables the old thread kept.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::mpsc::{Receiver, Sender, channel};

/// The name of the thread that runs cells (the debugger's pause stops it); one left in a stopped
/// wait is renamed [`HELD_THREAD_NAME`].
pub(crate) const CELLS_THREAD_NAME: &str = "tchbook-cells";
/// The name of a cells' thread left in a stopped wait.
const HELD_THREAD_NAME: &std::ffi::CStr = c"tchbook-held";

/// The cell function evcxr generates: the variable store in, the store out.
pub(super) type CellFunction = extern "C" fn(*mut c_void) -> *mut c_void;

/// How a cell given to the cells' thread ended.
pub(super) enum Outcome {
    /// It returned this store.
    Returned(*mut c_void),
    /// The user interrupted it in a wait that cannot be cut short, and its thread stays there.
    Held,
}

struct Job {
    cell: CellFunction,
    store: *mut c_void,
}

struct Reply(Outcome);

// SAFETY: the store is handed from the loop to the one thread that runs the cell and back; no two
// threads use it at once (a held thread never runs again).
unsafe impl Send for Job {}
// SAFETY: as for `Job`.
unsafe impl Send for Reply {}

thread_local! {
    /// On a cells' thread: where it says that it is held.
    static HELD: RefCell<Option<Sender<Reply>>> = const { RefCell::new(None) };
}

/// A thread that runs cells, one at a time.
pub(super) struct CellsThread {
    jobs: Sender<Job>,
    replies: Receiver<Reply>,
}

impl CellsThread {
    pub(super) fn start() -> std::io::Result<CellsThread> {
        let (jobs, job_queue) = channel::<Job>();
        let (reply, replies) = channel::<Reply>();
        std::thread::Builder::new()
            .name(CELLS_THREAD_NAME.to_owned())
            .stack_size(stack_size())
            .spawn(move || {
                HELD.with(|held| *held.borrow_mut() = Some(reply.clone()));
                for job in job_queue {
                    let returned = (job.cell)(job.store);
                    if reply.send(Reply(Outcome::Returned(returned))).is_err() {
                        break;
                    }
                }
            })?;
        Ok(CellsThread { jobs, replies })
    }

    /// Runs `cell` on this thread with `store`, and waits for it.
    pub(super) fn run(&self, cell: CellFunction, store: *mut c_void) -> Outcome {
        if self.jobs.send(Job { cell, store }).is_err() {
            unreachable_thread();
        }
        match self.replies.recv() {
            Ok(Reply(outcome)) => outcome,
            Err(_) => unreachable_thread(),
        }
    }
}

/// The cells' thread ended, which only a panic out of the cell's function does (std aborts on
/// one): nothing to go on with.
fn unreachable_thread() -> ! {
    eprintln!("The evaluation process lost the thread its cells run on.");
    std::process::exit(99);
}

/// The main thread's stack size: cells ran there before they had a thread of their own, and
/// deep recursion in a cell must go as deep as it did (a spawned thread's default is 2 MiB).
fn stack_size() -> usize {
    const DEFAULT: usize = 8 << 20;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return DEFAULT;
    }
    (limit.rlim_cur as usize).clamp(DEFAULT, 1 << 30)
}

/// Called on a cells' thread in a wait the user interrupted and that did not end by itself:
/// tells the loop, and returns whether it was told (on any other thread, nothing happens and
/// the wait goes on). The caller then never returns to the cell.
pub(super) fn say_held() -> bool {
    let Some(reply) = HELD.with(|held| held.borrow_mut().take()) else {
        return false;
    };
    // SAFETY: PR_SET_NAME with a NUL-terminated name of at most 16 bytes names this thread.
    unsafe { libc::prctl(libc::PR_SET_NAME, HELD_THREAD_NAME.as_ptr()) };
    reply.send(Reply(Outcome::Held)).is_ok()
}
