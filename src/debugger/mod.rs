//! Breakpoints in cells: JupyterLab's debugger on gdb's Debug Adapter Protocol.
//!
//! A [`Session`] is shared by the engine (which builds each cell and knows the evaluation
//! process) and dispatch (which answers JupyterLab's `debug_request`s and publishes the
//! adapter's events). When JupyterLab switches the debugger on, the session starts gdb
//! (`gdb`), attaches it to the evaluation process, and from then on:
//!
//! - before a cell is built, the engine asks for the cell's file ([`Session::cell_source`]):
//!   the build then carries debug information naming that file;
//! - once it is built, before its library loads, the engine hands over where the cell's lines
//!   went, and the earlier cells' items the crate holds again ([`Session::cell_built`]); the
//!   breakpoints on those lines go to gdb, which places them as the library loads
//!   (`breakpoints`);
//! - gdb's events reach the handler dispatch installed; requests are passed on with lines and
//!   frames translated between the cell and the built crate (`cells`).
//!
//! The adapter's process is separate and may die or hang: every request has a patience, and
//! a gdb that ended leaves the session as if the debugger had never attached (the cells keep
//! running; breakpoints say why they do not stop).

mod adapter;
mod breakpoints;
mod cells;
mod gdb;
mod requests;
mod traps;

pub(crate) use cells::{HASH_SEED, dump, prefix};
pub(crate) use requests::{PASSED_ON, STEPS};

use crate::cellbuild::cargo_front::set_debug_source;
use adapter::{Adapter, EventHandler};
use cells::Cells;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tchbook_cellcode::CodeOrigin;

/// How long gdb may take to attach: it reads the symbols of the evaluation process and of
/// every library loaded there (libtorch's are hundreds of megabytes).
const ATTACH_PATIENCE: Duration = Duration::from_secs(120);
/// How long any other request may take.
const PATIENCE: Duration = Duration::from_secs(15);

/// Where the adapter's events go: the DAP event, already translated for JupyterLab.
pub(crate) type EventSink = Arc<dyn Fn(Value) + Send + Sync>;

/// The debugger of one kernel.
#[derive(Default)]
pub struct Session {
    state: Arc<Mutex<State>>,
    /// Held while gdb is started and attached (by `initialize`, or by the engine after a
    /// restart), so that one gdb is started at a time.
    attaching: Mutex<()>,
}

#[derive(Default)]
struct State {
    /// The evaluation process now (a new one after each restart).
    evaluation: Option<u32>,
    /// Whether JupyterLab has the debugger on (`initialize` until `disconnect`).
    on: bool,
    adapter: Option<Arc<Adapter>>,
    /// The process gdb is attached to.
    attached: Option<u32>,
    /// Why there is no adapter, for the replies that need one.
    missing: Option<String>,
    /// The thread gdb stopped, while it is stopped.
    stopped: Option<i64>,
    /// How many stops there have been: part of the frame ids JupyterLab is given
    /// (`requests::FRAME_STRIDE`).
    stops: u64,
    cells: Cells,
    /// The files the frames of `stackTrace` named: those `source` may read.
    sources: std::collections::HashSet<String>,
    sink: Option<EventSink>,
    /// Whether a `pause` was sent and its stop has not come yet (`requests::pause`).
    pausing: bool,
    /// While a step waits for its own stop (`requests::step`): where stops go instead.
    held: Option<std::sync::mpsc::Sender<Value>>,
}

impl Session {
    /// The engine started an evaluation process.
    pub(crate) fn evaluation_started(&self, pid: u32) {
        self.state.lock().unwrap().evaluation = Some(pid);
    }

    /// Whether a thread of the evaluation process is stopped in gdb.
    pub(crate) fn stopped(&self) -> Option<i64> {
        self.state.lock().unwrap().stopped
    }

    /// The breakpoints set, as `debugInfo` lists them (`[{source, breakpoints}]`).
    pub(crate) fn breakpoints(&self) -> Vec<Value> {
        let state = self.state.lock().unwrap();
        state
            .cells
            .breakpoints()
            .map(|(path, breakpoints)| json!({"source": path, "breakpoints": breakpoints}))
            .collect()
    }

    /// Whether JupyterLab has the debugger on.
    fn is_on(&self) -> bool {
        self.state.lock().unwrap().on
    }

    /// The debugger switched on: events go to `sink` from now on; gdb is started and attached
    /// if it can be. A missing gdb is no error here (the Variables panel needs none): it is
    /// said in an `output` event and in each breakpoint's reply.
    pub(crate) fn switch_on(&self, sink: EventSink) {
        {
            let mut state = self.state.lock().unwrap();
            state.on = true;
            state.sink = Some(sink);
        }
        if let Err(why) = self.attach() {
            let mut state = self.state.lock().unwrap();
            state.missing = Some(why.clone());
            let sink = state.sink.clone();
            drop(state);
            if let Some(sink) = sink {
                sink(output_event(&why));
            }
        }
    }

    /// The debugger switched off: gdb detaches (the cell, if stopped, runs on) and ends.
    pub(crate) fn switch_off(&self) {
        let adapter = {
            let mut state = self.state.lock().unwrap();
            state.on = false;
            state.stopped = None;
            state.attached = None;
            state.adapter.take()
        };
        if let Some(adapter) = adapter {
            let _ = adapter.request("disconnect", json!({"terminateDebuggee": false}), PATIENCE);
        }
    }

