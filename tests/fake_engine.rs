//! A fake evaluation engine behind the kernel's [`Evaluator`] seam, and the whole kernel served
//! in the test process on it: the protocol tests talk to real ZeroMQ sockets on loopback with
//! the real client, in milliseconds, without evcxr, rustc or libtorch.
//!
//! A cell is a script, one command per line (the first word), run in order on the fake's own
//! thread as the real engine runs cells on its thread:
//! - `print TEXT` / `eprint TEXT`: a line on the cell's stdout / stderr (`print` carries the
//!   live display protocol's lines too, as the real evaluation process's stdout does);
//! - `value TEXT`: the cell's final value, as `text/plain`;
//! - `fail TEXT`: an engine error (as evcxr reports a bad `:` command);
//! - `panic TEXT` / `thread-panic TEXT`: a panic on the cell's thread / another thread, as
//!   the kernel's panic hook reports it;
//! - `input PROMPT`: reads a line (a `password` prompt when PROMPT starts with `password`),
//!   then prints `read: LINE`;
//! - `wait`: runs until interrupted, then ends as the prelude's `interrupt::check()` does, with
//!   a `KeyboardInterrupt` panic;
//! - `sleep MS`;
//! - `let NAME TYPE = VALUE`: a variable, as its side channel reports it (`fake_side_channel`);
//! - `widget ID VALUE`: opens an IntSlider's comm; `set ID VALUE`: changes its value from the
//!   cell; `close ID`; `await-value ID VALUE`: runs until the front end set the value (or an
//!   interrupt), then prints `saw VALUE` (`fake_side_channel` keeps the widgets).

use crate::fake_side_channel::{self, FakeStore};
use crate::support::Client;
use crossbeam_channel::bounded;
use jupyter_protocol::ConnectionInfo;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tchbook::completion::{Completer, Completions, Match, Prepared, Source};
use tchbook::dispatch::Facts;
use tchbook::engine::{CellError, CellValue, Evaluator, Event, Finished, Interrupts, Startup};
use tchbook_wire::{Message, Panic};
use tokio::sync::mpsc;

/// What the fake was asked to do, for tests to check.
#[derive(Clone, Default)]
pub struct Record {
    /// The code of every cell the engine ran, in order.
    pub cells: Arc<Mutex<Vec<String>>>,
}

impl Record {
    pub fn cells(&self) -> Vec<String> {
        self.cells.lock().unwrap().clone()
    }
}

pub struct FakeEngine {
    requests: std::sync::mpsc::Sender<String>,
    events: mpsc::UnboundedReceiver<Event>,
    interrupter: FakeInterrupter,
    side_channel: std::path::PathBuf,
}

impl FakeEngine {
    /// An engine that reports `startup` at once and then runs cells on a thread of its own.
    pub fn spawn(startup: Startup, record: Record, interrupter: FakeInterrupter) -> FakeEngine {
        let (requests, queue) = std::sync::mpsc::channel::<String>();
        let (events, receiver) = mpsc::unbounded_channel();
        let _ = events.send(Event::Started(startup));
        let store = FakeStore::default();
        store.print_callbacks_to(events.clone());
        let busy = interrupter.clone();
        let side_channel = fake_side_channel::serve(store.clone(), move || busy.running());
        let running = interrupter.clone();
        std::thread::spawn(move || {
            for code in queue {
                record.cells.lock().unwrap().push(code.clone());
                running.flags.running.store(true, Ordering::SeqCst);
                running.flags.interrupted.store(false, Ordering::SeqCst);
                let outcome = run_script(&code, &events, &running, &store);
                running.flags.running.store(false, Ordering::SeqCst);
                let finished = Finished {
                    outcome,
                    source: None,
                };
                if events.send(Event::Finished(finished)).is_err() {
                    return;
                }
            }
        });
        FakeEngine {
            requests,
            events: receiver,
            interrupter,
            side_channel,
        }
    }
}

impl Evaluator for FakeEngine {
    type Interrupter = FakeInterrupter;

