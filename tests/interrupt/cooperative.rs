//! A cell that checks (`interrupt::check`, or the checks the kernel puts in its loops and in
//! functions earlier cells defined) stops at the interrupt with KeyboardInterrupt and keeps its
//! variables; an interrupt it never noticed does not stop the next cell.

use super::{COOPERATIVE_LOOP, interrupt_and_time, kernel_that_would_kill_late, start_long_cell};
use crate::support::{Kernel, REPLY};
use jupyter_protocol::{InterruptRequest, ReplyStatus};
use std::time::Duration;

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
async fn a_plain_loop_of_the_cells_own_stops_with_keyboard_interrupt_and_keeps_variables() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok("let kept = 5;\nlet model = Tensor::ones(&[2, 2], (Kind::Float, Device::Cpu));")
        .await;
    for body in [
        "let mut spins = 0u64;\nloop { spins += 1; }",
        "let mut n = 0u64;\nwhile n < u64::MAX { n = n.wrapping_add(1); }",
        "let w = Tensor::zeros(&[4], (Kind::Float, Device::Cpu));\n\
         for step in 0.. { let _ = (&w + step as f64).sum(Kind::Float); }",
    ] {
        let sent = start_long_cell(&mut kernel, body).await;
        let (error, took) = interrupt_and_time(&mut kernel, &sent).await;
        assert_eq!(error.ename, "KeyboardInterrupt", "{body}: {error:?}");
        // Found where the user looks: the loop's own line, as typed.
        let at = error.traceback.join("\n");
        assert!(at.contains("at cell line 3"), "{body}: {at}");
        assert!(!at.contains("__point"), "{body}: {at}");
        assert!(took < Duration::from_secs(5), "{body}: {took:?}");
        assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
        assert_eq!(
            kernel
                .run_ok("model.sum(Kind::Float).double_value(&[])")
                .await
                .result()
                .as_deref(),
            Some("4.0")
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_in_a_function_an_earlier_cell_defined_stops_and_names_what_did_not_take_effect() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok(
            "let kept = String::from(\"trained\");\n\
             fn train(steps: &mut u64) { while *steps != u64::MAX { *steps = steps.wrapping_add(1); } }",
        )
        .await;
    let sent = start_long_cell(
        &mut kernel,
        "let mut steps = 0;\nlet fresh = 1;\ntrain(&mut steps);",
    )
    .await;
    let (error, _) = interrupt_and_time(&mut kernel, &sent).await;
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(
        error.evalue.contains("`steps`") && error.evalue.contains("`fresh`"),
        "{}",
        error.evalue
    );
    assert_eq!(
        kernel.run_ok("kept.clone()").await.result().as_deref(),
        Some("\"trained\"")
    );
    // The function is still there, checks and all.
    let sent = start_long_cell(&mut kernel, "let mut again = 0;\ntrain(&mut again);").await;
    let (error, _) = interrupt_and_time(&mut kernel, &sent).await;
    assert_eq!(error.ename, "KeyboardInterrupt");
}

#[tokio::test(flavor = "multi_thread")]
async fn loops_with_checks_compile_errors_point_at_the_users_own_columns() {
    let mut kernel = Kernel::start().await;
    let cell = "for i in 0..3 { let s: String = i; }";
    let (ename, _, traceback) = kernel.execute(cell).await.error().expect("an error");
    assert_eq!(ename, "CompilationError");
    let shown = traceback.join("\n");
    assert!(shown.contains("cell:1:33"), "{shown}");
    assert!(!shown.contains("__point"), "{shown}");
    // A loop where no check can go (a const context) still builds and runs.
    let run = kernel
        .run_ok("const fn three() -> u32 { let mut i = 0; while i < 3 { i += 1; } i }\nthree()")
        .await;
    assert_eq!(run.result().as_deref(), Some("3"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_the_cell_never_noticed_does_not_stop_the_next_cell() {
    let mut kernel = kernel_that_would_kill_late().await;
    // core's take_while is no loop of the cell's: the interrupt goes unnoticed, and the cell
    // ends by itself 1.5 s later.
    let sent = start_long_cell(
        &mut kernel,
        "let t = std::time::Instant::now();\n\
         (0..).take_while(|_| t.elapsed() < std::time::Duration::from_millis(1500)).for_each(drop)",
    )
    .await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    kernel.execute_reply_to(&sent, REPLY).await;
    kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let run = kernel
        .run_ok("let mut n = 0;\nfor i in 0..4 { n += i; }\nstd::thread::sleep(std::time::Duration::from_millis(10));\nn")
        .await;
    assert_eq!(run.result().as_deref(), Some("6"));
}
