use crate::{is_child, run_child, run_child_with};
use tchbook_prelude::display::{Bundle, show};
use tchbook_prelude::interrupt;
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

const BETWEEN_CELLS_CHILD: &str = "runtime::between_cells_child";

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

const SIGINT_CHILD: &str = "runtime::sigint_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn sigint_child() {
    if !is_child(SIGINT_CHILD) {
        return;
    }
    runtime::attach();
    // SAFETY: raising a signal this process handles.
    unsafe { libc::raise(libc::SIGINT) };
    let caught = std::panic::catch_unwind(interrupt::check);
    let message = caught
        .unwrap_err()
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    println!("after-interrupt: {message}");
    interrupt::check(); // reported once: no second panic
    println!("still alive");
    std::thread::sleep(std::time::Duration::from_millis(200));
}

#[test]
fn sigint_sets_the_flag_and_check_panics_with_keyboard_interrupt() {
    let out = run_child(SIGINT_CHILD);
    assert!(
        out.contains("after-interrupt: KeyboardInterrupt: interrupted by the user"),
        "{out}"
    );
    assert!(out.contains("still alive"), "{out}");
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

#[test]
fn tune_allocator_is_accepted_by_glibc() {
    assert!(runtime::tune_allocator());
}

const LIVE_CHILD: &str = "runtime::live_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn live_child() {
    use tchbook_prelude::prelude::*;
    if !is_child(LIVE_CHILD) {
        return;
    }
    runtime::attach();
    let mut plot = LossPlot::new("live loss");
    let mut bar = Progress::new(3, "epoch");
    for epoch in 1..=3 {
        plot.push(epoch as f64, 1.0 / epoch as f64);
        bar.tick();
        std::thread::sleep(std::time::Duration::from_millis(550));
    }
    plot.finish();
    bar.finish();
    let ds = TensorDataset::new(
        Tensor::zeros([4, 2], (Kind::Float, Device::Cpu)),
        Tensor::zeros([4], (Kind::Int64, Device::Cpu)),
    );
    let loader = DataLoader::new(&ds, 2);
    let mut m = RunManager::new().without_tensorboard();
    for run in RunBuilder::get_runs(&RunParams::new().lr(&[0.1, 0.01])) {
        m.begin_run(&run);
        m.begin_epoch();
        for (x, y) in &loader {
            m.track_loss(&Tensor::from(0.25f32), 2);
            m.track_num_correct(&x, &y);
        }
        m.end_epoch();
        m.end_run();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn plots_progress_bars_and_run_tables_update_in_place_inside_a_kernel() {
    use base64::Engine;
    let out = run_child(LIVE_CHILD);
    let messages: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| l.find(PREFIX).map(|i| &l[i + PREFIX.len()..]))
        .map(|j| serde_json::from_str(j).expect("valid JSON"))
        .collect();
    let plot_id = messages
        .iter()
        .find(|m| {
            m["op"] == "display"
                && m["data"]["application/vnd.tchbook.loss-plot+json"]["title"] == "live loss"
        })
        .expect("the plot is displayed")["display_id"]
        .as_str()
        .unwrap()
        .to_string();
    let updates: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|m| m["op"] == "update" && m["display_id"] == plot_id.as_str())
        .collect();
    assert!(
        updates.len() >= 2,
        "the plot redraws in place: {} updates",
        updates.len()
    );
    let last = updates.last().unwrap();
    assert_eq!(
        last["data"]["application/vnd.tchbook.loss-plot+json"]["series"][0]["y"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(last["data"]["image/png"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let bar_id = messages
        .iter()
        .find(|m| {
            m["op"] == "display" && m["data"]["application/vnd.tchbook.progress+json"]["total"] == 3
        })
        .expect("the progress bar is displayed")["display_id"]
        .clone();
    // The run table: shown after the first epoch, updated in place after the second.
    let table = messages
        .iter()
        .find(|m| {
            m["op"] == "display"
                && m["data"]["application/vnd.tchbook.run-table+json"]["columns"][0] == "run"
        })
        .expect("the run table is displayed");
    assert_eq!(
        table["data"]["application/vnd.tchbook.run-table+json"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let update = messages
        .iter()
        .find(|m| m["op"] == "update" && m["display_id"] == table["display_id"])
        .expect("the run table updates in place");
    assert_eq!(
        update["data"]["application/vnd.tchbook.run-table+json"]["rows"][1]["lr"],
        0.01
    );
    assert!(
        update["data"]["text/html"]
            .as_str()
            .unwrap()
            .contains("<td>0.01</td>")
    );
    let final_bar = messages
        .iter()
        .rev()
        .find(|m| m["op"] == "update" && m["display_id"] == bar_id)
        .unwrap();
    assert_eq!(
        final_bar["data"]["application/vnd.tchbook.progress+json"]["done"],
        3
    );
}

#[test]
fn the_variable_store_keeps_values_and_their_type_names_and_refuses_another_type() {
    use tchbook_prelude::runtime::variables::{
        VariableStore, create_variable_store, walk_variables,
    };
    let store = create_variable_store();
    // SAFETY: the store was just made and nothing else holds it.
    let held = unsafe { &mut *store };
    held.put_variable("losses", vec![0.5_f32, 0.25]);
    held.put_variable("steps", 2_usize);
    // A later cell expecting another type for `steps` gets false (and the variable is dropped by
    // its caller); the right type reads it back.
    assert!(!held.check_variable::<u32>("steps"));
    assert!(held.check_variable::<usize>("steps"));
    // One the store does not hold (a stopped cell kept it) is lost too, never a panic later.
    assert!(!held.check_variable::<i8>("never stored"));

    extern "C" fn visit(
        seen: *mut std::ffi::c_void,
        name: *const u8,
        name_len: usize,
        type_name: *const u8,
        type_len: usize,
        value: *const std::ffi::c_void,
    ) {
        // SAFETY: walk_variables passes the context it was given (this Vec).
        let seen = unsafe { &mut *(seen as *mut Vec<(String, String, bool)>) };
        // SAFETY: the names are the store's strings, valid while it is walked.
        let text = |p, n| unsafe { std::str::from_utf8(std::slice::from_raw_parts(p, n)) };
        // SAFETY: each value pointer is a stored `Box<dyn Any>`, valid while it is walked.
        let value = unsafe { &*(value as *const Box<dyn std::any::Any>) };
        seen.push((
            text(name, name_len).unwrap().to_owned(),
            text(type_name, type_len).unwrap().to_owned(),
            value.is::<usize>(),
        ));
    }
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    // SAFETY: the store is ours and not in use.
    unsafe { walk_variables(store, visit, &mut seen as *mut _ as *mut std::ffi::c_void) };
    seen.sort();
    assert_eq!(
        seen,
        [
            ("losses".into(), "alloc::vec::Vec<f32>".into(), false),
            ("steps".into(), "usize".into(), true),
        ]
    );
    assert_eq!(held.take_variable::<Vec<f32>>("losses"), [0.5, 0.25]);
    held.forget_variable("steps");
    held.forget_variable("never stored");
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    // SAFETY: the store is ours and not in use.
    unsafe { walk_variables(store, visit, &mut seen as *mut _ as *mut std::ffi::c_void) };
    assert!(seen.is_empty(), "{seen:?}");
    let arc = held.lazy_arc("shared", || 7_u8);
    assert!(std::sync::Arc::ptr_eq(
        &arc,
        &held.lazy_arc("shared", || 9_u8)
    ));
    // SAFETY: made by create_variable_store, no longer used.
    drop(unsafe { Box::<VariableStore>::from_raw(store) });
    // A null store (no cell has stored a variable yet) has nothing to walk.
    // SAFETY: null is a store walk_variables accepts.
    unsafe { walk_variables(std::ptr::null(), visit, std::ptr::null_mut()) };
}
