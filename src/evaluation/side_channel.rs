//! The side channel. The kernel asks this process, on the Unix socket named in
//! `TCHBOOK_SIDE_CHANNEL`, for what JupyterLab's Variables and Kernel Usage panels show
//! (`tchbook_wire::side_channel`): one request per connection, one JSON line each way, served by a
//! thread of its own, so nothing is compiled and the cell's stdout carries nothing. The socket
//! has a name in the abstract namespace, not a file, so anyone could connect: a connection is
//! answered only when it comes from the kernel that started this process (its parent, by the
//! connection's credentials), and closed unanswered otherwise.
//!
//! The variables are evcxr's store, which the last cell returned: a cell takes its variables out
//! of it into locals and puts them back at its end, so the store is read only under the lock a
//! cell's start takes (`super::guards::running`), and a request while a cell runs is answered
//! `busy`; GPU usage and the front end's comm messages (the prelude's widgets) are answered at
//! any time. Each cell's library that has variables carries evcxr's `tchbook_variables`, which
//! walks the store; the prelude (in the cells' dependencies) exports `tchbook_prelude_answer`,
//! which turns each value (the store's `Box<dyn Any>`) into its summary. Both are C functions
//! looked up after each cell, so this binary and the cells, built by different compilers, share
//! no Rust types. A kernel without the prelude still gets each variable's name and type.

use std::ffi::c_void;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;
use tchbook_wire::side_channel::{
    Answer, Entry, PRELUDE_ANSWER_SYMBOL, PreludeAnswer, Request, Variable, short_type_name,
};

type Visit = extern "C" fn(*mut c_void, *const u8, usize, *const u8, usize, *const c_void);
type WalkStore = extern "C" fn(*const c_void, Visit, *mut c_void);

/// The store the last cell returned (null before the first cell with variables).
static STORE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// The last `tchbook_variables` found in a cell's library ([`WalkStore`]).
static WALK_STORE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// `tchbook_prelude_answer` ([`PreludeAnswer`]), once a cell links the prelude.
static PRELUDE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Binds the socket the kernel named, if it named one, and serves it on a thread.
pub(super) fn start() {
    let Some(path) = std::env::var_os(tchbook_wire::env::SIDE_CHANNEL) else {
        return;
    };
    let Ok(listener) = tchbook_wire::side_channel::bind(&path) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("tchbook-side-channel".to_owned())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream);
            }
        });
}

/// Whether the other end of `stream` is this process's parent, the kernel, running as the same
/// user (`SO_PEERCRED`: the credentials the kernel had when it connected).
fn from_the_kernel(stream: &UnixStream) -> bool {
    // SAFETY: a zeroed ucred is valid; getsockopt(2) writes at most `len` bytes into it.
    let credentials = unsafe {
        let mut credentials: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        let read = libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut credentials).cast(),
            &mut len,
        );
        (read == 0).then_some(credentials)
    };
    // SAFETY: getppid(2) and getuid(2) cannot fail.
    let (kernel, user) = unsafe { (libc::getppid(), libc::getuid()) };
    credentials.is_some_and(|c| c.pid == kernel && c.uid == user)
}

/// After each cell, before its end is known to the kernel: the store it returned, and the
/// functions its library brings.
pub(super) fn after_cell(library: &libloading::Library, store: *mut c_void) {
    STORE.store(store, Ordering::SeqCst);
    // SAFETY: the symbols have the types their definitions give them (the stores' walk, in
    // tchbook_cellcode's `store.rs` and the prelude, and the prelude's `panels` module, all
    // spelled in `tchbook_wire::side_channel`); the cells' libraries are never unloaded, so the
    // pointers stay valid.
    unsafe {
        if let Ok(walk) = library.get::<WalkStore>(b"tchbook_variables") {
            WALK_STORE.store(*walk as *mut c_void, Ordering::SeqCst);
        }
        if let Ok(prelude) = library.get::<PreludeAnswer>(PRELUDE_ANSWER_SYMBOL.as_bytes()) {
            PRELUDE.store(*prelude as *mut c_void, Ordering::SeqCst);
        }
    }
}

