//! Control on the fake engine: interrupts (while idle, while a cell runs, while it reads
//! input), input_request on stdin, and shutdown on control and shell.

use super::{SOON, run, types};
use crate::fake_engine::{self, FakeKernel};
use jupyter_protocol::{
    ExecuteRequest, InputReply, InterruptRequest, JupyterMessage, JupyterMessageContent,
    KernelInfoRequest, ReplyStatus, ShutdownRequest,
};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_request_while_idle_is_answered_and_interrupts_nothing() {
    let mut kernel = FakeKernel::start().await;
    let sent = kernel.send_control(InterruptRequest {}).await;
    let reply = kernel.control_reply(SOON).await;
    assert_eq!(reply.header.msg_type, "interrupt_reply");
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"]);
    assert_eq!(kernel.interrupter.interrupts(), 0);
    assert!(fake_engine::log().contains("interrupt requested while no cell runs"));
    // The next cell is not interrupted by it.
    assert_eq!(
        run(&mut kernel, "value 1").await.result().as_deref(),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_request_on_control_ends_the_running_cell_with_keyboard_interrupt() {
    let mut kernel = FakeKernel::start().await;
    let sent = kernel
        .send_shell(ExecuteRequest::new("print started\nwait".into()))
        .await;
    wait_for_stdout(&mut kernel, "started").await;
    // Control is served while the shell is busy with the cell.
    kernel.send_control(KernelInfoRequest {}).await;
    kernel.control_reply(SOON).await;
    kernel.send_control(InterruptRequest {}).await;
    assert_eq!(
        kernel.control_reply(SOON).await.header.msg_type,
        "interrupt_reply"
    );
    let content = kernel.execute_reply_to(&sent, SOON).await;
    assert_eq!(content.status, ReplyStatus::Error);
    let error = content.error.unwrap();
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert_eq!(error.evalue, "interrupted by the user");
    assert_eq!(kernel.interrupter.interrupts(), 1);
    assert_eq!(kernel.interrupter.kills(), 0);
}

async fn wait_for_stdout(kernel: &mut FakeKernel, text: &str) {
    loop {
        let message = kernel.next_iopub(SOON).await;
        if let JupyterMessageContent::StreamContent(s) = &message.content
            && s.text.contains(text)
        {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn input_request_carries_prompt_and_parent_and_its_reply_reaches_the_cell() {
    let mut kernel = FakeKernel::start().await;
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new("print asking\ninput password: ".into())
    };
    let sent = kernel.send_shell(request).await;
    let asked = tokio::time::timeout(SOON, kernel.stdin.read())
        .await
        .unwrap()
        .unwrap();
    let JupyterMessageContent::InputRequest(input) = &asked.content else {
        panic!("{asked:?}")
    };
    assert_eq!(input.prompt, "password: ");
    assert!(input.password);
    assert_eq!(
        asked.parent_header.as_ref().unwrap().msg_id,
        sent.header.msg_id
    );
    let answer = InputReply {
        value: "Ada".into(),
        status: ReplyStatus::Ok,
        error: None,
    };
    kernel
        .stdin
        .send(JupyterMessage::new(answer, Some(&asked)))
        .await
        .unwrap();
    kernel.execute_reply_to(&sent, SOON).await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    // What the cell printed before asking was flushed before the input_request.
    let streams: Vec<String> = iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(streams, ["asking\n", "read: Ada\n"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_allow_stdin_a_cell_reads_an_empty_line_and_nothing_is_asked() {
    let mut kernel = FakeKernel::start().await;
    let request = ExecuteRequest {
        allow_stdin: false,
        ..ExecuteRequest::new("input Name?".into())
    };
    let execution = kernel.execute_with(request, SOON).await;
    assert_eq!(execution.stdout(), "read: \n");
    assert!(
        tokio::time::timeout(Duration::from_millis(100), kernel.stdin.read())
            .await
            .is_err(),
        "an input_request was sent"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_a_cell_waits_for_input_gives_it_an_empty_line() {
    let mut kernel = FakeKernel::start().await;
    let request = ExecuteRequest {
        allow_stdin: true,
        ..ExecuteRequest::new("input Name?".into())
    };
    let sent = kernel.send_shell(request).await;
    tokio::time::timeout(SOON, kernel.stdin.read())
        .await
        .unwrap()
        .unwrap();
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(SOON).await;
    kernel.execute_reply_to(&sent, SOON).await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    assert!(
        iopub.iter().any(|m| matches!(&m.content,
            JupyterMessageContent::StreamContent(s) if s.text == "read: \n")),
        "{iopub:?}"
    );
    assert_eq!(kernel.interrupter.interrupts(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_request_on_control_replies_kills_the_engine_and_ends_the_kernel() {
    let mut kernel = FakeKernel::start().await;
    kernel.send_control(ShutdownRequest { restart: true }).await;
    let reply = kernel.control_reply(SOON).await;
    let JupyterMessageContent::ShutdownReply(content) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(content.restart);
    let restart = tokio::time::timeout(SOON, &mut kernel.served)
        .await
        .expect("the kernel did not end after shutdown_request")
        .unwrap()
        .unwrap();
    assert!(restart);
    assert!(kernel.interrupter.kills() >= 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_request_on_shell_is_answered_too() {
    let mut kernel = FakeKernel::start().await;
    let reply = kernel.request(ShutdownRequest { restart: false }).await;
    let JupyterMessageContent::ShutdownReply(content) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(!content.restart);
    let restart = tokio::time::timeout(SOON, &mut kernel.served)
        .await
        .expect("the kernel did not end after shutdown_request")
        .unwrap()
        .unwrap();
    assert!(!restart);
}