    fn interrupter(&self) -> FakeInterrupter {
        self.interrupter.clone()
    }

    /// The kernel answers input requests with an empty line itself when stdin is not allowed.
    fn execute(&mut self, code: String, _allow_stdin: bool) {
        let _ = self.requests.send(code);
    }

    async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    fn queued_event(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    fn side_channel(&self) -> Option<std::path::PathBuf> {
        Some(self.side_channel.clone())
    }

    /// Offers `compute_thing` for the identifier that ends at `position`, as the engine
    /// answers evcxr's `:` commands itself.
    async fn prepare_completion(&mut self, code: String, position: usize) -> Prepared {
        let start = code[..position]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map_or(position, |(i, _)| i);
        Prepared::Answered(Completions {
            matches: vec![Match {
                text: "compute_thing".into(),
                kind: "function".into(),
            }],
            start,
            end: position,
        })
    }

    async fn prepare_hover(&mut self, _code: String, _position: usize) -> Option<Source> {
        None
    }
}

/// Runs one cell's script; its output goes to `events`.
fn run_script(
    code: &str,
    events: &mpsc::UnboundedSender<Event>,
    interrupter: &FakeInterrupter,
    store: &FakeStore,
) -> Result<CellValue, CellError> {
    let mut value = CellValue::default();
    for line in code.lines() {
        let (command, text) = line.split_once(' ').unwrap_or((line, ""));
        let _ = match command {
            "print" => events.send(Event::Stdout(text.into())),
            "eprint" => events.send(Event::Stderr(text.into())),
            "value" => {
                value.mime = vec![("text/plain".into(), text.into())];
                Ok(())
            }
            "fail" => return Err(CellError::Failed(text.into())),
            "panic" => events.send(Event::Stdout(panic_line(text, true))),
            "thread-panic" => events.send(Event::Stdout(panic_line(text, false))),
            "input" => {
                let (reply, answer) = bounded(1);
                let _ = events.send(Event::Input {
                    prompt: text.into(),
                    password: text.starts_with("password"),
                    reply,
                });
                let line = answer.recv().unwrap_or_default();
                events.send(Event::Stdout(format!("read: {line}")))
            }
            "wait" => {
                while !interrupter.was_interrupted() {
                    if interrupter.kills() > 0 {
                        return Err(CellError::Crashed {
                            message: "killed".into(),
                            lost: Vec::new(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                let message = "KeyboardInterrupt: interrupted by the user";
                events.send(Event::Stdout(panic_line(message, true)))
            }
            "let" => {
                store.define(text).map_err(CellError::Failed)?;
                Ok(())
            }
            "widget" => events.send(Event::Stdout(
                store.open_widget(text).map_err(CellError::Failed)?,
            )),
            "set" => events.send(Event::Stdout(
                store.set_widget(text).map_err(CellError::Failed)?,
            )),
            "close" => events.send(Event::Stdout(store.close_widget(text))),
            "await-value" => {
                let (id, wanted) = text.split_once(' ').unwrap_or((text, ""));
                let wanted: i64 = wanted.parse().unwrap();
                while store.widget_value(id) != Some(wanted) {
                    if interrupter.was_interrupted() {
                        let message = "KeyboardInterrupt: interrupted by the user";
                        let _ = events.send(Event::Stdout(panic_line(message, true)));
                        return Ok(value);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                events.send(Event::Stdout(format!("saw {wanted}")))
            }
            "sleep" => {
                std::thread::sleep(Duration::from_millis(text.parse().unwrap()));
                Ok(())
            }
            other => {
                return Err(CellError::Failed(format!(
                    "fake engine: no command {other:?}"
                )));
            }
        };
    }
    Ok(value)
}

/// A panic as the kernel's panic hook reports it on the cell's stdout.
fn panic_line(message: &str, on_main: bool) -> String {
    let panic = Panic {
        message: message.into(),
        location: "src/lib.rs:3:5".into(),
        thread: if on_main { "main" } else { "worker" }.into(),
        on_main,
        cpp_frames: false,
    };
    Message::Panic(panic).to_line().trim_end().to_owned()
}

/// The fake's interrupt bookkeeping, shared with the test.
#[derive(Clone, Default)]
pub struct FakeInterrupter {
    flags: Arc<Flags>,
}

#[derive(Default)]
struct Flags {
    running: AtomicBool,
    interrupted: AtomicBool,
    /// Interrupts that reached a running cell.
    interrupts: AtomicUsize,
    kills: AtomicUsize,
}

impl FakeInterrupter {
    pub fn interrupts(&self) -> usize {
        self.flags.interrupts.load(Ordering::SeqCst)
    }

    pub fn kills(&self) -> usize {
        self.flags.kills.load(Ordering::SeqCst)
    }

    /// Whether a fake cell is running.
    pub fn running(&self) -> bool {
        self.flags.running.load(Ordering::SeqCst)
    }
}

impl Interrupts for FakeInterrupter {
    fn interrupt(&self) -> bool {
        if !self.flags.running.load(Ordering::SeqCst) {
            return false;
        }
        self.flags.interrupted.store(true, Ordering::SeqCst);
        self.flags.interrupts.fetch_add(1, Ordering::SeqCst);
        true
    }

    fn was_interrupted(&self) -> bool {
        self.flags.running.load(Ordering::SeqCst) && self.flags.interrupted.load(Ordering::SeqCst)
    }

    fn interrupt_again(&self) {
        if self.was_interrupted() {
            self.flags.interrupts.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn kill(&self) {
        self.flags.kills.fetch_add(1, Ordering::SeqCst);
    }
}

/// The kernel served in this process on a fake engine, and a client connected to it.
pub struct FakeKernel {
    client: Client,
    pub record: Record,
    pub interrupter: FakeInterrupter,
    /// The kernel's `serve`: ends after a shutdown_request, with its `restart` flag.
    pub served: tokio::task::JoinHandle<anyhow::Result<bool>>,
}

impl std::ops::Deref for FakeKernel {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for FakeKernel {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// What the fake kernel's kernel_info reports.
pub fn facts() -> Facts {
    Facts {
        rustc_version: "1.95.0".into(),
        rustc_banner: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
        torch: Some("2.11.0".into()),
        libtorch_dir: Some("/opt/torch".into()),
        cuda_devices: None,
    }
}

pub fn ready() -> Startup {
    Startup {
        warning: None,
        cuda_devices: Some(0),
        elapsed: Duration::ZERO,
    }
}

impl FakeKernel {
    pub async fn start() -> FakeKernel {
        Self::start_with(ready()).await
    }

    /// A kernel whose engine reports `startup` when it has started.
    pub async fn start_with(startup: Startup) -> FakeKernel {
        capture_log();
        let info = crate::support::loopback_connection().await;
        let record = Record::default();
        let interrupter = FakeInterrupter::default();
        let engine = FakeEngine::spawn(startup, record.clone(), interrupter.clone());
        let served = tokio::spawn(serve(info.clone(), engine));
        let client = Client::connect(info).await;
        FakeKernel {
            client,
            record,
            interrupter,
            served,
        }
    }
}

async fn serve(info: ConnectionInfo, engine: FakeEngine) -> anyhow::Result<bool> {
    // Never asked: the fake answers completions itself and has no hover sources.
    let unused = std::env::temp_dir().join(format!("tchbook-fake-{}", info.shell_port));
    let completer = Completer::new(&unused, None, "");
    tchbook::kernel::serve(&info.into(), engine, completer, facts()).await
}

/// Everything the in-process kernels logged (tracing is global to the test process).
pub fn log() -> String {
    String::from_utf8_lossy(&LOG.get_or_init(Default::default).lock().unwrap()).into_owned()
}

static LOG: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();

fn capture_log() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(|| LogWriter)
            .try_init();
    });
}

struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let log = LOG.get_or_init(Default::default);
        log.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
