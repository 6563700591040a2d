//! Splits what the cell writes to fd 1 or 2 into what the pump sends on: complete lines
//! unchanged, message lines on their own, partial lines as `stream` messages when idle.

use super::protocol::{MARKER, stream_message};
use tchbook_wire::LINE_TOKENS;

/// Splits pump input into what goes to the kernel: complete lines unchanged, protocol lines
/// (after a marker) on their own, partial lines as `stream` ops when idle.
pub(crate) struct LineSplitter {
    name: &'static str,
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

/// One thing the pump writes: `Line` and `Kernel` to the stream's own fd (a `Line` of stderr
/// travels on stdout as a `stream` message instead), `Protocol` to stdout.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// A complete line the cell wrote.
    Line(Vec<u8>),
    /// A complete line that starts with a kernel token ([`LINE_TOKENS`]): evcxr's end-of-cell
    /// marker, an export runner's sync. It ends what came before it.
    Kernel(Vec<u8>),
    /// A message line of the prelude's own (after a marker), or a partial line made a `stream`
    /// message.
    Protocol(Vec<u8>),
}

impl LineSplitter {
    pub(crate) fn new(name: &'static str) -> Self {
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
                    Some(n) => {
                        let mut line = self.take(from + n + 1);
                        line.remove(0);
                        out.push(Chunk::Protocol(line));
                    }
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
                out.push(Chunk::Protocol(self.stream_line(&text)));
                continue;
            }
            // A kernel line (EVCXR_..., TCHBOOK_...) glued to the end of a user's partial
            // line would go unrecognised: split the user's part off as a stream op.
            if let Some(p) = token_start(&self.pending()[..at]).filter(|&p| p > 0) {
                let text = self.take(p);
                out.push(Chunk::Protocol(self.stream_line(&text)));
                continue;
            }
            let kernel = LINE_TOKENS
                .iter()
                .any(|t| self.pending().starts_with(t.as_bytes()));
            let line = self.take(at + 1);
            out.push(if kernel {
                Chunk::Kernel(line)
            } else {
                Chunk::Line(line)
            });
        }
        self.compact();
        out
    }

    /// Called when no bytes arrived for a while: the pending partial line, as a `stream` op.
    pub(crate) fn idle(&mut self) -> Option<Chunk> {
        let pending = self.pending();
        if pending.is_empty() || pending[0] == MARKER {
            return None;
        }
        // Never flush (part of) a kernel line: it must reach the kernel whole.
        let end = partial_token_start(pending).unwrap_or(pending.len());
        // Keep an incomplete UTF-8 sequence at the end for the next read.
        let cut = match std::str::from_utf8(&pending[..end]) {
            Ok(_) => end,
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => end,
        };
        if cut == 0 {
            return None;
        }
        let text = self.take(cut);
        self.compact();
        Some(Chunk::Protocol(self.stream_line(&text)))
    }

    fn stream_line(&self, text: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(text);
        stream_message(self.name, &text).to_line().into_bytes()
    }
}

/// Where a complete kernel token ([`LINE_TOKENS`]: a line the kernel reads as a command, to be
/// forwarded whole, never as `stream` text) starts in `line`.
fn token_start(line: &[u8]) -> Option<usize> {
    (0..line.len()).find(|&p| {
        LINE_TOKENS
            .iter()
            .any(|t| line[p..].starts_with(t.as_bytes()))
    })
}

/// Where a kernel token, complete or still being written, starts in a partial line.
fn partial_token_start(buf: &[u8]) -> Option<usize> {
    (0..buf.len()).find(|&p| {
        let rest = &buf[p..];
        LINE_TOKENS.iter().any(|t| {
            let t = t.as_bytes();
            rest.starts_with(t) || (rest.len() >= 3 && t.starts_with(rest))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn split_in_pieces(input: &[u8], piece: usize) -> Vec<Chunk> {
        let mut splitter = LineSplitter::new("stdout");
        let mut out = Vec::new();
        for bytes in input.chunks(piece) {
            out.extend(splitter.push(bytes));
        }
        out
    }

    #[test]
    fn lines_markers_and_tokens_split_the_same_at_any_read_size() {
        let mut input = b"plain line\npartial".to_vec();
        input.push(MARKER);
        input.extend_from_slice(b"TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n");
        input.extend_from_slice(b"user textEVCXR_END_CONTENT\nlast\n");
        let whole = split_in_pieces(&input, input.len());
        assert_eq!(
            whole,
            vec![
                Chunk::Line(b"plain line\n".to_vec()),
                Chunk::Protocol(stream_message("stdout", "partial").to_line().into_bytes()),
                Chunk::Protocol(b"TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n".to_vec()),
                Chunk::Protocol(stream_message("stdout", "user text").to_line().into_bytes()),
                Chunk::Kernel(b"EVCXR_END_CONTENT\n".to_vec()),
                Chunk::Line(b"last\n".to_vec()),
            ]
        );
        for piece in [1, 2, 3, 7, 16] {
            assert_eq!(split_in_pieces(&input, piece), whole, "read size {piece}");
        }
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
        assert!(matches!(&out[..], [Chunk::Protocol(line)] if line.len() == input.len() - 1));
    }
}
