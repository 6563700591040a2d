//! The evaluation engine: evcxr's `CommandContext` on a thread of its own.
//!
//! evcxr's calls block (a cell compiles, then runs in the evaluation process while evcxr reads
//! its stdout), so the engine lives on a dedicated thread and talks to the async kernel through
//! channels. It knows nothing of Jupyter: it reports [`Event`]s made of plain Rust values.
//!
//! Ordering: evcxr forwards every ordinary stdout line of a running cell through a channel and,
//! before `execute` returns, waits until that channel is empty. A second thread, the pump,
//! reads those lines and the engine's own messages; when the engine reports a finished cell the
//! pump first drains every line still queued, so [`Event::Finished`] is always the last event
//! of its cell.
//!
//! One file per job:
//! - this file: the values the engine reports and the async side's [`Engine`] handle, with the
//!   engine thread's request loop;
//! - `evaluator`: the [`Evaluator`] and [`Interrupts`] traits, all the kernel's dispatch knows
//!   of an engine (the protocol tests implement them with a fake);
//! - `interrupt`: SIGINT, then SIGKILL after the grace period; the evaluation process's group;
//!   the parent watch;
//! - `pump`: the thread that orders output lines before each cell's end;
//! - `startup`: the build directory, the evaluation process and the start-up cell;
//! - `evaluate`: one cell through evcxr, and what its outcome means;
//! - `prepare`: evcxr's shaping of a cell for completion and hover;
//! - `commands`: tchbook's own `:` commands (`:timeit`, `:help` and `:vars` as tables, `:fmt`);
//! - `diagnostics`: evcxr's compile errors as plain [`Diagnostic`] values.

mod commands;
mod diagnostics;
mod evaluate;
mod evaluator;
mod interrupt;
mod prepare;
mod pump;
mod startup;

pub(crate) use commands::CommandTable;
pub(crate) use commands::timeit_code;
pub use evaluator::{Evaluator, Interrupts};
pub(crate) use interrupt::{Interrupter, exit_with_parent};

use crate::cellbuild::cache::BuildCache;
use crate::completion::{Prepared, Source};
use crate::debugger::Session;
use crossbeam_channel::{Receiver, Sender, unbounded};
use evaluate::State;
use pump::{PumpMessage, pump};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How the engine is set up.
pub(crate) struct EngineOptions {
    /// The evcxr build directory this kernel owns (`EVCXR_TMPDIR` must already name it).
    pub(crate) build_dir: PathBuf,
    /// Where a fresh build directory is seeded from, and where the first full build is kept.
    pub(crate) cache: Option<BuildCache>,
    /// The prelude crate's directory and stamp, or why it cannot be loaded (libtorch missing).
    pub(crate) prelude: Result<(PathBuf, String), String>,
    /// libtorch's `lib/` directory, put on the evaluation process's loader path.
    pub(crate) libtorch_lib: Option<PathBuf>,
    /// How long an interrupted cell may take to end by itself before the evaluation process
    /// is killed.
    pub(crate) interrupt_grace: Duration,
    /// Optimisation level for cells (dependencies are always built at 2).
    pub(crate) cell_opt_level: String,
    /// JupyterLab's debugger: told of each evaluation process, asked before each cell's build.
    pub(crate) debugger: Arc<Session>,
}

/// What the engine reports, in order.
#[derive(Debug)]
pub enum Event {
    /// The engine is ready (or could not start; then every cell fails with `warning`).
    Started(Startup),
    /// One line the evaluation process printed to stdout (without its newline).
    Stdout(String),
    /// One line the evaluation process printed to stderr.
    Stderr(String),
    /// The running cell reads input; answer through `reply`.
    Input {
        prompt: String,
        password: bool,
        reply: Sender<String>,
    },
    /// The running cell ended. Always the last event of its cell.
    Finished(Finished),
}

