//! The event loop of a running cell: the engine's events, in order, until the cell finishes.

use super::output::CellOutput;
use crate::dispatch::Shell;
use crate::display::Panic;
use crate::engine::{CellError, Evaluator, Event, Finished};
use jupyter_protocol::JupyterMessage;

/// How a cell ended: the engine's report, and the panic its output announced, if any.
pub(super) struct Ran {
    pub finished: Finished,
    pub panic: Option<Panic>,
    /// The cell's last lines on stderr: a dying process's last words (std's `memory allocation
    /// of N bytes failed`) come there, which the error's report reads.
    pub stderr_tail: Vec<String>,
}

impl<E: Evaluator> Shell<E> {
    /// Publishes the running cell's output until the engine reports it finished. Output is
    /// flushed whenever the engine has nothing more queued, so a burst of lines becomes one
    /// `stream` message and a slow cell's lines are seen as they come.
    pub(super) async fn run_cell(&mut self, message: &JupyterMessage, allow_stdin: bool) -> Ran {
        let mut output = CellOutput::new(self.shared.iopub.clone(), message);
        let finished = loop {
            // The bound on iopub's backlog (`IoPub::room_for_output` says why here).
            self.shared.iopub.room_for_output().await;
            let event = match self.engine.queued_event() {
                Some(event) => event,
                None => {
                    output.flush();
                    match self.engine.next_event().await {
                        Some(event) => event,
                        None => break None,
                    }
                }
            };
            match event {
                Event::Stdout(line) => output.line(&line),
                Event::Stderr(line) => output.stderr_line(&line),
                Event::Input {
                    prompt,
                    password,
                    reply,
                } => {
                    output.flush();
                    let value = if allow_stdin {
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
        output.flush();
        Ran {
            finished: finished.unwrap_or(Finished {
                outcome: Err(CellError::Failed("the evaluation engine stopped".into())),
                source: None,
            }),
            panic: output.take_panic(),
            stderr_tail: output.take_stderr_tail(),
        }
    }
}
