//! The line protocol between the tchbook kernel and the prelude in its evaluation process, as
//! Rust types, and the names of the environment variables the kernel, the prelude, the
//! evaluation process and the vendored evcxr share ([`env`]).
//!
//! While a cell runs, evcxr hands the kernel every line the evaluation process writes to its
//! stdout that is not one of evcxr's own. The prelude speaks to the kernel through those lines,
//! one JSON object each, behind one prefix ([`PREFIX`]), each line keyed as every protocol line
//! is (the record separator and the kernel's key before it, [`key`]: left out below):
//!
//! ```text
//! TCHBOOK_DISPLAY {"op":"display","data":{MIME bundle},"metadata":{},"display_id":"id"|null}
//! TCHBOOK_DISPLAY {"op":"update","data":{MIME bundle},"metadata":{},"display_id":"id"}
//! TCHBOOK_DISPLAY {"op":"value","data":{MIME bundle},"metadata":{}}
//! TCHBOOK_DISPLAY {"op":"clear","wait":true}
//! TCHBOOK_DISPLAY {"op":"stream","name":"stdout"|"stderr","text":"50%"}
//! TCHBOOK_DISPLAY {"op":"panic","message":..,"location":"file:line:col","thread":..,"main":true,"cpp_frames":true}
//! TCHBOOK_DISPLAY {"op":"comm_open","comm_id":..,"target_name":"jupyter.widget","data":{..},"metadata":{"version":"2.1.0"}}
//! TCHBOOK_DISPLAY {"op":"comm_msg","comm_id":..,"data":{"method":"update","state":{..},"buffer_paths":[]},"metadata":{..}}
//! TCHBOOK_DISPLAY {"op":"comm_close","comm_id":..,"data":{}}
//! ```
//!
//! The comm messages are the evaluation process's half of Jupyter's comms (ipywidgets, whose
//! models live in the prelude: [`widgets`]); the front end's half reaches the evaluation process
//! on the side channel ([`side_channel::Request::Comm`]), even while a cell runs. Between cells the
//! kernel still reads these lines (a widget's callback runs then), and keeps any other output
//! for the next cell.
//!
//! A display's `metadata` is Jupyter's output metadata: the prelude puts each image's alt text
//! there (`{"image/png":{"alt":"Line plot …"}}`), the key nbconvert's classic HTML template
//! reads. A cell's final value of the prelude's types is a `value` message, the bundle and
//! metadata as for a display, sent by the value's `evcxr_display()`: the cell's result. Any
//! other type's `evcxr_display()` prints evcxr's content blocks ([`BEGIN_CONTENT`]), one per
//! MIME type and no metadata, which readers make a bundle of with [`final_value`].
//!
//! The prelude asks for input with evcxr's own lines, which evcxr answers with one line on stdin
//! ([`InputRequest`]). Writers: the prelude (`prelude/src/runtime/`) and the panic hook
//! ([`install_panic_hook`]). Readers: the kernel (`src/display/`) and the runner of exported
//! notebooks (the `tchbook-runner` crate). Both sides use these types, so they cannot disagree; the
//! prelude's tests check that what its writer emits reads back as the same [`Message`].
//!
//! Only a keyed line is read as a message: a cell that prints `TCHBOOK_DISPLAY {...}` or
//! `EVCXR_EXECUTION_COMPLETE` prints text. Reading a keyed line is lenient: a missing or `null`
//! bundle is empty, a display id that is not a string is none, a stream that
//! is not `stderr` is stdout. A line with the prefix that still does not read is the caller's to
//! show as text, never to lose.
//!
//! This crate is compiled into every notebook's dependency build (through the prelude), so it
//! depends on serde and serde_json only, which tch brings there anyway.

#![forbid(unsafe_code)]

pub mod commands;
pub mod env;
pub mod key;
mod panic;
pub mod record;
pub mod report;
pub mod side_channel;
pub mod value;
pub mod widgets;

