//! Peers that lie or stall: raw TCP connections that speak just enough ZMTP to reach the code
//! that trusts them. None of them needs the connection's key, so anyone who can reach a port
//! can do what they do; the kernel must drop such a peer and serve everyone else as before.

use crate::support::{Kernel, REPLY, is_gone};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long the kernel may take to close a connection it refused.
const CLOSE: Duration = Duration::from_secs(20);

/// ZMTP 3.0's greeting for the NULL mechanism, as a client sends it.
fn greeting() -> [u8; 64] {
    let mut greeting = [0u8; 64];
    greeting[0] = 0xff;
    greeting[9] = 0x7f;
    greeting[10] = 3;
    greeting[12..16].copy_from_slice(b"NULL");
    greeting
}

/// A READY command naming `socket_type`: the whole NULL handshake of one side.
fn ready(socket_type: &str) -> Vec<u8> {
    let mut body = vec![5];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&(socket_type.len() as u32).to_be_bytes());
    body.extend_from_slice(socket_type.as_bytes());
    let mut frame = vec![0x04, body.len() as u8];
    frame.extend_from_slice(&body);
    frame
}

/// The header of a long data frame announcing `length` bytes (`more`: another frame follows).
fn long_frame_header(length: u64, more: bool) -> Vec<u8> {
    let mut header = vec![0x02 | u8::from(more)];
    header.extend_from_slice(&length.to_be_bytes());
    header
}

/// A raw connection to `port` that has sent `bytes`.
fn connect_and_send(port: u16, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(bytes).unwrap();
    stream
}

/// Reads until the kernel closes `stream`; panics if it is still open after [`CLOSE`].
fn assert_closed(mut stream: TcpStream, what: &str) {
    let deadline = Instant::now() + CLOSE;
    let mut buffer = [0u8; 64 << 10];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "{what}: the kernel kept the connection open"
        );
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(error) if error.kind() == ErrorKind::ConnectionReset => return,
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("{what}: the kernel kept the connection open")
            }
            Err(error) => panic!("{what}: {error}"),
        }
    }
}

/// Asserts the kernel still runs, answers on shell and heartbeat, and kept `x`.
async fn assert_still_serving(kernel: &mut Kernel) {
    assert!(!is_gone(kernel.pid()), "the kernel died:\n{}", kernel.log());
    kernel.kernel_info().await;
    let ping = zeromq::ZmqMessage::from("ping");
    zeromq::SocketSend::send(&mut kernel.heartbeat.socket, ping)
        .await
        .unwrap();
    let pong = tokio::time::timeout(
        REPLY,
        zeromq::SocketRecv::recv(&mut kernel.heartbeat.socket),
    )
    .await
    .expect("no heartbeat")
    .unwrap();
    assert_eq!(pong.get(0).map(|f| f.as_ref()), Some(&b"ping"[..]));
    let run = kernel.run_ok("x + 1").await;
    assert_eq!(run.result().as_deref(), Some("42"));
}

