//! One handler per request type, named after it.
//!
//! The shell loop handles one request at a time, as ipykernel does: each gets `busy`, its
//! reply, then `idle`, so every output of a cell reaches iopub before its `idle`. The control
//! loop is a task of its own, so `interrupt_request` and `shutdown_request` are answered while
//! a cell runs.

use crate::completion::Completer;
use crate::display::{self, ErrorReport, Line};
use crate::engine::{CellError, Engine, Event, Finished, Interrupter, Startup};
use crate::history::History;
use crate::syntax::{self, Completeness};
use crate::transport::{IoPub, Router};
use jupyter_protocol::{
    ClearOutput, CodeMirrorMode, CommClose, CommInfoReply, CommOpen, CompleteReply,
    CompleteRequest, DisplayData, ErrorOutput, ExecuteInput, ExecuteReply, ExecuteRequest,
    ExecuteResult, ExecutionCount, ExpressionResult, HelpLink, HistoryReply, HistoryRequest,
    InputRequest, InspectReply, InterruptReply, IsCompleteReply, IsCompleteReplyStatus,
    IsCompleteRequest, JupyterMessage, JupyterMessageContent, KernelInfoReply, LanguageInfo, Media,
    MediaType, Payload, ReplyError, ReplyStatus, ShutdownReply, ShutdownRequest, Status,
    StreamContent, Transient, UnknownMessage, UpdateDisplayData,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{error::TryRecvError, UnboundedSender};

/// What kernel_info reports; the device becomes known once the evaluation process is up.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub rustc_version: String,
    pub rustc_banner: String,
    pub torch: Option<String>,
    pub libtorch_dir: Option<String>,
    pub cuda_devices: Option<usize>,
}

/// Shared between the shell and control loops.
#[derive(Clone)]
pub struct Shared {
    pub iopub: IoPub,
    pub facts: Arc<Mutex<Facts>>,
    /// Told when a shutdown was requested (the flag is `restart`).
    pub shutdown: UnboundedSender<bool>,
}

impl Shared {
    fn status(&self, parent: &JupyterMessage, status: Status) {
        self.iopub.publish(status.as_child_of(parent));
    }

    fn kernel_info_reply(&self) -> KernelInfoReply {
        let facts = self.facts.lock().unwrap().clone();
        let torch = match (&facts.torch, &facts.libtorch_dir) {
            (Some(version), Some(dir)) => format!("torch {version} (libtorch at {dir})"),
            (None, Some(dir)) => format!("libtorch at {dir}"),
            _ => "torch: libtorch not found (pip install torch==2.11.0, or set LIBTORCH)".into(),
        };
        let device = match facts.cuda_devices {
            Some(0) => "device: cpu (no CUDA device visible)".to_owned(),
            Some(n) => format!(
                "device: cuda ({n} CUDA device{})",
                if n == 1 { "" } else { "s" }
            ),
            None => "device: known once the evaluation process has started".to_owned(),
        };
        KernelInfoReply {
            status: ReplyStatus::Ok,
            protocol_version: "5.3".into(),
            implementation: "tchbook".into(),
            implementation_version: crate::VERSION.into(),
            language_info: LanguageInfo {
                name: "rust".into(),
                version: facts.rustc_version.clone(),
                mimetype: Some("text/rust".into()),
                file_extension: Some(".rs".into()),
                pygments_lexer: Some("rust".into()),
                codemirror_mode: Some(CodeMirrorMode::Simple("rust".into())),
                nbconvert_exporter: Some("script".into()),
            },
            banner: format!(
                "tchbook {} — tensor notebooks in Rust (evcxr + tch)\n{}\n{torch}\n{device}\n\
                 Type :help for commands.",
                crate::VERSION,
                facts.rustc_banner
            ),
            help_links: vec![
                HelpLink {
                    text: "tchbook".into(),
                    url: "https://github.com/tchbook/tchbook".into(),
                },
                HelpLink {
                    text: "tch (Rust bindings for PyTorch)".into(),
                    url: "https://docs.rs/tch".into(),
                },
                HelpLink {
                    text: "The Rust book".into(),
                    url: "https://doc.rust-lang.org/book/".into(),
                },
                HelpLink {
                    text: "evcxr commands".into(),
                    url: "https://github.com/evcxr/evcxr/blob/main/COMMON.md".into(),
                },
            ],
            debugger: false,
            error: None,
        }
    }
}

