//! The prelude's side of the kernel contract (DEVELOPERS.md): the live display line protocol,
//! the SIGINT flag and the stdout/stderr pump.
//!
//! The kernel calls [`attach`] once when the evaluation process starts. From then on:
//! - display calls write `TCHBOOK_DISPLAY <json>` lines ([`emit`]), which the kernel turns into
//!   `display_data` / `update_display_data` / `clear_output` messages;
//! - fd 1 and fd 2 go through pipes read by pump threads that forward complete lines unchanged
//!   and in order, and flush a partial line (a `print!` progress bar) as a `stream` op after
//!   ~50 ms without new bytes;
//! - SIGINT sets the flag that [`crate::interrupt::check`] reports.
//!
//! Outside a kernel (tests, benchmarks, `cargo run`) nothing is attached and every display call
//! prints plain text instead.

use serde_json::{Value, json};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The prefix of every protocol line.
///
/// ```
/// assert_eq!(tchbook_prelude::runtime::PROTOCOL_PREFIX, "TCHBOOK_DISPLAY ");
/// ```
pub const PROTOCOL_PREFIX: &str = "TCHBOOK_DISPLAY ";

/// Written before a protocol line that goes through the stdout pump, so the pump can end a
/// pending partial line first. Never reaches the kernel.
const MARKER: u8 = 0x1e;

/// How long a partial line waits for more bytes before the pump flushes it as a `stream` op.
const PARTIAL_LINE_IDLE: Duration = Duration::from_millis(50);

// Names the layout of `Shared`: a process whose cells were built against a prelude with another
// layout (its sources changed under a running kernel) must not read this one.
const MAGIC: u64 = 0x7463_6862_6f6f_6b32; // "tchbook2"

/// Process-wide state.
///
/// evcxr links every cell as its own cdylib, and each may carry its own copy of this crate's
/// statics; a flag set by the copy that installed the SIGINT handler would be invisible to a
/// loader compiled into a later cell. So the state lives in one leaked allocation whose address
/// the first copy publishes in an environment variable, tagged with the pid so that a child
/// process inheriting the variable ignores it.
pub(crate) struct Shared {
    magic: u64,
    pub(crate) interrupted: AtomicBool,
    attached: AtomicBool,
    pumping: AtomicBool,
    display_ids: AtomicU64,
    /// evcxr's `:fmt {:#?}` for std values ([`crate::display::set_plain_format`]).
    pub(crate) plain_pretty: AtomicBool,
    /// evcxr's `:types` for std values.
    pub(crate) plain_types: AtomicBool,
}

const STATE_VAR: &str = "TCHBOOK_PRELUDE_STATE";

pub(crate) fn shared() -> &'static Shared {
    static LOCAL: OnceLock<&'static Shared> = OnceLock::new();
    LOCAL.get_or_init(|| {
        if let Some(found) = published_state() {
            return found;
        }
        let state: &'static Shared = Box::leak(Box::new(Shared {
            magic: MAGIC,
            interrupted: AtomicBool::new(false),
            attached: AtomicBool::new(false),
            pumping: AtomicBool::new(false),
            display_ids: AtomicU64::new(0),
            plain_pretty: AtomicBool::new(false),
            plain_types: AtomicBool::new(false),
        }));
        let value = format!("{}:{:p}", std::process::id(), state as *const Shared);
        // SAFETY: set once, early (attach or the first display/interrupt call), before cells
        // start threads that read the environment; libtorch's threads do not call getenv then.
        unsafe { std::env::set_var(STATE_VAR, value) };
        state
    })
}

fn published_state() -> Option<&'static Shared> {
    let value = std::env::var(STATE_VAR).ok()?;
    let (pid, addr) = value.split_once(':')?;
    if pid.parse::<u32>().ok()? != std::process::id() {
        return None;
    }
    let addr = usize::from_str_radix(addr.trim_start_matches("0x"), 16).ok()?;
    if addr == 0 || addr % std::mem::align_of::<Shared>() != 0 {
        return None;
    }
    // SAFETY: the pid matches, so the address was published by this process's own `shared()`,
    // which leaked the allocation; it is never freed. The magic number guards against a value
    // someone else wrote.
    let state = unsafe { &*(addr as *const Shared) };
    (state.magic == MAGIC).then_some(state)
}

