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

use crate::cache::{self, BuildCache};
use crate::completion::{self, Prepared, Source};
use crossbeam_channel::{never, select, unbounded, Receiver, Sender};
use evcxr::{CommandContext, EvalCallbacks, EvalContext, EvalContextOutputs};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How the engine is set up.
pub struct EngineOptions {
    /// The evcxr build directory this kernel owns (`EVCXR_TMPDIR` must already name it).
    pub build_dir: PathBuf,
    /// Where a fresh build directory is seeded from, and where the first full build is kept.
    pub cache: Option<BuildCache>,
    /// The prelude crate's directory and stamp, or why it cannot be loaded (libtorch missing).
    pub prelude: Result<(PathBuf, String), String>,
    /// libtorch's `lib/` directory, put on the evaluation process's loader path.
    pub libtorch_lib: Option<PathBuf>,
    /// How long an interrupted cell may take to end by itself before the evaluation process
    /// is killed.
    pub interrupt_grace: Duration,
    /// Optimisation level for cells (dependencies are always built at 2).
    pub cell_opt_level: String,
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
    /// Whether cells can run at all.
    pub usable: bool,
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
    pub table: Option<Table>,
    pub timing: Option<Duration>,
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
    pub level: String,
    pub code: Option<String>,
    pub message: String,
    pub spans: Vec<DiagnosticSpan>,
    pub help: Vec<String>,
    /// rustc's own rendering, for errors without a span in the cell.
    pub rendered: String,
}

#[derive(Debug, Clone)]
pub struct DiagnosticSpan {
    pub start_line: usize,
    pub start_column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub label: String,
    pub primary: bool,
}

/// The `use` line that puts the prelude in scope in every cell (the start-up cell runs it).
pub const PRELUDE_IMPORT: &str = "use tchbook_prelude::prelude::*;";

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

/// The async side's handle on the engine.
pub struct Engine {
    requests: Sender<Request>,
    /// Events in order; only the shell loop reads them.
    pub events: mpsc::UnboundedReceiver<Event>,
    pub interrupter: Interrupter,
}

impl Engine {
    pub fn spawn(options: EngineOptions) -> Engine {
        let (request_tx, request_rx) = unbounded();
        let (pump_tx, pump_rx) = unbounded();
        let (event_tx, event_rx) = mpsc::unbounded_channel();
        let interrupter = Interrupter::new(options.interrupt_grace);
        std::thread::Builder::new()
            .name("tchbook-pump".into())
            .spawn(move || pump(pump_rx, event_tx))
            .expect("spawning the output pump");
        let engine_interrupter = interrupter.clone();
        std::thread::Builder::new()
            .name("tchbook-engine".into())
            .spawn(move || run(options, request_rx, pump_tx, engine_interrupter))
            .expect("spawning the engine thread");
        Engine {
            requests: request_tx,
            events: event_rx,
            interrupter,
        }
    }

    /// Starts a cell; its events follow on [`Engine::events`], ending with `Finished`.
    pub fn execute(&self, code: String, allow_stdin: bool) {
        let _ = self.requests.send(Request::Execute { code, allow_stdin });
    }

    /// What rust-analyzer must be given to complete at byte offset `position` (evcxr wraps the
    /// cell with the notebook's variables and items), or evcxr's own answer for `:` commands.
    pub async fn prepare_completion(&self, code: String, position: usize) -> Prepared {
        let (reply, answer) = oneshot::channel();
        let _ = self.requests.send(Request::Complete {
            code,
            position,
            reply,
        });
        answer.await.unwrap_or(Prepared::Unavailable)
    }

    /// What rust-analyzer must be given for the documentation of the name ending at byte
    /// offset `position`.
    pub async fn prepare_hover(&self, code: String, position: usize) -> Option<Source> {
        let (reply, answer) = oneshot::channel();
        let _ = self.requests.send(Request::Inspect {
            code,
            position,
            reply,
        });
        answer.await.ok().flatten()
    }
}

/// Interrupts the running cell: SIGINT to the evaluation process first (the prelude turns it
/// into a `KeyboardInterrupt` panic at the next check, keeping every variable), SIGKILL after
/// the grace period if the cell is still the one that was interrupted.
#[derive(Clone)]
pub struct Interrupter {
    inner: Arc<InterruptState>,
}

struct InterruptState {
    child: Mutex<Option<Arc<Mutex<Child>>>>,
    /// Number of the running cell, 0 while idle.
    running: AtomicU64,
    /// Whether the running cell was sent SIGINT / SIGKILL.
    interrupted: AtomicBool,
    killed: AtomicBool,
    grace: Duration,
}

impl Interrupter {
    fn new(grace: Duration) -> Self {
        Interrupter {
            inner: Arc::new(InterruptState {
                child: Mutex::new(None),
                running: AtomicU64::new(0),
                interrupted: AtomicBool::new(false),
                killed: AtomicBool::new(false),
                grace,
            }),
        }
    }

