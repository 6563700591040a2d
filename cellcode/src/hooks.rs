//! Functions and modules compiled once, in a dependency of every cell, that evcxr calls from a
//! cell's code instead of writing their code into each cell (`EvalContext::set_hooks`).
//!
//! rustc compiles, optimizes and links whatever evcxr writes into a cell again for every cell;
//! code that does the same work each time costs a trivial cell's rustc time for nothing. Each
//! hook is used only while its crate is a dependency of the cells ([`Hook::crate_name`]), so a
//! context cleared by `:clear`, or a kernel whose prelude failed to load, builds as evcxr does.

/// One item compiled once: its crate and its path from a cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// The crate that must be a dependency of the cell for the hook to be used.
    pub crate_name: String,
    /// The item's path, e.g. `::tchbook_prelude::runtime::run_cell`.
    pub path: String,
}

impl Hook {
    /// The item at `path`, in `crate_name`.
    pub fn new(crate_name: &str, path: &str) -> Hook {
        Hook {
            crate_name: crate_name.to_owned(),
            path: path.to_owned(),
        }
    }
}

/// The hooks evcxr calls where it would write their code into a cell. Each is `None` until the
/// kernel names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    /// `fn(Box<dyn FnOnce() + '_>) -> bool`, which runs a cell's code: catches its panic,
    /// prints the panic notification (keyed), flushes stdout and returns whether it panicked.
    /// evcxr writes that into each cell (`catch_unwind`, a `println!` of the key read from the
    /// environment, the flush): about half of a trivial cell's rustc time (~110 ms with it,
    /// ~65 ms through the runner, on a 2-core machine). Code: [`crate::code::run_through`].
    pub cell_runner: Option<Hook>,
    /// The variable store's module: the names of the store a cell otherwise carries
    /// (`store.rs`, evcxr's `evcxr_internal_runtime.rs` with the kernel's additions:
    /// `VariableStore` with `put_variable`, `check_variable`, `take_variable`,
    /// `forget_variable`, `lazy_arc`; `create_variable_store`; `USER_ERROR_OCCURRED`,
    /// `VARIABLE_CHANGED_TYPE`) and `walk_variables` with `tchbook_variables`' signature.
    /// evcxr writes the store into every cell that has variables: 8 ms of a trivial cell's
    /// rustc (99.8 against 91.8 ms). A process keeps the store it started with, so evcxr
    /// forgets this hook at a restart unless its crate is still a dependency. Code:
    /// [`crate::code::compiled_store_module`].
    pub compiled_store: Option<Hook>,
    /// `fn(end: bool)`, which marks the start and the end of a final value's display
    /// (`tchbook_wire::value::display_code_through`): written into each cell, `env::var` and
    /// the two writes cost a trivial cell 8 ms of rustc.
    pub value_marks: Option<Hook>,
}