/// Whether display calls talk to a kernel (after [`attach`]) or print plain text.
///
/// ```
/// assert!(!tchbook_prelude::runtime::in_kernel()); // doc tests run outside a kernel
/// ```
pub fn in_kernel() -> bool {
    shared().attached.load(Ordering::SeqCst)
}

/// Connects the prelude to the kernel: installs the SIGINT handler, starts the stdout/stderr
/// pump, tunes the allocator ([`tune_allocator`]), loads libtorch's CUDA backend where an NVIDIA
/// driver is ([`crate::device::load_cuda`]; call this before any CUDA question to tch), and marks
/// the process as inside a kernel so display calls emit protocol lines. Idempotent; the kernel
/// calls it once.
///
/// ```no_run
/// tchbook_prelude::runtime::attach();
/// tchbook_prelude::runtime::attach(); // a second call does nothing
/// ```
pub fn attach() {
    let state = shared();
    if state.attached.swap(true, Ordering::SeqCst) {
        return;
    }
    install_sigint_handler();
    install_sigterm_handler();
    tune_allocator();
    crate::backend::load_cuda();
    if std::env::var_os("TCHBOOK_NO_PUMP").is_none() {
        start_pump();
    }
}

// ---------------------------------------------------------------------------------------------
// SIGINT

static INTERRUPT_FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_sigint(_signal: libc::c_int) {
    // Only an atomic store: anything else (allocation, locks, printing) is not
    // async-signal-safe.
    let flag = INTERRUPT_FLAG.load(Ordering::SeqCst);
    if !flag.is_null() {
        // SAFETY: points into the leaked, never-freed shared state.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
    }
}

