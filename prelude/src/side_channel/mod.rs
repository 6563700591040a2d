//! The prelude's answers on the kernel's side channel (`tchbook_wire::side_channel`): what
//! JupyterLab's panels show of a notebook (each variable's one-line value and fields for the
//! debugger's Variables panel, a variable's rich view for "Render variable", GPU usage for the
//! Kernel Usage panel), and the front end's messages to the prelude's widgets
//! ([`crate::widgets`]).
//!
//! The evaluation process serves the channel and calls [`tchbook_prelude_answer`] with the
//! notebook's stored variables, each a `Box<dyn Any>`, between cells. One file per job: `summary.rs` (the line and
//! the fields of each type this prelude knows), `rich.rs` (rich views, the tensor heat map),
//! `debugger.rs` (the same line and fields of a stopped cell's tensor or var store, for the
//! kernel's debugger).

mod debugger;
mod rich;
mod summary;

use std::any::Any;
use std::ffi::c_void;
use tchbook_wire::side_channel::{Answer, Entry, Request, Variable, short_type_name};

/// The evaluation process's runtime calls this with a request of `tchbook_wire::side_channel`
/// (JSON), the stored variables and where to write the answer (JSON). Not for cells.
///
/// # Safety
/// `request` is `request_len` bytes; `entries` is `count` entries whose values point to the
/// `Box<dyn Any>`s of evcxr's store, made by cells built with this prelude, valid for the call,
/// with no cell running.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tchbook_prelude_answer(
    request: *const u8,
    request_len: usize,
    entries: *const Entry,
    count: usize,
    answer: extern "C" fn(*mut c_void, *const u8, usize),
    context: *mut c_void,
) {
    // SAFETY: the caller's promise above.
    let (request, entries) = unsafe {
        (
            std::slice::from_raw_parts(request, request_len),
            if count == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(entries, count)
            },
        )
    };
    // A panic must not unwind into the evaluation process (a C caller): it becomes an error answer.
    let line = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| respond(request, entries)))
        .unwrap_or_else(|_| {
            Answer::Error {
                message: "the prelude panicked while reading the variables".into(),
            }
            .to_line()
        });
    answer(context, line.as_ptr(), line.len());
}

/// One stored variable, read back from its entry.
struct Stored<'a> {
    name: &'a str,
    type_name: &'a str,
    value: &'a dyn Any,
}

fn respond(request: &[u8], entries: &[Entry]) -> String {
    let request: Request = match serde_json::from_slice(request) {
        Ok(request) => request,
        Err(error) => {
            return Answer::Error {
                message: format!("unreadable request: {error}"),
            }
            .to_line();
        }
    };
    let mut stored: Vec<Stored> = entries
        .iter()
        .map(|e| {
            // SAFETY: `tchbook_prelude_answer`'s contract: UTF-8 names (the store's `String`s and
            // `type_name`s) and a `Box<dyn Any>` behind `value`.
            unsafe {
                Stored {
                    name: str_at(e.name, e.name_len),
                    type_name: str_at(e.type_name, e.type_len),
                    value: &**(e.value as *const Box<dyn Any>),
                }
            }
        })
        .collect();
    stored.sort_by(|a, b| a.name.cmp(b.name));
    let answer = match request {
        Request::Variables => Answer::Variables {
            variables: stored.iter().map(variable).collect(),
        },
        Request::Rich { name } => match stored.iter().find(|s| s.name == name) {
            Some(s) => {
                let (data, metadata) = rich::view(s.value, &variable(s));
                Answer::Rich { data, metadata }
            }
            None => Answer::Error {
                message: format!("no variable `{name}` (values are those of the last cell)"),
            },
        },
        Request::Usage => Answer::Usage {
            gpus: crate::cuda::gpu_usage().gpus,
        },
        Request::Comms => Answer::Comms {
            comms: crate::widgets::open_comms(),
        },
        Request::Comm {
            msg_type,
            comm_id,
            target_name,
            data,
        } => crate::widgets::answer(msg_type, &comm_id, target_name.as_deref(), &data),
    };
    answer.to_line()
}

/// # Safety
/// `bytes` is `len` bytes of UTF-8 that outlive the result's use.
unsafe fn str_at<'a>(bytes: *const u8, len: usize) -> &'a str {
    // SAFETY: the caller's promise.
    unsafe { std::str::from_utf8(std::slice::from_raw_parts(bytes, len)).unwrap_or("?") }
}

fn variable(s: &Stored) -> Variable {
    let type_name = short_type_name(s.type_name);
    let (value, fields) =
        summary::describe(s.value).unwrap_or_else(|| (type_name.clone(), Vec::new()));
    Variable {
        name: s.name.to_owned(),
        type_name,
        value,
        fields,
    }
}
