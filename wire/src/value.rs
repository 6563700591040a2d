//! A cell's final value: the code that shows it, and the one reader of its content blocks, which
//! the kernel (through the patched evcxr) and the runner of exported programs share.
//!
//! evcxr shows a cell's final value by calling its `evcxr_display()`, which prints one content
//! block per MIME type (evcxr's convention, which plotters, evcxr_image and many crates follow):
//!
//! ```text
//! EVCXR_BEGIN_CONTENT text/html
//! <table>…</table>
//! EVCXR_END_CONTENT
//! ```
//!
//! Text a cell *prints* is text whatever it holds (a downloaded page may hold those lines), so
//! the blocks a third-party `evcxr_display` prints without the kernel's key are read only between
//! two keyed lines, [`VALUE_BEGIN`] and [`VALUE_END`], which the generated code
//! ([`display_code`]) prints around that call, after the value's expression has been evaluated:
//! what the expression prints comes before them and stays text, as ipykernel keeps a cell's
//! prints apart from the `_repr_html_` of its value. The prelude's own blocks are keyed
//! ([`crate::content_block`]), and read anywhere.

use crate::key::{MARK, line_key, unkeyed_with};
use crate::{BEGIN_CONTENT, END_CONTENT, PANIC_NOTIFICATION};

/// The keyed line the generated code prints just before it calls the final value's
/// `evcxr_display()`: until [`VALUE_END`], a block printed without the key is the value's.
pub const VALUE_BEGIN: &str = "TCHBOOK_VALUE_BEGIN";
/// The keyed line printed when the final value's `evcxr_display()` has returned.
pub const VALUE_END: &str = "TCHBOOK_VALUE_END";

/// The name the generated code binds the final value to (a reference to it), which no cell
/// uses.
const BINDING: &str = "__tchbook_final_value";

/// The code before and after a cell's final expression that shows its value: the expression is
/// evaluated first (what it prints is text), then its `evcxr_display()` is called between the
/// keyed [`VALUE_BEGIN`] and [`VALUE_END`] lines.
///
/// With `mark`, the path of a function compiled once in a dependency of the cell (`fn(end:
/// bool)`, the prelude's `display::__value_mark`, which writes the keyed lines), the marks are
/// calls of it: nothing for each cell to instantiate.
///
/// ```
/// let (before, after) = tchbook_wire::value::display_code(Some("::p::mark"));
/// assert_eq!(
///     format!("{before}x{after}"),
///     "match &(x) { __tchbook_final_value => { ::p::mark(false); \
///      __tchbook_final_value.evcxr_display(); ::p::mark(true); } }"
/// );
/// ```
///
/// Without it (a context without the prelude), in std alone, as a cell cannot name this crate:
/// the key read from the environment as [`crate::keyed`] reads it; without a key every line is
/// protocol anyway, and no mark is written. Each cell compiles this code (about 8 ms of a trivial
/// cell's 75 on two cores, for `env::var` and the writes).
///
/// ```
/// let (before, after) = tchbook_wire::value::display_code(None);
/// let code = format!("{before}1 + 1{after}");
/// assert!(code.starts_with("match &(1 + 1) { __tchbook_final_value => {"));
/// assert!(code.contains("__tchbook_final_value.evcxr_display();"));
/// ```
pub fn display_code(mark: Option<&str>) -> (String, String) {
    match mark {
        Some(mark) => display_code_through(mark),
        None => display_code_in_std(),
    }
}

fn display_code_in_std() -> (String, String) {
    let mark = |line: &str| {
        format!(
            "if let ::std::result::Result::Ok(k) = &__tchbook_key {{ \
             let _ = ::std::io::Write::write_fmt(&mut ::std::io::stdout(), \
             ::std::format_args!(\"{mark}{{}} {line}\\n\", k)); }}",
            mark = MARK.escape_unicode(),
        )
    };
    (
        "match &(".to_owned(),
        format!(
            ") {{ {BINDING} => {{ let __tchbook_key = ::std::env::var({key:?}); {} \
             {BINDING}.evcxr_display(); {} }} }}",
            mark(VALUE_BEGIN),
            mark(VALUE_END),
            key = crate::env::LINE_KEY,
        ),
    )
}

fn display_code_through(mark: &str) -> (String, String) {
    (
        "match &(".to_owned(),
        format!(
            ") {{ {BINDING} => {{ {mark}(false); {BINDING}.evcxr_display(); {mark}(true); }} }}"
        ),
    )
}

