//! JupyterLab's requests passed on to gdb, and gdb's answers and events made JupyterLab's:
//! breakpoint lines between cell and crate, stack frames named by cell and line.

use super::cells::{Cells, to_cell};
use super::{PATIENCE, Session};
use serde_json::{Value, json};
use std::time::Duration;

/// The requests gdb answers as they come (thread and frame ids, variable references and
/// expressions are gdb's own, and so are its errors for unknown ones).
pub(crate) const PASSED_ON: &[&str] = &[
    "threads",
    "scopes",
    "variables",
    "stepOut",
    "continue",
    "pause",
    "evaluate",
];

/// The frame ids JupyterLab sees: the stop's number times this, plus gdb's id.
const FRAME_STRIDE: u64 = 1_000_000;

/// The steps that end on the next line of the cell (`Session::step`).
pub(crate) const STEPS: &[&str] = &["next", "stepIn"];

/// How many of gdb's steps one step of the user's may take.
const MOST_STEPS: usize = 8;
/// How long a step may run before it is left to stop by itself (a call that takes long): its
/// stop is then published when it comes.
const STEP_PATIENCE: Duration = Duration::from_secs(5);

impl Session {
    /// `stackTrace` from gdb, with each frame in a cell at the cell's line, named by its cell;
    /// the frames below the outermost cell frame (the evaluation process's loop, `main`, the
    /// C library) left out.
    pub(crate) fn stack_trace(&self, arguments: &Value) -> Result<Value, String> {
        let mut body = self.pass_on("stackTrace", arguments)?;
        let mut state = self.state.lock().unwrap();
        if let Some(frames) = body["stackFrames"].as_array_mut() {
            let outermost = frames
                .iter()
                .rposition(|frame| in_cell(&state.cells, frame));
            if let Some(outermost) = outermost {
                frames.truncate(outermost + 1);
                body["totalFrames"] = json!(outermost + 1);
            }
            let frames = body["stackFrames"].as_array_mut().expect("an array");
            for frame in frames {
                translate_frame(&state.cells, frame);
                if let Some(path) = frame["source"]["path"].as_str() {
                    state.sources.insert(path.to_owned());
                }
                // gdb numbers the frames of every stop from 0; JupyterLab keeps its selected
                // frame (and the line it shows) while a frame with the same file and id comes
                // back, so the ids it is given are new at each stop.
                let id = frame["id"].as_u64().unwrap_or(0);
                frame["id"] = json!(state.stops * FRAME_STRIDE + id);
            }
        }
        Ok(body)
    }

    /// A request that names a frame, with the frame's id as gdb knows it; an error for a frame
    /// of an earlier stop.
    fn with_gdb_frame(&self, command: &str, arguments: &Value) -> Result<Value, String> {
        let mut arguments = arguments.clone();
        if let Some(id) = arguments["frameId"].as_u64() {
            let stops = self.state.lock().unwrap().stops;
            if id / FRAME_STRIDE != stops {
                return Err(format!(
                    "`{command}`: frame {id} is not a frame of the current stop; ask `stackTrace` for them"
                ));
            }
            arguments["frameId"] = json!(id % FRAME_STRIDE);
        }
        Ok(arguments)
    }

    /// `next` or `stepIn`, on to a line other than the one it started on. Each cell statement
    /// is followed, on its own line, by the prelude's interrupt check (`interrupt_points`), an
    /// inlined call after which gdb stops on the same line again; the user's step goes on to
    /// the next line, as it would in a cell without the checks.
    pub(crate) fn step(&self, command: &str, arguments: &Value) -> Result<Value, String> {
        self.known_thread(command, arguments)?;
        let thread = json!({"threadId": arguments["threadId"]});
        let before = self.top_line(&thread);
        let (held, stops) = std::sync::mpsc::channel();
        self.state.lock().unwrap().held = Some(held);
        let mut answer = self.pass_on(command, arguments);
        let mut stop = None;
        for _ in 0..MOST_STEPS {
            if answer.is_err() {
                break;
            }
            let Ok(stopped) = stops.recv_timeout(STEP_PATIENCE) else {
                break;
            };
            let again = stopped["body"]["reason"] == "step"
                && before.is_some()
                && self.top_line(&thread) == before;
            stop = Some(stopped);
            if !again {
                break;
            }
            answer = self.pass_on(command, arguments);
        }
        let sink = {
            let mut state = self.state.lock().unwrap();
            state.held = None;
            state.sink.clone()
        };
        if let (Some(stop), Some(sink)) = (stop, sink) {
            sink(stop);
        }
        answer
    }

