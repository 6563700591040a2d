//! The fake engine's evaluation process as the kernel's side channel sees it: a socket
//! (`tchbook_wire::side_channel`) served on a thread of the test process, answering from the
//! variables the fake's cells defined (`let NAME TYPE = VALUE`), `busy` while a fake cell runs,
//! one made-up GPU, and widgets (`widget ID VALUE`) answering the front end's comm messages at
//! any time, as the prelude's do.

use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tchbook::engine::Event;
use tchbook_wire::side_channel::{Allocator, Answer, CommType, Field, Gpu, Request, Variable};
use tchbook_wire::{Message, widgets};
use tokio::sync::mpsc;

/// The fake's variables and widgets, shared by its cells and its socket.
#[derive(Clone, Default)]
pub struct FakeStore {
    variables: Arc<Mutex<Vec<Variable>>>,
    /// Each widget's state, by comm id (the fake's cells' `widget ID VALUE`).
    widgets: Arc<Mutex<HashMap<String, Map<String, Value>>>>,
    /// The comm of a front end's `jupyter.widget.control`, once it opened one.
    control: Arc<Mutex<Option<String>>>,
    /// Where a widget whose id starts with `cb-` sends its callback's message, as the prelude's
    /// callback thread writes to the evaluation process's stdout, between cells too.
    callbacks: Arc<Mutex<Option<mpsc::UnboundedSender<Event>>>>,
}

impl FakeStore {
    /// `let NAME TYPE = VALUE` (a `Tensor` gets a `shape` field).
    pub fn define(&self, text: &str) -> Result<(), String> {
        let (head, value) = text.split_once(" = ").ok_or("let NAME TYPE = VALUE")?;
        let (name, type_name) = head.split_once(' ').ok_or("let NAME TYPE = VALUE")?;
        let fields = match type_name {
            "Tensor" => vec![Field {
                name: "shape".into(),
                type_name: "Size".into(),
                value: format!(
                    "{}]",
                    value
                        .split(']')
                        .next()
                        .unwrap_or("")
                        .trim_start_matches("Tensor")
                ),
            }],
            _ => Vec::new(),
        };
        let mut variables = self.variables.lock().unwrap();
        variables.retain(|v| v.name != name);
        variables.push(Variable {
            name: name.into(),
            type_name: type_name.into(),
            value: value.into(),
            fields,
        });
        Ok(())
    }
}

impl FakeStore {
    /// Where the callbacks of `cb-` widgets print.
    pub fn print_callbacks_to(&self, events: mpsc::UnboundedSender<Event>) {
        *self.callbacks.lock().unwrap() = Some(events);
    }

    /// `widget ID VALUE`: an IntSlider's model, its `comm_open` line.
    pub fn open_widget(&self, text: &str) -> Result<String, String> {
        let (id, value) = text.split_once(' ').ok_or("widget ID VALUE")?;
        let value: i64 = value
            .parse()
            .map_err(|_| "widget ID VALUE: VALUE is a number")?;
        let state = Map::from_iter([
            ("_model_name".into(), Value::from("IntSliderModel")),
            (
                "_model_module".into(),
                Value::from("@jupyter-widgets/controls"),
            ),
            ("_model_module_version".into(), Value::from("2.0.0")),
            ("value".into(), Value::from(value)),
        ]);
        self.widgets
            .lock()
            .unwrap()
            .insert(id.into(), state.clone());
        Ok(line(Message::CommOpen {
            comm_id: id.into(),
            target_name: widgets::TARGET.into(),
            data: Map::from_iter([
                ("state".into(), Value::Object(state)),
                ("buffer_paths".into(), json!([])),
            ]),
            metadata: widgets::metadata(),
        }))
    }

    /// `set ID VALUE`: the kernel's side changes a value, its `update` line.
    pub fn set_widget(&self, text: &str) -> Result<String, String> {
        let (id, value) = text.split_once(' ').ok_or("set ID VALUE")?;
        let value: i64 = value
            .parse()
            .map_err(|_| "set ID VALUE: VALUE is a number")?;
        let mut widgets = self.widgets.lock().unwrap();
        let state = widgets.get_mut(id).ok_or("no such widget")?;
        state.insert("value".into(), value.into());
        Ok(line(update(id, "update", json!({"value": value}))))
    }

    /// `close ID`: its `comm_close` line.
    pub fn close_widget(&self, id: &str) -> String {
        self.widgets.lock().unwrap().remove(id);
        line(Message::CommClose {
            comm_id: id.into(),
            data: Map::new(),
        })
    }

    /// A widget's value as the front end last set it.
    pub fn widget_value(&self, id: &str) -> Option<i64> {
        self.widgets.lock().unwrap().get(id)?.get("value")?.as_i64()
    }

    /// A front end's comm message, answered as the prelude's widgets answer it.
    /// The open comms: each widget's, and the control comm.
    fn open_comms(&self) -> Answer {
        let widgets = self.widgets.lock().unwrap();
        let models = widgets
            .keys()
            .map(|id| (id.clone(), widgets::TARGET.to_owned()));
        let control = self.control.lock().unwrap().clone();
        let controls = control.map(|id| (id, widgets::CONTROL_TARGET.to_owned()));
        Answer::Comms {
            comms: models.chain(controls).collect(),
        }
    }

