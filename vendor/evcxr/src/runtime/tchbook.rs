// tchbook patch: what the evaluation process guards around each cell (change 10), in a tchbook
// kernel only (a line key set; evcxr as published otherwise).
//
// - Standard output and error: the cell may close fd 1 or 2. The end-of-cell line is written
//   to fd 1 after the cell, so a closed fd 1 left the kernel waiting for it forever. A duplicate
//   of each is taken before the cell and put back after it when the cell closed it, with a line
//   saying what the cell's output lost.
// - Standard input: fd 0 is the kernel's command pipe, on which nothing comes while a cell
//   runs, so `std::io::stdin().read_line` in a cell waited forever. A watcher thread looks, while
//   a cell runs, for a thread of this process blocked in `read(0, ...)` (`/proc/self/task/*/
//   syscall`), and asks the kernel for a line for it (`EVCXR_INPUT_REQUEST_STDIN`), once per
//   read (`syscr` in the thread's `io` counts its reads). The kernel's answer arrives on fd 0,
//   where the read takes it. The prelude's `input()` asks by itself and reads with `readv`, which
//   the watcher leaves alone. When the user interrupts the kernel meanwhile (SIGINT, which the
//   prelude's handler passes on to this one), the kernel sends no answer: the watcher puts a
//   directory on fd 0 and wakes the read with SIGUSR2 (installed without SA_RESTART), so the
//   read fails (EISDIR) instead of waiting, and the cell stops, reported as KeyboardInterrupt.
//   fd 0 is the command pipe again when the cell has ended.
// - JupyterLab's panels (`panels`): between cells, the variables evcxr stores, read on request
//   from a socket of this process's own.

mod panels;

pub(super) use panels::after_cell;

use std::ffi::c_int;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// The command `EVCXR_INPUT_REQUEST_STDIN:` asks the kernel for a line for a read of stdin.
pub(crate) const STDIN_REQUEST: &str = "EVCXR_INPUT_REQUEST_STDIN";

/// How often the watcher looks for a read of stdin.
const WATCH_EVERY: Duration = Duration::from_millis(40);

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Whether a cell is running, under a lock the watcher holds from its look at the threads to
/// its request: a read it sees then is the cell's, never the runtime's own read of the next
/// command, which begins only after the cell's end has taken the lock.
static CELL_RUNNING: Mutex<bool> = Mutex::new(false);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Whether fd 0 holds the directory that ends an interrupted read.
static STDIN_REPLACED: AtomicBool = AtomicBool::new(false);
/// The command pipe, duplicated at start, put back on fd 0 after an interrupted read.
static COMMANDS: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_sigint(_signal: c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

extern "C" fn on_wake(_signal: c_int) {}

fn install(signal: c_int, handler: extern "C" fn(c_int), flags: c_int) {
    // SAFETY: a zeroed sigaction is valid; each handler only performs an atomic store or
    // nothing.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// Starts the guards (before the first cell).
pub(super) fn start() {
    if tchbook_wire::line_key().is_none() {
        return;
    }
    panels::start();
    // SAFETY: duplicating this process's own fd 0.
    let commands = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if commands < 0 {
        return;
    }
    COMMANDS.store(commands, Ordering::SeqCst);
    install(libc::SIGINT, on_sigint, libc::SA_RESTART);
    install(libc::SIGUSR2, on_wake, 0);
    ENABLED.store(true, Ordering::SeqCst);
    let _ = std::thread::Builder::new()
        .name("tchbook-stdin".to_owned())
        .spawn(watch);
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

    /// After the cell: fd 0 is the command pipe again, fds 1 and 2 are what they were before
    /// the cell (said on stdout when the cell had closed them).
    pub(super) fn end(self) {
        *running() = false;
        if STDIN_REPLACED.swap(false, Ordering::SeqCst) {
            // SAFETY: fd 0 and the duplicate made at start are this process's own.
            unsafe { libc::dup2(COMMANDS.load(Ordering::SeqCst), 0) };
        }
        let mut lost = Vec::new();
        for (fd, saved) in [1, 2].into_iter().zip(self.saved) {
            if saved < 0 {
                continue;
            }
            if !is_open(fd) {
                // SAFETY: both fds are this process's own.
                unsafe { libc::dup2(saved, fd) };
                lost.push(if fd == 1 { "standard output" } else { "standard error" });
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

fn running() -> std::sync::MutexGuard<'static, bool> {
    CELL_RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `fd` is open. (A cell may replace fd 1 on purpose, as the prelude does when it
/// starts its output pump in the first cell; only a closed one is put back.)
fn is_open(fd: c_int) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// The watcher: asks for a line for each read of stdin a cell makes, and ends such a read
/// when the user interrupts.
fn watch() {
    // SAFETY: gettid cannot fail.
    let me = unsafe { libc::gettid() };
    let mut asked: Option<(libc::pid_t, u64)> = None;
    loop {
        std::thread::sleep(WATCH_EVERY);
        let running = running();
        if !*running || !ENABLED.load(Ordering::SeqCst) {
            asked = None;
            continue;
        }
        let Some(read) = blocked_stdin_read(me) else {
            continue;
        };
        if asked != Some(read) {
            asked = Some(read);
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(tchbook_wire::keyed(&format!("{STDIN_REQUEST}:\n")).as_bytes());
            let _ = out.flush();
        } else if INTERRUPTED.load(Ordering::SeqCst) && !STDIN_REPLACED.load(Ordering::SeqCst) {
            end_read(read.0);
        }
    }
}

/// A thread (other than `skip`) blocked in `read(0, ...)`, with how many reads it has made.
fn blocked_stdin_read(skip: libc::pid_t) -> Option<(libc::pid_t, u64)> {
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        if tid == skip {
            continue;
        }
        let Ok(syscall) = std::fs::read_to_string(entry.path().join("syscall")) else {
            continue;
        };
        let mut fields = syscall.split_whitespace();
        let number = fields.next().and_then(|n| n.parse::<libc::c_long>().ok());
        if number != Some(libc::SYS_read) || fields.next() != Some("0x0") {
            continue;
        }
        let io = std::fs::read_to_string(entry.path().join("io")).ok()?;
        let reads = io
            .lines()
            .find_map(|line| line.strip_prefix("syscr:"))
            .and_then(|n| n.trim().parse().ok())?;
        return Some((tid, reads));
    }
    None
}

/// Ends the read of stdin the thread `tid` is blocked in: fd 0 becomes a directory (a read of
/// it fails with EISDIR, which std does not retry) and SIGUSR2 interrupts the read, which std
/// then retries on the new fd 0.
fn end_read(tid: libc::pid_t) {
    // SAFETY: open/dup2/close on fds of this process; tgkill to a thread of this process with a
    // signal whose handler does nothing.
    unsafe {
        let directory = libc::open(c"/".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if directory < 0 {
            return;
        }
        libc::dup2(directory, 0);
        libc::close(directory);
        STDIN_REPLACED.store(true, Ordering::SeqCst);
        libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR2);
    }
}
