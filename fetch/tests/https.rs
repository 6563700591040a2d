//! HTTPS trusts the platform's certificate store, as a corporate proxy or a private mirror needs:
//! a server on loopback whose certificate only the system's store vouches for (here
//! `SSL_CERT_FILE`, which the platform verifier reads on Linux as OpenSSL does) is accepted, and
//! the same server is refused while the store does not vouch for it. The server is
//! `openssl s_server`; its own process, so the variable is set before any thread reads it.
#![cfg(feature = "download")]

use md5::Md5;
use sha2::{Digest, Sha256};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tchbook_fetch::{Expected, download};

const BODY: &[u8] = b"bytes from a mirror behind the company's own certificate authority";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A self-signed certificate for 127.0.0.1 in `dir` (cert.pem, key.pem).
fn certificate(dir: &Path) {
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=tchbook test mirror"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-keyout", "key.pem", "-out", "cert.pem"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl (Debian's openssl package) makes the test's certificate");
    assert!(status.success(), "openssl req failed");
}

/// `openssl s_server` serving `dir`'s files over HTTPS; returns it and its port once it listens.
fn serve(dir: &Path) -> (Child, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Command::new("openssl")
        .args([
            "s_server", "-quiet", "-WWW", "-cert", "cert.pem", "-key", "key.pem",
        ])
        .args(["-accept", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "openssl s_server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, port)
}

#[test]
fn https_trusts_the_platforms_certificate_store_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("tchbook-fetch-https-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    certificate(&dir);
    std::fs::write(dir.join("mirror.gz"), BODY).unwrap();
    let (mut server, port) = serve(&dir);
    let url = format!("https://127.0.0.1:{port}/mirror.gz");
    let sha256 = hex(&Sha256::digest(BODY));
    let md5 = hex(&Md5::digest(BODY));
    let expected = Expected {
        size: BODY.len() as u64,
        sha256: &sha256,
        md5: &md5,
    };
    let dest = dir.join("downloaded.gz");

    // An empty store: the mirror's certificate is vouched for by no one.
    // SAFETY: this binary's only test, before any thread that reads the environment.
    unsafe { std::env::set_var("SSL_CERT_FILE", dir.join("key.pem")) };
    let refused = download(&url, &dest, &expected, &mut ());
    // SAFETY: as above; the download's threads have ended.
    unsafe { std::env::set_var("SSL_CERT_FILE", dir.join("cert.pem")) };
    let accepted = download(&url, &dest, &expected, &mut ());
    let _ = server.kill();
    let _ = server.wait();

    let error = refused.expect_err("a certificate outside the store must be refused");
    assert!(
        error.to_lowercase().contains("certificate"),
        "the refusal names the certificate: {error}"
    );
    accepted.expect("the store's certificate is trusted");
    assert_eq!(std::fs::read(&dest).unwrap(), BODY);
    std::fs::remove_dir_all(&dir).unwrap();
}