#[derive(Debug, Clone)]
pub struct Startup {
    /// Something the user must be told with the first cell (e.g. libtorch missing).
    pub warning: Option<String>,
    /// `tch::Cuda::device_count()` as the evaluation process saw it.
    pub cuda_devices: Option<usize>,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub struct Finished {
    pub outcome: Result<CellValue, CellError>,
    /// The generated source of the last compiled cell, to show the line a panic points at.
    pub source: Option<String>,
}

/// A cell's final value, one string per MIME type, and its timing when `:timing` is on.
#[derive(Debug, Default)]
pub struct CellValue {
    pub mime: Vec<(String, String)>,
    /// Set for `:help` and `:vars`, whose answer the front end shows as a table.
    pub(crate) table: Option<CommandTable>,
    pub(crate) timing: Option<Duration>,
    /// What a panic (an interrupt) undid of the cell's bindings, for its error to say.
    pub(crate) undone: Undone,
    /// Whether the user interrupted the cell: a panic then is the interrupt's doing (a read of
    /// stdin it ended, say), reported as `KeyboardInterrupt`.
    pub(crate) interrupted: bool,
}

/// The bindings of a cell that stopped with a panic which did not take effect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Undone {
    /// Declared again by the cell; they hold their value from before it.
    pub(crate) reverted: Vec<String>,
    /// Declared for the first time by the cell; they do not exist.
    pub(crate) dropped: Vec<String>,
}

#[derive(Debug)]
pub enum CellError {
    /// The cell did not compile.
    Compile(Vec<Diagnostic>),
    /// The cell was interrupted and did not end within the grace period, so the evaluation
    /// process was restarted.
    Interrupted { lost: Vec<String> },
    /// The evaluation process died (segfault, abort, exit) and was restarted.
    Crashed { message: String, lost: Vec<String> },
    /// Anything else evcxr reports (bad `:` command, failed `:dep`, ...).
    Failed(String),
}

/// A rustc diagnostic, with spans in the cell's own lines and columns (1-based, in chars).
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub(crate) level: String,
    pub(crate) code: Option<String>,
    pub(crate) message: String,
    pub(crate) spans: Vec<DiagnosticSpan>,
    pub(crate) help: Vec<String>,
    /// rustc's own rendering, for errors without a span in the cell.
    pub(crate) rendered: String,
}

#[derive(Debug, Clone)]
pub(crate) struct DiagnosticSpan {
    pub(crate) start_line: usize,
    pub(crate) start_column: usize,
    pub(crate) end_line: usize,
    pub(crate) end_column: usize,
    pub(crate) label: String,
    pub(crate) primary: bool,
}

/// The `use` line that puts the prelude in scope in every cell (the start-up cell runs it).
pub(crate) const PRELUDE_IMPORT: &str = "use tchbook_prelude::prelude::*;";

/// The prelude's function that marks a final value's display (`tchbook_wire::value`), which the
/// code generated for a cell's value calls, in the kernel and in exported programs.
pub(crate) const VALUE_MARK: &str = "::tchbook_prelude::display::__value_mark";

enum Request {
    Execute {
        code: String,
        allow_stdin: bool,
    },
    Complete {
        code: String,
        position: usize,
        reply: oneshot::Sender<Prepared>,
    },
    Inspect {
        code: String,
        position: usize,
        reply: oneshot::Sender<Option<Source>>,
    },
}

/// The async side's handle on the engine; the kernel drives it as an [`Evaluator`].
pub(crate) struct Engine {
    requests: Sender<Request>,
    /// Events in order; only one reader (the shell loop through [`Evaluator`], or
    /// [`Engine::build_only`]).
    events: mpsc::UnboundedReceiver<Event>,
    interrupter: Interrupter,
    debugger: Arc<Session>,
}

impl Engine {
    pub(crate) fn spawn(options: EngineOptions) -> Engine {
        let (request_tx, request_rx) = unbounded();
        let (pump_tx, pump_rx) = unbounded();
        let (event_tx, event_rx) = mpsc::unbounded_channel();
        let interrupter = Interrupter::new(options.interrupt_grace);
        std::thread::Builder::new()
            .name("tchbook-pump".into())
            .spawn(move || pump(pump_rx, event_tx))
            .expect("spawning the output pump");
        let engine_interrupter = interrupter.clone();
        let debugger = Arc::clone(&options.debugger);
        std::thread::Builder::new()
            .name("tchbook-engine".into())
            .spawn(move || run(options, request_rx, pump_tx, engine_interrupter))
            .expect("spawning the engine thread");
        Engine {
            requests: request_tx,
            events: event_rx,
            interrupter,
            debugger,
        }
    }