    /// An error unless the request's `threadId` is one of gdb's threads: gdb itself runs an
    /// unknown thread's `next` or `continue` on the thread it has selected.
    fn known_thread(&self, command: &str, arguments: &Value) -> Result<(), String> {
        let adapter = self.state.lock().unwrap().adapter.clone();
        let Some(adapter) = adapter else {
            return Ok(()); // `pass_on` says that no gdb is attached
        };
        let threads = adapter.request("threads", json!({}), PATIENCE)?;
        let id = &arguments["threadId"];
        let known = threads["threads"]
            .as_array()
            .is_some_and(|threads| threads.iter().any(|thread| thread["id"] == *id));
        if known {
            Ok(())
        } else {
            Err(format!(
                "`{command}`: the evaluation process has no thread {id}; ask `threads` for its threads"
            ))
        }
    }

    /// The top frame's function, file and cell line.
    fn top_line(&self, thread: &Value) -> Option<(Value, Value, Value)> {
        let mut arguments = thread.clone();
        arguments["levels"] = json!(1);
        let trace = self.stack_trace(&arguments).ok()?;
        let top = &trace["stackFrames"][0];
        Some((
            top["name"].clone(),
            top["source"]["path"].clone(),
            top["line"].clone(),
        ))
    }

    /// A request gdb answers itself; an error while no gdb is attached.
    pub(crate) fn pass_on(&self, command: &str, arguments: &Value) -> Result<Value, String> {
        if command == "pause" {
            return self.pause(arguments);
        }
        let arguments = &self.with_gdb_frame(command, arguments)?;
        let (adapter, missing) = {
            let state = self.state.lock().unwrap();
            (state.adapter.clone(), state.missing.clone())
        };
        let Some(adapter) = adapter else {
            return Err(missing.unwrap_or_else(|| {
                format!(
                    "`{command}` needs the debugger attached: switch it on and stop at a breakpoint"
                )
            }));
        };
        // gdb sends no `continued` event for a request that resumes: the process runs from
        // the moment it is asked to (a failed request leaves it where it was).
        let resumes = matches!(command, "continue" | "next" | "stepIn" | "stepOut");
        if resumes || command == "pause" {
            self.known_thread(command, arguments)?;
        }
        let before = resumes
            .then(|| self.state.lock().unwrap().stopped.take())
            .flatten();
        let answer = adapter.request(command, arguments.clone(), PATIENCE);
        if answer.is_err() && before.is_some() {
            self.state.lock().unwrap().stopped = before;
        }
        answer
    }

    /// `source`: the text of a file a frame of this session named (a cell's, the prelude's,
    /// the standard library's), which JupyterLab shows for a frame outside the notebook.
    pub(crate) fn source(&self, arguments: &Value) -> Result<Value, String> {
        let path = arguments["source"]["path"]
            .as_str()
            .or_else(|| arguments["path"].as_str())
            .unwrap_or_default();
        if !self.state.lock().unwrap().sources.contains(path) {
            return Err(format!(
                "`source`: no frame of this debugger names the file {path:?}; only a frame's source can be shown"
            ));
        }
        let content = std::fs::read_to_string(path)
            .map_err(|error| format!("`source`: {path} could not be read: {error}"))?;
        Ok(json!({"content": content, "mimeType": "text/x-rustsrc"}))
    }

