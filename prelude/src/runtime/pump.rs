//! The stdout/stderr pump: fds 1 and 2 become pipes read by two threads, which forward what
//! the cell writes to the kernel ([`super::splitter`] decides how).

use super::splitter::{Chunk, LineSplitter};
use super::state::shared;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a partial line waits for more bytes before the pump flushes it as a `stream`
/// message.
const PARTIAL_LINE_IDLE: Duration = Duration::from_millis(50);

/// Serialises writes to the kernel's stdout pipe: both pump threads write message lines there,
/// and a line longer than PIPE_BUF written by two threads at once could interleave.
static ORIGINAL_OUT: Mutex<libc::c_int> = Mutex::new(-1);

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
        *ORIGINAL_OUT.lock().unwrap_or_else(|e| e.into_inner()) = out;
        libc::dup2(out_pipe[1], 1);
        libc::dup2(err_pipe[1], 2);
        libc::close(out_pipe[1]);
        libc::close(err_pipe[1]);
        shared().pumping.store(true, Ordering::SeqCst);
        let (out_read, err_read) = (out_pipe[0], err_pipe[0]);
        std::thread::Builder::new()
            .name("tchbook-stdout".into())
            .spawn(move || pump(out_read, "stdout", out))
            .ok();
        std::thread::Builder::new()
            .name("tchbook-stderr".into())
            .spawn(move || pump(err_read, "stderr", err))
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

fn pump(read_fd: libc::c_int, name: &'static str, own_fd: libc::c_int) {
    let mut splitter = LineSplitter::new(name);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut last_byte = Instant::now();
    loop {
        let mut poll = libc::pollfd {
            fd: read_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = PARTIAL_LINE_IDLE.as_millis() as libc::c_int;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout) };
        if ready > 0 {
            // SAFETY: reading into our own buffer.
            let n = unsafe { libc::read(read_fd, chunk.as_mut_ptr().cast(), chunk.len()) };
            if n == 0 {
                return;
            }
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            last_byte = Instant::now();
            for piece in splitter.push(&chunk[..n as usize]) {
                deliver(piece, own_fd);
            }
        } else if last_byte.elapsed() >= PARTIAL_LINE_IDLE
            && let Some(piece) = splitter.idle()
        {
            deliver(piece, own_fd);
        }
    }
}

fn deliver(chunk: Chunk, own_fd: libc::c_int) {
    let out = ORIGINAL_OUT.lock().unwrap_or_else(|e| e.into_inner());
    match chunk {
        Chunk::Line(bytes) => write_fd(own_fd, &bytes),
        Chunk::Protocol(bytes) => write_fd(*out, &bytes),
    }
}
