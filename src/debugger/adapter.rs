//! A debug adapter in a process of its own, spoken to in the Debug Adapter Protocol's framing
//! (`Content-Length: N`, a blank line, N bytes of JSON) over its stdin and stdout.
//!
//! One thread reads the adapter's stdout: a response goes to the request waiting for it (by
//! `request_seq`), an event to the session's handler. Requests may come from any thread; each
//! waits for its own response with a patience of its own, so an adapter that hangs costs a
//! request its patience and an error, never the kernel its control channel. When the adapter
//! ends, every waiting request gets an error at once, and the handler hears `None`.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who hears the adapter's events; `None` once it has ended.
pub(crate) type EventHandler = Box<dyn Fn(Option<Value>) + Send>;

/// A request sent: its sequence number and where its response will arrive.
pub(crate) type Sent = (i64, std::sync::mpsc::Receiver<Value>);

type Pending = Arc<Mutex<Option<HashMap<i64, Sender<Value>>>>>;

/// A running adapter. Dropping it ends the adapter's process.
pub(crate) struct Adapter {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    seq: AtomicI64,
    /// The requests waiting for a response; `None` once the adapter's stdout has closed.
    pending: Pending,
}

impl Adapter {
    /// Starts `command` (its stdin and stdout become the protocol's) and the reader thread.
    pub(crate) fn start(mut command: Command, on_event: EventHandler) -> std::io::Result<Adapter> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let waiting = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("debug adapter".into())
            .spawn(move || {
                let mut stdout = BufReader::new(stdout);
                while let Some(message) = read_message(&mut stdout) {
                    if message["type"] == "response" {
                        let seq = message["request_seq"].as_i64().unwrap_or(-1);
                        let waiter = waiting
                            .lock()
                            .unwrap()
                            .as_mut()
                            .and_then(|p| p.remove(&seq));
                        if let Some(waiter) = waiter {
                            let _ = waiter.send(message);
                        }
                    } else if message["type"] == "event" {
                        on_event(Some(message));
                    }
                }
                // Every waiting request hears that the adapter is gone (its sender dropped).
                waiting.lock().unwrap().take();
                on_event(None);
            })?;
        Ok(Adapter {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            seq: AtomicI64::new(1),
            pending,
        })
    }

    /// Sends a request and waits up to `patience` for its response; the response's `body` on
    /// success, the adapter's message (or why there was none) on failure.
    pub(crate) fn request(
        &self,
        command: &str,
        arguments: Value,
        patience: Duration,
    ) -> Result<Value, String> {
        let sent = self.send(command, arguments)?;
        self.wait(command, sent, patience)
    }

    /// Sends a request now, to be waited for later ([`Adapter::wait`]): gdb answers `attach`
    /// only after the `configurationDone` sent after it.
    pub(crate) fn send(&self, command: &str, arguments: Value) -> Result<Sent, String> {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = channel();
        match self.pending.lock().unwrap().as_mut() {
            Some(pending) => pending.insert(seq, tx),
            None => return Err("gdb has ended".into()),
        };
        let body =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments})
                .to_string();
        let mut stdin = self.stdin.lock().unwrap();
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len())
            .and_then(|()| stdin.flush())
            .map_err(|error| format!("gdb's input is closed ({error})"))?;
        Ok((seq, rx))
    }

    /// Waits up to `patience` for the response to a request sent.
    pub(crate) fn wait(
        &self,
        command: &str,
        (seq, response): Sent,
        patience: Duration,
    ) -> Result<Value, String> {
        let response = match response.recv_timeout(patience) {
            Ok(response) => response,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(pending) = self.pending.lock().unwrap().as_mut() {
                    pending.remove(&seq);
                }
                return Err(format!(
                    "gdb did not answer `{command}` within {} s",
                    patience.as_secs()
                ));
            }
            Err(_) => return Err(format!("gdb ended before it answered `{command}`")),
        };
        if response["success"] == true {
            Ok(response.get("body").cloned().unwrap_or_else(|| json!({})))
        } else {
            let message = response["body"]["error"]["format"]
                .as_str()
                .or_else(|| response["message"].as_str())
                .unwrap_or("failed");
            Err(format!("gdb refused `{command}`: {message}"))
        }
    }

    /// Sends a request whose response nobody waits for (its result arrives as events).
    pub(crate) fn notify(&self, command: &str, arguments: Value) {
        if let Ok((seq, _)) = self.send(command, arguments)
            && let Some(pending) = self.pending.lock().unwrap().as_mut()
        {
            pending.remove(&seq);
        }
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One framed message; `None` at end of input or on a frame that is not the protocol's.
fn read_message(input: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

#[cfg(test)]
mod tests {
    use super::read_message;

    #[test]
    fn frames_read_back_in_order() {
        let one = r#"{"type":"event","event":"stopped"}"#;
        let two = r#"{"type":"response","request_seq":3}"#;
        let text = format!(
            "Content-Length: {}\r\n\r\n{one}Content-Length: {}\r\n\r\n{two}",
            one.len(),
            two.len()
        );
        let mut input = text.as_bytes();
        assert_eq!(read_message(&mut input).unwrap()["event"], "stopped");
        assert_eq!(read_message(&mut input).unwrap()["request_seq"], 3);
        assert!(read_message(&mut input).is_none());
    }

    #[test]
    fn a_frame_without_length_ends_the_stream() {
        let mut input = "Content-Type: x\r\n\r\n{}".as_bytes();
        assert!(read_message(&mut input).is_none());
    }
}
