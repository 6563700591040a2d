//! `input_request` on stdin, for a cell that reads a line.

use crate::dispatch::Shell;
use crate::engine::{Evaluator, Interrupts};
use jupyter_protocol::{InputRequest, JupyterMessage, JupyterMessageContent};
use std::time::Duration;

impl<E: Evaluator> Shell<E> {
    /// Asks the front end for a line of input on stdin and waits for the answer (or for the
    /// cell to be interrupted, which answers with an empty line).
    pub(super) async fn input_request(
        &mut self,
        parent: &JupyterMessage,
        prompt: String,
        password: bool,
    ) -> String {
        let request = InputRequest { prompt, password };
        let _ = self.stdin.outgoing.send(request.as_child_of(parent));
        let interrupter = self.engine.interrupter();
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
                    if interrupter.was_interrupted() {
                        return String::new();
                    }
                }
            }
        }
    }
}
