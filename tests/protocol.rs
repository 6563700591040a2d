//! The Jupyter protocol as a client sees it, on the kernel served in-process with a fake
//! engine (`fake_engine`): real sockets on loopback and the real client, no evcxr, so each test
//! takes milliseconds. What only the real engine can show (values, compile errors, restarts of
//! the evaluation process) is tested in `execute`, `interrupt`, `stdin` and `lifecycle`.

use crate::completion::complete;
use crate::fake_engine::{self, FakeKernel};
use crate::support::Execution;
use jupyter_protocol::{
    CommId, CommInfoRequest, CommOpen, ExecuteRequest, HistoryEntry, HistoryRequest, InputReply,
    InterruptRequest, IsCompleteReplyStatus, IsCompleteRequest, JupyterMessage,
    JupyterMessageContent, KernelInfoRequest, ReplyStatus, ShutdownRequest, UnknownMessage,
};
use std::time::Duration;
use tchbook_wire::{Bundle, Message};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// How long a test waits for something the fake answers at once.
const SOON: Duration = Duration::from_secs(10);

fn types(messages: &[JupyterMessage]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m.header.msg_type.as_str())
        .collect()
}

fn reply_status(reply: &JupyterMessage) -> ReplyStatus {
    match &reply.content {
        JupyterMessageContent::ExecuteReply(reply) => reply.status.clone(),
        other => panic!("not an execute_reply: {other:?}"),
    }
}

