//! Splits what the cell writes to fd 1 or 2 into what the pump sends on: complete lines
//! unchanged, protocol lines on their own, partial lines as `stream` messages when idle.

use super::protocol::MARKER;
use tchbook_wire::{Message, StreamName};

/// Splits pump input into what goes to the kernel: complete lines unchanged, protocol lines
/// (from a [`MARKER`] to the end of the line) on their own, partial lines as `stream` ops when
/// idle.
///
/// The splitter does not check a protocol line's key: the kernel does, and reads an unkeyed
/// line as text wherever it came from. What the splitter guarantees is that a protocol line
/// starts a line of its own (a partial line before it is sent first, as a `stream` message), so
/// the kernel finds the key where it looks.
pub(crate) struct LineSplitter {
    name: StreamName,
    /// Bytes read; those before `start` are already handed out.
    buf: Vec<u8>,
    start: usize,
    /// How much of the pending bytes is known to hold nothing [`LineSplitter::push`] looks
    /// for: no marker or newline, or (while they start with a marker) no newline after it. A
    /// long line arrives in many 64 KiB reads; scanning it from the start after each read made
    /// one 50 MB line take 25 s (quadratic), and cutting each short line off the front of the
    /// buffer moved the rest every time.
    scanned: usize,
}

/// One thing the pump writes: a `Line` and a `Kernel` line to the stream's own fd (a `Line` of
/// stderr travels on stdout as a `stream` message instead), a `Stream` to stdout.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// A complete line the cell wrote: text, whatever it holds.
    Line(Vec<u8>),
    /// A protocol line (from a [`MARKER`], which it keeps, to its newline): evcxr's end of a
    /// cell, a display message, an export runner's sync. It ends what came before it.
    Kernel(Vec<u8>),
    /// A partial line made a `stream` message (a protocol line of the pump's own).
    Stream(Vec<u8>),
}

impl LineSplitter {
    pub(crate) fn new(name: StreamName) -> Self {
        LineSplitter {
            name,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
        }
    }

    /// The bytes not handed out yet.
    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Hands out the first `end` pending bytes; what is left has not been scanned.
    fn take(&mut self, end: usize) -> Vec<u8> {
        let taken = self.pending()[..end].to_vec();
        self.start += end;
        self.scanned = 0;
        taken
    }

