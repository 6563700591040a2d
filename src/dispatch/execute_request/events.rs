//! The event loop of a running cell: the engine's events, in order, until the cell finishes.

use super::output::CellOutput;
use crate::dispatch::Shell;
use crate::dispatch::comm::{front_end_comm, is_comm};
use crate::display::{Panic, SentValue};
use crate::engine::{CellError, Evaluator, Event, Finished};
use jupyter_protocol::{JupyterMessage, Status};
use std::time::Duration;

/// How long printed text waits for more before it is published: lines printed within this gap
/// of each other travel as one `stream` message, as ipykernel's OutStream batches them, while a
/// line printed alone is seen at once.
const BATCH_GAP: Duration = Duration::from_millis(10);

/// The longest printed text waits: a cell that prints without a pause is still seen five times a
/// second (ipykernel's flush interval).
const BATCH_MAX: Duration = Duration::from_millis(200);

/// How a cell ended: the engine's report, and the panic its output announced, if any.
pub(super) struct Ran {
    pub(crate) finished: Finished,
    pub(crate) panic: Option<Panic>,
    /// The final value a prelude type sent, which is the cell's result.
    pub(crate) value: Option<SentValue>,
    /// The cell's last lines on stderr: a dying process's last words (std's `memory allocation
    /// of N bytes failed`) come there, which the error's report reads.
    pub(crate) stderr_tail: Vec<String>,
}

impl<E: Evaluator> Shell<E> {
    /// Publishes the running cell's output until the engine reports it finished. Text is
    /// flushed once the engine has had nothing more for [`BATCH_GAP`], or after [`BATCH_MAX`]
    /// at most, so a burst of lines becomes one `stream` message and a slow cell's lines are
    /// seen as they come. Everything else (a display, an input request, the end) is published
    /// after the text printed before it, as it comes.
    pub(super) async fn run_cell(&mut self, message: &JupyterMessage, allow_stdin: bool) -> Ran {
        let mut output = CellOutput::new(self.shared.iopub.clone(), message);
        let finished = loop {
            // The bound on iopub's backlog (`IoPub::room_for_output` says why here).
            self.shared.iopub.room_for_output().await;
            let waited = output.text_waiting_for();
            if waited.is_some_and(|waited| waited >= BATCH_MAX) {
                output.flush();
            }
            let queued = match self.pending.pop_front() {
                Some(event) => Some(event),
                None => self.engine.queued_event(),
            };
            let event = match queued {
                Some(event) => event,
                None => {
                    // `next_event` is cancel-safe (the `Evaluator` contract): an event that
                    // comes after the timeout, or while a request is read, is the next call's;
                    // so is the socket's `recv`.
                    let wait = output
                        .text_waiting_for()
                        .map(|waited| BATCH_GAP.min(BATCH_MAX.saturating_sub(waited)));
                    let timeout = async {
                        match wait {
                            Some(wait) => tokio::time::sleep(wait).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        event = self.engine.next_event() => match event {
                            Some(event) => event,
                            None => break None,
                        },
                        Some(request) = self.shell.incoming.recv() => {
                            self.while_running(request, message).await;
                            continue;
                        }
                        () = timeout => {
                            output.flush();
                            continue;
                        }
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
                Event::Started(startup) => self.started(startup),
            }
        };
        output.flush();
        Ran {
            finished: finished.unwrap_or(Finished {
                outcome: Err(CellError::Failed("the evaluation engine stopped".into())),
                source: None,
            }),
            panic: output.take_panic(),
            value: output.take_value(),
            stderr_tail: output.take_stderr_tail(),
        }
    }

    /// A request that arrived while the cell runs: a comm message (a widget moved) is passed
    /// on at once, anything else waits its turn. The comm message gets its `busy` and `idle`
    /// like any request: ipywidgets' front end sends a widget's next change only once the last
    /// one's `idle` came (its message throttle), so without it a slider dragged during a cell
    /// would reach the cell once and then wait for the cell's end. A `busy` for the running
    /// cell follows, so a front end's kernel indicator shows the kernel busy again at once.
    async fn while_running(&mut self, request: JupyterMessage, cell: &JupyterMessage) {
        if is_comm(&request) {
            self.shared.status(&request, Status::busy());
            front_end_comm(&self.shared, &request).await;
            self.shared.status(&request, Status::idle());
            self.shared.status(cell, Status::busy());
            self.last_request = Some(request);
        } else {
            self.queued.push_back(request);
        }
    }
}
