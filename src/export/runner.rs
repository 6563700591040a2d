//! The headless runner of an exported notebook: `tchbook export` writes this file, unchanged,
//! into every exported project as `src/tchbook_runner.rs` (the kernel also compiles it, for its
//! tests). It depends on std, libc and serde_json only; the prelude is reached through the
//! `attach` function the generated `main` passes in.
//!
//! The exported program runs the cells in order in one process, as "run all" does in the kernel,
//! and its output goes through the same prelude code as in the kernel: [`run`] points fds 1 and 2
//! at pipes of its own and then calls the prelude's `runtime::attach()`, which installs the
//! SIGINT flag, tunes the allocator, loads CUDA where a driver is and starts its stdout/stderr
//! pump. From then on every display, update, clear and partial line reaches this runner as the
//! kernel would see it (DEVELOPERS.md, "The live display line protocol"), a cell's final value
//! arrives as evcxr's `EVCXR_BEGIN_CONTENT` blocks, and the runner turns them into
//! - text on the real stdout/stderr (a batch job's log): streams as printed, each display's
//!   `text/plain` when it appears and, for displays updated in place (progress bars, loss plots,
//!   run tables), again at most every [`UPDATE_PRINT_INTERVAL`] and once more when the cell ends;
//! - with `--record FILE`, each cell's outputs as nbformat outputs (`stream`, `display_data`,
//!   `execute_result`, `error`), updates and clears applied as nbclient applies them, rewritten
//!   after every cell so a killed job keeps what it did. `tchbook export --merge FILE NB.ipynb`
//!   writes them into the notebook.
//!
//! Cell ends are found in-band: the runner writes a sync line to stderr and waits until its
//! reader sees it, then one to stdout, so everything a cell printed (including a partial line the
//! pump flushed to stdout on behalf of stderr) is in before the cell's outputs are closed.
//!
//! Errors are the kernel's: a panic on the main thread ends the cell with an `error` output
//! (`panic`, or `KeyboardInterrupt` for the prelude's interrupt panic) and stops the run, as "run
//! all" stops, unless the cell is tagged `raises-exception`; a panic on another thread is stderr
//! text; an error returned by `?` is printed to stderr as evcxr prints it, and stops the run
//! (later cells may need what that cell did not define).

#![allow(dead_code)]

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Written by the runner at a cell's end; never recorded or printed.
const SYNC: &str = "TCHBOOK_EXPORT_SYNC ";
/// The prelude's live display lines (its `runtime::PROTOCOL_PREFIX`).
const DISPLAY: &str = "TCHBOOK_DISPLAY ";
const BEGIN_CONTENT: &str = "EVCXR_BEGIN_CONTENT ";
const END_CONTENT: &str = "EVCXR_END_CONTENT";
const INPUT_REQUEST: &str = "EVCXR_INPUT_REQUEST";
/// How often an updated display's text is printed again while its cell runs.
const UPDATE_PRINT_INTERVAL: Duration = Duration::from_secs(10);
/// How long a cell end waits for the pump to pass the sync line on.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

const RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const BLUE: &str = "\x1b[1;34m";
const RESET: &str = "\x1b[0m";

/// The notebook a program was exported from.
pub struct Notebook {
    /// The file name, for messages and the record.
    pub name: &'static str,
    /// The version of tchbook that exported it.
    pub exported_by: &'static str,
    /// Per code cell, in order: its index among the notebook's cells, a hash of its source
    /// (`--merge` refuses a record whose cells have changed since) and the source itself.
    pub cells: &'static [(usize, &'static str, &'static str)],
    /// The generated `src/main.rs`: a panic's location is a line there, shown as the cell's line.
    pub main_rs: &'static str,
}

/// What `?` returns in a cell: like evcxr, any error that displays converts, and its message is
/// printed to stderr where it happens.
pub struct CellError;

