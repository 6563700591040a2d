// tchbook patch (vendor/README.md): the glue between evcxr's state and the project's code
// (the `tchbook-cellcode` crate). A child of `eval_context`, so it reaches that private state.

use super::*;
use tchbook_cellcode::probe::{self, Probe};
use tchbook_cellcode::{AnalysisSource, CodeOrigin, Hook, Hooks, PanicReport, code};

impl EvalContext {
    /// tchbook patch: see `tchbook_cellcode::Hooks`. Call it before any cell stores a variable.
    pub fn set_hooks(&mut self, hooks: Hooks) {
        let deps = &self.committed_state.external_deps;
        self.committed_state.tchbook.hooks = hooks.available(|name| deps.contains_key(name));
    }

    /// tchbook patch: what the last cell's panic did to its variables, for the kernel to say.
    pub fn take_panic_report(&mut self) -> PanicReport {
        std::mem::take(&mut self.committed_state.tchbook.panic_report)
    }

    /// tchbook patch: `line` unkeyed where it is a protocol line (change 7); else `None`: the
    /// cell's text, sent on, or a final value's content block, kept in `output`.
    pub(super) fn protocol_line<'a>(
        &self,
        reader: &mut tchbook_wire::value::ValueReader,
        line: &'a str,
        output: &mut EvalOutputs,
    ) -> Option<&'a str> {
        match reader.line(line) {
            tchbook_wire::value::Read::Protocol(command) => return Some(command),
            tchbook_wire::value::Read::Block { mime, content } => {
                output.content_by_mime_type.insert(mime, content);
            }
            tchbook_wire::value::Read::Consumed => {}
            // Errors sending are ignored, as evcxr's: the receiver was dropped.
            tchbook_wire::value::Read::Text(_) => {
                let _ = self.stdout_sender.send(line.to_owned());
            }
        }
        None
    }

    /// tchbook patch: a cell that defines variables, built and run (its variables stored as
    /// `put_variable::<_>`) while its type probe runs on another thread (change 4).
    pub(super) fn run_while_probing(
        &mut self,
        user_code: &CodeBlock,
        state: &mut ContextState,
        phases: &mut PhaseDetailsBuilder,
        callbacks: &mut EvalCallbacks,
    ) -> Result<WhileProbing, Error> {
        let new_variables: Vec<String> = state.declared().cloned().collect();
        if new_variables.is_empty() {
            return Ok(WhileProbing::NoVariables);
        }
        if std::env::var_os(tchbook_wire::env::CHECK_SOURCE_SUPPORTED).is_none() {
            return Ok(WhileProbing::Analyzer);
        }
        let config = state.config.clone();
        let probe_code = state.probe_code(user_code.clone());
        let mut typed_state = state.clone();
        let typed_user_code = user_code.clone();
        let probe_variables = new_variables.clone();
        let probe = std::thread::spawn(move || -> Result<Probe, Error> {
            let check = |code: &CodeBlock| crate::module::check_beside(&config, code);
            let errors = check(&probe_code)?;
            let types = match probe_outcome(&errors, &probe_variables) {
                Probe::Typed(types) => types,
                other => return Ok(other),
            };
            apply_variable_types(&mut typed_state, types.clone());
            let mode = typed_state.compilation_mode();
            let code = typed_state.code_to_compile(typed_user_code, mode);
            if check(&code)?.iter().any(probed_type_failed) {
                return Ok(Probe::NeedsAnalyzer);
            }
            Ok(Probe::Typed(types))
        });

        let mut inferred = state.clone();
        apply_variable_types(&mut inferred, new_variables.iter().map(|name| (name.clone(), "_".into())));
        let mode = inferred.compilation_mode();
        let result = self.try_run_statements(user_code.clone(), &mut inferred, mode, phases, callbacks);
        let outcome = probe.join().unwrap_or_else(|_| Ok(Probe::NeedsAnalyzer))?;
        phases.phase_complete("Variable types from rustc, beside the build");

        match result {
            Ok(artifacts) => {
                // The cell ran: its state (build number, variables a panic or `?` dropped) is
                // `inferred`'s, given the variables' names for later cells.
                *state = inferred;
                match outcome {
                    Probe::Typed(types) => apply_variable_types(state, types),
                    Probe::Refused(message) => return Err(Error::Message(message)),
                    Probe::NeedsAnalyzer => {
                        let analysis_code = state.analysis_code(user_code.clone());
                        self.fix_variable_types(state, analysis_code)?;
                        phases.phase_complete("Variable types from rust-analyzer");
                    }
                }
                if state.variable_states.values().any(|variable| variable.type_name == "_") {
                    bail!("A variable's type could not be determined. Please give it an explicit type.");
                }
                Ok(WhileProbing::Ran(artifacts.output))
            }
            // Errors for the sequential loop to fix or report, with the probe's types (its own
            // first build would have to wait for them).
            Err(error @ (Error::CompilationErrors(_) | Error::TypeRedefinedVariablesLost(_))) => {
                state.build_num = inferred.build_num;
                match outcome {
                    Probe::Typed(types) => {
                        apply_variable_types(state, types);
                        Ok(WhileProbing::BuildFailed(error))
                    }
                    Probe::NeedsAnalyzer => Ok(WhileProbing::Analyzer),
                    Probe::Refused(message) => Err(Error::Message(message)),
                }
            }
            Err(error) => Err(error),
        }
    }
}