/// The control loop: interrupt, shutdown and kernel_info while the shell may be busy.
pub async fn run_control(mut control: Router, shared: Shared, interrupter: Interrupter) {
    while let Some(message) = control.incoming.recv().await {
        shared.status(&message, Status::busy());
        let reply = match &message.content {
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt_request(&interrupter);
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                Some(shutdown_request(&shared, &interrupter, request).as_child_of(&message))
            }
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(shared.kernel_info_reply().as_child_of(&message))
            }
            JupyterMessageContent::UnknownMessage(unknown) => unknown_request(&message, unknown),
            other => {
                tracing::warn!("control: ignoring {}", other.message_type());
                None
            }
        };
        if let Some(reply) = reply {
            let _ = control.outgoing.send(reply);
        }
        shared.status(&message, Status::idle());
    }
}

fn interrupt_request(interrupter: &Interrupter) {
    if !interrupter.interrupt() {
        tracing::info!("interrupt requested while no cell runs");
    }
}

fn shutdown_request(
    shared: &Shared,
    interrupter: &Interrupter,
    request: &ShutdownRequest,
) -> ShutdownReply {
    interrupter.kill();
    let _ = shared.shutdown.send(request.restart);
    ShutdownReply {
        restart: request.restart,
        status: ReplyStatus::Ok,
        error: None,
    }
}

fn unknown_request(message: &JupyterMessage, unknown: &UnknownMessage) -> Option<JupyterMessage> {
    tracing::warn!("unknown message type {}", unknown.msg_type);
    if !unknown.msg_type.ends_with("_request") {
        return None;
    }
    let content = unknown.reply(serde_json::json!({
        "status": "error",
        "ename": "UnknownMessageType",
        "evalue": format!("tchbook does not handle {}", unknown.msg_type),
        "traceback": [],
    }));
    Some(JupyterMessage::new(content, Some(message)))
}

/// The shell side of the kernel.
pub struct Shell {
    pub shared: Shared,
    pub shell: Router,
    pub stdin: Router,
    pub engine: Engine,
    completer: Arc<Completer>,
    startup: Option<Startup>,
    warned: bool,
    execution_count: usize,
    history: History,
    /// Requests received while a cell ran, in order, not handled yet.
    queued: VecDeque<JupyterMessage>,
    /// How many of `queued` arrived before a failed cell's error reply (stop_on_error).
    abort_first: usize,
}

impl Shell {
    pub fn new(
        shared: Shared,
        shell: Router,
        stdin: Router,
        engine: Engine,
        completer: Completer,
    ) -> Self {
        Shell {
            shared,
            shell,
            stdin,
            engine,
            completer: Arc::new(completer),
            startup: None,
            warned: false,
            execution_count: 0,
            history: History::default(),
            queued: VecDeque::new(),
            abort_first: 0,
        }
    }

    pub async fn run(mut self) {
        loop {
            let message = match self.queued.pop_front() {
                Some(message) => message,
                None => match self.shell.incoming.recv().await {
                    Some(message) => message,
                    None => return,
                },
            };
            self.handle(&message).await;
            // stop_on_error: abort the execute_requests that arrived before the error reply
            // went out (counted by execute_request just before sending it); anything else
            // among them is handled normally, in order.
            let to_check: Vec<JupyterMessage> = self.queued.drain(..self.abort_first).collect();
            self.abort_first = 0;
            let mut kept = VecDeque::new();
            for message in to_check {
                if matches!(message.content, JupyterMessageContent::ExecuteRequest(_)) {
                    self.abort(&message);
                } else {
                    kept.push_back(message);
                }
            }
            kept.extend(self.queued.drain(..));
            self.queued = kept;
        }
    }

    /// Moves every request the reader task already holds into `queued`.
    async fn collect_queued(&mut self) {
        // Let the reader task hand over what it has already read from the socket.
        tokio::task::yield_now().await;
        while let Ok(message) = self.shell.incoming.try_recv() {
            self.queued.push_back(message);
        }
    }