impl<T: std::fmt::Display> From<T> for CellError {
    fn from(error: T) -> Self {
        eprintln!("{error}");
        CellError
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One cell's outputs as nbformat writes them.
#[derive(Default, Debug)]
struct CellRecord {
    cell: usize,
    hash: &'static str,
    execution_count: usize,
    outputs: Vec<Value>,
}

/// Where a display with an id was recorded, for later updates.
#[derive(Clone, Copy)]
struct Shown {
    cell: usize,
    output: usize,
}

#[derive(Default)]
struct Printed {
    last: Option<Instant>,
    text: String,
    pending: Option<String>,
}

/// Everything the reader threads and the cells share.
#[derive(Default)]
struct Recorder {
    cells: Vec<CellRecord>,
    /// An EVCXR content block being read: its MIME type and lines.
    block: Option<(String, Vec<String>)>,
    /// The current cell's final value, one string per MIME type (as evcxr keeps it).
    value: Vec<(String, String)>,
    clear_pending: bool,
    displays: HashMap<String, Shown>,
    printed: HashMap<String, Printed>,
    synced: [u64; 2],
    /// The real stdout and stderr (before the runner's pipes), for the printed text.
    real: Option<[libc::c_int; 2]>,
    /// Bytes of a line not yet ended, per stream (only without the prelude's pump).
    partial: [Vec<u8>; 2],
}

impl Recorder {
    fn current(&mut self) -> Option<&mut CellRecord> {
        self.cells.last_mut()
    }

    fn print(&self, stream: Stream, text: &str) {
        match self.real {
            Some(fds) => write_fd(fds[stream as usize], text.as_bytes()),
            None => match stream {
                Stream::Stdout => print!("{text}"),
                Stream::Stderr => eprint!("{text}"),
            },
        }
    }

    /// Output that arrives first after a `clear_output(wait=True)` clears the cell first.
    fn push_output(&mut self, output: Value) -> Option<usize> {
        if std::mem::take(&mut self.clear_pending) {
            self.clear_now();
        }
        let cell = self.current()?;
        cell.outputs.push(output);
        Some(cell.outputs.len() - 1)
    }

    fn clear_now(&mut self) {
        let at = self.cells.len().saturating_sub(1);
        if let Some(cell) = self.current() {
            cell.outputs.clear();
        }
        self.displays.retain(|_, shown| shown.cell != at);
    }

    fn stream(&mut self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        self.print(stream, text);
        if self.clear_pending {
            self.clear_pending = false;
            self.clear_now();
        }
        let Some(cell) = self.current() else { return };
        // Consecutive writes to one stream are one output, as nbconvert's coalescing leaves them.
        if let Some(last) = cell.outputs.last_mut() {
            if last["output_type"] == "stream" && last["name"] == stream.name() {
                if let Some(Value::String(existing)) = last.get_mut("text") {
                    existing.push_str(text);
                    return;
                }
            }
        }
        cell.outputs
            .push(json!({"output_type": "stream", "name": stream.name(), "text": text}));
    }

    /// One complete line (without its newline) read from the runner's pipe for `stream`.
    fn line(&mut self, stream: Stream, line: &str) {
        // Content blocks come on stdout only; stderr (the sync line, too) may arrive meanwhile.
        if let (Stream::Stdout, Some((_, lines))) = (stream, &mut self.block) {
            if line == END_CONTENT {
                let (mime, lines) = self.block.take().unwrap_or_default();
                let content = lines.join("\n");
                match self.value.iter_mut().find(|(m, _)| *m == mime) {
                    Some(slot) => slot.1 = content,
                    None => self.value.push((mime, content)),
                }
            } else {
                lines.push(line.to_owned());
            }
            return;
        }
        if let Some(at) = line.find(SYNC) {
            // Without the pump, an unfinished `print!` arrives glued to the sync line.
            self.stream(stream, &line[..at]);
            if let Ok(token) = line[at + SYNC.len()..].trim().parse::<u64>() {
                self.synced[stream as usize] = token;
            }
            return;
        }
        if stream == Stream::Stdout {
            if let Some(mime) = line.strip_prefix(BEGIN_CONTENT) {
                self.block = Some((mime.trim().to_owned(), Vec::new()));
                return;
            }
            if let Some(json) = line.strip_prefix(DISPLAY) {
                if let Ok(Value::Object(message)) = serde_json::from_str::<Value>(json) {
                    if self.protocol(message) {
                        return;
                    }
                }
            }
            if let Some(rest) = line.strip_prefix(INPUT_REQUEST) {
                // `input()`: the prompt goes to the terminal; the prelude reads stdin itself.
                let prompt = rest.split_once(':').map_or("", |(_, p)| p);
                self.print(Stream::Stdout, prompt);
                return;
            }
        }
        self.stream(stream, &format!("{line}\n"));
    }

    /// A `TCHBOOK_DISPLAY` message; false when it is not one this runner knows (then the line is
    /// kept as text, as the kernel keeps it).
    fn protocol(&mut self, mut message: Map<String, Value>) -> bool {
        let object = |message: &mut Map<String, Value>, key: &str| match message.remove(key) {
            Some(Value::Object(map)) => Value::Object(map),
            _ => Value::Object(Map::new()),
        };
        let id = message
            .get("display_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match message.get("op").and_then(Value::as_str) {
            Some("display") => {
                let data = object(&mut message, "data");
                let metadata = object(&mut message, "metadata");
                let text = plain_text(&data);
                self.print(Stream::Stdout, &format!("{text}\n"));
                let output =
                    json!({"output_type": "display_data", "data": data, "metadata": metadata});
                if let (Some(at), Some(id)) = (self.push_output(output), id) {
                    let cell = self.cells.len() - 1;
                    self.displays.insert(id.clone(), Shown { cell, output: at });
                    self.printed.insert(
                        id,
                        Printed {
                            last: Some(Instant::now()),
                            text,
                            pending: None,
                        },
                    );
                }
                true
            }
            Some("update") => {
                let Some(id) = id else { return false };
                let data = object(&mut message, "data");
                let metadata = object(&mut message, "metadata");
                let text = plain_text(&data);
                let shown = self.displays.get(&id).copied();
                let output = shown.and_then(|shown| {
                    self.cells
                        .get_mut(shown.cell)
                        .and_then(|c| c.outputs.get_mut(shown.output))
                });
                if let Some(output) = output {
                    output["data"] = data;
                    output["metadata"] = metadata;
                }
                let printed = self.printed.entry(id).or_default();
                let due = printed
                    .last
                    .is_none_or(|at| at.elapsed() >= UPDATE_PRINT_INTERVAL);
                if due && text != printed.text {
                    printed.last = Some(Instant::now());
                    printed.text = text.clone();
                    printed.pending = None;
                    self.print(Stream::Stdout, &format!("{text}\n"));
                } else if text != printed.text {
                    printed.pending = Some(text);
                }
                true
            }
            Some("clear") => {
                if message.get("wait").and_then(Value::as_bool) == Some(true) {
                    self.clear_pending = true;
                } else {
                    self.clear_now();
                }
                true
            }
            Some("stream") => {
                let stream = match message.get("name").and_then(Value::as_str) {
                    Some("stderr") => Stream::Stderr,
                    _ => Stream::Stdout,
                };
                match message.get("text").and_then(Value::as_str) {
                    Some(text) => {
                        self.stream(stream, text);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// Bytes read from the pipe of `stream`: complete lines are handled, the rest kept.
    fn bytes(&mut self, stream: Stream, bytes: &[u8]) {
        let mut buffer = std::mem::take(&mut self.partial[stream as usize]);
        buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(n) = buffer[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&buffer[start..start + n]).into_owned();
            self.line(stream, &line);
            start += n + 1;
        }
        buffer.drain(..start);
        self.partial[stream as usize] = buffer;
    }

    fn begin(&mut self, cell: usize, hash: &'static str, execution_count: usize) {
        self.value.clear();
        self.block = None;
        self.clear_pending = false;
        self.cells.push(CellRecord {
            cell,
            hash,
            execution_count,
            outputs: Vec::new(),
        });
    }

    /// Closes the current cell: the updated displays' last text, `Took`, the final value.
    fn end(&mut self, took: Option<Duration>) {
        let mut pending: Vec<String> = self
            .printed
            .values_mut()
            .filter_map(|p| {
                let text = p.pending.take()?;
                p.text = text.clone();
                Some(text)
            })
            .collect();
        pending.sort();
        for text in pending {
            self.print(Stream::Stdout, &format!("{text}\n"));
        }
        if let Some(took) = took {
            self.stream(Stream::Stdout, &format!("Took {}ms\n", took.as_millis()));
        }
        let value = std::mem::take(&mut self.value);
        let unit = matches!(value.as_slice(), [(mime, text)] if mime == "text/plain" && text.trim() == "()");
        if value.is_empty() || unit {
            return;
        }
        let mut data = Map::new();
        for (mime, text) in value {
            let parsed = if mime == "application/json" || mime.ends_with("+json") {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            } else {
                Value::String(text)
            };
            data.insert(mime, parsed);
        }
        let data = Value::Object(data);
        self.print(Stream::Stdout, &format!("{}\n", plain_text(&data)));
        let count = self.current().map_or(0, |c| c.execution_count);
        self.push_output(json!({
            "output_type": "execute_result",
            "execution_count": count,
            "data": data,
            "metadata": {},
        }));
    }

    fn error(&mut self, ename: &str, evalue: &str, traceback: Vec<String>) {
        self.print(Stream::Stderr, &format!("{}\n", traceback.join("\n")));
        self.push_output(json!({
            "output_type": "error",
            "ename": ename,
            "evalue": evalue,
            "traceback": traceback,
        }));
    }

    fn to_json(&self, notebook: &Notebook, completed: bool) -> Value {
        let cells: Vec<Value> = self
            .cells
            .iter()
            .map(|c| {
                json!({
                    "cell": c.cell,
                    "source_hash": c.hash,
                    "execution_count": c.execution_count,
                    "outputs": c.outputs,
                })
            })
            .collect();
        json!({
            "tchbook_record": 1,
            "notebook": notebook.name,
            "exported_by": notebook.exported_by,
            "completed": completed,
            "cells": cells,
        })
    }
}

fn plain_text(data: &Value) -> String {
    match data.get("text/plain") {
        Some(Value::String(text)) => text.trim_end_matches('\n').to_owned(),
        Some(other) => other.to_string(),
        None => "<rich output without text/plain>".to_owned(),
    }
}

fn write_fd(fd: libc::c_int, bytes: &[u8]) {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is one of this process's open descriptors (the saved stdout or stderr); the
    // ManuallyDrop keeps it open after the write.
    let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let _ = file.write_all(bytes);
}

// ---------------------------------------------------------------------------------------------
// The process-wide runner

struct Runner {
    recorder: Mutex<Recorder>,
    synced: Condvar,
    notebook: &'static Notebook,
    record: Option<std::path::PathBuf>,
    state: Mutex<CellState>,
    /// The main-thread panic being unwound: message and location.
    panic: Mutex<Option<(String, String)>>,
}

#[derive(Default)]
struct CellState {
    position: usize,
    started: Option<Instant>,
    timing: bool,
    pretty: bool,
    types: bool,
    sync_token: u64,
}

static RUNNER: OnceLock<Runner> = OnceLock::new();

fn runner() -> &'static Runner {
    RUNNER
        .get()
        .expect("tchbook_runner::run starts the notebook")
}

fn lock(runner: &Runner) -> MutexGuard<'_, Recorder> {
    runner.recorder.lock().unwrap_or_else(|e| e.into_inner())
}

fn usage(notebook: &Notebook) -> String {
    format!(
        "{name}, exported by {by}: runs the notebook's cells in order, headless.\n\n\
         usage: {program} [--record FILE]\n\n\
         --record FILE  also write every cell's outputs as Jupyter outputs to FILE (JSON);\n\
         \x20              `tchbook export --merge FILE {name}` puts them into the notebook\n\n\
         Needs libtorch's lib/ on LD_LIBRARY_PATH. Exits 0 when every cell ran, 1 when one\n\
         failed (its error is printed and recorded).",
        name = notebook.name,
        by = notebook.exported_by,
        program = std::env::args()
            .next()
            .unwrap_or_else(|| "notebook".to_owned()),
    )
}

/// Runs the notebook: parses the arguments, captures output, calls `attach` (the prelude's
/// `runtime::attach`), then `cells`, and records and prints what they show.
pub fn run(
    notebook: &'static Notebook,
    attach: fn(),
    interrupt_pending: fn() -> bool,
    cells: fn() -> Result<(), CellError>,
) -> ExitCode {
    let mut record = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--record" => match args.next() {
                Some(path) => record = Some(std::path::PathBuf::from(path)),
                None => {
                    eprintln!("--record needs a file name\n\n{}", usage(notebook));
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("{}", usage(notebook));
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other}\n\n{}", usage(notebook));
                return ExitCode::from(2);
            }
        }
    }
    if RUNNER
        .set(Runner {
            recorder: Mutex::new(Recorder::default()),
            synced: Condvar::new(),
            notebook,
            record,
            state: Mutex::new(CellState::default()),
            panic: Mutex::new(None),
        })
        .is_err()
    {
        eprintln!("tchbook_runner::run was called twice");
        return ExitCode::FAILURE;
    }
    capture_output();
    attach();
    install_panic_hook();
    watch_interrupts(interrupt_pending);
    let outcome = std::panic::catch_unwind(cells);
    let runner = runner();
    let code = match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(CellError)) => {
            sync();
            let at = lock(runner).current().map_or(0, |c| c.execution_count);
            let message = format!(
                "tchbook: the run stopped in In [{at}]: an error returned by `?` (printed above)\n"
            );
            lock(runner).print(Stream::Stderr, &message);
            1
        }
        Err(_) => {
            record_panic();
            1
        }
    };
    let written = write_record(code == 0);
    let _ = std::io::stdout().flush();
    // The pump threads never end; leave without waiting for them.
    std::process::exit(if written { code } else { 1 });
}

