//! CurveZMQ in the vendored zeromq: its keys against published values, and its sockets against
//! libzmq (pyzmq, in a Python process) and each other, for the socket types the kernel binds
//! (ROUTER, XPUB, REP) and the clients Jupyter uses (DEALER, SUB, REQ). The kernel's own
//! encrypted sockets are tested with jupyter_client in tests/test_encryption.py.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zeromq::{
    CurveKeyPair, DealerSocket, RepSocket, ReqSocket, RouterSocket, Socket, SocketOptions,
    SocketRecv, SocketSend, SubSocket, XPubSocket, ZmqMessage,
};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn z85_keys_match_rfc_32_and_libzmq() {
    // RFC 32's example: these eight bytes are "HelloWorld".
    let hello = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&hello);
    assert!(zeromq::z85_encode_key(&key).starts_with("HelloWorld"));
    assert_eq!(
        zeromq::z85_decode_key(&zeromq::z85_encode_key(&key)).unwrap(),
        key
    );
    // The client and server key pairs of libzmq's CURVE tests; libzmq's `zmq_curve_public` gives
    // these public keys for these secrets.
    for (public, secret) in [
        (
            "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID",
            "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs",
        ),
        (
            "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
            "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6",
        ),
    ] {
        let pair = CurveKeyPair::from_z85(secret).unwrap();
        assert_eq!(pair.public_z85(), public);
        assert_eq!(zeromq::z85_encode_key(&pair.secret_key()), secret);
    }
    for text in [
        "",
        "short",
        &"a".repeat(39),
        &"a".repeat(41),
        &"~".repeat(40),
    ] {
        let error = zeromq::z85_decode_key(text).unwrap_err().to_string();
        assert!(error.contains("40 characters of Z85"), "{text:?}: {error}");
    }
    let pair = CurveKeyPair::generate();
    let shown = format!("{pair:?}");
    assert!(!shown.contains(&zeromq::z85_encode_key(&pair.secret_key())));
    assert!(shown.contains(&pair.public_z85()));
}

fn server(keys: &CurveKeyPair) -> SocketOptions {
    let mut options = SocketOptions::default();
    options.curve_server(keys.clone());
    options
}

fn client(server: &CurveKeyPair) -> SocketOptions {
    let mut options = SocketOptions::default();
    options.curve_client(server.public_key(), CurveKeyPair::generate());
    options
}

/// A multipart message with a frame over 255 bytes and one over the read buffer's 64 KiB.
fn message() -> ZmqMessage {
    let mut message = ZmqMessage::from("first");
    message.push_back(vec![7u8; 300].into());
    message.push_back(vec![9u8; 200_000].into());
    message
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {WAIT:?}"))
}

#[tokio::test]
async fn our_clients_and_servers_talk_over_curve_for_every_socket_pair_the_kernel_uses() {
    let keys = CurveKeyPair::generate();

    let mut router = RouterSocket::with_options(server(&keys));
    let endpoint = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut dealer = DealerSocket::with_options(client(&keys));
    within("connect", dealer.connect(&endpoint)).await.unwrap();
    dealer.send(message()).await.unwrap();
    let got = within("ROUTER recv", router.recv()).await.unwrap();
    assert_eq!(got.len(), 4, "identity and three frames");
    assert_eq!(got.get(3).unwrap().len(), 200_000);
    router.send(got).await.unwrap();
    let back = within("DEALER recv", dealer.recv()).await.unwrap();
    assert_eq!(back.into_vec(), message().into_vec());

    let mut rep = RepSocket::with_options(server(&keys));
    let endpoint = rep.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut req = ReqSocket::with_options(client(&keys));
    within("connect", req.connect(&endpoint)).await.unwrap();
    req.send("ping".into()).await.unwrap();
    let ping = within("REP recv", rep.recv()).await.unwrap();
    rep.send(ping).await.unwrap();
    let pong = within("REQ recv", req.recv()).await.unwrap();
    assert_eq!(pong.get(0).unwrap().as_ref(), b"ping");

    let mut xpub = XPubSocket::with_options(server(&keys));
    let endpoint = xpub.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut sub = SubSocket::with_options(client(&keys));
    within("connect", sub.connect(&endpoint)).await.unwrap();
    sub.subscribe("").await.unwrap();
    // The subscription travels boxed too; XPUB sees it once it arrives.
    let subscribed = within("XPUB subscription", xpub.recv()).await.unwrap();
    assert_eq!(subscribed.get(0).unwrap().as_ref(), b"\x01");
    xpub.send(message()).await.unwrap();
    let published = within("SUB recv", sub.recv()).await.unwrap();
    assert_eq!(published.into_vec(), message().into_vec());
}

