//! Downloads against an HTTP server on loopback that serves bytes the tests write: nothing
//! leaves the machine. Needs the `download` feature (`cargo test -p tchbook-fetch --features
//! download`; the workspace build turns it on through the kernel).
#![cfg(feature = "download")]

use md5::{Digest, Md5};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Mutex;
use tchbook_fetch::{FetchError, KnownDataset, Observer, STANDIN_MARKER, download, fetch};

/// One test at a time touches `TCHBOOK_DATA_MIRROR`.
static MIRROR: Mutex<()> = Mutex::new(());

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tchbook-fetch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Serves `body` to the next `requests` requests; returns the base URL.
fn serve(body: &'static [u8], requests: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    format!("http://{addr}/")
}

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Default)]
struct Recorder {
    started: Vec<(String, Option<u64>)>,
    bytes: usize,
    finished: usize,
}

impl Observer for Recorder {
    fn start(&mut self, file: &str, total: Option<u64>) {
        self.started.push((file.to_string(), total));
    }
    fn bytes(&mut self, n: usize) {
        self.bytes += n;
    }
    fn finish(&mut self) {
        self.finished += 1;
    }
}

#[test]
fn a_download_with_the_right_checksum_lands_whole_and_reports_its_progress() {
    const BODY: &[u8] = b"the bytes of a tiny data file";
    let url = format!("{}tiny.gz", serve(BODY, 1));
    let dest = scratch("ok").join("tiny.gz");
    let mut seen = Recorder::default();
    download(&url, &dest, &md5_hex(BODY), &mut seen).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), BODY);
    assert!(!dest.with_extension("part").exists());
    assert_eq!(
        seen.started,
        [("tiny.gz".to_string(), Some(BODY.len() as u64))]
    );
    assert_eq!((seen.bytes, seen.finished), (BODY.len(), 1));
}

#[test]
fn a_download_with_the_wrong_checksum_leaves_nothing_behind() {
    let url = format!("{}tiny.gz", serve(b"not what was promised", 1));
    let dest = scratch("bad").join("tiny.gz");
    let e = download(&url, &dest, &md5_hex(b"the real bytes"), &mut ()).unwrap_err();
    assert!(e.contains("checksum mismatch"), "{e}");
    assert!(!dest.exists() && !dest.with_extension("part").exists());
}

#[test]
fn fetch_fails_with_a_clear_message_when_offline_or_when_the_checksum_is_wrong() {
    let _one = MIRROR.lock().unwrap_or_else(|e| e.into_inner());
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    // SAFETY: only tests holding MIRROR touch the variable.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, "http://127.0.0.1:9/") };
    let root = scratch("offline");
    let e = fetch(KnownDataset::Mnist, &root, &mut ()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, FetchError::Unreachable { .. }), "{e:?}");
    assert!(
        text.contains("could not download MNIST")
            && text.contains("127.0.0.1:9")
            && text.contains(&root.join("MNIST/raw").display().to_string()),
        "{text}"
    );

    let mirror = serve(b"not the real Fashion-MNIST", 4);
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, &mirror) };
    let root = scratch("mismatch");
    let text = fetch(KnownDataset::FashionMnist, &root, &mut ())
        .unwrap_err()
        .to_string();
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::remove_var(tchbook_wire::env::DATA_MIRROR) };
    assert!(
        text.contains("checksum mismatch") && text.contains("8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        "{text}"
    );
    let raw = root.join("FashionMNIST/raw");
    assert_eq!(std::fs::read_dir(&raw).map(|d| d.count()).unwrap_or(0), 0);
}

#[test]
fn real_files_already_there_are_not_downloaded_again_but_stand_ins_are_replaced() {
    let root = scratch("present");
    let dir = KnownDataset::Mnist.dir(&root);
    std::fs::create_dir_all(&dir).unwrap();
    for f in KnownDataset::Mnist.files() {
        std::fs::write(dir.join(f), b"real").unwrap();
    }
    // No mirror is reachable (the lock keeps other tests' mirrors away): a download would fail.
    let _one = MIRROR.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::set_var(tchbook_wire::env::DATA_MIRROR, "http://127.0.0.1:9/") };
    assert_eq!(fetch(KnownDataset::Mnist, &root, &mut ()).unwrap(), dir);
    std::fs::write(dir.join(STANDIN_MARKER), "stand-in").unwrap();
    let e = fetch(KnownDataset::Mnist, &root, &mut ());
    // SAFETY: only tests holding MIRROR touch the variable, and this one holds it.
    unsafe { std::env::remove_var(tchbook_wire::env::DATA_MIRROR) };
    assert!(
        e.is_err(),
        "stand-ins must be replaced by a download, not kept"
    );
}
