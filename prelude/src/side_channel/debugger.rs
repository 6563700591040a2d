//! The Variables panel's view of a value, for the kernel's debugger while a cell is stopped at a
//! breakpoint: its gdb pretty-printers (`src/debugger/printers.py` in the kernel) call
//! [`tchbook_prelude_debugger_value`] in the stopped evaluation process for a local `Tensor` or
//! `VarStore`, and show what [`summary::describe`] gives the panel between cells: the line, and
//! the fields the value expands into.

use super::summary;
use std::any::Any;
use tch::Tensor;
use tch::nn::VarStore;
use tchbook_wire::side_channel::Variable;

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
/// timeout, so a fault here ends the call, not the stopped cell. The call runs with the
/// process's other threads held: see [`on_this_thread_alone`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tchbook_prelude_debugger_value(
    what: u32,
    value: *const std::ffi::c_void,
) -> *const std::ffi::c_char {
    let answer = std::panic::catch_unwind(|| {
        on_this_thread_alone(|| match what {
            // SAFETY: the caller's promise above.
            TENSOR => Some(tensor(unsafe { &*value.cast::<Tensor>() })),
            // SAFETY: the caller's promise above.
            VAR_STORE => Some(var_store(unsafe { &*value.cast::<VarStore>() })),
            _ => None,
        })
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

/// `describe` with libtorch's CPU kernels kept on the calling thread. gdb runs the call with every
/// other thread of the stopped process held, OpenMP's workers too: a kernel over more than
/// libtorch's grain (32,768 elements; a tensor's statistics) would hand its parts to those
/// workers and wait for them forever, and when gdb's timeout unwinds the call, OpenMP's team is
/// left mid-region and the cell never ends. With OpenMP's thread count at 1 on this thread (it is
/// the calling thread's own setting), libtorch runs each kernel inline; the count is put back.
fn on_this_thread_alone<T>(describe: impl FnOnce() -> T) -> T {
    let Some(set_num_threads) = openmp_set_num_threads() else {
        return describe();
    };
    // libtorch's own reading of OpenMP's count, which also makes libtorch set up this thread's
    // threads (on a thread new to it, its first kernel would set the count again, undoing ours).
    let before = tch::get_num_threads();
    // SAFETY: OpenMP's `omp_set_num_threads(int)`, for the calling thread.
    unsafe { set_num_threads(1) };
    let described = describe();
    // SAFETY: as above.
    unsafe { set_num_threads(before.max(1)) };
    described
}

/// OpenMP's `omp_set_num_threads` in the OpenMP runtime libtorch loaded (GNU's in PyTorch's
/// builds; Intel's or LLVM's in others), found once; `None` where there is none.
fn openmp_set_num_threads() -> Option<unsafe extern "C" fn(std::ffi::c_int)> {
    static FOUND: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let found = FOUND.get_or_init(|| {
        [c"libgomp.so.1", c"libiomp5.so", c"libomp.so"]
            .into_iter()
            .find_map(|runtime| {
                // SAFETY: with RTLD_NOLOAD dlopen loads nothing: it gives a handle of a library
                // already loaded (keeping it loaded until dlclose), or null.
                let library =
                    unsafe { libc::dlopen(runtime.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
                if library.is_null() {
                    return None;
                }
                // SAFETY: a handle dlopen gave; the name is NUL-terminated. libtorch keeps the
                // runtime loaded after this handle is closed.
                let function = unsafe {
                    let function = libc::dlsym(library, c"omp_set_num_threads".as_ptr());
                    libc::dlclose(library);
                    function
                };
                (!function.is_null()).then_some(function as usize)
            })
    });
    // SAFETY: the address of OpenMP's `void omp_set_num_threads(int)`.
    found.map(|function| unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(std::ffi::c_int)>(function)
    })
}