/// Points fds 1 and 2 at pipes read by this runner; keeps the real ones for the printed text.
fn capture_output() {
    let runner = runner();
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let mut real = [0; 2];
    for (fd, stream) in [(1, Stream::Stdout), (2, Stream::Stderr)] {
        let mut pipe = [0; 2];
        // SAFETY: plain fd juggling on this process's own descriptors; on failure the stream
        // stays as it is (its output is then printed but not recorded).
        unsafe {
            let saved = libc::dup(fd);
            if saved < 0 || libc::pipe(pipe.as_mut_ptr()) != 0 {
                eprintln!(
                    "tchbook: could not capture {}; it is not recorded",
                    stream.name()
                );
                real[stream as usize] = fd;
                continue;
            }
            libc::fcntl(saved, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(pipe[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::dup2(pipe[1], fd);
            libc::close(pipe[1]);
            real[stream as usize] = saved;
        }
        let read_fd = pipe[0];
        std::thread::Builder::new()
            .name(format!("tchbook-export-{}", stream.name()))
            .spawn(move || read_loop(read_fd, stream))
            .expect("spawning an output reader thread");
    }
    lock(runner).real = Some(real);
}

fn read_loop(fd: libc::c_int, stream: Stream) {
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

fn install_panic_hook() {
    let main_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            (*text).to_owned()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "Box<dyn Any>".to_owned()
        };
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let current = std::thread::current();
        if current.id() == main_thread {
            if let Some(runner) = RUNNER.get() {
                *runner.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some((message, location));
            }
        } else {
            // As the kernel shows a panic in a thread the cell spawned: stderr text.
            eprintln!(
                "thread '{}' panicked at {location}:\n{message}",
                current.name().unwrap_or("<unnamed>")
            );
        }
    }));
}

