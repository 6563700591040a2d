//! The stdout/stderr pump: fds 1 and 2 become pipes read by one thread, which forwards what
//! the cell writes to the kernel ([`super::splitter`] decides how).
//!
//! Order is the reason for one thread and one way out. The kernel (through evcxr) reads the
//! process's stdout and stderr on two threads of its own, so a line on each, written one after
//! the other, could reach the notebook either way round: `println!` then `eprintln!` showed the
//! stderr line in the middle of the stdout text. So stderr's complete lines travel on stdout too,
//! as `stream` messages named stderr, behind everything written to stdout before them. Of two
//! pipes that are both readable at once, stdout is read first: nothing tells which was written
//! first, and print-then-report is the common order.
//!
//! Between cells the way out is the kernel's stderr pipe instead. evcxr reads the process's
//! stdout only while a cell runs, but stderr all the time; what a thread of the process writes
//! after its cell ended (a widget's callback answering a slider moved then, a training thread's
//! progress) must reach the kernel at once, not with the next cell. So from the end-of-cell line
//! (which the pump sees go by) to the start of the next cell ([`cell_begins`], called by
//! `run_cell`), every line goes to stderr as a keyed message (text as a `stream` message named
//! for its stream), which the kernel reads as it reads them on stdout.

use super::splitter::{Chunk, LineSplitter};
use super::state::shared;
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tchbook_wire::{Message, StreamName};

/// How long a partial line waits for more bytes before the pump flushes it as a `stream`
/// message.
const PARTIAL_LINE_IDLE: Duration = Duration::from_millis(50);
/// How long a partial line waits at most while more bytes keep coming without a newline
/// (progress dots): ipykernel's `OutStream` flushes every 200 ms too.
const PARTIAL_LINE_MAX_WAIT: Duration = Duration::from_millis(200);
/// How long a partial line may grow before it is sent anyway.
const PARTIAL_LINE_MAX_BYTES: usize = 1 << 20;

/// Serialises writes to the kernel's stdout pipe: both pump threads write message lines there,
/// and a line longer than PIPE_BUF written by two threads at once could interleave.
static ORIGINAL_OUT: Mutex<libc::c_int> = Mutex::new(-1);
/// The kernel's stderr pipe, the way out between cells.
static ORIGINAL_ERR: AtomicI32 = AtomicI32::new(-1);
/// The end-of-cell line as the evaluation process writes it (keyed), which starts the time
/// between cells.
static END_OF_CELL: OnceLock<Vec<u8>> = OnceLock::new();

/// A cell starts: the pump's lines go to stdout again, where evcxr reads the cell's output.
pub(super) fn cell_begins() {
    shared().between_cells.store(false, Ordering::SeqCst);
}

