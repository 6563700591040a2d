//! The front end's half of the protocol: a comm request from the kernel (the side channel's
//! `Request::Comm`), answered at once with the comm messages the kernel publishes in reply.
//!
//! This runs on the side channel's thread, at any time, a cell running or not: it applies a
//! state change to the model (so a loop reading the value sees it at its next read), and
//! leaves the user's callbacks to the callback thread.

use super::model::registry;
use crate::runtime::Message;
use serde_json::{Map, Value};
use tchbook_wire::side_channel::{Answer, CommType};
use tchbook_wire::widgets;

/// The comms open in this process, by id, with their targets: every open model's, and the
/// control comms reloaded pages opened. The kernel lists them for `comm_info_request`.
pub(crate) fn open_comms() -> std::collections::BTreeMap<String, String> {
    let registry = registry();
    let models = registry.open_models().into_iter();
    let controls = registry.open_controls().into_iter();
    models
        .map(|id| (id, widgets::TARGET.to_owned()))
        .chain(controls.map(|id| (id, widgets::CONTROL_TARGET.to_owned())))
        .collect()
}

/// The answer to one comm message from the front end.
pub(crate) fn answer(
    msg_type: CommType,
    comm_id: &str,
    target_name: Option<&str>,
    data: &Map<String, Value>,
) -> Answer {
    let registry = registry();
    match msg_type {
        // A reloaded page asks for every model's state on a control comm of its own.
        CommType::Open if target_name == Some(widgets::CONTROL_TARGET) => {
            registry.add_control(comm_id);
            Answer::Comm {
                messages: Vec::new(),
            }
        }
        CommType::Open => unknown(&format!(
            "the front end cannot open comms of target `{}` here: widgets are made by the \
             notebook's code",
            target_name.unwrap_or("")
        )),
        CommType::Msg if registry.is_control(comm_id) => match method(data) {
            "request_states" => Answer::Comm {
                messages: vec![update_states(comm_id)],
            },
            other => unknown(&format!("unknown widget control method `{other}`")),
        },
        CommType::Msg => {
            let Some(model) = registry.model(comm_id) else {
                return no_comm(comm_id);
            };
            match method(data) {
                "update" => {
                    let state = match data.get("state") {
                        Some(Value::Object(state)) => state.clone(),
                        _ => Map::new(),
                    };
                    Answer::Comm {
                        messages: model.apply_front_end(&state),
                    }
                }
                "request_state" => Answer::Comm {
                    messages: vec![model.full_update()],
                },
                "custom" => {
                    model.receive_custom(data.get("content").cloned().unwrap_or(Value::Null));
                    Answer::Comm {
                        messages: Vec::new(),
                    }
                }
                other => unknown(&format!("unknown widget method `{other}`")),
            }
        }
        CommType::Close => {
            if registry.remove_control(comm_id) {
                return Answer::Comm {
                    messages: Vec::new(),
                };
            }
            match registry.model(comm_id) {
                Some(model) => {
                    model.closed_by_front_end();
                    Answer::Comm {
                        messages: Vec::new(),
                    }
                }
                None => no_comm(comm_id),
            }
        }
    }
}

fn method(data: &Map<String, Value>) -> &str {
    data.get("method").and_then(Value::as_str).unwrap_or("")
}

fn unknown(message: &str) -> Answer {
    Answer::Error {
        message: message.to_owned(),
    }
}

fn no_comm(comm_id: &str) -> Answer {
    unknown(&format!(
        "no widget `{comm_id}` in this process (closed, or from an earlier kernel)"
    ))
}

/// `update_states` on the control comm: every open model's full state, with its name and
/// module, as ipywidgets' `_handle_control_comm_msg` sends them.
fn update_states(comm_id: &str) -> Message {
    let mut states = Map::new();
    for model in registry().models() {
        let state = model.state();
        let field = |key: &str| state.get(key).cloned().unwrap_or(Value::Null);
        let entry = serde_json::json!({
            "model_name": field("_model_name"),
            "model_module": field("_model_module"),
            "model_module_version": field("_model_module_version"),
            "state": Value::Object(state.clone()),
        });
        states.insert(model.id().to_owned(), entry);
    }
    let mut data = Map::new();
    data.insert("method".into(), "update_states".into());
    data.insert("states".into(), Value::Object(states));
    data.insert("buffer_paths".into(), Value::Array(Vec::new()));
    Message::CommMsg {
        comm_id: comm_id.to_owned(),
        // The control comm's messages carry no protocol version: ipywidgets sends them bare.
        data,
        metadata: Map::new(),
    }
}