/// SIGINT (Ctrl-C, or a scheduler's signal) sets the prelude's interrupt flag, which its loops
/// check and answer with a `KeyboardInterrupt` panic. A cell that never checks would run on for
/// ever, so, as the kernel does, the flag gets a grace period (`TCHBOOK_INTERRUPT_GRACE`, default
/// 3 s): still pending after it, the cell is recorded as interrupted and the program exits (130).
fn watch_interrupts(pending: fn() -> bool) {
    let grace = std::env::var("TCHBOOK_INTERRUPT_GRACE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(3), Duration::from_secs_f64);
    let watch = move || {
        let mut since: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if !pending() {
                since = None;
                continue;
            }
            if since.get_or_insert_with(Instant::now).elapsed() < grace {
                continue;
            }
            let evalue = format!(
                "the cell did not stop within the grace period ({:.0?}), so the program ended",
                grace
            );
            let traceback = vec![format!(
                "{RED}KeyboardInterrupt{RESET}{BOLD}: {evalue}{RESET}"
            )];
            lock(runner()).error("KeyboardInterrupt", &evalue, traceback);
            write_record(false);
            std::process::exit(130);
        }
    };
    let _ = std::thread::Builder::new()
        .name("tchbook-export-interrupts".into())
        .spawn(watch);
}

