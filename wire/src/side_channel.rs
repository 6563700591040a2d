//! The side channel: what the kernel asks the evaluation process beside the cell's output, and
//! the answers. It carries the values JupyterLab's panels show (the debugger's Variables panel,
//! jupyter-resource-usage's Kernel Usage), the front end's comm messages to the prelude's
//! widgets, and the list of open comms.
//!
//! None of these travel on the cell's stdout: the evaluation process serves them on a Unix
//! socket of its own ([`crate::env::SIDE_CHANNEL`], one request per connection, one JSON line
//! each way; [`connect`] and [`bind`] say where it is), from a thread of its own, so that a
//! request is answered while the kernel is idle without compiling anything, and GPU memory and
//! comm messages are answered while a cell runs.
//! Variables are read only between cells: while a cell runs they are out of evcxr's store (in
//! the cell's locals), and the answer is [`Answer::Busy`].
//!
//! ```text
//! {"op":"variables"}             → {"answer":"variables","variables":[{"name":"x","type":"Tensor","value":"Tensor[2, 3] f32 cpu 24 B","fields":[...]}]}
//! {"op":"rich","name":"x"}       → {"answer":"rich","data":{"text/plain":"tensor([...])"},"metadata":{}}
//! {"op":"usage"}                 → {"answer":"usage","gpus":[{"index":0,"name":"NVIDIA H100","memory_used":..,"memory_total":..,"utilization":3,"allocator":null,"driver":"550.54.15","cuda":"12.4","error":null}]}
//! {"op":"comm","msg_type":"comm_msg","comm_id":"7f3a","data":{"method":"update","state":{"value":4}}}
//!                                → {"answer":"comm","messages":[{"op":"comm_msg","comm_id":"7f3a","data":{"method":"echo_update",..}}]}
//! {"op":"comms"}                 → {"answer":"comms","comms":{"7f3a":"jupyter.widget"}}
//! anything else, while a cell runs → {"answer":"busy"}
//! ```
//!
//! A comm request is the front end's half of a widget (`crate::widgets`): it reaches the
//! prelude's widgets while a cell runs too, which is how a slider moved during training reaches
//! the loop; the answer's messages are the kernel's to publish in reply (an `echo_update`, the
//! state a `request_state` asked for). A comm the prelude does not know is an [`Answer::Error`],
//! and the kernel closes a `comm_open` it answers so. The open comms are the prelude's alone:
//! the kernel asks for them ([`Request::Comms`]) to answer a `comm_info_request`.
//!
//! The evaluation process reads the variables from evcxr's store and hands them, each as
//! `Box<dyn Any>` with its type's name, to the prelude's `tchbook_prelude_answer` ([`Entry`]),
//! which knows tensors, var stores and std values; without the prelude it answers with names
//! and types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A request from the kernel, one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// Every variable with its one-line value and its fields.
    Variables,
    /// One variable's rich view (a MIME bundle).
    Rich { name: String },
    /// The GPUs and the caching allocator's bytes.
    Usage,
    /// The comms open in the evaluation process, with their targets: the one table of them.
    Comms,
    /// A front end's comm message, for the prelude's widgets.
    Comm {
        msg_type: CommType,
        comm_id: String,
        /// The target a `comm_open` names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_name: Option<String>,
        #[serde(default)]
        data: Map<String, Value>,
    },
}

/// Which of Jupyter's comm messages a [`Request::Comm`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommType {
    #[serde(rename = "comm_open")]
    Open,
    #[serde(rename = "comm_msg")]
    Msg,
    #[serde(rename = "comm_close")]
    Close,
}

/// The evaluation process's answer, one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "lowercase")]
pub enum Answer {
    Variables {
        variables: Vec<Variable>,
    },
    Rich {
        data: Map<String, Value>,
        #[serde(default)]
        metadata: Map<String, Value>,
    },
    Usage {
        gpus: Vec<Gpu>,
    },
    /// What the kernel publishes in reply to a [`Request::Comm`]: comm messages only
    /// ([`crate::Message::CommOpen`], [`crate::Message::CommMsg`], [`crate::Message::CommClose`]).
    Comm {
        #[serde(default)]
        messages: Vec<crate::Message>,
    },
    /// The open comms, by id, with their target names.
    Comms {
        #[serde(default)]
        comms: std::collections::BTreeMap<String, String>,
    },
    /// A cell is running: its variables are not in the store.
    Busy,
    /// Something the asker should say ("no variable `y`").
    Error {
        message: String,
    },
}