#[tokio::test]
async fn a_client_with_a_wrong_server_key_or_none_never_connects() {
    let keys = CurveKeyPair::generate();
    let mut router = RouterSocket::with_options(server(&keys));
    let endpoint = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut options = SocketOptions::default();
    options.connect_timeout(Duration::from_secs(2));
    options.curve_client(
        CurveKeyPair::generate().public_key(),
        CurveKeyPair::generate(),
    );
    let mut wrong = DealerSocket::with_options(options);
    assert!(wrong.connect(&endpoint).await.is_err());
    let mut options = SocketOptions::default();
    options.connect_timeout(Duration::from_secs(2));
    let mut plain = DealerSocket::with_options(options);
    assert!(plain.connect(&endpoint).await.is_err());
    // The server still takes a client with the key.
    let mut good = DealerSocket::with_options(client(&keys));
    within("connect", good.connect(&endpoint)).await.unwrap();
    good.send("after".into()).await.unwrap();
    let got = within("ROUTER recv", router.recv()).await.unwrap();
    assert_eq!(got.get(1).unwrap().as_ref(), b"after");
}

/// libzmq's side, in Python (pyzmq): a CURVE ROUTER that echoes every message, or a CURVE
/// DEALER client that sends one and prints the echo.
const PYZMQ: &str = r#"
import sys, zmq
role, endpoint, server_public = sys.argv[1], sys.argv[2], sys.argv[3].encode()
ctx = zmq.Context()
if role == "server":
    sock = ctx.socket(zmq.ROUTER)
    sock.curve_server = True
    sock.curve_secretkey = sys.argv[4].encode()
    sock.curve_publickey = server_public
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    print(port, flush=True)
    sock.send_multipart(sock.recv_multipart())
else:
    sock = ctx.socket(zmq.DEALER)
    sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
    sock.curve_serverkey = server_public
    sock.connect(endpoint)
    sock.send_multipart([b"first", b"\x07" * 300, b"\x09" * 200000])
    echo = sock.recv_multipart()
    print(len(echo), [len(f) for f in echo], flush=True)
sock.close(linger=1000)
"#;

fn python(args: &[&str]) -> Child {
    let python = std::env::var("TCHBOOK_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(python)
        .args(["-c", PYZMQ])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 with pyzmq")
}

#[tokio::test]
async fn our_client_talks_to_a_libzmq_server() {
    let keys = CurveKeyPair::generate();
    let secret = zeromq::z85_encode_key(&keys.secret_key());
    let mut child = python(&["server", "-", &keys.public_z85(), &secret]);
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let mut dealer = DealerSocket::with_options(client(&keys));
    let endpoint = format!("tcp://127.0.0.1:{}", port.trim());
    within("connect", dealer.connect(&endpoint)).await.unwrap();
    dealer.send(message()).await.unwrap();
    let echo = within("echo", dealer.recv()).await.unwrap();
    assert_eq!(echo.into_vec(), message().into_vec());
    assert!(child.wait().unwrap().success());
}

#[tokio::test]
async fn a_libzmq_client_talks_to_our_server() {
    let keys = CurveKeyPair::generate();
    let mut router = RouterSocket::with_options(server(&keys));
    let endpoint = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let child = python(&["client", &endpoint, &keys.public_z85()]);
    let got = within("ROUTER recv", router.recv()).await.unwrap();
    assert_eq!(got.len(), 4);
    router.send(got).await.unwrap();
    let output = tokio::task::spawn_blocking(|| child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "3 [5, 300, 200000]"
    );
}