pub use key::{
    Keyed, MARK, carries_key, keyed, keyed_with, line_key, new_line_key, unkeyed, unkeyed_with,
};
pub use panic::{
    Panic, cpp_frames_wanted, install_panic_hook, install_panic_hook_for, payload_text, print_line,
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The prefix of every message line, the space included.
///
/// ```
/// assert_eq!(tchbook_wire::PREFIX, "TCHBOOK_DISPLAY ");
/// ```
pub const PREFIX: &str = "TCHBOOK_DISPLAY ";

/// Starts one of a cell's final values, one MIME type per block (evcxr's protocol): the block's
/// lines follow, then [`END_CONTENT`] on a line of its own. Both lines are keyed
/// ([`content_block`]); the lines between them are the content, whatever they hold.
pub const BEGIN_CONTENT: &str = "EVCXR_BEGIN_CONTENT ";
/// Ends a block started by [`BEGIN_CONTENT`].
pub const END_CONTENT: &str = "EVCXR_END_CONTENT";
/// The line (keyed) that says a cell panicked (evcxr's protocol): the cell's code caught the
/// panic, and the kernel reports the cell as failed.
pub const PANIC_NOTIFICATION: &str = "EVCXR_PANIC_NOTIFICATION";
/// The interrupt check the kernel puts after the `{` of each loop body of a cell's own code,
/// and `tchbook export` of each loop of an exported cell: a call that reads the prelude's
/// interrupt flag and panics with `KeyboardInterrupt` when it is set. Its text is taken out of a
/// generated line again wherever that line is shown or matched against the cell's own
/// ([`report::panic_report`]).
pub const INTERRUPT_POINT: &str = "::tchbook_prelude::interrupt::__point();";
/// The start of the line (keyed) that says a stored variable was lost because a cell redefined
/// its type (evcxr's protocol): the variable's name follows.
pub const VARIABLE_CHANGED_TYPE: &str = "EVCXR_VARIABLE_CHANGED_TYPE:";
/// The start of the line (keyed) that names a variable a cell held when the user interrupted it
/// in a wait that cannot be cut short (a channel's `recv`, a `Mutex`, a `Condvar`): the cell's
/// thread is left in that wait for good, with the variable, and the evaluation process runs the
/// next cells on a new thread. Written by the evaluation process before the cell's
/// [`PANIC_NOTIFICATION`]; the variable's name follows.
pub const HELD_BY_STOPPED_WAIT: &str = "TCHBOOK_HELD_BY_STOPPED_WAIT:";
/// The line (keyed) that says a cell's `?` returned an error (evcxr's protocol), which the cell
/// printed on stderr before it.
pub const USER_ERROR_OCCURRED: &str = "EVCXR_ERROR_OCCURRED";

/// One content block (what a value's `evcxr_display()` prints for one MIME type), its first and
/// last lines keyed ([`keyed`]).
///
/// ```
/// assert_eq!(
///     tchbook_wire::content_block("text/plain", "42"),
///     "EVCXR_BEGIN_CONTENT text/plain\n42\nEVCXR_END_CONTENT\n" // no key here
/// );
/// ```
pub fn content_block(mime: &str, text: &str) -> String {
    format!(
        "{}\n{text}\n{}\n",
        keyed(&format!("{BEGIN_CONTENT}{mime}")),
        keyed(END_CONTENT)
    )
}

/// A MIME bundle: MIME type to content (a string, or a JSON value for `*json` types).
pub type MimeData = Map<String, Value>;

/// A cell's final value as a MIME bundle, from evcxr's content blocks (`(MIME type, text)`):
/// JSON types read as values (text that does not read stays text).
///
/// ```
/// use tchbook_wire::final_value;
/// let blocks = [
///     ("text/plain".to_owned(), "a table".to_owned()),
///     ("application/json".to_owned(), r#"{"loss":[3,2]}"#.to_owned()),
/// ];
/// let data = final_value(&blocks);
/// assert_eq!(data["text/plain"], "a table");
/// assert_eq!(data["application/json"]["loss"][1], 2);
/// ```
pub fn final_value(blocks: &[(String, String)]) -> MimeData {
    let mut data = MimeData::new();
    for (mime, text) in blocks {
        let value = if mime == "application/json" || mime.ends_with("+json") {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        } else {
            Value::String(text.clone())
        };
        data.insert(mime.clone(), value);
    }
    data
}

/// One message from the prelude to the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Message {
    /// Jupyter's `display_data`, with a `display_id` when the display can be updated later.
    Display {
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: MimeData,
        #[serde(default, deserialize_with = "bundle_or_null")]
        metadata: Map<String, Value>,
        #[serde(default, deserialize_with = "string_or_none")]
        display_id: Option<String>,
    },
    /// `update_display_data`: replaces what the display with this id shows.
    Update {
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: MimeData,
        #[serde(default, deserialize_with = "bundle_or_null")]
        metadata: Map<String, Value>,
        display_id: String,
    },
    /// A cell's final value, sent by the `evcxr_display()` of a prelude type: Jupyter's
    /// `execute_result` bundle and output metadata (image alt text). The last one a cell sends is
    /// its result.
    Value {
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: MimeData,
        #[serde(default, deserialize_with = "bundle_or_null")]
        metadata: Map<String, Value>,
    },
    /// `clear_output(wait)`.
    Clear {
        #[serde(default, deserialize_with = "bool_or_false")]
        wait: bool,
    },
    /// Text without a trailing newline, flushed by the prelude's stdout pump (a `print!`
    /// progress bar).
    Stream {
        #[serde(default)]
        name: StreamName,
        text: String,
    },
    /// A panic in the evaluation process ([`install_panic_hook`]).
    Panic(Panic),
    /// Jupyter's `comm_open` from the evaluation process: a widget's model ([`widgets`]). The
    /// `metadata` is the Jupyter message's own (`{"version": "2.1.0"}` for a widget), not output
    /// metadata.
    #[serde(rename = "comm_open")]
    CommOpen {
        comm_id: String,
        target_name: String,
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: Map<String, Value>,
        #[serde(default, deserialize_with = "bundle_or_null")]
        metadata: Map<String, Value>,
    },
    /// Jupyter's `comm_msg` from the evaluation process (a widget's `update`).
    #[serde(rename = "comm_msg")]
    CommMsg {
        comm_id: String,
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: Map<String, Value>,
        #[serde(default, deserialize_with = "bundle_or_null")]
        metadata: Map<String, Value>,
    },
    /// Jupyter's `comm_close` from the evaluation process (a widget's `close()`).
    #[serde(rename = "comm_close")]
    CommClose {
        comm_id: String,
        #[serde(default, deserialize_with = "bundle_or_null")]
        data: Map<String, Value>,
    },
}