    fn reply(&self, reply: JupyterMessage) {
        let _ = self.shell.outgoing.send(reply);
    }

    fn publish(&self, message: JupyterMessage) {
        self.shared.iopub.publish(message);
    }

    /// Handles one request between `busy` and `idle`.
    async fn handle(&mut self, message: &JupyterMessage) {
        self.shared.status(message, Status::busy());
        match &message.content {
            JupyterMessageContent::ExecuteRequest(request) => {
                self.execute_request(message, request).await;
            }
            JupyterMessageContent::KernelInfoRequest(_) => {
                self.reply(self.shared.kernel_info_reply().as_child_of(message));
            }
            JupyterMessageContent::CompleteRequest(request) => {
                let reply = self.complete_request(request).await;
                self.reply(reply.as_child_of(message));
            }
            JupyterMessageContent::InspectRequest(request) => {
                // The first hover waits for rust-analyzer to load (seconds), and JupyterLab asks
                // for the highlighted item's documentation after every completion reply: the
                // reply, then `idle`, come from a task of their own, so the requests behind it
                // (the next Tab, with its one-second limit) are not held up.
                let code = &request.code;
                let position = syntax::code_point_to_byte(code, request.cursor_pos);
                let end = syntax::end_of_identifier(code, position);
                let source = self.engine.prepare_hover(code.clone(), end).await;
                let completer = self.completer.clone();
                let shared = self.shared.clone();
                let outgoing = self.shell.outgoing.clone();
                let message = message.clone();
                tokio::spawn(async move {
                    let found = match source {
                        Some(source) => completer.inspect(source).await,
                        None => None,
                    };
                    let _ = outgoing.send(inspect_reply(found).as_child_of(&message));
                    shared.status(&message, Status::idle());
                });
                return;
            }
            JupyterMessageContent::IsCompleteRequest(request) => {
                self.reply(is_complete_request(request).as_child_of(message));
            }
            JupyterMessageContent::HistoryRequest(request) => {
                self.reply(self.history_request(request).as_child_of(message));
            }
            JupyterMessageContent::CommInfoRequest(_) => {
                // tchbook registers no comm targets.
                let reply = CommInfoReply {
                    status: ReplyStatus::Ok,
                    comms: HashMap::new(),
                    error: None,
                };
                self.reply(reply.as_child_of(message));
            }
            JupyterMessageContent::CommOpen(open) => self.comm_open(message, open),
            JupyterMessageContent::CommMsg(msg) => {
                tracing::info!("comm_msg for unknown comm {}", msg.comm_id.0);
            }
            JupyterMessageContent::CommClose(close) => {
                tracing::info!("comm_close for unknown comm {}", close.comm_id.0);
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                let reply = shutdown_request(&self.shared, &self.engine.interrupter, request);
                self.reply(reply.as_child_of(message));
            }
            JupyterMessageContent::UnknownMessage(unknown) => {
                if let Some(reply) = unknown_request(message, unknown) {
                    self.reply(reply);
                }
            }
            other => tracing::warn!("shell: ignoring {}", other.message_type()),
        }
        self.shared.status(message, Status::idle());
    }

    /// An execute_request queued behind a failed cell: `busy`, an `aborted` reply, `idle`.
    fn abort(&mut self, message: &JupyterMessage) {
        self.shared.status(message, Status::busy());
        let reply = ExecuteReply {
            status: ReplyStatus::Aborted,
            execution_count: ExecutionCount::new(self.execution_count),
            payload: Vec::new(),
            user_expressions: None,
            error: None,
        };
        self.reply(reply.as_child_of(message));
        self.shared.status(message, Status::idle());
    }

    /// Waits for the engine's start-up report (the first cell may arrive before it).
    async fn wait_for_startup(&mut self) {
        while self.startup.is_none() {
            match self.engine.events.recv().await {
                Some(Event::Started(startup)) => {
                    self.shared.facts.lock().unwrap().cuda_devices = startup.cuda_devices;
                    self.startup = Some(startup);
                }
                // Start-up cells are silent.
                Some(other) => tracing::debug!("start-up output: {other:?}"),
                None => return,
            }
        }
    }

