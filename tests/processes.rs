//! Processes: the kernel ends with the process that started it, and what a cell starts ends
//! with the kernel (shutdown, the restart after an interrupt, a crash), unless the cell put it
//! in a session of its own.

use crate::lifecycle::wait_for_exit;
use crate::support::{Kernel, REPLY, children, is_gone, wait_until_gone};
use jupyter_protocol::{InterruptRequest, ShutdownRequest};
use std::time::Duration;

/// Starts `sleep 600` both ways a cell would (a `Command` it keeps, and a shell's background
/// job) and returns their pids.
async fn spawn_sleepers(kernel: &mut Kernel) -> Vec<i32> {
    let direct = kernel
        .run_ok(
            "let sleeper = std::process::Command::new(\"sleep\").arg(\"600\").spawn().unwrap();\n\
             sleeper.id()",
        )
        .await;
    let backgrounded = kernel
        .run_ok(
            "let out = std::process::Command::new(\"sh\")\n\
                 .args([\"-c\", \"sleep 600 >/dev/null 2>&1 & echo $!\"])\n\
                 .output()\n\
                 .unwrap();\n\
             String::from_utf8(out.stdout).unwrap().trim().parse::<u32>().unwrap()",
        )
        .await;
    let pids: Vec<i32> = [direct, backgrounded]
        .iter()
        .map(|run| run.result().unwrap().trim().parse().unwrap())
        .collect();
    for &pid in &pids {
        assert!(!is_gone(pid), "sleep {pid} did not start");
    }
    pids
}