/// The line a final value's mark writes: [`VALUE_END`] after its display, else [`VALUE_BEGIN`];
/// keyed, and `None` in a process without a key (where every line is protocol).
pub fn value_mark_line(end: bool) -> Option<String> {
    let key = line_key()?;
    let line = if end { VALUE_END } else { VALUE_BEGIN };
    Some(format!("{}\n", crate::key::keyed_with(Some(&key), line)))
}

/// What one line of the evaluation process's stdout is, read in order by a [`ValueReader`].
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    /// The cell's text (a line without the key, outside a content block).
    Text(&'a str),
    /// A keyed line that is not part of a content block, without its key: one of evcxr's lines
    /// or a prelude message, for the caller (also while a block is open: another thread's
    /// display, an input request).
    Protocol(&'a str),
    /// A line inside a content block, or one of its framing lines: nothing to do yet.
    Consumed,
    /// A content block ended: the value's text for one MIME type.
    Block {
        /// The block's MIME type.
        mime: String,
        /// Its lines, joined with `\n`.
        content: String,
    },
}

/// The block being read: its MIME type, whether it started keyed (then only a keyed end ends
/// it), and its lines so far.
#[derive(Debug)]
struct Open {
    mime: String,
    keyed: bool,
    lines: Vec<String>,
}

/// Reads a cell's content blocks out of its stdout lines, one line at a time: keyed blocks
/// (the prelude's, evcxr's `{:?}` fallback) anywhere, blocks without the key only while the
/// final value's `evcxr_display()` runs ([`VALUE_BEGIN`] … [`VALUE_END`]). One reader per cell.
///
/// ```
/// use tchbook_wire::value::{Read, ValueReader, VALUE_BEGIN, VALUE_END};
/// let mut reader = ValueReader::default();
/// let key = Some("k1");
/// // Printed by the cell: text, whatever it says.
/// assert_eq!(reader.line_with(key, "EVCXR_BEGIN_CONTENT text/html"), Read::Text("EVCXR_BEGIN_CONTENT text/html"));
/// // Printed by the value's own `evcxr_display()`: the value's HTML.
/// assert_eq!(reader.line_with(key, &format!("\u{1e}k1 {VALUE_BEGIN}")), Read::Consumed);
/// assert_eq!(reader.line_with(key, "EVCXR_BEGIN_CONTENT text/html"), Read::Consumed);
/// assert_eq!(reader.line_with(key, "<b>hi</b>"), Read::Consumed);
/// assert_eq!(
///     reader.line_with(key, "EVCXR_END_CONTENT"),
///     Read::Block { mime: "text/html".into(), content: "<b>hi</b>".into() }
/// );
/// assert_eq!(reader.line_with(key, &format!("\u{1e}k1 {VALUE_END}")), Read::Consumed);
/// ```
#[derive(Debug, Default)]
pub struct ValueReader {
    in_value: bool,
    open: Option<Open>,
    /// This process's key, read once at the reader's first line: it is read for every line a
    /// cell prints, and the kernel sets it before anything runs.
    key: Option<Option<String>>,
}

impl ValueReader {
    /// [`Self::line_with`] with this process's key ([`line_key`]).
    pub fn line<'a>(&mut self, line: &'a str) -> Read<'a> {
        let key = self.key.take().unwrap_or_else(line_key);
        let read = self.line_with(key.as_deref(), line);
        self.key = Some(key);
        read
    }

    /// Reads `line` (without its newline), keyed with `key` when it is protocol.
    pub fn line_with<'a>(&mut self, key: Option<&str>, line: &'a str) -> Read<'a> {
        // Without a key (a process outside any kernel) every line counts as keyed.
        let command = unkeyed_with(key, line);
        if let Some(open) = &mut self.open {
            let ends = match command {
                Some(command) => command == END_CONTENT,
                _ => !open.keyed && line == END_CONTENT,
            };
            if ends {
                let open = self.open.take().expect("a block is open");
                return Read::Block {
                    mime: open.mime,
                    content: open.lines.join("\n"),
                };
            }
            return match command {
                // The value's code panicked: its block ends unfinished, and is dropped.
                Some(PANIC_NOTIFICATION) => {
                    self.open = None;
                    self.in_value = false;
                    Read::Protocol(PANIC_NOTIFICATION)
                }
                // Another protocol line meanwhile (a thread's display, an input request); in
                // a process without a key, the block's own line.
                Some(command) if key.is_some() => Read::Protocol(command),
                _ => {
                    open.lines.push(line.to_owned());
                    Read::Consumed
                }
            };
        }
        match command {
            Some(command) => {
                if let Some(mime) = command.strip_prefix(BEGIN_CONTENT) {
                    self.open(mime, true);
                    Read::Consumed
                } else if command == VALUE_BEGIN {
                    self.in_value = true;
                    Read::Consumed
                } else if command == VALUE_END {
                    self.in_value = false;
                    Read::Consumed
                } else {
                    if command == PANIC_NOTIFICATION {
                        self.in_value = false;
                    }
                    Read::Protocol(command)
                }
            }
            None => match line.strip_prefix(BEGIN_CONTENT) {
                Some(mime) if self.in_value => {
                    self.open(mime, false);
                    Read::Consumed
                }
                _ => Read::Text(line),
            },
        }
    }

    fn open(&mut self, mime: &str, keyed: bool) {
        self.open = Some(Open {
            mime: mime
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
            keyed,
            lines: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::keyed_with;

    const KEY: Option<&str> = Some("k1");

    fn read_all(reader: &mut ValueReader, lines: &[String]) -> Vec<String> {
        lines
            .iter()
            .map(|line| format!("{:?}", reader.line_with(KEY, line)))
            .collect()
    }

    fn k(line: &str) -> String {
        keyed_with(KEY, line)
    }

    #[test]
    fn a_keyed_block_ends_only_at_a_keyed_end() {
        let mut reader = ValueReader::default();
        let lines = [
            k("EVCXR_BEGIN_CONTENT text/plain"),
            "a string that says".into(),
            "EVCXR_END_CONTENT".into(),
            k("EVCXR_END_CONTENT"),
        ];
        let read = read_all(&mut reader, &lines);
        assert_eq!(
            read[3],
            r#"Block { mime: "text/plain", content: "a string that says\nEVCXR_END_CONTENT" }"#
        );
    }

    #[test]
    fn blocks_without_the_key_are_text_outside_the_value() {
        let mut reader = ValueReader::default();
        let lines = [
            "EVCXR_BEGIN_CONTENT text/html".to_owned(),
            "<script>alert(1)</script>".into(),
            "EVCXR_END_CONTENT".into(),
            k(VALUE_BEGIN),
            k(VALUE_END),
            "EVCXR_BEGIN_CONTENT text/html".into(),
        ];
        for (line, read) in lines.iter().zip(read_all(&mut reader, &lines)) {
            if !line.starts_with(MARK) {
                assert_eq!(read, format!("Text({line:?})"));
            }
        }
    }

    #[test]
    fn a_wrong_key_does_not_open_the_value() {
        let mut reader = ValueReader::default();
        let forged = keyed_with(Some("k2"), VALUE_BEGIN);
        assert_eq!(reader.line_with(KEY, &forged), Read::Text(&forged));
        let line = "EVCXR_BEGIN_CONTENT text/html";
        assert_eq!(reader.line_with(KEY, line), Read::Text(line));
    }

    #[test]
    fn a_panic_inside_the_value_drops_its_block_and_closes_the_value() {
        let mut reader = ValueReader::default();
        let lines = [
            k(VALUE_BEGIN),
            "EVCXR_BEGIN_CONTENT text/html".into(),
            "<b>half".into(),
            k(PANIC_NOTIFICATION),
            "EVCXR_BEGIN_CONTENT text/html".into(),
        ];
        let read = read_all(&mut reader, &lines);
        assert_eq!(read[3], r#"Protocol("EVCXR_PANIC_NOTIFICATION")"#);
        assert_eq!(read[4], r#"Text("EVCXR_BEGIN_CONTENT text/html")"#);
    }

    #[test]
    fn protocol_lines_inside_a_block_pass_through() {
        let mut reader = ValueReader::default();
        let display = k("TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}");
        let lines = [
            k(VALUE_BEGIN),
            "EVCXR_BEGIN_CONTENT image/png".into(),
            display.clone(),
            "iVBOR".into(),
            "EVCXR_END_CONTENT".into(),
        ];
        let read = read_all(&mut reader, &lines);
        assert_eq!(read[2], format!("Protocol({:?})", &display[4..]));
        assert_eq!(read[4], r#"Block { mime: "image/png", content: "iVBOR" }"#);
    }

    #[test]
    fn without_a_key_every_line_is_protocol() {
        let mut reader = ValueReader::default();
        assert_eq!(
            reader.line_with(None, "EVCXR_BEGIN_CONTENT text/plain"),
            Read::Consumed
        );
        assert_eq!(reader.line_with(None, "42"), Read::Consumed);
        assert_eq!(
            reader.line_with(None, "EVCXR_END_CONTENT"),
            Read::Block {
                mime: "text/plain".into(),
                content: "42".into()
            }
        );
    }
}
