//! The fake engine's evaluation process as JupyterLab's panels see it: a panels socket
//! (`tchbook_wire::panels`) served on a thread of the test process, answering from the
//! variables the fake's cells defined (`let NAME TYPE = VALUE`), `busy` while a fake cell runs,
//! and one made-up GPU.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tchbook_wire::panels::{Allocator, Answer, Field, Gpu, Request, Variable};

/// The fake's variables, shared by its cells and its socket.
#[derive(Clone, Default)]
pub struct FakeStore {
    variables: Arc<Mutex<Vec<Variable>>>,
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
    }
}

/// Serves the socket at a fresh path; `running` says whether a fake cell runs.
pub fn serve(store: FakeStore, running: impl Fn() -> bool + Send + 'static) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix("tchbook-fake-panels-")
        .tempdir()
        .unwrap()
        .keep();
    let path = dir.join("panels.sock");
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
                Ok(Request::Comm { comm_id, .. }) => Answer::Error {
                    message: format!("no comm `{comm_id}`"),
                },
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
