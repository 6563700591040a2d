// The variable store written into a cell that has variables while the prelude is not one of its
// dependencies (a context cleared by `:clear`, a kernel whose prelude failed to load); with the
// prelude, a cell names the store compiled once there (`Hooks::compiled_store`). evcxr's own
// `evcxr_internal_runtime.rs`, with what the kernel adds: its protocol lines keyed
// (`tchbook_wire::keyed`), each variable's type name, `forget_variable`, and
// `tchbook_variables` for the Variables panel.
//
// A cell cannot name any crate of the kernel, so this file uses std alone and spells the line
// key's variable, the mark and the line constants itself; this crate's tests compile it as a
// module and check them against `tchbook_wire`. It is included as text
// ([`crate::code::store_module`]) and never compiled into the kernel: its `tchbook_variables`
// is looked up in each cell's library.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;

/// The line a cell prints, keyed, when a stored variable cannot be loaded (its type was defined
/// again, or a stopped cell kept it), followed by the variable's name.
pub const VARIABLE_CHANGED_TYPE: &str = "EVCXR_VARIABLE_CHANGED_TYPE:";
/// The line a cell prints, keyed, when a `?` in it returned an error; evcxr's generated code
/// prints it with `{}`.
pub const USER_ERROR_OCCURRED: Keyed = Keyed("EVCXR_ERROR_OCCURRED");

/// A protocol line, shown keyed as `tchbook_wire::keyed` keys it: unchanged where the key's
/// variable is unset or empty.
pub struct Keyed(pub &'static str);

impl std::fmt::Display for Keyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&keyed(self.0))
    }
}

fn keyed(line: &str) -> String {
    match std::env::var("TCHBOOK_LINE_KEY") {
        Ok(key) if !key.is_empty() => format!("\u{1e}{key} {line}"),
        _ => line.to_owned(),
    }
}

/// The notebook's variables by name, each with its type's name (a `dyn Any` cannot say it).
#[derive(Default)]
pub struct VariableStore {
    variables: HashMap<String, Box<dyn Any + 'static>>,
    types: HashMap<String, &'static str>,
}

impl VariableStore {
    pub fn new() -> VariableStore {
        VariableStore::default()
    }

    pub fn put_variable<T: 'static>(&mut self, name: &str, value: T) {
        self.variables.insert(name.to_owned(), Box::new(value));
        self.types
            .insert(name.to_owned(), std::any::type_name::<T>());
    }

    /// Whether `name` holds a `T`. When it does not (its type was defined again, or a stopped
    /// cell kept it, which loses it where evcxr's store would panic at the take), says so on
    /// stderr and to the kernel, and returns false.
    pub fn check_variable<T: 'static>(&mut self, name: &str) -> bool {
        match self.variables.get(name) {
            Some(v) if v.downcast_ref::<T>().is_none() => {
                eprintln!("The type of the variable {name} was redefined, so was lost.");
            }
            None => eprintln!("The variable {name} stayed with a stopped cell, so was lost."),
            Some(_) => return true,
        }
        println!("{}", keyed(&format!("{VARIABLE_CHANGED_TYPE}{name}")));
        false
    }

    pub fn take_variable<T: 'static>(&mut self, name: &str) -> T {
        match self.variables.remove(name) {
            Some(v) => match v.downcast() {
                Ok(value) => *value,
                // Not reached after `check_variable`.
                Err(_) => panic!("Variable changed type"),
            },
            None => panic!("Variable '{name}' has gone missing"),
        }
    }

    pub fn lazy_arc<T: 'static, F: FnOnce() -> T>(
        &mut self,
        name: &str,
        create: F,
    ) -> std::sync::Arc<T> {
        let value = self
            .variables
            .entry(name.to_owned())
            .or_insert_with(|| Box::new(std::sync::Arc::new(create())));
        match value.downcast_mut() {
            Some(value) => std::sync::Arc::clone(value),
            None => panic!("lazy_arc {name} changed type"),
        }
    }

    /// Drops `name`'s value, if stored (a cell defined its type again).
    pub fn forget_variable(&mut self, name: &str) {
        self.variables.remove(name);
        self.types.remove(name);
    }

    pub fn merge(&mut self, mut other: VariableStore) {
        self.variables.extend(other.variables.drain());
        self.types.extend(other.types.drain());
    }
}

/// What `tchbook_variables` calls for each variable: `context`, the name (pointer and length),
/// the type name (pointer and length) and the `Box<dyn Any>` holding the value.
pub type Visit = extern "C" fn(*mut c_void, *const u8, usize, *const u8, usize, *const c_void);

/// Each stored variable's name, type name and `Box<dyn Any>`, for the Variables panel; the
/// evaluation process calls it between cells with the store the last cell returned.
#[unsafe(no_mangle)]
pub extern "C" fn tchbook_variables(
    store: *const VariableStore,
    visit: Visit,
    context: *mut c_void,
) {
    if store.is_null() {
        return;
    }
    // SAFETY: the caller passes the store the last cell returned, while no cell runs.
    let store = unsafe { &*store };
    for (name, value) in &store.variables {
        let type_name = store.types.get(name).copied().unwrap_or("");
        visit(
            context,
            name.as_ptr(),
            name.len(),
            type_name.as_ptr(),
            type_name.len(),
            value as *const Box<dyn Any> as *const c_void,
        );
    }
}

pub fn create_variable_store() -> *mut VariableStore {
    Box::into_raw(Box::new(VariableStore::new()))
}
