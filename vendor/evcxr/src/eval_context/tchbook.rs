// tchbook patch (vendor/README.md): the patch's own code, kept out of evcxr's. A child of
// `eval_context`, so it reaches the private state it works on as evcxr's own code does.

use super::*;

impl EvalContext {
    /// tchbook patch: the source `completions` gives rust-analyzer, for an analyzer elsewhere.
    pub(crate) fn completion_source(
        &mut self,
        user_code: CodeBlock,
        mut state: ContextState,
        nodes: &[SyntaxNode],
        offset: usize,
    ) -> Result<crate::command_context::AnalysisSource> {
        state.config.display_final_expression = false;
        state.config.expand_use_statements = false;
        let user_code = state.apply(user_code, nodes)?;
        let code = state.analysis_code(user_code);
        Ok(crate::command_context::AnalysisSource {
            offset: code.user_offset_to_output_offset(offset)?,
            code: code.code_string(),
        })
    }

    /// tchbook patch: the source `hover` gives rust-analyzer, for an analyzer elsewhere.
    pub(crate) fn hover_source(
        &mut self,
        code: &str,
        state: &mut ContextState,
    ) -> Result<crate::command_context::AnalysisSource> {
        let (modified_code, hover_offset) = if code == "let" {
            (String::from("let _ = 1;"), 0)
        } else if code.ends_with('(') {
            (format!("{code});"), code.len() - 1)
        } else {
            (format!("{code};"), code.len())
        };
        let (user_code, code_info) = CodeBlock::from_original_user_code(&modified_code);
        let user_code = state.apply(user_code, &code_info.nodes)?;
        let pad_code = state.analysis_code(user_code);
        Ok(crate::command_context::AnalysisSource {
            offset: pad_code.user_offset_to_output_offset(hover_offset)?,
            code: pad_code.code_string(),
        })
    }

    /// tchbook patch: the types of the variables a cell defines, read from rustc instead of
    /// rust-analyzer, whose first analysis of the standard library and of large dependencies
    /// (tch) takes many seconds and hundreds of MB. The cell is type-checked once with every new
    /// variable compared to `&()`; each mismatch names the variable's type. Returns false when a
    /// type cannot be used as written (a closure, `impl Trait`, an unresolved `_`, a shortened
    /// name) or the cell has errors of its own: the caller then asks rust-analyzer as before.
    pub(super) fn probe_variable_types(
        &mut self,
        state: &mut ContextState,
        user_code: &CodeBlock,
    ) -> Result<bool, Error> {
        let new_variables = new_variable_names(state);
        if new_variables.is_empty() {
            return Ok(true);
        }
        let code = state.probe_code(user_code.clone());
        let errors = self.module.check(&code, &state.config)?;
        let Some(types) = probe_outcome(&errors, &new_variables)? else {
            return Ok(false);
        };
        apply_variable_types(state, types);
        Ok(true)
    }