/// Which stream a [`Message::Stream`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamName {
    #[default]
    Stdout,
    Stderr,
}

impl StreamName {
    /// Jupyter's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamName::Stdout => "stdout",
            StreamName::Stderr => "stderr",
        }
    }
}

impl Serialize for StreamName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StreamName {
    /// `"stderr"` is stderr; anything else is stdout, as the kernel always read it.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Value::deserialize(deserializer)?;
        Ok(match name.as_str() {
            Some("stderr") => StreamName::Stderr,
            _ => StreamName::Stdout,
        })
    }
}

impl Message {
    /// A display of `data`, updatable later when it has a `display_id`.
    ///
    /// ```
    /// use tchbook_wire::{MimeData, Message};
    /// let mut data = MimeData::new();
    /// data.insert("text/plain".into(), "hi".into());
    /// let line = Message::display(data, Some("d1".into())).to_line();
    /// assert!(line.starts_with("TCHBOOK_DISPLAY {") && line.ends_with("}\n"));
    /// ```
    pub fn display(data: MimeData, display_id: Option<String>) -> Message {
        Message::Display {
            data,
            metadata: Map::new(),
            display_id,
        }
    }

    /// An update of the display with this id.
    pub fn update(data: MimeData, display_id: String) -> Message {
        Message::Update {
            data,
            metadata: Map::new(),
            display_id,
        }
    }

    /// The line (newline included) that carries this message, keyed ([`keyed`]). serde_json
    /// escapes newlines and control characters, so it is always one line.
    ///
    /// ```
    /// use tchbook_wire::Message;
    /// assert_eq!(
    ///     Message::Clear { wait: false }.to_line(),
    ///     "TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":false}\n"
    /// );
    /// ```
    pub fn to_line(&self) -> String {
        // Serialising these types cannot fail: every map key is a string.
        let json = serde_json::to_string(self).unwrap_or_default();
        keyed(&format!("{PREFIX}{json}\n"))
    }