impl ContextState {
    /// tchbook patch: each type `nodes` define again, with its definition before the cell.
    pub(super) fn types_defined_again(&self, nodes: &[SyntaxNode]) -> HashMap<String, String> {
        let items = nodes.iter().filter_map(|node| ast::Item::cast(node.clone()));
        items
            .filter(tchbook_cellcode::names::defines_a_type)
            .filter_map(|item| item::item_name(&item))
            .filter_map(|name| {
                let old = self.items_by_name.get(&name)?.code_string();
                Some((name, old))
            })
            .collect()
    }

    /// tchbook patch: the stored variables whose type names one of `replaced_types` that the
    /// cell changed become `lost_to_redefinition` (change 16).
    pub(super) fn lose_variables_of_redefined_types(
        &mut self,
        replaced_types: &HashMap<String, String>,
    ) {
        let now = |name: &str| self.items_by_name.get(name).map(CodeBlock::code_string);
        let changed = tchbook_cellcode::names::changed_definitions(replaced_types, now);
        let stored = self.stored_variable_states.iter();
        let lost = tchbook_cellcode::names::of_changed_types(
            stored.map(|(name, variable)| (name.as_str(), variable.type_name.as_str())),
            &changed,
        );
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
        self.tchbook.lost_to_redefinition = lost;
    }

    /// tchbook patch: the cell as `analysis_code` writes it, with each new variable compared to
    /// `&()` where that code stores it, and no other variable stored (change 2).
    pub(super) fn probe_code(&self, user_code: CodeBlock) -> CodeBlock {
        let mut code = CodeBlock::new();
        for segment in self.analysis_code(user_code).segments {
            match &segment.kind {
                CodeKind::PackVariable { variable_name } => {
                    if self.declared().any(|name| name == variable_name) {
                        let statement = probe::probe_statement(variable_name);
                        code.pack_variable(variable_name.clone(), statement);
                    }
                }
                _ => code.segments.push(segment),
            }
        }
        code
    }

