//! The blocking calls of a cell's thread (a sleep, a read, a write, an accept, a child's wait,
//! a channel, a lock, a condvar, a join) end at the interrupt, keeping the variables; threads the
//! cell started run on.

use super::{interrupt_and_read, interrupt_and_time, kernel_that_would_kill_late, start_long_cell};
use std::time::Duration;

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
