//! `execute_request`: one cell, from `execute_input` to its `execute_reply`.
//!
//! In ipykernel's order: `execute_input` (only non-silent cells are counted and kept in the
//! history), the engine's start-up warning with the first cell, the cell's output while it
//! runs ([`events`], batched into messages by [`output`], input through [`stdin`]), then its
//! value or error and the reply ([`reply`]). `?name` is answered with documentation instead
//! ([`help`]).

mod events;
mod help;
mod output;
mod reply;
mod stdin;

use super::Shell;
use crate::engine::{Evaluator, Event};
use crate::syntax;
use jupyter_protocol::{
    ExecuteInput, ExecuteRequest, ExecutionCount, JupyterMessage, StreamContent,
};

impl<E: Evaluator> Shell<E> {
    pub(super) async fn execute_request(
        &mut self,
        message: &JupyterMessage,
        request: &ExecuteRequest,
    ) {
        // From now on the engine may know items and variables a request's text does not show.
        self.completer.cell_ran();
        let count = self.announce(message, request);
        self.wait_for_startup().await;
        self.warn_once(message);
        if let Some(name) = syntax::help_target(&request.code) {
            return self
                .page_help(message, request, name.to_owned(), count)
                .await;
        }
        self.engine
            .execute(request.code.clone(), request.allow_stdin);
        let ran = self.run_cell(message, request.allow_stdin).await;
        let error = self.outcome(message, request, count, ran);
        self.execute_reply(message, request, count, error).await;
    }

    /// Counts a non-silent cell, publishes its `execute_input` and keeps it in the history.
    fn announce(&mut self, message: &JupyterMessage, request: &ExecuteRequest) -> ExecutionCount {
        if request.silent {
            return ExecutionCount::new(self.execution_count);
        }
        self.execution_count += 1;
        let count = ExecutionCount::new(self.execution_count);
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
        count
    }

    /// Waits for the engine's start-up report (the first cell may arrive before it).
    async fn wait_for_startup(&mut self) {
        while self.startup.is_none() {
            match self.engine.next_event().await {
                Some(Event::Started(startup)) => self.started(startup),
                // Start-up cells are silent.
                Some(other) => tracing::debug!("start-up output: {other:?}"),
                None => return,
            }
        }
    }

    /// What the user must know about the engine's start (libtorch missing, a damaged build
    /// cache), on stderr with the first cell only.
    fn warn_once(&mut self, message: &JupyterMessage) {
        if self.warned {
            return;
        }
        self.warned = true;
        if let Some(warning) = self.startup.as_ref().and_then(|s| s.warning.clone()) {
            self.publish(StreamContent::stderr(&format!("{warning}\n")).as_child_of(message));
        }
    }
}
