//! One cell through evcxr: the cell's `:` commands rewritten, its input requests passed on, and
//! what its outcome means for the user (a value, a table, a compile error, a lost process).

use super::commands::{Listing, PlainFormat, Rewritten, rewrite_commands};
use super::diagnostics::{describe_evcxr_error, diagnostic};
use super::interrupt::kill_process_group;
use super::pump::PumpMessage;
use super::{CellError, CellValue, CommandTable, Diagnostic, Event, Finished, Interrupter};
use crate::cellbuild::cache;
use crate::commands::Command;
use crate::debugger::Session;
use crate::interrupt_points::{self, Inserted};
use crossbeam_channel::Sender;
use evcxr::{CommandContext, EvalCallbacks, EvalOutputs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tchbook_cellcode::{CodeOrigin, PanicReport};
use tchbook_wire::commands::Command::Answer;

/// The panic hook of a process without the prelude: panics as `tchbook_wire` messages on stdout.
const WIRE_PANIC_HOOK: &str = "tchbook_wire::install_panic_hook(tchbook_wire::print_line);";

/// What the engine thread owns: evcxr's context and what it knows of the evaluation process.
pub(super) struct State {
    pub(super) context: CommandContext,
    pub(super) pump: Sender<PumpMessage>,
    interrupter: Interrupter,
    pub(super) prelude_loaded: bool,
    /// Whether the wire crate's panic hook was installed on its own (no prelude).
    wire_hook: bool,
    /// How std values are shown (`:fmt`, `:types`); the prelude's `PlainDisplay` follows it.
    plain_format: PlainFormat,
    cells: u64,
    child_pid: u32,
    /// Where cells are built, to tell a full disk from a real build failure.
    build_dir: PathBuf,
    /// Whether the cells' loops get the interrupt check (`TCHBOOK_INTERRUPT_CHECKS`).
    interrupt_checks: bool,
    debugger: Arc<Session>,
}

/// How a cell's reads of stdin are answered: by the front end, asked through the pump, or, without
/// stdin allowed, with nothing.
struct Input {
    pump: Sender<PumpMessage>,
    interrupter: Interrupter,
    allow_stdin: bool,
}

impl Input {
    /// The line evcxr passes to the evaluation process for one read with `prompt`.
    fn answer(&self, prompt: String, password: bool) -> String {
        // Without stdin allowed, an empty answer: `input()` returns "", a read of stdin gets
        // end-of-file.
        if !self.allow_stdin {
            return Answer(String::new()).to_line();
        }
        let (reply, answer) = crossbeam_channel::bounded(1);
        let _ = self.pump.send(PumpMessage::Event(Event::Input {
            prompt,
            password,
            reply,
        }));
        let answer = answer.recv().unwrap_or_default();
        if self.interrupter.was_interrupted() {
            // The evaluation process ends the wait itself; an empty line is no command, and no
            // answer.
            return String::new();
        }
        // Data whatever it holds (`tchbook_wire::commands`): line breaks included.
        Answer(answer).to_line()
    }
}

impl State {
    pub(super) fn new(
        context: CommandContext,
        pump: Sender<PumpMessage>,
        interrupter: Interrupter,
        build_dir: PathBuf,
        debugger: Arc<Session>,
    ) -> State {
        let child_pid = context.process_handle().lock().unwrap().id();
        State {
            context,
            pump,
            interrupter,
            prelude_loaded: false,
            wire_hook: false,
            plain_format: PlainFormat::default(),
            cells: 0,
            child_pid,
            build_dir,
            debugger,
            interrupt_checks: std::env::var(tchbook_wire::env::INTERRUPT_CHECKS)
                .map_or(true, |value| value.trim() != "0"),
        }
    }

    /// Without the prelude (whose `runtime::attach` installs it), the panic hook comes from the
    /// wire crate alone, a dependency of its own: panics then still read as the cell's error.
    /// It is installed from a cell because cells link their own libstd: a hook set by the kernel
    /// binary would never see their panics.
    pub(super) fn install_panic_hook(&mut self, wire_dir: &Path) {
        let code = format!(
            ":dep tchbook_wire = {{ path = {:?}, package = \"tchbook-wire\" }}\n{WIRE_PANIC_HOOK}",
            wire_dir.display().to_string()
        );
        match self.context.execute(&code) {
            Ok(_) => self.wire_hook = true,
            Err(error) => tracing::error!("installing the panic hook failed: {error}"),
        }
    }

    /// After the evaluation process restarted (crash, kill, `:restart`, `:clear`), the new
    /// process needs the prelude's runtime (with its panic hook), or the panic hook, again.
    fn reattach(&mut self) {
        let code = if self.prelude_loaded {
            format!(
                "tchbook_prelude::runtime::attach();\n{}",
                self.plain_format.prelude_call()
            )
        } else if self.wire_hook {
            WIRE_PANIC_HOOK.to_owned()
        } else {
            return;
        };
        if let Err(error) = self.context.execute(&code) {
            tracing::error!("re-attaching the runtime failed: {error}");
        }
    }

    fn variables(&self) -> BTreeSet<String> {
        self.context
            .variables_and_types()
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    pub(super) fn execute(&mut self, code: &str, allow_stdin: bool) -> Finished {
        self.cells += 1;
        // evcxr parses the cell on this thread, recursively: text nested too deep for that is
        // refused before it gets there (`syntax::MAX_NESTING`).
        if let Some(why) = crate::syntax::too_deeply_nested(code) {
            return Finished {
                outcome: Err(CellError::Failed(why)),
                source: None,
            };
        }
        let before = self.variables();
        let input = Input {
            pump: self.pump.clone(),
            interrupter: self.interrupter.clone(),
            allow_stdin,
        };
        // With the debugger on: the build's debug information, the cell's breakpoints.
        let prepared = Session::prepare_build(&self.debugger, code, &self.build_dir);
        let loading = self.interrupter.clone();
        let before_load = move |segments: &[(CodeOrigin, &str)]| {
            prepared(segments);
            loading.loading();
        };
        // evcxr does not export its `InputRequest` type; the closure's parameter type comes
        // from the field it is written into.
        let mut callbacks = EvalCallbacks {
            input_reader: &move |request| input.answer(request.prompt, request.is_password),
            before_load: &before_load,
        };
        let code = rewrite_commands(code);
        let (result, points, interrupted) = self.run(&code, &mut callbacks);
        let on_panic = self.context.take_panic_report();
        release_freed_memory();
        let source = self.context.last_source().ok();
        let outcome = match result {
            Ok(outputs) => Ok(self.value(outputs, on_panic, &code, interrupted)),
            Err(error) => Err(self.error(error, &before, interrupted, points.as_ref())),
        };
        let outcome = self.after_cell(outcome, &code);
        Finished { outcome, source }
    }

    /// Runs the cell in evcxr with the prelude's interrupt check in each loop
    /// (`interrupt_points`); a cell whose checks fail to compile where they stand runs as typed,
    /// checks left out. Returns evcxr's result, the checks it ran with, and whether the cell was
    /// interrupted.
    fn run(
        &mut self,
        code: &Rewritten,
        callbacks: &mut EvalCallbacks,
    ) -> (Result<EvalOutputs, evcxr::Error>, Option<Inserted>, bool) {
        let mut points = (self.prelude_loaded && self.interrupt_checks)
            .then(|| interrupt_points::insert(&code.code))
            .filter(Inserted::any);
        self.interrupter.begin(self.cells);
        let started = Instant::now();
        let mut result = self
            .context
            .execute_with_callbacks(points.as_ref().map_or(&code.code, |p| &p.code), callbacks);
        if let (Err(evcxr::Error::CompilationErrors(errors)), Some(inserted)) = (&result, &points)
            && errors.iter().any(|error| in_a_point(error, inserted))
        {
            tracing::warn!("a cell's interrupt checks did not compile; running it without them");
            points = None;
            result = self.context.execute_with_callbacks(&code.code, callbacks);
        }
        let interrupted = self.interrupter.end();
        if let Ok(outputs) = &result {
            let phases: Vec<String> = outputs
                .phases
                .iter()
                .map(|p| format!("{} {:.0?}", p.name, p.duration))
                .collect();
            tracing::debug!(
                "cell {} took {:.0?}: {}",
                self.cells,
                started.elapsed(),
                phases.join(", ")
            );
        }
        (result, points, interrupted)
    }

    /// A cell's value: its MIME bundle, or the table `:help` and `:vars` become; what its panic
    /// did to its variables is said.
    fn value(
        &self,
        outputs: EvalOutputs,
        on_panic: PanicReport,
        code: &Rewritten,
        interrupted: bool,
    ) -> CellValue {
        if !on_panic.lost.is_empty() {
            // Values the cell's panic (an interrupt) dropped: said, never silent.
            let note = lost_on_panic_note(&on_panic.lost);
            let _ = self.pump.send(PumpMessage::Event(Event::Stderr(note)));
        }
        if !on_panic.held.is_empty() {
            let note = held_note(&on_panic.held);
            let _ = self.pump.send(PumpMessage::Event(Event::Stderr(note)));
        }
        let mut mime: Vec<(String, String)> = outputs.content_by_mime_type.into_iter().collect();
        mime.sort();
        let table = code.listing.map(|listing| match listing {
            Listing::Help => CommandTable::help(
                mime.iter()
                    .find(|(kind, _)| kind == "text/plain")
                    .map_or("", |(_, text)| text.as_str()),
            ),
            Listing::Vars => CommandTable::variables(self.context.variables_and_types()),
        });
        CellValue {
            mime,
            table,
            timing: outputs.timing,
            undone: super::Undone {
                reverted: on_panic.reverted,
                dropped: on_panic.dropped,
            },
            interrupted,
        }
    }

    /// What evcxr's error means for the user; a dead evaluation process takes what its cells
    /// started with it, and the variables it held are named.
    fn error(
        &self,
        error: evcxr::Error,
        before: &BTreeSet<String>,
        interrupted: bool,
        points: Option<&Inserted>,
    ) -> CellError {
        let error = match error {
            evcxr::Error::CompilationErrors(errors) => CellError::Compile(
                errors
                    .iter()
                    .map(|error| {
                        let mut diagnostic = diagnostic(error);
                        if let Some(points) = points {
                            in_users_columns(&mut diagnostic, points);
                        }
                        diagnostic
                    })
                    .collect(),
            ),
            evcxr::Error::SubprocessTerminated(message) => {
                // What the dead process's cells started goes with it, now (evcxr may start
                // the next process only with the next cell).
                kill_process_group(self.child_pid);
                let after = self.variables();
                let lost = before.difference(&after).cloned().collect();
                if interrupted {
                    CellError::Interrupted { lost }
                } else {
                    CellError::Crashed { message, lost }
                }
            }
            error => CellError::Failed(describe_evcxr_error(&error)),
        };
        // A full disk makes builds fail in ways that do not say so (the linker dies with a bus
        // error when the file it maps cannot grow): say it first.
        let low_space = matches!(error, CellError::Compile(_) | CellError::Failed(_))
            .then(|| cache::low_space_problem(&self.build_dir))
            .flatten();
        match (&error, low_space) {
            (CellError::Compile(diagnostics), Some(problem)) => {
                let rendered: Vec<&str> = diagnostics.iter().map(|d| d.rendered.as_str()).collect();
                CellError::Failed(format!("{problem}\n\n{}", rendered.join("\n")))
            }
            (CellError::Failed(message), Some(problem)) => {
                CellError::Failed(format!("{problem}\n\n{message}"))
            }
            _ => error,
        }
    }

    /// What follows any cell: `:fmt`/`:types` passed to the prelude, the build directory's
    /// sizes recorded after a `:dep`, and a replaced evaluation process set up again.
    fn after_cell(
        &mut self,
        outcome: Result<CellValue, CellError>,
        code: &Rewritten,
    ) -> Result<CellValue, CellError> {
        let outcome = outcome.map(|mut value| {
            if let Some(note) = self.follow_format_commands(&code.commands) {
                for (kind, text) in value.mime.iter_mut() {
                    if kind == "text/plain" {
                        text.push_str(&note);
                    }
                }
            }
            value
        });
        let dep = code
            .commands
            .iter()
            .any(|command| matches!(command, Command::Dep(_)));
        if outcome.is_ok() && dep {
            // cargo rebuilt dependencies in place: record their sizes anew (`cache::verify`).
            if let Err(error) = cache::write_manifest(&self.build_dir) {
                tracing::warn!("recording the build directory's files: {error:#}");
            }
        }
        let pid = self.context.process_handle().lock().unwrap().id();
        if pid != self.child_pid {
            // The evaluation process was replaced (a crash, the kill after an interrupt,
            // `:restart`, `:clear`): what its cells started goes with it.
            kill_process_group(self.child_pid);
            self.child_pid = pid;
            self.reattach();
        }
        outcome
    }

    /// After a cell with `:fmt` or `:types` ran: tells the prelude, whose `PlainDisplay` shows
    /// std values in place of evcxr's fallback. Returns a note for formats it cannot follow.
    fn follow_format_commands(&mut self, commands: &[Command]) -> Option<String> {
        let format = self.plain_format.after(commands.iter().copied());
        if format == self.plain_format {
            return None;
        }
        self.plain_format = format;
        if self.prelude_loaded
            && let Err(error) = self.context.execute(&self.plain_format.prelude_call())
        {
            tracing::warn!("passing the output format to the prelude failed: {error}");
        }
        (!self.plain_format.followed()).then(|| {
            format!(
                "(std values such as numbers, strings and Vec keep {{:?}}; {} applies to your own types)\n",
                self.plain_format.format
            )
        })
    }
}

/// Whether a compile error points into one of the interrupt checks the kernel put in.
fn in_a_point(error: &evcxr::CompilationError, points: &Inserted) -> bool {
    error
        .spanned_messages()
        .iter()
        .filter_map(|message| message.span.as_ref())
        .any(|span| points.in_a_point(span.start_line, span.start_column))
}

/// A diagnostic's columns as the user typed the cell: the interrupt checks taken out.
fn in_users_columns(diagnostic: &mut Diagnostic, points: &Inserted) {
    for span in &mut diagnostic.spans {
        span.start_column = points.user_column(span.start_line, span.start_column);
        span.end_column = points.user_column(span.end_line, span.end_column);
    }
    diagnostic.rendered = diagnostic
        .rendered
        .replace(tchbook_wire::INTERRUPT_POINT, "");
}

/// rust-analyzer (inside evcxr) allocates hundreds of MB while analysing a cell and frees
/// most of it; the allocator (mimalloc, src/main.rs) would give the pages back only after its
/// purge delay. Returning them now keeps the idle kernel small.
pub(super) fn release_freed_memory() {
    // SAFETY: mi_collect only frees what is no longer allocated; `true` also returns it to the OS.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

/// What the user is told when the cell was interrupted in a wait that cannot be cut short, whose
/// thread keeps the variables it was using (`src/evaluation/cells.rs`).
fn held_note(held: &[String]) -> String {
    let names = quoted(held);
    format!(
        "Lost: {names} (in use by the cell when it was stopped in a wait that cannot be cut \
         short, such as a channel's `recv`, a `Mutex` or a `Condvar`: its thread is left in that \
         wait, with them). Every other variable is kept."
    )
}

/// What the user is told when a cell that stopped early (a panic, an interrupt) had declared
/// existing variables again in a way that kept the old values from being put back.
fn lost_on_panic_note(lost: &[String]) -> String {
    let names = quoted(lost);
    format!(
        "Lost: {names} (declared again by this cell, which stopped before the new value was \
         stored; the old value was used by the cell, so it could not be put back)."
    )
}

/// `a`, `b`: names as the notes show them.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