    /// Starts gdb and attaches it to the evaluation process, unless it is attached already.
    fn attach(&self) -> Result<(), String> {
        let _one_at_a_time = self.attaching.lock().unwrap();
        let pid = {
            let state = self.state.lock().unwrap();
            match state.evaluation {
                Some(pid) if state.attached == Some(pid) && state.adapter.is_some() => {
                    return Ok(());
                }
                Some(pid) => pid,
                None => return Err("the evaluation process has not started yet".into()),
            }
        };
        let gdb = gdb::find().ok_or_else(|| gdb::missing("no `gdb` was found"))?;
        let adapter =
            Adapter::start(gdb::command(&gdb), self.event_handler()).map_err(|error| {
                gdb::missing(&format!("{} could not start: {error}", gdb.display()))
            })?;
        let arguments = json!({"clientID": "tchbook", "adapterID": "gdb", "linesStartAt1": true,
            "columnsStartAt1": true, "pathFormat": "path"});
        adapter
            .request("initialize", arguments, PATIENCE)
            .map_err(|error| gdb::missing(&format!("{}: {error}", gdb.display())))?;
        let adapter = Arc::new(adapter);
        // Kept before the attach, so that the event handler can continue the attach's stop.
        self.state.lock().unwrap().adapter = Some(Arc::clone(&adapter));
        // gdb answers `attach` only after `configurationDone`.
        let attached = adapter
            .send("attach", json!({"pid": pid}))
            .and_then(|attach| {
                adapter.request("configurationDone", json!({}), PATIENCE)?;
                adapter.wait("attach", attach, ATTACH_PATIENCE)
            });
        let mut state = self.state.lock().unwrap();
        match attached {
            Ok(_) => {
                state.attached = Some(pid);
                state.missing = None;
                Ok(())
            }
            Err(error) => {
                state.adapter = None;
                Err(format!(
                    "gdb could not attach to the evaluation process {pid}: {error}"
                ))
            }
        }
    }

    /// The file a cell's build should name in its debug information, while the debugger is on
    /// (gdb attached again first if the evaluation process was restarted); `None` otherwise.
    fn cell_source(&self, code: &str) -> Option<PathBuf> {
        if !self.is_on() {
            return None;
        }
        if let Err(why) = self.attach() {
            tracing::warn!("debugger: {why}");
            self.state.lock().unwrap().missing = Some(why);
            return None;
        }
        cells::dump(code).ok()
    }

    /// Before a cell's build: with the debugger on, the build names the cell's own file in its
    /// debug information; the function returned, which evcxr calls before the cell's library
    /// loads, sends the cell's breakpoints to gdb.
    pub(crate) fn prepare_build(
        session: &Arc<Session>,
        code: &str,
        build_dir: &std::path::Path,
    ) -> impl Fn(&[(CodeOrigin, &str)]) + use<> {
        let source = session.cell_source(code);
        tracing::debug!("debugger: the cell builds for {source:?}");
        if let Err(error) = set_debug_source(build_dir, source.as_deref()) {
            tracing::warn!("debugger: {error}");
        }
        let session = Arc::clone(session);
        move |segments: &[(CodeOrigin, &str)]| {
            if let Some(source) = &source {
                session.cell_built(source, segments);
            }
        }
    }

    /// What gdb's events become: the attach's own stop is gdb's business (the process runs
    /// on); stops and continues are kept for the replies; lines are the cells'.
    fn event_handler(&self) -> EventHandler {
        let state = Arc::clone(&self.state);
        Box::new(move |event| {
            let Some(event) = event else {
                // gdb ended: the session is as if it had never attached.
                let mut state = state.lock().unwrap();
                state.adapter = None;
                let attached = state.attached.take();
                state.stopped = None;
                let sink = state.sink.clone();
                drop(state);
                let taken_out = attached.map(traps::take_out);
                let said = match taken_out {
                    Some(Ok(n)) if n > 0 => format!(
                        "gdb ended; the {n} breakpoint(s) it had placed in the running cell were taken out, and the cell runs on. Breakpoints stop nothing until the debugger is switched on again."
                    ),
                    Some(Err(error)) => format!(
                        "gdb ended, and its breakpoints could not be taken out of the evaluation process ({error}): reaching one ends it. Restart the kernel, or switch the debugger on again."
                    ),
                    _ => "gdb ended; breakpoints stop nothing until the debugger is switched on again.".into(),
                };
                tracing::warn!("debugger: {said}");
                if let Some(sink) = sink {
                    sink(output_event(&said));
                }
                return;
            };
            let mut event = event;
            let mut state = state.lock().unwrap();
            match event["event"].as_str().unwrap_or_default() {
                "stopped" if event["body"]["reason"] == "attach" => {
                    // The process was running before gdb came; it runs on.
                    if let Some(adapter) = &state.adapter {
                        adapter.notify("continue", json!({"threadId": event["body"]["threadId"]}));
                    }
                    return;
                }
                "stopped" => {
                    if std::mem::take(&mut state.pausing) && event["body"]["reason"] == "signal" {
                        event["body"]["reason"] = json!("pause");
                    }
                    state.stopped = event["body"]["threadId"].as_i64();
                    state.stops += 1;
                    if let Some(held) = &state.held {
                        let _ = held.send(event);
                        return;
                    }
                }
                "continued" if state.held.is_some() => return,
                "continued" => state.stopped = None,
                "output" | "thread" | "breakpoint" => {}
                _ => return,
            }
            let event = requests::translate_event(&state.cells, event);
            if let Some(sink) = state.sink.clone() {
                drop(state);
                sink(event);
            }
        })
    }
}

/// A DAP `output` event on the console.
fn output_event(text: &str) -> Value {
    json!({"type": "event", "event": "output", "seq": 0,
        "body": {"category": "console", "output": format!("{text}\n")}})
}
