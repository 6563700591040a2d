//! A finished cell's value or error on iopub, then its `execute_reply`.

use super::events::Ran;
use crate::dispatch::Shell;
use crate::display::{self, ErrorReport};
use crate::engine::{CellError, CellValue, Evaluator};
use jupyter_protocol::{
    ErrorOutput, ExecuteReply, ExecuteRequest, ExecuteResult, ExecutionCount, ExpressionResult,
    JupyterMessage, MediaType, ReplyError, ReplyStatus, StreamContent, Transient,
};
use std::collections::HashMap;

impl<E: Evaluator> Shell<E> {
    /// Publishes the cell's value (and its timing, under `:timing`), or says what went wrong:
    /// an engine error first, then a panic on the cell's thread.
    pub(super) fn outcome(
        &mut self,
        message: &JupyterMessage,
        request: &ExecuteRequest,
        count: ExecutionCount,
        ran: Ran,
    ) -> Option<ErrorReport> {
        let value = match ran.finished.outcome {
            Ok(value) => value,
            Err(error) => return Some(error_report(&request.code, &error, &ran.stderr_tail)),
        };
        if let Some(panic) = ran.panic {
            // evcxr's generated crate for the cell.
            let generated = ran
                .finished
                .source
                .as_deref()
                .map(|source| display::Generated {
                    file: "src/lib.rs",
                    source,
                });
            let mut report = display::panic_report(&panic, &request.code, generated);
            if value.interrupted {
                display::as_interrupt(&mut report);
            }
            let undone = &value.undone;
            display::say_undone(&mut report, &undone.reverted, &undone.dropped);
            return Some(report);
        }
        self.publish_value(message, request.silent, count, value, ran.value);
        None
    }

    /// The cell's `execute_result`: a `:` command's table, the value a prelude type sent, or
    /// the content blocks evcxr read (any other type's `evcxr_display()`, or its Debug text).
    fn publish_value(
        &mut self,
        message: &JupyterMessage,
        silent: bool,
        count: ExecutionCount,
        value: CellValue,
        sent: Option<display::SentValue>,
    ) {
        if let Some(timing) = value.timing {
            let text = format!("Took {}ms\n", timing.as_millis());
            self.publish(StreamContent::stdout(&text).as_child_of(message));
        }
        if silent {
            return;
        }
        let (data, metadata) = match (&value.table, sent) {
            (Some(table), _) => (display::table_media(table), Default::default()),
            (None, Some(sent)) => sent,
            (None, None) if value.mime.is_empty() || display::is_unit(&value.mime) => return,
            (None, None) => (display::value_media(&value.mime), Default::default()),
        };
        let text = data.content.iter().find_map(|media| match media {
            MediaType::Plain(text) => Some(text),
            _ => None,
        });
        if let Some(text) = text {
            self.history.record_output(self.execution_count, text);
        }
        // `transient` must be an object when present (the message schema); jupyter-protocol
        // would write `null` for None.
        let result = ExecuteResult {
            metadata,
            transient: Some(Transient::default()),
            ..ExecuteResult::new(count, data)
        };
        self.publish(result.as_child_of(message));
    }

    /// The error (if any) on iopub, then the reply. A failed cell with stop_on_error first
    /// marks the requests already received, which the shell loop then aborts.
    pub(super) async fn execute_reply(
        &mut self,
        message: &JupyterMessage,
        request: &ExecuteRequest,
        count: ExecutionCount,
        error: Option<ErrorReport>,
    ) {
        let mut reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count: count,
            payload: Vec::new(),
            user_expressions: user_expressions(request),
            error: None,
        };
        if let Some(ErrorReport {
            ename,
            evalue,
            traceback,
        }) = error
        {
            let output = ErrorOutput {
                ename: ename.clone(),
                evalue: evalue.clone(),
                traceback: traceback.clone(),
            };
            self.publish(output.as_child_of(message));
            reply.status = ReplyStatus::Error;
            reply.error = Some(Box::new(ReplyError {
                ename,
                evalue,
                traceback,
            }));
            if request.stop_on_error {
                self.hold_queued().await;
            }
        }
        self.reply(reply.as_child_of(message));
    }
}

fn error_report(code: &str, error: &CellError, stderr_tail: &[String]) -> ErrorReport {
    match error {
        CellError::Compile(diagnostics) => display::compile_report(code, diagnostics),
        CellError::Interrupted { lost } => display::interrupted_report(lost),
        CellError::Crashed { message, lost } => display::crashed_report(message, lost, stderr_tail),
        CellError::Failed(why) => display::failure_report(why),
    }
}

/// tchbook evaluates no user_expressions: each is answered with an error naming that.
fn user_expressions(request: &ExecuteRequest) -> Option<HashMap<String, ExpressionResult>> {
    let expressions = request.user_expressions.as_ref()?;
    let unsupported = || ExpressionResult::Error {
        ename: "NotSupported".into(),
        evalue: "tchbook does not evaluate user_expressions".into(),
        traceback: Vec::new(),
    };
    Some(
        expressions
            .keys()
            .map(|name| (name.clone(), unsupported()))
            .collect(),
    )
}