/// Waits until everything written to fds 1 and 2 so far has been read: a sync line through
/// stderr first (whose pump may flush a partial stderr line to stdout on the way), then one
/// through stdout.
fn sync() {
    let runner = runner();
    let token = {
        let mut state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.sync_token += 1;
        state.sync_token
    };
    for stream in [Stream::Stderr, Stream::Stdout] {
        let _ = std::io::stdout().flush();
        match stream {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{SYNC}{token}");
                let _ = out.flush();
            }
            Stream::Stderr => {
                let _ = writeln!(std::io::stderr().lock(), "{SYNC}{token}");
            }
        }
        let deadline = Instant::now() + SYNC_TIMEOUT;
        let mut recorder = lock(runner);
        while recorder.synced[stream as usize] < token {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                recorder.print(
                    Stream::Stderr,
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

/// Starts code cell number `position` (0-based, in notebook order).
pub fn begin(position: usize) {
    let runner = runner();
    let (cell, hash, _) = runner.notebook.cells[position];
    {
        let mut state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.position = position;
        state.started = Some(Instant::now());
    }
    lock(runner).begin(cell, hash, position + 1);
}

/// Ends the current cell: waits for its output, then shows `Took` (under `:timing`) and its
/// final value, and rewrites the record.
pub fn end() {
    let runner = runner();
    sync();
    let took = {
        let state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.started.filter(|_| state.timing).map(|s| s.elapsed())
    };
    lock(runner).end(took);
    write_record(false);
}

/// Runs a cell tagged `raises-exception`: a panic ends the cell with its error, and the run goes
/// on with the next cell (what the cell defined is gone, as in the kernel).
pub fn allow_error(cell: impl FnOnce() -> Result<(), CellError>) -> Result<(), CellError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(cell)) {
        Ok(result) => result,
        Err(_) => {
            record_panic();
            Ok(())
        }
    }
}

fn record_panic() {
    let runner = runner();
    sync();
    let (message, location) = runner
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| ("the cell panicked".to_owned(), String::new()));
    const INTERRUPT: &str = "KeyboardInterrupt";
    let (ename, evalue) = match message.strip_prefix(INTERRUPT) {
        Some(rest) => (INTERRUPT, rest.trim_start_matches(':').trim().to_owned()),
        None => ("panic", message.clone()),
    };
    let shown = if evalue.is_empty() {
        "interrupted"
    } else {
        &evalue
    };
    let mut traceback = vec![format!("{RED}{ename}{RESET}{BOLD}: {shown}{RESET}")];
    if !location.is_empty() {
        let position = runner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .position;
        let cell = runner.notebook.cells.get(position).map_or("", |c| c.2);
        traceback.push(panic_place(&location, runner.notebook.main_rs, cell));
    }
    lock(runner).error(ename, &evalue, traceback);
}

