//! The evaluation process: the role of the kernel's binary that loads each cell's library and
//! runs it, where a notebook's variables live. evcxr starts it (this binary with
//! `EVCXR_IS_RUNTIME` set), writes its commands to the process's stdin and reads its stdout and
//! stderr; everything the process does between those is this module's:
//!
//! - this file: the loop. Each `LOAD_AND_RUN` command loads a cell's library (never unloaded:
//!   its types' code and thread-local destructors must outlive it) and has the cells' thread call
//!   the cell's function with evcxr's variable store, which the function returns updated; then
//!   the keyed end-of-cell line. A crash (segfault, illegal instruction, bus error) is reported on stderr
//!   with a backtrace before the process aborts, as evcxr's own loop does.
//! - `commands`: the one reader of the command pipe, which is no longer fd 0: commands go to the
//!   loop, input answers to the read that waits for one (`tchbook_wire::commands`).
//! - `stdin`: fd 0, and every read of it: a read by the cell asks the front end for a line; any
//!   other way of reading fd 0 (a child process, a duplicate, `/dev/stdin`, a read after its
//!   cell ended) gets end-of-file.
//! - `guards`: what a cell may break and the next cell needs: fds 0, 1 and 2 put back after a
//!   cell that closed or replaced them; whether a cell runs, which the panels and stdin read.
//! - `side_channel`: the socket on which the kernel asks for what JupyterLab's Variables and
//!   Kernel Usage panels show, and passes on the front end's comm messages and asks for the open
//!   comms.
//!
//! - the `tchbook-waits` crate (shared with exported programs): the blocking calls an interrupt
//!   ends (sleep, read, write, wait), the binary's own definitions of glibc's, whose `read` hands
//!   reads of fd 0 to `stdin`.
//! - `futex`: the waits an interrupt cannot end (a channel, a lock): the binary's `syscall`
//!   leaves the cells' thread in such a wait, and its `pthread_join` ends a join.
//! - `cells`: the thread cells run on, and a new one after a cell was left in such a wait.

mod cells;
pub(crate) use cells::CELLS_THREAD_NAME;
mod commands;
mod futex;
mod guards;
mod side_channel;
mod stdin;

use cells::{CellFunction, CellsThread, Outcome};
use std::ffi::c_void;
use std::io::Write;
use tchbook_wire::commands::{Command, EXECUTION_COMPLETE};

