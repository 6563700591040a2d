//! Python's `input()` and `getpass()`: evcxr's input request, answered on stdin.

use std::io::Write;
use tchbook_wire::InputRequest;

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
pub fn input_password(prompt: &str) -> String {
    read_reply(InputRequest {
        prompt: prompt.to_owned(),
        password: true,
    })
}
