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
        // A reply that came while nothing asked (to a request an interrupt ended, or sent
        // unasked) is stale: dropped, as ipykernel drops it, never the next answer.
        while let Ok(stale) = self.stdin.incoming.try_recv() {
            tracing::warn!(
                "stdin: dropping a {} nobody waited for",
                stale.header.msg_type
            );
        }
        let request = InputRequest { prompt, password }.as_child_of(parent);
        let asked = request.header.msg_id.clone();
        let _ = self.stdin.outgoing.send(request);
        let interrupter = self.engine.interrupter();
        loop {
            tokio::select! {
                reply = self.stdin.incoming.recv() => match reply {
                    // The answer to this request; a reply to another one is stale.
                    Some(JupyterMessage { content: JupyterMessageContent::InputReply(reply), parent_header, .. })
                        if parent_header.as_ref().is_none_or(|p| p.msg_id == asked) =>
                    {
                        return reply.value;
                    }
                    Some(other) => tracing::warn!("stdin: ignoring a {} that answers no open request", other.header.msg_type),
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
