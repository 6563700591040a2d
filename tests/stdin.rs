//! input_request on stdin when a cell reads input.

use crate::support::{Kernel, REPLY, STARTUP, streamed};
use jupyter_protocol::{
    ExecuteRequest, InputReply, InterruptRequest, JupyterMessage, JupyterMessageContent,
    ReplyStatus,
};

const READS_A_NAME: &str = "let name = input(\"Name? \");\nprintln!(\"hello {}!\", name.trim());";

#[tokio::test(flavor = "multi_thread")]
async fn input_request_reaches_the_front_end_and_its_reply_reaches_the_cell() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let (out, asked) = run_answering(&mut kernel, READS_A_NAME, &["Ada"]).await;
    assert!(out.contains("hello Ada!"), "{out}");
    let [(prompt, parent)] = asked.as_slice() else {
        panic!("{asked:?}")
    };
    assert_eq!(prompt, "Name? ");
    assert_eq!(parent, "the cell's execute_request");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_allow_stdin_a_cell_reads_an_empty_line() {
    let mut kernel = Kernel::start().await;
    let request = ExecuteRequest {
        allow_stdin: false,
        ..ExecuteRequest::new(READS_A_NAME.into())
    };
    let execution = kernel.execute_with(request, STARTUP).await;
    assert_eq!(execution.reply_status(), ReplyStatus::Ok);
    assert!(
        execution.stdout().contains("hello !"),
        "{}",
        execution.stdout()
    );
}

/// Runs `code` (which must print `went on` after it reads a line) in a kernel holding
/// `kept = 41`, interrupts it at its first input request, and checks that the cell stopped there
/// as a KeyboardInterrupt with the variable kept. Returns the kernel for more.
async fn interrupted_while_waiting(code: &str) -> Kernel {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new(code.into())
    };
    let sent = kernel.send_shell(request).await;
    let asked = tokio::time::timeout(STARTUP, kernel.stdin.read())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        asked.content,
        JupyterMessageContent::InputRequest(_)
    ));
    kernel.send_control(InterruptRequest {}).await;
    let content = kernel.execute_reply_to(&sent, REPLY).await;
    let out = streamed(&kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await);
    assert_eq!(content.status, ReplyStatus::Error);
    assert_eq!(content.error.unwrap().ename, "KeyboardInterrupt");
    assert!(
        !out.contains("went on"),
        "the cell ran on past its read: {out}"
    );
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
    kernel
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_input_waits_stops_the_cell_as_keyboard_interrupt_and_keeps_variables() {
    interrupted_while_waiting(
        "let name = input(\"Name? \");\nprintln!(\"went on with {name:?}\");",
    )
    .await;
}

/// Sends a cell with allow_stdin, answers each `input_request` it makes with the next of
/// `answers`, and returns what the cell printed and, for each request, its prompt and whether
/// its parent was the cell's request (`"the cell's execute_request"`, or the parent's id).
async fn run_answering(
    kernel: &mut Kernel,
    code: &str,
    answers: &[&str],
) -> (String, Vec<(String, String)>) {
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new(code.into())
    };
    let sent = kernel.send_shell(request).await;
    let mut seen = Vec::new();
    for answer in answers {
        let asked = tokio::time::timeout(STARTUP, kernel.stdin.read())
            .await
            .unwrap()
            .unwrap();
        let JupyterMessageContent::InputRequest(input) = &asked.content else {
            panic!("{asked:?}")
        };
        assert!(!input.password);
        let parent = asked.parent_header.as_ref().unwrap().msg_id.clone();
        let parent = if parent == sent.header.msg_id {
            "the cell's execute_request".to_owned()
        } else {
            parent
        };
        seen.push((input.prompt.clone(), parent));
        let reply = InputReply {
            value: (*answer).into(),
            status: ReplyStatus::Ok,
            error: None,
        };
        kernel
            .stdin
            .send(JupyterMessage::new(reply, Some(&asked)))
            .await
            .unwrap();
    }
    let content = kernel.execute_reply_to(&sent, REPLY).await;
    assert_eq!(content.status, ReplyStatus::Ok, "{:?}", content.error);
    let out = streamed(&kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await);
    (out, seen)
}

