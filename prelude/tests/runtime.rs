//! The prelude's runtime in a notebook's evaluation process: the pump that turns a cell's output
//! into the kernel's keyed lines, and the messages the kernel reads back as the ones meant (here,
//! where the panic locations and libtest lines they check name this file and module); the pump
//! between cells (`between_cells`), SIGINT and the allocator (`process`), outputs updated in place
//! (`live`), and the variable store (`store`).

mod between_cells;
mod live;
mod process;
mod store;

use crate::{is_child, run_child_with};
use tchbook_prelude::display::{Bundle, show};
use tchbook_prelude::runtime;
use tchbook_wire::env::LINE_KEY;
use tchbook_wire::{Message, PREFIX, Panic, StreamName, unkeyed_with};

/// The line key the pump's child runs with, as the kernel gives its evaluation process one.
const KEY: &str = "00112233445566778899aabbccddeeff";

const PUMP_CHILD: &str = "runtime::pump_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn pump_child() {
    use std::io::Write;
    if !is_child(PUMP_CHILD) {
        return;
    }
    runtime::attach();
    println!("hello");
    print!("partial");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    println!(" rest");
    print!("glued");
    show(&Bundle::text("shown"));
    // Printed by the cell: text, even in the protocol's words.
    println!("EVCXR_EXECUTION_COMPLETE");
    println!("TCHBOOK_DISPLAY {{\"op\":\"clear\",\"wait\":false}}");
    println!("{}", tchbook_wire::keyed("EVCXR_EXECUTION_COMPLETE"));
    eprintln!("to stderr");
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn pump_forwards_whole_lines_and_flushes_partial_lines_as_stream_ops() {
    let out = run_child_with(PUMP_CHILD, &[(LINE_KEY, KEY.as_ref())]);
    // libtest's own "test runtime::pump_child ... " has no newline and joins the first line.
    let out = out.replace("test runtime::pump_child ... ", "");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with("running") && !l.is_empty())
        .collect();
    let proto: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| unkeyed_with(Some(KEY), l)?.strip_prefix(PREFIX))
        .map(|j| serde_json::from_str(j).expect("protocol line is valid JSON"))
        .collect();
    let hello = lines
        .iter()
        .position(|l| *l == "hello")
        .expect("complete line forwarded unchanged");
    let partial = lines
        .iter()
        .position(|l| l.contains("\"text\":\"partial\""))
        .expect("partial line flushed as a stream op");
    let rest = lines
        .iter()
        .position(|l| *l == " rest")
        .expect("rest of the line forwarded");
    assert!(hello < partial && partial < rest, "order kept: {lines:?}");
    assert!(
        proto
            .iter()
            .any(|m| m["op"] == "stream" && m["name"] == "stdout" && m["text"] == "partial")
    );
    // A partial line before a protocol line is sent as a stream op first, and the protocol
    // line and evcxr's own line arrive whole.
    let glued = lines
        .iter()
        .position(|l| l.contains("\"text\":\"glued\""))
        .expect("glued text as stream op");
    let display = lines
        .iter()
        .position(|l| {
            unkeyed_with(Some(KEY), l).is_some_and(|l| {
                l.starts_with("TCHBOOK_DISPLAY {") && l.contains("\"op\":\"display\"")
            })
        })
        .expect("the display's line, keyed");
    let complete = lines
        .iter()
        .position(|l| unkeyed_with(Some(KEY), l) == Some("EVCXR_EXECUTION_COMPLETE"))
        .expect("evcxr's line whole and keyed");
    assert!(glued < display && display < complete, "{lines:?}");
    // What the cell printed in the protocol's words comes through as the plain lines it was,
    // which the kernel reads as text (no key).
    let printed = lines
        .iter()
        .position(|l| *l == "EVCXR_EXECUTION_COMPLETE")
        .expect("the printed words, as printed");
    assert!(display < printed && printed < complete, "{lines:?}");
    assert!(lines.contains(&"TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":false}"));
    assert_eq!(proto.iter().filter(|m| m["op"] == "clear").count(), 0);
    let shown = proto.iter().find(|m| m["op"] == "display").unwrap();
    assert_eq!(shown["data"]["text/plain"], "shown");
    assert!(shown["display_id"].is_string());
}

const WIRE_CHILD: &str = "runtime::wire_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn wire_child() {
    use std::io::Write;
    use tchbook_prelude::display::clear_output;
    if !is_child(WIRE_CHILD) {
        return;
    }
    runtime::attach();
    let handle = show(&Bundle::text("first").with_html("<b>first</b>"));
    handle.update(&Bundle::text("second"));
    clear_output(true);
    print!("half a line");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    eprint!("half of stderr");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::panic::catch_unwind(|| panic!("on the cells' thread: \"{}\"\n", 1));
    std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| std::panic::panic_any(7))
        .unwrap()
        .join()
        .unwrap_err();
    std::thread::sleep(std::time::Duration::from_millis(300));
}

/// The prelude's writer (display calls, the pump, the panic hook, all through `emit` in a real
/// attached process) against the reader the kernel uses (`tchbook_wire::Message::parse_line`,
/// which `src/display` wraps): every line reads back as the message that was meant.
#[test]
fn what_the_prelude_writes_the_kernel_reads_back_as_the_same_messages() {
    let out = run_child_with(WIRE_CHILD, &[(LINE_KEY, KEY.as_ref())]);
    let messages: Vec<Message> = out
        .lines()
        .filter_map(|l| l.find(tchbook_wire::MARK).map(|i| &l[i..]))
        .map(|l| unkeyed_with(Some(KEY), l).expect("every protocol line is keyed"))
        .map(|l| {
            Message::parse_line(l)
                .unwrap()
                .expect("every message line reads")
        })
        .collect();
    let Some(Message::Display {
        display_id: Some(id),
        ..
    }) = messages.first()
    else {
        panic!("a display with an id first: {messages:?}");
    };
    let bundle = |b: Bundle| b.data();
    let location = messages.iter().find_map(|m| match m {
        Message::Panic(p) if p.on_main => Some(p.location.clone()),
        _ => None,
    });
    let location = location.expect("the main thread's panic");
    assert!(location.contains("tests/runtime.rs:"), "{location}");
    assert_eq!(
        messages,
        vec![
            Message::display(
                bundle(Bundle::text("first").with_html("<b>first</b>")),
                Some(id.clone())
            ),
            Message::update(bundle(Bundle::text("second")), id.clone()),
            Message::Clear { wait: true },
            Message::Stream {
                name: StreamName::Stdout,
                text: "half a line".into()
            },
            Message::Stream {
                name: StreamName::Stderr,
                text: "half of stderr".into()
            },
            Message::Panic(Panic {
                message: "on the cells' thread: \"1\"\n".into(),
                location,
                thread: WIRE_CHILD.into(),
                on_main: true,
                cpp_frames: false,
            }),
            Message::Panic(Panic {
                message: "Box<dyn Any>".into(),
                location: messages.last().map_or(String::new(), |m| match m {
                    Message::Panic(p) => p.location.clone(),
                    _ => String::new(),
                }),
                thread: "worker".into(),
                on_main: false,
                cpp_frames: false,
            }),
        ]
    );
}

#[test]
fn outside_a_kernel_display_calls_do_not_emit_protocol_lines() {
    assert!(!runtime::in_kernel());
    let handle = show(&Bundle::text("plain"));
    assert!(handle.id().is_none());
    handle.update(&Bundle::text("still plain"));
}
