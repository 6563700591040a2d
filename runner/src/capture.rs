//! The program's own output captured: fds 1 and 2 pointed at pipes, one reader thread per pipe
//! handing the bytes to the recorder, and the sync that finds a cell's end in-band.

use super::outputs::slot;
use super::process::{lock, runner};
use std::io::Write;
use std::time::{Duration, Instant};
use tchbook_wire::StreamName;

/// Written by the runner at a cell's end; never recorded or printed.
pub(super) const SYNC: &str = "TCHBOOK_EXPORT_SYNC ";
/// How long a cell end waits for the pump to pass the sync line on.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// Points fds 1 and 2 at pipes read by this runner; keeps the real ones for the printed text.
/// A fresh line key (`tchbook_wire::key`) for this run, from the system's random source.
pub(super) fn new_line_key() -> String {
    let mut random = [0u8; 16];
    // SAFETY: getrandom(2) writes at most `random.len()` bytes into the buffer it is given.
    let n = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if n != random.len() as isize {
        // No getrandom (a kernel older than 3.17): std's hasher keys, which std draws from the
        // system's random source, still make a key no printed text can know.
        use std::hash::{BuildHasher, Hasher};
        for (i, half) in random.chunks_mut(8).enumerate() {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_usize(i);
            half.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    tchbook_wire::new_line_key(random)
}

pub(super) fn capture_output() {
    let runner = runner();
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let mut real = [0; 2];
    for (fd, stream) in [(1, StreamName::Stdout), (2, StreamName::Stderr)] {
        let mut pipe = [0; 2];
        // SAFETY: plain fd juggling on this process's own descriptors; on failure the stream
        // stays as it is (its output is then printed but not recorded).
        unsafe {
            let saved = libc::dup(fd);
            if saved < 0 || libc::pipe(pipe.as_mut_ptr()) != 0 {
                eprintln!(
                    "tchbook: could not capture {}; it is not recorded",
                    stream.as_str()
                );
                real[slot(stream)] = fd;
                continue;
            }
            libc::fcntl(saved, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(pipe[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::dup2(pipe[1], fd);
            libc::close(pipe[1]);
            real[slot(stream)] = saved;
        }
        let read_fd = pipe[0];
        std::thread::Builder::new()
            .name(format!("tchbook-export-{}", stream.as_str()))
            .spawn(move || read_loop(read_fd, stream))
            .expect("spawning an output reader thread");
    }
    lock(runner).real = Some(real);
}

fn read_loop(fd: libc::c_int, stream: StreamName) {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let runner = runner();
    // SAFETY: the read end of the runner's own pipe; this thread owns it from here on.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match pipe.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut recorder = lock(runner);
        recorder.bytes(stream, &buffer[..n]);
        drop(recorder);
        runner.synced.notify_all();
    }
}

/// Waits until everything written to fds 1 and 2 so far has been read: a sync line through
/// stderr first (whose pump may flush a partial stderr line to stdout on the way), then one
/// through stdout.
pub(super) fn sync() {
    let runner = runner();
    let token = {
        let mut state = runner.state();
        state.sync_token += 1;
        state.sync_token
    };
    for stream in [StreamName::Stderr, StreamName::Stdout] {
        let _ = std::io::stdout().flush();
        match stream {
            StreamName::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}{token}", tchbook_wire::keyed(SYNC));
                let _ = out.flush();
            }
            StreamName::Stderr => {
                let sync = tchbook_wire::keyed(SYNC);
                let _ = writeln!(std::io::stderr().lock(), "{sync}{token}");
            }
        }
        let deadline = Instant::now() + SYNC_TIMEOUT;
        let mut recorder = lock(runner);
        while recorder.synced[slot(stream)] < token {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                recorder.print(
                    StreamName::Stderr,
                    "tchbook: the cell's output did not arrive within 30 s; its record may be incomplete\n",
                );
                break;
            }
            recorder = runner
                .synced
                .wait_timeout(recorder, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