fn write_fd(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writing from a valid slice to an fd we own.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

pub(super) fn start_pump() {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: plain fd juggling; on any failure we leave fds 1 and 2 untouched.
    unsafe {
        let out = libc::dup(1);
        let err = libc::dup(2);
        if out < 0 || err < 0 {
            return;
        }
        let mut out_pipe = [0; 2];
        let mut err_pipe = [0; 2];
        if libc::pipe(out_pipe.as_mut_ptr()) != 0 || libc::pipe(err_pipe.as_mut_ptr()) != 0 {
            return;
        }
        for fd in [out, err, out_pipe[0], err_pipe[0]] {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        // The pump never waits in read: a pipe found ready by poll may have been drained since
        // (see `drain`), and a blocked pump blocks every writer once the other pipe fills.
        for fd in [out_pipe[0], err_pipe[0]] {
            libc::fcntl(
                fd,
                libc::F_SETFL,
                libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
            );
        }
        *ORIGINAL_OUT.lock().unwrap_or_else(|e| e.into_inner()) = out;
        ORIGINAL_ERR.store(err, Ordering::SeqCst);
        let end_of_cell = tchbook_wire::keyed(tchbook_wire::commands::EXECUTION_COMPLETE);
        let _ = END_OF_CELL.set(format!("{end_of_cell}\n").into_bytes());
        libc::dup2(out_pipe[1], 1);
        libc::dup2(err_pipe[1], 2);
        libc::close(out_pipe[1]);
        libc::close(err_pipe[1]);
        shared().pumping.store(true, Ordering::SeqCst);
        let (out_read, err_read) = (out_pipe[0], err_pipe[0]);
        keep_last_words([out_read, err_read], out);
        std::thread::Builder::new()
            .name("tchbook-pump".into())
            .spawn(move || pump([(out_read, out), (err_read, err)]))
            .ok();
    }
    // Rust's stdout is line-buffered: `print!("50%")` stays in its buffer and never reaches the
    // pipe. A separate thread flushes it; the pump itself must not, because a user thread may
    // hold the stdout lock while blocked on a full pipe that only the pump drains.
    std::thread::Builder::new()
        .name("tchbook-flush".into())
        .spawn(|| {
            loop {
                std::thread::sleep(PARTIAL_LINE_IDLE / 2);
                let _ = std::io::stdout().flush();
            }
        })
        .ok();
}

/// The pipes' read ends and the kernel's stdout, for [`on_abort`].
static LAST_WORDS: [AtomicI32; 3] = [AtomicI32::new(-1), AtomicI32::new(-1), AtomicI32::new(-1)];

/// An aborting process (a failed allocation: std writes `memory allocation of N bytes failed`
/// to stderr, then aborts; libtorch's `terminate called after ...`; a segfault's report) dies
/// before the pump can forward what it wrote last, and the kernel could not say why it died.
/// On SIGABRT, what waits in the pipes goes straight to the kernel's stdout, where it reads a
/// dead process's last lines; then the abort goes on.
fn keep_last_words(pipes: [libc::c_int; 2], kernel_out: libc::c_int) {
    for (slot, fd) in LAST_WORDS.iter().zip([pipes[0], pipes[1], kernel_out]) {
        slot.store(fd, Ordering::SeqCst);
    }
    // SAFETY: a zeroed sigaction is valid; the handler only reads and writes fds
    // (async-signal-safe) and returns, after which abort(3) restores the default action.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
}

extern "C" fn on_abort(_signal: libc::c_int) {
    let out = LAST_WORDS[2].load(Ordering::SeqCst);
    let mut buffer = [0u8; 4096];
    for pipe in &LAST_WORDS[..2] {
        let fd = pipe.load(Ordering::SeqCst);
        if fd < 0 || out < 0 {
            continue;
        }
        loop {
            // SAFETY: read(2)/write(2) on fds this process owns, into and from a stack buffer;
            // the pipes are non-blocking, so this ends when they are empty.
            let n = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
            if n <= 0 {
                break;
            }
            // SAFETY: as above.
            unsafe { libc::write(out, buffer.as_ptr().cast(), n as usize) };
        }
    }
}

/// One stream's pipe and what the pump knows of it.
struct Source {
    name: StreamName,
    /// The pipe's read end; -1 once it is closed (poll skips negative fds).
    read_fd: libc::c_int,
    /// The fd the stream had before the pump took it over.
    own_fd: libc::c_int,
    splitter: LineSplitter,
    last_byte: Instant,
    /// Since when the pending partial line has been waiting, if there is one.
    partial_since: Option<Instant>,
}

/// Reads the stdout and stderr pipes (in that order) until both are closed.
fn pump(fds: [(libc::c_int, libc::c_int); 2]) {
    let mut sources = [(StreamName::Stdout, fds[0]), (StreamName::Stderr, fds[1])].map(
        |(name, (read_fd, own_fd))| Source {
            name,
            read_fd,
            own_fd,
            splitter: LineSplitter::new(name),
            last_byte: Instant::now(),
            partial_since: None,
        },
    );
    let mut chunk = vec![0u8; 64 * 1024];
    while sources.iter().any(|s| s.read_fd >= 0) {
        let mut polls = sources.each_ref().map(|s| libc::pollfd {
            fd: s.read_fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = PARTIAL_LINE_IDLE.as_millis() as libc::c_int;
        // SAFETY: two valid pollfds.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), 2, timeout) };
        if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
        let [out, err] = &mut sources;
        if out.read_fd >= 0 && polls[0].revents != 0 {
            for piece in read_once(out, &mut chunk) {
                if matches!(piece, Chunk::Kernel(_)) {
                    // A protocol line (evcxr's end of a cell, a display, an export runner's
                    // sync) closes what came before it, and whatever the cell wrote to stderr
                    // before it is in stderr's pipe by now: that goes first, or it would land
                    // in the next cell or after the display.
                    drain(err, &mut chunk);
                }
                deliver(out.name, piece, out.own_fd);
            }
            flush_if_due(out);
        } else {
            flush_if_idle(out);
        }
        if err.read_fd >= 0 && polls[1].revents != 0 {
            for piece in read_once(err, &mut chunk) {
                deliver(err.name, piece, err.own_fd);
            }
            flush_if_due(err);
        } else {
            flush_if_idle(err);
        }
    }
}

/// A partial line that keeps growing (bytes without a newline, arriving faster than
/// [`PARTIAL_LINE_IDLE`]), as a `stream` message once it waited [`PARTIAL_LINE_MAX_WAIT`] or
/// reached [`PARTIAL_LINE_MAX_BYTES`]: the front end shows progress while it is made, and the
/// pump's buffer stays bounded.
fn flush_if_due(source: &mut Source) {
    let waiting = source.splitter.partial_len();
    if waiting == 0 {
        source.partial_since = None;
        return;
    }
    let since = *source.partial_since.get_or_insert_with(Instant::now);
    if since.elapsed() >= PARTIAL_LINE_MAX_WAIT || waiting >= PARTIAL_LINE_MAX_BYTES {
        if let Some(piece) = source.splitter.idle() {
            deliver(source.name, piece, source.own_fd);
        }
        source.partial_since = None;
    }
}

/// A partial line that waited long enough, as a `stream` message.
fn flush_if_idle(source: &mut Source) {
    if source.read_fd >= 0
        && source.last_byte.elapsed() >= PARTIAL_LINE_IDLE
        && let Some(piece) = source.splitter.idle()
    {
        deliver(source.name, piece, source.own_fd);
    }
}

/// Delivers everything in `source`'s pipe now, a partial line included, without waiting.
fn drain(source: &mut Source, chunk: &mut [u8]) {
    while source.read_fd >= 0 {
        let mut poll = libc::pollfd {
            fd: source.read_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout only asks.
        if unsafe { libc::poll(&mut poll, 1, 0) } <= 0 {
            break;
        }
        for piece in read_once(source, chunk) {
            deliver(source.name, piece, source.own_fd);
        }
    }
    if let Some(piece) = source.splitter.idle() {
        deliver(source.name, piece, source.own_fd);
    }
}

/// One read from a ready pipe, split; end of file or an error closes the source.
fn read_once(source: &mut Source, chunk: &mut [u8]) -> Vec<Chunk> {
    // SAFETY: reading into our own buffer.
    let n = unsafe { libc::read(source.read_fd, chunk.as_mut_ptr().cast(), chunk.len()) };
    if n < 0
        && matches!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
        )
    {
        return Vec::new();
    }
    if n <= 0 {
        source.read_fd = -1;
        return Vec::new();
    }
    source.last_byte = Instant::now();
    source.splitter.push(&chunk[..n as usize])
}

fn deliver(name: StreamName, chunk: Chunk, own_fd: libc::c_int) {
    let out = ORIGINAL_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let state = shared();
    if let Chunk::Kernel(bytes) = &chunk
        && name == StreamName::Stdout
        && END_OF_CELL.get() == Some(bytes)
    {
        // Set before the line goes: the next cell (whose start sets it back) can only begin
        // once evcxr has read it.
        state.between_cells.store(true, Ordering::SeqCst);
        write_fd(*out, bytes);
        return;
    }
    let between = state.between_cells.load(Ordering::SeqCst);
    let messages = if between {
        ORIGINAL_ERR.load(Ordering::SeqCst)
    } else {
        *out
    };
    match chunk {
        Chunk::Line(bytes) if name == StreamName::Stderr || between => {
            let message = Message::Stream {
                name,
                text: String::from_utf8_lossy(&bytes).into_owned(),
            };
            write_fd(messages, message.to_line().as_bytes());
        }
        // The prelude's messages; evcxr's own lines go to evcxr whenever they come.
        Chunk::Kernel(bytes) if between && is_message(&bytes) => write_fd(messages, &bytes),
        // A protocol line (an export runner's sync line on stderr, say) goes where it was
        // written.
        Chunk::Line(bytes) | Chunk::Kernel(bytes) => write_fd(own_fd, &bytes),
        Chunk::Stream(bytes) => write_fd(messages, &bytes),
    }
}

/// Whether a protocol line is one of the prelude's messages (`TCHBOOK_DISPLAY ...`).
fn is_message(line: &[u8]) -> bool {
    let line = String::from_utf8_lossy(line);
    tchbook_wire::unkeyed(line.trim_end())
        .is_some_and(|line| line.starts_with(tchbook_wire::PREFIX))
}