    /// Reads one line (with or without its newline): `None` when it is not a message line (text,
    /// or a line without this process's key: [`unkeyed`]), `Some(Err)` when it has the prefix
    /// but does not read as a message.
    ///
    /// ```
    /// use tchbook_wire::Message;
    /// let line = r#"TCHBOOK_DISPLAY {"op":"clear","wait":true}"#;
    /// assert_eq!(Message::parse_line(line).unwrap().unwrap(), Message::Clear { wait: true });
    /// assert!(Message::parse_line("epoch 1").is_none());
    /// assert!(Message::parse_line("TCHBOOK_DISPLAY {not json").unwrap().is_err());
    /// ```
    pub fn parse_line(line: &str) -> Option<Result<Message, serde_json::Error>> {
        let json = unkeyed(line)?.strip_prefix(PREFIX)?;
        Some(serde_json::from_str(json.trim_end_matches(['\n', '\r'])))
    }
}

/// evcxr's request for a line of input (Python's `input()`): the evaluation process writes it
/// and reads the answer, one line, from its stdin. evcxr takes the prompt up to its first `:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRequest {
    pub prompt: String,
    /// Whether the typed text is hidden (Python's `getpass`).
    pub password: bool,
}

impl InputRequest {
    const PLAIN: &'static str = "EVCXR_INPUT_REQUEST";
    const PASSWORD: &'static str = "EVCXR_INPUT_REQUEST_PASSWORD";

    /// The line (newline included) that asks for input, keyed ([`keyed`]).
    ///
    /// ```
    /// use tchbook_wire::InputRequest;
    /// let request = InputRequest { prompt: "Your name".into(), password: true };
    /// assert_eq!(request.to_line(), "EVCXR_INPUT_REQUEST_PASSWORD:Your name\n");
    /// ```
    pub fn to_line(&self) -> String {
        let kind = if self.password {
            Self::PASSWORD
        } else {
            Self::PLAIN
        };
        keyed(&format!("{kind}:{}\n", self.prompt))
    }

    /// Reads a line as evcxr reads it: the prompt is what lies between the first and the
    /// second `:`.
    ///
    /// ```
    /// use tchbook_wire::InputRequest;
    /// let request = InputRequest::parse_line("EVCXR_INPUT_REQUEST:Name").unwrap();
    /// assert_eq!((request.prompt.as_str(), request.password), ("Name", false));
    /// assert!(InputRequest::parse_line("name: x").is_none());
    /// ```
    pub fn parse_line(line: &str) -> Option<InputRequest> {
        let rest = unkeyed(line)?.strip_prefix(Self::PLAIN)?;
        let (password, rest) = match rest.strip_prefix("_PASSWORD") {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let prompt = rest.strip_prefix(':')?;
        let prompt = prompt.split(':').next().unwrap_or_default();
        Some(InputRequest {
            prompt: prompt.trim_end_matches(['\n', '\r']).to_owned(),
            password,
        })
    }
}

/// A bundle, with `null` read as an empty one; anything else but an object does not read.
fn bundle_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<MimeData, D::Error> {
    Ok(Option::<MimeData>::deserialize(deserializer)?.unwrap_or_default())
}

fn string_or_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

fn bool_or_false<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(deserializer)?.as_bool().unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(value: Value) -> MimeData {
        match value {
            Value::Object(map) => map,
            other => panic!("not a bundle: {other}"),
        }
    }

    fn read(line: &str) -> Message {
        Message::parse_line(line)
            .expect("a message line")
            .unwrap_or_else(|error| panic!("{line}: {error}"))
    }

    #[test]
    fn every_message_reads_back_as_itself() {
        let messages = [
            Message::display(
                bundle(json!({"text/plain": "a\nb", "application/json": {"loss": [3, 2]}})),
                Some("tchbook-1-0".into()),
            ),
            Message::display(bundle(json!({"text/html": "<b>x</b>"})), None),
            Message::Update {
                data: bundle(json!({"text/plain": "2"})),
                metadata: bundle(json!({"isolated": true})),
                display_id: "d1".into(),
            },
            Message::Value {
                data: bundle(json!({"text/plain": "tensor", "image/png": "iVBORw0KGgo="})),
                metadata: bundle(json!({"image/png": {"alt": "a falling line"}})),
            },
            Message::Clear { wait: true },
            Message::Clear { wait: false },
            Message::Stream {
                name: StreamName::Stderr,
                text: "50%\r\u{1b}[K".into(),
            },
            Message::Panic(Panic {
                message: "called `Option::unwrap()` on a `None` value\n\"quoted\" \\".into(),
                location: "src/lib.rs:3:5".into(),
                thread: "<unnamed>".into(),
                on_main: false,
                cpp_frames: true,
            }),
            Message::CommOpen {
                comm_id: "7f3a".into(),
                target_name: widgets::TARGET.into(),
                data: bundle(json!({"state": {"value": 3}, "buffer_paths": []})),
                metadata: bundle(json!({"version": widgets::PROTOCOL_VERSION})),
            },
            Message::CommMsg {
                comm_id: "7f3a".into(),
                data: bundle(json!({"method": "update", "state": {"value": 4}})),
                metadata: MimeData::new(),
            },
            Message::CommClose {
                comm_id: "7f3a".into(),
                data: MimeData::new(),
            },
        ];
        for message in messages {
            let line = message.to_line();
            assert!(line.starts_with(PREFIX), "{line}");
            assert_eq!(line.matches('\n').count(), 1, "one line: {line:?}");
            assert_eq!(read(&line), message);
            assert_eq!(read(line.trim_end()), message);
        }
    }