/// Where a panic happened, as the kernel says it: the cell's own line number and text when the
/// location is a line of the cell's code in `src/main.rs`, else the location itself.
fn panic_place(location: &str, main_rs: &str, cell: &str) -> String {
    let mut parts = location.rsplitn(3, ':');
    let (_column, line, file) = (parts.next(), parts.next(), parts.next());
    let text = line
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|_| file.is_some_and(|f| f.ends_with("src/main.rs")))
        .and_then(|l| main_rs.lines().nth(l.checked_sub(1)?));
    let Some(wanted) = text.map(str::trim) else {
        return format!("  at {location}");
    };
    match cell.lines().position(|l| l.trim() == wanted) {
        Some(n) => format!("  at cell line {}\n{BLUE}   |{RESET} {wanted}", n + 1),
        None => format!("  at {location}\n{BLUE}   |{RESET} {wanted}"),
    }
}

/// `:timing`: toggles printing each cell's run time, and shows the new state as evcxr does.
pub fn toggle_timing() {
    let runner = runner();
    let timing = {
        let mut state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.timing = !state.timing;
        state.timing
    };
    command_output(&format!("Timing: {timing}"));
}

/// `:fmt FORMAT`: returns what the prelude's `set_plain_format(pretty, types)` should be told.
pub fn set_format(format: &str) -> (bool, bool) {
    let runner = runner();
    let (pretty, types) = {
        let mut state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.pretty = format.trim() == "{:#?}";
        (state.pretty, state.types)
    };
    let shown = if format.trim().is_empty() {
        "{:?}"
    } else {
        format.trim()
    };
    command_output(&format!("Output format: {shown}"));
    (pretty, types)
}

