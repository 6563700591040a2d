//! Python's `input()` and `getpass()`: evcxr's input request, answered on stdin.

use std::io::Write;
use tchbook_wire::InputRequest;

/// Asks, reads the answer, and stops the cell if the user interrupted it while it waited (the
/// kernel then answers with an empty line so the read returns, and the interrupt's flag is set
/// before that answer is written).
#[track_caller]
fn read_reply(request: InputRequest) -> String {
    {
        let mut out = std::io::stdout().lock();
        let _ = out.flush();
        if super::state::in_kernel() {
            // evcxr's protocol: one line asking for input, answered by one line on stdin.
            let _ = out.write_all(request.to_line().as_bytes());
        } else {
            let _ = write!(out, "{}", request.prompt);
        }
        let _ = out.flush();
    }
    let mut line = if super::state::in_kernel() {
        read_answer()
    } else {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        line
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

/// The answer's line from stdin, read a byte at a time with `readv` (not `read`): the kernel's
/// evaluation process asks the front end for a line whenever a cell's thread waits in `read(0)`
/// (a cell's own `std::io::stdin()`), and this request is already made. Unbuffered, so nothing
/// after the line is taken from the kernel's commands.
fn read_answer() -> String {
    let mut bytes = Vec::new();
    let mut byte = 0u8;
    loop {
        let iov = libc::iovec {
            iov_base: (&raw mut byte).cast(),
            iov_len: 1,
        };
        // SAFETY: one iovec over one byte we own.
        let n = unsafe { libc::readv(0, &iov, 1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 || byte == b'\n' {
            break;
        }
        bytes.push(byte);
    }
    String::from_utf8_lossy(&bytes).into_owned()
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