fn install_sigint_handler() {
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
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// The evaluation process gets SIGTERM when the kernel dies, however it dies (the kernel sets
/// `PR_SET_PDEATHSIG`). The processes its cells started are in its process group and would live
/// on under PID 1; SIGKILL to the group ends them and this process together. Installed only in
/// evcxr's evaluation process leading its own group (the kernel starts it so): a plain program
/// that calls [`attach`] shares its group with the shell that started it.
fn install_sigterm_handler() {
    extern "C" fn on_sigterm(_signal: libc::c_int) {
        // SAFETY: kill(2) is async-signal-safe; 0 is this process's own group.
        unsafe { libc::kill(0, libc::SIGKILL) };
    }
    // SAFETY: getpgrp/getpid cannot fail.
    let leads_group = unsafe { libc::getpgrp() == libc::getpid() };
    if !leads_group || std::env::var_os("EVCXR_IS_RUNTIME").is_none() {
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

// ---------------------------------------------------------------------------------------------
// The protocol

/// Writes one protocol message. Inside a kernel it is a `TCHBOOK_DISPLAY <json>` line on stdout;
/// outside it nothing is written (callers print their text form instead).
///
/// ```
/// use serde_json::json;
/// tchbook_prelude::runtime::emit(&json!({"op": "clear", "wait": true}));
/// ```
pub fn emit(message: &Value) {
    if !in_kernel() {
        return;
    }
    let mut line = Vec::with_capacity(256);
    if shared().pumping.load(Ordering::SeqCst) {
        line.push(MARKER);
    }
    line.extend_from_slice(protocol_line(message).as_bytes());
    let mut out = std::io::stdout().lock();
    // Everything printed before this call must reach the pump before the protocol line.
    let _ = out.flush();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

/// The exact line (with its newline) that carries `message`.
///
/// ```
/// use serde_json::json;
/// let line = tchbook_prelude::runtime::protocol_line(&json!({"op": "clear", "wait": false}));
/// assert_eq!(line, "TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":false}\n");
/// ```
pub fn protocol_line(message: &Value) -> String {
    // serde_json escapes control characters and newlines, so the JSON is always one line.
    format!("{PROTOCOL_PREFIX}{message}\n")
}

/// A fresh display id for [`display_message`]/[`update_message`] (unique in this process).
///
/// ```
/// let a = tchbook_prelude::runtime::new_display_id();
/// let b = tchbook_prelude::runtime::new_display_id();
/// assert_ne!(a, b);
/// ```
pub fn new_display_id() -> String {
    let n = shared().display_ids.fetch_add(1, Ordering::SeqCst);
    format!("tchbook-{}-{n}", std::process::id())
}

/// The `display` op for a MIME bundle, optionally with a display id for later updates.
///
/// ```
/// use serde_json::json;
/// let m = tchbook_prelude::runtime::display_message(json!({"text/plain": "hi"}), Some("d1"));
/// assert_eq!(m["op"], "display");
/// assert_eq!(m["display_id"], "d1");
/// ```
pub fn display_message(data: Value, display_id: Option<&str>) -> Value {
    json!({"op": "display", "data": data, "metadata": {}, "display_id": display_id})
}

/// The `update` op: replaces what an earlier `display` with this id shows.
///
/// ```
/// use serde_json::json;
/// let m = tchbook_prelude::runtime::update_message(json!({"text/plain": "2"}), "d1");
/// assert_eq!(m["op"], "update");
/// ```
pub fn update_message(data: Value, display_id: &str) -> Value {
    json!({"op": "update", "data": data, "metadata": {}, "display_id": display_id})
}

/// The `clear` op (Jupyter's `clear_output(wait)`).
///
/// ```
/// assert_eq!(tchbook_prelude::runtime::clear_message(true)["wait"], true);
/// ```
pub fn clear_message(wait: bool) -> Value {
    json!({"op": "clear", "wait": wait})
}

/// The `stream` op the pump sends for a partial line.
///
/// ```
/// let m = tchbook_prelude::runtime::stream_message("stdout", "epoch 1 ...");
/// assert_eq!(m["text"], "epoch 1 ...");
/// ```
pub fn stream_message(name: &str, text: &str) -> Value {
    json!({"op": "stream", "name": name, "text": text})
}

// ---------------------------------------------------------------------------------------------
// The pump

/// Serialises writes to the kernel's stdout pipe: both pump threads write protocol lines there,
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

fn start_pump() {
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

/// Splits pump input into what goes to the kernel: complete lines unchanged, protocol lines
/// (after a marker) on their own, partial lines as `stream` ops when idle.
pub(crate) struct LineSplitter {
    name: &'static str,
    /// Bytes read; those before `start` are already handed out.
    buf: Vec<u8>,
    start: usize,
    /// How much of the pending bytes is known to hold nothing [`LineSplitter::push`] looks
    /// for: no marker or newline, or (while they start with a marker) no newline after it. A
    /// long line arrives in many 64 KiB reads; scanning it from the start after each read made
    /// one 50 MB line take 25 s (quadratic), and cutting each short line off the front of the
    /// buffer moved the rest every time.
    scanned: usize,
}

/// One thing the pump writes: `Line` to the stream's own fd, `Protocol` to stdout.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk {
    Line(Vec<u8>),
    Protocol(Vec<u8>),
}

impl LineSplitter {
    pub(crate) fn new(name: &'static str) -> Self {
        LineSplitter {
            name,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
        }
    }

    /// The bytes not handed out yet.
    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Hands out the first `end` pending bytes; what is left has not been scanned.
    fn take(&mut self, end: usize) -> Vec<u8> {
        let taken = self.pending()[..end].to_vec();
        self.start += end;
        self.scanned = 0;
        taken
    }

    /// Drops what was handed out, once per read rather than once per line.
    fn compact(&mut self) {
        self.buf.drain(..self.start);
        self.start = 0;
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            if self.pending().first() == Some(&MARKER) {
                // A protocol line: it ends at the next newline.
                let from = self.scanned.max(1);
                match self.pending()[from..].iter().position(|&b| b == b'\n') {
                    Some(n) => {
                        let mut line = self.take(from + n + 1);
                        line.remove(0);
                        out.push(Chunk::Protocol(line));
                    }
                    None => {
                        self.scanned = self.pending().len();
                        break;
                    }
                }
                continue;
            }
            let from = self.scanned;
            let Some(at) = self.pending()[from..]
                .iter()
                .position(|&b| b == MARKER || b == b'\n')
                .map(|p| from + p)
            else {
                self.scanned = self.pending().len();
                break;
            };
            if self.pending()[at] == MARKER {
                // A partial line precedes the protocol line: send it as a stream op so the
                // protocol line starts a line of its own.
                let text = self.take(at);
                out.push(Chunk::Protocol(self.stream_line(&text)));
                continue;
            }
            // A kernel line (EVCXR_..., TCHBOOK_...) glued to the end of a user's partial
            // line would go unrecognised: split the user's part off as a stream op.
            if let Some(p) = token_start(&self.pending()[..at]).filter(|&p| p > 0) {
                let text = self.take(p);
                out.push(Chunk::Protocol(self.stream_line(&text)));
                continue;
            }
            out.push(Chunk::Line(self.take(at + 1)));
        }
        self.compact();
        out
    }

    /// Called when no bytes arrived for a while: the pending partial line, as a `stream` op.
    pub(crate) fn idle(&mut self) -> Option<Chunk> {
        let pending = self.pending();
        if pending.is_empty() || pending[0] == MARKER {
            return None;
        }
        // Never flush (part of) a kernel line: it must reach the kernel whole.
        let end = partial_token_start(pending).unwrap_or(pending.len());
        // Keep an incomplete UTF-8 sequence at the end for the next read.
        let cut = match std::str::from_utf8(&pending[..end]) {
            Ok(_) => end,
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => end,
        };
        if cut == 0 {
            return None;
        }
        let text = self.take(cut);
        self.compact();
        Some(Chunk::Protocol(self.stream_line(&text)))
    }

    fn stream_line(&self, text: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(text);
        protocol_line(&stream_message(self.name, &text)).into_bytes()
    }
}

/// Lines the kernel reads as commands; they are forwarded whole, never as `stream` text.
const KERNEL_TOKENS: [&[u8]; 2] = [b"EVCXR_", b"TCHBOOK_"];

/// Where a complete kernel token starts in `line`.
fn token_start(line: &[u8]) -> Option<usize> {
    (0..line.len()).find(|&p| KERNEL_TOKENS.iter().any(|t| line[p..].starts_with(t)))
}

/// Where a kernel token, complete or still being written, starts in a partial line.
fn partial_token_start(buf: &[u8]) -> Option<usize> {
    (0..buf.len()).find(|&p| {
        let rest = &buf[p..];
        KERNEL_TOKENS
            .iter()
            .any(|t| rest.starts_with(t) || (rest.len() >= 3 && t.starts_with(rest)))
    })
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

// ---------------------------------------------------------------------------------------------
// Input

fn read_reply(request: &str, prompt: &str) -> String {
    {
        let mut out = std::io::stdout().lock();
        let _ = out.flush();
        if in_kernel() {
            // evcxr's protocol: one line asking for input, answered by one line on stdin.
            let _ = writeln!(out, "{request}:{prompt}");
        } else {
            let _ = write!(out, "{prompt}");
        }
        let _ = out.flush();
    }
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    line
}

/// Python's `input(prompt)`: asks the notebook user for a line (Jupyter's input box) and returns
/// it without the newline. Outside a kernel it reads stdin. evcxr cuts the prompt at its first
/// `:`, so keep colons out of it.
///
/// ```no_run
/// let name = tchbook_prelude::runtime::input("Your name");
/// # let _ = name;
/// ```
pub fn input(prompt: &str) -> String {
    read_reply("EVCXR_INPUT_REQUEST", prompt)
}

/// Like [`input`], with the typed text hidden (Python's `getpass`).
///
/// ```no_run
/// let token = tchbook_prelude::runtime::input_password("Token");
/// # let _ = token;
/// ```
pub fn input_password(prompt: &str) -> String {
    read_reply("EVCXR_INPUT_REQUEST_PASSWORD", prompt)
}

// ---------------------------------------------------------------------------------------------
// Process tuning

/// Raises glibc's mmap and trim thresholds so that libtorch's large per-step temporaries (oneDNN
/// allocates ~37 MB per conv step at batch 1000) are reused from the heap instead of being
/// mmapped and unmapped every step — 1.9–2.4× faster on such loops (FINDINGS.md). Applied by
/// [`attach`]; call it at the start of a plain program or benchmark. Returns whether glibc
/// accepted the settings.
///
/// ```
/// assert!(tchbook_prelude::runtime::tune_allocator());
/// ```
pub fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc refuses an mmap threshold above HEAP_MAX_SIZE/2 (32 MiB on 64-bit), so the
        // threshold alone cannot cover a 37 MB block; M_MMAP_MAX = 0 sends every allocation
        // to the heap, and the trim threshold and top pad keep freed memory for the next step.
        const M_TRIM_THRESHOLD: libc::c_int = -1;
        const M_TOP_PAD: libc::c_int = -2;
        const M_MMAP_THRESHOLD: libc::c_int = -3;
        const M_MMAP_MAX: libc::c_int = -4;
        // SAFETY: mallopt only changes allocator parameters.
        unsafe {
            let a = libc::mallopt(M_MMAP_THRESHOLD, 32 << 20);
            let b = libc::mallopt(M_MMAP_MAX, 0);
            let c = libc::mallopt(M_TRIM_THRESHOLD, 1 << 30);
            let d = libc::mallopt(M_TOP_PAD, 64 << 20);
            a == 1 && b == 1 && c == 1 && d == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Sets libtorch's intra-op thread count (`torch.set_num_threads`) and returns the previous one.
/// On a small machine one thread is often fastest for tiny models (FINDINGS.md).
///
/// ```
/// let before = tchbook_prelude::runtime::set_threads(1);
/// assert_eq!(tch::get_num_threads(), 1);
/// tchbook_prelude::runtime::set_threads(before);
/// ```
pub fn set_threads(n: usize) -> usize {
    let before = tch::get_num_threads().max(1) as usize;
    tch::set_num_threads(n.max(1) as i32);
    before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_in_pieces(input: &[u8], piece: usize) -> Vec<Chunk> {
        let mut splitter = LineSplitter::new("stdout");
        let mut out = Vec::new();
        for bytes in input.chunks(piece) {
            out.extend(splitter.push(bytes));
        }
        out
    }

    #[test]
    fn lines_markers_and_tokens_split_the_same_at_any_read_size() {
        let mut input = b"plain line\npartial".to_vec();
        input.push(MARKER);
        input.extend_from_slice(b"TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n");
        input.extend_from_slice(b"user textEVCXR_END_CONTENT\nlast\n");
        let whole = split_in_pieces(&input, input.len());
        assert_eq!(
            whole,
            vec![
                Chunk::Line(b"plain line\n".to_vec()),
                Chunk::Protocol(protocol_line(&stream_message("stdout", "partial")).into_bytes()),
                Chunk::Protocol(b"TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n".to_vec()),
                Chunk::Protocol(protocol_line(&stream_message("stdout", "user text")).into_bytes()),
                Chunk::Line(b"EVCXR_END_CONTENT\n".to_vec()),
                Chunk::Line(b"last\n".to_vec()),
            ]
        );
        for piece in [1, 2, 3, 7, 16] {
            assert_eq!(split_in_pieces(&input, piece), whole, "read size {piece}");
        }
    }

    #[test]
    fn a_50_mb_line_is_split_in_linear_time() {
        // Before the splitter remembered how far it had looked, this took ~20 s: each 64 KiB
        // read rescanned the whole pending line.
        let mut input = vec![b'x'; 50 << 20];
        input.push(b'\n');
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(&out[..], [Chunk::Line(line)] if line.len() == input.len()));
    }

    #[test]
    fn short_lines_are_split_without_moving_the_buffer_per_line() {
        let mut input = Vec::new();
        while input.len() < 50 << 20 {
            input.extend(std::iter::repeat_n(b'x', 1023));
            input.push(b'\n');
        }
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(out.len(), 50 << 10);
    }

    #[test]
    fn a_long_protocol_line_is_split_in_linear_time() {
        let mut input = vec![MARKER];
        input.extend_from_slice(PROTOCOL_PREFIX.as_bytes());
        input.extend(std::iter::repeat_n(b'x', 30 << 20));
        input.push(b'\n');
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(matches!(&out[..], [Chunk::Protocol(line)] if line.len() == input.len() - 1));
    }
}
