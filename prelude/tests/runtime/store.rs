//! The variable store keeps values and their type names, and refuses another type under a name.

#[test]
fn the_variable_store_keeps_values_and_their_type_names_and_refuses_another_type() {
    use tchbook_prelude::runtime::variables::{
        VariableStore, create_variable_store, walk_variables,
    };
    let store = create_variable_store();
    // SAFETY: the store was just made and nothing else holds it.
    let held = unsafe { &mut *store };
    held.put_variable("losses", vec![0.5_f32, 0.25]);
    held.put_variable("steps", 2_usize);
    // A later cell expecting another type for `steps` gets false (and the variable is dropped by
    // its caller); the right type reads it back.
    assert!(!held.check_variable::<u32>("steps"));
    assert!(held.check_variable::<usize>("steps"));
    // One the store does not hold (a stopped cell kept it) is lost too, never a panic later.
    assert!(!held.check_variable::<i8>("never stored"));

    extern "C" fn visit(
        seen: *mut std::ffi::c_void,
        name: *const u8,
        name_len: usize,
        type_name: *const u8,
        type_len: usize,
        value: *const std::ffi::c_void,
    ) {
        // SAFETY: walk_variables passes the context it was given (this Vec).
        let seen = unsafe { &mut *(seen as *mut Vec<(String, String, bool)>) };
        // SAFETY: the names are the store's strings, valid while it is walked.
        let text = |p, n| unsafe { std::str::from_utf8(std::slice::from_raw_parts(p, n)) };
        // SAFETY: each value pointer is a stored `Box<dyn Any>`, valid while it is walked.
        let value = unsafe { &*(value as *const Box<dyn std::any::Any>) };
        seen.push((
            text(name, name_len).unwrap().to_owned(),
            text(type_name, type_len).unwrap().to_owned(),
            value.is::<usize>(),
        ));
    }
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    // SAFETY: the store is ours and not in use.
    unsafe { walk_variables(store, visit, &mut seen as *mut _ as *mut std::ffi::c_void) };
    seen.sort();
    assert_eq!(
        seen,
        [
            ("losses".into(), "alloc::vec::Vec<f32>".into(), false),
            ("steps".into(), "usize".into(), true),
        ]
    );
    assert_eq!(held.take_variable::<Vec<f32>>("losses"), [0.5, 0.25]);
    held.forget_variable("steps");
    held.forget_variable("never stored");
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    // SAFETY: the store is ours and not in use.
    unsafe { walk_variables(store, visit, &mut seen as *mut _ as *mut std::ffi::c_void) };
    assert!(seen.is_empty(), "{seen:?}");
    let arc = held.lazy_arc("shared", || 7_u8);
    assert!(std::sync::Arc::ptr_eq(
        &arc,
        &held.lazy_arc("shared", || 9_u8)
    ));
    // SAFETY: made by create_variable_store, no longer used.
    drop(unsafe { Box::<VariableStore>::from_raw(store) });
    // A null store (no cell has stored a variable yet) has nothing to walk.
    // SAFETY: null is a store walk_variables accepts.
    unsafe { walk_variables(std::ptr::null(), visit, std::ptr::null_mut()) };
}