    /// Drops what was handed out, once per read rather than once per line.
    fn compact(&mut self) {
        self.buf.drain(..self.start);
        self.start = 0;
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            if self.pending().first() == Some(&MARKER) {
                // A protocol line: it ends at the next newline.
                let from = self.scanned.max(1);
                match self.pending()[from..].iter().position(|&b| b == b'\n') {
                    Some(n) => out.push(Chunk::Kernel(self.take(from + n + 1))),
                    None => {
                        self.scanned = self.pending().len();
                        break;
                    }
                }
                continue;
            }
            let from = self.scanned;
            let Some(at) = self.pending()[from..]
                .iter()
                .position(|&b| b == MARKER || b == b'\n')
                .map(|p| from + p)
            else {
                self.scanned = self.pending().len();
                break;
            };
            if self.pending()[at] == MARKER {
                // A partial line precedes the protocol line: send it as a stream op so the
                // protocol line starts a line of its own.
                let text = self.take(at);
                out.push(Chunk::Stream(self.stream_line(&text)));
                continue;
            }
            out.push(Chunk::Line(self.take(at + 1)));
        }
        self.compact();
        out
    }

    /// How many bytes of a partial line (not a protocol line) wait for their newline.
    pub(crate) fn partial_len(&self) -> usize {
        match self.pending().first() {
            None | Some(&MARKER) => 0,
            Some(_) => self.pending().len(),
        }
    }

    /// Called when no bytes arrived for a while: the pending partial line, as a `stream` op.
    pub(crate) fn idle(&mut self) -> Option<Chunk> {
        let pending = self.pending();
        if pending.is_empty() || pending[0] == MARKER {
            return None;
        }
        // Keep an incomplete UTF-8 sequence at the end for the next read.
        let cut = match std::str::from_utf8(pending) {
            Ok(_) => pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => pending.len(),
        };
        if cut == 0 {
            return None;
        }
        let text = self.take(cut);
        self.compact();
        Some(Chunk::Stream(self.stream_line(&text)))
    }

    fn stream_line(&self, text: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(text);
        let message = Message::Stream {
            name: self.name,
            text: text.into_owned(),
        };
        message.to_line().into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn stdout(text: &str) -> Vec<u8> {
        let message = Message::Stream {
            name: StreamName::Stdout,
            text: text.to_owned(),
        };
        message.to_line().into_bytes()
    }

    fn split_in_pieces(input: &[u8], piece: usize) -> Vec<Chunk> {
        let mut splitter = LineSplitter::new(StreamName::Stdout);
        let mut out = Vec::new();
        for bytes in input.chunks(piece) {
            out.extend(splitter.push(bytes));
        }
        out
    }

    #[test]
    fn lines_and_protocol_lines_split_the_same_at_any_read_size() {
        let mut input = b"plain line\npartial".to_vec();
        input.push(MARKER);
        input.extend_from_slice(b"k1 TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n");
        input.extend_from_slice(b"user text");
        input.push(MARKER);
        input.extend_from_slice(b"k1 EVCXR_END_CONTENT\nlast\n");
        let whole = split_in_pieces(&input, input.len());
        let kernel = |line: &[u8]| Chunk::Kernel([&[MARKER][..], line].concat());
        assert_eq!(
            whole,
            vec![
                Chunk::Line(b"plain line\n".to_vec()),
                Chunk::Stream(stdout("partial")),
                kernel(b"k1 TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n"),
                Chunk::Stream(stdout("user text")),
                kernel(b"k1 EVCXR_END_CONTENT\n"),
                Chunk::Line(b"last\n".to_vec()),
            ]
        );
        for piece in [1, 2, 3, 7, 16] {
            assert_eq!(split_in_pieces(&input, piece), whole, "read size {piece}");
        }
    }

    #[test]
    fn printed_protocol_words_are_plain_lines() {
        // Without the mark a line is the cell's text, even one that names the protocol's words;
        // the kernel reads it as text too, since it has no key.
        let input = b"EVCXR_EXECUTION_COMPLETE\nTCHBOOK_DISPLAY {\"op\":\"clear\"}\n";
        assert_eq!(
            split_in_pieces(input, 5),
            vec![
                Chunk::Line(b"EVCXR_EXECUTION_COMPLETE\n".to_vec()),
                Chunk::Line(b"TCHBOOK_DISPLAY {\"op\":\"clear\"}\n".to_vec()),
            ]
        );
    }

    #[test]
    fn a_50_mb_line_is_split_in_linear_time() {
        // Before the splitter remembered how far it had looked, this took ~20 s: each 64 KiB
        // read rescanned the whole pending line.
        let mut input = vec![b'x'; 50 << 20];
        input.push(b'\n');
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(&out[..], [Chunk::Line(line)] if line.len() == input.len()));
    }

    #[test]
    fn short_lines_are_split_without_moving_the_buffer_per_line() {
        let mut input = Vec::new();
        while input.len() < 50 << 20 {
            input.extend(std::iter::repeat_n(b'x', 1023));
            input.push(b'\n');
        }
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(out.len(), 50 << 10);
    }

    #[test]
    fn a_long_protocol_line_is_split_in_linear_time() {
        let mut input = vec![MARKER];
        input.extend_from_slice(tchbook_wire::PREFIX.as_bytes());
        input.extend(std::iter::repeat_n(b'x', 30 << 20));
        input.push(b'\n');
        let started = Instant::now();
        let out = split_in_pieces(&input, 64 * 1024);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(matches!(&out[..], [Chunk::Kernel(line)] if line.len() == input.len()));
    }
}