    /// Waits (blocking; no async runtime) for the engine's start-up build, then ends its
    /// evaluation process: what `tchbook install` wants, the build cache filled. Returns the
    /// start-up, or `None` if the engine stopped first.
    pub(crate) fn build_only(mut self) -> Option<Startup> {
        let startup = loop {
            match self.events.blocking_recv() {
                Some(Event::Started(startup)) => break Some(startup),
                Some(_) => {}
                None => break None,
            }
        };
        self.interrupter.kill();
        startup
    }
}

impl Evaluator for Engine {
    type Interrupter = Interrupter;

    fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }

    fn debugger(&self) -> Arc<Session> {
        Arc::clone(&self.debugger)
    }

    fn execute(&mut self, code: String, allow_stdin: bool) {
        let _ = self.requests.send(Request::Execute { code, allow_stdin });
    }

    async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    fn queued_event(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// The evaluation process inherits the socket's name from the kernel's set-up.
    fn side_channel(&self) -> Option<PathBuf> {
        std::env::var_os(tchbook_wire::env::SIDE_CHANNEL).map(PathBuf::from)
    }

    /// For Rust, the cell as evcxr wraps it, with the notebook's variables and items; evcxr's
    /// own answer for `:` commands.
    async fn prepare_completion(&mut self, code: String, position: usize) -> Prepared {
        let (reply, answer) = oneshot::channel();
        let _ = self.requests.send(Request::Complete {
            code,
            position,
            reply,
        });
        answer.await.unwrap_or(Prepared::Unavailable)
    }

    async fn prepare_hover(&mut self, code: String, position: usize) -> Option<Source> {
        let (reply, answer) = oneshot::channel();
        let _ = self.requests.send(Request::Inspect {
            code,
            position,
            reply,
        });
        answer.await.ok().flatten()
    }
}

/// The engine thread: starts evcxr and the evaluation process, then serves requests in order.
fn run(
    options: EngineOptions,
    requests: Receiver<Request>,
    pump: Sender<PumpMessage>,
    interrupter: Interrupter,
) {
    let started = Instant::now();
    let (mut state, startup) = match startup::start(&options, &pump, &interrupter) {
        Ok((state, mut startup)) => {
            startup.elapsed = started.elapsed();
            (Some(state), startup)
        }
        Err(error) => (
            None,
            Startup {
                warning: Some(format!("The evaluation engine could not start: {error:#}")),
                cuda_devices: None,
                elapsed: started.elapsed(),
            },
        ),
    };
    tracing::info!("engine started in {:.2?}", startup.elapsed);
    let failure = startup.warning.clone().unwrap_or_default();
    let _ = pump.send(PumpMessage::Event(Event::Started(startup)));
    while let Ok(request) = requests.recv() {
        match &mut state {
            Some(state) => serve(state, request),
            None => refuse(request, &pump, &failure),
        }
    }
}

fn serve(state: &mut State, request: Request) {
    match request {
        Request::Execute { code, allow_stdin } => {
            let finished = state.execute(&code, allow_stdin);
            let _ = state
                .pump
                .send(PumpMessage::Event(Event::Finished(finished)));
        }
        Request::Complete {
            code,
            position,
            reply,
        } => {
            let _ = reply.send(state.prepare_completion(&code, position));
        }
        Request::Inspect {
            code,
            position,
            reply,
        } => {
            let _ = reply.send(state.prepare_hover(&code, position));
        }
    }
}

/// An engine that could not start answers every cell with why.
fn refuse(request: Request, pump: &Sender<PumpMessage>, failure: &str) {
    match request {
        Request::Execute { .. } => {
            let _ = pump.send(PumpMessage::Event(Event::Finished(Finished {
                outcome: Err(CellError::Failed(failure.to_owned())),
                source: None,
            })));
        }
        Request::Complete { reply, .. } => {
            let _ = reply.send(Prepared::Unavailable);
        }
        Request::Inspect { reply, .. } => {
            let _ = reply.send(None);
        }
    }
}