    async fn execute_request(&mut self, message: &JupyterMessage, request: &ExecuteRequest) {
        let silent = request.silent;
        if !silent {
            self.execution_count += 1;
        }
        let count = ExecutionCount::new(self.execution_count);
        if !silent {
            self.publish(
                ExecuteInput {
                    code: request.code.clone(),
                    execution_count: count,
                }
                .as_child_of(message),
            );
            if request.store_history {
                self.history.record(self.execution_count, &request.code);
            }
        }
        self.wait_for_startup().await;
        if !self.warned {
            self.warned = true;
            if let Some(warning) = self.startup.as_ref().and_then(|s| s.warning.clone()) {
                self.publish(StreamContent::stderr(&format!("{warning}\n")).as_child_of(message));
            }
        }

        if let Some(name) = syntax::help_target(&request.code) {
            return self
                .page_help(message, request, name.to_owned(), count)
                .await;
        }

        self.engine
            .execute(request.code.clone(), request.allow_stdin);
        let mut output = CellOutput::default();
        let finished = loop {
            let event = match self.engine.events.try_recv() {
                Ok(event) => event,
                Err(TryRecvError::Empty) => {
                    // Nothing more queued: let the front end see what we have.
                    output.flush(&self.shared.iopub, message);
                    match self.engine.events.recv().await {
                        Some(event) => event,
                        None => break None,
                    }
                }
                Err(TryRecvError::Disconnected) => break None,
            };
            match event {
                Event::Stdout(line) => output.line(&self.shared.iopub, message, &line),
                Event::Stderr(line) => {
                    output.flush(&self.shared.iopub, message);
                    output.stderr.push_str(&line);
                    output.stderr.push('\n');
                }
                Event::Input {
                    prompt,
                    password,
                    reply,
                } => {
                    output.flush(&self.shared.iopub, message);
                    let value = if request.allow_stdin {
                        self.input_request(message, prompt, password).await
                    } else {
                        String::new()
                    };
                    let _ = reply.send(value);
                }
                Event::Finished(finished) => break Some(finished),
                Event::Started(startup) => self.startup = Some(startup),
            }
        };
        output.flush(&self.shared.iopub, message);

        let finished = finished.unwrap_or(Finished {
            outcome: Err(CellError::Failed("the evaluation engine stopped".into())),
            source: None,
        });
        let error = match finished.outcome {
            Ok(value) => match output.panic.take() {
                Some(panic) => Some(display::panic_report(
                    &panic,
                    &request.code,
                    finished.source.as_deref(),
                )),
                None => {
                    if let Some(timing) = value.timing {
                        self.publish(
                            StreamContent::stdout(&format!("Took {}ms\n", timing.as_millis()))
                                .as_child_of(message),
                        );
                    }
                    if !value.mime.is_empty() && !display::is_unit(&value.mime) && !silent {
                        if let Some((_, text)) = value.mime.iter().find(|(k, _)| k == "text/plain")
                        {
                            self.history.record_output(self.execution_count, text);
                        }
                        // `transient` must be an object when present (the message schema);
                        // jupyter-protocol would write `null` for None.
                        let result = ExecuteResult {
                            transient: Some(Transient::default()),
                            ..ExecuteResult::new(
                                count,
                                match &value.table {
                                    Some(table) => display::table_media(table),
                                    None => display::value_media(&value.mime),
                                },
                            )
                        };
                        self.publish(result.as_child_of(message));
                    }
                    None
                }
            },
            Err(CellError::Compile(diagnostics)) => {
                Some(display::compile_report(&request.code, &diagnostics))
            }
            Err(CellError::Interrupted { lost }) => Some(display::interrupted_report(&lost)),
            Err(CellError::Crashed { message: why, lost }) => {
                Some(display::crashed_report(&why, &lost))
            }
            Err(CellError::Failed(why)) => Some(display::failure_report(&why)),
        };

        let user_expressions = request.user_expressions.as_ref().map(|expressions| {
            expressions
                .keys()
                .map(|name| {
                    (
                        name.clone(),
                        ExpressionResult::Error {
                            ename: "NotSupported".into(),
                            evalue: "tchbook does not evaluate user_expressions".into(),
                            traceback: Vec::new(),
                        },
                    )
                })
                .collect()
        });
        match error {
            None => {
                let reply = ExecuteReply {
                    status: ReplyStatus::Ok,
                    execution_count: count,
                    payload: Vec::new(),
                    user_expressions,
                    error: None,
                };
                self.reply(reply.as_child_of(message));
            }
            Some(ErrorReport {
                ename,
                evalue,
                traceback,
            }) => {
                self.publish(
                    ErrorOutput {
                        ename: ename.clone(),
                        evalue: evalue.clone(),
                        traceback: traceback.clone(),
                    }
                    .as_child_of(message),
                );
                let reply = ExecuteReply {
                    status: ReplyStatus::Error,
                    execution_count: count,
                    payload: Vec::new(),
                    user_expressions,
                    error: Some(Box::new(ReplyError {
                        ename,
                        evalue,
                        traceback,
                    })),
                };
                if request.stop_on_error {
                    self.collect_queued().await;
                    self.abort_first = self.queued.len();
                }
                self.reply(reply.as_child_of(message));
            }
        }
    }