impl Answer {
    /// The answer as its one line (without the newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an answer always serializes")
    }
}

/// One variable of the notebook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    pub name: String,
    /// The type, without module paths (`Vec<f64>`, `Tensor`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// One line: `Tensor[64, 10] f32 cuda:0 2.5 KiB requires_grad`, `42`, `"text"`, `Vec len 3`.
    pub value: String,
    /// What the variable expands into (a tensor's shape, dtype, ...; a model's parameters);
    /// empty when it does not expand.
    #[serde(default)]
    pub fields: Vec<Field>,
}

/// One line inside an expanded variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub value: String,
}

/// One GPU as NVML sees it, and what this process's caching allocator holds on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// NVML's index (all the machine's GPUs, whatever `CUDA_VISIBLE_DEVICES` says).
    pub index: u32,
    pub name: String,
    /// Bytes in use on the GPU, by every process.
    pub memory_used: u64,
    pub memory_total: u64,
    /// Percent of the last sample period in which a kernel ran; `None` where NVML does not say.
    pub utilization: Option<u32>,
    /// The evaluation process's caching allocator on this GPU, where libtorch uses it.
    pub allocator: Option<Allocator>,
    /// The NVIDIA driver's version (`550.54.15`), the same for every GPU of the machine.
    #[serde(default)]
    pub driver: Option<String>,
    /// The newest CUDA the driver supports (`12.4`), as `nvidia-smi` heads its table.
    #[serde(default)]
    pub cuda: Option<String>,
    /// What NVML said when asked about this GPU (`nvmlDeviceGetMemoryInfo: GPU is lost`); the
    /// figures it could not give are 0 or `None`.
    #[serde(default)]
    pub error: Option<String>,
}

/// The CUDA caching allocator's bytes on one device (`torch.cuda.memory_allocated`,
/// `memory_reserved`, `max_memory_allocated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocator {
    /// The device as the process names it, `cuda:<ordinal>`.
    pub device: u32,
    pub allocated: u64,
    pub reserved: u64,
    pub peak: u64,
}

/// One variable as the evaluation process hands it to the prelude's `tchbook_prelude_answer`,
/// across a C function call between two separately built libraries (the kernel binary and the
/// cells'): the name and type name as UTF-8, and the value as a pointer to the `Box<dyn Any>`
/// evcxr's store holds, which only the cells' code (which made it) and the prelude (built with
/// them, by the same rustc) read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub name: *const u8,
    pub name_len: usize,
    pub type_name: *const u8,
    pub type_len: usize,
    pub value: *const std::ffi::c_void,
}

/// The prelude's entry point, `tchbook_prelude_answer`: the request's JSON, the variables
/// (none for [`Request::Usage`], or while a cell runs), and where to write the answer's JSON
/// (`answer(context, bytes, len)`, called once).
pub type PreludeAnswer = unsafe extern "C" fn(
    request: *const u8,
    request_len: usize,
    entries: *const Entry,
    count: usize,
    answer: extern "C" fn(*mut std::ffi::c_void, *const u8, usize),
    context: *mut std::ffi::c_void,
);

/// The symbol of [`PreludeAnswer`], which the evaluation process looks up in the cells'
/// libraries.
pub const PRELUDE_ANSWER_SYMBOL: &str = "tchbook_prelude_answer";

/// A connection to the side channel at `address` ([`crate::env::SIDE_CHANNEL`]'s value): `@name`
/// is a name in Linux's abstract socket namespace, which the kernel uses (no file: nothing is
/// left behind when a kernel is killed, and no file mode or umask decides who connects; the
/// evaluation process answers only its kernel, by the connecting process's credentials);
/// anything else is a socket file's path (a test's stand-in for the evaluation process).
pub fn connect(address: &std::ffi::OsStr) -> std::io::Result<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::connect_addr(&socket_address(address)?)
}