    /// `pause` of a running cell. gdb's own pause (`interrupt`) sends SIGINT to the evaluation
    /// process's group, which gdb here passes on without stopping, since SIGINT is the stop
    /// button's (`gdb::command`): the cell would end with `KeyboardInterrupt` instead of
    /// pausing. The kernel sends the thread that runs the cells a SIGSTOP instead:
    /// gdb stops the process on it (and keeps it from the process), and its `stopped` event
    /// (reason `signal`) goes to JupyterLab as the pause's.
    fn pause(&self, arguments: &Value) -> Result<Value, String> {
        self.known_thread("pause", arguments)?;
        let pid = {
            let mut state = self.state.lock().unwrap();
            match (&state.adapter, state.attached) {
                (Some(_), Some(pid)) if state.stopped.is_none() => {
                    state.pausing = true;
                    pid
                }
                (Some(_), Some(_)) => return Err("`pause`: the cell is stopped already".into()),
                _ => {
                    return Err(
                        "`pause` needs the debugger attached: switch it on and run a cell".into(),
                    );
                }
            }
        };
        let pid = libc::pid_t::try_from(pid).map_err(|_| format!("`pause`: no process {pid}"))?;
        let thread = cells_thread(pid);
        // SAFETY: tgkill takes plain integers: the process and one of its threads.
        let sent = unsafe { libc::syscall(libc::SYS_tgkill, pid, thread, libc::SIGSTOP) };
        if sent != 0 {
            self.state.lock().unwrap().pausing = false;
            return Err(format!(
                "`pause`: the evaluation process {pid} could not be signalled: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(json!({}))
    }

    /// Lets a stopped cell run on, for the stop button: gdb detaches (taking its breakpoints
    /// out of the process, so none stops the cell again before its interrupt check) and ends;
    /// the next cell attaches a new one while the debugger is on. Returns whether a cell was
    /// stopped. Blocks for as long as gdb takes to detach (its patience at most).
    pub(crate) fn release(&self) -> bool {
        let adapter = {
            let mut state = self.state.lock().unwrap();
            if state.stopped.take().is_none() {
                return false;
            }
            state.attached = None;
            state.adapter.take()
        };
        if let Some(adapter) = adapter {
            let _ = adapter.request("disconnect", json!({"terminateDebuggee": false}), PATIENCE);
        }
        true
    }
}

/// Whether a frame is in a line of a cell built for the debugger (not in the function evcxr
/// wraps the cell in, whose lines above the cell's first are its own).
fn in_cell(cells: &Cells, frame: &Value) -> bool {
    let line = frame["line"].as_u64().unwrap_or(0) as usize;
    frame["source"]["path"]
        .as_str()
        .and_then(|path| cells.map(path))
        .is_some_and(|map| to_cell(map, line).is_some())
}

/// A frame in a built crate: at its cell's line, its source that cell's file (which JupyterLab
/// matches to the cell by name; an item an earlier cell defined is in that cell), named `cell`
/// where it is the cell's own code. A frame gdb has no source for (a library built without
/// debug information) is given a source named by its library: JupyterLab's call stack reads
/// every frame's `source`, and one without stops the whole list from rendering.
fn translate_frame(cells: &Cells, frame: &mut Value) {
    let Some(path) = frame["source"]["path"].as_str().map(str::to_owned) else {
        let library = frame["moduleId"]
            .as_str()
            .and_then(|module| module.rsplit('/').next())
            .unwrap_or("no source")
            .to_owned();
        frame["source"] = json!({"name": library, "presentationHint": "deemphasize"});
        return;
    };
    let Some(map) = cells.map(&path) else {
        return;
    };
    let built = frame["line"].as_u64().unwrap_or(0) as usize;
    if let Some((cell, line)) = to_cell(map, built) {
        frame["line"] = json!(line);
        frame["source"] = json!({"path": &*cell, "name": cell.rsplit('/').next()});
    }
    if frame["name"]
        .as_str()
        .is_some_and(|name| name.contains("run_user_code_"))
    {
        frame["name"] = json!("cell");
    }
}

/// gdb's event made JupyterLab's: a breakpoint event at its cell line.
pub(crate) fn translate_event(cells: &Cells, mut event: Value) -> Value {
    let Some(breakpoint) = event["body"].get_mut("breakpoint") else {
        return event;
    };
    if let Some(path) = breakpoint["source"]["path"].as_str().map(str::to_owned)
        && let Some(map) = cells.map(&path)
        && let Some((cell, line)) = to_cell(map, breakpoint["line"].as_u64().unwrap_or(0) as usize)
    {
        breakpoint["line"] = json!(line);
        breakpoint["source"] = json!({"path": &*cell});
    }
    event
}

/// The evaluation process's thread that runs cells: the newest named `tchbook-cells`
/// (`src/evaluation/cells.rs`; one left in a stopped wait is renamed), else the main thread.
fn cells_thread(pid: libc::pid_t) -> libc::pid_t {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    tasks
        .flatten()
        .filter_map(|task| task.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|name| name.trim() == crate::evaluation::CELLS_THREAD_NAME)
        })
        .max()
        .unwrap_or(pid)
}
