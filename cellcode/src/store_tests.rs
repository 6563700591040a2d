//! `store.rs`, compiled here as it is in a cell without the prelude, against the names the
//! kernel reads (`tchbook_wire`) and as the generated code uses it.

#[path = "store.rs"]
mod store;

use std::ffi::c_void;
use store::{VariableStore, create_variable_store, tchbook_variables};
use tchbook_wire::{MARK, env::LINE_KEY};

#[test]
fn the_store_keys_its_lines_as_the_kernel_reads_them() {
    let source = include_str!("store.rs");
    let variable = format!("std::env::var({LINE_KEY:?})");
    assert!(source.contains(&variable), "{variable} is not read");
    let mark = format!("\\u{{{:x}}}", u32::from(MARK));
    assert!(source.contains(&mark), "{mark} is not written");
    assert_eq!(
        store::VARIABLE_CHANGED_TYPE,
        tchbook_wire::VARIABLE_CHANGED_TYPE
    );
    assert_eq!(
        store::USER_ERROR_OCCURRED.0,
        tchbook_wire::USER_ERROR_OCCURRED
    );
}

#[test]
fn a_variable_is_kept_checked_forgotten_and_merged() {
    let mut store = VariableStore::new();
    store.put_variable("x", 41_i64);
    assert!(store.check_variable::<i64>("x"));
    assert!(
        !store.check_variable::<String>("x"),
        "another type is not x"
    );
    assert_eq!(store.take_variable::<i64>("x") + 1, 42);
    assert!(
        !store.check_variable::<i64>("x"),
        "taken and not put back: lost"
    );
    let mut other = VariableStore::new();
    other.put_variable("y", "why".to_owned());
    store.merge(other);
    assert!(store.check_variable::<String>("y"));
    store.forget_variable("y");
    assert!(!store.check_variable::<String>("y"));
    let first = store.lazy_arc("shared", || 7_u8);
    assert!(std::sync::Arc::ptr_eq(
        &first,
        &store.lazy_arc("shared", || 8_u8)
    ));
}

extern "C" fn collect(
    context: *mut c_void,
    name: *const u8,
    name_len: usize,
    type_name: *const u8,
    type_len: usize,
    _value: *const c_void,
) {
    // SAFETY: `context` is the `Vec` the test passes; the names are valid for their lengths
    // while the walk runs.
    unsafe {
        let seen = &mut *(context as *mut Vec<(String, String)>);
        let text =
            |ptr, len| String::from_utf8_lossy(std::slice::from_raw_parts(ptr, len)).into_owned();
        seen.push((text(name, name_len), text(type_name, type_len)));
    }
}

#[test]
fn the_variables_panel_walks_each_name_with_its_type() {
    let store = create_variable_store();
    // SAFETY: `create_variable_store` returns a valid store, owned here until the end.
    unsafe { (*store).put_variable("v", vec![1_i32]) };
    let mut seen: Vec<(String, String)> = Vec::new();
    tchbook_variables(store, collect, &mut seen as *mut _ as *mut c_void);
    tchbook_variables(
        std::ptr::null(),
        collect,
        &mut seen as *mut _ as *mut c_void,
    );
    assert_eq!(seen, [("v".to_owned(), "alloc::vec::Vec<i32>".to_owned())]);
    // SAFETY: `store` came from `Box::into_raw` above and is not used again.
    drop(unsafe { Box::from_raw(store) });
}
