//! The lines read from the runner's pipes, as the kernel reads the evaluation process's output:
//! the prelude's messages (`tchbook_wire`, DEVELOPERS.md "The live display line protocol"),
//! evcxr's content blocks for a cell's final value, its input prompts, the runner's own sync
//! lines, and everything else as stream text.

use super::capture::SYNC;
use super::outputs::{Printed, Recorder, Shown, plain_text, slot};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};
use tchbook_wire::MimeData;
use tchbook_wire::record::Output;
use tchbook_wire::value::Read;
use tchbook_wire::{InputRequest, Message, StreamName};

/// How often an updated display's text is printed again while its cell runs.
const UPDATE_PRINT_INTERVAL: Duration = Duration::from_secs(10);

impl Recorder {
    /// Bytes read from the pipe of `stream`: complete lines are handled, the rest kept.
    pub(super) fn bytes(&mut self, stream: StreamName, bytes: &[u8]) {
        let mut buffer = std::mem::take(&mut self.partial[slot(stream)]);
        buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(n) = buffer[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&buffer[start..start + n]).into_owned();
            self.line(stream, &line);
            start += n + 1;
        }
        buffer.drain(..start);
        self.partial[slot(stream)] = buffer;
    }

    /// One complete line (without its newline) read from the runner's pipe for `stream`. As in
    /// the kernel, only a line with the run's key is protocol (`tchbook_wire::key`).
    fn line(&mut self, stream: StreamName, line: &str) {
        // Content blocks come on stdout only; stderr (the sync line, too) may arrive meanwhile.
        // A protocol line or text that is not part of a block is handled below.
        if stream == StreamName::Stdout {
            match self.blocks.line(line) {
                Read::Consumed => return,
                Read::Block { mime, content } => {
                    // A later block of the same type replaces it, as in evcxr.
                    match self.value.iter_mut().find(|(m, _)| *m == mime) {
                        Some(slot) => slot.1 = content,
                        None => self.value.push((mime, content)),
                    }
                    return;
                }
                Read::Protocol(_) | Read::Text(_) => {}
            }
        }
        let sync = tchbook_wire::keyed(SYNC);
        if let Some(at) = line.find(&sync) {
            // Without the pump, an unfinished `print!` arrives glued to the sync line.
            self.stream(stream, &line[..at]);
            if let Ok(token) = line[at + sync.len()..].trim().parse::<u64>() {
                self.synced[slot(stream)] = token;
            }
            return;
        }
        if stream == StreamName::Stdout {
            // A line with the prefix that does not read as a message stays text, as in the kernel.
            if let Some(Ok(message)) = Message::parse_line(line) {
                self.message(message);
                return;
            }
            if let Some(request) = InputRequest::parse_line(line) {
                // `input()`: the prompt goes to the terminal; the prelude reads stdin itself.
                self.print(StreamName::Stdout, &request.prompt);
                return;
            }
        }
        // Text, and without the key if it had one: no output shows it.
        let text = tchbook_wire::unkeyed(line).unwrap_or(line);
        self.stream(stream, &format!("{text}\n"));
    }

    /// A message from the prelude.
    fn message(&mut self, message: Message) {
        match message {
            Message::Display {
                data,
                metadata,
                display_id,
            } => self.display(data, metadata, display_id),
            Message::Update {
                data,
                metadata,
                display_id,
            } => self.update(data, metadata, display_id),
            // A prelude type's final value: the cell's result, shown when the cell ends.
            Message::Value { data, metadata } => self.sent_value = Some((data, metadata)),
            Message::Clear { wait: true } => self.clear_pending = true,
            Message::Clear { wait: false } => self.clear_now(),
            Message::Stream { name, text } => self.stream(name, &text),
            // The runner's own hook reports the program's panics (`failure.rs`); a panic line
            // from elsewhere is shown as the kernel shows a panic off the cells' thread.
            Message::Panic(panic) => self.stream(StreamName::Stderr, &panic.thread_text()),
            // A widget's model: a program has no front end to steer it, and the widget's display
            // carries its text beside the view; its state is kept for the record, so a merged
            // notebook can draw the view again.
            Message::CommOpen {
                comm_id,
                target_name,
                data,
                ..
            } if target_name == tchbook_wire::widgets::TARGET => {
                let state = data.get("state").and_then(Value::as_object).cloned();
                self.widgets.insert(comm_id, state.unwrap_or_default());
            }
            Message::CommMsg { comm_id, data, .. } => {
                let update = data.get("state").and_then(Value::as_object);
                if let (Some(model), Some(update)) = (self.widgets.get_mut(&comm_id), update) {
                    model.extend(update.clone());
                }
            }
            Message::CommClose { comm_id, .. } => {
                self.widgets.remove(&comm_id);
            }
            Message::CommOpen { .. } => {}
        }
    }

    /// A new display: printed, recorded, and remembered under its id for later updates.
    fn display(&mut self, data: MimeData, metadata: Map<String, Value>, id: Option<String>) {
        let text = plain_text(&data);
        self.print(StreamName::Stdout, &format!("{text}\n"));
        let output = Output::DisplayData { data, metadata };
        if let (Some(at), Some(id)) = (self.push_output(output), id) {
            let cell = self.cells.len() - 1;
            self.displays.insert(id.clone(), Shown { cell, output: at });
            self.printed.insert(
                id,
                Printed {
                    last: Some(Instant::now()),
                    text,
                    pending: None,
                },
            );
        }
    }

    /// An update of the display `id`: replaced in the record; its text printed again when it
    /// changed and `UPDATE_PRINT_INTERVAL` has passed, else kept for the cell's end.
    fn update(&mut self, data: MimeData, metadata: Map<String, Value>, id: String) {
        let text = plain_text(&data);
        let shown = self.displays.get(&id).copied();
        let output = shown.and_then(|shown| {
            self.cells
                .get_mut(shown.cell)
                .and_then(|c| c.outputs.get_mut(shown.output))
        });
        if let Some(output) = output {
            *output = Output::DisplayData { data, metadata };
        }
        let printed = self.printed.entry(id).or_default();
        let due = printed
            .last
            .is_none_or(|at| at.elapsed() >= UPDATE_PRINT_INTERVAL);
        if due && text != printed.text {
            printed.last = Some(Instant::now());
            printed.text = text.clone();
            printed.pending = None;
            self.print(StreamName::Stdout, &format!("{text}\n"));
        } else if text != printed.text {
            printed.pending = Some(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null() -> libc::c_int {
        use std::os::fd::IntoRawFd;
        let file = std::fs::OpenOptions::new().write(true).open("/dev/null");
        file.expect("/dev/null").into_raw_fd()
    }

    fn recorder_with_cell() -> Recorder {
        let mut recorder = Recorder {
            real: Some([null(), null()]), // printed text goes nowhere in tests
            ..Recorder::default()
        };
        recorder.begin(3, "h", 1);
        recorder
    }

    fn lines(recorder: &mut Recorder, text: &str) {
        recorder.bytes(StreamName::Stdout, text.as_bytes());
    }

    #[test]
    fn streams_coalesce_and_displays_update_in_place() {
        let mut r = recorder_with_cell();
        lines(&mut r, "epoch 1\nepoch 2\n");
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"display\",\"data\":{\"text/plain\":\"0%\"},\"metadata\":{},\"display_id\":\"p\"}\n",
        );
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"update\",\"data\":{\"text/plain\":\"100%\"},\"metadata\":{},\"display_id\":\"p\"}\n",
        );
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"stream\",\"name\":\"stdout\",\"text\":\"done\"}\n",
        );
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs.as_array().unwrap().len(), 3, "{outputs}");
        assert_eq!(outputs[0]["text"], "epoch 1\nepoch 2\n");
        assert_eq!(outputs[1]["output_type"], "display_data");
        assert_eq!(outputs[1]["data"]["text/plain"], "100%");
        assert_eq!(outputs[2]["text"], "done");
    }

    #[test]
    fn a_final_value_becomes_the_execute_result_after_took() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "EVCXR_BEGIN_CONTENT text/plain\nline 1\nline 2\nEVCXR_END_CONTENT\n\
             EVCXR_BEGIN_CONTENT application/vnd.tchbook.x+json\n{\"n\":1}\nEVCXR_END_CONTENT\n",
        );
        r.end(Some(Duration::from_millis(12)));
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs[0]["text"], "Took 12ms\n");
        assert_eq!(outputs[1]["output_type"], "execute_result");
        assert_eq!(outputs[1]["execution_count"], 1);
        assert_eq!(outputs[1]["data"]["text/plain"], "line 1\nline 2");
        assert_eq!(outputs[1]["data"]["application/vnd.tchbook.x+json"]["n"], 1);
        assert_eq!(outputs[1]["data"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn a_prelude_value_message_is_the_execute_result_with_its_metadata() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"value\",\"data\":{\"text/plain\":\"a plot\",\
             \"image/png\":\"iVBORw0KGgo=\"},\"metadata\":{\"image/png\":{\"alt\":\"a line\"}}}\n",
        );
        assert!(r.cells[0].outputs.is_empty(), "shown when the cell ends");
        r.end(None);
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs.as_array().unwrap().len(), 1, "{outputs}");
        assert_eq!(outputs[0]["output_type"], "execute_result");
        assert_eq!(outputs[0]["data"]["text/plain"], "a plot");
        assert_eq!(outputs[0]["metadata"]["image/png"]["alt"], "a line");
    }

    #[test]
    fn unit_values_are_not_shown_and_clear_waits_for_the_next_output() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "old\nTCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":true}\n",
        );
        assert_eq!(r.cells[0].outputs.len(), 1);
        lines(
            &mut r,
            "new\nEVCXR_BEGIN_CONTENT text/plain\n()\nEVCXR_END_CONTENT\n",
        );
        r.end(None);
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs.as_array().unwrap().len(), 1, "{outputs}");
        assert_eq!(outputs[0]["text"], "new\n");
    }

    #[test]
    fn sync_lines_split_from_a_partial_line_and_are_never_recorded() {
        let mut r = recorder_with_cell();
        lines(&mut r, "50%TCHBOOK_EXPORT_SYNC 7\n");
        r.bytes(StreamName::Stderr, b"TCHBOOK_EXPORT_SYNC 7\n");
        assert_eq!(r.synced, [7, 7]);
        assert_eq!(r.cells[0].outputs.len(), 1);
        assert_eq!(
            serde_json::to_value(&r.cells[0].outputs[0]).unwrap()["text"],
            "50%"
        );
    }

    #[test]
    fn stderr_lines_do_not_enter_a_value_being_read() {
        let mut r = recorder_with_cell();
        lines(&mut r, "EVCXR_BEGIN_CONTENT text/plain\n42\n");
        r.bytes(StreamName::Stderr, b"TCHBOOK_EXPORT_SYNC 3\nwarning\n");
        lines(&mut r, "EVCXR_END_CONTENT\n");
        r.end(None);
        assert_eq!(r.synced[slot(StreamName::Stderr)], 3);
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs[0]["text"], "warning\n");
        assert_eq!(outputs[1]["data"]["text/plain"], "42");
    }

    #[test]
    fn panic_lines_are_stderr_text_and_input_prompts_are_not_recorded() {
        let mut r = recorder_with_cell();
        lines(
            &mut r,
            "TCHBOOK_DISPLAY {\"op\":\"panic\",\"message\":\"boom\",\"location\":\"a.rs:1:2\",\
             \"thread\":\"w\",\"main\":false}\nEVCXR_INPUT_REQUEST:Name\n",
        );
        let outputs = serde_json::to_value(&r.cells[0].outputs).unwrap();
        assert_eq!(outputs.as_array().unwrap().len(), 1, "{outputs}");
        assert_eq!(outputs[0]["name"], "stderr");
        assert_eq!(
            outputs[0]["text"],
            "thread 'w' panicked at a.rs:1:2:\nboom\n"
        );
    }

    #[test]
    fn unknown_protocol_lines_stay_text() {
        let mut r = recorder_with_cell();
        lines(&mut r, "TCHBOOK_DISPLAY {\"op\":\"dance\"}\n");
        assert_eq!(
            serde_json::to_value(&r.cells[0].outputs[0]).unwrap()["text"],
            "TCHBOOK_DISPLAY {\"op\":\"dance\"}\n"
        );
    }
}