    /// tchbook patch: `wrap_user_code` by a state with only the variables `user_code`'s text
    /// names (change 15), after the statements that drop `lost_to_redefinition`'s values from
    /// the store and say so (change 16).
    pub(super) fn wrap_named_only(&self, user_code: CodeBlock, mode: CompilationMode) -> CodeBlock {
        let named = tchbook_cellcode::names::names_in(&user_code.code_string());
        let mut state = self.clone();
        state.variable_states.retain(|name, _| named.contains(name));
        state.stored_variable_states.retain(|name, _| named.contains(name));
        let lost = self.tchbook.lost_to_redefinition.iter();
        let forget = lost.fold(CodeBlock::new(), |code, name| code.generated(code::forget_statement(name)));
        state.wrap_user_code(forget.add_all(user_code), mode)
    }

    /// tchbook patch: the body of a cell's `evcxr_internal_runtime` module: the compiled store's
    /// names where there is one, else the project's store (change 11).
    pub(super) fn runtime_module(&self) -> String {
        let compiled = self.tchbook.hooks.compiled_store.as_ref();
        code::store_module(compiled.map(|store| store.path.as_str()))
    }

    /// tchbook patch: `user_code` run through `runner`, restoring variables after a panic.
    pub(super) fn run_through(&self, runner: &Hook, user_code: CodeBlock, with_store: bool) -> CodeBlock {
        let (before, after) = code::run_through(&runner.path, with_store);
        let call = CodeBlock::new().generated(before).add_all(user_code).generated(after);
        if with_store {
            call.add_all(self.restore_on_panic_statements()).generated("}")
        } else {
            call
        }
    }

    /// tchbook patch: a final value's `evcxr_display()` between the keyed marks of
    /// `tchbook_wire::value`, after the value is computed (change 17).
    pub(super) fn value_display(&self, segment: &Segment) -> String {
        let marks = self.tchbook.hooks.value_marks.as_ref().map(|marks| marks.path.as_str());
        let (before, after) = tchbook_wire::value::display_code(marks);
        let code = CodeBlock::new().generated(before).with_segment(segment.clone());
        code.generated(after).code_string()
    }

    /// tchbook patch: puts back the old values of `restorable_on_panic`'s variables.
    pub(super) fn restore_on_panic_statements(&self) -> CodeBlock {
        let statements = self.tchbook.restorable_on_panic.iter();
        statements.fold(CodeBlock::new(), |code, (name, state)| {
            code.generated(code::restore_statement(name, &state.type_name))
        })
    }

    /// tchbook patch: the variables a cell declares again without otherwise naming them, with
    /// their old state (change 5).
    pub(super) fn restorable(&self, nodes: &[SyntaxNode]) -> HashMap<String, VariableState> {
        let declared = self.declared().filter_map(|name| Some((name, self.stored_variable_states.get(name)?)));
        let restorable = declared.filter(|(name, _)| !tchbook_cellcode::names::names_other_than_binding(nodes, name));
        let available = |old: &VariableState| VariableState { move_state: VariableMoveState::Available, ..old.clone() };
        restorable.map(|(name, old)| (name.clone(), available(old))).collect()
    }

    /// tchbook patch: after a panic, what it did to the variables the cell declared.
    pub(super) fn after_panic(&mut self, held: &[String]) {
        self.tchbook.panic_report = PanicReport::new(
            self.declared().map(|name| (name.as_str(), self.stored_variable_states.contains_key(name))),
            self.tchbook.restorable_on_panic.keys().map(String::as_str),
            held,
        );
        self.variable_states.retain(|_, variable| variable.move_state != VariableMoveState::New);
        self.variable_states.extend(self.tchbook.restorable_on_panic.clone());
        for name in held {
            self.variable_states.remove(name);
            self.stored_variable_states.remove(name);
        }
    }

    /// tchbook patch: the variables the cell being built declares.
    fn declared(&self) -> impl Iterator<Item = &String> {
        let variables = self.variable_states.iter();
        variables.filter(|(_, variable)| variable.move_state == VariableMoveState::New).map(|(name, _)| name)
    }

    /// tchbook patch: evcxr's `evcxr_send_text_plain`, its block's lines keyed (change 7).
    pub(super) fn send_text_plain_def(&self) -> String {
        code::keyed_send_text_plain(SEND_TEXT_PLAIN_DEF)
    }
}