/// Runs the evaluation process until its command pipe closes; never returns.
pub(crate) fn run() -> ! {
    tchbook_waits::keep();
    tchbook_waits::read_fd_0_with(stdin::read);
    futex::keep();
    stdin::keep();
    install_crash_handlers();
    let commands = match stdin::take_over_fd_0() {
        Ok(commands) => commands,
        Err(error) => {
            eprintln!("The evaluation process could not set up its standard input: {error}");
            std::process::exit(99);
        }
    };
    guards::install_sigint_handler();
    allow_the_debugger();
    side_channel::start();
    let loads = commands::start(commands);
    let mut store: *mut c_void = std::ptr::null_mut();
    let mut libraries = Vec::new();
    let mut cells = start_cells_thread();
    for (library, function) in loads {
        match load_and_run(&cells, &library, &function, store) {
            Ok((loaded, returned)) => {
                store = returned;
                libraries.push(loaded);
            }
            Err(Ran::Held(loaded)) => {
                libraries.push(loaded);
                cells = start_cells_thread();
            }
            Err(Ran::Failed(error)) => {
                let line = Command::LoadAndRun { library, function }.to_line();
                eprintln!("While processing instruction `{line}`, got error: {error}");
                std::process::exit(99);
            }
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", tchbook_wire::keyed(EXECUTION_COMPLETE));
        let _ = out.flush();
    }
    // The libraries stay loaded until the process ends (see the module's docs).
    std::mem::forget(libraries);
    std::process::exit(0);
}

fn start_cells_thread() -> CellsThread {
    CellsThread::start().unwrap_or_else(|error| {
        eprintln!("The evaluation process could not start a thread for its cells: {error}");
        std::process::exit(99);
    })
}

/// How a cell did not return a store.
enum Ran {
    /// Its library could not be loaded, or has no such function.
    Failed(libloading::Error),
    /// The user interrupted it in a wait that cannot be cut short (`cells`): its thread stays
    /// there with what it took from the store, which the kernel has been told; the store as it
    /// was before the cell goes on, less those.
    Held(libloading::Library),
}

impl From<libloading::Error> for Ran {
    fn from(error: libloading::Error) -> Self {
        Ran::Failed(error)
    }
}

/// Loads a cell's library and runs its function on `store`, on the cells' thread, between the
/// cell's guards; returns the library and the store the cell returned.
fn load_and_run(
    cells: &CellsThread,
    library: &str,
    function: &str,
    store: *mut c_void,
) -> Result<(libloading::Library, *mut c_void), Ran> {
    // SAFETY: the library is a cell evcxr just built for this process; loading runs its
    // initialisers, which are the cell's dependencies' own.
    let loaded = unsafe { libloading::Library::new(library) }?;
    // SAFETY: evcxr generates the function with this signature.
    let cell = *unsafe { loaded.get::<CellFunction>(function.as_bytes()) }?;
    // What the store holds before the cell, for naming what a held cell keeps.
    let before = side_channel::stored_names();
    let guard = guards::CellGuard::begin();
    stdin::cell_begins();
    let outcome = cells.run(cell, store);
    let returned = match outcome {
        Outcome::Returned(returned) => returned,
        Outcome::Held => store,
    };
    side_channel::after_cell(&loaded, returned);
    guard.end();
    stdin::cell_ends();
    match outcome {
        Outcome::Returned(_) => Ok((loaded, returned)),
        Outcome::Held => {
            say_what_the_held_cell_keeps(&before);
            Err(Ran::Held(loaded))
        }
    }
}

/// Tells the kernel (through evcxr, on stdout) that the cell ended at the user's interrupt and
/// which variables its thread keeps: those that were in the store before it and are not now.
fn say_what_the_held_cell_keeps(before: &[String]) {
    let after = side_channel::stored_names();
    let mut out = std::io::stdout().lock();
    let report = tchbook_wire::Message::Panic(tchbook_wire::Panic {
        message: tchbook_wire::report::INTERRUPTED.to_owned(),
        ..tchbook_wire::Panic::default()
    });
    let _ = out.write_all(report.to_line().as_bytes());
    for name in before.iter().filter(|name| !after.contains(name)) {
        let held = format!("{}{name}", tchbook_wire::HELD_BY_STOPPED_WAIT);
        let _ = writeln!(out, "{}", tchbook_wire::keyed(&held));
    }
    let notification = tchbook_wire::keyed(tchbook_wire::PANIC_NOTIFICATION);
    let _ = writeln!(out, "{notification}");
    let _ = out.flush();
}

/// Lets the kernel's gdb attach (JupyterLab's debugger). Under Yama's `ptrace_scope = 1`
/// (Ubuntu's default) only an ancestor may attach, and gdb is the kernel's child, not this
/// process's ancestor; naming the kernel (the parent) as tracer admits its descendants. Without
/// Yama the call fails with `EINVAL` and nothing is needed.
fn allow_the_debugger() {
    // SAFETY: prctl(2) with integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_SET_PTRACER,
            libc::getppid() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}

fn install_crash_handlers() {
    extern "C" fn on_crash(signal: libc::c_int) {
        let what = match signal {
            libc::SIGSEGV => "Segmentation fault.",
            libc::SIGILL => "Illegal instruction.",
            libc::SIGBUS => "Bus error.",
            _ => "Unexpected signal.",
        };
        // Not async-signal-safe, as evcxr's own handler: the process is ending anyway, and the
        // backtrace is what makes the crash findable.
        eprintln!("{what}");
        eprintln!("{}", std::backtrace::Backtrace::force_capture());
        std::process::abort();
    }
    for signal in [libc::SIGSEGV, libc::SIGILL, libc::SIGBUS] {
        let _ = guards::install(signal, on_crash, 0);
    }
}