#[tokio::test(flavor = "multi_thread")]
async fn frame_headers_announcing_huge_lengths_drop_their_peer_on_every_port() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let x = 41;").await;
    let info = kernel.info.clone();
    // The socket type a client of each port has, for the attacks that first complete the
    // handshake (which needs no key either).
    let ports = [
        ("shell", info.shell_port, "DEALER"),
        ("control", info.control_port, "DEALER"),
        ("stdin", info.stdin_port, "DEALER"),
        ("iopub", info.iopub_port, "SUB"),
        ("heartbeat", info.hb_port, "REQ"),
    ];
    // 2^60 made the allocator abort the kernel; 2^40 is more than the machine has; the third
    // is one byte over the default limit of 1 GiB.
    let lengths = [1u64 << 60, 1 << 40, (1 << 30) + 1];
    let (pid, log) = (kernel.pid(), kernel.log_file.clone().unwrap());
    tokio::task::spawn_blocking(move || {
        for (name, port, socket_type) in ports {
            for length in lengths {
                for handshake in [false, true] {
                    let mut attack = greeting().to_vec();
                    if handshake {
                        attack.extend(ready(socket_type));
                    }
                    attack.extend(long_frame_header(length, false));
                    let what = format!("{name}, {length} bytes, handshake: {handshake}");
                    assert_closed(connect_and_send(port, &attack), &what);
                    assert!(
                        !is_gone(pid),
                        "the kernel died of {what}:\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                }
            }
        }
    })
    .await
    .unwrap();
    assert_still_serving(&mut kernel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_whose_frames_together_exceed_the_limit_drops_only_its_peer() {
    let mut kernel = Kernel::start_with_env(&[("TCHBOOK_MAX_MESSAGE_SIZE", "65536")]).await;
    kernel.run_ok("let x = 41;").await;
    let shell = kernel.info.shell_port;
    tokio::task::spawn_blocking(move || {
        // Three frames of 30000 bytes: each under the limit, together over it.
        let mut message = greeting().to_vec();
        message.extend(ready("DEALER"));
        for more in [true, true, false] {
            message.extend(long_frame_header(30000, more));
            message.extend(vec![b'a'; 30000]);
        }
        assert_closed(
            connect_and_send(shell, &message),
            "90000 bytes in three frames",
        );

        // A command is a handshake step of a few hundred bytes, whatever the message limit.
        let mut command = greeting().to_vec();
        command.extend([0x06]);
        command.extend(20000u64.to_be_bytes());
        assert_closed(connect_and_send(shell, &command), "a 20000-byte command");
    })
    .await
    .unwrap();
    assert_still_serving(&mut kernel).await;
}

/// Reads ZMTP frames from `stream` until a data frame's header has arrived: the kernel's first
/// message to a subscriber (its `iopub_welcome`), which it sends only once it knows of the
/// subscription.
fn wait_for_first_message(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(REPLY)).unwrap();
    let mut greeting = [0u8; 64];
    stream.read_exact(&mut greeting).unwrap();
    loop {
        let mut flags = [0u8; 1];
        stream.read_exact(&mut flags).unwrap();
        let length = if flags[0] & 0x02 != 0 {
            let mut length = [0u8; 8];
            stream.read_exact(&mut length).unwrap();
            u64::from_be_bytes(length)
        } else {
            let mut length = [0u8; 1];
            stream.read_exact(&mut length).unwrap();
            u64::from(length[0])
        };
        if flags[0] & 0x04 == 0 {
            return;
        }
        std::io::copy(&mut (&*stream).take(length), &mut std::io::sink()).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscriber_that_stops_reading_holds_up_no_other_clients_output() {
    let mut kernel = Kernel::start().await;
    let iopub = kernel.info.iopub_port;
    // A subscriber to everything that stops reading once subscribed, as a suspended
    // `jupyter console --existing` does.
    let stalled = tokio::task::spawn_blocking(move || {
        let mut handshake = greeting().to_vec();
        handshake.extend(ready("SUB"));
        handshake.extend([0x00, 0x01, 0x01]);
        let mut stream = connect_and_send(iopub, &handshake);
        wait_for_first_message(&mut stream);
        stream
    })
    .await
    .unwrap();

    // 200 MiB in 1 KiB lines: far more than the stalled connection's socket buffers hold, so a
    // publisher that waits for that subscriber stops here for good.
    const LINES: usize = 200 << 10;
    let started = Instant::now();
    let run = kernel
        .execute_with(
            jupyter_protocol::ExecuteRequest::new(format!(
                "let line = \"y\".repeat(1023);\nfor _ in 0..{LINES} {{ println!(\"{{line}}\"); }}"
            )),
            Duration::from_secs(300),
        )
        .await;
    eprintln!(
        "200 MiB of output beside a stalled subscriber: {:.1?}, {} stream messages",
        started.elapsed(),
        run.types().iter().filter(|t| *t == "stream").count()
    );
    assert_eq!(run.reply_status(), jupyter_protocol::ReplyStatus::Ok);
    assert_eq!(run.types().last().map(String::as_str), Some("status"));
    let stdout = run.stdout();
    assert_eq!(stdout.len(), LINES * 1024, "output was lost");
    assert!(stdout.lines().all(|line| line.len() == 1023));

    // The stalled subscriber, still connected with its queue full, holds up no later cell.
    let run = kernel.run_ok("let x = 41;\nprintln!(\"{}\", x + 1);").await;
    assert_eq!(run.stdout(), "42\n");
    drop(stalled);
}

/// A signed message whose content the kernel cannot read (nested deeper than its JSON reader
/// goes) or that does not fit its type (a comm_msg without a comm id) still gets its busy and
/// idle, as every shell message does; before, it was dropped and the front end saw nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_comm_msg_gets_busy_and_idle_and_the_kernel_goes_on() {
    use jupyter_protocol::UnknownMessage;
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let mut deep = serde_json::json!(1);
    for _ in 0..300 {
        deep = serde_json::json!([deep]);
    }
    for content in [
        serde_json::json!({"comm_id": "x", "data": {"method": "update", "state": {"value": deep}}}),
        serde_json::json!({"data": {"method": "update"}}),
    ] {
        let sent = kernel
            .send_shell(UnknownMessage {
                msg_type: "comm_msg".into(),
                content,
            })
            .await;
        let iopub = kernel.iopub_until_idle(&sent.header.msg_id, REPLY).await;
        assert_eq!(crate::support::states(&iopub), ["Busy", "Idle"]);
    }
    let next = kernel.run_ok("kept + 1").await;
    assert_eq!(next.result().as_deref(), Some("42"));
}
