//! The one reader of the command pipe (`tchbook_wire::commands`): a thread that hands each
//! `LOAD_AND_RUN` to the loop and each input answer to the read waiting for it. One reader, so
//! that nothing else in the process (a cell's read of stdin, a child process) can take a line
//! meant for another.

use super::stdin;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::mpsc::{Receiver, channel};
use tchbook_wire::commands::Command;

/// Starts the reader on `pipe`; the receiver yields each cell's library and function, and
/// ends when the pipe closes (the kernel has gone).
pub(super) fn start(pipe: File) -> Receiver<(String, String)> {
    let (loads, receiver) = channel();
    let reader = move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else {
                break;
            };
            match Command::parse(&line) {
                Ok(Command::LoadAndRun { library, function }) => {
                    if loads.send((library, function)).is_err() {
                        break;
                    }
                }
                Ok(Command::Answer(answer)) => stdin::deliver(answer),
                Err(_) if line.is_empty() => {}
                // Nothing the kernel writes; said, and the process goes on with its variables.
                Err(why) => {
                    eprintln!("The evaluation process ignored a line from the kernel: {why}")
                }
            }
        }
    };
    if let Err(error) = std::thread::Builder::new()
        .name("tchbook-commands".to_owned())
        .spawn(reader)
    {
        eprintln!("The evaluation process could not start its command reader: {error}");
        std::process::exit(99);
    }
    receiver
}
