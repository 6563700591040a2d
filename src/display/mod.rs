//! Turns what a cell produces into Jupyter content: the lines of the kernel's line protocol
//! (read with `tchbook_wire`'s types, the ones the prelude writes with; DEVELOPERS.md), final
//! values, panics, compile errors, interrupts and crashes.
//!
//! One job per file: this one reads lines and MIME bundles; `table` lays out `:help`/`:vars`
//! tables; `compile` draws rustc's diagnostics against the cell's lines; `reports` has the
//! reports of interrupts, crashes and failures of the evaluation process. A panic's report is
//! `tchbook_wire::report`'s, which an exported program shows too.

mod compile;
mod reports;
mod table;

pub(crate) use compile::compile_report;
pub(crate) use reports::{
    ErrorReport, crashed_report, failure_report, interrupted_report, say_undone,
};
pub(crate) use table::table_media;
pub(crate) use tchbook_wire::Panic;
pub(crate) use tchbook_wire::report::{Generated, as_interrupt, panic_report};

use jupyter_protocol::{
    ClearOutput, CommClose, CommId, CommMsg, CommOpen, DisplayData, JupyterMessageContent, Media,
    Transient, UpdateDisplayData,
};
use serde_json::{Map, Value};
use tchbook_wire::{Message, MimeData, StreamName};

/// What one stdout line of a running cell is for the front end.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// Ordinary output (the newline the line ended with is not included).
    Text(String),
    /// Text the prelude's pump sent as it was written: a partial line (no newline yet), or a
    /// line of stderr kept behind the stdout printed before it.
    Stream { name: StreamName, text: String },
    /// A panic in the evaluation process.
    Panic(Panic),
    /// `display_data`, `update_display_data` or `clear_output`.
    Content(JupyterMessageContent),
    /// The cell's final value as a prelude type's `evcxr_display()` sent it, published when the
    /// cell ends.
    Value(SentValue),
    /// `comm_open`, `comm_msg` or `comm_close` of a comm of the evaluation process (a widget),
    /// with the Jupyter message's metadata (a widget's protocol version).
    Comm(Comm),
}

/// A cell's result as a prelude type sent it: the bundle and output metadata of its
/// `execute_result`.
pub(crate) type SentValue = (Media, Map<String, Value>);

/// A comm message of the evaluation process, as it is published.
#[derive(Debug, Clone)]
pub(crate) struct Comm {
    pub(crate) content: JupyterMessageContent,
    pub(crate) metadata: Map<String, Value>,
}

impl Comm {
    /// The comm message that `message` is, if it is one.
    pub(crate) fn from_message(message: Message) -> Option<Comm> {
        let (content, metadata) = match message {
            Message::CommOpen {
                comm_id,
                target_name,
                data,
                metadata,
            } => (
                CommOpen {
                    comm_id: CommId(comm_id),
                    target_name,
                    data,
                    target_module: None,
                }
                .into(),
                metadata,
            ),
            Message::CommMsg {
                comm_id,
                data,
                metadata,
            } => (
                CommMsg {
                    comm_id: CommId(comm_id),
                    data,
                }
                .into(),
                metadata,
            ),
            Message::CommClose { comm_id, data } => (
                CommClose {
                    comm_id: CommId(comm_id),
                    data,
                }
                .into(),
                Map::new(),
            ),
            _ => return None,
        };
        Some(Comm { content, metadata })
    }
}

/// Reads one line. Only a line with the kernel's key is a message (`tchbook_wire::key`): any
/// other is text, whatever it holds. A keyed line that does not read is shown as text (and
/// logged), never lost, and without its key, which no output may show.
pub(crate) fn read_line(line: &str) -> Output {
    let message = match Message::parse_line(line) {
        None => return Output::Text(tchbook_wire::unkeyed(line).unwrap_or(line).to_owned()),
        Some(Ok(message)) => message,
        Some(Err(error)) => {
            let text = tchbook_wire::unkeyed(line).unwrap_or(line);
            tracing::warn!("unreadable message line ({error}): {text}");
            return Output::Text(text.to_owned());
        }
    };
    match message {
        Message::Display {
            data,
            metadata,
            display_id,
        } => Output::Content(
            DisplayData {
                data: media(data),
                metadata,
                transient: display_id.map(|id| Transient {
                    display_id: Some(id),
                }),
            }
            .into(),
        ),
        Message::Update {
            data,
            metadata,
            display_id,
        } => Output::Content(
            UpdateDisplayData {
                data: media(data),
                metadata,
                transient: Transient {
                    display_id: Some(display_id),
                },
            }
            .into(),
        ),
        Message::Value { data, metadata } => Output::Value((media(data), metadata)),
        Message::Clear { wait } => Output::Content(ClearOutput { wait }.into()),
        Message::Stream { name, text } => Output::Stream { name, text },
        Message::Panic(panic) => Output::Panic(panic),
        comm => Comm::from_message(comm).map_or_else(|| Output::Text(String::new()), Output::Comm),
    }
}

/// A MIME bundle as `jupyter_protocol` types it.
fn media(data: MimeData) -> Media {
    serde_json::from_value(Value::Object(data)).unwrap_or_default()
}

/// A cell's final value from evcxr's content blocks (one string per MIME type, no metadata:
/// `tchbook_wire::final_value`).
pub(crate) fn value_media(mime: &[(String, String)]) -> Media {
    media(tchbook_wire::final_value(mime))
}

/// A cell whose final expression is `()` (a `for`, an `if` that prints): evcxr sends its Debug
/// form, but like Python's `None` it is not a value worth showing.
pub(crate) fn is_unit(mime: &[(String, String)]) -> bool {
    matches!(mime, [(kind, text)] if kind == "text/plain" && text.trim() == "()")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lines_become_their_jupyter_contents() {
        let line = r#"TCHBOOK_DISPLAY {"op":"display","data":{"text/html":"<b>x</b>"},"metadata":{},"display_id":"d1"}"#;
        let Output::Content(JupyterMessageContent::DisplayData(display)) = read_line(line) else {
            panic!("a display");
        };
        assert_eq!(
            display.transient.and_then(|t| t.display_id).as_deref(),
            Some("d1")
        );
        assert!(matches!(
            read_line(r#"TCHBOOK_DISPLAY {"op":"clear","wait":true}"#),
            Output::Content(JupyterMessageContent::ClearOutput(ClearOutput {
                wait: true
            }))
        ));
        assert!(matches!(
            read_line(r#"TCHBOOK_DISPLAY {"op":"stream","name":"stderr","text":"50%"}"#),
            Output::Stream { name: StreamName::Stderr, text } if text == "50%"
        ));
    }

    #[test]
    fn malformed_display_lines_are_kept_as_text() {
        let line = "TCHBOOK_DISPLAY {not json";
        assert!(matches!(read_line(line), Output::Text(text) if text == line));
        let update_without_id = r#"TCHBOOK_DISPLAY {"op":"update","data":{}}"#;
        assert!(matches!(
            read_line(update_without_id),
            Output::Text(text) if text == update_without_id
        ));
    }
}
