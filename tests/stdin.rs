//! input_request on stdin when a cell reads input.

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{
    ExecuteRequest, InputReply, JupyterMessage, JupyterMessageContent, ReplyStatus,
};

const READS_A_NAME: &str = "let name = input(\"Name? \");\nprintln!(\"hello {}!\", name.trim());";

#[tokio::test(flavor = "multi_thread")]
async fn input_request_reaches_the_front_end_and_its_reply_reaches_the_cell() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new(READS_A_NAME.into())
    };
    let sent = kernel.send_shell(request).await;
    let asked = tokio::time::timeout(STARTUP, kernel.stdin.read())
        .await
        .unwrap()
        .unwrap();
    let JupyterMessageContent::InputRequest(input) = &asked.content else {
        panic!("{asked:?}")
    };
    assert_eq!(input.prompt, "Name? ");
    assert!(!input.password);
    assert_eq!(
        asked.parent_header.as_ref().unwrap().msg_id,
        sent.header.msg_id
    );
    let answer = JupyterMessage::new(
        InputReply {
            value: "Ada".into(),
            status: ReplyStatus::Ok,
            error: None,
        },
        Some(&asked),
    );
    kernel.stdin.send(answer).await.unwrap();
    let reply = kernel.shell_reply(REPLY).await;
    let JupyterMessageContent::ExecuteReply(content) = &reply.content else {
        panic!()
    };
    assert_eq!(content.status, ReplyStatus::Ok);
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let out: String = iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert!(out.contains("hello Ada!"), "{out}");
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
