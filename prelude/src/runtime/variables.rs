//! The store that keeps a notebook's variables between cells, compiled once here.
//!
//! evcxr keeps each variable a cell defines in a store that the cell's generated function takes
//! and returns, and writes that store's module (a `HashMap<String, Box<dyn Any>>` and its
//! methods) into every cell that has variables, where rustc compiled, optimized and linked it
//! again: 8 ms of a trivial cell's rustc (99.8 against 91.8 ms replayed, on a 2-core machine).
//! The kernel's patched evcxr instead writes
//! `pub use ::tchbook_prelude::runtime::variables::*;` as that module's body, plus a two-line
//! `tchbook_variables` that calls [`walk_variables`], while the prelude is a dependency from the
//! evaluation process's start (vendor/README.md, change 14).
//!
//! The contract is the store evcxr writes into a cell (`evcxr_internal_runtime.rs`, as the
//! kernel's `tchbook_cellcode` crate extends it in `store.rs`): the same names ([`VariableStore`] with
//! `put_variable`, `check_variable`, `take_variable`, `forget_variable`, `lazy_arc`;
//! [`create_variable_store`]; the two line constants), the same lines printed. What a cell
//! instantiates per variable type is only a `Box::new`, a `TypeId` and a downcast; the map's
//! work is here, not generic.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ffi::c_void;

pub use tchbook_wire::VARIABLE_CHANGED_TYPE;

/// The line a cell prints, keyed, when a `?` in it returned an error: evcxr's generated code
/// prints this constant with `{}`.
pub const USER_ERROR_OCCURRED: tchbook_wire::Keyed =
    tchbook_wire::Keyed(tchbook_wire::USER_ERROR_OCCURRED);

/// The variables a notebook has stored, by name, each with its type's name (for the Variables
/// panel: a `dyn Any` cannot say it).
///
/// ```
/// use tchbook_prelude::runtime::variables::VariableStore;
///
/// let mut store = VariableStore::new();
/// store.put_variable("x", 41_i64);
/// assert!(store.check_variable::<i64>("x"));
/// assert_eq!(store.take_variable::<i64>("x") + 1, 42);
/// // Taken and not put back: checked as lost, never a panic at the next take.
/// assert!(!store.check_variable::<i64>("x"));
/// ```
#[derive(Default)]
pub struct VariableStore {
    variables: HashMap<String, Stored>,
}

struct Stored {
    value: Box<dyn Any>,
    type_name: &'static str,
}

impl VariableStore {
    /// An empty store.
    pub fn new() -> VariableStore {
        VariableStore::default()
    }

