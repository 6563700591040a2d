//! Start-up (what kernel_info reports of the real machine, what it refuses to start on) and
//! shutdown (with restart) on control and shell.

use crate::support::{Kernel, REPLY, children, is_gone, loopback_connection, refused_start};
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

#[tokio::test(flavor = "multi_thread")]
async fn kernel_info_describes_rust_and_names_kernel_rustc_torch_and_device() {
    let mut kernel = Kernel::start().await;
    let sent = kernel
        .send_shell(jupyter_protocol::KernelInfoRequest {})
        .await;
    let reply = kernel.shell_reply(REPLY).await;
    let JupyterMessageContent::KernelInfoReply(info) = &reply.content else {
        panic!("{reply:?}")
    };
    assert_eq!(info.protocol_version, "5.3");
    assert_eq!(info.implementation, "tchbook");
    assert_eq!(info.language_info.name, "rust");
    assert!(
        info.language_info.version.starts_with("1."),
        "{:?}",
        info.language_info
    );
    assert_eq!(info.language_info.mimetype.as_deref(), Some("text/rust"));
    assert_eq!(info.language_info.file_extension.as_deref(), Some(".rs"));
    assert_eq!(info.language_info.pygments_lexer.as_deref(), Some("rust"));
    assert!(info.banner.contains("tchbook"), "{}", info.banner);
    assert!(info.banner.contains("rustc 1."), "{}", info.banner);
    assert!(info.banner.contains("torch 2."), "{}", info.banner);
    assert!(info.banner.contains("device"), "{}", info.banner);
    assert!(!info.help_links.is_empty());
    // busy → idle around it on iopub.
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
    let types: Vec<_> = iopub.iter().map(|m| m.header.msg_type.as_str()).collect();
    assert_eq!(types, ["status", "status"]);
}

/// A refused connection file is refused before the set-up: at once.
const REFUSAL: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_file_asking_for_hmac_md5_is_refused_at_start_naming_what_is_supported() {
    let mut info = loopback_connection().await;
    info.signature_scheme = "hmac-md5".into();
    let stderr = refused_start(&info, &[], REFUSAL).await;
    assert!(
        stderr.contains("signature_scheme \"hmac-md5\", which tchbook does not implement"),
        "{stderr}"
    );
    assert!(stderr.contains("supports only \"hmac-sha256\""), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsigned_kernel_on_every_interface_starts_only_when_allowed() {
    let mut info = loopback_connection().await;
    info.ip = "0.0.0.0".into();
    info.key = String::new();
    let stderr = refused_start(&info, &[], REFUSAL).await;
    assert!(stderr.contains("empty key"), "{stderr}");
    assert!(stderr.contains("set TCHBOOK_ALLOW_UNSIGNED=1"), "{stderr}");
    // Without libtorch the kernel starts without building the prelude: only its start matters.
    let allowed = [
        (tchbook::transport::ALLOW_UNSIGNED, "1"),
        ("LIBTORCH", "/nonexistent/libtorch"),
    ];
    let mut kernel = Kernel::start_on(info, &allowed, &[], false, None).await;
    kernel.kernel_info().await;
}

/// The kernel's stderr is the terminal a front end or nbconvert was started from (ipykernel
/// writes nothing there): by default only warnings and errors reach it, and never colour codes
/// where it is not a terminal; `TCHBOOK_LOG` asks for more.
#[tokio::test(flavor = "multi_thread")]
async fn the_log_holds_no_info_lines_unless_tchbook_log_asks_for_them() {
    let log = tchbook_wire::env::LOG;
    let mut quiet = Kernel::start_without_env(&[log]).await;
    quiet.run_ok("1 + 1").await;
    let written = quiet.log();
    assert!(!written.contains("INFO"), "{written}");
    assert!(!written.contains('\x1b'), "{written:?}");

    let mut asked = Kernel::start_with_env(&[(log, "info")]).await;
    asked.run_ok("1 + 1").await;
    let written = asked.log();
    assert!(
        written.contains(" INFO ") && written.contains("engine started"),
        "{written}"
    );
    assert!(
        !written.contains('\x1b'),
        "a log file with colour codes: {written:?}"
    );
}
