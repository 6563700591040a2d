//! A cell's outputs as nbformat outputs (streams coalesced, displays updated in place, clears
//! applied as nbclient applies them), and the text printed for them on the real stdout/stderr.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};
use tchbook_wire::record::Output;
use tchbook_wire::report::ErrorReport;
use tchbook_wire::{MimeData, StreamName};

/// The index of `stream` in the recorder's per-stream arrays.
pub(super) fn slot(stream: StreamName) -> usize {
    match stream {
        StreamName::Stdout => 0,
        StreamName::Stderr => 1,
    }
}

/// One cell's outputs as nbformat writes them.
#[derive(Default, Debug)]
pub(super) struct CellRecord {
    pub(super) cell: usize,
    pub(super) hash: &'static str,
    pub(super) execution_count: usize,
    pub(super) outputs: Vec<Output>,
}

/// Where a display with an id was recorded, for later updates.
#[derive(Clone, Copy)]
pub(super) struct Shown {
    pub(super) cell: usize,
    pub(super) output: usize,
}

/// The text last printed for a display with an id, and when.
#[derive(Default)]
pub(super) struct Printed {
    pub(super) last: Option<Instant>,
    pub(super) text: String,
    /// A newer text not printed yet (updates come faster than they are printed).
    pub(super) pending: Option<String>,
}

/// Everything the reader threads and the cells share.
#[derive(Default)]
pub(super) struct Recorder {
    pub(super) cells: Vec<CellRecord>,
    /// The widget models open now, by comm id: their state as `comm_open` and each `update` left
    /// it (saved with the record, as a front end saves widget state).
    pub(super) widgets: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
    /// The reader of the current cell's content blocks (one per cell, as in the kernel).
    pub(super) blocks: tchbook_wire::value::ValueReader,
    /// The current cell's final value, one string per MIME type (as evcxr keeps it).
    pub(super) value: Vec<(String, String)>,
    /// The current cell's final value as a prelude type sent it (`Message::Value`): the result
    /// in place of `value`'s blocks.
    pub(super) sent_value: Option<(MimeData, Map<String, Value>)>,
    pub(super) clear_pending: bool,
    pub(super) displays: HashMap<String, Shown>,
    pub(super) printed: HashMap<String, Printed>,
    pub(super) synced: [u64; 2],
    /// The real stdout and stderr (before the runner's pipes), for the printed text.
    pub(super) real: Option<[libc::c_int; 2]>,
    /// Bytes of a line not yet ended, per stream (only without the prelude's pump).
    pub(super) partial: [Vec<u8>; 2],
}

impl Recorder {
    pub(super) fn current(&mut self) -> Option<&mut CellRecord> {
        self.cells.last_mut()
    }

    pub(super) fn print(&self, stream: StreamName, text: &str) {
        match self.real {
            Some(fds) => write_fd(fds[slot(stream)], text.as_bytes()),
            None => match stream {
                StreamName::Stdout => print!("{text}"),
                StreamName::Stderr => eprint!("{text}"),
            },
        }
    }

    /// Output that arrives first after a `clear_output(wait=True)` clears the cell first.
    pub(super) fn push_output(&mut self, output: Output) -> Option<usize> {
        if std::mem::take(&mut self.clear_pending) {
            self.clear_now();
        }
        let cell = self.current()?;
        cell.outputs.push(output);
        Some(cell.outputs.len() - 1)
    }

    pub(super) fn clear_now(&mut self) {
        let at = self.cells.len().saturating_sub(1);
        if let Some(cell) = self.current() {
            cell.outputs.clear();
        }
        self.displays.retain(|_, shown| shown.cell != at);
    }

    pub(super) fn stream(&mut self, stream: StreamName, text: &str) {
        if text.is_empty() {
            return;
        }
        self.print(stream, text);
        if self.clear_pending {
            self.clear_pending = false;
            self.clear_now();
        }
        let Some(cell) = self.current() else { return };
        // Consecutive writes to one stream are one output, as nbconvert's coalescing leaves them.
        if let Some(Output::Stream {
            name,
            text: existing,
        }) = cell.outputs.last_mut()
            && *name == stream
        {
            existing.push_str(text);
            return;
        }
        cell.outputs.push(Output::Stream {
            name: stream,
            text: text.to_owned(),
        });
    }

    pub(super) fn begin(&mut self, cell: usize, hash: &'static str, execution_count: usize) {
        self.value.clear();
        self.sent_value = None;
        self.blocks = tchbook_wire::value::ValueReader::default();
        self.clear_pending = false;
        self.cells.push(CellRecord {
            cell,
            hash,
            execution_count,
            outputs: Vec::new(),
        });
    }

    /// Closes the current cell: the updated displays' last text, `Took`, the final value.
    pub(super) fn end(&mut self, took: Option<Duration>) {
        self.print_pending_updates();
        if let Some(took) = took {
            self.stream(
                StreamName::Stdout,
                &format!("Took {}ms\n", took.as_millis()),
            );
        }
        let value = std::mem::take(&mut self.value);
        let (data, metadata) = match self.sent_value.take() {
            Some(sent) => sent,
            None => {
                let unit = matches!(value.as_slice(), [(mime, text)] if mime == "text/plain" && text.trim() == "()");
                if value.is_empty() || unit {
                    return;
                }
                (tchbook_wire::final_value(&value), Map::new())
            }
        };
        self.print(StreamName::Stdout, &format!("{}\n", plain_text(&data)));
        let execution_count = self.current().map_or(0, |c| c.execution_count);
        self.push_output(Output::ExecuteResult {
            execution_count,
            data,
            metadata,
        });
    }

    /// The last text of displays updated since they were last printed, in a stable order.
    fn print_pending_updates(&mut self) {
        let mut pending: Vec<String> = self
            .printed
            .values_mut()
            .filter_map(|p| {
                let text = p.pending.take()?;
                p.text = text.clone();
                Some(text)
            })
            .collect();
        pending.sort();
        for text in pending {
            self.print(StreamName::Stdout, &format!("{text}\n"));
        }
    }

    pub(super) fn error(&mut self, report: ErrorReport) {
        let ErrorReport {
            ename,
            evalue,
            traceback,
        } = report;
        self.print(StreamName::Stderr, &format!("{}\n", traceback.join("\n")));
        self.push_output(Output::Error {
            ename,
            evalue,
            traceback,
        });
    }
}

/// The text printed for a bundle: its `text/plain`.
pub(super) fn plain_text(data: &MimeData) -> String {
    match data.get("text/plain") {
        Some(Value::String(text)) => text.trim_end_matches('\n').to_owned(),
        Some(other) => other.to_string(),
        None => "<rich output without text/plain>".to_owned(),
    }
}

fn write_fd(fd: libc::c_int, bytes: &[u8]) {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is one of this process's open descriptors (the saved stdout or stderr); the
    // ManuallyDrop keeps it open after the write.
    let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let _ = file.write_all(bytes);
}
