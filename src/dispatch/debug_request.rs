//! `debug_request`, on control: as much of the Debug Adapter Protocol as JupyterLab's
//! Variables panel needs without breakpoints (jupyterlab#9114), in ipykernel's reply shapes
//! (`ipykernel/debugger.py`): `debugInfo`, `initialize`, `attach`, `configurationDone`,
//! `disconnect`, `inspectVariables`, `variables`, `richInspectVariables`; harmless answers to
//! the gutter's `dumpCell` and `setBreakpoints` (each breakpoint unverified, saying why),
//! `setExceptionBreakpoints`, `source`, `stackTrace` and `modules`; an error response, naming
//! the command, for anything else (a kernel cannot stop a compiled cell at a line).
//!
//! With the debugger on, JupyterLab sends `inspectVariables` after every iopub message of a
//! running cell. The evaluation process answers only between cells (while a cell runs its
//! variables are in the cell's locals), so those requests get the variables of the last
//! finished cell, kept here, under a first line that says so; the request after the cell's
//! `idle` gets the new ones. Nothing is compiled for any of it.

use super::Shared;
use super::panels::Debugger;
use jupyter_protocol::{DebugReply, DebugRequest, JupyterMessage};
use serde_json::{Map, Value, json};
use std::time::Duration;
use tchbook_wire::panels::{Answer, Request, Variable};

/// How long the variables may take (a few small tensors' statistics).
const VARIABLES_PATIENCE: Duration = Duration::from_secs(3);
/// How long a rich view may take (a heat map of a large tensor, averaged down on its device).
const RICH_PATIENCE: Duration = Duration::from_secs(10);

/// The name of the line that says a cell is running.
pub const RUNNING_NOTE: &str = "(cell running)";

/// What a breakpoint's response says.
const NO_BREAKPOINTS: &str = "tchbook cannot stop at a breakpoint: its cells are compiled Rust, run whole. \
     The Variables panel shows the notebook's variables after each cell.";

pub(super) async fn debug_request(
    shared: &Shared,
    request: &DebugRequest,
    message: &JupyterMessage,
) -> JupyterMessage {
    let request = &request.content;
    let command = request["command"].as_str().unwrap_or_default();
    let arguments = &request["arguments"];
    let response = |success: bool, body: Value| {
        let mut response = json!({
            "seq": request["seq"],
            "type": "response",
            "request_seq": request["seq"],
            "success": success,
            "command": command,
            "body": body,
        });
        if !success {
            response["message"] = body["error"].clone();
        }
        response
    };
    let content = match command {
        "debugInfo" => {
            let started = shared.panels.debugger.lock().unwrap().started;
            response(true, debug_info(started))
        }
        "initialize" => {
            shared.panels.debugger.lock().unwrap().started = true;
            response(
                true,
                json!({"supportsConfigurationDoneRequest": true, "exceptionBreakpointFilters": []}),
            )
        }
        "disconnect" => {
            shared.panels.debugger.lock().unwrap().started = false;
            response(true, json!({}))
        }
        "attach" | "configurationDone" | "setExceptionBreakpoints" => response(true, json!({})),
        "inspectVariables" => response(true, json!({"variables": inspect_variables(shared).await})),
        "variables" => {
            let reference = arguments["variablesReference"].as_u64().unwrap_or(0);
            let debugger = shared.panels.debugger.lock().unwrap();
            response(true, json!({"variables": fields(&debugger, reference)}))
        }
        "richInspectVariables" => {
            let name = arguments["variableName"].as_str().unwrap_or_default();
            match rich_inspect_variables(shared, name).await {
                Some(body) => response(true, body),
                // ipykernel: not an identifier (a group's title) gets an empty bundle.
                None => response(false, json!({"data": {}, "metadata": {}})),
            }
        }
        "dumpCell" => response(true, json!({"sourcePath": cell_path()})),
        "setBreakpoints" => {
            let breakpoints: Vec<Value> = arguments["breakpoints"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|b| json!({"verified": false, "line": b["line"], "message": NO_BREAKPOINTS}))
                .collect();
            response(true, json!({"breakpoints": breakpoints}))
        }
        "source" => {
            let mut reply = response(false, json!({}));
            reply["message"] = "source unavailable".into();
            reply
        }
        "stackTrace" => response(true, json!({"stackFrames": [], "totalFrames": 0})),
        "modules" => response(true, json!({"modules": [], "totalModules": 0})),
        other => response(
            false,
            json!({"error": format!(
                "tchbook's debugger does not handle `{other}`: it shows the notebook's \
                 variables, but cannot stop, step or evaluate"
            )}),
        ),
    };
    JupyterMessage::new(DebugReply { content }, Some(message))
}

/// ipykernel's `debugInfo` body. The hash and the file names are the ones JupyterLab would use
/// for the cells' breakpoints, which tchbook never stops at.
fn debug_info(started: bool) -> Value {
    json!({
        "isStarted": started,
        "hashMethod": "Murmur2",
        "hashSeed": 3339675911u32,
        "tmpFilePrefix": cell_prefix(),
        "tmpFileSuffix": ".rs",
        "breakpoints": [],
        "stoppedThreads": [],
        "richRendering": true,
        "exceptionPaths": [],
        "copyToGlobals": false,
    })
}

fn cell_prefix() -> String {
    format!(
        "{}/tchbook-cells-{}/",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

fn cell_path() -> String {
    format!("{}cell.rs", cell_prefix())
}

/// The variables now, or, while a cell runs, those of the last finished cell under a note.
async fn inspect_variables(shared: &Shared) -> Vec<Value> {
    let answer = shared
        .panels
        .client
        .ask(&Request::Variables, VARIABLES_PATIENCE)
        .await;
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

/// A variable's fields (`variables` with its reference).
fn fields(debugger: &Debugger, reference: u64) -> Vec<Value> {
    let Some(variable) = (reference as usize)
        .checked_sub(1)
        .and_then(|i| debugger.variables.get(i))
    else {
        return Vec::new();
    };
    variable
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
        .collect()
}

/// The rich view's body (`data`, `metadata` only for the MIME types present); `None` for a
/// name that is no variable's.
async fn rich_inspect_variables(shared: &Shared, name: &str) -> Option<Value> {
    if !is_identifier(name) {
        return None;
    }
    let text = |text: String| json!({"data": {"text/plain": text}, "metadata": {}});
    let answer = shared
        .panels
        .client
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
