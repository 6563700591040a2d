//! Shutdown (with restart) on control and shell.

use crate::support::{children, is_gone, Kernel, REPLY};
use jupyter_protocol::{JupyterMessageContent, ShutdownRequest};
use std::time::{Duration, Instant};

pub(crate) async fn wait_for_exit(kernel: &mut Kernel) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(status) = kernel.child.try_wait().unwrap() {
            assert!(status.success(), "kernel exit status {status}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the kernel did not exit after shutdown_request");
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_request_on_control_replies_with_restart_and_both_processes_exit() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let x = 1;").await;
    let evaluation: Vec<i32> = children(kernel.pid());
    assert!(!evaluation.is_empty(), "no evaluation process found");
    kernel.send_control(ShutdownRequest { restart: true }).await;
    let reply = kernel.control_reply(REPLY).await;
    let JupyterMessageContent::ShutdownReply(content) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(content.restart);
    wait_for_exit(&mut kernel).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for pid in evaluation {
        assert!(is_gone(pid), "evaluation process {pid} outlived the kernel");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_request_on_shell_is_answered_too() {
    let mut kernel = Kernel::start().await;
    let reply = kernel.request(ShutdownRequest { restart: false }).await;
    let JupyterMessageContent::ShutdownReply(content) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(!content.restart);
    wait_for_exit(&mut kernel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_libtorch_the_kernel_starts_and_the_first_cell_says_how_to_fix_it() {
    let mut kernel = Kernel::start_with_env(&[("LIBTORCH", "/nonexistent/libtorch")]).await;
    kernel.kernel_info().await;
    let first = kernel.run_ok("1 + 1").await;
    let warning = first.stderr();
    assert!(warning.contains("LIBTORCH"), "{warning}");
    assert!(warning.contains("pip install torch==2.11.0"), "{warning}");
    assert_eq!(first.result().as_deref(), Some("2"));
    // Said once, not on every cell.
    let second = kernel.run_ok("2 + 2").await;
    assert!(second.stderr().is_empty(), "{}", second.stderr());
}
