//! The Jupyter protocol as a client sees it, on the kernel served in-process with a fake
//! engine (`fake_engine`): real sockets on loopback and the real client, no evcxr, so each test
//! takes milliseconds. What only the real engine can show (values, compile errors, restarts of
//! the evaluation process) is tested in `execute`, `interrupt`, `stdin` and `lifecycle`.
//!
//! This file: the transport (heartbeat, signatures, bad frames) and the requests other than
//! execute; `execute`: cells, their output and stop_on_error; `control`: interrupts, stdin and
//! shutdown; `panels`: JupyterLab's Variables and Kernel Usage panels (`debug_request`,
//! `usage_request`); `widgets`: comms, ipywidgets' transport.

mod control;
mod execute;
mod panels;
mod widgets;

use crate::completion::complete;
use crate::fake_engine::{self, FakeKernel};
use crate::support::Execution;
use jupyter_protocol::{
    CommId, CommInfoRequest, CommOpen, ExecuteRequest, HistoryEntry, HistoryRequest,
    IsCompleteReplyStatus, IsCompleteRequest, JupyterMessage, JupyterMessageContent,
    KernelInfoRequest, ReplyStatus, UnknownMessage,
};
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// How long a test waits for something the fake answers at once.
pub(super) const SOON: Duration = Duration::from_secs(10);

pub(super) fn types(messages: &[JupyterMessage]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m.header.msg_type.as_str())
        .collect()
}

pub(super) fn reply_status(reply: &JupyterMessage) -> ReplyStatus {
    match &reply.content {
        JupyterMessageContent::ExecuteReply(reply) => reply.status.clone(),
        other => panic!("not an execute_reply: {other:?}"),
    }
}