    /// Interrupts the running cell, if any. Returns whether a cell was running.
    pub fn interrupt(&self) -> bool {
        let cell = self.inner.running.load(Ordering::SeqCst);
        if cell == 0 {
            return false;
        }
        self.inner.interrupted.store(true, Ordering::SeqCst);
        self.signal(libc::SIGINT);
        let inner = Arc::clone(&self.inner);
        let this = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(inner.grace);
            if inner.running.load(Ordering::SeqCst) == cell {
                tracing::warn!("cell {cell} ignored the interrupt; killing the evaluation process");
                inner.killed.store(true, Ordering::SeqCst);
                this.kill();
            }
        });
        true
    }

    /// Whether the running cell has been interrupted (a cell waiting for input stops waiting).
    pub fn was_interrupted(&self) -> bool {
        self.inner.running.load(Ordering::SeqCst) != 0
            && self.inner.interrupted.load(Ordering::SeqCst)
    }

    /// Kills the evaluation process and every process a cell started (kernel shutdown).
    pub fn kill(&self) {
        if let Some(pid) = self.child_pid() {
            kill_process_group(pid);
        }
    }

    fn signal(&self, signal: i32) {
        if let Some(pid) = self.child_pid() {
            // SAFETY: kill(2) with a pid we spawned; at worst the process is already gone.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    }

    fn child_pid(&self) -> Option<u32> {
        let child = self.inner.child.lock().unwrap().clone()?;
        let pid = child.lock().unwrap().id();
        Some(pid)
    }

    fn begin(&self, cell: u64) {
        self.inner.interrupted.store(false, Ordering::SeqCst);
        self.inner.killed.store(false, Ordering::SeqCst);
        self.inner.running.store(cell, Ordering::SeqCst);
    }

    fn end(&self) -> bool {
        self.inner.running.store(0, Ordering::SeqCst);
        self.inner.interrupted.load(Ordering::SeqCst) || self.inner.killed.load(Ordering::SeqCst)
    }
}

/// Ends the evaluation process started as `pid` and every process still in its process group:
/// the processes its cells started (`Command::new(..).spawn()`, `sh -c '... &'`) inherit the
/// group, and nothing else would end them when the evaluation process goes (shutdown, a
/// restart, a crash). A process a cell put in a group or session of its own (`setsid`,
/// `process_group(0)`) is left alone, which is how a user keeps one on purpose (`:help`).
pub(crate) fn kill_process_group(pid: u32) {
    // SAFETY: killpg(2) on the group the evaluation process leads (it was spawned with
    // `process_group(0)`). A group id is not reused while any member lives, and once all are
    // gone this fails with ESRCH.
    unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
}

/// Exits the kernel, after ending the evaluation process's group, when the process that
/// started the kernel dies (as ipykernel does): a front end that is SIGKILLed must not leave a
/// kernel holding a notebook's tensors under PID 1. The parent is polled, as ipykernel polls:
/// `PR_SET_PDEATHSIG` would fire when the *thread* that started the kernel exits, and a front
/// end may start kernels from a thread that ends long before the kernel should.
pub fn exit_with_parent(interrupter: Interrupter) {
    // SAFETY: getppid(2) cannot fail.
    let parent = unsafe { libc::getppid() };
    if parent <= 1 {
        // Started by init (a container's entry point, `nohup ... &` after the shell left):
        // there is no parent whose death could be told apart.
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("tchbook-parent".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: as above.
            if unsafe { libc::getppid() } != parent {
                tracing::warn!("the kernel's parent (pid {parent}) died; exiting");
                interrupter.kill();
                std::process::exit(1);
            }
        });
    if let Err(error) = spawned {
        tracing::error!("cannot watch the kernel's parent: {error}");
    }
}

enum PumpMessage {
    Attach(EvalContextOutputs),
    Event(Event),
}

fn pump(from_engine: Receiver<PumpMessage>, to_kernel: mpsc::UnboundedSender<Event>) {
    let mut stdout: Receiver<String> = never();
    let mut stderr: Receiver<String> = never();
    loop {
        select! {
            recv(stdout) -> line => match line {
                Ok(line) => { let _ = to_kernel.send(Event::Stdout(line)); }
                Err(_) => stdout = never(),
            },
            recv(stderr) -> line => match line {
                Ok(line) => { let _ = to_kernel.send(Event::Stderr(line)); }
                Err(_) => stderr = never(),
            },
            recv(from_engine) -> message => match message {
                Ok(PumpMessage::Attach(outputs)) => {
                    stdout = outputs.stdout;
                    stderr = outputs.stderr;
                }
                Ok(PumpMessage::Event(event)) => {
                    // Everything the cell printed before this event goes first.
                    while let Ok(line) = stdout.try_recv() {
                        let _ = to_kernel.send(Event::Stdout(line));
                    }
                    if matches!(event, Event::Finished(_)) {
                        // Child stderr arrives through a thread of evcxr's own, unsynchronised
                        // with stdout; give a last line (a crash report) a moment to arrive.
                        while let Ok(line) = stderr.recv_timeout(Duration::from_millis(5)) {
                            let _ = to_kernel.send(Event::Stderr(line));
                        }
                    }
                    while let Ok(line) = stderr.try_recv() {
                        let _ = to_kernel.send(Event::Stderr(line));
                    }
                    let _ = to_kernel.send(event);
                }
                Err(_) => return,
            },
        }
    }
}

/// Installed in the evaluation process (in the cells' world: cells link their own libstd, so a
/// hook set from the kernel binary would never see their panics). It reports a panic as one
/// `TCHBOOK_PANIC` line, which `display` reads; it replaces the default hook, whose output
/// (with `RUST_BACKTRACE=1`, which evcxr sets) would bury the message in a backtrace.
const PANIC_HOOK: &str = r#"{
    // The cells' libstd never saw the runtime's main thread start, so it has no name there;
    // its id, taken now (start-up runs on that thread), tells a cell's own panic from a
    // panic in a thread the cell spawned.
    let main_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        fn escape(text: &str) -> String {
            let mut out = String::new();
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out
        }
        let payload = info.payload();
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            text.to_string()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "Box<dyn Any>".to_string()
        };
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let current = std::thread::current();
        let thread = current.name().unwrap_or("<unnamed>");
        println!(
            "TCHBOOK_PANIC {{\"message\":\"{}\",\"location\":\"{}\",\"thread\":\"{}\",\"main\":{}}}",
            escape(&message),
            escape(&location),
            escape(thread),
            current.id() == main_thread
        );
    }));
};"#;

