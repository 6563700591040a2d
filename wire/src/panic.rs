//! Panics as the kernel reads them, and the hook that reports them.

use crate::Message;
use serde::{Deserialize, Serialize};

/// A panic in the evaluation process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Panic {
    /// The panic's payload as text ([`payload_text`]).
    pub message: String,
    /// `file:line:column`, or empty when the panic has no location.
    pub location: String,
    /// The panicking thread's name, `<unnamed>` when it has none.
    pub thread: String,
    /// Whether it happened on the thread cells run on (the evaluation process's main thread).
    #[serde(rename = "main")]
    pub on_main: bool,
    /// Whether the panicking process asked for libtorch's C++ frames in its reports
    /// ([`cpp_frames_wanted`]); written only when it did.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cpp_frames: bool,
}

/// Whether `TORCH_SHOW_CPP_STACKTRACES=1` is in this process's environment, PyTorch's switch
/// for showing libtorch's C++ frames under an error (as PyTorch reads it, `1` alone turns it
/// on). PyTorch shows the message without them otherwise, and so do tchbook's reports.
pub fn cpp_frames_wanted() -> bool {
    std::env::var("TORCH_SHOW_CPP_STACKTRACES").is_ok_and(|value| value.trim() == "1")
}

impl Default for Panic {
    /// What a panic line without fields means: a panic of the cell itself.
    fn default() -> Self {
        Panic {
            message: String::new(),
            location: String::new(),
            thread: String::new(),
            on_main: true,
            cpp_frames: false,
        }
    }
}

impl Panic {
    /// The panic a hook is told about, `on_main` when it happened on the cells' thread.
    pub fn from_hook(info: &std::panic::PanicHookInfo<'_>, on_main: bool) -> Panic {
        let current = std::thread::current();
        Panic {
            message: payload_text(info.payload())
                .unwrap_or("Box<dyn Any>")
                .to_owned(),
            location: info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default(),
            thread: current.name().unwrap_or("<unnamed>").to_owned(),
            on_main,
            cpp_frames: cpp_frames_wanted(),
        }
    }

    /// A panic in a thread the cell spawned does not end the cell.
    pub fn ends_cell(&self) -> bool {
        self.on_main
    }

    /// A panic that does not end the cell, as std's hook would have printed it: stderr text.
    ///
    /// ```
    /// let panic = tchbook_wire::Panic {
    ///     message: "boom".into(),
    ///     location: "src/lib.rs:3:5".into(),
    ///     thread: "worker".into(),
    ///     on_main: false,
    ///     cpp_frames: false,
    /// };
    /// assert_eq!(panic.thread_text(), "thread 'worker' panicked at src/lib.rs:3:5:\nboom\n");
    /// ```
    pub fn thread_text(&self) -> String {
        format!(
            "thread '{}' panicked at {}:\n{}\n",
            self.thread, self.location, self.message
        )
    }
}

/// The text of a panic payload: what `panic!` was given, when that is a string.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
/// assert_eq!(tchbook_wire::payload_text(&*payload), Some("boom 1"));
/// ```
pub fn payload_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Reports every panic from now on as a [`Message::Panic`] handed to `write`, instead of the
/// default hook's text (which, with the `RUST_BACKTRACE=1` evcxr sets, buries the message in a
/// backtrace). Call it on the thread cells run on: a panic there ends the cell, a panic in a
/// thread a cell spawned does not.
///
/// It must be installed from the cells' side of the evaluation process (the prelude's
/// `runtime::attach`, or a cell): the cells link their own libstd, so a hook set by the kernel
/// binary would never see their panics.
///
/// ```
/// use std::sync::Mutex;
/// static SEEN: Mutex<Vec<tchbook_wire::Message>> = Mutex::new(Vec::new());
/// tchbook_wire::install_panic_hook(|m| SEEN.lock().unwrap().push(m.clone()));
/// let _ = std::panic::catch_unwind(|| panic!("boom"));
/// let _ = std::panic::take_hook();
/// match &SEEN.lock().unwrap()[..] {
///     [tchbook_wire::Message::Panic(p)] => assert!(p.message == "boom" && p.on_main),
///     other => panic!("{other:?}"),
/// }
/// ```
pub fn install_panic_hook(write: fn(&Message)) {
    // Cells' libstd never saw the evaluation process's main thread start, so it has no name
    // there; its id, taken now, tells a cell's own panic from a panic in a thread it spawned.
    let main_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        let on_main = std::thread::current().id() == main_thread;
        write(&Message::Panic(Panic::from_hook(info, on_main)));
    }));
}

/// As [`install_panic_hook`], where the thread cells run on may change: `on_cells_thread` says
/// whether the panicking thread is it (the prelude's, which follows the evaluation process to a
/// new cells' thread when it left the old one in a stopped wait).
pub fn install_panic_hook_for(write: fn(&Message), on_cells_thread: fn() -> bool) {
    std::panic::set_hook(Box::new(move |info| {
        write(&Message::Panic(Panic::from_hook(info, on_cells_thread())));
    }));
}

/// Writes `message` to stdout as its line: the writer for [`install_panic_hook`] in a process
/// without the prelude's pump.
pub fn print_line(message: &Message) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(message.to_line().as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<Message>> = Mutex::new(Vec::new());

    #[test]
    fn the_hook_reports_the_message_the_location_and_the_thread() {
        install_panic_hook(|message| SEEN.lock().unwrap().push(message.clone()));
        let line = line!() + 1;
        let _ = std::panic::catch_unwind(|| panic!("on {}", "main"));
        std::thread::Builder::new()
            .name("worker".into())
            .spawn(|| std::panic::panic_any(7_u8))
            .unwrap()
            .join()
            .unwrap_err();
        let _ = std::panic::take_hook();
        let seen = SEEN.lock().unwrap();
        let [Message::Panic(main), Message::Panic(worker)] = &seen[..] else {
            panic!("{seen:?}");
        };
        assert_eq!(main.message, "on main");
        assert!(main.on_main && main.ends_cell());
        assert!(
            main.location.contains(&format!("src/panic.rs:{line}:")),
            "{}",
            main.location
        );
        assert_eq!(worker.message, "Box<dyn Any>");
        assert_eq!(worker.thread, "worker");
        assert!(!worker.ends_cell());
    }
}