    /// tchbook patch: a cell that defines variables, built and run while its type probe runs
    /// on another thread (on a second core, the probe's rustc costs the cell nothing). The
    /// build stores each new variable under the type rustc infers for it
    /// (`put_variable::<_>`), which needs no name for it; the names, for the cells that load
    /// the variables later, come from the probe, and are then checked in the cell's typed
    /// build code (as the sequential path's build would), still beside the build. Where the
    /// probe's names do not work, rust-analyzer is asked after the cell ran, as before. A
    /// build that fails hands its errors to the sequential loop, with the probe's types.
    pub(super) fn run_while_probing(
        &mut self,
        user_code: &CodeBlock,
        state: &mut ContextState,
        phases: &mut PhaseDetailsBuilder,
        callbacks: &mut EvalCallbacks,
    ) -> Result<WhileProbing, Error> {
        let new_variables = new_variable_names(state);
        let Some(checker) = self.module.parallel_checker(&state.config) else {
            return Ok(WhileProbing::NotTried);
        };
        if new_variables.is_empty() {
            return Ok(WhileProbing::NotTried);
        }
        let probe_code = state.probe_code(user_code.clone());
        let mut typed_state = state.clone();
        let typed_user_code = user_code.clone();
        let probe_variables = new_variables.clone();
        let probe = std::thread::spawn(move || -> Result<ProbeOutcome, Error> {
            let errors = checker.check(&probe_code)?;
            let types = match probe_outcome(&errors, &probe_variables) {
                Ok(Some(types)) => types,
                Ok(None) => return Ok(ProbeOutcome::NeedsAnalyzer),
                Err(error) => return Ok(ProbeOutcome::Refused(error)),
            };
            apply_variable_types(&mut typed_state, types.clone());
            let mode = typed_state.compilation_mode();
            let code = typed_state.code_to_compile(typed_user_code, mode);
            if checker.check(&code)?.iter().any(probed_type_failed) {
                return Ok(ProbeOutcome::NeedsAnalyzer);
            }
            Ok(ProbeOutcome::Typed(types))
        });

        let mut inferred = state.clone();
        for name in &new_variables {
            if let Some(variable) = inferred.variable_states.get_mut(name) {
                variable.type_name = "_".to_owned();
            }
        }
        let mode = inferred.compilation_mode();
        let result = self.try_run_statements(user_code.clone(), &mut inferred, mode, phases, callbacks);
        let outcome = probe
            .join()
            .unwrap_or_else(|_| Ok(ProbeOutcome::NeedsAnalyzer))?;
        phases.phase_complete("Variable types from rustc, beside the build");

        match result {
            Ok(artifacts) => {
                // The cell ran: its state (build number, variables a panic or `?` dropped) is
                // `inferred`'s, given the variables' names for later cells.
                *state = inferred;
                match outcome {
                    ProbeOutcome::Typed(types) => apply_variable_types(state, types),
                    ProbeOutcome::Refused(error) => return Err(error),
                    ProbeOutcome::NeedsAnalyzer => {
                        let analysis_code = state.analysis_code(user_code.clone());
                        self.fix_variable_types(state, analysis_code)?;
                        phases.phase_complete("Variable types from rust-analyzer");
                    }
                }
                if state
                    .variable_states
                    .values()
                    .any(|variable| variable.type_name == "_")
                {
                    bail!("A variable's type could not be determined. Please give it an explicit type.");
                }
                Ok(WhileProbing::Ran(artifacts.output))
            }
            // Errors for the sequential loop to fix or report, with the probe's types (its own
            // first build would have to wait for them).
            Err(error @ (Error::CompilationErrors(_) | Error::TypeRedefinedVariablesLost(_))) => {
                state.build_num = inferred.build_num;
                match outcome {
                    ProbeOutcome::Typed(types) => {
                        apply_variable_types(state, types);
                        Ok(WhileProbing::BuildFailed(error))
                    }
                    ProbeOutcome::NeedsAnalyzer | ProbeOutcome::Refused(_) => {
                        Ok(WhileProbing::NotTried)
                    }
                }
            }
            Err(error) => Err(error),
        }
    }
}

/// tchbook patch: whether `item` defines a type a variable can hold (or a trait a `dyn` value
/// can be). Every cell's crate has the same name and metadata, so such a type defined again
/// keeps its `TypeId`: the store's check cannot see that a stored value was made with other
/// fields, and reading it as the new type reads the old bytes as new fields (garbage, or a
/// crash of the evaluation process and every variable with it).
pub(crate) fn defines_a_type(item: &ast::Item) -> bool {
    matches!(
        item,
        ast::Item::Struct(_)
            | ast::Item::Enum(_)
            | ast::Item::Union(_)
            | ast::Item::TypeAlias(_)
            | ast::Item::Trait(_)
    )
}

impl ContextState {
    /// tchbook patch: the stored variables whose type names one of `replaced_types` (a type the
    /// cell defines again, with its old definition) that the cell changed, become
    /// `lost_to_redefinition`: no longer loaded, dropped from the store and reported by the cell.
    /// The same definition run again (a notebook run from the top) loses nothing.
    pub(super) fn lose_variables_of_redefined_types(
        &mut self,
        replaced_types: &HashMap<String, String>,
    ) {
        let changed: Names = replaced_types
            .iter()
            .filter(|(name, old)| {
                self.items_by_name
                    .get(*name)
                    .is_none_or(|new| new.code_string() != **old)
            })
            .map(|(name, _)| name.clone())
            .collect();
        let mut lost: Vec<String> = self
            .stored_variable_states
            .iter()
            .filter(|(_, variable)| {
                names_in(&variable.type_name)
                    .iter()
                    .any(|word| changed.contains(word))
            })
            .map(|(name, _)| name.clone())
            .collect();
        lost.sort();
        for name in &lost {
            self.stored_variable_states.remove(name);
            // A `let` of the same name in this cell is a new variable; the old one goes.
            if self
                .variable_states
                .get(name)
                .is_some_and(|variable| variable.move_state != VariableMoveState::New)
            {
                self.variable_states.remove(name);
            }
        }
        self.lost_to_redefinition = lost;
    }

