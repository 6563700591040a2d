//! A cell that fails: stop_on_error, a compile error, a panic, a torch error, each an error
//! reply that says what went wrong and where, the kernel keeping what came before.

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{ExecuteRequest, JupyterMessageContent, ReplyStatus};

#[tokio::test(flavor = "multi_thread")]
async fn stop_on_error_aborts_executes_queued_behind_a_failure() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let ran = std::cell::Cell::new(0);").await;
    let failing = kernel
        .send_shell(ExecuteRequest::new("panic!(\"stop here\");".into()))
        .await;
    let queued_a = kernel
        .send_shell(ExecuteRequest::new("ran.set(1);".into()))
        .await;
    let queued_b = kernel
        .send_shell(ExecuteRequest::new("ran.set(2);".into()))
        .await;
    let reply = kernel.shell_reply(STARTUP).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        failing.header.msg_id
    );
    let JupyterMessageContent::ExecuteReply(failed) = &reply.content else {
        panic!()
    };
    assert_eq!(failed.status, ReplyStatus::Error);
    for queued in [&queued_a, &queued_b] {
        let reply = kernel.shell_reply(REPLY).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            queued.header.msg_id
        );
        let JupyterMessageContent::ExecuteReply(aborted) = &reply.content else {
            panic!()
        };
        assert_eq!(aborted.status, ReplyStatus::Aborted);
    }
    // Nothing queued after the error ran; a new request runs normally.
    assert_eq!(
        kernel.run_ok("ran.get()").await.result().as_deref(),
        Some("0")
    );
    // Without stop_on_error the next request runs.
    let lenient = ExecuteRequest {
        stop_on_error: false,
        ..ExecuteRequest::new("panic!(\"again\");".into())
    };
    kernel.send_shell(lenient).await;
    let after = kernel
        .send_shell(ExecuteRequest::new("ran.set(3);".into()))
        .await;
    kernel.shell_reply(STARTUP).await;
    let reply = kernel.shell_reply(STARTUP).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        after.header.msg_id
    );
    let JupyterMessageContent::ExecuteReply(ran) = &reply.content else {
        panic!()
    };
    assert_eq!(ran.status, ReplyStatus::Ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn compile_error_is_an_error_reply_pointing_at_the_cell_line() {
    let mut kernel = Kernel::start().await;
    let execution = kernel.execute("let a = 1;\nlet x: i32 = \"text\";").await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    assert_eq!(
        execution.types(),
        ["status", "execute_input", "error", "status"]
    );
    let (ename, evalue, traceback) = execution.error().unwrap();
    assert_eq!(ename, "CompilationError");
    assert!(evalue.contains("E0308"), "{evalue}");
    let text = traceback.join("\n");
    assert!(text.contains("cell:2:"), "{text}");
    assert!(text.contains("let x: i32 = \"text\";"), "{text}");
    let JupyterMessageContent::ExecuteReply(reply) = &execution.reply.content else {
        panic!()
    };
    let error = reply.error.as_ref().expect("error fields in the reply");
    assert_eq!(error.ename, "CompilationError");
    assert!(!error.traceback.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn panic_is_an_error_with_message_and_location_and_the_kernel_keeps_earlier_variables() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let execution = kernel
        .execute("let v: Vec<i32> = Vec::new();\nlet y = v[3];")
        .await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    let (ename, evalue, traceback) = execution.error().unwrap();
    assert_eq!(ename, "panic");
    assert!(evalue.contains("index out of bounds"), "{evalue}");
    let text = traceback.join("\n");
    assert!(text.contains("at cell line 2"), "location: {text}");
    assert!(text.contains("v[3]"), "the panicking line: {text}");
    assert!(
        !execution.stderr().contains("stack backtrace"),
        "no backtrace noise"
    );
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
}

/// The error a learner meets most: two matrices whose shapes do not fit.
const SHAPE_ERROR: &str =
    "let t = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));\nlet u = t.matmul(&t);";

#[tokio::test(flavor = "multi_thread")]
async fn a_torch_error_shows_what_pytorch_shows_and_cpp_frames_only_when_asked() {
    for asked in [false, true] {
        let env: &[(&str, &str)] = if asked {
            &[("TORCH_SHOW_CPP_STACKTRACES", "1")]
        } else {
            &[]
        };
        let mut kernel = Kernel::start_with_env(env).await;
        let execution = kernel.execute(SHAPE_ERROR).await;
        let (ename, evalue, traceback) = execution.error().expect("the shapes do not fit");
        assert_eq!(ename, "TorchError");
        assert!(
            evalue.starts_with("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
            "{evalue}"
        );
        let text = traceback.join("\n");
        assert!(text.contains("at cell line 2, in `matmul`"), "{text}");
        assert!(text.contains("let u = t.matmul(&t);"), "{text}");
        // libtorch's C++ frames and tch's wrapper line: only with PyTorch's own switch.
        assert_eq!(text.contains("frame #"), asked, "{text}");
        assert_eq!(text.contains("tensor_generated.rs"), asked, "{text}");
        if !asked {
            assert!(
                text.lines().count() <= 5,
                "a few lines, as PyTorch's: {text}"
            );
        }
    }
}