/// `:types`: toggles type names before std values; returns the prelude's new setting.
pub fn toggle_types() -> (bool, bool) {
    let runner = runner();
    let (pretty, types) = {
        let mut state = runner.state.lock().unwrap_or_else(|e| e.into_inner());
        state.types = !state.types;
        (state.pretty, state.types)
    };
    command_output(&format!("Types: {types}"));
    (pretty, types)
}

/// A `:` command's answer: the cell's value, as evcxr gives it.
fn command_output(text: &str) {
    let runner = runner();
    let mut recorder = lock(runner);
    recorder.value.retain(|(mime, _)| mime != "text/plain");
    recorder
        .value
        .push(("text/plain".to_owned(), format!("{text}\n")));
}

/// Writes the record file (when `--record` was given); false when that failed.
fn write_record(completed: bool) -> bool {
    let runner = runner();
    let Some(path) = &runner.record else {
        return true;
    };
    let json = lock(runner).to_json(runner.notebook, completed);
    let temporary = path.with_extension("partial");
    let written = serde_json::to_vec_pretty(&json)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&temporary, bytes))
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        lock(runner).print(
            Stream::Stderr,
            &format!(
                "tchbook: could not write the record {}: {error}\n",
                path.display()
            ),
        );
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null() -> libc::c_int {
        use std::os::fd::IntoRawFd;
        let file = std::fs::OpenOptions::new().write(true).open("/dev/null");
        file.expect("/dev/null").into_raw_fd()
    }

    fn recorder_with_cell() -> Recorder {
        let mut recorder = Recorder {
            real: Some([null(), null()]), // printed text goes nowhere in tests
            ..Recorder::default()
        };
        recorder.begin(3, "h", 1);
        recorder
    }

    fn lines(recorder: &mut Recorder, text: &str) {
        recorder.bytes(Stream::Stdout, text.as_bytes());
    }

    #[test]
    fn streams_coalesce_and_displays_update_in_place() {
        let mut r = recorder_with_cell();
        lines(&mut r, "epoch 1\nepoch 2\n");
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"display\",\"data\":{\"text/plain\":\"0%\"},\"metadata\":{},\"display_id\":\"p\"}\n",
        );
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"update\",\"data\":{\"text/plain\":\"100%\"},\"metadata\":{},\"display_id\":\"p\"}\n",
        );
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"stream\",\"name\":\"stdout\",\"text\":\"done\"}\n",
        );
        let outputs = &r.cells[0].outputs;
        assert_eq!(outputs.len(), 3, "{outputs:?}");
        assert_eq!(outputs[0]["text"], "epoch 1\nepoch 2\n");
        assert_eq!(outputs[1]["output_type"], "display_data");
        assert_eq!(outputs[1]["data"]["text/plain"], "100%");
        assert_eq!(outputs[2]["text"], "done");
    }

    #[test]
    fn a_final_value_becomes_the_execute_result_after_took() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "EVCXR_BEGIN_CONTENT text/plain\nline 1\nline 2\nEVCXR_END_CONTENT\n\
             EVCXR_BEGIN_CONTENT application/vnd.tchbook.x+json\n{\"n\":1}\nEVCXR_END_CONTENT\n",
        );
        r.end(Some(Duration::from_millis(12)));
        let outputs = &r.cells[0].outputs;
        assert_eq!(outputs[0]["text"], "Took 12ms\n");
        assert_eq!(outputs[1]["output_type"], "execute_result");
        assert_eq!(outputs[1]["execution_count"], 1);
        assert_eq!(outputs[1]["data"]["text/plain"], "line 1\nline 2");
        assert_eq!(outputs[1]["data"]["application/vnd.tchbook.x+json"]["n"], 1);
    }

    #[test]
    fn unit_values_are_not_shown_and_clear_waits_for_the_next_output() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "old\nTCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n",
        );
        assert_eq!(r.cells[0].outputs.len(), 1);
        lines(
            &mut r,
            "new\nEVCXR_BEGIN_CONTENT text/plain\n()\nEVCXR_END_CONTENT\n",
        );
        r.end(None);
        let outputs = &r.cells[0].outputs;
        assert_eq!(outputs.len(), 1, "{outputs:?}");
        assert_eq!(outputs[0]["text"], "new\n");
    }

    #[test]
    fn sync_lines_split_from_a_partial_line_and_are_never_recorded() {
        let mut r = recorder_with_cell();
        lines(&mut r, "50%TCHBOOK_EXPORT_SYNC 7\n");
        r.bytes(Stream::Stderr, b"TCHBOOK_EXPORT_SYNC 7\n");
        assert_eq!(r.synced, [7, 7]);
        assert_eq!(r.cells[0].outputs.len(), 1);
        assert_eq!(r.cells[0].outputs[0]["text"], "50%");
    }

    #[test]
    fn stderr_lines_do_not_enter_a_value_being_read() {
        let mut r = recorder_with_cell();
        lines(&mut r, "EVCXR_BEGIN_CONTENT text/plain\n42\n");
        r.bytes(Stream::Stderr, b"TCHBOOK_EXPORT_SYNC 3\nwarning\n");
        lines(&mut r, "EVCXR_END_CONTENT\n");
        r.end(None);
        assert_eq!(r.synced[Stream::Stderr as usize], 3);
        let outputs = &r.cells[0].outputs;
        assert_eq!(outputs[0]["text"], "warning\n");
        assert_eq!(outputs[1]["data"]["text/plain"], "42");
    }

    #[test]
    fn a_panic_in_the_cells_code_is_placed_on_the_cells_line() {
        let main_rs =
            "fn cells() {\n    tchbook_runner::begin(0);\nlet x = 1;\nassert!(x > 1);\n}\n";
        let cell = "let x = 1;\nassert!(x > 1);";
        let place = panic_place("src/main.rs:4:1", main_rs, cell);
        assert!(place.starts_with("  at cell line 2\n"), "{place}");
        assert!(place.ends_with("assert!(x > 1);"), "{place}");
        let elsewhere = panic_place("/x/prelude/src/data/loader.rs:9:5", main_rs, cell);
        assert_eq!(elsewhere, "  at /x/prelude/src/data/loader.rs:9:5");
    }

    #[test]
    fn unknown_protocol_lines_stay_text() {
        let mut r = recorder_with_cell();
        lines(&mut r, "TCHBOOK_DISPLAY {\"op\":\"dance\"}\n");
        assert_eq!(
            r.cells[0].outputs[0]["text"],
            "TCHBOOK_DISPLAY {\"op\":\"dance\"}\n"
        );
    }
}