struct State {
    context: CommandContext,
    pump: Sender<PumpMessage>,
    interrupter: Interrupter,
    prelude_loaded: bool,
    /// How std values are shown (`:fmt`, `:types`); the prelude's `PlainDisplay` follows it.
    plain_format: PlainFormat,
    cells: u64,
    child_pid: u32,
    /// Where cells are built, to tell a full disk from a real build failure.
    build_dir: PathBuf,
}

fn run(
    options: EngineOptions,
    requests: Receiver<Request>,
    pump: Sender<PumpMessage>,
    interrupter: Interrupter,
) {
    let started = Instant::now();
    let (state, startup) = match start(&options, &pump, &interrupter) {
        Ok((state, mut startup)) => {
            startup.elapsed = started.elapsed();
            (Some(state), startup)
        }
        Err(error) => (
            None,
            Startup {
                warning: Some(format!("The evaluation engine could not start: {error:#}")),
                usable: false,
                cuda_devices: None,
                elapsed: started.elapsed(),
            },
        ),
    };
    tracing::info!("engine started in {:.2?}", startup.elapsed);
    let failure = startup.warning.clone().unwrap_or_default();
    let _ = pump.send(PumpMessage::Event(Event::Started(startup)));
    let mut state = state;
    while let Ok(request) = requests.recv() {
        match (&mut state, request) {
            (Some(state), Request::Execute { code, allow_stdin }) => {
                let finished = state.execute(&code, allow_stdin);
                let _ = state
                    .pump
                    .send(PumpMessage::Event(Event::Finished(finished)));
            }
            (None, Request::Execute { .. }) => {
                let _ = pump.send(PumpMessage::Event(Event::Finished(Finished {
                    outcome: Err(CellError::Failed(failure.clone())),
                    source: None,
                })));
            }
            (
                Some(state),
                Request::Complete {
                    code,
                    position,
                    reply,
                },
            ) => {
                let _ = reply.send(state.prepare_completion(&code, position));
            }
            (
                Some(state),
                Request::Inspect {
                    code,
                    position,
                    reply,
                },
            ) => {
                let _ = reply.send(state.prepare_hover(&code, position));
            }
            (None, Request::Complete { reply, .. }) => {
                let _ = reply.send(Prepared::Unavailable);
            }
            (None, Request::Inspect { reply, .. }) => {
                let _ = reply.send(None);
            }
        }
    }
}

