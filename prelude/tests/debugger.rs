//! What the kernel's debugger shows of a stopped cell's tensors and var stores
//! (`tchbook_prelude_debugger_value`, which its gdb printers call in the stopped process) is what
//! the Variables panel shows of them between cells: the same line and the same fields.

use crate::widgets::call;
use std::any::Any;
use std::ffi::{CStr, c_char, c_void};
use tchbook_prelude::prelude::*;
use tchbook_wire::side_channel::{Answer, Entry, Field, Request, Variable};

unsafe extern "C" {
    /// The prelude's entry point for the kernel's gdb printers.
    fn tchbook_prelude_debugger_value(what: u32, value: *const c_void) -> *const c_char;
}

const TENSOR: u32 = 0;
const VAR_STORE: u32 = 1;

/// The debugger's line of the value at `value`, and its fields.
fn debugger_view(what: u32, value: *const c_void) -> (String, Vec<Variable>) {
    // SAFETY: `value` points to a live value of the kind `what` names.
    let answer = unsafe { tchbook_prelude_debugger_value(what, value) };
    assert!(!answer.is_null(), "no answer for a value of kind {what}");
    // SAFETY: a NUL-terminated string, valid until the next call on this thread.
    let answer = unsafe { CStr::from_ptr(answer) }.to_str().expect("UTF-8");
    let answer: serde_json::Value = serde_json::from_str(answer).expect("one JSON object");
    let line = answer["line"].as_str().expect("a line").to_owned();
    let fields = serde_json::from_value(answer["fields"].clone()).expect("the fields");
    (line, fields)
}

/// The Variables panel's line and fields of `value`, stored as a cell would store it.
fn panel_view<T: Any>(value: T) -> Variable {
    let stored: Box<dyn Any> = Box::new(value);
    let (name, type_name) = ("stored", std::any::type_name::<T>());
    let entry = Entry {
        name: name.as_ptr(),
        name_len: name.len(),
        type_name: type_name.as_ptr(),
        type_len: type_name.len(),
        value: &stored as *const Box<dyn Any> as *const c_void,
    };
    let Answer::Variables { mut variables } = call(&Request::Variables, &[entry]) else {
        panic!("the variables")
    };
    variables.remove(0)
}

fn plain(fields: &[Variable]) -> Vec<Field> {
    fields
        .iter()
        .map(|f| Field {
            name: f.name.clone(),
            type_name: f.type_name.clone(),
            value: f.value.clone(),
        })
        .collect()
}

#[test]
fn a_stopped_cells_tensor_reads_and_expands_as_the_variables_panel_shows_it() {
    let xs = Tensor::randn([64, 10], (Kind::Float, Device::Cpu)).set_requires_grad(true);
    let threads = tch::get_num_threads();
    let (line, fields) = debugger_view(TENSOR, &xs as *const Tensor as *const c_void);
    // Described on this thread alone (OpenMP's count at 1 for the call), then put back.
    assert_eq!(tch::get_num_threads(), threads);
    let panel = panel_view(xs.shallow_clone());
    assert_eq!(line, "Tensor[64, 10] f32 cpu 2.5 KiB requires_grad");
    assert_eq!(line, panel.value);
    assert_eq!(plain(&fields), panel.fields);
    assert!(fields.iter().any(|f| f.name == "mean"), "{fields:?}");
    assert!(fields.iter().all(|f| f.fields.is_empty()), "{fields:?}");
}

#[test]
fn a_stopped_cells_var_store_expands_into_its_parameters_each_with_a_tensors_fields() {
    let vs = nn::VarStore::new(Device::Cpu);
    let _model = nn::linear(vs.root() / "fc", 10, 1, Default::default());
    let (line, parameters) = debugger_view(VAR_STORE, &vs as *const nn::VarStore as *const c_void);
    let tensors = vs.variables();
    let panel = panel_view(vs);
    assert_eq!(line, "VarStore 11 parameters 44 B cpu");
    assert_eq!(line, panel.value);
    assert_eq!(plain(&parameters), panel.fields);
    let names: Vec<&str> = parameters.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["fc.weight", "fc.bias"]);
    for parameter in &parameters {
        let tensor = tensors[&parameter.name].shallow_clone();
        assert_eq!(
            parameter.fields,
            panel_view(tensor).fields,
            "{}",
            parameter.name
        );
    }
}

#[test]
fn another_kind_of_value_gets_no_answer() {
    let number = 3u32;
    // SAFETY: kind 7 is none the prelude describes: it reads nothing.
    let answer =
        unsafe { tchbook_prelude_debugger_value(7, &number as *const u32 as *const c_void) };
    assert!(answer.is_null());
}
