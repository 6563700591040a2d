//! input_request on stdin when a cell reads input.

use crate::support::{Kernel, REPLY, STARTUP};
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

/// What a cell printed, from its iopub messages.
fn printed(iopub: &[JupyterMessage]) -> String {
    iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect()
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
    let out = printed(&kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await);
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
    let out = printed(&kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await);
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
    for code in [
        "let answer = input(\"q? \");\nprintln!(\"got {answer:?}\");",
        "let mut answer = String::new();\nstd::io::stdin().read_line(&mut answer).unwrap();\nprintln!(\"got {answer:?}\");",
    ] {
        let (out, _) = run_answering(&mut kernel, code, &[hostile.as_str()]).await;
        let expected = format!("LOAD_AND_RUN {} run_me xyz", marker.display());
        assert!(
            out.contains("got \"abc ") && out.contains(&expected),
            "{code}: {out}"
        );
        assert_eq!(
            kernel.run_ok("kept + 1").await.result().as_deref(),
            Some("42"),
            "the evaluation process and its variables survived"
        );
    }
}
