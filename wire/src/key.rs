//! The line key: how the kernel tells the lines of its own protocol from the text a cell prints.
//!
//! A cell may print anything, a downloaded page or another notebook's JSON included, and
//! whatever it prints reaches the kernel on the same stdout as the protocol's lines. So every
//! protocol line, the prelude's messages and evcxr's own (`EVCXR_EXECUTION_COMPLETE`, a value's
//! content block, an input request), starts with [`MARK`] and a key the kernel draws at random
//! when it starts and gives the evaluation process in [`crate::env::LINE_KEY`]:
//!
//! ```text
//! \x1e3f9c…(32 hex digits) TCHBOOK_DISPLAY {"op":"clear","wait":true}
//! ```
//!
//! The kernel reads a line as protocol only with that key in front; any other line is text,
//! whatever it contains. The key is never shown: it is not in any output, so no text a notebook
//! printed can carry it. (Code in a cell can read it from its environment, as Python code can read
//! the key in ipykernel's connection file: the key keeps printed data from speaking for the
//! kernel, not the cell's own code.)
//!
//! A process without a key (the prelude's tests, a program run outside any kernel) writes and
//! reads lines without one.

/// The first character of every protocol line (ASCII's record separator). The prelude's pump
/// ends a partial line where it meets one, so that a message written after a `print!` still
/// starts a line.
pub const MARK: char = '\u{1e}';

/// This process's key: [`crate::env::LINE_KEY`] when set and not empty. Read each time: the
/// kernel sets a fresh one at start, over any it inherited.
pub fn line_key() -> Option<String> {
    std::env::var(crate::env::LINE_KEY)
        .ok()
        .filter(|key| !key.is_empty())
}

/// `line` as a protocol line of this process: [`MARK`], the key and a space before it (without
/// a key, `line` itself).
///
/// ```
/// assert_eq!(tchbook_wire::keyed("EVCXR_END_CONTENT"), "EVCXR_END_CONTENT"); // no key here
/// ```
pub fn keyed(line: &str) -> String {
    keyed_with(line_key().as_deref(), line)
}

/// A protocol line that shows itself [`keyed`], for generated code that prints a constant with
/// `{}` (evcxr's `println!("{}", evcxr_internal_runtime::USER_ERROR_OCCURRED)`).
///
/// ```
/// let line = tchbook_wire::Keyed(tchbook_wire::USER_ERROR_OCCURRED);
/// assert_eq!(line.to_string(), tchbook_wire::keyed("EVCXR_ERROR_OCCURRED"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keyed(pub &'static str);

impl std::fmt::Display for Keyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&keyed(self.0))
    }
}

/// [`keyed`] with the key given.
///
/// ```
/// let line = tchbook_wire::keyed_with(Some("k1"), "EVCXR_END_CONTENT");
/// assert_eq!(line, "\u{1e}k1 EVCXR_END_CONTENT");
/// ```
pub fn keyed_with(key: Option<&str>, line: &str) -> String {
    match key {
        Some(key) => format!("{MARK}{key} {line}"),
        None => line.to_owned(),
    }
}

/// The protocol line in `line`, when it carries this process's key (without a key, `line`
/// itself); `None` for text.
///
/// ```
/// // No key in this process: every line is read as it is.
/// assert_eq!(tchbook_wire::unkeyed("EVCXR_END_CONTENT"), Some("EVCXR_END_CONTENT"));
/// ```
pub fn unkeyed(line: &str) -> Option<&str> {
    unkeyed_with(line_key().as_deref(), line)
}

/// [`unkeyed`] with the key given.
///
/// ```
/// use tchbook_wire::unkeyed_with;
/// assert_eq!(unkeyed_with(Some("k1"), "\u{1e}k1 EVCXR_END_CONTENT"), Some("EVCXR_END_CONTENT"));
/// assert_eq!(unkeyed_with(Some("k1"), "EVCXR_END_CONTENT"), None);
/// assert_eq!(unkeyed_with(Some("k1"), "\u{1e}k2 EVCXR_END_CONTENT"), None);
/// ```
pub fn unkeyed_with<'a>(key: Option<&str>, line: &'a str) -> Option<&'a str> {
    let Some(key) = key else {
        return Some(line);
    };
    line.strip_prefix(MARK)?
        .strip_prefix(key)?
        .strip_prefix(' ')
}

/// Whether `line` carries this process's key (never, in a process without one).
///
/// ```
/// assert!(!tchbook_wire::carries_key("EVCXR_END_CONTENT")); // no key here
/// ```
pub fn carries_key(line: &str) -> bool {
    line_key().is_some_and(|key| unkeyed_with(Some(&key), line).is_some())
}

/// A new key: 32 hex digits of the 16 random bytes given (the kernel draws them).
///
/// ```
/// assert_eq!(tchbook_wire::new_line_key([0xab; 16]), "ab".repeat(16));
/// ```
pub fn new_line_key(random: [u8; 16]) -> String {
    random.iter().map(|byte| format!("{byte:02x}")).collect()
}
