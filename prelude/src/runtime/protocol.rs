//! The writing side of the kernel's line protocol (the messages are `tchbook_wire`'s).

use super::state::shared;
use std::io::Write;
use std::sync::atomic::Ordering;
use tchbook_wire::Message;

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

/// A fresh display id for a [`Message::Display`] and its [`Message::Update`]s (unique in this
/// process).
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