/// tchbook patch: the source evcxr's `completions` (`for_completion`) or `hover` gives
/// rust-analyzer, for an analyzer elsewhere (change 6).
pub(crate) fn analysis_source(
    mut state: ContextState,
    user_code: CodeBlock,
    nodes: &[SyntaxNode],
    offset: usize,
    for_completion: bool,
) -> Result<AnalysisSource> {
    if for_completion {
        state.config.display_final_expression = false;
        state.config.expand_use_statements = false;
    }
    let user_code = state.apply(user_code, nodes)?;
    let code = state.analysis_code(user_code);
    let offset = code.user_offset_to_output_offset(offset)?;
    Ok(AnalysisSource { code: code.code_string(), offset })
}

/// tchbook patch: `ContextState::tchbook`. `:clear` makes a fresh state, which has no hooks: a
/// cleared context's process stores its variables as evcxr's code does, and keeps doing so.
#[derive(Clone, Debug, Default)]
pub(super) struct State {
    /// What cells call instead of compiling it again (`EvalContext::set_hooks`).
    pub(super) hooks: Hooks,
    /// Variables the cell declares again without otherwise naming them, with their old state:
    /// put back if the cell panics (change 5).
    pub(super) restorable_on_panic: HashMap<String, VariableState>,
    /// Stored variables whose type the cell defines again differently: dropped from the store
    /// by the cell's code, and reported (change 16).
    pub(super) lost_to_redefinition: Vec<String>,
    /// What the last cell's panic did to its variables, until the kernel takes it.
    pub(super) panic_report: PanicReport,
}

/// tchbook patch: what `run_while_probing` did.
pub(super) enum WhileProbing {
    /// The cell defines no variable: no type step.
    NoVariables,
    /// The cell ran; its outputs.
    Ran(EvalOutputs),
    /// The build failed; the state has the probe's types, for the sequential loop.
    BuildFailed(Error),
    /// Nothing: the types are rust-analyzer's to find, before the sequential loop.
    Analyzer,
}

/// tchbook patch: a type probe's errors, as `tchbook_cellcode::probe` reads them.
fn probe_outcome(errors: &[CompilationError], new_variables: &[String]) -> Probe {
    let diagnostics = errors.iter().map(|error| probe::Diagnostic {
        json: &error.json,
        pack_variable: error.code_origins.iter().find_map(|origin| match origin {
            CodeKind::PackVariable { variable_name } => Some(variable_name.as_str()),
            _ => None,
        }),
        users_own: error.is_from_user_code()
            || error
                .code_origins
                .iter()
                .any(|origin| matches!(origin, CodeKind::WithFallback(_))),
    });
    probe::read(diagnostics, new_variables)
}

/// tchbook patch: gives variables the types found for them.
fn apply_variable_types(state: &mut ContextState, types: impl IntoIterator<Item = (String, String)>) {
    for (name, type_name) in types {
        if let Some(variable) = state.variable_states.get_mut(&name) {
            variable.type_name = type_name;
        }
    }
}

/// tchbook patch: see `tchbook_cellcode::probe::probed_type_failed`.
pub(super) fn probed_type_failed(error: &CompilationError) -> bool {
    probe::probed_type_failed(&error.json)
}

/// tchbook patch: each segment of `code`, in order, with where it came from (change 18).
pub(super) fn origins(code: &CodeBlock) -> Vec<(CodeOrigin, &str)> {
    let origin = |kind: &CodeKind| match kind {
        CodeKind::OriginalUserCode(meta) => CodeOrigin::Cell(meta.start_line),
        CodeKind::OtherUserCode => CodeOrigin::EarlierCell,
        _ => CodeOrigin::Generated,
    };
    code.segments.iter().map(|segment| (origin(&segment.kind), segment.code.as_str())).collect()
}
