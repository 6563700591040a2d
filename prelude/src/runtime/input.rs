//! Python's `input()` and `getpass()`: evcxr's input request, which the kernel's evaluation
//! process makes and waits for; outside a kernel, the prompt and a line of stdin.

use std::io::Write;
use tchbook_wire::InputRequest;

/// Asks, reads the answer, and stops the cell if the user interrupted it while it waited.
#[track_caller]
fn read_reply(request: InputRequest) -> String {
    let _ = std::io::stdout().lock().flush();
    let mut line = match super::state::in_kernel().then(kernel_input).flatten() {
        Some(ask) => match ask(&request) {
            Asked::Answer(answer) => answer,
            // No cell runs (a thread of an ended cell): nothing to read.
            Asked::EndOfFile => String::new(),
            Asked::Interrupted => {
                let shared = super::state::shared();
                shared
                    .interrupted
                    .store(false, std::sync::atomic::Ordering::SeqCst);
                panic!("{}", super::state::INTERRUPTED)
            }
        },
        None => {
            // Outside a kernel (an exported program, a test): the prompt, and a line of stdin.
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", request.prompt);
            let _ = out.flush();
            drop(out);
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            line
        }
    };
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    // `interrupt::check`, which is a layer above this one.
    if super::state::shared()
        .interrupted
        .swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        panic!("{}", super::state::INTERRUPTED);
    }
    line
}

enum Asked {
    Answer(String),
    EndOfFile,
    Interrupted,
}

/// The kernel's evaluation process asks the front end itself (its `tchbook_input_line`, found
/// with `dlsym`: the kernel's `src/evaluation/stdin.rs`), where stdin is not the front end's.
fn kernel_input() -> Option<fn(&InputRequest) -> Asked> {
    type Sink = extern "C" fn(*mut libc::c_void, *const u8, usize);
    type Ask = unsafe extern "C" fn(*const u8, usize, bool, Sink, *mut libc::c_void) -> libc::c_int;
    static FOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: dlsym with the default scope and a NUL-terminated name.
    let found = *FOUND.get_or_init(|| unsafe {
        libc::dlsym(libc::RTLD_DEFAULT, c"tchbook_input_line".as_ptr()) as usize
    });
    if found == 0 {
        return None;
    }
    extern "C" fn keep(context: *mut libc::c_void, bytes: *const u8, len: usize) {
        // SAFETY: `context` is the `String` below; the bytes are the answer's, `len` long.
        unsafe {
            *(context as *mut String) =
                String::from_utf8_lossy(std::slice::from_raw_parts(bytes, len)).into_owned();
        }
    }
    Some(|request: &InputRequest| {
        let found = *FOUND.get().expect("looked up above");
        // SAFETY: the kernel's binary exports this name for this signature alone.
        let ask: Ask = unsafe { std::mem::transmute(found) };
        let mut answer = String::new();
        let prompt = request.prompt.as_bytes();
        // SAFETY: the prompt's bytes and length; `keep` writes the answer into `answer`.
        let status = unsafe {
            ask(
                prompt.as_ptr(),
                prompt.len(),
                request.password,
                keep,
                &mut answer as *mut String as *mut libc::c_void,
            )
        };
        match status {
            0 => Asked::Answer(answer),
            2 => Asked::Interrupted,
            _ => Asked::EndOfFile,
        }
    })
}

/// Python's `input(prompt)`: asks the notebook user for a line (Jupyter's input box) and returns
/// it without the newline. Outside a kernel it reads stdin. evcxr cuts the prompt at its first
/// `:`, so keep colons out of it. Interrupting the kernel while it waits stops the cell with
/// `KeyboardInterrupt`, as Python's `input()` does; the variables stay.
///
/// ```no_run
/// let name = tchbook_prelude::runtime::input("Your name");
/// # let _ = name;
/// ```
#[track_caller]
pub fn input(prompt: &str) -> String {
    read_reply(InputRequest {
        prompt: prompt.to_owned(),
        password: false,
    })
}

/// Like [`input`], with the typed text hidden (Python's `getpass`).
///
/// ```no_run
/// let token = tchbook_prelude::runtime::input_password("Token");
/// # let _ = token;
/// ```
#[track_caller]
pub fn input_password(prompt: &str) -> String {
    read_reply(InputRequest {
        prompt: prompt.to_owned(),
        password: true,
    })
}
