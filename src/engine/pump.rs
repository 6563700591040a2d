//! The output pump: one thread that passes the evaluation process's output lines on in order,
//! and every engine event only after the lines printed before it. Its stderr's keyed lines are
//! messages the prelude sent between cells, read as stdout's.

use super::Event;
use crossbeam_channel::{Receiver, never, select};
use evcxr::EvalContextOutputs;
use std::time::Duration;
use tokio::sync::mpsc;

pub(super) enum PumpMessage {
    /// The streams of a new evaluation process.
    Attach(EvalContextOutputs),
    /// An event of the engine's own, passed on after every line queued before it.
    Event(Event),
}

pub(super) fn pump(from_engine: Receiver<PumpMessage>, to_kernel: mpsc::UnboundedSender<Event>) {
    let mut stdout: Receiver<String> = never();
    let mut stderr: Receiver<String> = never();
    loop {
        select! {
            recv(stdout) -> line => match line {
                Ok(line) => { let _ = to_kernel.send(Event::Stdout(line)); }
                Err(_) => stdout = never(),
            },
            recv(stderr) -> line => match line {
                Ok(line) => { let _ = to_kernel.send(stderr_event(line)); }
                Err(_) => stderr = never(),
            },
            recv(from_engine) -> message => match message {
                Ok(PumpMessage::Attach(outputs)) => {
                    stdout = outputs.stdout;
                    stderr = outputs.stderr;
                }
                Ok(PumpMessage::Event(event)) => {
                    // Everything the cell printed before this event goes first.
                    while let Ok(line) = stdout.try_recv() {
                        let _ = to_kernel.send(Event::Stdout(line));
                    }
                    if matches!(event, Event::Finished(_)) {
                        // Child stderr arrives through a thread of evcxr's own, unsynchronised
                        // with stdout; give a last line (a crash report) a moment to arrive.
                        while let Ok(line) = stderr.recv_timeout(Duration::from_millis(5)) {
                            let _ = to_kernel.send(stderr_event(line));
                        }
                    }
                    while let Ok(line) = stderr.try_recv() {
                        let _ = to_kernel.send(stderr_event(line));
                    }
                    let _ = to_kernel.send(event);
                }
                Err(_) => return,
            },
        }
    }
}

/// A line of the process's stderr. Between cells the prelude's pump sends its messages there
/// (evcxr reads stdout only while a cell runs): a keyed line is read as if it came on stdout.
fn stderr_event(line: String) -> Event {
    if tchbook_wire::carries_key(&line) {
        Event::Stdout(line)
    } else {
        Event::Stderr(line)
    }
}