    fn comm(
        &self,
        msg_type: CommType,
        comm_id: &str,
        target: Option<&str>,
        data: &Map<String, Value>,
    ) -> Answer {
        let method = data.get("method").and_then(Value::as_str).unwrap_or("");
        let mut control = self.control.lock().unwrap();
        match msg_type {
            CommType::Open if target == Some(widgets::CONTROL_TARGET) => {
                *control = Some(comm_id.into());
                return Answer::Comm {
                    messages: Vec::new(),
                };
            }
            CommType::Msg if control.as_deref() == Some(comm_id) && method == "request_states" => {
                let states: Map<String, Value> = self
                    .widgets
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(id, state)| (id.clone(), json!({"state": state})))
                    .collect();
                let data = json!({"method": "update_states", "states": states, "buffer_paths": {}});
                return Answer::Comm {
                    messages: vec![Message::CommMsg {
                        comm_id: comm_id.into(),
                        data: data.as_object().unwrap().clone(),
                        metadata: widgets::metadata(),
                    }],
                };
            }
            _ => {}
        }
        let mut widgets = self.widgets.lock().unwrap();
        let Some(state) = widgets.get_mut(comm_id) else {
            return Answer::Error {
                message: format!("no comm `{comm_id}`"),
            };
        };
        let messages = match (msg_type, method) {
            (CommType::Msg, "update") => {
                let changes = data.get("state").cloned().unwrap_or_else(|| json!({}));
                for (key, value) in changes.as_object().into_iter().flatten() {
                    state.insert(key.clone(), value.clone());
                }
                if comm_id.starts_with("cb-")
                    && let Some(events) = &*self.callbacks.lock().unwrap()
                {
                    let seen = changes.get("value").cloned().unwrap_or_default();
                    let message = update(
                        comm_id,
                        "update",
                        json!({"description": format!("moved to {seen}")}),
                    );
                    let _ = events.send(Event::Stdout(line(message)));
                }
                vec![update(comm_id, "echo_update", changes)]
            }
            (CommType::Msg, "request_state") => {
                vec![update(comm_id, "update", Value::Object(state.clone()))]
            }
            (CommType::Close, _) => {
                widgets.remove(comm_id);
                Vec::new()
            }
            _ => Vec::new(),
        };
        Answer::Comm { messages }
    }
}

fn update(comm_id: &str, method: &str, state: Value) -> Message {
    let data = json!({"method": method, "state": state, "buffer_paths": []});
    Message::CommMsg {
        comm_id: comm_id.into(),
        data: data.as_object().unwrap().clone(),
        metadata: widgets::metadata(),
    }
}

/// A message as the prelude prints it, without its newline.
fn line(message: Message) -> String {
    message.to_line().trim_end().to_owned()
}

/// The GPU the fake reports.
pub fn fake_gpu() -> Gpu {
    Gpu {
        index: 0,
        name: "Fake GPU".into(),
        memory_used: 3 << 30,
        memory_total: 80 << 30,
        utilization: Some(42),
        allocator: Some(Allocator {
            device: 0,
            allocated: 1 << 30,
            reserved: 2 << 30,
            peak: 3 << 29,
        }),
        driver: Some("550.54.15".into()),
        cuda: Some("12.4".into()),
        error: None,
    }
}

/// Serves the socket at a fresh path; `running` says whether a fake cell runs.
pub fn serve(store: FakeStore, running: impl Fn() -> bool + Send + 'static) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix("tchbook-fake-side-channel-")
        .tempdir()
        .unwrap()
        .keep();
    let path = dir.join("side-channel.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            if BufReader::new(&stream).read_line(&mut line).is_err() {
                continue;
            }
            let answer = match serde_json::from_str::<Request>(line.trim()) {
                Ok(Request::Usage) => Answer::Usage {
                    gpus: vec![fake_gpu()],
                },
                Ok(Request::Comms) => store.open_comms(),
                Ok(Request::Comm {
                    msg_type,
                    comm_id,
                    target_name,
                    data,
                }) => store.comm(msg_type, &comm_id, target_name.as_deref(), &data),
                Ok(_) if running() => Answer::Busy,
                Ok(Request::Variables) => Answer::Variables {
                    variables: store.variables.lock().unwrap().clone(),
                },
                Ok(Request::Rich { name }) => {
                    let variables = store.variables.lock().unwrap();
                    match variables.iter().find(|v| v.name == name) {
                        Some(v) => Answer::Rich {
                            data: serde_json::Map::from_iter([(
                                "text/plain".into(),
                                format!("rich {}", v.value).into(),
                            )]),
                            metadata: serde_json::Map::new(),
                        },
                        None => Answer::Error {
                            message: format!("no variable `{name}`"),
                        },
                    }
                }
                Err(error) => Answer::Error {
                    message: error.to_string(),
                },
            };
            let _ = (&stream).write_all(format!("{}\n", answer.to_line()).as_bytes());
        }
    });
    path
}
