//! Between cells the pump sends keyed messages on stderr, and a cell takes stdout back.

use super::KEY;
use crate::is_child;
use tchbook_prelude::display::{Bundle, show};
use tchbook_prelude::runtime;
use tchbook_wire::env::LINE_KEY;
use tchbook_wire::{PREFIX, unkeyed_with};

const BETWEEN_CELLS_CHILD: &str = "runtime::between_cells::between_cells_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn between_cells_child() {
    use std::time::Duration;
    if !is_child(BETWEEN_CELLS_CHILD) {
        return;
    }
    runtime::attach();
    println!("in the cell");
    // The evaluation process's end of the cell, as it writes it.
    println!("{}", tchbook_wire::keyed("EVCXR_EXECUTION_COMPLETE"));
    std::thread::sleep(Duration::from_millis(300));
    // A thread of the cell's, after its end (a widget's callback, a training thread).
    std::thread::spawn(|| {
        println!("from a thread between cells");
        show(&Bundle::text("shown between cells"));
        eprintln!("an error between cells");
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    runtime::run_cell(Box::new(|| println!("in the next cell")));
    std::thread::sleep(Duration::from_millis(300));
}

/// evcxr reads the evaluation process's stdout only while a cell runs; between cells the pump's
/// lines go to stderr, which it reads all the time, as keyed messages the kernel reads.
#[test]
fn between_cells_the_pump_sends_keyed_messages_on_stderr_and_a_cell_takes_stdout_back() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", BETWEEN_CELLS_CHILD, "--ignored", "--nocapture"])
        .args(["--test-threads=1"])
        .env("TCHBOOK_TEST_CHILD", BETWEEN_CELLS_CHILD)
        .env(LINE_KEY, KEY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    let position = |wanted: &str| lines.iter().position(|l| l.ends_with(wanted));
    let complete = lines
        .iter()
        .position(|l| unkeyed_with(Some(KEY), l) == Some("EVCXR_EXECUTION_COMPLETE"))
        .expect("the end of the cell on stdout");
    assert!(
        position("in the cell").is_some_and(|p| p < complete),
        "{stdout}"
    );
    assert!(
        position("in the next cell").is_some_and(|p| p > complete),
        "{stdout}"
    );
    assert!(!stdout.contains("between cells"), "{stdout}");
    let messages: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| unkeyed_with(Some(KEY), l)?.strip_prefix(PREFIX))
        .map(|json| serde_json::from_str(json).expect("a message is JSON"))
        .collect();
    let stream = |name: &str, text: &str| {
        messages
            .iter()
            .any(|m| m["op"] == "stream" && m["name"] == name && m["text"].as_str() == Some(text))
    };
    assert!(
        stream("stdout", "from a thread between cells\n"),
        "{stderr}"
    );
    assert!(stream("stderr", "an error between cells\n"), "{stderr}");
    assert!(
        messages
            .iter()
            .any(|m| m["op"] == "display" && m["data"]["text/plain"] == "shown between cells"),
        "{stderr}"
    );
    assert!(!stderr.contains("in the next cell"), "{stderr}");
}