    /// tchbook patch: drops `lost_to_redefinition`'s values from the store (their drop code is
    /// the old type's, in the cell that made them) and says so, as evcxr's store does when it
    /// finds a type changed.
    pub(super) fn forget_lost_variables_statements(&self) -> CodeBlock {
        let mut statements = CodeBlock::new();
        for name in &self.lost_to_redefinition {
            statements = statements.generated(format!(
                "evcxr_variable_store.forget_variable(stringify!({name})); \
                 eprintln!(\"The type of the variable {name} was redefined, so was lost.\");"
            ));
        }
        statements
    }
}

/// tchbook patch: the words of a cell's text (`names_in`). evcxr loads every stored variable
/// into each cell and stores it back after, so every cell instantiated the store's generic
/// code, the variable's drop and its unwinding for the type of every variable in the notebook
/// (one `Tensor` cost a trivial cell ~11 ms of rustc; a tutorial notebook holds dozens of
/// variables). A cell can use a variable only by writing its name: in code, or in a string a
/// format macro reads (`"{loss}"`), so every identifier-like word of the text counts, those in
/// strings and comments too. A variable no word names stays in the store, untouched.
pub(crate) type Names = std::collections::HashSet<String>;

/// tchbook patch: every identifier-like word of `text` (`Names`).
pub(crate) fn names_in(text: &str) -> Names {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// tchbook patch: the variables of `variables` that `named` holds.
pub(crate) fn named_only<'a>(
    variables: &'a HashMap<String, VariableState>,
    named: &'a Names,
) -> impl Iterator<Item = (&'a String, &'a VariableState)> {
    variables
        .iter()
        .filter(|(name, _)| named.contains(name.as_str()))
}

/// tchbook patch: a function, compiled once in a dependency of every cell, that runs a cell's
/// code: `fn(Box<dyn FnOnce() + '_>) -> bool` catches its panic, prints the panic notification
/// (keyed), flushes stdout and returns whether it panicked. evcxr writes that work into each
/// cell (`catch_unwind`, `println!` of the key read from the environment, the flush), and rustc
/// then instantiated, optimized and linked it again in every cell: about half of a trivial
/// cell's rustc time (~110 ms with it, ~65 ms through the runner, on a 2-core machine). Used only
/// while `crate_name` is a dependency, so a cleared context (`:clear`) builds as evcxr does.
#[derive(Clone, Debug)]
pub(crate) struct CellRunner {
    pub(crate) crate_name: String,
    /// The function's path, e.g. `::tchbook_prelude::runtime::run_cell`.
    pub(crate) function: String,
}

/// tchbook patch: the variable store, compiled once in a dependency of every cell. evcxr writes
/// its store (evcxr_internal_runtime.rs: a `HashMap<String, Box<dyn Any>>` and its methods)
/// into every cell that has variables, where rustc compiled it again each time: 8 ms of a
/// trivial cell's rustc (99.8 against 91.8 ms, on a 2-core machine). `module` must
/// provide that file's names (`VariableStore` with `put_variable`, `check_variable`,
/// `take_variable`, `forget_variable`, `lazy_arc`; `create_variable_store`; `USER_ERROR_OCCURRED`,
/// `VARIABLE_CHANGED_TYPE`) and `walk_variables` with `tchbook_variables`'s signature (the
/// prelude's `runtime::variables`). Used while `crate_name` is a dependency; a process that
/// started without it keeps evcxr's own store (`restart_child_process`).
#[derive(Clone, Debug)]
pub(crate) struct CompiledStore {
    pub(crate) crate_name: String,
    /// The module's path, e.g. `::tchbook_prelude::runtime::variables`.
    pub(crate) module: String,
}

impl CompiledStore {
    /// The body of the cell's `evcxr_internal_runtime` module: the compiled names, and the
    /// cell's own `tchbook_variables` (the evaluation process looks it up in each cell's library;
    /// a cell without a store defines none, so the last one found stays the store's).
    pub(crate) fn module_code(&self) -> CodeBlock {
        CodeBlock::new()
            .generated(format!("pub use {}::*;", self.module))
            .generated("#[allow(dead_code)] #[unsafe(no_mangle)]")
            .generated("pub extern \"C\" fn tchbook_variables(")
            .generated("  store: *const VariableStore, visit: Visit, context: *mut ::std::ffi::c_void) {")
            .generated("  unsafe { walk_variables(store, visit, context) }")
            .generated("}")
    }
}

