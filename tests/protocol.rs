//! Requests other than execute, and what the transport does with bad input.

use crate::support::{Kernel, REPLY};
use jupyter_protocol::{
    CommId, CommInfoRequest, CommOpen, CompleteRequest, HistoryRequest, IsCompleteReplyStatus,
    IsCompleteRequest, JupyterMessageContent, UnknownMessage,
};
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

#[tokio::test(flavor = "multi_thread")]
async fn kernel_info_describes_rust_and_names_kernel_rustc_torch_and_device() {
    let mut kernel = Kernel::start().await;
    let sent = kernel
        .send_shell(jupyter_protocol::KernelInfoRequest {})
        .await;
    let reply = kernel.shell_reply(REPLY).await;
    let JupyterMessageContent::KernelInfoReply(info) = &reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(info.protocol_version, "5.3");
    assert_eq!(info.implementation, "tchbook");
    assert_eq!(info.language_info.name, "rust");
    assert!(
        info.language_info.version.starts_with("1."),
        "{:?}",
        info.language_info
    );
    assert_eq!(info.language_info.mimetype.as_deref(), Some("text/rust"));
    assert_eq!(info.language_info.file_extension.as_deref(), Some(".rs"));
    assert_eq!(info.language_info.pygments_lexer.as_deref(), Some("rust"));
    assert!(info.banner.contains("tchbook"), "{}", info.banner);
    assert!(info.banner.contains("rustc 1."), "{}", info.banner);
    assert!(info.banner.contains("torch 2."), "{}", info.banner);
    assert!(info.banner.contains("device"), "{}", info.banner);
    assert!(!info.help_links.is_empty());
    // busy → idle around it on iopub.
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let types: Vec<_> = iopub.iter().map(|m| m.header.msg_type.as_str()).collect();
    assert_eq!(types, ["status", "status"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_echoes() {
    let mut kernel = Kernel::start().await;
    tokio::time::timeout(REPLY, kernel.heartbeat.single_heartbeat())
        .await
        .expect("no heartbeat echo")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn is_complete_tells_incomplete_complete_and_invalid_apart() {
    let mut kernel = Kernel::start().await;
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
    }
}

/// Signs nothing correctly: a DEALER that talks to shell with its own frames.
async fn raw_shell(kernel: &Kernel) -> zeromq::DealerSocket {
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
async fn wrong_signature_is_dropped_and_logged() {
    let mut kernel = Kernel::start().await;
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
        tokio::time::timeout(Duration::from_secs(2), raw.recv())
            .await
            .is_err(),
        "the kernel answered a forged message"
    );
    // Still serving signed requests.
    kernel.kernel_info().await;
    assert!(
        kernel.log().contains("wrong HMAC signature"),
        "{}",
        kernel.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_frames_are_survived() {
    let mut kernel = Kernel::start().await;
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
    tokio::time::sleep(Duration::from_millis(300)).await;
    kernel.kernel_info().await;
    tokio::time::timeout(REPLY, kernel.heartbeat.single_heartbeat())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_request_gets_an_error_reply() {
    let mut kernel = Kernel::start().await;
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
}

#[tokio::test(flavor = "multi_thread")]
async fn comm_open_for_an_unknown_target_is_closed_and_comm_info_is_empty() {
    let mut kernel = Kernel::start().await;
    let sent = kernel
        .send_shell(CommOpen {
            comm_id: CommId("c-1".into()),
            target_name: "no.such.target".into(),
            data: serde_json::Map::new(),
            target_module: None,
        })
        .await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let close = iopub
        .iter()
        .find_map(|m| match &m.content {
            JupyterMessageContent::CommClose(close) => Some(close.comm_id.0.clone()),
            _ => None,
        })
        .expect("no comm_close");
    assert_eq!(close, "c-1");
    let reply = kernel.request(CommInfoRequest { target_name: None }).await;
    let JupyterMessageContent::CommInfoReply(info) = reply.content else {
        panic!("{reply:?}")
    };
    assert!(info.comms.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn history_answers_tail_range_and_search_over_this_session() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let a = 40;").await;
    kernel.run_ok("a + 2").await;
    kernel.run_ok("let b = a;").await;
    let reply = kernel
        .request(HistoryRequest::Tail {
            n: 2,
            output: false,
            raw: true,
        })
        .await;
    let JupyterMessageContent::HistoryReply(history) = reply.content else {
        panic!("{reply:?}")
    };
    let inputs: Vec<String> = history
        .history
        .iter()
        .map(|e| match e {
            jupyter_protocol::HistoryEntry::Input(_, _, code) => code.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(inputs, ["a + 2", "let b = a;"]);

    let reply = kernel
        .request(HistoryRequest::Search {
            pattern: "let *".into(),
            unique: false,
            output: false,
            raw: true,
            n: 10,
        })
        .await;
    let JupyterMessageContent::HistoryReply(history) = reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(history.history.len(), 2);

    let reply = kernel
        .request(HistoryRequest::Range {
            session: Some(0),
            start: 2,
            stop: 3,
            output: true,
            raw: true,
        })
        .await;
    let JupyterMessageContent::HistoryReply(history) = reply.content else {
        panic!("{reply:?}")
    };
    match &history.history[..] {
        [jupyter_protocol::HistoryEntry::InputOutput(_, 2, (input, output))] => {
            assert_eq!(input, "a + 2");
            assert_eq!(output, "42");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_offsets_count_code_points_around_non_ascii_text() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("fn compute_thing(x: i32) -> i32 { x }\nlet données_é = 1;")
        .await;
    // The cursor counts code points: 日 and é are several bytes but one code point each.
    let code = "let s = \"日本\"; let t = données_é + compute_th";
    let cursor = code.chars().count();
    let reply = kernel
        .request(CompleteRequest {
            code: code.into(),
            cursor_pos: cursor,
        })
        .await;
    let JupyterMessageContent::CompleteReply(reply) = reply.content else {
        panic!("{reply:?}")
    };
    assert!(
        reply.matches.iter().any(|m| m == "compute_thing"),
        "{:?}",
        reply.matches
    );
    assert!(
        reply.matches.iter().all(|m| !m.contains('(')),
        "bare names: {:?}",
        reply.matches
    );
    assert_eq!(reply.cursor_end, cursor);
    assert_eq!(
        reply.cursor_start,
        cursor - "compute_th".len(),
        "the replaced text is `compute_th`"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_shows_the_type_of_a_variable() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let numbers: Vec<u32> = vec![1, 2];").await;
    let code = "numbers";
    let reply = kernel.inspect(code, 3).await;
    assert!(reply.found, "{reply:?}");
    let text = serde_json::to_string(&reply.data).unwrap();
    assert!(text.contains("Vec<u32>"), "{text}");
}
