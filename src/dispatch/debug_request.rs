//! `debug_request`, on control, in ipykernel's reply shapes (`ipykernel/debugger.py`).
//!
//! The Variables panel's requests are answered here without any debugger (jupyterlab#9114):
//! `debugInfo`, `initialize`, `attach`, `configurationDone`, `disconnect`, `inspectVariables`,
//! `variables`, `richInspectVariables`, `modules`. Breakpoints are the [`Session`]'s: `initialize`
//! starts gdb and attaches it to the evaluation process (`crate::debugger`), `dumpCell` writes
//! the cell's file, `setBreakpoints` places breakpoints on the cell's lines, and while a cell
//! is stopped `stackTrace`, `scopes`, `variables`, `next`, `stepIn`, `stepOut`, `continue`,
//! `pause` and `evaluate` go to gdb, and `source` reads a file a frame named. gdb's events go
//! out on iopub as `debug_event`. Anything gdb or the kernel cannot do gets an error response
//! naming the command and why.
//!
//! With the debugger on, JupyterLab sends `inspectVariables` after every iopub message of a
//! running cell. The evaluation process answers only between cells (while a cell runs its
//! variables are in the cell's locals), so those requests get the variables of the last
//! finished cell, kept here, under a first line that says so; the request after the cell's
//! `idle` gets the new ones. Nothing is compiled for any of it.

use super::Shared;
use super::panels::Debugger;
use crate::debugger::{self, Session};
use jupyter_protocol::{DebugReply, DebugRequest, JupyterMessage, UnknownMessage};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tchbook_wire::side_channel::{Answer, Request, Variable};

/// How long the variables may take (a few small tensors' statistics).
const VARIABLES_PATIENCE: Duration = Duration::from_secs(3);
/// How long a rich view may take (a heat map of a large tensor, averaged down on its device).
const RICH_PATIENCE: Duration = Duration::from_secs(10);

/// The name of the line that says a cell is running.
const RUNNING_NOTE: &str = "(cell running)";

pub(super) async fn debug_request(
    shared: &Shared,
    request: &DebugRequest,
    message: &JupyterMessage,
) -> JupyterMessage {
    let request = &request.content;
    let command = request["command"].as_str().unwrap_or_default();
    let arguments = &request["arguments"];
    let stopped = shared.panels.session.stopped().is_some();
    tracing::debug!("debug_request {command} {arguments}");
    let (success, body) = match panel_request(shared, command, arguments, stopped).await {
        Some(answered) => answered,
        None => session_request(shared, command, arguments, stopped).await,
    };
    let mut content = json!({
        "seq": request["seq"],
        "type": "response",
        "request_seq": request["seq"],
        "success": success,
        "command": command,
        "body": body,
    });
    if !success {
        content["message"] = content["body"]["error"].clone();
        tracing::debug!("debug_request {command} failed: {}", content["message"]);
    }
    JupyterMessage::new(DebugReply { content }, Some(message))
}

/// The Variables panel's requests, answered without gdb (while no cell is stopped); `None`
/// for the others.
async fn panel_request(
    shared: &Shared,
    command: &str,
    arguments: &Value,
    stopped: bool,
) -> Option<(bool, Value)> {
    let session = &shared.panels.session;
    Some(match command {
        "debugInfo" => {
            let started = shared.panels.debugger.lock().unwrap().started;
            (true, debug_info(started, session))
        }
        "attach" | "configurationDone" | "setExceptionBreakpoints" => (true, json!({})),
        "inspectVariables" => (
            true,
            json!({"variables": inspect_variables(shared, stopped).await}),
        ),
        "variables" if !stopped => {
            let reference = arguments["variablesReference"].as_u64().unwrap_or(0);
            let debugger = shared.panels.debugger.lock().unwrap();
            match fields(&debugger, reference) {
                Some(fields) => (true, json!({"variables": fields})),
                None => (
                    false,
                    json!({"error": format!(
                        "no variable has the reference {reference} now: the values it named are gone \
                         (a cell ran, or the cell that was stopped went on); expand the variable again"
                    )}),
                ),
            }
        }
        "richInspectVariables" if stopped => (
            true,
            json!({"data": {"text/plain":
            "Variables can be rendered once the stopped cell goes on or ends."}, "metadata": {}}),
        ),
        "richInspectVariables" => {
            let name = arguments["variableName"].as_str().unwrap_or_default();
            match rich_inspect_variables(shared, name).await {
                Some(body) => (true, body),
                // ipykernel: not an identifier (a group's title) gets an empty bundle.
                None => (false, json!({"data": {}, "metadata": {}})),
            }
        }
        "stackTrace" if !stopped => (true, json!({"stackFrames": [], "totalFrames": 0})),
        "modules" => (true, json!({"modules": [], "totalModules": 0})),
        _ => return None,
    })
}

/// The debugger's requests: switching it on and off, the cells' files and breakpoints, and
/// what gdb answers while a cell is stopped.
async fn session_request(
    shared: &Shared,
    command: &str,
    arguments: &Value,
    stopped: bool,
) -> (bool, Value) {
    let session = Arc::clone(&shared.panels.session);
    let (command, arguments) = (command.to_owned(), arguments.clone());
    let answered = match command.as_str() {
        "initialize" => {
            shared.panels.debugger.lock().unwrap().started = true;
            // gdb reads the evaluation process's symbols as it attaches: seconds, off the
            // async workers.
            let sink = event_sink(shared);
            blocking(move || session.switch_on(sink)).await;
            Ok(capabilities())
        }
        "disconnect" => {
            shared.panels.debugger.lock().unwrap().started = false;
            blocking(move || session.switch_off()).await;
            Ok(json!({}))
        }
        "dumpCell" => debugger::dump(arguments["code"].as_str().unwrap_or_default())
            .map(|path| json!({"sourcePath": path}))
            .map_err(|error| format!("the cell's file could not be written: {error}")),
        "setBreakpoints" => Ok(blocking(move || session.set_breakpoints(&arguments)).await),
        "stackTrace" if stopped => blocking(move || session.stack_trace(&arguments)).await,
        "source" => session.source(&arguments),
        step if debugger::STEPS.contains(&step) => {
            blocking(move || session.step(&command, &arguments)).await
        }
        passed if debugger::PASSED_ON.contains(&passed) => {
            blocking(move || session.pass_on(&command, &arguments)).await
        }
        other => Err(format!("tchbook's debugger does not handle `{other}`")),
    };
    match answered {
        Ok(body) => (true, body),
        Err(error) => (false, json!({"error": error})),
    }
}