impl ContextState {
    /// tchbook patch: the compiled store, while its crate is a dependency.
    pub(super) fn compiled_store(&self) -> Option<&CompiledStore> {
        self.config
            .compiled_store
            .as_ref()
            .filter(|store| self.external_deps.contains_key(&store.crate_name))
    }

    /// tchbook patch: forgets the compiled store unless its crate is a dependency now.
    pub(super) fn keep_compiled_store_if_depended_on(&mut self) {
        if self.compiled_store().is_none() {
            self.config.compiled_store = None;
        }
    }

    /// tchbook patch: the final value's marks, while their crate is a dependency.
    pub(super) fn value_marks(&self) -> Option<&CellRunner> {
        self.config
            .value_marks
            .as_ref()
            .filter(|marks| self.external_deps.contains_key(&marks.crate_name))
    }

    /// tchbook patch: the runner, while its crate is a dependency.
    pub(super) fn cell_runner(&self) -> Option<&CellRunner> {
        self.config
            .cell_runner
            .as_ref()
            .filter(|runner| self.external_deps.contains_key(&runner.crate_name))
    }

    /// tchbook patch: `user_code` run through `runner`; with a variable store, the variables
    /// `restorable_on_panic` are put back after a panic, as evcxr's own panic branch does.
    pub(super) fn run_through(
        &self,
        runner: &CellRunner,
        user_code: CodeBlock,
        needs_variable_store: bool,
    ) -> CodeBlock {
        // Without a store the cell's result is dropped; with one, a panic runs the restores.
        let condition = if needs_variable_store { "if " } else { "" };
        let call = CodeBlock::new()
            .generated(format!("{condition}{}(::std::boxed::Box::new(||{{", runner.function))
            .add_all(user_code);
        if needs_variable_store {
            call.generated("})) {")
                .add_all(self.restore_on_panic_statements())
                .generated("}")
        } else {
            call.generated("}));")
        }
    }

    /// tchbook patch: puts back the old values of `restorable_on_panic`'s variables.
    pub(super) fn restore_on_panic_statements(&self) -> CodeBlock {
        let mut statements = CodeBlock::new();
        for (var_name, var_state) in &self.restorable_on_panic {
            statements = statements.generated(format!(
                "evcxr_variable_store.put_variable::<{}>(stringify!({var_name}), {var_name});",
                var_state.type_name
            ));
        }
        statements
    }
}

/// tchbook patch: whether `name` appears in `nodes` other than as the name a pattern binds
/// (a use, a field, a path, or anything inside a macro call, where tokens are not parsed).
pub(super) fn names_other_than_binding(nodes: &[SyntaxNode], name: &str) -> bool {
    nodes.iter().any(|node| {
        node.descendants_with_tokens()
            .filter_map(|element| element.into_token())
            .any(|token| {
                token.kind() == SyntaxKind::IDENT
                    && token.text() == name
                    && token.parent().map(|parent| parent.kind()) != Some(SyntaxKind::NAME)
            })
    })
}

/// tchbook patch: what `run_while_probing` did.
pub(super) enum WhileProbing {
    /// Nothing: the sequential path runs the cell.
    NotTried,
    /// The cell ran; its outputs.
    Ran(EvalOutputs),
    /// The build (or the variable check before the cell's code) failed; the state has the
    /// probe's types, and the sequential loop starts from this result.
    BuildFailed(Error),
}

/// tchbook patch: what a cell's type probe found.
enum ProbeOutcome {
    /// Every new variable's type, checked where the build stores it.
    Typed(HashMap<String, String>),
    /// Not usable as written: rust-analyzer is asked.
    NeedsAnalyzer,
    /// A variable that cannot be persisted at all (a closure).
    Refused(Error),
}

/// tchbook patch: the variables a cell defines.
fn new_variable_names(state: &ContextState) -> Vec<String> {
    state
        .variable_states
        .iter()
        .filter(|(_, variable)| variable.move_state == VariableMoveState::New)
        .map(|(name, _)| name.clone())
        .collect()
}