const READS_TWO_LINES: &str = "let mut lines = String::new();\nfor _ in 0..2 {\n    std::io::stdin().read_line(&mut lines).unwrap();\n}\nprintln!(\"got {lines:?}\");";

#[tokio::test(flavor = "multi_thread")]
async fn a_read_of_std_io_stdin_asks_the_front_end_for_each_line() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let (out, asked) = run_answering(&mut kernel, READS_TWO_LINES, &["Ada", "Lin"]).await;
    assert!(out.contains(r#"got "Ada\nLin\n""#), "{out}");
    assert_eq!(asked.len(), 2);
    // The prelude's own input() is asked for once, not twice.
    let (out, _) = run_answering(&mut kernel, READS_A_NAME, &["Grace"]).await;
    assert!(out.contains("hello Grace!"), "{out}");
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(500), kernel.stdin.read())
            .await
            .is_err(),
        "a second input_request for one input()"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_a_stdin_read_waits_stops_the_cell_and_stdin_works_again_after() {
    let mut kernel = interrupted_while_waiting(
        "let mut s = String::new();\nstd::io::stdin().read_line(&mut s).unwrap();\nprintln!(\"went on with {s:?}\");",
    )
    .await;
    let (out, _) = run_answering(&mut kernel, READS_TWO_LINES, &["x", "y"]).await;
    assert!(out.contains(r#"got "x\ny\n""#), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_with_line_breaks_is_data_never_a_command() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    // Before: the line after the break was read as the evaluation process's next command.
    let marker = std::env::temp_dir().join("no-such-library.so");
    let hostile = format!("abc\nLOAD_AND_RUN {} run_me\nxyz", marker.display());
    // As ipykernel: input() returns the answer as it came; a read of stdin takes it line by line.
    let (out, _) = run_answering(
        &mut kernel,
        "let answer = input(\"q? \");\nprintln!(\"got {answer:?}\");",
        &[hostile.as_str()],
    )
    .await;
    assert!(out.contains(&format!("got {hostile:?}")), "{out}");
    let (out, asked) = run_answering(
        &mut kernel,
        "let mut lines = Vec::new();\nfor _ in 0..3 {\n    let mut line = String::new();\n    std::io::stdin().read_line(&mut line).unwrap();\n    lines.push(line);\n}\nprintln!(\"got {lines:?}\");",
        &[hostile.as_str()],
    )
    .await;
    let lines: Vec<String> = hostile.lines().map(|l| format!("{l}\n")).collect();
    assert!(out.contains(&format!("got {lines:?}")), "{out}");
    assert_eq!(asked.len(), 1, "one answer held the three lines");
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42"),
        "the evaluation process and its variables survived"
    );
}

/// No input_request arrives within half a second.
async fn assert_no_input_request(kernel: &mut Kernel, why: &str) {
    let more =
        tokio::time::timeout(std::time::Duration::from_millis(500), kernel.stdin.read()).await;
    assert!(more.is_err(), "{why}: {more:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_read_asks_once_and_the_next_cells_input_gets_its_own_answer() {
    // Before: one interrupt at a read_line opened a second input box, and the next cell's
    // input() then failed.
    let mut kernel = interrupted_while_waiting(
        "let mut s = String::new();\nlet _ = std::io::stdin().read_line(&mut s);\nprintln!(\"went on with {s:?}\");",
    )
    .await;
    assert_no_input_request(&mut kernel, "a second request for the interrupted read").await;
    let (out, asked) = run_answering(&mut kernel, READS_A_NAME, &["Ada"]).await;
    assert!(out.contains("hello Ada!"), "{out}");
    assert_eq!(asked.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_nobody_asked_for_is_dropped_not_given_to_the_next_input() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let unasked = InputReply {
        value: "stale".into(),
        status: ReplyStatus::Ok,
        error: None,
    };
    kernel
        .stdin
        .send(JupyterMessage::new(unasked, None))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (out, _) = run_answering(&mut kernel, READS_A_NAME, &["fresh"]).await;
    assert!(out.contains("hello fresh!"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_to_string_asks_one_line_at_a_time_until_an_empty_answer() {
    // Before: 84 input boxes in 20 s.
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let (out, asked) = run_answering(
        &mut kernel,
        "use std::io::Read;\nlet mut all = String::new();\nstd::io::stdin().read_to_string(&mut all).unwrap();\nprintln!(\"got {all:?}\");",
        &["a", "b", ""],
    )
    .await;
    assert!(out.contains(r#"got "a\nb\n""#), "{out}");
    assert_eq!(asked.len(), 3);
    assert_no_input_request(&mut kernel, "a request after the end of input").await;
}

/// Every way to read fd 0 that is not the cell's own read (a duplicate, `/dev/stdin`, a child
/// process, a thread or a child still reading after its cell) ends at once with end-of-file and
/// asks nothing, as in ipykernel. Before, each hung the cell or a later one, or took the kernel's
/// next command.
#[tokio::test(flavor = "multi_thread")]
async fn other_reads_of_fd_0_get_end_of_file_and_nothing_hangs() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new(
            r#"use std::io::Read;
use std::os::fd::AsFd;
let mut copy = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().unwrap());
let mut text = String::new();
println!("dup: {:?}", copy.read_to_string(&mut text).map(|_| text.clone()));
text.clear();
println!("dev: {:?}", std::fs::File::open("/dev/stdin").unwrap().read_to_string(&mut text).map(|_| text.clone()));
let head = std::process::Command::new("head").args(["-c", "5"]).output().unwrap();
println!("head: {:?} {:?}", head.status.success(), String::from_utf8_lossy(&head.stdout));
let cat = std::process::Command::new("sh").args(["-c", "cat; echo cat ended"]).spawn().unwrap();
std::thread::spawn(|| {
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut line = String::new();
    let read = std::io::stdin().read_line(&mut line);
    println!("late: {read:?} {line:?}");
});
std::mem::forget(cat);"#
                .into(),
        )
    };
    let execution = kernel.execute_with(request, STARTUP).await;
    assert_eq!(execution.reply_status(), ReplyStatus::Ok);
    let out = execution.stdout();
    for line in ["dup: Ok(\"\")", "dev: Ok(\"\")", "head: true \"\""] {
        assert!(out.contains(line), "{line} in {out}");
    }
    assert_no_input_request(&mut kernel, "a read that is not the cell's asked").await;
    let next = kernel
        .run_ok("std::thread::sleep(std::time::Duration::from_millis(500));\nkept + 1")
        .await;
    assert_eq!(next.result().as_deref(), Some("42"));
    let all = format!("{out}{}", next.stdout());
    assert!(all.contains("cat ended"), "{all}");
    assert!(all.contains("late: Ok(0) \"\""), "{all}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_that_closes_or_replaces_fd_0_leaves_stdin_working() {
    // Before: the evaluation process ended after such a cell, with every variable.
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    kernel
        .run_ok(
            "use std::os::fd::FromRawFd;\ndrop(unsafe { std::os::fd::OwnedFd::from_raw_fd(0) });",
        )
        .await;
    let (out, _) = run_answering(&mut kernel, READS_TWO_LINES, &["x", "y"]).await;
    assert!(out.contains(r#"got "x\ny\n""#), "{out}");
    // A file opened onto fd 0 is read as the file within its cell.
    let file = std::env::temp_dir().join(format!("tchbook-stdin-{}.txt", std::process::id()));
    std::fs::write(&file, "from the file\n").unwrap();
    let code = format!(
        "use std::os::fd::{{AsRawFd, FromRawFd}};\ndrop(unsafe {{ std::os::fd::OwnedFd::from_raw_fd(0) }});\n\
         let file = std::fs::File::open({file:?}).unwrap();\nassert_eq!(file.as_raw_fd(), 0);\nstd::mem::forget(file);\n\
         let mut line = String::new();\nstd::io::stdin().read_line(&mut line).unwrap();\nprintln!(\"read {{line:?}}\");"
    );
    let read = kernel.run_ok(&code).await;
    assert!(
        read.stdout().contains(r#"read "from the file\n""#),
        "{}",
        read.stdout()
    );
    let _ = std::fs::remove_file(&file);
    let (out, _) = run_answering(&mut kernel, READS_TWO_LINES, &["p", "q"]).await;
    assert!(out.contains(r#"got "p\nq\n""#), "{out}");
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
}