pub(super) async fn run(kernel: &mut FakeKernel, code: &str) -> Execution {
    kernel
        .execute_with(ExecuteRequest::new(code.into()), SOON)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn kernel_info_describes_rust_and_names_rustc_torch_and_device_on_shell_and_control() {
    let mut kernel = FakeKernel::start().await;
    let sent = kernel.send_shell(KernelInfoRequest {}).await;
    let reply = kernel.shell_reply(SOON).await;
    let JupyterMessageContent::KernelInfoReply(info) = &reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(info.protocol_version, "5.3");
    assert_eq!(info.implementation, "tchbook");
    assert_eq!(info.language_info.name, "rust");
    assert_eq!(info.language_info.version, "1.95.0");
    assert_eq!(info.language_info.mimetype.as_deref(), Some("text/rust"));
    assert_eq!(info.language_info.file_extension.as_deref(), Some(".rs"));
    assert_eq!(info.language_info.pygments_lexer.as_deref(), Some("rust"));
    for part in [
        "tchbook",
        "rustc 1.95.0",
        "torch 2.11.0 (libtorch at /opt/torch)",
    ] {
        assert!(info.banner.contains(part), "{part}: {}", info.banner);
    }
    assert!(!info.help_links.is_empty());
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"]);

    // Once the engine has started, the banner names the device it found.
    run(&mut kernel, "print started").await;
    kernel.send_control(KernelInfoRequest {}).await;
    let reply = kernel.control_reply(SOON).await;
    let JupyterMessageContent::KernelInfoReply(info) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(
        info.banner.contains("device: cpu (no CUDA device visible)"),
        "{}",
        info.banner
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_echoes() {
    let mut kernel = FakeKernel::start().await;
    tokio::time::timeout(SOON, kernel.heartbeat.single_heartbeat())
        .await
        .expect("no heartbeat echo")
        .unwrap();
}

/// Signs nothing correctly: a DEALER that talks to shell with its own frames.
async fn raw_shell(kernel: &FakeKernel) -> zeromq::DealerSocket {
    let mut socket = zeromq::DealerSocket::new();
    socket.connect(&kernel.info.shell_url()).await.unwrap();
    socket
}

pub(crate) fn frames(parts: Vec<Vec<u8>>) -> ZmqMessage {
    ZmqMessage::try_from(
        parts
            .into_iter()
            .map(bytes::Bytes::from)
            .collect::<Vec<_>>(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_signature_is_dropped_and_logged_and_the_kernel_serves_on() {
    let mut kernel = FakeKernel::start().await;
    let mut raw = raw_shell(&kernel).await;
    let header = serde_json::json!({
        "msg_id": "forged-1", "username": "x", "session": "s", "date": "2026-01-01T00:00:00Z",
        "msg_type": "kernel_info_request", "version": "5.3"
    });
    raw.send(frames(vec![
        b"<IDS|MSG>".to_vec(),
        b"0000000000000000000000000000000000000000000000000000000000000000".to_vec(),
        header.to_string().into_bytes(),
        b"{}".to_vec(),
        b"{}".to_vec(),
        b"{}".to_vec(),
    ]))
    .await
    .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), raw.recv())
            .await
            .is_err(),
        "the kernel answered a forged message"
    );
    // Still serving signed requests.
    kernel.request(KernelInfoRequest {}).await;
    assert!(
        fake_engine::log().contains("shell: dropped a message with a wrong HMAC signature"),
        "{}",
        fake_engine::log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_execute_request_is_dropped_and_its_cell_runs_once() {
    let mut kernel = FakeKernel::start().await;
    let first = run(&mut kernel, "print once").await;
    assert_eq!(first.execution_count(), 1);
    // The same message again: the same bytes, so the same valid signature, as someone who
    // captured it on the network would send it.
    kernel.shell.send(first.request.clone()).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), kernel.shell.read())
            .await
            .is_err(),
        "the kernel answered a replayed request"
    );
    assert_eq!(kernel.record.cells(), ["print once"]);
    assert!(
        fake_engine::log().contains("shell: dropped a replayed message"),
        "{}",
        fake_engine::log()
    );
    // A new request is served, and counted as the second execution.
    assert_eq!(run(&mut kernel, "print twice").await.execution_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_frames_are_survived() {
    let mut kernel = FakeKernel::start().await;
    let mut raw = raw_shell(&kernel).await;
    for parts in [
        vec![b"hello".to_vec()],
        vec![b"<IDS|MSG>".to_vec()],
        vec![b"<IDS|MSG>".to_vec(), b"sig".to_vec(), b"{".to_vec()],
        vec![
            vec![0xff, 0xfe, 0x00],
            b"<IDS|MSG>".to_vec(),
            b"zz".to_vec(),
            b"[]".to_vec(),
            b"1".to_vec(),
            b"2".to_vec(),
            b"3".to_vec(),
        ],
    ] {
        raw.send(frames(parts)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    kernel.request(KernelInfoRequest {}).await;
    tokio::time::timeout(SOON, kernel.heartbeat.single_heartbeat())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_request_gets_an_error_reply() {
    let mut kernel = FakeKernel::start().await;
    let reply = kernel
        .request(UnknownMessage {
            msg_type: "frobnicate_request".into(),
            content: serde_json::json!({}),
        })
        .await;
    assert_eq!(reply.header.msg_type, "frobnicate_reply");
    let JupyterMessageContent::UnknownMessage(content) = reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(content.content["status"], "error");
    assert_eq!(content.content["ename"], "UnknownMessageType");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_whose_content_does_not_fit_its_type_gets_an_error_reply_and_runs_nothing() {
    let mut kernel = FakeKernel::start().await;
    let reply = kernel
        .request(UnknownMessage {
            msg_type: "execute_request".into(),
            content: serde_json::json!({"code": 5}),
        })
        .await;
    let JupyterMessageContent::ExecuteReply(content) = reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(content.status, ReplyStatus::Error);
    let error = content.error.unwrap();
    assert_eq!(error.ename, "UnknownMessageType");
    assert!(
        error.evalue.starts_with(
            "tchbook cannot handle this execute_request: its type is unknown, or its content"
        ),
        "{}",
        error.evalue
    );
    assert!(kernel.record.cells().is_empty());
    assert_eq!(run(&mut kernel, "value 1").await.execution_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn comm_open_for_an_unknown_target_is_closed_and_comm_info_is_empty() {
    let mut kernel = FakeKernel::start().await;
    let sent = kernel
        .send_shell(CommOpen {
            comm_id: CommId("c-1".into()),
            target_name: "no.such.target".into(),
            data: serde_json::Map::new(),
            target_module: None,
        })
        .await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "comm_close", "status"]);
    let JupyterMessageContent::CommClose(close) = &iopub[1].content else {
        panic!("{iopub:?}")
    };
    assert_eq!(close.comm_id.0, "c-1");
    let reply = kernel.request(CommInfoRequest { target_name: None }).await;
    let JupyterMessageContent::CommInfoReply(info) = reply.content else {
        panic!("{reply:?}")
    };
    assert!(info.comms.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn is_complete_tells_incomplete_complete_and_invalid_apart() {
    let mut kernel = FakeKernel::start().await;
    for (code, expected) in [
        ("fn f() {", IsCompleteReplyStatus::Incomplete),
        ("let x = 5;", IsCompleteReplyStatus::Complete),
        ("let = ;", IsCompleteReplyStatus::Invalid),
        ("let s = \"open", IsCompleteReplyStatus::Incomplete),
        (":dep rand", IsCompleteReplyStatus::Complete),
    ] {
        let reply = kernel
            .request(IsCompleteRequest { code: code.into() })
            .await;
        let JupyterMessageContent::IsCompleteReply(reply) = reply.content else {
            panic!("{reply:?}")
        };
        assert_eq!(reply.status, expected, "{code}");
        if code == "fn f() {" {
            // The console indents the next line inside the open block.
            assert_eq!(reply.indent, "    ");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn history_answers_tail_range_and_search_over_this_session() {
    let mut kernel = FakeKernel::start().await;
    run(&mut kernel, "print a").await;
    run(&mut kernel, "value 42").await;
    run(&mut kernel, "print b").await;
    let inputs = |reply: JupyterMessage| -> Vec<HistoryEntry> {
        let JupyterMessageContent::HistoryReply(history) = reply.content else {
            panic!("{reply:?}")
        };
        history.history
    };
    let tail = inputs(
        kernel
            .request(HistoryRequest::Tail {
                n: 2,
                output: false,
                raw: true,
            })
            .await,
    );
    let codes: Vec<&str> = tail
        .iter()
        .map(|e| match e {
            HistoryEntry::Input(_, _, code) => code.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(codes, ["value 42", "print b"]);
    let search = HistoryRequest::Search {
        pattern: "print *".into(),
        unique: false,
        output: false,
        raw: true,
        n: 10,
    };
    assert_eq!(inputs(kernel.request(search).await).len(), 2);
    let range = HistoryRequest::Range {
        session: Some(0),
        start: 2,
        stop: 3,
        output: true,
        raw: true,
    };
    match &inputs(kernel.request(range).await)[..] {
        [HistoryEntry::InputOutput(_, 2, (input, output))] => {
            assert_eq!((input.as_str(), output.as_str()), ("value 42", "42"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_offsets_count_code_points_around_non_ascii_text() {
    let mut kernel = FakeKernel::start().await;
    let code = "let s = \"日本\"; let t = données_é + compute_th";
    let cursor = code.chars().count();
    let reply = complete(&mut kernel, code).await;
    assert_eq!(reply.matches, ["compute_thing"]);
    assert_eq!(reply.cursor_end, cursor);
    assert_eq!(reply.cursor_start, cursor - "compute_th".len());
    assert_eq!(
        reply.metadata["_jupyter_types_experimental"][0]["type"],
        "function"
    );
}