    /// `?name`: the documentation of `name` as a pager payload, as IPython answers `?`.
    async fn page_help(
        &mut self,
        message: &JupyterMessage,
        request: &ExecuteRequest,
        name: String,
        count: ExecutionCount,
    ) {
        let found = self.documentation(name.clone(), name.len()).await;
        let (plain, html) = found.unwrap_or_else(|| {
            let text = format!("No documentation found for `{name}`.");
            (text.clone(), text)
        });
        let reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count: count,
            payload: vec![Payload::Page {
                data: Media::new(vec![MediaType::Plain(plain), MediaType::Html(html)]),
                start: 0,
            }],
            user_expressions: request.user_expressions.as_ref().map(|_| HashMap::new()),
            error: None,
        };
        self.reply(reply.as_child_of(message));
    }

    /// Asks the front end for a line of input on stdin and waits for the answer (or for the
    /// cell to be interrupted, which answers with an empty line).
    async fn input_request(
        &mut self,
        parent: &JupyterMessage,
        prompt: String,
        password: bool,
    ) -> String {
        let request = InputRequest { prompt, password };
        let _ = self.stdin.outgoing.send(request.as_child_of(parent));
        loop {
            tokio::select! {
                reply = self.stdin.incoming.recv() => match reply {
                    Some(JupyterMessage { content: JupyterMessageContent::InputReply(reply), .. }) => {
                        return reply.value;
                    }
                    Some(other) => tracing::warn!("stdin: ignoring {}", other.header.msg_type),
                    None => return String::new(),
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if self.engine.interrupter.was_interrupted() {
                        return String::new();
                    }
                }
            }
        }
    }

    async fn complete_request(&mut self, request: &CompleteRequest) -> CompleteReply {
        let code = &request.code;
        let position = syntax::code_point_to_byte(code, request.cursor_pos);
        let prepared = self.engine.prepare_completion(code.clone(), position).await;
        let found = self.completer.complete(code, position, prepared).await;
        let (start, end) = if found.matches.is_empty() {
            (position, position)
        } else {
            (found.start.min(code.len()), found.end.min(code.len()))
        };
        let cursor_start = syntax::byte_to_code_point(code, start);
        let cursor_end = syntax::byte_to_code_point(code, end);
        // JupyterLab shows an icon per kind from this (ipykernel's key, experimental there too).
        let types: Vec<serde_json::Value> = found
            .matches
            .iter()
            .map(|m| {
                serde_json::json!({
                    "start": cursor_start, "end": cursor_end, "text": m.text, "type": m.kind,
                })
            })
            .collect();
        let mut metadata = serde_json::Map::new();
        metadata.insert("_jupyter_types_experimental".into(), types.into());
        CompleteReply {
            matches: found.matches.into_iter().map(|m| m.text).collect(),
            cursor_start,
            cursor_end,
            metadata,
            status: ReplyStatus::Ok,
            error: None,
        }
    }

    /// `(plain text, html)` documentation of the name ending at byte `position` of `code`.
    async fn documentation(&mut self, code: String, position: usize) -> Option<(String, String)> {
        let source = self.engine.prepare_hover(code, position).await?;
        self.completer.inspect(source).await
    }

    fn history_request(&self, request: &HistoryRequest) -> HistoryReply {
        HistoryReply::new(self.history.answer(request))
    }

    fn comm_open(&self, message: &JupyterMessage, open: &CommOpen) {
        // No comm targets are registered: close the comm at once, as ipykernel does for an
        // unknown target, so the front end does not wait on it.
        tracing::info!("comm_open for unknown target {}", open.target_name);
        self.publish(
            CommClose {
                comm_id: open.comm_id.clone(),
                data: serde_json::Map::new(),
            }
            .as_child_of(message),
        );
    }
}