    /// Stores `value` as `name`, replacing what was there.
    #[inline]
    pub fn put_variable<T: 'static>(&mut self, name: &str, value: T) {
        self.put(name, Box::new(value), std::any::type_name::<T>());
    }

    /// Whether `name` is stored and holds a `T`. When it does not (a cell redefined the
    /// variable's type, or a stopped cell kept it), says so on stderr, tells the kernel (a keyed
    /// [`VARIABLE_CHANGED_TYPE`] line) and returns false.
    #[inline]
    pub fn check_variable<T: 'static>(&mut self, name: &str) -> bool {
        self.check(name, TypeId::of::<T>())
    }

    /// Takes `name` out of the store.
    ///
    /// # Panics
    /// If `name` is not stored or is not a `T`; the generated code checks both first.
    #[inline]
    pub fn take_variable<T: 'static>(&mut self, name: &str) -> T {
        match self.take(name).downcast::<T>() {
            Ok(value) => *value,
            Err(_) => changed_type(name),
        }
    }

    /// Drops `name`'s value, if stored: the kernel's code does this for a variable whose type a
    /// cell defined again with other fields, which cannot be read as the new type.
    ///
    /// ```
    /// use tchbook_prelude::runtime::variables::VariableStore;
    ///
    /// let mut store = VariableStore::new();
    /// store.put_variable("net", vec![1_u8; 4]);
    /// store.forget_variable("net");
    /// store.forget_variable("never stored"); // nothing to drop, nothing happens
    /// ```
    pub fn forget_variable(&mut self, name: &str) {
        self.variables.remove(name);
    }

    /// The shared value stored as `name`, made by `create` the first time (evcxr's async mode
    /// keeps its tokio runtime so).
    pub fn lazy_arc<T: 'static, F: FnOnce() -> T>(
        &mut self,
        name: &str,
        create: F,
    ) -> std::sync::Arc<T> {
        if !self.variables.contains_key(name) {
            self.put_variable(name, std::sync::Arc::new(create()));
        }
        match self.variables[name]
            .value
            .downcast_ref::<std::sync::Arc<T>>()
        {
            Some(value) => std::sync::Arc::clone(value),
            None => panic!("lazy_arc {name} changed type"),
        }
    }

    #[inline(never)]
    fn put(&mut self, name: &str, value: Box<dyn Any>, type_name: &'static str) {
        self.variables
            .insert(name.to_owned(), Stored { value, type_name });
    }

    #[inline(never)]
    fn check(&mut self, name: &str, expected: TypeId) -> bool {
        match self.variables.get(name) {
            Some(stored) if (*stored.value).type_id() != expected => {
                eprintln!("The type of the variable {name} was redefined, so was lost.");
            }
            // Gone from the store (a cell the user stopped in a wait kept it): lost as well,
            // rather than a panic in `take_variable` where the cell's function cannot unwind.
            None => eprintln!("The variable {name} stayed with a stopped cell, so was lost."),
            Some(_) => return true,
        }
        println!(
            "{}",
            tchbook_wire::keyed(&format!("{VARIABLE_CHANGED_TYPE}{name}"))
        );
        false
    }

    #[inline(never)]
    fn take(&mut self, name: &str) -> Box<dyn Any> {
        match self.variables.remove(name) {
            Some(stored) => stored.value,
            None => panic!("Variable '{name}' has gone missing"),
        }
    }
}

#[cold]
#[inline(never)]
fn changed_type(name: &str) -> ! {
    // Cannot happen after `check_variable`, which the generated code calls first.
    panic!("Variable '{name}' changed type")
}

/// A new, empty store on the heap, for the first cell that has variables; the cells pass it on
/// as a raw pointer. See [`walk_variables`] for one in use.
pub fn create_variable_store() -> *mut VariableStore {
    Box::into_raw(Box::new(VariableStore::new()))
}

/// What [`walk_variables`] calls for each variable: the caller's `context`, the name (pointer
/// and length), the type's name (pointer and length) and a pointer to the stored
/// `Box<dyn Any>`.
pub type Visit = extern "C" fn(*mut c_void, *const u8, usize, *const u8, usize, *const c_void);

/// Calls `visit` for each variable in `store`, for JupyterLab's Variables panel. The evaluation
/// process calls it (through the cell's `tchbook_variables`) between cells, never while a cell
/// holds the store; the value pointers are valid until the store changes.
///
/// # Safety
/// `store` is null or a store made by [`create_variable_store`], not in use elsewhere.
///
/// ```
/// use std::ffi::c_void;
/// use tchbook_prelude::runtime::variables::{create_variable_store, walk_variables};
///
/// extern "C" fn count(seen: *mut c_void, _: *const u8, _: usize, _: *const u8, _: usize, _: *const c_void) {
///     // SAFETY: the context passed below is this usize.
///     unsafe { *(seen as *mut usize) += 1 };
/// }
/// let store = create_variable_store();
/// // SAFETY: the store was just made and nothing else holds it.
/// unsafe { (*store).put_variable("loss", 0.25_f32) };
/// let mut seen = 0_usize;
/// // SAFETY: as above; the walk reads the store while nothing changes it.
/// unsafe { walk_variables(store, count, &mut seen as *mut usize as *mut c_void) };
/// assert_eq!(seen, 1);
/// // SAFETY: made by create_variable_store and no longer used.
/// drop(unsafe { Box::from_raw(store) });
/// ```
pub unsafe fn walk_variables(store: *const VariableStore, visit: Visit, context: *mut c_void) {
    // SAFETY: the caller's promise.
    let Some(store) = (unsafe { store.as_ref() }) else {
        return;
    };
    for (name, stored) in &store.variables {
        visit(
            context,
            name.as_ptr(),
            name.len(),
            stored.type_name.as_ptr(),
            stored.type_name.len(),
            &stored.value as *const Box<dyn Any> as *const c_void,
        );
    }
}
