//! The grace period: a cell that ignores the interrupt is killed after it and the lost variables
//! are named; a value declared again keeps the old one; a bad setting falls back to the default;
//! a cell is not killed while the kernel is still busy after it, nor during a long build.

use super::{COOPERATIVE_LOOP, interrupt_and_read, start_long_cell};
use crate::support::{Kernel, REPLY};
use jupyter_protocol::{ExecuteRequest, InterruptRequest};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_ignoring_the_interrupt_is_killed_after_the_grace_period_naming_lost_variables() {
    let mut kernel = Kernel::start_with_env(&[("TCHBOOK_INTERRUPT_GRACE", "1")]).await;
    kernel
        .run_ok("let doomed = 1;\nlet also_doomed = vec![1, 2];\nfn still_here() -> u8 { 9 }")
        .await;
    // A loop in a library's code (here core's `for_each`) has no interrupt check: only the
    // cell's own loops get one.
    let sent = start_long_cell(
        &mut kernel,
        "std::iter::repeat(()).for_each(|()| std::hint::spin_loop());",
    )
    .await;
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
    let stderr = crate::support::streamed(&iopub);
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

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_cell_is_not_killed_while_the_kernel_is_still_busy_after_it() {
    // A grace period shorter than what the kernel does after this cell ran: rustc names the
    // type of `got` by a path that does not build, and rust-analyzer is asked (seconds).
    let mut kernel = Kernel::start_with_env(&[(tchbook_wire::env::INTERRUPT_GRACE, "1")]).await;
    kernel
        .run_ok("let kept = 5;\nlet (tx, rx) = std::sync::mpsc::channel::<u8>();")
        .await;
    let sent = start_long_cell(&mut kernel, "let got = rx.recv();").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    kernel.execute_reply_to(&sent, REPLY).await;
    kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    // The evaluation process was not killed: every variable but the one the wait kept is there.
    assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
    let gone = kernel.execute("rx.try_recv()").await;
    let said = format!("{}{:?}", gone.stderr(), gone.error());
    assert!(said.contains("rx"), "{said}");
    assert!(!said.contains("EvaluationProcessDied"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stop_button_during_a_build_longer_than_the_grace_period_keeps_the_variables() {
    // A crate of the notebook's own whose build script takes 4 s: the cell that adds it builds
    // for longer than the 1 s grace period, with nothing running in the evaluation process.
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow");
    std::fs::create_dir_all(slow.join("src")).unwrap();
    std::fs::write(
        slow.join("Cargo.toml"),
        "[package]\nname = \"slow\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        slow.join("build.rs"),
        "fn main() { std::thread::sleep(std::time::Duration::from_secs(4)); }\n",
    )
    .unwrap();
    std::fs::write(slow.join("src/lib.rs"), "pub fn seven() -> u8 { 7 }\n").unwrap();
    let mut kernel = Kernel::start_with_env(&[(tchbook_wire::env::INTERRUPT_GRACE, "1")]).await;
    kernel.run_ok("let kept = 5;").await;
    let code = format!(
        ":dep slow = {{ path = {:?} }}\nlet first = slow::seven();\nprintln!(\"ran on\");",
        slow.display().to_string()
    );
    let sent = kernel.send_shell(ExecuteRequest::new(code)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (error, _, printed) = interrupt_and_read(&mut kernel, &sent).await;
    // The interrupt reached the cell when it was built, at its first check; nothing was killed.
    assert_eq!(error.ename, "KeyboardInterrupt", "{error:?}");
    assert!(!printed.contains("ran on"), "{printed}");
    assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
    assert_eq!(
        kernel.run_ok("slow::seven()").await.result().as_deref(),
        Some("7")
    );
}
