//! The writing side of the kernel's line protocol (the messages are `tchbook_wire`'s).

use super::state::shared;
use serde_json::Value;
use std::io::Write;
use std::sync::atomic::Ordering;
use tchbook_wire::{Bundle, Message, StreamName};

/// The first byte of every protocol line ([`tchbook_wire::MARK`]): where the pump meets one, it
/// ends a pending partial line first.
pub(super) const MARKER: u8 = tchbook_wire::MARK as u8;

/// Writes one message. Inside a kernel it is a keyed `TCHBOOK_DISPLAY <json>` line on stdout
/// ([`Message::to_line`]); outside it nothing is written (callers print their text form
/// instead).
///
/// ```
/// use tchbook_prelude::runtime::{Message, emit};
/// emit(&Message::Clear { wait: true });
/// ```
pub fn emit(message: &Message) {
    if !super::state::in_kernel() {
        return;
    }
    let line = message.to_line();
    let mut out = std::io::stdout().lock();
    // Everything printed before this call must reach the pump before the message line.
    let _ = out.flush();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
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

/// A MIME bundle from its JSON object; any other value is shown as its JSON text.
fn bundle(data: Value) -> Bundle {
    match data {
        Value::Object(map) => map,
        other => Bundle::from_iter([("text/plain".to_owned(), Value::String(other.to_string()))]),
    }
}

/// The output metadata from its JSON object; any other value is none.
fn metadata(metadata: Value) -> Bundle {
    match metadata {
        Value::Object(map) => map,
        _ => Bundle::new(),
    }
}

/// The `display` message for a MIME bundle and its output metadata (an image's alt text),
/// optionally with a display id for later updates.
///
/// ```
/// use serde_json::json;
/// use tchbook_prelude::runtime::{Message, display_message};
/// let m = display_message(json!({"text/plain": "hi"}), json!({}), Some("d1"));
/// assert!(matches!(m, Message::Display { display_id: Some(id), .. } if id == "d1"));
/// ```
pub fn display_message(data: Value, meta: Value, display_id: Option<&str>) -> Message {
    Message::Display {
        data: bundle(data),
        metadata: metadata(meta),
        display_id: display_id.map(str::to_owned),
    }
}

/// The `update` message: replaces what an earlier `display` with this id shows, metadata
/// included.
///
/// ```
/// use serde_json::json;
/// use tchbook_prelude::runtime::{Message, update_message};
/// let m = update_message(json!({"text/plain": "2"}), json!({}), "d1");
/// assert!(matches!(m, Message::Update { .. }));
/// ```
pub fn update_message(data: Value, meta: Value, display_id: &str) -> Message {
    Message::Update {
        data: bundle(data),
        metadata: metadata(meta),
        display_id: display_id.to_owned(),
    }
}

/// The `clear` message (Jupyter's `clear_output(wait)`).
///
/// ```
/// use tchbook_prelude::runtime::{Message, clear_message};
/// assert_eq!(clear_message(true), Message::Clear { wait: true });
/// ```
pub fn clear_message(wait: bool) -> Message {
    Message::Clear { wait }
}

/// The `stream` message the pump sends for a partial line (`name` is `"stdout"` or
/// `"stderr"`).
///
/// ```
/// use tchbook_prelude::runtime::{Message, stream_message};
/// let m = stream_message("stdout", "epoch 1 ...");
/// assert!(matches!(m, Message::Stream { text, .. } if text == "epoch 1 ..."));
/// ```
pub fn stream_message(name: &str, text: &str) -> Message {
    let name = match name {
        "stderr" => StreamName::Stderr,
        _ => StreamName::Stdout,
    };
    Message::Stream {
        name,
        text: text.to_owned(),
    }
}