fn inspect_reply(found: Option<(String, String)>) -> InspectReply {
    let data = match &found {
        Some((plain, html)) => Media::new(vec![
            MediaType::Plain(plain.clone()),
            MediaType::Html(html.clone()),
        ]),
        None => Media::default(),
    };
    InspectReply {
        found: found.is_some(),
        data,
        metadata: serde_json::Map::new(),
        status: ReplyStatus::Ok,
        error: None,
    }
}

fn is_complete_request(request: &IsCompleteRequest) -> IsCompleteReply {
    match syntax::is_complete(&request.code) {
        Completeness::Complete => {
            IsCompleteReply::new(IsCompleteReplyStatus::Complete, String::new())
        }
        Completeness::Incomplete(indent) => {
            IsCompleteReply::new(IsCompleteReplyStatus::Incomplete, indent)
        }
        Completeness::Invalid => {
            IsCompleteReply::new(IsCompleteReplyStatus::Invalid, String::new())
        }
    }
}

/// A running cell's output on its way to iopub: ordinary lines are batched into one `stream`
/// message per burst; protocol lines become their own messages, in order.
#[derive(Default)]
struct CellOutput {
    stdout: String,
    stderr: String,
    panic: Option<display::Panic>,
}

impl CellOutput {
    fn line(&mut self, iopub: &IoPub, parent: &JupyterMessage, line: &str) {
        match display::parse_line(line) {
            Line::Text(text) => {
                if !self.stderr.is_empty() {
                    self.flush(iopub, parent);
                }
                self.stdout.push_str(&text);
                self.stdout.push('\n');
            }
            Line::Stream { stderr, text } => {
                let buffer = if stderr {
                    &mut self.stderr
                } else {
                    &mut self.stdout
                };
                buffer.push_str(&text);
                // Partial lines exist to be seen now.
                self.flush(iopub, parent);
            }
            Line::Panic(panic) if panic.ends_cell() && self.panic.is_none() => {
                self.panic = Some(panic);
            }
            Line::Panic(panic) => {
                self.stderr.push_str(&format!(
                    "thread '{}' panicked at {}:\n{}\n",
                    panic.thread, panic.location, panic.message
                ));
            }
            Line::Display {
                data,
                metadata,
                display_id,
            } => {
                self.flush(iopub, parent);
                let content = DisplayData {
                    data: display::media(data),
                    metadata,
                    transient: display_id.map(|id| Transient {
                        display_id: Some(id),
                    }),
                };
                iopub.publish(content.as_child_of(parent));
            }
            Line::Update {
                data,
                metadata,
                display_id,
            } => {
                self.flush(iopub, parent);
                let content = UpdateDisplayData {
                    data: display::media(data),
                    metadata,
                    transient: Transient {
                        display_id: Some(display_id),
                    },
                };
                iopub.publish(content.as_child_of(parent));
            }
            Line::Clear { wait } => {
                self.flush(iopub, parent);
                iopub.publish(ClearOutput { wait }.as_child_of(parent));
            }
        }
    }

    fn flush(&mut self, iopub: &IoPub, parent: &JupyterMessage) {
        if !self.stdout.is_empty() {
            iopub.publish(
                StreamContent::stdout(&std::mem::take(&mut self.stdout)).as_child_of(parent),
            );
        }
        if !self.stderr.is_empty() {
            iopub.publish(
                StreamContent::stderr(&std::mem::take(&mut self.stderr)).as_child_of(parent),
            );
        }
    }
}
