//! Turns what a cell produces into Jupyter content: the lines of the kernel's line protocol
//! (read with `tchbook_wire`'s types, the ones the prelude writes with; DEVELOPERS.md), final
//! values, panics, compile errors, interrupts and crashes.
//!
//! One job per file: this one reads lines and MIME bundles; `table` lays out `:help`/`:vars`
//! tables; `panic` turns a panic into the cell's error, with `torch` for libtorch's errors in
//! it; `compile` draws rustc's diagnostics against the cell's lines; `reports` has the error
//! report itself and the reports of interrupts, crashes and failures.

mod compile;
mod panic;
mod reports;
mod table;
mod torch;

pub use compile::compile_report;
pub use panic::panic_report;
pub use reports::{
    as_interrupt, crashed_report, failure_report, interrupted_report, say_undone, ErrorReport,
};
pub use table::table_media;
pub use tchbook_wire::Panic;

use jupyter_protocol::Media;
use serde_json::{Map, Value};
use tchbook_wire::{Message, StreamName};

/// One stdout line of a running cell, understood.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Ordinary output (the newline the line ended with is not included).
    Text(String),
    /// `display_data`, with a `display_id` when the display can be updated later.
    Display {
        data: Map<String, Value>,
        metadata: Map<String, Value>,
        display_id: Option<String>,
    },
    /// `update_display_data` of an earlier display.
    Update {
        data: Map<String, Value>,
        metadata: Map<String, Value>,
        display_id: String,
    },
    /// `clear_output`.
    Clear { wait: bool },
    /// Text without a trailing newline (flushed by the prelude's stdout pump).
    Stream { stderr: bool, text: String },
    /// A panic in the evaluation process.
    Panic(Panic),
}

impl From<Message> for Line {
    fn from(message: Message) -> Line {
        match message {
            Message::Display {
                data,
                metadata,
                display_id,
            } => Line::Display {
                data,
                metadata,
                display_id,
            },
            Message::Update {
                data,
                metadata,
                display_id,
            } => Line::Update {
                data,
                metadata,
                display_id,
            },
            Message::Clear { wait } => Line::Clear { wait },
            Message::Stream { name, text } => Line::Stream {
                stderr: name == StreamName::Stderr,
                text,
            },
            Message::Panic(panic) => Line::Panic(panic),
        }
    }
}

/// Reads one line. Only a line with the kernel's key is a message (`tchbook_wire::key`): any
/// other is text, whatever it holds. A keyed line that does not read is shown as text (and
/// logged), never lost, and without its key, which no output may show.
pub fn parse_line(line: &str) -> Line {
    match Message::parse_line(line) {
        None => Line::Text(tchbook_wire::unkeyed(line).unwrap_or(line).to_owned()),
        Some(Ok(message)) => message.into(),
        Some(Err(error)) => {
            let text = tchbook_wire::unkeyed(line).unwrap_or(line);
            tracing::warn!("unreadable message line ({error}): {text}");
            Line::Text(text.to_owned())
        }
    }
}

/// A MIME bundle as `jupyter_protocol` types it.
pub fn media(data: Map<String, Value>) -> Media {
    serde_json::from_value(Value::Object(data)).unwrap_or_default()
}

/// A cell's final value and its output metadata (evcxr gives one string per MIME type, and the
/// prelude the metadata in a block of its own: `tchbook_wire::final_value`).
pub fn value_media(mime: &[(String, String)]) -> (Media, Map<String, Value>) {
    let (data, metadata) = tchbook_wire::final_value(mime);
    (media(data), metadata)
}

/// A cell whose final expression is `()` (a `for`, an `if` that prints): evcxr sends its Debug
/// form, but like Python's `None` it is not a value worth showing.
pub fn is_unit(mime: &[(String, String)]) -> bool {
    matches!(mime, [(kind, text)] if kind == "text/plain" && text.trim() == "()")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_lines_parse_into_operations() {
        let line = r#"TCHBOOK_DISPLAY {"op":"display","data":{"text/html":"<b>x</b>"},"metadata":{},"display_id":"d1"}"#;
        match parse_line(line) {
            Line::Display {
                data, display_id, ..
            } => {
                assert_eq!(data["text/html"], "<b>x</b>");
                assert_eq!(display_id.as_deref(), Some("d1"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_line(r#"TCHBOOK_DISPLAY {"op":"clear","wait":true}"#),
            Line::Clear { wait: true }
        );
        assert_eq!(
            parse_line(r#"TCHBOOK_DISPLAY {"op":"stream","name":"stdout","text":"50%"}"#),
            Line::Stream {
                stderr: false,
                text: "50%".into()
            }
        );
    }

    #[test]
    fn malformed_display_lines_are_kept_as_text() {
        let line = "TCHBOOK_DISPLAY {not json";
        assert_eq!(parse_line(line), Line::Text(line.into()));
        let update_without_id = r#"TCHBOOK_DISPLAY {"op":"update","data":{}}"#;
        assert_eq!(
            parse_line(update_without_id),
            Line::Text(update_without_id.into())
        );
    }

    #[test]
    fn every_message_the_prelude_writes_reads_as_its_line() {
        let data: Map<String, Value> = serde_json::from_str(r#"{"text/plain":"x"}"#).unwrap();
        let panic = Panic {
            message: "boom \"quoted\"\nsecond line".into(),
            location: "src/lib.rs:1:5".into(),
            thread: "<unnamed>".into(),
            on_main: false,
        };
        let cases = [
            (
                Message::display(data.clone(), Some("d".into())),
                Line::Display {
                    data: data.clone(),
                    metadata: Map::new(),
                    display_id: Some("d".into()),
                },
            ),
            (
                Message::update(data.clone(), "d".into()),
                Line::Update {
                    data,
                    metadata: Map::new(),
                    display_id: "d".into(),
                },
            ),
            (Message::Clear { wait: true }, Line::Clear { wait: true }),
            (
                Message::Stream {
                    name: StreamName::Stderr,
                    text: "50%".into(),
                },
                Line::Stream {
                    stderr: true,
                    text: "50%".into(),
                },
            ),
            (Message::Panic(panic.clone()), Line::Panic(panic)),
        ];
        for (message, line) in cases {
            // evcxr hands the kernel lines without their newline.
            assert_eq!(parse_line(message.to_line().trim_end_matches('\n')), line);
        }
    }
}