async fn run(kernel: &mut FakeKernel, code: &str) -> Execution {
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
    assert_eq!(error.evalue, "tchbook does not handle execute_request");
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
async fn execute_publishes_busy_input_outputs_result_reply_then_idle() {
    let mut kernel = FakeKernel::start().await;
    let execution = run(&mut kernel, "print hello\nvalue 2").await;
    assert_eq!(
        execution.types(),
        [
            "status",
            "execute_input",
            "stream",
            "execute_result",
            "status"
        ]
    );
    assert_eq!(execution.stdout(), "hello\n");
    assert_eq!(execution.result().as_deref(), Some("2"));
    assert_eq!(execution.execution_count(), 1);
    // The reply came before idle: idle was the last message, read after the reply.
    kernel.assert_iopub_quiet(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn output_keeps_its_order_with_text_batched_between_display_messages() {
    let mut kernel = FakeKernel::start().await;
    let plain = |text: &str| Bundle::from_iter([("text/plain".to_owned(), text.into())]);
    let display = Message::display(plain("card"), Some("d1".into())).to_line();
    let update = Message::update(plain("card 2"), "d1".into()).to_line();
    let clear = Message::Clear { wait: true }.to_line();
    let (display, update, clear) = (display.trim_end(), update.trim_end(), clear.trim_end());
    let code = format!(
        "print one\nprint two\neprint oops\nprint {display}\nprint three\nprint {update}\n\
         print {clear}\nprint TCHBOOK_DISPLAY {{not json\nthread-panic worker died"
    );
    let execution = run(&mut kernel, &code).await;
    assert_eq!(
        execution.types(),
        [
            "status",
            "execute_input",
            "stream",
            "stream",
            "display_data",
            "stream",
            "update_display_data",
            "clear_output",
            "stream",
            "stream",
            "status"
        ],
        "{:?}",
        execution.iopub
    );
    let texts: Vec<String> = execution
        .iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    // A line that only looks like the protocol is shown, and a panic on another thread is
    // stderr text that does not fail the cell.
    assert_eq!(
        texts,
        [
            "one\ntwo\n",
            "oops\n",
            "three\n",
            "TCHBOOK_DISPLAY {not json\n",
            "thread 'worker' panicked at src/lib.rs:3:5:\nworker died\n"
        ]
    );
    assert_eq!(reply_status(&execution.reply), ReplyStatus::Ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn execution_count_starts_at_one_and_counts_only_non_silent_requests() {
    let mut kernel = FakeKernel::start().await;
    assert_eq!(run(&mut kernel, "value 1").await.execution_count(), 1);
    let silent = ExecuteRequest {
        silent: true,
        store_history: false,
        ..ExecuteRequest::new("value 2".into())
    };
    let execution = kernel.execute_with(silent, SOON).await;
    assert_eq!(execution.execution_count(), 1);
    assert_eq!(execution.types(), ["status", "status"]);
    assert_eq!(run(&mut kernel, "value 3").await.execution_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_queued_executes_are_answered_in_order_with_no_output_after_idle() {
    let mut kernel = FakeKernel::start().await;
    let mut sent = Vec::new();
    for i in 0..200 {
        let code = if i % 2 == 0 {
            format!("print cell {i}")
        } else {
            format!("value {i}")
        };
        sent.push(kernel.send_shell(ExecuteRequest::new(code)).await);
    }
    for (i, request) in sent.iter().enumerate() {
        let reply = kernel.shell_reply(SOON).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            request.header.msg_id,
            "reply {i} out of order"
        );
        assert_eq!(reply_status(&reply), ReplyStatus::Ok, "cell {i}");
    }
    for (i, request) in sent.iter().enumerate() {
        let iopub = kernel.iopub_until_idle(&request.header.msg_id, SOON).await;
        let output = if i % 2 == 0 {
            "stream"
        } else {
            "execute_result"
        };
        assert_eq!(
            types(&iopub),
            ["status", "execute_input", output, "status"],
            "cell {i}"
        );
    }
    kernel.assert_iopub_quiet(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_on_error_aborts_executes_queued_behind_a_failure_and_they_never_run() {
    let mut kernel = FakeKernel::start().await;
    let failing = kernel
        .send_shell(ExecuteRequest::new("sleep 50\npanic stop here".into()))
        .await;
    let queued_a = kernel
        .send_shell(ExecuteRequest::new("print a".into()))
        .await;
    let info = kernel.send_shell(KernelInfoRequest {}).await;
    let queued_b = kernel
        .send_shell(ExecuteRequest::new("print b".into()))
        .await;
    let reply = kernel.shell_reply(SOON).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        failing.header.msg_id
    );
    let JupyterMessageContent::ExecuteReply(failed) = &reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(failed.status, ReplyStatus::Error);
    assert_eq!(failed.error.as_ref().unwrap().ename, "panic");
    // The executes received before the error reply are aborted, in order, first; the
    // kernel_info between them is answered after them.
    for (queued, expected) in [
        (&queued_a, "execute_reply"),
        (&queued_b, "execute_reply"),
        (&info, "kernel_info_reply"),
    ] {
        let reply = kernel.shell_reply(SOON).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            queued.header.msg_id
        );
        assert_eq!(reply.header.msg_type, expected);
        if expected == "execute_reply" {
            assert_eq!(reply_status(&reply), ReplyStatus::Aborted);
            let iopub = kernel.iopub_until_idle(&queued.header.msg_id, SOON).await;
            assert_eq!(types(&iopub), ["status", "status"]);
        }
    }
    assert_eq!(kernel.record.cells(), ["sleep 50\npanic stop here"]);
    // A request sent after the error reply runs normally.
    assert_eq!(
        run(&mut kernel, "value 7").await.result().as_deref(),
        Some("7")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_stop_on_error_the_queued_execute_runs() {
    let mut kernel = FakeKernel::start().await;
    let lenient = ExecuteRequest {
        stop_on_error: false,
        ..ExecuteRequest::new("sleep 50\nfail no such command".into())
    };
    kernel.send_shell(lenient).await;
    let after = kernel
        .send_shell(ExecuteRequest::new("print after".into()))
        .await;
    assert_eq!(
        reply_status(&kernel.shell_reply(SOON).await),
        ReplyStatus::Error
    );
    let reply = kernel.shell_reply(SOON).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        after.header.msg_id
    );
    assert_eq!(reply_status(&reply), ReplyStatus::Ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_is_published_before_the_error_reply() {
    let mut kernel = FakeKernel::start().await;
    let execution = run(&mut kernel, "print before\nfail bad command").await;
    assert_eq!(
        execution.types(),
        ["status", "execute_input", "stream", "error", "status"]
    );
    let (ename, evalue, _) = execution.error().unwrap();
    let JupyterMessageContent::ExecuteReply(reply) = &execution.reply.content else {
        panic!()
    };
    let error = reply.error.as_ref().unwrap();
    assert_eq!(
        (error.ename.as_str(), error.evalue.as_str()),
        (&*ename, &*evalue)
    );
    assert!(evalue.contains("bad command"), "{evalue}");
}

#[tokio::test(flavor = "multi_thread")]
async fn user_expressions_are_answered_as_not_supported() {
    let mut kernel = FakeKernel::start().await;
    let request = ExecuteRequest {
        user_expressions: Some([("x".to_owned(), "1 + 1".to_owned())].into()),
        ..ExecuteRequest::new("value 1".into())
    };
    let execution = kernel.execute_with(request, SOON).await;
    let JupyterMessageContent::ExecuteReply(reply) = &execution.reply.content else {
        panic!()
    };
    let answered = serde_json::to_value(&reply.user_expressions).unwrap();
    assert_eq!(answered["x"]["status"], "error");
    assert_eq!(answered["x"]["ename"], "NotSupported");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_engines_start_up_warning_comes_with_the_first_cell_only() {
    let startup = warning_at_startup("LIBTORCH not found: pip install torch==2.11.0");
    let mut kernel = FakeKernel::start_with(startup).await;
    let first = run(&mut kernel, "value 2").await;
    assert_eq!(
        first.stderr(),
        "LIBTORCH not found: pip install torch==2.11.0\n"
    );
    assert_eq!(first.result().as_deref(), Some("2"));
    assert!(run(&mut kernel, "value 3").await.stderr().is_empty());
}

fn warning_at_startup(warning: &str) -> tchbook::engine::Startup {
    tchbook::engine::Startup {
        warning: Some(warning.into()),
        ..fake_engine::ready()
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
        if let JupyterMessageContent::StreamContent(s) = &message.content {
            if s.text.contains(text) {
                return;
            }
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