/// tchbook patch: a type probe's errors read as the new variables' types; `None` when one of
/// them cannot be used as written, or the probe failed for another reason.
fn probe_outcome(
    errors: &[CompilationError],
    new_variables: &[String],
) -> Result<Option<HashMap<String, String>>, Error> {
    let mut found: HashMap<String, String> = HashMap::new();
    for error in errors {
        let variable = error.code_origins.iter().find_map(|origin| match origin {
            CodeKind::PackVariable { variable_name } => Some(variable_name.clone()),
            _ => None,
        });
        match (variable, error.code()) {
            (Some(variable), Some("E0308")) => {
                let Some(type_name) = probed_type_name(error) else {
                    return Ok(None);
                };
                if type_name.contains("{closure") {
                    bail!(
                        "The variable `{}` is a closure, which cannot be persisted.\n\
                         You can however persist closures if you box them. e.g.:\n\
                         let f: Box<dyn Fn()> = Box::new(|| {{println!(\"foo\")}});\n\
                         Alternatively, you can prevent evcxr from attempting to persist\n\
                         the variable by wrapping your code in braces.",
                        variable
                    );
                }
                if !probed_type_is_usable(&type_name) {
                    return Ok(None);
                }
                found.insert(variable, type_name);
            }
            // A variable the cell moves away: the build reports it as evcxr expects.
            (Some(_), Some("E0382")) => {}
            (Some(_), _) if error.level() == "error" => return Ok(None),
            // Warnings; the cell's own errors, which the build reports (the variables'
            // types do not matter then); a final value without `evcxr_display`, which the
            // build handles with its fallback.
            _ if error.level() != "error"
                || error.is_from_user_code()
                || error
                    .code_origins
                    .iter()
                    .any(|origin| matches!(origin, CodeKind::WithFallback(_))) => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(
        new_variables
            .iter()
            // No mismatch: the variable is `()`.
            .map(|name| {
                let type_name = found.remove(name).unwrap_or_else(|| "()".to_owned());
                (name.clone(), type_name)
            })
            .collect(),
    ))
}

/// tchbook patch: gives variables the types found for them.
fn apply_variable_types(state: &mut ContextState, types: HashMap<String, String>) {
    for (name, type_name) in types {
        if let Some(variable) = state.variable_states.get_mut(&name) {
            variable.type_name = type_name;
        }
    }
}

/// tchbook patch: the type a probe mismatch found, `&T` → `T`, with unsuffixed literals given
/// the types rustc gives them when nothing else decides (`i32`, `f64`).
/// rustc's note (`found reference `&std::num::NonZero<u8>``) is read first: with the
/// host's `-Ztrim-diagnostic-paths=false` it names types by their full public path, which works
/// in any cell; the label names them as briefly as rustc can.
fn probed_type_name(error: &CompilationError) -> Option<String> {
    let note = error.json["children"].as_array().and_then(|children| {
        children
            .iter()
            .filter_map(|child| child["message"].as_str())
            .find_map(|message| message.split_once("found reference `").map(|(_, found)| found))
    });
    let label = || {
        error.json["spans"]
            .as_array()?
            .iter()
            .find(|span| span["is_primary"].as_bool() == Some(true))?["label"]
            .as_str()?
            .split_once(", found `")
            .map(|(_, found)| found)
    };
    let found = note.or_else(label)?;
    let found = found.strip_suffix('`')?;
    let found = found.strip_prefix('&')?;
    Some(
        found
            .replace("{integer}", "i32")
            .replace("{float}", "f64"),
    )
}

/// tchbook patch: whether a type rustc printed can be written in code as it stands.
fn probed_type_is_usable(type_name: &str) -> bool {
    let words = type_name
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .filter(|word| !word.is_empty());
    !type_name.contains('{')
        && !type_name.contains("...")
        && !type_name.contains("impl ")
        && !type_name.is_empty()
        && words.into_iter().all(|word| word != "_" && word != "'_")
}

/// tchbook patch: a build error that says a type taken from rustc does not work where the
/// variable is stored.
pub(super) fn probed_type_failed(error: &CompilationError) -> bool {
    let (code, origins) = &error.top_level;
    origins
        .iter()
        .any(|origin| matches!(origin, CodeKind::PackVariable { .. }))
        && matches!(
            code.as_deref(),
            Some("E0412" | "E0422" | "E0433" | "E0603" | "E0658" | "E0308" | "E0107")
        )
}

/// tchbook patch: Rust code for a `String` holding `line` (Rust code for a `&str`) keyed as
/// `tchbook_wire::keyed` keys it, for the lines a cell's generated code prints to evcxr. Cells
/// cannot name `tchbook_wire`, so the code reads the key itself.
pub(crate) fn keyed_code(line: &str) -> String {
    format!(
        "::std::env::var({:?}).ok().filter(|k| !k.is_empty()).map_or_else(\
         || ::std::string::String::from({line}), \
         |k| ::std::format!(\"{{}}{{}} {{}}\", {:?}, k, {line}))",
        tchbook_wire::env::LINE_KEY,
        tchbook_wire::MARK,
    )
}
