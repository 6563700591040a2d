//! Jupyter widgets: the models' full states against ipywidgets 8's model specification
//! (`spec`), the order comms open in and the display bundle (`display`), the front end's messages
//! answered through the same C entry point the evaluation process's runtime calls, and live values
//! seen by a running loop (`comms`), `interact` (`interact`), and progress bars as widgets inside a
//! kernel and as text outside (`progress`).

mod comms;
mod display;
mod interact;
mod progress;
mod spec;

use serde_json::{Map, Value, json};
use std::ffi::c_void;
use tchbook_wire::side_channel::{Answer, CommType, Entry, Request};
use tchbook_wire::widgets::{PROTOCOL_VERSION, TARGET};
use tchbook_wire::{Message, PREFIX};

unsafe extern "C" {
    /// The prelude's entry point for the kernel's side channel (`tchbook_wire::side_channel`).
    fn tchbook_prelude_answer(
        request: *const u8,
        request_len: usize,
        entries: *const Entry,
        count: usize,
        answer: extern "C" fn(*mut c_void, *const u8, usize),
        context: *mut c_void,
    );
}

/// Asks the prelude as the evaluation process's socket thread does (also for `debugger`).
pub(crate) fn call(request: &Request, entries: &[Entry]) -> Answer {
    extern "C" fn keep(context: *mut c_void, bytes: *const u8, len: usize) {
        // SAFETY: `context` is the `String` below; the bytes are the answer's, valid for the call.
        unsafe {
            *(context as *mut String) =
                String::from_utf8_lossy(std::slice::from_raw_parts(bytes, len)).into_owned();
        }
    }
    let request = serde_json::to_string(request).unwrap();
    let mut answer = String::new();
    // SAFETY: the request is `len` bytes; the entries point to live `Box<dyn Any>`s; `keep`
    // writes into `answer`.
    unsafe {
        tchbook_prelude_answer(
            request.as_ptr(),
            request.len(),
            entries.as_ptr(),
            entries.len(),
            keep,
            &mut answer as *mut String as *mut c_void,
        )
    };
    serde_json::from_str(answer.trim()).expect("the answer is one JSON line")
}

/// A comm request, as the kernel passes on a front end's comm message (no variables).
fn ask(msg_type: CommType, comm_id: &str, target: Option<&str>, data: Value) -> Answer {
    let Value::Object(data) = data else {
        panic!("comm data is an object")
    };
    let request = Request::Comm {
        msg_type,
        comm_id: comm_id.to_owned(),
        target_name: target.map(str::to_owned),
        data,
    };
    call(&request, &[])
}

/// The comm messages of an answer (panics on an error).
fn messages(answer: Answer) -> Vec<Message> {
    match answer {
        Answer::Comm { messages } => messages,
        other => panic!("expected comm messages, got {other:?}"),
    }
}

/// The protocol messages a child printed.
fn protocol(out: &str) -> Vec<Message> {
    out.lines()
        .filter_map(|l| l.find(PREFIX).map(|i| &l[i..]))
        .map(|l| {
            Message::parse_line(l)
                .unwrap()
                .expect("a message line reads")
        })
        .collect()
}

/// Each comm_open's id and state, in order.
fn opened(messages: &[Message]) -> Vec<(String, Map<String, Value>)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::CommOpen {
                comm_id,
                target_name,
                data,
                metadata,
            } => {
                assert_eq!(target_name, TARGET);
                assert_eq!(metadata["version"], PROTOCOL_VERSION);
                assert_eq!(data["buffer_paths"], json!([]));
                Some((comm_id.clone(), data["state"].as_object().unwrap().clone()))
            }
            _ => None,
        })
        .collect()
}

/// Every model's state once the child was done: its comm_open's, with its updates applied.
fn replay(messages: &[Message]) -> Map<String, Value> {
    let mut states = Map::new();
    for m in messages {
        match m {
            Message::CommOpen { comm_id, data, .. } => {
                states.insert(comm_id.clone(), data["state"].clone());
            }
            Message::CommMsg { comm_id, data, .. } if data["method"] == "update" => {
                let state = states[comm_id].as_object_mut().unwrap();
                for (key, value) in data["state"].as_object().unwrap() {
                    state.insert(key.clone(), value.clone());
                }
            }
            _ => {}
        }
    }
    states
}
