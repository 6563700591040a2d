// Copyright 2020 The Evcxr Authors.
//
// Licensed under the Apache License, Version 2.0 <LICENSE or
// https://www.apache.org/licenses/LICENSE-2.0> or the MIT license <LICENSE
// or https://opensource.org/licenses/MIT>, at your option. This file may not be
// copied, modified, or distributed except according to those terms.

// This file is both a module of evcxr and is included via include_str! then
// built as a crate itself. The latter is the primary use-case. It's included as
// a submodule only so that constants can be shared.

pub const VARIABLE_CHANGED_TYPE: &str = "EVCXR_VARIABLE_CHANGED_TYPE:";
pub const USER_ERROR_OCCURRED: &str = "EVCXR_ERROR_OCCURRED";

/// tchbook patch: `line` keyed as `tchbook_wire::keyed` keys it (change 7); cells cannot name
/// that crate, so the kernel's tests check the names spelled here are its.
#[allow(dead_code)]
pub fn keyed(line: &str) -> String {
    match std::env::var("TCHBOOK_LINE_KEY") {
        Ok(key) if !key.is_empty() => format!("\u{1e}{key} {line}"),
        _ => line.to_owned(),
    }
}

pub struct VariableStore {
    variables: std::collections::HashMap<String, Box<dyn std::any::Any + 'static>>,
    // tchbook patch: each variable's type name, for the Variables panel (change 11).
    types: std::collections::HashMap<String, &'static str>,
}

impl VariableStore {
    pub fn new() -> VariableStore {
        VariableStore {
            variables: std::collections::HashMap::new(),
            types: std::collections::HashMap::new(),
        }
    }

    pub fn put_variable<T: 'static>(&mut self, name: &str, value: T) {
        self.variables.insert(name.to_owned(), Box::new(value));
        // tchbook patch: the type's name beside the value.
        self.types
            .insert(name.to_owned(), std::any::type_name::<T>());
    }

    pub fn check_variable<T: 'static>(&mut self, name: &str) -> bool {
        match self.variables.get(name) {
            Some(v) if v.downcast_ref::<T>().is_none() => {
                eprintln!("The type of the variable {name} was redefined, so was lost.",);
            }
            // tchbook patch: one a stopped cell kept is lost, not a panic (change 19).
            None => eprintln!("The variable {name} stayed with a stopped cell, so was lost."),
            Some(_) => return true,
        }
        println!("{}", keyed(&format!("{VARIABLE_CHANGED_TYPE}{name}")));
        false
    }

    pub fn take_variable<T: 'static>(&mut self, name: &str) -> T {
        match self.variables.remove(name) {
            Some(v) => {
                if let Ok(value) = v.downcast() {
                    *value
                } else {
                    // Shouldn't happen so long as check_variable was called.
                    panic!("Variable changed type");
                }
            }
            None => panic!("Variable '{name}' has gone missing"),
        }
    }

    pub fn lazy_arc<T: 'static, F: FnOnce() -> T>(
        &mut self,
        name: &str,
        create: F,
    ) -> std::sync::Arc<T> {
        if let Some(value) = self
            .variables
            .entry(name.to_owned())
            .or_insert_with(|| Box::new(std::sync::Arc::new(create())))
            .downcast_mut()
        {
            std::sync::Arc::clone(value)
        } else {
            panic!("lazy_arc {name} changed type");
        }
    }

    /// tchbook patch: drops `name`'s value, if stored (its type was defined again: change 16).
    #[allow(dead_code)]
    pub fn forget_variable(&mut self, name: &str) {
        self.variables.remove(name);
        self.types.remove(name);
    }

    pub fn merge(&mut self, mut other: VariableStore) {
        self.variables.extend(other.variables.drain());
        // tchbook patch: the type names with their values.
        self.types.extend(other.types.drain());
    }
}

/// tchbook patch: each stored variable's name, type name and `Box<dyn Any>`, for the Variables
/// panel; called between cells (change 11).
#[allow(dead_code)]
#[unsafe(no_mangle)]
pub extern "C" fn tchbook_variables(
    store: *const VariableStore,
    visit: extern "C" fn(*mut std::ffi::c_void, *const u8, usize, *const u8, usize, *const std::ffi::c_void),
    context: *mut std::ffi::c_void,
) {
    if store.is_null() {
        return;
    }
    // SAFETY: the runtime passes the store the last cell returned, while no cell runs.
    let store = unsafe { &*store };
    for (name, value) in &store.variables {
        let type_name = store.types.get(name).copied().unwrap_or("");
        visit(
            context,
            name.as_ptr(),
            name.len(),
            type_name.as_ptr(),
            type_name.len(),
            value as *const Box<dyn std::any::Any> as *const std::ffi::c_void,
        );
    }
}

pub fn create_variable_store() -> *mut VariableStore {
    Box::into_raw(Box::new(VariableStore::new()))
}
