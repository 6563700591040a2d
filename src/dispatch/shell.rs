//! The shell loop: one request at a time, in arrival order, each between `busy` and `idle`;
//! with stop_on_error, the execute_requests queued behind a failed cell are aborted.

use super::Shared;
use super::comm::{comm_info_request, front_end_comm, is_comm};
use super::history_request::history_request;
use super::is_complete_request::is_complete_request;
use super::kernel_info_request::kernel_info_request;
use super::shutdown_request::shutdown_request;
use super::unknown_request::unknown_request;
use crate::completion::Completer;
use crate::display::{self, Output};
use crate::engine::{Evaluator, Event, Startup};
use crate::history::History;
use crate::transport::Router;
use jupyter_protocol::{
    ExecuteReply, ExecutionCount, JupyterMessage, JupyterMessageContent, ReplyStatus, Status,
};
use std::collections::VecDeque;
use std::sync::Arc;

/// The shell side of the kernel.
pub(crate) struct Shell<E: Evaluator> {
    pub(super) shared: Shared,
    pub(super) shell: Router,
    pub(super) stdin: Router,
    pub(super) engine: E,
    pub(super) completer: Arc<Completer>,
    /// The engine's start-up report, once it came.
    pub(super) startup: Option<Startup>,
    /// Whether the start-up warning (if any) was shown, with the first cell.
    pub(super) warned: bool,
    pub(super) execution_count: usize,
    pub(super) history: History,
    /// Requests received while a cell ran, in order, not handled yet.
    pub(super) queued: VecDeque<JupyterMessage>,
    /// How many of `queued` arrived before a failed cell's error reply (stop_on_error).
    abort_first: usize,
    /// What the evaluation process printed between cells (a widget's callback, a thread of an
    /// earlier cell), kept for the next cell's output as it always was.
    pub(super) pending: VecDeque<Event>,
    /// The last request handled: the parent of the comm messages the evaluation process sends
    /// between cells (a callback answering the front end's last `comm_msg`).
    pub(super) last_request: Option<JupyterMessage>,
    /// Whether the engine still sends events.
    engine_running: bool,
}

impl<E: Evaluator> Shell<E> {
    pub(crate) fn new(
        shared: Shared,
        shell: Router,
        stdin: Router,
        engine: E,
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
            pending: VecDeque::new(),
            last_request: None,
            engine_running: true,
        }
    }

    /// Serves the shell socket until it closes. Between requests, the engine's events are
    /// read too: the comm messages a widget's callback sends are published at once.
    pub(crate) async fn run(mut self) {
        loop {
            let message = match self.queued.pop_front() {
                Some(message) => message,
                None => match self.next_request().await {
                    Some(message) => message,
                    None => return,
                },
            };
            self.handle(&message).await;
            self.last_request = Some(message);
            self.abort_queued();
        }
    }

    /// The next request from the socket, handling the engine's events while none comes.
    async fn next_request(&mut self) -> Option<JupyterMessage> {
        loop {
            if !self.engine_running {
                return self.shell.incoming.recv().await;
            }
            tokio::select! {
                message = self.shell.incoming.recv() => return message,
                event = self.engine.next_event() => match event {
                    Some(event) => self.between_cells(event),
                    None => self.engine_running = false,
                },
            }
        }
    }

    /// An engine event while no cell runs: a comm message is published (as a child of the last
    /// request), anything else is kept for the next cell.
    fn between_cells(&mut self, event: Event) {
        if self.startup.is_none() && !matches!(event, Event::Started(_)) {
            // Start-up cells are silent (`wait_for_startup`).
            tracing::debug!("start-up output: {event:?}");
            return;
        }
        match event {
            Event::Stdout(line) => match display::read_line(&line) {
                Output::Comm(comm) => match &self.last_request {
                    Some(parent) => super::comm::publish(&self.shared.iopub, comm, parent),
                    None => tracing::warn!("a comm message before any request: dropped"),
                },
                _ => self.pending.push_back(Event::Stdout(line)),
            },
            Event::Started(startup) => self.started(startup),
            // No cell asks: a thread reading stdin between cells gets an empty line.
            Event::Input { reply, .. } => {
                let _ = reply.send(String::new());
            }
            Event::Stderr(line) => self.pending.push_back(Event::Stderr(line)),
            // Every cell's end is read by its own cell (the engine's contract).
            Event::Finished(_) => tracing::warn!("a cell's end with no cell running: dropped"),
        }
    }

    /// The engine's start-up report.
    pub(super) fn started(&mut self, startup: Startup) {
        self.shared.facts.lock().unwrap().cuda_devices = startup.cuda_devices;
        self.startup = Some(startup);
    }

    /// stop_on_error: aborts the execute_requests that arrived before a failed cell's error
    /// reply went out (counted by [`Shell::hold_queued`] just before sending it); anything
    /// else among them is handled normally, in order.
    fn abort_queued(&mut self) {
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

    /// Marks every request received so far for [`Shell::abort_queued`]: called by a cell
    /// that failed with stop_on_error, before its reply goes out.
    pub(super) async fn hold_queued(&mut self) {
        // Let the reader task hand over what it has already read from the socket.
        tokio::task::yield_now().await;
        while let Ok(message) = self.shell.incoming.try_recv() {
            self.queued.push_back(message);
        }
        self.abort_first = self.queued.len();
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

    pub(super) fn reply(&self, reply: JupyterMessage) {
        let _ = self.shell.outgoing.send(reply);
    }

    pub(super) fn publish(&self, message: JupyterMessage) {
        self.shared.iopub.publish(message);
    }

    /// Handles one request between `busy` and `idle`.
    async fn handle(&mut self, message: &JupyterMessage) {
        self.shared.status(message, Status::busy());
        let reply = match &message.content {
            JupyterMessageContent::ExecuteRequest(request) => {
                self.execute_request(message, request).await;
                None
            }
            JupyterMessageContent::InspectRequest(request) => {
                // Its reply, then `idle`, come from a task of its own.
                return self.inspect_request(message, request).await;
            }
            JupyterMessageContent::CompleteRequest(request) => {
                Some(self.complete_request(request).await.as_child_of(message))
            }
            JupyterMessageContent::KernelInfoRequest(_) => {
                let facts = self.shared.facts.lock().unwrap().clone();
                Some(kernel_info_request(&facts).as_child_of(message))
            }
            JupyterMessageContent::IsCompleteRequest(request) => {
                Some(is_complete_request(request).as_child_of(message))
            }
            JupyterMessageContent::HistoryRequest(request) => {
                Some(history_request(&self.history, request).as_child_of(message))
            }
            JupyterMessageContent::CommInfoRequest(request) => Some(
                comm_info_request(&self.shared, request)
                    .await
                    .as_child_of(message),
            ),
            _ if is_comm(message) => {
                front_end_comm(&self.shared, message).await;
                None
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                let interrupter = self.engine.interrupter();
                Some(shutdown_request(&self.shared, &interrupter, request).as_child_of(message))
            }
            JupyterMessageContent::UnknownMessage(unknown) => unknown_request(message, unknown),
            other => {
                tracing::warn!("shell: ignoring {}", other.message_type());
                None
            }
        };
        if let Some(reply) = reply {
            self.reply(reply);
        }
        self.shared.status(message, Status::idle());
    }
}