fn start(
    options: &EngineOptions,
    pump: &Sender<PumpMessage>,
    interrupter: &Interrupter,
) -> anyhow::Result<(State, Startup)> {
    // Holding the template lock while the first full build runs makes kernels started at the
    // same time wait for it instead of each compiling tch.
    let mut template_lock = None;
    let stamp = options
        .prelude
        .as_ref()
        .map(|(_, stamp)| stamp.as_str())
        .unwrap_or("");
    // Repairs made on the way, told with the first cell.
    let mut repairs = Vec::new();
    if let (Some(cache), true) = (&options.cache, options.prelude.is_ok()) {
        let explained = |error: anyhow::Error| anyhow::anyhow!(cache::explain(&error));
        if cache::is_ready(&options.build_dir, stamp) {
            let damage = cache::verify(&options.build_dir);
            if !damage.is_empty() {
                tracing::warn!(
                    "{} is damaged:\n{}",
                    options.build_dir.display(),
                    cache::describe(&damage)
                );
                cache::remove_damaged(&options.build_dir, &damage).map_err(explained)?;
                repairs.push(format!(
                    "This kernel's build directory {} was damaged:\n{}\nIt was set up again.",
                    options.build_dir.display(),
                    cache::describe(&damage)
                ));
            }
        }
        if !cache::is_ready(&options.build_dir, stamp) {
            let lock = cache.lock_template().map_err(explained)?;
            let template = cache.template_dir();
            let damage = cache::verify(&template);
            if !damage.is_empty() {
                tracing::warn!(
                    "{} is damaged:\n{}",
                    template.display(),
                    cache::describe(&damage)
                );
                cache::remove_damaged(&template, &damage).map_err(explained)?;
                repairs.push(format!(
                    "The build cache's template {} was damaged:\n{}\nThose files were built \
                     again (once, by this kernel's start).",
                    template.display(),
                    cache::describe(&damage)
                ));
            }
            if cache::is_ready(&template, stamp) {
                if !cache::has_manifest(&template) {
                    // Made before sizes were recorded, and whole (`verify` looked at every
                    // library): record them now.
                    cache::write_manifest(&template).map_err(explained)?;
                }
                tracing::info!("seeding {} from the template", options.build_dir.display());
                cache::copy_build_dir(&template, &options.build_dir).map_err(explained)?;
            } else {
                if template.join("target").is_dir() {
                    // What the template has (tch, an older prelude) need not be built again:
                    // cargo rebuilds only what is missing or out of date.
                    cache::copy_build_dir(&template, &options.build_dir).map_err(explained)?;
                }
                template_lock = Some(lock);
            }
        }
    }
    let seeded = cache::is_ready(&options.build_dir, stamp);

    let mut command = std::process::Command::new(std::env::current_exe()?);
    // Its own process group: the SIGINT Jupyter sends to the kernel's group must not reach
    // the evaluation process; the kernel decides what an interrupt does.
    command.process_group(0);
    // Cells link libstd dynamically. Their RUNPATH points at the toolchain relative to
    // target/<triple>/debug/deps, but evcxr loads them from one directory up, where that
    // relative path is one level short whenever the build directory and the toolchain share
    // a parent (both under $HOME: ~/.cache/tchbook and ~/.rustup). Say where libstd is.
    let mut library_path = std::ffi::OsString::new();
    for dir in options
        .libtorch_lib
        .iter()
        .cloned()
        .chain(rustc_target_libdir())
    {
        library_path.push(dir);
        library_path.push(":");
    }
    if let Some(existing) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path.push(existing);
    }
    command.env("LD_LIBRARY_PATH", library_path);
    // SAFETY: prctl is async-signal-safe. The evaluation process dies with the kernel even
    // when the kernel is SIGKILLed, instead of living on with a notebook's tensors. SIGTERM,
    // not SIGKILL: the prelude's handler (`runtime::attach`) then ends the processes its cells
    // started too (its process group). The engine thread, which spawns every evaluation
    // process, lives as long as the kernel, so the signal never comes early.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let begun = Instant::now();
    let (eval_context, outputs) =
        EvalContext::with_subprocess_command(command).map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::debug!("evcxr's context took {:.0?}", begun.elapsed());
    let _ = pump.send(PumpMessage::Attach(outputs));
    let mut context = CommandContext::with_eval_context(eval_context);
    *interrupter.inner.child.lock().unwrap() = Some(context.process_handle());
    context
        .set_opt_level(&options.cell_opt_level)
        .map_err(|e| anyhow::anyhow!("{e}"))?;

    let child_pid = context.process_handle().lock().unwrap().id();
    let mut state = State {
        context,
        pump: pump.clone(),
        interrupter: interrupter.clone(),
        prelude_loaded: false,
        plain_format: PlainFormat::default(),
        cells: 0,
        child_pid,
        build_dir: options.build_dir.clone(),
    };
    let mut startup = Startup {
        warning: None,
        usable: true,
        cuda_devices: None,
        elapsed: Duration::ZERO,
    };
    match &options.prelude {
        Ok((dir, _)) => {
            if seeded {
                // Everything is in the local registry cache already; skip the index.
                let _ = state.context.execute(":offline 1");
            }
            let loaded = state.context.execute(&format!(
                ":dep tchbook_prelude = {{ path = {:?}, package = \"tchbook-prelude\" }}\n\
                 {PRELUDE_IMPORT}\n\
                 {PANIC_HOOK}\n\
                 tchbook_prelude::runtime::attach();\n\
                 tch::Cuda::device_count()",
                dir.display().to_string()
            ));
            if seeded {
                let _ = state.context.execute(":offline 0");
            }
            if let Ok(outputs) = &loaded {
                tracing::debug!(
                    "the start-up cell took {}",
                    outputs
                        .phases
                        .iter()
                        .map(|p| format!("{} {:.0?}", p.name, p.duration))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            match loaded {
                Ok(outputs) => {
                    state.prelude_loaded = true;
                    startup.cuda_devices = outputs
                        .get("text/plain")
                        .and_then(|text| text.trim().parse().ok());
                    cache::mark_ready(&options.build_dir, stamp)
                        .map_err(|error| anyhow::anyhow!(cache::explain(&error)))?;
                    if let (Some(cache), Some(_lock)) = (&options.cache, &template_lock) {
                        // The first full build: keep it for every later kernel. The real
                        // cargo built it; one replayed build first leaves the incremental
                        // cache as replays, with their link plan, want it (cargo_front/link.rs),
                        // or each kernel's first cell would pay for the switch.
                        let _ = state.context.execute("()");
                        let template = cache.template_dir();
                        if let Err(error) = cache::copy_build_dir(&options.build_dir, &template) {
                            tracing::warn!("could not keep the build as the template: {error:#}");
                        }
                    }
                }
                Err(error) => {
                    let message = describe_evcxr_error(&error);
                    tracing::error!("loading the prelude failed: {message}");
                    startup.warning = Some(format!(
                        "The tchbook prelude could not be loaded, so `Tensor`, `Device`, `nn` \
                         and the prelude's helpers are not in scope:\n{message}"
                    ));
                    state.install_panic_hook();
                }
            }
        }
        Err(why) => {
            startup.warning = Some(why.clone());
            state.install_panic_hook();
        }
    }
    drop(template_lock);
    release_freed_memory();
    if !repairs.is_empty() {
        repairs.extend(startup.warning.take());
        startup.warning = Some(repairs.join("\n"));
    }
    Ok((state, startup))
}

/// rust-analyzer (inside evcxr) allocates hundreds of MB while analysing a cell and frees
/// most of it; glibc keeps freed pages mapped unless asked. Returning them keeps the idle
/// kernel small.
fn release_freed_memory() {
    // SAFETY: malloc_trim only releases free heap memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The toolchain's library directory (where `libstd-*.so` lives).
fn rustc_target_libdir() -> Option<PathBuf> {
    let output = std::process::Command::new("rustc")
        .args(["--print", "target-libdir"])
        .output()
        .ok()?;
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

impl State {
    fn install_panic_hook(&mut self) {
        if let Err(error) = self.context.execute(PANIC_HOOK) {
            tracing::error!("installing the panic hook failed: {error}");
        }
    }

    /// After the evaluation process restarted (crash, kill, `:restart`, `:clear`), the new
    /// process needs the prelude's runtime and the panic hook again.
    fn reattach(&mut self) {
        let code = if self.prelude_loaded {
            format!(
                "{PANIC_HOOK}\ntchbook_prelude::runtime::attach();\n{}",
                self.plain_format.prelude_call()
            )
        } else {
            PANIC_HOOK.to_owned()
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

    fn execute(&mut self, code: &str, allow_stdin: bool) -> Finished {
        self.cells += 1;
        let before = self.variables();
        let pump = self.pump.clone();
        // evcxr does not export its `InputRequest` type; the closure's parameter type comes
        // from the field it is written into.
        let mut callbacks = EvalCallbacks {
            input_reader: &move |request| {
                if !allow_stdin {
                    return String::new();
                }
                let (reply, answer) = crossbeam_channel::bounded(1);
                let _ = pump.send(PumpMessage::Event(Event::Input {
                    prompt: request.prompt,
                    password: request.is_password,
                    reply,
                }));
                answer.recv().unwrap_or_default()
            },
        };
        let code = rewrite_commands(code);
        self.interrupter.begin(self.cells);
        let started = Instant::now();
        let result = self
            .context
            .execute_with_callbacks(&code.code, &mut callbacks);
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
        release_freed_memory();
        let source = self.context.last_source().ok();
        let outcome = match result {
            Ok(outputs) => {
                if !outputs.lost_on_panic.is_empty() {
                    // Values the cell's panic (an interrupt) dropped: said, never silent.
                    let _ = self
                        .pump
                        .send(PumpMessage::Event(Event::Stderr(lost_on_panic_note(
                            &outputs.lost_on_panic,
                        ))));
                }
                let mut mime: Vec<(String, String)> =
                    outputs.content_by_mime_type.into_iter().collect();
                mime.sort();
                let table = code.listing.map(|listing| match listing {
                    Listing::Help => help_table(
                        mime.iter()
                            .find(|(kind, _)| kind == "text/plain")
                            .map_or("", |(_, text)| text.as_str()),
                    ),
                    Listing::Vars => {
                        let mut rows: Vec<Vec<String>> = self
                            .context
                            .variables_and_types()
                            .map(|(name, ty)| vec![name.to_owned(), ty.to_owned()])
                            .collect();
                        rows.sort();
                        Table {
                            header: vec!["Variable".into(), "Type".into()],
                            rows,
                            note: None,
                        }
                    }
                });
                Ok(CellValue {
                    mime,
                    table,
                    timing: outputs.timing,
                })
            }
            Err(evcxr::Error::CompilationErrors(errors)) => {
                Err(CellError::Compile(errors.iter().map(diagnostic).collect()))
            }
            Err(evcxr::Error::SubprocessTerminated(message)) => {
                // What the dead process's cells started goes with it, now (evcxr may start
                // the next process only with the next cell).
                kill_process_group(self.child_pid);
                let after = self.variables();
                let lost = before.difference(&after).cloned().collect();
                if interrupted {
                    Err(CellError::Interrupted { lost })
                } else {
                    Err(CellError::Crashed { message, lost })
                }
            }
            Err(error) => Err(CellError::Failed(describe_evcxr_error(&error))),
        };
        // A full disk makes builds fail in ways that do not say so (the linker dies with a bus
        // error when the file it maps cannot grow): say it first.
        let outcome = match outcome {
            Err(CellError::Compile(_) | CellError::Failed(_)) => {
                match (cache::low_space_problem(&self.build_dir), outcome) {
                    (Some(problem), Err(CellError::Compile(diagnostics))) => {
                        let rendered: Vec<String> =
                            diagnostics.iter().map(|d| d.rendered.clone()).collect();
                        Err(CellError::Failed(format!(
                            "{problem}\n\n{}",
                            rendered.join("\n")
                        )))
                    }
                    (Some(problem), Err(CellError::Failed(message))) => {
                        Err(CellError::Failed(format!("{problem}\n\n{message}")))
                    }
                    (_, outcome) => outcome,
                }
            }
            outcome => outcome,
        };
        let outcome = match outcome {
            Ok(mut value) => {
                if let Some(note) = self.follow_format_commands(&code.code) {
                    for (kind, text) in value.mime.iter_mut() {
                        if kind == "text/plain" {
                            text.push_str(&note);
                        }
                    }
                }
                Ok(value)
            }
            error => error,
        };
        if outcome.is_ok()
            && code
                .code
                .lines()
                .any(|line| line.trim_start().starts_with(":dep"))
        {
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
        Finished { outcome, source }
    }

    /// After a cell with `:fmt` or `:types` ran: tells the prelude, whose `PlainDisplay` shows
    /// std values in place of evcxr's fallback. Returns a note for formats it cannot follow.
    fn follow_format_commands(&mut self, code: &str) -> Option<String> {
        let mut format = self.plain_format.clone();
        for line in code.lines().map(str::trim) {
            if let Some(rest) = command_argument(line, ":fmt") {
                format.format = if rest.is_empty() { "{:?}" } else { rest }.to_owned();
            } else if command_argument(line, ":types").is_some() {
                format.types = !format.types;
            }
        }
        if format == self.plain_format {
            return None;
        }
        self.plain_format = format;
        if self.prelude_loaded {
            if let Err(error) = self.context.execute(&self.plain_format.prelude_call()) {
                tracing::warn!("passing the output format to the prelude failed: {error}");
            }
        }
        (!self.plain_format.followed()).then(|| {
            format!(
                "(std values such as numbers, strings and Vec keep {{:?}}; {} applies to your own types)\n",
                self.plain_format.format
            )
        })
    }

    /// evcxr's shaping of the cell for rust-analyzer, and the variables with their types. The
    /// analysis itself runs in the analyzer process (`completion`), never on this thread.
    fn prepare_completion(&mut self, code: &str, position: usize) -> Prepared {
        let context = &mut self.context;
        let prepared = guarded("preparing a completion", || {
            context.completion_source(code, position)
        });
        match prepared {
            Some(evcxr::CompletionSource::Commands(found)) => {
                Prepared::Answered(completion::Completions {
                    matches: found
                        .completions
                        .into_iter()
                        .map(|c| completion::Match {
                            text: c.code,
                            kind: c.kind.to_owned(),
                        })
                        .collect(),
                    start: found.start_offset,
                    end: found.end_offset,
                })
            }
            Some(evcxr::CompletionSource::Rust(source)) => Prepared::Rust {
                source: source.into(),
                variables: self
                    .context
                    .variables_and_types()
                    .map(|(name, ty)| (name.to_owned(), ty.to_owned()))
                    .collect(),
            },
            None => Prepared::Unavailable,
        }
    }

    fn prepare_hover(&mut self, code: &str, position: usize) -> Option<Source> {
        let context = &mut self.context;
        guarded("preparing a hover", || context.hover_source(code, position)).map(Source::from)
    }
}

/// Runs an evcxr call that only reshapes text, logging its error or panic: neither may end the
/// engine thread, which owns the notebook's variables.
fn guarded<T>(what: &str, call: impl FnOnce() -> anyhow::Result<T>) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(Ok(value)) => Some(value),
        Ok(Err(error)) => {
            tracing::warn!("{what}: {error:#}");
            None
        }
        Err(_) => {
            tracing::error!("{what}: evcxr panicked (see the message above)");
            None
        }
    }
}

/// evcxr's output format for a cell's final value, as far as the prelude's `PlainDisplay`
/// (std values) must follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PlainFormat {
    /// `:fmt`'s argument.
    format: String,
    /// `:types` on.
    types: bool,
}

impl Default for PlainFormat {
    fn default() -> Self {
        PlainFormat {
            format: "{:?}".to_owned(),
            types: false,
        }
    }
}

impl PlainFormat {
    /// Whether the prelude can show std values this way (`{:?}` and `{:#?}`).
    fn followed(&self) -> bool {
        self.format == "{:?}" || self.format == "{:#?}"
    }

    fn prelude_call(&self) -> String {
        format!(
            "tchbook_prelude::display::set_plain_format({}, {});",
            self.format == "{:#?}",
            self.types
        )
    }
}

/// What the user is told when a cell that stopped early (a panic, an interrupt) had declared
/// existing variables again in a way that kept the old values from being put back.
fn lost_on_panic_note(lost: &[String]) -> String {
    let names = lost
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Lost: {names} (declared again by this cell, which stopped before the new value was \
         stored; the old value was used by the cell, so it could not be put back)."
    )
}

/// `:name args` → `Some(args)` (trimmed); `None` for any other line.
fn command_argument<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(name)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// `push(value)` → `push`: Jupyter front ends insert matches verbatim, and a placeholder
/// argument is worse than none.
fn describe_evcxr_error(error: &evcxr::Error) -> String {
    match error {
        evcxr::Error::CompilationErrors(errors) => errors
            .iter()
            .map(|e| {
                let rendered = e.rendered();
                if rendered.is_empty() {
                    e.message()
                } else {
                    rendered
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn diagnostic(error: &evcxr::CompilationError) -> Diagnostic {
    let spans = error
        .spanned_messages()
        .iter()
        .chain(error.help_spanned())
        .filter_map(|message| {
            let span = message.span?;
            Some(DiagnosticSpan {
                start_line: span.start_line,
                start_column: span.start_column,
                end_line: span.end_line,
                end_column: span.end_column,
                label: message.label.clone(),
                primary: message.is_primary,
            })
        })
        .collect();
    Diagnostic {
        level: error.level().to_owned(),
        code: error.code().map(str::to_owned),
        message: error.message(),
        spans,
        help: error.help(),
        rendered: error.rendered(),
    }
}

/// tchbook's own `:` commands, handled by rewriting them into code evcxr runs.
struct Rewritten {
    code: String,
    /// A cell that is only `:help` or `:vars`: its answer becomes a [`Table`].
    listing: Option<Listing>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Help,
    Vars,
}

/// A table for the front end to lay out (`:help`, `:vars`): plain values, rendered by
/// `display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// A paragraph shown under the table.
    pub note: Option<String>,
}

/// The commands tchbook adds to evcxr's, for `:help`.
const OWN_COMMANDS: &[(&str, &str)] = &[(
    ":timeit",
    "Time an expression like IPython's %timeit: `:timeit [-n LOOPS] [-r RUNS] EXPR` \
         (the rest of the cell). Compilation is not timed.",
)];

/// Said under `:help`'s table: what happens to processes a cell starts.
const PROCESSES_NOTE: &str = "Processes a cell starts end with the kernel: at shutdown, restart, \
    or when the evaluation process dies. To keep one running on purpose, start it in a session \
    of its own: `Command::new(\"setsid\").args([\"-f\", \"server\"]).spawn()`, or call \
    `.process_group(0)` (std::os::unix::process::CommandExt) on its Command.";

fn rewrite_commands(code: &str) -> Rewritten {
    let trimmed = code.trim_start();
    if let Some(rest) = command_argument(trimmed, ":timeit") {
        return Rewritten {
            code: timeit_code(rest),
            listing: None,
        };
    }
    let listing = match code.trim() {
        ":help" => Some(Listing::Help),
        ":vars" => Some(Listing::Vars),
        _ => None,
    };
    Rewritten {
        code: code.to_owned(),
        listing,
    }
}

/// `:help`'s rows: evcxr's commands (its text lists `name  description` a line each) and
/// tchbook's own, by name.
fn help_table(evcxr_text: &str) -> Table {
    let mut rows: Vec<Vec<String>> = evcxr_text
        .lines()
        .filter_map(|line| line.split_once(char::is_whitespace))
        .map(|(name, description)| vec![name.to_owned(), description.trim().to_owned()])
        .chain(
            OWN_COMMANDS
                .iter()
                .map(|(name, description)| vec![(*name).to_owned(), (*description).to_owned()]),
        )
        .collect();
    rows.sort();
    Table {
        header: vec!["Command".into(), "Description".into()],
        rows,
        note: Some(PROCESSES_NOTE.to_owned()),
    }
}

/// `:timeit [-n N] [-r R] EXPR` as a block: one untimed warm-up run picks the loop count so a
/// run takes about 0.2 s (as %timeit does), then R runs are timed and summarised.
pub(crate) fn timeit_code(args: &str) -> String {
    let mut rest = args.trim();
    let mut loops = "0".to_owned();
    let mut runs = "7".to_owned();
    loop {
        let (flag, target) = if let Some(r) = rest.strip_prefix("-n") {
            (r, &mut loops)
        } else if let Some(r) = rest.strip_prefix("-r") {
            (r, &mut runs)
        } else {
            break;
        };
        let r = flag.trim_start();
        let digits: String = r.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        *target = digits.clone();
        rest = r[digits.len()..].trim_start();
    }
    let expr = rest.trim().trim_end_matches(';');
    format!(
        r#"{{
    fn tchbook_format_seconds(s: f64) -> String {{
        if s >= 1.0 {{ format!("{{:.3}} s", s) }}
        else if s >= 1e-3 {{ format!("{{:.3}} ms", s * 1e3) }}
        else if s >= 1e-6 {{ format!("{{:.3}} µs", s * 1e6) }}
        else {{ format!("{{:.1}} ns", s * 1e9) }}
    }}
    let tchbook_start = std::time::Instant::now();
    std::hint::black_box({{ {expr} }});
    let tchbook_first = tchbook_start.elapsed().as_secs_f64();
    let mut tchbook_loops: u64 = {loops};
    if tchbook_loops == 0 {{
        tchbook_loops = 1;
        while tchbook_first * (tchbook_loops as f64) < 0.2 && tchbook_loops < 1_000_000_000 {{
            tchbook_loops *= 10;
        }}
    }}
    let tchbook_runs: u64 = ({runs} as u64).max(1);
    let mut tchbook_times = Vec::new();
    for _ in 0..tchbook_runs {{
        let start = std::time::Instant::now();
        for _ in 0..tchbook_loops {{
            std::hint::black_box({{ {expr} }});
        }}
        tchbook_times.push(start.elapsed().as_secs_f64() / tchbook_loops as f64);
    }}
    let mean = tchbook_times.iter().sum::<f64>() / tchbook_times.len() as f64;
    let var = tchbook_times.iter().map(|t| (t - mean) * (t - mean)).sum::<f64>()
        / tchbook_times.len() as f64;
    println!(
        "{{}} ± {{}} per loop (mean ± std. dev. of {{}} run{{}}, {{}} loop{{}} each)",
        tchbook_format_seconds(mean),
        tchbook_format_seconds(var.sqrt()),
        tchbook_runs,
        if tchbook_runs == 1 {{ "" }} else {{ "s" }},
        tchbook_loops,
        if tchbook_loops == 1 {{ "" }} else {{ "s" }},
    );
}};"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_commands_are_read_as_evcxr_reads_them() {
        assert_eq!(command_argument(":fmt {:#?}", ":fmt"), Some("{:#?}"));
        assert_eq!(command_argument(":fmt", ":fmt"), Some(""));
        assert_eq!(command_argument(":types", ":types"), Some(""));
        assert_eq!(command_argument(":fmtx", ":fmt"), None);
        assert_eq!(command_argument("let fmt = 1;", ":fmt"), None);
        let pretty = PlainFormat {
            format: "{:#?}".to_owned(),
            types: true,
        };
        assert_eq!(
            pretty.prelude_call(),
            "tchbook_prelude::display::set_plain_format(true, true);"
        );
        assert!(pretty.followed());
        let display = PlainFormat {
            format: "{}".to_owned(),
            types: false,
        };
        assert!(!display.followed());
    }

    #[test]
    fn timeit_reads_loop_and_run_counts() {
        let code = timeit_code(" -n 5 -r 3 x + 1");
        assert!(code.contains("let mut tchbook_loops: u64 = 5;"));
        assert!(code.contains("(3 as u64)"));
        assert!(code.contains("{ x + 1 }"));
    }
}
