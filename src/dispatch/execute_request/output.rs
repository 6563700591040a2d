//! A running cell's output on its way to iopub. Ordinary lines are batched into one `stream`
//! message per burst (stdout and stderr each, in the order they were printed; [`super::events`]
//! says when a burst ends); the live display
//! protocol's lines, which display reads into Jupyter contents, become their own messages, in
//! order; a panic on the
//! cell's thread is kept for the cell's error.

use crate::display::{self, Output, Panic, SentValue};
use crate::transport::IoPub;
use jupyter_protocol::{JupyterMessage, JupyterMessageContent, StreamContent};
use std::time::{Duration, Instant};
use tchbook_wire::StreamName;

pub(super) struct CellOutput<'a> {
    iopub: IoPub,
    parent: &'a JupyterMessage,
    stdout: String,
    stderr: String,
    /// When the oldest text not yet published was added.
    waiting_since: Option<Instant>,
    panic: Option<Panic>,
    /// The last final value a prelude type sent (`Output::Value`).
    value: Option<SentValue>,
    /// The cell's last lines on stderr, published or not (see [`Self::take_stderr_tail`]).
    stderr_tail: std::collections::VecDeque<String>,
}

/// How many of a cell's last stderr lines [`CellOutput::take_stderr_tail`] keeps.
const STDERR_TAIL: usize = 40;

impl<'a> CellOutput<'a> {
    pub(crate) fn new(iopub: IoPub, parent: &'a JupyterMessage) -> Self {
        CellOutput {
            iopub,
            parent,
            stdout: String::new(),
            stderr: String::new(),
            waiting_since: None,
            panic: None,
            value: None,
            stderr_tail: std::collections::VecDeque::new(),
        }
    }

    /// One line the cell printed to stdout (without its newline).
    pub(crate) fn line(&mut self, line: &str) {
        match display::read_line(line) {
            Output::Text(text) => {
                self.text(false, &text);
                self.stdout.push('\n');
            }
            // The prelude's pump sends stderr's lines this way too, on stdout, to keep them in
            // order with what stdout printed before them.
            Output::Stream { name, text } => {
                self.text(name == StreamName::Stderr, &text);
                if !text.ends_with('\n') {
                    // Partial lines exist to be seen now.
                    self.flush();
                }
            }
            Output::Panic(panic) if panic.ends_cell() && self.panic.is_none() => {
                self.panic = Some(panic);
            }
            Output::Panic(panic) => self.stderr.push_str(&panic.thread_text()),
            Output::Content(content) => self.publish(content),
            Output::Value(value) => self.value = Some(value),
            Output::Comm(comm) => {
                self.flush();
                crate::dispatch::publish_comm(&self.iopub, comm, self.parent);
            }
        }
    }

    /// One line the cell printed to stderr.
    pub(crate) fn stderr_line(&mut self, line: &str) {
        self.text(true, line);
        self.stderr.push('\n');
    }

    /// Adds text to its stream's batch, after publishing the other stream's batch: a batch
    /// holds one stream's text printed without the other in between.
    fn text(&mut self, stderr: bool, text: &str) {
        let other = if stderr { &self.stdout } else { &self.stderr };
        if !other.is_empty() {
            self.flush();
        }
        if stderr {
            for line in text.lines() {
                if self.stderr_tail.len() == STDERR_TAIL {
                    self.stderr_tail.pop_front();
                }
                self.stderr_tail.push_back(line.to_owned());
            }
        }
        let this = if stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        };
        this.push_str(text);
        self.waiting_since.get_or_insert_with(Instant::now);
    }

    /// How long the oldest text not yet published has waited, if there is any.
    pub(crate) fn text_waiting_for(&self) -> Option<Duration> {
        self.waiting_since.map(|since| since.elapsed())
    }

    /// The cell's last lines on stderr: a dying process's last words (std's `memory allocation
    /// of N bytes failed`) come there, and the cell's error report reads them.
    pub(crate) fn take_stderr_tail(&mut self) -> Vec<String> {
        std::mem::take(&mut self.stderr_tail).into()
    }

    /// Publishes the buffered text: stdout first, then stderr.
    pub(crate) fn flush(&mut self) {
        self.waiting_since = None;
        if !self.stdout.is_empty() {
            let text = std::mem::take(&mut self.stdout);
            self.iopub
                .publish(StreamContent::stdout(&text).as_child_of(self.parent));
        }
        if !self.stderr.is_empty() {
            let text = std::mem::take(&mut self.stderr);
            self.iopub
                .publish(StreamContent::stderr(&text).as_child_of(self.parent));
        }
    }

    /// The panic that ends the cell, if its thread panicked.
    pub(crate) fn take_panic(&mut self) -> Option<Panic> {
        self.panic.take()
    }

    /// The cell's final value, if a prelude type sent it.
    pub(crate) fn take_value(&mut self) -> Option<SentValue> {
        self.value.take()
    }

    /// A message of its own, after the text printed before it.
    fn publish(&mut self, content: impl Into<JupyterMessageContent>) {
        self.flush();
        self.iopub
            .publish(JupyterMessage::new(content, Some(self.parent)));
    }
}