/// A blocking call on the session (gdb answers within its patience) off the async workers.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work)
        .await
        .expect("a debugger request panicked")
}

/// What `initialize` says the kernel can do (gdb's own, for what tchbook passes on).
fn capabilities() -> Value {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsEvaluateForHovers": false,
        "supportsStepBack": false,
        "exceptionBreakpointFilters": [],
    })
}

/// gdb's events, as `debug_event` on iopub, where JupyterLab listens for them.
fn event_sink(shared: &Shared) -> debugger::EventSink {
    let iopub = shared.iopub.clone();
    Arc::new(move |event| {
        let content = UnknownMessage {
            msg_type: "debug_event".into(),
            content: event,
        };
        iopub.publish(JupyterMessage::new(content, None));
    })
}

/// ipykernel's `debugInfo` body: how JupyterLab names a cell's file, the breakpoints set, the
/// stopped thread (JupyterLab restores its view from these after a reload).
fn debug_info(started: bool, session: &Session) -> Value {
    json!({
        "isStarted": started,
        "hashMethod": "Murmur2",
        "hashSeed": debugger::HASH_SEED,
        "tmpFilePrefix": debugger::prefix(),
        "tmpFileSuffix": ".rs",
        "breakpoints": session.breakpoints(),
        "stoppedThreads": session.stopped().into_iter().collect::<Vec<_>>(),
        "richRendering": true,
        "exceptionPaths": [],
        "copyToGlobals": false,
    })
}

/// The variables now, or, while a cell runs, those of the last finished cell under a note
/// (a stopped cell's process answers nothing: its locals are in the debugger's scopes).
async fn inspect_variables(shared: &Shared, stopped: bool) -> Vec<Value> {
    let answer = if stopped {
        Some(Answer::Busy)
    } else {
        shared
            .side_channel
            .ask(&Request::Variables, VARIABLES_PATIENCE)
            .await
    };
    let mut debugger = shared.panels.debugger.lock().unwrap();
    let mut listed = Vec::new();
    match answer {
        Some(Answer::Variables { variables }) => debugger.variables = variables,
        Some(Answer::Busy) => listed.push(json!({
            "name": RUNNING_NOTE,
            "value": "the values below are those of the last finished cell",
            "evaluateName": "",
            "variablesReference": 0,
        })),
        _ => {}
    }
    listed.extend(
        debugger
            .variables
            .iter()
            .enumerate()
            .map(|(i, v)| dap_variable(i, v)),
    );
    listed
}

/// A variable as DAP has it; one with fields expands through `variablesReference` (its place
/// in the kept list, from 1).
///
/// Without `type`: JupyterLab's tree shows a variable's type instead of its value unless the
/// type is one of Python's `int`, `float`, `bool`, `str` or none at all (`convertType` in
/// @jupyterlab/debugger), so a tensor would read `x: Tensor`. The value lines name their type
/// where it matters (`Tensor[64, 10] f32 …`, `VarStore 62,006 parameters …`).
fn dap_variable(index: usize, variable: &Variable) -> Value {
    let reference = if variable.fields.is_empty() {
        0
    } else {
        index + 1
    };
    json!({
        "name": variable.name,
        "value": variable.value,
        "evaluateName": variable.name,
        "variablesReference": reference,
    })
}

/// A variable's fields (`variables` with its reference); `None` for a reference no kept
/// variable has.
fn fields(debugger: &Debugger, reference: u64) -> Option<Vec<Value>> {
    let variable = (reference as usize)
        .checked_sub(1)
        .and_then(|i| debugger.variables.get(i))?;
    let fields = variable
        .fields
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "value": f.value,
                "evaluateName": format!("{}.{}", variable.name, f.name),
                "variablesReference": 0,
            })
        })
        .collect();
    Some(fields)
}

/// The rich view's body (`data`, `metadata` only for the MIME types present); `None` for a
/// name that is no variable's.
async fn rich_inspect_variables(shared: &Shared, name: &str) -> Option<Value> {
    if !is_identifier(name) {
        return None;
    }
    let text = |text: String| json!({"data": {"text/plain": text}, "metadata": {}});
    let answer = shared
        .side_channel
        .ask(
            &Request::Rich {
                name: name.to_owned(),
            },
            RICH_PATIENCE,
        )
        .await;
    Some(match answer {
        Some(Answer::Rich { data, metadata }) => {
            let metadata: Map<String, Value> = metadata
                .into_iter()
                .filter(|(mime, _)| data.contains_key(mime))
                .collect();
            json!({"data": data, "metadata": metadata})
        }
        Some(Answer::Busy) => text(format!(
            "`{name}` can be rendered once the running cell has ended (its variables are in use)."
        )),
        Some(Answer::Error { message }) => text(message),
        _ => {
            text("The evaluation process did not answer: it may be starting or restarting.".into())
        }
    })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}