fn serve(stream: UnixStream) {
    if !from_the_kernel(&stream) {
        return;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = String::new();
    if BufReader::new(&stream).read_line(&mut line).is_err() {
        return;
    }
    let answer = answer(line.trim());
    let _ = (&stream).write_all(format!("{answer}\n").as_bytes());
}

/// The answer to a request that is not JSON of the shape its kind needs.
fn unreadable(error: serde_json::Error) -> String {
    Answer::Error {
        message: format!("unreadable request: {error}"),
    }
    .to_line()
}

fn answer(line: &str) -> String {
    // Only the request's kind is read here, its fields skipped unkept: the prelude reads the
    // request itself, so a widget's state (up to the kernel's 16 MiB) is parsed once.
    #[derive(serde::Deserialize)]
    struct Kind {
        op: String,
        comm_id: Option<String>,
    }
    let kind = match serde_json::from_str::<Kind>(line) {
        Ok(kind) => kind,
        Err(error) => return unreadable(error),
    };
    match kind.op.as_str() {
        // GPU memory while a cell runs is the point: no lock, no variables.
        "usage" => {
            return prelude(line, &[])
                .unwrap_or_else(|| Answer::Usage { gpus: Vec::new() }.to_line());
        }
        // The widgets' own table, kept by the thread that answers comm messages.
        "comms" => {
            return prelude(line, &[]).unwrap_or_else(|| {
                Answer::Comms {
                    comms: Default::default(),
                }
                .to_line()
            });
        }
        // A widget moved while a cell runs must reach it: no lock, no variables.
        "comm" => {
            return prelude(line, &[]).unwrap_or_else(|| {
                let comm_id = kind.comm_id.unwrap_or_default();
                Answer::Error {
                    message: format!(
                        "no comm `{comm_id}`: the prelude is not loaded in this kernel"
                    ),
                }
                .to_line()
            });
        }
        _ => {}
    }
    let request = match serde_json::from_str::<Request>(line) {
        Ok(request) => request,
        Err(error) => return unreadable(error),
    };
    let running = super::guards::running();
    if *running {
        return Answer::Busy.to_line();
    }
    let entries = entries();
    let answer = prelude(line, &entries).unwrap_or_else(|| without_prelude(&request, &entries));
    drop(running);
    answer
}

/// The names of the variables in the store the last cell returned, read while no cell runs.
pub(super) fn stored_names() -> Vec<String> {
    entries()
        .iter()
        // SAFETY: the names are UTF-8 strings of the store's, which no cell touches meanwhile.
        .map(|e| unsafe { std::slice::from_raw_parts(e.name, e.name_len) })
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// The store's variables (evcxr's own, `evcxr_*`, left out).
fn entries() -> Vec<Entry> {
    extern "C" fn push(
        context: *mut c_void,
        name: *const u8,
        name_len: usize,
        type_name: *const u8,
        type_len: usize,
        value: *const c_void,
    ) {
        // SAFETY: `context` is the vector below; the name is UTF-8 of that length.
        let (entries, name_text) = unsafe {
            (
                &mut *(context as *mut Vec<Entry>),
                std::slice::from_raw_parts(name, name_len),
            )
        };
        if name_text.starts_with(b"evcxr_") {
            return;
        }
        entries.push(Entry {
            name,
            name_len,
            type_name,
            type_len,
            value,
        });
    }
    let mut entries = Vec::new();
    let walk = WALK_STORE.load(Ordering::SeqCst);
    let store = STORE.load(Ordering::SeqCst);
    if !walk.is_null() && !store.is_null() {
        // SAFETY: `walk` is a `WalkStore` (`after_cell`); the store is the last cell's, and no
        // cell runs (the caller holds the lock).
        let walk: WalkStore = unsafe { std::mem::transmute(walk) };
        walk(store, push, &mut entries as *mut Vec<Entry> as *mut c_void);
    }
    entries
}

/// The prelude's answer, once a cell has linked it.
fn prelude(request: &str, entries: &[Entry]) -> Option<String> {
    extern "C" fn keep(context: *mut c_void, bytes: *const u8, len: usize) {
        // SAFETY: `context` is the `Option<String>` below; the bytes are the answer's.
        unsafe {
            *(context as *mut Option<String>) =
                Some(String::from_utf8_lossy(std::slice::from_raw_parts(bytes, len)).into_owned());
        }
    }
    let function = PRELUDE.load(Ordering::SeqCst);
    if function.is_null() {
        return None;
    }
    let mut answer: Option<String> = None;
    // SAFETY: `function` is a `PreludeAnswer` (`after_cell`), which catches its own panics; the
    // entries point into the store, which no cell touches meanwhile.
    unsafe {
        let function: PreludeAnswer = std::mem::transmute(function);
        function(
            request.as_ptr(),
            request.len(),
            entries.as_ptr(),
            entries.len(),
            keep,
            &mut answer as *mut Option<String> as *mut c_void,
        );
    }
    answer
}

/// Names and types only: a kernel whose cells do not link the prelude.
fn without_prelude(request: &Request, entries: &[Entry]) -> String {
    // SAFETY: the entries' names and type names are UTF-8 strings of the store's.
    let text = |bytes: *const u8, len: usize| unsafe {
        String::from_utf8_lossy(std::slice::from_raw_parts(bytes, len)).into_owned()
    };
    match request {
        Request::Variables => Answer::Variables {
            variables: entries
                .iter()
                .map(|e| {
                    let type_name = short_type_name(&text(e.type_name, e.type_len));
                    Variable {
                        name: text(e.name, e.name_len),
                        value: type_name.clone(),
                        type_name,
                        fields: Vec::new(),
                    }
                })
                .collect(),
        },
        _ => Answer::Error {
            message: "the prelude is not loaded in this kernel".to_owned(),
        },
    }
    .to_line()
}
