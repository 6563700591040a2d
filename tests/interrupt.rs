//! Interrupts: cooperative first (variables kept), kill and restart after the grace period.

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{ExecuteRequest, InterruptRequest, JupyterMessageContent, ReplyStatus};
use std::time::Duration;

/// Starts a cell that announces itself and then runs until interrupted, and waits until it
/// runs.
async fn start_long_cell(kernel: &mut Kernel, body: &str) -> jupyter_protocol::JupyterMessage {
    let code = format!("println!(\"started\");\n{body}");
    let sent = kernel.send_shell(ExecuteRequest::new(code)).await;
    loop {
        let message = kernel.next_iopub(STARTUP).await;
        if let JupyterMessageContent::StreamContent(s) = &message.content
            && s.text.contains("started")
        {
            break;
        }
    }
    sent
}

const COOPERATIVE_LOOP: &str =
    "loop { interrupt::check(); std::thread::sleep(std::time::Duration::from_millis(10)); }";

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_request_stops_a_checking_cell_and_keeps_variables() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let kept = 5;\nlet also_kept = String::from(\"x\");")
        .await;
    let sent = start_long_cell(&mut kernel, COOPERATIVE_LOOP).await;
    kernel.send_control(InterruptRequest {}).await;
    let reply = kernel.control_reply(REPLY).await;
    assert_eq!(reply.header.msg_type, "interrupt_reply");
    let content = kernel.execute_reply_to(&sent, REPLY).await;
    assert_eq!(content.status, ReplyStatus::Error);
    assert_eq!(content.error.unwrap().ename, "KeyboardInterrupt");
    assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
    assert_eq!(
        kernel.run_ok("also_kept.len()").await.result().as_deref(),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn keyboard_interrupt_names_the_bindings_the_interruption_undid() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let counter = 1;").await;
    let body = format!("let counter = 2;\nlet fresh = 3;\n{COOPERATIVE_LOOP}");
    let sent = start_long_cell(&mut kernel, &body).await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let error = kernel.execute_reply_to(&sent, REPLY).await.error.unwrap();
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(
        error
            .evalue
            .contains("`counter` kept the value from before this cell")
            && error.evalue.contains("`fresh` were not created"),
        "{}",
        error.evalue
    );
    assert!(
        error.traceback.iter().any(|line| line.contains("`fresh`")),
        "{:?}",
        error.traceback
    );
    assert_eq!(
        kernel.run_ok("counter").await.result().as_deref(),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_to_the_kernel_process_group_interrupts_the_cell() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 7;").await;
    let sent = start_long_cell(&mut kernel, COOPERATIVE_LOOP).await;
    // What jupyter_client does for interrupt_mode "signal".
    // SAFETY: killpg(2) on the group of the kernel this test started (process_group(0)).
    unsafe { libc::killpg(kernel.pid(), libc::SIGINT) };
    let content = kernel.execute_reply_to(&sent, REPLY).await;
    assert_eq!(content.error.unwrap().ename, "KeyboardInterrupt");
    assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("7"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_ignoring_the_interrupt_is_killed_after_the_grace_period_naming_lost_variables() {
    let mut kernel = Kernel::start_with_env(&[("TCHBOOK_INTERRUPT_GRACE", "1")]).await;
    kernel
        .run_ok("let doomed = 1;\nlet also_doomed = vec![1, 2];\nfn still_here() -> u8 { 9 }")
        .await;
    let sent = start_long_cell(&mut kernel, "loop { std::hint::spin_loop(); }").await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let content = kernel
        .execute_reply_to(&sent, Duration::from_secs(60))
        .await;
    let error = content.error.unwrap();
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(
        error.evalue.contains("doomed") && error.evalue.contains("also_doomed"),
        "{}",
        error.evalue
    );
    assert_eq!(
        kernel.run_ok("still_here()").await.result().as_deref(),
        Some("9")
    );
    // The new evaluation process is interruptible cooperatively again.
    kernel.run_ok("let fresh = 2;").await;
    start_long_cell(&mut kernel, COOPERATIVE_LOOP).await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    kernel.shell_reply(REPLY).await;
    assert_eq!(kernel.run_ok("fresh").await.result().as_deref(), Some("2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_cell_declaring_a_variable_again_keeps_the_old_value() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let mut progress = 41;\nlet label = String::from(\"old\");")
        .await;
    // Run again and stopped, as in a notebook: the new values never got stored.
    let sent = start_long_cell(
        &mut kernel,
        &format!("let mut progress = 0;\nlet label = vec![1, 2, 3];\n{COOPERATIVE_LOOP}"),
    )
    .await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let content = kernel.execute_reply_to(&sent, REPLY).await;
    assert_eq!(content.error.unwrap().ename, "KeyboardInterrupt");
    kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    assert_eq!(
        kernel.run_ok("progress + 1").await.result().as_deref(),
        Some("42")
    );
    assert_eq!(
        kernel.run_ok("label.clone()").await.result().as_deref(),
        Some("\"old\"")
    );
    // And the name can be declared again afterwards.
    kernel.run_ok("let progress = \"new\";").await;
    assert_eq!(
        kernel.run_ok("progress").await.result().as_deref(),
        Some("\"new\"")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_cell_that_used_the_old_value_names_the_variable_it_lost() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let data = vec![1, 2, 3];\nlet kept = 7;")
        .await;
    // `data` is moved into its new value, so the old one cannot be put back: it is named.
    let sent = start_long_cell(
        &mut kernel,
        &format!("let data = data.into_iter().count();\n{COOPERATIVE_LOOP}"),
    )
    .await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    kernel.execute_reply_to(&sent, REPLY).await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let stderr: String = iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert!(stderr.contains("Lost: `data`"), "{stderr}");
    assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("7"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unusable_interrupt_grace_falls_back_to_the_default_with_a_warning() {
    for value in ["-1", "NaN"] {
        // Without libtorch the kernel starts without building the prelude: only its start
        // matters here.
        let env = [
            (tchbook_wire::env::INTERRUPT_GRACE, value),
            ("LIBTORCH", "/nonexistent/libtorch"),
        ];
        let mut kernel = Kernel::start_with_env(&env).await;
        kernel.kernel_info().await;
        let log = kernel.log();
        assert!(
            log.contains(&format!(
                "TCHBOOK_INTERRUPT_GRACE=\"{value}\" is not a number"
            )),
            "{value}: {log}"
        );
    }
}