    #[test]
    fn lines_written_by_hand_read_as_the_kernel_always_read_them() {
        // tests/display.rs and users print such lines themselves.
        assert_eq!(
            read(r#"TCHBOOK_DISPLAY {"op":"display","data":{"text/plain":"x"},"display_id":null}"#),
            Message::display(bundle(json!({"text/plain": "x"})), None)
        );
        assert_eq!(
            read(r#"TCHBOOK_DISPLAY {"op":"display","data":null,"metadata":null,"display_id":7}"#),
            Message::display(MimeData::new(), None)
        );
        assert_eq!(
            read(r#"TCHBOOK_DISPLAY {"op":"clear"}"#),
            Message::Clear { wait: false }
        );
        assert_eq!(
            read(r#"TCHBOOK_DISPLAY {"op":"stream","text":"50%"}"#),
            Message::Stream {
                name: StreamName::Stdout,
                text: "50%".into()
            }
        );
        assert_eq!(
            read(r#"TCHBOOK_DISPLAY {"op":"panic","message":"boom"}"#),
            Message::Panic(Panic {
                message: "boom".into(),
                location: String::new(),
                thread: String::new(),
                on_main: true,
                cpp_frames: false,
            })
        );
    }

    #[test]
    fn what_is_not_a_message_is_told_apart() {
        assert!(Message::parse_line("plain output").is_none());
        assert!(Message::parse_line("EVCXR_END_CONTENT").is_none());
        for unreadable in [
            "TCHBOOK_DISPLAY {not json",
            r#"TCHBOOK_DISPLAY {"op":"dance"}"#,
            r#"TCHBOOK_DISPLAY {"op":"update","data":{}}"#,
            r#"TCHBOOK_DISPLAY {"op":"display","data":"text"}"#,
            r#"TCHBOOK_DISPLAY {"op":"stream","name":"stdout"}"#,
            r#"TCHBOOK_DISPLAY ["op","clear"]"#,
        ] {
            assert!(
                matches!(Message::parse_line(unreadable), Some(Err(_))),
                "{unreadable}"
            );
        }
    }

    #[test]
    fn a_final_values_json_blocks_become_values_and_unreadable_json_stays_text() {
        let blocks = [
            ("text/plain", "plot"),
            ("application/vnd.tchbook.loss-plot+json", r#"{"y":[1]}"#),
            ("application/json", "{not json"),
        ]
        .map(|(mime, text)| (mime.to_owned(), text.to_owned()));
        assert_eq!(
            Value::Object(final_value(&blocks)),
            json!({
                "text/plain": "plot",
                "application/vnd.tchbook.loss-plot+json": {"y": [1]},
                "application/json": "{not json",
            })
        );
    }

    #[test]
    fn input_requests_read_back_and_keep_evcxrs_prompt_rule() {
        for password in [false, true] {
            let request = InputRequest {
                prompt: "Your name".into(),
                password,
            };
            assert_eq!(
                InputRequest::parse_line(&request.to_line()),
                Some(request.clone())
            );
        }
        let cut = InputRequest::parse_line("EVCXR_INPUT_REQUEST:Name: first").unwrap();
        assert_eq!(cut.prompt, "Name");
        assert!(InputRequest::parse_line("EVCXR_INPUT_REQUESTED:x").is_none());
    }
}
