//! Functions and modules compiled once, in a dependency of every cell, that evcxr calls from a
//! cell's code instead of writing their code into each cell (`EvalContext::set_hooks`).
//!
//! rustc compiles, optimizes and links whatever evcxr writes into a cell again for every cell;
//! code that does the same work each time costs a trivial cell's rustc time for nothing. evcxr
//! keeps a hook only if its crate is a dependency of the cells when the kernel names it
//! ([`Hooks::available`]); `:clear`, the only way a dependency goes, makes a fresh context
//! without hooks. So a context cleared, or a kernel whose prelude failed to load, builds as
//! evcxr does.

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
    /// rustc (99.8 against 91.8 ms). A process keeps the store it started with: the kernel
    /// names this hook before any cell stores a variable, and a cleared context, whose new
    /// process stores them as evcxr's code does, never has it. Code:
    /// [`crate::code::compiled_store_module`].
    pub compiled_store: Option<Hook>,
    /// `fn(end: bool)`, which marks the start and the end of a final value's display
    /// (`tchbook_wire::value::display_code`): written into each cell, `env::var` and
    /// the two writes cost a trivial cell 8 ms of rustc.
    pub value_marks: Option<Hook>,
}

impl Hooks {
    /// These hooks less those whose crate is not a dependency (`is_dependency` of its name).
    pub fn available(self, is_dependency: impl Fn(&str) -> bool) -> Hooks {
        let keep = |hook: Option<Hook>| hook.filter(|hook| is_dependency(&hook.crate_name));
        Hooks {
            cell_runner: keep(self.cell_runner),
            compiled_store: keep(self.compiled_store),
            value_marks: keep(self.value_marks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hooks_of_a_dependency_are_available() {
        let hooks = Hooks {
            cell_runner: Some(Hook::new("prelude", "::prelude::run_cell")),
            compiled_store: Some(Hook::new("other", "::other::variables")),
            value_marks: None,
        };
        let available = hooks.clone().available(|name| name == "prelude");
        assert_eq!(available.cell_runner, hooks.cell_runner);
        assert_eq!(available.compiled_store, None);
        assert_eq!(available.value_marks, None);
    }
}