fn kill(pid: i32) {
    // SAFETY: kill(2) on a process this test made.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kernel_exits_with_its_parent_and_takes_what_its_cells_started_along() {
    let mut kernel = Kernel::start_under_shell(&[]).await;
    let sleepers = spawn_sleepers(&mut kernel).await;
    let shell = kernel.pid();
    let kernel_pid = *children(shell).first().expect("no kernel under the shell");
    let evaluation = children(kernel_pid);
    assert!(!evaluation.is_empty(), "no evaluation process");
    // A front end killed without a chance to shut its kernels down.
    kill(shell);
    let mut everything = vec![kernel_pid];
    everything.extend(&evaluation);
    everything.extend(&sleepers);
    let left = wait_until_gone(&everything, Duration::from_secs(15)).await;
    for &pid in &left {
        kill(pid);
    }
    assert!(
        left.is_empty(),
        "still running after the parent died: {left:?} (kernel {kernel_pid}, evaluation \
         {evaluation:?}, sleepers {sleepers:?})\nkernel log:\n{}",
        kernel.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_ends_the_processes_cells_started_but_not_those_in_a_session_of_their_own() {
    let mut kernel = Kernel::start().await;
    let sleepers = spawn_sleepers(&mut kernel).await;
    let kept = kernel
        .run_ok(
            "use std::os::unix::process::CommandExt;\n\
             let kept = std::process::Command::new(\"sleep\").arg(\"600\").process_group(0)\n\
                 .spawn().unwrap();\n\
             kept.id()",
        )
        .await;
    let kept: i32 = kept.result().unwrap().trim().parse().unwrap();
    kernel.send_control(ShutdownRequest { restart: true }).await;
    kernel.control_reply(REPLY).await;
    wait_for_exit(&mut kernel).await;
    let left = wait_until_gone(&sleepers, Duration::from_secs(10)).await;
    let kept_alive = !is_gone(kept);
    for pid in left.iter().chain([&kept]) {
        kill(*pid);
    }
    assert!(left.is_empty(), "outlived the shutdown: {left:?}");
    assert!(kept_alive, "a process in its own group was ended too");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_restart_after_an_ignored_interrupt_ends_what_the_cell_started() {
    let mut kernel = Kernel::start_with_env(&[("TCHBOOK_INTERRUPT_GRACE", "1")]).await;
    let sleepers = spawn_sleepers(&mut kernel).await;
    let sent = kernel
        .send_shell(jupyter_protocol::ExecuteRequest::new(
            // A loop in core's code, which has no interrupt check, so the grace period ends it.
            "println!(\"started\");\nstd::iter::repeat(()).for_each(|()| std::hint::spin_loop());"
                .into(),
        ))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    kernel.send_control(InterruptRequest {}).await;
    kernel.control_reply(REPLY).await;
    let reply = kernel.execute_reply_to(&sent, REPLY).await;
    assert_eq!(reply.error.unwrap().ename, "KeyboardInterrupt");
    let left = wait_until_gone(&sleepers, Duration::from_secs(10)).await;
    for &pid in &left {
        kill(pid);
    }
    assert!(left.is_empty(), "outlived the restart: {left:?}");
    kernel.run_ok("1 + 1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_of_the_evaluation_process_ends_what_its_cells_started() {
    let mut kernel = Kernel::start().await;
    let sleepers = spawn_sleepers(&mut kernel).await;
    let crash = kernel.execute("std::process::abort();").await;
    assert_eq!(crash.reply_status(), jupyter_protocol::ReplyStatus::Error);
    let left = wait_until_gone(&sleepers, Duration::from_secs(10)).await;
    for &pid in &left {
        kill(pid);
    }
    assert!(left.is_empty(), "outlived the crash: {left:?}");
    assert_eq!(kernel.run_ok("2 + 2").await.result().as_deref(), Some("4"));
}

#[tokio::test(flavor = "multi_thread")]
async fn help_says_how_to_keep_a_process_running() {
    let mut kernel = Kernel::start().await;
    let help = kernel.run_ok(":help").await;
    let text = help.result().unwrap_or_default();
    assert!(text.contains("setsid"), "{text}");
    assert!(text.contains("process_group(0)"), "{text}");
}

/// The side channel to the evaluation process (every variable's value, the widgets) is a socket
/// with no file: nothing for a umask to open to others or for a killed kernel to leave behind,
/// and it answers only its own kernel, not another process of the same user.
#[tokio::test(flavor = "multi_thread")]
async fn the_side_channel_has_no_file_and_answers_only_its_kernel() {
    use std::io::{BufRead, Write};
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let secret = String::from(\"s3cr3t-value\");")
        .await;
    let pid = kernel.pid();
    let evaluation = children(pid);
    let environ = std::fs::read(format!("/proc/{}/environ", evaluation[0])).unwrap();
    let address = environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(b"TCHBOOK_SIDE_CHANNEL="))
        .map(|address| String::from_utf8_lossy(address).into_owned())
        .expect("the evaluation process's socket");
    assert!(address.starts_with('@'), "{address}");
    // Another process of the same user connects, and asks as the kernel does.
    let stream = tchbook_wire::side_channel::connect(address.as_ref()).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // Closed unanswered: the channel may already have hung up when the request is written (a
    // broken pipe), or when the answer is read (a reset, as the request was never read, or an
    // end of file).
    let hung_up = |error: &std::io::Error| {
        matches!(
            error.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        )
    };
    let mut answer = String::new();
    let read = (&stream)
        .write_all(b"{\"op\":\"rich\",\"name\":\"secret\"}\n")
        .and_then(|()| std::io::BufReader::new(&stream).read_line(&mut answer));
    let closed = match &read {
        Ok(n) => *n == 0,
        Err(error) => hung_up(error),
    };
    assert!(
        closed && answer.is_empty(),
        "answered another process: {read:?} {answer}"
    );
    // The kernel itself is still answered: the Variables panel lists the variable.
    let reply = crate::support::panels::debug(
        &mut kernel,
        "inspectVariables",
        serde_json::json!({}),
        crate::support::REPLY,
    )
    .await;
    assert!(reply.to_string().contains("secret"), "{reply}");
    kill(pid);
    assert!(
        wait_until_gone(&[pid], Duration::from_secs(15))
            .await
            .is_empty()
    );
    let tmp = std::fs::read_dir(std::env::temp_dir()).unwrap();
    let left: Vec<_> = tmp
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(&format!("side-channel-{pid}"))
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
