//! The Variables panel's view of a value, for the kernel's debugger while a cell is stopped at a
//! breakpoint: its gdb pretty-printers (`src/debugger/printers.py` in the kernel) call
//! [`tchbook_prelude_debugger_value`] in the stopped evaluation process for a local `Tensor` or
//! `VarStore`, and show what [`summary::describe`] gives the panel between cells: the line, and
//! the fields the value expands into.

use super::summary;
use std::any::Any;
use tch::Tensor;
use tch::nn::VarStore;
use tchbook_wire::panels::Variable;

/// What [`tchbook_prelude_debugger_value`] describes: a `Tensor`.
const TENSOR: u32 = 0;
/// What [`tchbook_prelude_debugger_value`] describes: a `VarStore`.
const VAR_STORE: u32 = 1;

thread_local! {
    /// The last answer [`tchbook_prelude_debugger_value`] gave, kept until its next call.
    static ANSWER: std::cell::RefCell<std::ffi::CString> = std::cell::RefCell::default();
}

/// The Variables panel's line and fields of a `Tensor` (`what` 0) or a `VarStore` (`what` 1) at
/// `value`, as one line of JSON, for the kernel's debugger: the Variables panel and the debug
/// console then show `Tensor[64, 10] f32 cpu 2.5 KiB requires_grad`, expanding into its shape,
/// dtype, device, ..., rather than tch's `Tensor { c_tensor: 0x… }`. A var store's fields are
/// its parameters, each with the fields a tensor variable of the panel has:
///
/// ```json
/// {"line":"VarStore 11 parameters 44 B cpu","fields":[{"name":"bias","type":"Tensor",
///  "value":"Tensor[1] f32 cpu 4 B requires_grad","fields":[{"name":"shape","type":"Size",
///  "value":"[1]"},…]},…]}
/// ```
///
/// Returns the NUL-terminated JSON, valid until the next call on the same thread; null for
/// another `what` or if describing panicked. Not for cells.
///
/// # Safety
/// `value` points to a value of that type. gdb cannot know that a local was not moved out of
/// (its memory then names a freed tensor): its printers call this with `unwindonsignal` on and a
/// timeout, so a fault here ends the call, not the stopped cell.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tchbook_prelude_debugger_value(
    what: u32,
    value: *const std::ffi::c_void,
) -> *const std::ffi::c_char {
    let answer = std::panic::catch_unwind(|| match what {
        // SAFETY: the caller's promise above.
        TENSOR => Some(tensor(unsafe { &*value.cast::<Tensor>() })),
        // SAFETY: the caller's promise above.
        VAR_STORE => Some(var_store(unsafe { &*value.cast::<VarStore>() })),
        _ => None,
    });
    let Ok(Some(answer)) = answer else {
        return std::ptr::null();
    };
    // JSON escapes every control character: the text holds no NUL.
    let answer = std::ffi::CString::new(answer.to_string()).unwrap_or_default();
    ANSWER.with(|kept| {
        *kept.borrow_mut() = answer;
        kept.borrow().as_ptr()
    })
}

/// A tensor's line, and its fields, none of which expands further.
fn tensor(t: &Tensor) -> serde_json::Value {
    let (line, fields) = summary::describe(t as &dyn Any).unwrap_or_default();
    let fields: Vec<Variable> = fields
        .into_iter()
        .map(|field| Variable {
            name: field.name,
            type_name: field.type_name,
            value: field.value,
            fields: Vec::new(),
        })
        .collect();
    serde_json::json!({"line": line, "fields": fields})
}

/// A var store's line, and its parameters, each expanding into the fields of a tensor.
fn var_store(vs: &VarStore) -> serde_json::Value {
    let (line, parameters) = summary::describe(vs as &dyn Any).unwrap_or_default();
    let tensors = vs.variables();
    let fields: Vec<Variable> = parameters
        .into_iter()
        .map(|parameter| {
            let fields = tensors
                .get(&parameter.name)
                .and_then(|t| summary::describe(t as &dyn Any))
                .map(|(_, fields)| fields)
                .unwrap_or_default();
            Variable {
                name: parameter.name,
                type_name: parameter.type_name,
                value: parameter.value,
                fields,
            }
        })
        .collect();
    serde_json::json!({"line": line, "fields": fields})
}
