//! Interrupts: cooperative first (variables kept), kill and restart after the grace period.

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{ExecuteRequest, InterruptRequest, JupyterMessageContent, ReplyStatus};
use std::time::{Duration, Instant};

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

/// A kernel whose grace period outlasts every test below: a cell that ended in time ended at its
/// own interrupt check, since the kill that would lose the variables had not come yet.
async fn kernel_that_would_kill_late() -> Kernel {
    Kernel::start_with_env(&[(tchbook_wire::env::INTERRUPT_GRACE, "60")]).await
}

/// Interrupts the running cell `sent` and returns its error and how long it took to end.
async fn interrupt_and_time(
    kernel: &mut Kernel,
    sent: &jupyter_protocol::JupyterMessage,
) -> (jupyter_protocol::ReplyError, Duration) {
    let (error, took, _) = interrupt_and_read(kernel, sent).await;
    (error, took)
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
async fn a_sleep_of_the_cells_thread_ends_at_the_interrupt_and_keeps_variables() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok(
            "let kept = 5;\nfn nap() { std::thread::sleep(std::time::Duration::from_secs(600)); }",
        )
        .await;
    // Where each stops: the cell's line, or the line of the function that slept.
    for (body, at) in [
        (
            "std::thread::sleep(std::time::Duration::from_secs(600));\nprintln!(\"after\");",
            "at cell line 2",
        ),
        ("let fresh = 1;\nnap();\nprintln!(\"after\");", "fn nap()"),
        (
            "for _ in 0..3 { std::thread::sleep(std::time::Duration::from_secs(600)); }",
            "at cell line 2",
        ),
    ] {
        let sent = start_long_cell(&mut kernel, body).await;
        let (error, took, printed) = interrupt_and_read(&mut kernel, &sent).await;
        assert_eq!(error.ename, "KeyboardInterrupt", "{body}: {error:?}");
        assert!(
            error.traceback.join("\n").contains(at),
            "{body}: {:?}",
            error.traceback
        );
        // Nothing after the sleep ran.
        assert!(!printed.contains("after"), "{body}");
        assert!(took < Duration::from_secs(5), "{body}: {took:?}");
        assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
    }
    // A sleep nobody interrupts sleeps in full, and a thread the cell starts is not cut short.
    let run = kernel
        .run_ok(
            "let t = std::time::Instant::now();\n\
             std::thread::sleep(std::time::Duration::from_millis(300));\n\
             std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(300))).join().unwrap();\n\
             t.elapsed().as_millis() >= 600",
        )
        .await;
    assert_eq!(run.result().as_deref(), Some("true"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_read_write_accept_or_child_wait_ends_at_the_interrupt_and_keeps_variables() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok(
            "let kept = 5;\nlet listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();",
        )
        .await;
    for body in [
        // A pipe from a child process that writes nothing.
        "let mut child = std::process::Command::new(\"sleep\").arg(\"600\")\n\
         .stdout(std::process::Stdio::piped()).spawn().unwrap();\n\
         let mut text = String::new();\n\
         std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut text).unwrap();",
        // A wait for that child.
        "let mut child = std::process::Command::new(\"sleep\").arg(\"600\").spawn().unwrap();\n\
         child.wait().unwrap();",
        // An accept nobody connects to, and a socket read nobody writes to.
        "let (socket, _) = listener.accept().unwrap();",
        "let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();\n\
         let mut byte = [0u8; 1];\n\
         let _ = std::io::Read::read(&mut peer, &mut byte);",
        // A write to a pipe nobody reads, once it is full.
        "let mut child = std::process::Command::new(\"sleep\").arg(\"600\")\n\
         .stdin(std::process::Stdio::piped()).spawn().unwrap();\n\
         let block = vec![0u8; 1 << 20];\n\
         std::io::Write::write_all(child.stdin.as_mut().unwrap(), &block).unwrap();",
    ] {
        let sent = start_long_cell(&mut kernel, body).await;
        // The cell is in its blocking call by now (its start was printed before it).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (error, took) = interrupt_and_time(&mut kernel, &sent).await;
        assert_eq!(error.ename, "KeyboardInterrupt", "{body}: {error:?}");
        assert!(took < Duration::from_secs(5), "{body}: {took:?}");
        assert_eq!(
            kernel.run_ok("kept").await.result().as_deref(),
            Some("5"),
            "{body}"
        );
    }
    // The listener still works, and a child's output is read in full when nothing interrupts.
    let run = kernel
        .run_ok(
            "let out = std::process::Command::new(\"echo\").arg(\"hi\").output().unwrap();\n\
             (listener.local_addr().is_ok(), String::from_utf8(out.stdout).unwrap())",
        )
        .await;
    assert_eq!(run.result().as_deref(), Some("(true, \"hi\\n\")"));
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

#[tokio::test(flavor = "multi_thread")]
async fn the_interrupt_stops_the_cells_thread_not_a_thread_it_started() {
    let mut kernel = kernel_that_would_kill_late().await;
    // The worker checks too (its loop and statements are the cell's code), but the interrupt is
    // the cell's thread's, as KeyboardInterrupt is Python's main thread's.
    let body = "let worker = std::thread::spawn(|| {\n\
                    let mut n = 0u64;\n\
                    for _ in 0..300 { n += 1; std::thread::sleep(std::time::Duration::from_millis(10)); }\n\
                    println!(\"worker done {n}\");\n\
                });\n\
                let mut spins = 0u64;\n\
                loop { spins += 1; }";
    let sent = start_long_cell(&mut kernel, body).await;
    let (error, _) = interrupt_and_time(&mut kernel, &sent).await;
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(
        error.traceback.join("\n").contains("at cell line 8"),
        "{error:?}"
    );
    // The worker runs on to its end (3 s from its start) and says so, without a panic of its own.
    let run = kernel
        .run_ok("std::thread::sleep(std::time::Duration::from_secs(4));")
        .await;
    let said = format!("{}{}", run.stdout(), run.stderr());
    assert!(
        said.contains("worker done 300") && !said.contains("panicked"),
        "{said}"
    );
}

/// Interrupts the running cell `sent`: its error, how long it took to end, and what it printed
/// after the interrupt.
async fn interrupt_and_read(
    kernel: &mut Kernel,
    sent: &jupyter_protocol::JupyterMessage,
) -> (jupyter_protocol::ReplyError, Duration, String) {
    let asked = Instant::now();
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let content = kernel.execute_reply_to(sent, REPLY).await;
    let took = asked.elapsed();
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let error = *content.error.expect("the cell ended without an error");
    (error, took, crate::support::streamed(&iopub))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_on_a_channel_lock_or_condvar_ends_at_the_interrupt_keeping_the_rest() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok(
            "let kept = 5;\n\
             let (tx, rx) = std::sync::mpsc::channel::<u8>();\n\
             let model = Tensor::ones(&[2, 2], (Kind::Float, Device::Cpu));",
        )
        .await;
    // (the cell, the variable of an earlier cell its stopped thread keeps)
    let cases = [
        // A channel of the cell's own whose sender, in a thread, never sends.
        (
            "let (tx2, rx2) = std::sync::mpsc::channel::<u8>();\n\
             std::thread::spawn(move || { let _keep = tx2; std::thread::sleep(std::time::Duration::from_secs(600)); });\n\
             let _ = rx2.recv();",
            None,
        ),
        // A rendezvous channel, whose receiver waits with a packet on its own stack.
        (
            "let (tx3, rx3) = std::sync::mpsc::sync_channel::<u8>(0);\n\
             let _also = tx3.clone();\n\
             let _ = rx3.recv();",
            None,
        ),
        // A Mutex another thread holds.
        (
            "let lock = std::sync::Arc::new(std::sync::Mutex::new(0u8));\n\
             let other = lock.clone();\n\
             std::thread::spawn(move || { let _g = other.lock().unwrap(); std::thread::sleep(std::time::Duration::from_secs(600)); });\n\
             std::thread::sleep(std::time::Duration::from_millis(100));\n\
             let _ = *lock.lock().unwrap();",
            None,
        ),
        // A Condvar nobody notifies, in a loop of the cell's own.
        (
            "let pair = (std::sync::Mutex::new(false), std::sync::Condvar::new());\n\
             {\n\
                 let mut ready = pair.0.lock().unwrap();\n\
                 while !*ready { ready = pair.1.wait(ready).unwrap(); }\n\
             }",
            None,
        ),
        // The end of a scope whose thread runs on.
        (
            "std::thread::scope(|s| { s.spawn(|| std::thread::sleep(std::time::Duration::from_secs(600))); });",
            None,
        ),
        // A channel an earlier cell made, whose sender that cell keeps: `rx` stays with the wait.
        ("let _ = rx.recv();", Some("rx")),
    ];
    for (body, held) in cases {
        let sent = start_long_cell(&mut kernel, body).await;
        // The cell is in its wait by now.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (error, took, printed) = interrupt_and_read(&mut kernel, &sent).await;
        assert_eq!(error.ename, "KeyboardInterrupt", "{body}: {error:?}");
        assert!(took < Duration::from_secs(5), "{body}: {took:?}");
        match held {
            Some(name) => assert!(
                printed.contains(&format!("Lost: `{name}`"))
                    && printed.contains("Every other variable is kept"),
                "{body}: {printed}"
            ),
            None => assert!(!printed.contains("Lost:"), "{body}: {printed}"),
        }
        assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
        assert_eq!(
            kernel
                .run_ok("model.sum(Kind::Float).double_value(&[])")
                .await
                .result()
                .as_deref(),
            Some("4.0"),
            "{body}"
        );
    }
    // What the stopped thread kept is gone, said as a name the notebook no longer has; `tx`,
    // which it did not use, is still there (and its receiver too, in the stopped thread).
    let gone = kernel.execute("rx.try_recv()").await;
    let (_, _, traceback) = gone.error().expect("rx is still defined");
    assert!(traceback.join("\n").contains("rx"), "{traceback:?}");
    assert_eq!(
        kernel
            .run_ok("tx.send(1).is_ok()")
            .await
            .result()
            .as_deref(),
        Some("true")
    );
    // The next cells run on a new thread, where everything an interrupt does still works: a
    // loop of the cell's own stops at its line, a sleep ends, a panic ends the cell and a
    // thread's panic does not.
    let sent = start_long_cell(&mut kernel, "let mut spins = 0u64;\nloop { spins += 1; }").await;
    let (error, took, _) = interrupt_and_read(&mut kernel, &sent).await;
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(
        error.traceback.join("\n").contains("at cell line 3"),
        "{error:?}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let sent = start_long_cell(
        &mut kernel,
        "std::thread::sleep(std::time::Duration::from_secs(600));",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (error, took, _) = interrupt_and_read(&mut kernel, &sent).await;
    assert_eq!(error.ename, "KeyboardInterrupt");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let failed = kernel
        .execute("let x: Option<u8> = None;\nx.expect(\"boom\");")
        .await;
    let (_, evalue, _) = failed.error().expect("the panic did not end the cell");
    assert!(evalue.contains("boom"), "{evalue}");
    let run = kernel
        .run_ok("let _ = std::thread::spawn(|| panic!(\"in a worker\")).join();\nkept + 1")
        .await;
    assert_eq!(run.result().as_deref(), Some("6"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_join_of_a_thread_that_runs_on_ends_at_the_interrupt_keeping_every_variable() {
    let mut kernel = kernel_that_would_kill_late().await;
    kernel
        .run_ok(
            "let kept = 5;\n\
             let worker = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(600)));",
        )
        .await;
    for body in [
        "std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(600))).join().unwrap();",
        "worker.join().unwrap();",
    ] {
        let sent = start_long_cell(&mut kernel, body).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (error, took, printed) = interrupt_and_read(&mut kernel, &sent).await;
        assert_eq!(error.ename, "KeyboardInterrupt", "{body}: {error:?}");
        assert!(took < Duration::from_secs(5), "{body}: {took:?}");
        assert!(!printed.contains("Lost:"), "{body}: {printed}");
        assert_eq!(kernel.run_ok("kept").await.result().as_deref(), Some("5"));
    }
    // A join nobody interrupts waits for the thread, as always.
    let run = kernel
        .run_ok("std::thread::spawn(|| { std::thread::sleep(std::time::Duration::from_millis(200)); 7 }).join().unwrap()")
        .await;
    assert_eq!(run.result().as_deref(), Some("7"));
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