/// The side channel's listening socket at `address` (see [`connect`]).
pub fn bind(address: &std::ffi::OsStr) -> std::io::Result<std::os::unix::net::UnixListener> {
    std::os::unix::net::UnixListener::bind_addr(&socket_address(address)?)
}

fn socket_address(address: &std::ffi::OsStr) -> std::io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::SocketAddr;
    match address.as_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name),
        None => SocketAddr::from_pathname(address),
    }
}

/// A type's name without its module paths: `alloc::vec::Vec<tch::wrappers::tensor::Tensor>` →
/// `Vec<Tensor>`.
///
/// ```
/// use tchbook_wire::side_channel::short_type_name;
/// assert_eq!(short_type_name("alloc::vec::Vec<tch::wrappers::tensor::Tensor>"), "Vec<Tensor>");
/// assert_eq!(short_type_name("(f64, std::collections::hash::map::HashMap<alloc::string::String, i32>)"),
///            "(f64, HashMap<String, i32>)");
/// ```
pub fn short_type_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(word.rsplit("::").next().unwrap_or(word));
        word.clear();
    };
    for c in name.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abstract_address_has_no_file_and_a_path_has_one() {
        use std::io::{Read, Write};
        let name = format!("@tchbook-wire-test-{}", std::process::id());
        let listener = bind(name.as_ref()).unwrap();
        let mut client = connect(name.as_ref()).unwrap();
        let (mut served, _) = listener.accept().unwrap();
        client.write_all(b"x").unwrap();
        let mut byte = [0u8];
        served.read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"x");
        assert!(!std::path::Path::new(&name).exists());
        assert!(!std::path::Path::new(&name[1..]).exists());
        let dir = std::env::temp_dir().join(format!("tchbook-wire-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let _listener = bind(path.as_os_str()).unwrap();
        assert!(path.exists());
        connect(path.as_os_str()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_request_and_answer_reads_back_as_itself() {
        for request in [
            Request::Variables,
            Request::Rich { name: "x".into() },
            Request::Usage,
            Request::Comms,
            Request::Comm {
                msg_type: CommType::Msg,
                comm_id: "7f3a".into(),
                target_name: None,
                data: Map::from_iter([("method".into(), Value::from("request_state"))]),
            },
            Request::Comm {
                msg_type: CommType::Open,
                comm_id: "c0".into(),
                target_name: Some(crate::widgets::CONTROL_TARGET.into()),
                data: Map::new(),
            },
        ] {
            let line = serde_json::to_string(&request).unwrap();
            assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), request);
        }
        let answers = [
            Answer::Variables {
                variables: vec![Variable {
                    name: "x".into(),
                    type_name: "Tensor".into(),
                    value: "Tensor[2] f32 cpu 8 B".into(),
                    fields: vec![Field {
                        name: "shape".into(),
                        type_name: "Size".into(),
                        value: "[2]".into(),
                    }],
                }],
            },
            Answer::Rich {
                data: Map::from_iter([("text/plain".into(), Value::from("1"))]),
                metadata: Map::new(),
            },
            Answer::Usage {
                gpus: vec![Gpu {
                    index: 0,
                    name: "GPU".into(),
                    memory_used: 1,
                    memory_total: 2,
                    utilization: Some(3),
                    allocator: Some(Allocator {
                        device: 0,
                        allocated: 4,
                        reserved: 5,
                        peak: 6,
                    }),
                    driver: Some("550.54.15".into()),
                    cuda: Some("12.4".into()),
                    error: None,
                }],
            },
            Answer::Comm {
                messages: vec![crate::Message::CommClose {
                    comm_id: "7f3a".into(),
                    data: Map::new(),
                }],
            },
            Answer::Comms {
                comms: [("7f3a".to_owned(), crate::widgets::TARGET.to_owned())].into(),
            },
            Answer::Busy,
            Answer::Error {
                message: "no".into(),
            },
        ];
        for answer in answers {
            assert_eq!(
                serde_json::from_str::<Answer>(&answer.to_line()).unwrap(),
                answer
            );
        }
    }
}
