//! execute_request on the fake engine: the order of a cell's messages, its output batched
//! between display messages, execution counts, a long queue, errors and stop_on_error.

use super::{SOON, reply_status, run, types};
use crate::fake_engine::{self, FakeKernel};
use jupyter_protocol::{ExecuteRequest, JupyterMessageContent, KernelInfoRequest, ReplyStatus};
use std::time::Duration;
use tchbook_wire::{Message, MimeData};

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
    let plain = |text: &str| MimeData::from_iter([("text/plain".to_owned(), text.into())]);
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
